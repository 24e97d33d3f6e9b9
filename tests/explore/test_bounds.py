"""Huge time steps, batches, block counts and sizes: refused (or answered) before any large work.

Every call here has a hypothesis deadline: an error path that enumerated the divisors of ``T`` or built a
tuple of ``2^31`` blocks would blow it (``evaluate(sew_resnet18(2**31 - 1), ...)`` with a bad batch used to
hang listing the divisors of ``T``).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.errors import ConfigError
from pondlib.explore import (
    MAX_BLOCKS,
    MAX_SCHEDULES,
    BlockSchedule,
    Schedule,
    evaluate,
    explore,
    hybrid_space,
    meta_prototype,
    sew_resnet18,
    uniform_space,
)
from pondlib.explore.workload import MAX_SIZE
from tests.strategies import assert_pond_error

HW = meta_prototype("1MB")
HUGE_T = sew_resnet18(MAX_SIZE)  # 2^31 - 1 is prime: its only divisors are 1 and T
BOUNDED = settings(max_examples=20, deadline=2000)  # ms per example: a bound, not a benchmark


@BOUNDED
@given(batch=st.integers(2, MAX_SIZE - 1))
def test_a_bad_batch_of_a_huge_t_is_named_at_once(batch):
    err = assert_pond_error(evaluate, HUGE_T, HW, Schedule.uniform(7, batch), error=ConfigError)
    text = str(err)
    assert f"B = {batch}" in text and f"use one of [1, {MAX_SIZE}]" in text
    assert text.count("\n") < 12  # seven blocks listed, never a list that grows with T


@BOUNDED
@given(t=st.integers(10**6, MAX_SIZE), batch=st.integers(2, 97))
def test_divisor_lists_stay_short(t, batch):
    w = HUGE_T.with_time_steps(t)
    if t % batch == 0:
        assert evaluate(w, HW, Schedule.uniform(7, batch)).time_steps == t
        return
    err = assert_pond_error(evaluate, w, HW, Schedule.uniform(7, batch), error=ConfigError)
    assert len(str(err)) < 2500


@BOUNDED
@given(value=st.integers(MAX_SIZE + 1, 2**80))
def test_time_steps_and_batches_beyond_the_bound(value):
    assert_pond_error(sew_resnet18, value, match="time_steps", error=ConfigError)
    assert_pond_error(BlockSchedule, value, match="batch", error=ConfigError)
    assert_pond_error(uniform_space, 7, value, match="time_steps", error=ConfigError)
    assert_pond_error(Schedule.hybrid, 7, value, 1, 1, match="time_steps", error=ConfigError)


@BOUNDED
@given(n=st.integers(MAX_BLOCKS + 1, 2**63))
def test_block_counts_beyond_the_bound_build_nothing(n):
    assert_pond_error(Schedule.uniform, n, match="n_blocks", error=ConfigError)
    assert_pond_error(Schedule.hybrid, n, 16, 0, 0, match="n_blocks", error=ConfigError)
    assert_pond_error(uniform_space, n, 16, match="n_blocks", error=ConfigError)
    assert_pond_error(hybrid_space, n, 16, match="n_blocks", error=ConfigError)


def test_hybrid_space_size_is_bounded():
    n_max = int(MAX_SCHEDULES**0.5) - 1
    assert_pond_error(hybrid_space, n_max + 1, 16, match="fewer, larger blocks", error=ConfigError)
    assert len(hybrid_space(2, 16)) == 9
    too_long = (BlockSchedule(),) * (MAX_BLOCKS + 1)
    assert_pond_error(Schedule, too_long, match=f"at most {MAX_BLOCKS}", error=ConfigError)
    assert_pond_error(uniform_space, 7, 16, batches=[1] * MAX_SCHEDULES, match="fewer time batches", error=ConfigError)


@BOUNDED
@given(t=st.sampled_from([MAX_SIZE, 2**30, 3**19]))
def test_huge_t_explores_in_bounded_time(t):
    ex = explore(HUGE_T.with_time_steps(t), HW, "all")
    st_lbl = ex.find("ST-LBL")
    assert st_lbl.traffic_bits > ex.best().traffic_bits > 0
    assert st_lbl.traffic_by_class["states"] == 2 * t * HUGE_T.total_state_bits


@settings(max_examples=10, deadline=2000)
@given(steps=st.integers(MAX_SIZE + 1, 2**70))
def test_pond_explore_refuses_huge_steps_at_parse_time(steps):
    import argparse

    import pytest

    from pondlib.cli import explore as cmd

    parser = argparse.ArgumentParser(prog="pond")
    cmd.add_parser(parser.add_subparsers(dest="command"))
    with pytest.raises(SystemExit):
        parser.parse_args(["explore", "--steps", str(steps)])
    assert parser.parse_args(["explore", "--steps", str(MAX_SIZE)]).steps == MAX_SIZE
