r"""Conv and pools of the cluster graph C tiled by output rows with input halos; fused Conv / Add stores.

Part of :func:`~pondlib.devices.siracusa.graph_codegen_cluster.emit_cluster` (its module docstring has the whole
schedule). An op whose output rows depend on a window of input rows (Conv, MaxPool, AveragePool; 1-D NCW as a
2-D NCHW of width 1 whose *rows* are the W positions: ``x (B, C, L) -> (B, C, L, 1)``, kernel ``(k, 1)``) is
tiled by its output rows ``oy`` (all batch elements and channels of those rows). A tile of ``n`` output rows
from ``r0`` reads the input rows

.. math::  [\max(0, r_0 s_y - p_t),\ \min(H, (r_0 + n - 1) s_y + (k_h - 1) d_y + 1 - p_t))

(its *halo*: the ``(k_h - 1) d_y + 1 - s_y`` rows it shares with its neighbours, DMA'd again for each tile; a border
tile's rows in the padding are not DMA'd, the kernel skips them as the whole-tensor kernel does). Each tile DMAs
those rows of every input plane (one 2-D transfer of ``B C`` rows of ``rows W`` elements, the cluster DMA's 2-D mode)
into an L1 buffer of ``B C x h_in x W`` elements, ``h_in = min(H, (n - 1) s_y + (k_h - 1) d_y + 1)``, and sends its
output back as ``B`` 2-D transfers of ``O`` rows of ``n W_o`` elements. Weights and a bias (Conv) are whole in L1,
DMA'd once per op. When they do not fit with one output row (a Conv of one group), the output channels are tiled too:
a tile is ``n`` rows by ``m`` output channels (channel tiles inner, ``ClusterRow.cols`` / ``tile_cols`` /
``col_tiles``), its ``m`` channels' weights and bias (contiguous: one transfer each) buffered like the input rows,
its output ``B`` 2-D transfers of ``m`` rows; the input rows are DMA'd again for every channel tile. A grouped Conv
whose weights do not fit, or a tile of one row and one channel that does not fit, is refused (the error names the op,
the need and the limit). When the whole op fits it is one tile with one DMA per tensor (``ClusterRow.mode`` 'whole');
else the tiles are single or double buffered like the row-tiled ops (``mode`` 'halo', ``ClusterRow.in_rows`` =
``h_in``). L1 need: whole operands + buffers x (``B C h_in W`` input elements + a channel tile's weights and bias) +
``B m n W_o`` output elements (each region 8-byte aligned); ``m`` is the most channels that fit with one row, then
``n`` the most rows that fit, each balanced over its tiles.

Work split of a tile (templates ``graph_cluster_conv.c`` / ``graph_cluster_pool.c``, one output row of a
channel or plane in ``graph_cluster_conv_px.c`` / ``graph_cluster_pool_px.c``): over ``P`` cores, the tile's
``n`` output rows when that gives the slowest core fewer output rows, ``ceil(n / P) O < ceil(O / P) n``, else
the ``O`` output channels (Conv) or ``B C`` planes (pools); core c takes ``[m c / P, m (c + 1) / P)`` of ``m``.
So a tile of fewer rows than cores, and every tile on one core, splits its channels. The Conv's input channels
are its innermost loop (the sum is exact in its accumulator type in any order).

Fused stores: a RequantShift that is the only reader of a Conv's output (mul and add uniform or one per output
channel) requantizes each accumulator in L1 (template ``graph_requant.c``, channel ``o``); one that is the only
reader of a row-tiled Add's output (mul and add constants not broadcasting beyond the sum's shape) makes the
Add's element store ``clip((((a + b) mul + add) + 2^(s-1)) >> s)`` (:func:`_add_requant`): the int32 sum has
no L2 buffer in either case (an Add is fused only when its fused tile still fits L1).

Separable whole-tensor ops (``SEPARABLE_OPS``): :func:`_row_prefix` finds the leading dims over which a Concat,
Transpose, reduction, Slice, Gather or Pad acts on every index alike; when such an op does not fit L1 whole,
:mod:`~.graph_codegen_cluster` tiles it by those rows like an element-wise op.

Example:
    >>> import numpy as np
    >>> from pondlib.devices.siracusa.graph_codegen_cluster import emit_cluster_report
    >>> from pondlib.graph.opgraph import Node, OpGraph, TensorInfo
    >>> g = OpGraph((TensorInfo("x", (1, 1, 8, 4), "int8"),), (TensorInfo("y", (1, 2, 8, 4), "int64"),),
    ...     (Node("c", "Conv", ("x", "w"), ("y",), {"pads": [1, 1, 1, 1]}),), {"w": np.ones((2, 1, 3, 3))})
    >>> _, rep = emit_cluster_report(g, cores=2, l1_bytes=200, double_buffer=False)
    >>> r = rep.rows[0]  # tiles of rows 0..3 (input rows 0..4) and 4..7 (3..7): 2 x 5 rows of 4 int32 in, 128 B out
    >>> (r.mode, r.rows, r.tile_rows, r.n_tiles, r.in_rows, r.dma_bytes)
    ('halo', 8, 4, 2, 6, 288)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from pondlib.cprogram.program import CTYPES
from pondlib.devices.siracusa.graph_codegen import _channel_shape
from pondlib.devices.siracusa.graph_codegen_cluster_tiles import (
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
from pondlib.devices.siracusa.graph_codegen_ops import (
    _T,
    _acc_type,
    _bstrides,
    _index_map,
    _kernel,
    _lit,
    _map,
    _reduce_axes,
)
from pondlib.errors import CodegenError
from pondlib.graph.opgraph import Node

__all__ = ["HALO_OPS", "SEPARABLE_OPS"]

#: Ops tiled by output rows with input halos.
HALO_OPS = ("Conv", "MaxPool", "AveragePool")
#: Ops tiled by rows when they act on every index of their leading dims alike (:func:`_row_prefix`).
SEPARABLE_OPS = ("Concat", "Transpose", "Slice", "Gather", "Pad", "GlobalMaxPool", "GlobalAveragePool", "ReduceSum",
                 "ReduceMean", "IntegerMean")  # fmt: skip


@dataclass
class _Geo:
    """A Conv / pool as 2-D NCHW: input (b, c, h, w), output (b, o, ho, wo), kernel, strides, dilations, pads."""

    b: int
    c: int
    h: int
    w: int
    o: int
    ho: int
    wo: int
    kh: int
    kw: int
    sy: int
    sx: int
    dy: int
    dx: int
    pt: int
    pl: int
    pb: int
    pr: int

    @property
    def span(self) -> int:
        """Input rows one output row reads (kernel extent)."""
        return (self.kh - 1) * self.dy + 1

    def in_rows(self, n: int) -> int:
        """Input rows in L1 for a tile of ``n`` output rows (all of them when one tile holds every row)."""
        return self.h if n >= self.ho else min(self.h, (n - 1) * self.sy + self.span)

    def rows_of(self, r0: int, n: int) -> int:
        """Input rows DMA'd for the output rows ``r0 .. r0 + n`` (padding rows excluded)."""
        lo, hi = max(0, r0 * self.sy - self.pt), min(self.h, (r0 + n - 1) * self.sy + self.span - self.pt)
        return max(0, hi - lo)


def _geometry(node: Node, x: _T, out: _T, w: _T | None) -> _Geo:
    """The op's 2-D geometry; a 1-D op (NCW) as a 2-D one of width 1 whose rows are the W positions."""
    a = node.attrs
    one_d = len(x.shape) == 3
    if node.op == "Conv":
        ks = list(w.shape[2:]) if w is not None else [int(v) for v in a["kernel_shape"]]
    else:
        ks = [int(v) for v in a["kernel_shape"]]
    nd = len(ks)
    st = [int(v) for v in a.get("strides", [1] * nd)]
    dl = [int(v) for v in a.get("dilations", [1] * nd)]
    pd = [int(v) for v in a.get("pads", [0] * 2 * nd)]
    if one_d:
        (b, c, ln), ol = x.shape, out.shape[-1]  # a 1-D Conv's output is (B, O, 1, L)
        return _Geo(b, c, ln, 1, out.shape[1], ol, 1, ks[0], 1, st[0], 1, dl[0], 1, pd[0], 0, pd[1], 0)
    b, c, h, wd = x.shape
    return _Geo(b, c, h, wd, out.shape[1], *out.shape[2:], *ks, *st, *dl, *pd)


def _rows_c(g: _Geo, r0: str, nr: str) -> str:
    """C declaring gc_i0 / gc_i1: the input rows of the output rows r0 .. r0 + nr (clamped to the input)."""
    return (
        f"const int32_t gc_ia = {r0} * {g.sy} - {g.pt}, gc_ib = ({r0} + {nr} - 1) * {g.sy} + {g.span - g.pt};\n"
        f"const int32_t gc_i0 = gc_ia > 0 ? gc_ia : 0, gc_i1 = gc_ib < {g.h} ? gc_ib : {g.h};"
    )


def _halo_in(em: Any, g: _Geo, x: _Operand, hin: int, args: tuple, single: bool) -> str:
    """C DMAing the input rows of a tile (every plane's rows; one transfer when the op is one tile)."""
    which, r0, nr = args[:3]
    size = CTYPES[x.t.ctype][1]
    dst, src = f"gc_l1 + {x.buf(which)}", em.arr(x.t)
    if single:
        return _dma(dst, src, _nbytes(x.t.ctype, x.t.size))
    copy = _dma2d(dst, f"{src} + gc_i0 * {g.w}", f"(gc_i1 - gc_i0) * {g.w * size}", g.b * g.c, hin * g.w * size,
                  g.h * g.w * size)  # fmt: skip
    return "{\n" + _rows_c(g, r0, nr) + f"\nif (gc_i1 > gc_i0) {copy}\n}}"


def _conv_code(em: Any, node: Node, ins: list, out: _T, g: _Geo, ops: dict, hin: int, out_off: int, rq) -> str:
    """A Conv tile's C (template ``graph_cluster_conv.c``); output channels ``gc_c0 ..`` when channel-tiled."""
    x, w, bias = ins[0], ins[1], ins[2] if len(ins) > 2 else None
    wv = w.value.reshape(g.o, -1)
    bound = int(np.max(np.abs(wv.astype(object)).sum(axis=1))) * x.amax + (bias.amax if bias is not None else 0)
    acc = _acc_type(bound, node.label)
    cg = w.shape[1]
    group = int(node.attrs.get("group", 1))
    tiled = any(o.kind == "cols" for o in ops.values())
    n_o, ch = ("gc_nc", "(gc_c0 + o)") if tiled else (str(g.o), "o")

    def ref(i: int, t: _T, index: str) -> str:
        o = ops.get(i)
        return f"{o.ptr(o.buf('cur'))}[{index}]" if o is not None else em.elem(t, ch if index == "o" else index)

    bias_c = "0" if bias is None else f"({acc}){ref(2, bias, 'o')}"
    dst = f"(({out.ctype} *)(gc_l1 + {out_off}))[((b * {n_o} + o) * gc_nr + oy) * {g.wo} + ox]"
    store = f"{dst} = ({out.ctype})acc;" if rq is None else _requant_store(em, rq, "acc", dst, out, ch)
    xo = ops[0]
    px = _kernel(
        "graph_cluster_conv_px.c", sy=g.sy, pt=g.pt, wo=g.wo, acc=acc, bias=bias_c, kh=g.kh, kw=g.kw, dy=g.dy,
        h=g.h, sx=g.sx, dx=g.dx, pl=g.pl, w=g.w, c=g.c, hin=hin, src=xo.ptr(xo.buf("cur")), xs=hin * g.w,
        wt=ref(1, w, f"wi + c * {g.kh * g.kw}"), store=store, cg=cg,
    )  # fmt: skip
    return _kernel("graph_cluster_conv.c", sy=g.sy, pt=g.pt, o=n_o, batch=g.b, og=g.o // group, cg=cg, pixels=px)


def _pool_code(em: Any, node: Node, x: _T, out: _T, g: _Geo, xo: _Operand, hin: int, out_off: int) -> str:
    """A pool tile's C (template ``graph_cluster_pool.c``)."""
    is_max = node.op == "MaxPool"
    n = g.kh * g.kw
    acc = "int64_t" if is_max else _acc_type(2 * n * x.amax + 2 * n, node.label)
    include = bool(int(node.attrs.get("count_include_pad", 0)))
    pad = f"else if (iy >= -{g.pt} && iy < {g.h + g.pb} && ix >= -{g.pl} && ix < {g.w + g.pr}) ++cnt;"
    px = _kernel(
        "graph_cluster_pool_px.c", sy=g.sy, pt=g.pt, wo=g.wo, acc=acc, init=_lit(x.lo) if is_max else "0",
        kh=g.kh, kw=g.kw, dy=g.dy, sx=g.sx, dx=g.dx, pl=g.pl, h=g.h, w=g.w, hin=hin, src=xo.ptr(xo.buf("cur")),
        update="if (v > s) s = v;" if is_max else "s += v;", pad_count=pad if include and not is_max else "",
        dst=f"(({out.ctype} *)(gc_l1 + {out_off}))", out_type=out.ctype,
        value="s" if is_max else "gq_fdiv64(2 * (int64_t)s + cnt, 2 * (int64_t)cnt)",
    )  # fmt: skip
    return _kernel("graph_cluster_pool.c", sy=g.sy, pt=g.pt, planes=g.b * g.c, pixels=px)


def _layout(ops: dict[int, _Operand], x: _Operand, out: _T, g: _Geo, tr: int, tc: int, nbuf: int) -> tuple:
    """(L1 bytes, operand offsets, input buffer offsets, output offset) for tiles of ``tr`` rows by ``tc`` output
    channels (``ops``: whole, or 'cols': ``tc`` channels of the weights / bias per tile, ``nbuf`` buffers)."""
    pos, offs = 0, {}
    for i, o in ops.items():
        if o.kind == "whole":
            offs[i], pos = (pos,), pos + _a(_nbytes(o.t.ctype, o.t.size))
    for i, o in ops.items():
        if o.kind == "cols":
            size = _a(_nbytes(o.t.ctype, tc * o.unit))
            offs[i], pos = tuple(pos + k * size for k in range(nbuf)), pos + nbuf * size
    size = _a(_nbytes(x.t.ctype, g.b * g.c * g.in_rows(tr) * g.w))
    xoffs = tuple(pos + k * size for k in range(nbuf))
    pos += nbuf * size
    return pos + _a(_nbytes(out.ctype, g.b * tc * tr * g.wo)), offs, xoffs, pos


def _plan(node: Node, ops: dict, x: _Operand, out: _T, g: _Geo, l1: int, double: bool) -> tuple:
    """(operands, tile rows, tile channels, buffers): one tile when the whole op fits (single buffered); else
    output-channel tiles (a Conv of one group whose weights with one output row do not fit: the most channels
    that fit with one row, balanced), then the most rows that fit, balanced over the tiles."""
    if _layout(ops, x, out, g, g.ho, g.o, 1)[0] <= l1:
        return ops, g.ho, g.o, 1
    nbuf, tc = (2 if double else 1), g.o
    if int(node.attrs.get("group", 1)) == 1 and ops and _layout(ops, x, out, g, 1, g.o, nbuf)[0] > l1:
        ops = {i: _Operand(o.t, "cols", o.t.size // g.o) for i, o in ops.items()}
        tc = _fit(lambda c: _layout(ops, x, out, g, 1, c, nbuf)[0], g.o, l1)
        tc = math.ceil(g.o / math.ceil(g.o / tc))
    need1 = _layout(ops, x, out, g, 1, tc, nbuf)[0]
    if need1 > l1:
        what = f"one output row{f' of {tc} channel(s)' if tc < g.o else ''} with its {g.in_rows(1)} input row(s)"
        raise CodegenError(
            f"L1 for {node.op} (smallest tile: {what}; the whole-tensor tile needs "
            f"{_layout(ops, x, out, g, g.ho, g.o, 1)[0]} B)", value=f"{need1} B", limit=f"l1_bytes = {l1}",
            where=node.label, fix=f"pass l1_bytes >= {need1}" + (", or single buffering" if nbuf == 2 else ""),
        )  # fmt: skip
    tr = _fit(lambda r: _layout(ops, x, out, g, r, tc, nbuf)[0], g.ho, l1)
    return ops, math.ceil(g.ho / math.ceil(g.ho / tr)), tc, nbuf


def _tile_out(em: Any, g: _Geo, out: _T, out_off: int, single: bool, tiled: bool) -> str:
    """C DMAing a tile's output back to L2: one transfer per output plane (b, o) of the tile's rows."""
    osize = CTYPES[out.ctype][1]
    if single:
        return _dma(em.arr(out), f"gc_l1 + {out_off}", _nbytes(out.ctype, out.size))
    nc, c0 = ("gc_nc", "gc_c0") if tiled else (str(g.o), "0")
    row = f"gc_nr * {g.wo * osize}"
    copy = _dma2d(f"{em.arr(out)} + ((gc_b * {g.o} + {c0}) * {g.ho} + gc_t0) * {g.wo}",
                  f"gc_l1 + {out_off} + gc_b * {nc} * {row}", row, nc, g.ho * g.wo * osize, row)  # fmt: skip
    return copy.replace("gc_b", "0") if g.b == 1 else f"for (int32_t gc_b = 0; gc_b < {g.b}; ++gc_b) {copy}"


def _halo_op(em: Any, node: Node, ins: list, out: _T, index: int, cfg: dict, rq: tuple | None) -> tuple[str, Any]:
    """The C of a Conv / pool (template ``graph_cluster_op.c``, rows = output rows, columns = output channels
    when channel-tiled) and its plan row."""
    xt = ins[0]
    g = _geometry(node, xt, out, ins[1] if node.op == "Conv" else None)
    ops = {}
    if node.op == "Conv":
        for i in (1, 2):
            if i < len(ins) and ins[i] is not None and not _is_literal(ins[i]):
                ops[i] = _Operand(ins[i])
    x = _Operand(xt, "rows")
    ops, tr, tc, nbuf = _plan(node, ops, x, out, g, cfg["l1"], cfg["double"])
    need, offs, xoffs, out_off = _layout(ops, x, out, g, tr, tc, nbuf)
    for i, o in ops.items():
        o.offs = offs[i]
    x.offs = xoffs
    hin, n_rt, n_ct = g.in_rows(tr), math.ceil(g.ho / tr), math.ceil(g.o / tc)
    tiled, single = n_ct > 1, n_rt * n_ct == 1
    cols = [o for o in ops.values() if o.kind == "cols"]

    def tile_in(*args: str) -> str:
        return "\n".join([_halo_in(em, g, x, hin, args, single)] + [o.dma_in(em, *args) for o in cols])

    if node.op == "Conv":
        compute = _conv_code(em, node, ins, out, g, {**ops, 0: x}, hin, out_off, rq)
    else:
        compute = _pool_code(em, node, xt, out, g, x, hin, out_off)
    mode = "whole" if single else "halo"
    chans = f" x {n_ct} channel tile(s) of {tc} of {g.o} output channels" if tiled else ""
    text = _kernel(
        "graph_cluster_op.c", index=index, label=node.label.replace("*/", "* /"), marker=f"{index * 65536}u",
        summary=f"{mode}: {n_rt} tile(s) of {tr} of {g.ho} output rows ({hin} input rows with the halo){chans}, "
        f"{'DB' if nbuf == 2 else 'SB'}, L1 {need} B", double=nbuf == 2, cols=tiled, n_tiles=n_rt * n_ct,
        tile_rows=tr, rows=g.ho, col_tiles=n_ct, tile_cols=tc, n_cols=g.o,
        fixed_in="\n".join(o.dma_in(em, "first", "0", "0", "0", "0") for o in ops.values() if o.kind == "whole"),
        first_in=tile_in("first", "0", str(tr), "0", str(tc)),
        tile_in=tile_in("cur", "gc_t0", "gc_nr", "gc_c0", "gc_nc"),
        next_in=tile_in("next", "gc_n0", "gc_nn", "gc_m0", "gc_mc"), compute=compute,
        tile_out=_tile_out(em, g, out, out_off, single, tiled),
    )  # fmt: skip
    return text, _row(node, g, (xt, out, ops, rq), (index, mode, tr, tc, nbuf, need, hin))


def _row(node: Node, g: _Geo, ts: tuple, plan: tuple) -> ClusterRow:
    """A halo-tiled op's plan row: DMA bytes and transfers counted tile by tile (halo rows included)."""
    (xt, out, ops, rq), (index, mode, tr, tc, nbuf, need, hin) = ts, plan
    n_rt, n_ct = math.ceil(g.ho / tr), math.ceil(g.o / tc)
    isz, out_bytes = CTYPES[xt.ctype][1], _nbytes(out.ctype, out.size)
    rows = [g.rows_of(t * tr, min(tr, g.ho - t * tr)) for t in range(n_rt)]
    if mode == "whole":
        in_bytes, transfers = _nbytes(xt.ctype, xt.size), 2
    else:
        in_bytes = n_ct * sum(g.b * g.c * r * g.w * isz for r in rows)
        transfers = n_ct * sum(1 for r in rows if r) + n_rt * n_ct * g.b
    w_bytes = sum(_nbytes(o.t.ctype, o.t.size) * (n_rt if o.kind == "cols" else 1) for o in ops.values())
    transfers += sum(n_rt * n_ct if o.kind == "cols" else 1 for o in ops.values())
    return ClusterRow(
        index, node.name, node.op, mode, g.ho, tr, n_rt * n_ct, "DB" if nbuf == 2 else "SB", need, out_bytes,
        w_bytes + in_bytes + out_bytes, cols=g.o if n_ct > 1 else 0, tile_cols=tc if n_ct > 1 else 0,
        col_tiles=n_ct, dma_transfers=transfers, fused=rq[0].name if rq else "", in_rows=hin,
    )  # fmt: skip


def _conv_fusable(h: _T, rq_ins: list) -> bool:
    """Whether a RequantShift's mul and add are constants, uniform or one per output channel of a Conv's ``h``."""
    if len(rq_ins) < 3 or any(t is None or t.value is None for t in rq_ins[1:3]) or len(h.shape) < 3:
        return False
    for t in rq_ins[1:3]:
        cs = _channel_shape(t, h)
        al = (1,) * (len(h.shape) - len(cs)) + tuple(cs)
        if len(al) != len(h.shape) or any(d != 1 for i, d in enumerate(al) if i != 1) or al[1] not in (1, h.shape[1]):
            return False
    return True


def _add_fusable(h: _T, rq_ins: list) -> tuple[_T, _T] | None:
    """An Add's fused RequantShift's mul and add as tensors of their channel shapes (Deeploy's broadcast), or
    None when they are not constants or broadcast beyond the sum's shape."""
    if len(rq_ins) < 3 or any(t is None or t.value is None for t in rq_ins[1:3]):
        return None
    shaped = [_T(_channel_shape(t, h), t.lo, t.hi, t.ctype, t.ptr, t.value) for t in rq_ins[1:3]]
    if len(h.shape) < max(len(t.shape) for t in shaped):
        return None
    if tuple(np.broadcast_shapes(h.shape, *(t.shape for t in shaped))) != tuple(h.shape):
        return None
    return shaped[0], shaped[1]


def _add_requant(em: Any, rq: tuple, h: _T, tem: Any, node: Node, ins: list) -> None:
    """An Add with its fused RequantShift as one element-wise op over ``ins`` = a, b, mul, add (the unit's
    views): ``clip(((a + b) mul + add + 2^(s-1)) >> s, lo, hi)``, exact in the wider of the two accumulators."""
    a, b, mul, add = ins[:4]
    shape = np.broadcast_shapes(a.shape, b.shape, mul.shape, add.shape)
    dst = tem.out(node.outputs[0], shape, 0, 0, node)
    strides = [_bstrides(t.shape, shape) for t in (a, b, mul, add)]
    wide = _acc_type(max(h.amax, a.amax, b.amax), node.label)

    def make(d: str, av: str, bv: str, mv: str, zv: str) -> str:
        return _requant_store(em, rq, f"(({wide}){av} + ({wide}){bv})", d, dst, refs=(mv, zv))

    _map(tem, node, dst, [a, b, mul, add], make, strides)


def _row_prefix(em: Any, node: Node, ins: list, out: _T) -> int:
    """The number ``p`` of leading dims over which a Concat / Transpose / reduction / Slice / Gather / Pad acts on
    every index alike (0: none), so that its output rows (the first ``p`` dims) each read only the same row of
    each data input: Concat below its axis, Transpose over its fixed leading dims, a reduction below its first
    reduced axis, a Slice / Gather / Pad whose index map, computed at generation, sends every output row to the
    same row of the input with the same map within the row (checked on the whole map and on one row's)."""
    x, rank = ins[0], len(out.shape)
    if x is None or x.value is not None or (len(x.shape) != rank and node.op not in SEPARABLE_OPS[5:]):
        return 0
    if node.op == "Concat":
        parts = [t for t in ins if t is not None]
        if any(len(t.shape) != rank for t in parts):
            return 0
        pmax = int(node.attrs.get("axis", 0)) % max(rank, 1)
    elif node.op == "Transpose":
        perm = node.attrs.get("perm")
        perm = list(range(rank))[::-1] if perm is None else [int(v) for v in perm]
        pmax = next((d for d in range(rank) if perm[d] != d), rank)
    elif node.op in ("Slice", "Gather", "Pad"):
        return _map_prefix(em, node, ins, out)
    else:  # a reduction: its rows may be the whole output (keepdims 0)
        axes, _ = _reduce_axes(em, node, ins, x)
        pmax, rank = (min(axes) if axes else 0), len(x.shape)
    pmax = min(pmax, rank - 1)
    while pmax > 0 and any(t is not None and tuple(t.shape[:pmax]) != tuple(out.shape[:pmax]) for t in ins[:1]):
        pmax -= 1
    return pmax if pmax and int(np.prod(out.shape[:pmax])) > 1 else 0


def _map_prefix(em: Any, node: Node, ins: list, out: _T) -> int:
    """:func:`_row_prefix` of an index-map op: the largest ``p`` whose rows map alike (0: none)."""
    x = ins[0]
    if any(t is not None and t.value is None for t in ins[1:]):
        return 0
    idx = _index_map(em, node, ins)[0].reshape(-1)
    for p in range(len(out.shape) - 1, 0, -1):
        rows = int(np.prod(out.shape[:p]))
        if tuple(out.shape[:p]) != tuple(x.shape[:p]) or rows < 2:
            continue
        unit = int(np.prod(x.shape[p:]))
        grid = idx.reshape(rows, -1)
        base = (np.arange(rows) * unit)[:, None]
        local = np.where(grid >= 0, grid - base, -1)
        if np.any((grid >= 0) & ((local < 0) | (local >= unit))) or np.any(local != local[:1]):
            continue
        one = _T((1,) * p + tuple(x.shape[p:]), x.lo, x.hi, x.ctype, x.ptr)
        if np.array_equal(_index_map(em, node, [one, *ins[1:]])[0].reshape(-1), local[0]):
            return p
    return 0
