"""Operator graphs: structural validation (names, references, cycles, sizes) and the ONNX import into them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from pondlib.errors import GraphError, ONNXError
from pondlib.graph.opgraph import MAX_ELEMENTS, Node, OpGraph, TensorInfo, check_opgraph
from pondlib.interop.onnx.opgraph import load_opgraph


def _graph(nodes, inputs=(("x", (1, 4)),), outputs=("y",), constants=None) -> OpGraph:
    return OpGraph(
        tuple(TensorInfo(n, s, "int8") for n, s in inputs),
        tuple(TensorInfo(n) for n in outputs),
        tuple(nodes),
        constants or {},
        name="g",
    )


def test_order_is_topological_and_stable():
    nodes = [
        Node("c", "Add", ("a_out", "b_out"), ("y",)),
        Node("a", "Relu", ("x",), ("a_out",)),
        Node("b", "Relu", ("x",), ("b_out",)),
    ]
    order = [n.name for n in check_opgraph(_graph(nodes))]
    assert order == ["a", "b", "c"]


def test_a_node_reading_one_tensor_twice_is_ordered_once():
    nodes = [Node("sq", "Mul", ("h", "h"), ("y",)), Node("r", "Relu", ("x",), ("h",))]
    assert [n.name for n in check_opgraph(_graph(nodes))] == ["r", "sq"]


def test_cycles_are_refused_naming_a_node_on_the_cycle():
    nodes = [Node("a", "Add", ("x", "b_out"), ("a_out",)), Node("b", "Relu", ("a_out",), ("b_out",))]
    g = _graph(nodes, outputs=("a_out",))
    with pytest.raises(GraphError, match="cycle") as err:
        check_opgraph(g)
    assert "'a'" in str(err.value) or "'b'" in str(err.value)


@pytest.mark.parametrize(
    "nodes, outputs, what",
    [
        ([Node("a", "Relu", ("missing",), ("y",))], ("y",), "undefined tensor"),
        ([Node("a", "Relu", ("x",), ("y",)), Node("b", "Relu", ("x",), ("y",))], ("y",), "written twice"),
        ([Node("a", "Relu", ("x",), ("x",))], ("x",), "written twice"),
        ([Node("a", "Relu", ("x",), ("h",))], ("y",), "graph output"),
        ([], ("x",), "nodes"),
    ],
)
def test_structural_faults_are_named(nodes, outputs, what):
    with pytest.raises(GraphError, match=what):
        check_opgraph(_graph(nodes, outputs=outputs))


def test_huge_declared_shapes_are_refused_before_allocation():
    g = _graph([Node("a", "Relu", ("x",), ("y",))], inputs=(("x", (2**20, 2**20)),))
    with pytest.raises(GraphError, match="tensor size") as err:
        check_opgraph(g)
    assert str(MAX_ELEMENTS) in str(err.value)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-5, 2**40), min_size=1, max_size=4))
def test_any_declared_shape_is_accepted_or_refused_cleanly(dims):
    g = _graph([Node("a", "Relu", ("x",), ("y",))], inputs=(("x", tuple(dims)),))
    size = int(np.prod([max(d, 0) for d in dims], dtype=object))
    if min(dims) < 0 or size > MAX_ELEMENTS:
        with pytest.raises(GraphError):
            check_opgraph(g)
    else:
        assert len(check_opgraph(g)) == 1


def test_constants_are_read_only_copies():
    w = np.ones(3)
    g = _graph([Node("a", "Add", ("x", "w"), ("y",))], constants={"w": w})
    w[0] = 5
    assert g.constants["w"][0] == 1 and not g.constants["w"].flags.writeable


# -- ONNX import ---------------------------------------------------------------------------------------------
def _model(nodes, inits=(), inputs=(("x", [1, 4]),), outputs=(("y", [1, 4]),), opset=13):
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        list(inits),
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def test_custom_ops_in_the_default_domain_import_with_a_note():
    rq = helper.make_node("RequantShift", ["x", "m", "a"], ["y"], div=8, n_levels_out=256, signed=1)
    m = _model([rq], [numpy_helper.from_array(np.float32(2), "m"), numpy_helper.from_array(np.float32(0), "a")])
    g = load_opgraph(m)
    assert g.nodes[0].op == "RequantShift" and g.nodes[0].attrs["div"] == 8
    assert any("custom ops" in n and "RequantShift" in n for n in g.notes)
    assert set(g.constants) == {"m", "a"} and g.input_names == ("x",)


def test_constant_nodes_become_constants_and_initializer_inputs_are_not_inputs():
    c = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.ones(4, np.float32)))
    add = helper.make_node("Add", ["x", "c"], ["y"])
    w = numpy_helper.from_array(np.ones(4, np.float32), "w")
    m = _model([c, add], [w], inputs=(("x", [1, 4]), ("w", [4])))
    g = load_opgraph(m)
    assert [n.op for n in g.nodes] == ["Add"] and "c" in g.constants and g.input_names == ("x",)


def test_a_symbolic_batch_axis_is_taken_as_one_with_a_note():
    m = _model([helper.make_node("Relu", ["x"], ["y"])], inputs=(("x", ["N", 4]),), outputs=(("y", ["N", 4]),))
    g = load_opgraph(m)
    assert g.inputs[0].shape == (1, 4) and any("batch" in n for n in g.notes)
    g2 = load_opgraph(m, input_shapes={"x": (3, 4)})
    assert g2.inputs[0].shape == (3, 4)


def test_other_symbolic_axes_need_input_shapes():
    m = _model([helper.make_node("Relu", ["x"], ["y"])], inputs=(("x", [1, "T"]),))
    with pytest.raises(ONNXError, match="input_shapes"):
        load_opgraph(m)


def test_a_cyclic_onnx_graph_is_refused():
    a = helper.make_node("Add", ["x", "h2"], ["h1"])
    b = helper.make_node("RequantShift", ["h1", "x", "x"], ["h2"], div=1)
    c = helper.make_node("Relu", ["h2"], ["y"])
    with pytest.raises(ONNXError, match="cycle"):
        load_opgraph(_model([a, b, c]))


def test_an_initializer_with_a_huge_header_is_refused_before_allocation():
    t = numpy_helper.from_array(np.ones(2, np.float32), "w")
    del t.dims[:]
    t.dims.extend([2**20, 2**20])
    m = _model([helper.make_node("Add", ["x", "w"], ["y"])], [t])
    with pytest.raises(ONNXError, match=r"initializer 'w' size.*1099511627776 elements.*at most 268435456"):
        load_opgraph(m)


def test_external_data_and_subgraphs_are_refused():
    t = numpy_helper.from_array(np.ones(4, np.float32), "w")
    t.data_location = TensorProto.EXTERNAL
    m = _model([helper.make_node("Add", ["x", "w"], ["y"])], [t])
    with pytest.raises(ONNXError, match="external"):
        load_opgraph(m)
    body = helper.make_graph([], "b", [], [])
    node = helper.make_node("If", ["x"], ["y"], then_branch=body, else_branch=body)
    with pytest.raises(ONNXError, match="sub-graph"):
        load_opgraph(_model([node]))


@settings(max_examples=30, deadline=None)
@given(st.binary(max_size=200))
def test_garbage_bytes_are_refused_cleanly(data):
    with pytest.raises((ONNXError, GraphError)):
        load_opgraph(data)


def test_the_checkers_complaint_about_a_standard_model_is_a_note():
    unsorted = [helper.make_node("Relu", ["h"], ["y"]), helper.make_node("Relu", ["x"], ["h"])]
    g = load_opgraph(_model(unsorted))
    assert any(n.startswith("onnx.checker") and "topologically" in n for n in g.notes)
    assert [n.name for n in g.order()] == ["Relu_1", "Relu_0"]


@pytest.mark.parametrize("shapes", [[1, 2], {"x": "1x4"}, {"x": (1, -4)}, {"x": (1.5, 4)}])
def test_bad_input_shapes_arguments(shapes):
    m = _model([helper.make_node("Relu", ["x"], ["y"])])
    with pytest.raises(ONNXError, match="input_shapes"):
        load_opgraph(m, input_shapes=shapes)
