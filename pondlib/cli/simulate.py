"""``pond simulate CONFIG --input RASTER.npy [--record OUT.npz] [--quantize]``: run a saved deployment with
the bit-exact simulator; print a summary; write the output (and for Xylo the record and the final state).

CONFIG is recognised by its content, whatever its name: a SpiNNaker2 DRAM image (magic ``S2DNNIMG``,
``pond map model.onnx --device spinnaker2 --out model.s2img``) is walked by ``run_dram_image``; a Siracusa
configuration (an ``.npz`` with ``format`` = ``pondlib.siracusa.config``, ``pond map model.onnx --device
siracusa --out model.npz``) runs on ``SiracusaSim``; anything else is read as a Xylo configuration.

DNN input (SpiNNaker2 and Siracusa): ``(B, N_in)`` (Siracusa also ``(B, T, N_in)``), ``N_in`` in the
model's own (ONNX, flattened) order; Siracusa applies the saved input order. Without ``--quantize`` the
values are the integer input itself (int8, or uint8 where the model's input is unsigned; whole numbers
of any dtype); with ``--quantize`` they are real numbers quantized by the deployment's input quantizer:
SpiNNaker2 ``sat8(rint(x / s))`` with the QDQ model's input scale ``s`` stored in the image (float32
division, as ONNX QuantizeLinear), else ``DNNConfig.quantize_input`` (``2^input_frac``); Siracusa
``quantize_input`` (``rint(x / input_scale)``, saturating). Fractional input without ``--quantize``,
``--quantize`` with Xylo, and values outside the input range are errors.

Checked before simulating (one ``error:`` line naming the file, exit status 1): CONFIG is read by
:meth:`~pondlib.devices.xylo.config.XyloConfig.load` (missing, truncated or corrupted archives, fields of
the wrong type); the input must be a ``.npy`` array of whole numbers >= 0 of shape (T, N_in) or
(B, T, N_in), non-empty, never NaN, infinite, fractional, complex or text; ``--record`` must name a file
(not a folder) in an existing folder. SpiNNaker2 images are checked by ``DNNConfig.from_dram_image`` and
Siracusa configurations by ``load_config`` (each names the file and the field).

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
import time
from pathlib import Path
from typing import Any

from pondlib.cli.args import UsageError, load_events, writable_file
from pondlib.cli.render import result_table, stage, table
from pondlib.errors import PondError

__all__ = ["add_parser", "run"]

#: Samples listed in the table of output spike counts.
_SHOWN = 20


def add_parser(subparsers: Any) -> None:
    """Register ``simulate`` on ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    sim = subparsers.add_parser(
        "simulate",
        help="run a saved Xylo configuration, SpiNNaker2 DRAM image or Siracusa configuration",
        description="Run a configuration saved with XyloConfig.save on input event "
        "counts, or a SpiNNaker2 DRAM image / Siracusa configuration written by 'pond map model.onnx --out' "
        "on (B, N_in) input, with the bit-exact simulator; print a summary and write the output "
        "(Xylo: also the record and the final state).",
    )
    sim.add_argument(
        "config",
        metavar="CONFIG",
        help="a Xylo configuration (.npz, XyloConfig.save; pond demo writes xylo_config.npz), a SpiNNaker2 "
        "DRAM image or a Siracusa configuration (pond map model.onnx --out FILE); recognised by content",
    )
    sim.add_argument(
        "--input",
        required=True,
        metavar="RASTER.npy",
        help="Xylo: input event counts, (T, N_in) or (B, T, N_in) non-negative integers; SpiNNaker2 / "
        "Siracusa: (B, N_in) (Siracusa also (B, T, N_in)) integer input, or real numbers with --quantize (.npy)",
    )
    sim.add_argument(
        "--record",
        metavar="OUT.npz",
        default=None,
        help="write the output spikes, the record (Vmem, Isyn, Spikes, ...) and the final state here",
    )
    sim.add_argument(
        "--device",
        choices=("xylo", "spinnaker2", "siracusa"),
        default="xylo",
        help="the device of CONFIG when its content does not say (SpiNNaker2 DRAM images and Siracusa "
        "configurations are recognised; default: a Xylo configuration)",
    )
    sim.add_argument(
        "--quantize",
        action="store_true",
        help="SpiNNaker2 / Siracusa: the input is real numbers; quantize it with the deployment's input quantizer",
    )


def _kind(path: str) -> str:
    """``spinnaker2``, ``siracusa`` or ``xylo`` (the default, also for unreadable files: its loader reports)."""
    import zipfile

    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
        if head == b"S2DNNIMG":
            return "spinnaker2"
        if head[:2] == b"PK":
            with zipfile.ZipFile(path) as zf:
                if "format.npy" in zf.namelist():
                    with zf.open("format.npy") as fh:
                        if b"pondlib.siracusa.config" in fh.read(4096).replace(b"\x00", b""):
                            return "siracusa"
    except (OSError, zipfile.BadZipFile, ValueError):
        pass
    return "xylo"


def _dnn_input(args: argparse.Namespace, lo: int, hi: int, ndim: tuple, quantize: Any) -> Any:
    """The integer input of a DNN deployment (module docstring)."""
    import numpy as np

    from pondlib.cli.args import load_array
    from pondlib.validate import as_float_array, as_int_array

    arr = load_array(args.input, "input", "--input")
    shapes = " or ".join(("(B, N_in)", "(B, T, N_in)")[: len(ndim)])
    if args.quantize:
        x = as_float_array(
            arr, "input", dtype=np.float64, ndim=ndim, where=args.input, fix=f"pass real numbers of shape {shapes}"
        )
        return quantize(x)
    return as_int_array(
        arr,
        "input (integers; real numbers need --quantize)",
        lo=lo,
        hi=hi,
        ndim=ndim,
        where=args.input,
        fix=f"pass integers in [{lo}, {hi}] of shape {shapes}, or real numbers with --quantize",
    )


def _run_spinnaker2(console: Any, args: argparse.Namespace) -> Any:
    import numpy as np

    from pondlib.devices.spinnaker2 import DNNConfig, run_dram_image
    from pondlib.errors import ConfigError

    try:
        data = Path(args.config).read_bytes()
    except OSError as exc:
        raise PondError(
            f"cannot read the DRAM image ({type(exc).__name__})",
            where=args.config,
            fix="pass a file written by pond map model.onnx --device spinnaker2 --out FILE",
        ) from None
    try:
        cfg = DNNConfig.from_dram_image(data)
    except ConfigError as err:
        raise ConfigError(
            f"SpiNNaker2 DRAM image {err.what}",
            value=err.value,
            limit=err.limit,
            where=args.config,
            fix=err.fix or "write the image again with pond map model.onnx --out",
        ) from None
    k = cfg.layers[0].weights.shape[0]
    scale = cfg.report.get("input_scale") if isinstance(cfg.report, dict) else None

    def quantize(x: Any) -> Any:
        if scale is None:
            return cfg.quantize_input(x)
        q = np.rint(x.astype(np.float32) / np.float32(scale))
        return np.clip(q, -128, 127).astype(np.int64)

    x = _dnn_input(args, -128, 127, (2,), quantize)
    if x.shape[-1] != k:
        raise PondError(
            f"input has {x.shape[-1]} columns, the image's first layer {k}",
            where=args.input,
            fix=f"pass (B, {k}) input",
        )
    with stage(console, f"Walking the SpiNNaker2 DRAM image ({len(cfg.layers)} layers) on {tuple(x.shape)} input"):
        y, _ = run_dram_image(data, x)
    return f"SpiNNaker2 DRAM image, {len(cfg.layers)} layers, {k} -> {y.shape[-1]}", x, y


def _run_siracusa(console: Any, args: argparse.Namespace) -> Any:
    from pondlib.devices.siracusa import SiracusaSim, load_config, quantize_input

    cfg, order = load_config(args.config, with_input_order=True)
    lo, hi = cfg.input_range
    x = _dnn_input(args, lo, hi, (2, 3), lambda v: v)
    if x.shape[-1] != cfg.n_input:
        raise PondError(
            f"input has {x.shape[-1]} values per sample, the configuration {cfg.n_input}",
            where=args.input,
            fix=f"pass (B, {cfg.n_input}) or (B, T, {cfg.n_input}) input",
        )
    if order is not None:
        x = x[..., order]
    if args.quantize:
        x = quantize_input(x, cfg)
    steps = x.ndim == 3
    with stage(console, f"Simulating Siracusa ({len(cfg.layers)} layers, bit-exact) on {tuple(x.shape)} input"):
        y = SiracusaSim(cfg).evolve(x if steps else x[:, None, :])[0]
    return (
        f"Siracusa configuration, {len(cfg.layers)} layers, {cfg.n_input} -> {cfg.n_output}",
        x,
        y if steps else y[:, 0],
    )


def _run_dnn(console: Any, args: argparse.Namespace, kind: str) -> int:
    import numpy as np

    if args.record is not None:
        writable_file(args.record, "record file", "--record", "record.npz")
    what, x, y = (_run_spinnaker2 if kind == "spinnaker2" else _run_siracusa)(console, args)
    last = y if y.ndim == 2 else y[:, -1]
    rows = [
        ("configuration", f"{args.config}: {what}"),
        ("input", f"{args.input}: {tuple(x.shape)} integers in [{int(x.min())}, {int(x.max())}]"),
        ("output", f"{tuple(y.shape)} integers in [{int(y.min())}, {int(y.max())}]"),
    ]
    console.print(result_table(f"Simulation ({kind})", rows, justify="left"))
    pt = table(
        "Outputs (the largest one is the prediction)",
        (("sample", "right"), ("prediction", "right"), ("outputs", "left")),
    )
    for b in range(min(len(last), _SHOWN)):
        pt.add_row(str(b), str(int(np.argmax(last[b]))), " ".join(str(int(v)) for v in last[b]))
    if len(last) > _SHOWN:
        pt.caption = f"first {_SHOWN} of {len(last)} samples"
    console.print(pt)
    if args.record is not None:
        _save(args.record, {"output": y, "input": x})
        console.print(
            f"[green]✓[/] wrote {args.record}: output {tuple(y.shape)}, input {tuple(x.shape)}", highlight=False
        )
    return 0


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
    import numpy as np

    kind = _kind(args.config) if args.device == "xylo" else args.device
    if kind != "xylo":
        return _run_dnn(console, args, kind)
    if args.quantize:
        raise UsageError("pond simulate: --quantize applies to SpiNNaker2 images and Siracusa configurations")

    from pondlib.devices.xylo import XyloSim
    from pondlib.devices.xylo.config import XyloConfig
    from pondlib.devices.xylo.report import simulation_summary

    config = XyloConfig.load(args.config)
    x = load_events(args.input, "input", "--input")
    if args.record is not None:
        writable_file(args.record, "record file", "--record", "record.npz")
    sim = XyloSim.from_config(config)
    with stage(console, f"Simulating {config.limits_name} (bit-exact) on {tuple(x.shape)} input") as st:
        if x.ndim in (2, 3):  # compile (or load) the kernels first; bad shapes fail below
            sim.evolve(x[:1] if x.ndim == 3 else x[None, :1], record=True)
            sim.reset_state()
        t0 = time.perf_counter()
        out, state, rec = sim.evolve(x, record=True)
        seconds = time.perf_counter() - t0
        st["note"] = f"{seconds:.3f} s after compiling"
    s = simulation_summary(x, out, rec, config.limits_name)
    clip = f" ({s.clipped} count(s) above {s.max_input_count} clipped by the chip)" if s.clipped else ""
    rows = [
        (
            "configuration",
            f"{args.config}: {sim.n_input} inputs -> {sim.n_hidden} hidden "
            f"({sim.k} synapse(s) each) -> {sim.n_output} outputs, dt {sim.dt * 1e3:g} ms",
        ),
        (
            "input",
            f"{args.input}: {'B, T, N' if s.batched else 'T, N'} = {tuple(np.shape(x))}, "
            f"{s.input_events:,} events, at most {s.input_peak} per channel per step{clip}",
        ),
        ("hidden spikes", f"{s.hidden_spikes:,} in all, at most {s.peak_hidden_spikes} per neuron per step"),
        ("output spikes", f"{s.output_spikes:,} in all"),
        (
            "simulator speed",
            f"{s.n_samples * s.n_steps / max(seconds, 1e-9):,.0f} sample-steps/s "
            f"({s.n_samples} x {s.n_steps} steps in {seconds:.3f} s)",
        ),
    ]
    console.print(result_table(f"Simulation on {config.limits_name}", rows, justify="left"))
    pt = table(
        "Output spike counts per output neuron (the most active one is the prediction)",
        (("sample", "right"), ("prediction", "right"), ("counts", "left")),
    )
    for b in range(min(s.n_samples, _SHOWN)):
        pred = s.predictions[b]
        pt.add_row(str(b), "- (silent)" if pred is None else str(pred), " ".join(str(int(c)) for c in s.counts[b]))
    if s.n_samples > _SHOWN:
        pt.caption = f"first {_SHOWN} of {s.n_samples} samples"
    console.print(pt)
    if args.record is not None:
        payload = {
            "output": out,
            **{f"record_{k}": v for k, v in rec.items()},
            **{f"state_{k}": v for k, v in state.items()},
        }
        _save(args.record, payload)
        console.print(
            f"[green]✓[/] wrote {args.record}: {', '.join(payload)} [dim](time first: output {tuple(out.shape)})[/]",
            highlight=False,
        )
    return 0
