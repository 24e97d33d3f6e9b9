"""Plots of recorded activity: spike rasters, traces, and float-vs-device comparisons.

Every function takes time-major arrays (``(T,)`` or ``(T, N)``, one row per step), draws on ``ax`` when
given or on a new figure, labels both axes with units (time in ms when ``dt`` (seconds) is given, else
in steps; neurons by index), adds a legend or colorbar, and returns the
:class:`matplotlib.figure.Figure`. New figures are created without :mod:`matplotlib.pyplot`, on the
non-interactive Agg canvas, so they need no display, never pile up in pyplot's global state, and are
saved with ``fig.savefig(path)`` (in a notebook they display as usual).

Example:
    >>> import numpy as np
    >>> spikes = np.zeros((20, 5)); spikes[3, 1] = 1; spikes[7, 4] = 2
    >>> fig = raster(spikes, title="hidden spikes", dt=1e-3)
    >>> ax = fig.axes[0]
    >>> ax.get_xlabel(), ax.get_ylabel(), ax.get_title()
    ('time (ms)', 'neuron index', 'hidden spikes')
    >>> fig = traces(np.sin(np.linspace(0, 3, 30))[:, None] * [1, 2], labels=["a", "b"])
    >>> [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    ['a', 'b']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pondlib.errors import PondError
from pondlib.validate import as_float_array, as_int_array, check_choice, check_float, check_int, check_type

__all__ = ["raster", "traces", "compare", "rasters", "accuracy_bars"]


def _new_axes(ncols: int = 1, figsize: tuple[float, float] | None = None) -> tuple[Any, list[Any]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize or (6.4 * ncols if ncols > 1 else 6.4, 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def _figure_and_axes(ax: Any) -> tuple[Any, Any]:
    if ax is None:
        fig, axes = _new_axes()
        return fig, axes[0]
    return ax.figure, ax


def _as_2d(values: Any, name: str, where: str, *, lo: float | None = None) -> np.ndarray:
    """``values`` as a finite float (T, N) array (a (T,) array becomes (T, 1)); T, N >= 1."""
    arr = as_float_array(
        values,
        name,
        lo=lo,
        where=where,
        allow_empty=True,
        fix="values that are not numeric or not finite cannot be drawn: pass a (T,) or (T, N) array",
    )
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise PondError(
            f"{name} shape",
            value=tuple(np.shape(values)),
            limit="(T,) or (T, N) with T, N >= 1",
            where=where,
            fix="pass one sample, time first (index a batch with x[0])",
        )
    return arr


def _text(value: Any, name: str, where: str) -> str:
    return check_type(value, name, str, where=where)


def _integer_ticks(colorbar: Any) -> None:
    """Whole-number ticks on a colorbar of counts (no 1.5 spikes)."""
    from matplotlib.ticker import MaxNLocator

    colorbar.locator = MaxNLocator(integer=True)
    colorbar.update_ticks()


def _time(T: int, dt: float | None) -> tuple[np.ndarray, str]:
    if dt is None:
        return np.arange(T), "time (steps)"
    dt = check_float(
        dt, "dt", lo=0.0, lo_open=True, where="pondlib.plot", fix="pass dt=1e-3 for 1 ms steps, or None for steps"
    )
    return np.arange(T) * dt * 1e3, "time (ms)"


def raster(
    spikes: Any,
    ax: Any = None,
    *,
    title: str = "spikes",
    dt: float | None = None,
    ylabel: str = "neuron index",
    count_label: str = "spikes per step",
) -> Any:
    """Spike raster: a dot per (step, neuron) with at least one spike.

    Args:
        spikes: (T, N) spike counts (or (T,) for one neuron).
        ax: matplotlib axes to draw on (default: a new figure).
        title: axes title.
        dt: step in seconds (time axis in ms), or None (time axis in steps).
        ylabel: label of the neuron axis.
        count_label: colorbar label for multi-spike counts (``"events per step"`` for input).

    Multi-spike counts (Xylo hidden neurons fire up to 31 per step) are coloured by count, with a
    colorbar; binary rasters get a legend entry instead.

    Raises:
        PondError: ``spikes`` not a finite real (T,) or (T, N) array of counts >= 0 with T, N >= 1 (NaN,
            negative counts, strings, ragged lists); ``dt`` not a finite number > 0 or None; text
            arguments that are not strings.

    Returns:
        The :class:`~matplotlib.figure.Figure`.
    """
    s = _as_2d(spikes, "spikes", "raster", lo=0.0)
    for key, val in (("title", title), ("ylabel", ylabel), ("count_label", count_label)):
        _text(val, key, "raster")
    t, xlabel = _time(s.shape[0], dt)
    fig, ax = _figure_and_axes(ax)
    ti, ni = np.nonzero(s > 0)
    counts = s[ti, ni]
    total = int(round(float(s[s > 0].sum())))
    short = s.shape[0] <= 40  # short runs: larger marks
    if counts.size and counts.max() > 1:
        sc = ax.scatter(
            t[ti], ni, c=counts, s=30 if short else 12, marker="s", cmap="viridis", vmin=1, vmax=float(counts.max())
        )
        _integer_ticks(fig.colorbar(sc, ax=ax, label=count_label))
    else:
        ax.scatter(t[ti], ni, s=60 if short else 12, marker="|", color="black", label=f"spike ({total} in all)")
        ax.legend(loc="upper right", fontsize="small")
    half = 0.5 * (t[1] - t[0]) if len(t) > 1 else 0.5
    ax.set_xlim(t[0] - half, t[-1] + half)
    ax.set_ylim(-0.5, s.shape[1] - 0.5)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return fig


def traces(
    values: Any,
    ax: Any = None,
    *,
    title: str = "membrane potential",
    dt: float | None = None,
    ylabel: str = "value (a.u.)",
    labels: Sequence[str] | None = None,
    neurons: Sequence[int] | None = None,
    max_traces: int = 8,
    x: Any = None,
    xlabel: str | None = None,
) -> Any:
    """Line plot of per-step values (membrane potentials, currents) of a few neurons.

    Args:
        values: (T, N) or (T,).
        ax: axes to draw on (default: a new figure).
        title, ylabel: axes title and value-axis label (say the unit: float a.u. or chip integers).
        dt: step in seconds (time axis in ms), or None (steps).
        labels: one legend label per plotted neuron (default ``"neuron <i>"``).
        neurons: which columns to plot (default: the first ``max_traces``).
        max_traces: most columns plotted when ``neurons`` is None.
        x, xlabel: other x values (T,) and their label (e.g. epochs) instead of the time axis.

    Raises:
        PondError: ``values`` not a finite real (T,) or (T, N) array (T, N >= 1); ``neurons`` not
            whole-number column indices in ``0..N-1``; ``max_traces`` < 1; ``labels`` not one string per
            plotted neuron; ``x`` not T finite numbers; ``dt`` not > 0; text arguments not strings.

    Returns:
        The :class:`~matplotlib.figure.Figure`.
    """
    where = "traces"
    v = _as_2d(values, "values", where)
    t, time_label = _time(v.shape[0], dt)
    for key, val in (("title", title), ("ylabel", ylabel)):
        _text(val, key, where)
    if xlabel is not None:
        _text(xlabel, "xlabel", where)
    if x is not None:
        t = as_float_array(x, "x values", where=where, allow_empty=True, fix="pass one finite x value per row")
        if t.shape != (v.shape[0],):
            raise PondError(
                "x values",
                value=tuple(t.shape),
                limit=(v.shape[0],),
                where=where,
                fix="pass one x value per row of values",
            )
    xlabel = xlabel or time_label
    if neurons is None:
        max_traces = check_int(max_traces, "max_traces", lo=1, where=where, fix="pass max_traces >= 1")
        idx = list(range(min(v.shape[1], max_traces)))
    else:
        idx = as_int_array(
            neurons, "neuron index", lo=0, hi=v.shape[1] - 1, ndim=1, where=where, fix="pick existing columns"
        ).tolist()
    if labels is not None:
        if isinstance(labels, str) or not isinstance(labels, Sequence):
            raise PondError(
                "labels", value=repr(labels)[:60], limit="a list of strings", where=where, fix="pass labels=['a', 'b']"
            )
        if len(labels) != len(idx):
            raise PondError(
                "number of labels",
                value=len(labels),
                limit=len(idx),
                where=where,
                fix="pass one label per plotted neuron",
            )
        for j, label in enumerate(labels):
            _text(label, f"labels[{j}]", where)
    fig, ax = _figure_and_axes(ax)
    for j, i in enumerate(idx):
        ax.plot(t, v[:, i], lw=1.2, label=labels[j] if labels is not None else f"neuron {i}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc="best", fontsize="small", ncols=2 if len(idx) > 4 else 1)
    ax.grid(alpha=0.3)
    return fig


def compare(
    float_values: Any,
    device_values: Any,
    *,
    title: str = "float model vs device",
    dt: float | None = None,
    kind: str = "image",
    float_label: str = "float model",
    device_label: str = "device",
    float_unit: str = "a.u.",
    device_unit: str = "chip integer",
    ylabel: str = "neuron index",
    neurons: Sequence[int] | None = None,
    max_traces: int = 6,
) -> Any:
    """The same quantity from the float model and from the device, side by side.

    Args:
        float_values, device_values: (T, N) arrays of one sample (T may differ by a few steps).
        title: figure title.
        dt: step in seconds (time in ms), or None (steps).
        kind: ``"image"``: each panel a time x neuron heat map with its own colorbar (spikes, small
            N); ``"lines"``: each panel a line per neuron (membrane traces), with a legend.
        float_label, device_label: panel titles.
        float_unit, device_unit: units of each panel's values (colorbar or y-axis label).
        ylabel: neuron-axis label (``kind="image"``).
        neurons, max_traces: which neurons to draw for ``kind="lines"``.

    Raises:
        PondError: either array not a finite real (T,) or (T, N) array, different N, an unknown ``kind``,
            ``dt`` not > 0, bad ``neurons``/``max_traces`` (as :func:`traces`), text not strings.

    Returns:
        The :class:`~matplotlib.figure.Figure` (two axes plus colorbars).

    Example:
        >>> a = np.zeros((10, 3)); a[2, 1] = 1
        >>> fig = compare(a, np.roll(a, 1, axis=0), dt=1e-3)
        >>> [ax.get_title() for ax in fig.axes[:2]]
        ['float model', 'device']
    """
    check_choice(kind, "compare kind", ("image", "lines"), where="compare", fix="pass kind='image' or kind='lines'")
    for key, val in (
        ("title", title),
        ("float_label", float_label),
        ("device_label", device_label),
        ("float_unit", float_unit),
        ("device_unit", device_unit),
        ("ylabel", ylabel),
    ):
        _text(val, key, "compare")
    fv = _as_2d(float_values, "float_values", "compare")
    dv = _as_2d(device_values, "device_values", "compare")
    if fv.shape[1] != dv.shape[1]:
        raise PondError(
            "neuron counts differ",
            value=dv.shape[1],
            limit=fv.shape[1],
            where="compare",
            fix="pass the same neurons from the float model and the device",
        )
    fig, axes = _new_axes(2, figsize=(11.0, 4.0))
    for ax, v, label, unit in ((axes[0], fv, float_label, float_unit), (axes[1], dv, device_label, device_unit)):
        t, xlabel = _time(v.shape[0], dt)
        if kind == "image":
            step = t[1] - t[0] if len(t) > 1 else 1.0
            im = ax.imshow(
                v.T,
                aspect="auto",
                origin="lower",
                interpolation="nearest",
                cmap="viridis",
                extent=(t[0] - step / 2, t[-1] + step / 2, -0.5, v.shape[1] - 0.5),
            )
            cb = fig.colorbar(im, ax=ax, label=unit)
            if v.size and np.array_equal(v, np.round(v)):
                _integer_ticks(cb)
            ax.set_ylabel(ylabel)
        else:
            traces(v, ax, title=label, dt=dt, ylabel=unit, neurons=neurons, max_traces=max_traces)
        ax.set_xlabel(xlabel)
        ax.set_title(label)
    fig.suptitle(title)
    return fig


def rasters(
    panels: Mapping[str, Any],
    *,
    title: str = "spikes",
    dt: float | None = None,
    ylabel: str = "neuron index",
    count_label: str = "spikes per step",
) -> Any:
    """Several spike rasters of the same neurons side by side (one panel per model or device).

    Each panel's title is its key followed by its spike total (no per-panel legend, which would
    hide spikes in these small panels).

    Args:
        panels: panel title -> (T, N) spike counts (N equal in every panel; T may differ).
        title: figure title.
        dt: step in seconds (time in ms), or None (steps).
        ylabel: neuron-axis label (shown on the first panel).
        count_label: colorbar label for multi-spike counts.

    Raises:
        PondError: ``panels`` not a non-empty dict of string titles -> spike counts (as :func:`raster`),
            panels with different N, ``dt`` not > 0, text not strings.

    Returns:
        The :class:`~matplotlib.figure.Figure` (one axes per panel, plus colorbars where counts exceed 1).

    Example:
        >>> a = np.zeros((10, 3)); a[2, 1] = 1
        >>> fig = rasters({"float": a, "chip": np.roll(a, 1, axis=0)}, dt=1e-3)
        >>> [ax.get_title() for ax in fig.axes[:2]]
        ['float\\n1 spike', 'chip\\n1 spike']
    """
    if not isinstance(panels, Mapping):
        raise PondError(
            "panels",
            value=f"a {type(panels).__name__}",
            limit="a dict of title -> (T, N) spikes",
            where="rasters",
            fix="pass a dict of title -> (T, N) spikes",
        )
    if not panels:
        raise PondError(
            "no panels", value=0, limit=">= 1", where="rasters", fix="pass a dict of title -> (T, N) spikes"
        )
    for key in panels:
        _text(key, "panel title", "rasters")
    for key, val in (("title", title), ("ylabel", ylabel), ("count_label", count_label)):
        _text(val, key, "rasters")
    arrays = {k: _as_2d(v, f"panels[{k!r}]", "rasters", lo=0.0) for k, v in panels.items()}
    widths = {a.shape[1] for a in arrays.values()}
    if len(widths) != 1:
        raise PondError(
            "neuron counts differ between panels",
            value=sorted(widths),
            limit="one count",
            where="rasters",
            fix="pass the same neurons in every panel",
        )
    fig, axes = _new_axes(len(arrays), figsize=(3.2 * len(arrays) + 0.8, 3.6))
    for i, (ax, (label, arr)) in enumerate(zip(axes, arrays.items())):
        total = int(round(float(arr[arr > 0].sum())))
        raster(
            arr,
            ax,
            dt=dt,
            ylabel=ylabel if i == 0 else "",
            count_label=count_label,
            title=f"{label}\n{total} spike{'' if total == 1 else 's'}",
        )
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        n = arr.shape[1]
        if n <= 32:
            ax.set_yticks(range(n))
            ax.tick_params(axis="y", labelsize="small" if n <= 16 else "x-small")
        ax.grid(axis="y", alpha=0.25)
    fig.suptitle(title)
    return fig


def accuracy_bars(
    results: Mapping[str, Mapping[str, float]],
    *,
    title: str = "accuracy",
    ylabel: str = "test accuracy (%)",
    chance: float | None = None,
    order: Sequence[str] | None = None,
) -> Any:
    """Grouped bars: one group per device, one bar per model variant, each labelled with its value.

    Args:
        results: group (device) -> {bar label: accuracy in 0..1}. A group shows only its own bars,
            centred; bars with the same label share a colour and one legend entry.
        title, ylabel: axes title and value-axis label.
        chance: the chance level (0..1), drawn as a dashed line when given.
        order: the order of the bar labels within a group and in the legend (default: first seen).

    Raises:
        PondError: ``results`` not a non-empty dict of string groups -> {string label: accuracy}, an
            accuracy or ``chance`` not a finite number in 0..1, ``order`` not a list of strings, text not
            strings. A group without bars is allowed (an empty slot on the axis).

    Returns:
        The :class:`~matplotlib.figure.Figure` (legend outside the axes, on the right).

    Example:
        >>> fig = accuracy_bars({"Xylo": {"float": 0.97, "device": 0.96}, "Siracusa": {"float": 0.97}},
        ...                     chance=0.1)
        >>> [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        ['float', 'device', 'chance (10%)']
    """
    where = "accuracy_bars"
    if not isinstance(results, Mapping) or not results:
        raise PondError(
            "no results" if isinstance(results, Mapping) else "results",
            value=0 if isinstance(results, Mapping) else f"a {type(results).__name__}",
            limit=">= 1 group",
            where=where,
            fix="pass a dict of device -> {label: accuracy}",
        )
    checked: dict[str, dict[str, float]] = {}
    for group, bars in results.items():
        _text(group, "group name", where)
        if not isinstance(bars, Mapping):
            raise PondError(
                f"results[{group!r}]",
                value=f"a {type(bars).__name__}",
                limit="a dict of label -> accuracy",
                where=where,
                fix="pass {label: accuracy in 0..1}",
            )
        checked[group] = {}
        for label, acc in bars.items():
            _text(label, f"results[{group!r}] label", where)
            checked[group][label] = check_float(
                acc, f"results[{group!r}][{label!r}]", lo=0.0, hi=1.0, where=where, fix="pass accuracies in 0..1"
            )
    results = checked
    if chance is not None:
        chance = check_float(chance, "chance", lo=0.0, hi=1.0, where=where, fix="pass the chance level in 0..1")
    if order is not None:
        if isinstance(order, str) or not isinstance(order, Sequence):
            raise PondError("order", value=repr(order)[:60], limit="a list of bar labels", where=where)
        for j, label in enumerate(order):
            _text(label, f"order[{j}]", where)
    for key, val in (("title", title), ("ylabel", ylabel)):
        _text(val, key, where)
    labels: list[str] = list(order) if order is not None else []
    for bars in results.values():
        labels += [k for k in bars if k not in labels]
    colors = {label: f"C{j}" for j, label in enumerate(labels)}
    fig, axes = _new_axes(1, figsize=(2.0 * len(results) + 4.2, 4.2))
    ax = axes[0]
    width = 0.8 / max(max(len(b) for b in results.values()), 1)
    handles: dict[str, Any] = {}
    for i, bars in enumerate(results.values()):
        present = [label for label in labels if label in bars]
        for j, label in enumerate(present):
            x = i + (j - (len(present) - 1) / 2) * width
            cont = ax.bar([x], [100.0 * float(bars[label])], width * 0.92, color=colors[label], label=label)
            ax.bar_label(cont, fmt="%.1f", fontsize="small", padding=2)
            handles.setdefault(label, cont)
    legend_handles = [handles[label] for label in labels if label in handles]
    legend_labels = [label for label in labels if label in handles]
    if chance is not None:
        line = ax.axhline(100.0 * chance, color="grey", ls="--", lw=1)
        legend_handles.append(line)
        legend_labels.append(f"chance ({100.0 * chance:.0f}%)")
    ax.set_xticks(range(len(results)), list(results))
    ax.set_ylim(0, 108)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(legend_handles, legend_labels, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    return fig
