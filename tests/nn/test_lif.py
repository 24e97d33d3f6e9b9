"""Hand-derived trajectories of the float LIF model, and its error paths."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

from pondlib import nn
from pondlib.errors import GraphError, PondError, SimulationError

DT = 1e-3


def tau_for(decay: float) -> float:
    """The time constant whose per-step decay exp(-dt/tau) is ``decay``."""
    return -DT / math.log(decay)


def test_impulse_response_matches_closed_form():
    # A sub-threshold impulse x0 at t = 0:  isyn[t] = x0 b^(t+1),
    # vmem[t] = x0 b (a^(t+1) - b^(t+1)) / (a - b)
    a, b, x0, T = 0.9, 0.6, 0.5, 25
    lif = nn.LIF(1, tau_mem=tau_for(a), tau_syn=tau_for(b), threshold=100.0)
    x = np.zeros((T, 1), np.float32)
    x[0, 0] = x0
    out, _, rec = lif(x, record=True)
    t = np.arange(T)
    np.testing.assert_allclose(rec["isyn"][:, 0, 0], x0 * b ** (t + 1), rtol=2e-5)
    np.testing.assert_allclose(rec["vmem"][:, 0], x0 * b * (a ** (t + 1) - b ** (t + 1)) / (a - b), rtol=2e-5)
    assert float(out.sum()) == 0.0


def test_single_spike_trajectory_by_hand():
    # alpha = 0.5, beta = 0.25, threshold 1, input 6 at t = 0:
    # t0: isyn = 6 * .25 = 1.5; v = 1.5 -> 1 spike, v = 0.5
    # t1: isyn = .375; v = .25 + .375 = .625 -> no spike
    # t2: isyn = .09375; v = .3125 + .09375 = .40625
    lif = nn.LIF(1, tau_mem=tau_for(0.5), tau_syn=tau_for(0.25), threshold=1.0)
    x = np.array([[6.0], [0.0], [0.0]], np.float32)
    out, _, rec = lif(x, record=True)
    np.testing.assert_allclose(rec["isyn"][:, 0, 0], [1.5, 0.375, 0.09375], rtol=1e-5)
    np.testing.assert_allclose(rec["vmem"][:, 0], [0.5, 0.625, 0.40625], rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(out[:, 0]), [1, 0, 0])


def test_multi_spike_with_cap_and_subtractive_reset():
    # beta ~ 1 (tau_syn huge is not allowed to be inf: use 1e9 s), alpha = 1 - tiny; v = 7.5 with
    # threshold 1 and cap 3 -> 3 spikes, v = 4.5; next step v = 4.5 + 7.5 = 12 -> 3 spikes, v = 9
    lif = nn.LIF(1, tau_mem=1e9, tau_syn=1e9, threshold=1.0, max_spikes_per_dt=3)
    x = np.array([[7.5], [0.0]], np.float32)
    out, _, rec = lif(x, record=True)
    np.testing.assert_array_equal(np.asarray(out[:, 0]), [3, 3])
    np.testing.assert_allclose(rec["vmem"][:, 0], [4.5, 9.0], rtol=1e-5)
    # without the cap: floor(7.5) = 7 spikes, v = 0.5
    out2, _, rec2 = nn.LIF(1, tau_mem=1e9, tau_syn=1e9, threshold=1.0)(x, record=True)
    assert float(out2[0, 0]) == 7.0
    np.testing.assert_allclose(float(rec2["vmem"][0, 0]), 0.5, rtol=1e-5)


def test_two_synapses_channel_layout_and_decays():
    # shape (4, 2): channel i drives synapse i % 2 of neuron i // 2
    betas = np.array([[0.5, 0.8], [0.25, 0.9]])
    lif = nn.LIF((4, 2), tau_mem=tau_for(0.5), tau_syn=-DT / np.log(betas), threshold=100.0)
    x = np.zeros((2, 4), np.float32)
    x[0] = [1.0, 2.0, 3.0, 4.0]
    _, _, rec = lif(x, record=True)
    isyn = np.asarray(rec["isyn"])
    np.testing.assert_allclose(isyn[0], [[0.5, 1.6], [0.75, 3.6]], rtol=1e-5)
    np.testing.assert_allclose(isyn[1], isyn[0] * betas, rtol=1e-5)
    # vmem integrates the sum of both currents: t0: v = 0.5 + 1.6 = 2.1 for neuron 0
    np.testing.assert_allclose(rec["vmem"][0], [2.1, 4.35], rtol=1e-5)
    np.testing.assert_allclose(rec["vmem"][1], [2.1 * 0.5 + 0.25 + 1.28, 4.35 * 0.5 + 0.1875 + 3.24], rtol=1e-5)


def test_recurrence_has_one_step_delay():
    # neuron 0 spikes at t0; through w_rec[0, 1] = 2.2 it reaches neuron 1 at t1 (not t0)
    w_rec = np.array([[0.0, 2.2], [0.0, 0.0]], np.float32)
    lif = nn.LIF(2, tau_mem=tau_for(0.5), tau_syn=tau_for(0.5), threshold=1.0, w_rec=w_rec)
    x = np.array([[4.2, 0.0], [0.0, 0.0], [0.0, 0.0]], np.float32)
    out, _, rec = lif(x, record=True)
    isyn1 = np.asarray(rec["isyn"][:, 1, 0])
    # t0: neuron 0: isyn 2.1, v 2.1 -> 2 spikes, v 0.1; neuron 1 sees nothing yet
    # t1: neuron 0: isyn 1.05, v 0.05 + 1.05 -> 1 spike; neuron 1: isyn (2 * 2.2) / 2 = 2.2 -> 2 spikes
    # t2: neuron 1: isyn (2.2 + 1 * 2.2) / 2 = 2.2
    np.testing.assert_array_equal(np.asarray(out[0]), [2, 0])
    np.testing.assert_allclose(isyn1, [0.0, 2.2, 2.2], rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(out[1]), [1, 2])


def test_bias_is_a_constant_current():
    lif = nn.LIF(1, tau_mem=tau_for(0.5), tau_syn=tau_for(0.5), threshold=10.0, bias=1.0)
    _, _, rec = lif(np.zeros((3, 1), np.float32), record=True)
    np.testing.assert_allclose(rec["vmem"][:, 0], [1.0, 1.5, 1.75], rtol=1e-5)


def test_per_neuron_parameters_broadcast():
    lif = nn.LIF((6, 3), tau_mem=[0.01, 0.02, 0.03], tau_syn=[0.005, 0.01], threshold=2.0)
    assert lif.tau_mem.shape == (3,) and lif.tau_syn.shape == (3, 2)
    np.testing.assert_allclose(lif.tau_syn[2], [0.005, 0.01])
    np.testing.assert_allclose(lif.threshold, [2.0, 2.0, 2.0])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(tau_mem=-0.01), "tau_mem"),
        (dict(tau_syn=0.0), "tau_syn"),
        (dict(threshold=float("nan")), "threshold"),
        (dict(dt=0.0), "dt"),
        (dict(tau_mem=[0.01, 0.02]), "tau_mem shape"),
        (dict(w_rec=np.zeros((3, 4))), "w_rec shape"),
        (dict(has_rec=True), "random key"),
    ],
)
def test_bad_parameters_raise_pond_errors(kwargs, match):
    with pytest.raises(PondError, match=match):
        nn.LIF(3, **kwargs)


def test_bad_shape_is_a_graph_error():
    with pytest.raises(GraphError, match="LIF shape"):
        nn.LIF((5, 2))


@pytest.mark.parametrize(
    "x, match",
    [
        (np.zeros((10, 4)), "input channels: got 4, expected 3"),
        (np.zeros(10), "input shape"),
        (np.array([[0.0, np.nan, 0.0]]), r"x\[0, 1\]"),
        (np.array([["a", "b", "c"]]), "dtype"),
    ],
)
def test_bad_input_raises_simulation_error(x, match):
    with pytest.raises(SimulationError, match=match):
        nn.LIF(3)(x)


def test_record_keys_and_shapes():
    lif = nn.LIF((8, 4), tau_mem=0.02, tau_syn=0.01)
    out, state, rec = lif(jnp.ones((5, 7, 8)), record=True)
    assert out.shape == (5, 7, 4)
    assert set(rec) == {"vmem", "isyn", "spikes"}
    assert rec["vmem"].shape == (5, 7, 4) and rec["spikes"].shape == (5, 7, 4)
    assert rec["isyn"].shape == (5, 7, 4, 2)
    assert state.vmem.shape == (5, 4) and state.isyn.shape == (5, 4, 2)
    _, _, rec1 = lif(jnp.ones((7, 8)), record=True)
    assert rec1["isyn"].shape == (7, 4, 2)
    assert lif(jnp.ones((7, 8)))[2] == {}
