"""The chain kernel's C build (pondlib/nn/csrc/chain.c) against its numba build
(:mod:`pondlib.nn.chain_kernels`): the same outputs and final states bit for bit, on random chains
(Linear with and without bias, LIF with one or two synapses, recurrent or not, spike caps), any batch
size (partial tiles), input densities from 0 to 1, every mode (auto, dense, sparse), with x and y
time-major or batch-major; and the C build is what XLA calls when a compiler is there."""

from __future__ import annotations

import ctypes
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.cprogram import native as cnative
from pondlib.nn import native
from pondlib.nn.fused import chain_scan

SOURCE = Path(native.__file__).resolve().parent / "csrc" / "chain.c"


@pytest.fixture(scope="module")
def lib():
    built = cnative.load("pond_chain", SOURCE, include_dirs=(jax.ffi.include_dir(),))
    if built is None:
        pytest.skip(f"the C build is unavailable here: {cnative.unavailable_reason('pond_chain')}")
    built.pond_chain_run.restype = ctypes.c_int
    return built


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return a.ctypes.data_as(ctypes.c_void_p)


def _run_c(lib, x, prm, ops, state0, cfg, n_last, batch_major: bool):
    steps, batch, n0 = x.shape
    xin = np.ascontiguousarray(x.transpose(1, 0, 2)) if batch_major else x
    y = np.full((batch, steps, n_last) if batch_major else (steps, batch, n_last), np.nan, np.float32)
    state = np.full(state0.shape, np.nan, np.float32)
    i64 = ctypes.c_int64
    arrays = [_ptr(a) for a in (xin, prm, ops, state0, cfg, y, state)]
    sizes = [i64(v) for v in (steps, batch, n0, ops.shape[0], state0.shape[1], n_last)]
    rc = lib.pond_chain_run(*arrays, *sizes, ctypes.c_int(int(batch_major)))
    assert rc == 0
    return (y.transpose(1, 0, 2) if batch_major else y), state


def _run_numba(x, prm, ops, state0, cfg, n_last):
    from pondlib.nn import chain_kernels

    y = np.zeros((x.shape[0], x.shape[1], n_last), np.float32)
    state = np.zeros_like(state0)
    chain_kernels._chain(x, prm, ops, state0, cfg, y, state)
    return y, state


@st.composite
def chains(draw):
    """A random chain in the kernel's layout: x, prm, ops, state0, n_last."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    width = n0 = draw(st.integers(1, 40))
    ops, pieces, offset, s_off = [], [], 0, 0
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):  # Linear
            n_out = draw(st.integers(1, 70))
            w = rng.normal(0, 1.5 / np.sqrt(width), (width, n_out)).astype(np.float32)
            bias = rng.normal(0, 0.2, n_out).astype(np.float32) if draw(st.booleans()) else None
            ops.append([0, width, n_out, offset, -1 if bias is None else offset + w.size, 0, 0, 0])
            pieces += [w.ravel()] + ([] if bias is None else [bias])
            offset += w.size + (0 if bias is None else n_out)
            width = n_out
            continue
        k = draw(st.sampled_from([1, 1, 2]))
        if width % k:
            k = 1
        n = width // k
        rec = draw(st.booleans())
        alpha = rng.uniform(0.5, 1.0, n).astype(np.float32)
        beta = rng.uniform(0.3, 1.0, n * k).astype(np.float32)
        th = rng.uniform(0.2, 1.5, n).astype(np.float32)
        bias = rng.normal(0, 0.1, n).astype(np.float32)
        cap = np.float32(draw(st.sampled_from([1.0, 3.0, 2.0**16])))
        w_rec = rng.normal(0, 0.6, (n, n * k)).astype(np.float32) if rec else None
        ops.append([1, n, k, offset, offset + 3 * n + n * k + 1 if rec else -1, s_off, 0, 0])
        pieces += [alpha, beta, th, bias, np.array([cap], np.float32)] + ([w_rec.ravel()] if rec else [])
        offset += 3 * n + n * k + 1 + (w_rec.size if rec else 0)
        s_off += n * k + 2 * n
        width = n
    steps, batch = draw(st.integers(1, 12)), draw(st.integers(1, 21))
    density = draw(st.sampled_from([0.0, 0.03, 0.2, 0.6, 1.0]))
    x = ((rng.random((steps, batch, n0)) < density) * rng.choice([1.0, 2.0, 0.7], (steps, batch, n0))).astype(
        np.float32
    )
    size = max(s_off, 1)
    state0 = np.zeros((batch, size), np.float32)
    if draw(st.booleans()):  # a state carried over from an earlier run, spikes included
        state0 = np.abs(rng.normal(0, 0.5, (batch, size))).round(1).astype(np.float32)
    prm = np.concatenate(pieces).astype(np.float32) if pieces else np.zeros(1, np.float32)
    return x, prm, np.asarray(ops, np.int32), state0, width


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chain=chains(), mode=st.sampled_from([0, 1, 2]), crossover=st.sampled_from([0.0, 0.3, 0.75, 1.0]))
def test_c_equals_numba_bit_for_bit(lib, chain, mode, crossover):
    x, prm, ops, state0, n_last = chain
    cfg = np.array([mode, crossover], np.float32)
    y_n, s_n = _run_numba(x, prm, ops, state0, cfg, n_last)
    for batch_major in (False, True):
        y_c, s_c = _run_c(lib, x, prm, ops, state0, cfg, n_last, batch_major)
        np.testing.assert_array_equal(y_c.view(np.int32), y_n.view(np.int32))
        np.testing.assert_array_equal(s_c.view(np.int32), s_n.view(np.int32))


def test_the_modes_agree_and_spikes_happen(lib):
    rng = np.random.default_rng(5)
    n0, n = 33, 70
    w = rng.normal(0, 0.6, (n0, n)).astype(np.float32)
    lif = [np.full(n, 0.9), np.full(n, 0.8), np.full(n, 0.5), np.zeros(n), [3.0], rng.normal(0, 0.3, n * n)]
    prm = np.concatenate([w.ravel()] + [np.asarray(a, np.float32) for a in lif]).astype(np.float32)
    ops = np.array([[0, n0, n, 0, -1, 0, 0, 0], [1, n, 1, w.size, w.size + 3 * n + n + 1, 0, 0, 0]], np.int32)
    x = (rng.random((40, 19, n0)) < 0.1).astype(np.float32)
    state0 = np.zeros((19, 3 * n), np.float32)
    outs = [_run_c(lib, x, prm, ops, state0, np.array([m, 0.75], np.float32), n, True) for m in (0, 1, 2)]
    assert outs[0][0].sum() > 0  # the layer spikes: the comparison is not between zeros
    for y, s in outs[1:]:
        np.testing.assert_array_equal(y, outs[0][0])
        np.testing.assert_array_equal(s, outs[0][1])


def test_xla_calls_the_c_build_and_it_equals_numba(lib):
    assert native.chain_engine() == "c"
    k1, k2 = jax.random.split(jax.random.PRNGKey(2))
    layers = (nn.Linear(16, 40, key=k1), nn.LIF(40, has_rec=True, key=k2), nn.Linear(40, 6, key=k1), nn.LIF(6))
    x = jax.random.bernoulli(jax.random.PRNGKey(0), 0.2, (30, 11, 16)).astype(jnp.float32) * 4.0
    states = tuple(m.init_state((11,)) for m in layers)
    program = jax.jit(lambda x: chain_scan(layers, x, states)[0]).lower(x).as_text()
    assert "pondlib_chain_forward" in program
    y = np.asarray(jax.jit(lambda x: chain_scan(layers, x, states)[0])(x))
    assert y.sum() > 0
    # the same chain through the numba build, time-major, with the arguments the fused path builds
    from pondlib.nn.fused import _kernel_layout, _split

    specs, params, _ = _split(layers, states)
    ops, pieces, size = _kernel_layout(specs, params)
    prm = np.concatenate([np.ravel(np.asarray(a)) for a in pieces]).astype(np.float32)
    y_n, _ = _run_numba(np.asarray(x), prm, ops, np.zeros((11, size), np.float32), np.array([0, 0.75], np.float32), 6)
    np.testing.assert_array_equal(y, y_n)


def test_spike_counts_at_the_edges_of_twice_the_threshold(lib):
    """P = x exactly (alpha = 0, beta = 1, one step), thresholds of every magnitude and inputs at and
    around theta, 1.999 theta and 2 theta: the counts the division gives, whether or not the C build
    divides (it skips the division where every lane is below fl(1.999 theta))."""
    rng = np.random.default_rng(11)
    # normal thresholds only: inside XLA's threads denormals are flushed to zero (and so in OpenMP
    # threads first started from one), so a subnormal case depends on which thread runs the kernel
    th = np.concatenate([rng.uniform(0.1, 3.0, 40), [2e-38, 1.5e-38, 4e-38, 1.0, 3e38, 2e38, 0.5, 7.0]])
    th = th.astype(np.float32)
    cases = []
    with np.errstate(over="ignore"):  # 2 theta of the largest thresholds is inf: one of the cases
        for t in th:
            edges = [t, np.float32(1.999) * t, np.float32(2) * t, np.float32(0.9999) * t, np.float32(1.5) * t]
            for e in np.asarray(edges, np.float32):
                cases += [np.nextafter(e, np.float32(-np.inf)), e, np.nextafter(e, np.float32(np.inf))]
    x = np.asarray(cases, np.float32)
    n = x.size
    thr = np.repeat(th, x.size // th.size)
    lif = [np.zeros(n), np.ones(n), thr, np.zeros(n), [2.0**16]]
    prm = np.concatenate([np.asarray(a, np.float32) for a in lif])
    ops = np.array([[1, n, 1, 0, -1, 0, 0, 0]], np.int32)
    xx = np.ascontiguousarray(x[None, None, :])
    state0 = np.zeros((1, 3 * n), np.float32)
    cfg = np.array([0, 0.75], np.float32)
    y_c, s_c = _run_c(lib, xx, prm, ops, state0, cfg, n, False)
    with np.errstate(all="ignore"):
        expected = np.where(x >= thr, np.minimum(np.maximum(np.floor(x / thr), 0), 2.0**16), 0).astype(np.float32)
    np.testing.assert_array_equal(y_c[0, 0], expected)
    assert {1.0, 2.0} <= set(np.unique(expected).tolist())  # both sides of the shortcut are exercised
    y_n, s_n = _run_numba(xx, prm, ops, state0, cfg, n)
    np.testing.assert_array_equal(y_c.view(np.int32), y_n.view(np.int32))
    np.testing.assert_array_equal(s_c.view(np.int32), s_n.view(np.int32))
