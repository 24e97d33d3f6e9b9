"""The compiled kernels a command will need, started in the background when it starts.

On a new installation pondlib's C kernels are compiled on their first use (about a second of the system
compiler's time each, :mod:`pondlib.cprogram.native`). A command that trains or simulates calls
:func:`start_builds` first, before its imports, data loading and tracing: the builds run beside that
work (at most one compiler per core but one), and the first use of a kernel waits only for what is left
of its own build. The command names no chip: each device says what its simulator needs through
:meth:`pondlib.devices.core.device.Device.prebuild`, and ``pondlib.nn``'s kernels (training, inference
of ``Linear``/``LIF`` chains) are :func:`pondlib.nn.native.prebuild`. Nothing here blocks or raises on a
failed build: the kernel's first use reports it as without this.

Example:
    >>> start_builds([], networks=False)
    []
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from pondlib.devices.core.device import Device
from pondlib.errors import PondError
from pondlib.validate import check_bool

__all__ = ["start_builds"]


def start_builds(devices: Iterable[Device], *, networks: bool) -> list[threading.Thread]:
    """Start, in background threads, the kernel builds of ``pondlib.nn`` (``networks``: the command trains
    or runs a network; queued first, as a command trains before it simulates) and of the simulators of
    ``devices``; return the started threads without waiting for them (none where everything is built).

    Raises:
        PondError: ``devices`` not an iterable of devices, or ``networks`` not a bool.
    """
    networks = check_bool(networks, "networks", where="start_builds")
    try:
        chosen = list(devices)
    except TypeError:
        chosen = [devices]
    for device in chosen:
        if not isinstance(device, Device):
            raise PondError(
                "device to prebuild",
                value=f"a {type(device).__name__} ({device!r:.60})",
                limit="pondlib.devices.core.device.Device instances",
                where="start_builds",
                fix="pass devices from pondlib.devices.registry (registry.devices() or registry.get(name))",
            )
    threads: list[threading.Thread] = []
    if networks:
        from pondlib.nn import native

        threads += native.prebuild()
    for device in chosen:
        threads += device.prebuild()
    return threads
