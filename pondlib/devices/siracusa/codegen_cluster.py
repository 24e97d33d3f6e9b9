r"""Siracusa layer chains as the cluster runs them: activations in L2, tiles DMA'd into L1, work over 8 cores.

:func:`emit_chain_cluster` writes the same numbers as :func:`~pondlib.devices.siracusa.codegen.emit` (bit for
bit :class:`~pondlib.devices.siracusa.sim.SiracusaSim`: outputs and, with ``record=True``, every record key; the
equations, the wrap-around and the defined-C-only rules are those of :mod:`~pondlib.devices.siracusa.codegen`,
whose kernels ``gemm.c``, ``gemm_events.c``, ``finish.c``, ``requant.c``, ``shift_clamp.c``, ``requant_layer.c``
and ``lif.c`` are reused unchanged, run on L1 views; in a spiking chain (one with a QLIF) each QGemm is
event-driven as ``emit``'s ``layout="events"``: every core gathers the non-zero inputs of the layer's L1 input
into a list on its own stack, then sums only their weights for its output channels), scheduled for the cluster
runtime of :mod:`pondlib.cprogram.cluster`: the
step sets the L2 buffer pointers in a static struct and runs ``POND_CLUSTER_RUN(<net>_cluster, x, y)``; every
core runs every layer in order.

**Memory plan.** Weights and per-channel parameters are constants in L2, the largest moved to L3 (``POND_L3``)
when they do not fit beside the activations (:func:`~.cluster_memory.place_constants`); activations and LIF
states live in L2 (the
program's arena: states, and scratch activations shared by lifetime, as :func:`~.codegen.emit` lays them out,
so the record layout is the same) with ``x`` and ``y``. L1 is one static ``POND_L1`` array reused by every layer
from offset 0 (layers are separated by barriers and DMA waits) and sized by the layer that needs most; each
region 8-byte aligned: the layer's *whole* operands, then its *tiled* inputs (twice when double buffered), then
its output tiles. The L1 need of each layer and the L2 need (arena + ``x`` + ``y`` + constants in L2) are
checked against
``l1_bytes`` / ``l2_bytes`` at generation, refused naming the layer, the need, the limit and the fix.

**Tiles and schedule per layer kind** (template ``chain_cluster_layer.c``; a layer has ``U`` *units*):

=============  =========  ========================================================================================
layer          units      L1 per tile
=============  =========  ========================================================================================
QGemm K -> O   output     whole: the input (K values); tiled: ``o`` weight rows of the transposed (O, K) storage
               channels   (one contiguous DMA, K never tiled), their bias / mul / add; out: ``o`` outputs (and
                          the int32 accumulators when recorded) -- the footprint ``K + K o + 8 o + o`` of
                          TARGETS.md (m = 1 row) plus the bias and alignment
QConv2d        output     whole: the NHWC input, the weights and the parameters (refused when they do not fit:
               rows       the input is never tiled); out: ``h`` output rows (Wo x O values each)
QRequant       neurons    tiled: ``n`` inputs and their parameters; out: ``n`` outputs
QLIF           neurons    tiled: ``n`` inputs, ``n`` membrane states and their parameters; out: ``n`` spikes, and
                          the ``n`` updated states DMA'd back to L2
=============  =========  ========================================================================================

The tile is the largest unit count whose L1 need fits (GEMM: a multiple of 16 output channels when 16 fit, the
output-chunk rule of :mod:`~pondlib.devices.siracusa.tiling`), then balanced over the tiles
(``ceil(U / n_tiles)``). A layer that fits whole takes one single-buffered tile. Per tile, single buffered: core 0
DMAs the tile's inputs, waits; barrier; every core computes its share; barrier; core 0 DMAs the outputs back
(waited before L1 is used again). Double buffered (``double_buffer`` and more than one tile): tile 0's inputs go
with the whole operands; at tile t core 0 waits (tile t's inputs and tile t - 1's outputs are in), barrier, core 0
starts tile t + 1's inputs into the other buffer, then computes: the transfer overlaps the computation.
``pond_profile(layer index * 65536 + tile index)`` marks each tile.

**LIF state.** It stays in L2 (the program's ``state`` buffer: reset by ``pond_reset``, recorded, persistent
across steps) and each tile's part is DMA'd in with the input and back out after the update; a layer that fits
whole moves its state in one transfer each way. It is not kept resident in L1 across steps: L1 is one arena
reused by every layer of the step.

**Work split** (as :mod:`~pondlib.devices.siracusa.cycles` assumes). ``POND_NUM_CORES`` cores (1..8;
``-DPOND_NUM_CORES`` overrides ``cores``): core c of P takes units ``[n c / P, n (c + 1) / P)`` of a tile's ``n``:
GEMM output channels (chunks of at most ``ceil(o / P)``), convolution output rows, element-wise neurons.

Example:
    >>> import numpy as np, tempfile
    >>> from pondlib.codegen import compile_host, run_host
    >>> from pondlib.devices.siracusa import QGemm, QLIF, SiracusaConfig, SiracusaSim
    >>> cfg = SiracusaConfig(n_input=4, layers=(
    ...     QGemm("fc", weight=np.arange(-16, 16).reshape(4, 8)),
    ...     QLIF("lif", beta_mul=2, in_mul=4, add=0, shift=2, threshold=np.full(8, 25))))
    >>> prog, rep = emit_chain_cluster_report(cfg, name="tiny", cores=4, l1_bytes=64)
    >>> [(r.kind, r.units, r.tile, r.n_tiles, r.buffering) for r in rep.rows]
    [('gemm', 8, 4, 2, 'DB'), ('lif', 8, 8, 1, 'SB')]
    >>> x = np.array([[[1, 2, 3, 4], [4, 3, 2, 1]]])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     y, rec = run_host(compile_host(prog, d), prog, x, record=True)
    >>> bool(np.array_equal(y, SiracusaSim(cfg).evolve(x)[0]))
    True
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from pondlib.cprogram.cluster import MAX_CORES, cluster_runtime
from pondlib.cprogram.program import CTYPES, Buffer, Constant, Program, build_program, c_identifier, plan_arena
from pondlib.devices.siracusa.cluster_memory import place_constants
from pondlib.devices.siracusa.codegen import (
    _DENSE_EIGHTHS,
    _config,
    _ctype,
    _Emitter,
    _finish_acc,
    _kernel,
    _layer_buffers,
    _lif_kernel,
    _lif_state_type,
    _out_range,
    _record_layout,
    record_names,
)
from pondlib.devices.siracusa.config import check_constraints
from pondlib.devices.siracusa.limits import SIRACUSA
from pondlib.devices.siracusa.sim import SAFETY_RULES
from pondlib.devices.siracusa.specification import QLIF, QConv2d, QGemm, QRequant
from pondlib.errors import CodegenError, ConstraintError
from pondlib.validate import check_bool, check_int

__all__ = ["emit_chain_cluster", "emit_chain_cluster_report", "ChainReport", "ChainRow"]

_WHERE = "pondlib.devices.siracusa.codegen_cluster.emit_chain_cluster"
_ALIGN = 8
_I32_LO, _I32_HI = -(2**31), 2**31 - 1


@dataclass(frozen=True)
class ChainRow:
    """One layer's plan: ``kind`` (gemm, conv, requant, lif), ``units`` U, ``tile`` units per tile, ``n_tiles``,
    ``buffering`` 'DB' / 'SB', ``l1_bytes`` its L1 need, ``dma_in_bytes`` / ``dma_out_bytes`` per step."""

    index: int
    name: str
    kind: str
    units: int
    tile: int
    n_tiles: int
    buffering: str
    l1_bytes: int
    dma_in_bytes: int
    dma_out_bytes: int


@dataclass(frozen=True)
class ChainReport:
    """The plan of :func:`emit_chain_cluster`: a row per layer, the L1 arena and the L2 need (B: activations and the
    constants kept in L2), the limits, and ``l3_bytes`` (the constants moved to L3)."""

    rows: tuple[ChainRow, ...]
    l1_arena: int
    l2_need: int
    l1_limit: int
    l2_limit: int
    cores: int
    l3_bytes: int = 0


def _a(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


@dataclass
class _Op:
    """An L1 operand of a layer: the kernel names ``<base>_s`` (this core's share). ``per_unit``: ``unit``
    elements per unit, DMA'd per tile (tiled) and shifted to the core's first unit; else ``unit`` elements in
    all (whole, DMA'd once). ``src``: where it comes from (L2 / flash; "" for an output), ``dsts``: where the
    tile goes back after the computation (outputs, the LIF state)."""

    base: str
    ctype: str
    unit: int
    per_unit: bool
    src: str = ""
    dsts: tuple[str, ...] = ()
    offs: tuple[int, ...] = ()

    @property
    def size(self) -> int:
        return CTYPES[self.ctype][1]

    def off(self, which: str) -> str:
        if len(self.offs) == 1:
            return str(self.offs[0])
        o0, o1 = self.offs
        return {"cur": f"(cl_t & 1 ? {o1} : {o0})", "next": f"(cl_t & 1 ? {o0} : {o1})", "first": str(o0)}[which]

    def dma_in(self, which: str, c0: str, n: str) -> str:
        if not self.per_unit:
            return _dma(f"cl_l1 + {self.off(which)}", self.src, self.unit * self.size)
        return _dma(f"cl_l1 + {self.off(which)}", f"{self.src} + {c0} * {self.unit}", f"{n} * {self.unit * self.size}")

    def view(self) -> str:
        shift = f" + cl_a * {self.unit}" if self.per_unit else ""
        return f"{self.ctype} *const {self.base}_s = ({self.ctype} *)(cl_l1 + {self.off('cur')}){shift};"


def _dma(dst: str, src: str, nbytes: Any) -> str:
    return f"pond_dma_start({dst}, {src}, (uint32_t)({nbytes}));"


@dataclass
class _Layer:
    """A layer's tiling: ``units``, its operands (inputs then outputs), the kernel C (on the ``_s`` views),
    ``quantum`` (16: GEMM output channels) and a one-word ``kind``."""

    kind: str
    units: int
    ins: list[_Op]
    outs: list[_Op]
    kernel: str
    quantum: int = 1


def _params(em: _Emitter, i: int, first: int, per_unit: bool) -> list[_Op]:
    """The per-channel parameter constants layer ``i`` added since ``first`` (not its weights) as operands."""
    return [
        _Op(c.name, c.ctype, 1 if per_unit else c.count, per_unit, c.name)
        for c in em.constants[first:]
        if c.name != f"k{i}_w"
    ]


def _in_l1(code: str, i: int) -> str:
    """Layer ``i``'s parameter constants ``k<i>_<what>[...]`` read from their L1 views ``k<i>_<what>_s``."""
    return re.sub(rf"\bk{i}_(\w+)\[", rf"k{i}_\1_s[", code)


def _outs(layer: Any, dst: str, acc: str | None, last_y: bool) -> list[_Op]:
    out_type, unit = _ctype(*_out_range(layer)), _unit_out(layer)
    dsts = (dst, "y") if last_y else (dst,)
    outs = [_Op("cl_out", out_type, unit, True, dsts=dsts)]
    if acc is not None and acc != dst:
        outs.append(_Op("cl_acc", "int32_t", unit, True, dsts=(acc,)))
    return outs


def _unit_out(layer: Any) -> int:
    if isinstance(layer, QConv2d):
        _, wo, o = layer.out_shape
        return wo * o
    return 1


def _acc_name(acc: str | None, dst: str) -> str | None:
    return None if acc is None else ("cl_out_s" if acc == dst else "cl_acc_s")


def _gemm(em: _Emitter, i: int, layer: QGemm, src: tuple, dst: str, acc: str | None, last_y: bool) -> _Layer:
    K, O = layer.n_in, layer.n_out
    name, src_range, src_type = src
    wt = np.ascontiguousarray(layer.weight.T)
    first = len(em.constants)
    exact, bias = em.accumulate(i, wt, layer.bias, src_range)
    em.constants.append(Constant(f"k{i}_w", "int8_t", wt))
    finish = _finish_acc(em, i, layer, exact, O, "o", "cl_out_s", _acc_name(acc, dst))
    values = {"src": "cl_in_s", "dst": "cl_out_s", "w": "cl_w_s", "k": K, "o": "cl_cnt", "exact": exact, "bias": bias,
              "finish": finish}  # fmt: skip
    if em.snn:  # event-driven, as codegen's layout "events": each core gathers the input's events on its stack
        ev_type = _ctype(0, max(K - 1, 0))
        kernel = f"{ev_type} cl_ev[{K}]; /* this core's list of the non-zero inputs */\n" + _kernel(
            "gemm_events.c", ev="cl_ev", ev_type=ev_type, spikes=tuple(src_range) == (0, 1),
            dense_eighths=_DENSE_EIGHTHS, **values)  # fmt: skip
    else:
        kernel = _kernel("gemm.c", **values)
    ins = [_Op("cl_in", src_type, K, False, name), _Op("cl_w", "int8_t", K, True, f"k{i}_w")]
    ins += _params(em, i, first, True)
    return _Layer("gemm", O, ins, _outs(layer, dst, acc, last_y), _in_l1(kernel, i), 16)


def _conv(em: _Emitter, i: int, layer: QConv2d, src: tuple, dst: str, acc: str | None, last_y: bool) -> _Layer:
    H, W, C = layer.in_shape
    kh, kw, cg, O = layer.weight.shape
    Ho, Wo, _ = layer.out_shape
    name, src_range, src_type = src
    wt = np.ascontiguousarray(np.transpose(layer.weight, (3, 0, 1, 2)))
    first = len(em.constants)
    exact, bias = em.accumulate(i, wt.reshape(O, -1), layer.bias, src_range)
    em.constants.append(Constant(f"k{i}_w", "int8_t", wt))
    oh0 = "(cl_c0 + cl_a)"
    idx = f"((oh - {oh0}) * {Wo} + ow) * {O} + o"
    finish = _finish_acc(em, i, layer, exact, O, idx, "cl_out_s", _acc_name(acc, dst))
    kernel = _kernel(
        "conv.c", src="cl_in_s", dst="cl_out_s", wt="cl_w_s", h=H, w=W, c=C, wo=Wo, o=O,
        og=O // layer.groups, kh=kh, kw=kw, cg=cg, stride=layer.stride, pad=layer.padding, exact=exact, bias=bias,
        finish=finish, oh0=oh0, oh1=f"({oh0} + cl_cnt)",
    )  # fmt: skip
    ins = [_Op("cl_in", src_type, H * W * C, False, name), _Op("cl_w", "int8_t", wt.size, False, f"k{i}_w")]
    ins += _params(em, i, first, False)
    return _Layer("conv", Ho, ins, _outs(layer, dst, acc, last_y), _in_l1(kernel, i))


def _requant(em: _Emitter, i: int, layer: QRequant, src: tuple, dst: str, last_y: bool) -> _Layer:
    name, _, src_type = src
    out_range = _out_range(layer)
    first = len(em.constants)
    rq = em.requant(i, layer.requant, layer.n, "n", "cl_in_s[n]", out_range)
    kernel = _kernel("requant_layer.c", n="cl_cnt", src="cl_in_s", dst="cl_out_s", out_type=_ctype(*out_range),
                     requant=rq)  # fmt: skip
    ins = [_Op("cl_in", src_type, 1, True, name), *_params(em, i, first, True)]
    return _Layer("requant", layer.n, ins, _outs(layer, dst, None, last_y), _in_l1(kernel, i))


def _lif(em: _Emitter, i: int, layer: QLIF, src: tuple, dst: str, vbuf: str, last_y: bool) -> _Layer:
    """The LIF kernel of :func:`~.codegen.emit` (``lif.c``) over the core's neurons of the tile."""
    name, _, src_type = src
    n, vtype = layer.n, _lif_state_type(layer)
    first = len(em.constants)
    kernel = _lif_kernel(em, i, layer, "cl_cnt", "cl_in_s", "cl_out_s", "cl_v_s", vtype)
    ins = [_Op("cl_in", src_type, 1, True, name), _Op("cl_v", vtype, 1, True, vbuf, (vbuf,))]
    ins += _params(em, i, first, True)
    return _Layer("lif", n, ins, _outs(layer, dst, None, last_y), _in_l1(kernel, i))


def _layout(lay: _Layer, tile: int, nbuf: int) -> int:
    """L1 bytes of ``lay`` for tiles of ``tile`` units with ``nbuf`` input buffers; sets every operand's offsets."""
    pos = 0
    for op in lay.ins:
        if not op.per_unit:
            op.offs, pos = (pos,), pos + _a(op.unit * op.size)
    for op in lay.ins:
        if op.per_unit:
            size = _a(tile * op.unit * op.size)
            op.offs, pos = tuple(pos + b * size for b in range(nbuf)), pos + nbuf * size
    for op in lay.outs:
        op.offs, pos = (pos,), pos + _a(tile * op.unit * op.size)
    return pos


def _fit(lay: _Layer, nbuf: int, l1: int) -> int:
    """The largest tile in 1..units whose L1 need fits ``l1`` (the need of one unit fits)."""
    lo, hi = 1, lay.units
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if _layout(lay, mid, nbuf) <= l1 else (lo, mid - 1)
    return lo


def _plan(lay: _Layer, label: str, l1: int, double: bool) -> tuple[int, int, int]:
    """(tile units, input buffers, L1 need): whole in one single-buffered tile when it fits, else the largest
    tile (a multiple of ``quantum`` when one fits), balanced over the tiles; refused when one unit does not fit."""
    if _layout(lay, lay.units, 1) <= l1:
        return lay.units, 1, _layout(lay, lay.units, 1)
    nbuf = 2 if double and any(op.per_unit for op in lay.ins) else 1
    need1 = _layout(lay, 1, nbuf)
    if need1 > l1:
        whole = lay.kind == "conv"
        what = "whole input, weights and one output row" if whole else f"smallest tile (one {_UNIT[lay.kind]})"
        fix = f"pass l1_bytes >= {need1}" + (", or single buffering (double_buffer=False)" if nbuf == 2 else "")
        raise CodegenError(f"L1 for {lay.kind} layer {label} ({what})", value=f"{need1} B", limit=f"l1_bytes = {l1}",
                           where=_WHERE, fix=fix)  # fmt: skip
    tile = _fit(lay, nbuf, l1)
    q = lay.quantum if tile >= lay.quantum else 1
    tile -= tile % q
    n_tiles = math.ceil(lay.units / tile)
    tile = min(tile, math.ceil(math.ceil(lay.units / n_tiles) / q) * q)
    return tile, nbuf, _layout(lay, tile, nbuf)


_UNIT = {"gemm": "output channel", "conv": "output row", "requant": "neuron", "lif": "neuron"}


def _layer_c(lay: _Layer, index: int, layer: Any, l1: int, double: bool) -> tuple[str, ChainRow]:
    """The C of one layer (template ``chain_cluster_layer.c``) and its plan row."""
    label = repr(layer.name)
    tile, nbuf, need = _plan(lay, label, l1, double)
    n_tiles = math.ceil(lay.units / tile)
    whole = [op for op in lay.ins if not op.per_unit]
    tiled = [op for op in lay.ins if op.per_unit]
    outs = tiled + lay.outs

    def tile_in(which: str, c0: str, n: str) -> str:
        return "\n".join(op.dma_in(which, c0, n) for op in tiled)

    tile_out = "\n".join(
        _dma(f"{d} + cl_c0 * {op.unit}", f"cl_l1 + {op.off('cur')}", f"cl_nc * {op.unit * op.size}")
        for op in outs
        for d in op.dsts
    )
    double_buf = nbuf == 2
    text = _kernel(
        "chain_cluster_layer.c", index=index, kind=type(layer).__name__, label=label.replace("*/", "* /"),
        summary=f"{n_tiles} tile(s) of {tile} of {lay.units} {_UNIT[lay.kind]}s, {'DB' if double_buf else 'SB'}, "
        f"L1 {need} B", marker=f"{index * 65536}u", double=double_buf, n_tiles=n_tiles, tile=tile, units=lay.units,
        fixed_in="\n".join(op.dma_in("first", "0", "0") for op in whole),
        first_in=tile_in("first", "0", str(tile)), tile_in=tile_in("cur", "cl_c0", "cl_nc"),
        next_in=tile_in("next", "cl_n0", "cl_nn"), tile_out=tile_out,
        share="\n".join(op.view() for op in lay.ins + lay.outs) + "\n" + lay.kernel,
    )  # fmt: skip
    dma_in = sum(op.unit * op.size for op in whole) + sum(lay.units * op.unit * op.size for op in tiled)
    dma_out = sum(lay.units * op.unit * op.size * len(op.dsts) for op in outs)
    row = ChainRow(index, layer.name, lay.kind, lay.units, tile, n_tiles, "DB" if double_buf else "SB", need, dma_in,
                   dma_out)  # fmt: skip
    return text, row


def _check_args(cores: Any, l1_bytes: Any, l2_bytes: Any, double_buffer: Any, record: Any, validate: Any) -> tuple:
    cores = check_int(cores, "cores", lo=1, hi=MAX_CORES, where=_WHERE, error=CodegenError,
                      fix=f"pass 1..{MAX_CORES} cores (Siracusa's cluster has {MAX_CORES})")  # fmt: skip
    l1 = check_int(l1_bytes, "l1_bytes", lo=_ALIGN, where=_WHERE, error=CodegenError,
                   fix="pass the L1 bytes the tiles may use (Siracusa: 256 KiB TCDM)")  # fmt: skip
    l2 = SIRACUSA.l2_bytes if l2_bytes is None else l2_bytes
    l2 = check_int(l2, "l2_bytes", lo=1, where=_WHERE, error=CodegenError, fix="pass the L2 bytes (Siracusa: 2 MiB)")
    flags = [check_bool(v, k, where=_WHERE, error=CodegenError)
             for k, v in (("double_buffer", double_buffer), ("record", record), ("validate", validate))]  # fmt: skip
    return (cores, l1, l2, *flags)


def _build_layer(em: _Emitter, i: int, layer: Any, keys: dict, src: tuple, dst: str, last: bool) -> _Layer:
    last_y = last and dst != "y"  # a recorded last layer: its output goes to the record and to y
    if isinstance(layer, QGemm):
        return _gemm(em, i, layer, src, dst, keys.get("acc"), last_y)
    if isinstance(layer, QConv2d):
        return _conv(em, i, layer, src, dst, keys.get("acc"), last_y)
    if isinstance(layer, QRequant):
        return _requant(em, i, layer, src, dst, last_y)
    return _lif(em, i, layer, src, dst, keys["v"], last_y)


def emit_chain_cluster_report(
    config: Any,
    *,
    name: str = "net",
    cores: int = 8,
    l1_bytes: int = 64000,
    l2_bytes: int | None = None,
    double_buffer: bool = True,
    record: bool = False,
    validate: bool = True,
) -> tuple[Program, ChainReport]:
    """:func:`emit_chain_cluster`'s program and its plan (a :class:`ChainRow` per layer)."""
    cores, l1, l2, double, record, validate = _check_args(cores, l1_bytes, l2_bytes, double_buffer, record, validate)
    name = c_identifier(name, "program name")
    config = _config(config)
    found = [v for v in check_constraints(config) if validate or v.rule in SAFETY_RULES]
    if found:
        raise ConstraintError(found, device="siracusa")
    em, buffers, texts, rows = _Emitter(), [], [], []
    em.snn = any(isinstance(layer, QLIF) for layer in config.layers)  # spiking chains: event-driven QGemm
    in_lo, in_hi = config.input_range
    in_ctype = _ctype(in_lo, in_hi)
    src = ("x", (in_lo, in_hi), in_ctype)
    n = len(config.layers)
    for i, (layer, keys) in enumerate(zip(config.layers, _record_layout(config, record))):
        dst, _ = _layer_buffers(i, layer, keys, i == n - 1, buffers)
        lay = _build_layer(em, i, layer, keys, src, dst, i == n - 1)
        text, row = _layer_c(lay, i, layer, l1, double)
        texts.append(text)
        rows.append(row)
        src = (dst, _out_range(layer), _ctype(*_out_range(layer)))
    out_type, n_out = src[2], config.layers[-1].n_out
    acts = _l2_check(buffers, config.n_input * CTYPES[in_ctype][1] + n_out * CTYPES[out_type][1], l2)
    constants, l2_need, l3_bytes = place_constants(em.constants, acts, l2, where=_WHERE)
    arena = _a(max(r.l1_bytes for r in rows))
    fn = _kernel(
        "chain_cluster_fn.c", net=name, has_buffers=bool(buffers),
        members="\n".join(f"{b.ctype} *{b.name};" for b in buffers), l1_words=arena // 8, in_type=in_ctype,
        out_type=out_type,
        views="\n".join(f"{b.ctype} *const {b.name} = {name}_l2_ptrs.{b.name};" for b in buffers),
        unused="\n".join(f"(void){b.name};" for b in buffers), layers="\n\n".join(texts),
    )  # fmt: skip
    step = "".join(f"{name}_l2_ptrs.{b.name} = {b.name};\n" for b in buffers)
    step += f"POND_CLUSTER_RUN({name}_cluster, x, y);"
    report = ChainReport(tuple(rows), arena, l2_need, l1, l2, cores, l3_bytes)
    notes = (
        [
            f"input: the quantized integer input ({in_ctype}, range [{in_lo}, {in_hi}]; use quantize_input)",
            f"cluster: {cores} cores by default (-DPOND_NUM_CORES=1..8), L1 arena {arena} B of {l1}, L2 {l2_need} B of "
            f"{l2}, {'double' if double else 'single'} buffered; build the host with -pthread",
        ]
        + [f"L3: {l3_bytes} B of constants (the largest; they do not fit L2 beside the activations)"] * bool(l3_bytes)
        + [f"record {key} = state {cname}" for key, cname in record_names(config, record=record).items()]
    )
    prog = build_program(
        name, "siracusa", constants=constants, buffers=buffers, step_body=step, n_in=config.n_input,
        in_ctype=in_ctype, n_out=n_out, out_ctype=out_type,
        helpers=cluster_runtime(cores) + "\n" + em.helper_code() + "\n" + fn, notes=notes, cores=cores,
        description=f"Siracusa integer deployment of {n} layer(s) tiled for a {cores}-core cluster (L2 activations, "
        "L1 tiles by DMA), equal to SiracusaSim bit for bit.",
    )  # fmt: skip
    return prog, report


def _l2_check(buffers: list[Buffer], io_bytes: int, l2: int) -> int:
    """The L2 need (arena + x + y, bytes), refused beyond ``l2``."""
    need = plan_arena(buffers).size + io_bytes
    if need > l2:
        big = max(buffers, key=lambda b: b.nbytes).name if buffers else "x and y"
        raise CodegenError(
            "L2 bytes", value=f"{need} B (activations and LIF states; largest: {big})", limit=f"l2_bytes = {l2}",
            where=_WHERE, fix=f"pass l2_bytes >= {need}, or a smaller model",
        )  # fmt: skip
    return need


def emit_chain_cluster(
    config: Any,
    *,
    name: str = "net",
    cores: int = 8,
    l1_bytes: int = 64000,
    l2_bytes: int | None = None,
    double_buffer: bool = True,
    record: bool = False,
    validate: bool = True,
) -> Program:
    """C for the cluster (module docstring), equal to ``SiracusaSim(config)`` bit for bit.

    Args:
        config: a :class:`~pondlib.devices.siracusa.config.SiracusaConfig` or a mapper ``Specification``.
        name: C prefix and file stem.
        cores: the default ``POND_NUM_CORES`` (1..8; the sources build for any of them).
        l1_bytes: the L1 the tiles may use (B); l2_bytes: the L2 (B; default Siracusa's 2 MiB).
        double_buffer: prefetch the next tile's inputs while computing (layers of several tiles).
        record: every record key of the simulator as a state buffer (as :func:`~.codegen.emit`).
        validate: every design rule must hold (``False``: only the simulator's safety rules, as ``emit``).

    Raises:
        CodegenError: cores outside 1..8, a layer whose smallest tile exceeds ``l1_bytes``, an L2 need beyond
            ``l2_bytes`` (each naming the need, the limit and the fix), not a Siracusa configuration.
        ConstraintError: the configuration breaks design rules.
    """
    return emit_chain_cluster_report(
        config, name=name, cores=cores, l1_bytes=l1_bytes, l2_bytes=l2_bytes, double_buffer=double_buffer,
        record=record, validate=validate,
    )[0]  # fmt: skip
