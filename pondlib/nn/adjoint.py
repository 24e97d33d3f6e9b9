r"""A hand-derived adjoint (custom VJP) for a whole LIF layer over time.

Automatic differentiation through ``lax.scan`` stores every intermediate of every step and runs many
small kernels per step backwards; on CPU that dominates training time. :func:`lif_scan` runs the same
forward loop (:func:`pondlib.nn.lif.lif_step`) and a backward loop of a few fused element-wise operations,
with parameter gradients computed afterwards as vectorised reductions over time and batch.

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
with :math:`\partial_\theta s_t = -g(u_t)\,u_t/\theta`. Bars are incoming cotangents. The tests check
these against automatic differentiation of the plain scan.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from pondlib.nn.base import scan_steps

__all__ = ["lif_scan"]


def _forward(cap, surrogate, alpha, beta, threshold, bias, w_rec, x, state0):
    from pondlib.nn.lif import LIFParameters, lif_step

    p = LIFParameters(alpha, beta, threshold, bias, w_rec, cap, surrogate)

    def step(s, xt):
        spikes, s = lif_step(p, s, xt)
        return s, (spikes, s.vmem, _flat(s.isyn))  # stacked flat: see _flat

    final, (spikes, vmem, isyn) = scan_steps(step, state0, x)
    return spikes, vmem, isyn.reshape(isyn.shape[:-1] + beta.shape), final


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def lif_scan(cap, surrogate, alpha, beta, threshold, bias, w_rec, x, state0):
    """Evolve a LIF layer over time: ``x`` (T, *batch, N*k) -> ``(spikes, vmem, isyn, final_state)``
    with spikes and vmem (T, *batch, N), isyn (T, *batch, N, k). Same result as scanning ``lif_step``."""
    return _forward(cap, surrogate, alpha, beta, threshold, bias, w_rec, x, state0)


def _fwd(cap, surrogate, alpha, beta, threshold, bias, w_rec, x, state0):
    out = _forward(cap, surrogate, alpha, beta, threshold, bias, w_rec, x, state0)
    spikes, vmem, isyn, _ = out
    return out, (alpha, beta, threshold, bias, w_rec, x, state0, spikes, vmem, isyn)


def _bwd(cap, surrogate, res, cts):
    alpha, beta, threshold, bias, w_rec, x, state0, spikes, vmem, isyn = res
    g_spikes, g_vmem, g_isyn, g_final = cts
    n, k = beta.shape
    lead = x.shape[:-1]  # (T, *batch)

    pre = vmem + spikes * threshold                      # membrane before reset, P_t
    u = pre / threshold
    g = surrogate.derivative(u, cap)
    dsdp = g / threshold                                 # ds/dP
    dsdth = -g * u / threshold                           # ds/dtheta at fixed P

    # Work in the flat (..., N*k) layout: XLA on CPU reduces arrays with a trailing synapse axis of
    # size 1 an order of magnitude slower than flat ones.
    beta_f = beta.reshape(n * k)
    rep = (lambda a: a) if k == 1 else (lambda a: jnp.repeat(a, k, axis=-1))
    g_isyn_f = _flat(g_isyn)
    g_final_isyn_f = _flat(g_final.isyn)

    lead_b = lead[1:]
    v_prev = jnp.concatenate([jnp.broadcast_to(state0.vmem, lead_b + (n,))[None], vmem[:-1]])
    s_prev = jnp.concatenate([jnp.broadcast_to(state0.spikes, lead_b + (n,))[None], spikes[:-1]])
    i_prev = jnp.concatenate([jnp.broadcast_to(_flat(state0.isyn), lead_b + (n * k,))[None],
                              _flat(isyn[:-1])])
    q = i_prev + (x if w_rec is None else x + s_prev @ w_rec)   # synaptic input before decay

    def step(carry, inp):
        lam_v_next, lam_q_next, lam_s_rec, acc = carry
        gs, gv, gi, dsdp_t, dsdth_t, v_prev_t, q_t, s_t = inp
        lam_s = gs + lam_s_rec
        lam_v = gv + lam_v_next
        lam_p = lam_v * (1.0 - threshold * dsdp_t) + lam_s * dsdp_t
        lam_i = rep(lam_p) + lam_q_next + gi
        lam_q = beta_f * lam_i
        rec = lam_q @ w_rec.T if w_rec is not None else jnp.zeros_like(lam_s_rec)
        a_alpha, a_beta, a_bias, a_th = acc
        acc = (a_alpha + lam_p * v_prev_t, a_beta + lam_i * q_t, a_bias + lam_p,
               a_th + (lam_s - threshold * lam_v) * dsdth_t - lam_v * s_t)
        return (alpha * lam_p, lam_q, rec, acc), lam_q

    # parameter gradients accumulate in the carry (per sample), so the loop emits only dL/dx
    zn = jnp.zeros(lead_b + (n,), x.dtype)
    acc0 = (zn, jnp.zeros(lead_b + (n * k,), x.dtype), zn, zn)
    carry0 = (g_final.vmem, g_final_isyn_f, g_final.spikes, acc0)
    (d_v0, d_i0, d_s0, acc), dx = scan_steps(
        step, carry0, (g_spikes, g_vmem, g_isyn_f, dsdp, dsdth, v_prev, q, spikes), reverse=True)

    bred = tuple(range(len(lead_b)))                     # reduce the accumulators over the batch
    d_alpha, d_beta, d_bias, d_th = (jnp.sum(a, axis=bred) for a in acc)
    d_beta = d_beta.reshape(n, k)
    d_w = None
    if w_rec is not None:
        d_w = s_prev.reshape(-1, n).T @ dx.reshape(-1, n * k)
    d_i0 = d_i0.reshape(d_i0.shape[:-1] + (n, k))
    d_state0 = type(state0)(_unbroadcast(d_i0, state0.isyn), _unbroadcast(d_v0, state0.vmem),
                            _unbroadcast(d_s0, state0.spikes))
    return d_alpha, d_beta, d_th, d_bias, d_w, dx, d_state0


def _flat(a: jax.Array) -> jax.Array:
    """(..., N, k) -> (..., N*k). XLA on CPU handles stacked arrays with a trailing synapse axis of
    size 1 far more slowly than flat ones, so loops stack and reduce flat arrays."""
    return a.reshape(a.shape[:-2] + (a.shape[-2] * a.shape[-1],))


def _unbroadcast(g: jax.Array, like: jax.Array) -> jax.Array:
    """Sum a gradient over leading axes that ``like`` does not have."""
    extra = g.ndim - like.ndim
    return g.sum(axis=tuple(range(extra))) if extra > 0 else g


lif_scan.defvjp(_fwd, _bwd)
