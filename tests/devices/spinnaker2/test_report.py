"""The SpiNNaker2 report: mapping with collected deadline warnings, resources, quantization and
float-vs-chip gaps as plain data, checked against the specification, the limits and the simulator."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from pondlib import nn
from pondlib.devices.spinnaker2.config import SpiNNaker2Config, config_from_specification
from pondlib.devices.spinnaker2.limits import LIMITS, SPINNAKER2_BOARD, SPINNAKER2_CHIP
from pondlib.devices.spinnaker2.report import (
    configure,
    float_vs_chip_gaps,
    limit_rows,
    map_network,
    quantization_summary,
    resource_usage,
)
from pondlib.devices.spinnaker2.sim import SpiNNaker2Sim


@pytest.fixture(scope="module")
def net():
    k1, k2 = jax.random.split(jax.random.PRNGKey(1))
    return nn.Sequential(
        nn.Linear(16, 300, key=k1),
        nn.LIF(300, tau_syn=2e-3, max_spikes_per_dt=1),
        nn.Linear(300, 10, key=k2),
        nn.LIF(10, tau_syn=2e-3, max_spikes_per_dt=1),
    )


@pytest.fixture(scope="module")
def run(net):
    """The network mapped with 7-bit words, configured and simulated on three samples."""
    spec, late = map_network(net, SPINNAKER2_CHIP, "lif_curr_exp_no_delay")
    x = (np.random.default_rng(0).random((3, 20, 16)) < 0.3).astype(np.int64)
    x[:, 15:] = 0
    out, _, rec = SpiNNaker2Sim.from_config(configure(spec)).evolve(x, record=True)
    return spec, late, x, out, rec


def _rows(resources):
    return {r.name: r for r in resources}


def test_resources_are_the_specification_against_the_limits(run):
    spec, late, _, _, _ = run
    lim = SPINNAKER2_CHIP
    rows = _rows(resource_usage(spec, lim))
    assert late == ()
    assert (rows["PEs used"].used, rows["PEs used"].limit) == (spec.report.pes_used, lim.usable_pes)
    assert spec.report.pes_used == 4  # one input PE, 300 hidden neurons on two, 10 outputs on one
    assert (rows["neurons on the fullest PE"].used, rows["neurons on the fullest PE"].limit) == (250, 250)
    assert rows["neurons on the fullest PE"].fraction == 1.0 and not rows["neurons on the fullest PE"].exceeded
    memory = rows["data memory of the fullest PE"]
    assert (memory.used, memory.limit, memory.unit) == (
        max(sum(m.values()) for m in spec.memory.values()),
        lim.snn_data_bytes,
        "B",
    )
    words = rows["synapse words"]
    assert words.used == sum(np.count_nonzero(p.weights) for p in spec.projections) and words.limit is None
    assert rows["longest synapse row"].used <= 250 and rows["longest synapse row"].limit == lim.max_row_words
    largest = rows["largest weight magnitude"]
    assert largest.used == max(int(np.abs(p.weights).max()) for p in spec.projections)
    assert largest.limit == lim.weight_range(with_delays=False)[1] == 127
    cycles = rows["cycles per tick, busiest PE"]
    assert (cycles.used, cycles.limit) == (max(spec.report.cycles_per_tick.values()), lim.cycles_per_tick)
    assert "peak spikes per neuron per tick" not in rows


def test_resources_with_a_record_and_delay_words(net, run):
    spec, _, _, _, rec = run
    peak = _rows(resource_usage(spec, SPINNAKER2_CHIP, rec))["peak spikes per neuron per tick"]
    assert (peak.used, peak.limit) == (max(int(v.max()) for k, v in rec.items() if k.endswith(".spikes")), 1)
    spec4, _ = map_network(net, SPINNAKER2_CHIP, "lif_curr_exp")
    assert _rows(resource_usage(spec4, SPINNAKER2_CHIP))["largest weight magnitude"].limit == 15


def test_deadline_warnings_are_collected_not_raised(net):
    slow = dataclasses.replace(SPINNAKER2_CHIP, cycles_per_neuron=10_000)  # 250 neurons: 2.5 M cycles per tick
    spec, late = map_network(net, slow, "lif_curr_exp")  # warnings are errors in this suite: none escapes
    assert late and all("deadline" in message for message in late)
    cycles = _rows(resource_usage(spec, slow))["cycles per tick, busiest PE"]
    assert cycles.exceeded and cycles.used > slow.cycles_per_tick


def test_quantization_summary_is_the_mapper_report(net, run):
    spec = run[0]
    s = quantization_summary(spec)
    assert (s.neuron_model, s.weight_bits, s.max_delay) == ("lif_curr_exp_no_delay", 7, 0)
    assert [(p.projection, p.target) for p in s.projections] == [("0_Linear", "1_LIF"), ("2_Linear", "3_LIF")]
    for p in s.projections:
        assert p.scale == spec.report.scales[p.target]
        assert p.relative_error == spec.report.quantization_error[p.projection]
        assert p.max_abs_error == spec.report.max_abs_error[p.projection]
        assert p.zeroed == spec.report.zeroed[p.projection]
    spec4, _ = map_network(net, SPINNAKER2_CHIP, "lif_curr_exp")
    s4 = quantization_summary(spec4)
    assert (s4.weight_bits, s4.max_delay) == (4, 7)
    assert s4.projections[0].relative_error > s.projections[0].relative_error  # 4-bit words lose more


def test_gaps_measure_the_run(run):
    spec, _, x, _, rec = run
    float_spikes = np.zeros((3, 20, 300))
    float_spikes[0, 1, :30] = 1
    g = float_vs_chip_gaps(spec, x, rec, float_spikes)
    assert (g.n_steps, g.silent_steps, g.hops, g.max_spikes_per_tick) == (20, 5, 2, 1)
    assert g.beta == pytest.approx(np.exp(-1e-3 / 2e-3), rel=1e-6)
    assert g.beta == float(spec.populations[0].exc_decay[0])
    assert (g.weight_bits, g.fused_multiply_add) == (7, False)
    assert g.weight_error == spec.report.quantization_error["0_Linear"]
    assert g.rate_float == pytest.approx(30 / float_spikes.size)
    assert g.rate_chip == pytest.approx(rec["1_LIF.spikes"].mean())


def test_configure_returns_the_configuration(run):
    spec = run[0]
    config = configure(spec)
    assert isinstance(config, SpiNNaker2Config)
    want, ok, _ = config_from_specification(spec)
    assert ok and config.limits_name == want.limits_name == "SpiNNaker2 chip"


@pytest.mark.parametrize("short", sorted(LIMITS))
def test_limit_rows_are_the_limits(short):
    lim = LIMITS[short]
    rows = {r.name: r for r in limit_rows(lim)}
    assert rows["chips"].value == str(lim.n_chips)
    assert rows["PEs for applications (whole system)"].value == f"{lim.usable_pes:,}"
    assert rows["neurons per PE"].value == "250"
    assert rows["weight range, words with delay"].value == "-15..15"
    assert rows["weight range, words without delay"].value == "-127..127"
    assert (rows["PE clock"].value, rows["PE clock"].unit) == (f"{lim.clock_hz / 1e6:g}", "MHz")
    assert rows["cycles per tick"].value == f"{lim.cycles_per_tick:,}"


def test_limit_rows_of_the_board():
    rows = {r.name: r.value for r in limit_rows(SPINNAKER2_BOARD)}
    assert (rows["chips"], rows["PEs for applications (whole system)"]) == ("48", "7,104")
