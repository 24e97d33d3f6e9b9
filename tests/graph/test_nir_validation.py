"""NIR import validation: malformed files and graphs raise NIRError naming the node and the field; valid
networks round trip losslessly (hypothesis); a Lava-style ``tau_syn == dt`` loads with ``I = input``."""

from __future__ import annotations

import tempfile
from pathlib import Path

import h5py
import jax
import jax.numpy as jnp
import nir
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.errors import GraphError, NIRError
from pondlib.interop.nir import from_nir, load_nir, write
from pondlib.nn import neurons
from tests.strategies import assert_pond_error, non_finite_arrays, wrong_dtype_arrays

SETTINGS = settings(max_examples=15, deadline=None)


def _set(node, **attrs):
    """``node`` with attributes replaced after construction (nir's constructors refuse some bad values)."""
    for k, v in attrs.items():
        object.__setattr__(node, k, v)
    return node


def _graph(nodes, edges):
    return nir.NIRGraph(nodes=nodes, edges=edges, type_check=False)


def _lif(n, **attrs):
    node = nir.LIF(tau=np.full(n, 1e-2), r=np.ones(n), v_leak=np.zeros(n), v_threshold=np.ones(n))
    return _set(node, **attrs)


def _chain(*mids, n_in=2, n_out=3):
    nodes = {"input": nir.Input(np.array([n_in])), **{k: v for k, v in mids}, "output": nir.Output(np.array([n_out]))}
    names = ["input", *(k for k, _ in mids), "output"]
    return _graph(nodes, list(zip(names, names[1:])))


# -- malformed graphs ----------------------------------------------------------------------------------
MALFORMED = {
    "missing weight": (_chain(("w", _set(nir.Linear(np.ones((3, 2))), weight=None))), ["w", "weight"]),
    "complex weight": (_chain(("w", nir.Linear(np.full((3, 2), 1j)))), ["w", "weight", "complex"]),
    "text weight": (_chain(("w", nir.Linear(np.full((3, 2), "a")))), ["w", "weight", "<U1"]),
    "1-d weight": (_chain(("w", _set(nir.Linear(np.ones((3, 2))), weight=np.ones(3)))), ["w", "weight shape"]),
    "bias shape": (_chain(("w", _set(nir.Affine(np.ones((3, 2)), np.ones(3)), bias=np.ones(5)))), ["w", "bias"]),
    "nan tau": (_chain(("w", nir.Linear(np.ones((3, 2)))), ("l", _lif(3, tau=np.full(3, np.nan)))), ["l", "tau"]),
    "negative tau": (_chain(("w", nir.Linear(np.ones((3, 2)))), ("l", _lif(3, tau=-np.ones(3)))), ["l", "tau"]),
    "param sizes": (_chain(("w", nir.Linear(np.ones((3, 2)))), ("l", _lif(3, r=np.ones(2)))), ["l", "r size"]),
    "size mismatch": (_chain(("w", nir.Linear(np.ones((3, 2)))), ("l", _lif(4)), n_out=4), ["w", "l", "sizes"]),
    "text input shape": (
        _graph(
            {
                "input": nir.Input(np.array(["a"])),
                "w": nir.Linear(np.ones((3, 2))),
                "output": nir.Output(np.array([3])),
            },
            [("input", "w"), ("w", "output")],
        ),
        ["input", "shape"],
    ),
    "zero input shape": (
        _graph(
            {"input": nir.Input(np.array([0])), "w": nir.Linear(np.ones((3, 2))), "output": nir.Output(np.array([3]))},
            [("input", "w"), ("w", "output")],
        ),
        ["input", "Input shape"],
    ),
    "edge to missing node": (
        _graph(
            {"input": nir.Input(np.array([2])), "w": nir.Linear(np.ones((3, 2))), "output": nir.Output(np.array([3]))},
            [("input", "w"), ("w", "nowhere"), ("w", "output")],
        ),
        ["missing node", "nowhere"],
    ),
    "edge of three names": (
        _graph(
            {"input": nir.Input(np.array([2])), "w": nir.Linear(np.ones((3, 2))), "output": nir.Output(np.array([3]))},
            [("input", "w", "x"), ("w", "output")],
        ),
        ["edge", "(source, target)"],
    ),
    "cycle without state": (
        _graph(
            {
                "input": nir.Input(np.array([2])),
                "a": nir.Linear(np.ones((2, 2))),
                "b": nir.Linear(np.ones((2, 2))),
                "output": nir.Output(np.array([2])),
            },
            [("input", "a"), ("a", "b"), ("b", "a"), ("b", "output")],
        ),
        ["algebraic loop", "'a'"],
    ),
    "negative delay": (
        _graph(
            {"input": nir.Input(np.array([2])), "d": nir.Delay(-np.ones(2)), "output": nir.Output(np.array([2]))},
            [("input", "d"), ("d", "output")],
        ),
        ["d", "delay"],
    ),
    "text groups": (
        _graph(
            {
                "input": nir.Input(np.array([1, 4, 4])),
                "c": _set(
                    nir.Conv2d(
                        input_shape=(4, 4),
                        weight=np.ones((2, 1, 3, 3)),
                        stride=1,
                        padding=0,
                        dilation=1,
                        groups=1,
                        bias=np.zeros(2),
                    ),
                    groups="x",
                ),
                "output": nir.Output(np.array([2, 2, 2])),
            },
            [("input", "c"), ("c", "output")],
        ),
        ["c", "groups"],
    ),
    "zero kernel": (
        _graph(
            {
                "input": nir.Input(np.array([1, 4, 4])),
                "p": nir.SumPool2d(kernel_size=np.array([0, 0]), stride=np.array([1, 1]), padding=np.array([0, 0])),
                "output": nir.Output(np.array([1, 4, 4])),
            },
            [("input", "p"), ("p", "output")],
        ),
        ["p", "kernel_size"],
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_graphs_raise_nir_error_naming_node_and_field(case):
    graph, needles = MALFORMED[case]
    err = assert_pond_error(from_nir, graph, dt=1e-3, error=NIRError)
    for needle in needles:
        assert needle in str(err), (needle, str(err))
    assert str(err).count("Fix:") == 1, str(err)


@SETTINGS
@given(
    field=st.sampled_from(["tau", "r", "v_leak", "v_threshold"]),
    bad=st.one_of(non_finite_arrays((3,)), wrong_dtype_arrays((3,))),
)
def test_bad_neuron_parameters_name_node_and_field(field, bad):
    g = _chain(("w", nir.Linear(np.ones((3, 2)))), ("neuron", _lif(3, **{field: bad})))
    err = assert_pond_error(from_nir, g, dt=1e-3, error=NIRError)
    assert "neuron" in str(err) and field in str(err)


@SETTINGS
@given(bad=st.one_of(non_finite_arrays((3, 2)), wrong_dtype_arrays((3, 2))))
def test_bad_weights_name_node_and_field(bad):
    g = _chain(("fc", nir.Linear(np.ones((3, 2)))))
    _set(g.nodes["fc"], weight=bad)
    err = assert_pond_error(from_nir, g, dt=1e-3, error=NIRError)
    assert "fc" in str(err) and "weight" in str(err)


@SETTINGS
@given(target=st.text(min_size=1, max_size=6).filter(lambda t: t not in ("input", "w", "output")))
def test_edges_to_missing_nodes(target):
    g = _graph(
        {"input": nir.Input(np.array([2])), "w": nir.Linear(np.ones((3, 2))), "output": nir.Output(np.array([3]))},
        [("input", "w"), ("w", target), ("w", "output")],
    )
    err = assert_pond_error(from_nir, g, dt=1e-3, match="missing node", error=NIRError)
    assert err.value == ("w", target)


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"dt": True}, "dt"),
        ({"dt": float("nan")}, "dt"),
        ({"dt": -1e-3}, "dt"),
        ({"dt": "1e-3"}, "dt"),
        ({"dt": 1e-3, "convention": ["auto"]}, "convention"),
        ({"dt": 1e-3, "reset": "sometimes"}, "reset"),
        ({"dt": 1e-3, "decay": "linear"}, "decay"),
    ],
)
def test_bad_load_options(kwargs, needle):
    g = _chain(("w", nir.Linear(np.ones((3, 2)))))
    assert_pond_error(load_nir, g, match=needle, error=NIRError, **kwargs)


# -- malformed files -----------------------------------------------------------------------------------
@pytest.fixture
def nir_file(tmp_path):
    path = tmp_path / "net.nir"
    nir.write(path, _chain(("fc", nir.Linear(np.ones((3, 2)))), ("neuron", _lif(3))))
    return path


def test_unknown_node_type_is_named(nir_file):
    with h5py.File(nir_file, "r+") as f:
        del f["node/nodes/fc/type"]
        f["node/nodes/fc"].create_dataset("type", data="SpikingTransformer")
    err = assert_pond_error(load_nir, nir_file, dt=1e-3, error=NIRError)
    text = str(err)
    assert "unknown NIR node type 'SpikingTransformer'" in text and "'fc'" in text and "net.nir" in text
    assert "AssertionError" not in text and "Linear" in text  # the known types are listed


@pytest.mark.parametrize("field", ["weight", "type"])
def test_missing_field_in_file_is_named(nir_file, field):
    with h5py.File(nir_file, "r+") as f:
        del f[f"node/nodes/fc/{field}"]
    err = assert_pond_error(load_nir, nir_file, dt=1e-3, match=f"missing field '{field}'", error=NIRError)
    assert "'fc'" in str(err)


def test_missing_lif_parameter_in_file_is_named(nir_file):
    with h5py.File(nir_file, "r+") as f:
        del f["node/nodes/neuron/v_leak"]
    assert_pond_error(load_nir, nir_file, dt=1e-3, match="'neuron' (LIF): missing field 'v_leak'", error=NIRError)


def test_nan_parameter_in_file_is_named(nir_file):
    with h5py.File(nir_file, "r+") as f:
        tau = f["node/nodes/neuron/tau"]
        tau[...] = np.array([1e-2, np.nan, 1e-2])
    err = assert_pond_error(load_nir, nir_file, dt=1e-3, error=NIRError)
    assert "neuron" in str(err) and "tau" in str(err) and "nan" in str(err)


def test_paths_that_are_not_files(tmp_path):
    assert_pond_error(load_nir, tmp_path, dt=1e-3, match="not a regular file", error=NIRError)
    assert_pond_error(load_nir, tmp_path / "none.nir", dt=1e-3, match="not found", error=NIRError)
    net = nn.Sequential(nn.Linear(2, 2, weight=np.ones((2, 2))), nn.LIF(2))
    assert_pond_error(write, tmp_path, net, match="is a directory", error=NIRError)
    assert_pond_error(write, tmp_path / "no" / "x.nir", net, match="directory does not exist", error=NIRError)


# -- lossless round trips ------------------------------------------------------------------------------
def _leaves_equal(a, b):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@settings(max_examples=6, deadline=None)  # each drawn shape compiles the network: keep it short
@given(
    sizes=st.tuples(st.integers(1, 4), st.integers(1, 5), st.integers(1, 3)),
    seed=st.integers(0, 2**16),
    dt=st.sampled_from([1e-3, 5e-4, 1e-4]),
    tau_mem=st.floats(2.0, 50.0),
    tau_syn=st.floats(1.0, 20.0),
    threshold=st.floats(0.1, 2.0),
    rec=st.booleans(),
)
def test_pondlib_networks_round_trip_losslessly(sizes, seed, dt, tau_mem, tau_syn, threshold, rec):
    n_in, n_hid, n_out = sizes
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    net = nn.Sequential(
        nn.Linear(n_in, n_hid, key=k[0], bias=True),
        nn.LIF(n_hid, tau_mem=tau_mem * dt, tau_syn=tau_syn * dt, threshold=threshold, has_rec=rec, key=k[1], dt=dt),
        nn.Linear(n_hid, n_out, key=k[2]),
        nn.LIF(n_out, tau_mem=tau_mem * dt, tau_syn=tau_syn * dt, dt=dt),
    )
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "net.nir"
        write(path, net)
        back = from_nir(path, dt=None)
    _leaves_equal(net, back)  # every parameter, bit for bit
    x = 2.0 * (np.random.default_rng(seed).random((2, 15, n_in)) < 0.4)
    y0, _, r0 = net(x, record=True)
    y1, _, r1 = back(x, record=True)
    assert bool(jnp.all(y0 == y1))
    for key in r0:
        assert bool(jnp.all(r0[key] == r1[key])), key


@settings(max_examples=10, deadline=None)
@given(
    n=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    taus=st.tuples(st.floats(1.0, 30.0), st.floats(1.0, 30.0)),
    decay=st.sampled_from(["euler", "exp"]),
    reset=st.sampled_from(["v_reset", "zero", "subtract"]),
)
def test_nir_neurons_round_trip_losslessly(n, seed, taus, decay, reset):
    dt = 1e-3
    rng = np.random.default_rng(seed)
    net = nn.Sequential(
        nn.Linear(2, n, weight=rng.normal(size=(2, n))),
        neurons.CubaLIF(
            n,
            tau_syn=taus[0] * dt,
            tau_mem=taus[1] * dt,
            r=rng.uniform(0.5, 2, n),
            w_in=rng.uniform(0.5, 2, n),
            v_leak=rng.normal(size=n) * 0.1,
            v_threshold=rng.uniform(0.2, 1, n),
            dt=dt,
            decay=decay,
            reset=reset,
        ),
        neurons.LI(n, tau=taus[1] * dt, dt=dt, decay=decay),
    )
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "net.nir"
        write(path, net)
        back = from_nir(path, dt=None)
    assert back[1].decay == decay and back[1].reset == reset
    _leaves_equal(net, back)
    x = rng.normal(size=(2, 12, 2)).astype(np.float32)
    assert bool(jnp.all(net(x)[0] == back(x)[0]))


# -- Lava: tau_syn == dt (issue item 4) ---------------------------------------------------------------
DT = 1e-4


def _lava_file(tmp_path, tau_syn_factor=1.0):
    """A Lava-style export: CubaLIF in the dt_scaled convention (r = tau_mem/dt, w_in = tau_syn/dt), float32,
    tau_syn = tau_syn_factor * dt, tau_mem = 2 dt (so dt/tau_mem = 0.5 exactly)."""
    f32 = np.float32
    tau_syn = np.full(2, f32(tau_syn_factor * DT), dtype=f32)
    tau_mem = np.full(2, f32(2 * DT), dtype=f32)
    g = nir.NIRGraph.from_list(
        nir.Linear(weight=np.eye(2, dtype=f32)),
        nir.CubaLIF(
            tau_syn=tau_syn,
            tau_mem=tau_mem,
            r=(tau_mem / f32(DT)).astype(f32),
            v_leak=np.zeros(2, dtype=f32),
            v_threshold=np.full(2, 10.0, dtype=f32),
            v_reset=np.zeros(2, dtype=f32),
            w_in=(tau_syn / f32(DT)).astype(f32),
        ),
    )
    path = tmp_path / "lava.nir"
    nir.write(path, g)
    return path


def test_lava_tau_syn_equal_to_dt_loads_and_current_is_the_input(tmp_path):
    path = _lava_file(tmp_path)
    with h5py.File(path, "r") as f:  # the file holds float32 9.9999997e-05 < 1e-4
        node = next(k for k in f["node/nodes"] if "lif" in k.lower())
        stored = f[f"node/nodes/{node}/tau_syn"][()]
    assert stored.dtype == np.float32 and float(stored[0]) < DT
    imp = load_nir(path, dt=None)
    assert imp.convention == "dt_scaled" and imp.dt == DT
    cuba = imp.module[1] if isinstance(imp.module, nn.Sequential) else imp.module
    p = cuba.parameters()
    assert np.all(np.asarray(p.a_syn) == 0.0) and np.all(np.asarray(p.g_syn) == 1.0)  # exactly
    x = np.array([[1.0, 0.5], [0.0, 2.0], [0.25, 0.0], [3.0, 1.0]], dtype=np.float32)
    _, _, rec = imp.module(x, record=True)
    isyn = np.asarray(rec[next(k for k in rec if k.endswith("isyn"))])
    vmem = np.asarray(rec[next(k for k in rec if k.endswith("/vmem"))])
    np.testing.assert_array_equal(isyn, x)  # I[t] = w_in x[t], w_in = 1: the input alone
    # v[t] = (1 - dt/tau_mem) v[t-1] + dt/tau_mem r I[t] = 0.5 v[t-1] + I[t], by hand:
    want = np.array([[1.0, 0.5], [0.5, 2.25], [0.5, 1.125], [3.25, 1.5625]], dtype=np.float32)
    np.testing.assert_array_equal(vmem, want)


def test_tau_syn_clearly_shorter_than_dt_is_refused(tmp_path):
    path = _lava_file(tmp_path, tau_syn_factor=0.5)
    err = assert_pond_error(load_nir, path, dt=None, error=NIRError)
    assert "tau_syn shorter than dt" in str(err) and "dt = 0.0001" in str(err)


@pytest.mark.parametrize("factor", [1.0 - 5e-6, 1.0, 1.0 + 5e-6])
def test_tau_within_tolerance_of_dt_decays_to_exactly_zero(factor):
    n = neurons.CubaLIF(1, tau_syn=factor * DT, tau_mem=factor * DT, r=1.0, w_in=3.0, dt=DT)
    p = n.parameters()
    assert float(p.a_syn[0]) == 0.0 and float(p.g_syn[0]) == 3.0
    assert float(p.a_mem[0]) == 0.0 and float(p.g_mem[0]) == 1.0


@pytest.mark.parametrize("factor", [0.5, 1.0 - 1e-3])
def test_tau_below_tolerance_is_refused_naming_tau_and_dt(factor):
    from pondlib.errors import GraphError

    err = assert_pond_error(neurons.CubaLIF, 1, tau_syn=factor * DT, tau_mem=1e-3, dt=DT, error=GraphError)
    assert "tau_syn shorter than dt" in str(err) and "dt = 0.0001" in str(err)
    assert_pond_error(neurons.NIRLIF, 1, tau=factor * DT, dt=DT, match="tau shorter than dt", error=GraphError)


def test_exp_decay_is_unchanged_at_tau_equal_dt():
    n = neurons.CubaLIF(1, tau_syn=DT, tau_mem=2 * DT, dt=DT, decay="exp")
    assert float(n.parameters().a_syn[0]) == pytest.approx(np.exp(-1.0), rel=1e-6)


# -- the graph an import runs on: GraphNetwork's structure rules ----------------------------------------
def _eye(n=2):
    return nn.Linear(n, n, weight=np.eye(n))


@pytest.mark.parametrize(
    "modules, edges, kwargs, parts",
    [
        ({"a": _eye(), "b": _eye()}, [("input", "a"), ("a", "output")], {}, ["node has no input", "got b"]),
        ({"a": _eye()}, [("input", "a")], {}, ["no edge into 'output'"]),
        ({"a": _eye()}, [("a", "a"), ("a", "output")], {}, ["no edge from 'input'", "got 0"]),
        ({"a": _eye()}, [("input", "a"), ("a", "output")], {"output_shape": (3,)}, ["output shape", "2 elements"]),
        (
            {"a": _eye(), "b": nn.Linear(2, 3, weight=np.ones((2, 3)))},
            [("input", "a"), ("input", "b"), ("a", "output"), ("b", "output")],
            {},
            ["edge b -> output", "edge sizes differ", "got b gives 3", "output takes 2"],
        ),
    ],
)
def test_graph_network_structure_refusals(modules, edges, kwargs, parts):
    with pytest.raises(GraphError, match=".*".join(p.replace("(", r"\(").replace(")", r"\)") for p in parts)):
        nn.GraphNetwork(modules, edges, **kwargs)


def test_graph_network_cuts_cycles_at_stateful_sources_only():
    # input -> w_in -> lif -> w_rec -> lif, lif -> output: the one delayed edge, lif -> w_rec, leaves the LIF,
    # so w_rec reads the previous step's spikes and runs before the LIF
    mods = {"w_in": _eye(), "lif": nn.LIF(2, threshold=0.5), "w_rec": _eye()}
    edges = [("input", "w_in"), ("w_in", "lif"), ("lif", "w_rec"), ("w_rec", "lif"), ("lif", "output")]
    net = nn.GraphNetwork(mods, edges)
    assert net.recurrent and net.delayed_nodes == ("lif",)
    assert net.order == ("w_in", "w_rec", "lif")
    assert net.sources == ((("input", False),), (("lif", True),), (("w_in", False), ("w_rec", False)))
    assert (net.out_sources, net.input_shape, net.output_shape) == (("lif",), (2,), (2,))
    # a self-loop on a stateful node is delayed too; an acyclic graph keeps insertion order
    loop = nn.GraphNetwork({"lif": nn.LIF(2)}, [("input", "lif"), ("lif", "lif"), ("lif", "output")])
    assert loop.recurrent and loop.sources == ((("input", False), ("lif", True)),)
    flat = nn.GraphNetwork(
        {"b": _eye(), "a": _eye()}, [("input", "b"), ("input", "a"), ("a", "output"), ("b", "output")]
    )
    assert not flat.recurrent and flat.order == ("b", "a") and flat.out_sources == ("a", "b")
