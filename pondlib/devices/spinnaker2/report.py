"""What a SpiNNaker2 SNN mapping costs and loses, as plain data: resources against the limits, weight
quantization per projection, and the known gaps between the float model and the chip; plus the
map-and-configure steps with deadline warnings collected instead of raised.

Nothing here prints; :mod:`pondlib.cli` renders these rows as tables.

Example:
    >>> import numpy as np
    >>> from pondlib import nn
    >>> from pondlib.devices.spinnaker2.limits import SPINNAKER2_CHIP
    >>> net = nn.Sequential(nn.Linear(4, 3, weight=np.full((4, 3), 0.5)), nn.LIF(3))
    >>> spec, late = map_network(net, SPINNAKER2_CHIP, "lif_curr_exp_no_delay")
    >>> rows = {r.name: r for r in resource_usage(spec, SPINNAKER2_CHIP)}
    >>> rows["PEs used"].used, rows["PEs used"].limit, rows["synapse words"].used, late
    (2, 148, 12, ())
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pondlib.devices.core.report import LimitRow, Resource, Table, gap_table
from pondlib.devices.spinnaker2.config import SpiNNaker2Config, config_from_specification
from pondlib.devices.spinnaker2.limits import SpiNNaker2Limits, get_limits
from pondlib.devices.spinnaker2.mapper import mapper
from pondlib.devices.spinnaker2.specification import NEURON_MODELS, DeadlineWarning, Specification
from pondlib.errors import ConfigError, SimulationError
from pondlib.validate import as_float_array, check_type

__all__ = [
    "FloatChipGaps",
    "ProjectionError",
    "QuantizationSummary",
    "configure",
    "float_vs_chip_gaps",
    "gaps_table",
    "limit_rows",
    "quantization_table",
    "map_network",
    "quantization_summary",
    "resource_usage",
]

#: Spikes per neuron per tick the cost estimate assumes (the mapper's default ``spike_rate``).
_SPIKE_RATE = 0.1


def _spec(spec: Any, where: str) -> Specification:
    return check_type(
        spec,
        "spec",
        Specification,
        where=where,
        error=ConfigError,
        fix="map the network with pondlib.devices.spinnaker2.mapper (or map_network) first",
    )


def _record(record: Any, keys: list[str], where: str) -> dict[str, np.ndarray]:
    """``record[key]`` for every key, each a finite real array (SimulationError naming what is missing)."""
    if not isinstance(record, Mapping) or any(k not in record for k in keys):
        shown = sorted(map(str, record))[:6] if isinstance(record, Mapping) else f"a {type(record).__name__}"
        raise SimulationError(
            "record",
            value=shown,
            limit=f"a dict with {keys}",
            where=where,
            fix="pass the record of SpiNNaker2Sim.evolve(x, record=True)",
        )
    return {
        k: as_float_array(record[k], k, where=where, error=SimulationError, ndim=(2, 3), allow_empty=True) for k in keys
    }


def limit_rows(limits: SpiNNaker2Limits | str | None) -> tuple[LimitRow, ...]:
    """The limits of a SpiNNaker2 system that matter to a user, described (``limits``: an instance, a
    variant name or None for the default; anything else is a ConfigError listing the variants).

    Example:
        >>> from pondlib.devices.spinnaker2.limits import SPINNAKER2_BOARD
        >>> rows = {r.name: r.value for r in limit_rows(SPINNAKER2_BOARD)}
        >>> rows["PEs for applications (whole system)"], rows["weight range, words with delay"]
        ('7,104', '-15..15')
    """
    m = get_limits(limits)
    return (
        LimitRow("chips", f"{m.n_chips}"),
        LimitRow("processing elements (PEs) per chip", f"{m.pes_per_chip}"),
        LimitRow("PEs for applications (whole system)", f"{m.usable_pes:,}"),
        LimitRow("SRAM per PE", f"{m.sram_bytes // 1024}", "KiB"),
        LimitRow("SNN data memory per PE", f"{m.snn_data_bytes:,}", "B"),
        LimitRow("neurons per PE", f"{m.neurons_per_pe}"),
        LimitRow("spikes per neuron per tick", "1", "spikes"),
        LimitRow("synapse word", f"{m.synapse_word_bits}", "bits"),
        LimitRow("weight range, words with delay", "{}..{}".format(*m.weight_range(True))),
        LimitRow("weight range, words without delay", "{}..{}".format(*m.weight_range(False))),
        LimitRow("synaptic delay", f"0..{m.max_delay}", "ticks"),
        LimitRow("synapse words per row", f"{m.max_row_words}"),
        LimitRow("default tick", f"{m.tick_s * 1e3:g}", "ms"),
        LimitRow("PE clock", f"{m.clock_hz / 1e6:g}", "MHz"),
        LimitRow("cycles per tick", f"{m.cycles_per_tick:,}"),
        LimitRow("DRAM per chip", f"{m.dram_bytes / 2**30:g}", "GiB"),
        LimitRow("DRAM bandwidth (effective)", f"{m.dram_bandwidth / 1e9:g}", "GB/s"),
        LimitRow("MLA int8 MACs per PE per cycle", f"{m.mla_macs_int8}"),
        LimitRow("MLA accumulator", f"{m.acc_bits}", "bits"),
    )


def map_network(
    network: Any, limits: SpiNNaker2Limits | str | None, neuron_model: str, chips: int = 1
) -> tuple[Specification, tuple[str, ...]]:
    """Map a network (or graph) to SpiNNaker2 with :func:`~pondlib.devices.spinnaker2.mapper.mapper`;
    return the specification and the deadline warnings as messages (not raised as warnings).

    A PE whose expected per-tick work exceeds the tick makes the chip run late: that is reported, the
    mapping is still valid. Every other problem raises as the mapper does.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DeadlineWarning)
        spec = mapper(network, limits, neuron_model=neuron_model, spike_rate=_SPIKE_RATE, chips=chips)
    return spec, tuple(str(w.message) for w in caught if issubclass(w.category, DeadlineWarning))


def configure(spec: Specification, where: str = "configure") -> SpiNNaker2Config:
    """The configuration of a specification, or a :class:`~pondlib.errors.ConfigError` saying why it is
    invalid (``where`` names the caller in the message)."""
    config, ok, message = config_from_specification(spec)
    if not ok:
        raise ConfigError(
            "the SpiNNaker2 configuration is invalid", value=message, where=where, fix="report this as a bug"
        )
    return config


def _uses_delays(spec: Specification) -> bool:
    return NEURON_MODELS[spec.neuron_model].word.delay_bits > 0


def _peak_spikes(record: dict[str, np.ndarray]) -> int:
    return max((int(np.max(v, initial=0)) for v in record.values()), default=0)


def resource_usage(
    spec: Specification, limits: SpiNNaker2Limits | str | None, record: Mapping | None = None
) -> tuple[Resource, ...]:
    """The resources a specification uses on ``limits``: PEs, neurons and data memory of the fullest PE,
    synapse words and rows, the largest weight against the synapse word, the busiest PE's cycles per tick
    (at the mapper's 0.1 spikes per neuron per tick) and, given a simulator ``record``
    (``<population>.spikes``), the peak spikes per neuron per tick.

    Raises:
        ConfigError: ``spec`` not a mapper :class:`Specification`, or an unknown ``limits``.
        SimulationError: a ``record`` that is not a dict of finite spike arrays, one per population.
    """
    spec = _spec(spec, "resource_usage")
    lim = get_limits(limits)
    if record is not None:
        record = _record(record, [f"{p.name}.spikes" for p in spec.populations], "resource_usage")
    wmax = lim.weight_range(with_delays=_uses_delays(spec))[1]
    row = max(
        (
            int(np.count_nonzero(p.weights[:, s.start : s.stop], axis=1).max(initial=0))
            for p in spec.projections
            for s in spec.slices
            if s.population == p.post
        ),
        default=0,
    )
    rows = [
        Resource("PEs used", spec.report.pes_used, lim.usable_pes, note="input sources included"),
        Resource(
            "neurons on the fullest PE", max((s.stop - s.start for s in spec.slices), default=0), lim.neurons_per_pe
        ),
        Resource(
            "data memory of the fullest PE",
            max((sum(m.values()) for m in spec.memory.values()), default=0),
            lim.snn_data_bytes,
            unit="B",
        ),
        Resource(
            "synapse words",
            sum(int(np.count_nonzero(p.weights)) for p in spec.projections),
            None,
            note=f"{lim.synapse_word_bits} bit, all PEs",
        ),
        Resource("longest synapse row", row, lim.max_row_words, unit="words"),
        Resource(
            "largest weight magnitude",
            max((int(np.abs(p.weights).max(initial=0)) for p in spec.projections), default=0),
            wmax,
            note="scaled to the word",
        ),
        Resource(
            "cycles per tick, busiest PE",
            max(spec.report.cycles_per_tick.values(), default=0),
            lim.cycles_per_tick,
            note=f"{_SPIKE_RATE:g} spikes/neuron/tick",
        ),
    ]
    if record is not None:
        rows.append(Resource("peak spikes per neuron per tick", _peak_spikes(record), 1, note="test run"))
    return tuple(rows)


@dataclass(frozen=True)
class ProjectionError:
    """The weight quantization of one projection.

    Attributes:
        projection, target: the weight layer and the population it feeds.
        scale: chip units per float unit of the target population.
        relative_error: ``||W_int / s - W|| / ||W||``.
        max_abs_error: the largest ``|W_int / s - W|`` (float units).
        zeroed: non-zero float weights rounded to 0.
    """

    projection: str
    target: str
    scale: float
    relative_error: float
    max_abs_error: float
    zeroed: int


@dataclass(frozen=True)
class QuantizationSummary:
    """The weight quantization of a mapping: the neuron model, its synapse word (weight magnitude bits,
    largest delay in ticks) and one row per projection."""

    neuron_model: str
    weight_bits: int
    max_delay: int
    projections: tuple[ProjectionError, ...]


def quantization_summary(spec: Specification) -> QuantizationSummary:
    """The quantization error of every projection of a specification (mapping order).

    Raises:
        ConfigError: ``spec`` not a mapper :class:`Specification`.
    """
    rep = _spec(spec, "quantization_summary").report
    word = NEURON_MODELS[spec.neuron_model].word
    rows = tuple(
        ProjectionError(
            p.name,
            p.post,
            float(rep.scales[p.post]),
            float(rep.quantization_error[p.name]),
            float(rep.max_abs_error[p.name]),
            int(rep.zeroed[p.name]),
        )
        for p in spec.projections
    )
    return QuantizationSummary(spec.neuron_model, word.weight_bits, word.max_delay, rows)


@dataclass(frozen=True)
class FloatChipGaps:
    """The known differences between a float model and SpiNNaker2, measured on one run.

    Attributes:
        n_steps: ticks per sample (T).
        silent_steps: trailing ticks without any input spike (in every sample).
        max_spikes_per_tick: spikes a neuron can emit per tick (1).
        hops: weight layers on the longest path from the input to the output; each adds one tick.
        beta: the synaptic decay per tick of the first population (the mapper folds it into the weights).
        weight_bits: weight magnitude bits of the synapse word (plus a sign bit).
        weight_error: relative quantization error of the first projection.
        fused_multiply_add: whether the neuron update fuses the decay multiply and add (one rounding).
        rate_float, rate_chip: mean spikes per neuron per tick of the first population, float and chip.
    """

    n_steps: int
    silent_steps: int
    max_spikes_per_tick: int
    hops: int
    beta: float
    weight_bits: int
    weight_error: float
    fused_multiply_add: bool
    rate_float: float
    rate_chip: float


def _hops(spec: Specification) -> int:
    depth = {"input": 0}
    for p in spec.projections:  # mapping order is topological for feed-forward projections
        if p.pre != p.post and p.pre in depth:
            depth[p.post] = max(depth.get(p.post, 0), depth[p.pre] + 1)
    return depth.get(spec.output, 0)


def float_vs_chip_gaps(spec: Specification, x: Any, record: dict, float_spikes: Any) -> FloatChipGaps:
    """Measure the float-vs-chip gaps of one run.

    Args:
        spec: the specification that ran.
        x: the input spikes (B, T, N_in).
        record: the simulator record (``<population>.spikes``: (B, T, N)).
        float_spikes: the float model's spikes of the first population on the same input (B, T, N).

    Example:
        >>> from pondlib import nn
        >>> net = nn.Sequential(nn.Linear(2, 2, weight=np.eye(2)), nn.LIF(2, tau_syn=2e-3),
        ...                     nn.Linear(2, 2, weight=np.eye(2)), nn.LIF(2, tau_syn=2e-3))
        >>> spec, _ = map_network(net, "chip", "lif_curr_exp_no_delay")
        >>> x = np.zeros((1, 4, 2)); x[0, 0] = 1
        >>> rec = {"1_LIF.spikes": np.zeros((1, 4, 2))}
        >>> g = float_vs_chip_gaps(spec, x, rec, np.zeros((1, 4, 2)))
        >>> g.hops, g.silent_steps, g.weight_bits, round(g.beta, 4)
        (2, 3, 7, 0.6065)

    Raises:
        ConfigError: ``spec`` not a mapper :class:`Specification`.
        SimulationError: ``x`` not finite real numbers (T, N_in) or (B, T, N_in); ``record`` without the
            first population's spikes; ``float_spikes`` not finite real numbers.
    """
    where = "float_vs_chip_gaps"
    spec = _spec(spec, where)
    first = spec.populations[0]
    xs = as_float_array(x, "x", where=where, error=SimulationError, ndim=(2, 3))
    if xs.shape[-1] != spec.n_input:
        raise SimulationError(
            "x shape",
            value=xs.shape,
            limit=f"(T, {spec.n_input}) or (B, T, {spec.n_input})",
            where=where,
            fix="pass the input spikes that ran",
        )
    chip = _record(record, [f"{first.name}.spikes"], where)[f"{first.name}.spikes"]
    flt = as_float_array(float_spikes, "float_spikes", where=where, error=SimulationError, ndim=(2, 3))
    active = np.flatnonzero(np.moveaxis(xs, -2, 0).reshape(xs.shape[-2], -1).any(axis=1))
    return FloatChipGaps(
        n_steps=int(xs.shape[-2]),
        silent_steps=int(xs.shape[-2] - (active[-1] + 1 if active.size else 0)),
        max_spikes_per_tick=1,
        hops=_hops(spec),
        beta=float(np.asarray(first.exc_decay).ravel()[0]),
        weight_bits=NEURON_MODELS[spec.neuron_model].word.weight_bits,
        weight_error=float(spec.report.quantization_error[spec.projections[0].name]),
        fused_multiply_add=bool(spec.options.fma),
        rate_float=float(flt.mean()),
        rate_chip=float(chip.mean()) if chip.size else 0.0,
    )


def quantization_table(q: QuantizationSummary, other: QuantizationSummary | None = None) -> Table:
    """The table of a :class:`QuantizationSummary`, with the errors of ``other`` (the same network with
    another neuron model) as its caption."""
    caption = ""
    if other is not None:
        errs = ", ".join(f"{p.projection} {p.relative_error:.2%}" for p in other.projections)
        caption = f"with {other.neuron_model} ({other.weight_bits}-bit weights, delays 0..{other.max_delay}): {errs}"
    return Table(
        f"Quantization ({q.neuron_model}: weights scaled per target population, rounded to the synapse word)",
        (
            ("projection", "left"),
            ("target", "left"),
            ("scale", "right"),
            ("relative error", "right"),
            ("largest error (float units)", "right"),
            ("weights rounded to 0", "right"),
        ),
        tuple(
            (
                p.projection,
                p.target,
                f"{p.scale:.1f}",
                f"{p.relative_error:.2%}",
                f"{p.max_abs_error:.4f}",
                str(p.zeroed),
            )
            for p in q.projections
        ),
        caption=caption,
    )


def gaps_table(name: str, g: FloatChipGaps, first: Any = (), activity_note: str = "") -> Table:
    """The float-vs-chip table of a :class:`FloatChipGaps`, after the caller's own ``first`` rows (what it
    compared: networks, accuracies)."""
    rounding = (
        "one rounding for the decay multiply-add (fused)"
        if g.fused_multiply_add
        else "rounded after every multiply and add (no fused multiply-add)"
    )
    rows = [
        *first,
        (
            "delay per hop",
            "0 steps",
            f"1 tick per hop ({g.hops} from input to output)",
            f"readout sums output spikes over all {g.n_steps} steps ({g.silent_steps} silent at the end)",
        ),
        (
            "synaptic input",
            "I = beta (I + x)",
            "I = beta I + x",
            f"the mapper folds beta = {g.beta:g} into the weights (exact for a common beta)",
        ),
        (
            "weights",
            "float32",
            f"sign + {g.weight_bits}-bit magnitude per word",
            f"{g.weight_error:.2%} relative error on input weights",
        ),
        (
            "neuron arithmetic",
            "float32 (XLA)",
            "float32 per operation (Cortex-M4F)",
            f"{rounding}, simulated bit-precisely",
        ),
        ("hidden activity", f"{g.rate_float:.3f} spikes/neuron/step", f"{g.rate_chip:.3f}", activity_note),
    ]
    return gap_table(name, rows)
