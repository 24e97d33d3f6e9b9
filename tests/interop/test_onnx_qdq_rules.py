"""QDQ import, link by link, on hand-built chains: what each link becomes and each refusal's message.

The chains are built with ``onnx.helper`` (no ONNX Runtime): ``Q(x) -> DQ -> op -> Q -> DQ -> ... -> y``
with int8 weights and int32 biases behind their own DequantizeLinear nodes.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from pondlib.errors import ONNXError
from pondlib.interop.onnx import load_qdq

F = TensorProto.FLOAT
ZP0 = np.int8(0)
S_X, S_W, S_Y = 0.05, 0.01, 0.1


def _q(src, dst, scale, zp, name):
    """Q then DQ of tensor ``src`` (scale/zero point initializers named after ``name``) -> ``dst``."""
    nodes = [
        helper.make_node("QuantizeLinear", [src, f"{name}_s", f"{name}_z"], [f"{name}_q"], name=f"{name}_Q"),
        helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [dst], name=f"{name}_DQ"),
    ]
    inits = {
        f"{name}_s": np.array(scale, np.float32),
        f"{name}_z": np.array(zp, zp.dtype if hasattr(zp, "dtype") else np.int8),
    }
    return nodes, inits


def _const_dq(name, q, scale, zp=None, axis=None):
    """An integer initializer ``name_int`` behind a DequantizeLinear giving ``name``."""
    inputs = [f"{name}_int", f"{name}_cs"] + ([f"{name}_cz"] if zp is not None else [])
    node = helper.make_node(
        "DequantizeLinear", inputs, [name], name=f"{name}_DQ", **({} if axis is None else {"axis": axis})
    )
    inits = {f"{name}_int": q, f"{name}_cs": np.asarray(scale, np.float32)}
    if zp is not None:
        inits[f"{name}_cz"] = zp
    return [node], inits


def _model(nodes, inits, in_dims, opset=17):
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, ["N", *in_dims])],
        [helper.make_tensor_value_info("y", F, ["N", "D"])],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _gemm_chain(
    *,
    w_zp=None,
    b_scale=S_X * S_W,
    bias=True,
    relu=False,
    gemm_attrs=None,
    tail=(),
    out_zp=ZP0,
    op="Gemm",
):
    """Q(x) -> DQ -> Gemm(W, b) [-> Relu] -> Q -> DQ [-> tail...] -> y, x of 4 features, 3 outputs."""
    q = np.arange(12, dtype=np.int8).reshape(3, 4) - 6  # (O, K), used with transB=1
    nodes, inits = _q("x", "xd", S_X, np.int8(0), "in")
    n, i = _const_dq("W", q if op == "Gemm" else q.T.copy(), S_W, w_zp)
    nodes += n
    inits |= i
    ins = ["xd", "W"]
    if bias:
        n, i = _const_dq("b", np.array([1, -2, 3], np.int32), b_scale)
        nodes += n
        inits |= i
        ins.append("b")
    attrs = {"transB": 1} if op == "Gemm" else {}
    if op == "Gemm":
        nodes.append(helper.make_node("Gemm", ins, ["h"], name="fc", **attrs, **(gemm_attrs or {})))
    else:
        nodes.append(helper.make_node("MatMul", ["xd", "W"], ["m"], name="fc"))
        nodes.append(helper.make_node("Add", ["m", "b"], ["h"], name="fc_add"))
    src = "h"
    if relu:
        nodes.append(helper.make_node("Relu", ["h"], ["hr"], name="relu"))
        src = "hr"
    last = "y" if not tail else "hd"
    n, i = _q(src, last, S_Y, out_zp, "out")
    nodes += n
    inits |= i
    nodes += list(tail)
    return _model(nodes, inits, [4])


def _refused(model, *parts):
    with pytest.raises(ONNXError, match=".*".join(re.escape(p) for p in parts)):
        load_qdq(model)


def test_gemm_link_keeps_the_integers():
    m = load_qdq(_gemm_chain(relu=True))
    (ly,) = m.layers
    assert (ly.name, ly.kind, ly.relu, ly.in_shape, ly.out_shape) == ("fc", "gemm", True, (4,), (3,))
    assert ly.weight.dtype == np.int64 and ly.weight.shape == (4, 3)
    assert np.array_equal(ly.weight, (np.arange(12).reshape(3, 4) - 6).T)
    assert ly.bias.tolist() == [1, -2, 3] and ly.w_scale == pytest.approx(S_W)
    assert (ly.in_scale, ly.out_scale) == (pytest.approx(S_X), pytest.approx(S_Y))
    assert (m.in_zp, m.in_signed, ly.out_signed, m.notes) == (0, True, True, ())
    assert np.allclose(ly.multiplier, S_X * S_W / S_Y)


def test_matmul_add_bias_uint8_output_and_softmax_tail():
    tail = [
        helper.make_node("Softmax", ["hd"], ["p"], name="sm", axis=1),
        *_q("p", "y", 1 / 256, np.uint8(0), "prob")[0],
    ]
    model = _gemm_chain(op="MatMul", out_zp=np.uint8(128), tail=tail)
    model.graph.initializer.extend(
        numpy_helper.from_array(np.asarray(v), k) for k, v in _q("p", "y", 1 / 256, np.uint8(0), "prob")[1].items()
    )
    m = load_qdq(model)
    (ly,) = m.layers
    assert ly.kind == "gemm" and ly.bias.tolist() == [1, -2, 3] and not ly.relu
    assert (ly.out_zp, ly.out_signed) == (128, False)
    assert m.notes == ("sm: final Softmax dropped (argmax-preserving); outputs are the logits",)


def test_requant_and_reshape_links():
    nodes, inits = _q("x", "xd", S_X, np.int8(0), "in")
    nodes.append(helper.make_node("Relu", ["xd"], ["r"], name="relu"))
    n, i = _q("r", "rd", S_X, np.int8(0), "r")
    nodes += n
    inits |= i
    nodes.append(helper.make_node("Flatten", ["rd"], ["f"], name="flat"))
    n, i = _q("f", "fd", S_X, np.int8(0), "f")
    nodes += n
    inits |= i
    qw, qi = _const_dq("W", np.ones((6, 2), np.int8), S_W)
    nodes += qw + [helper.make_node("MatMul", ["fd", "W"], ["h"], name="mm")]
    inits |= qi
    n, i = _q("h", "y", S_Y, np.int8(0), "out")
    m = load_qdq(_model(nodes + n, inits | i, [2, 3]))
    assert [(ly.kind, ly.relu, ly.out_shape) for ly in m.layers] == [
        ("requant", True, (2, 3)),
        ("reshape", False, (6,)),
        ("gemm", False, (2,)),
    ]
    assert m.layers[2].bias.tolist() == [0, 0]
    # a reshape must not requantize
    nodes[6] = helper.make_node("QuantizeLinear", ["f", "f_s2", "f_z"], ["f_q"], name="f_Q")
    inits["f_s2"] = np.array(2 * S_X, np.float32)
    _refused(_model(nodes + n, inits | i, [2, 3]), "'f_Q' (QuantizeLinear): reshape requantization")


def test_conv_link():
    nodes, inits = _q("x", "xd", S_X, np.int8(0), "in")
    n, i = _const_dq("W", np.ones((2, 1, 3, 3), np.int8), np.array([S_W, 2 * S_W]), axis=0)
    nodes += n + [helper.make_node("Conv", ["xd", "W"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[2, 2])]
    inits |= i
    n, i = _q("c", "y", S_Y, np.int8(0), "out")
    (ly,) = load_qdq(_model(nodes + n, inits | i, [1, 5, 5])).layers
    assert ly.kind == "conv" and ly.out_shape == (2, 3, 3) and ly.conv["groups"] == 1
    assert ly.conv["strides"] == [2, 2] and np.allclose(ly.w_scale, [S_W, 2 * S_W])


@pytest.mark.parametrize(
    "kwargs, parts",
    [
        (dict(w_zp=np.int8(1)), ["'fc' (Gemm): weight zero point: got [1], expected 0"]),
        (dict(b_scale=2 * S_X * S_W), ["'fc' (Gemm): bias scale", "input scale x weight scale, zero point 0"]),
        (dict(gemm_attrs={"alpha": 2.0}), ["'fc' (Gemm): Gemm attributes"]),
    ],
)
def test_gemm_link_refusals(kwargs, parts):
    _refused(_gemm_chain(**kwargs), *parts)


def test_chain_shape_refusals():
    m = _gemm_chain(bias=False)
    m.graph.node.append(helper.make_node("Relu", ["h"], ["other"], name="branch"))
    _refused(m, "fc output: QDQ chain: got 2 consumers of 'h', expected one")
    sig = _gemm_chain()
    for node in sig.graph.node:
        if node.name == "out_Q":
            node.op_type = "Sigmoid"
            del node.input[1:]
    _refused(sig, "'out_Q' (Sigmoid): op after Gemm: got Sigmoid, expected QuantizeLinear")
    first = _model([helper.make_node("Relu", ["x"], ["y"], name="r")], {}, [4])
    _refused(first, "'r' (Relu): first op: got Relu, expected QuantizeLinear")
    nodes, inits = _q("x", "xd", S_X, np.int8(0), "in")
    tanh = _model(nodes + [helper.make_node("Tanh", ["xd"], ["y"], name="t")], inits, [4])
    _refused(tanh, "'t' (Tanh): unsupported op in a QDQ chain: got Tanh")
    relu_only = nodes + [helper.make_node("Relu", ["xd"], ["r"], name="r")] + _q("r", "y", S_X, np.int8(0), "o")[0]
    _refused(
        _model(relu_only, inits | _q("r", "y", S_X, np.int8(0), "o")[1], [4]),
        "load_qdq: QDQ model: got no quantized Gemm/Conv",
    )


def test_weight_bias_and_scale_refusals():
    nodes, inits = _q("x", "xd", S_X, np.int8(0), "in")
    float_w = _model(
        nodes + [helper.make_node("MatMul", ["xd", "W"], ["y"], name="mm")],
        inits | {"W": np.ones((4, 2), np.float32)},
        [4],
    )
    _refused(float_w, "'mm' (MatMul): weight: got W, expected a DequantizeLinear of an int8 initializer")
    m = _gemm_chain(bias=False)
    g = m.graph
    g.initializer.append(numpy_helper.from_array(np.zeros(3, np.float32), "fb"))
    for node in g.node:
        if node.name == "fc":
            node.input.append("fb")
    _refused(m, "'fc' (Gemm): bias: got fb, expected an int32 DequantizeLinear")
    zero = _gemm_chain()
    for init in zero.graph.initializer:
        if init.name == "in_s":
            init.CopyFrom(numpy_helper.from_array(np.array(0.0, np.float32), "in_s"))
    _refused(zero, "'in_Q' (QuantizeLinear): input scale: got [0.0], expected finite, in [1e-30, 1e30]")
    conv1d = _model(
        nodes
        + _const_dq("W", np.ones((2, 1, 3), np.int8), S_W)[0]
        + [helper.make_node("Conv", ["xd", "W"], ["y"], name="c")],
        inits | _const_dq("W", np.ones((2, 1, 3), np.int8), S_W)[1],
        [1, 5],
    )
    _refused(conv1d, "'c' (Conv): kernel rank: got 1, expected 2-D convolutions")
