"""``pond compile``: sources and memory report, builds, bit-exact checks, one-line errors."""

from __future__ import annotations

import os
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.cli import main
from pondlib.cli.compile import NUMERICS
from pondlib.cli.demo_network import demo_network, one_spike_network
from pondlib.codegen import NUMERICS as CODEGEN_NUMERICS
from pondlib.devices.xylo.config import XyloConfig
from pondlib.io import save_network
from tests.strategies import bad_positive_floats, non_finite_arrays, wrong_dtype_arrays


@pytest.fixture(autouse=True)
def _zig_cache(tmp_path_factory, monkeypatch):
    if not os.environ.get("ZIG_GLOBAL_CACHE_DIR"):
        monkeypatch.setenv("ZIG_GLOBAL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "zig-cache"))


NIR = Path(__file__).resolve().parents[1] / "data" / "nir"


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


def test_numerics_agree_with_codegen():
    assert set(NUMERICS) == set(CODEGEN_NUMERICS)


def test_float32_network_compiles_and_checks_on_cortex_m4(tmp_path, capsys):
    net = nn.Sequential(nn.Linear(2, 5, key=jax.random.PRNGKey(0)), nn.LIF(5, tau_mem=0.01, tau_syn=0.005))
    model = save_network(net, tmp_path / "tiny.pond")
    raster = tmp_path / "x.npy"
    np.save(raster, (np.random.default_rng(0).random((2, 30, 2)) * 3).astype(np.float32))
    out = tmp_path / "c"
    args = ["compile", str(model), "--numerics", "float32", "-o", str(out), "--check", str(raster)]
    assert main([*args, "--target", "cortex-m4", "--name", "tiny"]) == 0
    text = capsys.readouterr().out
    assert "bit-exact" in text and "instructions per step" in text and "flash" in text
    assert {"tiny.c", "tiny.h", "main.c", "Makefile", "README.md"} <= {p.name for p in out.iterdir()}
    assert main(args) == 0  # --check alone builds for the host
    assert "bit-exact" in capsys.readouterr().out


def test_xylo_configuration_checks_on_host_and_rv32(tmp_path, capsys):
    cfg = XyloConfig(
        weights_in=np.array([[[100], [-40]], [[30], [70]]]).reshape(2, 2, 1),
        weights_rec=np.array([[[0, 0], [-20, 0]]]).reshape(2, 2, 1),
        weights_out=np.array([[50], [-30]]),
        dash_mem=[1, 2], dash_syn=[1, 3], dash_syn_2=[0, 0], dash_mem_out=[1], dash_syn_out=[1],
        threshold=[60, 40], bias=[0, 0], threshold_out=[40], bias_out=[0], aliases=[-1, -1],
    )  # fmt: skip
    path = tmp_path / "cfg.npz"
    cfg.save(path)
    raster = tmp_path / "events.npy"
    np.save(raster, np.random.default_rng(2).integers(0, 4, size=(3, 40, 2)))
    for target in ("host", "rv32"):
        code = main(["compile", str(path), "--numerics", "xylo", "-o", str(tmp_path / target), "--target", target,
                     "--check", str(raster)])  # fmt: skip
        assert code == 0, target
        assert "bit-exact" in capsys.readouterr().out
    # without --target and --check: sources and the report only
    assert main(["compile", str(path), "--numerics", "xylo", "-o", str(tmp_path / "src")]) == 0
    assert "Buffers" in capsys.readouterr().out
    assert (tmp_path / "src" / "net.c").is_file()


@pytest.mark.parametrize(
    "nir_file, options, shape",
    [
        ("braille/braille_noDelay_noBias_subtract.nir", ["--reset", "subtract"], (2, 20, 12)),
        ("lif/lif_norse.nir", ["--dt", "1e-4"], (2, 50, 1)),
    ],
)
def test_nir_file_float32_checks_on_host(tmp_path, capsys, monkeypatch, nir_file, options, shape):
    monkeypatch.chdir(tmp_path)  # a relative -o: the host compiler runs inside it (a bug once)
    rng = np.random.default_rng(3)
    x = (rng.random(shape) < 0.3).astype(np.float32) if shape[2] > 1 else (rng.random(shape) * 2).astype(np.float32)
    np.save("x.npy", x)
    args = ["compile", str(NIR / nir_file), "--numerics", "float32", "-o", "out", "--check", "x.npy", *options]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "(NIR, convention" in text
    n_out = {12: 7, 1: 1}[shape[2]]
    assert f"bit-exact: all {shape[0] * shape[1] * n_out:,} outputs" in text
    assert (tmp_path / "out" / "net").is_file() and (tmp_path / "out" / "net.c").is_file()


@pytest.fixture(scope="module")
def one_spike_pond(tmp_path_factory):
    """A small demo network with one spike per neuron per step (SpiNNaker2 and Siracusa neurons) and events."""
    d = tmp_path_factory.mktemp("onespike")
    net = one_spike_network(demo_network(8, 4, key=jax.random.PRNGKey(0)))
    np.save(d / "events.npy", np.random.default_rng(0).poisson(1.0, (2, 20, 16)))
    return save_network(net, d / "tiny.pond"), d / "events.npy"


@pytest.mark.parametrize("numerics, extra", [("spinnaker2", []), ("siracusa", ["--drop-synapse"])])
def test_saved_network_checks_for_spinnaker2_and_siracusa(tmp_path, capsys, one_spike_pond, numerics, extra):
    model, raster = one_spike_pond
    out = tmp_path / numerics
    assert main(["compile", str(model), "--numerics", numerics, "-o", str(out), "--check", str(raster), *extra]) == 0
    text = capsys.readouterr().out
    assert "bit-exact: all 160 outputs equal pondlib's" in text, text
    assert "differing outputs" in text and "not bit-exact" not in text
    assert (out / "net").is_file()


def test_siracusa_needs_drop_synapse_for_a_synaptic_current(tmp_path, capsys, one_spike_pond):
    model, raster = one_spike_pond
    argv = ["compile", str(model), "--numerics", "siracusa", "-o", str(tmp_path / "o"), "--check", str(raster)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert len(_error_lines(err)) == 1 and "--drop-synapse" in err and "synaptic current" in err
    assert main(["compile", str(model), "--numerics", "xylo", "-o", str(tmp_path / "o"), "--drop-synapse"]) == 2
    assert "siracusa only" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv_tail, status",
    [
        (["missing.pond", "--numerics", "float32"], 1),
        (["cfg.npz", "--numerics", "float32"], 1),
        (["cfg.npz", "--numerics", "xylo", "--check", "nope.npy"], 1),
        (["cfg.npz", "--numerics", "xylo", "--name", "int"], 1),
        (["cfg.npz", "--numerics", "xylo", "--dt", "1e-3"], 2),
        (["cfg.npz", "--numerics", "nope"], 2),
    ],
)
def test_bad_input_is_one_error_line(tmp_path, capsys, monkeypatch, argv_tail, status):
    monkeypatch.chdir(tmp_path)
    XyloConfig(
        weights_in=np.array([[[100]]]), weights_rec=np.zeros((1, 1, 1)), weights_out=np.array([[50]]),
        dash_mem=[1], dash_syn=[1], dash_syn_2=[0], dash_mem_out=[1], dash_syn_out=[1], threshold=[60],
        bias=[0], threshold_out=[40], bias_out=[0], aliases=[-1],
    ).save("cfg.npz")  # fmt: skip
    assert main(["compile", *argv_tail, "-o", "out"]) == status
    err = capsys.readouterr().err
    assert len(_error_lines(err)) == 1, err


def _is_number_text(value) -> bool:
    """A drawn text such as '1' or '1e100' that the parser reads as a number (possibly a valid dt)."""
    if not isinstance(value, str):
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    raster=st.one_of(non_finite_arrays((2, 5, 16)), wrong_dtype_arrays((2, 5, 16))),
    dt=bad_positive_floats().filter(lambda v: not _is_number_text(v)),
)
def test_bad_rasters_and_dt_are_one_error_line(tmp_path, capsys, one_spike_pond, raster, dt):
    """Refused before any C is generated: a raster with NaN/inf or non-numbers, a --dt that is not > 0."""
    model, _ = one_spike_pond
    capsys.readouterr()  # nothing left over from an earlier example
    path = tmp_path / "bad.npy"
    np.save(path, raster, allow_pickle=True)
    for numerics in ("float32", "siracusa"):
        out = tmp_path / numerics
        assert main(["compile", str(model), "--numerics", numerics, "-o", str(out), "--check", str(path)]) == 1
        err = capsys.readouterr().err
        assert len(_error_lines(err)) == 1 and "bad.npy" in err, err
        assert not out.exists()  # nothing written
    nir = str(NIR / "lif" / "lif_norse.nir")
    assert main(["compile", nir, "--numerics", "float32", "-o", str(tmp_path / "n"), "--dt", str(dt)]) == 2
    assert len(_error_lines(capsys.readouterr().err)) == 1
