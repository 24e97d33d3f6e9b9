"""XyloConfig: validation of every range, lossless save/load, building from a Specification."""

from __future__ import annotations

import numpy as np
import pytest

from pondlib.devices.xylo.config import (
    CONFIG_ARRAY_FIELDS,
    XyloConfig,
    config_equal,
    config_from_specification,
    validate_config,
)
from pondlib.devices.xylo.limits import XYLO_AUDIO2, XYLO_IMU
from pondlib.devices.xylo.specification import Specification
from pondlib.errors import ConfigError
from tests.devices.xylo.xylosim_oracle import random_config


def small_config(n_in=3, n_hid=5, n_out=2, k=2, **changes) -> XyloConfig:
    rng = np.random.default_rng(0)
    base = dict(
        weights_in=rng.integers(-128, 128, (n_in, n_hid, k)),
        weights_rec=rng.integers(-128, 128, (n_hid, n_hid, k)),
        weights_out=rng.integers(-128, 128, (n_hid, n_out)),
        dash_mem=np.full(n_hid, 3),
        dash_syn=np.full(n_hid, 2),
        dash_syn_2=np.full(n_hid, 4),
        dash_mem_out=np.full(n_out, 3),
        dash_syn_out=np.full(n_out, 2),
        threshold=np.full(n_hid, 100),
        bias=np.zeros(n_hid, dtype=np.int64),
        threshold_out=np.full(n_out, 50),
        bias_out=np.zeros(n_out, dtype=np.int64),
        aliases=-np.ones(n_hid, dtype=np.int64),
        dt=1e-3,
    )
    base.update(changes)
    return XyloConfig(**base)


def test_valid_config_has_no_problem():
    assert validate_config(small_config()) == []
    assert validate_config(small_config(k=1), XYLO_IMU) == []


def test_arrays_are_int64_read_only_copies():
    w = np.zeros((2, 3, 1), dtype=np.int8)
    c = small_config(n_in=2, n_hid=3, k=1, weights_in=w)
    assert c.weights_in.dtype == np.int64
    assert not c.weights_in.flags.writeable
    w[0, 0, 0] = 5
    assert c.weights_in[0, 0, 0] == 0
    # out-of-range values are kept as they are (int64), never wrapped
    c = small_config(threshold=np.full(5, 40000))
    assert c.threshold[0] == 40000


@pytest.mark.parametrize(
    "field, value, index, allowed",
    [
        ("weights_in", 128, "[0, 1, 0]", "-128..127"),
        ("weights_in", -129, "[0, 1, 0]", "-128..127"),
        ("weights_rec", 200, "[0, 1, 0]", "-128..127"),
        ("weights_out", -300, "[0, 1]", "-128..127"),
        ("dash_mem", 16, "[1]", "0..15"),
        ("dash_syn", -1, "[1]", "0..15"),
        ("dash_syn_2", 99, "[1]", "0..15"),
        ("dash_mem_out", 16, "[1]", "0..15"),
        ("dash_syn_out", -2, "[1]", "0..15"),
        ("threshold", 32768, "[1]", "-32768..32767"),
        ("threshold_out", -32769, "[1]", "-32768..32767"),
    ],
)
def test_each_array_range_is_checked(field, value, index, allowed):
    c = small_config()
    arr = c.to_dict()[field]
    flat_index = (0, 1, 0)[: arr.ndim] if arr.ndim > 1 else (1,)
    arr[flat_index] = value
    problems = validate_config(c.replace(**{field: arr}))
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{field}{index}: got {value}")
    assert allowed in problems[0]


@pytest.mark.parametrize("field", ["bias", "bias_out"])
def test_bias_range_and_enable(field):
    c = small_config(bias_enable=True)
    arr = c.to_dict()[field]
    arr[1] = 40000
    problems = validate_config(c.replace(**{field: arr}))
    assert problems == [
        f"{field}[1]: got 40000, expected an integer in -32768..32767 (out of range; 1 value(s) affected)"
    ]
    # a non-zero bias with biases disabled would be silently ignored by the chip: reported
    arr[1] = 7
    problems = validate_config(c.replace(**{field: arr}, bias_enable=False))
    assert len(problems) == 1 and f"{field}[1]: got 7 with bias_enable False" in problems[0]


@pytest.mark.parametrize("field", ["weight_shift_in", "weight_shift_rec", "weight_shift_out"])
@pytest.mark.parametrize("value", [-1, 16, 2.5])
def test_weight_shift_range(field, value):
    problems = validate_config(small_config(**{field: value}))
    assert len(problems) == 1
    assert problems[0].startswith(f"{field}: got {value}") and "0..15" in problems[0]


def test_non_integer_and_nan_are_reported_not_rounded():
    c = small_config(dash_mem=np.array([3, 3.5, 3, np.nan, 3]))
    assert c.dash_mem.dtype == np.float64
    problems = validate_config(c)
    assert any(p.startswith("dash_mem[3]: got nan") and "non-finite" in p for p in problems)
    assert any(p.startswith("dash_mem[1]: got 3.5") and "non-integer" in p for p in problems)
    c = small_config(threshold=np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    assert c.threshold.dtype == np.int64 and validate_config(c) == []


def test_aliases():
    bad = small_config(aliases=np.array([-1, 1, 0, 5, 4]))
    problems = validate_config(bad)
    assert problems == ["aliases[1]: got 1, expected -1 or a hidden id in 2..4 (alias targets must be higher ids)"]
    assert validate_config(small_config(aliases=np.array([1, 2, 4, -1, -1]))) == []
    assert any(
        p.startswith("aliases[4]: got 7") for p in validate_config(small_config(aliases=np.array([-1, -1, -1, -1, 7])))
    )


def test_fanout_counts_both_synapses():
    n = 40
    w = np.zeros((n, n, 2), dtype=np.int64)
    w[3, :, :] = 1  # 80 non-zero outgoing weights from neuron 3
    w[5, :33, :] = 1  # 66 from neuron 5
    w[7, :32, :] = 1  # exactly 64: allowed
    c = small_config(n_hid=n, weights_rec=w)
    problems = validate_config(c)
    assert problems == [
        "weights_rec[3]: got a recurrent fan-out of 80 non-zero weights, expected at most 64 (2 neuron(s) affected)"
    ]


def test_sizes_against_limits():
    assert any("N_in = 17" in p for p in validate_config(small_config(n_in=17)))
    assert any("N_out = 9" in p for p in validate_config(small_config(n_out=9)))
    assert any(
        "N_hid = 1001" in p
        for p in validate_config(small_config(n_hid=1001, n_in=1, n_out=1, weights_rec=np.zeros((1001, 1001, 2))))
    )
    assert any("k = 2" in p and "Xylo IMU" in p for p in validate_config(small_config(), XYLO_IMU))
    assert any("k = 3" in p for p in validate_config(small_config(k=3)))
    assert validate_config(small_config(n_out=16, k=1), "imu") == []


def test_shapes_consistent():
    c = small_config(weights_out=np.zeros((4, 2)), dash_syn=np.zeros(3), threshold_out=np.ones(2))
    problems = validate_config(c)
    assert any(p.startswith("weights_out: got shape (4, 2)") for p in problems)
    assert any(p.startswith("dash_syn: got shape (3,)") for p in problems)
    assert any(
        p.startswith("weights_in: got shape") for p in validate_config(small_config(weights_in=np.zeros((3, 5))))
    )


def test_dt_and_limits_name():
    assert any(p.startswith("dt: got 1.0 s") for p in validate_config(small_config(dt=1.0)))
    assert any(p.startswith("dt: got nan") for p in validate_config(small_config(dt=np.nan)))
    assert any(p.startswith("limits_name") for p in validate_config(small_config(limits_name="Xylo Nine")))


def test_all_problems_reported_together():
    c = small_config(
        weights_in=np.full((3, 5, 2), 500),
        dash_mem=np.full(5, 20),
        threshold=np.full(5, -40000),
        aliases=np.array([0, -1, -1, -1, -1]),
        weight_shift_rec=16,
        dt=0.0,
    )
    problems = validate_config(c)
    fields = [p.split("[")[0].split(":")[0] for p in problems]
    assert fields == ["weights_in", "dash_mem", "threshold", "weight_shift_rec", "aliases", "dt"]
    with pytest.raises(ConfigError) as info:
        from pondlib.devices.xylo.sim import XyloSim

        XyloSim.from_config(c)
    assert info.value.problems == problems
    assert "6 configuration problem(s)" in str(info.value)


# -- save / load ----------------------------------------------------------------------------------
def test_save_load_round_trip_random(tmp_path):
    rng = np.random.default_rng(123)
    for i in range(25):
        c = random_config(rng, max_hidden=30)
        path = tmp_path / f"c{i}.cfg"
        c.save(path)
        d = XyloConfig.load(path)
        assert d == c and config_equal(d, c)
        for name in CONFIG_ARRAY_FIELDS:
            assert getattr(d, name).dtype == getattr(c, name).dtype
        assert type(d.weight_shift_in) is int and type(d.dt) is float and type(d.bias_enable) is bool


def test_save_load_keeps_invalid_values(tmp_path):
    c = small_config(
        dash_mem=np.array([1, 2.5, 3, 4, 5]), threshold=np.full(5, 99999), weight_shift_out=1.5, limits_name="Xylo IMU"
    )
    c.save(tmp_path / "bad.npz")
    d = XyloConfig.load(tmp_path / "bad.npz")
    assert d == c and d.dash_mem.dtype == np.float64 and d.weight_shift_out == 1.5
    assert validate_config(d) == validate_config(c)


def test_equality_detects_differences():
    c = small_config()
    assert c == small_config()
    assert c != c.replace(dash_mem=np.full(5, 4))
    assert c != c.replace(dt=2e-3)
    assert c != c.replace(dash_mem=np.full(5, 3.0).astype(np.float32) + 0.5)
    assert (c == 3) is False


def test_load_missing_or_malformed(tmp_path):
    with pytest.raises(ConfigError, match="not found") as info:
        XyloConfig.load(tmp_path / "nope.npz")
    assert str(tmp_path / "nope.npz") in str(info.value)
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"this is not a zip file")
    with pytest.raises(ConfigError) as info:
        XyloConfig.load(garbage)
    assert str(garbage) in str(info.value)
    partial = tmp_path / "partial.npz"
    payload = {k: v for k, v in small_config().to_dict().items() if k != "dash_syn_2"}
    payload = {k: np.asarray(v) for k, v in payload.items()}
    with open(partial, "wb") as fh:
        np.savez(fh, **payload)
    with pytest.raises(ConfigError, match="missing key 'dash_syn_2'") as info:
        XyloConfig.load(partial)
    assert str(partial) in str(info.value)


# -- from a specification -------------------------------------------------------------------------
def quantized_spec() -> Specification:
    rng = np.random.default_rng(7)
    spec = Specification.zeros(n_in=4, n_hidden=6, n_output=3, n_synapses=2, dt=1e-3)
    return spec.replace(
        weights_in=rng.integers(-128, 128, (4, 6, 2)).astype(float),
        weights_rec=rng.integers(-128, 128, (6, 6, 2)).astype(float),
        weights_out=rng.integers(-128, 128, (6, 3)).astype(float),
        dash_mem=np.full(6, 4.0),
        dash_syn=np.full(6, 2.0),
        dash_syn_2=np.full(6, 5.0),
        dash_mem_out=np.full(3, 3.0),
        dash_syn_out=np.full(3, 1.0),
        threshold=np.full(6, 300.0),
        threshold_out=np.full(3, 200.0),
        bias=np.array([0, 0, 5.0, 0, 0, 0]),
        aliases=np.array([2, -1, -1, 5, -1, -1]),
        weight_shift_rec=2,
    )


def test_config_from_specification():
    spec = quantized_spec()
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in spec.to_dict().items()}
    config, ok, message = config_from_specification(spec)
    assert ok and message == "valid"
    assert config.bias_enable is True
    assert config.weight_shift_rec == 2 and config.limits_name == "Xylo Audio 2"
    for name in CONFIG_ARRAY_FIELDS:
        assert getattr(config, name).dtype == np.int64
        np.testing.assert_array_equal(getattr(config, name), getattr(spec, name))
    after = spec.to_dict()
    for k, v in before.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(after[k], v)
            assert after[k].dtype == v.dtype
    assert spec.weights_in.flags.writeable  # the spec's arrays are untouched, not frozen


def test_config_from_specification_bias_disabled_and_limits():
    spec = quantized_spec().replace(bias=np.zeros(6))
    config, ok, _ = config_from_specification(spec)
    assert ok and config.bias_enable is False
    config, ok, message = config_from_specification(spec, limits="imu")
    assert not ok and config.limits_name == "Xylo IMU" and "k = 2" in message


def test_config_from_unquantized_specification_reports_every_problem():
    spec = quantized_spec().replace(
        dash_mem=np.full(6, 4.3), weights_out=np.full((6, 3), 200.0), aliases=np.array([-1, 0, -1, -1, -1, -1])
    )
    config, ok, message = config_from_specification(spec)
    assert not ok
    assert "dash_mem[0]: got 4.3" in message and "non-integer" in message
    assert "weights_out[0, 0]: got 200" in message
    assert "aliases[1]: got 0" in message
    assert message.startswith("3 configuration problem(s)")
    np.testing.assert_array_equal(spec.dash_mem, np.full(6, 4.3))  # not rounded in place
    assert config.dash_mem.dtype == np.float64  # not rounded silently in the config either
    from pondlib.devices.xylo.sim import XyloSim

    with pytest.raises(ConfigError) as info:
        XyloSim.from_specification(spec)
    assert len(info.value.problems) == 3


def test_limits_instance_accepted():
    assert validate_config(small_config(), XYLO_AUDIO2) == []
