"""Siracusa device-aware training: bit-exact forward vs SiracusaSim, gradients, export round trip, bad input."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings

from pondlib import nn
from pondlib.devices.siracusa import SiracusaSim, mapper, quantize_input
from pondlib.devices.siracusa.aware import export, siracusa_aware
from pondlib.errors import GraphError, PondError, QuantizationError
from tests.strategies import assert_pond_error, bad_types, non_finite_arrays


def _net(seed: int = 0, scale: float = 1.0) -> nn.Sequential:
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    return nn.Sequential(
        nn.Linear(5, 7, key=k1, weight=jax.random.normal(k1, (5, 7)) * scale),
        nn.LIF(7, tau_mem=0.02, threshold=jnp.linspace(0.6, 1.2, 7), dt=1e-3),
        nn.Linear(7, 3, key=k2, weight=jax.random.normal(k2, (7, 3)) * 0.5 + 0.4),
        nn.LIF(3, tau_mem=0.01, dt=1e-3),
    )


def _data(seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 6, (6, 10, 5)).astype(np.float32)


def _check_exact(model, x) -> None:
    layers, kwargs = export(model)
    spec = mapper(layers, **kwargs)
    out, _, rec = SiracusaSim(spec.config).evolve(quantize_input(x, spec.config), record=True)
    mout, _, mrec = model(x, record=True)
    assert np.array_equal(np.asarray(mout), out)
    for i in range(model.n_layers):
        assert np.array_equal(np.asarray(mrec[f"lif{i}/spikes"]), rec[f"lif{i}/spikes"])
        assert np.array_equal(np.asarray(mrec[f"lif{i}/v"]), rec[f"lif{i}/v"])
        assert np.array_equal(np.asarray(mrec[f"fc{i}/acc"]), rec[f"fc{i}/acc"])


@pytest.mark.parametrize(("reset", "compare"), [("subtract", ">="), ("zero", ">")])
def test_forward_bit_exact_with_simulator(reset, compare):
    x = _data()
    model = siracusa_aware(_net(scale=3.0), calibration=x, reset=reset, compare=compare)
    rec = model(x, record=True)[2]
    # the comparison sees spikes and silences (with ">", a neuron at the largest threshold never fires)
    for i in range(2 if compare == ">=" else 1):
        z = np.asarray(rec[f"lif{i}/spikes"])
        assert 0 < z.sum() < z.size
    _check_exact(model, x)


def test_gradients_reach_weights_and_thresholds_and_trained_model_stays_exact():
    x = _data()
    model = siracusa_aware(_net(scale=3.0), calibration=x)

    def loss(m):
        return jnp.mean((m(x)[0].sum(1) - 2.0) ** 2)

    grads = eqx.filter_grad(loss)(model)
    for name in ("weight", "threshold", "gain", "alpha"):
        g = getattr(grads, name)
        assert all(np.all(np.isfinite(np.asarray(a))) for a in g)
        assert any(float(jnp.abs(a).sum()) > 0 for a in g), name
    # a few plain gradient steps move the integers; the export still reproduces them exactly
    before = model.integers()
    for _ in range(3):
        grads = eqx.filter_grad(loss)(model)
        model = jax.tree_util.tree_map(lambda p, g: p - 0.05 * g / (jnp.abs(g).max() + 1e-12), model, grads)
    after = model.integers()
    assert any(not np.array_equal(b[k], a[k]) for b, a in zip(before, after) for k in ("weight", "in_mul"))
    _check_exact(model, x)


def test_export_round_trip_reproduces_integers():
    x = _data()
    model = siracusa_aware(_net(seed=3), calibration=x)
    layers, kwargs = export(model)
    spec = mapper(layers, **kwargs)
    for i, ref in enumerate(model.integers()):
        gemm, lif = spec.config.layers[2 * i], spec.config.layers[2 * i + 1]
        assert np.array_equal(gemm.weight, ref["weight"])
        assert np.array_equal(lif.in_mul, ref["in_mul"]) and np.array_equal(lif.beta_mul, ref["beta_mul"])
        assert np.array_equal(lif.add, ref["add"]) and np.array_equal(lif.threshold, ref["threshold"])
        assert lif.shift == ref["shift"]
    assert spec.config.input_scale == model.input_scale
    assert kwargs["state_scale"] == {f"lif{i}": s for i, s in enumerate(model.state_scale)}


def test_starts_at_the_plain_mapping_with_its_headroom():
    x = _data()
    net = _net(seed=3)
    plain = mapper(net, calibration=x, drop_synapse=True)
    model = siracusa_aware(net, calibration=x)
    for i, ref in enumerate(model.integers()):
        gemm, lif = plain.config.layers[2 * i], plain.config.layers[2 * i + 1]
        assert np.array_equal(gemm.weight, ref["weight"])
        assert np.array_equal(lif.threshold, ref["threshold"])  # the same state scale as the mapper's
        assert np.allclose(lif.beta_mul / 2.0**lif.shift, ref["beta_mul"] / 2.0 ** ref["shift"], rtol=1e-3)
        assert np.allclose(lif.in_mul / 2.0**lif.shift, ref["in_mul"] / 2.0 ** ref["shift"], rtol=2e-3)
    # the calibrated membrane peak lies above the largest threshold: headroom, not saturation at it
    assert int(model.integers()[0]["threshold"].max()) < 2**15 - 1
    assert model.input_scale == plain.config.input_scale


def test_export_stays_exact_when_training_drives_the_membrane_past_the_calibration():
    """The old failure mode: a bias or gain grown by training raised the calibrated state scale, so the
    mapper moved every integer. With the pinned state scale the mapper reproduces them."""
    x = _data()
    model = siracusa_aware(_net(scale=3.0), calibration=x)
    model = eqx.tree_at(
        lambda m: m.bias, model, tuple(b + 0.5 * jnp.max(t) for b, t in zip(model.bias, model.threshold))
    )
    model = eqx.tree_at(lambda m: m.gain, model, tuple(g * 1.5 for g in model.gain))
    _check_exact(model, x)
    layers, kwargs = export(model)
    free = mapper(layers, calibration=x)  # calibrating again instead would move the integers
    pinned = mapper(layers, **kwargs)
    assert any(not np.array_equal(free.config.layers[k].threshold, pinned.config.layers[k].threshold) for k in (1, 3))


def test_fit_trains_it_unchanged():
    from pondlib.training import fit

    x = _data()
    y = np.arange(6) % 3
    model = siracusa_aware(_net(scale=3.0), calibration=x)
    trained, hist = fit(
        model, (x, y), "cross_entropy_sum", epochs=2, batch_size=3, key=jax.random.PRNGKey(0), progress=False
    )
    assert isinstance(trained, type(model)) and np.isfinite(hist["loss"][-1])


def test_bad_networks_and_options():
    x = _data()
    assert_pond_error(siracusa_aware, nn.Linear(5, 3, weight=np.ones((5, 3))), calibration=x, error=GraphError)
    assert_pond_error(
        siracusa_aware, nn.Sequential(nn.Linear(5, 3, weight=np.ones((5, 3)))), calibration=x, error=GraphError
    )
    syn2 = nn.Sequential(nn.Linear(5, 6, weight=np.ones((5, 6))), nn.LIF((6, 3)))
    assert_pond_error(siracusa_aware, syn2, calibration=x, error=GraphError)
    assert_pond_error(siracusa_aware, _net(), calibration=x[..., :4], error=QuantizationError)
    assert_pond_error(siracusa_aware, _net(), calibration=x, reset="hold", error=PondError)
    assert_pond_error(siracusa_aware, _net(), calibration=x, compare="<", error=PondError)
    assert_pond_error(siracusa_aware, _net(), calibration=x, state_bits=40, error=PondError)
    assert_pond_error(export, _net(), error=PondError)


@settings(max_examples=15, deadline=None)
@given(bad=non_finite_arrays((4, 3, 5)))
def test_non_finite_calibration_refused(bad):
    assert_pond_error(siracusa_aware, _net(), calibration=bad, error=QuantizationError)


@settings(max_examples=15, deadline=None)
@given(bad=bad_types())
def test_bad_calibration_types_refused(bad):
    assert_pond_error(siracusa_aware, _net(), calibration=bad, error=PondError)
