"""Reading the fields of NIR nodes and graphs as checked Python values (parameters, metadata, shapes,
a graph's nodes and edges); every malformed field is a :class:`~pondlib.errors.NIRError` naming the node
and the field."""

from __future__ import annotations

from typing import Any

import numpy as np

from pondlib.errors import NIRError
from pondlib.validate import as_array, as_int_array, check_int


def _arr(node: Any, name: str, where: str) -> np.ndarray:
    """The node's parameter ``name`` as a finite real float64 array; a :class:`NIRError` naming the node
    and the field for a missing parameter, strings, complex values, ragged or empty data, NaN or inf."""
    value = getattr(node, name, None)
    if value is None:
        raise NIRError(f"missing parameter {name}", where=where, fix="re-export the node")
    arr = as_array(
        value, f"parameter {name}", where=where, error=NIRError, fix="re-export the node with finite real values"
    )
    return arr.astype(np.float64)


def _meta(node: Any) -> dict:
    m = getattr(node, "metadata", None)
    return m if isinstance(m, dict) else {}


def _mstr(meta: dict, key: str, default: str = "") -> str:
    v = meta.get(key, default)
    return v.decode() if isinstance(v, bytes) else str(v)


def _ints(value: Any, name: str = "shape", where: str = "graph", *, text: bool = False) -> Any:
    """Whole numbers (a shape, strides, ...) as a tuple; with ``text`` a padding string such as
    ``"same"`` is returned unchanged.

    A :class:`NIRError` naming ``where`` and ``name`` for strings, fractions, NaN, ``None``."""
    if text and isinstance(value, np.ndarray) and value.dtype.kind in "SU" and value.size == 1:
        value = value.reshape(()).item()
    if text and isinstance(value, (str, bytes)):
        return value.decode() if isinstance(value, bytes) else value
    arr = as_int_array(
        value,
        name,
        where=where,
        error=NIRError,
        allow_empty=True,
        fix="re-export the node with whole numbers",
    )
    return tuple(int(v) for v in arr.reshape(-1))


def _int(value: Any, name: str, where: str) -> int:
    return check_int(value, name, where=where, error=NIRError, fix="re-export the node with a whole number")


def _shape_of(arr: np.ndarray) -> tuple[int, ...]:
    return tuple(int(d) for d in arr.shape) or (1,)


def _graph_nodes(graph: Any, where: str) -> dict[str, Any]:
    """``graph.nodes`` as a dict of str names; a :class:`NIRError` when it is not one."""
    nodes = getattr(graph, "nodes", None)
    if not isinstance(nodes, dict):
        raise NIRError(
            "graph nodes",
            value=type(nodes).__name__,
            limit="a dict name -> node",
            where=where,
            fix="re-export the graph",
        )
    return {str(k): n for k, n in nodes.items()}


def _graph_edges(graph: Any, where: str) -> list[tuple[str, str]]:
    """``graph.edges`` as (source, target) name pairs; a :class:`NIRError` naming a malformed edge."""
    edges = getattr(graph, "edges", None)
    if edges is None or isinstance(edges, (str, bytes, dict)):
        raise NIRError("graph edges", value=type(edges).__name__, limit="a list of (source, target) pairs", where=where)
    out = []
    for e in edges:
        items = list(e) if isinstance(e, (list, tuple, np.ndarray)) else None
        if items is None or len(items) != 2 or not all(isinstance(v, (str, bytes, np.str_, np.bytes_)) for v in items):
            raise NIRError(
                "edge",
                value=repr(e)[:80],
                limit="a (source, target) pair of node names",
                where=where,
                fix="repair the graph's edges",
            )
        a, b = (v.decode() if isinstance(v, (bytes, np.bytes_)) else str(v) for v in items)
        out.append((a, b))
    return out


def _port(node: Any, attr: str, key: str, where: str, required: bool = True) -> Any:
    """The declared shape ``node.<attr>[key]`` of an Input/Output node (None when absent and optional)."""
    types = getattr(node, attr, None)
    value = types.get(key) if isinstance(types, dict) else None
    if value is None and required:
        raise NIRError(
            f"{attr}[{key!r}]",
            value=None,
            limit="the shape of one time step",
            where=where,
            fix="re-export the graph with the Input node's shape",
        )
    return value
