"""Data parallelism (pondlib.nn.parallel and the ``devices=`` option of fit / evaluate / predict).

JAX fixes its device count when it starts, so the 2-device runs happen in a subprocess started with
``XLA_FLAGS=--xla_force_host_platform_device_count=2`` (:func:`_worker`); this process computes the same
things on one device and compares.

Tolerances. Inference is per sample: a device runs exactly the computation of a one-device call on its
rows, so outputs, records, predictions and accuracies must be *identical*. Training differs only in the
order of the float32 sums over the batch (each device sums its rows, then an all-reduce adds the two
partial sums): a reassociation error of a few ulps (float32 eps = 1.2e-7) per gradient, passed through
Adam (an update of at most lr = 1e-3 per step whose relative error is that of the gradient) over
3 epochs x 6 steps. With parameters of order 1 that is ~1e-6 after 18 steps; we allow atol 1e-5 on
the parameters and rtol 1e-5 on the epoch losses (observed: 3e-8 and 0).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from pondlib import nn
from pondlib.errors import PondError
from pondlib.nn import native, parallel
from pondlib.training import evaluate, fit, predict
from tests.strategies import assert_pond_error, bad_counts, bad_types

ROOT = Path(__file__).resolve().parents[2]


def _problem():
    """A small network, inputs with a batch (21) that no device count divides, and labels."""
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    net = nn.Sequential(nn.Linear(4, 16, key=k1), nn.LIF(16), nn.Linear(16, 3, key=k2), nn.LIF(3))
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, (21, 20, 4)).astype(np.float32)
    y = rng.integers(0, 3, 21)
    return net, x, y


def _results(devices) -> dict[str, np.ndarray]:
    """Everything compared between one and two devices, as numpy arrays."""
    net, x, y = _problem()
    out, state, rec = parallel.sharded_call(net, x, record=True, devices=devices)
    trained, hist = fit(net, (x[:18], y[:18]), epochs=3, batch_size=6, progress=False, devices=devices)
    res = {"out": out, "vmem": rec["3_LIF/vmem"], "state": jax.tree_util.tree_leaves(state)[-1]}
    res["loss"] = np.asarray(hist["loss"])
    for i, leaf in enumerate(jax.tree_util.tree_leaves(eqx.filter(trained, eqx.is_array))):
        res[f"param{i}"] = leaf
    res["pred"] = predict(net, x, batch_size=8, devices=devices)
    res["acc"] = np.asarray(evaluate(net, x, y, batch_size=8, devices=devices))
    # a user's own jit with the batch sharded by XLA's partitioner (no shard_map): same gradients
    xg = x[:20] if devices == 1 else jax.device_put(x[:20], NamedSharding(parallel.data_mesh(2), P("batch")))
    grad = jax.jit(jax.grad(lambda n, xb: jnp.sum(n(xb)[0] * jnp.arange(3.0))))
    res["grad_native"] = np.asarray(native.available() and "pondlib_lif" in grad.lower(net, xg).as_text())
    for i, leaf in enumerate(jax.tree_util.tree_leaves(grad(net, xg))):
        res[f"grad{i}"] = leaf
    return {k: np.asarray(v) for k, v in res.items()}


def _worker(path: str) -> None:
    """Run in the 2-device subprocess: save the 2-device results and the checks that need 2 devices."""
    assert jax.device_count() == 2
    res = _results(2)
    net, x, y = _problem()
    out, _, _ = parallel.sharded_call(net, x)
    res["sharded_spec"] = np.asarray(len(out.sharding.device_set) == 2)
    # a plain call on a batch splits it over both devices too, with the same numbers
    plain, _, plain_rec = net(x, record=True)
    res["plain_out"], res["plain_vmem"] = np.asarray(plain), np.asarray(plain_rec["3_LIF/vmem"])
    res["plain_split"] = np.asarray(len(plain.sharding.device_set) == 2)
    with parallel.single_device():
        res["plain_single"] = np.asarray(len(net(x)[0].sharding.device_set) == 1)
    res["auto_devices"] = np.asarray(len(parallel.devices()))
    with parallel.single_device():
        res["single_devices"] = np.asarray(len(parallel.devices()))
    try:
        fit(net, (x, y), epochs=1, batch_size=7, progress=False, devices=2)
        res["odd_batch_refused"] = np.asarray(False)
    except PondError as err:
        res["odd_batch_refused"] = np.asarray("multiple of the 2 devices" in str(err))
    try:
        parallel.shard_batch(x, parallel.data_mesh())
        res["shard_refused"] = np.asarray(False)
    except PondError as err:
        res["shard_refused"] = np.asarray("pad_batch" in str(err))
    # automatic devices: the largest count that divides the batch size
    from pondlib.training import _train_mesh

    res["auto_odd_mesh"] = np.asarray(_train_mesh(None, 7) is None and _train_mesh(None, 8).devices.size == 2)
    np.savez(path, **res)


@pytest.fixture(scope="module")
def two_devices(tmp_path_factory) -> dict[str, np.ndarray]:
    path = tmp_path_factory.mktemp("parallel") / "two.npz"
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    script = f"from tests.nn.test_parallel import _worker; _worker({str(path)!r})"
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(path) as data:
        return dict(data)


@pytest.fixture(scope="module")
def one_device() -> dict[str, np.ndarray]:
    return _results(1)


def test_two_device_inference_identical(two_devices, one_device):
    assert bool(two_devices["sharded_spec"])
    assert int(two_devices["auto_devices"]) == 2 and int(two_devices["single_devices"]) == 1
    assert one_device["out"].shape == (21, 20, 3) and one_device["out"].sum() > 0  # the net does spike
    for k in ("out", "vmem", "state", "pred", "acc"):
        np.testing.assert_array_equal(two_devices[k], one_device[k], err_msg=k)
    # plain calls: split automatically (off inside single_device), the same numbers
    assert bool(two_devices["plain_split"]) and bool(two_devices["plain_single"])
    np.testing.assert_array_equal(two_devices["plain_out"], one_device["out"])
    np.testing.assert_array_equal(two_devices["plain_vmem"], one_device["vmem"])


def test_two_device_training_equal(two_devices, one_device):
    np.testing.assert_allclose(two_devices["loss"], one_device["loss"], rtol=1e-5)
    keys = [k for k in one_device if k.startswith("param")]
    assert keys
    for k in keys:
        np.testing.assert_allclose(two_devices[k], one_device[k], rtol=0, atol=1e-5, err_msg=k)
    net, _, _ = _problem()
    w0 = np.asarray(net.layers[0].weight)
    assert np.abs(one_device["param0"] - w0).max() > 1e-4  # training moved the weights


def test_two_device_gradient_of_a_partitioned_batch(two_devices, one_device):
    assert bool(two_devices["grad_native"]) == bool(one_device["grad_native"]) == native.available()
    keys = [k for k in one_device if k.startswith("grad") and k != "grad_native"]
    assert keys and any(np.abs(one_device[k]).max() > 0 for k in keys)
    for k in keys:
        np.testing.assert_allclose(two_devices[k], one_device[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_two_device_refusals(two_devices):
    assert bool(two_devices["odd_batch_refused"]) and bool(two_devices["shard_refused"])
    assert bool(two_devices["auto_odd_mesh"])


def test_sharded_call_matches_plain_call():
    net, x, _ = _problem()
    x = x[:3, :8]
    out, state, rec = parallel.sharded_call(net, x, record=True)
    ref_out, ref_state, ref_rec = net(x, record=True)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ref_out))
    np.testing.assert_array_equal(np.asarray(rec["1_LIF/vmem"]), np.asarray(ref_rec["1_LIF/vmem"]))
    # a state passed back continues the run, as in a plain call
    out2, _, _ = parallel.sharded_call(net, x, state=state)
    np.testing.assert_array_equal(np.asarray(out2), np.asarray(net(x, state=ref_state)[0]))


def test_pad_and_shard_batch():
    xp, n = parallel.pad_batch(jnp.ones((3, 2)), 4)
    assert xp.shape == (4, 2) and n == 3 and float(xp[3].sum()) == 0.0
    same, n = parallel.pad_batch(np.ones((4, 2)), 2)
    assert same.shape == (4, 2) and n == 4
    mesh = parallel.data_mesh(jax.devices())
    assert parallel.data_mesh(mesh) is mesh
    np.testing.assert_array_equal(parallel.gather(parallel.shard_batch(np.arange(4.0), mesh)), np.arange(4.0))
    rep = parallel.replicate(nn.LIF(3), mesh)
    assert rep.tau_mem.sharding.is_fully_replicated


# -- bad input ------------------------------------------------------------------------------------
_NET, _X, _Y = _problem()


@settings(max_examples=15, deadline=None)
@given(
    bad=st.one_of(bad_counts(), bad_types(), st.integers(jax.device_count() + 1, 10**6)).filter(lambda v: v is not None)
)
def test_bad_devices(bad):
    if isinstance(bad, list) and bad:  # a list of ints: elements are not devices
        assert_pond_error(parallel.devices, bad, match="devices[0]")
    else:
        assert_pond_error(parallel.devices, bad, match="devices")
    net, x, y = _NET, _X, _Y
    assert_pond_error(predict, net, x, devices=bad, match="devices")
    assert_pond_error(fit, net, (x, y), batch_size=7, progress=False, devices=bad, match="devices")


def test_bad_devices_structures():
    dev = jax.devices()[0]
    assert_pond_error(parallel.devices, [], match="empty")
    assert_pond_error(parallel.devices, [dev, dev], match="repeated")
    assert_pond_error(parallel.devices, (dev, "cpu"), match="devices[1]")
    other = jax.sharding.Mesh(np.asarray(jax.devices()), ("data",))
    assert_pond_error(parallel.data_mesh, other, match="batch")
    assert_pond_error(parallel.shard_batch, np.ones(3), "mesh", match="Mesh")
    assert_pond_error(parallel.replicate, {}, other, match="batch")


@settings(max_examples=20, deadline=None)
@given(bad=st.one_of(bad_counts(), bad_types()))
def test_bad_pad_multiple(bad):
    assert_pond_error(parallel.pad_batch, np.ones((3, 2)), bad, match="multiple")


def test_bad_sharded_call_input():
    net, x, _ = _problem()
    assert_pond_error(parallel.sharded_call, net, x[0], match="batch axis")
    assert_pond_error(parallel.sharded_call, "net", x, match="net")
    assert_pond_error(parallel.sharded_call, net, x, record="yes", match="record")
    bad = x.copy()
    bad[2, 3, 1] = np.nan
    assert_pond_error(parallel.sharded_call, net, bad, match="input")
    assert_pond_error(parallel.pad_batch, np.float32(1.0), 2, match="batch axis")
    assert_pond_error(parallel.shard_batch, np.float32(1.0), parallel.data_mesh(), match="batch axis")


_CORES_SCRIPT = """
import jax
from pondlib.errors import PondError
from pondlib.nn import native, parallel
assert parallel.use_cpu_cores(3) == 3 and jax.device_count() == 3
try:
    parallel.use_cpu_cores(2)  # too late: JAX has started its devices
except PondError as err:
    assert "right after `import jax`" in str(err), err
else:
    raise AssertionError("accepted after start-up")
print("ok")
"""


def test_use_cpu_cores_sets_the_device_count_before_start_up_only():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    proc = subprocess.run([sys.executable, "-c", _CORES_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-2000:]


@settings(max_examples=15, deadline=None)
@given(st.one_of(bad_types().filter(lambda v: v is not None), st.integers(-3, 0), st.integers(4097, 10**6)))
def test_use_cpu_cores_refuses_bad_counts(n):
    assert_pond_error(parallel.use_cpu_cores, n, match="use_cpu_cores: n: got")
