r"""A network of pondlib modules wired as an arbitrary directed graph (cycles allowed).

:class:`GraphNetwork` runs what :func:`pondlib.interop.nir.from_nir` imports when the NIR graph is not a
plain chain: skip connections, several edges into one node (their outputs **add**), recurrent weights
and nested cells.

Execution order and cycles (the usual NIR-simulator convention): each strongly connected component of
the graph is cut at the outputs of its *stateful* nodes (neurons, delays): an edge ``u -> v`` inside a
cycle whose source ``u`` is stateful carries ``u``'s output of the **previous** step (zeros before the
first step); every other edge carries the current step. Nodes are evaluated in a topological order of
the remaining (acyclic) edges. For a recurrent cell ``input -> W_in -> LIF -> W_rec -> LIF`` this gives

.. math::  x_{LIF}[t] = W_{in} x[t] + W_{rec} s[t-1] (+ b_{rec})

which is snnTorch's ``RLeaky``/``RSynaptic`` and pondlib's recurrent :class:`~pondlib.nn.LIF`. A cycle
made of stateless nodes only is an algebraic loop and is refused.

An acyclic graph runs node by node over the whole sequence (each module sees (T, *batch, N) at once);
a graph with cycles runs one ``lax.scan`` over time in which every node takes one step. Both give the
same result for acyclic graphs.

Input: (T, *input_shape) or (B, T, *input_shape), flattened to ``N_in = prod(input_shape)`` channels;
output (T, N_out) or (B, T, N_out). ``record`` keys are ``"<node>/<quantity>"``.

Example (a residual sum and a recurrent cell):
    >>> import numpy as np, jax.numpy as jnp
    >>> from pondlib.nn import Linear
    >>> net = GraphNetwork({"a": Linear(2, 2, weight=np.eye(2)), "b": Linear(2, 2, weight=2 * np.eye(2))},
    ...                    [("input", "a"), ("a", "b"), ("a", "output"), ("b", "output")])
    >>> net(jnp.ones((1, 2)))[0].tolist()        # a + b(a) = 1 + 2
    [[3.0, 3.0]]
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from pondlib.errors import GraphError, SimulationError
from pondlib.nn.base import as_input_array, check_batch_shape, check_module, evolve_time_major, scan_steps
from pondlib.validate import check_int, check_type

__all__ = ["GraphNetwork", "INPUT", "OUTPUT"]

INPUT = "input"
OUTPUT = "output"


def _check_modules(modules: Any) -> dict:
    """``modules`` as a dict of node name (a str, not 'input'/'output') -> pondlib.nn module."""
    check_type(modules, "modules", dict, where="GraphNetwork", error=GraphError, fix="pass {node name: module}")
    if not modules:
        raise GraphError("modules", value="an empty dict", limit="at least one module", where="GraphNetwork")
    for name, m in modules.items():
        check_type(name, "node name", str, where="GraphNetwork", error=GraphError, fix="name nodes with strings")
        if name in (INPUT, OUTPUT):
            raise GraphError(
                "node name",
                value=name,
                limit="a name other than 'input' and 'output' (the graph boundary)",
                where="GraphNetwork",
                fix="rename the module",
            )
        check_module(m, f"modules[{name!r}]", "GraphNetwork")
    return dict(modules)


def _check_edges(edges: Any) -> tuple[tuple[str, str], ...]:
    """``edges`` as a tuple of distinct ``(source, target)`` pairs of strings."""
    if isinstance(edges, (str, bytes, dict)) or not hasattr(edges, "__iter__"):
        raise GraphError(
            "edges",
            value=f"a {type(edges).__name__}",
            limit="a sequence of (source, target) pairs",
            where="GraphNetwork",
            fix="pass e.g. [('input', 'a'), ('a', 'output')]",
        )
    out: list[tuple[str, str]] = []
    for i, e in enumerate(edges):
        if not (isinstance(e, (tuple, list)) and len(e) == 2 and all(isinstance(v, str) for v in e)):
            raise GraphError(
                f"edges[{i}]",
                value=repr(e),
                limit="a (source, target) pair of node names (strings)",
                where="GraphNetwork",
                fix="pass e.g. ('input', 'a')",
            )
        if tuple(e) in out:
            raise GraphError(
                "duplicate edge",
                value=tuple(e),
                limit="each edge once (edges into one node add; a repeated edge would double the signal)",
                where="GraphNetwork",
                fix="remove the repeated edge, or scale the weights",
            )
        out.append((e[0], e[1]))
    return tuple(out)


def _check_shape(shape: Any, name: str) -> tuple[int, ...]:
    """A NIR shape as a tuple of ints >= 1."""
    if isinstance(shape, (list, tuple)) or (isinstance(shape, np.ndarray) and shape.ndim > 0):
        items = list(np.asarray(shape, dtype=object).reshape(-1))
    else:
        items = [shape]
    if not items:
        raise GraphError(name, value=shape, limit="at least one dimension", where="GraphNetwork")
    return tuple(check_int(d, name, lo=1, where="GraphNetwork", error=GraphError) for d in items)


def _reachable(edges: tuple[tuple[str, str], ...]) -> set[str]:
    """Nodes reachable from 'input' along the edges."""
    seen, stack = set(), [INPUT]
    while stack:
        a = stack.pop()
        for u, v in edges:
            if u == a and v not in seen:
                seen.add(v)
                stack.append(v)
    return seen


def _is_stateful(module: Any) -> bool:
    return jax.tree_util.tree_leaves(module.init_state(())) != []


def _sccs(names: list[str], succ: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative), in a deterministic order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in names:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on.add(v)
            recurse = False
            for j in range(i, len(succ[v])):
                w = succ[v][j]
                if w not in index:
                    work.append((v, j + 1))
                    work.append((w, 0))
                    recurse = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
    return out


def _check_edge_ends(modules: dict, edges: tuple[tuple[str, str], ...]) -> None:
    """Every edge joins module names, ``'input'`` only as a source and ``'output'`` only as a target."""
    for a, b in edges:
        for end, nm in (("source", a), ("target", b)):
            ok = nm in modules or (nm == INPUT and end == "source") or (nm == OUTPUT and end == "target")
            if not ok:
                raise GraphError(
                    f"edge {end} is not a node",
                    value=(a, b),
                    limit=sorted(modules),
                    where="GraphNetwork",
                    fix="name modules, 'input' or 'output' only",
                )


def _adjacency(names: list[str], edges: tuple[tuple[str, str], ...]) -> tuple[dict, dict]:
    """``(succ, pred)``: successors between modules (boundary edges left out), and the sources of every
    module and of ``'output'``, in edge order."""
    succ: dict[str, list[str]] = {n: [] for n in names}
    pred: dict[str, list[str]] = {n: [] for n in names + [OUTPUT]}
    for a, b in edges:
        if a != INPUT and b != OUTPUT:
            succ[a].append(b)
        pred[b].append(a)
    return succ, pred


def _check_sizes(modules: dict, edges: tuple, pred: dict, input_shape: tuple | None) -> tuple[dict, int]:
    """``(sizes, N_in)``: the flat size of every node's output (``'input'``: ``prod(input_shape)``, else the
    ``size_in`` of a module it feeds, else 0); every edge into a node carries its ``size_in`` (into
    ``'output'``: one common size) and every module has an input."""
    names = list(modules)
    sizes = {n: m.size_out for n, m in modules.items()}
    n_in_guess = [modules[b].size_in for a, b in edges if a == INPUT and b != OUTPUT]
    n_in = int(np.prod(input_shape)) if input_shape is not None else (n_in_guess[0] if n_in_guess else 0)
    sizes[INPUT] = n_in
    for b in names + [OUTPUT]:
        want = modules[b].size_in if b != OUTPUT else None
        for a in pred[b]:
            if want is None:
                want = sizes[a]
            if sizes[a] != want:
                raise GraphError(
                    "edge sizes differ",
                    value=f"{a} gives {sizes[a]}",
                    limit=f"{b} takes {want}",
                    where=f"edge {a} -> {b}",
                    fix="check the shapes of both nodes",
                )
        if b != OUTPUT and not pred[b]:
            raise GraphError(
                "node has no input",
                value=b,
                limit="an edge into every node",
                where="GraphNetwork",
                fix="connect the node or remove it",
            )
    return sizes, n_in


def _check_connected(names: list[str], edges: tuple, pred: dict, n_in: int) -> None:
    """An edge into ``'output'``, at least one input channel, and every module reachable from ``'input'``."""
    if not pred[OUTPUT]:
        raise GraphError("no edge into 'output'", where="GraphNetwork", fix="add an edge (last_node, 'output')")
    if n_in <= 0:
        raise GraphError(
            "no edge from 'input'",
            value=0,
            limit="at least one input channel",
            where="GraphNetwork",
            fix="add an edge ('input', first_node), or pass input_shape",
        )
    unreachable = sorted(set(names) - _reachable(edges))
    if unreachable:
        raise GraphError(
            "nodes unreachable from 'input'",
            value=unreachable,
            limit="a path from 'input' to every node",
            where="GraphNetwork",
            fix="connect the nodes to the input or remove them",
        )


def _delayed_edges(modules: dict, succ: dict, edges: tuple) -> set[tuple[str, str]]:
    """The edges that carry the previous step: ``u -> v`` inside a cycle (a strongly connected component
    of several nodes, or a self-loop) whose source ``u`` is stateful (module docstring)."""
    names = list(modules)
    stateful = {n: _is_stateful(m) for n, m in modules.items()}
    comp_of: dict[str, int] = {}
    for ci, comp in enumerate(_sccs(names, succ)):
        for n in comp:
            comp_of[n] = ci
    cyclic = {ci for ci in set(comp_of.values()) if sum(1 for n in comp_of if comp_of[n] == ci) > 1}
    cyclic |= {comp_of[a] for a, b in edges if a == b}
    return {
        (a, b)
        for a, b in edges
        if a not in (INPUT,) and b != OUTPUT and comp_of[a] == comp_of[b] and comp_of[a] in cyclic and stateful[a]
    }


def _evaluation_order(names: list[str], succ: dict, edges: tuple, delayed: set) -> list[str]:
    """A topological order of the modules on the edges that are not delayed (Kahn, stable in insertion
    order); a GraphError for an algebraic loop (a cycle without a stateful node)."""
    indeg = {n: 0 for n in names}
    for a, b in edges:
        if a != INPUT and b != OUTPUT and (a, b) not in delayed:
            indeg[b] += 1
    ready = [n for n in names if indeg[n] == 0]
    order: list[str] = []
    while ready:
        n = ready.pop(0)
        order.append(n)
        for b in succ[n]:
            if (n, b) not in delayed:
                indeg[b] -= 1
                if indeg[b] == 0:
                    ready.append(b)
    if len(order) != len(names):
        loop = sorted(set(names) - set(order))
        raise GraphError(
            "algebraic loop: a cycle without a stateful node",
            value=loop,
            limit="a neuron or delay on every cycle",
            where="GraphNetwork",
            fix="insert a stateful node (neuron, Delay) into the cycle",
        )
    return order


class GraphNetwork(eqx.Module):
    """Modules wired by named edges; ``"input"`` and ``"output"`` are the graph boundary.

    Args:
        modules: node name -> pondlib module (any :class:`~pondlib.nn.base.Module`).
        edges: ``(source, target)`` pairs of node names (``"input"`` only as a source, ``"output"``
            only as a target). Edges into one node add.
        input_shape: the NIR shape of the input (default ``(N_in,)`` from the modules reading it).
        output_shape: the NIR shape of the output (default ``(N_out,)``).

    Raises:
        GraphError: ``modules`` not a non-empty dict of str -> pondlib.nn module (``"input"`` and
            ``"output"`` are reserved), edges that are not pairs of node names, a repeated edge, unknown
            node names, size mismatches (naming both ends and both sizes), nodes unreachable from the
            input, shapes that are not positive whole numbers, or a cycle without a stateful node.
    """

    modules: dict
    edges: tuple = eqx.field(static=True)
    order: tuple = eqx.field(static=True)  # evaluation order
    sources: tuple = eqx.field(static=True)  # per node in order: ((source, delayed), ...)
    out_sources: tuple = eqx.field(static=True)
    delayed_nodes: tuple = eqx.field(static=True)  # sources of delayed edges
    recurrent: bool = eqx.field(static=True)
    input_shape: tuple = eqx.field(static=True)
    output_shape: tuple = eqx.field(static=True)

    def __init__(self, modules: dict, edges: Any, *, input_shape: Any = None, output_shape: Any = None) -> None:
        modules = _check_modules(modules)
        edges = _check_edges(edges)
        _check_edge_ends(modules, edges)
        input_shape = None if input_shape is None else _check_shape(input_shape, "input_shape")
        output_shape = None if output_shape is None else _check_shape(output_shape, "output_shape")
        names = list(modules)
        succ, pred = _adjacency(names, edges)
        sizes, n_in = _check_sizes(modules, edges, pred, input_shape)
        _check_connected(names, edges, pred, n_in)
        delayed = _delayed_edges(modules, succ, edges)
        order = _evaluation_order(names, succ, edges, delayed)
        self.modules = modules
        self.edges = edges
        self.order = tuple(order)
        self.sources = tuple(tuple((a, (a, n) in delayed) for a in pred[n]) for n in order)
        self.out_sources = tuple(pred[OUTPUT])
        self.delayed_nodes = tuple(sorted({a for a, _ in delayed}))
        self.recurrent = bool(delayed)
        self.input_shape = input_shape if input_shape is not None else (n_in,)
        n_out = sizes[pred[OUTPUT][0]]
        self.output_shape = output_shape if output_shape is not None else (n_out,)
        if int(np.prod(self.output_shape)) != n_out:
            raise GraphError(
                "output shape",
                value=self.output_shape,
                limit=f"{n_out} elements",
                where="GraphNetwork",
                fix="pass the shape of what reaches 'output'",
            )

    # -- protocol -------------------------------------------------------------------------------
    @property
    def size_in(self) -> int:
        """Flat input channels ``prod(input_shape)``."""
        return int(np.prod(self.input_shape))

    @property
    def size_out(self) -> int:
        """Flat output channels ``prod(output_shape)``."""
        return int(np.prod(self.output_shape))

    def init_state(self, batch_shape: tuple[int, ...] = ()) -> dict:
        """``{"modules": {node: state}, "delayed": {node: previous output}}``, all zeros."""
        batch_shape = check_batch_shape(batch_shape, "GraphNetwork")
        return {
            "modules": {n: m.init_state(batch_shape) for n, m in self.modules.items()},
            "delayed": {
                n: jnp.zeros(batch_shape + (self.modules[n].size_out,), jnp.float32) for n in self.delayed_nodes
            },
        }

    @staticmethod
    def _sum(values: list[jax.Array]) -> jax.Array:
        out = values[0]
        for v in values[1:]:
            out = out + v
        return out

    def _sweep(self, x, states, prev, record, step: bool):
        vals = {INPUT: x}
        new_states, rec = {}, {}
        for n, srcs in zip(self.order, self.sources):
            inp = self._sum([prev[a] if d else vals[a] for a, d in srcs])
            if step:
                y, s, r = self.modules[n].evolve_tm(inp[None], states[n], record)
                y, r = y[0], {k: v[0] for k, v in r.items()}
            else:
                y, s, r = self.modules[n].evolve_tm(inp, states[n], record)
            vals[n] = y
            new_states[n] = s
            rec.update({f"{n}/{k}": v for k, v in r.items()})
        out = self._sum([vals[a] for a in self.out_sources])
        return out, new_states, {n: vals[n] for n in self.delayed_nodes}, rec

    def evolve_tm(self, x: jax.Array, state: dict, record: bool):
        """Time-major evolution ``x`` (T, *batch, N_in) -> (T, *batch, N_out)."""
        if not isinstance(state, dict) or set(state) != {"modules", "delayed"}:
            raise TypeError("expected the state returned by GraphNetwork.init_state")
        states = {n: state["modules"][n] for n in self.modules}
        if not self.recurrent:
            out, states, _, rec = self._sweep(x, states, {}, record, step=False)
            return out, {"modules": states, "delayed": {}}, rec

        def body(carry, xt):
            st, prev = carry
            out, st, prev, rec = self._sweep(xt, st, prev, record, step=True)
            return (st, prev), (out, rec)

        (states, prev), (out, rec) = scan_steps(body, (states, dict(state["delayed"])), x)
        return out, {"modules": states, "delayed": prev}, rec

    def flatten_input(self, x: Any) -> Any:
        """(T, *input_shape) or (B, T, *input_shape) -> (T, N_in) or (B, T, N_in); flat input passes."""
        x = as_input_array(x, "GraphNetwork")
        k = len(self.input_shape)
        if k > 1 and x.ndim in (2, 3) and x.shape[-1] == self.size_in:
            return x  # already flat
        if k > 1:
            if x.ndim not in (k + 1, k + 2) or tuple(x.shape[-k:]) != self.input_shape:
                raise SimulationError(
                    "input shape",
                    value=tuple(x.shape),
                    limit=f"(T, {self.input_shape}) or (B, T, {self.input_shape})",
                    where="GraphNetwork",
                    fix="pass the network's input shape",
                )
            x = x.reshape(tuple(x.shape[:-k]) + (self.size_in,))
        return x

    def __call__(self, x: Any, state: dict | None = None, record: bool = False):
        """``(output, state, record)`` for (T, *input_shape) or (B, T, *input_shape) input."""
        return evolve_time_major(self, self.flatten_input(x), state, record)

    evolve = __call__

    # -- graph ----------------------------------------------------------------------------------
    def as_graph(self, name: str | None = None):
        """The node graphs (``module.as_graph``) connected along the edges (edges into one node add:
        the node is written by every source), inside one :class:`~pondlib.graph.GraphHolder`."""
        from pondlib.graph import GraphHolder, GraphNode, connect_modules

        name = name or "GraphNetwork"
        graphs = {n: m.as_graph(f"{name}/{n}") for n, m in self.modules.items()}
        in_nodes = [GraphNode() for _ in range(self.size_in)]
        boundary = GraphHolder(in_nodes, in_nodes, f"{name}/input", None)
        graphs[INPUT] = boundary
        for n in self.order:
            for a, _ in self.sources[self.order.index(n)]:
                connect_modules(graphs[a], graphs[n])
        outs = list(graphs[self.out_sources[0]].output_nodes)
        for a in self.out_sources[1:]:
            holder = GraphHolder(outs, outs, f"{name}/output", None)
            connect_modules(graphs[a], holder)
            outs = list(graphs[a].output_nodes)
        return GraphHolder(list(boundary.output_nodes), outs, name, self)
