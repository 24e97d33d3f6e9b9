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

How: the topology is read once into a typed context
(:mod:`~pondlib.devices.spinnaker2.snn_context`: the graph's facts, then the populations in chip units,
then the placement); the rules of :mod:`~pondlib.devices.spinnaker2.snn_rules`, one function per check,
run on it; every violation is raised together in one :class:`~pondlib.errors.ConstraintError` (rule,
module, value, limit, remedy); then the :class:`Specification` is assembled. :data:`RULES` is built
from the rule functions. Nothing is modified.
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

import warnings
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from pondlib.devices.core.lookup import as_graph
from pondlib.devices.core.numerics import relative_error
from pondlib.devices.core.rules import check_rules, raise_violations
from pondlib.devices.spinnaker2.limits import SpiNNaker2Limits, limits_for_chips
from pondlib.devices.spinnaker2.snn_context import (
    SUPPORTED_MODULES,
    MappingContext,
    Request,
    ScaledPopulation,
    chip_of,
    mapping_context,
)
from pondlib.devices.spinnaker2.snn_rules import RULES, SNN_RULES, WARNING_RULES, unknown_neuron_model
from pondlib.devices.spinnaker2.snn_rules import WARNINGS as WARNINGS  # the warning rules' table, importable here
from pondlib.devices.spinnaker2.specification import (
    DeadlineWarning,
    LIFOptions,
    MappingReport,
    PopulationSpec,
    ProjectionSpec,
    Slice,
    Specification,
)
from pondlib.errors import ConfigError, ConstraintError, GraphError, QuantizationError, Violation  # noqa: F401
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

#: Largest ``spike_rate`` (expected spikes per source neuron per tick) the work estimate takes.
SPIKE_RATE_MAX = 1e6


def _request(
    limits: SpiNNaker2Limits,
    neuron_model: Any,
    delays: Any,
    weight_scale: Any,
    neurons_per_pe: Any,
    spike_rate: Any,
    record_ticks: Any,
    record_v: Any,
    options: Any,
) -> Request:
    """The mapper's arguments, checked (see :func:`mapper`).

    Raises:
        ConfigError: a malformed argument (a wrong type, a fractional ``neurons_per_pe``,
            ``record_v="False"``, options with problems), naming it.
    """
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
    return Request(
        limits=limits,
        neuron_model=neuron_model,
        delays=dict(delays or {}),
        weight_scale=dict(weight_scale or {}),
        neurons_per_pe=limits.neurons_per_pe if neurons_per_pe is None else int(neurons_per_pe),
        spike_rate=spike_rate,
        record_ticks=record_ticks,
        record_v=record_v,
        options=LIFOptions() if options is None else options,
    )


def _population_spec(sp: ScaledPopulation) -> PopulationSpec:
    """A scaled population as float32 chip parameters (no refractory period, reset to 0)."""
    f32, n = np.float32, sp.population.module.n_neurons
    return PopulationSpec(
        name=sp.name,
        size=n,
        threshold=sp.threshold.astype(f32),
        alpha=sp.alpha.astype(f32),
        i_offset=sp.bias.astype(f32),
        v_reset=np.zeros(n, f32),
        exc_decay=sp.beta.astype(f32),
        inh_decay=sp.beta.astype(f32),
        t_refrac=np.zeros(n, np.int64),
        scale=sp.scale,
    )


def _assemble(ctx: MappingContext, warned: tuple[Violation, ...]) -> Specification:
    """The specification of a context every rule accepts: float32 populations, integer projections (in
    the word's range), the slices, the memory per PE and the report (scales, quantization errors)."""
    req, placement = ctx.request, ctx.placement
    pops, projs = [], []
    scales: dict[str, float] = {}
    rel_err: dict[str, float] = {}
    abs_err: dict[str, float] = {}
    zeroed: dict[str, int] = {}
    for sp in ctx.populations:
        if not sp.fits:
            continue
        scales[sp.name] = sp.scale
        for pr in sp.incoming:
            q, w = pr.quantized, pr.folded  # within the word: weight_range passed
            deq = q / sp.scale
            rel_err[pr.name] = relative_error(deq, w)
            abs_err[pr.name] = float(np.max(np.abs(deq - w))) if w.size else 0.0
            zeroed[pr.name] = int(np.sum((w != 0) & (q == 0)))
            projs.append(ProjectionSpec(pr.name, pr.pre, pr.post, q.astype(np.int64), pr.delays, w))
        pops.append(_population_spec(sp))
    report = MappingReport(
        scales=scales,
        quantization_error=rel_err,
        max_abs_error=abs_err,
        zeroed=zeroed,
        pes_used=placement.pes_used,
        cycles_per_tick={load.slice.pe: load.cycles for load in placement.loads},
        warnings=warned,
        notes=ctx.notes,
        chips=placement.chips,
        chip_of_pe={sl.pe: chip_of(sl.pe, req.limits) for sl in (*placement.input_slices, *placement.slices)},
        hop_latency_s={load.slice.pe: load.hop_s for load in placement.loads if load.hop_s},
    )
    return Specification(
        neuron_model=req.neuron_model,
        tick_s=ctx.topology.tick,
        n_input=ctx.topology.n_input,
        populations=tuple(pops),
        projections=tuple(projs),
        output=ctx.topology.output,
        slices=placement.slices,
        input_slices=placement.input_slices,
        memory={load.slice.pe: load.memory for load in placement.loads},
        options=req.options,
        limits_name=req.limits.name,
        report=report,
    )


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
    chips: int = 1,
) -> Specification:
    """Map a spiking graph onto SpiNNaker2 (see the module docstring for every step and rule).

    Reads the topology once into a context, runs every rule of :data:`RULES` on it, raises every
    violation together, warns of missed deadlines, then assembles the specification.

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
        chips: chips to spread the slices over, in order (1..``limits.n_chips``; ``chips > 1`` with no
            limits takes the 48-chip board). Spikes between chips take ``limits.chip_hop_s`` per hop (chips
            in a chain), counted in the tick's deadline; they still arrive at the next tick (+ delay), so
            the network runs spike for spike as on one chip.

    Returns:
        A :class:`Specification`.

    Raises:
        ConstraintError: every violated rule of :data:`RULES`, together.
        ConfigError: a malformed argument, or delays that are not numbers.
        GraphError: the input is not a graph.
    """
    lim, chips = limits_for_chips(limits, chips, "spinnaker2.mapper")
    g = as_graph(graph)
    request = _request(
        lim, neuron_model, delays, weight_scale, neurons_per_pe, spike_rate, record_ticks, record_v, options
    )
    request = replace(request, chips=chips)
    raise_violations(check_rules((unknown_neuron_model,), request), lim.name)
    ctx = mapping_context(g, request)
    raise_violations(check_rules(SNN_RULES, ctx), lim.name)
    warned = tuple(check_rules(WARNING_RULES, ctx))
    for w in warned:
        warnings.warn(f"deadline missed: {w}", DeadlineWarning, stacklevel=2)
    return _assemble(ctx, warned)
