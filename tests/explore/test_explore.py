"""explore(): the abstract's trends, the Pareto front, STEMS's state ablation, speed and the plot."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.errors import ConfigError
from pondlib.explore import (
    Schedule,
    evaluate,
    explore,
    hybrid_space,
    meta_prototype,
    pareto_mask,
    plot_exploration,
    schedule_space,
    sew_resnet18,
    state_removal_study,
)


@pytest.fixture(scope="module")
def sew7():
    return sew_resnet18()


@pytest.fixture(scope="module")
def sew5():
    return sew_resnet18(stateless_blocks=(0, 1))


@pytest.fixture(scope="module")
def at1m(sew7):
    return explore(sew7, meta_prototype("1MB"), "all")


def test_spaces(sew7):
    assert len(schedule_space(sew7, "hybrid")) == 64
    assert len(schedule_space(sew7, "uniform")) == 10
    assert len(schedule_space(sew7, "all")) == 70  # ST-LBL, TB-LBL, ST-LF, TB-LF are in both
    assert len(schedule_space(sew7, [Schedule.uniform(7, 1)] * 3)) == 1


def test_inter_layer_scheduling_cuts_traffic_12x_and_energy_4_5x_at_1mib(at1m):
    # STEMS's abstract: up to 12x less off-chip data movement and 5x less energy
    assert at1m.traffic_ratio() >= 12
    assert at1m.energy_ratio() >= 4.5
    worst = max(at1m.reports, key=lambda r: r.energy_pj)
    assert worst.label() == "ST-LBL"
    best = at1m.best()
    assert best.energy_pj == min(r.energy_pj for r in at1m.reports)
    assert best.traffic_bits == 4_751_872 + 2 * 46_362_624 + 2_097_152  # only the compulsory traffic
    assert all(b.batch == 16 for b in best.schedule.blocks)  # time batching everywhere (STEMS Fig. 12)
    assert best.schedule.blocks[0].fused  # the feature-heavy first block is fused


def test_removing_the_states_of_blocks_0_and_1(sew7, sew5):
    # STEMS's abstract: 20x fewer states and 1.4x less energy (best schedule against best schedule)
    assert sew7.total_state_bits / sew5.total_state_bits == pytest.approx(20, rel=0.02)
    hw = meta_prototype("1MB")
    best7 = explore(sew7, hw, "all").best()
    best5 = explore(sew5, hw, "all", tb_from="output").best()  # STEMS time-batches SEW-5 from the output
    assert 1.25 <= best7.energy_pj / best5.energy_pj <= 1.6
    assert best5.label() == "ST-LBL x2 | TB-LBL x5"  # stateless feature-heavy blocks need no time batching


def test_state_removal_study_reproduces_table_2_sizes(sew7):
    rows = state_removal_study(sew7, meta_prototype("1MB"), "hybrid")
    assert [r["stateful_blocks"] for r in rows] == [7, 6, 5, 4, 3, 2, 1, 0]
    assert [round(r["state_bits"] / 1e3) for r in rows[:5]] == [46363, 8614, 2322, 750, 356]
    energies = [r["best"].energy_pj for r in rows]
    assert all(a >= b for a, b in zip(energies, energies[1:]))  # fewer states never cost energy


def test_pareto_front(at1m):
    front = at1m.front()
    assert front and all(at1m.pareto[at1m.reports.index(r)] for r in front)
    t, e = at1m.traffic_bits, at1m.energy_pj
    for i in np.flatnonzero(~at1m.pareto):
        assert np.any((t <= t[i]) & (e <= e[i]) & ((t < t[i]) | (e < e[i])))
    assert at1m.find("ST-LBL").label() == "ST-LBL"
    with pytest.raises(ConfigError):
        at1m.find("no such schedule")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=30))
def test_pareto_mask_keeps_exactly_the_non_dominated_points(points):
    t = np.array([p[0] for p in points], float)
    e = np.array([p[1] for p in points], float)
    mask = pareto_mask(t, e)
    for i in range(len(points)):
        dominated = np.any((t <= t[i]) & (e <= e[i]) & ((t < t[i]) | (e < e[i])))
        assert mask[i] == (not dominated)
    assert mask.any()


def test_all_64_hybrids_evaluate_deterministically(sew7):
    """Every hybrid of the space evaluates, twice to the same figures (the speed is benchmarks/explore_speed.py's:
    timings are not asserted in the suite)."""
    hw = meta_prototype("1MB")
    space = hybrid_space(7, 16)
    assert len(space) == 64
    first = [evaluate(sew7, hw, s).energy_mj() for s in space]
    again = [evaluate(sew7, hw, s).energy_mj() for s in space]
    assert first == again and all(e > 0 for e in first)


def test_ranking_by_traffic(sew7):
    ex = explore(sew7, meta_prototype("128KB"), "hybrid", rank_by="traffic", mode="ideal")
    traffic = ex.traffic_bits
    fits = np.array([r.feasible for r in ex.reports])
    n_fit = int(fits.sum())
    assert 0 < n_fit < len(fits) and fits[:n_fit].all()  # those that fit first, then the rest
    assert np.all(np.diff(traffic[:n_fit]) >= 0) and np.all(np.diff(traffic[n_fit:]) >= 0)
    assert ex.mode == "ideal" and ex.rank_by == "traffic"


def test_plot_marks_the_pareto_front(at1m):
    fig = plot_exploration(at1m, top=4)
    ax, bx = fig.axes[:2]
    assert ax.get_xlabel() == "off-chip traffic (MiB)" and bx.get_xlabel() == "energy (mJ)"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "Pareto front" in labels and any(lab.startswith("best: ") for lab in labels)
    front_line = [line for line in ax.get_lines() if line.get_label() == "Pareto front"][0]
    assert len(front_line.get_xdata()) == len(at1m.front())
    assert len(bx.patches) == 3 * 5  # off-chip, on-chip and MAC bars of the top 4 and the baseline
