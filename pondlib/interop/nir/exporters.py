r"""Exporter conventions: run a NIR file as the framework that wrote it ran it.

NIR stores the continuous-time equations; each framework that exports them simulates its own discrete
model, and a file does not say which. :func:`~pondlib.interop.nir.load_nir` with
``convention="<framework>"`` applies that framework's discrete rules on top of the dt convention of
:mod:`pondlib.interop.nir` (how the framework hid ``dt`` in the parameters):

===========  ==============  ===================================================================
exporter     dt convention   discrete rules pondlib applies (documented source)
===========  ==============  ===================================================================
snntorch     ``dt_scaled``   Euler ``v = beta v + I``; the reset uses snnTorch's rule (below:
                             ``reset="subtract"`` or ``"zero"``), strict ``v > theta``
                             (snnTorch ``Synaptic``/``Leaky`` with ``reset_delay=False``)
lava         ``dt_scaled``   Euler; one step of synaptic delay on every feed-forward weight
                             (Lava's ``Dense`` delivers spikes at the next step); reset to 0;
                             ``numerics="int"``: Lava's fixed-point CUBA (below)
norse        ``unit``        Euler ``v += dt/tau (v_leak - v + r I)``, reset to ``v_reset``
                             (Norse ``LIFBoxCell``; reproduces the NIR paper's ``lif_norse.csv``)
rockpool     ``rockpool``    exact exponential decay ``v = e^{-dt/tau} v + ...``, reset by
                             subtraction (Rockpool ``LIFJax``)
sinabs       ``unit``        ``IF``: ``v += r x`` per step, reset by subtraction
                             (Sinabs ``IAFSqueeze`` with ``MembraneSubtract``)
spyx         ``unknown``     Euler with the given ``dt`` (Spyx writes ``r = beta``; pass ``dt``),
                             reset by subtraction (Spyx ``LIF``)
===========  ==============  ===================================================================

**snnTorch's reset rule** (``snntorch.Synaptic.forward`` with ``reset_delay=False``): the reset of
step ``t`` is computed from the *stored* membrane ``m[t-1]`` before the update, then the spike is
compared and the stored membrane corrected:

.. math::

    r_t = H(m_{t-1} - \theta), \quad
    u_t = \beta m_{t-1} + I_t - r_t \theta, \quad
    z_t = H(u_t - \theta), \quad
    m_t = u_t - (z_t - r_t)\,\theta

(subtract); with ``reset="zero"`` ``u_t = (\beta m_{t-1} + I_t)(1 - r_t)`` and
``m_t = u_t - (z_t - r_t) u_t``. Whenever the stored membrane is still above threshold after a reset
(``m > \theta``), the next spike needs ``\beta m + I > 2\theta`` -- unlike a plain subtract reset.
``H`` is strict (``x > 0``), as snnTorch's Heaviside.

**Lava's fixed-point CUBA** (``lava.proc.lif`` bit-accurate model; ``numerics="int"``): integers
``du = min(rint(4096 dt/tau_syn), 4095)``, ``dv = rint(4096 dt/tau_mem)`` (12-bit; Lava adds 1 to
``du``, so ``tau_syn = dt`` keeps no current), ``theta_i = rint(s theta)``,
``b_i = rint(s v_leak dt/tau_mem)`` and weights ``W_i = rint(s W)`` with ``s = weight_scale`` (1: the
weights of a lava-dl export are whole numbers already); per step, with ``a`` the integer input
(``sum W_i x``) and ``trunc`` rounding toward zero:

.. math::

    u = \mathrm{wrap}_{24}\big(\mathrm{trunc}(u (4096 - du - 1) / 4096) + 64 a\big), \quad
    v = \mathrm{clip}\big(\mathrm{trunc}(v (4096 - dv) / 4096) + u + 64 b_i, \pm(2^{23} - 1)\big),
    \quad z = v > 64\,\theta_i, \quad v \leftarrow 0 \text{ where } z

(``wrap_24``: ``u > 2^23`` loses ``2^24``, ``u <= -2^23`` gains ``2^24``). States are int32; the
products are computed in two 12-bit halves so nothing overflows (the integer input must stay below
``2^24`` in magnitude, as Lava's 24-bit synaptic input does).

Example (snnTorch's rule by hand: ``beta = 0.5``, ``theta = 1``, input 3 then 0):

    >>> import jax.numpy as jnp
    >>> from pondlib.nn.neurons import CubaLIF
    >>> base = CubaLIF(1, tau_syn=1e-3, tau_mem=2e-3, r=2.0, v_leak=0.0, w_in=1.0, v_threshold=1.0,
    ...                dt=1e-3, reset="subtract")
    >>> z, _, rec = SnnTorchNeuron(base)(jnp.array([[3.0], [0.0], [0.0]]), record=True)
    >>> z[:, 0].tolist(), rec["vmem_reset"][:, 0].tolist()
    ([1.0, 0.0, 0.0], [2.0, 1.0, 0.5])

Step 0: ``u = 3 > 1`` spikes, stored ``m = 2``; step 1: ``r = 1``, ``u = 1 - 1 = 0``, no spike, stored
``m = 0 + 1 = 1``; step 2: ``r = 0`` (``1 > 1`` is false), ``u = 0.5``. A plain subtract reset would
give ``0.5 * 2 = 1`` at step 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from pondlib.errors import GraphError, NIRError
from pondlib.nn.base import evolve_time_major, scan_steps
from pondlib.nn.neurons import CubaLIF, NeuronState, heaviside
from pondlib.validate import check_float

__all__ = ["ExporterRule", "EXPORTER_RULES", "SnnTorchNeuron", "LavaCubaLIF", "NUMERICS"]

#: ``numerics`` accepted by :func:`~pondlib.interop.nir.load_nir`.
NUMERICS = ("float", "int")


@dataclass(frozen=True)
class ExporterRule:
    """How one framework ran the networks it exported.

    Attributes:
        dt_convention: how it hid ``dt`` (see :data:`pondlib.interop.nir.CONVENTIONS`).
        reset: the reset its exported neurons use by default.
        snntorch_reset: snnTorch's reset rule (module docstring).
        synapse_delay: steps of delay on every feed-forward weight (Lava: 1).
        integer: ``numerics="int"`` is available (Lava's fixed-point CUBA).
        source: where the rule is documented.
    """

    dt_convention: str
    reset: str
    snntorch_reset: bool = False
    synapse_delay: int = 0
    integer: bool = False
    source: str = ""


#: Exporter name -> its rule (the table in the module docstring).
EXPORTER_RULES: dict[str, ExporterRule] = {
    "snntorch": ExporterRule("dt_scaled", "subtract", snntorch_reset=True, source="snntorch Synaptic.forward"),
    "lava": ExporterRule("dt_scaled", "zero", synapse_delay=1, integer=True, source="lava.proc.lif models"),
    "norse": ExporterRule("unit", "v_reset", source="norse LIFBoxCell"),
    "rockpool": ExporterRule("rockpool", "subtract", source="rockpool LIFJax"),
    "sinabs": ExporterRule("unit", "subtract", source="sinabs IAFSqueeze, MembraneSubtract"),
    "spyx": ExporterRule("unknown", "subtract", source="spyx LIF"),
}


class SnnTorchNeuron(eqx.Module):
    """A NIR spiking neuron (``CubaLIF``, ``LIF``, ``IF`` of :mod:`pondlib.nn.neurons`) run with
    snnTorch's reset rule (module docstring); ``inner`` gives every coefficient and its ``reset``
    (``"subtract"`` or ``"zero"``).

    Input (T, N) or (B, T, N); record keys as the inner neuron's: ``vmem`` (``u_t``, before the
    correction), ``vmem_reset`` (the stored ``m_t``), ``isyn``, ``spikes``.
    """

    inner: Any

    def __init__(self, inner: Any) -> None:
        if getattr(inner, "v_threshold", None) is None or inner.reset not in ("subtract", "zero"):
            raise GraphError(
                "snnTorch reset rule",
                value=type(inner).__name__ + f" with reset={getattr(inner, 'reset', None)!r}",
                limit="a spiking NIR neuron with reset 'subtract' or 'zero'",
                where="SnnTorchNeuron",
                fix="wrap a CubaLIF/NIRLIF/IF built with reset='subtract' or 'zero'",
            )
        self.inner = inner

    @property
    def size_in(self) -> int:
        return self.inner.size_in

    @property
    def size_out(self) -> int:
        return self.inner.size_out

    def init_state(self, batch_shape: tuple[int, ...] = ()) -> NeuronState:
        return self.inner.init_state(batch_shape)

    def evolve_tm(self, x: jax.Array, state: NeuronState, record: bool):
        """Time-major evolution ``x`` (T, *batch, N) -> spikes (T, *batch, N)."""
        p = self.inner.parameters()
        subtract = self.inner.reset == "subtract"

        def step(s, xt):
            if p.a_syn is not None:
                isyn = p.a_syn * s.isyn + p.g_syn * xt
                drive = isyn
            else:
                isyn, drive = s.isyn, xt
            r = (s.vmem > p.threshold).astype(s.vmem.dtype)  # from the stored membrane, before the update
            u = p.a_mem * s.vmem + p.g_mem * drive + p.c_mem
            u = u - r * p.threshold if subtract else u * (1.0 - r)
            z = heaviside(u, p.threshold, p.surrogate)
            m = u - (z - r) * (p.threshold if subtract else u)
            return NeuronState(isyn, m), (z, u, m, isyn)

        state, (z, u, m, isyn) = scan_steps(step, NeuronState(*state), x)
        if not record:
            return z, state, {}
        rec = {"vmem": u, "vmem_reset": m, "spikes": z}
        if p.a_syn is not None:
            rec["isyn"] = isyn
        return z, state, rec

    def __call__(self, x: Any, state: NeuronState | None = None, record: bool = False):
        """``(spikes, state, record)`` for input (T, N) or (B, T, N)."""
        return evolve_time_major(self, x, state, record)

    def as_graph(self, name: str | None = None):
        raise GraphError(
            "snnTorch reset rule",
            value="SnnTorchNeuron",
            limit="a neuron a device can map",
            where=name or "SnnTorchNeuron",
            fix="import with reset='subtract' and no exporter convention to map the plain neuron",
        )


def _trunc_mul(x: jax.Array, d: jax.Array) -> jax.Array:
    """``trunc(x * d / 4096)`` for int32 ``|x| < 2^24`` and ``0 <= d <= 4096``, exact without int64:
    ``|x| = 4096 h + l`` gives ``(|x| d) >> 12 = h d + (l d) >> 12``."""
    ax = jnp.abs(x)
    h, lo = ax >> 12, ax & 4095
    return jnp.sign(x) * (h * d + ((lo * d) >> 12))


class LavaCubaLIF(eqx.Module):
    """Lava's bit-accurate CUBA LIF (module docstring) on integer input ``a`` (the weighted sum of the
    integer weights; a float array holding whole numbers). Output spikes 0/1 as float32; record keys
    ``isyn`` (u), ``vmem`` (v before reset), ``spikes``; states int32."""

    du: jax.Array
    dv: jax.Array
    vth: jax.Array
    bias: jax.Array
    n: int = eqx.field(static=True)

    def __init__(self, du: Any, dv: Any, vth: Any, bias: Any = 0) -> None:
        where = "LavaCubaLIF"
        arrs = {k: np.atleast_1d(np.asarray(v)) for k, v in (("du", du), ("dv", dv), ("vth", vth), ("bias", bias))}
        n = max(a.size for a in arrs.values())
        limits = {"du": (0, 4095), "dv": (0, 4096), "vth": (0, (1 << 17) - 1), "bias": (-(1 << 16), (1 << 16) - 1)}
        out = {}
        for k, a in arrs.items():
            lo, hi = limits[k]
            if a.size not in (1, n) or a.dtype.kind not in "iuf" or not np.all(np.isfinite(a)):
                raise NIRError(k, value=a.tolist()[:4], limit=f"1 or {n} whole numbers", where=where, fix=f"pass {k}")
            bad = (a != np.rint(a)) | (a < lo) | (a > hi)
            if np.any(bad):
                i = int(np.flatnonzero(bad)[0])
                raise NIRError(
                    k,
                    value=float(a.reshape(-1)[i]),
                    limit=f"a whole number in {lo}..{hi}",
                    where=f"{where}[{i}]",
                    fix=f"Lava's {k} has that range: rescale the float network (weight_scale) or its time constants",
                )
            out[k] = jnp.asarray(np.broadcast_to(a, (n,)).astype(np.int32))
        self.du, self.dv, self.vth, self.bias, self.n = out["du"], out["dv"], out["vth"], out["bias"], n

    @property
    def size_in(self) -> int:
        return self.n

    @property
    def size_out(self) -> int:
        return self.n

    def init_state(self, batch_shape: tuple[int, ...] = ()) -> NeuronState:
        z = jnp.zeros(tuple(batch_shape) + (self.n,), jnp.int32)
        return NeuronState(z, z)

    def evolve_tm(self, x: jax.Array, state: NeuronState, record: bool):
        """Time-major evolution ``x`` (T, *batch, N) integer-valued -> spikes (T, *batch, N)."""
        lim = 1 << 23
        vth = self.vth << 6

        def step(s, at):
            u = _trunc_mul(s.isyn, 4096 - self.du - 1) + (jnp.rint(at).astype(jnp.int32) << 6)
            u = jnp.where(u > lim, u - 2 * lim, u)
            u = jnp.where(u <= -lim, u + 2 * lim, u)
            v = _trunc_mul(s.vmem, 4096 - self.dv) + u + (self.bias << 6)
            v = jnp.clip(v, -lim + 1, lim - 1)
            z = v > vth
            return NeuronState(u, jnp.where(z, 0, v)), (z.astype(jnp.float32), u, v)

        state, (z, u, v) = scan_steps(step, NeuronState(*state), x)
        return z, state, ({"isyn": u, "vmem": v, "spikes": z} if record else {})

    def __call__(self, x: Any, state: NeuronState | None = None, record: bool = False):
        """``(spikes, state, record)`` for integer-valued input (T, N) or (B, T, N)."""
        return evolve_time_major(self, x, state, record)

    def as_graph(self, name: str | None = None):
        raise GraphError(
            "Lava fixed-point neuron",
            value="LavaCubaLIF",
            limit="a float neuron",
            where=name or "LavaCubaLIF",
            fix="import with numerics='float' to map the network to a device",
        )

    @classmethod
    def from_cuba(cls, lif: CubaLIF, weight_scale: float = 1.0) -> LavaCubaLIF:
        """The integer neuron of a float :class:`~pondlib.nn.neurons.CubaLIF` in the ``dt_scaled``
        convention (``w_in dt/tau_syn = 1``, ``r dt/tau_mem = 1``; checked), scale ``weight_scale``."""
        s = check_float(weight_scale, "weight_scale", lo=0.0, lo_open=True, where="lava numerics", error=NIRError)
        p = lif.parameters()
        for name, gain in (("w_in dt/tau_syn", p.g_syn), ("r dt/tau_mem", p.g_mem)):
            g = np.asarray(gain, dtype=np.float64)
            if not np.allclose(g, 1.0, rtol=1e-4):
                raise NIRError(
                    f"Lava integer numerics: {name}",
                    value=float(g.reshape(-1)[np.argmax(np.abs(g - 1.0))]),
                    limit="1 (lava-dl writes r = tau_mem/dt, w_in = tau_syn/dt)",
                    where="CubaLIF",
                    fix="pass the dt the file was written with, or numerics='float'",
                )
        du = np.minimum(np.rint(4096.0 * (1.0 - np.asarray(p.a_syn, dtype=np.float64))), 4095)  # 4095: no memory
        dv = np.rint(4096.0 * (1.0 - np.asarray(p.a_mem, dtype=np.float64)))
        vth = np.rint(s * np.asarray(p.threshold, dtype=np.float64))
        bias = np.rint(s * np.asarray(p.c_mem, dtype=np.float64))
        return cls(du, dv, vth, bias)
