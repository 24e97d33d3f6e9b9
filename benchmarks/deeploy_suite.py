"""Deeploy's own test suite on pondlib's Siracusa graph path: every case classified equal / differs / refused.

Usage: python benchmarks/deeploy_suite.py PATH/TO/Deeploy/DeeployTest/Tests [--only SUBSTRING] [--siracusa]
[--device NAME]

PATH is a checkout of pulp-platform/Deeploy (``DeeployTest/Tests``); ``--siracusa`` restricts the run to the
cases Deeploy's Siracusa test configurations list (``test_siracusa*_config.py`` beside ``Tests``). Prints one
line per case and the counts by class, for integer and FP32 cases separately. Training cases (SGD, gradient
ops) are listed as such and not counted among the non-training cases.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

from pondlib.interop.deeploy import run_case

TRAINING_OPS = ("SGD", "SoftmaxCrossEntropyLoss", "SoftmaxCrossEntropyLossGrad", "SoftmaxGrad", "GeluGrad",
                "LayerNormalizationGrad")  # fmt: skip


def siracusa_cases(tests: Path) -> set[str]:
    """Every case named in Deeploy's Siracusa test configurations."""
    names: set[str] = set()
    for cfg in sorted(tests.parent.glob("test_siracusa*_config.py")):
        tree = ast.parse(cfg.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "/" in node.value:
                names.add(node.value)
    return names


def is_training(folder: Path) -> bool:
    import onnx

    model = onnx.load(str(folder / "network.onnx"), load_external_data=False)
    return any(n.op_type in TRAINING_OPS for n in model.graph.node)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tests", type=Path)
    ap.add_argument("--only", default="")
    ap.add_argument("--siracusa", action="store_true")
    ap.add_argument("--device", default="siracusa", help="a registered device with a graph path")
    args = ap.parse_args(argv)
    listed = siracusa_cases(args.tests)
    cases = sorted(p.parent for p in args.tests.rglob("network.onnx"))
    counts: dict[tuple[str, str], int] = {}
    for folder in cases:
        name = str(folder.relative_to(args.tests))
        if args.only not in name or (args.siracusa and name not in listed):
            continue
        if not ((folder / "inputs.npz").exists() and (folder / "outputs.npz").exists()):
            continue
        if is_training(folder):
            counts[("training", "-")] = counts.get(("training", "-"), 0) + 1
            print(f"{'training':8s} {name}")
            continue
        res = run_case(folder, args.device, name)
        kind = "int" if res.integer else "fp32"
        counts[(kind, res.status)] = counts.get((kind, res.status), 0) + 1
        print(f"{res.status:8s} {kind:4s} {res.seconds:6.2f}s {name}  {res.detail}", flush=True)
    print()
    for (kind, status), n in sorted(counts.items()):
        print(f"{kind:8s} {status:8s} {n}")
    total = sum(n for (k, _), n in counts.items() if k != "training")
    equal = sum(n for (k, s), n in counts.items() if s == "equal")
    print(f"non-training: {equal}/{total} equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
