"""Multi-process data parallelism (pondlib.distributed, and fit / evaluate / predict under jax.distributed).

Two processes on localhost, one CPU device each, joined by JAX's runtime with gloo collectives, run the
same script as one process does. Tolerances as in tests/nn/test_parallel.py: inference is per sample, so
predictions and accuracy are identical; training differs only in the order of the float32 sums over
the batch (each process sums its rows, then an all-reduce adds the two), a few ulps per gradient, through
Adam over 3 epochs x 3 steps: parameters within atol 1e-5, epoch losses within rtol 1e-5.

Failures must be errors, never hangs: a process that dies under a collective makes the other raise a
DistributedError at once; processes that disagree on their count, or a coordinator nobody runs, fail
within the timeout the test sets.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import equinox as eqx
import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib import distributed
from pondlib.errors import DistributedError
from pondlib.training import evaluate, fit, predict
from tests.strategies import assert_pond_error, bad_counts, bad_types

ROOT = Path(__file__).resolve().parents[1]
#: the module fixtures (a Ray instance / two launched processes) are built once: keep the tests on one worker
pytestmark = pytest.mark.xdist_group("distributed")
#: one CPU device per process, the repository importable by the launched processes
ENV = {"JAX_PLATFORMS": "cpu", "XLA_FLAGS": "", "PYTHONPATH": str(ROOT)}


def _problem():
    from pondlib import nn

    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    net = nn.Sequential(nn.Linear(4, 16, key=k1), nn.LIF(16), nn.Linear(16, 3, key=k2), nn.LIF(3))
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, (21, 20, 4)).astype(np.float32)
    y = rng.integers(0, 3, 21)
    return net, x, y


def train_job(devices=None) -> dict[str, np.ndarray]:
    """fit, predict and evaluate exactly as a user's script would; run in every launched process (and here)."""
    net, x, y = _problem()
    trained, hist = fit(net, (x[:18], y[:18]), epochs=3, batch_size=6, progress=False, devices=devices)
    res = {"loss": np.asarray(hist["loss"]), "processes": np.asarray(jax.process_count())}
    res["devices"] = np.asarray(jax.device_count())
    for i, leaf in enumerate(jax.tree_util.tree_leaves(eqx.filter(trained, eqx.is_array))):
        res[f"param{i}"] = np.asarray(leaf)
    res["pred"] = predict(trained, x, batch_size=8, devices=devices)
    res["acc"] = np.asarray(evaluate(trained, x, y, batch_size=8, devices=devices))
    return res


def train_then_die_job(out: str) -> None:
    """In each launched process: :func:`train_job`, results saved; then process 1 dies and process 0, still
    predicting (a gather across processes each time), must fail with a DistributedError, not wait."""
    np.savez(Path(out) / f"{jax.process_index()}.npz", **train_job())
    net, x, _ = _problem()
    from jax.experimental import multihost_utils

    multihost_utils.sync_global_devices("trained")  # both done training: the survivor's predict is compiled
    if jax.process_index() == 1:
        os._exit(3)
    for _ in range(10**6):
        predict(net, x, batch_size=8)


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory) -> tuple[list[dict[str, np.ndarray]], DistributedError, float]:
    """One launch of 2 processes: their results, the error of the run, and how long the run took."""
    out = tmp_path_factory.mktemp("distributed")
    t0 = time.monotonic()
    # which failure the launcher sees first depends on timing: process 1's exit 3 or process 0's error after it
    with pytest.raises(DistributedError, match=r"process [01] failed") as info:
        distributed.launch(train_then_die_job, 2, args=(str(out),), env=ENV, timeout=300, grace=30)
    elapsed = time.monotonic() - t0
    results = []
    for pid in range(2):
        with np.load(out / f"{pid}.npz") as data:
            results.append(dict(data))
    return results, info.value, elapsed


def test_two_processes_equal_one(two_processes):
    results, _, _ = two_processes
    one = train_job(devices=1)
    assert len(results) == 2
    for res in results:
        assert int(res["processes"]) == 2 and int(res["devices"]) == 2
        np.testing.assert_allclose(res["loss"], one["loss"], rtol=1e-5)
        keys = [k for k in one if k.startswith("param")]
        assert keys
        for k in keys:
            np.testing.assert_allclose(res[k], one[k], rtol=0, atol=1e-5, err_msg=k)
        np.testing.assert_array_equal(res["pred"], one["pred"])
        assert float(res["acc"]) == float(one["acc"])
    net, _, _ = _problem()
    assert np.abs(one["param0"] - np.asarray(net.layers[0].weight)).max() > 1e-4  # training moved the weights
    # both processes hold the same replicated parameters, bit for bit
    for k in results[0]:
        np.testing.assert_array_equal(results[0][k], results[1][k], err_msg=k)


def test_a_dying_process_is_an_error_not_a_hang(two_processes):
    _, err, elapsed = two_processes
    assert elapsed < 250  # bounded: the survivor did not wait for its peer
    assert err.codes[1] == 3
    assert err.codes[0] == 1  # the survivor stopped by itself, with a DistributedError
    assert "DistributedError" in err.logs[0], err.logs[0][-3000:]
    assert "another process stopped under a collective" in err.logs[0]
    assert "predict, process 0" in err.logs[0]


def test_mismatched_process_counts_fail_on_every_process():
    port = distributed.free_port()
    script = "from pondlib import distributed; distributed.initialize(timeout=30)"
    procs = []
    for pid, n in ((0, 2), (1, 3)):  # process 1 believes in 3 processes
        env = dict(os.environ, **ENV, POND_COORDINATOR=f"127.0.0.1:{port}")
        env.update(POND_NUM_PROCESSES=str(n), POND_PROCESS_ID=str(pid))
        procs.append(subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE, text=True))
    errs = [p.communicate(timeout=60)[1] for p in procs]
    for p, err in zip(procs, errs):  # refused on both sides by the handshake, before JAX starts
        assert p.returncode != 0
        assert "DistributedError" in err and "processes disagree on the cluster" in err, err[-2000:]
        assert "num_processes=3" in err


def test_unreachable_coordinator_is_a_clear_error():
    port = distributed.free_port()  # nobody listens there
    t0 = time.monotonic()
    with pytest.raises(DistributedError, match="coordinator not reachable") as info:
        distributed.initialize(f"127.0.0.1:{port}", 2, 1, timeout=2)
    assert time.monotonic() - t0 < 10
    assert f"127.0.0.1:{port}" in str(info.value) and "Fix:" in str(info.value)


def test_missing_process_and_busy_port_are_clear_errors():
    port = distributed.free_port()
    with pytest.raises(DistributedError, match=r"processes \[1\] did not arrive"):
        distributed.initialize(f"127.0.0.1:{port}", 2, 0, timeout=1)
    import socket

    with socket.socket() as busy:
        busy.bind(("", port + 1))
        with pytest.raises(DistributedError, match="handshake port"):
            distributed.initialize(f"127.0.0.1:{port}", 2, 0, timeout=1)


def test_one_process_needs_no_runtime():
    c = distributed.initialize("localhost:4000", 1, 0)
    assert c == distributed.Cluster("localhost:4000", 1, 0, "arguments") and not distributed.is_initialized()
    assert c.host == "localhost" and c.port == 4000


def test_cluster_from_env():
    assert distributed.cluster_from_env({}) is None
    env = {"POND_COORDINATOR": "[::1]:5000", "POND_NUM_PROCESSES": "2", "POND_PROCESS_ID": "1"}
    c = distributed.cluster_from_env(env)
    assert (c.host, c.port, c.num_processes, c.process_id) == ("::1", 5000, 2, 1)
    slurm = {"SLURM_NTASKS": "4", "SLURM_PROCID": "0", "SLURM_JOB_NODELIST": "n1", "POND_COORDINATOR_PORT": "7000"}
    assert distributed.cluster_from_env(slurm) == distributed.Cluster("n1:7000", 4, 0, "SLURM")
    with pytest.raises(DistributedError, match="not set"):
        distributed.cluster_from_env({"POND_COORDINATOR": "a:1"})
    with pytest.raises(DistributedError, match="SLURM_PROCID"):
        distributed.cluster_from_env({"SLURM_NTASKS": "2", "SLURM_PROCID": "2"})
    with pytest.raises(DistributedError, match="POND_NUM_PROCESSES"):
        distributed.cluster_from_env(dict(env, POND_NUM_PROCESSES="two"))


# -- bad input ------------------------------------------------------------------------------------------------
_ADDRESSES = st.one_of(
    bad_types(),
    st.text(max_size=12).filter(lambda s: ":" not in s),
    st.integers(65535, 10**6).map(lambda p: f"host:{p}"),
    st.just("host:0"),
    st.just("ho st:80"),
    st.just("host:"),
)


@settings(max_examples=30, deadline=None)
@given(address=_ADDRESSES)
def test_bad_addresses(address):
    assert_pond_error(distributed.check_address, address, match="coordinator_address", error=DistributedError)
    assert_pond_error(distributed.initialize, address, 2, 0, match="coordinator_address", error=DistributedError)


@settings(max_examples=30, deadline=None)
@given(n=st.one_of(bad_counts(), st.integers(65537, 10**9)), pid=st.one_of(bad_types(), st.integers(max_value=-1)))
def test_bad_counts_and_ids(n, pid):
    if n is not None:
        assert_pond_error(distributed.initialize, "h:1", n, 0, match="num_processes", error=DistributedError)
    if pid is not None:
        assert_pond_error(distributed.initialize, "h:1", 2, pid, match="process_id", error=DistributedError)
    assert_pond_error(distributed.initialize, "h:1", 2, 2, match="process_id", error=DistributedError)
    assert_pond_error(distributed.initialize, "h:1", 2, None, match="all three", error=DistributedError)


@settings(max_examples=20, deadline=None)
@given(bad=st.one_of(st.sampled_from([0.0, -1.0, float("nan"), float("inf"), 1e9]), bad_types()))
def test_bad_timeouts(bad):
    assert_pond_error(distributed.initialize, "h:1", 2, 0, timeout=bad, match="timeout", error=DistributedError)
    assert_pond_error(
        distributed.initialize, "h:1", 2, 0, heartbeat_timeout=bad, match="heartbeat_timeout", error=DistributedError
    )
    assert_pond_error(distributed.launch, train_job, 2, timeout=bad, match="timeout", error=DistributedError)


@settings(max_examples=20, deadline=None)
@given(target=st.one_of(bad_types(), st.sampled_from(["nomodule", "a b:c", "__main__:f", "m:", ":f", "m:f.g"])))
def test_bad_launch_targets(target):
    if callable(target):
        return
    assert_pond_error(distributed.launch, target, 2, match="target", error=DistributedError)


def test_bad_launch_arguments():
    assert_pond_error(distributed.launch, train_job, 0, match="num_processes", error=DistributedError)
    assert_pond_error(distributed.launch, train_job, 2, args=5, match="args", error=DistributedError)
    assert_pond_error(distributed.launch, train_job, 2, env=[1], match="env", error=DistributedError)
    assert_pond_error(distributed.launch, lambda: 0, 2, match="target", error=DistributedError)


def test_peer_failures_translates_only_collective_errors_of_several_processes(monkeypatch):
    from pondlib.errors import PondError
    from pondlib.nn import parallel

    def raising(err):
        with parallel.peer_failures("fit"):
            raise err

    with pytest.raises(ValueError, match="Gloo"):  # one process: untouched
        raising(ValueError("Gloo AllGather failed: Connection reset by peer"))
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    monkeypatch.setattr(jax, "process_index", lambda: 1)
    with pytest.raises(DistributedError, match="fit, process 1: another process stopped") as info:
        raising(ValueError("UNKNOWN: Gloo AllGather failed: Connection reset by peer"))
    assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(ValueError, match="shapes"):  # not a collective's error
        raising(ValueError("bad shapes"))
    with pytest.raises(PondError, match="own"):
        raising(PondError("own error"))


def test_initialize_after_jax_started_fails_on_every_process():
    import threading

    jax.numpy.ones(1).block_until_ready()  # this process computes already: too late for jax.distributed
    port = distributed.free_port()
    errors = {}

    def peer():
        try:
            distributed.initialize(f"127.0.0.1:{port}", 2, 1, timeout=20)
        except DistributedError as err:
            errors[1] = err

    t = threading.Thread(target=peer)
    t.start()
    with pytest.raises(DistributedError, match="initialize came too late") as info:
        distributed.initialize(f"127.0.0.1:{port}", 2, 0, timeout=20)
    t.join(30)
    assert "JAX already computing in process(es) [0, 1]" in str(info.value)
    assert "initialize came too late" in str(errors[1]) and "before anything else uses JAX" in str(errors[1])
    assert not distributed.is_initialized()


@settings(max_examples=30, deadline=None)
@given(
    var=st.sampled_from(["POND_NUM_PROCESSES", "POND_PROCESS_ID", "SLURM_NTASKS", "SLURM_PROCID"]),
    text=st.one_of(st.text(max_size=6).filter(lambda s: not s.strip().isdigit()), st.just("-1"), st.just("99999999")),
)
def test_bad_environment_values(var, text):
    env = {"POND_COORDINATOR": "h:1", "POND_NUM_PROCESSES": "2", "POND_PROCESS_ID": "0"}
    if var.startswith("SLURM"):
        env = {"SLURM_NTASKS": "2", "SLURM_PROCID": "0", "SLURM_JOB_NODELIST": "n1"}
    env[var] = text
    assert_pond_error(distributed.cluster_from_env, env, match=var, error=DistributedError)
