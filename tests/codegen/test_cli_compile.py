"""``pond compile``: sources and memory report, builds, bit-exact checks, one-line errors."""

from __future__ import annotations

import os

import jax
import numpy as np
import pytest

from pondlib import nn
from pondlib.cli import main
from pondlib.cli.compile import NUMERICS
from pondlib.codegen import NUMERICS as CODEGEN_NUMERICS
from pondlib.devices.xylo.config import XyloConfig
from pondlib.io import save_network


@pytest.fixture(autouse=True)
def _zig_cache(tmp_path_factory, monkeypatch):
    if not os.environ.get("ZIG_GLOBAL_CACHE_DIR"):
        monkeypatch.setenv("ZIG_GLOBAL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "zig-cache"))


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
