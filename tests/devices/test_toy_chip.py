"""A fourth chip defined entirely under tests/ (``toy_chip.py``), registered at run time: the commands
(``pond devices``, ``map``, ``simulate``, ``compile``) and the Python pipeline work on it with no pondlib file
edited, because nothing outside a chip's folder and the registry knows any chip by name."""

from __future__ import annotations

import numpy as np
import pytest

from pondlib.cli import main
from pondlib.devices import registry
from pondlib.errors import PondError
from tests.devices.toy_chip import ToyDevice, simulate


@pytest.fixture(scope="module")
def toy():
    device = registry.register(ToyDevice())
    yield device
    registry.unregister("toy")


@pytest.fixture(scope="module")
def net_file(tmp_path_factory):
    import jax

    from pondlib import nn
    from pondlib.io import save_network

    k1, k2 = jax.random.split(jax.random.PRNGKey(3))
    net = nn.Sequential(
        nn.Linear(8, 20, key=k1), nn.LIF(20, tau_mem=0.016), nn.Linear(20, 4, key=k2), nn.LIF(4, tau_mem=0.008)
    )
    d = tmp_path_factory.mktemp("toy")
    x = np.random.default_rng(0).poisson(0.8, (3, 25, 8))
    np.save(d / "x.npy", x)
    return net, save_network(net, d / "net.pond"), d / "x.npy"


def test_the_registry_lists_the_toy_after_the_builtin_chips(toy):
    assert registry.names()[-1] == "toy" and registry.get("toy") is toy
    with pytest.raises(PondError, match="registered"):
        registry.register(ToyDevice())


def test_pond_devices_lists_its_variants(toy, capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "Toy (tests only)" in out and "Toy small" in out and "(large)" in out


def test_pond_map_fits_and_reports_violations(toy, net_file, capsys):
    _, path, _ = net_file
    assert main(["map", str(path), "--device", "toy"]) == 1  # 24 neurons; the small variant has 16
    out = capsys.readouterr().out
    assert "Toy small: 1 design rule violation(s)" in out and "max_neurons" in out and "does not fit" in out
    assert main(["map", str(path), "--device", "toy", "--limits", "large"]) == 0
    out = capsys.readouterr().out
    assert "Resources on Toy large" in out and "fits Toy large" in out and "24 neurons" in out


def test_pond_simulate_runs_a_saved_configuration_recognised_by_content(toy, net_file, tmp_path, capsys):
    net, _, x_path = net_file
    mapped = toy.map(net, "large")
    cfg = tmp_path / "toy.npz"
    toy.save(mapped, cfg)
    rec = tmp_path / "rec.npz"
    assert main(["simulate", str(cfg), "--input", str(x_path), "--record", str(rec)]) == 0
    assert "Simulation on Toy large" in capsys.readouterr().out
    with np.load(rec) as z:
        np.testing.assert_array_equal(z["output"], simulate(mapped.config, np.load(x_path))[0])


def test_pond_compile_is_bit_exact_against_the_toy_simulator(toy, net_file, tmp_path, capsys):
    _, path, x_path = net_file
    out = tmp_path / "c"
    argv = ["compile", str(path), "--numerics", "toy", "--limits", "large", "-o", str(out), "--check", str(x_path)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "bit-exact: all 300 outputs equal pondlib's" in text


def test_the_python_pipeline_deploys_to_the_toy(toy, net_file):
    import pondlib
    from pondlib.codegen import generate, numerics
    from pondlib.datasets import EventDataset
    from pondlib.transform import device_aware

    net, _, _ = net_file
    rng = np.random.default_rng(1)
    x = rng.poisson(0.8, (40, 25, 8)).astype(np.int32)
    y = rng.integers(0, 4, 40)
    data = EventDataset(x[:20], y[:20], x[20:], y[20:], "random events")
    dep = pondlib.deploy(net, device="toy", data=data, aware=False)
    assert dep.name == "Toy large" and dep.output.shape == (20, 25, 4)
    np.testing.assert_array_equal(dep.output, simulate(dep.mapped.config, x[20:])[0])
    assert dep.report.resources[0].used == 24 and dep.checks == ()
    with pytest.raises(PondError, match="device-aware twin"):
        pondlib.deploy(net, device="toy", data=data, aware=True)
    with pytest.raises(PondError, match="toy has no device-aware twin"):
        device_aware(net, device="toy")
    assert "toy" in numerics()
    assert "toy.c" in generate(dep.mapped.config, "toy", name="toy").sources


def test_a_package_adds_a_chip_through_an_entry_point(monkeypatch):
    """``[project.entry-points."pondlib.devices"] toyplug = "tests.devices.toy_chip:ToyPlugin"`` in a package."""
    from types import SimpleNamespace

    def entry_points(group):
        assert group == registry.ENTRY_POINT_GROUP
        return [SimpleNamespace(name="toyplug", value="tests.devices.toy_chip:ToyPlugin")]

    monkeypatch.setattr(registry, "entry_points", entry_points)
    monkeypatch.setattr(registry, "_plugins", None)
    monkeypatch.setattr(registry, "_loaded", {})
    assert "toyplug" in registry.names() and "toyplug" not in registry._added
    assert type(registry.get("toyplug")).__name__ == "ToyPlugin"
    monkeypatch.setattr(registry, "_plugins", {"broken": "tests.devices.toy_chip:NoSuchClass"})
    with pytest.raises(PondError, match="cannot be loaded"):
        registry.get("broken")
