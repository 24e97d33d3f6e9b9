"""SiracusaSim: hand cases, convolution against loops, batching, LIF state continuation, records, errors."""

from __future__ import annotations

import numpy as np
import pytest

from pondlib.devices.siracusa import (
    QLIF,
    QConv2d,
    QGemm,
    QRequant,
    RequantShift,
    SiracusaConfig,
    SiracusaSim,
    conv2d_acc,
    requant_shift,
    wrap32,
)
from pondlib.errors import ConfigError, SimulationError


def test_requant_shift_hand_cases():
    rq = RequantShift(mul=1, div=2)
    assert requant_shift(np.array([-3, -5, -1]), rq).tolist() == [-1, -2, 0]  # round half up
    assert requant_shift(np.array([300, -300]), RequantShift(mul=1)).tolist() == [127, -128]  # clamp
    relu = RequantShift(mul=1, signed=False)
    assert requant_shift(np.array([-5, 0, 7, 300]), relu).tolist() == [0, 0, 7, 255]
    # per-channel mul/add over the last axis: (x * mul + add + 2) >> 2
    pc = RequantShift(mul=[1, 2, 3], add=[0, -4, 8], div=4)
    assert requant_shift(np.array([[4, 4, 4]]), pc).tolist() == [[1, 1, 5]]
    # x * mul wraps before add: (2^20 * 2^12) = 2^32 -> 0, plus add 12 -> 3 after >> 2
    assert requant_shift(np.array([2**20]), RequantShift(mul=2**12, add=12, div=4)).tolist() == [3]
    assert wrap32(np.array([2**32 + 5, -(2**31) - 2])).tolist() == [5, 2**31 - 2]


def naive_conv(x, w, stride, pad, groups):
    H, W, C = x.shape
    kh, kw, cg, O = w.shape
    xp = np.pad(x, ((pad, pad), (pad, pad), (0, 0)))
    Ho, Wo = (H + 2 * pad - kh) // stride + 1, (W + 2 * pad - kw) // stride + 1
    og = O // groups
    out = np.zeros((Ho, Wo, O), dtype=np.int64)
    for i in range(Ho):
        for j in range(Wo):
            for o in range(O):
                g = o // og
                patch = xp[i * stride : i * stride + kh, j * stride : j * stride + kw, g * cg : (g + 1) * cg]
                out[i, j, o] = int(np.sum(patch * w[:, :, :, o]))
    return out


@pytest.mark.parametrize(
    "k, stride, pad, groups, C, O",
    [(3, 1, 1, 1, 4, 8), (3, 2, 0, 1, 3, 16), (1, 1, 0, 1, 8, 4), (3, 1, 1, 6, 6, 6), (3, 1, 1, 2, 4, 8)],
)
def test_conv_matches_loops(k, stride, pad, groups, C, O):
    rng = np.random.default_rng(k + stride + groups)
    x = rng.integers(-128, 128, (2, 7, 6, C))
    w = rng.integers(-128, 128, (k, k, C // groups, O))
    layer = QConv2d("c", w, (7, 6, C), stride=stride, padding=pad, groups=groups)
    got = conv2d_acc(x.reshape(2, -1), layer).reshape((2,) + layer.out_shape)
    for b in range(2):
        assert np.array_equal(got[b], naive_conv(x[b], w, stride, pad, groups))


def lif_config(reset="subtract"):
    return SiracusaConfig(
        n_input=2,
        layers=(
            QGemm("fc", weight=[[20, 0], [0, 30]]),
            QLIF("lif", beta_mul=[3, 2], in_mul=[1, 1], add=[0, 0], shift=2, threshold=[15, 40], reset=reset),
        ),
    )


def test_lif_hand_trajectory_and_reset_modes():
    x = np.array([[1, 1]] * 4)
    _, _, rec = SiracusaSim(lif_config()).evolve(x, record=True)
    # neuron 0: v = (3 v + 20 + 2) >> 2: 5, 9, 12, 14 (no spike); neuron 1: (2 v + 30 + 2) >> 2:
    # 8, 12, 14, 15
    assert rec["lif/v"][:, 0].tolist() == [5, 9, 12, 14]
    assert rec["lif/v"][:, 1].tolist() == [8, 12, 14, 15]
    x = np.array([[3, 0]] * 3)  # (3 v + 60 + 2) >> 2 = 15 -> spike
    out, _, rec = SiracusaSim(lif_config()).evolve(x, record=True)
    assert out[:, 0].tolist() == [1, 1, 1] and rec["lif/v"][:, 0].tolist() == [0, 0, 0]
    out, _, rec = SiracusaSim(lif_config("zero")).evolve(np.array([[4, 0]] * 2), record=True)
    # (0 + 80 + 2) >> 2 = 20 >= 15 -> 0; the same again
    assert out[:, 0].tolist() == [1, 1] and rec["lif/v"][:, 0].tolist() == [0, 0]


def test_state_continues_across_calls_and_batches_match():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, (3, 10, 2))
    sim = SiracusaSim(lif_config())
    full, _, _ = sim.evolve(x[0])
    sim.reset_state()
    a, _, _ = sim.evolve(x[0, :4])
    b, state, _ = sim.evolve(x[0, 4:])
    assert np.array_equal(np.concatenate([a, b]), full) and state["lif"].shape == (2,)
    sim.reset_state()
    batched, state, rec = sim.evolve(x, record=True)
    assert batched.shape == (3, 10, 2) and state["lif"].shape == (3, 2)
    assert set(rec) == {"fc/acc", "fc/out", "lif/v", "lif/spikes", "lif/out"}
    for i in range(3):
        sim.reset_state()
        assert np.array_equal(sim.evolve(x[i])[0], batched[i])


def test_bad_input_and_bad_config_raise():
    cfg = SiracusaConfig(n_input=2, layers=(QRequant("r", 2, RequantShift(mul=1)),))
    sim = SiracusaSim(cfg)
    with pytest.raises(SimulationError, match="out of range"):
        sim.evolve(np.array([[0, 128]]))  # never clipped silently
    with pytest.raises(SimulationError, match="input shape"):
        sim.evolve(np.zeros((4, 3), dtype=int))
    with pytest.raises(SimulationError, match="non-integer"):
        sim.evolve(np.array([[0.5, 1.0]]))
    with pytest.raises(ConfigError):
        SiracusaSim(SiracusaConfig(n_input=2, layers=(QRequant("r", 2, RequantShift(mul=1, div=3)),)))
