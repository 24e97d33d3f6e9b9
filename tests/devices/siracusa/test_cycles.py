"""Cycle model: the tutorial's anchors within 15 %, and the per-layer table's structure."""

from __future__ import annotations

import dataclasses

import numpy as np

from pondlib.devices.siracusa import (
    DEFAULT_CYCLES,
    TUTORIAL_ANCHORS,
    QGemm,
    RequantShift,
    SiracusaConfig,
    cycle_table,
    decoder_proxy,
    format_cycle_table,
    leaky_relu_series,
)


def test_leaky_relu_series_within_15_percent():
    model = leaky_relu_series()
    for key, cycles in TUTORIAL_ANCHORS["leaky_relu"].items():
        assert abs(model[key] / cycles - 1) < 0.15, (key, model[key], cycles)


def test_one_to_eight_core_speedup_within_15_percent():
    cfg = decoder_proxy()
    t1 = sum(r.total for r in cycle_table(cfg, cores=1, tiled=False))
    t8 = sum(r.total for r in cycle_table(cfg, cores=8, tiled=False))
    assert abs((t1 / t8) / TUTORIAL_ANCHORS["speedup_1_to_8"] - 1) < 0.15
    # the speed-up is below 8 because the shared L2 port saturates: with a very wide port it rises
    wide = dataclasses.replace(DEFAULT_CYCLES, l2_port_bytes=1e9)
    t8w = sum(r.total for r in cycle_table(cfg, cores=8, tiled=False, params=wide))
    assert t1 / t8w > t1 / t8 + 0.5


def test_table_tiling_buffering_and_weight_memory():
    g = QGemm("fc", weight=np.zeros((512, 512), dtype=int), requant=RequantShift(mul=1))
    cfg = SiracusaConfig(layers=(g,), n_input=512, rows=32)
    single = cycle_table(cfg.replace(buffering=1, l1_budget=64_000))[0]
    double = cycle_table(cfg.replace(buffering=2, l1_budget=128_000))[0]  # the same tiles, twice the L1
    assert single.n_tiles == double.n_tiles > 1
    assert double.total < single.total and double.kernel > 0  # overlap hides the DMA
    assert single.dma_in > 0 and single.kernel > 0 and single.dma_out > 0
    npu = cycle_table(cfg.replace(npu_layers=("fc",)))[0]
    wmem = cycle_table(cfg.replace(npu_layers=("fc",), use_weight_memory=True))[0]
    assert npu.unit == "npu" and wmem.dma_in < npu.dma_in / 2  # weights are not DMAed
    text = format_cycle_table([single])
    assert text.splitlines()[0].split()[:3] == ["layer", "kind", "unit"] and "fc" in text
    one = cycle_table(cfg, cores=1, simd=False)[0]
    assert one.total > double.total * 4
