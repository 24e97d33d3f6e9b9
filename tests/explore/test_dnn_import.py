"""A float ONNX model as an explore workload (workload_from_dnn) and through pond explore."""

from __future__ import annotations

import argparse
import io
import json

import numpy as np
import onnx
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from rich.console import Console

from pondlib.errors import ConfigError, GraphError
from pondlib.explore import Schedule, evaluate, meta_prototype, workload_from_dnn
from pondlib.interop.onnx import load_onnx
from tests.strategies import assert_pond_error, bad_counts, bad_types


def _cnn() -> onnx.ModelProto:
    """x (N, 2, 10, 10) -> Conv(4, 3x3) -> Relu -> MaxPool(2) -> Flatten -> Gemm(64 -> 10)."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((4, 2, 3, 3)).astype(np.float32), "W1")
    w2 = numpy_helper.from_array(rng.standard_normal((64, 10)).astype(np.float32), "W2")
    nodes = [
        helper.make_node("Conv", ["x", "W1"], ["c"], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "W2"], ["y"], name="fc"),
    ]
    g = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 10, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [w1, w2],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_a_small_cnn_by_hand():
    w = workload_from_dnn(load_onnx(_cnn()), 4)
    got = [(x.kind, x.k, x.c, x.oy, x.ox, x.fy, x.sy, x.block, x.stateful, x.input_bits) for x in w.layers]
    assert got == [
        ("conv", 4, 2, 8, 8, 3, 1, 0, False, 8),
        ("pool", 4, 4, 4, 4, 2, 2, 0, False, 8),
        ("linear", 10, 64, 1, 1, 1, 1, 1, False, 8),
    ]
    assert w.total_weight_bits == (4 * 2 * 9 + 64 * 10) * 8 and w.total_state_bits == 0
    assert w.total_ops == 4 * (4 * 2 * 9 * 64 + 640)  # MACs of 4 inputs in a row
    r = evaluate(w, meta_prototype("1MB"), Schedule.uniform(2, 4))
    assert r.traffic_by_class == {
        "weights": w.total_weight_bits,
        "states": 0.0,
        "spikes": 0.0,
        "input": 4 * 2 * 10 * 10 * 8,
    }


def test_pond_explore_on_an_onnx_file(tmp_path):
    from pondlib.cli import explore as cmd

    path = tmp_path / "cnn.onnx"
    onnx.save(_cnn(), path)
    parser = argparse.ArgumentParser(prog="pond")
    cmd.add_parser(parser.add_subparsers(dest="command"))
    buf = io.StringIO()
    args = parser.parse_args(["explore", str(path), "--device", "siracusa", "--steps", "4", "--json"])
    assert cmd.run(Console(file=buf, width=80), args) == 0
    data = json.loads(buf.getvalue())
    assert data["workload"] == "cnn.onnx" and len(data["schedules"]) == 11  # 9 hybrids + 2T-LBL, 2T-LF
    assert all(s["states_mib"] == 0 for s in data["schedules"])


@settings(max_examples=25, deadline=None)
@given(value=st.one_of(bad_types(), bad_counts()))
def test_bad_arguments(value):
    model = load_onnx(_cnn())
    assert_pond_error(workload_from_dnn, value, error=GraphError)
    for key in ("weight_bits", "activation_bits", "time_steps"):
        assert_pond_error(workload_from_dnn, model, **{key: value}, match=key, error=ConfigError)
    if value is not None:  # None: the default blocks
        bad_blocks = value if not isinstance(value, list) else []
        assert_pond_error(workload_from_dnn, model, blocks=bad_blocks, match="blocks", error=ConfigError)
