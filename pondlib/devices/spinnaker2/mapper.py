r"""Map a spiking graph onto SpiNNaker2 PEs: a quantized, placed :class:`Specification`.

Input: a graph (or a ``pondlib.nn`` network) of :class:`~pondlib.graph.LinearWeights` and
:class:`~pondlib.graph.LIFNeurons` (one synapse per neuron), with a neuron population between every
two weight layers; recurrent weights (a population feeding itself) are allowed. The graph inputs are
``n_input`` spike sources; the population writing the graph outputs is the output.

What the mapper does, in order:

1. **Neuron parameters** (float32, chip units). For a population with threshold :math:`\theta`,
   bias :math:`b`, :math:`\tau_{mem}`, :math:`\tau_{syn}` and weight scale :math:`s`:

   .. math::

       \alpha = e^{-dt/\tau_{mem}}, \quad \mathrm{exc\_decay} = \mathrm{inh\_decay} = \beta = e^{-dt/\tau_{syn}},
       \quad \mathrm{threshold} = s\,\theta, \quad \mathrm{i\_offset} = s\,b, \quad v_{reset} = 0

2. **Weights** quantized *per target population* to the synapse word's range :math:`[-w_m, w_m]`
   (:math:`w_m = 15` for ``lif`` / ``lif_curr_exp``, 127 for the ``*_no_delay`` models). The float
   model adds its input *before* the synaptic decay (:math:`I \leftarrow \beta (I + x)`) while the chip
   adds it after (:math:`I \leftarrow \beta I + x`), so ``lif_curr_exp`` weights are folded with
   :math:`\beta` of the target neuron:

   .. math::

       \tilde W = W \,\mathrm{diag}(\beta), \qquad s = w_m / \max|\tilde W|, \qquad
       W_{int} = \mathrm{round}(s \tilde W) \ \text{(half to even)}

   and the quantization error :math:`\|W_{int}/s - \tilde W\| / \|\tilde W\|` is reported per
   projection. (``lif`` has no synaptic current: there :math:`\tilde W = W` and :math:`\tau_{syn}` is
   dropped, with a note.) A fixed ``weight_scale`` per population may be given instead; then weights
   outside the word's range are violations.

3. **Placement**: each population is split into slices of at most ``neurons_per_pe`` (250) neurons, one
   PE per slice; the inputs are spike-source slices on their own PEs. PEs are numbered in order
   (inputs, then populations in topological order).

4. **Memory per PE** (bytes): synapse rows (``row_header_bytes`` + 2 B per word for every source
   neuron with a synapse into the slice), neuron parameters and state, routing (master population
   table) entries (one per source slice that sends to the PE), input ring buffers
   (``(max_delay + 2)`` slots x exc/inh x 4 B per neuron) and recording buffers
   (``record_ticks`` x (spike bit-field + 4 B per neuron when ``record_v``)).

5. **Per-tick work** at the expected rate ``spike_rate`` (spikes per source neuron per tick):
   ``overhead + N cycles_per_neuron + rate (R cycles_per_row + W cycles_per_synapse)`` cycles against
   ``clock_hz * tick`` (a warning ``deadline_missed``, not an error: the chip then runs late).

Every rule of :data:`RULES` is checked and every violation is raised together in one
:class:`~pondlib.errors.ConstraintError` (rule, module, value, limit, remedy). Nothing is modified.
Values that are design-rule problems are violations: NaN/inf weights or parameters and bad fixed
scales (``invalid_parameter``), a scale that is not finite (subnormal weights) or a scaled threshold /
bias outside float32 or beyond 2^64 (``parameter_range``). Malformed arguments (wrong types, a
fractional ``neurons_per_pe``, ``record_v="False"``, delays of strings) raise
:class:`~pondlib.errors.ConfigError` naming the argument. A time constant far below the tick decays
fully in one tick (alpha or beta = 0).

Example:
    >>> import numpy as np
    >>> from pondlib import nn
    >>> rng = np.random.default_rng(0)
    >>> net = nn.Sequential(nn.Linear(16, 300, weight=rng.normal(size=(16, 300))), nn.LIF(300),
    ...                     nn.Linear(300, 10, weight=rng.normal(size=(300, 10))), nn.LIF(10))
    >>> spec = mapper(net)
    >>> [(s.population, s.start, s.stop, s.pe) for s in spec.slices]
    [('1_LIF', 0, 250, 1), ('1_LIF', 250, 300, 2), ('3_LIF', 0, 10, 3)]
    >>> spec.report.pes_used, spec.output, int(np.abs(spec.projections[0].weights).max())
    (4, '3_LIF', 15)
    >>> round(spec.report.quantization_error["0_Linear"], 3) < 0.1
    True

    Breaking several rules at once reports them all:

    >>> try:
    ...     mapper(net, delays={"0_Linear": 9}, neurons_per_pe=300)
    ... except ConstraintError as err:
    ...     print(sorted(set(err.rules)))
    ['delay_range', 'neuron_index', 'neurons_per_pe', 'row_length']
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.devices.core.lookup import as_graph
from pondlib.devices.core.numerics import relative_error
from pondlib.devices.core.rules import raise_violations
from pondlib.devices.spinnaker2.limits import SpiNNaker2Limits, get_limits
from pondlib.devices.spinnaker2.specification import (
    NEURON_MODELS,
    PARAM_MAX,
    DeadlineWarning,
    LIFOptions,
    MappingReport,
    PopulationSpec,
    ProjectionSpec,
    Slice,
    Specification,
)
from pondlib.errors import ConfigError, ConstraintError, GraphError, QuantizationError, Violation  # noqa: F401
from pondlib.graph.modules import LIFNeurons, LinearWeights
from pondlib.graph.utils import source_modules_of, topological_order
from pondlib.validate import check_bool, check_float, check_int, check_type

__all__ = [
    "mapper",
    "RULES",
    "SUPPORTED_MODULES",
    "Specification",
    "PopulationSpec",
    "ProjectionSpec",
    "Slice",
    "MappingReport",
    "DeadlineWarning",
]

#: Graph module types the SpiNNaker2 SNN mapper understands.
SUPPORTED_MODULES: tuple[type, ...] = (LinearWeights, LIFNeurons)

#: Every design rule the mapper checks: rule id -> what it requires.
RULES: dict[str, str] = {
    "unsupported_module": "only LinearWeights and LIFNeurons modules",
    "unknown_neuron_model": "neuron_model is one of NEURON_MODELS",
    "invalid_parameter": "finite parameters and weights of the documented shapes; tau, dt, threshold > 0; "
    "fixed weight scales finite and > 0 for known populations",
    "single_synapse": "one synaptic input per neuron (k = 1; the exc/inh split is by weight sign)",
    "common_dt": "all populations share one dt (the tick)",
    "no_consecutive_weights": "a neuron population between every two weight layers",
    "weights_feed_neurons": "every weight layer feeds exactly one population",
    "neurons_receive_weights": "populations are fed only by weights",
    "single_source": "a weight layer reads the graph input or one population",
    "output_from_neurons": "the graph outputs are the neurons of one population",
    "linear_bias": "weights carry no bias (put constant input in the LIF bias)",
    "weight_range": "weights after scaling within the synapse word's range",
    "parameter_range": "weight scale finite and > 0; scaled threshold in (0, 2^64] and non-zero in float32, "
    "scaled bias within 2^64",
    "delay_range": "delays are integers in 0..7 (0 for the no-delay models)",
    "neurons_per_pe": "neurons per PE <= limits.neurons_per_pe (250)",
    "neuron_index": "neurons per PE <= 2^neuron_index_bits (256: 8-bit target index)",
    "max_pes": "PEs used <= usable PEs per chip x chips",
    "row_length": "synapse row <= limits.max_row_words words",
    "memory_per_pe": "synapse rows + neuron parameters + routing entries + buffers <= snn_data_bytes",
}
#: Largest ``spike_rate`` (expected spikes per source neuron per tick) the work estimate takes.
SPIKE_RATE_MAX = 1e6

#: Rules reported as warnings (in ``report.warnings`` and as a :class:`DeadlineWarning`).
WARNINGS: dict[str, str] = {
    "deadline_missed": "per-tick work at the expected spike rate fits in one tick",
}


# -- helpers ---------------------------------------------------------------------------------------
def _node_index(nodes: list) -> dict[int, int]:
    return {id(n): i for i, n in enumerate(nodes)}


@dataclass
class _Ctx:
    limits: SpiNNaker2Limits
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, rule: str, module: str, value: Any, limit: Any, remedy: str) -> None:
        self.violations.append(Violation(rule, module, value, limit, remedy))


def _lif_params(ctx: _Ctx, m: LIFNeurons) -> dict[str, np.ndarray] | None:
    """Checked float64 copies of a LIF module's parameters (k = 1), or None when unusable."""
    ok = True
    if m.n_synapses != 1:
        ctx.add(
            "single_synapse",
            m.name,
            f"{m.n_synapses} synapses per neuron",
            1,
            "use one synaptic input per neuron (nn.LIF(N) with N inputs); exc/inh come from the sign",
        )
        ok = False
    out = {}
    for name in ("tau_mem", "tau_syn", "threshold", "bias"):
        arr = _module_array(ctx, m, name)
        if arr is None:
            ok = False
            continue
        bad = ~np.isfinite(arr)
        if name != "bias":
            bad |= ~(arr > 0)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            ctx.add(
                "invalid_parameter",
                m.name,
                f"{name}[{i}] = {arr[i]}",
                "finite" + ("" if name == "bias" else " and > 0"),
                f"fix {name} of {m.name}",
            )
            ok = False
        out[name] = arr
    if not _positive_number(m.dt):
        ctx.add("invalid_parameter", m.name, f"dt = {m.dt!r}", "a finite number > 0 s", "pass a positive dt")
        ok = False
    if _positive_number(m.max_spikes_per_dt) and m.max_spikes_per_dt > 1:
        ctx.notes.append(
            f"{m.name}: the chip emits at most one spike per neuron per tick "
            f"(the float model allows {m.max_spikes_per_dt:g}); train with "
            "max_spikes_per_dt=1 to match"
        )
    return out if ok else None


def _positive_number(value: Any) -> bool:
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and bool(np.isfinite(value))
        and value > 0
    )


def _module_array(ctx: _Ctx, m: LIFNeurons, name: str) -> np.ndarray | None:
    """A LIF parameter as float64 (N,) (the first synapse's column), or None with a violation."""
    try:
        arr = np.asarray(getattr(m, name))
        if arr.dtype.kind not in "biuf":
            raise TypeError(arr.dtype)
        return arr.astype(np.float64).reshape(m.n_neurons, -1)[:, 0]
    except (TypeError, ValueError):
        ctx.add(
            "invalid_parameter",
            m.name,
            f"{name} of type {type(getattr(m, name)).__name__}",
            f"real numbers of shape ({m.n_neurons},)",
            f"fix {name} of {m.name}",
        )
        return None


def _delays(ctx: _Ctx, name: str, raw: Any, shape: tuple[int, int], max_delay: int) -> np.ndarray:
    if raw is None:
        return np.zeros(shape, dtype=np.int64)
    try:
        arr = np.asarray(raw)
    except (TypeError, ValueError):
        arr = np.asarray(None)
    if arr.dtype.kind not in "biuf":  # malformed (a string, complex, ragged): not a range problem
        raise ConfigError(
            f"delays[{name!r}]",
            value=f"{type(raw).__name__} of dtype {arr.dtype}",
            limit="integers (a scalar or one per synapse)",
            where="spinnaker2.mapper",
            fix="pass whole numbers of ticks",
        )
    arr = arr.astype(np.float64)
    if arr.ndim == 0 or arr.shape == shape:
        arr = np.broadcast_to(arr, shape)
    else:
        ctx.add(
            "delay_range",
            name,
            f"delays of shape {arr.shape}",
            f"a scalar or {shape}",
            "pass one delay per synapse or one for the layer",
        )
        return np.zeros(shape, dtype=np.int64)
    finite = np.isfinite(arr)
    bad = ~finite | (arr != np.rint(np.where(finite, arr, 0.0))) | (arr < 0) | (arr > max_delay)
    if np.any(bad):
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        ctx.add(
            "delay_range",
            name,
            f"delay{list(i)} = {arr[i]:g} ({int(bad.sum())} synapse(s))",
            f"an integer in 0..{max_delay} ticks",
            "use delays of at most 7 ticks (lif, lif_curr_exp); the *_no_delay models take only 0"
            if max_delay
            else "use a model with delays (lif, lif_curr_exp) or delays 0",
        )
    return np.clip(np.where(np.isfinite(arr), np.rint(arr), 0), 0, max_delay).astype(np.int64)


def _weights(ctx: _Ctx, lin: LinearWeights) -> np.ndarray | None:
    """The weight layer's weights as finite float64, or None with an ``invalid_parameter`` violation."""
    try:
        w = np.asarray(lin.weights)
        if w.dtype.kind not in "biuf":
            raise TypeError(w.dtype)
        w = w.astype(np.float64)
    except (TypeError, ValueError):
        ctx.add(
            "invalid_parameter",
            lin.name,
            f"weights of type {type(lin.weights).__name__}",
            "real numbers",
            f"fix the weights of {lin.name}",
        )
        return None
    bad = ~np.isfinite(w)
    if np.any(bad):
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        ctx.add(
            "invalid_parameter",
            lin.name,
            f"weight{list(i)} = {w[i]} ({int(bad.sum())} weight(s))",
            "finite",
            f"replace the NaN/inf weights of {lin.name}",
        )
        return None
    return w


def _scaled(values: np.ndarray, s: float) -> np.ndarray:
    """``values * s`` in float64 without overflow warnings (an overflow is inf, reported by the caller)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return values * s


def _params_fit(ctx: _Ctx, name: str, s: float, thr: np.ndarray, off: np.ndarray, wabs: float) -> bool:
    """Whether the scale and the scaled threshold / bias are representable (``parameter_range``)."""
    fix = "rescale the weights, threshold and bias of the layer together (their ratio sets the scale)"
    if not (np.isfinite(s) and s > 0):
        ctx.add(
            "parameter_range",
            name,
            f"weight scale {s:g} (largest incoming |weight| {wabs:.4g})",
            "a finite scale > 0",
            fix,
        )
        return False
    ok = True
    f32_tiny = float(np.finfo(np.float32).tiny)
    for label, arr, positive in (("threshold", thr, True), ("bias", off, False)):
        mag = np.abs(arr)
        bad = ~np.isfinite(arr) | (mag > PARAM_MAX) | ((mag < f32_tiny) & positive)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            ctx.add(
                "parameter_range",
                name,
                f"{label}[{i}] x scale = {arr[i]:.4g} (scale {s:.4g})",
                f"{'in [1.2e-38, ' if positive else 'within +-'}2^64{']' if positive else ''} as float32",
                fix,
            )
            ok = False
    return ok


# -- the mapper ------------------------------------------------------------------------------------
def mapper(
    graph: Any,
    limits: SpiNNaker2Limits | str | None = None,
    *,
    neuron_model: str = "lif_curr_exp",
    delays: Mapping[str, Any] | None = None,
    weight_scale: Mapping[str, float] | None = None,
    neurons_per_pe: int | None = None,
    spike_rate: float = 0.1,
    record_ticks: int = 100,
    record_v: bool = False,
    options: LIFOptions | None = None,
) -> Specification:
    """Map a spiking graph onto SpiNNaker2 (see the module docstring for every step and rule).

    Args:
        graph: a graph module or a ``pondlib.nn`` network (``.as_graph()``).
        limits: a :class:`SpiNNaker2Limits` or a short name (``chip``, ``board``); default one chip.
        neuron_model: one of :data:`~pondlib.devices.spinnaker2.config.NEURON_MODELS`.
        delays: weight layer name -> delays in ticks (scalar or (N_pre, N_post) integers).
        weight_scale: population name -> fixed weight scale (chip units per float unit).
        neurons_per_pe: slice size (default ``limits.neurons_per_pe``).
        spike_rate: expected spikes per neuron per tick, for the per-tick work estimate.
        record_ticks: ticks of recording buffered on each PE (memory accounting).
        record_v: whether membranes are recorded too (4 B per neuron per tick).
        options: neuron update options carried into the configuration (default :class:`LIFOptions`).

    Returns:
        A :class:`Specification`.

    Raises:
        ConstraintError: every violated rule of :data:`RULES`, together.
        GraphError: the input is not a graph.
    """
    lim = get_limits(limits)
    g = as_graph(graph)
    where = "spinnaker2.mapper"
    check_type(neuron_model, "neuron_model", str, where=where, error=ConfigError)
    for key, value in (("delays", delays), ("weight_scale", weight_scale)):
        if value is not None:
            check_type(value, key, Mapping, where=where, error=ConfigError, fix=f"pass a dict name -> value as {key}")
    if neurons_per_pe is not None:
        neurons_per_pe = check_int(neurons_per_pe, "neurons_per_pe", lo=1, where=where, error=ConfigError)
    spike_rate = check_float(spike_rate, "spike_rate", lo=0.0, hi=SPIKE_RATE_MAX, where=where, error=ConfigError)
    record_ticks = check_int(record_ticks, "record_ticks", lo=0, where=where, error=ConfigError)
    record_v = check_bool(record_v, "record_v", where=where, error=ConfigError)
    if options is not None:
        check_type(options, "options", LIFOptions, where=where, error=ConfigError)
        if options.problems():
            raise ConfigError(problems=options.problems(), where=where)
    ctx = _Ctx(lim)
    model = NEURON_MODELS.get(neuron_model)
    if model is None:
        ctx.add(
            "unknown_neuron_model", "<graph>", neuron_model, sorted(NEURON_MODELS), "pass one of the model names listed"
        )
        raise_violations(ctx.violations, lim.name)
    wmax = lim.weight_range(with_delays=model.word.delay_bits > 0)[1]
    max_delay = model.word.max_delay
    delays = dict(delays or {})
    scales_user = dict(weight_scale or {})

    order = topological_order(g)
    input_idx = _node_index(list(g.input_nodes))
    lifs: list[LIFNeurons] = []
    lins: list[LinearWeights] = []
    for m in order:
        if isinstance(m, LIFNeurons):
            lifs.append(m)
        elif isinstance(m, LinearWeights):
            lins.append(m)
        else:
            ctx.add(
                "unsupported_module",
                m.name,
                type(m).__name__,
                ", ".join(t.__name__ for t in SUPPORTED_MODULES),
                "SpiNNaker2 SNNs are weights and LIF populations (no aliases: add the weights)",
            )
    params = {m.name: _lif_params(ctx, m) for m in lifs}
    dts = sorted({float(m.dt) for m in lifs if _positive_number(m.dt)})
    if len(dts) > 1:
        ctx.add("common_dt", "<graph>", dts, "one dt", "give every LIF layer the same dt (the tick)")
    tick = dts[0] if dts else lim.tick_s

    # Populations are fed only by weights.
    for m in lifs:
        for n in m.input_nodes:
            bad = [s.name for s in n.source_modules if not isinstance(s, LinearWeights)]
            if id(n) in input_idx or bad:
                ctx.add(
                    "neurons_receive_weights",
                    m.name,
                    f"fed by {bad[0] if bad else 'the graph input'}",
                    "weights only",
                    "put a Linear layer in front of every LIF layer",
                )
                break

    # Weight layers: one source, one target population.
    raw_proj: list[tuple[str, str, str, np.ndarray, np.ndarray]] = []  # name, pre, post, W (pre, post), d
    for lin in lins:
        srcs = source_modules_of(lin)
        if any(isinstance(s, LinearWeights) for s in srcs):
            ctx.add(
                "no_consecutive_weights",
                lin.name,
                f"fed by weights {[s.name for s in srcs if isinstance(s, LinearWeights)]}",
                "a population between every two weight layers",
                "insert a LIF layer between the two Linear layers (or multiply them into one)",
            )
            continue
        from_input = [id(n) in input_idx for n in lin.input_nodes]
        pre_lifs = [s for s in srcs if isinstance(s, LIFNeurons)]
        if all(from_input) and not pre_lifs:
            pre, pre_idx = "input", np.array([input_idx[id(n)] for n in lin.input_nodes])
        elif len(pre_lifs) == 1 and not any(from_input):
            pidx = _node_index(list(pre_lifs[0].output_nodes))
            if not all(id(n) in pidx for n in lin.input_nodes):
                ctx.add(
                    "single_source",
                    lin.name,
                    "reads more than one population",
                    "one source",
                    "split the weight layer per source population",
                )
                continue
            pre, pre_idx = pre_lifs[0].name, np.array([pidx[id(n)] for n in lin.input_nodes])
        else:
            ctx.add(
                "single_source",
                lin.name,
                f"reads {[s.name for s in srcs] or 'graph input'} (mixed)",
                "the graph input or one population",
                "split the weight layer per source",
            )
            continue
        sinks = {id(s): s for n in lin.output_nodes for s in n.sink_modules}
        posts = [s for s in sinks.values() if isinstance(s, LIFNeurons)]
        others = [s for s in sinks.values() if not isinstance(s, LIFNeurons)]
        if len(posts) != 1 or others or any(id(n) in _node_index(list(g.output_nodes)) for n in lin.output_nodes):
            ctx.add(
                "weights_feed_neurons",
                lin.name,
                f"feeds {[s.name for s in sinks.values()] or 'the graph output'}",
                "exactly one LIF population",
                "end every weight layer in one LIF layer",
            )
            continue
        post = posts[0]
        if post.n_synapses != 1:
            continue  # reported by the population's own check (single_synapse)
        qidx = _node_index(list(post.input_nodes))
        if not all(id(n) in qidx for n in lin.output_nodes):
            ctx.add(
                "weights_feed_neurons",
                lin.name,
                "feeds part of several populations",
                "exactly one LIF population",
                "end every weight layer in one LIF layer",
            )
            continue
        if lin.has_bias:
            ctx.add(
                "linear_bias",
                lin.name,
                f"bias with {int(np.sum(lin.biases != 0))} non-zero entries",
                "no bias",
                "move the constant input into the LIF bias (i_offset)",
            )
        weights = _weights(ctx, lin)
        if weights is None:
            continue
        n_pre = g.size_in if pre == "input" else next(m.n_neurons for m in lifs if m.name == pre)
        W = np.zeros((n_pre, post.n_neurons))
        post_idx = np.array([qidx[id(n)] for n in lin.output_nodes])
        np.add.at(W, (pre_idx[:, None], post_idx[None, :]), weights)
        D = np.zeros(W.shape, dtype=np.int64)
        d_user = _delays(ctx, lin.name, delays.pop(lin.name, None), lin.weights.shape, max_delay)
        D[pre_idx[:, None], post_idx[None, :]] = d_user
        raw_proj.append((lin.name, pre, post.name, W, D))
    for name in delays:
        ctx.add(
            "delay_range",
            name,
            "delays for an unknown weight layer",
            [m.name for m in lins],
            "name a LinearWeights module of the graph",
        )
    for name, value in scales_user.items():
        if name not in {m.name for m in lifs}:
            ctx.add(
                "invalid_parameter",
                str(name),
                "a weight scale for an unknown population",
                [m.name for m in lifs],
                "name a LIF population of the graph in weight_scale",
            )
        elif not _positive_number(value):
            ctx.add(
                "invalid_parameter",
                str(name),
                f"weight_scale = {value!r}",
                "a finite number > 0 (chip units per float unit)",
                "pass a positive weight scale, or drop it to let the mapper choose",
            )
            params[name] = None  # no population can be built from it

    # The output population.
    out_srcs = {id(s): s for n in g.output_nodes for s in n.source_modules}
    out_lifs = [s for s in out_srcs.values() if isinstance(s, LIFNeurons)]
    output = out_lifs[0].name if out_lifs else ""
    if (
        len(out_lifs) != 1
        or len(out_srcs) != 1
        or [id(n) for n in g.output_nodes] != [id(n) for n in out_lifs[0].output_nodes]
    ):
        ctx.add(
            "output_from_neurons",
            "<graph>",
            f"outputs written by {[s.name for s in out_srcs.values()]}",
            "all neurons of one LIF population, in order",
            "end the network in one LIF layer",
        )

    # Populations in chip units, weights quantized per target population.
    pops: list[PopulationSpec] = []
    projs: list[ProjectionSpec] = []
    rep_scale: dict[str, float] = {}
    rep_err: dict[str, float] = {}
    rep_abs: dict[str, float] = {}
    rep_zero: dict[str, int] = {}
    for m in lifs:
        p = params[m.name]
        if p is None:
            continue
        with np.errstate(over="ignore"):  # tau far below the tick: -inf, a full decay in one tick (0)
            beta = np.exp(-tick / p["tau_syn"])
            alpha = np.exp(-tick / p["tau_mem"])
        incoming = [r for r in raw_proj if r[2] == m.name]
        if model.has_current:
            folded = [(r, r[3] * beta[None, :]) for r in incoming]
        else:
            folded = [(r, r[3]) for r in incoming]
            ctx.notes.append(
                f"{m.name}: {neuron_model} has no synaptic current; tau_syn is dropped (use lif_curr_exp to keep it)"
            )
        wabs = max([float(np.max(np.abs(w))) for _, w in folded if w.size] or [0.0])
        if m.name in scales_user:
            s = float(scales_user[m.name])
        elif wabs > 0:
            s = wmax / wabs  # inf when wabs is subnormal: reported below, never used
        else:
            s = 1.0
            ctx.notes.append(f"{m.name}: all incoming weights are 0 (scale 1)")
        thr, off = _scaled(p["threshold"], s), _scaled(p["bias"], s)
        if not _params_fit(ctx, m.name, s, thr, off, wabs):
            continue
        rep_scale[m.name] = s
        for (name, pre, post, _, D), w in folded:
            q = np.rint(w * s)  # round half to even, once, here (finite: |w| s <= wmax or a violation)
            over = np.abs(q) > wmax
            if np.any(over):
                i = tuple(int(v) for v in np.argwhere(over)[0])
                ctx.add(
                    "weight_range",
                    name,
                    f"scaled weight{list(i)} = {q[i]:g} ({int(over.sum())} weight(s))",
                    f"-{wmax}..{wmax}",
                    f"lower weight_scale of {post} to <= {wmax / wabs:.4g} or drop the fixed scale",
                )
                q = np.clip(q, -wmax - 1, wmax + 1)  # stored only to report; the violation is raised
            deq = q / s
            rep_err[name] = relative_error(deq, w)
            rep_abs[name] = float(np.max(np.abs(deq - w))) if w.size else 0.0
            rep_zero[name] = int(np.sum((w != 0) & (q == 0)))
            projs.append(ProjectionSpec(name, pre, post, q.astype(np.int64), D, w))
        f32 = np.float32
        pops.append(
            PopulationSpec(
                name=m.name,
                size=m.n_neurons,
                threshold=thr.astype(f32),
                alpha=alpha.astype(f32),
                i_offset=off.astype(f32),
                v_reset=np.zeros(m.n_neurons, f32),
                exc_decay=beta.astype(f32),
                inh_decay=beta.astype(f32),
                t_refrac=np.zeros(m.n_neurons, np.int64),
                scale=s,
            )
        )

    # Placement.
    npe = lim.neurons_per_pe if neurons_per_pe is None else int(neurons_per_pe)
    if npe > lim.neurons_per_pe:
        ctx.add("neurons_per_pe", "<placement>", npe, lim.neurons_per_pe, f"use neurons_per_pe <= {lim.neurons_per_pe}")
    if npe > lim.max_index:
        ctx.add(
            "neuron_index",
            "<placement>",
            npe,
            lim.max_index,
            f"a synapse word addresses {lim.max_index} neurons: use neurons_per_pe <= {lim.max_index}",
        )
    npe = max(npe, 1)
    pe = 0
    in_slices, slices = [], []
    for a in range(0, g.size_in, npe):
        in_slices.append(Slice("input", a, min(a + npe, g.size_in), pe))
        pe += 1
    for p in pops:
        for a in range(0, p.size, npe):
            slices.append(Slice(p.name, a, min(a + npe, p.size), pe))
            pe += 1
    if pe > lim.usable_pes:
        ctx.add(
            "max_pes",
            "<placement>",
            pe,
            lim.usable_pes,
            f"use at most {lim.usable_pes} PEs: fewer neurons, or a board "
            f"({math.ceil(pe / lim.usable_pes_per_chip)} chips)",
        )

    # Rows, memory and per-tick work per PE.
    memory: dict[int, dict[str, int]] = {}
    cycles: dict[int, float] = {}
    slots = max_delay + 2
    for sl in slices:
        rows = words = 0
        sources = 0
        for pr in (r for r in projs if r.post == sl.population):
            nnz = np.count_nonzero(pr.weights[:, sl.start : sl.stop], axis=1)
            if nnz.size and int(nnz.max()) > lim.max_row_words:
                ctx.add(
                    "row_length",
                    pr.name,
                    f"row of {int(nnz.max())} words (PE {sl.pe})",
                    lim.max_row_words,
                    f"use slices of at most {lim.max_row_words} neurons",
                )
            rows += int(np.count_nonzero(nnz))
            words += int(nnz.sum())
            src_sl = in_slices if pr.pre == "input" else [s for s in slices if s.population == pr.pre]
            sources += sum(1 for s in src_sl if np.any(nnz[s.start : s.stop]))
        n = sl.stop - sl.start
        mem = {
            "synapse_rows": rows * lim.row_header_bytes + 2 * words,
            "neuron_params": n * model.params_bytes,
            "routing_entries": sources * lim.pop_table_entry_bytes,
            "input_buffers": slots * 2 * n * lim.input_buffer_word_bytes,
            "recording": record_ticks * (4 * math.ceil(n / 32) + (4 * n if record_v else 0)),
        }
        memory[sl.pe] = mem
        total = sum(mem.values())
        if total > lim.snn_data_bytes:
            ctx.add(
                "memory_per_pe",
                f"{sl.population}[{sl.start}:{sl.stop}]",
                f"{total} B on PE {sl.pe} ({', '.join(f'{k} {v}' for k, v in mem.items())})",
                f"{lim.snn_data_bytes} B",
                "use smaller slices (neurons_per_pe), sparser weights, or fewer recorded ticks",
            )
        cycles[sl.pe] = (
            lim.cycles_per_tick_overhead
            + n * lim.cycles_per_neuron
            + spike_rate * (rows * lim.cycles_per_row + words * lim.cycles_per_synapse)
        )
    warn = []
    budget = lim.clock_hz * tick
    for p, c in cycles.items():
        if c > budget:
            warn.append(
                Violation(
                    "deadline_missed",
                    f"PE {p}",
                    f"{c:.0f} cycles per tick",
                    f"{budget:.0f} cycles ({tick * 1e3:g} ms at {lim.clock_hz / 1e6:g} MHz)",
                    "use smaller slices, a longer tick or sparser weights",
                )
            )

    raise_violations(ctx.violations, lim.name)
    for w in warn:
        warnings.warn(f"deadline missed: {w}", DeadlineWarning, stacklevel=2)
    report = MappingReport(
        scales=rep_scale,
        quantization_error=rep_err,
        max_abs_error=rep_abs,
        zeroed=rep_zero,
        pes_used=pe,
        cycles_per_tick=cycles,
        warnings=tuple(warn),
        notes=tuple(ctx.notes),
    )
    return Specification(
        neuron_model=neuron_model,
        tick_s=tick,
        n_input=g.size_in,
        populations=tuple(pops),
        projections=tuple(projs),
        output=output,
        slices=tuple(slices),
        input_slices=tuple(in_slices),
        memory=memory,
        options=LIFOptions() if options is None else options,
        limits_name=lim.name,
        report=report,
    )
