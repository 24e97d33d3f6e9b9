r"""The shared parts of the cluster graph C (:mod:`~.graph_codegen_cluster` and :mod:`~.graph_codegen_cluster_conv`):
the plan row, L1 operands and their DMA, alignment, the tile-size search and the fused RequantShift store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pondlib.cprogram.program import CTYPES, c_literal
from pondlib.devices.siracusa.graph_codegen import _Emitter
from pondlib.devices.siracusa.graph_codegen_ops import _T, _acc_type, _kernel

__all__ = ["ClusterRow"]

_ALIGN = 8


@dataclass(frozen=True)
class ClusterRow:
    """One op's plan: ``mode`` 'rows' (tiled) or 'whole'; ``rows`` R, ``tile_rows``, ``n_tiles`` (all tiles:
    row tiles x column tiles); ``buffering`` 'DB' / 'SB'; ``l1_bytes`` its L1 need; ``l2_bytes`` its output
    tensor; ``dma_bytes`` planned in + out (B, every re-fetch counted); MatMul / Gemm: ``cols`` N, ``tile_cols``,
    ``col_tiles``; ``dma_transfers``: the DMA transfers started (a strided column tile or a tile's planes: one 2-D
    transfer);
    ``fused``: the RequantShift requantizing a MatMul / Gemm / Conv / Add's tiles in L1 (its name), else '';
    Conv / pools (:mod:`~.graph_codegen_cluster_conv`): ``rows`` the output rows, mode 'halo' (several tiles)
    or 'whole', ``in_rows`` the input rows an L1 input buffer holds (the tile's rows with their halo)."""

    index: int
    name: str
    op: str
    mode: str
    rows: int
    tile_rows: int
    n_tiles: int
    buffering: str
    l1_bytes: int
    l2_bytes: int
    dma_bytes: int
    cols: int = 0
    tile_cols: int = 0
    col_tiles: int = 1
    dma_transfers: int = 0
    fused: str = ""
    in_rows: int = 0


def _a(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def _nbytes(ctype: str, n: int) -> int:
    return CTYPES[ctype][1] * n


@dataclass
class _Operand:
    """A data operand of an op: its tensor, how a tile takes it, and its L1 offsets (one, or two buffers).

    ``kind``: 'whole' (DMA'd once per op); 'rows' (``unit`` elements per tile row: one contiguous DMA of the
    tile's rows); 'cols' (``unit`` elements per output column: one contiguous DMA of the tile's columns, as
    Gemm's transposed B or a per-column bias); 'grid' (``h`` rows, or the tile's rows when ``h`` is 0, of
    ``unit`` elements, of which the tile's columns: one DMA per row, as MatMul's B (K, N) or a (M, N) bias)."""

    t: _T
    kind: str = "whole"
    unit: int = 0
    h: int = 0
    offs: tuple[int, ...] = ()

    def ptr(self, buf: str) -> str:
        return f"(({self.t.ctype} *)(gc_l1 + {buf}))"

    def buf(self, which: str) -> str:
        if len(self.offs) == 1:
            return str(self.offs[0])
        return {"cur": f"(gc_t & 1 ? {self.offs[1]} : {self.offs[0]})",
                "next": f"(gc_t & 1 ? {self.offs[0]} : {self.offs[1]})", "first": str(self.offs[0])}[which]  # fmt: skip

    def elements(self, tr: int, tc: int) -> int:
        """Elements of one L1 buffer for tiles of ``tr`` rows by ``tc`` columns."""
        return {"whole": self.t.size, "rows": tr * self.unit, "cols": tc * self.unit, "grid": (self.h or tr) * tc}[
            self.kind
        ]

    def dma_in(self, em: _Emitter, which: str, r0: str, nr: str, c0: str, nc: str) -> str:
        """C DMAing this operand's part of the tile (rows r0 .. r0 + nr, columns c0 .. c0 + nc) into L1."""
        size, src, dst = CTYPES[self.t.ctype][1], em.arr(self.t), f"gc_l1 + {self.buf(which)}"
        if self.kind == "whole":
            return _dma(dst, src, _nbytes(self.t.ctype, self.t.size))
        if self.kind in ("rows", "cols"):
            start, count = (r0, nr) if self.kind == "rows" else (c0, nc)
            return _dma(dst, f"{src} + {start} * {self.unit}", f"{count} * {self.unit * size}")
        h, base = (str(self.h), "0") if self.h else (nr, r0)
        return _dma2d(dst, f"{src} + {base} * {self.unit} + {c0}", f"{nc} * {size}", h, f"{nc} * {size}",
                      self.unit * size)  # fmt: skip

    def traffic(self, rows: int, cols: int, n_rt: int, n_ct: int) -> tuple[int, int]:
        """(bytes, transfers) this operand moves over an op of ``n_rt`` x ``n_ct`` tiles."""
        b = CTYPES[self.t.ctype][1]
        if self.kind == "whole":
            return b * self.t.size, 1
        if self.kind == "rows":
            return b * n_ct * rows * self.unit, n_rt * n_ct
        if self.kind == "cols":
            return b * n_rt * cols * self.unit, n_rt * n_ct
        if self.h:
            return b * n_rt * self.h * cols, n_rt * n_ct
        return b * rows * cols, n_rt * n_ct


def _is_literal(t: _T) -> bool:
    return t.value is not None and t.uniform() is not None


def _fit(need: Any, hi: int, l1: int) -> int:
    """The largest v in 1..hi with need(v) <= l1 (need(1) <= l1)."""
    lo = 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if need(mid) <= l1 else (lo, mid - 1)
    return lo


def _requant_store(
    em: _Emitter, rq: tuple, x: str, dst: str, out: _T, index: str = "(gc_c0 + n)", refs: tuple = ()
) -> str:
    """C requantizing a MatMul / Gemm / Conv / Add result ``x`` into ``dst`` (a fused RequantShift, template
    ``graph_requant.c``): its mul / add uniform or per output column (``index``: ``gc_c0 + n``; a Conv's
    channel ``o``), or the C expressions ``refs`` (an Add's element-wise mul and add)."""
    node, (h, mul, add) = rq[0], rq[1][:3]
    div = int(float(np.asarray(node.attrs.get("div")).reshape(-1)[0]))
    shift = div.bit_length() - 1
    half = (1 << (shift - 1)) if shift > 0 else 0
    acc = _acc_type(max(h.amax * mul.amax + add.amax + half, h.amax), node.label)
    mv, av = refs or (em.elem(t, index if t.size > 1 else "0") for t in (mul, add))
    return _kernel(
        "graph_requant.c", acc=acc, x=x, mul=mv, add=av, rounding=shift > 0, asr=em.asr(acc) if shift > 0 else "",
        half=c_literal(half, acc), shift=shift, dst=dst, out_type=out.ctype, lo=out.lo, hi=out.hi,
    )  # fmt: skip


def _dma(dst: str, src: str, nbytes: Any) -> str:
    return f"pond_dma_start({dst}, {src}, (uint32_t)({nbytes}));"


def _dma2d(dst: str, src: str, row_bytes: Any, rows: Any, dst_stride: Any, src_stride: Any) -> str:
    """One 2-D transfer: ``rows`` rows of ``row_bytes`` bytes, strides in bytes (the cluster DMA's 2-D mode)."""
    return (f"pond_dma_start_2d({dst}, {src}, (uint32_t)({row_bytes}), (uint32_t)({rows}), (uint32_t)({dst_stride}), "
            f"(uint32_t)({src_stride}));")  # fmt: skip
