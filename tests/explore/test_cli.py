"""``pond explore``: the command module's parser and run(), on the built-in workload and a saved network."""

from __future__ import annotations

import argparse
import importlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from pondlib import nn
from pondlib.errors import ConfigError, PondError

ROOT = Path(__file__).resolve().parents[2]


CMD = importlib.import_module("pondlib.cli.explore")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pond")
    CMD.add_parser(parser.add_subparsers(dest="command"))
    return parser


def _run(*argv: str) -> tuple[int, str]:
    args = _parser().parse_args(["explore", *argv])
    buf = io.StringIO()
    code = CMD.run(Console(file=buf, width=200), args)
    return code, buf.getvalue()


def test_default_is_sew_resnet18_at_1mib():
    code, text = _run()
    assert code == 0
    assert "SEW-ResNet-18 (7PLIF): 30 layers, 7 blocks, T = 16 on meta-prototype @ 1 MiB" in text
    assert "best 10 of 70 schedules by energy (stems accounting" in text
    first = next(line for line in text.splitlines() if line.startswith("│  1 │"))
    assert "TB-LF x2 | TB-LBL x5" in first and "11.87" in first and "3.810" in first
    assert "ST-LBL (baseline)" in text and "186.17" in text
    assert "15.7x less off-chip traffic, 5.45x less energy" in text
    assert "evaluated 70 schedules in" in text and "Pareto front: TB-LF x2 | TB-LBL x5" in text


def test_5plif_at_128kb_writes_the_plot_and_the_table(tmp_path):
    out = tmp_path / "plots"
    code, text = _run(
        "--memory", "128KB", "--stateless-blocks", "0-1", "--tb-from", "output", "--top", "3", "--out", str(out)
    )
    assert code == 0
    assert "SEW-ResNet-18 (5PLIF)" in text and "134.4 KiB" in text and "best 3 of 70" in text
    assert "ST-LF x1 | ST-LBL x1 | TB-LBL x5" in text
    assert (out / "explore.png").stat().st_size > 1000
    data = json.loads((out / "explore.json").read_text())
    assert data["memory_bits"] == 1_101_004 and len(data["schedules"]) == 70
    assert data["schedules"][0]["schedule"] == "ST-LF x1 | ST-LBL x1 | TB-LBL x5"
    assert any(s["pareto"] for s in data["schedules"])


def test_a_saved_network(tmp_path):
    from pondlib.io import save_network

    net = nn.Sequential(
        nn.Linear(16, 64, weight=np.ones((16, 64))), nn.LIF(64), nn.Linear(64, 10, weight=np.ones((64, 10))), nn.LIF(10)
    )
    path = save_network(net, tmp_path / "mlp.pond")
    code, text = _run(
        path, "--steps", "10", "--space", "uniform", "--mode", "ideal", "--memory", "1KiB", "--stateless-blocks", "0"
    )
    assert code == 0
    assert "mlp.pond (blocks 0 stateless): 2 layers, 2 blocks, T = 10 on meta-prototype @ 1 KiB" in text
    assert "best 6 of 6 schedules by energy (ideal accounting" in text  # B in {1, 2, 10} x {LBL, LF}
    ranked = [line for line in text.splitlines() if line.startswith("│ ") and ("-LBL" in line or "-LF" in line)]
    assert len(ranked) == 6  # the baseline is among them, not appended
    weights = (16 * 64 + 64 * 10) * 4  # bits: a small network is reported in bits, not MiB
    total = next(line for line in text.splitlines() if line.startswith("│   all │"))
    assert f" {weights:,.2f} │" in total
    assert "traffic bit" in text and f"{weights + 10 * 16:,.2f}" in text  # weights once + the input, no state


def test_errors():
    with pytest.raises(PondError, match="not found"):
        _run("no/such/file.pond")
    with pytest.raises(ConfigError, match="stateless-blocks"):
        _run("--stateless-blocks", "7")
    for bad in (["--memory", "lots"], ["--stateless-blocks", "a"], ["--top", "0"], ["--mode", "fast"]):
        with pytest.raises(SystemExit):
            _parser().parse_args(["explore", *bad])
    assert _parser().parse_args(["explore", "--stateless-blocks", "0-1,3"]).stateless_blocks == (0, 1, 3)
