"""Tests of the ``pond`` command line: devices, the fast demo end to end, clean errors."""

import re
import time

import pytest

from pondlib.cli import DEMO_DEFAULTS, build_parser, demo_network, main
from pondlib.devices.xylo.limits import XYLO_AUDIO2, XYLO_AUDIO3, XYLO_IMU

PLOTS = ("input_raster.png", "hidden_spikes.png", "membrane_traces.png", "output_float_vs_chip.png",
         "training.png")


def test_devices_lists_every_variant_and_limit(capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    for lim in (XYLO_AUDIO2, XYLO_AUDIO3, XYLO_IMU):
        assert lim.name in out
    assert "hidden neurons" in out and "output neurons" in out
    row = next(line for line in out.splitlines() if "hidden neurons" in line)
    assert re.findall(r"\b\d+\b", row) == ["1000", "992", "496"]
    assert "-128..127" in out


@pytest.fixture(scope="module")
def fast_demo(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("demo")
    capture = pytest.MonkeyPatch()
    import io
    import sys
    buf = io.StringIO()
    capture.setattr(sys, "stdout", buf)
    t0 = time.perf_counter()
    try:
        code = main(["demo", "--fast", "--out", str(out_dir)])
    finally:
        capture.undo()
    return code, buf.getvalue(), out_dir, time.perf_counter() - t0


def test_fast_demo_runs_and_reports(fast_demo):
    code, out, _, seconds = fast_demo
    assert code == 0
    assert seconds < 90                                   # about 10-30 s; generous on a loaded machine
    accs = dict(re.findall(r"(float|chip) test accuracy: ([\d.]+)%", out))
    assert set(accs) == {"float", "chip"}
    assert float(accs["float"]) > 60 and float(accs["chip"]) > 60   # chance is 10 %
    assert abs(float(accs["float"]) - float(accs["chip"])) < 15


def test_fast_demo_shows_the_audio2_violation_and_resources(fast_demo):
    _, out, _, _ = fast_demo
    assert "Xylo Audio 2: 1 design rule violation(s)" in out
    assert "max_output_neurons" in out
    assert "Resources on Xylo Audio 3" in out
    hidden = next(line for line in out.splitlines() if "│ hidden neurons" in line)
    assert re.findall(r"\b\d+\b", hidden)[:2] == [str(DEMO_DEFAULTS["fast"]["hidden"]), "992"]
    for text in ("Quantization (channel scaling", "relative error", "sample-steps/s",
                 "hidden -> output delay", "same prediction float vs chip"):
        assert text in out


def test_fast_demo_writes_readable_plots(fast_demo):
    _, _, out_dir, _ = fast_demo
    for name in PLOTS:
        data = (out_dir / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name


def test_demo_network_matches_chip_decays():
    import jax
    import numpy as np

    net = demo_network(8, key=jax.random.PRNGKey(0))
    alpha = np.exp(-1e-3 / np.asarray(net.layers[1].tau_mem))
    beta = np.exp(-1e-3 / np.asarray(net.layers[1].tau_syn))
    np.testing.assert_allclose(alpha, 1 - 2.0 ** -4, rtol=1e-6)
    np.testing.assert_allclose(beta, 0.5, rtol=1e-6)
    assert net.layers[1].max_spikes_per_dt == 31 and net.layers[3].max_spikes_per_dt == 1
    assert net.layers[3].n_neurons == 10


@pytest.mark.parametrize("argv", [["demo", "--epochs", "0"], ["demo", "--epochs", "many"], ["frobnicate"],
                                  ["demo", "--colour"]])
def test_bad_arguments_exit_cleanly(argv, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:")


def test_out_path_that_is_a_file_is_a_clean_error(tmp_path, capsys):
    f = tmp_path / "file.txt"
    f.write_text("not a folder")
    assert main(["demo", "--fast", "--out", str(f)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error:") and "--out" in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out


def test_help_exits_zero(capsys):
    assert main(["demo", "--help"]) == 0
    assert "--fast" in capsys.readouterr().out


def test_parser_defaults():
    args = build_parser().parse_args(["demo"])
    assert (args.out, args.fast, args.epochs, args.seed) == ("pond-demo-output", False, None, 0)
