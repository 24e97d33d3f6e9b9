r"""Deeploy's integer ONNX dialect: the custom ops of its quantized graphs, with their exact integer rules.

Deeploy (pulp-platform/Deeploy) exports integerized networks whose tensors carry integers in float32 and whose
nonlinearities are integer ops in the default domain (``PACTOps`` and ``ai.onnx.contrib`` are aliases). Each
kernel below follows the integer arithmetic of Deeploy's reference C kernels (Generic and PULPOpen targets)
and is checked bit-exact against the golden outputs of Deeploy's test suite (``tests/data/deeploy``). Where
the rule is the same integer rule as a shared kernel of :mod:`pondlib.devices.core.intops` (truncating division
``tdiv``, the floor square root ``isqrt``, the I-BERT exponential and GELU, the layer/RMS-norm numerators,
the rounding shift), the kernel calls it: one implementation for every chip.

Notation: all values are integers; ``x // d`` is floor division, ``tdiv(a, d)`` is C's division truncated
toward zero, ``a >> s`` an arithmetic (floor) shift, ``isqrt(v)`` the floor square root, ``n`` the
``n_levels`` attribute (256 for int8), ``N`` the length of the normalized (last) axis. Rows are the slices
along the last axis. Attributes given as one-element tensors and as plain ints are both accepted.

=====================  =======================================================================================
RequantShift           ``y = clip((x mul + add + 2^(s-1)) >> s, lo, hi)`` with ``div = 2^s`` (no rounding
                       term when ``s = 0``); ``[lo, hi] = [-n/2, n/2 - 1]`` if ``signed`` else ``[0, n - 1]``
                       (``n = n_levels_out``, or ``n_levels``); mul/add holding C = ``x.shape[1]`` values as a
                       vector ``(C,)``, or in a shape numpy cannot broadcast onto x (``(C, 1, 1)`` on an NCL
                       tensor), apply per channel along axis 1 (Deeploy's ``mul[i / HW]``); other shapes
                       broadcast by numpy rules. Inputs: x (|x| <= 2^40, far above the chip's int32
                       accumulators), mul, add.
iSoftmax               (I-BERT exponential, Deeploy's PULP kernel; attributes coeffA, coeffB, coeffC, log2)
                       per row: ``t = x - max(x) <= 0``, ``z = min(tdiv(-t, log2), 31)``,
                       ``p = t + z log2``, ``e = (coeffA (p + coeffB)^2 + coeffC) >> z``,
                       ``y = (e (n - 1)) // sum(e)`` in ``[0, n - 1]`` (unsigned output).
ITAMax                 per row: ``m = max(x)``, ``k = (m - x + 16) >> 5``, ``S = sum(256 >> k)``,
                       ``y = ((n - 1) 256) // S >> k`` in ``[0, n - 1]`` (unsigned output; Deeploy's C kernel
                       stores it as ``y - n/2`` in int8, its representation of unsigned tensors).
ITAPartialMax          ITAMax streamed over groups of ``group_width`` columns (only whole groups feed the
                       sum): per group g, ``m_g = max(m_(g-1), max(x_g))``, shift of the running sum
                       ``r = (max(x_g) - m_(g-1) + 16) >> 5`` when the max grows (else 0),
                       ``S_g = (S_(g-1) >> r) + sum_(group g)(256 >> ((m_g - x + 16) >> 5))``; then
                       ``y = ((n/2 - 1) 256) // S >> k`` in ``[0, n/2 - 1]`` with ``k = (m - x + 16) >> 5``
                       (m the final max, ``m_0 = -128``).
iRMSNorm               (inputs x, weight w; attributes D = 2^d, n_levels) per row:
                       ``sigma = isqrt(sum(x^2) // N + 1)``, ``y = clip(tdiv(x w, sigma) >> d, -n/2, n/2 - 1)``.
iLayerNorm             (inputs x signed or unsigned, i.e. in ``[-n/2, n - 1]``, weight w, bias b; D = 2^d)
                       per row: ``mu = tdiv(sum(x), N)``,
                       ``sigma = isqrt(sum((x - mu)^2) // N + 1)``,
                       ``y = clip((tdiv((x - mu) w, sigma) + b) >> d, -n/2, n/2 - 1)``.
iNoNorm                (inputs x, weights w, bias b; attributes D = 2^d, mul, n_levels) elementwise:
                       ``y = ((x w + b) mul) >> d``, which must lie in ``[-n/2, n/2 - 1]``.
iGELU                  (I-BERT GELU; attributes b < 0, one) ``q = min(|x|, -b)``,
                       ``L = sgn(x) (one - (q + b)^2)``, ``y = x ((one + L) >> 1)`` (int32 output).
iHardswish             (attributes one_over_six, three, six) ``y = x (clip(x + three, 0, six) one_over_six)``
                       (int32 output).
RequantizediHardswish  iHardswish then ``clip((h mul + add + 2^(shift-1)) >> shift, -128, 127)``
                       (attributes mul, add, shift).
RequantizedGELU        iGELU then the same requantization with inputs mul, add, shift (Deeploy's RQGELU).
TrueIntegerDiv         division by the constant ``y`` at scale ``Delta``: ``y_out = x K`` with
                       ``K = (Delta eta) // (y eta + eps)``; the requantization that follows carries the rest
                       (this is the arithmetic Deeploy's merge of TrueIntegerDiv into the next RequantShift
                       performs: ``mul' = 256 K mul``, ``div' = 256 div``, equal when ``add = 0``).
IntegerDiv             (inputs a, b; Delta, eps, eta) ``u = Delta eta a``, ``v = eta b + eps``,
                       ``y = tdiv(u + sgn(u) (v >> 1), v)`` with ``sgn(0) = +1`` (round half away from 0).
IntegerMean            mean over ``axes`` of ``L`` elements: ``s = sum(x)``; ``(s + 2^(l-1)) >> l`` when
                       ``L = 2^l`` (and ``s`` itself when ``L = 1``), else ``tdiv(s + sgn(s) (L >> 1), L)``.
=====================  =======================================================================================

Bad attributes (missing, non-integer, ``div``/``D`` not a power of two, ``n_levels`` outside 2..2^32) and
inputs outside the op's integer range (e.g. an int8 op fed 300) are refused with a
:class:`~pondlib.errors.GraphError` naming the value, the limit and the fix; no result is silently wrapped.

Example:
    >>> import numpy as np
    >>> from pondlib.devices.siracusa.kernels import KernelContext, lookup
    >>> ctx = KernelContext(True)
    >>> hs = lookup("iHardswish", "", "example")
    >>> hs([np.array([-5, 0, 2, 9])], {"one_over_six": 2, "three": 3, "six": 6}, ctx).tolist()
    [0, 0, 20, 108]
    >>> div = lookup("IntegerDiv", "", "example")
    >>> div([np.array([3, -3]), np.array([2])], {"Delta": 4, "eta": 1, "eps": 0}, ctx).tolist()
    [6, -6]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pondlib.devices.core import intops
from pondlib.devices.core.intops import isqrt, tdiv
from pondlib.devices.siracusa.kernels import KernelContext, kernel
from pondlib.errors import GraphError

__all__ = [
    "DIALECT_OPS",
    "requant_shift",
    "levels_range",
    "tdiv",
    "isqrt",
    "softmax_rows",
    "itamax_rows",
    "itapartialmax_rows",
]

#: The ops of Deeploy's integer dialect: a graph holding one runs in integer mode when its inputs are whole
#: numbers (Deeploy carries its integers in float32 tensors).
DIALECT_OPS = frozenset({
    "RequantShift", "iSoftmax", "ITAMax", "ITAPartialMax", "iRMSNorm", "iLayerNorm", "iGELU", "iHardswish",
    "IntegerDiv", "TrueIntegerDiv", "IntegerMean", "iNoNorm", "RequantizedGELU", "RequantizediHardswish",
})  # fmt: skip

INT32 = (-(2**31), 2**31 - 1)


# ---------------------------------------------------------------------------------------------- helpers
def _attr(attrs: Mapping[str, Any], key: str, ctx: KernelContext, default: Any = None) -> Any:
    if key in attrs:
        return attrs[key]
    if default is None:
        raise GraphError(
            "missing attribute", value=key, limit=f"attribute {key!r} present", where=ctx.label,
            fix="re-export the model with the dialect's attributes",
        )  # fmt: skip
    return default


def _int_attr(attrs: Mapping[str, Any], key: str, ctx: KernelContext, default: Any = None) -> int:
    """An integer attribute given as an int, a float holding a whole number or a one-element tensor."""
    raw = _attr(attrs, key, ctx, default)
    arr = np.asarray(raw)
    if arr.size != 1 or arr.dtype.kind not in "iufb":
        raise GraphError(
            f"attribute {key}", value=raw, limit="one integer", where=ctx.label, fix=f"give {key} as one integer"
        )
    v = arr.reshape(-1)[0]
    if not np.isfinite(v) or float(v) != int(v) or abs(int(v)) >= 2**62:
        raise GraphError(
            f"attribute {key}", value=v, limit="a whole number below 2^62", where=ctx.label,
            fix=f"give {key} as an integer",
        )  # fmt: skip
    return int(v)


def _log2_attr(attrs: Mapping[str, Any], key: str, ctx: KernelContext, default: Any = None) -> int:
    """``s`` for an attribute that must be ``2^s`` (0 <= s <= 62)."""
    v = _int_attr(attrs, key, ctx, default)
    s = v.bit_length() - 1
    if v < 1 or v != 1 << s:
        raise GraphError(
            f"attribute {key}", value=v, limit="a power of two 2^0..2^62", where=ctx.label,
            fix=f"requantize with a power-of-two {key}",
        )  # fmt: skip
    return s


def levels_range(n_levels: Any, signed: Any, ctx: KernelContext) -> tuple[int, int]:
    """``[-n/2, n/2 - 1]`` (signed) or ``[0, n - 1]`` for ``n_levels`` an integer in 2..2^32."""
    n = float(np.asarray(n_levels).reshape(-1)[0])
    if not (2 <= n <= 2**32) or n != int(n):
        raise GraphError(
            "n_levels", value=n, limit="an integer in 2..2^32", where=ctx.label, fix="pass n_levels_out = 256 for int8"
        )
    n = int(n)
    if bool(np.asarray(signed).reshape(-1)[0]):
        return -(n // 2), n // 2 - 1
    return 0, n - 1


def _levels(attrs: Mapping[str, Any], ctx: KernelContext, default: Any = None) -> int:
    n = _int_attr(attrs, "n_levels", ctx, default)
    levels_range(n, 1, ctx)
    return n


def _check_range(x: np.ndarray, lo: int, hi: int, what: str, ctx: KernelContext, fix: str) -> np.ndarray:
    """``x`` as int64 when every value lies in ``[lo, hi]``; a GraphError naming the worst value otherwise."""
    a = np.asarray(x)
    if a.dtype.kind == "f":
        raise GraphError(
            what, value=f"float tensor {a.dtype}", limit="integer mode", where=ctx.label,
            fix="run Deeploy's dialect in integer mode (integer inputs)",
        )  # fmt: skip
    a = a.astype(np.int64)
    if a.size and (a.min() < lo or a.max() > hi):
        worst = int(a.min()) if a.min() < lo else int(a.max())
        raise GraphError(what, value=worst, limit=f"[{lo}, {hi}]", where=ctx.label, fix=fix)
    return a


def _signed_in(x: np.ndarray, n: int, ctx: KernelContext, what: str = "input") -> np.ndarray:
    return _check_range(x, -(n // 2), n // 2 - 1, what, ctx, "requantize the input to the op's signed levels first")


def _need(ins: list, count: int, ctx: KernelContext) -> None:
    if len(ins) < count or any(a is None for a in ins[:count]):
        raise GraphError(
            "inputs", value=len([a for a in ins if a is not None]), limit=f"{count} inputs", where=ctx.label,
            fix="re-export the node with all of its inputs",
        )  # fmt: skip


def _out_range(y: np.ndarray, lo: int, hi: int, ctx: KernelContext, what: str) -> np.ndarray:
    return _check_range(y, lo, hi, what, ctx, "rescale the op's constants so its result fits (re-export the model)")


# ------------------------------------------------------------------------------------------ requantization
def requant_shift(x: np.ndarray, mul: np.ndarray, add: np.ndarray, shift: int, lo: int, hi: int) -> np.ndarray:
    """``clip((x mul + add + 2^(s-1)) >> s, lo, hi)`` on int64 (round half up, as Deeploy's kernel)."""
    return np.clip(intops.round_shift(x.astype(np.int64) * mul + add, shift), lo, hi)


def _channel(param: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Deeploy's per-channel mul/add: C values (shape ``(C,)``, or ``(C, 1, 1)`` on a 3-d ``x``, any shape numpy
    would not broadcast onto ``x``) reshaped along axis 1 of ``x``; other shapes broadcast as numpy does."""
    p = np.asarray(param, dtype=np.int64)
    if p.size > 1 and x.ndim >= 2 and p.size == x.shape[1]:
        try:
            keeps = np.broadcast_shapes(p.shape, x.shape) == x.shape
        except ValueError:
            keeps = False
        if p.ndim == 1 or not keeps:
            return p.reshape((1, -1) + (1,) * (x.ndim - 2))
    return p


@kernel("RequantShift")
def _requant_shift(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 3, ctx)
    x, mul, add = ins[0], ins[1], ins[2]
    shift = _log2_attr(attrs, "div", ctx)
    levels = attrs.get("n_levels_out", attrs.get("n_levels", 256))
    lo, hi = levels_range(levels, _attr(attrs, "signed", ctx, 1), ctx)
    x = _check_range(x, -(2**40), 2**40, "RequantShift input", ctx, "keep accumulators within 40 bits")
    return requant_shift(x, _channel(mul, x), _channel(add, x), shift, lo, hi)


# ------------------------------------------------------------------------------------------------- softmaxes
def softmax_rows(x: np.ndarray, a: int, b: int, c: int, log2: int, n: int, ctx: KernelContext) -> np.ndarray:
    """iSoftmax on the last axis of int64 ``x`` (module docstring); the output lies in ``[0, n - 1]``.

    The kernel sums ``e`` and forms ``e (n - 1)`` in uint32; a row where either reaches 2^32 is refused.
    """
    e = intops.exp_ibert(x - x.max(axis=-1, keepdims=True), log2, a, b, c)
    total = e.sum(axis=-1, keepdims=True)
    if e.size and (int(total.max()) >= 2**32 or int(e.max()) * (n - 1) >= 2**32 or int(total.min()) <= 0):
        raise GraphError(
            "iSoftmax sums", value=f"max e (n-1) = {int(e.max()) * (n - 1)}, row sums {int(total.min())}.."
            f"{int(total.max())}", limit="0 < sums and products < 2^32 (the kernel's uint32)", where=ctx.label,
            fix="use smaller softmax coefficients or shorter rows",
        )  # fmt: skip
    return (e * (n - 1)) // total


@kernel("iSoftmax")
def _isoftmax(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 1, ctx)
    a, b, c = (_int_attr(attrs, k, ctx) for k in ("coeffA", "coeffB", "coeffC"))
    log2 = _int_attr(attrs, "log2", ctx)
    n = _levels(attrs, ctx, 256)
    if log2 < 1 or a < 0 or c < 0:
        raise GraphError(
            "iSoftmax coefficients", value=f"coeffA={a}, coeffC={c}, log2={log2}",
            limit="log2 >= 1, coeffA >= 0, coeffC >= 0", where=ctx.label, fix="re-export the integer softmax",
        )  # fmt: skip
    x = _check_range(ins[0], -(n // 2), n - 1, "iSoftmax input", ctx, "requantize the input to n_levels first")
    return softmax_rows(x, a, b, c, log2, n, ctx)


def itamax_rows(x: np.ndarray, n: int) -> np.ndarray:
    """ITAMax on the last axis of int64 ``x`` (module docstring); unsigned output in ``[0, n - 1]``."""
    k = (x.max(axis=-1, keepdims=True) - x + 16) >> 5
    s = (256 >> k).sum(axis=-1, keepdims=True)
    return (((n - 1) * 256) // s) >> k


def itapartialmax_rows(x: np.ndarray, group: int, n: int) -> np.ndarray:
    """ITAPartialMax on the last axis of int64 ``x`` (module docstring)."""
    rows = x.reshape(-1, x.shape[-1])
    m = np.full((rows.shape[0], 1), -128, dtype=np.int64)
    s = np.zeros((rows.shape[0], 1), dtype=np.int64)
    for g in range(rows.shape[1] // group):
        block = rows[:, g * group : (g + 1) * group]
        cur = block.max(axis=1, keepdims=True)
        grow = cur > m
        r = np.where(grow, (cur - m + 16) >> 5, 0)
        m = np.where(grow, cur, m)
        s = (s >> r) + (256 >> ((m - block + 16) >> 5)).sum(axis=1, keepdims=True)
    inv = ((n // 2 - 1) * 256) // s
    y = inv >> ((m - rows + 16) >> 5)
    return y.reshape(x.shape)


@kernel("ITAMax")
def _itamax(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 1, ctx)
    n = _levels(attrs, ctx)
    return itamax_rows(_signed_in(ins[0], n, ctx, "ITAMax input"), n)


@kernel("ITAPartialMax")
def _itapartialmax(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 1, ctx)
    n = _levels(attrs, ctx)
    group = _int_attr(attrs, "group_width", ctx)
    x = _signed_in(ins[0], n, ctx, "ITAPartialMax input")
    if not 1 <= group <= x.shape[-1]:
        raise GraphError(
            "group_width", value=group, limit=f"1..{x.shape[-1]} (the row length)", where=ctx.label,
            fix="use a group width that divides the row",
        )  # fmt: skip
    return itapartialmax_rows(x, group, n)


# ---------------------------------------------------------------------------------------------------- norms
def _row_weight(w: Any, x: np.ndarray, name: str, ctx: KernelContext) -> np.ndarray:
    w = np.asarray(w)
    if w.dtype.kind == "f":
        raise GraphError(name, value=f"float tensor {w.dtype}", limit="integer mode", where=ctx.label,
                         fix="run Deeploy's dialect in integer mode")  # fmt: skip
    w = w.astype(np.int64)
    if w.size not in (1, x.shape[-1]):
        raise GraphError(
            name, value=f"{w.size} values", limit=f"1 or {x.shape[-1]} (the last axis)", where=ctx.label,
            fix="give one value per element of the normalized axis",
        )  # fmt: skip
    return w.reshape(-1)


@kernel("iRMSNorm")
def _irmsnorm(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 2, ctx)
    d = _log2_attr(attrs, "D", ctx)
    n = _levels(attrs, ctx)
    x = _signed_in(ins[0], n, ctx, "iRMSNorm input")
    w = _row_weight(ins[1], x, "iRMSNorm weight", ctx)
    return np.clip(intops.rmsnorm(x, w, 0) >> d, -(n // 2), n // 2 - 1)


@kernel("iLayerNorm")
def _ilayernorm(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 3, ctx)
    d = _log2_attr(attrs, "D", ctx)
    n = _levels(attrs, ctx)
    x = _check_range(ins[0], -(n // 2), n - 1, "iLayerNorm input", ctx, "requantize the input to n_levels first")
    w = _row_weight(ins[1], x, "iLayerNorm weight", ctx)
    b = _row_weight(ins[2], x, "iLayerNorm bias", ctx)
    return np.clip(intops.layernorm(x, w, b, 0) >> d, -(n // 2), n // 2 - 1)


@kernel("iNoNorm")
def _inonorm(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 3, ctx)
    d = _log2_attr(attrs, "D", ctx)
    mul = _int_attr(attrs, "mul", ctx)
    n = _levels(attrs, ctx)
    x = _signed_in(ins[0], n, ctx, "iNoNorm input")
    w = _check_range(ins[1], -(2**31), 2**31 - 1, "iNoNorm weights", ctx, "store the weights in int32")
    b = _check_range(ins[2], -(2**31), 2**31 - 1, "iNoNorm bias", ctx, "store the bias in int32")
    y = ((x * w + b) * mul) >> d
    return _out_range(y, -(n // 2), n // 2 - 1, ctx, "iNoNorm result")


# ------------------------------------------------------------------------------------------ activations
def _hardswish(x: np.ndarray, one_over_six: int, three: int, six: int) -> np.ndarray:
    return x * (np.clip(x + three, 0, six) * one_over_six)


def _gelu_attrs(attrs: Mapping[str, Any], ctx: KernelContext) -> tuple[int, int]:
    b, one = _int_attr(attrs, "b", ctx), _int_attr(attrs, "one", ctx)
    if b >= 0 or b < -(2**15) or not 0 < one < 2**31:
        raise GraphError(
            "iGELU attributes", value=f"b={b}, one={one}", limit="-2^15 <= b < 0 and 0 < one < 2^31",
            where=ctx.label, fix="re-export the integer GELU",
        )  # fmt: skip
    return b, one


def _hardswish_attrs(attrs: Mapping[str, Any], ctx: KernelContext) -> tuple[int, int, int]:
    vals = tuple(_int_attr(attrs, k, ctx) for k in ("one_over_six", "three", "six"))
    if min(vals) < 0:
        raise GraphError(
            "iHardswish attributes", value=vals, limit="one_over_six, three, six >= 0", where=ctx.label,
            fix="re-export the integer hardswish",
        )  # fmt: skip
    return vals


@kernel("iGELU")
def _igelu(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 1, ctx)
    b, one = _gelu_attrs(attrs, ctx)
    x = _signed_in(ins[0], 256, ctx, "iGELU input")
    return _out_range(intops.gelu_ibert(x, b, one), *INT32, ctx, "iGELU result")


@kernel("iHardswish")
def _ihardswish(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 1, ctx)
    x = _signed_in(ins[0], 256, ctx, "iHardswish input")
    return _out_range(_hardswish(x, *_hardswish_attrs(attrs, ctx)), *INT32, ctx, "iHardswish result")


def _requant8(h: np.ndarray, mul: int, add: int, shift: int, ctx: KernelContext) -> np.ndarray:
    if not 0 <= shift <= 62:
        raise GraphError("shift", value=shift, limit="0..62", where=ctx.label, fix="requantize with a smaller shift")
    return requant_shift(h, np.int64(mul), np.int64(add), shift, -128, 127)


@kernel("RequantizediHardswish")
def _rq_hardswish(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 1, ctx)
    x = _signed_in(ins[0], 256, ctx, "RequantizediHardswish input")
    h = _hardswish(x, *_hardswish_attrs(attrs, ctx))
    mul, add, shift = (_int_attr(attrs, k, ctx) for k in ("mul", "add", "shift"))
    return _requant8(h, mul, add, shift, ctx)


@kernel("RequantizedGELU", "RequantizediGELU")
def _rq_gelu(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 4, ctx)
    x = _signed_in(ins[0], 256, ctx, "RequantizedGELU input")
    h = intops.gelu_ibert(x, *_gelu_attrs(attrs, ctx))
    mul, add, shift = ({"v": v} for v in ins[1:4])
    return _requant8(h, _int_attr(mul, "v", ctx), _int_attr(add, "v", ctx), _int_attr(shift, "v", ctx), ctx)


# ----------------------------------------------------------------------------------- division and mean
def _div_attrs(attrs: Mapping[str, Any], ctx: KernelContext) -> tuple[int, int, int]:
    delta, eps, eta = (_int_attr(attrs, k, ctx) for k in ("Delta", "eps", "eta"))
    if delta < 1 or eta < 1 or eps < 0:
        raise GraphError(
            "division attributes", value=f"Delta={delta}, eta={eta}, eps={eps}", limit="Delta, eta >= 1, eps >= 0",
            where=ctx.label, fix="re-export the integer division",
        )  # fmt: skip
    return delta, eps, eta


@kernel("TrueIntegerDiv")
def _true_integer_div(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 1, ctx)
    delta, eps, eta = _div_attrs(attrs, ctx)
    y = _int_attr(attrs, "y", ctx)
    if y * eta + eps <= 0:
        raise GraphError(
            "TrueIntegerDiv divisor", value=y * eta + eps, limit="y eta + eps > 0", where=ctx.label,
            fix="divide by a positive constant",
        )  # fmt: skip
    x = _check_range(ins[0], *INT32, "TrueIntegerDiv input", ctx, "requantize the input to int32 first")
    return x * ((delta * eta) // (y * eta + eps))


@kernel("IntegerDiv")
def _integer_div(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 2, ctx)
    delta, eps, eta = _div_attrs(attrs, ctx)
    a = _check_range(ins[0], *INT32, "IntegerDiv numerator", ctx, "requantize the numerator to int32 first")
    b = _check_range(ins[1], *INT32, "IntegerDiv denominator", ctx, "requantize the denominator to int32 first")
    u = delta * eta * a
    v = eta * b + eps
    if np.any(v == 0) or np.any(np.abs(u) >= 2**62):
        raise GraphError(
            "IntegerDiv operands", value="a zero denominator eta b + eps or |Delta eta a| >= 2^62",
            limit="nonzero denominators, 63-bit numerators", where=ctx.label, fix="check the division's inputs",
        )  # fmt: skip
    y = tdiv(u + np.where(u >= 0, 1, -1) * (v >> 1), v)
    return _out_range(y, *INT32, ctx, "IntegerDiv result")


@kernel("IntegerMean")
def _integer_mean(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 1, ctx)
    x = _check_range(ins[0], *INT32, "IntegerMean input", ctx, "requantize the input to int32 first")
    axes = np.atleast_1d(np.asarray(_attr(attrs, "axes", ctx))).astype(np.int64).tolist()
    keep = bool(_int_attr(attrs, "keepdims", ctx, 1))
    if any(not -x.ndim <= a < x.ndim for a in axes):
        raise GraphError(
            "IntegerMean axes", value=axes, limit=f"axes in -{x.ndim}..{x.ndim - 1}", where=ctx.label,
            fix="reduce over existing axes",
        )  # fmt: skip
    axes_t = tuple(sorted({a % x.ndim for a in axes}))
    count = int(np.prod([x.shape[a] for a in axes_t]))
    s = x.sum(axis=axes_t, keepdims=keep)
    if count & (count - 1) == 0:
        shift = count.bit_length() - 1
        return (s + (1 << shift >> 1)) >> shift
    return tdiv(s + np.where(s >= 0, 1, -1) * (count >> 1), count)
