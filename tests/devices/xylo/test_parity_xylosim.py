"""Randomized bit-exact parity of XyloSim against the reference simulator xylosim.

240 seeded random valid configurations (N_hid 1..80, k 1 or 2, N_out 1..8, full int8 weights, weight
shifts 0..15 including ones where ``w << s`` wraps in int16, alias chains to higher ids, biases over
the int16 range, dashes 0..15, thresholds from negative through 0 to 32767, input counts far above
15): every recorded array must be equal, unbatched and batched, and across a split run.
"""

from __future__ import annotations

import numpy as np
import pytest

# xylosim (the reference simulator) is a declared test dependency (pip install -e ".[test]"):
# a missing oracle is an error here, never a silent skip of the parity tests.
import xylosim  # noqa: F401

from pondlib.devices.xylo.config import validate_config
from pondlib.devices.xylo.sim import RECORD_KEYS, XyloSim
from tests.devices.xylo.xylosim_oracle import build_layer, random_config, random_input, run_layer, run_oracle

N_CONFIGS = 240
N_GROUPS = 8


def check_equal(out, rec, ref_out, ref_rec, label):
    np.testing.assert_array_equal(out, ref_out, err_msg=f"{label}: output")
    for key in RECORD_KEYS:
        np.testing.assert_array_equal(rec[key], ref_rec[key], err_msg=f"{label}: {key}")


@pytest.mark.parametrize("group", range(N_GROUPS))
def test_random_configs_unbatched(group):
    rng = np.random.default_rng(1000 + group)
    n = N_CONFIGS // N_GROUPS
    spiking = 0
    for i in range(n):
        config = random_config(rng)
        assert validate_config(config) == []
        x = random_input(rng, int(rng.integers(20, 120)), config.n_input)
        ref_out, ref_rec = run_oracle(config, x)
        out, _, rec = XyloSim.from_config(config).evolve(x, record=True)
        check_equal(out, rec, ref_out, ref_rec, f"group {group} config {i}")
        spiking += bool(ref_rec["Spikes"].any())
    assert spiking >= n // 3  # the random configurations are not all silent


def test_random_configs_batched():
    rng = np.random.default_rng(77)
    for i in range(12):
        config = random_config(rng, max_hidden=60)
        x = random_input(rng, 60, config.n_input, batch=3)
        out, _, rec = XyloSim.from_config(config).evolve(x, record=True)
        for b in range(3):
            ref_out, ref_rec = run_oracle(config, x[b])
            check_equal(out[b], {k: v[b] for k, v in rec.items()}, ref_out, ref_rec, f"batched config {i} sample {b}")


def test_random_configs_split_runs_match_xylosim_continuation():
    """xylosim keeps its state across evolve calls too: both sides continue identically."""
    rng = np.random.default_rng(99)
    for i in range(12):
        config = random_config(rng, max_hidden=60)
        x = random_input(rng, 80, config.n_input)
        layer = build_layer(config)
        sim = XyloSim.from_config(config)
        for part in (x[:30], x[30:]):
            ref_out, ref_rec = run_layer(layer, part)
            out, _, rec = sim.evolve(part, record=True)
            check_equal(out, rec, ref_out, ref_rec, f"split config {i}")


def test_extreme_corner_configs():
    """Saturating everything: max weights and shifts, 31-spike caps, -32768 states, dash 0 and 15."""
    rng = np.random.default_rng(5)
    for i in range(20):
        config = random_config(rng, max_hidden=30)
        n_hid, n_out = config.n_hidden, config.n_output
        sign = rng.choice([-1, 1])
        config = config.replace(
            weights_in=np.where(config.weights_in != 0, sign * 127 if sign > 0 else -128, 0),
            weight_shift_in=int(rng.choice([7, 8, 9])),
            dash_mem=rng.choice([0, 15], size=n_hid),
            dash_syn=rng.choice([0, 15], size=n_hid),
            dash_syn_2=rng.choice([0, 15], size=n_hid),
            dash_mem_out=rng.choice([0, 15], size=n_out),
            dash_syn_out=rng.choice([0, 15], size=n_out),
        )
        assert validate_config(config) == []
        x = rng.integers(0, 40, size=(50, config.n_input))
        ref_out, ref_rec = run_oracle(config, x)
        out, _, rec = XyloSim.from_config(config).evolve(x, record=True)
        check_equal(out, rec, ref_out, ref_rec, f"corner config {i}")
