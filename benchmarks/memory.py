"""Peak memory of a training step: pondlib against Spyx, B = 256, T = 1000, each in a fresh process.

Workload: the network and step of ``benchmarks/train_step.py`` (Linear(64 -> 256) -> LIF(256) ->
Linear(256 -> 10) -> LIF(10), softmax cross-entropy of the spike counts, Adam), at a larger batch and a
longer time: B = 256, T = 1000 by default. Each framework runs in its own child process (so one's
allocations cannot hide in another's peak): it builds the network and the data, notes its resident set
size, then compiles and runs ``--steps`` training steps and reports the peak resident set size of the
process (``ru_maxrss``) and the growth over the size before the first step. The workload's own
(T, B, N) stacks are 262 MB each at these sizes (T B 256 float32 values), the input 65 MB.

Usage::

    python benchmarks/memory.py [--batch 256] [--time-steps 1000] [--steps 2] [--only pondlib,spyx] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "memory.json"
HERE = Path(__file__).resolve().parent


def _rss_mb() -> float:
    """The current resident set size of this process in MB (``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def child(name: str, batch: int, steps_t: int, steps: int) -> dict:
    """Build ``name``'s training step, run ``steps`` steps, return the memory figures (in this process)."""
    import warnings

    import jax

    sys.path.insert(0, str(HERE))
    import train_step as bench

    x, y = bench.make_data(batch, steps_t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step, carry = bench.FRAMEWORKS[name](x, y)
    jax.block_until_ready((x, y, carry))
    before = _rss_mb()
    for _ in range(steps):
        carry, value = step(carry, x, y)
        jax.block_until_ready(value)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3  # kB -> MB
    return {"rss_before_mb": before, "peak_rss_mb": peak, "growth_mb": peak - before, "loss": float(value)}


def run(names: list[str], batch: int, steps_t: int, steps: int) -> dict:
    out = {}
    for name in names:
        cmd = [sys.executable, __file__, "--child", name, "--batch", str(batch), "--time-steps", str(steps_t)]
        cmd += ["--steps", str(steps)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if proc.returncode != 0 or not lines:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            out[name] = {"status": f"failed: {tail}"[:300]}
        else:
            out[name] = {"status": "ok", **json.loads(lines[-1])}
        r = out[name]
        if r["status"] == "ok":
            print(f"{name:10s} peak {r['peak_rss_mb']:8.0f} MB  growth over the built network {r['growth_mb']:8.0f} MB")
        else:
            print(f"{name:10s} {r['status']}")
    if all(out.get(n, {}).get("status") == "ok" for n in ("pondlib", "spyx")):
        out["pondlib_peak_vs_spyx"] = out["pondlib"]["peak_rss_mb"] / out["spyx"]["peak_rss_mb"]
        out["pondlib_growth_vs_spyx"] = out["pondlib"]["growth_mb"] / out["spyx"]["growth_mb"]
        print(f"pondlib / spyx: peak {out['pondlib_peak_vs_spyx']:.2f}x, growth {out['pondlib_growth_vs_spyx']:.2f}x")
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--time-steps", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=2, help="training steps per process")
    ap.add_argument("--only", default="pondlib,spyx", help="comma-separated frameworks of train_step.py")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--json", default=str(RESULTS), help="where to write the results ('' for nowhere)")
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.batch, args.time_steps, args.steps)))
        return {}
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    results = run(names, args.batch, args.time_steps, args.steps)
    if args.json:
        doc = {
            "workload": {"batch": args.batch, "time_steps": args.time_steps, "steps": args.steps},
            "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count()},
            "results": results,
        }
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
