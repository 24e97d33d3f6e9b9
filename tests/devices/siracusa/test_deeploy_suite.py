"""Deeploy's own test cases (copied into tests/data/deeploy, see its README) on Siracusa's graph path.

Each case is classified equal / differs / refused by :func:`pondlib.interop.deeploy.run_case`; every
copied case must be ``equal`` (integer cases bit-exact, FP32 cases within float32 rounding). The whole suite
(all 172 runnable cases of a Deeploy checkout) runs with ``benchmarks/deeploy_suite.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from pondlib.devices.siracusa.graphsim import integer_inputs
from pondlib.interop.deeploy import compare, load_case, run_case

DATA = Path(__file__).resolve().parents[2] / "data" / "deeploy"
CASES = sorted(p.parent for p in DATA.rglob("network.onnx"))
IDS = [str(p.relative_to(DATA)) for p in CASES]


def test_the_copied_cases_are_found():
    assert len(CASES) >= 20, f"only {len(CASES)} Deeploy cases under {DATA}"


@pytest.mark.parametrize("folder", CASES, ids=IDS)
def test_every_copied_case_equals_its_golden_outputs(folder):
    res = run_case(folder, "siracusa", str(folder.relative_to(DATA)))
    assert res.status == "equal", f"{res.name}: {res.status}: {res.detail}"
    assert res.n_elements > 0 and res.n_wrong == 0


def _case(tmp_path: Path, node, inputs: dict, outputs: dict, inits=()) -> Path:
    g = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in outputs.items()],
        list(inits),
    )
    onnx_model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    (tmp_path / "network.onnx").write_bytes(onnx_model.SerializeToString())
    np.savez(tmp_path / "inputs.npz", **{f"input_{i}": v for i, v in enumerate(inputs.values())})
    np.savez(tmp_path / "outputs.npz", **{f"output_{i}": v for i, v in enumerate(outputs.values())})
    return tmp_path


def test_a_case_with_a_wrong_golden_differs(tmp_path):
    x = np.array([[1, 2, 3]], np.int64)
    folder = _case(tmp_path, helper.make_node("Relu", ["x"], ["y"]), {"x": x}, {"y": np.array([[1, 2, 4]])})
    res = run_case(folder, "siracusa")
    assert res.status == "differs" and res.n_wrong == 1 and "largest error 1" in res.detail


def test_an_unknown_custom_op_is_refused_by_name(tmp_path):
    x = np.zeros((1, 3), np.int64)
    folder = _case(tmp_path, helper.make_node("iMystery", ["x"], ["y"], domain="acme"), {"x": x}, {"y": x})
    res = run_case(folder, "siracusa")
    assert res.status == "refused" and "iMystery" in res.detail and "acme" in res.detail


def test_integer_mode_follows_the_inputs_and_the_dialect(tmp_path):
    rq = helper.make_node("RequantShift", ["x", "m", "a"], ["y"], div=2, n_levels_out=256, signed=1)
    inits = [numpy_helper.from_array(np.float32(1), "m"), numpy_helper.from_array(np.float32(0), "a")]
    x = np.array([[3.0, -3.0]], np.float32)
    folder = _case(tmp_path, rq, {"x": x}, {"y": np.array([[2.0, -1.0]], np.float32)}, inits)
    graph, ins, outs = load_case(folder)
    assert integer_inputs(graph, ins)  # whole-number floats in a dialect graph
    assert not integer_inputs(graph, [np.array([[0.5, 1.0]], np.float32)])
    res = run_case(folder, "siracusa")
    assert res.status == "equal" and res.integer


def test_float_comparison_tolerates_rounding_but_not_errors():
    want = [np.array([1.0, 100.0], np.float32)]
    assert compare([want[0] * (1 + 1e-6)], want, integer=False)[0]
    assert not compare([want[0] + np.float32([0, 1])], want, integer=False)[0]
    assert not compare([np.array([1.0])], want, integer=False)[0]


@settings(max_examples=25, deadline=None)
@given(st.binary(max_size=64))
def test_a_corrupted_network_is_refused_not_raised(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("bad")
    (folder / "network.onnx").write_bytes(data)
    np.savez(folder / "inputs.npz", input_0=np.zeros(2))
    np.savez(folder / "outputs.npz", output_0=np.zeros(2))
    res = run_case(folder, "siracusa")
    assert res.status == "refused" and res.detail


def test_a_missing_case_folder_is_refused(tmp_path):
    res = run_case(tmp_path / "nowhere", "siracusa")
    assert res.status == "refused" and "network" in res.detail
