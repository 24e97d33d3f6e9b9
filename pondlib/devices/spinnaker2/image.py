r"""The DRAM configuration image of the DNN path: one byte string the scheduler PE walks without the host.

The host writes the image once; the scheduler PE reads the global configuration, follows the chain of
layer blocks (each names the next), triggers the worker PEs of each layer, which fetch their weight tile
and bias from data memory and write their output columns to the layer's activation buffer. Every
number is **little-endian**; every region, layer block, weight tile, bias array and activation buffer
starts on a **16-byte boundary** (one DMA burst); padding bytes are zero.

========================  ===============================================================================
region (in order)         contents
========================  ===============================================================================
global configuration      80 B at offset 0 (table below)
time-measurement area     ``32 + 32 L`` B, written by the device at run time (zero in a fresh image)
layer configurations      ``L`` blocks, a linked list from ``first_layer`` (each ``80 + 16 W + len(name)``
                          B, padded to 16)
host metadata             UTF-8 JSON ``{"limits_name": str, "report": {...}}`` (never read on chip)
data memory: parameters   per layer: ``W`` int8 weight tiles (``K x c_j`` row-major, one per worker),
                          then the ``N`` int32 biases
data memory: activations  the int8 input buffer (``K_1`` B), then one output buffer per layer (``N_l`` B);
                          written at run time, so last in the image
========================  ===============================================================================

Global configuration (offset: type field):

``0``: 8s magic ``b"S2DNNIMG"`` | ``8``: u16 version (1) | ``10``: u16 header size (80) |
``12``: u32 layer count ``L`` | ``16``: u32 input size ``K_1`` | ``20``: u32 output size ``N_L`` |
``24``: u32 first layer block | ``28``: u32 time area | ``32``: u32 metadata | ``36``: u32 metadata
length | ``40``: u32 data memory (parameters) | ``44``: u32 activation buffers | ``48``: u32 input
buffer | ``52``: u32 output buffer (the last layer's) | ``56``: u32 total image size | ``60``: i32
``input_frac`` | ``64``: u8 ``acc_bits`` | ``65``: u8 overflow (0 ``"error"``, 1 ``"wrap"``) |
``66``: u16 zero | ``68``: u32 CRC-32 | ``72``: 8 zero bytes.

Layer block (offset: type field), followed by ``W`` worker entries and the UTF-8 layer name:

``0``: u32 next block (0: last layer) | ``4``: u16 op (1: fully connected on the MLA) | ``6``: u8
flags (bit 0: fused ReLU) | ``7``: u8 shift | ``8``: u32 ``K`` | ``12``: u32 ``N`` | ``16``: u32
workers ``W`` | ``20``: u32 layer index | ``24``: u32 weights | ``28``: u32 bias | ``32``: u32 input
buffer | ``36``: u32 output buffer | ``40``/``44``/``48``: i32 ``in_frac``/``w_frac``/``out_frac`` |
``52``: u16 name length | ``54``: u16 zero | ``56``: i64 ``acc_bound`` | ``64``: i64 ``acc_worst`` |
``72``: u32 block size | ``76``: u32 zero. Worker entry (16 B): u16 PE (worker ``j`` runs on PE
``j + 1``; PE 0 is the scheduler), u16 zero, u32 first column, u32 end column (exclusive), u32 address
of the tile's weights.

Time-measurement area: u64 total cycles, u64 setup cycles, u64 cleanup cycles, u32 inferences run, u32
clock in kHz; then per layer: u64 start cycle, u64 end cycle (from the start of the inference), u32
scheduling, u32 weight fetch, u32 MLA and u32 other cycles (see ``run_dram_image`` in ``sim``).

Integrity: the CRC-32 (``zlib.crc32``) covers bytes ``0 .. activations`` with the CRC field and the time
area read as zeros, so what the device writes at run time (times, activations) never invalidates the
image while any other changed byte does. Reading checks the magic, version, sizes, CRC, every pointer
against its region and alignment, the chain (no cycle, ``L`` blocks, each input buffer the previous
output buffer) and raises :class:`~pondlib.errors.ConfigError` naming the field and its offset.

This module knows the format only (numpy arrays and plain numbers); ``DNNConfig.to_dram_image`` and
``DNNConfig.from_dram_image`` in ``dnn`` convert configurations, ``run_dram_image`` in ``sim`` walks it.

Example:
    >>> import numpy as np
    >>> from types import SimpleNamespace as L
    >>> fc = L(name="fc1", weights=np.array([[1, -2], [3, 4]]), bias=np.array([5, -6]), shift=1, relu=True,
    ...        tiles=((0, 1), (1, 2)), in_frac=4, w_frac=5, out_frac=8, acc_bound=700, acc_worst=1030)
    >>> data = build_image([fc], input_frac=4, acc_bits=24, overflow="error", limits_name="chip", report={})
    >>> len(data), data[:8]
    (400, b'S2DNNIMG')
    >>> img = parse_image(data)
    >>> [(b.name, b.relu, b.k, b.n, [w.pe for w in b.workers]) for b in img.layers]
    [('fc1', True, 2, 2, [1, 2])]
    >>> parse_image(data[:100])
    Traceback (most recent call last):
    ...
    pondlib.errors.ConfigError: DRAM image (offset 0x38): total image size: got 100 bytes, expected 400 ...
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pondlib.errors import ConfigError

__all__ = [
    "MAGIC",
    "VERSION",
    "ALIGN",
    "HEADER_SIZE",
    "OP_FC",
    "ImageWorker",
    "ImageLayer",
    "ParsedImage",
    "build_image",
    "parse_image",
    "read_layer_block",
    "reseal",
    "image_crc",
    "time_area_size",
    "layer_weights",
    "layer_bias",
    "write_times",
    "read_times",
]

MAGIC = b"S2DNNIMG"
VERSION = 1
ALIGN = 16
OP_FC = 1  # fully connected layer on the MLA (int8 x int8 -> accumulator, shift, optional ReLU)
FLAG_RELU = 1
OVERFLOW_CODES = ("error", "wrap")

_HEADER = struct.Struct("<8sHHIIIIIIIIIIIIiBBHI8x")
HEADER_SIZE = _HEADER.size  # 80
_CRC_OFFSET = 68
_LAYER = struct.Struct("<IHBBIIIIIIIIiiiHHqqII")  # 80 B
_WORKER = struct.Struct("<HHIII")  # 16 B
_TIME_HEAD = struct.Struct("<QQQII")  # 32 B
_TIME_LAYER = struct.Struct("<QQIIII")  # 32 B
_U32 = 2**32 - 1
_I32 = (-(2**31), 2**31 - 1)
_I64 = (-(2**63), 2**63 - 1)
_WHERE = "DRAM image"

# header field -> byte offset, for error messages
_H_OFF = {
    "magic": 0,
    "version": 8,
    "header size": 10,
    "layer count": 12,
    "input size": 16,
    "output size": 20,
    "first layer block": 24,
    "time area": 28,
    "metadata": 32,
    "metadata length": 36,
    "data memory": 40,
    "activation buffers": 44,
    "input buffer": 48,
    "output buffer": 52,
    "total image size": 56,
    "input_frac": 60,
    "acc_bits": 64,
    "overflow": 65,
    "reserved": 66,
    "crc32": 68,
}
_L_OFF = {
    "next": 0,
    "op": 4,
    "flags": 6,
    "shift": 7,
    "K": 8,
    "N": 12,
    "workers": 16,
    "index": 20,
    "weights": 24,
    "bias": 28,
    "input": 32,
    "output": 36,
    "name length": 52,
    "reserved": 54,
    "block size": 72,
}


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _err(field: str, offset: int, value: Any, limit: Any, fix: str) -> ConfigError:
    return ConfigError(field, value=value, limit=limit, where=f"{_WHERE} (offset 0x{offset:x})", fix=fix)


def time_area_size(n_layers: int) -> int:
    """Bytes of the time-measurement area for ``n_layers`` layers: ``32 + 32 L``."""
    return _TIME_HEAD.size + _TIME_LAYER.size * n_layers


@dataclass(frozen=True)
class ImageWorker:
    """One worker entry: the PE, its output columns ``start .. stop - 1``, the address of its weight tile."""

    pe: int
    start: int
    stop: int
    weights_addr: int


@dataclass(frozen=True)
class ImageLayer:
    """One decoded layer block at byte ``offset`` (addresses are byte offsets into the image)."""

    offset: int
    next: int
    index: int
    name: str
    op: int
    relu: bool
    shift: int
    k: int
    n: int
    in_frac: int
    w_frac: int
    out_frac: int
    acc_bound: int
    acc_worst: int
    weights_addr: int
    bias_addr: int
    input_addr: int
    output_addr: int
    workers: tuple[ImageWorker, ...]


@dataclass(frozen=True)
class ParsedImage:
    """The checked content of an image: global fields, the layer blocks in chain order, the metadata."""

    input_frac: int
    acc_bits: int
    overflow: str
    input_size: int
    output_size: int
    first_layer: int
    time_addr: int
    data_addr: int
    act_addr: int
    input_addr: int
    output_addr: int
    total_size: int
    layers: tuple[ImageLayer, ...]
    limits_name: str
    report: dict[str, Any]


def image_crc(data: bytes | bytearray) -> int:
    """CRC-32 of an image: bytes ``0 .. activation buffers`` with the CRC field and the time area as zeros.

    Raises:
        ConfigError: fewer bytes than the header or region pointers beyond the data.
    """
    buf = bytearray(data[: _header_act(data)])
    time_addr = struct.unpack_from("<I", buf, 28)[0]
    n_layers = struct.unpack_from("<I", buf, 12)[0]
    t_end = time_addr + time_area_size(n_layers)
    if not HEADER_SIZE <= time_addr <= t_end <= len(buf):
        raise _err("time area", 28, time_addr, f"{HEADER_SIZE}..{len(buf)} with its {t_end - time_addr} B", "rebuild")
    buf[_CRC_OFFSET : _CRC_OFFSET + 4] = b"\0\0\0\0"
    buf[time_addr:t_end] = bytes(t_end - time_addr)
    return zlib.crc32(bytes(buf))


def _header_act(data: bytes | bytearray) -> int:
    if len(data) < HEADER_SIZE:
        raise _err("header", 0, f"{len(data)} bytes", f">= {HEADER_SIZE} bytes", "pass the whole image")
    act = struct.unpack_from("<I", data, 44)[0]
    if not HEADER_SIZE <= act <= len(data):
        raise _err("activation buffers", 44, act, f"{HEADER_SIZE}..{len(data)}", "rebuild the image")
    return act


def reseal(data: bytes | bytearray) -> bytes:
    """The image with its CRC recomputed (after editing a field by hand, e.g. in a test).

    Raises:
        ConfigError: fewer bytes than the header or region pointers beyond the data.
    """
    buf = bytearray(_as_bytes(data, "reseal"))
    struct.pack_into("<I", buf, _CRC_OFFSET, image_crc(buf))
    return bytes(buf)


def _as_bytes(data: Any, where: str) -> bytes:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ConfigError(
            "data",
            value=f"a {type(data).__name__}",
            limit="bytes, bytearray or memoryview",
            where=where,
            fix="pass the bytes of DNNConfig.to_dram_image()",
        )
    return bytes(data)


def _encode_check(what: str, value: int, lo: int, hi: int, where: str) -> int:
    if not lo <= value <= hi:
        raise ConfigError(what, value=value, limit=f"{lo}..{hi}", where=where, fix="the image field cannot hold it")
    return value


@dataclass(frozen=True)
class _Layout:
    """Where each part of an image goes (byte offsets, module docstring): the UTF-8 layer ``names``, the
    layer ``blocks``, the metadata, the data memory, per layer its weight tiles and bias, the input buffer
    (the first activation buffer), per layer its output buffer, and the ``total`` size."""

    names: tuple[bytes, ...]
    blocks: tuple[int, ...]
    meta: int
    data: int
    weights: tuple[tuple[int, ...], ...]
    biases: tuple[int, ...]
    inputs: int
    outputs: tuple[int, ...]
    total: int


def _block_size(layer: Any, name: bytes) -> int:
    """Bytes of a layer block: the fixed part, one entry per worker, the name, padded to 16."""
    return _align(_LAYER.size + _WORKER.size * len(layer.tiles) + len(name))


def _layout(layers: Sequence[Any], meta_len: int, where: str) -> _Layout:
    """Lay out the regions in order, each on a 16-byte boundary.

    Raises:
        ConfigError: a name over 65535 UTF-8 bytes, a worker count the block cannot hold, or an image
            beyond 4 GiB.
    """
    pos = HEADER_SIZE + time_area_size(len(layers))
    names, blocks = [], []
    for layer in layers:
        name = layer.name.encode("utf-8")
        _encode_check(f"{layer.name}: name length (UTF-8 bytes)", len(name), 0, 2**16 - 1, where)
        _encode_check(f"{layer.name}: workers", len(layer.tiles), 1, 2**16 - 2, where)
        names.append(name)
        blocks.append(pos)
        pos += _block_size(layer, name)
    meta_addr = pos
    data_addr = pos = _align(meta_addr + meta_len)
    w_addrs, b_addrs = [], []
    for layer in layers:
        k = layer.weights.shape[0]
        tiles = []
        for a, b in layer.tiles:
            tiles.append(pos)
            pos = _align(pos + k * (b - a))
        w_addrs.append(tuple(tiles))
        b_addrs.append(pos)
        pos = _align(pos + 4 * layer.weights.shape[1])
    input_addr = pos
    pos = _align(pos + layers[0].weights.shape[0])
    out_addrs = []
    for layer in layers:
        out_addrs.append(pos)
        pos = _align(pos + layer.weights.shape[1])
    total = _encode_check("image size (bytes)", pos, 0, _U32, where)
    return _Layout(
        tuple(names),
        tuple(blocks),
        meta_addr,
        data_addr,
        tuple(w_addrs),
        tuple(b_addrs),
        input_addr,
        tuple(out_addrs),
        total,
    )


def _pack_header(
    buf: bytearray,
    layers: Sequence[Any],
    at: _Layout,
    meta_len: int,
    input_frac: int,
    acc_bits: int,
    overflow: str,
    where: str,
) -> None:
    """Write the global configuration (CRC 0: sealed last).

    Raises:
        ConfigError: ``input_frac`` beyond int32.
    """
    ovf = OVERFLOW_CODES.index(overflow)
    _HEADER.pack_into(
        buf,
        0,
        MAGIC,
        VERSION,
        HEADER_SIZE,
        len(layers),
        layers[0].weights.shape[0],
        layers[-1].weights.shape[1],
        HEADER_SIZE + time_area_size(len(layers)),  # the first layer block follows the time area
        HEADER_SIZE,
        at.meta,
        meta_len,
        at.data,
        at.inputs,
        at.inputs,
        at.outputs[-1],
        at.total,
        _encode_check("input_frac", int(input_frac), *_I32, where),
        int(acc_bits),
        ovf,
        0,
        0,
    )


def _pack_layer(buf: bytearray, i: int, layer: Any, at: _Layout, where: str) -> None:
    """Write layer ``i``: its block (linked to the next), its worker entries and name, its weight tiles
    (int8, ``K x c_j`` row-major) and its biases (int32).

    Raises:
        ConfigError: a fraction beyond int32 or a bound beyond int64.
    """
    k, n = (int(s) for s in layer.weights.shape)
    fr = [_encode_check(f"{layer.name}.{f}", int(getattr(layer, f)), *_I32, where) for f in _FRACS]
    bounds = [_encode_check(f"{layer.name}.{f}", int(getattr(layer, f)), *_I64, where) for f in _BOUNDS]
    name = at.names[i]
    _LAYER.pack_into(
        buf,
        at.blocks[i],
        at.blocks[i + 1] if i + 1 < len(at.blocks) else 0,
        OP_FC,
        FLAG_RELU if layer.relu else 0,
        int(layer.shift),
        k,
        n,
        len(layer.tiles),
        i,
        at.weights[i][0],
        at.biases[i],
        at.outputs[i - 1] if i else at.inputs,
        at.outputs[i],
        *fr,
        len(name),
        0,
        *bounds,
        _block_size(layer, name),
        0,
    )
    off = at.blocks[i] + _LAYER.size
    w = np.asarray(layer.weights)
    for j, (a, b) in enumerate(layer.tiles):
        _WORKER.pack_into(buf, off, j + 1, 0, int(a), int(b), at.weights[i][j])
        off += _WORKER.size
        tile = w[:, a:b].astype("<i1").tobytes()
        buf[at.weights[i][j] : at.weights[i][j] + len(tile)] = tile
    buf[off : off + len(name)] = name
    bias = np.asarray(layer.bias).astype("<i4").tobytes()
    buf[at.biases[i] : at.biases[i] + len(bias)] = bias


def build_image(
    layers: Sequence[Any],
    *,
    input_frac: int,
    acc_bits: int,
    overflow: str,
    limits_name: str,
    report: dict[str, Any],
) -> bytes:
    """Lay out the image (module docstring) of checked layers.

    Args:
        layers: objects with the fields of ``DNNLayerConfig`` (``name``, int ``weights`` (K, N) in int8
            range, int ``bias`` (N,) in int32 range, ``shift`` 0..62, ``relu``, ``tiles`` covering the
            columns in order, ``in_frac``, ``w_frac``, ``out_frac``, ``acc_bound``, ``acc_worst``), chained.
        input_frac, acc_bits, overflow, limits_name, report: the global fields.

    Raises:
        ConfigError: a value the image cannot hold (named): a fraction beyond int32, a bound beyond
            int64, an image beyond 4 GiB, a name over 65535 UTF-8 bytes, a report JSON cannot carry.
    """
    where = "DNNConfig.to_dram_image"
    meta = _encode_meta(limits_name, report, where)
    at = _layout(layers, len(meta), where)
    buf = bytearray(at.total)
    _pack_header(buf, layers, at, len(meta), input_frac, acc_bits, overflow, where)
    for i, layer in enumerate(layers):
        _pack_layer(buf, i, layer, at, where)
    buf[at.meta : at.meta + len(meta)] = meta
    struct.pack_into("<I", buf, _CRC_OFFSET, image_crc(buf))
    return bytes(buf)


_FRACS = ("in_frac", "w_frac", "out_frac")
_BOUNDS = ("acc_bound", "acc_worst")


def _encode_meta(limits_name: str, report: dict[str, Any], where: str) -> bytes:
    meta = {"limits_name": limits_name, "report": report}
    try:
        text = json.dumps(meta, allow_nan=False, ensure_ascii=False)
        same = json.loads(text) == meta
    except (TypeError, ValueError, RecursionError):
        same = False
    if not same:
        raise ConfigError(
            "report",
            value=repr(report)[:200],
            limit="a dict JSON carries unchanged (str keys, lists, str, int, finite float, bool, None)",
            where=where,
            fix="convert tuples to lists, numpy arrays to lists, keys to str, drop NaN",
        )
    return text.encode("utf-8")


def _global_fields(data: bytes) -> tuple:
    """The 20 fields of the global configuration (``_HEADER``), checked: magic, version, sizes, reserved
    bytes, the regions in order and aligned, the CRC, ``acc_bits`` and the overflow code.

    Raises:
        ConfigError: the first field that is wrong, with its offset.
    """
    if len(data) < HEADER_SIZE:
        raise _err("global configuration", 0, f"{len(data)} bytes", f">= {HEADER_SIZE} bytes", "pass the whole image")
    h = _HEADER.unpack_from(data, 0)
    (magic, version, hsize, n_layers, k_in, n_out, first, time_addr, meta_addr, meta_len) = h[:10]
    (data_addr, act_addr, input_addr, output_addr, total, input_frac, acc_bits, ovf, res, crc) = h[10:]
    if magic != MAGIC:
        raise _err("magic", 0, magic, MAGIC, "this is not a SpiNNaker2 DNN image (or it is corrupted)")
    if version != VERSION:
        raise _err("version", 8, version, VERSION, "rebuild the image with this pondlib version")
    if hsize != HEADER_SIZE:
        raise _err("header size", 10, hsize, HEADER_SIZE, "rebuild the image")
    if total != len(data):
        raise _err(
            "total image size",
            56,
            f"{len(data)} bytes",
            f"{total} (the size the header records)",
            "pass the whole image",
        )
    if res != 0 or any(data[72:80]):
        raise _err("reserved", 66, data[66:68] + data[72:80], "zero bytes", "rebuild the image")
    if n_layers < 1:
        raise _err("layer count", 12, n_layers, ">= 1", "rebuild the image")
    t_end = time_addr + time_area_size(n_layers)
    _region("activation buffers", 44, act_addr, 0, HEADER_SIZE, total)
    _region("time area", _H_OFF["time area"], time_addr, t_end - time_addr, HEADER_SIZE, act_addr)
    _region("data memory", 40, data_addr, 0, t_end, act_addr)
    _region("metadata", 32, meta_addr, meta_len, t_end, data_addr)
    got = image_crc(data)
    if got != crc:
        raise _err("crc32", _CRC_OFFSET, f"0x{crc:08x} stored", f"0x{got:08x} (computed)", "the image is corrupted")
    if not 8 <= acc_bits <= 62:
        raise _err("acc_bits", 64, acc_bits, "8..62", "rebuild the image")
    if ovf >= len(OVERFLOW_CODES):
        raise _err("overflow", 65, ovf, "0 (error) or 1 (wrap)", "rebuild the image")
    return h


def _layer_chain(
    data: bytes, first: int, n_layers: int, input_addr: int, k_in: int, regions: tuple[int, int, int, int, int]
) -> list[ImageLayer]:
    """Follow the layer blocks from ``first``: each visited once, indexed in order, reading the previous
    layer's output buffer (the input buffer for the first) and size; exactly ``n_layers`` of them.

    Raises:
        ConfigError: a cycle, too many or too few blocks, or a block out of place (field and offset).
    """
    t_end, meta_addr = regions[0], regions[1]
    layers: list[ImageLayer] = []
    seen: set[int] = set()
    off = first
    field, field_off = "first layer block", _H_OFF["first layer block"]
    prev_out, prev_n = input_addr, k_in
    while off:
        if off in seen:
            raise _err(field, field_off, off, "a block not visited yet", "the layer list has a cycle; rebuild")
        if len(layers) == n_layers:
            raise _err(field, field_off, off, f"0 after {n_layers} layers (layer count)", "rebuild the image")
        seen.add(off)
        _region(field, field_off, off, _LAYER.size, t_end, meta_addr)
        blk = read_layer_block(data, off, regions=regions)
        if blk.index != len(layers):
            raise _err("layer index", off + _L_OFF["index"], blk.index, len(layers), "rebuild the image")
        if blk.input_addr != prev_out:
            raise _err(
                f"{blk.name}: input buffer",
                off + _L_OFF["input"],
                blk.input_addr,
                f"{prev_out} (the previous layer's output buffer)",
                "rebuild the image",
            )
        if blk.k != prev_n:
            raise _err(f"{blk.name}: K", off + _L_OFF["K"], blk.k, f"{prev_n} (the previous size)", "rebuild")
        layers.append(blk)
        prev_out, prev_n = blk.output_addr, blk.n
        field, field_off = f"{blk.name}: next", off
        off = blk.next
    if len(layers) != n_layers:
        raise _err("layer count", 12, n_layers, f"{len(layers)} (blocks in the chain)", "rebuild the image")
    return layers


def parse_image(data: Any) -> ParsedImage:
    """Check an image and decode it: header, CRC, regions, then the layer chain from ``first_layer``.

    Raises:
        ConfigError: wrong type, truncated or extended data, wrong magic or version, a CRC mismatch, a
            pointer outside its region or unaligned, a cycle or wrong length of the chain, a field out of
            range; the message names the field and its byte offset.
    """
    data = _as_bytes(data, "DNNConfig.from_dram_image")
    h = _global_fields(data)
    (_, _, _, n_layers, k_in, n_out, first, time_addr, meta_addr, meta_len) = h[:10]
    (data_addr, act_addr, input_addr, output_addr, total, input_frac, acc_bits, ovf, _, _) = h[10:]
    t_end = time_addr + time_area_size(n_layers)
    limits_name, report = _decode_meta(data[meta_addr : meta_addr + meta_len], meta_addr)
    layers = _layer_chain(data, first, n_layers, input_addr, k_in, (t_end, meta_addr, data_addr, act_addr, total))
    last = layers[-1]
    if n_out != last.n:
        raise _err("output size", 20, n_out, last.n, "rebuild the image")
    if output_addr != last.output_addr:
        raise _err(
            "output buffer", 52, output_addr, f"{last.output_addr} (the last layer's output)", "rebuild the image"
        )
    _region("input buffer", 48, input_addr, k_in, act_addr, total)
    return ParsedImage(
        int(input_frac),
        int(acc_bits),
        OVERFLOW_CODES[ovf],
        k_in,
        n_out,
        first,
        time_addr,
        data_addr,
        act_addr,
        input_addr,
        output_addr,
        total,
        tuple(layers),
        limits_name,
        report,
    )


def _region(field: str, offset: int, addr: int, size: int, lo: int, hi: int) -> None:
    """``addr .. addr + size`` inside ``lo .. hi`` and ``addr`` on a 16-byte boundary."""
    if addr % ALIGN or not lo <= addr <= addr + size <= hi:
        raise _err(field, offset, addr, f"a multiple of {ALIGN} in {lo}..{hi - size}", "the pointer is out of range")


def _decode_meta(raw: bytes, offset: int) -> tuple[str, dict[str, Any]]:
    try:
        meta = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _err("metadata", offset, f"unreadable JSON ({type(exc).__name__})", "UTF-8 JSON", "rebuild") from None
    if (
        not isinstance(meta, dict)
        or set(meta) != {"limits_name", "report"}
        or not isinstance(meta["limits_name"], str)
        or not isinstance(meta["report"], dict)
    ):
        raise _err("metadata", offset, repr(meta)[:100], '{"limits_name": str, "report": {...}}', "rebuild")
    return meta["limits_name"], meta["report"]


def read_layer_block(data: bytes, offset: int, *, regions: tuple[int, int, int, int, int] | None = None) -> ImageLayer:
    """Decode and check the layer block at ``offset`` as the scheduler PE reads it.

    ``regions``: ``(layers start, metadata, data memory, activations, total)`` byte offsets (default: from
    the header). Weights and biases must lie in data memory, buffers among the activations.

    Raises:
        ConfigError: a field out of range or a pointer outside its region (named, with its offset).
    """
    if regions is None:
        h = _HEADER.unpack_from(data, 0)
        regions = (h[7] + time_area_size(h[3]), h[8], h[10], h[11], h[14])
    lay_lo, meta_addr, data_addr, act_addr, total = regions
    _region("layer block", offset, offset, _LAYER.size, lay_lo, meta_addr)
    f = _LAYER.unpack_from(data, offset)
    nxt, op, flags, shift, k, n, n_w, index, w_addr, b_addr, in_addr, out_addr = f[:12]
    in_frac, w_frac, out_frac, name_len, res, acc_bound, acc_worst, size, res2 = f[12:]

    def at(key: str) -> int:
        return offset + _L_OFF[key]

    if op != OP_FC:
        raise _err("op", at("op"), op, f"{OP_FC} (fully connected)", "only MLA fully connected layers exist")
    if flags & ~FLAG_RELU:
        raise _err("flags", at("flags"), flags, "bit 0 (fused ReLU) only", "rebuild the image")
    if shift > 62:
        raise _err("shift", at("shift"), shift, "0..62", "rebuild the image")
    if res or res2:
        raise _err("reserved", at("reserved"), (res, res2), (0, 0), "rebuild the image")
    for key, v in (("K", k), ("N", n), ("workers", n_w)):
        if v < 1:
            raise _err(key, at(key), v, ">= 1", "rebuild the image")
    want = _align(_LAYER.size + _WORKER.size * n_w + name_len)
    if size != want:
        raise _err("block size", at("block size"), size, f"{want} (80 + 16 workers + name, padded)", "rebuild")
    _region("layer block", at("block size"), offset, size, lay_lo, meta_addr)
    name_off = offset + _LAYER.size + _WORKER.size * n_w
    try:
        name = data[name_off : name_off + name_len].decode("utf-8")
    except UnicodeDecodeError:
        raise _err("name", name_off, data[name_off : name_off + name_len], "UTF-8", "rebuild the image") from None
    _region(f"{name}: bias", at("bias"), b_addr, 4 * n, data_addr, act_addr)
    _region(f"{name}: input buffer", at("input"), in_addr, k, act_addr, total)
    _region(f"{name}: output buffer", at("output"), out_addr, n, act_addr, total)
    workers = []
    col = 0
    for j in range(n_w):
        w_off = offset + _LAYER.size + _WORKER.size * j
        pe, wres, a, b, t_addr = _WORKER.unpack_from(data, w_off)
        if pe != j + 1 or wres:
            raise _err(f"{name}: worker {j} PE", w_off, pe, f"{j + 1} (PE 0 is the scheduler)", "rebuild the image")
        if a != col or not a < b <= n:
            raise _err(f"{name}: worker {j} columns", w_off + 4, (a, b), f"({col}, {col + 1}..{n})", "rebuild")
        _region(f"{name}: worker {j} weights", w_off + 12, t_addr, k * (b - a), data_addr, act_addr)
        if j == 0 and t_addr != w_addr:
            raise _err(f"{name}: weights", at("weights"), w_addr, f"{t_addr} (worker 0's tile)", "rebuild")
        workers.append(ImageWorker(pe, a, b, t_addr))
        col = b
    if col != n:
        raise _err(f"{name}: worker columns", offset + _LAYER.size, col, f"{n} (all columns)", "rebuild the image")
    return ImageLayer(
        offset,
        nxt,
        index,
        name,
        op,
        bool(flags & FLAG_RELU),
        shift,
        k,
        n,
        in_frac,
        w_frac,
        out_frac,
        acc_bound,
        acc_worst,
        w_addr,
        b_addr,
        in_addr,
        out_addr,
        tuple(workers),
    )


def layer_weights(data: bytes, layer: ImageLayer) -> np.ndarray:
    """The (K, N) int64 weights of a checked layer, joined from its workers' tiles in data memory."""
    tiles = [
        np.frombuffer(data, "<i1", layer.k * (w.stop - w.start), w.weights_addr).reshape(layer.k, w.stop - w.start)
        for w in layer.workers
    ]
    return np.concatenate(tiles, axis=1).astype(np.int64)


def layer_bias(data: bytes, layer: ImageLayer) -> np.ndarray:
    """The (N,) int64 biases of a checked layer (int32 in data memory)."""
    return np.frombuffer(data, "<i4", layer.n, layer.bias_addr).astype(np.int64)


def write_times(dram: bytearray, report: Any, clock_hz: float, inferences: int) -> None:
    """Fill the time area of ``dram`` in place from a timing report (``layers`` with ``overhead_s``,
    ``fetch_s``, ``mla_s``, ``other_s``; ``setup_s``, ``cleanup_s``): seconds times ``clock_hz``, each part
    rounded to whole cycles; ``inferences`` is added to the count (saturating at 2^32 - 1)."""
    h = _HEADER.unpack_from(dram, 0)
    time_addr = h[7]

    def cyc(t: float) -> int:
        return min(int(round(t * clock_hz)), _U32)

    setup, cleanup = cyc(report.setup_s), cyc(report.cleanup_s)
    t = setup
    for i, lt in enumerate(report.layers):
        parts = [cyc(lt.overhead_s), cyc(lt.fetch_s), cyc(lt.mla_s), cyc(lt.other_s)]
        _TIME_LAYER.pack_into(dram, time_addr + _TIME_HEAD.size + _TIME_LAYER.size * i, t, t + sum(parts), *parts)
        t += sum(parts)
    done = _TIME_HEAD.unpack_from(dram, time_addr)[3]
    khz = min(int(round(clock_hz / 1000)), _U32)
    _TIME_HEAD.pack_into(dram, time_addr, t + cleanup, setup, cleanup, min(done + inferences, _U32), khz)


def read_times(data: Any) -> dict[str, Any]:
    """The time-measurement area of a checked image as plain numbers (cycles; module docstring).

    Raises:
        ConfigError: data that is not a valid image.

    Example:
        >>> from types import SimpleNamespace as L
        >>> fc = L(name="fc1", weights=np.ones((2, 2), int), bias=np.zeros(2, int), shift=0, relu=False,
        ...        tiles=((0, 2),), in_frac=0, w_frac=0, out_frac=0, acc_bound=4, acc_worst=512)
        >>> t = read_times(build_image([fc], input_frac=0, acc_bits=24, overflow="error", limits_name="", report={}))
        >>> t["total"], t["inferences"], t["layers"]     # a fresh image: zeros until the device runs it
        (0, 0, [{'name': 'fc1', 'start': 0, 'end': 0, 'sched': 0, 'fetch': 0, 'mla': 0, 'other': 0}])
    """
    img = parse_image(data)
    raw = bytes(data)
    total, setup, cleanup, runs, khz = _TIME_HEAD.unpack_from(raw, img.time_addr)
    layers = []
    for i, blk in enumerate(img.layers):
        vals = _TIME_LAYER.unpack_from(raw, img.time_addr + _TIME_HEAD.size + _TIME_LAYER.size * i)
        layers.append({"name": blk.name, **dict(zip(("start", "end", "sched", "fetch", "mla", "other"), vals))})
    return {"total": total, "setup": setup, "cleanup": cleanup, "inferences": runs, "clock_khz": khz, "layers": layers}
