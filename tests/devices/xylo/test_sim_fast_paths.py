"""XyloSim's fast kernel paths, each against the reference simulator xylosim.

The kernel (``pondlib/devices/xylo/sim.py``) has paths that the random parity tests reach only by
chance: plain (order-free) accumulation when a per-step bound proves no saturation, the saturating
ordered path otherwise (both within one run); the spike pass over 8-neuron flag words, with alias
copies landing in the same word, the next word and the tail word past N; N = 1000 (uint16 target
indices up to 2 N); and ``record=False``, which must not change the dynamics.
"""

from __future__ import annotations

import numpy as np
import pytest

from pondlib.devices.xylo.config import XyloConfig, validate_config
from pondlib.devices.xylo.sim import RECORD_KEYS, STATE_KEYS, XyloSim
from tests.devices.xylo.xylosim_oracle import random_config, random_input, run_oracle


def check_equal(out, rec, ref_out, ref_rec, label=""):
    np.testing.assert_array_equal(out, ref_out, err_msg=f"{label} output")
    for key in RECORD_KEYS:
        np.testing.assert_array_equal(rec[key], ref_rec[key], err_msg=f"{label} {key}")


def sparse_config(rng, n_hid: int, n_in: int = 16, n_out: int = 8, shift_in: int = 2) -> XyloConfig:
    """A benchmark-like configuration: sparse recurrence (fan-out 50), ~5 % of neurons spiking."""
    k = 2
    w_in = rng.integers(-128, 128, size=(n_in, n_hid, k)) * (rng.random((n_in, n_hid, k)) < 0.25)
    w_rec = np.zeros((n_hid, n_hid, k), dtype=np.int64)
    for j in range(n_hid):
        post = rng.choice(n_hid, size=min(50, n_hid), replace=False)
        w_rec[j, post, rng.integers(0, k, size=post.size)] = rng.choice(np.r_[-16:0, 1:16], size=post.size)
    return XyloConfig(
        weights_in=w_in,
        weights_rec=w_rec,
        weights_out=rng.integers(-128, 128, size=(n_hid, n_out)),
        dash_mem=np.full(n_hid, 2),
        dash_syn=np.full(n_hid, 1),
        dash_syn_2=np.full(n_hid, 3),
        dash_mem_out=np.full(n_out, 3),
        dash_syn_out=np.full(n_out, 2),
        threshold=rng.integers(900, 1100, size=n_hid),
        bias=np.zeros(n_hid, dtype=np.int64),
        threshold_out=np.full(n_out, 600),
        bias_out=np.zeros(n_out, dtype=np.int64),
        aliases=-np.ones(n_hid, dtype=np.int64),
        weight_shift_in=shift_in,
        bias_enable=False,
    )


def test_thousand_neurons_match_xylosim():
    rng = np.random.default_rng(11)
    config = sparse_config(rng, 1000)
    assert validate_config(config) == []
    x = rng.poisson(0.05, size=(150, 16))
    ref_out, ref_rec = run_oracle(config, x)
    out, _, rec = XyloSim.from_config(config).evolve(x, record=True)
    check_equal(out, rec, ref_out, ref_rec, "N=1000")
    assert 0.01 < (ref_rec["Spikes"] > 0).mean() < 0.3  # a spiking network, not silent or saturated


def test_plain_and_saturating_accumulation_alternate_within_a_run():
    """Quiet steps take the plain path, input bursts with large shifted weights saturate isyn."""
    rng = np.random.default_rng(12)
    config = sparse_config(rng, 40, n_in=4, n_out=3, shift_in=4)
    x = np.zeros((120, 4), dtype=np.int64)
    x[rng.random((120, 4)) < 0.03] = 1  # small kicks (|w << 4| <= 2048): far from the int16 limit
    x[[20, 21, 60, 95]] = 15  # bursts: 15 * (w << 4) on 4 channels saturates
    ref_out, ref_rec = run_oracle(config, x)
    out, _, rec = XyloSim.from_config(config).evolve(x, record=True)
    check_equal(out, rec, ref_out, ref_rec, "burst")
    # Synapse 2 decays with dash 3, recorded after the decay: s - (s >> 3) reaches +-28672 exactly
    # when s = 32767 or -32768, i.e. when the accumulation saturated in that step.
    isyn2 = np.abs(ref_rec["Isyn2"]).max(axis=1)
    assert (isyn2 == 28672).any(), "no step saturated: the test lost its purpose"
    isyn = np.abs(np.concatenate([ref_rec["Isyn"], ref_rec["Isyn2"]], axis=1)).max(axis=1)
    assert (isyn < 8000).sum() > 30, "no quiet steps: the test lost its purpose"


@pytest.mark.parametrize("n_hid", [19, 24])
def test_alias_copies_across_flag_words(n_hid):
    """Alias targets in the same 8-neuron word, the next word and the last (partial) word."""
    aliases = -np.ones(n_hid, dtype=np.int64)
    chains = {2: 5, 6: 7, 7: 8, 8: 15, 15: 16, 16: n_hid - 1}
    for src, tgt in chains.items():
        aliases[src] = tgt
    w_in = np.zeros((2, n_hid, 1), dtype=np.int64)
    w_in[0, [2, 6], 0] = 100  # only the chain heads are driven
    w_in[1, [15, 3], 0] = 90
    threshold = np.full(n_hid, 32767)  # the other neurons spike through aliases only
    threshold[[2, 6, 15, 3]] = 150
    config = XyloConfig(
        weights_in=w_in,
        weights_rec=np.zeros((n_hid, n_hid, 1), dtype=np.int64),
        weights_out=np.arange(n_hid * 2).reshape(n_hid, 2) % 7 - 3,
        dash_mem=np.full(n_hid, 1),
        dash_syn=np.full(n_hid, 1),
        dash_syn_2=np.zeros(n_hid, dtype=np.int64),
        dash_mem_out=np.full(2, 1),
        dash_syn_out=np.full(2, 1),
        threshold=threshold,
        bias=np.zeros(n_hid, dtype=np.int64),
        threshold_out=np.full(2, 3),
        bias_out=np.zeros(2, dtype=np.int64),
        aliases=aliases,
    )
    assert validate_config(config) == []
    x = np.random.default_rng(n_hid).poisson(3.0, size=(60, 2))
    ref_out, ref_rec = run_oracle(config, x)
    out, _, rec = XyloSim.from_config(config).evolve(x, record=True)
    check_equal(out, rec, ref_out, ref_rec, f"aliases N={n_hid}")
    reached = ref_rec["Spikes"].any(axis=0)
    assert reached[[5, 7, 8, 15, 16, n_hid - 1]].all()  # every alias target got copies


@pytest.mark.parametrize("batched", [False, True])
def test_record_off_runs_the_same_dynamics(batched):
    rng = np.random.default_rng(13)
    configs = [random_config(rng, max_hidden=70) for _ in range(6)] + [sparse_config(rng, 300)]
    for i, config in enumerate(configs):
        x = random_input(rng, 70, config.n_input, batch=3 if batched else None)
        sim_on, sim_off = XyloSim.from_config(config), XyloSim.from_config(config)
        for part in (x[..., :40, :], x[..., 40:, :]):  # the state continues identically too
            out_on, st_on, rec = sim_on.evolve(part, record=True)
            out_off, st_off, rec_off = sim_off.evolve(part)
            assert rec_off == {} and set(rec) == set(RECORD_KEYS)
            np.testing.assert_array_equal(out_off, out_on, err_msg=f"config {i}")
            for key in STATE_KEYS:
                np.testing.assert_array_equal(st_off[key], st_on[key], err_msg=f"config {i} {key}")
                assert st_off[key].dtype == np.int64
