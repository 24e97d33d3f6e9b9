"""Tests of the ``pond`` command line: devices, the fast demo end to end (three devices), map, simulate,
and clean one-line errors."""

from __future__ import annotations

import io
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pondlib.cli import DEMO_DEFAULTS, build_parser, demo_network, main, one_spike_network
from pondlib.devices.xylo.limits import XYLO_AUDIO2, XYLO_AUDIO3, XYLO_IMU

NIR = Path(__file__).resolve().parent / "data" / "nir"
PLOTS = (
    "input_raster.png",
    "hidden_spikes.png",
    "membrane_traces.png",
    "output_float_vs_chip.png",
    "training.png",
    "output_by_device.png",
    "accuracy_by_device.png",
)
DEVICES = ("Xylo Audio 3", "SpiNNaker2 chip", "Siracusa")


def _one_line_error(captured) -> str:
    """The single ``error: ...`` line of a failed command (and no traceback anywhere)."""
    assert "Traceback" not in captured.err + captured.out
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), captured.err
    return lines[0]


# -- pond devices --------------------------------------------------------------------------------------
def test_devices_lists_every_variant_and_limit(capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    for name in (
        XYLO_AUDIO2.name,
        XYLO_AUDIO3.name,
        XYLO_IMU.name,
        "SpiNNaker2 chip",
        "Siracusa",
        "(audio2)",
        "(audio3)",
        "(imu)",
        "(chip)",
        "(chip300)",
        "(board)",
        "(siracusa)",
    ):
        assert name in out, name
    row = next(line for line in out.splitlines() if "│ hidden neurons" in line)
    assert re.findall(r"\b\d+\b", row) == ["1000", "992", "496"]
    assert "-128..127" in out
    pes = next(line for line in out.splitlines() if "PEs for applications" in line)
    assert re.findall(r"[\d,]+", pes)[-3:] == ["148", "148", "7,104"]
    assert "-127..127" in out and "-15..15" in out  # synapse words with / without delay
    l1 = next(line for line in out.splitlines() if "L1 for one layer's tiles" in line)
    assert "64,000" in l1


# -- pond demo (fast) ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fast_demo(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("demo")
    capture = pytest.MonkeyPatch()
    buf = io.StringIO()
    capture.setattr(sys, "stdout", buf)
    t0 = time.perf_counter()
    try:
        code = main(["demo", "--fast", "--out", str(out_dir)])
    finally:
        capture.undo()
    return code, buf.getvalue(), out_dir, time.perf_counter() - t0


def test_fast_demo_runs_and_reports_every_device(fast_demo):
    code, out, _, _seconds = fast_demo  # the time is a benchmark's matter (benchmarks/), not asserted here
    assert code == 0
    accs = {
        d: (float(f), float(c)) for d, f, c in re.findall(r"accuracy on (.+?): float ([\d.]+)%, device ([\d.]+)%", out)
    }
    assert set(accs) == set(DEVICES)
    for device, (flt, dev) in accs.items():
        assert flt > 60 and dev > 60, device  # chance is 10 %
        assert abs(flt - dev) < 15, device
    # the network as trained is reported on every device, next to its device-aware twin
    assert len(re.findall(r"\(network as trained: device [\d.]+%\)", out)) == 3
    assert "no accuracy lost on any device" in out or "accuracy lost on the device:" in out
    # the device-aware float model and the device agree spike for spike on every device (bit-exact paths)
    equal = re.findall(r"hidden ([\d.]+)%, output ([\d.]+)%", out)
    assert len(equal) == 3 and all(a == b == "100.0" for a, b in equal), equal


def test_fast_demo_shows_resources_quantization_and_gaps(fast_demo):
    _, out, _, _ = fast_demo
    assert "Xylo Audio 2: 1 design rule violation(s)" in out and "max_output_neurons" in out
    hidden = next(line for line in out.splitlines() if "│ hidden neurons" in line)
    assert re.findall(r"\b\d+\b", hidden)[:2] == [str(DEMO_DEFAULTS["fast"]["hidden"]), "992"]
    for text in (
        "Resources on Xylo Audio 3",
        "Resources on the SpiNNaker2 chip",
        "Resources on Siracusa",
        "Quantization (channel scaling",
        "Quantization (lif_curr_exp_no_delay",
        "Quantization (int8 weights",
        "Float model vs Xylo",
        "Float model vs SpiNNaker2 chip",
        "Float model vs Siracusa",
        "Device-aware training",
        "2 ticks from input to output",
        "synaptic current",
        "spikes per neuron per",
        "PEs used",
        "L2 used",
        "cycles per",
        "sample-steps/s",
        "same prediction",
        "Summary",
    ):
        assert text in " ".join(out.split()), text  # whatever the console's width wraps


def test_fast_demo_writes_readable_plots_and_files(fast_demo):
    from pondlib.devices.xylo.config import XyloConfig
    from pondlib.io import load_network

    _, out, out_dir, _ = fast_demo
    for name in PLOTS:
        data = (out_dir / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name
    net = load_network(out_dir / "network_spinnaker2.pond")
    assert net.layers[1].max_spikes_per_dt == 1 and net.layers[1].n_neurons == DEMO_DEFAULTS["fast"]["hidden"]
    assert XyloConfig.load(out_dir / "xylo_config.npz").limits_name == "Xylo Audio 3"
    assert np.load(out_dir / "digits_test.npy").shape == (20, DEMO_DEFAULTS["fast"]["T"], 16)
    assert "pond simulate" in out and "pond map" in out  # what to try next


def test_demo_network_matches_chip_decays():
    import jax

    net = demo_network(8, key=jax.random.PRNGKey(0))
    alpha = np.exp(-1e-3 / np.asarray(net.layers[1].tau_mem))
    beta = np.exp(-1e-3 / np.asarray(net.layers[1].tau_syn))
    np.testing.assert_allclose(alpha, 1 - 2.0**-4, rtol=1e-6)
    np.testing.assert_allclose(beta, 0.5, rtol=1e-6)
    assert net.layers[1].max_spikes_per_dt == 31 and net.layers[3].max_spikes_per_dt == 1
    assert net.layers[3].n_neurons == 10
    one = one_spike_network(net)
    assert one.layers[1].max_spikes_per_dt == 1
    np.testing.assert_array_equal(np.asarray(one.layers[1].tau_syn), np.asarray(net.layers[1].tau_syn))
    np.testing.assert_array_equal(np.asarray(one.layers[0].weight), np.asarray(net.layers[0].weight))


# -- pond map ------------------------------------------------------------------------------------------
def test_map_saved_network_violations_then_fit(fast_demo, capsys):
    path = str(fast_demo[2] / "network.pond")
    assert main(["map", path, "--device", "xylo"]) == 1
    out = capsys.readouterr().out
    assert "Xylo Audio 2: 1 design rule violation(s)" in out and "max_output_neurons" in out
    assert "remedy" in out and "does not fit Xylo Audio 2" in out
    assert main(["map", path, "--device", "xylo", "--limits", "audio3"]) == 0
    out = capsys.readouterr().out
    assert "Resources on Xylo Audio 3" in out and "fits Xylo Audio 3" in out and "relative error" in out


def test_map_saved_network_to_spinnaker2_and_siracusa(fast_demo, capsys):
    d = fast_demo[2]
    path = str(d / "network_spinnaker2.pond")
    assert main(["map", path, "--device", "spinnaker2", "--limits", "board"]) == 0
    out = capsys.readouterr().out
    assert "SpiNNaker2 board (48 chips)" in out and "PEs used" in out and "fits the SpiNNaker2 board" in out
    assert main(["map", path, "--device", "siracusa"]) == 1  # a synaptic current: needs the flag
    assert "--drop-synapse" in _one_line_error(capsys.readouterr())
    assert (
        main(["map", path, "--device", "siracusa", "--drop-synapse", "--calibration", str(d / "digits_test.npy")]) == 0
    )
    out = capsys.readouterr().out
    assert "Resources on Siracusa" in out and "fits Siracusa" in out and "QLIF" in out


def test_map_nir_file_reports_violations(capsys):
    path = NIR / "braille" / "braille_noDelay_bias_zero.nir"
    assert main(["map", str(path), "--device", "xylo", "--dt", "1e-4", "--reset", "subtract"]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert "design rule violation(s)" in captured.out and "linear_bias" in captured.out
    flat = " ".join(captured.out.split())
    assert "(NIR, convention dt_scaled, dt 0.0001 s, reset subtract)" in flat


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["map", "missing.pond", "--device", "xylo"], "model file not found"),
        (["map", str(NIR / "lif" / "lif_norse.nir"), "--device", "xylo"], "dt"),
        (
            ["map", str(NIR / "braille" / "braille_noDelay_bias_zero.nir"), "--device", "xylo", "--limits", "audio9"],
            "unknown Xylo variant",
        ),
    ],
)
def test_map_errors_are_one_line(argv, needle, capsys):
    assert main(argv) == 1
    assert needle in _one_line_error(capsys.readouterr())


def test_map_rejects_a_file_that_is_not_a_network(tmp_path, capsys):
    bad = tmp_path / "notes.pond"
    bad.write_text("hello")
    assert main(["map", str(bad), "--device", "spinnaker2"]) == 1
    assert "not a pondlib network file" in _one_line_error(capsys.readouterr())


@pytest.mark.parametrize(
    "argv",
    [
        ["map", "x.pond", "--device", "loihi"],
        ["map", "x.pond"],
        ["map", str(NIR / "lif" / "lif_norse.nir"), "--device", "xylo", "--calibration", "c.npy"],
        ["map", str(NIR / "lif" / "lif_norse.nir"), "--device", "xylo", "--dt", "-1"],
    ],
)
def test_map_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    _one_line_error(capsys.readouterr())


def test_spinnaker2_model_names_match_the_package():
    from pondlib.devices.spinnaker2 import NEURON_MODELS

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["map"]
    option = next(a for a in sub._actions if a.dest == "neuron_model")
    assert sorted(option.choices) == sorted(NEURON_MODELS)


# -- pond simulate -------------------------------------------------------------------------------------
def test_simulate_writes_output_record_and_state(fast_demo, tmp_path, capsys):
    from pondlib.devices.xylo.config import XyloConfig
    from pondlib.devices.xylo.sim import XyloSim

    d = fast_demo[2]
    rec_path = tmp_path / "rec.npz"
    assert (
        main(["simulate", str(d / "xylo_config.npz"), "--input", str(d / "digits_test.npy"), "--record", str(rec_path)])
        == 0
    )
    out = capsys.readouterr().out
    assert "Simulation on Xylo Audio 3" in out and "sample-steps/s" in out and "prediction" in out
    with np.load(rec_path) as z:
        keys = set(z.files)
        got = z["output"]
        assert {"output", "record_Vmem", "record_Spikes", "state_Vmem"} <= keys
        assert z["record_Vmem"].shape[:2] == got.shape[:2]
    x = np.load(d / "digits_test.npy")
    want, _, _ = XyloSim.from_config(XyloConfig.load(d / "xylo_config.npz")).evolve(x)
    np.testing.assert_array_equal(got, want)


def test_simulate_runs_every_saved_demo_configuration_by_its_content(fast_demo, tmp_path, capsys):
    """pond demo saves what each device can save (<device>_config.npz); pond simulate recognises each file
    by its content and runs it on its device's simulator (Siracusa quantizes the raw event counts)."""
    from pondlib.devices.siracusa import SiracusaSim, load_config, quantize_input

    d = fast_demo[2]
    assert {p.name for p in d.glob("*_config.npz")} == {"xylo_config.npz", "siracusa_config.npz"}
    rec = tmp_path / "sir.npz"
    argv = ["simulate", str(d / "siracusa_config.npz"), "--input", str(d / "digits_test.npy"), "--quantize"]
    assert main([*argv, "--record", str(rec)]) == 0
    out = capsys.readouterr().out
    assert "Simulation (siracusa)" in out and "Output spike counts per output neuron" in out
    cfg = load_config(d / "siracusa_config.npz")
    want = SiracusaSim(cfg).evolve(quantize_input(np.load(d / "digits_test.npy"), cfg))[0]
    with np.load(rec) as z:
        np.testing.assert_array_equal(z["output"], want)
    frac = tmp_path / "frac.npy"
    np.save(frac, np.load(d / "digits_test.npy") + 0.5)
    assert main(["simulate", str(d / "siracusa_config.npz"), "--input", str(frac)]) == 1  # reals need --quantize
    assert "--quantize" in _one_line_error(capsys.readouterr())


def test_simulate_errors_are_one_line(fast_demo, tmp_path, capsys):
    d = fast_demo[2]
    cfg, inp = str(d / "xylo_config.npz"), str(d / "digits_test.npy")
    wrong = tmp_path / "wrong.npy"
    np.save(wrong, np.ones((5, 3), dtype=np.int32))
    archive = tmp_path / "two.npz"
    np.savez(archive, a=np.zeros(2))
    cases = [
        (["simulate", str(tmp_path / "none.npz"), "--input", inp], "configuration file not found"),
        (["simulate", cfg, "--input", str(tmp_path / "none.npy")], "input file not found"),
        (["simulate", cfg, "--input", str(wrong)], "input channels"),
        (["simulate", cfg, "--input", str(archive)], "not one array"),
        (["simulate", cfg, "--input", inp, "--record", str(tmp_path / "no" / "dir" / "r.npz")], "folder"),
        (["simulate", inp, "--input", inp], "XyloConfig"),
    ]
    for argv, needle in cases:
        assert main(argv) == 1, argv
        assert needle in _one_line_error(capsys.readouterr()), argv


# -- the command line itself ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--epochs", "0"],
        ["demo", "--epochs", "many"],
        ["frobnicate"],
        ["demo", "--colour"],
        ["simulate", "c.npz"],
    ],
)
def test_bad_arguments_exit_cleanly(argv, capsys):
    assert main(argv) == 2
    _one_line_error(capsys.readouterr())


def test_out_path_that_is_a_file_is_a_clean_error(tmp_path, capsys):
    f = tmp_path / "file.txt"
    f.write_text("not a folder")
    assert main(["demo", "--fast", "--out", str(f)]) == 1
    assert "--out" in _one_line_error(capsys.readouterr())


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    out = capsys.readouterr().out
    assert all(cmd in out for cmd in ("demo", "map", "simulate", "devices"))


def test_help_exits_zero(capsys):
    assert main(["demo", "--help"]) == 0
    assert "--fast" in capsys.readouterr().out
    assert main(["map", "--help"]) == 0
    assert "--device" in capsys.readouterr().out


def test_parser_defaults():
    args = build_parser().parse_args(["demo"])
    assert (args.out, args.fast, args.epochs, args.seed) == ("pond-demo-output", False, None, 0)
    args = build_parser().parse_args(["simulate", "c.npz", "--input", "x.npy"])
    assert (args.device, args.record) == ("xylo", None)
