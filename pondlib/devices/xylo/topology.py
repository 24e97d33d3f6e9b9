r"""What the Xylo mapper reads from a graph: one typed :class:`MappingContext` for its rules and its assembly.

:func:`read_topology` walks the graph once (modules in topological order, sources first) and records
facts without judging them:

* every neuron layer (:class:`NeuronLayer`): a :class:`~pondlib.graph.LIFNeurons` with its parameters
  read as float64 arrays of the documented shapes, or a :class:`~pondlib.graph.NIRNeuronGroup` (a neuron
  layer for every topology and size rule, without LIF parameters); its role (``"hidden"`` or
  ``"output"``), its first hardware id and what other than weights feeds it;
* every weight layer (:class:`WeightLayer`): its matrix and bias, what feeds it, what it feeds;
* every alias (:class:`AliasLink`): the hardware ids of its source and target neurons, or what stands
  where a hidden neuron should;
* the modules of no supported type, and every parameter that cannot be read (:class:`ParamProblem`);
* the chip arrays the readable weights land in: LIF input channel ``i`` is synapse ``i % k`` of neuron
  ``i // k``, so a weight ``W[p, i]`` of a matrix from hidden neuron ``a(p)`` lands at
  ``weights_rec[a(p), b(i // k), i % k]`` (``weights_in`` for graph input rows, ``weights_out[a(p), o]``
  for output neuron ``o``).

The design rules (:mod:`pondlib.devices.xylo.rules`) turn these facts into violations; the mapper
(:mod:`pondlib.devices.xylo.mapper`) assembles the specification from them once no rule is broken.
Reading never modifies the graph: parameters are copied.

Example:
    >>> import numpy as np
    >>> from pondlib.graph import LIFNeurons, LinearWeights, GraphHolder, connect_modules
    >>> from pondlib.devices.xylo.limits import XYLO_AUDIO2
    >>> w = LinearWeights._factory(16, 4, "w_in", None, weights=np.ones((16, 4)))
    >>> h = LIFNeurons._factory(4, 4, "hid", None, tau_mem=0.02, tau_syn=0.01, threshold=1.0, bias=0.0)
    >>> v = LinearWeights._factory(4, 2, "w_out", None, weights=np.ones((4, 2)))
    >>> o = LIFNeurons._factory(2, 2, "out", None, tau_mem=0.02, tau_syn=0.01, threshold=1.0, bias=0.0)
    >>> for a, b in ((w, h), (h, v), (v, o)):
    ...     _ = connect_modules(a, b)
    >>> ctx = read_topology(GraphHolder(list(w.input_nodes), list(o.output_nodes), "net", None), XYLO_AUDIO2)
    >>> [(layer.name, layer.role, layer.offset) for layer in ctx.layers]
    [('hid', 'hidden', 0), ('out', 'output', 0)]
    >>> (ctx.n_in, ctx.n_hid, ctx.n_out, ctx.k), ctx.weights_rec.shape, float(ctx.weights_out.sum())
    ((16, 4, 2, 1), (4, 4, 1), 8.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from pondlib.devices.xylo.limits import XyloLimits
from pondlib.graph.modules import AliasConnection, LIFNeurons, LinearWeights, NIRNeuronGroup
from pondlib.graph.utils import topological_order

__all__ = [
    "SUPPORTED_MODULES",
    "NEURON_TYPES",
    "ParamProblem",
    "NeuronLayer",
    "WeightLayer",
    "AliasLink",
    "Wiring",
    "MappingContext",
    "read_topology",
    "dash_of",
]

#: Graph module types the Xylo mapper understands.
SUPPORTED_MODULES: tuple[type, ...] = (LinearWeights, LIFNeurons, AliasConnection)

#: Neuron layers for the topology and size rules: Xylo LIFs, and NIR neuron groups (reported as
#: ``neuron_model``, never as ``unsupported_module``).
NEURON_TYPES: tuple[type, ...] = (LIFNeurons, NIRNeuronGroup)


@dataclass(frozen=True)
class ParamProblem:
    """A parameter that cannot be read: the module, value, limit and remedy of an ``invalid_parameter``
    violation."""

    module: str
    value: Any
    limit: Any
    remedy: str


@dataclass(frozen=True, eq=False)
class NeuronLayer:
    """A neuron layer as the mapper sees it.

    Attributes:
        module: the graph module (a LIFNeurons or a NIRNeuronGroup).
        name: its name (a NIR group's without the `` (reason)`` suffix; the reason goes to the remedy).
        n: neurons; ``k``: synapses per neuron, ``size_in / n`` (0 when ``size_in`` is no multiple of ``n``).
        dt: the layer's time step in s (nan when unreadable).
        tau_mem, threshold, bias: float64 ``(n,)``; ``tau_syn``: float64 ``(n, k)`` in s; None when
            unreadable (a NIR group has none).
        problems: why a parameter could not be read, in reading order.
        role: ``"hidden"`` or ``"output"``; ``offset``: first hardware id (hidden ids count over the
            hidden layers in topological order; the output layer starts at 0).
        fed_by: sorted descriptions of what other than weights feeds the layer (``"the graph input"``,
            ``"<name> (<type>)"``).
    """

    module: Any
    name: str
    n: int
    k: int
    dt: float
    tau_mem: np.ndarray | None = None
    tau_syn: np.ndarray | None = None
    threshold: np.ndarray | None = None
    bias: np.ndarray | None = None
    problems: tuple[ParamProblem, ...] = ()
    role: str = "hidden"
    offset: int = 0
    fed_by: tuple[str, ...] = ()

    @property
    def group(self) -> bool:
        """A NIR neuron group (no exact LIF equivalent)."""
        return isinstance(self.module, NIRNeuronGroup)

    @property
    def ok(self) -> bool:
        """A LIF layer whose parameters were all read (it has dashes, thresholds and biases to map)."""
        return (
            not self.group
            and self.k > 0
            and all(a is not None for a in (self.tau_mem, self.tau_syn, self.threshold, self.bias))
        )


@dataclass(frozen=True, eq=False)
class WeightLayer:
    """A weight matrix as the mapper sees it.

    Attributes:
        module: the :class:`~pondlib.graph.LinearWeights`.
        weights: float64 ``(size_in, size_out)``, None when unreadable.
        bias_max: ``max |biases|`` (0 for none, all zero, or unreadable weights or biases).
        problems: why ``weights`` or ``biases`` could not be read.
        fed_by_weights: sorted names of weight layers writing its inputs.
        reads_output: it reads output neurons.
        bad_sinks: sorted descriptions of what other than neurons it feeds.
        input_to_output: non-zero weights lead from graph input channels straight to output neurons.
        hidden_hop, output_hop: it carries hidden spikes to hidden neurons of another layer (a
            recurrent matrix does not count) / to output neurons: one step of delay each on chip.
    """

    module: LinearWeights
    weights: np.ndarray | None
    bias_max: float = 0.0
    problems: tuple[ParamProblem, ...] = ()
    fed_by_weights: tuple[str, ...] = ()
    reads_output: bool = False
    bad_sinks: tuple[str, ...] = ()
    input_to_output: bool = False
    hidden_hop: bool = False
    output_hop: bool = False


@dataclass(frozen=True, eq=False)
class AliasLink:
    """An alias (residual sum) as the mapper sees it.

    Attributes:
        module: the :class:`~pondlib.graph.AliasConnection`.
        bad_source, bad_target: what stands, at the first pair that is not hidden -> hidden, where a
            hidden source / target neuron should ("" when none); such an alias maps nothing.
        sources, targets: int64 hardware ids of the pairs (empty when a pair is bad).
    """

    module: AliasConnection
    bad_source: str = ""
    bad_target: str = ""
    sources: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    targets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


@dataclass(frozen=True)
class Wiring:
    """Who reads and who writes each graph node (keys are ``id(node)``).

    Attributes:
        in_channel: graph input node -> input channel.
        out_position: graph output node -> output position.
        writer: node -> (index in ``layers``, neuron in that layer); where two layers write one node,
            the later one.
        lif_input: node -> [(index in ``layers``, LIF input channel)] of every layer reading it.
        shared_writes: (layer, other layer) names for each node a layer writes after another one did.
    """

    in_channel: dict[int, int]
    out_position: dict[int, int]
    writer: dict[int, tuple[int, int]]
    lif_input: dict[int, list[tuple[int, int]]]
    shared_writes: tuple[tuple[str, str], ...]


@dataclass(frozen=True, eq=False)
class MappingContext:
    """Everything the Xylo rules check and the assembly copies, read once from one graph.

    Attributes:
        graph_name: the graph's name (the module of graph-wide violations).
        limits: the Xylo variant, with the caller's tighter caps; ``drop_biases``: the mapper's option.
        layers, weight_layers, aliases: the modules, in topological order.
        unsupported: modules of no supported type.
        problems: every unreadable parameter, in module order.
        wiring: who reads and writes each node.
        output_candidates: indices in ``layers`` of the neuron layers writing graph outputs (up to the
            first output not written by a neuron); ``output``: the index of the output layer, the single
            candidate (None when there is none or more than one).
        unwritten_output: the first graph output node no neuron writes (None when all are).
        n_in, n_hid, n_out, k: graph inputs, hidden neurons, graph outputs, synapses per hidden neuron.
        dts: layer name -> dt (nan when unreadable); ``dt``: the first finite one (1e-3 when none).
        out_index: output layer neuron -> output position (float64 arrays are indexed by it).
        weights_in, weights_rec, weights_out: float64 ``(n_in, n_hid, k)``, ``(n_hid, n_hid, k)``,
            ``(n_hid, n_out)``: the readable weights, summed where two paths meet at one synapse.
        rec_source: per ``weights_rec`` row, the index in ``weight_layers`` of its first writer (-1: none).
        alias_target: per hidden neuron, its alias target id (-1: none; the last alias wins);
            ``alias_count``: how many alias targets it has.
    """

    graph_name: str
    limits: XyloLimits
    drop_biases: bool
    layers: tuple[NeuronLayer, ...]
    weight_layers: tuple[WeightLayer, ...]
    aliases: tuple[AliasLink, ...]
    unsupported: tuple[Any, ...]
    problems: tuple[ParamProblem, ...]
    wiring: Wiring
    output_candidates: tuple[int, ...]
    output: int | None
    unwritten_output: Any
    n_in: int
    n_hid: int
    n_out: int
    k: int
    dts: dict[str, float]
    dt: float
    out_index: np.ndarray
    weights_in: np.ndarray
    weights_rec: np.ndarray
    weights_out: np.ndarray
    rec_source: np.ndarray
    alias_target: np.ndarray
    alias_count: np.ndarray

    @property
    def output_layer(self) -> NeuronLayer | None:
        """The output layer (None when the graph has none, or several candidates)."""
        return None if self.output is None else self.layers[self.output]

    @property
    def hidden(self) -> tuple[NeuronLayer, ...]:
        """The hidden layers, in topological order."""
        return tuple(layer for layer in self.layers if layer.role == "hidden")


# -- reading parameters ------------------------------------------------------------------------------


def first_bad(mask: np.ndarray) -> tuple[int, ...]:
    """Index of the first True entry of ``mask``."""
    return tuple(int(i) for i in np.argwhere(mask)[0])


def read_param(module: Any, name: str, shape: tuple[int, ...]) -> tuple[np.ndarray | None, ParamProblem | None]:
    """``module.<name>`` as a float64 copy of ``shape``, or None and why not.

    Scalars broadcast, ``(N,)`` becomes ``(N, 1)`` when ``shape`` is ``(N, 1)``, ``(k,)`` is shared by
    every neuron of ``shape = (N, k)``. Non-numbers, other shapes and NaN/inf are problems, never
    crashes."""
    raw = getattr(module, name, None)
    try:
        if np.asarray(raw).dtype.kind not in "biuf":  # complex (imaginary part), strings, objects, None
            raise TypeError
        arr = np.array(raw, dtype=float)
    except (TypeError, ValueError):
        return None, ParamProblem(
            module.name,
            f"{name} = {raw!r}",
            f"numbers of shape {shape}",
            f"pass {name} as a float array of shape {shape}",
        )
    if arr.ndim == 0:
        arr = np.full(shape, float(arr))
    elif len(shape) == 2 and arr.shape == (shape[0],) and shape[1] == 1:
        arr = arr.reshape(shape)
    elif len(shape) == 2 and arr.shape == (shape[1],):
        arr = np.broadcast_to(arr, shape).copy()
    if arr.shape != shape:
        return None, ParamProblem(
            module.name, f"{name} shape {arr.shape}", shape, f"pass {name} as a scalar or an array of shape {shape}"
        )
    bad = ~np.isfinite(arr)
    if np.any(bad):
        i = first_bad(bad)
        return None, ParamProblem(
            module.name, f"{name}{list(i)} = {arr[i]}", "a finite number", f"replace the NaN/inf in {name}"
        )
    return arr, None


def group_name(m: NIRNeuronGroup) -> str:
    """The group's name without the `` (reason)`` that :meth:`pondlib.nn.neurons.CubaLIF.as_graph`
    appends to it (the reason goes to the remedy instead)."""
    name, reason = str(m.name), str(getattr(m, "reason", "") or "")
    suffix = f" ({reason})"
    return name[: -len(suffix)] if reason and name.endswith(suffix) else name


def _read_dt(m: Any) -> float:
    """``m.dt`` in s when a positive finite number, else nan (a NIR Threshold group has none)."""
    try:
        dt = float(m.dt)
    except (TypeError, ValueError):
        return float("nan")
    return dt if math.isfinite(dt) and dt > 0 else float("nan")


def _read_lif(m: LIFNeurons, n: int, k: int) -> NeuronLayer:
    """A LIF layer of ``n`` neurons with ``k`` synapses: parameters, then time constants > 0, then dt."""
    params = {}
    problems = []
    for name, shape in (("tau_mem", (n,)), ("tau_syn", (n, k)), ("threshold", (n,)), ("bias", (n,))):
        params[name], problem = read_param(m, name, shape)
        problems += [problem] if problem else []
    for name in ("tau_mem", "tau_syn"):
        tau = params[name]
        if tau is not None and np.any(tau <= 0):
            i = first_bad(tau <= 0)
            problems.append(
                ParamProblem(m.name, f"{name}{list(i)} = {tau[i]} s", "> 0 s", "use positive time constants")
            )
            params[name] = None
    dt = _read_dt(m)
    if math.isnan(dt):
        problems.append(
            ParamProblem(m.name, f"dt = {m.dt!r}", "a positive number of seconds", "pass dt in seconds, e.g. 1e-3")
        )
    return NeuronLayer(m, m.name, n, k, dt, problems=tuple(problems), **params)


def read_neuron_layer(m: LIFNeurons | NIRNeuronGroup) -> NeuronLayer:
    """A neuron layer: ``k = size_in / size_out`` synapses per neuron, then (LIF only) its parameters.

    A NIR group keeps its name without the reason, and its dt when readable (it counts for
    ``common_dt``); it has no LIF parameters to read."""
    group = isinstance(m, NIRNeuronGroup)
    name = group_name(m) if group else m.name
    n = m.size_out
    k = m.size_in // m.size_out if m.size_out and m.size_in % m.size_out == 0 else 0
    if k == 0:
        problem = ParamProblem(
            name,
            f"{m.size_in} inputs for {m.size_out} neurons",
            "N * k inputs for N neurons",
            "give a LIF layer k inputs per neuron",
        )
        return NeuronLayer(m, name, n, 0, _read_dt(m) if group else float("nan"), problems=(problem,))
    if group:
        return NeuronLayer(m, name, n, k, _read_dt(m))
    return _read_lif(m, n, k)


def read_weight_layer(m: LinearWeights) -> WeightLayer:
    """A weight layer: its ``(size_in, size_out)`` matrix, then (when the matrix is readable) its biases."""
    w, problem = read_param(m, "weights", (m.size_in, m.size_out))
    problems = [problem] if problem else []
    bias_max = 0.0
    if w is not None and getattr(m, "biases", None) is not None:
        b, problem = read_param(m, "biases", (m.size_out,))
        problems += [problem] if problem else []
        if b is not None and b.size and np.any(b != 0):
            bias_max = float(np.max(np.abs(b)))
    return WeightLayer(m, w, bias_max, tuple(problems))


def dash_of(tau: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The unrounded dash ``log2(tau / dt)``, its rounding, and the relative error of the chip's
    effective time constant after rounding.

    The chip decays by ``1 - 2^-dash`` per step, so its effective time constant is
    ``tau_chip = -dt / ln(1 - 2^-round(dash))`` (0 for a rounded dash < 1: the state is wiped every
    step); the error is ``(tau_chip - tau) / tau``. ``tau`` in s, any shape; ``dt`` in s.

    Example:
        >>> dash, r, err = dash_of(np.array([0.02]), 1e-3)
        >>> round(float(dash[0]), 3), float(r[0]), round(float(err[0]), 4)
        (4.322, 4.0, -0.2253)
    """
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        # tau / dt may overflow for absurd time constants: the dash is then inf, a dash_too_large violation
        dash = np.log2(tau / dt)
        r = np.round(dash)
        tau_chip = np.where(r >= 1, -dt / np.log1p(-np.exp2(-np.maximum(r, 1))), 0.0)
        err = (tau_chip - tau) / tau
    return dash, r, err


# -- the graph's structure ---------------------------------------------------------------------------


def _scan_modules(modules: list) -> tuple[list[NeuronLayer], list[WeightLayer], list, list, list[ParamProblem]]:
    """Sort the modules into neuron layers, weight layers, aliases and unsupported modules (each list in
    topological order), reading their parameters; and every parameter problem, in module order."""
    layers, weight_layers, aliases, unsupported, problems = [], [], [], [], []
    for m in modules:
        if isinstance(m, NEURON_TYPES):
            layers.append(read_neuron_layer(m))
            problems += layers[-1].problems
        elif isinstance(m, LinearWeights):
            weight_layers.append(read_weight_layer(m))
            problems += weight_layers[-1].problems
        elif isinstance(m, AliasConnection):
            aliases.append(m)
        else:
            unsupported.append(m)
    return layers, weight_layers, aliases, unsupported, problems


def _wiring(g: Any, layers: list[NeuronLayer]) -> Wiring:
    """Which input channel, output position and neuron each node is, and which LIF inputs read it."""
    writer: dict[int, tuple[int, int]] = {}
    shared = []
    lif_input: dict[int, list[tuple[int, int]]] = {}
    for li, layer in enumerate(layers):
        for j, node in enumerate(layer.module.output_nodes):
            other = writer.get(id(node))
            if other is not None and other[0] != li:
                shared.append((layer.name, layers[other[0]].name))
            writer[id(node)] = (li, j)
        for c, node in enumerate(layer.module.input_nodes):
            lif_input.setdefault(id(node), []).append((li, c))
    return Wiring(
        in_channel={id(n): c for c, n in enumerate(g.input_nodes)},
        out_position={id(n): o for o, n in enumerate(g.output_nodes)},
        writer=writer,
        lif_input=lif_input,
        shared_writes=tuple(shared),
    )


def _output_candidates(g: Any, wiring: Wiring) -> tuple[tuple[int, ...], Any]:
    """The layers writing the graph outputs, in output order, up to the first output no neuron writes;
    and that output node (None when every output is a neuron)."""
    found: list[int] = []
    for node in g.output_nodes:
        w = wiring.writer.get(id(node))
        if w is None:
            return tuple(found), node
        if w[0] not in found:
            found.append(w[0])
    return tuple(found), None


def _neuron_feeders(layer: NeuronLayer, wiring: Wiring) -> tuple[str, ...]:
    """What other than weights writes the layer's inputs (sorted)."""
    bad: set[str] = set()
    for node in layer.module.input_nodes:
        if id(node) in wiring.in_channel:
            bad.add("the graph input")
        for s in node.source_modules:
            if not isinstance(s, LinearWeights):
                bad.add(f"{s.name} ({type(s).__name__})")
    return tuple(sorted(bad))


def _place_layers(layers: list[NeuronLayer], output: int | None, wiring: Wiring) -> tuple[NeuronLayer, ...]:
    """Give each layer its role, first hardware id (hidden ids layer by layer) and non-weight feeders."""
    placed = []
    n_hid = 0
    for li, layer in enumerate(layers):
        fed_by = _neuron_feeders(layer, wiring)
        if li == output:
            placed.append(replace(layer, role="output", offset=0, fed_by=fed_by))
        else:
            placed.append(replace(layer, role="hidden", offset=n_hid, fed_by=fed_by))
            n_hid += layer.n
    return tuple(placed)


def _output_index(layers: tuple[NeuronLayer, ...], output: int | None, wiring: Wiring) -> np.ndarray:
    """Output layer neuron -> graph output position (the identity unless the layer's neurons are the
    graph outputs in another order)."""
    if output is None:
        return np.zeros(0, int)
    out = layers[output]
    if len(wiring.out_position) == out.n:
        idx = [wiring.out_position.get(id(nd), -1) for nd in out.module.output_nodes]
        if min(idx) >= 0:
            return np.asarray(idx)
    return np.arange(out.n)


def _resolve_alias(a: AliasConnection, layers: tuple[NeuronLayer, ...], wiring: Wiring) -> AliasLink:
    """The hidden source and target ids of an alias, or what stands at its first pair that is not
    hidden -> hidden."""
    src_ids, dst_ids = [], []
    for sn, dn in zip(a.input_nodes, a.output_nodes):
        ws, wd = wiring.writer.get(id(sn)), wiring.writer.get(id(dn))
        if ws is None or layers[ws[0]].role == "output":
            if ws is not None:
                what = "an output neuron"
            elif id(sn) in wiring.in_channel:
                what = "the graph input"
            else:
                what = ", ".join(sorted({type(s).__name__ for s in sn.source_modules})) or "nothing"
            return AliasLink(a, bad_source=what)
        if wd is None or layers[wd[0]].role == "output":
            return AliasLink(a, bad_target="an output neuron" if wd is not None else "not a neuron")
        src_ids.append(layers[ws[0]].offset + ws[1])
        dst_ids.append(layers[wd[0]].offset + wd[1])
    return AliasLink(a, sources=np.asarray(src_ids, np.int64), targets=np.asarray(dst_ids, np.int64))


def _alias_arrays(aliases: tuple[AliasLink, ...], n_hid: int) -> tuple[np.ndarray, np.ndarray]:
    """Per hidden neuron: its alias target (-1: none; a later alias overwrites) and its target count."""
    target = -np.ones(n_hid, np.int64)
    count = np.zeros(n_hid, np.int64)
    for a in aliases:
        if a.sources.size:
            np.add.at(count, a.sources, 1)
            target[a.sources] = a.targets
    return target, count


def _dt_of(layers: list[NeuronLayer]) -> tuple[dict[str, float], float]:
    """Layer name -> dt, and the first finite dt (1e-3 when none is)."""
    dts = {layer.name: layer.dt for layer in layers}
    finite = [d for d in dts.values() if math.isfinite(d)]
    return dts, finite[0] if finite else 1e-3


# -- weights onto the chip ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _ChipWeights:
    """The chip's weight arrays while the weight layers are placed into them (filled in place)."""

    weights_in: np.ndarray
    weights_rec: np.ndarray
    weights_out: np.ndarray
    rec_source: np.ndarray


def _pre_side(m: LinearWeights, layers: tuple[NeuronLayer, ...], wiring: Wiring) -> tuple[np.ndarray, ...]:
    """Per matrix row: its kind (0 nothing mappable, 1 graph input, 2 hidden neuron, 3 output neuron) and id
    (input channel or hardware neuron id); and the sorted names of weight layers writing the rows."""
    pre_kind = np.zeros(m.size_in, np.int8)
    pre_id = np.zeros(m.size_in, np.int64)
    fed_by_weights: set[str] = set()
    for r, node in enumerate(m.input_nodes):
        if id(node) in wiring.in_channel:
            pre_kind[r], pre_id[r] = 1, wiring.in_channel[id(node)]
            continue
        wr = wiring.writer.get(id(node))
        if wr is not None:
            layer = layers[wr[0]]
            pre_kind[r] = 3 if layer.role == "output" else 2
            pre_id[r] = layer.offset + wr[1]
        for s in node.source_modules:
            if isinstance(s, LinearWeights):
                fed_by_weights.add(s.name)
    return pre_kind, pre_id, tuple(sorted(fed_by_weights))


def _post_side(m: LinearWeights, wiring: Wiring) -> tuple[list[tuple[int, int, int]], tuple[str, ...]]:
    """The (column, index in layers, LIF input channel) of every LIF input each column writes; and the
    sorted descriptions of what other than neurons the columns feed."""
    posts: list[tuple[int, int, int]] = []
    bad_sinks: set[str] = set()
    for c, node in enumerate(m.output_nodes):
        for li, ch in wiring.lif_input.get(id(node), ()):
            posts.append((c, li, ch))
        if not node.sink_modules and id(node) not in wiring.out_position:
            bad_sinks.add("nothing (its output is unused)")
        if len(node.sink_modules) > 1 or not isinstance(
            node.sink_modules[0] if node.sink_modules else None, NEURON_TYPES
        ):
            for s in node.sink_modules:
                if not isinstance(s, (*NEURON_TYPES, LinearWeights)):
                    bad_sinks.add(f"{s.name} ({type(s).__name__})")
        if id(node) in wiring.out_position:
            bad_sinks.add("the graph output")
    return posts, tuple(sorted(bad_sinks))


def _contiguous(ix: np.ndarray) -> bool:
    """True when ``ix`` is ``start, start + 1, ..., start + n - 1``."""
    return ix.size > 0 and int(ix[-1]) - int(ix[0]) == ix.size - 1 and bool(np.all(np.diff(ix) == 1))


def _accumulate(target: np.ndarray, idx: tuple, block: np.ndarray, pre: np.ndarray, post_key: np.ndarray) -> None:
    """``target[idx] += block`` where ``post_key`` is the flat (post, syn) column of ``target``.

    The usual case (a layer's neurons in order: contiguous pre ids and synapse columns) is a slice of
    a 2-D view; otherwise a fancy index, and ``np.add.at`` when weights address one chip synapse twice
    (two paths summed) so that they add up instead of overwriting each other.
    """
    if _contiguous(pre) and _contiguous(post_key):
        flat = target.reshape(target.shape[0], -1)  # a view: target is C-contiguous
        flat[pre[0] : pre[-1] + 1, post_key[0] : post_key[-1] + 1] += block
    elif np.unique(pre).size == pre.size and np.unique(post_key).size == post_key.size:
        target[idx] += block
    else:
        np.add.at(target, idx, block)


def _place_matrix(
    chip: _ChipWeights,
    wi: int,
    w: np.ndarray,
    pre: tuple[np.ndarray, np.ndarray],
    post: tuple[np.ndarray, ...],
    out_index: np.ndarray,
) -> tuple[bool, bool, bool]:
    """Add matrix ``wi`` of ``weight_layers`` (``w``) into the chip arrays.

    ``pre`` = (row kind, row id) of :func:`_pre_side`; ``post`` = (column, hardware neuron, synapse,
    is output) per LIF input the matrix writes. Rows of input channels land in ``weights_in``, rows of
    hidden neurons in ``weights_rec`` (hidden posts) or ``weights_out`` (output posts, at
    ``out_index``); input rows onto output posts are not placed. Returns (non-zero input -> output
    weights, hidden -> hidden used, hidden -> output used).
    """
    pre_kind, pre_id = pre
    cols, post_neuron, post_syn, post_out = post
    k = chip.weights_in.shape[2]
    input_to_output = used_hh = used_ho = False
    for kind in (1, 2):
        rows = np.flatnonzero(pre_kind == kind)
        if rows.size == 0:
            continue
        sub_pre = pre_id[rows]
        for is_out in (False, True):
            sel = np.flatnonzero(post_out == is_out)
            if sel.size == 0:
                continue
            block = w[np.ix_(rows, cols[sel])]
            if kind == 1 and is_out:
                input_to_output = bool(np.any(block != 0))
                continue
            if is_out:
                post_key = out_index[post_neuron[sel]]  # the output layer's offset is 0
                target, idx = chip.weights_out, (sub_pre[:, None], post_key[None, :])
                used_ho = True
            else:
                post_key = post_neuron[sel] * k + post_syn[sel]
                target = chip.weights_in if kind == 1 else chip.weights_rec
                idx = (sub_pre[:, None], post_neuron[sel][None, :], post_syn[sel][None, :])
                if kind == 2:
                    used_hh = True
                    chip.rec_source[sub_pre[chip.rec_source[sub_pre] < 0]] = wi
            _accumulate(target, idx, block, sub_pre, post_key)
    return input_to_output, used_hh, used_ho


def _place_weights(
    weight_layers: list[WeightLayer],
    layers: tuple[NeuronLayer, ...],
    wiring: Wiring,
    out_index: np.ndarray,
    shape: tuple[int, int, int, int],
) -> tuple[tuple[WeightLayer, ...], _ChipWeights]:
    """Link every weight layer (what feeds it, what it feeds) and add its readable weights into the chip
    arrays of ``shape = (n_in, n_hid, n_out, k)``."""
    n_in, n_hid, n_out, k = shape
    f64 = np.float64
    chip = _ChipWeights(
        np.zeros((n_in, n_hid, k), f64),
        np.zeros((n_hid, n_hid, k), f64),
        np.zeros((n_hid, n_out), f64),
        np.full(n_hid, -1, np.int64),
    )
    lif_offset = np.asarray([layer.offset for layer in layers] + [0], np.int64)
    lif_k = np.asarray([max(layer.k, 1) for layer in layers] + [1], np.int64)
    lif_is_out = np.asarray([layer.role == "output" for layer in layers] + [False])
    linked = []
    for wi, wl in enumerate(weight_layers):
        m = wl.module
        pre_kind, pre_id, fed_by_weights = _pre_side(m, layers, wiring)
        posts, bad_sinks = _post_side(m, wiring)
        facts: dict[str, Any] = {
            "fed_by_weights": fed_by_weights,
            "reads_output": bool(np.any(pre_kind == 3)),
            "bad_sinks": bad_sinks,
        }
        if wl.weights is not None and posts:
            cols, post_li, ch = np.asarray(posts, np.int64).T
            lk = lif_k[post_li]
            post = (cols, lif_offset[post_li] + ch // lk, ch % lk, lif_is_out[post_li])
            to_out, used_hh, used_ho = _place_matrix(chip, wi, wl.weights, (pre_kind, pre_id), post, out_index)
            post_ids = {id(layers[li].module) for li in np.unique(post_li).tolist()}
            recurrent = any(
                isinstance(s, NEURON_TYPES) and id(s) in post_ids for node in m.input_nodes for s in node.source_modules
            )
            facts.update(input_to_output=to_out, hidden_hop=used_hh and not recurrent, output_hop=used_ho)
        linked.append(replace(wl, **facts))
    return tuple(linked), chip


def read_topology(g: Any, limits: XyloLimits, drop_biases: bool = False) -> MappingContext:
    """Read graph ``g`` (a graph holder or module) once into a :class:`MappingContext`.

    Every module reachable from the graph's boundary is read; nothing is judged (the rules do that)
    and nothing of the graph is modified. The output layer is the single neuron layer writing the
    graph outputs; every other neuron layer is hidden.
    """
    layers, weight_layers, alias_modules, unsupported, problems = _scan_modules(topological_order(g))
    wiring = _wiring(g, layers)
    candidates, unwritten = _output_candidates(g, wiring)
    output = candidates[0] if len(candidates) == 1 else None
    placed = _place_layers(layers, output, wiring)
    n_hid = sum(layer.n for layer in placed if layer.role == "hidden")
    k = max([layer.k for layer in placed if layer.role == "hidden"] + [1])
    n_in, n_out = len(g.input_nodes), len(g.output_nodes)
    out_index = _output_index(placed, output, wiring)
    linked, chip = _place_weights(weight_layers, placed, wiring, out_index, (n_in, n_hid, n_out, k))
    aliases = tuple(_resolve_alias(a, placed, wiring) for a in alias_modules)
    alias_target, alias_count = _alias_arrays(aliases, n_hid)
    dts, dt = _dt_of(layers)
    return MappingContext(
        graph_name=g.name,
        limits=limits,
        drop_biases=drop_biases,
        layers=placed,
        weight_layers=linked,
        aliases=aliases,
        unsupported=tuple(unsupported),
        problems=tuple(problems),
        wiring=wiring,
        output_candidates=candidates,
        output=output,
        unwritten_output=unwritten,
        n_in=n_in,
        n_hid=n_hid,
        n_out=n_out,
        k=k,
        dts=dts,
        dt=dt,
        out_index=out_index,
        weights_in=chip.weights_in,
        weights_rec=chip.weights_rec,
        weights_out=chip.weights_out,
        rec_source=chip.rec_source,
        alias_target=alias_target,
        alias_count=alias_count,
    )
