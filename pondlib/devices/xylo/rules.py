r"""The Xylo mapper's design rules, one function each: ``rule(ctx) -> Iterator[Violation]``.

Each rule reads the :class:`~pondlib.devices.xylo.topology.MappingContext` (read once from the graph by
:func:`~pondlib.devices.xylo.topology.read_topology`) and yields one
:class:`~pondlib.errors.Violation` per offence: the rule id, the module, the offending value, the limit
and a remedy. A rule's id is its function's name and its prose in :data:`RULES` is the first paragraph
of its docstring, so that the table and the checks cannot drift.

:data:`MAPPER_RULES` holds them in checking order (the order in which violations are reported; within a
rule, modules come in topological order): what each module is and whether its parameters can be read;
the structure (one output layer, two neuron layers, one dt); the sizes; the time constants; the
wiring of every weight layer and every neuron layer; the aliases; the recurrent fan-out. Rules that
need structure the graph lacks stay silent rather than report follow-on noise: the dashes of a layer
whose parameters are unreadable, ``input_to_output`` without a hidden layer (that is
``min_neuron_layers``), the wiring of a matrix that cannot be read.

Example:
    >>> import numpy as np
    >>> from pondlib.graph import LIFNeurons, LinearWeights, GraphHolder, connect_modules
    >>> from pondlib.devices.core.rules import rule_table, check_rules
    >>> from pondlib.devices.xylo.limits import XYLO_AUDIO2
    >>> from pondlib.devices.xylo.topology import read_topology
    >>> w = LinearWeights._factory(20, 4, "w_in", None, weights=np.ones((20, 4)))
    >>> h = LIFNeurons._factory(4, 4, "hid", None, tau_mem=0.02, tau_syn=0.01, threshold=1.0, bias=0.0)
    >>> _ = connect_modules(w, h)
    >>> ctx = read_topology(GraphHolder(list(w.input_nodes), list(h.output_nodes), "net", None), XYLO_AUDIO2)
    >>> [(v.rule, v.value, v.limit) for v in check_rules(MAPPER_RULES, ctx)]
    [('min_neuron_layers', '1 LIF layer(s)', '>= 2 (hidden and output)'), ('max_input_channels', 20, 16)]
    >>> RULES["max_input_channels"]
    'input channels <= limits.n_input'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

from pondlib.devices.core.rules import rule_table
from pondlib.devices.xylo.topology import SUPPORTED_MODULES, MappingContext, NeuronLayer, dash_of
from pondlib.errors import Violation

__all__ = ["MAPPER_RULES", "RULES"]

_SUPPORTED_NAMES = ", ".join(t.__name__ for t in SUPPORTED_MODULES)

#: What Xylo's neurons are (the ``limit`` of a ``neuron_model`` violation).
_XYLO_NEURON = "LIF with exponential (bit-shift) decay, reset by subtraction"
_RESET_WORDS = {
    "v_reset": "reset to v_reset",
    "zero": "reset to zero",
    "subtract": "reset by subtraction",
    "none": "no reset",
    "": "no reset",
    "no_threshold": "no threshold (no spikes, no reset)",
}


# -- what each module is -----------------------------------------------------------------------------


def _neuron_model_remedy(kind: str, reason: str) -> str:
    """The group's ``reason`` rephrased as a fix, for users of the Python API and of ``pond map``."""
    reason = reason.strip().rstrip(".")
    if "import with reset='subtract'" in reason:
        # "reset='v_reset': pondlib LIF (and Xylo) reset by subtraction; import with reset='subtract'
        # if the network was trained that way" -- the reset itself is already the violation's value
        if reason.startswith("reset=") and ": " in reason:
            reason = reason.split(": ", 1)[1]
        return (
            reason.replace("import with reset='subtract'", "import it with reset='subtract' (CLI: --reset subtract)")
            + "; otherwise retrain it with reset by subtraction"
        )
    if reason.startswith("decay or gain"):
        return (
            f"{kind}: {reason} (each per-step decay must lie in (0, 1): with the default Euler "
            f"decay tau_syn and tau_mem > dt, check dt (CLI: --dt); and r * w_in > 0); fix the "
            f"time constants or dt, or retrain"
        )
    what = reason or f"{kind} is not a LIF neuron"
    return (
        f"{what}: Xylo runs only current-based LIF neurons; replace the {kind} layer by a "
        f"CubaLIF (NIR) or pondlib.nn.LIF trained with reset by subtraction, and import the "
        f"retrained file with reset='subtract' (CLI: --reset subtract)"
    )


def neuron_model(ctx: MappingContext) -> Iterator[Violation]:
    """neurons are Xylo's LIF: exponential (bit-shift) decay, reset by subtraction
    (a NIR neuron group without an exact LIF equivalent breaks it)

    One violation per NIR neuron group: its kind and reset (value), Xylo's neuron (limit), and the
    group's own reason rephrased as a fix (import with reset by subtraction, or retrain).
    """
    for layer in ctx.layers:
        if not layer.group:
            continue
        m = layer.module
        kind = str(getattr(m, "kind", "") or type(m).__name__)
        reset = str(getattr(m, "reset", "") or "")
        if getattr(m.computational_module, "v_threshold", 0) is None:  # LI, CubaLI, Integrator
            reset = "no_threshold"
        yield Violation(
            "neuron_model",
            layer.name,
            f"{kind}, {_RESET_WORDS.get(reset, f'reset {reset}')}",
            _XYLO_NEURON,
            _neuron_model_remedy(kind, str(getattr(m, "reason", "") or "")),
        )


def invalid_parameter(ctx: MappingContext) -> Iterator[Violation]:
    """parameters have the documented shapes, are finite, time constants and dt > 0

    One violation per parameter that cannot be read (a LIF layer whose inputs are no multiple of its
    neurons, a non-number, a wrong shape, NaN/inf, a time constant or dt <= 0), in module order.
    """
    for p in ctx.problems:
        yield Violation("invalid_parameter", p.module, p.value, p.limit, p.remedy)


def linear_bias(ctx: MappingContext) -> Iterator[Violation]:
    """weights carry no bias (Xylo has none) unless drop_biases=True

    Value: the largest ``|bias|``; an all-zero bias is no bias. With ``drop_biases=True`` the bias is
    dropped with a note in the report instead.
    """
    if ctx.drop_biases:
        return
    for wl in ctx.weight_layers:
        if wl.bias_max > 0:
            yield Violation(
                "linear_bias",
                wl.module.name,
                f"max |bias| = {wl.bias_max:.4g}",
                "no bias on weights",
                "train the Linear without bias, move it to the next LIF's bias, or pass drop_biases=True",
            )


def unsupported_module(ctx: MappingContext) -> Iterator[Violation]:
    """only LinearWeights, LIFNeurons and AliasConnection modules"""
    for m in ctx.unsupported:
        yield Violation(
            "unsupported_module",
            m.name,
            type(m).__name__,
            f"one of {_SUPPORTED_NAMES}",
            f"Xylo supports only {_SUPPORTED_NAMES} (pondlib.nn Linear without bias, LIF, "
            f"Sequential, Residual); replace or remove this module",
        )


# -- structure ---------------------------------------------------------------------------------------


def single_neuron_source(ctx: MappingContext) -> Iterator[Violation]:
    """a signal is written by at most one neuron layer (sums need an alias)

    One violation per signal a layer writes after another layer did.
    """
    for name, other in ctx.wiring.shared_writes:
        yield Violation(
            "single_neuron_source",
            name,
            f"also written by {other}",
            "one neuron layer per signal",
            "sum the layers with a Residual (alias) instead of merging their outputs",
        )


def output_from_neurons(ctx: MappingContext) -> Iterator[Violation]:
    """the graph outputs are exactly the neurons of one LIF layer

    Up to two violations: the first graph output no neuron writes; then several layers writing the
    outputs, or the one output layer's neurons differing from the graph outputs.
    """
    node = ctx.unwritten_output
    if node is not None:
        names = sorted({s.name for s in node.source_modules}) or ["nothing"]
        yield Violation(
            "output_from_neurons",
            ", ".join(names),
            "graph output written by " + ", ".join(type(s).__name__ for s in node.source_modules)
            if node.source_modules
            else "an unconnected graph output",
            "written by output LIF neurons",
            "end the network with a LIF layer (Linear -> LIF)",
        )
    candidates = [ctx.layers[i] for i in ctx.output_candidates]
    out = ctx.output_layer
    if len(candidates) > 1:
        yield Violation(
            "output_from_neurons",
            ", ".join(o.name for o in candidates),
            f"{len(candidates)} neuron layers write the graph outputs",
            "one output LIF layer",
            "end the network with one LIF layer",
        )
    elif out is not None:
        positions = ctx.wiring.out_position
        if {id(n) for n in out.module.output_nodes} != set(positions) or len(positions) != out.n:
            yield Violation(
                "output_from_neurons",
                out.name,
                f"{len(positions)} graph outputs vs {out.n} neurons in the output layer",
                "the graph outputs are exactly the output layer's neurons",
                "make the last LIF layer's outputs the graph outputs",
            )


def min_neuron_layers(ctx: MappingContext) -> Iterator[Violation]:
    """at least two neuron layers (hidden and output)"""
    if len(ctx.layers) < 2:
        yield Violation(
            "min_neuron_layers",
            ctx.graph_name,
            f"{len(ctx.layers)} LIF layer(s)",
            ">= 2 (hidden and output)",
            "use at least Linear -> LIF (hidden) -> Linear -> LIF (output)",
        )


def common_dt(ctx: MappingContext) -> Iterator[Violation]:
    """all neurons share one dt

    Value: layer name -> dt (nan where unreadable); layers whose dt cannot be read do not count.
    """
    finite = [d for d in ctx.dts.values() if math.isfinite(d)]
    if finite and not np.allclose(finite, ctx.dt, rtol=1e-9, atol=0):
        yield Violation(
            "common_dt",
            ", ".join(ctx.dts),
            dict(ctx.dts),
            "one dt for every layer",
            f"set the same dt on every LIF layer (e.g. dt={ctx.dt!r})",
        )


def dt_range(ctx: MappingContext) -> Iterator[Violation]:
    """dt is within the chip's supported range

    Checks the first readable dt (``common_dt`` checks that the others equal it).
    """
    lim = ctx.limits
    if any(math.isfinite(d) for d in ctx.dts.values()) and not lim.dt_min <= ctx.dt <= lim.dt_max:
        yield Violation(
            "dt_range",
            ctx.layers[0].name if ctx.layers else ctx.graph_name,
            f"dt = {ctx.dt} s",
            f"{lim.dt_min}..{lim.dt_max} s",
            "choose dt in the supported range",
        )


# -- sizes -------------------------------------------------------------------------------------------


def max_input_channels(ctx: MappingContext) -> Iterator[Violation]:
    """input channels <= limits.n_input"""
    lim = ctx.limits
    if ctx.n_in > lim.n_input:
        yield Violation(
            "max_input_channels",
            ctx.graph_name,
            ctx.n_in,
            lim.n_input,
            f"use at most {lim.n_input} input channels (reduce the input features)",
        )


def max_hidden_neurons(ctx: MappingContext) -> Iterator[Violation]:
    """hidden neurons <= limits.n_hidden

    Counted over all hidden layers together (they share the chip's hidden neurons).
    """
    lim = ctx.limits
    if ctx.n_hid > lim.n_hidden:
        yield Violation(
            "max_hidden_neurons",
            ", ".join(h.name for h in ctx.hidden),
            ctx.n_hid,
            lim.n_hidden,
            f"use at most {lim.n_hidden} hidden neurons over all hidden layers ({ctx.n_hid - lim.n_hidden} too many)",
        )


def max_output_neurons(ctx: MappingContext) -> Iterator[Violation]:
    """output neurons <= limits.n_output"""
    lim, out = ctx.limits, ctx.output_layer
    if out is not None and out.n > lim.n_output:
        yield Violation(
            "max_output_neurons",
            out.name,
            out.n,
            lim.n_output,
            f"use at most {lim.n_output} output neurons on {lim.name}"
            + (" (or target Xylo Audio 3, 32 outputs)" if lim.n_output < 32 else ""),
        )


def max_synapses(ctx: MappingContext) -> Iterator[Violation]:
    """synapses per hidden neuron <= limits.n_synapses

    One violation per hidden layer with more synapses (LIF inputs per neuron) than the chip.
    """
    lim = ctx.limits
    for layer in ctx.hidden:
        if layer.k > lim.n_synapses:
            yield Violation(
                "max_synapses",
                layer.name,
                layer.k,
                lim.n_synapses,
                f"use at most {lim.n_synapses} synaptic time constant(s) per hidden neuron "
                f"(LIF shape (N * {lim.n_synapses}, N) or less)",
            )


def output_single_synapse(ctx: MappingContext) -> Iterator[Violation]:
    """output neurons have exactly one synapse"""
    out = ctx.output_layer
    if out is not None and out.k != 1:
        yield Violation(
            "output_single_synapse",
            out.name,
            out.k,
            1,
            "give the output LIF layer one synapse per neuron (shape N)",
        )


# -- time constants ----------------------------------------------------------------------------------


def _dash_checked(ctx: MappingContext) -> Iterator[tuple[NeuronLayer, str, np.ndarray]]:
    """(layer, parameter name, tau) of every time constant that becomes a dash: ``tau_mem``, then
    ``tau_syn[:, s]`` per synapse (at most 2 hidden, 1 output), of readable LIF layers with a readable
    dt (not of an output layer whose size differs from the graph outputs)."""
    for layer in ctx.layers:
        if not (layer.ok and math.isfinite(layer.dt)):
            continue
        if layer.role == "output" and layer.n != ctx.n_out:
            continue
        yield layer, "tau_mem", layer.tau_mem
        n_syn = min(layer.k, 1 if layer.role == "output" else 2)
        for s in range(n_syn):
            yield layer, f"tau_syn[:, {s}]", layer.tau_syn[:, s]


def _dash_violation(
    rule: str,
    layer: NeuronLayer,
    param: str,
    tau: np.ndarray,
    mask_of: Callable[[np.ndarray], np.ndarray],
    limit: str,
    fix: str,
) -> Violation | None:
    """A dash violation naming the first offending neuron and the count, or None when none offends.

    ``mask_of(round(log2(tau / dt)))`` marks the offending neurons."""
    dash, r, _ = dash_of(tau, layer.dt)
    mask = mask_of(r)
    if not np.any(mask):
        return None
    idx = np.flatnonzero(mask)
    i = int(idx[0])
    what = (
        f"{param}[{i}] = {tau[i]:.6g} s -> dash {dash[i]:.3f} rounds to "
        f"{int(r[i]) if np.isfinite(r[i]) else r[i]}"
        f" ({idx.size} neuron(s): {idx[:8].tolist()}{'...' if idx.size > 8 else ''})"
    )
    return Violation(rule, layer.name, what, limit, fix)


def dash_zero(ctx: MappingContext) -> Iterator[Violation]:
    """round(log2(tau / dt)) >= 1 (dash 0 wipes the state every step)

    One violation per time constant (``tau_mem``, ``tau_syn[:, s]``) of a layer, naming its first
    offending neuron and how many offend.
    """
    for layer, param, tau in _dash_checked(ctx):
        dt = layer.dt
        fix = (
            f"tau > dt * 2^0.5 = {dt * 2**0.5:.6g} s rounds to dash >= 1 (dash 0 wipes the state "
            f"every step and the neuron goes silent); lengthen {param} or shorten dt"
        )
        v = _dash_violation("dash_zero", layer, param, tau, lambda r: r <= 0, "dash >= 1", fix)
        if v is not None:
            yield v


def dash_too_large(ctx: MappingContext) -> Iterator[Violation]:
    """round(log2(tau / dt)) <= limits.dash_max

    One violation per time constant (``tau_mem``, ``tau_syn[:, s]``) of a layer, naming its first
    offending neuron and how many offend.
    """
    dmax = ctx.limits.dash_max
    for layer, param, tau in _dash_checked(ctx):
        dt = layer.dt
        fix = (
            f"tau < dt * 2^{dmax + 0.5} = {dt * 2 ** (dmax + 0.5):.6g} s rounds to dash <= {dmax}; "
            f"shorten {param} or lengthen dt"
        )
        v = _dash_violation("dash_too_large", layer, param, tau, lambda r: r > dmax, f"dash <= {dmax}", fix)
        if v is not None:
            yield v


# -- wiring ------------------------------------------------------------------------------------------


def no_consecutive_weights(ctx: MappingContext) -> Iterator[Violation]:
    """weights are never fed by weights (no two weight layers in a row)"""
    for wl in ctx.weight_layers:
        if wl.fed_by_weights:
            yield Violation(
                "no_consecutive_weights",
                wl.module.name,
                f"fed by weights {list(wl.fed_by_weights)}",
                "weights fed by neurons or the input",
                "insert a LIF layer between the two weight layers, or multiply them into one",
            )


def output_not_recurrent(ctx: MappingContext) -> Iterator[Violation]:
    """output neurons feed no weights and no aliases

    One violation per weight layer reading output neurons (an alias from them is
    ``alias_source_neurons``).
    """
    out = ctx.output_layer
    for wl in ctx.weight_layers:
        if wl.reads_output:
            yield Violation(
                "output_not_recurrent",
                out.name if out else wl.module.name,
                f"output neurons feed {wl.module.name}",
                "output neurons feed nothing",
                "make the output layer non-recurrent and feed no layer from it",
            )


def weights_feed_neurons(ctx: MappingContext) -> Iterator[Violation]:
    """weights feed neurons only

    Value: what else the weight layer feeds (another module, the graph output, nothing).
    """
    for wl in ctx.weight_layers:
        if wl.bad_sinks:
            yield Violation(
                "weights_feed_neurons",
                wl.module.name,
                f"feeds {list(wl.bad_sinks)}",
                "feeds LIF neurons",
                "follow every weight layer by a LIF layer",
            )


def input_to_output(ctx: MappingContext) -> Iterator[Violation]:
    """input weights feed hidden neurons, never the output layer

    Only non-zero weights count; without a hidden layer this is ``min_neuron_layers``.
    """
    if not ctx.hidden:
        return
    for wl in ctx.weight_layers:
        if wl.input_to_output:
            yield Violation(
                "input_to_output",
                wl.module.name,
                "input channels -> output neurons",
                "input -> hidden only",
                "insert a hidden LIF layer between the input and the output layer",
            )


def _fed_by_weights_only(layer: NeuronLayer) -> Violation:
    """The violation of a layer fed by something other than weights: ``input_through_weights`` when
    that is only the graph input, else ``neurons_receive_weights``."""
    from_input = "the graph input" in layer.fed_by
    return Violation(
        "input_through_weights" if layer.fed_by == ("the graph input",) else "neurons_receive_weights",
        layer.name,
        f"fed by {list(layer.fed_by)}",
        "fed by weights only",
        "put a Linear (weights) in front of the LIF layer"
        + (" (the input must go through weights first)" if from_input else ""),
    )


def input_through_weights(ctx: MappingContext) -> Iterator[Violation]:
    """graph input channels are read only by weights

    One violation per neuron layer reading the graph input directly (and nothing else but weights).
    """
    for layer in ctx.layers:
        if layer.fed_by == ("the graph input",):
            yield _fed_by_weights_only(layer)


def neurons_receive_weights(ctx: MappingContext) -> Iterator[Violation]:
    """neurons are fed only by weights

    One violation per neuron layer fed by another module (and maybe the graph input).
    """
    for layer in ctx.layers:
        if layer.fed_by and layer.fed_by != ("the graph input",):
            yield _fed_by_weights_only(layer)


# -- aliases and recurrent fan-out -------------------------------------------------------------------


def alias_source_neurons(ctx: MappingContext) -> Iterator[Violation]:
    """alias sources are hidden neurons"""
    for a in ctx.aliases:
        if a.bad_source:
            yield Violation(
                "alias_source_neurons",
                a.module.name,
                f"alias source is {a.bad_source}",
                "hidden neurons",
                "a residual's input must come from hidden neurons: put Linear -> LIF before the Residual",
            )


def alias_target_neurons(ctx: MappingContext) -> Iterator[Violation]:
    """alias targets are hidden neurons"""
    for a in ctx.aliases:
        if a.bad_target:
            yield Violation(
                "alias_target_neurons",
                a.module.name,
                f"alias target is {a.bad_target}",
                "hidden neurons",
                "end the residual block with a hidden LIF layer, and follow it by Linear -> LIF",
            )


def alias_target_order(ctx: MappingContext) -> Iterator[Violation]:
    """an alias target id is higher than its source id

    One violation per alias, naming its first backward pair and how many there are.
    """
    for a in ctx.aliases:
        back = a.targets <= a.sources
        if np.any(back):
            i = int(np.flatnonzero(back)[0])
            yield Violation(
                "alias_target_order",
                a.module.name,
                f"neuron {int(a.sources[i])} -> {int(a.targets[i])} ({int(back.sum())} alias(es))",
                "target id > source id",
                "the alias target layer must come after the source layer in the network",
            )


def max_alias_targets(ctx: MappingContext) -> Iterator[Violation]:
    """at most limits.max_alias_targets alias target(s) per neuron

    One violation for the whole graph, naming the neuron with the most targets.
    """
    lim = ctx.limits
    if np.any(ctx.alias_count > lim.max_alias_targets):
        i = int(np.argmax(ctx.alias_count))
        yield Violation(
            "max_alias_targets",
            ", ".join(a.module.name for a in ctx.aliases),
            f"neuron {i} has {int(ctx.alias_count[i])} alias targets",
            lim.max_alias_targets,
            f"alias each hidden neuron to at most {lim.max_alias_targets} target (do not feed "
            f"one layer into several residual sums)",
        )


def max_fanout_rec(ctx: MappingContext) -> Iterator[Violation]:
    """non-zero recurrent weights leaving one hidden neuron <= limits.max_fanout_rec

    One violation per weight layer that first wrote an offending ``weights_rec`` row, naming its worst
    neuron and how many are over; synapses count separately.
    """
    lim = ctx.limits
    if not ctx.n_hid:
        return
    fanout = np.count_nonzero(ctx.weights_rec.reshape(ctx.n_hid, -1), axis=1)
    by_module: dict[str, list[int]] = {}
    for p in np.flatnonzero(fanout > lim.max_fanout_rec).tolist():
        src = int(ctx.rec_source[p])
        by_module.setdefault(ctx.weight_layers[src].module.name if src >= 0 else "weights_rec", []).append(p)
    for name, rows in by_module.items():
        worst = max(rows, key=lambda p: fanout[p])
        yield Violation(
            "max_fanout_rec",
            name,
            f"hidden neuron {worst} has {int(fanout[worst])} non-zero outgoing weights ({len(rows)} neuron(s) over)",
            lim.max_fanout_rec,
            f"prune each hidden neuron's outgoing hidden->hidden weights to at most "
            f"{lim.max_fanout_rec} non-zeros (synapses counted separately)",
        )


#: The rules, in checking (and reporting) order.
MAPPER_RULES: tuple[Callable[[MappingContext], Iterator[Violation]], ...] = (
    neuron_model,
    invalid_parameter,
    linear_bias,
    unsupported_module,
    single_neuron_source,
    output_from_neurons,
    min_neuron_layers,
    common_dt,
    dt_range,
    max_input_channels,
    max_hidden_neurons,
    max_output_neurons,
    max_synapses,
    output_single_synapse,
    dash_zero,
    dash_too_large,
    no_consecutive_weights,
    output_not_recurrent,
    weights_feed_neurons,
    input_to_output,
    input_through_weights,
    neurons_receive_weights,
    alias_source_neurons,
    alias_target_neurons,
    alias_target_order,
    max_alias_targets,
    max_fanout_rec,
)


#: Every design rule the mapper checks: rule id -> what it requires (built from :data:`MAPPER_RULES`: each
#: function's name is its rule id, the first paragraph of its docstring the prose).
RULES: dict[str, str] = rule_table(*MAPPER_RULES)
