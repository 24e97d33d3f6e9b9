"""Row types of the device reports (``pondlib.devices.<device>.report``): plain data, no rendering.

Every device reports the resources a mapping uses as :class:`Resource` rows and describes its limits as
:class:`LimitRow` rows, so that one renderer (the ``pond`` command line, a notebook, a test) shows
them all the same way.

Example:
    >>> r = Resource("hidden neurons", used=64, limit=992)
    >>> round(r.fraction, 4), r.exceeded
    (0.0645, False)
    >>> Resource("L2 used", used=3_000_000, limit=2_097_152, unit="B").exceeded
    True
    >>> Resource("synapse words", used=1653, limit=None, note="16 bit, all PEs").fraction is None
    True
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields
from typing import Any

from pondlib.errors import ConfigError

__all__ = ["Resource", "LimitRow"]


def _finite(value: Any, name: str, where: str) -> None:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value))
    if not ok:
        raise ConfigError(name, value=value, limit="a finite real number", where=where, fix=f"pass {name} as a number")


def _texts(row: Any, where: str) -> None:
    for f in fields(row):
        if f.type == "str" and not isinstance(getattr(row, f.name), str):
            value = getattr(row, f.name)
            raise ConfigError(
                f.name, value=f"a {type(value).__name__}", limit="a str", where=where, fix=f"pass {f.name} as text"
            )


@dataclass(frozen=True)
class Resource:
    """One resource of a mapping: the amount used against the device's limit.

    Attributes:
        name: what is counted (``"hidden neurons"``).
        used: the amount the mapping uses, in ``unit``.
        limit: the device's limit in ``unit``, or None when the amount is reported for information only.
        unit: ``""`` for a count, else the unit (``"B"``, ``"bits"``).
        note: how the amount is counted (``"non-zero weights"``, ``"test run"``), or ``""``.
    """

    name: str
    used: float
    limit: float | None
    unit: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        """Text fields are strings; ``used`` and ``limit`` (unless None) finite real numbers, kept as given.

        Raises:
            ConfigError: naming the field.
        """
        where = f"Resource({self.name!r})" if isinstance(self.name, str) else "Resource"
        _texts(self, where)
        _finite(self.used, "used", where)
        if self.limit is not None:
            _finite(self.limit, "limit", where)

    @property
    def fraction(self) -> float | None:
        """``used / limit`` (0 for a zero limit), or None without a limit."""
        if self.limit is None:
            return None
        return self.used / self.limit if self.limit else 0.0

    @property
    def exceeded(self) -> bool:
        """True when the mapping uses more than the limit."""
        return self.limit is not None and self.used > self.limit


@dataclass(frozen=True)
class LimitRow:
    """One limit of a device variant, described for people.

    Attributes:
        name: what is limited (``"hidden neurons"``).
        value: the limit, as text (``"992"``, ``"-128..127"``, ``"1x1, 3x3"``).
        unit: ``""`` for a count, else the unit.
    """

    name: str
    value: str
    unit: str = ""

    def __post_init__(self) -> None:
        """Every field is text (ConfigError naming the field otherwise)."""
        _texts(self, "LimitRow")
