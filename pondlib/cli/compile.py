"""``pond compile MODEL --numerics float32|DEVICE -o DIR [--target host|cortex-m4|rv32] [--check RASTER.npy]
[--name NAME] [device options]``: generate C for a network or a device configuration (:mod:`pondlib.codegen`),
write the sources into DIR and print the memory report (flash, RAM, per buffer).

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
    add_device_options(cp, "compile", "--numerics")


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
    raster = load_array(args.check, "check raster", "--check") if args.check is not None else None
    if raster is not None and raster.ndim not in (2, 3):
        raise PondError(
            "check raster shape",
            value=tuple(raster.shape),
            limit="(T, N_in) or (B, T, N_in)",
            where=str(args.check),
        )
    with stage(console, "Importing the pipeline"):
        import numpy as np  # noqa: F401  (heavy imports under the spinner)

        import pondlib.codegen  # noqa: F401
    try:
        model, reference = _device_model(console, args, path, raster, device, options)
    except PondError as err:
        raise with_flags(err, device) from None
    from pondlib.codegen import generate

    with stage(console, f"Generating C ({args.numerics} numerics)") as st:
        program = generate(model, args.numerics, name=args.name)
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
    """Build for ``target``; return ``run(x) -> (y, instructions per step or None)``."""
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
