"""Hardware as validated data: STEMS's core, its memory sizes, and every problem reported at once."""

from __future__ import annotations

import dataclasses

import pytest

from pondlib.errors import ConfigError
from pondlib.explore import BANK_BITS, MEMORY_PRESETS, Hardware, MemoryLevel, meta_prototype, parse_memory_size


def test_meta_prototype_is_the_core_of_explore_md():
    hw = meta_prototype()
    assert hw.memory_bits == 131_072 * 8 * 8 == 8 * 2**20  # 1 MiB
    assert hw.shared.bandwidth_bits_per_cycle == 1024
    assert (hw.shared.read_energy_pj_per_bit, hw.shared.write_energy_pj_per_bit) == (0.13, 0.175)
    assert (hw.input_buffer.size_bits, hw.weight_buffer.size_bits) == (16 * 1024 * 8, 32 * 1024 * 8)
    assert hw.dram.read_energy_pj_per_bit == pytest.approx(10.94, abs=5e-3)
    assert hw.dram.write_energy_pj_per_bit == pytest.approx(11.72, abs=5e-3)
    assert hw.dram.bandwidth_bits_per_cycle == 64 and hw.dram.size_bits is None
    assert (hw.sop_energy_pj, hw.mac_energy_pj) == (0.07, 0.16)
    assert (hw.pe_k, hw.pe_c, hw.pe_oy) == (32, 2, 16)


@pytest.mark.parametrize(
    "name, bits",
    [
        ("128KB", 1_101_004),
        ("256KB", 2_202_009),
        ("384KB", 3_250_585),
        ("512KB", 4 * BANK_BITS),
        ("2MB", 16 * BANK_BITS),
    ],
)
def test_memory_presets_carry_stems_bank_slack(name, bits):
    assert meta_prototype(name).memory_bits == bits == int(MEMORY_PRESETS[name] * BANK_BITS)


def test_parse_memory_size_units():
    assert parse_memory_size("1MiB") == parse_memory_size("1MB") == 8 * 2**20
    assert parse_memory_size("128 KiB") == 2**20
    assert parse_memory_size("96kib") == 96 * 1024 * 8
    assert parse_memory_size("131072") == parse_memory_size("131072B") == 2**20
    assert parse_memory_size("0.5MiB") == 4 * 2**20
    assert meta_prototype(131_072).memory_bits == 2**20
    assert meta_prototype("1MB").with_memory(2**17, unit="bits").memory_bits == 2**17


@pytest.mark.parametrize("text", ["", "MB", "1 TB", "-1MB", "0", "1e-9B", "one MiB", "1..2KB"])
def test_parse_memory_size_refuses_non_sizes(text):
    with pytest.raises(ConfigError, match="memory size"):
        parse_memory_size(text)


def test_memory_level_collects_every_problem():
    with pytest.raises(ConfigError) as err:
        MemoryLevel(
            "sram",
            size_bits=0,
            bandwidth_bits_per_cycle=float("inf"),
            read_energy_pj_per_bit=-1,
            write_energy_pj_per_bit="0.1",
        )
    assert len(err.value.problems) == 4
    text = str(err.value)
    for field in ("size_bits", "bandwidth_bits_per_cycle", "read_energy_pj_per_bit", "write_energy_pj_per_bit"):
        assert field in text
    assert "pJ per bit" in text  # the fix names the units


def test_hardware_collects_every_problem():
    hw = meta_prototype()
    with pytest.raises(ConfigError) as err:
        dataclasses.replace(
            hw,
            shared=dataclasses.replace(hw.dram),  # unbounded on-chip memory
            weight_buffer="32KB",
            sop_energy_pj=float("nan"),
            mac_energy_pj=-0.1,
            pe_k=0,
        )
    problems = err.value.problems
    assert len(problems) == 5
    assert any("unbounded" in p for p in problems) and any("weight_buffer" in p for p in problems)


def test_hardware_is_frozen_data():
    hw = meta_prototype()
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.sop_energy_pj = 0.0
    assert isinstance(hw, Hardware) and hw == meta_prototype("1MB")
