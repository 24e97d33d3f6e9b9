r"""Bit-precise simulator of a Siracusa integer deployment (vectorized numpy, ``int64`` with explicit wraps).

Arithmetic model (``docs/TARGETS.md``; each rule equals the C kernels in the tests, built with
``gcc -fwrapv``):

* values are held in ``int64``; **every documented int32 operation is followed by** :func:`wrap32`
  (two's-complement wrap-around, what the RV32 cores do);
* GEMM / convolution: ``acc = wrap32(sum_k x_k w_k + bias)``. The sum is computed exactly in int64
  (|x w| <= 255 * 128, so it cannot overflow int64) and wrapped once: since wrap-around is arithmetic
  modulo 2^32, this equals wrapping after every multiply-accumulate, as the cores do;
* RequantShift (per channel): ``t = wrap32(wrap32((wrap32(x + in_offset)) * mul) + add)``;
  ``t = wrap32(t + 2^(s-1))`` if ``s > 0`` (**round half up**: -3/2 -> -1, -5/2 -> -2, 3/2 -> 2);
  ``y = clamp(t >> s, lo, hi)`` (**arithmetic shift** = floor division by 2^s; **saturating clamp**);
* integer LIF (:class:`~pondlib.devices.siracusa.config.QLIF`): ``t = wrap32(wrap32(v * beta_mul) +
  wrap32(I * in_mul))``, ``t = wrap32(t + add)``, rounding term as above, ``v = clamp(t >> s)`` to the
  state width (saturation), spike if ``v >= thr`` (or ``>``), reset by subtraction or to zero.

Input is integer ``(T, N_in)`` or ``(B, T, N_in)`` within the configuration's input range (see
:func:`quantize_input`); GEMM/convolution/RequantShift layers treat every step independently, LIF
layers carry their state across steps and across calls until :meth:`SiracusaSim.reset_state`.

Record (``record=True``): flat keys ``"<layer>/<what>"``, arrays ``(T, n)`` or ``(B, T, n)`` int64:

=================  =================================================================================
key                content
=================  =================================================================================
``<gemm>/acc``     int32 accumulator (after wrap) of a QGemm / QConv2d (flattened HWC for conv)
``<layer>/out``    the layer's output (requantized values; spikes for a LIF)
``<lif>/v``        LIF state at the end of the step (after reset)
``<lif>/spikes``   LIF spikes (0/1)
=================  =================================================================================

Example (RequantShift rounding, then a tiny GEMM and a LIF):

    >>> import numpy as np
    >>> from pondlib.devices.siracusa.config import RequantShift
    >>> requant_shift(np.array([-3, -5, 3, 5, -4]), RequantShift(mul=1, div=2)).tolist()
    [-1, -2, 2, 3, -2]
    >>> wrap32(np.array([2**31, -2**31 - 1])).tolist()
    [-2147483648, 2147483647]
    >>> from pondlib.devices.siracusa.config import QGemm, QLIF, SiracusaConfig
    >>> cfg = SiracusaConfig(n_input=1, layers=(
    ...     QGemm("fc", weight=[[10]]),                                    # raw acc -> LIF
    ...     QLIF("lif", beta_mul=[2], in_mul=[4], add=[0], shift=2, threshold=[25])))
    >>> out, state, rec = SiracusaSim(cfg).evolve(np.array([[1], [1], [1], [0]]), record=True)
    >>> rec["lif/v"][:, 0].tolist()     # v = (v*2 + 40 + 2) >> 2: 10, 15, 18 (< 25), then (36 + 2) >> 2
    [10, 15, 18, 9]
    >>> SiracusaSim(cfg.replace(layers=(cfg.layers[0], QLIF("lif", beta_mul=[4], in_mul=[4],
    ...     add=[0], shift=2, threshold=[25])))).evolve(np.ones((4, 1), dtype=int))[0][:, 0].tolist()
    [0, 0, 1, 0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pondlib.devices.siracusa.config import (
    QConv2d,
    QGemm,
    QLIF,
    QRequant,
    RequantShift,
    SiracusaConfig,
    validate_config,
)
from pondlib.errors import ConfigError, SimulationError

__all__ = ["wrap32", "requant_shift", "gemm_acc", "conv2d_acc", "lif_step", "SiracusaSim",
           "quantize_input"]

_M32 = (1 << 32) - 1
_H32 = 1 << 31


def wrap32(x: Any) -> np.ndarray:
    """Two's-complement wrap of int64 values to int32 (``((x + 2^31) mod 2^32) - 2^31``)."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + _H32) & _M32) - _H32


def _channel(param: np.ndarray, n: int) -> np.ndarray:
    """Broadcast a scalar or per-channel parameter over the last axis of length n."""
    return param if param.ndim == 0 else param.reshape(-1)[np.arange(n) % param.size]


def requant_shift(x: Any, rq: RequantShift) -> np.ndarray:
    """RequantShift over the last axis (the channel axis; per-channel parameters repeat over it)."""
    x = np.asarray(x, dtype=np.int64)
    n = x.shape[-1] if x.ndim else 1
    mul, add = _channel(rq.mul, n), _channel(rq.add, n)
    t = wrap32(x + rq.in_offset)             # int32 add: wraps
    t = wrap32(t * mul)                      # int32 multiply: wraps (|t * mul| < 2^62, exact first)
    t = wrap32(t + add)                      # int32 add: wraps
    s = rq.shift
    if s > 0:
        t = wrap32(t + (1 << (s - 1)))       # round half up: may wrap near INT32_MAX, as on the cores
    t = t >> s                               # arithmetic shift: floor(t / 2^s), also for t < 0
    lo, hi = rq.out_range
    return np.clip(t, lo, hi)                # saturate to the output width


def gemm_acc(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """``wrap32(x @ weight + bias)`` for x (..., K): exact int64 sum, wrapped once (mod 2^32 == per MAC)."""
    acc = np.asarray(x, dtype=np.int64) @ weight
    if bias is not None:
        acc = acc + bias
    return wrap32(acc)


def conv2d_acc(x: np.ndarray, layer: QConv2d) -> np.ndarray:
    """NHWC convolution accumulators, x (..., H*W*C) flat -> (..., Ho*Wo*O) flat (int32 wrapped)."""
    lead = x.shape[:-1]
    H, W, C = layer.in_shape
    kh, kw, cg, O = layer.weight.shape
    g = layer.groups
    xi = np.asarray(x, dtype=np.int64).reshape((-1, H, W, C))
    p = layer.padding
    if p:
        xi = np.pad(xi, ((0, 0), (p, p), (p, p), (0, 0)))      # zero padding
    win = np.lib.stride_tricks.sliding_window_view(xi, (kh, kw), axis=(1, 2))  # (N, H', W', C, kh, kw)
    win = win[:, ::layer.stride, ::layer.stride]
    n, ho, wo = win.shape[:3]
    win = win.reshape(n, ho, wo, g, cg, kh, kw)
    w = layer.weight.reshape(kh, kw, cg, g, O // g)
    acc = np.einsum("nhwgcij,ijcgo->nhwgo", win, w).reshape(n, ho, wo, O)
    if layer.bias is not None:
        acc = acc + layer.bias
    return wrap32(acc).reshape(lead + (ho * wo * O,))


def lif_step(v: np.ndarray, i_in: np.ndarray, layer: QLIF) -> tuple[np.ndarray, np.ndarray]:
    """One integer LIF step: ``(spikes, v_new)`` for state v (..., N) and input I (..., N)."""
    n = layer.n
    beta, in_mul, add = (_channel(layer.beta_mul, n), _channel(layer.in_mul, n), _channel(layer.add, n))
    t = wrap32(wrap32(v * beta) + wrap32(i_in * in_mul))   # two int32 products and their sum wrap
    t = wrap32(t + add)
    s = layer.shift
    if s > 0:
        t = wrap32(t + (1 << (s - 1)))                       # round half up
    lo, hi = layer.state_range
    v = np.clip(t >> s, lo, hi)                              # arithmetic shift, saturate to the state
    thr = layer.threshold
    z = (v >= thr) if layer.compare == ">=" else (v > thr)
    if layer.reset == "subtract":
        v = np.where(z, wrap32(v - thr), v)                  # 1 <= thr <= v: never wraps when valid
    else:
        v = np.where(z, 0, v)
    return z.astype(np.int64), v


def quantize_input(x: Any, config: Any) -> np.ndarray:
    """Float input -> the integer input of ``config`` (or of a specification's ``config``).

    ``q = clamp(round(x / input_scale), lo, hi)`` with round half to even (host-side, numpy ``rint``).

    Example:
        >>> from pondlib.devices.siracusa.config import SiracusaConfig
        >>> cfg = SiracusaConfig(layers=(), n_input=3, input_scale=0.5, input_signed=False)
        >>> quantize_input([[0.2, 1.0, 500.0]], cfg).tolist()
        [[0, 2, 255]]
    """
    cfg = config if isinstance(config, SiracusaConfig) else config.config
    arr = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise SimulationError("non-finite input", where="x", fix="replace NaN/inf before quantizing")
    lo, hi = cfg.input_range
    return np.clip(np.rint(arr / cfg.input_scale), lo, hi).astype(np.int64)


class SiracusaSim:
    """Bit-precise simulator of a :class:`SiracusaConfig` (validated on construction).

    ``evolve(x, record)`` returns ``(output, state, record)``: the last layer's integer output
    ``(T, n_out)`` / ``(B, T, n_out)``, the LIF states ``{name: v}`` and the record dict (module
    docstring).
    """

    def __init__(self, config: SiracusaConfig, validate: bool = True) -> None:
        if not isinstance(config, SiracusaConfig):
            raise ConfigError("not a SiracusaConfig", value=type(config).__name__,
                              fix="build one with config_from_specification or SiracusaConfig(...)")
        if validate:
            problems = validate_config(config)
            if problems:
                raise ConfigError(problems=problems, where="SiracusaSim")
        self.config = config
        self._state: dict[str, np.ndarray] | None = None
        self._batch: int | None = None

    @classmethod
    def from_config(cls, config: SiracusaConfig) -> "SiracusaSim":
        """A simulator for ``config`` (raises ConfigError listing every problem)."""
        return cls(config)

    @classmethod
    def from_specification(cls, spec: Any) -> "SiracusaSim":
        """A simulator for a mapper :class:`~pondlib.devices.siracusa.mapper.Specification`."""
        return cls(spec.config)

    def reset_state(self) -> None:
        """Zero every LIF state (and forget the batch size)."""
        self._state = None
        self._batch = None

    @property
    def state(self) -> dict[str, np.ndarray]:
        """A copy of the LIF states ``{name: v}`` ((N,) unbatched, (B, N) after a batched run)."""
        st = self._state or {}
        return {k: (v.copy() if self._batch is not None else v[0].copy()) for k, v in st.items()}

    def _check_input(self, x: Any) -> tuple[np.ndarray, bool]:
        cfg = self.config
        lo, hi = cfg.input_range
        fix = f"pass integers in [{lo}, {hi}] of shape (T, {cfg.n_input}) or (B, T, {cfg.n_input}) " \
              "(quantize float input with quantize_input)"
        arr = np.asarray(x)
        if arr.dtype.kind not in "biuf":
            raise SimulationError("input dtype", value=str(arr.dtype), limit="integers", where="x", fix=fix)
        if arr.ndim not in (2, 3) or arr.shape[-1] != cfg.n_input:
            raise SimulationError("input shape", value=arr.shape,
                                  limit=f"(T, {cfg.n_input}) or (B, T, {cfg.n_input})", where="x", fix=fix)
        if arr.dtype.kind == "f":
            ok = np.isfinite(arr) & (arr == np.rint(np.where(np.isfinite(arr), arr, 0)))
            if not ok.all():
                idx = tuple(int(i) for i in np.argwhere(~ok)[0])
                raise SimulationError("non-integer input", value=float(arr[idx]), limit="an integer",
                                      where=f"x{list(idx)}", fix=fix)
        bad = (arr < lo) | (arr > hi)
        if bad.any():   # never clipped silently: the host must quantize into range
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise SimulationError("input out of range", value=arr[idx].item(), limit=f"[{lo}, {hi}]",
                                  where=f"x{list(idx)}", fix=fix)
        return arr.astype(np.int64), arr.ndim == 3

    def evolve(self, x: Any, record: bool = False
               ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Run the deployment on integer input ``x`` (see the class and module docstrings)."""
        h, batched = self._check_input(x)
        if not batched:
            h = h[None]
            if self._batch is not None:
                raise SimulationError("unbatched input after a batched run", value=h.shape[1:],
                                      limit=f"(B={self._batch}, T, N_in)", where="x",
                                      fix="call reset_state() first")
        elif self._state is not None and self._batch not in (None, h.shape[0]):
            raise SimulationError("batch size", value=h.shape[0], limit=self._batch, where="x.shape[0]",
                                  fix="call reset_state() before a different batch size")
        B, T = h.shape[:2]
        state = dict(self._state or {})
        rec: dict[str, np.ndarray] = {}
        for layer in self.config.layers:
            name = layer.name
            if isinstance(layer, (QGemm, QConv2d)):
                acc = gemm_acc(h, layer.weight, layer.bias) if isinstance(layer, QGemm) \
                    else conv2d_acc(h, layer)
                if record:
                    rec[f"{name}/acc"] = acc
                if layer.requant is None:
                    h = acc
                elif isinstance(layer, QConv2d):   # channel = last axis of the HWC layout
                    o = layer.out_shape[2]
                    h = requant_shift(acc.reshape(acc.shape[:-1] + (-1, o)), layer.requant
                                      ).reshape(acc.shape)
                else:
                    h = requant_shift(acc, layer.requant)
            elif isinstance(layer, QRequant):
                h = requant_shift(h, layer.requant)
            elif isinstance(layer, QLIF):
                v = state.get(name)
                v = np.zeros((B, layer.n), dtype=np.int64) if v is None else np.broadcast_to(v, (B, layer.n))
                zs = np.zeros((B, T, layer.n), dtype=np.int64)
                vs = np.zeros((B, T, layer.n), dtype=np.int64)
                for t in range(T):                 # the state is carried step to step
                    z, v = lif_step(v, h[:, t], layer)
                    zs[:, t], vs[:, t] = z, v
                state[name] = v.copy()
                h = zs
                if record:
                    rec[f"{name}/v"] = vs
                    rec[f"{name}/spikes"] = zs
            if record:
                rec[f"{name}/out"] = h
        self._state = state
        self._batch = B if batched else None
        if not batched:
            h = h[0]
            rec = {k: v[0] for k, v in rec.items()}
            st = {k: v[0].copy() for k, v in state.items()}
        else:
            st = {k: v.copy() for k, v in state.items()}
        return h, st, rec
