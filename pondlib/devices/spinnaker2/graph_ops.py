r"""The operators of SpiNNaker2's DNN graph path: their integer rules, how each is quantized and tiled.

A tensor is int8 at a power-of-two fraction ``f`` (value ``q 2^-f``). MLA ops (``gemm``, ``conv``, ``matmul``)
run on the matrix accelerator: int8 x int8 products summed in the ``acc_bits`` accumulator (24 bits by default),
then one arithmetic right shift and int8 saturation. The other ops run on the worker PE's Arm Cortex-M4F core in
32-bit integer arithmetic (64-bit products where stated, ``SMULL``). Kernels: :mod:`pondlib.devices.core.intops`.

============  ====  ============================================================================================
op            unit  integer rule (``x``, ``a``, ``b`` int8 inputs; ``sat8`` saturates to -128..127)
============  ====  ============================================================================================
``gemm``      MLA   ``y = sat8((x W + b) >> s)`` along the last axis; ``b`` holds ``round(b 2^(f_x+f_w)) +
                    2^(s-1)`` (the MLA shift floors; the folded term rounds half up); fused ReLU ``max(y, 0)``
``conv``      MLA   ``y = sat8((conv(x, W) + b) >> s)`` (1-D/2-D, stride, padding, dilation, groups: depthwise
                    and pointwise are groups = C and kernel 1), bias as ``gemm``, fused ReLU
``matmul``    MLA   ``y = sat8((a b + 2^(s-1)) >> s)``, ``s = f_a + f_b - f_y`` (two activations; the rounding
                    term preloaded as the accumulator's bias)
``add``       Arm   ``F = max(f_a, f_b)``, ``y = sat8(round_shift(a 2^(F-f_a) + b 2^(F-f_b), F - f_y))``, fused ReLU
``relu``      Arm   ``max(x, 0)`` (same fraction)
``maxpool``   Arm   window maximum (same fraction)
``avgpool``   Arm   window integer mean ``floor((2 S + n) / (2 n))`` (same fraction)
``reshape``   --    the buffer reinterpreted (no data moves; no worker)
``concat``    Arm   the inputs (all at the output's fraction) joined along per-sample axis ``axis``: the gather of
                    an op split over several chips (made by the mapper, not read from models)
``transpose`` Arm   a permutation of the per-sample axes (same fraction)
``softmax``   Arm   last axis, ``t = (x - max x) 2^u`` at ``F = max(f, 8)`` (``u = F - f``), I-BERT exponential
                    with ``log2 = round(ln 2 2^F)``, ``B = round(1.353 2^F)``, ``A = round(0.3585 2^14)``,
                    ``C = round(0.344 2^(14 + 2F))``, output ``2^7`` levels at fraction 7
                    (``y = min((e 2^7) // sum e, 127)``; 64-bit sums)
``layernorm`` Arm   last axis of ``x' = x 2^4``: ``mu = tdiv(sum x', N)``, ``sigma = isqrt(sum((x' - mu)^2) // N
                    + 1)``, ``z = tdiv((x' - mu) g 2^8, sigma) + b`` (``g`` int8 at ``f_g``, ``b`` at ``f_g + 8``),
                    ``y = sat8(round_shift(z, f_g + 8 - f_y))``
``rmsnorm``   Arm   as layernorm with ``mu = 0`` and no ``b``
``gelu``      Arm   I-BERT: ``h = gelu_ibert(x, B, ONE)``, ``B = round(-1.769 sqrt(2) 2^f)``,
                    ``ONE = round(2^(2f+1) / 0.2888)``, ``y = sat8((h M + 2^(R-1)) >> R)`` with ``M`` in
                    ``2^14..2^15`` (64-bit product)
============  ====  ============================================================================================

Tiling (one tile per worker PE, within ``limits.dnn_worker_bytes``; tiles beyond the workers run in waves):
``gemm`` splits output columns (each worker holds the whole input rows, its ``K c`` weights, ``4 c`` bias
bytes and its outputs), then input rows when one column with every row does not fit; ``conv`` splits output
channels, then output rows (first spatial axis, with the input rows their windows need); ``matmul`` splits the
rows of ``a`` (each worker holds all of ``b``); row-wise Arm ops split rows of the last axis; pools split
channels. A tile that cannot fit even at its smallest is refused, naming the bytes it needs.

Example:
    >>> import numpy as np
    >>> attrs = {"kernel": (2,), "strides": (2,), "pads": (0, 0), "dilations": (1,)}
    >>> op = GraphOp("p", "maxpool", (-1,), (1, 2), (0,), 0, attrs=attrs)
    >>> run_op(op, [np.array([[[1, 5, -3, 2]]])], 24, "error").tolist()
    [[[5, 2]]]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.devices.core import intops
from pondlib.devices.core.intmath import sat
from pondlib.devices.spinnaker2.sim import mla_register
from pondlib.errors import SimulationError

__all__ = [
    "GRAPH_OPS",
    "MLA_OPS",
    "OP_CODES",
    "GraphOp",
    "run_op",
    "float_op",
    "gelu_constants",
    "softmax_constants",
    "SOFTMAX_FRAC",
    "NORM_PRECISION",
    "NORM_EXTRA",
]

#: The ops of the graph path and their image op codes (``gemm`` keeps version 1's code 1).
OP_CODES: dict[str, int] = {
    "gemm": 1,
    "conv": 2,
    "matmul": 3,
    "add": 4,
    "relu": 5,
    "maxpool": 6,
    "avgpool": 7,
    "reshape": 8,
    "transpose": 9,
    "softmax": 10,
    "layernorm": 11,
    "rmsnorm": 12,
    "gelu": 13,
    "concat": 14,
}
GRAPH_OPS = tuple(OP_CODES)
#: Ops on the matrix accelerator (the rest run on the Arm core).
MLA_OPS = ("gemm", "conv", "matmul")
#: Softmax output fraction (values 0..127 of 2^-7).
SOFTMAX_FRAC = 7
#: Fraction bits of the normalised value in layernorm/rmsnorm.
NORM_PRECISION = 8
#: Extra bits of the layernorm/rmsnorm input (mean and square root at 2^4 the input's resolution).
NORM_EXTRA = 4
#: Internal fraction of the softmax exponential (inputs at a coarser fraction are shifted up to it).
SOFTMAX_INNER = 8


@dataclass(frozen=True, eq=False)
class GraphOp:
    """One quantized op: ``inputs`` index earlier ops (-1 the network input), ``out_shape`` per sample,
    ``in_fracs``/``out_frac`` the power-of-two fractions, ``shift`` the requantization shift, ``relu`` a fused
    ReLU, int ``weights``/``bias`` (int64 arrays holding int8/int32 values, or None), ``attrs`` integer
    vectors (strides, pads, constants), ``tiles`` worker tiles and ``split`` how they were cut, ``chip`` the
    chip it runs on."""

    name: str
    op: str
    inputs: tuple[int, ...]
    out_shape: tuple[int, ...]
    in_fracs: tuple[int, ...]
    out_frac: int
    shift: int = 0
    relu: bool = False
    weights: np.ndarray | None = None
    bias: np.ndarray | None = None
    attrs: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    tiles: int = 1
    split: str = ""
    chip: int = 0

    def attr(self, key: str) -> tuple[int, ...]:
        return tuple(int(v) for v in self.attrs[key])

    @property
    def weight_bytes(self) -> int:
        """Parameter bytes fetched from DRAM (int8 weights, int32 bias)."""
        w = 0 if self.weights is None else int(self.weights.size)
        return w + (0 if self.bias is None else 4 * int(self.bias.size))

    def macs(self, in_shapes: Sequence[tuple[int, ...]]) -> int:
        """Multiply-accumulates of one inference (MLA ops; 0 for the others)."""
        if self.op == "gemm":
            return int(np.prod(self.out_shape)) * int(self.weights.shape[0])
        if self.op == "conv":
            return int(np.prod(self.out_shape)) * int(np.prod(self.weights.shape[1:]))
        if self.op == "matmul":
            return int(np.prod(self.out_shape)) * int(in_shapes[0][-1])
        return 0


def _accumulate(acc: np.ndarray, op: GraphOp, acc_bits: int, overflow: str) -> np.ndarray:
    return mla_register(acc, acc_bits, overflow, lambda i: f"{op.name}, index {i}")


def _relu(y: np.ndarray, op: GraphOp) -> np.ndarray:
    return np.maximum(y, 0) if op.relu else y


def run_op(op: GraphOp, ins: Sequence[np.ndarray], acc_bits: int, overflow: str) -> np.ndarray:
    """The op's integer rule (module table) on int8 inputs ``(B, *in_shape)``; int64 out ``(B, *out_shape)``."""
    x = np.asarray(ins[0], dtype=np.int64)
    kind = op.op
    if kind in MLA_OPS:
        if kind == "gemm":
            acc = x @ op.weights + op.bias
        elif kind == "conv":
            acc = intops.conv(
                x,
                op.weights,
                strides=op.attr("strides"),
                pads=op.attr("pads"),
                dilations=op.attr("dilations"),
                groups=op.attr("groups")[0],
            )
            acc = acc + op.bias.reshape((-1,) + (1,) * (acc.ndim - 2))
        else:
            acc = x @ np.asarray(ins[1], dtype=np.int64) + ((1 << (op.shift - 1)) if op.shift > 0 else 0)
        acc = _accumulate(acc, op, acc_bits, overflow)
        return _relu(sat(acc >> op.shift, 8), op)
    if kind == "add":
        F = max(op.in_fracs)
        total = (x << (F - op.in_fracs[0])) + (np.asarray(ins[1], dtype=np.int64) << (F - op.in_fracs[1]))
        return _relu(sat(intops.round_shift(total, op.shift), 8), op)
    if kind == "relu":
        return np.maximum(x, 0)
    if kind == "maxpool":
        return intops.max_pool(x, op.attr("kernel"), op.attr("strides"), op.attr("pads"), op.attr("dilations"))
    if kind == "avgpool":
        inc = bool(op.attr("count_include_pad")[0])
        return intops.avg_pool(x, op.attr("kernel"), op.attr("strides"), op.attr("pads"), inc)
    if kind == "reshape":
        return x.reshape((x.shape[0],) + tuple(op.out_shape))
    if kind == "concat":
        return np.concatenate([np.asarray(v, dtype=np.int64) for v in ins], axis=op.attr("axis")[0] + 1)
    if kind == "transpose":
        return np.transpose(x, (0,) + tuple(p + 1 for p in op.attr("perm")))
    if kind == "softmax":
        log2, a, b, c, up = op.attr("exp")
        return intops.softmax_pow2(x, log2=log2, a=a, b=b, c=c, frac=SOFTMAX_FRAC, up=up)
    if kind in ("layernorm", "rmsnorm"):
        g = op.weights
        if kind == "layernorm":
            z = intops.layernorm(x, g, op.bias, NORM_PRECISION, NORM_EXTRA)
        else:
            z = intops.rmsnorm(x, g, NORM_PRECISION, NORM_EXTRA)
        return sat(intops.round_shift(z, op.shift), 8)
    if kind == "gelu":
        b, one, mul, rshift = op.attr("gelu")
        h = intops.gelu_ibert(x, b, one)
        return sat(intops.round_shift(h * mul, rshift), 8)
    raise SimulationError("op", value=kind, limit=GRAPH_OPS, where=op.name, fix="use an op of the graph path")


def softmax_constants(frac: int) -> tuple[int, int, int, int, int]:
    """``(log2, A, B, C, u)`` of the softmax's I-BERT exponential for inputs at fraction ``frac`` (module
    table), evaluated at the fraction ``F = max(frac, 8)`` (``t`` shifted up by ``u = F - frac``)."""
    f = max(frac, SOFTMAX_INNER)
    return (
        int(round(math.log(2.0) * 2.0**f)),
        int(round(0.3585 * 2.0**14)),
        int(round(1.353 * 2.0**f)),
        int(round(0.344 * 2.0 ** (14 + 2 * f))),
        f - frac,
    )


def gelu_constants(in_frac: int, out_frac: int) -> tuple[int, int, int, int]:
    """``(B, ONE, M, R)`` of the integer GELU from fraction ``in_frac`` to ``out_frac`` (module table):
    ``h = gelu_ibert(q, B, ONE)`` has the scale ``2^-f 0.2888 2^-(2f+1)``, requantized by ``(h M) >> R``."""
    f = in_frac
    b = int(round(-1.769 * math.sqrt(2.0) * 2.0**f))
    one = int(round(2.0 ** (2 * f + 1) / 0.2888))
    log_v = math.log2(0.2888) - 3 * f - 1 + out_frac  # log2 of the output scale of h in output LSBs
    r = max(0, 14 - math.floor(log_v))
    mul = int(round(2.0 ** (log_v + r)))
    return b, one, mul, r


def float_op(layer: Any, ins: Sequence[np.ndarray]) -> np.ndarray:
    """Float64 reference of a float layer (``pondlib.graph.dnn.FloatLayer`` ops plus ``matmul``,
    ``transpose``, ``softmax``, ``layernorm``, ``rmsnorm``, ``gelu``) on batch-first inputs."""
    p, x = layer.params, ins[0]
    op = layer.op
    if op == "gemm":
        return x @ p["weight"] + (0.0 if p.get("bias") is None else p["bias"])
    if op == "conv":
        y = intops.conv(
            x,
            np.asarray(p["weight"], np.float64),
            strides=p["strides"],
            pads=p["pads"],
            dilations=p["dilations"],
            groups=int(p.get("groups", 1)),
        )
        b = p.get("bias")
        return y if b is None else y + np.asarray(b).reshape((-1,) + (1,) * (y.ndim - 2))
    if op == "matmul":
        return x @ ins[1]
    if op == "add":
        return x + ins[1]
    if op == "relu":
        return np.maximum(x, 0.0)
    if op in ("maxpool", "avgpool"):
        return _float_pool(x, p, op)
    if op == "reshape":
        return x.reshape((x.shape[0],) + tuple(layer.out_shape))
    if op == "transpose":
        return np.transpose(x, (0,) + tuple(int(i) + 1 for i in p["perm"]))
    if op == "softmax":
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    if op in ("layernorm", "rmsnorm"):
        eps = float(p.get("eps", 1e-5))
        mu = x.mean(axis=-1, keepdims=True) if op == "layernorm" else 0.0
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        y = (x - mu) / np.sqrt(var + eps) * p["weight"]
        return y + p["bias"] if op == "layernorm" and p.get("bias") is not None else y
    if op == "gelu":
        from math import erf

        return x * 0.5 * (1.0 + np.vectorize(erf)(x / math.sqrt(2.0)))
    raise SimulationError("op", value=op, limit=GRAPH_OPS, where=layer.name, fix="use an op of the graph path")


def _float_pool(x: np.ndarray, p: Mapping[str, Any], op: str) -> np.ndarray:
    nd = len(p["kernel"])
    pads = list(p["pads"])
    width = [(0, 0), (0, 0)] + [(pads[i], pads[i + nd]) for i in range(nd)]
    if op == "maxpool":
        xp = np.pad(x, width, constant_values=-np.inf)
        dil = list(p.get("dilations", [1] * nd))
    else:
        xp = np.pad(x, width)
        dil = [1] * nd
    spans = [dil[i] * (p["kernel"][i] - 1) + 1 for i in range(nd)]
    win = np.lib.stride_tricks.sliding_window_view(xp, spans, axis=tuple(range(2, 2 + nd)))
    out = [(xp.shape[2 + i] - spans[i]) // p["strides"][i] + 1 for i in range(nd)]
    sl = (slice(None), slice(None)) + tuple(slice(None, out[i] * p["strides"][i], p["strides"][i]) for i in range(nd))
    win = win[sl + tuple(slice(None, None, d) for d in dil)]
    axes = tuple(range(-nd, 0))
    if op == "maxpool":
        return win.max(axis=axes)
    inside = np.pad(np.ones((1, 1) + x.shape[2:]), width, constant_values=int(p.get("count_include_pad", 0)))
    cw = np.lib.stride_tricks.sliding_window_view(inside, spans, axis=tuple(range(2, 2 + nd)))[sl]
    return win.sum(axis=axes) / cw.sum(axis=axes)
