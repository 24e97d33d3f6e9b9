"""DRAM configuration image of the DNN path: lossless round trip, corruption refused, the walk equals DNNSim."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.devices.spinnaker2.dnn import MLP, DenseLayer, DNNConfig, DNNLayerConfig, dnn_mapper
from pondlib.devices.spinnaker2.image import HEADER_SIZE, parse_image, read_times, reseal, time_area_size
from pondlib.devices.spinnaker2.sim import DNNSim, run_dram_image
from pondlib.devices.spinnaker2.timing import PAPER_MODEL, estimate
from pondlib.errors import ConfigError, SimulationError
from tests.strategies import assert_pond_error, bad_types

SOME = settings(max_examples=30, deadline=None)
MANY = settings(max_examples=120, deadline=None)

_I32 = st.integers(-(2**31), 2**31 - 1)
_I64 = st.integers(-(2**63), 2**63 - 1)


@st.composite
def configs(draw, overflow=None):
    """Random valid DNNConfigs: 1..3 chained layers, 1..3 workers each, any field value the image holds."""
    sizes = draw(st.lists(st.integers(1, 9), min_size=2, max_size=4))
    layers = []
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    names = draw(st.lists(st.text(max_size=6), min_size=len(sizes) - 1, max_size=len(sizes) - 1))
    for i, (k, n) in enumerate(zip(sizes[:-1], sizes[1:])):
        n_w = draw(st.integers(1, min(n, 3)))
        edges = sorted(draw(st.sets(st.integers(1, n - 1), min_size=n_w - 1, max_size=n_w - 1))) if n > 1 else []
        cuts = [0, *edges, n]
        tiles = tuple((cuts[j], cuts[j + 1]) for j in range(len(cuts) - 1))
        layers.append(
            DNNLayerConfig(
                names[i],
                rng.integers(-128, 128, size=(k, n)).astype(np.int64),
                rng.integers(-(2**31), 2**31, size=n).astype(np.int64),
                draw(st.integers(0, 62)),
                draw(st.booleans()),
                tiles,
                draw(_I32),
                draw(_I32),
                draw(_I32),
                draw(_I64),
                draw(_I64),
            )
        )
    report = draw(
        st.dictionaries(st.text(max_size=4), st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.text()))
    )
    return DNNConfig(
        tuple(layers),
        draw(_I32),
        draw(st.integers(8, 62)),
        overflow or draw(st.sampled_from(["error", "wrap"])),
        draw(st.text(max_size=10)),
        {"notes": report},
    )


def assert_same(a: DNNConfig, b: DNNConfig) -> None:
    for key in ("input_frac", "acc_bits", "overflow", "limits_name", "report"):
        assert getattr(a, key) == getattr(b, key), key
    assert len(a.layers) == len(b.layers)
    for la, lb in zip(a.layers, b.layers):
        for key in ("name", "shift", "relu", "tiles", "in_frac", "w_frac", "out_frac", "acc_bound", "acc_worst"):
            assert getattr(la, key) == getattr(lb, key), (la.name, key)
        for key in ("weights", "bias"):
            assert getattr(lb, key).dtype == np.int64
            np.testing.assert_array_equal(getattr(la, key), getattr(lb, key))


def _mnist_like():
    rng = np.random.default_rng(3)
    mlp = MLP.from_ops(
        [
            DenseLayer(rng.normal(size=(64, 40)) * 0.1, rng.normal(size=40) * 0.1, relu=False),
            "relu",
            DenseLayer(rng.normal(size=(40, 24)) * 0.1, relu=False),
            "relu",
            DenseLayer(rng.normal(size=(24, 10)) * 0.1, relu=False),
        ]
    )
    x = rng.random((20, 64))
    return dnn_mapper(mlp, calibration=x, workers={"fc1": 3, "fc2": 2}), x


@SOME
@given(configs())
def test_round_trip_is_lossless_and_deterministic(cfg):
    data = cfg.to_dram_image()
    assert data == cfg.to_dram_image()
    back = DNNConfig.from_dram_image(data)
    assert_same(cfg, back)
    assert back.to_dram_image() == data
    assert len(data) % 16 == 0 and data[:8] == b"S2DNNIMG"


@MANY
@given(configs(), st.data())
def test_corrupted_byte_is_refused_or_harmless(cfg, data):
    image = bytearray(cfg.to_dram_image())
    pos = data.draw(st.integers(0, len(image) - 1))
    image[pos] = data.draw(st.integers(0, 255).filter(lambda v: v != image[pos]))
    try:
        back = DNNConfig.from_dram_image(bytes(image))
    except ConfigError as err:
        assert "offset 0x" in str(err)
        return
    # only bytes the device writes at run time (time area, activation buffers) may change unnoticed
    img = parse_image(bytes(image))
    t_end = img.time_addr + time_area_size(len(cfg.layers))
    assert img.time_addr <= pos < t_end or pos >= img.act_addr
    assert_same(cfg, back)


@SOME
@given(configs(), st.data())
def test_truncated_or_extended_image_is_refused(cfg, data):
    image = cfg.to_dram_image()
    cut = data.draw(st.integers(0, len(image) - 1))
    assert_pond_error(DNNConfig.from_dram_image, image[:cut], error=ConfigError, match="offset 0x")
    assert_pond_error(DNNConfig.from_dram_image, image + b"\0" * 16, match="total image size", error=ConfigError)


def _two_layers():
    cfg, _ = _mnist_like()
    return cfg, cfg.to_dram_image()


def test_wrong_magic_version_crc_name_field_and_offset():
    _, image = _two_layers()
    bad = b"X" + image[1:]
    assert_pond_error(DNNConfig.from_dram_image, bad, match="magic", error=ConfigError)
    bad = image[:8] + struct.pack("<H", 2) + image[10:]
    err = assert_pond_error(DNNConfig.from_dram_image, reseal(bad), match="version", error=ConfigError)
    assert "offset 0x8" in str(err)
    buf = bytearray(image)
    buf[parse_image(image).data_addr] ^= 1  # the first weight byte in data memory
    assert_pond_error(DNNConfig.from_dram_image, bytes(buf), match="crc32", error=ConfigError)


def test_pointers_out_of_range_and_cycles_are_refused():
    cfg, image = _two_layers()
    img = parse_image(image)
    first, second, last = img.layers
    # the second layer's weights pointer beyond the image (CRC recomputed: only the pointer check catches it)
    buf = bytearray(image)
    struct.pack_into("<I", buf, second.offset + 24, len(image) + 64)
    assert_pond_error(DNNConfig.from_dram_image, reseal(buf), match=f"offset 0x{second.offset + 24:x}")
    # a worker tile pointing into the activation buffers
    buf = bytearray(image)
    struct.pack_into("<I", buf, second.offset + 80 + 12, img.act_addr)
    assert_pond_error(DNNConfig.from_dram_image, reseal(buf), match="fc2: worker 0 weights", error=ConfigError)
    # the last layer's next pointing back to the first: a cycle
    buf = bytearray(image)
    struct.pack_into("<I", buf, last.offset, first.offset)
    assert_pond_error(DNNConfig.from_dram_image, reseal(buf), match="cycle", error=ConfigError)
    # a self loop
    struct.pack_into("<I", buf, first.offset, first.offset)
    assert_pond_error(DNNConfig.from_dram_image, reseal(buf), match="cycle", error=ConfigError)
    # the chain ends early: the layer count disagrees
    buf = bytearray(image)
    struct.pack_into("<I", buf, second.offset, 0)
    assert_pond_error(DNNConfig.from_dram_image, reseal(buf), match="layer count", error=ConfigError)
    # an unaligned first block pointer
    buf = bytearray(image)
    struct.pack_into("<I", buf, 24, first.offset + 4)
    assert_pond_error(DNNConfig.from_dram_image, reseal(buf), match="first layer block", error=ConfigError)


@given(bad_types())
@settings(max_examples=20, deadline=None)
def test_non_bytes_are_refused(value):
    assert_pond_error(DNNConfig.from_dram_image, value, error=ConfigError)
    assert_pond_error(run_dram_image, value, np.zeros(2, int), error=ConfigError)


def test_invalid_config_or_report_cannot_be_imaged():
    cfg, _ = _two_layers()
    lay = cfg.layers[0]
    bad = DNNConfig((DNNLayerConfig(lay.name, lay.weights * 300, *[getattr(lay, f) for f in _REST]),), 0, 24)
    assert_pond_error(bad.to_dram_image, match="weights", error=ConfigError)
    odd = DNNConfig(cfg.layers, cfg.input_frac, cfg.acc_bits, report={"x": (1, 2)})
    assert_pond_error(odd.to_dram_image, match="report", error=ConfigError)
    huge = DNNConfig(
        (DNNLayerConfig(lay.name, lay.weights, lay.bias, lay.shift, lay.relu, lay.tiles, 2**40, 0, 0, 0, 0),), 0, 24
    )
    assert_pond_error(huge.to_dram_image, match="in_frac", error=ConfigError)


_REST = ("bias", "shift", "relu", "tiles", "in_frac", "w_frac", "out_frac", "acc_bound", "acc_worst")


@SOME
@given(configs(overflow="wrap"), st.data())
def test_walking_the_image_equals_dnnsim_bit_for_bit(cfg, data):
    k = cfg.layers[0].weights.shape[0]
    x = np.array(data.draw(st.lists(st.lists(st.integers(-128, 127), min_size=k, max_size=k), min_size=1, max_size=3)))
    want = DNNSim.from_config(cfg).evolve(x)[0]
    got, dram = run_dram_image(cfg.to_dram_image(), x)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int64
    # the activation buffers hold the last sample's values, the image still reads back as the same config
    img = parse_image(dram)
    np.testing.assert_array_equal(np.frombuffer(dram, np.int8, k, img.input_addr), x[-1])
    np.testing.assert_array_equal(np.frombuffer(dram, np.int8, img.output_size, img.output_addr), want[-1])
    assert_same(cfg, DNNConfig.from_dram_image(dram))


def test_mapper_mlp_fused_relu_runs_from_image_with_times():
    cfg, x = _mnist_like()
    assert [(la.name, la.relu, la.workers) for la in cfg.layers] == [
        ("fc1", True, 3),
        ("fc2", True, 2),
        ("fc3", False, 1),
    ]
    image = cfg.to_dram_image()
    img = parse_image(image)
    assert [b.relu for b in img.layers] == [True, True, False]
    assert [image[b.offset + 6] for b in img.layers] == [1, 1, 0]  # flag byte, bit 0: fused ReLU
    xq = cfg.quantize_input(x)
    want, _, _ = DNNSim.from_config(cfg).evolve(xq)
    got, dram = run_dram_image(image, xq)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(run_dram_image(image, xq[4])[0], want[4])
    assert np.any(want != 0)
    np.testing.assert_array_equal(DNNSim.from_dram_image(image).evolve(xq)[0], want)
    t = read_times(dram)
    rep = estimate(cfg, PAPER_MODEL)
    assert t["inferences"] == len(x) and t["clock_khz"] == 150_000
    assert read_times(image)["inferences"] == 0  # a fresh image: zero times
    clk = PAPER_MODEL.clock_hz
    start = round(rep.setup_s * clk)
    assert t["setup"] == start and t["cleanup"] == round(rep.cleanup_s * clk)
    for lt, tl in zip(rep.layers, t["layers"]):
        parts = [round(v * clk) for v in (lt.overhead_s, lt.fetch_s, lt.mla_s, lt.other_s)]
        assert [tl["sched"], tl["fetch"], tl["mla"], tl["other"]] == parts
        assert (tl["start"], tl["end"]) == (start, start + sum(parts))
        start += sum(parts)
    assert t["total"] == start + t["cleanup"]
    assert abs(t["total"] / clk - (rep.total_s)) < 1e-6 * len(rep.layers) + 1e-8


def test_overflow_and_bad_input_while_walking():
    mlp = MLP.from_arrays([np.full((4, 2), 1.0)])
    cfg = dnn_mapper(mlp, calibration=np.ones((2, 4)), acc_bits=8, overflow="wrap")
    image = cfg.to_dram_image()
    x = np.full((1, 4), 127)
    np.testing.assert_array_equal(run_dram_image(image, x)[0], DNNSim.from_config(cfg).evolve(x)[0])
    assert_pond_error(run_dram_image, image, x, overflow="error", match="accumulator", error=SimulationError)
    assert_pond_error(run_dram_image, image, np.zeros(3, int), error=SimulationError)
    assert_pond_error(run_dram_image, image, np.full(4, 0.5), error=SimulationError)
    assert_pond_error(run_dram_image, image, x, overflow="saturate", match="overflow", error=ConfigError)
    assert_pond_error(run_dram_image, image, x, model="paper", match="model", error=ConfigError)


def test_relu_ops_are_fused_not_layers():
    lin = DenseLayer(np.eye(2), relu=False)
    assert [la.relu for la in MLP.from_ops([lin, "relu", lin]).layers] == [True, False]
    assert_pond_error(MLP.from_ops, ["relu", lin], match="ops[0]")
    assert_pond_error(MLP.from_ops, [lin, "tanh"], match="ops[1]")
    assert_pond_error(MLP.from_ops, [], match="layers")


def test_header_size_is_documented():
    assert HEADER_SIZE == 80 and time_area_size(3) == 128
    with pytest.raises(ConfigError, match="global configuration"):
        DNNConfig.from_dram_image(b"S2DNNIMG")
