"""The simulator against the golden reference runs of xylosim (exact equality of every array)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pondlib.devices.xylo.config import XyloConfig, validate_config
from pondlib.devices.xylo.sim import RECORD_KEYS, XyloSim

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "xylo_golden"
CASES = ["ff_default", "residual_recurrent", "two_synapses", "high_input_counts"]
QUANTIZERS = ["channel", "global"]


def golden_config(data, q: str) -> XyloConfig:
    def g(key):
        return data[f"spec_{q}/{key}"]

    aliases = g("aliases_padded")
    assert aliases.ndim == 2 and aliases.shape[1] == 1  # at most one alias target per neuron
    return XyloConfig(
        weights_in=g("weights_in"),
        weights_rec=g("weights_rec"),
        weights_out=g("weights_out"),
        dash_mem=g("dash_mem"),
        dash_syn=g("dash_syn"),
        dash_syn_2=g("dash_syn_2"),
        dash_mem_out=g("dash_mem_out"),
        dash_syn_out=g("dash_syn_out"),
        threshold=g("threshold"),
        bias=g("bias"),
        threshold_out=g("threshold_out"),
        bias_out=g("bias_out"),
        aliases=aliases[:, 0],
        bias_enable=bool(np.any(g("bias")) or np.any(g("bias_out"))),
        dt=1e-3,
    )


@pytest.fixture(scope="module", params=CASES)
def case(request):
    with np.load(GOLDEN / f"{request.param}.npz") as data:
        return request.param, {k: data[k] for k in data.files}


@pytest.mark.parametrize("q", QUANTIZERS)
def test_golden_exact(case, q):
    name, data = case
    config = golden_config(data, q)
    assert validate_config(config) == []
    x = data["input_raster"]
    out, _, rec = XyloSim.from_config(config).evolve(x, record=True)
    np.testing.assert_array_equal(out, data[f"sim_{q}/output"])
    for key in RECORD_KEYS:
        np.testing.assert_array_equal(rec[key], data[f"sim_{q}/rec/{key}"], err_msg=f"{name} {q} {key}")
    assert out.sum() > 0 and rec["Spikes"].sum() > 0  # the cases are not silent


@pytest.mark.parametrize("q", QUANTIZERS)
def test_golden_batched_and_split(case, q):
    _, data = case
    sim = XyloSim.from_config(golden_config(data, q))
    x = data["input_raster"]
    out, _, rec = sim.evolve(np.stack([x, x]), record=True)
    for b in range(2):
        np.testing.assert_array_equal(out[b], data[f"sim_{q}/output"])
        np.testing.assert_array_equal(rec["Spikes"][b], data[f"sim_{q}/rec/Spikes"])
    sim.reset_state()
    o1, _, _ = sim.evolve(x[:77])
    o2, _, _ = sim.evolve(x[77:])
    np.testing.assert_array_equal(np.concatenate([o1, o2]), data[f"sim_{q}/output"])


def test_golden_features_present():
    with np.load(GOLDEN / "residual_recurrent.npz") as d:
        assert (d["spec_channel/aliases_padded"] >= 0).sum() == 32
    with np.load(GOLDEN / "high_input_counts.npz") as d:
        assert d["input_raster"].max() > 15
    with np.load(GOLDEN / "two_synapses.npz") as d:
        assert d["spec_channel/weights_in"].shape[2] == 2 and d["sim_channel/rec/Isyn2"].any()


@pytest.mark.parametrize("q", QUANTIZERS)
def test_golden_matches_xylosim_itself(case, q):
    from tests.devices.xylo.xylosim_oracle import run_oracle  # xylosim is a test dependency

    _, data = case
    out, rec = run_oracle(golden_config(data, q), data["input_raster"])
    np.testing.assert_array_equal(out, data[f"sim_{q}/output"])
    for key in RECORD_KEYS:
        np.testing.assert_array_equal(rec[key], data[f"sim_{q}/rec/{key}"])
