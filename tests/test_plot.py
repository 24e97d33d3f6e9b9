"""Tests of pondlib.plot: every figure has labelled axes, units and the data it was given."""

import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.image import AxesImage

from pondlib import plot
from pondlib.errors import PondError


def _scatter_offsets(ax):
    cols = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(cols) == 1
    return np.asarray(cols[0].get_offsets())


def test_raster_binary_spikes():
    s = np.zeros((30, 6))
    s[[2, 5, 9], [0, 3, 5]] = 1
    fig = plot.raster(s, title="out", dt=2e-3)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("time (ms)", "neuron index", "out")
    pts = _scatter_offsets(ax)
    np.testing.assert_allclose(sorted(map(tuple, pts)), [(4.0, 0), (10.0, 3), (18.0, 5)])
    assert ax.get_legend() is not None and "3 in all" in ax.get_legend().get_texts()[0].get_text()
    assert len(fig.axes) == 1  # no colorbar for 0/1 spikes


def test_raster_counts_get_a_colorbar():
    s = np.zeros((10, 4), dtype=int)
    s[1, 2] = 7
    s[4, 0] = 1
    fig = plot.raster(s, count_label="events per step")
    ax, cax = fig.axes
    assert ax.get_xlabel() == "time (steps)"
    assert cax.get_ylabel() == "events per step"
    coll = [c for c in ax.collections if isinstance(c, PathCollection)][0]
    assert sorted(coll.get_array().tolist()) == [1, 7]
    assert ax.get_ylim() == (-0.5, 3.5)


def test_raster_draws_on_given_axes():
    fig0 = plot.raster(np.ones((3, 2)))
    ax = fig0.axes[0]
    fig = plot.raster(np.eye(3), ax=ax, title="again")
    assert fig is fig0 and ax.get_title() == "again"


def test_traces_lines_and_legend():
    v = np.arange(20.0).reshape(10, 2) * [1, -1]
    fig = plot.traces(v, dt=1e-3, ylabel="vmem (chip integer)", labels=["a", "b"])
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert len(lines) == 2
    np.testing.assert_allclose(lines[1].get_ydata(), v[:, 1])
    np.testing.assert_allclose(lines[0].get_xdata(), np.arange(10.0))
    assert ax.get_ylabel() == "vmem (chip integer)" and ax.get_xlabel() == "time (ms)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]


def test_traces_picks_neurons_and_custom_x():
    v = np.random.default_rng(0).normal(size=(5, 12))
    fig = plot.traces(v, neurons=[3, 7], x=np.arange(1, 6), xlabel="epoch")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["neuron 3", "neuron 7"]
    np.testing.assert_allclose(ax.get_lines()[0].get_xdata(), np.arange(1, 6))
    assert ax.get_xlabel() == "epoch"
    assert len(plot.traces(v).axes[0].get_lines()) == 8  # max_traces


def test_compare_images_side_by_side():
    a = np.zeros((8, 3))
    a[2, 1] = 1
    b = np.roll(a, 1, axis=0)
    fig = plot.compare(a, b, dt=1e-3, title="outputs", device_label="chip", device_unit="spikes")
    ax_f, ax_d = fig.axes[:2]
    assert (ax_f.get_title(), ax_d.get_title()) == ("float model", "chip")
    assert fig.get_suptitle() == "outputs"
    for ax, data in ((ax_f, a), (ax_d, b)):
        images = [c for c in ax.get_children() if isinstance(c, AxesImage)]
        np.testing.assert_array_equal(images[0].get_array(), data.T)
        assert ax.get_xlabel() == "time (ms)" and ax.get_ylabel() == "neuron index"
    assert len(fig.axes) == 4  # two colorbars
    assert fig.axes[3].get_ylabel() == "spikes"


def test_compare_lines():
    f = np.linspace(0, 1, 10)[:, None] * [1, 2, 3]
    fig = plot.compare(f, f * 100, kind="lines", neurons=[0, 2], float_unit="a.u.", device_unit="chip integer")
    ax_f, ax_d = fig.axes
    assert len(ax_f.get_lines()) == 2 and ax_d.get_ylabel() == "chip integer"
    np.testing.assert_allclose(ax_d.get_lines()[1].get_ydata(), f[:, 2] * 100)


def test_saved_png_is_an_image(tmp_path):
    path = tmp_path / "r.png"
    plot.raster(np.eye(5)).savefig(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 1000


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: plot.raster(np.zeros((2, 3, 4))), "spikes shape"),
        (lambda: plot.raster(np.zeros((0, 3))), "spikes shape"),
        (lambda: plot.raster(np.zeros((3, 3)), dt=-1.0), "dt"),
        (lambda: plot.traces(np.zeros((3, 3)), neurons=[5]), "neuron index"),
        (lambda: plot.traces(np.zeros((3, 2)), labels=["one"]), "labels"),
        (lambda: plot.compare(np.zeros((3, 2)), np.zeros((3, 4))), "neuron counts"),
        (lambda: plot.compare(np.zeros((3, 2)), np.zeros((3, 2)), kind="bars"), "kind"),
        (lambda: plot.traces(["a", "b"]), "not numeric"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(PondError, match=match):
        call()


# -- issue #13: every argument is validated ---------------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.strategies import (  # noqa: E402
    assert_pond_error,
    bad_positive_floats,
    bad_types,
    non_finite_arrays,
    ragged_lists,
    wrong_dtype_arrays,
)

_SETTINGS = settings(max_examples=20, deadline=None)
_PLOTS = {
    "raster": lambda a: plot.raster(a),
    "traces": lambda a: plot.traces(a),
    "compare": lambda a: plot.compare(a, np.zeros((4, 3))),
    "compare device": lambda a: plot.compare(np.zeros((4, 3)), a),
    "rasters": lambda a: plot.rasters({"a": a}),
}


@_SETTINGS
@given(arr=st.one_of(non_finite_arrays((4, 3)), wrong_dtype_arrays((4, 3)), ragged_lists()))
def test_bad_arrays_are_refused(arr):
    for fn in _PLOTS.values():
        assert_pond_error(fn, arr)


@pytest.mark.parametrize("arr", [np.zeros((4, 0)), np.zeros(0), np.float64(3.0), None, "abc"])
def test_empty_and_scalar_arrays(arr):
    for fn in _PLOTS.values():
        assert_pond_error(fn, arr)


@_SETTINGS
@given(dt=bad_positive_floats().filter(lambda v: v is not None))
def test_bad_dt(dt):
    assert_pond_error(plot.raster, np.ones((3, 2)), dt=dt, match="dt")
    assert_pond_error(plot.traces, np.ones((3, 2)), dt=dt, match="dt")
    assert_pond_error(plot.compare, np.ones((3, 2)), np.ones((3, 2)), dt=dt, match="dt")


@_SETTINGS
@given(value=bad_types().filter(lambda v: not isinstance(v, str)))
def test_text_arguments_must_be_strings(value):
    assert_pond_error(plot.raster, np.ones((3, 2)), title=value, match="title")
    assert_pond_error(plot.traces, np.ones((3, 2)), ylabel=value, match="ylabel")
    assert_pond_error(plot.compare, np.ones((3, 2)), np.ones((3, 2)), device_label=value, match="device_label")


def test_raster_refuses_negative_counts():
    assert_pond_error(plot.raster, -np.ones((3, 2)), match="out of range")
    assert_pond_error(plot.rasters, {"x": -np.ones((3, 2))}, match="out of range")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"neurons": [0.5]}, "neuron index"),
        ({"neurons": [-1]}, "neuron index"),
        ({"neurons": [[0]]}, "neuron index"),
        ({"neurons": "0"}, "neuron index"),
        ({"max_traces": 0}, "max_traces"),
        ({"max_traces": 2.5}, "max_traces"),
        ({"labels": "ab"}, "labels"),
        ({"labels": [1, 2]}, "labels[0]"),
        ({"x": [0.0, np.nan, 2.0]}, "x values"),
        ({"x": [0.0, 1.0]}, "x values"),
        ({"xlabel": 3}, "xlabel"),
    ],
)
def test_traces_arguments(kwargs, match):
    assert_pond_error(plot.traces, np.ones((3, 2)), match=match, **kwargs)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: plot.rasters([np.ones((3, 2))]), "panels"),
        (lambda: plot.rasters({1: np.ones((3, 2))}), "panel title"),
        (lambda: plot.rasters({}), "no panels"),
        (lambda: plot.accuracy_bars([0.5]), "results"),
        (lambda: plot.accuracy_bars({"x": 0.5}), "results['x']"),
        (lambda: plot.accuracy_bars({"x": {"a": 1.5}}), "results['x']['a']"),
        (lambda: plot.accuracy_bars({"x": {"a": float("nan")}}), "results['x']['a']"),
        (lambda: plot.accuracy_bars({"x": {"a": "0.5"}}), "results['x']['a']"),
        (lambda: plot.accuracy_bars({"x": {"a": 0.5}}, chance=2.0), "chance"),
        (lambda: plot.accuracy_bars({"x": {"a": 0.5}}, order="a"), "order"),
        (lambda: plot.accuracy_bars({"x": {"a": 0.5}}, order=[1]), "order[0]"),
        (lambda: plot.accuracy_bars({3: {"a": 0.5}}), "group name"),
    ],
)
def test_panels_and_results(call, match):
    assert_pond_error(call, match=match)


def test_accuracy_bars_valid_edge_cases():
    fig = plot.accuracy_bars({"x": {"a": 0.0, "b": 1.0}, "empty": {}}, chance=0.0)
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["a", "b", "chance (0%)"]
