"""Bad input at every pondlib.nn entry point: constructors raise GraphError, calls SimulationError.

Driven by the shared hypothesis strategies of ``tests/strategies.py``. Each test asserts the error names
the offending field (or value), or, for a documented tolerant behaviour, that the result equals the
result of the canonical input. Arrays stay tiny and shapes fixed so that JAX compiles each module once.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.devices.xylo import XyloLIF, XyloLIFState
from pondlib.errors import GraphError, PondError, SimulationError
from pondlib.nn.layers import MAX_DELAY_STEPS
from tests.strategies import (
    NON_FINITE,
    assert_pond_error,
    bad_counts,
    bad_positive_floats,
    bad_scalars,
    bad_types,
    non_finite_arrays,
    ragged_lists,
    wrong_dtype_arrays,
)

FEW = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SOME = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEY = jax.random.PRNGKey(0)
W32 = np.ones((3, 2))


def not_a_shape(v) -> bool:
    """bad_counts() also draws short lists of ints, which are valid shapes for shape arguments."""
    return not isinstance(v, list)


# -- constructors: sizes ---------------------------------------------------------------------------
SIZE_CTORS = {
    "Linear n_in": (lambda v: nn.Linear(v, 2, key=KEY), "n_in"),
    "Linear n_out": (lambda v: nn.Linear(2, v, key=KEY), "n_out"),
    "LIF": (lambda v: nn.LIF(v), "LIF shape"),
    "LIF pair": (lambda v: nn.LIF((4, v)), "LIF shape"),
    "XyloLIF": (lambda v: XyloLIF(2, v, weight=1.0), "n"),
    "XyloLIF synapses": (lambda v: XyloLIF(2, 2, v, weight=1.0), "n_synapses"),
    "CubaLIF": (lambda v: nn.CubaLIF(v, tau_syn=1e-3, tau_mem=1e-3), "neuron shape"),
    "IF": (lambda v: nn.IF(v), "neuron shape"),
    "Threshold": (lambda v: nn.Threshold(v), "neuron shape"),
    "Scale": (lambda v: nn.Scale(v, scale=1.0), "input shape"),
    "Delay": (lambda v: nn.Delay(v, delay=0.0, dt=1e-3), "input shape"),
    "Flatten": (lambda v: nn.Flatten((2, v)), "input shape"),
    "SumPool2d kernel": (lambda v: nn.SumPool2d((1, 4, 4), kernel_size=v), "kernel_size"),
    "SumPool2d stride": (lambda v: nn.SumPool2d((1, 4, 4), kernel_size=2, stride=v), "stride"),
    "Conv2d stride": (lambda v: nn.Conv2d((1, 4, 4), weight=np.ones((1, 1, 2, 2)), stride=v), "stride"),
    "Conv1d dilation": (lambda v: nn.Conv1d((1, 6), weight=np.ones((1, 1, 2)), dilation=v), "dilation"),
    "Conv2d groups": (lambda v: nn.Conv2d((2, 4, 4), weight=np.ones((2, 1, 2, 2)), groups=v), "groups"),
    "XyloLIF max_spikes": (lambda v: XyloLIF(2, 2, weight=1.0, max_spikes=v), "max_spikes"),
    "LIF max_spikes": (lambda v: nn.LIF(2, max_spikes_per_dt=v), "max_spikes_per_dt"),
}


@pytest.mark.parametrize("ctor", sorted(SIZE_CTORS))
@FEW
@given(value=bad_counts().filter(not_a_shape))
def test_sizes_refuse_non_positive_fractional_and_non_numbers(ctor, value):
    """Every size or count: 0, negatives, fractions, NaN/inf, strings, None, bool, complex -> GraphError.
    (``SumPool2d(stride=None)`` is the documented default: the stride of the kernel.)"""
    assume(not (ctor == "SumPool2d stride" and value is None))
    build, field = SIZE_CTORS[ctor]
    assert_pond_error(build, value, match=field, error=GraphError)


def test_documented_examples_of_the_issue():
    assert_pond_error(nn.LIF, 2.5, match="LIF shape", error=GraphError)
    assert_pond_error(nn.Sequential, 1, 2, match="module 0", error=GraphError)
    assert_pond_error(nn.Conv2d, (1, 4, 4), weight=np.ones((1, 1, 2, 2)), stride=0, match="stride", error=GraphError)


def test_integral_float_sizes_are_tolerated():
    """Documented tolerance: an integral float (``3.0``, ``np.float64(3)``) is accepted as the int."""
    assert nn.Linear(3.0, np.int64(2), key=KEY).n_in == 3
    assert nn.LIF(3.0).n_neurons == 3 and nn.LIF((4.0, 2)).n_synapses == 2
    conv = nn.Conv2d((1.0, 4, 4), weight=np.ones((1, 1, 2, 2)), stride=2.0)
    assert conv.stride == (2, 2) and conv.input_shape == (1, 4, 4)
    assert all(isinstance(v, int) for v in conv.stride + conv.input_shape)


@pytest.mark.parametrize(
    "build, field",
    [
        (lambda: nn.Conv2d((1, 4, 4), weight=np.ones((1, 1, 2, 2)), padding=-1), "padding"),
        (lambda: nn.Conv2d((1, 4, 4), weight=np.ones((1, 1, 2, 2)), padding="full"), "padding"),
        (lambda: nn.Conv2d((1, 4, 4), weight=np.ones((1, 1, 2, 2)), padding="same", stride=2), "padding"),
        (lambda: nn.Conv2d((1, 4, 4), weight=np.ones((1, 1, 2, 2)), stride=(1, 2, 3)), "stride"),
        (lambda: nn.Conv2d((1, 4), weight=np.ones((1, 1, 2, 2))), "input shape"),
        (lambda: nn.Conv2d((1, 4, 4), weight=np.ones((1, 2, 2))), "weight shape"),
        (lambda: nn.Conv2d((1, 4, 4), weight=np.ones((3, 1, 2, 2)), bias=[1.0, 2.0]), "bias shape"),
        (lambda: nn.Conv2d((1, 2, 2), weight=np.ones((1, 1, 3, 3))), "conv output size"),
        (lambda: nn.SumPool2d((1, 4, 4), kernel_size=2, padding=-1), "padding"),
        (lambda: nn.Flatten((2, 3), start_dim=0.5), "start_dim"),
        (lambda: nn.Flatten((2, 3), start_dim=1, end_dim=0), "flatten dims"),
        (lambda: nn.Flatten(()), "input shape"),
        (lambda: nn.Scale(3, scale=[1.0, 2.0]), "scale shape"),
        (lambda: nn.Delay(2, delay=-1e-3, dt=1e-3), "delay"),
        (lambda: nn.Delay(2, delay=1.5e-3, dt=1e-3), "whole number of steps"),
        (lambda: nn.Delay(2, delay=1e300, dt=1e-3), "delay steps"),
        (lambda: nn.Delay(2, delay=[1e-3, 2e-3, 3e-3], dt=1e-3), "delay shape"),
        (lambda: nn.LIF(3, tau_mem=np.ones(4)), "tau_mem shape"),
        (lambda: nn.LIF((6, 3), tau_syn=np.ones((2, 3))), "tau_syn shape"),
        (lambda: nn.LIF(3, w_rec=np.ones((3, 4))), "w_rec shape"),
        (lambda: nn.LIF(3, has_rec="True", key=KEY), "has_rec"),
        (lambda: nn.LIF(3, has_rec=True), "random key"),
        (lambda: nn.LIF(3, has_rec=True, key=0), "key"),
        (lambda: nn.LIF(3, surrogate="arctan"), "surrogate"),
        (lambda: nn.LIF(3, tau_mem=True), "tau_mem"),
        (lambda: nn.Linear(2, 2), "random key"),
        (lambda: nn.Linear(2, 2, key="k"), "key"),
        (lambda: nn.Linear(2, 2, key=KEY, bias=np.ones(3)), "bias shape"),
        (lambda: nn.Linear(2, 2, key=KEY, bias="yes"), "bias"),
        (lambda: XyloLIF(2, 2, weight=np.ones((3, 2))), "weight shape"),
        (lambda: XyloLIF(2, 2, weight=1.0, quantize="int8"), "quantize"),
        (lambda: XyloLIF(2, 2, weight=1.0, delay_in="no"), "delay_in"),
        (lambda: XyloLIF(2, 2, weight=1.0, input_clip=0), "input_clip"),
        (lambda: XyloLIF(2, 2, weight=1.0, weight_bits=1), "weight_bits"),
        (lambda: XyloLIF(2, 2, weight=1.0, state_bits=40), "state_bits"),
        (lambda: XyloLIF(2, 2, weight=1.0, dash_max=0), "dash_max"),
        (lambda: nn.CubaLIF(2, tau_syn=1e-3, tau_mem=1e-3, reset="hard"), "reset"),
        (lambda: nn.CubaLIF(2, tau_syn=1e-3, tau_mem=1e-3, v_threshold=None), "v_threshold"),
        (lambda: nn.CubaLIF(2, tau_syn=1e-3, tau_mem=1e-3, w_in=None), "w_in"),
        (lambda: nn.LI(2, tau=1e-3, v_leak=None), "v_leak"),
        (lambda: nn.LI(2, tau=1e-3, decay="linear"), "decay"),
        (lambda: nn.LI(2, tau=1e-4, dt=1e-3), "tau shorter than dt"),
        (lambda: nn.LI(2, tau=1e-30, r=1e30, decay="exp"), "overflows float32"),
        (lambda: nn.Integrator(2, r=[1.0, 2.0, 3.0]), "r shape"),
        (lambda: nn.Surrogate("sigmoid"), "surrogate kind"),
        (lambda: nn.Surrogate("arctan", 1e300), "surrogate scale"),
    ],
)
def test_constructor_errors_name_the_parameter(build, field):
    assert_pond_error(build, match=field, error=GraphError)


# -- constructors: float parameters ---------------------------------------------------------------
POSITIVE_PARAMS = {
    "LIF tau_mem": (lambda v: nn.LIF(2, tau_mem=v), "tau_mem"),
    "LIF tau_syn": (lambda v: nn.LIF(2, tau_syn=v), "tau_syn"),
    "LIF threshold": (lambda v: nn.LIF(2, threshold=v), "threshold"),
    "LIF dt": (lambda v: nn.LIF(2, dt=v), "dt"),
    "NIRLIF tau": (lambda v: nn.NIRLIF(2, tau=v, dt=1e-30), "tau"),
    "CubaLIF tau_syn": (lambda v: nn.CubaLIF(2, tau_syn=v, tau_mem=1.0, dt=1e-30), "tau_syn"),
    "IF dt": (lambda v: nn.IF(2, dt=v), "dt"),
    "XyloLIF threshold": (lambda v: XyloLIF(2, 2, weight=1.0, threshold=v), "threshold"),
    "XyloLIF dt": (lambda v: XyloLIF(2, 2, weight=1.0, dt=v), "dt"),
    "Delay dt": (lambda v: nn.Delay(2, delay=0.0, dt=v), "dt"),
    "Surrogate scale": (lambda v: nn.Surrogate("triangle", v), "scale"),
}


def not_a_valid_vector(v) -> bool:
    """bad_positive_floats() draws short lists of ints too; a list of positive ints can be a valid
    per-neuron or per-synapse parameter of a 2-neuron layer."""
    return not (isinstance(v, list) and v and all(i > 0 for i in v))


@pytest.mark.parametrize("param", sorted(POSITIVE_PARAMS))
@FEW
@given(value=bad_positive_floats().filter(not_a_valid_vector))
def test_positive_parameters_refuse_nan_zero_negative_and_non_numbers(param, value):
    """Time constants, dt, LIF thresholds, surrogate scales: NaN, inf, <= 0, bool, str, None -> GraphError."""
    build, field = POSITIVE_PARAMS[param]
    assert_pond_error(build, value, match=field, error=GraphError)


@pytest.mark.parametrize("value", [5e-324, 1e-320, 1e-40, 1e300, 3.5e38])
def test_subnormal_and_huge_parameters_are_refused(value):
    """A subnormal time constant or threshold would flush to 0 in float32 (NaN spikes); a huge one is inf."""
    for param in ("LIF tau_mem", "LIF threshold", "LIF dt", "NIRLIF tau", "XyloLIF threshold"):
        build, field = POSITIVE_PARAMS[param]
        assert_pond_error(build, value, match=field, error=GraphError)


@SOME
@given(value=bad_scalars())
def test_array_parameters_refuse_non_finite_and_beyond_float32(value):
    """Weights, biases, w_rec, scales, thresholds of NIR neurons: NaN/inf or beyond float32 -> GraphError.
    Subnormal values are tolerated where nothing divides by them (they are 0 in float32)."""
    big = not np.isfinite(value) or abs(value) > 3.4e38
    cases = [
        (lambda: nn.Linear(1, 2, weight=[[value, 1.0]]), "weight"),
        (lambda: nn.Linear(1, 2, weight=[[1.0, 1.0]], bias=[0.0, value]), "bias"),
        (lambda: nn.LIF(2, w_rec=[[0.0, value], [0.0, 0.0]]), "w_rec"),
        (lambda: nn.LIF(2, bias=value), "bias"),
        (lambda: nn.Scale(2, scale=[value, 1.0]), "scale"),
        (lambda: nn.Threshold(2, threshold=value), "threshold"),
        (lambda: nn.CubaLIF(2, tau_syn=1e-3, tau_mem=1e-3, v_threshold=value), "v_threshold"),
        (lambda: XyloLIF(1, 2, weight=[[value, 1.0]]), "weight"),
        (lambda: XyloLIF(1, 2, weight=1.0, w_rec=[[value, 1.0], [0.0, 0.0]]), "w_rec"),
        (lambda: nn.Conv1d((1, 4), weight=[[[value, 1.0]]]), "weight"),
    ]
    for build, field in cases:
        if big:
            assert_pond_error(build, match=field, error=GraphError)
        else:  # tolerated: subnormal, computed as (or next to) 0 in float32, and every output finite
            module = build()
            leaves = jax.tree_util.tree_leaves(module)
            assert all(bool(jnp.all(jnp.isfinite(a))) for a in leaves)


@pytest.mark.parametrize("shape", [(2, 2), (2,)])
@SOME
@given(data=st.data())
def test_weight_arrays_refuse_non_finite_wrong_dtype_and_ragged(shape, data):
    bad = data.draw(st.one_of(non_finite_arrays(shape), wrong_dtype_arrays(shape), ragged_lists()))
    if len(shape) == 2:
        assert_pond_error(nn.Linear, 2, 2, weight=bad, match="weight", error=GraphError)
        assert_pond_error(XyloLIF, 2, 2, weight=bad, match="weight", error=GraphError)
        assert_pond_error(nn.LIF, 2, w_rec=bad, match="w_rec", error=GraphError)
    else:
        assert_pond_error(nn.LIF, 2, tau_mem=bad, match="tau_mem", error=GraphError)
        assert_pond_error(nn.LIF, 2, threshold=bad, match="threshold", error=GraphError)
        assert_pond_error(nn.NIRLIF, 2, tau=1e-3, v_threshold=bad, match="v_threshold", error=GraphError)
        assert_pond_error(nn.Scale, 2, scale=bad, match="scale", error=GraphError)
        assert_pond_error(nn.Delay, 2, delay=bad, dt=1e-3, match="delay", error=GraphError)


def test_lif_threshold_zero_or_negative_is_refused_but_nir_thresholds_are_tolerated():
    """pondlib's LIF divides by its threshold (0 would give NaN spikes, a negative one spikes at rest):
    refused. NIR neurons compare ``v > v_threshold`` and never divide: any finite threshold is tolerated,
    and such a layer exports as a NIRNeuronGroup (no LIF equivalent) instead of an invalid LIF."""
    for thr in (0.0, -1.0, [1.0, 0.0]):
        assert_pond_error(nn.LIF, 2, threshold=thr, match="threshold", error=GraphError)
    x = jnp.ones((5, 2))
    for thr in (0.0, -0.5):
        cuba = nn.CubaLIF(2, tau_syn=2e-3, tau_mem=2e-3, v_threshold=thr, reset="subtract")
        z, state, _ = cuba(x)
        assert bool(jnp.all(jnp.isfinite(z))) and set(np.unique(np.asarray(z))) <= {0.0, 1.0}
        assert cuba.lif_equivalent() is None and type(cuba.as_graph()).__name__ == "NIRNeuronGroup"


def test_sequential_refuses_non_modules():
    for bad in ([], [1], ["a"], [None], [nn.LIF], [nn.LIF(2), object()]):
        assert_pond_error(nn.Sequential, *bad, error=GraphError)
    assert_pond_error(nn.Residual, "LIF", error=GraphError)
    assert_pond_error(nn.Sequential, nn.LIF(2), nn.LIF(3), match="1_LIF", error=GraphError)
    # documented tolerance: a single list or tuple of modules is the same as the modules
    a, b = nn.Linear(2, 3, key=KEY), nn.LIF(3)
    assert nn.Sequential([a, b]).layers == nn.Sequential(a, b).layers


# -- GraphNetwork --------------------------------------------------------------------------------
def _lin(n=2):
    return nn.Linear(n, n, weight=np.eye(n))


@pytest.mark.parametrize(
    "modules, edges, field",
    [
        ("abc", [("input", "a"), ("a", "output")], "modules"),
        ({}, [], "modules"),
        ({1: _lin()}, [("input", 1), (1, "output")], "node name"),
        ({"input": _lin()}, [("input", "output")], "node name"),
        ({"a": 3}, [("input", "a"), ("a", "output")], "modules['a']"),
        ({"a": _lin()}, "input->a", "edges"),
        ({"a": _lin()}, [("input", "a", "output")], "edges[0]"),
        ({"a": _lin()}, [("input", 1)], "edges[0]"),
        ({"a": _lin()}, [("input", "a"), ("input", "a"), ("a", "output")], "duplicate edge"),
        ({"a": _lin()}, [("input", "b"), ("a", "output")], "not a node"),
        ({"a": _lin(), "b": _lin()}, [("input", "a"), ("b", "b"), ("a", "output")], "unreachable"),
        ({"a": _lin(), "b": _lin(3)}, [("input", "a"), ("a", "b"), ("b", "output")], "edge sizes differ"),
    ],
)
def test_graph_network_refuses_malformed_graphs(modules, edges, field):
    assert_pond_error(nn.GraphNetwork, modules, edges, match=field, error=GraphError)


def test_graph_network_shapes_are_checked():
    edges = [("input", "a"), ("a", "output")]
    for bad in (2.5, (0, 2), "ab", (1, None)):
        assert_pond_error(nn.GraphNetwork, {"a": _lin()}, edges, input_shape=bad, match="input_shape")
    net = nn.GraphNetwork({"a": _lin(4)}, edges, input_shape=(2, 2.0))
    assert net.input_shape == (2, 2)
    assert_pond_error(net, [[[1.0, 2.0], [3.0]]], match="ragged", error=SimulationError)
    assert_pond_error(net, np.zeros((3, 3, 2)), match="input shape", error=SimulationError)
    np.testing.assert_array_equal(net(np.ones((3, 2, 2)))[0], net(np.ones((3, 4)))[0])


# -- calls ----------------------------------------------------------------------------------------
def _modules():
    k = jax.random.split(KEY, 3)
    return {
        "LIF": nn.LIF(2, threshold=0.5),
        "Linear": nn.Linear(2, 2, key=k[0]),
        "Sequential": nn.Sequential(
            nn.Linear(2, 3, key=k[1]), nn.LIF(3, has_rec=True, key=k[2]), nn.Linear(3, 2, key=k[0])
        ),
        "CubaLIF": nn.CubaLIF(2, tau_syn=2e-3, tau_mem=2e-3),
        "Delay": nn.Delay(2, delay=[1e-3, 3e-3], dt=1e-3),
        "XyloLIF": XyloLIF(2, 2, weight=np.eye(2), threshold=0.5),
        "Threshold": nn.Threshold(2, threshold=0.5),
        "GraphNetwork": nn.GraphNetwork(
            {"a": nn.Linear(2, 2, weight=np.eye(2)), "n": nn.LIF(2)}, [("input", "a"), ("a", "n"), ("n", "output")]
        ),
    }


MODULES = _modules()
NAMES = sorted(MODULES)
X = np.linspace(0.0, 1.0, 8).reshape(4, 2)


@pytest.mark.parametrize("name", NAMES)
@FEW
@given(data=st.data())
def test_calls_refuse_bad_input(name, data):
    """Ragged, complex, strings/objects, NaN/inf, int64 beyond int32, float64 beyond float32, wrong rank
    or size, empty batch/time: SimulationError naming the input (never a JAX traceback)."""
    module = MODULES[name]
    bad, field = data.draw(
        st.one_of(
            ragged_lists().map(lambda v: (v, "ragged")),
            wrong_dtype_arrays((4, 2)).map(lambda v: (v, "dtype")),
            non_finite_arrays((4, 2)).map(lambda v: (v, "non-finite input")),
            non_finite_arrays((2, 4, 2)).map(lambda v: (v, "non-finite input")),
            st.integers(2**31, 2**62).map(lambda v: (np.full((4, 2), v, dtype=np.int64), "int32")),
            st.floats(3.5e38, 1e308).map(lambda v: (np.full((4, 2), v), "float32")),
            st.sampled_from([(2,), (1, 1, 4, 2), ()]).map(lambda s: (np.zeros(s), "input shape")),
            st.sampled_from([(0, 2), (0, 4, 2), (3, 0, 2)]).map(lambda s: (np.zeros(s), "input shape")),
            st.integers(3, 6).map(lambda n: (np.zeros((4, n)), "input channels")),
            bad_types().filter(lambda v: not isinstance(v, list)).map(lambda v: (v, "x")),
        )
    )
    err = assert_pond_error(module, bad, error=SimulationError)
    assert field.lower() in str(err).lower() or "x" in str(err), str(err)


@pytest.mark.parametrize("name", NAMES)
def test_complex_input_is_refused_not_truncated(name):
    module = MODULES[name]
    for x in (X + 1j, jnp.asarray(X) * (1 + 0j), X.astype(np.complex64)):
        assert_pond_error(module, x, match="complex", error=SimulationError)


@pytest.mark.parametrize("name", NAMES)
def test_tolerated_input_forms_give_the_same_result(name):
    """Documented tolerance: lists, integer/bool arrays and float64 within float32 are converted, and give
    exactly the result of the float32 array; runs are deterministic."""
    module = MODULES[name]
    ref, state, _ = module(jnp.asarray(X, jnp.float32))
    np.testing.assert_array_equal(module(X.tolist())[0], ref)  # float64 values, as a list
    ints = (X > 0.5).astype(np.int64)
    np.testing.assert_array_equal(module(ints)[0], module(ints.astype(bool))[0])
    assert bool(jnp.all(jnp.isfinite(ref)))


@functools.cache
def _states(name):
    """(input of batch 3, its final state, the final state of a batch of 2), computed once per module."""
    x3 = np.stack([X, X, X])
    return x3, MODULES[name](x3)[1], MODULES[name](x3[:2])[1]


@pytest.mark.parametrize("name", NAMES)
@FEW
@given(data=st.data())
def test_calls_refuse_a_bad_state(name, data):
    """A state passed back with NaN, another structure, another batch size or non-numbers: SimulationError
    naming the state; the state of a previous call (batched or unbatched) is accepted."""
    module = MODULES[name]
    x3, good, batch2 = _states(name)
    if not jax.tree_util.tree_leaves(good):  # stateless: only None (or an empty structure) is a state
        bad = data.draw(st.sampled_from([(1, 2), {"a": 1}, "state", 3.0]))
        assert_pond_error(module, x3, state=bad, match="state", error=SimulationError)
        return
    kind = data.draw(st.sampled_from(["nan", "structure", "batch", "unbatched_input", "dtype", "leaf"]))
    leaves, treedef = jax.tree_util.tree_flatten(good)
    i = data.draw(st.integers(0, len(leaves) - 1))
    if kind == "nan":
        v = data.draw(st.sampled_from(NON_FINITE))
        leaves[i] = np.asarray(leaves[i]).copy()
        leaves[i].reshape(-1)[0] = v
        bad, x, field = jax.tree_util.tree_unflatten(treedef, leaves), x3, "non-finite state"
    elif kind == "structure":
        bad = data.draw(st.sampled_from([(1, 2), [None], {"modules": 1}, "state", leaves[:-1] or [1, 2]]))
        x, field = x3, "state"  # "state structure", or "state shape" when only the leaves' shapes differ
    elif kind == "batch":
        bad, x, field = batch2, x3, "state shape"
    elif kind == "unbatched_input":
        bad, x, field = good, X, "state shape"
    elif kind == "dtype":
        leaves[i] = np.asarray(leaves[i]) + 1j
        bad, x, field = jax.tree_util.tree_unflatten(treedef, leaves), x3, "complex"
    else:
        bare = treedef.num_nodes == 1  # the state is one array: None would mean "no state", a valid call
        leaves[i] = data.draw(st.sampled_from(["a", [[1.0], [1.0, 2.0]]] + ([] if bare else [None])))
        bad, x, field = jax.tree_util.tree_unflatten(treedef, leaves), x3, "state"
    assert_pond_error(module, x, state=bad, match=field, error=SimulationError)


@pytest.mark.parametrize("name", NAMES)
def test_a_state_passed_back_continues_the_run(name):
    """Two halves equal the whole run; an unbatched state broadcasts over the batch; a state whose named
    tuples became plain tuples or lists (e.g. after serialisation) is accepted."""
    module = MODULES[name]
    x = np.stack([X, X[::-1], X * 0.5])
    whole, _, _ = module(x)
    first, st1, _ = module(x[:, :2])
    second, _, _ = module(x[:, 2:], state=st1)
    np.testing.assert_allclose(np.concatenate([first, second], axis=1), whole, rtol=1e-6, atol=1e-6)
    _, s_one, _ = module(X)
    y_b, _, _ = module(x, state=s_one)
    np.testing.assert_allclose(y_b[1], module(x[1], state=s_one)[0], rtol=1e-6, atol=1e-6)

    def plain(t):
        return [plain(v) for v in t] if isinstance(t, tuple) else t

    if isinstance(st1, tuple):
        np.testing.assert_array_equal(module(x[:, 2:], state=plain(st1))[0], second)


def test_record_must_be_a_bool():
    for bad in ("False", 0, None, [True]):
        assert_pond_error(MODULES["LIF"], X, record=bad, match="record", error=SimulationError)


def test_overflow_raises_instead_of_returning_inf():
    """Finite input and parameters whose product overflows float32 (or parameters set to NaN after
    construction, e.g. by a tree_map) raise SimulationError("non-finite output") on a concrete call."""
    lin = nn.Linear(1, 1, weight=[[1e30]])
    assert_pond_error(lin, [[1e30]], match="non-finite output", error=SimulationError)
    lif = nn.LIF(1, tau_syn=1e30, tau_mem=1e30)
    assert_pond_error(lif, np.full((3, 1), 3e38), match="non-finite", error=SimulationError)
    poisoned = jax.tree_util.tree_map(lambda a: a * jnp.nan, MODULES["Sequential"])
    assert_pond_error(poisoned, X, match="non-finite", error=SimulationError)


def test_xylo_lif_scale_stays_finite_for_tiny_weights():
    """Subnormal weights are tolerated; the quantizer's scale is capped (MAX_SCALE) instead of becoming
    inf in float32, so zero weights stay 0 (not 0 * inf = NaN) and the output is finite."""
    layer = XyloLIF(2, 2, weight=[[1e-40, 0.0], [0.0, 0.0]], threshold=1e-37)
    assert bool(jnp.all(jnp.isfinite(layer.scale())))
    grid = layer.grid()
    assert all(bool(jnp.all(jnp.isfinite(grid[k]))) for k in ("weight", "threshold", "bias"))
    out, state, _ = layer(np.ones((3, 2)))
    assert bool(jnp.all(jnp.isfinite(out)))


def test_traced_calls_check_shapes_and_dtypes_but_not_values():
    """Under jit the values are tracers: shapes and dtypes are still checked (SimulationError), values are
    not inspected (no error, no cost); on valid input jit and eager agree."""
    net = MODULES["Sequential"]
    run = jax.jit(lambda x: net(x)[0])
    np.testing.assert_allclose(run(jnp.asarray(X, jnp.float32)), net(X)[0], rtol=1e-6, atol=1e-6)
    assert_pond_error(run, jnp.zeros((4, 3)), match="input channels", error=SimulationError)
    assert_pond_error(run, jnp.zeros((0, 2)), match="input shape", error=SimulationError)
    assert_pond_error(run, jnp.zeros((4, 2), jnp.complex64), match="complex", error=SimulationError)
    out = run(jnp.full((4, 2), jnp.nan))
    assert out.shape == (4, 2)
    grads = jax.grad(lambda m: jnp.sum(m(jnp.asarray(X, jnp.float32))[0]))(net)
    assert all(bool(jnp.all(jnp.isfinite(g))) for g in jax.tree_util.tree_leaves(grads))


def test_delay_unbatched_state_broadcasts_on_the_right_axis():
    """Delay's state is (max steps, *batch, N): with a batch as large as the delay an unbatched state must
    still be broadcast over the batch axis, not the step axis."""
    d = nn.Delay(2, delay=[2e-3, 3e-3], dt=1e-3)
    _, s_one, _ = d(X)
    x = np.stack([X, X[::-1], 2 * X])
    y, _, _ = d(x, state=s_one)
    for b in range(3):
        np.testing.assert_array_equal(y[b], d(x[b], state=s_one)[0])


def test_delay_steps_are_bounded():
    assert MAX_DELAY_STEPS >= 2**10
    nn.Delay(1, delay=MAX_DELAY_STEPS * 1e-3, dt=1e-3)
    assert_pond_error(nn.Delay, 1, delay=(MAX_DELAY_STEPS + 1) * 1e-3, dt=1e-3, match="delay steps")


def test_errors_are_pond_errors_and_value_errors():
    for fn in (lambda: nn.LIF(2.5), lambda: MODULES["LIF"](np.zeros((4, 3)))):
        err = assert_pond_error(fn)
        assert isinstance(err, PondError) and isinstance(err, ValueError)


# -- audit additions: precision, limits, nesting, pooling, determinism ----------------------------
def test_half_precision_input_is_converted_to_float32():
    """Documented tolerance: float16/bfloat16 input is computed in float32 like any other real input (a
    convolution used to fail on the dtype mismatch with a misleading 'state structure' error)."""
    conv = nn.Conv2d((1, 2, 1), weight=np.full((1, 1, 1, 1), 2.0), bias=0.5)
    for module in (conv, MODULES["Sequential"], MODULES["XyloLIF"]):
        ref = module(jnp.asarray(X, jnp.float32))[0]
        for dtype in (jnp.float16, jnp.bfloat16):
            low = jnp.asarray(X, dtype)
            y = module(low)[0]
            assert y.dtype == jnp.float32
            np.testing.assert_array_equal(y, module(low.astype(jnp.float32))[0])
            np.testing.assert_allclose(y, ref, atol=0.05)
    assert_pond_error(conv, jnp.full((4, 2), jnp.inf, jnp.float16), match="non-finite input", error=SimulationError)


def test_unsigned_integer_input_is_converted_not_wrapped():
    """uint32 beyond int32 is kept as a number (JAX keeps uint32) and converted to float32, never wrapped."""
    lin = nn.Linear(1, 1, weight=[[1.0]])
    y = lin(np.full((1, 1), 2**32 - 1, np.uint32))[0]
    assert float(y[0, 0]) == float(np.float32(2**32 - 1))
    assert_pond_error(lin, np.full((1, 1), 2**63, np.uint64), match="int32", error=SimulationError)


def test_sizes_and_random_initialisations_are_bounded():
    """Sizes beyond 2^24 and random weight matrices beyond 2^28 elements are refused up front: XLA aborts the
    whole process (no exception) when such an allocation fails."""
    from pondlib.nn.base import MAX_PARAMETERS, MAX_SIZE

    assert_pond_error(nn.Linear, MAX_SIZE + 1, 2, key=KEY, match="n_in", error=GraphError)
    assert_pond_error(nn.LIF, 10**12, match="LIF shape", error=GraphError)
    assert_pond_error(XyloLIF, 2, 2, 2**40, weight=1.0, match="n_synapses", error=GraphError)
    assert_pond_error(nn.Linear, 2**20, 2**20, key=KEY, match="weight size", error=GraphError)
    assert_pond_error(nn.LIF, 2**20, has_rec=True, key=KEY, match="w_rec size", error=GraphError)
    assert MAX_PARAMETERS >= 2**20 and nn.Linear(2**10, 2**10, key=KEY).weight.shape == (2**10, 2**10)


@pytest.mark.parametrize(
    "build, field",
    [
        (lambda: nn.LIF([[2]]), "LIF shape"),
        (lambda: nn.LIF(np.array([[4, 2]])), "LIF shape"),
        (lambda: nn.LIF((4, 2, 1)), "LIF shape"),
        (lambda: nn.LIF(()), "LIF shape"),
        (lambda: nn.LIF((3, 2)), "LIF shape"),
        (lambda: nn.Conv2d((1, 4, 4), weight=np.ones((1, 1, 2, 2)), stride=[[1, 1]]), "stride"),
        (lambda: nn.Conv2d((1, 4, 4), weight=np.ones((1, 1, 2, 2)), stride=np.ones((1, 2), int)), "stride"),
        (lambda: nn.Conv2d(np.ones((1, 3), int), weight=np.ones((1, 1, 2, 2))), "input shape"),
        (lambda: nn.Conv2d((1, 4, 4), weight=np.ones((1, 1, 2, 2)), stride=()), "stride"),
        (lambda: nn.Conv2d((1, 4, 4), weight=np.ones((1, 1, 2, 2)), padding=None), "padding"),
        (lambda: nn.Conv2d((1, 4, 4), weight=np.ones((1, 1, 2, 2)), padding=1.5), "padding"),
        (lambda: nn.Conv2d((1, 4, 4), weight=None), "weight"),
        (lambda: nn.Conv2d((1, 4, 4), weight=np.ones((1, 1, 2, 2), bool)), "weight"),
        (lambda: nn.Conv2d((2, 4, 4), weight=np.ones((2, 1, 2, 2)), groups=2.5), "groups"),
        (lambda: nn.Conv2d((1, 4, 4), weight=np.ones((2, 1, 2, 2)), bias=np.ones((1, 2))), "bias shape"),
        (lambda: nn.Conv2d((1, 4, 4), weight=np.ones((1, 1, 2, 2)), bias="b"), "bias"),
        (lambda: nn.SumPool2d((1, 4, 4), kernel_size=np.full((2, 2), 2)), "kernel_size"),
        (lambda: nn.SumPool2d((1, 4, 4), kernel_size=(2, 2, 2)), "kernel_size"),
        (lambda: nn.SumPool2d((1, 4, 4), kernel_size=5), "pool output size"),
        (lambda: nn.SumPool2d((1, 4, 4), kernel_size=2, padding=2), "padding"),
        (lambda: nn.AvgPool2d((1, 4, 4), kernel_size=(3, 2), padding=(2, 0)), "padding"),
        (lambda: nn.AvgPool2d((1, 4), kernel_size=2), "input shape"),
        (lambda: nn.Delay(2, delay=[True, False], dt=1e-3), "delay"),
        (lambda: nn.Delay(2, delay=[1j, 0.0], dt=1e-3), "delay"),
        (lambda: nn.Scale(2, scale=True), "scale"),
        (lambda: nn.Scale(2, scale=[]), "scale"),
        (lambda: nn.Residual(nn.Linear(2, 3, key=KEY)), "keep the size"),
        (lambda: nn.Residual(nn.Linear(2, 3, key=KEY), nn.Linear(2, 3, key=KEY)), "do not chain"),
        (lambda: nn.Residual(), "at least one module"),
        (lambda: nn.Residual(nn.LIF), "module 0"),
        (lambda: nn.Sequential([[nn.LIF(2)]]), "module 0"),
        (lambda: nn.Linear(2, 3, weight=np.ones((3, 2))), "weight shape"),
        (lambda: nn.Linear(2, 3, weight=np.ones(6)), "weight shape"),
        (lambda: nn.Linear(2, 3, weight=1.0), "weight shape"),
        (lambda: nn.Linear(2, 2, weight=np.ones((2, 2), bool)), "weight"),
        (lambda: nn.Linear(2, 2, key=KEY, bias=np.True_), "bias"),
        (lambda: nn.Linear(2, 2, key=KEY, bias=1), "bias shape"),
        (lambda: nn.Linear(2, 2, key=np.array([1, 2, 3])), "key"),
        (lambda: nn.Linear(2, 2, key=1.5), "key"),
        (lambda: nn.LIF(2, has_rec=True, key="k"), "key"),
        (lambda: nn.LIF(2, surrogate=nn.Surrogate), "surrogate"),
    ],
)
def test_more_constructor_errors_name_the_parameter(build, field):
    assert_pond_error(build, match=field, error=GraphError)


def test_documented_tolerances_of_layer_arguments():
    """A one-element sequence (or 0-d array) counts as that int for every dimension; a scalar conv bias is
    shared by every output channel; pooling padding up to half the kernel is accepted."""
    w = np.ones((2, 1, 2, 2))
    a = nn.Conv2d((1, 4, 4), weight=w, stride=(2,), bias=0.5)
    b = nn.Conv2d((1, 4, 4), weight=w, stride=np.array(2), bias=[0.5, 0.5])
    assert a.stride == b.stride == (2, 2)
    np.testing.assert_array_equal(a.bias, b.bias)
    x = np.linspace(0.0, 1.0, 32).reshape(2, 16)
    np.testing.assert_array_equal(a(x)[0], b(x)[0])
    assert nn.SumPool2d((1, 4, 4), kernel_size=(2,), padding=1).output_shape == (1, 3, 3)
    assert nn.LIF(np.array([4, 2])).n_synapses == 2


def test_a_state_of_another_module_or_with_bad_leaves_is_refused():
    """Every state problem is a SimulationError naming the state, for each kind of module."""
    seq = MODULES["Sequential"]
    _, st, _ = seq(X)
    lif_state = st[1]
    cases = [
        ((None, XyloLIFState(*([np.zeros(3)] * 4)), None), "state structure"),
        ((None, lif_state, None, None), "state structure"),
        ((None, lif_state._replace(vmem=np.full(3, 1e39)), None), "float32"),
        ((None, lif_state._replace(vmem=np.full(3, 2**40)), None), "int32"),
        ((None, lif_state._replace(vmem="abc"), None), "state"),
        ((None, lif_state._replace(vmem=[[1.0], [1.0, 2.0]]), None), "state structure"),
        ((None, lif_state._replace(vmem=np.full(3, np.nan)), None), "non-finite state"),
        ((None, lif_state._replace(isyn=np.zeros(3)), None), "state shape"),
        ({"a": 1}, "state structure"),
        (3, "state structure"),
    ]
    for bad, field in cases:
        assert_pond_error(seq, X, state=bad, match=field, error=SimulationError)
    lif = nn.LIF(3)
    assert_pond_error(lif, np.ones((2, 4, 3)), state=lif.init_state((2, 3)), match="state shape")
    assert_pond_error(lif.init_state, 3, match="batch_shape", error=SimulationError)
    assert_pond_error(lif.init_state, (0,), match="batch_shape", error=SimulationError)
    assert_pond_error(lif.init_state, (2.5,), match="batch_shape", error=SimulationError)
    gn = MODULES["GraphNetwork"]
    assert_pond_error(gn, X, state={"modules": {}}, match="state structure", error=SimulationError)


def test_vmap_and_jit_value_and_grad_still_work_through_the_checks():
    """The checks only look at shapes and dtypes of tracers: vmap over samples equals the batched call and
    jit(value_and_grad) of a composition with a state passed back gives finite gradients."""
    net = MODULES["Sequential"]
    x3 = jnp.asarray(np.stack([X, X[::-1], 0.5 * X]), jnp.float32)
    np.testing.assert_allclose(jax.vmap(lambda v: net(v)[0])(x3), net(x3)[0], rtol=1e-6, atol=1e-6)
    state = net(x3)[1]

    def loss(m, x, s):
        return jnp.sum(m(x, state=s)[0] ** 2)

    value, grads = jax.jit(jax.value_and_grad(loss))(net, x3, state)
    assert np.isfinite(float(value))
    assert all(bool(jnp.all(jnp.isfinite(g))) for g in jax.tree_util.tree_leaves(grads))


# -- valid input: runs are deterministic ----------------------------------------------------------
def _valid_network(seed: int, n_in: int, n_hid: int, rec: bool):
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    return nn.Sequential(
        nn.Linear(n_in, n_hid, key=k[0], bias=True),
        nn.LIF(n_hid, tau_mem=0.01, tau_syn=0.005, threshold=0.3, has_rec=rec, key=k[1]),
        nn.Residual(nn.Linear(n_hid, n_hid, key=k[2]), nn.LIF(n_hid, threshold=0.2)),
        nn.Linear(n_hid, 2, key=k[3]),
    )


@FEW
@given(
    seed=st.integers(0, 2**16),
    n_in=st.integers(1, 3),
    n_hid=st.integers(1, 3),
    rec=st.booleans(),
    batch=st.sampled_from([(), (2,)]),
    data=st.data(),
)
def test_runs_on_valid_input_are_deterministic(seed, n_in, n_hid, rec, batch, data):
    """The same module and input twice give bit-identical outputs, states and records (eager and jit), and a
    state passed back continues identically."""
    net = _valid_network(seed, n_in, n_hid, rec)
    shape = batch + (5, n_in)
    x = data.draw(
        st.lists(
            st.floats(-3.0, 3.0, allow_nan=False, width=32), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))
        ).map(lambda v: np.asarray(v, np.float32).reshape(shape))
    )
    y1, s1, r1 = net(x, record=True)
    y2, s2, r2 = net(x.copy(), record=True)
    np.testing.assert_array_equal(y1, y2)
    for a, b in zip(jax.tree_util.tree_leaves(s1), jax.tree_util.tree_leaves(s2)):
        np.testing.assert_array_equal(a, b)
    assert sorted(r1) == sorted(r2) and all(np.array_equal(r1[k], r2[k]) for k in r1)
    np.testing.assert_array_equal(net(x, state=s1)[0], net(x, state=s2)[0])
    run = jax.jit(lambda m, v: m(v)[0])
    np.testing.assert_array_equal(run(net, x), run(net, x))


@pytest.mark.parametrize("shape", [10**12, (10**5, 10**5), [[2]], np.array([[4, 2]]), [], 0, 2.5, "8", None])
def test_nir_neuron_shapes_are_flat_bounded_whole_numbers(shape):
    for cls, params in (
        (nn.CubaLIF, dict(tau_syn=1e-3, tau_mem=1e-2, r=1.0, w_in=1.0, v_leak=0.0, v_threshold=1.0)),
        (nn.NIRLIF, dict(tau=1e-2, r=1.0, v_leak=0.0, v_threshold=1.0)),
    ):
        assert_pond_error(cls, shape, **params, dt=1e-4, match="neuron", error=GraphError)


def test_nir_neuron_shapes_keep_their_nir_form():
    n = nn.CubaLIF(np.array([4, 2]), tau_syn=1e-3, tau_mem=1e-2, r=1.0, w_in=1.0, v_leak=0.0, v_threshold=1.0)
    assert n.shape == (4, 2) and n.size_in == 8
    assert nn.NIRLIF(np.int64(5), tau=1e-2, r=1.0, v_leak=0.0, v_threshold=1.0).shape == (5,)
