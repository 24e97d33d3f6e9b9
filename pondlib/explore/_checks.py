"""Problem collection for the explorer's data classes: check every field, then raise once.

Each public constructor of :mod:`pondlib.explore` (a layer, a workload, a memory level, a hardware
description, a schedule) runs its fields through a :class:`Problems` collector, which calls the shared
checks of :mod:`pondlib.validate` but keeps going after a failure, so that one
:class:`~pondlib.errors.ConfigError` lists every bad field (its ``problems`` attribute), as zigzag's
hardware description does.

Example:
    >>> p = Problems("MemoryLevel 'sram'")
    >>> p.integer(-3, "size_bits", lo=1), p.number(float("nan"), "read_energy_pj_per_bit", lo=0.0)
    (None, None)
    >>> p.raise_if_any("give every quantity in its unit")
    Traceback (most recent call last):
    ...
    pondlib.errors.ConfigError: MemoryLevel 'sram': 2 configuration problem(s):
      - size_bits: got -3, expected an integer >= 1. Fix: pass an integer >= 1
      - read_energy_pj_per_bit: got nan, expected a finite number >= 0.0. Fix: pass a finite number >= 0.0.
    Fix: give every quantity in its unit
"""

from __future__ import annotations

from typing import Any

from pondlib.errors import ConfigError, PondError
from pondlib.validate import check_bool, check_choice, check_float, check_int, check_type

__all__ = ["Problems"]


class Problems:
    """Collects the problems of one object (``where``); :meth:`raise_if_any` raises them together."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.items: list[str] = []

    def add(self, message: str) -> None:
        """Record one problem (a full sentence: what, got, expected, fix)."""
        self.items.append(message)

    def _run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, error=ConfigError, **kwargs)
        except PondError as err:
            self.items.append(str(err))
            return None

    def integer(self, value: Any, name: str, **bounds: Any) -> int | None:
        """``value`` as an int within ``bounds`` (``lo``/``hi``), or None after recording the problem."""
        return self._run(check_int, value, name, **bounds)

    def number(self, value: Any, name: str, **bounds: Any) -> float | None:
        """``value`` as a finite float within ``bounds``, or None after recording the problem."""
        return self._run(check_float, value, name, **bounds)

    def flag(self, value: Any, name: str) -> bool | None:
        """``value`` as a bool, or None after recording the problem."""
        return self._run(check_bool, value, name)

    def choice(self, value: Any, name: str, choices: tuple) -> Any:
        """``value`` when it is one of ``choices``, or None after recording the problem."""
        return self._run(check_choice, value, name, choices)

    def instance(self, value: Any, name: str, types: type | tuple[type, ...]) -> Any:
        """``value`` when it is an instance of ``types``, or None after recording the problem."""
        return self._run(check_type, value, name, types)

    def raise_if_any(self, fix: str | None = None) -> None:
        """Raise one :class:`~pondlib.errors.ConfigError` listing every recorded problem."""
        if self.items:
            raise ConfigError(problems=self.items, where=self.where, fix=fix)
