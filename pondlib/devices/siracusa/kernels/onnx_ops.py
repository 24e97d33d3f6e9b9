r"""Standard ONNX ops on Siracusa's graph path, integer (int64, exact) and float32.

Elementwise ops broadcast as numpy (ONNX's multidirectional broadcasting); shape ops follow the ONNX
operator definitions of the model's opset (attributes before opset 10/11/13/18, inputs after). Tensors are
``NC[D][H]W`` (channels on axis 1). Float mode computes in float32 (products and sums accumulate in float32
as the cluster's FPUs do; transcendental functions are evaluated in float64 and rounded once to float32, at
least as accurate as the chip's ``libm``). Integer mode holds exact integers in int64 and computes with
integers only; an op without an integer rule raises :class:`~pondlib.errors.GraphError`.

Arithmetic (``x``, ``y`` inputs, broadcast)
    Add/Sub/Mul ``x + y``, ``x - y``, ``x y``. Div: float ``x / y``; integer ``trunc(x / y)`` (ONNX's
    integer Div, C semantics), or with Deeploy's attributes ``Delta, eps, eta`` (its IntegerDiv carried
    by a Div node) ``q = (n + sgn(n) floor(d / 2)) / d`` truncated, ``n = Delta eta x``, ``d = eta y + eps``
    (float mode ignores those attributes).
    Pow ``x^y`` (integer: ``y`` a whole number >= 0). Sqrt, Exp, Floor, Ceil, Round (half to even) and
    Clip ``min(max(x, lo), hi)`` (integer mode: Floor/Ceil/Round are the identity; Clip bounds whole numbers).
Activations (float only unless said)
    Relu ``max(x, 0)`` (both modes); Sigmoid ``1 / (1 + e^-x)``; HardSigmoid ``max(0, min(1, a x + b))``
    (``a = 0.2, b = 0.5``); HardSwish ``x max(0, min(1, x/6 + 1/2))``; Swish ``x sigmoid(a x)`` (``a = 1``);
    Gelu ``x/2 (1 + erf(x / sqrt 2))`` or, ``approximate='tanh'``, ``x/2 (1 + tanh(sqrt(2/pi)(x + 0.044715
    x^3)))``; ``com.microsoft:Gelu`` the erf form. Softmax ``e^(x - max) / sum e^(x - max)`` over ``axis``
    (opset >= 13, default -1) or over the dims from ``axis`` on (opset < 13, default 1, flattened). Deeploy
    computes an axis-less Softmax on the last axis whatever the opset; ONNX's rule is kept here.
Linear algebra
    MatMul ``numpy.matmul`` (batched, broadcasting; integer: exact int64). Gemm ``Y = alpha A' B' + beta C``
    with ``A' = A^T`` if transA etc. (integer: ``alpha, beta`` whole numbers; Deeploy's batched Gemm, A or B
    of rank > 2, is the batched product over the leading dims, transposes on the last two). Conv (1-, 2-, 3-D)
    ``y[n, m, o] = b[m] + sum_{c in group(m), k} x_pad[n, c, o s + k d] w[m, c, k]`` with ``x_pad`` zero
    padded by ``pads = [begin..., end...]``, output size ``floor((L + pb + pe - d (K - 1) - 1) / s) + 1``.
    ConvTranspose (1-, 2-D) ``y[n, m, i s + k d - pb] += x[n, c, i] w[c, m, k]``, output size
    ``s (L - 1) + op + d (K - 1) + 1 - pb - pe`` (``op`` = output_padding, or ``output_shape`` given).
Pooling (windows as Conv; ``ceil_mode`` takes ``ceil`` in the output size)
    MaxPool ``max`` over the window (padding never wins); AveragePool ``sum / count`` with ``count`` the
    window's cells inside the input (plus the explicit pads when ``count_include_pad``); GlobalAveragePool
    and GlobalMaxPool over all spatial dims. Integer mean (:func:`pondlib.devices.core.intops.integer_mean`,
    shared with the other chips; integer Div truncates with ``intops.tdiv``): ``floor((2 s + n) / (2 n))``,
    ``s`` the sum of ``n`` cells (round half up; Deeploy's integer ReduceMean goldens follow this rule exactly).
Normalizations (float; ``mu``, ``var`` biased, over the normalized dims)
    LayerNormalization ``(x - mu) / sqrt(var + eps) scale + bias`` over dims ``axis..`` (outputs Y, Mean,
    InvStdDev); GroupNormalization over (group's channels, spatial), scale/bias per channel (opset 21) or
    per group (opset 18); InstanceNormalization over spatial dims per (n, c); BatchNormalization (inference)
    ``(x - mean[c]) / sqrt(var[c] + eps) scale[c] + B[c]``; RMSNormalization (opset 23; Deeploy's RMSNorm
    with ``eps``) ``x / sqrt(mean(x^2) + eps) scale`` over dims ``axis..`` (RMSNorm: the last dim).
Reductions
    ReduceSum ``sum`` and ReduceMean ``sum / n`` over ``axes`` (attribute before opset 13 / 18, input
    after), ``keepdims``, ``noop_with_empty_axes``; integer ReduceMean rounds as the integer mean above.
Shape and data movement
    Reshape, Transpose, Concat, Identity, Flatten (``axis``), Squeeze/Unsqueeze (``axes``), Shape
    (``start``, ``end``), Slice (starts, ends, axes, steps; ONNX clamping), Gather (``axis``, negative
    indices count from the end), Pad (constant/reflect/edge/wrap; pads as attribute before opset 11, input
    after; negative pads crop), Cast (``to``; float mode casts to the target's precision, out-of-range
    integer targets are refused, never wrapped).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from pondlib.devices.core.intops import integer_mean, tdiv
from pondlib.devices.siracusa.kernels import KernelContext, kernel
from pondlib.errors import GraphError

__all__ = ["conv", "conv_transpose", "pool", "integer_mean"]

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


# -- helpers ---------------------------------------------------------------------------------------------------
def _fail(what: str, value: Any, limit: Any, ctx: KernelContext, fix: str) -> GraphError:
    return GraphError(what, value=value, limit=limit, where=ctx.label, fix=fix)


def _int_list(value: Any, name: str, ctx: KernelContext) -> list[int]:
    """A list of whole numbers from an attribute or a shape tensor."""
    arr = np.asarray(value).reshape(-1)
    if arr.dtype.kind == "f" and not np.all(arr == np.round(arr)):
        raise _fail(name, arr.tolist(), "whole numbers", ctx, f"pass integer {name}")
    return [int(v) for v in arr]


def _float_mode_only(ctx: KernelContext, op: str) -> None:
    if ctx.integer:
        raise _fail(
            "op without an integer rule", op, "float mode (float32 tensors)", ctx,
            f"integerize {op} into Deeploy's dialect (RequantShift, i-ops), or run the graph with integer=False",
        )  # fmt: skip


def _whole(value: Any, name: str, ctx: KernelContext) -> int:
    v = float(np.asarray(value).reshape(-1)[0])
    if not math.isfinite(v) or v != round(v):
        raise _fail(f"integer-mode {name}", v, "a whole number", ctx, f"use a whole {name} or run in float mode")
    return int(v)


def _axis(axis: Any, rank: int, name: str, ctx: KernelContext) -> int:
    a = int(axis)
    if not -rank <= a < max(rank, 1):
        raise _fail(name, a, f"-{rank}..{rank - 1} (rank {rank})", ctx, f"pass an {name} inside the tensor's rank")
    return a % max(rank, 1)


def _axes(values: Sequence[int], rank: int, name: str, ctx: KernelContext) -> tuple[int, ...]:
    out = tuple(_axis(a, rank, name, ctx) for a in values)
    if len(set(out)) != len(out):
        raise _fail(name, list(values), "distinct axes", ctx, f"list each axis once in {name}")
    return out


def _f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _no_overflow(a: np.ndarray, b: np.ndarray, terms: int, op: str, ctx: KernelContext) -> None:
    """Integer mode: refuse a sum of ``terms`` products of ``a`` and ``b`` entries that could leave int64."""
    big = max(int(np.max(np.abs(a), initial=0)), 1) * max(int(np.max(np.abs(b), initial=0)), 1) * max(terms, 1)
    if big >= 2**62:
        raise _fail(
            f"integer {op} accumulator", f"up to {big:.3g}", "< 2^62 (exact int64)", ctx,
            "requantize the operands to narrower integers first",
        )  # fmt: skip


def _need(ins: list, n: int, op: str, ctx: KernelContext) -> None:
    if len(ins) < n or any(x is None for x in ins[:n]):
        raise _fail(f"{op} inputs", f"{len(ins)} given", f"{n} required inputs", ctx, "re-export the model")


# -- elementwise arithmetic ------------------------------------------------------------------------------------
@kernel("Add")
def _add(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    return np.add(ins[0], ins[1])


@kernel("Sub")
def _sub(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    return np.subtract(ins[0], ins[1])


@kernel("Mul")
def _mul(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    return np.multiply(ins[0], ins[1])


@kernel("Div")
def _div(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    x, y = ins[0], ins[1]
    if not ctx.integer:
        return np.divide(_f32(x), _f32(y))
    if all(k in attrs for k in ("Delta", "eps", "eta")):
        delta, eps, eta = (_whole(attrs[k], k, ctx) for k in ("Delta", "eps", "eta"))
        num = delta * eta * np.asarray(x, dtype=np.int64)
        den = np.broadcast_to(eta * np.asarray(y, dtype=np.int64) + eps, np.broadcast_shapes(num.shape, y.shape))
        num = np.broadcast_to(num, den.shape)
        return _trunc_div(num + np.sign(num) * (den >> 1), den, ctx)
    return _trunc_div(np.asarray(x, dtype=np.int64), np.asarray(y, dtype=np.int64), ctx)


def _trunc_div(num: np.ndarray, den: np.ndarray, ctx: KernelContext) -> np.ndarray:
    """``num / den`` truncated toward zero (C integer division), exactly."""
    if np.any(den == 0):
        raise _fail("integer Div by zero", "a zero divisor", "nonzero divisors", ctx, "check the divisor tensor")
    return tdiv(num, den)


@kernel("Pow")
def _pow(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    x, e = ins[0], ins[1]
    if not ctx.integer:
        return np.power(_f32(x), _f32(e))
    e = np.asarray(e, dtype=np.int64)
    if np.any(e < 0):
        raise _fail("integer Pow exponent", int(e.min()), ">= 0", ctx, "run negative powers in float mode")
    mag = np.log2(np.maximum(np.abs(np.asarray(x, dtype=np.float64)), 1.0)) * e
    if np.any(mag > 62):
        raise _fail("integer Pow result", "beyond int64", "|x^y| < 2^62", ctx, "scale the operands down")
    return np.power(np.asarray(x, dtype=np.int64), e)


def _unary(name: str, fn: Any) -> None:
    @kernel(name)
    def _op(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
        _float_mode_only(ctx, name)
        return fn(np.asarray(ins[0], dtype=np.float64)).astype(np.float32)


_unary("Sqrt", np.sqrt)
_unary("Exp", np.exp)
_unary("Sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x)))


def _rounding(name: str, fn: Any) -> None:
    @kernel(name)
    def _op(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
        return ins[0] if ctx.integer else fn(_f32(ins[0]))


_rounding("Floor", np.floor)
_rounding("Ceil", np.ceil)
_rounding("Round", np.rint)


@kernel("Clip")
def _clip(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    x = ins[0]
    lo = ins[1] if len(ins) > 1 and ins[1] is not None else attrs.get("min")
    hi = ins[2] if len(ins) > 2 and ins[2] is not None else attrs.get("max")
    if ctx.integer:
        lo = None if lo is None else _whole(lo, "Clip min", ctx)
        hi = None if hi is None else _whole(hi, "Clip max", ctx)
    else:
        lo = None if lo is None else np.float32(np.asarray(lo).reshape(-1)[0])
        hi = None if hi is None else np.float32(np.asarray(hi).reshape(-1)[0])
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return x


@kernel("Identity")
def _identity(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    return ins[0]


@kernel("Relu")
def _relu(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    return np.maximum(ins[0], 0).astype(ins[0].dtype)


# -- activations (float) ---------------------------------------------------------------------------------------
def _sigmoid64(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # = 1 / (1 + e^-x), without overflow for large |x|


@kernel("HardSigmoid")
def _hard_sigmoid(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _float_mode_only(ctx, "HardSigmoid")
    a, b = np.float32(attrs.get("alpha", 0.2)), np.float32(attrs.get("beta", 0.5))
    return np.clip(a * _f32(ins[0]) + b, np.float32(0), np.float32(1))


@kernel("HardSwish")
def _hard_swish(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _float_mode_only(ctx, "HardSwish")
    x = _f32(ins[0])
    return x * np.clip(x / np.float32(6) + np.float32(0.5), np.float32(0), np.float32(1))


@kernel("Swish")
def _swish(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _float_mode_only(ctx, "Swish")
    x = np.asarray(ins[0], dtype=np.float64)
    alpha = float(np.float32(attrs.get("alpha", 1.0)))
    return (x * _sigmoid64(alpha * x)).astype(np.float32)


def _gelu(x: np.ndarray, approximate: str, ctx: KernelContext) -> np.ndarray:
    from scipy.special import erf

    x = np.asarray(x, dtype=np.float64)
    if approximate == "none":
        return (0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))).astype(np.float32)
    if approximate == "tanh":
        return (0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))).astype(np.float32)
    raise _fail("Gelu approximate", approximate, "'none' or 'tanh'", ctx, "export Gelu with a standard approximate")


@kernel("Gelu")
def _gelu_onnx(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _float_mode_only(ctx, "Gelu")
    return _gelu(ins[0], str(attrs.get("approximate", "none")), ctx)


@kernel("Gelu", domain="com.microsoft")
def _gelu_ms(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _float_mode_only(ctx, "Gelu")
    return _gelu(ins[0], "none", ctx)


@kernel("Softmax")
def _softmax(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _float_mode_only(ctx, "Softmax")
    x = _f32(ins[0])
    if ctx.opset >= 13:
        ax = _axis(attrs.get("axis", -1), x.ndim, "Softmax axis", ctx)
        m = x.max(axis=ax, keepdims=True)
        e = np.exp((x - m).astype(np.float64)).astype(np.float32)
        return e / e.sum(axis=ax, keepdims=True, dtype=np.float32)
    ax = _axis(attrs.get("axis", 1), x.ndim, "Softmax axis", ctx)
    flat = x.reshape(int(np.prod(x.shape[:ax], dtype=np.int64)), -1)
    e = np.exp((flat - flat.max(axis=1, keepdims=True)).astype(np.float64)).astype(np.float32)
    return (e / e.sum(axis=1, keepdims=True, dtype=np.float32)).reshape(x.shape)


# -- linear algebra --------------------------------------------------------------------------------------------
@kernel("MatMul")
def _matmul(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    a, b = ins[0], ins[1]
    if ctx.integer:
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        _no_overflow(a, b, a.shape[-1], "MatMul", ctx)
        return np.matmul(a, b)
    return np.matmul(_f32(a), _f32(b))


@kernel("Gemm")
def _gemm(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 2, "Gemm", ctx)
    a, b = ins[0], ins[1]
    c = ins[2] if len(ins) > 2 else None
    for name, m in (("A", a), ("B", b)):
        if np.ndim(m) < 2:
            raise _fail(f"Gemm {name} rank", np.ndim(m), ">= 2 (a matrix or a batch)", ctx, "reshape to 2-D")
    if attrs.get("transA", 0):
        a = np.swapaxes(a, -1, -2)
    if attrs.get("transB", 0):
        b = np.swapaxes(b, -1, -2)
    if ctx.integer:
        alpha = _whole(attrs.get("alpha", 1.0), "Gemm alpha", ctx)
        beta = _whole(attrs.get("beta", 1.0), "Gemm beta", ctx)
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        _no_overflow(a, b, a.shape[-1] * max(abs(alpha), abs(beta), 1) + 1, "Gemm", ctx)
        y = alpha * np.matmul(a, b)
        return y if c is None else y + beta * np.asarray(c, dtype=np.int64)
    alpha, beta = np.float32(attrs.get("alpha", 1.0)), np.float32(attrs.get("beta", 1.0))
    y = np.matmul(_f32(a), _f32(b))
    if alpha != 1:
        y = alpha * y
    if c is not None:
        y = y + (_f32(c) if beta == 1 else beta * _f32(c))
    return y


def _spatial(attrs: Mapping[str, Any], key: str, nd: int, default: int, ctx: KernelContext) -> list[int]:
    vals = _int_list(attrs[key], key, ctx) if key in attrs else [default] * (2 * nd if key == "pads" else nd)
    want = 2 * nd if key == "pads" else nd
    if len(vals) != want:
        raise _fail(key, vals, f"{want} values for {nd} spatial dims", ctx, f"give one {key} per spatial dim")
    lowest = 0 if key == "pads" else 1
    if min(vals, default=lowest) < lowest:
        raise _fail(key, vals, f">= {lowest}", ctx, f"pass {key} of at least {lowest}")
    return vals


def _auto_pad(attrs: Mapping[str, Any], ctx: KernelContext) -> None:
    mode = attrs.get("auto_pad", "NOTSET")
    if mode not in ("NOTSET", "VALID"):
        raise _fail("auto_pad", mode, "NOTSET or VALID", ctx, "export the model with explicit pads (auto_pad=NOTSET)")


def _windows(x: np.ndarray, kernel_shape: Sequence[int], strides: Sequence[int], dils: Sequence[int]) -> np.ndarray:
    """``(N, C, O..., K...)`` views of the (already padded) ``x``: window ``o`` at ``o s``, taps ``k d`` apart."""
    nd = len(kernel_shape)
    span = [d * (k - 1) + 1 for k, d in zip(kernel_shape, dils)]
    win = sliding_window_view(x, span, axis=tuple(range(2, 2 + nd)))
    sl = (slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)
    return win[sl + tuple(slice(None, None, d) for d in dils)]


def _conv_params(x: np.ndarray, w: np.ndarray, attrs: Mapping[str, Any], ctx: KernelContext) -> tuple:
    if x.ndim < 3 or w.ndim != x.ndim:
        raise _fail(
            "Conv ranks", f"X {x.shape}, W {w.shape}", "X (N, C, spatial...) and W of the same rank", ctx,
            "pass NCW / NCHW tensors and (M, C/group, K...) weights",
        )  # fmt: skip
    _auto_pad(attrs, ctx)
    nd = x.ndim - 2
    ks = list(w.shape[2:])
    if "kernel_shape" in attrs and _int_list(attrs["kernel_shape"], "kernel_shape", ctx) != ks:
        raise _fail("kernel_shape", attrs["kernel_shape"], f"W's spatial shape {ks}", ctx, "fix the attribute")
    return (
        nd,
        ks,
        _spatial(attrs, "strides", nd, 1, ctx),
        _spatial(attrs, "pads", nd, 0, ctx),
        (_spatial(attrs, "dilations", nd, 1, ctx)),
    )


def conv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, attrs: Mapping[str, Any], ctx: KernelContext) -> Any:
    """ONNX Conv (module docstring): int64 exact in integer mode, float32 accumulation otherwise."""
    nd, ks, strides, pads, dils = _conv_params(x, w, attrs, ctx)
    group = int(attrs.get("group", 1))
    n, c = x.shape[:2]
    m = w.shape[0]
    if group < 1 or c % group or m % group or w.shape[1] * group != c:
        raise _fail(
            "Conv group", group, f"a divisor of C={c} and M={m} with W's C/group = {w.shape[1]}", ctx,
            "pass group = C / W.shape[1]",
        )  # fmt: skip
    dtype = np.int64 if ctx.integer else np.float32
    if ctx.integer:
        _no_overflow(x, w, int(np.prod(w.shape[1:])) + 1, "Conv", ctx)
    xp = np.pad(np.asarray(x, dtype=dtype), [(0, 0), (0, 0)] + [(pads[i], pads[i + nd]) for i in range(nd)])
    if any(xp.shape[2 + i] < dils[i] * (ks[i] - 1) + 1 for i in range(nd)):
        raise _fail("Conv window", f"input {x.shape} padded {pads}", f"at least the dilated kernel {ks}", ctx,
                    "pad the input or shrink the kernel")  # fmt: skip
    win = _windows(xp, ks, strides, dils)
    outs = win.shape[2 : 2 + nd]
    win = win.reshape((n, group, c // group) + outs + tuple(ks))
    wg = np.asarray(w, dtype=dtype).reshape((group, m // group, c // group) + tuple(ks))
    o, k = _LETTERS[:nd], _LETTERS[nd : 2 * nd]
    y = np.einsum(f"NGC{o}{k},GMC{k}->NGM{o}", win, wg, optimize=True).reshape((n, m) + outs)
    if b is not None:
        y = y + np.asarray(b, dtype=dtype).reshape((1, m) + (1,) * nd)
    return y.astype(dtype)


@kernel("Conv")
def _conv(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 2, "Conv", ctx)
    return conv(ins[0], ins[1], ins[2] if len(ins) > 2 else None, attrs, ctx)


def conv_transpose(x: np.ndarray, w: np.ndarray, b: Any, attrs: Mapping[str, Any], ctx: KernelContext) -> Any:
    """ONNX ConvTranspose (module docstring), 1-D and 2-D, groups, output_padding / output_shape."""
    nd, ks, strides, pads, dils = _conv_params(x, w, {k: v for k, v in attrs.items() if k != "kernel_shape"}, ctx)
    group = int(attrs.get("group", 1))
    n, c = x.shape[:2]
    if group < 1 or c % group or w.shape[0] != c:
        raise _fail("ConvTranspose group", group, f"a divisor of C={c} (W's first dim {w.shape[0]})", ctx,
                    "pass W of shape (C, M/group, K...)")  # fmt: skip
    m = w.shape[1] * group
    opad = _spatial(attrs, "output_padding", nd, 0, ctx) if "output_padding" in attrs else [0] * nd
    full = [strides[i] * (x.shape[2 + i] - 1) + opad[i] + dils[i] * (ks[i] - 1) + 1 for i in range(nd)]
    if "output_shape" in attrs:
        shape = _int_list(attrs["output_shape"], "output_shape", ctx)[-nd:]
        total = [full[i] - shape[i] for i in range(nd)]
        if min(total) < 0:
            raise _fail("output_shape", shape, f"<= {full}", ctx, "pass a reachable output_shape")
        pads = [t // 2 for t in total] + [t - t // 2 for t in total]  # auto_pad NOTSET: extra at the end
    dtype = np.int64 if ctx.integer else np.float32
    if ctx.integer:
        _no_overflow(x, w, int(np.prod(w.shape)) + 1, "ConvTranspose", ctx)
    xg = np.asarray(x, dtype=dtype).reshape((n, group, c // group) + x.shape[2:])
    wg = np.asarray(w, dtype=dtype).reshape((group, c // group, m // group) + tuple(ks))
    y = np.zeros((n, group, m // group) + tuple(full), dtype=dtype)
    o = _LETTERS[:nd]
    for tap in np.ndindex(*ks):
        part = np.einsum(f"NGC{o},GCM->NGM{o}", xg, wg[(Ellipsis,) + tap], optimize=True)
        sl = tuple(slice(tap[i] * dils[i], tap[i] * dils[i] + strides[i] * (x.shape[2 + i] - 1) + 1, strides[i])
                   for i in range(nd))  # fmt: skip
        y[(slice(None),) * 3 + sl] += part
    y = y.reshape((n, m) + tuple(full))
    crop = tuple(slice(pads[i], full[i] - pads[i + nd]) for i in range(nd))
    y = y[(slice(None), slice(None)) + crop]
    if b is not None:
        y = y + np.asarray(b, dtype=dtype).reshape((1, m) + (1,) * nd)
    return y.astype(dtype)


@kernel("ConvTranspose")
def _conv_transpose(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _need(ins, 2, "ConvTranspose", ctx)
    return conv_transpose(ins[0], ins[1], ins[2] if len(ins) > 2 else None, attrs, ctx)


# -- pooling ---------------------------------------------------------------------------------------------------
def pool(x: np.ndarray, attrs: Mapping[str, Any], ctx: KernelContext, kind: str) -> np.ndarray:
    """MaxPool (``kind='max'``) or AveragePool (``'avg'``) per the module docstring."""
    if np.ndim(x) < 3:
        raise _fail(f"{kind} pool input rank", np.ndim(x), ">= 3 (N, C, spatial...)", ctx, "pass NCW/NCHW tensors")
    _auto_pad(attrs, ctx)
    nd = x.ndim - 2
    if "kernel_shape" not in attrs:
        raise _fail("kernel_shape", "missing", "present", ctx, "export the pool with kernel_shape")
    ks = _spatial(attrs, "kernel_shape", nd, 1, ctx)
    strides, pads = _spatial(attrs, "strides", nd, 1, ctx), _spatial(attrs, "pads", nd, 0, ctx)
    dils = _spatial(attrs, "dilations", nd, 1, ctx)
    if int(attrs.get("storage_order", 0)):
        raise _fail("MaxPool storage_order", 1, "0 (row major)", ctx, "export with storage_order=0")
    extra = []
    for i in range(nd):
        span = dils[i] * (ks[i] - 1) + 1
        room = x.shape[2 + i] + pads[i] + pads[i + nd] - span
        if room < 0:
            raise _fail("pool window", f"input {x.shape} padded {pads}", f"at least the window {ks}", ctx,
                        "pad the input or shrink the kernel")  # fmt: skip
        outs = (-(-room // strides[i]) if attrs.get("ceil_mode", 0) else room // strides[i]) + 1
        if attrs.get("ceil_mode", 0) and (outs - 1) * strides[i] >= x.shape[2 + i] + pads[i]:
            outs -= 1  # ONNX: the last window must start inside the input or the begin padding
        extra.append((outs - 1) * strides[i] + span - (x.shape[2 + i] + pads[i] + pads[i + nd]))
    widths = [(0, 0), (0, 0)] + [(pads[i], pads[i + nd] + max(extra[i], 0)) for i in range(nd)]
    axes = tuple(range(-nd, 0))
    if kind == "max":
        low = np.iinfo(np.int64).min if ctx.integer else -np.inf
        xp = np.pad(x, widths, constant_values=low)
        return _windows(xp, ks, strides, dils).max(axis=axes)
    inside = np.pad(np.ones(x.shape[2:], dtype=np.int64), widths[2:])
    if attrs.get("count_include_pad", 0):
        inside = np.pad(np.ones([x.shape[2 + i] + pads[i] + pads[i + nd] for i in range(nd)], dtype=np.int64),
                        [(0, max(e, 0)) for e in extra])  # fmt: skip
    count = _windows(inside[None, None], ks, strides, dils).sum(axis=axes)
    if ctx.integer:
        total = _windows(np.pad(np.asarray(x, dtype=np.int64), widths), ks, strides, dils).sum(axis=axes)
        return integer_mean(total, count)
    total = _windows(np.pad(_f32(x), widths), ks, strides, dils).sum(axis=axes, dtype=np.float32)
    return total / count.astype(np.float32)


@kernel("MaxPool")
def _max_pool(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    return pool(ins[0], attrs, ctx, "max")


@kernel("AveragePool")
def _avg_pool(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    return pool(ins[0], attrs, ctx, "avg")


@kernel("GlobalMaxPool")
def _global_max(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    x = ins[0]
    return x.max(axis=tuple(range(2, x.ndim)), keepdims=True)


@kernel("GlobalAveragePool")
def _global_avg(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    x = ins[0]
    axes = tuple(range(2, x.ndim))
    n = int(np.prod(x.shape[2:], dtype=np.int64))
    if ctx.integer:
        return integer_mean(np.asarray(x, dtype=np.int64).sum(axis=axes, keepdims=True), n)
    return _f32(x).sum(axis=axes, keepdims=True, dtype=np.float32) / np.float32(n)


# -- normalizations (float) ------------------------------------------------------------------------------------
def _normalize(x: np.ndarray, axes: tuple[int, ...], eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``((x - mu) / sqrt(var + eps), mu, 1 / sqrt(var + eps))`` in float32 over ``axes`` (kept)."""
    mu = x.mean(axis=axes, keepdims=True, dtype=np.float32)
    d = x - mu
    var = (d * d).mean(axis=axes, keepdims=True, dtype=np.float32)
    inv = np.float32(1) / np.sqrt(var + np.float32(eps))
    return d * inv, mu, inv


@kernel("LayerNormalization")
def _layer_norm(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> tuple:
    _float_mode_only(ctx, "LayerNormalization")
    x = _f32(ins[0])
    ax = _axis(attrs.get("axis", -1), x.ndim, "LayerNormalization axis", ctx)
    y, mu, inv = _normalize(x, tuple(range(ax, x.ndim)), float(attrs.get("epsilon", 1e-5)))
    y = y * _f32(ins[1])
    if len(ins) > 2 and ins[2] is not None:
        y = y + _f32(ins[2])
    return y, mu, inv


@kernel("GroupNormalization")
def _group_norm(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _float_mode_only(ctx, "GroupNormalization")
    _need(ins, 3, "GroupNormalization", ctx)
    x = _f32(ins[0])
    g = int(attrs.get("num_groups", 0))
    n, c = x.shape[:2]
    if g < 1 or c % g:
        raise _fail("num_groups", g, f"a divisor of the {c} channels", ctx, "pass num_groups dividing C")
    xg = x.reshape((n, g, -1))
    y, _, _ = _normalize(xg, (2,), float(attrs.get("epsilon", 1e-5)))
    scale, bias = _f32(ins[1]).reshape(-1), _f32(ins[2]).reshape(-1)
    if scale.size == g and g != c:  # opset 18: one scale per group
        y = y * scale.reshape(1, g, 1) + bias.reshape(1, g, 1)
        return y.reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y.reshape(x.shape) * scale.reshape(shape) + bias.reshape(shape)


@kernel("InstanceNormalization")
def _instance_norm(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _float_mode_only(ctx, "InstanceNormalization")
    _need(ins, 3, "InstanceNormalization", ctx)
    x = _f32(ins[0])
    y, _, _ = _normalize(x, tuple(range(2, x.ndim)), float(attrs.get("epsilon", 1e-5)))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    return y * _f32(ins[1]).reshape(shape) + _f32(ins[2]).reshape(shape)


@kernel("BatchNormalization")
def _batch_norm(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _float_mode_only(ctx, "BatchNormalization")
    _need(ins, 5, "BatchNormalization", ctx)
    if int(attrs.get("training_mode", 0)):
        raise _fail("BatchNormalization training_mode", 1, "0 (inference)", ctx, "export the model in eval mode")
    x = _f32(ins[0])
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    scale, b, mean, var = (_f32(a).reshape(shape) for a in ins[1:5])
    return (x - mean) / np.sqrt(var + np.float32(attrs.get("epsilon", 1e-5))) * scale + b


def _rms(x: np.ndarray, scale: np.ndarray, ax: int, eps: float) -> np.ndarray:
    axes = tuple(range(ax, x.ndim))
    ms = (x * x).mean(axis=axes, keepdims=True, dtype=np.float32)
    return x / np.sqrt(ms + np.float32(eps)) * scale


@kernel("RMSNormalization")
def _rms_norm(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _float_mode_only(ctx, "RMSNormalization")
    x = _f32(ins[0])
    ax = _axis(attrs.get("axis", -1), x.ndim, "RMSNormalization axis", ctx)
    return _rms(x, _f32(ins[1]), ax, float(attrs.get("epsilon", 1e-5)))


@kernel("RMSNorm")
def _rms_norm_deeploy(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _float_mode_only(ctx, "RMSNorm")
    x = _f32(ins[0])
    return _rms(x, _f32(ins[1]), x.ndim - 1, float(attrs.get("eps", 1e-5)))


# -- reductions ------------------------------------------------------------------------------------------------
def _reduce_axes(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> tuple | None:
    """The reduced axes (None: no-op), from the second input (opset 13 / 18 on) or the ``axes`` attribute."""
    x = ins[0]
    raw = ins[1] if len(ins) > 1 and ins[1] is not None else attrs.get("axes")  # input from opset input_from on
    axes = [] if raw is None else _int_list(raw, "axes", ctx)
    if not axes:
        return None if int(attrs.get("noop_with_empty_axes", 0)) else tuple(range(x.ndim))
    return _axes(axes, x.ndim, "axes", ctx)


@kernel("ReduceSum")
def _reduce_sum(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    axes = _reduce_axes(ins, attrs, ctx)
    if axes is None:
        return ins[0]
    keep = bool(attrs.get("keepdims", 1))
    if ctx.integer:
        return np.asarray(ins[0], dtype=np.int64).sum(axis=axes, keepdims=keep)
    return _f32(ins[0]).sum(axis=axes, keepdims=keep, dtype=np.float32)


@kernel("ReduceMean")
def _reduce_mean(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    axes = _reduce_axes(ins, attrs, ctx)
    if axes is None:
        return ins[0]
    keep = bool(attrs.get("keepdims", 1))
    x = ins[0]
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    if n == 0:
        raise _fail("ReduceMean", "an empty reduction", "at least one element", ctx, "check the axes")
    if ctx.integer:
        return integer_mean(np.asarray(x, dtype=np.int64).sum(axis=axes, keepdims=keep), n)
    return _f32(x).sum(axis=axes, keepdims=keep, dtype=np.float32) / np.float32(n)


# -- shape and data movement -----------------------------------------------------------------------------------
@kernel("Reshape")
def _reshape(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    x, shape = ins[0], [int(d) for d in np.asarray(ins[1]).reshape(-1)]
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(shape)


@kernel("Transpose")
def _transpose(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    perm = attrs.get("perm")
    return np.transpose(ins[0], None if perm is None else [int(p) for p in perm])


@kernel("Concat")
def _concat(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    return np.concatenate([x for x in ins if x is not None], axis=int(attrs["axis"]))


@kernel("Flatten")
def _flatten(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    x = ins[0]
    ax = int(attrs.get("axis", 1))
    if not -x.ndim <= ax <= x.ndim:
        raise _fail("Flatten axis", ax, f"-{x.ndim}..{x.ndim}", ctx, "pass an axis inside the rank")
    ax %= x.ndim + 1
    return x.reshape(int(np.prod(x.shape[:ax], dtype=np.int64)), -1)


def _axes_of(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> list[int] | None:
    if len(ins) > 1 and ins[1] is not None:
        return _int_list(ins[1], "axes", ctx)
    return None if attrs.get("axes") is None else _int_list(attrs["axes"], "axes", ctx)


@kernel("Squeeze")
def _squeeze(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    x = ins[0]
    axes = _axes_of(ins, attrs, ctx)
    if axes is None:
        return x.reshape([d for d in x.shape if d != 1])
    axes_n = _axes(axes, x.ndim, "Squeeze axes", ctx)
    bad = [a for a in axes_n if x.shape[a] != 1]
    if bad:
        raise _fail("Squeeze axes", axes, f"axes of size 1 in shape {x.shape}", ctx, "squeeze only size-1 dims")
    return np.squeeze(x, axis=axes_n)


@kernel("Unsqueeze")
def _unsqueeze(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    x = ins[0]
    axes = _axes_of(ins, attrs, ctx)
    if axes is None:
        raise _fail("Unsqueeze axes", "missing", "axes given", ctx, "export Unsqueeze with axes")
    axes_n = _axes(axes, x.ndim + len(axes), "Unsqueeze axes", ctx)
    return np.expand_dims(x, axis=axes_n)


@kernel("Shape")
def _shape(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    shape = np.asarray(np.shape(ins[0]), dtype=np.int64)
    start, end = int(attrs.get("start", 0)), attrs.get("end")
    return shape[start : None if end is None else int(end)]


def _slice_one(dim: int, start: int, end: int, step: int) -> slice:
    """ONNX Slice clamping of ``start:end:step`` on a dim of size ``dim``."""
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        return slice(min(max(start, 0), dim), min(max(end, 0), dim), step)
    start = min(max(start, 0), dim - 1)
    end = min(max(end, -1), dim - 1)
    return slice(start, None if end < 0 else end, step)


@kernel("Slice")
def _slice(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    x = ins[0]
    if ctx.opset < 10 and "starts" in attrs:
        starts, ends = _int_list(attrs["starts"], "starts", ctx), _int_list(attrs["ends"], "ends", ctx)
        axes = _int_list(attrs["axes"], "axes", ctx) if "axes" in attrs else list(range(len(starts)))
        steps = [1] * len(starts)
    else:
        _need(ins, 3, "Slice", ctx)
        starts, ends = _int_list(ins[1], "starts", ctx), _int_list(ins[2], "ends", ctx)
        axes = _int_list(ins[3], "axes", ctx) if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
        steps = _int_list(ins[4], "steps", ctx) if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise _fail("Slice operands", f"{len(starts)}/{len(ends)}/{len(axes)}/{len(steps)}",
                    "equal lengths of starts, ends, axes, steps", ctx, "give one entry per sliced axis")  # fmt: skip
    if 0 in steps:
        raise _fail("Slice steps", steps, "nonzero steps", ctx, "use a step of 1 or more (or negative)")
    index = [slice(None)] * x.ndim
    for a, s, e, st in zip(_axes(axes, x.ndim, "Slice axes", ctx), starts, ends, steps):
        index[a] = _slice_one(x.shape[a], s, e, st)
    return x[tuple(index)]


@kernel("Gather")
def _gather(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    x, idx = ins[0], np.asarray(ins[1])
    ax = _axis(attrs.get("axis", 0), x.ndim, "Gather axis", ctx)
    idx = np.asarray(_int_list(idx, "Gather indices", ctx), dtype=np.int64).reshape(idx.shape)
    dim = x.shape[ax]
    if idx.size and (idx.min() < -dim or idx.max() >= dim):
        raise _fail("Gather indices", f"{int(idx.min())}..{int(idx.max())}", f"-{dim}..{dim - 1}", ctx,
                    "index inside the gathered axis")  # fmt: skip
    return np.take(x, np.where(idx < 0, idx + dim, idx), axis=ax)


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}


@kernel("Pad")
def _pad(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    x = ins[0]
    mode = attrs.get("mode", "constant")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode not in _PAD_MODES:
        raise _fail("Pad mode", mode, sorted(_PAD_MODES), ctx, "export Pad with a supported mode")
    if len(ins) > 1 and ins[1] is not None:
        pads = _int_list(ins[1], "pads", ctx)
        value = ins[2] if len(ins) > 2 and ins[2] is not None else 0
        axes = _int_list(ins[3], "axes", ctx) if len(ins) > 3 and ins[3] is not None else list(range(x.ndim))
    else:
        pads = _int_list(attrs.get("pads", []), "pads", ctx)
        value, axes = attrs.get("value", 0.0), list(range(x.ndim))
    axes_n = _axes(axes, x.ndim, "Pad axes", ctx)
    if len(pads) != 2 * len(axes_n):
        raise _fail("Pad pads", pads, f"{2 * len(axes_n)} values (begin..., end...)", ctx, "one pair per axis")
    widths = [[0, 0] for _ in range(x.ndim)]
    for i, a in enumerate(axes_n):
        widths[a] = [pads[i], pads[i + len(axes_n)]]
    crop = tuple(slice(-min(b, 0), x.shape[a] + min(e, 0)) for a, (b, e) in enumerate(widths))
    x = x[crop]
    widths = [(max(b, 0), max(e, 0)) for b, e in widths]
    if mode != "constant":
        if mode == "reflect" and any(w > d - 1 for (wb, we), d in zip(widths, x.shape) for w in (wb, we)):
            raise _fail("Pad reflect width", widths, f"< each dim of {x.shape}", ctx, "pad less or use 'edge'")
        if x.size == 0 and any(w != (0, 0) for w in widths):
            raise _fail("Pad input", x.shape, "non-empty for mode " + mode, ctx, "use mode 'constant'")
        return np.pad(x, widths, mode=_PAD_MODES[mode])
    if ctx.integer:
        return np.pad(x, widths, constant_values=_whole(value, "Pad value", ctx))
    return np.pad(_f32(x), widths, constant_values=np.float32(np.asarray(value).reshape(-1)[0]))


#: ONNX TensorProto data types -> numpy dtypes (bfloat16 rounds through its float32 bit pattern).
_CAST = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
         9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64, 16: "bfloat16"}  # fmt: skip


def _bfloat16(x: np.ndarray) -> np.ndarray:
    bits = _f32(x).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16  # round to nearest even
    return bits.astype(np.uint32).view(np.float32)


@kernel("Cast")
def _cast(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    x = np.asarray(ins[0])
    to = int(attrs.get("to", 1))
    if to not in _CAST:
        raise _fail("Cast to", to, f"one of the ONNX types {sorted(_CAST)}", ctx, "cast to a numeric type")
    target = _CAST[to]
    if target is np.bool_:
        return x != 0
    if target == "bfloat16" or np.dtype(target).kind == "f":
        if ctx.integer:
            return x  # whole numbers stay whole (every op after this one computes exactly)
        return _bfloat16(x) if target == "bfloat16" else x.astype(target).astype(np.float32)
    info = np.iinfo(target)
    vals = np.trunc(x) if x.dtype.kind == "f" else x
    if vals.size and (vals.min() < info.min or vals.max() > info.max):
        raise _fail("Cast range", f"{vals.min()}..{vals.max()}", f"{info.min}..{info.max} ({np.dtype(target)})",
                    ctx, "clip or requantize before the Cast")  # fmt: skip
    return vals.astype(np.int64) if ctx.integer else vals.astype(target)
