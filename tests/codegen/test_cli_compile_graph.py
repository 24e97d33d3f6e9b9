"""``pond compile model.onnx --numerics siracusa``: ONNX graphs as single-core C and as tiled multi-core C
(``--cores --l1 --l2``), checked on the host and on the emulated RV32 cluster against the simulator."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.cli import main
from tests.codegen.test_cli_compile import one_spike_pond  # noqa: F401, F811  (a shared fixture)

DEEPLOY = Path(__file__).resolve().parents[1] / "data" / "deeploy"
ATTENTION = DEEPLOY / "Kernels" / "Integer" / "Attention"
MOBILENET = DEEPLOY / "Models" / "miniMobileNet"


@pytest.fixture(autouse=True)
def _zig_cache(tmp_path_factory, monkeypatch):
    if not os.environ.get("ZIG_GLOBAL_CACHE_DIR"):
        monkeypatch.setenv("ZIG_GLOBAL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "zig-cache"))


def _text(capsys) -> str:
    err = capsys.readouterr()
    return " ".join((err.out + err.err).split())


def test_a_deeploy_graph_compiles_and_checks_on_the_host(tmp_path, capsys):
    args = ["compile", str(ATTENTION / "network.onnx"), "--numerics", "siracusa", "-o", str(tmp_path / "c")]
    assert main([*args, "--check", str(ATTENTION / "inputs.npz")]) == 0
    text = _text(capsys)
    assert "bit-exact" in text and "38 ops" in text


def test_tiled_multicore_c_on_the_host_threads(tmp_path, capsys):
    args = ["compile", str(ATTENTION / "network.onnx"), "--numerics", "siracusa", "-o", str(tmp_path / "c")]
    assert main([*args, "--cores", "4", "--l1", "32000", "--check", str(ATTENTION / "inputs.npz")]) == 0
    text = _text(capsys)
    assert "bit-exact" in text and "L1 arena" in text and "-pthread" in text


@pytest.mark.slow
def test_the_emulated_cluster_prints_per_core_counts_and_the_speed_up(tmp_path, capsys):
    args = ["compile", str(MOBILENET / "network.onnx"), "--numerics", "siracusa", "-o", str(tmp_path / "c")]
    args += ["--cores", "8", "--l1", "64000", "--target", "rv32", "--check", str(MOBILENET / "inputs.npz")]
    assert main(args) == 0
    text = _text(capsys)
    assert "bit-exact" in text and "Instructions per core" in text and "critical path" in text
    speed = float(text.split("speed-up 1 -> 8 cores (emulated): ")[1].split("x")[0])
    assert 3.0 < speed <= 8.0
    # the DMA's time does not shrink with cores: the speed-up in cycles is below that in instructions
    speed_cycles = float(text.split("x in instructions, ")[1].split("x")[0])
    assert 1.0 < speed_cycles < speed and "DMA stall" in text


@pytest.mark.parametrize(
    "extra, status, words",
    [
        (["--cores", "9"], 2, "1..8"),
        (["--cores", "0"], 2, "1..8"),
        (["--l1", "-5"], 2, "positive"),
        (["--l1", "100"], 1, "l1_bytes"),
        (["--l2", "64"], 1, "l2"),
    ],
)
def test_bad_cluster_options(tmp_path, capsys, extra, status, words):
    args = ["compile", str(ATTENTION / "network.onnx"), "--numerics", "siracusa", "-o", str(tmp_path / "c")]
    assert main([*args, *extra]) == status
    assert words in _text(capsys)


def test_cluster_options_need_a_device_with_cluster_c(tmp_path, capsys):
    from tests.codegen.test_cli_compile import NIR

    nir = next(iter(sorted(NIR.rglob("*.nir"))))
    assert main(["compile", str(nir), "--numerics", "xylo", "-o", str(tmp_path / "c"), "--cores", "8"]) == 2
    assert "--numerics siracusa" in _text(capsys)


def test_a_saved_network_compiles_as_tiled_multicore_c(tmp_path, capsys, one_spike_pond):  # noqa: F811
    model, raster = one_spike_pond
    args = ["compile", str(model), "--numerics", "siracusa", "-o", str(tmp_path / "c"), "--drop-synapse"]
    assert main([*args, "--cores", "4", "--l1", "2000", "--check", str(raster)]) == 0
    assert "bit-exact: all 160 outputs" in _text(capsys)


def test_graphs_need_a_device_with_a_graph_path(tmp_path, capsys):
    args = ["compile", str(ATTENTION / "network.onnx"), "--numerics", "xylo", "-o", str(tmp_path / "c")]
    assert main(args) == 2
    assert "siracusa" in _text(capsys)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 3), st.sampled_from(["float", "shape", "junk"]))
def test_bad_check_inputs_are_one_error_line(tmp_path_factory, n_arrays, kind):
    d = tmp_path_factory.mktemp("chk")
    path = d / "x.npz"
    if kind == "junk":
        path.write_bytes(b"not an npz")
    else:
        shape = (1, 16, 64) if kind == "float" else (3, 3)
        arrays = [np.full(shape, 0.5 if kind == "float" else 1.0) for _ in range(n_arrays)]
        np.savez(path, *arrays)
    args = ["compile", str(ATTENTION / "network.onnx"), "--numerics", "siracusa", "-o", str(d / "c")]
    assert main([*args, "--check", str(path)]) == 1
