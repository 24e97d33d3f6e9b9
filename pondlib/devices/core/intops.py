r"""Integer kernels of DNN operators, as a processing element's integer units would run them (numpy, exact).

Every kernel takes and returns integer arrays (int64 holding exact integers; no float arithmetic anywhere, so
every result is bit-exact and platform independent). Tensors are batch first, channels first: ``(B, C, *S)``
with ``S`` one or two spatial axes; rows are slices along the last axis.

Notation: ``x >> s`` is the arithmetic (floor) shift, ``x // d`` floor division, ``tdiv(a, d)`` C's division
truncated toward zero, ``isqrt(v)`` the floor square root, ``sat8`` saturation to ``-128..127``.

=================  ===========================================================================================
``round_shift``    ``(a + 2^(s-1)) >> s`` for ``s > 0`` (round half up), ``a`` for ``s = 0``
``conv``           ``acc[b, o, p] = sum_{c in group(o), k} w[o, c, k] x_pad[b, g(o) C_g + c, p s + k d]``,
                   zero padding ``pads = [begins..., ends...]``, output size ``floor((L + pb + pe - d (K - 1)
                   - 1) / s) + 1`` per axis (depthwise: ``groups = C``; pointwise: kernel 1)
``max_pool``       ``max`` over the window; padding never wins (padded with the int64 minimum)
``avg_pool``       ``floor((2 S + n) / (2 n))``: the integer mean of the window sum ``S`` over its ``n``
                   cells inside the input (plus the explicit pads when ``count_include_pad``), round half up
``integer_mean``   that rounding rule on its own
``layernorm``      per row of length ``N`` of ``x' = x 2^E`` (``E`` extra bits): ``mu = tdiv(sum x', N)``,
                   ``sigma = isqrt(sum((x' - mu)^2) // N + 1)``, ``z = tdiv((x' - mu) g 2^P, sigma) + b``
                   (``g``, ``b`` per column, ``P`` fraction bits of the result)
``rmsnorm``        per row of ``x' = x 2^E``: ``sigma = isqrt(sum(x'^2) // N + 1)``, ``z = tdiv(x' g 2^P, sigma)``
``gelu_ibert``     I-BERT's second-order GELU (``b < 0``, ``one`` > 0): ``q = min(|x|, -b)``,
                   ``L = sgn(x) (one - (q + b)^2)``, ``y = x ((one + L) >> 1)``
``exp_ibert``      I-BERT's exponential of ``t <= 0``: ``z = min(tdiv(-t, log2), 31)``, ``p = t + z log2``,
                   ``e = (A (p + B)^2 + C) >> z``
``softmax_pow2``   per row ``t = (x - max(x)) 2^u``, ``e = exp_ibert(t)``, ``y = min((e 2^F) // sum(e), 2^F - 1)``
=================  ===========================================================================================

The layer-norm/RMS-norm square root (``+ 1`` inside ``isqrt``), the GELU polynomial and the exponential are
the integer rules of Deeploy's iLayerNorm, iRMSNorm (with ``E = 0``), iGELU and iSoftmax (the normalisation of
the softmax differs: ``softmax_pow2`` divides into ``2^F`` levels so that the result is a power-of-two fraction, where
Deeploy's divides into ``n - 1``); :func:`integer_mean` is the integer mean of the ONNX pooling and
ReduceMean ops of the Siracusa graph path.

Example:
    >>> import numpy as np
    >>> round_shift(np.array([5, 6, -5, -6]), 2).tolist()
    [1, 2, -1, -1]
    >>> conv(np.arange(5).reshape(1, 1, 5), np.array([[[1, 1]]]), strides=[2], pads=[0, 1]).tolist()
    [[[1, 5, 4]]]
    >>> avg_pool(np.array([[[1, 2, 4]]]), [3], [1], [0, 0]).tolist()
    [[[2]]]
    >>> softmax_pow2(np.array([[0, 0]]), log2=11, a=23, b=22, c=10, frac=7).tolist()
    [[64, 64]]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "round_shift",
    "tdiv",
    "isqrt",
    "conv",
    "conv_out_size",
    "max_pool",
    "avg_pool",
    "integer_mean",
    "layernorm",
    "rmsnorm",
    "gelu_ibert",
    "exp_ibert",
    "softmax_pow2",
]


def round_shift(a: np.ndarray, shift: int) -> np.ndarray:
    """``(a + 2^(shift-1)) >> shift`` (round half up) for ``shift > 0``; ``a`` for ``shift = 0`` (int64)."""
    a = np.asarray(a, dtype=np.int64)
    if shift <= 0:
        return a
    return (a + (1 << (shift - 1))) >> shift


def tdiv(a: np.ndarray, d: np.ndarray) -> np.ndarray:
    """C's integer division truncated toward zero, ``d != 0`` (int64)."""
    a = np.asarray(a, dtype=np.int64)
    d = np.asarray(d, dtype=np.int64)
    q = np.abs(a) // np.abs(d)
    return np.where((a < 0) != (d < 0), -q, q)


def isqrt(v: np.ndarray) -> np.ndarray:
    """Floor square root of non-negative integers below 2^62 (exact: a float estimate corrected both ways)."""
    v = np.asarray(v, dtype=np.int64)
    r = np.floor(np.sqrt(v.astype(np.float64))).astype(np.int64)
    r = np.where(r * r > v, r - 1, r)
    r = np.where(r * r > v, r - 1, r)
    r = np.where((r + 1) * (r + 1) <= v, r + 1, r)
    return r


def conv_out_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, dilation: int = 1) -> int:
    """``floor((size + pad_begin + pad_end - dilation (kernel - 1) - 1) / stride) + 1``."""
    return (size + pad_begin + pad_end - dilation * (kernel - 1) - 1) // stride + 1


def _pad(x: np.ndarray, pads: Sequence[int], value: int) -> np.ndarray:
    nd = len(pads) // 2
    width = [(0, 0), (0, 0)] + [(int(pads[i]), int(pads[i + nd])) for i in range(nd)]
    return np.pad(x, width, constant_values=value)


def _windows(
    xp: np.ndarray, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int]
) -> tuple[np.ndarray, tuple[int, ...]]:
    """``(B, C, *out, *kernel)`` view of the padded input's windows, and the output spatial sizes."""
    nd = len(kernel)
    spans = [dilations[i] * (kernel[i] - 1) + 1 for i in range(nd)]
    out = tuple((xp.shape[2 + i] - spans[i]) // strides[i] + 1 for i in range(nd))
    win = np.lib.stride_tricks.sliding_window_view(xp, spans, axis=tuple(range(2, 2 + nd)))
    sl = (slice(None), slice(None))
    sl += tuple(slice(None, out[i] * strides[i], strides[i]) for i in range(nd))
    sl += tuple(slice(None, None, dilations[i]) for i in range(nd))
    return win[sl], out


def conv(
    x: np.ndarray,
    w: np.ndarray,
    *,
    strides: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    groups: int = 1,
) -> np.ndarray:
    """Grouped N-D convolution accumulators (no bias): x (B, C, *S), w (O, C/groups, *K) -> (B, O, *S_out) int64.

    Exact in int64 for ``|x|, |w| <= 2^15`` and fewer than 2^30 terms per output; float operands are
    convolved in float64 (a float reference of the same op)."""
    x, w = np.asarray(x), np.asarray(w)
    if x.dtype.kind == "f" or w.dtype.kind == "f":
        x, w = x.astype(np.float64), w.astype(np.float64)
    else:
        x, w = x.astype(np.int64), w.astype(np.int64)
    nd = w.ndim - 2
    strides = [1] * nd if strides is None else list(strides)
    pads = [0] * (2 * nd) if pads is None else list(pads)
    dilations = [1] * nd if dilations is None else list(dilations)
    win, out = _windows(_pad(x, pads, 0), list(w.shape[2:]), strides, dilations)
    o, cg = w.shape[0], w.shape[1]
    og = o // groups
    parts = []
    letters = "hijk"[:nd]
    for g in range(groups):
        xs = win[:, g * cg : (g + 1) * cg]
        ws = w[g * og : (g + 1) * og]
        spec = f"bc{'xyz'[:nd]}{letters},oc{letters}->bo{'xyz'[:nd]}"
        parts.append(np.einsum(spec, xs, ws, optimize=False))
    return np.concatenate(parts, axis=1)


def max_pool(
    x: np.ndarray, kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int] = ()
) -> np.ndarray:
    """Window maxima (B, C, *S_out); padding is the int64 minimum, so it never wins."""
    x = np.asarray(x, dtype=np.int64)
    nd = len(kernel)
    dil = list(dilations) or [1] * nd
    win, _ = _windows(_pad(x, pads, np.iinfo(np.int64).min), kernel, strides, dil)
    return win.max(axis=tuple(range(-nd, 0)))


def integer_mean(total: np.ndarray, count: np.ndarray) -> np.ndarray:
    """``floor((2 total + count) / (2 count))``: the mean of ``count`` integers summing to ``total``, half up."""
    total = np.asarray(total, dtype=np.int64)
    count = np.asarray(count, dtype=np.int64)
    return (2 * total + count) // (2 * count)


def avg_pool(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    count_include_pad: bool = False,
) -> np.ndarray:
    """Window integer means (B, C, *S_out): :func:`integer_mean` of the window sum over its cell count."""
    x = np.asarray(x, dtype=np.int64)
    nd = len(kernel)
    one = [1] * nd
    win, _ = _windows(_pad(x, pads, 0), kernel, strides, one)
    total = win.sum(axis=tuple(range(-nd, 0)))
    inside = np.ones((1, 1) + x.shape[2:], np.int64)
    cells = _pad(inside, pads, 1 if count_include_pad else 0)
    cwin, _ = _windows(cells, kernel, strides, one)
    count = cwin.sum(axis=tuple(range(-nd, 0)))
    return integer_mean(total, count)


def layernorm(x: np.ndarray, g: np.ndarray, b: np.ndarray, precision: int, extra: int = 0) -> np.ndarray:
    """Layer-norm numerators per row (module table) of ``x 2^E`` (``E = extra`` bits; 0: the table's rule):
    ``tdiv((x' - mu) g 2^P, sigma) + b`` (int64)."""
    x = np.asarray(x, dtype=np.int64) << extra
    n = x.shape[-1]
    mu = tdiv(x.sum(axis=-1, keepdims=True), n)
    d = x - mu
    sigma = isqrt((d * d).sum(axis=-1, keepdims=True) // n + 1)
    return tdiv(d * np.asarray(g, np.int64) * (1 << precision), sigma) + np.asarray(b, np.int64)


def rmsnorm(x: np.ndarray, g: np.ndarray, precision: int, extra: int = 0) -> np.ndarray:
    """RMS-norm numerators per row (module table) of ``x' = x 2^E``: ``tdiv(x' g 2^P, sigma)`` (int64)."""
    x = np.asarray(x, dtype=np.int64) << extra
    n = x.shape[-1]
    sigma = isqrt((x * x).sum(axis=-1, keepdims=True) // n + 1)
    return tdiv(x * np.asarray(g, np.int64) * (1 << precision), sigma)


def gelu_ibert(x: np.ndarray, b: int, one: int) -> np.ndarray:
    """I-BERT GELU numerators ``x ((one + L) >> 1)`` (module table; ``b < 0``, int64)."""
    x = np.asarray(x, dtype=np.int64)
    q = np.minimum(np.abs(x), -b)
    sign = np.where(x < 0, -1, 1)
    L = sign * (one - (q + b) ** 2)
    return x * ((one + L) >> 1)


def exp_ibert(t: np.ndarray, log2: int, a: int, b: int, c: int) -> np.ndarray:
    """I-BERT exponential of ``t <= 0`` (module table): ``(A (p + B)^2 + C) >> z`` (int64)."""
    t = np.asarray(t, dtype=np.int64)
    z = np.minimum(tdiv(-t, log2), 31)
    p = t + z * log2
    return (a * (p + b) ** 2 + c) >> z


def softmax_pow2(x: np.ndarray, *, log2: int, a: int, b: int, c: int, frac: int, up: int = 0) -> np.ndarray:
    """Softmax over the last axis in ``2^frac`` levels (module table): values in ``0..2^frac - 1``; ``up``
    shifts ``t`` left first (the exponential's constants are then those of the finer fraction)."""
    x = np.asarray(x, dtype=np.int64)
    e = exp_ibert((x - x.max(axis=-1, keepdims=True)) << up, log2, a, b, c)
    total = np.maximum(e.sum(axis=-1, keepdims=True), 1)
    return np.minimum((e << frac) // total, (1 << frac) - 1)
