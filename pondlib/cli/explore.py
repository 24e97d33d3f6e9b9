"""``pond explore``: rank the spatio-temporal schedules of a network on a memory-constrained core.

``pond explore [MODEL] [--memory SIZE] [--mode stems|ideal] [--stateless-blocks LIST] [--space NAME]
[--tb-from input|output] [--steps T] [--top N] [--out DIR]``

Evaluates every schedule of the space (STEMS's ``(N + 1)^2`` one-split-point hybrids and the uniform
``B`` in ``{1, 2, 4, ..., T}`` x {LBL, LF}) of MODEL (a network saved with
:func:`pondlib.io.save_network`) or, without MODEL, of the built-in SEW-ResNet-18 of ``docs/EXPLORE.md``,
on STEMS's "Meta-prototype-like" core with ``--memory`` of shared memory; prints the workload, the ``--top``
best schedules (off-chip traffic per operand class, energy per part, fit, Pareto front) and how the best
compares with the ST-LBL baseline; with ``--out`` writes ``explore.png`` (traffic and energy per schedule,
Pareto front marked) and ``explore.json`` (every schedule's figures).

Exposes ``add_parser(subparsers)`` and ``run(console, args) -> int``; bad input raises a
:class:`~pondlib.errors.PondError` (the ``pond`` entry point prints it as one ``error:`` line, status 1).

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pond")
    >>> add_parser(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["explore", "--memory", "128KB", "--stateless-blocks", "0-1", "--top", "3"])
    >>> args.model, args.memory, args.stateless_blocks, args.top, args.mode
    (None, '128KB', (0, 1), 3, 'stems')
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from pondlib.cli.args import read_network
from pondlib.errors import ConfigError, PondError
from pondlib.explore import (
    MEMORY_PRESETS,
    MODES,
    SPACES,
    SPLIT_SIDES,
    Exploration,
    Report,
    Workload,
    explore,
    meta_prototype,
    parse_memory_size,
    plot_exploration,
    sew_resnet18,
    workload_from_graph,
)

__all__ = ["add_parser", "run"]

_MIB = 8 * 1024 * 1024


def _memory(text: str) -> str:
    try:
        parse_memory_size(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _blocks(text: str) -> tuple[int, ...]:
    """``"0,1"``, ``"0-2"``, ``"0-1,4"`` or ``""`` as sorted block numbers."""
    out: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            if "-" in part:
                a, b = (int(v) for v in part.split("-", 1))
                if a > b or a < 0:
                    raise ValueError
                out.update(range(a, b + 1))
            else:
                v = int(part)
                if v < 0:
                    raise ValueError
                out.add(v)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"got {text!r}, expected block numbers >= 0 such as '0,1' or '0-1'"
            ) from None
    return tuple(sorted(out))


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a positive integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"got {value}, expected a positive integer")
    return value


def add_parser(subparsers: Any) -> None:
    """Add the ``explore`` command to ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    presets = ", ".join(MEMORY_PRESETS)
    p = subparsers.add_parser(
        "explore",
        help="rank time-batched / layer-fused schedules by off-chip traffic and energy (STEMS model)",
        description="Evaluate every schedule of a space (STEMS's (N+1)^2 one-split-point hybrids and uniform "
        "time batches, layer-by-layer or layer-fused) of a saved network, or of the built-in SEW-ResNet-18, on "
        "a single core with a shared on-chip memory; print the best schedules and the Pareto front of "
        "off-chip traffic and energy.",
    )
    p.add_argument(
        "model",
        nargs="?",
        default=None,
        metavar="MODEL",
        help="a network saved with pondlib.io.save_network (.pond); default: the built-in SEW-ResNet-18 "
        "(CIFAR10-DVS, T = 16) of docs/EXPLORE.md",
    )
    p.add_argument(
        "--memory",
        type=_memory,
        default="1MB",
        metavar="SIZE",
        help=f"shared on-chip memory: a STEMS preset ({presets}; default 1MB) or a size such as 1MiB, "
        "96KiB, 131072 (bytes); KB/MB count 1024",
    )
    p.add_argument(
        "--mode",
        choices=MODES,
        default="stems",
        help="state accounting: stems (every state tile read from and written back to DRAM, even with full "
        "time batching; default) or ideal (no read of the zero initial state, no final write)",
    )
    p.add_argument(
        "--stateless-blocks",
        type=_blocks,
        default=(),
        metavar="LIST",
        help="blocks whose layers keep no neuron state, e.g. 0,1 or 0-1 (STEMS's SEW-5)",
    )
    p.add_argument("--space", choices=SPACES, default="all", help="schedules to evaluate (default all)")
    p.add_argument(
        "--tb-from",
        choices=SPLIT_SIDES,
        default="input",
        help="the side from which hybrids time-batch blocks (default input; STEMS uses output for SEW-5)",
    )
    p.add_argument("--steps", type=_positive_int, default=16, metavar="T", help="time steps per inference (default 16)")
    p.add_argument("--top", type=_positive_int, default=10, metavar="N", help="schedules to list (default 10)")
    p.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="write explore.png (traffic and energy per schedule, Pareto front) and explore.json here",
    )


def _workload(args: argparse.Namespace) -> Workload:
    blocks = tuple(args.stateless_blocks)
    if args.model is None:
        n = sew_resnet18(args.steps).n_blocks
        if any(b >= n for b in blocks):
            raise ConfigError("--stateless-blocks", value=max(blocks), limit=f"a block of SEW-ResNet-18 (0 .. {n - 1})")
        return sew_resnet18(args.steps, stateless_blocks=blocks)
    path = Path(args.model)
    net, _ = read_network(args.model, "network")
    w = workload_from_graph(net, args.steps, name=path.name)
    if blocks:
        if any(b >= w.n_blocks for b in blocks):
            raise ConfigError(
                "--stateless-blocks",
                value=max(blocks),
                limit=f"a block of the workload (0 .. {w.n_blocks - 1})",
                fix="list blocks that exist",
            )
        label = ",".join(str(b) for b in blocks)
        w = w.with_stateless(blocks=blocks, name=f"{w.name} (blocks {label} stateless)")
    return w


def _scale(largest: float, units: tuple[tuple[str, float], ...]) -> tuple[str, float]:
    """The largest unit of ``units`` ((name, size), decreasing) that ``largest`` reaches (else the last)."""
    for name, size in units:
        if largest >= size:
            return name, size
    return units[-1]


_BITS = (("MiB", float(_MIB)), ("KiB", 8192.0), ("bit", 1.0))
_PJ = (("mJ", 1e9), ("uJ", 1e6), ("nJ", 1e3), ("pJ", 1.0))
_OPS = (("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1.0))


def _amount(value: float, units: tuple[tuple[str, float], ...]) -> str:
    unit, size = _scale(value, units)
    return f"{value / size:.3f} {unit}"


def _workload_table(w: Workload) -> Any:
    from rich.table import Table

    rows = w.block_summary()
    unit, size = _scale(max(w.total_weight_bits, w.total_state_bits), _BITS)
    op_unit, op_size = _scale(w.total_ops, _OPS)
    t = Table(title="per block: weights and states stored, spikes produced per step, operations per inference")
    for head in (
        "block",
        "layers",
        f"weights ({unit})",
        f"states ({unit})",
        f"spikes/step ({unit})",
        f"ops ({op_unit})",
    ):
        t.add_column(head, justify="right")
    for row in rows:
        t.add_row(
            str(row["block"]),
            str(row["layers"]),
            f"{row['weight_bits'] / size:,.2f}",
            f"{row['state_bits'] / size:,.2f}",
            f"{row['spike_bits_per_step'] / size:,.2f}",
            f"{row['ops'] / op_size:,.3f}",
        )
    t.add_row(
        "all",
        str(len(w.layers)),
        f"{w.total_weight_bits / size:,.2f}",
        f"{w.total_state_bits / size:,.2f}",
        f"input {w.input_bits / size:,.2f}",
        f"{w.total_ops / op_size:,.3f}",
        style="bold",
    )
    return t


def _ranking_table(ex: Exploration, top: int, baseline: Report) -> Any:
    from rich.table import Table

    rows = list(enumerate(ex.reports[:top], 1))
    if all(r is not baseline for _, r in rows):
        rows.append((ex.reports.index(baseline) + 1, baseline))
    unit, size = _scale(max(r.traffic_bits for _, r in rows), _BITS)
    e_unit, e_size = _scale(max(r.energy_pj for _, r in rows), _PJ)
    t = Table(
        title=f"best {min(top, len(ex.reports))} of {len(ex.reports)} schedules by {ex.rank_by} "
        f"({ex.mode} accounting; * Pareto front of traffic and energy)"
    )
    for head, just in (
        ("#", "right"),
        ("schedule", "left"),
        (f"traffic {unit}", "right"),
        ("weights", "right"),
        ("states", "right"),
        ("spikes", "right"),
        ("input", "right"),
        (f"energy {e_unit}", "right"),
        ("off-chip", "right"),
        ("on-chip", "right"),
        ("MAC", "right"),
        ("fits", "center"),
        ("*", "center"),
    ):
        t.add_column(head, justify=just, overflow="fold")
    for rank, r in rows:
        c = r.traffic_by_class
        t.add_row(
            str(rank),
            r.label() + (" (baseline)" if r is baseline else ""),
            f"{r.traffic_bits / size:,.2f}",
            *(f"{c[k] / size:,.2f}" for k in ("weights", "states", "spikes", "input")),
            f"{r.energy_pj / e_size:.3f}",
            f"{r.offchip_energy_pj / e_size:.3f}",
            f"{r.onchip_energy_pj / e_size:.3f}",
            f"{r.mac_energy_pj / e_size:.3f}",
            "yes" if r.fits else "[red]no[/]",
            "*" if ex.pareto[rank - 1] else "",
            style="bold" if rank == 1 else None,
        )
    return t


def run(console: Any, args: argparse.Namespace) -> int:
    """Run ``pond explore`` with ``args`` (from the parser of :func:`add_parser`); print to ``console``.

    Returns 0. Raises :class:`~pondlib.errors.PondError` for a missing or unreadable model, a network that
    cannot be described as a workload, or a block of ``--stateless-blocks`` that does not exist.
    """
    from rich.text import Text

    w = _workload(args)
    hw = meta_prototype(args.memory)
    console.print(
        Text(f"{w.name}: {len(w.layers)} layers, {w.n_blocks} blocks, T = {w.time_steps} on {hw.name}", style="bold")
    )
    console.print(_workload_table(w))
    t0 = time.perf_counter()
    ex = explore(w, hw, args.space, mode=args.mode, tb_from=args.tb_from)
    elapsed = time.perf_counter() - t0
    # every named space holds ST-LBL (B = 1, no fusion): the baseline of STEMS's comparisons
    baseline = next(r for r in ex.reports if all(b.batch == 1 and not b.fused for b in r.schedule.blocks))
    console.print(_ranking_table(ex, args.top, baseline))
    best = ex.best()
    lines = [
        f"evaluated {len(ex.reports)} schedules in {elapsed * 1e3:.1f} ms ({elapsed / len(ex.reports) * 1e3:.2f} ms "
        "each; STEMS takes minutes per schedule)",
        f"best: {best.label()}{f' ({best.schedule.name})' if best.schedule.name not in ('', best.label()) else ''}: "
        f"{_amount(best.traffic_bits, _BITS)} off-chip, {_amount(best.energy_pj, _PJ)} per inference",
        f"vs {baseline.label()} baseline: {baseline.traffic_bits / best.traffic_bits:.1f}x less off-chip traffic, "
        f"{baseline.energy_pj / best.energy_pj:.2f}x less energy"
        if best.traffic_bits > 0
        else "",
        f"over the space: traffic worst/best {ex.traffic_ratio():.1f}x, energy worst/best {ex.energy_ratio():.2f}x; "
        f"Pareto front: {', '.join(r.label() for r in ex.front())}",
    ]
    for line in lines:
        if line:
            console.print(Text(line))
    for msg in best.unfit_stacks:
        console.print(Text(f"note: the best schedule's fused stack does not fit: {msg}", style="yellow"))
    if args.out is not None:
        out = Path(args.out)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PondError("cannot create the output folder", value=f"{out} ({exc.strerror or exc})") from None
        fig = plot_exploration(ex, top=args.top)
        fig.savefig(out / "explore.png", dpi=120)
        payload = {
            "workload": w.name,
            "hardware": hw.name,
            "memory_bits": hw.memory_bits,
            "mode": args.mode,
            "schedules": [dict(r.summary(), pareto=bool(p)) for r, p in zip(ex.reports, ex.pareto)],
        }
        (out / "explore.json").write_text(json.dumps(payload, indent=1))
        console.print(Text(f"wrote {out / 'explore.png'} and {out / 'explore.json'}"))
    return 0
