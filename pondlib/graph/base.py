"""Graphs as plain data: nodes, modules, holders, and how to connect them.

A graph is made of :class:`GraphNode` objects (one per signal channel) and modules that read from
input nodes and write to output nodes. A node knows the modules that write to it (``source_modules``)
and the modules that read from it (``sink_modules``); edges are implied by shared nodes. A
:class:`GraphHolder` wraps a sub-graph: its input and output nodes are the boundary nodes of the
sub-graph, and it registers itself with no node, so traversals pass through it to the real modules.

Graph modules hold numpy copies of parameters: changing a graph never changes the network it came from.

Example:
    >>> a = GraphModule._factory(2, 3, "a")
    >>> b = GraphModule._factory(3, 1, "b")
    >>> _ = connect_modules(a, b)
    >>> a.output_nodes[0].sink_modules[0].name
    'b'
    >>> g = as_GraphHolder(a)
    >>> g.size_in, g.size_out
    (2, 3)
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Sequence

from pondlib.errors import GraphError

__all__ = ["GraphNode", "GraphModuleBase", "GraphModule", "GraphHolder", "as_GraphHolder",
           "connect_modules"]

_node_ids = itertools.count()


class GraphNode:
    """One signal channel joining modules.

    Attributes:
        source_modules: modules that write this signal (more than one means their outputs add).
        sink_modules: modules that read this signal.
    """

    __slots__ = ("source_modules", "sink_modules", "_id")

    def __init__(self) -> None:
        self.source_modules: list[GraphModuleBase] = []
        self.sink_modules: list[GraphModuleBase] = []
        self._id = next(_node_ids)

    def add_source(self, module: "GraphModuleBase") -> None:
        """Register ``module`` as writing to this node (once)."""
        if not any(m is module for m in self.source_modules):
            self.source_modules.append(module)

    def add_sink(self, module: "GraphModuleBase") -> None:
        """Register ``module`` as reading from this node (once)."""
        if not any(m is module for m in self.sink_modules):
            self.sink_modules.append(module)

    def remove_source(self, module: "GraphModuleBase") -> None:
        """Forget that ``module`` writes to this node."""
        self.source_modules = [m for m in self.source_modules if m is not module]

    def remove_sink(self, module: "GraphModuleBase") -> None:
        """Forget that ``module`` reads from this node."""
        self.sink_modules = [m for m in self.sink_modules if m is not module]

    def __repr__(self) -> str:
        src = ", ".join(m.name for m in self.source_modules)
        snk = ", ".join(m.name for m in self.sink_modules)
        return f"GraphNode(#{self._id}, from=[{src}], to=[{snk}])"


@dataclass(eq=False, repr=False)
class GraphModuleBase:
    """Base of every graph module: ordered input and output nodes, a name, and optionally the
    computational module (a ``pondlib.nn`` module) it was exported from."""

    input_nodes: list[GraphNode]
    output_nodes: list[GraphNode]
    name: str
    computational_module: Any = field(default=None)

    @property
    def size_in(self) -> int:
        """Number of input channels."""
        return len(self.input_nodes)

    @property
    def size_out(self) -> int:
        """Number of output channels."""
        return len(self.output_nodes)

    def __repr__(self) -> str:
        return f"{type(self).__name__} '{self.name}' with {self.size_in} input nodes -> {self.size_out} output nodes"

    @classmethod
    def _factory(cls, size_in: int, size_out: int, name: str | None = None,
                 computational_module: Any = None, *args: Any, **kwargs: Any):
        """Build a module with ``size_in`` fresh input nodes and ``size_out`` fresh output nodes.

        Extra positional and keyword arguments go to the subclass's own fields.
        """
        for what, n in (("size_in", size_in), ("size_out", size_out)):
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                raise GraphError(f"graph module {what}", value=n, limit="a non-negative integer",
                                 where=name or cls.__name__, fix=f"pass {what} as an int")
        return cls(
            [GraphNode() for _ in range(size_in)],
            [GraphNode() for _ in range(size_out)],
            name if name is not None else f"{cls.__name__}_{next(_node_ids)}",
            computational_module,
            *args,
            **kwargs,
        )


@dataclass(eq=False, repr=False)
class GraphModule(GraphModuleBase):
    """A computing module in a graph: it registers itself as the sink of its input nodes and the
    source of its output nodes. Subclasses add typed parameters (see :mod:`pondlib.graph.modules`)."""

    def __post_init__(self) -> None:
        for n in self.input_nodes:
            n.add_sink(self)
        for n in self.output_nodes:
            n.add_source(self)


@dataclass(eq=False, repr=False)
class GraphHolder(GraphModuleBase):
    """A sub-graph seen from outside: boundary input and output nodes, no computation of its own."""

    def __str__(self) -> str:
        from pondlib.graph.utils import graph_to_str

        return graph_to_str(self)


def as_GraphHolder(g: GraphModuleBase) -> GraphHolder:
    """Wrap a graph module in a :class:`GraphHolder` sharing its boundary nodes (a holder is returned
    unchanged)."""
    if isinstance(g, GraphHolder):
        return g
    if not isinstance(g, GraphModuleBase):
        raise GraphError("as_GraphHolder input", value=type(g).__name__, limit="a graph module",
                         fix="call .as_graph() on a pondlib.nn module first")
    return GraphHolder(list(g.input_nodes), list(g.output_nodes), f"{g.name}_graph", None)


def _select(nodes: list[GraphNode], indices: Sequence[int] | None, where: str) -> list[GraphNode]:
    if indices is None:
        return list(nodes)
    out = []
    for i in indices:
        if not -len(nodes) <= int(i) < len(nodes):
            raise GraphError("node index out of range", value=int(i), limit=f"0..{len(nodes) - 1}",
                             where=where, fix="pass indices within the module's size")
        out.append(nodes[int(i)])
    return out


def connect_modules(
    source: GraphModuleBase,
    dest: GraphModuleBase,
    source_indices: Sequence[int] | None = None,
    dest_indices: Sequence[int] | None = None,
) -> GraphHolder:
    """Connect output nodes of ``source`` to input nodes of ``dest`` (in place) and return a
    :class:`GraphHolder` spanning both.

    The ``i``-th selected output node of ``source`` is merged with the ``i``-th selected input node of
    ``dest``: every module that read the destination node now reads the source node.

    Args:
        source: module or holder whose output nodes are connected.
        dest: module or holder whose input nodes are connected.
        source_indices: which output nodes of ``source`` (default: all).
        dest_indices: which input nodes of ``dest`` (default: all).

    Raises:
        GraphError: when the numbers of selected nodes differ (the message gives both sizes).

    Example:
        >>> a, b = GraphModule._factory(1, 4, "a"), GraphModule._factory(3, 2, "b")
        >>> connect_modules(a, b)
        Traceback (most recent call last):
        ...
        pondlib.errors.GraphError: connect a -> b: output size of the source does not match input size of the destination: got 4, expected 3. Fix: ...
    """
    src = _select(source.output_nodes, source_indices, f"{source.name} (source)")
    dst = _select(dest.input_nodes, dest_indices, f"{dest.name} (destination)")
    if len(src) != len(dst):
        raise GraphError(
            "output size of the source does not match input size of the destination",
            value=len(src), limit=len(dst), where=f"connect {source.name} -> {dest.name}",
            fix="select matching source_indices/dest_indices or change one module's size")
    # one pass: map each destination node to its source node, then rewrite every affected module once
    mapping = {id(d): s for s, d in zip(src, dst) if s is not d}
    if mapping:
        affected: dict[int, GraphModuleBase] = {}
        for s_node, d_node in zip(src, dst):
            if s_node is d_node:
                continue
            # readers of the destination node read the source node instead; writers of it (e.g. an
            # alias into a residual's input) now write to the source node
            for m in d_node.sink_modules:
                s_node.add_sink(m)
                affected[id(m)] = m
            for m in d_node.source_modules:
                s_node.add_source(m)
                affected[id(m)] = m
            d_node.sink_modules, d_node.source_modules = [], []
        affected[id(dest)] = dest
        for m in affected.values():
            m.input_nodes = [mapping.get(id(n), n) for n in m.input_nodes]
            m.output_nodes = [mapping.get(id(n), n) for n in m.output_nodes]
    return GraphHolder(list(source.input_nodes), list(dest.output_nodes),
                       f"{source.name}--{dest.name}", None)
