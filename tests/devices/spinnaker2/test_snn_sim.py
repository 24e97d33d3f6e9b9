"""SNN simulator: hand-derived trajectories, the delay ring buffer, options, state and input checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pondlib import nn
from pondlib.devices.core.inputs import append_silence
from pondlib.devices.spinnaker2.config import config_from_specification
from pondlib.devices.spinnaker2.mapper import mapper
from pondlib.devices.spinnaker2.sim import LIFParams, LIFState, SpiNNaker2Sim, lif_step
from pondlib.devices.spinnaker2.specification import LIFOptions
from pondlib.errors import SimulationError

HALF = 1e-3 / math.log(2)  # tau with exp(-dt / tau) = 0.5 at dt = 1 ms


def _sim(net, options=None, **kw):
    config, ok, message = config_from_specification(mapper(net, **kw))
    assert ok, message
    return SpiNNaker2Sim.from_config(config, options)


def _one(threshold, w=1.0, tau_syn=HALF, model="lif", scale=3.0, delays=None):
    net = nn.Sequential(
        nn.Linear(1, 1, weight=np.full((1, 1), w)), nn.LIF(1, tau_mem=HALF, tau_syn=tau_syn, threshold=threshold)
    )
    return net, dict(neuron_model=model, weight_scale={"1_LIF": scale}, delays=delays)


def test_lif_trajectory_by_hand_and_threshold_tie():
    # weight 1 x scale 3 -> word weight 3; threshold 1.5 x 3 = 4.5; alpha = 0.5.
    net, kw = _one(1.5)
    x = np.array([[1], [1], [1], [1], [0], [0]])
    out, _, rec = _sim(net, **kw).evolve(x, record=True)
    # spikes of ticks 0..3 arrive at 1..4: v = 0, 3, 4.5 (a tie: no spike with ">"), 5.25 -> spike,
    # 0.75; 0.375 + 3 = 3.375; 1.6875
    assert rec["1_LIF.input"][:, 0].tolist() == [0, 3, 3, 3, 3, 0]
    assert rec["1_LIF.v"][:, 0].tolist() == [0.0, 3.0, 4.5, 0.75, 3.375, 1.6875]
    assert out[:, 0].tolist() == [0, 0, 0, 1, 0, 0]
    out_ge, _, rec_ge = _sim(net, LIFOptions(compare=">="), **kw).evolve(x, record=True)
    # ">=": the tie at tick 2 spikes, 4.5 - 4.5 = 0; then 3, 4.5 (tie again -> spike) 0, ...
    assert out_ge[:, 0].tolist() == [0, 0, 1, 0, 1, 0]
    assert rec_ge["1_LIF.v"][:, 0].tolist() == [0.0, 3.0, 0.0, 3.0, 0.0, 0.0]


def test_lif_curr_exp_trajectory_matches_float_model_scaled():
    # tau_syn with beta = 0.5: weight 1 is folded to 0.5, x scale 4 -> word weight 2.
    net, kw = _one(100.0, model="lif_curr_exp", scale=4.0)
    x = np.array([[1], [0], [0], [0], [0]])
    _, _, rec = _sim(net, **kw).evolve(x, record=True)
    # i: 0, 2, 1, 0.5, 0.25 ; v: 0, 2, 1 + 1 = 2, 1 + 0.5 = 1.5, 0.75 + 0.25 = 1
    assert rec["1_LIF.i_syn"][:, 0].tolist() == [0.0, 2.0, 1.0, 0.5, 0.25]
    assert rec["1_LIF.v"][:, 0].tolist() == [0.0, 2.0, 2.0, 1.5, 1.0]
    # the float model (pondlib.nn) sees the spike one tick earlier, at 1/4 of the scale
    _, _, rec_f = net(np.array([[1.0], [0], [0], [0]]), record=True)
    v_float = np.asarray(rec_f["1_LIF/vmem"])[:, 0]
    assert np.allclose(rec["1_LIF.v"][1:, 0] / 4.0, v_float, atol=1e-6)


def test_delays_arrive_at_t_plus_one_plus_delay_across_the_ring_and_calls():
    net = nn.Sequential(nn.Linear(1, 3, weight=np.ones((1, 3))), nn.LIF(3, threshold=1e6))
    sim = _sim(net, neuron_model="lif", delays={"0_Linear": np.array([[0, 3, 7]])})
    x = np.zeros((20, 1), dtype=int)
    x[0] = x[1] = x[9] = 1
    _, _, rec = sim.evolve(x[:10], record=True)  # the spike at tick 9 lands in the next call
    _, _, rec2 = sim.evolve(x[10:], record=True)
    arrived = np.concatenate([rec["1_LIF.input"], rec2["1_LIF.input"]]) // 15
    for j, d in enumerate((0, 3, 7)):
        assert np.flatnonzero(arrived[:, j]).tolist() == [1 + d, 2 + d, 10 + d]


def test_two_layers_cost_one_tick_each():
    net = nn.Sequential(
        nn.Linear(1, 1, weight=np.ones((1, 1))),
        nn.LIF(1, threshold=0.5),
        nn.Linear(1, 1, weight=np.ones((1, 1))),
        nn.LIF(1, threshold=0.5),
    )
    out, _, rec = _sim(net, neuron_model="lif").evolve(np.array([[1], [0], [0], [0]]), record=True)
    assert rec["1_LIF.spikes"][:, 0].tolist() == [0, 1, 0, 0]
    assert out[:, 0].tolist() == [0, 0, 1, 0]


def test_inhibitory_weights_negative_membrane_and_reset_to_v_reset():
    net = nn.Sequential(nn.Linear(2, 1, weight=np.array([[1.0], [-1.0]])), nn.LIF(1, tau_mem=HALF, threshold=0.5))
    sim = _sim(net, LIFOptions(reset="to_v_reset"), neuron_model="lif")
    out, _, rec = sim.evolve(np.array([[0, 1], [0, 0], [1, 0], [0, 0]]), record=True)
    assert rec["1_LIF.input"][:, 0].tolist() == [0, -15, 0, 15]
    assert rec["1_LIF.v"][:, 0].tolist() == [0.0, -15.0, -7.5, 0.0]  # -3.75 + 15 = 11.25 > 7.5 -> v_reset
    assert out[:, 0].tolist() == [0, 0, 0, 1]


def test_refractory_counter_holds_the_membrane():
    p = LIFParams.from_arrays(threshold=[1.0], alpha=[1.0], t_refrac=[2], exc_decay=[0.0])
    s = LIFState.zeros((1,), 1)
    seq = []
    for _ in range(5):
        spk, s = lif_step(p, s, np.array([[2]]), np.array([[0]]), True, LIFOptions())
        seq.append((int(spk[0, 0]), float(s.v[0, 0]), int(s.refrac[0, 0])))
    # spike (2 > 1, v = 1), two held ticks, then 1 + 2 = 3 > 1 -> spike, v = 2
    assert seq == [(1, 1.0, 2), (0, 1.0, 1), (0, 1.0, 0), (1, 2.0, 2), (0, 2.0, 1)]


def test_batch_state_persistence_and_reset():
    rng = np.random.default_rng(0)
    net = nn.Sequential(
        nn.Linear(8, 20, weight=rng.normal(size=(8, 20))),
        nn.LIF(20, threshold=0.5),
        nn.Linear(20, 4, weight=rng.normal(size=(20, 4))),
        nn.LIF(4, threshold=0.5),
    )
    sim = _sim(net, delays={"2_Linear": rng.integers(0, 8, (20, 4))})
    x = rng.poisson(0.3, (3, 40, 8))
    out, _, rec = sim.evolve(x, record=True)
    assert out.shape == (3, 40, 4) and rec["1_LIF.v"].shape == (3, 40, 20) and rec["1_LIF.v"].dtype == np.float32
    assert out.sum() > 0
    sim.reset_state()
    a, _, _ = sim.evolve(x[:, :17])
    b, state, _ = sim.evolve(x[:, 17:])
    assert np.array_equal(np.concatenate([a, b], axis=1), out) and state["tick"] == 40
    for i in range(3):  # each sample alone gives the same
        sim.reset_state()
        assert np.array_equal(sim.evolve(x[i])[0], out[i])
    with pytest.raises(SimulationError, match="batch size"):
        sim.evolve(x[:2])


def test_simulator_reads_the_synapse_words():
    net = nn.Sequential(nn.Linear(1, 2, weight=np.array([[1.0, 0.5]])), nn.LIF(2, threshold=1e6))
    config, ok, _ = config_from_specification(mapper(net, neuron_model="lif"))
    pe = config.pes[0]
    words = pe.words.copy()
    words[0] ^= np.uint16(1 << 11)  # flip the inh bit of the first synapse
    bad = config.replace(
        pes=(
            type(pe)(
                pe.pe, pe.population, pe.start, pe.stop, pe.row_source, pe.row_neuron, pe.row_ptr, words, pe.memory
            ),
        )
    )
    x = np.array([[1], [0]])
    _, _, good_rec = SpiNNaker2Sim.from_config(config).evolve(x, record=True)
    _, _, bad_rec = SpiNNaker2Sim.from_config(bad).evolve(x, record=True)
    assert good_rec["1_LIF.input"][1].tolist() == [15, 8]
    assert bad_rec["1_LIF.input"][1].tolist() == [-15, 8]


@pytest.mark.parametrize(
    "x, match",
    [
        (np.array([[-1]]), ">= 0"),
        (np.array([[0.5]]), "integer"),
        (np.array([[np.nan]]), "integer"),
        (np.zeros((3, 2), int), "input shape"),
        (np.array([["a"]]), "dtype"),
    ],
)
def test_bad_input_is_refused(x, match):
    net, kw = _one(1.0)
    with pytest.raises(SimulationError, match=match):
        _sim(net, **kw).evolve(x)


@pytest.mark.parametrize(
    "model, delays, latency",
    [
        ("lif_curr_exp_no_delay", None, 2),  # one tick per hop
        ("lif_curr_exp", {"0_Linear": 1, "2_Linear": 3}, 6),  # (1 + 1) + (1 + 3)
    ],
)
def test_latency_ticks_is_when_the_first_output_spike_arrives(model, delays, latency):
    """Hand-derived: a strong chain answers an input spike at tick 0 exactly ``latency_ticks`` later,
    so ``append_silence(x, latency_ticks)`` is the shortest run that counts it."""
    net = nn.Sequential(
        nn.Linear(3, 3, weight=5 * np.eye(3)),
        nn.LIF(3, tau_syn=2e-3),
        nn.Linear(3, 3, weight=5 * np.eye(3)),
        nn.LIF(3, tau_syn=2e-3),
    )
    d = None if delays is None else {k: np.full((3, 3), v) for k, v in delays.items()}
    spec = mapper(net, neuron_model=model, delays=d)
    assert spec.latency_ticks == latency
    x = np.zeros((1, 3))
    x[0, 0] = 1
    config, ok, _ = config_from_specification(spec)
    assert ok
    out = SpiNNaker2Sim.from_config(config).evolve(append_silence(x, latency))[0]
    assert out.shape == (latency + 1, 3)
    assert np.flatnonzero(out[:, 0]).tolist() == [latency] and not out[:, 1:].any()
