"""Benchmark: the SpiNNaker2 DNN timing model next to the paper's measurements, and predictions.

The model (:mod:`pondlib.devices.spinnaker2.timing`) is calibrated on the paper's 784-512-256-16 MLP
(arXiv 2507.13736: total 688 us, FC1 323 us of which 192 us weight fetch and 29 us MLA, 13 us
scheduling per layer, setup 39 us, cleanup 93 us, softmax 50 us). This script prints the per-layer
breakdown for that network with the paper's figures and the relative errors, then the model's
predictions for other sizes (worker split: the fewest PEs whose tiles fit in SRAM).

Run: ``python benchmarks/spinnaker2_timing.py``. Writes ``benchmarks/results/spinnaker2_timing.json``.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

from pondlib.devices.spinnaker2.timing import PAPER_ANCHORS, PAPER_MODEL, estimate

OTHER_SIZES = [(784, 1024, 10), (784, 256, 10), (64, 128, 10), (2048, 2048, 1024, 10)]


def main() -> dict:
    a = PAPER_ANCHORS
    report = estimate(a.sizes, softmax=True)
    fc1 = report.layers[0]
    print("SpiNNaker2 DNN timing, 784-512-256-16 (model calibrated on the paper's figures)")
    print(report.table())
    paper = {
        "total_us": a.total_s * 1e6,
        "fc1_us": a.fc1_s * 1e6,
        "fc1_fetch_us": a.fc1_fetch_s * 1e6,
        "fc1_mla_us": a.fc1_mla_s * 1e6,
        "sched_per_layer_us": a.layer_overhead_s * 1e6,
        "setup_us": a.setup_s * 1e6,
        "cleanup_us": a.cleanup_s * 1e6,
        "softmax_us": a.softmax_s * 1e6,
    }
    model = {
        "total_us": report.total_s * 1e6,
        "fc1_us": fc1.total_s * 1e6,
        "fc1_fetch_us": fc1.fetch_s * 1e6,
        "fc1_mla_us": fc1.mla_s * 1e6,
        "sched_per_layer_us": fc1.overhead_s * 1e6,
        "setup_us": report.setup_s * 1e6,
        "cleanup_us": report.cleanup_s * 1e6,
        "softmax_us": report.softmax_s * 1e6,
    }
    print(f"\n{'quantity':<20} {'paper us':>9} {'model us':>9} {'error':>7}")
    errors = {}
    for key in paper:
        errors[key] = (model[key] - paper[key]) / paper[key]
        print(f"{key:<20} {paper[key]:>9.1f} {model[key]:>9.1f} {errors[key]:>+7.1%}")
    print("(FC2 and FC3 are not given separately in the paper: the model's split is a prediction.)")
    predictions = {}
    for sizes in OTHER_SIZES:
        r = estimate(sizes)
        name = "-".join(map(str, sizes))
        predictions[name] = r.as_dict()
        print(f"\nprediction {name} (no softmax)")
        print(r.table())
    result = {
        "model": {k: getattr(PAPER_MODEL, k) for k in PAPER_MODEL.__dataclass_fields__},
        "paper_784_512_256_16": {
            "paper": paper,
            "model": model,
            "relative_error": errors,
            "breakdown": report.as_dict(),
        },
        "predictions": predictions,
        "machine": platform.platform(),
    }
    out = Path(__file__).resolve().parent / "results" / "spinnaker2_timing.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {out}")
    return result


if __name__ == "__main__":
    main()
