"""Where event-driven inference pays: the fused chain's kernel with gathered (sparse) and dense products,
against the XLA loop and Spyx, over input spike densities, in one process.

Workload: the network of ``benchmarks/inference.py`` (Linear(64 -> 256) -> LIF(256) -> Linear(256 -> 10)
-> LIF(10), feed-forward), B = 256, T = 200, Bernoulli input spikes at densities 1 % ... 50 % per step.
Rows (``pondlib.nn.fused.inference_path``):

- ``sparse``: the kernel, every product over the gathered non-zero entries of its input row;
- ``dense``: the kernel, every product over all entries (the same results bit for bit);
- ``auto``: the kernel, each product's loop chosen from the measured density of the tile's rows;
- ``xla``: the XLA loop (one batched product per chunk of steps);
- ``spyx``: Spyx's ``CuBaLIF`` network (dense products), when importable.

Timing: interleaved rounds, median wall time per call and median CPU time per call (the process's CPU
seconds: on a shared machine the work a call did, less disturbed by other processes than the wall time).
The crossover is the lowest density at which the sparse kernel is no faster than the dense one (by the
CPU median), and the same against the XLA loop.

Usage::

    python benchmarks/sparsity.py [--densities 0.01,0.02,0.05,0.1,0.2,0.3,0.5] [--rounds 3] [--calls 3]
                                  [--batch 256] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import warnings
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import inference as bench  # noqa: E402 - the workload and its builders

RESULTS = Path(__file__).resolve().parent / "results" / "sparsity.json"
PATHS = ("sparse", "dense", "auto", "xla")


def make_input(batch: int, density: float, seed: int = 0) -> jax.Array:
    """Bernoulli input spikes (B, T, N_in) at ``density`` per step and channel, float32."""
    key = jax.random.PRNGKey(seed)
    return jax.random.bernoulli(key, density, (batch, bench.STEPS_T, bench.N_IN)).astype(np.float32)


def hidden_density(x: jax.Array) -> float:
    """The fraction of hidden neurons (256) that spike per step on ``x``: the density of the second product's input."""
    net = bench.build_pondlib(False, fuse=True, raw=True)
    _, _, rec = net(x[:32], record=True)
    return float((np.asarray(rec["1_LIF/spikes"]) > 0).mean())


def run(densities: list[float], batch: int, rounds: int, calls: int) -> dict:
    rows = {p: bench.build_pondlib(False, fuse=True, path=p) for p in PATHS}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows["spyx"] = bench.build_spyx(False)
    except ImportError:
        print("spyx: not installed")
    out: dict = {}
    for density in densities:
        x = make_input(batch, density)
        ys = {name: np.asarray(f(x)) for name, f in rows.items()}  # compile; check the kernel's paths agree
        same = all(np.array_equal(ys["sparse"], ys[p]) for p in ("dense", "auto"))
        cpu: dict = {}
        times = bench.time_rows(rows, x, rounds, calls, cpu)
        res = {
            "input_density": float(np.asarray(x).mean()),
            "hidden_density": hidden_density(x),
            "kernel_paths_bit_equal": same,
            "spikes_equal_xla": bool(np.array_equal(ys["sparse"], ys["xla"])),
        }
        for name in rows:
            res[name] = {
                "median_ms": float(np.median(times[name])) * 1e3,
                "cpu_median_ms": float(np.median(cpu[name])) * 1e3,
                "samples_per_s": batch / float(np.median(times[name])),
            }
        out[f"{density:g}"] = res
        line = "  ".join(f"{n} {res[n]['median_ms']:7.1f} ms (cpu {res[n]['cpu_median_ms']:6.1f})" for n in rows)
        print(f"density {density:5.2f} (hidden {res['hidden_density']:.2f}): {line}  equal={same}", flush=True)
    return out


def crossover(results: dict, a: str, b: str) -> str | None:
    """The lowest density at which row ``a`` is no faster than row ``b`` (CPU medians), or None."""
    for density, r in results.items():
        if r[a]["cpu_median_ms"] >= r[b]["cpu_median_ms"]:
            return density
    return None


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--densities", default="0.01,0.02,0.05,0.1,0.2,0.3,0.5")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--json", default=str(RESULTS), help="where to write the results ('' for nowhere)")
    args = ap.parse_args(argv)
    densities = [float(d) for d in args.densities.split(",") if d.strip()]
    results = run(densities, args.batch, args.rounds, args.calls)
    summary = {
        "sparse_stops_beating_dense_at": crossover(results, "sparse", "dense"),
        "sparse_stops_beating_xla_at": crossover(results, "sparse", "xla"),
        "auto_stops_beating_xla_at": crossover(results, "auto", "xla"),
    }
    print(summary)
    if args.json:
        doc = {
            "workload": {"batch": args.batch, "time_steps": bench.STEPS_T, "network": "64-256-10 CuBa LIF"},
            "machine": {
                "platform": platform.platform(),
                "jax": jax.__version__,
                "cpu_count": os.cpu_count(),
                "loadavg_1min": os.getloadavg()[0],
                "note": "2-core machine shared with other users while measured: compare within a density",
            },
            "summary": summary,
            "results": results,
        }
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
