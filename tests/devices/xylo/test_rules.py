"""Tests of the Xylo mapper's structure: the context read from a graph, the rule functions, the table."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from pondlib import nn
from pondlib.devices.core.rules import check_rules
from pondlib.devices.xylo.limits import XYLO_AUDIO2
from pondlib.devices.xylo.mapper import RULES, mapper
from pondlib.devices.xylo.rules import MAPPER_RULES
from pondlib.devices.xylo.topology import MappingContext, read_topology
from pondlib.errors import ConstraintError, Violation
from pondlib.graph import AliasConnection, GraphHolder, LIFNeurons, LinearWeights, connect_modules, find_modules

RNG = np.random.default_rng(7)

#: The rule ids of the mapper (docs and tests name them): the table keeps exactly these.
RULE_IDS = {
    "unsupported_module",
    "neuron_model",
    "invalid_parameter",
    "input_through_weights",
    "input_to_output",
    "output_from_neurons",
    "neurons_receive_weights",
    "no_consecutive_weights",
    "weights_feed_neurons",
    "single_neuron_source",
    "common_dt",
    "dt_range",
    "min_neuron_layers",
    "output_not_recurrent",
    "max_input_channels",
    "max_hidden_neurons",
    "max_output_neurons",
    "max_synapses",
    "output_single_synapse",
    "max_fanout_rec",
    "alias_source_neurons",
    "alias_target_neurons",
    "max_alias_targets",
    "alias_target_order",
    "dash_zero",
    "dash_too_large",
    "linear_bias",
}


def W(n_in: int, n_out: int) -> np.ndarray:
    return RNG.normal(scale=0.1, size=(n_in, n_out))


def g_lin(n_in: int, n_out: int, name: str) -> LinearWeights:
    return LinearWeights._factory(n_in, n_out, name, None, weights=W(n_in, n_out))


def g_lif(n: int, name: str, k: int = 1, dt: float = 1e-3) -> LIFNeurons:
    return LIFNeurons._factory(n * k, n, name, None, tau_mem=0.02, tau_syn=0.01, threshold=1.0, bias=0.0, dt=dt)


def chain(*modules) -> GraphHolder:
    for a, b in zip(modules[:-1], modules[1:]):
        connect_modules(a, b)
    return GraphHolder(list(modules[0].input_nodes), list(modules[-1].output_nodes), "net", None)


def bad_graphs() -> list:
    """Graphs that break many rules at once (each rule function is checked on all of them)."""
    many = nn.Sequential(
        nn.Linear(20, 24, weight=W(20, 24), bias=np.full(24, 0.1)),
        nn.LIF((24, 8), tau_mem=np.r_[[1e-3] * 4, [100.0] * 4]),
        nn.Linear(8, 10, weight=W(8, 10)),
        nn.LIF(10, w_rec=W(10, 10)),
    )
    a, h, b, o = g_lin(16, 4, "a"), g_lif(4, "h"), g_lin(4, 2, "b"), g_lif(2, "o", dt=2e-3)
    wired = chain(a, h, b, o)
    LinearWeights(list(wired.input_nodes), list(o.input_nodes), "skip", None, weights=W(16, 2))
    AliasConnection(list(o.output_nodes), list(h.output_nodes[:2]), "from_out", None)
    AliasConnection(list(h.output_nodes[:2]), list(o.output_nodes), "to_out", None)
    consecutive = chain(g_lin(16, 4, "w1"), g_lin(4, 4, "w2"), g_lif(4, "h1"), g_lif(4, "h2"))
    return [many, wired, consecutive]


def test_rule_table_is_built_from_the_rule_functions():
    assert set(RULES) == RULE_IDS
    assert [r.__name__ for r in MAPPER_RULES] == list(RULES)  # one function per rule id, in checking order
    for rule in MAPPER_RULES:
        first = inspect.cleandoc(rule.__doc__).split("\n\n")[0]
        assert RULES[rule.__name__] == " ".join(first.split())
    assert RULES["max_input_channels"] == "input channels <= limits.n_input"
    assert RULES["neuron_model"].startswith("neurons are Xylo's LIF: exponential (bit-shift) decay")


@pytest.mark.parametrize("index", range(3))
def test_each_rule_function_reports_only_its_own_id(index):
    g = bad_graphs()[index]
    ctx = read_topology(g.as_graph() if hasattr(g, "as_graph") else g, XYLO_AUDIO2)
    assert isinstance(ctx, MappingContext)
    found = []
    for rule in MAPPER_RULES:
        vs = list(rule(ctx))
        assert all(isinstance(v, Violation) and v.rule == rule.__name__ for v in vs), rule.__name__
        found += vs
    assert len({v.rule for v in found}) >= 2
    assert [v.rule for v in check_rules(MAPPER_RULES, ctx)] == [v.rule for v in found]


@pytest.mark.parametrize("index", range(3))
def test_violations_are_grouped_by_rule_in_checking_order(index):
    with pytest.raises(ConstraintError) as info:
        mapper(bad_graphs()[index])
    order = [r.__name__ for r in MAPPER_RULES]
    rules = info.value.rules
    assert rules == sorted(rules, key=order.index)


def test_context_of_two_hidden_layers_and_permuted_outputs():
    a, h1, b, h2, c, o = (
        g_lin(16, 4, "a"),
        g_lif(4, "h1"),
        g_lin(4, 6, "b"),
        g_lif(3, "h2", k=2),
        g_lin(3, 3, "c"),
        g_lif(3, "o"),
    )
    g = chain(a, h1, b, h2, c, o)
    g = GraphHolder(list(g.input_nodes), list(reversed(g.output_nodes)), "net", None)  # output o <- neuron 2 - o
    ctx = read_topology(g, XYLO_AUDIO2)
    assert [(x.name, x.role, x.offset, x.k) for x in ctx.layers] == [
        ("h1", "hidden", 0, 1),
        ("h2", "hidden", 4, 2),
        ("o", "output", 0, 1),
    ]
    assert (ctx.n_in, ctx.n_hid, ctx.n_out, ctx.k, ctx.dt) == (16, 7, 3, 2, 1e-3)
    assert ctx.out_index.tolist() == [2, 1, 0]
    # LIF input channel i of h2 is synapse i % 2 of neuron 4 + i // 2
    np.testing.assert_array_equal(ctx.weights_rec[:4, 4:, :], b.weights.reshape(4, 3, 2))
    np.testing.assert_array_equal(ctx.weights_out[4:, ::-1], c.weights)
    assert [w.hidden_hop for w in ctx.weight_layers] == [False, True, False]
    assert [w.output_hop for w in ctx.weight_layers] == [False, False, True]
    spec = mapper(g)
    np.testing.assert_array_equal(spec.weights_out, ctx.weights_out)
    assert spec.report.neuron_ids["o"].tolist() == [2, 1, 0]


def test_reading_the_context_leaves_the_graph_alone():
    net = nn.Sequential(
        nn.Linear(16, 8, weight=W(16, 8), bias=np.full(8, 0.2)),
        nn.LIF(8, w_rec=W(8, 8)),
        nn.Residual(nn.Linear(8, 8, weight=W(8, 8)), nn.LIF(8)),
        nn.Linear(8, 2, weight=W(8, 2)),
        nn.LIF(2),
    )
    g = net.as_graph()
    before = {
        m.name: {k: np.array(v, copy=True) for k, v in vars(m).items() if isinstance(v, np.ndarray)}
        for m in find_modules(g)[1]
    }
    ctx = read_topology(g, XYLO_AUDIO2, drop_biases=True)
    ctx.weights_in[...] = 99.0  # the context owns its arrays
    for layer in ctx.layers:
        layer.tau_mem[...] = -1.0
    for m in find_modules(g)[1]:
        for k, v in before[m.name].items():
            np.testing.assert_array_equal(getattr(m, k), v)
    assert [a.module.name for a in ctx.aliases] and ctx.alias_target.tolist()[8:] == [-1] * 8
