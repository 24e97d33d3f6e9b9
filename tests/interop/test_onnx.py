"""Float ONNX import: parity with ONNX Runtime on the PyTorch exports shipped in the onnx wheel; bad input."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from pondlib.devices.siracusa.onnx import to_siracusa
from pondlib.devices.spinnaker2.onnx import to_spinnaker2
from pondlib.errors import ONNXError
from pondlib.interop.onnx import MIN_OPSET, load_onnx, run_float

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "pytorch-converted")
ACCEPTED = (
    "AvgPool1d AvgPool1d_stride AvgPool2d AvgPool2d_stride AvgPool3d BatchNorm1d_3d_input_eval BatchNorm2d_eval "
    "Conv1d Conv1d_dilated Conv1d_groups Conv1d_pad1 Conv1d_pad2 Conv1d_stride Conv2d Conv2d_depthwise "
    "Conv2d_depthwise_padded Conv2d_depthwise_strided Conv2d_depthwise_with_multiplier Conv2d_dilated "
    "Conv2d_groups Conv2d_no_bias Conv2d_padding Conv2d_strided Conv3d_groups LeakyReLU LeakyReLU_with_negval "
    "Linear Linear_no_bias LogSoftmax MaxPool1d MaxPool1d_stride MaxPool2d MaxPool3d_stride_padding ReLU Softmax "
    "log_softmax_dim3 softmax_functional_dim3"
).split()
REFUSED = "ConvTranspose2d ELU Embedding GLU PReLU_1d Pad ZeroPad2d Sigmoid Tanh Softmin".split()


def _ort(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    if model.opset_import[0].version < 13:  # ORT lacks some opset-6 kernels: same model at opset 13
        from onnx import version_converter

        model = version_converter.convert_version(model, 13)
    sess = ort.InferenceSession(model.SerializeToString(), so)
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


@pytest.mark.parametrize("name", ACCEPTED)
def test_pytorch_export_matches_ort(name: str) -> None:
    d = os.path.join(DATA, f"test_{name}")
    model = onnx.load(os.path.join(d, "model.onnx"))
    x = numpy_helper.to_array(onnx.load_tensor(os.path.join(d, "test_data_set_0", "input_0.pb")))
    ref = _ort(model, x)
    y = run_float(load_onnx(model), x)
    assert y.shape == ref.shape
    assert np.max(np.abs(y - ref)) <= 1e-5 * np.max(np.abs(ref))


@pytest.mark.parametrize("name", [n for n in REFUSED if os.path.isdir(os.path.join(DATA, f"test_{n}"))])
def test_unsupported_pytorch_export_names_node_and_op(name: str) -> None:
    with pytest.raises(ONNXError, match=r"node .*\(") as err:
        load_onnx(os.path.join(DATA, f"test_{name}", "model.onnx"))
    assert "unsupported op" in str(err.value)


def _mlp(opset: int = 13, dims=("N", 4)) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.normal(size=(3, 4)).astype(np.float32), "W"),
        numpy_helper.from_array(rng.normal(size=3).astype(np.float32), "b"),
        numpy_helper.from_array(np.full(3, 2.0, np.float32), "g"),
        numpy_helper.from_array(np.full(3, 0.5, np.float32), "be"),
        numpy_helper.from_array(np.full(3, 0.1, np.float32), "mu"),
        numpy_helper.from_array(np.full(3, 4.0, np.float32), "var"),
    ]
    nodes = [
        helper.make_node("Gemm", ["x", "W", "b"], ["h"], transB=1, name="fc"),
        helper.make_node("BatchNormalization", ["h", "g", "be", "mu", "var"], ["bn"], name="bn"),
        helper.make_node("Relu", ["bn"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "r"], ["a"], name="res"),
        helper.make_node("Softmax", ["a"], ["y"], axis=1, name="sm"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def test_bn_fold_residual_and_softmax_tail_match_ort() -> None:
    model = _mlp()
    m = load_onnx(model)
    assert [ly.op for ly in m.layers] == ["gemm", "relu", "add"] and m.tail[0] == "Softmax"
    assert any("BatchNormalization folded" in n for n in m.notes)
    x = np.random.default_rng(1).normal(size=(5, 4)).astype(np.float32)
    ref = _ort(model, x)
    assert np.max(np.abs(run_float(m, x) - ref)) <= 1e-5 * np.max(np.abs(ref))
    assert np.array_equal(np.argmax(run_float(m, x, tail=False), 1), np.argmax(ref, 1))
    with pytest.raises(ONNXError, match="skip connection"):
        to_siracusa(m)


def test_adapters_feed_the_device_mappers() -> None:
    from pondlib.devices.siracusa.mapper import float_forward

    m = load_onnx(_mlp())
    small = type(m)(m.layers[:2], m.input_name, m.input_shape)
    layers, perm = to_siracusa(small)
    x = np.random.default_rng(2).normal(size=(6, 4))
    assert np.allclose(float_forward(layers, x[:, perm])[0][-1][:, 0], run_float(small, x))
    mlp = to_spinnaker2(small)
    assert np.allclose(mlp.forward(x), run_float(small, x))


def test_old_opset_and_dynamic_shape_refused() -> None:
    with pytest.raises(ONNXError, match="opset"):
        load_onnx(_mlp(opset=MIN_OPSET - 1))
    with pytest.raises(ONNXError, match="dynamic input shape"):
        load_onnx(_mlp(dims=("N", "K")))
    assert load_onnx(_mlp(dims=("N", "K")), input_shape=(2, 4)).input_shape == (4,)


@settings(max_examples=25, deadline=None)
@given(cut=st.integers(min_value=1, max_value=400))
def test_truncated_bytes_are_onnx_errors(cut: int) -> None:
    data = _mlp().SerializeToString()
    with pytest.raises(ONNXError):
        load_onnx(data[: min(cut, len(data) - 1)])


@settings(max_examples=25, deadline=None)
@given(data=st.binary(min_size=0, max_size=300))
def test_random_bytes_are_onnx_errors(data: bytes) -> None:
    with pytest.raises(ONNXError):
        load_onnx(data)


@settings(max_examples=10, deadline=None)
@given(op=st.sampled_from(["Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Erf"]))
def test_unsupported_op_names_node(op: str) -> None:
    g = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], name="weird")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
    )
    with pytest.raises(ONNXError, match=f"'weird' \\({op}\\)"):
        load_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))


def test_missing_file(tmp_path) -> None:
    with pytest.raises(ONNXError, match="not found"):
        load_onnx(tmp_path / "none.onnx")
