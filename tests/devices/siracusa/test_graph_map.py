"""Tests of the Siracusa graph mapper (pondlib.devices.siracusa.graph_map): small hand-built graphs only."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.devices.siracusa.graph_map import GraphMapping, map_graph
from pondlib.errors import ConfigError, GraphError
from pondlib.graph.opgraph import Node, OpGraph, TensorInfo

RQ = {"div": 256, "n_levels_out": 256, "signed": 1}


def mlp(rows: int = 4, k: int = 64, o: int = 64) -> OpGraph:
    """MatMul (constant weights) + RequantShift."""
    return OpGraph(
        (TensorInfo("x", (rows, k), "int8"),),
        (TensorInfo("y", (rows, o), "int8"),),
        (Node("mm", "MatMul", ("x", "w"), ("h",)), Node("rq", "RequantShift", ("h", "m", "z"), ("y",), RQ)),
        {"w": np.zeros((k, o), np.float32), "m": np.float32(3), "z": np.float32(0)},
    )


def conv(k: int = 1, c: int = 16, o: int = 32, hw: int = 8) -> OpGraph:
    """A k x k convolution (NCHW) + RequantShift."""
    return OpGraph(
        (TensorInfo("x", (1, c, hw, hw), "int8"),),
        (TensorInfo("y", (1, o, hw - k + 1, hw - k + 1), "int8"),),
        (Node("cv", "Conv", ("x", "w"), ("h",), {"kernel_shape": [k, k]}),
         Node("rq", "RequantShift", ("h", "m", "z"), ("y",), RQ)),
        {"w": np.zeros((o, c, k, k), np.float32), "m": np.float32(1), "z": np.float32(0)},
    )  # fmt: skip


def attention(t: int = 8, d: int = 16) -> OpGraph:
    """A tiny attention block: projections, scores, iSoftmax-free softmax stand-in, values."""
    nodes = [
        Node("q", "MatMul", ("x", "wq"), ("q0",)),
        Node("q_rq", "RequantShift", ("q0", "m", "z"), ("q1",), RQ),
        Node("k", "MatMul", ("x", "wk"), ("k0",)),
        Node("k_rq", "RequantShift", ("k0", "m", "z"), ("k1",), RQ),
        Node("kt", "Transpose", ("k1",), ("k2",), {"perm": [1, 0]}),
        Node("s", "MatMul", ("q1", "k2"), ("s0",)),
        Node("s_rq", "RequantShift", ("s0", "m", "z"), ("s1",), RQ),
        Node("add", "Add", ("s1", "s1"), ("s2",)),
        Node("a_rq", "RequantShift", ("s2", "m", "z"), ("s3",), RQ),
        Node("v", "MatMul", ("s3", "x"), ("o0",)),
        Node("o_rq", "RequantShift", ("o0", "m", "z"), ("y",), RQ),
    ]
    consts = {"wq": np.zeros((d, d), np.float32), "wk": np.zeros((d, d), np.float32),
              "m": np.float32(1), "z": np.float32(0)}  # fmt: skip
    return OpGraph((TensorInfo("x", (t, d), "int8"),), (TensorInfo("y", (t, d), "int8"),), tuple(nodes), consts)


def test_totals_are_sum_of_rows_and_table():
    for g in (mlp(), conv(), attention()):
        gm = map_graph(g)
        assert isinstance(gm, GraphMapping)
        assert gm.cycles == pytest.approx(sum(r.cycles for r in gm.rows))
        lines = gm.table()
        assert len(lines) == len(g.nodes) + 2 and lines[-1].startswith("total")


def test_fusion_and_work():
    gm = map_graph(mlp(rows=4, k=64, o=32))
    mm, rq = gm.rows
    assert (mm.kind, mm.work, mm.weight_bytes) == ("mac", 4 * 64 * 32, 64 * 32)
    assert rq.placement == "fused" and rq.cycles == 0 and rq.fused_into == "mm"


def test_tiles_fit_l1():
    for l1 in (2_000, 8_000, 64_000):
        for double in (False, True):
            gm = map_graph(mlp(rows=64, k=64, o=256), l1_bytes=l1, double_buffer=double)
            for r in gm.rows:
                if r.n_tiles:
                    assert r.tile_bytes * r.buffering <= l1
                    assert r.buffering == 1 or double


def test_placement_rules():
    gm = map_graph(mlp())
    assert gm.l3_bytes == 0 and gm.rows[0].placement.startswith("W:L2 A:L1")
    assert map_graph(mlp(), tiled=False).rows[0].placement == "W:L2 A:L2"
    big = mlp(rows=1, k=1024, o=2304)  # 2.25 MiB of int8 weights: more than L2
    gm = map_graph(big, tiled=False)
    assert gm.l3_bytes == 1024 * 2304 and gm.rows[0].placement.startswith("W:L3")
    assert gm.l2_peak <= 2 * 1024 * 1024


def test_monotone_in_cores_and_l1():
    g = attention(t=16, d=32)
    for tiled in (False, True):
        cyc = [map_graph(g, cores=c, tiled=tiled).cycles for c in (1, 2, 4, 8)]
        assert all(a >= b for a, b in zip(cyc, cyc[1:]))
    cyc = [map_graph(mlp(rows=64, k=64, o=256), l1_bytes=b).cycles for b in (4_000, 8_000, 32_000, 64_000)]
    assert all(a >= b for a, b in zip(cyc, cyc[1:]))


def test_double_buffering_never_slower():
    for g in (mlp(rows=64, k=64, o=256), conv(k=3), attention()):
        for l1 in (4_000, 64_000):
            assert map_graph(g, l1_bytes=l1).cycles <= map_graph(g, l1_bytes=l1, double_buffer=False).cycles


def test_npu_eligibility():
    pw = map_graph(conv(k=1)).rows[0]
    assert pw.npu and "1x1" in pw.npu_reason
    assert not map_graph(conv(k=2)).rows[0].npu
    scores = [r for r in map_graph(attention()).rows if r.name == "s"][0]
    assert not scores.npu


def test_unknown_op_named():
    g = OpGraph(
        (TensorInfo("x", (4,), "int8"),), (TensorInfo("y", (4,), "int8"),), (Node("f", "Frobnicate", ("x",), ("y",)),)
    )
    with pytest.raises(GraphError, match="Frobnicate"):
        map_graph(g)


def test_tile_too_small():
    with pytest.raises(ConfigError, match="l1_bytes"):
        map_graph(mlp(rows=1, k=4096, o=16), l1_bytes=1_000)


@settings(max_examples=25, deadline=None)
@given(
    cores=st.one_of(st.integers(-5, 0), st.integers(9, 100), st.floats(allow_nan=True), st.text(max_size=3)),
)
def test_bad_cores(cores):
    with pytest.raises(ConfigError):
        map_graph(mlp(), cores=cores)


@settings(max_examples=25, deadline=None)
@given(l1=st.one_of(st.integers(-100, 0), st.integers(262_145, 10**9), st.just(1.5), st.none().map(lambda _: "x")))
def test_bad_l1(l1):
    with pytest.raises(ConfigError):
        map_graph(mlp(), l1_bytes=l1)


@settings(max_examples=10, deadline=None)
@given(g=st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=3)))
def test_bad_graph(g):
    with pytest.raises(GraphError):
        map_graph(g)


@settings(max_examples=10, deadline=None)
@given(flag=st.one_of(st.integers(2, 9), st.text(min_size=1, max_size=3), st.floats(allow_nan=True)))
def test_bad_flags(flag):
    for key in ("tiled", "double_buffer", "integer"):
        with pytest.raises(ConfigError):
            map_graph(mlp(), **{key: flag})


def test_mac_tile_is_deeploys_greedy_choice():
    """Deeploy's tiler fills batch, then rows, then outputs (a multiple of 16): rows first, not fewest tiles."""
    row = map_graph(mlp(rows=64, k=64, o=64), l1_bytes=8_000, double_buffer=False).rows[0]
    assert row.tile == {"b": 1, "m": 64, "o": 16} and row.n_tiles == 4
    assert row.tile_bytes <= 8_000


def test_empty_concat_is_an_alias():
    """Deeploy's SkipEmptyConcatPass: a Concat with an empty operand (a prefill's KV cache) costs nothing."""
    g = OpGraph(
        (TensorInfo("cache", (1, 0, 4), "int8"), TensorInfo("x", (1, 8, 4), "int8")),
        (TensorInfo("y", (1, 8, 4), "int8"),),
        (Node("cat", "Concat", ("cache", "x"), ("y",), {"axis": 1}),),
    )
    row = map_graph(g).rows[0]
    assert (row.kind, row.cycles) == ("alias", 0.0)


def test_shape_fallback_for_op_without_kernel():
    """An op with a cost model but no GraphSim kernel (LeakyRelu) is mapped through the shape-only fallback."""
    g = OpGraph(
        (TensorInfo("x", (4, 16), "int8"),),
        (TensorInfo("y", (4, 16), "int8"),),
        (Node("lr", "LeakyRelu", ("x",), ("y",), {"alpha": 0.1}),),
    )
    row = map_graph(g).rows[0]
    assert row.shape == (4, 16) and row.kind == "eltwise" and row.cycles > 0


def test_every_op_with_a_kernel_has_a_cost_model():
    from pondlib.devices.siracusa.graph_map import OP_FAMILIES
    from pondlib.devices.siracusa.kernels import KERNELS

    assert {op for _, op in KERNELS} <= set(OP_FAMILIES)


def test_a_one_dimensional_conv_maps_and_is_not_npu_eligible():
    from pondlib.graph.opgraph import Node, OpGraph, TensorInfo

    g = OpGraph(
        (TensorInfo("x", (1, 4, 16), "int8"),),
        (TensorInfo("y"),),
        (Node("c", "Conv", ("x", "w"), ("y",), {"kernel_shape": [3], "pads": [1, 1]}),),
        {"w": np.ones((8, 4, 3), np.float32)},
    )
    m = map_graph(g, integer=True)
    assert m.rows[0].work == 16 * 8 * 4 * 3 and not m.rows[0].npu
