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

from dataclasses import dataclass

__all__ = ["Resource", "LimitRow"]


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
