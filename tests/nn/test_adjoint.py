"""The hand-derived LIF adjoint (:func:`pondlib.nn.adjoint.lif_scan`) against automatic differentiation
of the plain ``lax.scan`` over :func:`pondlib.nn.lif.lif_step`.

Float64 (inside a local x64 context, so nothing leaks into other tests): every gradient, including the
initial state's, agrees to rtol 1e-10 for recurrent and feed-forward layers, one and two synapses,
batched and unbatched input, and each combination of zero / non-zero output cotangents (which take
different code paths: the spike cotangent buffer is reused in place, zero cotangents are skipped).
Float32: the gradients of a whole network agree with autodiff to float32 accuracy.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from pondlib import nn
from pondlib.nn import adjoint, native
from pondlib.nn.base import scan_steps
from pondlib.nn.lif import LIFParameters, LIFState, lif_step
from tests.strategies import assert_trees_close

CAP = 4.0


def _x64():
    """A context enabling float64 locally (``jax.enable_x64`` or, on older JAX, the experimental one)."""
    try:
        return jax.enable_x64(True)
    except (AttributeError, TypeError):  # pragma: no cover - older JAX
        from jax.experimental import enable_x64

        return enable_x64()


def plain_scan(cap, surrogate, alpha, beta, threshold, bias, w_rec, x, state0):
    """The reference: ``lax.scan`` over ``lif_step``, differentiated by JAX."""
    p = LIFParameters(alpha, beta, threshold, bias, w_rec, cap, surrogate)

    def step(s, xt):
        spikes, s = lif_step(p, s, xt)
        return s, (spikes, s.vmem, s.isyn)

    final, (spikes, vmem, isyn) = scan_steps(step, state0, x)
    return spikes, vmem, isyn, final


def _problem(n, k, rec, batch, seed, dtype, T=30):
    ks = jax.random.split(jax.random.PRNGKey(seed), 9)
    u = lambda kk, shape, lo, hi: jax.random.uniform(kk, shape, dtype, lo, hi)  # noqa: E731
    alpha = u(ks[0], (n,), 0.5, 0.99)
    beta = u(ks[1], (n, k), 0.5, 0.99)
    threshold = u(ks[2], (n,), 0.5, 1.5)
    bias = jax.random.normal(ks[3], (n,), dtype) * 0.1
    w_rec = jax.random.normal(ks[4], (n, n * k), dtype) * 0.3 if rec else None
    x = jax.random.normal(ks[5], (T,) + batch + (n * k,), dtype) * 1.5
    state0 = LIFState(
        jax.random.normal(ks[6], batch + (n, k), dtype) * 0.1,
        jax.random.normal(ks[7], batch + (n,), dtype) * 0.1,
        jax.random.bernoulli(ks[8], 0.3, batch + (n,)).astype(dtype),
    )
    return alpha, beta, threshold, bias, w_rec, x, state0


def _loss(fn, surrogate, terms):
    """A loss touching the outputs named in ``terms`` (the others get zero cotangents)."""

    def loss(alpha, beta, threshold, bias, w_rec, x, state0):
        spikes, vmem, isyn, final = fn(CAP, surrogate, alpha, beta, threshold, bias, w_rec, x, state0)
        weights = (jnp.arange(spikes.size).reshape(spikes.shape) % 3).astype(spikes.dtype)
        out = {
            "spikes": jnp.sum(spikes * weights),
            "vmem": 0.1 * jnp.sum(vmem**2),
            "isyn": 0.2 * jnp.sum(jnp.sin(isyn)),
            "final_vmem": 0.3 * jnp.sum(final.vmem),
            "final_isyn": jnp.sum(final.isyn**2),
            "final_spikes": 0.5 * jnp.sum(final.spikes),
        }
        return sum(out[t] for t in terms)

    return loss


ALL_TERMS = ("spikes", "vmem", "isyn", "final_vmem", "final_isyn", "final_spikes")
CASES = [  # (N, k, recurrent, batch shape)
    (5, 1, False, ()),
    (6, 1, False, (3,)),
    (4, 2, False, (2,)),
    (7, 2, False, ()),
    (6, 1, True, (2,)),
    (4, 2, True, (3,)),
    (5, 1, True, ()),
]
TERMS = [("spikes",), ALL_TERMS, ("vmem", "final_isyn"), ("isyn", "final_spikes"), ("final_vmem",)]


@pytest.mark.parametrize("n,k,rec,batch", CASES)
@pytest.mark.parametrize("terms", TERMS, ids=lambda t: "+".join(t))
def test_gradients_equal_autodiff_float64(n, k, rec, batch, terms):
    with _x64():
        args = _problem(n, k, rec, batch, seed=n + 10 * k + rec, dtype=jnp.float64)
        surrogate = nn.Surrogate()
        argnums = tuple(range(7))
        ref = jax.grad(_loss(plain_scan, surrogate, terms), argnums=argnums)(*args)
        got = jax.jit(jax.grad(_loss(adjoint.lif_scan, surrogate, terms), argnums=argnums))(*args)
        if not rec:
            ref, got = ref[:4] + ref[5:], got[:4] + got[5:]  # no w_rec
        assert_trees_close(ref, got, rtol=1e-10)


@pytest.mark.parametrize("kind", ["fast_sigmoid", "triangle", "arctan"])
@pytest.mark.parametrize("rec", [False, True])
def test_surrogates_and_undifferentiated_input_float64(kind, rec):
    # x is not differentiated here: the adjoint then does not store dL/dx (but still needs it for
    # w_rec of a recurrent layer)
    with _x64():
        alpha, beta, threshold, bias, w_rec, x, state0 = _problem(5, 2, rec, (2,), seed=3, dtype=jnp.float64)
        surrogate = nn.Surrogate(kind, scale=3.0)

        def loss(fn):
            def f(alpha, beta, threshold, bias, w_rec, state0):
                return _loss(fn, surrogate, ALL_TERMS)(alpha, beta, threshold, bias, w_rec, x, state0)

            return f

        argnums = (0, 1, 2, 3, 4, 5) if rec else (0, 1, 2, 3, 5)
        args = (alpha, beta, threshold, bias, w_rec, state0)
        ref = jax.grad(loss(plain_scan), argnums=argnums)(*args)
        got = jax.jit(jax.grad(loss(adjoint.lif_scan), argnums=argnums))(*args)
        assert_trees_close(ref, got, rtol=1e-10)


@pytest.mark.parametrize("rec", [False, True])
def test_forward_outputs_are_exactly_the_plain_scan(rec):
    with _x64():
        args = _problem(4, 2, rec, (3,), seed=5, dtype=jnp.float64)
        surrogate = nn.Surrogate()
        ref = plain_scan(CAP, surrogate, *args)
        primal = jax.jit(adjoint.lif_scan, static_argnums=(0, 1))(CAP, surrogate, *args)
        in_grad = jax.vjp(lambda *a: adjoint.lif_scan(CAP, surrogate, *a), *args)[0]  # the fwd rule
        for got in (primal, in_grad):
            for a, b in zip(jax.tree_util.tree_leaves(ref), jax.tree_util.tree_leaves(got)):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _reference_net(net, x):
    """``net`` (Linear / LIF layers in a Sequential) evaluated time-major with plain scans."""
    h = jnp.swapaxes(x, 0, 1)
    for layer in net.layers:
        if isinstance(layer, nn.Linear):
            h = h @ layer.weight + (0.0 if layer.bias is None else layer.bias)
        else:
            p = layer.parameters()
            state = layer.init_state(h.shape[1:-1])
            h = plain_scan(p.max_spikes, p.surrogate, p.alpha, p.beta, p.threshold, p.bias, p.w_rec, h, state)[0]
    return jnp.swapaxes(h, 0, 1)


def test_network_gradients_float32(monkeypatch):
    # the adjoint against autodiff of plain scans, with the Linear products XLA's own: the pair and chain
    # kernels (pondlib.nn.train_pair, train_chain) sum each current in another order, and this network's
    # spike counts are in the thousands (P - s theta cancels), so an ulp of P moves d_alpha by ~1e-3;
    # tests/nn/test_lif_c.py checks those kernels' gradients on networks of ordinary counts
    monkeypatch.setattr(native, "pair_available", lambda: False)
    k = jax.random.split(jax.random.PRNGKey(0), 6)
    net = nn.Sequential(
        nn.Linear(12, 32, key=k[0], bias=True),
        nn.LIF((32, 16), tau_mem=0.02, tau_syn=[0.005, 0.01], has_rec=True, key=k[1]),
        nn.Linear(16, 5, key=k[2]),
        nn.LIF(5, tau_mem=0.02, tau_syn=0.01, threshold=0.5),
    )
    x = jax.random.bernoulli(k[3], 0.3, (4, 60, 12)).astype(jnp.float32) * 2.0
    y = jax.random.randint(k[4], (4,), 0, 5)

    def loss(net, fn):
        out = fn(net, x)
        return optax.softmax_cross_entropy_with_integer_labels(out.sum(1), y).mean()

    v_ref, g_ref = jax.value_and_grad(loss)(net, _reference_net)
    v_got, g_got = jax.jit(jax.value_and_grad(loss), static_argnums=1)(net, lambda n, x: n(x)[0])
    assert float(v_ref) == pytest.approx(float(v_got), rel=1e-6)
    leaves = jax.tree_util.tree_leaves(g_ref)
    assert all(float(jnp.abs(g).sum()) > 0 for g in leaves)
    assert_trees_close(g_ref, g_got, rtol=2e-4)


def test_recorded_outputs_identical_with_and_without_gradients_float32():
    # the forward rule (used under jax.grad) emits exactly the values of the plain forward pass
    k = jax.random.split(jax.random.PRNGKey(2), 3)
    net = nn.Sequential(
        nn.Linear(16, 64, key=k[0]),
        nn.LIF(64, tau_mem=0.02, tau_syn=0.01),
        nn.Linear(64, 16, key=k[1]),
        nn.LIF((16, 8), has_rec=True, key=k[2]),
    )
    x = jax.random.bernoulli(k[0], 0.2, (3, 80, 16)).astype(jnp.float32) * 3.0
    plain = jax.jit(lambda n, x: n(x, record=True))(net, x)
    in_grad = jax.jit(lambda n, x: jax.vjp(lambda n: n(x, record=True), n)[0])(net, x)
    for a, b in zip(jax.tree_util.tree_leaves(plain), jax.tree_util.tree_leaves(in_grad)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
