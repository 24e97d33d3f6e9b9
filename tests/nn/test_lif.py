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


def test_step_functions_by_hand():
    # the pieces of the flat step (pondlib.nn.lif_core), one neuron with two synapses: channel 0 drives
    # synapse 0, channel 1 synapse 1; alpha = 0.5, beta = (0.5, 0.25), threshold 1, bias 0.125
    from pondlib.nn import lif_core as core

    sg = nn.Surrogate()
    alpha, beta = jnp.array([0.5]), jnp.array([0.5, 0.25])
    x, i_prev, v_prev = jnp.array([2.0, 4.0]), jnp.array([1.0, 0.0]), jnp.array([0.5])
    q = core.synapse_input(i_prev, core.recurrent_input(x, jnp.zeros(1), None))
    assert q.tolist() == [3.0, 4.0]
    i = core.synapse_decay(q, beta)
    assert i.tolist() == [1.5, 1.0]
    p = core.membrane(v_prev, i, alpha, jnp.array([0.125]), 2)
    assert p.tolist() == [0.25 + 2.5 + 0.125]
    s = core.spike_counts(p, jnp.ones(1), 2.0, sg)
    assert s.tolist() == [2.0]  # floor(2.875) = 2, within the cap
    assert core.reset(p, s, jnp.ones(1)).tolist() == [0.875]
    # recurrence: s[t-1] W_rec adds to the input, indexed (pre neuron, post channel)
    w = jnp.array([[1.0, -2.0]])
    assert core.recurrent_input(x, jnp.array([3.0]), w).tolist() == [5.0, -2.0]
    # the composed step returns every quantity of the same step
    params = core.FlatLIFParameters(alpha, beta, jnp.ones(1), jnp.array([0.125]), None, 2.0, sg)
    r = core.lif_step_flat(params, i_prev, v_prev, jnp.zeros(1), x)
    assert (r.q.tolist(), r.isyn.tolist(), r.pre.tolist(), r.spikes.tolist(), r.vmem.tolist()) == (
        [3.0, 4.0],
        [1.5, 1.0],
        [2.875],
        [2.0],
        [0.875],
    )
    # the surrogate slopes: ds/dP = g(u) / theta, ds/dtheta = -g(u) u / theta (g = 1 above threshold)
    dsdp, dsdth = core.surrogate_slopes(jnp.array([2.0]), jnp.array([2.0]), 4.0, sg)
    assert (dsdp.tolist(), dsdth.tolist()) == ([0.5], [-0.5])


@pytest.mark.parametrize("rec", [False, True])
@pytest.mark.parametrize("k", [1, 3])
def test_lif_step_is_the_flat_step_and_the_module_scan(rec, k):
    # lif_step is lif_step_flat on the state laid flat (the same operations: equal bit for bit, step by
    # step); the module's scan, the adjoint's compiled loop of the same step, agrees to float32 rounding
    # (XLA fuses multiply-adds there; tests/nn/test_adjoint.py checks exact equality of two compiled
    # loops in float64): v = P - s theta keeps the rounding of P, a few ulp of the synaptic currents
    import jax

    from pondlib.nn import lif_core as core
    from pondlib.nn.lif import LIFState, flat_parameters, lif_step

    w_rec = 0.3 * jax.random.normal(jax.random.PRNGKey(1), (3, 3 * k)) if rec else None
    lif = nn.LIF((3 * k, 3), tau_mem=0.02, tau_syn=0.01, threshold=0.6, w_rec=w_rec)
    p = lif.parameters()
    x = jax.random.uniform(jax.random.PRNGKey(2), (12, 2, 3 * k), maxval=2.0)
    state = lif.init_state((2,))
    outs, vmems = [], []
    for t in range(x.shape[0]):
        flat = core.lif_step_flat(flat_parameters(p), core.flatten_synapses(state.isyn), state.vmem, state.spikes, x[t])
        spikes, state = lif_step(p, state, x[t])
        np.testing.assert_array_equal(np.asarray(flat.spikes), np.asarray(spikes))
        np.testing.assert_array_equal(np.asarray(flat.vmem), np.asarray(state.vmem))
        np.testing.assert_array_equal(np.asarray(core.unflatten_synapses(flat.isyn, k)), np.asarray(state.isyn))
        outs.append(spikes)
        vmems.append(state.vmem)
    assert float(jnp.stack(outs).sum()) > 0  # the layer spikes
    out, final, record = lif.evolve_tm(x, lif.init_state((2,)), True)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(jnp.stack(outs)))
    atol = 1e-5 * max(1.0, k * float(np.abs(np.asarray(state.isyn)).max()))
    np.testing.assert_allclose(np.asarray(record["vmem"]), np.asarray(jnp.stack(vmems)), rtol=0, atol=atol)
    assert isinstance(final, LIFState)
    for a, b in zip(final, state):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=atol)
