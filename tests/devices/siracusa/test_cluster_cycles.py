"""The cycle model of pondlib's cluster C (cluster_cycles) against hand-derived schedules and the emulated cluster
(issue 28, item 4: the emulated counts beside the model's per-tile prediction)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.devices.siracusa import cluster_cycles as cc
from pondlib.devices.siracusa.graph_codegen_cluster import emit_cluster_report
from pondlib.errors import ConfigError
from pondlib.graph.opgraph import Node, OpGraph, TensorInfo


def _mlp(rows: int = 16) -> OpGraph:
    rng = np.random.default_rng(3)
    return OpGraph(
        (TensorInfo("x", (rows, 64), "int8"),),
        (TensorInfo("y", (rows, 32), "int8"),),
        (
            Node("mm", "MatMul", ("x", "w"), ("h",)),
            Node("rq", "RequantShift", ("h", "m", "z"), ("y",), {"div": 256, "n_levels_out": 256, "signed": 1}),
        ),
        {"w": rng.integers(-128, 128, (64, 32)).astype(np.float32), "m": np.float32(3), "z": np.float32(0)},
    )


def test_tile_schedule_single_and_double_buffered_by_hand():
    k, i, o = [100.0, 40.0, 100.0], [30.0, 30.0, 30.0], [20.0, 20.0, 20.0]
    # SB: every transfer exposed after tile 0's inputs: 240 compute + 60 out + 60 next inputs
    assert cc.tile_schedule(k, i, o, double=False) == 360.0
    # DB: tile 0 max(100, 30), tile 1 max(40, 30 + 20), tile 2 max(100, 20), then the last output
    assert cc.tile_schedule(k, i, o, double=True) == 100.0 + 50.0 + 100.0 + 20.0


def test_the_model_follows_the_plan_by_hand():
    """One MatMul fused with its RequantShift, one tile on one core: K = k U + k_loop E + c, DMA from the plan."""
    g = _mlp()
    _, rep = emit_cluster_report(g, cores=1, l1_bytes=64_000, double_buffer=False)
    (row,) = rep.rows
    assert row.n_tiles == 1 and row.fused == "rq"
    (op,) = cc.cluster_cycles(g, rep, dma_setup_cycles=0.0, dma_bytes_per_cycle=1e9)
    k, k_loop, c = cc.PORTABLE_CYCLES["MatMul+rq"]
    assert op.kernel == pytest.approx(k * 16 * 64 * 32 + k_loop * 16 * 32 + c)
    assert op.dma == pytest.approx(0.0, abs=1e-3) and op.tiles == 1
    # 8 cores split the 16 rows: the slowest core has 2 of them
    (op8,) = cc.cluster_cycles(g, rep, cores=8, dma_setup_cycles=0.0, dma_bytes_per_cycle=1e9)
    assert op8.kernel == pytest.approx((k * 16 * 64 * 32 + k_loop * 16 * 32) / 8 + c)
    # with a slow DMA the output transfer (16 x 32 int8) is charged after the kernel
    (slow,) = cc.cluster_cycles(g, rep, dma_setup_cycles=50.0, dma_bytes_per_cycle=8.0)
    assert slow.dma == pytest.approx(50.0 + 16 * 32 / 8.0)


@settings(max_examples=30, deadline=None)
@given(
    name=st.sampled_from(["cores", "dma_setup_cycles", "dma_bytes_per_cycle"]),
    value=st.one_of(st.integers(-5, 0), st.integers(9, 10**6), st.just(float("nan")), st.just("x"), st.none()),
)
def test_bad_arguments_are_refused_naming_them(name, value):
    g = _mlp(4)
    _, rep = emit_cluster_report(g, cores=1, l1_bytes=64_000)
    if name == "cores" and value is None:
        return  # the report's core count
    if name == "dma_setup_cycles" and isinstance(value, int) and 0 <= value <= 1e9:
        return  # a valid setup cost
    if name == "dma_bytes_per_cycle" and isinstance(value, int) and value >= 9:
        return  # a valid bandwidth
    with pytest.raises(ConfigError, match=name):
        cc.cluster_cycles(g, rep, **{name: value})


@pytest.mark.slow  # zig builds for 1 and 4 cores, two emulated runs
def test_the_model_is_within_25_percent_of_the_emulated_cluster(tmp_path):
    pytest.importorskip("unicorn")
    pytest.importorskip("ziglang")
    from pondlib.codegen.cluster import build_cluster, run_cluster
    from pondlib.devices.siracusa.graph_codegen import pack_inputs

    g = _mlp(32)
    x = np.random.default_rng(0).integers(-128, 128, (32, 64))
    for cores, l1, double in ((1, 64_000, False), (4, 3_000, True)):
        prog, rep = emit_cluster_report(g, cores=cores, l1_bytes=l1, double_buffer=double)
        build = build_cluster(prog, tmp_path / str(cores), cores=cores, l1_bytes=max(l1, rep.l1_arena),
                              cache_dir=tmp_path / "zig")  # fmt: skip
        run = run_cluster(build, pack_inputs(g, [x])[None])
        emulated = sum(e.cycles for m, e in run.profile.items() if m // 65536 == 0)
        (op,) = cc.cluster_cycles(g, rep, cores=cores)
        assert op.tiles == rep.rows[0].n_tiles
        assert abs(op.cycles - emulated) <= 0.25 * emulated, (cores, op, emulated)
        assert run.cycles >= run.span  # the DMA's stalls and the barriers only add
