"""The ``xylo`` C numerics against XyloSim: outputs and every recorded state equal bit for bit.

Random valid configurations (the generator of the xylosim parity tests: sizes, full int8 weights, shifts
that wrap in int16, 1 and 2 synapses, recurrence, alias chains, biases over int16, thresholds from
negative through 0 to 32767, dashes 0..15, input counts far above 15), corner configurations that
saturate everything, both weight layouts, and the shared golden cases.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pondlib.codegen import compile_host, generate, run_host
from pondlib.devices.xylo.codegen import delivered_weights, emit
from pondlib.devices.xylo.config import validate_config
from pondlib.devices.xylo.sim import RECORD_KEYS, XyloSim
from pondlib.errors import CodegenError, ConstraintError
from tests.devices.xylo.test_golden_sim import CASES, GOLDEN, QUANTIZERS, golden_config
from tests.devices.xylo.xylosim_oracle import random_config, random_input
from tests.strategies import bad_types

N_GROUPS = 6
PER_GROUP = 20  # 120 random configurations in all


def run_both(config, x, tmp_path, label, layout="auto", opt="-O2"):
    """Compile ``config``, run ``x`` (B, T, N_in) through the C and through XyloSim; assert equality."""
    prog = emit(config, name="xy", layout=layout)
    exe = compile_host(prog, tmp_path / label, opt=opt)
    y, rec = run_host(exe, prog, np.minimum(x, 255), record=True)
    ref_out, _, ref_rec = XyloSim.from_config(config).evolve(x, record=True)
    np.testing.assert_array_equal(y, ref_out, err_msg=f"{label}: output")
    for key in RECORD_KEYS:
        np.testing.assert_array_equal(rec[key], ref_rec[key], err_msg=f"{label}: {key}")
    return ref_out, ref_rec


@pytest.mark.parametrize("group", range(N_GROUPS))
def test_random_configs_bit_exact(group, tmp_path):
    rng = np.random.default_rng(4200 + group)
    spiking = steps = 0
    for i in range(PER_GROUP):
        config = random_config(rng, max_hidden=40)
        assert validate_config(config) == []
        T = int(rng.integers(20, 80))
        x = random_input(rng, T, config.n_input, batch=2)
        layout = ("auto", "dense", "sparse")[i % 3]
        _, ref_rec = run_both(config, x, tmp_path, f"g{group}c{i}", layout=layout, opt=("-O2", "-O0")[i % 2])
        spiking += bool(ref_rec["Spikes"].any())
        steps += 2 * T
    assert spiking >= PER_GROUP // 3  # the random configurations are not all silent


def test_corner_configs_saturate_everything(tmp_path):
    """Max weights and shifts, 31-spike caps, -32768 states, dash 0 and 15, negative thresholds."""
    rng = np.random.default_rng(5)
    for i in range(16):
        config = random_config(rng, max_hidden=24)
        n_hid, n_out = config.n_hidden, config.n_output
        sign = int(rng.choice([-1, 1]))
        config = config.replace(
            weights_in=np.where(config.weights_in != 0, 127 if sign > 0 else -128, 0),
            weight_shift_in=int(rng.choice([7, 8, 9])),
            dash_mem=rng.choice([0, 15], size=n_hid),
            dash_syn=rng.choice([0, 15], size=n_hid),
            dash_syn_2=rng.choice([0, 15], size=n_hid) if config.n_synapses == 2 else np.zeros(n_hid, np.int64),
            dash_mem_out=rng.choice([0, 15], size=n_out),
            dash_syn_out=rng.choice([0, 15], size=n_out),
            threshold=rng.choice([-32768, -5, 0, 1, 7, 32767], size=n_hid),
            threshold_out=rng.choice([-32768, -3, 0, 1, 32767], size=n_out),
        )
        assert validate_config(config) == []
        x = rng.integers(0, 40, size=(1, 50, config.n_input))
        _, rec = run_both(config, x, tmp_path, f"corner{i}", layout=("dense", "sparse")[i % 2])
        assert rec["Vmem"].min() >= -32768 and rec["Spikes"].max() <= 31


def test_negative_rounding_and_minimum_step(tmp_path):
    """Negative states decay by floor (-3 >> 1 = -2) and by sign(v) when the shift gives 0."""
    rng = np.random.default_rng(11)
    config = random_config(rng, max_hidden=8).replace(bias_enable=False)
    n_in, n_hid = config.n_input, config.n_hidden
    config = config.replace(
        weights_in=-np.abs(np.asarray(config.weights_in)) - 1,
        weight_shift_in=0,
        weights_rec=np.zeros_like(config.weights_rec),
        dash_syn=np.arange(n_hid) % 16,
        dash_mem=(np.arange(n_hid) * 3) % 16,
        bias=np.zeros(n_hid, np.int64),
        bias_out=np.zeros(config.n_output, np.int64),
        threshold=np.full(n_hid, 32767),
    )
    x = np.zeros((1, 40, n_in), dtype=np.int64)
    x[0, 0] = 3
    _, rec = run_both(config, x, tmp_path, "negative")
    assert rec["Isyn"].min() < 0 and rec["Vmem"].min() < 0


@pytest.mark.parametrize("case", CASES)
def test_golden_cases_bit_exact(case, tmp_path):
    with np.load(GOLDEN / f"{case}.npz") as f:
        data = {k: f[k] for k in f.files}
    for q in QUANTIZERS:
        config = golden_config(data, q)
        prog = generate(config, numerics="xylo", name=f"golden_{q}")
        exe = compile_host(prog, tmp_path / q)
        y, rec = run_host(exe, prog, data["input_raster"], record=True)
        np.testing.assert_array_equal(y, data[f"sim_{q}/output"], err_msg=f"{case} {q}: output")
        for key in RECORD_KEYS:
            np.testing.assert_array_equal(rec[key], data[f"sim_{q}/rec/{key}"], err_msg=f"{case} {q} {key}")
        assert y.sum() > 0


def test_layouts_and_memory_report():
    rng = np.random.default_rng(3)
    config = random_config(rng, max_hidden=30)
    dense, sparse = emit(config, layout="dense"), emit(config, layout="sparse")
    names = {b.name for b in dense.memory.buffers}
    assert {"Vmem", "Isyn", "Isyn2", "Spikes", "Vmem_out", "Isyn_out"} <= names
    assert [s.name for s in sparse.io.states] == list(RECORD_KEYS)
    assert dense.io.in_ctype == "uint8_t" and dense.io.n_in == config.n_input and dense.io.n_out == config.n_output
    assert dense.memory.state_bytes == sparse.memory.state_bytes == 7 * config.n_hidden + 4 * config.n_output


def test_delivered_weights_wrap():
    assert delivered_weights(np.array([127, -128, 1]), 9).tolist() == [-512, 0, 512]
    assert delivered_weights(np.array([-128]), 15).tolist() == [0]
    assert delivered_weights(np.array([1]), 15).tolist() == [-32768]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bad=st.one_of(bad_types(), st.integers(), st.floats(), st.just(np.zeros(3))))
def test_bad_model_types_refused(bad):
    with pytest.raises(CodegenError, match="XyloConfig"):
        emit(bad)
    with pytest.raises(CodegenError):
        generate(bad, numerics="xylo")


@settings(max_examples=25, deadline=None)
@given(layout=st.one_of(bad_types(), st.text(max_size=6).filter(lambda s: s not in ("auto", "dense", "sparse"))))
def test_bad_layout_refused(layout):
    config = random_config(np.random.default_rng(0), max_hidden=4)
    with pytest.raises(CodegenError, match="layout"):
        emit(config, layout=layout)


def test_bad_name_option_and_invalid_config():
    config = random_config(np.random.default_rng(1), max_hidden=4)
    with pytest.raises(CodegenError, match="name"):
        emit(config, name="1bad")
    with pytest.raises(CodegenError, match="speed"):
        emit(config, speed=3)
    bad = config.replace(threshold=np.full(config.n_hidden, 40000))
    with pytest.raises(CodegenError, match="threshold"):
        emit(bad)
    bad = config.replace(dash_mem=np.full(config.n_hidden, 2.5))
    with pytest.raises(CodegenError, match="dash_mem"):
        emit(bad)


def test_width_guard_names_the_field(monkeypatch):
    """A configuration that bypassed validation (e.g. custom limits) is refused before it could overflow."""
    import pondlib.devices.xylo.codegen as xylo

    config = random_config(np.random.default_rng(2), max_hidden=4)
    monkeypatch.setattr(xylo, "validate_config", lambda c: [])
    with pytest.raises(ConstraintError, match="threshold"):
        emit(config.replace(threshold=np.full(config.n_hidden, 70000)))


def test_input_above_uint8_is_refused_not_wrapped(tmp_path):
    config = random_config(np.random.default_rng(4), max_hidden=4)
    prog = emit(config, name="xy")
    exe = compile_host(prog, tmp_path)
    with pytest.raises(CodegenError, match="input"):
        run_host(exe, prog, np.full((1, 3, config.n_input), 300))
