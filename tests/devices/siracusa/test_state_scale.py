"""The Siracusa mapper's ``state_scale=`` option: pins the LIF state scale instead of calibrating it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.devices.siracusa.mapper import GemmLayer, IntLIFLayer, mapper, state_scales
from pondlib.devices.siracusa.sim import SiracusaSim, quantize_input
from pondlib.devices.siracusa.specification import QLIF
from pondlib.errors import QuantizationError
from tests.strategies import assert_pond_error, bad_positive_floats, bad_scalars


def _layers() -> list:
    rng = np.random.default_rng(0)
    return [
        GemmLayer("fc0", rng.normal(size=(6, 8)), rng.normal(size=8) * 0.1),
        IntLIFLayer("lif0", alpha=0.9, threshold=np.linspace(0.5, 1.5, 8)),
        GemmLayer("fc1", rng.normal(size=(8, 3))),
        IntLIFLayer("lif1", alpha=0.8, threshold=1.0, bias=0.05, n=3),
    ]


def _x(seed: int = 1, top: int = 4) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, top, (5, 9, 6)).astype(np.float64)


def _lifs(spec) -> dict[str, QLIF]:
    return {q.name: q for q in spec.config.layers if isinstance(q, QLIF)}


def _same_integers(a: QLIF, b: QLIF) -> bool:
    return all(
        np.array_equal(np.asarray(getattr(a, k)), np.asarray(getattr(b, k)))
        for k in ("beta_mul", "in_mul", "add", "threshold", "shift")
    )


def test_pinning_the_calibrated_scales_changes_nothing():
    layers, x = _layers(), _x()
    plain = mapper(layers, calibration=x)
    scales = state_scales(layers, x)
    assert set(scales) == {"lif0", "lif1"} and all(s > 0 for s in scales.values())
    pinned = mapper(layers, calibration=x, state_scale=scales)
    for name, q in _lifs(plain).items():
        assert _same_integers(q, _lifs(pinned)[name])
    # the calibrated scale leaves headroom: the largest threshold (1.5) is below the top of the range
    assert scales["lif0"] * (2**15 - 1) >= 1.5 and int(_lifs(plain)["lif0"].threshold.max()) < 2**15 - 1


def test_pinned_scale_sets_the_integers_and_ignores_the_calibration_peak():
    layers = _layers()
    x_small, x_big = _x(top=2), _x(top=4) * 8.0
    free = [mapper(layers, calibration=x) for x in (x_small, x_big)]
    # without the option, a larger membrane peak gives a coarser state grid (smaller integer thresholds)
    assert int(_lifs(free[1])["lif1"].threshold[0]) < int(_lifs(free[0])["lif1"].threshold[0])
    s_v = {"lif0": 2.0**-10, "lif1": 2.0**-9}
    pinned = [mapper(layers, calibration=x, state_scale=s_v, input_scale=1 / 64) for x in (x_small, x_big)]
    for name in s_v:
        a, b = _lifs(pinned[0])[name], _lifs(pinned[1])[name]
        assert _same_integers(a, b)
    lif0 = _lifs(pinned[0])["lif0"]
    assert np.array_equal(lif0.threshold, np.rint(np.linspace(0.5, 1.5, 8) / 2.0**-10).astype(np.int64))
    assert int(_lifs(pinned[0])["lif1"].threshold[0]) == 512  # 1.0 / 2^-9
    # input multiplier: gain x accumulator scale / s_v (the accumulator scale is input scale x weight scale)
    s_w = np.max(np.abs(layers[0].weight), axis=0) / 127
    want = s_w / 64 / 2.0**-10
    assert np.allclose(lif0.in_mul / 2.0**lif0.shift, want, rtol=1e-4)


def test_scalar_pins_every_lif_and_dict_pins_only_its_layers():
    layers, x = _layers(), _x()
    every = _lifs(mapper(layers, calibration=x, state_scale=2.0**-8))
    assert int(every["lif0"].threshold[-1]) == 384 and int(every["lif1"].threshold[0]) == 256
    some = _lifs(mapper(layers, calibration=x, state_scale={"lif1": 2.0**-8}))
    plain = _lifs(mapper(layers, calibration=x))
    assert _same_integers(some["lif0"], plain["lif0"]) and int(some["lif1"].threshold[0]) == 256


def test_pinned_deployment_runs():
    layers, x = _layers(), _x()
    spec = mapper(layers, calibration=x, state_scale={"lif0": 2.0**-9, "lif1": 2.0**-9})
    out, _, rec = SiracusaSim(spec.config).evolve(quantize_input(x, spec.config), record=True)
    assert out.shape == (5, 9, 3) and rec["lif0/spikes"].sum() > 0
    assert np.abs(rec["lif0/v"]).max() <= 2**15


@pytest.mark.parametrize("bad", [{}, {"fc0": 1e-3}, {"nope": 1e-3}, {"lif0": -1.0}, {"lif0": "x"}, {1: 1e-3}])
def test_bad_dicts_refused(bad):
    err = assert_pond_error(mapper, _layers(), calibration=_x(), state_scale=bad, error=QuantizationError)
    assert "state_scale" in str(err)


@settings(max_examples=30, deadline=None)
@given(bad=bad_positive_floats().filter(lambda v: v is not None))
def test_bad_state_scale_refused(bad):
    err = assert_pond_error(mapper, _layers(), calibration=_x(), state_scale=bad, error=QuantizationError)
    assert "state_scale" in str(err)


@settings(max_examples=20, deadline=None)
@given(bad=bad_scalars(), key=st.sampled_from([None, "lif0"]))
def test_edge_scalars_refused_or_mapped_to_finite_integers(bad, key):
    """Non-finite, subnormal or huge scales are refused (a PondError); the ones inside the documented
    scale range map to integers (or report every broken rule together), never garbage."""
    arg = bad if key is None else {key: bad}
    try:
        spec = mapper(_layers(), calibration=_x(), state_scale=arg, check=False)
    except QuantizationError as err:
        assert "state_scale" in str(err) or "scale" in str(err) or "multiplier" in str(err)
        return
    for q in _lifs(spec).values():
        assert np.all(q.threshold >= 1) and np.all(q.threshold <= 2**15 - 1)
