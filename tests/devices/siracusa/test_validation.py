"""Siracusa under bad input: every public entry point refuses it with a PondError naming the field.

Driven by the shared hypothesis strategies (``tests/strategies.py``): float layer descriptions and
integer layers (constructors), the mapper (calibration, scales, arguments), ``requant_from_scale``,
the configuration, the simulator and ``quantize_input``, the tiler and the cycle model. Each test
asserts a :class:`~pondlib.errors.PondError` naming the offending field or value, or a documented
tolerant behaviour; never another exception (pytest turns numpy RuntimeWarnings into failures), never
a non-finite number in an output. On valid input the same generators check that mapping and
simulation are deterministic and that integer layers keep exactly the integers they were given.

Documented tolerant behaviours tested here: finite float input beyond the input range saturates in
``quantize_input``; boolean input counts as 0/1; a LIF ``tau_mem`` far below ``dt`` gives ``alpha = 0``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.devices.siracusa.config import SiracusaConfig, check_constraints, config_from_specification
from pondlib.devices.siracusa.cycles import CycleParams, cycle_table, eltwise_cycles, layer_cycles
from pondlib.devices.siracusa.limits import SiracusaLimits
from pondlib.devices.siracusa.mapper import (
    SCALE_MAX,
    SCALE_MIN,
    Conv2dLayer,
    GemmLayer,
    IntLIFLayer,
    ReLU,
    float_forward,
    layers_from_graph,
    mapper,
    requant_from_scale,
)
from pondlib.devices.siracusa.sim import SiracusaSim, quantize_input
from pondlib.devices.siracusa.specification import QLIF, QConv2d, QGemm, QRequant, RequantShift
from pondlib.devices.siracusa.tiling import npu_eligibility, place_memory, plan_layer, weight_bytes
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

#: bad_types() without its lists of integers (a valid array where an array is expected).
NOT_ARRAYS = bad_types().filter(lambda v: not isinstance(v, list))
BAD_ARRAYS = st.one_of(non_finite_arrays((4, 3)), wrong_dtype_arrays((4, 3)), ragged_lists(), NOT_ARRAYS)
RNG = np.random.default_rng(0)
W1, W2 = RNG.normal(size=(4, 16)), RNG.normal(size=(16, 3))
X = RNG.normal(size=(12, 4))


def net(w1=W1, b1=None):
    return [GemmLayer("fc1", w1, b1), ReLU("relu"), GemmLayer("fc2", W2)]


# -- float layer descriptions ----------------------------------------------------------------------
@SOME
@given(BAD_ARRAYS)
def test_gemm_layer_refuses_bad_weights(w):
    assert_pond_error(GemmLayer, "g", w, error=GraphError, match="weight")


@SOME
@given(st.one_of(non_finite_arrays((3,)), wrong_dtype_arrays((3,)), ragged_lists(), st.sampled_from([(2,), (4,)])))
def test_gemm_layer_bias_is_finite_with_one_value_per_output(b):
    if isinstance(b, tuple):  # a shape mismatch names both shapes
        err = assert_pond_error(GemmLayer, "g", np.ones((4, 3)), np.ones(b), error=GraphError)
        assert "(4, 3)" in str(err) and str(b) in str(err)
    else:
        assert_pond_error(GemmLayer, "g", np.ones((4, 3)), b, error=GraphError, match="bias")


@SOME
@given(
    st.sampled_from(["stride", "padding", "groups", "in_shape"]).flatmap(
        lambda k: st.tuples(st.just(k), st.one_of(bad_counts(), st.just(2**20)))
    )
)
def test_conv_layer_geometry_is_checked(arg):
    key, value = arg
    kw = {"stride": 1, "padding": 0, "groups": 1, "in_shape": (6, 6, 2)}
    if key == "padding" and (value == 0 or value is False):
        return  # 0 is a valid padding (False is refused below)
    kw[key] = (6, value, 2) if key == "in_shape" else value
    for ctor, w in ((Conv2dLayer, np.ones((3, 3, 2, 4))), (QConv2d, np.ones((3, 3, 2, 4), dtype=int))):
        try:
            ctor("c", w, **kw)
        except (ConfigError, GraphError) as err:
            assert key in str(err) or "convolution shapes" in str(err)
        else:  # only sizes that are valid for that field (groups 2 divides C and O; any stride >= 1)
            assert key in ("groups", "padding", "stride") and isinstance(value, int) and value >= 0


@FEW
@given(st.sampled_from([((3, 3, 3, 4), (6, 6, 2), 1), ((3, 3, 1, 3), (6, 6, 2), 2), ((7, 7, 2, 4), (6, 6, 2), 1)]))
def test_conv_shape_mismatches_name_both_shapes(case):
    wshape, in_shape, groups = case
    for ctor, err_type in ((Conv2dLayer, GraphError), (QConv2d, ConfigError)):
        err = assert_pond_error(ctor, "c", np.ones(wshape, dtype=int), in_shape, groups=groups, error=err_type)
        assert "convolution shapes" in str(err)


@SOME
@given(
    st.sampled_from(["alpha", "threshold", "bias", "gain"]),
    st.one_of(bad_scalars(), wrong_dtype_arrays((4,)), ragged_lists(), st.sampled_from([-0.5, 1.5, 0.0])),
)
def test_int_lif_layer_values_are_checked(key, value):
    kw = {"alpha": 0.9, "threshold": 1.0, "bias": 0.0, "n": 4, key: value}
    valid = isinstance(value, float) and np.isfinite(value) and abs(value) < 1.7e308
    if valid and key == "bias" or valid and key == "gain":
        IntLIFLayer("l", **kw)  # any finite bias / gain is valid
        return
    if valid and key == "alpha" and 0 <= value <= 1 or valid and key == "threshold" and value > 0:
        IntLIFLayer("l", **kw)
        return
    assert_pond_error(IntLIFLayer, "l", error=GraphError, match=key, **kw)


@FEW
@given(st.sampled_from([(3,), (5,), (2, 2)]))
def test_int_lif_layer_shapes_must_agree(shape):
    err = assert_pond_error(IntLIFLayer, "l", np.full(shape, 0.5), np.ones(4), error=GraphError)
    assert "alpha" in str(err) and ("(4,)" in str(err) or "alpha rank" in str(err))


@FEW
@given(st.one_of(bad_types(), st.just("")), st.sampled_from(["reset", "compare", "state_bits", "n"]))
def test_int_lif_layer_options_are_checked(value, key):
    if key == "n" and value is None:
        return  # n=None: taken from the arrays
    assert_pond_error(IntLIFLayer, "l", 0.5, 1.0, error=GraphError, match=key, **{key: value})


@FEW
@given(st.one_of(bad_types().filter(lambda v: not isinstance(v, str)), st.just("")))
def test_layer_names_are_non_empty_strings(name):
    for ctor, args in ((GemmLayer, (np.ones((2, 2)),)), (ReLU, ()), (IntLIFLayer, (0.5, 1.0))):
        assert_pond_error(ctor, name, *args, error=GraphError, match="name")


# -- mapper ----------------------------------------------------------------------------------------
@SOME
@given(st.one_of(BAD_ARRAYS, st.sampled_from([np.zeros((0, 4)), np.zeros(4), np.zeros((2, 2, 2, 4))])))
def test_mapper_refuses_bad_calibration(cal):
    assert_pond_error(mapper, net(), calibration=cal, error=QuantizationError, match="calibration")


MAPPER_ARGS = {
    "input_scale": bad_positive_floats().filter(lambda v: v is not None),
    "input_signed": st.one_of(st.text(max_size=3), st.integers(), st.floats()),
    "granularity": st.one_of(st.text(max_size=3), st.integers()),
    "rows": bad_counts(),
    "buffering": st.one_of(st.integers().filter(lambda v: v not in (1, 2)), st.text(max_size=2)),
    "l1_budget": bad_counts().filter(lambda v: v is not None),
    "npu": st.one_of(st.text(max_size=2), st.integers()),
    "use_weight_memory": st.one_of(st.text(max_size=3), st.integers()),
    "check": st.one_of(st.text(max_size=3), st.integers()),
}


@SOME
@given(st.sampled_from(sorted(MAPPER_ARGS)).flatmap(lambda k: st.tuples(st.just(k), MAPPER_ARGS[k])))
def test_mapper_arguments_are_checked(arg):
    key, value = arg
    err = assert_pond_error(mapper, net(), calibration=X, **{key: value})
    assert key.split("_")[0] in str(err) or (key == "npu" and "npu mode" in str(err))


@SOME
@given(st.floats(min_value=5e-324, max_value=1e300), st.floats(min_value=5e-324, max_value=1e300))
def test_mapper_at_any_scale_maps_or_reports_never_garbage(w_scale, x_scale):
    """The issue: subnormal or huge weights gave an infinite or zero scale (biases -2^63, thresholds 0,
    errors NaN). Now every scale is checked: a QuantizationError names it, or the mapping is sound."""
    try:
        spec = mapper(net(W1 * w_scale), calibration=X * x_scale, check=False)
    except QuantizationError as err:
        assert "scale" in str(err) or "multiplier" in str(err) or "addend" in str(err) or "overflow" in str(err)
        return
    cfg = spec.config
    assert np.isfinite(cfg.input_scale) and cfg.input_scale > 0 and np.isfinite(cfg.output_scale)
    for r in spec.reports:
        assert np.isfinite(r.weight_error) and np.isfinite(r.mul_rel_error)
        assert np.all(np.isfinite(np.asarray(r.in_scale))) and np.all(np.asarray(r.in_scale) > 0)
    for q in cfg.layers:
        if isinstance(q, QGemm):
            assert np.abs(q.weight).max() <= 127
    if not spec.violations:  # a valid deployment runs and is deterministic
        xq = quantize_input(X * x_scale, cfg)
        a, b = SiracusaSim(cfg).evolve(xq)[0], SiracusaSim(cfg).evolve(xq)[0]
        assert np.array_equal(a, b)


@FEW
@given(st.sampled_from([1e-320, 5e-324, 1e-310]))
def test_subnormal_weights_name_the_weight_scale(w):
    err = assert_pond_error(mapper, net(np.full((4, 16), w)), calibration=X, error=QuantizationError)
    assert "fc1" in str(err) and "weight scale" in str(err) and f"{SCALE_MIN:.3g}" in str(err)


@FEW
@given(st.sampled_from([1e300, 1e200]))
def test_huge_weights_overflowing_the_float_model_are_named(w):
    """1e300 weights times 1e300 inputs overflow float64 in the reference model: named, not NaN."""
    err = assert_pond_error(mapper, net(np.full((4, 16), w)), calibration=X * 1e300, error=QuantizationError)
    assert "fc" in str(err)


def test_a_lif_input_multiplier_that_rounds_to_zero_is_reported():
    layers = [GemmLayer("fc", W1), IntLIFLayer("lif", 0.9, 1e300, n=16)]
    with pytest.raises(ConstraintError) as err:
        mapper(layers, calibration=RNG.normal(size=(3, 5, 4)))
    assert ("multiplier_underflow", "lif") in {(v.rule, v.module) for v in err.value.violations}


def test_mapper_rejects_empty_and_duplicate_layers():
    assert_pond_error(mapper, [], calibration=X, error=GraphError, match="layers")
    with pytest.raises(ConstraintError) as err:
        mapper([GemmLayer("a", np.ones((4, 16))), GemmLayer("a", np.ones((16, 4)))], calibration=X)
    assert err.value.rules == ["unique_names"]


@FEW
@given(st.floats(min_value=1e-3, max_value=1e3))
def test_mapper_is_deterministic_and_never_mutates_its_input(scale):
    layers = net(W1 * scale, np.full(16, 0.1))
    w_before, cal = layers[0].weight.copy(), X.copy()
    a = mapper(layers, calibration=cal)
    b = mapper(layers, calibration=cal)
    assert np.array_equal(layers[0].weight, w_before) and np.array_equal(cal, X)
    for qa, qb in zip(a.config.layers, b.config.layers):
        assert np.array_equal(qa.weight, qb.weight) and np.array_equal(qa.requant.mul, qb.requant.mul)
    config, ok, message = config_from_specification(a)
    assert ok and config is a.config, message


def test_tiny_time_constants_decay_fully():
    lin = LinearWeights._factory(4, 2, "w", None, np.ones((4, 2)))
    lif = LIFNeurons._factory(2, 2, "lif", None, tau_mem=1e-320, tau_syn=0.01, threshold=1.0, bias=0.0)
    connect_modules(lin, lif)
    g = GraphHolder(list(lin.input_nodes), list(lif.output_nodes), "g")
    assert np.all(layers_from_graph(g, drop_synapse=True)[1].alpha == 0.0)
    assert_pond_error(layers_from_graph, g, drop_synapse="yes", error=GraphError, match="drop_synapse")


# -- requant_from_scale ----------------------------------------------------------------------------
@SOME
@given(
    st.sampled_from(["M", "add", "acc_lo", "acc_hi"]),
    st.one_of(st.sampled_from(NON_FINITE), wrong_dtype_arrays((2,)), ragged_lists(), st.just(-1.0)),
)
def test_requant_from_scale_refuses_bad_values(key, value):
    kw = {"M": 0.01, "acc_lo": -100, "acc_hi": 100, "add": 0.0, key: value}
    if key != "M" and isinstance(value, float) and value == -1.0:
        requant_from_scale(**kw)  # negative addends and bounds are valid
        return
    assert_pond_error(requant_from_scale, error=QuantizationError, match=key, **kw)


@SOME
@given(st.floats(min_value=0.0, max_value=SCALE_MAX), st.integers(1, 2**31 - 1))
def test_requant_from_scale_never_wraps(M, amax):
    """A multiplier no shift fits into int32 is kept beyond int32 (saturated to int64) and reported by
    check_constraints; within range the RequantShift is exact to the documented error."""
    rq, err = requant_from_scale(M, -amax, amax)
    assert np.isfinite(err)
    mul = int(rq.mul)
    if M * amax < 2**30:
        assert 0 <= mul <= 2**31 - 1 and abs(mul / rq.div - M) <= M * err * (1 + 1e-9) + 1e-300
    else:
        g = QGemm("g", np.ones((1, 1), dtype=int), requant=rq)
        cfg = SiracusaConfig(layers=(g,), n_input=1, input_bits=32)
        rules = {v.rule for v in check_constraints(cfg)}
        assert mul > 0 and (rules & {"mul_range", "requant_overflow"} or mul <= 2**31 - 1)


# -- integer layers and configuration --------------------------------------------------------------
@SOME
@given(
    st.sampled_from(["mul", "add", "div", "out_bits", "signed", "in_offset"]),
    st.one_of(bad_scalars(), wrong_dtype_arrays((2,)), ragged_lists(), st.sampled_from([2.5, 0, -1, "False"])),
)
def test_requant_shift_fields_are_checked(key, value):
    try:
        RequantShift(**{"mul": 1, key: value})
    except ConfigError as err:
        assert key in str(err)
    else:  # integral values within the field's range
        assert key in ("mul", "add", "in_offset") and value in (0, -1)


@SOME
@given(
    st.sampled_from(["weight", "bias"]),
    st.one_of(non_finite_arrays((4, 3)), wrong_dtype_arrays((4, 3)), ragged_lists(), st.just(np.full((4, 3), 0.5))),
)
def test_qgemm_refuses_non_integer_arrays(key, value):
    kw = {"weight": np.ones((4, 3), dtype=int), key: value}
    assert_pond_error(QGemm, "g", error=ConfigError, match=key, **kw)


@SOME
@given(st.lists(st.lists(st.integers(-(2**62), 2**62), min_size=3, max_size=3), min_size=1, max_size=4))
def test_integer_layers_keep_exactly_the_integers_given(rows):
    """Out-of-range integers are stored exactly (int64) for check_constraints to report, never wrapped."""
    w = np.array(rows, dtype=np.int64)
    g = QGemm("g", w.astype(float) if np.all(np.abs(w) < 2**53) else w)
    assert np.array_equal(g.weight, w) and not g.weight.flags.writeable
    v = check_constraints(SiracusaConfig(layers=(g,), n_input=len(rows)))
    assert ("weight_range" in {x.rule for x in v}) == bool(np.any((w < -128) | (w > 127)))


@FEW
@given(st.sampled_from([(2,), (4,), (3, 1)]))
def test_integer_layer_shape_mismatches_name_both_shapes(shape):
    err = assert_pond_error(QGemm, "g", np.ones((4, 3), int), bias=np.ones(shape, int), error=ConfigError)
    assert "(4, 3)" in str(err) or "bias rank" in str(err)
    assert_pond_error(
        QGemm,
        "g",
        np.ones((4, 3), int),
        requant=RequantShift(mul=[1, 2]),
        error=ConfigError,
        match="2 values for 3 outputs",
    )
    assert_pond_error(QLIF, "l", np.ones(shape, int), 1, 0, 1, np.ones(3, int), error=ConfigError, match="beta_mul")


@FEW
@given(st.one_of(bad_counts(), st.just(2**40)))
def test_qrequant_sizes_are_checked(n):
    assert_pond_error(QRequant, "r", n, RequantShift(mul=1), error=ConfigError, match="n")
    assert_pond_error(QRequant, "r", 6, RequantShift(mul=[1, 2, 3, 4]), error=ConfigError, match="divisor")
    assert QRequant("r", 6, RequantShift(mul=[1, 2, 3])).n == 6  # documented: channels repeat modulo 3


CONFIG_FIELDS = {
    "n_input": bad_counts(),
    "input_bits": st.one_of(st.integers(max_value=0), st.integers(min_value=33), bad_types()),
    "input_signed": st.one_of(st.text(max_size=3), st.integers(), st.none()),
    "input_scale": bad_positive_floats(),
    "output_scale": bad_positive_floats(),
    "rows": bad_counts(),
    "buffering": st.one_of(st.integers().filter(lambda v: v not in (1, 2)), bad_types()),
    "npu_layers": st.one_of(st.text(min_size=1, max_size=3), st.lists(st.text(max_size=3), min_size=1, max_size=2)),
    "limits_name": st.one_of(st.integers(), st.text(max_size=3).filter(lambda s: s.lower() != "siracusa")),
    "layers": st.one_of(st.text(max_size=3), st.lists(st.integers(), min_size=1, max_size=2)),
}
GEMM = QGemm("fc", np.ones((4, 2), dtype=int), requant=RequantShift(mul=1))


@SOME
@given(st.sampled_from(sorted(CONFIG_FIELDS)).flatmap(lambda k: st.tuples(st.just(k), CONFIG_FIELDS[k])))
def test_config_fields_are_checked(arg):
    key, value = arg
    kw = {"layers": (GEMM,), "n_input": 4, key: value}
    err = assert_pond_error(SiracusaConfig, error=ConfigError, **kw)
    assert key.split("_")[0] in str(err) or (key == "limits_name" and "variant" in str(err))


@FEW
@given(st.one_of(bad_types(), st.just(GEMM)))
def test_config_entry_points_refuse_other_types_naming_them(value):
    err = assert_pond_error(config_from_specification, value, error=ConfigError, match=type(value).__name__)
    assert "specification" in str(err).lower()
    assert_pond_error(check_constraints, value, error=ConfigError, match="SiracusaConfig")
    assert_pond_error(SiracusaSim, value, error=ConfigError, match="SiracusaConfig")
    assert_pond_error(place_memory, value, error=ConfigError, match="config")
    assert_pond_error(cycle_table, value, error=ConfigError, match="config")


# -- simulator -------------------------------------------------------------------------------------
CFG = SiracusaConfig(n_input=2, layers=(QGemm("fc", [[10], [-3]]), QLIF("lif", [2], [4], [0], 2, [25])))
SIM = SiracusaSim(CFG)


def evolve(x, **kw):
    SIM.reset_state()
    return SIM.evolve(x, **kw)


@SOME
@given(
    st.one_of(
        non_finite_arrays((3, 2)),
        wrong_dtype_arrays((3, 2)),
        ragged_lists(),
        bad_types(),
        st.floats(0.01, 0.99).map(lambda f: np.full((2, 2), f)),
        st.sampled_from([np.zeros((0, 2)), np.zeros(2), np.zeros((3, 3)), np.zeros((1, 1, 1, 2))]),
    )
)
def test_simulator_refuses_malformed_input(x):
    err = assert_pond_error(evolve, x, error=SimulationError)
    assert any(w in str(err) for w in ("input dtype", "input shape", "non-integer")), err


@SOME
@given(st.one_of(st.integers(128, 2**63 - 1), st.integers(-(2**63), -129), st.floats(128.0, 1e300).map(np.rint)))
def test_simulator_never_clips_silently(v):
    x = np.zeros((2, 2), dtype=np.int64 if isinstance(v, int) else np.float64)
    x[1, 0] = v
    err = assert_pond_error(evolve, x, error=SimulationError, match="out of range")
    assert "x[1, 0]" in str(err)


@SOME
@given(st.lists(st.lists(st.integers(-128, 127), min_size=2, max_size=2), min_size=1, max_size=8), st.integers(1, 3))
def test_simulator_is_deterministic_and_batching_is_exact(rows, batch):
    x = np.array(rows)
    a = evolve(x, record=True)
    b = evolve(x.astype(float), record=True)
    assert np.array_equal(a[0], b[0]) and all(np.array_equal(a[2][k], b[2][k]) for k in a[2])
    batched = evolve(np.stack([x] * batch))[0]
    assert all(np.array_equal(batched[i], a[0]) for i in range(batch))
    assert np.array_equal(evolve(x > 0)[0], evolve((x > 0).astype(int))[0])  # booleans are 0/1


def test_simulator_flags_and_state_checks():
    assert_pond_error(evolve, np.zeros((1, 2), int), record="no", error=SimulationError, match="record")
    assert_pond_error(SiracusaSim, CFG, validate="False", error=ConfigError, match="validate")
    SIM.reset_state()
    SIM.evolve(np.ones((2, 3, 2), int))
    assert_pond_error(SIM.evolve, np.ones((4, 3, 2), int), error=SimulationError, match="batch size")
    assert_pond_error(SIM.evolve, np.ones((3, 2), int), error=SimulationError, match="unbatched")


def test_validate_false_still_enforces_the_int64_safety_rules():
    """validate=False skips the chip's rules (overflow wraps as on the cores) but never the ones whose
    breach would make the int64 model itself wrong (e.g. weights beyond int8 or a 40-bit mul)."""
    wraps = SiracusaConfig(n_input=1, layers=(QGemm("g", [[127]], requant=RequantShift(mul=2**24)),))
    assert check_constraints(wraps) and SiracusaSim(wraps, validate=False)
    unsafe = SiracusaConfig(n_input=1, layers=(QGemm("g", [[2**40]], requant=RequantShift(mul=1)),))
    with pytest.raises(ConfigError, match="weight_range"):
        SiracusaSim(unsafe, validate=False)


@SOME
@given(st.one_of(non_finite_arrays((3, 2)), wrong_dtype_arrays((3, 2)), ragged_lists(), NOT_ARRAYS))
def test_quantize_input_refuses_bad_values(x):
    assert_pond_error(quantize_input, x, CFG, error=SimulationError)


@FEW
@given(st.floats(min_value=128.0, max_value=1.7e308), st.booleans())
def test_quantize_input_saturates_finite_large_values(v, negative):
    """Documented tolerant behaviour: finite values beyond the input range saturate (no warning)."""
    v = -v if negative else v
    assert quantize_input(np.array([[v, 0.0]]), CFG).tolist() == [[-128 if negative else 127, 0]]
    assert_pond_error(quantize_input, np.ones((1, 3)), CFG, error=SimulationError, match="input shape")
    assert_pond_error(quantize_input, np.ones((1, 2)), "cfg", error=ConfigError, match="config")


# -- float reference model, tiling, cycles, limits --------------------------------------------------
@FEW
@given(st.one_of(BAD_ARRAYS, st.just(np.ones((2, 5)))))
def test_float_forward_refuses_bad_input(x):
    assert_pond_error(float_forward, net(), x)


@FEW
@given(st.one_of(NOT_ARRAYS, st.lists(st.integers(), min_size=1, max_size=2)))
def test_float_forward_refuses_non_layers(layers):
    assert_pond_error(float_forward, layers, X, error=GraphError, match="layers")


@SOME
@given(
    st.sampled_from(["rows", "budget", "buffering"]).flatmap(
        lambda k: st.tuples(st.just(k), st.one_of(bad_counts(), st.just(2**40), st.just(3)))
    )
)
def test_plan_layer_arguments_are_checked(arg):
    key, value = arg
    if key in ("budget", "rows") and value == 3 or key == "budget" and value == 2**40:
        plan_layer(GEMM, budget=value)  # any positive budget is valid (a small one does not fit)
        return
    assert_pond_error(plan_layer, GEMM, error=ConfigError, match=key, **{key: value})


@FEW
@given(NOT_ARRAYS)
def test_tiling_refuses_non_layers(layer):
    for fn in (plan_layer, npu_eligibility, weight_bytes):
        assert_pond_error(fn, layer, error=ConfigError, match="layer")


@SOME
@given(
    st.sampled_from(["n", "cores", "budget", "bytes_in", "buffering", "simd", "cycles_per_value"]).flatmap(
        lambda k: st.tuples(st.just(k), st.one_of(bad_counts(), st.just(2**50)))
    )
)
def test_eltwise_cycles_arguments_are_checked(arg):
    key, value = arg
    if key in ("budget", "bytes_in") and value == 2**50:
        assert np.isfinite(sum(eltwise_cycles(100, **{key: value})[:3]))
        return
    if key == "cycles_per_value" and isinstance(value, (int, float)) and not isinstance(value, bool):
        if value >= 0 and np.isfinite(float(value)):
            return  # a finite non-negative cost is valid
    if key == "cycles_per_value" and value is None or key == "simd" and isinstance(value, bool):
        return  # None: the default cost; both bools are valid
    assert_pond_error(eltwise_cycles, **{"n": 100, key: value}, error=ConfigError, match=key)


@FEW
@given(st.sampled_from(["fork_cycles", "dma_bytes_per_cycle", "npu_macs_per_cycle"]), bad_positive_floats())
def test_cycle_params_are_checked(key, value):
    if key == "fork_cycles" and isinstance(value, float) and value == 0.0:
        CycleParams(fork_cycles=0.0)  # a zero cost is valid, a zero rate is not
        return
    assert_pond_error(CycleParams, error=ConfigError, match=key, **{key: value})


def test_layer_cycles_are_finite_and_checked():
    cfg = SiracusaConfig(layers=(GEMM,), n_input=4)
    rows = cycle_table(cfg)
    assert all(np.isfinite(r.total) for r in rows)
    assert_pond_error(layer_cycles, GEMM, cfg, cores=0, error=ConfigError, match="cores")
    assert_pond_error(layer_cycles, GEMM, cfg, placement="L9", error=ConfigError, match="placement")


@FEW
@given(st.sampled_from(["n_cores", "l1_bytes", "acc_bits", "shift_max", "npu_stride"]), bad_counts())
def test_limits_fields_are_checked(key, value):
    if key == "shift_max" and value == 0:
        return  # a zero shift range is valid
    assert_pond_error(SiracusaLimits, error=ConfigError, match=key, **{key: value})


def test_all_errors_are_pond_errors():
    for cls in (ConfigError, GraphError, QuantizationError, SimulationError, ConstraintError):
        assert issubclass(cls, PondError)


# -- public integer helpers of the simulator -------------------------------------------------------
@SOME
@given(st.lists(st.integers(-(2**80), 2**80), min_size=1, max_size=5))
def test_wrap32_equals_its_integer_definition_for_any_integer(values):
    from pondlib.devices.siracusa.sim import wrap32

    want = [((v + 2**31) % 2**32) - 2**31 for v in values]
    assert wrap32(np.array(values, dtype=object)).tolist() == want
    if all(abs(v) < 2**63 for v in values):
        assert wrap32(np.array(values, dtype=np.int64)).tolist() == want


@FEW
@given(st.one_of(non_finite_arrays((3,)), wrong_dtype_arrays((3,)), ragged_lists(), st.just(np.array([0.5]))))
def test_wrap32_refuses_what_has_no_integer_value(x):
    from pondlib.devices.siracusa.sim import wrap32

    assert_pond_error(wrap32, x, error=SimulationError)


@SOME
@given(
    st.sampled_from(["requant_shift", "gemm_acc", "conv2d_acc", "lif_step"]),
    st.one_of(
        non_finite_arrays((1, 4)),
        wrong_dtype_arrays((1, 4)),
        ragged_lists(),
        NOT_ARRAYS.filter(lambda v: not isinstance(v, bool)),  # documented: booleans are 0/1
    ),
)
def test_simulator_helpers_refuse_non_integer_operands(fn_name, bad):
    from pondlib.devices.siracusa import sim

    conv = QConv2d("c", np.ones((1, 1, 1, 1), int), (2, 2, 1))
    calls = {
        "requant_shift": lambda: sim.requant_shift(bad, RequantShift(mul=1)),
        "gemm_acc": lambda: sim.gemm_acc(bad, np.ones((4, 2), int)),
        "conv2d_acc": lambda: sim.conv2d_acc(bad, conv),
        "lif_step": lambda: sim.lif_step(np.zeros((1, 4), int), bad, QLIF("l", 1, 1, 0, 1, np.ones(4, int))),
    }
    assert_pond_error(calls[fn_name], error=SimulationError)


def test_simulator_helpers_check_shapes_and_layer_types():
    from pondlib.devices.siracusa import sim

    lif = QLIF("l", 1, 1, 0, 1, np.ones(2, int))
    assert_pond_error(sim.gemm_acc, np.ones((1, 3), int), np.ones((2, 2), int), error=SimulationError, match="shapes")
    assert_pond_error(sim.gemm_acc, np.ones((1, 2), int), np.ones((2, 2), int), [1], error=SimulationError)
    assert_pond_error(sim.conv2d_acc, np.ones((1, 5), int), QConv2d("c", np.ones((1, 1, 1, 1), int), (2, 2, 1)))
    assert_pond_error(sim.conv2d_acc, np.ones((1, 4), int), GEMM, error=ConfigError, match="layer")
    assert_pond_error(sim.lif_step, np.zeros(3, int), np.zeros(3, int), lif, error=SimulationError, match="shapes")
    assert_pond_error(sim.lif_step, np.zeros(2, int), np.zeros(2, int), GEMM, error=ConfigError, match="layer")
    odd = QLIF("l", 1, 1, 0, 1, np.ones(2, int), reset="never")  # check_constraints reports it (lif_options)
    assert_pond_error(sim.lif_step, np.zeros(2, int), np.zeros(2, int), odd, error=ConfigError, match="reset")
    assert_pond_error(sim.requant_shift, np.ones(3, int), "rq", error=ConfigError, match="rq")
    rq3 = RequantShift(mul=[1, 2, 3])
    assert_pond_error(sim.requant_shift, np.ones(4, int), rq3, error=SimulationError, match="divisor")
    assert sim.requant_shift(np.ones(6, int), rq3).tolist() == [1, 2, 3, 1, 2, 3]  # documented: repeats
    assert_pond_error(SiracusaSim.from_specification, CFG, error=ConfigError, match="Specification")


@SOME
@given(
    st.lists(st.integers(-(2**62), 2**62), min_size=3, max_size=3),
    st.lists(st.integers(-(2**62), 2**62), min_size=3, max_size=3),
    st.integers(-(2**62), 2**62),
)
def test_gemm_acc_is_exact_modulo_2_32_for_any_int64_operands(x, w, b):
    """Documented bound: the int64 sum may wrap, but modulo 2^32 (all the int32 accumulator keeps) it is
    exact for every int64 operand, so no input range makes the modelled accumulator wrong."""
    from pondlib.devices.siracusa.sim import gemm_acc

    want = ((sum(a * c for a, c in zip(x, w)) + b + 2**31) % 2**32) - 2**31
    got = gemm_acc(np.array([x]), np.array(w)[:, None], np.array([b]))
    assert got.tolist() == [[want]]


# -- report, constraints and cycle table: argument types -------------------------------------------
SPEC_LIF = mapper([GemmLayer("fc", W1), IntLIFLayer("lif", 0.9, 1.0, n=16)], calibration=RNG.normal(size=(3, 5, 4)))


def test_report_functions_refuse_other_types_naming_the_argument():
    from pondlib.devices.siracusa import report

    rec = {"lif/spikes": np.zeros((3, 5, 16))}
    for bad in (3, "spec", None, CFG):
        assert_pond_error(report.resource_usage, bad, "siracusa", error=ConfigError, match="spec")
        assert_pond_error(report.quantization_summary, bad, error=ConfigError, match="spec")
        assert_pond_error(report.float_vs_chip_gaps, bad, rec, rec["lif/spikes"], 0.02, 1e-3, error=ConfigError)
    for bad in (3, [], "nope", 2.5):
        assert_pond_error(report.limit_rows, bad, error=ConfigError, match="variant")
        assert_pond_error(report.resource_usage, SPEC_LIF, bad, error=ConfigError, match="variant")
    no_lif = mapper(net(), calibration=X)
    assert_pond_error(report.float_vs_chip_gaps, no_lif, rec, rec["lif/spikes"], 0.02, 1e-3, match="LIF layer")


@SOME
@given(
    st.sampled_from(["record", "spikes", "float_spikes", "tau_mem", "dt"]).flatmap(
        lambda k: st.tuples(
            st.just(k),
            st.one_of(bad_positive_floats(), non_finite_arrays((3, 5, 16)), st.just({"x/spikes": np.zeros(2)})),
        )
    )
)
def test_float_vs_chip_gaps_checks_every_argument(arg):
    from pondlib.devices.siracusa import report

    key, value = arg
    args = {"spikes": np.zeros((3, 5, 16)), "float_spikes": np.zeros((3, 5, 16)), "tau_mem": 0.02, "dt": 1e-3}
    args[key] = value
    record = value if key == "record" else {"lif/spikes": args["spikes"]}
    call = (report.float_vs_chip_gaps, SPEC_LIF, record, args["float_spikes"], args["tau_mem"], args["dt"])
    err = assert_pond_error(*call, error=SimulationError)
    assert {"record": "record", "spikes": "lif/spikes"}.get(key, key) in str(err)


def test_float_vs_chip_gaps_of_a_tiny_time_constant_is_a_full_decay():
    """Documented tolerant behaviour: tau_mem far below dt gives a float decay of 0, no warning."""
    from pondlib.devices.siracusa import report

    rec = {"lif/spikes": np.ones((3, 5, 16))}
    g = report.float_vs_chip_gaps(SPEC_LIF, rec, np.zeros((3, 5, 16)), 1e-320, 1.0)
    assert g.decay_float == 0.0 and g.rate_chip == 1.0


def test_constraint_helpers_refuse_other_types():
    from pondlib.devices.siracusa.config import layer_ranges
    from pondlib.devices.siracusa.cycles import format_cycle_table

    cfg = SiracusaConfig(layers=(GEMM,), n_input=4)
    assert_pond_error(layer_ranges, "cfg", error=ConfigError, match="config")
    assert_pond_error(check_constraints, cfg, plans=3, error=ConfigError, match="plans")
    assert_pond_error(check_constraints, cfg, plans=[3], error=ConfigError, match="plans[0]")
    assert_pond_error(check_constraints, cfg, placement="L2", error=ConfigError, match="placement")
    assert_pond_error(format_cycle_table, 3, error=ConfigError, match="rows")
    assert_pond_error(format_cycle_table, [3], error=ConfigError, match="rows[0]")
    assert format_cycle_table(cycle_table(cfg)).startswith("layer")


@FEW
@given(st.sampled_from(["alpha", "threshold"]), st.sampled_from([-0.5, 1.5, -1.0, 0.0]))
def test_float_lif_arrays_changed_after_construction_are_violations(key, value):
    """The layer arrays are mutable: the mapper checks them again and never clips them silently."""
    lif = IntLIFLayer("lif", 0.9, 1.0, n=16)
    getattr(lif, key)[3] = value
    if key == "alpha" and 0 <= value <= 1 or key == "threshold" and value > 0:
        return
    with pytest.raises(ConstraintError) as err:
        mapper([GemmLayer("fc", W1), lif], calibration=RNG.normal(size=(3, 5, 4)))
    assert [(v.rule, v.module) for v in err.value.violations] == [("invalid_parameter", "lif")]
    assert f"{key}[3]" in str(err.value)


# -- valid input: random integer deployments run deterministically and in range --------------------
@st.composite
def _configs(draw):
    n_in = draw(st.integers(1, 6))
    n_hid = draw(st.integers(1, 6))
    ints = st.integers(-128, 127)
    w1 = np.array(draw(st.lists(ints, min_size=n_in * n_hid, max_size=n_in * n_hid))).reshape(n_in, n_hid)
    s = draw(st.integers(0, 12))
    rq = RequantShift(
        mul=draw(st.integers(1, 2**8)), add=draw(st.integers(-(2**8), 2**8)), div=2**s, signed=draw(st.booleans())
    )
    layers = [QGemm("fc1", w1, requant=rq)]
    if draw(st.booleans()):
        w2 = np.array(draw(st.lists(ints, min_size=n_hid * 3, max_size=n_hid * 3))).reshape(n_hid, 3)
        layers.append(QGemm("fc2", w2))  # raw int32 accumulator into a LIF
        layers.append(
            QLIF(
                "lif",
                beta_mul=draw(st.integers(0, 2**6)),
                in_mul=draw(st.integers(0, 2**6)),
                add=draw(st.integers(-64, 64)),
                shift=6,
                threshold=np.full(3, draw(st.integers(1, 2**14))),
                reset=draw(st.sampled_from(["subtract", "zero"])),
                compare=draw(st.sampled_from([">=", ">"])),
            )
        )
    return SiracusaConfig(layers=tuple(layers), n_input=n_in)


@SOME
@given(_configs(), st.data())
def test_valid_deployments_run_deterministically_with_outputs_in_range(cfg, data):
    sim = SiracusaSim(cfg, validate=False)  # the chip's overflow rules are the caller's; the model stays exact
    t = data.draw(st.integers(1, 6))
    n = cfg.n_input
    x = np.array(data.draw(st.lists(st.integers(-128, 127), min_size=t * n, max_size=t * n))).reshape(t, n)
    a = sim.evolve(x, record=True)
    sim.reset_state()
    b = sim.evolve(x, record=True)
    assert np.array_equal(a[0], b[0]) and all(np.array_equal(a[2][k], b[2][k]) for k in a[2])
    same = SiracusaSim(cfg.replace(), validate=False).evolve(x)[0]  # a copied configuration: the same run
    assert np.array_equal(same, a[0])
    last = cfg.layers[-1]
    lo, hi = (0, 1) if isinstance(last, QLIF) else last.requant.out_range
    assert a[0].dtype == np.int64 and a[0].shape == (t, last.n_out)
    assert np.all((a[0] >= lo) & (a[0] <= hi))
    for key, v in a[2].items():
        assert v.dtype == np.int64 and np.all((v >= -(2**31)) & (v < 2**31)), key
