"""evaluate(): figures derived by hand from docs/EXPLORE.md's tables, and small hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.explore import (
    OPERAND_CLASSES,
    BlockSchedule,
    Schedule,
    Workload,
    evaluate,
    meta_prototype,
    sew_resnet18,
)

W, S, X, MACS, FIRST_MACS = 4_751_872, 46_362_624, 2_097_152, 26_107_445_248, 33_554_432
T = 16
DRAM_RD, DRAM_WR, SH_RD, SH_WR = 700 / 64, 750 / 64, 0.13, 0.175


@pytest.fixture(scope="module")
def sew():
    return sew_resnet18()


@pytest.fixture(scope="module")
def hw1m():
    return meta_prototype("1MB")


@pytest.mark.parametrize("batch", [1, 2, 4, 8, 16])
def test_layer_by_layer_at_1mib_states_and_weights_scale_with_the_chunks(sew, hw1m, batch):
    chunks = T // batch
    r = evaluate(sew, hw1m, Schedule.uniform(7, batch, False))
    c = r.traffic_by_class
    assert c["states"] == 2 * chunks * S  # weights + states (51 Mbit) never fit 1 MiB: nothing persists
    assert c["weights"] == chunks * W
    assert c["input"] == X
    ideal = evaluate(sew, hw1m, Schedule.uniform(7, batch, False), mode="ideal").traffic_by_class
    assert ideal["states"] == 2 * (chunks - 1) * S  # no read of the zero state, no final write
    assert ideal["weights"] == c["weights"] and ideal["spikes"] == c["spikes"]


def test_spikes_leak_to_dram_from_4_batched_steps_on(sew, hw1m):
    # STEMS Fig. 7: at 1 MB, B = 1, 2 keep every layer's spikes on chip; from B = 4 on a 64 x 128 x 128
    # map of B steps (0.5 MiB in, 0.5 MiB out) no longer fits beside the weights, and it gets worse
    spikes = [evaluate(sew, hw1m, Schedule.uniform(7, b)).traffic_by_class["spikes"] for b in (1, 2, 4, 8, 16)]
    assert spikes[0] == spikes[1] == 0
    assert 0 < spikes[2] < spikes[3] < spikes[4]


def test_full_time_batching_and_fusion_pays_weights_twice_the_states_and_the_input(sew, hw1m):
    r = evaluate(sew, hw1m, Schedule.uniform(7, T, True))
    assert r.traffic_bits == W + 2 * S + X
    assert r.traffic_by_class == {"weights": W, "states": 2 * S, "spikes": 0.0, "input": X}
    assert r.fits and r.unfit_stacks == [] and r.peak_onchip_bits <= hw1m.memory_bits
    assert r.state_read_bits.sum() == r.state_write_bits.sum() == S  # the compulsory read and write-back
    ideal = evaluate(sew, hw1m, Schedule.uniform(7, T, True), mode="ideal")
    assert ideal.traffic_bits == W + X


def test_energy_parts_by_hand(sew, hw1m):
    r = evaluate(sew, hw1m, Schedule.uniform(7, T, True))
    reads, writes = W + S + X, S
    assert r.offchip_energy_pj == pytest.approx(reads * (DRAM_RD + SH_WR) + writes * (SH_RD + DRAM_WR))
    mac = (MACS - FIRST_MACS) * 0.07 + FIRST_MACS * 0.16  # SOPs at 70 fJ, the first layer's 4-bit MACs at 160 fJ
    assert r.mac_energy_pj == pytest.approx(mac)
    assert r.energy_pj == pytest.approx(r.offchip_energy_pj + r.onchip_energy_pj + r.mac_energy_pj)
    # MAC energy does not depend on the schedule; on-chip energy does (LF re-fills the weight buffer)
    other = evaluate(sew, hw1m, Schedule.uniform(7, 1, False))
    assert other.mac_energy_pj == r.mac_energy_pj and other.onchip_energy_pj != r.onchip_energy_pj
    assert r.energy_mj() == pytest.approx(r.energy_pj / 1e9)
    assert r.traffic_mib() == pytest.approx((W + 2 * S + X) / 2**23)


def test_st_lbl_at_1mib_and_128kb(sew, hw1m):
    at1m = evaluate(sew, hw1m, Schedule.uniform(7, 1))
    assert at1m.traffic_bits == 16 * W + 32 * S + X  # every node's spikes fit 1 MiB
    at128 = evaluate(sew, meta_prototype("128KB"), Schedule.uniform(7, 1))
    c = at128.traffic_by_class
    assert c["states"] == 32 * S and c["weights"] == 16 * W
    # block 0: a 64 x 128 x 128 map (1 Mbit) per step does not fit 134 KiB: conv0..pool4 outputs spill
    assert c["spikes"] > 0 and "conv0" in at128.groups[0].spilled


def _tiny(memory_bits: int, batch: int, mode: str = "stems"):
    w = Workload.from_table(
        [
            {"name": "a", "kind": "linear", "k": 100, "c": 10, "stateful": True},
            {"name": "b", "kind": "linear", "k": 10, "c": 100},
        ],
        time_steps=4,
    )
    hw = meta_prototype("1MB").with_memory(memory_bits, unit="bits")
    return evaluate(w, hw, Schedule.uniform(1, batch), mode)


def test_tiny_table_by_hand():
    # a: W 4000, S 1200, out 100 bit/step; b: W 4000, out 10 bit/step; input 10 bit/step; T = 4
    r = _tiny(300, 4)  # node a: input 40 + output 400 > 300 -> the output is left in DRAM
    assert r.spike_write_bits.tolist() == [400, 0] and r.spike_read_bits.tolist() == [0, 400]
    assert r.traffic_by_class == {"weights": 8000, "states": 2400, "spikes": 800, "input": 40}
    r = _tiny(300, 1)  # one step per node: 10 + 100 fits; W + S > 300 so nothing persists over 4 chunks
    assert r.traffic_by_class == {"weights": 4 * 8000, "states": 2 * 4 * 1200, "spikes": 0, "input": 40}
    r = _tiny(20_000, 1)  # W + S = 9200 fit: weights read once, states only the compulsory read and write
    assert r.groups[0].persistent and r.traffic_by_class["weights"] == 8000
    assert r.traffic_by_class["states"] == 2400
    assert _tiny(20_000, 1, "ideal").traffic_bits == 8000 + 40


def test_fused_stack_that_does_not_fit_rereads_its_weights_per_column():
    w = Workload.from_table(
        [{"name": "c", "kind": "conv", "k": 4, "c": 2, "oy": 4, "ox": 4, "fy": 3, "fx": 3, "stateful": True}],
        time_steps=2,
    )
    small = meta_prototype("1MB").with_memory(200, unit="bits")  # W = 4 * 2 * 9 * 4 = 288 bits
    r = evaluate(w, small, Schedule((BlockSchedule(2, True),)))
    assert not r.fits and r.unfit_stacks and r.groups[0].working_set_bits > 200
    assert r.traffic_by_class["weights"] == 4 * 288  # one read per output column (OX = 4), one chunk
    big = evaluate(w, meta_prototype("1MB"), Schedule((BlockSchedule(2, True),)))
    assert big.fits and big.traffic_by_class["weights"] == 288


def test_hybrid_groups_and_per_layer_vectors(sew, hw1m):
    h = Schedule.hybrid(7, T, time_batched=7, fused=2)
    r = evaluate(sew, hw1m, h)
    assert [(g.blocks, g.fused, g.batch) for g in r.groups] == [((0, 1), True, 16), ((2, 6), False, 16)]
    assert r.groups[0].layers == (0, 8) and r.groups[1].layers == (9, 29)
    by_layer = r.traffic_by_layer
    assert set(by_layer) == set(OPERAND_CLASSES)
    assert all(v.shape == (30,) for v in by_layer.values())
    assert sum(float(v.sum()) for v in by_layer.values()) == r.traffic_bits
    assert by_layer["input"][0] == X and by_layer["input"][1:].sum() == 0
    with pytest.raises(ValueError):
        r.weight_read_bits[0] = 0  # reports are read-only
    assert r.summary()["schedule"] == "TB-LF x2 | TB-LBL x5" and "fits=True" in repr(r)


@st.composite
def _schedules(draw):
    return Schedule(
        tuple(BlockSchedule(draw(st.sampled_from([1, 2, 4, 8, 16])), draw(st.booleans())) for _ in range(7))
    )


@settings(max_examples=40, deadline=None)
@given(schedule=_schedules(), memory=st.sampled_from(["128KB", "256KB", "512KB", "1MB", "2MB"]))
def test_invariants_of_any_schedule(sew, schedule, memory):
    hw = meta_prototype(memory)
    r = evaluate(sew, hw, schedule)
    ideal = evaluate(sew, hw, schedule, mode="ideal")
    c = r.traffic_by_class
    assert r.peak_onchip_bits <= hw.memory_bits
    assert c["weights"] >= W and c["input"] >= X and c["states"] >= 2 * S  # compulsory traffic
    assert ideal.traffic_bits <= r.traffic_bits and ideal.traffic_bits >= W + X
    assert np.all(r.spike_write_bits >= 0) and np.all(r.state_read_bits == r.state_write_bits)
    assert r.energy_pj > r.mac_energy_pj > 0 and r.onchip_energy_pj > 0
