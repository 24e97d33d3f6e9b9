"""Rendering for the ``pond`` commands: every rich table, note, spinner and progress bar.

The commands compute nothing here: they pass what the library returns (device reports from
``pondlib.devices.<device>.report``, violations, results) and get rich renderables back, or print
through the console they are given.

Example:
    >>> from pondlib.devices.core.report import Resource
    >>> resource_label(Resource("L2 used", 10, 20, unit="B", note="constants"))
    'L2 used (constants, B)'
    >>> one_line(ValueError("two problems:\\n  - a\\n  - b"))
    'two problems:; a; b'
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from pondlib.errors import ConstraintError

__all__ = [
    "GapRow",
    "limits_table",
    "notes",
    "one_line",
    "print_error",
    "resource_label",
    "resources_table",
    "result_table",
    "run_in_chunks",
    "siracusa_gaps_table",
    "siracusa_quantization_table",
    "spinnaker2_gaps_table",
    "spinnaker2_quantization_table",
    "stage",
    "table",
    "violations_table",
    "xylo_gaps_table",
    "xylo_quantization_table",
]

#: A row of a float-vs-device gap table: (gap, float model, device, what it did here).
GapRow = tuple[str, str, str, str]

_GAP_COLUMNS = (("gap", "left"), ("float model", "left"), ("device", "left"), ("here", "left"))


# -- errors and notes ----------------------------------------------------------------------------------
def print_error(err_console: Any, message: str) -> None:
    """``error: message`` on one line: list items are joined with ``; `` (:func:`one_line`) and any other
    line break (``\\r``, form feed, ``\\u2028``, ... from a file name or an argument) becomes a space.
    The message is plain text, never rich markup."""
    from rich.text import Text

    flat = " ".join(part for part in one_line(ValueError(message)).splitlines() if part.strip()) or "failed"
    err_console.print(Text.assemble(("error:", "bold red"), " ", flat), highlight=False)


def one_line(exc: Exception) -> str:
    """An exception's message on one line (list items joined with ``; ``)."""
    return str(exc).replace("\n  - ", "; ").replace("\n", " ")


def notes(console: Any, lines: Sequence[str], title: str = "notes") -> None:
    """Print each line as ``  title: line`` (the title in yellow)."""
    from rich.text import Text

    for line in lines:
        console.print(Text.assemble((f"  {title}: ", "yellow"), line))


# -- progress ------------------------------------------------------------------------------------------
@contextmanager
def stage(console: Any, text: str) -> Iterator[dict]:
    """A spinner while a stage runs, then one line with its duration (and ``info["note"]`` if set)."""
    info: dict = {}
    t0 = time.perf_counter()
    with console.status(f"[bold]{text}...[/]"):
        yield info
    dt = time.perf_counter() - t0
    note = f" — {info['note']}" if info.get("note") else ""
    console.print(f"[green]✓[/] {text} [dim]({dt:.1f} s)[/]{note}")


def run_in_chunks(
    console: Any, label: str, run: Callable[[Any], tuple[Any, dict]], x: Any, chunk: int
) -> tuple[Any, dict, float]:
    """Run ``run(x[i:i + chunk]) -> (output, record)`` over ``x`` with a progress bar of samples.

    Returns the concatenated output and record and the seconds spent inside ``run``.
    """
    import numpy as np
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    outputs, records, t_run = [], [], 0.0
    columns = (TextColumn(f"[bold]{label}[/]"), BarColumn(), MofNCompleteColumn(), TextColumn("samples"))
    with Progress(*columns, TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("sim", total=len(x))
        for start in range(0, len(x), chunk):
            xb = x[start : start + chunk]
            t0 = time.perf_counter()
            out, rec = run(xb)
            t_run += time.perf_counter() - t0
            outputs.append(np.asarray(out))
            records.append(rec)
            bar.update(task, advance=len(xb))
    rec_all = {k: np.concatenate([r[k] for r in records]) for k in records[0]} if records[0] else {}
    return np.concatenate(outputs), rec_all, t_run


# -- generic tables ------------------------------------------------------------------------------------
def table(title: str, columns: Sequence[tuple[str, str]], *, style: str = "bold") -> Any:
    """A rich table with ``(header, justify)`` columns."""
    from rich.table import Table

    t = Table(title=title, title_style=style)
    for header, justify in columns:
        t.add_column(header, justify=justify, overflow="fold")  # type: ignore[arg-type]
    return t


def result_table(title: str, rows: Sequence[tuple[str, str]], justify: str = "right") -> Any:
    """A two-column table of ``(what, value)`` rows."""
    t = table(title, (("", "left"), ("value", justify)))
    for k, v in rows:
        t.add_row(k, v)
    return t


def resource_label(resource: Any) -> str:
    """``name (note, unit)`` of a :class:`~pondlib.devices.core.report.Resource` (parts left out when empty)."""
    extra = ", ".join(p for p in (resource.note, resource.unit) if p)
    return f"{resource.name} ({extra})" if extra else resource.name


def resources_table(title: str, resources: Sequence[Any]) -> Any:
    """Resources used / limit / fraction, one row per :class:`~pondlib.devices.core.report.Resource`
    (red when a limit is exceeded; ``-`` without a limit)."""
    t = table(title, (("resource", "left"), ("used", "right"), ("limit", "right"), ("use", "right")))
    for r in resources:
        if r.limit is None:
            t.add_row(resource_label(r), f"{r.used:,.0f}", "-", "")
        else:
            style = "red" if r.exceeded else ""
            t.add_row(resource_label(r), f"{r.used:,.0f}", f"{r.limit:,.0f}", f"{r.fraction:.1%}", style=style)
    return t


def violations_table(err: ConstraintError, device: str) -> Any:
    """Every violated design rule of ``err``, with its remedy."""
    columns = (("rule", "left"), ("module", "left"), ("value", "left"), ("limit", "left"), ("remedy", "left"))
    t = table(f"{device}: {len(err.violations)} design rule violation(s)", columns, style="bold red")
    for v in err.violations:
        t.add_row(v.rule, v.module, str(v.value), str(v.limit), v.remedy)
    return t


def limits_table(title: str, variants: Mapping[str, Any], describe: Callable[[Any], Sequence[Any]]) -> Any:
    """One column per variant (``short name -> limits``), one row per
    :class:`~pondlib.devices.core.report.LimitRow` of ``describe(limits)``."""
    t = table(title, (("limit", "left"), ("unit", "left")))
    t.columns[0].no_wrap = True
    t.columns[0].overflow = "ellipsis"
    t.columns[1].style = "dim"
    for short, lim in variants.items():
        t.add_column(f"{lim.name}\n[dim]({short})[/]", justify="right")
    described = [describe(lim) for lim in variants.values()]
    for i, row in enumerate(described[0]):
        t.add_row(row.name, row.unit, *[rows[i].value for rows in described])
    return t


def _gap_table(title: str, rows: Sequence[GapRow]) -> Any:
    t = table(title, _GAP_COLUMNS)
    for row in rows:
        t.add_row(*row)
    return t


# -- Xylo ----------------------------------------------------------------------------------------------
def xylo_quantization_table(q: Any) -> Any:
    """The table of a :class:`pondlib.devices.xylo.report.QuantizationSummary`."""
    t = table(
        f"Quantization ({q.method} scaling, int{q.weight_bits} weights, int{q.state_bits} thresholds)",
        (("field", "left"), ("relative error", "right"), ("clipped values", "right")),
    )
    for f in q.fields:
        t.add_row(f.field, f"{f.relative_error:.2%}", str(f.clipped))
    scales = ", ".join(f"{name} {lo:.0f}..{hi:.0f}" for name, lo, hi in q.scale_ranges)
    t.caption = f"scales (chip units per float unit): {scales}; {q.total_clipped} value(s) clipped in all"
    return t


def xylo_gaps_table(name: str, g: Any, float_caps: tuple[float, float]) -> Any:
    """The float-vs-chip table of a :class:`pondlib.devices.xylo.report.FloatChipGaps`; ``float_caps``: the
    float model's spike caps per step (hidden, output)."""
    smin, smax = g.state_range
    step = "step" if g.readout_delay == 1 else "steps"
    clip = "larger counts clipped" if g.input_clipped else "nothing clipped"
    rows: list[GapRow] = [
        (
            "hidden -> output delay",
            "0 steps",
            f"{g.readout_delay} {step}",
            f"readout sums output spikes over all {g.n_steps} steps ({g.silent_steps} silent at the end), "
            "so the late step is still counted",
        ),
        (
            "spike caps per step",
            f"trained with {float_caps[0]:g} / {float_caps[1]:g}",
            f"{g.max_spikes_hidden} / {g.max_spikes_output}",
            f"same caps; peak hidden count float {g.float_peak_spikes:.0f}, chip {g.chip_peak_spikes}",
        ),
        (
            "membrane decay per step",
            f"exp(-dt/tau) = {g.decay_float:.4f}",
            f"1 - 2^-{g.dash_mem} = {g.decay_chip:.4f}",
            "time constants chosen to match exactly (bit-shift floor rounding remains)",
        ),
        (
            f"{g.state_bits}-bit saturation",
            "none",
            f"{smin}..{smax}",
            f"{g.saturated_vmem:.2%} of hidden Vmem and {g.saturated_isyn:.2%} of Isyn values at the limits",
        ),
        (
            "input event clip",
            "none",
            f"{g.max_input_count} per channel per step",
            f"inputs peak at {g.input_peak}: {clip}",
        ),
        (
            "weight / threshold rounding",
            "float32",
            f"int{g.weight_bits} / int{g.state_bits}",
            f"{g.weight_error:.2%} relative error on input weights",
        ),
        ("hidden activity", f"{g.rate_float:.3f} spikes/neuron/step", f"{g.rate_chip:.3f}", ""),
    ]
    return _gap_table(f"Float model vs {name}: known gaps and what they did here", rows)


# -- SpiNNaker2 ----------------------------------------------------------------------------------------
def spinnaker2_quantization_table(q: Any, other: Any = None) -> Any:
    """The table of a :class:`pondlib.devices.spinnaker2.report.QuantizationSummary`, with the errors of
    ``other`` (the same network with another neuron model) as its caption."""
    t = table(
        f"Quantization ({q.neuron_model}: weights scaled per target population, rounded to the synapse word)",
        (
            ("projection", "left"),
            ("target", "left"),
            ("scale", "right"),
            ("relative error", "right"),
            ("largest error (float units)", "right"),
            ("weights rounded to 0", "right"),
        ),
    )
    for p in q.projections:
        t.add_row(
            p.projection, p.target, f"{p.scale:.1f}", f"{p.relative_error:.2%}", f"{p.max_abs_error:.4f}", str(p.zeroed)
        )
    if other is not None:
        errs = ", ".join(f"{p.projection} {p.relative_error:.2%}" for p in other.projections)
        t.caption = f"with {other.neuron_model} ({other.weight_bits}-bit weights, delays 0..{other.max_delay}): {errs}"
    return t


def spinnaker2_gaps_table(name: str, g: Any, first: Sequence[GapRow] = (), activity_note: str = "") -> Any:
    """The float-vs-chip table of a :class:`pondlib.devices.spinnaker2.report.FloatChipGaps`, after the
    caller's own ``first`` rows (what it compared: networks, accuracies)."""
    rounding = (
        "one rounding for the decay multiply-add (fused)"
        if g.fused_multiply_add
        else "rounded after every multiply and add (no fused multiply-add)"
    )
    rows: list[GapRow] = [
        *first,
        (
            "delay per hop",
            "0 steps",
            f"1 tick per hop ({g.hops} from input to output)",
            f"readout sums output spikes over all {g.n_steps} steps ({g.silent_steps} silent at the end)",
        ),
        (
            "synaptic input",
            "I = beta (I + x)",
            "I = beta I + x",
            f"the mapper folds beta = {g.beta:g} into the weights (exact for a common beta)",
        ),
        (
            "weights",
            "float32",
            f"sign + {g.weight_bits}-bit magnitude per word",
            f"{g.weight_error:.2%} relative error on input weights",
        ),
        (
            "neuron arithmetic",
            "float32 (XLA)",
            "float32 per operation (Cortex-M4F)",
            f"{rounding}, simulated bit-precisely",
        ),
        ("hidden activity", f"{g.rate_float:.3f} spikes/neuron/step", f"{g.rate_chip:.3f}", activity_note),
    ]
    return _gap_table(f"Float model vs {name}: known gaps and what they did here", rows)


# -- Siracusa ------------------------------------------------------------------------------------------
def siracusa_quantization_table(q: Any) -> Any:
    """The table of a :class:`pondlib.devices.siracusa.report.QuantizationSummary`."""
    t = table(
        "Quantization (int8 weights per output channel, RequantShift / integer LIF multipliers)",
        (
            ("layer", "left"),
            ("kind", "left"),
            ("shift", "right"),
            ("multiplier error", "right"),
            ("weight error", "right"),
            ("constants in", "left"),
            ("NPU", "left"),
        ),
    )
    for r in q.layers:
        t.add_row(
            r.name,
            r.kind,
            str(r.shift),
            f"{r.mul_rel_error:.2e}",
            "-" if r.weight_error is None else f"{r.weight_error:.2%}",
            r.placement,
            "yes" if r.npu_eligible else f"no: {r.npu_reason}",
        )
    lo, hi = q.input_range
    t.caption = (
        f"input: {'int' if q.input_signed else 'uint'}{q.input_bits} {lo}..{hi}, one step = "
        f"{q.input_scale:.4g} float units; weight error = max |W - W_q s| / max |W|; "
        "multiplier error = relative error of mul / 2^shift"
    )
    return t


def siracusa_gaps_table(
    name: str, g: Any, first: Sequence[GapRow] = (), calibration: str = "the calibration input", activity_note: str = ""
) -> Any:
    """The float-vs-chip table of a :class:`pondlib.devices.siracusa.report.FloatChipGaps`, after the
    caller's own ``first`` rows; ``calibration`` names the input the scales came from."""
    rows: list[GapRow] = [
        *first,
        (
            "membrane decay per step",
            f"exp(-dt/tau) = {g.decay_float:.4f}",
            f"{g.decay_mul} / 2^{g.decay_shift} = {g.decay_chip:.4f}",
            "rounded multiplier",
        ),
        (
            "state",
            "float32",
            f"int{g.state_bits}, saturating; round half up",
            f"state scale from the largest membrane value on {calibration}",
        ),
        (
            "weights",
            "float32",
            "int8 per output channel, int32 accumulator",
            f"{g.weight_error:.2%} largest relative error on input weights",
        ),
        ("delay per layer", "0 steps", "0 steps (layers run in order within a step)", ""),
        ("hidden activity", f"{g.rate_float:.3f} spikes/neuron/step", f"{g.rate_chip:.3f}", activity_note),
    ]
    return _gap_table(f"Float model vs {name}: known gaps and what they did here", rows)
