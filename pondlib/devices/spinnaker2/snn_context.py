r"""What the SNN mapper knows about a network before it judges it: the typed context its rules read.

:func:`mapping_context` builds it once per call, in three stages, each from the one before (the
equations are in :mod:`pondlib.devices.spinnaker2.mapper`):

1. :class:`Topology`: the populations and weight layers of the graph with their structural facts
   (what feeds what, the parameters as float64, the weight layers as dense projections), read once;
   the graph is never modified;
2. :class:`ScaledPopulation`: every population the population rules accept, in chip units (scale,
   decays, scaled threshold and bias) with its incoming weights quantized when its scale fits;
3. :class:`Placement`: the slices on PEs and, per PE, its synapse rows, memory and per-tick work.

A stage leaves out what an earlier rule rejects (a population with a NaN threshold is not scaled, one
whose scale does not fit is not placed), so that each problem is reported once, where it arises. The
facts hold no verdicts: the rules (:mod:`pondlib.devices.spinnaker2.snn_rules`) turn them into
violations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pondlib.devices.spinnaker2.limits import SpiNNaker2Limits
from pondlib.devices.spinnaker2.specification import NEURON_MODELS, PARAM_MAX, LIFOptions, NeuronModel, Slice
from pondlib.errors import ConfigError
from pondlib.graph.modules import LIFNeurons, LinearWeights
from pondlib.graph.utils import source_modules_of, topological_order

__all__ = [
    "SUPPORTED_MODULES",
    "LIF_PARAMETERS",
    "Request",
    "Population",
    "WeightLayer",
    "Projection",
    "Topology",
    "ScaledProjection",
    "ScaledPopulation",
    "SliceLoad",
    "Placement",
    "MappingContext",
    "mapping_context",
    "positive_number",
    "first_bad_value",
    "scale_is_usable",
    "out_of_range",
    "scale_fits",
    "delay_ticks",
    "extract_topology",
    "scale_populations",
    "place",
]

#: Graph module types the SpiNNaker2 SNN mapper understands.
SUPPORTED_MODULES: tuple[type, ...] = (LinearWeights, LIFNeurons)
#: The LIF parameters the mapper reads, in the order they are checked.
LIF_PARAMETERS = ("tau_mem", "tau_syn", "threshold", "bias")
#: Smallest normal float32: a scaled threshold below it is 0 (or subnormal) on the chip's FPU.
F32_TINY = float(np.finfo(np.float32).tiny)


# -- value predicates shared by the facts and the rules --------------------------------------------
def positive_number(value: Any) -> bool:
    """Whether ``value`` is a finite real number > 0 (booleans are not numbers here)."""
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and bool(np.isfinite(value))
        and value > 0
    )


def first_bad_value(name: str, values: np.ndarray) -> int | None:
    """Index of the first entry of LIF parameter ``name`` that is not finite (or not > 0, for every
    parameter but ``bias``), or None when all are good."""
    bad = ~np.isfinite(values)
    if name != "bias":
        bad |= ~(values > 0)
    return int(np.flatnonzero(bad)[0]) if np.any(bad) else None


def scale_is_usable(scale: float) -> bool:
    """Whether a weight scale is finite and > 0 (an infinite one comes from subnormal weights)."""
    return bool(np.isfinite(scale) and scale > 0)


def out_of_range(values: np.ndarray, positive: bool) -> np.ndarray:
    """Mask of scaled parameters the chip cannot hold: not finite, beyond ``PARAM_MAX`` (2^64) or, for
    a ``positive`` one (the threshold), below the smallest normal float32."""
    mag = np.abs(values)
    return ~np.isfinite(values) | (mag > PARAM_MAX) | ((mag < F32_TINY) & positive)


# -- the request -----------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Request:
    """The mapper's checked arguments (see :func:`~pondlib.devices.spinnaker2.mapper.mapper`);
    ``neurons_per_pe`` is the slice size asked for (the limits' default when not given)."""

    limits: SpiNNaker2Limits
    neuron_model: str
    delays: Mapping[str, Any]
    weight_scale: Mapping[str, Any]
    neurons_per_pe: int
    spike_rate: float
    record_ticks: int
    record_v: bool
    options: LIFOptions
    chips: int = 1

    @property
    def model(self) -> NeuronModel | None:
        """The neuron model named, None when unknown."""
        return NEURON_MODELS.get(self.neuron_model)


# -- stage 1: the topology -------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Population:
    """One LIF population: its module, its parameters (:data:`LIF_PARAMETERS`) as float64 (N,) (the
    first synapse's column; None where not real numbers of that shape) and its first feed that is not a
    weight layer (``"the graph input"`` or a module name; None when only weights feed it)."""

    module: LIFNeurons
    values: Mapping[str, np.ndarray | None]
    foreign_feed: str | None

    @property
    def name(self) -> str:
        return self.module.name

    @property
    def valid(self) -> bool:
        """Whether the population rules accept it: one synapse, real finite parameters, dt > 0."""
        return (
            self.module.n_synapses == 1
            and all(v is not None and first_bad_value(k, v) is None for k, v in self.values.items())
            and positive_number(self.module.dt)
        )


@dataclass(frozen=True, eq=False)
class WeightLayer:
    """One weight layer and what it connects.

    ``fed_by_weights``: the weight layers among its sources. ``reads``: ``"input"`` (the graph input
    only), ``"population"`` (the outputs of ``pre`` only), ``"several_populations"`` (one source
    population but other nodes too) or ``"mixed"``; ``pre_index`` maps each input channel to its source
    neuron. ``post``: the one LIF population it feeds (None when it feeds anything else or a graph
    output); ``partial``: some of its outputs are not inputs of ``post``. ``weights``: float64 (K, N),
    None when not real numbers; ``weights_finite``: real and finite. ``delays``: the user's delays as
    float64, read only for a layer whose structure and weights are sound (None otherwise or when not
    given); ``max_delay``: the model's.
    """

    module: LinearWeights
    source_names: tuple[str, ...]
    fed_by_weights: tuple[str, ...]
    reads: str
    pre: str | None
    pre_index: np.ndarray | None
    sink_names: tuple[str, ...]
    post: LIFNeurons | None
    post_index: np.ndarray | None
    partial: bool
    weights: np.ndarray | None
    weights_finite: bool
    delays: np.ndarray | None
    max_delay: int

    @property
    def name(self) -> str:
        return self.module.name

    @property
    def source_ok(self) -> bool:
        """Reads the graph input or one population, and no weight layer."""
        return not self.fed_by_weights and self.reads in ("input", "population")

    @property
    def structure_ok(self) -> bool:
        """Reads one source and feeds all of one population with one synapse per neuron."""
        return self.source_ok and self.post is not None and self.post.n_synapses == 1 and not self.partial

    @property
    def mapped(self) -> bool:
        """Becomes a projection: sound structure and finite weights."""
        return self.structure_ok and self.weights_finite


@dataclass(frozen=True, eq=False)
class Projection:
    """A mapped weight layer as a dense projection: float64 weights and int delays (N_pre, N_post)."""

    name: str
    pre: str
    post: str
    weights: np.ndarray
    delays: np.ndarray


@dataclass(frozen=True, eq=False)
class Topology:
    """The graph as the rules see it: unsupported modules, populations and weight layers in
    topological order, the distinct positive dts (ascending), the modules writing the graph outputs,
    the mapped projections and the notes found on the way."""

    n_input: int
    unsupported: tuple[Any, ...]
    populations: tuple[Population, ...]
    layers: tuple[WeightLayer, ...]
    dts: tuple[float, ...]
    output_sources: tuple[Any, ...]
    output_is_whole_population: bool
    projections: tuple[Projection, ...]
    notes: tuple[str, ...]
    default_tick: float

    @property
    def tick(self) -> float:
        """The time step: the smallest dt of the populations (the limits' tick when there is none)."""
        return self.dts[0] if self.dts else self.default_tick

    @property
    def output(self) -> str:
        """The first LIF population writing the graph outputs ("" when none)."""
        return next((m.name for m in self.output_sources if isinstance(m, LIFNeurons)), "")


def _node_index(nodes: list) -> dict[int, int]:
    return {id(n): i for i, n in enumerate(nodes)}


def _parameter(m: LIFNeurons, name: str) -> np.ndarray | None:
    """LIF parameter ``name`` as float64 (N,) (the first synapse's column), None when not real numbers."""
    try:
        arr = np.asarray(getattr(m, name))
        if arr.dtype.kind not in "biuf":
            raise TypeError(arr.dtype)
        return arr.astype(np.float64).reshape(m.n_neurons, -1)[:, 0]
    except (TypeError, ValueError):
        return None


def _population(m: LIFNeurons, input_idx: dict[int, int]) -> Population:
    """The facts of one LIF module: its parameters and its first input node fed by anything but weights."""
    foreign = None
    for n in m.input_nodes:
        bad = [s.name for s in n.source_modules if not isinstance(s, LinearWeights)]
        if id(n) in input_idx or bad:
            foreign = bad[0] if bad else "the graph input"
            break
    return Population(m, {name: _parameter(m, name) for name in LIF_PARAMETERS}, foreign)


def _weights(lin: LinearWeights) -> np.ndarray | None:
    """The layer's weights as float64, None when they are not real numbers."""
    try:
        w = np.asarray(lin.weights)
        if w.dtype.kind not in "biuf":
            raise TypeError(w.dtype)
        return w.astype(np.float64)
    except (TypeError, ValueError):
        return None


def _delay_values(name: str, raw: Any) -> np.ndarray | None:
    """The user's delays of layer ``name`` as float64 (None when not given).

    Raises:
        ConfigError: not numbers (a string, complex, ragged): malformed, not a range problem.
    """
    if raw is None:
        return None
    try:
        arr = np.asarray(raw)
    except (TypeError, ValueError):
        arr = np.asarray(None)
    if arr.dtype.kind not in "biuf":
        raise ConfigError(
            f"delays[{name!r}]",
            value=f"{type(raw).__name__} of dtype {arr.dtype}",
            limit="integers (a scalar or one per synapse)",
            where="spinnaker2.mapper",
            fix="pass whole numbers of ticks",
        )
    return arr.astype(np.float64)


def _source(lin: LinearWeights, srcs: list, input_idx: dict[int, int]) -> tuple[str, str | None, np.ndarray | None]:
    """What a weight layer reads: ``(reads, pre, pre_index)`` (see :class:`WeightLayer`)."""
    from_input = [id(n) in input_idx for n in lin.input_nodes]
    pre_lifs = [s for s in srcs if isinstance(s, LIFNeurons)]
    if all(from_input) and not pre_lifs:
        return "input", "input", np.array([input_idx[id(n)] for n in lin.input_nodes])
    if len(pre_lifs) == 1 and not any(from_input):
        pidx = _node_index(list(pre_lifs[0].output_nodes))
        if not all(id(n) in pidx for n in lin.input_nodes):
            return "several_populations", None, None
        return "population", pre_lifs[0].name, np.array([pidx[id(n)] for n in lin.input_nodes])
    return "mixed", None, None


def _target(lin: LinearWeights, output_ids: set[int]) -> tuple[tuple[str, ...], LIFNeurons | None, np.ndarray | None]:
    """What a weight layer feeds: ``(sink_names, post, post_index)``; ``post_index`` None when some of its
    outputs are not inputs of ``post`` (see :class:`WeightLayer`)."""
    sinks = {id(s): s for n in lin.output_nodes for s in n.sink_modules}
    posts = [s for s in sinks.values() if isinstance(s, LIFNeurons)]
    others = [s for s in sinks.values() if not isinstance(s, LIFNeurons)]
    names = tuple(s.name for s in sinks.values())
    if len(posts) != 1 or others or any(id(n) in output_ids for n in lin.output_nodes):
        return names, None, None
    qidx = _node_index(list(posts[0].input_nodes))
    if not all(id(n) in qidx for n in lin.output_nodes):
        return names, posts[0], None
    return names, posts[0], np.array([qidx[id(n)] for n in lin.output_nodes])


def _weight_layer(lin: LinearWeights, input_idx: dict[int, int], output_ids: set[int], request: Request) -> WeightLayer:
    """The facts of one weight layer; its delays are read only when it is mapped (sound structure and
    finite weights): the delays of any other layer count as naming an unknown layer."""
    srcs = source_modules_of(lin)
    reads, pre, pre_index = _source(lin, srcs, input_idx)
    sink_names, post, post_index = _target(lin, output_ids)
    weights = _weights(lin)
    layer = WeightLayer(
        module=lin,
        source_names=tuple(s.name for s in srcs),
        fed_by_weights=tuple(s.name for s in srcs if isinstance(s, LinearWeights)),
        reads=reads,
        pre=pre,
        pre_index=pre_index,
        sink_names=sink_names,
        post=post,
        post_index=post_index,
        partial=post is not None and post_index is None,
        weights=weights,
        weights_finite=weights is not None and bool(np.all(np.isfinite(weights))),
        delays=None,
        max_delay=request.model.word.max_delay,
    )
    if not layer.mapped:
        return layer
    return replace(layer, delays=_delay_values(lin.name, request.delays.get(lin.name)))


def delay_ticks(values: np.ndarray | None, shape: tuple[int, int], max_delay: int) -> np.ndarray:
    """Delays in whole ticks (K, N): the user's values rounded and clipped to ``0..max_delay`` (zeros when
    not given or of another shape). Only a valid mapping keeps them, where they are already in range."""
    if values is None or not (values.ndim == 0 or values.shape == shape):
        return np.zeros(shape, dtype=np.int64)
    arr = np.broadcast_to(values, shape)
    return np.clip(np.where(np.isfinite(arr), np.rint(arr), 0), 0, max_delay).astype(np.int64)


def _projection(layer: WeightLayer, n_pre: int) -> Projection:
    """A mapped layer as a dense projection from all ``n_pre`` source neurons to all of ``post``."""
    post = layer.post
    rows, cols = layer.pre_index[:, None], layer.post_index[None, :]
    weights = np.zeros((n_pre, post.n_neurons))
    np.add.at(weights, (rows, cols), layer.weights)
    delays = np.zeros(weights.shape, dtype=np.int64)
    delays[rows, cols] = delay_ticks(layer.delays, layer.weights.shape, layer.max_delay)
    return Projection(layer.name, layer.pre, post.name, weights, delays)


def _max_spikes_note(m: LIFNeurons) -> str | None:
    if positive_number(m.max_spikes_per_dt) and m.max_spikes_per_dt > 1:
        return (
            f"{m.name}: the chip emits at most one spike per neuron per tick "
            f"(the float model allows {m.max_spikes_per_dt:g}); train with "
            "max_spikes_per_dt=1 to match"
        )
    return None


def extract_topology(g: Any, request: Request) -> Topology:
    """Read the graph once (see :class:`Topology`).

    Raises:
        ConfigError: the delays of a mapped layer are not numbers.
    """
    order = topological_order(g)
    input_idx = _node_index(list(g.input_nodes))
    output_ids = {id(n) for n in g.output_nodes}
    lifs = [m for m in order if isinstance(m, LIFNeurons)]
    layers = tuple(_weight_layer(m, input_idx, output_ids, request) for m in order if isinstance(m, LinearWeights))
    sizes = {m.name: m.n_neurons for m in reversed(lifs)}  # by name: the first population of a name wins
    out_srcs = tuple({id(s): s for n in g.output_nodes for s in n.source_modules}.values())
    out_lifs = [s for s in out_srcs if isinstance(s, LIFNeurons)]
    return Topology(
        n_input=g.size_in,
        unsupported=tuple(m for m in order if not isinstance(m, SUPPORTED_MODULES)),
        populations=tuple(_population(m, input_idx) for m in lifs),
        layers=layers,
        dts=tuple(sorted({float(m.dt) for m in lifs if positive_number(m.dt)})),
        output_sources=out_srcs,
        output_is_whole_population=bool(out_lifs)
        and [id(n) for n in g.output_nodes] == [id(n) for n in out_lifs[0].output_nodes],
        projections=tuple(
            _projection(la, g.size_in if la.pre == "input" else sizes[la.pre]) for la in layers if la.mapped
        ),
        notes=tuple(n for n in map(_max_spikes_note, lifs) if n is not None),
        default_tick=request.limits.tick_s,
    )


# -- stage 2: populations in chip units ------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ScaledProjection:
    """An incoming projection of a scaled population: the folded float weights ``W~``, their
    quantization ``round(s W~)`` (float64, not yet clipped to the word: checked by ``weight_range``) and
    the delays in ticks, all (N_pre, N_post)."""

    name: str
    pre: str
    post: str
    folded: np.ndarray
    quantized: np.ndarray
    delays: np.ndarray


@dataclass(frozen=True, eq=False)
class ScaledPopulation:
    """A population in chip units: ``scale`` s (chip units per float unit), the largest incoming folded
    |weight|, the word's largest weight, float64 (N,) ``alpha``, ``beta`` (synaptic decay), ``threshold``
    (s theta) and ``bias`` (s b), and its incoming projections, quantized only when the scale fits."""

    population: Population
    scale: float
    max_weight: float
    word_max: int
    alpha: np.ndarray
    beta: np.ndarray
    threshold: np.ndarray
    bias: np.ndarray
    incoming: tuple[ScaledProjection, ...]
    notes: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.population.name

    @property
    def fits(self) -> bool:
        """Whether the scale and the scaled threshold and bias are representable (placed when so)."""
        return scale_fits(self.scale, self.threshold, self.bias)


def scale_fits(scale: float, threshold: np.ndarray, bias: np.ndarray) -> bool:
    """Whether ``scale`` is usable and no scaled threshold or bias is :func:`out_of_range`."""
    return (
        scale_is_usable(scale)
        and not np.any(out_of_range(threshold, positive=True))
        and not np.any(out_of_range(bias, positive=False))
    )


def _scaled(values: np.ndarray, s: float) -> np.ndarray:
    """``values * s`` in float64 without overflow warnings (an overflow is inf, reported by the rules)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return values * s


def _scale_population(pop: Population, topology: Topology, request: Request) -> ScaledPopulation:
    """Scale one valid population and, when its scale fits, quantize its incoming weights (round half to
    even, once, here): the folding and the scale of the mapper's module docstring."""
    model, name, p = request.model, pop.name, pop.values
    wmax = request.limits.weight_range(with_delays=model.word.delay_bits > 0)[1]
    notes = []
    with np.errstate(over="ignore"):  # tau far below the tick: -inf, a full decay in one tick (0)
        beta = np.exp(-topology.tick / p["tau_syn"])
        alpha = np.exp(-topology.tick / p["tau_mem"])
    incoming = [r for r in topology.projections if r.post == name]
    if model.has_current:
        folded = [r.weights * beta[None, :] for r in incoming]
    else:
        folded = [r.weights for r in incoming]
        notes.append(
            f"{name}: {request.neuron_model} has no synaptic current; tau_syn is dropped (use lif_curr_exp to keep it)"
        )
    wabs = max([float(np.max(np.abs(w))) for w in folded if w.size] or [0.0])
    if name in request.weight_scale:
        s = float(request.weight_scale[name])
    elif wabs > 0:
        s = wmax / wabs  # inf when wabs is subnormal: reported by parameter_range, never used
    else:
        s = 1.0
        notes.append(f"{name}: all incoming weights are 0 (scale 1)")
    thr, off = _scaled(p["threshold"], s), _scaled(p["bias"], s)
    quantized = ()
    if scale_fits(s, thr, off):  # finite: |w| s <= wmax, or a weight_range violation
        quantized = tuple(
            ScaledProjection(r.name, r.pre, r.post, w, np.rint(w * s), r.delays) for r, w in zip(incoming, folded)
        )
    return ScaledPopulation(pop, s, wabs, wmax, alpha, beta, thr, off, quantized, tuple(notes))


def scale_populations(topology: Topology, request: Request) -> tuple[ScaledPopulation, ...]:
    """Every population the population rules accept and whose fixed weight scale (if any) is a number
    > 0, scaled (see :class:`ScaledPopulation`)."""
    return tuple(
        _scale_population(pop, topology, request)
        for pop in topology.populations
        if pop.valid and (pop.name not in request.weight_scale or positive_number(request.weight_scale[pop.name]))
    )


# -- stage 3: placement ----------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class SliceLoad:
    """What one population slice puts on its PE: per incoming projection its longest synapse row (words),
    the rows, words and source slices (routing entries) in all, the memory per region (bytes) and the
    per-tick work (cycles at the expected spike rate); ``limits`` to judge them by."""

    slice: Slice
    longest_rows: tuple[tuple[str, int | None], ...]
    rows: int
    words: int
    sources: int
    memory: dict[str, int]
    cycles: float
    limits: SpiNNaker2Limits
    hop_s: float = 0.0  # latency of the farthest chip that sends to the slice (0: all on its chip)


@dataclass(frozen=True, eq=False)
class Placement:
    """Slices on PEs: ``neurons_per_pe`` as asked, the input slices, then the slices of the placed
    populations (PEs numbered in that order) with their loads."""

    neurons_per_pe: int
    input_slices: tuple[Slice, ...]
    slices: tuple[Slice, ...]
    loads: tuple[SliceLoad, ...]
    chips: int = 1

    @property
    def pes_used(self) -> int:
        return len(self.input_slices) + len(self.slices)


def chip_of(pe: int, limits: SpiNNaker2Limits) -> int:
    """The chip of a global PE id: ``pe // usable_pes_per_chip``."""
    return pe // limits.usable_pes_per_chip


def _spread(slices: list[Slice], chips: int, limits: SpiNNaker2Limits) -> list[Slice]:
    """The ``k``-th of ``n`` slices on chip ``c = floor(k chips / n)``, PE ``c usable_pes_per_chip + (k - first_c)``
    (global ids, ``first_c = ceil(c n / chips)``: chips get equal shares; one chip: PEs 0..n-1 as before)."""
    n = max(len(slices), 1)
    out = []
    for k, s in enumerate(slices):
        c = k * chips // n
        out.append(Slice(s.population, s.start, s.stop, c * limits.usable_pes_per_chip + k - (-(-c * n // chips))))
    return out


def _slices(name: str, size: int, per_pe: int, first_pe: int) -> list[Slice]:
    return [Slice(name, a, min(a + per_pe, size), first_pe + i) for i, a in enumerate(range(0, size, per_pe))]


def _slice_load(
    sl: Slice,
    input_slices: list[Slice],
    slices: list[Slice],
    placed: tuple[ScaledPopulation, ...],
    request: Request,
) -> SliceLoad:
    """Rows, memory and per-tick work of one slice (the memory and work model of the mapper's docstring)."""
    lim, model = request.limits, request.model
    rows = words = sources = hops = 0
    longest = []
    for sp in placed:
        for pr in (r for r in sp.incoming if r.post == sl.population):
            nnz = np.count_nonzero(pr.quantized[:, sl.start : sl.stop], axis=1)
            longest.append((pr.name, int(nnz.max()) if nnz.size else None))
            rows += int(np.count_nonzero(nnz))
            words += int(nnz.sum())
            src = input_slices if pr.pre == "input" else [s for s in slices if s.population == pr.pre]
            senders = [s for s in src if np.any(nnz[s.start : s.stop])]
            sources += len(senders)
            hops = max([hops] + [abs(chip_of(s.pe, lim) - chip_of(sl.pe, lim)) for s in senders])
    n = sl.stop - sl.start
    memory = {
        "synapse_rows": rows * lim.row_header_bytes + 2 * words,
        "neuron_params": n * model.params_bytes,
        "routing_entries": sources * lim.pop_table_entry_bytes,
        "input_buffers": (model.word.max_delay + 2) * 2 * n * lim.input_buffer_word_bytes,
        "recording": request.record_ticks * (4 * math.ceil(n / 32) + (4 * n if request.record_v else 0)),
    }
    cycles = (
        lim.cycles_per_tick_overhead
        + n * lim.cycles_per_neuron
        + request.spike_rate * (rows * lim.cycles_per_row + words * lim.cycles_per_synapse)
    )
    return SliceLoad(sl, tuple(longest), rows, words, sources, memory, cycles, lim, hops * lim.chip_hop_s)


def place(topology: Topology, scaled: tuple[ScaledPopulation, ...], request: Request) -> Placement:
    """Cut the inputs and every population whose scale fits into slices of at most ``neurons_per_pe``
    neurons, one PE each, spread over ``request.chips`` chips in order (:func:`_spread`), and load them (see
    :class:`Placement`)."""
    per_pe = max(request.neurons_per_pe, 1)
    placed = tuple(sp for sp in scaled if sp.fits)
    inputs = _slices("input", topology.n_input, per_pe, 0)
    slices: list[Slice] = []
    for sp in placed:
        slices += _slices(sp.name, sp.population.module.n_neurons, per_pe, len(inputs) + len(slices))
    spread = _spread(inputs + slices, request.chips, request.limits)
    inputs, slices = spread[: len(inputs)], spread[len(inputs) :]
    loads = tuple(_slice_load(sl, inputs, slices, placed, request) for sl in slices)
    return Placement(request.neurons_per_pe, tuple(inputs), tuple(slices), loads, request.chips)


# -- the context -----------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class MappingContext:
    """Everything the SNN rules read: the request, the topology, the scaled populations, the placement."""

    request: Request
    topology: Topology
    populations: tuple[ScaledPopulation, ...]
    placement: Placement

    @property
    def notes(self) -> tuple[str, ...]:
        """The notes of the topology, then of each scaled population, in order."""
        return self.topology.notes + tuple(n for sp in self.populations for n in sp.notes)


def mapping_context(g: Any, request: Request) -> MappingContext:
    """The three stages of the module docstring, for a known neuron model.

    Raises:
        ConfigError: the delays of a mapped layer are not numbers.
    """
    topology = extract_topology(g, request)
    scaled = scale_populations(topology, request)
    return MappingContext(request, topology, scaled, place(topology, scaled, request))
