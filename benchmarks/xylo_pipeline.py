"""Time the Xylo deployment pipeline at full chip size: as_graph + mapper + channel_quantize + config.

Network: Linear(16 -> 1000) -> LIF(1000, recurrent, ~5 % dense w_rec, pruned to the chip's fan-out of
64) -> Linear(1000 -> 8) -> LIF(8). Each stage is timed separately (median of 20 runs after one
warm-up); the table and ``benchmarks/results/xylo_pipeline.json`` give the medians in milliseconds.
The reference tool (Rockpool 3.1 mapper + quantizer + config) takes about 2.7 s for this network.

Run: ``python benchmarks/xylo_pipeline.py [--repeats 20] [--hidden 1000]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from pondlib import nn
from pondlib.devices.xylo.config import config_from_specification
from pondlib.devices.xylo.mapper import mapper
from pondlib.transform import channel_quantize

TARGET_MS = 50.0
REFERENCE_MS = 2700.0


def build(n_hidden: int, density: float = 0.05, seed: int = 0) -> nn.Sequential:
    rng = np.random.default_rng(seed)
    w_rec = rng.normal(scale=0.1, size=(n_hidden, n_hidden)) * (rng.random((n_hidden, n_hidden)) < density)
    # keep at most 63 non-zeros per row: the chip allows a recurrent fan-out of 64
    keep = np.argsort(rng.random((n_hidden, n_hidden)), axis=1)[:, :63]
    mask = np.zeros_like(w_rec, dtype=bool)
    np.put_along_axis(mask, keep, True, axis=1)
    w_rec = w_rec * mask
    return nn.Sequential(
        nn.Linear(16, n_hidden, weight=rng.normal(scale=0.1, size=(16, n_hidden))),
        nn.LIF(n_hidden, tau_mem=0.02, tau_syn=0.01, w_rec=w_rec),
        nn.Linear(n_hidden, 8, weight=rng.normal(scale=0.1, size=(n_hidden, 8))),
        nn.LIF(8, tau_mem=0.02, tau_syn=0.01),
    )


def run(n_hidden: int, repeats: int) -> dict:
    net = build(n_hidden)
    stages = {"as_graph": [], "mapper": [], "channel_quantize": [], "config_from_specification": []}
    for i in range(repeats + 1):  # the first run is the warm-up
        t0 = time.perf_counter()
        g = net.as_graph()
        t1 = time.perf_counter()
        spec = mapper(g)
        t2 = time.perf_counter()
        q = channel_quantize(spec)
        t3 = time.perf_counter()
        config, ok, message = config_from_specification(q)
        t4 = time.perf_counter()
        if not ok:
            raise RuntimeError(message)
        if i:
            for name, dt in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                stages[name].append(dt * 1e3)
    med = {k: statistics.median(v) for k, v in stages.items()}
    med["total"] = sum(med.values())
    med["total_without_as_graph"] = med["total"] - med["as_graph"]
    return {
        "n_hidden": n_hidden,
        "repeats": repeats,
        "median_ms": med,
        "target_ms": TARGET_MS,
        "reference_tool_ms": REFERENCE_MS,
        "nonzero_w_rec": int(np.count_nonzero(q.weights_rec)),
        "python": platform.python_version(),
        "machine": platform.machine(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--hidden", type=int, default=1000)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "xylo_pipeline.json"))
    args = ap.parse_args()
    res = run(args.hidden, args.repeats)
    print(f"Xylo pipeline, N_hidden = {res['n_hidden']}, median of {res['repeats']} (ms)")
    print(f"{'stage':<28}{'ms':>10}")
    for name, ms in res["median_ms"].items():
        print(f"{name:<28}{ms:>10.1f}")
    print(f"{'target (total)':<28}{TARGET_MS:>10.1f}")
    print(f"{'reference tool':<28}{REFERENCE_MS:>10.1f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
