"""Kernel builds started ahead of need: the ``Device.prebuild`` hook (a no-op by default, the C simulator's
build where a chip has one), ``pondlib.nn.native.prebuild`` (the training kernels first), and the
commands that train or simulate (``pond demo``, ``pond simulate``, ``pond compile --check``) calling
them once at their start, naming no chip; bad input to ``start_builds`` refused with a PondError."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.cli import main
from pondlib.cli.builds import start_builds
from pondlib.cprogram import native as cnative
from pondlib.devices import registry
from pondlib.devices.core.device import Device
from pondlib.errors import PondError
from pondlib.nn import native as nn_native


@pytest.fixture
def calls(monkeypatch):
    """Every registered device's ``prebuild`` and ``pondlib.nn.native.prebuild`` replaced by recorders
    (nothing is built)."""
    seen: list[str] = []
    for device in registry.devices():
        monkeypatch.setattr(device, "prebuild", lambda name=device.name: seen.append(name) or [])
    monkeypatch.setattr(nn_native, "prebuild", lambda: seen.append("nn") or [])
    return seen


def _stop(*args, **kwargs):
    raise PondError("stopped by the test after the command's start")


def test_demo_starts_every_build_once_before_its_work(calls, monkeypatch, tmp_path, capsys):
    import pondlib.datasets

    monkeypatch.setattr(pondlib.datasets, "load_digits_events", _stop)  # the demo's first real work
    assert main(["demo", "--fast", "--out", str(tmp_path / "out")]) == 1
    assert "stopped by the test" in capsys.readouterr().err
    assert calls == ["nn", *registry.names()]  # the network kernels first (training comes first), once each


def test_demo_with_a_bad_out_folder_starts_nothing(calls, tmp_path, capsys):
    f = tmp_path / "file.txt"
    f.write_text("not a folder")
    assert main(["demo", "--fast", "--out", str(f)]) == 1
    assert calls == []


def test_simulate_starts_the_build_of_its_device_only(calls, tmp_path, capsys):
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((4, 2), np.int32))
    device = list(registry.devices())[-1]
    assert main(["simulate", str(tmp_path / "absent.npz"), "--input", str(x), "--device", device.name]) == 1
    assert calls == [device.name]


def test_compile_check_starts_the_builds_its_check_needs(calls, tmp_path, capsys):
    model = tmp_path / "net.pond"
    model.write_text("not a network")
    raster = tmp_path / "x.npy"
    np.save(raster, np.zeros((4, 2), np.float32))
    device = list(registry.devices())[0]
    main(["compile", str(model), "--numerics", device.name, "-o", str(tmp_path / "c"), "--check", str(raster)])
    assert calls == [device.name]
    calls.clear()
    main(["compile", str(model), "--numerics", "float32", "-o", str(tmp_path / "f"), "--check", str(raster)])
    assert calls == ["nn"]
    calls.clear()
    main(["compile", str(model), "--numerics", device.name, "-o", str(tmp_path / "n")])  # no check: no builds
    assert calls == []


def test_the_default_hook_builds_nothing_and_the_c_simulator_queues_its_kernel(monkeypatch):
    class Bare(Device):  # the interface's default, as a chip without compiled code has it
        name = "bare"
        variants = {}
        limit_rows = map = run = report = None

    assert Bare().prebuild() == []
    queued: list = []
    monkeypatch.setattr(cnative, "prebuild", lambda libs, **kw: queued.extend(libs) or [])
    started = [t for d in registry.devices() for t in d.prebuild()]
    assert started == []
    names = [name for name, _, _ in queued]
    assert len(names) == 1 and names[0].startswith("pond_") and queued[0][1].suffix == ".c"
    assert queued[0][1].is_file()


def test_nn_prebuild_queues_the_training_kernels_first_ahead_of_need(monkeypatch):
    got: list = []
    monkeypatch.setattr(cnative, "prebuild", lambda libs, **kw: got.append((libs, kw)) or [])
    assert nn_native.prebuild() == []
    ((libs, kw),) = got
    assert [name for name, _, _ in libs] == ["pond_lif", "pond_lif_chain", "pond_chain"]
    assert kw == {} and all(src.is_file() for _, src, _ in libs)  # ahead of need: the default, limited
    monkeypatch.setenv("PONDLIB_NATIVE", "0")
    assert nn_native.prebuild() == [] and len(got) == 1  # kernels off: nothing queued


def test_start_builds_returns_the_started_threads(monkeypatch):
    thread = threading.Thread(target=lambda: None)
    monkeypatch.setattr(nn_native, "prebuild", lambda: [thread])
    device = list(registry.devices())[0]
    monkeypatch.setattr(device, "prebuild", lambda: [])
    assert start_builds([device], networks=True) == [thread]
    assert start_builds((), networks=False) == []


@settings(max_examples=30, deadline=None)
@given(
    devices=st.one_of(
        st.integers(),
        st.none(),
        st.lists(st.one_of(st.text(max_size=8), st.integers(), st.none()), min_size=1, max_size=3),
        st.sampled_from(["xylo", b"dev", 1.5]),
    ),
)
def test_start_builds_refuses_what_is_not_a_device(devices):
    with pytest.raises(PondError, match="device to prebuild"):
        start_builds(devices, networks=False)


@settings(max_examples=20, deadline=None)
@given(networks=st.one_of(st.none(), st.integers(), st.text(max_size=5), st.floats()))
def test_start_builds_refuses_a_networks_flag_that_is_not_a_bool(networks):
    with pytest.raises(PondError, match="networks"):
        start_builds([], networks=networks)


def test_a_need_builds_its_kernels_now_and_queues_the_others_ahead(monkeypatch):
    got: list = []
    monkeypatch.setattr(cnative, "prebuild", lambda libs, ahead=True: got.append(([n for n, _, _ in libs], ahead)))
    nn_native._prebuild(("pond_chain",))  # inference first: the chain kernel now, training's after it
    assert got == [(["pond_chain"], False), (["pond_lif", "pond_lif_chain"], True)]
    got.clear()
    nn_native._prebuild(("pond_lif", "pond_lif_chain"))
    assert got == [(["pond_lif", "pond_lif_chain"], False), (["pond_chain"], True)]
