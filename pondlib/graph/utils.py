"""Deterministic traversal of graphs, and a readable printout.

All functions take any graph module or holder (anything else is a GraphError) and start from its input
nodes. Order is deterministic: modules appear in the order a breadth-first walk from the input nodes
meets them, following each node's sinks in the order they were connected.

Example:
    >>> from pondlib.graph.base import GraphModule, connect_modules
    >>> a, b = GraphModule._factory(2, 2, "a"), GraphModule._factory(2, 2, "b")
    >>> g = connect_modules(a, b)
    >>> [m.name for m in topological_order(g)]
    ['a', 'b']
    >>> print(graph_to_str(g))
    GraphHolder 'a--b' 2 -> 2
      a: GraphModule 2 -> 2 ; inputs from [graph input]
      b: GraphModule 2 -> 2 ; inputs from [a]
"""

from __future__ import annotations

from typing import TypeVar

from pondlib.errors import GraphError
from pondlib.graph.base import GraphHolder, GraphModuleBase, GraphNode

__all__ = [
    "find_modules",
    "modules_of_class",
    "find_recurrent_modules",
    "topological_order",
    "source_modules_of",
    "sink_modules_of",
    "graph_to_str",
]

T = TypeVar("T")


def _check_graph(graph: object, where: str) -> None:
    """GraphError unless ``graph`` is a graph module or holder (every traversal starts from one)."""
    if not isinstance(graph, GraphModuleBase):
        raise GraphError(
            "graph",
            value=f"a {type(graph).__name__}",
            limit="a graph module or holder",
            where=where,
            fix="call .as_graph() on a pondlib.nn module first",
        )


def find_modules(graph: GraphModuleBase) -> tuple[list[GraphNode], list[GraphModuleBase]]:
    """Every node and every (non-holder) module reachable from the graph's input nodes, following
    edges forwards and backwards, in discovery order."""
    _check_graph(graph, "find_modules")
    nodes: list[GraphNode] = []
    modules: list[GraphModuleBase] = []
    seen_nodes: set[int] = set()
    seen_modules: set[int] = set()
    frontier: list[GraphNode] = list(graph.input_nodes) + list(graph.output_nodes)
    while frontier:
        next_frontier: list[GraphNode] = []
        for node in frontier:
            if id(node) in seen_nodes:
                continue
            seen_nodes.add(id(node))
            nodes.append(node)
            for m in list(node.sink_modules) + list(node.source_modules):
                if id(m) in seen_modules or isinstance(m, GraphHolder):
                    continue
                seen_modules.add(id(m))
                modules.append(m)
                next_frontier.extend(m.input_nodes)
                next_frontier.extend(m.output_nodes)
        frontier = next_frontier
    return nodes, modules


def modules_of_class(graph: GraphModuleBase, cls: type[T]) -> list[T]:
    """Every module of the graph that is an instance of ``cls``, in discovery order."""
    _check_graph(graph, "modules_of_class")
    if not (isinstance(cls, type) or (isinstance(cls, tuple) and all(isinstance(c, type) for c in cls))):
        raise GraphError("cls", value=f"a {type(cls).__name__}", limit="a class", where="modules_of_class")
    return [m for m in find_modules(graph)[1] if isinstance(m, cls)]


def source_modules_of(module: GraphModuleBase) -> list[GraphModuleBase]:
    """Modules writing to any input node of ``module`` (deduplicated, in node order)."""
    _check_graph(module, "source_modules_of")
    out: list[GraphModuleBase] = []
    for n in module.input_nodes:
        for m in n.source_modules:
            if not any(m is o for o in out):
                out.append(m)
    return out


def sink_modules_of(module: GraphModuleBase) -> list[GraphModuleBase]:
    """Modules reading any output node of ``module`` (deduplicated, in node order)."""
    _check_graph(module, "sink_modules_of")
    out: list[GraphModuleBase] = []
    for n in module.output_nodes:
        for m in n.sink_modules:
            if not any(m is o for o in out):
                out.append(m)
    return out


def _order(graph: GraphModuleBase) -> tuple[list[GraphModuleBase], list[tuple[GraphModuleBase, GraphModuleBase]]]:
    """Depth-first post-order from the input nodes; returns (reverse post-order, back edges)."""
    _, modules = find_modules(graph)
    state: dict[int, int] = {}  # 1 = on stack, 2 = done
    post: list[GraphModuleBase] = []
    back: list[tuple[GraphModuleBase, GraphModuleBase]] = []
    starts = []
    for n in graph.input_nodes:
        starts.extend(n.sink_modules)
    starts.extend(modules)  # modules not reachable forwards from the inputs (e.g. bias-only sources)

    for start in starts:
        if id(start) in state or isinstance(start, GraphHolder):
            continue
        stack = [(start, iter(sink_modules_of(start)[::-1]))]
        state[id(start)] = 1
        while stack:
            m, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                state[id(m)] = 2
                post.append(m)
                continue
            if isinstance(nxt, GraphHolder):
                continue
            s = state.get(id(nxt))
            if s is None:
                state[id(nxt)] = 1
                stack.append((nxt, iter(sink_modules_of(nxt)[::-1])))
            elif s == 1:
                back.append((m, nxt))
    return post[::-1], back


def topological_order(graph: GraphModuleBase) -> list[GraphModuleBase]:
    """Modules in an order where each comes after its sources, recurrent (back) edges ignored."""
    _check_graph(graph, "topological_order")
    return _order(graph)[0]


def find_recurrent_modules(graph: GraphModuleBase) -> list[GraphModuleBase]:
    """Modules that lie on a cycle of the graph (e.g. a LIF layer and its recurrent weights)."""
    _check_graph(graph, "find_recurrent_modules")
    order, back = _order(graph)
    if not back:
        return []
    on_cycle: set[int] = set()
    # a module is on a cycle if it can reach the source of a back edge and be reached from its target
    for src, dst in back:
        fwd = _reach(dst, forward=True)
        bwd = _reach(src, forward=False)
        on_cycle |= fwd & bwd
    return [m for m in order if id(m) in on_cycle]


def _reach(start: GraphModuleBase, forward: bool) -> set[int]:
    seen = {id(start)}
    stack = [start]
    while stack:
        m = stack.pop()
        for nxt in sink_modules_of(m) if forward else source_modules_of(m):
            if id(nxt) not in seen and not isinstance(nxt, GraphHolder):
                seen.add(id(nxt))
                stack.append(nxt)
    return seen


def graph_to_str(graph: GraphModuleBase) -> str:
    """A readable, deterministic printout: one line per module in topological order, with sizes and
    the modules feeding it."""
    _check_graph(graph, "graph_to_str")
    lines = [f"{type(graph).__name__} '{graph.name}' {graph.size_in} -> {graph.size_out}"]
    inputs = {id(n) for n in graph.input_nodes}
    for m in topological_order(graph):
        srcs = [s.name for s in source_modules_of(m)]
        if any(id(n) in inputs for n in m.input_nodes):
            srcs.insert(0, "graph input")
        lines.append(f"  {m.name}: {type(m).__name__} {m.size_in} -> {m.size_out} ; inputs from [{', '.join(srcs)}]")
    return "\n".join(lines)
