r"""Deploy to a Xylo development kit (HDK) without the vendor SDK: a numpy model of the board.

The vendor SDK that talks to a real Xylo HDK is hard to install and missing on most machines. This
module offers the same deployment interface backed by :class:`MockXyloDevice`, a numpy model of the
board: a memory image of 32-bit words, a USB-like link (latency, bandwidth, read time-outs, removal)
and the bit-exact core (:class:`~pondlib.devices.xylo.sim.XyloSim`) that runs whatever configuration
the memory image *decodes to*. Deployment code written against it is later pointed at real hardware.

* :func:`find_xylo_hdks` lists the connected boards; :func:`set_mock_boards` chooses how many mock
  boards are plugged in (0 included; default from ``$PONDLIB_XYLO_MOCK_BOARDS``, else 1 Audio 2).
* :class:`XyloBoard` ``(board, config, dt=None)`` validates a :class:`~pondlib.devices.xylo.config.XyloConfig`
  (a :class:`~pondlib.errors.ConfigError` lists *every* problem), encodes it to the memory image
  (:func:`encode_config`), writes it, reads it back and decodes it (:func:`decode_config`). The board
  builds its core from its own memory, so an encoding bug shows up as a wrong result, never hides.
  ``evolve(x, record=False) -> (output, state, record)`` behaves like ``XyloSim.evolve``.
* Link failures (a board removed, a read that times out) raise :class:`~pondlib.errors.SimulationError`
  saying what happened and how to fix it; nothing blocks: time on the link and on the board is
  *simulated* (``MockXyloDevice.clock_s``), the board runs in accelerated time.

Memory map
----------

Every memory is an array of 32-bit words; byte address = base + 4 * word. Memories are sized for the
board's variant (the largest network it accepts); a configuration uses a prefix of each, unused words
are 0. ``C``, ``N``, ``O``, ``K``, ``F`` are the variant's input channels, hidden neurons, output
neurons, synapses per hidden neuron and recurrent fan-out (:class:`~pondlib.devices.xylo.limits.XyloLimits`).
Address map of a Xylo Audio 2 board (C = 16, N = 1000, O = 8, K = 2, F = 64):

    >>> print(format_memory_map("audio2"))
    ====  =====================  =====  =============================================
    name  byte addresses         words  content
    ====  =====================  =====  =============================================
    REG   0x00000000-0x0000001F      8  global registers (sizes, control, shifts, dt)
    IWT   0x00001000-0x00008CFF   8000  input weights, int8 byte b = (c*N + i)*K + q
    RWT   0x00009000-0x000477FF  64000  recurrent fan-out lists, word j*F + e
    OWT   0x00048000-0x00049F3F   2000  output weights, int8 byte b = j*O + o
    NPAR  0x0004A000-0x0004AF9F   1000  hidden neuron i: threshold, bias
    NCFG  0x0004B000-0x0004BF9F   1000  hidden neuron i: decay shifts, alias
    OPAR  0x0004C000-0x0004C01F      8  output neuron o: threshold, bias
    OCFG  0x0004D000-0x0004D01F      8  output neuron o: decay shifts
    ====  =====================  =====  =============================================

Word layout (all variants; ``s`` signed two's complement, ``u`` unsigned; ``REG`` word offsets):

    >>> print(format_word_layout())
    ====  ====  =======  ================  ===  ====================================================
    mem   word  bits     field             fmt  meaning
    ====  ====  =======  ================  ===  ====================================================
    REG   0     [7:0]    variant           u8   1 Xylo Audio 2, 2 Xylo Audio 3, 3 Xylo IMU
    REG   0     [31:8]   magic             u24  0x58594C ('XYL'): a configured image
    REG   1     [4:0]    n_input           u5   input channels used (N_in)
    REG   1     [10:5]   n_output          u6   output neurons used (N_out)
    REG   1     [21:11]  n_hidden          u11  hidden neurons used (N_hid)
    REG   2     [0:0]    syn2_enable       u1   1: two synapses per hidden neuron (k = 2)
    REG   2     [1:1]    bias_enable       u1   1: biases are added
    REG   3     [3:0]    weight_shift_in   u4   left shift of input weights
    REG   3     [7:4]    weight_shift_rec  u4   left shift of recurrent weights
    REG   3     [11:8]   weight_shift_out  u4   left shift of output weights
    REG   4     [31:0]   dt_div            u32  step timer: round(dt * 50 MHz) clock cycles per step
    REG   5     [31:0]   dt_lo             u32  dt (s) as IEEE-754 float64, low word (lossless)
    REG   6     [31:0]   dt_hi             u32  dt (s) as IEEE-754 float64, high word
    IWT   each  [7:0]    lane0             s8   weight of byte 4*word + 0
    IWT   each  [15:8]   lane1             s8   weight of byte 4*word + 1
    IWT   each  [23:16]  lane2             s8   weight of byte 4*word + 2
    IWT   each  [31:24]  lane3             s8   weight of byte 4*word + 3
    RWT   each  [7:0]    weight            s8   recurrent weight (pre j, post target, synapse syn)
    RWT   each  [17:8]   target            u10  post-synaptic hidden neuron id
    RWT   each  [18:18]  syn               u1   post-synaptic synapse (0 or 1)
    RWT   each  [19:19]  valid             u1   1: entry used (entries packed from e = 0)
    OWT   each  [7:0]    lane0             s8   weight of byte 4*word + 0
    OWT   each  [15:8]   lane1             s8   weight of byte 4*word + 1
    OWT   each  [23:16]  lane2             s8   weight of byte 4*word + 2
    OWT   each  [31:24]  lane3             s8   weight of byte 4*word + 3
    NPAR  each  [15:0]   threshold         s16  hidden threshold
    NPAR  each  [31:16]  bias              s16  hidden bias
    NCFG  each  [3:0]    dash_mem          u4   membrane decay shift
    NCFG  each  [7:4]    dash_syn          u4   synapse 0 decay shift
    NCFG  each  [11:8]   dash_syn_2        u4   synapse 1 decay shift (kept when k = 1)
    NCFG  each  [21:12]  alias_target      u10  alias target hidden id
    NCFG  each  [22:22]  alias_valid       u1   1: the neuron has an alias
    OPAR  each  [15:0]   threshold_out     s16  output threshold
    OPAR  each  [31:16]  bias_out          s16  output bias
    OCFG  each  [3:0]    dash_mem_out      u4   output membrane decay shift
    OCFG  each  [7:4]    dash_syn_out      u4   output synaptic decay shift
    ====  ====  =======  ================  ===  ====================================================

``REG`` word 7 is reserved (0). Recurrent weights are stored as fan-out lists, as on the chip: hidden
neuron ``j`` owns words ``j*F .. j*F + F - 1``; its non-zero weights fill them in ascending
``(target, syn)`` order, then ``valid = 0``. That is why the recurrent fan-out limit exists (F = 64
entries per neuron, both synapses counted). ``dt`` is stored twice: as the step-timer divider the chip
uses, and as float64 bits so that reading the configuration back returns exactly the ``dt`` written.

Board model (assumptions, not measurements)
-------------------------------------------

The link moves 32-bit words at ``link_words_per_s`` (default 2.5e6, USB 2.0 high speed) after a
``link_latency_s`` (default 100 us) per transaction; a read waits ``response_delay_s`` for the board
to answer and times out when that exceeds ``timeout_s``. The board runs in real time, ``dt`` per step,
so a run of ``T`` steps takes ``inference_duration = T * dt`` seconds (``B * T * dt`` for a batch,
run sample after sample). Clock cycles and power per step come from the synaptic operations
(:class:`CostModel`, documented there); they are a model, not measured silicon figures.

Example:
    >>> import numpy as np
    >>> from pondlib.devices.xylo.config import XyloConfig
    >>> cfg = XyloConfig(
    ...     weights_in=np.array([[[100]]]), weights_rec=np.zeros((1, 1, 1)),
    ...     weights_out=np.array([[50]]), dash_mem=[1], dash_syn=[1], dash_syn_2=[0],
    ...     dash_mem_out=[1], dash_syn_out=[1], threshold=[60], bias=[0], threshold_out=[40],
    ...     bias_out=[0], aliases=[-1])
    >>> _ = set_mock_boards(1)
    >>> hdks = find_xylo_hdks()
    >>> len(hdks), hdks[0].limits.name
    (1, 'Xylo Audio 2')
    >>> board = XyloBoard(hdks[0], cfg)
    >>> out, state, rec = board.evolve(np.array([[1], [0], [0], [0]]), record=True)
    >>> rec["Vmem"][:, 0].tolist()          # as XyloSim (see its docstring)
    [50, 50, 38, 26]
    >>> board.config == cfg                 # read back from the board's memory
    True
    >>> board.inference_duration            # 4 steps of 1 ms, in real time on the board
    0.004
    >>> board.last_stats.synops.tolist()    # 1 input event x 1 weight; no hidden spike follows
    [1, 0, 0, 0]
    >>> _ = set_mock_boards(0); find_xylo_hdks()
    []
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from pondlib.devices.xylo.config import XyloConfig, validate_config
from pondlib.devices.xylo.limits import LIMITS, XyloLimits, get_limits
from pondlib.devices.xylo.sim import XyloSim
from pondlib.errors import DeviceError, ConfigError, SimulationError

__all__ = [
    "find_xylo_hdks",
    "set_mock_boards",
    "MockXyloDevice",
    "XyloBoard",
    "CostModel",
    "RunStats",
    "BitField",
    "MemoryRegion",
    "memory_map",
    "format_memory_map",
    "format_word_layout",
    "encode_config",
    "decode_config",
    "WORD_LAYOUT",
    "VARIANT_CODES",
    "CORE_CLOCK_HZ",
    "MOCK_BOARDS_ENV",
]

#: Core clock of the board model (Hz); the step timer counts ``round(dt * CORE_CLOCK_HZ)`` cycles.
CORE_CLOCK_HZ = 50_000_000
#: ``REG`` word 0 bits [31:8] of a configured image ("XYL").
_MAGIC = 0x58594C
#: Variant codes in ``REG`` word 0 bits [7:0] (0 means "no configuration").
VARIANT_CODES: dict[str, int] = {"Xylo Audio 2": 1, "Xylo Audio 3": 2, "Xylo IMU": 3}
#: Environment variable read by :func:`find_xylo_hdks` while :func:`set_mock_boards` was not called.
MOCK_BOARDS_ENV = "PONDLIB_XYLO_MOCK_BOARDS"
_REGION_ALIGN = 0x1000   # bytes: every memory starts on a 4 KiB boundary
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
    return tuple(BitField(memory, f"lane{n}", 8 * n, 8, True, None, f"weight of byte 4*word + {n}")
                 for n in range(4))


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
    base: int       # byte address of word 0
    words: int      # number of 32-bit words
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
    rows = [(r.name, f"0x{r.base:08X}-0x{r.end - 1:08X}", str(r.words), r.content)
            for r in memory_map(limits)]
    return _rst(("name", "byte addresses", "words", "content"), rows, (False, False, True, False))


def format_word_layout() -> str:
    """The bit fields of every memory's words as a reStructuredText table."""
    rows = [(f.memory, "each" if f.word is None else str(f.word), f"[{f.msb}:{f.lsb}]", f.name,
             f"{'s' if f.signed else 'u'}{f.width}", f.meaning) for f in WORD_LAYOUT]
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
        raise ConfigError(f"{f.memory}.{f.name} ({f.width}-bit field)", value=bad, limit=f"{lo}..{hi}",
                          where="encode_config",
                          fix="the variant's limits exceed the memory layout: widen the field in WORD_LAYOUT")
    words |= (v & ((1 << f.width) - 1)) << f.lsb   # & mask: two's complement of signed fields


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


def _limits_of(config: XyloConfig, limits: XyloLimits | str | None) -> tuple[XyloLimits, list[str]]:
    """The board variant and every reason ``config`` cannot be written to it."""
    problems: list[str] = []
    if limits is None:
        try:
            lim = get_limits(config.limits_name)
        except ConfigError:
            problems.append(f"limits_name: got {config.limits_name!r}, expected one of "
                            f"{sorted(VARIANT_CODES)}")
            lim = get_limits(None)
    else:
        lim = get_limits(limits)
    if lim.name not in VARIANT_CODES:
        problems.append(f"board variant: got {lim.name!r}, expected one of {sorted(VARIANT_CODES)} "
                        "(no memory layout for custom limits)")
    elif config.limits_name != lim.name:
        short = next((k for k, v in LIMITS.items() if v.name == lim.name), lim.name)
        problems.append(f"limits_name: got {config.limits_name!r}, expected {lim.name!r} (the board "
                        f"is a {lim.name}; build the configuration for it, e.g. "
                        f"config_from_specification(spec, limits={short!r}))")
    problems.extend(validate_config(config, lim))
    return lim, problems


def encode_config(config: XyloConfig, limits: XyloLimits | str | None = None) -> dict[str, np.ndarray]:
    """The memory image of ``config`` for a board of variant ``limits`` (default: ``config.limits_name``).

    Returns:
        ``{memory name: uint32 words}`` for every memory of :func:`memory_map` (full size; unused words 0).

    Raises:
        ConfigError: the configuration is invalid for the variant; lists every problem.

    Example:
        >>> import numpy as np
        >>> from pondlib.devices.xylo.config import XyloConfig
        >>> cfg = XyloConfig(weights_in=[[[-1, 2]]], weights_rec=np.zeros((1, 1, 2)), weights_out=[[3]],
        ...                  dash_mem=[1], dash_syn=[2], dash_syn_2=[3], dash_mem_out=[4],
        ...                  dash_syn_out=[5], threshold=[-2], bias=[0], threshold_out=[7],
        ...                  bias_out=[0], aliases=[-1], weight_shift_rec=9, dt=1e-3)
        >>> image = encode_config(cfg)
        >>> [hex(w) for w in image["REG"][:5]]
        ['0x58594c01', '0x821', '0x1', '0x90', '0xc350']
        >>> hex(image["IWT"][0]), hex(image["NPAR"][0]), hex(image["NCFG"][0])
        ('0x2ff', '0xfffe', '0x321')
        >>> decode_config(image) == cfg
        True
    """
    if not isinstance(config, XyloConfig):
        raise ConfigError("not a XyloConfig", value=type(config).__name__, where="encode_config",
                          fix="build one with config_from_specification or XyloConfig(...)")
    lim, problems = _limits_of(config, limits)
    if problems:
        raise ConfigError(problems=problems, where="encode_config")
    regions = {r.name: r for r in memory_map(lim)}
    n_in, n_hid, n_out, k = config.n_input, config.n_hidden, config.n_output, config.n_synapses
    C, N, O, K, F = lim.n_input, lim.n_hidden, lim.n_output, lim.n_synapses, lim.max_fanout_rec

    reg = np.zeros(_REG_WORDS, dtype=np.int64)

    def put_reg(name: str, value: int) -> None:
        f = _F[("REG", name)]
        row = reg[f.word: f.word + 1]
        _put(row, f, value)

    put_reg("variant", VARIANT_CODES[lim.name])
    put_reg("magic", _MAGIC)
    put_reg("n_input", n_in)
    put_reg("n_output", n_out)
    put_reg("n_hidden", n_hid)
    put_reg("syn2_enable", int(k == 2))
    put_reg("bias_enable", int(config.bias_enable))
    put_reg("weight_shift_in", config.weight_shift_in)
    put_reg("weight_shift_rec", config.weight_shift_rec)
    put_reg("weight_shift_out", config.weight_shift_out)
    put_reg("dt_div", round(config.dt * CORE_CLOCK_HZ))
    # float64 bits, little-endian word order whatever the host byte order: dt reads back exactly.
    dt_lo, dt_hi = np.array([config.dt], dtype="<f8").view("<u4").astype(np.int64)
    put_reg("dt_lo", int(dt_lo))
    put_reg("dt_hi", int(dt_hi))

    full_in = np.zeros((C, N, K), dtype=np.int64)
    full_in[:n_in, :n_hid, :k] = config.weights_in
    full_out = np.zeros((N, O), dtype=np.int64)
    full_out[:n_hid, :n_out] = config.weights_out

    # Recurrent fan-out lists: np.nonzero walks (pre, post, syn) in C order, i.e. each pre neuron's
    # entries come out in ascending (post, syn) order; the slot is the rank within its pre neuron.
    pre, post, syn = np.nonzero(config.weights_rec)
    counts = np.bincount(pre, minlength=n_hid)
    slot = np.arange(pre.size) - (np.cumsum(counts) - counts)[pre]
    entries = np.zeros(pre.size, dtype=np.int64)
    _put(entries, _F[("RWT", "weight")], config.weights_rec[pre, post, syn])
    _put(entries, _F[("RWT", "target")], post)
    _put(entries, _F[("RWT", "syn")], syn)
    _put(entries, _F[("RWT", "valid")], 1)
    rwt = np.zeros(N * F, dtype=np.int64)
    rwt[pre * F + slot] = entries

    npar = np.zeros(N, dtype=np.int64)
    _put(npar[:n_hid], _F[("NPAR", "threshold")], config.threshold)
    _put(npar[:n_hid], _F[("NPAR", "bias")], config.bias)
    ncfg = np.zeros(N, dtype=np.int64)
    has_alias = config.aliases >= 0
    for name in ("dash_mem", "dash_syn", "dash_syn_2"):
        _put(ncfg[:n_hid], _F[("NCFG", name)], getattr(config, name))
    _put(ncfg[:n_hid], _F[("NCFG", "alias_target")], np.where(has_alias, config.aliases, 0))
    _put(ncfg[:n_hid], _F[("NCFG", "alias_valid")], has_alias)
    opar = np.zeros(O, dtype=np.int64)
    _put(opar[:n_out], _F[("OPAR", "threshold_out")], config.threshold_out)
    _put(opar[:n_out], _F[("OPAR", "bias_out")], config.bias_out)
    ocfg = np.zeros(O, dtype=np.int64)
    _put(ocfg[:n_out], _F[("OCFG", "dash_mem_out")], config.dash_mem_out)
    _put(ocfg[:n_out], _F[("OCFG", "dash_syn_out")], config.dash_syn_out)

    image = {
        "REG": reg,
        "IWT": _pack_bytes("IWT", full_in, regions["IWT"].words),
        "RWT": rwt,
        "OWT": _pack_bytes("OWT", full_out, regions["OWT"].words),
        "NPAR": npar, "NCFG": ncfg, "OPAR": opar, "OCFG": ocfg,
    }
    return {name: image[name].astype(np.uint32) for name in regions}


def decode_config(image: Mapping[str, np.ndarray]) -> XyloConfig:
    """The configuration held by a memory image (the inverse of :func:`encode_config`).

    The variant and the sizes are read from ``REG``; the decoded configuration is validated.

    Raises:
        ConfigError: a blank image (no configuration), a missing or mis-sized memory, an inconsistent
            field (a fan-out entry pointing outside the network, a duplicate entry, a step timer that
            disagrees with ``dt``) or an invalid decoded configuration; lists every problem.

    Example:
        >>> blank = {r.name: np.zeros(r.words, np.uint32) for r in memory_map()}
        >>> try:
        ...     decode_config(blank)
        ... except ConfigError as err:
        ...     print(err.problems[0])  # doctest: +NORMALIZE_WHITESPACE
        REG[0]: got 0x00000000, expected magic 0x58594C in bits [31:8]
        (a blank memory image: no configuration was written)
    """
    fix = "write the configuration again (XyloBoard.apply_config)"
    reg = np.asarray(image.get("REG", np.zeros(0))) if isinstance(image, Mapping) else None
    if reg is None or reg.shape != (_REG_WORDS,) or reg.dtype.kind not in "iu":
        got = "not a mapping" if reg is None else f"shape {reg.shape}, dtype {reg.dtype}"
        raise ConfigError(problems=[f"REG: got {got}, expected {_REG_WORDS} words of global registers"],
                          where="decode_config", fix=fix)

    reg = reg.astype(np.int64)

    def get_reg(name: str) -> int:
        f = _F[("REG", name)]
        return int(_get(reg[f.word], f))

    magic, code = get_reg("magic"), get_reg("variant")
    if magic != _MAGIC:
        what = " (a blank memory image: no configuration was written)" if not reg.any() else ""
        raise ConfigError(problems=[f"REG[0]: got 0x{int(reg[0]):08X}, expected magic 0x{_MAGIC:06X} in "
                                    f"bits [31:8]{what}"], where="decode_config", fix=fix)
    names = {v: k for k, v in VARIANT_CODES.items()}
    if code not in names:
        raise ConfigError(problems=[f"REG[0] variant: got {code}, expected one of {sorted(names)}"],
                          where="decode_config", fix=fix)
    lim = get_limits(next(k for k, v in LIMITS.items() if v.name == names[code]))
    problems: list[str] = []
    words: dict[str, np.ndarray] = {}
    for r in memory_map(lim):
        arr = image.get(r.name)
        arr = None if arr is None else np.asarray(arr)
        if arr is None or arr.shape != (r.words,) or arr.dtype.kind not in "iu":
            got = "missing" if arr is None else f"shape {arr.shape}, dtype {arr.dtype}"
            problems.append(f"{r.name}: got {got}, expected ({r.words},) 32-bit words ({lim.name})")
        else:
            words[r.name] = arr.astype(np.int64)
    C, N, O, K, F = lim.n_input, lim.n_hidden, lim.n_output, lim.n_synapses, lim.max_fanout_rec
    n_in, n_out, n_hid = get_reg("n_input"), get_reg("n_output"), get_reg("n_hidden")
    k = 2 if get_reg("syn2_enable") else 1
    for name, v, hi in (("n_input", n_in, C), ("n_output", n_out, O), ("n_hidden", n_hid, N),
                        ("synapses (syn2_enable)", k, K)):
        if not 1 <= v <= hi:
            problems.append(f"REG {name}: got {v}, expected 1..{hi} ({lim.name})")
    dt = float(np.array([get_reg("dt_lo"), get_reg("dt_hi")], dtype="<u4").view("<f8")[0])
    if not math.isfinite(dt) or round(dt * CORE_CLOCK_HZ) != get_reg("dt_div"):
        problems.append(f"REG dt_div: got {get_reg('dt_div')} cycles, expected round(dt * {CORE_CLOCK_HZ}) "
                        f"for dt = {dt!r} s (the step timer disagrees with dt)")
    if problems:
        raise ConfigError(problems=problems, where="decode_config", fix=fix)

    w_in = _unpack_bytes("IWT", words["IWT"], C * N * K).reshape(C, N, K)[:n_in, :n_hid, :k]
    w_out = _unpack_bytes("OWT", words["OWT"], N * O).reshape(N, O)[:n_hid, :n_out]
    ent = words["RWT"].reshape(N, F)[:n_hid]
    pre, _slot = np.nonzero(_get(ent, _F[("RWT", "valid")]))
    used = ent[pre, _slot]
    post, syn = _get(used, _F[("RWT", "target")]), _get(used, _F[("RWT", "syn")])
    outside = (post >= n_hid) | (syn >= k)
    if outside.any():
        e = int(np.argmax(outside))
        problems.append(f"RWT[{int(pre[e]) * F + int(_slot[e])}]: got target {int(post[e])} synapse "
                        f"{int(syn[e])}, expected a hidden id < {n_hid} and a synapse < {k} "
                        f"({int(outside.sum())} entr(y/ies) affected)")
    else:
        flat = (pre * n_hid + post) * k + syn
        if np.unique(flat).size != flat.size:
            problems.append("RWT: got duplicate fan-out entries for one (pre, post, synapse), expected "
                            "at most one entry each")
    if problems:
        raise ConfigError(problems=problems, where="decode_config", fix=fix)
    w_rec = np.zeros((n_hid, n_hid, k), dtype=np.int64)
    w_rec[pre, post, syn] = _get(used, _F[("RWT", "weight")])

    def hid(name: str) -> np.ndarray:
        f = next(f for f in WORD_LAYOUT if f.name == name and f.memory in ("NPAR", "NCFG"))
        return _get(words[f.memory][:n_hid], f)

    def out(name: str) -> np.ndarray:
        f = next(f for f in WORD_LAYOUT if f.name == name and f.memory in ("OPAR", "OCFG"))
        return _get(words[f.memory][:n_out], f)

    aliases = np.where(hid("alias_valid") == 1, hid("alias_target"), -1)
    config = XyloConfig(
        weights_in=w_in, weights_rec=w_rec, weights_out=w_out,
        dash_mem=hid("dash_mem"), dash_syn=hid("dash_syn"), dash_syn_2=hid("dash_syn_2"),
        dash_mem_out=out("dash_mem_out"), dash_syn_out=out("dash_syn_out"),
        threshold=hid("threshold"), bias=hid("bias"), threshold_out=out("threshold_out"),
        bias_out=out("bias_out"), aliases=aliases,
        weight_shift_in=get_reg("weight_shift_in"), weight_shift_rec=get_reg("weight_shift_rec"),
        weight_shift_out=get_reg("weight_shift_out"), bias_enable=bool(get_reg("bias_enable")),
        dt=dt, limits_name=lim.name)
    problems = validate_config(config, lim)
    if problems:
        raise ConfigError(problems=problems, where="decode_config", fix=fix)
    return config


# ------------------------------------------------------------------------------------------------
# Cost model
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CostModel:
    """Clock cycles and energy of one time step, from the synaptic operations (model assumptions).

    These numbers are **assumptions of a simple model, not measurements** of Xylo silicon; change
    them to match a datasheet or your own measurements. Per step ``t``:

    =================  ==============================================================================
    quantity           model
    =================  ==============================================================================
    synaptic ops       ``S[t] = sum_c min(x[t, c], 15) * nnz(W_in[c]) + sum_j s[t-1, j] *
                       (nnz(W_rec[j]) + nnz(W_out[j]))`` (events times stored non-zero weights)
    neuron updates     ``U = N_hid * k + N_out`` (every synaptic state, every step)
    cycles             ``cycles[t] = cycles_per_synop * S[t] + cycles_per_update * U + cycles_per_step``
    energy (J)         ``E[t] = energy_per_synop_j * S[t] + energy_per_update_j * U``
    power (W)          ``P[t] = E[t] / dt + static_power_w``
    real time          the step fits when ``cycles[t] <= round(dt * clock_hz)``
    =================  ==============================================================================
    """

    clock_hz: float = float(CORE_CLOCK_HZ)  # Hz, core clock
    cycles_per_synop: int = 1               # one weight fetch + one saturating add per event
    cycles_per_update: int = 2              # decay + integrate (+ spike check) of one state
    cycles_per_step: int = 64               # fixed per step: input latch, readout, handshake
    energy_per_synop_j: float = 20e-12      # J per synaptic operation
    energy_per_update_j: float = 10e-12     # J per state update
    static_power_w: float = 100e-6          # W, leakage and clock tree, independent of activity


@dataclass(frozen=True)
class RunStats:
    """Per-step activity, clock cycles and power of one run (see :class:`CostModel`).

    Arrays are ``(T,)`` for unbatched input and ``(B, T)`` for a batch.
    """

    dt: float                       # s per step
    synops_in: np.ndarray           # input synaptic operations per step
    synops_rec: np.ndarray          # recurrent synaptic operations per step
    synops_out: np.ndarray          # readout synaptic operations per step
    updates: int                    # state updates per step
    cycles: np.ndarray              # clock cycles per step
    energy_j: np.ndarray            # J per step (dynamic)
    power_w: np.ndarray             # W per step (dynamic + static)
    cycle_budget: int               # clock cycles available per step, round(dt * clock_hz)
    cost_model: CostModel = field(default_factory=CostModel)

    @property
    def synops(self) -> np.ndarray:
        """All synaptic operations per step."""
        return self.synops_in + self.synops_rec + self.synops_out

    @property
    def duration_s(self) -> float:
        """Wall time on the board (s): every step takes ``dt`` in real time."""
        return float(self.cycles.size * self.dt)

    @property
    def mean_power_w(self) -> float:
        """Mean power over the run (W)."""
        return float(self.power_w.mean()) if self.power_w.size else 0.0

    @property
    def total_energy_j(self) -> float:
        """Energy of the run (J), static power included."""
        return float(self.energy_j.sum() + self.cost_model.static_power_w * self.duration_s)

    @property
    def max_cycles(self) -> int:
        """The busiest step's clock cycles."""
        return int(self.cycles.max()) if self.cycles.size else 0

    @property
    def realtime_ok(self) -> bool:
        """True when every step fits in ``dt`` (else the real chip would fall behind)."""
        return self.max_cycles <= self.cycle_budget

    def summary(self) -> str:
        """A one-line summary."""
        return (f"{self.cycles.size} steps, {self.duration_s * 1e3:.3g} ms on the board, "
                f"{int(self.synops.sum())} synaptic ops, max {self.max_cycles} of {self.cycle_budget} "
                f"cycles per step, mean power {self.mean_power_w * 1e6:.4g} uW (model estimate)")


def _synop_counts(config: XyloConfig, x: np.ndarray, spikes_before: np.ndarray,
                  spikes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Synaptic operations per step: events times stored non-zero weights (see :class:`CostModel`)."""
    fan_in = np.count_nonzero(config.weights_in, axis=(1, 2)).astype(np.int64)
    fan_rec = np.count_nonzero(config.weights_rec, axis=(1, 2)).astype(np.int64)
    fan_out = np.count_nonzero(config.weights_out, axis=1).astype(np.int64)
    events = np.minimum(np.asarray(x), 15).astype(np.int64)     # the chip's 4-bit input counter
    spk = spikes.astype(np.int64)
    before = np.broadcast_to(spikes_before.astype(np.int64), spk.shape[:-2] + spk.shape[-1:])
    steps = spk.shape[-2]
    prev = np.concatenate([before[..., None, :], spk[..., :-1, :]], axis=-2)[..., :steps, :]  # 1-step delay
    return events @ fan_in, prev @ fan_rec, prev @ fan_out


def _stats(config: XyloConfig, counts: tuple[np.ndarray, ...], cost: CostModel) -> RunStats:
    s_in, s_rec, s_out = counts
    synops = s_in + s_rec + s_out
    updates = config.n_hidden * config.n_synapses + config.n_output
    cycles = cost.cycles_per_synop * synops + cost.cycles_per_update * updates + cost.cycles_per_step
    energy = cost.energy_per_synop_j * synops + cost.energy_per_update_j * updates
    power = energy / config.dt + cost.static_power_w
    return RunStats(dt=config.dt, synops_in=s_in, synops_rec=s_rec, synops_out=s_out, updates=updates,
                    cycles=cycles.astype(np.int64), energy_j=np.asarray(energy, dtype=np.float64),
                    power_w=np.asarray(power, dtype=np.float64),
                    cycle_budget=int(round(config.dt * cost.clock_hz)), cost_model=cost)


# ------------------------------------------------------------------------------------------------
# The board
# ------------------------------------------------------------------------------------------------
def _seconds(name: str, value: Any, where: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if not (math.isfinite(v) and v >= 0):
        raise ConfigError(name, value=value, limit="a finite number of seconds >= 0", where=where,
                          fix=f"pass {name}=<seconds>, e.g. 1.0")
    return v


class MockXyloDevice:
    """A numpy model of one Xylo development kit: memory image, link and bit-exact core.

    Args:
        limits: the chip variant (``"audio2"``, ``"audio3"``, ``"imu"`` or a :class:`XyloLimits`).
        serial: the board's serial number (a name).
        timeout_s: how long a read waits for the board's answer (simulated seconds).
        response_delay_s: how long the board takes to answer a read (simulated; a stalled board
            has ``response_delay_s > timeout_s`` and every read times out).
        link_words_per_s, link_latency_s: link bandwidth (32-bit words/s) and latency per transaction.

    Attributes:
        clock_s: simulated seconds spent on the link and running the core since creation.
        epoch: incremented on every memory write and power cycle; a :class:`XyloBoard` uses it to
            notice that the memory changed under it.

    The memory is lost when the board is removed (:meth:`disconnect`) and is blank again after
    :meth:`reconnect` (a power cycle). The core is rebuilt from the memory image at the first run after
    a write, and its state is reset by any memory write.
    """

    def __init__(self, limits: XyloLimits | str | None = "audio2", *, serial: str = "XYLO-MOCK-0",
                 timeout_s: float = 1.0, response_delay_s: float = 0.0,
                 link_words_per_s: float = 2.5e6, link_latency_s: float = 1e-4) -> None:
        self.limits = get_limits(limits)
        if self.limits.name not in VARIANT_CODES:
            raise ConfigError("board variant", value=self.limits.name, limit=sorted(VARIANT_CODES),
                              where="MockXyloDevice", fix="use one of the Xylo variants in limits.LIMITS")
        self.serial = str(serial)
        self.timeout_s = _seconds("timeout_s", timeout_s, self.serial)
        self.response_delay_s = _seconds("response_delay_s", response_delay_s, self.serial)
        self.link_latency_s = _seconds("link_latency_s", link_latency_s, self.serial)
        rate = _seconds("link_words_per_s", link_words_per_s, self.serial)
        if rate <= 0:
            raise ConfigError("link_words_per_s", value=link_words_per_s, limit="> 0", where=self.serial,
                              fix="pass a positive link bandwidth in words per second")
        self.link_words_per_s = rate
        self.regions = {r.name: r for r in memory_map(self.limits)}
        self.clock_s = 0.0
        self.epoch = 0
        self._connected = True
        self._steps_left: int | None = None
        self._power_up()

    def __repr__(self) -> str:
        state = "connected" if self._connected else "disconnected"
        return f"MockXyloDevice({self.limits.name!r}, serial={self.serial!r}, {state})"

    def _power_up(self) -> None:
        self._memory = {name: np.zeros(r.words, dtype=np.uint32) for name, r in self.regions.items()}
        self._core: XyloSim | None = None
        self._core_config: XyloConfig | None = None
        self._core_epoch = -1
        self.epoch += 1

    # -- presence -------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        """True while the board is plugged in."""
        return self._connected

    def disconnect(self, after_steps: int | None = None) -> None:
        """Remove the board now, or let it run ``after_steps`` more time steps and vanish at the next.

        A run in progress when the board vanishes raises :class:`SimulationError`; its results and
        the board's memory are lost.
        """
        if after_steps is None:
            self._connected = False
            self._steps_left = None
            return
        if isinstance(after_steps, bool) or not isinstance(after_steps, (int, np.integer)) or after_steps < 0:
            raise ConfigError("after_steps", value=after_steps, limit="an integer >= 0 or None",
                              where=self.serial, fix="pass the number of steps the board still runs")
        self._steps_left = int(after_steps)

    def reconnect(self) -> None:
        """Plug the board back in: a power cycle, the memory is blank (apply the configuration again)."""
        self._connected = True
        self._steps_left = None
        self._power_up()

    # -- link -----------------------------------------------------------------------------------
    def _require_connected(self, what: str) -> None:
        if not self._connected:
            raise DeviceError(f"board disconnected: cannot {what}", where=self.serial,
                                  fix="plug the board back in (MockXyloDevice.reconnect() on the mock), "
                                      "find it with find_xylo_hdks() and apply the configuration again")

    def _transfer(self, what: str, n_words: int, read: bool) -> None:
        """Account one link transaction of ``n_words`` words; a read waits for the board's answer."""
        self._require_connected(what)
        if read and self.response_delay_s > self.timeout_s:
            self.clock_s += self.timeout_s           # simulated: the host gave up after timeout_s
            raise DeviceError(f"read timed out: cannot {what}",
                                  value=f"no answer within {self.timeout_s} s",
                                  limit=f"an answer within timeout_s = {self.timeout_s} s",
                                  where=self.serial,
                                  fix="check the cable and power, or raise MockXyloDevice.timeout_s; "
                                      "then retry (a timed-out run's state is undefined: reset_state())")
        self.clock_s += (self.link_latency_s + (self.response_delay_s if read else 0.0)
                         + n_words / self.link_words_per_s)

    def _region(self, name: str, start: int, count: int | None) -> tuple[MemoryRegion, int, int]:
        if name not in self.regions:
            raise ConfigError("memory name", value=name, limit=sorted(self.regions), where=self.serial,
                              fix="use one of the memories of memory_map()")
        r = self.regions[name]
        if isinstance(start, bool) or not isinstance(start, (int, np.integer)) or not 0 <= start <= r.words:
            raise ConfigError(f"{name} start word", value=start, limit=f"0..{r.words}", where=self.serial,
                              fix="address words inside the memory")
        n = r.words - int(start) if count is None else count
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 0 <= start + n <= r.words:
            raise ConfigError(f"{name} word count", value=n, limit=f"0..{r.words - int(start)}",
                              where=self.serial, fix="address words inside the memory")
        return r, int(start), int(n)

    def write_memory(self, name: str, words: Any, start: int = 0) -> None:
        """Write 32-bit ``words`` to memory ``name`` from word ``start``; resets the core's state."""
        arr = np.asarray(words)
        if arr.ndim != 1 or arr.dtype.kind not in "iu" or (arr.size and (arr.min() < 0
                                                                         or arr.max() > 0xFFFFFFFF)):
            raise ConfigError(f"{name} words", value=f"shape {arr.shape}, dtype {arr.dtype}",
                              limit="a 1-D array of integers in 0..0xFFFFFFFF", where=self.serial,
                              fix="pass uint32 words (encode_config builds them)")
        _r, start, n = self._region(name, start, arr.size)
        self._transfer(f"write {name}", n, read=False)
        self._memory[name][start: start + n] = arr.astype(np.uint32)
        self.epoch += 1

    def read_memory(self, name: str, start: int = 0, count: int | None = None) -> np.ndarray:
        """Read ``count`` words (default: to the end) of memory ``name`` from word ``start``."""
        _r, start, n = self._region(name, start, count)
        self._transfer(f"read {name}", n, read=True)
        return self._memory[name][start: start + n].copy()

    def write_image(self, image: Mapping[str, Any]) -> None:
        """Write every memory of ``image`` (a dict from :func:`encode_config`)."""
        for name in self.regions:
            if name not in image:
                raise ConfigError(f"memory image lacks {name}", where=self.serial,
                                  fix="pass a complete image from encode_config")
        for name in self.regions:
            self.write_memory(name, image[name])

    def read_image(self) -> dict[str, np.ndarray]:
        """Read every memory back."""
        return {name: self.read_memory(name) for name in self.regions}

    # -- core -----------------------------------------------------------------------------------
    def _build_core(self) -> XyloSim:
        if self._core is None or self._core_epoch != self.epoch:
            # The board's "firmware": it knows nothing but its own memory image.
            try:
                cfg = decode_config(self._memory)
            except ConfigError as err:
                raise ConfigError(problems=err.problems, where=f"{self.serial} memory image",
                                  fix="apply a configuration with XyloBoard(board, config)") from None
            self._core = XyloSim.from_config(cfg)
            self._core_config = cfg
            self._core_epoch = self.epoch
        return self._core

    def reset_core(self) -> None:
        """Zero the core's state (a register write)."""
        self._transfer("reset the core", 1, read=False)
        if self._core is not None:
            self._core.reset_state()

    def read_state(self) -> dict[str, np.ndarray]:
        """The core's state registers (as ``XyloSim.state``)."""
        core = self._build_core()
        words = sum(v.size for v in core.state.values())
        self._transfer("read the core state", -(-words // 2), read=True)
        return core.state

    def run(self, x: Any, record: bool = False
            ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray], RunStats]:
        """Send input, run the core in (simulated) real time and read the results back.

        Returns ``(output, state, record, stats)``; ``stats`` (:class:`RunStats`) uses the default
        :class:`CostModel`. Raises :class:`SimulationError` for bad input, a removed board (also one
        that vanishes mid-run) and a read time-out; :class:`ConfigError` when the memory image does
        not decode (nothing was configured).
        """
        self._require_connected("run")
        core = self._build_core()
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError) as exc:
            raise SimulationError(f"input is not an array ({exc})", where="x",
                                  fix="pass event counts of shape (T, N_in) or (B, T, N_in)") from None
        steps = arr.shape[-2] * (arr.shape[0] if arr.ndim == 3 else 1) if arr.ndim in (2, 3) else 0
        self._transfer("send the input", -(-arr.size // 8), read=False)     # 4-bit counts, 8 per word
        if self._steps_left is not None and steps > self._steps_left:
            done = self._steps_left
            self.clock_s += done * core.dt
            self._connected = False
            self._steps_left = None
            raise DeviceError(f"board disconnected during the run, after step {done} of {steps}",
                                  where=self.serial,
                                  fix="the results and the board's memory are lost: plug the board back in "
                                      "(MockXyloDevice.reconnect() on the mock), apply the configuration "
                                      "again and rerun")
        before = core.state["Spikes"]
        out, state, rec = core.evolve(arr, record=True)       # validates x (SimulationError)
        if self._steps_left is not None:
            self._steps_left -= steps
        self.clock_s += steps * core.dt                        # the board runs in real time
        counts = _synop_counts(self._core_config, arr, before, rec["Spikes"])
        n_words = -(-out.size // 32) + (sum(v.size for v in rec.values()) // 2 if record else 0)
        self._transfer("read the results", n_words, read=True)
        return out, state, (rec if record else {}), _stats(self._core_config, counts, CostModel())


# ------------------------------------------------------------------------------------------------
# The mock USB bus
# ------------------------------------------------------------------------------------------------
_BUS: list[MockXyloDevice] | None = None


def set_mock_boards(count: int = 1, limits: XyloLimits | str | Sequence[XyloLimits | str] = "audio2",
                    **options: Any) -> list[MockXyloDevice]:
    """Plug ``count`` mock boards in (replacing the previous ones) and return them.

    Args:
        count: number of boards, 0 included.
        limits: one variant for all boards, or one per board.
        options: keyword arguments of :class:`MockXyloDevice` (``timeout_s``, ``response_delay_s``, ...).

    Example:
        >>> boards = set_mock_boards(2, limits=["audio2", "imu"])
        >>> [(b.serial, b.limits.name) for b in boards]
        [('XYLO-MOCK-0', 'Xylo Audio 2'), ('XYLO-MOCK-1', 'Xylo IMU')]
        >>> _ = set_mock_boards(1)
    """
    global _BUS
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
        raise ConfigError("mock board count", value=count, limit="an integer >= 0", where="set_mock_boards",
                          fix="pass the number of boards to simulate, e.g. set_mock_boards(1)")
    if isinstance(limits, (str, XyloLimits)) or limits is None:
        per_board: list[Any] = [limits] * int(count)
    else:
        per_board = list(limits)
        if len(per_board) != count:
            raise ConfigError("variants per board", value=len(per_board), limit=f"{count} (count)",
                              where="set_mock_boards", fix="pass one variant, or one per board")
    _BUS = [MockXyloDevice(lim, serial=f"XYLO-MOCK-{i}", **options) for i, lim in enumerate(per_board)]
    return list(_BUS)


def find_xylo_hdks() -> list[MockXyloDevice]:
    """The connected Xylo development kits (mock boards; see :func:`set_mock_boards`).

    Until :func:`set_mock_boards` is called, the bus holds ``$PONDLIB_XYLO_MOCK_BOARDS`` Xylo Audio 2
    boards (default 1). Boards that were removed (:meth:`MockXyloDevice.disconnect`) are not listed.
    """
    if _BUS is None:
        text = os.environ.get(MOCK_BOARDS_ENV, "1").strip()
        if not text.isdigit():
            raise ConfigError(f"${MOCK_BOARDS_ENV}", value=text, limit="an integer >= 0",
                              where="find_xylo_hdks", fix=f"set {MOCK_BOARDS_ENV} to a board count, e.g. 1")
        set_mock_boards(int(text))
    assert _BUS is not None
    return [d for d in _BUS if d.connected]


# ------------------------------------------------------------------------------------------------
# The host-side module
# ------------------------------------------------------------------------------------------------
class XyloBoard:
    """A configured Xylo board, with the interface of :class:`~pondlib.devices.xylo.sim.XyloSim`.

    Args:
        board: a board from :func:`find_xylo_hdks`.
        config: the configuration to deploy (validated against the board's variant).
        dt: overrides ``config.dt`` (s); the board's step timer is programmed with it.
        cost_model: the assumptions behind :attr:`last_stats` and :meth:`estimate`.

    Raises:
        ConfigError: an invalid configuration (every problem listed) or one built for another variant.
        SimulationError: the board is disconnected or does not answer.
    """

    def __init__(self, board: MockXyloDevice, config: XyloConfig, dt: float | None = None,
                 cost_model: CostModel | None = None) -> None:
        if not isinstance(board, MockXyloDevice):
            raise ConfigError("not a Xylo board", value=type(board).__name__, where="XyloBoard",
                              fix="pass a board returned by find_xylo_hdks()")
        self.device = board
        self.cost_model = cost_model if cost_model is not None else CostModel()
        self.last_stats: RunStats | None = None
        self._epoch: int | None = None
        self._runs_config: XyloConfig | None = None
        self.apply_config(config, dt=dt)

    def __repr__(self) -> str:
        return f"XyloBoard({self.device!r})"

    @property
    def limits(self) -> XyloLimits:
        """The board's variant."""
        return self.device.limits

    @property
    def dt(self) -> float:
        """The time step programmed on the board (s)."""
        assert self._runs_config is not None
        return self._runs_config.dt

    def apply_config(self, config: XyloConfig, dt: float | None = None) -> None:
        """Validate, encode and write ``config``, read it back; the state is reset.

        Raises:
            ConfigError: every problem of ``config`` for this board; nothing is written then.
            SimulationError: the board is disconnected or a read-back timed out.
        """
        where = f"{self.device.serial} ({self.limits.name})"
        if not isinstance(config, XyloConfig):
            raise ConfigError("not a XyloConfig", value=type(config).__name__, where=where,
                              fix="build one with config_from_specification or XyloConfig(...)")
        if dt is not None:
            try:
                config = config.replace(dt=float(dt))
            except (TypeError, ValueError):
                raise ConfigError("dt", value=dt, limit="a number of seconds", where=where,
                                  fix="pass dt in seconds, e.g. 1e-3") from None
        _lim, problems = _limits_of(config, self.limits)
        if problems:
            raise ConfigError(problems=problems, where=where)
        self._epoch = None
        self.device.write_image(encode_config(config, self.limits))
        self._runs_config = decode_config(self.device.read_image())
        self.device.reset_core()
        self._epoch = self.device.epoch
        self.last_stats = None

    @property
    def config(self) -> XyloConfig:
        """The configuration read back from the board's memory (equal to the one applied)."""
        return decode_config(self.device.read_image())

    def _require_current(self) -> None:
        self.device._require_connected("run")
        if self._epoch != self.device.epoch:
            raise DeviceError("the board's memory changed since this XyloBoard configured it "
                                  "(a power cycle, another XyloBoard or a raw memory write)",
                                  where=self.device.serial,
                                  fix="call apply_config(config) again")

    def reset_state(self) -> None:
        """Zero the core's state."""
        self._require_current()
        self.device.reset_core()

    @property
    def state(self) -> dict[str, np.ndarray]:
        """The core's state, read from the board."""
        self._require_current()
        return self.device.read_state()

    def evolve(self, x: Any, record: bool = False
               ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Run the board on event counts ``x`` (``(T, N_in)`` or ``(B, T, N_in)``), as ``XyloSim.evolve``.

        State persists between calls until :meth:`reset_state`. Also sets :attr:`last_stats`.
        """
        self._require_current()
        out, state, rec, stats = self.device.run(x, record=record)
        assert self._runs_config is not None
        counts = (stats.synops_in, stats.synops_rec, stats.synops_out)
        self.last_stats = _stats(self._runs_config, counts, self.cost_model)
        return out, state, rec

    @property
    def inference_duration(self) -> float:
        """Seconds the last :meth:`evolve` took on the board (``T * dt``, in real time); 0 before a run."""
        return self.last_stats.duration_s if self.last_stats is not None else 0.0

    def estimate(self, x: Any) -> RunStats:
        """Cycles and power of running ``x`` from a reset state (host-side model; the board is untouched)."""
        assert self._runs_config is not None
        sim = XyloSim.from_config(self._runs_config)
        arr = np.asarray(x)
        _out, _state, rec = sim.evolve(arr, record=True)
        zeros = np.zeros(self._runs_config.n_hidden, dtype=np.int64)
        return _stats(self._runs_config, _synop_counts(self._runs_config, arr, zeros, rec["Spikes"]),
                      self.cost_model)
