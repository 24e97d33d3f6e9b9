"""The Xylo board's memory layout as data: bit fields, word layout, memory regions and bit packing.

This module owns *where* every register and parameter sits on a Xylo development kit: the fields of
each 32-bit word (:class:`BitField`, :data:`WORD_LAYOUT`), the memories and their byte addresses for a
variant (:class:`MemoryRegion`, :func:`memory_map`), the tables that document them
(:func:`format_memory_map`, :func:`format_word_layout`), the constants of the image (magic, variant
codes, region alignment, register words, the core clock behind the step timer) and the vectorised bit
packing used by the codec (``_put``, ``_get``, ``_pack_bytes``, ``_unpack_bytes``).

The tables themselves, and what each memory holds, are documented (and doctested) in
:mod:`pondlib.devices.xylo.hdk`. Encoding a configuration into this layout is
:mod:`pondlib.devices.xylo.codec`'s job.

Example:
    >>> [(f.name, f.msb, f.range) for f in memory_map("audio2")[0].fields][:2]
    [('variant', 7, (0, 255)), ('magic', 31, (0, 16777215))]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pondlib.devices.xylo.limits import XyloLimits, get_limits
from pondlib.errors import ConfigError

__all__ = [
    "BitField",
    "MemoryRegion",
    "memory_map",
    "format_memory_map",
    "format_word_layout",
    "WORD_LAYOUT",
    "VARIANT_CODES",
    "CORE_CLOCK_HZ",
]

#: Core clock of the board model (Hz); the step timer counts ``round(dt * CORE_CLOCK_HZ)`` cycles.
CORE_CLOCK_HZ = 50_000_000
#: ``REG`` word 0 bits [31:8] of a configured image ("XYL").
_MAGIC = 0x58594C
#: Variant codes in ``REG`` word 0 bits [7:0] (0 means "no configuration").
VARIANT_CODES: dict[str, int] = {"Xylo Audio 2": 1, "Xylo Audio 3": 2, "Xylo IMU": 3}
_REGION_ALIGN = 0x1000  # bytes: every memory starts on a 4 KiB boundary
_REG_WORDS = 8


# ------------------------------------------------------------------------------------------------
# Memory layout as data
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BitField:
    """One field of a 32-bit word: bits ``[lsb + width - 1 : lsb]``.

    ``word`` is the word offset for register memories (``REG``), ``None`` for a field present in
    every word of the memory. ``signed`` fields are two's complement.
    """

    memory: str
    name: str
    lsb: int
    width: int
    signed: bool = False
    word: int | None = None
    meaning: str = ""

    @property
    def msb(self) -> int:
        """Most significant bit of the field."""
        return self.lsb + self.width - 1

    @property
    def range(self) -> tuple[int, int]:
        """Inclusive range of values the field holds."""
        if self.signed:
            return -(1 << (self.width - 1)), (1 << (self.width - 1)) - 1
        return 0, (1 << self.width) - 1


def _lanes(memory: str) -> tuple[BitField, ...]:
    return tuple(BitField(memory, f"lane{n}", 8 * n, 8, True, None, f"weight of byte 4*word + {n}") for n in range(4))


#: Every field of every memory, in the order of the word-layout table.
WORD_LAYOUT: tuple[BitField, ...] = (
    BitField("REG", "variant", 0, 8, False, 0, "1 Xylo Audio 2, 2 Xylo Audio 3, 3 Xylo IMU"),
    BitField("REG", "magic", 8, 24, False, 0, "0x58594C ('XYL'): a configured image"),
    BitField("REG", "n_input", 0, 5, False, 1, "input channels used (N_in)"),
    BitField("REG", "n_output", 5, 6, False, 1, "output neurons used (N_out)"),
    BitField("REG", "n_hidden", 11, 11, False, 1, "hidden neurons used (N_hid)"),
    BitField("REG", "syn2_enable", 0, 1, False, 2, "1: two synapses per hidden neuron (k = 2)"),
    BitField("REG", "bias_enable", 1, 1, False, 2, "1: biases are added"),
    BitField("REG", "weight_shift_in", 0, 4, False, 3, "left shift of input weights"),
    BitField("REG", "weight_shift_rec", 4, 4, False, 3, "left shift of recurrent weights"),
    BitField("REG", "weight_shift_out", 8, 4, False, 3, "left shift of output weights"),
    BitField("REG", "dt_div", 0, 32, False, 4, "step timer: round(dt * 50 MHz) clock cycles per step"),
    BitField("REG", "dt_lo", 0, 32, False, 5, "dt (s) as IEEE-754 float64, low word (lossless)"),
    BitField("REG", "dt_hi", 0, 32, False, 6, "dt (s) as IEEE-754 float64, high word"),
    *_lanes("IWT"),
    BitField("RWT", "weight", 0, 8, True, None, "recurrent weight (pre j, post target, synapse syn)"),
    BitField("RWT", "target", 8, 10, False, None, "post-synaptic hidden neuron id"),
    BitField("RWT", "syn", 18, 1, False, None, "post-synaptic synapse (0 or 1)"),
    BitField("RWT", "valid", 19, 1, False, None, "1: entry used (entries packed from e = 0)"),
    *_lanes("OWT"),
    BitField("NPAR", "threshold", 0, 16, True, None, "hidden threshold"),
    BitField("NPAR", "bias", 16, 16, True, None, "hidden bias"),
    BitField("NCFG", "dash_mem", 0, 4, False, None, "membrane decay shift"),
    BitField("NCFG", "dash_syn", 4, 4, False, None, "synapse 0 decay shift"),
    BitField("NCFG", "dash_syn_2", 8, 4, False, None, "synapse 1 decay shift (kept when k = 1)"),
    BitField("NCFG", "alias_target", 12, 10, False, None, "alias target hidden id"),
    BitField("NCFG", "alias_valid", 22, 1, False, None, "1: the neuron has an alias"),
    BitField("OPAR", "threshold_out", 0, 16, True, None, "output threshold"),
    BitField("OPAR", "bias_out", 16, 16, True, None, "output bias"),
    BitField("OCFG", "dash_mem_out", 0, 4, False, None, "output membrane decay shift"),
    BitField("OCFG", "dash_syn_out", 4, 4, False, None, "output synaptic decay shift"),
)
_F = {(f.memory, f.name): f for f in WORD_LAYOUT}


@dataclass(frozen=True)
class MemoryRegion:
    """One memory of the board: ``words`` 32-bit words from byte address ``base``."""

    name: str
    base: int  # byte address of word 0
    words: int  # number of 32-bit words
    content: str

    @property
    def end(self) -> int:
        """Byte address one past the last word."""
        return self.base + 4 * self.words

    @property
    def fields(self) -> tuple[BitField, ...]:
        """The bit fields of this memory's words."""
        return tuple(f for f in WORD_LAYOUT if f.memory == self.name)


def memory_map(limits: XyloLimits | str | None = None) -> tuple[MemoryRegion, ...]:
    """The memories of a board of variant ``limits`` (default Xylo Audio 2), in address order.

    Example:
        >>> [(r.name, r.words) for r in memory_map("imu")][:3]
        [('REG', 8), ('IWT', 1984), ('RWT', 31744)]
    """
    lim = get_limits(limits)
    c, n, o, k, f = lim.n_input, lim.n_hidden, lim.n_output, lim.n_synapses, lim.max_fanout_rec
    sizes = (
        ("REG", _REG_WORDS, "global registers (sizes, control, shifts, dt)"),
        ("IWT", -(-c * n * k // 4), "input weights, int8 byte b = (c*N + i)*K + q"),
        ("RWT", n * f, "recurrent fan-out lists, word j*F + e"),
        ("OWT", -(-n * o // 4), "output weights, int8 byte b = j*O + o"),
        ("NPAR", n, "hidden neuron i: threshold, bias"),
        ("NCFG", n, "hidden neuron i: decay shifts, alias"),
        ("OPAR", o, "output neuron o: threshold, bias"),
        ("OCFG", o, "output neuron o: decay shifts"),
    )
    regions, base = [], 0
    for name, words, content in sizes:
        regions.append(MemoryRegion(name, base, words, content))
        base = -(-(base + 4 * words) // _REGION_ALIGN) * _REGION_ALIGN
    return tuple(regions)


def _rst(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) for i in range(len(header))]
    rule = "  ".join("=" * w for w in widths)

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    return "\n".join([rule, line(header), rule, *(line(r) for r in rows), rule])


def format_memory_map(limits: XyloLimits | str | None = None) -> str:
    """The address map of a board of variant ``limits`` as a reStructuredText table."""
    rows = [(r.name, f"0x{r.base:08X}-0x{r.end - 1:08X}", str(r.words), r.content) for r in memory_map(limits)]
    return _rst(("name", "byte addresses", "words", "content"), rows, (False, False, True, False))


def format_word_layout() -> str:
    """The bit fields of every memory's words as a reStructuredText table."""
    rows = [
        (
            f.memory,
            "each" if f.word is None else str(f.word),
            f"[{f.msb}:{f.lsb}]",
            f.name,
            f"{'s' if f.signed else 'u'}{f.width}",
            f.meaning,
        )
        for f in WORD_LAYOUT
    ]
    return _rst(("mem", "word", "bits", "field", "fmt", "meaning"), rows, (False,) * 6)


# ------------------------------------------------------------------------------------------------
# Bit packing (vectorised; int64 intermediates, uint32 words)
# ------------------------------------------------------------------------------------------------
def _put(words: np.ndarray, f: BitField, values: Any) -> None:
    """OR ``values`` into field ``f`` of ``words`` (int64 array, in place).

    Values were validated against the chip limits before; a value that does not fit the field is an
    internal error of the layout (a variant whose limits outgrow a field), reported, never wrapped.
    """
    v = np.asarray(values, dtype=np.int64)
    lo, hi = f.range
    if v.size and (v.min() < lo or v.max() > hi):
        bad = int(v.max()) if v.max() > hi else int(v.min())
        raise ConfigError(
            f"{f.memory}.{f.name} ({f.width}-bit field)",
            value=bad,
            limit=f"{lo}..{hi}",
            where="encode_config",
            fix="the variant's limits exceed the memory layout: widen the field in WORD_LAYOUT",
        )
    words |= (v & ((1 << f.width) - 1)) << f.lsb  # & mask: two's complement of signed fields


def _get(words: np.ndarray, f: BitField) -> np.ndarray:
    """Field ``f`` of ``words`` as int64 (sign-extended when the field is signed)."""
    v = (np.asarray(words, dtype=np.int64) >> f.lsb) & ((1 << f.width) - 1)
    if f.signed:
        sign = 1 << (f.width - 1)
        v = (v ^ sign) - sign
    return v


def _pack_bytes(memory: str, values: np.ndarray, n_words: int) -> np.ndarray:
    """Signed bytes, 4 per word, byte ``b`` in lane ``b % 4`` of word ``b // 4``."""
    flat = np.zeros(4 * n_words, dtype=np.int64)
    flat[: values.size] = values.ravel()
    lanes = flat.reshape(n_words, 4)
    words = np.zeros(n_words, dtype=np.int64)
    for n in range(4):
        _put(words, _F[(memory, f"lane{n}")], lanes[:, n])
    return words


def _unpack_bytes(memory: str, words: np.ndarray, n_bytes: int) -> np.ndarray:
    lanes = np.stack([_get(words, _F[(memory, f"lane{n}")]) for n in range(4)], axis=1)
    return lanes.ravel()[:n_bytes]
