"""Benchmark: the closed-form schedule explorer on STEMS's SEW-ResNet-18 exploration.

STEMS evaluates one schedule of SEW-ResNet-18 in minutes (an event-driven scheduler over every
computation node, plus ZigZag per node); :func:`pondlib.explore.evaluate` applies its accounting rules in
closed form. Measured here (median of ``--repeats`` runs after a warm-up run, one process):

* the time to evaluate all ``(N + 1)^2 = 64`` one-split-point hybrid schedules of SEW-ResNet-18 (the
  issue's target: under 1 s), per memory size;
* the time of :func:`pondlib.explore.explore` over the whole space (64 hybrids + uniform batches, 70
  schedules: evaluation, ranking and Pareto front);
* the time to build the workload and hardware (once per exploration);
* per memory, the latency each schedule now carries (cycles, :mod:`pondlib.explore.latency`): the range
  over the space beside the 28-68 Mcycles STEMS's own runs report for this workload (issue 31), and the
  best schedule by energy, by latency and by energy-delay product;
* the same exploration on the chips' own memories (``device_hardware``: Siracusa L1 over L2, L2 over L3,
  one SpiNNaker2 PE).

Run: ``python benchmarks/explore_speed.py [--repeats 7] [--memory 1MB 128KB] [--json PATH]``. Prints a rich
table and writes ``benchmarks/results/explore_speed.json`` (or ``--json PATH``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from pondlib.explore import device_hardware, evaluate, explore, hybrid_space, meta_prototype, sew_resnet18

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "explore_speed.json"
#: The chips' own memories (``pondlib.explore.device_hardware``): (device, level).
DEVICES = (("siracusa", "L1"), ("siracusa", "L2"), ("spinnaker2", None))


def _median_seconds(fn, repeats: int) -> tuple[float, list[float]]:
    fn()  # warm-up: per-workload tables, imports
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per measurement (default 7)")
    parser.add_argument("--memory", nargs="+", default=["1MB", "128KB"], help="memory sizes (default 1MB 128KB)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"result file (default {DEFAULT_JSON})")
    args = parser.parse_args(argv)
    console = Console(width=150)

    t0 = time.perf_counter()
    workload = sew_resnet18()
    build = time.perf_counter() - t0
    space = hybrid_space(workload.n_blocks, workload.time_steps)
    results = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "repeats": args.repeats,
        "workload": workload.name,
        "schedules": len(space),
        "build_workload_s": build,
        "memories": {},
    }
    table = Table(title=f"{workload.name}: all {len(space)} one-split-point hybrids (median of {args.repeats})")
    for head in (
        "memory",
        "64 hybrids (s)",
        "per schedule (ms)",
        "explore 'all' (s)",
        "best schedule",
        "Mcycles min-max",
        "best by latency",
        "best by EDP",
        "< 1 s",
    ):
        table.add_column(head, justify="right")
    targets = [(m, meta_prototype(m)) for m in args.memory]
    targets += [(f"{d} {lv or ''}".strip(), device_hardware(d, lv)) for d, lv in DEVICES]
    for memory, hw in targets:
        med, times = _median_seconds(lambda hw=hw: [evaluate(workload, hw, s) for s in space], args.repeats)
        ex_med, _ = _median_seconds(lambda hw=hw: explore(workload, hw, "all"), args.repeats)
        ex = explore(workload, hw, "all")
        best = ex.best()
        cycles = [r.latency_cycles for r in ex.reports]
        by_lat = explore(workload, hw, "all", rank_by="latency").best()
        by_edp = explore(workload, hw, "all", rank_by="edp").best()
        results["memories"][memory] = {
            "hardware": hw.name,
            "latency_mcycles_min": min(cycles) / 1e6,
            "latency_mcycles_max": max(cycles) / 1e6,
            "best_latency_mcycles": best.latency_cycles / 1e6,
            "best_by_latency": by_lat.label(),
            "best_by_edp": by_edp.label(),
            "fit_status": {k: sum(r.fit_status == k for r in ex.reports) for k in ("yes", "spills", "no")},
            "memory_bits": hw.memory_bits,
            "hybrids_s_median": med,
            "hybrids_s_all": times,
            "per_schedule_ms": med / len(space) * 1e3,
            "explore_all_s_median": ex_med,
            "best": best.label(),
            "best_traffic_mib": best.traffic_mib(),
            "best_energy_mj": best.energy_mj(),
        }
        table.add_row(
            memory,
            f"{med:.4f}",
            f"{med / len(space) * 1e3:.2f}",
            f"{ex_med:.4f}",
            best.schedule.compact(16),
            f"{min(cycles) / 1e6:,.1f}-{max(cycles) / 1e6:,.1f}",
            by_lat.schedule.compact(16),
            by_edp.schedule.compact(16),
            "[green]yes[/]" if med < 1.0 else "[red]no[/]",
        )
    console.print(table)
    console.print(f"workload built in {build * 1e3:.1f} ms; STEMS needs minutes per schedule")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1))
    console.print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
