"""The Xylo report: resources, quantization, float-vs-chip gaps and simulation summaries as plain data,
checked against the specification, the limits and the simulator they describe."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from pondlib import nn
from pondlib.devices.xylo.config import XyloConfig, config_from_specification
from pondlib.devices.xylo.limits import LIMITS, XYLO_AUDIO2, XYLO_AUDIO3
from pondlib.devices.xylo.mapper import mapper
from pondlib.devices.xylo.report import (
    configure,
    float_vs_chip_gaps,
    limit_rows,
    quantization_summary,
    resource_usage,
    silent_tail,
    simulation_summary,
)
from pondlib.devices.xylo.sim import XyloSim
from pondlib.errors import ConfigError
from pondlib.transform import channel_quantize

TAU_MEM = -1e-3 / np.log(1 - 2.0**-4)  # s: exp(-dt / tau) = 1 - 2^-4 at dt = 1 ms


@pytest.fixture(scope="module")
def mapped():
    k1, k2 = jax.random.split(jax.random.PRNGKey(3))
    net = nn.Sequential(
        nn.Linear(16, 24, key=k1),
        nn.LIF(24, tau_mem=TAU_MEM, tau_syn=2e-3, max_spikes_per_dt=31),
        nn.Linear(24, 10, key=k2),
        nn.LIF(10, tau_mem=TAU_MEM, tau_syn=2e-3, max_spikes_per_dt=1),
    )
    spec = mapper(net, XYLO_AUDIO3)
    return net, spec, channel_quantize(spec)


def _rows(resources):
    return {r.name: r for r in resources}


def test_resources_are_the_specification_against_the_limits(mapped):
    _, _, q = mapped
    rows = _rows(resource_usage(q, XYLO_AUDIO3))
    lim = XYLO_AUDIO3
    assert (rows["input channels"].used, rows["input channels"].limit) == (16, lim.n_input)
    assert (rows["hidden neurons"].used, rows["hidden neurons"].limit) == (24, lim.n_hidden)
    assert (rows["output neurons"].used, rows["output neurons"].limit) == (10, lim.n_output)
    assert rows["synaptic states per hidden neuron"].used == q.n_synapses == 1
    assert rows["input synapses"].used == np.count_nonzero(q.weights_in)
    assert rows["input synapses"].limit == lim.n_input * lim.n_hidden * lim.n_synapses
    assert rows["readout synapses"].used == np.count_nonzero(q.weights_out)
    assert rows["readout synapses"].limit == lim.n_hidden * lim.n_output
    assert rows["recurrent synapses"].used == 0 and rows["largest recurrent fan-out"].used == 0
    assert rows["recurrent synapses"].limit == lim.n_hidden * lim.max_fanout_rec
    assert rows["aliases"].used == 0 and rows["aliases"].limit == lim.n_hidden
    assert rows["hidden neurons"].fraction == pytest.approx(24 / 992)
    assert not any(r.exceeded for r in rows.values())
    assert "peak hidden spikes per step" not in rows  # only with a record


def test_resources_flag_what_exceeds_another_variant(mapped):
    _, _, q = mapped
    rows = _rows(resource_usage(q, XYLO_AUDIO2))
    assert rows["output neurons"].exceeded and rows["output neurons"].limit == XYLO_AUDIO2.n_output == 8
    assert [r.name for r in rows.values() if r.exceeded] == ["output neurons"]


def test_resources_with_a_record_report_the_peak_spike_count(mapped):
    _, _, q = mapped
    record = {"Spikes": np.zeros((2, 5, 24), dtype=np.int64)}
    record["Spikes"][1, 3, 7] = 9
    peak = _rows(resource_usage(q, XYLO_AUDIO3, record))["peak hidden spikes per step"]
    assert (peak.used, peak.limit, peak.note) == (9, XYLO_AUDIO3.max_spikes_hidden, "test run")


def test_quantization_summary_is_the_quantizer_report(mapped):
    _, _, q = mapped
    rep = q.quantization
    s = quantization_summary(q)
    assert (s.method, s.weight_bits, s.state_bits) == ("channel", 8, 16)
    fields = ("weights_in", "weights_rec", "weights_out", "threshold", "threshold_out", "bias", "bias_out")
    assert [f.field for f in s.fields] == [k for k in fields if k in rep.relative_error or k in rep.clipped]
    for f in s.fields:
        assert (f.relative_error, f.clipped) == (rep.relative_error[f.field], rep.clipped.get(f.field, 0))
    assert s.total_clipped == rep.total_clipped == sum(f.clipped for f in s.fields)
    assert {name: (lo, hi) for name, lo, hi in s.scale_ranges} == {
        k: (float(np.min(v)), float(np.max(v))) for k, v in rep.scales.items()
    }


def test_quantization_summary_needs_a_quantized_specification(mapped):
    with pytest.raises(ConfigError, match="channel_quantize"):
        quantization_summary(mapped[1])


def test_gaps_measure_the_run(mapped):
    net, _, q = mapped
    smin, smax = XYLO_AUDIO3.state_range
    x = np.zeros((2, 6, 16), dtype=np.int64)
    x[0, :4, 0] = [1, 20, 3, 1]  # steps 4 and 5 silent; 20 is above the 15-event clip
    vmem = np.zeros((2, 6, 24), dtype=np.int64)
    vmem[0, 0, :3] = smax  # 3 of 288 values saturated
    record = {"Vmem": vmem, "Isyn": np.zeros_like(vmem), "Spikes": np.ones_like(vmem)}
    float_spikes = np.full((2, 6, 24), 0.5)
    float_spikes[1, 2, 3] = 4.0
    g = float_vs_chip_gaps(q, XYLO_AUDIO3, x, record, float_spikes, net.layers[1].tau_mem)
    assert (g.n_steps, g.silent_steps, g.readout_delay) == (6, 2, 1)
    assert (g.float_peak_spikes, g.chip_peak_spikes) == (4.0, 1)
    assert (g.max_spikes_hidden, g.max_spikes_output) == (31, 1)
    assert g.dash_mem == int(q.dash_mem[0]) == 4
    assert g.decay_chip == 1 - 2.0**-4 and g.decay_float == pytest.approx(1 - 2.0**-4, rel=1e-6)
    assert g.state_range == (smin, smax) and (g.weight_bits, g.state_bits) == (8, 16)
    assert g.saturated_vmem == pytest.approx(3 / vmem.size) and g.saturated_isyn == 0.0
    assert (g.input_peak, g.max_input_count, g.input_clipped) == (20, 15, True)
    assert g.weight_error == q.quantization.relative_error["weights_in"]
    assert g.rate_chip == 1.0 and g.rate_float == pytest.approx(float_spikes.mean())


def test_silent_tail():
    assert silent_tail(np.zeros((3, 4, 2))) == 4
    assert silent_tail(np.ones((3, 4, 2))) == 0


def test_simulation_summary_matches_the_simulator(mapped):
    _, _, q = mapped
    config = configure(q)
    x = np.random.default_rng(0).integers(0, 4, size=(3, 8, 16))
    x[2] = 0  # a silent sample
    x[0, 0, 0] = 17  # clipped by the chip
    out, _, rec = XyloSim.from_config(config).evolve(x, record=True)
    s = simulation_summary(x, out, rec, config.limits_name)
    assert (s.n_samples, s.n_steps, s.batched) == (3, 8, True)
    assert (s.input_events, s.input_peak, s.clipped, s.max_input_count) == (int(x.sum()), 17, 1, 15)
    assert s.hidden_spikes == int(rec["Spikes"].sum()) and s.peak_hidden_spikes == int(rec["Spikes"].max())
    np.testing.assert_array_equal(s.counts, out.sum(axis=1))
    assert s.output_spikes == int(out.sum())
    assert s.predictions[2] is None
    for b in range(2):
        assert s.predictions[b] == (int(np.argmax(s.counts[b])) if s.counts[b].any() else None)
    single = simulation_summary(x[0], out[0], {"Spikes": rec["Spikes"][0]}, XYLO_AUDIO3)
    assert (single.n_samples, single.batched) == (1, False)
    np.testing.assert_array_equal(single.counts, s.counts[:1])


def test_configure_returns_the_configuration_or_raises(mapped):
    _, spec, q = mapped
    config = configure(q)
    assert isinstance(config, XyloConfig) and config.limits_name == "Xylo Audio 3"
    _, ok, _ = config_from_specification(spec)  # float weights: not a valid configuration
    assert not ok
    with pytest.raises(ConfigError, match="the Xylo configuration is invalid"):
        configure(spec, "here")


@pytest.mark.parametrize("short", sorted(LIMITS))
def test_limit_rows_describe_every_field(short):
    lim = LIMITS[short]
    rows = {r.name: r for r in limit_rows(lim)}
    n_fields = len(dataclasses.fields(lim)) - 1  # all but the name
    assert len(rows) == n_fields + 2
    assert rows["hidden neurons"].value == str(lim.n_hidden)
    assert rows["output neurons"].value == str(lim.n_output)
    assert (rows["weight width (signed)"].value, rows["weight width (signed)"].unit) == ("8", "bits")
    assert rows["shortest time step"].value == "0.0001" and rows["shortest time step"].unit == "s"
    assert rows["weight range"].value == "-128..127" and rows["decay shift range"].value == "0..15"
