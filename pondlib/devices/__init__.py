"""Device packages: ``pondlib.devices.xylo`` (and, later, ``spinnaker2`` and ``siracusa``).

Each device package has the same file set (limits, mapper, config, sim) and imports only from
:mod:`pondlib.devices.core`, never from a sibling device.
"""
