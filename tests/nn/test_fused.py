"""The one-loop chain (pondlib.nn.fused) equals the layer-by-layer path: outputs, states and gradients."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.errors import PondError
from pondlib.nn.fused import chain_scan, chunk_steps, fusible, inference_path
from tests.strategies import assert_trees_close


def _net(rec: bool = False, k: int = 1, fuse: bool = True):
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(3), 3)
    return nn.Sequential(
        nn.Linear(6, 5 * k, key=k1, bias=True),
        nn.LIF((5 * k, 5), tau_mem=0.02, tau_syn=0.01, threshold=0.7, has_rec=rec, key=k3),
        nn.Linear(5, 3, key=k2),
        nn.LIF(3, tau_mem=0.02, tau_syn=0.005, threshold=0.5),
        fuse=fuse,
    )


def _x(shape, seed=0):
    kx, ka = jax.random.split(jax.random.PRNGKey(seed))
    return jax.random.bernoulli(kx, 0.4, shape).astype(jnp.float32) * jax.random.uniform(ka, shape, maxval=3.0)


def test_fusible():
    net = _net()
    assert fusible(net.layers)
    assert not fusible(net.layers[:1])
    assert not fusible((net.layers[0], net.layers[2]))  # no LIF


@pytest.mark.parametrize("rec", [False, True])
@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("shape", [(2, 30, 6), (30, 6)])
def test_forward_bit_equal(rec, k, shape):
    net = _net(rec, k)
    x = _x(shape)
    y, st, rec_dict = net(x)  # fused
    y_ref, st_ref, _ = _net(rec, k, fuse=False)(x)  # layer by layer
    assert rec_dict == {}
    assert float(jnp.sum(y)) > 0  # the test network spikes
    np.testing.assert_array_equal(np.asarray(y), np.asarray(y_ref))
    for a, b in zip(jax.tree_util.tree_leaves(st), jax.tree_util.tree_leaves(st_ref)):
        # the products' rounding: an ulp of the leaf's scale (the recurrent net's currents grow to ~1e5,
        # and v = pre - s * threshold cancels most of such a value)
        b = np.asarray(b)
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(b).max())))
    # a run continued from the returned state equals the second half of one run
    y1, s1, _ = net(x[..., :15, :])
    y2, _, _ = net(x[..., 15:, :], state=s1)
    np.testing.assert_array_equal(np.concatenate([y1, y2], axis=-2), np.asarray(y))


@pytest.mark.parametrize("rec", [False, True])
def test_gradients_equal_layerwise(rec):
    net = _net(rec, 2)
    x = _x((3, 25, 6), seed=1)

    def loss(net, x, record):
        y, st, _ = net(x, record=record)
        return jnp.sum(y * jnp.arange(3.0)) + 0.1 * jnp.sum(st[1].vmem) + 0.01 * jnp.sum(x * y.sum())

    g_fused = jax.jit(jax.grad(loss, argnums=(0, 1)), static_argnums=2)(net, x, False)
    g_ref = jax.jit(jax.grad(loss, argnums=(0, 1)), static_argnums=2)(_net(rec, 2, fuse=False), x, False)
    leaves_f, leaves_r = jax.tree_util.tree_leaves(g_fused), jax.tree_util.tree_leaves(g_ref)
    assert len(leaves_f) == len(leaves_r) > 0
    assert any(float(jnp.abs(g).max()) > 0 for g in leaves_f)
    # the training kernels sum each current over the non-zero inputs in ascending order, XLA's product
    # in its own blocked order: equal to float32 rounding of those sums
    assert_trees_close(g_ref, g_fused, rtol=2e-5)


def test_chain_scan_matches_layers_with_state():
    net = _net()
    x = jnp.swapaxes(_x((2, 12, 6), seed=2), 0, 1)
    states = net.init_state((2,))
    y, new = chain_scan(net.layers, x, states)
    h, ref_states = x, []
    for m, s in zip(net.layers, states):
        h, s, _ = m.evolve_tm(h, s, False)
        ref_states.append(s)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(h))
    assert new[0] is None and new[2] is None
    np.testing.assert_allclose(np.asarray(new[1].vmem), np.asarray(ref_states[1].vmem), rtol=1e-5, atol=1e-5)


def test_fuse_is_opt_in_and_checked():
    from pondlib.errors import GraphError

    assert _net(fuse=False).fuse is False and _net().fuse is True
    with pytest.raises(GraphError, match="fuse"):
        _net(fuse="yes")


@pytest.mark.parametrize("rec", [False, True])
def test_fused_records_agree_with_the_output_and_the_layers(rec):
    """With fuse=True, record=True runs the XLA loop: output identical to the unrecorded call on that
    path (the default path's compiled kernel gives the same spikes, its states to float32 rounding:
    tests/nn/test_speed_paths.py) and to the last layer's recorded spikes; the records have the
    layer-by-layer keys, shapes and values (up to the products' rounding)."""
    net, ref = _net(rec, 2), _net(rec, 2, fuse=False)
    x = _x((2, 30, 6), seed=4)
    y, st, records = net(x, record=True)
    with inference_path("xla"):
        y_plain, st_plain, _ = net(x)
    y_ref, _, rec_ref = ref(x, record=True)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(y_plain))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(net(x)[0]))
    np.testing.assert_array_equal(np.asarray(records["3_LIF/spikes"]), np.asarray(y))
    for a, b in zip(jax.tree_util.tree_leaves(st), jax.tree_util.tree_leaves(st_plain)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert sorted(records) == sorted(rec_ref)
    for key, want in rec_ref.items():
        got = np.asarray(records[key])
        assert got.shape == np.asarray(want).shape, key
        # the products' rounding, carried through the recurrent weights: relative to the layer's scale
        scale = max(1.0, float(np.abs(np.asarray(want)).max()))
        np.testing.assert_allclose(got, np.asarray(want), rtol=0, atol=2e-5 * scale, err_msg=key)
    assert float(jnp.sum(records["1_LIF/spikes"])) > 0


def test_gradients_through_records_equal_layerwise():
    """A loss on the recorded membranes, currents and spikes: the fused chain's custom VJP routes each
    record's cotangent into its layer's adjoint (the spikes' summed with the next module's)."""
    x = _x((3, 20, 6), seed=5)

    def loss(net, x):
        y, _, r = net(x, record=True)
        return (
            jnp.sum(y * jnp.arange(3.0))
            + 0.1 * jnp.sum(r["1_LIF/vmem"])
            + 0.01 * jnp.sum(r["1_LIF/spikes"] * jnp.arange(5.0))
            + 0.1 * jnp.sum(r["1_LIF/isyn"])
            + 0.05 * jnp.sum(r["3_LIF/vmem"])
        )

    g_fused = jax.jit(jax.grad(loss, argnums=(0, 1)))(_net(True, 2), x)
    g_ref = jax.jit(jax.grad(loss, argnums=(0, 1)))(_net(True, 2, fuse=False), x)
    leaves_f, leaves_r = jax.tree_util.tree_leaves(g_fused), jax.tree_util.tree_leaves(g_ref)
    assert len(leaves_f) == len(leaves_r) > 0 and any(float(jnp.abs(g).max()) > 0 for g in leaves_f)
    assert_trees_close(g_ref, g_fused, rtol=2e-5)  # summation order only (see above)


def test_chain_scan_records():
    net = _net()
    x = jnp.swapaxes(_x((2, 12, 6), seed=2), 0, 1)
    y, new, recs = chain_scan(net.layers, x, net.init_state((2,)), record=True)
    assert recs[0] is None and recs[2] is None
    spikes, vmem, isyn = recs[3]
    np.testing.assert_array_equal(np.asarray(spikes), np.asarray(y))
    assert vmem.shape == (12, 2, 3) and isyn.shape == (12, 2, 3, 1)
    np.testing.assert_array_equal(np.asarray(vmem[-1]), np.asarray(new[3].vmem))


@pytest.mark.parametrize("rec", [False, True])
@pytest.mark.parametrize("steps", [1, 9])
def test_chunk_sizes_agree(rec, steps):
    """Every chunk size, with and without a shorter last chunk, gives the spikes and records of the
    step-by-step loop (chunk 1)."""
    net = _net(rec, 2)
    x = jnp.swapaxes(_x((2, steps, 6), seed=4), 0, 1)
    states = net.init_state((2,))
    y1, s1, r1 = chain_scan(net.layers, x, states, record=True, chunk=1)
    for chunk in (2, 3, 4, 10):  # shorter last chunk (2, 4), exact (3), one chunk longer than T (10)
        y, s, r = chain_scan(net.layers, x, states, record=True, chunk=chunk)
        np.testing.assert_array_equal(np.asarray(y), np.asarray(y1))
        np.testing.assert_array_equal(np.asarray(r[1][0]), np.asarray(r1[1][0]))  # hidden spikes
        for a, b in zip(jax.tree_util.tree_leaves((s, r)), jax.tree_util.tree_leaves((s1, r1))):
            b = np.asarray(b)
            assert a.shape == b.shape
            np.testing.assert_allclose(np.asarray(a), b, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(b).max())))
    assert steps == 1 or float(jnp.sum(r1[1][0])) > 0  # the hidden layer spikes (from its second step)


def test_chunk_steps_table():
    assert [chunk_steps(e) for e in (1, 1 << 14, (1 << 14) + 1, 1 << 16, (1 << 16) + 1, 1 << 20)] == [1, 1, 4, 4, 2, 2]


@given(st.one_of(st.integers(max_value=0), st.floats(allow_nan=True), st.text(max_size=3), st.booleans()))
@settings(max_examples=25, deadline=None)
def test_bad_chunk_is_refused(chunk):
    net = _net()
    x = jnp.ones((3, 2, 6))
    assume(not (isinstance(chunk, float) and math.isfinite(chunk) and chunk.is_integer() and chunk >= 1))
    with pytest.raises(PondError, match="chunk"):
        chain_scan(net.layers, x, net.init_state((2,)), chunk=chunk)
