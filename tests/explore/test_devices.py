"""The user's own chip: Siracusa and SpiNNaker2 described by their device folders, explored by hand-checked rules."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.devices import registry
from pondlib.devices.spinnaker2.timing import PAPER_MODEL
from pondlib.errors import ConfigError, PondError
from pondlib.explore import (
    Layer,
    Schedule,
    Workload,
    device_hardware,
    evaluate,
    hardware_from_description,
    sew_resnet18,
)
from pondlib.explore.hardware import _example_description
from pondlib.explore.latency import compute_cycles_per_step
from tests.strategies import assert_pond_error, bad_types

FAST = settings(max_examples=25, deadline=None)


def test_siracusa_levels():
    l1 = device_hardware("siracusa")
    assert l1.memory_bits == 256 * 1024 * 8 and l1.dram.size_bits == 2 * 1024 * 1024 * 8
    assert l1.dram.bandwidth_bits_per_cycle == 64.0  # the cycle model's 8 B/cycle cluster DMA
    assert (l1.pe_k, l1.pe_c, l1.pe_oy) == (8, 2, 1)  # 8 cores x 2 MACs per cycle
    assert any("assumed" in n for n in l1.notes) and any("siracusa.limits" in n for n in l1.notes)
    l2 = device_hardware(registry.get("siracusa"), "L2")
    assert l2.memory_bits == 2 * 1024 * 1024 * 8 and l2.dram.bandwidth_bits_per_cycle == 8.0
    assert l2.dram.read_energy_pj_per_bit == 11.0


def test_spinnaker2_pe():
    hw = device_hardware("spinnaker2")
    assert hw.memory_bits == 96 * 1024 * 8 and hw.pe_k * hw.pe_c * hw.pe_oy == 64
    assert hw.dram.bandwidth_bits_per_cycle == PAPER_MODEL.dram_bandwidth / 150e6 * 8
    assert any("calibrated" in n for n in hw.notes)


def test_a_linear_layer_on_siracusa_l1_by_hand():
    w = Workload((Layer("fc", "linear", 64, 100, stateful=True, weight_bits=8, state_bits=16, input_bits=8),), 4)
    hw = device_hardware("siracusa")
    r = evaluate(w, hw, Schedule.uniform(1, 4))
    assert compute_cycles_per_step(w.layers[0], hw) == 8 * 50  # ceil(64 / 8) ceil(100 / 2)
    fetched = 64 * 100 * 8 + 2 * 64 * 16 + 4 * 100 * 8  # weights, the state in and out, the input: over the DMA
    assert r.traffic_bits == fetched
    # registers feed 512 bit/cycle: an 8-bit weight per MAC, 16 MACs per cycle = 128 bit: compute-bound
    assert r.latency_cycles == 4 * 400 + fetched / 64
    e_dma = (64 * 100 * 8 + 64 * 16 + 4 * 100 * 8) * (0.13 + 0.12) + 64 * 16 * (0.10 + 0.175)
    assert r.offchip_energy_pj == pytest.approx(e_dma)  # L2 read + L1 write in; L1 read + L2 write out
    assert r.mac_energy_pj == pytest.approx(4 * 6400 * 1.0)


def test_sew_resnet18_on_siracusa_l2_over_l3():
    hw = device_hardware("siracusa", "L2")
    w = sew_resnet18()
    tb = evaluate(w, hw, Schedule.uniform(7, 16, fused=True))
    st_lbl = evaluate(w, hw, Schedule.uniform(7, 1))
    assert tb.traffic_bits == w.total_weight_bits + 2 * w.total_state_bits + w.input_bits
    assert st_lbl.traffic_bits > 10 * tb.traffic_bits
    assert float(tb.compute_cycles.sum()) >= w.total_ops / 16  # 16 MACs per cycle at best
    assert st_lbl.latency_cycles > tb.latency_cycles


def test_devices_without_a_description_say_so():
    assert_pond_error(device_hardware, "xylo", match="no hardware description for schedule exploration")
    assert_pond_error(device_hardware, "no-such-chip")
    assert_pond_error(device_hardware, "siracusa", "L3", match="level", error=ConfigError)


@FAST
@given(level=st.one_of(bad_types(), st.text(max_size=4)))
def test_bad_levels(level):
    for name in ("siracusa", "spinnaker2"):
        if level is None or level in registry.get(name).explore_hardware()["levels"]:
            continue  # None: the default level
        assert_pond_error(device_hardware, name, level, match="level", error=ConfigError)


@FAST
@given(
    key=st.sampled_from(["name", "shared", "dram", "pe_k", "sop_energy_pj", "extra", "notes"]),
    value=st.one_of(bad_types(), st.floats(allow_nan=True), st.integers(-3, 0)),
)
def test_bad_descriptions(key, value):
    desc = _example_description()
    desc[key] = value
    if key == "notes" and isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return
    if key == "name" and isinstance(value, str):
        return
    if key == "sop_energy_pj" and isinstance(value, (int, float)) and math.isfinite(value) and value >= 0:
        if not isinstance(value, bool):
            return
    err = assert_pond_error(hardware_from_description, desc, error=ConfigError)
    assert key in str(err)
    missing = _example_description()
    del missing["pe_c"]
    assert_pond_error(hardware_from_description, missing, match="pe_c", error=ConfigError)
    assert_pond_error(hardware_from_description, value if not isinstance(value, dict) else [], error=ConfigError)


@FAST
@given(value=bad_types())
def test_compute_cycles_arguments(value):
    hw = device_hardware("spinnaker2")
    assert_pond_error(compute_cycles_per_step, value, hw, match="layer", error=ConfigError)
    assert_pond_error(compute_cycles_per_step, Layer("x", "linear", 4, 4), value, match="hardware", error=ConfigError)


def test_pond_explore_device_on_a_nir_file():
    import argparse
    import io

    from rich.console import Console

    from pondlib.cli import explore as cmd

    parser = argparse.ArgumentParser(prog="pond")
    cmd.add_parser(parser.add_subparsers(dest="command"))
    nir = str(Path(__file__).resolve().parents[1] / "data" / "nir" / "cnn" / "cnn_sinabs.nir")  # Sinabs, BSD-3
    buf = io.StringIO()
    args = parser.parse_args(["explore", nir, "--device", "siracusa", "--top", "2"])
    assert cmd.run(Console(file=buf, width=80), args) == 0
    text = buf.getvalue()
    assert "cnn_sinabs.nir: 7 layers, 5 blocks, T = 16 on Siracusa cluster, L1 over L2" in text
    assert "hardware: energies assumed, not calibrated" in text and "Mcycles" in text
    buf = io.StringIO()
    args = parser.parse_args(["explore", nir, "--device", "spinnaker2", "--json", "--memory", "64KiB"])
    assert cmd.run(Console(file=buf, width=80), args) == 0
    import json

    data = json.loads(buf.getvalue())
    assert data["memory_bits"] == 64 * 1024 * 8 and data["hardware_notes"]
    assert all(s["latency_mcycles"] > 0 and s["energy_mj"] > 0 for s in data["schedules"])
    with pytest.raises(PondError, match="no hardware description"):
        cmd.run(Console(file=io.StringIO()), parser.parse_args(["explore", "--device", "xylo"]))
    with pytest.raises(ConfigError, match="--level"):
        cmd.run(Console(file=io.StringIO()), parser.parse_args(["explore", "--level", "L2"]))


def test_the_siracusa_mapper_beside_the_explorer(tmp_path):
    import argparse
    import io

    import numpy as np
    from rich.console import Console

    from pondlib import nn
    from pondlib.cli import explore as cmd
    from pondlib.devices.siracusa.explore_hardware import mapper_traffic
    from pondlib.io import save_network

    net = nn.Sequential(
        nn.Linear(16, 32, weight=np.ones((16, 32))), nn.LIF(32), nn.Linear(32, 10, weight=np.ones((32, 10))), nn.LIF(10)
    )
    got = mapper_traffic(net, 10)
    # per step, one tile per layer: input + weights (with bias and requant words) + output bytes, as the
    # tiler reports them: 16 + 768 + 128 (fc 16->32), 192 + 448 + 96 (LIF 32), 32 + 400 + 40, 60 + 140 + 30
    assert got["traffic_bits"] == 8 * 10 * (912 + 736 + 472 + 230) and got["level"] == "L1"
    assert got["schedule"].startswith("ST-LBL") and "64000 B" in got["schedule"] and len(got["layers"]) == 4
    path = save_network(net, tmp_path / "mlp.pond")
    parser = argparse.ArgumentParser(prog="pond")
    cmd.add_parser(parser.add_subparsers(dest="command"))
    buf = io.StringIO()
    assert (
        cmd.run(
            Console(file=buf, width=80),
            parser.parse_args(["explore", str(path), "--device", "siracusa", "--steps", "10"]),
        )
        == 0
    )
    text = buf.getvalue()
    assert "the siracusa mapper's own choice: ST-LBL" in text and "22.949 KiB over the L1 boundary" in text  # 23,500 B
