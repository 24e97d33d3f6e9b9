r"""Training a chain of ``Linear -> LIF`` pairs as one compiled loop per sample (CPU, C build of the
kernels).

A chain ``Linear, LIF, Linear, LIF, ...`` (every LIF non-recurrent) trained through
:func:`pondlib.nn.fused.chain_scan` without records runs its forward pass as one loop
(:func:`pondlib.nn.native.train_chain_forward`, ``pondlib/nn/csrc/lif.c``): for each sample and step,
pair :math:`p` computes its current from the non-zero entries of its input row :math:`h_{p-1}` (the
input, or the spikes the previous pair just computed),

.. math::

    a_{p,t,m} = \Big(\sum_{i:\,h_{p-1,t,i} \ne 0} h_{p-1,t,i} W_{p,i,m}\Big) + c_{p,m}, \qquad
    h_{p,t} = \mathrm{LIF}_p(a_{p,t}),

(the sum in ascending ``i`` by fused multiply-adds from +0, the order of the inference kernel, so the
spikes are inference's bit for bit), and keeps only each LIF's membrane before reset :math:`P_p` and
synaptic input :math:`q_p` ((T, *batch, N_p) and (T, *batch, N_p k_p): what its adjoint reads), and
above :data:`KEEP_LIMIT` not even those: the backward pass then runs each sample's forward loop again
into a scratch of its own first (the same values). The hidden layers' spikes are never stored: the
backward pass recounts them from :math:`P_p` with the forward's own rule. Backwards, per sample and
step, from the last pair to the first: the LIF adjoint of :mod:`pondlib.nn.adjoint` gives
:math:`\bar a_p`, then :math:`\partial W_p \mathrel{+}= h_{p-1,t}^\top \bar a_{p,t}` over the non-zero inputs,
:math:`\partial c_p \mathrel{+}= \bar a_{p,t}` and the previous LIF's spike cotangent
:math:`\bar h_{p-1,t} = \bar a_{p,t} W_p^\top` (a row, never a stack). The parameter sums are kept per tile of
samples (a number fixed by the batch size) and added in tile order: the same bits on any number of
threads.

When the only cotangent is not the last spikes' (records, final states, a loss on the membranes), or off
CPU, the backward pass rebuilds each pair's residuals from :math:`P` and :math:`q` (the hidden spikes
recounted) and runs the pairs' adjoints of :mod:`pondlib.nn.train_pair` instead.

Integer pairs (:mod:`pondlib.nn.integer_chain`). The same kernel runs, per pair, an *integer* LIF: states
that are whole numbers saturated to ``[lo, hi]``, decays by floored shifts with the factors
:math:`f = 1 - \alpha`, :math:`f_{syn} = 1 - \beta` (powers of two, exact in float32), exact spike counts,

.. math::

    q_t = \mathrm{sat}(I_{t-1} + a_t), \quad I_t = q_t - \mathrm{decay}(q_t, f_{syn}), \quad
    P_t = \mathrm{sat}\big(V_{t-1} + \mathrm{sat}(\mathrm{sat}(\textstyle\sum_k I_t -
    \mathrm{decay}(V_{t-1}, f)) + b)\big),

:math:`\mathrm{decay}(v, f) = \lfloor v f \rfloor` (or :math:`\mathrm{sign}(v)` where that is 0), and
a pair after the first may read its input one step late (``delay``: :math:`h_{p-1,t-1}` instead of
:math:`h_{p-1,t}`, the state's last input row at ``t = 0``, kept in the per-sample state). Backwards
the adjoint is the float one with the same :math:`\alpha`, :math:`\beta` (the straight-through
estimators of the saturations and floors), the spikes of the previous pair are recounted with the
forward's rule, and a delayed pair's input cotangent :math:`\bar a_{p,t} W_p^\top` is handed to step
:math:`t - 1` of the previous pair (two rows per delayed pair carried between steps; the one of step
:math:`-1` is the last input row's cotangent). The cfg tail per pair is ``(scale, kind, integer, lo, hi,
delay)``.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import CustomVJPPrimal, SymbolicZero

from pondlib.nn import native
from pondlib.nn.adjoint import _unbroadcast, broadcast_state
from pondlib.nn.lif_core import spike_counts, unflatten_synapses
from pondlib.nn.train_pair import eligible as pair_eligible

__all__ = ["eligible", "chain_fwd", "chain_bwd", "pair_residuals"]

_KINDS = {"fast_sigmoid": 0, "triangle": 1, "arctan": 2}


def _value(tree: Any) -> Any:
    return jax.tree_util.tree_map(lambda a: a.value, tree, is_leaf=lambda a: isinstance(a, CustomVJPPrimal))


def eligible(specs: tuple, params: tuple, x: jax.Array, states: tuple) -> bool:
    """Whether the chain is ``Linear, LIF, Linear, LIF, ...`` with every pair :func:`pondlib.nn.train_pair.eligible`
    (values, not primals) and fewer than 2^31 parameters; the input of pairs after the first are spikes of
    the previous LIF's width."""
    if len(specs) % 2 or any(s[0] != ("linear", "lif")[j % 2] for j, s in enumerate(specs)):
        return False
    if sum(a.size for a in jax.tree_util.tree_leaves(params)) >= 2**31 - 2**24:
        return False
    h = x
    for j in range(0, len(specs), 2):
        if not pair_eligible(params[j], params[j + 1], h, states[j + 1]):
            return False
        n = params[j + 1][0].shape[0]
        h = jax.ShapeDtypeStruct(x.shape[:-1] + (n,), x.dtype)
    return True


def _layout(specs: tuple, vals: tuple, modes: tuple | None = None) -> tuple[np.ndarray, list, list, tuple]:
    """The kernel's pair table ``ops`` (pairs, 8) int32, the parameter pieces in offset order, the cfg
    tail (scale, kind, integer, lo, hi, delay per pair; ``modes`` gives the last four per pair, float
    pairs without delay by default) and the offsets ``(off_w, off_c, off_lif, n_off, q_off)`` per pair."""
    modes = modes if modes is not None else ((0.0, 0.0, 0.0, 0.0),) * (len(specs) // 2)
    ops, pieces, tail, offsets = [], [], [], []
    offset, n_off, q_off = 0, 0, 0
    for j in range(0, len(specs), 2):
        weight, c = vals[j]
        alpha, beta, threshold, bias, _ = vals[j + 1]
        _, cap, surrogate = specs[j + 1]
        n, k = beta.shape
        n_in = weight.shape[0]
        off_w, off_c = offset, -1
        pieces.append(weight)
        offset += n_in * n * k
        if c is not None:
            off_c = offset
            pieces.append(c)
            offset += n * k
        off_lif = offset
        pieces += [alpha, beta, threshold, bias, jnp.full((1,), cap, jnp.float32)]
        offset += 3 * n + n * k + 1
        ops.append([n_in, n, k, off_w, off_c, off_lif, n_off, q_off])
        offsets.append((off_w, off_c, off_lif, n_off, q_off))
        n_off += n
        q_off += n * k
        scale = math.pi * surrogate.scale if surrogate.kind == "arctan" else surrogate.scale
        tail += [scale, _KINDS[surrogate.kind], *(float(v) for v in modes[j // 2])]
    return np.asarray(ops, np.int32), pieces, tail, tuple(offsets)


def _flat_state(specs: tuple, vals: tuple, states: tuple, batch: tuple) -> jax.Array:
    """Every LIF's initial ``(isyn (N k), vmem (N), spikes (N))`` side by side per sample: (B, S)."""
    rows, flat = math.prod(batch), []
    for j in range(1, len(specs), 2):
        n, k = vals[j][1].shape
        i0, v0, s0 = broadcast_state(states[j], batch, n, k)
        flat += [i0.reshape(rows, n * k), v0.reshape(rows, n), s0.reshape(rows, n)]
    return jnp.concatenate(flat, axis=1)


def chain_fwd(specs: tuple, params: tuple, x: Any, states: tuple) -> tuple:
    """The forward pass (primals in): ``(y, new_states, records (all None)), residuals`` as
    :func:`pondlib.nn.fused._chain_fwd` returns them, the residuals a dict."""
    vals, st0, xv = _value(params), _value(states), x.value
    steps, batch = xv.shape[0], xv.shape[1:-1]
    rows = math.prod(batch)
    ops, pieces, tail, _ = _layout(specs, vals)
    prm = jnp.concatenate([jnp.ravel(a) for a in pieces])
    state0 = _flat_state(specs, vals, st0, batch)
    sn, sq = int(ops[:, 1].sum()), int((ops[:, 1] * ops[:, 2]).sum())
    n_last = int(ops[-1, 1])
    keep = steps * rows * (sn + sq) <= KEEP_LIMIT or steps * (sn + sq) > RECOMPUTE_LIMIT
    cfg = jnp.asarray([1.0, float(x.perturbed), float(keep)] + tail, jnp.float32)
    y, pre, q, state = native.train_chain_forward(
        xv.reshape(steps, rows, -1), prm, jnp.asarray(ops), state0, cfg, n_last, sn, sq, True, keep
    )
    out_states, at = [], 0
    for j, spec in enumerate(specs):
        if spec[0] == "linear":
            out_states.append(st0[j])
            continue
        n, k = vals[j][1].shape
        i_f = state[:, at : at + n * k].reshape(batch + (n * k,))
        v_f = state[:, at + n * k : at + n * k + n].reshape(batch + (n,))
        s_f = state[:, at + n * k + n : at + n * k + 2 * n].reshape(batch + (n,))
        at += n * k + 2 * n
        out_states.append(type(st0[j])(unflatten_synapses(i_f, k), v_f, s_f))
    res = {
        "chain": (vals, st0, xv, pre, q, prm, state0, jnp.asarray(ops), cfg),
        "flags": (() if x.perturbed else None, () if keep else None),
    }
    return (y.reshape((steps,) + batch + (n_last,)), tuple(out_states), tuple(None for _ in specs)), res


#: Up to this many values of ``P`` and ``q`` in all (``T * B * sum(N + N k)``, 16 MiB) the forward pass
#: stores them for the backward pass: buffers that small are reused by the allocator from step to step.
#: Above it, up to :data:`RECOMPUTE_LIMIT` values per sample, it stores none and the backward pass
#: recomputes each sample's forward loop first: larger buffers are mapped afresh on every step and fault
#: in page by page, which costs more than the recomputation (measured with ``benchmarks/train_step.py``'s
#: network, T = 200: storing is 10 % faster at B = 32, recomputing 12 % faster at B = 64 and 2x at
#: B = 128), and a training step's memory then does not grow with ``T * B``.
KEEP_LIMIT = 1 << 22
#: Above this many values of ``P`` and ``q`` per sample (``T * sum(N + N k)``: the scratch of one thread,
#: 16 MiB) they are stored whatever the batch.
RECOMPUTE_LIMIT = 1 << 22


def pair_residuals(specs: tuple, res: dict) -> tuple:
    """The per-module residuals that the pairs of :mod:`pondlib.nn.train_pair` would have kept (``()`` in a
    Linear's slot, a pair's dict in its LIF's), rebuilt from the chain's: each LIF's ``P`` and ``q``
    sliced from the side-by-side stacks, each pair's input the previous LIF's spikes recounted from ``P``."""
    vals, st0, xv, pre, q, prm, state0, ops, cfg = res["chain"]
    want_dx, keep = (f is not None for f in res["flags"])
    steps, batch = xv.shape[0], xv.shape[1:-1]
    _, _, _, offsets = _layout(specs, vals)
    if not keep:  # the forward loop again, keeping P and q this time (the same values)
        sn, sq = (
            int(np.asarray(offsets)[-1, 3]) + vals[-1][1].shape[0],
            int(np.asarray(offsets)[-1, 4]) + vals[-1][1].size,
        )
        cfg_keep = cfg.at[2].set(1.0)
        _, pre, q, _ = native.train_chain_forward(
            xv.reshape(steps, math.prod(batch), -1),
            prm,
            ops,
            state0,
            cfg_keep,
            vals[-1][1].shape[0],
            sn,
            sq,
            True,
            True,
        )
    out, h = [], xv
    for j in range(0, len(specs), 2):
        weight, c = vals[j]
        alpha, beta, threshold, _, _ = vals[j + 1]
        _, cap, surrogate = specs[j + 1]
        n, k = beta.shape
        _, _, _, n_off, q_off = offsets[j // 2]
        pre_p = pre[..., n_off : n_off + n].reshape((steps,) + batch + (n,))
        q_p = q[..., q_off : q_off + n * k].reshape((steps,) + batch + (n * k,))
        lif_res = (alpha, beta, threshold, None, st0[j + 1], pre_p, q_p, None, (), ())
        flags = (() if (want_dx or j > 0) else None, () if j == 0 else None)
        out += [(), {"lif": lif_res, "linear": (weight, c, h), "flags": flags}]
        h = spike_counts(pre_p, threshold, cap, surrogate)
    return tuple(out)


def _given(c: Any) -> Any:
    return None if c is None or isinstance(c, SymbolicZero) else c


def kernel_applies(cts: tuple) -> bool:
    """Whether the chain kernel's backward pass applies: the last spikes carry a float32 cotangent and
    nothing else does (no final state's, no record's)."""
    g_y, g_states, g_recs = cts
    others = jax.tree_util.tree_leaves((g_states, g_recs), is_leaf=lambda a: isinstance(a, SymbolicZero))
    return _given(g_y) is not None and jnp.result_type(g_y) == jnp.float32 and all(_given(c) is None for c in others)


def chain_bwd(specs: tuple, res: dict, cts: tuple, fallback) -> tuple:
    """The chain's adjoint: ``(d_params, d_x, d_states)`` by :func:`pondlib.nn.native.train_chain_backward`
    where :func:`kernel_applies`, else ``fallback(pair_residuals(specs, res), cts)`` (the pairs' adjoints,
    :func:`pondlib.nn.fused._chain_bwd`)."""
    if not kernel_applies(cts):
        return fallback(pair_residuals(specs, res), cts)
    return jax.lax.platform_dependent(
        cpu=lambda: _kernel_bwd(specs, res, cts[0]), default=lambda: fallback(pair_residuals(specs, res), cts)
    )


def _kernel_bwd(specs: tuple, res: dict, g_y: jax.Array) -> tuple:
    vals, st0, xv, pre, q, prm, state0, ops, cfg = res["chain"]
    want_dx = res["flags"][0] is not None
    steps, batch = xv.shape[0], xv.shape[1:-1]
    rows = math.prod(batch)
    if res["flags"][1] is None:  # not kept: the kernel recomputes them per sample
        pre = q = jnp.zeros((1, 1, 1), jnp.float32)
    _, _, _, offsets = _layout(specs, vals)
    d_prm, d_state0, dx = native.train_chain_backward(
        xv.reshape(steps, rows, -1), prm, ops, pre, q, g_y.reshape(steps, rows, -1), state0, cfg, True, want_dx
    )
    d_params, d_states, at = [], [], 0
    for j in range(0, len(specs), 2):
        weight, c = vals[j]
        n, k = vals[j + 1][1].shape
        nk = n * k
        off_w, off_c, off_lif, _, _ = offsets[j // 2]
        d_w = d_prm[off_w : off_w + weight.size].reshape(weight.shape)
        d_c = None if c is None else d_prm[off_c : off_c + nk]
        lif = d_prm[off_lif : off_lif + 3 * n + nk]
        d_alpha, d_beta, d_th, d_bias = (
            lif[:n],
            lif[n : n + nk].reshape(n, k),
            lif[n + nk : 2 * n + nk],
            lif[2 * n + nk :],
        )
        d_params += [(d_w, d_c), (d_alpha, d_beta, d_th, d_bias, None)]
        isyn0, vmem0, spikes0 = st0[j + 1]
        d_i0 = d_state0[:, at : at + nk].reshape(batch + (nk,))
        d_v0 = d_state0[:, at + nk : at + nk + n].reshape(batch + (n,))
        at += nk + 2 * n
        d_states += [
            None,
            type(st0[j + 1])(
                _unbroadcast(unflatten_synapses(d_i0, k), isyn0),
                _unbroadcast(d_v0, vmem0),
                _unbroadcast(jnp.zeros(batch + (n,), pre.dtype), spikes0),
            ),
        ]
    d_x = None if dx is None else dx.reshape(xv.shape)
    return tuple(d_params), d_x, tuple(d_states)
