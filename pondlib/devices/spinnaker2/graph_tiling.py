r"""How each op of the DNN graph path is split over worker PEs within their SRAM (one tile per worker).

Bytes one worker holds for a tile (int8 activations and weights, int32 biases), ``budget`` =
``limits.dnn_worker_bytes``:

================  ==========================================================================================
``gemm``          ``c`` output columns x ``r`` rows of ``R`` (all axes but the last): ``K c + 4 c + r K + r c``;
                  all rows first, then one column and as many rows as fit
``conv``          ``c`` output channels x ``r`` output rows (first spatial axis): weights ``c (C/g) prod(k) +
                  4 c``, input ``C_c ((r - 1) s + d (k_0 - 1) + 1) prod(padded rest)`` (``C_c`` the input
                  channels those ``c`` outputs read: all for ``g = 1``), output ``c r prod(out rest)``
``matmul``        ``r`` rows of ``a`` per (batch) matrix, all of ``b``: ``r K + K N + r N``
``pool``          ``c`` channels: ``c (prod(padded in) + prod(out))``
``row ops``       ``r`` rows of the last axis ``D``: ``r D (inputs + 1)`` plus ``2 D`` for layernorm/rmsnorm
                  parameters (add, relu, softmax, layernorm, rmsnorm, gelu; transpose moves rows of its first
                  axis)
``concat``        ``r`` slabs of the output's first axis, each read and written once: ``2 r prod(out[1:])``
``reshape``       no worker: the buffer is reinterpreted in place
================  ==========================================================================================

The tile count is the product of the splits. A ``gemm`` of one row (an MLP layer) takes the fewest tiles that
fit (as the MLP path: its time is the weight stream from DRAM, which more workers share); the other ops (and a
``gemm`` over several rows, e.g. tokens) are spread further, over as many workers as they have units (outputs
for gemm, output channels x rows, rows, matrices x rows, channels), up to ``workers`` (the chip's PEs but the
scheduler, 147): their time is compute on the MLA or the Arm core. An op whose smallest tile
(one column/channel/row) does not fit is a ``worker_sram`` violation naming those bytes.

Example:
    >>> from pondlib.devices.spinnaker2.graph_ops import GraphOp
    >>> import numpy as np
    >>> fc = GraphOp("fc", "gemm", (-1,), (512,), (0,), 0, weights=np.zeros((784, 512), np.int64))
    >>> tile_op(fc, [(784,)], 94208)[:2]
    (5, '5 column tiles of <= 118 columns')
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from pondlib.devices.spinnaker2.graph_ops import GraphOp
from pondlib.errors import Violation

__all__ = ["tile_op"]


def _prod(shape: Sequence[int]) -> int:
    return int(np.prod(shape)) if len(shape) else 1


def _largest(fits: Callable[[int], bool], hi: int) -> int:
    """Largest ``v`` in 1..hi with ``fits(v)`` (fits is monotone decreasing), 0 when none."""
    lo, best = 1, 0
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(mid):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


def _refuse(op: GraphOp, need: int, budget: int, what: str, fix: str) -> tuple[int, str, list[Violation]]:
    return 0, "does not fit", [Violation("worker_sram", op.name, f"{need} B for {what}", f"{budget} B", fix)]


def _two_way(
    op: GraphOp, n: int, rows: int, size: Callable[[int, int], int], budget: int, names: tuple[str, str]
) -> tuple[int, str, list[Violation]]:
    c = _largest(lambda v: size(v, rows) <= budget, n)
    if c >= 1:
        t = math.ceil(n / c)
        return t, f"{t} {names[0]} tiles of <= {c} {names[0]}s", []
    r = _largest(lambda v: size(1, v) <= budget, rows)
    if r < 1:
        return _refuse(op, size(1, 1), budget, f"one {names[0]} and one {names[1]}", "use a smaller layer")
    t = n * math.ceil(rows / r)
    return t, f"{n} {names[0]} x {math.ceil(rows / r)} {names[1]} tiles of <= {r} {names[1]}s", []


def tile_op(
    op: GraphOp, in_shapes: Sequence[tuple[int, ...]], budget: int, workers: int = 1
) -> tuple[int, str, list[Violation]]:
    """``(tiles, split, violations)`` of ``op`` with per-sample input shapes ``in_shapes`` (module table),
    spread over up to ``workers`` workers (all ops but ``gemm``)."""
    tiles, split, bad = _fit(op, in_shapes, budget)
    units = _units(op, in_shapes)
    single_row = op.op == "gemm" and _prod(tuple(op.out_shape)[:-1]) == 1
    if bad or single_row or op.op == "reshape" or tiles >= min(units, workers):
        return tiles, split, bad
    n = min(units, workers)
    return n, f"{n} tiles over {units} units (spread; the fewest that fit: {split})", []


def _units(op: GraphOp, in_shapes: Sequence[tuple[int, ...]]) -> int:
    """How many pieces an op can be cut into: channels x rows, matrices x rows, channels, rows."""
    out = tuple(op.out_shape)
    if op.op == "conv":
        return out[0] * out[1]
    if op.op == "gemm":
        return _prod(out)
    if op.op in ("maxpool", "avgpool", "concat"):
        return out[0]
    if op.op == "matmul":
        return _prod(out[:-1])
    if op.op == "transpose":
        return in_shapes[0][0]
    return _prod(in_shapes[0][:-1])


def _fit(op: GraphOp, in_shapes: Sequence[tuple[int, ...]], budget: int) -> tuple[int, str, list[Violation]]:
    """The fewest tiles that fit (module table)."""
    kind, out = op.op, tuple(op.out_shape)
    if kind == "reshape":
        return 0, "none (a view of the buffer)", []
    if kind == "gemm":
        k, n = op.weights.shape
        rows = _prod(out[:-1])
        return _two_way(op, n, rows, lambda c, r: k * c + 4 * c + r * k + r * c, budget, ("column", "row"))
    if kind == "conv":
        return _conv(op, in_shapes[0], budget)
    if kind == "matmul":
        (a, b) = in_shapes
        k, n, t = a[-1], b[-1], a[-2]
        mats = _prod(out[:-2])
        r = _largest(lambda v: v * k + k * n + v * n <= budget, t)
        if r < 1:
            return _refuse(op, k + k * n + n, budget, "one row of a and all of b", "split the matmul (fewer heads)")
        tiles = mats * math.ceil(t / r)
        return tiles, f"{tiles} row tiles of <= {r} rows", []
    if kind in ("maxpool", "avgpool"):
        pads = op.attr("pads")
        nd = len(pads) // 2
        padded = [in_shapes[0][1 + i] + pads[i] + pads[i + nd] for i in range(nd)]
        per = _prod(padded) + _prod(out[1:])
        c = min(out[0], budget // per)
        if c < 1:
            return _refuse(op, per, budget, "one channel", "use a smaller feature map")
        t = math.ceil(out[0] / c)
        return t, f"{t} channel tiles of <= {c} channels", []
    if kind == "concat":
        per = 2 * _prod(out[1:])
        r = min(out[0], budget // per)
        if r < 1:
            return _refuse(op, per, budget, "one slab of the first axis", "use a smaller output per channel or row")
        t = math.ceil(out[0] / r)
        return t, f"{t} slab tiles of <= {r} slabs", []
    shape = in_shapes[0]
    if kind == "transpose":
        d, rows = _prod(shape[1:]), shape[0]
    else:
        d, rows = shape[-1], _prod(shape[:-1])
    params = 2 * d if kind in ("layernorm", "rmsnorm") else 0
    per = d * (len(in_shapes) + 1)
    r = min(rows, (budget - params) // per)
    if r < 1:
        return _refuse(op, per + params, budget, "one row", "shorten the normalised axis")
    t = math.ceil(rows / r)
    return t, f"{t} row tiles of <= {r} rows", []


def _conv(op: GraphOp, in_shape: tuple[int, ...], budget: int) -> tuple[int, str, list[Violation]]:
    w = op.weights
    o, cg = w.shape[0], w.shape[1]
    groups = op.attr("groups")[0]
    strides, pads, dil = op.attr("strides"), op.attr("pads"), op.attr("dilations")
    nd = len(strides)
    c_in = in_shape[0]
    padded = [in_shape[1 + i] + pads[i] + pads[i + nd] for i in range(nd)]
    out = op.out_shape
    per_w = cg * _prod(w.shape[2:]) + 4

    def size(c: int, r: int) -> int:
        cin = c_in if groups == 1 else min(c_in, math.ceil(c / (o // groups)) * cg)
        rows_in = min(padded[0], (r - 1) * strides[0] + dil[0] * (w.shape[2] - 1) + 1)
        return c * per_w + cin * rows_in * _prod(padded[1:]) + c * r * _prod(out[2:])

    return _two_way(op, o, out[1], size, budget, ("channel", "row"))
