"""Row and table types of the device reports (``pondlib.devices.<device>.report``): plain data, no rendering.

Every device reports the resources a mapping uses as :class:`Resource` rows, describes its limits as
:class:`LimitRow` rows and gives every other table (quantization, float-vs-chip gaps, a simulation's
summary) as a :class:`Table` of text cells, so that one renderer (the ``pond`` command line, a
notebook, a test) shows every device the same way and knows none of them.

Example:
    >>> r = Resource("hidden neurons", used=64, limit=992)
    >>> round(r.fraction, 4), r.exceeded
    (0.0645, False)
    >>> Resource("L2 used", used=3_000_000, limit=2_097_152, unit="B").exceeded
    True
    >>> Resource("synapse words", used=1653, limit=None, note="16 bit, all PEs").fraction is None
    True
    >>> t = Table("Quantization", (("field", "left"), ("error", "right")), (("weights", "0.4%"),))
    >>> t.headers, t.rows[0][1]
    (('field', 'error'), '0.4%')
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields
from typing import Any, Literal

from pondlib.errors import ConfigError

__all__ = ["Resource", "LimitRow", "Table", "Justify", "GAP_COLUMNS", "gap_table", "one_spike_row"]


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


#: How a column's cells are aligned.
Justify = Literal["left", "right", "center"]


@dataclass(frozen=True)
class Table:
    """A table of text cells, as a device reports it (quantization, gaps, a simulation's summary).

    Attributes:
        title: the table's title.
        columns: ``(header, justify)`` per column; ``justify`` is ``"left"``, ``"right"`` or ``"center"``.
        rows: one tuple of cell texts per row, as many cells as columns.
        caption: a line under the table, or ``""``.
        alarm: True when the table reports a failure (a renderer may show it in red).
    """

    title: str
    columns: tuple[tuple[str, str], ...]
    rows: tuple[tuple[str, ...], ...] = ()
    caption: str = ""
    alarm: bool = False

    def __post_init__(self) -> None:
        """Every cell is text and every row has one cell per column (ConfigError naming the row)."""
        where = f"Table({self.title!r})" if isinstance(self.title, str) else "Table"
        _texts(self, where)
        for i, col in enumerate(self.columns):
            ok = isinstance(col, tuple) and len(col) == 2 and isinstance(col[0], str) and col[1] in _JUSTIFY
            if not ok:
                raise ConfigError(
                    f"columns[{i}]", value=repr(col), limit="(header, 'left' | 'right' | 'center')", where=where
                )
        for i, row in enumerate(self.rows):
            if not isinstance(row, tuple) or len(row) != len(self.columns) or not all(isinstance(c, str) for c in row):
                raise ConfigError(
                    f"rows[{i}]",
                    value=repr(row)[:80],
                    limit=f"a tuple of {len(self.columns)} strings",
                    where=where,
                    fix="give every row one text cell per column",
                )

    @property
    def headers(self) -> tuple[str, ...]:
        """The column headers."""
        return tuple(h for h, _ in self.columns)


_JUSTIFY = ("left", "right", "center")


#: The columns of every float-vs-chip gap table: the gap, the float model's side, the device's side,
#: and what the gap did on the data at hand.
GAP_COLUMNS = (("gap", "left"), ("float model", "left"), ("device", "left"), ("here", "left"))


def gap_table(device: str, rows: Any) -> Table:
    """The float-vs-chip table of ``device`` (its display name) with ``rows`` of four texts (:data:`GAP_COLUMNS`)."""
    return Table(f"Float model vs {device}: known gaps and what they did here", GAP_COLUMNS, tuple(map(tuple, rows)))


def one_spike_row(float_cap: float, float_acc: float, as_trained_acc: float, aware_acc: float | None) -> tuple:
    """The gap row of a device whose neurons spike at most once per step, against a float network that
    emits up to ``float_cap`` spikes per neuron and step (accuracies as fractions)."""
    here = f"as trained: device {as_trained_acc:.1%} vs float {float_acc:.1%}"
    if aware_acc is not None:
        here += f"; device-aware training (one spike per step in float too): device {aware_acc:.1%}"
    return ("spikes per neuron per step", f"{float_cap:g} hidden (as trained)", "1", here)
