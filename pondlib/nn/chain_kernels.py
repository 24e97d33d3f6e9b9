r"""The numba kernel behind :func:`pondlib.nn.native.chain_forward`: inference of a whole chain of
``Linear`` and ``LIF`` modules (:mod:`pondlib.nn.fused`), event-driven, a tile of :data:`TILE` samples
at a time through all steps, the tiles split over the cores (imported on first use, like
:mod:`pondlib.nn.lif_kernels`).

For every sample ``b`` and step ``t`` the row ``h_0 = x[t, b]`` passes through the modules in order; a
``Linear`` of ``W`` (n_in, n_out) and bias ``c`` computes

.. math::

    h_{j+1}[o] = \Big(\sum_{i:\ h_j[i] \ne 0} h_j[i]\, W[i, o]\Big) + c[o]
        \qquad \text{(the sum in ascending } i\text{, each term one fused multiply-add)},

and a ``LIF`` runs the step of :func:`pondlib.nn.lif_core.lif_step_flat` (the recurrent current
:math:`s_{t-1} W_{rec}` by the same sum over the previous step's non-zero spike counts, added to the
input current as :func:`~pondlib.nn.lif_core.recurrent_input` adds it), its multiply-adds fused as in
:mod:`pondlib.nn.lif_kernels`. Only the state of one tile (a few tens of kB for 256-neuron layers) and
one row per module and sample are live, so the loop runs in the first- and second-level caches and no
``(T, *batch, N)`` stack is written except the output.

Event-driven: a row's non-zero entries are gathered first (their indices, ascending) and only those
rows of ``W`` are added ("sparse"). Skipping a zero entry leaves the sum unchanged bit for bit (an FMA
with a zero factor returns its addend), so the sparse and the dense loop (every row of ``W``, no
gathering, the weight rows outermost so that each is read once per tile) give identical results;
which one runs is a matter of speed alone. ``mode`` 0 chooses per product and tile from the measured
density (sparse where at most ``crossover`` of the tile's entries are non-zero), 1 always dense, 2
always sparse.

Layout of the arguments (built by :func:`pondlib.nn.fused.chain_scan`): ``prm`` (P,) every parameter
flat; ``ops`` (n_ops, 8) int32, one row per module: a Linear ``[0, n_in, n_out, w_off, c_off or -1, 0,
0, 0]`` (``W`` row-major at ``w_off``), a LIF ``[1, N, k, p_off, wrec_off or -1, s_off, 0, 0]`` with
``alpha`` (N), ``beta`` (N k), ``threshold`` (N), ``bias`` (N) and the spike cap (1) at ``p_off``;
``state`` (B, S): per LIF, ``isyn`` (N k), ``vmem`` (N), ``spikes`` (N) at ``s_off``.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import carray
from numba.core import types
from numba.extending import intrinsic

from pondlib.nn.lif_kernels import (
    _ARGS,
    _RETS,
    _address,
    _buffer,
    _call_ready,
    _data,
    _dim,
    _fma,
    _load64,
    _null,
    _spikes,
)

__all__ = ["handler"]

# start numba's thread pool before the handler below is compiled or loaded from the cache: its code
# calls the pool's scheduler, whose symbols exist only once the pool runs
numba.get_num_threads()


@intrinsic
def _i32_ptr(typingctx, addr):
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], ir.IntType(32).as_pointer())

    return types.CPointer(types.int32)(types.int64), codegen


@numba.njit(inline="always")
def _gather(h, n, idx):
    """The indices of the non-zero entries of ``h[:n]``, ascending, into ``idx``; returns their number.
    Branch-free (every index is written, the count advances only past a non-zero entry), so the cost
    does not depend on how the spikes fall."""
    nnz = 0
    for i in range(n):
        idx[nnz] = i
        nnz += h[i] != 0
    return nnz


@numba.njit(inline="always")
def _axpy(a, w, out):
    """``out = fma(a, w, out)`` elementwise: one row of a product (``w`` and ``out`` views of one length,
    indexed by the loop variable alone so that the loop vectorizes)."""
    for o in range(out.shape[0]):
        out[o] = _fma(a, w[o], out[o])


@numba.njit(inline="always")
def _product(h, w, out, idx, mode, crossover):
    """``out = h @ w`` for a tile of samples, ``h`` (n_b, n_in), ``w`` (n_in, n_out), ``out`` (n_b, n_out):
    each output the sum of its terms in ascending input index. Sparse: per sample, over the gathered
    non-zero indices only; dense: every term (no branch), input rows outermost, so each row of ``w`` is
    read once for the whole tile. The same sums either way (a zero term leaves an FMA's sum as it is)."""
    n_b, n_in = h.shape
    for b in range(n_b):
        for o in range(out.shape[1]):
            out[b, o] = np.float32(0.0)
    sparse = mode == 2
    if mode == 0:
        nnz = 0
        for b in range(n_b):
            for i in range(n_in):
                nnz += h[b, i] != 0
        sparse = nnz <= crossover * n_b * n_in
    if sparse:
        for b in range(n_b):
            hb, ob = h[b], out[b]
            for p in range(_gather(hb, n_in, idx)):
                i = idx[p]
                _axpy(hb[i], w[i], ob)
    else:
        for i in range(n_in):
            wi = w[i]
            for b in range(n_b):
                _axpy(h[b, i], wi, out[b])


@numba.njit(inline="always")
def _lif_row(h, alpha, beta, th, bias, cap, isyn, v, s, out, k):
    """One LIF step (:func:`pondlib.nn.lif_core.lif_step_flat` without the recurrent current, its
    multiply-adds fused as in :mod:`pondlib.nn.lif_kernels`) of one sample: input row ``h`` (N k), the
    state ``isyn`` (N k), ``v``, ``s`` (N) updated in place, the spike counts also written to ``out``.
    Inlined with a literal ``k`` so that the k = 1 loop vectorizes."""
    for j in range(alpha.shape[0]):
        syn = np.float32(0.0)
        for jj in range(k):
            m = j * k + jj
            qq = isyn[m] + h[m]
            ii = qq * beta[m]
            syn = ii if jj == 0 else _fma(qq, beta[m], syn)
            isyn[m] = ii
        p = _fma(v[j], alpha[j], syn) + bias[j]
        sp = _spikes(p, th[j], cap)
        v[j] = p - sp * th[j]
        s[j] = sp
        out[j] = sp


@numba.njit(inline="always")
def _lif(h, prm, op, st, out, rec, idx, mode, crossover):
    """One LIF step of a tile of samples on its input rows ``h`` (n_b, N k), the recurrent current
    first when the layer has one: updates the states ``st`` (n_b, S) in place and writes the spike
    counts to ``out`` (n_b, N)."""
    n, k, p_off, wrec_off, s_off = op[1], op[2], op[3], op[4], op[5]
    nk = n * k
    alpha = prm[p_off : p_off + n]
    beta = prm[p_off + n : p_off + n + nk]
    th = prm[p_off + n + nk : p_off + 2 * n + nk]
    bias = prm[p_off + 2 * n + nk : p_off + 3 * n + nk]
    cap = prm[p_off + 3 * n + nk]
    if wrec_off >= 0:  # a = x + s[t-1] W_rec, from the previous spikes (still in the state)
        w = prm[wrec_off : wrec_off + n * nk].reshape((n, nk))
        _product(st[:, s_off + nk + n : s_off + nk + 2 * n], w, rec[:, :nk], idx, mode, crossover)
        for b in range(h.shape[0]):
            hb, rb = h[b], rec[b]
            for m in range(nk):
                hb[m] = hb[m] + rb[m]
    for b in range(h.shape[0]):
        stb = st[b]
        isyn = stb[s_off : s_off + nk]
        v = stb[s_off + nk : s_off + nk + n]
        s = stb[s_off + nk + n : s_off + nk + 2 * n]
        hb, ob = h[b, :nk], out[b, :n]
        if k == 1:
            _lif_row(hb, alpha, beta, th, bias, cap, isyn, v, s, ob, 1)
        else:
            _lif_row(hb, alpha, beta, th, bias, cap, isyn, v, s, ob, k)


#: Samples per tile: each weight row read is used for the whole tile (dense products); the tile's
#: state and rows (a few tens of kB for 256-neuron layers) stay in the first- and second-level caches.
TILE = 8


@numba.njit(boundscheck=False, error_model="numpy", parallel=True, cache=True)
def _chain(x, prm, ops, state0, cfg, y, state):  # pragma: no cover - compiled
    """x (T, B, n_in) -> y (T, B, n_out) of the chain ``ops`` (module docstring), from ``state0`` (B, S)
    to ``state`` (B, S); ``cfg`` = [mode, crossover]. Tiles of :data:`TILE` samples run in parallel,
    each over all its steps."""
    steps, batch, n0 = x.shape
    ops = ops.astype(np.int64)
    width = n0
    for o in range(ops.shape[0]):
        width = max(width, ops[o, 1], ops[o, 2] if ops[o, 0] == 0 else ops[o, 1] * ops[o, 2])
    mode, crossover = int(cfg[0]), cfg[1]
    n_last = y.shape[2]
    for tile in numba.prange((batch + TILE - 1) // TILE):
        b0 = tile * TILE
        n_b = min(TILE, batch - b0)
        # the tile's own copies of the parameters and the module table: views of a shared array
        # would change its reference count from both cores at once (measured: no speed-up at all)
        prm_t = prm.copy()
        ops_t = ops.copy()
        st = state0[b0 : b0 + n_b].copy()
        # np.zeros, not np.empty: numba hoists an np.empty out of the parallel loop, which would share
        # these buffers between the cores
        buf_a = np.zeros((n_b, width), np.float32)
        buf_b = np.zeros((n_b, width), np.float32)
        rec = np.zeros((n_b, width), np.float32)
        idx = np.zeros(width, np.int64)
        for t in range(steps):
            cur, nxt = buf_a, buf_b
            for b in range(n_b):
                for i in range(n0):
                    cur[b, i] = x[t, b0 + b, i]
            for o in range(ops_t.shape[0]):
                op = ops_t[o]
                if op[0] == 0:
                    n_in, n_out, w_off, c_off = op[1], op[2], op[3], op[4]
                    w = prm_t[w_off : w_off + n_in * n_out].reshape((n_in, n_out))
                    _product(cur[:, :n_in], w, nxt[:, :n_out], idx, mode, crossover)
                    if c_off >= 0:
                        c = prm_t[c_off : c_off + n_out]
                        for b in range(n_b):
                            ob = nxt[b, :n_out]
                            for j in range(n_out):
                                ob[j] = ob[j] + c[j]
                else:
                    _lif(cur, prm_t, op, st, nxt, rec, idx, mode, crossover)
                cur, nxt = nxt, cur
            for b in range(n_b):
                for j in range(n_last):
                    y[t, b0 + b, j] = cur[b, j]
        for b in range(n_b):
            for j in range(st.shape[1]):
                state[b0 + b, j] = st[b, j]


@numba.cfunc(types.voidptr(types.voidptr), cache=True)
def _chain_handler(frame_ptr):  # pragma: no cover - called by XLA
    frame = _address(frame_ptr)
    if not _call_ready(frame, 5, 2):
        return _null()
    steps, batch, n0 = _dim(frame, _ARGS, 0, 0), _dim(frame, _ARGS, 0, 1), _dim(frame, _ARGS, 0, 2)
    n_prm, n_ops, size = _dim(frame, _ARGS, 1, 0), _dim(frame, _ARGS, 2, 0), _dim(frame, _ARGS, 3, 1)
    x = carray(_data(frame, _ARGS, 0), (steps, batch, n0))
    prm = carray(_data(frame, _ARGS, 1), (n_prm,))
    ops = carray(_i32_ptr(_load64(_buffer(frame, _ARGS, 2) + 24)), (n_ops, 8))
    state0 = carray(_data(frame, _ARGS, 3), (batch, size))
    cfg = carray(_data(frame, _ARGS, 4), (2,))
    y = carray(_data(frame, _RETS, 0), (steps, batch, _dim(frame, _RETS, 0, 2)))
    state = carray(_data(frame, _RETS, 1), (batch, size))
    _chain(x, prm, ops, state0, cfg, y, state)
    return _null()


def handler() -> Any:
    """The FFI handler of :func:`pondlib.nn.native.chain_forward` (a numba cfunc taking an
    XLA_FFI_CallFrame*, returning NULL; compiled once and cached on disk)."""
    return _chain_handler
