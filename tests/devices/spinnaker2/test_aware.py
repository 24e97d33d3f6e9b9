"""Device-aware training for SpiNNaker2 (issue 17, part A): :mod:`pondlib.devices.spinnaker2.aware`.

Checked: the float32 helpers against the simulator's own arithmetic (bit for bit); the device-aware
forward against :class:`SpiNNaker2Sim` on the mapped network for every neuron model and option (spikes,
membranes, currents and inputs of every population, bit for bit; the one residual, subnormals flushed
by XLA, bounded); gradients; the export -> mapper round trip; bad input.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.devices.spinnaker2 import LIFOptions, SpiNNaker2Sim, config_from_specification, f32_fma, mapper
from pondlib.devices.spinnaker2.aware import (
    SpiNNaker2LIF,
    export_spinnaker2,
    fma_f32,
    mul_f32,
    spinnaker2_aware,
)
from pondlib.errors import ConfigError, ConstraintError, GraphError, SimulationError
from pondlib.training import fit, get_loss
from tests.strategies import assert_pond_error, bad_types

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
F32_TINY = float(np.finfo(np.float32).tiny)


def plain_net(n_in: int = 10, n_hidden: int = 12, n_out: int = 4, seed: int = 0, tau_syn: float = 0.005):
    rng = np.random.default_rng(seed)
    return nn.Sequential(
        nn.Linear(n_in, n_hidden, weight=rng.normal(0.3, 1.0, size=(n_in, n_hidden))),
        nn.LIF(n_hidden, tau_mem=0.02, tau_syn=tau_syn, bias=rng.normal(0, 0.05, n_hidden)),
        nn.Linear(n_hidden, n_out, weight=rng.normal(0.3, 1.0, size=(n_hidden, n_out))),
        nn.LIF(n_out, tau_mem=0.01, tau_syn=tau_syn, threshold=0.7),
    )


def sim_of(spec):
    config, ok, msg = config_from_specification(spec)
    assert ok, msg
    return SpiNNaker2Sim.from_config(config)


@eqx.filter_jit
def run(aware, x):
    return aware(x, record=True)


def assert_equal_to_sim(aware, spec, x):
    out, _, rec = run(aware, jnp.asarray(x))
    sim_out, _, sim_rec = sim_of(spec).evolve(x, record=True)
    np.testing.assert_array_equal(np.asarray(out), sim_out)
    for i, pop in enumerate(spec.populations):
        for key in ("spikes", "input", "i_syn", "v"):
            got = np.asarray(rec[f"{i}_SpiNNaker2LIF/{key}"])
            want = sim_rec[f"{pop.name}.{key}"]
            assert np.array_equal(got, want), (pop.name, key, int(np.sum(got != want)))
        assert sim_rec[f"{pop.name}.spikes"].sum() > 0, f"{pop.name} never spikes: a weak test"
    return sim_out


# -- float32 arithmetic -----------------------------------------------------------------------------------
def test_fma_f32_and_mul_f32_match_the_simulators_arithmetic_bit_for_bit():
    rng = np.random.default_rng(1)
    n = 20000
    a = (rng.normal(size=n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    b = (rng.normal(size=n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    c = (rng.normal(size=n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    c[: n // 4] = -(a[: n // 4] * b[: n // 4])  # cancellation: only the product's low bits are left
    c[n // 4 : n // 2] = np.nextafter(c[: n // 4], np.float32(np.inf))
    fma = np.asarray(jax.jit(fma_f32)(a, b, c))
    np.testing.assert_array_equal(fma, f32_fma(a, b, c))
    assert np.sum(fma != a * b + c) > n // 10  # the two roundings do differ: the test can fail
    two = np.asarray(jax.jit(lambda a, b, c: mul_f32(a, b) + c)(a, b, c))
    np.testing.assert_array_equal(two, a * b + c)
    g = jax.grad(lambda a: jnp.sum(fma_f32(a, jnp.asarray(b[:8]), jnp.asarray(c[:8]))))(jnp.asarray(a[:8]))
    np.testing.assert_allclose(np.asarray(g), b[:8])


# -- forward == simulator ---------------------------------------------------------------------------
CASES = [
    ("lif_curr_exp_no_delay", LIFOptions(), False),
    ("lif_curr_exp", LIFOptions(fma=True), True),
    ("lif", LIFOptions(compare=">=", reset="to_v_reset", order="input_first"), True),
    ("lif_no_delay", LIFOptions(fma=True, order="input_first"), False),
    ("lif_curr_exp", LIFOptions(reset="to_v_reset", compare=">="), False),
]


@pytest.mark.parametrize("model,options,with_delays", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_forward_equals_the_simulator_on_the_mapped_network(model, options, with_delays):
    net = plain_net(seed=len(model))
    rng = np.random.default_rng(2)
    delays = None
    if with_delays:
        delays = {"0_Linear": rng.integers(0, 8, (10, 12)), "2_Linear": rng.integers(0, 8, (12, 4))}
    aware = spinnaker2_aware(net, neuron_model=model, options=options, delays=delays)
    spec = mapper(net, neuron_model=model, options=options, delays=delays)
    x = rng.integers(0, 3, size=(2, 40, 10)) * (rng.random((2, 40, 10)) < 0.4)
    assert_equal_to_sim(aware, spec, x)
    # the state carries membranes, currents and the spikes still in flight across calls
    out_a, state, _ = aware(jnp.asarray(x[:, :17]))
    out_b, _, _ = aware(jnp.asarray(x[:, 17:]), state)
    full = sim_of(spec).evolve(x)[0]
    np.testing.assert_array_equal(np.concatenate([np.asarray(out_a), np.asarray(out_b)], axis=1), full)


def test_only_residual_is_subnormals_flushed_by_xla():
    # beta = 1/2: after one big input and ~150 silent ticks the current is below float32's normal range
    net = plain_net(n_in=2, n_hidden=3, n_out=2, seed=5, tau_syn=1e-3 / np.log(2))
    spec = mapper(net, neuron_model="lif_curr_exp_no_delay")
    aware = spinnaker2_aware(net, neuron_model="lif_curr_exp_no_delay")
    x = np.zeros((200, 2), np.int64)
    x[:3] = 1
    out, _, rec = run(aware, jnp.asarray(x))
    sim_out, _, sim_rec = sim_of(spec).evolve(x, record=True)
    np.testing.assert_array_equal(np.asarray(out), sim_out)
    differ = 0
    for i, pop in enumerate(spec.populations):
        for key in ("v", "i_syn"):
            got, want = np.asarray(rec[f"{i}_SpiNNaker2LIF/{key}"]), sim_rec[f"{pop.name}.{key}"]
            bad = got != want
            differ += int(bad.sum())
            assert np.all(np.abs(want[bad]) < F32_TINY) and np.all(np.abs(got[bad] - want[bad]) < F32_TINY)
    assert differ > 0  # the residual exists (so the bound above is tested), and it is all below 1.2e-38


# -- gradients ------------------------------------------------------------------------------------------
def test_gradients_reach_weights_thresholds_and_offsets_of_every_layer():
    net = plain_net()
    aware = spinnaker2_aware(net)
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.integers(0, 2, size=(6, 30, 10)), jnp.float32)
    labels = jnp.asarray(rng.integers(0, 4, 6))
    loss = get_loss("cross_entropy_sum")

    @eqx.filter_grad
    def grad(m):
        out, _, rec = m(x, record=True)
        return loss(out, rec, labels)

    g = grad(aware)
    for layer in g.layers:
        for name in ("weight", "threshold", "i_offset"):
            arr = np.asarray(getattr(layer, name))
            assert np.all(np.isfinite(arr)) and np.any(arr != 0), name
        for name in ("alpha", "exc_decay", "delays"):
            assert not np.any(np.asarray(getattr(layer, name))), name  # constants of the chip


# -- export round trip -----------------------------------------------------------------------------------
@pytest.mark.parametrize("model", ["lif_curr_exp_no_delay", "lif_curr_exp"])
def test_export_then_mapper_reproduces_trained_parameters_exactly(model):
    net = plain_net(seed=7)
    rng = np.random.default_rng(4)
    delays = {"2_Linear": rng.integers(0, 3, (12, 4))} if model == "lif_curr_exp" else None
    aware = spinnaker2_aware(net, neuron_model=model, delays=delays)
    # "training": move weights off the mapper's grid (and shrink layer 2 below the word's range), thresholds,
    # offsets by arbitrary float32 amounts
    first, second = aware.layers
    first = eqx.tree_at(lambda m: m.weight, first, first.weight + rng.normal(0, 2.0, first.weight.shape))
    second = eqx.tree_at(lambda m: m.weight, second, second.weight * 0.37)
    second = eqx.tree_at(lambda m: m.threshold, second, second.threshold * 1.2345 + 0.001)
    first = eqx.tree_at(lambda m: m.i_offset, first, first.i_offset + rng.normal(0, 0.3, 12))
    trained = nn.Sequential(first, second)
    exp = export_spinnaker2(trained)
    assert [type(m).__name__ for m in exp.net.layers] == ["Linear", "LIF", "Linear", "LIF"]
    assert all(m.max_spikes_per_dt == 1 for m in exp.net.layers[1::2])
    spec = mapper(exp.net, **exp.mapper_kwargs)
    for layer, pop in zip(trained.layers, spec.populations):
        (proj,) = spec.projections_into(pop.name)
        w = np.clip(np.round(np.asarray(layer.weight)), -layer.w_max, layer.w_max)
        np.testing.assert_array_equal(proj.weights, w)
        np.testing.assert_array_equal(pop.threshold, np.asarray(layer.threshold))
        np.testing.assert_array_equal(pop.i_offset, np.asarray(layer.i_offset))
    assert np.abs(spec.projections[1].weights).max() < spec.projections[0].weights.max()  # below the range
    x = rng.integers(0, 2, size=(2, 30, 10))
    assert_equal_to_sim(trained, spec, x)


def test_fine_tuning_with_fit_keeps_the_network_exportable():
    net = plain_net()
    aware = spinnaker2_aware(net)
    rng = np.random.default_rng(6)
    x = rng.integers(0, 2, size=(32, 12, 10)).astype(np.float32)
    y = rng.integers(0, 4, 32)
    tuned, hist = fit(aware, (x, y), epochs=2, batch_size=16, progress=False)
    assert np.all(np.isfinite(hist["loss"]))
    assert np.any(np.asarray(tuned.layers[0].weight) != np.asarray(aware.layers[0].weight))
    exp = export_spinnaker2(tuned)
    assert_equal_to_sim(tuned, exp.spec, x[:4].astype(np.int64))


# -- bad input ---------------------------------------------------------------------------------------------
@SETTINGS
@given(bad=bad_types())
def test_a_network_that_is_not_linear_lif_pairs_is_refused(bad):
    assert_pond_error(spinnaker2_aware, bad, error=GraphError, match="Linear -> LIF")
    assert_pond_error(export_spinnaker2, bad, error=GraphError, match="SpiNNaker2LIF")


@SETTINGS
@given(model=st.one_of(st.text(max_size=8), bad_types()))
def test_an_unknown_neuron_model_is_refused(model):
    assert_pond_error(spinnaker2_aware, plain_net(), neuron_model=model, error=ConfigError, match="neuron_model")


def test_other_bad_arguments_are_refused_with_their_name():
    net = plain_net()
    lin = net.layers[0]
    assert_pond_error(spinnaker2_aware, nn.Sequential(nn.LIF(10), lin), error=GraphError, match="Linear -> LIF")
    rec = nn.Sequential(lin, nn.LIF(12, w_rec=np.zeros((12, 12))))
    assert_pond_error(spinnaker2_aware, rec, error=GraphError, match="recurrent")
    assert_pond_error(spinnaker2_aware, net, options="fma", error=ConfigError, match="options")
    assert_pond_error(spinnaker2_aware, net, options=LIFOptions(order="late"), error=ConfigError, match="order")
    assert_pond_error(spinnaker2_aware, net, surrogate=3.0, error=ConfigError, match="surrogate")
    assert_pond_error(spinnaker2_aware, net, delays=[1], error=ConfigError, match="delays")
    err = assert_pond_error(spinnaker2_aware, net, delays={"0_Linear": 2}, error=ConstraintError)
    assert "delay_range" in err.rules  # the no-delay word has no delay field
    aware = spinnaker2_aware(net)
    assert isinstance(aware.layers[0], SpiNNaker2LIF)
    bad_x = np.full((5, 10), np.nan)
    assert_pond_error(aware, bad_x, error=SimulationError)
    assert_pond_error(export_spinnaker2, net, error=GraphError, match="SpiNNaker2LIF")


def test_chip_unit_scale_is_the_geometric_mean_of_the_export_scales():
    from pondlib.devices.spinnaker2.aware import chip_unit_scale

    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    net = nn.Sequential(nn.Linear(8, 6, key=k1), nn.LIF(6), nn.Linear(6, 3, key=k2), nn.LIF(3))
    aware = spinnaker2_aware(net)
    scales = [m.export_scale for m in aware.layers]
    assert chip_unit_scale(aware) == pytest.approx(float(np.sqrt(scales[0] * scales[1])), rel=1e-12)
    assert_pond_error(chip_unit_scale, net, error=GraphError, match="SpiNNaker2LIF")
