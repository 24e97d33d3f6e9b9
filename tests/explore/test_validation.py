"""Bad input at every public entry point of pondlib.explore: a PondError naming it, never another exception."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.errors import ConfigError, PondError
from pondlib.explore import (
    BlockSchedule,
    Layer,
    MemoryLevel,
    Schedule,
    Workload,
    evaluate,
    explore,
    hybrid_space,
    meta_prototype,
    pareto_mask,
    parse_memory_size,
    plot_exploration,
    schedule_space,
    sew_resnet18,
    uniform_space,
    workload_from_graph,
)
from tests.strategies import assert_pond_error, bad_counts, bad_positive_floats, bad_types

SEW = sew_resnet18()
HW = meta_prototype("1MB")
FAST = settings(max_examples=25, deadline=None)


def _only_pond_errors(fn, *args, **kwargs):
    """Call ``fn``: it may succeed or raise a PondError, never anything else."""
    try:
        fn(*args, **kwargs)
    except PondError:
        pass


@FAST
@given(field=st.sampled_from(["k", "c", "oy", "ox", "fy", "fx", "sy", "sx", "groups"]), value=bad_counts())
def test_layer_sizes(field, value):
    err = assert_pond_error(Layer, "x", "conv", **{"k": 4, "c": 4, field: value}, error=ConfigError)
    assert field in str(err)


@FAST
@given(
    field=st.sampled_from(["weight_bits", "state_bits", "input_bits", "output_bits", "state_words"]),
    value=st.one_of(bad_counts(), st.integers(65, 10**6)),
)
def test_layer_bit_widths(field, value):
    assert_pond_error(Layer, "x", "linear", 4, 4, **{field: value}, match=field, error=ConfigError)


@FAST
@given(value=st.one_of(bad_types(), st.integers(max_value=-2), st.lists(st.floats(), max_size=3)))
def test_layer_inputs_and_kinds(value):
    _only_pond_errors(Layer, "x", "linear", 4, 4, inputs=value)
    _only_pond_errors(Layer, "x", value, 4, 4)
    _only_pond_errors(Layer, value, "linear", 4, 4, stateful=value, block=value)


@FAST
@given(value=st.one_of(bad_counts(), st.integers(2**31, 2**40)))
def test_workload_time_steps(value):
    assert_pond_error(Workload, SEW.layers, value, match="time_steps", error=ConfigError)
    assert_pond_error(SEW.with_time_steps, value, error=ConfigError)
    assert_pond_error(sew_resnet18, value, error=ConfigError)


@FAST
@given(
    rows=st.one_of(
        bad_types(),
        st.lists(
            st.dictionaries(
                st.sampled_from(["k", "c", "kind", "inputs", "x"]), st.one_of(bad_types(), st.integers(-3, 3))
            ),
            max_size=3,
        ),
    )
)
def test_from_table_with_junk_rows(rows):
    _only_pond_errors(Workload.from_table, rows)


@FAST
@given(value=st.one_of(bad_types(), st.integers(7, 100), st.integers(max_value=-1), st.floats()))
def test_stateless_blocks(value):
    _only_pond_errors(SEW.with_stateless, blocks=value)
    _only_pond_errors(SEW.with_stateless, layers=[value])
    _only_pond_errors(sew_resnet18, stateless_blocks=value)
    if isinstance(value, int) and not isinstance(value, bool):
        assert_pond_error(SEW.with_stateless, blocks=[value], error=ConfigError)


@FAST
@given(
    field=st.sampled_from(["bandwidth_bits_per_cycle", "read_energy_pj_per_bit", "write_energy_pj_per_bit"]),
    value=st.one_of(bad_positive_floats(), st.floats(max_value=-1e-9)),
)
def test_memory_level_energies_and_bandwidth(field, value):
    if field != "bandwidth_bits_per_cycle" and value == 0:
        return  # a zero energy is allowed
    kw = dict(size_bits=1024, bandwidth_bits_per_cycle=64, read_energy_pj_per_bit=0.1, write_energy_pj_per_bit=0.1)
    kw[field] = value
    assert_pond_error(MemoryLevel, "m", **kw, match=field, error=ConfigError)


@FAST
@given(value=bad_counts())
def test_memory_sizes(value):
    if value is not None:  # None is an unbounded memory (DRAM)
        assert_pond_error(MemoryLevel, "m", value, 64, 0.1, 0.1, match="size_bits", error=ConfigError)
    _only_pond_errors(meta_prototype, value)
    _only_pond_errors(HW.with_memory, value)
    if not isinstance(value, str):
        assert_pond_error(parse_memory_size, value, error=ConfigError)


@FAST
@given(text=st.text(max_size=8))
def test_parse_memory_size_never_raises_anything_else(text):
    _only_pond_errors(parse_memory_size, text)


@FAST
@given(
    field=st.sampled_from(["sop_energy_pj", "mac_energy_pj", "pe_k", "pe_oy", "shared", "dram"]),
    value=st.one_of(bad_positive_floats(), bad_types()),
)
def test_hardware_fields(field, value):
    if field.endswith("energy_pj") and value == 0:
        return
    assert_pond_error(dataclasses.replace, HW, **{field: value}, match=field, error=ConfigError)


@FAST
@given(batch=bad_counts(), fused=st.one_of(bad_types().filter(lambda v: not isinstance(v, bool))))
def test_block_schedules(batch, fused):
    assert_pond_error(BlockSchedule, batch, match="batch", error=ConfigError)
    assert_pond_error(BlockSchedule, 1, fused, match="fused", error=ConfigError)
    _only_pond_errors(Schedule.uniform, batch, 1)
    _only_pond_errors(hybrid_space, batch, 16)
    _only_pond_errors(uniform_space, 7, batch)
    _only_pond_errors(uniform_space, 7, 16, batches=fused)
    _only_pond_errors(Schedule.hybrid, 7, 16, batch, fused, tb_from=fused)


@FAST
@given(batch=st.integers(1, 64).filter(lambda b: 16 % b), n=st.integers(1, 9).filter(lambda n: n != 7))
def test_evaluate_refuses_batches_that_do_not_divide_t_and_wrong_block_counts(batch, n):
    err = assert_pond_error(evaluate, SEW, HW, Schedule.uniform(7, batch), error=ConfigError)
    assert f"B = {batch}" in str(err) and "divisor of T = 16" in str(err)
    assert_pond_error(evaluate, SEW, HW, Schedule.uniform(n, 1), match="one per workload block", error=ConfigError)


@FAST
@given(value=bad_types())
def test_evaluate_and_explore_arguments(value):
    ok = Schedule.uniform(7, 1)
    assert_pond_error(evaluate, value, HW, ok, error=ConfigError)
    assert_pond_error(evaluate, SEW, value, ok, error=ConfigError)
    assert_pond_error(evaluate, SEW, HW, value, error=ConfigError)
    assert_pond_error(evaluate, SEW, HW, ok, mode=value, error=ConfigError)
    assert_pond_error(explore, SEW, HW, space=value, error=ConfigError)
    assert_pond_error(explore, SEW, HW, "hybrid", rank_by=value, error=ConfigError)
    assert_pond_error(explore, SEW, HW, "hybrid", tb_from=value, error=ConfigError)
    assert_pond_error(schedule_space, value, error=ConfigError)
    assert_pond_error(plot_exploration, value, error=ConfigError)
    _only_pond_errors(workload_from_graph, value)


@FAST
@given(t=st.one_of(bad_types(), st.lists(st.sampled_from([np.nan, np.inf, 1.0]), min_size=1, max_size=3)))
def test_pareto_mask_inputs(t):
    _only_pond_errors(pareto_mask, t, t)
    with pytest.raises(ConfigError, match="lengths"):
        pareto_mask([1.0, 2.0], [1.0])


def test_report_accessors_name_their_choices():
    r = evaluate(SEW, HW, Schedule.uniform(7, 16, True))
    assert_pond_error(r.traffic_mib, "spike", match="weights", error=ConfigError)
    assert_pond_error(r.energy_mj, "dram", match="offchip", error=ConfigError)
