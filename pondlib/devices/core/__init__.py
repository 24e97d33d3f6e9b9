"""Machinery shared by every device package: violations, rule runners, integer helpers.

A device package (``pondlib.devices.<name>``) imports from here and never from a sibling device.
"""

from pondlib.devices.core.inputs import append_silence
from pondlib.devices.core.intmath import sat, wrap
from pondlib.devices.core.lookup import as_graph, resolve_limits
from pondlib.devices.core.rules import (
    Rule,
    RuleInfo,
    check_rules,
    for_each,
    raise_violations,
    rule,
    rule_info,
    rule_table,
)
from pondlib.errors import Violation

__all__ = [
    "Rule",
    "RuleInfo",
    "rule",
    "rule_info",
    "rule_table",
    "for_each",
    "Violation",
    "check_rules",
    "raise_violations",
    "sat",
    "wrap",
    "as_graph",
    "resolve_limits",
    "append_silence",
]
