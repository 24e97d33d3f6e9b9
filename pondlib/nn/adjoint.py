r"""A hand-derived adjoint (custom VJP) for a whole LIF layer over time.

Automatic differentiation through ``lax.scan`` stores every intermediate of every step and runs many
small kernels per step backwards; on CPU that dominates training time. :func:`lif_scan` runs the same
forward loop as :func:`pondlib.nn.lif.lif_step` and a backward loop of a few fused element-wise
operations per step.

With :math:`P_t` the membrane before reset, :math:`q_t = I_{t-1} + R(a_t)` the synaptic current before
decay, :math:`a_t = x_t + s_{t-1} W`, :math:`s_t = S(P_t/\theta)` and surrogate slope
:math:`S'_P = g(P_t/\theta)/\theta`, the adjoints run backwards in time as

.. math::

    \lambda_{s,t} &= \bar s_t + \bar x_{t+1} W^\top, \qquad
    \lambda_{V,t} = \bar V_t + \alpha \lambda_{P,t+1} \\
    \lambda_{P,t} &= \lambda_{V,t}(1 - \theta S'_P) + \lambda_{s,t} S'_P, \qquad
    \lambda_{I,t} = \lambda_{P,t} + \beta \lambda_{I,t+1} + \bar I_t, \qquad
    \bar x_t = R^{-1}(\beta \lambda_{I,t})

and the parameter gradients are :math:`\partial\alpha = \sum_t \lambda_{P,t} V_{t-1}`,
:math:`\partial\beta = \sum_t \lambda_{I,t} q_t`, :math:`\partial b = \sum_t \lambda_{P,t}`,
:math:`\partial W = \sum_t s_{t-1}^\top \bar x_t` and
:math:`\partial\theta = \sum_t \lambda_{s,t}\,\partial_\theta s_t - \lambda_{V,t}(s_t + \theta\,\partial_\theta s_t)`
with :math:`\partial_\theta s_t = -g(u_t)\,u_t/\theta`. Bars are incoming cotangents. The tests
(``tests/nn/test_adjoint.py``) check these against automatic differentiation of the plain scan.

Performance notes. On CPU a training step of a small network is dominated by XLA's time loops (a few
microseconds per step and fused kernel) and by memory traffic; the design choices, each measured on
``benchmarks/train_step.py``:

- Minimal residuals, no full-length temporaries: the forward keeps the membrane before reset
  :math:`P` and :math:`q` (written in place over the input buffer, which is dead afterwards); the
  backward loop derives :math:`s_t`, :math:`V_t`, :math:`I_t = \beta q_t` and the surrogate slopes
  from them inside the loop (the same operations as the forward step, so the same values).
- In-place buffers: for k = 1 the input cotangent is written over the spike cotangent buffer. A
  buffer updated in place is read only *after* its update in the same step (the next step's slice
  is read from the updated buffer and carried); otherwise XLA copies the whole buffer every step.
  Together with the small residual set this keeps the temporary memory of a training step small;
  XLA's CPU runtime allocates it per call, and above ~32 MiB glibc maps it fresh each time, so
  every page faults on first touch (this alone cost ~2x on the benchmark).
- Parameter gradients accumulate per sample in the loop carry and are reduced over the batch once;
  the terms of :math:`\partial\alpha` and :math:`\partial b` that need :math:`\lambda_{P,t+1}` are added
  one step late from the carry, so no step reads two time slices of a stack.
- Zero cotangents (unrecorded ``vmem``/``isyn``, an unused final state) are symbolic and skipped
  (``symbolic_zeros=True``), and the input cotangent is not kept when the input is not differentiated.
- Arrays keep a flat ``(..., N*k)`` synapse layout inside the loops: XLA on CPU handles arrays with a
  trailing synapse axis of size 1 an order of magnitude more slowly.
- On CPU, for a non-recurrent float32 layer, both loops run as compiled kernels
  (:mod:`pondlib.nn.native`), each a single pass per step over all neurons of all samples (the
  backward one when the spikes carry the only cotangent); the XLA loops below are their reference
  and run everywhere else. On the benchmark the kernels take the layer from ~8 ms to ~4 ms.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero

from pondlib.nn import native
from pondlib.nn.base import scan_steps

__all__ = ["lif_scan"]


def _flat(a: jax.Array) -> jax.Array:
    """(..., N, k) -> (..., N*k)."""
    return a.reshape(a.shape[:-2] + (a.shape[-2] * a.shape[-1],))


def _unflat(a: jax.Array, k: int) -> jax.Array:
    """(..., N*k) -> (..., N, k)."""
    return a.reshape(a.shape[:-1] + (a.shape[-1] // k, k))


def _syn_sum(i_flat: jax.Array, k: int) -> jax.Array:
    """Sum the k synaptic currents of each neuron: (..., N*k) -> (..., N)."""
    return i_flat if k == 1 else _unflat(i_flat, k).sum(-1)


def _initial(state0, batch, n, k):
    """The initial state broadcast to the batch, isyn flat."""
    return (
        jnp.broadcast_to(_flat(state0.isyn), batch + (n * k,)),
        jnp.broadcast_to(state0.vmem, batch + (n,)),
        jnp.broadcast_to(state0.spikes, batch + (n,)),
    )


def _at(stack, t):
    return jax.lax.dynamic_index_in_dim(stack, t, keepdims=False)


def _put(stack, value, t):
    return jax.lax.dynamic_update_index_in_dim(stack, value, t, 0)


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def lif_scan(cap, surrogate, alpha, beta, threshold, bias, w_rec, x, state0):
    """Evolve a LIF layer over time: ``x`` (T, *batch, N*k) -> ``(spikes, vmem, isyn, final_state)``
    with spikes and vmem (T, *batch, N), isyn (T, *batch, N, k). Same result as scanning ``lif_step``."""
    n, k = beta.shape
    beta_f = beta.reshape(n * k)

    def step(carry, xt):
        i, v, s = carry
        a = xt if w_rec is None else xt + s @ w_rec
        i = (i + a) * beta_f
        p = v * alpha + _syn_sum(i, k) + bias
        s = surrogate.spikes(p, threshold, cap)
        v = p - s * threshold
        return (i, v, s), (s, v, i)

    (i_f, v_f, s_f), (spikes, vmem, isyn) = scan_steps(step, _initial(state0, x.shape[1:-1], n, k), x)
    return spikes, vmem, _unflat(isyn, k), type(state0)(_unflat(i_f, k), v_f, s_f)


def _fwd(cap, surrogate, alpha, beta, threshold, bias, w_rec, x, state0):
    """Forward pass keeping residuals: the membrane before reset ``P`` and the synaptic input before
    decay ``q = I[t-1] + a[t]`` (written over the input buffer, which is dead afterwards). The
    outputs are the plain scan's: ``vmem`` is emitted by the loop (and dropped by XLA when unused);
    ``spikes`` and ``isyn = q * beta`` are computed after the loop by the step's own operations (one
    vectorised pass each is cheaper than another stacked loop output)."""
    vals = jax.tree_util.tree_map(lambda p: p.value, (alpha, beta, threshold, bias, w_rec, x, state0))
    alpha, beta, threshold, bias, w_rec, xv, state0 = vals
    n, k = beta.shape
    beta_f = beta.reshape(n * k)
    T = xv.shape[0]

    def step(carry, t):
        i, v, s, x_t, buf = carry
        a = x_t if w_rec is None else x_t + s @ w_rec
        q = i + a
        i = q * beta_f
        p = v * alpha + _syn_sum(i, k) + bias
        s = surrogate.spikes(p, threshold, cap)
        v = p - s * threshold
        buf = _put(buf, q, t)
        # the next input is read from the updated buffer: reads then follow the in-place update, so
        # XLA needs no copy of the buffer
        return (i, v, s, _at(buf, jnp.minimum(t + 1, T - 1)), buf), (p, v)

    def xla_loop():
        init = _initial(state0, xv.shape[1:-1], n, k) + (xv[0], xv)
        (i_f, v_f, s_f, _, q), (pre, vmem) = scan_steps(step, init, jnp.arange(T))
        spikes = surrogate.spikes(pre, threshold, cap)  # the step's own function of P: same values
        return i_f, v_f, s_f, q, pre, vmem, spikes

    use_native = w_rec is None and xv.size and native.eligible(alpha, beta, threshold, bias, xv, *state0)
    if use_native:
        # the same loop as one compiled kernel on CPU (pondlib.nn.native), the XLA loop elsewhere
        (i_f, v_f, s_f, q, pre, vmem, spikes) = jax.lax.platform_dependent(
            cpu=lambda: _native_forward(cap, surrogate, alpha, beta_f, threshold, bias, xv, state0), default=xla_loop
        )
    else:
        (i_f, v_f, s_f, q, pre, vmem, spikes) = xla_loop()
    isyn = _unflat(q * beta_f, k)
    out = (spikes, vmem, isyn, type(state0)(_unflat(i_f, k), v_f, s_f))
    # the last two residuals are static flags (an empty pytree or None): whether dL/dx is wanted, and
    # whether this forward ran the kernel (then so may the backward)
    res = (
        alpha,
        beta,
        threshold,
        w_rec,
        state0,
        pre,
        q,
        spikes if w_rec is not None else None,
        () if x.perturbed or w_rec is not None else None,
        () if use_native else None,
    )
    return out, res


def _native_forward(cap, surrogate, alpha, beta_f, threshold, bias, xv, state0):
    """The forward loop by :func:`pondlib.nn.native.lif_forward`: ``(i_final, v_final, s_final, q, pre,
    vmem, spikes)`` as the XLA loop of :func:`_fwd` returns them."""
    n, nk = alpha.shape[0], beta_f.shape[0]
    i0, v0, _ = _initial(state0, xv.shape[1:-1], n, nk // n)
    pre, q, spikes, i_f, v_f = native.lif_forward(xv, alpha, beta_f, threshold, bias, i0, v0, cap)
    vmem = pre - spikes * threshold  # the step's v = P - s * theta
    return i_f, v_f, spikes[-1], q, pre, vmem, spikes


def _bwd(cap, surrogate, res, cts):
    """The adjoint: by :func:`pondlib.nn.native.lif_backward` on CPU when the forward pass ran the kernel
    and only the spikes carry a cotangent (the case of training on spike outputs), else the XLA loop."""
    g_spikes, g_vmem, g_isyn, g_final = cts
    others = (g_vmem, g_isyn) + tuple(g_final)
    if (
        res[-1] is not None
        and _given(g_spikes) is not None
        and all(_given(c) is None for c in others)
        and jnp.result_type(g_spikes) == jnp.float32
    ):
        return jax.lax.platform_dependent(
            cpu=lambda: _native_bwd(cap, surrogate, res, g_spikes), default=lambda: _bwd_xla(cap, surrogate, res, cts)
        )
    return _bwd_xla(cap, surrogate, res, cts)


def _given(c):
    return None if isinstance(c, SymbolicZero) or c is None else c


def _d_state0(state0, batch, n, k, d_i0, d_v0, dtype):
    """The initial state's cotangent from the kernel's (rows, .) arrays (a non-recurrent layer's
    initial spikes have none)."""
    return type(state0)(
        _unbroadcast(_unflat(d_i0.reshape(batch + (n * k,)), k), state0.isyn),
        _unbroadcast(d_v0.reshape(batch + (n,)), state0.vmem),
        _unbroadcast(jnp.zeros(batch + (n,), dtype), state0.spikes),
    )


def _native_bwd(cap, surrogate, res, g_spikes):
    """The adjoint loop by :func:`pondlib.nn.native.lif_backward`."""
    alpha, beta, threshold, _, state0, pre, q, _, dx_flag, _ = res
    n, k = beta.shape
    batch = pre.shape[1:-1]
    v0 = _initial(state0, batch, n, k)[1]
    d_alpha, d_beta, d_th, d_bias, dx, d_i0, d_v0 = native.lif_backward(
        pre, q, g_spikes, alpha, beta, threshold, v0, cap, surrogate
    )
    d_state0 = _d_state0(state0, batch, n, k, d_i0, d_v0, pre.dtype)
    return d_alpha, d_beta, d_th, d_bias, None, (dx if dx_flag is not None else None), d_state0


def _bwd_xla(cap, surrogate, res, cts):
    alpha, beta, threshold, w_rec, state0, pre, q, spikes, dx_flag, _ = res
    want_dx = dx_flag is not None
    g_spikes, g_vmem, g_isyn, g_final = cts
    n, k = beta.shape
    T = pre.shape[0]
    batch = pre.shape[1:-1]
    dtype = pre.dtype
    beta_f = beta.reshape(n * k)
    rep = (lambda a: a) if k == 1 else (lambda a: jnp.repeat(a, k, axis=-1))

    def given(c):
        return None if isinstance(c, SymbolicZero) or c is None else c

    g_spikes, g_vmem = given(g_spikes), given(g_vmem)
    g_isyn = None if given(g_isyn) is None else _flat(g_isyn)
    gf_i, gf_v, gf_s = (given(c) for c in g_final)
    # dL/dx is written over the spike cotangents when their layout matches (k = 1)
    in_place = want_dx and k == 1 and g_spikes is not None

    zn = jnp.zeros(batch + (n,), dtype)
    zq = jnp.zeros(batch + (n * k,), dtype)
    _, v0, _ = _initial(state0, batch, n, k)
    rec_layer = w_rec is not None
    last = T - 1

    def at_last(t, c):
        return jnp.where(t == last, jnp.broadcast_to(c, batch + (n,)).astype(dtype), 0.0)

    # The terms of dalpha and dbias that need lambda_P[t + 1] are added one step late, in step t, from
    # the carry: lambda_P[t + 1] * V[t] with V[t] derived from this step's membrane.
    def step(carry, t):
        lam_p1, lam_q1, lam_s_rec, acc, gs_t, buf = carry
        p_t = _at(pre, t)
        s_t = surrogate.spikes(p_t, threshold, cap)
        v_t = p_t - s_t * threshold  # vmem after reset, as in the forward
        u = p_t / threshold
        g = surrogate.derivative(u, cap)
        dsdp = g / threshold  # ds/dP
        dsdth = -g * u / threshold  # ds/dtheta at fixed P
        lam_s = zn if g_spikes is None else (gs_t if in_place else _at(g_spikes, t))
        if rec_layer:
            lam_s = lam_s + lam_s_rec
        elif gf_s is not None and not in_place:
            lam_s = lam_s + at_last(t, gf_s)
        lam_v = alpha * lam_p1
        if g_vmem is not None:
            lam_v = lam_v + _at(g_vmem, t)
        if gf_v is not None:
            lam_v = lam_v + at_last(t, gf_v)
        lam_p = lam_v * (1.0 - threshold * dsdp) + lam_s * dsdp
        lam_i = rep(lam_p) + lam_q1
        if g_isyn is not None:
            lam_i = lam_i + _at(g_isyn, t)
        lam_q = beta_f * lam_i
        a_alpha, a_beta, a_bias, a_th = acc
        acc = (
            a_alpha + lam_p1 * v_t,
            a_beta + lam_i * _at(q, t),
            a_bias + lam_p1,
            a_th + (lam_s - threshold * lam_v) * dsdth - lam_v * s_t,
        )
        rec = lam_q @ w_rec.T if rec_layer else None
        if in_place:  # as in the forward: read the next cotangent after the in-place update
            buf = _put(buf, lam_q, t)
            return (lam_p, lam_q, rec, acc, _at(buf, jnp.maximum(t - 1, 0)), buf), None
        return (lam_p, lam_q, rec, acc, None, None), (lam_q if want_dx else None)

    def full(c, like):
        return like if c is None else jnp.broadcast_to(c, like.shape).astype(dtype)

    gs_last = None
    if in_place:
        gs_last = g_spikes[last] if gf_s is None or rec_layer else g_spikes[last] + gf_s
    carry0 = (
        zn,
        zq if gf_i is None else full(_flat(gf_i), zq),
        full(gf_s, zn) if rec_layer else None,
        (zn, zq, zn, zn),
        gs_last,
        g_spikes if in_place else None,
    )
    (lam_p0, d_i0, d_s0, acc, _, buf), dx = scan_steps(step, carry0, jnp.arange(T), reverse=True)
    if in_place:
        dx = buf
    d_v0 = alpha * lam_p0
    acc = (acc[0] + lam_p0 * v0, acc[1], acc[2] + lam_p0, acc[3])  # the late terms of step 0
    if d_s0 is None:
        d_s0 = zn

    bred = tuple(range(len(batch)))  # reduce the accumulators over the batch
    d_alpha, d_beta, d_bias, d_th = (jnp.sum(a, axis=bred) for a in acc)
    d_beta = d_beta.reshape(n, k)
    d_w = None
    if w_rec is not None:
        s_prev = jnp.concatenate([_initial(state0, batch, n, k)[2][None], spikes[:-1]])
        d_w = s_prev.reshape(-1, n).T @ dx.reshape(-1, n * k)
    d_state0 = type(state0)(
        _unbroadcast(_unflat(d_i0, k), state0.isyn), _unbroadcast(d_v0, state0.vmem), _unbroadcast(d_s0, state0.spikes)
    )
    return d_alpha, d_beta, d_th, d_bias, d_w, (dx if want_dx else None), d_state0


def _unbroadcast(g: jax.Array, like: jax.Array) -> jax.Array:
    """Sum a gradient over leading axes that ``like`` does not have."""
    extra = g.ndim - like.ndim
    return g.sum(axis=tuple(range(extra))) if extra > 0 else g


lif_scan.defvjp(_fwd, _bwd, symbolic_zeros=True)
