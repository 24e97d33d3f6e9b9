"""Bad input at every pondlib.graph entry point: GraphError naming the field, and nothing half-done.

``connect_modules`` with duplicate, fractional, negative, out-of-range, boolean or mismatched index lists,
and typed modules with non-finite, complex, ragged or misshaped parameters, must raise GraphError and leave
every graph exactly as it was. On valid input the same generators check that connecting selects exactly
the drawn nodes and that exporting a network to a graph is deterministic and lossless.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pondlib import graph, nn
from pondlib.devices.xylo import XyloLIF
from pondlib.errors import GraphError
from tests.strategies import (
    assert_pond_error,
    bad_counts,
    bad_positive_floats,
    bad_types,
    non_finite_arrays,
    ragged_lists,
    wrong_dtype_arrays,
)

SOME = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
N_SRC, N_DST = 4, 3


def snapshot(*modules):
    """Everything connect_modules could change: each module's node lists and each node's neighbours."""
    out = []
    for m in modules:
        out.append(("in", [id(n) for n in m.input_nodes], "out", [id(n) for n in m.output_nodes]))
        for n in list(m.input_nodes) + list(m.output_nodes):
            out.append(([id(s) for s in n.source_modules], [id(s) for s in n.sink_modules]))
    return out


def pair():
    a = graph.LinearWeights._factory(2, N_SRC, "a", None, np.ones((2, N_SRC)))
    b = graph.LinearWeights._factory(N_DST, 1, "b", None, np.ones((N_DST, 1)))
    return a, b


def bad_index_lists(n: int) -> st.SearchStrategy:
    """Index lists refused for a module with ``n`` nodes, each with a word the error must contain."""
    valid = st.integers(0, n - 1)
    return st.one_of(
        st.lists(valid, min_size=1, max_size=n).map(lambda v: (v + v[:1], "duplicate")),
        st.lists(valid, min_size=1, max_size=n - 1).map(lambda v: (v + [0.5], "non-integer")),
        st.integers(-5, -1).map(lambda i: ([i], "out of range")),
        st.integers(n, 10**12).map(lambda i: ([0, i] if n > 1 else [i], "out of range")),
        st.sampled_from([float("nan"), float("inf")]).map(lambda v: ([v], "finite")),
        st.just(([], "empty")),
        st.just(([True, False], "bool")),
        st.just((np.array([[0, 1]]), "rank")),
        st.just((1, "rank")),
        st.just(("01", "indices")),
        st.just(([1 + 0j], "complex")),
        ragged_lists().map(lambda v: (v, "ragged")),
    )


@SOME
@given(data=st.data())
def test_connect_modules_refuses_bad_indices_and_leaves_both_graphs_unchanged(data):
    a, b = pair()
    which = data.draw(st.sampled_from(["source", "dest"]))
    bad, word = data.draw(bad_index_lists(N_SRC if which == "source" else N_DST))
    kwargs = {f"{which}_indices": bad}
    if which == "source":  # give the other side a valid list of a length the error cannot be about
        kwargs["dest_indices"] = list(range(N_DST))
    before = snapshot(a, b)
    err = assert_pond_error(graph.connect_modules, a, b, error=GraphError, **kwargs)
    assert word in str(err).lower() or f"{which}_indices" in str(err), str(err)
    assert snapshot(a, b) == before


@SOME
@given(n=st.integers(1, N_DST), m=st.integers(1, N_DST), data=st.data())
def test_index_lists_of_different_lengths_are_refused(n, m, data):
    a, b = pair()
    src = data.draw(st.permutations(range(N_SRC)))[:n]
    dst = data.draw(st.permutations(range(N_DST)))[:m]
    before = snapshot(a, b)
    if n == m:
        graph.connect_modules(a, b, src, dst)
        assert [b.input_nodes[j] for j in dst] == [a.output_nodes[i] for i in src]
        untouched = [j for j in range(N_DST) if j not in dst]
        assert all(b.input_nodes[j].source_modules == [] for j in untouched)
    else:
        err = assert_pond_error(graph.connect_modules, a, b, src, dst, error=GraphError)
        assert f"got {n}, expected {m}" in str(err)
        assert snapshot(a, b) == before


def test_connect_modules_refuses_non_graphs_and_chained_merges():
    a, b = pair()
    for bad in (None, "a", nn.LIF(2), 3):
        assert_pond_error(graph.connect_modules, bad, b, match="source", error=GraphError)
        assert_pond_error(graph.connect_modules, a, bad, match="dest", error=GraphError)
    # a holder whose input and output nodes are the same: merging node 0 into node 1 and node 1 into
    # node 2 in one call would leave readers on a dead node
    nodes = [graph.GraphNode() for _ in range(3)]
    holder = graph.GraphHolder(nodes, nodes, "h", None)
    user = graph.LinearWeights(list(nodes), [graph.GraphNode()], "user", None, weights=np.ones((3, 1)))
    before = snapshot(holder, user)
    assert_pond_error(graph.connect_modules, holder, holder, [0, 1], [1, 2], match="merged twice", error=GraphError)
    assert snapshot(holder, user) == before


@FEW
@given(size=bad_counts().filter(lambda v: v != 0 and not isinstance(v, list)))
def test_factory_sizes_refuse_negative_fractional_and_non_numbers(size):
    """Sizes are whole numbers >= 0 (0 is a valid empty boundary); an integral float is accepted."""
    assert_pond_error(graph.GraphModule._factory, size, 1, "m", match="size_in", error=GraphError)
    assert_pond_error(graph.GraphModule._factory, 1, size, "m", match="size_out", error=GraphError)


def test_factory_accepts_integral_floats_and_numpy_ints():
    m = graph.GraphModule._factory(np.int64(2), 3.0, "m")
    assert (m.size_in, m.size_out) == (2, 3)


def test_node_lists_and_names_are_checked():
    n = graph.GraphNode()
    cases = [
        (lambda: graph.GraphModule(None, [], "m"), "input_nodes"),
        (lambda: graph.GraphModule([1, 2], [], "m"), "input_nodes[0]"),
        (lambda: graph.GraphModule([], "ab", "m"), "output_nodes"),
        (lambda: graph.GraphModule([n, n], [], "m"), "duplicate node"),
        (lambda: graph.GraphModule([], [], 3), "module name"),
        (lambda: graph.GraphHolder([n], [object()], "h", None), "output_nodes[0]"),
        (lambda: graph.AliasConnection([n], [n], "al", None), "onto itself"),
        (lambda: graph.AliasConnection([n], [graph.GraphNode(), graph.GraphNode()], "al", None), "sizes"),
    ]
    for build, field in cases:
        before = (list(n.source_modules), list(n.sink_modules))
        assert_pond_error(build, match=field, error=GraphError)
        assert (n.source_modules, n.sink_modules) == before  # a refused module never registers


# -- typed modules --------------------------------------------------------------------------------
def lin(weights, biases=None):
    src = [graph.GraphNode() for _ in range(2)]
    return src, lambda: graph.LinearWeights(src, [graph.GraphNode() for _ in range(2)], "w", None, weights, biases)


def lif(**kw):
    base = dict(tau_mem=0.02, tau_syn=0.01, threshold=1.0, bias=0.0, dt=1e-3)
    base.update(kw)
    return lambda: graph.LIFNeurons._factory(2, 2, "lif", None, **base)


@SOME
@given(data=st.data())
def test_linear_weights_refuse_bad_arrays_without_touching_the_graph(data):
    field = data.draw(st.sampled_from(["weights", "biases"]))
    shape = (2, 2) if field == "weights" else (2,)
    bad = data.draw(
        st.one_of(
            non_finite_arrays(shape),
            wrong_dtype_arrays(shape),
            ragged_lists(),
            st.just(np.ones(shape, dtype=bool)),
            st.sampled_from([np.ones((3, 3)), np.ones(5), "w"]),
        )
    )
    src, build = lin(bad, None) if field == "weights" else lin(np.ones((2, 2)), bad)
    assert_pond_error(build, match=field, error=GraphError)
    assert all(n.sink_modules == [] for n in src)


@pytest.mark.parametrize("field", ["tau_mem", "tau_syn", "threshold", "dt"])
@FEW
@given(value=bad_positive_floats().filter(lambda v: not (isinstance(v, list) and v and all(i > 0 for i in v))))
def test_lif_neurons_refuse_non_positive_time_constants_thresholds_and_dt(field, value):
    """NaN, inf, <= 0, bool, strings, None, complex (a list of positive numbers is a valid parameter)."""
    assert_pond_error(lif(**{field: value}), match=field, error=GraphError)


@FEW
@given(value=st.one_of(st.sampled_from([float("nan"), float("inf"), 0.5, 0.0, -1.0]), bad_types()))
def test_lif_neurons_refuse_bad_bias_and_spike_caps(value):
    assert_pond_error(lif(max_spikes_per_dt=value), match="max_spikes_per_dt", error=GraphError)
    if not (isinstance(value, float) and np.isfinite(value)) and not (isinstance(value, list) and value):
        assert_pond_error(lif(bias=value), match="bias", error=GraphError)


def test_lif_neurons_shapes_and_tolerated_broadcasting():
    """Documented tolerance: a scalar parameter is broadcast to every neuron (and synapse); (N,) tau_syn
    is read as (N, 1) for one synapse per neuron. Any other shape is refused."""
    m = lif(tau_syn=[0.01, 0.02])()
    assert m.tau_syn.shape == (2, 1) and m.threshold.tolist() == [1.0, 1.0]
    assert_pond_error(lif(tau_mem=np.ones(3)), match="tau_mem shape", error=GraphError)
    assert_pond_error(lif(threshold=np.ones((2, 2))), match="threshold shape", error=GraphError)
    assert_pond_error(lif(tau_mem=None), match="tau_mem", error=GraphError)


# -- valid input: exports are deterministic and lossless -------------------------------------------
@FEW
@given(
    n_in=st.integers(1, 4),
    n_hid=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    rec=st.booleans(),
    k=st.integers(1, 2),
)
def test_as_graph_is_deterministic_and_copies_parameters_exactly(n_in, n_hid, seed, rec, k):
    keys = jax.random.split(jax.random.PRNGKey(seed), 3)
    net = nn.Sequential(
        nn.Linear(n_in, n_hid * k, key=keys[0], bias=True),
        nn.LIF((n_hid * k, n_hid), tau_mem=0.02, tau_syn=0.005, has_rec=rec, key=keys[1], threshold=0.7),
        nn.Residual(nn.Linear(n_hid, n_hid, key=keys[2]), nn.LIF(n_hid)),
    )
    g1, g2 = net.as_graph(), net.as_graph()
    assert str(g1) == str(g2)
    by_name = {m.name: m for m in graph.find_modules(g1)[1]}
    np.testing.assert_array_equal(by_name["0_Linear"].weights, np.asarray(net[0].weight, dtype=float))
    np.testing.assert_array_equal(by_name["0_Linear"].biases, np.asarray(net[0].bias, dtype=float))
    np.testing.assert_array_equal(by_name["1_LIF"].tau_syn, np.asarray(net[1].tau_syn, dtype=float))
    assert by_name["1_LIF"].n_synapses == k
    assert all(np.all(m.threshold > 0) for m in graph.modules_of_class(g1, graph.LIFNeurons))
    assert len(graph.modules_of_class(g1, graph.AliasConnection)) == 1
    assert (len(graph.find_recurrent_modules(g1)) > 0) == rec


# -- audit additions: nodes, holders, as_GraphHolder, sizes ---------------------------------------
def test_graph_nodes_take_no_arguments_and_register_graph_modules_only():
    for args, kwargs in (((3,), {}), (("a", "b"), {}), ((), {"sources": []})):
        assert_pond_error(graph.GraphNode, *args, match="GraphNode arguments", error=GraphError, **kwargs)
    node = graph.GraphNode()
    for bad in (3, "m", None, nn.LIF(2), graph.GraphModule, graph.GraphNode()):
        assert_pond_error(node.add_source, bad, match="graph module", error=GraphError)
        assert_pond_error(node.add_sink, bad, match="graph module", error=GraphError)
    assert node.source_modules == [] and node.sink_modules == []


@pytest.mark.parametrize("cls", [graph.GraphHolder, graph.GraphModule, graph.GraphModuleBase])
def test_every_graph_module_refuses_duplicate_nodes(cls):
    """A holder with one node twice would make connect_modules merge that node twice (an inconsistent graph)."""
    n = graph.GraphNode()
    extra = (None,) if cls is graph.GraphHolder else ()
    assert_pond_error(cls, [n, n], [graph.GraphNode()], "h", *extra, match="duplicate node", error=GraphError)
    assert_pond_error(cls, [graph.GraphNode()], [n, n], "h", *extra, match="duplicate node", error=GraphError)
    assert n.source_modules == [] and n.sink_modules == []


@FEW
@given(bad=st.one_of(bad_types(), st.integers(), st.floats()))
def test_as_graph_holder_refuses_what_is_not_a_graph(bad):
    assert_pond_error(graph.as_GraphHolder, bad, match="graph module", error=GraphError)


def test_as_graph_holder_refuses_modules_classes_and_nodes():
    for bad in (nn.LIF(2), graph.GraphNode(), graph.GraphModule, graph.GraphHolder, object()):
        assert_pond_error(graph.as_GraphHolder, bad, match="graph module", error=GraphError)


def test_factory_sizes_are_bounded():
    """A graph module builds one Python object per node: sizes beyond MAX_NODES are refused, not attempted."""
    assert_pond_error(graph.GraphModule._factory, graph.MAX_NODES + 1, 1, "m", match="size_in", error=GraphError)
    assert_pond_error(graph.GraphModule._factory, 1, 10**12, "m", match="size_out", error=GraphError)


def test_connect_modules_refuses_indices_of_the_wrong_kind():
    """Sets, dicts and iterators have no order; integral floats and numpy/JAX integer arrays are tolerated."""
    for bad in ({0, 1, 2}, {"a": 1}, iter([0, 1, 2]), np.array([0, 1, 2], dtype=object), [0, 1, 2**70]):
        a, b = pair()
        before = snapshot(a, b)
        assert_pond_error(graph.connect_modules, a, b, bad, [0, 1, 2], match="source_indices", error=GraphError)
        assert snapshot(a, b) == before
    for ok in ([0, 1, 2.0], np.array([0, 1, 2], np.uint8), range(3), jax.numpy.arange(3)):
        a, b = pair()
        graph.connect_modules(a, b, ok, [0, 1, 2])
        assert [b.input_nodes[j] for j in range(3)] == a.output_nodes[:3]


# -- valid input: exported graphs are consistent -------------------------------------------------
def assert_consistent(g, size_in, size_out):
    """Every module is registered with its nodes both ways, nodes hold no stale module, sizes match the
    typed parameters, and the boundary has the network's sizes."""
    assert (g.size_in, g.size_out) == (size_in, size_out)
    nodes, modules = graph.find_modules(g)
    for m in modules:
        assert not isinstance(m, graph.GraphHolder)
        assert len({id(n) for n in m.input_nodes}) == m.size_in
        assert len({id(n) for n in m.output_nodes}) == m.size_out
        assert all(any(s is m for s in n.sink_modules) for n in m.input_nodes), m.name
        assert all(any(s is m for s in n.source_modules) for n in m.output_nodes), m.name
        if isinstance(m, graph.LinearWeights):
            assert m.weights.shape == (m.size_in, m.size_out)
            assert m.biases is None or m.biases.shape == (m.size_out,)
        if isinstance(m, graph.LIFNeurons):
            n, k = m.n_neurons, m.n_synapses
            assert m.size_in == n * k and m.tau_syn.shape == (n, k)
            assert m.tau_mem.shape == m.threshold.shape == m.bias.shape == (n,)
        if isinstance(m, graph.AliasConnection):
            assert m.size_in == m.size_out
    for node in nodes:
        assert all(any(n is node for n in s.output_nodes) for s in node.source_modules)
        assert all(any(n is node for n in s.input_nodes) for s in node.sink_modules)
    for n in g.input_nodes:
        assert n.sink_modules, "a boundary input node feeds nothing"
    for n in g.output_nodes:
        assert n.source_modules, "a boundary output node is written by nothing"
    order = graph.topological_order(g)
    assert len(order) == len(modules)


@FEW
@given(
    n_in=st.integers(1, 4),
    n_hid=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    rec=st.booleans(),
    k=st.integers(1, 2),
    kind=st.sampled_from(["sequential", "graphnet", "xylo"]),
)
def test_as_graph_of_a_valid_network_is_consistent(n_in, n_hid, seed, rec, k, kind):
    keys = jax.random.split(jax.random.PRNGKey(seed), 4)
    if kind == "sequential":
        net = nn.Sequential(
            nn.Linear(n_in, n_hid * k, key=keys[0], bias=True),
            nn.LIF((n_hid * k, n_hid), has_rec=rec, key=keys[1]),
            nn.Residual(nn.Linear(n_hid, n_hid, key=keys[2]), nn.LIF(n_hid)),
            nn.Linear(n_hid, 2, key=keys[3]),
        )
    elif kind == "graphnet":
        mods = {
            "w": nn.Linear(n_in, n_hid, key=keys[0]),
            "n": nn.LIF(n_hid),
            "skip": nn.Linear(n_in, n_hid, key=keys[1]),
        }
        edges = [("input", "w"), ("input", "skip"), ("w", "n"), ("skip", "n"), ("n", "output")]
        if rec:
            mods["r"] = nn.Linear(n_hid, n_hid, key=keys[2])
            edges += [("n", "r"), ("r", "n")]
        net = nn.GraphNetwork(mods, edges)
    else:
        w = np.asarray(jax.random.normal(keys[0], (n_in, n_hid * k)))
        w_rec = np.asarray(jax.random.normal(keys[1], (n_hid, n_hid * k))) if rec else None
        net = XyloLIF(n_in, n_hid, k, weight=w, w_rec=w_rec)
    g = net.as_graph()
    assert_consistent(g, net.size_in, net.size_out)
    assert str(g) == str(net.as_graph())
    assert bool(graph.find_recurrent_modules(g)) == rec
