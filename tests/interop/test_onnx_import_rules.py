"""Float ONNX import, op by op: what each node becomes (layers, folds, notes) and each refusal's message.

Every model is built with ``onnx.helper`` (checker-valid, so the refusal is pondlib's, not the checker's).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from pondlib.errors import ONNXError
from pondlib.interop.onnx import FLOAT_OPS, load_onnx, run_float
from pondlib.interop.onnx import reader as onnx_reader

F = TensorProto.FLOAT


def _model(nodes, in_dims, out_dims, inits=None, opset=13, out_name="y"):
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, ["N", *in_dims])],
        [helper.make_tensor_value_info(out_name, F, ["N", "D"] if out_dims is None else ["N", *out_dims])],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _f32(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _refused(model, *parts):
    """load_onnx refuses ``model`` with a message containing every part, in order."""
    with pytest.raises(ONNXError, match=".*".join(re.escape(p) for p in parts)):
        load_onnx(model)


def test_every_float_op_has_an_importer():
    assert set(onnx_reader._FLOAT_IMPORTERS) == set(FLOAT_OPS)


def test_gemm_alpha_beta_transb_and_matmul_add_fold():
    w, b = _f32(2, 3), _f32(2, seed=1)
    gemm = _model(
        [helper.make_node("Gemm", ["x", "W", "b"], ["y"], name="fc", transB=1, alpha=2.0, beta=0.5)],
        [3],
        [2],
        {"W": w, "b": b},
    )
    (ly,) = load_onnx(gemm).layers
    assert ly.op == "gemm" and ly.inputs == (-1,) and ly.out_shape == (2,)
    assert np.array_equal(ly.params["weight"], w.T.astype(np.float64) * 2.0)
    assert np.array_equal(ly.params["bias"], b.astype(np.float64) * 0.5)
    mm = _model(
        [
            helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
            helper.make_node("Add", ["h", "b"], ["y"], name="ad"),
        ],
        [3],
        [2],
        {"W": w.T.copy(), "b": b},
    )
    m = load_onnx(mm)
    assert [ly.op for ly in m.layers] == ["gemm"]
    assert np.array_equal(m.layers[0].params["bias"], b.astype(np.float64))
    assert m.notes == ("ad: Add of a constant folded into the bias of mm",)


@pytest.mark.parametrize(
    "node, inits, dims, parts",
    [
        (helper.make_node("Gemm", ["x", "W"], ["y"], name="g", transA=1), {"W": _f32(3, 2)}, [3], ["transA: got 1"]),
        (helper.make_node("Gemm", ["x", "W"], ["y"], name="g"), {"W": _f32(3, 2, 1)}, [3], ["weight rank"]),
        (helper.make_node("Gemm", ["x", "W"], ["y"], name="g"), {"W": _f32(4, 2)}, [3], ["weight shape", "(3, O)"]),
        (
            helper.make_node("Gemm", ["x", "W", "b"], ["y"], name="g"),
            {"W": _f32(3, 2), "b": _f32(3)},
            [3],
            ["'g' (Gemm): bias: got (3,), expected (2,)"],
        ),
        (
            helper.make_node("Gemm", ["x", "W"], ["y"], name="g"),
            {"W": _f32(3, 2)},
            [2, 3],
            ["operands: got input shape (2, 3), 1 non-constant operands"],
        ),
    ],
)
def test_gemm_refusals(node, inits, dims, parts):
    _refused(_model([node], dims, None, inits), *parts)


def test_residual_add_and_refused_adds():
    ok = _model(
        [helper.make_node("Relu", ["x"], ["r"], name="r"), helper.make_node("Add", ["x", "r"], ["y"], name="a")],
        [4],
        [4],
    )
    m = load_onnx(ok)
    assert [(ly.op, ly.inputs) for ly in m.layers] == [("relu", (-1,)), ("add", (-1, 0))]
    x = _f32(3, 4)
    assert np.allclose(run_float(m, x), x + np.maximum(x, 0))
    shapes = _model(
        [
            helper.make_node("Unsqueeze", ["x", "ax"], ["u"], name="u"),
            helper.make_node("Add", ["x", "u"], ["y"], name="a"),
        ],
        [4],
        None,
        {"ax": np.array([2], np.int64)},
    )
    _refused(shapes, "'a' (Add): operand shapes: got ((4,), (4, 1))")
    const = _model(
        [helper.make_node("Relu", ["x"], ["r"], name="r"), helper.make_node("Add", ["r", "c"], ["y"], name="a")],
        [4],
        [4],
        {"c": _f32(4)},
    )
    _refused(const, "'a' (Add): Add operand: got constant (4,)", "a residual (two tensors)")


def test_conv_bias_fold_and_refusals():
    w = _f32(2, 1, 3, 3)
    conv = _model(
        [
            helper.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Add", ["c", "b"], ["y"], name="bias"),
        ],
        [1, 5, 5],
        [2, 5, 5],
        {"W": w, "b": np.ones((2, 1, 1), np.float32)},
    )
    m = load_onnx(conv)
    (ly,) = m.layers
    assert ly.op == "conv" and ly.out_shape == (2, 5, 5) and ly.params["bias"].tolist() == [1.0, 1.0]
    assert ly.params["pads"] == [1, 1, 1, 1] and ly.params["groups"] == 1
    assert m.notes == ("bias: Add of a constant folded into the bias of conv",)
    groups = _model([helper.make_node("Conv", ["x", "W"], ["y"], name="c", group=2)], [3, 5, 5], None, {"W": w})
    _refused(groups, "'c' (Conv): groups/channels")
    small = _model([helper.make_node("Conv", ["x", "W"], ["y"], name="c")], [1, 2, 2], None, {"W": w})
    _refused(small, "'c' (Conv): output size: got (0, 0), expected >= 1")
    pad = _model([helper.make_node("Conv", ["x", "W"], ["y"], name="c", auto_pad="BOGUS")], [1, 5, 5], None, {"W": w})
    _refused(pad, "'c' (Conv): auto_pad: got BOGUS")


def test_pool_rules():
    mp = _model(
        [helper.make_node("MaxPool", ["x"], ["y"], name="p", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)],
        [1, 5, 5],
        [1, 3, 3],
    )
    (ly,) = load_onnx(mp).layers
    assert ly.op == "maxpool" and ly.out_shape == (1, 3, 3) and ly.params["ceil_mode"] == 1
    order = _model(
        [helper.make_node("MaxPool", ["x"], ["y"], name="p", kernel_shape=[2], storage_order=1)], [1, 4], None
    )
    _refused(order, "'p' (MaxPool): storage_order: got 1")
    idx = _model([helper.make_node("MaxPool", ["x"], ["y", "i"], name="p", kernel_shape=[2])], [1, 4], None)
    _refused(idx, "'p' (MaxPool): MaxPool indices output: got i")
    dil = _model(
        [helper.make_node("AveragePool", ["x"], ["y"], name="p", kernel_shape=[2], dilations=[2])],
        [1, 6],
        None,
        opset=19,
    )
    _refused(dil, "'p' (AveragePool): dilations: got [2]")


def test_activations():
    m = load_onnx(_model([helper.make_node("LeakyRelu", ["x"], ["y"], name="l")], [3], [3]))
    assert m.layers[0].op == "leaky_relu" and m.layers[0].params == {"alpha": 0.01}


def test_reshape_family():
    chain = _model(
        [
            helper.make_node("Unsqueeze", ["x", "ax"], ["u"], name="u"),
            helper.make_node("Flatten", ["u"], ["f"], name="f", axis=1),
            helper.make_node("Reshape", ["f", "s"], ["r"], name="r"),
            helper.make_node("Squeeze", ["r", "sq"], ["y"], name="q"),
        ],
        [6],
        [6],
        {"ax": np.array([1], np.int64), "s": np.array([0, 2, 3, 1], np.int64), "sq": np.array([3], np.int64)},
    )
    assert [(ly.op, ly.out_shape) for ly in load_onnx(chain).layers] == [
        ("reshape", (1, 6)),
        ("reshape", (6,)),
        ("reshape", (2, 3, 1)),
        ("reshape", (2, 3)),
    ]
    flat = _model([helper.make_node("Flatten", ["x"], ["y"], name="f", axis=2)], [2, 3], None)
    _refused(flat, "'f' (Flatten): Flatten axis: got 2, expected 1")
    shape = {"s": np.array([2, -1], np.int64)}
    _refused(
        _model([helper.make_node("Reshape", ["x", "s"], ["y"], name="r")], [6], None, shape),
        "Reshape of the batch axis",
    )
    bad = {"s": np.array([1, 4], np.int64)}
    _refused(
        _model([helper.make_node("Reshape", ["x", "s"], ["y"], name="r")], [6], None, bad), "'r' (Reshape): Reshape:"
    )
    sq0 = {"a": np.array([0], np.int64)}
    _refused(
        _model([helper.make_node("Squeeze", ["x", "a"], ["y"], name="q")], [6], None, sq0), "Squeeze of the batch axis"
    )
    _refused(
        _model([helper.make_node("Squeeze", ["x", "a"], ["y"], name="q")], [6], None, {"a": np.array([1], np.int64)}),
        "'q' (Squeeze): axes",
    )
    _refused(
        _model([helper.make_node("Unsqueeze", ["x", "a"], ["y"], name="q")], [6], None, sq0),
        "Unsqueeze of the batch axis",
    )


def _bn_inits(c):
    return {"g": _f32(c) + 2, "be": _f32(c, seed=1), "mu": _f32(c, seed=2), "v": np.abs(_f32(c, seed=3)) + 0.5}


def test_batchnorm_folds_or_becomes_affine():
    bn = helper.make_node("BatchNormalization", ["r", "g", "be", "mu", "v"], ["y"], name="bn")
    m = load_onnx(_model([helper.make_node("Relu", ["x"], ["r"], name="relu"), bn], [3], [3], _bn_inits(3)))
    assert [ly.op for ly in m.layers] == ["relu", "affine"] and m.notes == ()
    x = _f32(4, 3)
    i = _bn_inits(3)
    k = i["g"].astype(np.float64) / np.sqrt(i["v"].astype(np.float64) + 1e-5)
    ref = np.maximum(x, 0) * k + (i["be"] - i["mu"] * k)
    assert np.allclose(run_float(m, x), ref)
    gemm = helper.make_node("Gemm", ["x", "W"], ["r"], name="fc")
    m = load_onnx(_model([gemm, bn], [3], [3], {"W": _f32(3, 3), **_bn_inits(3)}))
    assert [ly.op for ly in m.layers] == ["gemm"] and m.notes == ("bn: BatchNormalization folded into fc",)
    spatial = helper.make_node("BatchNormalization", ["x", "g", "be", "mu", "v"], ["y"], name="bn", spatial=0)
    _refused(_model([spatial], [3], None, _bn_inits(3), opset=7), "'bn' (BatchNormalization): spatial: got 0")


def test_softmax_tail_and_order_rules():
    m = load_onnx(_model([helper.make_node("Softmax", ["x"], ["y"], name="sm")], [3], [3]))
    assert m.layers == () and m.tail == ("Softmax", -1, 13)
    assert m.notes == (
        "sm: final Softmax dropped from the layers (argmax-preserving); run_float(tail=True) applies it",
    )
    inner = _model(
        [helper.make_node("Softmax", ["x"], ["s"], name="sm"), helper.make_node("Relu", ["s"], ["y"], name="r")],
        [3],
        [3],
    )
    _refused(inner, "'sm' (Softmax): Softmax position: got inside the graph")
    after = _model(
        [helper.make_node("LogSoftmax", ["x"], ["y"], name="sm"), helper.make_node("Relu", ["x"], ["z"], name="r")],
        [3],
        [3],
    )
    _refused(after, "'r' (Relu): op after the Softmax tail")


def test_dropout_identity_and_graph_output_rules():
    m = load_onnx(
        _model(
            [helper.make_node("Dropout", ["x"], ["d"], name="d"), helper.make_node("Identity", ["d"], ["y"], name="i")],
            [3],
            [3],
        )
    )
    assert m.layers == () and m.input_shape == (3,)
    mask = _model(
        [
            helper.make_node("Dropout", ["x"], ["d", "mask"], name="d"),
            helper.make_node("Cast", ["mask"], ["mf"], to=TensorProto.FLOAT),
            helper.make_node("Add", ["d", "mf"], ["y"], name="a"),
        ],
        [3],
        [3],
    )
    _refused(mask, "'d' (Dropout): Dropout mask output: got used")
    early = _model(
        [helper.make_node("Relu", ["x"], ["y"], name="r1"), helper.make_node("Relu", ["y"], ["z"], name="r2")], [3], [3]
    )
    _refused(early, "graph: graph output: got y, expected the last layer's output")
    const_in = _model([helper.make_node("Relu", ["c"], ["y"], name="r")], [3], [3], {"c": _f32(3)})
    _refused(const_in, "'r' (Relu): input: got ['c'], expected a tensor computed from the model input")
