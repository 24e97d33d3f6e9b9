"""The graph path on real models: a float ONNX CNN (accuracy next to ONNX Runtime), an ORT-quantized (QDQ) CNN
(integers next to ORT's), and ``pond map model.onnx --device spinnaker2 --chips N`` then ``pond simulate``."""

from __future__ import annotations

import numpy as np
import pytest

from pondlib.cli import main
from pondlib.devices.registry import get
from pondlib.devices.spinnaker2.dnn_graph import GraphConfig, GraphSim
from pondlib.devices.spinnaker2.graph_image import run_graph_image
from pondlib.devices.spinnaker2.graph_qdq import qdq_to_graph
from pondlib.errors import ONNXError
from pondlib.interop.onnx import load_onnx, load_qdq
from tests.strategies import assert_pond_error


@pytest.fixture(scope="module")
def cnn_files(tmp_path_factory):
    """The digits CNN of tests/interop (conv-relu-flatten-gemm) as float ONNX and ORT QDQ (ORT's scales and
    power-of-two scales), with the held-out digits."""
    from tests.interop.qdq_models import cnn_onnx, digits, quantize

    xtr, ytr, xte, yte = digits()
    d = tmp_path_factory.mktemp("s2cnn")
    cal = xtr[:600].reshape(-1, 1, 8, 8)
    fp, qp = quantize(cnn_onnx(xtr, ytr), cal, d, "cnn")
    _, qp2 = quantize(cnn_onnx(xtr, ytr), cal, d, "cnn2", pow2=True)
    return {"float": fp, "qdq": qp, "pow2": qp2, "x": xte.reshape(-1, 1, 8, 8).astype(np.float32), "y": yte, "cal": cal}


def test_float_onnx_cnn_keeps_onnx_runtimes_accuracy(cnn_files):
    from tests.interop.qdq_models import ort_run

    x, y = cnn_files["x"], cnn_files["y"]
    mapped = get("spinnaker2").map_onnx(load_onnx(cnn_files["float"]), cnn_files["cal"])
    cfg = mapped.config
    assert isinstance(cfg, GraphConfig) and [op.op for op in cfg.ops] == ["conv", "reshape", "gemm"]
    ours = GraphSim(cfg).evolve(cfg.quantize_input(x))[0]
    acc_ort = np.mean(ort_run(cnn_files["float"], x).argmax(1) == y)
    acc = np.mean(ours.argmax(1) == y)
    assert acc_ort > 0.9 and abs(acc - acc_ort) <= 0.02, (acc, acc_ort)
    assert np.array_equal(run_graph_image(cfg.to_dram_image(), cfg.quantize_input(x[:8]))[0], ours[:8])


@pytest.mark.parametrize("kind", ["pow2", "qdq"])
def test_ort_quantized_cnn_agrees_with_onnx_runtime(cnn_files, kind):
    """Power-of-two scales: every shift exact, integers within 2 LSB of ORT's (ties: ORT rounds half to even,
    the MLA half up, and a tie in the conv moves the gemm), the same predictions. ORT's own scales: the shift
    approximates M (reported), predictions still agree on >= 99 % of the digits."""
    from tests.interop.qdq_models import ort_run

    qm = load_qdq(cnn_files[kind])
    cfg, rep = qdq_to_graph(qm)
    x = cnn_files["x"]
    ours = GraphSim(cfg).evolve(qm.quantize_input(x))[0]
    theirs = np.rint(ort_run(cnn_files[kind], x) / qm.out_scale).astype(np.int64)
    agree = np.mean(ours.argmax(1) == theirs.argmax(1))
    if kind == "pow2":
        assert max(r["rel_error"] for r in rep) < 1e-6
        assert np.abs(ours - theirs).max() <= 2 and np.mean(ours == theirs) > 0.85 and agree == 1.0
    else:
        assert max(r["rel_error"] for r in rep) > 0.01 and agree >= 0.99


def test_qdq_layers_the_graph_path_cannot_take_are_refused(cnn_files):
    from dataclasses import replace

    qm = load_qdq(cnn_files["pow2"])
    bad = replace(qm, layers=(replace(qm.layers[0], in_zp=3), *qm.layers[1:]))
    assert_pond_error(qdq_to_graph, bad, error=ONNXError, match="zero point")
    assert_pond_error(qdq_to_graph, "model", error=ONNXError)


def test_pond_map_chips_then_pond_simulate_equals_the_simulator(cnn_files, tmp_path, capsys):
    img = tmp_path / "cnn.s2img"
    np.save(tmp_path / "cal.npy", cnn_files["cal"][:64])
    np.save(tmp_path / "x.npy", cnn_files["x"][:6].reshape(6, -1))
    args = ["map", cnn_files["float"], "--device", "spinnaker2", "--calibration", str(tmp_path / "cal.npy")]
    assert main([*args, "--chips", "2", "--out", str(img)]) == 0
    out = capsys.readouterr().out
    assert "chip 0 -> chip 1" in out and "48 chips" in out and "modelled latency" in out
    rec = tmp_path / "rec.npz"
    assert main(["simulate", str(img), "--input", str(tmp_path / "x.npy"), "--quantize", "--record", str(rec)]) == 0
    cfg = GraphConfig.from_dram_image(img.read_bytes())
    want = GraphSim(cfg).evolve(cfg.quantize_input(cnn_files["x"][:6]))[0]
    assert np.array_equal(np.load(rec)["output"], want)
    assert main([*args[:3], "siracusa", "--chips", "2"]) != 0  # the option belongs to spinnaker2 only
    assert "--chips applies to --device spinnaker2" in "".join(capsys.readouterr())
    assert main([*args, "--chips", "99"]) != 0
    assert "at most the 48 chip(s)" in "".join(capsys.readouterr())


def test_pond_map_of_a_qdq_cnn_runs_and_refuses_several_chips(cnn_files, tmp_path, capsys):
    img = tmp_path / "q.s2img"
    assert main(["map", cnn_files["pow2"], "--device", "spinnaker2", "--out", str(img)]) == 0
    assert "scale-approximation error" in capsys.readouterr().out
    cfg = GraphConfig.from_dram_image(img.read_bytes())
    assert [op.op for op in cfg.ops] == ["conv", "reshape", "gemm"] and cfg.report["input_scale"] > 0
    assert main(["map", cnn_files["pow2"], "--device", "spinnaker2", "--chips", "2"]) != 0
    assert "map the float ONNX model" in "".join(capsys.readouterr())
