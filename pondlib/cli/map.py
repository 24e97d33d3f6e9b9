"""``pond map MODEL --device xylo|spinnaker2|siracusa [--limits NAME] [--dt S] ...``: map a NIR file or a
network saved with :func:`pondlib.io.save_network` onto a device; print the mapping report (resources,
quantization), or the table of violated design rules (exit status 1).

Bad input is one ``error:`` line naming the file, exit status 1: a missing MODEL or a folder, a file that
is neither a readable NIR file nor a saved network (truncated, corrupted, unknown NIR node types, NaN
parameters: :func:`pondlib.interop.load_nir` and :func:`pondlib.io.load_network` say which node and
field), and a ``--calibration`` raster that is not a non-empty (B, N_in) or (B, T, N_in) ``.npy`` array
of finite real numbers (text, complex, NaN, an empty batch). Options of another device than
``--device``, ``--dt`` that is not a positive number, and ``--dt``/``--reset`` with a saved network are
usage errors (exit status 2).

ONNX models (``.onnx``, float or QDQ) map to ``--device siracusa|spinnaker2``; ``--out FILE`` (ONNX only,
checked before mapping: a folder or a missing folder is an ``error:`` line) writes the deployment for
``pond simulate FILE``: the SpiNNaker2 DRAM image (``DNNConfig.to_dram_image``) or the Siracusa
configuration (``pondlib.devices.siracusa.save_config``, with the NCHW -> HWC input order of CNNs).

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
    drop_synapse_hint,
    load_floats,
    positive_float,
    synthetic_events,
    writable_file,
)
from pondlib.cli.models import check_model_path, load_network
from pondlib.cli.render import (
    notes,
    resources_table,
    siracusa_quantization_table,
    spinnaker2_quantization_table,
    stage,
    violations_table,
    xylo_quantization_table,
)
from pondlib.errors import ConstraintError, GraphError, PondError

__all__ = ["DEVICES", "add_parser", "run"]

#: Devices of ``pond map`` / ``pond devices``.
DEVICES = ("xylo", "spinnaker2", "siracusa")

#: SpiNNaker2 neuron models (``pondlib.devices.spinnaker2.NEURON_MODELS``), listed here so that the
#: parser needs no device import (a test checks that the two agree).
_S2_MODELS = ("lif", "lif_no_delay", "lif_curr_exp", "lif_curr_exp_no_delay")


#: What MODEL may be, for error messages.
_MODEL_KINDS = "a .nir file or a network saved with pondlib.io.save_network"


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
    mp.add_argument("--device", required=True, choices=DEVICES, help="the target device")
    mp.add_argument(
        "--limits",
        metavar="NAME",
        default=None,
        help="device variant (see 'pond devices'): xylo audio2 (default), audio3, imu; "
        "spinnaker2 chip (default), chip300, board; siracusa siracusa",
    )
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
    mp.add_argument(
        "--drop-biases",
        action="store_true",
        help="Xylo only: drop weight-layer biases (the chip has none) instead of a violation",
    )
    mp.add_argument(
        "--neuron-model",
        choices=_S2_MODELS,
        default="lif_curr_exp",
        help="SpiNNaker2 only: the neuron model and synapse word (default lif_curr_exp: "
        "4-bit weights with delays; *_no_delay: 7-bit weights)",
    )
    mp.add_argument(
        "--calibration",
        metavar="RASTER.npy",
        default=None,
        help="Siracusa only: representative input (B, T, N_in) that sets the integer "
        "scales (default: synthetic binary events, with a note)",
    )
    mp.add_argument(
        "--out",
        metavar="FILE",
        default=None,
        help="ONNX only: write the deployment for 'pond simulate': a SpiNNaker2 DRAM image "
        "(DNNConfig.to_dram_image, e.g. model.s2img) or a Siracusa configuration "
        "(pondlib.devices.siracusa.save_config, e.g. model.npz)",
    )
    mp.add_argument(
        "--drop-synapse",
        action="store_true",
        help="Siracusa only: feed LIF input straight into the membrane (its integer LIF has "
        "no synaptic current; this changes the dynamics)",
    )


def run(console: Any, args: argparse.Namespace) -> int:
    """Map ``args.model`` onto ``args.device``; 0 when it fits, 1 (after the violations table) when not."""
    if Path(args.model).suffix.lower() == ".onnx":
        check_model_path(Path(args.model), _MODEL_KINDS)
        if args.out is not None:
            writable_file(args.out, "output file", "--out", "model.s2img")
        return _map_onnx(console, args)
    if args.out is not None:
        raise UsageError("pond map: --out applies to ONNX models only (.onnx)")
    _check_device_options(args)
    check_model_path(Path(args.model), _MODEL_KINDS)
    with stage(console, "Importing the pipeline"):
        import numpy as np  # noqa: F401  (heavy imports under the spinner)

        import pondlib.nn  # noqa: F401
    net = load_network(console, args, Path(args.model), "map")
    mappers = {"xylo": _map_xylo, "spinnaker2": _map_spinnaker2, "siracusa": _map_siracusa}
    try:
        mappers[args.device](console, net, args)
    except ConstraintError as err:
        console.print(violations_table(err, err.device))
        console.print(
            f"[bold red]{Path(args.model).name} does not fit {err.device}[/]: "
            f"{len(err.violations)} violation(s); each row says how to fix it",
            highlight=False,
        )
        return 1
    return 0


def _check_device_options(args: argparse.Namespace) -> None:
    """A :class:`UsageError` for an option of another device than ``--device``."""
    only = {
        "--drop-biases": ("xylo", args.drop_biases),
        "--neuron-model": ("spinnaker2", args.neuron_model != "lif_curr_exp"),
        "--calibration": ("siracusa", args.calibration is not None),
        "--drop-synapse": ("siracusa", args.drop_synapse),
    }
    for flag, (device, used) in only.items():
        if used and args.device != device:
            raise UsageError(f"pond map: {flag} applies to --device {device} only")


def _map_xylo(console: Any, net: Any, args: argparse.Namespace) -> None:
    from pondlib.devices.xylo import mapper
    from pondlib.devices.xylo.config import config_from_specification
    from pondlib.devices.xylo.limits import get_limits
    from pondlib.devices.xylo.report import quantization_summary, resource_usage
    from pondlib.transform import channel_quantize

    lim = get_limits(args.limits)
    with stage(console, f"Mapping to {lim.name}, quantizing (per channel), configuring") as st:
        spec = mapper(net, lim, drop_biases=args.drop_biases)
        qspec = channel_quantize(spec)
        _, ok, message = config_from_specification(qspec)
        st["note"] = "configuration valid" if ok else f"configuration invalid: {message}"
    console.print(resources_table(f"Resources on {lim.name}", resource_usage(qspec, lim)))
    console.print(xylo_quantization_table(quantization_summary(qspec)))
    notes(console, spec.report.notes, "mapper note")
    console.print(
        f"[bold green]{Path(args.model).name} fits {lim.name}[/] ({qspec.n_hidden} hidden, "
        f"{qspec.n_output} output neurons)",
        highlight=False,
    )


def _map_spinnaker2(console: Any, net: Any, args: argparse.Namespace) -> None:
    from pondlib.devices.spinnaker2.limits import get_limits
    from pondlib.devices.spinnaker2.report import configure, map_network, quantization_summary, resource_usage

    lim = get_limits(args.limits)
    with stage(console, f"Mapping to the {lim.name} ({args.neuron_model}), configuring") as st:
        spec, late = map_network(net, lim, args.neuron_model)
        configure(spec, "pond map")
        st["note"] = f"{spec.report.pes_used} PEs, configuration valid"
    console.print(resources_table(f"Resources on the {lim.name} ({spec.neuron_model})", resource_usage(spec, lim)))
    console.print(spinnaker2_quantization_table(quantization_summary(spec)))
    notes(console, spec.report.notes, "mapper note")
    notes(console, late, "warning")
    console.print(
        f"[bold green]{Path(args.model).name} fits the {lim.name}[/] ({spec.report.pes_used} PEs)", highlight=False
    )


def _map_siracusa(console: Any, net: Any, args: argparse.Namespace) -> None:

    from pondlib.devices.siracusa.config import config_from_specification
    from pondlib.devices.siracusa.limits import get_limits
    from pondlib.devices.siracusa.report import map_network, quantization_summary, resource_usage

    lim = get_limits(args.limits)
    if args.calibration is not None:
        calib = load_floats(args.calibration, "calibration", "--calibration")
        source = f"{args.calibration} {tuple(calib.shape)}"
    else:
        calib = synthetic_events(net.size_in)
        source = "synthetic binary events (32 samples x 50 steps, rate 0.2)"
    with stage(console, f"Mapping to {lim.name}, calibrating on {source}") as st:
        try:
            _, spec = map_network(net, lim, calib, args.drop_synapse)
        except GraphError as err:
            raise drop_synapse_hint(err) from None
        _, ok, message = config_from_specification(spec)
        st["note"] = "configuration valid" if ok else f"configuration invalid: {message}"
    console.print(resources_table(f"Resources on {lim.name} (per step of one sample)", resource_usage(spec, lim)))
    console.print(siracusa_quantization_table(quantization_summary(spec)))
    if args.calibration is None:
        notes(
            console,
            [
                "the integer scales come from synthetic input: pass --calibration RASTER.npy with "
                "representative input for a deployment"
            ],
            "note",
        )
    console.print(f"[bold green]{Path(args.model).name} fits {lim.name}[/]", highlight=False)


def _map_onnx(console: Any, args: argparse.Namespace) -> int:
    """``pond map model.onnx``: float models through the device mapper (calibrated on ``--calibration``
    or synthetic uniform [0, 1) input, with a note), QDQ models straight to integer layers."""
    import numpy as np

    from pondlib.interop import onnx as ox

    path = Path(args.model)
    model = ox.reader.read_model(path)
    qdq = any(n.op_type == "QuantizeLinear" for n in model.graph.node)
    if qdq:
        qm = ox.load_qdq(model)
        console.print(f"[bold]model[/]: {path} (ONNX QDQ, {len(qm.layers)} integer layers)", highlight=False)
        if args.device == "siracusa":
            cfg, rep = ox.qdq_to_siracusa(qm)
        elif args.device == "spinnaker2":
            cfg, rep = ox.qdq_to_spinnaker2(qm)
        else:
            raise UsageError("pond map: ONNX models map to --device siracusa or spinnaker2")
        for r in rep:
            console.print(f"{r['name']}: scale-approximation error {r['rel_error']:.3e}", highlight=False)
        notes(console, list(qm.notes), "ONNX import")
        _write_out(console, args, cfg, ox.adapters.hwc_permutation(qm.input_shape))
        console.print(f"[bold green]{path.name} fits {args.device}[/]", highlight=False)
        return 0
    fm = ox.load_onnx(model)
    console.print(f"[bold]model[/]: {path} (ONNX opset {fm.opset}, {len(fm.layers)} layers)", highlight=False)
    notes(console, list(fm.notes), "ONNX import")
    if args.calibration is not None:
        calib = load_floats(args.calibration, "calibration", "--calibration")
    else:
        calib = np.random.default_rng(0).random((32, *fm.input_shape))
        notes(console, ["calibrated on synthetic uniform [0, 1) input: pass --calibration X.npy"], "note")
    try:
        if args.device == "siracusa":
            from pondlib.devices.siracusa import mapper

            layers, perm = ox.to_siracusa(fm)
            spec = mapper(layers, calibration=calib.reshape(len(calib), -1)[:, perm])
            console.print(spec.report_table(), highlight=False)
            _write_out(console, args, spec.config, perm)
        elif args.device == "spinnaker2":
            from pondlib.devices.spinnaker2 import dnn_mapper

            cfg = dnn_mapper(ox.to_spinnaker2(fm), calibration=calib.reshape(len(calib), -1))
            for ly in cfg.layers:
                console.print(f"{ly.name}: {ly.weights.shape} shift {ly.shift} workers {ly.workers}", highlight=False)
            _write_out(console, args, cfg, None)
        else:
            raise UsageError("pond map: ONNX models map to --device siracusa or spinnaker2")
    except ConstraintError as err:
        console.print(violations_table(err, err.device))
        return 1
    console.print(f"[bold green]{path.name} fits {args.device}[/]", highlight=False)
    return 0


def _write_out(console: Any, args: argparse.Namespace, cfg: Any, input_order: Any) -> None:
    """``--out``: the SpiNNaker2 DRAM image bytes, or the Siracusa configuration (with the input order)."""
    if args.out is None:
        return
    import numpy as np

    if args.device == "spinnaker2":
        data = cfg.to_dram_image()
        try:
            Path(args.out).write_bytes(data)
        except OSError as exc:
            raise PondError(
                f"cannot write the DRAM image ({type(exc).__name__})", where=args.out, fix="pass a writable --out"
            ) from None
        what = f"SpiNNaker2 DRAM image, {len(data):,} bytes"
    else:
        from pondlib.devices.siracusa import save_config

        order = None if input_order is None else np.asarray(input_order)
        if order is not None and np.array_equal(order, np.arange(order.size)):
            order = None
        save_config(args.out, cfg, input_order=order)
        what = "Siracusa configuration" + ("" if order is None else " (with its input order)")
    console.print(f"[green]✓[/] wrote {args.out}: {what}; run it with pond simulate", highlight=False)
