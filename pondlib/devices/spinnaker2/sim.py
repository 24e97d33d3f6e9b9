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
emits at tick ``t`` (a non-negative integer; each one is a packet). The weights the simulator uses are
decoded from the configuration's 16-bit synapse words (an encoding bug changes the result).

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
    >>> from pondlib.devices.spinnaker2.config import LIFOptions
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

from pondlib.devices.core.intmath import sat, wrap
from pondlib.devices.spinnaker2.config import (
    NEURON_MODELS,
    LIFOptions,
    SpiNNaker2Config,
    decode_words,
    validate_config,
)
from pondlib.devices.spinnaker2.dnn import DNNConfig
from pondlib.errors import ConfigError, SimulationError

__all__ = ["SpiNNaker2Sim", "DNNSim", "LIFParams", "LIFState", "lif_step", "f32_fma", "mla_layer",
           "POP_RECORD_KEYS", "POP_STATE_KEYS"]

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

    Inputs are float32 (scalars or arrays, broadcast); finite inputs whose result is finite.
    """
    a64 = np.asarray(a, dtype=_F32).astype(np.float64)
    b64 = np.asarray(b, dtype=_F32).astype(np.float64)
    c64 = np.asarray(c, dtype=_F32).astype(np.float64)
    p = a64 * b64                       # exact: 48 significant bits fit in float64's 53
    s = p + c64                         # rounded once in float64 ...
    bp = s - p                          # ... and its exact error e, s + e = p + c (TwoSum)
    e = (p - (s - bp)) + (c64 - bp)
    bits = s.view(np.int64) if s.ndim else np.asarray(s).reshape(1).view(np.int64)
    even = (bits.reshape(np.shape(s)) & 1) == 0
    # Round to odd: an inexact sum with an even last bit moves one ulp toward the exact value.
    toward = np.where(e > 0, np.inf, -np.inf)
    s_odd = np.where((e != 0) & even, np.nextafter(s, toward), s)
    return np.asarray(s_odd).astype(_F32)   # final round to nearest even (float32)


class LIFParams(NamedTuple):
    """Per-neuron float32 parameters (N,) of one population."""

    threshold: np.ndarray
    alpha: np.ndarray
    i_offset: np.ndarray
    v_reset: np.ndarray
    exc_decay: np.ndarray
    inh_decay: np.ndarray
    t_refrac: np.ndarray   # int64 ticks

    @classmethod
    def from_arrays(cls, *, threshold: Any, alpha: Any, i_offset: Any = 0.0, v_reset: Any = 0.0,
                    exc_decay: Any = 0.0, inh_decay: Any = 0.0, t_refrac: Any = 0) -> "LIFParams":
        """Parameters from numbers or arrays (broadcast to the threshold's shape, cast to float32)."""
        thr = np.atleast_1d(np.asarray(threshold, dtype=_F32))
        f = lambda v: np.broadcast_to(np.asarray(v, dtype=_F32), thr.shape).copy()  # noqa: E731
        return cls(thr, f(alpha), f(i_offset), f(v_reset), f(exc_decay), f(inh_decay),
                   np.broadcast_to(np.asarray(t_refrac, dtype=np.int64), thr.shape).copy())


class LIFState(NamedTuple):
    """State (B, N) of one population: membrane, currents (float32), refractory counter (int64)."""

    v: np.ndarray
    i_exc: np.ndarray
    i_inh: np.ndarray
    refrac: np.ndarray

    @classmethod
    def zeros(cls, shape: tuple[int, ...], batch: int) -> "LIFState":
        """An all-zero state for ``batch`` samples of neurons of ``shape``."""
        z = np.zeros((batch, *shape), dtype=_F32)
        return cls(z, z.copy(), z.copy(), np.zeros((batch, *shape), dtype=np.int64))


def lif_step(p: LIFParams, s: LIFState, exc_in: np.ndarray, inh_in: np.ndarray, has_current: bool,
             options: LIFOptions) -> tuple[np.ndarray, LIFState]:
    """One tick of a population (equations in the module docstring).

    Args:
        p: parameters (N,). s: state (B, N). exc_in, inh_in: (B, N) non-negative integer sums of the
        arriving exc / inh weight magnitudes. has_current: ``lif_curr_exp`` (True) or ``lif``.
        options: comparison, reset, fma and order.

    Returns:
        ``(spikes (B, N) bool, new state)``.
    """
    exc_in = np.asarray(exc_in, dtype=np.int64)
    inh_in = np.asarray(inh_in, dtype=np.int64)
    if has_current:
        e32 = exc_in.astype(_F32)            # int -> float32: round to nearest (exact below 2^24)
        h32 = inh_in.astype(_F32)
        if options.fma:
            i_exc = f32_fma(p.exc_decay, s.i_exc, e32)
            i_inh = f32_fma(p.inh_decay, s.i_inh, h32)
        else:
            i_exc = p.exc_decay * s.i_exc + e32       # two roundings: product, then sum
            i_inh = p.inh_decay * s.i_inh + h32
        current = i_exc - i_inh
    else:
        i_exc, i_inh = s.i_exc, s.i_inh
        current = (exc_in - inh_in).astype(_F32)     # exact integer difference, one rounding
    first, second = (p.i_offset, current) if options.order == "offset_first" else (current, p.i_offset)
    if options.fma:
        v_new = f32_fma(p.alpha, s.v, first) + second
    else:
        v_new = (p.alpha * s.v + first) + second     # each operation rounds to float32
    active = s.refrac == 0
    v_new = np.where(active, v_new, s.v)             # refractory: the membrane is held
    if options.compare == ">":
        spikes = active & (v_new > p.threshold)
    else:
        spikes = active & (v_new >= p.threshold)
    if options.reset == "subtract":
        v_new = np.where(spikes, v_new - p.threshold, v_new)   # one float32 rounding
    else:
        v_new = np.where(spikes, p.v_reset, v_new)
    refrac = np.where(spikes, p.t_refrac, np.where(active, s.refrac, s.refrac - 1))
    return spikes, LIFState(v_new.astype(_F32), np.asarray(i_exc, _F32), np.asarray(i_inh, _F32),
                            refrac.astype(np.int64))


def _check_events(x: Any, n_in: int) -> tuple[np.ndarray, bool]:
    """(B, T, n_in) int64 copy of the input, and whether it was batched."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise SimulationError("input dtype", value=str(arr.dtype), limit="integer spike counts",
                              where="SpiNNaker2Sim.evolve", fix="pass an integer array")
    batched = arr.ndim == 3
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[2] != n_in:
        raise SimulationError("input shape", value=tuple(np.shape(x)), limit=f"(T, {n_in}) or (B, T, {n_in})",
                              where="SpiNNaker2Sim.evolve", fix="pass one column per input source")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.rint(np.where(np.isfinite(arr), arr, 0)))
        if np.any(bad):
            i = tuple(int(v) for v in np.argwhere(bad)[0])
            raise SimulationError("input spike count", value=float(arr[i]), limit="a finite integer",
                                  where=f"x{list(i)}", fix="pass integer spike counts")
    arr = arr.astype(np.int64)
    if np.any(arr < 0):
        i = tuple(int(v) for v in np.argwhere(arr < 0)[0])
        raise SimulationError("input spike count", value=int(arr[i]), limit=">= 0", where=f"x{list(i)}",
                              fix="pass non-negative spike counts")
    return arr, batched


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
        opts = config.options if options is None else options
        problems += opts.problems()
        if problems:
            raise ConfigError(problems=problems)
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
                    np.stack([pre[m], pe.start + idx[m], d[m], w[m]]))
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
        self.reset_state()

    @classmethod
    def from_config(cls, config: SpiNNaker2Config, options: LIFOptions | None = None) -> "SpiNNaker2Sim":
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
            raise SimulationError("batch size", value=batch, limit=self._batch, where="SpiNNaker2Sim.evolve",
                                  fix="call reset_state() before changing the batch size")
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
        xs, batched = _check_events(x, self.config.n_input)
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
                spk, new = lif_step(self.params[p.name], st, e, h, self.has_current, self.options)
                self._state[p.name] = new
                spikes[p.name] = spk.astype(np.float64)
                if record:
                    cur = (new.i_exc - new.i_inh) if self.has_current else (e - h).astype(_F32)
                    for key, val in (("v", new.v), ("i_syn", cur), ("input", e - h),
                                     ("spikes", spk.astype(np.int32))):
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
def mla_layer(x: np.ndarray, w: np.ndarray, b: np.ndarray, shift: int, relu: bool, acc_bits: int,
              overflow: str = "error", where: str = "layer") -> tuple[np.ndarray, np.ndarray]:
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
    x = np.asarray(x, dtype=np.int64)
    w = np.asarray(w, dtype=np.int64)
    # Exact: |acc| <= K * 128 * 128 + 2^31 is far below 2^53, so the float64 product is exact.
    acc = np.rint(x.astype(np.float64) @ w.astype(np.float64)).astype(np.int64) + np.asarray(b, np.int64)
    lo, hi = -(1 << (acc_bits - 1)), (1 << (acc_bits - 1)) - 1
    if overflow == "wrap":
        acc = wrap(acc, acc_bits)             # the register keeps the low acc_bits (two's complement)
    elif overflow == "error":
        bad = (acc < lo) | (acc > hi)
        if np.any(bad):
            i = tuple(int(v) for v in np.argwhere(bad)[0])
            raise SimulationError("MLA accumulator overflow", value=int(acc[i]), limit=f"{lo}..{hi}",
                                  where=f"{where}, sample {i[0]}, output {i[1]}",
                                  fix="use overflow='wrap' to model the register, a larger acc_bits, "
                                      "or smaller weights/inputs")
    else:
        raise SimulationError("overflow mode", value=overflow, limit="'error' or 'wrap'", where=where,
                              fix="pass overflow='error' or 'wrap'")
    y = sat(acc >> int(shift), 8)             # arithmetic shift (floor), then saturate to int8
    if relu:
        y = np.maximum(y, 0)                  # fused ReLU: clamp at 0
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
        problems = config.problems()
        if problems:
            raise ConfigError(problems=problems)
        self.config = config
        self.overflow = config.overflow if overflow is None else overflow

    @classmethod
    def from_config(cls, config: DNNConfig, overflow: str | None = None) -> "DNNSim":
        """A simulator of ``config`` (``overflow`` overrides ``config.overflow``)."""
        return cls(config, overflow)

    def reset_state(self) -> None:
        """No state: a DNN layer stack is stateless."""

    def evolve(self, x: Any, record: bool = False) -> tuple[np.ndarray, dict[str, Any], dict[str, np.ndarray]]:
        """Run every layer on int8 input ``x`` (K,) or (B, K); returns ``(y, {}, record)``."""
        arr = np.asarray(x)
        k = self.config.layers[0].weights.shape[0]
        if arr.dtype.kind not in "iu" or arr.ndim not in (1, 2) or arr.shape[-1] != k:
            raise SimulationError("DNN input", value=f"{arr.dtype} {arr.shape}", limit=f"int8 ({k},) or (B, {k})",
                                  where="DNNSim.evolve", fix="quantize with config.quantize_input(x)")
        if arr.size and (arr.min() < -128 or arr.max() > 127):
            raise SimulationError("DNN input range", value=(int(arr.min()), int(arr.max())), limit="-128..127",
                                  where="DNNSim.evolve", fix="quantize with config.quantize_input(x)")
        h = np.atleast_2d(arr).astype(np.int64)
        rec: dict[str, np.ndarray] = {}
        for layer in self.config.layers:
            ys, accs = [], []
            for a, b in layer.tiles:        # one column tile per worker PE
                y, acc = mla_layer(h, layer.weights[:, a:b], layer.bias[a:b], layer.shift, layer.relu,
                                   self.config.acc_bits, self.overflow, where=layer.name)
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
