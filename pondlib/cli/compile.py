"""``pond compile MODEL --numerics float32|DEVICE -o DIR [--target host|cortex-m4|rv32] [--check RASTER.npy]
[--name NAME] [--cores N --l1 BYTES --l2 BYTES --single-buffer] [device options]``: generate C for a network,
a device configuration or an ONNX graph (:mod:`pondlib.codegen`), write the sources into DIR and print the
memory report (flash, RAM, per buffer).

MODEL is a NIR file (``.nir``, with ``--dt`` / ``--reset`` as ``pond map`` takes them), a network saved with
:func:`pondlib.io.save_network` (``.pond``) or a saved configuration of the numerics' device (any other
file: ``Device.load`` reads it, e.g. ``XyloConfig.save``'s ``.npz``). A network is mapped to the device of
the numerics first (``Device.map``, with the device's options as ``pond map`` takes them; a device that
calibrates is calibrated on the ``--check`` raster, or on synthetic events without one); ``float32`` emits
the float model itself. The numerics are ``float32`` and every registered device with C numerics.

``--target`` builds the program: ``host`` with the system C compiler, ``cortex-m4`` / ``rv32`` with the
ziglang cross compiler (:mod:`pondlib.codegen.cross`, run emulated with unicorn). ``--check RASTER.npy``
(``(T, N_in)`` or ``(B, T, N_in)``: event counts for a device whose program takes them, floats for float32
and for a device that quantizes its input, ``Reference.quantize``) runs the raster through the build
(``--target host`` when not given) and through pondlib's own simulator (the float model, or the device's
``Device.reference``) and prints the verdict: bit-exact, or the
number of differing outputs (exit status 1). Event counts above the largest value of the program's input
type are clipped for both, with a note saying how many.

An ONNX MODEL (``.onnx``) goes through the device's graph path (``Device.map_graph``: Deeploy's integer
dialect, ORT QDQ models) and compiles as the integer graph's C; ``--check INPUTS.npz`` holds one array per
graph input in order (Deeploy's ``inputs.npz``; an ``.npy`` for one input), quantized integers, and also sets
the C input types (the narrowest integer type of each input, as Deeploy infers them). ``--cores N`` (1..8),
``--l1 BYTES``, ``--l2 BYTES`` and ``--single-buffer`` ask a device with cluster C (``Device.cluster_c``) for
tiled, DMA-staged, multi-core C of a graph or of a layer chain: the host runs it with one thread per core;
``--target rv32`` builds it for 1 and N cores from the same sources, runs both on the emulated cluster
(:mod:`pondlib.codegen.cluster`) and prints the instructions per core, the DMA bytes, the 1 -> N speed-up and
the verdict.

Errors are one ``error:`` line (exit status 1): a missing or unreadable MODEL, a model the numerics cannot
emit (an unsupported module names itself), a failed compile (the compiler's message), a bad raster.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pond")
    >>> add_parser(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["compile", "net.pond", "--numerics", "xylo", "-o", "out", "--target", "rv32"])
    >>> args.model, args.numerics, args.out, args.target, args.check, args.name
    ('net.pond', 'xylo', 'out', 'rv32', None, 'net')
    >>> parser.parse_args(["compile", "net.pond", "--numerics", "siracusa", "-o", "out", "--drop-synapse"]).drop_synapse
    True
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from pondlib.cli.args import (
    UsageError,
    add_device_options,
    device_options,
    load_array,
    positive_float,
    synthetic_events,
    variants_help,
    with_flags,
)
from pondlib.cli.builds import start_builds
from pondlib.cli.models import check_model_path, load_network
from pondlib.cli.render import notes, result_table, stage, table
from pondlib.devices import registry
from pondlib.errors import PondError

__all__ = ["TARGETS", "add_parser", "run", "numerics"]

#: The numerics of the float model.
FLOAT32 = "float32"
#: ``--target`` choices.
TARGETS = ("host", "cortex-m4", "rv32")


def numerics() -> tuple[str, ...]:
    """``--numerics`` choices: float32 and every registered device with C numerics (``pondlib.codegen.numerics``)."""
    return (FLOAT32,) + tuple(d.name for d in registry.devices() if d.has_c)


def __getattr__(name: str) -> Any:
    if name == "NUMERICS":  # computed on access, like pondlib.codegen.NUMERICS
        return numerics()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def add_parser(subparsers: Any) -> None:
    """Register ``compile`` on ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    cp = subparsers.add_parser(
        "compile",
        help="generate C for a network or a device configuration; build it and check it against pondlib",
        description="Generate plain C11 for MODEL with the numerics of a device, write it into DIR, print the "
        "memory report; optionally build it (host or emulated microcontroller) and check it bit for bit "
        "against pondlib's simulator.",
    )
    cp.add_argument(
        "model",
        metavar="MODEL",
        help="a NIR file (.nir), a network saved with pondlib.io.save_network (.pond) or a saved configuration "
        "of the numerics' device (pond demo writes <device>_config.npz)",
    )
    cp.add_argument("--numerics", required=True, choices=numerics(), help="the numerics of the generated C")
    cp.add_argument("-o", "--out", required=True, metavar="DIR", help="folder for the sources (created if missing)")
    cp.add_argument(
        "--target",
        choices=TARGETS,
        default=None,
        help="build for host (system cc), cortex-m4 (Cortex-M4F) or rv32 (RV32IMC), both emulated",
    )
    cp.add_argument(
        "--check",
        metavar="RASTER.npy",
        default=None,
        help="input (T, N_in) or (B, T, N_in): run it through the build and pondlib's simulator and compare",
    )
    cp.add_argument("--name", default="net", help="C prefix of every symbol and file stem (default net)")
    cp.add_argument("--limits", metavar="NAME", default=None, help="a network only: " + variants_help())
    cp.add_argument(
        "--dt",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="NIR only: the time step, when the file's convention does not store it",
    )
    cp.add_argument(
        "--reset",
        choices=("v_reset", "subtract", "zero"),
        default="v_reset",
        help="NIR only: the reset the network was trained with (default v_reset)",
    )
    cp.add_argument(
        "--cores",
        type=int,
        default=None,
        metavar="N",
        help="ONNX graphs: tiled multi-core C for N cluster cores (1..8; DMA-staged through L1)",
    )
    cp.add_argument("--l1", type=int, default=None, metavar="BYTES", help="ONNX graphs: the L1 budget of the tiles")
    cp.add_argument("--l2", type=int, default=None, metavar="BYTES", help="ONNX graphs: the L2 limit of the plan")
    cp.add_argument(
        "--single-buffer", action="store_true", help="ONNX graphs: one L1 buffer per tile input (no DMA overlap)"
    )
    add_device_options(cp, "compile", "--numerics")


def _cluster_options(args: argparse.Namespace) -> dict[str, Any]:
    """``cores``, ``l1_bytes``, ``l2_bytes``, ``double_buffer`` from the flags; {} when none was given."""
    if args.cores is None and args.l1 is None and args.l2 is None and not args.single_buffer:
        return {}
    cores = 8 if args.cores is None else args.cores
    if not 1 <= cores <= 8:
        raise UsageError(f"pond compile: --cores {cores}: a cluster has 1..8 cores")
    for flag, value in (("--l1", args.l1), ("--l2", args.l2)):
        if value is not None and value <= 0:
            raise UsageError(f"pond compile: {flag} {value}: pass a positive number of bytes")
    return {"cores": cores, "l1_bytes": args.l1, "l2_bytes": args.l2, "double_buffer": not args.single_buffer}


def run(console: Any, args: argparse.Namespace) -> int:
    """Generate, write, report; build with ``--target``; compare with ``--check`` (1 when not bit-exact)."""
    path = Path(args.model)
    device = None if args.numerics == FLOAT32 else registry.get(args.numerics)
    options = device_options(args, device, "compile", "--numerics")
    check_model_path(path, "a .nir or .pond network, or a saved configuration of the numerics' device")
    # absolute: the host build runs the compiler inside DIR, so a relative DIR would be resolved twice
    out = Path(args.out).absolute()
    if out.exists() and not out.is_dir():
        raise PondError("the output folder is a file", where=str(out), fix="name a folder with -o")
    if path.suffix.lower() == ".onnx":
        return _compile_graph(console, args, path, device, out, _cluster_options(args))
    cluster = _cluster_options(args)
    if cluster and (device is None or not device.cluster_c):
        takers = ", ".join(d.name for d in registry.devices() if d.cluster_c)
        raise UsageError(f"pond compile: --cores, --l1, --l2 and --single-buffer need --numerics {takers}")
    raster = load_array(args.check, "check raster", "--check") if args.check is not None else None
    if raster is not None and raster.ndim not in (2, 3):
        raise PondError(
            "check raster shape",
            value=tuple(raster.shape),
            limit="(T, N_in) or (B, T, N_in)",
            where=str(args.check),
        )
    if raster is not None:  # --check runs pondlib's simulator: its kernels compile beside the generation
        start_builds([device] if device is not None else [], networks=device is None)
    with stage(console, "Importing the pipeline"):
        import numpy as np  # noqa: F401  (heavy imports under the spinner)

        import pondlib.codegen  # noqa: F401
    try:
        model, reference = _device_model(console, args, path, raster, device, options)
    except PondError as err:
        raise with_flags(err, device) from None
    from pondlib.codegen import generate

    what = f", {cluster['cores']} cores, tiled" if cluster else ""
    with stage(console, f"Generating C ({args.numerics} numerics{what})") as st:
        program = generate(model, args.numerics, name=args.name, **cluster)
        program.write(out)
        st["note"] = f"{len(program.sources)} files in {out}"
    _memory_tables(console, program)
    notes(console, program.notes, "codegen note")
    target = args.target or ("host" if raster is not None else None)
    if target is None:
        return 0
    runner = _build(console, program, target, out)
    if raster is None:
        return 0
    return _check(console, program, target, runner, reference, raster, args)


def _device_model(
    console: Any, args: argparse.Namespace, path: Path, raster: Any, device: Any, options: dict
) -> tuple[Any, Any]:
    """``(model to emit, Reference)`` for the numerics: the network or its device configuration."""
    import numpy as np

    from pondlib.devices.core.device import Reference

    if path.suffix.lower() not in (".nir", ".pond") or device is None:
        if args.limits is not None:
            raise UsageError("pond compile: --limits applies to networks mapped to a device (.nir, .pond)")
    if path.suffix.lower() not in (".nir", ".pond"):
        if device is None:
            raise PondError(
                "a saved configuration compiles with the numerics of its device, not float32",
                where=str(path),
                fix="pass --numerics DEVICE, or a .nir / .pond network for float32",
            )
        if args.dt is not None or args.reset != "v_reset":
            raise UsageError("pond compile: --dt and --reset apply to NIR files only")
        saved = device.load(path)
        console.print(f"[bold]model[/]: {path} (saved {device.display_name} configuration)", highlight=False)
        return saved.config, device.reference(saved.config)
    net = load_network(console, args, path, "compile")
    if device is None:
        return net, Reference(lambda x: np.asarray(net(np.asarray(x, dtype=np.float32))[0]))
    calib, source = None, ""
    if device.needs_calibration:
        if raster is not None:
            calib, source = np.asarray(raster, dtype=np.float64), "the --check raster"
        else:
            calib, source = synthetic_events(net.size_in), "synthetic binary events"
    lim = device.limits(args.limits)
    title = device.mapping_title(lim, options) + (f", calibrating on {source}" if source else "")
    with stage(console, title):
        mapped = device.map(net, lim, calibration=calib, **options)
    notes(console, mapped.warnings, "warning")
    return mapped.config, device.reference(mapped.config)


def _memory_tables(console: Any, program: Any) -> None:
    mem = program.memory
    console.print(
        result_table(
            f"Memory of {program.name} (one sample, {program.numerics} numerics)",
            [
                ("flash (constants)", f"{mem.flash_bytes:,} bytes"),
                ("RAM", f"{mem.ram_bytes:,} bytes"),
                ("  state", f"{mem.state_bytes:,} bytes"),
                ("  scratch arena", f"{mem.scratch_bytes:,} bytes ({mem.scratch_unshared_bytes:,} without sharing)"),
                ("step I/O", f"{program.io.n_in} x {program.io.in_ctype} in, {program.io.n_out} x "
                 f"{program.io.out_ctype} out"),
            ],
        )
    )  # fmt: skip
    t = table(
        "Buffers",
        (("name", "left"), ("region", "left"), ("kind", "left"), ("type", "left"), ("count", "right"),
         ("bytes", "right"), ("offset", "right")),
    )  # fmt: skip
    for row in mem.rows():
        t.add_row(*(f"{v:,}" if isinstance(v, int) else str(v) for v in row))
    console.print(t)


def _build(console: Any, program: Any, target: str, out: Path) -> Any:
    """Build for ``target``; return ``run(x) -> (y, instructions per step or None)`` (a cluster program on
    ``rv32``: :func:`_cluster_runner`)."""
    if program.cores and target != "host":
        return _cluster_runner(console, program, target, out)
    if target == "host":
        from pondlib.codegen.toolchain import compile_host, run_host

        with stage(console, "Compiling for the host (cc -O2)") as st:
            exe = compile_host(program, out)
            st["note"] = str(exe)

        def run_on_host(x: Any) -> Any:
            return run_host(exe, program, x)[0], None

        return run_on_host
    from pondlib.codegen.cross import TARGETS as CROSS
    from pondlib.codegen.cross import build_cross, run_cross

    with stage(console, f"Cross-compiling for {CROSS[target].description} (zig cc -O2)") as st:
        build = build_cross(program, target, out / target)
        st["note"] = f"{build.elf}: {build.flash_bytes:,} bytes flash, {build.ram_bytes:,} bytes RAM (linked)"

    def run_emulated(x: Any) -> Any:
        y, _, ips = run_cross(build, x)
        return y, ips

    return run_emulated


def _check(console: Any, program: Any, target: str, runner: Any, reference: Any, raster: Any, args: Any) -> int:
    import numpy as np

    x = raster if raster.ndim == 3 else raster[None]
    io = program.io
    if x.shape[2] != io.n_in:
        raise PondError("check raster", value=tuple(raster.shape), limit=f"(B, T, {io.n_in})", where=str(args.check))
    quantize = reference.quantize
    if quantize is not None:
        x = np.asarray(quantize(x))
    elif io.in_dtype.kind != "f":
        if not np.all(x == np.round(x)) or x.min() < 0:
            raise PondError(
                "check raster",
                value="values that are not non-negative whole numbers",
                limit=f"event counts for the {program.numerics} numerics",
                where=str(args.check),
            )
        top = int(np.iinfo(io.in_dtype).max)
        clipped = int((x > top).sum())
        if clipped:
            notes(
                console,
                [f"{clipped:,} event counts above {top} ({io.in_ctype}) clipped to {top} for the C and pondlib alike"],
                "check input",
            )
        x = np.minimum(x, top).astype(np.int64)
    with stage(console, f"Running {x.shape[0]} x {x.shape[1]} steps on {target}") as st:
        t0 = time.perf_counter()
        y_c, ips = runner(x)
        st["note"] = f"{time.perf_counter() - t0:.2f} s" + (f", {ips:,.0f} instructions per step" if ips else "")
    with stage(console, "Running pondlib's simulator"):
        y_ref = np.asarray(reference.run(x))
    y_ref = y_ref.reshape(y_c.shape)
    if program.numerics == "float32":
        same = y_c.astype(np.float32).view(np.uint32) == y_ref.astype(np.float32).view(np.uint32)
    else:
        same = y_c.astype(np.int64) == y_ref.astype(np.int64)
    diff = int((~same).sum())
    rows = [("input", f"{args.check} {tuple(raster.shape)}"), ("target", target), ("outputs", f"{same.size:,}")]
    if ips:
        rows.append(("instructions per step", f"{ips:,.0f}"))
    rows.append(("differing outputs", f"{diff:,}"))
    console.print(result_table(f"Check of {program.name} against pondlib", rows, justify="left"))
    if diff == 0:
        console.print(f"[bold green]bit-exact[/]: all {same.size:,} outputs equal pondlib's", highlight=False)
        return 0
    console.print(f"[bold red]not bit-exact[/]: {diff:,} of {same.size:,} outputs differ", highlight=False)
    if program.numerics == "float32":
        notes(console, [n for n in program.notes if "order" in n.lower()][:1], "why")
    return 1


# -- ONNX graphs -------------------------------------------------------------------------------------------
def _graph_arrays(path: str, graph: Any) -> list:
    """The check input of a graph: an ``.npz`` with one array per graph input, in order (Deeploy's
    ``inputs.npz``; arrays after the inputs are ignored), or an ``.npy`` for a one-input graph."""
    import numpy as np

    p = Path(path)
    n = len(graph.inputs)
    if p.suffix.lower() == ".npz":
        if not p.is_file():
            raise PondError("check input file not found", where=str(p), fix="pass an existing .npz with --check")
        try:
            with np.load(p, allow_pickle=False) as data:
                arrays = [np.array(data[k]) for k in data.files]
        except (ValueError, OSError, EOFError) as exc:
            raise PondError(f"check input is not a readable .npz ({type(exc).__name__})", where=str(p)) from None
    else:
        arrays = [load_array(path, "check input", "--check")]
    if len(arrays) < n:
        raise PondError(
            "check input arrays",
            value=len(arrays),
            limit=f"{n} (one per graph input: {', '.join(graph.input_names)})",
            where=str(p),
            fix="save the inputs in graph order with numpy.savez(path, *arrays)",
        )
    for a, info in zip(arrays, graph.inputs):
        if info.shape is not None and tuple(a.shape) != tuple(info.shape):
            raise PondError(f"check input {info.name!r} shape", value=a.shape, limit=tuple(info.shape), where=str(p))
        if a.dtype.kind not in "biuf" or (a.dtype.kind == "f" and not np.all(a == np.round(a))):
            raise PondError(
                f"check input {info.name!r}",
                value="non-integer values",
                limit="quantized integers (the integer graph's input)",
                where=str(p),
                fix="quantize the input (for an ORT QDQ model: QuantizeLinear's scale and zero point)",
            )
    return [a.astype(np.int64) for a in arrays[:n]]


def _input_ranges(graph: Any, arrays: list) -> dict:
    """The narrowest of int8 / uint8 / int16 / uint16 / int32 holding each input (Deeploy's type inference)."""
    ranges = {}
    for info, a in zip(graph.inputs, arrays):
        lo, hi = int(a.min()), int(a.max())
        for t_lo, t_hi in ((-128, 127), (0, 255), (-32768, 32767), (0, 65535), (-(2**31), 2**31 - 1)):
            if t_lo <= lo and hi <= t_hi:
                ranges[info.name] = (t_lo, t_hi)
                break
    return ranges


def _compile_graph(console: Any, args: argparse.Namespace, path: Path, device: Any, out: Path, cluster: dict) -> int:
    """``pond compile model.onnx``: the device's graph path, then its C (tiled multi-core with ``--cores``)."""
    from pondlib.codegen import generate
    from pondlib.interop.onnx.opgraph import load_opgraph

    if device is None or not device.takes_graphs:
        takers = ", ".join(d.name for d in registry.devices() if d.takes_graphs)
        raise UsageError(f"pond compile: ONNX graphs compile with --numerics {takers}")
    if cluster and not device.cluster_c:
        raise UsageError(f"pond compile: --cores/--l1/--l2 need a device with cluster C, not {device.name}")
    with stage(console, "Importing and mapping the ONNX graph") as st:
        graph = load_opgraph(path)
        mapped = device.map_graph(graph, args.limits)
        st["note"] = f"{len(graph.nodes)} ops -> {len(mapped.config.nodes)} integer ops"
    g = mapped.config
    arrays = _graph_arrays(args.check, g) if args.check is not None else None
    options = dict(cluster)
    if arrays is not None:
        options["input_ranges"] = _input_ranges(g, arrays)
    what = f"{cluster['cores']} cores, tiled" if cluster else "one core"
    with stage(console, f"Generating C ({args.numerics} numerics, {what})") as st:
        program = generate(g, args.numerics, name=args.name, **options)
        program.write(out)
        st["note"] = f"{len(program.sources)} files in {out}"
    _memory_tables(console, program)
    notes(console, list(mapped.notes) + list(program.notes), "codegen note")
    target = args.target or ("host" if arrays is not None else None)
    if target is None:
        return 0
    runner = _build(console, program, target, out)
    if arrays is None:
        return 0
    return _check(console, program, target, runner, device.reference(g), device.graph_inputs(g, arrays), args)


def _cluster_runner(console: Any, program: Any, target: str, out: Path) -> Any:
    """The emulated cluster: build for 1 core and for ``program.cores`` from the same sources; the runner runs
    both, prints the instructions per core, the DMA bytes and the 1 -> N speed-up, and returns the N-core
    outputs with the critical path (instructions per step)."""
    import numpy as np

    from pondlib.codegen.cluster import build_cluster, run_cluster

    if target != "rv32":
        raise UsageError("pond compile: a multi-core program runs emulated on --target rv32 (or on the host)")
    counts = sorted({1, program.cores})
    builds = {}
    with stage(console, f"Cross-compiling for an RV32IMC cluster of {' and '.join(map(str, counts))} core(s)"):
        for n in counts:
            builds[n] = build_cluster(program, out / f"rv32_{n}core", cores=n)

    def run_emulated(x: Any) -> Any:
        runs = {n: run_cluster(builds[n], x) for n in counts}
        t = table("Instructions per core (per step)", (("cores", "right"), ("per core", "left"),
                  ("critical path", "right"), ("cycles", "right"), ("DMA stall", "right"),
                  ("DMA in / out (bytes)", "right")))  # fmt: skip
        for n in counts:
            r = runs[n]
            per = " ".join(f"{v / r.steps:,.0f}" for v in np.asarray(r.instructions).reshape(-1))
            stall = r.dma_wait_cycles / max(r.steps, 1)
            t.add_row(str(n), per, f"{r.span_per_step:,.0f}", f"{r.cycles_per_step:,.0f}", f"{stall:,.0f}",
                      f"{r.dma_in_bytes:,} / {r.dma_out_bytes:,}")  # fmt: skip
        console.print(t)
        console.print(
            "critical path: the slowest core's instructions per barrier phase, summed; cycles: the same with the "
            "DMA's time (50 cycles per transfer + 8 B per cycle, one engine) where a core waits for it",
            highlight=False,
        )
        if len(counts) > 1:
            speed = runs[1].span_per_step / max(runs[program.cores].span_per_step, 1)
            speed_c = runs[1].cycles_per_step / max(runs[program.cores].cycles_per_step, 1)
            console.print(f"speed-up 1 -> {program.cores} cores (emulated): {speed:.2f}x in instructions, "
                          f"{speed_c:.2f}x in cycles with the DMA", highlight=False)  # fmt: skip
        same = all(np.array_equal(np.asarray(runs[n].y), np.asarray(runs[counts[-1]].y)) for n in counts)
        if not same:
            raise PondError("the 1-core and the multi-core builds disagree", where=str(out), fix="report this bug")
        last = runs[counts[-1]]
        return last.y, last.span_per_step

    return run_emulated
