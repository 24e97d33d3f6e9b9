"""``pond simulate CONFIG --input RASTER.npy [--record OUT.npz]``: run a saved Xylo configuration on input
event counts with the bit-exact simulator; print a summary; write the output, the record and the final
state.

Checked before simulating (one ``error:`` line naming the file, exit status 1): CONFIG is read by
:meth:`~pondlib.devices.xylo.config.XyloConfig.load` (missing, truncated or corrupted archives, fields of
the wrong type); the input must be a ``.npy`` array of whole numbers >= 0 of shape (T, N_in) or
(B, T, N_in), non-empty, never NaN, infinite, fractional, complex or text; ``--record`` must name a file
(not a folder) in an existing folder.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pond")
    >>> add_parser(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["simulate", "c.npz", "--input", "x.npy"])
    >>> args.config, args.input, args.device, args.record
    ('c.npz', 'x.npy', 'xylo', None)
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from pondlib.cli.args import load_events, writable_file
from pondlib.cli.render import result_table, stage, table
from pondlib.errors import PondError

__all__ = ["add_parser", "run"]

#: Samples listed in the table of output spike counts.
_SHOWN = 20


def add_parser(subparsers: Any) -> None:
    """Register ``simulate`` on ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    sim = subparsers.add_parser(
        "simulate",
        help="run a saved Xylo configuration on input events",
        description="Run a configuration saved with XyloConfig.save on input event "
        "counts with the bit-exact simulator; print a summary and write the output, "
        "the record and the final state.",
    )
    sim.add_argument(
        "config",
        metavar="CONFIG",
        help="a Xylo configuration (.npz, XyloConfig.save; pond demo writes xylo_config.npz)",
    )
    sim.add_argument(
        "--input",
        required=True,
        metavar="RASTER.npy",
        help="input event counts, (T, N_in) or (B, T, N_in) non-negative integers (.npy)",
    )
    sim.add_argument(
        "--record",
        metavar="OUT.npz",
        default=None,
        help="write the output spikes, the record (Vmem, Isyn, Spikes, ...) and the final state here",
    )
    sim.add_argument(
        "--device",
        choices=("xylo",),
        default="xylo",
        help="the device of CONFIG (only Xylo configurations are saved to files so far)",
    )


def run(console: Any, args: argparse.Namespace) -> int:
    """Simulate ``args.config`` on ``args.input``; print the summary; write ``args.record``; return 0."""
    import numpy as np

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
        try:
            with open(args.record, "wb") as fh:
                np.savez_compressed(fh, **payload)
        except OSError as exc:
            raise PondError(
                f"cannot write the record file ({type(exc).__name__}: {exc.strerror or exc})",
                where=args.record,
                fix="pass a writable --record path",
            ) from None
        console.print(
            f"[green]✓[/] wrote {args.record}: {', '.join(payload)} [dim](time first: output {tuple(out.shape)})[/]",
            highlight=False,
        )
    return 0
