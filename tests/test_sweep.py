"""Sweeps and bulk simulation (pondlib.sweep), in this process and on a local Ray instance.

The Ray instance is started once for the module with 2 CPUs (its workers can import ``tests``) and shut
down after. Trials are tiny (64 training samples, one epoch, one device, no fine-tuning) so the module
stays within its time budget; a trial is a pure function of its settings and the data, so Ray's rows
must equal this process's exactly, and a chip simulator's outputs over blocks run on workers must equal
one call bit for bit.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib import sweep
from pondlib.datasets import EventDataset, load_digits_events
from pondlib.devices import registry
from pondlib.errors import DistributedError, PondError
from tests.strategies import assert_pond_error, bad_counts, bad_positive_floats, bad_types

ROOT = Path(__file__).resolve().parents[1]
#: the module fixtures (a Ray instance / two launched processes) are built once: keep the tests on one worker
pytestmark = pytest.mark.xdist_group("ray")
#: the first registered device (any chip does: the sweep asks the registry)
DEVICE = registry.names()[0]
#: a trial: one epoch, 32 hidden neurons, deployed as trained
BASE = {"epochs": 1, "hidden": 32, "lr": 3e-3, "batch_size": 32}


@pytest.fixture(scope="module")
def data() -> EventDataset:
    d = load_digits_events(T=12)
    return EventDataset(d.x_train[:64], d.y_train[:64], d.x_test[:40], d.y_test[:40], "a slice of the digits")


def build(hidden: int, n_in: int, n_out: int, key) -> object:
    """The default network, except seed 1 (silent: zero weights) and seed 2 (raises, as a broken trial does)."""
    import equinox as eqx

    net = sweep.default_network(hidden, n_in, n_out, key)
    seed = int(np.asarray(key)[-1])  # PRNGKey(seed) holds [0, seed]
    if seed == 1:
        return eqx.tree_at(lambda n: (n.layers[0].weight, n.layers[2].weight), net, replace_fn=lambda w: w * 0)
    if seed == 2:
        raise RuntimeError("trial 2 is broken on purpose")
    return net


@pytest.fixture(scope="module")
def ray_session():
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
            runtime_env={"env_vars": {"PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}},
        )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def swept(ray_session, data, tmp_path_factory):
    """Seeds 0 (fine), 1 (silent as built) and 2 (raises) on 2 Ray workers, and seeds 1 and 2 in this process
    (seed 0's training here would cost ~10 s; the benchmark compares whole sweeps on 1 and 2 workers)."""
    out = tmp_path_factory.mktemp("sweep")
    trials = sweep.grid(seed=[0, 1, 2], **{k: [v] for k, v in BASE.items()})
    on_ray = sweep.run_sweep(trials, data, devices=[DEVICE], workers=2, out=out, build=build)
    here = sweep.run_sweep([trials[1], trials[2]], data, devices=DEVICE, build=build)
    return on_ray, here, out


def test_sweep_on_ray(swept):
    on_ray, here, _ = swept
    assert [r["trial"] for r in on_ray.rows] == [0, 1, 2] and on_ray.workers == 2
    ok = on_ray.rows[0]
    assert ok["status"] == "ok" and ok["device"] == DEVICE and ok["output_spikes"] > 0
    assert ok["gap_points"] == pytest.approx(100 * (ok["device_acc"] - ok["float_acc"]))
    np.testing.assert_array_equal(on_ray.gaps(DEVICE), [ok["gap_points"]])


def test_silent_and_raising_trials_are_rows_not_gaps(swept):
    on_ray, here, _ = swept
    silent, broken = on_ray.rows[1], on_ray.rows[2]
    assert silent["status"] == "silent" and silent["output_spikes"] == 0 and silent["device_acc"] is None
    assert "stopped before training" in silent["message"]
    assert broken["status"] == "error" and "RuntimeError: trial 2 is broken on purpose" in broken["message"]
    same = ("status", "float_acc", "device_acc", "gap_points", "output_spikes", "message")
    assert [{k: r[k] for k in same} for r in here.rows] == [{k: r[k] for k in same} for r in (silent, broken)]
    assert len(on_ray.errors) == 1 and "1 row(s) failed" in on_ray.table().caption
    assert len(on_ray.table().rows) == 3


def test_partial_results_are_on_disk(swept):
    on_ray, _, out = swept
    lines = (out / "trials.jsonl").read_text().splitlines()
    assert sorted(json.loads(ln)["trial"] for ln in lines) == [0, 1, 2]  # appended as each trial finished
    assert sorted(r["trial"] for r in sweep.load_rows(out)) == [0, 1, 2]
    csv = (out / "sweep.csv").read_text().splitlines()
    assert csv[0].split(",") == list(sweep.COLUMNS) and len(csv) == 4
    fig = sweep.plot_gaps(on_ray)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "device - float accuracy (points)" and [t.get_text() for t in ax.get_xticklabels()] == [
        DEVICE
    ]


def test_bulk_run_equals_one_process(ray_session):
    d = registry.get(DEVICE)
    net = sweep.default_network(32, 16, 10, jax.random.PRNGKey(3))
    mapped = d.map(net, d.limits(d.deploy_settings.limits))
    x = np.random.default_rng(0).poisson(0.8, (60, 12, 16)).astype(np.float32)
    ref_out, ref_rec = d.run(mapped, x, record=True)
    out, rec = sweep.bulk_run(mapped, x, workers=2, block=16, record=True)
    assert np.asarray(ref_out).sum() > 0  # the network does spike
    np.testing.assert_array_equal(out, np.asarray(ref_out))
    assert rec.keys() == ref_rec.keys() and rec
    for k in rec:
        np.testing.assert_array_equal(rec[k], np.asarray(ref_rec[k]), err_msg=k)


def test_a_trial_past_its_timeout_is_cancelled(ray_session, data):
    res = sweep.run_sweep([dict(BASE, epochs=10**5)], data, devices=[DEVICE], workers=1, trial_timeout=1.0)
    assert res.rows[0]["status"] == "timeout" and "cancelled" in res.rows[0]["message"]


def test_unreachable_ray_cluster_is_a_clear_error(data):
    from pondlib.distributed import free_port

    address = f"127.0.0.1:{free_port()}"  # nobody listens there
    with pytest.raises(DistributedError, match="Ray cluster not reachable") as info:
        sweep.run_sweep([BASE], data, devices=[DEVICE], workers=2, address=address)
    assert address in str(info.value) and "ray start --head" in str(info.value)
    with pytest.raises(DistributedError, match="Ray cluster not reachable"):
        sweep.bulk_run(
            _mapped(8),
            np.zeros((2, 3, 16)),
            address=f"ray://{address}",
        )


# -- grids, random search, bad input -------------------------------------------------------------------------
def _mapped(hidden: int):
    d = registry.get(DEVICE)
    return d.map(sweep.default_network(hidden, 16, 10, jax.random.PRNGKey(0)), d.limits(d.deploy_settings.limits))


def test_grid_and_random_search():
    g = sweep.grid(seed=[0, 1], lr=[1e-3, 1e-2])
    assert g == [{"seed": 0, "lr": 1e-3}, {"seed": 0, "lr": 1e-2}, {"seed": 1, "lr": 1e-3}, {"seed": 1, "lr": 1e-2}]
    r = sweep.random_search(50, key=1, seed=range(10), lr=sweep.LogUniform(1e-4, 1e-2))
    assert len(r) == 50 and all(1e-4 <= t["lr"] <= 1e-2 and t["seed"] in range(10) for t in r)
    assert r == sweep.random_search(50, key=1, seed=range(10), lr=sweep.LogUniform(1e-4, 1e-2))


_BAD_INTS = st.one_of(bad_counts(), bad_types(), st.just(2**40)).filter(lambda v: v is not None)
_BAD_RATES = st.one_of(bad_positive_floats(), st.floats(10.01, 1e30)).filter(lambda v: v is not None)


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(["seed", "epochs", "hidden", "batch_size", "lr"]), data_=st.data())
def test_bad_hyperparameters(name, data_):
    bad = data_.draw(_BAD_RATES if name == "lr" else _BAD_INTS.filter(lambda v: not (name == "seed" and v == 0)))
    assert_pond_error(sweep.grid, **{name: [bad]}, match=name)
    assert_pond_error(sweep.random_search, 2, **{name: [bad]}, match=name)
    assert_pond_error(sweep.run_sweep, [{name: bad}], object(), match=name)


@settings(max_examples=20, deadline=None)
@given(bad=st.one_of(bad_types(), st.text(min_size=1, max_size=6).filter(lambda s: s not in sweep.PARAMS)))
def test_bad_names_and_axes(bad):
    if isinstance(bad, str):
        assert_pond_error(sweep.grid, **{bad: [1]}, match="parameter name")
    assert_pond_error(sweep.grid, seed=bad if not isinstance(bad, list) else 5, match="seed")
    assert_pond_error(sweep.grid, seed=[], match="seed")


@settings(max_examples=20, deadline=None)
@given(
    bad=st.one_of(bad_counts(), bad_types()).filter(lambda v: v is not None),
    timeout=st.one_of(bad_positive_floats(), st.floats(-10, 0.99), st.just(1e9)).filter(lambda v: v is not None),
)
def test_bad_sweep_arguments(bad, timeout, data):
    assert_pond_error(sweep.run_sweep, [BASE], data, workers=bad, match="workers")
    assert_pond_error(sweep.run_sweep, [BASE], data, trial_timeout=timeout, match="trial_timeout")
    assert_pond_error(sweep.bulk_run, None, np.zeros((2, 3, 16)), match="mapped")
    assert_pond_error(sweep.random_search, bad, match="n")
    assert_pond_error(sweep.run_sweep, bad, data, match="trials")


def test_bad_sweep_structures(data, tmp_path):
    assert_pond_error(sweep.run_sweep, [], data, match="trials")
    assert_pond_error(sweep.run_sweep, {"seed": 0}, data, match="trials")
    assert_pond_error(sweep.run_sweep, [5], data, match="trials[0]")
    assert_pond_error(sweep.run_sweep, [BASE], object(), match="data")
    assert_pond_error(sweep.run_sweep, [BASE], data, devices=["nochip"], match="devices[0]")
    assert_pond_error(sweep.run_sweep, [BASE], data, devices=[], match="devices")
    assert_pond_error(sweep.run_sweep, [BASE], data, out=5, match="out")
    assert_pond_error(sweep.run_sweep, [BASE], data, workers=2, address="nohost", error=DistributedError)
    assert_pond_error(sweep.random_search, 2, seed=sweep.LogUniform(1, 2), match="seed")
    assert_pond_error(sweep.LogUniform, 0.0, 1.0, match="lo")
    assert_pond_error(sweep.LogUniform, 1.0, 0.5, match="hi")
    assert_pond_error(sweep.load_rows, tmp_path, match="trials file")
    (tmp_path / "trials.jsonl").write_text('{"trial": 0}\n')
    assert_pond_error(sweep.run_sweep, [BASE], data, out=tmp_path, match="earlier sweep")
    assert sweep.load_rows(tmp_path) == [{"trial": 0}]  # kept
    assert_pond_error(sweep.plot_gaps, "rows", match="result")
    empty = sweep.SweepResult((), None, 0.0, None)
    assert_pond_error(sweep.plot_gaps, empty, match="no successful trial")


def test_bad_bulk_arguments():
    mapped = _mapped(8)
    assert_pond_error(sweep.bulk_run, "mapped", np.zeros((2, 3, 16)), match="mapped")
    assert_pond_error(sweep.bulk_run, mapped, np.zeros((3, 16)), match="x")
    assert_pond_error(sweep.bulk_run, mapped, np.zeros((0, 3, 16)), match="x")
    assert_pond_error(sweep.bulk_run, mapped, np.zeros((2, 3, 16)), workers=0, match="workers")
    assert_pond_error(sweep.bulk_run, mapped, np.zeros((2, 3, 16)), block=3, match="block")
    assert_pond_error(sweep.bulk_run, mapped, np.zeros((2, 3, 16)), record="yes", match="record")
    with pytest.raises(PondError):
        sweep.run_trial(0, {"seed": -1}, None, [DEVICE])
