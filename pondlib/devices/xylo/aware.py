r"""Hardware-aware training for Xylo: make a float network follow the chip, and back.

:func:`xylo_aware` turns a ``pondlib.nn`` network ``Linear -> LIF -> Linear -> LIF ...`` (a
:class:`~pondlib.nn.Sequential`, the topology the Xylo mapper accepts without aliases) into a NEW
``Sequential`` of :class:`~pondlib.devices.xylo.aware_lif.XyloLIF` layers, one per ``Linear -> LIF`` pair, that
runs the chip's integer dynamics with straight-through gradients:

==========================  ===========================================================================
chip effect                 in the hardware-aware model
==========================  ===========================================================================
input clip (15 events)      the first layer clips its input counts at ``limits.max_input_count``
hop delays                  every later layer reads its input one step late (hidden->hidden and
                            hidden->output hops, ``docs/XYLO.md`` steps 2-3); input->hidden has none
spike caps                  ``limits.max_spikes_hidden`` (31) hidden, ``limits.max_spikes_output`` (1) last
bit-shift decay             ``alpha = 1 - 2^{-round(dash)}``, ``dash`` learned through a rounding STE
int8 weights, int16 params  fake-quantized on the chosen quantizer's grid (STE), states in chip units
16-bit saturation           ``sat16`` of synaptic state, membrane and its increment (clip with STE)
==========================  ===========================================================================

The decay shifts start at the mapper's unrounded ``dash = log2(tau / dt)`` of each LIF, so the model
starts from exactly what the plain mapping would put on the chip. After training, ``net.as_graph()``
exports plain ``LinearWeights``/``LIFNeurons`` on the grid with ``tau = -dt / ln(1 - 2^{-d})``: the
ordinary :func:`~pondlib.devices.xylo.mapper` and quantizer reproduce the trained integers and dashes,
and :func:`XyloSim <pondlib.devices.xylo.sim.XyloSim>` then produces the model's spikes (the test suite
checks spike equality). :func:`to_float` returns the plain ``Linear``/``LIF`` network (same grid
parameters and decays, caps kept, no delays, no integer rounding).

Example:
    >>> import jax, numpy as np
    >>> from pondlib import nn
    >>> from pondlib.devices.xylo import mapper, XYLO_AUDIO3
    >>> k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    >>> net = nn.Sequential(nn.Linear(16, 8, key=k1), nn.LIF(8, tau_mem=0.02, tau_syn=0.002),
    ...                     nn.Linear(8, 3, key=k2), nn.LIF(3, tau_mem=0.02, tau_syn=0.002))
    >>> hw = xylo_aware(net, XYLO_AUDIO3)
    >>> [type(m).__name__ for m in hw.layers], [m.delay_in for m in hw.layers]
    (['XyloLIF', 'XyloLIF'], [False, True])
    >>> hw.layers[0].max_spikes, hw.layers[1].max_spikes
    (31.0, 1.0)
    >>> spec = mapper(hw, XYLO_AUDIO3)
    >>> np.unique(np.round(spec.dash_mem)).tolist(), np.unique(np.round(spec.dash_syn)).tolist()
    ([4.0], [1.0])
    >>> type(to_float(hw).layers[1]).__name__
    'LIF'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pondlib.devices.core.rules import raise_violations
from pondlib.devices.xylo.aware_lif import XyloLIF, dash_for_tau
from pondlib.devices.xylo.limits import XYLO_AUDIO3, XyloLimits, get_limits
from pondlib.errors import GraphError, PondError, Violation
from pondlib.nn.combinators import Sequential, linear_lif_pairs
from pondlib.nn.lif import LIF
from pondlib.nn.linear import Linear
from pondlib.nn.surrogate import Surrogate
from pondlib.validate import as_float_array, as_int_array, check_bool, check_choice, check_float

__all__ = ["xylo_aware", "to_float", "hardware_dashes"]


def _pairs(net: Any) -> list[tuple[Linear, LIF]]:
    """The network's Linear -> LIF pairs, each checked for what the chip cannot run (a bias, non-finite
    parameters, non-positive time constants)."""
    pairs = []
    for n, (lin, lif) in enumerate(linear_lif_pairs(net, "xylo_aware")):
        i = 2 * n
        if lin.bias is not None and bool(np.any(np.asarray(lin.bias) != 0)):
            raise GraphError(
                "Linear bias",
                value=f"{i}_Linear has a non-zero bias",
                limit="no bias",
                where="xylo_aware",
                fix="Xylo weights carry no bias: move it to the LIF bias",
            )
        where = f"xylo_aware: layers {i}, {i + 1}"
        for owner, name in ((lin, "weight"), (lif, "threshold"), (lif, "bias"), (lif, "w_rec")):
            value = getattr(owner, name, None)
            if value is not None:
                as_float_array(np.asarray(value), name, where=where, error=GraphError, allow_empty=True)
        for name in ("tau_mem", "tau_syn"):
            tau = as_float_array(np.asarray(getattr(lif, name)), name, where=where, error=GraphError, allow_empty=True)
            if np.any(tau <= 0):
                raise GraphError(
                    name,
                    value=float(tau[tau <= 0].ravel()[0]),
                    limit="> 0 s",
                    where=where,
                    fix="use positive time constants",
                )
        check_float(lif.dt, "dt", lo=0.0, lo_open=True, where=where, error=GraphError)
        pairs.append((lin, lif))
    return pairs


def xylo_aware(
    net: Any,
    limits: XyloLimits | str | None = XYLO_AUDIO3,
    *,
    quantize: str | None = "channel",
    learn_dash: bool = True,
    delays: bool = True,
    surrogate: Surrogate | None = None,
) -> Sequential:
    """A new network of :class:`~pondlib.devices.xylo.aware_lif.XyloLIF` layers that follows the Xylo core.

    Args:
        net: ``nn.Sequential(Linear, LIF, Linear, LIF, ...)`` (not modified); Linear without bias.
        limits: the Xylo variant (caps, input clip, widths); default Xylo Audio 3.
        quantize: ``"channel"`` (per neuron, :func:`~pondlib.transform.channel_quantize`),
            ``"global"`` (per layer, :func:`~pondlib.transform.global_quantize`; exact for one hidden
            layer: with several, the chip shares one hidden scale, here each layer has its own)
            or None (float weights: caps, decays and delays only).
        learn_dash: train the decay shifts (continuous, rounded with an STE in the forward pass).
        delays: one step of delay on every hop after the first (as the chip does); False drops them.
        surrogate: spike surrogate (default: the LIF's own).

    Returns:
        ``Sequential`` of ``XyloLIF`` (one per ``Linear -> LIF`` pair); the first clips input counts
        and has no delay, the last has the output spike cap.

    Raises:
        GraphError: the network is not a chain of ``Linear -> LIF`` pairs, a Linear has a bias, or a
            parameter is non-finite (a time constant or ``dt`` not > 0); the message names the layers.
        PondError: ``quantize`` not one of the three choices, ``learn_dash`` / ``delays`` not bools
            (a string such as ``"False"`` is refused), ``surrogate`` not a Surrogate.
    """
    lim = get_limits(limits)
    check_choice(quantize, "quantize", ("channel", "global", None), where="xylo_aware", error=PondError)
    learn_dash = check_bool(learn_dash, "learn_dash", where="xylo_aware")
    delays = check_bool(delays, "delays", where="xylo_aware")
    if surrogate is not None and not isinstance(surrogate, Surrogate):
        raise PondError(
            "surrogate",
            value=type(surrogate).__name__,
            limit="a pondlib.nn.surrogate.Surrogate or None",
            where="xylo_aware",
            fix="pass e.g. the LIF's own surrogate (None)",
        )
    pairs = _pairs(net)
    _check_fits(pairs, lim)
    layers = []
    for i, (lin, lif) in enumerate(pairs):
        last = i == len(pairs) - 1
        cap = lim.max_spikes_output if last else lim.max_spikes_hidden
        dm = np.clip(dash_for_tau(np.asarray(lif.tau_mem), lif.dt), 1.0, lim.dash_max)
        ds = np.clip(dash_for_tau(np.asarray(lif.tau_syn), lif.dt), 1.0, lim.dash_max)
        layers.append(
            XyloLIF(
                lin.n_in,
                lif.n_neurons,
                lif.n_synapses,
                weight=np.asarray(lin.weight),
                w_rec=None if lif.w_rec is None else np.asarray(lif.w_rec),
                threshold=np.asarray(lif.threshold),
                bias=np.asarray(lif.bias),
                dash_mem=dm,
                dash_syn=ds,
                dt=lif.dt,
                max_spikes=min(float(cap), lif.max_spikes_per_dt),
                delay_in=bool(delays) and i > 0,
                input_clip=float(lim.max_input_count) if i == 0 else None,
                quantize=quantize,
                learn_dash=learn_dash,
                weight_bits=lim.weight_bits,
                state_bits=lim.state_bits,
                dash_max=lim.dash_max,
                surrogate=surrogate if surrogate is not None else lif.surrogate,
            )
        )
    return Sequential(*layers)


def _check_fits(pairs: list, lim: XyloLimits) -> None:
    """The size rules of the mapper (input channels, hidden and output neurons, synapses) on the twin's
    network, all at once: a twin the chip cannot hold would train, then fail at export."""
    hidden = [lif for _, lif in pairs[:-1]]
    out = pairs[-1][1]
    n_hid = sum(int(lif.n_neurons) for lif in hidden)
    k = max((int(lif.n_synapses) for lif in hidden), default=1)
    fix = "use a smaller network, or a Xylo variant with more neurons (limits=...)"
    checks = (
        ("max_input_channels", "0_Linear", int(pairs[0][0].n_in), lim.n_input),
        ("max_hidden_neurons", "hidden layers", n_hid, lim.n_hidden),
        ("max_output_neurons", "output LIF", int(out.n_neurons), lim.n_output),
        ("max_synapses", "hidden LIFs", k, lim.n_synapses),
        ("output_single_synapse", "output LIF", int(out.n_synapses), 1),
    )
    raise_violations([Violation(rule, where, v, cap, fix) for rule, where, v, cap in checks if v > cap], lim.name)


def to_float(net: Any) -> Sequential:
    """The plain ``Linear -> LIF`` network of a hardware-aware one (grid parameters, decays
    ``exp(-dt/tau) = 1 - 2^{-d}``, spike caps kept; no hop delay and no integer rounding).

    Raises:
        GraphError: ``net`` is not a ``Sequential`` of ``XyloLIF``.
    """
    if not isinstance(net, Sequential) or not all(isinstance(m, XyloLIF) for m in net.layers):
        raise GraphError(
            "to_float input",
            value=type(net).__name__,
            limit="a Sequential of XyloLIF",
            where="to_float",
            fix="pass the output of xylo_aware (after training)",
        )
    mods: list[Any] = []
    for m in net.layers:
        mods.extend(m.to_float())
    return Sequential(*mods)


def hardware_dashes(net: Any) -> dict[str, dict[str, np.ndarray]]:
    """The integer decay shifts a hardware-aware network runs with, per layer record prefix
    (``"0_XyloLIF"``): ``{"dash_mem": (N,), "dash_syn": (N, k)}``.

    Raises:
        PondError: ``net`` is not a ``Sequential`` of ``XyloLIF``.
    """
    if not isinstance(net, Sequential) or not all(isinstance(m, XyloLIF) for m in net.layers):
        raise PondError(
            "hardware_dashes input",
            value=type(net).__name__,
            limit="a Sequential of XyloLIF",
            where="hardware_dashes",
            fix="pass the output of xylo_aware",
        )
    out = {}
    for i, m in enumerate(net.layers):
        g = m.grid()
        layer = {}
        for name in ("dash_mem", "dash_syn"):
            # whole numbers in 0..15 after the grid's rounding; a diverged (NaN) training is refused, not cast
            d = as_float_array(np.asarray(g[name]), name, where=f"hardware_dashes: layer {i}", allow_empty=True)
            layer[name] = as_int_array(
                np.rint(d), name, lo=0, hi=2**31 - 1, where=f"hardware_dashes: layer {i}", allow_empty=True
            )
        out[f"{i}_XyloLIF"] = layer
    return out
