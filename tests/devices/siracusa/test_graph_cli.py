"""``pond map model.onnx --device siracusa`` on graphs that are not chains: a Deeploy case (custom integer
dialect, several inputs), an ORT-quantized Linear (MatMul + requantized bias Add) and an attention block."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pondlib.cli import main
from pondlib.devices import registry

DEEPLOY = Path(__file__).resolve().parents[2] / "data" / "deeploy"


def _out(capsys) -> str:
    err = capsys.readouterr()
    return " ".join((err.out + err.err).split())  # the console wraps long lines


def test_map_a_deeploy_case(capsys):
    path = DEEPLOY / "Kernels" / "Integer" / "Attention" / "network.onnx"
    assert main(["map", str(path), "--device", "siracusa"]) == 0
    out = _out(capsys)
    assert "ONNX graph" in out and "custom ops" in out and "fits siracusa" in out
    assert "iSoftmax" in out and "cycles per inference" in out and "L2" in out


def test_map_microllama_with_its_nineteen_inputs(capsys):
    path = DEEPLOY / "Models" / "microLlama" / "INT8" / "microLlama1" / "network.onnx"
    assert main(["map", str(path), "--device", "siracusa"]) == 0
    out = _out(capsys)
    assert "19 input(s)" in out and "iRMSNorm" in out and "fits siracusa" in out


@pytest.fixture(scope="module")
def ort_linear(tmp_path_factory):
    """A PyTorch-style Linear (MatMul + bias Add) quantized by ORT's quantize_static, QDQ format."""
    from onnx import TensorProto, helper, numpy_helper
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.normal(size=(16, 8)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.normal(size=(8,)).astype(np.float32), "b")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        [w, b],
    )
    d = tmp_path_factory.mktemp("ort")
    fp = d / "linear.onnx"
    (fp).write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": rng.normal(size=(1, 16)).astype(np.float32)} for _ in range(16)])

        def get_next(self):
            return next(self.it, None)

    qp = d / "linear_qdq.onnx"
    quantize_static(str(fp), str(qp), Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8,
                    weight_type=QuantType.QInt8)  # fmt: skip
    return qp


def test_map_an_ort_quantized_linear(capsys, ort_linear):
    assert main(["map", str(ort_linear), "--device", "siracusa"]) == 0
    out = _out(capsys)
    assert "not a chain" in out or "ONNX QDQ" in out
    assert "fits siracusa" in out


def test_the_graph_path_of_the_device_runs_the_mapped_graph(ort_linear):
    from pondlib.devices.siracusa.graphsim import GraphSim
    from pondlib.interop.onnx.opgraph import load_opgraph

    dev = registry.get("siracusa")
    mapped = dev.map_graph(load_opgraph(ort_linear))
    graph = mapped.config
    assert {n.op for n in graph.nodes} >= {"MatMul", "RequantShift"}
    assert not any(n.op in ("QuantizeLinear", "DequantizeLinear") for n in graph.nodes)
    x = np.zeros(graph.inputs[0].shape, np.int64)
    run = GraphSim(graph).run(x)
    assert run.integer and all(v.dtype.kind == "i" for v in run.outputs.values())
    assert mapped.spec.cycles > 0 and "QDQ" in " ".join(mapped.notes)


def test_map_out_refuses_graph_deployments_cleanly(capsys, tmp_path):
    path = DEEPLOY / "Kernels" / "Integer" / "Attention" / "network.onnx"
    assert main(["map", str(path), "--device", "siracusa", "--out", str(tmp_path / "a.npz")]) == 1
    err = capsys.readouterr()
    lines = [ln for ln in (err.out + err.err).splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "graph" in lines[0]


def test_graphs_need_a_device_with_a_graph_path(capsys):
    path = DEEPLOY / "Kernels" / "Integer" / "Attention" / "network.onnx"
    assert main(["map", str(path), "--device", "spinnaker2"]) == 1
    assert "error:" in _out(capsys)
