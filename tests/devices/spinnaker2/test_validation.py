"""SpiNNaker2 under bad input: every public entry point refuses it with a PondError naming the field.

Driven by the shared hypothesis strategies (``tests/strategies.py``). For each entry point (SNN mapper,
configuration, simulator, DNN path, timing model, limits) the tests assert either a
:class:`~pondlib.errors.PondError` whose message names the offending field or value, or a documented
tolerant behaviour; never another exception, never a non-finite number in an output. On valid input
the same generators check that round trips (synapse words, configurations) are lossless and that runs
are deterministic.

Documented tolerant behaviours tested here: a LIF time constant far below the tick decays fully in one
tick (alpha = 0, no overflow warning); boolean spike rasters are 0/1 counts; finite float input beyond
int8 saturates in ``DNNConfig.quantize_input``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.devices.spinnaker2.config import (
    config_from_specification,
    decode_words,
    encode_words,
    validate_config,
)
from pondlib.devices.spinnaker2.dnn import MLP, DenseLayer, dnn_mapper, train_mlp
from pondlib.devices.spinnaker2.limits import SpiNNaker2Limits, get_limits
from pondlib.devices.spinnaker2.mapper import RULES, mapper
from pondlib.devices.spinnaker2.sim import DNNSim, LIFParams, SpiNNaker2Sim, mla_layer
from pondlib.devices.spinnaker2.specification import DELAY_WORD, NO_DELAY_WORD, PARAM_MAX, LIFOptions
from pondlib.devices.spinnaker2.timing import PaperAnchors, TimingModel, calibrate, estimate
from pondlib.errors import ConfigError, ConstraintError, GraphError, PondError, QuantizationError, SimulationError
from pondlib.graph import GraphHolder, LIFNeurons, LinearWeights, connect_modules
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

FEW = settings(max_examples=15, deadline=None)
SOME = settings(max_examples=30, deadline=None)


def graph(w=None, threshold=1.0, tau_mem=0.02, tau_syn=0.01, bias=0.0, dt=1e-3):
    """3 inputs -> 2 LIF neurons, float64 parameters (no float32 cast on the way)."""
    w = np.array([[1.0, -0.5], [0.25, 0.0], [0.0, 1.0]]) if w is None else w
    lin = LinearWeights._factory(3, 2, "w", None, w)
    lif = LIFNeurons._factory(
        2, 2, "lif", None, tau_mem=tau_mem, tau_syn=tau_syn, threshold=threshold, bias=bias, dt=dt
    )
    connect_modules(lin, lif)
    return GraphHolder(list(lin.input_nodes), list(lif.output_nodes), "g")


#: bad_types() without its lists of integers (a valid array where an array is expected).
NOT_ARRAYS = bad_types().filter(lambda v: not isinstance(v, list))

SPEC = mapper(graph())
CONFIG, OK, _ = config_from_specification(SPEC)
assert OK


def rules_of(fn, *args, **kwargs) -> set[str]:
    with pytest.raises(ConstraintError) as err:
        fn(*args, **kwargs)
    assert set(err.value.rules) <= set(RULES)
    return set(err.value.rules)


# -- SNN mapper: arguments -------------------------------------------------------------------------
MAPPER_ARGS = {
    "neurons_per_pe": bad_counts(),
    "spike_rate": st.one_of(st.sampled_from(NON_FINITE), st.floats(max_value=-1e-300), bad_types()),
    "record_ticks": st.one_of(st.integers(max_value=-1), st.sampled_from([2.5, np.nan]), bad_types()),
    "record_v": st.one_of(st.text(max_size=5), st.integers(), st.none()),
    "neuron_model": st.one_of(st.integers(), st.lists(st.text(max_size=2), max_size=2), st.none()),
    "options": st.one_of(st.text(max_size=3), st.integers(), st.dictionaries(st.text(max_size=2), st.integers())),
    "delays": st.one_of(st.text(max_size=3), st.integers(), st.lists(st.integers(), max_size=2)),
    "weight_scale": st.one_of(st.text(max_size=3), st.floats(allow_nan=True), st.lists(st.floats(), max_size=2)),
}


@SOME
@given(st.sampled_from(sorted(MAPPER_ARGS)).flatmap(lambda k: st.tuples(st.just(k), MAPPER_ARGS[k])))
def test_mapper_arguments_are_checked(arg):
    key, value = arg
    if key == "neurons_per_pe" and value is None:
        return  # None is the documented default (limits.neurons_per_pe)
    if key == "neuron_model" and value is None:
        value = 3
    if key == "options" and isinstance(value, dict) and not value:
        value = {"x": 1}
    err = assert_pond_error(mapper, graph(), **{key: value}, error=ConfigError)
    assert key in str(err)


def test_mapper_options_problems_are_all_listed():
    with pytest.raises(ConfigError) as err:
        mapper(graph(), options=LIFOptions(compare="<", fma="False", order="later"))
    assert len(err.value.problems) == 3 and "fma" in str(err.value)


# -- SNN mapper: parameter values ------------------------------------------------------------------
@SOME
@given(st.floats(min_value=5e-324, max_value=1e300), st.floats(min_value=5e-324, max_value=1e300))
def test_mapper_at_any_scale_maps_faithfully_or_reports(w_scale, thr):
    """Subnormal or huge weights or thresholds: either a parameter_range violation or a mapping whose
    integers are in range and whose every reported number and float32 parameter is finite."""
    w = np.array([[1.0, -0.5], [0.25, 0.0], [0.0, 1.0]]) * w_scale
    try:
        spec = mapper(graph(w, threshold=thr))
    except ConstraintError as err:
        assert set(err.rules) == {"parameter_range"}, err
        assert "lif" in str(err)
        return
    rep = spec.report
    for table in (rep.scales, rep.quantization_error, rep.max_abs_error):
        assert all(np.isfinite(v) for v in table.values())
    assert all(0 < s < np.inf for s in rep.scales.values())
    (pop,) = spec.populations
    assert np.all(np.isfinite(pop.threshold)) and np.all(pop.threshold > 0) and np.all(pop.threshold <= PARAM_MAX)
    assert int(np.abs(spec.projections[0].weights).max()) == 15  # the largest weight fills the word
    config, ok, message = config_from_specification(spec)
    assert ok, message


@FEW
@given(st.sampled_from([np.nan, 0.0, -1.0, -1e-300, np.inf]), st.sampled_from([np.nan, 0.0, -2.0]))
def test_bad_weight_scales_are_all_reported(s1, s2):
    """NaN, zero and negative scales, and an unknown population, each a violation, reported together."""
    a = LinearWeights._factory(3, 2, "a", None, np.ones((3, 2)))
    l1 = LIFNeurons._factory(2, 2, "l1", None, tau_mem=0.02, tau_syn=0.01, threshold=1.0, bias=0.0)
    b = LinearWeights._factory(2, 2, "b", None, np.ones((2, 2)))
    l2 = LIFNeurons._factory(2, 2, "l2", None, tau_mem=0.02, tau_syn=0.01, threshold=1.0, bias=0.0)
    connect_modules(a, l1)
    connect_modules(l1, b)
    connect_modules(b, l2)
    g = GraphHolder(list(a.input_nodes), list(l2.output_nodes), "g")
    with pytest.raises(ConstraintError) as err:
        mapper(g, weight_scale={"l1": s1, "l2": s2, "nope": 1.0})
    modules = sorted(v.module for v in err.value.violations if v.rule == "invalid_parameter")
    assert modules == ["l1", "l2", "nope"]
    assert str(s1) in str(err.value) and str(s2) in str(err.value)


@FEW
@given(st.sampled_from([1e-300, 1e-320, 5e-324]), st.sampled_from(["tau_mem", "tau_syn"]))
def test_tiny_time_constants_decay_fully_in_one_tick(tau, key):
    """Documented tolerant behaviour: exp(-dt / tau) underflows to 0 (no overflow warning)."""
    spec = mapper(graph(**{key: tau}))
    field = "alpha" if key == "tau_mem" else "exc_decay"
    assert np.all(getattr(spec.populations[0], field) == 0.0)


@FEW
@given(st.one_of(st.sampled_from([np.nan, np.inf, 2.5, -1, 8, 1e30]), non_finite_arrays((3, 2))))
def test_bad_delay_values_are_delay_range_violations(d):
    err_rules = rules_of(mapper, graph(), neuron_model="lif", delays={"w": d})
    assert err_rules == {"delay_range"}


@FEW
@given(st.one_of(wrong_dtype_arrays((3, 2)), ragged_lists(), st.text(max_size=3)))
def test_malformed_delays_raise_a_config_error(d):
    assert_pond_error(mapper, graph(), delays={"w": d}, error=ConfigError, match="delays")


def test_delays_of_another_shape_are_reported_not_broadcast():
    assert rules_of(mapper, graph(), neuron_model="lif", delays={"w": [[1, 2]]}) == {"delay_range"}


@FEW
@given(st.sampled_from(["weights", "threshold", "tau_mem", "bias"]), st.sampled_from([np.nan, np.inf]))
def test_mutated_graph_parameters_are_invalid_parameter_violations(key, bad):
    """Graph modules are mutable: NaN written after construction is caught by the mapper itself."""
    g = graph()
    mod = next(m for m in _modules(g) if hasattr(m, key))
    arr = np.array(getattr(mod, key), dtype=float)
    arr.reshape(-1)[0] = bad
    setattr(mod, key, arr)
    assert "invalid_parameter" in rules_of(mapper, g)


def _modules(g):
    from pondlib.graph.utils import topological_order

    return topological_order(g)


@FEW
@given(st.floats(min_value=1e-300, max_value=1e300), st.integers(0, 7))
def test_mapper_never_mutates_its_input(w_scale, d):
    g = graph(np.ones((3, 2)) * w_scale)
    before = {
        m.name: {k: np.array(v, copy=True) for k, v in vars(m).items() if isinstance(v, np.ndarray)}
        for m in _modules(g)
    }
    delays = {"w": np.full((3, 2), d)}
    try:
        mapper(g, neuron_model="lif", delays=delays)
    except PondError:
        pass
    for m in _modules(g):
        for k, v in before[m.name].items():
            assert np.array_equal(getattr(m, k), v)
    assert np.array_equal(delays["w"], np.full((3, 2), d))


# -- configuration ---------------------------------------------------------------------------------
@FEW
@given(st.one_of(bad_types(), st.sampled_from([CONFIG, 3.5])))
def test_config_from_specification_refuses_other_types_naming_them(value):
    err = assert_pond_error(config_from_specification, value, error=ConfigError, match="spec")
    assert type(value).__name__ in str(err)


@FEW
@given(
    st.sampled_from(["threshold", "alpha", "i_offset", "exc_decay"]),
    st.sampled_from([np.nan, np.inf, -np.inf, 2.0, -0.5, 1e30]),
)
def test_hand_built_specifications_are_checked_before_encoding(key, bad):
    pop = SPEC.populations[0]
    arr = np.array(getattr(pop, key), dtype=np.float64)
    arr[0] = bad
    broken = dataclasses.replace(SPEC, populations=(dataclasses.replace(pop, **{key: arr}),))
    if key in ("threshold", "i_offset") and bad in (2.0,):
        return  # in range: valid
    if key in ("alpha", "exc_decay") and bad in (1e30, -np.inf, np.inf, np.nan, 2.0, -0.5):
        pass
    config, ok, message = config_from_specification(broken)
    if key == "i_offset" and bad == -0.5:
        assert ok
        return
    assert config is None and not ok and f"lif.{key}" in message


@FEW
@given(st.sampled_from(["weights", "delays"]), st.sampled_from([(2, 2), (3, 3), (3,)]))
def test_hand_built_projection_shapes_are_reported(key, shape):
    proj = SPEC.projections[0]
    broken = dataclasses.replace(SPEC, projections=(dataclasses.replace(proj, **{key: np.zeros(shape)}),))
    config, ok, message = config_from_specification(broken)
    assert config is None and not ok and f"w.{key}" in message and "(3, 2)" in message


@SOME
@given(st.data())
def test_synapse_words_round_trip_losslessly(data):
    fmt = data.draw(st.sampled_from([DELAY_WORD, NO_DELAY_WORD]))
    n = data.draw(st.integers(1, 20))
    w = np.array(data.draw(st.lists(st.integers(-fmt.max_weight, fmt.max_weight), min_size=n, max_size=n)))
    d = np.array(data.draw(st.lists(st.integers(0, fmt.max_delay), min_size=n, max_size=n)))
    i = np.array(data.draw(st.lists(st.integers(0, 255), min_size=n, max_size=n)))
    words = encode_words(w, d, i, fmt)
    assert words.dtype == np.uint16
    for got, want in zip(decode_words(words, fmt), (w, d, i)):
        assert np.array_equal(got, want)
    assert np.array_equal(encode_words(w.astype(float), d.astype(float), i, fmt), words)  # integral floats


@FEW
@given(st.sampled_from([np.nan, np.inf, 2.5, 16, -16, 1e30]), st.sampled_from([np.nan, 8, -1, 0.5]))
def test_encode_words_lists_every_bad_field(w, d):
    with pytest.raises(ConfigError) as err:
        encode_words(np.array([w, 1.0]), np.array([d, 0.0]), np.array([0, 1]), DELAY_WORD)
    assert len(err.value.problems) == 2
    assert "synapse weight" in str(err.value) and "synapse delay" in str(err.value)


@FEW
@given(st.one_of(wrong_dtype_arrays((3,)), ragged_lists(), non_finite_arrays((3,))))
def test_decode_words_refuses_non_words(words):
    assert_pond_error(decode_words, words, DELAY_WORD, error=ConfigError, match="words")


CORRUPTIONS = {
    "alpha 2": lambda c: c.replace(
        populations=(dataclasses.replace(c.populations[0], alpha=np.full(2, 2, np.float32)),)
    ),
    "threshold 0": lambda c: c.replace(
        populations=(dataclasses.replace(c.populations[0], threshold=np.zeros(2, np.float32)),)
    ),
    "threshold nan": lambda c: c.replace(
        populations=(dataclasses.replace(c.populations[0], threshold=np.full(2, np.nan, np.float32)),)
    ),
    "t_refrac -1": lambda c: c.replace(populations=(dataclasses.replace(c.populations[0], t_refrac=np.full(2, -1)),)),
    "row_ptr": lambda c: c.replace(pes=(dataclasses.replace(c.pes[0], row_ptr=c.pes[0].row_ptr[:-1]),)),
    "row_neuron": lambda c: c.replace(pes=(dataclasses.replace(c.pes[0], row_neuron=c.pes[0].row_neuron + 50),)),
    "words float": lambda c: c.replace(pes=(dataclasses.replace(c.pes[0], words=c.pes[0].words.astype(float)),)),
    "slice": lambda c: c.replace(pes=(dataclasses.replace(c.pes[0], stop=9),)),
    "tick_s": lambda c: c.replace(tick_s="1 ms"),
    "n_input": lambda c: c.replace(n_input=2.5),
    "options": lambda c: c.replace(options="fast"),
    "populations": lambda c: c.replace(populations=("lif",)),
    "model": lambda c: c.replace(neuron_model=["lif"]),
}


@FEW
@given(st.sampled_from(sorted(CORRUPTIONS)))
def test_corrupted_configurations_are_refused_by_the_simulator(name):
    broken = CORRUPTIONS[name](CONFIG)
    problems = validate_config(broken)
    assert problems
    with pytest.raises(ConfigError) as err:
        SpiNNaker2Sim.from_config(broken)
    assert err.value.problems == problems


@FEW
@given(bad_types())
def test_validate_config_and_simulator_refuse_other_types(value):
    assert validate_config(value) == [f"config: got a {type(value).__name__}, expected a SpiNNaker2Config"]
    assert_pond_error(SpiNNaker2Sim, value, error=ConfigError, match="SpiNNaker2Config")
    if value is not None:  # None: the configuration's own options
        assert_pond_error(SpiNNaker2Sim, CONFIG, options=value, error=ConfigError, match="options")


# -- SNN simulator ---------------------------------------------------------------------------------
SIM = SpiNNaker2Sim.from_config(CONFIG)


def evolve(x, **kw):
    SIM.reset_state()
    return SIM.evolve(x, **kw)


@SOME
@given(st.one_of(non_finite_arrays((4, 3)), st.floats(0.01, 0.99).map(lambda f: np.full((2, 3), f))))
def test_simulator_refuses_non_integer_counts(x):
    err = assert_pond_error(evolve, x, error=SimulationError, match="integer")
    assert "x[" in str(err)


@SOME
@given(
    st.one_of(
        wrong_dtype_arrays((4, 3)),
        ragged_lists(),
        bad_types(),
        st.sampled_from([np.zeros((0, 3)), np.zeros((2, 0, 3)), np.zeros(3), np.zeros((4, 2)), np.zeros((1, 1, 4, 3))]),
    )
)
def test_simulator_refuses_malformed_input(x):
    err = assert_pond_error(evolve, x, error=SimulationError)
    assert "input dtype" in str(err) or "input shape" in str(err)


@SOME
@given(st.one_of(st.integers(-(2**63), -1), st.floats(-1e300, -1.0).map(np.rint)))
def test_simulator_refuses_negative_counts(v):
    x = np.zeros((3, 3), dtype=np.int64 if isinstance(v, int) else np.float64)
    x[2, 1] = v
    assert_pond_error(evolve, x, error=SimulationError, match=">= 0")


@SOME
@given(st.integers(1, 2**63 - 1))
def test_counts_whose_sums_could_overflow_are_refused_with_the_bound(extra):
    """The issue: int64 sums of huge counts wrapped (outputs silently 0). Counts above the bound that
    keeps the synaptic sums exact are refused naming the bound; counts up to it run."""
    limit = SIM.max_input_count
    assert 2**40 < limit < 2**53
    x = np.zeros((1, 3), dtype=np.int64)
    x[0, 0] = min(limit + extra, 2**63 - 1)
    err = assert_pond_error(evolve, x, error=SimulationError, match=str(limit))
    assert "input spike count" in str(err)
    x[0, 0] = limit
    out, _, rec = evolve(np.concatenate([x, np.zeros((1, 3), np.int64)]), record=True)
    assert rec["lif.input"][1, 0] > 0 and np.all(np.isfinite(rec["lif.v"]))


@FEW
@given(st.sampled_from(["False", "yes", 1, None, 0.0]))
def test_simulator_record_flag_is_a_bool(flag):
    assert_pond_error(evolve, np.zeros((2, 3), int), record=flag, error=SimulationError, match="record")


@SOME
@given(st.lists(st.lists(st.integers(0, 3), min_size=3, max_size=3), min_size=1, max_size=6), st.integers(1, 3))
def test_simulator_is_deterministic_and_batching_is_exact(rows, batch):
    x = np.array(rows)
    a = evolve(x, record=True)
    b = evolve(x.astype(float), record=True)  # integral floats are the same counts
    assert np.array_equal(a[0], b[0]) and all(np.array_equal(a[2][k], b[2][k]) for k in a[2])
    batched = evolve(np.stack([x] * batch))[0]
    assert all(np.array_equal(batched[i], a[0]) for i in range(batch))
    assert np.array_equal(evolve(x.astype(bool))[0], evolve(np.minimum(x, 1))[0])  # booleans are 0/1


def test_a_refused_call_leaves_the_state_untouched():
    SIM.reset_state()
    SIM.evolve(np.ones((2, 3), int))
    before = SIM.state
    with pytest.raises(SimulationError):
        SIM.evolve(np.full((2, 3), -1))
    after = SIM.state
    assert after["tick"] == before["tick"] and all(np.array_equal(after[k], before[k]) for k in before if k != "tick")


# -- LIF parameters --------------------------------------------------------------------------------
@SOME
@given(
    st.sampled_from(["threshold", "alpha", "i_offset", "v_reset", "exc_decay", "inh_decay"]),
    st.one_of(bad_scalars(), wrong_dtype_arrays((2,)), ragged_lists()),
)
def test_lif_params_refuse_bad_values(key, value):
    kwargs = {"threshold": [1.0, 2.0], "alpha": [0.5, 0.5], key: value}
    if key in ("i_offset", "v_reset") and isinstance(value, float) and np.isfinite(value) and abs(value) < 3.4e38:
        LIFParams.from_arrays(**kwargs)  # any finite float32 offset is valid
        return
    if key == "threshold" and isinstance(value, float) and 0 < value < 3.4e38:
        return  # a positive float32 threshold (subnormal included) is valid
    if key not in ("threshold", "i_offset", "v_reset") and isinstance(value, float) and 0 <= value <= 1:
        LIFParams.from_arrays(**kwargs)  # a decay in [0, 1] (subnormal included) is valid
        return
    err = assert_pond_error(LIFParams.from_arrays, **kwargs, error=ConfigError)
    assert key in str(err)


# -- DNN path --------------------------------------------------------------------------------------
@SOME
@given(st.one_of(non_finite_arrays((3, 2)), wrong_dtype_arrays((3, 2)), ragged_lists(), bad_types()))
def test_dense_layer_refuses_bad_weights(w):
    assert_pond_error(DenseLayer, w, error=GraphError, match="weight")


@FEW
@given(st.sampled_from([(3,), (1,), (5,)]))
def test_dense_layer_bias_shape_names_both_shapes(shape):
    err = assert_pond_error(DenseLayer, np.ones((3, 2)), np.ones(shape), error=GraphError)
    assert "(3, 2)" in str(err) and str(tuple(shape)) in str(err)
    assert_pond_error(DenseLayer, np.ones((3, 2)), np.ones((2, 1)), error=GraphError, match="bias rank")


@FEW
@given(st.one_of(bad_types(), st.tuples(st.integers(), st.integers())))
def test_mlp_refuses_non_layers(layers):
    if isinstance(layers, list) and not layers:
        layers = [1]
    assert_pond_error(MLP, layers, error=GraphError)


def test_mlp_from_arrays_refuses_mismatched_lists():
    assert_pond_error(MLP.from_arrays, [np.ones((2, 2))] * 2, biases=[None], error=GraphError, match="biases length")
    assert_pond_error(MLP.from_arrays, [np.ones((2, 2))] * 2, relu=[True], error=GraphError, match="relu length")
    assert_pond_error(MLP.from_arrays, [np.ones((2, 2))], relu=["False"], error=GraphError, match="relu")


MLP2 = MLP.from_arrays([np.array([[1.0, -1.0, 0.5], [0.5, 0.5, -0.25]]), np.array([[1.0], [-1.0], [0.5]])])


@SOME
@given(st.one_of(non_finite_arrays((4, 2)), wrong_dtype_arrays((4, 2)), ragged_lists(), NOT_ARRAYS))
def test_dnn_mapper_refuses_bad_calibration(cal):
    assert_pond_error(dnn_mapper, MLP2, cal, error=QuantizationError, match="calibration")


@SOME
@given(st.floats(min_value=5e-324, max_value=1e300), st.floats(min_value=1e-300, max_value=1e300))
def test_dnn_mapper_at_any_scale_quantizes_or_reports(w_scale, x_scale):
    """Subnormal or huge weights and inputs: power-of-two exponents keep them representable, or a
    violation / QuantizationError says why; never an infinite exponent or a wrapped bias."""
    mlp = MLP.from_arrays([MLP2.layers[0].weight * w_scale, MLP2.layers[1].weight])
    cal = np.array([[1.0, 0.5], [-0.5, 0.25]]) * x_scale
    try:
        cfg = dnn_mapper(mlp, cal)
    except (ConstraintError, QuantizationError) as err:
        assert isinstance(err, QuantizationError) or set(err.rules) <= {"shift_range", "bias_range"}
        return
    assert not cfg.problems()
    assert all(np.isfinite(v) for v in cfg.report["weight_relative_error"].values())
    for layer in cfg.layers:
        assert np.abs(layer.weights).max() <= 127 and 0 <= layer.shift <= 62
    y, _, _ = DNNSim.from_config(cfg).evolve(cfg.quantize_input(cal))
    assert y.dtype == np.int64 and np.all(np.isfinite(cfg.dequantize_output(y)))


@FEW
@given(
    st.sampled_from(["acc_bits", "overflow", "workers", "round_shift"]).flatmap(
        lambda k: st.tuples(st.just(k), st.one_of(bad_types(), st.sampled_from([0, 2.5, 100, np.nan])))
    )
)
def test_dnn_mapper_arguments_are_checked(arg):
    key, value = arg
    if key == "workers" and (value is None or isinstance(value, dict)):
        value = {"fc1": 0}  # None is the default; unknown names are worker_sram violations
    if key == "acc_bits" and value is None:
        value = 2.5  # None is the documented default (limits.acc_bits)
    if key == "round_shift" and isinstance(value, bool):
        return  # both are valid
    err = assert_pond_error(dnn_mapper, MLP2, np.ones((2, 2)), error=QuantizationError, **{key: value})
    assert key in str(err)


CFG = dnn_mapper(MLP2, np.array([[1.0, 0.5], [-0.5, 0.25]]))
DSIM = DNNSim.from_config(CFG)


@SOME
@given(st.one_of(non_finite_arrays((2,)), wrong_dtype_arrays((2,)), ragged_lists(), NOT_ARRAYS))
def test_quantize_input_refuses_bad_values(x):
    assert_pond_error(CFG.quantize_input, x, error=QuantizationError, match="x")


@FEW
@given(st.floats(min_value=128.0, max_value=1.7e308), st.booleans())
def test_quantize_input_saturates_finite_large_values(v, negative):
    """Documented tolerant behaviour: finite values beyond int8 saturate (no overflow warning)."""
    v = -v if negative else v
    assert CFG.quantize_input(np.array([v, 0.0])).tolist() == [-128 if negative else 127, 0]


@SOME
@given(
    st.one_of(
        non_finite_arrays((2,)),
        wrong_dtype_arrays((2,)),
        ragged_lists(),
        NOT_ARRAYS,
        st.integers(128, 2**62).map(lambda v: np.array([v, 0])),
        st.sampled_from([np.zeros(2), np.zeros((0, 2), int), np.zeros(3, int), np.zeros((1, 1, 2), int)]),
    )
)
def test_dnn_simulator_refuses_everything_but_int8(x):
    assert_pond_error(DSIM.evolve, x, error=SimulationError, match="input")


@SOME
@given(st.lists(st.lists(st.integers(-128, 127), min_size=2, max_size=2), min_size=1, max_size=5))
def test_dnn_simulator_is_deterministic(rows):
    x = np.array(rows)
    a, _, ra = DSIM.evolve(x, record=True)
    b, _, rb = DSIM.evolve(x, record=True)
    assert np.array_equal(a, b) and all(np.array_equal(ra[k], rb[k]) for k in ra)
    assert all(np.array_equal(DSIM.evolve(x[i])[0], a[i]) for i in range(len(x)))
    assert np.array_equal(CFG.dequantize_output(a), np.ldexp(a.astype(float), -CFG.layers[-1].out_frac))


@FEW
@given(
    st.sampled_from(["x", "w", "b", "shift", "acc_bits", "relu", "overflow"]),
    st.one_of(bad_types(), st.sampled_from([np.array([[300]]), np.array([[np.nan]]), -1, 100, 2.5])),
)
def test_mla_layer_checks_every_operand(key, value):
    args = {
        "x": np.array([[3]]),
        "w": np.array([[2]]),
        "b": np.array([1]),
        "shift": 0,
        "relu": False,
        "acc_bits": 24,
        "overflow": "error",
    }
    args[key] = value
    try:
        y, acc = mla_layer(**args)
    except PondError as err:
        assert isinstance(err, SimulationError)
        assert key in str(err) or "shapes" in str(err)
        return
    assert y.dtype == np.int64  # a value that happens to be valid for that operand


@FEW
@given(
    st.sampled_from(["x", "y", "hidden", "epochs", "batch_size", "lr", "weight_decay", "seed"]).flatmap(
        lambda k: st.tuples(st.just(k), st.one_of(bad_types(), bad_scalars(), st.sampled_from([-1, 0, 2.5])))
    )
)
def test_train_mlp_arguments_are_checked(arg):
    key, value = arg
    rng = np.random.default_rng(0)
    args = {"x": rng.normal(size=(20, 3)), "y": np.arange(20) % 2, "hidden": (4,), "epochs": 1, "batch_size": 5}
    args[key] = value
    try:
        train_mlp(**args)
    except PondError as err:
        assert key.split("_")[0] in str(err) or (key == "hidden" and "hidden" in str(err))
        return
    # the values that are valid for that argument: epochs 0 (no training), weight_decay 0, seed 0
    assert (
        (key, value) in [("epochs", 0), ("weight_decay", 0), ("seed", 0), ("hidden", [])]
        or (key == "lr" and isinstance(value, float) and 0 < value < np.inf)
        or (key == "weight_decay" and isinstance(value, float) and 0 <= value < np.inf)
    )


def test_train_mlp_divergence_is_reported_not_returned():
    x = np.random.default_rng(0).normal(size=(20, 3)) * 1e150
    with pytest.raises(PondError, match="diverged"):
        train_mlp(x, np.arange(20) % 2, (4,), epochs=5, batch_size=5, lr=1e200)


# -- timing model and limits -----------------------------------------------------------------------
@SOME
@given(
    st.one_of(
        bad_types().filter(lambda v: not (isinstance(v, list) and len(v) >= 2 and all(1 <= i <= 2**53 for i in v))),
        st.lists(bad_counts(), min_size=2, max_size=3),
        st.lists(st.integers(2**53 + 1, 2**80), min_size=2, max_size=2),
    )
)
def test_estimate_refuses_nonsense_sizes(sizes):
    if isinstance(sizes, list) and all(isinstance(v, list) and len(v) == 0 for v in sizes):
        return
    assert_pond_error(estimate, sizes, error=ConfigError)


@SOME
@given(st.lists(st.integers(1, 2**20), min_size=2, max_size=4))
def test_estimate_of_valid_sizes_is_finite_and_deterministic(sizes):
    a, b = estimate(sizes), estimate(tuple(sizes))
    assert a.as_dict() == b.as_dict() and np.isfinite(a.total_s) and a.total_s > 0


@FEW
@given(
    st.sampled_from(["clock_hz", "dram_bandwidth", "mla_efficiency", "weight_handling_Bps", "setup_s"]),
    bad_positive_floats(),
)
def test_timing_model_fields_are_checked(key, value):
    fields = dataclasses.asdict(calibrate())
    if key == "setup_s" and isinstance(value, float) and value == 0.0:
        return  # a zero setup time is valid
    fields[key] = value
    assert_pond_error(TimingModel, **fields, error=ConfigError, match=key)


@FEW
@given(
    st.sampled_from(["total_s", "fc1_s", "sizes"]),
    st.one_of(bad_positive_floats().filter(lambda v: not isinstance(v, list)), st.just((784,)), st.just([1, 0])),
)
def test_paper_anchors_are_checked(key, value):
    assert_pond_error(PaperAnchors, **{key: value}, error=ConfigError, match=key)


@FEW
@given(st.sampled_from(["neurons_per_pe", "n_chips", "clock_hz", "tick_s", "acc_bits"]), bad_counts())
def test_limits_fields_are_checked(key, value):
    if key in ("clock_hz", "tick_s") and isinstance(value, float) and np.isfinite(value) and value > 0:
        return
    err = assert_pond_error(SpiNNaker2Limits, name="x", error=ConfigError, **{key: value})
    assert key in str(err)
    if value is not None:  # None: the default variant
        assert_pond_error(get_limits, value, error=ConfigError, match="variant")


@FEW
@given(st.sampled_from(["a", "b", "c"]), st.one_of(st.sampled_from(NON_FINITE + (1e39,)), NOT_ARRAYS))
def test_f32_fma_refuses_non_float32_operands(key, value):
    from pondlib.devices.spinnaker2.sim import f32_fma

    ops = {"a": np.float32(0.5), "b": np.float32(2.0), "c": np.float32(1.0), key: value}
    if isinstance(value, bool):
        assert np.isfinite(f32_fma(**ops))  # booleans are 0/1
        return
    assert_pond_error(f32_fma, **ops, error=SimulationError, match=key)
    assert_pond_error(f32_fma, np.float32(3e38), np.float32(3e38), 0.0, error=SimulationError, match="float32")


# -- report functions ------------------------------------------------------------------------------
def test_report_functions_refuse_other_types_naming_the_argument():
    from pondlib.devices.spinnaker2 import report

    rec = {"lif.spikes": np.zeros((4, 2))}
    x = np.zeros((4, 3))
    for bad in (3, "spec", None, CONFIG):
        assert_pond_error(report.resource_usage, bad, "chip", error=ConfigError, match="spec")
        assert_pond_error(report.quantization_summary, bad, error=ConfigError, match="spec")
        assert_pond_error(report.float_vs_chip_gaps, bad, x, rec, np.zeros(4), error=ConfigError, match="spec")
    for bad in (3, [], "nope", 2.5):
        assert_pond_error(report.limit_rows, bad, error=ConfigError, match="variant")
        assert_pond_error(report.resource_usage, SPEC, bad, error=ConfigError, match="variant")
    assert report.limit_rows("board") == report.limit_rows(get_limits("board"))  # documented: a name works


@FEW
@given(st.one_of(bad_types().filter(lambda v: v is not None), st.just({"other.spikes": np.zeros(2)})))
def test_report_records_must_hold_the_population_spikes(record):
    from pondlib.devices.spinnaker2 import report

    err = assert_pond_error(report.resource_usage, SPEC, "chip", record, error=SimulationError, match="record")
    assert "lif.spikes" in str(err)
    assert_pond_error(
        report.float_vs_chip_gaps, SPEC, np.zeros((4, 3)), record, np.zeros(4), error=SimulationError, match="record"
    )


@FEW
@given(
    st.sampled_from(["x", "spikes", "float_spikes"]),
    st.one_of(non_finite_arrays((4, 3)), wrong_dtype_arrays((4, 3)), ragged_lists(), NOT_ARRAYS),
)
def test_float_vs_chip_gaps_refuses_bad_arrays(key, value):
    from pondlib.devices.spinnaker2 import report

    args = {"x": np.zeros((4, 3)), "spikes": np.zeros((4, 2)), "float_spikes": np.zeros((4, 2)), key: value}
    err = assert_pond_error(
        report.float_vs_chip_gaps,
        SPEC,
        args["x"],
        {"lif.spikes": args["spikes"]},
        args["float_spikes"],
        error=SimulationError,
    )
    assert {"x": "x", "spikes": "lif.spikes", "float_spikes": "float_spikes"}[key] in str(err)


def test_float_vs_chip_gaps_checks_the_input_width():
    from pondlib.devices.spinnaker2 import report

    assert_pond_error(
        report.float_vs_chip_gaps,
        SPEC,
        np.zeros((4, 5)),
        {"lif.spikes": np.zeros((4, 2))},
        np.zeros(4),
        error=SimulationError,
        match="x shape",
    )


# -- the public LIF step ---------------------------------------------------------------------------
P2 = LIFParams.from_arrays(threshold=[1.0, 2.0], alpha=[0.5, 0.9], exc_decay=0.5, inh_decay=0.5)


def _state(b=1):
    from pondlib.devices.spinnaker2.sim import LIFState

    return LIFState.zeros((2,), b)


@SOME
@given(
    st.sampled_from(["exc_in", "inh_in"]),
    st.one_of(
        non_finite_arrays((1, 2)),
        wrong_dtype_arrays((1, 2)),
        ragged_lists(),
        NOT_ARRAYS,
        st.sampled_from([np.full((1, 2), -1), np.full((1, 2), 0.5), np.full((1, 2), 2**53), np.zeros((1, 3), int)]),
        st.sampled_from([np.zeros(2, int), np.zeros((2, 2), int), np.zeros((1, 1, 2), int)]),
    ),
)
def test_lif_step_refuses_bad_synaptic_input(key, value):
    from pondlib.devices.spinnaker2.sim import lif_step

    args = {"exc_in": np.zeros((1, 2), int), "inh_in": np.zeros((1, 2), int), key: value}
    err = assert_pond_error(
        lif_step, P2, _state(), args["exc_in"], args["inh_in"], True, LIFOptions(), error=SimulationError
    )
    assert key in str(err) or "shapes" in str(err)


@FEW
@given(st.sampled_from(["p", "s", "has_current", "options"]), st.one_of(bad_types(), st.just(LIFOptions(fma="no"))))
def test_lif_step_refuses_bad_parameters_state_and_flags(key, value):
    from pondlib.devices.spinnaker2.sim import lif_step

    args = {"p": P2, "s": _state(), "has_current": True, "options": LIFOptions(), key: value}
    if key == "has_current" and isinstance(value, bool):
        return  # both are valid
    z = np.zeros((1, 2), int)
    err = assert_pond_error(
        lif_step, args["p"], args["s"], z, z, args["has_current"], args["options"], error=ConfigError
    )
    assert key in str(err) or "option" in str(err)


def test_lif_step_refuses_a_state_of_another_size():
    from pondlib.devices.spinnaker2.sim import LIFState, lif_step

    z = np.zeros((1, 2), int)
    assert_pond_error(lif_step, P2, LIFState.zeros((3,), 1), z, z, True, LIFOptions(), match="shapes")
    bad = _state()._replace(v=np.full((1, 2), np.nan, np.float32))
    assert_pond_error(lif_step, P2, bad, z, z, True, LIFOptions(), error=SimulationError, match="s.v")
    assert_pond_error(LIFState.zeros, "N", 1, error=ConfigError, match="shape")
    assert_pond_error(LIFState.zeros, (2,), 0, error=ConfigError, match="batch")


@SOME
@given(
    st.lists(st.tuples(st.integers(0, 2**20), st.integers(0, 2**20)), min_size=1, max_size=6),
    st.booleans(),
    st.booleans(),
)
def test_lif_step_is_deterministic_and_finite_on_valid_input(rows, has_current, fma):
    """Property on valid input: the checked step equals itself, spikes are booleans, the state finite."""
    from pondlib.devices.spinnaker2.sim import lif_step

    opts = LIFOptions(fma=fma)
    runs = []
    for _ in range(2):
        s, out = _state(), []
        for e, h in rows:
            spk, s = lif_step(P2, s, np.array([[e, h]]), np.array([[h, e]]), has_current, opts)
            out.append(spk.copy())
            assert spk.dtype == bool and all(np.all(np.isfinite(getattr(s, k))) for k in ("v", "i_exc", "i_inh"))
        runs.append(np.array(out))
    assert np.array_equal(runs[0], runs[1])


# -- valid input: random networks map, encode losslessly and simulate in range ----------------------
@st.composite
def _networks(draw):
    n_in, n_out = draw(st.integers(1, 6)), draw(st.integers(1, 5))
    w = np.array(
        draw(st.lists(st.floats(-2, 2, width=32, allow_subnormal=False), min_size=n_in * n_out, max_size=n_in * n_out))
    ).reshape(n_in, n_out)
    if not np.any(w):
        w[0, 0] = 1.0
    thr = draw(st.floats(0.1, 5.0))
    model = draw(st.sampled_from(["lif", "lif_curr_exp", "lif_no_delay", "lif_curr_exp_no_delay"]))
    max_delay = 0 if model.endswith("no_delay") else 7
    d = np.array(draw(st.lists(st.integers(0, max_delay), min_size=w.size, max_size=w.size))).reshape(w.shape)
    lin = LinearWeights._factory(n_in, n_out, "w", None, w)
    lif = LIFNeurons._factory(n_out, n_out, "lif", None, tau_mem=0.02, tau_syn=0.005, threshold=thr, bias=0.0)
    connect_modules(lin, lif)
    return GraphHolder(list(lin.input_nodes), list(lif.output_nodes), "g"), model, d


@SOME
@given(_networks(), st.data())
def test_configuration_round_trip_is_lossless_and_runs_in_range(case, data):
    """Encoding every synapse into words and decoding it again gives back the specification's integer
    weights and delays exactly; the simulator is deterministic, its spikes 0/1 and its state finite."""
    g, model, d = case
    spec = mapper(g, neuron_model=model, delays={"w": d})
    config, ok, message = config_from_specification(spec)
    assert ok, message
    (proj,) = spec.projections
    word = config.model.word
    w_back = np.zeros_like(proj.weights)
    d_back = np.zeros_like(proj.delays)
    for pe in config.pes:
        w, dl, idx = decode_words(pe.words, word)
        pre = np.repeat(pe.row_neuron, np.diff(pe.row_ptr))
        w_back[pre, pe.start + idx] = w
        d_back[pre, pe.start + idx] = dl
    assert np.array_equal(w_back, proj.weights)
    assert np.array_equal(d_back[proj.weights != 0], proj.delays[proj.weights != 0])
    n_in = spec.n_input
    t = data.draw(st.integers(1, 8))
    x = np.array(data.draw(st.lists(st.integers(0, 3), min_size=t * n_in, max_size=t * n_in))).reshape(t, n_in)
    sim = SpiNNaker2Sim.from_config(config)
    a = sim.evolve(x, record=True)
    sim.reset_state()
    b = sim.evolve(x, record=True)
    assert np.array_equal(a[0], b[0]) and all(np.array_equal(a[2][k], b[2][k]) for k in a[2])
    assert a[0].dtype == np.int32 and set(np.unique(a[0])) <= {0, 1}
    assert np.all(np.isfinite(a[2]["lif.v"])) and np.all(np.isfinite(a[2]["lif.i_syn"]))
