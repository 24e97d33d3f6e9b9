"""Version-2 DRAM images of the graph path: lossless round trips and bit-exact walks for every op type, on one
chip and on several; version-1 images still load; corruption refused; the multi-chip partition and timing."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.devices.spinnaker2.dnn import MLP, DNNConfig, dnn_mapper
from pondlib.devices.spinnaker2.dnn_graph import GraphConfig, GraphSim, graph_mapper, load_dnn_image
from pondlib.devices.spinnaker2.graph_image import parse_graph_image, run_graph_image
from pondlib.devices.spinnaker2.graph_ops import GRAPH_OPS
from pondlib.devices.spinnaker2.graph_timing import FIELD_SOURCES, GraphTimingModel, estimate_graph
from pondlib.devices.spinnaker2.limits import SpiNNaker2Limits
from pondlib.devices.spinnaker2.sim import DNNSim
from pondlib.errors import ConfigError, ConstraintError, SimulationError
from tests.devices.spinnaker2.graph_models import attention, cnn, op_models
from tests.strategies import assert_pond_error, bad_types

SOME = settings(max_examples=25, deadline=None)


def _same_config(a: GraphConfig, b: GraphConfig) -> None:
    for key in ("input_shape", "input_frac", "acc_bits", "overflow", "chips", "transfers", "limits_name", "report"):
        assert getattr(a, key) == getattr(b, key), key
    assert len(a.ops) == len(b.ops)
    for p, q in zip(a.ops, b.ops):
        for key in (
            "name",
            "op",
            "inputs",
            "out_shape",
            "in_fracs",
            "out_frac",
            "shift",
            "relu",
            "tiles",
            "split",
            "chip",
        ):
            assert getattr(p, key) == getattr(q, key), (p.name, key)
        for key in ("weights", "bias"):
            u, v = getattr(p, key), getattr(q, key)
            assert (u is None and v is None) or (np.array_equal(u, v) and v.dtype == np.int64), (p.name, key)
        assert {k: tuple(v) for k, v in p.attrs.items()} == {k: tuple(v) for k, v in q.attrs.items()}


@pytest.fixture(scope="module")
def mapped():
    """Every op model, the CNN and the attention block, each on one chip (and the two models on three)."""
    out = {name: (graph_mapper(m, x), x) for name, (m, x) in op_models().items()}
    for build in (cnn, attention):
        m, x = build()
        out[build.__name__] = (graph_mapper(m, x), x)
        out[build.__name__ + "@3"] = (graph_mapper(m, x, chips=3), x)
    return out


def test_the_models_cover_every_op_type(mapped):
    # concat, the gather of an op split over chips, is made by the mapper only (test_graph_split.py)
    assert {op.op for cfg, _ in mapped.values() for op in cfg.ops} == set(GRAPH_OPS) - {"concat"}


def test_round_trip_is_lossless_and_the_walk_equals_the_simulator_for_every_model(mapped):
    for name, (cfg, x) in mapped.items():
        data = cfg.to_dram_image()
        back = GraphConfig.from_dram_image(data)
        _same_config(cfg, back)
        assert back.to_dram_image() == data, name
        xq = cfg.quantize_input(x[:3])
        y_walk, dram = run_graph_image(data, xq)
        y_sim, _, _ = GraphSim(cfg).evolve(xq)
        assert np.array_equal(y_walk, y_sim), name
        assert dram[: len(data)] != data or cfg.ops[-1].op == "reshape"  # the buffers were written


def test_multi_chip_outputs_equal_single_chip_outputs(mapped):
    for name in ("cnn", "attention"):
        one, x = mapped[name]
        three, _ = mapped[name + "@3"]
        assert sorted({op.chip for op in three.ops}) == [0, 1, 2] and three.transfers
        assert [op.chip for op in three.ops] == sorted(op.chip for op in three.ops)  # contiguous groups
        xq = one.quantize_input(x)
        y1 = GraphSim(one).evolve(xq)[0]
        assert np.array_equal(y1, GraphSim(three).evolve(xq)[0])
        assert np.array_equal(y1[:4], run_graph_image(three.to_dram_image(), xq[:4])[0])
        # every transfer carries a tensor written on its source chip to a reader on its destination chip
        for t in three.transfers:
            assert t.src == (0 if t.tensor < 0 else three.ops[t.tensor].chip) != t.dst
            assert any(t.tensor in op.inputs and op.chip == t.dst for op in three.ops)


def test_a_model_too_large_for_one_chips_dram_is_refused_with_the_chips_it_needs_and_fits_on_them():
    model, x = attention()
    small = SpiNNaker2Limits(name="small DRAM", n_chips=48, dram_bytes=1200)
    err = assert_pond_error(graph_mapper, model, x, small, error=ConstraintError)
    assert err.violations[0].rule == "dram_capacity" and "chips >=" in str(err)
    need = int(err.violations[0].remedy.split(">=")[1].strip(" )"))
    cfg = graph_mapper(model, x, small, chips=need)
    assert max(cfg.report["chip_bytes"]) <= 1200
    ref = graph_mapper(model, x)
    xq = ref.quantize_input(x)
    assert np.array_equal(GraphSim(ref).evolve(xq)[0], GraphSim(cfg).evolve(xq)[0])


def test_more_chips_than_ops_and_chips_beyond_the_system_are_refused():
    model, x = op_models()["gelu"]
    err = assert_pond_error(graph_mapper, model, x, chips=2, error=ConstraintError)
    assert err.violations[0].rule == "chips"
    assert_pond_error(graph_mapper, model, x, "chip", chips=2, error=ConfigError, match="at most the 1 chip")


def test_version_1_images_still_load():
    rng = np.random.default_rng(0)
    mlp = MLP.from_arrays([rng.normal(size=(6, 5)), rng.normal(size=(5, 3))])
    cfg = dnn_mapper(mlp, rng.normal(size=(8, 6)))
    data = cfg.to_dram_image()  # written by the version-1 code
    back = load_dnn_image(data)
    assert isinstance(back, DNNConfig) and back.to_dram_image() == data
    x = cfg.quantize_input(rng.normal(size=(4, 6)))
    assert np.array_equal(DNNSim(back).evolve(x)[0], DNNSim(cfg).evolve(x)[0])
    err = assert_pond_error(parse_graph_image, data, error=ConfigError, match="version")
    assert "load_dnn_image" in str(err)


@SOME
@given(st.data())
def test_any_changed_byte_before_the_activations_is_refused(mapped, data):
    cfg, _ = mapped["conv1d"]
    raw = bytearray(cfg.to_dram_image())
    act = struct.unpack_from("<I", raw, 52)[0]
    i = data.draw(st.integers(0, act - 1))
    raw[i] ^= data.draw(st.integers(1, 255))
    assert_pond_error(load_dnn_image, bytes(raw), error=ConfigError)


@SOME
@given(st.one_of(bad_types(), st.binary(max_size=200)))
def test_bad_image_data_is_refused(bad):
    assert_pond_error(load_dnn_image, bad, error=ConfigError)
    assert_pond_error(run_graph_image, bad, np.zeros((1, 3, 12), np.int64), error=ConfigError)


def test_walk_refuses_bad_input(mapped):
    cfg, _ = mapped["conv1d"]
    data = cfg.to_dram_image()
    assert_pond_error(run_graph_image, data, np.full((1, 3, 12), 300), error=SimulationError)
    assert_pond_error(run_graph_image, data, np.zeros((1, 12, 3), np.int64), error=SimulationError)


# ----------------------------------------------------------------------------------------------- timing
def test_timing_per_op_has_mla_arm_fetch_and_the_schedulers_13_us(mapped):
    cfg, _ = mapped["attention"]
    rep = estimate_graph(cfg)
    kinds = {o.op: o for o in rep.ops}
    assert kinds["gemm"].mla_s > 0 and kinds["gemm"].arm_s == 0 and kinds["gemm"].fetch_s > 0
    assert kinds["softmax"].arm_s > 0 and kinds["softmax"].mla_s == 0 and kinds["softmax"].fetch_s == 0
    assert all(abs(o.sched_s - 13e-6) < 1e-12 for o in rep.ops)
    assert rep.total_s == pytest.approx(rep.setup_s + sum(o.total_s for o in rep.ops) + rep.cleanup_s)
    assert set(FIELD_SOURCES) == {"base", "arm_cycles", "activation_io", "hop_s", "link_bandwidth"}
    assert rep.table().splitlines()[-1].split()[-1] == f"{rep.total_s * 1e6:.1f}"


def test_multi_chip_timing_adds_the_link_transfers(mapped):
    one, _ = mapped["cnn"]
    three, _ = mapped["cnn@3"]
    r1, r3 = estimate_graph(one), estimate_graph(three)
    slow = estimate_graph(three, GraphTimingModel(hop_s=1e-3))
    assert sum(r3.transfers_s) > 0 and r1.transfers_s == ()
    assert r3.total_s == pytest.approx(r1.total_s + sum(r3.transfers_s))
    hops = sum(abs(t.dst - t.src) for t in three.transfers)  # one router hop per chip passed
    assert slow.total_s - r3.total_s == pytest.approx((1e-3 - 1e-6) * hops)
    assert r3.throughput_s < r1.throughput_s
    assert_pond_error(estimate_graph, "x", error=ConfigError)
    assert_pond_error(GraphTimingModel, link_bandwidth=0.0, error=ConfigError)


_BAD_FIELDS = st.sampled_from(
    [
        ("shift", 63),
        ("shift", -1),
        ("chip", 5),
        ("inputs", (99,)),
        ("inputs", ()),
        ("out_shape", (0,)),
        ("out_shape", (1, 2, 3, 4, 5)),
        ("name", 7),
        ("op", "leaky_relu"),
        ("weights", np.full((2, 2), 300)),
        ("weights", np.zeros((2, 2))),
        ("bias", np.array([2**40])),
        ("attrs", {"nope": (1,)}),
        ("attrs", {"strides": ("a",)}),
        ("in_fracs", (1, 2, 3)),
        ("relu", "yes"),
        ("tiles", -1),
    ]
)


@SOME
@given(_BAD_FIELDS, st.integers(0, 10))
def test_configs_the_image_cannot_hold_are_refused_naming_the_field(mapped, bad, which):
    from dataclasses import replace as dc_replace

    cfg, _ = mapped["attention"]
    i = which % len(cfg.ops)
    key, value = bad
    ops = list(cfg.ops)
    ops[i] = dc_replace(ops[i], **{key: value})
    bad_cfg = dc_replace(cfg, ops=tuple(ops))
    err = assert_pond_error(bad_cfg.to_dram_image, error=ConfigError)
    assert f"ops[{i}]" in str(err)
    assert_pond_error(GraphSim, bad_cfg, error=ConfigError)
    for field, value in (("chips", 0), ("acc_bits", 99), ("overflow", "clip"), ("input_shape", ()), ("ops", ())):
        assert_pond_error(dc_replace(cfg, **{field: value}).to_dram_image, error=ConfigError)


def test_graph_timing_of_the_papers_mlp_matches_the_calibrated_mlp_model():
    """The paper's 784-512-256-16 as graph ops (5, 2, 1 workers): each layer within 1 % of the MLP model that
    is calibrated on the paper (FC1 323 us), the difference being the activations' DRAM traffic."""
    from pondlib.devices.spinnaker2.graph_ops import GraphOp
    from pondlib.devices.spinnaker2.timing import estimate

    ops = []
    for i, (k, n, t) in enumerate([(784, 512, 5), (512, 256, 2), (256, 16, 1)]):
        ops.append(GraphOp(f"fc{i + 1}", "gemm", (i - 1,), (n,), (0,), 0, weights=np.zeros((k, n), np.int64), tiles=t))
    graph = estimate_graph(GraphConfig(tuple(ops), (784,), 0))
    mlp = estimate((784, 512, 256, 16))
    for g, m in zip(graph.ops, mlp.layers):
        assert g.total_s == pytest.approx(m.total_s, rel=0.01) and g.total_s > m.total_s
    assert graph.ops[0].total_s == pytest.approx(323e-6, rel=0.01)
