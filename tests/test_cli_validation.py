"""Every ``pond`` command answers bad input with a non-zero exit status and exactly one ``error:`` line on
stderr, never a traceback: bad arguments and bad files drawn by hypothesis, driven through
:func:`pondlib.cli.main` (an exception escaping ``main`` fails the test)."""

from __future__ import annotations

import random
from pathlib import Path

import h5py
import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.cli import main
from pondlib.devices.xylo.config import XyloConfig
from pondlib.interop import write
from pondlib.io import save_network
from tests.strategies import NON_FINITE, bad_counts, bad_positive_floats, bad_types, non_finite_arrays

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SHAPE = (2, 6, 3)  # (B, T, N_in) of the small configuration and network below


def _error_line(capsys) -> str:
    """The single ``error: ...`` line of a failed command (and no traceback anywhere)."""
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), captured.err
    return lines[0]


def _fails(capsys, argv, needle: str | None = None, code: int | None = None) -> str:
    rc = main(argv)
    assert rc != 0, argv
    if code is not None:
        assert rc == code, (argv, rc)
    line = _error_line(capsys)
    if needle is not None:
        assert needle in line, (needle, line)
    return line


def _clean_or_ok(capsys, argv) -> None:
    """A damaged file that happens to stay readable may succeed (or report violations); else one error line."""
    rc = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = [line for line in captured.err.splitlines() if line.strip()]
    if rc == 0 or (rc == 1 and not lines and "violation" in captured.out):
        return
    assert rc != 0 and len(lines) == 1 and lines[0].startswith("error:"), (rc, captured.err)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A small saved network, Xylo configuration, NIR file and input raster, and a scratch folder."""
    d = tmp_path_factory.mktemp("cli_validation")
    rng = np.random.default_rng(0)
    n_in, n_hid, n_out = SHAPE[2], 4, 2
    XyloConfig(
        weights_in=rng.integers(-128, 128, (n_in, n_hid, 1)),
        weights_rec=np.zeros((n_hid, n_hid, 1), dtype=np.int64),
        weights_out=rng.integers(-128, 128, (n_hid, n_out)),
        dash_mem=np.full(n_hid, 3),
        dash_syn=np.full(n_hid, 2),
        dash_syn_2=np.full(n_hid, 2),
        dash_mem_out=np.full(n_out, 3),
        dash_syn_out=np.full(n_out, 2),
        threshold=np.full(n_hid, 100),
        bias=np.zeros(n_hid, dtype=np.int64),
        threshold_out=np.full(n_out, 50),
        bias_out=np.zeros(n_out, dtype=np.int64),
        aliases=-np.ones(n_hid, dtype=np.int64),
        dt=1e-3,
    ).save(d / "cfg.npz")
    k = jax.random.split(jax.random.PRNGKey(0), 2)
    net = nn.Sequential(
        nn.Linear(n_in, n_hid, key=k[0]), nn.LIF(n_hid, dt=1e-3), nn.Linear(n_hid, n_out, key=k[1]), nn.LIF(n_out)
    )
    save_network(net, d / "net.pond")
    write(d / "net.nir", net)
    np.save(d / "x.npy", np.ones(SHAPE, dtype=np.int64))
    (d / "scratch").mkdir()
    return d


# -- bad arguments -------------------------------------------------------------------------------------
def _as_text(value) -> str:
    return str(value)


def _is_positive_int(text: str) -> bool:
    try:
        return int(text) >= 1
    except ValueError:
        return False


def _is_positive_float(text: str) -> bool:
    try:
        v = float(text)
    except ValueError:
        return False
    return bool(np.isfinite(v) and v > 0)


@SETTINGS
@given(
    value=bad_counts().map(_as_text).filter(lambda t: not _is_positive_int(t)),
    flag=st.sampled_from(["--epochs", "--hidden"]),
)
def test_demo_bad_counts_are_usage_errors(value, flag, capsys):
    # '--flag=VALUE' so that a drawn '-x' is the value, not an option; refused before any training
    _fails(capsys, ["demo", "--fast", f"{flag}={value}"], flag, code=2)


@SETTINGS
@given(value=st.one_of(st.integers(max_value=-1), st.integers(min_value=2**32), bad_types().map(_as_text)))
def test_demo_bad_seed_is_a_usage_error(value, capsys):
    if isinstance(value, str) and value.strip().lstrip("+").isdigit() and int(value) < 2**32:
        return  # a drawn text that is a valid seed
    _fails(capsys, ["demo", "--fast", f"--seed={value}"], "--seed", code=2)


@SETTINGS
@given(value=bad_positive_floats().map(_as_text).filter(lambda t: not _is_positive_float(t)))
def test_map_bad_dt_is_a_usage_error(value, files, capsys):
    _fails(capsys, ["map", str(files / "net.nir"), "--device", "xylo", f"--dt={value}"], "--dt", code=2)


@SETTINGS
@given(
    limits=st.text(max_size=8).filter(
        lambda t: t.strip().lower() not in {"", "audio2", "audio3", "imu", "chip", "chip300", "board", "siracusa"}
    ),
    device=st.sampled_from(["xylo", "spinnaker2", "siracusa"]),
)
def test_map_unknown_variant_is_one_line(limits, device, files, capsys):
    argv = ["map", str(files / "net.pond"), "--device", device, f"--limits={limits}"]
    if device == "siracusa":
        argv.append("--drop-synapse")
    rc = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    if rc != 0:  # (a display name such as 'Xylo Audio 2' would be a valid variant)
        assert len([ln for ln in captured.err.splitlines() if ln.strip()]) == 1
        assert captured.err.startswith("error:")


@SETTINGS
@given(
    option=st.sampled_from(["--steps", "--top", "--memory", "--stateless-blocks"]),
    value=st.one_of(bad_counts().map(_as_text), st.sampled_from(["-3MB", "1e400", "nan", "0", "MB", "x-y", "2-1"])),
)
def test_explore_bad_options_are_usage_errors(option, value, capsys):
    if option in ("--steps", "--top") and _is_positive_int(value):
        return
    if option == "--memory" and _is_positive_float(value):
        return  # a plain number of bytes is a size
    if option == "--stateless-blocks" and all(p.strip().isdigit() for p in value.split(",") if p.strip()):
        return  # '0', '3', '' are block lists (a missing block is an error of the run, checked below)
    _fails(capsys, ["explore", f"{option}={value}"], option, code=2)


def test_explore_missing_block_is_one_line(capsys):
    _fails(capsys, ["explore", "--stateless-blocks", "99"], "stateless-blocks", code=1)


@pytest.mark.parametrize(
    "argv",
    [
        ["devices", "extra"],
        ["simulate", "c.npz", "--input"],
        ["map", "m.pond", "--device", "xylo", "--device"],
        ["map", "m.pond", "--device", "xylo\nxylo"],
        ["explore", "--mode", "fastest"],
        ["devices", "a\nb\rc\u2028d"],
    ],
)
def test_bad_command_lines_are_one_line(argv, capsys):
    _fails(capsys, argv, code=2)


# -- pond simulate: bad input rasters ------------------------------------------------------------------
def _bad_rasters():
    b, t, n = SHAPE
    return st.one_of(
        non_finite_arrays(SHAPE),
        st.sampled_from(
            [
                np.full(SHAPE, 1 + 2j),  # complex
                np.full(SHAPE, "a"),  # text
                np.full(SHAPE, -1),  # negative
                np.full(SHAPE, 0.5),  # fractional
                np.full(SHAPE, 1e30),  # beyond int64
                np.zeros((0, t, n)),  # empty batch
                np.zeros((b, 0, n)),  # no steps
                np.ones(n),  # rank 1
                np.ones((1,) + SHAPE),  # rank 4
                np.ones((b, t, n + 1), dtype=np.int64),  # channels
                np.array(3.0),  # a scalar
            ]
        ),
        st.tuples(st.integers(0, SHAPE[0] - 1), st.integers(0, SHAPE[1] - 1), st.integers(0, SHAPE[2] - 1)).flatmap(
            lambda idx: st.sampled_from([-1.0, 0.25, -7.5, np.nan, np.inf]).map(lambda v: _with(np.ones(SHAPE), idx, v))
        ),
    )


def _with(arr, idx, value):
    arr = arr.copy()
    arr[idx] = value
    return arr


@SETTINGS
@given(x=_bad_rasters())
def test_simulate_refuses_bad_rasters(x, files, capsys):
    path = files / "scratch" / "bad_input.npy"
    np.save(path, x)
    line = _fails(capsys, ["simulate", str(files / "cfg.npz"), "--input", str(path)], code=1)
    assert "bad_input.npy" in line or "input" in line


def test_simulate_raster_messages_name_the_file_and_the_problem(files, capsys):
    cases = {
        "nan": (np.full(SHAPE, np.nan), "expected finite values"),
        "neg": (np.full(SHAPE, -1), "got -1 at index (0, 0, 0)"),
        "frac": (np.full(SHAPE, 0.5), "non-integer values"),
        "cplx": (np.full(SHAPE, 1j), "complex"),
        "rank": (np.ones((1,) + SHAPE), "rank"),
        "empty": (np.zeros((0,) + SHAPE[1:]), "empty"),
        "text": (np.full(SHAPE, "a"), "dtype <U1"),
    }
    for name, (x, needle) in cases.items():
        path = files / "scratch" / f"{name}.npy"
        np.save(path, x)
        line = _fails(capsys, ["simulate", str(files / "cfg.npz"), "--input", str(path)], needle, code=1)
        assert f"{name}.npy" in line and "--input" in line


def test_simulate_object_array_and_archive(files, capsys):
    obj = files / "scratch" / "obj.npy"
    np.save(obj, np.array([None, 1], dtype=object), allow_pickle=True)
    _fails(capsys, ["simulate", str(files / "cfg.npz"), "--input", str(obj)], "not a .npy array", code=1)
    _fails(capsys, ["simulate", str(files / "cfg.npz"), "--input", str(files / "cfg.npz")], "not one array", code=1)
    _fails(capsys, ["simulate", str(files / "cfg.npz"), "--input", str(files / "net.nir")], "not a .npy", code=1)


# -- pond simulate: bad configuration files ------------------------------------------------------------
def _damaged(data: bytes, how: str, where: int, byte: int) -> bytes:
    if how == "truncate":
        return data[: where % max(len(data), 1)]
    if how == "garbage":
        return bytes(random.Random(where).randrange(256) for _ in range(where % 200))
    b = bytearray(data)
    for i in range(8):
        b[(where + 37 * i) % len(b)] ^= byte or 0xFF
    return bytes(b)


@SETTINGS
@given(how=st.sampled_from(["truncate", "garbage", "flip"]), where=st.integers(0, 10**6), byte=st.integers(0, 255))
def test_simulate_damaged_configurations(how, where, byte, files, capsys):
    path = files / "scratch" / "cfg_bad.npz"
    path.write_bytes(_damaged((files / "cfg.npz").read_bytes(), how, where, byte))
    argv = ["simulate", str(path), "--input", str(files / "x.npy")]
    if how == "flip":
        _clean_or_ok(capsys, argv)  # a flip in a zip header's date field leaves a valid file
    else:
        assert "cfg_bad.npz" in _fails(capsys, argv, code=1)


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"dt": np.asarray("fast")}, "'dt'"),
        ({"dt": np.asarray(["a", "b"])}, "'dt'"),
        ({"bias_enable": np.asarray("False")}, "'bias_enable'"),
        ({"limits_name": np.asarray(3)}, "'limits_name'"),
        ({"weights_in": np.full((3, 4, 1), "w")}, "'weights_in'"),
        ({"unexpected": np.zeros(2)}, "unknown key"),
    ],
)
def test_simulate_configuration_with_wrong_fields(change, needle, files, capsys):
    with np.load(files / "cfg.npz") as z:
        fields = {k: z[k] for k in z.files}
    fields.update(change)
    path = files / "scratch" / "cfg_field.npz"
    np.savez(path, **fields)
    line = _fails(capsys, ["simulate", str(path), "--input", str(files / "x.npy")], needle, code=1)
    assert "cfg_field.npz" in line


# -- pond map: bad calibration rasters -----------------------------------------------------------------
@SETTINGS
@given(
    x=st.one_of(
        non_finite_arrays(SHAPE),
        st.sampled_from(
            [np.full(SHAPE, "a"), np.full(SHAPE, 2j), np.zeros((0,) + SHAPE[1:]), np.ones(3), np.ones((1,) + SHAPE)]
        ),
    )
)
def test_map_refuses_bad_calibration(x, files, capsys):
    path = files / "scratch" / "calib.npy"
    np.save(path, x)
    argv = ["map", str(files / "net.pond"), "--device", "siracusa", "--drop-synapse", "--calibration", str(path)]
    assert "calib.npy" in _fails(capsys, argv, "calibration", code=1)


def test_map_calibration_of_strings_and_empty_batch(files, capsys):
    path = files / "scratch" / "strings.npy"
    np.save(path, np.full(SHAPE, "a"))
    argv = ["map", str(files / "net.pond"), "--device", "siracusa", "--drop-synapse", "--calibration", str(path)]
    assert "strings.npy: calibration: got dtype <U1" in _fails(capsys, argv, code=1)
    np.save(path, np.zeros((0,) + SHAPE[1:]))
    assert "empty array of shape (0, 6, 3)" in _fails(capsys, argv, code=1)


# -- bad model files (map, explore) --------------------------------------------------------------------
@SETTINGS
@given(
    how=st.sampled_from(["truncate", "garbage", "flip"]),
    where=st.integers(0, 10**6),
    byte=st.integers(0, 255),
    command=st.sampled_from(["map", "explore"]),
)
def test_damaged_network_files(how, where, byte, command, files, capsys):
    path = files / "scratch" / "net_bad.pond"
    path.write_bytes(_damaged((files / "net.pond").read_bytes(), how, where, byte))
    argv = ["map", str(path), "--device", "xylo"] if command == "map" else ["explore", str(path), "--steps", "2"]
    if how == "flip":
        _clean_or_ok(capsys, argv)
    else:
        assert "net_bad.pond" in _fails(capsys, argv, code=1)


@SETTINGS
@given(how=st.sampled_from(["truncate", "garbage", "flip"]), where=st.integers(0, 10**6), byte=st.integers(0, 255))
def test_damaged_nir_files(how, where, byte, files, capsys):
    path = files / "scratch" / "net_bad.nir"
    path.write_bytes(_damaged((files / "net.nir").read_bytes(), how, where, byte))
    argv = ["map", str(path), "--device", "xylo"]
    if how == "flip":
        _clean_or_ok(capsys, argv)
    else:
        assert "net_bad.nir" in _fails(capsys, argv, code=1)


def test_nir_file_with_unknown_node_type(files, capsys):
    path = files / "scratch" / "unknown.nir"
    path.write_bytes((files / "net.nir").read_bytes())
    with h5py.File(path, "r+") as f:
        node = f["node/nodes/0_Linear"]
        del node["type"]
        node.create_dataset("type", data="Frobnicator")
    line = _fails(capsys, ["map", str(path), "--device", "xylo"], "unknown NIR node type 'Frobnicator'", code=1)
    assert "unknown.nir" in line and "0_Linear" in line and "AssertionError" not in line


def test_nir_file_with_nan_parameter(files, capsys):
    path = files / "scratch" / "nan.nir"
    path.write_bytes((files / "net.nir").read_bytes())
    with h5py.File(path, "r+") as f:
        w = f["node/nodes/0_Linear/weight"]
        data = w[()]
        data[0, 0] = np.nan
        w[...] = data
    line = _fails(capsys, ["map", str(path), "--device", "xylo"], "0_Linear", code=1)
    assert "weight" in line and "nan" in line


@pytest.mark.parametrize("command", ["map", "explore", "simulate"])
def test_missing_files_and_folders(command, files, capsys):
    missing, folder = str(files / "scratch" / "missing.pond"), str(files / "scratch")
    if command == "map":
        _fails(capsys, ["map", missing, "--device", "xylo"], "model file not found", code=1)
        _fails(capsys, ["map", folder, "--device", "xylo"], "not a regular file", code=1)
        argv = ["map", str(files / "net.pond"), "--device", "siracusa", "--drop-synapse", "--calibration"]
        _fails(capsys, [*argv, missing], "calibration file not found", code=1)
        _fails(capsys, [*argv, folder], "not a regular file", code=1)
    elif command == "explore":
        _fails(capsys, ["explore", missing], "not found", code=1)
        _fails(capsys, ["explore", folder], "not a regular file", code=1)
    else:
        _fails(capsys, ["simulate", missing, "--input", str(files / "x.npy")], "not found", code=1)
        _fails(capsys, ["simulate", folder, "--input", str(files / "x.npy")], "not a regular file", code=1)
        _fails(capsys, ["simulate", str(files / "cfg.npz"), "--input", missing], "input file not found", code=1)
        _fails(capsys, ["simulate", str(files / "cfg.npz"), "--input", folder], "not a regular file", code=1)


# -- output paths --------------------------------------------------------------------------------------
def test_output_paths_that_are_folders_or_files(files, capsys):
    folder = files / "scratch"
    line = _fails(
        capsys, ["simulate", str(files / "cfg.npz"), "--input", str(files / "x.npy"), "--record", str(folder)], code=1
    )
    assert "record file is a folder" in line and "--record" in line
    no_dir = folder / "no" / "such" / "r.npz"
    argv = ["simulate", str(files / "cfg.npz"), "--input", str(files / "x.npy"), "--record", str(no_dir)]
    assert "folder" in _fails(capsys, argv, code=1)
    a_file = files / "x.npy"
    assert "--out" in _fails(capsys, ["demo", "--fast", "--out", str(a_file)], code=1)
    assert "output folder" in _fails(capsys, ["explore", "--steps", "2", "--top", "1", "--out", str(a_file)], code=1)


def test_valid_files_still_work(files, capsys):
    rec = files / "scratch" / "rec.npz"
    assert main(["simulate", str(files / "cfg.npz"), "--input", str(files / "x.npy"), "--record", str(rec)]) == 0
    with np.load(rec) as z:
        assert z["output"].shape[:2] == SHAPE[:2]
    assert main(["map", str(files / "net.nir"), "--device", "xylo"]) == 0
    calib = files / "scratch" / "calib_ok.npy"
    np.save(calib, np.random.default_rng(1).random(SHAPE))  # float calibration (not event counts) is fine
    argv = ["map", str(files / "net.pond"), "--device", "siracusa", "--drop-synapse", "--calibration", str(calib)]
    assert main(argv) == 0
    capsys.readouterr()


def test_non_finite_values_are_named(files, capsys):
    for value in NON_FINITE:
        path = files / "scratch" / "nf.npy"
        np.save(path, _with(np.ones(SHAPE), (1, 2, 0), value))
        line = _fails(capsys, ["simulate", str(files / "cfg.npz"), "--input", str(path)], "(1, 2, 0)", code=1)
        assert str(value) in line


def test_cli_package_has_no_blanket_handler():
    src = (Path(__file__).resolve().parents[1] / "pondlib" / "cli" / "__init__.py").read_text()
    assert "except Exception" not in src and "except BaseException" not in src
