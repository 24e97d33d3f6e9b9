"""First runs: what a fresh process waits for compilation, with an empty kernel cache (a new installation)
and with a warm one, for pondlib's compiled kernels built from C (the default where a C compiler exists)
and their numba twins (``PONDLIB_CC=none``), beside Spyx's first call.

Each measurement is a new Python process with its own empty cache folders (``PONDLIB_CACHE_DIR`` for the
C kernels, ``NUMBA_CACHE_DIR`` for numba's). Every row is measured in ``--pairs`` cold/warm pairs (a cold
process in new cache folders, then a warm one finding what it left), interleaved so that a busy spell of
the machine touches both sides; the medians over the pairs are reported (``added`` is the median of the
pairs' cold-minus-warm differences). Rows:

- ``first net(x)``: the network of ``benchmarks/inference.py`` (feed-forward, B = 32, T = 200) built,
  then the time of its first call (compilation included) and of its second (the call alone); their
  difference is what the first call adds. ``import`` is the time to import pondlib and JAX.
- ``first training step``: ``pondlib.training.fit`` for one epoch of 2 batches of 32 on that workload
  (the training kernels' compilation plus XLA's), first epoch against the second's time.
- ``pond demo``: the whole command (``pondlib.cli.main``, as the ``pond`` script runs it), the time its main
  thread spent in ``pondlib.cprogram.native.load`` (waiting for kernel builds: what compilation adds to
  the command beyond sharing the cores) and the lines of its output that time compilation.
- ``spyx first call``: Spyx's jitted network (when importable), first call against the second.

Usage::

    python benchmarks/first_run.py [--pairs 3] [--engines c,numba] [--skip-demo] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "first_run.json"

_NET = r"""
import time
t0 = time.perf_counter()
import jax, jax.numpy as jnp
import sys
sys.path.insert(0, {bench!r})
import inference as bench
t1 = time.perf_counter()
f = bench.build_pondlib(False, fuse=True)
x = bench.make_input(32)
jax.block_until_ready(x)
t2 = time.perf_counter()
jax.block_until_ready(f(x))
t3 = time.perf_counter()
jax.block_until_ready(f(x))
t4 = time.perf_counter()
from pondlib.nn import native
print("RESULT", t1 - t0, t3 - t2, t4 - t3, native.chain_engine())
"""

_FIT = r"""
import time
import jax, jax.numpy as jnp, numpy as np
import sys
sys.path.insert(0, {bench!r})
import inference as bench
from pondlib import nn, training
k1, k2 = jax.random.split(jax.random.PRNGKey(0))
net = nn.Sequential(nn.Linear(64, 256, key=k1), nn.LIF(256), nn.Linear(256, 10, key=k2), nn.LIF(10))
x = np.asarray(bench.make_input(64))
y = np.arange(64) % 10
t0 = time.perf_counter()
net, hist = training.fit(net, (x, y), epochs=1, batch_size=32, progress=False)
t1 = time.perf_counter()
net, hist = training.fit(net, (x, y), epochs=1, batch_size=32, progress=False)
t2 = time.perf_counter()
print("RESULT", t1 - t0, t2 - t1)
"""

_DEMO = r"""
import sys, threading, time
from pondlib.cprogram import native
_load = native.load
waited = [0.0, 0]
def load(*args, **kwargs):  # the time the command's own thread spends in native.load (waiting for builds)
    t = time.perf_counter()
    try:
        return _load(*args, **kwargs)
    finally:
        if threading.current_thread() is threading.main_thread():
            waited[0] += time.perf_counter() - t
            waited[1] += 1
native.load = load
from pondlib.cli import main
code = main(["demo", "--out", {out!r}])
print("WAITED", waited[0], waited[1], file=sys.stderr)
sys.exit(code)
"""

_SPYX = r"""
import time, sys
sys.path.insert(0, {bench!r})
import jax
import inference as bench
f = bench.build_spyx(False)
x = bench.make_input(32)
jax.block_until_ready(x)
t0 = time.perf_counter()
jax.block_until_ready(f(x))
t1 = time.perf_counter()
jax.block_until_ready(f(x))
t2 = time.perf_counter()
print("RESULT", t1 - t0, t2 - t1)
"""


def _env(cache: Path, engine: str) -> dict:
    env = dict(os.environ, PONDLIB_CACHE_DIR=str(cache / "pondlib"), NUMBA_CACHE_DIR=str(cache / "numba"))
    env["MPLBACKEND"] = "Agg"
    if engine == "numba":
        env["PONDLIB_CC"] = "none"
    return env


def _python(code: str, env: dict, cwd: Path) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    line = [s for s in out.stdout.splitlines() if s.startswith("RESULT")]
    if out.returncode != 0 or not line:
        raise RuntimeError(f"failed ({out.returncode}): {out.stderr[-1500:]}")
    return line[-1].split()[1:]


def _net_pair(engine: str) -> dict:
    """One cold and one warm process of the first net(x) (the second finds the first one's cache)."""
    bench = str(ROOT / "benchmarks")
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        for label in ("cold", "warm"):
            imp, first, second, used = _python(_NET.format(bench=bench), _env(cache, engine), cache)
            out[label] = {
                "import_s": float(imp),
                "first_call_s": float(first),
                "second_call_s": float(second),
                "added_s": float(first) - float(second),
                "engine": used,
            }
    return out


def _fit_pair(engine: str) -> dict:
    """One cold and one warm process of the first training epoch."""
    bench = str(ROOT / "benchmarks")
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        for label in ("cold", "warm"):
            first, second = _python(_FIT.format(bench=bench), _env(cache, engine), cache)
            out[label] = {"first_epoch_s": float(first), "second_epoch_s": float(second)}
            out[label]["added_s"] = float(first) - float(second)
    return out


def _demo_pair(engine: str) -> dict:
    """``pond demo`` (``pondlib.cli.main``, as the ``pond`` script runs it) in a fresh cache, then again with
    the cache it left: total time of the process, the time its main thread spent in
    ``pondlib.cprogram.native.load`` (waiting for kernel builds; milliseconds when warm) and the lines
    that time compilation."""
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        for label in ("cold", "warm"):
            t0 = time.perf_counter()
            run = subprocess.run(
                [sys.executable, "-c", _DEMO.format(out=str(cache / "out"))],
                env=_env(cache, engine),
                cwd=cache,
                capture_output=True,
                text=True,
                timeout=1800,
            )
            total = time.perf_counter() - t0
            lines = [s.strip() for s in run.stdout.splitlines() if re.search(r"Compiling|Evaluating|done in", s)]
            waited = [s.split() for s in run.stderr.splitlines() if s.startswith("WAITED")]
            out[label] = {
                "status": run.returncode,
                "total_s": total,
                "load_wait_s": float(waited[-1][1]) if waited else None,
                "lines": lines,
            }
    return out


def _medians(pairs: list[dict], key: str) -> dict:
    """The medians over ``pairs`` of the cold and warm ``key`` and of their differences."""
    cold = [p["cold"][key] for p in pairs]
    warm = [p["warm"][key] for p in pairs]
    return {
        "cold_median_s": statistics.median(cold),
        "warm_median_s": statistics.median(warm),
        "cold_minus_warm_median_s": statistics.median(c - w for c, w in zip(cold, warm, strict=True)),
        "cold_minus_warm_each_s": [c - w for c, w in zip(cold, warm, strict=True)],
    }


def first_calls(engine: str, pairs: int = 1, with_demo: bool = True) -> dict:
    """Cold then warm, ``pairs`` times: the first net(x), the first training epoch and (``with_demo``)
    the whole ``pond demo``; each row's pairs and medians."""
    out: dict = {}
    rows = {"net": _net_pair, "fit": _fit_pair, **({"demo": _demo_pair} if with_demo else {})}
    for row, measure in rows.items():
        runs = [measure(engine) for _ in range(pairs)]
        key = {"net": "added_s", "fit": "added_s", "demo": "total_s"}[row]
        out[row] = {"pairs": runs, **_medians(runs, key)}
        if row != "demo":  # what the first call adds, cold and warm (medians)
            out[row]["added_cold_median_s"] = out[row].pop("cold_median_s")
            out[row]["added_warm_median_s"] = out[row].pop("warm_median_s")
    return out


def spyx_first() -> dict:
    try:
        import spyx  # noqa: F401
    except ImportError:
        return {"status": "not installed"}
    first, second = _python(_SPYX.format(bench=str(ROOT / "benchmarks")), dict(os.environ), ROOT)
    return {"status": "ok", "first_call_s": float(first), "second_call_s": float(second)}


def _report(engine: str, res: dict) -> None:
    """Print one engine's rows: every pair, then the medians."""
    for i, pair in enumerate(res["net"]["pairs"]):
        for label, r in pair.items():
            print(
                f"{engine:5s} net {label} #{i}: first net(x) {r['first_call_s']:6.2f} s, second"
                f" {r['second_call_s']:6.3f} s, added {r['added_s']:6.2f} s (import {r['import_s']:.2f} s;"
                f" engine {r['engine']})"
            )
    for i, pair in enumerate(res["fit"]["pairs"]):
        for label, r in pair.items():
            print(
                f"{engine:5s} fit {label} #{i}: first epoch {r['first_epoch_s']:6.2f} s, second"
                f" {r['second_epoch_s']:6.2f} s, added {r['added_s']:6.2f} s"
            )
    for row, what in (("net", "first net(x) adds"), ("fit", "first epoch adds")):
        m = res[row]
        print(
            f"{engine:5s} {what}: cold {m['added_cold_median_s']:.2f} s, warm {m['added_warm_median_s']:.2f} s"
            f" (medians); cold minus warm {m['cold_minus_warm_median_s']:.2f} s"
        )
    if "demo" in res:
        for i, pair in enumerate(res["demo"]["pairs"]):
            for label, r in pair.items():
                wait = "" if r.get("load_wait_s") is None else f", waited for builds {r['load_wait_s']:.2f} s"
                print(f"{engine:5s} demo {label} #{i}: {r['total_s']:6.1f} s (exit {r['status']}{wait})")
                for line in r["lines"]:
                    print(f"        {line[:110]}")
        m = res["demo"]
        waits = [p["cold"]["load_wait_s"] for p in m["pairs"] if p["cold"]["load_wait_s"] is not None]
        if waits:
            m["cold_load_wait_median_s"] = statistics.median(waits)
            print(
                f"{engine:5s} pond demo cold: main thread waited in native.load {m['cold_load_wait_median_s']:.2f} s"
                f" (median of {', '.join(f'{w:.2f}' for w in waits)})"
            )
        each = ", ".join(f"{d:+.2f}" for d in m["cold_minus_warm_each_s"])
        print(
            f"{engine:5s} pond demo: cold {m['cold_median_s']:.2f} s, warm {m['warm_median_s']:.2f} s (medians);"
            f" cold minus warm {m['cold_minus_warm_median_s']:+.2f} s (median of {each})"
        )


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=3, help="cold/warm pairs per row (default 3; medians reported)")
    ap.add_argument("--engines", default="c,numba", help="comma-separated: c (the default build), numba")
    ap.add_argument("--skip-demo", action="store_true", help="leave out the pond demo runs")
    ap.add_argument("--json", default=str(RESULTS), help="where to write the results ('' for nowhere)")
    args = ap.parse_args(argv)
    if args.pairs < 1:
        ap.error(f"--pairs must be at least 1, got {args.pairs}")
    engines = [e for e in args.engines.split(",") if e]
    if not engines or any(e not in ("c", "numba") for e in engines):
        ap.error(f"--engines takes c and/or numba, got {args.engines!r}")
    doc: dict = {
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(), "loadavg_1min": os.getloadavg()[0]},
        "pairs": args.pairs,
    }
    for engine in engines:
        doc[engine] = first_calls(engine, args.pairs, not args.skip_demo)
        _report(engine, doc[engine])
    doc["spyx"] = spyx_first()
    if doc["spyx"].get("status") == "ok":
        s = doc["spyx"]
        print(f"spyx first call {s['first_call_s']:.2f} s, second {s['second_call_s']:.3f} s")
    doc["machine"]["loadavg_1min_end"] = os.getloadavg()[0]
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    return doc


if __name__ == "__main__":
    main()
