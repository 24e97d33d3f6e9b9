"""The compiled CPU kernels of the LIF adjoint (:mod:`pondlib.nn.native`) against the XLA loops they
replace (:mod:`pondlib.nn.adjoint`, run here with the kernels turned off).

- Step functions: the forward kernel against its reference, a loop of the documented step
  :func:`pondlib.nn.lif_core.lif_step_flat` (the step every XLA loop calls): equal spikes, every other
  quantity to float32 rounding.
- Forward: the spikes equal the XLA loop's, and the residuals (membrane before reset, synaptic input),
  records and final state agree to float32 rounding (XLA fuses some of its multiply-adds, not always
  the same ones), for one to three synapses, spike caps and batch shapes.
- Backward: every gradient (parameters, input, initial state) agrees with the XLA loop to float32
  rounding; only the summation order over time and batch differs.
- In use: a network's gradients under ``jax.jit`` come from the kernels (the compiled program calls
  them) and agree with the XLA path; ``jax.vmap`` over a training loss works; float64, recurrent
  layers and ``PONDLIB_NATIVE=0`` keep the XLA loops.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.custom_derivatives import CustomVJPPrimal

from pondlib import nn
from pondlib.nn import adjoint, native
from pondlib.nn.lif import LIFState
from pondlib.nn.lif_core import FlatLIFParameters, lif_step_flat
from pondlib.nn.surrogate import Surrogate
from tests.strategies import assert_trees_close

pytestmark = pytest.mark.skipif(not native.available(), reason="the native kernels could not be registered here")


def _layer(n, k, batch, seed, T=40):
    ks = jax.random.split(jax.random.PRNGKey(seed), 8)
    u = lambda kk, shape, lo, hi: jax.random.uniform(kk, shape, jnp.float32, lo, hi)  # noqa: E731
    alpha, beta, threshold = u(ks[0], (n,), 0.5, 0.99), u(ks[1], (n, k), 0.5, 0.99), u(ks[2], (n,), 0.3, 1.7)
    bias = jax.random.normal(ks[3], (n,)) * 0.1
    x = jax.random.normal(ks[4], (T,) + batch + (n * k,)) * 1.5
    state0 = LIFState(
        jax.random.normal(ks[5], batch + (n, k)) * 0.2,
        jax.random.normal(ks[6], batch + (n,)) * 0.2,
        jnp.zeros(batch + (n,)),
    )
    return alpha, beta, threshold, bias, x, state0


def _fwd(cap, surrogate, alpha, beta, threshold, bias, x, state0, want_dx=True):
    primal = lambda a, perturbed=True: CustomVJPPrimal(a, perturbed)  # noqa: E731
    st = jax.tree_util.tree_map(lambda a: primal(a, False), state0)
    args = (primal(alpha), primal(beta), primal(threshold), primal(bias), primal(None, False), primal(x, want_dx), st)
    return adjoint._fwd(cap, surrogate, *args)


@pytest.fixture
def xla_only(monkeypatch):
    """Inside the test, a function that runs its argument with the kernels turned off."""

    def run(fn, *args):
        with monkeypatch.context() as m:
            m.setattr(native, "eligible", lambda *a: False)
            return fn(*args)

    return run


CASES = [(7, 1, (3,)), (5, 2, (2, 3)), (9, 1, ()), (6, 3, (4,))]


@pytest.mark.parametrize("n,k,batch", CASES)
@pytest.mark.parametrize("cap", [1.0, 65536.0])
def test_forward_kernel_equals_the_step_functions(n, k, batch, cap):
    """The kernel's step is :func:`~pondlib.nn.lif_core.lif_step_flat`: run both over the same input,
    step by step (the reference eagerly, each operation on its own), and compare every quantity."""
    alpha, beta, threshold, bias, x, state0 = _layer(n, k, batch, seed=7 * n + k)
    params = FlatLIFParameters(alpha, beta.reshape(n * k), threshold, bias, None, cap, Surrogate())
    i, v, s = adjoint.broadcast_state(state0, batch, n, k)
    pre, q, spikes, i_f, v_f = native.lif_forward(x, params.alpha, params.beta, threshold, bias, i, v, cap)
    steps = []
    for t in range(x.shape[0]):
        r = lif_step_flat(params, i, v, s, x[t])
        i, v, s = r.isyn, r.vmem, r.spikes
        steps.append(r)
    ref = {name: np.stack([np.asarray(getattr(r, name)) for r in steps]) for name in ("pre", "q", "spikes")}
    assert 0.02 < float((ref["spikes"] > 0).mean()) < 0.98  # thresholds are crossed and missed
    np.testing.assert_array_equal(np.asarray(spikes), ref["spikes"])
    pairs = [(pre, ref["pre"]), (q, ref["q"]), (i_f, i), (v_f, v)]
    for got, want in pairs:
        got, want = np.asarray(got), np.asarray(want)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * max(1.0, float(np.abs(want).max())))


@pytest.mark.parametrize("n,k,batch", CASES)
@pytest.mark.parametrize("cap", [1.0, 4.0, 65536.0])
def test_forward_agrees_with_the_xla_loop(n, k, batch, cap, xla_only):
    surrogate = Surrogate()
    layer = _layer(n, k, batch, seed=n + k)
    out, res = _fwd(cap, surrogate, *layer)
    ref_out, ref_res = xla_only(_fwd, cap, surrogate, *layer)
    spikes = np.asarray(out[0])
    assert 0.02 < float((spikes > 0).mean()) < 0.98  # thresholds are crossed and missed
    if cap < 4:
        assert spikes.max() == cap  # and the cap is reached
    np.testing.assert_array_equal(spikes, np.asarray(ref_out[0]))
    leaves = zip(jax.tree_util.tree_leaves((out, res)), jax.tree_util.tree_leaves((ref_out, ref_res)))
    for got, ref in leaves:
        got, ref = np.asarray(got), np.asarray(ref)
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5 * max(1.0, float(np.abs(ref).max())))


def _bwd_both(n, k, batch, kind, want_dx, seed):
    surrogate = Surrogate(kind, 4.0)
    layer = _layer(n, k, batch, seed)
    g = jax.random.normal(jax.random.PRNGKey(seed + 100), layer[4].shape[:-1] + (n,))
    cts = (g, None, None, (None, None, None))
    _, res = _fwd(8.0, surrogate, *layer, want_dx=want_dx)
    assert res[-1] is not None, "the forward pass did not run the kernel"
    got = adjoint._bwd(8.0, surrogate, res, cts)
    ref = adjoint._bwd_xla(8.0, surrogate, res, cts)
    return got, ref


@pytest.mark.parametrize("n,k,batch", CASES)
@pytest.mark.parametrize("kind", ["fast_sigmoid", "triangle", "arctan"])
def test_backward_agrees_with_the_xla_loop(n, k, batch, kind):
    got, ref = _bwd_both(n, k, batch, kind, True, seed=3 * n + k)
    assert got[5] is not None and got[4] is None  # dL/dx returned, no recurrent weights
    assert_trees_close(ref, got, rtol=2e-5)


def test_backward_without_input_gradient():
    got, ref = _bwd_both(8, 1, (3,), "fast_sigmoid", False, seed=1)
    assert got[5] is None and ref[5] is None
    assert_trees_close(ref, got, rtol=2e-5)


def _net(key=0, fuse=True):
    k1, k2 = jax.random.split(jax.random.PRNGKey(key))
    return nn.Sequential(
        nn.Linear(6, 32, key=k1),
        nn.LIF(32, tau_mem=0.02, tau_syn=0.01, dt=1e-3),
        nn.Linear(32, 4, key=k2),
        nn.LIF(4, tau_mem=0.02, tau_syn=0.01, dt=1e-3),
        fuse=fuse,
    )


def _loss(net, x):
    out, _, _ = net(x)
    return jnp.sum(out.sum(1) * jnp.arange(1.0, 5.0))


@pytest.mark.parametrize("fuse", [False, True])
def test_training_gradients_come_from_the_kernels_and_agree(xla_only, fuse):
    """Layer by layer (``fuse=False``) the LIF kernels run; fused, the C build trains the chain of pairs
    as one loop (pondlib.nn.train_chain), the numba build runs the LIF kernels."""
    net, x = _net(fuse=fuse), (jax.random.uniform(jax.random.PRNGKey(1), (5, 60, 6)) < 0.3) * 1.0
    grad = jax.jit(jax.grad(_loss))
    hlo = grad.lower(net, x).as_text()
    if fuse and native.engine() == "c":
        assert "pondlib_lif_chain_backward" in hlo
    else:
        assert "pondlib_lif_forward" in hlo and "pondlib_lif_backward" in hlo
    ref_hlo = xla_only(lambda: jax.jit(jax.grad(lambda n, x: _loss(n, x))).lower(net, x).as_text())
    assert "pondlib_lif" not in ref_hlo
    got = grad(net, x)
    ref = xla_only(lambda: jax.grad(_loss)(net, x))
    assert_trees_close(ref, got, rtol=1e-4)


def test_vmap_of_a_gradient(xla_only):
    net = _net(2)
    xs = (jax.random.uniform(jax.random.PRNGKey(3), (2, 3, 40, 6)) < 0.3) * 1.0
    got = jax.vmap(lambda x: jax.grad(_loss)(net, x))(xs)
    ref = xla_only(lambda: jax.vmap(lambda x: jax.grad(_loss)(net, x))(xs))
    assert_trees_close(ref, got, rtol=1e-4)


def test_recurrent_other_dtypes_and_switched_off_keep_the_xla_loop(monkeypatch):
    assert not native.eligible(jnp.ones(3), None)  # an absent array (None) is refused
    assert not native.eligible(np.ones(3, np.int32))  # only float32 (float64 too, under x64)
    rec = nn.Sequential(nn.Linear(3, 5, key=jax.random.PRNGKey(0)), nn.LIF(5, has_rec=True, key=jax.random.PRNGKey(1)))
    x = jnp.ones((2, 10, 3))
    hlo = jax.jit(jax.grad(lambda n: n(x)[0].sum())).lower(rec).as_text()
    assert "pondlib_lif" not in hlo
    monkeypatch.setenv("PONDLIB_NATIVE", "0")
    assert not native.available()
    hlo = jax.jit(jax.grad(lambda n: _loss(n, jnp.ones((2, 10, 6))))).lower(_net()).as_text()
    assert "pondlib_lif" not in hlo
