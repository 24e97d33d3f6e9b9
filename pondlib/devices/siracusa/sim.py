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
    >>> from pondlib.devices.siracusa.specification import RequantShift
    >>> requant_shift(np.array([-3, -5, 3, 5, -4]), RequantShift(mul=1, div=2)).tolist()
    [-1, -2, 2, 3, -2]
    >>> wrap32(np.array([2**31, -2**31 - 1])).tolist()
    [-2147483648, 2147483647]
    >>> from pondlib.devices.siracusa.config import SiracusaConfig
    >>> from pondlib.devices.siracusa.specification import QGemm, QLIF
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

from pondlib.devices.core.inputs import integer_input
from pondlib.devices.core.intmath import wrap
from pondlib.devices.siracusa.config import SiracusaConfig, check_constraints
from pondlib.devices.siracusa.specification import (
    COMPARISONS,
    QLIF,
    RESET_MODES,
    QConv2d,
    QGemm,
    QRequant,
    RequantShift,
    Specification,
)
from pondlib.errors import ConfigError, PondError, SimulationError
from pondlib.validate import as_float_array, as_int_array, check_bool, check_choice, check_type

__all__ = ["wrap32", "requant_shift", "gemm_acc", "conv2d_acc", "lif_step", "SiracusaSim", "quantize_input"]

_M32 = (1 << 32) - 1
_H32 = 1 << 31


def _wrap32(x: Any) -> np.ndarray:
    """:func:`wrap32` on trusted int64 data (the simulator's inner loop)."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + _H32) & _M32) - _H32


def _sim_error(err: PondError, where: str) -> SimulationError:
    """A :class:`PondError` from a shared helper re-raised as a SimulationError naming ``where``."""
    return SimulationError(err.what, value=err.value, limit=err.limit, where=where, fix=err.fix)


def _ints(value: Any, name: str, where: str, ndim: Any = None) -> np.ndarray:
    """``value`` as int64: whole numbers within int64 (bool counts as 0/1), else a SimulationError."""
    return as_int_array(
        value,
        name,
        where=where,
        error=SimulationError,
        ndim=ndim,
        allow_empty=True,
        fix="pass whole numbers within int64 (round or quantize first)",
    )


def wrap32(x: Any) -> np.ndarray:
    """Two's-complement wrap of integers to int32 (``((x + 2^31) mod 2^32) - 2^31``).

    Exact for every integer (Python integers beyond int64 included) and integral float.

    Raises:
        SimulationError: NaN, infinities, fractions, complex, strings or ragged input (no integer value).
    """
    try:
        return wrap(x, 32)
    except PondError as err:
        raise _sim_error(err, "wrap32") from None


def _channel(param: np.ndarray, n: int) -> np.ndarray:
    """Broadcast a scalar or per-channel parameter over the last axis of length n."""
    return param if param.ndim == 0 else param.reshape(-1)[np.arange(n) % param.size]


def _channels_fit(param: np.ndarray, n: int, name: str, where: str) -> None:
    if param.ndim and n % param.size:
        raise SimulationError(
            f"{name} size",
            value=f"{param.size} values for a last axis of {n}",
            limit=f"1 or a divisor of {n} (per-channel values repeat over the last axis)",
            where=where,
            fix=f"pass one {name} per channel of the last axis, or one for all",
        )


def requant_shift(x: Any, rq: RequantShift) -> np.ndarray:
    """RequantShift over the last axis (the channel axis; per-channel parameters repeat over it).

    Exact for any int64 input: int64 wrap-around keeps the residue modulo 2^32, which is all the int32
    arithmetic uses.

    Raises:
        SimulationError: ``x`` not whole numbers within int64, per-channel parameters whose size does not
            divide the last axis; ConfigError: ``rq`` not a :class:`RequantShift`.
    """
    check_type(rq, "rq", RequantShift, where="requant_shift", error=ConfigError)
    x = _ints(x, "x", "requant_shift")
    n = x.shape[-1] if x.ndim else 1
    for key in ("mul", "add"):
        _channels_fit(getattr(rq, key), n, f"rq.{key}", "requant_shift")
    return _requant_shift(x, rq)


def _requant_shift(x: np.ndarray, rq: RequantShift) -> np.ndarray:
    """:func:`requant_shift` on checked int64 input."""
    n = x.shape[-1] if x.ndim else 1
    mul, add = _channel(rq.mul, n), _channel(rq.add, n)
    t = _wrap32(x + rq.in_offset)  # int32 add: wraps
    t = _wrap32(t * mul)  # int32 multiply: wraps (exact modulo 2^32 even when the int64 product wraps)
    t = _wrap32(t + add)  # int32 add: wraps
    s = rq.shift
    if s > 0:
        t = _wrap32(t + (1 << (s - 1)))  # round half up: may wrap near INT32_MAX, as on the cores
    t = t >> s  # arithmetic shift: floor(t / 2^s), also for t < 0
    lo, hi = rq.out_range
    return np.clip(t, lo, hi)  # saturate to the output width


def gemm_acc(x: Any, weight: Any, bias: Any = None) -> np.ndarray:
    """``wrap32(x @ weight + bias)`` for x (..., K), weight (K, O), bias (O,) or None: an int64 sum,
    wrapped once (mod 2^32 == per MAC). Exact for any int64 operands: int64 wrap-around keeps the
    residue modulo 2^32.

    Raises:
        SimulationError: operands that are not whole numbers within int64, or shapes that do not chain
            (the message names them).
    """
    where = "gemm_acc"
    x = _ints(x, "x", where, ndim=(1, 2, 3))
    weight = _ints(weight, "weight", where, ndim=2)
    b = None if bias is None else _ints(bias, "bias", where, ndim=1)
    if x.shape[-1] != weight.shape[0] or (b is not None and b.shape != (weight.shape[1],)):
        raise SimulationError(
            "shapes",
            value=f"x {x.shape}, weight {weight.shape}, bias {None if b is None else b.shape}",
            limit="x (..., K), weight (K, O), bias (O,)",
            where=where,
            fix="pass operands whose sizes chain",
        )
    return _gemm_acc(x, weight, b)


def _gemm_acc(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    acc = x @ weight  # int64: exact, or wrapped modulo 2^64 (the same residue modulo 2^32)
    if bias is not None:
        acc = acc + bias
    return _wrap32(acc)


def conv2d_acc(x: Any, layer: QConv2d) -> np.ndarray:
    """NHWC convolution accumulators, x (..., H*W*C) flat -> (..., Ho*Wo*O) flat (int32 wrapped).

    Raises:
        ConfigError: ``layer`` not a :class:`QConv2d`; SimulationError: ``x`` not whole numbers within
            int64 with a last axis of ``H*W*C``.
    """
    check_type(layer, "layer", QConv2d, where="conv2d_acc", error=ConfigError)
    x = _ints(x, "x", "conv2d_acc", ndim=(1, 2, 3))
    if x.shape[-1] != layer.n_in:
        raise SimulationError(
            "x shape",
            value=x.shape,
            limit=f"(..., {layer.n_in}) (H*W*C of in_shape {layer.in_shape})",
            where=f"conv2d_acc, {layer.name}",
            fix="pass the input flattened in HWC order",
        )
    return _conv2d_acc(x, layer)


def _conv2d_acc(x: np.ndarray, layer: QConv2d) -> np.ndarray:
    lead = x.shape[:-1]
    H, W, C = layer.in_shape
    kh, kw, cg, O = layer.weight.shape
    g = layer.groups
    xi = np.asarray(x, dtype=np.int64).reshape((-1, H, W, C))
    p = layer.padding
    if p:
        xi = np.pad(xi, ((0, 0), (p, p), (p, p), (0, 0)))  # zero padding
    win = np.lib.stride_tricks.sliding_window_view(xi, (kh, kw), axis=(1, 2))  # (N, H', W', C, kh, kw)
    win = win[:, :: layer.stride, :: layer.stride]
    n, ho, wo = win.shape[:3]
    win = win.reshape(n, ho, wo, g, cg, kh, kw)
    w = layer.weight.reshape(kh, kw, cg, g, O // g)
    acc = np.einsum("nhwgcij,ijcgo->nhwgo", win, w).reshape(n, ho, wo, O)
    if layer.bias is not None:
        acc = acc + layer.bias
    return _wrap32(acc).reshape(lead + (ho * wo * O,))


def lif_step(v: Any, i_in: Any, layer: QLIF) -> tuple[np.ndarray, np.ndarray]:
    """One integer LIF step: ``(spikes, v_new)`` for state v (..., N) and input I (..., N).

    Raises:
        ConfigError: ``layer`` not a :class:`QLIF`, or a reset / comparison mode it does not know;
        SimulationError: ``v`` or ``i_in`` not whole numbers within int64 of one shape ending in N.
    """
    where = "lif_step"
    check_type(layer, "layer", QLIF, where=where, error=ConfigError)
    check_choice(layer.reset, "layer.reset", RESET_MODES, where=where, error=ConfigError)
    check_choice(layer.compare, "layer.compare", COMPARISONS, where=where, error=ConfigError)
    v = _ints(v, "v", where, ndim=(1, 2))
    i_in = _ints(i_in, "i_in", where, ndim=(1, 2))
    if v.shape != i_in.shape or v.shape[-1] != layer.n:
        raise SimulationError(
            "shapes",
            value=f"v {v.shape}, i_in {i_in.shape}",
            limit=f"one shape (..., {layer.n}) ({layer.name} has {layer.n} neurons)",
            where=where,
            fix="pass the state and the input of every neuron",
        )
    return _lif_step(v, i_in, layer)


def _lif_step(v: np.ndarray, i_in: np.ndarray, layer: QLIF) -> tuple[np.ndarray, np.ndarray]:
    n = layer.n
    beta, in_mul, add = (_channel(layer.beta_mul, n), _channel(layer.in_mul, n), _channel(layer.add, n))
    t = _wrap32(_wrap32(v * beta) + _wrap32(i_in * in_mul))  # two int32 products and their sum wrap
    t = _wrap32(t + add)
    s = layer.shift
    if s > 0:
        t = _wrap32(t + (1 << (s - 1)))  # round half up
    lo, hi = layer.state_range
    v = np.clip(t >> s, lo, hi)  # arithmetic shift, saturate to the state
    thr = layer.threshold
    z = (v >= thr) if layer.compare == ">=" else (v > thr)
    if layer.reset == "subtract":
        v = np.where(z, _wrap32(v - thr), v)  # 1 <= thr <= v: never wraps when valid
    else:
        v = np.where(z, 0, v)
    return z.astype(np.int64), v


def quantize_input(x: Any, config: Any) -> np.ndarray:
    """Float input -> the integer input of ``config`` (or of a specification's ``config``).

    ``q = clamp(round(x / input_scale), lo, hi)`` with round half to even (host-side, numpy ``rint``):
    finite values outside the input range saturate (documented, the host's job); NaN, infinities,
    complex, strings, ragged or empty input and a last axis other than ``n_input`` raise
    :class:`~pondlib.errors.SimulationError`.

    Example:
        >>> from pondlib.devices.siracusa.config import SiracusaConfig
        >>> cfg = SiracusaConfig(layers=(), n_input=3, input_scale=0.5, input_signed=False)
        >>> quantize_input([[0.2, 1.0, 500.0]], cfg).tolist()
        [[0, 2, 255]]
    """
    cfg = config if isinstance(config, SiracusaConfig) else getattr(config, "config", None)
    if not isinstance(cfg, SiracusaConfig):
        raise ConfigError(
            "config",
            value=f"a {type(config).__name__}",
            limit="a SiracusaConfig or a Specification",
            where="quantize_input",
            fix="pass spec.config or the specification",
        )
    arr = as_float_array(
        x,
        "x",
        where="quantize_input",
        error=SimulationError,
        fix="pass finite real numbers (replace NaN/inf before quantizing)",
    )
    if arr.ndim == 0 or arr.shape[-1] != cfg.n_input:
        raise SimulationError(
            "input shape",
            value=arr.shape,
            limit=f"(..., {cfg.n_input})",
            where="quantize_input",
            fix="pass one column per input",
        )
    lo, hi = cfg.input_range
    with np.errstate(over="ignore"):  # beyond float64: inf, which saturates like any large value
        return np.clip(np.rint(arr / cfg.input_scale), lo, hi).astype(np.int64)


#: Rules checked even with ``SiracusaSim(config, validate=False)``: int8 weights, int32 biases and
#: RequantShift parameters, shifts and state widths the int64 model holds, chaining shapes. Within them
#: every product and sum of the simulation is exact in int64 (the int32 wrap-around is modelled).
SAFETY_RULES = frozenset(
    {
        "layer_shape",
        "weight_range",
        "bias_range",
        "mul_range",
        "add_range",
        "div_power_of_two",
        "shift_range",
        "out_bits",
        "lif_options",
    }
)


class SiracusaSim:
    """Bit-precise simulator of a :class:`SiracusaConfig` (validated on construction; with
    ``validate=False`` only the :data:`SAFETY_RULES` are enforced: the chip's overflow, tiling and memory
    rules are then the caller's business, but the simulation stays exact).

    ``evolve(x, record)`` returns ``(output, state, record)``: the last layer's integer output
    ``(T, n_out)`` / ``(B, T, n_out)``, the LIF states ``{name: v}`` and the record dict (module
    docstring).
    """

    def __init__(self, config: SiracusaConfig, validate: bool = True) -> None:
        if not isinstance(config, SiracusaConfig):
            raise ConfigError(
                "not a SiracusaConfig",
                value=type(config).__name__,
                fix="build one with config_from_specification or SiracusaConfig(...)",
            )
        validate = check_bool(validate, "validate", where="SiracusaSim", error=ConfigError)
        found = check_constraints(config)
        if not validate:  # the rules whose breach would make the int64 model itself wrong still hold
            found = [v for v in found if v.rule in SAFETY_RULES]
        if found:
            raise ConfigError(problems=[str(v) for v in found], where="SiracusaSim")
        self.config = config
        self._state: dict[str, np.ndarray] | None = None
        self._batch: int | None = None

    @classmethod
    def from_config(cls, config: SiracusaConfig) -> SiracusaSim:
        """A simulator for ``config`` (raises ConfigError listing every problem)."""
        return cls(config)

    @classmethod
    def from_specification(cls, spec: Any) -> SiracusaSim:
        """A simulator for a mapper :class:`~pondlib.devices.siracusa.mapper.Specification`."""
        check_type(
            spec,
            "spec",
            Specification,
            where="SiracusaSim.from_specification",
            error=ConfigError,
            fix="map the network with pondlib.devices.siracusa.mapper first (or pass a SiracusaConfig to SiracusaSim)",
        )
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
        fix = (
            f"pass integers in [{lo}, {hi}] of shape (T, {cfg.n_input}) or (B, T, {cfg.n_input}) "
            "(quantize float input with quantize_input)"
        )
        # never clipped silently: the host must quantize into range
        arr = integer_input(x, cfg.n_input, where="SiracusaSim.evolve", lo=lo, hi=hi, fix=fix)
        return arr, arr.ndim == 3

    def evolve(self, x: Any, record: bool = False) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Run the deployment on integer input ``x`` (see the class and module docstrings).

        Raises:
            SimulationError: input that is not integers within the configuration's input range of shape
                (T, N_in) / (B, T, N_in) (NaN, fractions, complex, strings, ragged, empty, wrong width),
                or a batch size that differs from the state's (call :meth:`reset_state`).
        """
        record = check_bool(record, "record", where="SiracusaSim.evolve", error=SimulationError)
        h, batched = self._check_input(x)
        if not batched:
            h = h[None]
            if self._batch is not None:
                raise SimulationError(
                    "unbatched input after a batched run",
                    value=h.shape[1:],
                    limit=f"(B={self._batch}, T, N_in)",
                    where="x",
                    fix="call reset_state() first",
                )
        elif self._state is not None and self._batch not in (None, h.shape[0]):
            raise SimulationError(
                "batch size",
                value=h.shape[0],
                limit=self._batch,
                where="x.shape[0]",
                fix="call reset_state() before a different batch size",
            )
        B, T = h.shape[:2]
        state = dict(self._state or {})
        rec: dict[str, np.ndarray] = {}
        for layer in self.config.layers:
            name = layer.name
            if isinstance(layer, (QGemm, QConv2d)):
                acc = _gemm_acc(h, layer.weight, layer.bias) if isinstance(layer, QGemm) else _conv2d_acc(h, layer)
                if record:
                    rec[f"{name}/acc"] = acc
                if layer.requant is None:
                    h = acc
                elif isinstance(layer, QConv2d):  # channel = last axis of the HWC layout
                    o = layer.out_shape[2]
                    h = _requant_shift(acc.reshape(acc.shape[:-1] + (-1, o)), layer.requant).reshape(acc.shape)
                else:
                    h = _requant_shift(acc, layer.requant)
            elif isinstance(layer, QRequant):
                h = _requant_shift(h, layer.requant)
            elif isinstance(layer, QLIF):
                v = state.get(name)
                v = np.zeros((B, layer.n), dtype=np.int64) if v is None else np.broadcast_to(v, (B, layer.n))
                zs = np.zeros((B, T, layer.n), dtype=np.int64)
                vs = np.zeros((B, T, layer.n), dtype=np.int64)
                for t in range(T):  # the state is carried step to step
                    z, v = _lif_step(v, h[:, t], layer)
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
