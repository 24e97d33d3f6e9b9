"""The pondlib error hierarchy.

Every error pondlib raises on bad input is a :class:`PondError` subclass whose message says
*where* the problem is, *what* was got, what was *expected* (the limit) and how to *fix* it::

    PondError
    ├── GraphError          malformed graphs, size mismatches between connected modules
    ├── ConstraintError     a mapping broke hardware design rules (carries every Violation)
    ├── QuantizationError   a quantizer cannot represent its input
    ├── ConfigError         a hardware configuration is out of range or malformed
    ├── NIRError            a NIR file or graph cannot be read or written faithfully
    ├── ONNXError           an ONNX file, node, op or quantization scale cannot be imported faithfully
    ├── SimulationError     bad simulator input (shape, dtype, NaN, out-of-range counts)
    │   └── DeviceError     a (mock) board is gone, timed out, or was changed under us
    ├── CodegenError        a model cannot be emitted as C faithfully, or its C failed to build or run
    └── DistributedError    processes that cannot meet, disagree on the cluster, or stopped under a run

The errors that concern values also derive from :class:`ValueError` so that generic handlers keep
working.

Example:
    >>> from pondlib.errors import SimulationError
    >>> err = SimulationError("input event count", value=-1, limit=">= 0", where="x[3, 2]",
    ...                       fix="pass non-negative integer event counts")
    >>> print(err)
    x[3, 2]: input event count: got -1, expected >= 0. Fix: pass non-negative integer event counts
    >>> err.value, err.limit
    (-1, '>= 0')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "PondError",
    "GraphError",
    "ConstraintError",
    "QuantizationError",
    "ConfigError",
    "NIRError",
    "SimulationError",
    "DeviceError",
    "ONNXError",
    "CodegenError",
    "DistributedError",
    "Violation",
    "short_int",
]

_MISSING = object()


def short_int(value: int) -> str:
    """An integer of more than 15 digits in scientific form (``1.23457e+300``), from its digits (no float
    overflow, no ``str`` of a 5000-digit integer); shorter integers as they are."""
    import math

    if abs(value) < 10**15:
        return str(value)
    exp0 = max(int(math.log10(abs(value))) - 5, 0)
    digits = str(abs(value) // 10**exp0)
    exp = exp0 + len(digits) - 1
    mantissa = (digits[0] + "." + digits[1:6].rstrip("0")).rstrip(".")
    return f"{'-' if value < 0 else ''}{mantissa}e+{exp}"


def _fmt(value: Any) -> str:
    """A short, readable rendering of a value for an error message."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**21:
        return short_int(value)  # never a 300-digit integer
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 120 else text[:117] + "..."


class PondError(Exception):
    """Base class of every pondlib error.

    Args:
        what: what is wrong, in a few words (``"input event count"``), or a whole message when no
            other field is given.
        value: the offending value ("got ...").
        limit: what was expected or the limit that was broken ("expected ...").
        where: where the problem is (a module name, an array index, a file path).
        fix: how to fix it.

    The fields are kept as attributes so that callers and tests can inspect them.
    """

    def __init__(
        self,
        what: str = "",
        *,
        value: Any = _MISSING,
        limit: Any = _MISSING,
        where: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.what = what
        self.value = None if value is _MISSING else value
        self.limit = None if limit is _MISSING else limit
        self.where = where
        self.fix = fix
        parts = []
        head = f"{where}: {what}" if where else what
        if value is not _MISSING:
            head += f": got {_fmt(value)}"
            if limit is not _MISSING:
                head += f", expected {_fmt(limit)}"
        elif limit is not _MISSING:
            head += f": expected {_fmt(limit)}"
        parts.append(head)
        if fix:
            parts.append(f"Fix: {fix}")
        super().__init__(". ".join(parts))


class GraphError(PondError, ValueError):
    """A graph is malformed, or two connected modules disagree on a size."""


class QuantizationError(PondError, ValueError):
    """A quantizer cannot represent its input (NaN, empty layers, impossible ranges)."""


class ConfigError(PondError, ValueError):
    """A hardware configuration is malformed or out of range (lists every problem)."""

    def __init__(self, what: str = "", *, problems: Sequence[str] = (), **fields: Any) -> None:
        self.problems = list(problems)
        if self.problems and not what:
            what = f"{len(self.problems)} configuration problem(s):\n  - " + "\n  - ".join(self.problems)
        super().__init__(what, **fields)


class NIRError(PondError, ValueError):
    """A NIR file or graph cannot be read, or a module cannot be written to NIR faithfully."""


class SimulationError(PondError, ValueError):
    """Bad simulator input or state (wrong shape, dtype, NaN, negative or non-integer counts)."""


class DeviceError(SimulationError):
    """A board disconnected, a read timed out, or its memory changed under a running configuration."""


class ONNXError(PondError, ValueError):
    """An ONNX file cannot be read, or a node, op, attribute, shape or quantization scale cannot be imported
    faithfully (the message names the node and the op)."""


class CodegenError(PondError, ValueError):
    """A model cannot be generated as C faithfully (an unsupported node, an integer path that could overflow),
    or the generated C failed to compile or run (the compiler's message is kept in the error)."""


class DistributedError(PondError, RuntimeError):
    """Processes of a multi-process run cannot meet (a coordinator that is not reachable, a port in use), disagree
    on the cluster (process counts, duplicate ids), a peer stopped under a collective, a run took longer than its
    timeout, or a sweep's trial or worker pool failed (the message names the process or trial)."""


class Violation:
    """One broken hardware design rule.

    Attributes:
        rule: a short rule identifier (``"max_hidden_neurons"``).
        module: the name of the offending module (or ``"<graph>"``).
        value: the offending value.
        limit: the limit it breaks.
        remedy: what would satisfy the rule.
    """

    __slots__ = ("rule", "module", "value", "limit", "remedy")

    def __init__(self, rule: str, module: str, value: Any, limit: Any, remedy: str) -> None:
        self.rule = rule
        self.module = module
        self.value = value
        self.limit = limit
        self.remedy = remedy

    def __repr__(self) -> str:
        return (
            f"Violation(rule={self.rule!r}, module={self.module!r}, value={_fmt(self.value)}, limit={_fmt(self.limit)})"
        )

    def __str__(self) -> str:
        return f"[{self.rule}] {self.module}: got {_fmt(self.value)}, limit {_fmt(self.limit)}. Fix: {self.remedy}"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Violation):
            return NotImplemented
        return str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


class ConstraintError(PondError, ValueError):
    """A mapping broke one or more hardware design rules; ``violations`` holds every one of them.

    Example:
        >>> v = Violation("max_output_neurons", "4_LIF", 10, 8, "use at most 8 output neurons")
        >>> err = ConstraintError([v], device="Xylo Audio 2")
        >>> err.violations[0].rule
        'max_output_neurons'
        >>> print(err)
        Xylo Audio 2: 1 design rule violation(s):
          - [max_output_neurons] 4_LIF: got 10, limit 8. Fix: use at most 8 output neurons
    """

    def __init__(self, violations: Sequence[Violation], *, device: str = "device") -> None:
        self.violations = list(violations)
        self.device = device
        lines = "\n  - ".join(str(v) for v in self.violations)
        super().__init__(f"{len(self.violations)} design rule violation(s):\n  - {lines}", where=device)

    @property
    def rules(self) -> list[str]:
        """The rule identifiers of every violation, in the order they were found."""
        return [v.rule for v in self.violations]
