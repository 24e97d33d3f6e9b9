"""Compositions: gradients to every parameter kind, batching, state continuation, jit, golden float runs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from pondlib import nn
from pondlib.errors import GraphError, SimulationError
from tests.golden import CASES, build_float_network, load_golden


def assert_states_close(actual, desired):
    """Float32 states summed in another order (batched vs per-sample, one scan vs two) differ by a few ulps
    of the largest state in the trace (|v| ~ 400 here, ulp 3e-5; a small membrane is a difference of large
    ones); a flipped spike would differ by the threshold (0.5)."""
    desired = np.asarray(desired)
    scale = max(1.0, float(np.abs(desired).max(initial=0.0)))
    np.testing.assert_allclose(actual, desired, rtol=1e-5, atol=2e-6 * scale)


def make_net(key=0, rec=True):
    k = jax.random.split(jax.random.PRNGKey(key), 5)
    return nn.Sequential(
        nn.Linear(6, 8, key=k[0], bias=True),
        nn.LIF((8, 4), tau_mem=0.02, tau_syn=[0.005, 0.02], threshold=0.5, bias=0.01),
        nn.Residual(nn.Linear(4, 4, key=k[1]), nn.LIF(4, has_rec=rec, key=k[2], threshold=0.5)),
        nn.Linear(4, 3, key=k[3]),
        nn.LIF(3, tau_mem=0.01, threshold=0.5, max_spikes_per_dt=1),
    )


def inputs(shape, key=7, scale=4.0):
    return jax.random.uniform(jax.random.PRNGKey(key), shape) * scale


def test_gradients_reach_every_parameter_kind():
    net = make_net()
    x, y = inputs((4, 40, 6)), jnp.array([0, 1, 2, 1])

    def loss(net, x, y):
        out, _, _ = net(x)
        return optax.softmax_cross_entropy_with_integer_labels(out.sum(1), y).mean()

    value, grads = jax.jit(jax.value_and_grad(loss))(net, x, y)
    assert np.isfinite(float(value))
    leaves = {jax.tree_util.keystr(p): g for p, g in jax.tree_util.tree_leaves_with_path(grads)}
    kinds = {"weight", "bias", "tau_mem", "tau_syn", "threshold", "w_rec"}
    seen = {name.rsplit(".", 1)[-1] for name in leaves}
    assert kinds <= seen
    for name, g in leaves.items():
        assert np.all(np.isfinite(g)), name
        assert float(jnp.abs(g).sum()) > 0, f"zero gradient for {name}"


def test_batch_equals_per_sample_loop():
    net = make_net()
    x = inputs((3, 30, 6))
    out_b, st_b, rec_b = net(x, record=True)
    for i in range(3):
        out_i, st_i, rec_i = net(x[i], record=True)
        np.testing.assert_allclose(out_b[i], out_i, rtol=1e-6, atol=1e-6)
        for key in rec_i:
            assert_states_close(rec_b[key][i], rec_i[key])
        for a, b in zip(jax.tree_util.tree_leaves(st_b), jax.tree_util.tree_leaves(st_i)):
            assert_states_close(a[i], b)


@pytest.mark.parametrize("batched", [False, True])
def test_two_halves_equal_one_whole_run(batched):
    net = make_net()
    x = inputs((2, 50, 6) if batched else (50, 6))
    t = 1 if batched else 0
    whole, st_whole, _ = net(x)
    first, st, _ = net(jax.lax.slice_in_dim(x, 0, 20, axis=t))
    second, st2, _ = net(jax.lax.slice_in_dim(x, 20, 50, axis=t), state=st)
    np.testing.assert_allclose(jnp.concatenate([first, second], axis=t), whole, rtol=1e-6, atol=1e-6)
    for a, b in zip(jax.tree_util.tree_leaves(st2), jax.tree_util.tree_leaves(st_whole)):
        assert_states_close(a, b)


def test_unbatched_state_broadcasts_over_a_batch():
    net = make_net()
    _, st, _ = net(inputs((10, 6)))
    x = inputs((3, 10, 6), key=3)
    out, _, _ = net(x, state=st)
    np.testing.assert_allclose(out[1], net(x[1], state=st)[0], rtol=1e-6, atol=1e-6)


def test_record_keys_cover_every_neuron_layer():
    _, _, rec = make_net()(inputs((2, 12, 6)), record=True)
    layers = sorted({k.rsplit("/", 1)[0] for k in rec})
    assert layers == ["1_LIF", "2_Residual/1_LIF", "4_LIF"]
    assert rec["1_LIF/isyn"].shape == (2, 12, 4, 2)
    assert rec["2_Residual/1_LIF/vmem"].shape == (2, 12, 4)
    assert rec["4_LIF/spikes"].shape == (2, 12, 3)
    assert float(rec["4_LIF/spikes"].max()) <= 1.0  # max_spikes_per_dt = 1


def test_residual_adds_block_input():
    lin = nn.Linear(3, 3, weight=jnp.eye(3))
    res = nn.Residual(lin)
    x = inputs((5, 3))
    np.testing.assert_allclose(res(x)[0], 2 * x, rtol=1e-6)


def test_size_mismatch_errors():
    with pytest.raises(GraphError, match="Residual block must keep the size"):
        nn.Residual(nn.Linear(3, 4, key=jax.random.PRNGKey(0)))
    with pytest.raises(GraphError, match="1_LIF"):
        nn.Sequential(nn.Linear(3, 4, key=jax.random.PRNGKey(0)), nn.LIF(5))
    with pytest.raises(SimulationError, match="state structure"):
        make_net()(inputs((5, 6)), state=(1, 2))


def test_jit_value_and_grad_and_adam_step_on_any_composition():
    net = nn.Sequential(
        nn.Linear(6, 4, key=jax.random.PRNGKey(1)),
        nn.LIF(4, has_rec=True, key=jax.random.PRNGKey(2), max_spikes_per_dt=3),
    )
    x = inputs((2, 20, 6), scale=0.5)
    opt = optax.adam(2e-3)
    opt_state = opt.init(net)

    def loss(net, x):
        out, _, rec = net(x, record=True)
        return jnp.mean((out.sum(1) - 3.0) ** 2) + 1e-3 * jnp.mean(rec["1_LIF/vmem"] ** 2)

    @jax.jit
    def step(net, opt_state, x):
        value, grads = jax.value_and_grad(loss)(net, x)
        updates, opt_state = opt.update(grads, opt_state, net)
        return optax.apply_updates(net, updates), opt_state, value

    first = None
    for _ in range(20):
        net, opt_state, value = step(net, opt_state, x)
        first = value if first is None else first
    assert float(value) < float(first)


def test_modules_are_immutable_pytrees():
    net = make_net()
    with pytest.raises(AttributeError):
        net.layers[0].weight = jnp.zeros((6, 8))
    doubled = jax.tree_util.tree_map(lambda a: a * 2, net)
    np.testing.assert_allclose(doubled.layers[0].weight, 2 * net.layers[0].weight)


@pytest.mark.parametrize("case", CASES)
def test_float_model_reproduces_reference_float_runs(case):
    """The golden files hold the reference toolkit's float simulation of each network: same update
    order (input, decay, integrate, spike, subtract), so spikes must be identical and states equal to
    float32 precision."""
    g = load_golden(case)
    net = build_float_network(g)
    out, _, rec = net(jnp.asarray(g["input_raster"], jnp.float32), record=True)
    np.testing.assert_array_equal(np.asarray(out), g["float/output"])
    for key, value in rec.items():
        ref = g["float/rec/" + key.replace("Residual", "ModResidual")].reshape(value.shape)
        np.testing.assert_allclose(np.asarray(value), ref, rtol=1e-4, atol=2e-3 if "vmem" in key else 1e-4)
