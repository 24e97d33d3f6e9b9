"""First runs: what a fresh process waits for compilation, with an empty kernel cache (a new installation)
and with a warm one, for pondlib's compiled kernels built from C (the default where a C compiler exists)
and their numba twins (``PONDLIB_CC=none``), beside Spyx's first call.

Each measurement is a new Python process with its own empty cache folders (``PONDLIB_CACHE_DIR`` for the
C kernels, ``NUMBA_CACHE_DIR`` for numba's). Rows:

- ``first net(x)``: the network of ``benchmarks/inference.py`` (feed-forward, B = 32, T = 200) built,
  then the time of its first call (compilation included) and of its second (the call alone); their
  difference is what the first call adds. ``import`` is the time to import pondlib and JAX.
- ``first training step``: ``pondlib.training.fit`` for one epoch of 2 batches of 32 on that workload
  (the training kernels' compilation plus XLA's), first epoch against the second's time.
- ``pond demo``: the whole command, and the lines of its output that time compilation.
- ``spyx first call``: Spyx's jitted network (when importable), first call against the second.

Usage::

    python benchmarks/first_run.py [--skip-demo] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
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


def first_calls(engine: str) -> dict:
    """Cold then warm: the first net(x) and the first training epoch of fresh processes."""
    bench = str(ROOT / "benchmarks")
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        for label in ("cold", "warm"):  # the second process finds the first one's cache
            imp, first, second, used = _python(_NET.format(bench=bench), _env(cache, engine), cache)
            out[f"net_{label}"] = {
                "import_s": float(imp),
                "first_call_s": float(first),
                "second_call_s": float(second),
                "added_s": float(first) - float(second),
                "engine": used,
            }
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        for label in ("cold", "warm"):
            first, second = _python(_FIT.format(bench=bench), _env(cache, engine), cache)
            out[f"fit_{label}"] = {"first_epoch_s": float(first), "second_epoch_s": float(second)}
            out[f"fit_{label}"]["added_s"] = float(first) - float(second)
    return out


def demo(engine: str) -> dict:
    """``pond demo`` in a fresh cache, then again with the cache it left: total time and the lines that
    time compilation."""
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        for label in ("cold", "warm"):
            t0 = time.perf_counter()
            run = subprocess.run(
                ["pond", "demo", "--out", str(cache / "out")],
                env=_env(cache, engine),
                cwd=cache,
                capture_output=True,
                text=True,
                timeout=1800,
            )
            total = time.perf_counter() - t0
            lines = [s.strip() for s in run.stdout.splitlines() if re.search(r"Compiling|Evaluating|done in", s)]
            out[label] = {"status": run.returncode, "total_s": total, "lines": lines}
    return out


def spyx_first() -> dict:
    try:
        import spyx  # noqa: F401
    except ImportError:
        return {"status": "not installed"}
    first, second = _python(_SPYX.format(bench=str(ROOT / "benchmarks")), dict(os.environ), ROOT)
    return {"status": "ok", "first_call_s": float(first), "second_call_s": float(second)}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skip-demo", action="store_true", help="leave out the two pond demo runs per engine")
    ap.add_argument("--json", default=str(RESULTS), help="where to write the results ('' for nowhere)")
    args = ap.parse_args(argv)
    doc: dict = {
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(), "loadavg_1min": os.getloadavg()[0]}
    }
    for engine in ("c", "numba"):
        res = first_calls(engine)
        if not args.skip_demo:
            res["demo"] = demo(engine)
        doc[engine] = res
        for key in ("net_cold", "net_warm"):
            r = res[key]
            print(
                f"{engine:5s} {key:8s}: first net(x) {r['first_call_s']:6.2f} s, second {r['second_call_s']:6.3f} s,"
                f" added {r['added_s']:6.2f} s (import {r['import_s']:.2f} s; engine {r['engine']})"
            )
        for key in ("fit_cold", "fit_warm"):
            r = res[key]
            print(
                f"{engine:5s} {key:8s}: first epoch {r['first_epoch_s']:6.2f} s, second {r['second_epoch_s']:6.2f} s,"
                f" added {r['added_s']:6.2f} s"
            )
        for label, r in res.get("demo", {}).items():
            print(f"{engine:5s} demo {label}: {r['total_s']:6.1f} s (exit {r['status']})")
            for line in r["lines"]:
                print(f"        {line[:110]}")
    doc["spyx"] = spyx_first()
    if doc["spyx"].get("status") == "ok":
        s = doc["spyx"]
        print(f"spyx first call {s['first_call_s']:.2f} s, second {s['second_call_s']:.3f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    return doc


if __name__ == "__main__":
    main()
