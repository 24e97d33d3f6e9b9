r"""Map a graph (or a ``pondlib.nn`` network) onto one Xylo core: a float :class:`Specification`.

Xylo runs one fixed topology (``docs/XYLO.md``)::

    input (N_in channels) --W_in--> hidden LIF (N_hid neurons, k synapses, recurrent W_rec, aliases)
                                        --W_out--> output LIF (N_out neurons, 1 synapse)

:func:`mapper` finds that topology in an arbitrary graph of
:class:`~pondlib.graph.LinearWeights`, :class:`~pondlib.graph.LIFNeurons` and
:class:`~pondlib.graph.AliasConnection` modules:

* the **output layer** is the LIF module writing the graph's output nodes; output neuron ``o`` is the
  neuron writing graph output node ``o``;
* every other LIF module is **hidden**; hidden ids are given layer by layer in topological order
  (``0 .. N_1 - 1`` for the first layer, ``N_1 ..`` for the next, ...);
* a weight matrix reading graph input nodes lands in ``weights_in``; one from hidden neurons to hidden
  neurons (between layers *or* recurrent) lands in ``weights_rec``; one into the output layer in
  ``weights_out``. LIF input channel ``i`` is synapse ``i % k`` of neuron ``i // k``, so a weight
  ``W[p, i]`` of a matrix from hidden neuron ``a(p)`` lands at ``weights_rec[a(p), b(i // k), i % k]``;
* an alias (a residual sum) ``source -> target`` becomes ``aliases[source] = target``.

A :class:`~pondlib.graph.NIRNeuronGroup` (a NIR neuron layer with no exact LIF equivalent, e.g. a
``CubaLIF`` imported with reset to zero or to ``v_reset``) counts as a neuron layer for every topology
and size rule, so that it is reported once, as ``neuron_model`` (how to import or retrain it), rather
than as an unknown module with follow-on topology violations.

The specification is *float* and unquantized: weights, thresholds and biases are copied as they are,
and the decay parameters are the unrounded

.. math::

    \mathrm{dash} = \log_2(\tau / dt), \qquad \alpha_{chip} = 1 - 2^{-\mathrm{round(dash)}}
    \approx e^{-dt/\tau}

for ``dash_mem`` (``tau_mem``), ``dash_syn`` / ``dash_syn_2`` (``tau_syn[:, 0]`` / ``tau_syn[:, 1]``,
0 where a neuron has no such synapse), ``dash_mem_out`` and ``dash_syn_out``. Quantize it with
:func:`pondlib.transform.channel_quantize` or :func:`pondlib.transform.global_quantize`.

Every design rule is checked and *all* violations are raised together in one
:class:`~pondlib.errors.ConstraintError`; each names the rule, the module, the offending value, the
limit and a remedy. The rule ids are listed in :data:`RULES`. The graph and the network are never
modified.

Example:
    >>> import numpy as np
    >>> from pondlib import nn
    >>> rng = np.random.default_rng(0)
    >>> net = nn.Sequential(nn.Linear(16, 4, weight=rng.normal(size=(16, 4))),
    ...                     nn.LIF(4, tau_mem=0.02, tau_syn=0.01),
    ...                     nn.Linear(4, 2, weight=rng.normal(size=(4, 2))), nn.LIF(2))
    >>> spec = mapper(net)
    >>> spec.weights_in.shape, spec.weights_rec.shape, spec.weights_out.shape
    ((16, 4, 1), (4, 4, 1), (4, 2))
    >>> np.round(spec.dash_mem, 3).tolist(), np.round(spec.dash_syn, 3).tolist()
    ([4.322, 4.322, 4.322, 4.322], [3.322, 3.322, 3.322, 3.322])
    >>> spec.report.output_module, spec.report.neuron_ids["1_LIF"].tolist()
    ('3_LIF', [0, 1, 2, 3])

    A network that breaks rules reports them all at once:

    >>> bad = nn.Sequential(nn.Linear(16, 4, weight=np.ones((16, 4))), nn.LIF(4, tau_mem=1e-3),
    ...                     nn.Linear(4, 10, weight=np.ones((4, 10))), nn.LIF(10))
    >>> try:
    ...     mapper(bad)
    ... except ConstraintError as err:
    ...     print(sorted(err.rules))
    ['dash_zero', 'max_output_neurons']
    >>> wide = nn.Sequential(nn.Linear(16, 4, weight=np.ones((16, 4))), nn.LIF(4),
    ...                      nn.Linear(4, 10, weight=np.ones((4, 10))), nn.LIF(10))
    >>> mapper(wide, "audio3").n_output    # Xylo Audio 3 has 32 output neurons
    10
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.devices.core.lookup import as_graph
from pondlib.devices.core.rules import raise_violations
from pondlib.devices.xylo.limits import XyloLimits, get_limits
from pondlib.devices.xylo.specification import MappingReport, Specification
from pondlib.errors import ConfigError, ConstraintError, GraphError, Violation  # noqa: F401  (ConstraintError: doctests)
from pondlib.graph.modules import AliasConnection, LIFNeurons, LinearWeights, NIRNeuronGroup
from pondlib.graph.utils import topological_order
from pondlib.validate import check_bool, check_int

__all__ = ["mapper", "RULES", "SUPPORTED_MODULES"]

#: Graph module types the Xylo mapper understands.
SUPPORTED_MODULES: tuple[type, ...] = (LinearWeights, LIFNeurons, AliasConnection)

#: Neuron layers for the topology and size rules: Xylo LIFs, and NIR neuron groups (reported as
#: ``neuron_model``, never as ``unsupported_module``).
_NEURON_TYPES: tuple[type, ...] = (LIFNeurons, NIRNeuronGroup)

#: Every design rule the mapper checks: rule id -> what it requires.
RULES: dict[str, str] = {
    "unsupported_module": "only LinearWeights, LIFNeurons and AliasConnection modules",
    "neuron_model": "neurons are Xylo's LIF: exponential (bit-shift) decay, reset by subtraction "
    "(a NIR neuron group without an exact LIF equivalent breaks it)",
    "invalid_parameter": "parameters have the documented shapes, are finite, time constants and dt > 0",
    "input_through_weights": "graph input channels are read only by weights",
    "input_to_output": "input weights feed hidden neurons, never the output layer",
    "output_from_neurons": "the graph outputs are exactly the neurons of one LIF layer",
    "neurons_receive_weights": "neurons are fed only by weights",
    "no_consecutive_weights": "weights are never fed by weights (no two weight layers in a row)",
    "weights_feed_neurons": "weights feed neurons only",
    "single_neuron_source": "a signal is written by at most one neuron layer (sums need an alias)",
    "common_dt": "all neurons share one dt",
    "dt_range": "dt is within the chip's supported range",
    "min_neuron_layers": "at least two neuron layers (hidden and output)",
    "output_not_recurrent": "output neurons feed no weights and no aliases",
    "max_input_channels": "input channels <= limits.n_input",
    "max_hidden_neurons": "hidden neurons <= limits.n_hidden",
    "max_output_neurons": "output neurons <= limits.n_output",
    "max_synapses": "synapses per hidden neuron <= limits.n_synapses",
    "output_single_synapse": "output neurons have exactly one synapse",
    "max_fanout_rec": "non-zero recurrent weights leaving one hidden neuron <= limits.max_fanout_rec",
    "alias_source_neurons": "alias sources are hidden neurons",
    "alias_target_neurons": "alias targets are hidden neurons",
    "max_alias_targets": "at most limits.max_alias_targets alias target(s) per neuron",
    "alias_target_order": "an alias target id is higher than its source id",
    "dash_zero": "round(log2(tau / dt)) >= 1 (dash 0 wipes the state every step)",
    "dash_too_large": "round(log2(tau / dt)) <= limits.dash_max",
    "linear_bias": "weights carry no bias (Xylo has none) unless drop_biases=True",
}

_SUPPORTED_NAMES = ", ".join(t.__name__ for t in SUPPORTED_MODULES)

#: What Xylo's neurons are (the ``limit`` of a ``neuron_model`` violation).
_XYLO_NEURON = "LIF with exponential (bit-shift) decay, reset by subtraction"
_RESET_WORDS = {
    "v_reset": "reset to v_reset",
    "zero": "reset to zero",
    "subtract": "reset by subtraction",
    "none": "no reset",
    "": "no reset",
    "no_threshold": "no threshold (no spikes, no reset)",
}


@dataclass
class _Ctx:
    """Mutable working state of one mapping (never exposed)."""

    limits: XyloLimits
    drop_biases: bool
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, rule: str, module: str, value: Any, limit: Any, remedy: str) -> None:
        self.violations.append(Violation(rule, module, value, limit, remedy))


def _first_bad(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _param(ctx: _Ctx, module: Any, name: str, shape: tuple[int, ...]) -> np.ndarray | None:
    """``module.<name>`` as a float64 copy of ``shape``; scalars broadcast, (N,) -> (N, 1) for k = 1,
    (k,) -> shared by every neuron. A value that fits none of these is reported, not crashed on."""
    raw = getattr(module, name, None)
    try:
        if np.asarray(raw).dtype.kind not in "biuf":  # complex (imaginary part), strings, objects, None
            raise TypeError
        arr = np.array(raw, dtype=float)
    except (TypeError, ValueError):
        ctx.add(
            "invalid_parameter",
            module.name,
            f"{name} = {raw!r}",
            f"numbers of shape {shape}",
            f"pass {name} as a float array of shape {shape}",
        )
        return None
    if arr.ndim == 0:
        arr = np.full(shape, float(arr))
    elif len(shape) == 2 and arr.shape == (shape[0],) and shape[1] == 1:
        arr = arr.reshape(shape)
    elif len(shape) == 2 and arr.shape == (shape[1],):
        arr = np.broadcast_to(arr, shape).copy()
    if arr.shape != shape:
        ctx.add(
            "invalid_parameter",
            module.name,
            f"{name} shape {arr.shape}",
            shape,
            f"pass {name} as a scalar or an array of shape {shape}",
        )
        return None
    bad = ~np.isfinite(arr)
    if np.any(bad):
        i = _first_bad(bad)
        ctx.add(
            "invalid_parameter",
            module.name,
            f"{name}{list(i)} = {arr[i]}",
            "a finite number",
            f"replace the NaN/inf in {name}",
        )
        return None
    return arr


def _group_name(m: NIRNeuronGroup) -> str:
    """The group's name without the `` (reason)`` that :meth:`pondlib.nn.neurons.CubaLIF.as_graph`
    appends to it (the reason goes to the remedy instead)."""
    name, reason = str(m.name), str(getattr(m, "reason", "") or "")
    suffix = f" ({reason})"
    return name[: -len(suffix)] if reason and name.endswith(suffix) else name


def _neuron_model_remedy(kind: str, reason: str) -> str:
    """The group's ``reason`` rephrased as a fix, for users of the Python API and of ``pond map``."""
    reason = reason.strip().rstrip(".")
    if "import with reset='subtract'" in reason:
        # "reset='v_reset': pondlib LIF (and Xylo) reset by subtraction; import with reset='subtract'
        # if the network was trained that way" -- the reset itself is already the violation's value
        if reason.startswith("reset=") and ": " in reason:
            reason = reason.split(": ", 1)[1]
        return (
            reason.replace("import with reset='subtract'", "import it with reset='subtract' (CLI: --reset subtract)")
            + "; otherwise retrain it with reset by subtraction"
        )
    if reason.startswith("decay or gain"):
        return (
            f"{kind}: {reason} (each per-step decay must lie in (0, 1): with the default Euler "
            f"decay tau_syn and tau_mem > dt, check dt (CLI: --dt); and r * w_in > 0); fix the "
            f"time constants or dt, or retrain"
        )
    what = reason or f"{kind} is not a LIF neuron"
    return (
        f"{what}: Xylo runs only current-based LIF neurons; replace the {kind} layer by a "
        f"CubaLIF (NIR) or pondlib.nn.LIF trained with reset by subtraction, and import the "
        f"retrained file with reset='subtract' (CLI: --reset subtract)"
    )


class _Lif:
    """A LIF layer as the mapper sees it: parameters checked, position in the chip.

    A :class:`NIRNeuronGroup` is a layer too (topology, sizes, dt) without LIF parameters (``ok`` is
    False); it is reported once as ``neuron_model``."""

    def __init__(self, ctx: _Ctx, m: LIFNeurons | NIRNeuronGroup) -> None:
        self.m = m
        self.group = isinstance(m, NIRNeuronGroup)
        self.name = _group_name(m) if self.group else m.name
        self.role = "hidden"  # or "output"
        self.offset = 0  # first hardware id
        self.dt = float("nan")
        self.tau_mem = self.tau_syn = self.threshold = self.bias = None
        self.n = m.size_out
        self.k = m.size_in // m.size_out if m.size_out and m.size_in % m.size_out == 0 else 0
        self.ok = self.k > 0
        if self.group:
            # one neuron_model violation; no LIF parameters to check (its dt still counts)
            kind = str(getattr(m, "kind", "") or type(m).__name__)
            reset = str(getattr(m, "reset", "") or "")
            if getattr(m.computational_module, "v_threshold", 0) is None:  # LI, CubaLI, Integrator
                reset = "no_threshold"
            ctx.add(
                "neuron_model",
                self.name,
                f"{kind}, {_RESET_WORDS.get(reset, f'reset {reset}')}",
                _XYLO_NEURON,
                _neuron_model_remedy(kind, str(getattr(m, "reason", "") or "")),
            )
            try:
                dt = float(m.dt)
            except (TypeError, ValueError):
                dt = float("nan")
            self.dt = dt if math.isfinite(dt) and dt > 0 else float("nan")  # (a Threshold has none)
        if not self.ok:
            ctx.add(
                "invalid_parameter",
                self.name,
                f"{m.size_in} inputs for {m.size_out} neurons",
                "N * k inputs for N neurons",
                "give a LIF layer k inputs per neuron",
            )
            return
        if self.group:
            self.ok = False
            return
        self.tau_mem = _param(ctx, m, "tau_mem", (self.n,))
        self.tau_syn = _param(ctx, m, "tau_syn", (self.n, self.k))
        self.threshold = _param(ctx, m, "threshold", (self.n,))
        self.bias = _param(ctx, m, "bias", (self.n,))
        for name in ("tau_mem", "tau_syn"):
            tau = getattr(self, name)
            if tau is not None and np.any(tau <= 0):
                i = _first_bad(tau <= 0)
                ctx.add(
                    "invalid_parameter", m.name, f"{name}{list(i)} = {tau[i]} s", "> 0 s", "use positive time constants"
                )
                setattr(self, name, None)
        try:
            self.dt = float(m.dt)
        except (TypeError, ValueError):
            self.dt = float("nan")
        if not (math.isfinite(self.dt) and self.dt > 0):
            ctx.add(
                "invalid_parameter",
                m.name,
                f"dt = {m.dt!r}",
                "a positive number of seconds",
                "pass dt in seconds, e.g. 1e-3",
            )
            self.dt = float("nan")
        self.ok = all(a is not None for a in (self.tau_mem, self.tau_syn, self.threshold, self.bias))


def _weights(ctx: _Ctx, m: LinearWeights) -> np.ndarray | None:
    w = _param(ctx, m, "weights", (m.size_in, m.size_out))
    if w is not None and getattr(m, "biases", None) is not None:
        b = _param(ctx, m, "biases", (m.size_out,))
        if b is not None and b.size and np.any(b != 0):
            if ctx.drop_biases:
                ctx.notes.append(
                    f"{m.name}: bias dropped (drop_biases=True); Xylo weights carry no "
                    f"bias (max |b| = {float(np.max(np.abs(b))):.4g})"
                )
            else:
                ctx.add(
                    "linear_bias",
                    m.name,
                    f"max |bias| = {float(np.max(np.abs(b))):.4g}",
                    "no bias on weights",
                    "train the Linear without bias, move it to the next LIF's bias, or pass drop_biases=True",
                )
    return w


def _dash(
    ctx: _Ctx,
    lif: _Lif,
    field_name: str,
    tau: np.ndarray,
    dt: float,
    param: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Unrounded dash ``log2(tau/dt)``, the relative error of the chip's effective time constant after
    rounding, and the dash rules.

    The chip decays by ``1 - 2^-dash`` per step, so its effective time constant is
    ``tau_chip = -dt / ln(1 - 2^-dash)`` (0 for dash 0: the state is wiped every step); the error is
    ``(tau_chip - tau) / tau``.
    """
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        # tau / dt may overflow for absurd time constants: the dash is then inf, a dash_too_large violation
        dash = np.log2(tau / dt)
        r = np.round(dash)
        tau_chip = np.where(r >= 1, -dt / np.log1p(-np.exp2(-np.maximum(r, 1))), 0.0)
        err = (tau_chip - tau) / tau
    dmax = ctx.limits.dash_max
    for mask, rule, limit, fix in (
        (
            r <= 0,
            "dash_zero",
            "dash >= 1",
            f"tau > dt * 2^0.5 = {dt * 2**0.5:.6g} s rounds to dash >= 1 (dash 0 wipes the state "
            f"every step and the neuron goes silent); lengthen {param} or shorten dt",
        ),
        (
            r > dmax,
            "dash_too_large",
            f"dash <= {dmax}",
            f"tau < dt * 2^{dmax + 0.5} = {dt * 2 ** (dmax + 0.5):.6g} s rounds to dash <= {dmax}; "
            f"shorten {param} or lengthen dt",
        ),
    ):
        if np.any(mask):
            idx = np.flatnonzero(mask)
            i = int(idx[0])
            what = (
                f"{param}[{i}] = {tau[i]:.6g} s -> dash {dash[i]:.3f} rounds to "
                f"{int(r[i]) if np.isfinite(r[i]) else r[i]}"
                f" ({idx.size} neuron(s): {idx[:8].tolist()}{'...' if idx.size > 8 else ''})"
            )
            ctx.add(rule, lif.name, what, limit, fix)
    return dash, err


def _float_dtype(value: Any, name: str) -> None:
    """Rockpool's ``*_dtype`` arguments: pondlib maps to float (quantize with :mod:`pondlib.transform`)."""
    try:
        # a string must be a dtype name ('float', 'float32', 'f4'): numpy also reads control characters
        # such as '\r' as type codes
        named = not isinstance(value, str) or value.isidentifier()
        ok = named and np.dtype(value).kind == "f" and not isinstance(value, bool)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ConfigError(
            name,
            value=value,
            limit="a float dtype ('float')",
            where="mapper",
            fix="map to float (the default) and quantize with pondlib.transform.channel_quantize or global_quantize",
        )


def mapper(
    graph: Any,
    limits: XyloLimits | str | None = None,
    *,
    drop_biases: bool = False,
    weight_dtype: Any = "float",
    threshold_dtype: Any = "float",
    dash_dtype: Any = "float",
    max_hidden_neurons: int | None = None,
    max_output_neurons: int | None = None,
) -> Specification:
    """Map a network onto one Xylo core (see the module docstring for the rules and layout).

    Args:
        graph: a graph module or holder (e.g. ``net.as_graph()``), or anything with ``.as_graph()``
            (a ``pondlib.nn`` module). It is only read, never modified.
        limits: the Xylo variant: a :class:`XyloLimits` or a name (``"audio2"`` default, ``"audio3"``,
            ``"imu"``).
        drop_biases: drop biases of weight layers (Xylo cannot represent them) with a note in the
            report instead of a ``linear_bias`` violation (a bool).
        weight_dtype, threshold_dtype, dash_dtype: Rockpool's arguments, accepted for ported scripts:
            a float dtype (``"float"``); the specification is always float64 (quantize it next).
        max_hidden_neurons, max_output_neurons: Rockpool's arguments: tighter caps than the variant's
            (a larger value is the variant's own limit).

    Returns:
        A float :class:`Specification` (shapes in :mod:`pondlib.devices.xylo.specification`) with a
        :class:`MappingReport` in ``report``.

    Raises:
        ConstraintError: carrying every broken design rule (ids in :data:`RULES`).
        GraphError: ``graph`` is not a graph nor exportable to one.
    """
    lim = get_limits(limits)
    drop_biases = check_bool(drop_biases, "drop_biases", where="mapper", error=ConfigError)
    for name, value in (
        ("weight_dtype", weight_dtype),
        ("threshold_dtype", threshold_dtype),
        ("dash_dtype", dash_dtype),
    ):
        _float_dtype(value, name)
    caps = {}
    for name, field_name, value in (
        ("max_hidden_neurons", "n_hidden", max_hidden_neurons),
        ("max_output_neurons", "n_output", max_output_neurons),
    ):
        if value is not None:
            caps[field_name] = min(
                check_int(value, name, lo=1, where="mapper", error=ConfigError), getattr(lim, field_name)
            )
    if caps:
        lim = dataclasses.replace(lim, **caps)
    ctx = _Ctx(lim, drop_biases)
    g = as_graph(graph)
    modules = topological_order(g)  # every module reachable from the graph's boundary, sources first

    lifs: list[_Lif] = []
    weights: list[tuple[LinearWeights, np.ndarray | None]] = []
    aliases: list[AliasConnection] = []
    for m in modules:
        if isinstance(m, _NEURON_TYPES):
            lifs.append(_Lif(ctx, m))
        elif isinstance(m, LinearWeights):
            weights.append((m, _weights(ctx, m)))
        elif isinstance(m, AliasConnection):
            aliases.append(m)
        else:
            ctx.add(
                "unsupported_module",
                m.name,
                type(m).__name__,
                f"one of {_SUPPORTED_NAMES}",
                f"Xylo supports only {_SUPPORTED_NAMES} (pondlib.nn Linear without bias, LIF, "
                f"Sequential, Residual); replace or remove this module",
            )

    # -- signals: which graph input channel / which neuron writes each node --------------------------
    in_channel = {id(n): c for c, n in enumerate(g.input_nodes)}
    out_position = {id(n): o for o, n in enumerate(g.output_nodes)}
    writer: dict[int, tuple[_Lif, int]] = {}  # node -> (layer, neuron index in layer)
    for lif in lifs:
        for j, node in enumerate(lif.m.output_nodes):
            other = writer.get(id(node))
            if other is not None and other[0] is not lif:
                ctx.add(
                    "single_neuron_source",
                    lif.name,
                    f"also written by {other[0].name}",
                    "one neuron layer per signal",
                    "sum the layers with a Residual (alias) instead of merging their outputs",
                )
            writer[id(node)] = (lif, j)

    # -- output layer --------------------------------------------------------------------------
    out_layers: list[_Lif] = []
    for node in g.output_nodes:
        w = writer.get(id(node))
        if w is None:
            names = sorted({s.name for s in node.source_modules}) or ["nothing"]
            ctx.add(
                "output_from_neurons",
                ", ".join(names),
                "graph output written by " + ", ".join(type(s).__name__ for s in node.source_modules)
                if node.source_modules
                else "an unconnected graph output",
                "written by output LIF neurons",
                "end the network with a LIF layer (Linear -> LIF)",
            )
            break
        if not any(w[0] is o for o in out_layers):
            out_layers.append(w[0])
    out_lif: _Lif | None = None
    if len(out_layers) > 1:
        ctx.add(
            "output_from_neurons",
            ", ".join(o.name for o in out_layers),
            f"{len(out_layers)} neuron layers write the graph outputs",
            "one output LIF layer",
            "end the network with one LIF layer",
        )
    elif len(out_layers) == 1:
        out_lif = out_layers[0]
        covered = {id(n) for n in out_lif.m.output_nodes}
        if covered != set(out_position) or len(out_position) != out_lif.n:
            ctx.add(
                "output_from_neurons",
                out_lif.name,
                f"{len(out_position)} graph outputs vs {out_lif.n} neurons in the output layer",
                "the graph outputs are exactly the output layer's neurons",
                "make the last LIF layer's outputs the graph outputs",
            )
        out_lif.role = "output"
    hidden = [lif for lif in lifs if lif is not out_lif]
    if len(lifs) < 2:
        ctx.add(
            "min_neuron_layers",
            g.name,
            f"{len(lifs)} LIF layer(s)",
            ">= 2 (hidden and output)",
            "use at least Linear -> LIF (hidden) -> Linear -> LIF (output)",
        )

    # -- hardware ids ---------------------------------------------------------------------------
    n_hid = 0
    for lif in hidden:
        lif.offset = n_hid
        n_hid += lif.n
    k = max([lif.k for lif in hidden] or [1])
    k = max(k, 1)
    n_in = len(g.input_nodes)
    n_out = len(g.output_nodes)
    if out_lif is not None:
        out_lif.offset = 0
    dts = {lif.name: lif.dt for lif in lifs}
    finite_dts = [d for d in dts.values() if math.isfinite(d)]
    dt = finite_dts[0] if finite_dts else 1e-3
    if finite_dts and not np.allclose(finite_dts, dt, rtol=1e-9, atol=0):
        ctx.add(
            "common_dt",
            ", ".join(dts),
            {n: d for n, d in dts.items()},
            "one dt for every layer",
            f"set the same dt on every LIF layer (e.g. dt={dt!r})",
        )
    if finite_dts and not lim.dt_min <= dt <= lim.dt_max:
        ctx.add(
            "dt_range",
            lifs[0].name if lifs else g.name,
            f"dt = {dt} s",
            f"{lim.dt_min}..{lim.dt_max} s",
            "choose dt in the supported range",
        )

    # -- sizes ---------------------------------------------------------------------------------
    if n_in > lim.n_input:
        ctx.add(
            "max_input_channels",
            g.name,
            n_in,
            lim.n_input,
            f"use at most {lim.n_input} input channels (reduce the input features)",
        )
    if n_hid > lim.n_hidden:
        ctx.add(
            "max_hidden_neurons",
            ", ".join(h.name for h in hidden),
            n_hid,
            lim.n_hidden,
            f"use at most {lim.n_hidden} hidden neurons over all hidden layers ({n_hid - lim.n_hidden} too many)",
        )
    if out_lif is not None and out_lif.n > lim.n_output:
        ctx.add(
            "max_output_neurons",
            out_lif.name,
            out_lif.n,
            lim.n_output,
            f"use at most {lim.n_output} output neurons on {lim.name}"
            + (" (or target Xylo Audio 3, 32 outputs)" if lim.n_output < 32 else ""),
        )
    for lif in hidden:
        if lif.k > lim.n_synapses:
            ctx.add(
                "max_synapses",
                lif.name,
                lif.k,
                lim.n_synapses,
                f"use at most {lim.n_synapses} synaptic time constant(s) per hidden neuron "
                f"(LIF shape (N * {lim.n_synapses}, N) or less)",
            )
    if out_lif is not None and out_lif.k != 1:
        ctx.add(
            "output_single_synapse",
            out_lif.name,
            out_lif.k,
            1,
            "give the output LIF layer one synapse per neuron (shape N)",
        )

    # -- parameters, per neuron ----------------------------------------------------------------
    f64 = np.float64
    spec_arrays: dict[str, np.ndarray] = {
        "dash_mem": np.zeros(n_hid, f64),
        "dash_syn": np.zeros(n_hid, f64),
        "dash_syn_2": np.zeros(n_hid, f64),
        "threshold": np.zeros(n_hid, f64),
        "bias": np.zeros(n_hid, f64),
        "dash_mem_out": np.zeros(n_out, f64),
        "dash_syn_out": np.zeros(n_out, f64),
        "threshold_out": np.zeros(n_out, f64),
        "bias_out": np.zeros(n_out, f64),
    }
    dash_error = {
        name: np.zeros_like(spec_arrays[name])
        for name in ("dash_mem", "dash_syn", "dash_syn_2", "dash_mem_out", "dash_syn_out")
    }
    neuron_ids: dict[str, np.ndarray] = {}
    out_index = np.arange(out_lif.n) if out_lif is not None else np.zeros(0, int)
    if out_lif is not None and len(out_position) == out_lif.n:
        idx = [out_position.get(id(nd), -1) for nd in out_lif.m.output_nodes]
        if min(idx) >= 0:
            out_index = np.asarray(idx)
    for lif in lifs:
        if lif.role == "output":
            ids = out_index
            sfx, cap = "_out", lim.max_spikes_output
        else:
            ids = np.arange(lif.offset, lif.offset + lif.n)
            sfx, cap = "", lim.max_spikes_hidden
        neuron_ids[lif.name] = ids
        if lif.ok and math.isfinite(lif.dt):
            if not (lif.role == "output" and ids.size != n_out):
                d, e = _dash(ctx, lif, "dash_mem" + sfx, lif.tau_mem, lif.dt, "tau_mem")
                spec_arrays["dash_mem" + sfx][ids], dash_error["dash_mem" + sfx][ids] = d, e
                syn_fields = ("dash_syn_out",) if lif.role == "output" else ("dash_syn", "dash_syn_2")
                for s, fname in enumerate(syn_fields[: lif.k]):
                    d, e = _dash(ctx, lif, fname, lif.tau_syn[:, s], lif.dt, f"tau_syn[:, {s}]")
                    spec_arrays[fname][ids], dash_error[fname][ids] = d, e
                spec_arrays["threshold" + sfx][ids] = lif.threshold
                spec_arrays["bias" + sfx][ids] = lif.bias
        if lif.group:
            continue
        try:
            lif_cap = float(lif.m.max_spikes_per_dt)
        except (TypeError, ValueError):
            lif_cap = float("inf")
        if lif_cap > cap:
            ctx.notes.append(
                f"{lif.name}: the chip caps {lif.role} neurons at {cap} spike(s) per step "
                f"(the float model allows {lif_cap:g}); train with max_spikes_per_dt={cap} "
                f"to match"
            )

    # -- weights ---------------------------------------------------------------------------------
    w_in = np.zeros((n_in, n_hid, k), f64)
    w_rec = np.zeros((n_hid, n_hid, k), f64)
    w_out = np.zeros((n_hid, n_out), f64)
    rec_source = np.full(n_hid, -1, np.int64)  # weights_rec row -> index in `weights` of its first writer
    hops_hh: list[str] = []
    hops_ho: list[str] = []
    lif_input: dict[int, list[tuple[int, int]]] = {}  # node -> [(index in lifs, input channel)]
    for li, lif in enumerate(lifs):
        for c, node in enumerate(lif.m.input_nodes):
            lif_input.setdefault(id(node), []).append((li, c))
    lif_offset = np.asarray([lif.offset for lif in lifs] + [0], np.int64)
    lif_k = np.asarray([max(lif.k, 1) for lif in lifs] + [1], np.int64)
    lif_is_out = np.asarray([lif.role == "output" for lif in lifs] + [False])

    for wi, (m, w) in enumerate(weights):
        # pre side: graph input channel, hidden neuron id, output neuron, or nothing mappable
        pre_kind = np.zeros(m.size_in, np.int8)  # 0 none, 1 input, 2 hidden, 3 output
        pre_id = np.zeros(m.size_in, np.int64)
        bad_sources: set[str] = set()
        for r, node in enumerate(m.input_nodes):
            if id(node) in in_channel:
                pre_kind[r], pre_id[r] = 1, in_channel[id(node)]
                continue
            wr = writer.get(id(node))
            if wr is not None:
                lif, j = wr
                pre_kind[r] = 3 if lif.role == "output" else 2
                pre_id[r] = lif.offset + j
            for s in node.source_modules:
                if isinstance(s, LinearWeights):
                    bad_sources.add(s.name)
        if bad_sources:
            ctx.add(
                "no_consecutive_weights",
                m.name,
                f"fed by weights {sorted(bad_sources)}",
                "weights fed by neurons or the input",
                "insert a LIF layer between the two weight layers, or multiply them into one",
            )
        if np.any(pre_kind == 3):
            ctx.add(
                "output_not_recurrent",
                out_lif.name if out_lif else m.name,
                f"output neurons feed {m.name}",
                "output neurons feed nothing",
                "make the output layer non-recurrent and feed no layer from it",
            )
        # post side: which LIF input channels read each output column
        posts: list[tuple[int, int, int]] = []  # (column, index in lifs, LIF input channel)
        bad_sinks: set[str] = set()
        for c, node in enumerate(m.output_nodes):
            for li, ch in lif_input.get(id(node), ()):
                posts.append((c, li, ch))
            if not node.sink_modules and id(node) not in out_position:
                bad_sinks.add("nothing (its output is unused)")
            if len(node.sink_modules) > 1 or not isinstance(
                node.sink_modules[0] if node.sink_modules else None, _NEURON_TYPES
            ):
                for s in node.sink_modules:
                    if not isinstance(s, (*_NEURON_TYPES, LinearWeights)):
                        bad_sinks.add(f"{s.name} ({type(s).__name__})")
            if id(node) in out_position:
                bad_sinks.add("the graph output")
        if bad_sinks:
            ctx.add(
                "weights_feed_neurons",
                m.name,
                f"feeds {sorted(bad_sinks)}",
                "feeds LIF neurons",
                "follow every weight layer by a LIF layer",
            )
        if w is None or not posts:
            continue
        cols_a, post_li, ch_a = np.asarray(posts, np.int64).T
        lk = lif_k[post_li]
        post_neuron = lif_offset[post_li] + ch_a // lk
        post_syn = ch_a % lk
        post_out = lif_is_out[post_li]
        used_hh = used_ho = False
        for kind in (1, 2):
            rows = np.flatnonzero(pre_kind == kind)
            if rows.size == 0:
                continue
            sub_pre = pre_id[rows]
            for is_out in (False, True):
                sel = np.flatnonzero(post_out == is_out)
                if sel.size == 0:
                    continue
                block = w[np.ix_(rows, cols_a[sel])]
                if kind == 1 and is_out:
                    if np.any(block != 0) and hidden:  # (no hidden layer: min_neuron_layers)
                        ctx.add(
                            "input_to_output",
                            m.name,
                            "input channels -> output neurons",
                            "input -> hidden only",
                            "insert a hidden LIF layer between the input and the output layer",
                        )
                    continue
                if is_out:
                    post_key = out_index[post_neuron[sel] - out_lif.offset]
                    target, idx = w_out, (sub_pre[:, None], post_key[None, :])
                    used_ho = True
                else:
                    post_key = post_neuron[sel] * k + post_syn[sel]
                    target = w_in if kind == 1 else w_rec
                    idx = (sub_pre[:, None], post_neuron[sel][None, :], post_syn[sel][None, :])
                    if kind == 2:
                        used_hh = True
                        rec_source[sub_pre[rec_source[sub_pre] < 0]] = wi
                _accumulate(target, idx, block, sub_pre, post_key)
        post_ids = {id(lifs[li].m) for li in np.unique(post_li).tolist()}
        is_recurrent = any(
            isinstance(s, _NEURON_TYPES) and id(s) in post_ids for node in m.input_nodes for s in node.source_modules
        )
        if used_hh and not is_recurrent:
            hops_hh.append(m.name)
        if used_ho:
            hops_ho.append(m.name)

    # -- neurons fed by anything but weights ------------------------------------------------------
    for lif in lifs:
        bad: set[str] = set()
        for node in lif.m.input_nodes:
            if id(node) in in_channel:
                bad.add("the graph input")
            for s in node.source_modules:
                if not isinstance(s, LinearWeights):
                    bad.add(f"{s.name} ({type(s).__name__})")
        if bad:
            rule = "input_through_weights" if bad == {"the graph input"} else "neurons_receive_weights"
            ctx.add(
                rule,
                lif.name,
                f"fed by {sorted(bad)}",
                "fed by weights only",
                "put a Linear (weights) in front of the LIF layer"
                + (" (the input must go through weights first)" if "the graph input" in bad else ""),
            )

    # -- aliases ---------------------------------------------------------------------------------
    alias_arr = -np.ones(n_hid, np.int64)
    n_targets = np.zeros(n_hid, np.int64)
    for a in aliases:
        src_ids, dst_ids = [], []
        for sn, dn in zip(a.input_nodes, a.output_nodes):
            ws, wd = writer.get(id(sn)), writer.get(id(dn))
            if ws is None or ws[0].role == "output":
                what = (
                    "an output neuron"
                    if ws is not None
                    else (
                        "the graph input"
                        if id(sn) in in_channel
                        else ", ".join(sorted({type(s).__name__ for s in sn.source_modules})) or "nothing"
                    )
                )
                ctx.add(
                    "alias_source_neurons",
                    a.name,
                    f"alias source is {what}",
                    "hidden neurons",
                    "a residual's input must come from hidden neurons: put Linear -> LIF before the Residual",
                )
                break
            if wd is None or wd[0].role == "output":
                what = "an output neuron" if wd is not None else "not a neuron"
                ctx.add(
                    "alias_target_neurons",
                    a.name,
                    f"alias target is {what}",
                    "hidden neurons",
                    "end the residual block with a hidden LIF layer, and follow it by Linear -> LIF",
                )
                break
            src_ids.append(ws[0].offset + ws[1])
            dst_ids.append(wd[0].offset + wd[1])
        else:
            s_a, d_a = np.asarray(src_ids, np.int64), np.asarray(dst_ids, np.int64)
            if s_a.size == 0:
                continue
            np.add.at(n_targets, s_a, 1)
            alias_arr[s_a] = d_a
            back = d_a <= s_a
            if np.any(back):
                i = int(np.flatnonzero(back)[0])
                ctx.add(
                    "alias_target_order",
                    a.name,
                    f"neuron {int(s_a[i])} -> {int(d_a[i])} ({int(back.sum())} alias(es))",
                    "target id > source id",
                    "the alias target layer must come after the source layer in the network",
                )
    if np.any(n_targets > lim.max_alias_targets):
        i = int(np.argmax(n_targets))
        ctx.add(
            "max_alias_targets",
            ", ".join(a.name for a in aliases),
            f"neuron {i} has {int(n_targets[i])} alias targets",
            lim.max_alias_targets,
            f"alias each hidden neuron to at most {lim.max_alias_targets} target (do not feed "
            f"one layer into several residual sums)",
        )

    # -- recurrent fan-out ---------------------------------------------------------------------
    if n_hid:
        fanout = np.count_nonzero(w_rec.reshape(n_hid, -1), axis=1)
        over = np.flatnonzero(fanout > lim.max_fanout_rec)
        by_module: dict[str, list[int]] = {}
        for p in over.tolist():
            src = int(rec_source[p])
            by_module.setdefault(weights[src][0].name if src >= 0 else "weights_rec", []).append(p)
        for name, rows in by_module.items():
            worst = max(rows, key=lambda p: fanout[p])
            ctx.add(
                "max_fanout_rec",
                name,
                f"hidden neuron {worst} has {int(fanout[worst])} non-zero outgoing weights "
                f"({len(rows)} neuron(s) over)",
                lim.max_fanout_rec,
                f"prune each hidden neuron's outgoing hidden->hidden weights to at most "
                f"{lim.max_fanout_rec} non-zeros (synapses counted separately)",
            )

    raise_violations(ctx.violations, lim.name)

    # -- report ----------------------------------------------------------------------------------
    notes = list(ctx.notes)
    if hops_hh:
        notes.append(
            f"one step of delay on chip per hidden->hidden hop ({', '.join(hops_hh)}); the float model has none"
        )
    if hops_ho:
        notes.append(
            f"one step of delay on chip per hidden->output hop ({', '.join(hops_ho)}); the float model has none"
        )
    if np.any(alias_arr >= 0):
        notes.append(
            f"{int(np.sum(alias_arr >= 0))} alias(es): the source's spikes also leave "
            f"through the target's recurrent and output weights and count toward the "
            f"target's {lim.max_spikes_hidden}-spike budget"
        )
    report = MappingReport(
        neuron_ids=neuron_ids, output_module=out_lif.name if out_lif else "", dash_error=dash_error, notes=tuple(notes)
    )
    return Specification(
        weights_in=w_in,
        weights_rec=w_rec,
        weights_out=w_out,
        aliases=alias_arr,
        dt=dt,
        limits_name=lim.name,
        report=report,
        **spec_arrays,
    )


def _contiguous(ix: np.ndarray) -> bool:
    """True when ``ix`` is ``start, start + 1, ..., start + n - 1``."""
    return ix.size > 0 and int(ix[-1]) - int(ix[0]) == ix.size - 1 and bool(np.all(np.diff(ix) == 1))


def _accumulate(target: np.ndarray, idx: tuple, block: np.ndarray, pre: np.ndarray, post_key: np.ndarray) -> None:
    """``target[idx] += block`` where ``post_key`` is the flat (post, syn) column of ``target``.

    The usual case (a layer's neurons in order: contiguous pre ids and synapse columns) is a slice of
    a 2-D view; otherwise a fancy index, and ``np.add.at`` when weights address one chip synapse twice
    (two paths summed) so that they add up instead of overwriting each other.
    """
    if _contiguous(pre) and _contiguous(post_key):
        flat = target.reshape(target.shape[0], -1)  # a view: target is C-contiguous
        flat[pre[0] : pre[-1] + 1, post_key[0] : post_key[-1] + 1] += block
    elif np.unique(pre).size == pre.size and np.unique(post_key).size == post_key.size:
        target[idx] += block
    else:
        np.add.at(target, idx, block)
