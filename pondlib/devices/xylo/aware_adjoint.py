r"""A hand-derived adjoint (custom VJP) for the time loop of :class:`~pondlib.devices.xylo.aware_lif.XyloLIF`.

Automatic differentiation through the layer's :func:`jax.lax.scan` stores every intermediate of every
step (the saturations, the floors of the bit-shift decays, the spike-count correction) and runs many
small kernels per step backwards: on CPU the hardware-aware training step cost ~5x the plain one.
:func:`xylo_scan` runs the same forward step (the same operations, so bit for bit the same spikes and
states) and a backward loop of a few fused element-wise operations per step, the technique of
:mod:`pondlib.nn.adjoint`.

The forward step, in chip units for ``N`` neurons with ``k`` synapses (flat layout ``N*k``; ``c[t]``
the input current ``x[t] W_q``, ``f_{syn} = 2^{-d_{syn}}``, ``f_{mem} = 2^{-d_{mem}}``):

.. math::

    q_t &= \mathrm{sat}(I_{t-1} + c_t + s_{t-1} W_{rec}), \qquad
    I_t = q_t - \mathrm{decay}(q_t, f_{syn}) \\
    P_t &= \mathrm{sat}\Big(V_{t-1} + \mathrm{sat}\big(\mathrm{sat}(-\mathrm{decay}(V_{t-1}, f_{mem})
           + \textstyle\sum_k I_t) + b\big)\Big), \qquad
    s_t = S(P_t, \theta), \qquad V_t = P_t - s_t \theta

with ``sat`` the 16-bit clip and ``decay(v, f) = floor(v f)`` (or ``sign(v)`` where that is 0) when
``integer``, ``sat`` the identity and ``decay(v, f) = v f`` otherwise; ``S`` the exact spike count
(capped at ``cap``).

Gradients are those of the layer's straight-through estimators (STE): ``sat`` (clip) and the floors
pass the gradient unchanged, ``decay(v, f)`` differentiates as ``v f``, and ``s_t`` as the surrogate
:math:`S'_P = g(P_t/\theta)/\theta`, :math:`\partial_\theta s_t = -g(u_t) u_t/\theta`. So, with
:math:`\alpha = 1 - f_{mem}` and :math:`\beta = 1 - f_{syn}`, the adjoints are those of a float LIF
(:mod:`pondlib.nn.adjoint`), backwards in time:

.. math::

    \lambda_{s,t} &= \bar s_t + \lambda_{q,t+1} W_{rec}^\top, \qquad
    \lambda_{V,t} = \bar V_t + \alpha \lambda_{P,t+1} \\
    \lambda_{P,t} &= \lambda_{V,t}(1 - \theta S'_P) + \lambda_{s,t} S'_P, \qquad
    \lambda_{I,t} = \lambda_{P,t} + \lambda_{q,t+1} + \bar I_t, \qquad
    \lambda_{q,t} = \bar c_t = \beta \lambda_{I,t}

and the parameter gradients are :math:`\partial f_{mem} = -\sum_t \lambda_{P,t} V_{t-1}`,
:math:`\partial f_{syn} = -\sum_t \lambda_{I,t}\, q_t`, :math:`\partial b = \sum_t \lambda_{P,t}`,
:math:`\partial W_{rec} = \sum_t s_{t-1}^\top \lambda_{q,t}` and
:math:`\partial\theta = \sum_t (\lambda_{s,t} - \theta\lambda_{V,t})\,\partial_\theta s_t - \lambda_{V,t} s_t`
(sums also over the batch). Bars are incoming cotangents. ``tests/nn/test_xylo_adjoint.py`` checks
them against automatic differentiation of the layer's reference scan
(:meth:`XyloLIF._evolve_tm_autodiff <pondlib.devices.xylo.aware_lif.XyloLIF._evolve_tm_autodiff>`).

Residuals (what the backward loop reads): the membrane before reset :math:`P` (T, *batch, N) and the
saturated synaptic state before decay :math:`q` (T, *batch, N*k), written in place over the input
current buffer (dead after the forward pass); a recurrent layer also keeps its spike counts (for
:math:`\partial W_{rec}`). The backward loop derives :math:`s_t = \mathrm{count}(P_t)` (the forward's
own function of :math:`P`, exact in integer mode), :math:`V_t = P_t - s_t\theta` and the surrogate
slopes from them.

Performance notes (measured with ``benchmarks/train_step.py``, row ``pondlib-xylo-aware``; the notes of
:mod:`pondlib.nn.adjoint` apply as well: in-place buffers read after their update, the late
:math:`\partial f_{mem}` / :math:`\partial b` terms, symbolic zero cotangents skipped, flat layout):

- Temporary memory decides most of the cost. XLA's CPU runtime allocates a jitted function's
  temporaries afresh on every call, and above 32 MiB glibc maps them from the kernel each time, so
  every page faults on first touch. Autodiff through the scan stacked every intermediate; the hand
  adjoint keeps two stacks, and the spike counts are recomputed in the backward loop instead of being
  kept (with the 2-D input product of :meth:`XyloLIF.evolve_tm
  <pondlib.devices.xylo.aware_lif.XyloLIF.evolve_tm>` this brings the benchmark's step to the plain model's
  temporary size, ~27 MiB, from ~34 MiB: a step ~1.8x faster on its own).
- The forward loop carries :math:`P_{t-1}` and derives :math:`s_{t-1}` and :math:`V_{t-1}` from it at
  the start of step :math:`t`, and stacks :math:`P_{t-1}` (a loop parameter): a value both carried and
  stacked is recomputed by XLA in two fused kernels, and the integer step (floors, saturations, the
  exact spike count) is ~60 operations per element. The spike counts are computed after the loop,
  vectorised, from the stacked :math:`P`.

- On CPU, a non-recurrent float32 layer trained on its spikes runs both loops as compiled kernels
  (:mod:`pondlib.nn.native`): the chip-arithmetic forward loop (:func:`_native_forward`, also for
  inference without records) and the adjoint (:func:`_native_bwd`). The XLA loops stay the
  reference (``tests/nn/test_xylo_adjoint.py`` compares them) and the path elsewhere. The step of
  ``benchmarks/train_step.py`` took 17.4 ms with the XLA loops, 10 ms with the kernels (the plain
  model's: 8.9 ms).

Example (one neuron, weight 1 in chip units: the halving of the module docstring of ``xylo_lif``):
    >>> import jax.numpy as jnp
    >>> from pondlib.nn.surrogate import Surrogate
    >>> cfg = XyloScanConfig(31.0, Surrogate(), True, -32768.0, 32767.0, False)
    >>> half = jnp.full((1,), 0.5)
    >>> state0 = (jnp.zeros((1, 1)), jnp.zeros(1), jnp.zeros(1))
    >>> cur = jnp.array([[127.0], [0.0], [0.0]])
    >>> spikes, _, _, (isyn, vmem, _) = xylo_scan(cfg, half, half[:, None], jnp.full(1, 127.0),
    ...                                           jnp.zeros(1), None, cur, state0)
    >>> spikes[:, 0].tolist(), isyn.tolist(), vmem.tolist()
    ([0.0, 0.0, 0.0], [[16.0]], [48.0])
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.custom_derivatives import CustomVJPPrimal, SymbolicZero

from pondlib.nn import native
from pondlib.nn.base import scan_steps
from pondlib.nn.surrogate import Surrogate

__all__ = ["XyloScanConfig", "xylo_scan"]


class XyloScanConfig(NamedTuple):
    """Static settings of :func:`xylo_scan` (hashable).

    ``cap``: spike cap per step; ``surrogate``: the spike surrogate; ``integer``: chip arithmetic
    (saturation to ``[lo, hi]``, floored decays, exact spike counts) or float; ``lo``, ``hi``: the
    state range in chip units (``-2^15``, ``2^15 - 1`` on Xylo); ``record``: also return the
    per-step ``vmem`` and ``isyn`` stacks."""

    cap: float
    surrogate: Surrogate
    integer: bool
    lo: float
    hi: float
    record: bool


def _flat(a: jax.Array) -> jax.Array:
    """(..., N, k) -> (..., N*k)."""
    return a.reshape(a.shape[:-2] + (a.shape[-2] * a.shape[-1],))


def _unflat(a: jax.Array, k: int) -> jax.Array:
    """(..., N*k) -> (..., N, k)."""
    return a.reshape(a.shape[:-1] + (a.shape[-1] // k, k))


def _syn_sum(i_flat: jax.Array, k: int) -> jax.Array:
    """Sum the k synaptic states of each neuron: (..., N*k) -> (..., N)."""
    return i_flat if k == 1 else _unflat(i_flat, k).sum(-1)


def _at(stack: jax.Array, t: jax.Array) -> jax.Array:
    return jax.lax.dynamic_index_in_dim(stack, t, keepdims=False)


def _put(stack: jax.Array, value: jax.Array, t: jax.Array) -> jax.Array:
    return jax.lax.dynamic_update_index_in_dim(stack, value, t, 0)


def _initial(state0: tuple, batch: tuple, n: int, k: int) -> tuple:
    """The initial ``(isyn (flat), vmem, spikes)`` broadcast to the batch."""
    isyn, vmem, spikes = state0
    return (
        jnp.broadcast_to(_flat(isyn), batch + (n * k,)),
        jnp.broadcast_to(vmem, batch + (n,)),
        jnp.broadcast_to(spikes, batch + (n,)),
    )


def _make_step(cfg: XyloScanConfig, f_mem, f_syn, threshold, bias, w_rec):
    """The forward step ``(I, V, s, c) -> (q, I', P)`` (flat synapses) and the spike count
    ``count(P) -> s``, with the arithmetic of the layer's STE expressions (``x + (clip(x) - x)`` and so
    on: the same values, bit for bit)."""
    n, k = f_syn.shape
    f_syn = f_syn.reshape(n * k)
    lo, hi = cfg.lo, cfg.hi

    def sat(v):
        return v + (jnp.clip(v, lo, hi) - v) if cfg.integer else v

    def decay(v, f):
        if not cfg.integer:
            return v * f
        exact = jnp.floor(v * f)  # arithmetic shift v >> d
        exact = jnp.where(exact == 0, jnp.sign(v), exact)  # minimum step of one toward zero
        return v * f + (exact - v * f)

    def step(i, v, s, c):
        if w_rec is not None:
            c = c + s @ w_rec
        q = sat(i + c)
        i = q - decay(q, f_syn)
        dv = sat(-decay(v, f_mem) + _syn_sum(i, k))
        dv = sat(dv + bias)
        return q, i, sat(v + dv)

    return step, partial(_count, cfg, threshold)


def _count(cfg: XyloScanConfig, threshold: jax.Array, p: jax.Array) -> jax.Array:
    """Spike counts of the membrane before reset ``p``: ``min(floor(p / theta), cap)`` where
    ``p >= theta``, else 0 (the value of the layer's spike function; exact in integer mode)."""
    if not cfg.integer:
        return cfg.surrogate.spikes(p, threshold, cfg.cap)
    # the exact count of the chip's loop (XLA may divide by multiplying with 1/theta). The layer's
    # STE form ``spk + (exact - spk)`` adds and subtracts whole numbers <= cap <= 2^24: its value is
    # ``exact``, bit for bit
    n0 = jnp.floor(p / threshold)
    r = p - n0 * threshold
    n0 = n0 + jnp.where(r >= threshold, 1.0, 0.0) - jnp.where(r < 0, 1.0, 0.0)
    return jnp.where(p >= threshold, jnp.clip(n0, 0.0, cfg.cap), 0.0)


def _forward(cfg: XyloScanConfig, f_mem, f_syn, threshold, bias, w_rec, cur, state0, keep_q: bool):
    """The forward loop: ``(pre, q, isyn, final)`` with the membrane before reset ``pre``
    (T, *batch, N), the saturated synaptic state before decay ``q`` (T, *batch, N*k, written over
    ``cur``; None unless ``keep_q``), ``isyn`` after decay (T, *batch, N*k; None unless
    ``cfg.record``) and the final ``(isyn, P)``.

    The loop carries the membrane before reset ``P[t-1]`` and derives ``s[t-1] = count(P[t-1])`` and
    ``V[t-1] = P[t-1] - s[t-1] theta`` at the start of step ``t`` (the initial state's at ``t = 0``),
    and it stores ``P[t-1]``, a loop parameter, in step ``t``: every quantity of the step is then
    computed once (a value that is both carried and stacked would be recomputed by XLA in two fused
    kernels). The spike counts are ``count(pre)`` after the loop, the same function of the same
    values."""
    n, k = f_syn.shape
    T = cur.shape[0]
    batch = cur.shape[1:-1]
    i0, v0, s0 = _initial(state0, batch, n, k)
    step, count = _make_step(cfg, f_mem, f_syn, threshold, bias, w_rec)

    def body(carry, t):
        i, p_prev, c, buf_q, buf_p = carry
        first = t == 0
        s_prev = jnp.where(first, s0, count(p_prev))
        v_prev = jnp.where(first, v0, p_prev - s_prev * threshold)
        q, i, p = step(i, v_prev, s_prev, c)
        buf_p = _put(buf_p, p_prev, jnp.maximum(t - 1, 0))  # P[t-1]; step 0 writes a placeholder
        nxt = jnp.minimum(t + 1, T - 1)
        if keep_q:  # the next input is read after the in-place update: XLA needs no copy of the buffer
            buf_q = _put(buf_q, q, t)
            c = _at(buf_q, nxt)
        else:
            c = _at(cur, nxt)
        return (i, p, c, buf_q, buf_p), (i if cfg.record else None)

    z = jnp.zeros(batch + (n,), cur.dtype)
    init = (i0, z, cur[0], cur if keep_q else None, jnp.zeros((T,) + batch + (n,), cur.dtype))
    (i_f, p_f, _, q, pre), isyn = scan_steps(body, init, jnp.arange(T))
    pre = _put(pre, p_f, T - 1)
    return pre, count(pre), q, isyn, i_f


def _outputs(cfg: XyloScanConfig, threshold, k: int, pre, spikes, isyn, i_f) -> tuple:
    """``(spikes, vmem, isyn, (isyn_T, vmem_T, spikes_T))`` from the forward loop's results, vmem
    ``P - s theta`` as in the step."""
    s_f = spikes[-1]
    final = (_unflat(i_f, k), pre[-1] - s_f * threshold, s_f)
    if not cfg.record:
        return spikes, None, None, final
    return spikes, pre - spikes * threshold, _unflat(isyn, k), final


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def xylo_scan(cfg: XyloScanConfig, f_mem, f_syn, threshold, bias, w_rec, cur, state0):
    """Evolve a Xylo LIF layer over time (equations in the module docstring).

    Args:
        cfg: :class:`XyloScanConfig` (static).
        f_mem: (N,) membrane decay factors ``2^-d``; ``f_syn``: (N, k) synaptic ones.
        threshold, bias: (N,) in chip units (float units when not ``integer``).
        w_rec: (N, N*k) recurrent weights or None.
        cur: (T, *batch, N*k) input currents ``x[t] W_q`` (float32), T >= 1.
        state0: ``(isyn (*b, N, k), vmem (*b, N), spikes (*b, N))``, ``*b`` the batch shape or a prefix
            of it that broadcasts.

    Returns:
        ``(spikes, vmem, isyn, (isyn_T, vmem_T, spikes_T))``: spikes (T, *batch, N); vmem (T, *batch, N)
        after reset and isyn (T, *batch, N, k) after decay when ``cfg.record`` (None otherwise); the
        final state, isyn (*batch, N, k).
    """
    pre, spikes, _, isyn, i_f = _forward_any(cfg, f_mem, f_syn, threshold, bias, w_rec, cur, state0, False)
    return _outputs(cfg, threshold, f_syn.shape[1], pre, spikes, isyn, i_f)


def _forward_any(cfg: XyloScanConfig, f_mem, f_syn, threshold, bias, w_rec, cur, state0, keep_q: bool):
    """:func:`_forward`, by the CPU kernel of :mod:`pondlib.nn.native` for a non-recurrent float32
    layer in chip arithmetic without records (the same values bit for bit), else the XLA loop."""

    def xla_loop():
        return _forward(cfg, f_mem, f_syn, threshold, bias, w_rec, cur, state0, keep_q)

    if (
        cfg.integer
        and not cfg.record
        and w_rec is None
        and cur.size
        and native.eligible(f_mem, f_syn, threshold, bias, cur, *state0)
    ):
        return jax.lax.platform_dependent(
            cpu=lambda: _native_forward(cfg, f_mem, f_syn, threshold, bias, cur, state0, keep_q), default=xla_loop
        )
    return xla_loop()


def _native_forward(cfg: XyloScanConfig, f_mem, f_syn, threshold, bias, cur, state0, keep_q: bool):
    """The integer forward loop of a non-recurrent layer by :func:`pondlib.nn.native.bitshift_lif_forward`
    (bit for bit the XLA loop's values): ``(pre, spikes, q, None, i_f)`` as :func:`_forward`
    returns them without records (``q`` None unless ``keep_q``)."""
    n, k = f_syn.shape
    i0, v0, _ = _initial(state0, cur.shape[1:-1], n, k)
    pre, q, spikes, i_f = native.bitshift_lif_forward(
        cur, f_mem, f_syn, threshold, bias, i0, v0, cfg.cap, cfg.lo, cfg.hi
    )
    return pre, spikes, (q if keep_q else None), None, i_f


def _value(tree: Any) -> Any:
    return jax.tree_util.tree_map(lambda a: a.value, tree, is_leaf=lambda a: isinstance(a, CustomVJPPrimal))


def _fwd(cfg: XyloScanConfig, f_mem, f_syn, threshold, bias, w_rec, cur, state0):
    """Forward pass keeping residuals: ``P``, ``q`` (over the input current buffer) and, for a recurrent
    layer, the spike counts."""
    want_dx = cur.perturbed or w_rec is not None
    f_mem, f_syn, threshold, bias, w_rec, cur, state0 = _value((f_mem, f_syn, threshold, bias, w_rec, cur, state0))
    pre, spikes, q, isyn, i_f = _forward_any(cfg, f_mem, f_syn, threshold, bias, w_rec, cur, state0, True)
    out = _outputs(cfg, threshold, f_syn.shape[1], pre, spikes, isyn, i_f)
    # the last residual is a static flag (an empty pytree or None): whether dL/dcur is wanted
    res = (
        f_mem,
        f_syn,
        threshold,
        w_rec,
        state0,
        pre,
        q,
        spikes if w_rec is not None else None,
        () if want_dx else None,
    )
    return out, res


def _given(c: Any) -> Any:
    return None if c is None or isinstance(c, SymbolicZero) else c


def _unbroadcast(g: jax.Array, like: jax.Array) -> jax.Array:
    """Sum a gradient over leading axes that ``like`` does not have."""
    extra = g.ndim - like.ndim
    return g.sum(axis=tuple(range(extra))) if extra > 0 else g


def _bwd(cfg: XyloScanConfig, res: tuple, cts: tuple):
    """The adjoint: by the CPU kernel of :mod:`pondlib.nn.native` for a non-recurrent float32 layer
    whose only cotangent is its spikes' (training on spike outputs), else the XLA loop."""
    f_mem, f_syn, threshold, w_rec, state0, pre, q = res[:7]
    g_spikes, g_vmem, g_isyn, g_final = cts
    others = (g_vmem, g_isyn) + tuple(g_final if g_final is not None else ())
    if (
        w_rec is None
        and _given(g_spikes) is not None
        and all(_given(c) is None for c in others)
        and pre.size
        and native.eligible(f_mem, f_syn, threshold, pre, q, g_spikes, *state0)
    ):
        return jax.lax.platform_dependent(
            cpu=lambda: _native_bwd(cfg, res, g_spikes), default=lambda: _bwd_xla(cfg, res, cts)
        )
    return _bwd_xla(cfg, res, cts)


def _native_bwd(cfg: XyloScanConfig, res: tuple, g_spikes: jax.Array):
    """The adjoint loop by :func:`pondlib.nn.native.lif_backward`: the recursion of the module
    docstring is the float LIF's with :math:`\alpha = 1 - f_{mem}`, :math:`\beta = 1 - f_{syn}`,
    and the kernel's spike count ``min(floor(P / theta), cap)`` for ``P >= theta`` is the exact count
    of :func:`_count` in integer mode (whole-number ``P`` and ``theta`` below :math:`2^{24}`: a
    correctly rounded quotient never reaches the next whole number)."""
    f_mem, f_syn, threshold, _, state0, pre, q, _, dx_flag = res
    n, k = f_syn.shape
    batch = pre.shape[1:-1]
    _, v0, _ = _initial(state0, batch, n, k)
    d_alpha, d_beta, d_th, d_bias, dcur, d_i0, d_v0 = native.lif_backward(
        pre, q, g_spikes, 1.0 - f_mem, 1.0 - f_syn, threshold, v0, cfg.cap, cfg.surrogate
    )
    isyn0, vmem0, spikes0 = state0
    d_state0 = (
        _unbroadcast(_unflat(d_i0, k), isyn0),
        _unbroadcast(d_v0, vmem0),
        _unbroadcast(jnp.zeros(batch + (n,), pre.dtype), spikes0),
    )
    return -d_alpha, -d_beta, d_th, d_bias, None, (dcur if dx_flag is not None else None), d_state0


def _bwd_xla(cfg: XyloScanConfig, res: tuple, cts: tuple):
    """The adjoint loop of the module docstring, backwards in time."""
    f_mem, f_syn, threshold, w_rec, state0, pre, q, spikes, dx_flag = res
    want_dx = dx_flag is not None
    g_spikes, g_vmem, g_isyn, g_final = cts
    n, k = f_syn.shape
    T = pre.shape[0]
    batch = pre.shape[1:-1]
    dtype = pre.dtype
    alpha = 1.0 - f_mem
    beta_f = 1.0 - f_syn.reshape(n * k)
    cap, sg = cfg.cap, cfg.surrogate
    rep = (lambda a: a) if k == 1 else (lambda a: jnp.repeat(a, k, axis=-1))

    g_spikes, g_vmem = _given(g_spikes), _given(g_vmem)
    g_isyn = None if _given(g_isyn) is None else _flat(g_isyn)
    gf_i, gf_v, gf_s = (_given(c) for c in (g_final if g_final is not None else (None, None, None)))
    # dL/dcur is written over the spike cotangents when their layout matches (k = 1)
    in_place = want_dx and k == 1 and g_spikes is not None

    zn = jnp.zeros(batch + (n,), dtype)
    zq = jnp.zeros(batch + (n * k,), dtype)
    _, v0, s0 = _initial(state0, batch, n, k)
    rec_layer = w_rec is not None
    last = T - 1

    def at_last(t, c):
        return jnp.where(t == last, jnp.broadcast_to(c, batch + (n,)).astype(dtype), 0.0)

    # The terms of df_mem and dbias that need lambda_P[t + 1] are added one step late, in step t, from
    # the carry: lambda_P[t + 1] * V[t] with V[t] derived from this step's membrane and spikes.
    def step(carry, t):
        lam_p1, lam_q1, lam_s_rec, acc, gs_t, buf = carry
        p_t = _at(pre, t)
        s_t = _count(cfg, threshold, p_t)  # the forward's function of P: the same counts
        v_t = p_t - s_t * threshold  # vmem after reset, as in the forward
        u = p_t / threshold
        g = sg.derivative(u, cap)
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
        a_mem, a_syn, a_bias, a_th = acc
        acc = (
            a_mem + lam_p1 * v_t,
            a_syn + lam_i * _at(q, t),
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
    (lam_p0, d_i0, d_s0, acc, _, buf), dcur = scan_steps(step, carry0, jnp.arange(T), reverse=True)
    if in_place:
        dcur = buf
    d_v0 = alpha * lam_p0
    acc = (acc[0] + lam_p0 * v0, acc[1], acc[2] + lam_p0, acc[3])  # the late terms of step 0
    if d_s0 is None:
        d_s0 = zn

    bred = tuple(range(len(batch)))  # reduce the accumulators over the batch
    d_alpha, d_beta, d_bias, d_th = (jnp.sum(a, axis=bred) for a in acc)
    d_w = None
    if rec_layer:
        s_prev = jnp.concatenate([s0[None], spikes[:-1]])
        d_w = s_prev.reshape(-1, n).T @ dcur.reshape(-1, n * k)
    isyn0, vmem0, spikes0 = state0
    d_state0 = (
        _unbroadcast(_unflat(d_i0, k), isyn0),
        _unbroadcast(d_v0, vmem0),
        _unbroadcast(d_s0, spikes0),
    )
    d_f_syn = -d_beta.reshape(n, k)
    return -d_alpha, d_f_syn, d_th, d_bias, d_w, (dcur if want_dx else None), d_state0


xylo_scan.defvjp(_fwd, _bwd, symbolic_zeros=True)
