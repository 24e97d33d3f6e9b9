"""Design rules as functions that return violations, and a runner that collects them all.

A rule is any callable ``rule(context) -> Iterable[Violation]``. :func:`check_rules` runs every rule
and returns every violation; :func:`raise_violations` raises one :class:`~pondlib.errors.ConstraintError`
carrying them all (practice: collect every problem, then raise once).

Example:
    >>> from pondlib.errors import Violation
    >>> def max_inputs(ctx):
    ...     if ctx["n_in"] > 16:
    ...         yield Violation("max_inputs", "0_Linear", ctx["n_in"], 16, "use at most 16 inputs")
    >>> [v.rule for v in check_rules([max_inputs], {"n_in": 20})]
    ['max_inputs']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pondlib.errors import ConstraintError, Violation

Rule = Callable[[Any], Iterable[Violation]]

__all__ = ["Rule", "check_rules", "raise_violations"]


def check_rules(rules: Sequence[Rule], context: Any) -> list[Violation]:
    """Run every rule on ``context`` and return all violations, in rule order."""
    found: list[Violation] = []
    for rule in rules:
        found.extend(rule(context) or ())
    return found


def raise_violations(violations: Sequence[Violation], device: str) -> None:
    """Raise a :class:`ConstraintError` carrying ``violations`` if there is any."""
    if violations:
        raise ConstraintError(violations, device=device)
