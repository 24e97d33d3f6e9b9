r"""ONNX Runtime static-quantized (QDQ format) graphs as integer graphs on Siracusa.

``onnxruntime.quantization.quantize_static(..., quant_format=QuantFormat.QDQ)`` writes a float graph whose
quantized tensors pass through QuantizeLinear/DequantizeLinear pairs (``Q``/``DQ``). :func:`qdq_to_graph`
rewrites such an :class:`~pondlib.graph.opgraph.OpGraph` into an integer OpGraph that
:class:`~pondlib.devices.siracusa.graphsim.GraphSim` runs exactly: its inputs are the quantized inputs (the
``Q`` outputs of the float inputs, int8/uint8 values), its outputs the quantized outputs (the ``Q`` that the
final ``DQ`` reads), every tensor between them the integers ``q`` of ``x = (q - z) s``.

Quantization
    ``Q(x) = clip(rint(x / s) + z, lo, hi)`` (round half to even, saturation; ``[lo, hi]`` the type's range),
    ``DQ(q) = float32(q - z) s``. Scales ``s > 0`` finite; zero points ``z`` inside ``[lo, hi]``;
    activations per tensor; weights per tensor or per output channel (MatMul/Gemm columns, Conv axis 0).
Linear ops (MatMul, Gemm, Conv; ``x`` activation ``(s_x, z_x)``, ``W = w_q - z_w`` constant, bias ``b``)
    ``acc = x W`` (Conv: ``x * W``) on the raw integers; the input zero point is folded into the addend:
    ``y = RequantShift(acc; mul, add, 2^k)`` with ``mul ~ M 2^k``, ``M = s_x s_w / s_y`` (per channel),
    ``add ~ (z_y + M (b / (s_x s_w) - z_x sum W)) 2^k`` (:func:`~pondlib.devices.siracusa.mapper.
    requant_from_scale`: the largest ``k`` that keeps ``acc mul + add`` inside int32 for every input in
    ``[lo, hi]``). A padded Conv with ``z_x != 0`` pads with ``z_x`` first (Pad op). MatMul of two
    activations: ``sum (a - z_a)(b - z_b) = a b - z_b rowsum(a) - z_a colsum(b) + K z_a z_b`` (ReduceSum,
    Mul, Sub; ``K z_a z_b`` in the addend).
Binary ops (Add, Sub, Mul)
    Two activations: Add/Sub ``y = (a m_a +- b m_b + add) / 2^k`` (two rescales ``m ~ s / s_y 2^k``, Mul, Add,
    RequantShift with mul 1); Mul ``(a - z_a)(b - z_b) M + z_y``. An activation and a constant of one
    element: a LUT (below). An activation and a constant tensor (ORT's bias Add of a Linear layer):
    ``RequantShift(a; m_a, add)`` with the constant's dequantized value folded into the (per element) addend.
Elementwise float ops (a region of float ops between DQ and Q with one quantized input and scalar constants:
    Relu, Clip, Gelu, Erf, Sigmoid, Tanh, Exp, Div, Pow, ...) become one ``LUT`` op: ``table[i] =
    Q_out(f(DQ_in(lo + i)))`` evaluated in float32 at import, so the lookup is exact. A requantization
    ``DQ -> Q`` with other parameters is a LUT too; with equal parameters, Relu and Clip are clamps (Clip).
Reductions
    GlobalAveragePool, ReduceMean, AveragePool (no padding): an integer sum (ReduceSum, or a depthwise Conv
    of ones) then RequantShift with ``M = s_x / (s_y n)``, ``add ~ z_y - M n z_x``.
Float islands (**run on the cluster FPU in float32, not integer**)
    Softmax and LayerNormalization between DQ and Q become ``QSoftmax`` / ``QLayerNorm``
    (:mod:`~pondlib.devices.siracusa.kernels.qdq_ops`): dequantize, float32 op, quantize with ONNX
    QuantizeLinear's rule.
Data movement (Transpose, Reshape, Flatten, Squeeze, Unsqueeze, Slice, Gather, MaxPool, Identity, Concat)
    run on the integers (same scale); differing output parameters add a LUT requantization.

Parity: a RequantShift rounds half up with a multiplier ``mul / 2^k`` that is not ``M`` exactly, so an
output can differ from ONNX Runtime's by 1 LSB where ``M acc`` falls within the multiplier's error of a
rounding boundary (:class:`QDQReport` lists every requantization's relative multiplier error). LUTs and
data movement are exact; float islands differ only where float32 results differ in the last bit.

Example:
    >>> import numpy as np
    >>> from pondlib.graph.opgraph import Node, OpGraph, TensorInfo
    >>> c = {"s": np.float32(0.1), "z": np.int8(0), "so": np.float32(0.05), "zo": np.int8(0)}
    >>> g = OpGraph((TensorInfo("x", (1, 3)),), (TensorInfo("y", (1, 3)),), (
    ...     Node("q", "QuantizeLinear", ("x", "s", "z"), ("xq",)),
    ...     Node("dq", "DequantizeLinear", ("xq", "s", "z"), ("xd",)),
    ...     Node("sig", "Tanh", ("xd",), ("t",)),
    ...     Node("q2", "QuantizeLinear", ("t", "so", "zo"), ("yq",)),
    ...     Node("dq2", "DequantizeLinear", ("yq", "so", "zo"), ("y",))), c)
    >>> ig, rep = qdq_to_graph(g)
    >>> [n.op for n in ig.nodes], ig.input_names, ig.output_names
    (['LUT'], ('xq',), ('yq',))
    >>> from pondlib.devices.siracusa.graphsim import GraphSim
    >>> GraphSim(ig).run({"xq": np.array([[-10, 0, 127]])}).outputs["yq"].tolist()
    [[-15, 0, 20]]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.devices.siracusa.kernels.qdq_ops import dequantize_linear, quantize_linear
from pondlib.devices.siracusa.mapper import requant_from_scale
from pondlib.errors import ONNXError, PondError
from pondlib.graph.opgraph import Node, OpGraph, TensorInfo, check_opgraph

__all__ = ["qdq_to_graph", "QDQReport", "QParams", "FLOAT_ELEMENTWISE"]

#: Integer types of quantized tensors and their ranges.
_RANGES = {
    "int8": (-128, 127), "uint8": (0, 255), "int16": (-(2**15), 2**15 - 1), "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
}  # fmt: skip
_ONNX_TYPES = {2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32"}
_MOVES = {"Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Slice", "Gather", "MaxPool", "Identity"}
_MAX_ISLAND = 64


@dataclass(frozen=True)
class QParams:
    """A tensor's quantization: ``scale`` (float32, () or (C,)), ``zero`` (int64, same), the integer
    ``dtype`` and, per channel, the ``axis``."""

    scale: np.ndarray
    zero: np.ndarray
    dtype: str
    axis: int = 1

    @property
    def lo(self) -> int:
        return _RANGES[self.dtype][0]

    @property
    def hi(self) -> int:
        return _RANGES[self.dtype][1]

    @property
    def bits(self) -> int:
        return 8 * np.dtype(self.dtype).itemsize

    @property
    def signed(self) -> bool:
        return self.dtype.startswith("int")

    @property
    def s(self) -> float:
        """The per-tensor scale as float64."""
        return float(self.scale.reshape(-1)[0])

    @property
    def z(self) -> int:
        """The per-tensor zero point."""
        return int(self.zero.reshape(-1)[0])

    def same(self, other: QParams) -> bool:
        return self.dtype == other.dtype and self.s == other.s and self.z == other.z


@dataclass
class QDQReport:
    """What :func:`qdq_to_graph` did: op counts, every requantization (node, shift, largest relative error of
    ``mul / 2^shift`` against ``M``), the LUTs, the float islands and notes."""

    name: str
    float_nodes: int
    ops: dict[str, int] = field(default_factory=dict)
    requants: list[tuple[str, int, float]] = field(default_factory=list)
    luts: list[str] = field(default_factory=list)
    islands: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def max_multiplier_error(self) -> float:
        return max((e for _, _, e in self.requants), default=0.0)

    def summary(self) -> str:
        ops = ", ".join(f"{k} {v}" for k, v in sorted(self.ops.items()))
        return (
            f"{self.name}: {self.float_nodes} QDQ nodes -> {sum(self.ops.values())} integer ops ({ops}); "
            f"{len(self.requants)} requantizations (max multiplier error {self.max_multiplier_error:.2e}), "
            f"{len(self.luts)} LUTs, {len(self.islands)} float islands"
        )


@dataclass(frozen=True)
class _Src:
    """A float operand: an integer activation (``kind='act'``, ``name``), a quantized constant (``'const'``,
    ``value`` the integers) or a float constant (``'float'``, ``value``)."""

    kind: str
    name: str
    qp: QParams | None = None
    value: np.ndarray | None = None

    def dequantized(self) -> np.ndarray:
        if self.kind == "float":
            return np.asarray(self.value, dtype=np.float32)
        assert self.qp is not None and self.value is not None
        z = self.qp.zero if self.qp.zero.ndim == 0 else _along(self.qp.zero, self.qp.axis, self.value.ndim)
        s = self.qp.scale if self.qp.scale.ndim == 0 else _along(self.qp.scale, self.qp.axis, self.value.ndim)
        return ((self.value.astype(np.int64) - z).astype(np.float32) * s).astype(np.float32)


def _along(v: np.ndarray, axis: int, rank: int) -> np.ndarray:
    shape = [1] * rank
    shape[axis % rank] = -1
    return np.asarray(v).reshape(shape)


def _err(what: str, node: Node | None, value: Any, limit: Any, fix: str) -> ONNXError:
    return ONNXError(what, value=value, limit=limit, where=node.label if node else "qdq_to_graph", fix=fix)


# -- float32 evaluation of elementwise regions (LUT tables) ---------------------------------------------------
def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64)).astype(np.float32)


def _gelu(x: np.ndarray, a: Mapping[str, Any]) -> np.ndarray:
    if str(a.get("approximate", "none")) == "tanh":
        c = np.float32(math.sqrt(2 / math.pi))
        return np.float32(0.5) * x * (np.float32(1) + np.tanh(c * (x + np.float32(0.044715) * x * x * x)))
    return np.float32(0.5) * x * (np.float32(1) + _erf(x / np.float32(math.sqrt(2))))


def _clip(ins: list, a: Mapping[str, Any]) -> np.ndarray:
    lo = ins[1] if len(ins) > 1 and ins[1] is not None else a.get("min")
    hi = ins[2] if len(ins) > 2 and ins[2] is not None else a.get("max")
    x = ins[0] if lo is None else np.maximum(ins[0], np.float32(np.asarray(lo).reshape(-1)[0]))
    return x if hi is None else np.minimum(x, np.float32(np.asarray(hi).reshape(-1)[0]))


def _f(fn: Callable[..., np.ndarray]) -> Callable[[list, Mapping[str, Any]], np.ndarray]:
    return lambda ins, a: fn(*ins)


#: Elementwise float ops a LUT can absorb: op -> fn(inputs (float32), attrs) in float32.
FLOAT_ELEMENTWISE: dict[str, Callable[[list, Mapping[str, Any]], np.ndarray]] = {
    "Add": _f(np.add), "Sub": _f(np.subtract), "Mul": _f(np.multiply), "Div": _f(np.divide),
    "Pow": _f(np.power), "Neg": _f(np.negative), "Abs": _f(np.abs), "Sqrt": _f(np.sqrt), "Exp": _f(np.exp),
    "Log": _f(np.log), "Tanh": _f(np.tanh), "Reciprocal": _f(lambda x: np.float32(1) / x),
    "Floor": _f(np.floor), "Ceil": _f(np.ceil), "Round": _f(np.rint), "Identity": _f(lambda x: x),
    "Erf": _f(_erf), "Sigmoid": _f(lambda x: np.float32(1) / (np.float32(1) + np.exp(-x))),
    "Relu": _f(lambda x: np.maximum(x, np.float32(0))), "Clip": _clip, "Gelu": lambda i, a: _gelu(i[0], a),
    "LeakyRelu": lambda i, a: np.where(i[0] >= 0, i[0], i[0] * np.float32(a.get("alpha", 0.01))),
    "Elu": lambda i, a: np.where(i[0] >= 0, i[0], np.float32(a.get("alpha", 1.0)) * (np.exp(i[0]) - 1)),
    "HardSigmoid": lambda i, a: np.clip(np.float32(a.get("alpha", 0.2)) * i[0] + np.float32(a.get("beta", 0.5)), 0, 1),
    "HardSwish": _f(lambda x: x * np.clip(x / np.float32(6) + np.float32(0.5), 0, 1)),
    "Softplus": _f(lambda x: np.log1p(np.exp(x))),
}  # fmt: skip


class _Converter:
    """One rewrite (module docstring): walks the QuantizeLinear nodes in order and emits integer ops."""

    def __init__(self, graph: OpGraph) -> None:
        self.g = graph
        self.order = check_opgraph(graph)
        self.index = {id(n): i for i, n in enumerate(self.order)}
        self.prod = graph.producers()
        self.shapes_in = {t.name: t for t in graph.inputs}
        self.nodes: list[Node] = []
        self.consts: dict[str, np.ndarray] = {}
        self.inputs: list[TensorInfo] = []
        self.qp: dict[str, QParams] = {}
        self.used = set(graph.constants) | set(graph.input_names) | {t for n in graph.nodes for t in n.outputs}
        self.report = QDQReport(graph.name, len(graph.nodes))

    # -- names, params, sources ------------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name

    def const(self, base: str, value: Any) -> str:
        name = self.fresh(base)
        self.consts[name] = np.asarray(value)
        return name

    def emit(self, op: str, inputs: list[str], out: str | None, base: str, **attrs: Any) -> str:
        out = out or self.fresh(base)
        self.nodes.append(Node(self.fresh(f"{base}_{op}"), op, tuple(inputs), (out,), attrs))
        return out

    def params(self, node: Node) -> QParams:
        """The (scale, zero point, type) of a Q or DQ node, checked (module docstring)."""
        if len(node.inputs) < 2 or not node.inputs[1]:
            raise _err("missing scale", node, f"inputs {list(node.inputs)}", "x, scale[, zero point]",
                       "re-export the model: QuantizeLinear/DequantizeLinear need a scale")  # fmt: skip
        scale = self.g.constants.get(node.inputs[1])
        if scale is None:
            raise _err("scale", node, f"{node.inputs[1]!r} is computed at run time", "a constant (initializer)",
                       "quantize statically (quantize_static), not dynamically")  # fmt: skip
        s = np.asarray(scale, dtype=np.float64)
        if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0):
            raise _err("scale", node, f"{node.inputs[1]!r} = {s.reshape(-1)[:4].tolist()}", "finite scales > 0",
                       "recalibrate: a zero, negative or infinite scale cannot be inverted")  # fmt: skip
        zname = node.inputs[2] if len(node.inputs) > 2 else ""
        if zname and zname not in self.g.constants:
            raise _err("zero point", node, f"{zname!r} is computed at run time", "a constant", "quantize statically")
        z = np.asarray(self.g.constants[zname]) if zname else np.zeros((), np.uint8)
        dtype = str(z.dtype) if str(z.dtype) in _RANGES else _ONNX_TYPES.get(int(node.attrs.get("output_dtype", 2)))
        if dtype not in _RANGES or (node.op == "QuantizeLinear" and dtype == "int32"):
            raise _err("quantized type", node, str(z.dtype), "int8, uint8, int16 or uint16 (int32 for biases)",
                       "quantize with QuantType.QInt8 or QUInt8")  # fmt: skip
        lo, hi = _RANGES[dtype]
        if z.size and (int(z.min()) < lo or int(z.max()) > hi):
            raise _err("zero point", node, f"{zname!r} = {z.reshape(-1)[:4].tolist()}", f"[{lo}, {hi}] ({dtype})",
                       f"store the zero point as {dtype} inside its range")  # fmt: skip
        if z.size > 1 and z.shape != s.shape and z.size != s.size:
            raise _err("zero point shape", node, z.shape, f"the scale's shape {s.shape}", "pass one per channel")
        return QParams(s.astype(np.float32), z.astype(np.int64), dtype, int(node.attrs.get("axis", 1)))

    def source(self, name: str, user: Node) -> _Src | None:
        """What a float tensor is: a DQ of an activation or constant, a float constant, or None (a float op)."""
        if name in self.g.constants:
            return _Src("float", name, value=np.asarray(self.g.constants[name]))
        p = self.prod.get(name)
        if p is None or p.op != "DequantizeLinear":
            if name in self.shapes_in:
                raise _err("unquantized input", user, f"float graph input {name!r}", "a QuantizeLinear first",
                           "quantize the model with quantize_static (QDQ format)")  # fmt: skip
            return None
        qp, x = self.params(p), p.inputs[0]
        if x in self.g.constants:
            return _Src("const", x, qp, np.asarray(self.g.constants[x]).astype(np.int64))
        if x in self.shapes_in and x not in self.qp:
            self.inputs.append(TensorInfo(x, self.shapes_in[x].shape, qp.dtype))
            self.qp[x] = qp
        if x not in self.qp:
            raise _err("DequantizeLinear input", p, repr(x), "a QuantizeLinear output or an integer graph input",
                       "re-export the QDQ model")  # fmt: skip
        if qp.scale.size > 1 or qp.zero.size > 1:
            raise _err("per-channel activation", p, f"{qp.scale.size} scales", "one scale per activation tensor",
                       "quantize activations per tensor (per_channel applies to weights)")  # fmt: skip
        return _Src("act", x, qp)

    def shape(self, name: str) -> tuple[int, ...]:
        """The shape of an integer tensor built so far (a dry run of the partial graph on zeros)."""
        from pondlib.devices.siracusa.graphsim import GraphSim

        if name in self.consts:
            return tuple(self.consts[name].shape)
        if name in self.g.input_names or any(t.name == name for t in self.inputs):
            return tuple(next(t for t in self.inputs if t.name == name).shape or ())
        part = OpGraph(tuple(self.inputs), (TensorInfo(name),), tuple(self.nodes), self.consts, opset=self.g.opset)
        zeros = {t.name: np.zeros(t.shape or (), np.int64) for t in self.inputs}
        return tuple(GraphSim(part).run(zeros, integer=True, record=False).outputs[name].shape)

    # -- requantizations -------------------------------------------------------------------------------------
    def requant(self, x: str, out: str, M: Any, lo: Any, hi: Any, add: Any, po: QParams, base: str,
                layout: Callable[[np.ndarray], np.ndarray]) -> str:  # fmt: skip
        """``RequantShift(x; mul ~ M 2^k, add ~ add 2^k)`` into ``po``'s type, per channel via ``layout``."""
        M, add = np.asarray(M, np.float64), np.asarray(add, np.float64)
        shape = add.shape
        try:
            rq, rel = requant_from_scale(M.reshape(-1) if M.ndim else M, np.asarray(lo, np.float64),
                                         np.asarray(hi, np.float64), add.reshape(-1) if add.ndim else add,
                                         out_bits=po.bits, signed=po.signed)  # fmt: skip
        except PondError as err:
            raise _err("requantization", None, f"{base}: {err}", "a multiplier RequantShift holds",
                       "check the scales of this layer")  from None  # fmt: skip
        mul, addq = np.asarray(rq.mul, np.int64), np.asarray(rq.add, np.int64)
        if np.any((mul == 0) & (M > 0)):  # a multiplier that rounds to 0: every output would be a constant
            raise _err("requantization multiplier", None, f"{base}: M = {float(np.min(M)):.3g} rounds to mul 0",
                       f">= 2^-{int(rq.div).bit_length()} (a multiplier RequantShift holds)",
                       "recalibrate the output scale of this layer")  # fmt: skip
        mul = layout(mul) if mul.ndim else mul
        addq = layout(addq.reshape(shape) if addq.size == int(np.prod(shape)) else addq) if addq.ndim else addq
        cm, ca = self.const(f"{base}_mul", mul), self.const(f"{base}_add", addq)
        n = 1 << int(rq.div).bit_length() - 1
        self.emit("RequantShift", [x, cm, ca], out, base, div=n, n_levels_out=2**po.bits, signed=int(po.signed))
        self.report.requants.append((base, int(rq.div).bit_length() - 1, float(rel)))
        return out

    def lut(self, x: str, pi: QParams, po: QParams, out: str | None, base: str,
            fn: Callable[[np.ndarray], np.ndarray] | None = None) -> str:  # fmt: skip
        """``table[i] = Q_out(fn(DQ_in(lo + i)))``; a plain requantization when ``fn`` is None."""
        if fn is None and pi.same(po):
            return self.emit("Identity", [x], out, base) if out else x
        levels = np.arange(pi.lo, pi.hi + 1, dtype=np.int64)
        v = dequantize_linear(levels, pi.s, pi.z)
        with np.errstate(all="ignore"):
            v = fn(v) if fn is not None else v
        table = quantize_linear(np.asarray(v, np.float32), po.s, po.z, po.lo, po.hi)
        self.report.luts.append(base)
        return self.emit("LUT", [x, self.const(f"{base}_table", table)], out, base, lo=pi.lo)

    # -- rules: one per float op between DQ and Q --------------------------------------------------------------
    def linear(self, node: Node, a: _Src, W: np.ndarray, sw: np.ndarray, bias: np.ndarray | None, po: QParams,
               out: str, op: str = "MatMul", **attrs: Any) -> str:  # fmt: skip
        """``acc = a W`` (or Conv) on raw integers, zero point and bias folded into the RequantShift addend."""
        assert a.qp is not None
        za, lo, hi = a.qp.z, a.qp.lo, a.qp.hi
        conv = op == "Conv"
        red = tuple(range(1, W.ndim)) if conv else (0,)
        wsum = W.sum(axis=red)
        acc_hi = np.maximum(W * lo, W * hi).sum(axis=red).astype(np.float64)
        acc_lo = np.minimum(W * lo, W * hi).sum(axis=red).astype(np.float64)
        M = np.asarray(a.qp.s * sw.astype(np.float64) / po.s)
        add = po.z + M * (-za * wsum.astype(np.float64))
        if bias is not None:
            add = add + bias.astype(np.float64) / po.s
        x = a.name
        pads = [int(p) for p in attrs.get("pads", [])]
        if conv and za != 0 and any(pads):
            nd = len(pads) // 2
            full = [0, 0] + pads[:nd] + [0, 0] + pads[nd:]
            x = self.emit("Pad", [x, self.const(f"{node.name}_pads", np.int64(full)),
                                  self.const(f"{node.name}_zx", np.int64(za))], None, node.name)  # fmt: skip
            attrs = {k: v for k, v in attrs.items() if k != "pads"}
        acc = self.emit(op, [x, self.const(f"{node.name}_w", W.astype(np.int64))], None, node.name, **attrs)
        rank = W.ndim if conv else None

        def layout(v: np.ndarray) -> np.ndarray:
            return v.reshape((1, -1) + (1,) * (rank - 2)) if rank else v.reshape(1, -1)

        M = M if M.size > 1 else M.reshape(())
        add = np.broadcast_to(add, acc_hi.shape) if add.ndim == 0 and M.ndim else add
        return self.requant(acc, out, M, acc_lo, acc_hi, add, po, node.name, layout)

    def weights(self, node: Node, w: _Src, channel_axis: int) -> tuple[np.ndarray, np.ndarray]:
        """``W = w_q - z_w`` and the weight scale(s), per channel on ``channel_axis`` (checked)."""
        assert w.qp is not None and w.value is not None
        qp, W = w.qp, w.value.astype(np.int64)
        if qp.scale.size > 1 or qp.zero.size > 1:
            if qp.axis % W.ndim != channel_axis % W.ndim or qp.scale.size != W.shape[channel_axis]:
                raise _err("per-channel weights", node, f"axis {qp.axis}, {qp.scale.size} scales, W {W.shape}",
                           f"one scale per output channel (axis {channel_axis % W.ndim})",
                           "quantize weights per output channel")  # fmt: skip
            W = W - _along(np.broadcast_to(qp.zero, qp.scale.shape), channel_axis, W.ndim)
            return W, qp.scale.astype(np.float64)
        return W - qp.z, np.asarray(qp.s)

    def bias(self, node: Node, b: _Src | None) -> np.ndarray | None:
        if b is None:
            return None
        if b.kind == "act":
            raise _err("bias", node, "a run-time tensor", "a constant bias", "export the bias as an initializer")
        return b.dequantized().astype(np.float64)

    def rule_matmul(self, node: Node, srcs: list[_Src], po: QParams, out: str) -> str:
        a, b = srcs
        if a.kind == "act" and b.kind == "const":
            W, sw = self.weights(node, b, 1 if b.value.ndim == 2 else -1)
            return self.linear(node, a, W, sw, None, po, out)
        if a.kind == "act" and b.kind == "act":
            return self.act_matmul(node, a, b, po, out)
        raise _err("MatMul operands", node, f"{a.kind} x {b.kind}", "activation x weights or two activations",
                   "put the weights on the right (transpose the product)")  # fmt: skip

    def act_matmul(self, node: Node, a: _Src, b: _Src, po: QParams, out: str) -> str:
        """``sum (a - z_a)(b - z_b) = a b - z_b rowsum(a) - z_a colsum(b) + K z_a z_b``."""
        assert a.qp is not None and b.qp is not None
        za, zb, K = a.qp.z, b.qp.z, self.shape(a.name)[-1]
        acc = self.emit("MatMul", [a.name, b.name], None, node.name)
        for zp, x, axis in ((zb, a.name, -1), (za, b.name, -2)):
            if zp:
                s = self.emit("ReduceSum", [x, self.const(f"{node.name}_axes", np.int64([axis]))], None, node.name,
                              keepdims=1)  # fmt: skip
                t = self.emit("Mul", [s, self.const(f"{node.name}_z", np.int64(zp))], None, node.name)
                acc = self.emit("Sub", [acc, t], None, node.name)
        ma = max(abs(a.qp.lo - za), abs(a.qp.hi - za)) * max(abs(b.qp.lo - zb), abs(b.qp.hi - zb)) * K
        M = a.qp.s * b.qp.s / po.s
        return self.requant(acc, out, M, -ma - K * za * zb, ma - K * za * zb, po.z + M * K * za * zb, po,
                            node.name, lambda v: v)  # fmt: skip

    def rule_gemm(self, node: Node, srcs: list[_Src], po: QParams, out: str) -> str:
        a, b = srcs[0], srcs[1]
        at = node.attrs
        if a.kind != "act" or b.kind != "const" or int(at.get("transA", 0)):
            raise _err("Gemm operands", node, f"{a.kind} x {b.kind}, transA {at.get('transA', 0)}",
                       "activation x constant weights, transA = 0", "re-export the Gemm as x W^T + b")  # fmt: skip
        tb = int(at.get("transB", 0))
        W, sw = self.weights(node, b, 0 if tb else 1)
        W = W.T if tb else W
        alpha, beta = float(at.get("alpha", 1.0)), float(at.get("beta", 1.0))
        bias = self.bias(node, srcs[2] if len(srcs) > 2 else None)
        return self.linear(node, a, W, sw * alpha, None if bias is None else beta * bias, po, out)

    def rule_conv(self, node: Node, srcs: list[_Src], po: QParams, out: str) -> str:
        a, w = srcs[0], srcs[1]
        if a.kind != "act" or w.kind != "const" or str(node.attrs.get("auto_pad", "NOTSET")) != "NOTSET":
            raise _err("Conv operands", node, f"{a.kind} x {w.kind}, auto_pad {node.attrs.get('auto_pad')}",
                       "activation * constant weights, explicit pads", "export with explicit pads")  # fmt: skip
        W, sw = self.weights(node, w, 0)
        attrs = {k: v for k, v in node.attrs.items() if k in ("pads", "strides", "dilations", "group", "kernel_shape")}
        bias = self.bias(node, srcs[2] if len(srcs) > 2 else None)
        return self.linear(node, a, W, sw, bias, po, out, "Conv", **attrs)

    def rule_binary(self, node: Node, srcs: list[_Src], po: QParams, out: str) -> str | None:
        """Add, Sub, Mul of two activations or of an activation and a constant tensor (None: a LUT does it)."""
        a, b = srcs
        sign = -1.0 if node.op == "Sub" else 1.0
        if a.kind != "act" and b.kind == "act" and node.op != "Sub":
            a, b = b, a
        if a.kind != "act":
            raise _err(f"{node.op} operands", node, f"{a.kind}, {b.kind}", "at least one activation on the left",
                       "fold constant arithmetic before quantizing")  # fmt: skip
        assert a.qp is not None
        if b.kind != "act" and np.size(b.value) == 1:
            return None
        if b.kind == "act":
            return self.act_binary(node, a, b, sign, po, out)
        c = b.dequantized().astype(np.float64)
        rank = max(c.ndim, 2)
        shape = (1,) * (rank - c.ndim) + c.shape

        def layout(v: np.ndarray) -> np.ndarray:
            return v.reshape(shape)

        lo, hi = float(a.qp.lo), float(a.qp.hi)
        if node.op in ("Add", "Sub"):
            Ma = a.qp.s / po.s
            add = po.z - Ma * a.qp.z + sign * c / po.s
            return self.requant(a.name, out, Ma, lo, hi, add, po, node.name, layout)
        assert b.qp is not None and b.value is not None
        B = b.value.astype(np.int64) - (b.qp.z if b.qp.zero.size == 1 else _along(b.qp.zero, b.qp.axis, c.ndim))
        if b.qp.scale.size > 1:
            raise _err("Mul constant", node, "per-channel scales", "one scale", "quantize the constant per tensor")
        M = a.qp.s * b.qp.s / po.s
        prod = self.emit("Mul", [a.name, self.const(f"{node.name}_c", B)], None, node.name)
        top = float(np.max(np.abs(B))) * max(abs(lo), abs(hi))
        return self.requant(prod, out, M, -top, top, po.z - M * a.qp.z * B.astype(np.float64), po, node.name, layout)

    def act_binary(self, node: Node, a: _Src, b: _Src, sign: float, po: QParams, out: str) -> str:
        """Add/Sub with two rescales ``(a m_a +- b m_b + add) / 2^k``; Mul ``(a - z_a)(b - z_b) M``."""
        assert a.qp is not None and b.qp is not None
        if node.op == "Mul":
            xs = []
            for s in (a, b):
                assert s.qp is not None
                z = s.qp.z
                xs.append(self.emit("Sub", [s.name, self.const(f"{node.name}_z", np.int64(z))], None, node.name)
                          if z else s.name)  # fmt: skip
            prod = self.emit("Mul", xs, None, node.name)
            top = float(
                max(abs(a.qp.lo - a.qp.z), abs(a.qp.hi - a.qp.z)) * max(abs(b.qp.lo - b.qp.z), abs(b.qp.hi - b.qp.z))
            )
            return self.requant(prod, out, a.qp.s * b.qp.s / po.s, -top, top, po.z, po, node.name, lambda v: v)
        Ma, Mb = a.qp.s / po.s, sign * b.qp.s / po.s
        top, k = float(2**31 - 1), 0
        amax, bmax = max(abs(a.qp.lo), abs(a.qp.hi)), max(abs(b.qp.lo), abs(b.qp.hi))
        for k in range(30, -1, -1):
            ma, mb = round(Ma * 2**k), round(Mb * 2**k)
            add = round((po.z - Ma * a.qp.z - Mb * b.qp.z) * 2**k)
            if amax * abs(ma) + bmax * abs(mb) + abs(add) + 2 ** max(k - 1, 0) <= top:
                break
        ta = self.emit("Mul", [a.name, self.const(f"{node.name}_ma", np.int64(ma))], None, node.name)
        tb = self.emit("Mul", [b.name, self.const(f"{node.name}_mb", np.int64(mb))], None, node.name)
        t = self.emit("Add", [ta, tb], None, node.name)
        one, cadd = self.const(f"{node.name}_one", np.int64(1)), self.const(f"{node.name}_add", np.int64(add))
        self.emit("RequantShift", [t, one, cadd], out, node.name, div=2**k, n_levels_out=2**po.bits,
                  signed=int(po.signed))  # fmt: skip
        rel = max(abs(m / 2**k - M) / abs(M) for m, M in ((ma, Ma), (mb, Mb)) if M)
        self.report.requants.append((node.name, k, float(rel)))
        return out

    def rule_clamp(self, node: Node, srcs: list[_Src], po: QParams, out: str) -> str | None:
        """Relu/Clip with equal input and output parameters: ``clip(a, Q(lo), Q(hi))`` (Q is monotone)."""
        a = srcs[0]
        if a.kind != "act" or a.qp is None or not a.qp.same(po):
            return None
        if node.op == "Relu":
            lo, hi = np.float32(0), None
        else:
            lo = srcs[1].value if len(srcs) > 1 and srcs[1] is not None else node.attrs.get("min")
            hi = srcs[2].value if len(srcs) > 2 and srcs[2] is not None else node.attrs.get("max")
        qlo = (
            po.lo
            if lo is None
            else int(quantize_linear(np.float32(np.asarray(lo).reshape(-1)[0]), po.s, po.z, po.lo, po.hi))
        )
        qhi = (
            po.hi
            if hi is None
            else int(quantize_linear(np.float32(np.asarray(hi).reshape(-1)[0]), po.s, po.z, po.lo, po.hi))
        )
        c1, c2 = self.const(f"{node.name}_lo", np.int64(qlo)), self.const(f"{node.name}_hi", np.int64(qhi))
        return self.emit("Clip", [a.name, c1, c2], out, node.name)

    def rule_move(self, node: Node, srcs: list[_Src | None], po: QParams, out: str) -> str:
        """Data movement on the integers, then a LUT requantization if the output parameters differ."""
        a = srcs[0]
        if a is None or a.kind != "act" or a.qp is None:
            raise _err(f"{node.op} input", node, "not a quantized activation", "DQ of a Q output",
                       "quantize the model with quantize_static (QDQ format)")  # fmt: skip
        ins = [a.name]
        for name, s in zip(node.inputs[1:], srcs[1:]):
            if not name:
                ins.append("")
            elif s is not None and s.kind == "float":
                ins.append(self.const(f"{node.name}_{len(ins)}", s.value))
            else:
                raise _err(f"{node.op} input", node, repr(name), "a constant (shape, indices)",
                           "fold the shape computation before quantizing (onnxsim)")  # fmt: skip
        y = self.emit(node.op, ins, out if a.qp.same(po) else None, node.name, **dict(node.attrs))
        return y if a.qp.same(po) else self.lut(y, a.qp, po, out, node.name)

    def rule_concat(self, node: Node, srcs: list[_Src | None], po: QParams, out: str) -> str:
        ins = []
        for s in srcs:
            if s is None or s.kind != "act" or s.qp is None:
                raise _err("Concat input", node, "not a quantized activation", "DQ of a Q output", "quantize it")
            ins.append(self.lut(s.name, s.qp, po, None, f"{node.name}_in"))
        return self.emit("Concat", ins, out, node.name, axis=int(node.attrs.get("axis", 0)))

    def rule_mean(self, node: Node, srcs: list[_Src | None], po: QParams, out: str) -> str:
        """GlobalAveragePool, ReduceMean, AveragePool (no padding): integer sum, then RequantShift."""
        a = srcs[0]
        if a is None or a.kind != "act" or a.qp is None:
            raise _err(f"{node.op} input", node, "not a quantized activation", "DQ of a Q output", "quantize it")
        shape = self.shape(a.name)
        at = node.attrs
        if node.op == "AveragePool":
            ks = [int(k) for k in at["kernel_shape"]]
            if (
                any(int(p) for p in at.get("pads", []))
                or int(at.get("ceil_mode", 0))
                or str(at.get("auto_pad", "NOTSET")) != "NOTSET"
            ):
                raise _err("AveragePool padding", node, f"pads {at.get('pads')}", "no padding, ceil_mode 0",
                           "pad explicitly before the pool")  # fmt: skip
            c, n = shape[1], int(np.prod(ks))
            ones = self.const(f"{node.name}_ones", np.ones((c, 1, *ks), np.int64))
            conv = {k: at[k] for k in ("strides", "dilations") if k in at}
            s = self.emit("Conv", [a.name, ones], None, node.name, kernel_shape=ks, group=c, **conv)
        else:
            if node.op == "GlobalAveragePool":
                axes, keep = list(range(2, len(shape))), 1
            else:
                raw = srcs[1].value if len(srcs) > 1 and srcs[1] is not None else at.get("axes")
                axes = list(range(len(shape))) if raw is None else [int(v) for v in np.asarray(raw).reshape(-1)]
                keep = int(at.get("keepdims", 1))
            n = int(np.prod([shape[ax] for ax in axes]))
            ax = self.const(f"{node.name}_axes", np.int64(axes))
            s = self.emit("ReduceSum", [a.name, ax], None, node.name, keepdims=keep)
        M = a.qp.s / (po.s * n)
        return self.requant(s, out, M, n * a.qp.lo, n * a.qp.hi, po.z - M * n * a.qp.z, po, node.name, lambda v: v)

    # -- float regions ---------------------------------------------------------------------------------------
    def island(self, f: str, po: QParams, out: str, qnode: Node) -> str:
        """The float ops between DQs and the Q of ``f``: a LUT, a QSoftmax/QLayerNorm island, or an ONNXError."""
        region: dict[int, Node] = {}
        srcs: dict[str, _Src] = {}
        stack = [f]
        while stack:
            t = stack.pop()
            if not t or t in srcs:
                continue
            p = self.prod.get(t)
            s = self.source(t, p or qnode)
            if s is not None:
                srcs[t] = s
                continue
            if p is None or p.op == "QuantizeLinear" or len(region) > _MAX_ISLAND:
                src = p.label if p else "nowhere"
                raise _err("float region", qnode, f"{t!r} (from {src})", f"<= {_MAX_ISLAND} float ops fed by DQ",
                           "re-export the QDQ model")  # fmt: skip
            if id(p) not in region:
                region[id(p)] = p
                stack.extend(p.inputs)
        nodes = sorted(region.values(), key=lambda n: self.index[id(n)])
        acts = {s.name: s for s in srcs.values() if s.kind == "act"}
        if len(nodes) == 1 and nodes[0].op in ("Softmax", "LayerNormalization") and len(acts) == 1:
            return self.float_island(nodes[0], srcs, po, out)
        bad = next((n for n in nodes if n.op not in FLOAT_ELEMENTWISE), None)
        wide = next((k for k, s in srcs.items() if s.kind != "act" and np.size(s.value) != 1), None)
        if bad is not None or wide is not None or len(acts) != 1:
            what = (
                f"float op {bad.op!r} between DequantizeLinear and QuantizeLinear"
                if bad
                else f"constant {wide!r} of more than one element"
                if wide
                else f"{len(acts)} quantized inputs"
            )
            raise _err("unsupported float region", bad or qnode, what,
                       "elementwise ops of one quantized tensor and scalar constants (a LUT: "
                       + ", ".join(sorted(FLOAT_ELEMENTWISE)) + "), or a lone Softmax / LayerNormalization",
                       "quantize around the op (op_types_to_quantize) or replace it by supported ones")  # fmt: skip
        (a,) = acts.values()
        assert a.qp is not None

        def fn(v: np.ndarray) -> np.ndarray:
            env = {k: s.dequantized() for k, s in srcs.items() if s.kind != "act"}
            env.update({k: v for k, s in srcs.items() if s.kind == "act"})
            for n in nodes:
                ins = [env[i] if i else None for i in n.inputs]
                env[n.outputs[0]] = np.asarray(FLOAT_ELEMENTWISE[n.op](ins, n.attrs), dtype=np.float32)
            return env[f]

        self.report.notes.append(f"LUT {out!r}: {' -> '.join(n.op for n in nodes) or 'requantization'}")
        return self.lut(a.name, a.qp, po, out, nodes[-1].name if nodes else qnode.name, fn)

    def float_island(self, node: Node, srcs: Mapping[str, _Src], po: QParams, out: str) -> str:
        a = srcs[node.inputs[0]]
        if a.kind != "act" or a.qp is None:
            raise _err(f"{node.op} input", node, "a constant", "a quantized activation", "fold the constant op")
        attrs = dict(scale_in=a.qp.s, zero_in=a.qp.z, lo_in=a.qp.lo, hi_in=a.qp.hi, scale_out=po.s, zero_out=po.z,
                     lo=po.lo, hi=po.hi)  # fmt: skip
        ins = [a.name]
        if node.op == "Softmax":
            if self.g.opset < 13 and int(node.attrs.get("axis", 1)) != -1:
                raise _err("Softmax axis", node, f"opset {self.g.opset} axis {node.attrs.get('axis', 1)}",
                           "opset >= 13 or axis -1", "re-export with opset >= 13")  # fmt: skip
            attrs["axis"] = int(node.attrs.get("axis", -1))
            op = "QSoftmax"
        else:
            attrs.update(axis=int(node.attrs.get("axis", -1)), epsilon=float(node.attrs.get("epsilon", 1e-5)))
            for k, t in enumerate(node.inputs[1:3]):
                ins.append(
                    self.const(f"{node.name}_{'gamma' if k == 0 else 'beta'}", srcs[t].dequantized()) if t else ""
                )
            op = "QLayerNorm"
        self.report.islands.append(f"{node.name} ({op}: float32 on the cluster FPU)")
        return self.emit(op, ins, out, node.name, **attrs)

    # -- driver ----------------------------------------------------------------------------------------------
    def quantize(self, qn: Node) -> None:
        """Emit the integer ops that produce ``qn``'s output."""
        out, f, po = qn.outputs[0], qn.inputs[0], self.params(qn)
        if po.scale.size > 1 or po.zero.size > 1:
            raise _err("per-channel activation", qn, f"{po.scale.size} scales", "one scale per activation",
                       "quantize activations per tensor")  # fmt: skip
        self.qp[out] = po
        if f in self.shapes_in:
            self.inputs.append(TensorInfo(out, self.shapes_in[f].shape, po.dtype))
            return
        if f in self.g.constants:
            self.consts[out] = quantize_linear(np.asarray(self.g.constants[f]), po.s, po.z, po.lo, po.hi)
            return
        p = self.prod.get(f)
        rule = _RULES.get(p.op) if p is not None else None
        if p is not None and p.op in _MOVES:
            rule = _Converter.rule_move
        if rule is not None:
            srcs = [self.source(t, p) if t else None for t in p.inputs]
            data = [s for s, t in zip(srcs, p.inputs) if t][: 2 if p.op in _TWO else 1]
            if all(s is not None and s.kind != "float" for s in data) and p.outputs[0] == f:
                if rule(self, p, srcs, po, out) is not None:
                    return
        self.island(f, po, out, qn)

    def outputs(self) -> list[TensorInfo]:
        infos = []
        for info in self.g.outputs:
            p = self.prod.get(info.name)
            if p is not None and p.op == "DequantizeLinear" and p.inputs[0] in self.qp:
                infos.append(TensorInfo(p.inputs[0], info.shape, self.qp[p.inputs[0]].dtype))
            elif info.name in self.qp:
                infos.append(TensorInfo(info.name, info.shape, self.qp[info.name].dtype))
            else:
                raise _err("float graph output", p, f"{info.name!r} from {p.label if p else 'a constant'}",
                           "a DequantizeLinear of a quantized tensor",
                           f"quantize the output: op_types_to_quantize including {p.op if p else 'it'!r}")  # fmt: skip
        return infos


_RULES: dict[str, Callable[..., str | None]] = {
    "MatMul": _Converter.rule_matmul, "Gemm": _Converter.rule_gemm, "Conv": _Converter.rule_conv,
    "Add": _Converter.rule_binary, "Sub": _Converter.rule_binary, "Mul": _Converter.rule_binary,
    "Relu": _Converter.rule_clamp, "Clip": _Converter.rule_clamp, "Concat": _Converter.rule_concat,
    "GlobalAveragePool": _Converter.rule_mean, "ReduceMean": _Converter.rule_mean, "AveragePool": _Converter.rule_mean,
}  # fmt: skip
#: Ops whose first two inputs are data (the others: constants such as a bias or shapes).
_TWO = {"MatMul", "Gemm", "Conv", "Add", "Sub", "Mul"}


def qdq_to_graph(graph: OpGraph) -> tuple[OpGraph, QDQReport]:
    """The integer OpGraph of a QDQ graph (module docstring) and a :class:`QDQReport`.

    Args:
        graph: a QDQ graph, e.g. ``load_opgraph("model_qdq.onnx")`` of ``quantize_static(...,
            quant_format=QuantFormat.QDQ)``'s output.

    Returns:
        ``(integer graph, report)``: the graph's inputs are the quantized inputs (named as the Q outputs),
        its outputs the quantized outputs; GraphSim runs it in integer mode.

    Raises:
        ONNXError: a missing, non-constant, non-positive or non-finite scale; a zero point outside its type;
            a float op between DQ and Q that has no integer rule (naming the op and node); an unquantized
            graph input or output.
    """
    if not isinstance(graph, OpGraph):
        raise _err("graph", None, type(graph).__name__, "an OpGraph", "load the model with load_opgraph")
    if not any(n.op == "QuantizeLinear" for n in graph.nodes):
        raise _err("QDQ graph", None, f"{graph.name!r} has no QuantizeLinear", "a QDQ-format graph",
                   "quantize with quantize_static(..., quant_format=QuantFormat.QDQ)")  # fmt: skip
    conv = _Converter(graph)
    for node in conv.order:
        if node.op == "QuantizeLinear":
            conv.quantize(node)
    outputs = conv.outputs()
    names = {t.name for t in outputs}
    inputs = tuple(t for t in conv.inputs if t.name not in conv.consts)
    notes = tuple(graph.notes) + ("integer graph of a QDQ model (qdq_to_graph)",)
    out = _prune(OpGraph(inputs, tuple(outputs), tuple(conv.nodes), conv.consts, f"{graph.name}_int", notes,
                         graph.opset), names)  # fmt: skip
    conv.report.ops = out.op_counts()
    return out, conv.report


def _prune(g: OpGraph, keep: set[str]) -> OpGraph:
    """Drop the nodes (and constants) no output depends on."""
    prod, need, live = g.producers(), set(keep), []
    for n in reversed(g.order()):
        if any(o in need for o in n.outputs):
            live.append(n)
            need.update(t for t in n.inputs if t)
    order = {id(n): i for i, n in enumerate(g.nodes)}
    nodes = tuple(sorted(live, key=lambda n: order[id(n)]))
    consts = {k: v for k, v in g.constants.items() if k in need}
    del prod
    return OpGraph(g.inputs, g.outputs, nodes, consts, g.name, g.notes, g.opset)
