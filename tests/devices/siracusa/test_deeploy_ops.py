"""Deeploy's integer dialect on Siracusa's graph path: hand-derived values per op, golden cases, bad inputs.

Hand-derived values follow the equations of :mod:`pondlib.devices.siracusa.kernels.deeploy_ops` step by step
(the comments show the arithmetic). The golden checks run the small Deeploy kernel cases copied into
``tests/data/deeploy`` (see its README); the model cases (microLlama, ICCT) run with
``benchmarks/deeploy_suite.py`` on a Deeploy checkout.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.devices.siracusa.graphsim import GraphSim
from pondlib.devices.siracusa.kernels import KernelContext, lookup
from pondlib.devices.siracusa.kernels.deeploy_ops import DIALECT_OPS, isqrt, tdiv
from pondlib.errors import GraphError
from pondlib.interop.deeploy import load_case, run_case

DATA = Path(__file__).resolve().parents[2] / "data" / "deeploy"
CTX = KernelContext(True, label="node 't' (test)")


def run(op: str, ins: list, attrs: dict) -> list:
    """The op's integer kernel on int64 inputs, as nested lists."""
    arrs = [None if a is None else np.asarray(a, dtype=np.int64) for a in ins]
    return np.asarray(lookup(op, "", "test")(arrs, attrs, CTX)).tolist()


# ------------------------------------------------------------------------------------ helpers
def test_tdiv_truncates_toward_zero_and_isqrt_floors():
    assert tdiv(np.array([-7, 7, -1]), np.array([2, -2, 3])).tolist() == [-3, -3, 0]
    v = np.arange(0, 5000)
    r = isqrt(v)
    assert np.all(r * r <= v) and np.all((r + 1) * (r + 1) > v)


# --------------------------------------------------------------------------- hand-derived values
def test_requant_shift_rounds_half_up_and_clips():
    # (10*3 + 1 + 2) >> 2 = 8; (-30 + 1 + 2) >> 2 = -27 >> 2 = -7; 100*3 >> 2 = 75 -> clipped to 63 (n = 128)
    got = run("RequantShift", [[10, -10, 100], 3, 1], {"div": 4, "n_levels_out": 128, "signed": 1})
    assert got == [8, -7, 63]
    # unsigned: [0, n - 1]; n_levels is accepted as the name of n_levels_out
    assert run("RequantShift", [[-10, 10], 1, 0], {"div": 1, "n_levels": 16, "signed": 0}) == [0, 10]


def test_requant_shift_applies_c11_shaped_params_per_channel_on_ncl_tensors():
    x = np.arange(6).reshape(1, 2, 3)
    got = run("RequantShift", [x, np.array([1, 10]).reshape(2, 1, 1), np.zeros((2, 1, 1))], {"div": 1})
    assert got == [[[0, 1, 2], [30, 40, 50]]]


def test_isoftmax_follows_the_ibert_polynomial():
    # t = [0, -4], z = [0, 1], p = [0, 0], e = [(0+2)^2+1, 5 >> 1] = [5, 2]; y = e*255 // 7 = [182, 72]
    attrs = {"coeffA": 1, "coeffB": 2, "coeffC": 1, "log2": 4, "n_levels": 256}
    assert run("iSoftmax", [[[0, -4]]], attrs) == [[182, 72]]
    # the row's offset does not matter (x - max)
    assert run("iSoftmax", [[[100, 96]]], attrs) == [[182, 72]]


def test_itamax_uses_power_of_two_exponentials():
    # k = [(0+16)>>5, (32+16)>>5] = [0, 1]; S = 256 + 128; inv = 255*256 // 384 = 170; y = [170, 85]
    assert run("ITAMax", [[[0, -32]]], {"n_levels": 256}) == [[170, 85]]


def test_itapartialmax_streams_groups():
    # g0: m=0, S = 256 + 128 = 384; g1: max 10, shift (10+16)>>5 = 0, S = 384 + 512 = 896
    # inv = 127*256 // 896 = 36; k = [0, (42+16)>>5, 0, 0] = [0, 1, 0, 0]
    assert run("ITAPartialMax", [[[0, -32, 10, 10]]], {"group_width": 2, "n_levels": 256}) == [[36, 18, 36, 36]]


def test_irmsnorm_divides_by_the_integer_rms():
    # sum x^2 = 25, 25 // 2 + 1 = 13, isqrt = 3; tdiv([3, -4], 3) = [1, -1]; >> 0, >> 1
    assert run("iRMSNorm", [[[3, -4]], [1, 1]], {"D": 1, "n_levels": 256}) == [[1, -1]]
    assert run("iRMSNorm", [[[3, -4]], [1, 1]], {"D": 2, "n_levels": 256}) == [[0, -1]]


def test_ilayernorm_centers_with_a_truncated_mean():
    # mu = 12 // 4 = 3, cen = [-2, -1, 0, 3], 14 // 4 + 1 = 4, sigma = 2; cen*2 / 2 + b = [-2, -1, 0, 4]
    got = run("iLayerNorm", [[[1, 2, 3, 6]], [2, 2, 2, 2], [0, 0, 0, 1]], {"D": 1, "n_levels": 256})
    assert got == [[-2, -1, 0, 4]]
    # mu = tdiv(-3, 2) = -1 (not floor -2): cen = [0, -1], sigma = isqrt(1 // 2 + 1) = 1
    assert run("iLayerNorm", [[[-1, -2]], [1, 1], [0, 0]], {"D": 1, "n_levels": 256}) == [[0, -1]]


def test_inonorm_is_an_affine_shift():
    # ((3*2 + 1) * 3) >> 2 = 21 >> 2 = 5; ((-6 + 1) * 3) >> 2 = -15 >> 2 = -4
    got = run("iNoNorm", [[3, -3], [2, 2], [1, 1]], {"D": 4, "mul": 3, "n_levels": 256})
    assert got == [5, -4]


def test_igelu_polynomial():
    # b = -2, one = 4: x=1: L = 4 - 1 = 3, y = (7 >> 1) = 3; x=-1: L = -3, y = -(1 >> 1) = 0; x=5: L = 4, y = 20
    assert run("iGELU", [[1, -1, 5, -5, 0]], {"b": -2, "one": 4}) == [3, 0, 20, 0, 0]


def test_ihardswish_and_its_requantized_form():
    attrs = {"one_over_six": 2, "three": 3, "six": 6}
    assert run("iHardswish", [[-5, 0, 2, 9]], attrs) == [0, 0, 20, 108]
    # 108*1 + 0 + 2 >> 2 = 27; 20 >> 2 (+ 2) = 5
    got = run("RequantizediHardswish", [[-5, 2, 9]], {**attrs, "mul": 1, "add": 0, "shift": 2})
    assert got == [0, 5, 27]


def test_requantized_gelu_takes_mul_add_shift_inputs():
    # iGELU([5]) = 20 with b = -2, one = 4; (20*3 + 1 + 1) >> 1 = 31
    assert run("RequantizedGELU", [[5], [3], [1], [1]], {"b": -2, "one": 4}) == [31]


def test_true_integer_div_scales_by_the_floored_ratio():
    # K = 16384*200000 // (2*200000 + 1) = 8191
    got = run("TrueIntegerDiv", [[2, -3]], {"Delta": 16384, "eps": 1, "eta": 200000, "y": 2})
    assert got == [16382, -24573]


def test_integer_div_rounds_half_away_from_zero():
    attrs = {"Delta": 1, "eps": 0, "eta": 1}
    assert run("IntegerDiv", [[5, -5, 4], [2]], attrs) == [3, -3, 2]
    # u = 4*1*3 = 12, v = 2: (12 + 1) / 2 = 6
    assert run("IntegerDiv", [[3, -3], [2]], {"Delta": 4, "eps": 0, "eta": 1}) == [6, -6]


def test_integer_mean_rounds_like_deeploy():
    attrs = {"axes": [1], "keepdims": 0}
    assert run("IntegerMean", [[[1, 2, 3, 4]]], attrs) == [3]  # (10 + 2) >> 2
    assert run("IntegerMean", [[[-1, -2, -3, -4]]], attrs) == [-2]  # (-10 + 2) >> 2
    assert run("IntegerMean", [[[1, 2, 4]]], attrs) == [2]  # tdiv(7 + 1, 3)
    assert run("IntegerMean", [[[-1, -2, -4]]], attrs) == [-2]  # tdiv(-7 - 1, 3)
    assert run("IntegerMean", [[[1, 3]]], {"axes": 1, "keepdims": 1}) == [[2]]


def test_every_dialect_op_has_a_kernel():
    for op in DIALECT_OPS:
        assert callable(lookup(op, "", "test"))
    for domain in ("PACTOps", "ai.onnx.contrib"):
        assert lookup("RequantShift", domain, "test") is lookup("RequantShift", "", "test")


# ------------------------------------------------------------------------------------ golden cases
GOLDEN = [
    "Kernels/Integer/Softmax/Regular",
    "Kernels/Integer/RMSNorm",
    "Kernels/Integer/Hardswish/Regular",
    "Kernels/Integer/Hardswish/Regular_RQ",
    "Kernels/Integer/TrueIntegerDiv",
    "Kernels/Integer/Attention",
]


@pytest.mark.parametrize("case", GOLDEN)
def test_deeploy_kernel_case_is_bit_exact(case):
    folder = DATA / case
    res = run_case(folder, "siracusa", case)
    assert res.integer and res.status == "equal", f"{case}: {res.status}: {res.detail}"
    assert res.n_elements > 0 and res.n_wrong == 0


def test_softmax_golden_through_the_kernel_directly():
    graph, ins, outs = load_case(DATA / "Kernels/Integer/Softmax/Regular")
    node = graph.nodes[0]
    y = lookup(node.op, node.domain, "t")([ins[0].astype(np.int64)], node.attrs, CTX)
    assert np.array_equal(y, outs[0].astype(np.int64))
    out = GraphSim(graph).run(ins, integer=True).output_list()[0]
    assert np.array_equal(out.reshape(outs[0].shape), outs[0])


# ------------------------------------------------------------------------------------- bad inputs
REQUIRED = {
    "RequantShift": ([[1], 1, 0], {"div": 2}),
    "iSoftmax": ([[[0, -1]]], {"coeffA": 1, "coeffB": 2, "coeffC": 1, "log2": 4}),
    "ITAMax": ([[[0, -1]]], {"n_levels": 256}),
    "ITAPartialMax": ([[[0, -1]]], {"group_width": 1, "n_levels": 256}),
    "iRMSNorm": ([[[1, 2]], [1, 1]], {"D": 2, "n_levels": 256}),
    "iLayerNorm": ([[[1, 2]], [1, 1], [0, 0]], {"D": 2, "n_levels": 256}),
    "iNoNorm": ([[1], [1], [0]], {"D": 2, "mul": 1, "n_levels": 256}),
    "iGELU": ([[1]], {"b": -2, "one": 4}),
    "iHardswish": ([[1]], {"one_over_six": 2, "three": 3, "six": 6}),
    "TrueIntegerDiv": ([[1]], {"Delta": 4, "eps": 1, "eta": 2, "y": 2}),
    "IntegerDiv": ([[1], [2]], {"Delta": 4, "eps": 1, "eta": 2}),
    "IntegerMean": ([[[1, 2]]], {"axes": [1]}),
}


@given(st.sampled_from(sorted(REQUIRED)), st.data())
@settings(max_examples=60, deadline=None)
def test_a_missing_attribute_is_named(op, data):
    ins, attrs = REQUIRED[op]
    assert isinstance(run(op, ins, attrs), list)  # complete attributes run
    key = data.draw(st.sampled_from(sorted(attrs)))
    with pytest.raises(GraphError, match=key):
        run(op, ins, {k: v for k, v in attrs.items() if k != key})


@given(st.integers(3, 2**40).filter(lambda d: d & (d - 1) != 0))
def test_requant_shift_refuses_a_non_power_of_two_div(div):
    with pytest.raises(GraphError, match="power of two"):
        run("RequantShift", [[1], 1, 0], {"div": float(div)})


@given(st.sampled_from(["iRMSNorm", "ITAMax", "RequantShift"]), st.integers(-(2**40), 2**40))
def test_n_levels_out_of_range_is_refused(op, n):
    ins, attrs = REQUIRED[op]
    if 2 <= n <= 2**32:
        n = n + 2**32  # move it out of range
    key = "n_levels_out" if op == "RequantShift" else "n_levels"
    with pytest.raises(GraphError, match="n_levels"):
        run(op, ins, {**attrs, key: n})


@given(st.sampled_from(["iHardswish", "iGELU", "ITAMax", "iRMSNorm"]), st.integers(128, 10**6), st.booleans())
def test_int8_ops_refuse_inputs_outside_int8(op, value, negative):
    ins, attrs = REQUIRED[op]
    bad = -value - 1 if negative else value
    x = np.array(ins[0])
    x.reshape(-1)[0] = bad
    with pytest.raises(GraphError, match=str(bad)):
        run(op, [x] + ins[1:], attrs)


@given(st.floats(0.1, 100).filter(lambda v: v != int(v)))
def test_fractional_attributes_are_refused(value):
    with pytest.raises(GraphError, match="whole number"):
        run("iHardswish", [[1]], {"one_over_six": value, "three": 3, "six": 6})


def test_bad_structural_values_are_refused():
    with pytest.raises(GraphError, match="group_width"):
        run("ITAPartialMax", [[[0, -1]]], {"group_width": 3, "n_levels": 256})
    with pytest.raises(GraphError, match="weight"):
        run("iRMSNorm", [[[1, 2, 3]], [1, 1]], {"D": 2, "n_levels": 256})
    with pytest.raises(GraphError, match="iNoNorm result"):
        run("iNoNorm", [[100], [100], [0]], {"D": 1, "mul": 1, "n_levels": 256})
    with pytest.raises(GraphError, match="inputs"):
        run("iRMSNorm", [[[1, 2]]], {"D": 2, "n_levels": 256})
    with pytest.raises(GraphError, match="zero denominator"):
        run("IntegerDiv", [[1], [0]], {"Delta": 1, "eps": 0, "eta": 1})
    with pytest.raises(GraphError, match="iSoftmax sums"):
        run("iSoftmax", [[[0] * 8]], {"coeffA": 2**20, "coeffB": 100, "coeffC": 1, "log2": 4, "n_levels": 256})
