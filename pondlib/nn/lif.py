r"""Leaky integrate-and-fire neurons with synaptic currents: a pure step function and a thin module.

One step of ``dt`` seconds for ``N`` neurons with ``k`` synaptic currents each (the float model that the
device-aware twins in :mod:`pondlib.devices` follow in their chips' integer arithmetic), for input ``x``
of ``N * k`` channels (channel ``i`` drives synapse ``i % k`` of neuron ``i // k``) and the previous
step's spike counts ``s[t-1]``:

.. math::

    I_{syn}[t] &= \beta \odot \big(I_{syn}[t-1] + \mathrm{reshape}_{N,k}(x[t] + s[t-1] W_{rec})\big),
        \qquad \beta = e^{-dt/\tau_{syn}}  \\
    V[t] &= \alpha \odot V[t-1] + \textstyle\sum_k I_{syn}[t] + b,
        \qquad \alpha = e^{-dt/\tau_{mem}} \\
    s[t] &= \min(\lfloor V[t] / \theta \rfloor, s_{max}) \text{ where } V[t] \ge \theta \text{, else } 0 \\
    V[t] &\leftarrow V[t] - s[t]\,\theta \qquad \text{(reset by subtraction)}

Shapes: ``tau_mem``, ``threshold``, ``bias`` (N,); ``tau_syn`` (N, k); ``w_rec`` (N, N k), indexed
(pre neuron, post channel). Units: time constants and ``dt`` in seconds; currents, voltages and
thresholds in the same arbitrary unit. The spike non-linearity uses a surrogate gradient
(:mod:`pondlib.nn.surrogate`).

The arithmetic lives once, as pure functions on the flat ``(*batch, N*k)`` synapse layout
(:mod:`pondlib.nn.lif_core`, re-exported here): :func:`lif_step_flat` and its pieces
:func:`recurrent_input`, :func:`synapse_input`, :func:`synapse_decay`, :func:`membrane`,
:func:`spike_counts`, :func:`reset` (and the spike count's slopes, :func:`surrogate_slopes`).
:func:`lif_step`, the module's scan, the forward and backward loops of its adjoint
(:mod:`pondlib.nn.adjoint`) and the fused chain (:mod:`pondlib.nn.fused`) call them.

Example (one neuron, hand-computed): ``tau_mem = tau_syn = dt / ln 2`` gives ``alpha = beta = 1/2``:

    >>> import jax.numpy as jnp, math
    >>> lif = LIF(1, tau_mem=1e-3 / math.log(2), tau_syn=1e-3 / math.log(2), threshold=1.0)
    >>> out, state, rec = lif(jnp.array([[4.5], [0.0], [0.0]]), record=True)
    >>> [round(float(v), 4) for v in rec["isyn"][:, 0, 0]]   # 4.5/2, then halving
    [2.25, 1.125, 0.5625]
    >>> [round(float(v), 4) for v in rec["vmem"][:, 0]]      # 2.25 -> 2 spikes; 0.125 + 1.125 -> 1
    [0.25, 0.25, 0.6875]
    >>> out[:, 0].tolist()
    [2.0, 1.0, 0.0]
"""

from __future__ import annotations

from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from pondlib.errors import GraphError
from pondlib.graph import GraphHolder, LIFNeurons, LinearWeights, connect_modules
from pondlib.nn.adjoint import lif_scan
from pondlib.nn.base import (
    F32_TINY,
    as_param,
    check_batch_shape,
    check_parameter_count,
    check_positive,
    check_size,
    evolve_time_major,
)
from pondlib.nn.lif_core import (
    FlatLIFParameters,
    LIFStepResult,
    flatten_synapses,
    lif_step_flat,
    membrane,
    recurrent_input,
    reset,
    spike_counts,
    surrogate_slopes,
    synapse_decay,
    synapse_input,
    unflatten_synapses,
)
from pondlib.nn.surrogate import Surrogate
from pondlib.validate import F32_MAX, check_bool, check_float, check_int, check_type

__all__ = [
    "LIF",
    "LIFState",
    "LIFParameters",
    "lif_step",
    "flat_parameters",
    # the step's pure functions (pondlib.nn.lif_core)
    "FlatLIFParameters",
    "LIFStepResult",
    "lif_step_flat",
    "recurrent_input",
    "synapse_input",
    "synapse_decay",
    "membrane",
    "spike_counts",
    "reset",
    "surrogate_slopes",
]

#: Default spike cap of the float model (effectively uncapped; a chip's hidden neurons may cap at e.g. 31).
DEFAULT_MAX_SPIKES = float(2**16)
#: Largest spike cap: spike counts are exact in float32 up to 2^24.
MAX_SPIKES_LIMIT = 2**24


class LIFState(NamedTuple):
    """State of a LIF layer: ``isyn`` (*batch, N, k), ``vmem`` (*batch, N), ``spikes`` (*batch, N)
    (the previous step's spike counts, which drive the recurrent weights)."""

    isyn: jax.Array
    vmem: jax.Array
    spikes: jax.Array


class LIFParameters(NamedTuple):
    """Per-step parameters of :func:`lif_step` (decays already computed from ``tau`` and ``dt``)."""

    alpha: jax.Array  # (N,)   membrane decay per step, exp(-dt / tau_mem)
    beta: jax.Array  # (N, k) synaptic decay per step, exp(-dt / tau_syn)
    threshold: jax.Array  # (N,)
    bias: jax.Array  # (N,)   constant current added to vmem every step
    w_rec: jax.Array | None  # (N, N*k) or None
    max_spikes: float  # spike cap per step
    surrogate: Surrogate


def flat_parameters(params: LIFParameters) -> FlatLIFParameters:
    """``params`` with the synaptic decays flat, ``beta`` (N, k) -> (N*k,): the parameters of
    :func:`lif_step_flat`."""
    n, k = params.beta.shape
    return FlatLIFParameters(
        params.alpha,
        params.beta.reshape(n * k),
        params.threshold,
        params.bias,
        params.w_rec,
        params.max_spikes,
        params.surrogate,
    )


def lif_step(params: LIFParameters, state: LIFState, x: jax.Array) -> tuple[jax.Array, LIFState]:
    """One LIF step (equations in the module docstring): ``x`` (*batch, N*k) -> spikes (*batch, N) and
    the new state (``isyn`` (*batch, N, k), ``vmem`` and ``spikes`` (*batch, N)). It is
    :func:`lif_step_flat` on the state's synapses laid flat."""
    k = params.beta.shape[1]
    r = lif_step_flat(flat_parameters(params), flatten_synapses(state.isyn), state.vmem, state.spikes, x)
    return r.spikes, LIFState(unflatten_synapses(r.isyn, k), r.vmem, r.spikes)


def _per_neuron(value: Any, shape: tuple[int, ...], name: str, positive: bool = False) -> jax.Array:
    arr = as_param(value, name, "LIF")
    if positive:
        check_positive(arr, name, "LIF")
    if arr.ndim == 0:
        arr = jnp.full(shape, arr)
    elif len(shape) == 2 and tuple(arr.shape) == (shape[0],) and shape[1] == 1:
        arr = arr.reshape(shape)
    elif len(shape) == 2 and tuple(arr.shape) == (shape[1],) and shape[0] != shape[1]:
        arr = jnp.broadcast_to(arr, shape)  # one value per synapse, shared by every neuron
    if tuple(arr.shape) != shape:
        raise GraphError(
            f"LIF {name} shape",
            value=tuple(arr.shape),
            limit=f"a scalar or {shape}",
            where="LIF",
            fix=f"pass one {name} per neuron",
        )
    return jnp.asarray(arr, dtype=jnp.float32)


def _lif_shape(shape: Any) -> tuple[int, int]:
    """``(N_in, N)`` from ``N`` or ``(N_in, N)``; GraphError for anything else."""
    if isinstance(shape, np.ndarray) and shape.ndim > 1:
        dims: tuple = ()  # nested: refused below, never flattened
    elif isinstance(shape, (list, tuple)) or (isinstance(shape, np.ndarray) and shape.ndim == 1):
        dims = tuple(shape)
    else:
        dims = (shape,)
    if len(dims) not in (1, 2):
        raise GraphError(
            "LIF shape",
            value=shape,
            limit="N or (k * N, N) with positive ints",
            where="LIF",
            fix="pass N, or (N_in, N) with N_in a multiple of N",
        )
    dims = tuple(check_size(d, "LIF shape", "LIF") for d in dims)
    if len(dims) == 1:
        dims = (dims[0], dims[0])
    if dims[0] % dims[1] != 0:
        raise GraphError(
            "LIF shape",
            value=shape,
            limit="N or (k * N, N) with positive ints",
            where="LIF",
            fix="pass N, or (N_in, N) with N_in a multiple of N",
        )
    return dims


class LIF(eqx.Module):
    """A layer of LIF neurons (see the module docstring for the equations).

    Args:
        shape: ``N`` or ``(N_in, N)`` with ``N_in = k * N`` (k synaptic currents per neuron).
        tau_mem: membrane time constant(s) in seconds, scalar or (N,).
        tau_syn: synaptic time constant(s) in seconds, scalar, (N,), (k,) or (N, k).
        threshold: firing threshold(s), scalar or (N,).
        bias: constant input current(s), scalar or (N,).
        dt: time step in seconds.
        has_rec: add recurrent weights ``w_rec`` (N, N*k); random (needs ``key``) when ``w_rec`` is None.
        w_rec: recurrent weights (N, N*k) (implies ``has_rec``).
        max_spikes_per_dt: spike cap per neuron per step (a chip's counter width, e.g. 31 hidden, 1 output).
        surrogate: a :class:`Surrogate` (default fast sigmoid, scale 10).
        key: random key for the default ``w_rec``.

    Every array field is trainable (``jax.grad`` reaches weights, time constants, thresholds, biases).

    Raises:
        GraphError: naming the parameter, for a shape that is not ``N`` or ``(k N, N)`` with whole numbers
            in ``[1, 2^24]`` (``LIF(2.5)``, ``LIF([[2]])``; ``LIF(3.0)`` is accepted as 3); a random ``w_rec``
            of more than ``2^28`` elements; parameters that are not real, finite and
            within float32 or have the wrong shape (scalar, one per neuron, or for ``tau_syn`` one per
            synapse); ``tau_mem``, ``tau_syn``, ``threshold`` or ``dt`` that are not > 0 (at least the
            smallest normal float32: a threshold of 0 would make ``v / threshold`` NaN, a negative one
            spikes without input); a spike cap that is not a whole number in [1, 2^24]; a non-bool
            ``has_rec``, a non-:class:`Surrogate` ``surrogate``, or a missing or invalid ``key``.
    """

    tau_mem: jax.Array
    tau_syn: jax.Array
    threshold: jax.Array
    bias: jax.Array
    w_rec: jax.Array | None
    dt: float = eqx.field(static=True)
    max_spikes_per_dt: float = eqx.field(static=True)
    surrogate: Surrogate = eqx.field(static=True)
    n_neurons: int = eqx.field(static=True)
    n_synapses: int = eqx.field(static=True)

    def __init__(
        self,
        shape: int | tuple[int, int],
        *,
        tau_mem: Any = 0.02,
        tau_syn: Any = 0.02,
        threshold: Any = 1.0,
        bias: Any = 0.0,
        dt: float = 1e-3,
        has_rec: bool = False,
        w_rec: Any = None,
        max_spikes_per_dt: float = DEFAULT_MAX_SPIKES,
        surrogate: Surrogate | None = None,
        key: jax.Array | None = None,
    ) -> None:
        dims = _lif_shape(shape)
        n, k = dims[1], dims[0] // dims[1]
        self.n_neurons, self.n_synapses = n, k
        self.dt = check_float(
            dt, "dt", lo=F32_TINY, hi=F32_MAX, where="LIF", error=GraphError, fix="pass dt in seconds, e.g. 1e-3"
        )
        self.max_spikes_per_dt = float(
            check_int(
                max_spikes_per_dt,
                "max_spikes_per_dt",
                lo=1,
                hi=MAX_SPIKES_LIMIT,
                where="LIF",
                error=GraphError,
                fix="allow a whole number of spikes per step in [1, 2^24]",
            )
        )
        has_rec = check_bool(has_rec, "has_rec", where="LIF", error=GraphError)
        if surrogate is not None:
            check_type(surrogate, "surrogate", Surrogate, where="LIF", error=GraphError)
        self.surrogate = surrogate if surrogate is not None else Surrogate()
        self.tau_mem = _per_neuron(tau_mem, (n,), "tau_mem", positive=True)
        self.tau_syn = _per_neuron(tau_syn, (n, k), "tau_syn", positive=True)
        self.threshold = _per_neuron(threshold, (n,), "threshold", positive=True)
        self.bias = _per_neuron(bias, (n,), "bias")
        if w_rec is None and has_rec:
            if key is None:
                raise GraphError(
                    "a recurrent LIF needs w_rec or a random key",
                    where="LIF",
                    fix="pass w_rec=... or key=jax.random.PRNGKey(0)",
                )
            check_parameter_count((n, n * k), "w_rec", "LIF")
            try:
                w_rec = jax.random.normal(key, (n, n * k), jnp.float32) / np.sqrt(n)
            except (TypeError, ValueError):
                raise GraphError(
                    "key", value=f"a {type(key).__name__}", limit="a jax.random key", where="LIF"
                ) from None
        if w_rec is not None:
            w = as_param(w_rec, "w_rec", "LIF")
            if tuple(w.shape) != (n, n * k):
                raise GraphError(
                    "LIF w_rec shape",
                    value=tuple(w.shape),
                    limit=(n, n * k),
                    where="LIF",
                    fix="pass recurrent weights indexed (pre neuron, post channel)",
                )
            self.w_rec = jnp.asarray(w, dtype=jnp.float32)
        else:
            self.w_rec = None

    # -- sizes and state ------------------------------------------------------------------------
    @property
    def size_in(self) -> int:
        """Input channels ``N * k``."""
        return self.n_neurons * self.n_synapses

    @property
    def size_out(self) -> int:
        """Output channels ``N``."""
        return self.n_neurons

    @property
    def has_rec(self) -> bool:
        """True when the layer has recurrent weights."""
        return self.w_rec is not None

    def init_state(self, batch_shape: tuple[int, ...] = ()) -> LIFState:
        """Zero state for ``batch_shape`` samples."""
        batch_shape = check_batch_shape(batch_shape, "LIF")
        n, k = self.n_neurons, self.n_synapses
        z = jnp.zeros
        return LIFState(
            z(batch_shape + (n, k), jnp.float32), z(batch_shape + (n,), jnp.float32), z(batch_shape + (n,), jnp.float32)
        )

    def parameters(self) -> LIFParameters:
        """Per-step parameters: decays ``exp(-dt / tau)`` and the rest as stored.

        Training can push a time constant to zero or below; such a neuron decays completely in one
        step (decay 0, zero gradient) instead of producing NaN. The constructor refuses tau <= 0.
        """
        floor = self.dt * 1e-6
        return LIFParameters(
            jnp.exp(-self.dt / jnp.maximum(self.tau_mem, floor)),
            jnp.exp(-self.dt / jnp.maximum(self.tau_syn, floor)),
            self.threshold,
            self.bias,
            self.w_rec,
            self.max_spikes_per_dt,
            self.surrogate,
        )

    # -- evolution ------------------------------------------------------------------------------
    def evolve_tm(self, x: jax.Array, state: LIFState, record: bool):
        """Time-major evolution ``x`` (T, *batch, N*k) -> spikes (T, *batch, N)."""
        p = self.parameters()
        spikes, vmem, isyn, state = lif_scan(
            p.max_spikes, p.surrogate, p.alpha, p.beta, p.threshold, p.bias, p.w_rec, x, LIFState(*state)
        )
        if record:
            return spikes, state, {"vmem": vmem, "isyn": isyn, "spikes": spikes}
        return spikes, state, {}

    def __call__(self, x: Any, state: LIFState | None = None, record: bool = False):
        """``(spikes, state, record)`` for input (T, N*k) or (B, T, N*k).

        ``record`` keys: ``vmem`` (.., T, N) after reset, ``isyn`` (.., T, N, k), ``spikes`` (.., T, N).
        """
        return evolve_time_major(self, x, state, record)

    evolve = __call__

    # -- graph ----------------------------------------------------------------------------------
    def as_graph(self, name: str | None = None):
        """:class:`~pondlib.graph.LIFNeurons`, wrapped with a recurrent
        :class:`~pondlib.graph.LinearWeights` (outputs back to inputs) when the layer is recurrent."""
        name = name or "LIF"
        neurons = LIFNeurons._factory(
            self.size_in,
            self.size_out,
            name,
            self,
            tau_mem=np.array(self.tau_mem, dtype=float),
            tau_syn=np.array(self.tau_syn, dtype=float),
            threshold=np.array(self.threshold, dtype=float),
            bias=np.array(self.bias, dtype=float),
            dt=self.dt,
            max_spikes_per_dt=self.max_spikes_per_dt,
        )
        if self.w_rec is None:
            return neurons
        rec = LinearWeights._factory(
            self.size_out, self.size_in, f"{name}/w_rec", self, weights=np.array(self.w_rec, dtype=float)
        )
        connect_modules(neurons, rec)
        connect_modules(rec, neurons)
        return GraphHolder(list(neurons.input_nodes), list(neurons.output_nodes), name, self)
