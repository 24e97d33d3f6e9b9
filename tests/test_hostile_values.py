"""Extreme values and wrong types on the new entry points: every answer a PondError naming the value, the limit
and the fix (never a raw TypeError, AttributeError, OSError or an argparse guess), in a readable form (an
element named ``weights[1, 2]``, ``1e+300`` rather than a 301-digit integer, a dict named as a dict).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.cli import main
from pondlib.devices import registry
from pondlib.errors import CodegenError, ConstraintError, NIRError, PondError
from pondlib.interop.nir import to_nir
from pondlib.transform import device_aware
from pondlib.validate import as_array, as_float_array, as_int_array, check_choice, check_elements, check_int
from tests.strategies import assert_pond_error, bad_types

SOME = settings(max_examples=25, deadline=2000)


@pytest.fixture(scope="module")
def net() -> nn.Sequential:
    rng = np.random.default_rng(0)  # numpy weights: no JAX random work
    return nn.Sequential(
        nn.Linear(4, 6, weight=rng.normal(size=(4, 6))), nn.LIF(6, tau_mem=0.02, tau_syn=0.002),
        nn.Linear(6, 3, weight=rng.normal(size=(6, 3))), nn.LIF(3),
    )  # fmt: skip


# -- messages that name the value ------------------------------------------------------------------------------
@given(i=st.integers(0, 3), j=st.integers(0, 4), bad=st.sampled_from([np.nan, np.inf, -np.inf]))
@SOME
def test_a_non_finite_element_is_named_with_its_array(i, j, bad):
    w = np.zeros((4, 5))
    w[i, j] = bad
    err = assert_pond_error(as_array, w, "weights")
    assert f"weights[{i}, {j}]" in str(err) and f"at index ({i}, {j})" in str(err)
    err = assert_pond_error(as_int_array, np.where(np.isfinite(w), w, 99), "counts", hi=10)
    assert f"counts[{i}, {j}]" in str(err)


@given(value=st.one_of(st.floats(1e16, 1e308), st.integers(10**16, 10**400)))
@SOME
def test_huge_numbers_are_printed_short(value):
    err = assert_pond_error(check_int, value, "n", hi=10)
    assert len(str(err)) < 200 and "e+" in str(err)
    err = assert_pond_error(as_float_array, [float(min(value, 1e308))], "x", hi=1.0)
    assert len(str(err)) < 250


@given(
    value=st.one_of(st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.lists(st.text(), max_size=2))
)
@SOME
def test_a_container_where_a_name_is_expected_is_named_by_its_type(value):
    err = assert_pond_error(check_choice, value, "device", ("a", "b"))
    assert f"got a {type(value).__name__}" in str(err)


@given(strings=st.lists(st.text(min_size=1, max_size=3), min_size=1, max_size=4))
@SOME
def test_string_arrays_are_named_as_strings(strings):
    assert "(strings)" in str(assert_pond_error(as_array, np.array(strings), "x"))


@given(shape=st.lists(st.integers(-5, 2**40), min_size=1, max_size=70))
@settings(max_examples=40, deadline=200)
def test_size_budget_checks_are_bounded_and_exact(shape):
    total = int(np.prod([max(d, 0) for d in shape], dtype=object))
    if any(d < 0 for d in shape) or len(shape) > 64 or total > 2**28:
        assert_pond_error(check_elements, tuple(shape), "t")
    else:
        assert check_elements(tuple(shape), "t") == total


# -- raw exceptions on the new entry points ----------------------------------------------------------------------
@given(option=st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12))
@settings(max_examples=10, deadline=None)
def test_device_aware_names_unknown_options(net, option):
    for dev in registry.devices():
        if option in ("limits", "calibration"):
            continue
        try:
            device_aware(net, device=dev.name, calibration=np.ones((2, 3, 4)), **{option: 1})
        except PondError as err:
            assert option in str(err) or "calibration" in str(err)
        except NotImplementedError:  # pragma: no cover - a chip without a twin says so with a PondError
            raise


def test_device_aware_names_a_missing_required_option(net):
    needing = [d for d in registry.devices() if d.needs_calibration]
    assert needing
    for dev in needing:
        err = assert_pond_error(device_aware, net, device=dev.name, match="calibration")
        assert "required" in str(err)


@given(value=st.one_of(bad_types(), st.integers(), st.floats()))
@SOME
def test_to_nir_refuses_what_is_not_a_network(value):
    assert_pond_error(to_nir, value, error=NIRError, match="module")


def test_a_twin_the_chip_cannot_hold_is_refused_before_training():
    rng = np.random.default_rng(0)
    big = nn.Sequential(
        nn.Linear(4, 1001, weight=rng.normal(size=(4, 1001))), nn.LIF(1001),
        nn.Linear(1001, 20, weight=rng.normal(size=(1001, 20))), nn.LIF(20),
    )  # fmt: skip
    refused = 0
    for dev in registry.devices():
        if dev.needs_calibration:
            continue  # integer twins whose scales come from calibration: their mapping runs on export
        try:
            dev.map(big, None)
        except ConstraintError as mapped:  # the chip cannot hold it: the twin says so before training
            with pytest.raises(ConstraintError) as twin:
                device_aware(big, device=dev.name)
            assert twin.value.rules and set(twin.value.rules) <= set(mapped.rules)
            refused += 1
    assert refused >= 1


@pytest.mark.parametrize("value", ["-1KB", "-5", "-1e3", "-0.5MiB", "-.5KB"])
def test_negative_option_values_reach_the_options_check(capsys, value):
    assert main(["explore", "--memory", value]) == 2
    err = capsys.readouterr().err
    assert value in err and "expected one argument" not in err


@pytest.mark.parametrize("value", ["-1", "-1e-3", "-inf"])
def test_negative_dt_is_named(capsys, value):
    assert main(["map", "x.nir", "--device", registry.names()[0], "--dt", value]) == 2
    assert "--dt" in capsys.readouterr().err


# -- Program.write on hostile paths ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def program():
    from pondlib.cprogram.program import Buffer, build_program

    return build_program("acc", "int32", constants=[], buffers=[Buffer("total", "int32_t", 1)],
                         step_body="total[0] += x[0]; y[0] = total[0];", n_in=1, in_ctype="int32_t", n_out=1,
                         out_ctype="int32_t")  # fmt: skip


def test_program_write_refuses_bad_paths_with_codegen_errors(program, tmp_path):
    (tmp_path / "file").write_text("x")
    for bad in (None, 3, "", tmp_path / "file", tmp_path / "file" / "sub", "/proc/pond", tmp_path / ("y" * 300)):
        err = assert_pond_error(program.write, bad, error=CodegenError)
        assert "Fix:" in str(err)
    assert program.write(tmp_path / "ok").is_dir()
