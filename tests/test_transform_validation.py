"""Bad and edge input to the quantizers and the hardware-aware transform (issue #13).

Each test drives a public entry point of :mod:`pondlib.transform` with generated input and asserts one
of: a :class:`~pondlib.errors.QuantizationError` (or the documented PondError) naming the field or
value; or a documented tolerant result, checked in full (integers in range, finite positive scales,
finite errors, exact clip counts). Never another exception, never a non-finite number, never -2^63.

Documented tolerant behaviours tested here (see :mod:`pondlib.devices.xylo.quantize`):

* values beyond the integer range (huge ones included) are clipped and counted in ``clipped``;
* a non-zero threshold whose scaled value rounds to 0 becomes +-1 (counted in ``clipped``);
* a layer without weights takes its scale from its thresholds and biases; an all-zero layer quantizes
  to zeros with scale 1; ``quantization.notes`` says so.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.devices.xylo.aware import xylo_aware
from pondlib.devices.xylo.specification import Specification
from pondlib.errors import GraphError, PondError, QuantizationError
from pondlib.transform import channel_quantize, global_quantize
from pondlib.transform import quantize_methods as q
from tests.strategies import NON_FINITE, assert_pond_error, bad_types

QUANTIZERS = [global_quantize, channel_quantize]
SCALED = ("weights_in", "weights_rec", "weights_out", "threshold", "threshold_out", "bias", "bias_out")
INT_RANGES = {
    "weights_in": (-128, 127),
    "weights_rec": (-128, 127),
    "weights_out": (-128, 127),
    "threshold": (-32768, 32767),
    "threshold_out": (-32768, 32767),
    "bias": (-32768, 32767),
    "bias_out": (-32768, 32767),
}
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def spec_of(**changes) -> Specification:
    rng = np.random.default_rng(3)
    base = dict(
        weights_in=rng.normal(size=(3, 4, 2)),
        weights_rec=rng.normal(size=(4, 4, 2)) * 0.5,
        weights_out=rng.normal(size=(4, 2)),
        threshold=np.full(4, 1.5),
        threshold_out=np.full(2, 2.0),
        bias=np.array([0.1, -0.2, 0.3, 0.0]),
        bias_out=np.array([0.05, -0.1]),
        dash_mem=np.full(4, 4.3),
        dash_syn=np.full(4, 3.3),
        dash_syn_2=np.full(4, 2.2),
        dash_mem_out=np.full(2, 4.3),
        dash_syn_out=np.full(2, 4.3),
    )
    base.update(changes)
    return Specification.zeros(3, 4, 2, n_synapses=2).replace(**base)


def assert_sound(qspec: Specification, spec: Specification) -> None:
    """Every integer in range, scales finite > 0, errors finite >= 0, clip counts exact, signs kept."""
    rep = qspec.quantization
    for layer in ("hidden", "output"):
        s = np.asarray(rep.scales[layer], dtype=float)
        assert np.all(np.isfinite(s)) and np.all(s > 0), (layer, s)
    for name, (lo, hi) in INT_RANGES.items():
        got = getattr(qspec, name)
        assert got.dtype == np.int64
        assert got.min(initial=0) >= lo and got.max(initial=0) <= hi, name
        assert np.isfinite(rep.relative_error[name]) and rep.relative_error[name] >= 0, name
        # recompute the clip count from the reported scale: never a wrong count
        w = np.asarray(getattr(spec, name), dtype=float)
        s = np.asarray(rep.scales["output" if name.endswith("_out") else "hidden"], dtype=float)
        if s.ndim:
            s = s.reshape((1, -1, 1)) if w.ndim == 3 else (s.reshape(1, -1) if w.ndim == 2 else s)
        with np.errstate(over="ignore"):
            r = np.rint(w * s)
        expected = int(np.count_nonzero((r < lo) | (r > hi)))
        if name.startswith("threshold"):
            expected += int(np.count_nonzero((r == 0) & (w != 0)))  # raised to +-1
            np.testing.assert_array_equal(np.sign(got), np.sign(w))  # a threshold never changes sign or vanishes
        assert rep.clipped[name] == expected, (name, rep.clipped[name], expected)
    for name in ("dash_mem", "dash_syn", "dash_syn_2", "dash_mem_out", "dash_syn_out"):
        assert 0 <= getattr(qspec, name).min() and getattr(qspec, name).max() <= 15


# -- NaN, inf, subnormal, huge, all-zero -------------------------------------------------------------
@pytest.mark.parametrize("quantize", QUANTIZERS)
@given(field=st.sampled_from(SCALED + ("dash_mem", "dash_syn_out")), value=st.sampled_from(NON_FINITE), data=st.data())
@SETTINGS
def test_non_finite_refused_naming_field_and_index(quantize, field, value, data):
    arr = np.array(getattr(spec_of(), field), dtype=float)
    idx = tuple(data.draw(st.integers(0, n - 1)) for n in arr.shape)
    arr[idx] = value
    err = assert_pond_error(quantize, spec_of(**{field: arr}), match=f"{field}{list(idx)}", error=QuantizationError)
    assert "NaN or inf" in str(err)


@pytest.mark.parametrize("quantize", QUANTIZERS)
@given(field=st.sampled_from(SCALED), value=st.sampled_from([5e-324, 1e-320, -1e-310, 2e-308]), data=st.data())
@SETTINGS
def test_subnormal_values_refused(quantize, field, value, data):
    arr = np.array(getattr(spec_of(), field), dtype=float)
    idx = tuple(data.draw(st.integers(0, n - 1)) for n in arr.shape)
    arr[idx] = value
    err = assert_pond_error(quantize, spec_of(**{field: arr}), match=f"{field}{list(idx)}", error=QuantizationError)
    assert "subnormal" in str(err) and repr(value) in str(err)


@pytest.mark.parametrize("quantize", QUANTIZERS)
def test_subnormal_only_layer_never_gets_an_infinite_scale(quantize):
    """The issue's case: 1e-320 weights used to give an infinite scale and -2^63 biases."""
    w = np.zeros((4, 2))
    w[0, 0] = 1e-320
    assert_pond_error(quantize, spec_of(weights_out=w), match="weights_out[0, 0]", error=QuantizationError)
    # normal but so small that 127 / max|w| overflows: refused by name, with the value
    w[0, 0] = 1e-307
    err = assert_pond_error(quantize, spec_of(weights_out=w), match="weights_out", error=QuantizationError)
    assert "too small to scale" in str(err) and "1e-307" in str(err)
    thr = np.array([1e-307, 0.0])
    err = assert_pond_error(
        quantize,
        spec_of(weights_out=np.zeros((4, 2)), threshold_out=thr, bias_out=np.zeros(2)),
        error=QuantizationError,
    )
    assert "threshold_out" in str(err) and "1e-307" in str(err)


@pytest.mark.parametrize("quantize", QUANTIZERS)
@pytest.mark.parametrize("w", [1e300, -1e300, 1.7e308])
def test_huge_weights_keep_thresholds_non_zero_and_counts_exact(quantize, w):
    """The issue's case: 1e300 weights used to give thresholds 0, NaN errors and clip count 0."""
    spec = spec_of(weights_in=np.full((3, 4, 2), w), weights_out=np.full((4, 2), w), bias=np.full(4, abs(w)))
    out = quantize(spec)
    assert_sound(out, spec)
    assert np.all(out.threshold == 1) and np.all(out.threshold_out == 1)  # raised from 0, never 0
    assert out.quantization.clipped["threshold"] == 4 and out.quantization.clipped["threshold_out"] == 2
    assert np.all(np.abs(out.weights_in) == 127)
    assert np.all(out.bias == 127)  # a bias as large as the weights: 127 at their scale, not -2^63


@pytest.mark.parametrize("quantize", QUANTIZERS)
def test_huge_thresholds_and_biases_clip_never_wrap(quantize):
    spec = spec_of(threshold=np.array([1e300, -1e300, 1.0, 1e10]), bias_out=np.array([1.7e308, -1.7e308]))
    out = quantize(spec)
    assert_sound(out, spec)
    # issue 34: these used to be capped alone ([32767, -32768], counted as clipped), which changed the
    # dynamics; now the scale shrinks so that they fit (weights with it) and the lost resolution is reported
    assert out.threshold[:2].tolist() == [32767, -32767]
    top = 127 if quantize is global_quantize else 32767  # global: a bias above every weight lands on 127
    assert out.bias_out.tolist() == [top, -top]
    assert out.quantization.clipped["bias_out"] == 0
    # global: thresholds 1 and 1e10 at the scale of 1e300 round to 0 and are raised to 1 (counted)
    raised = 2 if quantize is global_quantize else 0
    assert out.quantization.clipped["threshold"] == raised
    assert np.max(out.quantization.resolution_lost["output"]) > 1000  # 1.7e308 against weights ~1: ~1000 bits


@pytest.mark.parametrize("quantize", QUANTIZERS)
def test_all_zero_network_quantizes_to_zeros_and_says_so(quantize):
    z = Specification.zeros(3, 4, 2, n_synapses=1)
    out = quantize(z)
    for name in INT_RANGES:
        assert not getattr(out, name).any(), name
    assert np.all(np.asarray(out.quantization.scales["hidden"]) == 1.0)
    assert np.all(np.asarray(out.quantization.scales["output"]) == 1.0)
    assert all(v == 0.0 for v in out.quantization.relative_error.values())
    assert out.quantization.total_clipped == 0
    notes = " ".join(out.quantization.notes)
    assert "quantized to zeros with scale 1" in notes and "hidden" in notes and "output" in notes


@pytest.mark.parametrize("quantize", QUANTIZERS)
def test_weightless_layer_scale_from_threshold_and_note(quantize):
    spec = spec_of(weights_out=np.zeros((4, 2)), threshold_out=np.array([2.0, 1.0]), bias_out=np.zeros(2))
    out = quantize(spec)
    assert_sound(out, spec)
    assert out.threshold_out[0] == 32767
    assert any("no non-zero weight" in n for n in out.quantization.notes)


finite_or_edge = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.sampled_from([0.0, 1e-300, -1e-300, 1e300, -1e300, 1.7e308, 3e-308, 1.0, -1.0]),
)


@pytest.mark.parametrize("quantize", QUANTIZERS)
@given(data=st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_magnitudes_error_or_sound_result(quantize, data):
    """Any finite float mix: a QuantizationError naming a field, or a result sound in every number."""
    fields = {}
    for name in SCALED:
        shape = np.shape(getattr(spec_of(), name))
        fields[name] = np.array(
            data.draw(st.lists(finite_or_edge, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
        ).reshape(shape)
    spec = spec_of(**fields)
    try:
        out = quantize(spec)
    except QuantizationError as err:
        assert any(name in str(err) for name in SCALED), str(err)
        return
    assert_sound(out, spec)
    again = quantize(spec)  # deterministic
    for name in INT_RANGES:
        np.testing.assert_array_equal(getattr(again, name), getattr(out, name))


# -- wrong types, shapes and options -------------------------------------------------------------------
@pytest.mark.parametrize("quantize", QUANTIZERS)
@given(bad=bad_types())
@settings(max_examples=20, deadline=None)
def test_wrong_input_types_refused(quantize, bad):
    if isinstance(bad, dict):
        assert_pond_error(quantize, bad, error=QuantizationError)
    else:
        assert_pond_error(quantize, bad, match="Specification", error=QuantizationError)


@pytest.mark.parametrize("quantize", QUANTIZERS)
@given(
    option=st.sampled_from(["bits", "state_bits", "dash_bits", "bits_per_weight", "bits_per_threshold"]),
    value=st.one_of(bad_types(), st.integers(max_value=1), st.integers(min_value=33), st.sampled_from([2.5, 8.5])),
)
@settings(max_examples=30, deadline=None)
def test_bad_bit_widths_refused(quantize, option, value):
    if option in ("bits_per_weight", "bits_per_threshold") and value is None:
        return  # None means "not given" for Rockpool's names
    assert_pond_error(quantize, spec_of(), match="bits", error=QuantizationError, **{option: value})


@given(value=st.one_of(bad_types(), st.sampled_from([0.0, -5.0, 100.5, *NON_FINITE])))
@settings(max_examples=25, deadline=None)
def test_bad_fuzzy_options_refused(value):
    assert_pond_error(global_quantize, spec_of(), fuzzy_scaling=True, fuzzy_percentile=value, match="fuzzy_percentile")
    if not isinstance(value, bool):
        assert_pond_error(global_quantize, spec_of(), fuzzy_scaling=value, match="fuzzy_scaling")


@pytest.mark.parametrize("quantize", QUANTIZERS)
@pytest.mark.parametrize(
    "field, value, match",
    [
        ("threshold", np.ones(5), "threshold shape"),
        ("weights_out", np.ones(4), "weights_out shape"),
        ("weights_in", np.ones(3), "weights_in shape"),
        ("dash_syn_2", np.ones((4, 1)), "dash_syn_2 shape"),
    ],
)
def test_shapes_refused(quantize, field, value, match):
    assert_pond_error(lambda: quantize(spec_of(**{field: value})), match=match, error=QuantizationError)


@pytest.mark.parametrize("quantize", QUANTIZERS)
def test_keyword_calling_convention(quantize):
    spec = spec_of()
    native = quantize(spec)
    rock = quantize(**spec)  # Rockpool's style
    for name in INT_RANGES:
        np.testing.assert_array_equal(getattr(rock, name), getattr(native, name))
    assert_pond_error(quantize, match="nothing", error=QuantizationError)
    assert_pond_error(quantize, spec, weights_in=spec.weights_in, match="one of them", error=QuantizationError)
    err = assert_pond_error(
        lambda: quantize(**spec, bogus=1, weights_rek=2), match="unknown key", error=QuantizationError
    )
    assert "bogus" in str(err) and "weights_rek" in str(err)
    fields = dict(spec)
    del fields["threshold"]
    assert_pond_error(lambda: quantize(**fields), match="threshold", error=QuantizationError)
    assert q.global_quantize is global_quantize and q.channel_quantize is channel_quantize


def test_fractional_aliases_never_rounded():
    with pytest.raises(PondError, match="aliases"):
        spec_of(aliases=np.array([0.5, -1, -1, -1]))
    spec = spec_of(aliases=np.array([2.0, -1, 3, -1]))  # whole numbers in a float array: exact
    out = channel_quantize(spec)
    assert out.aliases.tolist() == [2, -1, 3, -1] and out.aliases.dtype == np.int64


# -- the hardware-aware transform ------------------------------------------------------------------------
def small_net() -> nn.Sequential:
    rng = np.random.default_rng(0)
    return nn.Sequential(
        nn.Linear(4, 3, weight=rng.normal(size=(4, 3))),
        nn.LIF(3, tau_mem=0.02, tau_syn=0.004),
        nn.Linear(3, 2, weight=rng.normal(size=(3, 2))),
        nn.LIF(2, tau_mem=0.02, tau_syn=0.004),
    )


@given(
    arg=st.sampled_from(["quantize", "learn_dash", "delays", "surrogate"]),
    value=st.one_of(st.text(max_size=5), st.integers(), st.sampled_from([1.5, "False", "True", object()])),
)
@settings(max_examples=25, deadline=None)
def test_xylo_aware_bad_arguments(arg, value):
    if arg == "quantize" and value in ("channel", "global"):
        return
    assert_pond_error(xylo_aware, small_net(), match=arg, **{arg: value})


def test_xylo_aware_bad_parameters_named():
    net = small_net()
    assert_pond_error(xylo_aware, net, limits="audio9", match="variant")
    assert_pond_error(xylo_aware, "net", error=GraphError)
    import equinox as eqx

    bad = eqx.tree_at(lambda n: n.layers[1].tau_mem, net, replace=-np.ones(3))
    assert_pond_error(xylo_aware, bad, match="tau_mem", error=GraphError)
    bad = eqx.tree_at(lambda n: n.layers[0].weight, net, replace=np.full((4, 3), np.nan))
    assert_pond_error(xylo_aware, bad, match="weight", error=GraphError)


def test_hardware_dashes_refuse_a_diverged_training():
    import equinox as eqx

    from pondlib.devices.xylo.aware import hardware_dashes

    hw = xylo_aware(small_net())
    dashes = hardware_dashes(hw)
    assert all(v["dash_mem"].dtype == np.int64 for v in dashes.values())
    bad = eqx.tree_at(lambda n: n.layers[0].dash_mem, hw, replace=np.full(3, np.nan))
    assert_pond_error(hardware_dashes, bad, match="dash_mem")
    assert_pond_error(hardware_dashes, small_net(), match="XyloLIF")
