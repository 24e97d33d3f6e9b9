r"""A hand-derived adjoint (custom VJP) for a whole LIF layer over time.

Automatic differentiation through ``lax.scan`` stores every intermediate of every step and runs many
small kernels per step backwards; on CPU that dominates training time. :func:`lif_scan` runs the same
forward loop as :func:`pondlib.nn.lif.lif_step` (both call the step of :mod:`pondlib.nn.lif_core`,
:func:`~pondlib.nn.lif_core.lif_step_flat`) and a backward loop of a few fused element-wise operations
per step.

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

The backward loop is written once, :func:`adjoint_backward`, for coefficients given as arguments
(:class:`AdjointCoefficients`: :math:`\alpha`, :math:`\beta`, :math:`\theta`, the spike cap, the
surrogate and the forward's spike count of :math:`P`). This layer passes its own. A neuron whose
forward step differs but whose straight-through gradients reduce to the same recursion passes its
equivalents: the device-aware twin of the integer LIF with bit-shift decays (in :mod:`pondlib.devices`)
has :math:`\alpha = 1 - f_{mem}`, :math:`\beta = 1 - f_{syn}` and its exact integer spike count. The
loop recomputes :math:`s_t` and :math:`V_t` with the count and :func:`~pondlib.nn.lif_core.reset` of
the forward step and the slopes with :func:`~pondlib.nn.lif_core.surrogate_slopes`.

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
  (:mod:`pondlib.nn.native`: C, or numba where no C compiler is found), each a single pass per step over
  all neurons of all samples (the backward one when the spikes carry the only cotangent); the XLA loops
  below are their reference and run everywhere else. On the benchmark the kernels take the layer from
  ~8 ms to ~4 ms. In a fused chain a ``Linear`` before the layer trains with it as one kernel
  (:mod:`pondlib.nn.train_pair`, :mod:`pondlib.nn.train_chain`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero

from pondlib.nn import native
from pondlib.nn.base import scan_steps
from pondlib.nn.lif_core import (
    FlatLIFParameters,
    flatten_synapses,
    lif_step_flat,
    reset,
    spike_counts,
    surrogate_slopes,
    synapse_decay,
    unflatten_synapses,
)
from pondlib.nn.surrogate import Surrogate

__all__ = [
    "lif_scan",
    "AdjointCoefficients",
    "AdjointResiduals",
    "adjoint_backward",
    "spike_cotangent_only",
    "broadcast_state",
]


class AdjointCoefficients(NamedTuple):
    r"""The coefficients of the backward recursion (module docstring), static for one trace.

    ``alpha`` (N,): :math:`\partial P_{t+1}/\partial V_t`, the membrane's leak; ``beta`` (N, k):
    :math:`\partial I_t/\partial q_t`, the synaptic decay; ``threshold`` (N,); ``cap`` the spike cap per
    step; ``surrogate`` the spike surrogate; ``count``: the forward step's spike count as a function of
    the membrane before reset, ``P`` (T-slice, *batch, N) -> counts of the same shape (it must give the
    forward's counts bit for bit: the loop derives :math:`s_t` and :math:`V_t` from it)."""

    alpha: jax.Array
    beta: jax.Array
    threshold: jax.Array
    cap: float
    surrogate: Surrogate
    count: Callable[[jax.Array], jax.Array]


class AdjointResiduals(NamedTuple):
    r"""What the backward loop reads of the forward pass.

    ``w_rec`` (N, N*k) or None; ``state0``: the initial ``(isyn (*b, N, k), vmem (*b, N), spikes
    (*b, N))``, ``*b`` the batch shape or a prefix of it that broadcasts; ``pre`` (T, *batch, N) the
    membrane before reset; ``q`` (T, *batch, N*k) the synaptic current before decay; ``spikes``
    (T, *batch, N) the spike counts (a recurrent layer's, for :math:`\partial W`; else None);
    ``want_dx``: whether the input's cotangent is returned."""

    w_rec: jax.Array | None
    state0: tuple
    pre: jax.Array
    q: jax.Array
    spikes: jax.Array | None
    want_dx: bool


def broadcast_state(state0: tuple, batch: tuple, n: int, k: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The initial state ``(isyn (*b, N, k), vmem (*b, N), spikes (*b, N))`` broadcast to the batch:
    ``(isyn (*batch, N*k), vmem (*batch, N), spikes (*batch, N))``, isyn flat."""
    isyn, vmem, spikes = state0
    return (
        jnp.broadcast_to(flatten_synapses(isyn), batch + (n * k,)),
        jnp.broadcast_to(vmem, batch + (n,)),
        jnp.broadcast_to(spikes, batch + (n,)),
    )


def _at(stack, t):
    return jax.lax.dynamic_index_in_dim(stack, t, keepdims=False)


def _put(stack, value, t):
    return jax.lax.dynamic_update_index_in_dim(stack, value, t, 0)


def _given(c: Any) -> Any:
    """``c``, or None for an absent cotangent (None or a symbolic zero)."""
    return None if isinstance(c, SymbolicZero) or c is None else c


def _unbroadcast(g: jax.Array, like: jax.Array) -> jax.Array:
    """Sum a gradient over leading axes that ``like`` does not have."""
    extra = g.ndim - like.ndim
    return g.sum(axis=tuple(range(extra))) if extra > 0 else g


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def lif_scan(cap, surrogate, alpha, beta, threshold, bias, w_rec, x, state0):
    """Evolve a LIF layer over time: ``x`` (T, *batch, N*k) -> ``(spikes, vmem, isyn, final_state)``
    with spikes and vmem (T, *batch, N), isyn (T, *batch, N, k). Same result as scanning ``lif_step``."""
    n, k = beta.shape
    params = FlatLIFParameters(alpha, beta.reshape(n * k), threshold, bias, w_rec, cap, surrogate)

    def step(carry, xt):
        i, v, s = carry
        r = lif_step_flat(params, i, v, s, xt)
        return (r.isyn, r.vmem, r.spikes), (r.spikes, r.vmem, r.isyn)

    (i_f, v_f, s_f), (spikes, vmem, isyn) = scan_steps(step, broadcast_state(state0, x.shape[1:-1], n, k), x)
    return spikes, vmem, unflatten_synapses(isyn, k), type(state0)(unflatten_synapses(i_f, k), v_f, s_f)


def _fwd(cap, surrogate, alpha, beta, threshold, bias, w_rec, x, state0):
    """Forward pass keeping residuals: the membrane before reset ``P`` and the synaptic input before
    decay ``q = I[t-1] + a[t]`` (written over the input buffer, which is dead afterwards). The
    outputs are the plain scan's: ``vmem`` is emitted by the loop (and dropped by XLA when unused);
    ``spikes`` and ``isyn = q * beta`` are computed after the loop by the step's own functions (one
    vectorised pass each is cheaper than another stacked loop output)."""
    vals = jax.tree_util.tree_map(lambda p: p.value, (alpha, beta, threshold, bias, w_rec, x, state0))
    alpha, beta, threshold, bias, w_rec, xv, state0 = vals
    n, k = beta.shape
    params = FlatLIFParameters(alpha, beta.reshape(n * k), threshold, bias, w_rec, cap, surrogate)
    T = xv.shape[0]

    def step(carry, t):
        i, v, s, x_t, buf = carry
        r = lif_step_flat(params, i, v, s, x_t)
        buf = _put(buf, r.q, t)
        # the next input is read from the updated buffer: reads then follow the in-place update, so
        # XLA needs no copy of the buffer
        return (r.isyn, r.vmem, r.spikes, _at(buf, jnp.minimum(t + 1, T - 1)), buf), (r.pre, r.vmem)

    def xla_loop():
        init = broadcast_state(state0, xv.shape[1:-1], n, k) + (xv[0], xv)
        (i_f, v_f, s_f, _, q), (pre, vmem) = scan_steps(step, init, jnp.arange(T))
        spikes = spike_counts(pre, threshold, cap, surrogate)  # the step's own function of P: same values
        return i_f, v_f, s_f, q, pre, vmem, spikes

    use_native = w_rec is None and xv.size and native.eligible(alpha, beta, threshold, bias, xv, *state0)
    if use_native:
        # the same loop as one compiled kernel on CPU (pondlib.nn.native), the XLA loop elsewhere
        (i_f, v_f, s_f, q, pre, vmem, spikes) = jax.lax.platform_dependent(
            cpu=lambda: _native_forward(params, xv, state0), default=xla_loop
        )
    else:
        (i_f, v_f, s_f, q, pre, vmem, spikes) = xla_loop()
    isyn = unflatten_synapses(synapse_decay(q, params.beta), k)
    out = (spikes, vmem, isyn, type(state0)(unflatten_synapses(i_f, k), v_f, s_f))
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


def _native_forward(params: FlatLIFParameters, xv, state0):
    """The forward loop by :func:`pondlib.nn.native.lif_forward`: ``(i_final, v_final, s_final, q, pre,
    vmem, spikes)`` as the XLA loop of :func:`_fwd` returns them."""
    n, nk = params.alpha.shape[0], params.beta.shape[0]
    i0, v0, _ = broadcast_state(state0, xv.shape[1:-1], n, nk // n)
    pre, q, spikes, i_f, v_f = native.lif_forward(
        xv, params.alpha, params.beta, params.threshold, params.bias, i0, v0, params.max_spikes
    )
    vmem = reset(pre, spikes, params.threshold)
    return i_f, v_f, spikes[-1], q, pre, vmem, spikes


def _adjoint_inputs(cap, surrogate, res) -> tuple[AdjointCoefficients, AdjointResiduals]:
    """The coefficients and residuals of :func:`adjoint_backward` for this layer, from the residuals of
    :func:`_fwd`: its own decays, and the step's spike count."""
    alpha, beta, threshold, w_rec, state0, pre, q, spikes, dx_flag, _ = res
    count = partial(_float_count, threshold, cap, surrogate)
    coef = AdjointCoefficients(alpha, beta, threshold, cap, surrogate, count)
    return coef, AdjointResiduals(w_rec, tuple(state0), pre, q, spikes, dx_flag is not None)


def _float_count(threshold, cap, surrogate, pre):
    """The step's spike count of ``pre`` (:func:`~pondlib.nn.lif_core.spike_counts`)."""
    return spike_counts(pre, threshold, cap, surrogate)


def _layer_gradients(state0, grads: tuple) -> tuple:
    """:func:`adjoint_backward`'s gradients with the initial state's as a state of this layer's type."""
    return grads[:6] + (type(state0)(*grads[6]),)


def _bwd(cap, surrogate, res, cts):
    """The adjoint (:func:`adjoint_backward`): by :func:`pondlib.nn.native.lif_backward` on CPU when the
    forward pass ran the kernel and only the spikes carry a cotangent (the case of training on spike
    outputs), else the XLA loop."""
    coef, residuals = _adjoint_inputs(cap, surrogate, res)
    kernel = res[-1] is not None and spike_cotangent_only(cts)
    return _layer_gradients(res[4], adjoint_backward(coef, residuals, cts, kernel))


def _bwd_xla(cap, surrogate, res, cts):
    """The adjoint by the XLA loop alone (the kernel's reference)."""
    coef, residuals = _adjoint_inputs(cap, surrogate, res)
    return _layer_gradients(res[4], adjoint_backward(coef, residuals, cts, False))


def spike_cotangent_only(cts: tuple) -> bool:
    """Whether, of the outputs ``(spikes, vmem, isyn, final_state)`` whose cotangents ``cts`` are, only
    the spikes carry one (not None, not a symbolic zero), a float32 one: the case the backward kernel
    handles (training on spike outputs). ``final_state`` may be None."""
    g_spikes, g_vmem, g_isyn, g_final = cts
    others = (g_vmem, g_isyn) + tuple(g_final if g_final is not None else ())
    return (
        _given(g_spikes) is not None
        and all(_given(c) is None for c in others)
        and jnp.result_type(g_spikes) == jnp.float32
    )


def adjoint_backward(coef: AdjointCoefficients, res: AdjointResiduals, cts: tuple, kernel: bool) -> tuple:
    """The backward recursion of the module docstring, backwards in time, for the coefficients ``coef``.

    Args:
        coef: :class:`AdjointCoefficients` (``alpha``, ``beta``, ``threshold``, cap, surrogate, count).
        res: :class:`AdjointResiduals` of the forward pass.
        cts: the cotangents of ``(spikes (T, *batch, N), vmem (T, *batch, N), isyn (T, *batch, N, k),
            final_state)``, ``final_state`` a triple ``(isyn, vmem, spikes)`` or None; any may be None or
            a symbolic zero.
        kernel: run :func:`pondlib.nn.native.lif_backward` on CPU (the caller checked that it may: a
            non-recurrent float32 layer whose only cotangent is the spikes', :func:`spike_cotangent_only`,
            and whose ``count`` is the kernel's ``min(floor(P / theta), cap)``); the XLA loop elsewhere.

    Returns:
        ``(d_alpha (N,), d_beta (N, k), d_threshold (N,), d_bias (N,), d_w_rec (N, N*k) or None,
        dx (T, *batch, N*k) or None, (d_isyn0, d_vmem0, d_spikes0))``, the initial state's cotangents in
        the shapes of ``res.state0``.
    """
    if kernel:
        return jax.lax.platform_dependent(
            cpu=lambda: _kernel_backward(coef, res, cts[0]), default=lambda: _xla_backward(coef, res, cts)
        )
    return _xla_backward(coef, res, cts)


def _kernel_backward(coef: AdjointCoefficients, res: AdjointResiduals, g_spikes: jax.Array) -> tuple:
    """:func:`adjoint_backward` by :func:`pondlib.nn.native.lif_backward` (a non-recurrent layer's
    initial spikes have no cotangent)."""
    n, k = coef.beta.shape
    batch = res.pre.shape[1:-1]
    _, v0, _ = broadcast_state(res.state0, batch, n, k)
    d_alpha, d_beta, d_th, d_bias, dx, d_i0, d_v0 = native.lif_backward(
        res.pre, res.q, g_spikes, coef.alpha, coef.beta, coef.threshold, v0, coef.cap, coef.surrogate
    )
    isyn0, vmem0, spikes0 = res.state0
    d_state0 = (
        _unbroadcast(unflatten_synapses(d_i0, k), isyn0),
        _unbroadcast(d_v0, vmem0),
        _unbroadcast(jnp.zeros(batch + (n,), res.pre.dtype), spikes0),
    )
    return d_alpha, d_beta, d_th, d_bias, None, (dx if res.want_dx else None), d_state0


class _Cotangents(NamedTuple):
    """The incoming cotangents, None where absent: ``spikes``, ``vmem`` (T, *batch, N), ``isyn``
    (T, *batch, N*k, flat); of the final state ``final_isyn`` (.., N, k), ``final_vmem``,
    ``final_spikes`` (.., N)."""

    spikes: jax.Array | None
    vmem: jax.Array | None
    isyn: jax.Array | None
    final_isyn: jax.Array | None
    final_vmem: jax.Array | None
    final_spikes: jax.Array | None


def _cotangents(cts: tuple) -> _Cotangents:
    g_spikes, g_vmem, g_isyn, g_final = cts
    g_isyn = None if _given(g_isyn) is None else flatten_synapses(g_isyn)
    gf_i, gf_v, gf_s = (_given(c) for c in (g_final if g_final is not None else (None, None, None)))
    return _Cotangents(_given(g_spikes), _given(g_vmem), g_isyn, gf_i, gf_v, gf_s)


def _xla_backward(coef: AdjointCoefficients, res: AdjointResiduals, cts: tuple) -> tuple:
    """:func:`adjoint_backward` as an XLA loop (any platform, recurrent layers, any cotangents)."""
    n, k = coef.beta.shape
    T = res.pre.shape[0]
    batch = res.pre.shape[1:-1]
    dtype = res.pre.dtype
    beta_f = coef.beta.reshape(n * k)
    g = _cotangents(cts)
    # dL/dx is written over the spike cotangents when their layout matches (k = 1)
    in_place = res.want_dx and k == 1 and g.spikes is not None
    zn = jnp.zeros(batch + (n,), dtype)
    zq = jnp.zeros(batch + (n * k,), dtype)
    _, v0, s0 = broadcast_state(res.state0, batch, n, k)
    step = _backward_step(coef, beta_f, res, g, in_place, zn)
    carry0 = _backward_carry(res, g, in_place, zn, zq)
    (lam_p0, d_i0, d_s0, acc, _, buf), dx = scan_steps(step, carry0, jnp.arange(T), reverse=True)
    if in_place:
        dx = buf
    d_v0 = coef.alpha * lam_p0
    acc = (acc[0] + lam_p0 * v0, acc[1], acc[2] + lam_p0, acc[3])  # the late terms of step 0
    if d_s0 is None:
        d_s0 = zn

    bred = tuple(range(len(batch)))  # reduce the accumulators over the batch
    d_alpha, d_beta, d_bias, d_th = (jnp.sum(a, axis=bred) for a in acc)
    d_w = None
    if res.w_rec is not None:
        s_prev = jnp.concatenate([s0[None], res.spikes[:-1]])
        d_w = s_prev.reshape(-1, n).T @ dx.reshape(-1, n * k)
    isyn0, vmem0, spikes0 = res.state0
    d_state0 = (
        _unbroadcast(unflatten_synapses(d_i0, k), isyn0),
        _unbroadcast(d_v0, vmem0),
        _unbroadcast(d_s0, spikes0),
    )
    return d_alpha, d_beta.reshape(n, k), d_th, d_bias, d_w, (dx if res.want_dx else None), d_state0


def _backward_carry(res: AdjointResiduals, g: _Cotangents, in_place: bool, zn, zq) -> tuple:
    """The carry entering the last step: ``(lambda_P[T], lambda_q[T], the recurrent spike adjoint,
    accumulators, the spike cotangent of step T-1 (in place), the in-place buffer)``; the final state's
    cotangents enter here (a feed-forward layer's final spikes' in step T-1)."""
    rec_layer = res.w_rec is not None

    def full(c, like):
        return like if c is None else jnp.broadcast_to(c, like.shape).astype(like.dtype)

    gs_last = None
    if in_place:
        last = res.pre.shape[0] - 1
        gs_last = g.spikes[last] if g.final_spikes is None or rec_layer else g.spikes[last] + g.final_spikes
    return (
        zn,
        zq if g.final_isyn is None else full(flatten_synapses(g.final_isyn), zq),
        full(g.final_spikes, zn) if rec_layer else None,
        (zn, zq, zn, zn),
        gs_last,
        g.spikes if in_place else None,
    )


def _backward_step(
    coef: AdjointCoefficients, beta_f: jax.Array, res: AdjointResiduals, g: _Cotangents, in_place: bool, zn
) -> Callable:
    """The scan body of one reverse step ``t`` (module docstring). It derives :math:`s_t`, :math:`V_t`
    and the surrogate slopes from the stored :math:`P_t` with the forward step's own functions. The
    terms of d_alpha and d_bias that need lambda_P[t + 1] are added one step late, in step t, from the
    carry: lambda_P[t + 1] * V[t] with V[t] derived from this step's membrane."""
    threshold, w_rec, pre, q = coef.threshold, res.w_rec, res.pre, res.q
    k = beta_f.shape[0] // coef.alpha.shape[0]
    rep = (lambda a: a) if k == 1 else (lambda a: jnp.repeat(a, k, axis=-1))
    rec_layer = w_rec is not None
    last = pre.shape[0] - 1

    def at_last(t, c):
        return jnp.where(t == last, jnp.broadcast_to(c, zn.shape).astype(zn.dtype), 0.0)

    def step(carry, t):
        lam_p1, lam_q1, lam_s_rec, acc, gs_t, buf = carry
        p_t = _at(pre, t)
        s_t = coef.count(p_t)  # the forward's function of P: the same counts
        v_t = reset(p_t, s_t, threshold)  # vmem after reset, as in the forward
        dsdp, dsdth = surrogate_slopes(p_t, threshold, coef.cap, coef.surrogate)
        lam_s = zn if g.spikes is None else (gs_t if in_place else _at(g.spikes, t))
        if rec_layer:
            lam_s = lam_s + lam_s_rec
        elif g.final_spikes is not None and not in_place:
            lam_s = lam_s + at_last(t, g.final_spikes)
        lam_v = coef.alpha * lam_p1
        if g.vmem is not None:
            lam_v = lam_v + _at(g.vmem, t)
        if g.final_vmem is not None:
            lam_v = lam_v + at_last(t, g.final_vmem)
        lam_p = lam_v * (1.0 - threshold * dsdp) + lam_s * dsdp
        lam_i = rep(lam_p) + lam_q1
        if g.isyn is not None:
            lam_i = lam_i + _at(g.isyn, t)
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
        return (lam_p, lam_q, rec, acc, None, None), (lam_q if res.want_dx else None)

    return step


lif_scan.defvjp(_fwd, _bwd, symbolic_zeros=True)
