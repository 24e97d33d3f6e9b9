r"""Device-aware training for Siracusa: a float network that runs the integer deployment bit for bit.

:func:`siracusa_aware` turns ``nn.Sequential(Linear, LIF, Linear, LIF, ...)`` into a :class:`SiracusaAware`
module. Its forward pass is the :class:`~pondlib.devices.siracusa.sim.SiracusaSim` arithmetic of the mapped
network (int8 GEMM with a raw int32 accumulator, then the integer LIF built from RequantShift), computed
exactly in int32 JAX ops, while a float32 twin of every quantity carries the gradients (straight-through
estimators for rounding and clipping, the LIF's surrogate for the spike). Per layer ``l`` with ``N`` neurons
and ``K`` inputs, state width ``b`` (16), shift ``S``, ``s_hi = 2^{b-1} - 1``:

.. math::

    W_q &= \mathrm{clip}(\mathrm{round}(127\, W / \max_k |W_{k,o}|), -127, 127)
        \quad\text{(per output channel, as the mapper)} \\
    r &= 1 / s_v, \quad \theta_q = \mathrm{clip}(\mathrm{round}(r\theta), 1, s_{hi}) \\
    m_{in} &= \mathrm{clip}(\mathrm{round}(r\, g_u g\, 2^S), 1, c_{in}), \quad
    m_\beta = \mathrm{clip}(\mathrm{round}(\alpha 2^S), 1, 2^S - 1), \quad
    a = \mathrm{clip}(\mathrm{round}(r\, b\, 2^S), \pm s_{hi} 2^S) \\
    I[t] &= x_q[t] W_q \ \text{(int32)}, \quad
    v[t] = \mathrm{clip}\big((v[t-1] m_\beta + I[t] m_{in} + a + 2^{S-1}) \gg S, -s_{hi} - 1, s_{hi}\big) \\
    z[t] &= v[t] \ge \theta_q, \quad v[t] \leftarrow v[t] - z[t]\,\theta_q \ \text{(or 0 with reset "zero")}

with trainable ``W`` (K, N); ``gain`` ``g`` (N,): float state units per accumulator unit (the mapper's
``s_in s_w``) in units of the static ``g_u``, the layer's largest initial value, so that ``g`` is of order
1 like the other parameters and an optimizer's step moves it by a sensible fraction; ``alpha`` (N,),
``bias`` ``b`` and ``threshold`` ``theta`` (N,) in float state units; ``s_v`` the state scale. The
input is quantized as :func:`~pondlib.devices.siracusa.sim.quantize_input` does (``x_q =
clip(round(x / s_in), 0, 255)`` for non-negative data). The weight scale is a constant for autodiff
(``stop_gradient``).

**The state scale** ``s_v`` (float value of one state step, per layer) is the mapper's own calibration of
the plain network (:func:`~pondlib.devices.siracusa.mapper.state_scales`: ``max(|v| peak, max theta) /
s_hi`` on ``calibration``, the synaptic current dropped), fixed at construction (static, ``r = 1 / s_v``).
So the model starts exactly where the plain mapping is, with the plain mapping's headroom above the
thresholds; training then moves the integers on that fixed grid, and :func:`export` hands the same
``s_v`` to the mapper (``mapper(..., state_scale=...)``), whatever membrane peak the trained network
reaches. Thresholds trained above ``s_hi s_v`` are clipped to ``s_hi`` (the model sees it).

**The shift** ``S`` is fixed per layer at construction: the largest one (<= 30) that leaves the int32 sum
room for twice the initial input multiplier at the worst accumulator ``127 K max|x_q|``; ``c_in`` is the
multiplier that still fits, so no int32 operation ever wraps. The mapper then chooses the largest shift that
fits the *actual* accumulator range; :meth:`SiracusaAware.integers` reports the integers in that form
(``2^k`` times the model's, the same arithmetic exactly).

:func:`export` returns the mapper's input (float64 ``GemmLayer``/``IntLIFLayer`` descriptions on the grid)
and the keyword arguments (``input_scale``, ``input_signed``, ``state_scale``, a zero calibration): ``mapper(layers,
**kwargs)`` reproduces :meth:`SiracusaAware.integers` exactly (checked by :func:`export` itself).

Example:
    >>> import jax, numpy as np
    >>> from pondlib import nn
    >>> from pondlib.devices.siracusa import SiracusaSim, mapper, quantize_input
    >>> k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    >>> net = nn.Sequential(nn.Linear(4, 6, key=k1), nn.LIF(6, tau_mem=0.02),
    ...                     nn.Linear(6, 3, key=k2), nn.LIF(3, tau_mem=0.02))
    >>> x = np.random.default_rng(0).integers(0, 4, (5, 8, 4)).astype(np.float32)
    >>> dev = siracusa_aware(net, calibration=x)
    >>> layers, kwargs = export(dev)
    >>> spec = mapper(layers, **kwargs)
    >>> out, _, rec = SiracusaSim(spec.config).evolve(quantize_input(x, spec.config), record=True)
    >>> bool(np.array_equal(np.asarray(dev(x)[0]), out))
    True
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from pondlib.devices.siracusa.limits import SiracusaLimits, get_limits
from pondlib.devices.siracusa.mapper import GemmLayer, IntLIFLayer, mapper, state_scales
from pondlib.devices.siracusa.specification import COMPARISONS, QLIF, RESET_MODES, QGemm
from pondlib.errors import GraphError, PondError, QuantizationError
from pondlib.nn.base import check_input
from pondlib.nn.combinators import linear_lif_pairs
from pondlib.nn.lif import LIF
from pondlib.nn.linear import Linear
from pondlib.nn.ste import clip_ste, round_ste
from pondlib.nn.surrogate import Surrogate
from pondlib.validate import as_float_array, check_choice, check_int, check_type

__all__ = ["siracusa_aware", "SiracusaAware", "export"]

_TOP = (1 << 31) - 1


def _pairs(net: Any, where: str) -> list[tuple[Linear, LIF]]:
    return linear_lif_pairs(
        net, where, one_synapse=True, why="the Siracusa integer LIF has one input per neuron and no recurrence"
    )


def _shift_for(alpha: np.ndarray, gain: np.ndarray, bias: np.ndarray, imax: int, s_hi: int, smax: int) -> int:
    """Largest shift <= smax with room for twice the input multiplier (bias at most the state range)."""
    for s in range(smax, -1, -1):
        im = np.rint(np.abs(gain) * 2.0**s)
        room = _TOP - (2 * s_hi + 1) * 2.0**s - (2.0 ** (s - 1) if s else 0.0)
        if room > 0 and np.all(2 * imax * np.maximum(im, 1.0) <= room) and np.all(np.rint(alpha * 2.0**s) >= 1):
            return s
    raise QuantizationError(
        "input multiplier",
        value=float(np.max(np.abs(gain))),
        limit="one that fits int32 at shift 0",
        where="siracusa_aware",
        fix="scale the weights down against the thresholds",
    )


class SiracusaAware(eqx.Module):
    """``Linear -> LIF`` pairs that run Siracusa's integer GEMM + LIF exactly (see the module docstring).

    Trainable leaves: ``weight``, ``gain``, ``alpha``, ``bias``, ``threshold`` (tuples, one array per layer).
    ``shifts``, ``in_caps``, ``state_scale`` (``s_v`` per layer), ``gain_unit`` (``g_u`` per layer),
    ``input_scale``, ``input_range``, ``state_bits``, ``reset``, ``compare``, ``dt`` are static. Record keys
    follow the simulator: ``"fc{l}/acc"``, ``"lif{l}/v"``, ``"lif{l}/spikes"``.
    """

    weight: tuple
    gain: tuple
    alpha: tuple
    bias: tuple
    threshold: tuple
    shifts: tuple = eqx.field(static=True)
    in_caps: tuple = eqx.field(static=True)
    state_scale: tuple = eqx.field(static=True)
    gain_unit: tuple = eqx.field(static=True)
    input_scale: float = eqx.field(static=True)
    input_range: tuple = eqx.field(static=True)
    state_bits: int = eqx.field(static=True)
    reset: str = eqx.field(static=True)
    compare: str = eqx.field(static=True)
    dt: float = eqx.field(static=True)
    surrogate: Surrogate = eqx.field(static=True)

    @property
    def size_in(self) -> int:
        return int(self.weight[0].shape[0])

    @property
    def size_out(self) -> int:
        return int(self.weight[-1].shape[1])

    @property
    def n_layers(self) -> int:
        return len(self.weight)

    def _grid(self, i: int) -> dict[str, jax.Array]:
        """Layer ``i``'s integers as float32 (STE): W_q, m_in, m_beta, a, theta_q, and ``r``."""
        s_hi = float((1 << (self.state_bits - 1)) - 1)
        two_s = float(2 ** self.shifts[i])
        w = self.weight[i]
        m = jax.lax.stop_gradient(jnp.max(jnp.abs(w), axis=0))
        w_q = clip_ste(round_ste(w * jnp.where(m > 0, 127.0 / jnp.where(m > 0, m, 1.0), 0.0)), -127.0, 127.0)
        thr = self.threshold[i]
        r = jnp.float32(1.0 / self.state_scale[i])
        return {
            "w": w_q,
            "thr": clip_ste(round_ste(thr * r), 1.0, s_hi),
            "in": clip_ste(
                round_ste(self.gain[i] * jnp.float32(self.gain_unit[i]) * r * two_s), 1.0, float(self.in_caps[i])
            ),
            "beta": clip_ste(round_ste(self.alpha[i] * two_s), 1.0, two_s - 1.0),
            "add": clip_ste(round_ste(self.bias[i] * r * two_s), -s_hi * two_s, s_hi * two_s),
        }

    def quantize_input(self, x: jax.Array) -> jax.Array:
        """``clip(round(x / s_in), lo, hi)`` in float32 (no gradient to the input)."""
        lo, hi = self.input_range
        return jnp.clip(jnp.round(x / jnp.float32(self.input_scale)), lo, hi)

    def __call__(self, x: Any, state: Any = None, record: bool = False):
        """``(spikes, state, record)`` for float input (T, n_in) or (B, T, n_in); ``state`` is a tuple of
        int32 membranes (B, N) per layer (None: zeros)."""
        x = check_input(x, self.size_in, "SiracusaAware")
        batched = x.ndim == 3
        xb = x if batched else x[None]
        h_f = jnp.swapaxes(self.quantize_input(xb), 0, 1)  # (T, B, K)
        h_i = h_f.astype(jnp.int32)
        lo, hi = -(1 << (self.state_bits - 1)), (1 << (self.state_bits - 1)) - 1
        B = xb.shape[0]
        new_state, rec = [], {}
        for i in range(self.n_layers):
            g = self._grid(i)
            S = self.shifts[i]
            ints = {k: jax.lax.stop_gradient(v).astype(jnp.int32) for k, v in g.items()}
            acc_i = h_i @ ints["w"]
            acc_f = h_f @ g["w"]
            acc_f = acc_f + jax.lax.stop_gradient(acc_i.astype(jnp.float32) - acc_f)
            n = g["thr"].shape[0]
            v0 = jnp.zeros((B, n), jnp.int32) if state is None else jnp.broadcast_to(state[i], (B, n)).astype(jnp.int32)
            rnd = (1 << (S - 1)) if S > 0 else 0
            two_s = float(2**S)
            sg = self.surrogate

            def step(carry, inp, g=g, ints=ints, S=S, rnd=rnd, two_s=two_s, sg=sg):
                v_i, v_f = carry
                a_i, a_f = inp
                t = v_i * ints["beta"] + a_i * ints["in"] + ints["add"] + rnd  # int32, no wrap by the caps
                v_new = jnp.clip(jnp.right_shift(t, S), lo, hi)
                u = (v_f * g["beta"] + a_f * g["in"] + g["add"]) / two_s
                u = u + jax.lax.stop_gradient(v_new.astype(jnp.float32) - u)
                z_i = (v_new >= ints["thr"]) if self.compare == ">=" else (v_new > ints["thr"])
                z_s = sg.spikes(u, g["thr"], 1.0)
                z_f = z_s + jax.lax.stop_gradient(z_i.astype(jnp.float32) - z_s)
                if self.reset == "subtract":
                    v_i2 = jnp.where(z_i, v_new - ints["thr"], v_new)
                    v_f2 = u - z_f * g["thr"]
                else:
                    v_i2 = jnp.where(z_i, 0, v_new)
                    v_f2 = u * (1.0 - z_f)
                v_f2 = v_f2 + jax.lax.stop_gradient(v_i2.astype(jnp.float32) - v_f2)
                return (v_i2, v_f2), (z_f, v_i2)

            (v_last, _), (z_f, v_rec) = jax.lax.scan(step, (v0, v0.astype(jnp.float32)), (acc_i, acc_f))
            new_state.append(v_last)
            if record:
                rec[f"fc{i}/acc"] = acc_i
                rec[f"lif{i}/v"] = v_rec
                rec[f"lif{i}/spikes"] = jax.lax.stop_gradient(z_f).astype(jnp.int32)
            h_f, h_i = z_f, jax.lax.stop_gradient(z_f).astype(jnp.int32)
        out = jnp.swapaxes(h_f, 0, 1)
        rec = {k: jnp.swapaxes(v, 0, 1) for k, v in rec.items()}
        if not batched:
            out = out[0]
            rec = {k: v[0] for k, v in rec.items()}
            new_state = [v[0] for v in new_state]
        return out, tuple(new_state), rec

    evolve = __call__

    def integers(self, limits: SiracusaLimits | str | None = None) -> list[dict[str, Any]]:
        """Per layer, the integers the mapper produces from :func:`export`: ``weight`` (K, N) int8 values,
        ``beta_mul``, ``in_mul``, ``add``, ``threshold`` (N,) and ``shift``, as int64 numpy (the model's
        integers times ``2^k`` with ``k`` the largest that still fits int32 over the actual accumulator
        range, the mapper's rule; the arithmetic is the same)."""
        lim = get_limits(limits)
        out = []
        lo_in, hi_in = self.input_range
        for i in range(self.n_layers):
            g = {k: np.asarray(v, dtype=np.float64) for k, v in self._grid(i).items()}
            w = g["w"].astype(np.int64)
            lo, hi = (lo_in, hi_in) if i == 0 else (0, 1)
            a, b = w * lo, w * hi
            imax = max(abs(int(np.minimum(a, b).sum(0).min())), abs(int(np.maximum(a, b).sum(0).max())))
            S = self.shifts[i]
            ints = {k: g[k].astype(np.int64) for k in ("beta", "in", "add")}
            s_lo = 1 << (self.state_bits - 1)
            k = 0
            for kk in range(min(lim.shift_max, 30) - S, -1, -1):
                f = 2.0**kk
                bound = s_lo * f * np.abs(ints["beta"]) + imax * f * np.abs(ints["in"]) + f * np.abs(ints["add"])
                if np.all(bound + (2.0 ** (S + kk - 1) if S + kk > 0 else 0.0) <= _TOP):
                    k = kk
                    break
            out.append(
                dict(
                    weight=w,
                    beta_mul=ints["beta"] << k,
                    in_mul=ints["in"] << k,
                    add=ints["add"] << k,
                    threshold=g["thr"].astype(np.int64),
                    shift=S + k,
                )
            )
        return out


def siracusa_aware(
    net: Any,
    *,
    calibration: Any,
    limits: SiracusaLimits | str | None = None,
    reset: str = "subtract",
    compare: str = ">=",
    state_bits: int = 16,
    surrogate: Surrogate | None = None,
) -> SiracusaAware:
    """A :class:`SiracusaAware` twin of ``net`` (not modified) that runs the Siracusa integer deployment.

    Args:
        net: ``nn.Sequential(Linear, LIF, ...)``, one synapse per LIF, no ``w_rec``; the synaptic current
            is dropped (as ``mapper(..., drop_synapse=True)``); a Linear bias is folded into the LIF bias.
        calibration: float input (B, T, n_in) or (B, n_in) that sets the input scale (``max|x| / 127``,
            or ``max x / 255`` for non-negative data, as the mapper).
        limits: Siracusa variant (shift limit). reset: ``"subtract"`` or ``"zero"``; compare: ``">="`` or
            ``">"``; state_bits: LIF state width (2..24, float32 holds the state exactly).
        surrogate: spike surrogate (default: the first LIF's).

    Returns:
        :class:`SiracusaAware`, its integers starting from the mapper's quantization of ``net`` calibrated
        on ``calibration`` (the same input scale and state scales).

    Raises:
        GraphError: ``net`` is not such a chain, or a LIF has a threshold <= 0, tau or dt not > 0.
        QuantizationError: calibration that is not finite real (B, [T,] n_in) data of the right width.
        PondError: ``reset``/``compare``/``state_bits``/``surrogate`` out of their choices or ranges.
    """
    where = "siracusa_aware"
    lim = get_limits(limits)
    check_choice(reset, "reset", RESET_MODES, where=where, error=PondError)
    check_choice(compare, "compare", COMPARISONS, where=where, error=PondError)
    state_bits = check_int(state_bits, "state_bits", lo=2, hi=24, where=where, error=PondError)
    if surrogate is not None:
        check_type(surrogate, "surrogate", Surrogate, where=where, error=PondError)
    pairs = _pairs(net, where)
    x = as_float_array(
        calibration,
        "calibration",
        where=where,
        error=QuantizationError,
        ndim=(2, 3),
        fix="pass representative finite float input of shape (B, n_in) or (B, T, n_in)",
    )
    n_in = pairs[0][0].n_in
    if x.shape[-1] != n_in or x.size == 0:
        raise QuantizationError(
            "calibration shape", value=x.shape, limit=f"(B, [T,] {n_in})", where=where, fix="pass one column per input"
        )
    signed = bool(np.min(x) < 0)
    top = float(np.max(np.abs(x))) if signed else float(np.max(x))
    top = top if top > 0 else 1e-30
    s_in = top / (127.0 if signed else 255.0)
    in_range = (-128, 127) if signed else (0, 255)
    s_hi = (1 << (state_bits - 1)) - 1
    smax = min(lim.shift_max, 30)
    params: dict[str, list] = {k: [] for k in ("weight", "gain", "alpha", "bias", "threshold")}
    shifts, caps, plain = [], [], []
    s_cur, x_abs = s_in, max(abs(in_range[0]), abs(in_range[1]))
    for i, (lin, lif) in enumerate(pairs):
        lw = f"{where}: layers {2 * i}, {2 * i + 1}"
        w = as_float_array(np.asarray(lin.weight), "weight", where=lw, error=GraphError)
        thr = np.broadcast_to(
            as_float_array(np.asarray(lif.threshold), "threshold", where=lw, error=GraphError), (lif.n_neurons,)
        )
        if np.any(thr <= 0):
            raise GraphError("threshold", value=float(thr.min()), limit="> 0", where=lw, fix="pass positive thresholds")
        tau = np.broadcast_to(
            as_float_array(np.asarray(lif.tau_mem), "tau_mem", where=lw, error=GraphError), (lif.n_neurons,)
        )
        if np.any(tau <= 0) or not lif.dt > 0:
            raise GraphError("tau_mem", value=float(tau.min()), limit="> 0 s", where=lw, fix="pass positive tau_mem")
        bias = np.broadcast_to(np.asarray(lif.bias, dtype=np.float64), (lif.n_neurons,)).copy()
        if lin.bias is not None:
            bias = bias + np.asarray(lin.bias, dtype=np.float64)
        s_w = np.max(np.abs(w), axis=0) / 127.0
        gain = s_cur * np.where(s_w > 0, s_w, 1e-30)
        alpha = np.exp(-lif.dt / tau)
        for key, val in (("weight", w), ("gain", gain), ("alpha", alpha), ("bias", bias), ("threshold", thr)):
            params[key].append(val)
        plain.append(GemmLayer(f"fc{i}", w))
        plain.append(IntLIFLayer(f"lif{i}", alpha, thr, bias, state_bits=state_bits, reset=reset, compare=compare))
        s_cur = 1.0
    # the mapper's own state scales for the plain network (Linear bias folded into the LIF's, as above)
    scales = state_scales(plain, x)
    s_v = tuple(scales[f"lif{i}"] for i in range(len(pairs)))
    for i, (gain, alpha, bias) in enumerate(zip(params["gain"], params["alpha"], params["bias"])):
        r = 1.0 / s_v[i]
        imax = 127 * params["weight"][i].shape[0] * (x_abs if i == 0 else 1)
        S = _shift_for(alpha, gain * r, bias * r, imax, s_hi, smax)
        caps.append(int((_TOP - (2 * s_hi + 1) * 2**S - (2 ** (S - 1) if S else 0)) // imax))
        shifts.append(S)
    units = tuple(float(np.max(g)) for g in params["gain"])
    params["gain"] = [g / u for g, u in zip(params["gain"], units)]
    params = {k: [jnp.asarray(v, jnp.float32) for v in vals] for k, vals in params.items()}
    return SiracusaAware(
        weight=tuple(params["weight"]),
        gain=tuple(params["gain"]),
        alpha=tuple(params["alpha"]),
        bias=tuple(params["bias"]),
        threshold=tuple(params["threshold"]),
        shifts=tuple(shifts),
        in_caps=tuple(caps),
        state_scale=s_v,
        gain_unit=units,
        input_scale=float(s_in),
        input_range=in_range,
        state_bits=state_bits,
        reset=reset,
        compare=compare,
        dt=float(pairs[0][1].dt),
        surrogate=surrogate if surrogate is not None else pairs[0][1].surrogate,
    )


def export(model: Any, limits: SiracusaLimits | str | None = None) -> tuple[list, dict[str, Any]]:
    r"""The mapper's input for a trained :class:`SiracusaAware`: ``(layers, kwargs)`` such that
    ``mapper(layers, **kwargs)`` reproduces :meth:`SiracusaAware.integers` exactly (checked here).

    ``layers``: ``GemmLayer("fc{l}", W_q c)`` (no bias) and ``IntLIFLayer("lif{l}", alpha = m_beta / 2^S,
    threshold = theta_q s_v, bias = a s_v / 2^S)`` in float64, with ``s_v`` the model's state scale and
    ``c_o = m_{in,o} s_v / (2^S s_{in})`` (``s_in`` = 1 after a LIF). ``kwargs``: ``state_scale``
    (``{"lif{l}": s_v}``: the mapper takes the model's state scales instead of calibrating them),
    ``input_scale``, ``input_signed`` and ``calibration`` (one all-zero step; with both scales pinned it
    sets nothing).

    Raises:
        PondError: ``model`` is not a SiracusaAware; QuantizationError: the mapper would not reproduce
            the integers (a diverged, non-finite training); the message names the layer.
    """
    check_type(model, "model", SiracusaAware, where="siracusa export", error=PondError, fix="pass siracusa_aware(...)")
    layers: list = []
    for i in range(model.n_layers):
        g = {k: np.asarray(v, dtype=np.float64) for k, v in model._grid(i).items()}
        two_s = 2.0 ** model.shifts[i]
        s_v = float(model.state_scale[i])
        s_cur = model.input_scale if i == 0 else 1.0
        c = g["in"] * s_v / (two_s * s_cur)
        layers.append(GemmLayer(f"fc{i}", g["w"] * c))
        layers.append(
            IntLIFLayer(
                f"lif{i}",
                alpha=g["beta"] / two_s,
                threshold=g["thr"] * s_v,
                bias=g["add"] * s_v / two_s,
                state_bits=model.state_bits,
                reset=model.reset,
                compare=model.compare,
            )
        )
    kwargs = dict(
        calibration=np.zeros((1, 1, model.size_in)),
        input_scale=model.input_scale,
        input_signed=model.input_range[0] < 0,
        state_scale={f"lif{i}": float(model.state_scale[i]) for i in range(model.n_layers)},
    )
    spec = mapper(layers, limits, **kwargs)
    want = model.integers(limits)
    qs = [q for q in spec.config.layers]
    for i, ref in enumerate(want):
        gemm, lif = qs[2 * i], qs[2 * i + 1]
        if not (isinstance(gemm, QGemm) and isinstance(lif, QLIF)):  # pragma: no cover - the mapper's contract
            raise QuantizationError("mapped layers", value=type(gemm).__name__, limit="QGemm, QLIF", where="export")
        got = dict(
            weight=gemm.weight,
            beta_mul=np.broadcast_to(lif.beta_mul, ref["beta_mul"].shape),
            in_mul=np.broadcast_to(lif.in_mul, ref["in_mul"].shape),
            add=np.broadcast_to(lif.add, ref["add"].shape),
            threshold=lif.threshold,
            shift=lif.shift,
        )
        bad = [k for k in ref if not np.array_equal(np.asarray(got[k]), np.asarray(ref[k]))]
        if bad:
            raise QuantizationError(
                "exported integers",
                value=f"{', '.join(bad)} differ after mapping",
                limit="the model's integers exactly",
                where=f"siracusa export, layer {i}",
                fix="check the training for NaN or runaway parameters (gain, bias beyond the int32 range)",
            )
    return layers, kwargs
