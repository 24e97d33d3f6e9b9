r"""One entry point for device-aware training on every registered device: :func:`device_aware`.

A device-aware twin runs the device's own arithmetic in its forward pass (caps, decays, weight grids,
integer rounding through straight-through estimators), is trained by :func:`pondlib.training.fit`
unchanged, and exports to the device's mapper so that the device's simulator reproduces its spikes
(``Device.export``). Each chip's twin lives in its folder (``pondlib.devices.<chip>.aware``); this
function finds it through the registry. :func:`pondlib.deploy` runs the whole sequence (map, twin,
fine-tune, export, simulate, compare).

Each device documents its twin's options on ``Device.aware`` (``registry.get(name).aware``) and in its
``aware`` module; ``Device.export(twin)`` maps the trained twin.

A device whose output lags its input (``Mapped.latency``, e.g. one tick per hop) answers the last input
steps late: train its twin on ``data.with_silence(latency)`` (:meth:`pondlib.datasets.EventDataset.with_silence`)
and run the chip on ``append_silence(x, latency)``, as :func:`pondlib.deploy` does.

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

from pondlib.devices import registry
from pondlib.errors import PondError

__all__ = ["device_aware"]


def device_aware(net: Any, *, device: str, **options: Any) -> Any:
    """The device-aware twin of ``net`` for ``device`` (see the module table).

    Args:
        net: ``nn.Sequential(Linear, LIF, ...)`` (not modified).
        device: a registered device name (``pondlib.devices.registry.names()``).
        **options: passed to the device's twin (``Device.aware``).

    Raises:
        PondError: an unknown ``device`` (the message lists the registered ones), a device without a
            twin; whatever the device's transform raises for bad networks or options.
    """
    dev = registry.get(device)
    try:
        return dev.aware(net, **options)
    except TypeError as err:  # options the twin does not take, or a required one missing: bound at the call
        if not _is_binding_error(err):
            raise
        doc = " ".join((dev.aware.__doc__ or "").split()).replace("``", "")
        doc = doc.split("options: ", 1)[1].rstrip(".").removesuffix(")") if "options: " in doc else ""
        raise PondError(
            "device-aware twin options",
            value=f"{sorted(options)} ({str(err).split(') ', 1)[-1]})",
            limit=f"options among: {doc}" if doc else f"the options of {device}'s twin",
            where=f"device_aware(device={device!r})",
            fix=f"pass only the options listed by help(registry.get({device!r}).aware), each required one included",
        ) from None


def _is_binding_error(err: TypeError) -> bool:
    """Whether ``err`` was raised binding keyword arguments to the twin's function (no frame of its body ran)."""
    text = str(err)
    binding = "unexpected keyword argument" in text or "required keyword-only argument" in text
    binding = binding or "required positional argument" in text
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return binding and tb is not None and tb.tb_frame.f_code.co_name == "aware"
