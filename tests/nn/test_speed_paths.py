"""The event-driven inference kernel of the fused chain (:func:`pondlib.nn.native.chain_forward`, run by
:func:`pondlib.nn.fused.chain_scan` on CPU) against the XLA loop it replaces, and its paths against
each other.

- Against the XLA loop (``path="xla"``): equal spikes, states to float32 rounding (the products sum
  in another order), for one and two synapses, biases, recurrent layers, partial tiles of samples and
  batch shapes ``()``, ``(B,)``, ``(B1, B2)``, spike and real-valued inputs.
- Sparse (gathered rows), dense and auto are the same computation: outputs and states equal bit for
  bit, whatever the inputs' density.
- The kernel is what the compiled program calls on the default path (feed-forward chains), not with
  ``record``, not on the ``"xla"`` path, not with ``PONDLIB_NATIVE=0``; a run continued from the
  returned state equals one run; bad paths are refused with a GraphError naming the choices.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.errors import GraphError
from pondlib.nn import fused, native
from pondlib.nn.fused import PATHS, chain_scan, inference_path
from tests.strategies import bad_types

pytestmark = pytest.mark.skipif(not native.available(), reason="the native kernels could not be registered here")


def _layers(rec: bool = False, k: int = 1, n_in: int = 12, hidden: int = 21, seed: int = 3) -> tuple:
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(seed), 3)
    return (
        nn.Linear(n_in, hidden * k, key=k1, bias=True),
        nn.LIF((hidden * k, hidden), tau_mem=0.02, tau_syn=0.01, threshold=0.7, has_rec=rec, key=k3),
        nn.Linear(hidden, 5, key=k2),
        nn.LIF(5, tau_mem=0.02, tau_syn=0.005, threshold=0.5, max_spikes_per_dt=3),
    )


def _x(shape: tuple, density: float, seed: int = 0, spikes: bool = True) -> jax.Array:
    kx, ka = jax.random.split(jax.random.PRNGKey(seed))
    mask = jax.random.bernoulli(kx, density, shape).astype(jnp.float32)
    return mask * 3.0 if spikes else mask * jax.random.uniform(ka, shape, maxval=4.0)


def _run(layers: tuple, x: jax.Array, path: str):
    states = tuple(m.init_state(x.shape[1:-1]) for m in layers)
    return chain_scan(layers, x, states, path=path)


def _leaves(tree) -> list[np.ndarray]:
    return [np.asarray(a) for a in jax.tree_util.tree_leaves(tree)]


@pytest.mark.parametrize(
    "rec,k,batch,spikes",
    [(False, 1, (43,), True), (False, 2, (3, 4), False), (True, 1, (9,), True), (False, 1, (), False)],
)
def test_kernel_equals_the_xla_loop(rec, k, batch, spikes):
    layers = _layers(rec, k)
    x = _x((25,) + batch + (12,), 0.3, spikes=spikes)
    y_ref, st_ref = _run(layers, x, "xla")
    y, st = _run(layers, x, "sparse")
    assert float(jnp.sum(y_ref)) > 0  # the network spikes
    np.testing.assert_array_equal(np.asarray(y), np.asarray(y_ref))
    for a, b in zip(_leaves(st), _leaves(st_ref), strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(b).max())))


@pytest.mark.parametrize("rec", [False, True])
def test_sparse_dense_and_auto_are_bit_equal(rec):
    """Every density from none to all, in one batch (each sample its own), spike counts and real values;
    auto runs the kernel for the feed-forward chain (a recurrent one goes to XLA: not compared)."""
    layers = _layers(rec=rec)
    density = jnp.linspace(0.0, 1.0, 10)[None, :, None]
    x = _x((30, 10, 12), 1.0, seed=5, spikes=False)
    x = jnp.where(jax.random.uniform(jax.random.PRNGKey(9), x.shape) < density, x, 0.0)
    x = x.at[:, ::2].set(jnp.ceil(x[:, ::2]))  # whole spike counts in every other sample
    paths = ("sparse", "dense") if rec else ("sparse", "dense", "auto")
    ref, *others = (_leaves(_run(layers, x, p)) for p in paths)
    assert ref[0].sum() > 0
    for other in others:
        for a, b in zip(ref, other, strict=True):
            np.testing.assert_array_equal(a, b)


def test_a_continued_run_equals_one_run():
    layers = _layers()
    x = _x((30, 11, 12), 0.2)
    y, st = _run(layers, x, "auto")
    y1, s1 = _run(layers, x[:17], "auto")
    y2, s2 = chain_scan(layers, x[17:], s1, path="auto")
    np.testing.assert_array_equal(np.concatenate([y1, y2]), np.asarray(y))
    for a, b in zip(_leaves(s2), _leaves(st), strict=True):
        np.testing.assert_array_equal(a, b)


def _calls_kernel(fn, *args) -> bool:
    return "pondlib_chain_forward" in jax.jit(fn).lower(*args).as_text()


def test_the_compiled_program_calls_the_kernel_where_it_should(monkeypatch):
    net = nn.Sequential(*_layers())
    rec_net = nn.Sequential(*_layers(rec=True))
    x = _x((20, 11, 12), 0.1)
    assert _calls_kernel(lambda x: net(x)[0], x)  # the default path, feed-forward
    # auto runs recurrent chains in the C build, leaves them to XLA where the kernel is numba's
    assert _calls_kernel(lambda x: rec_net(x)[0], x) == (native.chain_engine() == "c")
    assert not _calls_kernel(lambda x: net(x, record=True)[0], x)
    with inference_path("xla"):
        assert not _calls_kernel(lambda x: net(x)[0], x)
    with inference_path("sparse"):
        assert _calls_kernel(lambda x: rec_net(x)[0], x)
    monkeypatch.setenv("PONDLIB_NATIVE", "0")
    assert not _calls_kernel(lambda x: net(x)[0], x)


def test_the_public_call_and_gradients_are_unchanged():
    """``Sequential(...)(x)`` runs the kernel and gives the XLA loop's spikes; a gradient still runs the
    layer-by-layer adjoint (the kernel is inference only)."""
    net = nn.Sequential(*_layers())
    x = _x((11, 30, 12), 0.2)  # (B, T, N): the public layout
    y, _, _ = net(x)
    with inference_path("xla"):
        y_ref, _, _ = net(x)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(y_ref))
    g = jax.grad(lambda n: n(x)[0].sum())(net)
    assert all(np.isfinite(np.asarray(a)).all() for a in jax.tree_util.tree_leaves(g))


def test_inference_path_restores_the_previous_default():
    assert fused._default_path[0] == "auto"
    with inference_path("dense"):
        with inference_path("xla"):
            assert fused._default_path[0] == "xla"
        assert fused._default_path[0] == "dense"
    assert fused._default_path[0] == "auto"


@settings(max_examples=30, deadline=None)
@given(bad=st.one_of(bad_types(), st.text(max_size=8)).filter(lambda s: s is not None and s not in PATHS))
def test_bad_paths_are_refused(bad):
    layers = _layers()
    x = jnp.zeros((3, 2, 12))
    states = tuple(m.init_state((2,)) for m in layers)
    with pytest.raises(GraphError, match="path"):
        chain_scan(layers, x, states, path=bad)
    with pytest.raises(GraphError, match="path"):
        with inference_path(bad):
            pass
    assert fused._default_path[0] == "auto"


def test_the_chain_kernel_registers_and_checks_itself_inside_a_trace():
    """The chain kernel's first use is usually inside ``jax.jit`` (a traced call of the network): its
    self-test must run eagerly there too, else every chain would stay on the XLA loop."""
    got = []
    jax.jit(lambda x: (got.append(native._register_chain()), x)[1])(1.0)
    assert got == [True]


def test_the_hint_reaches_a_plain_call_compiled_before():
    """``net(x)`` is compiled once and cached; a path set afterwards still applies to it (the XLA
    loop's states differ from the kernel's in the last bits here, so the two calls are told apart)."""
    net = nn.Sequential(*_layers(k=2))
    x = _x((7, 25, 12), 0.4, spikes=False)
    kernel = _leaves(net(x)[1])
    with inference_path("xla"):
        xla = _leaves(net(x)[1])
    states = tuple(m.init_state((7,)) for m in net.layers)
    ref = _leaves(chain_scan(net.layers, jnp.swapaxes(x, 0, 1), states, path="xla")[1])
    for a, b in zip(xla, ref, strict=True):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(kernel, ref, strict=True))
    np.testing.assert_array_equal(np.asarray(net(x)[0]), np.asarray(net(x)[0]))
