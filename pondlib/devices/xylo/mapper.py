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

Mapping runs in three steps:

1. **context**: :func:`~pondlib.devices.xylo.topology.read_topology` reads the graph once into a typed
   :class:`~pondlib.devices.xylo.topology.MappingContext`: the neuron layers (parameters as float64
   arrays, role, first hardware id), the weight layers (what feeds them, what they feed), the aliases
   as hardware ids, the unsupported modules and unreadable parameters, ``dt``, the sizes, and the chip
   arrays ``weights_in`` / ``weights_rec`` / ``weights_out`` the readable weights land in;
2. **rules**: :func:`~pondlib.devices.core.rules.check_rules` runs every design rule of
   :data:`~pondlib.devices.xylo.rules.MAPPER_RULES` (one function per rule id, ``rule(ctx) ->
   Iterator[Violation]``) and *all* violations are raised together in one
   :class:`~pondlib.errors.ConstraintError`, grouped by rule in checking order; each names the rule,
   the module, the offending value, the limit and a remedy. The rule ids and their prose are listed
   in :data:`RULES` (built from the rule functions' docstrings);
3. **assembly**: the specification is copied out of the context: per-neuron dashes, thresholds and
   biases at the layers' hardware ids, the weight arrays, the aliases, and a :class:`MappingReport`
   (neuron ids, dash errors, notes).

The graph and the network are never modified.

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
from typing import Any

import numpy as np

from pondlib.devices.core.lookup import as_graph
from pondlib.devices.core.rules import check_rules, raise_violations
from pondlib.devices.xylo.limits import XyloLimits, get_limits
from pondlib.devices.xylo.rules import MAPPER_RULES, RULES
from pondlib.devices.xylo.specification import MappingReport, Specification
from pondlib.devices.xylo.topology import SUPPORTED_MODULES, MappingContext, dash_of, read_topology
from pondlib.errors import ConfigError, ConstraintError, GraphError  # noqa: F401  (doctests, docstrings)
from pondlib.validate import check_bool, check_int

__all__ = ["mapper", "RULES", "SUPPORTED_MODULES"]

#: The specification's per-neuron fields: hidden (``n_hid``) and output (``n_out``).
_HIDDEN_FIELDS = ("dash_mem", "dash_syn", "dash_syn_2", "threshold", "bias")
_OUTPUT_FIELDS = ("dash_mem_out", "dash_syn_out", "threshold_out", "bias_out")
#: The fields whose rounding error the report keeps.
_DASH_FIELDS = ("dash_mem", "dash_syn", "dash_syn_2", "dash_mem_out", "dash_syn_out")


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


def _capped(lim: XyloLimits, max_hidden_neurons: Any, max_output_neurons: Any) -> XyloLimits:
    """``lim`` with Rockpool's tighter caps on hidden and output neurons (ints >= 1; a cap above the
    variant's own limit is that limit)."""
    caps = {}
    for name, field_name, value in (
        ("max_hidden_neurons", "n_hidden", max_hidden_neurons),
        ("max_output_neurons", "n_output", max_output_neurons),
    ):
        if value is not None:
            caps[field_name] = min(
                check_int(value, name, lo=1, where="mapper", error=ConfigError), getattr(lim, field_name)
            )
    return dataclasses.replace(lim, **caps) if caps else lim


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
    lim = _capped(lim, max_hidden_neurons, max_output_neurons)
    ctx = read_topology(as_graph(graph), lim, drop_biases)
    raise_violations(check_rules(MAPPER_RULES, ctx), lim.name)
    return _assemble(ctx)


# -- assembly (every rule passed: each layer is a LIF with readable parameters and dt) -----------------


def _neuron_arrays(ctx: MappingContext) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    r"""The specification's per-neuron float64 arrays, the report's dash errors and neuron ids.

    A hidden layer's neurons are ids ``offset .. offset + n - 1``, the output layer's are
    ``out_index``; at those ids ``dash_mem = log2(tau_mem / dt)``, ``dash_syn = log2(tau_syn[:, 0] / dt)``,
    ``dash_syn_2 = log2(tau_syn[:, 1] / dt)`` (0 where a layer has one synapse), ``threshold`` and
    ``bias`` (``dash_mem_out``, ``dash_syn_out``, ``threshold_out``, ``bias_out`` for the output layer),
    each with the layer's own dt; :func:`~pondlib.devices.xylo.topology.dash_of` gives the dash and its
    rounding error.
    """
    arrays = {name: np.zeros(ctx.n_hid, np.float64) for name in _HIDDEN_FIELDS}
    arrays.update({name: np.zeros(ctx.n_out, np.float64) for name in _OUTPUT_FIELDS})
    dash_error = {name: np.zeros_like(arrays[name]) for name in _DASH_FIELDS}
    neuron_ids: dict[str, np.ndarray] = {}
    for layer in ctx.layers:
        out = layer.role == "output"
        ids = ctx.out_index if out else np.arange(layer.offset, layer.offset + layer.n)
        neuron_ids[layer.name] = ids
        sfx = "_out" if out else ""
        syn_fields = ("dash_syn_out",) if out else ("dash_syn", "dash_syn_2")
        for field_name, tau in [("dash_mem" + sfx, layer.tau_mem), *zip(syn_fields, layer.tau_syn.T)]:
            dash, _, err = dash_of(tau, layer.dt)
            arrays[field_name][ids], dash_error[field_name][ids] = dash, err
        arrays["threshold" + sfx][ids] = layer.threshold
        arrays["bias" + sfx][ids] = layer.bias
    return arrays, dash_error, neuron_ids


def _notes(ctx: MappingContext) -> tuple[str, ...]:
    """The report's notes: dropped biases, spike caps the float model lacks, the chip's one step of
    delay per hop between layers, and what aliases do."""
    lim = ctx.limits
    notes = [
        f"{wl.module.name}: bias dropped (drop_biases=True); Xylo weights carry no bias (max |b| = {wl.bias_max:.4g})"
        for wl in ctx.weight_layers
        if ctx.drop_biases and wl.bias_max > 0
    ]
    for layer in ctx.layers:
        cap = lim.max_spikes_output if layer.role == "output" else lim.max_spikes_hidden
        try:
            lif_cap = float(layer.module.max_spikes_per_dt)
        except (TypeError, ValueError):
            lif_cap = float("inf")
        if lif_cap > cap:
            notes.append(
                f"{layer.name}: the chip caps {layer.role} neurons at {cap} spike(s) per step "
                f"(the float model allows {lif_cap:g}); train with max_spikes_per_dt={cap} to match"
            )
    for what, hops in (
        ("hidden->hidden", [wl.module.name for wl in ctx.weight_layers if wl.hidden_hop]),
        ("hidden->output", [wl.module.name for wl in ctx.weight_layers if wl.output_hop]),
    ):
        if hops:
            notes.append(f"one step of delay on chip per {what} hop ({', '.join(hops)}); the float model has none")
    n_alias = int(np.sum(ctx.alias_target >= 0))
    if n_alias:
        notes.append(
            f"{n_alias} alias(es): the source's spikes also leave through the target's recurrent and output "
            f"weights and count toward the target's {lim.max_spikes_hidden}-spike budget"
        )
    return tuple(notes)


def _assemble(ctx: MappingContext) -> Specification:
    """The float :class:`Specification` of a context that broke no rule, with its :class:`MappingReport`."""
    arrays, dash_error, neuron_ids = _neuron_arrays(ctx)
    out = ctx.output_layer
    report = MappingReport(
        neuron_ids=neuron_ids, output_module=out.name if out else "", dash_error=dash_error, notes=_notes(ctx)
    )
    return Specification(
        weights_in=ctx.weights_in,
        weights_rec=ctx.weights_rec,
        weights_out=ctx.weights_out,
        aliases=ctx.alias_target,
        dt=ctx.dt,
        limits_name=ctx.limits.name,
        report=report,
        **arrays,
    )
