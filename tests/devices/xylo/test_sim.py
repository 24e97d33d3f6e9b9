"""XyloSim: hand-computed trajectories, state continuation, batching, records and input errors."""

from __future__ import annotations

import numpy as np
import pytest

from pondlib.devices.xylo.config import XyloConfig
from pondlib.devices.xylo.sim import RECORD_KEYS, STATE_KEYS, XyloSim
from pondlib.errors import SimulationError
from tests.devices.xylo.xylosim_oracle import random_config, random_input


def one_neuron(
    w_in=0,
    w_rec=0,
    w_out=1,
    dash_mem=0,
    dash_syn=0,
    thr=100,
    bias=0,
    thr_out=1,
    dash_mem_out=0,
    dash_syn_out=0,
    bias_out=0,
    shift_in=0,
    shift_out=0,
) -> XyloSim:
    """One input, one hidden neuron (k = 1), one output neuron."""
    return XyloSim.from_config(
        XyloConfig(
            weights_in=np.array([[[w_in]]]),
            weights_rec=np.array([[[w_rec]]]),
            weights_out=np.array([[w_out]]),
            dash_mem=[dash_mem],
            dash_syn=[dash_syn],
            dash_syn_2=[0],
            dash_mem_out=[dash_mem_out],
            dash_syn_out=[dash_syn_out],
            threshold=[thr],
            bias=[bias],
            threshold_out=[thr_out],
            bias_out=[bias_out],
            aliases=[-1],
            bias_enable=bool(bias or bias_out),
            weight_shift_in=shift_in,
            weight_shift_out=shift_out,
        )
    )


def col(rec, key):
    return rec[key][:, 0].tolist()


def test_synaptic_decay_with_dash_and_minimum_step():
    sim = one_neuron(w_in=100, dash_syn=2, thr=32767)
    _, _, rec = sim.evolve(np.array([[1]] + [[0]] * 8), record=True)
    # 100 - 25 = 75; 75 - 18 = 57; 57 - 14 = 43; 43 - 10 = 33; 33 - 8 = 25; 25 - 6 = 19;
    # 19 - 4 = 15; 15 - 3 = 12; 12 - 3 = 9
    assert col(rec, "Isyn") == [75, 57, 43, 33, 25, 19, 15, 12, 9]
    sim = one_neuron(w_in=3, dash_syn=4, thr=32767)
    _, _, rec = sim.evolve(np.array([[1]] + [[0]] * 4), record=True)
    assert col(rec, "Isyn") == [2, 1, 0, 0, 0]  # 3 >> 4 == 0: minimum step of one
    sim = one_neuron(w_in=-3, dash_syn=4, thr=32767)
    _, _, rec = sim.evolve(np.array([[1]] + [[0]] * 4), record=True)
    assert col(rec, "Isyn") == [-2, -1, 0, 0, 0]  # negative: floor shift, then sign step


def test_dash_zero_wipes_state_in_one_step():
    sim = one_neuron(w_in=100, dash_syn=0, dash_mem=0, thr=32767)
    _, _, rec = sim.evolve(np.array([[1], [0], [0]]), record=True)
    assert col(rec, "Isyn") == [0, 0, 0] and col(rec, "Vmem") == [0, 0, 0]


def test_membrane_integration_and_reset_by_subtraction():
    sim = one_neuron(
        w_in=100, dash_syn=15, dash_mem=15, thr=150, w_out=100, thr_out=99, dash_syn_out=15, dash_mem_out=15
    )
    out, _, rec = sim.evolve(np.array([[1], [0], [0], [0]]), record=True)
    # isyn: 100 -> 99 (min step) -> 98 -> 97; vmem: 0 - 0 + 99 = 99; 99 - 1 + 98 = 196 -> 1 spike,
    # 46; 46 - 1 + 97 = 142; 142 - 1 + 96 = 237 -> spike, 87
    assert col(rec, "Isyn") == [99, 98, 97, 96]
    assert col(rec, "Vmem") == [99, 46, 142, 87]
    assert col(rec, "Spikes") == [0, 1, 0, 1]
    # readout one step later: t = 2: isyn_out 100 - 1 = 99 >= 99 -> spike, 0; t = 3: 98 < 99
    assert out[:, 0].tolist() == [0, 0, 1, 0]


def test_spike_count_capped_at_31():
    sim = one_neuron(w_in=127, shift_in=8, dash_syn=15, dash_mem=15, thr=10)
    _, _, rec = sim.evolve(np.array([[1]]), record=True)
    # input 127 << 8 = 32512; isyn 32511; vmem 32511 -> 31 spikes (cap), 32511 - 310 = 32201
    assert col(rec, "Spikes") == [31] and col(rec, "Vmem") == [32201]


def test_threshold_zero_runs_to_cap_and_readout_scales_with_count():
    sim = one_neuron(thr=0, w_out=2, thr_out=100, dash_syn_out=15, dash_mem_out=15)
    out, _, rec = sim.evolve(np.zeros((3, 1), dtype=int), record=True)
    assert col(rec, "Spikes") == [31, 31, 31] and col(rec, "Vmem") == [0, 0, 0]
    # readout at t = 1: 31 * 2 = 62 -> decayed by one to 61; t = 2: 61 - 1 + 62 = 122
    assert col(rec, "Isyn_out") == [0, 61, 122]
    assert col(rec, "Vmem_out") == [0, 61, 82] and out[:, 0].tolist() == [0, 0, 1]


def test_negative_threshold_reset_wraps_in_16_bits():
    sim = one_neuron(thr=-1000, dash_mem=2)
    _, _, rec = sim.evolve(np.zeros((2, 1), dtype=int), record=True)
    # t = 0: 0 >= -1000 -> 31 spikes, vmem 31000. t = 1: 31000 - 7750 = 23250; each spike adds 1000:
    # after 10 spikes 33250 wraps to -32286 < -1000 and the loop stops
    assert col(rec, "Spikes") == [31, 10] and col(rec, "Vmem") == [31000, -32286]


def test_bias_constant_current():
    sim = one_neuron(bias=30, dash_mem=15, thr=100)
    _, _, rec = sim.evolve(np.zeros((4, 1), dtype=int), record=True)
    # 30, 30 - 1 + 30 = 59, 59 - 1 + 30 = 88, 88 - 1 + 30 = 117 -> spike, 17
    assert col(rec, "Vmem") == [30, 59, 88, 17] and col(rec, "Spikes") == [0, 0, 0, 1]


def test_bias_saturates_dv():
    sim = one_neuron(w_in=127, shift_in=8, dash_syn=15, dash_mem=15, thr=32767, bias=32767)
    _, _, rec = sim.evolve(np.array([[1], [0]]), record=True)
    # dv = sat16(32511 + 32767) = 32767; vmem = 32767 reaches the threshold exactly: one spike, 0
    assert col(rec, "Vmem") == [0, 0] and col(rec, "Spikes") == [1, 1]


def test_minus_32768_wraps_with_dash_zero():
    # t = 0: both synapses of the neuron get -128 << 8 = -32768, decayed (dash 15) to -32767 each;
    # dv = sat16(-65534) = -32768, so vmem = -32768. t = 1: a +127 << 8 input brings both synapses to
    # -254; with dash_mem 0, -decay(-32768) = +32768 wraps to -32768 in int16, so
    # dv = sat16(-32768 - 508) = -32768 and vmem stays at -32768 (without the wrap it would be -508).
    sim = XyloSim.from_config(
        XyloConfig(
            weights_in=np.array([[[-128, -128]], [[127, 127]]]),
            weights_rec=np.zeros((1, 1, 2)),
            weights_out=np.zeros((1, 1)),
            dash_mem=[0],
            dash_syn=[15],
            dash_syn_2=[15],
            dash_mem_out=[0],
            dash_syn_out=[0],
            threshold=[32767],
            bias=[0],
            threshold_out=[1],
            bias_out=[0],
            aliases=[-1],
            weight_shift_in=8,
        )
    )
    _, _, rec = sim.evolve(np.array([[1, 0], [0, 1]]), record=True)
    assert col(rec, "Isyn") == col(rec, "Isyn2") == [-32767, -254]
    assert col(rec, "Vmem") == [-32768, -32768]


def test_input_count_clipped_to_15():
    a = one_neuron(w_in=10, dash_syn=15, thr=32767)
    b = one_neuron(w_in=10, dash_syn=15, thr=32767)
    _, _, ra = a.evolve(np.array([[15], [0]]), record=True)
    _, _, rb = b.evolve(np.array([[1000], [0]]), record=True)
    assert col(ra, "Isyn") == col(rb, "Isyn") == [149, 148]


def test_weight_shift_wraps_in_int16():
    # 2 << 15 = 65536 wraps to 0: the input has no effect; 1 << 15 = 32768 wraps to -32768
    sim = one_neuron(w_in=2, shift_in=15, dash_syn=15, thr=32767)
    _, _, rec = sim.evolve(np.array([[1]]), record=True)
    assert col(rec, "Isyn") == [0]
    sim = one_neuron(w_in=1, shift_in=15, dash_syn=15, thr=32767)
    _, _, rec = sim.evolve(np.array([[1]]), record=True)
    assert col(rec, "Isyn") == [-32767]


def alias_sim() -> XyloSim:
    # neuron 0 aliases to 2; neuron 2 has no input of its own but its readout weight is used
    return XyloSim.from_config(
        XyloConfig(
            weights_in=np.array([[[100], [0], [0]]]),
            weights_rec=np.zeros((3, 3, 1)),
            weights_out=np.array([[0], [0], [1]]),
            dash_mem=[0, 0, 0],
            dash_syn=[0, 0, 0],
            dash_syn_2=[0, 0, 0],
            dash_mem_out=[15],
            dash_syn_out=[15],
            threshold=[10, 10, 10],
            bias=[0, 0, 0],
            threshold_out=[1],
            bias_out=[0],
            aliases=[2, -1, -1],
        )
    )


def test_alias_spikes_copy_to_target_and_leave_through_its_weights():
    out, _, rec = alias_sim().evolve(np.array([[1], [0], [0]]), record=True)
    assert rec["Spikes"].tolist() == [[0, 0, 0], [0, 0, 0], [0, 0, 0]]  # dash_syn 0 wipes isyn
    sim = XyloSim.from_config(alias_sim().config.replace(dash_syn=np.array([15, 15, 15])))
    out, _, rec = sim.evolve(np.array([[1], [0], [0]]), record=True)
    # neuron 0: isyn 99, vmem 99 -> 9 spikes, copied to neuron 2 (vmem 0 < 10: no own spikes)
    assert rec["Spikes"][0].tolist() == [9, 0, 9]
    assert out[:, 0].tolist() == [0, 1, 1]  # neuron 2's readout weight carries the copies


def test_alias_copies_share_the_targets_31_budget():
    cfg = alias_sim().config.replace(
        dash_syn=np.array([15, 15, 15]),
        weights_in=np.array([[[100], [0], [127]]]),
        weight_shift_in=4,
        threshold=np.array([10, 10, 60]),
    )
    _, _, rec = XyloSim.from_config(cfg).evolve(np.array([[1]]), record=True)
    # neuron 0: 1599 -> 31 spikes (cap) copied to 2; neuron 2 already at 31: no spike of its own,
    # its membrane keeps the charge
    assert rec["Spikes"][0].tolist() == [31, 0, 31]
    assert rec["Vmem"][0, 2] == 2031


def test_recurrent_one_step_delay():
    cfg = XyloConfig(
        weights_in=np.array([[[100], [0]]]),
        weights_rec=np.array([[[0], [50]], [[0], [0]]]),
        weights_out=np.zeros((2, 1)),
        dash_mem=[0, 15],
        dash_syn=[0, 15],
        dash_syn_2=[0, 0],
        dash_mem_out=[0],
        dash_syn_out=[0],
        threshold=[50, 32767],
        bias=[0, 0],
        threshold_out=[1],
        bias_out=[0],
        aliases=[-1, -1],
    )
    _, _, rec = XyloSim.from_config(cfg).evolve(np.array([[1], [0], [0]]), record=True)
    assert rec["Spikes"][:, 0].tolist() == [0, 0, 0]  # dash 0 wipes: isyn 0 at t = 0
    cfg = cfg.replace(dash_syn=np.array([15, 15]), dash_mem=np.array([15, 15]))
    _, _, rec = XyloSim.from_config(cfg).evolve(np.array([[1], [0], [0]]), record=True)
    # neuron 0: isyn 99, 98, 97; vmem 99 -> 1 spike (49); 49 - 1 + 98 = 146 -> 2 (46); 142 -> 2 (42)
    assert rec["Spikes"][:, 0].tolist() == [1, 2, 2]
    # neuron 1 sees them one step later: 1 * 50 - 1 = 49 at t = 1; 49 + 2 * 50 - 1 = 148 at t = 2
    assert rec["Isyn"][:, 1].tolist() == [0, 49, 148]


# -- state, batch, record -------------------------------------------------------------------------
def test_two_halves_equal_whole():
    rng = np.random.default_rng(3)
    for _ in range(10):
        cfg = random_config(rng, max_hidden=40)
        x = random_input(rng, 60, cfg.n_input)
        whole = XyloSim.from_config(cfg)
        o, s, r = whole.evolve(x, record=True)
        half = XyloSim.from_config(cfg)
        o1, _, r1 = half.evolve(x[:25], record=True)
        o2, s2, r2 = half.evolve(x[25:], record=True)
        np.testing.assert_array_equal(np.concatenate([o1, o2]), o)
        for k in RECORD_KEYS:
            np.testing.assert_array_equal(np.concatenate([r1[k], r2[k]]), r[k])
        for k in STATE_KEYS:
            np.testing.assert_array_equal(s2[k], s[k])
        half.reset_state()
        o3, _, _ = half.evolve(x)
        np.testing.assert_array_equal(o3, o)


def test_state_contents():
    sim = one_neuron(w_in=100, dash_syn=15, dash_mem=15, thr=150)
    assert set(sim.state) == set(STATE_KEYS) and all(v.sum() == 0 for v in sim.state.values())
    _, state, rec = sim.evolve(np.array([[1], [0]]), record=True)
    assert set(state) == set(STATE_KEYS)
    assert state["Vmem"].tolist() == [46] and state["Spikes"].tolist() == [1]
    assert state["Isyn"].tolist() == [98] and state["Isyn2"].tolist() == [0]
    state["Vmem"][0] = 999  # a copy: the simulator is not affected
    assert sim.state["Vmem"].tolist() == [46]


def test_batch_equals_per_sample_loop_and_record_shapes():
    rng = np.random.default_rng(4)
    for _ in range(6):
        cfg = random_config(rng, max_hidden=40)
        x = random_input(rng, 50, cfg.n_input, batch=5)
        sim = XyloSim.from_config(cfg)
        ob, sb, rb = sim.evolve(x, record=True)
        assert ob.shape == (5, 50, cfg.n_output)
        for k in ("Vmem", "Isyn", "Isyn2", "Spikes"):
            assert rb[k].shape == (5, 50, cfg.n_hidden)
        for k in ("Vmem_out", "Isyn_out"):
            assert rb[k].shape == (5, 50, cfg.n_output)
        assert sb["Vmem"].shape == (5, cfg.n_hidden) and sb["Isyn_out"].shape == (5, cfg.n_output)
        for b in range(5):
            o, s, r = XyloSim.from_config(cfg).evolve(x[b], record=True)
            np.testing.assert_array_equal(ob[b], o)
            for k in RECORD_KEYS:
                np.testing.assert_array_equal(rb[k][b], r[k])
            for k in STATE_KEYS:
                np.testing.assert_array_equal(sb[k][b], s[k])
        # record off: same output, empty record
        sim.reset_state()
        o2, _, r2 = sim.evolve(x)
        assert r2 == {} and np.array_equal(o2, ob)


def test_unbatched_state_broadcast_then_batch_size_fixed():
    rng = np.random.default_rng(5)
    cfg = random_config(rng, max_hidden=20)
    x = random_input(rng, 40, cfg.n_input)
    ref = XyloSim.from_config(cfg)
    o_ref, _, _ = ref.evolve(x)
    sim = XyloSim.from_config(cfg)
    sim.evolve(x[:15])
    ob, sb, _ = sim.evolve(np.stack([x[15:]] * 3))
    for b in range(3):
        np.testing.assert_array_equal(ob[b], o_ref[15:])
    assert sb["Vmem"].shape == (3, cfg.n_hidden)
    with pytest.raises(SimulationError, match="reset_state"):
        sim.evolve(np.stack([x] * 2))
    with pytest.raises(SimulationError, match="reset_state"):
        sim.evolve(x)
    sim.reset_state()
    o, _, _ = sim.evolve(x)
    np.testing.assert_array_equal(o, o_ref)


def test_record_shapes_unbatched_and_k1_isyn2_zero():
    cfg = random_config(np.random.default_rng(8), max_hidden=10).replace(
        weights_in=np.zeros((3, 4, 1)),
        weights_rec=np.zeros((4, 4, 1)),
        weights_out=np.zeros((4, 2)),
        dash_mem=np.full(4, 1),
        dash_syn=np.full(4, 1),
        dash_syn_2=np.full(4, 1),
        threshold=np.full(4, 5),
        bias=np.full(4, 3),
        aliases=-np.ones(4, dtype=int),
        dash_mem_out=np.full(2, 1),
        dash_syn_out=np.full(2, 1),
        threshold_out=np.full(2, 5),
        bias_out=np.zeros(2, dtype=int),
        bias_enable=True,
    )
    out, state, rec = XyloSim.from_config(cfg).evolve(np.zeros((7, 3), dtype=np.uint8), record=True)
    assert out.shape == (7, 2) and list(rec) == list(RECORD_KEYS)
    assert rec["Vmem"].shape == (7, 4) and rec["Isyn_out"].shape == (7, 2)
    assert not rec["Isyn2"].any() and rec["Spikes"].any()
    assert state["Isyn2"].shape == (4,)


def test_input_dtypes_accepted():
    sim = one_neuron(w_in=10, dash_syn=15, thr=32767)
    ref, _, _ = sim.evolve(np.array([[3], [0], [20]]), record=True)
    for x in (
        np.array([[3], [0], [20]], dtype=np.uint16),
        np.array([[3.0], [0.0], [20.0]]),
        [[3], [0], [20]],
        np.array([[3], [0], [2**40]], dtype=np.uint64),
    ):
        sim.reset_state()
        out, _, _ = sim.evolve(x)
        assert out.shape == (3, 1)
    sim.reset_state()
    out, _, _ = sim.evolve(np.array([[True], [False]]))
    assert out.shape == (2, 1)


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "x, where, what",
    [
        (np.array([[0, 0], [0, -1]]), "x[1, 1]", "negative"),
        (np.array([[0, 0], [0.5, 0]]), "x[1, 0]", "non-integer"),
        (np.array([[0, np.nan], [0, 0]]), "x[0, 1]", "non-finite"),
        (np.array([[0, 0], [np.inf, 0]]), "x[1, 0]", "non-finite"),
        (np.array([[0, 0], [-np.inf, 0]]), "x[1, 0]", "non-finite"),
        (np.array([[[0, 0]], [[0, 0]], [[3, -2]]]), "x[2, 0, 1]", "negative"),
        (np.array([[1, 2], [-1.0, 0.5]]), "x[1, 0]", "negative"),
    ],
)
def test_bad_values_name_first_index(x, where, what):
    sim = XyloSim.from_config(
        random_config(np.random.default_rng(1), max_hidden=5).replace(
            weights_in=np.zeros((2, 1, 1)),
            weights_rec=np.zeros((1, 1, 1)),
            weights_out=np.zeros((1, 1)),
            dash_mem=[1],
            dash_syn=[1],
            dash_syn_2=[1],
            threshold=[1],
            bias=[0],
            aliases=[-1],
            dash_mem_out=[1],
            dash_syn_out=[1],
            threshold_out=[1],
            bias_out=[0],
            bias_enable=False,
        )
    )
    with pytest.raises(SimulationError) as info:
        sim.evolve(x)
    assert info.value.where == where and what in str(info.value)
    assert str(info.value).startswith(where)


@pytest.mark.parametrize(
    "x, match",
    [
        (np.zeros(5), "input dimensions"),
        (np.zeros((2, 2, 2, 1)), "input dimensions"),
        (np.zeros((4, 3)), "input channel count"),
        (np.zeros((4, 0)), "input channel count"),
        (np.array([["a"], ["b"]]), "input dtype"),
        (np.zeros((3, 1), dtype=complex), "input dtype"),
        (np.array([[1], [None]], dtype=object), "input dtype"),
    ],
)
def test_bad_shapes_and_dtypes(x, match):
    sim = one_neuron()
    with pytest.raises(SimulationError, match=match):
        sim.evolve(x)


def test_bad_input_leaves_state_untouched():
    sim = one_neuron(w_in=100, dash_syn=15, dash_mem=15, thr=32767)
    sim.evolve(np.array([[1]]))
    before = sim.state
    with pytest.raises(SimulationError):
        sim.evolve(np.array([[1], [-1]]))
    assert all(np.array_equal(before[k], sim.state[k]) for k in STATE_KEYS)


def test_empty_time_axis():
    out, _, rec = one_neuron().evolve(np.zeros((0, 1), dtype=int), record=True)
    assert out.shape == (0, 1) and rec["Vmem"].shape == (0, 1)
