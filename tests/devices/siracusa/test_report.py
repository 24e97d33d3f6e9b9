"""The Siracusa report: mapping a network, resources, quantization and float-vs-chip gaps as plain data,
checked against the specification, the limits, the cycle model and the simulator."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from pondlib import nn
from pondlib.devices.siracusa.config import SiracusaConfig
from pondlib.devices.siracusa.cycles import cycle_table
from pondlib.devices.siracusa.limits import SIRACUSA
from pondlib.devices.siracusa.report import (
    configure,
    float_vs_chip_gaps,
    limit_rows,
    map_network,
    quantization_summary,
    resource_usage,
)
from pondlib.devices.siracusa.sim import SiracusaSim, quantize_input
from pondlib.errors import GraphError


@pytest.fixture(scope="module")
def net():
    k1, k2 = jax.random.split(jax.random.PRNGKey(2))
    return nn.Sequential(
        nn.Linear(16, 32, key=k1),
        nn.LIF(32, tau_mem=0.02, tau_syn=2e-3, max_spikes_per_dt=1),
        nn.Linear(32, 10, key=k2),
        nn.LIF(10, tau_mem=0.02, tau_syn=2e-3, max_spikes_per_dt=1),
    )


@pytest.fixture(scope="module")
def mapped(net):
    calib = np.random.default_rng(0).random((16, 10, 16)) * 4
    return map_network(net, SIRACUSA, calib, drop_synapse=True)


def _rows(resources):
    return {r.name: r for r in resources}


def test_map_network_needs_drop_synapse_for_a_synaptic_current(net):
    with pytest.raises(GraphError) as info:
        map_network(net, SIRACUSA, np.ones((2, 3, 16)))
    assert info.value.what == "LIF synaptic current"


def test_map_network_returns_the_float_layers_and_the_specification(mapped):
    layers, spec = mapped
    assert [type(layer).__name__ for layer in layers] == ["GemmLayer", "IntLIFLayer", "GemmLayer", "IntLIFLayer"]
    assert [type(q).__name__ for q in spec.config.layers] == ["QGemm", "QLIF", "QGemm", "QLIF"]


def test_resources_are_the_specification_against_the_limits(mapped):
    _, spec = mapped
    lim = SIRACUSA
    rows = _rows(resource_usage(spec, lim))
    l2 = rows["L2 used"]
    assert (l2.used, l2.limit, l2.unit) == (spec.placement.l2_used, lim.l2_bytes, "B")
    assert rows["constants: int8 weights, int32 biases, LIF parameters"].used == sum(
        spec.placement.weight_bytes.values()
    )
    tile = rows["largest L1 tile footprint"]
    assert tile.used == max(p.footprint for p in spec.plans if p is not None)
    assert tile.limit == lim.l1_tile_budget and not tile.exceeded
    assert rows["L1 tiles per step"].used == sum(p.n_tiles for p in spec.plans if p is not None)
    state = rows["integer LIF state width"]
    assert (state.used, state.limit, state.unit) == (16, lim.state_bits_max, "bits")
    cycles = cycle_table(spec.config, cores=lim.n_cores, simd=True, tiled=True)
    assert rows["MACs per step"].used == sum(r.macs for r in cycles) == 16 * 32 + 32 * 10
    assert rows["cycles per step"].used == pytest.approx(sum(r.total for r in cycles))
    assert rows["cycles per step"].note == "model; 8 cores, SIMD, tiled"
    assert rows["cycles per step"].limit is None and rows["cycles per step"].fraction is None


def test_quantization_summary_is_the_mapper_report(mapped):
    _, spec = mapped
    s = quantization_summary(spec)
    assert [r.name for r in s.layers] == [r.name for r in spec.reports]
    for row, rep in zip(s.layers, spec.reports):
        assert (row.kind, row.shift, row.mul_rel_error, row.placement) == (
            rep.kind,
            rep.shift,
            rep.mul_rel_error,
            rep.placement,
        )
        assert row.weight_error == (rep.weight_error if rep.kind == "QGemm" else None)
        assert (row.npu_eligible, row.npu_reason) == (rep.npu_eligible, rep.npu_reason)
    cfg = spec.config
    assert (s.input_signed, s.input_bits, s.input_scale) == (cfg.input_signed, cfg.input_bits, cfg.input_scale)
    assert s.input_range == tuple(cfg.input_range)


def test_gaps_measure_the_run(mapped):
    _, spec = mapped
    config = configure(spec)
    x = np.random.default_rng(1).random((3, 10, 16)) * 4
    _, _, rec = SiracusaSim(config).evolve(quantize_input(x, config), record=True)
    float_spikes = np.zeros((3, 10, 32))
    float_spikes[:, :5] = 1
    g = float_vs_chip_gaps(spec, rec, float_spikes, tau_mem=0.02, dt=1e-3)
    hidden = spec.config.layers[1]
    assert g.layer == hidden.name == "1_LIF"
    assert (g.decay_mul, g.decay_shift, g.state_bits) == (int(np.ravel(hidden.beta_mul)[0]), hidden.shift, 16)
    assert g.decay_float == pytest.approx(np.exp(-1e-3 / 0.02))
    assert g.decay_chip == pytest.approx(g.decay_float, abs=2.0**-hidden.shift)
    assert g.weight_error == spec.reports[0].weight_error and g.max_spikes_per_step == 1
    assert g.rate_float == 0.5 and g.rate_chip == pytest.approx(rec["1_LIF/spikes"].mean())


def test_configure_returns_the_configuration(mapped):
    config = configure(mapped[1], "test")
    assert isinstance(config, SiracusaConfig) and config.n_input == 16


def test_limit_rows_are_the_limits():
    rows = {r.name: r for r in limit_rows(SIRACUSA)}
    assert rows["cluster cores (RV32 XpulpV2)"].value == str(SIRACUSA.n_cores) == "8"
    assert (rows["L1 (cluster TCDM)"].value, rows["L1 (cluster TCDM)"].unit) == ("256", "KiB")
    assert rows["L1 for one layer's tiles"].value == f"{SIRACUSA.l1_tile_budget:,}"
    assert rows["L2 (on-chip SRAM)"].value == "2" and rows["integer LIF state"].value == "2..32"
    assert rows["RequantShift shift"].value == f"0..{SIRACUSA.shift_max}"
    assert rows["NPU kernels (kh x kw)"].value == "1x1, 3x3, 3x3 dw"
