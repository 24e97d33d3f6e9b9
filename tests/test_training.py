"""Tests of pondlib.training: losses (hand-computed), fit (learns, deterministic, freezes), evaluate."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from pondlib import nn
from pondlib.datasets import EventDataset, load_digits_events
from pondlib.errors import PondError
from pondlib.training import (
    accuracy,
    cross_entropy_max,
    cross_entropy_sum,
    evaluate,
    firing_rate_regularizer,
    fit,
    get_loss,
    mse,
    output_vmem,
    predict,
)


def small_net(hidden=24, seed=0):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    return nn.Sequential(
        nn.Linear(16, hidden, key=k1),
        nn.LIF(hidden, tau_mem=0.0155, tau_syn=0.0014, max_spikes_per_dt=31),
        nn.Linear(hidden, 10, key=k2),
        nn.LIF(10, tau_mem=0.0155, tau_syn=0.0014, max_spikes_per_dt=1),
    )


@pytest.fixture(scope="module")
def digits():
    d = load_digits_events(T=10)
    return d.x_train[:320], d.y_train[:320], d.x_test, d.y_test


# -- losses ---------------------------------------------------------------------------------------------
def test_cross_entropy_sum_by_hand():
    s = np.zeros((2, 4, 3))
    s[0, :2, 0] = 1  # counts [2, 0, 0], label 0
    s[1, :, 2] = 1  # counts [0, 0, 4], label 1
    expected = ((-2 + math.log(math.exp(2) + 2)) + (-0 + math.log(2 + math.exp(4)))) / 2
    assert float(cross_entropy_sum(jnp.asarray(s), jnp.array([0, 1]))) == pytest.approx(expected, rel=1e-6)


def test_cross_entropy_max_uses_the_time_maximum():
    v = jnp.array([[[0.0, 3.0], [1.0, -1.0], [0.5, 0.0]]])  # max over time [1, 3]
    assert float(cross_entropy_max(v, jnp.array([1]))) == pytest.approx(math.log(1 + math.exp(-2)), rel=1e-6)


def test_mse_by_hand():
    assert float(mse(jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.zeros((2, 2)))) == pytest.approx(7.5)


def test_firing_rate_regularizer_by_hand():
    s = np.zeros((2, 5, 2))
    s[:, :, 0] = 1.0  # rate 1.0
    s[0, 0, 1] = 1.0  # rate 0.1
    rec = {"1_LIF/spikes": jnp.asarray(s), "1_LIF/vmem": jnp.zeros((2, 5, 2))}
    both = ((1.0 - 0.2) ** 2 + (0.1 - 0.2) ** 2) / 2
    assert float(firing_rate_regularizer(rec, 0.2, weight=3.0)) == pytest.approx(3 * both, rel=1e-5)
    upper = (1.0 - 0.2) ** 2 / 2
    assert float(firing_rate_regularizer(rec, 0.2, upper_only=True)) == pytest.approx(upper, rel=1e-5)
    with pytest.raises(PondError, match="regularizer"):
        firing_rate_regularizer(rec, 0.2, keys=["9_LIF/spikes"])


def test_output_vmem_picks_the_last_layer():
    rec = {
        "1_LIF/vmem": jnp.zeros((1, 2, 5)),
        "10_LIF/vmem": jnp.ones((1, 2, 3)),
        "3_LIF/vmem": jnp.zeros((1, 2, 4)),
        "10_LIF/spikes": jnp.zeros((1, 2, 3)),
    }
    assert output_vmem(rec).shape == (1, 2, 3)
    with pytest.raises(PondError, match="membrane"):
        output_vmem({"1_LIF/spikes": jnp.zeros((1, 2, 3))})


def test_loss_names():
    out = jnp.zeros((2, 3, 4)).at[:, :, 1].set(1.0)
    rec = {"3_LIF/vmem": out}
    labels = jnp.array([1, 1])
    assert float(get_loss("cross_entropy_sum")(out, rec, labels)) == pytest.approx(
        float(cross_entropy_sum(out, labels))
    )
    assert float(get_loss("cross_entropy_max")(out, rec, labels)) == pytest.approx(
        float(cross_entropy_max(out, labels))
    )
    assert float(get_loss("mse")(out, rec, labels)) == pytest.approx(0.0)
    with pytest.raises(PondError, match="loss"):
        get_loss("hinge")


# -- fit ------------------------------------------------------------------------------------------------
def test_fit_decreases_the_loss_and_learns(digits):
    x, y, xt, yt = digits
    net = small_net()
    before = evaluate(net, xt, yt)
    trained, hist = fit(
        net,
        (x, y),
        "cross_entropy_sum",
        optimizer=optax.adam(3e-3),
        epochs=6,
        batch_size=32,
        key=jax.random.PRNGKey(1),
        frozen=("tau_mem", "tau_syn"),
        progress=False,
    )
    assert set(hist) == {"loss", "accuracy"} and len(hist["loss"]) == 6
    assert hist["loss"][-1] < 0.8 * hist["loss"][0]
    assert hist["accuracy"][-1] > hist["accuracy"][0]
    after = evaluate(trained, xt, yt)
    assert after > max(0.3, before + 0.1)
    # the input network is untouched and the frozen fields did not move
    np.testing.assert_array_equal(np.asarray(net.layers[0].weight), np.asarray(small_net().layers[0].weight))
    np.testing.assert_array_equal(np.asarray(trained.layers[1].tau_mem), np.asarray(net.layers[1].tau_mem))
    assert not np.allclose(np.asarray(trained.layers[0].weight), np.asarray(net.layers[0].weight))
    assert not np.allclose(np.asarray(trained.layers[1].threshold), np.asarray(net.layers[1].threshold))


def test_fit_is_deterministic_given_the_key(digits):
    x, y = digits[0][:128], digits[1][:128]
    runs = [
        fit(small_net(8), (x, y), epochs=2, batch_size=32, key=jax.random.PRNGKey(k), progress=False) for k in (5, 5, 6)
    ]
    leaves = [jax.tree_util.tree_leaves(r[0]) for r in runs]
    for a, b in zip(leaves[0], leaves[1]):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert runs[0][1] == runs[1][1]
    assert any(not np.array_equal(np.asarray(a), np.asarray(c)) for a, c in zip(leaves[0], leaves[2]))


def test_fit_accepts_a_dataset_and_a_callable_loss(digits):
    x, y, xt, yt = digits
    d = EventDataset(x[:96], y[:96], xt, yt, "a subset")
    calls = []

    def loss(out, rec, labels):
        calls.append(out.shape)
        return cross_entropy_sum(out, labels) + firing_rate_regularizer(rec, 0.1, keys=["1_LIF/spikes"])

    _, hist = fit(small_net(8), d, loss, epochs=2, batch_size=32, progress=False)
    assert calls == [(32, 10, 10)]  # traced once: 2 epochs of 96 // 32 = 3 steps of one shape
    assert np.isfinite(hist["loss"][0])


def test_fit_progress_bar_reports(digits, capsys):
    from rich.console import Console

    x, y = digits[0][:64], digits[1][:64]
    console = Console(force_terminal=False, width=120)
    fit(small_net(8), (x, y), epochs=1, batch_size=32, progress=True, console=console)
    out = capsys.readouterr().out
    assert "training" in out and "loss" in out and "2/2" in out


def test_fit_reports_a_nan_loss(digits):
    x, y = digits[0][:64], digits[1][:64]
    with pytest.raises(PondError, match="training loss"):
        fit(small_net(8), (x, y), lambda o, r, l: jnp.nan * jnp.sum(o), epochs=1, batch_size=32, progress=False)


@pytest.mark.parametrize(
    "kwargs, match",
    [({"epochs": 0}, "epochs"), ({"batch_size": 0}, "batch_size"), ({"batch_size": 10_000}, "batch_size")],
)
def test_fit_bad_arguments(digits, kwargs, match):
    x, y = digits[0][:64], digits[1][:64]
    with pytest.raises(PondError, match=match):
        fit(small_net(8), (x, y), progress=False, **kwargs)


def test_fit_bad_data():
    with pytest.raises(PondError, match="labels"):
        fit(small_net(8), (np.zeros((4, 8, 16)), np.zeros(3, dtype=int)), progress=False)
    with pytest.raises(PondError, match="training data"):
        fit(small_net(8), np.zeros((4, 8, 16)), progress=False)


# -- evaluate -------------------------------------------------------------------------------------------
def test_evaluate_by_hand():
    net = nn.Sequential(nn.Linear(2, 2, weight=jnp.eye(2)), nn.LIF(2))
    x = np.zeros((3, 4, 2))
    x[0, :, 0] = 2
    x[1, :, 1] = 2
    x[2, :, 0] = 2
    assert evaluate(net, x, np.array([0, 1, 1])) == pytest.approx(2 / 3)
    np.testing.assert_array_equal(predict(net, x), [0, 1, 0])


def test_evaluate_batching_does_not_change_the_result(digits):
    _, _, xt, yt = digits
    net = small_net(16)
    whole = evaluate(net, xt[:100], yt[:100], batch_size=1000)
    assert evaluate(net, xt[:100], yt[:100], batch_size=7) == whole
    out, _, _ = net(xt[:100].astype(np.float32))
    assert accuracy(np.asarray(out), yt[:100]) == whole


def test_evaluate_rejects_bad_shapes():
    with pytest.raises(PondError, match="input shape"):
        evaluate(small_net(4), np.zeros((4, 16)), np.zeros(4, dtype=int))
    with pytest.raises(PondError, match="labels"):
        evaluate(small_net(4), np.zeros((4, 8, 16)), np.zeros(4))


# -- devices (data parallelism; the 2-device runs are in tests/nn/test_parallel.py) ---------------------
def test_devices_option_one_device_and_bad_values():
    net = nn.Sequential(nn.Linear(2, 2, weight=jnp.eye(2)), nn.LIF(2))
    x = np.zeros((3, 4, 2))
    x[0, :, 0] = 2
    x[1, :, 1] = 2
    np.testing.assert_array_equal(predict(net, x, devices=1), [0, 1, 0])
    assert evaluate(net, x, np.array([0, 1, 1]), devices=[jax.devices()[0]]) == pytest.approx(2 / 3)
    for bad, match in [(0, "devices"), ("gpu", "devices"), ([], "empty"), (jax.device_count() + 1, "devices")]:
        with pytest.raises(PondError, match=match):
            predict(net, x, devices=bad)
        with pytest.raises(PondError, match=match):
            fit(net, (x, np.array([0, 1, 1])), batch_size=3, progress=False, devices=bad)
