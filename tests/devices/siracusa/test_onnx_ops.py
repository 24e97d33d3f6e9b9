"""Standard ONNX ops on Siracusa's graph path: float32 against onnx's reference evaluator, integer mode exact
against direct int64 loops, bad attributes refused with pondlib errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from pondlib.devices.siracusa.graphsim import GraphSim
from pondlib.devices.siracusa.kernels import KernelContext, lookup
from pondlib.devices.siracusa.kernels.onnx_ops import integer_mean
from pondlib.errors import GraphError, PondError
from pondlib.interop.onnx.opgraph import load_opgraph

RNG = np.random.default_rng(7)
_ONNX_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}


def _rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _model(op, data, consts=(), attrs=None, opset=17, domain="", n_out=1, out_types=None, out_shape=None):
    """A one-node model: ``data`` graph inputs (name -> array), ``consts`` initializers (name -> array or None
    for an omitted optional input), inputs in the order given (data first); outputs typed ``out_types``
    (numpy dtypes; float32 when not given)."""
    consts = dict(consts)
    names = list(data) + list(consts)
    node_inputs = [n if (n in data or consts[n] is not None) else "" for n in names]
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, node_inputs, outs, domain=domain, **(attrs or {}))
    g = helper.make_graph(
        [node],
        "t",
        [helper.make_tensor_value_info(k, _ONNX_TYPES[v.dtype], v.shape) for k, v in data.items()],
        [
            helper.make_tensor_value_info(o, helper.np_dtype_to_tensor_dtype(np.dtype(t)), out_shape)
            for o, t in zip(outs, out_types or [np.float32] * n_out)
        ],  # fmt: skip
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items() if v is not None],
    )
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(g, opset_imports=imports, ir_version=10)


def _check_float(model, data, rtol=2e-5):
    want = ReferenceEvaluator(model).run(None, data)
    outs = [helper.make_tensor_value_info(o.name, helper.np_dtype_to_tensor_dtype(np.asarray(w).dtype), np.shape(w))
            for o, w in zip(model.graph.output, want)]  # fmt: skip
    del model.graph.output[:]
    model.graph.output.extend(outs)  # the outputs' true types and shapes, for onnx.checker
    got = GraphSim(load_opgraph(model)).run(data, integer=False).output_list()
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape
        scale = max(float(np.max(np.abs(w))) if w.size else 0.0, 1e-6)
        assert np.allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=rtol * scale), (g, w)
    return got


FLOAT_CASES = [
    ("Conv", {"x": _rand(2, 4, 9, 8)}, {"w": _rand(6, 2, 3, 2), "b": _rand(6)},
     {"group": 2, "pads": [1, 0, 2, 1], "strides": [2, 1], "dilations": [1, 2]}, 17),
    ("Conv", {"x": _rand(1, 3, 17)}, {"w": _rand(5, 3, 4)}, {"pads": [2, 1], "strides": [3]}, 17),
    ("Conv", {"x": _rand(1, 4, 6, 6)}, {"w": _rand(4, 1, 3, 3)}, {"group": 4, "pads": [1, 1, 1, 1]}, 17),
    ("ConvTranspose", {"x": _rand(1, 4, 7)}, {"w": _rand(4, 3, 3), "b": _rand(3)},
     {"strides": [2], "pads": [1, 0], "output_padding": [1]}, 17),
    ("ConvTranspose", {"x": _rand(2, 4, 3, 4)}, {"w": _rand(4, 2, 2, 3)},
     {"strides": [2, 1], "dilations": [1, 2], "pads": [1, 0, 0, 2]}, 17),
    ("Gemm", {"a": _rand(5, 3)}, {"b": _rand(4, 5), "c": _rand(4)},
     {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, 13),
    ("Gemm", {"a": _rand(3, 5)}, {"b": _rand(5, 4)}, {}, 13),
    ("MatMul", {"a": _rand(2, 1, 3, 4)}, {"b": _rand(3, 4, 5)}, {}, 13),
    ("MaxPool", {"x": _rand(1, 2, 7, 8)}, {}, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}, 13),
    ("MaxPool", {"x": _rand(1, 2, 8, 9)}, {}, {"kernel_shape": [2, 3], "strides": [2, 2], "ceil_mode": 1}, 13),
    ("MaxPool", {"x": _rand(1, 3, 11)}, {}, {"kernel_shape": [3], "strides": [2], "dilations": [2]}, 13),
    ("AveragePool", {"x": _rand(1, 2, 7, 7)}, {},
     {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2], "count_include_pad": 1}, 13),
    ("AveragePool", {"x": _rand(1, 2, 7, 8)}, {},
     {"kernel_shape": [3, 2], "pads": [1, 0, 1, 0], "strides": [2, 2], "ceil_mode": 1}, 19),
    ("AveragePool", {"x": _rand(1, 2, 9)}, {}, {"kernel_shape": [2], "strides": [1]}, 11),
    ("GlobalAveragePool", {"x": _rand(2, 3, 4, 5)}, {}, {}, 13),
    ("GlobalMaxPool", {"x": _rand(2, 3, 6, 2)}, {}, {}, 13),
    ("Pad", {"x": _rand(2, 3, 4)}, {"p": np.array([0, 1, 2, 0, 2, 1]), "v": np.float32(1.5)}, {}, 13),
    ("Pad", {"x": _rand(2, 3, 4)}, {"p": np.array([0, 2, 1, 0, 1, 3])}, {"mode": "reflect"}, 13),
    ("Pad", {"x": _rand(2, 3, 4)}, {"p": np.array([0, 2, 1, 0, 1, 3])}, {"mode": "edge"}, 13),
    ("Pad", {"x": _rand(1, 2, 3, 3)}, {}, {"pads": [0, 0, 1, 1, 0, 0, 1, 1], "value": -2.0}, 10),
    ("Slice", {"x": _rand(5, 6, 7)}, {"s": np.array([4, -1]), "e": np.array([0, -8]), "a": np.array([0, 2]),
                                       "st": np.array([-2, -3])}, {}, 13),
    ("Slice", {"x": _rand(5, 6)}, {"s": np.array([1]), "e": np.array([100])}, {}, 13),
    ("Gather", {"x": _rand(4, 5, 3)}, {"i": np.array([[0, -1], [2, 4]])}, {"axis": 1}, 13),
    ("Squeeze", {"x": _rand(1, 3, 1, 2)}, {"a": np.array([0, -2])}, {}, 13),
    ("Squeeze", {"x": _rand(1, 3, 1, 2)}, {}, {"axes": [2]}, 11),
    ("Unsqueeze", {"x": _rand(3, 2)}, {"a": np.array([0, -1])}, {}, 13),
    ("Unsqueeze", {"x": _rand(3, 2)}, {}, {"axes": [1]}, 11),
    ("Flatten", {"x": _rand(2, 3, 4)}, {}, {"axis": 2}, 13),
    ("Shape", {"x": _rand(2, 3, 4)}, {}, {"start": 1}, 15),
    ("Cast", {"x": _rand(3, 4) * 50}, {}, {"to": TensorProto.INT8}, 13),
    ("Cast", {"x": _rand(3, 4)}, {}, {"to": TensorProto.FLOAT16}, 13),
    ("Clip", {"x": _rand(3, 4)}, {"lo": np.float32(-0.5), "hi": np.float32(0.7)}, {}, 13),
    ("Clip", {"x": _rand(3, 4)}, {"lo": None, "hi": np.float32(0.2)}, {}, 13),
    ("Div", {"x": _rand(3, 4)}, {"y": _rand(4) + 3}, {}, 13),
    ("Pow", {"x": np.abs(_rand(3, 4)) + 0.1}, {"y": _rand(4)}, {}, 13),
    ("Sqrt", {"x": np.abs(_rand(3, 4))}, {}, {}, 13),
    ("Exp", {"x": _rand(3, 4)}, {}, {}, 13),
    ("Floor", {"x": _rand(3, 4) * 3}, {}, {}, 13),
    ("Ceil", {"x": _rand(3, 4) * 3}, {}, {}, 13),
    ("Round", {"x": np.float32([0.5, 1.5, -2.5, 2.4, -0.6])}, {}, {}, 13),
    ("Sigmoid", {"x": _rand(3, 4) * 4}, {}, {}, 13),
    ("HardSigmoid", {"x": _rand(3, 4) * 4}, {}, {"alpha": 0.3, "beta": 0.4}, 13),
    ("HardSwish", {"x": _rand(3, 4) * 4}, {}, {}, 14),
    ("Swish", {"x": _rand(3, 4) * 4}, {}, {"alpha": 1.1}, 24),
    ("Gelu", {"x": _rand(3, 4) * 3}, {}, {"approximate": "none"}, 20),
    ("Gelu", {"x": _rand(3, 4) * 3}, {}, {"approximate": "tanh"}, 20),
    ("Softmax", {"x": _rand(2, 3, 4)}, {}, {"axis": 1}, 13),
    ("LayerNormalization", {"x": _rand(2, 3, 8)}, {"s": _rand(8), "b": _rand(8)}, {"epsilon": 1e-3}, 17),
    ("LayerNormalization", {"x": _rand(2, 3, 8)}, {"s": _rand(3, 8)}, {"axis": 1}, 17),
    ("GroupNormalization", {"x": _rand(2, 4, 3, 3)}, {"s": _rand(4), "b": _rand(4)}, {"num_groups": 2}, 21),
    ("InstanceNormalization", {"x": _rand(2, 3, 5)}, {"s": _rand(3), "b": _rand(3)}, {"epsilon": 1e-4}, 13),
    ("BatchNormalization", {"x": _rand(2, 3, 5)},
     {"s": _rand(3), "b": _rand(3), "m": _rand(3), "v": np.abs(_rand(3)) + 0.5}, {}, 15),
    ("RMSNormalization", {"x": _rand(2, 3, 8)}, {"s": _rand(8)}, {"epsilon": 1e-4}, 23),
    ("ReduceMean", {"x": _rand(2, 3, 4)}, {}, {"axes": [0, 2]}, 13),
    ("ReduceMean", {"x": _rand(2, 3, 4)}, {"a": np.array([-1])}, {"keepdims": 0}, 18),
    ("ReduceSum", {"x": _rand(2, 3, 4)}, {"a": np.array([1])}, {"keepdims": 0}, 13),
    ("ReduceSum", {"x": _rand(2, 3, 4)}, {}, {"axes": [1, 2]}, 11),
    ("ReduceSum", {"x": _rand(2, 3, 4)}, {}, {}, 13),
]  # fmt: skip


@pytest.mark.parametrize(("op", "data", "consts", "attrs", "opset"), FLOAT_CASES, ids=[c[0] for c in FLOAT_CASES])
def test_float_ops_match_onnx_reference(op, data, consts, attrs, opset):
    model = _model(op, data, consts, attrs, opset, n_out=3 if op == "LayerNormalization" else 1)
    got = _check_float(model, data)
    assert all(g.dtype == np.float32 for g in got) or op in ("Cast", "Shape")


def test_softmax_before_opset_13_flattens_from_axis():
    x = _rand(2, 3, 4)
    for attrs, rows in (({"axis": 1}, 2), ({}, 2), ({"axis": 2}, 6), ({"axis": 0}, 1)):
        got = lookup("Softmax", "", "t")([x], attrs, KernelContext(False, 11))
        flat = x.reshape(rows, -1).astype(np.float64)
        want = np.exp(flat - flat.max(1, keepdims=True))
        assert np.allclose(got.reshape(rows, -1), want / want.sum(1, keepdims=True), rtol=1e-5)
    got = lookup("Softmax", "", "t")([x], {"axis": 1}, KernelContext(False, 13))
    assert np.allclose(got.sum(axis=1), 1.0, rtol=1e-5)


def test_conv_transpose_with_groups_matches_direct_loops():
    x, w, b = _ints(2, 4, 5), _ints(4, 3, 3), _ints(6)
    attrs = {"group": 2, "strides": [2], "dilations": [2], "pads": [1, 2], "output_padding": [1]}
    got = lookup("ConvTranspose", "", "t")([x, w, b], attrs, KernelContext(True))
    full = 2 * (5 - 1) + 1 + 2 * (3 - 1) + 1
    y = np.zeros((2, 6, full), dtype=np.int64)
    for n, c, i, m, k in itertools.product(range(2), range(4), range(5), range(3), range(3)):
        y[n, (c // 2) * 3 + m, i * 2 + k * 2] += int(x[n, c, i]) * int(w[c, m, k])
    want = y[:, :, 1 : full - 2] + b[None, :, None]
    assert got.dtype == np.int64 and np.array_equal(got, want)
    fgot = lookup("ConvTranspose", "", "t")([x.astype(np.float32), w.astype(np.float32), None], attrs,
                                             KernelContext(False))  # fmt: skip
    assert fgot.dtype == np.float32 and np.allclose(fgot, want - b[None, :, None])


def test_pad_negative_pads_crop():
    x = _ints(2, 3, 4)
    got = lookup("Pad", "", "t")([x, np.array([0, 2, -1, 0, 1, 3])], {"mode": "edge"}, KernelContext(True, 13))
    want = np.pad(x[:, :, 1:], [(0, 0), (2, 1), (0, 3)], mode="edge")
    assert np.array_equal(got, want)


def test_microsoft_gelu_is_the_erf_form():
    x = np.float32([-3, -1, -0.5, 0, 0.5, 1, 3])
    fn = lookup("Gelu", "com.microsoft", "t")
    want = _check_float(_model("Gelu", {"x": x}, {}, {"approximate": "none"}, 20), {"x": x})[0]
    got = fn([x], {}, KernelContext(False))
    assert np.allclose(got, want, rtol=1e-6) and got.dtype == np.float32


def test_deeploy_rmsnorm_normalizes_the_last_axis():
    x, w = _rand(2, 4), _rand(4)
    got = lookup("RMSNorm", "", "t")([x, w], {"eps": 1e-6}, KernelContext(False))
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * w
    assert np.allclose(got, want, rtol=1e-5)


# -- integer mode: exact ---------------------------------------------------------------------------------------
def _ints(*shape: int, lo: int = -128, hi: int = 128) -> np.ndarray:
    return RNG.integers(lo, hi, size=shape, dtype=np.int64)


def _conv_loops(x, w, b, strides, pads, dils, group):
    """Direct int64 loops of a 2-D grouped convolution (the definition, nothing vectorized)."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + pads[0] + pads[2], wd + pads[1] + pads[3]), dtype=np.int64)
    xp[:, :, pads[0] : pads[0] + h, pads[1] : pads[1] + wd] = x
    oh = (xp.shape[2] - dils[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (xp.shape[3] - dils[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, m, oh, ow), dtype=np.int64)
    mg = m // group
    for nn, mm, i, j in itertools.product(range(n), range(m), range(oh), range(ow)):
        acc = 0 if b is None else int(b[mm])
        g = mm // mg
        for cc, a, bb in itertools.product(range(cg), range(kh), range(kw)):
            acc += int(xp[nn, g * cg + cc, i * strides[0] + a * dils[0], j * strides[1] + bb * dils[1]]) * int(
                w[mm, cc, a, bb]
            )
        y[nn, mm, i, j] = acc
    return y


@pytest.mark.parametrize(
    ("group", "strides", "pads", "dils", "bias"),
    [
        (1, (1, 1), (1, 1, 1, 1), (1, 1), True),
        (2, (2, 3), (0, 2, 1, 0), (2, 1), False),
        (4, (1, 2), (1, 1, 1, 1), (1, 1), True),
    ],
)  # fmt: skip
def test_integer_conv_is_exact(group, strides, pads, dils, bias):
    x = _ints(2, 4, 7, 8)
    w = _ints(8, 4 // group, 3, 2)
    b = _ints(8, lo=-(2**20), hi=2**20) if bias else None
    attrs = {"group": group, "strides": list(strides), "pads": list(pads), "dilations": list(dils)}
    got = lookup("Conv", "", "t")([x, w, b], attrs, KernelContext(True))
    want = _conv_loops(x, w, b, strides, pads, dils, group)
    assert got.dtype == np.int64 and np.array_equal(got, want)


def test_integer_conv_1d_matches_2d_with_unit_height():
    x, w = _ints(1, 3, 16), _ints(5, 3, 4)
    got = lookup("Conv", "", "t")([x, w], {"strides": [3], "pads": [1, 2]}, KernelContext(True))
    want = _conv_loops(x[:, :, None], w[:, :, None], None, (1, 3), (0, 1, 0, 2), (1, 1), 1)[:, :, 0]
    assert np.array_equal(got, want)


def test_integer_conv_accumulates_beyond_int32():
    x = np.full((1, 64, 3, 3), 2**20, dtype=np.int64)
    w = np.full((1, 64, 3, 3), 2**10, dtype=np.int64)
    got = lookup("Conv", "", "t")([x, w], {}, KernelContext(True))
    assert got.item() == 64 * 9 * 2**30


def test_integer_gemm_and_matmul_are_exact():
    a, b, c = _ints(3, 5), _ints(4, 5), _ints(4)
    got = lookup("Gemm", "", "t")([a, b, c], {"transB": 1, "alpha": 2.0, "beta": 3.0}, KernelContext(True))
    want = np.array([[2 * sum(int(a[i, k]) * int(b[j, k]) for k in range(5)) + 3 * int(c[j]) for j in range(4)]
                     for i in range(3)])  # fmt: skip
    assert np.array_equal(got, want)
    x, y = _ints(2, 1, 3, 4, lo=-(2**30), hi=2**30), _ints(3, 4, 2, lo=-(2**30), hi=2**30)
    got = lookup("MatMul", "", "t")([x, y], {}, KernelContext(True))
    for bi, bj in itertools.product(range(2), range(3)):
        for i, j in itertools.product(range(3), range(2)):
            assert got[bi, bj, i, j] == sum(int(x[bi, 0, i, k]) * int(y[bj, k, j]) for k in range(4))


@settings(max_examples=20, deadline=None)
@given(op=st.sampled_from(["MatMul", "Gemm", "Conv"]), bits=st.integers(31, 40))
def test_integer_products_that_could_leave_int64_are_refused(op, bits):
    x = np.full((1, 4, 3, 3), 2**bits, dtype=np.int64)
    ins = [x.reshape(4, 9), x.reshape(9, 4)] if op != "Conv" else [x, x[:2]]
    with pytest.raises(GraphError, match="accumulator"):
        lookup(op, "", "t")(ins, {}, KernelContext(True))


def test_integer_gemm_refuses_fractional_alpha():
    with pytest.raises(GraphError, match="alpha"):
        lookup("Gemm", "", "t")([_ints(2, 2), _ints(2, 2)], {"alpha": 0.5}, KernelContext(True))


def test_integer_mean_rounds_half_up():
    sums = np.arange(-20, 21)
    for n in (1, 2, 3, 4, 7):
        want = [int(np.floor(s / n + 0.5)) for s in sums]  # exact in float64 for these small values
        assert integer_mean(sums, n).tolist() == want


def test_integer_reduce_mean_and_pools():
    x = _ints(2, 5, 4, 6)
    got = lookup("ReduceMean", "", "t")([x], {"axes": [1], "keepdims": 0}, KernelContext(True, 13))
    assert np.array_equal(got, np.floor_divide(2 * x.sum(1) + 5, 10))
    mp = lookup("MaxPool", "", "t")([x], {"kernel_shape": [2, 3], "strides": [2, 3]}, KernelContext(True))
    assert np.array_equal(mp, x.reshape(2, 5, 2, 2, 2, 3).max(axis=(3, 5)))
    gap = lookup("GlobalAveragePool", "", "t")([x], {}, KernelContext(True))
    assert np.array_equal(gap[..., 0, 0], np.floor_divide(2 * x.sum((2, 3)) + 24, 48))
    ap = lookup("AveragePool", "", "t")([x], {"kernel_shape": [2, 2], "strides": [2, 2]}, KernelContext(True))
    assert np.array_equal(ap, np.floor_divide(2 * x.reshape(2, 5, 2, 2, 3, 2).sum(axis=(3, 5)) + 4, 8))


def test_integer_maxpool_padding_never_wins():
    x = np.full((1, 1, 3, 3), -(2**40), dtype=np.int64)
    got = lookup("MaxPool", "", "t")([x], {"kernel_shape": [2, 2], "pads": [1, 1, 1, 1]}, KernelContext(True))
    assert np.all(got == -(2**40)) and got.shape == (1, 1, 4, 4)


def test_integer_div_truncates_and_deeploy_div_rounds():
    x, y = np.array([7, -7, 7, -7, 6]), np.array([2, 2, -2, -2, 4])
    fn = lookup("Div", "", "t")
    assert fn([x, y], {}, KernelContext(True)).tolist() == [3, -3, -3, 3, 1]
    attrs = {"Delta": 16, "eps": 1, "eta": 3}
    num, den = 16 * 3 * x, 3 * y + 1
    want = [int((n + (1 if n >= 0 else -1) * (d // 2)) / d) for n, d in zip(num.tolist(), den.tolist())]
    assert fn([x, y], attrs, KernelContext(True)).tolist() == want
    with pytest.raises(GraphError, match="zero"):
        fn([x, np.zeros(5, dtype=np.int64)], {}, KernelContext(True))


def test_integer_pad_slice_gather_cast_clip():
    x = _ints(1, 2, 3)
    got = lookup("Pad", "", "t")([x], {"pads": [0, 0, 1, 0, 0, 2], "value": 5.0}, KernelContext(True, 10))
    assert got.shape == (1, 2, 6) and np.all(got[..., 0] == 5) and np.array_equal(got[..., 1:4], x)
    ctx = KernelContext(True, 13)
    assert np.array_equal(lookup("Slice", "", "t")([x, np.array([2]), np.array([0]), np.array([2]),
                                                    np.array([-1])], {}, ctx), x[:, :, 2:0:-1])  # fmt: skip
    assert np.array_equal(lookup("Gather", "", "t")([x, np.array(-1)], {"axis": 2}, ctx), x[:, :, -1])
    cast = lookup("Cast", "", "t")
    assert np.array_equal(cast([x], {"to": TensorProto.INT16}, ctx), x)
    with pytest.raises(GraphError, match="Cast range"):
        cast([x * 1000], {"to": TensorProto.INT8}, ctx)
    assert np.array_equal(lookup("Clip", "", "t")([x, np.array(-3), np.array(4)], {}, ctx), np.clip(x, -3, 4))
    with pytest.raises(GraphError, match="Clip min"):
        lookup("Clip", "", "t")([x, np.float32(0.5), None], {}, ctx)


def test_float_only_ops_refuse_integer_mode():
    for op in ("Sqrt", "Exp", "Sigmoid", "Softmax", "LayerNormalization", "HardSwish"):
        with pytest.raises(GraphError, match="integer rule"):
            lookup(op, "", "t")([_ints(2, 3), _ints(3), _ints(3)], {}, KernelContext(True))


# -- bad attributes: pondlib errors, never raw numpy errors ----------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(group=st.integers(-2, 9).filter(lambda g: g not in (1, 2)), pad=st.integers(-3, -1))
def test_bad_conv_attributes_raise_graph_errors(group, pad):
    x, w = _rand(1, 4, 5, 5), _rand(4, 2, 3, 3)
    conv = lookup("Conv", "", "t")
    with pytest.raises(GraphError, match="group"):
        conv([x, w], {"group": group}, KernelContext(False))
    with pytest.raises(GraphError, match="pads"):
        conv([x, w], {"group": 2, "pads": [pad, 0, 0, 0]}, KernelContext(False))
    with pytest.raises(GraphError, match="auto_pad"):
        conv([x, w], {"group": 2, "auto_pad": "SAME_LOWER"}, KernelContext(False))


@settings(max_examples=25, deadline=None)
@given(
    mode=st.text(min_size=1, max_size=8).filter(lambda m: m not in ("constant", "reflect", "edge", "wrap")),
    index=st.integers(5, 50) | st.integers(-50, -6),
    axis=st.integers(3, 9) | st.integers(-9, -4),
)
def test_bad_pad_gather_squeeze_slice_raise_graph_errors(mode, index, axis):
    x = _rand(2, 3, 5)
    ctx = KernelContext(False, 13)
    with pytest.raises(GraphError, match="Pad mode"):
        lookup("Pad", "", "t")([x, np.array([0] * 6)], {"mode": mode}, ctx)
    with pytest.raises(GraphError, match="Gather indices"):
        lookup("Gather", "", "t")([x, np.array([index])], {"axis": 2}, ctx)
    with pytest.raises(GraphError, match="axis"):
        lookup("Gather", "", "t")([x, np.array([0])], {"axis": axis}, ctx)
    with pytest.raises(GraphError, match="Squeeze axes"):
        lookup("Squeeze", "", "t")([x, np.array([1])], {}, ctx)
    with pytest.raises(GraphError, match="Slice steps"):
        lookup("Slice", "", "t")([x, np.array([0]), np.array([2]), np.array([0]), np.array([0])], {}, ctx)
    with pytest.raises(GraphError, match="Softmax axis"):
        lookup("Softmax", "", "t")([x], {"axis": axis}, ctx)


@settings(max_examples=20, deadline=None)
@given(kernel=st.integers(7, 20), cast_to=st.integers(17, 40))
def test_bad_pool_and_cast_raise_graph_errors(kernel, cast_to):
    x = _rand(1, 2, 6, 6)
    with pytest.raises(GraphError, match="pool window"):
        lookup("MaxPool", "", "t")([x], {"kernel_shape": [kernel, 2]}, KernelContext(False))
    with pytest.raises(GraphError, match="Cast to"):
        lookup("Cast", "", "t")([x], {"to": cast_to}, KernelContext(False))
    with pytest.raises(GraphError, match="training_mode"):
        lookup("BatchNormalization", "", "t")([x] + [_rand(2)] * 4, {"training_mode": 1}, KernelContext(False))


def test_graph_runner_names_the_node_of_a_bad_attribute():
    data = {"x": _rand(1, 2, 4)}
    model = _model("Pad", data, {"p": np.array([0, 0, 1, 0, 0, 1])}, {"mode": "wrap"}, 19, out_shape=(1, 2, 6))
    got = GraphSim(load_opgraph(model)).run(data, integer=False).output_list()[0]
    assert np.array_equal(got, np.pad(data["x"], [(0, 0), (0, 0), (1, 1)], mode="wrap"))
    model = _model("Gelu", data, {}, {"approximate": "fast"}, 20, out_shape=(1, 2, 4))
    with pytest.raises(PondError, match="approximate"):
        GraphSim(load_opgraph(model)).run(data, integer=False)
