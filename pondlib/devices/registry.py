r"""The one list of chips: every part of pondlib that works on "each device" loops over this registry.

A chip is registered by one line in :data:`BUILTIN` (``name -> "module:Class"`` of its
:class:`~pondlib.devices.core.device.Device`), by :func:`register` at run time, or by a package that
declares an entry point in the group ``pondlib.devices`` (``name = "package.module:Class"``). Chips are
imported when first asked for, so listing names costs nothing.

Example:
    >>> names()[:3]
    ('xylo', 'spinnaker2', 'siracusa')
    >>> get("xylo").name
    'xylo'
    >>> get("loihi")
    Traceback (most recent call last):
    ...
    pondlib.errors.PondError: pondlib.devices.registry: device: got 'loihi', expected one of xylo, ...
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any

from pondlib.devices.core.device import Device
from pondlib.errors import PondError

__all__ = ["BUILTIN", "ENTRY_POINT_GROUP", "register", "unregister", "get", "names", "devices", "owner_of", "moved"]

#: The chips of pondlib: registry name -> ``"module:Class"`` of its Device.
BUILTIN: dict[str, str] = {
    "xylo": "pondlib.devices.xylo.device:XyloDevice",
    "spinnaker2": "pondlib.devices.spinnaker2.device:SpiNNaker2Device",
    "siracusa": "pondlib.devices.siracusa.device:SiracusaDevice",
}

#: The entry-point group through which other packages add chips.
ENTRY_POINT_GROUP = "pondlib.devices"

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_ABSTRACT = ("variants", "limit_rows", "map", "run", "report")

_loaded: dict[str, Device] = {}
_added: dict[str, Device] = {}
_plugins: dict[str, str] | None = None


def _plugin_table() -> dict[str, str]:
    global _plugins
    if _plugins is None:
        _plugins = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in BUILTIN}
    return _plugins


def _load(name: str, target: str) -> Device:
    module, _, attr = target.partition(":")
    try:
        cls = getattr(import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise PondError(
            f"device {name!r} cannot be loaded ({type(exc).__name__}: {exc})",
            where=target,
            fix="reinstall pondlib, or the package that provides this device",
        ) from None
    return _checked(cls() if isinstance(cls, type) else cls, name)


def _checked(device: Any, name: str | None = None) -> Device:
    if not isinstance(device, Device):
        raise PondError(
            "device",
            value=f"a {type(device).__name__}",
            limit="a pondlib.devices.core.device.Device",
            where="registry",
            fix="subclass Device and implement " + ", ".join(_ABSTRACT),
        )
    if not isinstance(device.name, str) or not _NAME.match(device.name):
        raise PondError(
            "device name",
            value=repr(device.name),
            limit="lower case letters, digits and _ (starting with a letter)",
            where=type(device).__name__,
            fix="set the class attribute name",
        )
    if name is not None and device.name != name:
        raise PondError("device name", value=device.name, limit=name, where=type(device).__name__)
    if device.default_variant not in device.variants:
        raise PondError(
            "default_variant",
            value=repr(device.default_variant),
            limit=", ".join(device.variants) or "a variant",
            where=type(device).__name__,
            fix="name one of the variants",
        )
    return device


def register(device: Device, *, replace: bool = False) -> Device:
    """Add ``device`` to the registry (after the built-in chips); return it.

    Raises:
        PondError: not a :class:`Device`, a bad name, or a name already taken (unless ``replace``).
    """
    device = _checked(device)
    if not replace and device.name in names():
        raise PondError(
            "device name",
            value=device.name,
            limit="a name not registered yet",
            where="register",
            fix="choose another name, or pass replace=True",
        )
    _added[device.name] = device
    _loaded.pop(device.name, None)
    return device


def unregister(name: str) -> None:
    """Remove a device added with :func:`register` (built-in chips stay)."""
    if name not in _added:
        raise PondError("device", value=name, limit=", ".join(_added) or "none", where="unregister")
    del _added[name]


def names() -> tuple[str, ...]:
    """Every registered device name: the built-in chips, then plug-ins, then :func:`register`'s."""
    out = list(BUILTIN)
    out += [n for n in _plugin_table() if n not in out]
    out += [n for n in _added if n not in out]
    return tuple(out)


def get(name: Any) -> Device:
    """The device called ``name`` (its :class:`Device` object is created on first use).

    Raises:
        PondError: an unknown name (the message lists the registered ones).
    """
    if isinstance(name, Device):
        return name
    if not isinstance(name, str) or name not in names():
        shown = repr(name) if isinstance(name, str) else f"a {type(name).__name__}"
        raise PondError("device", value=shown, limit="one of " + ", ".join(names()), where="pondlib.devices.registry")
    if name in _added:
        return _added[name]
    if name not in _loaded:
        _loaded[name] = _load(name, BUILTIN.get(name) or _plugin_table()[name])
    return _loaded[name]


def devices() -> Iterator[Device]:
    """Every registered device, in :func:`names` order."""
    for name in names():
        yield get(name)


def owner_of(spec: Any) -> Device | None:
    """The device whose :attr:`~Device.specification_type` ``spec`` is (None when none claims it)."""
    for device in devices():
        if device.specification_type is not None and isinstance(spec, device.specification_type):
            return device
    return None


def moved(module: str, name: str) -> Any:
    """The new home of ``module.name`` if a device moved it there (with a ``DeprecationWarning``).

    Raises:
        AttributeError: no device moved such a name (what ``module.__getattr__`` must raise).
    """
    old = f"{module}:{name}"
    for device in devices():
        target = device.moved.get(old)
        if target is not None:
            new_module, _, attr = target.partition(":")
            warnings.warn(
                f"{module}.{name} moved to {new_module}.{attr}; import it from there",
                DeprecationWarning,
                stacklevel=3,
            )
            return getattr(import_module(new_module), attr)
    raise AttributeError(f"module {module!r} has no attribute {name!r}")
