r"""The extra ops of ORT QDQ graphs run as integer graphs (:func:`~pondlib.devices.siracusa.qdq_graph.qdq_to_graph`).

Quantized tensors hold the integers ``q`` of ONNX's linear quantization ``x = (q - z) s``: scale ``s > 0``,
zero point ``z`` inside the integer type's range ``[lo, hi]`` (``[-128, 127]`` for int8, ``[0, 255]`` for
uint8). ONNX's QuantizeLinear is ``q = clip(rint(x / s) + z, lo, hi)`` with ``rint`` rounding half to even
(``x / s`` in float32; an infinite quotient saturates, a NaN counts as 0);
DequantizeLinear is ``x = float32(q - z) * s`` in float32.

================  ============================================================================================
LUT               ``y = table[x - lo]`` (attribute ``lo``, the smallest input integer; ``table`` the second
                  input, ``hi - lo + 1`` integers). Exact: the importer fills the table with the quantized
                  result of the float op for every input level, so any elementwise function of one 8-bit
                  tensor (Gelu, Sigmoid, Tanh, Exp, Erf, Div by a constant, requantization) costs one lookup.
QSoftmax          **float island on the cluster FPU**: ``e_i = E[max(x) - x_i]`` from the stored table
                  ``E[k] = float32(exp(-k s_in))`` (no ``exp`` at run time), ``S = (((e_0 + e_1) + e_2) + ...)``
                  summed left to right in float32 over ``axis``, ``p_i = e_i / S``, ``y = clip(rint(p / s_out) +
                  z_out, lo, hi)`` (ONNX QuantizeLinear: round half to even, saturation).
QLayerNorm        **float island on the cluster FPU**: ``v = float32(x - z_in) s_in``; over dims ``axis..`` (``D``
                  values) ``mu = S(v) / D``, ``d = v - mu``, ``var = S(d d) / D`` (``S`` the left-to-right float32
                  sum), ``u = ((d / sqrt(var + eps)) gamma) + beta`` (each operation rounded to float32; sqrt
                  correctly rounded), ``y`` quantized as QSoftmax's.
================  ============================================================================================

Every float step of the islands is one IEEE float32 operation in a fixed order, so C compiled with
``-ffp-contract=off`` reproduces them bit for bit (:mod:`~pondlib.devices.siracusa.graph_codegen_float` writes
that C, without libm, for the host and RV32). Attributes of the islands: ``scale_in, zero_in, scale_out,
zero_out`` (floats / ints), ``lo, hi`` (the output type's range), ``axis``, and ``epsilon`` for QLayerNorm.
Both ops refuse integer inputs outside the input type's range (``lo_in, hi_in``) and run only in integer
mode (their inputs are quantized integers).

Example:
    >>> import numpy as np
    >>> from pondlib.devices.siracusa.kernels import KernelContext, lookup
    >>> lut = lookup("LUT", "", "example")
    >>> lut([np.array([-128, 0, 127]), np.arange(256) - 128], {"lo": -128}, KernelContext(True)).tolist()
    [-128, 0, 127]
    >>> att = {"scale_in": 0.1, "zero_in": 0, "scale_out": 1 / 256, "zero_out": -128, "lo": -128, "hi": 127, "axis": -1}
    >>> lookup("QSoftmax", "", "example")([np.array([[0, 0]])], att, KernelContext(True)).tolist()
    [[0, 0]]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pondlib.devices.siracusa.kernels import KernelContext, kernel
from pondlib.errors import GraphError

__all__ = ["quantize_linear", "dequantize_linear", "seq_sum", "exp_table"]


def quantize_linear(v: np.ndarray, scale: Any, zero: Any, lo: int, hi: int) -> np.ndarray:
    """ONNX QuantizeLinear in float32: ``clip(rint(v / s) + z, lo, hi)`` (round half to even), as int64; an
    infinite ``v / s`` saturates (to ``hi`` or ``lo``, whatever ``z``), a NaN counts as 0 (``z`` clipped)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        r = np.rint(np.asarray(v, dtype=np.float32) / np.float32(scale)).astype(np.float64)
    r = np.where(np.isnan(r), 0.0, r)  # +-inf stay: clip saturates them after the zero point is added
    return np.clip(r + float(zero), lo, hi).astype(np.int64)


def dequantize_linear(q: np.ndarray, scale: Any, zero: Any) -> np.ndarray:
    """ONNX DequantizeLinear in float32: ``float32(q - z) * s``."""
    return (np.asarray(q, dtype=np.int64) - np.asarray(zero, dtype=np.int64)).astype(np.float32) * np.float32(scale)


def _attr(attrs: Mapping[str, Any], key: str, ctx: KernelContext) -> Any:
    if key not in attrs:
        raise GraphError(
            "missing attribute", value=key, limit=f"attribute {key!r} present", where=ctx.label,
            fix="build the node with qdq_to_graph, which sets every attribute",
        )  # fmt: skip
    return attrs[key]


def _integer_only(ctx: KernelContext, op: str) -> None:
    if not ctx.integer:
        raise GraphError(
            "integer op in float mode", value=op, limit="integer mode (quantized int64 tensors)", where=ctx.label,
            fix="run the integer graph of qdq_to_graph with integer=True",
        )  # fmt: skip


def _in_range(x: np.ndarray, lo: int, hi: int, ctx: KernelContext, what: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.int64)
    if x.size and (int(x.min()) < lo or int(x.max()) > hi):
        raise GraphError(
            f"{what} input range", value=f"[{int(x.min())}, {int(x.max())}]", limit=f"[{lo}, {hi}]",
            where=ctx.label, fix="feed the quantized integers of the tensor's type (clip them first)",
        )  # fmt: skip
    return x


@kernel("LUT")
def _lut(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _integer_only(ctx, "LUT")
    table = np.asarray(ins[1], dtype=np.int64).reshape(-1)
    lo = int(_attr(attrs, "lo", ctx))
    x = _in_range(ins[0], lo, lo + table.size - 1, ctx, "LUT")
    return table[x - lo]


def _island_io(ins: list, attrs: Mapping[str, Any], ctx: KernelContext, op: str) -> tuple[np.ndarray, int, int]:
    _integer_only(ctx, op)
    lo_in, hi_in = int(attrs.get("lo_in", -(2**31))), int(attrs.get("hi_in", 2**31 - 1))
    x = _in_range(ins[0], lo_in, hi_in, ctx, op)
    v = dequantize_linear(x, _attr(attrs, "scale_in", ctx), _attr(attrs, "zero_in", ctx))
    return v, int(_attr(attrs, "lo", ctx)), int(_attr(attrs, "hi", ctx))


def seq_sum(v: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """float32 sum over ``axes`` (moved last, C order), added strictly left to right as the C loop does
    (numpy's own ``sum`` adds pairwise: a different rounding); keeps the reduced axes as size 1."""
    keep = [a for a in range(v.ndim) if a not in axes]
    moved = np.transpose(v, keep + list(axes)).astype(np.float32)
    flat = moved.reshape(moved.shape[: len(keep)] + (-1,))
    total = np.add.accumulate(flat, axis=-1, dtype=np.float32)[..., -1]
    shape = [1 if a in axes else v.shape[a] for a in range(v.ndim)]
    return total.reshape(shape)


def exp_table(scale: Any, n: int) -> np.ndarray:
    """``E[k] = float32(exp(-k s))`` for ``k = 0 .. n-1``: the exponentials of QSoftmax, computed once (float64,
    rounded once) and stored, so neither the simulator nor the C evaluates ``exp``."""
    return np.exp(-np.arange(n, dtype=np.float64) * float(np.float32(scale))).astype(np.float32)


@kernel("QSoftmax")
def _qsoftmax(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    _integer_only(ctx, "QSoftmax")
    lo_in, hi_in = int(attrs.get("lo_in", -128)), int(attrs.get("hi_in", 127))
    x = _in_range(ins[0], lo_in, hi_in, ctx, "QSoftmax")
    lo, hi = int(_attr(attrs, "lo", ctx)), int(_attr(attrs, "hi", ctx))
    axis = int(attrs.get("axis", -1)) % max(x.ndim, 1)
    table = exp_table(_attr(attrs, "scale_in", ctx), hi_in - lo_in + 1)
    e = table[x.max(axis=axis, keepdims=True) - x]
    p = e / seq_sum(e, (axis,))
    return quantize_linear(p, _attr(attrs, "scale_out", ctx), _attr(attrs, "zero_out", ctx), lo, hi)


@kernel("QLayerNorm")
def _qlayernorm(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    v, lo, hi = _island_io(ins, attrs, ctx, "QLayerNorm")
    axis = int(attrs.get("axis", -1)) % max(v.ndim, 1)
    axes = tuple(range(axis, v.ndim))
    count = np.float32(int(np.prod([v.shape[a] for a in axes])))
    mu = seq_sum(v, axes) / count
    d = v - mu
    var = seq_sum(d * d, axes) / count
    u = d / np.sqrt(var + np.float32(attrs.get("epsilon", 1e-5)))
    if len(ins) > 1 and ins[1] is not None:
        u = u * np.asarray(ins[1], dtype=np.float32)
    if len(ins) > 2 and ins[2] is not None:
        u = u + np.asarray(ins[2], dtype=np.float32)
    return quantize_linear(u, _attr(attrs, "scale_out", ctx), _attr(attrs, "zero_out", ctx), lo, hi)
