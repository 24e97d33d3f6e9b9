"""The hand adjoint of :class:`~pondlib.devices.xylo.aware_lif.XyloLIF` (:mod:`pondlib.devices.xylo.aware_adjoint`)
against
automatic differentiation of the layer's reference scan (:meth:`XyloLIF._evolve_tm_autodiff`, the
layer's code before the adjoint).

Forward: spikes, final state and records equal the reference bit for bit (float32, chip and float
arithmetic, one to three synapses, recurrent, delayed, clipped, capped, saturating layers).
Gradients, float64 (inside a local x64 context): every parameter's (weights, recurrent weights,
threshold, bias, both dashes), the input's and the initial state's agree to rtol 1e-10 for each
combination of zero / non-zero output cotangents. Float32: the gradients of a hardware-aware network
(``xylo_aware``) agree with autodiff to float32 accuracy.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from pondlib import nn
from pondlib.devices.xylo.aware import xylo_aware
from pondlib.devices.xylo.aware_lif import XyloLIF, XyloLIFState
from pondlib.nn import native
from tests.strategies import assert_trees_close


def _x64():
    """A context enabling float64 locally (``jax.enable_x64`` or, on older JAX, the experimental one)."""
    try:
        return jax.enable_x64(True)
    except (AttributeError, TypeError):  # pragma: no cover - older JAX
        from jax.experimental import enable_x64

        return enable_x64()


def _layer(
    n_in, n, k, *, rec=False, quantize="channel", cap=31, delay=False, clip=None, saturate=False, kind=None, **kw
):
    """A random layer; ``saturate``: positive weights, slow synaptic decay and a high threshold, so
    that the synaptic state reaches the 16-bit limit. (NumPy random numbers: every eager JAX operation on
    a new shape costs a compilation.)"""
    rng = np.random.default_rng(n_in + 7 * n + 31 * k + rec + 3 * delay + 5 * saturate)
    return XyloLIF(
        n_in,
        n,
        k,
        weight=np.abs(rng.normal(size=(n_in, n * k))) if saturate else rng.normal(size=(n_in, n * k)),
        w_rec=rng.normal(size=(n, n * k)) * 0.7 if rec else None,
        threshold=rng.uniform(20.0, 40.0, n) if saturate else rng.uniform(0.5, 2.0, n),
        bias=rng.normal(size=n) * 0.1,
        dash_mem=rng.uniform(1.0, 6.0, n),
        dash_syn=rng.uniform(9.0, 14.0, (n, k)) if saturate else rng.uniform(0.6, 4.0, (n, k)),
        max_spikes=cap,
        delay_in=delay,
        input_clip=clip,
        quantize=quantize,
        surrogate=None if kind is None else nn.Surrogate(kind, scale=3.0),
        **kw,
    )


def _inputs(layer, T, batch, seed, integer=True):
    """Input counts (T, *batch, n_in) and a random initial state (chip units when ``integer``), float32."""
    rng = np.random.default_rng(seed)
    n, k, n_in = layer.n_neurons, layer.n_synapses, layer.n_in
    hi = 20 if layer.input_clip is not None else 4
    if integer:
        x = rng.integers(0, hi, (T,) + batch + (n_in,))
        state = (
            rng.integers(-200, 200, batch + (n, k)),
            rng.integers(-100, 100, batch + (n,)),
            rng.integers(0, 3, batch + (n,)),
            rng.integers(0, 3, batch + (n_in,)),
        )
    else:
        x = rng.uniform(0.0, 2.0, (T,) + batch + (n_in,))
        state = (
            rng.normal(size=batch + (n, k)) * 0.3,
            rng.normal(size=batch + (n,)) * 0.3,
            rng.integers(0, 2, batch + (n,)),
            rng.uniform(0.0, 2.0, batch + (n_in,)),
        )
    f32 = lambda a: jnp.asarray(np.asarray(a, np.float32))  # noqa: E731
    return f32(x), XyloLIFState(*map(f32, state))


def _run(layer, x, state, record, ref):
    return (layer._evolve_tm_autodiff if ref else layer.evolve_tm)(x, state, record)


ALL_TERMS = ("spikes", "vmem", "isyn", "final_isyn", "final_vmem", "final_spikes")
TERMS = [("spikes",), ALL_TERMS, ("vmem", "final_isyn"), ("isyn", "final_spikes"), ("final_vmem",)]


def _loss(terms, ref):
    record = "vmem" in terms or "isyn" in terms

    def loss(layer, x, state):
        spikes, final, rec = _run(layer, x, state, record, ref)
        weights = (jnp.arange(spikes.size).reshape(spikes.shape) % 3).astype(spikes.dtype)
        out = {
            "spikes": lambda: jnp.sum(spikes * weights),
            "vmem": lambda: 0.1 * jnp.sum(rec["vmem"] ** 2),
            "isyn": lambda: 0.2 * jnp.sum(jnp.sin(rec["isyn"])),
            "final_isyn": lambda: 1e-4 * jnp.sum(final.isyn**2),
            "final_vmem": lambda: 0.3 * jnp.sum(final.vmem),
            "final_spikes": lambda: 0.5 * jnp.sum(final.spikes),
        }
        return sum(out[t]() for t in terms)

    return loss


def _to64(tree):
    """Float64 copies of the arrays of ``tree`` (through NumPy: no compilation)."""
    return jax.tree_util.tree_map(
        lambda a: jnp.asarray(np.asarray(a, np.float64)) if isinstance(a, jax.Array) else a, tree
    )


CASES = {  # name: (layer arguments, batch shape, T)
    "chip": (dict(n_in=5, n=4, k=1), (3,), 16),
    "chip-k2-unbatched-one-step": (dict(n_in=4, n=3, k=2, learn_dash=False), (), 1),
    "chip-recurrent-k3": (dict(n_in=3, n=3, k=3, rec=True, delay=True), (2,), 12),
    "chip-output-cap-recurrent": (dict(n_in=6, n=3, k=1, rec=True, cap=1, delay=True), (3,), 14),
    "chip-saturating-clipped": (dict(n_in=6, n=3, k=2, clip=15.0, saturate=True, cap=8), (2,), 20),
    "chip-global-triangle": (dict(n_in=5, n=4, k=1, quantize="global", kind="triangle"), (2,), 12),
    "float-recurrent-k2-arctan": (dict(n_in=4, n=3, k=2, rec=True, quantize=None, kind="arctan"), (2,), 12),
}
#: the forward cases (the others differ in what only the gradients see, or are covered by
#: ``tests/test_hardware_aware.py``: one run costs a compilation, ~1 s)
FORWARD_CASES = [
    "chip",
    "chip-recurrent-k3",
    "chip-output-cap-recurrent",
    "chip-saturating-clipped",
    "float-recurrent-k2-arctan",
]
#: the cotangent combinations each gradient case runs (they take different code paths: the spike
#: cotangent buffer is reused in place for k = 1, zero cotangents are skipped)
GRAD_TERMS = {
    "chip": [("spikes",), ALL_TERMS, ("vmem", "final_spikes")],
    "chip-k2-unbatched-one-step": [ALL_TERMS],
    "chip-recurrent-k3": [ALL_TERMS, ("spikes",)],
    "chip-output-cap-recurrent": [("spikes", "final_spikes")],
    "chip-saturating-clipped": [ALL_TERMS],
    "chip-global-triangle": [("spikes",)],
    "float-recurrent-k2-arctan": [ALL_TERMS],
}


def _equal(ref, got):
    for a, b in zip(jax.tree_util.tree_leaves(ref), jax.tree_util.tree_leaves(got), strict=True):
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a))


@pytest.mark.parametrize("name", FORWARD_CASES)
def test_forward_bit_identical(name):
    kwargs, batch, T = CASES[name]
    layer = _layer(**kwargs)
    x, state = _inputs(layer, T, batch, seed=1, integer=layer.quantize is not None)

    def both(m, x, s):  # one compilation for the three runs
        return _run(m, x, s, True, True), _run(m, x, s, True, False), _run(m, x, s, False, False)

    ref, got, unrecorded = jax.jit(both)(layer, x, state)
    _equal(ref, got)
    _equal(ref[:2], unrecorded[:2])
    # the cases exercise what they are named after
    spikes = np.asarray(ref[0])
    assert spikes.sum() > 0
    if layer.max_spikes < 31:
        assert spikes.max() == layer.max_spikes  # the cap binds
    if "saturating" in name:  # the synaptic state reaches int16 (its record is after the decay)
        isyn_chip = np.asarray(ref[2]["isyn"]) * np.asarray(layer.scale())[:, None]
        assert 32700 < np.abs(isyn_chip).max() < 32767.5


@pytest.mark.parametrize("name", list(GRAD_TERMS))
def test_gradients_equal_autodiff_float64(name):
    kwargs, batch, T = CASES[name]
    terms = GRAD_TERMS[name]
    with _x64():
        layer = _to64(_layer(**kwargs))
        x, state = _to64(_inputs(layer, T, batch, seed=2, integer=layer.quantize is not None))

        def grads(layer, x, state):  # one compilation for all cotangent combinations
            out = [
                [jax.value_and_grad(_loss(t, ref), argnums=(0, 1, 2))(layer, x, state) for ref in (True, False)]
                for t in terms
            ]
            if name != "chip":
                return out, None
            # parameters only: the input is then not differentiated (no dL/dcur kept without w_rec)
            only = [jax.grad(lambda m, ref=ref: _loss(terms[0], ref)(m, x, state))(layer) for ref in (True, False)]
            return out, only

        out, only = jax.jit(grads)(layer, x, state)
        for t, ((ref_v, ref), (got_v, got)) in zip(terms, out):
            assert float(ref_v) == float(got_v)  # the same forward values
            assert jax.tree_util.tree_structure(ref) == jax.tree_util.tree_structure(got)
            assert_trees_close(ref, got, rtol=1e-10)
            if layer.learn_dash and T > 1:  # every parameter is reached
                for path, g in jax.tree_util.tree_leaves_with_path(ref[0]):
                    assert np.abs(np.asarray(g)).max() > 0, (t, jax.tree_util.keystr(path))
        if only is not None:
            assert_trees_close(*only, rtol=1e-10)
        if not layer.learn_dash:  # the dashes are constants
            assert np.abs(np.asarray(out[0][1][1][0].dash_mem)).max() == 0.0


def _net_loss(ref):
    def loss(net, x, y):
        h = jnp.swapaxes(x, 0, 1)  # time-major
        for layer in net.layers:
            h, _, _ = _run(layer, h, layer.init_state((x.shape[0],)), False, ref)
        return optax.softmax_cross_entropy_with_integer_labels(h.sum(0), y).mean()

    return loss


def test_network_gradients_float32():
    """A hardware-aware network (input clip, hop delay, int8 channel quantization, caps) as it is
    trained, in float32: the same loss, and gradients equal to autodiff's to float32 accuracy."""
    k1, k2 = jax.random.split(jax.random.PRNGKey(3))
    plain = nn.Sequential(
        nn.Linear(12, 16, key=k1),
        nn.LIF(16, tau_mem=0.02, tau_syn=0.004, threshold=0.5),
        nn.Linear(16, 4, key=k2),
        nn.LIF(4, tau_mem=0.02, tau_syn=0.004, threshold=0.5),
    )
    net = xylo_aware(plain)
    x = jnp.asarray(np.random.default_rng(4).integers(0, 18, (6, 30, 12)).astype(np.float32))
    y = jnp.asarray(np.arange(6) % 4)

    def both(net, x, y):
        return [jax.value_and_grad(_net_loss(ref))(net, x, y) for ref in (True, False)]

    (ref_v, ref), (got_v, got) = jax.jit(both)(net, x, y)
    assert float(ref_v) == float(got_v)
    assert_trees_close(ref, got, rtol=2e-5)


NATIVE_CASES = {  # non-recurrent layers trained on their spikes: the backward runs the CPU kernel
    "chip": CASES["chip"],
    "chip-k2-unbatched-one-step": CASES["chip-k2-unbatched-one-step"],
    "chip-saturating-clipped": CASES["chip-saturating-clipped"],
    "chip-global-triangle": CASES["chip-global-triangle"],
    "float-k2-arctan-capped": (dict(n_in=4, n=3, k=2, quantize=None, kind="arctan", cap=2), (2, 2), 12),
}


@pytest.mark.skipif(not native.available(), reason="the native kernels could not be registered here")
@pytest.mark.parametrize("name", list(NATIVE_CASES))
def test_kernel_backward_equals_the_xla_loop(name, monkeypatch):
    """float32, the spikes' cotangent only: the kernel of :mod:`pondlib.nn.native` (the float LIF's
    recursion with alpha = 1 - f_mem, beta = 1 - f_syn) gives the XLA loop's gradients."""
    kwargs, batch, T = NATIVE_CASES[name]
    layer = _layer(**kwargs)
    x, state = _inputs(layer, T, batch, seed=5, integer=layer.quantize is not None)
    grad = jax.jit(jax.grad(_loss(("spikes",), False), argnums=(0, 1, 2)))
    assert "pondlib_lif_backward" in grad.lower(layer, x, state).as_text()
    got = grad(layer, x, state)
    monkeypatch.setattr(native, "eligible", lambda *a: False)
    xla = jax.jit(jax.grad(_loss(("spikes",), False), argnums=(0, 1, 2)))
    assert "pondlib_lif_backward" not in xla.lower(layer, x, state).as_text()
    ref = xla(layer, x, state)
    assert np.abs(np.asarray(ref[0].weight)).max() > 0  # the loss reaches the weights
    assert_trees_close(ref, got, rtol=2e-5)


@pytest.mark.skipif(not native.available(), reason="the native kernels could not be registered here")
@pytest.mark.parametrize("name", [n for n in NATIVE_CASES if n.startswith("chip")] + ["chip-capped"])
def test_kernel_forward_bit_identical(name):
    """Chip arithmetic, non-recurrent: the forward passes of training and of inference (the kernel of
    :func:`pondlib.nn.native.bitshift_lif_forward`) give the reference scan's spikes and final state bit for bit."""
    kwargs, batch, T = (dict(n_in=5, n=6, k=2, cap=1, delay=True), (2,), 15) if name == "chip-capped" else CASES[name]
    layer = _layer(**kwargs)
    x, state = _inputs(layer, T, batch, seed=6, integer=True)

    def trained(m, x, s):  # the primal of a vjp runs the custom rule's forward pass
        return jax.vjp(lambda m: _run(m, x, s, False, False)[:2], m)[0]

    for fn in (jax.jit(trained), jax.jit(lambda m, x, s: _run(m, x, s, False, False)[:2])):  # training, inference
        assert "pondlib_bitshift_lif_forward" in fn.lower(layer, x, state).as_text()
        got = fn(layer, x, state)
        ref = jax.jit(lambda m, x, s: _run(m, x, s, False, True)[:2])(layer, x, state)
        _equal(ref, got)
    spikes = np.asarray(ref[0])
    assert spikes.sum() > 0
    if layer.max_spikes == 1:
        assert spikes.max() == 1  # counts stay within the cap


def test_the_backward_loop_is_the_float_lifs(monkeypatch):
    """One backward loop: the layer's adjoint is :func:`pondlib.nn.adjoint.adjoint_backward` (the float
    LIF's) called with this layer's coefficients, alpha = 1 - f_mem, beta = 1 - f_syn, and its exact
    spike count; the gradients of the decay factors are those of alpha and beta negated."""
    from functools import partial

    from pondlib.devices.xylo import aware_adjoint
    from pondlib.nn import adjoint

    assert aware_adjoint.adjoint_backward is adjoint.adjoint_backward
    calls = []

    def spy(coef, res, cts, kernel):
        calls.append((coef, res, kernel))
        return adjoint.adjoint_backward(coef, res, cts, kernel)

    monkeypatch.setattr(aware_adjoint, "adjoint_backward", spy)
    layer = _layer(n_in=4, n=3, k=2, rec=True)
    x, state = _inputs(layer, 6, (2,), seed=3)
    grads = jax.grad(_loss(("spikes",), False), argnums=(0, 1, 2))(layer, x, state)
    assert len(calls) == 1
    coef, res, kernel = calls[0]
    g = layer.grid()
    np.testing.assert_array_equal(np.asarray(coef.alpha), 1.0 - np.asarray(jnp.exp2(-g["dash_mem"])))
    np.testing.assert_array_equal(np.asarray(coef.beta), 1.0 - np.asarray(jnp.exp2(-g["dash_syn"])))
    assert isinstance(coef.count, partial) and coef.count.func is aware_adjoint._count
    assert res.w_rec is not None and not kernel  # a recurrent layer runs the XLA loop
    assert np.abs(np.asarray(grads[0].dash_mem)).max() > 0
