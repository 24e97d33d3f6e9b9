"""The C build of the training kernels (``pondlib/nn/csrc/lif.c``) against the numba kernels it replaces
(:mod:`pondlib.nn.lif_kernels`), and the Linear -> LIF pair kernels against the XLA path and the
inference kernel.

- Bit for bit: the forward, backward and bit-shift forward loops called directly (ctypes and numba) on the
  same NumPy arrays, for many shapes (rows not a multiple of any vector width, one to three synapses),
  spike caps and every surrogate kind; the results are compared as bit patterns (a -0 against a +0
  fails), on one thread and on several.
- The C path never imports numba (a fresh process).
- Pair kernels: the training forward gives the inference kernel's spikes and states bit for bit (the
  same sums in the same order); gradients of a network agree with the XLA path (kernels off) to float32
  rounding, through records and state cotangents too (the layer-by-layer fallback); bad surrogate or
  recurrent layers keep the other paths.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.cprogram import native as cnative
from pondlib.nn import native
from pondlib.nn.fused import chain_scan
from tests.strategies import assert_trees_close

SOURCE = Path(native.__file__).resolve().parent / "csrc" / "lif.c"


def _lib():
    if not hasattr(jax, "ffi") or not hasattr(jax.ffi, "include_dir"):
        return None
    return cnative.load("pond_lif", SOURCE, include_dirs=(jax.ffi.include_dir(),))


LIB = _lib()
needs_c = pytest.mark.skipif(LIB is None, reason=f"no C build here: {cnative.unavailable_reason('pond_lif')}")

_F = np.ctypeslib.ndpointer(np.float32, flags="C_CONTIGUOUS")
_I = ctypes.c_int64
if LIB is not None:
    LIB.pond_lif_forward.argtypes = [_F] * 5 + [ctypes.c_float] + [_F] * 7 + [_I] * 4
    LIB.pond_lif_backward.argtypes = [_F] * 15 + [_I] * 4
    LIB.pond_bitshift_forward.argtypes = [_F] * 12 + [_I] * 4


@pytest.fixture(scope="module")
def kernels():
    """The numba kernels (compiled once, cached by numba)."""
    return pytest.importorskip("pondlib.nn.lif_kernels")


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint32)


def _assert_bits(got, want):
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_array_equal(_bits(g), _bits(w))


def _arrays(steps, rows, m, k, seed, integer=False):
    rng = np.random.default_rng(seed)
    f = np.float32
    if integer:  # chip units: whole numbers, decay factors 2^-d
        x = rng.integers(-40, 60, (steps, rows, m * k)).astype(f)
        a, b = ((2.0 ** -rng.integers(1, 6, size)).astype(f) for size in (m, m * k))
        th = rng.integers(20, 90, m).astype(f)
        bias = rng.integers(-3, 4, m).astype(f)
        i0 = rng.integers(-10, 10, (rows, m * k)).astype(f)
        v0 = rng.integers(-10, 10, (rows, m)).astype(f)
        return x, a, b, th, bias, i0, v0
    x = rng.normal(0.6, 1.2, (steps, rows, m * k)).astype(f)
    a = rng.uniform(0.5, 0.99, m).astype(f)
    b = rng.uniform(0.5, 0.99, m * k).astype(f)
    th = rng.uniform(0.3, 1.7, m).astype(f)
    bias = (rng.normal(0, 0.1, m)).astype(f)
    i0 = rng.normal(0, 0.2, (rows, m * k)).astype(f)
    v0 = rng.normal(0, 0.2, (rows, m)).astype(f)
    return x, a, b, th, bias, i0, v0


SHAPES = [(1, 1, 1, 1), (7, 3, 13, 1), (30, 9, 37, 1), (20, 1, 300, 1), (12, 5, 11, 2), (9, 17, 6, 3)]


def _forward_both(kernels, steps, rows, m, k, cap, seed):
    x, a, b, th, bias, i0, v0 = _arrays(steps, rows, m, k, seed)
    outs = []
    for _ in range(2):
        outs.append(
            [np.zeros(s, np.float32) for s in ((steps, rows, m), (steps, rows, m * k), (steps, rows, m))]
            + [np.zeros((rows, m * k), np.float32), np.zeros((rows, m), np.float32)]
        )
    pre, q, s, i_f, v_f = outs[0]
    kernels._forward(x, a, b, th, bias, np.float32(cap), pre, q, s, i0, v0, i_f, v_f)
    pre, q, s, i_f, v_f = outs[1]
    assert LIB.pond_lif_forward(x, a, b, th, bias, cap, pre, q, s, i0, v0, i_f, v_f, steps, rows, m, k) == 0
    return outs


@needs_c
@pytest.mark.parametrize("steps,rows,m,k", SHAPES)
@pytest.mark.parametrize("cap", [1.0, 3.0, 65536.0])
def test_forward_bit_equal_to_numba(kernels, steps, rows, m, k, cap):
    want, got = _forward_both(kernels, steps, rows, m, k, cap, seed=steps * m + k)
    _assert_bits(got, want)
    if steps * m > 100:
        assert 0.02 < float((got[2] > 0).mean()) < 0.98  # thresholds are crossed and missed


@needs_c
@pytest.mark.parametrize("steps,rows,m,k", SHAPES)
@pytest.mark.parametrize("kind", [0, 1, 2])
def test_backward_bit_equal_to_numba(kernels, steps, rows, m, k, kind):
    _, (pre, q, _, _, _) = _forward_both(kernels, steps, rows, m, k, 4.0, seed=kind + m)
    x, a, b, th, _, _, v0 = _arrays(steps, rows, m, k, seed=kind + m)
    g = np.random.default_rng(kind).normal(0, 1, (steps, rows, m)).astype(np.float32)
    cfg = np.asarray([4.0, 3.0 * (np.pi if kind == 2 else 1.0), kind], np.float32)
    v0f = v0.reshape(-1).copy()
    results = []
    for _ in range(2):
        results.append(
            [np.zeros(n, np.float32) for n in (m, m * k, m, m)]
            + [
                np.zeros((steps, rows, m * k), np.float32),
                np.zeros(rows * m * k, np.float32),
                np.zeros(rows * m, np.float32),
            ]
        )
    kernels._backward(pre, q, g, a, b, th, v0f, cfg, *results[0])
    assert LIB.pond_lif_backward(pre, q, g, a, b, th, v0f, cfg, *results[1], steps, rows, m, k) == 0
    _assert_bits(results[1], results[0])
    assert np.abs(results[1][4]).max() > 0


@needs_c
@pytest.mark.parametrize("steps,rows,m,k", SHAPES)
def test_bitshift_forward_bit_equal_to_numba(kernels, steps, rows, m, k):
    cur, f_mem, f_syn, th, bias, i0, v0 = _arrays(steps, rows, m, k, seed=rows + k, integer=True)
    cfg = np.asarray([7.0, -(2.0**15), 2.0**15 - 1], np.float32)
    results = []
    for _ in range(2):
        results.append(
            [np.zeros(s, np.float32) for s in ((steps, rows, m), (steps, rows, m * k), (steps, rows, m))]
            + [np.zeros((rows, m * k), np.float32)]
        )
    kernels._bitshift_forward(cur, f_mem, f_syn, th, bias, cfg, *results[0][:3], i0, v0, results[0][3])
    assert (
        LIB.pond_bitshift_forward(
            cur, f_mem, f_syn, th, bias, cfg, *results[1][:3], i0, v0, results[1][3], steps, rows, m, k
        )
        == 0
    )
    _assert_bits(results[1], results[0])


@needs_c
@settings(max_examples=15, deadline=None)
@given(
    steps=st.integers(1, 12),
    rows=st.integers(1, 11),
    m=st.integers(1, 70),
    k=st.integers(1, 3),
    cap=st.sampled_from([1.0, 2.0, 31.0]),
    seed=st.integers(0, 2**16),
)
def test_forward_bit_equal_to_numba_any_shape(kernels, steps, rows, m, k, cap, seed):
    want, got = _forward_both(kernels, steps, rows, m, k, cap, seed)
    _assert_bits(got, want)


@needs_c
def test_the_c_path_never_imports_numba(tmp_path):
    """A fresh process registers the C build (the library cached on disk) and never imports numba."""
    code = (
        "import sys; from pondlib.nn import native; print(native.available(), native.engine(), 'numba' in sys.modules)"
    )
    env = dict(os.environ, PONDLIB_CACHE_DIR=str(cnative.cache_dir().parent))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.stdout.split() == ["True", "c", "False"], out.stderr[-2000:]


# -- the pair kernels ------------------------------------------------------------------------------

needs_pair = pytest.mark.skipif(not native.pair_available(), reason="the C build of the training kernels is not here")


def _net(n_in=6, hidden=24, n_out=4, k=1, bias=False, seed=0, tail=False):
    """Linear -> LIF -> Linear -> LIF (a chain of pairs); with ``tail`` a last Linear (the pairs then train
    one by one, the chain kernel does not apply)."""
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(seed), 3)
    lif = dict(tau_mem=0.02, tau_syn=0.01, dt=1e-3)
    c = 0.1 * jnp.sin(jnp.arange(hidden * k, dtype=jnp.float32)) if bias else False
    layers = [
        nn.Linear(n_in, hidden * k, bias=c, key=k1),
        nn.LIF((hidden * k, hidden), **lif),
        nn.Linear(hidden, n_out, bias=bias, key=k2),
        nn.LIF(n_out, **lif),
    ]
    return nn.Sequential(*layers, *([nn.Linear(n_out, n_out, key=k3)] if tail else []))


def _spikes(shape, rate, seed):
    return (jax.random.uniform(jax.random.PRNGKey(seed), shape) < rate).astype(jnp.float32) * 1.5


@needs_pair
@pytest.mark.parametrize("batch,k,bias", [(5, 1, False), (3, 2, True)])
def test_pair_forward_equals_the_inference_kernel(batch, k, bias):
    """The pair's currents are the inference kernel's sums in the same order: spikes, final synaptic
    currents and membranes equal bit for bit."""
    net = _net(k=k, bias=bias)
    lin, lif = net.layers[0], net.layers[1]
    x = _spikes((30, batch, 6), 0.3, seed=batch)
    states = (None, lif.init_state((batch,)))
    y, new = chain_scan((lin, lif), x, states, path="dense")
    p = lif.parameters()
    n = p.alpha.shape[0]
    zero = jnp.zeros((batch, n * k))
    pre, q, spikes, i_f, v_f = native.pair_forward(
        x, lin.weight, lin.bias, p.alpha, p.beta, p.threshold, p.bias, zero, zero[:, :n], p.max_spikes
    )
    assert float(spikes.sum()) > 0
    _assert_bits(
        [np.asarray(spikes), np.asarray(i_f), np.asarray(v_f)],
        [np.asarray(y), np.asarray(new[1].isyn).reshape(batch, -1), np.asarray(new[1].vmem)],
    )


def _loss(net, x, record=False):
    out, st, rec = net(x, record=record)
    value = jnp.sum(out.sum(1) * jnp.arange(1.0, 5.0))
    if record:
        value = value + 0.1 * jnp.sum(rec["1_LIF/vmem"]) + 0.05 * jnp.sum(st[1].vmem)
    return value


@needs_pair
@pytest.mark.parametrize("k,bias,record", [(2, True, False), (1, True, True)])
def test_pair_gradients_agree_with_the_xla_path(monkeypatch, k, bias, record):
    net, x = _net(k=k, bias=bias, seed=k, tail=True), _spikes((3, 40, 6), 0.3, seed=2)
    grad = jax.jit(jax.grad(_loss, argnums=(0, 1)), static_argnums=2)
    hlo = grad.lower(net, x, record).as_text()
    # both pairs run forward; backward, a pair whose LIF has other cotangents (a recorded membrane, its
    # final state) runs the layer-by-layer adjoint from the same residuals, the other its kernel
    assert hlo.count("pondlib_lif_pair_forward") >= 2 and "pondlib_lif_pair_backward" in hlo
    got = grad(net, x, record)
    monkeypatch.setenv("PONDLIB_NATIVE", "0")
    ref = jax.grad(_loss, argnums=(0, 1))(net, x, record)
    assert any(float(jnp.abs(g).max()) > 0 for g in jax.tree_util.tree_leaves(got))
    assert_trees_close(ref, got, rtol=1e-4)


@needs_pair
def test_pair_skips_recurrent_layers():
    net = nn.Sequential(nn.Linear(3, 5, key=jax.random.PRNGKey(0)), nn.LIF(5, has_rec=True, key=jax.random.PRNGKey(1)))
    hlo = jax.jit(jax.grad(lambda n: n(jnp.ones((2, 10, 3)))[0].sum())).lower(net).as_text()
    assert "pondlib_lif_pair" not in hlo


# -- chains of pairs trained as one loop ----------------------------------------------------------------


def _chain_loss(net, x, kind):
    out, st, _ = net(x)
    value = jnp.sum(out.sum(1) * jnp.arange(1.0, 5.0))
    if kind == "dx":  # the input is differentiated too
        value = value + 0.01 * jnp.sum(x * out.sum())
    if kind == "state":  # a final state's cotangent: the pairs' adjoints run instead of the chain kernel
        value = value + 0.05 * jnp.sum(st[1].vmem)
    return value


@needs_pair
@pytest.mark.parametrize(
    "k,bias,kind,keep,shape",
    [
        (2, True, "dx", False, (3, 40, 6)),
        (3, True, "dx", False, (9, 5, 6)),  # a batch that fills no tile evenly, three synapses
        (1, True, "plain", True, (3, 40, 6)),
        (1, False, "state", False, (3, 40, 6)),
    ],
)
def test_chain_gradients_agree_with_the_xla_path(monkeypatch, k, bias, kind, keep, shape):
    """Gradients of the whole chain trained as one loop (the stacks of P and q kept, or recomputed per
    sample) against the XLA path, to float32 rounding."""
    from pondlib.nn import train_chain

    monkeypatch.setattr(train_chain, "RECOMPUTE_LIMIT" if keep else "KEEP_LIMIT", 0 if keep else -1)
    net, x = _net(k=k, bias=bias, seed=k), _spikes(shape, 0.3, seed=4)
    grad = jax.jit(jax.grad(_chain_loss, argnums=(0, 1)), static_argnums=2)
    hlo = grad.lower(net, x, kind).as_text()
    # (a loss linear in the spikes leaves the forward kernel's outputs unused: XLA may drop it when the
    # backward pass recomputes the residuals)
    assert "pondlib_lif_chain_forward" in hlo or kind == "plain"
    assert ("pondlib_lif_chain_backward" in hlo) == (kind != "state")
    got = grad(net, x, kind)
    monkeypatch.setenv("PONDLIB_NATIVE", "0")
    ref = jax.grad(_chain_loss, argnums=(0, 1))(net, x, kind)
    assert any(float(jnp.abs(g).max()) > 0 for g in jax.tree_util.tree_leaves(got))
    assert_trees_close(ref, got, rtol=1e-4)


@needs_pair
def test_chain_training_forward_equals_inference():
    """The training loop's sums are the inference kernel's: the outputs and final states are equal bit for
    bit."""
    net, x = _net(bias=True), _spikes((4, 30, 6), 0.3, seed=6)
    (y, st, _), _ = jax.vjp(lambda n: n(x), net)
    y_inf, st_inf, _ = net(x)
    assert float(y.sum()) > 0
    _assert_bits(
        [np.asarray(a) for a in jax.tree_util.tree_leaves((y, st))],
        [np.asarray(a) for a in jax.tree_util.tree_leaves((y_inf, st_inf))],
    )


@needs_pair
def test_chain_gradients_do_not_depend_on_the_thread_count(tmp_path):
    """The same gradients bit for bit on one thread (a fresh process, OMP_NUM_THREADS=1) and on this
    process's threads: the parameter sums are kept per tile of samples, a number fixed by the batch."""
    code = (
        "import sys, numpy as np, jax; sys.path.insert(0, {!r})\n"
        "from tests.nn.test_lif_c import _net, _spikes, _chain_loss\n"
        "g = jax.grad(_chain_loss)(_net(bias=True), _spikes((11, 40, 6), 0.3, seed=8), 'plain')\n"
        "np.savez({!r}, *[np.asarray(a) for a in jax.tree_util.tree_leaves(g)])\n"
    ).format(str(Path(__file__).resolve().parents[2]), str(tmp_path / "g.npz"))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = jax.tree_util.tree_leaves(jax.grad(_chain_loss)(_net(bias=True), _spikes((11, 40, 6), 0.3, seed=8), "plain"))
    with np.load(tmp_path / "g.npz") as one:
        _assert_bits([np.asarray(a) for a in got], [one[f"arr_{i}"] for i in range(len(got))])
