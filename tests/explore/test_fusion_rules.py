"""Fused-group rules at small memories, each checked by hand on a three-layer stack (evaluate's docstring,
**Rules and sources**)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.explore import Layer, Schedule, Workload, evaluate, explore, meta_prototype

T = 2
W_A, W_B = 8 * 1 * 9 * 4, 8 * 8 * 9 * 4  # weight bits: conv a (1 -> 8 channels), b and c (8 -> 8), 3x3, 4 bit
W = W_A + 2 * W_B  # 4,896
O = 8 * 16 * 16  # output bits per step of every layer
LB = O // 16 * 3 * T  # a line buffer: three 16-row columns of B = T steps (768)
X_WIN = 18 * 18 * 3 // 18 * T  # the network input's window of 3 of its 18 columns (108)
C_TILE = O // 16 * T  # the sink's output column (256): the node's own output, never evicted


def _stack() -> Workload:
    return Workload(
        (
            Layer("a", "conv", 8, 1, 16, 16, 3, 3),
            Layer("b", "conv", 8, 8, 16, 16, 3, 3, inputs=(0,)),
            Layer("c", "conv", 8, 8, 16, 16, 3, 3, inputs=(1,)),
        ),
        T,
        "stack",
    )


def _run(memory_bits: int):
    hw = meta_prototype("1MB").with_memory(memory_bits, unit="bits")
    return evaluate(_stack(), hw, Schedule.uniform(1, T, fused=True))


def test_a_stack_that_fits_moves_weights_and_input_once():
    r = _run(W + X_WIN + C_TILE + 2 * LB)
    assert r.fits and r.fit_status == "yes" and r.groups[0].evicted_bits == 0
    assert r.traffic_by_class == {"weights": W, "states": 0.0, "spikes": 0.0, "input": T * 18 * 18}


def test_overflowing_line_buffers_evict_only_the_overflow_deepest_first():
    # rule: evict the tiles with the lowest remaining_uses * 100 - layer_id, only as many as needed (a and
    # b each have one consumer: b, the deeper, goes first); each evicted bit is written and read back once
    overflow = 2 * LB - 1000
    r = _run(W + X_WIN + C_TILE + 1000)
    f_b = overflow / LB
    assert r.traffic_by_class["spikes"] == pytest.approx(2 * f_b * T * O)
    assert r.traffic_by_class["weights"] == W and r.traffic_by_class["input"] == T * 18 * 18
    assert r.spike_write_bits.tolist() == pytest.approx([0.0, f_b * T * O, 0.0])
    assert not r.fits and r.feasible and r.fit_status == "spills"
    assert r.groups[0].spilled == ("b",) and r.groups[0].evicted_bits == int(2 * f_b * T * O)
    # a larger overflow evicts all of b, then part of a
    r2 = _run(W + X_WIN + C_TILE + 500)
    f_a = (2 * LB - 500 - LB) / LB
    assert r2.spike_write_bits.tolist() == pytest.approx([f_a * T * O, T * O, 0.0])
    assert r2.traffic_by_class["spikes"] == pytest.approx(2 * (1 + f_a) * T * O)


def test_evictions_are_fetched_before_the_node():
    r = _run(W + X_WIN + C_TILE + 1000)
    fits = _run(W + X_WIN + C_TILE + 2 * LB)
    extra = r.traffic_bits - fits.traffic_bits
    assert r.latency_cycles - fits.latency_cycles == pytest.approx(extra / 64)  # serialized on the DRAM link


def test_a_stack_that_cannot_hold_its_weights_rereads_them_per_column_and_ranks_last():
    r = _run(4000)  # a's and b's weights fit (2,592 bit), c's 2,304 do not
    assert r.weight_read_bits.tolist() == [W_A, W_B, 16 * W_B]  # n OX W_c: once per column node
    assert not r.feasible and r.fit_status == "no"
    assert "cannot hold its weights and a state tile" in r.unfit_stacks[0]
    hw = meta_prototype("1MB").with_memory(4000, unit="bits")
    ex = explore(_stack(), hw, [Schedule.uniform(1, T, fused=True), Schedule.uniform(1, T)])
    assert ex.reports[-1].fit_status == "no" and ex.best().schedule.blocks[0].fused is False


@settings(max_examples=30, deadline=None)
@given(room=st.integers(0, 2 * LB))
def test_eviction_volume_is_exactly_the_overflow(room):
    r = _run(W + X_WIN + C_TILE + room)
    overflow = max(0, 2 * LB - room)
    assert r.traffic_by_class["spikes"] == pytest.approx(2 * T * O * overflow / LB)
    assert r.fits == (overflow == 0) and r.feasible


def test_states_stay_resident_across_chunks_earliest_layer_first():
    # three stateful layers, B = 1 of T = 2 steps: two chunks; after the weights, one state column tile, the
    # boundary tiles and both line buffers, 30,000 bits are left: a's state (24,576) stays, b keeps 5,424
    s = 8 * 16 * 16 * 12
    layers = tuple(dataclasses.replace(x, stateful=True) for x in _stack().layers)
    w = Workload(layers, T, "stateful stack")
    tile = s // 16
    lb, x_win, c_tile = LB // T, X_WIN // T, C_TILE // T
    hw = meta_prototype("1MB").with_memory(W + tile + x_win + c_tile + 2 * lb + 30_000, unit="bits")
    r = evaluate(w, hw, Schedule.uniform(1, 1, fused=True))
    resident = [s, 30_000 - s, 0]
    reads = [res + 2 * (s - res) for res in resident]  # the compulsory read of what stays, every chunk otherwise
    assert r.state_read_bits.tolist() == reads and r.state_write_bits.tolist() == reads
    assert r.groups[0].resident_state_bits == 30_000 and r.fits
