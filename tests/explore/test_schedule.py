"""Schedules: labels, STEMS's (N+1)^2 hybrid space, uniform time batches, validation against T."""

from __future__ import annotations

import pytest

from pondlib.errors import ConfigError
from pondlib.explore import BlockSchedule, Schedule, hybrid_space, uniform_space


def test_labels():
    assert BlockSchedule(1, False).label(16) == "ST-LBL"
    assert BlockSchedule(16, True).label(16) == "TB-LF"
    assert BlockSchedule(4, False).label(16) == "4T-LBL"
    s = Schedule((BlockSchedule(16, True),) * 2 + (BlockSchedule(1, False),) * 5)
    assert s.label(16) == "TB-LF x2 | ST-LBL x5"


def test_hybrid_space_has_n_plus_1_squared_distinct_schedules():
    space = hybrid_space(7, 16)
    assert len(space) == 64 == len({s.blocks for s in space})
    assert space[0].label(16) == "ST-LBL" and space[-1].label(16) == "TB-LF"
    h = Schedule.hybrid(7, 16, time_batched=2, fused=5)
    assert [b.batch for b in h.blocks] == [16, 16, 1, 1, 1, 1, 1]
    assert [b.fused for b in h.blocks] == [True] * 5 + [False] * 2
    out = Schedule.hybrid(7, 16, time_batched=5, fused=2, tb_from="output")
    assert [b.batch for b in out.blocks] == [1, 1, 16, 16, 16, 16, 16]
    assert out.label(16) == "ST-LF x2 | TB-LBL x5"


def test_uniform_space_is_powers_of_two_dividing_t_times_lbl_lf():
    space = uniform_space(7, 16)
    assert [s.name for s in space] == [f"{t}-{d}" for t in ("ST", "2T", "4T", "8T", "TB") for d in ("LBL", "LF")]
    assert sorted({s.blocks[0].batch for s in uniform_space(3, 12)}) == [1, 2, 4, 12]


def test_check_lists_every_bad_block():
    s = Schedule((BlockSchedule(3), BlockSchedule(32), BlockSchedule(16)))
    with pytest.raises(ConfigError) as err:
        s.check(4, 16)
    problems = err.value.problems
    assert len(problems) == 3
    assert any("got 3 block schedules, expected 4" in p for p in problems)
    assert any("B = 3" in p and "[1, 2, 4, 8, 16]" in p for p in problems)


def test_constructors_refuse_bad_values():
    with pytest.raises(ConfigError, match="batch"):
        BlockSchedule(0)
    with pytest.raises(ConfigError, match="fused"):
        BlockSchedule(1, "yes")
    with pytest.raises(ConfigError, match="blocks"):
        Schedule(())
    with pytest.raises(ConfigError) as err:
        Schedule.hybrid(7, 16, time_batched=8, fused=-1, tb_from="middle")
    assert len(err.value.problems) == 3
