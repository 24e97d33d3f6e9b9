r"""Plot an exploration: traffic and energy of every schedule, the Pareto front marked.

Two panels: (left) energy (mJ) against off-chip traffic (MiB), one point per schedule, the Pareto front
as a line through its points, the best schedule and the ST-LBL baseline labelled; (right) the energy
breakdown (off-chip, on-chip, MAC) of the ``top`` best schedules and the baseline. The figure is built
without :mod:`matplotlib.pyplot`, on the non-interactive Agg canvas (as :mod:`pondlib.plot` does), so it
needs no display; save it with ``fig.savefig(path)``.

Example:
    >>> from pondlib.explore import explore, sew_resnet18, meta_prototype
    >>> fig = plot_exploration(explore(sew_resnet18(), meta_prototype("1MB"), "hybrid"), top=5)
    >>> [ax.get_xlabel() for ax in fig.axes]
    ['off-chip traffic (MiB)', 'energy (mJ)']
"""

from __future__ import annotations

from typing import Any

from pondlib.errors import ConfigError
from pondlib.explore.explore import Exploration
from pondlib.validate import check_int

__all__ = ["plot_exploration"]


def plot_exploration(exploration: Exploration, *, top: int = 8, title: str | None = None) -> Any:
    """A :class:`matplotlib.figure.Figure` of ``exploration`` (see the module docstring).

    Raises:
        ConfigError: ``exploration`` is not an :class:`~pondlib.explore.Exploration`, ``top`` not a whole
            number >= 1.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not isinstance(exploration, Exploration):
        raise ConfigError(
            "exploration",
            value=f"a {type(exploration).__name__}",
            limit="a pondlib.explore.Exploration",
            fix="pass the result of pondlib.explore.explore",
        )
    top = check_int(top, "top", lo=1, where="plot_exploration", error=ConfigError)
    reports = exploration.reports
    mib = [r.traffic_mib() for r in reports]
    mj = [r.energy_mj() for r in reports]
    fig = Figure(figsize=(12.8, 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    ax, bx = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    on = exploration.pareto
    ax.scatter(
        [m for m, p in zip(mib, on) if not p],
        [e for e, p in zip(mj, on) if not p],
        s=16,
        c="tab:gray",
        alpha=0.6,
        label="schedule",
    )
    front = exploration.front()
    ax.plot(
        [r.traffic_mib() for r in front], [r.energy_mj() for r in front], "-o", c="tab:red", ms=6, label="Pareto front"
    )
    best = exploration.best()
    ax.scatter(
        [best.traffic_mib()],
        [best.energy_mj()],
        marker="*",
        s=180,
        c="gold",
        edgecolors="k",
        zorder=3,
        label=f"best: {best.label()}",
    )
    base = _baseline(exploration)
    if base is not None and base is not best:
        ax.scatter(
            [base.traffic_mib()],
            [base.energy_mj()],
            marker="X",
            s=70,
            c="k",
            zorder=3,
            label=f"baseline: {base.label()}",
        )
    if max(mib) > 20 * max(min(mib), 1e-9):
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("off-chip traffic (MiB)")
    ax.set_ylabel("energy per inference (mJ)")
    ax.set_title(title or f"{exploration.workload} on {exploration.hardware} ({exploration.mode})")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=7)
    shown = list(reports[:top])
    if base is not None and base not in shown:
        shown.append(base)
    names = [r.label() for r in shown][::-1]
    left = [0.0] * len(shown)
    for part, color in (("offchip", "tab:red"), ("onchip", "tab:blue"), ("mac", "tab:green")):
        vals = [r.energy_mj(part) for r in shown][::-1]
        bx.barh(
            names,
            vals,
            left=left,
            color=color,
            label=part.replace("offchip", "off-chip").replace("onchip", "on-chip").replace("mac", "MAC"),
        )
        left = [a + v for a, v in zip(left, vals)]
    bx.set_xlabel("energy (mJ)")
    bx.set_title(f"energy breakdown: best {min(top, len(reports))} by {exploration.rank_by}")
    bx.tick_params(axis="y", labelsize=7)
    bx.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, fontsize=8, frameon=False)
    return fig


def _baseline(exploration: Exploration) -> Any:
    """The ST-LBL report of the exploration, if it holds one."""
    for r in exploration.reports:
        if all(b.batch == 1 and not b.fused for b in r.schedule.blocks):
            return r
    return None
