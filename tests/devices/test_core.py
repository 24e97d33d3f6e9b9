"""The shared device machinery under bad input: saturating and wrapping casts, simulator input checks,
limits lookup, safe relative errors.

Properties (hypothesis): :func:`sat` and :func:`wrap` equal their Python-integer definitions for every
integer of any size (numpy ints, uint64, integral floats up to 1e300, Python ints beyond int64), never
pass a value through a wrapping cast (``sat(1e30, 8) == 127``), and refuse NaN, fractions and
non-numbers with a :class:`~pondlib.errors.PondError`. :func:`integer_input` refuses every malformed
simulator input with a :class:`~pondlib.errors.SimulationError` naming what is wrong, and returns
exactly the given integers otherwise.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.devices.core.inputs import append_silence, integer_input
from pondlib.devices.core.intmath import int_range, sat, wrap
from pondlib.devices.core.lookup import as_graph, resolve_limits
from pondlib.devices.core.numerics import relative_error
from pondlib.devices.siracusa.limits import LIMITS as SIRACUSA_LIMITS
from pondlib.devices.siracusa.limits import SIRACUSA
from pondlib.errors import ConfigError, GraphError, PondError, SimulationError
from tests.strategies import (
    NON_FINITE,
    assert_pond_error,
    bad_types,
    non_finite_arrays,
    ragged_lists,
    wrong_dtype_arrays,
)

FAST = settings(max_examples=60, deadline=None)
FEW = settings(max_examples=20, deadline=None)
BITS = st.integers(1, 64)


def py_sat(v: int, bits: int) -> int:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return min(max(v, lo), hi)


def py_wrap(v: int, bits: int) -> int:
    m, half = 1 << bits, 1 << (bits - 1)
    return ((v + half) % m) - half


# -- sat / wrap ------------------------------------------------------------------------------------
@FAST
@given(st.integers(-(2**80), 2**80), BITS)
def test_sat_and_wrap_equal_their_integer_definition_for_any_python_int(v, bits):
    assert int(sat(v, bits)) == py_sat(v, bits)
    assert int(wrap(v, bits)) == py_wrap(v, bits)
    assert int(sat(np.array([v], dtype=object), bits)[0]) == py_sat(v, bits)


@FAST
@given(st.integers(-(2**62), 2**62).map(float), BITS)
def test_integral_floats_saturate_and_wrap_exactly(v, bits):
    assert int(sat(np.array([v]), bits)[0]) == py_sat(int(v), bits)
    assert int(wrap(np.array([v]), bits)[0]) == py_wrap(int(v), bits)


@FAST
@given(st.floats(min_value=2.0**63, max_value=1e300), BITS, st.booleans())
def test_huge_floats_clip_before_the_cast(v, bits, negative):
    """The issue's example: +1e30 through an int64 cast became -128; it must saturate."""
    v = -v if negative else v
    lo, hi = int_range(bits)
    assert int(sat(v, bits)) == (lo if negative else hi)
    assert int(wrap(v, bits)) == py_wrap(int(v), bits)  # exact residue of the float's integer value


def test_issue_example_and_infinities():
    assert int(sat(1e30, 8)) == 127 and int(sat(-1e30, 8)) == -128
    assert int(sat(np.inf, 16)) == 32767 and int(sat(-np.inf, 16)) == -32768  # documented: inf saturates
    assert sat(np.array([2**64 - 1], dtype=np.uint64), 64).tolist() == [2**63 - 1]
    assert wrap(np.array([2**64 - 1], dtype=np.uint64), 8).tolist() == [-1]
    assert sat(np.array([100], dtype=np.int8), 4).tolist() == [7]  # narrow dtypes widen first


def test_valid_input_semantics_are_unchanged():
    assert sat(np.array([40000, -40000, 5]), 16).tolist() == [32767, -32768, 5]
    assert wrap(np.array([32768, -32769, 255]), 16).tolist() == [-32768, 32767, 255]
    assert sat(np.array([1, 2]), 8).dtype == np.int64 and wrap(np.array([1, 2]), 8).dtype == np.int64


@FEW
@given(st.sampled_from([sat, wrap]), st.sampled_from([float("nan"), 0.5, -2.25, 1e-320]))
def test_nan_and_fractions_raise(fn, v):
    err = assert_pond_error(fn, np.array([1.0, v]), 8)
    assert ("nan" in str(err)) if np.isnan(v) else ("whole numbers" in str(err))


@FEW
@given(st.sampled_from(NON_FINITE[1:]))
def test_wrap_refuses_infinities(v):
    assert_pond_error(wrap, np.array([v]), 8, match="finite")


@FEW
@given(st.one_of(bad_types(), wrong_dtype_arrays((2,)), ragged_lists()), st.sampled_from([sat, wrap]))
def test_non_numbers_raise(v, fn):
    ref = py_sat if fn is sat else py_wrap
    if isinstance(v, bool):
        assert int(fn(v, 8)) == int(v)  # documented: booleans are 0/1
    elif isinstance(v, list) and all(isinstance(i, int) for i in v):
        assert np.asarray(fn(v, 8)).tolist() == [ref(i, 8) for i in v]  # a list of integers is valid
    else:
        assert_pond_error(fn, v, 8)


@FEW
@given(st.one_of(st.integers(max_value=0), st.integers(min_value=65), bad_types(), st.sampled_from([2.5, np.nan])))
def test_bit_widths_are_checked(bits):
    assert_pond_error(int_range, bits, match="bits")
    assert_pond_error(sat, 1, bits, match="bits")
    assert_pond_error(wrap, 1, bits, match="bits")


# -- simulator input -------------------------------------------------------------------------------
def _inp(x, **kw):
    return integer_input(x, 3, where="Sim.evolve", **kw)


@FAST
@given(st.lists(st.lists(st.integers(0, 2**40), min_size=3, max_size=3), min_size=1, max_size=4))
def test_integer_input_returns_the_given_integers(rows):
    for x in (np.array(rows, dtype=np.int64), np.array(rows, dtype=np.float64), rows):
        out = _inp(x, lo=0)
        assert out.dtype == np.int64 and out.tolist() == rows


@FEW
@given(st.sampled_from([float("nan"), float("inf"), -float("inf"), 0.5, 1e-320]), st.integers(0, 5))
def test_integer_input_refuses_non_integers_at_their_index(v, t):
    x = np.zeros((6, 3))
    x[t, 1] = v
    err = assert_pond_error(_inp, x, error=SimulationError, match="integer")
    assert f"x[{t}, 1]" in str(err)


@FEW
@given(st.one_of(st.integers(-(2**63), -1), st.floats(max_value=-1.0, min_value=-1e300).map(np.rint)))
def test_integer_input_refuses_negative_counts(v):
    x = np.zeros((2, 3), dtype=np.int64 if isinstance(v, int) else np.float64)
    x[1, 2] = v
    assert_pond_error(_inp, x, lo=0, error=SimulationError, match=">= 0")


@FEW
@given(st.floats(min_value=2.0**63, max_value=1e300))
def test_integer_input_refuses_what_int64_cannot_hold(v):
    assert_pond_error(_inp, np.array([[v, 0.0, 0.0]]), error=SimulationError, match="out of range")
    assert_pond_error(_inp, np.array([[2**64 - 1, 0, 0]], dtype=np.uint64), error=SimulationError, match="<=")


@FEW
@given(
    st.one_of(
        bad_types(),
        wrong_dtype_arrays((2, 3)),
        ragged_lists(),
        st.sampled_from([np.zeros((0, 3)), np.zeros((2, 0, 3)), np.zeros(3), np.zeros((2, 4)), np.zeros((1, 2, 3, 3))]),
    )
)
def test_integer_input_refuses_malformed_input(x):
    err = assert_pond_error(_inp, x, error=SimulationError)
    assert any(w in str(err) for w in ("input dtype", "input shape")), err


def test_integer_input_float_policy_and_ranks():
    assert_pond_error(_inp, np.zeros((1, 3)), allow_float=False, error=SimulationError, match="dtype float64")
    assert integer_input(np.array([1, 2, 3]), 3, where="w", ranks=(1, 2)).tolist() == [1, 2, 3]
    assert _inp(np.array([[True, False, True]])).tolist() == [[1, 0, 1]]  # documented: booleans are 0/1


# -- lookup and numerics ---------------------------------------------------------------------------
@FEW
@given(st.one_of(bad_types(), st.text(min_size=1, max_size=6).filter(lambda s: s.strip().lower() != "siracusa")))
def test_unknown_limits_raise_a_config_error_listing_the_names(value):
    if value is None:
        assert resolve_limits(value, SIRACUSA_LIMITS, default=SIRACUSA, device="Siracusa") is SIRACUSA
        return
    err = assert_pond_error(resolve_limits, value, SIRACUSA_LIMITS, default=SIRACUSA, device="Siracusa")
    assert isinstance(err, ConfigError) and "siracusa" in str(err)


@FEW
@given(bad_types())
def test_as_graph_refuses_non_graphs(value):
    assert_pond_error(as_graph, value, error=GraphError, match="mapper input")


@FAST
@given(st.floats(min_value=5e-324, max_value=1e300), st.lists(st.floats(0.1, 1.0), min_size=1, max_size=5))
def test_relative_error_is_finite_at_every_scale(scale, values):
    """The issue: a quantizer's reported error was NaN for huge weights (inf / inf)."""
    exact = np.array(values) * scale
    err = relative_error(exact * 1.01, exact)
    assert np.isfinite(err) and err >= 0.0
    if scale > 1e-290:  # normal floats: the error is the one put in
        assert err == pytest.approx(0.01, rel=1e-3)


def test_relative_error_of_zero_is_zero():
    assert relative_error(np.ones(3), np.zeros(3)) == 0.0


def test_pond_errors_only():
    """Everything above raises PondError subclasses; this checks the classes used are PondErrors."""
    for cls in (ConfigError, GraphError, SimulationError):
        assert issubclass(cls, PondError)


# -- report rows, rule runner, relative error: argument checks ------------------------------------
@FEW
@given(st.sampled_from(["name", "used", "limit", "unit", "note"]), st.one_of(bad_types(), st.sampled_from(NON_FINITE)))
def test_resource_rows_refuse_malformed_fields(key, value):
    from pondlib.devices.core.report import Resource

    kw = {"name": "PEs", "used": 3, "limit": 8, key: value}
    numeric = key in ("used", "limit")
    if key == "limit" and value is None:
        assert Resource(**kw).fraction is None  # documented: no limit
        return
    if not numeric and isinstance(value, str):
        Resource(**kw)  # any text is a valid label
        return
    assert_pond_error(Resource, **kw, error=ConfigError, match=key)


@FEW
@given(st.sampled_from(["name", "value", "unit"]), bad_types().filter(lambda v: not isinstance(v, str)))
def test_limit_rows_refuse_non_text(key, value):
    from pondlib.devices.core.report import LimitRow

    assert_pond_error(LimitRow, **{"name": "n", "value": "1", key: value}, error=ConfigError, match=key)


def test_rule_runner_refuses_malformed_rules_and_violations():
    from pondlib.devices.core.rules import check_rules, raise_violations
    from pondlib.errors import ConstraintError, Violation

    v = Violation("r", "m", 1, 0, "fix")
    assert check_rules([lambda ctx: [v]], None) == [v]
    assert_pond_error(check_rules, "rules", None, match="rules")
    assert_pond_error(check_rules, [3], None, match="callable")
    assert_pond_error(check_rules, [lambda ctx: ["not a violation"]], None, match="Violation")
    assert_pond_error(raise_violations, ["x"], "dev", match="violations")
    assert_pond_error(raise_violations, [v], 3, match="device")
    with pytest.raises(ConstraintError):
        raise_violations((v,), "dev")
    raise_violations([], "dev")  # nothing to raise


@FEW
@given(st.one_of(non_finite_arrays((3,)), wrong_dtype_arrays((3,)), ragged_lists(), st.just(np.ones(4))))
def test_relative_error_refuses_non_finite_or_mismatched_operands(bad):
    from pondlib.errors import QuantizationError

    assert_pond_error(relative_error, bad, np.ones(3), error=QuantizationError)
    assert_pond_error(relative_error, np.ones(3), bad, error=QuantizationError)


# -- append_silence ------------------------------------------------------------------------------------
@FEW
@given(st.integers(1, 5), st.integers(1, 4), st.integers(0, 3), st.booleans())
def test_append_silence_keeps_the_input_and_appends_zeros(T, n, ticks, batched):
    x = np.arange(T * n, dtype=np.int32).reshape(T, n) + 1
    if batched:
        x = np.stack([x, 2 * x])
    y = append_silence(x, ticks)
    assert y.dtype == x.dtype and y.shape[-2] == T + ticks and y.shape[-1] == n
    np.testing.assert_array_equal(y[..., :T, :], x)
    assert not y[..., T:, :].any()


@FEW
@given(
    st.one_of(
        bad_types(),
        ragged_lists(),
        st.just(np.zeros(3)),
        st.just(np.zeros((1, 2, 3, 4))),
        st.just(np.zeros((2, 3), complex)),
        st.just(np.array([["a", "b"]])),
    )
)
def test_append_silence_refuses_what_is_not_an_input(x):
    assert_pond_error(append_silence, x, 1, error=SimulationError, match="x")


@pytest.mark.parametrize("ticks", [-1, 1.5, "2", None, True])
def test_append_silence_refuses_bad_tick_counts(ticks):
    assert_pond_error(append_silence, np.zeros((2, 3)), ticks, error=SimulationError, match="ticks")
