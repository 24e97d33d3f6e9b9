"""Design rules as functions that return violations, a runner that collects them all, and the rule tables.

A rule is any callable ``rule(context) -> Iterable[Violation]``. :func:`check_rules` runs every rule
and returns every violation; :func:`raise_violations` raises one :class:`~pondlib.errors.ConstraintError`
carrying them all (practice: collect every problem, then raise once).

A chip's mapper keeps its rules as named functions and builds its public table of rules (``RULES``:
rule id -> what the rule requires) from them with :func:`rule_table`, so the table cannot drift from the
checks: a function's rule id is the one given to :func:`rule` (or, unmarked, its name), its prose the
first paragraph of its docstring. Several functions may check parts of one rule: the first introduces
the id, the others are marked ``extends=True`` and add their prose after ``"; "``. :func:`for_each`
runs a group of rules on every item of a context (a layer, a population) in turn, so the violations
come item by item.

Example:
    >>> from types import SimpleNamespace as NS
    >>> from pondlib.errors import Violation
    >>> def max_inputs(ctx):
    ...     '''at most 16 inputs'''
    ...     if ctx["n_in"] > 16:
    ...         yield Violation("max_inputs", "0_Linear", ctx["n_in"], 16, "use at most 16 inputs")
    >>> [v.rule for v in check_rules([max_inputs], {"n_in": 20})]
    ['max_inputs']
    >>> @rule("layer_size")
    ... def layer_size(layer):
    ...     '''at most 8 neurons per layer'''
    ...     if layer.n > 8:
    ...         yield Violation("layer_size", layer.name, layer.n, 8, "split the layer")
    >>> @rule("layer_size", extends=True)
    ... def total_size(net):
    ...     '''at most 12 in all'''
    ...     if sum(ly.n for ly in net.layers) > 12:
    ...         yield Violation("layer_size", "<net>", sum(ly.n for ly in net.layers), 12, "prune")
    >>> rules = (for_each("layers", layer_size), total_size)
    >>> net = NS(layers=[NS(name="a", n=9), NS(name="b", n=4)])
    >>> [(v.module, v.value) for v in check_rules(rules, net)]
    [('a', 9), ('<net>', 13)]
    >>> rule_table(max_inputs, *rules)
    {'max_inputs': 'at most 16 inputs', 'layer_size': 'at most 8 neurons per layer; at most 12 in all'}
"""

from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pondlib.errors import ConstraintError, PondError, Violation

Rule = Callable[[Any], Iterable[Violation]]

__all__ = ["Rule", "RuleInfo", "check_rules", "raise_violations", "rule", "rule_info", "rule_table", "for_each"]

_ATTR = "rule_info"  # where @rule keeps a function's RuleInfo


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


@dataclass(frozen=True)
class RuleInfo:
    """What :func:`rule` records on a rule function.

    Attributes:
        id: the rule id its violations carry.
        prose: what the rule requires (the first paragraph of the function's docstring, on one line).
        extends: a further part of a rule an earlier function introduced.
    """

    id: str
    prose: str
    extends: bool = False


def _prose(fn: Callable) -> str:
    return " ".join(inspect.cleandoc(getattr(fn, "__doc__", None) or "").split("\n\n", 1)[0].split())


def rule(rule_id: str, *, extends: bool = False) -> Callable[[Rule], Rule]:
    """Mark a function as the check of rule ``rule_id`` (``extends``: of a further part of it). Every
    violation the marked function yields must carry ``rule_id``, so the table names what the code reports.

    Raises:
        PondError: an empty ``rule_id`` or a function without a docstring (when marking); a violation of
            another rule (when the rule runs).
    """
    if not isinstance(rule_id, str) or not rule_id:
        raise PondError("rule id", value=repr(rule_id), limit="a non-empty str", where="rule")

    def mark(fn: Rule) -> Rule:
        name = getattr(fn, "__name__", repr(fn))
        if not _prose(fn):
            raise PondError(
                f"rule {name!r}",
                value="no docstring",
                limit="a docstring whose first paragraph says what the rule requires",
                where="rule",
                fix="document the rule",
            )

        @functools.wraps(fn)
        def checked(context: Any) -> Iterator[Violation]:
            for v in fn(context) or ():
                if isinstance(v, Violation) and v.rule != rule_id:
                    raise PondError(f"rule {name!r}", value=f"reported {v.rule!r}", limit=repr(rule_id), where="rule")
                yield v

        setattr(checked, _ATTR, RuleInfo(rule_id, _prose(fn), bool(extends)))
        return checked

    return mark


def rule_info(fn: Callable) -> RuleInfo:
    """The :class:`RuleInfo` of a rule function: what :func:`rule` recorded, or, for an unmarked function
    with a docstring, its name as the id.

    Raises:
        PondError: an unmarked function without a docstring.
    """
    info = getattr(fn, _ATTR, None)
    if isinstance(info, RuleInfo):
        return info
    if not _prose(fn):
        raise PondError(
            f"rule {getattr(fn, '__name__', fn)!r}",
            value="neither marked with @rule nor documented",
            limit="a rule id and its prose",
            where="rule_info",
        )
    return RuleInfo(fn.__name__, _prose(fn))


def for_each(items: str, *rules: Rule) -> Rule:
    """A rule that runs ``rules`` on every item of ``context.<items>`` (a dotted attribute path) in turn,
    collecting the violations item by item."""
    get = operator.attrgetter(items)

    def each(context: Any) -> Iterable[Violation]:
        for item in get(context):
            yield from check_rules(rules, item)

    each.__name__ = f"for_each_{items.replace('.', '_')}"
    each.__doc__ = f"The rules {[getattr(r, '__name__', r) for r in rules]} on every item of ``{items}``."
    each.rules = rules  # type: ignore[attr-defined]
    return each


def rule_table(*rules: Rule) -> dict[str, str]:
    """Rule id -> prose of ``rules`` (those inside :func:`for_each` groups included), in the order they run;
    an extending function's prose is added after ``"; "``.

    Raises:
        PondError: a rule id introduced twice, or extended before a function introduces it.
    """
    table: dict[str, str] = {}

    def visit(fn: Rule) -> None:
        for sub in getattr(fn, "rules", None) or ():
            visit(sub)
        if hasattr(fn, "rules"):
            return
        info = rule_info(fn)
        if info.extends != (info.id in table):
            raise PondError(
                f"rule {getattr(fn, '__name__', fn)!r}",
                value=f"{'extends' if info.extends else 'introduces'} {info.id!r}",
                limit="each rule id introduced once, before the functions extending it",
                where="rule_table",
                fix="mark the further parts of a rule with @rule(id, extends=True)",
            )
        table[info.id] = f"{table[info.id]}; {info.prose}" if info.extends else info.prose

    for fn in rules:
        visit(fn)
    return table
