"""The graph runner of Siracusa's DNN path: modes, recording, input checks, faults named by node."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.devices.siracusa.graphsim import GraphSim, integral
from pondlib.devices.siracusa.kernels import lookup, supported_ops
from pondlib.errors import GraphError, SimulationError
from pondlib.graph.opgraph import Node, OpGraph, TensorInfo

RQ = {"div": 8, "n_levels_out": 256, "signed": 1}


def _linear(k: int = 4, o: int = 3) -> OpGraph:
    w = np.arange(k * o, dtype=np.float32).reshape(k, o) - 5
    return OpGraph(
        (TensorInfo("x", (2, k), "int8"),),
        (TensorInfo("y", (2, o), "int8"),),
        (
            Node("mm", "MatMul", ("x", "w"), ("acc",)),
            Node("bias", "Add", ("acc", "b"), ("h",)),
            Node("rq", "RequantShift", ("h", "m", "z"), ("y",), RQ),
        ),
        {"w": w, "b": np.float32([1, -2, 3]), "m": np.float32(3), "z": np.float32(0)},
        name="linear",
    )


def test_integer_mode_is_exact_and_records_every_tensor():
    g = _linear()
    x = np.array([[1, -2, 3, -4], [127, -128, 0, 5]])
    run = GraphSim(g).run({"x": x})
    w = np.asarray(g.constants["w"], dtype=np.int64)
    acc = x @ w + np.array([1, -2, 3])
    want = np.clip((acc * 3 + 4) >> 3, -128, 127)
    assert run.integer and run.outputs["y"].dtype == np.int64
    assert np.array_equal(run.outputs["y"], want)
    assert set(run.tensors) == {"x", "acc", "h", "y"} and np.array_equal(run.tensors["h"], acc)


def test_float_mode_runs_in_float32():
    lin = _linear()
    g = OpGraph(lin.inputs, (TensorInfo("h"),), lin.nodes[:2], lin.constants)
    x = np.array([[0.5, -2, 3, -4], [1, 2, 3, 4]], np.float32)
    run = GraphSim(g).run([x], integer=False, record=False)
    assert not run.integer and run.tensors == {}
    assert run.outputs["h"].dtype == np.float32
    assert np.allclose(run.outputs["h"], x @ lin.constants["w"] + lin.constants["b"], rtol=1e-6)


def test_the_dialect_refuses_float_mode():
    with pytest.raises(GraphError, match="integer mode"):
        GraphSim(_linear()).run(np.full((2, 4), 0.5, np.float32), integer=False)


def test_integer_mode_refuses_fractional_inputs():
    with pytest.raises(SimulationError, match="whole numbers"):
        GraphSim(_linear()).run(np.full((2, 4), 0.5), integer=True)


@pytest.mark.parametrize(
    "inputs, what",
    [
        ({"z": np.zeros((2, 4))}, "inputs"),
        ([np.zeros((2, 4)), np.zeros((2, 4))], "inputs"),
        (np.zeros((3, 4), np.int64), "shape"),
        (np.full((2, 4), np.nan), "finite"),
        (np.array([["a"] * 4] * 2), "numeric"),
    ],
)
def test_bad_inputs_are_named(inputs, what):
    with pytest.raises(SimulationError, match=what):
        GraphSim(_linear()).run(inputs)


def test_an_unknown_custom_op_names_the_op_and_its_domain():
    g = OpGraph(
        (TensorInfo("x", (1,)),), (TensorInfo("y"),), (Node("n", "iFancy", ("x",), ("y",), domain="my.domain"),)
    )
    with pytest.raises(GraphError, match="unsupported op") as err:
        GraphSim(g)
    assert "iFancy" in str(err.value) and "my.domain" in str(err.value) and "'n'" in str(err.value)
    assert "iFancy" not in supported_ops()


def test_numpy_faults_inside_a_kernel_name_the_node_and_the_shapes():
    g = OpGraph(
        (TensorInfo("x", (2, 3), "int8"),),
        (TensorInfo("y"),),
        (Node("bad_mm", "MatMul", ("x", "w"), ("y",)),),
        {"w": np.ones((4, 2), np.float32)},
    )
    with pytest.raises(SimulationError, match="bad_mm") as err:
        GraphSim(g).run(np.zeros((2, 3), np.int64))
    assert "(2, 3)" in str(err.value) and "(4, 2)" in str(err.value)


def test_requant_shift_checks_its_attributes():
    g = _linear()
    bad = OpGraph(g.inputs, g.outputs, g.nodes[:2] + (Node("rq", "RequantShift", ("h", "m", "z"), ("y",), {"div": 6}),),
                  g.constants)  # fmt: skip
    with pytest.raises(GraphError, match="power of two"):
        GraphSim(bad).run(np.zeros((2, 4), np.int64))


def test_the_runner_never_mutates_the_graph_or_the_inputs():
    g = _linear()
    before = {k: v.copy() for k, v in g.constants.items()}
    x = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    x0 = x.copy()
    GraphSim(g).run(x)
    assert np.array_equal(x, x0) and all(np.array_equal(before[k], g.constants[k]) for k in before)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-128, 127), min_size=8, max_size=8))
def test_integer_runs_match_a_direct_int64_evaluation(values):
    g = _linear()
    x = np.array(values).reshape(2, 4)
    w = np.asarray(g.constants["w"], dtype=np.int64)
    want = np.clip((((x @ w) + np.array([1, -2, 3])) * 3 + 4) >> 3, -128, 127)
    assert np.array_equal(GraphSim(g).run(x).outputs["y"], want)


def test_integral():
    assert integral(np.array([1.0, -3.0])) and not integral(np.array([0.5])) and not integral(np.array([np.inf]))
    assert integral(np.array([1, 2], np.int8)) and not integral(np.array(["a"]))


def test_lookup_maps_deeploy_domains_to_the_default_one():
    assert lookup("RequantShift", "PACTOps", "n") is lookup("RequantShift", "ai.onnx.contrib", "n")


def test_integer_inputs_outside_their_declared_type_are_refused():
    with pytest.raises(SimulationError, match="int8") as err:
        GraphSim(_linear()).run(np.array([[300, 0, 0, 0], [0, 0, 0, 0]]))
    assert "300" in str(err.value)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 5), min_size=0, max_size=3),
    st.sampled_from(["int64", "int8", "float32", "float64", "bool", "complex64"]),
    st.sampled_from([None, True, False]),
    st.floats(allow_nan=True, allow_infinity=True),
)
def test_arbitrary_inputs_run_or_fail_with_a_pondlib_error(shape, dtype, integer, fill):
    g = _linear()
    x = np.full(shape, fill if dtype.startswith(("float", "complex")) else 1).astype(dtype)
    try:
        run = GraphSim(g).run(x, integer=integer)
    except (SimulationError, GraphError):
        return
    assert tuple(shape) == (2, 4) and run.outputs["y"].shape == (2, 3)
