"""What a Xylo mapping costs and loses, as plain data: resources against the limits, quantization error,
the known gaps between the float model and the chip, and a summary of a simulation.

Nothing here prints: the tables are :class:`~pondlib.devices.core.report.Table` data that any renderer
(the ``pond`` command line, a notebook) shows.

Example:
    >>> import numpy as np
    >>> from pondlib.devices.xylo.limits import XYLO_AUDIO3
    >>> from pondlib.devices.xylo.specification import Specification
    >>> spec = Specification.zeros(16, 8, 4)
    >>> spec["weights_in"] = np.ones((16, 8, 1))
    >>> rows = {r.name: r for r in resource_usage(spec, XYLO_AUDIO3)}
    >>> rows["hidden neurons"].used, rows["hidden neurons"].limit
    (8, 992)
    >>> rows["input synapses"].used, rows["input synapses"].note
    (128, 'non-zero weights')
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from pondlib.devices.core.report import LimitRow, Resource, Table, gap_table
from pondlib.devices.xylo.config import XyloConfig, config_from_specification
from pondlib.devices.xylo.limits import XyloLimits, get_limits
from pondlib.errors import ConfigError

if TYPE_CHECKING:
    from pondlib.devices.xylo.specification import Specification

__all__ = [
    "FieldError",
    "FloatChipGaps",
    "QuantizationSummary",
    "SimulationSummary",
    "configure",
    "float_vs_chip_gaps",
    "gaps_table",
    "quantization_table",
    "limit_rows",
    "quantization_summary",
    "resource_usage",
    "silent_tail",
    "simulation_summary",
]

#: Fields of :class:`~pondlib.devices.xylo.limits.XyloLimits`: (description, unit).
_LIMIT_LABELS: dict[str, tuple[str, str]] = {
    "n_input": ("input channels", ""),
    "max_input_count": ("input events per channel per step", "events (more are clipped)"),
    "n_hidden": ("hidden neurons", ""),
    "n_output": ("output neurons", ""),
    "n_synapses": ("synaptic states per hidden neuron", ""),
    "max_spikes_hidden": ("spikes per hidden neuron per step", "spikes"),
    "max_spikes_output": ("spikes per output neuron per step", "spikes"),
    "max_fanout_rec": ("recurrent fan-out per hidden neuron", "weights"),
    "max_alias_targets": ("alias targets per hidden neuron", ""),
    "weight_bits": ("weight width (signed)", "bits"),
    "state_bits": ("state / threshold / bias width (signed)", "bits"),
    "dash_bits": ("decay shift width", "bits"),
    "weight_shift_bits": ("weight shift width", "bits"),
    "dt_min": ("shortest time step", "s"),
    "dt_max": ("longest time step", "s"),
}

#: Quantized fields, in report order.
_QUANTIZED_FIELDS = ("weights_in", "weights_rec", "weights_out", "threshold", "threshold_out", "bias", "bias_out")


def limit_rows(limits: XyloLimits) -> tuple[LimitRow, ...]:
    """Every limit of a Xylo variant, described: one row per field, then the derived ranges.

    Example:
        >>> from pondlib.devices.xylo.limits import XYLO_IMU
        >>> rows = {r.name: r.value for r in limit_rows(XYLO_IMU)}
        >>> rows["hidden neurons"], rows["weight range"], rows["decay shift range"]
        ('496', '-128..127', '0..15')
    """
    rows = []
    for f in fields(limits):
        if f.name == "name":
            continue
        label, unit = _LIMIT_LABELS.get(f.name, (f.name, ""))
        rows.append(LimitRow(label, f"{getattr(limits, f.name):g}", unit))
    lo, hi = limits.weight_range
    rows.append(LimitRow("weight range", f"{lo}..{hi}"))
    rows.append(LimitRow("decay shift range", f"0..{limits.dash_max}"))
    return tuple(rows)


def resource_usage(spec: Specification, limits: XyloLimits, record: dict | None = None) -> tuple[Resource, ...]:
    """The resources a specification uses on ``limits``: neurons, synapses (non-zero weights), fan-out,
    aliases and, given a simulator ``record`` (``Spikes`` (B, T, N_hidden)), the peak hidden spike count.

    Counts are unitless; limits are those of the dataclass (synapse limits are the full weight matrices:
    ``n_input * n_hidden * n_synapses``, ``n_hidden * max_fanout_rec``, ``n_hidden * n_output``).
    """
    w_in, w_rec, w_out = (np.asarray(spec.weights_in), np.asarray(spec.weights_rec), np.asarray(spec.weights_out))
    fanout = int((w_rec != 0).reshape(w_rec.shape[0], -1).sum(axis=1).max()) if w_rec.size else 0
    lim = limits
    rows = [
        Resource("input channels", spec.n_input, lim.n_input),
        Resource("hidden neurons", spec.n_hidden, lim.n_hidden),
        Resource("output neurons", spec.n_output, lim.n_output),
        Resource("synaptic states per hidden neuron", spec.n_synapses, lim.n_synapses),
        Resource(
            "input synapses",
            int((w_in != 0).sum()),
            lim.n_input * lim.n_hidden * lim.n_synapses,
            note="non-zero weights",
        ),
        Resource(
            "recurrent synapses", int((w_rec != 0).sum()), lim.n_hidden * lim.max_fanout_rec, note="non-zero weights"
        ),
        Resource("readout synapses", int((w_out != 0).sum()), lim.n_hidden * lim.n_output, note="non-zero weights"),
        Resource("largest recurrent fan-out", fanout, lim.max_fanout_rec),
        Resource("aliases", int((np.asarray(spec.aliases) >= 0).sum()), lim.n_hidden),
    ]
    if record is not None:
        peak = int(np.max(record["Spikes"], initial=0))
        rows.append(Resource("peak hidden spikes per step", peak, lim.max_spikes_hidden, note="test run"))
    return tuple(rows)


@dataclass(frozen=True)
class FieldError:
    """The quantization error of one field: ``||q / scale - w|| / ||w||`` and the values clipped."""

    field: str
    relative_error: float
    clipped: int


@dataclass(frozen=True)
class QuantizationSummary:
    """What quantizing a specification lost.

    Attributes:
        method: ``"global"`` or ``"channel"`` scaling.
        weight_bits, state_bits: the integer widths of weights and of thresholds/biases (bits, signed).
        fields: the error of every quantized field, in ``weights_in, weights_rec, weights_out, threshold,
            threshold_out, bias, bias_out`` order (fields the quantizer did not report are left out).
        scale_ranges: ``(layer, smallest, largest)`` scale per layer (chip units per float unit).
        total_clipped: values clipped over all fields.
    """

    method: str
    weight_bits: int
    state_bits: int
    fields: tuple[FieldError, ...]
    scale_ranges: tuple[tuple[str, float, float], ...]
    total_clipped: int


def quantization_summary(spec: Specification) -> QuantizationSummary:
    """The quantization report of a quantized specification (``pondlib.transform.channel_quantize``)
    as rows.

    Raises:
        ConfigError: the specification is not quantized.

    Example:
        >>> from pondlib.devices.xylo.specification import QuantizationReport, Specification
        >>> rep = QuantizationReport("channel", scales={"hidden": [2.0, 4.0]}, relative_error={"weights_in": 0.01})
        >>> q = quantization_summary(Specification.zeros(2, 2, 1, quantization=rep))
        >>> q.fields, q.scale_ranges, q.weight_bits
        ((FieldError(field='weights_in', relative_error=0.01, clipped=0),), (('hidden', 2.0, 4.0),), 8)
    """
    rep = spec.quantization
    if rep is None:
        raise ConfigError(
            "quantization report",
            value=None,
            limit="a quantized specification",
            where="quantization_summary",
            fix="quantize the specification first (pondlib.transform.channel_quantize)",
        )
    rows = tuple(
        FieldError(name, float(rep.relative_error.get(name, float("nan"))), int(rep.clipped.get(name, 0)))
        for name in _QUANTIZED_FIELDS
        if name in rep.relative_error or name in rep.clipped
    )
    scales = tuple((k, float(np.min(v)), float(np.max(v))) for k, v in rep.scales.items())
    lim = get_limits(spec.limits_name)
    return QuantizationSummary(rep.method, lim.weight_bits, lim.state_bits, rows, scales, rep.total_clipped)


@dataclass(frozen=True)
class FloatChipGaps:
    """The known differences between a float model and Xylo, measured on one run.

    Attributes:
        n_steps: time steps per sample (T).
        silent_steps: trailing steps without any input event (in every sample).
        readout_delay: steps of delay the chip adds between hidden and output neurons.
        max_spikes_hidden, max_spikes_output: the chip's spike caps per neuron per step.
        float_peak_spikes, chip_peak_spikes: the largest hidden spike count per step, float and chip.
        decay_float: the float membrane decay per step, ``exp(-dt / tau_mem)``.
        dash_mem: the chip's membrane decay shift of the first hidden neuron.
        decay_chip: the chip's membrane decay per step, ``1 - 2^-dash_mem``.
        weight_bits, state_bits: the chip's signed widths of weights and of states, thresholds, biases.
        state_range: the chip's saturating state range (inclusive).
        saturated_vmem, saturated_isyn: fraction of hidden membrane / synaptic values at the range ends.
        max_input_count: input events per channel per step the chip counts (more are clipped).
        input_peak: the largest input count of the run.
        weight_error: relative quantization error of the input weights.
        rate_float, rate_chip: mean hidden spikes per neuron per step, float and chip.
    """

    n_steps: int
    silent_steps: int
    readout_delay: int
    max_spikes_hidden: int
    max_spikes_output: int
    float_peak_spikes: float
    chip_peak_spikes: int
    decay_float: float
    dash_mem: int
    decay_chip: float
    weight_bits: int
    state_bits: int
    state_range: tuple[int, int]
    saturated_vmem: float
    saturated_isyn: float
    max_input_count: int
    input_peak: int
    weight_error: float
    rate_float: float
    rate_chip: float

    @property
    def input_clipped(self) -> bool:
        """True when some input count exceeded what the chip counts."""
        return self.input_peak > self.max_input_count


def silent_tail(x: Any) -> int:
    """Trailing steps of ``x`` ((B, T, N) or (T, N)) without any event in any sample.

    Example:
        >>> silent_tail(np.array([[1, 0], [0, 1], [0, 0], [0, 0]]))
        2
    """
    xs = np.asarray(x)
    active = np.flatnonzero(np.moveaxis(xs, -2, 0).reshape(xs.shape[-2], -1).any(axis=1))
    return int(xs.shape[-2] - (active[-1] + 1 if active.size else 0))


def float_vs_chip_gaps(
    spec: Specification, limits: XyloLimits, x: Any, record: dict, float_spikes: Any, tau_mem: Any
) -> FloatChipGaps:
    """Measure the float-vs-chip gaps of one run.

    Args:
        spec: the quantized specification that ran.
        limits: the chip variant.
        x: the input events (B, T, N_in).
        record: the simulator record (``Vmem``, ``Isyn``, ``Spikes``: (B, T, N_hidden)).
        float_spikes: the float model's hidden spikes on the same input (B, T, N_hidden).
        tau_mem: the float model's hidden membrane time constant (s; the first value is used).
    """
    smin, smax = limits.state_range
    vmem, isyn = np.asarray(record["Vmem"]), np.asarray(record["Isyn"])
    spikes, fs = np.asarray(record["Spikes"]), np.asarray(float_spikes)
    dash = int(np.asarray(spec.dash_mem).ravel()[0])
    tau = float(np.asarray(tau_mem).ravel()[0])
    rep = spec.quantization
    xs = np.asarray(x)
    return FloatChipGaps(
        n_steps=int(xs.shape[-2]),
        silent_steps=silent_tail(xs),
        readout_delay=1,
        max_spikes_hidden=limits.max_spikes_hidden,
        max_spikes_output=limits.max_spikes_output,
        float_peak_spikes=float(fs.max(initial=0)),
        chip_peak_spikes=int(spikes.max(initial=0)),
        decay_float=float(np.exp(-spec.dt / tau)),
        dash_mem=dash,
        decay_chip=1.0 - 2.0**-dash,
        weight_bits=limits.weight_bits,
        state_bits=limits.state_bits,
        state_range=(smin, smax),
        saturated_vmem=float(np.mean((vmem <= smin) | (vmem >= smax))),
        saturated_isyn=float(np.mean((isyn <= smin) | (isyn >= smax))),
        max_input_count=limits.max_input_count,
        input_peak=int(xs.max(initial=0)),
        weight_error=float(rep.relative_error.get("weights_in", 0.0)) if rep is not None else 0.0,
        rate_float=float(fs.mean()),
        rate_chip=float(spikes.mean()),
    )


@dataclass(frozen=True, eq=False)
class SimulationSummary:
    """A simulation run summarised.

    Attributes:
        n_samples, n_steps: B (1 for unbatched input) and T.
        batched: whether the input was (B, T, N_in).
        input_events: input events in all; input_peak: the largest count per channel per step.
        max_input_count: counts above it are clipped by the chip; clipped: how many counts were.
        hidden_spikes, peak_hidden_spikes: hidden spikes in all, and the most per neuron per step.
        output_spikes: output spikes in all.
        counts: output spikes per sample and output neuron (B, N_out).
        predictions: per sample, the most active output neuron, or None when all are silent.
    """

    n_samples: int
    n_steps: int
    batched: bool
    input_events: int
    input_peak: int
    max_input_count: int
    clipped: int
    hidden_spikes: int
    peak_hidden_spikes: int
    output_spikes: int
    counts: np.ndarray
    predictions: tuple[int | None, ...]


def simulation_summary(x: Any, output: Any, record: dict, limits: XyloLimits | str) -> SimulationSummary:
    """Summarise ``XyloSim.evolve(x, record=True)``: ``x`` (T, N_in) or (B, T, N_in), ``output`` of the
    same batch shape, ``record`` with ``Spikes``.

    Example:
        >>> x = np.array([[[20, 0], [1, 0]]])                      # (B=1, T=2, N_in=2)
        >>> out = np.array([[[0, 1, 0], [0, 1, 1]]])
        >>> s = simulation_summary(x, out, {"Spikes": np.array([[[2], [0]]])}, "audio3")
        >>> s.input_events, s.clipped, s.hidden_spikes, s.counts.tolist(), s.predictions
        (21, 1, 2, [[0, 2, 1]], (1,))
    """
    xs, out = np.asarray(x), np.asarray(output)
    batched = out.ndim == 3
    n = xs.shape[0] if batched else 1
    counts = out.sum(axis=-2).reshape(n, -1)
    max_count = get_limits(limits).max_input_count
    spikes = np.asarray(record["Spikes"])
    return SimulationSummary(
        n_samples=n,
        n_steps=int(xs.shape[-2]),
        batched=batched,
        input_events=int(xs.sum()),
        input_peak=int(xs.max(initial=0)),
        max_input_count=max_count,
        clipped=int(np.sum(xs > max_count)),
        hidden_spikes=int(spikes.sum()),
        peak_hidden_spikes=int(spikes.max(initial=0)),
        output_spikes=int(out.sum()),
        counts=counts,
        predictions=tuple(int(np.argmax(c)) if c.any() else None for c in counts),
    )


def configure(spec: Specification, where: str = "configure") -> XyloConfig:
    """The configuration of a quantized specification, or a :class:`~pondlib.errors.ConfigError` saying
    why it is invalid (``where`` names the caller in the message)."""
    config, ok, message = config_from_specification(spec)
    if not ok:
        raise ConfigError("the Xylo configuration is invalid", value=message, where=where, fix="report this as a bug")
    return config


def quantization_table(q: QuantizationSummary) -> Table:
    """The table of a :class:`QuantizationSummary`: relative error and clipped values per field."""
    scales = ", ".join(f"{name} {lo:.0f}..{hi:.0f}" for name, lo, hi in q.scale_ranges)
    return Table(
        f"Quantization ({q.method} scaling, int{q.weight_bits} weights, int{q.state_bits} thresholds)",
        (("field", "left"), ("relative error", "right"), ("clipped values", "right")),
        tuple((f.field, f"{f.relative_error:.2%}", str(f.clipped)) for f in q.fields),
        caption=f"scales (chip units per float unit): {scales}; {q.total_clipped} value(s) clipped in all",
    )


def gaps_table(name: str, g: FloatChipGaps, float_caps: tuple[float, float]) -> Table:
    """The float-vs-chip table of a :class:`FloatChipGaps`; ``float_caps``: the float model's spike caps per
    step (hidden, output)."""
    smin, smax = g.state_range
    step = "step" if g.readout_delay == 1 else "steps"
    clip = "larger counts clipped" if g.input_clipped else "nothing clipped"
    rows = [
        (
            "hidden -> output delay",
            "0 steps",
            f"{g.readout_delay} {step}",
            f"readout sums output spikes over all {g.n_steps} steps ({g.silent_steps} silent at the end), "
            "so the late step is still counted",
        ),
        (
            "spike caps per step",
            f"trained with {float_caps[0]:g} / {float_caps[1]:g}",
            f"{g.max_spikes_hidden} / {g.max_spikes_output}",
            f"same caps; peak hidden count float {g.float_peak_spikes:.0f}, chip {g.chip_peak_spikes}",
        ),
        (
            "membrane decay per step",
            f"exp(-dt/tau) = {g.decay_float:.4f}",
            f"1 - 2^-{g.dash_mem} = {g.decay_chip:.4f}",
            "time constants chosen to match exactly (bit-shift floor rounding remains)",
        ),
        (
            f"{g.state_bits}-bit saturation",
            "none",
            f"{smin}..{smax}",
            f"{g.saturated_vmem:.2%} of hidden Vmem and {g.saturated_isyn:.2%} of Isyn values at the limits",
        ),
        (
            "input event clip",
            "none",
            f"{g.max_input_count} per channel per step",
            f"inputs peak at {g.input_peak}: {clip}",
        ),
        (
            "weight / threshold rounding",
            "float32",
            f"int{g.weight_bits} / int{g.state_bits}",
            f"{g.weight_error:.2%} relative error on input weights",
        ),
        ("hidden activity", f"{g.rate_float:.3f} spikes/neuron/step", f"{g.rate_chip:.3f}", ""),
    ]
    return gap_table(name, rows)
