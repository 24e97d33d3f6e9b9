"""Benchmark: SpiNNaker2's DNN graph path on CNNs and transformer blocks, one chip against several.

For each model the script maps it with ``graph_mapper`` (calibration on random inputs of the model's shape),
checks that every multi-chip mapping gives the outputs of one full-size chip bit for bit and that the DRAM image's walk
equals ``GraphSim``, prints the per-op timing table on one chip and a latency table over 1, 2, 4 and 8 chips
(latency of one inference, chips one after another; the pipelined interval, the slowest chip; the bytes sent
over chip-to-chip links), and the agreement of the int8 outputs with the float model (relative L2 error).
Timing: :mod:`pondlib.devices.spinnaker2.graph_timing` (MLA, fetch, scheduler and setup/cleanup calibrated on
the paper; Arm-core cycles per element, activation I/O and the links assumed, as stated there).

A last table shows a model too large for one chip's DRAM: the DRAM is scaled down (``dram_bytes`` = 128 KiB,
said in the table) so that the partition is visible on a model this script can calibrate in seconds; on the
real 2 GiB chip the same rule cuts models of more than 2 GiB of parameters. A second scaled-down case (64 KiB)
makes single ops larger than one chip (the MLP's ``up`` and ``down``, 108 KB and 107 KB with their activations):
they run only split by output columns over several chips, each holding its weight columns, the slices gathered
over the links (the parts timed as running at the same time).

Run: ``python benchmarks/spinnaker2_dnn.py``. Writes ``benchmarks/results/spinnaker2_dnn.json`` and ``.txt``.
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from pondlib.devices.spinnaker2.dnn_graph import GraphSim, graph_mapper
from pondlib.devices.spinnaker2.graph_image import run_graph_image
from pondlib.devices.spinnaker2.graph_ops import GraphOp, float_op, run_op
from pondlib.devices.spinnaker2.graph_timing import estimate_graph
from pondlib.devices.spinnaker2.limits import SPINNAKER2_BOARD
from pondlib.errors import ConstraintError
from pondlib.graph.dnn import FloatLayer as L
from pondlib.graph.dnn import FloatModel

CHIPS = (1, 2, 4, 8)
OUT = Path(__file__).resolve().parent / "results"


def _conv(rng, o, c, k=3, stride=1, groups=1):
    w = rng.normal(size=(o, c // groups, k, k)) / np.sqrt(c // groups * k * k)
    pad = k // 2
    return {
        "weight": w,
        "bias": np.zeros(o),
        "strides": [stride] * 2,
        "pads": [pad] * 4,
        "dilations": [1, 1],
        "groups": groups,
    }


def _paper_mlp(rng):
    sizes = (784, 512, 256, 16)
    layers, prev = [], -1
    for i, (k, n) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(
            L(
                f"fc{i + 1}",
                "gemm",
                (prev,),
                {"weight": rng.normal(size=(k, n)) / np.sqrt(k), "bias": np.zeros(n)},
                (n,),
            )
        )
        prev = len(layers) - 1
        if i < 2:
            layers.append(L(f"relu{i + 1}", "relu", (prev,), {}, (n,)))
            prev = len(layers) - 1
    return FloatModel(tuple(layers), "x", (784,))


def _resnet_block_cnn(rng):
    """A small ResNet-style CNN on 3x32x32: stem, two residual blocks (one depthwise-separable), pooling, head."""
    c = 32
    ly = [
        L("stem", "conv", (-1,), _conv(rng, c, 3, stride=2), (c, 16, 16)),
        L("stem_relu", "relu", (0,), {}, (c, 16, 16)),
        L("b1c1", "conv", (1,), _conv(rng, c, c), (c, 16, 16)),
        L("b1r1", "relu", (2,), {}, (c, 16, 16)),
        L("b1c2", "conv", (3,), _conv(rng, c, c), (c, 16, 16)),
        L("b1add", "add", (4, 1), {}, (c, 16, 16)),
        L("b1relu", "relu", (5,), {}, (c, 16, 16)),
        L(
            "pool",
            "maxpool",
            (6,),
            {"kernel": [2, 2], "strides": [2, 2], "pads": [0] * 4, "dilations": [1, 1]},
            (c, 8, 8),
        ),
        L("dw", "conv", (7,), _conv(rng, c, c, groups=c), (c, 8, 8)),
        L("dw_relu", "relu", (8,), {}, (c, 8, 8)),
        L("pw", "conv", (9,), _conv(rng, 2 * c, c, k=1), (2 * c, 8, 8)),
        L("pw_relu", "relu", (10,), {}, (2 * c, 8, 8)),
        L("gap", "avgpool", (11,), {"kernel": [8, 8], "strides": [8, 8], "pads": [0] * 4}, (2 * c, 1, 1)),
        L("flat", "reshape", (12,), {}, (2 * c,)),
        L("fc", "gemm", (13,), {"weight": rng.normal(size=(2 * c, 10)) / np.sqrt(2 * c), "bias": np.zeros(10)}, (10,)),
    ]
    return FloatModel(tuple(ly), "x", (3, 32, 32))


def _transformer_block(rng, t=64, d=128, hidden=512):
    def lin(k, n):
        return {"weight": rng.normal(size=(k, n)) / np.sqrt(k), "bias": np.zeros(n)}

    ly = (
        L("ln1", "layernorm", (-1,), {"weight": np.ones(d), "bias": np.zeros(d)}, (t, d)),
        L("q", "gemm", (0,), lin(d, d), (t, d)),
        L("k", "gemm", (0,), lin(d, d), (t, d)),
        L("v", "gemm", (0,), lin(d, d), (t, d)),
        L("kT", "transpose", (2,), {"perm": [1, 0]}, (d, t)),
        L("scores", "matmul", (1, 4), {}, (t, t)),
        L("softmax", "softmax", (5,), {}, (t, t)),
        L("context", "matmul", (6, 3), {}, (t, d)),
        L("proj", "gemm", (7,), lin(d, d), (t, d)),
        L("res1", "add", (-1, 8), {}, (t, d)),
        L("ln2", "rmsnorm", (9,), {"weight": np.ones(d)}, (t, d)),
        L("up", "gemm", (10,), lin(d, hidden), (t, hidden)),
        L("gelu", "gelu", (11,), {}, (t, hidden)),
        L("down", "gemm", (12,), lin(hidden, d), (t, d)),
        L("res2", "add", (9, 13), {}, (t, d)),
    )
    return FloatModel(ly, "x", (t, d))


def _float(model, x):
    outs = []
    for layer in model.layers:
        outs.append(float_op(layer, [x if j < 0 else outs[j] for j in layer.inputs]))
    return outs[-1]


def _one_model(name, model, rng, limits=None, chips=CHIPS):
    cal = rng.normal(size=(16, *model.input_shape))
    x = rng.normal(size=(4, *model.input_shape))
    t0 = time.perf_counter()
    one = graph_mapper(model, cal)  # one full-size chip: the outputs every mapping must equal
    work = sum(op.op != "reshape" for op in one.ops)  # a chip runs whole ops (or the parts of a split op)
    cfgs, refused = {}, {}
    for n in (c for c in chips if c <= work):
        try:
            cfgs[n] = graph_mapper(model, cal, limits if limits is not None or n == 1 else "board", chips=n)
        except ConstraintError as err:
            refused[n] = str(err.violations[0])
    map_s = time.perf_counter() - t0
    base = next(iter(cfgs.values()))
    xq = one.quantize_input(x)
    y = GraphSim(one).evolve(xq)[0]
    equal = all(np.array_equal(GraphSim(c).evolve(xq)[0], y) for c in cfgs.values())
    walk = all(np.array_equal(run_graph_image(c.to_dram_image(), xq[:1])[0], y[:1]) for c in cfgs.values())
    ref = _float(model, x)
    rel = float(np.linalg.norm(base.dequantize_output(y) - ref) / np.linalg.norm(ref))
    rows = []
    for n, c in cfgs.items():
        rep = estimate_graph(c)
        rows.append(
            {
                "chips": n,
                "chips_used": len({op.chip for op in c.ops}),
                "latency_us": rep.total_s * 1e6,
                "pipelined_interval_us": rep.throughput_s * 1e6,
                "transfers": len(c.transfers),
                "link_bytes": sum(t.bytes for t in c.transfers),
                "max_chip_dram_bytes": max(c.report["chip_bytes"]),
            }
        )
    return {
        "model": name,
        "split_notes": [n for n in cfgs[max(cfgs)].report["notes"] if "split into" in n],
        "refused": refused,
        "ops": len(base.ops),
        "params_bytes": sum(op.weight_bytes for op in base.ops),
        "macs": sum(op.macs(base.in_shapes(i)) for i, op in enumerate(base.ops)),
        "multi_chip_equal": equal,
        "image_walk_equal": walk,
        "rel_l2_vs_float": rel,
        "map_s": map_s,
        "per_op_one_chip": estimate_graph(base).table(),
        "rows": rows,
    }


DEEPLOY = Path(__file__).resolve().parents[1] / "tests" / "data" / "deeploy" / "Kernels" / "Integer"
DEEPLOY_CASES = (
    "Conv/Regular_2D_RQ",
    "Conv/StriddedPadded_2D_RQ",
    "Conv/DW_2D_RQ",
    "Conv/PW_2D_RQ/Regular_RQ",
    "Conv/PW_2D_RQ/Unsigned_RQ",
    "Conv/DW_3x3_RQ",
    "Conv/Regular_3x3_RQ",
    "Conv/Regular_1D_RQ",
    "GEMM/Regular_RQPerColumn",
)


def _deeploy_case(case: str) -> dict:
    """A Deeploy Conv/Gemm + RequantShift case as one power-of-two graph op: ``(x mul + add) / div`` becomes
    ``(acc + round(add / mul) + 2^(s-1)) >> s`` with ``2^-s`` the geometric mean of ``mul / div`` over channels;
    compared with Deeploy's golden integers (which Siracusa's graph path reproduces bit for bit)."""
    from pondlib.interop.deeploy import load_case

    g, ins, outs = load_case(DEEPLOY / case)
    x, want = np.asarray(ins[0]).astype(np.int64), np.asarray(outs[0]).astype(np.int64)
    op, rq = g.nodes[0], g.nodes[1]
    mul = np.asarray(g.constants[rq.inputs[1]], np.float64).reshape(-1)
    add = np.asarray(g.constants[rq.inputs[2]], np.float64).reshape(-1)
    w = np.asarray(g.constants[op.inputs[1]]).astype(np.int64)
    signed = int(rq.attrs.get("signed", 1))
    why = None
    if not signed or x.min() < -128 or x.max() > 127:
        why = "unsigned tensors (0..255): SpiNNaker2's path is signed int8"
    elif np.any(mul <= 0):
        why = "negative requantization multipliers"
    if why:
        return {"case": case, "skipped": why}
    m = mul / float(rq.attrs["div"])
    shift = int(round(-np.log2(np.exp(np.mean(np.log(m))))))
    n_out = w.shape[0]
    bias = np.zeros(n_out) if len(op.inputs) < 3 else np.asarray(g.constants[op.inputs[2]], np.float64).reshape(-1)
    b = np.rint(bias + np.broadcast_to(add / mul, (n_out,))).astype(np.int64) + ((1 << (shift - 1)) if shift else 0)
    if op.op == "Conv":
        nd = w.ndim - 2
        attrs = {
            "strides": tuple(op.attrs.get("strides", [1] * nd)),
            "pads": tuple(op.attrs.get("pads", [0] * 2 * nd)),
            "dilations": tuple(op.attrs.get("dilations", [1] * nd)),
            "groups": (int(op.attrs.get("group", 1)),),
        }
        gop = GraphOp("conv", "conv", (-1,), tuple(want.shape[1:]), (0,), 0, shift, False, w, b, attrs)
    else:
        wt = w.T if op.attrs.get("transB", 0) else w
        gop = GraphOp("gemm", "gemm", (-1,), tuple(want.shape[1:]), (0,), 0, shift, False, wt, b)
    got = run_op(gop, [x], 32, "wrap")
    diff = np.abs(got - want)
    return {
        "case": case,
        "shift": shift,
        "scale_rel_error": float(np.max(np.abs(2.0**-shift - m) / m)),
        "equal_fraction": float(np.mean(diff == 0)),
        "within_1_lsb": float(np.mean(diff <= 1)),
        "max_lsb_diff": int(diff.max()),
        "golden_saturated_fraction": float(np.mean((want <= -128) | (want >= 127))),
    }


def _table(res) -> str:
    head = (
        f"{'chips':>5} {'used':>4} {'latency us':>11} {'interval us':>12} {'transfers':>9} {'link B':>8} "
        f"{'max DRAM B':>11}"
    )
    lines = [head] + [f"{n:>5} refused: {why}" for n, why in res["refused"].items()]
    for r in res["rows"]:
        lines.append(
            f"{r['chips']:>5} {r['chips_used']:>4} {r['latency_us']:>11.1f} {r['pipelined_interval_us']:>12.1f} "
            f"{r['transfers']:>9} {r['link_bytes']:>8} {r['max_chip_dram_bytes']:>11}"
        )
    return "\n".join(lines)


def main() -> dict:
    rng = np.random.default_rng(0)
    models = [
        ("paper MLP 784-512-256-16", _paper_mlp(rng)),
        ("ResNet-style CNN 3x32x32", _resnet_block_cnn(rng)),
        ("transformer block T=64 D=128", _transformer_block(rng)),
    ]
    results, text = [], []
    for name, model in models:
        res = _one_model(name, model, rng)
        results.append(res)
        text += [
            f"== {name}: {res['ops']} ops, {res['params_bytes']:,} parameter bytes, {res['macs']:,} MACs",
            f"multi-chip outputs equal one chip: {res['multi_chip_equal']}; image walk equals GraphSim: "
            f"{res['image_walk_equal']}; int8 vs float relative L2 error {res['rel_l2_vs_float']:.3f}",
            "per op on one chip:",
            res["per_op_one_chip"],
            "one chip vs several:",
            _table(res),
            "",
        ]
    small = replace(SPINNAKER2_BOARD, name="board with 128 KiB DRAM per chip (scaled down)", dram_bytes=131072)
    name = "transformer block, DRAM scaled down to 128 KiB"
    res = _one_model(name, _transformer_block(rng), rng, small, (1, 4, 5, 8))
    results.append(res)
    text += [
        f"== {res['model']}: {res['params_bytes']:,} parameter bytes (does not fit one 128 KiB chip: refused there "
        "with the chip count it needs)",
        _table(res),
    ]
    tiny = replace(SPINNAKER2_BOARD, name="board with 64 KiB DRAM per chip (scaled down)", dram_bytes=65536)
    res = _one_model(
        "transformer block, DRAM scaled down to 64 KiB", _transformer_block(rng), rng, tiny, (1, 8, 12, 15)
    )
    results.append(res)
    text += [
        "",
        f"== {res['model']}: single ops larger than one chip's DRAM run only split (before splitting, the mapper "
        "refused this model on every chip count)",
        *[f"   {n}" for n in res["split_notes"]],
        f"split outputs equal one 2 GiB chip: {res['multi_chip_equal']}; image walk equals GraphSim: "
        f"{res['image_walk_equal']}",
        _table(res),
    ]
    deeploy = [_deeploy_case(c) for c in DEEPLOY_CASES]
    text += ["", "== Deeploy integer cases (tests/data/deeploy) as power-of-two ops, against their golden integers"]
    for r in deeploy:
        if "skipped" in r:
            text.append(f"{r['case']:<28} not run: {r['skipped']}")
        else:
            text.append(
                f"{r['case']:<28} shift {r['shift']:>2}, |2^-s - M|/M <= {r['scale_rel_error']:.3f}: "
                f"{r['equal_fraction']:.1%} equal, {r['within_1_lsb']:.1%} within 1 LSB, max {r['max_lsb_diff']} LSB "
                f"({r['golden_saturated_fraction']:.0%} of the golden outputs saturated)"
            )
    out = "\n".join(text)
    print(out)
    OUT.mkdir(exist_ok=True)
    (OUT / "spinnaker2_dnn.txt").write_text(out + "\n")
    meta = {"python": platform.python_version(), "machine": platform.machine()}
    for r in results:
        r.pop("per_op_one_chip")
    doc = {"meta": meta, "models": results, "deeploy": deeploy}
    (OUT / "spinnaker2_dnn.json").write_text(json.dumps(doc, indent=1) + "\n")
    return doc


if __name__ == "__main__":
    main()
