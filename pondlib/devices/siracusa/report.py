"""What a Siracusa mapping costs and loses, as plain data: memory, tiles and cycles against the limits,
the quantization of every layer, and the known gaps between the float model and the integer chain; plus
the graph-to-specification and configure steps.

Nothing here prints; :mod:`pondlib.cli` renders these rows as tables.

Example:
    >>> import numpy as np
    >>> from pondlib import nn
    >>> from pondlib.devices.siracusa.limits import SIRACUSA
    >>> net = nn.Sequential(nn.Linear(4, 16, weight=np.full((4, 16), 0.5)), nn.LIF(16))
    >>> calib = np.random.default_rng(0).random((8, 5, 4))
    >>> layers, spec = map_network(net, SIRACUSA, calib, drop_synapse=True)
    >>> rows = {r.name: r for r in resource_usage(spec, SIRACUSA)}
    >>> rows["integer LIF state width"].used, rows["integer LIF state width"].limit
    (16, 32)
    >>> rows["MACs per step"].used
    64
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pondlib.devices.core.report import LimitRow, Resource, Table, gap_table
from pondlib.devices.siracusa.config import SiracusaConfig, config_from_specification
from pondlib.devices.siracusa.cycles import cycle_table
from pondlib.devices.siracusa.limits import SiracusaLimits, get_limits
from pondlib.devices.siracusa.mapper import layers_from_graph, mapper
from pondlib.devices.siracusa.specification import QLIF, Specification
from pondlib.errors import ConfigError, SimulationError
from pondlib.validate import as_array, as_float_array, check_float, check_type

__all__ = [
    "FloatChipGaps",
    "LayerError",
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

#: Layer kinds whose weights are quantized (the others have no weight error).
_WEIGHT_KINDS = ("QGemm", "QConv2d")


def _spec(spec: Any, where: str) -> Specification:
    return check_type(
        spec,
        "spec",
        Specification,
        where=where,
        error=ConfigError,
        fix="map the network with pondlib.devices.siracusa.mapper (or map_network) first",
    )


def limit_rows(limits: SiracusaLimits | str | None) -> tuple[LimitRow, ...]:
    """The limits of a Siracusa variant that matter to a user, described (``limits``: an instance, a
    variant name or None for the default; anything else is a ConfigError listing the variants).

    Example:
        >>> from pondlib.devices.siracusa.limits import SIRACUSA
        >>> rows = {r.name: r.value for r in limit_rows(SIRACUSA)}
        >>> rows["L1 for one layer's tiles"], rows["NPU kernels (kh x kw)"]
        ('64,000', '1x1, 3x3, 3x3 dw')
    """
    m = get_limits(limits)
    kernels = ", ".join(f"{a}x{b}{' dw' if d else ''}" for a, b, d in m.npu_kernels)
    return (
        LimitRow("cluster cores (RV32 XpulpV2)", f"{m.n_cores}"),
        LimitRow("int8 SIMD lanes per instruction", f"{m.simd_lanes}"),
        LimitRow("L1 (cluster TCDM)", f"{m.l1_bytes // 1024}", "KiB"),
        LimitRow("L1 for one layer's tiles", f"{m.l1_tile_budget:,}", "B"),
        LimitRow("L2 (on-chip SRAM)", f"{m.l2_bytes / 2**20:g}", "MiB"),
        LimitRow("L3 (off-chip RAM)", f"{m.l3_bytes / 2**20:g}", "MiB"),
        LimitRow("NPU weight memory", f"{m.weight_memory_bytes / 2**20:g}", "MiB"),
        LimitRow("weights (signed)", f"{m.weight_bits}", "bits"),
        LimitRow("activations (int8 / uint8)", f"{m.act_bits}", "bits"),
        LimitRow("accumulator (wraps around)", f"{m.acc_bits}", "bits"),
        LimitRow("bias", f"{m.bias_bits}", "bits"),
        LimitRow("RequantShift shift", f"0..{m.shift_max}"),
        LimitRow("integer LIF state", f"2..{m.state_bits_max}", "bits"),
        LimitRow("spikes per neuron per step", "1", "spikes"),
        LimitRow("GEMM outputs (when >= 16) a multiple of", f"{m.gemm_chunk_quantum}"),
        LimitRow("NPU kernels (kh x kw)", kernels),
        LimitRow("NPU stride", f"{m.npu_stride}"),
    )


def map_network(
    network: Any, limits: SiracusaLimits | str | None, calibration: Any, drop_synapse: bool = False
) -> tuple[list, Specification]:
    """The float layer descriptions of a network (or graph) and their Siracusa specification.

    Args:
        network: a chain of linear weights and LIF neurons (a ``pondlib.nn`` network or a graph).
        limits: the variant.
        calibration: representative float input (B, T, N_in) that sets the integer scales.
        drop_synapse: feed LIF input straight into the membrane (the integer LIF has no synaptic
            current); without it a LIF with a synaptic time constant raises
            :class:`~pondlib.errors.GraphError` (``what == "LIF synaptic current"``).

    Returns:
        ``(layers, spec)``: the float layers (for ``float_forward``, the float model of the chip's
        dynamics) and the mapper's specification.
    """
    layers = layers_from_graph(network, drop_synapse=drop_synapse)
    return layers, mapper(layers, limits, calibration=calibration)


def configure(spec: Specification, where: str = "configure") -> SiracusaConfig:
    """The configuration of a specification, or a :class:`~pondlib.errors.ConfigError` saying why it is
    invalid (``where`` names the caller in the message)."""
    config, ok, message = config_from_specification(spec)
    if not ok:
        raise ConfigError(
            "the Siracusa configuration is invalid", value=message, where=where, fix="report this as a bug"
        )
    return config


def resource_usage(spec: Specification, limits: SiracusaLimits | str | None) -> tuple[Resource, ...]:
    """The resources one step of one sample uses on ``limits``: L2 (constants, peak activations and LIF
    states), the constants alone, the largest L1 tile, the tiles, the integer LIF state width, the MACs
    and the modelled cycles (``limits.n_cores`` cores, SIMD, tiled).

    Raises:
        ConfigError: ``spec`` not a mapper :class:`Specification`, or an unknown ``limits``.
    """
    lim, cfg = get_limits(limits), _spec(spec, "resource_usage").config
    plans = [p for p in spec.plans if p is not None]
    l1_tile = max((p.footprint for p in plans), default=0)
    rows = [
        Resource(
            "L2 used",
            spec.placement.l2_used,
            lim.l2_bytes,
            unit="B",
            note="constants + peak activations and LIF states",
        ),
        Resource(
            "constants: int8 weights, int32 biases, LIF parameters",
            sum(spec.placement.weight_bytes.values()),
            None,
            unit="B",
        ),
        Resource("largest L1 tile footprint", l1_tile, cfg.l1_budget or lim.l1_tile_budget, unit="B"),
        Resource("L1 tiles per step", sum(p.n_tiles for p in plans), None),
    ]
    lifs = [q for q in cfg.layers if isinstance(q, QLIF)]
    if lifs:
        rows.append(
            Resource("integer LIF state width", max(q.state_bits for q in lifs), lim.state_bits_max, unit="bits")
        )
    cycles = cycle_table(cfg, cores=lim.n_cores, simd=True, tiled=True)
    rows.append(Resource("MACs per step", sum(r.macs for r in cycles), None))
    rows.append(
        Resource(
            "cycles per step",
            float(np.sum([r.total for r in cycles])),
            None,
            note=f"model; {lim.n_cores} cores, SIMD, tiled",
        )
    )
    return tuple(rows)


@dataclass(frozen=True)
class LayerError:
    """The quantization of one integer layer.

    Attributes:
        name, kind: the layer and its type (``QGemm``, ``QConv2d``, ``QRequant``, ``QLIF``).
        shift: the RequantShift (or LIF) shift.
        mul_rel_error: relative error of ``mul / 2^shift`` against the float multiplier.
        weight_error: ``max |W - W_q s| / max |W|``, or None for a layer without weights.
        placement: where its constants live (``"L2"``, ``"L3"``, ...).
        npu_eligible: whether the N-EUREKA NPU can run it; npu_reason: why not (or ``""``).
    """

    name: str
    kind: str
    shift: int
    mul_rel_error: float
    weight_error: float | None
    placement: str
    npu_eligible: bool
    npu_reason: str


@dataclass(frozen=True)
class QuantizationSummary:
    """The quantization of a mapping: one row per layer and the input format (``input_signed``,
    ``input_bits``, the integer ``input_range`` and ``input_scale``, float units per integer step)."""

    layers: tuple[LayerError, ...]
    input_signed: bool
    input_bits: int
    input_range: tuple[int, int]
    input_scale: float


def quantization_summary(spec: Specification) -> QuantizationSummary:
    """The quantization error of every layer of a specification (chain order) and its input format.

    Raises:
        ConfigError: ``spec`` not a mapper :class:`Specification`.
    """
    _spec(spec, "quantization_summary")
    rows = tuple(
        LayerError(
            r.name,
            r.kind,
            int(r.shift),
            float(r.mul_rel_error),
            float(r.weight_error) if r.kind in _WEIGHT_KINDS else None,
            r.placement,
            bool(r.npu_eligible),
            r.npu_reason,
        )
        for r in spec.reports
    )
    cfg = spec.config
    lo, hi = cfg.input_range
    return QuantizationSummary(
        rows, bool(cfg.input_signed), int(cfg.input_bits), (int(lo), int(hi)), float(cfg.input_scale)
    )


@dataclass(frozen=True)
class FloatChipGaps:
    """The known differences between a float model and Siracusa, measured on one run.

    Attributes:
        layer: the first integer LIF layer, which the numbers below describe.
        max_spikes_per_step: spikes a neuron can emit per step (1).
        decay_float: the float membrane decay per step, ``exp(-dt / tau_mem)``.
        decay_mul, decay_shift: the chip's decay multiplier: ``decay_chip = decay_mul / 2^decay_shift``.
        state_bits: the integer LIF state width (bits, saturating).
        weight_error: largest relative weight error of the first layer.
        rate_float, rate_chip: mean spikes per neuron per step of that LIF layer, float and chip.
    """

    layer: str
    max_spikes_per_step: int
    decay_float: float
    decay_mul: int
    decay_shift: int
    state_bits: int
    weight_error: float
    rate_float: float
    rate_chip: float

    @property
    def decay_chip(self) -> float:
        """The chip's membrane decay per step."""
        return self.decay_mul / 2.0**self.decay_shift


def float_vs_chip_gaps(spec: Specification, record: dict, float_spikes: Any, tau_mem: Any, dt: float) -> FloatChipGaps:
    """Measure the float-vs-chip gaps of one run.

    Args:
        spec: the specification that ran.
        record: the simulator record (``<layer>/spikes``: (B, T, N)).
        float_spikes: the float model's spikes of the first LIF layer on the same input (B, T, N).
        tau_mem: that layer's float membrane time constant (s; the first value is used); dt: step (s).

    Example:
        >>> from pondlib import nn
        >>> net = nn.Sequential(nn.Linear(4, 16, weight=np.full((4, 16), 0.5)), nn.LIF(16, tau_mem=0.02))
        >>> _, spec = map_network(net, "siracusa", np.ones((2, 3, 4)), drop_synapse=True)
        >>> rec = {f"{spec.reports[1].name}/spikes": np.ones((2, 3, 16))}
        >>> g = float_vs_chip_gaps(spec, rec, np.zeros((2, 3, 16)), tau_mem=0.02, dt=1e-3)
        >>> round(g.decay_float, 4), round(g.decay_chip, 4), g.rate_chip
        (0.9512, 0.9512, 1.0)

    Raises:
        ConfigError: ``spec`` not a mapper :class:`Specification`, or one without an integer LIF layer.
        SimulationError: ``record`` not a dict holding ``"<lif>/spikes"``, spikes that are not finite
            real numbers, ``tau_mem`` or ``dt`` not finite and > 0.
    """
    where = "float_vs_chip_gaps"
    spec = _spec(spec, where)
    hidden = next((q for q in spec.config.layers if isinstance(q, QLIF)), None)
    if hidden is None:
        raise ConfigError(
            "integer LIF layer",
            value=[type(q).__name__ for q in spec.config.layers],
            limit="at least one QLIF layer",
            where=where,
            fix="measure the gaps of a spiking network (a mapping with an IntLIFLayer)",
        )
    key = f"{hidden.name}/spikes"
    if not isinstance(record, Mapping) or key not in record:
        shown = sorted(map(str, record))[:6] if isinstance(record, Mapping) else f"a {type(record).__name__}"
        raise SimulationError(
            "record",
            value=shown,
            limit=f"a dict with {key!r}",
            where=where,
            fix="pass the record of SiracusaSim.evolve(x, record=True)",
        )
    chip = as_float_array(record[key], key, where=where, error=SimulationError, ndim=(2, 3))
    flt = as_float_array(float_spikes, "float_spikes", where=where, error=SimulationError, ndim=(2, 3))
    tau = as_array(tau_mem, "tau_mem", where=where, error=SimulationError)
    tau0 = check_float(
        tau.ravel()[0] if tau.dtype.kind != "b" else tau_mem,  # a bool is never a time constant
        "tau_mem",
        lo=0.0,
        lo_open=True,
        where=where,
        error=SimulationError,
    )
    dt = check_float(dt, "dt", lo=0.0, lo_open=True, where=where, error=SimulationError)
    mul = int(np.asarray(hidden.beta_mul).ravel()[0])
    with np.errstate(over="ignore", under="ignore"):  # tau far below dt: a full decay in one step (0)
        decay = float(np.exp(-(np.float64(dt) / np.float64(tau0))))
    return FloatChipGaps(
        layer=hidden.name,
        max_spikes_per_step=1,
        decay_float=decay,
        decay_mul=mul,
        decay_shift=int(hidden.shift),
        state_bits=int(hidden.state_bits),
        weight_error=float(spec.reports[0].weight_error),
        rate_float=float(flt.mean()),
        rate_chip=float(chip.mean()),
    )


def quantization_table(q: QuantizationSummary) -> Table:
    """The table of a :class:`QuantizationSummary`: shift, multiplier and weight error, placement and NPU
    eligibility per layer."""
    lo, hi = q.input_range
    return Table(
        "Quantization (int8 weights per output channel, RequantShift / integer LIF multipliers)",
        (
            ("layer", "left"),
            ("kind", "left"),
            ("shift", "right"),
            ("multiplier error", "right"),
            ("weight error", "right"),
            ("constants in", "left"),
            ("NPU", "left"),
        ),
        tuple(
            (
                r.name,
                r.kind,
                str(r.shift),
                f"{r.mul_rel_error:.2e}",
                "-" if r.weight_error is None else f"{r.weight_error:.2%}",
                r.placement,
                "yes" if r.npu_eligible else f"no: {r.npu_reason}",
            )
            for r in q.layers
        ),
        caption=(
            f"input: {'int' if q.input_signed else 'uint'}{q.input_bits} {lo}..{hi}, one step = "
            f"{q.input_scale:.4g} float units; weight error = max |W - W_q s| / max |W|; "
            "multiplier error = relative error of mul / 2^shift"
        ),
    )


def gaps_table(
    name: str, g: FloatChipGaps, first: Any = (), calibration: str = "the calibration input", activity_note: str = ""
) -> Table:
    """The float-vs-chip table of a :class:`FloatChipGaps`, after the caller's own ``first`` rows;
    ``calibration`` names the input the scales came from."""
    rows = [
        *first,
        (
            "membrane decay per step",
            f"exp(-dt/tau) = {g.decay_float:.4f}",
            f"{g.decay_mul} / 2^{g.decay_shift} = {g.decay_chip:.4f}",
            "rounded multiplier",
        ),
        (
            "state",
            "float32",
            f"int{g.state_bits}, saturating; round half up",
            f"state scale from the largest membrane value on {calibration}",
        ),
        (
            "weights",
            "float32",
            "int8 per output channel, int32 accumulator",
            f"{g.weight_error:.2%} largest relative error on input weights",
        ),
        ("delay per layer", "0 steps", "0 steps (layers run in order within a step)", ""),
        ("hidden activity", f"{g.rate_float:.3f} spikes/neuron/step", f"{g.rate_chip:.3f}", activity_note),
    ]
    return gap_table(name, rows)
