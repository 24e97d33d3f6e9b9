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

from pondlib.errors import ConstraintError, PondError, Violation

Rule = Callable[[Any], Iterable[Violation]]

__all__ = ["Rule", "check_rules", "raise_violations"]


def check_rules(rules: Sequence[Rule], context: Any) -> list[Violation]:
    """Run every rule on ``context`` and return all violations, in rule order.

    Raises:
        PondError: ``rules`` not a sequence of callables, or a rule yielding something other than a
            :class:`Violation` (the message names the rule).
    """
    if isinstance(rules, (str, bytes)) or not isinstance(rules, Sequence):
        raise PondError(
            "rules", value=f"a {type(rules).__name__}", limit="a sequence of rule callables", where="check_rules"
        )
    found: list[Violation] = []
    for i, rule in enumerate(rules):
        name = getattr(rule, "__name__", f"rules[{i}]")
        if not callable(rule):
            raise PondError(f"rules[{i}]", value=f"a {type(rule).__name__}", limit="a callable", where="check_rules")
        for v in rule(context) or ():
            if not isinstance(v, Violation):
                raise PondError(
                    f"rule {name}",
                    value=f"yielded a {type(v).__name__}",
                    limit="Violation objects",
                    where="check_rules",
                    fix="yield pondlib.errors.Violation(rule, module, value, limit, remedy)",
                )
            found.append(v)
    return found


def raise_violations(violations: Sequence[Violation], device: str) -> None:
    """Raise a :class:`ConstraintError` carrying ``violations`` if there is any.

    Raises:
        PondError: ``violations`` not a sequence of :class:`Violation`, or ``device`` not a str.
    """
    if not isinstance(device, str):
        raise PondError("device", value=f"a {type(device).__name__}", limit="a str", where="raise_violations")
    if isinstance(violations, (str, bytes)) or not isinstance(violations, Sequence):
        raise PondError(
            "violations", value=f"a {type(violations).__name__}", limit="a list of Violation", where="raise_violations"
        )
    for i, v in enumerate(violations):
        if not isinstance(v, Violation):
            raise PondError(
                f"violations[{i}]", value=f"a {type(v).__name__}", limit="a Violation", where="raise_violations"
            )
    if violations:
        raise ConstraintError(violations, device=device)
