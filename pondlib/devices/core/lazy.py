"""Public names of a chip package, loaded on first use.

A chip package re-exports its public names explicitly (``_EXPORTS``: name -> defining module), but
imports a module only when one of its names is first asked for: importing one part of a chip (its
``Device``, which the command line builds its options from) then does not load the simulator, the
development kit or the device-aware twin.

Example:
    >>> getattr_, dir_ = lazy_exports("pondlib.devices.core", {"sat": "pondlib.devices.core.intmath"})
    >>> int(getattr_("sat")(300, 8)), "sat" in dir_()
    (127, True)
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the package ``package``: a public name of ``exports`` is imported from
    its module when first used (then kept in the package); any other name is tried as a submodule.

    A name that is also its module's name (``mapper`` from ``<package>.mapper``) is bound now: importing the
    submodule later would otherwise leave the module, not the function, under that name in the package.
    """
    for name, module in exports.items():
        if module.rsplit(".", 1)[-1] == name:
            setattr(sys.modules[package], name, getattr(import_module(module), name))

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is not None:
            value = getattr(import_module(module), name)
            setattr(sys.modules[package], name, value)
            return value
        try:
            return import_module(f"{package}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{package}.{name}":
                raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
