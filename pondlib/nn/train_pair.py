r"""Training a ``Linear -> LIF`` pair of a fused chain as one compiled loop (CPU, C build of the kernels).

In the layer-by-layer training path of :func:`pondlib.nn.fused.chain_scan` a ``Linear`` writes its
currents :math:`a = x W + c` for all steps, ``(T, *batch, N k)``, and the LIF reads them back; under
:func:`jax.grad` the LIF's adjoint writes :math:`\bar a` (the same shape) and the Linear's gradients are
two more products over all ``T * B`` rows. For spike inputs most of those products' terms are zeros. The
pair kernels (:func:`pondlib.nn.native.pair_forward`, :func:`pondlib.nn.native.pair_backward`, in
``pondlib/nn/csrc/lif.c``) compute each step's current of each sample inside the LIF's loop from the
non-zero inputs only,

.. math::

    a_{t,b,m} = \Big(\sum_{i:\,x_{t,b,i} \ne 0} x_{t,b,i} W_{i,m}\Big) + c_m,

and, backwards, :math:`\partial W = \sum_{t,b} x_{t,b}^\top \bar a_{t,b}` over the same non-zero inputs,
:math:`\partial c = \sum_{t,b} \bar a_{t,b}` and, where the input is differentiated (a pair after the
first), :math:`\bar x_{t,b} = \bar a_{t,b} W^\top`, step by step: neither stack is written. The residuals
are the LIF's own (the membrane before reset :math:`P` and the synaptic input :math:`q`, (T, *batch, N) and
(T, *batch, N k)) and the pair's input, which :math:`\partial W` needs.

The sum over the active inputs is added in ascending ``i`` by fused multiply-adds from +0, the order of
the inference kernel (``pondlib/nn/csrc/chain.c``): the training forward pass gives the spikes and
states of inference bit for bit. XLA's product sums in its own blocked order, so against the XLA path
(``PONDLIB_NATIVE=0``, other platforms, the numba build) currents differ by float32 rounding and
gradients agree to it (``tests/nn/test_lif_c.py``).

When it runs: a ``Linear`` directly followed by a non-recurrent ``LIF`` in a chain trained through
:func:`pondlib.nn.fused.chain_scan`, every array float32, on CPU with the C build
(:func:`pondlib.nn.native.pair_available`); the backward kernel when the spikes carry the only cotangent
(else the LIF's adjoint and the Linear's XLA products run from the same residuals).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
from jax.custom_derivatives import CustomVJPPrimal

from pondlib.nn import native
from pondlib.nn.adjoint import _bwd as _lif_bwd
from pondlib.nn.adjoint import _fwd as _lif_fwd
from pondlib.nn.adjoint import _unbroadcast, broadcast_state, spike_cotangent_only
from pondlib.nn.lif_core import reset, synapse_decay, unflatten_synapses

__all__ = ["eligible", "pair_fwd", "pair_bwd", "Factored", "dense"]


def _linear(x: jax.Array, weight: jax.Array, bias: jax.Array | None) -> jax.Array:
    """``x (..., n_in) @ W + c`` as one 2-D product (the Linear's own operation)."""
    n_in, n_out = weight.shape
    y = (x.reshape(-1, n_in) @ weight).reshape(x.shape[:-1] + (n_out,))
    return y if bias is None else y + bias


def eligible(linear: tuple, lif: tuple, x: jax.Array, state: Any) -> bool:
    """Whether the pair kernels may run: ``linear`` = ``(W, c)``, ``lif`` = ``(alpha, beta, threshold, bias,
    w_rec)`` (values), ``x`` the pair's input (T, *batch, n_in), ``state`` the LIF's initial state; a
    non-recurrent LIF, a non-empty input, every array float32 (``c`` may be absent), fewer than 2^31
    elements per stack and the C build available (:func:`pondlib.nn.native.pair_available`)."""
    weight, c = linear
    alpha, beta, threshold, bias, w_rec = lif
    if w_rec is not None or x.size == 0 or x.ndim < 2 or weight.shape[1] != beta.size:
        return False
    if max(x.size, x.shape[0] * math.prod(x.shape[1:-1]) * beta.size) >= 2**31:
        return False
    arrays = (weight, alpha, beta, threshold, bias, x, *jax.tree_util.tree_leaves(state))
    if c is not None and jnp.result_type(c) != jnp.float32:
        return False
    return native.eligible(*arrays) and native.pair_available()


def _value(tree: Any) -> Any:
    return jax.tree_util.tree_map(lambda a: a.value, tree, is_leaf=lambda a: isinstance(a, CustomVJPPrimal))


def pair_fwd(cap, surrogate, linear: tuple, lif: tuple, x: jax.Array, state: Any, want_dx: bool, batch_major: bool):
    """The pair's forward pass: ``linear`` = ``(W, c)`` (values), ``lif`` the LIF's parameters as
    :class:`~jax.custom_derivatives.CustomVJPPrimal`, ``x`` (T, *batch, n_in) the pair's input (value),
    ``state`` the LIF's initial state (primals); ``want_dx``: whether the input's cotangent is wanted;
    ``batch_major``: ``x`` is a batch-major input swapped to time-major (the kernel then reads it in
    place). Returns the LIF's outputs ``(spikes, vmem, isyn, final_state)`` and the residuals (a dict:
    :func:`pondlib.nn.fused._chain_bwd` tells a pair by it)."""
    weight, c = linear
    alpha, beta, threshold, bias, _ = _value(lif)
    state0 = _value(state)
    n, k = beta.shape
    steps, batch = x.shape[0], x.shape[1:-1]
    rows = math.prod(batch)
    i0, v0, _ = broadcast_state(state0, batch, n, k)

    def kernel():
        pre, q, spikes, i_f, v_f = native.pair_forward(
            x.reshape(steps, rows, -1), weight, c, alpha, beta, threshold, bias,
            i0.reshape(rows, n * k), v0.reshape(rows, n), cap, batch_major,
        )  # fmt: skip
        unfold = lambda a, w: a.reshape((steps,) + batch + (w,))  # noqa: E731
        return (
            unfold(pre, n),
            unfold(q, n * k),
            unfold(spikes, n),
            i_f.reshape(batch + (n * k,)),
            v_f.reshape(batch + (n,)),
        )

    def xla():
        cur = CustomVJPPrimal(_linear(x, weight, c), True)
        out, res = _lif_fwd(cap, surrogate, *lif, cur, state)
        return res[5], res[6], out[0], out[3].isyn.reshape(batch + (n * k,)), out[3].vmem

    pre, q, spikes, i_f, v_f = jax.lax.platform_dependent(cpu=kernel, default=xla)
    vmem = reset(pre, spikes, threshold)  # outputs as the LIF's own forward pass gives them (unused: dropped)
    isyn = unflatten_synapses(synapse_decay(q, beta.reshape(n * k)), k)
    out = (spikes, vmem, isyn, type(state0)(unflatten_synapses(i_f, k), v_f, spikes[-1]))
    # the LIF's residuals in the layout of pondlib.nn.adjoint (dL/da wanted, the kernel ran), then the pair's
    lif_res = (alpha, beta, threshold, None, state0, pre, q, None, (), ())
    flags = (() if want_dx else None, () if batch_major else None)
    return out, {"lif": lif_res, "linear": (weight, c, x), "flags": flags}


class Factored:
    """A pair's input cotangent held as the product :math:`\bar a W^\top` of its current's cotangent
    ``da`` (T, *batch, N k) and its weights ``weight`` (n_in, N k): a previous pair's kernel forms it row
    by row, anything else calls :meth:`dense`."""

    __slots__ = ("da", "weight")

    def __init__(self, da: jax.Array, weight: jax.Array) -> None:
        self.da, self.weight = da, weight

    def dense(self) -> jax.Array:
        """The cotangent (T, *batch, n_in)."""
        n_in, nk = self.weight.shape
        return (self.da.reshape(-1, nk) @ self.weight.T).reshape(self.da.shape[:-1] + (n_in,))


def dense(g: Any) -> Any:
    """``g``, a :class:`Factored` cotangent multiplied out."""
    return g.dense() if isinstance(g, Factored) else g


def pair_bwd(cap, surrogate, res: dict, cts: tuple) -> tuple:
    """The pair's adjoint from the residuals of :func:`pair_fwd` and the LIF's output cotangents ``cts``
    (``(spikes, vmem, isyn, final_state)``, the spikes' possibly :class:`Factored`): ``((d_W, d_c),
    (d_alpha, d_beta, d_threshold, d_bias, None), d_x or None, d_state0)``, ``d_x`` :class:`Factored` where
    that is the smaller (``N k <= n_in``). The pair kernel where the spikes carry the only cotangent, else
    the LIF's adjoint (:func:`pondlib.nn.adjoint._bwd`) and the Linear's products by :func:`jax.vjp`."""
    weight, c, x = res["linear"]
    want_dx, batch_major = (f is not None for f in res["flags"])
    lif_res = res["lif"]
    factored = want_dx and weight.shape[1] <= weight.shape[0]
    g_sp, factor = cts[0], None
    if isinstance(g_sp, Factored) and spike_cotangent_only((g_sp.da,) + tuple(cts[1:])):
        factor = g_sp
    cts = (dense(g_sp),) + tuple(cts[1:]) if factor is None else cts

    def layerwise():
        d_alpha, d_beta, d_th, d_bias, _, g_cur, d_state0 = _lif_bwd(
            cap, surrogate, lif_res, (dense(cts[0]),) + cts[1:]
        )
        if want_dx and not factored:
            _, vjp = jax.vjp(_linear, x, weight, c)
            g_x, d_w, d_c = vjp(g_cur)
        else:
            _, vjp = jax.vjp(lambda w, b: _linear(x, w, b), weight, c)
            (d_w, d_c), g_x = vjp(g_cur), (g_cur if factored else None)
        return (d_w, d_c), (d_alpha, d_beta, d_th, d_bias, None), g_x, d_state0

    if factor is None and not spike_cotangent_only(cts):
        out = layerwise()
    else:
        out = jax.lax.platform_dependent(
            cpu=lambda: _kernel_bwd(cap, surrogate, res, cts[0], factor, factored), default=layerwise
        )
    d_lin, d_lif, g_x, d_state0 = out
    return d_lin, d_lif, (Factored(g_x, weight) if factored else g_x), d_state0


def _kernel_bwd(cap, surrogate, res: dict, g_spikes: Any, factor: Factored | None, factored: bool) -> tuple:
    """:func:`pair_bwd` by :func:`pondlib.nn.native.pair_backward`."""
    weight, c, x = res["linear"]
    want_dx, batch_major = (f is not None for f in res["flags"])
    alpha, beta, threshold, _, state0, pre, q = res["lif"][:7]
    n, k = beta.shape
    steps, batch = pre.shape[0], pre.shape[1:-1]
    rows = math.prod(batch)
    _, v0, _ = broadcast_state(state0, batch, n, k)
    fold = lambda a: a.reshape((steps, rows, a.shape[-1]))  # noqa: E731
    out = "da" if factored else ("dx" if want_dx else "none")
    d_alpha, d_beta, d_th, d_bias, d_w, d_c, g_x, d_i0, d_v0 = native.pair_backward(
        fold(x), weight, c, fold(pre), fold(q), None if factor is not None else fold(g_spikes),
        alpha, beta, threshold, v0.reshape(rows, n), cap, surrogate, out, batch_major,
        None if factor is None else (fold(factor.da), factor.weight),
    )  # fmt: skip
    isyn0, vmem0, spikes0 = state0
    d_state0 = type(state0)(
        _unbroadcast(unflatten_synapses(d_i0.reshape(batch + (n * k,)), k), isyn0),
        _unbroadcast(d_v0.reshape(batch + (n,)), vmem0),
        _unbroadcast(jnp.zeros(batch + (n,), pre.dtype), spikes0),
    )
    g_x = None if g_x is None else g_x.reshape((steps,) + batch + (g_x.shape[-1],))
    return (d_w, None if c is None else d_c), (d_alpha, d_beta, d_th, d_bias, None), g_x, d_state0
