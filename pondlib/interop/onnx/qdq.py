r"""QDQ models (``onnxruntime.quantization.quantize_static``, QuantFormat.QDQ) in, as integer layers.

:func:`load_qdq` reads the chain ``Q(input) -> [DQ -> Gemm|MatMul|Conv (-> Relu) -> Q] | [DQ -> Relu -> Q]
| [DQ -> Flatten|Reshape -> Q] ... -> DQ -> output`` (a final Softmax/LogSoftmax with its Q/DQ is dropped
with a note). Weights are int8 initializers with zero point 0, biases int32 at scale
``s_x s_w`` (checked to 1e-6 relative): the integer values are kept, never re-quantized. Every
requantizer ``q_y = clamp(round(acc M) + z_y)`` has the real scale

.. math:: M_o = s_x s_{w,o} / s_y \qquad (\text{stand-alone: } M = s_x / s_y)

The device mappers take the model from here (``Device.map_qdq``: each chip's ``onnx`` module turns the
real scales into its own integer requantization and reports every approximation error).

Unrepresentable scales (non-finite, <= 0, a bias scale other than ``s_x s_w``, nonzero weight zero points)
are :class:`~pondlib.errors.ONNXError`; so are ops outside the chain above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pondlib.errors import ONNXError
from pondlib.graph.dnn import QDQLayer, QDQModel
from pondlib.interop.onnx.reader import Graph, _attrs, _spatial, _unsupported, read_model

__all__ = ["QDQLayer", "QDQModel", "load_qdq"]


def _scale(value: Any, node: Any, what: str) -> np.ndarray:
    s = np.asarray(value, dtype=np.float64)
    if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0) or np.any(s < 1e-30) or np.any(s > 1e30):
        raise _unsupported(node, f"{what} scale", s.ravel()[:4].tolist(), "finite, in [1e-30, 1e30]", "recalibrate")
    return s


#: QDQ chain op -> layer kind (``requant``: a stand-alone requantizer, ``reshape``: layout only).
_KINDS = {
    "Gemm": "gemm",
    "MatMul": "gemm",
    "Conv": "conv",
    "Relu": "requant",
    "Flatten": "reshape",
    "Reshape": "reshape",
}


@dataclass(frozen=True)
class _Chain:
    """A QDQ graph being walked: the graph and its dequantized constants, name -> ``(int values, scale,
    zero point, axis)`` (weights and biases: the integers are kept, never re-quantized)."""

    g: Graph
    qc: dict[str, tuple]

    def only(self, name: str, why: str) -> Any:
        """The one consumer of tensor ``name`` (a chain has no branches)."""
        users = self.g.consumers.get(name, [])
        if len(users) != 1:
            raise ONNXError(
                "QDQ chain", value=f"{len(users)} consumers of {name!r}", limit="one", where=why, fix="a chain model"
            )
        return users[0]


def _dequantized_constants(g: Graph) -> dict[str, tuple]:
    """Every DequantizeLinear of a constant: output name -> ``(int64 values, scale, int64 zero point, axis)``."""
    qc: dict[str, tuple] = {}
    for node in g.nodes:
        if node.op_type == "DequantizeLinear" and node.input[0] in g.const:
            q = g.const[node.input[0]].astype(np.int64)
            s = _scale(g.const[node.input[1]], node, "weight/bias")
            zp = (
                g.const[node.input[2]].astype(np.int64)
                if len(node.input) > 2 and node.input[2]
                else np.zeros(1, np.int64)
            )
            qc[node.output[0]] = (q, s, zp, int(_attrs(node).get("axis", 1)))
    return qc


def _quant_params(g: Graph, node: Any, what: str) -> tuple[float, int, bool]:
    """``(scale, zero point, signed)`` of a QuantizeLinear: per tensor, int8 unless its zero point is uint8."""
    s = float(_scale(g.const[node.input[1]], node, what).reshape(-1)[0])
    zp_node = g.const.get(node.input[2]) if len(node.input) > 2 else None
    zp = int(zp_node.reshape(-1)[0]) if zp_node is not None else 0
    return s, zp, zp_node is None or zp_node.dtype == np.int8


def _softmax_note(chain: _Chain, op: Any) -> str:
    """The note for a final Softmax/LogSoftmax (only Q/DQ may follow it): dropped, outputs are the logits."""
    nxt = op
    while nxt.output[0] != chain.g.output:
        nxt = chain.only(nxt.output[0], "softmax tail")
        if nxt.op_type not in ("QuantizeLinear", "DequantizeLinear"):
            raise _unsupported(nxt, "op after the softmax", nxt.op_type, "Q/DQ only", "move it")
    return f"{op.name or op.op_type}: final {op.op_type} dropped (argmax-preserving); outputs are the logits"


def _gemm_weight(op: Any, a: dict, wq: np.ndarray, sw: np.ndarray, axis: int, shape: tuple) -> tuple:
    """``(weight (K, O), out shape (O,))`` of a Gemm/MatMul (``transB`` applied; scales per output)."""
    if a.get("transA", 0) or float(a.get("alpha", 1.0)) != 1.0 or float(a.get("beta", 1.0)) != 1.0:
        raise _unsupported(op, "Gemm attributes", a, "transA 0, alpha 1, beta 1", "re-export")
    w = wq.T if a.get("transB", 0) else wq
    if sw.size > 1 and not a.get("transB", 0) and axis not in (1, -1):
        raise _unsupported(op, "weight scale axis", axis, "the output axis", "re-quantize per output channel")
    if len(shape) != 1 or w.shape[0] != shape[0]:
        raise _unsupported(op, "input shape", shape, f"({w.shape[0]},)", "flatten first")
    return w, (w.shape[1],)


def _conv_weight(op: Any, a: dict, wq: np.ndarray, shape: tuple, p: dict) -> tuple:
    """``(weight (O, C/g, kh, kw), out shape (O, OH, OW))`` of a 2-D Conv; sets ``p["conv"]``.

    ``O_i = (S_i + pad_begin_i + pad_end_i - d_i (k_i - 1) - 1) // s_i + 1``.
    """
    w = wq
    if w.ndim != 4:
        raise _unsupported(op, "kernel rank", w.ndim - 2, "2-D convolutions", "use Conv2d")
    conv = _spatial(op, a, shape, list(w.shape[2:]))
    conv["groups"] = int(a.get("group", 1))
    p["conv"] = conv
    hw = [
        (shape[1 + i] + conv["pads"][i] + conv["pads"][i + 2] - conv["dilations"][i] * (w.shape[2 + i] - 1) - 1)
        // conv["strides"][i]
        + 1
        for i in range(2)
    ]
    return w, (w.shape[0], *hw)


def _bias(chain: _Chain, op: Any, s_x: float, sw: np.ndarray, size: int) -> tuple[np.ndarray, Any]:
    """``(int64 bias (O,), last node)``: Gemm/Conv's third input or the Add after a MatMul (then the last
    node), an int32 DequantizeLinear at scale ``s_x s_w`` (to 1e-6 relative) with zero point 0; zeros without."""
    bias = np.zeros(size, np.int64)
    bname = op.input[2] if len(op.input) > 2 and op.input[2] else None
    last = op
    if op.op_type == "MatMul":
        add = chain.only(op.output[0], "MatMul output")
        if add.op_type == "Add":
            bname = [n for n in add.input if n != op.output[0]][0]
            last = add
    if bname is not None:
        if bname not in chain.qc:
            raise _unsupported(
                op, "bias", bname, "an int32 DequantizeLinear (not re-quantized here)", "quantize the bias"
            )
        bq, sb, zb, _ = chain.qc[bname]
        expect = np.atleast_1d(s_x * sw)
        if np.any(zb != 0) or np.max(np.abs(sb.reshape(-1) - expect) / expect) > 1e-6:
            raise _unsupported(
                op,
                "bias scale",
                sb.ravel()[:4].tolist(),
                "input scale x weight scale, zero point 0",
                "re-quantize",
            )
        bias = bq.reshape(-1).astype(np.int64)
    return bias, last


def _weighted(chain: _Chain, op: Any, kind: str, a: dict, p: dict, s_x: float, shape: tuple) -> tuple[tuple, Any]:
    """A Gemm/MatMul/Conv: int8 weights (zero point 0) and int32 bias into ``p``; ``(out shape, last node)``."""
    if op.input[1] not in chain.qc:
        raise _unsupported(op, "weight", op.input[1], "a DequantizeLinear of an int8 initializer", "quantize weights")
    wq, sw, zw, axis = chain.qc[op.input[1]]
    sw = sw.reshape(-1)
    if np.any(zw != 0):
        raise _unsupported(op, "weight zero point", zw.ravel()[:4].tolist(), 0, "use symmetric int8 weights")
    if kind == "gemm":
        w, oshape = _gemm_weight(op, a, wq, sw, axis, shape)
    else:
        w, oshape = _conv_weight(op, a, wq, shape, p)
    bias, last = _bias(chain, op, s_x, sw, oshape[0])
    p.update(weight=w, bias=bias, w_scale=sw if sw.size > 1 else float(sw[0]))
    return oshape, last


def _layer(chain: _Chain, op: Any, kind: str, s_x: float, zp_x: int, shape: tuple) -> tuple[QDQLayer, str]:
    """``(layer, its quantized output tensor)`` for the chain link starting at ``op`` (after its input's DQ):
    the op, an optional fused Relu after a Gemm/Conv, then the QuantizeLinear giving ``s_y``, ``z_y``."""
    a = _attrs(op)
    p: dict = dict(name=op.name or op.output[0], kind=kind, in_scale=s_x, in_zp=zp_x, in_shape=shape)
    if kind in ("gemm", "conv"):
        oshape, last = _weighted(chain, op, kind, a, p, s_x, shape)
    else:
        oshape, last = (shape if kind == "requant" else (int(np.prod(shape)),)), op
    nxt = chain.only(last.output[0], f"{p['name']} output")
    if nxt.op_type == "Relu" and kind in ("gemm", "conv"):
        p["relu"], last = True, nxt
        nxt = chain.only(nxt.output[0], f"{p['name']} relu output")
    if kind == "requant":
        p["relu"] = True
    if nxt.op_type != "QuantizeLinear":
        raise _unsupported(nxt, "op after " + op.op_type, nxt.op_type, "QuantizeLinear", "quantize every activation")
    s_y, zp_y, out_signed = _quant_params(chain.g, nxt, "output")
    if kind == "reshape" and (s_y != s_x or zp_y != zp_x):
        raise _unsupported(nxt, "reshape requantization", (s_x, s_y), "the same scale", "re-quantize")
    layer = QDQLayer(out_scale=s_y, out_zp=zp_y, out_signed=out_signed, out_shape=tuple(oshape), **p)
    _check_multiplier(layer, nxt)
    return layer, nxt.output[0]


#: Requantization multipliers ``M = s_x s_w / s_y`` an int32 multiplier and shift can hold (a smaller one
#: rounds to a zero multiplier, every output a constant; a larger one overflows the accumulator).
M_RANGE = (2.0**-31, 2.0**31)


def _check_multiplier(layer: QDQLayer, node: Any) -> None:
    """Refuse a layer whose requantization multiplier no integer multiplier/shift pair represents."""
    if layer.kind == "reshape":
        return
    m = layer.multiplier
    bad = (m < M_RANGE[0]) | (m > M_RANGE[1]) | ~np.isfinite(m)
    if bad.any():
        i = int(np.argmax(bad))
        raise _unsupported(
            node,
            f"requantization multiplier M = s_x s_w / s_y of layer {layer.name!r}",
            f"{float(m[i]):.3g} (channel {i}; output scale {layer.out_scale:.3g})",
            "in [2^-31, 2^31] (outside it every integer output is a constant or overflows)",
            "recalibrate the output scale (quantize_static on representative data)",
        )


def load_qdq(path_or_model: Any, *, input_shape: Any = None) -> QDQModel:
    """Import a QDQ model as integer :class:`QDQLayer` s (module docstring).

    Raises:
        ONNXError: bad files (see :func:`~pondlib.interop.onnx.load_onnx`), ops or patterns outside the
            chain (naming the node), unrepresentable scales or zero points.
    """
    g = Graph(read_model(path_or_model), input_shape)
    chain = _Chain(g, _dequantized_constants(g))
    notes: list[str] = []
    qin = chain.only(g.input.name, "input")
    if qin.op_type != "QuantizeLinear":
        raise _unsupported(qin, "first op", qin.op_type, "QuantizeLinear", "quantize with quantize_static (QDQ)")
    s_x, zp_x, in_signed = _quant_params(g, qin, "input")
    t, shape = qin.output[0], g.input_shape
    layers: list[QDQLayer] = []
    while True:
        dq = chain.only(t, f"tensor {t!r}")
        if dq.op_type != "DequantizeLinear":
            raise _unsupported(dq, "op after QuantizeLinear", dq.op_type, "DequantizeLinear", "use QDQ format")
        f = dq.output[0]
        if f == g.output:
            break
        op = chain.only(f, f"tensor {f!r}")
        if op.op_type in ("Softmax", "LogSoftmax"):
            notes.append(_softmax_note(chain, op))
            break
        kind = _KINDS.get(op.op_type)
        if kind is None:
            raise _unsupported(
                op,
                "unsupported op in a QDQ chain",
                op.op_type,
                "Gemm, MatMul, Conv, Relu, Flatten, Reshape",
                "replace it",
            )
        layer, t = _layer(chain, op, kind, s_x, zp_x, shape)
        layers.append(layer)
        shape, s_x, zp_x = layer.out_shape, layer.out_scale, layer.out_zp
    if not any(ly.kind in ("gemm", "conv") for ly in layers):
        raise ONNXError(
            "QDQ model", value="no quantized Gemm/Conv", limit=">= 1", where="load_qdq", fix="quantize a model"
        )
    return QDQModel(
        tuple(layers), g.input.name, g.input_shape, layers[0].in_scale, layers[0].in_zp, in_signed, tuple(notes)
    )
