"""Resolving what users pass to a device API: limits by name, networks as graphs.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Lim:
    ...     name: str
    >>> table = {"small": Lim("Small"), "big": Lim("Big")}
    >>> resolve_limits("Big", table, default=table["small"], device="Toy").name
    'Big'
    >>> resolve_limits(None, table, default=table["small"], device="Toy").name
    'Small'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pondlib.errors import ConfigError, GraphError
from pondlib.graph import GraphModuleBase

__all__ = ["resolve_limits", "as_graph"]

L = TypeVar("L")


def _keys(text: str, device: str) -> set[str]:
    """A variant name normalised (lower case; spaces, dashes and underscores dropped), with and without
    the device name; an empty key never matches (``" "`` or the bare device name is not a variant)."""

    def squash(s: str) -> str:
        s = s.lower()
        for junk in (" ", "_", "-"):
            s = s.replace(junk, "")
        return s

    full = squash(text)
    return {full, full.replace(squash(device), "")} - {""}


def resolve_limits(limits: Any, table: Mapping[str, L], *, default: L, device: str) -> L:
    """A limits instance from an instance, a short name or a display name (case, spaces, dashes and
    the device name ignored), or ``default`` for None.

    Raises:
        ConfigError: an unknown name (the message lists the known ones).
    """
    if limits is None:
        return default
    if isinstance(limits, type(default)):
        return limits
    wanted = _keys(str(limits), device)
    for short, inst in table.items():
        if wanted & (_keys(short, device) | _keys(str(getattr(inst, "name", short)), device)):
            return inst
    raise ConfigError(
        f"unknown {device} variant",
        value=limits,
        limit=sorted(table),
        fix=f"pass one of the names listed or a {type(default).__name__} instance",
    )


def as_graph(graph: Any) -> GraphModuleBase:
    """The graph a mapper works on: a graph module as is, or ``net.as_graph()`` for a network.

    Raises:
        GraphError: neither a graph module nor something with an ``as_graph()`` returning one.
    """
    if isinstance(graph, GraphModuleBase):
        return graph
    if hasattr(graph, "as_graph") and callable(graph.as_graph):
        g = graph.as_graph()
        if isinstance(g, GraphModuleBase):
            return g
    raise GraphError(
        "mapper input",
        value=type(graph).__name__,
        limit="a graph module or a pondlib.nn module with .as_graph()",
        fix="pass net.as_graph() or the pondlib.nn network itself",
    )
