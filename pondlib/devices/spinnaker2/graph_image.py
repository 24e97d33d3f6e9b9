r"""Version 2 of the DRAM image: graphs of ops (CNNs, transformer blocks) over one chip or several.

Same magic as version 1 (``b"S2DNNIMG"``), version 2; version-1 images (MLP layer chains) still load through
``load_dnn_image`` (in ``dnn_graph``) and ``DNNConfig.from_dram_image``. Little-endian; every region, block,
parameter array and buffer starts on a 16-byte boundary; padding is zero. One image holds every chip's
section: the op blocks are ordered by chip (each chip runs a contiguous run of ops; the chip table gives each
chip's first op and its activation region), every chip's scheduler walks its own run, and the transfer table
says which buffers go over which chip-to-chip link.

========================  =========================================================================================
region (in order)         contents
========================  =========================================================================================
global configuration      96 B at offset 0 (below)
tensor table              ``L + 1`` entries of 32 B: the input (tensor 0), then op ``i``'s output (tensor ``i + 1``)
chip table                ``N`` entries of 16 B: u32 first op, u32 op count, u32 activation region, u32 its size
transfer table            ``T`` entries of 16 B: i32 tensor (-1: the input), u16 source chip, u16 destination chip,
                          u32 bytes per sample, u32 the receiving buffer (in the destination chip's region)
op blocks                 a linked list from ``first op`` (96 B + attributes each, padded)
host metadata             UTF-8 JSON: ``limits_name``, ``report``, op ``names`` and ``splits`` (never read on chip)
parameters                per op: int8 weights (row-major, the shape in the block), then int32 biases
activations               per chip: one int8 buffer per tensor that chip writes or receives (one sample)
========================  =========================================================================================

Global configuration: ``0`` 8s magic | ``8`` u16 version (2) | ``10`` u16 header size (96) | ``12`` u32 op count
``L`` | ``16`` u32 chips ``N`` | ``20`` u32 transfers ``T`` | ``24`` u32 first op block | ``28`` u32 tensor table |
``32`` u32 chip table | ``36`` u32 transfer table | ``40`` u32 metadata | ``44`` u32 metadata length | ``48`` u32
parameters | ``52`` u32 activations | ``56`` u32 total size | ``60`` i32 input fraction | ``64`` u8 acc_bits |
``65`` u8 overflow (0 error, 1 wrap) | ``66`` u16 input rank | ``68`` u32 CRC-32 | ``72`` 24 zero bytes.

Tensor entry: i32 fraction | u32 buffer (on its writer's chip) | u32 bytes per sample | u8 rank | u8 chip |
u16 zero | 4 x u32 per-sample dims (rank <= 4).

Op block: ``0`` u32 next (0: last) | ``4`` u16 op code (``graph_ops.OP_CODES``; 1 is version 1's fully
connected) | ``6`` u8 flags (bit 0 fused ReLU) | ``7`` u8 shift | ``8`` u8 chip | ``9`` u8 inputs (1 or 2; a
``concat`` more) | ``10`` u16 attribute words | ``12`` i32 output fraction | ``16``/``20`` i32 input fractions |
``24``/``28`` i32 input tensors (op index, -1 the input) | ``32`` u32 weights | ``36`` u8 weight rank | ``40``
4 x u32 weight dims | ``56`` u32 bias | ``60`` u32 bias count | ``64`` u32 worker tiles | ``68`` u32 op index |
``72`` u32 block size | ``76`` 20 zero bytes | ``96`` attributes: per attribute u16 key (:data:`ATTR_KEYS`, then
``more_inputs``, ``more_fracs``: the inputs and fractions of an op with more than two, beyond the block's slots),
u16 count, count x i32.

Integrity as version 1: the CRC-32 covers bytes ``0 .. activations`` with the CRC field as zeros; reading checks
magic, version, sizes, CRC, every pointer against its region and the op chain, and raises
:class:`~pondlib.errors.ConfigError` naming the field and its offset.

Example:
    >>> import numpy as np
    >>> from pondlib.devices.spinnaker2.graph_ops import GraphOp
    >>> from pondlib.devices.spinnaker2.dnn_graph import GraphConfig
    >>> relu = GraphOp("r", "relu", (-1,), (4,), (3,), 3, tiles=1)
    >>> cfg = GraphConfig((relu,), (4,), 3)
    >>> data = cfg.to_dram_image()
    >>> data[:8], int.from_bytes(data[8:10], "little")
    (b'S2DNNIMG', 2)
    >>> run_graph_image(data, np.array([[-3, 1, -1, 5]]))[0].tolist()
    [[0, 1, 0, 5]]
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pondlib.devices.spinnaker2.graph_ops import OP_CODES, GraphOp, run_op
from pondlib.errors import ConfigError, SimulationError
from pondlib.validate import as_int_array, check_choice

__all__ = ["ATTR_KEYS", "ParsedGraph", "build_graph_image", "parse_graph_image", "run_graph_image", "VERSION"]

MAGIC = b"S2DNNIMG"
VERSION = 2
HEADER = 96
ALIGN = 16
_WHERE = "DRAM image v2"
#: Attribute keys of op blocks, by id.
ATTR_KEYS = (
    "strides",
    "pads",
    "dilations",
    "groups",
    "kernel",
    "count_include_pad",
    "perm",
    "exp",
    "gelu",
    "axis",
    "part",
)
#: Keys the image adds for an op of more than two inputs (a ``concat``): its inputs and fractions beyond the
#: block's two slots (never in ``GraphOp.attrs``).
_MORE = ("more_inputs", "more_fracs")
_KEYS = ATTR_KEYS + _MORE
_CODE_OPS = {v: k for k, v in OP_CODES.items()}
_HEAD = struct.Struct("<8sHHIIIIIIIIIIIIiBBHI24x")
_TENSOR = struct.Struct("<iIIBBH4I")
_CHIP = struct.Struct("<4I")
_XFER = struct.Struct("<iHHII")
_BLOCK = struct.Struct("<IHBBBBHiiiiiIB3x4IIIIII20x")


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _err(field: str, offset: int, value: Any, limit: Any, fix: str = "rebuild the image") -> ConfigError:
    return ConfigError(field, value=value, limit=limit, where=f"{_WHERE} (offset 0x{offset:x})", fix=fix)


def _attrs_bytes(op: GraphOp) -> bytes:
    out = b""
    more = dict(zip(_MORE, (op.inputs[2:], op.in_fracs[2:]))) if len(op.inputs) > 2 else {}
    for key, values in {**op.attrs, **more}.items():
        vals = [int(v) for v in values]
        out += struct.pack(f"<HH{len(vals)}i", _KEYS.index(key), len(vals), *vals)
    return out


def _buffers(cfg: Any) -> tuple[list[int], dict[tuple[int, int], int], list[int], int]:
    """Activation layout: per tensor (-1..L-1) its size; (tensor, chip) -> buffer offset within activations;
    per chip its region start (relative) and the total."""
    sizes = [int(np.prod(cfg.input_shape))] + [int(np.prod(op.out_shape)) for op in cfg.ops]
    where: dict[tuple[int, int], int] = {}
    starts, at = [], 0
    for c in range(cfg.chips):
        starts.append(at)
        homes = ([-1] if c == 0 else []) + [i for i, op in enumerate(cfg.ops) if op.chip == c]
        homes += [t.tensor for t in cfg.transfers if t.dst == c]
        for t in homes:
            where[(t, c)] = at
            at += _align(sizes[t + 1])
    return sizes, where, starts + [at], at


def build_graph_image(cfg: Any) -> bytes:
    """The version-2 image of a :class:`~pondlib.devices.spinnaker2.dnn_graph.GraphConfig` (deterministic; the
    configuration is checked by ``GraphConfig.to_dram_image`` first)."""
    L, N, T = len(cfg.ops), cfg.chips, len(cfg.transfers)
    meta = json.dumps(
        {
            "limits_name": cfg.limits_name,
            "report": cfg.report,
            "names": [op.name for op in cfg.ops],
            "splits": [op.split for op in cfg.ops],
        },
        sort_keys=True,
    ).encode()
    tens = HEADER
    chip_t = tens + _align(_TENSOR.size * (L + 1))
    xfer_t = chip_t + _align(_CHIP.size * N)
    blocks, at = [], xfer_t + _align(_XFER.size * T)
    attrs = [_attrs_bytes(op) for op in cfg.ops]
    for a in attrs:
        blocks.append(at)
        at += _align(_BLOCK.size + len(a))
    meta_at = at
    params = _align(meta_at + len(meta))
    w_at, b_at, at = [], [], params
    for op in cfg.ops:
        w_at.append(at if op.weights is not None else 0)
        at += _align(op.weights.size) if op.weights is not None else 0
        b_at.append(at if op.bias is not None else 0)
        at += _align(4 * op.bias.size) if op.bias is not None else 0
    act = at
    sizes, bufs, starts, act_total = _buffers(cfg)
    buf = bytearray(act + act_total)
    for t in range(-1, L):
        shape = cfg.input_shape if t < 0 else cfg.ops[t].out_shape
        chip = 0 if t < 0 else cfg.ops[t].chip
        frac = cfg.input_frac if t < 0 else cfg.ops[t].out_frac
        dims = list(shape) + [0] * (4 - len(shape))
        addr = act + bufs[(t, chip)]
        _TENSOR.pack_into(buf, tens + _TENSOR.size * (t + 1), frac, addr, sizes[t + 1], len(shape), chip, 0, *dims)
    for c in range(N):
        mine = [i for i, op in enumerate(cfg.ops) if op.chip == c]
        first = mine[0] if mine else 0
        _CHIP.pack_into(buf, chip_t + 16 * c, first, len(mine), act + starts[c], starts[c + 1] - starts[c])
    for k, t in enumerate(cfg.transfers):
        _XFER.pack_into(buf, xfer_t + 16 * k, t.tensor, t.src, t.dst, t.bytes, act + bufs[(t.tensor, t.dst)])
    for i, op in enumerate(cfg.ops):
        w = op.weights
        wdims = (list(w.shape) + [0] * 4)[:4] if w is not None else [0] * 4
        ins = list(op.inputs[:2]) + [0] * (2 - len(op.inputs[:2]))
        fr = list(op.in_fracs[:2]) + [0] * (2 - len(op.in_fracs[:2]))
        _BLOCK.pack_into(
            buf,
            blocks[i],
            blocks[i + 1] if i + 1 < L else 0,
            OP_CODES[op.op],
            int(op.relu),
            int(op.shift),
            int(op.chip),
            len(op.inputs),
            len(attrs[i]) // 4,
            int(op.out_frac),
            *fr,
            *ins,
            w_at[i],
            0 if w is None else w.ndim,
            *wdims,
            b_at[i],
            0 if op.bias is None else op.bias.size,
            int(op.tiles),
            i,
            _align(_BLOCK.size + len(attrs[i])),
        )
        buf[blocks[i] + _BLOCK.size : blocks[i] + _BLOCK.size + len(attrs[i])] = attrs[i]
        if w is not None:
            buf[w_at[i] : w_at[i] + w.size] = w.astype("<i1").tobytes()
        if op.bias is not None:
            buf[b_at[i] : b_at[i] + 4 * op.bias.size] = op.bias.astype("<i4").tobytes()
    buf[meta_at : meta_at + len(meta)] = meta
    ov = {"error": 0, "wrap": 1}[cfg.overflow]
    _HEAD.pack_into(
        buf,
        0,
        MAGIC,
        VERSION,
        HEADER,
        L,
        N,
        T,
        blocks[0] if L else 0,
        tens,
        chip_t,
        xfer_t,
        meta_at,
        len(meta),
        params,
        act,
        len(buf),
        int(cfg.input_frac),
        int(cfg.acc_bits),
        ov,
        len(cfg.input_shape),
        0,
    )
    struct.pack_into("<I", buf, 68, zlib.crc32(bytes(buf[:act])))
    return bytes(buf)


def _header(data: bytes) -> tuple:
    if len(data) < HEADER:
        raise _err("header", 0, f"{len(data)} bytes", f">= {HEADER} bytes", "pass the whole image")
    h = _HEAD.unpack_from(data, 0)
    if h[0] != MAGIC:
        raise _err("magic", 0, h[0], MAGIC, "pass a SpiNNaker2 DNN image")
    if h[1] != VERSION:
        raise _err(
            "version", 8, h[1], VERSION, "load version-1 images with load_dnn_image or DNNConfig.from_dram_image"
        )
    if h[14] != len(data):
        raise _err("total image size", 56, f"{len(data)} bytes", h[14], "pass the whole image")
    act = h[13]
    if not HEADER <= act <= len(data):
        raise _err("activations", 52, act, f"{HEADER}..{len(data)}")
    crc = bytearray(data[:act])
    crc[68:72] = b"\0\0\0\0"
    if zlib.crc32(bytes(crc)) != h[19]:
        raise _err("CRC-32", 68, h[19], zlib.crc32(bytes(crc)), "the image was changed: rebuild it")
    return h


def _check_ptr(field: str, offset: int, addr: int, size: int, lo: int, hi: int) -> None:
    if addr % ALIGN or not lo <= addr <= addr + size <= hi:
        raise _err(field, offset, addr, f"16-byte aligned within {lo}..{hi} ({size} B)")


def _read_ops(data: bytes, h: tuple) -> list[tuple[dict, GraphOp]]:
    n_ops, first, meta_at, params, act = h[3], h[6], h[10], h[12], h[13]
    ops, off, seen = [], first, set()
    while off:
        if off in seen or len(ops) >= n_ops:
            raise _err(
                "op chain", off, f"block {off} again or more than {n_ops} blocks", "an acyclic chain of L blocks"
            )
        seen.add(off)
        _check_ptr("op block", off, off, _BLOCK.size, h[9], meta_at)
        b = _BLOCK.unpack_from(data, off)
        nxt, code, flags, shift, chip, n_in, n_words, ofrac = b[:8]
        if code not in _CODE_OPS:
            raise _err("op code", off + 4, code, sorted(_CODE_OPS), "rebuild the image with this version")
        fr, ins = b[8:10], b[10:12]
        w_at, w_rank, wdims, b_at, b_n, tiles, index = b[12], b[13], b[14:18], b[18], b[19], b[20], b[21]
        attrs, pos = {}, off + _BLOCK.size
        end = pos + 4 * n_words
        while pos < end:
            key, cnt = struct.unpack_from("<HH", data, pos)
            if key >= len(_KEYS) or pos + 4 + 4 * cnt > end:
                raise _err("attribute", pos, f"key {key}, {cnt} values", f"keys 0..{len(_KEYS) - 1} within the block")
            attrs[_KEYS[key]] = struct.unpack_from(f"<{cnt}i", data, pos + 4)
            pos += 4 + 4 * cnt
        more_in, more_fr = (tuple(attrs.pop(k, ())) for k in _MORE)
        if len(more_in) != len(more_fr) or len(more_in) != max(n_in - 2, 0):
            raise _err("op inputs", off + 9, f"{n_in} inputs, {len(more_in)} beyond the block", "one per input")
        w = bias = None
        if w_at:
            shape = tuple(wdims[:w_rank])
            size = int(np.prod(shape))
            _check_ptr("weights", off + 32, w_at, size, params, act)
            w = np.frombuffer(data, "<i1", size, w_at).reshape(shape).astype(np.int64)
        if b_at:
            _check_ptr("bias", off + 56, b_at, 4 * b_n, params, act)
            bias = np.frombuffer(data, "<i4", b_n, b_at).astype(np.int64)
        op = GraphOp(
            "",
            _CODE_OPS[code],
            tuple(ins[:n_in]) + more_in,
            (),
            tuple(fr[:n_in]) + more_fr,
            ofrac,
            shift,
            bool(flags & 1),
            w,
            bias,
            attrs,
            tiles,
            "",
            chip,
        )
        ops.append(({"offset": off, "index": index}, op))
        off = nxt
    if len(ops) != n_ops:
        raise _err("op count", 12, len(ops), n_ops)
    return ops


def _tables(data: bytes, h: tuple) -> tuple[list[tuple], list[tuple], list[tuple]]:
    n_ops, chips, n_x, tens, chip_t, xfer_t = h[3], h[4], h[5], h[7], h[8], h[9]
    _check_ptr("tensor table", 28, tens, _TENSOR.size * (n_ops + 1), HEADER, len(data))
    _check_ptr("chip table", 32, chip_t, _CHIP.size * chips, HEADER, len(data))
    _check_ptr("transfer table", 36, xfer_t, _XFER.size * n_x, HEADER, len(data))
    tensors = [_TENSOR.unpack_from(data, tens + _TENSOR.size * i) for i in range(n_ops + 1)]
    for i, t in enumerate(tensors):
        if t[3] > 4 or int(np.prod(t[6 : 6 + t[3]])) != t[2] or not h[13] <= t[1] <= t[1] + t[2] <= len(data):
            raise _err("tensor entry", tens + _TENSOR.size * i, t, "rank <= 4, dims matching the bytes, a buffer")
    chip_rows = [_CHIP.unpack_from(data, chip_t + 16 * c) for c in range(chips)]
    xfers = [_XFER.unpack_from(data, xfer_t + 16 * k) for k in range(n_x)]
    for k, x in enumerate(xfers):
        if not (-1 <= x[0] < n_ops and x[1] < chips and x[2] < chips and h[13] <= x[4] <= x[4] + x[3] <= len(data)):
            raise _err("transfer entry", xfer_t + 16 * k, x, "a tensor, two chips and a buffer in the image")
    return tensors, chip_rows, xfers


@dataclass(frozen=True, eq=False)
class ParsedGraph:
    """The checked content of a version-2 image: the ops (names, splits and shapes restored), the input shape
    and fraction, accumulator width, overflow mode, chip count, transfers ``(tensor, src, dst, bytes)``, the
    limits' name and the report (``GraphConfig.from_dram_image`` makes a configuration of it)."""

    ops: tuple[GraphOp, ...]
    input_shape: tuple[int, ...]
    input_frac: int
    acc_bits: int
    overflow: str
    chips: int
    transfers: tuple[tuple[int, int, int, int], ...]
    limits_name: Any
    report: Any


def parse_graph_image(data: Any) -> ParsedGraph:
    """The content of a version-2 image (``GraphConfig.from_dram_image`` turns it into a configuration).

    Raises:
        ConfigError: not bytes, or an invalid image (the field and its offset named).
    """
    raw = _bytes(data, "parse_graph_image")
    h = _header(raw)
    tensors, _, xfers = _tables(raw, h)
    try:
        meta = json.loads(raw[h[10] : h[10] + h[11]].decode())
        names, splits = list(meta["names"]), list(meta["splits"])
        limits_name, report = meta["limits_name"], meta["report"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise _err("metadata", 40, "unreadable JSON", "names, splits, limits_name, report") from None
    if len(names) != h[3] or len(splits) != h[3]:
        raise _err("metadata", 40, f"{len(names)} names", f"{h[3]} (one per op)")
    ops = []
    for i, (_, op) in enumerate(_read_ops(raw, h)):
        t = tensors[i + 1]
        ops.append(replace(op, name=names[i], split=splits[i], out_shape=tuple(t[6 : 6 + t[3]])))
    t0 = tensors[0]
    xf = tuple((x[0], x[1], x[2], x[3]) for x in xfers)
    overflow = ("error", "wrap")[h[17]] if h[17] < 2 else "?"
    return ParsedGraph(tuple(ops), tuple(t0[6 : 6 + t0[3]]), h[15], h[16], overflow, h[4], xf, limits_name, report)


def _bytes(data: Any, where: str) -> bytes:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ConfigError(
            "data", value=f"a {type(data).__name__}", limit="bytes", where=where, fix="pass the image's bytes"
        )
    return bytes(data)


def run_graph_image(data: Any, x: Any) -> tuple[np.ndarray, bytes]:
    """Walk a version-2 image as the chips' schedulers do, one sample at a time, through the image's bytes.

    Per sample the host writes the input (int8) to tensor 0's buffer on chip 0; for each chip in order its
    scheduler follows its op blocks: each op reads its inputs from the buffers of its chip (the writer's buffer,
    or the buffer a transfer filled), its weights and biases from the parameter region, runs the op's integer
    rule and writes the output buffer; after an op, every transfer of its output copies the buffer to the
    destination chip's receiving buffer (the chip-to-chip link). The result is the last op's buffer; it equals
    :class:`~pondlib.devices.spinnaker2.dnn_graph.GraphSim` bit for bit.

    Returns:
        ``(y (B, *out_shape) int64, dram)``: outputs and the image after the last sample.

    Raises:
        ConfigError: an invalid image. SimulationError: input not int8 ``(B, *input_shape)``; an accumulator
            overflow with overflow="error".
    """
    raw = _bytes(data, "run_graph_image")
    h = _header(raw)
    tensors, _, xfers = _tables(raw, h)
    ops = [replace(op, out_shape=tuple(t[6 : 6 + t[3]])) for (_, op), t in zip(_read_ops(raw, h), tensors[1:])]
    in_shape = tuple(tensors[0][6 : 6 + tensors[0][3]])
    arr = as_int_array(x, "x", lo=-128, hi=127, where="run_graph_image", error=SimulationError, ndim=None)
    if tuple(arr.shape[1:]) != in_shape:
        raise SimulationError(
            "x shape", value=arr.shape, limit=f"(B, {in_shape})", where="run_graph_image", fix="pass int8 (B, ...)"
        )
    overflow = check_choice(("error", "wrap")[h[17]], "overflow", ("error", "wrap"), where="run_graph_image")
    dram = bytearray(raw)
    home = {t - 1: tensors[t][1] for t in range(len(tensors))}
    recv = {(xf[0], xf[2]): xf[4] for xf in xfers}
    outs = []
    for sample in arr:
        _write(dram, home[-1], sample)
        _send(dram, xfers, -1, home)
        for i, op in enumerate(ops):
            ins = [_read(dram, recv.get((j, op.chip), home[j]), tensors[j + 1]) for j in op.inputs]
            y = run_op(op, ins, h[16], overflow)[0]
            _write(dram, home[i], y)
            _send(dram, xfers, i, home)
        last = tensors[-1]
        outs.append(_read(dram, home[len(ops) - 1], last)[0])
    return np.stack(outs) if outs else np.zeros((0,) + tuple(ops[-1].out_shape)), bytes(dram)


def _send(dram: bytearray, xfers: Sequence[tuple], tensor: int, home: dict[int, int]) -> None:
    """The chip-to-chip link: every transfer of ``tensor`` copies its buffer to the receiving chip's buffer."""
    for xf in xfers:
        if xf[0] == tensor:
            src = home[tensor]
            dram[xf[4] : xf[4] + xf[3]] = dram[src : src + xf[3]]


def _write(dram: bytearray, addr: int, values: np.ndarray) -> None:
    b = np.asarray(values, dtype=np.int64).astype("<i1").tobytes()
    dram[addr : addr + len(b)] = b


def _read(dram: bytearray, addr: int, tensor: Sequence[int]) -> np.ndarray:
    shape = tuple(tensor[6 : 6 + tensor[3]])
    return np.frombuffer(bytes(dram[addr : addr + tensor[2]]), "<i1").reshape((1,) + shape).astype(np.int64)
