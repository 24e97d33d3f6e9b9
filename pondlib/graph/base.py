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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.errors import GraphError
from pondlib.validate import as_array, as_int_array, check_int, check_type

__all__ = [
    "GraphNode",
    "GraphModuleBase",
    "GraphModule",
    "GraphHolder",
    "as_GraphHolder",
    "connect_modules",
    "MAX_NODES",
]

_node_ids = itertools.count()
#: Most nodes :meth:`GraphModuleBase._factory` creates per side (2^24, the largest pondlib.nn layer).
MAX_NODES = 2**24


class GraphNode:
    """One signal channel joining modules.

    Attributes:
        source_modules: modules that write this signal (more than one means their outputs add).
        sink_modules: modules that read this signal.

    ``GraphNode()`` takes no arguments; :meth:`add_source` and :meth:`add_sink` take graph modules only
    (GraphError otherwise).
    """

    __slots__ = ("source_modules", "sink_modules", "_id")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise GraphError(
                "GraphNode arguments",
                value=f"{len(args)} positional and {sorted(kwargs)} keyword argument(s)",
                limit="none",
                where="GraphNode",
                fix="create nodes with GraphNode(); modules register themselves with their nodes",
            )
        self.source_modules: list[GraphModuleBase] = []
        self.sink_modules: list[GraphModuleBase] = []
        self._id = next(_node_ids)

    def add_source(self, module: GraphModuleBase) -> None:
        """Register ``module`` as writing to this node (once); GraphError for anything but a graph module."""
        _check_module(module, "add_source")
        if not any(m is module for m in self.source_modules):
            self.source_modules.append(module)

    def add_sink(self, module: GraphModuleBase) -> None:
        """Register ``module`` as reading from this node (once); GraphError for anything but a graph module."""
        _check_module(module, "add_sink")
        if not any(m is module for m in self.sink_modules):
            self.sink_modules.append(module)

    def remove_source(self, module: GraphModuleBase) -> None:
        """Forget that ``module`` writes to this node."""
        self.source_modules = [m for m in self.source_modules if m is not module]

    def remove_sink(self, module: GraphModuleBase) -> None:
        """Forget that ``module`` reads from this node."""
        self.sink_modules = [m for m in self.sink_modules if m is not module]

    def __repr__(self) -> str:
        src = ", ".join(m.name for m in self.source_modules)
        snk = ", ".join(m.name for m in self.sink_modules)
        return f"GraphNode(#{self._id}, from=[{src}], to=[{snk}])"


def _check_module(module: Any, where: str) -> None:
    if not isinstance(module, GraphModuleBase):
        raise GraphError(
            "module",
            value=f"a {type(module).__name__}",
            limit="a graph module",
            where=f"GraphNode.{where}",
            fix="register graph modules (LinearWeights, LIFNeurons, ...) only",
        )


@dataclass(eq=False, repr=False)
class GraphModuleBase:
    """Base of every graph module: ordered input and output nodes, a name, and optionally the
    computational module (a ``pondlib.nn`` module) it was exported from.

    Raises:
        GraphError: a name that is not a str; node lists that are not lists or tuples of
            :class:`GraphNode`; the same node twice in one list (holders included: merging such a node
            in :func:`connect_modules` would be ambiguous). A node may be both an input and an output (a
            module that feeds itself, e.g. after ``connect_modules(m, m)``).
    """

    input_nodes: list[GraphNode]
    output_nodes: list[GraphNode]
    name: str
    computational_module: Any = field(default=None)

    def __post_init__(self) -> None:
        self.name = check_type(self.name, "module name", str, where=type(self).__name__, error=GraphError)
        self.input_nodes = _node_list(self.input_nodes, "input_nodes", self.name)
        self.output_nodes = _node_list(self.output_nodes, "output_nodes", self.name)
        for what, nodes in (("input_nodes", self.input_nodes), ("output_nodes", self.output_nodes)):
            seen: dict[int, int] = {}
            for i, n in enumerate(nodes):
                if id(n) in seen:
                    raise GraphError(
                        f"duplicate node in {what}",
                        value=f"positions {seen[id(n)]} and {i}",
                        limit="distinct nodes (one per channel)",
                        where=self.name,
                        fix="give every channel its own GraphNode",
                    )
                seen[id(n)] = i

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
    def _factory(
        cls,
        size_in: int,
        size_out: int,
        name: str | None = None,
        computational_module: Any = None,
        *args: Any,
        **kwargs: Any,
    ):
        """Build a module with ``size_in`` fresh input nodes and ``size_out`` fresh output nodes.

        Extra positional and keyword arguments go to the subclass's own fields. Sizes are whole numbers
        in ``[0, MAX_NODES]`` (GraphError otherwise; an integral float is accepted).
        """
        where = name if isinstance(name, str) else cls.__name__
        size_in = check_int(size_in, "graph module size_in", lo=0, hi=MAX_NODES, where=where, error=GraphError)
        size_out = check_int(size_out, "graph module size_out", lo=0, hi=MAX_NODES, where=where, error=GraphError)
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
    source of its output nodes. Subclasses add typed parameters (see :mod:`pondlib.graph.modules`) and
    check them in :meth:`_check_fields`, which runs before the module registers with its nodes (so a
    module that fails its checks leaves the graph unchanged)."""

    def _check_fields(self) -> None:
        """Check (and normalise) the subclass's fields; raise GraphError. Nothing to check here."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_fields()  # before registering: a module that fails its checks leaves no trace in the graph
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
    unchanged).

    Raises:
        GraphError: ``g`` is not a graph module (a ``pondlib.nn`` module, a node, a class, ``None``...).

    Example:
        >>> as_GraphHolder("net")
        Traceback (most recent call last):
        ...
        pondlib.errors.GraphError: as_GraphHolder input: got str, expected a graph module. Fix: ...
    """
    if isinstance(g, GraphHolder):
        return g
    if not isinstance(g, GraphModuleBase):
        raise GraphError(
            "as_GraphHolder input",
            value=type(g).__name__,
            limit="a graph module",
            fix="call .as_graph() on a pondlib.nn module first",
        )
    return GraphHolder(list(g.input_nodes), list(g.output_nodes), f"{g.name}_graph", None)


def _node_list(nodes: Any, what: str, where: str) -> list[GraphNode]:
    """``nodes`` as a list of :class:`GraphNode` (a list or tuple of them)."""
    if not isinstance(nodes, (list, tuple)):
        raise GraphError(
            what,
            value=f"a {type(nodes).__name__}",
            limit="a list of GraphNode",
            where=where,
            fix="pass a list of GraphNode objects",
        )
    for i, n in enumerate(nodes):
        if not isinstance(n, GraphNode):
            raise GraphError(
                f"{what}[{i}]",
                value=f"a {type(n).__name__}",
                limit="a GraphNode",
                where=where,
                fix="pass a list of GraphNode objects",
            )
    return list(nodes)


def _select(nodes: list[GraphNode], indices: Any, what: str, where: str) -> list[GraphNode]:
    """The nodes at ``indices``: a non-empty 1-d sequence of distinct whole numbers in ``0..len - 1``
    (``None``: all nodes). Python-style negative indices and booleans are refused, not interpreted."""
    if indices is None:
        return list(nodes)
    raw = as_array(indices, what, where=where, error=GraphError, ndim=1, fix="pass a list of node indices")
    if raw.dtype.kind == "b":
        raise GraphError(
            what,
            value="booleans",
            limit="node indices (integers)",
            where=where,
            fix="pass the indices of the selected nodes, e.g. np.flatnonzero(mask)",
        )
    arr = as_int_array(raw, what, where=where, error=GraphError, fix="pass whole-number node indices")
    for i in arr.tolist():
        if not 0 <= i < len(nodes):
            raise GraphError(
                "node index out of range",
                value=int(i),
                limit=f"0..{len(nodes) - 1}",
                where=where,
                fix="pass indices within the module's size (negative indices are not supported)",
            )
    uniq, counts = np.unique(arr, return_counts=True)
    if np.any(counts > 1):
        raise GraphError(
            f"duplicate node index in {what}",
            value=int(uniq[counts > 1][0]),
            limit="distinct indices",
            where=where,
            fix="select each node once (fan-out goes through a weight layer)",
        )
    return [nodes[i] for i in arr.tolist()]


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
        GraphError: when ``source`` or ``dest`` is not a graph module; when an index list is not a
            non-empty 1-d sequence of distinct whole numbers within the module's size (an integral float
            such as ``2.0`` counts as 2; fractional,
            negative, boolean, duplicate or out-of-range indices are refused, never rounded or wrapped);
            when a node would be merged twice (a selected source node is also a merged destination
            node); when the numbers of selected nodes differ (the message gives both sizes). Every check
            runs before anything is connected: on an error both graphs are unchanged.

    Example:
        >>> a, b = GraphModule._factory(1, 4, "a"), GraphModule._factory(3, 2, "b")
        >>> connect_modules(a, b)
        Traceback (most recent call last):
        ...
        pondlib.errors.GraphError: connect a -> b: output size of the source does not match input size of the
        destination: got 4, expected 3. Fix: ...
    """
    for what, g in (("source", source), ("dest", dest)):
        if not isinstance(g, GraphModuleBase):
            raise GraphError(
                f"connect_modules {what}",
                value=f"a {type(g).__name__}",
                limit="a graph module or holder",
                fix="call .as_graph() on a pondlib.nn module first",
            )
    src = _select(source.output_nodes, source_indices, "source_indices", f"{source.name} (source)")
    dst = _select(dest.input_nodes, dest_indices, "dest_indices", f"{dest.name} (destination)")
    if len(src) != len(dst):
        raise GraphError(
            "output size of the source does not match input size of the destination",
            value=len(src),
            limit=len(dst),
            where=f"connect {source.name} -> {dest.name}",
            fix="select matching source_indices/dest_indices or change one module's size",
        )
    # one pass: map each destination node to its source node, then rewrite every affected module once
    mapping = {id(d): s for s, d in zip(src, dst) if s is not d}
    chained = [i for i, s in enumerate(src) if id(s) in mapping and s is not dst[i]]
    if chained:
        raise GraphError(
            "a node would be merged twice",
            value=f"selected source node {chained[0]} is also a destination node being replaced",
            limit="source and destination nodes that do not overlap",
            where=f"connect {source.name} -> {dest.name}",
            fix="connect the modules in two steps, or select other indices",
        )
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
    return GraphHolder(list(source.input_nodes), list(dest.output_nodes), f"{source.name}--{dest.name}", None)
