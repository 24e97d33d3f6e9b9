"""Quantizers that keep the dynamics (issue 34, item 2): every threshold and bias fits, never capped alone.

The expected integers are derived by hand from
``s = min((2^7 - 1) / max|W|, (2^15 - 1) / max(|theta|, |b|))`` (global: ``max|W|`` also takes a bias
larger than every weight, as Rockpool does), ``q = rint(s x)`` (half to even).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.devices.xylo.specification import Specification
from pondlib.transform import channel_quantize, global_quantize


def spec_of(**changes) -> Specification:
    """Two inputs, two hidden neurons (one synapse), one output; every weight 1e-3."""
    base = dict(
        weights_in=np.full((2, 2, 1), 1e-3),
        weights_out=np.array([[1e-3], [-1e-3]]),
        threshold=np.array([1.0, 0.01]),
        threshold_out=np.array([0.1]),
        dash_mem=np.full(2, 4.0),
        dash_syn=np.full(2, 3.0),
        dash_mem_out=np.full(1, 4.0),
        dash_syn_out=np.full(1, 3.0),
    )
    base.update(changes)
    return Specification.zeros(n_in=2, n_hidden=2, n_output=1, n_synapses=1).replace(**base)


def test_global_threshold_beyond_range_shrinks_weights_with_it():
    q = global_quantize(spec_of())
    rep = q.quantization
    # hidden: weight scale 127 / 1e-3 = 127000 would put threshold 1.0 at 127000 > 32767: s = 32767
    assert rep.scales["hidden"] == 32767.0
    assert q.weights_in[..., 0].tolist() == [[33, 33], [33, 33]]  # rint(32.767)
    assert q.threshold.tolist() == [32767, 328]  # rint(327.67)
    assert rep.resolution_lost["hidden"] == pytest.approx(math.log2(127000 / 32767))
    # output: 127000 * 0.1 = 12700 fits: nothing gives way
    assert rep.scales["output"] == pytest.approx(127000.0)
    assert q.weights_out[:, 0].tolist() == [127, -127] and q.threshold_out.tolist() == [12700]
    assert rep.resolution_lost["output"] == 0.0
    assert rep.total_clipped == 0
    assert any("bit(s) of weight resolution lost" in n for n in rep.notes)


def test_channel_threshold_beyond_range_per_neuron():
    q = channel_quantize(spec_of())
    rep = q.quantization
    # neuron 0: threshold 1.0 -> s = 32767; neuron 1: threshold 0.01 -> 1270 fits at s = 127000
    np.testing.assert_allclose(rep.scales["hidden"], [32767.0, 127000.0])
    assert q.weights_in[..., 0].tolist() == [[33, 127], [33, 127]]
    assert q.threshold.tolist() == [32767, 1270]
    np.testing.assert_allclose(rep.resolution_lost["hidden"], [math.log2(127000 / 32767), 0.0])
    assert rep.total_clipped == 0


def test_negative_threshold_fits_too():
    q = channel_quantize(spec_of(threshold=np.array([-2.0, 0.01])))
    # |theta| = 2 -> s = 32767 / 2 = 16383.5: weights rint(16.3835) = 16, threshold -32767
    assert q.threshold.tolist() == [-32767, 1270] and q.weights_in[0, 0, 0] == 16
    assert q.quantization.total_clipped == 0


def test_channel_bias_beyond_range_sets_the_scale():
    q = channel_quantize(spec_of(bias=np.array([2.0, 0.0]), threshold=np.array([0.5, 0.01])))
    # neuron 0: max(|theta|, |b|) = 2 -> s = 16383.5: bias 32767, threshold rint(8191.75) = 8192, weights 16
    assert q.bias.tolist() == [32767, 0]
    assert q.threshold.tolist() == [8192, 1270]
    assert q.weights_in[..., 0].tolist() == [[16, 127], [16, 127]]
    assert q.quantization.clipped["bias"] == 0


def test_global_bias_larger_than_every_weight_sets_the_weight_scale():
    spec = spec_of(
        weights_in=np.array([[[0.5], [-0.25]], [[0.1], [0.5]]]),
        threshold=np.array([1.0, 1.0]),
        bias=np.array([1.0, -0.5]),
    )
    q = global_quantize(spec)
    # Rockpool's rule: max(|W|, |b|) = 1.0 -> s = 127 (not 254 from the weights alone)
    assert q.quantization.scales["hidden"] == 127.0
    assert q.weights_in[..., 0].tolist() == [[64, -32], [13, 64]]  # rint(63.5) = 64 (half to even), 12.7 -> 13
    assert q.bias.tolist() == [127, -64] and q.threshold.tolist() == [127, 127]
    assert q.quantization.resolution_lost["hidden"] == pytest.approx(1.0)  # 254 -> 127: one bit
    assert any("bias" in n and "sets the scale" in n for n in q.quantization.notes)
    # the per-channel quantizer does not use that rule: the bias fits the 16-bit state range
    c = channel_quantize(spec)
    np.testing.assert_allclose(c.quantization.scales["hidden"], [254.0, 254.0])
    assert c.bias.tolist() == [254, -127]


def test_fuzzy_scaling_keeps_its_percentile_scale_with_a_large_bias():
    w = np.full((2, 2, 1), 0.1)
    w[0, 0, 0] = 10.0
    q = global_quantize(
        spec_of(weights_in=w, bias=np.array([0.3, 0.0]), threshold=np.array([1.0, 1.0])),
        fuzzy_scaling=True,
        fuzzy_percentile=50,
    )
    assert q.quantization.scales["hidden"] == pytest.approx(1270.0)  # 127 / 0.1; the bias 0.3 -> 381 fits
    assert q.bias.tolist() == [381, 0] and q.threshold.tolist() == [1270, 1270]


@given(
    w_exp=st.floats(-6.0, -1.0),
    theta=st.floats(0.05, 50.0),
    method=st.sampled_from(["global", "channel"]),
)
@settings(max_examples=40, deadline=None)
def test_threshold_to_weight_ratio_is_kept(w_exp, theta, method):
    """The quantized threshold over the quantized weight equals the float ratio up to rounding."""
    w = 10.0**w_exp
    spec = spec_of(weights_in=np.full((2, 2, 1), w), threshold=np.array([theta, theta]), bias=np.zeros(2))
    q = (global_quantize if method == "global" else channel_quantize)(spec)
    assert q.quantization.clipped["threshold"] == 0
    wq, tq = int(q.weights_in[0, 0, 0]), int(q.threshold[0])
    assert 0 < tq <= 32767
    if wq == 0:  # the weights vanished below one step: the report says so (more than 7 bits lost)
        assert np.max(q.quantization.resolution_lost["hidden"]) > 7
        return
    s = float(np.asarray(q.quantization.scales["hidden"]).ravel()[0])
    # |wq - s w| <= 1/2 and |tq - s theta| <= 1/2 (rounding only, nothing capped), so
    # (s theta - 1/2) / (s w + 1/2) <= tq / wq <= (s theta + 1/2) / (s w - 1/2)
    lo, hi = (s * theta - 0.5) / (s * w + 0.5), (s * theta + 0.5) / (s * w - 0.5)
    assert lo * (1 - 1e-9) <= tq / wq <= hi * (1 + 1e-9)
