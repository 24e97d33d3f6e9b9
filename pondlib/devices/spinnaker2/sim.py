r"""Bit-precise SpiNNaker2 simulators: float32 LIF populations (SNN) and int8 MLA layers (DNN).

**SNN** (:class:`SpiNNaker2Sim`). Per tick ``t`` and population, with every value ``float32`` and every
operation rounded to float32 (round to nearest even) unless ``fma`` is on:

.. code-block:: text

    E, H   = integer sums of the exc / inh weight magnitudes arriving at tick t (exact, int64)
    lif:           I = f32(E - H)                                  # one rounding (exact below 2^24)
    lif_curr_exp:  i_exc = exc_decay * i_exc + f32(E)             # fma: fmaf(exc_decay, i_exc, f32(E))
                   i_inh = inh_decay * i_inh + f32(H)
                   I = i_exc - i_inh
    if refrac > 0: refrac -= 1; v unchanged; no spike
    else:          v = (alpha * v + i_offset) + I                   # order "offset_first" (default)
                     = (alpha * v + I) + i_offset                   # order "input_first"
                   (fma: the product and the first addend are one fmaf, one rounding)
                   spike = v > threshold     (option: v >= threshold)
                   if spike: v = v - threshold (default, "subtract")   or  v = v_reset ("to_v_reset");
                             refrac = t_refrac

Every source (the input and each population) emits its spikes of tick ``t`` into a ring buffer of
``max_delay + 2`` slots per target population: a spike at tick ``t`` through a synapse of delay ``d``
is part of ``E``/``H`` at tick ``t + 1 + d``. Input ``x[b, t, c]`` is the number of spikes source ``c``
emits at tick ``t`` (a non-negative integer; each one is a packet; booleans count as 0/1). The weights
the simulator uses are decoded from the configuration's 16-bit synapse words (an encoding bug changes
the result).

Input is checked once per call, before any state changes (:func:`~pondlib.devices.core.inputs.integer_input`):
NaN, fractions, negative counts, complex, strings, ragged, empty or mis-shaped input raise
:class:`~pondlib.errors.SimulationError`, and so do counts above :attr:`SpiNNaker2Sim.max_input_count`,
the largest count per source and tick whose synaptic sums stay exact (below 2^53) for this
configuration: beyond it the sums would silently lose bits or wrap.

The fused multiply-add is emulated exactly: the float32 product is exact in float64 (24 + 24 bits of
significand fit in 53), the sum is formed in float64 with its exact error (TwoSum), rounded to odd in
float64 and then to float32; rounding to odd with 53 >= 24 + 2 bits before the final rounding gives
the correctly rounded single-rounding result (Boldo & Melquiond, *Emulation of FMA and correctly
rounded sums: proved algorithms using rounding to odd*, IEEE TC 2008). Tested against C ``fmaf``.

Record (``record=True``), time first, a leading ``B`` axis for batched input; for each population
``P``:

==================  ==========  =========================================================
key                 dtype       content at tick ``t`` (shape (T, N_P))
==================  ==========  =========================================================
``P.v``             float32     membrane after spike and reset
``P.i_syn``         float32     the current ``I`` that entered the membrane update
``P.input``         int64       arriving synaptic input ``E - H`` (exact integer)
``P.spikes``        int32       spikes (0 or 1)
==================  ==========  =========================================================

The output is the output population's spikes (int32, (T, N_out) or (B, T, N_out)). The state (per
population ``P.v``, ``P.i_exc``, ``P.i_inh``, ``P.refrac``, ``P.buf_exc``, ``P.buf_inh`` (B, slots, N)
and ``tick``) persists across :meth:`SpiNNaker2Sim.evolve` calls until
:meth:`~SpiNNaker2Sim.reset_state`.

**DNN** (:class:`DNNSim`, :func:`mla_layer`): per layer, int8 activations ``x`` (K,) and weights ``W``
(K, N), int32 bias ``b`` (N,):

.. math::

    acc = \sum_k x_k W_{kn} + b_n \ \ (\text{exact}), \qquad
    \text{acc checked against } [-2^{a-1}, 2^{a-1}-1] \ (a = \text{acc\_bits}), \\
    y = \mathrm{sat}_8(acc \gg \text{shift}), \qquad y = \max(y, 0) \ \text{with ReLU}

``>>`` is an arithmetic right shift (floor). With ``overflow="error"`` an accumulator outside the
range raises :class:`~pondlib.errors.SimulationError`; with ``"wrap"`` it wraps (two's complement,
``acc_bits`` wide), as the hardware register does.

Example (one neuron, alpha = 0.5, threshold 2, one input spike per tick through weight 1):
    >>> import numpy as np
    >>> from pondlib.devices.spinnaker2.specification import LIFOptions
    >>> p = LIFParams.from_arrays(threshold=[2.0], alpha=[0.5])
    >>> s = LIFState.zeros((1,), 1)
    >>> vs = []
    >>> for t in range(4):
    ...     spk, s = lif_step(p, s, np.array([[1]]), np.array([[0]]), False, LIFOptions())
    ...     vs.append((float(s.v[0, 0]), int(spk[0, 0])))
    >>> vs     # 1, 1.5, 1.75, 1.875: never above 2
    [(1.0, 0), (1.5, 0), (1.75, 0), (1.875, 0)]
    >>> bool(f32_fma(np.float32(0.1), np.float32(3.0), np.float32(-0.3)) == np.float32(
    ...     np.float64(np.float32(0.1)) * 3.0 + np.float64(np.float32(-0.3))))
    True
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from pondlib.devices.core.inputs import integer_input
from pondlib.devices.core.intmath import sat, wrap
from pondlib.devices.spinnaker2.config import SpiNNaker2Config, decode_words, validate_config
from pondlib.devices.spinnaker2.dnn import DNNConfig
from pondlib.devices.spinnaker2.image import parse_image, read_layer_block, write_times
from pondlib.devices.spinnaker2.specification import NEURON_MODELS, LIFOptions
from pondlib.devices.spinnaker2.timing import PAPER_MODEL, TimingModel, estimate
from pondlib.errors import ConfigError, SimulationError
from pondlib.validate import as_float_array, as_int_array, check_bool, check_choice, check_int, check_type

__all__ = [
    "SpiNNaker2Sim",
    "DNNSim",
    "mla_register",
    "LIFParams",
    "LIFState",
    "lif_step",
    "f32_fma",
    "mla_layer",
    "run_dram_image",
    "POP_RECORD_KEYS",
    "POP_STATE_KEYS",
]

#: Per-population record keys (prefixed by the population name and a dot).
POP_RECORD_KEYS = ("v", "i_syn", "input", "spikes")
#: Per-population state keys (prefixed by the population name and a dot), plus ``tick``.
POP_STATE_KEYS = ("v", "i_exc", "i_inh", "refrac", "buf_exc", "buf_inh")

_F32 = np.float32


# ------------------------------------------------------------------------------------------------
# float32 arithmetic
# ------------------------------------------------------------------------------------------------
def f32_fma(a: Any, b: Any, c: Any) -> np.ndarray:
    """``fmaf(a, b, c)``: ``a * b + c`` with a single rounding to float32 (see the module docstring).

    Inputs are real numbers within float32 (scalars or arrays, broadcast).

    Raises:
        SimulationError: NaN, infinities, values beyond float32, complex or non-numeric operands.
    """
    ops = [
        as_float_array(v, name, where="f32_fma", error=SimulationError, float32=True)
        for name, v in (("a", a), ("b", b), ("c", c))
    ]
    with np.errstate(over="ignore", invalid="ignore"):
        out = _fma(*ops)
    if not np.all(np.isfinite(out)):
        raise SimulationError(
            "fmaf result",
            value="beyond float32",
            limit="a finite float32",
            where="f32_fma",
            fix="pass smaller operands",
        )
    return out


def _fma(a: Any, b: Any, c: Any) -> np.ndarray:
    """:func:`f32_fma` on checked operands (the simulator's inner loop: values bounded by the configuration)."""
    a64 = np.asarray(a, dtype=_F32).astype(np.float64)
    b64 = np.asarray(b, dtype=_F32).astype(np.float64)
    c64 = np.asarray(c, dtype=_F32).astype(np.float64)
    p = a64 * b64  # exact: 48 significant bits fit in float64's 53
    s = p + c64  # rounded once in float64 ...
    bp = s - p  # ... and its exact error e, s + e = p + c (TwoSum)
    e = (p - (s - bp)) + (c64 - bp)
    bits = s.view(np.int64) if s.ndim else np.asarray(s).reshape(1).view(np.int64)
    even = (bits.reshape(np.shape(s)) & 1) == 0
    # Round to odd: an inexact sum with an even last bit moves one ulp toward the exact value.
    toward = np.where(e > 0, np.inf, -np.inf)
    s_odd = np.where((e != 0) & even, np.nextafter(s, toward), s)
    return np.asarray(s_odd).astype(_F32)  # final round to nearest even (float32)


class LIFParams(NamedTuple):
    """Per-neuron float32 parameters (N,) of one population."""

    threshold: np.ndarray
    alpha: np.ndarray
    i_offset: np.ndarray
    v_reset: np.ndarray
    exc_decay: np.ndarray
    inh_decay: np.ndarray
    t_refrac: np.ndarray  # int64 ticks

    @classmethod
    def from_arrays(
        cls,
        *,
        threshold: Any,
        alpha: Any,
        i_offset: Any = 0.0,
        v_reset: Any = 0.0,
        exc_decay: Any = 0.0,
        inh_decay: Any = 0.0,
        t_refrac: Any = 0,
    ) -> LIFParams:
        """Parameters from numbers or arrays (broadcast to the threshold's shape (N,), cast to float32).

        Raises:
            ConfigError: a value that is not a finite real number within float32, a threshold <= 0, a
                decay (``alpha``, ``exc_decay``, ``inh_decay``) outside [0, 1], a negative or fractional
                ``t_refrac``, or an array that does not broadcast to (N,).
        """
        where = "LIFParams.from_arrays"

        def f32(value: Any, name: str, lo: float | None = None, hi: float | None = None) -> np.ndarray:
            arr = as_float_array(value, name, lo=lo, hi=hi, where=where, error=ConfigError, float32=True, ndim=(0, 1))
            return arr

        thr = np.atleast_1d(f32(threshold, "threshold"))
        if np.any(thr <= 0):
            raise ConfigError(
                "threshold",
                value=float(thr.min()),
                limit="> 0",
                where=where,
                fix="pass positive thresholds (a threshold <= 0 fires forever)",
            )
        n = thr.shape

        def fit(arr: np.ndarray, name: str) -> np.ndarray:
            if arr.ndim and arr.shape != n and arr.shape != (1,):
                raise ConfigError(
                    f"{name} shape",
                    value=arr.shape,
                    limit=f"() or {n} (the threshold's shape)",
                    where=where,
                    fix=f"pass one {name} per neuron or one for all",
                )
            return np.broadcast_to(arr, n).copy()

        return cls(
            thr.astype(_F32),
            fit(f32(alpha, "alpha", 0.0, 1.0), "alpha").astype(_F32),
            fit(f32(i_offset, "i_offset"), "i_offset").astype(_F32),
            fit(f32(v_reset, "v_reset"), "v_reset").astype(_F32),
            fit(f32(exc_decay, "exc_decay", 0.0, 1.0), "exc_decay").astype(_F32),
            fit(f32(inh_decay, "inh_decay", 0.0, 1.0), "inh_decay").astype(_F32),
            fit(
                as_int_array(t_refrac, "t_refrac", lo=0, hi=2**31 - 1, where=where, error=ConfigError, ndim=(0, 1)),
                "t_refrac",
            ),
        )


class LIFState(NamedTuple):
    """State (B, N) of one population: membrane, currents (float32), refractory counter (int64)."""

    v: np.ndarray
    i_exc: np.ndarray
    i_inh: np.ndarray
    refrac: np.ndarray

    @classmethod
    def zeros(cls, shape: tuple[int, ...], batch: int) -> LIFState:
        """An all-zero state for ``batch`` samples of neurons of ``shape``.

        Raises:
            ConfigError: ``shape`` not a tuple of whole numbers >= 1, ``batch`` not a whole number >= 1.
        """
        where = "LIFState.zeros"
        if isinstance(shape, (str, bytes)) or not isinstance(shape, (tuple, list)) or not shape:
            raise ConfigError(
                "shape", value=shape, limit="a non-empty tuple of sizes, e.g. (N,)", where=where, fix="pass (N,)"
            )
        shape = tuple(check_int(n, "shape", lo=1, hi=2**31, where=where, error=ConfigError) for n in shape)
        batch = check_int(batch, "batch", lo=1, hi=2**31, where=where, error=ConfigError)
        z = np.zeros((batch, *shape), dtype=_F32)
        return cls(z, z.copy(), z.copy(), np.zeros((batch, *shape), dtype=np.int64))


def lif_step(
    p: LIFParams, s: LIFState, exc_in: Any, inh_in: Any, has_current: bool, options: LIFOptions
) -> tuple[np.ndarray, LIFState]:
    """One tick of a population (equations in the module docstring).

    Args:
        p: parameters (N,).
        s: state (B, N).
        exc_in, inh_in: (B, N) non-negative integer sums of the arriving exc / inh weight magnitudes
            (below 2^53).
        has_current: ``lif_curr_exp`` (True) or ``lif``.
        options: comparison, reset, fma and order.

    Returns:
        ``(spikes (B, N) bool, new state)``.

    Build ``p`` with :meth:`LIFParams.from_arrays` (which checks every value); :class:`SpiNNaker2Sim`
    calls the unchecked step on its validated configuration and input.

    Raises:
        ConfigError: ``p`` not :class:`LIFParams`, ``s`` not :class:`LIFState`, ``has_current`` not a
            bool, ``options`` not valid :class:`LIFOptions`.
        SimulationError: inputs that are not non-negative whole numbers below 2^53, or states and inputs
            whose shapes are not (B, N) for the N neurons of ``p``.
    """
    where = "lif_step"
    check_type(p, "p", LIFParams, where=where, error=ConfigError, fix="build it with LIFParams.from_arrays")
    check_type(s, "s", LIFState, where=where, error=ConfigError, fix="start from LIFState.zeros((N,), B)")
    has_current = check_bool(has_current, "has_current", where=where, error=ConfigError)
    check_type(options, "options", LIFOptions, where=where, error=ConfigError)
    if options.problems():
        raise ConfigError(problems=options.problems(), where=where)
    n = np.shape(p.threshold)
    ins = [
        as_int_array(v, name, lo=0, hi=EXACT_SUM_MAX, where=where, error=SimulationError, ndim=2)
        for name, v in (("exc_in", exc_in), ("inh_in", inh_in))
    ]
    shapes = {
        "exc_in": ins[0].shape,
        "inh_in": ins[1].shape,
        **{f"s.{k}": np.shape(getattr(s, k)) for k in LIFState._fields},
    }
    want = (ins[0].shape[0], *n)
    if any(shape != want for shape in shapes.values()) or len(n) != 1:
        raise SimulationError(
            "shapes",
            value=", ".join(f"{k} {v}" for k, v in shapes.items()),
            limit=f"(B, N) = {want} for the {n} neurons of p",
            where=where,
            fix="pass one row per sample and one column per neuron",
        )
    for key in ("v", "i_exc", "i_inh"):
        as_float_array(getattr(s, key), f"s.{key}", where=where, error=SimulationError, float32=True)
    as_int_array(s.refrac, "s.refrac", lo=0, where=where, error=SimulationError)
    return _lif_step(p, s, ins[0], ins[1], has_current, options)


def _lif_step(
    p: LIFParams, s: LIFState, exc_in: np.ndarray, inh_in: np.ndarray, has_current: bool, options: LIFOptions
) -> tuple[np.ndarray, LIFState]:
    """:func:`lif_step` on trusted data (the simulator's inner loop)."""
    exc_in = np.asarray(exc_in, dtype=np.int64)
    inh_in = np.asarray(inh_in, dtype=np.int64)
    if has_current:
        e32 = exc_in.astype(_F32)  # int -> float32: round to nearest (exact below 2^24)
        h32 = inh_in.astype(_F32)
        if options.fma:
            i_exc = _fma(p.exc_decay, s.i_exc, e32)
            i_inh = _fma(p.inh_decay, s.i_inh, h32)
        else:
            i_exc = p.exc_decay * s.i_exc + e32  # two roundings: product, then sum
            i_inh = p.inh_decay * s.i_inh + h32
        current = i_exc - i_inh
    else:
        i_exc, i_inh = s.i_exc, s.i_inh
        current = (exc_in - inh_in).astype(_F32)  # exact integer difference, one rounding
    first, second = (p.i_offset, current) if options.order == "offset_first" else (current, p.i_offset)
    if options.fma:
        v_new = _fma(p.alpha, s.v, first) + second
    else:
        v_new = (p.alpha * s.v + first) + second  # each operation rounds to float32
    active = s.refrac == 0
    v_new = np.where(active, v_new, s.v)  # refractory: the membrane is held
    if options.compare == ">":
        spikes = active & (v_new > p.threshold)
    else:
        spikes = active & (v_new >= p.threshold)
    if options.reset == "subtract":
        v_new = np.where(spikes, v_new - p.threshold, v_new)  # one float32 rounding
    else:
        v_new = np.where(spikes, p.v_reset, v_new)
    refrac = np.where(spikes, p.t_refrac, np.where(active, s.refrac, s.refrac - 1))
    return spikes, LIFState(
        v_new.astype(_F32), np.asarray(i_exc, _F32), np.asarray(i_inh, _F32), refrac.astype(np.int64)
    )


#: Synaptic sums are exact (float64 products of integers, then int64) below this bound.
EXACT_SUM_MAX = 2**53 - 1


class SpiNNaker2Sim:
    """Bit-precise simulator of a :class:`SpiNNaker2Config` (equations in the module docstring).

    Example (an input spike at tick 0 through delay 2 reaches the neuron at tick 3):
        >>> import numpy as np
        >>> from pondlib import nn
        >>> from pondlib.devices.spinnaker2.mapper import mapper
        >>> from pondlib.devices.spinnaker2.config import config_from_specification
        >>> net = nn.Sequential(nn.Linear(1, 1, weight=np.ones((1, 1))), nn.LIF(1, threshold=100.0))
        >>> config, ok, _ = config_from_specification(mapper(net, neuron_model="lif", delays={"0_Linear": 2}))
        >>> sim = SpiNNaker2Sim.from_config(config)
        >>> out, state, rec = sim.evolve(np.array([[1], [0], [0], [0], [0]]), record=True)
        >>> rec["1_LIF.input"][:, 0].tolist()
        [0, 0, 0, 15, 0]
    """

    def __init__(self, config: SpiNNaker2Config, options: LIFOptions | None = None) -> None:
        problems = validate_config(config)
        if problems:
            raise ConfigError(problems=problems, where="SpiNNaker2Sim")
        opts = config.options if options is None else options
        check_type(opts, "options", LIFOptions, where="SpiNNaker2Sim", error=ConfigError)
        if opts.problems():
            raise ConfigError(problems=opts.problems(), where="SpiNNaker2Sim")
        self.config = config
        self.options = opts
        model = NEURON_MODELS[config.neuron_model]
        self.has_current = model.has_current
        self.slots = model.word.max_delay + 2
        self.pops = list(config.populations)
        self.params = {p.name: LIFParams(**p.chip_arrays()) for p in self.pops}
        sizes = {"input": config.n_input, **{p.name: p.size for p in self.pops}}
        # Decode every PE's synapse rows into dense magnitude matrices per (source, target, delay).
        acc: dict[tuple[str, str], list[np.ndarray]] = {}
        for pe in config.pes:
            lengths = np.diff(pe.row_ptr)
            if not lengths.size:
                continue
            w, d, idx = decode_words(pe.words, model.word)
            src = np.repeat(pe.row_source, lengths)
            pre = np.repeat(pe.row_neuron, lengths)
            for sid in np.unique(src):
                m = src == sid
                acc.setdefault((config.sources[int(sid)], pe.population), []).append(
                    np.stack([pre[m], pe.start + idx[m], d[m], w[m]])
                )
        # self.proj[source] = list of (target, delay, exc (N_src, N_tgt) float64, inh ...)
        self.proj: dict[str, list[tuple[str, int, np.ndarray, np.ndarray]]] = {}
        for (src, tgt), parts in acc.items():
            pre, post, d, w = np.concatenate(parts, axis=1)
            for dv in np.unique(d):
                m = d == dv
                exc = np.zeros((sizes[src], sizes[tgt]))
                inh = np.zeros((sizes[src], sizes[tgt]))
                np.add.at(exc, (pre[m], post[m]), np.maximum(w[m], 0))
                np.add.at(inh, (pre[m], post[m]), np.maximum(-w[m], 0))
                self.proj.setdefault(src, []).append((tgt, int(dv), exc, inh))
        # The largest input count per source and tick whose synaptic sums stay exact (EXACT_SUM_MAX):
        # per target neuron, count * (input weight magnitudes) + (population weight magnitudes).
        col_in = {p.name: np.zeros(p.size) for p in self.pops}
        col_pop = {p.name: np.zeros(p.size) for p in self.pops}
        for src, lst in self.proj.items():
            for tgt, _, exc, inh in lst:
                (col_in if src == "input" else col_pop)[tgt] += (exc + inh).sum(axis=0)
        limit = int(np.iinfo(np.int64).max)
        for name, cin in col_in.items():
            room = EXACT_SUM_MAX - col_pop[name]
            fed = cin > 0
            if np.any(fed):
                limit = min(limit, int(np.min(np.floor(room[fed] / cin[fed]))))
        self.max_input_count = max(limit, 0)
        self.reset_state()

    @classmethod
    def from_config(cls, config: SpiNNaker2Config, options: LIFOptions | None = None) -> SpiNNaker2Sim:
        """A simulator of ``config`` (``options`` override ``config.options``)."""
        return cls(config, options)

    def reset_state(self) -> None:
        """Forget every membrane, current, buffered spike and the tick counter."""
        self._batch: int | None = None
        self._state: dict[str, LIFState] = {}
        self._buf: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._tick = 0

    def _alloc(self, batch: int) -> None:
        if self._batch == batch:
            return
        if self._batch is not None and self._tick > 0:
            raise SimulationError(
                "batch size",
                value=batch,
                limit=self._batch,
                where="SpiNNaker2Sim.evolve",
                fix="call reset_state() before changing the batch size",
            )
        self._batch = batch
        for p in self.pops:
            self._state[p.name] = LIFState.zeros((p.size,), batch)
            z = np.zeros((batch, self.slots, p.size), dtype=np.int64)
            self._buf[p.name] = (z, z.copy())

    @property
    def state(self) -> dict[str, Any]:
        """A copy of the state (keys in the module docstring)."""
        out: dict[str, Any] = {"tick": self._tick}
        for name, s in self._state.items():
            out[f"{name}.v"], out[f"{name}.i_exc"] = s.v.copy(), s.i_exc.copy()
            out[f"{name}.i_inh"], out[f"{name}.refrac"] = s.i_inh.copy(), s.refrac.copy()
            out[f"{name}.buf_exc"], out[f"{name}.buf_inh"] = (b.copy() for b in self._buf[name])
        return out

    def evolve(self, x: Any, record: bool = False) -> tuple[np.ndarray, dict[str, Any], dict[str, np.ndarray]]:
        """Run ``T`` ticks on input spike counts ``x`` (T, N_in) or (B, T, N_in).

        Returns:
            ``(output spikes, state, record)`` (see the module docstring).
        """
        record = check_bool(record, "record", where="SpiNNaker2Sim.evolve", error=SimulationError)
        xs = integer_input(
            x,
            self.config.n_input,
            where="SpiNNaker2Sim.evolve",
            lo=0,
            fix=f"pass non-negative integer spike counts of shape (T, {self.config.n_input}) or "
            f"(B, T, {self.config.n_input})",
        )
        if int(xs.max()) > self.max_input_count:
            i = tuple(int(v) for v in np.argwhere(xs > self.max_input_count)[0])
            raise SimulationError(
                "input spike count",
                value=int(xs[i]),
                limit=f"<= {self.max_input_count} (larger counts make the synaptic sums inexact beyond 2^53)",
                where=f"SpiNNaker2Sim.evolve, x{list(i)}",
                fix="pass realistic spike counts per tick",
            )
        batched = xs.ndim == 3
        if not batched:
            xs = xs[None]
        B, T, _ = xs.shape
        self._alloc(B)
        rec: dict[str, list[np.ndarray]] = {}
        outs = []
        D = self.slots
        for t in range(T):
            tick = self._tick
            slot = tick % D
            spikes = {"input": xs[:, t].astype(np.float64)}
            for p in self.pops:
                be, bh = self._buf[p.name]
                e, h = be[:, slot].copy(), bh[:, slot].copy()
                be[:, slot] = 0
                bh[:, slot] = 0
                st = self._state[p.name]
                spk, new = _lif_step(self.params[p.name], st, e, h, self.has_current, self.options)
                self._state[p.name] = new
                spikes[p.name] = spk.astype(np.float64)
                if record:
                    cur = (new.i_exc - new.i_inh) if self.has_current else (e - h).astype(_F32)
                    for key, val in (("v", new.v), ("i_syn", cur), ("input", e - h), ("spikes", spk.astype(np.int32))):
                        rec.setdefault(f"{p.name}.{key}", []).append(val)
                if p.name == self.config.output:
                    outs.append(spk.astype(np.int32))
            # Emit this tick's spikes: they arrive at tick + 1 + delay. Sums of small integers in
            # float64 matrix products are exact (far below 2^53), then stored as int64.
            for src, lst in self.proj.items():
                s = spikes[src]
                if not s.any():
                    continue
                for tgt, d, exc, inh in lst:
                    k = (tick + 1 + d) % D
                    be, bh = self._buf[tgt]
                    be[:, k] += np.rint(s @ exc).astype(np.int64)
                    bh[:, k] += np.rint(s @ inh).astype(np.int64)
            self._tick += 1
        n_out = self.config.population(self.config.output).size
        out = np.stack(outs, axis=1) if outs else np.zeros((B, 0, n_out), np.int32)
        record_out = {k: np.stack(v, axis=1) for k, v in rec.items()}
        if not batched:
            out = out[0]
            record_out = {k: v[0] for k, v in record_out.items()}
        return out, self.state, record_out


# ------------------------------------------------------------------------------------------------
# DNN: int8 MLA layers
# ------------------------------------------------------------------------------------------------
def mla_layer(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray,
    shift: int,
    relu: bool,
    acc_bits: int,
    overflow: str = "error",
    where: str = "layer",
) -> tuple[np.ndarray, np.ndarray]:
    """One MLA layer on int8 data (equations in the module docstring).

    Args:
        x: (B, K) int8-range activations. w: (K, N) int8-range weights. b: (N,) int32 bias.
        shift: arithmetic right shift >= 0. relu: fused ReLU. acc_bits: accumulator width.
        overflow: ``"error"`` or ``"wrap"``. where: layer name for error messages.

    Returns:
        ``(y (B, N) int64 in -128..127 (0..127 with ReLU), acc (B, N) int64 as the register holds it)``.

    Example:
        >>> y, acc = mla_layer(np.array([[127, -128]]), np.array([[127], [127]]), np.array([5]),
        ...                    shift=2, relu=False, acc_bits=24)
        >>> acc.tolist(), y.tolist()     # 16129 - 16256 + 5 = -122; -122 >> 2 = -31 (floor)
        ([[-122]], [[-31]])
        >>> mla_layer(np.array([[100]]), np.array([[100]]), np.array([0]), 0, False, 8, "wrap")[1].tolist()
        [[16]]
    """
    fn = f"mla_layer({where})"
    overflow = check_choice(overflow, "overflow", ("error", "wrap"), where=fn, error=SimulationError)
    acc_bits = check_int(acc_bits, "acc_bits", lo=8, hi=62, where=fn, error=SimulationError)
    shift = check_int(shift, "shift", lo=0, hi=62, where=fn, error=SimulationError)
    relu = check_bool(relu, "relu", where=fn, error=SimulationError)
    x = as_int_array(x, "x", lo=-128, hi=127, where=fn, error=SimulationError, ndim=2)
    w = as_int_array(w, "w", lo=-128, hi=127, where=fn, error=SimulationError, ndim=2)
    b = as_int_array(b, "b", lo=-(2**31), hi=2**31 - 1, where=fn, error=SimulationError, ndim=1)
    if x.shape[1] != w.shape[0] or b.shape != (w.shape[1],):
        raise SimulationError(
            "shapes",
            value=f"x {x.shape}, w {w.shape}, b {b.shape}",
            limit="x (B, K), w (K, N), b (N,)",
            where=fn,
            fix="pass matching shapes",
        )
    return _mla(x, w, b, shift, relu, acc_bits, overflow, where)


def mla_register(acc: np.ndarray, acc_bits: int, overflow: str, where: Any) -> np.ndarray:
    """The MLA's ``acc_bits`` accumulator register holding ``acc`` (int64, any shape): ``overflow='wrap'`` keeps
    the low ``acc_bits`` (two's complement), ``'error'`` refuses a value outside
    ``[-2^(acc_bits-1), 2^(acc_bits-1) - 1]`` with a :class:`~pondlib.errors.SimulationError` located by
    ``where(index)``.

    Example:
        >>> mla_register(np.array([200, -3]), 8, "wrap", str).tolist()
        [-56, -3]
    """
    if overflow == "wrap":
        return wrap(acc, acc_bits)
    lo, hi = -(1 << (acc_bits - 1)), (1 << (acc_bits - 1)) - 1
    bad = (acc < lo) | (acc > hi)
    if np.any(bad):
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        raise SimulationError(
            "MLA accumulator overflow",
            value=int(acc[i]),
            limit=f"{lo}..{hi}",
            where=where(i),
            fix="use overflow='wrap' to model the register, a larger acc_bits, or smaller weights/inputs",
        )
    return acc


def _mla(
    x: np.ndarray, w: np.ndarray, b: np.ndarray, shift: int, relu: bool, acc_bits: int, overflow: str, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mla_layer` on checked int64 operands (int8 x and w, int32 b; K < 2^20)."""
    # Exact: |acc| <= K * 128 * 128 + 2^31 is far below 2^53, so the float64 product is exact.
    acc = np.rint(x.astype(np.float64) @ w.astype(np.float64)).astype(np.int64) + b
    if overflow in ("wrap", "error"):
        acc = mla_register(acc, acc_bits, overflow, lambda i: f"{where}, sample {i[0]}, output {i[1]}")
    else:
        raise SimulationError(
            "overflow mode",
            value=overflow,
            limit="'error' or 'wrap'",
            where=where,
            fix="pass overflow='error' or 'wrap'",
        )
    y = sat(acc >> shift, 8)  # arithmetic shift (floor), then saturate to int8
    if relu:
        y = np.maximum(y, 0)  # fused ReLU: clamp at 0
    return y, acc


class DNNSim:
    """Bit-precise integer simulator of a :class:`~pondlib.devices.spinnaker2.dnn.DNNConfig`.

    Each layer runs tile by tile, one column tile per worker PE, as the workers would; the tiles are
    joined in order. Input: int8 activations (K,) or (B, K) (quantize float input with
    :meth:`DNNConfig.quantize_input`). Output: the last layer's int8 values; record (``record=True``):
    ``"<layer>.acc"`` (B, N) accumulators and ``"<layer>.y"`` (B, N) outputs. No state.

    Example:
        >>> import numpy as np
        >>> from pondlib.devices.spinnaker2.dnn import MLP, DenseLayer, dnn_mapper
        >>> mlp = MLP((DenseLayer(np.array([[1.0, -1.0], [0.5, 0.5]]), np.zeros(2), relu=True),))
        >>> cfg = dnn_mapper(mlp, calibration=np.array([[1.0, 1.0]]))
        >>> y, _, rec = DNNSim.from_config(cfg).evolve(cfg.quantize_input(np.array([1.0, 1.0])), record=True)
        >>> y.tolist(), cfg.dequantize_output(y).tolist()
        ([96, 0], [1.5, 0.0])
    """

    def __init__(self, config: DNNConfig, overflow: str | None = None) -> None:
        check_type(
            config,
            "config",
            DNNConfig,
            where="DNNSim",
            error=ConfigError,
            fix="build one with pondlib.devices.spinnaker2.dnn_mapper",
        )
        problems = config.problems()
        if problems:
            raise ConfigError(problems=problems, where="DNNSim")
        self.config = config
        self.overflow = config.overflow if overflow is None else overflow
        check_choice(self.overflow, "overflow", ("error", "wrap"), where="DNNSim", error=ConfigError)

    @classmethod
    def from_config(cls, config: DNNConfig, overflow: str | None = None) -> DNNSim:
        """A simulator of ``config`` (``overflow`` overrides ``config.overflow``)."""
        return cls(config, overflow)

    @classmethod
    def from_dram_image(cls, data: Any, overflow: str | None = None) -> DNNSim:
        """A simulator of the configuration stored in a DRAM image (:meth:`DNNConfig.from_dram_image`);
        :func:`run_dram_image` runs the image itself, as the scheduler PE walks it.

        Raises:
            ConfigError: data that is not a valid image (the message names the field and its offset).
        """
        return cls(DNNConfig.from_dram_image(data), overflow)

    def reset_state(self) -> None:
        """No state: a DNN layer stack is stateless."""

    def evolve(self, x: Any, record: bool = False) -> tuple[np.ndarray, dict[str, Any], dict[str, np.ndarray]]:
        """Run every layer on int8 input ``x`` (K,) or (B, K); returns ``(y, {}, record)``."""
        record = check_bool(record, "record", where="DNNSim.evolve", error=SimulationError)
        k = self.config.layers[0].weights.shape[0]
        arr = integer_input(
            x,
            k,
            where="DNNSim.evolve",
            lo=-128,
            hi=127,
            ranks=(1, 2),
            allow_float=False,
            fix=f"pass int8 values of shape ({k},) or (B, {k}): quantize float input with config.quantize_input(x)",
        )
        h = np.atleast_2d(arr)
        rec: dict[str, np.ndarray] = {}
        for layer in self.config.layers:
            ys, accs = [], []
            for a, b in layer.tiles:  # one column tile per worker PE
                y, acc = _mla(
                    h,
                    layer.weights[:, a:b],
                    layer.bias[a:b],
                    layer.shift,
                    layer.relu,
                    self.config.acc_bits,
                    self.overflow,
                    where=layer.name,
                )
                ys.append(y)
                accs.append(acc)
            h = np.concatenate(ys, axis=1)
            if record:
                rec[f"{layer.name}.acc"] = np.concatenate(accs, axis=1)
                rec[f"{layer.name}.y"] = h.copy()
        if arr.ndim == 1:
            h = h[0]
            rec = {key: v[0] for key, v in rec.items()}
        return h, {}, rec


def run_dram_image(
    data: Any, x: Any, *, overflow: str | None = None, model: TimingModel | None = None
) -> tuple[np.ndarray, bytes]:
    """Run a DRAM image (:mod:`~pondlib.devices.spinnaker2.image`) as the scheduler PE does.

    The host checks the image, writes each input sample (int8, ``K_1`` B) to the input buffer; the
    scheduler reads the global configuration, then follows the layer blocks from ``first layer`` by
    their ``next`` pointers. Per block, worker ``j`` reads the layer's input buffer (``K`` B), its
    weight tile (``K x c_j`` int8 at its address) and its biases (int32 from ``bias + 4 start``), runs the
    MLA (:func:`mla_layer`: accumulate, check or wrap at ``acc_bits``, ``>> shift``, saturate, fused
    ReLU) and writes its ``c_j`` int8 outputs at ``output + start``. The result is the last layer's
    output buffer; it equals :class:`DNNSim` bit for bit.

    The time-measurement area is filled with the timing model's cycle counts (:func:`~pondlib.
    devices.spinnaker2.timing.estimate` on the image's layers and worker splits, seconds times
    ``model.clock_hz``, each part rounded to whole cycles): per layer its start and end cycle (from the
    start of an inference: setup, then the layers in order) and its scheduling, weight fetch, MLA and
    other cycles; in the area's head the total (setup + layers + cleanup), setup and cleanup cycles,
    the number of inferences run (saturating at 2^32 - 1) and the clock in kHz.

    Args:
        data: the image bytes. x: int8 input (K,) or (B, K) (quantize float input with
            ``DNNConfig.quantize_input``). overflow: overrides the image's overflow mode.
        model: the timing coefficients (default :data:`~pondlib.devices.spinnaker2.timing.PAPER_MODEL`).

    Returns:
        ``(y, dram)``: outputs (N,) or (B, N) int64 in -128..127, and the image after the run (activation
        buffers hold the last sample's values; the time area is filled).

    Raises:
        ConfigError: an invalid image (field and offset named), a bad ``overflow`` or ``model``.
        SimulationError: input that is not int8 values of shape (K,) or (B, K); an accumulator overflow
            with ``overflow="error"``.

    Example:
        >>> from pondlib.devices.spinnaker2.dnn import MLP, DenseLayer, dnn_mapper
        >>> from pondlib.devices.spinnaker2.image import read_times
        >>> mlp = MLP((DenseLayer(np.array([[1.0, -1.0], [0.5, 0.5]]), np.zeros(2), relu=True),))
        >>> cfg = dnn_mapper(mlp, calibration=np.array([[1.0, 1.0]]))
        >>> y, dram = run_dram_image(cfg.to_dram_image(), np.array([64, 64]))
        >>> y.tolist(), DNNSim.from_config(cfg).evolve(np.array([64, 64]))[0].tolist()
        ([96, 0], [96, 0])
        >>> t = read_times(dram)
        >>> t["inferences"], t["clock_khz"], t["layers"][0]["sched"]     # 13 us at 150 MHz
        (1, 150000, 1950)
    """
    where = "run_dram_image"
    cfg = DNNConfig.from_dram_image(data)  # the host's check: magic, CRC, every pointer, the chain
    img = parse_image(data)
    overflow = img.overflow if overflow is None else overflow
    check_choice(overflow, "overflow", ("error", "wrap"), where=where, error=ConfigError)
    model = PAPER_MODEL if model is None else model
    check_type(model, "model", TimingModel, where=where, error=ConfigError)
    k = img.input_size
    arr = integer_input(
        x,
        k,
        where=where,
        lo=-128,
        hi=127,
        ranks=(1, 2),
        allow_float=False,
        fix=f"pass int8 values of shape ({k},) or (B, {k}): quantize float input with config.quantize_input(x)",
    )
    dram = bytearray(bytes(data))
    rows = np.atleast_2d(arr)
    out = np.zeros((rows.shape[0], img.output_size), dtype=np.int64)
    for s, row in enumerate(rows):
        dram[img.input_addr : img.input_addr + k] = row.astype("<i1").tobytes()
        off = img.first_layer  # the scheduler PE: global configuration -> first block -> next -> ...
        while off:
            blk = read_layer_block(dram, off)
            for w in blk.workers:  # each worker PE: fetch input, weight tile, bias; MLA; write its columns
                c = w.stop - w.start
                xin = np.frombuffer(dram, "<i1", blk.k, blk.input_addr).astype(np.int64)
                wt = np.frombuffer(dram, "<i1", blk.k * c, w.weights_addr).reshape(blk.k, c).astype(np.int64)
                bias = np.frombuffer(dram, "<i4", c, blk.bias_addr + 4 * w.start).astype(np.int64)
                y, _ = _mla(xin[None], wt, bias, blk.shift, blk.relu, img.acc_bits, overflow, f"{blk.name}, input {s}")
                a = blk.output_addr + w.start
                dram[a : a + c] = y[0].astype("<i1").tobytes()
            off = blk.next
        out[s] = np.frombuffer(dram, "<i1", img.output_size, img.output_addr)
    rep = estimate(cfg, model)
    write_times(dram, rep, model.clock_hz, rows.shape[0])
    return (out[0] if arr.ndim == 1 else out), bytes(dram)
