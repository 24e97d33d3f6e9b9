"""Graph export of pondlib.nn modules, connect_modules, traversal and printout."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from pondlib import graph, nn
from pondlib.errors import GraphError
from tests.golden import CASES, build_float_network, load_golden


def counts(g):
    _, mods = graph.find_modules(g)
    out: dict[str, int] = {}
    for m in mods:
        out[type(m).__name__] = out.get(type(m).__name__, 0) + 1
    return out


EXPECTED = {
    "ff_default": {"LinearWeights": 2, "LIFNeurons": 2},
    "residual_recurrent": {"LinearWeights": 4, "LIFNeurons": 3, "AliasConnection": 1},
    "two_synapses": {"LinearWeights": 2, "LIFNeurons": 2},
    "high_input_counts": {"LinearWeights": 2, "LIFNeurons": 2},
}


@pytest.mark.parametrize("case", CASES)
def test_golden_topologies_export_expected_graph(case):
    g_data = load_golden(case)
    net = build_float_network(g_data)
    g = net.as_graph()
    assert counts(g) == EXPECTED[case]
    assert g.size_in == 16 and g.size_out == 8
    order = graph.topological_order(g)
    lifs = [m for m in order if isinstance(m, graph.LIFNeurons)]
    # the first module reads the graph input, the last LIF writes the graph output
    assert isinstance(order[0], graph.LinearWeights)
    assert all(n.source_modules == [lifs[-1]] for n in g.output_nodes)
    # parameters are equal to the float network's and stored as numpy copies
    first = order[0]
    np.testing.assert_allclose(first.weights, g_data["float/params/0_Linear/weight"], rtol=1e-6)
    lif = lifs[0]
    np.testing.assert_allclose(lif.tau_syn, g_data["float/params/1_LIF/tau_syn"], rtol=1e-6)
    assert isinstance(lif.tau_mem, np.ndarray) and lif.tau_mem.shape == (lif.n_neurons,)
    assert lif.dt == pytest.approx(1e-3)
    if case == "two_synapses":
        assert lif.n_synapses == 2 and lif.size_in == 80 and lif.size_out == 40
    if case == "residual_recurrent":
        rec = graph.find_recurrent_modules(g)
        assert sorted(m.name for m in rec) == ["2_Residual/1_LIF", "2_Residual/1_LIF/w_rec"]
        w_rec = next(m for m in rec if isinstance(m, graph.LinearWeights))
        np.testing.assert_allclose(w_rec.weights, g_data["float/params/2_ModResidual/1_LIF/w_rec"], rtol=1e-6)
        alias = graph.modules_of_class(g, graph.AliasConnection)[0]
        # alias sources are the first LIF's neurons, targets the residual block's LIF neurons
        assert graph.source_modules_of(alias) == [lifs[0]]
        assert all(n.source_modules[0] is lifs[1] for n in alias.output_nodes)
    else:
        assert graph.find_recurrent_modules(g) == []


def test_connections_follow_the_network():
    k = jax.random.split(jax.random.PRNGKey(0), 3)
    net = nn.Sequential(nn.Linear(3, 4, key=k[0]), nn.LIF(4), nn.Linear(4, 2, key=k[1]), nn.LIF(2))
    g = net.as_graph()
    names = [m.name for m in graph.topological_order(g)]
    assert names == ["0_Linear", "1_LIF", "2_Linear", "3_LIF"]
    lin0, lif1, lin2, lif3 = graph.topological_order(g)
    assert graph.sink_modules_of(lin0) == [lif1]
    assert graph.source_modules_of(lin2) == [lif1]
    assert graph.sink_modules_of(lif3) == []
    assert all(n.sink_modules == [lin0] for n in g.input_nodes)


def test_export_never_changes_the_module_and_copies_parameters():
    net = nn.Sequential(
        nn.Linear(3, 4, key=jax.random.PRNGKey(0), bias=True), nn.LIF(4, has_rec=True, key=jax.random.PRNGKey(1))
    )
    before = jax.tree_util.tree_map(np.array, net)
    g = net.as_graph()
    lin, lif = (graph.modules_of_class(g, graph.LinearWeights)[0], graph.modules_of_class(g, graph.LIFNeurons)[0])
    lin.weights[:] = 99.0
    lif.tau_mem[:] = 99.0
    for a, b in zip(jax.tree_util.tree_leaves(before), jax.tree_util.tree_leaves(net)):
        np.testing.assert_array_equal(a, np.asarray(b))
    assert lin.computational_module is net.layers[0]


def test_connect_modules_size_mismatch_names_both_sizes():
    a = graph.GraphModule._factory(2, 5, "encoder")
    b = graph.GraphModule._factory(4, 1, "decoder")
    with pytest.raises(GraphError) as err:
        graph.connect_modules(a, b)
    msg = str(err.value)
    assert "encoder -> decoder" in msg and "got 5, expected 4" in msg and "Fix:" in msg


def test_connect_modules_with_indices():
    a = graph.GraphModule._factory(1, 4, "a")
    b = graph.GraphModule._factory(2, 1, "b")
    graph.connect_modules(a, b, source_indices=[1, 3])
    assert b.input_nodes == [a.output_nodes[1], a.output_nodes[3]]
    assert a.output_nodes[0].sink_modules == []
    with pytest.raises(GraphError, match="node index out of range"):
        graph.connect_modules(a, b, source_indices=[7, 0])


def test_graph_printout_is_readable_and_deterministic():
    net = nn.Sequential(
        nn.Linear(3, 4, key=jax.random.PRNGKey(0)),
        nn.LIF(4, has_rec=True, key=jax.random.PRNGKey(1)),
        nn.Linear(4, 2, key=jax.random.PRNGKey(2)),
        nn.LIF(2),
    )
    text = str(net.as_graph())
    assert text == str(net.as_graph())
    lines = text.splitlines()
    assert lines[0] == "GraphHolder 'Sequential' 3 -> 2"
    assert "0_Linear: LinearWeights 3 -> 4 ; inputs from [graph input]" in lines[1]
    assert any("1_LIF: LIFNeurons 4 -> 4 ; inputs from [0_Linear, 1_LIF/w_rec]" in l for l in lines)
    assert any("1_LIF/w_rec: LinearWeights 4 -> 4 ; inputs from [1_LIF]" in l for l in lines)


def test_lif_neurons_validate_parameter_shapes():
    with pytest.raises(GraphError, match="tau_syn shape"):
        graph.LIFNeurons._factory(4, 2, "lif", None, tau_mem=0.02, tau_syn=np.ones((3, 3)), threshold=1.0, bias=0.0)
    with pytest.raises(GraphError, match="a multiple of N"):
        graph.LIFNeurons._factory(5, 2, "lif", None, tau_mem=0.02, tau_syn=0.01, threshold=1.0, bias=0.0)
    lif = graph.LIFNeurons._factory(2, 2, "lif", None, tau_mem=0.02, tau_syn=0.01, threshold=1.0, bias=0.0)
    assert lif.tau_syn.shape == (2, 1) and lif.threshold.tolist() == [1.0, 1.0]


def test_as_graphholder_wraps_and_passes_holders_through():
    m = graph.GraphModule._factory(2, 3, "m")
    h = graph.as_GraphHolder(m)
    assert isinstance(h, graph.GraphHolder) and h.input_nodes == m.input_nodes
    assert graph.as_GraphHolder(h) is h
    with pytest.raises(GraphError, match="as_graph"):
        graph.as_GraphHolder(object())
