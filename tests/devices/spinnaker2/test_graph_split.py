"""Ops larger than one chip's DRAM split over several chips (gemm by output columns, conv by output channels):
the same integers as one chip, the image's round trip and walk exact, the gathers in the transfer table and the
timing model, and what cannot be split refused with the limit and the fix."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.devices.spinnaker2.dnn_graph import MAX_PARTS, GraphConfig, GraphSim, graph_mapper
from pondlib.devices.spinnaker2.graph_image import run_graph_image
from pondlib.devices.spinnaker2.graph_timing import GraphTimingModel, estimate_graph
from pondlib.devices.spinnaker2.limits import SpiNNaker2Limits
from pondlib.errors import ConfigError, ConstraintError, ONNXError
from pondlib.graph.dnn import FloatLayer, FloatModel
from tests.devices.spinnaker2.graph_models import attention, cnn, conv_params
from tests.devices.spinnaker2.test_graph_image import _same_config
from tests.strategies import assert_pond_error


def _small(dram: int) -> SpiNNaker2Limits:
    return SpiNNaker2Limits(name=f"{dram} B DRAM", n_chips=48, dram_bytes=dram)


def _wide_mlp() -> tuple[FloatModel, np.ndarray]:
    """64 -> 96 (6,528 parameter bytes) -> relu -> 10: the first gemm needs three parts of 2,500 B chips."""
    rng = np.random.default_rng(3)
    layers = (
        FloatLayer(
            "wide", "gemm", (-1,), {"weight": rng.normal(size=(64, 96)) / 8, "bias": rng.normal(size=96)}, (96,)
        ),
        FloatLayer("r", "relu", (0,), {}, (96,)),
        FloatLayer("head", "gemm", (1,), {"weight": rng.normal(size=(96, 10)) / 10, "bias": np.zeros(10)}, (10,)),
    )
    return FloatModel(layers, "x", (64,)), rng.normal(size=(32, 64))


# model name -> (build, DRAM bytes per chip that force a split, chips)
CASES = {"mlp": (_wide_mlp, 2500, 4), "attention": (attention, 900, 10), "cnn": (cnn, 700, 5)}


@pytest.fixture(scope="module")
def split():
    """Each model on one chip of 2 GiB and split over small-DRAM chips."""
    out = {}
    for name, (build, dram, chips) in CASES.items():
        model, x = build()
        out[name] = (graph_mapper(model, x), graph_mapper(model, x, _small(dram), chips=chips), x, dram)
    return out


def _groups(cfg: GraphConfig) -> dict[str, list[int]]:
    """Split op name -> indices of its parts."""
    out: dict[str, list[int]] = {}
    for i, op in enumerate(cfg.ops):
        if "part" in op.attrs:
            out.setdefault(op.name.rsplit(".part", 1)[0], []).append(i)
    return out


def test_an_op_too_large_for_one_chip_runs_split_and_only_split(split):
    for name, (build, dram, chips) in CASES.items():
        one, many, x, _ = split[name]
        assert not any(op.op == "concat" for op in one.ops)
        assert max(many.report["chip_bytes"]) <= dram
        # exactly the ops that alone (parameters, output, inputs) need more than one chip's DRAM are split
        need = {
            op.name: op.weight_bytes + int(np.prod(op.out_shape)) + sum(int(np.prod(s)) for s in one.in_shapes(i))
            for i, op in enumerate(one.ops)
        }
        assert set(_groups(many)) == {k for k, v in need.items() if v > dram} != set(), name
        err = assert_pond_error(graph_mapper, *build(), _small(dram), chips=chips - 1, error=ConstraintError)
        assert {v.rule for v in err.violations} == {"dram_capacity"} and f"chips >= {chips}" in str(err)


def test_parts_hold_their_weight_slices_on_consecutive_chips_and_are_gathered(split):
    for name in CASES:
        one, many, _, _ = split[name]
        whole = {op.name: op for op in one.ops}
        for base, idx in _groups(many).items():
            parts = [many.ops[i] for i in idx]
            ref = whole[base]
            axis = 1 if ref.op == "gemm" else 0
            assert np.array_equal(np.concatenate([p.weights for p in parts], axis=axis), ref.weights)
            assert np.array_equal(np.concatenate([p.bias for p in parts]), ref.bias)
            assert [p.attr("part")[:2] for p in parts] == [(k, len(parts)) for k in range(len(parts))]
            assert [p.chip for p in parts] == list(range(parts[0].chip, parts[0].chip + len(parts)))
            assert all(p.shift == ref.shift and p.relu == ref.relu for p in parts)
            gather = next(op for op in many.ops if op.name == base)
            assert gather.op == "concat" and gather.inputs == tuple(idx) and gather.out_shape == ref.out_shape
            for i in idx:  # every slice made on another chip than the gather's goes over a link
                if many.ops[i].chip != gather.chip:
                    assert any(t.tensor == i and t.dst == gather.chip for t in many.transfers), (name, base)


def test_split_outputs_equal_one_chip_and_the_image_round_trip_and_walk_are_exact(split):
    for name, (one, many, x, _) in split.items():
        xq = one.quantize_input(x)
        y1, _, rec1 = GraphSim(one).evolve(xq, record=True)
        yn, _, recn = GraphSim(many).evolve(xq, record=True)
        assert np.array_equal(y1, yn), name
        assert all(np.array_equal(rec1[k], recn[k]) for k in rec1), name  # the gather holds the op's output
        data = many.to_dram_image()
        back = GraphConfig.from_dram_image(data)
        _same_config(many, back)
        assert back.to_dram_image() == data
        assert np.array_equal(run_graph_image(data, xq[:4])[0], yn[:4]), name
    _, mlp, _, _ = split["mlp"]
    assert max(len(op.inputs) for op in mlp.ops) == 3  # a gather of three parts: inputs beyond the block's two


def test_timing_runs_the_parts_concurrently_and_counts_the_gathers(split):
    _, many, _, _ = split["mlp"]
    rep = estimate_graph(many)
    assert rep.parallel and all(len(g) >= 2 for g in rep.parallel)
    seq = rep.setup_s + sum(o.total_s for o in rep.ops) + sum(rep.transfers_s) + rep.cleanup_s
    saved = sum(sum(rep.ops[i].total_s for i in g) - max(rep.ops[i].total_s for i in g) for g in rep.parallel)
    assert saved > 0 and rep.total_s == pytest.approx(seq - saved)
    slow = estimate_graph(many, GraphTimingModel(link_bandwidth=1e3))
    gathered = sum(t.bytes for t in many.transfers)
    assert slow.total_s - rep.total_s == pytest.approx(gathered / 1e3 - gathered / 250e6)
    assert "concat" in {o.op for o in rep.ops}


def test_what_cannot_be_split_is_refused_naming_the_limit_and_the_fix():
    rng = np.random.default_rng(0)
    dw = conv_params(rng.normal(size=(16, 1, 3, 3)), None, strides=(1, 1), pads=(1, 1, 1, 1), groups=16)
    model = FloatModel((FloatLayer("dw", "conv", (-1,), dw, (16, 8, 8)),), "x", (16, 8, 8))
    x = rng.normal(size=(4, 16, 8, 8))
    err = assert_pond_error(graph_mapper, model, x, _small(1500), error=ConstraintError)
    assert err.violations[0].rule == "dram_capacity" and "1500 B" in str(err) and "dw alone exceed" in str(err)
    concat = FloatModel((FloatLayer("c", "concat", (-1,), {}, (8,)),), "x", (8,))
    err = assert_pond_error(graph_mapper, concat, rng.normal(size=(4, 8)), error=ConstraintError)
    assert err.violations[0].rule == "op_supported" and "concat" not in err.violations[0].limit
    assert MAX_PARTS == 48


_BAD_CONCAT = st.sampled_from(
    [
        ("attrs", {}),
        ("attrs", {"axis": (5,)}),
        ("attrs", {"axis": (0, 1)}),
        ("in_fracs", None),
        ("inputs", None),
    ]
)


@settings(max_examples=15, deadline=None)
@given(_BAD_CONCAT)
def test_gathers_the_image_cannot_hold_are_refused(split, bad):
    _, many, _, _ = split["mlp"]
    i = next(k for k, op in enumerate(many.ops) if op.op == "concat")
    key, value = bad
    op = many.ops[i]
    if key == "in_fracs":
        value = (op.out_frac + 1,) + op.in_fracs[1:]
    if key == "inputs":  # more parts than a gather may have
        value = (i - 1,) * (MAX_PARTS + 1)
        op = replace(op, in_fracs=(op.out_frac,) * len(value))
    ops = list(many.ops)
    ops[i] = replace(op, **{key: value})
    bad_cfg = replace(many, ops=tuple(ops))
    err = assert_pond_error(bad_cfg.to_dram_image, error=ConfigError)
    assert f"ops[{i}]" in str(err)
    assert_pond_error(GraphSim, bad_cfg, error=ConfigError)
    assert_pond_error(graph_mapper, "model", None, error=ONNXError)
