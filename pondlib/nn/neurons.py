r"""NIR-style neurons: continuous-time equations, one explicit discrete update per step of ``dt``.

NIR (https://neuroir.org) states each neuron as an ODE; these modules make the discretization
explicit. With ``dt`` the step in seconds, every time constant ``tau`` gives a per-step decay

.. math::

    a(\tau) = 1 - dt/\tau \quad (\texttt{decay="euler"}, \text{forward Euler, the default})
    \qquad a(\tau) = e^{-dt/\tau} \quad (\texttt{decay="exp"})

and the input always enters with the forward-Euler gain ``dt/tau * r`` (so an exporter that hid ``dt``
in ``r = tau/dt`` -- snnTorch, Lava -- gets exactly its own ``v = beta v + I``). Per step, for input
``x[t]`` (shape (*batch, N)):

=============  ================================================================================
class          discrete update (state after the step; ``z`` the output)
=============  ================================================================================
CubaLIF        ``I = a(tau_syn) I + dt/tau_syn w_in x``;
               ``v = a(tau_mem) v + dt/tau_mem (r I) + l(tau_mem) v_leak``; ``z = H(v - v_thr)``;
               reset
CubaLI         as CubaLIF without threshold; ``z = v``
NIRLIF         ``v = a(tau) v + dt/tau r x + l(tau) v_leak``; ``z = H(v - v_thr)``; reset
LI             as NIRLIF without threshold; ``z = v``
IF             ``v = v + r x``; ``z = H(v - v_thr)``; reset
Integrator     ``v = v + r x``; ``z = v`` (NIR ``I``)
Threshold      stateless ``z = H(x - threshold)``
=============  ================================================================================

where ``l(tau) = dt/tau`` (euler) or ``1 - e^{-dt/tau}`` (exp), so the resting potential is
``v_leak`` either way, and the new current ``I[t]`` (not ``I[t-1]``) drives ``v[t]`` (snnTorch's
``Synaptic``). ``H`` is the Heaviside step, *strict* as in NIR (``v > v_thr`` spikes; one spike per
step at most) with a surrogate gradient (:mod:`pondlib.nn.surrogate`, centred on the threshold, in
voltage units). After a spike the membrane is reset:

* ``reset="v_reset"``: ``v = v_reset`` (NIR >= 1.0.6; the default);
* ``reset="zero"``: ``v = 0``;
* ``reset="subtract"``: ``v = v - v_thr`` (NIR <= 1.0.5, snnTorch ``reset_mechanism="subtract"``).

A file cannot say which reset the network was trained with: the importer takes it from the user.

``IF`` and ``Integrator`` have no time constant that could absorb ``dt``: each step's input is read
as an impulse of area ``x`` (``v += r x``), which is what Sinabs (the IF exporter) simulates.

Every parameter is stored flat, one value per neuron, shape (N,) with ``N = prod(shape)``; ``shape``
(static) is the NIR shape, e.g. ``(16, 16, 16)`` for neurons after a convolution. Units: times in
seconds, voltages and currents in the file's (arbitrary) unit.

**A time constant equal to the step** (``decay="euler"``). Forward Euler needs ``tau >= dt``
(``a(tau) < 0`` would flip the sign of the state every step). ``tau = dt`` is legitimate and common:
Lava and snnTorch files with ``tau_syn = dt`` mean a synaptic current that is the step's input alone.
NIR stores float32, so such a file holds ``tau_syn = 9.9999997e-05`` for ``dt = 1e-4``; a time constant
within the relative tolerance :data:`TAU_DT_RTOL` of ``dt`` therefore *is* ``dt``:

.. math::

    |\tau - dt| \le 10^{-5}\, dt \;\Rightarrow\; \frac{dt}{\tau} := 1,\quad a(\tau) = 1 - 1 = 0
    \quad\text{exactly},

so for ``tau_syn = dt`` the update is ``I[t] = w_in x[t]`` (no trace of ``I[t-1]``, not a tiny positive
or negative decay), and for ``tau_mem = dt`` it is ``v[t] = r I[t] + v_leak``. Only a ``tau`` below
``dt (1 - 1e-5)`` is refused. ``decay="exp"`` (``a = e^{-dt/tau}``) is stable for any ``tau > 0`` and is
computed as written.

Checks (:class:`~pondlib.errors.GraphError` naming the parameter): ``shape`` is whole numbers >= 1; every
parameter is a scalar or N real, finite values within float32 (any array of N values is read in C order,
so a parameter may keep the layer's NIR shape); ``tau``, ``tau_mem``, ``tau_syn`` and ``dt`` are > 0 (at
least the smallest normal float32), and with ``decay="euler"`` every ``tau >= dt (1 - 1e-5)`` (above);
the per-step coefficients must be finite in float32. Tolerated, because NIR allows it and nothing divides by it: a
threshold (``v_threshold``, :class:`Threshold`'s ``threshold``) of any finite sign, zero included, and a
negative ``r`` or ``w_in``.

Example (the NIR paper's Norse LIF, one step by hand: ``v = 0.96 * 0 + 0.04 * 1 = 0.04``):

    >>> import jax.numpy as jnp
    >>> lif = NIRLIF(1, tau=2.5e-3, r=1.0, v_leak=0.0, v_threshold=0.1, dt=1e-4)
    >>> z, state, rec = lif(jnp.array([[1.0], [1.0], [1.0]]), record=True)
    >>> [round(float(v), 6) for v in rec["vmem"][:, 0]]
    [0.04, 0.0784, 0.115264]
    >>> [round(float(v), 6) for v in z[:, 0]]    # 0.115264 > 0.1: a spike at step 2
    [0.0, 0.0, 1.0]

The recorded ``vmem`` is the voltage *before* reset; ``vmem_reset`` holds it after reset (what the
Norse trace records):

    >>> float(rec["vmem_reset"][2, 0])
    0.0
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from pondlib.errors import GraphError
from pondlib.graph import LIFNeurons, NIRNeuronGroup
from pondlib.nn.base import (
    F32_TINY,
    as_param,
    check_batch_shape,
    check_positive,
    check_size,
    evolve_time_major,
    is_traced,
    scan_steps,
)
from pondlib.nn.surrogate import Surrogate
from pondlib.validate import F32_MAX, check_choice, check_float, check_type

__all__ = [
    "CubaLIF",
    "CubaLI",
    "NIRLIF",
    "LI",
    "IF",
    "Integrator",
    "Threshold",
    "NeuronState",
    "NeuronParameters",
    "neuron_step",
    "heaviside",
    "RESETS",
    "DECAYS",
    "TAU_DT_RTOL",
    "NIRNeuronGroup",
]

#: Reset modes after a spike.
RESETS = ("v_reset", "zero", "subtract")
#: Discretizations of the leak.
DECAYS = ("euler", "exp")
#: Relative tolerance within which a time constant counts as equal to ``dt`` under forward Euler
#: (float32 storage: ``float32(1e-4) = 9.9999997e-05``); see "A time constant equal to the step" above.
TAU_DT_RTOL = 1e-5


@partial(jax.custom_jvp, nondiff_argnums=(2,))
def heaviside(v: jax.Array, threshold: jax.Array, surrogate: Surrogate) -> jax.Array:
    """``1.0 where v > threshold else 0.0`` (strict, as NIR); surrogate derivative centred on the
    threshold: ``g(v - threshold)`` with ``g`` the surrogate's sub-threshold bump."""
    return (v > threshold).astype(v.dtype)


@heaviside.defjvp
def _heaviside_jvp(surrogate, primals, tangents):
    v, threshold = primals
    dv, dthreshold = tangents
    out = heaviside(v, threshold, surrogate)
    # derivative(u) with u = 1 - |d| < 1 is the symmetric bump 1 / (1 + scale |d|)^2 (fast sigmoid),
    # and 1 at d = 0 (u = 1 is the "above" branch, slope 1 below the cap)
    g = surrogate.derivative(1.0 - jnp.abs(v - threshold), math.inf)
    return out, (g * (dv - dthreshold)).astype(out.dtype)


class NeuronState(NamedTuple):
    """State of a NIR-style neuron layer: ``isyn`` (*batch, N) (zeros without a synapse) and
    ``vmem`` (*batch, N)."""

    isyn: jax.Array
    vmem: jax.Array


class NeuronParameters(NamedTuple):
    """Per-step coefficients of :func:`neuron_step` (computed from taus and ``dt``), all (N,)."""

    a_syn: jax.Array | None  # synaptic decay per step (None: no synapse)
    g_syn: jax.Array | None  # input gain into I: dt/tau_syn * w_in
    a_mem: jax.Array  # membrane decay per step (1 for IF / Integrator)
    g_mem: jax.Array  # gain of I (or x) into v: dt/tau_mem * r (r for IF / Integrator)
    c_mem: jax.Array  # constant per step from v_leak
    threshold: jax.Array | None  # None: no spikes, the output is v
    v_reset: jax.Array
    reset: str
    surrogate: Surrogate


def neuron_step(p: NeuronParameters, state: NeuronState, x: jax.Array) -> tuple[jax.Array, NeuronState, jax.Array]:
    """One step (equations in the module docstring): ``x`` (*batch, N) -> ``(z, state, v_before_reset)``."""
    if p.a_syn is not None:
        isyn = p.a_syn * state.isyn + p.g_syn * x
        drive = isyn
    else:
        isyn, drive = state.isyn, x
    v = p.a_mem * state.vmem + p.g_mem * drive + p.c_mem
    if p.threshold is None:
        return v, NeuronState(isyn, v), v
    z = heaviside(v, p.threshold, p.surrogate)
    if p.reset == "subtract":
        v_new = v - z * p.threshold
    elif p.reset == "zero":
        v_new = v * (1.0 - z)
    else:  # z is exactly 0 or 1, so this is v or v_reset, and keeps a gradient path through v
        v_new = v * (1.0 - z) + z * p.v_reset
    return z, NeuronState(isyn, v_new), v


def _flat(value: Any, n: int, name: str, where: str, positive: bool = False) -> jax.Array:
    """One value per neuron, (N,): a scalar, or any array of N values (read in C order, so that a
    parameter may keep the NIR shape of the layer)."""
    arr = as_param(value, name, where)
    if positive:
        check_positive(arr, name, where)
    if arr.size == 1:
        arr = jnp.full((n,), arr.reshape(-1)[0]) if is_traced(arr) else np.full(n, float(arr.reshape(-1)[0]))
    arr = arr.reshape(-1)
    if tuple(arr.shape) != (n,):
        raise GraphError(
            f"{name} shape",
            value=tuple(np.shape(value)),
            limit=f"a scalar or {n} values",
            where=where,
            fix=f"pass one {name} per neuron",
        )
    return jnp.asarray(arr, dtype=jnp.float32)


def _shape(shape: Any, where: str) -> tuple[int, ...]:
    """``N`` or a flat NIR shape of positive whole numbers as a tuple (nested sequences are refused, never
    flattened; every dimension and the neuron count ``prod(shape)`` are at most
    :data:`~pondlib.nn.base.MAX_SIZE`)."""
    bad = GraphError(
        "neuron shape",
        value=shape,
        limit="N or a flat tuple of positive ints",
        where=where,
        fix="pass the number of neurons, e.g. 38, or a shape like (16, 16, 16)",
    )
    if isinstance(shape, np.ndarray):
        if shape.ndim > 1:
            raise bad
        items = list(shape.reshape(-1)) if shape.ndim == 1 else [shape]
    elif isinstance(shape, (list, tuple)):
        items = list(shape)
    else:
        items = [shape]
    if not items or any(isinstance(d, (list, tuple, np.ndarray)) and np.ndim(d) > 0 for d in items):
        raise bad
    dims = tuple(check_size(d, "neuron shape", where) for d in items)
    check_size(math.prod(dims), "neuron count prod(shape)", where)
    return dims


def _surrogate(surrogate: Any, where: str) -> Surrogate:
    if surrogate is None:
        return Surrogate()
    return check_type(surrogate, "surrogate", Surrogate, where=where, error=GraphError)


class _NIRNeuron(eqx.Module):
    """Shared implementation of the NIR-style neurons (see the module docstring)."""

    tau_mem: jax.Array | None
    tau_syn: jax.Array | None
    r: jax.Array
    v_leak: jax.Array | None
    w_in: jax.Array | None
    v_threshold: jax.Array | None
    v_reset: jax.Array | None
    shape: tuple = eqx.field(static=True)
    dt: float = eqx.field(static=True)
    decay: str = eqx.field(static=True)
    reset: str = eqx.field(static=True)
    surrogate: Surrogate = eqx.field(static=True)

    def _setup(
        self,
        shape,
        *,
        dt,
        decay,
        reset,
        surrogate,
        tau_mem=None,
        tau_syn=None,
        r=1.0,
        v_leak=None,
        w_in=None,
        v_threshold=None,
        v_reset=None,
        tau_mem_name="tau_mem",
        required=(),
    ) -> None:
        where = type(self).__name__
        given = {"tau_mem": tau_mem, "tau_syn": tau_syn, "v_leak": v_leak, "w_in": w_in, "v_threshold": v_threshold}
        for name in required:  # None would silently drop the term (a CubaLIF without synapse, a LIF without spikes)
            if given["tau_mem" if name == "tau" else name] is None:
                raise GraphError(name, value=None, limit="a number or an array", where=where, fix=f"pass {name}")
        self.shape = _shape(shape, where)
        n = int(np.prod(self.shape))
        dt = check_float(
            dt, "dt", lo=F32_TINY, hi=F32_MAX, where=where, error=GraphError, fix="pass dt in seconds, e.g. 1e-4"
        )
        check_choice(
            decay, "decay", DECAYS, where=where, error=GraphError, fix="pass decay='euler' (forward Euler) or 'exp'"
        )
        check_choice(
            reset, "reset", RESETS, where=where, error=GraphError, fix="pass reset='v_reset', 'zero' or 'subtract'"
        )
        self.dt, self.decay, self.reset = dt, decay, reset
        self.surrogate = _surrogate(surrogate, where)
        opt = lambda v, name, pos=False: None if v is None else _flat(v, n, name, where, pos)
        self.tau_mem = opt(tau_mem, tau_mem_name, True)
        self.tau_syn = opt(tau_syn, "tau_syn", True)
        self.r = _flat(r, n, "r", where)
        self.v_leak = opt(v_leak, "v_leak")
        self.w_in = opt(w_in, "w_in")
        self.v_threshold = opt(v_threshold, "v_threshold")
        if self.v_threshold is not None:
            self.v_reset = _flat(0.0 if v_reset is None else v_reset, n, "v_reset", where)
        else:
            self.v_reset = None
        if self.decay == "euler":
            for name in ("tau_mem", "tau_syn"):
                tau = getattr(self, name)
                if tau is not None and not is_traced(tau) and float(jnp.min(tau)) < self.dt * (1.0 - TAU_DT_RTOL):
                    raise GraphError(
                        f"{tau_mem_name if name == 'tau_mem' else name} shorter than dt",
                        value=float(jnp.min(tau)),
                        limit=f">= dt = {self.dt} (within a relative {TAU_DT_RTOL:g})",
                        where=where,
                        fix="forward Euler is unstable for tau < dt: pass a smaller dt "
                        "(the exporter's), or decay='exp'",
                    )
        self._check_coefficients(where)

    def _check_coefficients(self, where: str) -> None:
        """The per-step coefficients (``dt/tau * r`` ...) must be finite in float32: extreme but finite
        parameters (``decay="exp"`` with ``tau`` far below ``dt`` and a large ``r``) could overflow."""
        leaves = jax.tree_util.tree_leaves_with_path(self.parameters())
        for path, leaf in leaves:
            if is_traced(leaf):
                continue
            a = np.asarray(leaf)
            if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
                raise GraphError(
                    f"per-step coefficient {jax.tree_util.keystr(path)} overflows float32",
                    value=f"{a[~np.isfinite(a)][0]}",
                    limit="finite values",
                    where=where,
                    fix="the parameters are too far apart (dt/tau or r, w_in too large): rescale them",
                )

    # -- sizes and state ------------------------------------------------------------------------
    @property
    def size_in(self) -> int:
        """Input channels ``N = prod(shape)``."""
        return int(np.prod(self.shape))

    @property
    def size_out(self) -> int:
        """Output channels ``N``."""
        return self.size_in

    def init_state(self, batch_shape: tuple[int, ...] = ()) -> NeuronState:
        """Zero current and membrane for ``batch_shape`` samples."""
        batch_shape = check_batch_shape(batch_shape, type(self).__name__)
        z = jnp.zeros(batch_shape + (self.size_in,), jnp.float32)
        return NeuronState(z, z)

    def _ratio(self, tau: jax.Array) -> jax.Array:
        """``dt / tau``; under ``decay="euler"`` exactly 1 where ``|tau - dt| <= TAU_DT_RTOL * dt``."""
        if self.decay == "euler":
            return jnp.where(jnp.abs(tau - self.dt) <= TAU_DT_RTOL * self.dt, 1.0, self.dt / tau)
        return self.dt / tau

    def _decay(self, tau: jax.Array) -> tuple[jax.Array, jax.Array]:
        r"""(per-step decay, leak gain) for ``tau``.

        Euler: ``a = 1 - dt/tau``, ``l = dt/tau``, where ``dt/tau`` is exactly 1 for
        ``|tau - dt| <= 1e-5 dt`` (so ``a = 0`` exactly: the state is the step's drive alone); exp:
        ``a = e^{-dt/tau}``, ``l = 1 - a``.
        """
        if self.decay == "euler":
            ratio = self._ratio(tau)
            return 1.0 - ratio, ratio
        a = jnp.exp(-self.dt / tau)
        return a, 1.0 - a

    def parameters(self) -> NeuronParameters:
        """The per-step coefficients of :func:`neuron_step`."""
        one = jnp.ones(self.size_in, jnp.float32)
        a_syn = g_syn = None
        if self.tau_syn is not None:
            a_syn, _ = self._decay(self.tau_syn)
            g_syn = self._ratio(self.tau_syn) * self.w_in
        if self.tau_mem is not None:
            a_mem, leak = self._decay(self.tau_mem)
            g_mem = self._ratio(self.tau_mem) * self.r
            c_mem = leak * self.v_leak
        else:
            a_mem, g_mem, c_mem = one, self.r, 0.0 * one
        return NeuronParameters(
            a_syn,
            g_syn,
            a_mem,
            g_mem,
            c_mem,
            self.v_threshold,
            self.v_reset if self.v_reset is not None else 0.0 * one,
            self.reset,
            self.surrogate,
        )

    # -- evolution ------------------------------------------------------------------------------
    def evolve_tm(self, x: jax.Array, state: NeuronState, record: bool):
        """Time-major evolution ``x`` (T, *batch, N) -> ``z`` (T, *batch, N)."""
        p = self.parameters()

        def step(s, xt):
            z, s, v = neuron_step(p, s, xt)
            return s, (z, v, s.vmem, s.isyn)

        state, (z, v, v_after, isyn) = scan_steps(step, NeuronState(*state), x)
        if not record:
            return z, state, {}
        rec = {"vmem": v, "vmem_reset": v_after}
        if self.tau_syn is not None:
            rec["isyn"] = isyn
        if self.v_threshold is not None:
            rec["spikes"] = z
        return z, state, rec

    def __call__(self, x: Any, state: NeuronState | None = None, record: bool = False):
        """``(output, state, record)`` for input (T, N) or (B, T, N).

        ``record`` keys: ``vmem`` (before reset), ``vmem_reset`` (after reset), ``isyn`` (with a
        synapse), ``spikes`` (with a threshold); each (.., T, N).
        """
        return evolve_time_major(self, x, state, record)

    evolve = __call__

    # -- graph ----------------------------------------------------------------------------------
    def as_graph(self, name: str | None = None):
        """An exact :class:`~pondlib.graph.LIFNeurons` where one exists (see :meth:`CubaLIF.as_graph`),
        else a :class:`NIRNeuronGroup` holding the NIR parameters (the Xylo mapper reports it as
        one ``neuron_model`` violation with the remedy)."""
        name = f"{name or type(self).__name__} ({self._no_lif_reason()})"
        return NIRNeuronGroup._factory(
            self.size_in,
            self.size_out,
            name,
            self,
            kind=type(self).__name__,
            reset=self.reset,
            dt=self.dt,
            reason=self._no_lif_reason(),
        )

    def _no_lif_reason(self) -> str:
        return f"{type(self).__name__} has no pondlib LIFNeurons equivalent (needs a synaptic current and a threshold)"


class CubaLIF(_NIRNeuron):
    """Current-based LIF (NIR ``CubaLIF``); see the module docstring for the discrete update.

    Args:
        shape: N or the NIR shape of the layer.
        tau_syn, tau_mem: time constants in seconds, scalar or one per neuron.
        r: resistance; w_in: input weight; v_leak, v_threshold, v_reset: voltages.
        dt: step in seconds. decay: ``"euler"`` or ``"exp"``. reset: ``"v_reset"``, ``"zero"``,
        ``"subtract"``. surrogate: surrogate gradient of the spike.

    Example (snnTorch's convention ``r = tau_mem/dt``, ``w_in = tau_syn/dt`` gives ``I = 0.5 I + x``,
    ``v = 0.9 v + I``):

        >>> import jax.numpy as jnp
        >>> n = CubaLIF(1, tau_syn=2e-4, tau_mem=1e-3, r=10.0, w_in=2.0, v_threshold=1.0, dt=1e-4)
        >>> z, _, rec = n(jnp.array([[0.6], [0.0], [0.0]]), record=True)
        >>> [round(float(v), 4) for v in rec["isyn"][:, 0]], [round(float(v), 4) for v in rec["vmem"][:, 0]]
        ([0.6, 0.3, 0.15], [0.6, 0.84, 0.906])
    """

    def __init__(
        self,
        shape: Any,
        *,
        tau_syn: Any,
        tau_mem: Any,
        r: Any = 1.0,
        v_leak: Any = 0.0,
        w_in: Any = 1.0,
        v_threshold: Any = 1.0,
        v_reset: Any = 0.0,
        dt: float = 1e-3,
        decay: str = "euler",
        reset: str = "v_reset",
        surrogate: Surrogate | None = None,
    ):
        self._setup(
            shape,
            dt=dt,
            decay=decay,
            reset=reset,
            surrogate=surrogate,
            tau_mem=tau_mem,
            tau_syn=tau_syn,
            r=r,
            v_leak=v_leak,
            w_in=w_in,
            v_threshold=v_threshold,
            v_reset=v_reset,
            required=("tau_syn", "tau_mem", "v_leak", "w_in", "v_threshold"),
        )

    def lif_equivalent(self) -> dict | None:
        r"""Parameters of an exactly equivalent pondlib :class:`~pondlib.nn.LIF` (reset by
        subtraction), or None when there is none.

        With per-step decays ``a = a(tau_syn)``, ``b = a(tau_mem)`` and gains ``g_s = dt/tau_syn w_in``,
        ``g_m = dt/tau_mem r``, the pondlib LIF with ``exp(-dt/tau_syn') = a``, ``exp(-dt/tau_mem') = b``
        and the membrane scaled by ``G = g_m g_s / a``

        .. math::  \theta' = v_{thr} / G, \qquad b' = l(\tau_{mem}) v_{leak} / G

        emits the same spikes (``I' = (a / g_s) I``, ``v' = v / G``), except at ``v == v_thr`` exactly
        (pondlib spikes at ``>=``, NIR at ``>``). It needs ``reset="subtract"`` with ``v_reset = 0``,
        ``v_thr > 0`` (a pondlib threshold is positive), ``0 < a, b < 1`` and ``G > 0``;
        ``max_spikes_per_dt = 1`` keeps the spikes binary.
        """
        if self.reset != "subtract" or bool(jnp.any(self.v_reset != 0)) or not bool(jnp.all(self.v_threshold > 0)):
            return None
        p = self.parameters()
        a, b = np.asarray(p.a_syn, float), np.asarray(p.a_mem, float)
        gain = np.asarray(p.g_mem, float) * np.asarray(p.g_syn, float) / np.where(a > 0, a, 1.0)
        if not (np.all((a > 0) & (a < 1)) and np.all((b > 0) & (b < 1)) and np.all(gain > 0)):
            return None
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            eq = dict(
                tau_mem=-self.dt / np.log(b),
                tau_syn=-self.dt / np.log(a),
                threshold=np.asarray(self.v_threshold, float) / gain,
                bias=np.asarray(p.c_mem, float) / gain,
            )
        if not all(np.all(np.isfinite(v)) for v in eq.values()) or not np.all(eq["threshold"] > 0):
            return None  # the rescaled parameters leave float range: no exact equivalent
        return dict(eq, dt=self.dt, max_spikes_per_dt=1.0)

    def as_graph(self, name: str | None = None):
        """:class:`~pondlib.graph.LIFNeurons` with the parameters of :meth:`lif_equivalent` (exact
        spikes) when it exists; otherwise a :class:`NIRNeuronGroup` (reset to zero / to ``v_reset``,
        or decays outside (0, 1)), which the Xylo mapper reports as one ``neuron_model`` violation."""
        eq = self.lif_equivalent()
        name = name or "CubaLIF"
        if eq is None:
            return super().as_graph(name)
        return LIFNeurons._factory(self.size_in, self.size_out, name, self, **eq)

    def _no_lif_reason(self) -> str:
        if self.reset != "subtract":
            return (
                f"reset={self.reset!r}: pondlib LIF (and the chips' integer LIFs) reset by subtraction; import with "
                f"reset='subtract' if the network was trained that way"
            )
        if not bool(jnp.all(self.v_threshold > 0)):
            return "v_threshold <= 0: a pondlib LIF threshold is positive"
        return "decay or gain outside the range of an exponential LIF"


class CubaLI(_NIRNeuron):
    """Current-based leaky integrator (NIR ``CubaLI``): CubaLIF without threshold; output ``v``."""

    def __init__(
        self,
        shape: Any,
        *,
        tau_syn: Any,
        tau_mem: Any,
        r: Any = 1.0,
        v_leak: Any = 0.0,
        w_in: Any = 1.0,
        dt: float = 1e-3,
        decay: str = "euler",
        surrogate: Surrogate | None = None,
    ):
        self._setup(
            shape,
            dt=dt,
            decay=decay,
            reset="v_reset",
            surrogate=surrogate,
            tau_mem=tau_mem,
            tau_syn=tau_syn,
            r=r,
            v_leak=v_leak,
            w_in=w_in,
            required=("tau_syn", "tau_mem", "v_leak", "w_in"),
        )


class NIRLIF(_NIRNeuron):
    """Leaky integrate-and-fire without synaptic current (NIR ``LIF``), parameter ``tau``.

    (Named ``NIRLIF`` because :class:`pondlib.nn.LIF` is pondlib's current-based LIF.)
    """

    def __init__(
        self,
        shape: Any,
        *,
        tau: Any,
        r: Any = 1.0,
        v_leak: Any = 0.0,
        v_threshold: Any = 1.0,
        v_reset: Any = 0.0,
        dt: float = 1e-3,
        decay: str = "euler",
        reset: str = "v_reset",
        surrogate: Surrogate | None = None,
    ):
        self._setup(
            shape,
            dt=dt,
            decay=decay,
            reset=reset,
            surrogate=surrogate,
            tau_mem=tau,
            r=r,
            v_leak=v_leak,
            v_threshold=v_threshold,
            v_reset=v_reset,
            tau_mem_name="tau",
            required=("tau", "v_leak", "v_threshold"),
        )

    @property
    def tau(self) -> jax.Array:
        """The membrane time constant (NIR ``tau``)."""
        return self.tau_mem


class LI(_NIRNeuron):
    """Leaky integrator (NIR ``LI``), output ``v``: a typical readout layer."""

    def __init__(
        self,
        shape: Any,
        *,
        tau: Any,
        r: Any = 1.0,
        v_leak: Any = 0.0,
        dt: float = 1e-3,
        decay: str = "euler",
        surrogate: Surrogate | None = None,
    ):
        self._setup(
            shape,
            dt=dt,
            decay=decay,
            reset="v_reset",
            surrogate=surrogate,
            tau_mem=tau,
            r=r,
            v_leak=v_leak,
            tau_mem_name="tau",
            required=("tau", "v_leak"),
        )

    @property
    def tau(self) -> jax.Array:
        """The time constant (NIR ``tau``)."""
        return self.tau_mem


class IF(_NIRNeuron):
    """Integrate-and-fire (NIR ``IF``): ``v += r x``, spike when ``v > v_threshold``, reset.

    Example:
        >>> import jax.numpy as jnp
        >>> z, _, _ = IF(1, r=1.0, v_threshold=1.0, reset="subtract")(jnp.full((4, 1), 0.6))
        >>> z[:, 0].tolist()
        [0.0, 1.0, 0.0, 1.0]
    """

    def __init__(
        self,
        shape: Any,
        *,
        r: Any = 1.0,
        v_threshold: Any = 1.0,
        v_reset: Any = 0.0,
        dt: float = 1e-3,
        reset: str = "v_reset",
        surrogate: Surrogate | None = None,
    ):
        self._setup(
            shape,
            dt=dt,
            decay="euler",
            reset=reset,
            surrogate=surrogate,
            r=r,
            v_threshold=v_threshold,
            v_reset=v_reset,
            required=("v_threshold",),
        )


class Integrator(_NIRNeuron):
    """Integrator (NIR ``I``): ``v += r x``; output ``v``."""

    def __init__(self, shape: Any, *, r: Any = 1.0, dt: float = 1e-3, surrogate: Surrogate | None = None):
        self._setup(shape, dt=dt, decay="euler", reset="v_reset", surrogate=surrogate, r=r)


class Threshold(eqx.Module):
    """Stateless threshold (NIR ``Threshold``): ``z = 1 if x > threshold else 0`` per step, with a
    surrogate gradient.

    Example:
        >>> import jax.numpy as jnp
        >>> Threshold(2, threshold=[0.5, 1.0])(jnp.array([[0.7, 0.7]]))[0].tolist()
        [[1.0, 0.0]]
    """

    threshold: jax.Array
    shape: tuple = eqx.field(static=True)
    surrogate: Surrogate = eqx.field(static=True)

    def __init__(self, shape: Any, *, threshold: Any = 1.0, surrogate: Surrogate | None = None):
        self.shape = _shape(shape, "Threshold")
        self.threshold = _flat(threshold, int(np.prod(self.shape)), "threshold", "Threshold")
        self.surrogate = _surrogate(surrogate, "Threshold")

    @property
    def size_in(self) -> int:
        """Channels (in = out)."""
        return int(np.prod(self.shape))

    size_out = size_in

    def init_state(self, batch_shape: tuple[int, ...] = ()) -> None:
        """Stateless."""
        return None

    def evolve_tm(self, x: jax.Array, state: None, record: bool):
        """All steps at once: (T, *batch, N) -> (T, *batch, N)."""
        return heaviside(x, self.threshold, self.surrogate), None, {}

    def __call__(self, x: Any, state: None = None, record: bool = False):
        """``(output, None, {})`` for (T, N) or (B, T, N)."""
        return evolve_time_major(self, x, state, record)

    evolve = __call__

    def as_graph(self, name: str | None = None):
        """A :class:`NIRNeuronGroup` (no pondlib graph equivalent)."""
        name = name or "Threshold"
        return NIRNeuronGroup._factory(
            self.size_in,
            self.size_out,
            name,
            self,
            kind="Threshold",
            reset="none",
            dt=float("nan"),
            reason="a stateless threshold has no LIFNeurons equivalent",
        )
