"""SpiNNaker2 design rules as functions: the tables are built from them, the order of the violations is
pinned, and the small machinery (``rule``, ``for_each``, ``rule_table``) refuses misuse."""

from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest

from pondlib.devices.core.rules import check_rules, for_each, rule, rule_info, rule_table
from pondlib.devices.spinnaker2 import DNN_RULES as PACKAGE_DNN_RULES
from pondlib.devices.spinnaker2 import RULES as PACKAGE_RULES
from pondlib.devices.spinnaker2.dnn import MLP, dnn_mapper
from pondlib.devices.spinnaker2.dnn_rules import DNN_RULE_FUNCTIONS, DNN_RULES
from pondlib.devices.spinnaker2.limits import SpiNNaker2Limits
from pondlib.devices.spinnaker2.mapper import RULES, WARNINGS, mapper
from pondlib.devices.spinnaker2.snn_rules import SNN_RULES, WARNING_RULES, unknown_neuron_model
from pondlib.errors import ConstraintError, PondError, Violation
from pondlib.graph import GraphHolder, LIFNeurons, LinearWeights, connect_modules
from tests.devices.spinnaker2.test_mapper import map_a_network_that_breaks_many_rules

SNN_IDS = {
    "unsupported_module",
    "unknown_neuron_model",
    "invalid_parameter",
    "single_synapse",
    "common_dt",
    "no_consecutive_weights",
    "weights_feed_neurons",
    "neurons_receive_weights",
    "single_source",
    "output_from_neurons",
    "linear_bias",
    "weight_range",
    "parameter_range",
    "delay_range",
    "neurons_per_pe",
    "neuron_index",
    "max_pes",
    "row_length",
    "memory_per_pe",
}
DNN_IDS = {"accumulator_width", "worker_sram", "max_workers", "bias_range", "shift_range", "dram_capacity"}


def _leaves(rules):
    for fn in rules:
        if hasattr(fn, "rules"):
            yield from _leaves(fn.rules)
        else:
            yield fn


# -- the tables ------------------------------------------------------------------------------------
def test_tables_are_built_from_the_rule_functions():
    assert set(RULES) == SNN_IDS and set(WARNINGS) == {"deadline_missed"} and set(DNN_RULES) == DNN_IDS
    assert PACKAGE_RULES is RULES and PACKAGE_DNN_RULES is DNN_RULES
    assert RULES == rule_table(unknown_neuron_model, *SNN_RULES)
    assert WARNINGS == rule_table(*WARNING_RULES) and DNN_RULES == rule_table(*DNN_RULE_FUNCTIONS)
    for fn in _leaves((unknown_neuron_model, *SNN_RULES, *WARNING_RULES, *DNN_RULE_FUNCTIONS)):
        first = fn.__doc__.strip().split("\n\n")[0]
        table = {**RULES, **WARNINGS, **DNN_RULES}
        assert " ".join(first.split()) in table[rule_info(fn).id], fn.__name__
    assert RULES["invalid_parameter"].count(";") >= 3  # four functions check it, each a part of the prose


# -- the order of the violations -------------------------------------------------------------------
def _lif(n, name, **kw):
    return LIFNeurons._factory(n, n, name, None, tau_mem=0.02, tau_syn=0.01, threshold=1.0, bias=0.0, **kw)


def _tangled():
    """input -a-> p1 -b-> p2 -c-> -d-> p3: a has a bias, b a NaN weight (set after construction), c feeds
    a weight layer, p2 another dt, p3 a negative threshold."""
    a = LinearWeights._factory(3, 4, "a", None, np.ones((3, 4)), np.ones(4))
    p1 = _lif(4, "p1")
    b = LinearWeights._factory(4, 4, "b", None, np.ones((4, 4)))
    p2 = _lif(4, "p2", dt=2e-3)
    c = LinearWeights._factory(4, 4, "c", None, np.ones((4, 4)))
    d = LinearWeights._factory(4, 2, "d", None, np.ones((4, 2)))
    p3 = _lif(2, "p3")
    for src, dst in ((a, p1), (p1, b), (b, p2), (p2, c), (c, d), (d, p3)):
        connect_modules(src, dst)
    b.weights = np.array(b.weights)
    b.weights[1, 2] = np.nan
    p3.threshold = np.array([1.0, -1.0])
    return GraphHolder(list(a.input_nodes), list(p3.output_nodes), "g")


def test_violations_come_rule_group_by_rule_group_and_item_by_item():
    """Population checks, the tick, then each weight layer's checks in turn (layer a's two before b's),
    then delays and scales naming nothing mappable; a layer with a violation reads no delays, so its
    delays count as naming an unknown layer."""
    with pytest.raises(ConstraintError) as err:
        mapper(_tangled(), delays={"a": 9, "b": 1, "zz": 2}, weight_scale={"p1": -1.0, "nope": 2.0})
    assert [(v.rule, v.module) for v in err.value.violations] == [
        ("invalid_parameter", "p3"),
        ("common_dt", "<graph>"),
        ("linear_bias", "a"),
        ("delay_range", "a"),
        ("invalid_parameter", "b"),
        ("weights_feed_neurons", "c"),
        ("no_consecutive_weights", "d"),
        ("delay_range", "b"),
        ("delay_range", "zz"),
        ("invalid_parameter", "p1"),
        ("invalid_parameter", "nope"),
    ]
    v = err.value.violations
    assert v[1].value == [0.001, 0.002] and v[3].value == "delay[0, 0] = 9 (12 synapse(s))"
    assert v[4].value == "weight[1, 2] = nan (1 weight(s))" and v[7].limit == ["a", "b", "c", "d"]


def test_quantization_and_placement_violations_follow_the_graph_ones_slice_by_slice():
    error = map_a_network_that_breaks_many_rules()
    assert [(v.rule, v.module) for v in error.violations] == [
        ("linear_bias", "0_Linear"),
        ("delay_range", "2_Linear"),
        ("delay_range", "4_Linear"),
        ("weight_range", "4_Linear"),
        ("neurons_per_pe", "<placement>"),
        ("neuron_index", "<placement>"),
        ("max_pes", "<placement>"),
        ("row_length", "0_Linear"),
        ("memory_per_pe", "1_LIF[0:300]"),
        ("row_length", "2_Linear"),
        ("memory_per_pe", "3_LIF[0:300]"),
        ("memory_per_pe", "5_LIF[0:10]"),
    ]


def test_dnn_violations_come_layer_by_layer_then_the_network():
    rng = np.random.default_rng(0)
    mlp = MLP.from_arrays(
        [rng.normal(size=(784, 512)), rng.normal(size=(512, 300)) * 1e-30, rng.normal(size=(300, 4))],
        biases=[np.zeros(512), np.full(300, 1e12), np.zeros(4)],
    )
    small = SpiNNaker2Limits(name="small", usable_pes_per_chip=4, sram_data_bytes=30000)
    with pytest.raises(ConstraintError) as err:
        dnn_mapper(mlp, rng.random((4, 784)), small, workers={"fc3": 1, "fc9": 2, "fc1": 1})
    assert [(v.rule, v.module) for v in err.value.violations] == [
        ("worker_sram", "fc1"),
        ("shift_range", "fc2"),
        ("bias_range", "fc2"),
        ("accumulator_width", "fc2"),
        ("max_workers", "fc2"),
        ("worker_sram", "fc9"),
    ]


# -- the machinery ---------------------------------------------------------------------------------
def test_a_rule_reports_only_its_own_id():
    @rule("mine")
    def wrong(ctx):
        """a rule that reports another id"""
        yield Violation("other", "m", 1, 0, "fix")

    with pytest.raises(PondError, match="other"):
        check_rules([wrong], None)


def test_rules_need_an_id_and_a_docstring():
    with pytest.raises(PondError, match="rule id"):
        rule("")
    with pytest.raises(PondError, match="docstring"):
        rule("x")(lambda ctx: ())
    with pytest.raises(PondError, match="rule id"):
        rule_table(lambda ctx: ())  # neither marked nor documented


def test_for_each_runs_its_rules_item_by_item_and_rule_table_joins_parts():
    @rule("big")
    def big(item):
        """at most 2"""
        if item.n > 2:
            yield Violation("big", item.name, item.n, 2, "shrink")

    @rule("odd")
    def odd(item):
        """even sizes"""
        if item.n % 2:
            yield Violation("odd", item.name, item.n, "even", "pad")

    @rule("big", extends=True)
    def big_total(ctx):
        """at most 10 in all"""
        total = sum(i.n for i in ctx.items)
        if total > 10:
            yield Violation("big", "<all>", total, 10, "remove items")

    ctx = NS(items=[NS(name="a", n=3), NS(name="b", n=1), NS(name="c", n=7)])
    rules = (for_each("items", big, odd), big_total)
    found = [(v.rule, v.module) for v in check_rules(rules, ctx)]
    assert found == [("big", "a"), ("odd", "a"), ("odd", "b"), ("big", "c"), ("odd", "c"), ("big", "<all>")]
    assert rule_table(*rules) == {"big": "at most 2; at most 10 in all", "odd": "even sizes"}
