r"""Device-aware training for SpiNNaker2 (SNN path): a float network that runs the chip's numbers.

:func:`spinnaker2_aware` maps a plain ``nn.Sequential(Linear, LIF, Linear, LIF, ...)`` with the
SpiNNaker2 :func:`~pondlib.devices.spinnaker2.mapper` and returns a NEW ``Sequential`` of
:class:`SpiNNaker2LIF` layers (one per ``Linear -> LIF`` pair) whose forward pass is the simulator's
(:class:`~pondlib.devices.spinnaker2.sim.SpiNNaker2Sim`) arithmetic, written in float32 JAX with
straight-through estimators (STE) so that :func:`jax.grad` reaches the weights, thresholds and offsets:

==============================  ============================================================================
chip effect                     in the device-aware layer (``W``, ``theta``, ``b`` in chip units)
==============================  ============================================================================
synapse word (4 or 7 bits)      :math:`W_{int} = \mathrm{clip}(\mathrm{round}(W), -w_m, w_m)` (STE), with
                                :math:`w_m` = 15 (``lif``, ``lif_curr_exp``) or 127 (``*_no_delay``)
integer synaptic input          :math:`E[t] = \sum_d x[t-1-d] \max(W_{int,d}, 0)`,
                                :math:`H[t] = \sum_d x[t-1-d] \max(-W_{int,d}, 0)` (exact integers)
hop delay and synapse delays    every hop (the input's too) arrives one tick late, plus its delay ``d``
float32 neuron update           ``lif_curr_exp``: :math:`i_e \leftarrow \beta i_e + E`,
                                :math:`i_h \leftarrow \beta i_h + H`, :math:`I = i_e - i_h`; ``lif``:
                                :math:`I = E - H`; then :math:`v \leftarrow (\alpha v + b) + I` (order and
                                fused multiply-add as :class:`~pondlib.devices.spinnaker2.LIFOptions`),
                                every operation rounded to float32 in the simulator's order
one spike per tick              :math:`s = [v > \theta]` (or ``>=``), surrogate gradient; reset
                                :math:`v \leftarrow v - s\,\theta` (or to ``v_reset = 0``)
==============================  ============================================================================

Shapes: ``weight`` and ``delays`` (N_in, N), ``threshold`` / ``i_offset`` (N,), input counts (T, N_in) or
(B, T, N_in) (whole numbers of spikes per tick); units: chip units (the mapper's weight scale ``s`` times
float units), ticks of ``dt`` seconds. The decays ``alpha = f32(exp(-dt/tau_mem))`` and
``beta = f32(exp(-dt/tau_syn))`` are the mapper's and are not trained (constants for autodiff).

At construction the layers hold exactly what the mapper would put on the chip (the latent weight is
``s W beta``, whose rounding is the mapper's ``W_int``), so the forward pass equals the simulator of
``mapper(net)`` from the first step. :func:`export_spinnaker2` writes the trained layers back as a plain
network in float units (weights ``W_int / (c beta)``, threshold ``theta / c``, bias ``b / c`` with ``c``
the power of two nearest the mapper's scale, so the division is exact) together with the ``mapper``
arguments (``neuron_model``, ``delays``, ``weight_scale = c``, ``options``): ``mapper(net, **kwargs)``
gives back every trained integer weight, float32 threshold and offset bit for bit (``export`` checks it).

Float32 arithmetic. XLA contracts ``a * b + c`` into one fused multiply-add on CPU (GPU backends may too), which the
simulator's default (two roundings) does not do; every product here passes through a select XLA and LLVM
cannot see through (:func:`mul_f32`), so it is rounded on its own. The ``fma=True`` option is emulated
exactly in float32 (:func:`fma_f32`: Dekker's exact product, TwoSum and one rounding to odd, Boldo and
Melquiond 2008), the simulator's ``fmaf``. The residual against the simulator, stated and tested: XLA on
CPU flushes subnormal float32 (below ``1.2e-38``) to zero where numpy keeps them, so a membrane or
current that decays below ``1.2e-38`` (hundreds of silent ticks) may differ there in its last bits;
no spike depends on it unless a threshold is that small. The spike, membrane, current and input records
of the test networks are equal bit for bit.

Example:
    >>> import jax, numpy as np
    >>> from pondlib import nn
    >>> from pondlib.devices.spinnaker2 import SpiNNaker2Sim, config_from_specification
    >>> k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    >>> net = nn.Sequential(nn.Linear(8, 6, key=k1), nn.LIF(6), nn.Linear(6, 3, key=k2), nn.LIF(3))
    >>> aware = spinnaker2_aware(net, neuron_model="lif_curr_exp_no_delay")
    >>> [type(m).__name__ for m in aware.layers], aware.layers[0].w_max
    (['SpiNNaker2LIF', 'SpiNNaker2LIF'], 127)
    >>> x = np.random.default_rng(0).integers(0, 2, size=(20, 8))
    >>> exp = export_spinnaker2(aware)
    >>> config, ok, _ = config_from_specification(exp.spec)
    >>> out_chip = SpiNNaker2Sim.from_config(config).evolve(x)[0]
    >>> bool(np.array_equal(np.asarray(aware(x)[0]), out_chip))
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from pondlib.devices.spinnaker2.limits import SpiNNaker2Limits
from pondlib.devices.spinnaker2.mapper import mapper
from pondlib.devices.spinnaker2.specification import NEURON_MODELS, PARAM_MAX, LIFOptions, Specification
from pondlib.errors import ConfigError, GraphError, PondError
from pondlib.graph import GraphHolder, connect_modules
from pondlib.nn.base import check_batch_shape, evolve_time_major, scan_steps
from pondlib.nn.combinators import Sequential, linear_lif_pairs
from pondlib.nn.lif import LIF
from pondlib.nn.linear import Linear
from pondlib.nn.ste import clip_ste, round_ste
from pondlib.nn.surrogate import Surrogate
from pondlib.validate import check_choice, check_type

__all__ = [
    "spinnaker2_aware",
    "export_spinnaker2",
    "SpiNNaker2Export",
    "chip_unit_scale",
    "SpiNNaker2LIF",
    "SpiNNaker2LIFState",
    "mul_f32",
    "fma_f32",
]

#: Smallest chip-unit threshold the forward pass uses (a power of two; the chip needs one > 0).
THRESHOLD_MIN = 2.0**-16
_WHERE = "spinnaker2_aware"


# -- float32 arithmetic as the M4F does it -------------------------------------------------------------
def mul_f32(a: jax.Array, b: jax.Array) -> jax.Array:
    """``a * b`` rounded to float32 on its own: never fused with a following add by XLA/LLVM.

    The product goes through ``where(p != p, 0, p)`` (a NaN test the compiler cannot decide), which
    forbids contracting it into an FMA; the value and the gradient are those of ``a * b``.

    Example:
        >>> a = jnp.float32(1 + 2**-12)
        >>> float(jax.jit(lambda a: mul_f32(a, a) - 1)(a)) == float(np.float32(a) * np.float32(a) - 1)
        True
    """
    p = a * b
    return jnp.where(p != p, jnp.zeros_like(p), p)


def _two_sum(a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
    s = a + b
    bp = s - a
    return s, (a - (s - bp)) + (b - bp)


def _split(a: jax.Array) -> tuple[jax.Array, jax.Array]:
    t = mul_f32(jnp.float32(4097.0), a)  # Veltkamp: 2^12 + 1 splits 24 bits into 12 + 12
    hi = t - (t - a)
    return hi, a - hi


def fma_f32(a: jax.Array, b: jax.Array, c: jax.Array) -> jax.Array:
    r"""``fmaf(a, b, c)``: :math:`a b + c` with ONE rounding to float32, in float32 operations only.

    :math:`u_h + u_l = a b` exactly (Dekker), :math:`t_h + t_l = c + u_h` (TwoSum),
    :math:`v = \mathrm{RO}(t_l + u_l)` (rounded to odd), result :math:`\mathrm{RN}(t_h + v)`: correctly
    rounded for normal float32 operands (Boldo & Melquiond, IEEE TC 2008). Gradient: that of ``a b + c``.

    Example (the product's low bits survive, as in C ``fmaf``):
        >>> a = jnp.float32(1 + 2**-12)
        >>> float(fma_f32(a, a, jnp.float32(-1.0))) == 2**-11 + 2**-24
        True
    """
    a, b, c = (jnp.asarray(v, jnp.float32) for v in (a, b, c))
    a, b, c = jnp.broadcast_arrays(a, b, c)
    plain = a * b + c
    ac, bc, cc = (jax.lax.stop_gradient(v) for v in (a, b, c))
    uh = mul_f32(ac, bc)
    (ah, al), (bh, bl) = _split(ac), _split(bc)
    ul = ((mul_f32(ah, bh) - uh) + mul_f32(ah, bl) + mul_f32(al, bh)) + mul_f32(al, bl)
    th, tl = _two_sum(cc, uh)
    s, e = _two_sum(tl, ul)
    even = (jax.lax.bitcast_convert_type(s, jnp.int32) & 1) == 0
    odd = jnp.where((e != 0) & even, jnp.nextafter(s, jnp.where(e > 0, jnp.inf, -jnp.inf)), s)
    exact = th + odd
    return plain + jax.lax.stop_gradient(exact - plain)


# -- the layer --------------------------------------------------------------------------------------
class SpiNNaker2LIFState(NamedTuple):
    """State: ``v``, ``i_exc``, ``i_inh`` (*b, N) float32 chip units; ``history`` (K, *b, N_in): the last
    ``K = max_delay + 1`` input frames still in flight (spikes of tick ``t`` arrive at ``t + 1 + d``)."""

    v: jax.Array
    i_exc: jax.Array
    i_inh: jax.Array
    history: jax.Array


class SpiNNaker2LIF(eqx.Module):
    """Synapse words into ``N`` SpiNNaker2 LIF neurons (equations in the module docstring).

    Built by :func:`spinnaker2_aware` from the mapper's specification. Trainable: ``weight`` (N_in, N)
    (continuous, rounded and clipped to the word by STE), ``threshold`` and ``i_offset`` (N,) (chip
    units, clipped to ``[2^-16, 2^64]`` and ``[-2^64, 2^64]``). Constants (``stop_gradient``):
    ``alpha``, ``exc_decay``, ``inh_decay`` (N,) and ``delays`` (N_in, N) whole ticks.

    Record (``record=True``), per tick: ``v`` (membrane after reset), ``i_syn`` (the current ``I``),
    ``input`` (``E - H``) and ``spikes`` (0/1), as the simulator records them.
    """

    weight: jax.Array
    threshold: jax.Array
    i_offset: jax.Array
    alpha: jax.Array
    exc_decay: jax.Array
    inh_decay: jax.Array
    delays: jax.Array
    n_in: int = eqx.field(static=True)
    n_neurons: int = eqx.field(static=True)
    neuron_model: str = eqx.field(static=True)
    w_max: int = eqx.field(static=True)
    slots: int = eqx.field(static=True)
    options: LIFOptions = eqx.field(static=True)
    surrogate: Surrogate = eqx.field(static=True)
    export_scale: float = eqx.field(static=True)
    dt: float = eqx.field(static=True)
    tau_mem: tuple = eqx.field(static=True)
    tau_syn: tuple = eqx.field(static=True)

    def __init__(self, *, weight, threshold, i_offset, alpha, exc_decay, inh_decay, delays, **static: Any) -> None:
        f32 = jnp.float32
        self.weight = jnp.asarray(weight, f32)
        self.threshold = jnp.asarray(threshold, f32)
        self.i_offset = jnp.asarray(i_offset, f32)
        self.alpha = jnp.asarray(alpha, f32)
        self.exc_decay = jnp.asarray(exc_decay, f32)
        self.inh_decay = jnp.asarray(inh_decay, f32)
        self.delays = jnp.asarray(delays, f32)
        self.n_in, self.n_neurons = (int(n) for n in self.weight.shape)
        for key, value in static.items():
            setattr(self, key, value)

    @property
    def size_in(self) -> int:
        """Input channels."""
        return self.n_in

    @property
    def size_out(self) -> int:
        """Neurons."""
        return self.n_neurons

    def init_state(self, batch_shape: tuple[int, ...] = ()) -> SpiNNaker2LIFState:
        """Zero state (nothing in flight) for ``batch_shape`` samples."""
        b = check_batch_shape(batch_shape, "SpiNNaker2LIF")
        z = jnp.zeros(b + (self.n_neurons,), jnp.float32)
        return SpiNNaker2LIFState(z, z, z, jnp.zeros((self.slots,) + b + (self.n_in,), jnp.float32))

    def grid(self) -> dict[str, jax.Array]:
        """The chip parameters the forward pass uses (STE): ``weight`` (N_in, N) integers in
        ``[-w_max, w_max]``, ``threshold``, ``i_offset`` (N,) float32 chip units."""
        return {
            "weight": clip_ste(round_ste(self.weight), -float(self.w_max), float(self.w_max)),
            "threshold": clip_ste(self.threshold, THRESHOLD_MIN, PARAM_MAX),
            "i_offset": clip_ste(self.i_offset, -PARAM_MAX, PARAM_MAX),
        }

    def evolve_tm(self, x: jax.Array, state: SpiNNaker2LIFState, record: bool):
        """Time-major evolution: counts ``x`` (T, *b, N_in) -> spikes (T, *b, N)."""
        g = self.grid()
        T, K = x.shape[0], self.slots
        xe = jnp.concatenate([state.history, x.astype(jnp.float32)], axis=0)  # input of tick t: xe[K + t]
        delays = jax.lax.stop_gradient(self.delays)
        hp = jax.lax.Precision.HIGHEST
        exc = inh = jnp.zeros(x.shape[:-1] + (self.n_neurons,), jnp.float32)
        for d in range(K):  # a spike of tick t through delay d is part of the input of tick t + 1 + d
            w = jnp.where(delays == d, g["weight"], 0.0)
            xd = xe[K - 1 - d : K - 1 - d + T]
            exc = exc + jnp.matmul(xd, jnp.maximum(w, 0.0), precision=hp)  # integers: exact below 2^24
            inh = inh + jnp.matmul(xd, jnp.maximum(-w, 0.0), precision=hp)
        alpha, be, bh = (jax.lax.stop_gradient(a) for a in (self.alpha, self.exc_decay, self.inh_decay))
        thr, off, opt, sg = g["threshold"], g["i_offset"], self.options, self.surrogate
        has_current = NEURON_MODELS[self.neuron_model].has_current

        def decay_add(a: jax.Array, v: jax.Array, c: jax.Array) -> jax.Array:
            return fma_f32(a, v, c) if opt.fma else mul_f32(a, v) + c

        def step(st: tuple, inp: tuple):
            v, ie, ih = st
            e, h = inp
            if has_current:
                ie, ih = decay_add(be, ie, e), decay_add(bh, ih, h)
                cur = ie - ih
            else:
                cur = e - h  # exact integer difference
            first, second = (off, cur) if opt.order == "offset_first" else (cur, off)
            v = decay_add(alpha, v, first) + second
            exact = (v > thr) if opt.compare == ">" else (v >= thr)
            soft = sg.spikes(v, thr, 1.0)
            spk = soft + jax.lax.stop_gradient(exact.astype(jnp.float32) - soft)  # exactly 0 or 1
            v = v - spk * thr if opt.reset == "subtract" else v * (1.0 - spk)  # v_reset = 0
            return (v, ie, ih), (spk, v, cur, e - h)

        (v, ie, ih), (spikes, vr, cr, ir) = scan_steps(step, (state.v, state.i_exc, state.i_inh), (exc, inh))
        new = SpiNNaker2LIFState(v, ie, ih, xe[T:])
        if not record:
            return spikes, new, {}
        return spikes, new, {"v": vr, "i_syn": cr, "input": ir, "spikes": spikes}

    def __call__(self, x: Any, state: SpiNNaker2LIFState | None = None, record: bool = False):
        """``(spikes, state, record)`` for counts (T, N_in) or (B, T, N_in)."""
        return evolve_time_major(self, x, state, record)

    evolve = __call__

    # -- export -----------------------------------------------------------------------------------
    def to_float(self) -> tuple[Linear, LIF, np.ndarray]:
        """The plain ``(Linear, LIF)`` pair in float units (chip units / ``export_scale``; weights
        unfolded by ``beta`` for ``lif_curr_exp``), one spike per step, and the integer delays."""
        g = {k: np.asarray(v, np.float64) for k, v in self.grid().items()}
        c = self.export_scale
        tau_syn = np.asarray(self.tau_syn, np.float32)
        beta = np.exp(-self.dt / tau_syn.astype(np.float64))  # what the mapper folds with
        fold = beta if NEURON_MODELS[self.neuron_model].has_current else np.ones_like(beta)
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(g["weight"] == 0, 0.0, g["weight"] / (c * fold[None, :]))
        lin = Linear(self.n_in, self.n_neurons, weight=w.astype(np.float32))
        lif = LIF(
            self.n_neurons,
            tau_mem=np.asarray(self.tau_mem, np.float32),
            tau_syn=tau_syn,
            threshold=(g["threshold"] / c).astype(np.float32),
            bias=(g["i_offset"] / c).astype(np.float32),
            dt=self.dt,
            max_spikes_per_dt=1,
            surrogate=self.surrogate,
        )
        return lin, lif, np.rint(np.asarray(self.delays)).astype(np.int64)

    def as_graph(self, name: str | None = None) -> GraphHolder:
        """``LinearWeights (name/w_in) -> LIFNeurons (name)`` of :meth:`to_float` (map it with the
        arguments :func:`export_spinnaker2` returns: the weight scale and delays are not in the graph)."""
        name = name or "SpiNNaker2LIF"
        lin, lif, _ = self.to_float()
        gl, gn = lin.as_graph(f"{name}/w_in"), lif.as_graph(name)
        connect_modules(gl, gn)
        return GraphHolder(list(gl.input_nodes), list(gn.output_nodes), name, self)


# -- transform and export ------------------------------------------------------------------------------
def _pairs(net: Any) -> list[tuple[Linear, LIF]]:
    return linear_lif_pairs(
        net,
        _WHERE,
        one_synapse=True,
        why="use nn.LIF(N) without w_rec (SpiNNaker2 splits exc/inh by the weight's sign)",
    )


def spinnaker2_aware(
    net: Any,
    *,
    neuron_model: str = "lif_curr_exp_no_delay",
    limits: SpiNNaker2Limits | str | None = None,
    delays: dict[str, Any] | None = None,
    options: LIFOptions | None = None,
    surrogate: Surrogate | None = None,
) -> Sequential:
    """A new ``Sequential`` of :class:`SpiNNaker2LIF` that runs the SpiNNaker2 simulator's numerics.

    Args:
        net: ``nn.Sequential(Linear, LIF, ...)`` (not modified): one synapse per LIF, no ``w_rec``,
            Linear without bias, one ``dt`` (the tick). Spike caps above 1 are dropped (one per tick).
        neuron_model: one of ``NEURON_MODELS`` (default ``"lif_curr_exp_no_delay"``, the demo's).
        limits: SpiNNaker2 limits or a short name (default one chip).
        delays: Linear layer name (``"0_Linear"``, ...) -> delays in ticks, as for the mapper.
        options: the float32 update's :class:`~pondlib.devices.spinnaker2.LIFOptions` (default).
        surrogate: spike surrogate (default: each LIF's own).

    Returns:
        ``Sequential`` of ``SpiNNaker2LIF`` equal, at construction, to the mapped network on the chip.

    Raises:
        GraphError: ``net`` not a chain of ``Linear -> LIF`` pairs, or a LIF with several synapses or
            recurrent weights.
        ConfigError: ``neuron_model`` unknown, ``options`` not valid ``LIFOptions``, ``surrogate`` not a
            Surrogate, ``delays`` not a dict.
        ConstraintError: every design rule the mapper finds broken (bias, NaN weights, delays out of
            range, too many neurons ...), all together.
    """
    check_choice(neuron_model, "neuron_model", tuple(NEURON_MODELS), where=_WHERE, error=ConfigError)
    opts = LIFOptions() if options is None else options
    check_type(opts, "options", LIFOptions, where=_WHERE, error=ConfigError, fix="pass a LIFOptions")
    if opts.problems():
        raise ConfigError(problems=opts.problems(), where=_WHERE)
    if surrogate is not None:
        check_type(surrogate, "surrogate", Surrogate, where=_WHERE, error=ConfigError, fix="pass a Surrogate")
    if delays is not None:
        check_type(delays, "delays", dict, where=_WHERE, error=ConfigError, fix="pass {'0_Linear': ticks, ...}")
    pairs = _pairs(net)
    spec = mapper(net, limits, neuron_model=neuron_model, delays=delays, options=opts)
    model = NEURON_MODELS[neuron_model]
    w_max = (1 << model.word.weight_bits) - 1
    layers = []
    for (_, lif), pop in zip(pairs, spec.populations):
        (proj,) = spec.projections_into(pop.name)
        q = proj.weights.astype(np.float64)
        frac = np.clip(proj.weights_float * pop.scale - q, -0.49, 0.49)  # rounds back to exactly q
        layers.append(
            SpiNNaker2LIF(
                weight=q + frac,
                threshold=pop.threshold,
                i_offset=pop.i_offset,
                alpha=pop.alpha,
                exc_decay=pop.exc_decay,
                inh_decay=pop.inh_decay,
                delays=proj.delays,
                neuron_model=neuron_model,
                w_max=w_max,
                slots=model.word.max_delay + 1,
                options=opts,
                surrogate=surrogate if surrogate is not None else lif.surrogate,
                export_scale=float(2.0 ** round(math.log2(pop.scale))),
                dt=float(spec.tick_s),
                tau_mem=tuple(np.asarray(lif.tau_mem, np.float32).reshape(-1).tolist()),
                tau_syn=tuple(np.asarray(lif.tau_syn, np.float32).reshape(-1).tolist()),
            )
        )
    return Sequential(*layers)


def _check_aware(aware: Any, what: str, where: str, fix: str) -> None:
    """Raise :class:`GraphError` unless ``aware`` is a ``Sequential`` of :class:`SpiNNaker2LIF`."""
    if not isinstance(aware, Sequential) or not all(isinstance(m, SpiNNaker2LIF) for m in aware.layers):
        raise GraphError(what, value=type(aware).__name__, limit="a Sequential of SpiNNaker2LIF", where=where, fix=fix)


def chip_unit_scale(aware: Any) -> float:
    r"""The chip units per float unit of a device-aware network: the geometric mean over its layers of the
    export scale :math:`c` (a power of two near the mapper's weight scale),
    :math:`\exp(\tfrac1L \sum_l \log c_l)`.

    Its parameters are held in chip units, so a learning rate chosen for the float network should be
    multiplied by this to take steps of the same relative size (``pond demo`` does).

    Raises:
        GraphError: ``aware`` is not a ``Sequential`` of :class:`SpiNNaker2LIF`.
    """
    _check_aware(aware, "chip_unit_scale input", "chip_unit_scale", "pass the output of spinnaker2_aware")
    return float(np.exp(np.mean([math.log(m.export_scale) for m in aware.layers])))


@dataclass(frozen=True, eq=False)
class SpiNNaker2Export:
    """What :func:`export_spinnaker2` returns.

    Attributes:
        net: the plain ``nn.Sequential(Linear, LIF, ...)`` in float units (one spike per step).
        mapper_kwargs: ``neuron_model``, ``delays``, ``weight_scale``, ``options`` for the mapper.
        spec: ``mapper(net, limits, **mapper_kwargs)``, checked equal to the trained parameters.
    """

    net: Sequential
    mapper_kwargs: dict[str, Any]
    spec: Specification


def export_spinnaker2(aware: Any, limits: SpiNNaker2Limits | str | None = None) -> SpiNNaker2Export:
    """The plain network of a (trained) device-aware one, its mapper arguments and its specification.

    ``mapper(exp.net, limits, **exp.mapper_kwargs)`` reproduces the trained integer weights, delays and
    float32 threshold / offset / decays exactly; this function maps it and checks every value.

    Raises:
        GraphError: ``aware`` is not a ``Sequential`` of :class:`SpiNNaker2LIF`.
        PondError: the mapping does not reproduce the trained parameters (e.g. a diverged, NaN training).
        ConstraintError: the trained network breaks a design rule of the mapper.
    """
    _check_aware(aware, "export input", "export_spinnaker2", "pass the output of spinnaker2_aware (after training)")
    mods: list[Any] = []
    delays, scales = {}, {}
    for i, m in enumerate(aware.layers):
        lin, lif, d = m.to_float()
        mods += [lin, lif]
        delays[f"{2 * i}_Linear"] = d
        scales[f"{2 * i + 1}_LIF"] = m.export_scale
    first = aware.layers[0]
    kwargs = {"neuron_model": first.neuron_model, "delays": delays, "weight_scale": scales, "options": first.options}
    net = Sequential(*mods)
    spec = mapper(net, limits, **kwargs)
    for m, pop in zip(aware.layers, spec.populations):
        g = m.grid()
        (proj,) = spec.projections_into(pop.name)
        checks = (
            ("weights", proj.weights, np.asarray(g["weight"])),
            ("threshold", pop.threshold, np.asarray(g["threshold"])),
            ("i_offset", pop.i_offset, np.asarray(g["i_offset"])),
            ("alpha", pop.alpha, np.asarray(m.alpha)),
            ("exc_decay", pop.exc_decay, np.asarray(m.exc_decay)),
            ("delays", proj.delays, np.asarray(m.delays)),
        )
        for name, got, want in checks:
            if not np.array_equal(got, want):
                raise PondError(
                    f"{pop.name} {name}",
                    value=f"{int(np.sum(got != want))} value(s) differ after mapping",
                    limit="the trained values exactly",
                    where="export_spinnaker2",
                    fix="check the training for NaN or parameters beyond float32",
                )
    return SpiNNaker2Export(net, kwargs, spec)
