"""Benchmark: the generated C (pondlib.codegen) against pondlib's own simulators, per time step.

Workloads:

* **W1 Xylo** (``benchmarks/xylo_sim.py``): a random legal Xylo configuration with N = 1000 hidden neurons,
  16 inputs, 8 outputs, Poisson input at 0.05 events per channel per step -- ``xylo`` numerics.
* **digits**: the demo network ``Linear(16, 128) -> LIF -> Linear(128, 10) -> LIF`` (random weights; the
  cost per step does not depend on training) on the scikit-learn digits events, in every numerics: the float
  model (``float32``), and mapped to Xylo, SpiNNaker2 (``one_spike_network``) and Siracusa (``drop_synapse``).

Measured per workload and numerics (medians of ``--repeats``):

* host C: ns per step of ``<name>_step`` (cc -O2, the host flags of pondlib.codegen.toolchain) in a timing
  loop (a small ``main`` this script compiles, ``clock_gettime`` around T steps, one sample);
* pondlib: ns per step of the simulator on one sample (the float model jitted; XyloSim, SpiNNaker2Sim,
  SiracusaSim), after a warm-up call;
* instructions per step on Cortex-M4F and RV32IMC (pondlib.codegen.cross, unicorn), and the linked flash/RAM;
* parity: the host C output equals the simulator's (bit for bit; float32: number of differing outputs).

Side by side with ``snn-mlir`` (PyPI, NIR in, C out; not a pondlib dependency): which shared NIR files
(tests/data/nir) each tool accepts. snn-mlir accepts a file when its front-end check passes
(``snn_mlir.check(path).ok`` when ``snn_mlir`` is importable here, else the exit status of
``PATH check FILE`` for an executable given with ``--snn-mlir PATH``; install it in a separate venv:
``python3 -m venv /tmp/snnmlir && /tmp/snnmlir/bin/pip install snn-mlir``). pondlib accepts a file when
``pondlib.interop.nir.load_nir`` imports it and ``pondlib.codegen.generate(..., numerics="float32")`` emits it
(time steps from :data:`NIR_DT` where the file's convention does not store one). The reason for every
refusal is kept. Without either way to run snn-mlir the table has pondlib's column only.

Run: ``python benchmarks/codegen.py [--repeats 3] [--steps 2000] [--isa-steps 3] [--snn-mlir PATH]``; with
``--nir-only`` just the NIR table (merged into an existing results file). Prints the tables and writes
``benchmarks/results/codegen.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

_TIMING_MAIN = r"""/* pondlib benchmarks/codegen.py: time NET_step over T steps of one sample. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "NET.h"

int main(int argc, char **argv)
{
    if (argc != 3) return 2;
    FILE *in = fopen(argv[1], "rb");
    if (!in) return 2;
    int32_t dims[2];
    if (fread(dims, sizeof dims[0], 2, in) != 2) return 2;
    size_t n = (size_t)dims[1] * UPPER_N_IN;
    NET_in_t *x = malloc((n ? n : 1) * sizeof *x);
    if (!x || fread(x, sizeof *x, n, in) != n) return 2;
    fclose(in);
    int reps = atoi(argv[2]);
    NET_out_t y[UPPER_N_OUT > 0 ? UPPER_N_OUT : 1];
    double best = 1e30;
    long checksum = 0;
    for (int r = 0; r < reps; ++r) {
        struct timespec a, b;
        NET_reset();
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (int32_t t = 0; t < dims[1]; ++t) {
            NET_step(x + (size_t)t * UPPER_N_IN, y);
            checksum += (long)y[0];
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / dims[1];
        if (ns < best) best = ns;
    }
    printf("%.3f %ld\n", best, checksum);
    free(x);
    return 0;
}
"""


def time_host_c(program, x: np.ndarray, directory: Path, repeats: int) -> float:
    """Best-of-``repeats`` ns per step of the program's step function on the host (x: (T, N_in))."""
    from pondlib.codegen.toolchain import HOST_FLAGS, find_cc

    out = program.write(directory)
    (out / "timing.c").write_text(_TIMING_MAIN.replace("NET", program.name).replace("UPPER", program.name.upper()))
    exe = out / "timing"
    cmd = [find_cc(), *HOST_FLAGS, "-O2", "-o", str(exe), "timing.c", f"{program.name}.c"]
    subprocess.run(cmd, cwd=out, check=True, capture_output=True, text=True)
    data = np.ascontiguousarray(x.astype(program.io.in_dtype))
    (out / "in.bin").write_bytes(np.array([1, len(x)], "<i4").tobytes() + data.tobytes())
    res = subprocess.run([str(exe), str(out / "in.bin"), str(repeats)], check=True, capture_output=True, text=True)
    return float(res.stdout.split()[0])


def median_ns_per_step(fn, steps: int, repeats: int) -> float:
    fn()  # warm-up (compiles the kernels)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) / steps * 1e9


def workloads(steps: int):
    """``(workload, numerics, model, x (1, T, N_in) for the simulator, simulate(x) -> y, to_c(x) -> C input)``."""
    import jax
    from xylo_sim import N_IN, RATE, benchmark_config

    from pondlib.cli.demo_network import demo_network, one_spike_network
    from pondlib.datasets import load_digits_events
    from pondlib.devices.xylo.sim import XyloSim

    rng = np.random.default_rng(0)
    cfg = benchmark_config(1000)
    x_w1 = rng.poisson(RATE, size=(1, steps, N_IN)).astype(np.int64)
    yield "W1 Xylo (N=1000)", "xylo", lambda: cfg, x_w1, lambda x: XyloSim.from_config(cfg).evolve(x)[0], None

    data = load_digits_events(T=12, seed=0)
    reps = -(-steps // data.x_test.shape[1])
    x_dig = np.concatenate(list(data.x_test[:reps]), axis=0)[None, :steps].astype(np.int64)
    net = demo_network(128, key=jax.random.PRNGKey(0))

    fwd = jax.jit(lambda x: net(x)[0])
    yield "digits", "float32", lambda: net, x_dig.astype(np.float32), lambda x: np.asarray(fwd(x)), None

    def xylo_cfg():
        from pondlib.devices.xylo import mapper
        from pondlib.devices.xylo.config import config_from_specification
        from pondlib.devices.xylo.limits import get_limits
        from pondlib.transform import channel_quantize

        c, ok, msg = config_from_specification(channel_quantize(mapper(net, get_limits("audio3"))))
        if not ok:
            raise RuntimeError(msg)
        return c

    xc = {}

    def xylo_sim(x):
        return XyloSim.from_config(xc.setdefault("c", xylo_cfg())).evolve(x)[0]

    yield "digits", "xylo", lambda: xc.setdefault("c", xylo_cfg()), x_dig, xylo_sim, None

    s2 = {}

    def s2_cfg():
        from pondlib.devices.spinnaker2.report import configure, map_network

        spec, _ = map_network(one_spike_network(net), None, "lif_curr_exp")
        return s2.setdefault("c", configure(spec, "benchmark"))

    def s2_sim(x):
        from pondlib.devices.spinnaker2.sim import SpiNNaker2Sim

        return SpiNNaker2Sim.from_config(s2.get("c") or s2_cfg()).evolve(x)[0]

    yield "digits", "spinnaker2", lambda: s2.get("c") or s2_cfg(), x_dig, s2_sim, None

    sc = {}

    def sir_cfg():
        from pondlib.devices.siracusa.config import config_from_specification
        from pondlib.devices.siracusa.report import map_network

        _, spec = map_network(one_spike_network(net), None, x_dig[:, :200].astype(np.float64), True)
        c, ok, msg = config_from_specification(spec)
        if not ok:
            raise RuntimeError(msg)
        return sc.setdefault("c", c)

    def sir_sim(x):
        from pondlib.devices.siracusa.sim import SiracusaSim

        return SiracusaSim.from_config(sc.get("c") or sir_cfg()).evolve(x)[0]

    def sir_quant(x):
        from pondlib.devices.siracusa.sim import quantize_input

        return quantize_input(x.astype(np.float64), sc.get("c") or sir_cfg())

    yield "digits", "siracusa", lambda: sc.get("c") or sir_cfg(), x_dig, sir_sim, sir_quant


#: Time steps (s) of the shared NIR files whose convention does not store one (tests/data/nir/README.md).
NIR_DT = {"lif/lif_norse.nir": 1e-4}


def _first_line(text: str, limit: int = 200) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return (lines[0] if lines else "")[:limit]


def pondlib_accepts(path: Path) -> tuple[bool, str]:
    """``(accepted, reason)``: pondlib imports the NIR file and emits it as float32 C."""
    from pondlib.codegen import generate
    from pondlib.errors import PondError
    from pondlib.interop.nir import load_nir

    rel = path.relative_to(ROOT / "tests" / "data" / "nir").as_posix()
    try:
        imp = load_nir(path, dt=NIR_DT.get(rel))
        prog = generate(imp.module, "float32", name="net")
    except PondError as exc:
        return False, _first_line(str(exc))
    return True, f"{type(imp.module).__name__}, {prog.io.n_in} -> {prog.io.n_out}, {len(prog.io.states)} states"


def snn_mlir_checker(executable: str | None):
    """``(how, check(path) -> (accepted, reason))`` for snn-mlir, or ``(why not, None)``."""
    try:
        import snn_mlir
    except ImportError:
        snn_mlir = None
    if snn_mlir is not None:

        def check_import(path: Path) -> tuple[bool, str]:
            try:
                report = snn_mlir.check(path)
            except Exception as exc:  # noqa: BLE001 - its reader raises on files it cannot type
                return False, _first_line(f"{type(exc).__name__}: {exc}")
            return report.ok, "; ".join(f.message for f in report.errors)[:200]

        return f"snn_mlir {snn_mlir.__version__} (imported)", check_import
    if executable is None:
        return "not installed (pip install snn-mlir in a separate venv, then pass --snn-mlir PATH)", None
    try:
        version = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        return f"cannot run {executable}: {exc.strerror}", None

    def check_exe(path: Path) -> tuple[bool, str]:
        proc = subprocess.run([executable, "check", str(path)], capture_output=True, text=True, timeout=300)
        if proc.returncode == 0:
            return True, ""
        fails = [line.strip() for line in proc.stdout.splitlines() if line.startswith(" " * 8)]
        return False, "; ".join(fails)[:200] or _first_line(proc.stderr or proc.stdout)

    return f"{_first_line(version.stdout or version.stderr)} ({executable} check)", check_exe


def nir_side_by_side(executable: str | None = None) -> dict:
    """Which shared NIR files (tests/data/nir) snn-mlir's check and pondlib's float32 codegen accept."""
    how, check = snn_mlir_checker(executable)
    files = {}
    for path in sorted((ROOT / "tests" / "data" / "nir").rglob("*.nir")):
        row: dict = {}
        row["pondlib"], row["pondlib_reason"] = pondlib_accepts(path)
        if check is not None:
            row["snn_mlir"], row["snn_mlir_reason"] = check(path)
        files[path.relative_to(ROOT).as_posix()] = row
    out: dict = {"snn_mlir": how, "files": files, "pondlib_accepts": sum(r["pondlib"] for r in files.values())}
    if check is not None:
        out["snn_mlir_accepts"] = sum(r["snn_mlir"] for r in files.values())
        out["pondlib_covers_snn_mlir"] = all(r["pondlib"] for r in files.values() if r["snn_mlir"])
    return out


def print_nir_table(console, nir: dict) -> None:
    from rich.table import Table

    t = Table(title=f"Shared NIR files accepted (snn-mlir: {nir['snn_mlir']})")
    for col in ("file", "snn-mlir", "pondlib (float32 C)", "why not / what"):
        t.add_column(col)
    for name, r in nir["files"].items():
        mlir = "-" if "snn_mlir" not in r else ("yes" if r["snn_mlir"] else "no")
        why = r.get("snn_mlir_reason") if r.get("snn_mlir") is False else r["pondlib_reason"]
        t.add_row(name.removeprefix("tests/data/nir/"), mlir, "yes" if r["pondlib"] else "no", why)
    console.print(t)
    if "snn_mlir_accepts" in nir:
        console.print(
            f"accepted: snn-mlir {nir['snn_mlir_accepts']} of {len(nir['files'])}, pondlib {nir['pondlib_accepts']} "
            f"of {len(nir['files'])}; pondlib accepts every file snn-mlir accepts: {nir['pondlib_covers_snn_mlir']}"
        )


def run(steps: int, isa_steps: int, repeats: int) -> list[dict]:
    from pondlib.codegen import generate
    from pondlib.codegen.cross import build_cross, run_cross
    from pondlib.codegen.toolchain import compile_host, run_host

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (workload, numerics, make, x, simulate, quantize) in enumerate(workloads(steps)):
            row: dict = {"workload": workload, "numerics": numerics}
            print(f"{workload} / {numerics} ...", flush=True)
            try:
                model = make()
                prog = generate(model, numerics, name="net")
                xc = quantize(x) if quantize else x
                if prog.io.in_dtype.kind != "f":
                    xc = np.clip(xc, np.iinfo(prog.io.in_dtype).min, np.iinfo(prog.io.in_dtype).max)
                d = Path(tmp) / f"w{i}"
                row["flash_bytes"], row["ram_bytes"] = prog.memory.flash_bytes, prog.memory.ram_bytes
                row["c_host_ns_per_step"] = time_host_c(prog, xc[0], d / "timing", repeats)
                row["pondlib_ns_per_step"] = median_ns_per_step(lambda: simulate(xc), x.shape[1], repeats)
                row["speedup"] = row["pondlib_ns_per_step"] / row["c_host_ns_per_step"]
                y_c, _ = run_host(compile_host(prog, d / "host"), prog, xc)
                y_ref = np.asarray(simulate(xc)).reshape(y_c.shape)
                row["differing_outputs"] = int((y_c != y_ref).sum())
                row["outputs"] = int(y_c.size)
                for target in ("cortex-m4", "rv32"):
                    build = build_cross(prog, target, d / target)
                    y_t, _, ips = run_cross(build, xc[:, :isa_steps])
                    row[f"{target}_instructions_per_step"] = ips
                    row[f"{target}_flash_bytes"] = build.flash_bytes
                    row[f"{target}_ram_bytes"] = build.ram_bytes
                    row[f"{target}_equals_host"] = bool(np.array_equal(y_t, y_c[:, :isa_steps]))
            except Exception as exc:  # noqa: BLE001 - a workload that cannot be built is reported, not fatal
                row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            results.append(row)
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=2000, help="time steps for the host timings")
    ap.add_argument("--isa-steps", type=int, default=3, help="time steps emulated per ISA")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "codegen.json"))
    ap.add_argument("--snn-mlir", default=None, metavar="PATH", help="an snn-mlir executable (when not importable)")
    ap.add_argument("--nir-only", action="store_true", help="only the NIR table, merged into an existing --out")
    args = ap.parse_args(argv)
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    nir = nir_side_by_side(args.snn_mlir)
    out = Path(args.out)
    if args.nir_only:
        print_nir_table(console, nir)
        payload = json.loads(out.read_text()) if out.is_file() else {"benchmark": "codegen"}
        payload["snn_mlir"] = nir
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(payload, indent=2))
        console.print(f"wrote {out}")
        return 0 if nir.get("pondlib_covers_snn_mlir", True) else 1
    results = run(args.steps, args.isa_steps, args.repeats)

    t = Table(title=f"Generated C vs pondlib simulators, per step ({args.steps} steps, one sample)")
    for col in ("workload", "numerics", "C host ns", "pondlib ns", "pondlib / C", "parity", "M4F instr",
                "RV32 instr", "flash B", "RAM B"):  # fmt: skip
        t.add_column(col, justify="right" if col not in ("workload", "numerics") else "left")
    for r in results:
        if "error" in r:
            t.add_row(r["workload"], r["numerics"], r["error"][:60], *[""] * 7)
            continue
        parity = "bit-exact" if r["differing_outputs"] == 0 else f"{r['differing_outputs']} differ"
        t.add_row(
            r["workload"], r["numerics"], f"{r['c_host_ns_per_step']:,.0f}", f"{r['pondlib_ns_per_step']:,.0f}",
            f"{r['speedup']:,.1f}x", parity, f"{r['cortex-m4_instructions_per_step']:,.0f}",
            f"{r['rv32_instructions_per_step']:,.0f}", f"{r['flash_bytes']:,}", f"{r['ram_bytes']:,}",
        )  # fmt: skip
    ok = [r for r in results if "error" not in r]
    console.print(t)
    if ok:
        console.print(f"median pondlib / C per step: {statistics.median(r['speedup'] for r in ok):,.1f}x")
    print_nir_table(console, nir)
    payload = {
        "benchmark": "codegen",
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "steps": args.steps,
        "isa_steps": args.isa_steps,
        "repeats": args.repeats,
        "results": results,
        "median_speedup": statistics.median(r["speedup"] for r in ok) if ok else None,
        "snn_mlir": nir,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2))
    console.print(f"wrote {out}")
    return 0 if ok and all(r["differing_outputs"] == 0 or r["numerics"] == "float32" for r in ok) else 1


if __name__ == "__main__":
    sys.exit(main())
