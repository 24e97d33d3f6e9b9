"""The design rules of the SpiNNaker2 SNN mapper, one function per check, and the tables built from them.

Every rule reads the :class:`~pondlib.devices.spinnaker2.snn_context.MappingContext` (or one item of it:
a population, a weight layer, a scaled population, a slice's load) and yields a
:class:`~pondlib.errors.Violation` per problem. :data:`SNN_RULES` lists them in the order they run; the
violations of a bad network come in that order (item by item where a rule group runs per item), and
:data:`RULES` (rule id -> what it requires) is built from the same functions.

Example:
    >>> RULES["single_synapse"]
    'one synaptic input per neuron (k = 1; the exc/inh split is by weight sign)'
    >>> RULES["delay_range"]
    'delays are integers in 0..7 (0 for the no-delay models); delays name weight layers of the graph'
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from pondlib.devices.core.rules import Rule, for_each, rule, rule_table
from pondlib.devices.spinnaker2.snn_context import (
    LIF_PARAMETERS,
    SUPPORTED_MODULES,
    MappingContext,
    Population,
    Request,
    ScaledPopulation,
    SliceLoad,
    WeightLayer,
    first_bad_value,
    out_of_range,
    positive_number,
    scale_is_usable,
)
from pondlib.devices.spinnaker2.specification import NEURON_MODELS
from pondlib.errors import Violation
from pondlib.graph.modules import LIFNeurons

__all__ = ["SNN_RULES", "WARNING_RULES", "RULES", "WARNINGS", "unknown_neuron_model"]


# -- the request -----------------------------------------------------------------------------------
@rule("unknown_neuron_model")
def unknown_neuron_model(request: Request) -> Iterator[Violation]:
    """neuron_model is one of NEURON_MODELS"""
    if request.model is None:
        yield Violation(
            "unknown_neuron_model",
            "<graph>",
            request.neuron_model,
            sorted(NEURON_MODELS),
            "pass one of the model names listed",
        )


# -- the graph -------------------------------------------------------------------------------------
@rule("unsupported_module")
def unsupported_module(ctx: MappingContext) -> Iterator[Violation]:
    """only LinearWeights and LIFNeurons modules"""
    for m in ctx.topology.unsupported:
        yield Violation(
            "unsupported_module",
            m.name,
            type(m).__name__,
            ", ".join(t.__name__ for t in SUPPORTED_MODULES),
            "SpiNNaker2 SNNs are weights and LIF populations (no aliases: add the weights)",
        )


@rule("single_synapse")
def single_synapse(pop: Population) -> Iterator[Violation]:
    """one synaptic input per neuron (k = 1; the exc/inh split is by weight sign)"""
    m = pop.module
    if m.n_synapses != 1:
        yield Violation(
            "single_synapse",
            m.name,
            f"{m.n_synapses} synapses per neuron",
            1,
            "use one synaptic input per neuron (nn.LIF(N) with N inputs); exc/inh come from the sign",
        )


@rule("invalid_parameter")
def invalid_lif_parameters(pop: Population) -> Iterator[Violation]:
    """finite LIF parameters (tau_mem, tau_syn, threshold, bias) of the documented shapes; tau and
    threshold > 0"""
    m = pop.module
    for name in LIF_PARAMETERS:
        arr = pop.values[name]
        if arr is None:
            yield Violation(
                "invalid_parameter",
                m.name,
                f"{name} of type {type(getattr(m, name)).__name__}",
                f"real numbers of shape ({m.n_neurons},)",
                f"fix {name} of {m.name}",
            )
            continue
        i = first_bad_value(name, arr)
        if i is not None:
            yield Violation(
                "invalid_parameter",
                m.name,
                f"{name}[{i}] = {arr[i]}",
                "finite" + ("" if name == "bias" else " and > 0"),
                f"fix {name} of {m.name}",
            )


@rule("invalid_parameter", extends=True)
def invalid_dt(pop: Population) -> Iterator[Violation]:
    """dt a finite number > 0 (seconds)"""
    m = pop.module
    if not positive_number(m.dt):
        yield Violation("invalid_parameter", m.name, f"dt = {m.dt!r}", "a finite number > 0 s", "pass a positive dt")


@rule("common_dt")
def common_dt(ctx: MappingContext) -> Iterator[Violation]:
    """all populations share one dt (the tick)"""
    dts = list(ctx.topology.dts)
    if len(dts) > 1:
        yield Violation("common_dt", "<graph>", dts, "one dt", "give every LIF layer the same dt (the tick)")


@rule("neurons_receive_weights")
def neurons_receive_weights(ctx: MappingContext) -> Iterator[Violation]:
    """populations are fed only by weights"""
    for pop in ctx.topology.populations:
        if pop.foreign_feed is not None:
            yield Violation(
                "neurons_receive_weights",
                pop.name,
                f"fed by {pop.foreign_feed}",
                "weights only",
                "put a Linear layer in front of every LIF layer",
            )


# -- weight layers ---------------------------------------------------------------------------------
@rule("no_consecutive_weights")
def no_consecutive_weights(layer: WeightLayer) -> Iterator[Violation]:
    """a neuron population between every two weight layers"""
    if layer.fed_by_weights:
        yield Violation(
            "no_consecutive_weights",
            layer.name,
            f"fed by weights {list(layer.fed_by_weights)}",
            "a population between every two weight layers",
            "insert a LIF layer between the two Linear layers (or multiply them into one)",
        )


@rule("single_source")
def single_source(layer: WeightLayer) -> Iterator[Violation]:
    """a weight layer reads the graph input or one population"""
    if layer.fed_by_weights:
        return  # no_consecutive_weights
    if layer.reads == "several_populations":
        yield Violation(
            "single_source",
            layer.name,
            "reads more than one population",
            "one source",
            "split the weight layer per source population",
        )
    elif layer.reads == "mixed":
        yield Violation(
            "single_source",
            layer.name,
            f"reads {list(layer.source_names) or 'graph input'} (mixed)",
            "the graph input or one population",
            "split the weight layer per source",
        )


@rule("weights_feed_neurons")
def weights_feed_neurons(layer: WeightLayer) -> Iterator[Violation]:
    """every weight layer feeds exactly one population"""
    if not layer.source_ok:
        return  # no_consecutive_weights or single_source
    if layer.post is None:
        yield Violation(
            "weights_feed_neurons",
            layer.name,
            f"feeds {list(layer.sink_names) or 'the graph output'}",
            "exactly one LIF population",
            "end every weight layer in one LIF layer",
        )
    elif layer.post.n_synapses == 1 and layer.partial:  # several synapses: single_synapse of the population
        yield Violation(
            "weights_feed_neurons",
            layer.name,
            "feeds part of several populations",
            "exactly one LIF population",
            "end every weight layer in one LIF layer",
        )


@rule("linear_bias")
def linear_bias(layer: WeightLayer) -> Iterator[Violation]:
    """weights carry no bias (put constant input in the LIF bias)"""
    if layer.structure_ok and layer.module.has_bias:
        yield Violation(
            "linear_bias",
            layer.name,
            f"bias with {int(np.sum(layer.module.biases != 0))} non-zero entries",
            "no bias",
            "move the constant input into the LIF bias (i_offset)",
        )


@rule("invalid_parameter", extends=True)
def invalid_weights(layer: WeightLayer) -> Iterator[Violation]:
    """finite real weights"""
    if not layer.structure_ok:
        return
    w = layer.weights
    if w is None:
        yield Violation(
            "invalid_parameter",
            layer.name,
            f"weights of type {type(layer.module.weights).__name__}",
            "real numbers",
            f"fix the weights of {layer.name}",
        )
        return
    bad = ~np.isfinite(w)
    if np.any(bad):
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        yield Violation(
            "invalid_parameter",
            layer.name,
            f"weight{list(i)} = {w[i]} ({int(bad.sum())} weight(s))",
            "finite",
            f"replace the NaN/inf weights of {layer.name}",
        )


@rule("delay_range")
def delay_range(layer: WeightLayer) -> Iterator[Violation]:
    """delays are integers in 0..7 (0 for the no-delay models)"""
    if not layer.mapped or layer.delays is None:
        return
    arr, shape, max_delay = layer.delays, layer.weights.shape, layer.max_delay
    if not (arr.ndim == 0 or arr.shape == shape):
        yield Violation(
            "delay_range",
            layer.name,
            f"delays of shape {arr.shape}",
            f"a scalar or {shape}",
            "pass one delay per synapse or one for the layer",
        )
        return
    arr = np.broadcast_to(arr, shape)
    finite = np.isfinite(arr)
    bad = ~finite | (arr != np.rint(np.where(finite, arr, 0.0))) | (arr < 0) | (arr > max_delay)
    if np.any(bad):
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        yield Violation(
            "delay_range",
            layer.name,
            f"delay{list(i)} = {arr[i]:g} ({int(bad.sum())} synapse(s))",
            f"an integer in 0..{max_delay} ticks",
            "use delays of at most 7 ticks (lif, lif_curr_exp); the *_no_delay models take only 0"
            if max_delay
            else "use a model with delays (lif, lif_curr_exp) or delays 0",
        )


@rule("delay_range", extends=True)
def delays_of_unknown_layers(ctx: MappingContext) -> Iterator[Violation]:
    """delays name weight layers of the graph"""
    layers = ctx.topology.layers
    mapped = {la.name for la in layers if la.mapped}  # a layer not mapped (a structural violation) reads none
    for name in ctx.request.delays:
        if name not in mapped:
            yield Violation(
                "delay_range",
                name,
                "delays for an unknown weight layer",
                [la.name for la in layers],
                "name a LinearWeights module of the graph",
            )


@rule("invalid_parameter", extends=True)
def invalid_weight_scales(ctx: MappingContext) -> Iterator[Violation]:
    """fixed weight scales finite and > 0 for known populations"""
    names = [pop.name for pop in ctx.topology.populations]
    for name, value in ctx.request.weight_scale.items():
        if name not in set(names):
            yield Violation(
                "invalid_parameter",
                str(name),
                "a weight scale for an unknown population",
                names,
                "name a LIF population of the graph in weight_scale",
            )
        elif not positive_number(value):
            yield Violation(
                "invalid_parameter",
                str(name),
                f"weight_scale = {value!r}",
                "a finite number > 0 (chip units per float unit)",
                "pass a positive weight scale, or drop it to let the mapper choose",
            )


@rule("output_from_neurons")
def output_from_neurons(ctx: MappingContext) -> Iterator[Violation]:
    """the graph outputs are the neurons of one population"""
    t = ctx.topology
    lifs = [s for s in t.output_sources if isinstance(s, LIFNeurons)]
    if len(lifs) != 1 or len(t.output_sources) != 1 or not t.output_is_whole_population:
        yield Violation(
            "output_from_neurons",
            "<graph>",
            f"outputs written by {[s.name for s in t.output_sources]}",
            "all neurons of one LIF population, in order",
            "end the network in one LIF layer",
        )


# -- quantization ----------------------------------------------------------------------------------
@rule("parameter_range")
def parameter_range(sp: ScaledPopulation) -> Iterator[Violation]:
    """weight scale finite and > 0; scaled threshold in (0, 2^64] and non-zero in float32, scaled bias
    within 2^64"""
    fix = "rescale the weights, threshold and bias of the layer together (their ratio sets the scale)"
    s = sp.scale
    if not scale_is_usable(s):
        yield Violation(
            "parameter_range",
            sp.name,
            f"weight scale {s:g} (largest incoming |weight| {sp.max_weight:.4g})",
            "a finite scale > 0",
            fix,
        )
        return
    for label, arr, positive in (("threshold", sp.threshold, True), ("bias", sp.bias, False)):
        bad = out_of_range(arr, positive)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            yield Violation(
                "parameter_range",
                sp.name,
                f"{label}[{i}] x scale = {arr[i]:.4g} (scale {s:.4g})",
                f"{'in [1.2e-38, ' if positive else 'within +-'}2^64{']' if positive else ''} as float32",
                fix,
            )


@rule("weight_range")
def weight_range(sp: ScaledPopulation) -> Iterator[Violation]:
    """weights after scaling within the synapse word's range"""
    wmax = sp.word_max
    for pr in sp.incoming:
        q = pr.quantized
        over = np.abs(q) > wmax
        if np.any(over):
            i = tuple(int(v) for v in np.argwhere(over)[0])
            yield Violation(
                "weight_range",
                pr.name,
                f"scaled weight{list(i)} = {q[i]:g} ({int(over.sum())} weight(s))",
                f"-{wmax}..{wmax}",
                f"lower weight_scale of {pr.post} to <= {wmax / sp.max_weight:.4g} or drop the fixed scale",
            )


# -- placement -------------------------------------------------------------------------------------
@rule("neurons_per_pe")
def neurons_per_pe(ctx: MappingContext) -> Iterator[Violation]:
    """neurons per PE <= limits.neurons_per_pe (250)"""
    lim, npe = ctx.request.limits, ctx.placement.neurons_per_pe
    if npe > lim.neurons_per_pe:
        yield Violation(
            "neurons_per_pe", "<placement>", npe, lim.neurons_per_pe, f"use neurons_per_pe <= {lim.neurons_per_pe}"
        )


@rule("neuron_index")
def neuron_index(ctx: MappingContext) -> Iterator[Violation]:
    """neurons per PE <= 2^neuron_index_bits (256: 8-bit target index)"""
    lim, npe = ctx.request.limits, ctx.placement.neurons_per_pe
    if npe > lim.max_index:
        yield Violation(
            "neuron_index",
            "<placement>",
            npe,
            lim.max_index,
            f"a synapse word addresses {lim.max_index} neurons: use neurons_per_pe <= {lim.max_index}",
        )


@rule("max_pes")
def max_pes(ctx: MappingContext) -> Iterator[Violation]:
    """PEs used <= usable PEs per chip x chips (and chips <= PEs used)"""
    lim, pe, chips = ctx.request.limits, ctx.placement.pes_used, ctx.request.chips
    cap = lim.usable_pes_per_chip * chips if chips > 1 else lim.usable_pes
    if pe > cap:
        need = math.ceil(pe / lim.usable_pes_per_chip)
        yield Violation(
            "max_pes",
            "<placement>",
            pe,
            cap,
            f"use at most {cap} PEs: fewer neurons, or {need} chips (mapper(graph, 'board', chips={need}))",
        )
    if chips > pe:
        yield Violation("max_pes", "<placement>", f"{chips} chips for {pe} PEs", f"<= {pe} chips", "use fewer chips")


@rule("row_length")
def row_length(load: SliceLoad) -> Iterator[Violation]:
    """synapse row <= limits.max_row_words words"""
    lim = load.limits
    for name, longest in load.longest_rows:
        if longest is not None and longest > lim.max_row_words:
            yield Violation(
                "row_length",
                name,
                f"row of {longest} words (PE {load.slice.pe})",
                lim.max_row_words,
                f"use slices of at most {lim.max_row_words} neurons",
            )


@rule("memory_per_pe")
def memory_per_pe(load: SliceLoad) -> Iterator[Violation]:
    """synapse rows + neuron parameters + routing entries + buffers <= snn_data_bytes"""
    lim, sl, mem = load.limits, load.slice, load.memory
    total = sum(mem.values())
    if total > lim.snn_data_bytes:
        yield Violation(
            "memory_per_pe",
            f"{sl.population}[{sl.start}:{sl.stop}]",
            f"{total} B on PE {sl.pe} ({', '.join(f'{k} {v}' for k, v in mem.items())})",
            f"{lim.snn_data_bytes} B",
            "use smaller slices (neurons_per_pe), sparser weights, or fewer recorded ticks",
        )


@rule("deadline_missed")
def deadline_missed(ctx: MappingContext) -> Iterator[Violation]:
    """per-tick work at the expected spike rate, plus the hop latency of spikes from other chips, fits in one
    tick"""
    lim, tick = ctx.request.limits, ctx.topology.tick
    budget = lim.clock_hz * tick
    for load in ctx.placement.loads:
        cycles = load.cycles + load.hop_s * lim.clock_hz
        if cycles > budget:
            yield Violation(
                "deadline_missed",
                f"PE {load.slice.pe}",
                f"{cycles:.0f} cycles per tick" + (f" ({load.hop_s * 1e6:g} us of hops)" if load.hop_s else ""),
                f"{budget:.0f} cycles ({tick * 1e3:g} ms at {lim.clock_hz / 1e6:g} MHz)",
                "use smaller slices, a longer tick or sparser weights",
            )


#: The rules on the mapping context, in the order they run (after :func:`unknown_neuron_model`, which
#: runs on the request alone: without a known model nothing else can be checked).
SNN_RULES: tuple[Rule, ...] = (
    unsupported_module,
    for_each("topology.populations", single_synapse, invalid_lif_parameters, invalid_dt),
    common_dt,
    neurons_receive_weights,
    for_each(
        "topology.layers",
        no_consecutive_weights,
        single_source,
        weights_feed_neurons,
        linear_bias,
        invalid_weights,
        delay_range,
    ),
    delays_of_unknown_layers,
    invalid_weight_scales,
    output_from_neurons,
    for_each("populations", parameter_range, weight_range),
    neurons_per_pe,
    neuron_index,
    max_pes,
    for_each("placement.loads", row_length, memory_per_pe),
)
#: Rules reported as warnings (in ``report.warnings`` and as a ``DeadlineWarning``), not errors.
WARNING_RULES: tuple[Rule, ...] = (deadline_missed,)

#: Every design rule the mapper checks: rule id -> what it requires (built from the functions).
RULES: dict[str, str] = rule_table(unknown_neuron_model, *SNN_RULES)
#: The warning rules: rule id -> what it requires.
WARNINGS: dict[str, str] = rule_table(*WARNING_RULES)
