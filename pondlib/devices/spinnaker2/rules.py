"""Design rules of the SpiNNaker2 mappers as named functions, and the rule tables built from them.

A rule is a function ``rule(context) -> Iterable[Violation]`` (see :mod:`pondlib.devices.core.rules`,
whose :func:`~pondlib.devices.core.rules.check_rules` runs them). :func:`rule` records the id the
function reports under; the first paragraph of its docstring is what the rule requires. Several
functions may check one id (each a part of it): :func:`rule_table` joins their parts, in order, with
``"; "``. So the public tables (``RULES`` of the SNN mapper, ``DNN_RULES``) are built from the code that
checks them and cannot drift from it.

:func:`for_each` runs a tuple of rules on every item of a context in turn: the violations come item by
item (all of the first weight layer's, then the second's), as a loop over the modules reports them.

Example:
    >>> from types import SimpleNamespace as NS
    >>> from pondlib.devices.core.rules import check_rules
    >>> from pondlib.errors import Violation
    >>> @rule("max_inputs")
    ... def max_inputs(layer):
    ...     '''at most 16 inputs per layer'''
    ...     if layer.n_in > 16:
    ...         yield Violation("max_inputs", layer.name, layer.n_in, 16, "use at most 16 inputs")
    >>> layers = for_each("layers", max_inputs)
    >>> net = NS(layers=[NS(name="a", n_in=20), NS(name="b", n_in=3), NS(name="c", n_in=17)])
    >>> [v.module for v in check_rules([layers], net)]
    ['a', 'c']
    >>> rule_table(layers)
    {'max_inputs': 'at most 16 inputs per layer'}
"""

from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pondlib.devices.core.rules import Rule, check_rules
from pondlib.errors import PondError, Violation

__all__ = ["rule", "for_each", "rule_table"]


def rule(rule_id: str) -> Callable[[Rule], Rule]:
    """Mark a function as the check of rule ``rule_id``: its docstring's first paragraph is the prose,
    and every violation it yields must carry ``rule_id`` (so the table names what the code reports).

    Raises:
        PondError: ``rule_id`` not a non-empty str or the function without a docstring (when marking);
            a violation of another rule (when the rule runs).
    """
    if not isinstance(rule_id, str) or not rule_id:
        raise PondError("rule id", value=repr(rule_id), limit="a non-empty str", where="rule")

    def mark(fn: Rule) -> Rule:
        name = getattr(fn, "__name__", repr(fn))
        if not inspect.getdoc(fn):
            raise PondError(
                f"rule {name!r}",
                value="no docstring",
                limit="a docstring whose first paragraph says what the rule requires",
                where="rule",
            )

        @functools.wraps(fn)
        def checked(context: Any) -> Iterator[Violation]:
            for v in fn(context) or ():
                if isinstance(v, Violation) and v.rule != rule_id:
                    raise PondError(f"rule {name!r}", value=f"reported {v.rule!r}", limit=repr(rule_id), where="rule")
                yield v

        checked.rule_id = rule_id  # type: ignore[attr-defined]
        return checked

    return mark


def for_each(items: str, *rules: Rule) -> Rule:
    """A rule that runs ``rules`` on every item of ``context.<items>`` (a dotted attribute path) in turn,
    collecting the violations item by item."""
    get = operator.attrgetter(items)

    def each(context: Any) -> Iterable[Violation]:
        for item in get(context):
            yield from check_rules(rules, item)

    each.__name__ = f"for_each_{items.replace('.', '_')}"
    each.__doc__ = f"The rules {[r.__name__ for r in rules]} on every item of ``{items}``."
    each.rules = rules  # type: ignore[attr-defined]
    return each


def _prose(fn: Rule) -> str:
    """The first paragraph of ``fn``'s docstring as one line."""
    return " ".join((inspect.getdoc(fn) or "").split("\n\n")[0].split())


def rule_table(*rules: Rule) -> dict[str, str]:
    """Rule id -> prose of ``rules`` (those of :func:`for_each` included), in the order they run; the
    parts of an id checked by several functions are joined with ``"; "``.

    Raises:
        PondError: a function not marked with :func:`rule`.
    """
    parts: dict[str, list[str]] = {}

    def visit(fn: Rule) -> None:
        if hasattr(fn, "rules"):
            for sub in fn.rules:
                visit(sub)
            return
        rule_id = getattr(fn, "rule_id", None)
        if rule_id is None:
            raise PondError(
                f"rule {getattr(fn, '__name__', fn)!r}", value="no rule id", limit="@rule(id)", where="rule_table"
            )
        seen = parts.setdefault(rule_id, [])
        if _prose(fn) not in seen:
            seen.append(_prose(fn))

    for fn in rules:
        visit(fn)
    return {rule_id: "; ".join(texts) for rule_id, texts in parts.items()}
