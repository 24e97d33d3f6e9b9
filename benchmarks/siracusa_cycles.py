"""Benchmark: the Siracusa cycle model against the Deeploy tutorial's numbers, and a per-layer table.

Prints (1) the int8 LeakyReLU series over 65,536 values (1 core, 8 cores, tiled, tiled + SIMD) next to
the tutorial's cycles, (2) the 1 -> 8 core speed-up on the GEMV-dominated decoder proxy next to the
tutorial's 5.2x (microLlama128), (3) a per-layer cycle table (DMA in, kernel, DMA out) of the proxy
and of a 64-64-32-10 int8 MLP in four settings. Writes ``benchmarks/results/siracusa_cycles.json``.

Note: the LeakyReLU anchors and the speed-up are *calibration points* of the model (see
``pondlib.devices.siracusa.cycles``), so their agreement checks the implementation, not the physics.

Run: ``python benchmarks/siracusa_cycles.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

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


def mlp_config() -> SiracusaConfig:
    rq = RequantShift(mul=1)
    sizes = (64, 64, 32, 10)
    layers = tuple(
        QGemm(f"fc{i}", weight=np.zeros((a, b), dtype=np.int64), requant=rq)
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))
    )
    return SiracusaConfig(layers=layers, n_input=64)


def main() -> dict:
    result: dict = {"params": DEFAULT_CYCLES.__dict__, "leaky_relu": {}, "speedup": {}, "tables": {}}
    print("int8 LeakyReLU, 65,536 values")
    print(f"  {'setting':<22} {'model':>11} {'tutorial':>11} {'error':>8}")
    for key, model in leaky_relu_series().items():
        ref = TUTORIAL_ANCHORS["leaky_relu"][key]
        err = 100.0 * (model / ref - 1)
        result["leaky_relu"][key] = {"model": round(model), "tutorial": ref, "error_pct": round(err, 3)}
        print(f"  {key:<22} {model:>11,.0f} {ref:>11,} {err:>7.2f}%")

    proxy = decoder_proxy()
    t1 = sum(r.total for r in cycle_table(proxy, cores=1, tiled=False))
    t8 = sum(r.total for r in cycle_table(proxy, cores=8, tiled=False))
    ref = TUTORIAL_ANCHORS["speedup_1_to_8"]
    err = 100.0 * ((t1 / t8) / ref - 1)
    result["speedup"] = {
        "proxy_1_core": round(t1),
        "proxy_8_cores": round(t8),
        "model": round(t1 / t8, 3),
        "tutorial": ref,
        "error_pct": round(err, 2),
        "note": "decoder proxy (d=64, ffn=256, 4 blocks, context 128), untiled in L2; "
        "the tutorial's microLlama128 is 16.1 M -> 3.1 M cycles",
    }
    print(
        f"\n1 -> 8 cores (decoder proxy, untiled in L2): {t1:,.0f} -> {t8:,.0f} cycles, "
        f"speed-up {t1 / t8:.2f}x vs tutorial {ref}x ({err:+.1f}%)"
    )

    mlp = mlp_config()
    for label, kw in (
        ("1 core, L2", dict(cores=1, simd=False, tiled=False)),
        ("8 cores, L2", dict(cores=8, simd=False, tiled=False)),
        ("8 cores, tiled", dict(cores=8, simd=False, tiled=True)),
        ("8 cores, tiled, SIMD", dict(cores=8, simd=True, tiled=True)),
    ):
        rows = cycle_table(mlp, **kw)
        result["tables"][f"mlp: {label}"] = [r.__dict__ for r in rows]
        print(f"\nMLP 64-64-32-10, {label}\n{format_cycle_table(rows)}")
    rows = cycle_table(proxy, cores=8, tiled=False)
    result["tables"]["decoder proxy: 8 cores, L2"] = [r.__dict__ for r in rows]
    print(f"\ndecoder proxy, 8 cores, L2 (first block)\n{format_cycle_table(rows[:9])}")

    out = Path(__file__).resolve().parent / "results" / "siracusa_cycles.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=float))
    print(f"\nwrote {out}")
    return result


if __name__ == "__main__":
    main()
