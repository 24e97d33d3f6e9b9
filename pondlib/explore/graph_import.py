r"""A :class:`~pondlib.explore.Workload` from a ``pondlib.nn`` network or a ``pondlib.graph`` graph.

:func:`workload_from_graph` walks the network in execution order and emits one :class:`Layer` per
operator, as STEMS describes a workload:

=================================  =================================================================
module                             layer
=================================  =================================================================
``Linear``                         ``linear`` (``K = n_out``, ``C = n_in``)
``Conv2d`` / ``Conv1d``            ``conv`` (sizes from the weight and the static shapes; a 1-d
                                   convolution is one row, ``OY = 1``)
``SumPool2d`` / ``AvgPool2d``      ``pool``
``Residual``                       the block, then an ``add`` of its output and its input
``GraphNetwork`` (acyclic)         its nodes in order; several edges into a node become an ``add``
neurons (``LIF`` and LIF-like      fused into the layer before them (STEMS's conv + PLIF layer) when
twins, ``CubaLIF``, ``NIRLIF``,    that layer feeds only them and has as many outputs as they have
``IF``, ``LI``, ``Integrator``)     neurons, else a ``neuron`` layer of their own; they make the layer
                                   stateful with one state word per membrane and per synaptic current
                                   (``LIF``: ``1 + k``; NIR neurons: ``1``, ``2`` with ``tau_syn``) and
                                   add their recurrent weights; non-spiking ones (``LI``, ...) emit
                                   ``state_bits``-bit values
``Threshold``                      the layer before it emits spikes (stateless)
``Flatten``, ``Scale``             nothing (a view; a scale folds into the weights)
``LinearWeights``, ``LIFNeurons``,  the same for a ``pondlib.graph`` graph (``as_graph()``); an alias
``AliasConnection`` (graph)        (residual) becomes an ``add``
=================================  =================================================================

A layer's output is ``state_bits`` wide (a partial sum) until a spiking neuron makes it ``spike_bits``
wide. Blocks: by default a new block starts at each top-level child of the network (a ``Sequential``
item, a ``GraphNetwork`` node) that holds weights, once the current block already holds weights; pass
``blocks`` (one block id per emitted layer) to cut elsewhere.

Example:
    >>> import jax
    >>> from pondlib import nn
    >>> k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    >>> net = nn.Sequential(nn.Linear(16, 32, key=k1), nn.LIF(32), nn.Linear(32, 8, key=k2), nn.LIF(8))
    >>> w = workload_from_graph(net, time_steps=10)
    >>> [(x.name, x.kind, x.stateful, x.state_words, x.block) for x in w.layers]
    [('0_Linear', 'linear', True, 2, 0), ('2_Linear', 'linear', True, 2, 1)]
    >>> w.total_weight_bits, w.total_state_bits     # (16*32 + 32*8) * 4, (32 + 8) * 2 * 12
    (3072, 960)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pondlib.errors import GraphError
from pondlib.explore._checks import Problems
from pondlib.explore.workload import MAX_SIZE, NETWORK_INPUT, Layer, Workload

__all__ = ["workload_from_graph"]

_FIX = "build the network from Linear, Conv1d/2d, pooling, Residual, Sequential and neuron modules"


class _Tensor:
    """A value flowing between modules: its producing layer (or the network input), shape and width."""

    __slots__ = ("src", "shape", "bits")

    def __init__(self, src: int, shape: tuple[int, ...] | None, bits: int) -> None:
        self.src, self.shape, self.bits = src, shape, bits

    @property
    def size(self) -> int | None:
        return None if self.shape is None else int(np.prod(self.shape))


class _Builder:
    def __init__(self, bits: dict[str, int]) -> None:
        self.rows: list[dict[str, Any]] = []
        self.bits = bits
        self.block = 0
        self.block_has_weights = False
        self.readers: list[int] = []

    def new_top_level(self, has_weights: bool) -> None:
        if has_weights and self.block_has_weights:
            self.block += 1
            self.block_has_weights = False

    def emit(self, name: str, kind: str, x: _Tensor | list[_Tensor], out_shape: tuple[int, ...], **kw: Any) -> _Tensor:
        srcs = [t.src for t in (x if isinstance(x, list) else [x])]
        first = x[0] if isinstance(x, list) else x
        for s in srcs:
            if s != NETWORK_INPUT:
                self.readers[s] += 1
        names = {r["name"] for r in self.rows}
        base, n = name, 1
        while name in names:
            n += 1
            name = f"{base}#{n}"
        row = {
            "name": name,
            "kind": kind,
            "inputs": tuple(dict.fromkeys(srcs)),
            "block": self.block,
            "weight_bits": self.bits["weight_bits"],
            "state_bits": self.bits["state_bits"],
            "input_bits": first.bits,
            "output_bits": kw.pop("output_bits", first.bits),
        }
        row.update(kw)
        self.rows.append(row)
        self.readers.append(0)
        if kind in ("conv", "linear"):
            self.block_has_weights = True
        return _Tensor(len(self.rows) - 1, out_shape, row["output_bits"])

    def spatial(self, shape: tuple[int, ...]) -> tuple[int, int, int]:
        """(C, H, W) of a tensor shape: (C, H, W), (C, L) -> (C, 1, L), (N,) -> (N, 1, 1)."""
        if len(shape) == 3:
            return (shape[0], shape[1], shape[2])
        if len(shape) == 2:
            return (shape[0], 1, shape[1])
        return (int(np.prod(shape)), 1, 1)


def _check_size(x: _Tensor, n: int, where: str) -> None:
    if x.size is not None and x.size != n:
        raise GraphError("input size", value=x.size, limit=n, where=where, fix="check the network's sizes")


def _neuron_info(m: Any, nn: Any) -> tuple[int, bool, int] | None:
    """(state words per neuron, spiking, recurrent synapses) of a neuron module, or None."""
    if isinstance(m, nn.LIF) or all(hasattr(m, a) for a in ("n_neurons", "n_synapses", "w_rec")):  # LIF-like twins
        rec = 0 if m.w_rec is None else int(np.prod(np.shape(m.w_rec)))
        return 1 + m.n_synapses, True, rec
    if isinstance(m, (nn.CubaLIF, nn.CubaLI, nn.NIRLIF, nn.LI, nn.IF, nn.Integrator)):
        return 1 + (m.tau_syn is not None), m.v_threshold is not None, 0
    return None


def _attach_neuron(b: _Builder, x: _Tensor, n_in: int, n_out: int, words: int, spiking: bool, rec: int, name: str):
    out_bits = b.bits["spike_bits"] if spiking else b.bits["state_bits"]
    if x.src != NETWORK_INPUT and n_in == n_out:
        row = b.rows[x.src]
        can_rec = row["kind"] in ("conv", "linear") or rec == 0
        if b.readers[x.src] == 0 and not row.get("stateful") and row["kind"] != "neuron" and can_rec:
            row.update(stateful=True, state_words=words, output_bits=out_bits)
            row["recurrent"] = row.get("recurrent", 0) + rec
            return _Tensor(x.src, x.shape, out_bits)
    if x.shape is not None and n_in == n_out:
        c, h, w = b.spatial(x.shape)
        geo = {"k": c, "c": c, "oy": h, "ox": w}
    else:
        geo = {"k": n_out, "c": n_in}
    return b.emit(
        name,
        "neuron",
        x,
        (n_out,) if n_in != n_out else (x.shape or (n_out,)),
        stateful=True,
        state_words=words,
        output_bits=out_bits,
        recurrent=rec,
        **geo,
    )


def _walk(m: Any, x: _Tensor, b: _Builder, name: str, nn: Any) -> _Tensor:
    if isinstance(m, nn.Sequential):
        for i, child in enumerate(m.layers):
            child_name = f"{i}_{type(child).__name__}"
            x = _walk(child, x, b, f"{name}/{child_name}" if name else child_name, nn)
        return x
    if isinstance(m, nn.Residual):
        if x.src != NETWORK_INPUT:
            b.readers[x.src] += 1  # the sum reads the block's input: no neuron may fuse into its producer
        y = _walk(m.block, x, b, f"{name}/block" if name else "block", nn)
        _check_size(y, m.size_out, name or "Residual")
        if y.src == x.src:
            raise GraphError("residual block without a layer", where=name or "Residual", fix=_FIX)
        c, h, w = b.spatial(y.shape or (m.size_out,))
        return b.emit(f"{name}/add" if name else "add", "add", [y, x], y.shape or (m.size_out,), k=c, c=c, oy=h, ox=w)
    if isinstance(m, nn.GraphNetwork):
        return _walk_graphnet(m, x, b, name, nn)
    if isinstance(m, nn.Linear):
        _check_size(x, m.n_in, name)
        return b.emit(name or "Linear", "linear", x, (m.n_out,), k=m.n_out, c=m.n_in, output_bits=b.bits["state_bits"])
    if isinstance(m, (nn.Conv2d, nn.Conv1d)):
        _check_size(x, int(np.prod(m.input_shape)), name)
        if any(d != 1 for d in m.dilation):
            raise GraphError("dilated convolution", value=m.dilation, limit="dilation 1", where=name, fix=_FIX)
        kshape = tuple(int(d) for d in np.shape(m.weight))
        two_d = isinstance(m, nn.Conv2d)
        oy, ox = (m.output_shape[1], m.output_shape[2]) if two_d else (1, m.output_shape[1])
        fy, fx = (kshape[2], kshape[3]) if two_d else (1, kshape[2])
        sy, sx = (m.stride[0], m.stride[1]) if two_d else (1, m.stride[0])
        return b.emit(
            name or type(m).__name__,
            "conv",
            x,
            tuple(m.output_shape),
            k=kshape[0],
            c=m.input_shape[0],
            oy=oy,
            ox=ox,
            fy=fy,
            fx=fx,
            sy=sy,
            sx=sx,
            groups=m.groups,
            output_bits=b.bits["state_bits"],
        )
    if isinstance(m, nn.SumPool2d):  # AvgPool2d is a SumPool2d
        _check_size(x, int(np.prod(m.input_shape)), name)
        c, oy, ox = m.output_shape
        return b.emit(
            name or type(m).__name__,
            "pool",
            x,
            tuple(m.output_shape),
            k=c,
            c=c,
            oy=oy,
            ox=ox,
            fy=m.kernel_size[0],
            fx=m.kernel_size[1],
            sy=m.stride[0],
            sx=m.stride[1],
        )
    if isinstance(m, nn.Flatten):
        return _Tensor(x.src, tuple(m.output_shape), x.bits)
    if isinstance(m, nn.Scale):
        return x
    if isinstance(m, nn.Threshold):
        if x.src != NETWORK_INPUT and b.readers[x.src] == 0:
            b.rows[x.src]["output_bits"] = b.bits["spike_bits"]
            b.readers[x.src] += 1  # its activation is fixed: a later neuron is a layer of its own
            return _Tensor(x.src, x.shape, b.bits["spike_bits"])
        return b.emit(
            name or "Threshold",
            "neuron",
            x,
            x.shape or (m.size_out,),
            k=m.size_out,
            c=m.size_in,
            output_bits=b.bits["spike_bits"],
        )
    info = _neuron_info(m, nn)
    if info is not None:
        _check_size(x, m.size_in, name)
        words, spiking, rec = info
        return _attach_neuron(b, x, m.size_in, m.size_out, words, spiking, rec, name or type(m).__name__)
    raise GraphError(
        f"{type(m).__name__} cannot be described as a workload layer", where=name or type(m).__name__, fix=_FIX
    )


def _walk_graphnet(g: Any, x: _Tensor, b: _Builder, name: str, nn: Any) -> _Tensor:
    from pondlib.nn.graphnet import INPUT

    if g.recurrent:
        raise GraphError(
            "a GraphNetwork with cycles", where=name or "GraphNetwork", fix="explore acyclic networks (no recurrence)"
        )
    values: dict[str, _Tensor] = {INPUT: x}

    def merged(preds: list[str], where: str) -> _Tensor:
        ts = [values[p] for p in preds]
        if len({t.src for t in ts}) == 1:
            return ts[0]
        shape = ts[0].shape
        c, h, w = b.spatial(shape or (1,))
        return b.emit(f"{where}/sum", "add", ts, shape or (c,), k=c, c=c, oy=h, ox=w)

    for node, srcs in zip(g.order, g.sources):
        m = g.modules[node]
        if not name:
            b.new_top_level(_has_weights(m, nn))
        inp = merged([a for a, _ in srcs], node)
        values[node] = _walk(m, inp, b, f"{name}/{node}" if name else node, nn)
    return merged(list(g.out_sources), f"{name}/output" if name else "output")


def _has_weights(m: Any, nn: Any) -> bool:
    if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d)):
        return True
    if isinstance(m, nn.Sequential):
        return any(_has_weights(c, nn) for c in m.layers)
    if isinstance(m, nn.Residual):
        return _has_weights(m.block, nn)
    if isinstance(m, nn.GraphNetwork):
        return any(_has_weights(c, nn) for c in m.modules.values())
    return False


def _from_module(net: Any, b: _Builder) -> None:
    from pondlib import nn

    x = _Tensor(NETWORK_INPUT, None, b.bits["input_bits"])
    if isinstance(net, nn.Sequential):
        for i, child in enumerate(net.layers):
            b.new_top_level(_has_weights(child, nn))
            x = _walk(child, x, b, f"{i}_{type(child).__name__}", nn)
    elif isinstance(net, nn.GraphNetwork):
        x.shape = tuple(net.input_shape)
        _walk_graphnet(net, x, b, "", nn)
    else:
        _walk(net, x, b, type(net).__name__, nn)


def _from_pond_graph(graph: Any, b: _Builder) -> None:
    from pondlib import nn
    from pondlib.graph import AliasConnection, LIFNeurons, LinearWeights, topological_order

    layer_of: dict[int, _Tensor] = {}
    sums: dict[tuple[int, ...], _Tensor] = {}

    def parts_of(node: Any, depth: int = 0) -> list[_Tensor]:
        """The tensors whose sum a node carries (a layer's output, plus aliased residual inputs)."""
        parts: list[_Tensor] = []
        for src in node.source_modules:
            if isinstance(src, AliasConnection):
                if depth > 64:
                    raise GraphError("alias chain too deep", where=src.name, fix="check the residual connections")
                parts += parts_of(src.input_nodes[src.output_nodes.index(node)], depth + 1)
            elif id(src) in layer_of:
                parts.append(layer_of[id(src)])
        return parts or [_Tensor(NETWORK_INPUT, None, b.bits["input_bits"])]

    def inputs_of(m: Any) -> _Tensor:
        per_node = [parts_of(nd) for nd in m.input_nodes]
        keys = list(dict.fromkeys(tuple(sorted({t.src for t in ps})) for ps in per_node))
        if len(keys) > 1:
            raise GraphError(
                "a module reading several tensors (a concatenation)",
                value=len(keys),
                limit="1 tensor",
                where=m.name,
                fix="explore networks whose layers each read one tensor (sums are fine)",
            )
        n = len(m.input_nodes)
        if len(keys[0]) == 1:
            t = per_node[0][0]
        else:
            if keys[0] not in sums:
                uniq = list({t.src: t for t in per_node[0]}.values())
                sums[keys[0]] = b.emit(f"{m.name}/sum", "add", uniq, (n,), k=n, c=n)
            t = sums[keys[0]]
        return _Tensor(t.src, (n,), t.bits)

    order = [m for m in topological_order(graph) if not isinstance(m, AliasConnection)]
    for m in order:
        is_neuron = isinstance(m, LIFNeurons) or (
            m.computational_module is not None and _neuron_info(m.computational_module, nn) is not None
        )
        if not (isinstance(m, LinearWeights) or is_neuron):
            raise GraphError(f"{type(m).__name__} cannot be described as a workload layer", where=m.name, fix=_FIX)
        x = inputs_of(m)  # (a residual sum is emitted here, in the block of the layers it adds)
        b.new_top_level(isinstance(m, LinearWeights))
        if isinstance(m, LinearWeights):
            layer_of[id(m)] = b.emit(
                m.name, "linear", x, (m.size_out,), k=m.size_out, c=m.size_in, output_bits=b.bits["state_bits"]
            )
        elif isinstance(m, LIFNeurons):
            layer_of[id(m)] = _attach_neuron(b, x, m.size_in, m.size_out, 1 + m.n_synapses, True, 0, m.name)
        else:
            words, spiking, rec = _neuron_info(m.computational_module, nn)
            layer_of[id(m)] = _attach_neuron(b, x, m.size_in, m.size_out, words, spiking, rec, m.name)


def workload_from_graph(
    net: Any,
    time_steps: int = 16,
    *,
    blocks: Sequence[int] | None = None,
    weight_bits: int = 4,
    state_bits: int = 12,
    spike_bits: int = 1,
    input_bits: int = 1,
    name: str | None = None,
) -> Workload:
    """The workload of a ``pondlib.nn`` network or of a ``pondlib.graph`` graph (see the module docstring).

    Args:
        net: a ``pondlib.nn`` module (``Sequential``, ``Residual``, ``GraphNetwork``, ...), e.g. one loaded
            with :func:`pondlib.io.load_network`, or the graph of ``net.as_graph()``.
        time_steps: ``T``.
        blocks: one block id per emitted layer (``0, 0, 1, ...``); default: one block per top-level
            child holding weights.
        weight_bits, state_bits, spike_bits, input_bits: bit widths of weights, state words, spikes and
            the network input (1: event counts as spikes).
        name: the workload's name (default: the network's class name).

    Raises:
        GraphError: a module that cannot be described (``Delay``, a recurrent ``GraphNetwork``, a dilated
            convolution, a concatenation), naming it.
        ConfigError: bad bit widths, ``time_steps`` or ``blocks``, every problem listed.
    """
    from pondlib.graph import GraphModuleBase

    p = Problems("workload_from_graph")
    bits = {
        n: p.integer(v, n, lo=1, hi=64)
        for n, v in (
            ("weight_bits", weight_bits),
            ("state_bits", state_bits),
            ("spike_bits", spike_bits),
            ("input_bits", input_bits),
        )
    }
    t = p.integer(time_steps, "time_steps", lo=1, hi=MAX_SIZE)
    if name is not None:
        p.instance(name, "name", str)
    p.raise_if_any("pass positive whole bit widths (<= 64) and time steps")
    b = _Builder(bits)
    if isinstance(net, GraphModuleBase):
        _from_pond_graph(net, b)
    else:
        import equinox as eqx

        if not isinstance(net, eqx.Module):
            raise GraphError(
                "workload_from_graph input",
                value=f"a {type(net).__name__}",
                limit="a pondlib.nn module or a pondlib.graph graph",
                fix=_FIX,
            )
        _from_module(net, b)
    if not b.rows:
        raise GraphError("the network has no layer to schedule", where=type(net).__name__, fix=_FIX)
    if blocks is not None:
        p = Problems("workload_from_graph blocks")
        ids = list(blocks) if isinstance(blocks, (list, tuple, np.ndarray, range)) else None
        if ids is None or len(ids) != len(b.rows):
            p.add(
                f"blocks: got {blocks!r}, expected {len(b.rows)} block ids (one per layer: "
                f"{[r['name'] for r in b.rows]})"
            )
        else:
            for i, v in enumerate(ids):
                b.rows[i]["block"] = p.integer(v, f"blocks[{i}]", lo=0)
        p.raise_if_any("pass one block id per layer, numbered 0, 1, ... in layer order")
    layers = tuple(Layer(**row) for row in b.rows)
    return Workload(layers, t, name or type(net).__name__)
