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

Modules: this one is the front end (:func:`find_xylo_hdks`, :func:`set_mock_boards`, :class:`XyloBoard`)
and re-exports the names below; the layout is :mod:`~pondlib.devices.xylo.memory`, the
configuration <-> image translation :mod:`~pondlib.devices.xylo.codec`, the cost model
:mod:`~pondlib.devices.xylo.cost` and the mock board :mod:`~pondlib.devices.xylo.mock`.

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

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from pondlib.devices.xylo.codec import _limits_of, decode_config, encode_config
from pondlib.devices.xylo.config import XyloConfig
from pondlib.devices.xylo.cost import CostModel, RunStats, _stats, _synop_counts
from pondlib.devices.xylo.limits import XyloLimits
from pondlib.devices.xylo.memory import (
    CORE_CLOCK_HZ,
    VARIANT_CODES,
    WORD_LAYOUT,
    BitField,
    MemoryRegion,
    _put,  # noqa: F401  (re-exported for the memory-layout tests)
    format_memory_map,
    format_word_layout,
    memory_map,
)
from pondlib.devices.xylo.mock import MockXyloDevice
from pondlib.devices.xylo.sim import XyloSim
from pondlib.errors import ConfigError, DeviceError
from pondlib.validate import check_int, check_type

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
    "MAX_BOARDS",
]

#: Environment variable read by :func:`find_xylo_hdks` while :func:`set_mock_boards` was not called.
MOCK_BOARDS_ENV = "PONDLIB_XYLO_MOCK_BOARDS"
#: Most mock boards on the bus (a USB bus addresses at most 127 devices).
MAX_BOARDS = 127
#: Keyword options of :class:`MockXyloDevice` that :func:`set_mock_boards` passes on.
_BOARD_OPTIONS = ("timeout_s", "response_delay_s", "link_words_per_s", "link_latency_s")


# ------------------------------------------------------------------------------------------------
# The mock USB bus
# ------------------------------------------------------------------------------------------------
_BUS: list[MockXyloDevice] | None = None


def set_mock_boards(
    count: int = 1, limits: XyloLimits | str | Sequence[XyloLimits | str] = "audio2", **options: Any
) -> list[MockXyloDevice]:
    """Plug ``count`` mock boards in (replacing the previous ones) and return them.

    Args:
        count: number of boards, an int in 0..:data:`MAX_BOARDS` (127, a USB bus's device limit).
        limits: one variant for all boards, or a list or tuple with one per board.
        options: keyword arguments of :class:`MockXyloDevice` (``timeout_s``, ``response_delay_s``,
            ``link_words_per_s``, ``link_latency_s``); any other name is refused.

    Raises:
        ConfigError: a bad count, variant or option (the message names it).

    Example:
        >>> boards = set_mock_boards(2, limits=["audio2", "imu"])
        >>> [(b.serial, b.limits.name) for b in boards]
        [('XYLO-MOCK-0', 'Xylo Audio 2'), ('XYLO-MOCK-1', 'Xylo IMU')]
        >>> _ = set_mock_boards(1)
    """
    global _BUS
    count = check_int(
        count,
        "mock board count",
        lo=0,
        hi=MAX_BOARDS,
        where="set_mock_boards",
        error=ConfigError,
        fix=f"pass the number of boards to simulate (an int 0..{MAX_BOARDS}), e.g. set_mock_boards(1)",
    )
    unknown = sorted(k for k in options if k not in _BOARD_OPTIONS)
    if unknown:
        raise ConfigError(
            "unknown board option(s)",
            value=unknown,
            limit=list(_BOARD_OPTIONS),
            where="set_mock_boards",
            fix="pass only MockXyloDevice options (the serial numbers are assigned here)",
        )
    if isinstance(limits, (str, XyloLimits)) or limits is None:
        per_board: list[Any] = [limits] * count
    elif isinstance(limits, (list, tuple)):
        per_board = list(limits)
    else:
        raise ConfigError(
            "limits",
            value=type(limits).__name__,
            limit="a variant name, a XyloLimits, or a list of them (one per board)",
            where="set_mock_boards",
            fix="pass e.g. limits='audio2' or limits=['audio2', 'imu']",
        )
    if len(per_board) != count:
        raise ConfigError(
            "variants per board",
            value=len(per_board),
            limit=f"{count} (count)",
            where="set_mock_boards",
            fix="pass one variant, or one per board",
        )
    _BUS = [MockXyloDevice(lim, serial=f"XYLO-MOCK-{i}", **options) for i, lim in enumerate(per_board)]
    return list(_BUS)


def find_xylo_hdks() -> list[MockXyloDevice]:
    """The connected Xylo development kits (mock boards; see :func:`set_mock_boards`).

    Until :func:`set_mock_boards` is called, the bus holds ``$PONDLIB_XYLO_MOCK_BOARDS`` Xylo Audio 2
    boards (default 1). Boards that were removed (:meth:`MockXyloDevice.disconnect`) are not listed.
    """
    if _BUS is None:
        text = os.environ.get(MOCK_BOARDS_ENV, "1").strip()
        if not (text.isascii() and text.isdigit()) or int(text) > MAX_BOARDS:
            raise ConfigError(
                f"${MOCK_BOARDS_ENV}",
                value=text,
                limit=f"an integer 0..{MAX_BOARDS}",
                where="find_xylo_hdks",
                fix=f"set {MOCK_BOARDS_ENV} to a board count, e.g. 1",
            )
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

    def __init__(
        self, board: MockXyloDevice, config: XyloConfig, dt: float | None = None, cost_model: CostModel | None = None
    ) -> None:
        if not isinstance(board, MockXyloDevice):
            raise ConfigError(
                "not a Xylo board",
                value=type(board).__name__,
                where="XyloBoard",
                fix="pass a board returned by find_xylo_hdks()",
            )
        self.device = board
        if cost_model is not None:
            check_type(cost_model, "cost_model", CostModel, where="XyloBoard", error=ConfigError)
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
            raise ConfigError(
                "not a XyloConfig",
                value=type(config).__name__,
                where=where,
                fix="build one with config_from_specification or XyloConfig(...)",
            )
        if dt is not None:
            if isinstance(dt, (bool, np.bool_, str, bytes)) or not isinstance(
                dt, (int, float, np.integer, np.floating)
            ):
                raise ConfigError(
                    "dt", value=dt, limit="a number of seconds", where=where, fix="pass dt in seconds, e.g. 1e-3"
                )
            config = config.replace(dt=float(dt))  # its range (NaN included) is reported with the others
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
            raise DeviceError(
                "the board's memory changed since this XyloBoard configured it "
                "(a power cycle, another XyloBoard or a raw memory write)",
                where=self.device.serial,
                fix="call apply_config(config) again",
            )

    def reset_state(self) -> None:
        """Zero the core's state."""
        self._require_current()
        self.device.reset_core()

    @property
    def state(self) -> dict[str, np.ndarray]:
        """The core's state, read from the board."""
        self._require_current()
        return self.device.read_state()

    def evolve(self, x: Any, record: bool = False) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
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
        arr, _batched = sim._check_input(x)  # SimulationError for bad input, as evolve
        _out, _state, rec = sim.evolve(arr, record=True)
        zeros = np.zeros(self._runs_config.n_hidden, dtype=np.int64)
        return _stats(self._runs_config, _synop_counts(self._runs_config, arr, zeros, rec["Spikes"]), self.cost_model)
