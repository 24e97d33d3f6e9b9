r"""A float LIF layer that follows the Xylo core step for step (hardware-aware training).

:class:`XyloLIF` fuses a weight layer and a LIF layer (``Linear -> LIF``) and runs the chip's integer
dynamics (``docs/XYLO.md``) in float arithmetic, with straight-through estimators (STE) where the chip
rounds, clips or floors, so that :func:`jax.grad` reaches every parameter. It is built by
:func:`pondlib.transform.xylo_aware`; one step of ``N`` neurons with ``k`` synapses each reads

* **input** ``x[t]`` (``N_in`` counts): clipped at ``input_clip`` (15 on the first layer, the chip's
  4-bit input counter); on a hidden->hidden or hidden->output hop (``delay_in``) the layer reads
  ``x[t - 1]`` instead, the chip's one step of delay (input->hidden has none);
* **quantization** (``quantize`` ``"channel"`` or ``"global"``): the scale the chosen quantizer would
  compute, ``s = 127 / max|W|`` per neuron (over its input and recurrent weights) or per layer, and

  .. math::

      W_q = \mathrm{clip}(\mathrm{round}(s W), -128, 127), \quad
      \theta_q = \mathrm{clip}(\mathrm{round}(s\theta), 1, 32767), \quad
      b_q = \mathrm{clip}(\mathrm{round}(s b), -32768, 32767)

  (round half to even, like :func:`numpy.rint`; the threshold is kept >= 1). Every state below is in
  these chip units (integers held in float32, exact below 2^24);
* **dynamics** (``d = round(clip(dash, 1, 15))``, ``sat16`` clamps to [-32768, 32767],
  ``decay(v, d) = floor(v 2^{-d})`` or ``sign(v)`` where that is 0):

  .. math::

      I[t] &= \mathrm{sat16}\big(I[t-1] + \mathrm{reshape}_{N,k}(x[t] W_q + s[t-1] W_{rec,q})\big), \quad
      I[t] \leftarrow I[t] - \mathrm{decay}(I[t], d_{syn}) \\
      \Delta &= \mathrm{sat16}\big(\mathrm{sat16}(-\mathrm{decay}(V[t-1], d_{mem}) + \textstyle\sum_k I[t])
               + b_q\big), \quad V[t] = \mathrm{sat16}(V[t-1] + \Delta) \\
      s[t] &= \min(\lfloor V[t] / \theta_q \rfloor, s_{max}) \text{ where } V[t] \ge \theta_q,
              \quad V[t] \leftarrow V[t] - s[t]\,\theta_q

  with ``s_max`` 31 (hidden) or 1 (output). With ``quantize=None`` the layer stays in float units
  (``s = 1``, no rounding, no saturation) and decays by ``1 - 2^{-d}`` exactly.

Gradients: ``round``, ``floor`` and ``clip`` pass the gradient straight through (identity); the spike
count uses the layer's :class:`~pondlib.nn.surrogate.Surrogate`; the scale ``s`` is treated as a
constant (``stop_gradient``). The time loop has a hand-derived adjoint that gives exactly these
gradients without storing every step's intermediates (:mod:`pondlib.devices.xylo.aware_adjoint`; ~4x faster to
train on CPU than autodiff through the scan, which :meth:`XyloLIF._evolve_tm_autodiff` keeps as the
reference).

Differences from the chip that remain (documented, not hidden): the chip saturates the synaptic state
after each input source, this layer after their sum (equal unless a partial sum leaves int16); aliases
are not modelled; a membrane of exactly -32768 with dash 0 cannot occur (dash >= 1).

Export: :meth:`XyloLIF.as_graph` writes a plain ``LinearWeights -> LIFNeurons`` pair whose parameters are
the *grid* values ``W_q / s``, ``theta_q / s``, ``b_q / s`` (the quantizers map them back to exactly
``W_q``...) and whose time constants are

.. math::  \tau = -dt / \ln(1 - 2^{-d})

so that a plain float LIF decays by exactly ``1 - 2^{-d}`` and the mapper's rule
``dash = round(log2(tau / dt))`` gives back ``d`` (``log2(tau/dt)`` is 0.529 for d = 1, 1.797 for d = 2,
within 0.03 of ``d`` from d = 3 on; :func:`tau_for_dash`).

Record keys: ``vmem`` (T, N) and ``isyn`` (T, N, k) in float units (chip units divided by ``s``, so
that they line up with a plain LIF's record), ``spikes`` (T, N).

Example (one neuron, weight 1, threshold 1, dash 1: the chip's halving, in integers):
    >>> import jax.numpy as jnp
    >>> lif = XyloLIF(1, 1, weight=[[1.0]], threshold=1.0, dash_mem=1.0, dash_syn=1.0,
    ...               quantize="channel")
    >>> out, state, rec = lif(jnp.array([[1.0], [0.0], [0.0]]), record=True)
    >>> (rec["isyn"][:, 0, 0] * 127).tolist()      # 127 - 63, then 64 - 32, 32 - 16
    [64.0, 32.0, 16.0]
    >>> (rec["vmem"][:, 0] * 127).tolist()         # 0 + 64; 64 - 32 + 32; 64 - 32 + 16
    [64.0, 64.0, 48.0]
    >>> out[:, 0].tolist()                          # the threshold is 127 chip units
    [0.0, 0.0, 0.0]
    >>> round(float(tau_for_dash(1, 1e-3) / 1e-3), 6)   # decay exp(-dt/tau) = 1/2: tau = dt / ln 2
    1.442695
"""

from __future__ import annotations

from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from pondlib.devices.xylo.aware_adjoint import XyloScanConfig, xylo_scan
from pondlib.errors import GraphError, PondError
from pondlib.graph import GraphHolder, connect_modules
from pondlib.nn.base import (
    F32_TINY,
    as_param,
    check_batch_shape,
    check_positive,
    check_size,
    evolve_time_major,
    scan_steps,
)
from pondlib.nn.integer_chain import IntegerPair
from pondlib.nn.lif import LIF
from pondlib.nn.linear import Linear
from pondlib.nn.ste import clip_ste, round_ste
from pondlib.nn.surrogate import Surrogate
from pondlib.validate import F32_MAX, as_float_array, check_bool, check_choice, check_float, check_int, check_type

__all__ = ["XyloLIF", "XyloLIFState", "tau_for_dash", "dash_for_tau"]

_QUANTIZE = ("channel", "global", None)
#: Largest quantizer scale: larger ones (all weights below ~1.5e-36) would overflow float32.
MAX_SCALE = 2.0**126
#: Largest decay shift :func:`tau_for_dash` converts (a shift beyond 64 bits has no meaning).
MAX_DASH = 64


def tau_for_dash(dash: Any, dt: float) -> np.ndarray:
    r"""Time constant (s) whose float decay equals the chip's: :math:`\tau = -dt / \ln(1 - 2^{-d})`.

    ``round(log2(tau / dt)) == d`` for every d in 1..15 (the mapper's rule), checked here. ``dash`` must
    be finite in ``[1, 64]`` and ``dt`` finite and > 0 (PondError otherwise).

    Example:
        >>> d = np.arange(1, 16)
        >>> bool(np.all(np.round(np.log2(tau_for_dash(d, 1e-3) / 1e-3)) == d))
        True
    """
    dt = check_float(dt, "dt", lo=0.0, lo_open=True, where="tau_for_dash", fix="pass dt in seconds, e.g. 1e-3")
    d = as_float_array(dash, "decay shift", where="tau_for_dash", allow_empty=True)
    if d.size and not np.all((d >= 1) & (d <= MAX_DASH)):
        bad = d[~((d >= 1) & (d <= MAX_DASH))]
        raise PondError(
            "decay shift",
            value=float(bad[0]),
            limit=f"in [1, {MAX_DASH}]",
            where="tau_for_dash",
            fix="dash 0 wipes the state every step; use dash >= 1 (Xylo: 1..15)",
        )
    return -dt / np.log1p(-np.exp2(-d))


def dash_for_tau(tau: Any, dt: float) -> np.ndarray:
    """The mapper's unrounded dash ``log2(tau / dt)`` (rounding it gives the chip's decay shift).

    ``tau`` and ``dt`` must be finite and > 0 (PondError otherwise).

    Example:
        >>> dash_for_tau(0.016, 1e-3).tolist()
        4.0
    """
    dt = check_float(dt, "dt", lo=0.0, lo_open=True, where="dash_for_tau", fix="pass dt in seconds, e.g. 1e-3")
    tau = as_float_array(
        tau, "tau", lo=np.nextafter(0.0, 1.0), where="dash_for_tau", allow_empty=True, fix="pass time constants > 0 s"
    )
    return np.log2(tau / dt)


class XyloLIFState(NamedTuple):
    """State in chip units: ``isyn`` (*b, N, k), ``vmem`` (*b, N), ``spikes`` (*b, N) (last step's
    counts, for the recurrence), ``x_prev`` (*b, N_in) (last step's input, for the hop delay)."""

    isyn: jax.Array
    vmem: jax.Array
    spikes: jax.Array
    x_prev: jax.Array


def _arr(value: Any, shape: tuple[int, ...], name: str, positive: bool = False) -> jax.Array:
    a = as_param(value, name, "XyloLIF")
    if positive:
        check_positive(a, name, "XyloLIF")
    if a.ndim == 0:
        a = jnp.full(shape, a)
    elif len(shape) == 2 and tuple(a.shape) == (shape[0],):
        a = jnp.broadcast_to(jnp.asarray(a)[:, None], shape)
    if tuple(a.shape) != shape:
        raise GraphError(
            f"XyloLIF {name} shape",
            value=tuple(a.shape),
            limit=f"a scalar or {shape}",
            where="XyloLIF",
            fix=f"pass one {name} per neuron",
        )
    return jnp.asarray(a, dtype=jnp.float32)


class XyloLIF(eqx.Module):
    """Weights into ``N`` LIF neurons that follow the Xylo core (equations in the module docstring).

    Args:
        n_in: input channels; ``n``: neurons; ``n_synapses``: synapses per neuron ``k``.
        weight: (n_in, n * k) input weights (float units); ``w_rec``: (n, n * k) or None.
        threshold, bias: scalar or (n,), float units.
        dash_mem: scalar or (n,); ``dash_syn``: scalar, (n,) or (n, k): continuous decay shifts,
            rounded (STE) and clipped to 1..``dash_max`` in the forward pass.
        dt: time step (s). ``max_spikes``: spike cap per step (31 hidden, 1 output).
        delay_in: read the input one step late (a hidden->hidden or hidden->output hop on the chip).
        input_clip: clip input counts at this value (15 on the chip's input layer) or None.
        quantize: ``"channel"``, ``"global"`` or None (see the module docstring).
        learn_dash: train the decay shifts (else they are constants).
        weight_bits, state_bits, dash_max: the chip's widths (8, 16, 15 on Xylo).
        surrogate: spike surrogate (default fast sigmoid, scale 10).

    Raises:
        GraphError: naming the parameter: sizes that are not whole numbers >= 1; weights, thresholds,
            biases and dashes that are not real, finite and within float32 or have the wrong shape; a
            threshold or ``dt`` that is not > 0 (with ``quantize=None`` the threshold divides the
            membrane); ``max_spikes`` not a whole number in [1, 2^24]; ``input_clip`` not > 0;
            ``weight_bits`` outside [2, 16], ``state_bits`` outside [2, 24] (float32 holds them exactly),
            ``dash_max`` outside [1, state_bits]; non-bool flags; an unknown ``quantize``. Dashes of any
            finite value are tolerated: the forward pass clips them to ``1..dash_max`` (documented above).
    """

    weight: jax.Array
    w_rec: jax.Array | None
    threshold: jax.Array
    bias: jax.Array
    dash_mem: jax.Array
    dash_syn: jax.Array
    dt: float = eqx.field(static=True)
    max_spikes: float = eqx.field(static=True)
    delay_in: bool = eqx.field(static=True)
    input_clip: float | None = eqx.field(static=True)
    quantize: str | None = eqx.field(static=True)
    learn_dash: bool = eqx.field(static=True)
    weight_bits: int = eqx.field(static=True)
    state_bits: int = eqx.field(static=True)
    dash_max: int = eqx.field(static=True)
    surrogate: Surrogate = eqx.field(static=True)
    n_in: int = eqx.field(static=True)
    n_neurons: int = eqx.field(static=True)
    n_synapses: int = eqx.field(static=True)

    def __init__(
        self,
        n_in: int,
        n: int,
        n_synapses: int = 1,
        *,
        weight: Any,
        w_rec: Any = None,
        threshold: Any = 1.0,
        bias: Any = 0.0,
        dash_mem: Any = 4.0,
        dash_syn: Any = 1.0,
        dt: float = 1e-3,
        max_spikes: float = 31,
        delay_in: bool = False,
        input_clip: float | None = None,
        quantize: str | None = "channel",
        learn_dash: bool = True,
        weight_bits: int = 8,
        state_bits: int = 16,
        dash_max: int = 15,
        surrogate: Surrogate | None = None,
    ) -> None:
        w = "XyloLIF"
        self.n_in, self.n_neurons = check_size(n_in, "n_in", w), check_size(n, "n", w)
        self.n_synapses = check_size(n_synapses, "n_synapses", w)
        self.quantize = check_choice(
            quantize,
            "quantize",
            _QUANTIZE,
            where=w,
            error=GraphError,
            fix="pass 'channel' (per neuron), 'global' (per layer) or None",
        )
        self.dt = check_float(
            dt, "dt", lo=F32_TINY, hi=F32_MAX, where=w, error=GraphError, fix="pass dt in seconds, e.g. 1e-3"
        )
        self.max_spikes = float(
            check_int(max_spikes, "max_spikes", lo=1, hi=2**24, where=w, error=GraphError, fix="allow 1 to 2^24 spikes")
        )
        self.delay_in = check_bool(delay_in, "delay_in", where=w, error=GraphError)
        self.learn_dash = check_bool(learn_dash, "learn_dash", where=w, error=GraphError)
        if input_clip is not None:
            input_clip = check_float(
                input_clip, "input_clip", lo=0.0, lo_open=True, hi=F32_MAX, where=w, error=GraphError
            )
        self.input_clip = input_clip
        self.weight_bits = check_int(weight_bits, "weight_bits", lo=2, hi=16, where=w, error=GraphError)
        self.state_bits = check_int(state_bits, "state_bits", lo=2, hi=24, where=w, error=GraphError)
        self.dash_max = check_int(dash_max, "dash_max", lo=1, hi=self.state_bits, where=w, error=GraphError)
        nk = self.n_neurons * self.n_synapses
        self.weight = _arr(weight, (self.n_in, nk), "weight")
        self.w_rec = None if w_rec is None else _arr(w_rec, (self.n_neurons, nk), "w_rec")
        self.threshold = _arr(threshold, (self.n_neurons,), "threshold", positive=True)
        self.bias = _arr(bias, (self.n_neurons,), "bias")
        self.dash_mem = _arr(dash_mem, (self.n_neurons,), "dash_mem")
        self.dash_syn = _arr(dash_syn, (self.n_neurons, self.n_synapses), "dash_syn")
        if surrogate is not None:
            check_type(surrogate, "surrogate", Surrogate, where=w, error=GraphError)
        self.surrogate = surrogate if surrogate is not None else Surrogate()

    # -- sizes and state ------------------------------------------------------------------------
    @property
    def size_in(self) -> int:
        """Input channels."""
        return self.n_in

    @property
    def size_out(self) -> int:
        """Neurons."""
        return self.n_neurons

    def init_state(self, batch_shape: tuple[int, ...] = ()) -> XyloLIFState:
        """Zero state for ``batch_shape`` samples."""
        batch_shape = check_batch_shape(batch_shape, "XyloLIF")
        n, k, z = self.n_neurons, self.n_synapses, jnp.zeros
        return XyloLIFState(
            z(batch_shape + (n, k), jnp.float32),
            z(batch_shape + (n,), jnp.float32),
            z(batch_shape + (n,), jnp.float32),
            z(batch_shape + (self.n_in,), jnp.float32),
        )

    # -- the chip's grid ------------------------------------------------------------------------
    def scale(self) -> jax.Array:
        """The quantizer's scale (n,) (per neuron for ``"channel"``, one value repeated for
        ``"global"``, ones for None), a constant for autodiff. A neuron without weights gets
        ``(2^15 - 1) / max(|theta|, |b|)`` (or 1), as in :mod:`pondlib.devices.xylo.quantize`. The scale is
        capped at :data:`MAX_SCALE` (``2^126``; all weights below ~1.5e-36) so that it stays finite in
        float32."""
        n, k = self.n_neurons, self.n_synapses
        if self.quantize is None:
            return jnp.ones((n,), jnp.float32)
        w_max = float((1 << (self.weight_bits - 1)) - 1)
        s_max = float((1 << (self.state_bits - 1)) - 1)
        mags = [jnp.abs(self.weight).reshape(self.n_in, n, k).max(axis=(0, 2))]
        if self.w_rec is not None:
            mags.append(jnp.abs(self.w_rec).reshape(n, n, k).max(axis=(0, 2)))
        m = jax.lax.stop_gradient(jnp.max(jnp.stack(mags), axis=0))
        tb = jax.lax.stop_gradient(jnp.maximum(jnp.abs(self.threshold), jnp.abs(self.bias)))
        if self.quantize == "global":
            m = jnp.full((n,), jnp.max(m))
            tb = jnp.full((n,), jnp.max(tb))
        fallback = jnp.where(tb > 0, s_max / jnp.where(tb > 0, tb, 1.0), 1.0)
        # capped so that it stays finite in float32 (tiny weights would give inf, and 0 * inf = NaN)
        return jnp.minimum(jnp.where(m > 0, w_max / jnp.where(m > 0, m, 1.0), fallback), MAX_SCALE)

    def grid(self) -> dict[str, Any]:
        """Parameters on the chip's grid in chip units (STE): ``weight`` (n_in, n k), ``w_rec``,
        ``threshold``, ``bias`` (n,), ``dash_mem`` (n,), ``dash_syn`` (n, k) (integers 1..dash_max),
        and ``scale`` (n,)."""
        s = self.scale()
        s_col = jnp.repeat(s, self.n_synapses)  # weight column c feeds neuron c // k
        dm, ds = self.dash_mem, self.dash_syn
        if not self.learn_dash:
            dm, ds = jax.lax.stop_gradient(dm), jax.lax.stop_gradient(ds)
        out = {
            "scale": s,
            "dash_mem": round_ste(clip_ste(dm, 1.0, float(self.dash_max))),
            "dash_syn": round_ste(clip_ste(ds, 1.0, float(self.dash_max))),
        }
        if self.quantize is None:
            out.update(weight=self.weight, w_rec=self.w_rec, threshold=self.threshold, bias=self.bias)
            return out
        wl, wh = -float(1 << (self.weight_bits - 1)), float((1 << (self.weight_bits - 1)) - 1)
        sl, sh = -float(1 << (self.state_bits - 1)), float((1 << (self.state_bits - 1)) - 1)
        out["weight"] = clip_ste(round_ste(self.weight * s_col), wl, wh)
        out["w_rec"] = None if self.w_rec is None else clip_ste(round_ste(self.w_rec * s_col), wl, wh)
        out["threshold"] = clip_ste(round_ste(self.threshold * s), 1.0, sh)
        out["bias"] = clip_ste(round_ste(self.bias * s), sl, sh)
        return out

    # -- evolution ------------------------------------------------------------------------------
    def _inputs(self, x: jax.Array, state: XyloLIFState) -> tuple[jax.Array, jax.Array]:
        """The input the core reads, ``(x, x_prev_new)``: clipped at ``input_clip`` and, with
        ``delay_in``, shifted one step late (``state.x_prev`` first); ``x_prev_new`` is the last row."""
        if self.input_clip is not None:
            x = jnp.minimum(x, self.input_clip)  # the chip's 4-bit input counter
        x_prev_new = x[-1]
        if self.delay_in:  # hidden spikes of step t reach this layer at t + 1 on the chip
            x = jnp.concatenate([state.x_prev[None], x[:-1]], axis=0)
        return x, x_prev_new

    def evolve_tm(self, x: jax.Array, state: XyloLIFState, record: bool):
        """Time-major evolution ``x`` (T, *batch, n_in) -> spikes (T, *batch, n).

        The time loop is :func:`pondlib.devices.xylo.aware_adjoint.xylo_scan` (a hand-derived adjoint for
        training); :meth:`_evolve_tm_autodiff` is the same evolution differentiated by JAX through a
        plain scan (the reference the tests compare with: equal spikes and states, equal gradients up
        to float32 rounding). The input product is one 2-D product ``(T * batch, n_in) @ (n_in, n k)``
        (the product of the reference, reshaped): its transpose in the backward pass then needs no
        transposed copy of the current cotangent (with a 3-D product XLA made one per layer)."""
        g = self.grid()
        x, x_prev_new = self._inputs(x, state)
        w = g["weight"]
        current = (x.reshape(-1, self.n_in) @ w).reshape(x.shape[:-1] + (w.shape[1],))  # (T, *batch, n k)
        lo, hi = -float(1 << (self.state_bits - 1)), float((1 << (self.state_bits - 1)) - 1)
        cfg = XyloScanConfig(self.max_spikes, self.surrogate, self.quantize is not None, lo, hi, record)
        spikes, vrec, irec, (isyn, vmem, spk) = xylo_scan(
            cfg,
            jnp.exp2(-g["dash_mem"]),
            jnp.exp2(-g["dash_syn"]),
            g["threshold"],
            g["bias"],
            g["w_rec"],
            current,
            (state.isyn, state.vmem, state.spikes),
        )
        new_state = XyloLIFState(isyn, vmem, spk, x_prev_new)
        if not record:
            return spikes, new_state, {}
        s = g["scale"]
        return spikes, new_state, {"vmem": vrec / s, "isyn": irec / s[:, None], "spikes": spikes}

    def _evolve_tm_autodiff(self, x: jax.Array, state: XyloLIFState, record: bool):
        """:meth:`evolve_tm` as one plain :func:`jax.lax.scan` with STEs, differentiated by JAX (the
        reference for the hand adjoint; slower to train, same forward values)."""
        n, k = self.n_neurons, self.n_synapses
        g = self.grid()
        if self.input_clip is not None:
            x = jnp.minimum(x, self.input_clip)  # the chip's 4-bit input counter
        x_prev_new = x[-1]
        if self.delay_in:  # hidden spikes of step t reach this layer at t + 1 on the chip
            x = jnp.concatenate([state.x_prev[None], x[:-1]], axis=0)
        current = (x @ g["weight"]).reshape(x.shape[:-1] + (n, k))
        integer = self.quantize is not None
        lo, hi = -float(1 << (self.state_bits - 1)), float((1 << (self.state_bits - 1)) - 1)
        f_syn, f_mem = jnp.exp2(-g["dash_syn"]), jnp.exp2(-g["dash_mem"])
        thr, bias, w_rec, cap, sg = g["threshold"], g["bias"], g["w_rec"], self.max_spikes, self.surrogate

        def sat(v: jax.Array) -> jax.Array:
            return clip_ste(v, lo, hi) if integer else v

        def decay(v: jax.Array, f: jax.Array) -> jax.Array:
            if not integer:
                return v * f
            exact = jnp.floor(v * f)  # arithmetic shift v >> d
            exact = jnp.where(exact == 0, jnp.sign(v), exact)  # minimum step of one toward zero
            return v * f + jax.lax.stop_gradient(exact - v * f)

        def step(st: tuple, cur: jax.Array):
            isyn, vmem, spk = st
            if w_rec is not None:
                cur = cur + (spk @ w_rec).reshape(spk.shape[:-1] + (n, k))
            isyn = sat(isyn + cur)
            isyn = isyn - decay(isyn, f_syn)
            dv = sat(-decay(vmem, f_mem) + isyn.sum(-1))
            dv = sat(dv + bias)
            vmem = sat(vmem + dv)
            spk = sg.spikes(vmem, thr, cap)
            if integer:
                # XLA may divide by multiplying with 1/thr (165 * (1/165) < 1): correct the count by
                # one in either direction with exact integer arithmetic, as the chip's loop counts
                n0 = jnp.floor(vmem / thr)
                r = vmem - n0 * thr
                n0 = n0 + jnp.where(r >= thr, 1.0, 0.0) - jnp.where(r < 0, 1.0, 0.0)
                exact = jnp.where(vmem >= thr, jnp.clip(n0, 0.0, cap), 0.0)
                spk = spk + jax.lax.stop_gradient(exact - spk)
            vmem = vmem - spk * thr
            return (isyn, vmem, spk), (spk, vmem, isyn)

        (isyn, vmem, spk), (spikes, vrec, irec) = scan_steps(step, (state.isyn, state.vmem, state.spikes), current)
        new_state = XyloLIFState(isyn, vmem, spk, x_prev_new)
        if not record:
            return spikes, new_state, {}
        s = g["scale"]
        return spikes, new_state, {"vmem": vrec / s, "isyn": irec / s[:, None], "spikes": spikes}

    def chain_pair(self) -> IntegerPair | None:
        r"""This layer as a pair of the integer training chain (:mod:`pondlib.nn.integer_chain`), which
        :class:`~pondlib.nn.Sequential` runs as one compiled loop per sample when every layer gives one:
        the grid of :meth:`grid` (STE: JAX differentiates it), :math:`\alpha = 1 - 2^{-d_{mem}}`,
        :math:`\beta = 1 - 2^{-d_{syn}}` (exact in float32 for ``d <= 24``), the state range, the hop
        delay and the input clip. None for a recurrent layer or one in float units (``quantize=None``):
        those run on their own loop."""
        if self.quantize is None or self.w_rec is not None:
            return None
        g = self.grid()
        lo, hi = -float(1 << (self.state_bits - 1)), float((1 << (self.state_bits - 1)) - 1)
        alpha, beta = 1.0 - jnp.exp2(-g["dash_mem"]), 1.0 - jnp.exp2(-g["dash_syn"])
        return IntegerPair(
            g["weight"],
            alpha,
            beta,
            g["threshold"],
            g["bias"],
            self.max_spikes,
            self.surrogate,
            lo,
            hi,
            self.delay_in,
            self.input_clip,
            _pair_evolve,
        )

    def __call__(self, x: Any, state: XyloLIFState | None = None, record: bool = False):
        """``(spikes, state, record)`` for input (T, n_in) or (B, T, n_in)."""
        return evolve_time_major(self, x, state, record)

    evolve = __call__

    # -- export ---------------------------------------------------------------------------------
    def to_float(self) -> tuple[Linear, LIF]:
        """The plain ``(Linear, LIF)`` pair on the grid (weights ``W_q / s`` ..., ``tau`` from the
        rounded dashes by :func:`tau_for_dash`, the spike cap kept); no hop delay, no integer decay."""
        g = jax.tree_util.tree_map(
            lambda a: None if a is None else np.asarray(a, np.float64), self.grid(), is_leaf=lambda a: a is None
        )
        s = g["scale"]
        s_col = np.repeat(s, self.n_synapses)
        lin = Linear(self.n_in, self.n_neurons * self.n_synapses, weight=g["weight"] / s_col)
        lif = LIF(
            (self.n_neurons * self.n_synapses, self.n_neurons),
            tau_mem=tau_for_dash(g["dash_mem"], self.dt),
            tau_syn=tau_for_dash(g["dash_syn"], self.dt),
            threshold=g["threshold"] / s,
            bias=g["bias"] / s,
            dt=self.dt,
            w_rec=None if g["w_rec"] is None else g["w_rec"] / s_col,
            max_spikes_per_dt=self.max_spikes,
            surrogate=self.surrogate,
        )
        return lin, lif

    def as_graph(self, name: str | None = None):
        """``LinearWeights (name/w_in) -> LIFNeurons (name)`` with grid parameters and
        ``tau = -dt / ln(1 - 2^-d)`` (the mapper rounds it back to ``d``; the float32 copy of ``tau``
        is far inside the margin, at least 0.029 in ``log2``), in a GraphHolder."""
        name = name or "XyloLIF"
        lin, lif = self.to_float()
        gl = lin.as_graph(f"{name}/w_in")
        gn = lif.as_graph(name)
        connect_modules(gl, gn)
        return GraphHolder(list(gl.input_nodes), list(gn.output_nodes), name, self)


def _pair_evolve(spec: tuple, weight, alpha, beta, threshold, bias, x: jax.Array, state: tuple) -> tuple:
    """The integer chain's reference for one layer (:class:`pondlib.nn.integer_chain.IntegerPair`): the
    input product and :func:`~pondlib.devices.xylo.aware_adjoint.xylo_scan` of :meth:`XyloLIF.evolve_tm`
    on the clipped, delayed input ``x`` (T, *b, n_in) with ``f = 1 - alpha``, ``f_syn = 1 - beta`` (the
    layer's own factors, exactly). Returns ``(spikes, (isyn, vmem, spikes))``."""
    cap, surrogate, lo, hi = spec
    n_in, nk = weight.shape
    current = (x.reshape(-1, n_in) @ weight).reshape(x.shape[:-1] + (nk,))
    cfg = XyloScanConfig(cap, surrogate, True, lo, hi, False)
    spikes, _, _, final = xylo_scan(cfg, 1.0 - alpha, 1.0 - beta, threshold, bias, None, current, state)
    return spikes, final
