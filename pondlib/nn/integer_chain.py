r"""Training a chain of integer ``Linear -> LIF`` layers as one compiled loop per sample (CPU, C build of
the kernels): the integer mode of :mod:`pondlib.nn.train_chain`.

An *integer pair* is a layer that fuses a weight matrix and a LIF whose states are whole numbers held in
float32 (a device-aware twin of a fixed-point chip): its weights :math:`W` (n_in, N k) already lie on an
integer grid (rounded by straight-through estimators in JAX, outside this loop), and one step of its
``N`` neurons with ``k`` synapses reads, with the decay factors :math:`f = 1 - \alpha = 2^{-d}` and
:math:`f_{syn} = 1 - \beta = 2^{-d_{syn}}` (whole ``d <= 24``: both exact in float32),

.. math::

    a_t &= h_t W, \qquad q_t = \mathrm{sat}(I_{t-1} + a_t), \qquad
    I_t = q_t - \mathrm{decay}(q_t, f_{syn}) \\
    P_t &= \mathrm{sat}\Big(V_{t-1} + \mathrm{sat}\big(\mathrm{sat}(\textstyle\sum_k I_t
           - \mathrm{decay}(V_{t-1}, f)) + b\big)\Big), \qquad
    s_t = \min(\lfloor P_t / \theta \rfloor, \mathrm{cap})\,[P_t \ge \theta], \qquad V_t = P_t - s_t\theta

with :math:`\mathrm{sat}` the clip to ``[lo, hi]`` and :math:`\mathrm{decay}(v, f) = \lfloor v f\rfloor`
(or :math:`\mathrm{sign}(v)` where that is 0: an arithmetic right shift with a minimum step toward zero),
the spike count exact (the correctly rounded quotient of whole numbers below :math:`2^{24}` never reaches
the next whole number, so its floor is the count). Its input row :math:`h_t` is the
previous layer's spikes of the same step, or of step ``t - 1`` for a layer with an input *delay* (the
state's last input row ``x_prev`` at ``t = 0``); the first layer's input is clipped at ``input_clip`` and
delayed in JAX before the loop. The gradients are those of the straight-through estimators: ``sat`` and
the floors pass the gradient unchanged and ``decay(v, f)`` differentiates as ``v f``, so the adjoint is the
float LIF's (:mod:`pondlib.nn.adjoint`) with :math:`\alpha`, :math:`\beta`, run by the kernel of
:mod:`pondlib.nn.train_chain` (row-wise :math:`\partial W`, the spike cotangent of a delayed layer's input
handed to the step before).

With whole-number inputs (event counts) the currents :math:`h_t W` are sums of whole numbers below
:math:`2^{24}`, exact in any order, so the forward pass equals the layer-by-layer path (an XLA product
for all steps, then the integer LIF loop) bit for bit; with fractional inputs the first layer's currents
may differ from XLA's product by float32 rounding (and the states, no longer whole numbers, may then
differ in the spike count's last rounding as well).

A layer joins such a chain through a hook: a method ``chain_pair()`` that returns an :class:`IntegerPair`
(or None where it cannot: then the chain runs layer by layer), and a state that is a named tuple with the
fields ``isyn`` (*b, N, k), ``vmem`` (*b, N), ``spikes`` (*b, N) and ``x_prev`` (*b, n_in) (the last
input row the layer read). :func:`run` is what :class:`~pondlib.nn.Sequential` calls.

Example (one integer neuron, weight 64, halving decays, threshold 100):
    >>> import jax.numpy as jnp
    >>> from pondlib.nn.surrogate import Surrogate
    >>> half = jnp.full((1,), 0.5)
    >>> pair = IntegerPair(jnp.full((1, 1), 64.0), half, half[:, None], jnp.full(1, 100.0), jnp.zeros(1),
    ...                    1.0, Surrogate(), -32768.0, 32767.0, False, None, None)
    >>> state = (jnp.zeros((1, 1, 1)), jnp.zeros((1, 1)), jnp.zeros((1, 1)), None)   # batch of 1
    >>> y, ((isyn, vmem, spikes),) = integer_chain((pair,), jnp.ones((3, 1, 1)), (state,))
    >>> y[:, 0, 0].tolist(), isyn.tolist(), vmem.tolist()   # I: 32, 48, 56; P: 32, 64, 88
    ([0.0, 0.0, 0.0], [[[56.0]]], [[88.0]])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import CustomVJPPrimal, SymbolicZero

from pondlib.errors import GraphError
from pondlib.nn import native
from pondlib.nn.surrogate import Surrogate
from pondlib.nn.train_chain import _KINDS, KEEP_LIMIT, RECOMPUTE_LIMIT, _layout
from pondlib.validate import check_shape, check_type

__all__ = ["IntegerPair", "integer_chain", "run"]


class IntegerPair(NamedTuple):
    """One integer layer of the chain, in the terms of the module docstring.

    ``weight`` (n_in, N k) on the integer grid; ``alpha`` (N) ``1 - 2^-d``; ``beta`` (N, k)
    ``1 - 2^-d_syn``; ``threshold``, ``bias`` (N) in the same integer units (arrays: JAX differentiates
    the layer's own map from its parameters to these). ``cap``: spike cap per step; ``surrogate``; ``lo``,
    ``hi``: the saturation bounds; ``delay``: read the input one step late; ``input_clip``: clip the
    input at this value (None: no clip; a layer after the first must leave its input unclipped or clip
    above the previous layer's cap). ``evolve``: a module-level function ``evolve(spec, weight, alpha,
    beta, threshold, bias, x, (isyn (*b, N, k), vmem, spikes)) -> (spikes (T, *b, N), (isyn, vmem,
    spikes))`` giving the layer's own loop on its (clipped, delayed) input ``x`` (T, *b, n_in), ``spec``
    = ``(cap, surrogate, lo, hi)``: the reference the backward pass differentiates where the kernel's
    adjoint does not apply (a cotangent on a final state, or off CPU)."""

    weight: jax.Array
    alpha: jax.Array
    beta: jax.Array
    threshold: jax.Array
    bias: jax.Array
    cap: float
    surrogate: Surrogate
    lo: float
    hi: float
    delay: bool
    input_clip: float | None
    evolve: Callable | None


def _pairs(layers: tuple) -> tuple | None:
    """The layers' :class:`IntegerPair` s, or None unless every layer has the hook and gives one, and every
    layer after the first reads its input unclipped (or clipped above the previous cap)."""
    hooks = [getattr(m, "chain_pair", None) for m in layers]
    if not layers or any(not callable(h) for h in hooks):
        return None
    pairs = tuple(h() for h in hooks)
    if any(not isinstance(p, IntegerPair) for p in pairs):
        return None
    for prev, p in zip(pairs[:-1], pairs[1:]):
        if p.input_clip is not None and p.input_clip <= prev.cap:
            return None
    if any(p.surrogate.kind not in _KINDS for p in pairs):
        return None
    return pairs


def _eligible(pairs: tuple, x: jax.Array, states: tuple) -> bool:
    """A non-empty float32 input and float32 parameters and states, fewer than 2^31 values per stack and
    parameters in all, a chain that fits the kernel (1 to 64 pairs, consecutive sizes, the states' shapes)
    and the C build of the kernels on a CPU backend (:func:`pondlib.nn.native.eligible`,
    :func:`pondlib.nn.native.pair_available`)."""
    if x.ndim < 2 or x.size == 0 or not 1 <= len(pairs) <= 64:
        return False
    rows = math.prod(x.shape[1:-1])
    width = sum(p.weight.shape[1] + p.alpha.shape[0] for p in pairs)
    n_prm = sum(p.weight.size + p.beta.size + 3 * p.alpha.shape[0] + 1 for p in pairs)
    if max(x.size, x.shape[0] * rows * width) >= 2**31 or n_prm >= 2**31 - 2**24:
        return False
    n_in, batch = x.shape[-1], x.shape[1:-1]
    if len(states) != len(pairs):
        return False
    for p, st in zip(pairs, states):
        if p.weight.ndim != 2 or p.beta.ndim != 2 or p.weight.shape != (n_in, p.beta.size) or p.evolve is None:
            return False
        n, k = p.beta.shape
        shapes = ((st.isyn, (n, k)), (st.vmem, (n,)), (st.spikes, (n,)), (st.x_prev, (n_in,)))
        if any(tuple(a.shape) not in (batch + want, want) for a, want in shapes):
            return False  # the states of Sequential.init_state, batched or not
        n_in = n
    arrays = [x] + [a for p in pairs for a in p[:5]]
    arrays += [a for st in states for a in (st.isyn, st.vmem, st.spikes, st.x_prev)]
    return native.eligible(*arrays) and native.pair_available()


def run(layers: tuple, x: jax.Array, states: tuple) -> tuple | None:
    """``(y, new_states)`` of the layers as one integer chain (:func:`integer_chain`), or None where it
    does not apply (a layer without the hook or refusing it, or the chain not eligible: the caller then
    runs the layers one by one). ``x`` (T, *batch, n_in) time-major; ``states`` the layers' states (named
    tuples, module docstring) with the batch shape of ``x`` or broadcasting to it."""
    pairs = _pairs(tuple(layers))
    if pairs is None or not _eligible(pairs, x, states):
        return None
    batch = x.shape[1:-1]
    first = pairs[0]
    h = x if first.input_clip is None else jnp.minimum(x, first.input_clip)
    x_prev_new = h[-1]
    if first.delay:  # the first layer reads x[t - 1] (x_prev at t = 0), delayed here
        h = jnp.concatenate([jnp.broadcast_to(states[0].x_prev, h.shape[1:])[None], h[:-1]], axis=0)
    flat = []
    for j, (p, st) in enumerate(zip(pairs, states)):
        n, k = p.beta.shape
        x_prev = jnp.broadcast_to(st.x_prev, batch + st.x_prev.shape[-1:]) if p.delay and j > 0 else None
        flat.append(
            (
                jnp.broadcast_to(st.isyn, batch + (n, k)),
                jnp.broadcast_to(st.vmem, batch + (n,)),
                jnp.broadcast_to(st.spikes, batch + (n,)),
                x_prev,
            )
        )
    chain = (first._replace(delay=False, input_clip=None),) + pairs[1:]  # both applied to h above
    y, finals = integer_chain(chain, h, tuple(flat))
    new_states = []
    for j, (p, st) in enumerate(zip(pairs, states)):
        if j > 0:  # the last input row: the previous layer's last spikes (clipped as the input is)
            x_prev_new = finals[j - 1][2] if p.input_clip is None else jnp.minimum(finals[j - 1][2], p.input_clip)
        new_states.append(st._replace(isyn=finals[j][0], vmem=finals[j][1], spikes=finals[j][2], x_prev=x_prev_new))
    return y, tuple(new_states)


def integer_chain(pairs: tuple, x: jax.Array, states: tuple) -> tuple:
    """The chain of :class:`IntegerPair` s on the input of its first layer (already clipped and delayed).

    Args:
        pairs: the layers (their arrays are the differentiated parameters).
        x: (T, *batch, n_in) float32 time-major.
        states: per layer ``(isyn (*batch, N, k), vmem (*batch, N), spikes (*batch, N), x_prev)``,
            ``x_prev`` (*batch, n_in) for a delayed layer after the first, else None.

    Returns:
        ``(y (T, *batch, N_last), finals)``: the last layer's spikes and each layer's final
        ``(isyn, vmem, spikes)``. Where the kernel cannot run (not :func:`pondlib.nn.native.eligible`:
        another backend, another dtype, no C build) the layers' own ``evolve`` run one by one instead.

    Raises:
        GraphError: naming the argument: ``pairs`` not a non-empty tuple of :class:`IntegerPair` (or one
            without ``evolve`` where the kernel cannot run), arrays of shapes that do not chain (``x``
            (T >= 1, *batch, n_in), ``weight`` (n_in, N k), ``alpha``, ``threshold``, ``bias`` (N,), ``beta``
            (N, k)), a first layer with a delay or ``input_clip`` (apply them to ``x``), ``states`` not one
            4-tuple per layer of the batch's shapes.
    """
    _check_call(pairs, x, states)
    static = tuple(p[5:] for p in pairs)
    params = tuple(tuple(p[:5]) for p in pairs)
    flat = [x] + [a for p in params for a in p] + [a for st in states for a in st if a is not None]
    if not (native.eligible(*flat) and native.pair_available()):  # the chain kernel is in the C build only
        return _reference(static, params, x, states)
    return _chain(static, params, x, states)


def _check_call(pairs: Any, x: Any, states: Any) -> None:
    """The arguments of :func:`integer_chain` (shapes only: they are static under tracing)."""
    where, fix = "integer_chain", "pass what pondlib.nn.integer_chain.run builds from the layers' chain_pair()"
    check_type(pairs, "pairs", tuple, where=where, error=GraphError, fix=fix)
    if not pairs or any(not isinstance(p, IntegerPair) for p in pairs):
        raise GraphError("pairs", value=f"{len(pairs)} entries", limit="IntegerPairs", where=where, fix=fix)
    if pairs[0].delay or pairs[0].input_clip is not None:
        raise GraphError("pairs[0] delay / input_clip", value=True, limit=False, where=where, fix="apply them to x")
    x = jnp.asarray(check_type(x, "x", (jax.Array, np.ndarray), where=where, error=GraphError))
    if x.ndim < 2 or x.shape[0] < 1:
        raise GraphError("x shape", value=tuple(x.shape), limit="(T >= 1, *batch, n_in)", where=where, fix=fix)
    batch, n_in = x.shape[1:-1], x.shape[-1]
    check_type(states, "states", tuple, where=where, error=GraphError, fix=fix)
    if len(states) != len(pairs):
        raise GraphError("states", value=len(states), limit=len(pairs), where=where, fix="pass one state per layer")
    for j, (p, st) in enumerate(zip(pairs, states)):
        n, k = (p.beta.shape + (0, 0))[:2] if p.beta.ndim == 2 else (-1, -1)
        want = {
            "weight": (p.weight, (n_in, n * k)),
            "alpha": (p.alpha, (n,)),
            "beta": (p.beta, (n, k)),
            "threshold": (p.threshold, (n,)),
            "bias": (p.bias, (n,)),
        }
        for name, (a, shape) in want.items():
            check_shape(jnp.asarray(a), f"pairs[{j}].{name}", shape, where=where, error=GraphError, fix=fix)
        if not isinstance(st, tuple) or len(st) != 4:
            raise GraphError(f"states[{j}]", value=type(st).__name__, limit="(isyn, vmem, spikes, x_prev)", where=where)
        x_prev = (batch + (n_in,)) if p.delay and j > 0 else None
        for name, a, shape in zip(("isyn", "vmem", "spikes"), st, (batch + (n, k), batch + (n,), batch + (n,))):
            check_shape(jnp.asarray(a), f"states[{j}].{name}", shape, where=where, error=GraphError, fix=fix)
        if (st[3] is None) != (x_prev is None):
            raise GraphError(f"states[{j}].x_prev", value=st[3] is not None, limit=x_prev is not None, where=where)
        if x_prev is not None:
            check_shape(jnp.asarray(st[3]), f"states[{j}].x_prev", x_prev, where=where, error=GraphError, fix=fix)
        n_in = n


def _split(static: tuple, params: tuple) -> tuple:
    """The arguments of :func:`pondlib.nn.train_chain._layout`: specs, values, modes."""
    specs, vals, modes = [], [], []
    for j, ((cap, surrogate, lo, hi, delay, _, _), p) in enumerate(zip(static, params)):
        weight, alpha, beta, threshold, bias = p
        specs += [("linear",), ("lif", cap, surrogate)]
        vals += [(weight, None), (alpha, beta, threshold, bias, None)]
        modes.append((1.0, lo, hi, 1.0 if delay and j > 0 else 0.0))  # the first layer's delay: done in JAX
    return tuple(specs), tuple(vals), tuple(modes)


def _flat_state(params: tuple, states: tuple, rows: int) -> jax.Array:
    """Every layer's ``(isyn (N k), vmem (N), spikes (N)[, x_prev (n_in)])`` side by side: (R, S)."""
    flat = []
    for (_, _, beta, _, _), st in zip(params, states):
        n, k = beta.shape
        isyn, vmem, spikes, x_prev = st
        flat += [isyn.reshape(rows, n * k), vmem.reshape(rows, n), spikes.reshape(rows, n)]
        flat += [] if x_prev is None else [x_prev.reshape(rows, -1)]
    return jnp.concatenate(flat, axis=1)


def _forward(static: tuple, params: tuple, x: jax.Array, states: tuple, keep: bool, want_dx: bool) -> tuple:
    """The kernel's forward pass: ``((y, finals), (pre, q, prm, state0, ops, cfg))`` (``keep``: store ``P``
    and ``q`` for the backward pass; ``want_dx``: it computes the input's cotangent)."""
    steps, batch = x.shape[0], x.shape[1:-1]
    rows = math.prod(batch)
    specs, vals, modes = _split(static, params)
    ops, pieces, tail, _ = _layout(specs, vals, modes)
    prm = jnp.concatenate([jnp.ravel(a) for a in pieces])
    state0 = _flat_state(params, states, rows)
    sn, sq = int(ops[:, 1].sum()), int((ops[:, 1] * ops[:, 2]).sum())
    n_last = int(ops[-1, 1])
    cfg = jnp.asarray([1.0, float(want_dx), float(keep)] + tail, jnp.float32)
    ops = jnp.asarray(ops)
    y, pre, q, state = native.train_chain_forward(
        x.reshape(steps, rows, -1), prm, ops, state0, cfg, n_last, sn, sq, True, keep
    )
    finals, at = [], 0
    for (_, _, beta, _, _), st in zip(params, states):
        n, k = beta.shape
        isyn = state[:, at : at + n * k].reshape(batch + (n, k))
        vmem = state[:, at + n * k : at + n * k + n].reshape(batch + (n,))
        spikes = state[:, at + n * k + n : at + n * k + 2 * n].reshape(batch + (n,))
        at += n * k + 2 * n + (0 if st[3] is None else st[3].shape[-1])
        finals.append((isyn, vmem, spikes))
    return (y.reshape((steps,) + batch + (n_last,)), tuple(finals)), (pre, q, prm, state0, ops, cfg)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _chain(static: tuple, params: tuple, x: jax.Array, states: tuple) -> tuple:
    return _forward(static, params, x, states, False, False)[0]


def _value(tree: Any) -> Any:
    return jax.tree_util.tree_map(lambda a: a.value, tree, is_leaf=lambda a: isinstance(a, CustomVJPPrimal))


def _fwd(static: tuple, params: tuple, x: Any, states: tuple):
    params, xv, states, want_dx = _value(params), x.value, _value(states), x.perturbed
    steps, rows = xv.shape[0], math.prod(xv.shape[1:-1])
    sizes = sum(p[1].shape[0] + p[2].size for p in params)
    keep = steps * rows * sizes <= KEEP_LIMIT or steps * sizes > RECOMPUTE_LIMIT
    out, (pre, q, prm, state0, ops, cfg) = _forward(static, params, xv, states, keep, want_dx)
    flags = (() if keep else None, () if want_dx else None)
    return out, (params, xv, states, pre, q, prm, state0, ops, cfg, flags)


def _given(c: Any) -> Any:
    return None if c is None or isinstance(c, SymbolicZero) else c


def _bwd(static: tuple, res: tuple, cts: tuple) -> tuple:
    """The kernel's adjoint where the only cotangent is the last spikes' (float32), else the reference's
    (``evolve`` of each layer, differentiated by JAX)."""
    g_y, g_finals = cts
    others = jax.tree_util.tree_leaves(g_finals, is_leaf=lambda a: isinstance(a, SymbolicZero))
    if _given(g_y) is None or jnp.result_type(g_y) != jnp.float32 or any(_given(c) is not None for c in others):
        return _reference_bwd(static, res, cts)
    return jax.lax.platform_dependent(
        cpu=lambda: _kernel_bwd(static, res, g_y), default=lambda: _reference_bwd(static, res, cts)
    )


def _kernel_bwd(static: tuple, res: tuple, g_y: jax.Array) -> tuple:
    params, xv, states, pre, q, prm, state0, ops, cfg, (keep, want_dx) = res
    steps, batch = xv.shape[0], xv.shape[1:-1]
    rows = math.prod(batch)
    if keep is None:  # not kept: the kernel recomputes them per sample
        pre = q = jnp.zeros((1, 1, 1), jnp.float32)
    specs, vals, modes = _split(static, params)
    _, _, _, offsets = _layout(specs, vals, modes)
    d_prm, d_state0, dx = native.train_chain_backward(
        xv.reshape(steps, rows, -1),
        prm,
        ops,
        pre,
        q,
        g_y.reshape(steps, rows, -1),
        state0,
        cfg,
        True,
        want_dx is not None,
    )
    d_params, d_states, at = [], [], 0
    for (weight, _, beta, _, _), st, (off_w, _, off_lif, _, _) in zip(params, states, offsets):
        n, k = beta.shape
        nk = n * k
        lif = d_prm[off_lif : off_lif + 3 * n + nk]
        d_w = d_prm[off_w : off_w + weight.size].reshape(weight.shape)
        d_params.append((d_w, lif[:n], lif[n : n + nk].reshape(n, k), lif[n + nk : 2 * n + nk], lif[2 * n + nk :]))
        d_i0 = d_state0[:, at : at + nk].reshape(batch + (n, k))
        d_v0 = d_state0[:, at + nk : at + nk + n].reshape(batch + (n,))
        at += nk + 2 * n
        d_x0 = None
        if st[3] is not None:
            d_x0 = d_state0[:, at : at + st[3].shape[-1]].reshape(st[3].shape)
            at += st[3].shape[-1]
        d_states.append((d_i0, d_v0, jnp.zeros_like(st[2]), d_x0))
    return tuple(d_params), (None if dx is None else dx.reshape(xv.shape)), tuple(d_states)


def _reference(static: tuple, params: tuple, x: jax.Array, states: tuple) -> tuple:
    """The chain layer by layer through each layer's ``evolve`` (its own loop), delays applied here."""
    h, finals = x, []
    for j, ((cap, surrogate, lo, hi, delay, _, evolve), p, st) in enumerate(zip(static, params, states)):
        if evolve is None:
            raise GraphError(
                f"pairs[{j}].evolve",
                value=None,
                limit="the layer's own loop",
                where="integer_chain",
                fix="give every IntegerPair its evolve (needed off the kernel: other backends, final-state gradients)",
            )
        isyn, vmem, spikes, x_prev = st
        if delay and j > 0:
            h = jnp.concatenate([x_prev[None], h[:-1]], axis=0)
        h, final = evolve((cap, surrogate, lo, hi), *p, h, (isyn, vmem, spikes))
        finals.append(tuple(final))
    return h, tuple(finals)


def _reference_bwd(static: tuple, res: tuple, cts: tuple) -> tuple:
    params, xv, states = res[:3]
    out, vjp = jax.vjp(partial(_reference, static), params, xv, states)
    dense = jax.tree_util.tree_map(
        lambda c, o: jnp.zeros_like(o) if _given(c) is None else c.astype(o.dtype),
        cts,
        out,
        is_leaf=lambda a: a is None or isinstance(a, SymbolicZero),
    )
    d_params, d_x, d_states = vjp(dense)
    return d_params, (d_x if res[-1][1] is not None else None), d_states


_chain.defvjp(_fwd, _bwd, symbolic_zeros=True)
