r"""The extra ops of ORT QDQ graphs run as integer graphs (:func:`~pondlib.devices.siracusa.qdq_graph.qdq_to_graph`).

Quantized tensors hold the integers ``q`` of ONNX's linear quantization ``x = (q - z) s``: scale ``s > 0``,
zero point ``z`` inside the integer type's range ``[lo, hi]`` (``[-128, 127]`` for int8, ``[0, 255]`` for
uint8). ONNX's QuantizeLinear is ``q = clip(rint(x / s) + z, lo, hi)`` with ``rint`` rounding half to even;
DequantizeLinear is ``x = float32(q - z) * s`` in float32.

================  ============================================================================================
LUT               ``y = table[x - lo]`` (attribute ``lo``, the smallest input integer; ``table`` the second
                  input, ``hi - lo + 1`` integers). Exact: the importer fills the table with the quantized
                  result of the float op for every input level, so any elementwise function of one 8-bit
                  tensor (Gelu, Sigmoid, Tanh, Exp, Erf, Div by a constant, requantization) costs one lookup.
QSoftmax          **float island on the cluster FPU**: ``v = float32(x - z_in) s_in``, ``p = softmax(v)`` over
                  ``axis`` in float32 (``e^(v - max) / sum e^(v - max)``), ``y = clip(rint(p / s_out) + z_out,
                  lo, hi)`` (ONNX QuantizeLinear: round half to even, saturation).
QLayerNorm        **float island on the cluster FPU**: ``v`` as above, ``u = (v - mu) / sqrt(var + eps) gamma +
                  beta`` over dims ``axis..`` (biased variance, float32), ``y`` quantized as QSoftmax's.
================  ============================================================================================

Attributes of the islands: ``scale_in, zero_in, scale_out, zero_out`` (floats / ints), ``lo, hi`` (the
output type's range), ``axis``, and ``epsilon`` for QLayerNorm. Both ops refuse integer inputs outside the
input type's range (``lo_in, hi_in``) and run only in integer mode (their inputs are quantized integers).

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

__all__ = ["quantize_linear", "dequantize_linear"]


def quantize_linear(v: np.ndarray, scale: Any, zero: Any, lo: int, hi: int) -> np.ndarray:
    """ONNX QuantizeLinear in float32: ``clip(rint(v / s) + z, lo, hi)`` (round half to even), as int64."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        r = np.rint(np.asarray(v, dtype=np.float32) / np.float32(scale)).astype(np.float64)
    r = np.nan_to_num(r, nan=0.0, posinf=hi, neginf=lo)
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


@kernel("QSoftmax")
def _qsoftmax(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    v, lo, hi = _island_io(ins, attrs, ctx, "QSoftmax")
    axis = int(attrs.get("axis", -1))
    e = np.exp(v - v.max(axis=axis, keepdims=True)).astype(np.float32)
    p = e / e.sum(axis=axis, keepdims=True, dtype=np.float32)
    return quantize_linear(p, _attr(attrs, "scale_out", ctx), _attr(attrs, "zero_out", ctx), lo, hi)


@kernel("QLayerNorm")
def _qlayernorm(ins: list, attrs: Mapping[str, Any], ctx: KernelContext) -> np.ndarray:
    v, lo, hi = _island_io(ins, attrs, ctx, "QLayerNorm")
    axis = int(attrs.get("axis", -1)) % max(v.ndim, 1)
    axes = tuple(range(axis, v.ndim))
    mu = v.mean(axis=axes, keepdims=True, dtype=np.float32)
    d = v - mu
    var = (d * d).mean(axis=axes, keepdims=True, dtype=np.float32)
    u = d / np.sqrt(var + np.float32(attrs.get("epsilon", 1e-5)))
    if len(ins) > 1 and ins[1] is not None:
        u = u * np.asarray(ins[1], dtype=np.float32)
    if len(ins) > 2 and ins[2] is not None:
        u = u + np.asarray(ins[2], dtype=np.float32)
    return quantize_linear(u, _attr(attrs, "scale_out", ctx), _attr(attrs, "zero_out", ctx), lo, hi)
