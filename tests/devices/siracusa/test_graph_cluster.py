"""Siracusa's integer graphs as cluster C (graph_codegen_cluster): L2 tensors, L1 tiles by DMA, 1..8 cores, on
the host (pthreads), equal to GraphSim bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.codegen import compile_host, run_host
from pondlib.devices.siracusa.graph_codegen import pack_inputs, unpack_outputs
from pondlib.devices.siracusa.graph_codegen_cluster import emit_cluster, emit_cluster_report
from pondlib.devices.siracusa.graphsim import GraphSim
from pondlib.errors import CodegenError
from pondlib.graph.opgraph import Node, OpGraph, TensorInfo
from tests.devices.siracusa.test_graph_codegen import _case, _ranges

_RQ = {"div": 64.0, "n_levels_out": 256.0, "signed": 1.0}
_SM = {"coeffA": 1, "coeffB": 2, "coeffC": 3, "log2": 4, "n_levels": 256}
ROWS = 48


def tiled_graph() -> OpGraph:
    """Every tiled family on ROWS rows: MatMul (whose B takes column tiles in a small L1), element-wise ops,
    RequantShift per channel, norms, softmaxes, Gemm with B (K, N) and a per-column C, Gemm with a transposed B
    and a (M, N) C, MatMul by a B in L2 (input ``xb``: strided column tiles); whole-tensor ops (Conv, MaxPool,
    Transpose) on a third, small input."""
    rng = np.random.default_rng(0)
    consts = {
        "w": rng.integers(-8, 8, (16, 40)).astype(np.float32), "bias": rng.integers(-50, 50, 40).astype(np.float32),
        "m": np.float32(rng.integers(1, 9, 40)), "z": np.float32(3),
        "gw": rng.integers(-8, 8, (40, 24)).astype(np.float32), "gc": np.float32(np.arange(24)),
        "gwt": rng.integers(-8, 8, (24, 40)).astype(np.float32),
        "gc2": rng.integers(-99, 99, (ROWS, 24)).astype(np.float32),
        "nw": rng.integers(1, 20, 40).astype(np.float32), "nb": rng.integers(-9, 9, 40).astype(np.float32),
        "cw": rng.integers(-3, 4, (4, 1, 3, 3)).astype(np.float32),
    }  # fmt: skip
    nodes = (
        Node("mm", "MatMul", ("x", "w"), ("h0",)),
        Node("ab", "Add", ("h0", "bias"), ("h1",)),
        Node("rq", "RequantShift", ("h1", "m", "z"), ("h2",), _RQ),
        Node("relu", "Relu", ("h2",), ("h3",)),
        Node("sm", "iSoftmax", ("h2",), ("s",), _SM),
        Node("ln", "iLayerNorm", ("h2", "nw", "nb"), ("n",), {"D": 16, "n_levels": 256}),
        Node("rms", "iRMSNorm", ("h3", "nw"), ("r",), {"D": 16, "n_levels": 256}),
        Node("ita", "ITAMax", ("h2",), ("ia",), {"n_levels": 256}),
        Node("mul", "Mul", ("s", "ia"), ("p",)),
        Node("sub", "Sub", ("n", "r"), ("d",)),
        Node("gemm", "Gemm", ("h2", "gw", "gc"), ("g",), {"transB": 0}),
        Node("gemt", "Gemm", ("h3", "gwt", "gc2"), ("gt",), {"transB": 1}),
        Node("mmb", "MatMul", ("h3", "xb"), ("hb",)),
        Node("conv", "Conv", ("x2", "cw"), ("cv",), {"group": 1, "pads": [1, 1, 1, 1]}),
        Node("pool", "MaxPool", ("cv",), ("pl",), {"kernel_shape": [2, 2], "strides": [2, 2]}),
        Node("tr", "Transpose", ("pl",), ("plt",), {"perm": [0, 1, 3, 2]}),
    )
    shapes = {
        "p": (ROWS, 40),
        "d": (ROWS, 40),
        "g": (ROWS, 24),
        "gt": (ROWS, 24),
        "hb": (ROWS, 32),
        "plt": (1, 4, 3, 3),
    }
    inputs = (
        TensorInfo("x", (ROWS, 16), "int8"),
        TensorInfo("xb", (40, 32), "int8"),
        TensorInfo("x2", (1, 1, 6, 6), "int8"),
    )
    return OpGraph(inputs,
                   tuple(TensorInfo(o, s, "int64") for o, s in shapes.items()), nodes, consts)  # fmt: skip


def gemv_graph() -> OpGraph:
    """A decode step: two GEMVs (one row; B (64, 128) and (128, 64), more than a small L1 holds whole), each
    requantized per channel, then an element-wise Add of two rows (the first GEMV's output as (2, 64)) and the
    second's broadcast over them: a tile of fewer rows than cores, its values over the cores."""
    rng = np.random.default_rng(3)
    consts = {
        "w1": rng.integers(-8, 8, (64, 128)).astype(np.float32), "m1": np.float32(rng.integers(1, 9, 128)),
        "w2": rng.integers(-8, 8, (128, 64)).astype(np.float32), "m2": np.float32(rng.integers(1, 9, 64)),
        "z": np.float32(1),
    }  # fmt: skip
    nodes = (
        Node("mm1", "MatMul", ("x", "w1"), ("h1",)),
        Node("rq1", "RequantShift", ("h1", "m1", "z"), ("a1",), _RQ),
        Node("mm2", "MatMul", ("a1", "w2"), ("h2",)),
        Node("rq2", "RequantShift", ("h2", "m2", "z"), ("y0",), _RQ),
        Node("rs", "Reshape", ("a1", "shape"), ("a2",), {}),
        Node("add", "Add", ("a2", "y0"), ("y",)),
    )
    consts["shape"] = np.float32([2, 64])
    return OpGraph((TensorInfo("x", (1, 64), "int8"),), (TensorInfo("y", (2, 64), "int64"),), nodes, consts)


def requant_graph() -> OpGraph:
    """Two rows (fewer than cores): a MatMul requantized per column and a Gemm requantized by a scalar (each
    RequantShift its producer's only reader: fused), a MatMul read by a RequantShift and an Add (not fused), an
    iRMSNorm and an iLayerNorm of two rows (values over the cores), and an identity RequantShift (mul == div,
    add == 0, an int8 input) after a Transpose (skipped: an alias), itself a graph output."""
    rng = np.random.default_rng(5)
    consts = {
        "w": rng.integers(-8, 8, (32, 24)).astype(np.float32), "m1": np.float32(rng.integers(1, 9, 24)),
        "gw": rng.integers(-8, 8, (24, 16)).astype(np.float32), "gc": np.float32(np.arange(16)),
        "w3": rng.integers(-8, 8, (16, 16)).astype(np.float32), "m": np.float32(5), "z": np.float32(3),
        "nw": rng.integers(1, 20, 16).astype(np.float32), "nb": rng.integers(-9, 9, 16).astype(np.float32),
        "sixteen": np.float32(16), "zero": np.float32(0),
    }  # fmt: skip
    unit = {"div": 16.0, "n_levels_out": 256.0, "signed": 1.0}
    nodes = (
        Node("mm", "MatMul", ("x", "w"), ("h",)),
        Node("rq1", "RequantShift", ("h", "m1", "z"), ("a",), _RQ),
        Node("gemm", "Gemm", ("a", "gw", "gc"), ("gg",), {"transB": 0}),
        Node("rq2", "RequantShift", ("gg", "m", "z"), ("b",), _RQ),
        Node("mm3", "MatMul", ("b", "w3"), ("h3",)),
        Node("rq3", "RequantShift", ("h3", "sixteen", "zero"), ("c",), unit),  # not the identity: h3 > int8
        Node("add", "Add", ("h3", "h3"), ("h3s",)),
        Node("rms", "iRMSNorm", ("b", "nw"), ("r",), {"D": 16, "n_levels": 256}),
        Node("ln", "iLayerNorm", ("b", "nw", "nb"), ("n",), {"D": 16, "n_levels": 256}),
        Node("tr", "Transpose", ("x4",), ("t",), {"perm": [1, 0]}),
        Node("rqi", "RequantShift", ("t", "sixteen", "zero"), ("ti",), unit),
    )
    shapes = {"r": (2, 16), "n": (2, 16), "c": (2, 16), "h3s": (2, 16), "ti": (8, 4)}
    inputs = (TensorInfo("x", (2, 32), "int8"), TensorInfo("x4", (4, 8), "int8"))
    return OpGraph(inputs, tuple(TensorInfo(o, sh, "int64") for o, sh in shapes.items()), nodes, consts)


@pytest.mark.parametrize("l1, cores, fuse", [(600, 2, True), (64000, 8, True), (64000, 8, False)])
def test_requant_skipped_fused_and_norm_rows_split_equal_graphsim(l1, cores, fuse, tmp_path):
    g = requant_graph()
    prog, rep = emit_cluster_report(g, l1_bytes=l1, cores=cores, fuse_requant=fuse)
    ops = [(r.name, r.fused) for r in rep.rows]
    assert rep.extra["skipped"] == ("rqi",) and "rqi" not in {r.name for r in rep.rows}
    if fuse:
        assert rep.extra["fused"] == {"mm": "rq1", "gemm": "rq2"} and ("mm", "rq1") in ops and ("gemm", "rq2") in ops
        assert not {"rq1", "rq2"} & {r.name for r in rep.rows} and "rq3" in {r.name for r in rep.rows}
        mm = next(r for r in rep.rows if r.name == "mm")
        assert mm.l2_bytes == 2 * 24 and (mm.col_tiles > 1) == (l1 == 600)  # int8 out; column tiles: gc_c0 + n
    else:
        assert rep.extra["fused"] == {} and {"rq1", "rq2", "rq3"} <= {r.name for r in rep.rows}
    src = prog.sources["net.c"]
    assert src.count("for (int32_t j = gc_lo(16), j_end = gc_hi(16); j < j_end; ++j) {") == 2  # iRMSNorm, iLayerNorm
    assert f"pond_profile((uint32_t){len(rep.rows) * 65536}u)" in src  # the graph outputs' copy, split
    exe = compile_host(prog, tmp_path, extra_flags=("-pthread", f"-DPOND_NUM_CORES={cores}"))
    for seed in (1, 2):
        _check(g, prog, {cores: exe}, _inputs(g, seed))


@pytest.mark.slow
def test_one_row_norm_splits_values_on_the_emulated_cluster(tmp_path):
    from pondlib.codegen.cluster import build_cluster, run_cluster

    g = OpGraph((TensorInfo("x", (1, 256), "int8"),), (TensorInfo("y", (1, 256), "int64"),),
                (Node("rms", "iRMSNorm", ("x", "w"), ("y",), {"D": 16, "n_levels": 256}),),
                {"w": np.float32(np.arange(1, 257))})  # fmt: skip
    prog = emit_cluster(g, l1_bytes=64000)
    ins = _inputs(g)
    want = np.asarray(GraphSim(g).run(ins, integer=True).output_list()[0]).reshape(1, 256)
    runs = {}
    for cores in (1, 8):
        runs[cores] = run = run_cluster(
            build_cluster(prog, tmp_path / f"e{cores}", cores=cores), pack_inputs(g, ins)[None]
        )
        assert np.array_equal(unpack_outputs(g, run.y[0])[0], want), cores
    per_core = runs[8].instructions
    assert min(per_core) > 0.5 * max(per_core), per_core  # every core computes, not one
    assert runs[8].span < runs[1].span / 2


def _inputs(g: OpGraph, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, info.shape) for info in g.inputs]


def _check(g, prog, bins, ins, want=None):
    sim = GraphSim(g).run(ins, integer=True).output_list()
    for c, exe in bins.items():
        y = run_host(exe, prog, pack_inputs(g, ins)[None])
        for got, ref in zip(unpack_outputs(g, y[0]), sim):
            assert np.array_equal(got, np.asarray(ref).reshape(got.shape)), (c, got, ref)
    if want is not None:
        for got, ref in zip(sim, want):
            assert np.array_equal(np.asarray(got).reshape(-1), np.asarray(ref).astype(np.int64).reshape(-1))


# (double buffered, L1 bytes, core counts compiled): the small L1 gives every tiled family several tiles and the
# MatMul / Gemm column tiles of one row (GEMV-like tiles: output channels over the cores) and element-wise tiles
# of fewer rows than cores (values over the cores on the emulated cluster); 64000 B one tile per op (rows over
# the cores). Host threads spin at barriers: more threads than CPUs and thousands of tiles are slow, so the
# small-L1 programs run on few cores here (8 cores: DB-64k, Attention at 64000 B and the emulated GEMV test).
_CONFIGS = {"DB-700": (True, 700, (1,)), "SB-700": (False, 700, (2,)), "DB-64k": (True, 64000, (8,))}


@pytest.fixture(scope="module", params=list(_CONFIGS))
def tiled(request, tmp_path_factory):
    double, l1, cores = _CONFIGS[request.param]
    g = tiled_graph()  # unfused: every row-tiled family has its own row (fusion: the requant tests)
    prog, rep = emit_cluster_report(g, double_buffer=double, l1_bytes=l1, fuse_requant=False)
    tmp = tmp_path_factory.mktemp("tiled")
    bins = {c: compile_host(prog, tmp / f"c{c}", extra_flags=("-pthread", f"-DPOND_NUM_CORES={c}")) for c in cores}
    return g, prog, rep, bins


_ROW_FAMILIES = ("MatMul", "Add", "RequantShift", "Relu", "iSoftmax", "iLayerNorm", "iRMSNorm", "ITAMax", "Gemm")


def test_tiled_families_equal_graphsim(tiled):
    g, prog, rep, bins = tiled
    small = rep.l1_limit < 1000
    for r in rep.rows:
        assert r.mode == ("whole" if r.op in ("Conv", "MaxPool", "Transpose") else "rows"), r
        assert r.n_tiles >= (2 if small and r.mode == "rows" else 1) and r.l1_bytes <= rep.l1_limit, r
        if r.op in ("MatMul", "Gemm"):
            assert r.cols in (40, 24, 32) and (r.col_tiles >= 2) == small and r.n_tiles * r.tile_rows >= r.rows
            assert r.n_tiles == r.col_tiles * -(-r.rows // r.tile_rows)
            if small:  # B's column tiles: one transfer per row of B (K, N), one for a transposed B
                assert r.dma_transfers > r.n_tiles and r.dma_bytes > r.l2_bytes + r.cols * r.rows // 4
        elif r.mode == "whole":
            assert r.n_tiles == 1
    assert {r.op for r in rep.rows} >= set(_ROW_FAMILIES)
    assert rep.l1_arena <= rep.l1_limit and rep.l2_need <= rep.l2_limit
    src = prog.sources["net.c"]
    assert "pond_profile((uint32_t)65536u" in src and "gc_nr < POND_NUM_CORES" in src  # values over the cores
    for seed in (1, 2):
        _check(g, prog, bins, _inputs(g, seed))


DEEPLOY = [
    ("Kernels/Integer/Attention", 64000),
    ("Kernels/Integer/Attention", 8000),
    ("Models/miniMobileNet", 8000),
    ("Models/microLlama/INT8/microLlama1", 8000),
]


@pytest.mark.parametrize("rel, l1", DEEPLOY)
def test_deeploy_cases_equal_golden(rel, l1, tmp_path):
    g, ins, golden = _case(rel)
    prog, rep = emit_cluster_report(g, l1_bytes=l1, input_ranges=_ranges(g, ins))
    assert rep.l1_arena <= l1
    if l1 == 8000 and "microLlama" in rel:  # B (64, 256) int8 is 16 KiB: column tiles
        assert any(r.op == "MatMul" and r.col_tiles > 1 for r in rep.rows)
    cores, big = (8 if l1 == 64000 else 2), "microLlama" in rel  # 3.5 MB of C: -O2 takes 20 s, -O0 a few
    exe = compile_host(
        prog, tmp_path, opt="-O0" if big else "-O2", extra_flags=("-pthread", f"-DPOND_NUM_CORES={cores}")
    )
    _check(g, prog, {cores: exe}, ins, golden)


@pytest.mark.slow
def test_gemv_splits_output_channels_on_the_emulated_cluster(tmp_path):
    from pondlib.codegen.cluster import build_cluster, run_cluster

    g = gemv_graph()
    prog, rep = emit_cluster_report(g, l1_bytes=4000)
    assert [(r.op, r.rows, r.col_tiles > 1) for r in rep.rows if r.op in ("MatMul", "Add")] == [
        ("MatMul", 1, True), ("MatMul", 1, True), ("Add", 2, False)]  # fmt: skip
    ins = _inputs(g)
    sim = GraphSim(g).run(ins, integer=True).output_list()
    runs = {}
    for cores in (1, 8):
        runs[cores] = run = run_cluster(
            build_cluster(prog, tmp_path / f"e{cores}", cores=cores), pack_inputs(g, ins)[None]
        )
        assert np.array_equal(unpack_outputs(g, run.y[0])[0], np.asarray(sim[0]).reshape(2, 64)), cores
    assert runs[8].span < runs[1].span / 4
    per_core = runs[8].instructions
    assert max(per_core) < 1.25 * min(per_core), per_core  # output channels over the cores, not one core's row


@pytest.mark.parametrize("cores", [0, 9, -1])
def test_bad_core_counts_are_refused(cores):
    with pytest.raises(CodegenError, match="cores"):
        emit_cluster(tiled_graph(), cores=cores)


def test_l1_too_small_names_the_op_need_and_limit():
    with pytest.raises(CodegenError) as err:  # the Conv's one row of one channel (192 B); the MatMul's 1 x 1: 168 B
        emit_cluster(tiled_graph(), l1_bytes=180)
    msg = str(err.value)
    assert "Conv" in msg and "whole-tensor tile" in msg and "l1_bytes = 180" in msg and "pass l1_bytes >=" in msg
    with pytest.raises(CodegenError) as err:
        emit_cluster(gemv_graph(), l1_bytes=48)
    assert "MatMul" in str(err.value) and "1 column(s)" in str(err.value)


def test_l2_too_small_names_the_need_limit_and_fix():
    with pytest.raises(CodegenError) as err:
        emit_cluster(tiled_graph(), l2_bytes=100)
    msg = str(err.value)
    assert "L2" in msg and "l2_bytes = 100" in msg and "pass l2_bytes >=" in msg


@settings(max_examples=30, deadline=None)
@given(st.integers(-10, 10), st.integers(-(10**6), 10**7), st.one_of(st.none(), st.integers(-5, 10**7)))
def test_numeric_arguments_are_checked_or_planned_within_limits(cores, l1, l2):
    g = gemv_graph()
    try:
        _, rep = emit_cluster_report(g, cores=cores, l1_bytes=l1, l2_bytes=l2)
    except CodegenError:
        return
    assert 1 <= cores <= 8 and rep.l1_arena <= l1 and rep.l2_need <= rep.l2_limit
    assert all(r.n_tiles * r.tile_rows >= r.rows and r.l1_bytes <= l1 for r in rep.rows)
    assert all(r.col_tiles * r.tile_cols >= r.cols for r in rep.rows)
