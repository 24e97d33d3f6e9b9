r"""QDQ models (``onnxruntime.quantization.quantize_static``, QuantFormat.QDQ) -> integer device layers.

:func:`load_qdq` reads the chain ``Q(input) -> [DQ -> Gemm|MatMul|Conv (-> Relu) -> Q] | [DQ -> Relu -> Q]
| [DQ -> Flatten|Reshape -> Q] ... -> DQ -> output`` (a final Softmax/LogSoftmax with its Q/DQ is dropped
with a note). Weights are int8 initializers with zero point 0, biases int32 at scale
``s_x s_w`` (checked to 1e-6 relative): the integer values are kept, never re-quantized. Every
requantizer ``q_y = clamp(round(acc M) + z_y)`` has the real scale

.. math:: M_o = s_x s_{w,o} / s_y \qquad (\text{stand-alone: } M = s_x / s_y)

* :func:`qdq_to_siracusa`: RequantShift ``mul / 2^s ~ M`` with the largest int32-safe shift
  (``requant_from_scale``), ``add = z_y 2^s``, input zero point folded into the bias
  (``b - z_x sum_k W``); a ReLU clamps at ``z_y``, representable when that is the range's floor
  (int8 with ``z_y = 0`` -> unsigned 7 bits, uint8 with ``z_y = 0``). Report: ``|mul 2^-s - M| / M``.
* :func:`qdq_to_spinnaker2`: one power-of-two shift per layer, ``shift = round(-log2 M)``, bias
  ``b + 2^(shift-1)``; symmetric int8 everywhere (zero points 0); a stand-alone ReLU requantizer is fused
  into the preceding Gemm (``M = s_x s_w / s_relu``: one rounding instead of ORT's two, noted). Report:
  ``|2^-shift - M| / M`` (up to 41 % for arbitrary scales: a power-of-two scale calibration is exact).
  The image also stores the QDQ input scale (``report["input_scale"]``, for ``pond simulate --quantize``).
  Nothing is re-quantized to hide the error: on the digits MLP (``tests/interop``) ORT's own scales give
  94.18 % vs ORT's 94.41 %; calibrating with power-of-two requantization scales (ORT
  ``TensorQuantOverrides``: input scale 2^k, each Gemm output scale ``s_x s_w 2^k``; see
  ``tests/interop/qdq_models.pow2_overrides``) makes every shift exact: 94.41 % on both, outputs equal
  up to 1 LSB at exact ties (ORT rounds half to even, the MLA half up).

Unrepresentable scales (non-finite, <= 0, a bias scale other than ``s_x s_w``, nonzero weight zero points)
are :class:`~pondlib.errors.ONNXError`; so are ops outside the chain above.

Example:
    >>> from pondlib.interop.onnx.qdq import pow2_error
    >>> pow2_error(0.3)   # 0.3 ~ 2^-2: shift 2, relative error |0.25 - 0.3| / 0.3
    (2, 0.16666666666666663)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.errors import ONNXError
from pondlib.interop.onnx.adapters import hwc_permutation
from pondlib.interop.onnx.reader import Graph, _attrs, _spatial, _unsupported, read_model
from pondlib.validate import as_float_array, check_type

__all__ = ["QDQLayer", "QDQModel", "load_qdq", "qdq_to_siracusa", "qdq_to_spinnaker2", "pow2_error"]


@dataclass(frozen=True, eq=False)
class QDQLayer:
    """One integer layer of a QDQ model (ONNX layouts: gemm weight (K, O), conv weight (O, C/g, kh, kw)).

    ``kind``: ``gemm``, ``conv``, ``requant`` (a DQ -> Relu -> Q) or ``reshape`` (layout only, same scale).
    ``in_scale/in_zp``, ``w_scale`` (scalar or (O,)), ``out_scale/out_zp``, ``out_signed`` (int8 vs uint8),
    ``relu``, ``in_shape``/``out_shape`` per sample, ``conv``: strides/pads/dilations/groups."""

    name: str
    kind: str
    in_scale: float
    in_zp: int
    out_scale: float
    out_zp: int
    out_signed: bool
    in_shape: tuple
    out_shape: tuple
    weight: Any = None
    bias: Any = None
    w_scale: Any = None
    relu: bool = False
    conv: dict = field(default_factory=dict)

    @property
    def multiplier(self) -> np.ndarray:
        """The real requantization scale ``M`` (per output channel for gemm/conv)."""
        if self.kind in ("gemm", "conv"):
            return np.atleast_1d(self.in_scale * np.asarray(self.w_scale, dtype=np.float64) / self.out_scale)
        return np.atleast_1d(self.in_scale / self.out_scale)


@dataclass(frozen=True, eq=False)
class QDQModel:
    """A QDQ model: integer layers, the input quantizer and the output dequantizer."""

    layers: tuple[QDQLayer, ...]
    input_name: str
    input_shape: tuple
    in_scale: float
    in_zp: int
    in_signed: bool
    notes: tuple[str, ...] = ()

    def quantize_input(self, x: Any) -> np.ndarray:
        """ONNX QuantizeLinear: ``clamp(rint(float32(x) / float32(s)) + z)`` (round half to even), int64."""
        arr = as_float_array(x, "x", where="QDQModel.quantize_input", error=ONNXError)
        lo, hi = (-128, 127) if self.in_signed else (0, 255)
        q = np.rint(arr.astype(np.float32) / np.float32(self.in_scale)).astype(np.int64) + self.in_zp
        return np.clip(q, lo, hi)

    @property
    def out_scale(self) -> float:
        return self.layers[-1].out_scale

    @property
    def out_zp(self) -> int:
        return self.layers[-1].out_zp


def pow2_error(m: float) -> tuple[int, float]:
    """``(shift, rel_err)``: the power of two ``2^-shift`` nearest to ``m`` in log scale and ``|2^-shift - m| / m``."""
    shift = int(round(-math.log2(m)))
    return shift, abs(2.0**-shift - m) / m


def _scale(value: Any, node: Any, what: str) -> np.ndarray:
    s = np.asarray(value, dtype=np.float64)
    if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0) or np.any(s < 1e-30) or np.any(s > 1e30):
        raise _unsupported(node, f"{what} scale", s.ravel()[:4].tolist(), "finite, in [1e-30, 1e30]", "recalibrate")
    return s


def load_qdq(path_or_model: Any, *, input_shape: Any = None) -> QDQModel:
    """Import a QDQ model as integer :class:`QDQLayer` s (module docstring).

    Raises:
        ONNXError: bad files (see :func:`~pondlib.interop.onnx.load_onnx`), ops or patterns outside the
            chain (naming the node), unrepresentable scales or zero points.
    """
    g = Graph(read_model(path_or_model), input_shape)
    qc: dict[str, tuple] = {}  # DQ of constants: name -> (int values, scale, zp, axis)
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
    cons = g.consumers
    notes: list[str] = []

    def only(name: str, why: str) -> Any:
        users = cons.get(name, [])
        if len(users) != 1:
            raise ONNXError(
                "QDQ chain", value=f"{len(users)} consumers of {name!r}", limit="one", where=why, fix="a chain model"
            )
        return users[0]

    qin = only(g.input.name, "input")
    if qin.op_type != "QuantizeLinear":
        raise _unsupported(qin, "first op", qin.op_type, "QuantizeLinear", "quantize with quantize_static (QDQ)")
    s_x = float(_scale(g.const[qin.input[1]], qin, "input").reshape(-1)[0])
    zp_node = g.const.get(qin.input[2]) if len(qin.input) > 2 else None
    zp_x = int(zp_node.reshape(-1)[0]) if zp_node is not None else 0
    signed = zp_node is None or zp_node.dtype == np.int8
    in_signed = signed
    t, shape = qin.output[0], g.input_shape
    layers: list[QDQLayer] = []
    while True:
        dq = only(t, f"tensor {t!r}")
        if dq.op_type != "DequantizeLinear":
            raise _unsupported(dq, "op after QuantizeLinear", dq.op_type, "DequantizeLinear", "use QDQ format")
        f = dq.output[0]
        if f == g.output:
            break
        op = only(f, f"tensor {f!r}")
        kind = {"Gemm": "gemm", "MatMul": "gemm", "Conv": "conv", "Relu": "requant", "Flatten": "reshape"}.get(
            op.op_type, "reshape" if op.op_type == "Reshape" else None
        )
        if op.op_type in ("Softmax", "LogSoftmax"):
            nxt = op
            while nxt.output[0] != g.output:
                nxt = only(nxt.output[0], "softmax tail")
                if nxt.op_type not in ("QuantizeLinear", "DequantizeLinear"):
                    raise _unsupported(nxt, "op after the softmax", nxt.op_type, "Q/DQ only", "move it")
            notes.append(
                f"{op.name or op.op_type}: final {op.op_type} dropped (argmax-preserving); outputs are the logits"
            )
            break
        if kind is None:
            raise _unsupported(
                op,
                "unsupported op in a QDQ chain",
                op.op_type,
                "Gemm, MatMul, Conv, Relu, Flatten, Reshape",
                "replace it",
            )
        a = _attrs(op)
        p: dict = dict(name=op.name or op.output[0], kind=kind, in_scale=s_x, in_zp=zp_x, in_shape=shape)
        last = op
        if kind in ("gemm", "conv"):
            if op.input[1] not in qc:
                raise _unsupported(
                    op, "weight", op.input[1], "a DequantizeLinear of an int8 initializer", "quantize weights"
                )
            wq, sw, zw, axis = qc[op.input[1]]
            sw = sw.reshape(-1)
            if np.any(zw != 0):
                raise _unsupported(op, "weight zero point", zw.ravel()[:4].tolist(), 0, "use symmetric int8 weights")
            if kind == "gemm":
                if a.get("transA", 0) or float(a.get("alpha", 1.0)) != 1.0 or float(a.get("beta", 1.0)) != 1.0:
                    raise _unsupported(op, "Gemm attributes", a, "transA 0, alpha 1, beta 1", "re-export")
                w = wq.T if a.get("transB", 0) else wq
                sw = sw.reshape(-1)
                if sw.size > 1 and not a.get("transB", 0) and axis not in (1, -1):
                    raise _unsupported(
                        op, "weight scale axis", axis, "the output axis", "re-quantize per output channel"
                    )
                if len(shape) != 1 or w.shape[0] != shape[0]:
                    raise _unsupported(op, "input shape", shape, f"({w.shape[0]},)", "flatten first")
                oshape = (w.shape[1],)
            else:
                w = wq
                if w.ndim != 4:
                    raise _unsupported(op, "kernel rank", w.ndim - 2, "2-D convolutions", "use Conv2d")
                conv = _spatial(op, a, shape, list(w.shape[2:]))
                conv["groups"] = int(a.get("group", 1))
                p["conv"] = conv
                hw = [
                    (
                        shape[1 + i]
                        + conv["pads"][i]
                        + conv["pads"][i + 2]
                        - conv["dilations"][i] * (w.shape[2 + i] - 1)
                        - 1
                    )
                    // conv["strides"][i]
                    + 1
                    for i in range(2)
                ]
                oshape = (w.shape[0], *hw)
            bias = np.zeros(oshape[0], np.int64)
            bname = op.input[2] if len(op.input) > 2 and op.input[2] else None
            if op.op_type == "MatMul":
                add = only(op.output[0], "MatMul output")
                if add.op_type == "Add":
                    bname = [n for n in add.input if n != op.output[0]][0]
                    last = add
            if bname is not None:
                if bname not in qc:
                    raise _unsupported(
                        op, "bias", bname, "an int32 DequantizeLinear (not re-quantized here)", "quantize the bias"
                    )
                bq, sb, zb, _ = qc[bname]
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
            p.update(weight=w, bias=bias, w_scale=sw if sw.size > 1 else float(sw[0]))
        else:
            oshape = shape if kind == "requant" else (int(np.prod(shape)),)
        nxt = only(last.output[0], f"{p['name']} output")
        if nxt.op_type == "Relu" and kind in ("gemm", "conv"):
            p["relu"], last = True, nxt
            nxt = only(nxt.output[0], f"{p['name']} relu output")
        if kind == "requant":
            p["relu"] = True
        if nxt.op_type != "QuantizeLinear":
            raise _unsupported(
                nxt, "op after " + op.op_type, nxt.op_type, "QuantizeLinear", "quantize every activation"
            )
        s_y = float(_scale(g.const[nxt.input[1]], nxt, "output").reshape(-1)[0])
        zq = g.const.get(nxt.input[2]) if len(nxt.input) > 2 else None
        zp_y = int(zq.reshape(-1)[0]) if zq is not None else 0
        out_signed = zq is None or zq.dtype == np.int8
        if kind == "reshape" and (s_y != s_x or zp_y != zp_x):
            raise _unsupported(nxt, "reshape requantization", (s_x, s_y), "the same scale", "re-quantize")
        layers.append(QDQLayer(out_scale=s_y, out_zp=zp_y, out_signed=out_signed, out_shape=tuple(oshape), **p))
        t, shape, s_x, zp_x = nxt.output[0], tuple(oshape), s_y, zp_y
    if not any(ly.kind in ("gemm", "conv") for ly in layers):
        raise ONNXError(
            "QDQ model", value="no quantized Gemm/Conv", limit=">= 1", where="load_qdq", fix="quantize a model"
        )
    return QDQModel(
        tuple(layers), g.input.name, g.input_shape, layers[0].in_scale, layers[0].in_zp, in_signed, tuple(notes)
    )


def _range(signed: bool, relu: bool, zp: int, where: QDQLayer) -> tuple[int, bool]:
    """(out_bits, signed) of a RequantShift whose clamp equals ONNX's (with a ReLU clamping at zp)."""
    if not relu:
        if signed:
            return 8, True
        return 8, False
    if zp == 0:
        return (7, False) if signed else (8, False)
    raise ONNXError(
        "ReLU clamp",
        value=f"zero point {zp}",
        limit="0 (the ReLU floor must be the range's floor)",
        where=f"layer {where.name!r}",
        fix="quantize activations symmetric int8 or uint8 with zero point 0 after ReLUs",
    )


def qdq_to_siracusa(model: QDQModel) -> tuple[Any, list[dict]]:
    """A :class:`~pondlib.devices.siracusa.config.SiracusaConfig` and one report dict per requantizer
    (``name``, ``M``, ``mul``, ``shift``, ``rel_error``). The Siracusa input is
    ``model.quantize_input(x).reshape(B, -1)[:, hwc_permutation(model.input_shape)]``."""
    from pondlib.devices.siracusa.config import SiracusaConfig
    from pondlib.devices.siracusa.mapper import requant_from_scale
    from pondlib.devices.siracusa.specification import QConv2d, QGemm, QRequant, RequantShift

    check_type(model, "model", QDQModel, where="qdq_to_siracusa", error=ONNXError, fix="import with load_qdq")
    out: list = []
    report: list[dict] = []
    layout = hwc_permutation(model.input_shape)
    lo, hi = (-128, 127) if model.in_signed else (0, 255)
    for ly in model.layers:
        if ly.kind == "reshape":
            continue
        bits, signed = _range(ly.out_signed, ly.relu, ly.out_zp, ly)
        M = ly.multiplier
        if ly.kind in ("gemm", "conv"):
            if ly.kind == "gemm":
                w = ly.weight[layout]
            else:
                c = ly.conv
                if len(set(c["pads"])) != 1 or len(set(c["strides"])) != 1 or c["dilations"] != [1, 1]:
                    raise ONNXError(
                        "conv geometry",
                        value=c,
                        limit="symmetric pads, equal strides, no dilation",
                        where=f"layer {ly.name!r}",
                        fix="change the convolution",
                    )
                w = ly.weight.transpose(2, 3, 1, 0)
            w2 = w.reshape(-1, w.shape[-1])
            bias = ly.bias - ly.in_zp * w2.sum(0) if ly.kind == "gemm" else ly.bias - ly.in_zp * w2.sum(0)
            a_, b_ = w2 * lo, w2 * hi
            acc_lo = np.minimum(a_, b_).sum(0) + bias
            acc_hi = np.maximum(a_, b_).sum(0) + bias
            rq, err = requant_from_scale(M if M.size > 1 else M[0], acc_lo, acc_hi, float(ly.out_zp), bits, signed)
            if ly.kind == "gemm":
                out.append(QGemm(ly.name, w, bias, rq))
                layout = np.arange(w.shape[1])
            else:
                C, H, W = ly.in_shape
                c = ly.conv
                out.append(QConv2d(ly.name, w, (H, W, C), bias, rq, c["strides"][0], c["pads"][0], c["groups"]))
                layout = hwc_permutation(ly.out_shape)
        else:
            rq0, err = requant_from_scale(M[0], lo - ly.in_zp, hi - ly.in_zp, float(ly.out_zp), bits, signed)
            rq = RequantShift(rq0.mul, rq0.add, rq0.div, bits, signed, in_offset=-ly.in_zp)
            out.append(QRequant(ly.name, int(np.prod(ly.out_shape)), rq))
        report.append(dict(name=ly.name, M=M, mul=np.atleast_1d(rq.mul), shift=rq.shift, rel_error=float(err)))
        lo, hi = rq.out_range
    cfg = SiracusaConfig(
        layers=tuple(out),
        n_input=int(np.prod(model.input_shape)),
        input_bits=8,
        input_signed=model.in_signed,
        input_scale=model.in_scale,
        output_scale=model.out_scale,
    )
    return cfg, report


def qdq_to_spinnaker2(model: QDQModel, *, acc_bits: int | None = None) -> tuple[Any, list[dict]]:
    """A SpiNNaker2 :class:`~pondlib.devices.spinnaker2.dnn.DNNConfig` (power-of-two shifts) and one report
    dict per layer (``name``, ``M``, ``shift``, ``rel_error``). Input: ``model.quantize_input(x)``."""
    from pondlib.devices.spinnaker2.dnn import DNNConfig, DNNLayerConfig, max_tile_columns
    from pondlib.devices.spinnaker2.limits import get_limits

    check_type(model, "model", QDQModel, where="qdq_to_spinnaker2", error=ONNXError, fix="import with load_qdq")
    lim = get_limits(None)
    acc_bits = lim.acc_bits if acc_bits is None else int(acc_bits)
    groups: list[list[QDQLayer]] = []
    for ly in model.layers:
        if ly.in_zp or ly.out_zp or not ly.out_signed or not model.in_signed:
            raise ONNXError(
                "zero point / type",
                value=f"in {ly.in_zp}, out {ly.out_zp}, signed {ly.out_signed}",
                limit="symmetric int8 (zero point 0)",
                where=f"layer {ly.name!r}",
                fix="quantize_static(..., activation_type=QInt8, extra_options={'ActivationSymmetric': True})",
            )
        if ly.kind == "gemm":
            groups.append([ly])
        elif ly.kind == "requant" and groups and len(groups[-1]) == 1:
            groups[-1].append(ly)
        elif ly.kind == "reshape" and not groups and len(ly.in_shape) == 1:
            continue
        else:
            raise ONNXError(
                "layer not supported on SpiNNaker2",
                value=ly.kind,
                limit="Gemm (+ ReLU) chains",
                where=f"layer {ly.name!r}",
                fix="run it on Siracusa or change the model",
            )
    layers, report = [], []
    x_max = 127
    for grp in groups:
        g0 = grp[0]
        s_out = grp[-1].out_scale
        M = np.atleast_1d(g0.in_scale * np.asarray(g0.w_scale, dtype=np.float64) / s_out)
        m_ref = float(np.exp(np.mean(np.log(M))))
        shift, _ = pow2_error(m_ref)
        rel = float(np.max(np.abs(2.0**-shift - M) / M))
        if shift < 0:
            raise ONNXError(
                "requantization scale",
                value=float(M.max()),
                limit="<= 1.41 (a right shift)",
                where=f"layer {g0.name!r}",
                fix="recalibrate: the output scale is finer than input x weight",
            )
        if len(grp) > 1:
            report.append(dict(note=f"{grp[1].name} fused into {g0.name}: one rounding instead of two"))
        relu = g0.relu or len(grp) > 1
        bias = g0.bias + ((1 << (shift - 1)) if shift > 0 else 0)
        K, N = g0.weight.shape
        c_max = max(1, max_tile_columns(K, lim))
        n_w = max(1, math.ceil(N / c_max))
        edges = [round(j * N / n_w) for j in range(n_w + 1)]
        tiles = tuple((edges[j], edges[j + 1]) for j in range(n_w))
        bound = int(np.max(x_max * np.abs(g0.weight).sum(axis=0) + np.abs(bias)))
        worst = int(K * 128 * int(np.max(np.abs(g0.weight))) + int(np.max(np.abs(bias))))
        layers.append(
            DNNLayerConfig(
                g0.name,
                g0.weight.astype(np.int64),
                bias.astype(np.int64),
                int(shift),
                bool(relu),
                tiles,
                int(round(-math.log2(g0.in_scale))),
                int(round(-math.log2(float(np.max(g0.w_scale))))),
                int(round(-math.log2(s_out))),
                bound,
                worst,
            )
        )
        report.append(dict(name=g0.name, M=M, shift=int(shift), rel_error=rel))
    cfg = DNNConfig(
        tuple(layers),
        int(round(-math.log2(model.in_scale))),
        acc_bits,
        "error",
        lim.name,
        {
            "qdq": [{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in r.items()} for r in report],
            "notes": list(model.notes),
            "input_scale": float(model.in_scale),
        },
    )
    return cfg, [r for r in report if "name" in r]
