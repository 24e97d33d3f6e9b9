"""``pond explore``: rank the spatio-temporal schedules of a network on a memory-constrained core.

``pond explore [MODEL] [--memory SIZE] [--device NAME [--level L]] [--mode stems|ideal] [--rank-by KEY]
[--stateless-blocks LIST] [--space NAME] [--tb-from input|output] [--steps T] [--top N] [--json] [--out DIR]``

Evaluates every schedule of the space (STEMS's ``(N + 1)^2`` one-split-point hybrids and the uniform
``B`` in ``{1, 2, 4, ..., T}`` x {LBL, LF}) of MODEL (a network saved with
:func:`pondlib.io.save_network`, or a NIR file) or, without MODEL, of the built-in SEW-ResNet-18 of
``docs/EXPLORE.md``, on STEMS's "Meta-prototype-like" core with ``--memory`` of shared memory, or on a
chip's own memories (``--device``: the device's ``explore_hardware``, its bit widths, and beside the result
what the chip's own mapper chooses when it says). Prints the workload, the ``--top`` best schedules ranked
by ``--rank-by`` (energy, traffic, latency or edp; stacks that cannot hold their weights last) in two tables
whose cells never break when piped (a compact schedule notation, each full label on its own line below),
and how the best compares with the ST-LBL baseline. ``--json`` prints one JSON document instead; ``--out``
writes ``explore.png`` (traffic and energy per schedule, Pareto front marked) and ``explore.json``.

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
    RANKINGS,
    SPACES,
    SPLIT_SIDES,
    Exploration,
    Report,
    Workload,
    device_hardware,
    explore,
    meta_prototype,
    parse_memory_size,
    plot_exploration,
    sew_resnet18,
    workload_from_dnn,
    workload_from_graph,
)
from pondlib.explore.workload import MAX_SIZE

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
    if not 1 <= value <= MAX_SIZE:
        raise argparse.ArgumentTypeError(f"got {value}, expected an integer from 1 to {MAX_SIZE}")
    return value


def add_parser(subparsers: Any) -> None:
    """Add the ``explore`` command to ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    presets = ", ".join(MEMORY_PRESETS)
    p = subparsers.add_parser(
        "explore",
        help="rank time-batched / layer-fused schedules by energy, off-chip traffic or latency (STEMS model)",
        description="Evaluate every schedule of a space (STEMS's (N+1)^2 one-split-point hybrids and uniform "
        "time batches, layer-by-layer or layer-fused) of a saved network, a NIR or ONNX file, or of the built-in "
        "SEW-ResNet-18, on a single core with a shared on-chip memory (STEMS's, or a chip's own with --device); "
        "print the best schedules (traffic, energy, cycles) and the Pareto front of off-chip traffic and energy.",
    )
    p.add_argument(
        "model",
        nargs="?",
        default=None,
        metavar="MODEL",
        help="a network saved with pondlib.io.save_network (.pond), a NIR file (.nir) or a float ONNX model "
        "(.onnx: a stateless DNN, --steps inputs in a row); default: the built-in SEW-ResNet-18 (CIFAR10-DVS, "
        "T = 16) of docs/EXPLORE.md",
    )
    p.add_argument(
        "--memory",
        type=_memory,
        default=None,
        metavar="SIZE",
        help=f"shared on-chip memory: a STEMS preset ({presets}; default 1MB) or a size such as 1MiB, "
        "96KiB, 131072 (bytes); KB/MB count 1024; with --device it resizes the device's memory",
    )
    p.add_argument(
        "--device",
        default=None,
        metavar="NAME",
        help="explore on a chip's own memories instead of STEMS's core: a device whose explore_hardware "
        "describes them (pond devices lists the devices; each hardware figure is printed, calibrated or assumed)",
    )
    p.add_argument(
        "--level",
        default=None,
        metavar="NAME",
        help="with --device: the memory the schedules compete for (the device's levels, e.g. L1 or L2; "
        "default: the device's first)",
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
        "--rank-by",
        choices=RANKINGS,
        default="energy",
        help="rank by total energy (default), off-chip traffic, latency (cycles) or edp (energy x cycles); "
        "schedules whose fused stacks cannot hold their weights come last either way",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print every schedule's figures as one JSON document (for scripts) instead of the tables",
    )
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
        bits = {k: v for k, v in _bits(args).items() if k != "spike_bits"}  # SEW's spikes stay 1 bit
        return sew_resnet18(args.steps, stateless_blocks=blocks, **bits)
    w = _read_model(args.model, args.steps, _bits(args))
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


def _hardware(args: argparse.Namespace) -> Any:
    """STEMS's core with ``--memory`` of shared memory, or ``--device``'s own description at ``--level``
    (its shared memory resized to ``--memory`` when given)."""
    if args.device is None:
        if args.level is not None:
            raise ConfigError("--level", value=args.level, limit="used with --device", fix="add --device NAME")
        return meta_prototype("1MB" if args.memory is None else args.memory)
    hw = device_hardware(args.device, args.level)
    return hw if args.memory is None else hw.with_memory(args.memory)


def _bits(args: argparse.Namespace) -> dict[str, int]:
    """Bit widths of weights, states, spikes and input: STEMS's (4, 12, 1, 4) or ``--device``'s own."""
    if args.device is None:
        return {}
    from pondlib.devices import registry

    return dict(registry.get(args.device).explore_hardware(args.level).get("workload_bits", {}))


def _read_model(path: str, steps: int, bits: dict[str, int]) -> Workload:
    """A workload from a saved pondlib network (``.pond``), a NIR file (``.nir``: its structure only; the
    step ``dt`` does not change the workload) or a float ONNX model (``.onnx``: a stateless DNN whose
    ``T`` steps are successive inputs)."""
    p = Path(path)
    if p.suffix.lower() == ".onnx":
        if not p.is_file():
            raise PondError("model file not found", where=str(p), fix="pass a float .onnx model")
        from pondlib.interop.onnx import load_onnx

        act = {k: v for k, v in bits.items() if k in ("weight_bits",)}
        if "input_bits" in bits:
            act["activation_bits"] = bits["input_bits"]
        return workload_from_dnn(load_onnx(p), steps, name=p.name, **act)
    if p.suffix.lower() == ".nir":
        if not p.is_file():
            raise PondError("model file not found", where=str(p), fix="pass a .nir file or a .pond network")
        from pondlib.interop import load_nir

        net = load_nir(p, dt=1e-3).module
    else:
        net, _ = read_network(path, "network")
    return workload_from_graph(net, steps, name=p.name, **bits)


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


def _shown(ex: Exploration, top: int, baseline: Report) -> list[tuple[int, Report]]:
    """The ``top`` best reports with their ranks, and the baseline when it is not among them."""
    rows = list(enumerate(ex.reports[:top], 1))
    if all(r is not baseline for _, r in rows):
        rows.append((ex.reports.index(baseline) + 1, baseline))
    return rows


def _table(title: str, heads: tuple[str, ...]) -> Any:
    """A rich table whose cells never wrap (``no_wrap``): print it with :func:`_print_wide`."""
    from rich.table import Table

    t = Table(title=title)
    for head in heads:
        t.add_column(head, justify="left" if head == "schedule" else "right", no_wrap=True)
    return t


def _print_wide(console: Any, renderable: Any) -> None:
    """Print ``renderable`` at its natural width even when that exceeds the console's (piped output is
    80 or 110 columns): lines get longer, no cell is broken inside a word."""
    from rich.measure import Measurement

    need = Measurement.get(console, console.options.update_width(10_000), renderable).maximum
    width = console.width
    console.width = max(width, need)
    try:
        console.print(renderable, crop=False)
    finally:
        console.width = width


def _ranking_table(ex: Exploration, rows: list[tuple[int, Report]], shown: int, baseline: Report) -> Any:
    unit, size = _scale(max(r.traffic_bits for _, r in rows), _BITS)
    e_unit, e_size = _scale(max(r.energy_pj for _, r in rows), _PJ)
    t = _table(
        f"best {shown} of {len(ex.reports)} schedules by {ex.rank_by} ({ex.mode} accounting; stacks that "
        "cannot fit last; * Pareto front of traffic and energy)",
        ("#", "schedule", f"traffic {unit}", f"energy {e_unit}", "Mcycles", "EDP mJ*Mcyc", "fits", "*"),
    )
    for rank, r in rows:
        t.add_row(
            str(rank),
            r.schedule.compact(r.time_steps) + (" (baseline)" if r is baseline else ""),
            f"{r.traffic_bits / size:,.2f}",
            f"{r.energy_pj / e_size:.3f}",
            f"{r.latency_cycles / 1e6:,.3f}",
            f"{r.edp / 1e15:,.3f}",
            {"yes": "yes", "spills": "[yellow]spills[/]", "no": "[red]no[/]"}[r.fit_status],
            "*" if ex.pareto[rank - 1] else "",
            style="bold" if rank == 1 else None,
        )
    return t


def _breakdown_table(rows: list[tuple[int, Report]]) -> Any:
    unit, size = _scale(max(r.traffic_bits for _, r in rows), _BITS)
    e_unit, e_size = _scale(max(r.energy_pj for _, r in rows), _PJ)
    t = _table(
        f"the same schedules: off-chip traffic ({unit}) per operand, energy ({e_unit}) per part, cycles (M)",
        ("#", "weights", "states", "spikes", "input", "off-chip", "on-chip", "MAC", "compute", "stalls"),
    )
    for rank, r in rows:
        c = r.traffic_by_class
        t.add_row(
            str(rank),
            *(f"{c[k] / size:,.2f}" for k in ("weights", "states", "spikes", "input")),
            f"{r.offchip_energy_pj / e_size:.3f}",
            f"{r.onchip_energy_pj / e_size:.3f}",
            f"{r.mac_energy_pj / e_size:.3f}",
            f"{float(r.compute_cycles.sum()) / 1e6:,.3f}",
            f"{r.stall_cycles / 1e6:,.3f}",
        )
    return t


def _legend(rows: list[tuple[int, Report]]) -> list[str]:
    """The schedule key: each shown schedule's full label on its own line, and why a stack does not fit."""
    lines = [
        "schedule key (per run of blocks: S one step, T all steps, bN N steps per node; F layer-fused, "
        "L layer by layer; then the number of blocks):"
    ]
    for rank, r in rows:
        name = f" ({r.schedule.name})" if r.schedule.name not in ("", r.label()) else ""
        lines.append(f"  #{rank}: {r.label()}{name}")
        for msg in r.unfit_stacks:
            lines.append(f"      {'spills' if r.feasible else 'does not fit'}: {msg}")
    return lines


def _payload(w: Workload, hw: Any, args: argparse.Namespace, ex: Exploration, elapsed: float) -> dict:
    """Everything ``--json`` prints and ``--out`` writes: the workload, the hardware, every schedule."""
    return {
        "workload": w.name,
        "hardware": hw.name,
        "hardware_notes": list(hw.notes),
        "memory_bits": hw.memory_bits,
        "mode": args.mode,
        "rank_by": args.rank_by,
        "seconds": elapsed,
        "schedules": [
            dict(
                r.summary(),
                rank=i,
                feasible=r.feasible,
                compact=r.schedule.compact(r.time_steps),
                pareto=bool(p),
                unfit=r.unfit_stacks,
            )
            for i, (r, p) in enumerate(zip(ex.reports, ex.pareto), 1)
        ],
    }


def _summary_lines(ex: Exploration, baseline: Report, elapsed: float) -> list[str]:
    best = ex.best()
    name = f" ({best.schedule.name})" if best.schedule.name not in ("", best.label()) else ""
    lines = [
        f"evaluated {len(ex.reports)} schedules in {elapsed * 1e3:.1f} ms ({elapsed / len(ex.reports) * 1e3:.2f} ms "
        "each; STEMS takes minutes per schedule)",
        f"best by {ex.rank_by}: {best.label()}{name}: {_amount(best.traffic_bits, _BITS)} off-chip, "
        f"{_amount(best.energy_pj, _PJ)}, {best.latency_cycles / 1e6:,.2f} Mcycles per inference",
    ]
    if best.traffic_bits > 0 and best is not baseline:
        lines.append(
            f"vs {baseline.label()} baseline: {baseline.traffic_bits / best.traffic_bits:.1f}x less off-chip "
            f"traffic, {baseline.energy_pj / best.energy_pj:.2f}x less energy, "
            f"{baseline.latency_cycles / best.latency_cycles:.2f}x fewer cycles"
        )
    lines.append(
        f"over the space: traffic worst/best {ex.traffic_ratio():.1f}x, energy worst/best {ex.energy_ratio():.2f}x"
    )
    lines.append("Pareto front of traffic and energy:")
    lines += [f"  {r.label()}" + ("" if r.fits else " (a fused stack does not fit)") for r in ex.front()]
    n_spill = sum(r.fit_status == "spills" for r in ex.reports)
    n_no = sum(r.fit_status == "no" for r in ex.reports)
    if n_spill:
        lines.append(
            f"{n_spill} schedules have a fused stack whose spike tiles do not all fit: they spill them to DRAM as "
            "STEMS does (fits: spills; charged in the traffic)"
        )
    if n_no:
        lines.append(
            f"{n_no} schedules have a fused stack that cannot hold its weights and a state tile (fits: no): "
            "ranked after all others"
        )
    return lines


def _mapper_lines(args: argparse.Namespace, w: Workload, ex: Exploration) -> list[str]:
    """With ``--device`` and a network MODEL: what the chip's own mapper chooses, beside the explored
    schedules (the device's ``explore_mapping``), when it describes the level explored."""
    if args.device is None or args.model is None or Path(args.model).suffix.lower() in (".nir", ".onnx"):
        return []
    from pondlib.devices import registry

    net, _ = read_network(args.model, "network")
    got = registry.get(args.device).explore_mapping(net, w.time_steps)
    if got is None or got["level"] != (args.level or got["level"]):
        return []
    st_lbl = next(r for r in ex.reports if all(b.batch == 1 and not b.fused for b in r.schedule.blocks))
    best = ex.best()
    return [
        f"the {args.device} mapper's own choice: {got['schedule']}",
        *(f"  {line}" for line in got["layers"]),
        f"  {_amount(got['traffic_bits'], _BITS)} over the {got['level']} boundary per inference; explored "
        f"ST-LBL {_amount(st_lbl.traffic_bits, _BITS)}, best {best.label()} {_amount(best.traffic_bits, _BITS)}",
    ]


def run(console: Any, args: argparse.Namespace) -> int:
    """Run ``pond explore`` with ``args`` (from the parser of :func:`add_parser`); print to ``console``.

    With ``--json`` only the JSON document is printed (for scripts). Returns 0. Raises
    :class:`~pondlib.errors.PondError` for a missing or unreadable model, a network that cannot be described
    as a workload, or a block of ``--stateless-blocks`` that does not exist.
    """
    from rich.text import Text

    w = _workload(args)
    hw = _hardware(args)
    t0 = time.perf_counter()
    ex = explore(w, hw, args.space, mode=args.mode, tb_from=args.tb_from, rank_by=args.rank_by)
    elapsed = time.perf_counter() - t0
    if args.json:
        console.out(json.dumps(_payload(w, hw, args, ex, elapsed), indent=1), highlight=False)
        return 0
    console.print(
        Text(f"{w.name}: {len(w.layers)} layers, {w.n_blocks} blocks, T = {w.time_steps} on {hw.name}", style="bold")
    )
    for note in hw.notes:
        console.print(Text(f"  hardware: {note}"), soft_wrap=True)
    _print_wide(console, _workload_table(w))
    # every named space holds ST-LBL (B = 1, no fusion): the baseline of STEMS's comparisons
    baseline = next(r for r in ex.reports if all(b.batch == 1 and not b.fused for b in r.schedule.blocks))
    rows = _shown(ex, args.top, baseline)
    _print_wide(console, _ranking_table(ex, rows, min(args.top, len(ex.reports)), baseline))
    _print_wide(console, _breakdown_table(rows))
    for line in _legend(rows) + _summary_lines(ex, baseline, elapsed):
        console.print(Text(line), soft_wrap=True)
    for line in _mapper_lines(args, w, ex):
        console.print(Text(line), soft_wrap=True)
    if args.out is not None:
        out = Path(args.out)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PondError("cannot create the output folder", value=f"{out} ({exc.strerror or exc})") from None
        fig = plot_exploration(ex, top=args.top)
        fig.savefig(out / "explore.png", dpi=120)
        (out / "explore.json").write_text(json.dumps(_payload(w, hw, args, ex, elapsed), indent=1))
        console.print(Text(f"wrote {out / 'explore.png'} and {out / 'explore.json'}"), soft_wrap=True)
    return 0
