r"""Timing of the DNN graph path per op, on one chip or several (extends the MLP model of ``timing``).

One inference of ops ``o`` with ``M_o`` MACs, ``P_o`` parameter bytes, ``E_o`` output elements, ``A_o`` bytes of
activations read and written, ``W_o = min(tiles_o, 147)`` workers (PEs per chip minus the scheduler), and
transfers ``x`` of ``S_x`` bytes over ``h_x = |dst - src|`` hops (chips in a chain):

.. math::

    t = t_{setup} + \sum_o \big(t_{sched} + P_o / BW + \frac{M_o / W_o}{64 f_{clk} \eta}
        + \frac{c_o E_o / W_o}{f_{clk}} + t_{io} + P_o / H + A_o / BW\big)
        + \sum_x \big(h_x t_{hop} + S_x / BW_{link}\big) + t_{cleanup}

======================  =================================  ===========================================================
field                   value                              source
======================  =================================  ===========================================================
``t_sched``             13 us per op                       calibrated: the paper's scheduler overhead per layer
``BW``                  2.09 GB/s                          calibrated: FC1's 401,408 weight bytes in 192 us
``eta``                 MLA efficiency of ``PAPER_MODEL``  calibrated: FC1's 29 us of MLA time
``t_io``, ``H``         per-op fixed worker cost, worker-  calibrated (``PAPER_MODEL.io_fixed_s``,
                        side weight handling rate          ``weight_handling_Bps``: FC1's and FC2+FC3's other time)
``t_setup/t_cleanup``   39 us / 93 us                      calibrated: measured by the paper (once per inference)
``c_o``                 Arm cycles per output element      assumed (:data:`ARM_CYCLES`; Cortex-M4F estimates)
``A_o / BW``            activations through DRAM           assumed: the workers read inputs and write outputs at BW
``t_hop``               1 us per hop                       assumed: link set-up and one router hop
``BW_link``             250 MB/s                           assumed: one 2 Gbit/s chip-to-chip link per transfer
======================  =================================  ===========================================================

A ``reshape`` costs nothing (the buffer is reinterpreted). Chips run one after another for one inference (a
pipeline over a stream of inputs would overlap them; ``throughput_s`` reports the slowest chip's share, the
interval of such a pipeline), except the parts of an op split over chips (``attrs['part']``), which run at the
same time: the slowest part counts once. Transfers are counted one after another (assumed; a conservative
bound: the input's copies to a split op's chips and the slices gathered back do not overlap), and the gather
(``concat``) is an Arm op of ``c = 2`` cycles per element.

Example:
    >>> import numpy as np
    >>> from pondlib.devices.spinnaker2.graph_ops import GraphOp
    >>> from pondlib.devices.spinnaker2.dnn_graph import GraphConfig
    >>> fc = GraphOp("fc", "gemm", (-1,), (512,), (0,), 0, weights=np.zeros((784, 512), np.int64),
    ...              bias=np.zeros(512, np.int64), tiles=5)
    >>> rep = estimate_graph(GraphConfig((fc,), (784,), 0))
    >>> round(rep.ops[0].fetch_s * 1e6), round(rep.ops[0].sched_s * 1e6)
    (193, 13)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.devices.spinnaker2.limits import SPINNAKER2_CHIP
from pondlib.devices.spinnaker2.timing import PAPER_MODEL, TimingModel
from pondlib.errors import ConfigError
from pondlib.validate import check_float, check_type

__all__ = ["ARM_CYCLES", "GraphTimingModel", "OpTiming", "GraphTimingReport", "estimate_graph", "FIELD_SOURCES"]

#: Assumed Arm Cortex-M4F cycles per output element of each Arm-core op (loads, stores, loop overhead
#: included; softmax, norms and GELU include their multiplies, divisions and the square root per row spread
#: over the row).
ARM_CYCLES: dict[str, float] = {
    "relu": 2.0,
    "add": 5.0,
    "maxpool": 3.0,  # per window cell, times the window size
    "avgpool": 3.0,  # per window cell, times the window size, plus a division
    "transpose": 4.0,
    "softmax": 40.0,
    "layernorm": 30.0,
    "rmsnorm": 25.0,
    "gelu": 20.0,
    "concat": 2.0,  # one load and one store per element (the gather of a split op)
}

#: Each field of :class:`GraphTimingModel`: "calibrated" (from the paper's measurements) or "assumed".
FIELD_SOURCES: dict[str, str] = {
    "base": "calibrated (PAPER_MODEL: t_sched 13 us, BW, eta, t_io, H, setup, cleanup)",
    "arm_cycles": "assumed (Cortex-M4F estimates per element)",
    "activation_io": "assumed (activations through DRAM at the calibrated BW)",
    "hop_s": "assumed (1 us per chip-to-chip hop)",
    "link_bandwidth": "assumed (250 MB/s: one 2 Gbit/s link)",
}


@dataclass(frozen=True)
class GraphTimingModel:
    """The MLP model's calibrated coefficients (``base``) plus the assumed Arm-core and link figures."""

    base: TimingModel = PAPER_MODEL
    arm_cycles: dict[str, float] = field(default_factory=lambda: dict(ARM_CYCLES))
    hop_s: float = 1e-6
    link_bandwidth: float = 250e6
    workers_per_chip: int = SPINNAKER2_CHIP.usable_pes_per_chip - 1

    def __post_init__(self) -> None:
        where = "GraphTimingModel"
        check_type(self.base, "base", TimingModel, where=where, error=ConfigError)
        check_float(self.hop_s, "hop_s", lo=0.0, where=where, error=ConfigError)
        check_float(self.link_bandwidth, "link_bandwidth", lo=0.0, lo_open=True, where=where, error=ConfigError)


@dataclass(frozen=True)
class OpTiming:
    """One op's time split into its parts (seconds); ``unit`` is ``"MLA"``, ``"Arm"`` or ``"-"``."""

    name: str
    op: str
    unit: str
    chip: int
    workers: int
    weight_bytes: int
    sched_s: float
    fetch_s: float
    mla_s: float
    arm_s: float
    io_s: float

    @property
    def total_s(self) -> float:
        return self.sched_s + self.fetch_s + self.mla_s + self.arm_s + self.io_s


@dataclass(frozen=True)
class GraphTimingReport:
    """Per-op rows, the transfers' times, setup and cleanup; totals per chip and end to end."""

    ops: tuple[OpTiming, ...]
    transfers_s: tuple[float, ...]
    setup_s: float
    cleanup_s: float
    chips: int
    #: Op indices that run at the same time: the parts of each split op (one chip each).
    parallel: tuple[tuple[int, ...], ...] = ()

    @property
    def total_s(self) -> float:
        """Latency of one inference (chips one after another, the parts of a split op concurrently: the
        slowest part counts; transfers included)."""
        ops = sum(o.total_s for o in self.ops)
        for group in self.parallel:
            times = [self.ops[i].total_s for i in group]
            ops -= sum(times) - max(times)
        return self.setup_s + ops + sum(self.transfers_s) + self.cleanup_s

    def chip_s(self) -> list[float]:
        """Op time per chip."""
        out = [0.0] * self.chips
        for o in self.ops:
            out[o.chip] += o.total_s
        return out

    @property
    def throughput_s(self) -> float:
        """Interval between inferences of a pipeline over the chips: the slowest chip (+ setup/cleanup)."""
        return max(self.chip_s()) + self.setup_s + self.cleanup_s

    def table(self) -> str:
        """Fixed-width table: one row per op, then transfers, setup, cleanup and the total (us)."""
        rows = [
            f"{'op':<12} {'kind':<10} {'unit':<4} {'chip':>4} {'workers':>7} {'params B':>9} {'sched':>7} "
            f"{'fetch':>7} {'MLA':>7} {'Arm':>7} {'io':>7} {'total us':>9}"
        ]
        for o in self.ops:
            rows.append(
                f"{o.name[:12]:<12} {o.op:<10} {o.unit:<4} {o.chip:>4} {o.workers:>7} {o.weight_bytes:>9} "
                f"{o.sched_s * 1e6:>7.1f} {o.fetch_s * 1e6:>7.1f} {o.mla_s * 1e6:>7.1f} {o.arm_s * 1e6:>7.1f} "
                f"{o.io_s * 1e6:>7.1f} {o.total_s * 1e6:>9.1f}"
            )
        for name, v in (("transfers", sum(self.transfers_s)), ("setup", self.setup_s), ("cleanup", self.cleanup_s)):
            rows.append(f"{name:<12} {'':>83} {v * 1e6:>9.1f}")
        rows.append(f"{'total':<12} {'':>83} {self.total_s * 1e6:>9.1f}")
        return "\n".join(rows)


def _arm_elements(op: Any, cfg: Any, i: int) -> float:
    """Output elements weighted by the window size for pools."""
    n = float(np.prod(op.out_shape)) if len(op.out_shape) else 1.0
    if op.op in ("maxpool", "avgpool"):
        n *= float(np.prod(op.attr("kernel")))
    return n


def estimate_graph(cfg: Any, model: GraphTimingModel | None = None) -> GraphTimingReport:
    """Time one inference of a :class:`~pondlib.devices.spinnaker2.dnn_graph.GraphConfig` (module docstring).

    Raises:
        ConfigError: a config that is not a GraphConfig, a model that is not a GraphTimingModel.
    """
    from pondlib.devices.spinnaker2.dnn_graph import GraphConfig

    check_type(cfg, "cfg", GraphConfig, where="estimate_graph", error=ConfigError, fix="build one with graph_mapper")
    model = GraphTimingModel() if model is None else model
    check_type(model, "model", GraphTimingModel, where="estimate_graph", error=ConfigError)
    b = model.base
    rows = []
    for i, op in enumerate(cfg.ops):
        ins = cfg.in_shapes(i)
        w = max(1, min(op.tiles, model.workers_per_chip))
        if op.op == "reshape":
            rows.append(OpTiming(op.name, op.op, "-", op.chip, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0))
            continue
        act = sum(int(np.prod(s)) for s in ins) + int(np.prod(op.out_shape))
        macs = op.macs(ins)
        mla = macs / w / (b.mla_macs_per_cycle * b.clock_hz * b.mla_efficiency)
        arm = 0.0
        if op.op not in ("gemm", "conv", "matmul"):
            arm = model.arm_cycles.get(op.op, 4.0) * _arm_elements(op, cfg, i) / w / b.clock_hz
        rows.append(
            OpTiming(
                op.name,
                op.op,
                "MLA" if macs else "Arm",
                op.chip,
                op.tiles,
                op.weight_bytes,
                b.layer_overhead_s,
                op.weight_bytes / b.dram_bandwidth,
                mla,
                arm,
                b.io_fixed_s + op.weight_bytes / b.weight_handling_Bps + act / b.dram_bandwidth,
            )
        )
    xfers = tuple(model.hop_s * max(1, abs(t.dst - t.src)) + t.bytes / model.link_bandwidth for t in cfg.transfers)
    return GraphTimingReport(tuple(rows), xfers, b.setup_s, b.cleanup_s, cfg.chips, _parts(cfg.ops))


def _parts(ops: Any) -> tuple[tuple[int, ...], ...]:
    """Index groups of the parts of each split op (``attrs['part'] = (p, k, first)``, parts consecutive)."""
    out, run = [], []
    for i, op in enumerate(ops):
        part = op.attr("part") if "part" in op.attrs else None
        if part and part[0] == 0:
            run = [i]
        elif part and run and part[0] == len(run):
            run.append(i)
        if part and len(run) == part[1]:
            out.append(tuple(run))
            run = []
    return tuple(out)
