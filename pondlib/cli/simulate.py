"""``pond simulate CONFIG --input RASTER.npy [--record OUT.npz] [--quantize] [--device NAME]``: run a saved
deployment with its device's bit-exact simulator; print a summary; write the output (and what the device
records) with ``--record``.

CONFIG is recognised by its content, whatever its name: each registered device says whether a file is one
of its saved deployments (``Device.recognise``: a SpiNNaker2 DRAM image by its magic ``S2DNNIMG``, a
Siracusa configuration by its ``format`` entry); a file no device recognises is read by the device that
takes unrecognised files (``Device.reads_unrecognised``: a Xylo configuration), whose loader says what is
wrong with it. ``--device`` names the device when the content does not say.

The input is what the device's simulator takes (``Device.simulate_saved`` checks it and names the file):
Xylo event counts, whole numbers >= 0 of shape (T, N_in) or (B, T, N_in); DNN deployments ``(B, N_in)``
(Siracusa also ``(B, T, N_in)``) in the model's own (ONNX, flattened) order, integers in the input range,
or real numbers with ``--quantize``, quantized by the deployment's own input quantizer. ``--quantize``
with a device that takes no real-valued input is a usage error.

Checked before simulating (one ``error:`` line naming the file, exit status 1): CONFIG is read by the
device's loader (missing, truncated or corrupted archives, fields of the wrong type); the input must be
a non-empty ``.npy`` array of finite real numbers; ``--record`` must name a file (not a folder) in an
existing folder.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pond")
    >>> add_parser(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["simulate", "c.npz", "--input", "x.npy"])
    >>> args.config, args.input, args.device, args.record, args.quantize
    ('c.npz', 'x.npy', 'xylo', None, False)
"""

from __future__ import annotations

import argparse
from typing import Any

from pondlib.cli.args import UsageError, load_array, naming_option, writable_file
from pondlib.cli.builds import start_builds
from pondlib.cli.render import render, result_table, stage
from pondlib.devices import registry
from pondlib.errors import PondError

__all__ = ["add_parser", "run"]


def _fallback() -> str:
    """The device that reads files no device recognises (the first that says it does)."""
    return next((d.name for d in registry.devices() if d.reads_unrecognised), registry.names()[0])


def add_parser(subparsers: Any) -> None:
    """Register ``simulate`` on ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    sim = subparsers.add_parser(
        "simulate",
        help="run a saved deployment of any device (pond demo's <device>_config.npz, ...) bit-exactly",
        description="Run a saved deployment of any registered device (pond demo's <device>_config.npz, a "
        "file written by 'pond map model.onnx --out', ...) on input from a .npy file with the device's "
        "bit-exact simulator; print a summary and write the output (and the device's record) with --record.",
    )
    sim.add_argument(
        "config",
        metavar="CONFIG",
        help="a saved deployment (Device.save, pond map model.onnx --out FILE, ...); recognised by content",
    )
    sim.add_argument(
        "--input",
        required=True,
        metavar="RASTER.npy",
        help="what the device's simulator takes (.npy): event counts (T, N_in) or (B, T, N_in) for spiking "
        "chips; (B, N_in) or (B, T, N_in) integers for DNN deployments, or real numbers with --quantize",
    )
    sim.add_argument(
        "--record",
        metavar="OUT.npz",
        default=None,
        help="write the output spikes, the record (Vmem, Isyn, Spikes, ...) and the final state here",
    )
    fallback = _fallback()
    sim.add_argument(
        "--device",
        choices=registry.names(),
        default=fallback,
        help=f"the device of CONFIG when its content does not say (default: recognised by content, else {fallback})",
    )
    takers = ", ".join(d.name for d in registry.devices() if d.quantizes_saved_input)
    sim.add_argument(
        "--quantize",
        action="store_true",
        help=f"{takers}: the input is real numbers; quantize it with the deployment's input quantizer",
    )


def _device(args: argparse.Namespace) -> Any:
    """The device of ``args.config``: by content unless ``--device`` names another than the default."""
    if args.device != _fallback():
        return registry.get(args.device)
    for device in registry.devices():
        if device.recognise(args.config):
            return device
    return registry.get(args.device)


def _save(path: str, payload: dict) -> None:
    import numpy as np

    try:
        with open(path, "wb") as fh:
            np.savez_compressed(fh, **payload)
    except OSError as exc:
        raise PondError(
            f"cannot write the record file ({type(exc).__name__}: {exc.strerror or exc})",
            where=path,
            fix="pass a writable --record path",
        ) from None


def run(console: Any, args: argparse.Namespace) -> int:
    """Simulate ``args.config`` on ``args.input``; print the summary; write ``args.record``; return 0."""
    device = _device(args)
    start_builds([device], networks=False)  # its simulator's kernel compiles while the files are read
    if args.quantize and not device.quantizes_saved_input:
        takers = [d.display_name for d in registry.devices() if d.quantizes_saved_input]
        raise UsageError(f"pond simulate: --quantize applies to saved deployments of {', '.join(takers)}")
    saved = device.load(args.config)
    x = load_array(args.input, "input", "--input")
    if args.record is not None:
        writable_file(args.record, "record file", "--record", "record.npz")
    try:
        with stage(console, f"Simulating {args.config} on {device.display_name} (bit-exact) on {tuple(x.shape)} input"):
            result = device.simulate_saved(saved, x, quantize=args.quantize, where=args.input)
    except PondError as err:
        raise naming_option(err, args.input, "--input") from None
    prefix = {"configuration": f"{args.config}: ", "input": f"{args.input}: "}
    rows = [(what, prefix.get(what, "") + value) for what, value in result.rows]
    console.print(result_table(result.title, rows, justify="left"))
    console.print(render(result.outputs))
    if result.note:
        console.print(result.note, highlight=False)
    if args.record is not None:
        _save(args.record, dict(result.payload))
        shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in list(result.payload.items())[:2])
        console.print(
            f"[green]✓[/] wrote {args.record}: {', '.join(result.payload)} [dim]({shapes})[/]", highlight=False
        )
    return 0
