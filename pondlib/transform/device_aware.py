r"""One entry point for device-aware training on the three devices: :func:`device_aware`.

================  ==============================================================  ===================================
``device``        transform                                                       export (then the device's mapper)
================  ==============================================================  ===================================
``"xylo"``        :func:`~pondlib.transform.hardware.xylo_aware`                  ``model`` itself (``as_graph``)
``"spinnaker2"``  :func:`~pondlib.transform.spinnaker2_aware.spinnaker2_aware`    ``export_spinnaker2(model)``:
                                                                                  ``mapper(e.net, **e.mapper_kwargs)``
``"siracusa"``    :func:`~pondlib.transform.siracusa_aware.siracusa_aware`        ``layers, kw = export(model)``:
                                                                                  ``mapper(layers, **kw)``
================  ==============================================================  ===================================

Every export reproduces the trained integers bit for bit on the device's simulator (the Siracusa one pins
the mapper's ``state_scale=`` to the model's, which starts from the mapper's own calibration of ``net``).

Each returns a new trainable module (the input network is not modified) that :func:`pondlib.training.fit`
trains unchanged; ``options`` are passed through to the device's transform.

SpiNNaker2 passes spikes on one tick per hop (plus synapse delays), so the output of the last input steps
arrives after the input ends: train the twin on ``data.with_silence(spec.latency_ticks)``
(:meth:`pondlib.datasets.EventDataset.with_silence`) and run the chip on
``append_silence(x, spec.latency_ticks)`` (``spec`` the mapping of ``net``), as ``pond demo`` does. On the
digits (``benchmarks/digits_devices.py``) this is worth about a point on SpiNNaker2.

Example:
    >>> import jax
    >>> from pondlib import nn
    >>> k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    >>> net = nn.Sequential(nn.Linear(4, 6, key=k1), nn.LIF(6, tau_mem=0.02, tau_syn=0.002),
    ...                     nn.Linear(6, 3, key=k2), nn.LIF(3, tau_mem=0.02, tau_syn=0.002))
    >>> type(device_aware(net, device="xylo")).__name__
    'Sequential'
    >>> type(device_aware(net, device="siracusa", calibration=jax.numpy.ones((2, 3, 4)))).__name__
    'SiracusaAware'
"""

from __future__ import annotations

from typing import Any

from pondlib.errors import PondError
from pondlib.validate import check_choice

__all__ = ["device_aware", "DEVICES"]

#: The devices :func:`device_aware` knows.
DEVICES = ("xylo", "spinnaker2", "siracusa")


def device_aware(net: Any, *, device: str, **options: Any) -> Any:
    """The device-aware twin of ``net`` for ``device`` (see the module table).

    Args:
        net: ``nn.Sequential(Linear, LIF, ...)`` (not modified).
        device: ``"xylo"``, ``"spinnaker2"`` or ``"siracusa"``.
        **options: passed to the device's transform (Siracusa needs ``calibration=``, the data the plain
            mapping calibrates on; Xylo takes ``limits``, ``quantize``, ``learn_dash``, ``delays``,
            ``surrogate``; SpiNNaker2 ``neuron_model``, ``limits``, ``delays``, ``options``, ``surrogate``).

    Raises:
        PondError: an unknown ``device`` (the message lists the three); whatever the device's transform
            raises for bad networks or options.
    """
    check_choice(device, "device", DEVICES, where="device_aware", error=PondError)
    if device == "xylo":
        from pondlib.transform.hardware import xylo_aware

        return xylo_aware(net, **options)
    if device == "siracusa":
        from pondlib.transform.siracusa_aware import siracusa_aware

        return siracusa_aware(net, **options)
    from pondlib.transform.spinnaker2_aware import spinnaker2_aware

    return spinnaker2_aware(net, **options)
