"""The mock Xylo development kit (pondlib.devices.xylo.hdk).

* memory image: decode(encode(c)) == c field by field for 120 seeded random valid configurations
  (every variant, sizes up to the chip limits, k = 1/2, aliases, shifts, biases, full int ranges, dt);
* the mock board equals the recorded reference simulator (xylosim) bit for bit on the 4 golden cases x
  2 quantizations, and XyloSim on random configurations (batched input, split runs);
* every error path: invalid configurations (every problem listed), the board's variant, a removed board
  (now and mid-run), read time-outs, a changed memory, malformed images and arguments;
* the memory layout table: regions do not overlap, fields do not overlap and hold the chip's values.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

from pondlib.devices.xylo import hdk
from pondlib.devices.xylo.config import XyloConfig, validate_config
from pondlib.devices.xylo.hdk import (
    CORE_CLOCK_HZ,
    WORD_LAYOUT,
    CostModel,
    MockXyloDevice,
    XyloBoard,
    decode_config,
    encode_config,
    find_xylo_hdks,
    memory_map,
    set_mock_boards,
)
from pondlib.devices.xylo.limits import LIMITS, XYLO_AUDIO2, XyloLimits, get_limits
from pondlib.devices.xylo.sim import XyloSim
from pondlib.errors import ConfigError, DeviceError, SimulationError
from tests.golden import CASES, load_golden

FIELDS = [f.name for f in dataclasses.fields(XyloConfig)]
_SPEC_FIELDS = (
    "weights_in",
    "weights_rec",
    "weights_out",
    "dash_mem",
    "dash_syn",
    "dash_syn_2",
    "dash_mem_out",
    "dash_syn_out",
    "threshold",
    "bias",
    "threshold_out",
    "bias_out",
)


@pytest.fixture(autouse=True)
def fresh_bus(monkeypatch):
    """Every test starts with an unset mock bus and no environment override."""
    monkeypatch.setattr(hdk, "_BUS", None)
    monkeypatch.delenv(hdk.MOCK_BOARDS_ENV, raising=False)


# ------------------------------------------------------------------------------------------------
# Builders
# ------------------------------------------------------------------------------------------------
def random_config(rng: np.random.Generator, variant: str | None = None, big: bool = False) -> XyloConfig:
    """A random *valid* configuration: sizes, k, aliases, shifts, biases, dt and value extremes vary."""
    variant = variant or rng.choice(["audio2", "audio2", "audio3", "imu"])
    lim = get_limits(variant)
    n_in = int(rng.integers(1, lim.n_input + 1))
    n_hid = int(rng.integers(1, lim.n_hidden + 1)) if big else int(rng.integers(1, 80))
    n_out = int(rng.integers(1, lim.n_output + 1))
    k = int(rng.integers(1, lim.n_synapses + 1))

    def weights(shape, density):
        w = rng.integers(-128, 128, size=shape)
        w[rng.random(shape) > density] = 0
        extremes = rng.random(shape) < 0.02
        w[extremes] = rng.choice([-128, 127], size=int(extremes.sum()))
        return w

    w_rec = weights((n_hid, n_hid, k), rng.uniform(0, min(1.0, 90 / (n_hid * k))))
    flat = w_rec.reshape(n_hid, -1)
    flat[np.cumsum(flat != 0, axis=1) > lim.max_fanout_rec] = 0  # respect the fan-out limit
    aliases = np.full(n_hid, -1)
    for i in range(n_hid - 1):
        if rng.random() < 0.3:
            aliases[i] = rng.integers(i + 1, n_hid)
    bias_enable = bool(rng.random() < 0.6)

    def int16(n):
        v = rng.integers(-32768, 32768, size=n)
        v[rng.random(n) < 0.05] = rng.choice([-32768, 32767])
        return v

    return XyloConfig(
        weights_in=weights((n_in, n_hid, k), rng.uniform(0.05, 1.0)),
        weights_rec=w_rec,
        weights_out=weights((n_hid, n_out), rng.uniform(0.05, 1.0)),
        dash_mem=rng.integers(0, 16, n_hid),
        dash_syn=rng.integers(0, 16, n_hid),
        dash_syn_2=rng.integers(0, 16, n_hid),
        dash_mem_out=rng.integers(0, 16, n_out),
        dash_syn_out=rng.integers(0, 16, n_out),
        threshold=int16(n_hid),
        bias=int16(n_hid) if bias_enable else np.zeros(n_hid, int),
        threshold_out=int16(n_out),
        bias_out=int16(n_out) if bias_enable else np.zeros(n_out, int),
        aliases=aliases,
        weight_shift_in=int(rng.integers(0, 16)),
        weight_shift_rec=int(rng.integers(0, 16)),
        weight_shift_out=int(rng.integers(0, 16)),
        bias_enable=bias_enable,
        dt=float(np.exp(rng.uniform(np.log(lim.dt_min), np.log(lim.dt_max)))),
        limits_name=lim.name,
    )


def runnable_config(rng: np.random.Generator, n_in: int = 16, n_hid: int = 40, k: int = 2) -> XyloConfig:
    """A random valid configuration with moderate values, so that neurons actually spike."""
    w_rec = rng.integers(-40, 60, (n_hid, n_hid, k))
    w_rec[rng.random(w_rec.shape) < 0.7] = 0
    aliases = np.where(rng.random(n_hid) < 0.2, np.minimum(np.arange(n_hid) + 3, n_hid - 1), -1)
    aliases[aliases <= np.arange(n_hid)] = -1
    return XyloConfig(
        weights_in=rng.integers(-30, 90, (n_in, n_hid, k)),
        weights_rec=w_rec,
        weights_out=rng.integers(-50, 100, (n_hid, 4)),
        dash_mem=rng.integers(1, 6, n_hid),
        dash_syn=rng.integers(1, 6, n_hid),
        dash_syn_2=rng.integers(1, 6, n_hid),
        dash_mem_out=rng.integers(1, 6, 4),
        dash_syn_out=rng.integers(1, 6, 4),
        threshold=rng.integers(100, 600, n_hid),
        bias=rng.integers(-5, 10, n_hid),
        threshold_out=rng.integers(100, 900, 4),
        bias_out=rng.integers(-5, 10, 4),
        aliases=aliases,
        weight_shift_in=1,
        weight_shift_rec=2,
        weight_shift_out=0,
        bias_enable=True,
        dt=1e-3,
    )


def golden_config(g: dict, method: str) -> XyloConfig:
    p = f"spec_{method}/"
    arrays = {f: g[p + f] for f in _SPEC_FIELDS}
    return XyloConfig(
        **arrays,
        aliases=g[p + "aliases_padded"][:, 0],
        bias_enable=bool(np.any(arrays["bias"]) or np.any(arrays["bias_out"])),
        dt=1e-3,
    )


def assert_config_fields_equal(a: XyloConfig, b: XyloConfig) -> None:
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            assert isinstance(y, np.ndarray), name
            assert (x.dtype, x.shape) == (y.dtype, y.shape), name
            np.testing.assert_array_equal(x, y, err_msg=name)
        else:
            assert type(x) is type(y) and x == y, (name, x, y)


def board_for(config: XyloConfig, **options) -> XyloBoard:
    short = next(k for k, v in LIMITS.items() if v.name == config.limits_name)
    (dev,) = set_mock_boards(1, limits=short, **options)
    return XyloBoard(dev, config)


# ------------------------------------------------------------------------------------------------
# Memory image round trip
# ------------------------------------------------------------------------------------------------
def test_round_trip_random_configs():
    rng = np.random.default_rng(20240611)
    seen = {"k": set(), "variant": set(), "alias": 0, "bias": set(), "big": 0}
    n = 120
    for case in range(n):
        cfg = random_config(rng, big=case % 15 == 0)
        assert validate_config(cfg) == [], case
        image = encode_config(cfg)
        assert all(w.dtype == np.uint32 for w in image.values())
        assert {r.name: r.words for r in memory_map(cfg.limits_name)} == {k: v.size for k, v in image.items()}
        back = decode_config(image)
        assert_config_fields_equal(cfg, back)
        assert back == cfg
        seen["k"].add(cfg.n_synapses)
        seen["variant"].add(cfg.limits_name)
        seen["alias"] += int(np.any(cfg.aliases >= 0))
        seen["bias"].add(cfg.bias_enable)
        seen["big"] += cfg.n_hidden > 100
    # the sample really covers the space
    assert seen["k"] == {1, 2} and len(seen["variant"]) == 3 and seen["bias"] == {True, False}
    assert seen["alias"] > n // 2 and seen["big"] >= 5


def test_round_trip_extremes_and_full_chip():
    lim = XYLO_AUDIO2
    n = lim.n_hidden
    w_rec = np.zeros((n, n, 2), dtype=np.int64)
    for j in range(n):  # a full fan-out list per neuron
        w_rec[j, (j + np.arange(32)) % n, :] = 127 if j % 2 else -128
    aliases = np.where(np.arange(n) < n - 1, np.arange(n) + 1, -1)
    cfg = XyloConfig(
        weights_in=np.full((16, n, 2), -128),
        weights_rec=w_rec,
        weights_out=np.full((n, 8), 127),
        dash_mem=np.full(n, 15),
        dash_syn=np.zeros(n, int),
        dash_syn_2=np.full(n, 15),
        dash_mem_out=np.full(8, 15),
        dash_syn_out=np.zeros(8, int),
        threshold=np.full(n, -32768),
        bias=np.full(n, 32767),
        threshold_out=np.full(8, 32767),
        bias_out=np.full(8, -32768),
        aliases=aliases,
        weight_shift_in=15,
        weight_shift_rec=0,
        weight_shift_out=15,
        bias_enable=True,
        dt=lim.dt_max,
    )
    assert validate_config(cfg) == []
    assert_config_fields_equal(decode_config(encode_config(cfg)), cfg)
    for dt in (lim.dt_min, 1e-3, 1.2345678901234567e-3, 0.1, 0.07):
        c = cfg.replace(dt=dt)
        assert decode_config(encode_config(c)).dt == dt


def test_encoding_is_the_documented_bit_layout():
    rng = np.random.default_rng(3)
    cfg = random_config(rng, "audio2")
    img = encode_config(cfg)
    lim = XYLO_AUDIO2
    # IWT: byte b = (c*N + i)*K + q, little-endian lanes
    raw = img["IWT"].view(np.uint8) if np.little_endian else img["IWT"].byteswap().view(np.uint8)
    w = raw.view(np.int8)[: 16 * lim.n_hidden * 2].reshape(16, lim.n_hidden, 2)
    np.testing.assert_array_equal(w[: cfg.n_input, : cfg.n_hidden, : cfg.n_synapses], cfg.weights_in)
    assert not w[cfg.n_input :].any() and not w[:, cfg.n_hidden :].any()
    # NPAR: threshold low half, bias high half
    npar = img["NPAR"][: cfg.n_hidden].astype(np.int64)
    np.testing.assert_array_equal((npar & 0xFFFF).astype(np.uint16).view(np.int16), cfg.threshold)
    np.testing.assert_array_equal((npar >> 16).astype(np.uint16).view(np.int16), cfg.bias)
    # RWT: one valid entry per non-zero recurrent weight, in its pre neuron's list
    ent = img["RWT"].reshape(lim.n_hidden, lim.max_fanout_rec)
    np.testing.assert_array_equal(
        ((ent >> 19) & 1).sum(axis=1)[: cfg.n_hidden], np.count_nonzero(cfg.weights_rec, axis=(1, 2))
    )
    # REG: dt both as a divider and as float64 bits
    assert img["REG"][4] == round(cfg.dt * CORE_CLOCK_HZ)
    assert img["REG"][5:7].astype("<u4").view("<f8")[0] == cfg.dt


# ------------------------------------------------------------------------------------------------
# Memory layout sanity
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", sorted(LIMITS))
def test_memory_regions_do_not_overlap_and_hold_the_largest_network(variant):
    lim = get_limits(variant)
    regions = memory_map(lim)
    assert [r.name for r in regions] == ["REG", "IWT", "RWT", "OWT", "NPAR", "NCFG", "OPAR", "OCFG"]
    for a, b in zip(regions, regions[1:]):
        assert a.end <= b.base, (a, b)
    assert all(r.base % 0x1000 == 0 and r.words > 0 for r in regions)
    words = {r.name: r.words for r in regions}
    assert 4 * words["IWT"] >= lim.n_input * lim.n_hidden * lim.n_synapses
    assert words["RWT"] == lim.n_hidden * lim.max_fanout_rec
    assert 4 * words["OWT"] >= lim.n_hidden * lim.n_output
    assert words["NPAR"] == words["NCFG"] == lim.n_hidden and words["OPAR"] == words["OCFG"] == lim.n_output
    text = hdk.format_memory_map(lim)
    assert all(r.name in text for r in regions)


def test_word_fields_do_not_overlap_and_fit_the_chip():
    by_word: dict[tuple, int] = {}
    for f in WORD_LAYOUT:
        assert 0 <= f.lsb and f.msb <= 31, f
        mask = ((1 << f.width) - 1) << f.lsb
        key = (f.memory, f.word)
        assert not by_word.get(key, 0) & mask, f"{f.memory}.{f.name} overlaps"
        by_word[key] = by_word.get(key, 0) | mask
    for f in WORD_LAYOUT:  # per-word fields never share bits with register fields of other words
        assert f.memory == "REG" or f.word is None
    field = {(f.memory, f.name): f for f in WORD_LAYOUT}
    for lim in LIMITS.values():
        assert field["REG", "n_hidden"].range[1] >= lim.n_hidden
        assert field["REG", "n_input"].range[1] >= lim.n_input
        assert field["REG", "n_output"].range[1] >= lim.n_output
        assert field["RWT", "target"].range[1] >= lim.n_hidden - 1
        assert field["NCFG", "alias_target"].range[1] >= lim.n_hidden - 1
        assert field["RWT", "weight"].range == lim.weight_range
        assert field["IWT", "lane0"].range == lim.weight_range == field["OWT", "lane3"].range
        assert field["NPAR", "threshold"].range == lim.state_range == field["OPAR", "bias_out"].range
        for name in ("dash_mem", "dash_syn", "dash_syn_2"):
            assert field["NCFG", name].range == (0, lim.dash_max)
        assert field["REG", "weight_shift_rec"].range == (0, lim.weight_shift_max)
        assert field["REG", "dt_div"].range[1] >= round(lim.dt_max * CORE_CLOCK_HZ)
    with pytest.raises(ConfigError, match="widen the field"):  # a value never wraps into a field
        hdk._put(np.zeros(1, np.int64), field["NCFG", "dash_mem"], 16)
    layout = hdk.format_word_layout()
    assert all(f.name in layout for f in WORD_LAYOUT)
    assert hdk.__doc__ is not None and layout in "\n".join(l[4:] for l in hdk.__doc__.splitlines())


# ------------------------------------------------------------------------------------------------
# Bit exactness
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["channel", "global"])
@pytest.mark.parametrize("case", CASES)
def test_board_matches_golden_reference(case, method):
    g = load_golden(case)
    cfg = golden_config(g, method)
    board = board_for(cfg)
    out, _state, rec = board.evolve(g["input_raster"], record=True)
    np.testing.assert_array_equal(out, g[f"sim_{method}/output"])
    for key in ("Vmem", "Isyn", "Isyn2", "Spikes", "Vmem_out", "Isyn_out"):
        np.testing.assert_array_equal(rec[key], g[f"sim_{method}/rec/{key}"], err_msg=key)
    assert out.sum() > 0
    ref_out, _s, ref_rec = XyloSim.from_config(cfg).evolve(g["input_raster"], record=True)
    np.testing.assert_array_equal(out, ref_out)
    assert board.config == cfg
    assert board.inference_duration == pytest.approx(200 * 1e-3)


def test_board_matches_xylosim_on_random_configs():
    rng = np.random.default_rng(7)
    for trial in range(6):
        cfg = runnable_config(
            rng, n_in=int(rng.integers(1, 17)), n_hid=int(rng.integers(5, 60)), k=int(rng.integers(1, 3))
        )
        x = rng.poisson(0.8, (120, cfg.n_input))
        x[rng.random(x.shape) < 0.02] = 40  # beyond the 4-bit input counter
        board = board_for(cfg)
        sim = XyloSim.from_config(cfg)
        out_b, st_b, rec_b = board.evolve(x[:70], record=True)
        out_s, st_s, rec_s = sim.evolve(x[:70], record=True)
        out_b2, st_b2, _ = board.evolve(x[70:])  # state persists between calls
        out_s2, st_s2, _ = sim.evolve(x[70:])
        np.testing.assert_array_equal(out_b, out_s)
        np.testing.assert_array_equal(out_b2, out_s2)
        for key in rec_s:
            np.testing.assert_array_equal(rec_b[key], rec_s[key], err_msg=key)
        for key in st_s2:
            np.testing.assert_array_equal(st_b2[key], st_s2[key], err_msg=key)
        assert int(rec_s["Spikes"].sum()) > 0, trial


def test_batched_input_and_reset():
    rng = np.random.default_rng(11)
    cfg = runnable_config(rng)
    x = rng.poisson(0.7, (3, 50, 16))
    board = board_for(cfg)
    out, _state, rec = board.evolve(x, record=True)
    ref, _s, ref_rec = XyloSim.from_config(cfg).evolve(x, record=True)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(rec["Vmem"], ref_rec["Vmem"])
    assert board.inference_duration == pytest.approx(3 * 50 * 1e-3)
    assert board.last_stats.synops.shape == (3, 50)
    with pytest.raises(SimulationError, match="unbatched"):
        board.evolve(x[0])
    board.reset_state()
    out0, _s, _r = board.evolve(x[0])
    np.testing.assert_array_equal(out0, ref[0])
    assert all(not v.any() for v in XyloBoard(board.device, cfg).state.values())


def test_stats_count_synaptic_operations_and_estimate_leaves_board_alone():
    rng = np.random.default_rng(5)
    cfg = runnable_config(rng, n_hid=30, k=2)
    x = rng.poisson(1.0, (40, 16))
    x[3, 2] = 99
    cost = CostModel(cycles_per_synop=2, cycles_per_update=3, cycles_per_step=10, static_power_w=1e-4)
    (dev,) = set_mock_boards(1)
    board = XyloBoard(dev, cfg, cost_model=cost)
    assert board.inference_duration == 0.0 and board.last_stats is None
    est = board.estimate(x)
    _out, _st, rec = board.evolve(x, record=True)
    stats = board.last_stats
    # brute force, straight from the CostModel table
    fan_in = [np.count_nonzero(cfg.weights_in[c]) for c in range(16)]
    fan = [np.count_nonzero(cfg.weights_rec[j]) + np.count_nonzero(cfg.weights_out[j]) for j in range(30)]
    prev = np.zeros(30, int)
    for t in range(40):
        want = sum(min(x[t, c], 15) * fan_in[c] for c in range(16)) + sum(prev[j] * fan[j] for j in range(30))
        assert stats.synops[t] == want, t
        prev = rec["Spikes"][t]
    updates = 30 * 2 + 4
    assert stats.updates == updates
    np.testing.assert_array_equal(stats.cycles, 2 * stats.synops + 3 * updates + 10)
    np.testing.assert_allclose(stats.power_w, (20e-12 * stats.synops + 10e-12 * updates) / 1e-3 + 1e-4)
    assert stats.cycle_budget == 50_000 and stats.realtime_ok
    assert stats.total_energy_j == pytest.approx(stats.energy_j.sum() + 1e-4 * 0.04)
    assert "synaptic ops" in stats.summary()
    np.testing.assert_array_equal(est.synops, stats.synops)  # estimate ran from a reset state too
    # estimate does not disturb the board: a second half continues the first
    board.reset_state()
    a, _, _ = board.evolve(x[:20])
    board.estimate(x)
    b, _, _ = board.evolve(x[20:])
    np.testing.assert_array_equal(np.concatenate([a, b]), XyloSim.from_config(cfg).evolve(x)[0])
    # a slow clock cannot keep up in real time
    slow = XyloBoard(dev, cfg, cost_model=CostModel(clock_hz=50_000))
    assert not slow.estimate(x).realtime_ok


# ------------------------------------------------------------------------------------------------
# Discovery
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("count", [0, 1, 3])
def test_find_xylo_hdks_counts(count):
    boards = set_mock_boards(count)
    found = find_xylo_hdks()
    assert len(found) == count and found == boards
    assert len({b.serial for b in found}) == count
    assert all(isinstance(b, MockXyloDevice) and b.connected for b in found)
    assert find_xylo_hdks() == found  # the same boards each time


def test_find_xylo_hdks_default_env_and_removed_boards(monkeypatch):
    assert len(find_xylo_hdks()) == 1
    assert find_xylo_hdks()[0].limits.name == "Xylo Audio 2"
    monkeypatch.setattr(hdk, "_BUS", None)
    monkeypatch.setenv(hdk.MOCK_BOARDS_ENV, "0")
    assert find_xylo_hdks() == []
    monkeypatch.setattr(hdk, "_BUS", None)
    monkeypatch.setenv(hdk.MOCK_BOARDS_ENV, "3")
    boards = find_xylo_hdks()
    boards[1].disconnect()
    assert find_xylo_hdks() == [boards[0], boards[2]]
    boards[1].reconnect()
    assert len(find_xylo_hdks()) == 3
    monkeypatch.setattr(hdk, "_BUS", None)
    monkeypatch.setenv(hdk.MOCK_BOARDS_ENV, "two")
    with pytest.raises(ConfigError, match=hdk.MOCK_BOARDS_ENV):
        find_xylo_hdks()


def test_set_mock_boards_variants_and_bad_arguments():
    boards = set_mock_boards(3, limits=["audio2", "audio3", "imu"], timeout_s=0.5)
    assert [b.limits.name for b in boards] == ["Xylo Audio 2", "Xylo Audio 3", "Xylo IMU"]
    assert all(b.timeout_s == 0.5 for b in boards)
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ConfigError, match="mock board count"):
            set_mock_boards(bad)
    with pytest.raises(ConfigError, match="variants per board"):
        set_mock_boards(2, limits=["audio2"])
    with pytest.raises(ConfigError, match="timeout_s"):
        set_mock_boards(1, timeout_s=-1)
    with pytest.raises(ConfigError, match="link_words_per_s"):
        MockXyloDevice(link_words_per_s=0)
    with pytest.raises(ConfigError, match="board variant"):
        MockXyloDevice(XyloLimits(name="custom"))
    with pytest.raises(ConfigError, match="unknown Xylo variant"):
        MockXyloDevice("audio9")


# ------------------------------------------------------------------------------------------------
# Configuration errors
# ------------------------------------------------------------------------------------------------
def test_invalid_config_is_refused_listing_every_problem():
    rng = np.random.default_rng(1)
    good = runnable_config(rng, n_hid=6, k=2)
    (dev,) = set_mock_boards(1)
    epoch = dev.epoch
    bad = good.replace(
        weights_in=np.where(np.arange(6)[None, :, None] == 2, 300, good.weights_in),
        dash_syn=np.array([0, 1, 2, 16, 4, 5]),
        aliases=np.array([-1, 0, -1, -1, -1, -1]),
        threshold_out=np.array([1, 2, 3, 40000]),
        dt=1e-6,
        weight_shift_out=16,
        limits_name="Xylo IMU",
    )
    with pytest.raises(ConfigError) as info:
        XyloBoard(dev, bad)
    problems = info.value.problems
    expected = [
        "limits_name",
        "weights_in[0, 2, 0]",
        "dash_syn[3]",
        "threshold_out[3]",
        "weight_shift_out",
        "aliases[1]",
        "dt",
    ]
    for word in expected:
        assert sum(word in p for p in problems) == 1, (word, problems)
    assert len(problems) == len(expected)
    assert "XYLO-MOCK-0" in str(info.value) and "7 configuration problem(s)" in str(info.value)
    assert dev.epoch == epoch and not any(m.any() for m in dev._memory.values())  # nothing written
    with pytest.raises(ConfigError, match="bias_enable"):
        XyloBoard(dev, good.replace(bias_enable=False))
    with pytest.raises(ConfigError, match="not a XyloConfig"):
        XyloBoard(dev, {"weights_in": 1})
    with pytest.raises(ConfigError, match="not a Xylo board"):
        XyloBoard("usb0", good)
    with pytest.raises(ConfigError, match="dt"):
        XyloBoard(dev, good, dt="fast")
    with pytest.raises(ConfigError, match="dt: got 5.0 s"):
        XyloBoard(dev, good, dt=5.0)
    with pytest.raises(ConfigError) as info:
        encode_config(bad.replace(limits_name="Xylo Audio 2"))  # no board: the config's own variant
    assert len(info.value.problems) == len(expected) - 1
    with pytest.raises(ConfigError, match="k = 2 synapses per hidden neuron, expected at most 1"):
        encode_config(bad)
    with pytest.raises(ConfigError, match="not a XyloConfig"):
        encode_config(None)


def test_config_for_another_variant_is_refused():
    rng = np.random.default_rng(2)
    cfg = runnable_config(rng, n_hid=10, k=1).replace(limits_name="Xylo IMU")
    audio2, imu = set_mock_boards(2, limits=["audio2", "imu"])
    with pytest.raises(ConfigError, match="the board is a Xylo Audio 2.*limits='audio2'"):
        XyloBoard(audio2, cfg)
    board = XyloBoard(imu, cfg)
    assert board.config == cfg and board.limits.name == "Xylo IMU"
    with pytest.raises(ConfigError, match="expected at most 1"):
        XyloBoard(imu, runnable_config(rng, n_hid=10, k=2).replace(limits_name="Xylo IMU"))


def test_dt_override_is_programmed_and_read_back():
    cfg = runnable_config(np.random.default_rng(4))
    (dev,) = set_mock_boards(1)
    board = XyloBoard(dev, cfg, dt=2.5e-3)
    assert board.dt == 2.5e-3 and board.config.dt == 2.5e-3
    assert dev.read_memory("REG", 4, 1)[0] == 125_000
    board.evolve(np.zeros((10, 16), int))
    assert board.inference_duration == pytest.approx(0.025)


def test_decode_rejects_malformed_images():
    rng = np.random.default_rng(6)
    cfg = runnable_config(rng, n_hid=8, k=1)
    good = encode_config(cfg)

    def problems(**changes):
        img = {k: v.copy() for k, v in good.items()}
        for name, fn in changes.items():
            img[name] = fn(img[name])
        with pytest.raises(ConfigError) as info:
            decode_config(img)
        return " | ".join(info.value.problems)

    def poke(word, value):
        def fn(a):
            a[word] = value
            return a

        return fn

    assert "blank memory image" in problems(REG=lambda a: np.zeros_like(a))
    assert "variant: got 9" in problems(REG=poke(0, (0x58594C << 8) | 9))
    assert "n_hidden: got 0" in problems(REG=poke(1, int(good["REG"][1]) & ~(0x7FF << 11)))
    assert "step timer disagrees" in problems(REG=poke(4, 1))
    assert "dt: got" in problems(
        REG=lambda a: np.concatenate(
            [a[:4], [round(5.0 * CORE_CLOCK_HZ)], np.array([5.0], "<f8").view("<u4"), a[7:]]
        ).astype(np.uint32)
    )
    assert "expected (8000,)" in problems(IWT=lambda a: a[:10])
    assert "RWT[0]: got target 900" in problems(RWT=poke(0, (1 << 19) | (900 << 8) | 5))
    entry = int(good["RWT"][0]) if good["RWT"][0] else (1 << 19) | (1 << 8) | 5
    assert "duplicate" in problems(RWT=lambda a: np.concatenate([[entry, entry], a[2:]]).astype(np.uint32))
    assert "aliases[0]" in problems(NCFG=poke(0, (1 << 22) | (0 << 12)))
    with pytest.raises(ConfigError, match="expected 8 words"):
        decode_config({})
    with pytest.raises(ConfigError, match="not a mapping"):
        decode_config([1, 2])


# ------------------------------------------------------------------------------------------------
# Link failures and re-configuration
# ------------------------------------------------------------------------------------------------
def test_disconnected_board_raises_with_fix():
    rng = np.random.default_rng(8)
    cfg = runnable_config(rng)
    x = rng.poisson(0.7, (30, 16))
    (dev,) = set_mock_boards(1)
    board = XyloBoard(dev, cfg)
    dev.disconnect()
    for action in (
        lambda: board.evolve(x),
        lambda: board.config,
        board.reset_state,
        lambda: board.apply_config(cfg),
        lambda: dev.read_memory("REG"),
        lambda: XyloBoard(dev, cfg),
    ):
        with pytest.raises(SimulationError, match="board disconnected") as info:
            action()
        assert "reconnect" in str(info.value) and isinstance(info.value, DeviceError)
    assert find_xylo_hdks() == []
    dev.reconnect()  # a power cycle: memory blank
    with pytest.raises(SimulationError, match="apply_config"):
        board.evolve(x)
    with pytest.raises(ConfigError, match="blank memory image"):
        _ = board.config
    with pytest.raises(ConfigError, match="no configuration was written"):
        dev.run(x)
    board.apply_config(cfg)
    np.testing.assert_array_equal(board.evolve(x)[0], XyloSim.from_config(cfg).evolve(x)[0])


def test_board_vanishing_mid_run():
    rng = np.random.default_rng(9)
    cfg = runnable_config(rng)
    x = rng.poisson(0.7, (100, 16))
    (dev,) = set_mock_boards(1)
    board = XyloBoard(dev, cfg)
    dev.disconnect(after_steps=120)
    board.evolve(x)  # 100 of 120 steps: fine
    start = time.perf_counter()
    with pytest.raises(SimulationError, match="disconnected during the run, after step 20 of 100"):
        board.evolve(x)
    assert time.perf_counter() - start < 5  # simulated time: no waiting
    assert not dev.connected and find_xylo_hdks() == []
    with pytest.raises(SimulationError, match="board disconnected"):
        board.evolve(x)
    dev.reconnect()
    board.apply_config(cfg)
    np.testing.assert_array_equal(board.evolve(x)[0], XyloSim.from_config(cfg).evolve(x)[0])
    with pytest.raises(ConfigError, match="after_steps"):
        dev.disconnect(after_steps=-3)


def test_read_timeout_raises_quickly_and_recovers():
    rng = np.random.default_rng(10)
    cfg = runnable_config(rng)
    x = rng.poisson(0.7, (60, 16))
    (dev,) = set_mock_boards(1, timeout_s=2.0)
    board = XyloBoard(dev, cfg)
    dev.response_delay_s = 30.0  # a stalled board
    clock = dev.clock_s
    start = time.perf_counter()
    with pytest.raises(SimulationError, match="read timed out") as info:
        _ = board.config
    assert "timeout_s" in str(info.value) and "2.0 s" in str(info.value)
    with pytest.raises(SimulationError, match="read timed out: cannot read the results"):
        board.evolve(x)
    with pytest.raises(SimulationError, match="read timed out"):
        XyloBoard(dev, cfg)  # the read-back of a new configuration
    assert time.perf_counter() - start < 5  # simulated: the 2 s waits do not happen
    assert dev.clock_s - clock >= 3 * 2.0
    dev.response_delay_s = 0.001  # the board answers again
    board = XyloBoard(dev, cfg)
    np.testing.assert_array_equal(board.evolve(x)[0], XyloSim.from_config(cfg).evolve(x)[0])
    assert board.config == cfg


def test_reapplying_configuration_resets_state_and_switches_network():
    rng = np.random.default_rng(12)
    a, b = runnable_config(rng, k=2), runnable_config(rng, n_hid=25, k=1)
    x = rng.poisson(0.8, (80, 16))
    (dev,) = set_mock_boards(1)
    board = XyloBoard(dev, a)
    board.evolve(x)
    board.apply_config(b)
    assert board.config == b and board.dt == b.dt
    np.testing.assert_array_equal(board.evolve(x)[0], XyloSim.from_config(b).evolve(x)[0])
    board.apply_config(a)  # and back: the state starts from zero
    out, _st, rec = board.evolve(x, record=True)
    ref_out, _s, ref_rec = XyloSim.from_config(a).evolve(x, record=True)
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(rec["Vmem"], ref_rec["Vmem"])
    board.apply_config(a)  # the same configuration twice is fine
    assert board.config == a
    # a second module configuring the same board invalidates the first
    other = XyloBoard(dev, b)
    with pytest.raises(SimulationError, match="memory changed"):
        board.evolve(x)
    other.evolve(x)
    dev.write_memory("NPAR", [0], start=0)  # a raw write, too
    with pytest.raises(SimulationError, match="call apply_config"):
        other.evolve(x)


def test_bad_input_and_raw_memory_access_errors():
    cfg = runnable_config(np.random.default_rng(13))
    (dev,) = set_mock_boards(1)
    board = XyloBoard(dev, cfg)
    with pytest.raises(SimulationError, match="input channel count"):
        board.evolve(np.zeros((5, 3), int))
    with pytest.raises(SimulationError, match="negative input event count"):
        board.evolve(-np.ones((5, 16), int))
    with pytest.raises(SimulationError, match="input dimensions"):
        board.evolve(np.zeros(16, int))
    with pytest.raises(ConfigError, match="memory name"):
        dev.read_memory("SRAM")
    with pytest.raises(ConfigError, match="word count"):
        dev.read_memory("REG", 4, 10)
    with pytest.raises(ConfigError, match="start word"):
        dev.write_memory("REG", [1], start=9)
    with pytest.raises(ConfigError, match="REG words"):
        dev.write_memory("REG", [-1])
    with pytest.raises(ConfigError, match="REG words"):
        dev.write_memory("REG", [1 << 32])
    with pytest.raises(ConfigError, match="lacks IWT"):
        dev.write_image({"REG": np.zeros(8, np.uint32)})
    np.testing.assert_array_equal(dev.read_memory("REG", 1, 1), encode_config(cfg)["REG"][1:2])
