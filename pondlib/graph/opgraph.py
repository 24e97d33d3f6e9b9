r"""Operator graphs: a DAG of named tensors and ops, the plain-data form of an imported DNN.

An :class:`OpGraph` is what an ONNX file becomes before a device maps it: graph inputs and outputs
(:class:`TensorInfo`: name, shape, dtype), :class:`Node` s (``op`` in a ``domain``, named input and output
tensors, attributes as plain Python values and numpy arrays) and constants (initializers, read-only numpy
arrays). Nothing here knows what an op computes; a device's kernels do.

:func:`check_opgraph` is the structural validation every importer runs (``onnx.checker`` refuses the
integer dialects that carry custom ops in the default domain, so pondlib checks the structure itself):

* names: every node output is produced once, by one node, and is neither a graph input nor a constant;
* references: every node input (other than the optional ``""``) is a graph input, a constant or the output
  of some node; every graph output is produced;
* acyclic: the nodes have a topological order (:meth:`OpGraph.order`, Kahn's algorithm);
* sizes: every declared input shape is concrete and holds at most ``max_elements`` elements, checked
  *before* anything is allocated.

Example:
    >>> import numpy as np
    >>> g = OpGraph(
    ...     inputs=(TensorInfo("x", (1, 4), "int8"),),
    ...     outputs=(TensorInfo("y", (1, 2), "int8"),),
    ...     nodes=(Node("mm", "MatMul", ("x", "w"), ("y",)),),
    ...     constants={"w": np.ones((4, 2))},
    ... )
    >>> [n.name for n in g.order()], g.constants["w"].flags.writeable
    (['mm'], False)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from pondlib.errors import GraphError

__all__ = ["TensorInfo", "Node", "OpGraph", "check_opgraph", "MAX_ELEMENTS"]

#: Largest element count of one declared tensor (2^28 int64 values = 2 GiB): beyond it an import refuses the
#: shape before allocating anything.
MAX_ELEMENTS = 2**28


@dataclass(frozen=True)
class TensorInfo:
    """A graph input or output: ``name``, ``shape`` (a tuple of ints, or None when undeclared) and ``dtype``
    (a numpy dtype name such as ``"float32"`` or ``"int8"``)."""

    name: str
    shape: tuple[int, ...] | None = None
    dtype: str = "float32"


@dataclass(frozen=True, eq=False)
class Node:
    """One op: ``op`` (e.g. ``"MatMul"``, ``"RequantShift"``) in ``domain`` (``""`` is ONNX's default domain),
    named ``inputs`` (``""`` marks an omitted optional input) and ``outputs``, and ``attrs``."""

    name: str
    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    domain: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "attrs", MappingProxyType(dict(self.attrs)))

    @property
    def label(self) -> str:
        """``name (op)`` for messages, with the domain when it is not the default one."""
        op = self.op if not self.domain else f"{self.domain}:{self.op}"
        return f"node {self.name!r} ({op})"


@dataclass(frozen=True)
class OpGraph:
    """A DAG of ops over named tensors (module docstring); constants are stored as read-only copies."""

    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    nodes: tuple[Node, ...]
    constants: Mapping[str, np.ndarray] = field(default_factory=dict)
    name: str = "graph"
    notes: tuple[str, ...] = ()
    opset: int = 17

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "nodes", tuple(self.nodes))
        frozen = {}
        for key, value in dict(self.constants).items():
            arr = np.array(value)
            arr.flags.writeable = False
            frozen[key] = arr
        object.__setattr__(self, "constants", MappingProxyType(frozen))

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.inputs)

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.outputs)

    def producers(self) -> dict[str, Node]:
        """Tensor name -> the node that writes it."""
        return {out: n for n in self.nodes for out in n.outputs if out}

    def consumers(self) -> dict[str, list[Node]]:
        """Tensor name -> the nodes that read it (in graph order)."""
        users: dict[str, list[Node]] = {}
        for n in self.nodes:
            for name in n.inputs:
                if name:
                    users.setdefault(name, []).append(n)
        return users

    def order(self) -> list[Node]:
        """The nodes in a topological order (stable: ties keep graph order); a GraphError names a node on a
        cycle when there is none."""
        producers = self.producers()
        pending = {id(n): sum(1 for t in set(n.inputs) if t in producers) for n in self.nodes}
        users = self.consumers()
        ready = deque(n for n in self.nodes if pending[id(n)] == 0)
        out: list[Node] = []
        while ready:
            node = ready.popleft()
            out.append(node)
            for t in node.outputs:
                for user in {id(u): u for u in users.get(t, [])}.values():
                    pending[id(user)] -= 1
                    if pending[id(user)] == 0:
                        ready.append(user)
        if len(out) != len(self.nodes):
            stuck = next(n for n in self.nodes if pending[id(n)] > 0)
            raise GraphError(
                "cycle",
                value=f"{stuck.label} depends on its own output",
                limit="an acyclic graph (a DAG)",
                where=self.name,
                fix="break the cycle: recurrent state goes through graph inputs and outputs",
            )
        return out

    def op_counts(self) -> dict[str, int]:
        """Op name -> how many nodes run it."""
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.op] = counts.get(n.op, 0) + 1
        return counts


def _check_shape(info: TensorInfo, where: str, max_elements: int) -> None:
    shape = info.shape
    if shape is None:
        return
    if any((not isinstance(d, (int, np.integer))) or d < 0 for d in shape):
        raise GraphError(
            "tensor shape",
            value=f"{info.name!r} {shape}",
            limit="non-negative integer dimensions",
            where=where,
            fix="declare concrete dimensions (export with fixed shapes, or pass input_shapes=)",
        )
    size = 1
    for d in shape:
        size *= int(d)
    if size > max_elements:
        raise GraphError(
            "tensor size",
            value=f"{info.name!r} {tuple(int(d) for d in shape)} = {size} elements",
            limit=f"<= {max_elements} elements",
            where=where,
            fix="declare the real (smaller) shape; nothing was allocated",
        )


def check_opgraph(graph: OpGraph, *, max_elements: int = MAX_ELEMENTS) -> list[Node]:
    """Validate ``graph``'s structure (module docstring) and return its nodes in topological order.

    Raises:
        GraphError: naming the tensor or node, what was found and the fix.
    """
    where = graph.name
    if not graph.nodes:
        raise GraphError("nodes", value=0, limit=">= 1 node", where=where, fix="pass a graph with ops")
    known = set(graph.input_names) | set(graph.constants)
    if len(set(graph.input_names)) != len(graph.inputs):
        dup = next(n for n in graph.input_names if graph.input_names.count(n) > 1)
        raise GraphError("graph input", value=f"{dup!r} twice", limit="unique names", where=where, fix="rename it")
    for info in graph.inputs:
        _check_shape(info, where, max_elements)
    written: dict[str, Node] = {}
    for node in graph.nodes:
        for out in node.outputs:
            if not out:
                continue
            if out in written or out in known:
                first = written[out].label if out in written else "a graph input or constant"
                raise GraphError(
                    "tensor written twice",
                    value=f"{out!r} by {node.label} and by {first}",
                    limit="each tensor written once (single assignment)",
                    where=where,
                    fix="rename one of the outputs",
                )
            written[out] = node
    for node in graph.nodes:
        for name in node.inputs:
            if name and name not in known and name not in written:
                raise GraphError(
                    "undefined tensor",
                    value=f"{name!r} read by {node.label}",
                    limit="a graph input, a constant or a node output",
                    where=where,
                    fix="add the initializer or the node that produces it",
                )
    for info in graph.outputs:
        if info.name not in written and info.name not in known:
            raise GraphError(
                "graph output",
                value=f"{info.name!r} is never written",
                limit="an output some node produces",
                where=where,
                fix="remove the output or add its producer",
            )
        _check_shape(info, where, max_elements)
    return graph.order()
