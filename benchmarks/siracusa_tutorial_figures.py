"""Held-out check of the Siracusa graph mapper against the Deeploy tutorial's GVSoC figures (issue 27, item 6).

Usage::

    python benchmarks/siracusa_tutorial_figures.py /work/deeploy/DeeployTest/Tests/Models/microLlama/INT8

Maps ``microLlama128/network.onnx`` (untiled, data in L2, 1 and 8 cores) and
``microLlama64_parallel/network.onnx`` (tiled, 8 cores, double buffering off as in the tutorial's
``[SB]`` traces, L1 budgets 8,000 and 64,000 B) with :func:`pondlib.devices.siracusa.graph_map.map_graph`
and prints each prediction next to the tutorial's figure with the relative error. Nothing is fit to these
four figures. ``--top N`` also lists the N most expensive op kinds of each setting.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict

from pondlib.devices.siracusa.graph_map import map_graph
from pondlib.interop.onnx.opgraph import load_opgraph

#: (case, label, map_graph keyword arguments, tutorial cycles on GVSoC)
FIGURES = (
    ("microLlama128", "untiled L2, 1 core", {"cores": 1, "tiled": False}, 16.1e6),
    ("microLlama128", "untiled L2, 8 cores", {"cores": 8, "tiled": False}, 3.1e6),
    ("microLlama64_parallel", "tiled, 8 cores, L1 8,000 B", {"cores": 8, "l1_bytes": 8_000}, 47.5e6),
    ("microLlama64_parallel", "tiled, 8 cores, L1 64,000 B", {"cores": 8, "l1_bytes": 64_000}, 35.3e6),
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", help="folder holding microLlama128/ and microLlama64_parallel/ (each with network.onnx)")
    ap.add_argument("--top", type=int, default=0, help="also list the N most expensive op kinds per setting")
    ap.add_argument("--double-buffer", action="store_true", help="map with double buffering (default: single)")
    args = ap.parse_args(argv)
    graphs = {}
    print(f"{'case':24s} {'setting':30s} {'tutorial':>12s} {'pondlib':>12s} {'error':>8s}")
    worst = 0.0
    for case, label, kwargs, figure in FIGURES:
        if case not in graphs:
            graphs[case] = load_opgraph(os.path.join(args.root, case, "network.onnx"))
        gm = map_graph(graphs[case], double_buffer=args.double_buffer, integer=True, **kwargs)
        err = (gm.cycles - figure) / figure
        worst = max(worst, abs(err))
        print(f"{case:24s} {label:30s} {figure / 1e6:10.2f} M {gm.cycles / 1e6:10.2f} M {100 * err:+7.1f}%")
        if args.top:
            by_op: dict[str, float] = defaultdict(float)
            for r in gm.rows:
                by_op[r.op] += r.cycles
            for op, cyc in sorted(by_op.items(), key=lambda kv: -kv[1])[: args.top]:
                print(f"{'':24s}   {op:28s} {cyc / 1e6:10.2f} M ({100 * cyc / gm.cycles:4.1f}%)")
    print(f"largest relative error: {100 * worst:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
