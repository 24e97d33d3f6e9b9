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

from typing import Any, Sequence

import numpy as np

from pondlib.errors import PondError

__all__ = ["raster", "traces", "compare"]


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


def _as_2d(values: Any, name: str, where: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise PondError(f"{name} is not numeric", value=type(values).__name__, limit="a numeric array",
                        where=where, fix="pass a (T,) or (T, N) array") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise PondError(f"{name} shape", value=tuple(arr.shape), limit="(T,) or (T, N) with T >= 1",
                        where=where, fix="pass one sample, time first (index a batch with x[0])")
    return arr


def _time(T: int, dt: float | None) -> tuple[np.ndarray, str]:
    if dt is None:
        return np.arange(T), "time (steps)"
    if not (isinstance(dt, (int, float)) and dt > 0):
        raise PondError("dt", value=dt, limit="a positive number of seconds, or None for steps",
                        where="pondlib.plot", fix="pass dt=1e-3 for 1 ms steps")
    return np.arange(T) * dt * 1e3, "time (ms)"


def raster(spikes: Any, ax: Any = None, *, title: str = "spikes", dt: float | None = None,
           ylabel: str = "neuron index", count_label: str = "spikes per step") -> Any:
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

    Returns:
        The :class:`~matplotlib.figure.Figure`.
    """
    s = _as_2d(spikes, "spikes", "raster")
    t, xlabel = _time(s.shape[0], dt)
    fig, ax = _figure_and_axes(ax)
    ti, ni = np.nonzero(s > 0)
    counts = s[ti, ni]
    total = int(round(float(s[s > 0].sum())))
    if counts.size and counts.max() > 1:
        sc = ax.scatter(t[ti], ni, c=counts, s=12, marker="s", cmap="viridis", vmin=1,
                        vmax=float(counts.max()))
        fig.colorbar(sc, ax=ax, label=count_label)
    else:
        ax.scatter(t[ti], ni, s=12, marker="|", color="black", label=f"spike ({total} in all)")
        ax.legend(loc="upper right", fontsize="small")
    half = 0.5 * (t[1] - t[0]) if len(t) > 1 else 0.5
    ax.set_xlim(t[0] - half, t[-1] + half)
    ax.set_ylim(-0.5, s.shape[1] - 0.5)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return fig


def traces(values: Any, ax: Any = None, *, title: str = "membrane potential", dt: float | None = None,
           ylabel: str = "value (a.u.)", labels: Sequence[str] | None = None,
           neurons: Sequence[int] | None = None, max_traces: int = 8, x: Any = None,
           xlabel: str | None = None) -> Any:
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

    Returns:
        The :class:`~matplotlib.figure.Figure`.
    """
    v = _as_2d(values, "values", "traces")
    t, time_label = _time(v.shape[0], dt)
    if x is not None:
        t = np.asarray(x, dtype=float)
        if t.shape != (v.shape[0],):
            raise PondError("x values", value=tuple(t.shape), limit=(v.shape[0],), where="traces",
                            fix="pass one x value per row of values")
    xlabel = xlabel or time_label
    idx = list(range(min(v.shape[1], max_traces))) if neurons is None else [int(i) for i in neurons]
    bad = [i for i in idx if not 0 <= i < v.shape[1]]
    if bad:
        raise PondError("neuron index", value=bad, limit=f"0..{v.shape[1] - 1}", where="traces",
                        fix="pick existing columns")
    if labels is not None and len(labels) != len(idx):
        raise PondError("number of labels", value=len(labels), limit=len(idx), where="traces",
                        fix="pass one label per plotted neuron")
    fig, ax = _figure_and_axes(ax)
    for j, i in enumerate(idx):
        ax.plot(t, v[:, i], lw=1.2, label=labels[j] if labels is not None else f"neuron {i}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc="best", fontsize="small", ncols=2 if len(idx) > 4 else 1)
    ax.grid(alpha=0.3)
    return fig


def compare(float_values: Any, device_values: Any, *, title: str = "float model vs device",
            dt: float | None = None, kind: str = "image", float_label: str = "float model",
            device_label: str = "device", float_unit: str = "a.u.", device_unit: str = "chip integer",
            ylabel: str = "neuron index", neurons: Sequence[int] | None = None,
            max_traces: int = 6) -> Any:
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

    Returns:
        The :class:`~matplotlib.figure.Figure` (two axes plus colorbars).

    Example:
        >>> a = np.zeros((10, 3)); a[2, 1] = 1
        >>> fig = compare(a, np.roll(a, 1, axis=0), dt=1e-3)
        >>> [ax.get_title() for ax in fig.axes[:2]]
        ['float model', 'device']
    """
    if kind not in ("image", "lines"):
        raise PondError("compare kind", value=kind, limit=["image", "lines"], where="compare",
                        fix="pass kind='image' or kind='lines'")
    fv = _as_2d(float_values, "float_values", "compare")
    dv = _as_2d(device_values, "device_values", "compare")
    if fv.shape[1] != dv.shape[1]:
        raise PondError("neuron counts differ", value=dv.shape[1], limit=fv.shape[1], where="compare",
                        fix="pass the same neurons from the float model and the device")
    fig, axes = _new_axes(2, figsize=(11.0, 4.0))
    for ax, v, label, unit in ((axes[0], fv, float_label, float_unit),
                               (axes[1], dv, device_label, device_unit)):
        t, xlabel = _time(v.shape[0], dt)
        if kind == "image":
            step = t[1] - t[0] if len(t) > 1 else 1.0
            im = ax.imshow(v.T, aspect="auto", origin="lower", interpolation="nearest", cmap="viridis",
                           extent=(t[0] - step / 2, t[-1] + step / 2, -0.5, v.shape[1] - 0.5))
            fig.colorbar(im, ax=ax, label=unit)
            ax.set_ylabel(ylabel)
        else:
            traces(v, ax, title=label, dt=dt, ylabel=unit, neurons=neurons, max_traces=max_traces)
        ax.set_xlabel(xlabel)
        ax.set_title(label)
    fig.suptitle(title)
    return fig
