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


def _run(*argv: str, width: int = 200) -> tuple[int, str]:
    args = _parser().parse_args(["explore", *argv])
    buf = io.StringIO()
    code = CMD.run(Console(file=buf, width=width), args)  # a StringIO: not a terminal, as when piped
    return code, buf.getvalue()


def test_default_is_sew_resnet18_at_1mib():
    code, text = _run()
    assert code == 0
    assert "SEW-ResNet-18 (7PLIF): 30 layers, 7 blocks, T = 16 on meta-prototype @ 1 MiB" in text
    assert "best 10 of 70 schedules by energy (stems accounting" in text
    first = next(line for line in text.splitlines() if line.startswith("│  1 │"))
    assert "TF2 TL5" in first and "11.87" in first and "3.810" in first and "27.809" in first
    assert "  #1: TB-LF x2 | TB-LBL x5 (TB 7 in, LF 2 in)" in text
    assert "SL7 (baseline)" in text and "186.17" in text and "  #70: ST-LBL" in text
    assert "15.7x less off-chip traffic, 5.45x less energy, 1.37x fewer cycles" in text
    assert "evaluated 70 schedules in" in text and "Pareto front of traffic and energy:\n  TB-LF x2 | TB-LBL x5" in text


def test_5plif_at_128kb_writes_the_plot_and_the_table(tmp_path):
    out = tmp_path / "plots"
    code, text = _run(
        "--memory", "128KB", "--stateless-blocks", "0-1", "--tb-from", "output", "--top", "3", "--out", str(out)
    )
    assert code == 0
    assert "SEW-ResNet-18 (5PLIF)" in text and "134.4 KiB" in text and "best 3 of 70" in text
    assert "#1: ST-LF x1 | ST-LBL x1 | TB-LBL x5" in text
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
    ranked = [line for line in text.splitlines() if line.startswith("  #")]
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


def _table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line[:1] in "┃│"]


@pytest.mark.parametrize("memory", ["1MB", "128KB"])
def test_piped_output_breaks_no_word(memory):
    _, wide = _run("--memory", memory, "--top", "6", width=300)
    code, piped = _run("--memory", memory, "--top", "6", width=80)  # what a pipe gets
    assert code == 0
    # tables keep their natural width: the same rows as on a wide terminal, no cell folded into two lines
    assert _table_lines(piped) == _table_lines(wide)
    heads = next(line for line in piped.splitlines() if "schedule" in line and line.startswith("┃"))
    for word in ("traffic", "energy", "Mcycles", "fits"):
        assert word in heads
    rows = [line for line in piped.splitlines() if line.startswith("│ ") and "(baseline)" in line]
    assert rows and "SL7 (baseline)" in rows[0]
    for line in piped.splitlines():
        if line.startswith("  #"):  # the key: each full label on its own line
            label = line.split(": ", 1)[1]
            assert "-LBL" in label or "-LF" in label


def test_unfit_schedules_rank_last_and_say_why():
    code, text = _run("--memory", "128KB", "--top", "70", width=300)
    assert code == 0
    cells = [line.split("│") for line in text.splitlines() if line.startswith("│ ")]
    fits = [c[7].strip() for c in cells if len(c) > 8 and c[7].strip() in ("yes", "spills", "no")]
    assert len(fits) == 70 and {"yes", "spills", "no"} == set(fits)
    assert fits == sorted(fits, key=lambda f: f == "no")  # stacks that cannot fit come last
    assert "      spills: blocks 0-0: working set" in text and "to DRAM (charged)" in text
    assert "      does not fit: blocks 0-6: working set" in text and "weights re-read per column" in text
    assert "spill them to DRAM as STEMS does (fits: spills; charged in the traffic)" in text
    assert "cannot hold its weights and a state tile (fits: no): ranked after all others" in text


def test_json_for_scripts():
    code, text = _run("--json", "--rank-by", "edp", "--memory", "128KB", width=80)
    assert code == 0
    data = json.loads(text)  # nothing but the JSON document
    assert data["rank_by"] == "edp" and data["memory_bits"] == 1_101_004 and len(data["schedules"]) == 70
    first = data["schedules"][0]
    assert first["rank"] == 1 and first["feasible"] is True and first["compact"]
    assert first["latency_mcycles"] > first["compute_mcycles"] == 26.216192
    edps = [s["edp_mj_mcycles"] for s in data["schedules"] if s["feasible"]]
    assert edps == sorted(edps)
    unfit = [s for s in data["schedules"] if not s["fits"]]
    assert unfit and all(s["unfit"] for s in unfit) and data["schedules"][-1]["fit_status"] == "no"


def test_the_pond_entry_point_piped(tmp_path):
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "pondlib.cli", "explore", "--top", "2", "--memory", "128KB"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "schedul e" not in out.stdout and "off-chi p" not in out.stdout
    assert "  #1: TB-LF x1 | TB-LBL x6 (TB 7 in, LF 1 in)\n      spills: blocks 0-0" in out.stdout
