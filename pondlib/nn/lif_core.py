r"""The LIF neuron's discrete step as pure functions: the one definition of its arithmetic, which every time
loop of :mod:`pondlib.nn` calls (the public :func:`pondlib.nn.lif.lif_step`, the scan of the ``LIF``
module and the forward and backward loops of its adjoint, :mod:`pondlib.nn.adjoint`, and the fused
chain, :mod:`pondlib.nn.fused`).

One step of ``dt`` seconds for ``N`` neurons with ``k`` synaptic currents each, on the flat synapse
layout the loops use: synaptic arrays are ``(*batch, N*k)``, flat index :math:`m = n k + j` for synapse
``j`` of neuron ``n`` (channel ``m`` of the input drives it); per-neuron arrays are ``(*batch, N)``.
With :math:`s[t-1]` the previous step's spike counts:

.. math::

    a[t] &= x[t] + s[t-1] W_{rec} \\
    q[t] &= I[t-1] + a[t], \qquad I[t] = \beta \odot q[t], \qquad \beta = e^{-dt/\tau_{syn}} \\
    P[t] &= \alpha \odot V[t-1] + \textstyle\sum_{j<k} I[t]_{nk+j} + b, \qquad \alpha = e^{-dt/\tau_{mem}} \\
    s[t] &= \min(\lfloor P[t] / \theta \rfloor, s_{max}) \text{ where } P[t] \ge \theta \text{, else } 0 \\
    V[t] &= P[t] - s[t]\,\theta \qquad \text{(reset by subtraction)}

one function each:

- :func:`recurrent_input`: the input current :math:`a` (*batch, N k);
- :func:`synapse_input`: the synaptic current before decay :math:`q` (*batch, N k);
- :func:`synapse_decay`: the synaptic current :math:`I` (*batch, N k), the new synaptic state;
- :func:`membrane`: the membrane before reset :math:`P` (*batch, N);
- :func:`spike_counts`: the spike counts :math:`s` (*batch, N);
- :func:`reset`: the membrane after reset :math:`V` (*batch, N), the new membrane state.

:func:`lif_step_flat` composes them in this order. Units: currents, voltages and thresholds in one
arbitrary unit, ``alpha`` and ``beta`` dimensionless decays per step, spike counts whole numbers. The
spike count's derivative is the surrogate's (:mod:`pondlib.nn.surrogate`); the backward loop reads its
slopes from :func:`surrogate_slopes`.

Each function is the same JAX operations in the same order wherever it is called, so the loops that
share it compute the same values: the adjoint's forward outputs equal a scan of ``lif_step`` bit for
bit (``tests/nn/test_adjoint.py``), and its backward loop recomputes the forward's spike counts and
membranes exactly from the stored ``P``.

Example (one neuron, one synapse, ``alpha = beta = 1/2``; the halving of :mod:`pondlib.nn.lif`):
    >>> import jax.numpy as jnp
    >>> from pondlib.nn.surrogate import Surrogate
    >>> half, one = jnp.full(1, 0.5), jnp.ones(1)
    >>> p = FlatLIFParameters(half, half, one, 0 * one, None, 2.0**16, Surrogate())
    >>> r = lif_step_flat(p, jnp.zeros(1), jnp.zeros(1), jnp.zeros(1), jnp.array([4.5]))
    >>> r.q.tolist(), r.isyn.tolist(), r.pre.tolist(), r.spikes.tolist(), r.vmem.tolist()
    ([4.5], [2.25], [2.25], [2.0], [0.25])
"""

from __future__ import annotations

from typing import NamedTuple

import jax

from pondlib.nn.surrogate import Surrogate

__all__ = [
    "FlatLIFParameters",
    "LIFStepResult",
    "flatten_synapses",
    "unflatten_synapses",
    "synapse_sum",
    "recurrent_input",
    "synapse_input",
    "synapse_decay",
    "membrane",
    "spike_counts",
    "reset",
    "surrogate_slopes",
    "lif_step_flat",
]


class FlatLIFParameters(NamedTuple):
    """Per-step parameters of :func:`lif_step_flat`, synaptic ones flat (the loops build them once,
    outside the loop, so that no reshape runs per step)."""

    alpha: jax.Array  # (N,)    membrane decay per step, exp(-dt / tau_mem)
    beta: jax.Array  # (N*k,)   synaptic decay per step, exp(-dt / tau_syn), flat
    threshold: jax.Array  # (N,)
    bias: jax.Array  # (N,)     constant current added to the membrane every step
    w_rec: jax.Array | None  # (N, N*k), indexed (pre neuron, post channel), or None
    max_spikes: float  # spike cap per step
    surrogate: Surrogate


class LIFStepResult(NamedTuple):
    """Everything one step computes (module docstring): ``q``, ``isyn`` (*batch, N*k); ``pre``,
    ``spikes``, ``vmem`` (*batch, N). A loop keeps what it needs; XLA drops the rest."""

    q: jax.Array  # synaptic current before decay
    isyn: jax.Array  # synaptic current after decay: the new state
    pre: jax.Array  # membrane before reset
    spikes: jax.Array  # spike counts
    vmem: jax.Array  # membrane after reset: the new state


def flatten_synapses(a: jax.Array) -> jax.Array:
    """(..., N, k) -> (..., N*k), synapse ``j`` of neuron ``n`` at ``n k + j``."""
    return a.reshape(a.shape[:-2] + (a.shape[-2] * a.shape[-1],))


def unflatten_synapses(a: jax.Array, k: int) -> jax.Array:
    """(..., N*k) -> (..., N, k), the inverse of :func:`flatten_synapses`."""
    return a.reshape(a.shape[:-1] + (a.shape[-1] // k, k))


def synapse_sum(i_flat: jax.Array, k: int) -> jax.Array:
    r"""The current each neuron receives, :math:`\sum_{j<k} I_{nk+j}`: (..., N*k) -> (..., N) (the
    array itself for k = 1, no reduction)."""
    return i_flat if k == 1 else unflatten_synapses(i_flat, k).sum(-1)


def recurrent_input(x: jax.Array, spikes_prev: jax.Array, w_rec: jax.Array | None) -> jax.Array:
    r"""The input current :math:`a = x + s_{t-1} W_{rec}`: ``x`` (*batch, N*k), ``spikes_prev``
    (*batch, N), ``w_rec`` (N, N*k) or None (then ``x`` itself)."""
    return x if w_rec is None else x + spikes_prev @ w_rec


def synapse_input(isyn_prev: jax.Array, a: jax.Array) -> jax.Array:
    """The synaptic current before decay ``q = I[t-1] + a`` (*batch, N*k)."""
    return isyn_prev + a


def synapse_decay(q: jax.Array, beta: jax.Array) -> jax.Array:
    """The synaptic current after decay ``I = q * beta`` (*batch, N*k); ``beta`` (N*k,) flat."""
    return q * beta


def membrane(vmem_prev: jax.Array, isyn: jax.Array, alpha: jax.Array, bias: jax.Array, k: int) -> jax.Array:
    r"""The membrane before reset :math:`P = \alpha V[t-1] + \sum_j I_{nk+j} + b` (*batch, N), from the
    previous membrane after reset (*batch, N) and this step's synaptic current (*batch, N*k)."""
    return vmem_prev * alpha + synapse_sum(isyn, k) + bias


def spike_counts(pre: jax.Array, threshold: jax.Array, cap: float, surrogate: Surrogate) -> jax.Array:
    """Spike counts ``min(floor(P / theta), cap)`` where ``P >= theta``, else 0 (same shape as ``pre``),
    with the surrogate's derivative (:func:`pondlib.nn.surrogate.spike_count`)."""
    return surrogate.spikes(pre, threshold, cap)


def reset(pre: jax.Array, spikes: jax.Array, threshold: jax.Array) -> jax.Array:
    """The membrane after reset by subtraction, ``V = P - s * theta`` (same shape as ``pre``)."""
    return pre - spikes * threshold


def surrogate_slopes(
    pre: jax.Array, threshold: jax.Array, cap: float, surrogate: Surrogate
) -> tuple[jax.Array, jax.Array]:
    r"""The surrogate derivatives of the spike count at the membrane before reset ``P``: with
    :math:`u = P/\theta` and :math:`g` the surrogate's ``ds/du``,
    :math:`\partial s/\partial P = g(u)/\theta` and :math:`\partial s/\partial\theta = -g(u)\,u/\theta`
    (at fixed ``P``); both the shape of ``pre``."""
    u = pre / threshold
    g = surrogate.derivative(u, cap)
    return g / threshold, -g * u / threshold


def lif_step_flat(
    params: FlatLIFParameters, isyn: jax.Array, vmem: jax.Array, spikes: jax.Array, x: jax.Array
) -> LIFStepResult:
    """One LIF step on the flat layout (module docstring): the state ``isyn`` (*batch, N*k), ``vmem`` and
    ``spikes`` (*batch, N) of step ``t - 1`` and the input ``x`` (*batch, N*k) of step ``t`` give every
    quantity of step ``t``."""
    k = params.beta.shape[0] // params.alpha.shape[0]
    a = recurrent_input(x, spikes, params.w_rec)
    q = synapse_input(isyn, a)
    isyn = synapse_decay(q, params.beta)
    pre = membrane(vmem, isyn, params.alpha, params.bias, k)
    spikes = spike_counts(pre, params.threshold, params.max_spikes, params.surrogate)
    return LIFStepResult(q, isyn, pre, spikes, reset(pre, spikes, params.threshold))
