r"""Cycle model of pondlib's own cluster C (:func:`~.graph_codegen_cluster.emit_cluster`), per op and tile.

:func:`~.graph_map.map_graph` models *Deeploy's* PULP kernels (XpulpV2 SIMD dot products, hardware loops, a
cluster fork per kernel call). The C that pondlib generates is portable C: built for the emulated RV32IMC
cluster (:func:`~pondlib.codegen.cluster.run_cluster`) it has neither SIMD nor hardware loops, and its cores
run one SPMD step separated by barriers instead of a fork per kernel. :func:`cluster_cycles` predicts that
C's cycles on the emulated cluster from the emitted plan (a :class:`~.graph_codegen_cluster.ClusterReport`):
what ``pond compile --target rv32`` measures, and what a user running pondlib's C on the cluster should expect
before SIMD kernels replace the portable loops. The two models side by side give the SIMD / hardware-loop
factor per op (``benchmarks/siracusa_c.py``, section 4).

**Per op and tile** (``P`` cores, an op of ``U`` work units: MACs for MatMul / Gemm / Conv, output values
otherwise (graph_map's ``work``), ``n`` tiles of equal size):

.. math::

    K_t &= \big(k_{op}\,U + k_{loop}\,E + r\,k_{rq}\,N_{out}\big)\,\frac{s(P)}{n} + c_{tile} \\
    D^{in}_t &= S\,x_{in} / n + B_{in} / (n W), \qquad D^{out}_t = S + B_{out} / (n W), \qquad
        D^{w} = S\,x_w + B_w / W

``k_op`` instructions per unit of the op's portable loop, ``k_loop`` per entry into its innermost loop (``E``:
:func:`loop_entries`; the loop set-up, and per output value the store and requantization), ``c_tile`` its
per-tile overhead (two barriers,
loop bounds, DMA issue, the marker) from :data:`PORTABLE_CYCLES` (calibrated on the emulated cluster: below;
an op fused with its RequantShift has its own entry, else ``r = 1`` adds ``k_rq`` per output value of the
fused RequantShift), ``S`` / ``W`` the DMA's set-up
cycles and bytes per cycle (:data:`~pondlib.codegen.cluster.DMA_SETUP_CYCLES`,
:data:`~pondlib.codegen.cluster.DMA_BYTES_PER_CYCLE`), ``B_w`` / ``x_w`` the operands DMA'd whole (the op's
constants: its weights), ``B_in`` the tiled inputs, ``B_out`` the output. ``s(P)`` is the slowest core's share
of a tile: ``ceil(m / P) / m`` over the split extent ``m`` (a tile's rows when it has at least ``P``; a MatMul
/ Gemm tile of fewer rows splits its columns; an element-wise row splits its values, ``1 / P``; a norm's row
``f + (1 - f) / P``, every core repeating the statistics (:data:`NORM_SERIAL` ``f``); a halo-tiled Conv or pool
the better of its rows and its output channels or planes, as the C chooses).

**Schedule** (as the C does it): the whole operands and tile 0's inputs go first (``D^w + D^{in}_0``), then
single buffered ``sum_t (K_t + D^out_t + D^in_{t+1})`` (every transfer waited for at once) or double
buffered ``sum_t max(K_t, D^in_{t+1} + D^out_{t-1})`` plus the last output, as :mod:`~.cycles` combines
tiles. :attr:`OpCycles.cycles` is the op's time *from its first tile's marker* (the emulator's profile
span: the op's kernels and its exposed DMA, plus the next op's up-front transfers, which the C issues
before the next marker), so that the model and :attr:`~pondlib.codegen.cluster.ClusterRun.profile` compare
op for op; :attr:`OpCycles.upfront` is the op's own up-front part.

**Calibration** (``python benchmarks/siracusa_c.py --calibrate``): per op kind, a non-negative least-squares fit
(errors weighted by ``1 / sqrt``, so that small ops count beside large ones) of the emulated slowest-core
instructions of its ops to ``k_op U + k_loop E + c_tile`` on one core with every op in one tile (L1 256 KiB, single
buffered) over the digits MLP and Deeploy's miniMobileNet, KeywordSpotting, microLlama1 and microLlama128 (fewer
distinct sizes, fewer terms: ``k_loop = 0``, then ``c_tile`` the median intercept). Ops not in the table take their
family's values (:data:`FAMILY_CYCLES`). Held out, what the model must predict from the plan: 8 cores (the split;
norms excepted: :data:`NORM_SERIAL`), the smaller L1 with its tiles, double buffering and the DMA. The deviations
per op kind are section 5 of ``benchmarks/results/siracusa_c.txt``.

Example:
    >>> from pondlib.devices.siracusa.cluster_cycles import tile_schedule
    >>> tile_schedule([100.0, 100.0], [30.0, 30.0], [20.0, 20.0], double=False)  # K + D_out + D_in(next)
    270.0
    >>> tile_schedule([100.0, 100.0], [30.0, 30.0], [20.0, 20.0], double=True)  # the next inputs hidden
    220.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pondlib.errors import ConfigError
from pondlib.validate import check_float, check_int

__all__ = ["OpCycles", "cluster_cycles", "tile_schedule", "loop_entries", "PORTABLE_CYCLES", "FAMILY_CYCLES",
           "FUSED_REQUANT_CYCLES", "NORM_SERIAL"]  # fmt: skip

#: op (``+rq``: with a RequantShift fused into its store) -> (``k_op`` emulated RV32IMC instructions per work
#: unit, ``k_loop`` per innermost-loop entry, ``c_tile`` per tile outside the loops: barriers, loop bounds, DMA
#: issue and wait, the marker). Calibrated (module docstring); each entry's comment gives its calibration set.
PORTABLE_CYCLES: dict[str, tuple[float, float, float]] = {
    "Add+rq": (12.351, 0.000, 67.3),  # eltwise, 160 ops, work 32..2,064, worst residual 58%
    "Clip": (7.051, 0.000, 14.1),  # eltwise, 1 ops, work 512..512, worst residual 0%
    "Concat": (4.978, 0.000, 0.0),  # copy, 32 ops, work 128..8,256, worst residual 46%
    "Conv+rq": (4.162, 3.107, 0.0),  # mac, 13 ops, work 2,304..409,600, worst residual 43%
    "Gemm+rq": (6.986, 0.000, 335.7),  # mac, 2 ops, work 768..2,560, worst residual 0%
    "MatMul": (7.000, 9.020, 51.2),  # mac, 112 ops, work 4,096..16,384, worst residual 0%
    "MatMul+rq": (6.923, 0.000, 0.0),  # mac, 66 ops, work 128..32,768, worst residual 43%
    "MaxPool": (8.736, 0.000, 14.1),  # reduce, 1 ops, work 6,400..6,400, worst residual 0%
    "Mul": (7.082, 0.000, 14.1),  # eltwise, 16 ops, work 256..256, worst residual 0%
    "RequantShift": (10.656, 0.000, 28.2),  # eltwise, 106 ops, work 2..2,064, worst residual 47%
    "Transpose": (4.635, 0.000, 0.0),  # copy, 80 ops, work 64..8,256, worst residual 163%
    "TrueIntegerDiv": (7.002, 0.000, 32.9),  # eltwise, 16 ops, work 32..2,064, worst residual 0%
    "iHardswish": (10.202, 0.000, 14.1),  # eltwise, 16 ops, work 256..256, worst residual 36%
    "iRMSNorm": (77.842, 0.000, 14.1),  # norm, 34 ops, work 128..128, worst residual 2%
    "iSoftmax": (98.305, 0.000, 0.0),  # softmax, 16 ops, work 96..6,192, worst residual 677%
}  # fmt: skip
#: Per family, for ops the calibration cases do not contain: (``k``, ``k_loop``, ``c_tile``).
FAMILY_CYCLES: dict[str, tuple[float, float, float]] = {
    "mac": (7.2, 0.0, 60.0), "eltwise": (13.0, 0.0, 60.0), "copy": (3.0, 0.0, 60.0), "norm": (78.0, 0.0, 60.0),
    "softmax": (30.0, 0.0, 60.0), "reduce": (6.0, 0.0, 60.0), "alias": (0.0, 0.0, 0.0),
}  # fmt: skip
#: The share of a norm's row work every core repeats when a tile has fewer rows than cores (the statistics pass).
#: Fit on the 8-core emulation (the one coefficient not from one core): microLlama1's iRMSNorm rows take about
#: 10,000 instructions on 1 core and 2,100 on the slowest of 8 without their DMA: ``f + (1 - f) / 8 = 0.21``.
NORM_SERIAL = 0.10
#: Instructions per output value of a RequantShift fused into its producer's store (when only the unfused op
#: is calibrated).
FUSED_REQUANT_CYCLES = 12.0


@dataclass(frozen=True)
class OpCycles:
    """One op's predicted cycles: ``kernel`` (the tiles' compute on the slowest core), ``dma`` (exposed
    transfer time), ``upfront`` (its whole operands and first inputs, before its first marker), ``cycles``
    (from its first marker to the next op's: module docstring), ``per_tile`` (``cycles`` / tiles)."""

    index: int
    name: str
    op: str
    tiles: int
    kernel: float
    dma: float
    upfront: float
    cycles: float

    @property
    def per_tile(self) -> float:
        return self.cycles / max(self.tiles, 1)


def tile_schedule(kernels: list[float], ins: list[float], outs: list[float], *, double: bool) -> float:
    """Cycles of an op's tiles after tile 0's inputs arrived (module docstring): ``kernels``, ``ins`` and ``outs``
    per tile (``ins[0]`` is not counted: it is up front)."""
    n = len(kernels)
    if not double:
        return sum(kernels) + sum(outs) + sum(ins[1:])
    total = 0.0
    for t in range(n):
        hidden = (ins[t + 1] if t + 1 < n else 0.0) + (outs[t - 1] if t > 0 else 0.0)
        total += max(kernels[t], hidden)
    return total + outs[-1]


def _part(m: int, cores: int) -> float:
    return math.ceil(m / cores) / m if m > 0 else 1.0


def _share(row: Any, cores: int, family: str, shape: tuple) -> float:
    """The slowest core's share of a tile's work (module docstring)."""
    if row.mode == "whole" or cores == 1:
        return 1.0 / cores if cores > 1 else 1.0
    if row.mode == "halo":  # output rows or output channels (Conv) / planes (pools), whichever is better
        across = (row.tile_cols or (shape[1] if len(shape) > 1 else 1)) if row.op == "Conv" else math.prod(shape[:2])
        return min(_part(row.tile_rows, cores), _part(int(across), cores))
    m = row.tile_rows
    if m < cores and family == "norm":  # every core computes the row's statistics, then its share of the values
        return NORM_SERIAL + (1.0 - NORM_SERIAL) / cores
    if m < cores:
        if row.op in ("MatMul", "Gemm"):
            m = row.tile_cols or row.cols or m
        elif family == "eltwise":
            return 1.0 / cores
    return math.ceil(m / cores) / m if m else 1.0


def _coefficients(op: str, fused: bool, family: str) -> tuple[float, float, float, float]:
    """(k per unit, k per loop entry, c per tile, k_rq per output value) of one op (module docstring)."""
    if fused and op + "+rq" in PORTABLE_CYCLES:
        return (*PORTABLE_CYCLES[op + "+rq"], 0.0)
    k, k_loop, c = PORTABLE_CYCLES.get(op, FAMILY_CYCLES.get(family, FAMILY_CYCLES["eltwise"]))
    return k, k_loop, c, FUSED_REQUANT_CYCLES if fused else 0.0


def loop_entries(node: Any, graph: Any, work: float, n_out: float) -> float:
    """``E``, the entries into an op's innermost loop: a convolution's ``U / k_w`` (its innermost loop runs over
    the kernel's width), the output values of anything else (a MatMul's inner loop runs over ``K`` once per
    output value; an element-wise op's loop body is one value)."""
    if node is not None and node.op == "Conv" and len(node.inputs) > 1 and node.inputs[1] in graph.constants:
        shape = getattr(graph.constants[node.inputs[1]], "shape", ())
        return work / max(int(shape[-1]), 1) if len(shape) >= 3 else n_out
    return n_out


def cluster_cycles(
    graph: Any,
    report: Any,
    *,
    cores: int | None = None,
    dma_setup_cycles: float = 50.0,
    dma_bytes_per_cycle: float = 8.0,
) -> tuple[OpCycles, ...]:
    """Predicted cycles of each op of an emitted cluster program (module docstring).

    Args:
        graph: the integer :class:`~pondlib.graph.opgraph.OpGraph` the program was emitted from.
        report: its :class:`~.graph_codegen_cluster.ClusterReport`.
        cores: the core count the program is built for (default: the report's).
        dma_setup_cycles, dma_bytes_per_cycle: the DMA's ``S`` and ``W``.

    Returns:
        An :class:`OpCycles` per row of the report, in execution order.
    """
    from pondlib.devices.siracusa.graph_map import OP_FAMILIES, map_graph

    P = check_int(report.cores if cores is None else cores, "cores", lo=1, hi=8, where="cluster_cycles",
                  error=ConfigError, fix="pass 1..8 cores")  # fmt: skip
    S = check_float(dma_setup_cycles, "dma_setup_cycles", lo=0.0, hi=1e9, where="cluster_cycles", error=ConfigError)
    W = check_float(dma_bytes_per_cycle, "dma_bytes_per_cycle", lo=1e-6, hi=1e9, where="cluster_cycles",
                    error=ConfigError)  # fmt: skip
    rows_by_name = {r.name: r for r in map_graph(graph, integer=True).rows}
    nodes = {node.name: node for node in graph.nodes}
    ops = []
    for row in report.rows:
        mr = rows_by_name.get(row.name)
        family = OP_FAMILIES.get(row.op, "eltwise")
        units = float(mr.work) if mr is not None else 0.0
        n = max(row.n_tiles, 1)
        share = _share(row, P, family, tuple(mr.shape) if mr is not None else ())
        n_out = float(math.prod(mr.shape)) if mr is not None and mr.shape else 0.0
        node = nodes.get(row.name)
        k, k_loop, c, k_rq = _coefficients(row.op, bool(row.fused), family)
        kernel = (k * units + k_loop * loop_entries(node, graph, units, n_out) + k_rq * n_out) * share / n + c
        w_bytes = float(mr.weight_bytes) if mr is not None else 0.0
        x_w = 0 if node is None else sum(1 for t in dict.fromkeys(node.inputs) if t in graph.constants)
        b_out = float(row.l2_bytes)
        b_in = max(float(row.dma_bytes) - b_out - w_bytes, 0.0)
        x_in = max(row.dma_transfers - n, n)
        d_in = S * x_in / n + b_in / (n * W)
        d_out = S + b_out / (n * W)
        upfront = S * x_w + w_bytes / W + d_in
        body = tile_schedule([kernel] * n, [d_in] * n, [d_out] * n, double=row.buffering == "DB" and n > 1)
        ops.append([row.index, row.name, row.op, n, kernel * n, body - kernel * n, upfront, body])
    out = []
    for i, (index, name, op, n, kern, dma, upfront, body) in enumerate(ops):
        nxt = ops[i + 1][6] if i + 1 < len(ops) else 0.0
        out.append(OpCycles(index, name, op, n, kern, dma, upfront, body + nxt))
    return tuple(out)
