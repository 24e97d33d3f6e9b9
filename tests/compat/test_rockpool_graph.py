"""Rockpool's graph call styles on pondlib's graph objects (our own tests of the call styles of Rockpool's
``tests/tests_default/test_graph_base.py``, ``test_graph_utils.py`` and ``test_graph_modules.py``; see
README.md here for why they are not copies, and the migration table)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.compat.rockpool import (
    GenericNeurons,
    SetList,
    add_input,
    add_output,
    bag_graph,
    clear_inputs,
    clear_outputs,
    find_modules_of_subclass,
    find_recurrent_modules,
    remove_input,
    remove_output,
    replace_module,
)
from pondlib.errors import GraphError
from pondlib.graph import GraphHolder, GraphModule, GraphModuleBase, GraphNode, LinearWeights, connect_modules
from tests.strategies import assert_pond_error, bad_types


def test_setlist_keeps_one_of_each():
    assert len(SetList()) == 0
    assert SetList([0, 1, 1, 2]) == [0, 1, 2]
    sl = SetList([0, 1])
    sl.append(2)
    assert sl[-1] == 2
    sl = SetList([0, 1])
    sl.append(0)
    assert sl == [0, 1]
    sl.extend([2, 1, 0])
    assert sl == [0, 1, 2]
    a, b = GraphNode(), GraphNode()
    assert len(SetList([a, b, a])) == 2


def test_add_remove_clear_inputs_and_outputs():
    gmb = GraphModuleBase._factory(0, 3, "test")
    gn0, gn1 = GraphNode(), GraphNode()
    add_input(gmb, gn0)
    add_output(gmb, gn1)
    assert gn0 in gmb.input_nodes and gn1 in gmb.output_nodes
    remove_input(gmb, gn0)
    assert gn0 not in gmb.input_nodes
    gn = GraphNode()
    remove_input(gmb, gn)  # not there: nothing happens (Rockpool's behaviour)
    remove_output(gmb, gn)
    assert len(gmb.output_nodes) == 4
    gm = GraphModule._factory(2, 2, "m")
    node = GraphNode()
    add_input(gm, node)
    add_input(gm, node)  # once only
    assert gm.size_in == 3 and node.sink_modules == [gm]
    clear_inputs(gm)
    clear_outputs(gm)
    assert gm.size_in == 0 and gm.size_out == 0 and node.sink_modules == []


def test_generic_neurons_factory():
    gn = GenericNeurons._factory(2, 3, "neurons")
    assert (gn.size_in, gn.size_out, gn.name) == (2, 3, "neurons")
    assert all(gn in n.sink_modules for n in gn.input_nodes)


def _chain():
    gm1 = GraphModule._factory(2, 3, "mod1")
    gm2 = GraphModule._factory(3, 4, "mod2")
    gm3 = GraphModule._factory(4, 5, "mod3")
    connect_modules(gm1, gm2)
    connect_modules(gm2, gm3)
    return gm1, gm2, gm3, GraphHolder(gm1.input_nodes, gm3.output_nodes, "graph", None)


def test_bag_graph_and_find_modules_of_subclass():
    gm1, gm2, gm3, g = _chain()
    nodes, mods = bag_graph(g)
    assert len(nodes) == 2 + 3 + 4 + 5 and {m.name for m in mods} == {"mod1", "mod2", "mod3"}
    lw = LinearWeights._factory(5, 1, "w", None, np.ones((5, 1)))
    connect_modules(gm3, lw)
    g = GraphHolder(gm1.input_nodes, lw.output_nodes, "graph", None)
    assert find_modules_of_subclass(g, LinearWeights) == [lw]
    assert len(find_modules_of_subclass(g, GraphModule)) == 4


def test_replace_module():
    gm1, gm2, gm3, g = _chain()
    gm2_1 = GraphModule._factory(3, 4, "mod2_1")
    assert replace_module(gm2, gm2_1) is gm2_1
    _, mods = bag_graph(g)
    assert gm2 not in mods and gm2_1 in mods
    assert gm2.size_in == 0 and all(gm2_1 in n.sink_modules for n in gm2_1.input_nodes)


def test_replace_module_refuses_other_sizes():
    _, gm2, _, _ = _chain()
    err = assert_pond_error(replace_module, gm2, GraphModule._factory(3, 5, "bad"), error=GraphError)
    assert "4" in str(err) and "5" in str(err)


def test_find_recurrent_modules_returns_a_pair():
    gm1 = GraphModule._factory(2, 3, "mod1")
    gm2_1 = GraphModule._factory(3, 3, "mod2_1")
    gm2_2 = GraphModule(
        input_nodes=gm2_1.output_nodes, output_nodes=gm2_1.input_nodes, name="mod2_2", computational_module=None
    )
    gm3 = GraphModule._factory(3, 4, "mod3")
    connect_modules(gm1, gm2_1)
    connect_modules(gm2_1, gm3)
    g = GraphHolder(gm1.input_nodes, gm3.output_nodes, "graph", None)
    mods, rec = find_recurrent_modules(g)
    assert {m.name for m in mods} == {"mod1", "mod2_1", "mod2_2", "mod3"}
    assert {m.name for m in rec} == {"mod2_1", "mod2_2"}
    assert gm2_2 in rec


@pytest.mark.parametrize("fn", [add_input, add_output, remove_input, remove_output])
@given(bad=bad_types())
@settings(max_examples=10, deadline=None)
def test_helpers_refuse_what_is_not_a_node_or_module(fn, bad):
    gm = GraphModule._factory(1, 1, "m")
    assert_pond_error(fn, gm, bad, match="node", error=GraphError)
    assert_pond_error(fn, bad, GraphNode(), match="module", error=GraphError)


@given(bad=st.one_of(bad_types(), st.integers()))
@settings(max_examples=10, deadline=None)
def test_replace_and_clear_refuse_non_modules(bad):
    assert_pond_error(clear_inputs, bad, error=GraphError)
    assert_pond_error(clear_outputs, bad, error=GraphError)
    assert_pond_error(replace_module, GraphModule._factory(1, 1, "m"), bad, error=GraphError)
