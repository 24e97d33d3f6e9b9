"""``pond map MODEL --device NAME [--limits NAME] [--dt S] ...``: map a NIR file or a network saved with
:func:`pondlib.io.save_network` onto a registered device; print the mapping report (resources,
quantization), or the table of violated design rules (exit status 1).

Bad input is one ``error:`` line naming the file, exit status 1: a missing MODEL or a folder, a file that
is neither a readable NIR file nor a saved network (truncated, corrupted, unknown NIR node types, NaN
parameters: :func:`pondlib.interop.load_nir` and :func:`pondlib.io.load_network` say which node and
field), and a ``--calibration`` raster that is not a non-empty (B, N_in) or (B, T, N_in) ``.npy`` array
of finite real numbers (text, complex, NaN, an empty batch). Options of another device than
``--device`` (each device declares its own: ``Device.options``), ``--calibration`` for a device that
does not calibrate, ``--dt`` that is not a positive number, and ``--dt``/``--reset`` with a saved
network are usage errors (exit status 2).

A device that sets integer scales from data (``Device.needs_calibration``) is calibrated on
``--calibration`` or, without it, on synthetic binary events (with a note).

ONNX models (``.onnx``, float or QDQ) map to the devices with a DNN path (``Device.takes_onnx``);
``--out FILE`` (ONNX only, checked before mapping: a folder or a missing folder is an ``error:`` line)
writes the deployment for ``pond simulate FILE`` (``Device.save``).

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pond")
    >>> add_parser(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["map", "net.nir", "--device", "xylo", "--dt", "1e-4"])
    >>> args.model, args.device, args.dt, args.limits, args.neuron_model
    ('net.nir', 'xylo', 0.0001, None, 'lif_curr_exp')
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pondlib.cli.args import (
    UsageError,
    add_device_options,
    device_options,
    load_floats,
    positive_float,
    synthetic_events,
    variants_help,
    with_flags,
    writable_file,
)
from pondlib.cli.models import check_model_path, load_network
from pondlib.cli.render import notes, render, resources_table, stage, violations_table
from pondlib.devices import registry
from pondlib.errors import ConstraintError, ONNXError, PondError

__all__ = ["add_parser", "run"]

#: What MODEL may be, for error messages.
_MODEL_KINDS = "a .nir file or a network saved with pondlib.io.save_network"
#: What the calibration without --calibration is, for the note.
_SYNTHETIC = "synthetic binary events (32 samples x 50 steps, rate 0.2)"


def add_parser(subparsers: Any) -> None:
    """Register ``map`` on ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    mp = subparsers.add_parser(
        "map",
        help="map a NIR file or a saved network to a device; report or list violations",
        description="Map MODEL onto a device and print the mapping report (resources, "
        "quantization), or the table of every violated design rule (exit status 1).",
    )
    mp.add_argument(
        "model",
        metavar="MODEL",
        help="a NIR file (.nir) or a network saved with pondlib.io.save_network (pond demo writes network.pond)",
    )
    mp.add_argument("--device", required=True, choices=registry.names(), help="the target device")
    mp.add_argument("--limits", metavar="NAME", default=None, help=variants_help())
    mp.add_argument(
        "--dt",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="NIR only: the time step, needed when the file's convention does not store it "
        "(Norse, Sinabs); default: from the file",
    )
    mp.add_argument(
        "--reset",
        choices=("v_reset", "subtract", "zero"),
        default="v_reset",
        help="NIR only: the reset the network was trained with (files cannot say; default v_reset, NIR >= 1.0.6)",
    )
    calibrating = ", ".join(d.name for d in registry.devices() if d.needs_calibration or d.takes_onnx)
    mp.add_argument(
        "--calibration",
        metavar="RASTER.npy",
        default=None,
        help=f"representative input (B, T, N_in) that sets the integer scales ({calibrating}; default: "
        "synthetic binary events, with a note)",
    )
    mp.add_argument(
        "--out",
        metavar="FILE",
        default=None,
        help="ONNX only: write the deployment for 'pond simulate', in the device's own format (a DRAM image, "
        "a configuration archive, ...)",
    )
    add_device_options(mp, "map", "--device")


def run(console: Any, args: argparse.Namespace) -> int:
    """Map ``args.model`` onto ``args.device``; 0 when it fits, 1 (after the violations table) when not."""
    device = registry.get(args.device)
    if Path(args.model).suffix.lower() == ".onnx":
        check_model_path(Path(args.model), _MODEL_KINDS)
        if args.out is not None:
            writable_file(args.out, "output file", "--out", "model.s2img")
        return _map_onnx(console, args, device)
    if args.out is not None:
        raise UsageError("pond map: --out applies to ONNX models only (.onnx)")
    options = device_options(args, device, "map", "--device")
    if args.calibration is not None and not device.needs_calibration:
        takers = ", ".join(d.name for d in registry.devices() if d.needs_calibration)
        raise UsageError(f"pond map: --calibration applies to --device {takers} only (or to ONNX models)")
    check_model_path(Path(args.model), _MODEL_KINDS)
    with stage(console, "Importing the pipeline"):
        import numpy as np  # noqa: F401  (heavy imports under the spinner)

        import pondlib.nn  # noqa: F401
    net = load_network(console, args, Path(args.model), "map")
    try:
        return _map_network(console, args, device, net, options)
    except ConstraintError as err:
        console.print(violations_table(err, err.device))
        console.print(
            f"[bold red]{Path(args.model).name} does not fit {err.device}[/]: "
            f"{len(err.violations)} violation(s); each row says how to fix it",
            highlight=False,
        )
        return 1
    except PondError as err:
        raise with_flags(err, device) from None


def _map_network(console: Any, args: argparse.Namespace, device: Any, net: Any, options: dict) -> int:
    lim = device.limits(args.limits)
    calib, source = None, ""
    if device.needs_calibration:
        if args.calibration is not None:
            calib = load_floats(args.calibration, "calibration", "--calibration")
            source = f"{args.calibration} {tuple(calib.shape)}"
        else:
            calib, source = synthetic_events(net.size_in), _SYNTHETIC
    title = device.mapping_title(lim, options) + (f", calibrating on {source}" if source else "")
    with stage(console, title) as st:
        mapped = device.map(net, lim, calibration=calib, **options)
        st["note"] = "configuration valid"
    report = device.report(mapped)
    console.print(resources_table(report.title, report.resources))
    for t in report.tables:
        console.print(render(t))
    notes(console, list(mapped.notes) + list(report.notes), "mapper note")
    notes(console, mapped.warnings, "warning")
    if device.needs_calibration and args.calibration is None:
        notes(
            console,
            ["the integer scales come from synthetic input: pass --calibration RASTER.npy with representative input "
             "for a deployment"],
            "note",
        )  # fmt: skip
    summary = f" ({mapped.summary})" if mapped.summary else ""
    console.print(f"[bold green]{Path(args.model).name} fits {device.called(lim)}[/]{summary}", highlight=False)
    return 0


def _map_onnx(console: Any, args: argparse.Namespace, device: Any) -> int:
    """``pond map model.onnx``: float models through the device's DNN mapper (calibrated on ``--calibration``
    or synthetic uniform [0, 1) input, with a note), QDQ models straight to integer layers; graphs that are
    not chains (custom integer dialects, several inputs, attention) through the device's graph path."""
    from pondlib.interop.onnx.opgraph import is_standard_op, parse_model

    if not device.takes_onnx:
        takers = ", ".join(d.name for d in registry.devices() if d.takes_onnx)
        raise UsageError(f"pond map: ONNX models map to --device {takers}")
    path = Path(args.model)
    proto, _ = parse_model(path)
    custom = any(not is_standard_op(n.op_type, n.domain) for n in proto.graph.node)
    try:
        if custom and device.takes_graphs:
            mapped = _map_graph(console, args, device, path, "custom ops")
        else:
            try:
                mapped = _map_chain(console, args, device, path)
            except ONNXError as err:
                if not device.takes_graphs:
                    raise
                why = f"not a chain ({err.what})"
                mapped = _map_graph(console, args, device, path, why)
    except ConstraintError as err:
        console.print(violations_table(err, err.device))
        return 1
    if args.out is not None:
        what = device.save(mapped, args.out)
        console.print(f"[green]✓[/] wrote {args.out}: {what}; run it with pond simulate", highlight=False)
    console.print(f"[bold green]{path.name} fits {device.name}[/]", highlight=False)
    return 0


def _map_chain(console: Any, args: argparse.Namespace, device: Any, path: Path) -> Any:
    """A float or QDQ layer chain through the device's DNN path (printed as it goes)."""
    import numpy as np

    from pondlib.interop import onnx as ox
    from pondlib.interop.onnx.reader import read_model

    model = read_model(path)
    if any(n.op_type == "QuantizeLinear" for n in model.graph.node):
        qm = ox.load_qdq(model)
        console.print(f"[bold]model[/]: {path} (ONNX QDQ, {len(qm.layers)} integer layers)", highlight=False)
        extra = device_options(args, device, "map-onnx", "--device")  # a device's options for ONNX models
        mapped = device.map_qdq(qm, args.limits, **{k: v for k, v in extra.items() if v is not None})
        for line in device.describe_dnn(mapped):
            console.print(line, highlight=False)
        notes(console, list(qm.notes), "ONNX import")
        return mapped
    fm = ox.load_onnx(model)
    console.print(f"[bold]model[/]: {path} (ONNX opset {fm.opset}, {len(fm.layers)} layers)", highlight=False)
    notes(console, list(fm.notes), "ONNX import")
    if args.calibration is not None:
        calib = load_floats(args.calibration, "calibration", "--calibration", ndim=None)
        n_in = int(np.prod(fm.input_shape))
        if calib.ndim < 2 or calib[0].size != n_in:  # a PondError, not an ONNXError: no graph-path retry
            raise PondError(
                "calibration shape", value=tuple(calib.shape), limit=f"(B, {n_in}) or (B, *{tuple(fm.input_shape)})",
                where=str(args.calibration), fix="pass --calibration X.npy with one column per model input feature",
            )  # fmt: skip
    else:
        calib = np.random.default_rng(0).random((32, *fm.input_shape))
        notes(console, ["calibrated on synthetic uniform [0, 1) input: pass --calibration X.npy"], "note")
    extra = device_options(args, device, "map-onnx", "--device")  # a device's options for ONNX models
    mapped = device.map_onnx(fm, calib, args.limits, **{k: v for k, v in extra.items() if v is not None})
    notes(console, list(mapped.notes), "mapper note")
    for line in device.describe_dnn(mapped):
        console.print(line, highlight=False)
    return mapped


def _map_graph(console: Any, args: argparse.Namespace, device: Any, path: Path, why: str) -> Any:
    """The whole operator graph through the device's graph path (``Device.map_graph``)."""
    from pondlib.interop.onnx.opgraph import load_opgraph

    graph = load_opgraph(path)
    n_in, n_out = len(graph.inputs), len(graph.outputs)
    console.print(
        f"[bold]model[/]: {path} (ONNX graph, {len(graph.nodes)} ops, {n_in} input(s), {n_out} output(s); {why})",
        highlight=False,
    )
    if args.calibration is not None:
        raise UsageError("pond map: --calibration applies to float layer chains; a graph carries its own scales")
    mapped = device.map_graph(graph, args.limits)
    report = device.report(mapped)
    console.print(resources_table(report.title, report.resources))
    for t in report.tables:
        console.print(render(t))
    notes(console, list(graph.notes) + list(mapped.notes) + list(report.notes), "ONNX import")
    return mapped
