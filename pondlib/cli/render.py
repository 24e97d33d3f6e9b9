"""Rendering for the ``pond`` commands: every rich table, note, spinner and progress bar.

The commands compute nothing here: they pass what the library returns (tables and reports of the
devices as plain data, violations, results) and get rich renderables back, or print through the
console they are given. No device is known here: every device's tables arrive as
:class:`~pondlib.devices.core.report.Table` data and are drawn by :func:`render`.

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
    "RichObserver",
    "limits_table",
    "notes",
    "one_line",
    "print_error",
    "render",
    "render_deployment",
    "resource_label",
    "resources_table",
    "result_table",
    "run_in_chunks",
    "stage",
    "table",
    "violations_table",
]


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
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from pondlib.pipeline import run_chunks

    columns = (TextColumn(f"[bold]{label}[/]"), BarColumn(), MofNCompleteColumn(), TextColumn("samples"))
    with Progress(*columns, TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("sim", total=len(x))
        return run_chunks(run, x, chunk, lambda n: bar.update(task, advance=n))


class RichObserver:
    """The :class:`pondlib.pipeline.Observer` of the commands: a spinner and a timed line per stage, a
    progress bar per simulation, and lines in bold."""

    def __init__(self, console: Any) -> None:
        self.console = console

    def stage(self, text: str) -> Any:
        return stage(self.console, text)

    def simulate(self, label: str, run: Callable[[Any], tuple[Any, dict]], x: Any, chunk: int) -> tuple:
        return run_in_chunks(self.console, label, run, x, chunk)

    def say(self, text: str) -> None:
        self.console.print(f"[bold]{text}[/]", highlight=False)

    def checked(self, check: Any) -> None:
        if check.error is not None:
            self.console.print(violations_table(check.error, check.variant))
        else:
            self.console.print(f"[yellow]{check.variant} accepted the network[/]", highlight=False)


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


def render(data: Any) -> Any:
    """A rich table of a :class:`~pondlib.devices.core.report.Table` (red title when it reports a failure)."""
    t = table(data.title, data.columns, style="bold red" if data.alarm else "bold")
    for row in data.rows:
        t.add_row(*row)
    if data.caption:
        t.caption = data.caption
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


def render_deployment(console: Any, dep: Any) -> None:
    """The report of a :class:`pondlib.pipeline.Deployment`: resources, quantization, notes, the
    float-vs-device gaps and the result table."""
    report = dep.report
    console.print(resources_table(report.title, report.resources))
    for t in report.tables:
        console.print(render(t))
    notes(console, list(dep.mapped.notes) + list(report.notes), "mapper note")
    notes(console, dep.mapped.warnings, "warning")
    if dep.gaps is not None:
        console.print(render(dep.gaps))
    console.print(render(dep.table()))
