"""Bad input to every Xylo entry point, and lossless round trips on valid input (issue #13).

Each test drives a public entry point with generated input (NaN, infinities, subnormal and huge
numbers, negative and fractional counts, wrong types including complex and strings, wrong rank and
size, empty and ragged input, corrupted and truncated files and memory images) and asserts a
:class:`~pondlib.errors.PondError` naming the field or value, or a documented tolerant result; never
another exception (pytest turns numpy RuntimeWarnings into failures too).

Documented tolerant behaviours tested here:

* ``XyloSim.evolve``: event counts above 15 are clipped to 15 as the chip's 4-bit input counter does,
  however large (uint64 max, 1e300): nothing overflows; an empty time axis returns empty outputs.
* ``Specification`` accepts Rockpool's formats (2-D one-synapse weights, aliases as target lists).
* ``mapper(max_hidden_neurons=...)`` larger than the chip is the chip's own limit.

On valid input (hypothesis-generated configurations): save/load and encode/decode are lossless and
simulator runs are deterministic.
"""

from __future__ import annotations

import io
import struct
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.devices.xylo import hdk
from pondlib.devices.xylo.codec import decode_config, encode_config
from pondlib.devices.xylo.compare import compare_records
from pondlib.devices.xylo.config import (
    CONFIG_ARRAY_FIELDS,
    CONFIG_SCALAR_FIELDS,
    XyloConfig,
    config_from_specification,
    validate_config,
)
from pondlib.devices.xylo.cost import CostModel
from pondlib.devices.xylo.hdk import MockXyloDevice, XyloBoard, find_xylo_hdks, set_mock_boards
from pondlib.devices.xylo.limits import get_limits
from pondlib.devices.xylo.mapper import mapper
from pondlib.devices.xylo.memory import memory_map
from pondlib.devices.xylo.sim import STATE_KEYS, XyloSim
from pondlib.devices.xylo.specification import SPEC_KEYS, Specification, SpecificationKeyError
from pondlib.errors import ConfigError, ConstraintError, GraphError, PondError, SimulationError
from pondlib.graph import GraphHolder, LIFNeurons, LinearWeights, connect_modules
from tests.strategies import (
    NON_FINITE,
    assert_pond_error,
    bad_types,
    non_finite_arrays,
    ragged_lists,
    wrong_dtype_arrays,
)

FAST = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
FORMAT_KEY = "__xylo_config_format__"


@pytest.fixture(autouse=True)
def fresh_bus(monkeypatch):
    monkeypatch.setattr(hdk, "_BUS", None)
    monkeypatch.delenv(hdk.MOCK_BOARDS_ENV, raising=False)


# ------------------------------------------------------------------------------------------------
# Valid configurations (hypothesis)
# ------------------------------------------------------------------------------------------------
@st.composite
def valid_configs(draw, variant: str = "audio2") -> XyloConfig:
    lim = get_limits(variant)
    n_in = draw(st.integers(1, lim.n_input))
    n_hid = draw(st.integers(1, 10))
    n_out = draw(st.integers(1, min(lim.n_output, 6)))
    k = draw(st.integers(1, lim.n_synapses))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    bias_enable = draw(st.booleans())
    aliases = np.full(n_hid, -1, dtype=np.int64)
    for i in range(n_hid - 1):
        if rng.random() < 0.3:
            aliases[i] = rng.integers(i + 1, n_hid)
    w_rec = rng.integers(-128, 128, (n_hid, n_hid, k))
    w_rec[rng.random(w_rec.shape) < 0.5] = 0
    return XyloConfig(
        weights_in=rng.integers(-128, 128, (n_in, n_hid, k)),
        weights_rec=w_rec,
        weights_out=rng.integers(-128, 128, (n_hid, n_out)),
        dash_mem=rng.integers(0, 16, n_hid),
        dash_syn=rng.integers(0, 16, n_hid),
        dash_syn_2=rng.integers(0, 16, n_hid) if k == 2 else np.zeros(n_hid, np.int64),
        dash_mem_out=rng.integers(0, 16, n_out),
        dash_syn_out=rng.integers(0, 16, n_out),
        threshold=rng.integers(-32768, 32768, n_hid),
        bias=rng.integers(-32768, 32768, n_hid) if bias_enable else np.zeros(n_hid, np.int64),
        threshold_out=rng.integers(-32768, 32768, n_out),
        bias_out=rng.integers(-32768, 32768, n_out) if bias_enable else np.zeros(n_out, np.int64),
        aliases=aliases,
        weight_shift_in=draw(st.integers(0, 15)),
        weight_shift_rec=draw(st.integers(0, 15)),
        weight_shift_out=draw(st.integers(0, 15)),
        bias_enable=bias_enable,
        dt=draw(st.floats(lim.dt_min, lim.dt_max)),
        limits_name=lim.name,
    )


def small_config(**changes) -> XyloConfig:
    base = dict(
        weights_in=np.array([[[60, 0]], [[0, 40]], [[20, 20]]]),
        weights_rec=np.zeros((1, 1, 2), int),
        weights_out=np.array([[50, -30]]),
        dash_mem=[2],
        dash_syn=[2],
        dash_syn_2=[3],
        dash_mem_out=[2, 3],
        dash_syn_out=[2, 1],
        threshold=[100],
        bias=[0],
        threshold_out=[40, 40],
        bias_out=[0, 0],
        aliases=[-1],
    )
    base.update(changes)
    return XyloConfig(**base)


def one_syn_config() -> XyloConfig:
    return small_config(weights_in=np.array([[[60]], [[40]], [[20]]]), weights_rec=np.zeros((1, 1, 1), int))


def payload_of(config: XyloConfig) -> dict[str, np.ndarray]:
    p = {n: getattr(config, n) for n in CONFIG_ARRAY_FIELDS}
    p.update({n: np.asarray(getattr(config, n)) for n in CONFIG_SCALAR_FIELDS})
    p[FORMAT_KEY] = np.asarray(1)
    return p


def write_npz(path, payload: dict, compressed: bool = False) -> None:
    with open(path, "wb") as fh:
        (np.savez_compressed if compressed else np.savez)(fh, **payload)


# ------------------------------------------------------------------------------------------------
# Round trips and determinism on valid input
# ------------------------------------------------------------------------------------------------
@given(cfg=valid_configs(), compressed=st.booleans())
@FAST
def test_save_load_lossless(tmp_path_factory, cfg, compressed):
    path = tmp_path_factory.mktemp("cfg") / "c.npz"
    assert validate_config(cfg) == []
    cfg.save(path)
    assert XyloConfig.load(path) == cfg
    write_npz(path, payload_of(cfg), compressed=compressed)  # a deflated archive reads back the same
    back = XyloConfig.load(path)
    assert back == cfg and type(back.bias_enable) is bool and type(back.dt) is float


@given(data=st.data(), variant=st.sampled_from(["audio2", "audio3", "imu"]))
@FAST
def test_encode_decode_lossless(data, variant):
    cfg = data.draw(valid_configs(variant))
    image = encode_config(cfg)
    assert set(image) == {r.name for r in memory_map(variant)}
    assert all(w.dtype == np.uint32 for w in image.values())
    assert decode_config(image) == cfg
    assert all(np.array_equal(a, b) for a, b in zip(encode_config(decode_config(image)).values(), image.values()))


@given(cfg=valid_configs(), seed=st.integers(0, 2**32 - 1))
@settings(max_examples=15, deadline=None)
def test_runs_deterministic_and_resumable(cfg, seed):
    rng = np.random.default_rng(seed)
    x = rng.poisson(2.0, size=(3, 12, cfg.n_input))
    a, b = XyloSim.from_config(cfg), XyloSim.from_config(cfg)
    out_a, st_a, rec_a = a.evolve(x, record=True)
    out_b, st_b, rec_b = b(x, record=True)  # Rockpool's call style
    np.testing.assert_array_equal(out_a, out_b)
    assert all(np.array_equal(rec_a[k], rec_b[k]) for k in rec_a)
    # passing the mid-run state back reproduces the continuation
    c = XyloSim.from_config(cfg)
    _, mid, _ = c.evolve(x[:, :5])
    out_c, _, _ = XyloSim.from_config(cfg).evolve(x[:, 5:], state=mid)
    np.testing.assert_array_equal(out_c, out_a[:, 5:])
    for i in range(3):  # a batch equals its samples one by one
        np.testing.assert_array_equal(XyloSim.from_config(cfg).evolve(x[i])[0], out_a[i])


# ------------------------------------------------------------------------------------------------
# Configuration files: corrupted, truncated, wrongly typed, wrong version
# ------------------------------------------------------------------------------------------------
@given(cut=st.floats(0.0, 0.999), compressed=st.booleans())
@FAST
def test_truncated_file(tmp_path_factory, cut, compressed):
    path = tmp_path_factory.mktemp("t") / "c.npz"
    write_npz(path, payload_of(small_config()), compressed=compressed)
    raw = path.read_bytes()
    path.write_bytes(raw[: int(cut * len(raw))])
    assert_pond_error(XyloConfig.load, path, match=str(path), error=ConfigError)


@given(data=st.data(), compressed=st.booleans())
@settings(max_examples=60, deadline=None)
def test_corrupted_bytes_never_give_a_different_config(tmp_path_factory, data, compressed):
    """A flipped byte anywhere: a ConfigError naming the file, or (a byte that carries no content) the
    same configuration; never another exception, never a silently different configuration."""
    path = tmp_path_factory.mktemp("c") / "c.npz"
    cfg = small_config()
    write_npz(path, payload_of(cfg), compressed=compressed)
    raw = bytearray(path.read_bytes())
    pos = data.draw(st.integers(0, len(raw) - 1))
    new = data.draw(st.integers(0, 255).filter(lambda b: b != raw[pos]))
    raw[pos] = new
    path.write_bytes(bytes(raw))
    try:
        back = XyloConfig.load(path)
    except ConfigError as err:
        assert str(path) in str(err)
        return
    assert back == cfg


def _patch_method(raw: bytes, member: str, method: int) -> bytes:
    """Set the compression method of ``member`` in its local header and central directory entry."""
    out = bytearray(raw)
    name = member.encode()
    for sig, off_method, off_name in ((b"PK\x03\x04", 8, 30), (b"PK\x01\x02", 10, 46)):
        start = 0
        while (i := out.find(sig, start)) >= 0:
            if out[i + off_name : i + off_name + len(name)] == name:
                out[i + off_method : i + off_method + 2] = struct.pack("<H", method)
            start = i + 4
    return bytes(out)


def test_unsupported_compression_and_bad_deflate_stream(tmp_path):
    path = tmp_path / "c.npz"
    write_npz(path, payload_of(small_config()), compressed=True)
    good = path.read_bytes()
    path.write_bytes(_patch_method(good, "weights_in.npy", 99))  # zipfile: NotImplementedError
    err = assert_pond_error(XyloConfig.load, path, match="weights_in", error=ConfigError)
    assert str(path) in str(err)
    # garbage in the deflate stream of one member: zlib.error (or a CRC error)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for key, value in payload_of(small_config()).items():
            member = io.BytesIO()
            np.save(member, value)
            zf.writestr(f"{key}.npy", member.getvalue())
    raw = bytearray(buf.getvalue())
    i = raw.find(b"threshold.npy") + len("threshold.npy")
    raw[i : i + 12] = b"\xff" * 12
    path.write_bytes(bytes(raw))
    assert_pond_error(XyloConfig.load, path, match="threshold", error=ConfigError)


@pytest.mark.parametrize(
    "key, value, match",
    [
        ("bias_enable", np.asarray("False"), "bias_enable"),
        ("bias_enable", np.asarray(0), "bias_enable"),
        ("dt", np.asarray("0.001"), "dt"),
        ("dt", np.ones(2), "dt"),
        ("limits_name", np.asarray(5), "limits_name"),
        ("weight_shift_in", np.asarray("1"), "weight_shift_in"),
        ("weights_in", np.full((3, 1, 2), "a"), "weights_in"),
        ("weights_out", np.array([[1 + 2j, 0]]), "weights_out"),
        ("threshold", np.array([None], dtype=object), "threshold"),  # pickled: refused while decoding
        (FORMAT_KEY, np.asarray(2), "format version"),
        (FORMAT_KEY, np.asarray("1"), FORMAT_KEY),
        (FORMAT_KEY, None, FORMAT_KEY),  # missing: the version is always checked
        ("dash_mem", None, "dash_mem"),
        ("extra_field", np.zeros(1), "extra_field"),
    ],
)
def test_wrong_field_types_and_versions(tmp_path, key, value, match):
    payload = payload_of(small_config())
    if value is None:
        del payload[key]
    else:
        payload[key] = value
    path = tmp_path / "c.npz"
    with open(path, "wb") as fh:
        np.savez(fh, **payload)
    err = assert_pond_error(XyloConfig.load, path, match=match, error=ConfigError)
    assert str(path) in str(err)


def test_save_and_load_paths(tmp_path):
    cfg = small_config()
    assert_pond_error(cfg.save, tmp_path, match="directory", error=ConfigError)
    assert_pond_error(cfg.save, tmp_path / "missing" / "c.npz", match="does not exist", error=ConfigError)
    assert_pond_error(cfg.save, 3, match="path", error=ConfigError)
    assert_pond_error(XyloConfig.load, tmp_path, match="not a regular file", error=ConfigError)
    assert_pond_error(XyloConfig.load, tmp_path / "nope.npz", match="not found", error=ConfigError)
    assert_pond_error(XyloConfig.load, None, match="path", error=ConfigError)
    np.save(tmp_path / "one.npy", np.zeros(3))
    assert_pond_error(XyloConfig.load, tmp_path / "one.npy", match="single .npy", error=ConfigError)
    (tmp_path / "text.npz").write_text("hello")
    assert_pond_error(XyloConfig.load, tmp_path / "text.npz", match="not a XyloConfig archive", error=ConfigError)


# ------------------------------------------------------------------------------------------------
# XyloConfig, validate_config, config_from_specification
# ------------------------------------------------------------------------------------------------
@given(field=st.sampled_from(CONFIG_ARRAY_FIELDS), bad=st.one_of(st.text(max_size=3), st.none(), ragged_lists()))
@FAST
def test_config_array_fields_typed(field, bad):
    assert_pond_error(small_config, match=field, error=ConfigError, **{field: bad})


@given(field=st.sampled_from(CONFIG_ARRAY_FIELDS), data=st.data())
@FAST
def test_config_array_fields_dtypes(field, data):
    shape = np.shape(getattr(small_config(), field))
    bad = data.draw(wrong_dtype_arrays(shape))
    assert_pond_error(small_config, match=field, error=ConfigError, **{field: bad})


@given(bad=st.one_of(st.text(max_size=5), st.none(), st.integers(), st.floats(), st.sampled_from(["False", "True", 1])))
@FAST
def test_bias_enable_must_be_a_bool(bad):
    assert_pond_error(small_config, bias_enable=bad, match="bias_enable", error=ConfigError)


@given(
    field=st.sampled_from(["dt", "weight_shift_in", "weight_shift_rec", "weight_shift_out", "limits_name"]),
    bad=st.one_of(
        st.text(max_size=4),
        st.none(),
        st.complex_numbers().filter(lambda z: z.imag != 0),
        st.lists(st.integers(), max_size=2),
    ),
)
@FAST
def test_config_scalar_fields_typed(field, bad):
    if field == "limits_name" and isinstance(bad, str):
        assert any(p.startswith("limits_name") for p in validate_config(small_config(limits_name=bad)))
        return
    assert_pond_error(small_config, match=field, error=ConfigError, **{field: bad})


@given(value=st.one_of(st.sampled_from(NON_FINITE), st.sampled_from([1e-320, 1e300, -1e-3, 0.0])))
@FAST
def test_config_dt_values_reported(value):
    problems = validate_config(small_config(dt=value))
    assert len(problems) == 1 and problems[0].startswith("dt: got")


@given(bad=bad_types())
@FAST
def test_validate_and_build_refuse_non_configs(bad):
    assert_pond_error(validate_config, bad, match="not a XyloConfig", error=ConfigError)
    assert_pond_error(XyloSim.from_config, bad, match="not a XyloConfig", error=ConfigError)
    assert_pond_error(encode_config, bad, match="not a XyloConfig", error=ConfigError)
    err = assert_pond_error(config_from_specification, bad, error=ConfigError)
    assert type(bad).__name__ in str(err) or isinstance(bad, dict) or bad is None


def test_config_from_specification_names_wrong_type():
    err = assert_pond_error(config_from_specification, "abc", match="str", error=ConfigError)
    assert "'abc'" in str(err) and "Specification" in str(err)
    assert_pond_error(config_from_specification, match="Specification", error=ConfigError)
    assert_pond_error(config_from_specification, quantized_spec(), limits="audio9", match="variant", error=ConfigError)


# ------------------------------------------------------------------------------------------------
# Specification: types, Rockpool formats, the mapping interface
# ------------------------------------------------------------------------------------------------
def quantized_spec() -> Specification:
    spec = Specification.zeros(3, 4, 2, n_synapses=1)
    rng = np.random.default_rng(0)
    return spec.replace(
        weights_in=rng.integers(-100, 100, (3, 4, 1)),
        weights_out=rng.integers(-100, 100, (4, 2)),
        threshold=np.full(4, 300),
        threshold_out=np.full(2, 200),
        dash_mem=np.full(4, 4),
        dash_syn=np.full(4, 2),
        dash_mem_out=np.full(2, 4),
        dash_syn_out=np.full(2, 2),
        aliases=[-1, 3, -1, -1],
    )


@given(
    field=st.sampled_from([f for f in SPEC_KEYS if f not in ("report", "quantization", "limits_name")]), data=st.data()
)
@FAST
def test_specification_field_types(field, data):
    spec = quantized_spec()
    value = getattr(spec, field)
    if isinstance(value, np.ndarray):
        bad = data.draw(st.one_of(wrong_dtype_arrays(value.shape), ragged_lists(), st.text(max_size=3), st.none()))
    else:
        bad = data.draw(st.one_of(st.text(max_size=3), st.none(), st.complex_numbers().filter(lambda z: z.imag != 0)))
    err = assert_pond_error(spec.replace, error=ConfigError, **{field: bad})
    assert field in str(err)
    before = {k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in spec.items()}
    assert_pond_error(spec.update, {field: bad}, match=field, error=ConfigError)
    for k, v in before.items():  # a refused update leaves the specification unchanged
        assert np.array_equal(getattr(spec, k), v) if isinstance(v, np.ndarray) else getattr(spec, k) == v


@pytest.mark.parametrize(
    "aliases, match",
    [
        ([0.5, -1, -1, -1], "non-integer"),
        ([-2, -1, -1, -1], "out of range"),
        ([[1.5], [], [], []], "aliases[0][0]"),
        ([[1, 2], [], [], []], "at most 1 target"),
        ([[1], [], []], "N_hid = 4"),
        ([[-1], [], [], []], "aliases[0][0]"),
        ([1e30, -1, -1, -1], "out of range"),
        ([np.nan, -1, -1, -1], "aliases"),
    ],
)
def test_alias_ids_never_rounded(aliases, match):
    assert_pond_error(quantized_spec().replace, aliases=aliases, match=match, error=ConfigError)


def test_rockpool_alias_lists_and_2d_weights_accepted():
    spec = quantized_spec().replace(aliases=[[], [3], [2.0], []], weights_in=np.ones((3, 4)))
    assert spec.aliases.tolist() == [-1, 3, 2, -1] and spec.aliases.dtype == np.int64
    assert spec.weights_in.shape == (3, 4, 1)
    config, ok, message = config_from_specification(spec)
    assert not ok and "aliases[2]: got 2" in message  # a backwards alias is reported, not dropped


def test_specification_mapping_interface():
    spec = quantized_spec()
    assert list(spec) == list(SPEC_KEYS) and len(spec) == len(SPEC_KEYS) and set(dict(spec)) == set(SPEC_KEYS)
    assert spec["threshold"] is spec.threshold and spec["bias_hidden"] is spec.bias
    assert "threshold" in spec and "thresholds" not in spec and 3 not in spec
    assert spec.get("thresholds") is None
    with pytest.raises(SpecificationKeyError, match="thresholds"):
        spec["thresholds"]
    with pytest.raises(KeyError):
        spec["thresholds"]
    assert spec == spec and spec != spec.replace() and hash(spec) == hash(spec)
    spec["dt"] = 2e-3
    assert spec.dt == 2e-3
    spec.update([("weight_shift_in", 3)], mapped_graph=object(), bias_hidden=np.ones(4))
    assert spec.weight_shift_in == 3 and spec.bias.tolist() == [1.0] * 4
    for bad in (dict(thresholds=1), {"bias": np.zeros(4), "bias_hidden": np.zeros(4)}):
        assert_pond_error(spec.update, bad, error=ConfigError)
    assert_pond_error(spec.update, 5, match="update", error=ConfigError)
    assert_pond_error(spec.replace, thresholds=1, match="thresholds", error=ConfigError)
    assert_pond_error(Specification.zeros, 2.5, 1, 1, match="n_in", error=ConfigError)


# ------------------------------------------------------------------------------------------------
# The simulator's input and state
# ------------------------------------------------------------------------------------------------
SIM = XyloSim.from_config(small_config())


def fresh() -> XyloSim:
    SIM.reset_state()
    return SIM


@given(data=st.data(), batched=st.booleans(), kind=st.sampled_from(["nonfinite", "negative", "fraction"]))
@settings(max_examples=40, deadline=None)
def test_bad_counts_name_first_index(data, batched, kind):
    shape = (2, 4, 3) if batched else (4, 3)
    if kind == "nonfinite":
        x = data.draw(non_finite_arrays(shape))
    else:
        x = np.zeros(shape)
        idx = tuple(data.draw(st.integers(0, n - 1)) for n in shape)
        x[idx] = (
            -data.draw(st.integers(1, 2**62))
            if kind == "negative"
            else data.draw(st.floats(0.01, 1e6).filter(lambda v: v != int(v)))
        )
        x = x.astype(np.int64) if kind == "negative" and data.draw(st.booleans()) else x
    first = tuple(int(i) for i in np.argwhere(~np.isfinite(x) | (x < 0) | (x != np.floor(x)))[0])
    err = assert_pond_error(fresh().evolve, x, error=SimulationError)
    assert err.where == "x[" + ", ".join(map(str, first)) + "]"


@given(
    x=st.one_of(
        ragged_lists(),
        wrong_dtype_arrays((4, 3)),
        st.text(max_size=3),
        st.none(),
        st.sampled_from([np.zeros(3), np.zeros((1, 2, 4, 3)), np.zeros((4, 2)), np.zeros((0, 4, 3)), 5]),
    )
)
@FAST
def test_bad_input_shapes_and_types(x):
    sim = fresh()
    before = sim.state
    err = assert_pond_error(sim.evolve, x, error=SimulationError)
    assert any(w in str(err) for w in ("ragged", "dtype", "dimensions", "channel count", "batch size")), str(err)
    assert all(np.array_equal(before[k], sim.state[k]) for k in STATE_KEYS)


@given(big=st.sampled_from([16, 2**31, 2**62, np.iinfo(np.int64).max, np.iinfo(np.uint64).max, 1e30, 1e300, 2.0**1000]))
@FAST
def test_huge_counts_saturate_like_the_chip(big):
    """Documented: the chip's 4-bit input counter clips at 15; nothing overflows, nothing wraps."""
    x15 = np.array([[15, 0, 15], [0, 15, 0]])
    ref = fresh().evolve(x15, record=True)
    dtype = (
        np.uint64
        if isinstance(big, int) and big > np.iinfo(np.int64).max
        else (np.float64 if isinstance(big, float) else np.int64)
    )
    x = np.where(x15 == 15, np.asarray(big, dtype=dtype), np.asarray(0, dtype=dtype)).astype(dtype)
    got = fresh().evolve(x, record=True)
    np.testing.assert_array_equal(got[0], ref[0])
    assert all(np.array_equal(got[2][k], ref[2][k]) for k in ref[2])


def test_empty_time_axis_is_tolerated_and_keeps_the_state():
    sim = fresh()
    sim.evolve(np.ones((3, 3), int))
    before = sim.state
    out, state, rec = sim.evolve(np.zeros((0, 3), int), record=True)
    assert out.shape == (0, 2) and rec["Vmem"].shape == (0, 1)
    assert all(np.array_equal(before[k], state[k]) for k in STATE_KEYS)


@given(record=st.one_of(st.text(max_size=5), st.integers(), st.none(), st.sampled_from(["False", 0.0])))
@FAST
def test_record_must_be_a_bool(record):
    assert_pond_error(fresh().evolve, np.zeros((2, 3), int), record=record, match="record", error=SimulationError)


def _state(sim: XyloSim, x=None) -> dict:
    sim.reset_state()
    return sim.evolve(np.ones((4, 3), int) if x is None else x)[1]


@given(
    key=st.sampled_from(STATE_KEYS),
    bad=st.one_of(
        st.sampled_from([np.nan, np.inf, 0.5, 40000, -40000, 2**40]),
        st.sampled_from(["zeros(2)", "zeros((1, 2, 1))", "text", "ragged", "complex", "batch3"]),
    ),
)
@settings(max_examples=40, deadline=None)
def test_bad_state_refused_naming_the_entry(key, bad):
    sim = SIM
    state = _state(sim)
    n = state[key].shape[-1]
    value = (
        {
            "zeros(2)": np.zeros(n + 1),
            "zeros((1, 2, 1))": np.zeros((1, n, 1)),
            "text": "abc",
            "ragged": [[0], [0, 0]],
            "complex": np.zeros(n, complex),
            "batch3": np.zeros((3, n)),
        }.get(bad)
        if isinstance(bad, str)
        else np.full(n, bad)
    )
    state[key] = value
    err = assert_pond_error(sim.evolve, np.ones((2, 3), int), state=state, error=SimulationError)
    assert key in str(err) or "batch" in str(err)


def test_state_keys_batches_and_synapses():
    sim = SIM
    state = _state(sim)
    assert_pond_error(sim.evolve, np.ones((2, 3), int), state="state", match="state", error=SimulationError)
    assert_pond_error(
        sim.evolve, np.ones((2, 3), int), state={**state, "Vmemm": 1}, match="Vmemm", error=SimulationError
    )
    partial = dict(state)
    del partial["Isyn_out"]
    assert_pond_error(sim.evolve, np.ones((2, 3), int), state=partial, match="Isyn_out", error=SimulationError)
    batched = {k: np.stack([v, v]) for k, v in state.items()}
    assert_pond_error(sim.evolve, np.ones((3, 2, 3), int), state=batched, match="batch", error=SimulationError)
    assert_pond_error(sim.evolve, np.ones((2, 3), int), state=batched, match="batch", error=SimulationError)
    out2, _, _ = sim.evolve(np.ones((2, 5, 3), int), state=batched)  # a batched state passed back
    out1, _, _ = sim.evolve(np.ones((5, 3), int), state=state)
    np.testing.assert_array_equal(out2[0], out1)
    one = XyloSim.from_config(one_syn_config())
    st1 = _state(one)
    st1["Isyn2"] = np.ones(1)
    assert_pond_error(one.evolve, np.ones((2, 3), int), state=st1, match="Isyn2", error=SimulationError)


@given(dt=st.one_of(bad_types().filter(lambda v: v is not None), st.sampled_from([0.0, -1e-3, *NON_FINITE])))
@FAST
def test_sim_dt_override_checked(dt):
    assert_pond_error(XyloSim.from_config, small_config(), dt=dt, match="dt", error=ConfigError)


# ------------------------------------------------------------------------------------------------
# The mapper
# ------------------------------------------------------------------------------------------------
def W(n_in, n_out):
    return np.random.default_rng(n_in * 10 + n_out).normal(size=(n_in, n_out)) * 0.3


def lin(n_in, n_out, name):
    return LinearWeights._factory(n_in, n_out, name, None, weights=W(n_in, n_out))


def lif(n, name, **kw):
    params = dict(tau_mem=0.02, tau_syn=0.01, threshold=1.0, bias=0.0, dt=1e-3)
    params.update(kw)
    return LIFNeurons._factory(n, n, name, None, **params)


def ff_graph():
    mods = [lin(3, 4, "w1"), lif(4, "h"), lin(4, 2, "w2"), lif(2, "o")]
    for a, b in zip(mods[:-1], mods[1:]):
        connect_modules(a, b)
    return GraphHolder(list(mods[0].input_nodes), list(mods[-1].output_nodes), "net", None), mods


def test_weight_layer_feeding_nothing_is_a_violation():
    g, mods = ff_graph()
    dangling = lin(4, 3, "w_dangling")
    connect_modules(mods[1], dangling)  # reads the hidden neurons, feeds nothing
    with pytest.raises(ConstraintError) as info:
        mapper(g)
    v = [v for v in info.value.violations if v.module == "w_dangling"]
    assert v and v[0].rule == "weights_feed_neurons" and "nothing" in str(v[0].value)


@pytest.mark.parametrize("value", [np.nan, np.inf, 1 + 1j])
def test_non_finite_or_complex_parameters_are_violations(value):
    g, mods = ff_graph()
    mods[0].weights = np.full((3, 4), value)  # changed after construction: the mapper checks again
    mods[3].threshold = np.full(2, value)
    with pytest.raises(ConstraintError) as info:
        mapper(g)
    assert {(v.rule, v.module) for v in info.value.violations} >= {
        ("invalid_parameter", "w1"),
        ("invalid_parameter", "o"),
    }


@pytest.mark.parametrize("tau, rule", [(1e308, "dash_too_large"), (1e-300, "dash_zero"), (5e-324, "dash_zero")])
def test_extreme_time_constants_are_violations_without_warnings(tau, rule):
    g, mods = ff_graph()
    mods[1].tau_mem = np.full(4, tau)
    with pytest.raises(ConstraintError) as info:
        mapper(g)
    assert rule in info.value.rules


def _valid_text(arg, value) -> bool:
    """A drawn text that is in fact a valid value of ``arg``."""
    if not isinstance(value, str):
        return False
    if arg == "limits":
        try:
            get_limits(value)
        except PondError:
            return False
        return True
    if arg.endswith("_dtype"):
        try:
            return value.isidentifier() and np.dtype(value).kind == "f"
        except TypeError:
            return False
    return False


@given(
    arg=st.sampled_from(
        [
            "drop_biases",
            "weight_dtype",
            "threshold_dtype",
            "dash_dtype",
            "max_hidden_neurons",
            "max_output_neurons",
            "limits",
        ]
    ),
    value=st.one_of(st.sampled_from(["False", "int8", 2.5, 0, -3, "audio9", 1 + 2j, np.int16]), st.text(max_size=3)),
)
@FAST
def test_mapper_arguments_checked(arg, value):
    assume(not _valid_text(arg, value))  # a drawn text may name a real variant ('IMU') or dtype ('f4')
    g, _ = ff_graph()
    try:
        mapper(g, **{arg: value})
    except ConstraintError as err:  # a tighter cap than the network: reported as the rule
        assert arg.startswith("max_") and value not in (0, -3, 2.5)
        assert ("max_hidden_neurons" if "hidden" in arg else "max_output_neurons") in err.rules
        return
    except PondError as err:
        assert arg.replace("limits", "variant") in str(err) or arg in str(err)
        return
    pytest.fail(f"mapper accepted {arg}={value!r}")


def test_mapper_rockpool_arguments():
    g, _ = ff_graph()
    spec = mapper(g, weight_dtype="float", threshold_dtype=np.float32, dash_dtype=float, max_hidden_neurons=2000)
    assert spec.weights_in.dtype == np.float64 and spec.n_hidden == 4
    with pytest.raises(ConstraintError, match="max_hidden_neurons"):
        mapper(g, max_hidden_neurons=3)
    assert_pond_error(mapper, "net", error=GraphError)


# ------------------------------------------------------------------------------------------------
# Memory images, the mock board and the bus
# ------------------------------------------------------------------------------------------------
IMAGE = encode_config(small_config())


@given(data=st.data())
@settings(max_examples=40, deadline=None)
def test_corrupted_memory_images(data):
    """Random words (with a valid header) or flipped bits: a ConfigError or a valid configuration."""
    image = {k: v.copy() for k, v in IMAGE.items()}
    if data.draw(st.booleans()):
        name = data.draw(st.sampled_from(sorted(image)))
        i = data.draw(st.integers(0, image[name].size - 1))
        image[name][i] ^= np.uint32(1 << data.draw(st.integers(0, 31)))
    else:
        rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
        for name in data.draw(st.lists(st.sampled_from(sorted(image)), min_size=1, max_size=3)):
            image[name] = rng.integers(0, 2**32, image[name].size, dtype=np.uint64).astype(np.uint32)
        image["REG"][0] = IMAGE["REG"][0]
    try:
        cfg = decode_config(image)
    except ConfigError:
        return
    assert validate_config(cfg) == [] and decode_config(encode_config(cfg)) == cfg


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda im: [1, 2], "not a mapping"),
        (lambda im: {**im, "REG": [[1], [1, 2]]}, "ragged"),
        (lambda im: {**im, "REG": im["REG"].astype(float)}, "dtype float64"),
        (lambda im: {**im, "REG": im["REG"].astype(np.int64) - 2**33}, "outside"),
        (lambda im: {**im, "IWT": np.full(im["IWT"].size, 2**40, np.int64)}, "outside"),
        (lambda im: {**im, "NPAR": None}, "NPAR: got missing"),
        (lambda im: {**im, "EXTRA": np.zeros(3, np.uint32)}, "EXTRA"),
        (lambda im: {k: v for k, v in im.items() if k != "OCFG"}, "OCFG"),
    ],
)
def test_malformed_memory_images(change, match):
    err = assert_pond_error(decode_config, change(IMAGE), error=ConfigError)
    assert match in str(err)


def test_decode_huge_or_nan_dt():
    for dt in (1e300, 1.7e308, np.nan, -1e-3, 5e-324):
        image = {k: v.copy() for k, v in IMAGE.items()}
        image["REG"][5:7] = np.array([dt], "<f8").view("<u4")
        assert_pond_error(decode_config, image, match="dt", error=ConfigError)


@given(
    option=st.sampled_from(["timeout_s", "response_delay_s", "link_words_per_s", "link_latency_s"]),
    value=st.one_of(st.sampled_from(["1.0", None, True, -1.0, 1 + 1j, *NON_FINITE]), st.text(max_size=3)),
)
@FAST
def test_mock_board_options_checked(option, value):
    assert_pond_error(MockXyloDevice, match=option, error=ConfigError, **{option: value})
    assert_pond_error(set_mock_boards, 1, match=option, error=ConfigError, **{option: value})


@given(count=st.one_of(bad_types(), st.sampled_from([-1, 2.5, 128, 10**9, "2"])))
@FAST
def test_board_count_checked(count):
    if isinstance(count, list) and not count:
        count = -1
    assert_pond_error(set_mock_boards, count, match="mock board count", error=ConfigError)


def test_bus_and_board_arguments(monkeypatch):
    assert_pond_error(set_mock_boards, 1, bogus=1, match="bogus", error=ConfigError)
    assert_pond_error(set_mock_boards, 1, serial="x", match="serial", error=ConfigError)
    assert_pond_error(set_mock_boards, 1, limits=3.5, match="limits", error=ConfigError)
    assert_pond_error(set_mock_boards, 1, limits=["audio9"], match="variant", error=ConfigError)
    assert_pond_error(MockXyloDevice, serial=5, match="serial", error=ConfigError)
    for text in ("²", "1000", "-1", "1e3"):
        monkeypatch.setattr(hdk, "_BUS", None)
        monkeypatch.setenv(hdk.MOCK_BOARDS_ENV, text)
        assert_pond_error(find_xylo_hdks, match=hdk.MOCK_BOARDS_ENV, error=ConfigError)
    (dev,) = set_mock_boards(1)
    cfg = small_config()
    assert_pond_error(XyloBoard, dev, cfg, cost_model="fast", match="cost_model", error=ConfigError)
    for dt in ("1e-3", "fast", True, [1e-3]):
        assert_pond_error(XyloBoard, dev, cfg, dt=dt, match="dt", error=ConfigError)
    board = XyloBoard(dev, cfg)
    assert_pond_error(board.evolve, np.ones((2, 3), int), record="False", match="record", error=SimulationError)
    for x in ([[1], [1, 2]], np.full((2, 3), np.nan), np.zeros((2, 3), complex), "x"):
        assert_pond_error(board.evolve, x, error=SimulationError)
        assert_pond_error(board.estimate, x, error=SimulationError)
    assert_pond_error(dev.write_memory, "REG", [[1], [1, 2]], match="ragged", error=ConfigError)
    assert_pond_error(dev.write_memory, "REG", np.ones(2, bool), match="REG words", error=ConfigError)
    assert_pond_error(dev.write_memory, "REG", [1.5], match="REG words", error=ConfigError)
    assert_pond_error(dev.write_image, [1, 2], match="memory image", error=ConfigError)
    assert_pond_error(dev.write_image, {**encode_config(cfg), "EXTRA": [1]}, match="EXTRA", error=ConfigError)
    assert_pond_error(dev.read_memory, "REG", 2.5, match="start word", error=ConfigError)
    assert_pond_error(dev.disconnect, after_steps="3", match="after_steps", error=ConfigError)


@given(
    field=st.sampled_from(
        [
            "clock_hz",
            "cycles_per_synop",
            "cycles_per_update",
            "cycles_per_step",
            "energy_per_synop_j",
            "energy_per_update_j",
            "static_power_w",
        ]
    ),
    value=st.sampled_from([-1, -1e-12, 1e300, 2**40, "1", None, True, *NON_FINITE]),
)
@FAST
def test_cost_model_checked(field, value):
    assert_pond_error(CostModel, match=field, error=ConfigError, **{field: value})


def test_cost_model_fractional_cycles_refused():
    assert_pond_error(CostModel, cycles_per_synop=2.5, match="cycles_per_synop", error=ConfigError)
    assert CostModel(cycles_per_step=64.0).cycles_per_step == 64


# ------------------------------------------------------------------------------------------------
# compare_records
# ------------------------------------------------------------------------------------------------
def test_compare_records_checked():
    chip = {"Vmem": np.zeros((4, 3), int), "Spikes": np.zeros((4, 3), int)}
    fl = {"h/vmem": np.ones((4, 2)), "h/spikes": np.zeros((4, 2))}
    lm = {"h": ("hidden", np.array([0, 2]))}
    ok = compare_records(fl, chip, layer_map=lm, delays=1, scales={"hidden": 2.0})
    assert ok["h"].float["vmem"].shape == (3, 2)
    cases = [
        (dict(float_record={"h/vmem": np.full((4, 2), np.nan)}), "h/vmem"),
        (dict(layer_map={"h": ("hidden", np.array([0, 5]))}), "N > 5"),
        (dict(layer_map={"h": ("hidden", np.array([0.5, 1]))}), "neuron ids"),
        (dict(layer_map={"h": ("hidden", np.array([-1, 1]))}), "neuron ids"),
        (dict(layer_map={"h": "hidden"}), "layer map entry"),
        (dict(layer_map={"h": ("middle", [0])}), "layer role"),
        (dict(delays=1.5), "delays"),
        (dict(delays=-1), "delays"),
        (dict(delays={"h": "2"}), "delays"),
        (dict(scales={"hidden": np.nan}), "scales"),
        (dict(scales={"hidden": -1.0}), "scales"),
        (dict(scales={"hidden": np.ones(2)}), "scales"),
        (dict(scales={"output": 1.0}), "scales['hidden']"),
        (dict(chip_record={"Vmem": np.zeros((5, 3), int)}), "record lengths"),
        (dict(chip_record="rec"), "chip_record"),
    ]
    for changes, match in cases:
        kwargs = dict(float_record=fl, chip_record=chip, layer_map=lm, delays=1, scales=None)
        kwargs.update(changes)
        fr, cr = kwargs.pop("float_record"), kwargs.pop("chip_record")
        assert_pond_error(compare_records, fr, cr, match=match, **kwargs)


def test_nn_network_maps_and_round_trips(tmp_path):
    """The whole pipeline on a pondlib.nn network: valid, deterministic, lossless through files."""
    from pondlib.transform import channel_quantize

    rng = np.random.default_rng(5)
    net = nn.Sequential(
        nn.Linear(3, 5, weight=rng.normal(size=(3, 5))),
        nn.LIF(5, tau_mem=0.02, tau_syn=0.005),
        nn.Linear(5, 2, weight=rng.normal(size=(5, 2))),
        nn.LIF(2, tau_mem=0.02, tau_syn=0.005),
    )
    config, ok, message = config_from_specification(channel_quantize(mapper(net)))
    assert ok, message
    config.save(tmp_path / "c.npz")
    back = XyloConfig.load(tmp_path / "c.npz")
    assert back == config
    x = rng.poisson(3.0, size=(30, 3))
    np.testing.assert_array_equal(XyloSim.from_config(back).evolve(x)[0], XyloSim.from_config(config).evolve(x)[0])


@given(
    field=st.sampled_from(
        [
            "n_input",
            "n_hidden",
            "n_output",
            "n_synapses",
            "max_fanout_rec",
            "weight_bits",
            "state_bits",
            "dash_bits",
            "dt_min",
            "dt_max",
        ]
    ),
    value=st.sampled_from([0, -1, 2.5, 3, 40, 2**40, "8", None, True, *NON_FINITE]),
)
@FAST
def test_custom_limits_checked(field, value):
    from pondlib.devices.xylo.limits import XyloLimits

    ok = {  # values that are valid for the field
        "n_input": (3, 40),
        "n_hidden": (3, 40),
        "n_output": (3, 40),
        "max_fanout_rec": (3, 40),
        "n_synapses": (),
        "weight_bits": (3,),
        "state_bits": (3,),
        "dash_bits": (3,),
        "dt_min": (2.5, 3, 40, 2**40),
        "dt_max": (2.5, 3, 40, 2**40),
    }[field]
    if value in ok and not isinstance(value, bool):
        if field == "dt_min":
            assert_pond_error(XyloLimits, name="c", dt_min=value, match="dt_min", error=ConfigError)  # > dt_max
        else:
            assert getattr(XyloLimits(name="c", **{field: value}), field) == value
        return
    assert_pond_error(XyloLimits, name="c", match=field, error=ConfigError, **{field: value})
    assert_pond_error(XyloLimits, name=3, match="name", error=ConfigError)
