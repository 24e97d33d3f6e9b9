"""A fast, bit-exact simulator of the Xylo core (integer dynamics of ``docs/XYLO.md``).

The kernel is event-driven: per time step it touches input weights only for channels with events,
recurrent and readout weights only for neurons that spiked in the previous step (per-pre-neuron sparse
lists built once from the dense matrices), does one vectorized O(N) pass to decay and integrate, and
visits only the neurons that reached their threshold. A batch of independent samples runs in parallel
(each sample with its own state, so results do not depend on the number of threads); an unbatched run is
one single-threaded call. With ``record=False`` nothing is recorded.

The kernel is C (``csrc/xylo_sim.c``), built by the system C compiler on its first use and cached on disk
(:mod:`pondlib.cprogram.native`: about a second once per installation and machine), run through ctypes on
the simulator's own arrays and over the cores with OpenMP. Where no C compiler exists (or with
``PONDLIB_CC=none``) the same algorithm runs compiled by numba (:mod:`pondlib.devices.xylo.sim_kernels`,
about 8 s to compile once per installation); :attr:`XyloSim.engine` says which. Both give the same
integers (``tests/devices/xylo/test_sim_c.py``). In a process forked from another, the C kernel runs the
samples of a batch one after another (GNU OpenMP's threads do not survive a fork).

Update equations (one step ``t``; all arithmetic integer; ``sat16`` clamps to [-32768, 32767];
``decay(v, d) = v >> d`` (arithmetic shift, floor), replaced by ``sign(v)`` when it is 0; the delivered
weight of a projection with shift ``s`` is ``wrap16(w << s)``)::

    1. input      for c ascending:  n = min(x[t, c], 15)
                                    isyn[i, q] = sat16(isyn[i, q] + n * wrap16(w_in[c, i, q] << s_in))
    2. recurrent  for j ascending with m = spikes[t-1, j] > 0:
                                    isyn[i, q] = sat16(isyn[i, q] + m * wrap16(w_rec[j, i, q] << s_rec))
    3. readout    for j ascending with m = spikes[t-1, j] > 0:
                                    isyn_out[o] = sat16(isyn_out[o] + m * wrap16(w_out[j, o] << s_out))
    4. hidden     for i ascending (spike buffer b = 0 at the start of the step):
                    isyn[i, q] -= decay(isyn[i, q], dash_syn[i, q])
                    dv   = wrap16(-decay(vmem[i], dash_mem[i]))
                    dv   = sat16(dv + isyn[i, 0] + isyn[i, 1]);  dv = sat16(dv + bias[i]) if bias_enable
                    vmem = sat16(vmem + dv)
                    n = b[i]; while vmem >= threshold[i] and n < 31: n += 1; vmem = wrap16(vmem - threshold[i])
                    b[i] = n;  if aliases[i] >= 0: b[aliases[i]] = min(b[aliases[i]] + n, 31)
    5. output     the same with one synapse, the output parameters, at most 1 spike, no aliases
    6. spikes[t] = b (drives steps 2 and 3 at t + 1); the output at t is the output spike vector

Units: states, thresholds, biases and weights are chip integers (no physical unit); ``dt`` (seconds)
only labels time, it does not enter the integer dynamics. Input is a count of events per channel per
step. **The chip clips counts above 15 to 15** (a 4-bit input counter); this simulator does the same,
which is the hardware behaviour and not an error.

Record (``record=True``), ``int32`` arrays, time first (a leading ``B`` axis for batched input):

=============  ==============  ==========================================================
key            shape           content (value at the end of step ``t``)
=============  ==============  ==========================================================
``Vmem``       (T, N_hid)      hidden membrane, after reset by subtraction
``Isyn``       (T, N_hid)      hidden synaptic state of synapse 0
``Isyn2``      (T, N_hid)      hidden synaptic state of synapse 1 (zeros when k == 1)
``Spikes``     (T, N_hid)      hidden spike counts, alias copies included (0..31)
``Vmem_out``   (T, N_out)      output membrane
``Isyn_out``   (T, N_out)      output synaptic state
=============  ==============  ==========================================================

The state (``Vmem``, ``Isyn``, ``Isyn2``, ``Spikes`` (last step's hidden spike counts, which drive
the next step's recurrence and readout), ``Vmem_out``, ``Isyn_out``; ``int64``) persists across calls
to :meth:`XyloSim.evolve` until :meth:`XyloSim.reset_state`: two half-length runs equal one run.

Example:
    >>> import numpy as np
    >>> from pondlib.devices.xylo.config import XyloConfig
    >>> cfg = XyloConfig(
    ...     weights_in=np.array([[[100]]]), weights_rec=np.zeros((1, 1, 1)),
    ...     weights_out=np.array([[50]]), dash_mem=[1], dash_syn=[1], dash_syn_2=[0],
    ...     dash_mem_out=[1], dash_syn_out=[1], threshold=[60], bias=[0], threshold_out=[40],
    ...     bias_out=[0], aliases=[-1])
    >>> sim = XyloSim.from_config(cfg)
    >>> out, state, rec = sim.evolve(np.array([[1], [0], [0], [0]]), record=True)
    >>> rec["Isyn"][:, 0].tolist()     # 100 - 50; 50 - 25; 25 - (25 >> 1); 13 - 6
    [50, 25, 13, 7]
    >>> rec["Vmem"][:, 0].tolist()     # 0 + 50; 50 - 25 + 25; 50 - 25 + 13; 38 - 19 + 7
    [50, 50, 38, 26]
    >>> out, state, rec = sim.evolve(np.array([[15], [0], [0]]), record=True)  # continues
    >>> rec["Isyn"][:, 0].tolist()     # (7 + 15 * 100) - 753 = 754, then halves
    [754, 377, 189]
    >>> rec["Spikes"][:, 0].tolist()   # (26 - 13 + 754) = 767 = 12 * 60 + 47: 12 spikes
    [12, 6, 3]
    >>> out[:, 0].tolist()             # the readout sees hidden spikes one step later
    [0, 1, 1]
    >>> state["Vmem"].tolist(), state["Spikes"].tolist()
    ([30], [3])
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pondlib.cprogram import native
from pondlib.devices.xylo.config import XyloConfig, config_from_specification, validate_config
from pondlib.devices.xylo.limits import XyloLimits, get_limits
from pondlib.errors import ConfigError, SimulationError
from pondlib.validate import as_int_array, check_bool, check_float

__all__ = ["XyloSim", "RECORD_KEYS", "STATE_KEYS"]

#: Keys of the record dict, in order.
RECORD_KEYS = ("Vmem", "Isyn", "Isyn2", "Spikes", "Vmem_out", "Isyn_out")
#: Keys of the state dict, in order.
STATE_KEYS = ("Vmem", "Isyn", "Isyn2", "Spikes", "Vmem_out", "Isyn_out")

_MAX_INPUT = 15  # 4-bit input event counter per channel per step
_MAX_SPIKES_HID = 31  # 5-bit hidden spike counter per step
_I16_MIN = -32768  # 16-bit signed state registers
_I16_MAX = 32767


# ------------------------------------------------------------------------------------------------
# The kernels
# ------------------------------------------------------------------------------------------------
# Two builds of one event-driven algorithm, equal integer for integer (tests/devices/xylo/test_sim_c.py):
# C (csrc/xylo_sim.c, built by the system C compiler on its first use and cached on disk by
# pondlib.cprogram.native: about a second once per installation and machine, milliseconds per process
# after that) and numba (sim_kernels.py: ~8 s to compile once per installation), imported only where no
# C compiler exists (or PONDLIB_CC=none). Internal layout (built once per simulator in XyloSim.__init__):
# state and parameters are int32 arrays (every value fits in 16 bits); the two hidden synapses are one
# flat array ``isyn = [synapse 0 of all N | synapse 1 of all N]``; each projection is its per-source
# sparse lists (_csr); input counts are uint8 (already clipped to 15). Both kernels work in place on
# these arrays (the C kernel through ctypes pointers: nothing is copied).
_SOURCE = Path(__file__).resolve().parent / "csrc" / "xylo_sim.c"
_ABI = 2  # pond_xylo_abi() of the C file: the layout of _Net and _Run
_PTR = ctypes.c_void_p
_I64 = ctypes.c_int64


class _Proj(ctypes.Structure):
    # xylo_proj of csrc/xylo_sim.c: one projection's sparse lists (idx uint16, or uint32 when wide).
    _fields_ = [("ptr", _PTR), ("idx", _PTR), ("w", _PTR), ("wmax", _PTR), ("wide", _I64)]


_NET_ARRAYS = ("dash_mem", "dash_syn", "thr", "bias", "alias", "dash_mem_out", "dash_syn_out", "thr_out", "bias_out")


class _Net(ctypes.Structure):
    # xylo_net of csrc/xylo_sim.c: the configuration (pointers into XyloSim's own parameter arrays).
    _fields_ = [
        ("proj_in", _Proj),
        ("proj_rec", _Proj),
        ("proj_out", _Proj),
        *((name, _I64) for name in ("k", "n_in", "n_hid", "n_out")),
        *((name, _PTR) for name in _NET_ARRAYS),
    ]


_RUN_ARRAYS = ("vmem", "isyn", "spikes", "vmem_out", "isyn_out", "out")
_RUN_RECORDS = ("r_vmem", "r_isyn", "r_isyn2", "r_spk", "r_vmem_out", "r_isyn_out")


class _Run(ctypes.Structure):
    # xylo_run of csrc/xylo_sim.c: one call's input, state, output and records (batch-major, C order).
    _fields_ = [
        ("x", _PTR),
        *((name, _I64) for name in ("batch", "steps", "record", "serial")),
        *((name, _PTR) for name in _RUN_ARRAYS + _RUN_RECORDS),
    ]


_engines: dict[str, Any] = {}
_engines_lock = threading.Lock()
# In a process forked from this one the C kernel runs its samples serially: GNU OpenMP's worker threads
# do not survive a fork, and a parallel region in the child would wait for them forever.
_process = {"forked": False}
os.register_at_fork(after_in_child=lambda: _process.update(forked=True))


def _c_library() -> ctypes.CDLL | None:
    """The C kernel's library (built and cached on first use), or None where it cannot be built."""
    with _engines_lock:
        if "c" not in _engines:
            lib = native.load("pond_xylo_sim", _SOURCE)
            if lib is not None:
                lib.pond_xylo_abi.restype = ctypes.c_int
                lib.pond_xylo_run.restype = ctypes.c_int
                lib.pond_xylo_run.argtypes = (ctypes.POINTER(_Net), ctypes.POINTER(_Run))
                if lib.pond_xylo_abi() != _ABI:
                    lib = None
            _engines["c"] = lib
        return _engines["c"]


def prebuild() -> list[threading.Thread]:
    """Start building the C kernel in a background thread ahead of the simulator's first run (the hook
    :meth:`pondlib.devices.core.device.Device.prebuild`; :func:`pondlib.cprogram.native.prebuild`): the
    started thread, or none where the kernel is loaded already or no compiler is configured. Never
    raises; the first :class:`XyloSim` run waits for the build (or uses numba where it failed). A kernel
    loaded already is skipped by :func:`~pondlib.cprogram.native.prebuild` itself."""
    return native.prebuild([("pond_xylo_sim", _SOURCE, ())])


def _default_engine() -> str:
    """``"c"`` where the C kernel builds (the usual case), else ``"numba"``."""
    return "c" if _c_library() is not None else "numba"


def _pointer(a: np.ndarray) -> int | None:
    # The address of a C-contiguous, writable-where-written array (None for an empty placeholder).
    assert a.flags.c_contiguous, "kernel arrays are built C-contiguous"
    return a.ctypes.data if a.size else None


def _proj(ptr: np.ndarray, idx: np.ndarray, w: np.ndarray, wmax: np.ndarray) -> _Proj:
    return _Proj(_pointer(ptr), _pointer(idx), _pointer(w), _pointer(wmax), int(idx.dtype == np.uint32))


# ------------------------------------------------------------------------------------------------
# Python front end
# ------------------------------------------------------------------------------------------------
def _delivered(w: np.ndarray, shift: int) -> np.ndarray:
    """``wrap16(w << shift)``: the chip narrows the shifted weight to 16 bits with wrap-around."""
    v = np.asarray(w, dtype=np.int64) << np.int64(shift)  # |w| <= 128, shift <= 15: no int64 overflow
    return ((v + 32768) & 0xFFFF) - 32768


def _csr(w: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per-source sparse lists of a dense ``(pre, post[, syn])`` matrix of delivered weights.

    Returns ``(ptr, idx, weight, wmax)``: the entries of source ``j`` are ``ptr[j]:ptr[j + 1]``
    in ascending (post, syn) order; ``idx = syn * N_post + post`` is the flat index into the kernel's
    ``[synapse 0 | synapse 1]`` state (uint16, uint32 beyond 65536 targets); ``weight`` is int16;
    ``ptr`` and ``wmax`` are int32; ``wmax[j]`` is the largest ``|weight|`` of source ``j`` (0 if it
    has none). Zero delivered weights are dropped (they change nothing).

    Example:
        >>> ptr, idx, w, wmax = _csr(np.array([[[0, 3], [-5, 0]], [[0, 0], [0, 0]]]))
        >>> ptr.tolist(), idx.tolist(), w.tolist(), wmax.tolist()  # source 0: (post 0, syn 1), (post 1, syn 0)
        ([0, 2, 2], [2, 1], [3, -5], [5, 0])
    """
    if w.ndim == 2:
        w = w[:, :, None]
    pre, post, syn = np.nonzero(w)
    ptr = np.zeros(w.shape[0] + 1, dtype=np.int32)
    np.cumsum(np.bincount(pre, minlength=w.shape[0]), out=ptr[1:])
    weight = w[pre, post, syn].astype(np.int16)  # delivered weights are 16-bit
    wmax = np.zeros(w.shape[0], dtype=np.int32)
    np.maximum.at(wmax, pre, np.abs(weight.astype(np.int32)))
    idx = syn * w.shape[1] + post
    return ptr, idx.astype(np.uint16 if w.shape[1] * w.shape[2] <= 1 << 16 else np.uint32), weight, wmax


def _per_sample(st: dict[str, np.ndarray], batch: int) -> dict[str, np.ndarray]:
    """An unbatched state repeated for every sample of a batch (fresh, writable, C-contiguous copies)."""
    return {key: np.repeat(v[None], batch, axis=0) for key, v in st.items()}


def _where(index: tuple[int, ...]) -> str:
    return "x[" + ", ".join(str(int(i)) for i in index) + "]"


class XyloSim:
    """Bit-exact, event-driven simulator of one Xylo core configured by a :class:`XyloConfig`.

    Build it with :meth:`from_config` or :meth:`from_specification` (both validate and raise
    :class:`~pondlib.errors.ConfigError` with every problem), then call :meth:`evolve` (or the simulator
    itself, as Rockpool modules are called: ``sim(x, record=True)``).

    Args:
        config: the configuration (validated against ``limits``, default its ``limits_name``).
        dt: overrides ``config.dt`` (s, finite and > 0); it only labels time.
        limits: the Xylo variant to validate against.
    """

    def __init__(self, config: XyloConfig, dt: float | None = None, limits: XyloLimits | str | None = None) -> None:
        if not isinstance(config, XyloConfig):
            raise ConfigError(
                "not a XyloConfig",
                value=type(config).__name__,
                where="XyloSim",
                fix="build one with config_from_specification or XyloConfig(...)",
            )
        if dt is not None:
            dt = check_float(
                dt, "dt", lo=0.0, lo_open=True, where="XyloSim", error=ConfigError, fix="pass dt in seconds"
            )
        problems = validate_config(config, limits)
        if problems:
            raise ConfigError(problems=problems, where="XyloSim")
        self.config = config
        self.limits = get_limits(config.limits_name if limits is None else limits)
        self.dt = float(config.dt if dt is None else dt)
        self.k = config.n_synapses
        self.n_input, self.n_hidden, self.n_output = config.n_input, config.n_hidden, config.n_output

        n_hid, n_out = self.n_hidden, self.n_output
        self._weights = (
            *_csr(_delivered(config.weights_in, config.weight_shift_in)),
            *_csr(_delivered(config.weights_rec, config.weight_shift_rec)),
            *_csr(_delivered(config.weights_out, config.weight_shift_out)),
        )
        i32 = lambda a, n: np.ascontiguousarray(np.broadcast_to(a, (n,)), dtype=np.int32)  # noqa: E731
        bias_on = bool(config.bias_enable)
        # Kernel parameters (see _run_sample): a disabled bias is passed as zeros.
        self._neuron = (
            self.k,
            i32(config.dash_mem, n_hid),
            np.concatenate([i32(config.dash_syn, n_hid), i32(config.dash_syn_2, n_hid)]),
            i32(config.threshold, n_hid),
            i32(config.bias if bias_on else 0, n_hid),
            i32(config.aliases, n_hid),
            i32(config.dash_mem_out, n_out),
            i32(config.dash_syn_out, n_out),
            i32(config.threshold_out, n_out),
            i32(config.bias_out if bias_on else 0, n_out),
        )
        self._net = self._c_net()
        self._engine: str | None = None  # chosen on the first run (_default_engine)
        self._state: dict[str, np.ndarray] | None = None
        self._batch: int | None = None

    def _c_net(self) -> _Net:
        """The C kernel's view of the configuration arrays (pointers: the arrays live as long as self)."""
        w = self._weights
        return _Net(
            _proj(*w[0:4]),
            _proj(*w[4:8]),
            _proj(*w[8:12]),
            self.k,
            self.n_input,
            self.n_hidden,
            self.n_output,
            *(_pointer(a) for a in self._neuron[1:]),
        )

    def __repr__(self) -> str:
        return (
            f"XyloSim({self.limits.name}: N_in={self.n_input}, N_hid={self.n_hidden}, N_out={self.n_output}, "
            f"k={self.k}, dt={self.dt!r})"
        )

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_config(cls, config: XyloConfig, dt: float | None = None) -> XyloSim:
        """A simulator for ``config`` (validated against its ``limits_name``); ``dt`` overrides its dt."""
        return cls(config, dt=dt)

    @classmethod
    def from_specification(cls, spec: Any = None, /, limits: XyloLimits | str | None = None, **fields: Any) -> XyloSim:
        """A simulator for a quantized specification; raises ConfigError listing every problem.

        Rockpool's ``XyloSim.from_specification(**spec)`` works too (the fields as keyword arguments,
        as :func:`~pondlib.devices.xylo.config.config_from_specification` takes them).
        """
        config, ok, _msg = config_from_specification(spec, limits, **fields)
        if not ok:
            raise ConfigError(problems=validate_config(config, limits), where="XyloSim.from_specification")
        return cls(config, limits=limits)

    # -- state ----------------------------------------------------------------------------------
    def reset_state(self) -> None:
        """Zero every state register (and forget the batch size)."""
        self._state = None
        self._batch = None

    def _zero_state(self, lead: tuple[int, ...]) -> dict[str, np.ndarray]:
        # Internal registers: int32, "Isyn" holds [synapse 0 | synapse 1] (length 2 N, see the kernel).
        z = lambda n: np.zeros(lead + (n,), dtype=np.int32)  # noqa: E731
        return {
            "Vmem": z(self.n_hidden),
            "Isyn": z(2 * self.n_hidden),
            "Spikes": z(self.n_hidden),
            "Vmem_out": z(self.n_output),
            "Isyn_out": z(self.n_output),
        }

    def _public(self, st: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        i64 = lambda a: np.array(a, dtype=np.int64)  # noqa: E731 (a copy)
        n = self.n_hidden
        return {
            "Vmem": i64(st["Vmem"]),
            "Isyn": i64(st["Isyn"][..., :n]),
            "Isyn2": i64(st["Isyn"][..., n:]),
            "Spikes": i64(st["Spikes"]),
            "Vmem_out": i64(st["Vmem_out"]),
            "Isyn_out": i64(st["Isyn_out"]),
        }

    @property
    def state(self) -> dict[str, np.ndarray]:
        """A copy of the current state (zeros, unbatched, before the first run or after a reset)."""
        return self._public(self._state if self._state is not None else self._zero_state(()))

    # -- input checks ---------------------------------------------------------------------------
    def _check_input(self, x: Any) -> tuple[np.ndarray, bool]:
        fix = "pass non-negative integer event counts of shape (T, N_in) or (B, T, N_in)"
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError):
            raise SimulationError(
                "input is not an array",
                value="a ragged nested sequence",
                limit="a rectangular array",
                where="x",
                fix=fix,
            ) from None
        if arr.dtype.kind not in "biuf":
            raise SimulationError(
                "input dtype", value=str(arr.dtype), limit="an integer, bool or float dtype", where="x", fix=fix
            )
        if arr.ndim not in (2, 3):
            raise SimulationError(
                "input dimensions",
                value=f"shape {arr.shape} (ndim {arr.ndim})",
                limit="(T, N_in) or (B, T, N_in)",
                where="x",
                fix=fix,
            )
        if arr.ndim == 3 and arr.shape[0] == 0:
            raise SimulationError(
                "batch size", value=0, limit=">= 1 sample", where="x.shape[0]", fix="pass at least one sample"
            )
        if arr.shape[-1] != self.n_input:
            raise SimulationError(
                "input channel count",
                value=arr.shape[-1],
                limit=f"N_in = {self.n_input} (the configuration's input channels)",
                where="x.shape[-1]",
                fix=fix,
            )
        if arr.dtype.kind == "f":
            finite = np.isfinite(arr)
            safe = np.where(finite, arr, 0.0)
            bad = ~finite | (safe < 0) | (safe != np.floor(safe))
            if bad.any():
                idx = tuple(np.argwhere(bad)[0])
                v = arr[idx]
                kind = (
                    "non-finite input event count"
                    if not np.isfinite(v)
                    else "negative input event count"
                    if v < 0
                    else "non-integer input event count"
                )
                raise SimulationError(kind, value=float(v), limit="a non-negative integer", where=_where(idx), fix=fix)
        elif arr.dtype.kind == "i":
            bad = arr < 0
            if bad.any():
                idx = tuple(np.argwhere(bad)[0])
                raise SimulationError(
                    "negative input event count",
                    value=int(arr[idx]),
                    limit="a non-negative integer",
                    where=_where(idx),
                    fix=fix,
                )
        # The chip's 4-bit input counter clips counts above 15 to 15 (documented hardware
        # behaviour, also done by the kernel); clipping here first keeps huge values castable.
        # uint8 counts: 8x less memory traffic than int64 for the kernel's per-step channel scan.
        if arr.dtype.kind == "b":
            xc = np.ascontiguousarray(arr, dtype=np.uint8)
        else:
            xc = np.ascontiguousarray(np.minimum(arr, _MAX_INPUT), dtype=np.uint8)
        return xc, arr.ndim == 3

    def _check_state(self, state: Any, batch: int | None) -> dict[str, np.ndarray]:
        """A state passed back to :meth:`evolve`, as the internal (writable, int32) registers."""
        where = "XyloSim.evolve(state=...)"
        fix = "pass a state returned by evolve() (or sim.state) for the same configuration"
        if not isinstance(state, Mapping):
            raise SimulationError(
                "state", value=type(state).__name__, limit="a dict of state arrays", where=where, fix=fix
            )
        unknown = sorted(str(k) for k in state if k not in STATE_KEYS)
        missing = [k for k in STATE_KEYS if k not in state]
        if unknown or missing:
            raise SimulationError(
                "state keys",
                value=f"unknown {unknown}, missing {missing}",
                limit=list(STATE_KEYS),
                where=where,
                fix=fix,
            )
        sizes = {"Vmem_out": self.n_output, "Isyn_out": self.n_output}
        ranges = {"Spikes": (0, _MAX_SPIKES_HID)}
        arrays: dict[str, np.ndarray] = {}
        lead: tuple[int, ...] | None = None
        for key in STATE_KEYS:
            lo, hi = ranges.get(key, (_I16_MIN, _I16_MAX))
            arr = as_int_array(
                state[key],
                f"state[{key!r}]",
                lo=lo,
                hi=hi,
                where=where,
                error=SimulationError,
                fix=fix,
                allow_empty=True,
            )
            n = sizes.get(key, self.n_hidden)
            if arr.ndim not in (1, 2) or arr.shape[-1] != n:
                raise SimulationError(
                    f"state[{key!r}] shape", value=arr.shape, limit=f"(N,) or (B, N) with N = {n}", where=where, fix=fix
                )
            if lead is None:
                lead = arr.shape[:-1]
            elif arr.shape[:-1] != lead:
                raise SimulationError(
                    f"state[{key!r}] shape",
                    value=arr.shape,
                    limit=f"the batch shape {lead} of the other entries",
                    where=where,
                    fix=fix,
                )
            arrays[key] = arr
        assert lead is not None
        if lead and (batch is None or lead[0] != batch):
            raise SimulationError(
                "state batch size",
                value=lead[0],
                limit="an unbatched state for unbatched input" if batch is None else f"{batch} (the input's batch)",
                where=where,
                fix=fix,
            )
        if self.k == 1 and np.any(arrays["Isyn2"]):
            raise SimulationError(
                "state['Isyn2']", value="non-zero", limit="zeros (one synapse per neuron)", where=where, fix=fix
            )
        st = {
            "Vmem": arrays["Vmem"],
            "Isyn": np.concatenate([arrays["Isyn"], arrays["Isyn2"]], axis=-1),
            "Spikes": arrays["Spikes"],
            "Vmem_out": arrays["Vmem_out"],
            "Isyn_out": arrays["Isyn_out"],
        }
        return {key: np.array(v, dtype=np.int32, order="C") for key, v in st.items()}

    # -- run ------------------------------------------------------------------------------------
    def __call__(
        self, x: Any, record: bool = False, state: Mapping[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Same as :meth:`evolve` (Rockpool modules are called: ``out, state, rec = sim(x, record=True)``)."""
        return self.evolve(x, record=record, state=state)

    @property
    def engine(self) -> str:
        """The kernel that runs this simulator: ``"c"`` (built from C by the system compiler on first use,
        then cached on disk) or ``"numba"`` (where no C compiler exists, or ``PONDLIB_CC=none``); both give
        the same integers.

        Example:
            >>> from pondlib.devices.xylo.config import XyloConfig
            >>> one = [[[1]]]
            >>> cfg = XyloConfig(weights_in=one, weights_rec=one, weights_out=[[1]], dash_mem=[1], dash_syn=[1],
            ...                  dash_syn_2=[0], dash_mem_out=[1], dash_syn_out=[1], threshold=[1], bias=[0],
            ...                  threshold_out=[1], bias_out=[0], aliases=[-1])
            >>> XyloSim.from_config(cfg).engine in ("c", "numba")
            True
        """
        if self._engine is None:
            self._engine = _default_engine()
        return self._engine

    def _run_kernel(
        self, xc: np.ndarray, batched: bool, st: dict[str, np.ndarray], out: np.ndarray, record: bool, recs: list
    ) -> None:
        """Run the kernel of :attr:`engine` on the internal arrays (state, output and records in place)."""
        arrays = (st["Vmem"], st["Isyn"], st["Spikes"], st["Vmem_out"], st["Isyn_out"], out)
        lib = _c_library() if self.engine == "c" else None
        if lib is None:
            from pondlib.devices.xylo import sim_kernels  # numba: imported only on this path

            kernel = sim_kernels.run_batch if batched else sim_kernels.run_sample
            kernel(xc, *self._weights, *self._neuron, *arrays[:5], out, bool(record), *recs)
            return
        steps = xc.shape[-2]
        run = _Run(
            _pointer(xc),
            xc.shape[0] if batched else 1,
            steps,
            int(record),
            int(_process["forked"]),
            *(_pointer(a) for a in arrays),
            *((_pointer(a) for a in recs) if record else (None,) * 6),
        )
        if lib.pond_xylo_run(ctypes.byref(self._net), ctypes.byref(run)) != 0:
            n = self.n_hidden
            raise SimulationError(
                "scratch memory of the C kernel",
                value=f"{4 * (5 * n + 2 * self.n_output + 2) + 64 * ((n + 63) // 64 + 1)} bytes per thread",
                limit="the free memory",
                where="XyloSim.evolve",
                fix="free memory (the scratch is per thread: OMP_NUM_THREADS sets how many)",
            )

    def evolve(
        self, x: Any, record: bool = False, state: Mapping[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Run the core on input event counts ``x`` from the current state (or from ``state``).

        Args:
            x: ``(T, N_in)`` or ``(B, T, N_in)`` non-negative integer event counts (any integer or bool
                dtype, or float holding integers). Counts above 15 are clipped to 15 as the chip does
                (huge counts included: the chip's 4-bit input counter saturates, nothing overflows).
                An empty time axis (``T = 0``) returns empty outputs and leaves the state unchanged.
            record: also return the recorded states (see the module docstring); a bool.
            state: start from this state (a dict as returned by :meth:`evolve` or :attr:`state`, entries
                ``(N,)`` or, for batched input, ``(B, N)``) instead of the current one.

        Returns:
            ``(output, state, record)``: output spikes ``(T, N_out)`` / ``(B, T, N_out)`` (int32),
            the state after the run (copies), and the record dict (empty when ``record`` is False).

        Raises:
            SimulationError: bad input (naming the first offending index), an empty batch, a bad
                ``state`` (keys, shape, batch size, values outside the registers), or a batch size that
                differs from the batched state of a previous call (call :meth:`reset_state`).
        """
        record = check_bool(record, "record", where="XyloSim.evolve", error=SimulationError)
        xc, batched = self._check_input(x)
        st = self._state
        if state is not None:
            st = self._check_state(state, xc.shape[0] if batched else None)
            if batched and st["Vmem"].ndim == 1:
                B = xc.shape[0]
                st = _per_sample(st, B)
        elif batched:
            B = xc.shape[0]
            if st is None:
                st = self._zero_state((B,))
            elif self._batch is None:
                # An unbatched state is broadcast to every sample of the batch.
                st = _per_sample(st, B)
            elif self._batch != B:
                raise SimulationError(
                    "batch size",
                    value=B,
                    limit=f"{self._batch} (the batched state)",
                    where="x.shape[0]",
                    fix="call reset_state() before running a different batch size",
                )
        else:
            if st is None:
                st = self._zero_state(())
            elif self._batch is not None:
                raise SimulationError(
                    "unbatched input after a batched run",
                    value=f"shape {xc.shape}",
                    limit=f"(B={self._batch}, T, N_in)",
                    where="x",
                    fix="call reset_state() before running unbatched input",
                )
        lead = xc.shape[:-1]  # (T,) or (B, T)
        out = np.zeros(lead + (self.n_output,), dtype=np.int32)
        if record:
            recs = [np.zeros(lead + (n,), dtype=np.int32) for n in (self.n_hidden,) * 4 + (self.n_output,) * 2]
        else:
            empty = (1, 0, 0) if batched else (0, 0)
            recs = [np.zeros(empty, dtype=np.int32) for _ in range(6)]
        self._run_kernel(xc, batched, st, out, record, recs)
        self._state = st
        self._batch = xc.shape[0] if batched else None
        rec_dict = dict(zip(RECORD_KEYS, recs)) if record else {}
        return out, self._public(st), rec_dict
