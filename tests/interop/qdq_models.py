"""Digits MLP / CNN as float ONNX (onnx.helper) and their ORT static-quantized QDQ versions (test helpers)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(x))
    return x[idx[:1350]], d.target[idx[:1350]], x[idx[1350:]], d.target[idx[1350:]]


def _model(nodes, inits, in_shape, out_n):
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", *in_shape])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", out_n])],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def mlp_onnx(xtr, ytr):
    from pondlib.devices.spinnaker2.dnn import train_mlp

    mlp = train_mlp(xtr, ytr, (32,), epochs=20, seed=0)
    (l1, l2) = mlp.layers
    nodes = [
        helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1, name="fc1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu1"),
        helper.make_node("Gemm", ["r", "W2", "b2"], ["y"], transB=1, name="fc2"),
    ]
    return _model(nodes, {"W1": l1.weight.T, "b1": l1.bias, "W2": l2.weight.T, "b2": l2.bias}, (64,), 10)


def cnn_onnx(xtr, ytr):
    rng = np.random.default_rng(1)
    wc = rng.normal(0, 0.5, size=(4, 1, 3, 3))
    bc = rng.normal(0, 0.1, size=4)
    from pondlib.interop.onnx.layers import FloatLayer, run_float

    conv = FloatLayer(
        "c",
        "conv",
        (-1,),
        dict(weight=wc, bias=bc, strides=[1, 1], pads=[1, 1, 1, 1], dilations=[1, 1], groups=1),
        (4, 8, 8),
    )
    feats = np.maximum(run_float([conv], xtr.reshape(-1, 1, 8, 8).astype(np.float64)), 0).reshape(len(xtr), -1)
    A = np.hstack([feats, np.ones((len(feats), 1))])
    W = np.linalg.solve(A.T @ A + 1.0 * np.eye(A.shape[1]), A.T @ np.eye(10)[ytr])
    nodes = [
        helper.make_node("Conv", ["x", "Wc", "bc"], ["c"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c"], ["r"], name="relu1"),
        helper.make_node("Flatten", ["r"], ["f"], axis=1, name="flat"),
        helper.make_node("Gemm", ["f", "W", "b"], ["y"], name="fc"),
    ]
    return _model(nodes, {"Wc": wc, "bc": bc, "W": W[:-1], "b": W[-1]}, (1, 8, 8), 10)


def pow2_overrides(qdq_path):
    """ORT ``TensorQuantOverrides`` that make every requantization scale of a QDQ chain a power of two.

    The input scale is rounded up to a power of two; after each Gemm/MatMul/Conv the output scale becomes
    the smallest ``s_x s_w 2^k >= s_y`` (``s_w`` per tensor, as ORT calibrated it: weights keep their
    own scale), a stand-alone requantizer (ReLU) keeps its input scale. Rounding up never clips more
    than ORT's calibration; the multiplier-free SpiNNaker2 shift is then exact."""
    import math

    from pondlib.interop.onnx import load_qdq
    from pondlib.interop.onnx.reader import read_model

    qm = load_qdq(qdq_path)
    g = read_model(qdq_path).graph
    qnodes = [n for n in g.node if n.op_type == "QuantizeLinear"]
    out = {}
    s_x = 2.0 ** math.ceil(math.log2(qm.in_scale))
    names = [qnodes[0].input[0]]
    scales = [s_x]
    for ly in qm.layers:
        if ly.kind in ("gemm", "conv"):
            base = s_x * float(np.max(ly.w_scale))
            s_x = base * 2.0 ** math.ceil(math.log2(ly.out_scale / base))
        scales.append(s_x)
    # ORT renames a graph output ``y`` that it quantizes to ``y_QuantizeLinear_Input``: override ``y``
    names += [n.input[0].removesuffix("_QuantizeLinear_Input") for n in qnodes[1 : len(qm.layers) + 1]]
    for n, s in zip(names, scales):
        out[n] = [{"scale": np.array(s, np.float32), "zero_point": np.array(0, np.int8)}]
    return out


def quantize(model, calib, path_dir, name, pow2=False):
    """Static QDQ quantization by ORT (symmetric int8); ``pow2``: then again with :func:`pow2_overrides`."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    fp, qp = str(path_dir / f"{name}.onnx"), str(path_dir / f"{name}_qdq.onnx")
    import onnx

    onnx.save(model, fp)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": calib[i : i + 100]} for i in range(0, len(calib), 100)])

        def get_next(self):
            return next(self.it, None)

    quantize_static(
        fp,
        qp,
        Reader(),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QInt8,
        weight_type=QuantType.QInt8,
        extra_options={"ActivationSymmetric": True},
    )
    if pow2:
        overrides = pow2_overrides(qp)
        qp = str(path_dir / f"{name}_qdq_pow2.onnx")
        quantize_static(
            fp,
            qp,
            Reader(),
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QInt8,
            weight_type=QuantType.QInt8,
            extra_options={"ActivationSymmetric": True, "TensorQuantOverrides": overrides},
        )
    return fp, qp


def ort_run(path, x, optimize=True):
    import onnxruntime as ort

    so = ort.SessionOptions()
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    s = ort.InferenceSession(path, so)
    return s.run(None, {"x": x})[0]
