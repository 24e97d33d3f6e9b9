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
