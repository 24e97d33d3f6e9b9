"""SpiNNaker2's DNN graph path, per op: integer kernels against naive references and Deeploy's rules, each
quantized op against its float rule on the same integers, tiling and refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.devices.core import intops
from pondlib.devices.core.intmath import sat
from pondlib.devices.siracusa.kernels import KernelContext, lookup
from pondlib.devices.siracusa.kernels.deeploy_ops import isqrt as sira_isqrt
from pondlib.devices.siracusa.kernels.deeploy_ops import tdiv as sira_tdiv
from pondlib.devices.siracusa.kernels.onnx_ops import integer_mean as sira_mean
from pondlib.devices.spinnaker2.dnn_graph import GRAPH_RULES, GraphSim, graph_mapper
from pondlib.devices.spinnaker2.graph_ops import float_op, softmax_constants
from pondlib.devices.spinnaker2.limits import SpiNNaker2Limits
from pondlib.errors import ConfigError, ConstraintError, ONNXError, QuantizationError, SimulationError
from pondlib.graph.dnn import FloatLayer, FloatModel
from tests.devices.spinnaker2.graph_models import attention, cnn, conv_params, op_models
from tests.strategies import assert_pond_error, bad_types

SOME = settings(max_examples=25, deadline=None)
CTX = KernelContext(True, label="node 't' (test)")


# ------------------------------------------------------------------------------------------- kernels
def _naive_conv(x, w, s, pads, groups):
    """Loop reference of a 1-D grouped convolution."""
    b, c, n = x.shape
    o, cg, k = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[1])))
    n_out = (n + pads[0] + pads[1] - k) // s + 1
    y = np.zeros((b, o, n_out), dtype=np.int64)
    og = o // groups
    for bi in range(b):
        for oi in range(o):
            g = oi // og
            for p in range(n_out):
                y[bi, oi, p] = sum(
                    int(xp[bi, g * cg + ci, p * s + kk]) * int(w[oi, ci, kk]) for ci in range(cg) for kk in range(k)
                )
    return y


@SOME
@given(st.integers(0, 2**31), st.integers(1, 3), st.integers(1, 3), st.integers(0, 2), st.sampled_from([1, 2]))
def test_conv_equals_a_loop_reference(seed, k, s, pad, groups):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(2, 2 * groups, 7))
    w = rng.integers(-128, 128, size=(2 * groups, 2, k))
    got = intops.conv(x, w, strides=[s], pads=[pad, pad + 1], groups=groups)
    assert np.array_equal(got, _naive_conv(x, w, s, (pad, pad + 1), groups))


def test_pools_equal_hand_values():
    x = np.array([[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]]])
    # window 2x2 stride 1, pad 1 at the end: maxima and integer means (cells inside the input only)
    assert intops.max_pool(x, [2, 2], [1, 1], [0, 0, 1, 1]).tolist() == [[[[5, 6, 6], [8, 9, 9], [8, 9, 9]]]]
    # (1+2+4+5)=12/4=3; (3+6)=9/2 -> floor((18+2)/4)=5; 9 alone = 9
    assert intops.avg_pool(x, [2, 2], [1, 1], [0, 0, 1, 1])[0, 0, :, 2].tolist() == [5, 8, 9]
    assert intops.avg_pool(x, [2, 2], [1, 1], [0, 0, 1, 1])[0, 0, 0, 0] == 3


@SOME
@given(st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=20), st.integers(1, 1000))
def test_shared_integer_rules_equal_their_exact_definitions(values, d):
    """tdiv, isqrt and the integer mean against Python's exact integer arithmetic (Siracusa's Deeploy kernels call
    these same functions: tests/devices/siracusa checks them against Deeploy's goldens)."""
    v = np.array(values)
    trunc = [(abs(a) // d) * (1 if a >= 0 else -1) for a in values]  # toward zero
    assert intops.tdiv(v, d).tolist() == trunc
    assert intops.isqrt(np.abs(v)).tolist() == [math.isqrt(abs(a)) for a in values]
    assert intops.integer_mean(v, d).tolist() == [(2 * a + d) // (2 * d) for a in values]  # half up
    assert sira_tdiv is intops.tdiv and sira_isqrt is intops.isqrt and sira_mean is intops.integer_mean


@SOME
@given(st.integers(0, 2**31), st.integers(1, 6))
def test_norms_with_no_extra_bits_are_deeploys_rules(seed, d):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(3, 8))
    g = rng.integers(-128, 128, size=8)
    b = rng.integers(-1000, 1000, size=8)
    ours = sat(intops.rmsnorm(x, g, 0) >> d, 8)
    ref = lookup("iRMSNorm", "", "t")([x, g], {"D": 2**d, "n_levels": 256}, CTX)
    assert np.array_equal(ours, ref)
    ours = sat(intops.layernorm(x, g, b, 0) >> d, 8)
    ref = lookup("iLayerNorm", "", "t")([x, g, b], {"D": 2**d, "n_levels": 256}, CTX)
    assert np.array_equal(ours, ref)


def test_softmax_rows_sum_to_about_one_and_keep_the_order():
    x = np.array([[0.0, -1.0, -2.0, 1.0, 1.0]])
    log2, a, b, c, up = softmax_constants(2)  # inputs at fraction 2
    y = intops.softmax_pow2(np.rint(x * 4).astype(int), log2=log2, a=a, b=b, c=c, frac=7, up=up)
    assert y[0, 3] == y[0, 4] and y[0, 3] > y[0, 0] > y[0, 1] > y[0, 2] > 0
    ref = np.exp(x) / np.exp(x).sum()
    assert np.max(np.abs(y / 128 - ref)) < 2 / 128


# ------------------------------------------------------------------------------------------- ops
def _isolated_errors(cfg, layers, x):
    """Per op: max |device - float rule on the device's own integer inputs| in output LSBs."""
    _, _, rec = GraphSim(cfg).evolve(cfg.quantize_input(x), record=True)
    xq = cfg.quantize_input(x)
    by_name = {ly.name: ly for ly in layers}
    out = {}
    for op in cfg.ops:
        ins = [xq if j < 0 else rec[cfg.ops[j].name] for j in op.inputs]
        f = float_op(by_name[op.name], [np.ldexp(a.astype(float), -fr) for a, fr in zip(ins, op.in_fracs)])
        f = np.maximum(f, 0.0) if op.relu else f
        ref = np.clip(np.ldexp(f, op.out_frac), -128, 127)
        out[op.name] = float(np.max(np.abs(rec[op.name] - ref)))
    return out


#: Largest error in output LSBs per op type (weights quantized to int8 add up to ~1.5 LSB to MLA ops;
#: the I-BERT polynomials and the integer square root a few LSBs).
TOLERANCE = {
    "conv": 1.5,
    "gemm": 1.5,
    "matmul": 0.5,
    "add": 0.5,
    "relu": 0.0,
    "maxpool": 0.0,
    "avgpool": 0.5,
    "reshape": 0.0,
    "transpose": 0.0,
    "softmax": 2.0,
    "layernorm": 3.0,
    "rmsnorm": 2.0,
    "gelu": 1.5,
}


@pytest.mark.parametrize("name", sorted(op_models()))
def test_each_op_agrees_with_its_float_rule_within_its_tolerance(name):
    model, x = op_models()[name]
    cfg = graph_mapper(model, x)
    errs = _isolated_errors(cfg, model.layers, x)
    for op in cfg.ops:
        assert errs[op.name] <= TOLERANCE[op.op], (op.name, errs[op.name])
        assert op.tiles >= (0 if op.op == "reshape" else 1) and op.split


def test_relu_after_conv_gemm_add_is_fused_and_other_relus_stay():
    cfg = graph_mapper(*op_models()["depthwise"])
    assert [(op.op, op.relu) for op in cfg.ops] == [("conv", True)]
    cfg = graph_mapper(*op_models()["reshape"])
    assert [op.op for op in cfg.ops] == ["reshape", "relu"]


@pytest.mark.parametrize("build", [cnn, attention])
def test_whole_models_follow_the_float_model(build):
    model, x = build()
    cfg = graph_mapper(model, x)
    y, _, _ = GraphSim(cfg).evolve(cfg.quantize_input(x))
    outs = []
    for ly in model.layers:
        outs.append(float_op(ly, [x if j < 0 else outs[j] for j in ly.inputs]))
    ref, got = outs[-1], cfg.dequantize_output(y)
    rel = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert rel < 0.12, rel
    if build is cnn:
        assert np.mean(np.argmax(got, -1) == np.argmax(ref, -1)) >= 0.75


# ------------------------------------------------------------------------------------------- refusals
def test_ops_the_path_cannot_run_are_named():
    ly = FloatLayer("lr", "leaky_relu", (-1,), {"alpha": 0.1}, (4,))
    err = assert_pond_error(graph_mapper, FloatModel((ly,), "x", (4,)), np.ones((2, 4)), error=ConstraintError)
    assert err.violations[0].rule == "op_supported" and "leaky_relu" in str(err) and "softmax" in str(err)
    assert "op_supported" in GRAPH_RULES


def test_a_tile_that_cannot_fit_a_pe_is_refused_with_its_bytes():
    lim = SpiNNaker2Limits(name="small PE", sram_data_bytes=8192, dnn_reserved_bytes=4096)
    rng = np.random.default_rng(0)
    conv = FloatLayer(
        "big",
        "conv",
        (-1,),
        conv_params(rng.normal(size=(2, 64, 3, 3)), None, strides=(1, 1), pads=(1, 1, 1, 1)),
        (2, 32, 32),
    )
    sm = FloatLayer("sm", "softmax", (0,), {}, (2, 32, 32))
    model = FloatModel((conv,), "x", (64, 32, 32))
    err = assert_pond_error(graph_mapper, model, rng.normal(size=(2, 64, 32, 32)), lim, error=ConstraintError)
    assert err.violations[0].rule == "worker_sram" and "4096 B" in str(err)
    wide = FloatModel((FloatLayer("sm", "softmax", (-1,), {}, (1, 3000)),), "x", (1, 3000))
    err = assert_pond_error(graph_mapper, wide, rng.normal(size=(2, 1, 3000)), lim, error=ConstraintError)
    assert "6000 B for one row" in str(err) and sm.op == "softmax"


def test_softmax_inputs_out_of_fraction_range_are_refused():
    model = FloatModel((FloatLayer("sm", "softmax", (-1,), {}, (4,)),), "x", (4,))
    err = assert_pond_error(graph_mapper, model, np.full((2, 4), 1000.0), error=ConstraintError)
    assert err.violations[0].rule == "fraction_range"


@SOME
@given(bad_types())
def test_graph_mapper_refuses_bad_models_calibration_and_chips(bad):
    model, x = op_models()["gelu"]
    assert_pond_error(graph_mapper, bad, x, error=ONNXError)
    assert_pond_error(graph_mapper, model, bad, error=(QuantizationError, ConfigError))
    assert_pond_error(graph_mapper, model, x, chips=bad, error=ConfigError)


@SOME
@given(st.one_of(st.integers(-5, 0), st.integers(49, 10**6)))
def test_chip_counts_out_of_range_are_refused(chips):
    model, x = op_models()["gelu"]
    err = assert_pond_error(graph_mapper, model, x, chips=chips, error=ConfigError)
    assert "chips" in str(err)


@SOME
@given(st.one_of(st.just(np.full((1, 6, 8), 200)), st.just(np.zeros((1, 8, 6), np.int64)), bad_types()))
def test_graph_sim_refuses_bad_input(bad):
    model, x = op_models()["gelu"]
    cfg = graph_mapper(model, x)
    assert_pond_error(GraphSim(cfg).evolve, bad, error=SimulationError)


def test_tiling_spreads_compute_ops_and_keeps_single_row_gemms_at_the_fewest_workers():
    from pondlib.devices.spinnaker2.graph_ops import GraphOp
    from pondlib.devices.spinnaker2.graph_tiling import tile_op

    fc = GraphOp("fc", "gemm", (-1,), (512,), (0,), 0, weights=np.zeros((784, 512), np.int64))
    assert tile_op(fc, [(784,)], 94208, 147)[0] == 5  # the MLP path's (and the paper's) split
    tokens = GraphOp("fc", "gemm", (-1,), (64, 128), (0,), 0, weights=np.zeros((128, 128), np.int64))
    assert tile_op(tokens, [(64, 128)], 94208, 147)[0] == 147
    sm = GraphOp("sm", "softmax", (-1,), (6, 8), (0,), 7)
    assert tile_op(sm, [(6, 8)], 94208, 147)[:2] == (
        6,
        "6 tiles over 6 units (spread; the fewest that fit: 1 row tiles of <= 6 rows)",
    )
    cfg = graph_mapper(*cnn())
    assert all(1 <= op.tiles <= 147 for op in cfg.ops if op.op != "reshape")


_MALFORMED = st.sampled_from(
    [
        ("gemm", {}, (4,)),
        ("gemm", {"weight": np.ones((3, 2))}, (2,)),
        ("gemm", {"weight": np.ones((4, 2)), "bias": np.ones(3)}, (2,)),
        ("gemm", {"weight": np.ones((4, 2))}, (5,)),
        ("gemm", {"weight": "w"}, (2,)),
        ("conv", {"weight": np.ones((2, 1, 3))}, (2, 4)),
        ("conv", {"weight": None}, (2, 4)),
        ("maxpool", {"kernel": [2, 2], "strides": [1], "pads": [0, 0]}, (1, 3)),
        ("layernorm", {"weight": np.ones(3)}, (4,)),
        ("transpose", {"perm": [0, 0]}, (4,)),
        ("softmax", {}, (5,)),
        ("reshape", {}, (3,)),
    ]
)


@SOME
@given(_MALFORMED)
def test_malformed_layers_are_named_never_a_raw_error(layer):
    op, params, out = layer
    model = FloatModel((FloatLayer("bad", op, (-1,), params, out),), "x", (1, 4) if op in ("conv", "maxpool") else (4,))
    shape = (2, 1, 4) if op in ("conv", "maxpool") else (2, 4)
    err = assert_pond_error(graph_mapper, model, np.ones(shape), error=(ConstraintError, ONNXError))
    assert "bad" in str(err)
    two = FloatModel((FloatLayer("mm", "matmul", (-1, -1), {}, (4, 4)),), "x", (4, 3))
    assert_pond_error(graph_mapper, two, np.ones((2, 4, 3)), error=ConstraintError, match="mm")
