"""The ``xylo`` C, event-driven: the quiescent-neuron skip and the narrow weight storage equal XyloSim bit for bit.

The hidden phase skips a neuron whose states are all zero (positive threshold, zero bias, no alias copies) where
one event reaches fewer than a quarter of the hidden neurons on average;
weights are stored as dense rows or event lists in the narrowest C types, chosen by flash. Random valid
configurations with positive thresholds (so that the skip is taken), with and without biases, aliases,
recurrence and two synapses, run on inputs with long silent stretches (every neuron decays to exactly zero),
full-density steps and sparse steps, in both layouts; outputs and every recorded state are compared exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.codegen import compile_host, run_host
from pondlib.devices.xylo.codegen import _storage_bytes, delivered_weights, emit
from pondlib.devices.xylo.config import validate_config
from pondlib.devices.xylo.sim import RECORD_KEYS, XyloSim
from pondlib.errors import CodegenError
from tests.devices.xylo.xylosim_oracle import random_config


def _quiet_config(rng: np.random.Generator, bias: bool):
    """A random valid configuration whose neurons can fall quiet: positive thresholds, biases zero or not."""
    cfg = random_config(rng, max_hidden=24)
    keep_in = rng.random(np.shape(cfg.weights_in)) < 0.1  # sparse fan-out: the skip is generated
    keep_rec = rng.random(np.shape(cfg.weights_rec)) < 0.1
    cfg = cfg.replace(
        weights_in=np.where(keep_in, cfg.weights_in, 0), weights_rec=np.where(keep_rec, cfg.weights_rec, 0)
    )
    n_hid = cfg.n_hidden
    changes = dict(threshold=rng.integers(1, 400, n_hid), threshold_out=rng.integers(1, 400, cfg.n_output))
    changes["dash_mem"] = rng.integers(1, 5, n_hid)  # fast decays: silence reaches zero within the run
    changes["dash_syn"] = rng.integers(1, 5, n_hid)
    if cfg.n_synapses == 2:
        changes["dash_syn_2"] = rng.integers(1, 5, n_hid)
    if bias:  # some neurons biased (never quiet), the others not
        changes["bias"] = rng.integers(-200, 200, n_hid) * (rng.random(n_hid) < 0.5)
        changes["bias_out"] = rng.integers(-50, 50, cfg.n_output)
    else:
        changes["bias"], changes["bias_out"] = np.zeros(n_hid, np.int64), np.zeros(cfg.n_output, np.int64)
    cfg = cfg.replace(bias_enable=bias, **changes)
    assert validate_config(cfg) == []
    return cfg


def _raster(rng: np.random.Generator, n_in: int, T: int = 60) -> np.ndarray:
    """(2, T, N_in): a burst, a long silence, full-density steps (counts above the clip too), sparse events."""
    x = np.zeros((2, T, n_in), dtype=np.int64)
    x[:, :4] = rng.poisson(2.0, (2, 4, n_in))
    x[:, 30:33] = rng.integers(1, 20, (2, 3, n_in))  # every channel has events
    x[:, 40:] = rng.poisson(0.05, (2, T - 40, n_in))
    return x


def _check(cfg, x, tmp_path, layout, skip_quiet="auto"):
    prog = emit(cfg, name="xq", layout=layout, skip_quiet=skip_quiet)
    y, rec = run_host(compile_host(prog, tmp_path), prog, x, record=True)
    ref_out, _, ref_rec = XyloSim.from_config(cfg).evolve(x, record=True)
    np.testing.assert_array_equal(y, ref_out, err_msg=f"{layout}: output")
    for key in RECORD_KEYS:
        np.testing.assert_array_equal(rec[key], ref_rec[key], err_msg=f"{layout}: {key}")
    return prog, ref_rec


@pytest.mark.parametrize("bias", [False, True])
def test_quiescent_skip_bit_exact(bias, tmp_path):
    rng = np.random.default_rng(71 + bias)
    quiet = active = aliased = skipping = 0
    for i in range(8):
        cfg = _quiet_config(rng, bias)
        prog, rec = _check(cfg, _raster(rng, cfg.n_input), tmp_path / str(i), ("sparse", "dense", "auto")[i % 3])
        text = prog.sources["xq.c"]
        if "if (0) continue;" in text:  # the skip is off: a source reaches a quarter of the neurons or more
            assert any("no quiescent-neuron skip" in n for n in prog.notes)
            continue
        skipping += 1
        states = np.abs(rec["Vmem"]) + np.abs(rec["Isyn"]) + np.abs(rec["Isyn2"]) + rec["Spikes"]
        quiet += int((states[:, 20:30] == 0).sum())  # neuron-steps skipped in the silence
        active += int((states > 0).sum())
        aliased += bool(np.any(np.asarray(cfg.aliases) >= 0))
        assert ("bias[i] == 0" in text) == bool(np.any(np.asarray(cfg.bias) != 0) and bias)
    assert skipping >= 3 and quiet > 0 and active > 0 and aliased > 0  # skip, full update, alias copies all ran


def test_non_positive_thresholds_are_never_skipped(tmp_path):
    """A threshold <= 0 spikes from an all-zero state: the skip tests the threshold at run time."""
    rng = np.random.default_rng(5)
    cfg = _quiet_config(rng, False)
    thr = np.asarray(cfg.threshold).copy()
    thr[::2] = rng.choice([-3, 0], size=thr[::2].size)
    cfg = cfg.replace(threshold=thr)
    prog, rec = _check(cfg, _raster(rng, cfg.n_input), tmp_path, "auto")
    assert "threshold[i] > 0" in prog.sources["xq.c"]  # the skip is on (sparse fan-out) and tests the threshold
    assert rec["Spikes"][:, 20:30, ::2].any()  # zero-threshold neurons spike through the silence


def test_narrow_storage_and_flash_rule():
    rng = np.random.default_rng(9)
    cfg = random_config(rng, max_hidden=60)
    n_in, n_hid = cfg.n_input, cfg.n_hidden
    w_in = rng.integers(-128, 128, (n_in, n_hid, cfg.n_synapses)) * (rng.random((n_in, n_hid, cfg.n_synapses)) < 0.1)
    cfg = cfg.replace(weights_in=w_in, weight_shift_in=0)
    assert validate_config(cfg) == []
    auto, dense = emit(cfg, layout="auto"), emit(cfg, layout="dense")
    kinds = {b.name: (b.ctype, b.nbytes) for b in auto.memory.buffers if b.region == "flash"}
    assert kinds["w_in0_post"][0] == "uint8_t" and kinds["w_in0_w"][0] == "int8_t"  # narrow types
    assert kinds["w_in0_ptr"][0] in ("uint8_t", "uint16_t")
    d_bytes, s_bytes = _storage_bytes(delivered_weights(w_in[:, :, 0], 0))
    assert s_bytes == sum(kinds[f"w_in0_{k}"][1] for k in ("ptr", "post", "w")) and s_bytes < d_bytes
    dense_kinds = {b.name: (b.ctype, b.nbytes) for b in dense.memory.buffers if b.region == "flash"}
    assert dense_kinds["w_in0"] == ("int16_t", d_bytes)  # dense rows stay int16_t (speed)
    assert auto.memory.flash_bytes < dense.memory.flash_bytes
    shifted = cfg.replace(weight_shift_in=4)  # delivered weights beyond int8: int16 storage in the event list
    assert {b.name: b.ctype for b in emit(shifted, layout="sparse").memory.buffers}["w_in0_w"] == "int16_t"


def test_wide_fan_out_keeps_int16_event_weights(tmp_path):
    """Above 256 targets the post indices are uint16_t, and the weights of the event list int16_t even where every
    delivered weight fits int8_t (one index addresses both arrays: fewer instructions per entry)."""
    from pondlib.devices.xylo.config import XyloConfig

    rng = np.random.default_rng(3)
    n_hid = 300
    w_in = rng.integers(-100, 100, (2, n_hid, 1)) * (rng.random((2, n_hid, 1)) < 0.05)
    cfg = XyloConfig(
        weights_in=w_in, weights_rec=np.zeros((n_hid, n_hid, 1), np.int64), weights_out=np.ones((n_hid, 1), np.int64),
        weight_shift_in=0, dash_mem=[2] * n_hid, dash_syn=[2] * n_hid, dash_syn_2=[0] * n_hid, dash_mem_out=[1],
        dash_syn_out=[1], threshold=[100] * n_hid, bias=[0] * n_hid, threshold_out=[40], bias_out=[0],
        aliases=[-1] * n_hid,
    )  # fmt: skip
    kinds = {b.name: b.ctype for b in emit(cfg, layout="sparse").memory.buffers}
    assert kinds["w_in0_post"] == "uint16_t" and kinds["w_in0_w"] == "int16_t"
    d_bytes, s_bytes = _storage_bytes(delivered_weights(w_in[:, :, 0], 0))
    nnz = int(np.count_nonzero(w_in))
    assert s_bytes == 3 * 1 + nnz * (2 + 2)  # uint8_t offsets, uint16_t indices, int16_t weights
    _check(cfg, _raster(rng, 2), tmp_path, "sparse")  # and bit for bit XyloSim's


def test_alias_copies_pass_through_a_quiet_neuron(tmp_path):
    """Neuron 0 spikes, neuron 1 (all states zero) only relays its copies to neuron 2: 1 is not skipped."""
    from pondlib.devices.xylo.config import XyloConfig

    cfg = XyloConfig(
        weights_in=np.array([[[120], [0], [0], [0], [0], [0]]]), weights_rec=np.zeros((6, 6, 1), np.int64),
        weights_out=np.array([[0], [0], [50], [0], [0], [0]]), weight_shift_in=4, dash_mem=[2] * 6,
        dash_syn=[2] * 6, dash_syn_2=[0] * 6, dash_mem_out=[1], dash_syn_out=[1], threshold=[100] * 6,
        bias=[0] * 6, threshold_out=[40], bias_out=[0], aliases=[1, 2, -1, -1, -1, -1],
    )  # fmt: skip
    assert validate_config(cfg) == []
    x = np.zeros((1, 12, 1), dtype=np.int64)
    x[0, 1] = 3
    prog, rec = _check(cfg, x, tmp_path, "sparse")
    assert "Spikes[i]" in prog.sources["xq.c"]  # the quiet test includes the alias copies
    assert rec["Spikes"][0, :, 2].sum() > 0 and not rec["Vmem"][0, :, 1].any()  # copies reached 2 through 1


def test_skip_quiet_hint_either_way(tmp_path):
    """The user's hint overrides the fan-out rule; both loops give XyloSim's values."""
    rng = np.random.default_rng(12)
    cfg = _quiet_config(rng, False)
    dense_in = cfg.replace(weights_in=np.where(np.asarray(cfg.weights_in) == 0, 5, cfg.weights_in))
    x = _raster(rng, cfg.n_input)
    for i, (c, hint) in enumerate([(cfg, False), (dense_in, True), (dense_in, "auto")]):
        prog, _ = _check(c, x, tmp_path / str(i), "sparse", hint)
        assert ("if (0) continue;" in prog.sources["xq.c"]) == (hint is not True)


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=6).filter(lambda s: s != "auto")))
def test_bad_skip_quiet_is_refused(value):
    cfg = random_config(np.random.default_rng(0), max_hidden=4)
    with pytest.raises(CodegenError, match="skip_quiet"):
        emit(cfg, skip_quiet=value)
