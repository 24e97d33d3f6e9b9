r"""Siracusa's integer graphs as the cluster runs them: tensors in L2, tiles DMA'd into L1, work over 8 cores.

:func:`emit_cluster` writes the same numbers as :func:`~pondlib.devices.siracusa.graph_codegen.emit_graph` (bit for
bit ``GraphSim`` in integer mode; range analysis, storage types and packing as documented there), scheduled
for the cluster runtime of :mod:`pondlib.cprogram.cluster`: the step sets the L2 buffer pointers and runs
``POND_CLUSTER_RUN(<net>_cluster, x, y)``; every core runs every op in topological order, then (template
``graph_cluster_out.c``, after a barrier) the cores copy the graph outputs into ``y``, each its share of every
output, under the profile marker ``number of ops * 65536`` (so the last op's profile ends with the op, not with
the copy; on the emulated cluster, where each core runs the whole step, a copy in the step would run on every core).

**RequantShifts skipped and fused** (``ClusterReport.extra``: ``"skipped"``, the names; ``"fused"``, MatMul / Gemm /
Conv / Add name -> RequantShift name; ``ClusterRow.fused``). A RequantShift that the range analysis proves to be the
identity (uniform ``mul == div``, a power of two, uniform ``add == 0``, no broadcast beyond its input's shape, the
input's range within the output levels: ``(x 2^s + 2^(s-1)) >> s == x``, never clamped) is skipped: its output
aliases its input (no C, no DMA), as Deeploy's SkipUnityRequantPass. With ``fuse_requant`` (default), a RequantShift
that is the only reader of a row- and column-tiled MatMul / Gemm's output (not a graph output), its mul and add
uniform or one per output column, is fused into the MatMul / Gemm's tiles: each accumulator is requantized in L1 as
it is computed (template ``graph_requant.c``), only the requantized tile goes back to L2, and the int32 tensor
between them has no L2 buffer (Deeploy's MatMul / Gemm + RequantShift merge). The same for a Conv's RequantShift
(mul and add uniform or one per output channel: each accumulator requantized in L1) and a row-tiled Add's (mul and
add constants not broadcasting beyond the sum: the Add and the RequantShift are one element-wise op,
:mod:`~.graph_codegen_cluster_conv`). A fused op's output is live in L2 from the producer on (its tiles are written
while the producer's inputs are still read: the two never share arena memory).

**Memory plan.** Every tensor lives in L2: the program's arena (scratch buffers shared by lifetime) and ``x``;
constants live in L2 too, the largest moved to L3 (``POND_L3``, read by the DMA at L3's rate) when they do not
fit beside the tensors (:func:`~.cluster_memory.place_constants`). L1 is one static ``POND_L1`` array, reused by
every op from offset 0 (ops are separated by barriers and DMA waits) and sized by the op that needs most; every
region is 8-byte aligned. The L1 need of each op and the L2 need (arena + ``x`` + ``y`` + the constants in L2,
bytes) are checked against ``l1_bytes`` and ``l2_bytes`` at generation, refused with a
:class:`~pondlib.errors.CodegenError` naming the op (the tensors alone over L2: the op at their peak).

**Tiles.** An op's output is viewed as ``R`` rows (the product of its leading dims, the rest is one *unit*):

* *row-tiled* ops: element-wise ops and RequantShift (as many leading dims as every operand either spans fully
  or broadcasts over), per-row ops (iSoftmax, ITAMax, iRMSNorm, iLayerNorm, ITAPartialMax, QSoftmax, QLayerNorm:
  the dims before the normalized axis) and LUT. An operand spanning the rows is *tiled* (a tile of rows is one
  contiguous DMA), any other data operand is *whole* (DMA'd once per op); uniform constants stay literals.
* *row- and column-tiled* ops: MatMul (rows = batch x M, A not broadcast) and Gemm (rows of M, A not
  transposed): a tile is rows x output columns (column tiles inner). B stays whole in L1 (a batched B: every
  batch element) while one row with the whole B fits; else B takes column tiles (a B shared by the batch; one
  that differs per batch element stays whole and is refused when it does not fit). Column tiles of a constant
  B are kept transposed in flash (generation time; the untransposed array is then not emitted) and of Gemm's
  ``transB`` B are contiguous rows: one DMA per tile; those of a B (K, N) in L2 (an activation) are K strided
  rows: one 2-D transfer (``pond_dma_start_2d``, the cluster DMA's 2-D mode; ``ClusterRow.dma_transfers``
  counts the transfers, ``dma_bytes`` counts A's rows again for every column tile). C: per row, per column,
  both (one 2-D transfer) or whole.
* *halo-tiled* ops (Conv, MaxPool, AveragePool; 1-D ones as 2-D of width 1, :mod:`~.graph_codegen_cluster_conv`):
  rows are output rows (all batch elements and channels); a tile DMAs the input rows its windows read (its halo
  included, padding rows not), one 2-D transfer over the input planes, into a buffer of ``h_in`` rows per plane, and
  sends its output rows back in one 2-D transfer over the output planes (per batch element); weights and bias whole
  in L1, or (a Conv of one group whose weights do not fit with one row) output-channel tiles inner to the row tiles.
  An op that fits whole is one tile with one DMA per tensor (``mode`` 'whole'), else 'halo' (``ClusterRow.in_rows`` =
  ``h_in``).

* *separable* ops that do not fit whole, row-tiled like the element-wise ops (rows: their leading dims,
  ``SEPARABLE_OPS`` and ``_row_prefix`` in :mod:`~.graph_codegen_cluster_conv`): Concat (the dims before its axis;
  every input tiled), Transpose (the leading dims its perm keeps), GlobalMaxPool / GlobalAveragePool, ReduceSum /
  ReduceMean / IntegerMean (the dims before the first reduced axis), Slice / Gather / Pad when their index map,
  computed at generation, sends every output row to the same input row by the same map (the most leading dims for
  which it does); each row's C is the op's own kernel on one row.
* *whole-tensor* ops (a separable op that fits whole; the ops above when no leading dim qualifies, e.g. a
  Concat along axis 0, a Transpose that moves dim 0, a reduction over every axis; any op not above): one tile,
  every data operand and the output whole in L1 (without a qualifying dim, the output rows do not map to one
  run of input rows each).

Tile size: MatMul / Gemm columns first when B is tiled: the most that fit with one row (a multiple of 16 when
16 fit, else of 8 when 8 fit: a GEMV tile splits evenly over 1, 2, 4 or 8 cores), balanced over the column tiles;
then rows: the largest count whose L1 need (whole operands + tiled operands' parts, twice with double buffering,
+ the output tile) fits ``l1_bytes``, balanced over the row tiles (``ceil(R / n_tiles)``). The smallest tile
is one row (by one column; a halo-tiled op: one output row with its input rows); an op whose smallest tile does
not fit is refused, naming the op, its need and the limit (a halo-tiled op's message also gives the whole
op's need). A halo-tiled op that fits whole is single buffered (one tile: nothing to prefetch).

**Schedule per op** (template ``graph_cluster_op.c``): core 0 DMAs the whole operands; per tile t, single
buffered: core 0 DMAs the tile's inputs, waits; barrier; every core computes its share; barrier; core 0 DMAs
the output tile back to L2 (waited before the next tile's use of L1). Double buffered: tile 0's inputs go with
the whole operands; at tile t core 0 waits (tile t's inputs and tile t - 1's output are in), barrier, core 0
starts tile t + 1's inputs into the other buffer, then computes: the transfer overlaps the computation.
``pond_profile(op index * 65536 + tile index)`` marks each tile (core 0, after its inputs arrived). Halo-tiled
ops follow the same schedule (a tile's inputs: its input rows of every plane). Every transfer is waited for
before its destination is read or its source overwritten, and before the op ends.

**Work split.** ``POND_NUM_CORES`` cores (1..8; ``-DPOND_NUM_CORES`` overrides ``cores``): core c of P takes
``[n c / P, n (c + 1) / P)`` of n items. Row-tiled ops split a tile's rows; an element-wise op's tile of fewer
rows than cores (one row of N values) instead has every core run every row over its share of the row's values
(the outermost loop of more than one iteration); iRMSNorm / iLayerNorm likewise: every core computes the row's
statistics (mean, sum of squares, integer square root) redundantly, then its share of the row's values (the
division and requantization; no barrier is needed between, each core reads only the input and writes only its
values), as Deeploy's norm kernels run the serial pass on every core; the other per-row ops with fewer rows than
cores leave cores idle (a row's reduction is not split). MatMul / Gemm (template ``graph_cluster_gemm.c``): a
tile of at least P rows splits its rows (each core every column: a batched GEMV over the batch, as the cycle
model of :mod:`~.graph_map`), a smaller one, a GEMV above all, splits its output columns (``ceil(nc / P)`` per
core and row, the model's GEMM split by output channels). Halo-tiled ops split the tile's output rows when that
leaves the slowest core fewer rows, else the output channels / planes (every tile of fewer rows than cores, and
one core). Whole-tensor ops split the outermost loop of more than one iteration of each loop nest (reductions:
kept elements, copies: elements); a kernel without a loop runs on core 0. A split loop computes its bounds once
(``pond_core_id`` is a register read).

Example:
    >>> import numpy as np, tempfile
    >>> from pondlib.codegen import compile_host, run_host
    >>> from pondlib.devices.siracusa.graph_codegen import pack_inputs, unpack_outputs
    >>> from pondlib.graph.opgraph import Node, OpGraph, TensorInfo
    >>> g = OpGraph((TensorInfo("x", (4, 2), "int8"),), (TensorInfo("y", (4, 2), "int8"),),
    ...     (Node("a", "Add", ("x", "b"), ("h",)),
    ...      Node("rq", "RequantShift", ("h", "m", "z"), ("y",), {"div": 4, "n_levels_out": 256, "signed": 1})),
    ...     {"b": np.float32([1, 2]), "m": np.float32(3), "z": np.float32(0)})
    >>> prog, rep = emit_cluster_report(g, name="tiny", cores=2, l1_bytes=64)
    >>> [(r.op, r.mode, r.n_tiles, r.fused) for r in rep.rows]  # the RequantShift fused into the Add's store
    [('Add', 'rows', 2, 'rq')]
    >>> x = np.arange(-4, 4).reshape(4, 2)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     y = run_host(compile_host(prog, d, extra_flags=("-pthread",)), prog, pack_inputs(g, [x])[None])
    >>> unpack_outputs(g, y[0])[0].tolist()
    [[-2, -1], [-1, 1], [1, 2], [2, 4]]
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.cprogram.cluster import MAX_CORES, cluster_runtime
from pondlib.cprogram.program import CTYPES, Program, build_program, c_identifier, plan_arena
from pondlib.devices.siracusa.cluster_memory import place_constants
from pondlib.devices.siracusa.graph_codegen import _OPS, _channel_shape, _Emitter, _finish, _matmul_bound, _node
from pondlib.devices.siracusa.graph_codegen_cluster_conv import (
    HALO_OPS,
    SEPARABLE_OPS,
    _add_fusable,
    _add_requant,
    _conv_fusable,
    _halo_op,
    _row_prefix,
)
from pondlib.devices.siracusa.graph_codegen_cluster_tiles import (
    _ALIGN,
    ClusterRow,
    _a,
    _dma,
    _dma2d,
    _fit,
    _is_literal,
    _nbytes,
    _Operand,
    _requant_store,
)
from pondlib.devices.siracusa.graph_codegen_float import ISLANDS, island_helpers, island_inputs
from pondlib.devices.siracusa.graph_codegen_ops import _T, _acc_type, _indent, _kernel, _strides
from pondlib.devices.siracusa.kernels import KernelContext
from pondlib.devices.siracusa.kernels.deeploy_ops import levels_range
from pondlib.devices.siracusa.limits import SIRACUSA
from pondlib.errors import CodegenError, PondError
from pondlib.graph.opgraph import Node, OpGraph
from pondlib.validate import check_bool, check_int

__all__ = ["emit_cluster", "emit_cluster_report", "ClusterReport", "ClusterRow", "ROW_OPS", "ELEMENTWISE_OPS"]

_WHERE = "pondlib.devices.siracusa.graph_codegen_cluster.emit_cluster"
#: Element-wise ops, tiled by rows (the number of leading operands that are data; the rest are parameters).
ELEMENTWISE_OPS: dict[str, int] = {
    **{op: 99 for op in ("Add", "Sub", "Mul", "RequantShift", "iHardswish", "iGELU", "TrueIntegerDiv")},
    **{op: 99 for op in ("IntegerDiv", "Div", "iNoNorm")},
    **{op: 1 for op in ("Relu", "Clip", "LUT", "RequantizediHardswish", "RequantizedGELU", "RequantizediGELU")},
}
#: Per-row ops, tiled by the rows before their normalized axis (input 0 is data, the rest parameters).
ROW_OPS = ("iSoftmax", "ITAMax", "iRMSNorm", "iLayerNorm", "ITAPartialMax", "QSoftmax", "QLayerNorm")
#: Per-row ops whose tile of fewer rows than cores splits each row's values (statistics on every core).
_NORM_OPS = ("iRMSNorm", "iLayerNorm")
_FOR = re.compile(r"^(\s*)for \(int32_t (\w+) = 0; \2 < (\d+); \+\+\2\) \{$")


@dataclass(frozen=True)
class ClusterReport:
    """The plan of :func:`emit_cluster`: a row per op with C, the L1 arena and the L2 need (bytes: tensors and the
    constants kept in L2), the limits; ``extra``: ``"skipped"`` (identity RequantShifts, aliased) and ``"fused"``
    (MatMul / Gemm / Conv / Add -> RequantShift); ``l3_bytes``: the constants moved to L3."""

    rows: tuple[ClusterRow, ...]
    l1_arena: int
    l2_need: int
    l1_limit: int
    l2_limit: int
    cores: int
    extra: dict = field(default_factory=dict)
    l3_bytes: int = 0


class _TileEm:
    """An op emitter's view of one unit (or whole tensor) in L1: ``out`` returns the L1 output, ``code`` collects."""

    def __init__(self, em: _Emitter, real: _T, dst_ptr: str) -> None:
        self.em, self.real, self.dst_ptr = em, real, dst_ptr
        self.graph, self.record, self.consts_int = em.graph, False, em.consts_int
        self.helpers, self.constants = em.helpers, em.constants
        self.text: list[str] = []

    def arr(self, t: _T) -> str:
        return self.em.arr(t)

    def elem(self, t: _T, index: str) -> str:
        return self.em.elem(t, index)

    def asr(self, acc: str) -> str:
        return self.em.asr(acc)

    def out(self, name: str, shape: Any, lo: int, hi: int, node: Node) -> _T:
        return _T(tuple(int(d) for d in shape), self.real.lo, self.real.hi, self.real.ctype, self.dst_ptr)

    def code(self, node: Node, body: str) -> None:
        self.text.append(body)


def _aligned(t: _T, rank: int, op: str, x: _T) -> tuple[int, ...]:
    shape = _channel_shape(t, x) if op == "RequantShift" else t.shape
    return (1,) * (rank - len(shape)) + tuple(shape)


def _prefix(node: Node, ins: list, out: _T) -> tuple[int, list[int]]:
    """(p, data operand indices): rows = the first p output dims; p = 0 when the op is not row-tiled."""
    op, rank = node.op, len(out.shape)
    if op in ELEMENTWISE_OPS:
        data = [i for i in range(min(len(ins), ELEMENTWISE_OPS[op])) if ins[i] is not None]
        pmax = rank
    elif op in ROW_OPS:
        data = [0]
        axis = int(np.asarray(node.attrs.get("axis", -1)).reshape(-1)[0]) % max(rank, 1)
        pmax = axis if op in ("QSoftmax", "QLayerNorm") else rank - 1
    else:
        return 0, []
    if any(ins[i].shape != out.shape and ins[i].value is None and len(ins[i].shape) > rank for i in data):
        return 0, []
    params = [t for i, t in enumerate(ins) if t is not None and i not in data and op not in ("LUT", "Clip", "Relu")]
    aligned = [_aligned(ins[i], rank, op, ins[0]) for i in data] + [_aligned(t, rank, op, ins[0]) for t in params]
    n_data = len(data)
    for p in range(pmax, 0, -1):
        ok = all(
            a[:p] == out.shape[:p] or all(d == 1 for d in a[:p]) if k < n_data else all(d == 1 for d in a[:p])
            for k, a in enumerate(aligned)
        )
        if ok:
            return p, data
    return 0, []


def _fake(t: _T, shape: tuple[int, ...], ptr: str) -> _T:
    return _T(tuple(int(d) for d in shape), t.lo, t.hi, t.ctype, ptr, t.value, None)


def _batch_offset(batch: tuple[int, ...], bst: list[int], var: str) -> str:
    """C of the offset of batch element ``var`` (flat over ``batch``) in an operand of batch strides ``bst``."""
    terms, inner = [], 1
    for d in range(len(batch) - 1, -1, -1):
        if bst[d] != 0 and batch[d] > 1:
            terms.append(f"(({var} / {inner}) % {batch[d]}) * {bst[d]}")
        inner *= batch[d]
    return " + ".join(terms) or "0"


class _Spec:
    """An op's tiling: rows ``R``, data operands, output elements per row, and how to build the unit's inputs;
    ``cols`` N and ``gemm`` (what :func:`_gemm_code` needs) for a MatMul / Gemm, tiled by rows and columns."""

    def __init__(self, mode: str, rows: int, ops: dict[int, _Operand], out_unit: int) -> None:
        self.mode, self.rows, self.ops, self.out_unit = mode, rows, ops, out_unit
        self.shapes: dict[int, tuple[int, ...]] = {}  # input index -> the shape the unit kernel sees
        self.extra: dict[int, str] = {}  # input index -> C offset added to a whole operand's pointer
        self.cols = 0
        self.gemm: dict[str, Any] = {}
        self.emit: Any = None  # the unit's op emitter when not the op's own (an Add with a fused RequantShift)


def _matmul_spec(node: Node, ins: list, out: _T, col: bool) -> _Spec | None:
    """A MatMul's row (and with ``col`` column) tiling: rows batch x M of A (not broadcast), B whole in L1
    (batched B: every batch element, indexed by the row's), or, ``col``, column tiles of a B shared by the batch."""
    a, b, rank = ins[0], ins[1], len(out.shape)
    if not (len(a.shape) == rank >= 2 and len(b.shape) >= 2 and a.shape[:-2] == out.shape[:-2] and a.value is None):
        return None
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = out.shape[:-2]
    bfull = (1,) * (len(batch) - len(b.shape) + 2) + tuple(b.shape)
    if col and any(d != 1 for d in bfull[:-2]):
        return None  # B differs over the batch: whole (a column tile would span several batch elements)
    s = _Spec("rows", int(np.prod(out.shape[:-1], dtype=np.int64)), {0: _Operand(a, "rows", k)}, n)
    s.cols = n
    bound = _matmul_bound(a, b, k)
    s.gemm = {"k": k, "tb": False, "b": b, "acc": _acc_type(bound, node.label), "c": None}
    if not _is_literal(b):
        s.ops[1] = _b_tiles(b, k, n, False) if col else _Operand(b)
        bst = [0 if bfull[d] == 1 else st for d, st in enumerate(_strides(bfull)[:-2])]
        s.extra[1] = _batch_offset(batch, bst, f"(gc_g / {m})")
    return s


def _b_tiles(b: _T, k: int, n: int, transposed: bool) -> _Operand:
    """B's column tiles: a transposed B (N, K) or a constant B, kept transposed in flash (generation time), by
    contiguous rows (one DMA per tile); a B (K, N) in L2 by K strided rows (one DMA per row)."""
    if transposed:
        return _Operand(b, "cols", k)
    if b.value is not None:
        bt = np.ascontiguousarray(b.value.reshape(k, n).T)
        return _Operand(_T((n, k), b.lo, b.hi, b.ctype, "", bt), "cols", k)
    return _Operand(b, "grid", n, k)


def _gemm_spec(node: Node, ins: list, out: _T, col: bool) -> _Spec | None:
    """A Gemm's row (and with ``col`` column) tiling (A not transposed): B whole, or its column tiles (B (K, N):
    K strided rows; transposed B (N, K): contiguous rows); C per row, per column, both, or whole."""
    a, b, c = ins[0], ins[1], ins[2] if len(ins) > 2 else None
    if int(node.attrs.get("transA", 0)) or len(a.shape) != 2 or a.value is not None:
        return None
    tb = int(node.attrs.get("transB", 0))
    (m, k), n = a.shape, out.shape[1]
    s = _Spec("rows", m, {0: _Operand(a, "rows", k)}, n)
    s.cols = n
    alpha, beta = (int(float(node.attrs.get(key, 1.0))) for key in ("alpha", "beta"))
    bv = b.value.T if (b.value is not None and tb) else b.value
    bound = int(np.max(np.abs(bv.astype(object)).sum(axis=0))) * a.amax if bv is not None else k * a.amax * b.amax
    bound = bound * abs(alpha) + (c.amax * abs(beta) if c is not None else 0)
    s.gemm = {"k": k, "tb": tb, "b": b, "acc": _acc_type(bound, node.label), "alpha": alpha, "beta": beta, "c": c}
    if not _is_literal(b):
        s.ops[1] = _b_tiles(b, k, n, bool(tb)) if col else _Operand(b)
    if c is not None and beta != 0 and not _is_literal(c):
        cm, cn = (1,) * (2 - len(c.shape)) + tuple(c.shape)
        s.gemm["cn"] = cn
        if cm > 1:
            s.ops[2] = _Operand(c, "grid", n) if col and cn > 1 else _Operand(c, "rows", cn)
        else:
            s.ops[2] = _Operand(c, "cols", 1) if col and cn > 1 else _Operand(c)
    return s


def _spec(node: Node, ins: list, out: _T, sep: int = 0) -> _Spec:
    """The op's tiling; ``sep``: the row prefix of a separable whole-tensor op (``_row_prefix``), else 0."""
    op, rank = node.op, len(out.shape)
    if op in ("MatMul", "Gemm"):
        s = (_matmul_spec if op == "MatMul" else _gemm_spec)(node, ins, out, False)
        if s is not None:
            return s
    else:
        p, data = _prefix(node, ins, out)
        if not p and sep:
            p, data = sep, [i for i, t in enumerate(ins) if t is not None and (i == 0 or op == "Concat")]
        if p:
            rows = int(np.prod(out.shape[:p], dtype=np.int64))
            s = _Spec("rows", rows, {}, int(np.prod(out.shape[p:], dtype=np.int64)))
            for i in data:
                t = ins[i]
                al = _aligned(t, rank, op, ins[0])
                tiled = al[:p] == out.shape[:p] and rows > 1
                s.shapes[i] = (1,) * p + al[p:] if tiled else al
                if not _is_literal(t):
                    s.ops[i] = _Operand(t, "rows", int(np.prod(al[p:], dtype=np.int64))) if tiled else _Operand(t)
            return s
    data = range(len(ins)) if op in ("Concat", "Conv", "MatMul", "Gemm") else [0]
    s = _Spec("whole", 1, {}, out.size)
    for i in data:
        if i < len(ins) and ins[i] is not None and not _is_literal(ins[i]) and ins[i].ctype != "float":
            s.ops[i] = _Operand(ins[i])
    return s


def _layout(spec: _Spec, out: _T, tr: int, tc: int, nbuf: int) -> tuple[int, dict[int, tuple[int, ...]], int]:
    """(L1 bytes, input index -> L1 offsets, output offset) for tiles of ``tr`` rows (by ``tc`` columns)."""
    pos, offs = 0, {}
    for i, o in spec.ops.items():
        if o.kind == "whole":
            offs[i], pos = (pos,), pos + _a(_nbytes(o.t.ctype, o.t.size))
    for i, o in spec.ops.items():
        if o.kind != "whole":
            size = _a(_nbytes(o.t.ctype, o.elements(tr, tc)))
            offs[i] = tuple(pos + b * size for b in range(nbuf))
            pos += nbuf * size
    return pos + _a(_nbytes(out.ctype, tr * (tc if spec.cols else spec.out_unit))), offs, pos


def _plan(node: Node, ins: list, out: _T, l1: int, double: bool, sep: int = 0) -> tuple[_Spec, int, int, int]:
    """(spec, tile rows, tile columns, buffers): rows as many as fit; a MatMul / Gemm whose B does not fit
    whole with one row takes column tiles (a multiple of 16 columns when 16 fit), balanced over the tiles."""
    spec = _spec(node, ins, out, sep)
    nbuf = 2 if double and any(o.kind != "whole" for o in spec.ops.values()) else 1
    tc = spec.cols
    if spec.cols and _layout(spec, out, 1, tc, nbuf)[0] > l1:
        col = (_matmul_spec if node.op == "MatMul" else _gemm_spec)(node, ins, out, True)
        if col is not None:
            spec = col
            if _layout(spec, out, 1, 1, nbuf)[0] <= l1:
                tc = _fit(lambda c: _layout(spec, out, 1, c, nbuf)[0], spec.cols, l1)
                step = 16 if tc >= 16 else 8 if tc >= 8 else 1
                tc -= tc % step
                n_ct = math.ceil(spec.cols / tc)
                tc = min(tc, math.ceil(math.ceil(spec.cols / n_ct) / step) * step)
            else:
                tc = 1
    need1 = _layout(spec, out, 1, tc, nbuf)[0]
    if need1 > l1:
        what = "whole-tensor tile" if spec.mode == "whole" else "smallest tile (one row"
        what += f" x {tc} column(s))" if spec.cols and tc < spec.cols else ")" if spec.mode == "rows" else ""
        raise CodegenError(
            f"L1 for {node.op} ({what})", value=f"{need1} B", limit=f"l1_bytes = {l1}", where=node.label,
            fix=f"pass l1_bytes >= {need1}" + (", or single buffering" if nbuf == 2 else ""),
        )  # fmt: skip
    tr = _fit(lambda r: _layout(spec, out, r, tc, nbuf)[0], spec.rows, l1)
    return spec, math.ceil(spec.rows / math.ceil(spec.rows / tr)), tc, nbuf


def _one(line: str) -> bool:
    m = _FOR.match(line)
    return bool(m) and int(m.group(3)) == 1


def _core_loop(ind: str, v: str, n: Any) -> str:
    """A loop header over this core's share of ``n`` iterations (bounds computed once: ``pond_core_id`` is a
    register read the compiler cannot hoist)."""
    return f"{ind}for (int32_t {v} = gc_lo({n}), {v}_end = gc_hi({n}); {v} < {v}_end; ++{v}) {{"


def _split(body: str) -> str:
    """Each loop nest of ``body`` with its outermost loop of more than one iteration split over the cores
    (``gc_lo`` / ``gc_hi``); a part without such a loop runs on core 0."""
    lines = body.split("\n")
    chunks: list[list[str]] = []
    depth = 0
    for line in lines:
        if depth == 0:
            chunks.append([])
        chunks[-1].append(line)
        depth += line.count("{") - line.count("}")
    out = []
    for chunk in chunks:
        k = 0
        while k + 1 < len(chunk) and _one(chunk[k]) and _FOR.match(chunk[k + 1]):
            k += 1
        m = _FOR.match(chunk[k]) if k < len(chunk) else None
        if m and not chunk[0].startswith(" ") and all(_FOR.match(c) for c in chunk[:k]):
            ind, v, n = m.groups()
            chunk[k] = _core_loop(ind, v, n)
            out.append("\n".join(chunk))
        elif any(c.strip() for c in chunk):
            out.append("if (gc_core == 0) {\n" + _indent("\n".join(chunk)) + "\n}")
    return "\n".join(out)


def _split_last(body: str) -> str:
    """A norm's row (template ``graph_norm.c``) with its last loop (the division and requantization of the
    row's values) split over the cores: every core computes the row's statistics, then its share of values."""
    lines = body.split("\n")
    for i in range(len(lines) - 1, -1, -1):
        m = _FOR.match(lines[i])
        if m:
            ind, v, n = m.groups()
            lines[i] = _core_loop(ind, v, n)
            return "\n".join(lines)
    return ""


def _gemm_code(em: _Emitter, spec: _Spec, out: _T, out_off: int) -> str:
    """A MatMul / Gemm tile's C (template ``graph_cluster_gemm.c``): the element expressions of A, B and C."""
    g, acc = spec.gemm, spec.gemm["acc"]
    k, n_all = g["k"], spec.cols
    a = spec.ops[0]
    b = spec.ops.get(1)
    if b is None:
        bexpr = em.elem(g["b"], "0")
    else:
        ptr = b.ptr(b.buf("cur"))
        bexpr = {
            "whole": f"{ptr}[{spec.extra.get(1, '0')} + k * {1 if g['tb'] else n_all} + n * {k if g['tb'] else 1}]",
            "grid": f"{ptr}[k * gc_nc + n]",
            "cols": f"{ptr}[n * {k} + k]",
        }[b.kind]
    result = "acc" if g.get("alpha", 1) == 1 else f"({acc})({g['alpha']}) * acc"
    c, beta = g["c"], g.get("beta", 0)
    if c is not None and beta != 0:
        o = spec.ops.get(2)
        if o is None:
            cterm = em.elem(c, "0")
        else:
            col = "n" if g["cn"] > 1 else "0"
            idx = {"whole": col, "rows": f"gc_r * {o.unit} + {col}", "cols": "n", "grid": "gc_r * gc_nc + n"}[o.kind]
            cterm = f"{o.ptr(o.buf('cur'))}[{idx}]"
        cterm = f"({acc}){cterm}"
        result += f" + {cterm}" if beta == 1 else f" + ({acc})({beta}) * {cterm}"
    dst = f"(({out.ctype} *)(gc_l1 + {out_off}))[gc_r * gc_nc + n]"
    store = f"{dst} = ({out.ctype})({result});"
    if "rq" in g:
        store = _requant_store(em, g["rq"], f"({acc})({result})", dst, out)
    return _kernel(
        "graph_cluster_gemm.c", acc=acc, k=k, a=f"{a.ptr(a.buf('cur'))}[gc_r * {k} + k]", b=bexpr, store=store
    )


def _fusable(graph: OpGraph, node: Node, readers: dict[str, list[Node]]) -> Node | None:
    """The RequantShift that is the only reader of a MatMul / Gemm / Conv / Add's output (not a graph output)."""
    if node.op not in ("MatMul", "Gemm", "Conv", "Add") or not node.outputs or node.outputs[0] in graph.output_names:
        return None
    rd = readers.get(node.outputs[0], [])
    if len(rd) != 1 or rd[0].op != "RequantShift" or list(rd[0].inputs[:1]) != [node.outputs[0]]:
        return None
    return rd[0] if node.outputs[0] not in rd[0].inputs[1:] else None


def _per_column(h: _T, ins: list) -> bool:
    """Whether a RequantShift's mul and add (constants) are uniform or one value per column of ``h``."""
    if len(ins) < 3 or any(t is None or t.value is None for t in ins[1:3]) or not h.shape:
        return False
    for t in ins[1:3]:
        al = (1,) * (len(h.shape) - len(_channel_shape(t, h))) + tuple(_channel_shape(t, h))
        if len(al) != len(h.shape) or any(d != 1 for d in al[:-1]) or al[-1] not in (1, h.shape[-1]):
            return False
    return True


def _unit_code(em: _Emitter, node: Node, ins: list, out: _T, spec: _Spec, out_off: int) -> str:
    """The op's C for the current tile (rows mode: template ``graph_cluster_rows.c``) or the whole tensor."""
    if spec.gemm:
        return _gemm_code(em, spec, out, out_off)
    fake = list(ins)
    rows = spec.mode == "rows"
    for i, o in spec.ops.items():
        base = o.ptr(o.buf("cur"))
        ptr = f"({base} + gc_r * {o.unit})" if o.kind == "rows" else base
        if i in spec.extra and spec.extra[i] != "0":
            ptr = f"({base} + {spec.extra[i]})"
        fake[i] = _fake(o.t, spec.shapes.get(i, o.t.shape), ptr)
    for i, shape in spec.shapes.items():
        if i not in spec.ops:
            fake[i] = _fake(ins[i], shape, ins[i].ptr)
    dst = f"(({out.ctype} *)(gc_l1 + {out_off}))"
    tem = _TileEm(em, out, f"({dst} + gc_r * {spec.out_unit})" if rows else dst)
    fn = spec.emit or _OPS[node.op]
    fn(tem, node, fake)
    body = "\n".join(tem.text)
    if not rows:
        return _split(body)
    split = ""
    if node.op in ELEMENTWISE_OPS and spec.out_unit > 1:
        split = _split(body)
    elif node.op in _NORM_OPS and spec.out_unit > 1:
        split = _split_last(body)
    values = "gc_lo(" in split
    return _kernel("graph_cluster_rows.c", values=values, body=body, split_body=split if values else "")


def _fits(node: Node, ins: list, shaped: tuple, h: _T, cfg: dict) -> bool:
    """Whether an Add fused with its RequantShift (mul and add ``shaped`` as data operands) still has a tile that
    fits L1 (planned with the sum's type ``h``, at least the requantized one's), so that fusing never refuses."""
    try:
        _plan(node, [*ins[:2], *shaped], h, cfg["l1"], cfg["double"])
    except CodegenError:
        return False
    return True


def _fuse(em: _Emitter, graph: OpGraph, node: Node, ins: list, h: _T, readers: dict, cfg: dict) -> tuple | None:
    """(RequantShift, its inputs) fused into the tiles of the MatMul / Gemm / Conv / Add ``node`` just emitted
    (output ``h``): the RequantShift is emitted (range analysis) and ``h``'s L2 buffer dropped; None when not
    fusable (an Add: only a row-tiled one, its RequantShift's mul and add appended to its inputs)."""
    rq = _fusable(graph, node, readers)
    if rq is None:
        return None
    rq_ins = _inputs_of(em, rq)
    if node.op == "Conv":
        ok = _conv_fusable(h, rq_ins)
    elif node.op == "Add":
        shaped = _add_fusable(h, rq_ins)
        ok = shaped is not None and _spec(node, [*ins[:2], *shaped], h).mode == "rows"
        ok = ok and _fits(node, ins, shaped, h, cfg)
    else:
        ok = bool(_spec(node, ins, h).gemm) and _per_column(h, rq_ins)
    if not ok or _identity_requant(em, rq, rq_ins):
        return None
    _node(em, rq)
    em.body = []
    y = em.tensors.get(rq.outputs[0])
    if y is None or y.buf != em.names.get(rq.outputs[0]) or y.shape != h.shape:
        raise CodegenError("fused RequantShift", value=rq.label, limit="a new tensor of its input's shape")
    em.buffers[y.buf][2] = min(em.buffers[y.buf][2], em.buffers[h.buf][2])  # written by the producer's tiles,
    del em.buffers[h.buf]  # while its inputs are still read: live from the producer on, not sharing their L2
    if node.op == "Add":
        ins[2:] = list(shaped)  # the fused op's data operands: a, b, mul, add
        return rq, rq_ins, h
    return rq, rq_ins


def _op(
    em: _Emitter, node: Node, ins: list, out: _T, index: int, cfg: dict, rq: tuple | None = None
) -> tuple[str, ClusterRow]:
    """The C of one op (template ``graph_cluster_op.c``) and its plan row (``rq``: a fused RequantShift)."""
    if node.op in HALO_OPS:
        return _halo_op(em, node, ins, out, index, cfg, rq)
    try:
        spec, tr, tc, nbuf = _plan(node, ins, out, cfg["l1"], cfg["double"])
    except CodegenError:  # a separable whole-tensor op that does not fit whole: tiled by rows
        sep = _row_prefix(em, node, ins, out) if node.op in SEPARABLE_OPS else 0
        if not sep:
            raise
        spec, tr, tc, nbuf = _plan(node, ins, out, cfg["l1"], cfg["double"], sep)
    if rq is not None and node.op == "Add":
        spec.emit = lambda tem, n, fake: _add_requant(em, rq, rq[2], tem, n, fake)
    elif rq is not None:
        spec.gemm["rq"] = rq
    double = nbuf == 2
    need, offs, out_off = _layout(spec, out, tr, tc, nbuf)
    for i, o in spec.ops.items():
        o.offs = offs[i]
    tiled = [o for o in spec.ops.values() if o.kind != "whole"]
    n_rt, n_ct = math.ceil(spec.rows / tr), math.ceil(spec.cols / tc) if spec.cols else 1
    size, unit = CTYPES[out.ctype][1], spec.cols or spec.out_unit

    def tile_in(which: str, r0: str, nr: str, c0: str, nc: str) -> str:
        return "\n".join(o.dma_in(em, which, r0, nr, c0, nc) for o in tiled)

    out_ptr = em.arr(out)
    if n_ct == 1:
        tile_out = _dma(f"{out_ptr} + gc_t0 * {unit}", f"gc_l1 + {out_off}", f"gc_nr * {unit * size}")
    else:
        tile_out = _dma2d(f"{out_ptr} + gc_t0 * {unit} + gc_c0", f"gc_l1 + {out_off}", f"gc_nc * {size}", "gc_nr",
                          unit * size, f"gc_nc * {size}")  # fmt: skip
    cols = f" x {n_ct} column tile(s) of {tc} of {spec.cols} columns" if spec.cols else ""
    text = _kernel(
        "graph_cluster_op.c", index=index, label=node.label.replace("*/", "* /"), marker=f"{index * 65536}u",
        summary=f"{spec.mode}: {n_rt} row tile(s) of {tr} of {spec.rows} rows{cols}, {'DB' if double else 'SB'}, "
        f"L1 {need} B", double=double, cols=bool(spec.cols), n_tiles=n_rt * n_ct, tile_rows=tr, rows=spec.rows,
        col_tiles=n_ct, tile_cols=tc, n_cols=spec.cols,
        fixed_in="\n".join(o.dma_in(em, "first", "0", "0", "0", "0") for o in spec.ops.values() if o.kind == "whole"),
        first_in=tile_in("first", "0", str(tr), "0", str(tc)),
        tile_in=tile_in("cur", "gc_t0", "gc_nr", "gc_c0", "gc_nc"),
        next_in=tile_in("next", "gc_n0", "gc_nn", "gc_m0", "gc_mc"),
        compute=_unit_code(em, node, ins, out, spec, out_off), tile_out=tile_out,
    )  # fmt: skip
    traffic = [o.traffic(spec.rows, spec.cols, n_rt, n_ct) for o in spec.ops.values()]
    out_bytes = _nbytes(out.ctype, out.size)
    row = ClusterRow(
        index, node.name, node.op, spec.mode, spec.rows, tr, n_rt * n_ct, "DB" if double else "SB", need, out_bytes,
        sum(t[0] for t in traffic) + out_bytes, spec.cols, tc if spec.cols else 0, n_ct,
        sum(t[1] for t in traffic) + (n_rt * n_ct if n_ct == 1 else n_ct * spec.rows), rq[0].name if rq else "",
    )  # fmt: skip
    return text, row


def _identity_requant(em: _Emitter, node: Node, ins: list) -> bool:
    """Whether a RequantShift returns its input unchanged on the input's whole range: uniform ``mul == div``
    (a power of two, ``2^s``: ``(x 2^s + 2^(s-1)) >> s == x``), uniform ``add == 0``, no broadcast beyond the
    input's shape, and the input's range within the output's levels (no clamp)."""
    x, mul, add = (ins + [None, None, None])[:3]
    if x is None or x.value is not None or mul is None or add is None or mul.value is None or add.value is None:
        return False
    div = int(float(np.asarray(node.attrs.get("div")).reshape(-1)[0]))
    m, a = mul.uniform(), add.uniform()
    if div < 1 or div & (div - 1) or m != div or a != 0:
        return False
    if tuple(np.broadcast_shapes(x.shape, _channel_shape(mul, x), _channel_shape(add, x))) != tuple(x.shape):
        return False
    levels = node.attrs.get("n_levels_out", node.attrs.get("n_levels", 256))
    lo, hi = levels_range(levels, node.attrs.get("signed", 1), KernelContext(True, em.graph.opset, node.label))
    return lo <= x.lo and x.hi <= hi


def _inputs_of(em: _Emitter, node: Node) -> list:
    return island_inputs(em, node) if node.op in ISLANDS else [em.get(t) for t in node.inputs]


def _check_args(graph: Any, cores: Any, l1_bytes: Any, l2_bytes: Any, double_buffer: Any) -> tuple:
    if not isinstance(graph, OpGraph):
        raise CodegenError("graph", value=type(graph).__name__, limit="an OpGraph", where=_WHERE,
                           fix="import the model with pondlib.interop.onnx.opgraph.load_opgraph")  # fmt: skip
    cores = check_int(cores, "cores", lo=1, hi=MAX_CORES, where=_WHERE, error=CodegenError,
                      fix=f"pass 1..{MAX_CORES} cores (Siracusa's cluster has {MAX_CORES})")  # fmt: skip
    l1 = check_int(l1_bytes, "l1_bytes", lo=_ALIGN, where=_WHERE, error=CodegenError,
                   fix="pass the L1 bytes the tiles may use (Siracusa: 256 KiB TCDM)")  # fmt: skip
    l2 = SIRACUSA.l2_bytes if l2_bytes is None else l2_bytes
    l2 = check_int(l2, "l2_bytes", lo=1, where=_WHERE, error=CodegenError, fix="pass the L2 bytes (Siracusa: 2 MiB)")
    return cores, l1, l2, check_bool(double_buffer, "double_buffer", where=_WHERE, error=CodegenError)


def _l2_check(em: _Emitter, buffers: list, n_out: int, out_type: str, l2: int, labels: list[str]) -> int:
    """The L2 need (arena + x + y, bytes), refused beyond ``l2`` naming the op at the peak of live tensors."""
    need = plan_arena(buffers).size + _nbytes(em.in_ctype, max(em.n_in, 1)) + _nbytes(out_type, n_out)
    if need > l2:
        live = [0] * (len(labels) + 1)
        for b in buffers:
            lo, hi = b.live if b.live else (0, len(labels))
            for p in range(lo, min(hi, len(labels)) + 1):
                live[p] += b.nbytes
        peak = int(np.argmax(live))
        raise CodegenError(
            "L2 bytes", value=f"{need} B (peak of live tensors at {labels[min(peak, len(labels) - 1)]})",
            limit=f"l2_bytes = {l2}", where=_WHERE, fix=f"pass l2_bytes >= {need}, or a smaller model",
        )  # fmt: skip
    return need


def _outputs_code(em: _Emitter, graph: OpGraph, n_ops: int, out_type: str) -> str:
    """C copying the graph outputs into ``y`` over the cores (template ``graph_cluster_out.c``)."""
    copies, off = [], 0
    for t in (em.get(n) for n in graph.output_names):
        copies.append(_core_loop("", "i", t.size)[:-1] + f"y[{off} + i] = ({out_type}){em.arr(t)}[i];")
        off += t.size
    return _kernel("graph_cluster_out.c", marker=f"{n_ops * 65536}u", out_type=out_type, copies="\n".join(copies))


def emit_cluster_report(
    graph: OpGraph,
    *,
    name: str = "net",
    cores: int = 8,
    l1_bytes: int = 64000,
    l2_bytes: int | None = None,
    double_buffer: bool = True,
    input_ranges: Mapping[str, tuple[int, int]] | None = None,
    fuse_requant: bool = True,
) -> tuple[Program, ClusterReport]:
    """:func:`emit_cluster`'s program and its plan (a :class:`ClusterRow` per op with C)."""
    cores, l1, l2, double = _check_args(graph, cores, l1_bytes, l2_bytes, double_buffer)
    name = c_identifier(name, "program name")
    em = _Emitter(graph, False, dict(input_ranges or {}))
    cfg = {"l1": l1, "double": double, "fuse": fuse_requant}
    texts, rows, labels, skipped, fused = [], [], [], [], {}
    readers: dict[str, list[Node]] = {}
    for n in graph.nodes:
        for t in dict.fromkeys(n.inputs):
            readers.setdefault(t, []).append(n)
    for node in em.sim.order:
        if node.name in fused.values():
            continue  # a RequantShift fused into its producer's tiles
        try:
            ins = _inputs_of(em, node)
            if node.op == "RequantShift" and _identity_requant(em, node, ins):
                em.alias(node.outputs[0], ins[0], ins[0].shape)
                skipped.append(node.name)
                continue
            known = set(em.tensors)
            _node(em, node)
            em.body = []
            out_name = node.outputs[0] if node.outputs else ""
            out = em.tensors.get(out_name)
            if out_name in known or out is None or out.buf != em.names.get(out_name):
                continue  # folded into a constant, or an alias of its input: no C
            rq = _fuse(em, graph, node, ins, out, readers, cfg) if cfg["fuse"] else None
            if rq is not None:
                fused[node.name] = rq[0].name
                out = em.tensors[rq[0].outputs[0]]
            text, row = _op(em, node, ins, out, len(rows), cfg, rq)
        except CodegenError:
            raise
        except PondError as err:
            raise CodegenError("node", value=str(err)[:300], limit="a node the C can emit", where=node.label) from err
        texts.append(text)
        rows.append(row)
        labels.append(node.label)
    buffers, out_type, n_out = _finish(em)
    em.body.pop()  # graph_codegen's output copies (one core's): the cluster function copies them, split
    texts.append(_outputs_code(em, graph, len(rows), out_type))
    acts = _l2_check(em, buffers, n_out, out_type, l2, labels or ["the graph outputs"])
    arena = _a(max((r.l1_bytes for r in rows), default=_ALIGN))
    fn = _kernel(
        "graph_cluster_fn.c", net=name, members="\n".join(f"{b.ctype} *{b.name};" for b in buffers),
        l1_words=arena // 8, in_type=em.in_ctype, views="\n".join(f"{b.ctype} *const {b.name} = {name}_gc.{b.name};"
                                                                 for b in buffers),
        unused="\n".join(f"(void){b.name};" for b in buffers), ops="\n\n".join(texts),
    )  # fmt: skip
    used = fn + "\n".join(em.body)  # constants only the single-core emitters named (a B kept transposed): none
    em.constants[:] = [c for c in em.constants if re.search(rf"\b{c.name}\b", used)]
    constants, l2_need, l3_bytes = place_constants(em.constants, acts, l2, where=_WHERE)
    helpers = _kernel("graph_helpers.c", **{k: k in em.helpers for k in ("asr32", "asr64", "isqrt", "shr", "fdiv")})
    if em.helpers & {"fquant", "fnorm"}:
        helpers += "\n" + island_helpers("fnorm" in em.helpers)
    step = "\n".join(f"{name}_gc.{b.name} = {b.name};" for b in buffers)
    step += f"\nPOND_CLUSTER_RUN({name}_cluster, x, y);\n" + "\n".join(em.body)
    extra = {"skipped": tuple(skipped), "fused": fused}
    report = ClusterReport(tuple(rows), arena, l2_need, l1, l2, cores, extra, l3_bytes)
    notes = [
        f"x packs the graph inputs {list(graph.input_names)} in order, each flattened in C order ({em.in_ctype})",
        f"y packs the graph outputs {list(graph.output_names)} in order, each flattened in C order ({out_type})",
        f"cluster: {cores} cores by default (-DPOND_NUM_CORES=1..8), L1 arena {arena} B of {l1}, "
        f"L2 {l2_need} B of {l2}, {'double' if double else 'single'} buffered; build the host with -pthread",
    ] + [f"L3: {l3_bytes} B of constants (the largest; they do not fit L2 beside the tensors)"] * bool(l3_bytes)
    prog = build_program(
        name, "siracusa", constants=constants, buffers=buffers, step_body=step, n_in=max(em.n_in, 1),
        in_ctype=em.in_ctype, n_out=n_out, out_ctype=out_type,
        helpers=cluster_runtime(cores) + "\n" + helpers + "\n" + fn, notes=notes, cores=cores,
        description=f"Siracusa integer graph {graph.name!r} ({len(graph.nodes)} nodes) tiled for a {cores}-core "
        "cluster (L2 tensors, L1 tiles by DMA), equal to GraphSim bit for bit.",
    )  # fmt: skip
    return prog, report


def emit_cluster(
    graph: OpGraph,
    *,
    name: str = "net",
    cores: int = 8,
    l1_bytes: int = 64000,
    l2_bytes: int | None = None,
    double_buffer: bool = True,
    input_ranges: Mapping[str, tuple[int, int]] | None = None,
    fuse_requant: bool = True,
) -> Program:
    """C for the cluster (module docstring), equal to ``GraphSim(graph).run(inputs, integer=True)``.

    Args:
        graph: the graph (every input with a declared shape).
        name: C prefix and file stem.
        cores: the default ``POND_NUM_CORES`` (1..8; the sources build for any of them).
        l1_bytes: the L1 the tiles may use (B); l2_bytes: the L2 (B; default Siracusa's 2 MiB).
        double_buffer: prefetch the next tile's inputs while computing (tiled ops).
        input_ranges: graph input name -> ``(lo, hi)`` (as :func:`~.graph_codegen.emit_graph`).
        fuse_requant: requantize a MatMul / Gemm's tiles in L1 when a RequantShift is its output's only reader.

    Raises:
        CodegenError: cores outside 1..8, an op whose smallest tile exceeds ``l1_bytes``, an L2 need beyond
            ``l2_bytes`` (each naming the op, the need and the limit), or what :func:`emit_graph` refuses.
    """
    return emit_cluster_report(
        graph, name=name, cores=cores, l1_bytes=l1_bytes, l2_bytes=l2_bytes, double_buffer=double_buffer,
        input_ranges=input_ranges, fuse_requant=fuse_requant,
    )[0]  # fmt: skip
