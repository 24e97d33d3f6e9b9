r"""A hand-derived adjoint (custom VJP) for the time loop of :class:`~pondlib.devices.xylo.aware_lif.XyloLIF`.

Automatic differentiation through the layer's :func:`jax.lax.scan` stores every intermediate of every
step (the saturations, the floors of the bit-shift decays, the spike-count correction) and runs many
small kernels per step backwards: on CPU the hardware-aware training step cost ~5x the plain one.
:func:`xylo_scan` runs the same forward step (the same operations, so bit for bit the same spikes and
states) and a backward loop of a few fused element-wise operations per step: the loop of
:mod:`pondlib.nn.adjoint` itself (:func:`pondlib.nn.adjoint.adjoint_backward`), called with this
layer's coefficients.

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
(sums also over the batch). Bars are incoming cotangents. ``tests/devices/xylo/test_aware_adjoint.py``
checks them against automatic differentiation of the layer's reference scan
(:meth:`XyloLIF._evolve_tm_autodiff <pondlib.devices.xylo.aware_lif.XyloLIF._evolve_tm_autodiff>`).

Residuals (what the backward loop reads): the membrane before reset :math:`P` (T, *batch, N) and the
saturated synaptic state before decay :math:`q` (T, *batch, N*k), written in place over the input
current buffer (dead after the forward pass); a recurrent layer also keeps its spike counts (for
:math:`\partial W_{rec}`). The backward loop derives :math:`s_t = \mathrm{count}(P_t)` (the forward's
own function of :math:`P`, :func:`_count`, exact in integer mode: it is the ``count`` of the
coefficients this layer passes, with :math:`\alpha = 1 - f_{mem}`, :math:`\beta = 1 - f_{syn}`),
:math:`V_t = P_t - s_t\theta` and the surrogate slopes from them; the gradients of :math:`f_{mem}` and
:math:`f_{syn}` are those of :math:`\alpha` and :math:`\beta` negated.

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
  inference without records) and the adjoint (:func:`pondlib.nn.native.lif_backward`, through
  :func:`pondlib.nn.adjoint.adjoint_backward`). The XLA loops stay the reference
  (``tests/devices/xylo/test_aware_adjoint.py`` compares them) and the path elsewhere. The step of
  ``benchmarks/train_step.py`` took 17.4 ms with the XLA loops, 10 ms with the kernels (the plain
  model's: 8.9 ms).
- A whole twin (a ``Sequential`` of non-recurrent :class:`~pondlib.devices.xylo.aware_lif.XyloLIF` layers in
  chip units, float32, on CPU, called without records) does not reach this loop: every layer hands
  :meth:`XyloLIF.chain_pair <pondlib.devices.xylo.aware_lif.XyloLIF.chain_pair>` (its grid ``W_q``,
  :math:`\alpha = 1 - f_{mem}`, :math:`\beta = 1 - f_{syn}`, threshold, bias, cap, the 16-bit range, its
  hop delay) to :mod:`pondlib.nn.integer_chain`, and the network runs as one compiled loop per sample in
  the integer mode of the training chain (:mod:`pondlib.nn.train_chain`): the currents from the non-zero
  input counts (whole numbers, so the XLA product's values bit for bit), the forward step of this module
  (spikes and final states bit for bit), no stack of currents or hidden spikes, and backwards the adjoint
  above with row-wise :math:`\partial W_q` (the STE of :meth:`grid` is left to JAX). The step of
  ``benchmarks/train_step.py`` (16 -> 256 -> 8, B = 32, T = 200) went from 1.9x the plain network's step to
  about 1.0-1.1x (``benchmarks/results/train_step_xylo_aware_chain.txt``). This loop stays the path of a
  single layer, of recurrent layers and of calls with records, and the reference that the chain's tests
  (``tests/devices/xylo/test_aware_chain.py``) compare with.

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
from jax.custom_derivatives import CustomVJPPrimal

from pondlib.nn import native
from pondlib.nn.adjoint import (
    AdjointCoefficients,
    AdjointResiduals,
    adjoint_backward,
    broadcast_state,
    spike_cotangent_only,
)
from pondlib.nn.base import scan_steps
from pondlib.nn.lif_core import recurrent_input, reset, synapse_sum, unflatten_synapses
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


def _at(stack: jax.Array, t: jax.Array) -> jax.Array:
    return jax.lax.dynamic_index_in_dim(stack, t, keepdims=False)


def _put(stack: jax.Array, value: jax.Array, t: jax.Array) -> jax.Array:
    return jax.lax.dynamic_update_index_in_dim(stack, value, t, 0)


def _make_step(cfg: XyloScanConfig, f_mem, f_syn, threshold, bias, w_rec):
    """The forward step ``(I, V, s, c) -> (q, I', P)`` (flat synapses) and the spike count
    ``count(P) -> s``, with the arithmetic of the layer's STE expressions (``x + (clip(x) - x)`` and so
    on: the same values, bit for bit). The input and the synapse sum are the float LIF's
    (:func:`~pondlib.nn.lif_core.recurrent_input`, :func:`~pondlib.nn.lif_core.synapse_sum`); the reset,
    applied by the loop, too (:func:`~pondlib.nn.lif_core.reset`)."""
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
        c = recurrent_input(c, s, w_rec)
        q = sat(i + c)
        i = q - decay(q, f_syn)
        dv = sat(-decay(v, f_mem) + synapse_sum(i, k))
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
    i0, v0, s0 = broadcast_state(state0, batch, n, k)
    step, count = _make_step(cfg, f_mem, f_syn, threshold, bias, w_rec)

    def body(carry, t):
        i, p_prev, c, buf_q, buf_p = carry
        first = t == 0
        s_prev = jnp.where(first, s0, count(p_prev))
        v_prev = jnp.where(first, v0, reset(p_prev, s_prev, threshold))
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
    ``P - s theta`` as in the step (:func:`~pondlib.nn.lif_core.reset`)."""
    s_f = spikes[-1]
    final = (unflatten_synapses(i_f, k), reset(pre[-1], s_f, threshold), s_f)
    if not cfg.record:
        return spikes, None, None, final
    return spikes, reset(pre, spikes, threshold), unflatten_synapses(isyn, k), final


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
    i0, v0, _ = broadcast_state(state0, cur.shape[1:-1], n, k)
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


def _bwd(cfg: XyloScanConfig, res: tuple, cts: tuple):
    r"""The adjoint of the module docstring: :func:`pondlib.nn.adjoint.adjoint_backward`, the float LIF's
    backward loop, with this layer's coefficients :math:`\alpha = 1 - f_{mem}`,
    :math:`\beta = 1 - f_{syn}` and its spike count :func:`_count`; the gradients of :math:`f_{mem}`,
    :math:`f_{syn}` are those of :math:`\alpha`, :math:`\beta` negated.

    By the CPU kernel of :mod:`pondlib.nn.native` for a non-recurrent float32 layer whose only cotangent
    is its spikes' (training on spike outputs), else the XLA loop. The kernel's spike count
    ``min(floor(P / theta), cap)`` for ``P >= theta`` is the exact count of :func:`_count` in integer mode
    (whole-number ``P`` and ``theta`` below :math:`2^{24}`: a correctly rounded quotient never reaches the
    next whole number)."""
    f_mem, f_syn, threshold, w_rec, state0, pre, q, spikes, dx_flag = res
    kernel = bool(
        w_rec is None
        and spike_cotangent_only(cts)
        and pre.size
        and native.eligible(f_mem, f_syn, threshold, pre, q, cts[0], *state0)
    )
    coef = AdjointCoefficients(
        1.0 - f_mem, 1.0 - f_syn, threshold, cfg.cap, cfg.surrogate, partial(_count, cfg, threshold)
    )
    residuals = AdjointResiduals(w_rec, tuple(state0), pre, q, spikes, dx_flag is not None)
    d_alpha, d_beta, d_th, d_bias, d_w, d_cur, d_state0 = adjoint_backward(coef, residuals, cts, kernel)
    return -d_alpha, -d_beta, d_th, d_bias, d_w, d_cur, d_state0


xylo_scan.defvjp(_fwd, _bwd, symbolic_zeros=True)
