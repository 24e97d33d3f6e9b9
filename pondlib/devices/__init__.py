"""The chips: one folder per chip (``pondlib.devices.<chip>``), the same parts in each, listed by one registry.

* :mod:`pondlib.devices.registry`: the one list of chips (``names()``, ``get(name)``, ``register(device)``);
* :mod:`pondlib.devices.core`: the :class:`~pondlib.devices.core.device.Device` interface every chip
  implements (``device.py`` in its folder) and the machinery chips share (the rule runner, violations,
  report rows and tables, saturating integer helpers, input checks);
* ``pondlib.devices.<chip>``: limits, specification, mapper, config, sim, report, aware (its device-aware
  twin), codegen (its C numerics), device, and the chip's own extras. A chip imports only from
  :mod:`pondlib.devices.core`, never from another chip (see ``docs/architecture.md``).
"""
