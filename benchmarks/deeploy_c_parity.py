"""C parity of Siracusa's graph emitter over Deeploy's test cases: every integer case emitted, compiled, run, compared.

Usage: python benchmarks/deeploy_c_parity.py [FOLDER] [--only SUBSTRING] [--rv32 SUBSTRING ...]

FOLDER (default ``tests/data/deeploy``; a Deeploy checkout's ``DeeployTest/Tests`` works too) is searched for
cases (``network.onnx``, ``inputs.npz``, ``outputs.npz``). For every case in integer mode
(:func:`~pondlib.devices.siracusa.graphsim.integer_inputs`) the graph is emitted as C
(:func:`~pondlib.devices.siracusa.graph_codegen.emit_graph`) with the input ranges Deeploy's own type inference
gives (the narrowest of int8, uint8, int16, uint16, int32 holding each input's values), compiled on the host once,
run on the case's inputs and classified:

* ``equal``: every output equals the golden;
* ``differs``: an output does not;
* ``refused``: emit_graph raised CodegenError (the reason is printed);
* ``build-failed``: the C did not compile or run.

One line per case (class, compile seconds, the reason for the others), then the counts. ``--rv32 NAME`` also
builds the cases whose path contains NAME for RV32IMC (``pondlib.codegen.cross``, zig + emulator) and prints
their parity and instruction counts.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pondlib.codegen import compile_host, run_host
from pondlib.devices.siracusa.graph_codegen import emit_graph, pack_inputs, unpack_outputs
from pondlib.devices.siracusa.graphsim import integer_inputs
from pondlib.errors import CodegenError
from pondlib.interop.deeploy import load_case

_TYPES = ((-(2**7), 2**7 - 1), (0, 2**8 - 1), (-(2**15), 2**15 - 1), (0, 2**16 - 1), (-(2**31), 2**31 - 1))


def deeploy_ranges(graph, inputs) -> dict[str, tuple[int, int]]:
    """Each graph input's range as Deeploy infers its type: the narrowest integer type holding its values."""
    out = {}
    for info, arr in zip(graph.inputs, inputs):
        a = np.asarray(arr)
        lo, hi = (int(a.min()), int(a.max())) if a.size else (0, 0)
        out[info.name] = next((t for t in _TYPES if t[0] <= lo and hi <= t[1]), (lo, hi))
    return out


def _equal(graph, y, golden) -> bool:
    got = unpack_outputs(graph, y)
    return len(got) == len(golden) and all(
        g.size == np.size(w) and np.array_equal(g.reshape(np.shape(w)), np.asarray(w).astype(np.int64))
        for g, w in zip(got, golden)
    )


def check_case(folder: Path, work: Path, rv32: bool = False) -> tuple[str, str, float]:
    """(class, detail, compile seconds) of one case; None class when the case is not in integer mode."""
    graph, inputs, golden = load_case(folder)
    if not integer_inputs(graph, inputs):
        return "float", "", 0.0
    try:
        prog = emit_graph(graph, name="net", input_ranges=deeploy_ranges(graph, inputs))
    except CodegenError as err:
        return "refused", str(err).splitlines()[0][:160], 0.0
    x = pack_inputs(graph, inputs)
    t0 = time.perf_counter()
    try:
        exe = compile_host(prog, work)
        seconds = time.perf_counter() - t0
        y, _ = run_host(exe, prog, x[None, None])
    except Exception as err:  # noqa: BLE001 -- the class reported for any build or run failure
        return "build-failed", f"{type(err).__name__}: {str(err)[:160]}", time.perf_counter() - t0
    if not _equal(graph, y[0, 0], golden):
        return "differs", "", seconds
    detail = ""
    if rv32:
        from pondlib.codegen.cross import build_cross, run_cross

        build = build_cross(prog, "rv32", work / "rv32")
        yc, _, ips = run_cross(build, x[None])
        detail = f"rv32 {'equal' if _equal(graph, yc[0], golden) else 'DIFFERS'}, {int(ips)} instructions/step"
    return "equal", detail, seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, nargs="?", default=Path("tests/data/deeploy"))
    ap.add_argument("--only", default="")
    ap.add_argument("--rv32", action="append", default=[], help="also run cases containing this on RV32")
    args = ap.parse_args(argv)
    counts: dict[str, int] = {}
    compile_total = 0.0
    for folder in sorted(p.parent for p in args.folder.rglob("network.onnx")):
        name = str(folder.relative_to(args.folder))
        if args.only not in name or not ((folder / "inputs.npz").exists() and (folder / "outputs.npz").exists()):
            continue
        with tempfile.TemporaryDirectory() as d:
            try:
                cls, detail, seconds = check_case(folder, Path(d), any(r in name for r in args.rv32))
            except Exception as err:  # noqa: BLE001 -- a case that does not load is listed, not fatal
                cls, detail, seconds = "unloadable", f"{type(err).__name__}: {str(err)[:120]}", 0.0
        if cls == "float":
            continue
        counts[cls] = counts.get(cls, 0) + 1
        compile_total += seconds
        print(f"{cls:13s} {seconds:6.2f}s  {name}  {detail}".rstrip(), flush=True)
    print(f"integer cases: {sum(counts.values())}; " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(f"host compile time: {compile_total:.1f} s in all")
    return 0 if set(counts) <= {"equal"} else 1


if __name__ == "__main__":
    sys.exit(main())
