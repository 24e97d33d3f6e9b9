"""Conv and pools of the cluster graph C tiled by output rows with input halos (graph_codegen_cluster_conv), and
RequantShifts fused into Conv / Add stores: equal to GraphSim / Deeploy's goldens bit for bit on the host
(pthreads) and on the emulated RV32 cluster, for 1, 2 and 8 cores, single and double buffered."""

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
_HALO = ("c1", "c3", "dw", "mp", "ap", "ap0")


def halo_graph() -> OpGraph:
    """Every halo-tiled family: a Conv with stride 2, padding and a bias, its per-channel RequantShift fused; a
    depthwise Conv (group 8) with dilation 2 and uneven pads, its scalar RequantShift fused; MaxPool (stride 2,
    pads) and AveragePools with and without count_include_pad; an Add of two pools with a fused per-channel
    RequantShift; a 1-D Conv (stride 2, pads) and a 1-D MaxPool."""
    rng = np.random.default_rng(7)
    consts = {
        "w1": rng.integers(-8, 8, (8, 1, 3, 3)).astype(np.float32), "b1": rng.integers(-99, 99, 8).astype(np.float32),
        "m1": np.float32(rng.integers(1, 9, 8)), "z": np.float32(3),
        "wd": rng.integers(-8, 8, (8, 1, 3, 3)).astype(np.float32), "m2": np.float32(5),
        "m3": np.float32(rng.integers(1, 9, 8)), "w3": rng.integers(-8, 8, (6, 4, 5)).astype(np.float32),
    }  # fmt: skip
    nodes = (
        Node("c1", "Conv", ("x", "w1", "b1"), ("h1",), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
        Node("rq1", "RequantShift", ("h1", "m1", "z"), ("a1",), _RQ),
        Node("dw", "Conv", ("a1", "wd"), ("h2",), {"group": 8, "pads": [2, 1, 2, 1], "dilations": [2, 1]}),
        Node("rq2", "RequantShift", ("h2", "m2", "z"), ("a2",), _RQ),
        Node("mp", "MaxPool", ("a2",), ("p1",), {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 0]}),
        Node(
            "ap",
            "AveragePool",
            ("a2",),
            ("p2",),
            {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
        ),  # fmt: skip
        Node("ap0", "AveragePool", ("a2",), ("p3",), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
        Node("add", "Add", ("p2", "p3"), ("s",)),
        Node("rq3", "RequantShift", ("s", "m3", "z"), ("a3",), _RQ),
        Node("c3", "Conv", ("x1", "w3"), ("h3",), {"strides": [2], "pads": [2, 2]}),
        Node("mp1", "MaxPool", ("x1",), ("p4",), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    )
    outs = {"p1": (1, 8, 4, 4), "a3": (1, 8, 7, 5), "h3": (1, 6, 10), "p4": (1, 4, 10)}
    ins = (TensorInfo("x", (1, 1, 13, 9), "int8"), TensorInfo("x1", (1, 4, 20), "int8"))
    return OpGraph(ins, tuple(TensorInfo(o, s, "int64") for o, s in outs.items()), nodes, consts)


def channel_graph() -> OpGraph:
    """A Conv (stride 2, pads, a bias) whose 24 x 8 x 3 x 3 weights (1728 B) take output-channel tiles in a small
    L1, its per-channel RequantShift fused."""
    rng = np.random.default_rng(4)
    consts = {
        "w": rng.integers(-8, 8, (24, 8, 3, 3)).astype(np.float32), "b": rng.integers(-99, 99, 24).astype(np.float32),
        "m": np.float32(rng.integers(1, 9, 24)), "z": np.float32(2),
    }  # fmt: skip
    nodes = (
        Node("c", "Conv", ("x", "w", "b"), ("h",), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
        Node("rq", "RequantShift", ("h", "m", "z"), ("y",), _RQ),
    )
    return OpGraph((TensorInfo("x", (1, 8, 6, 6), "int8"),), (TensorInfo("y", (1, 24, 3, 3), "int64"),), nodes, consts)


def separable_graph() -> OpGraph:
    """Whole-tensor ops that act on every index of their leading dims alike, tiled by those rows: Concat (axis 2),
    Transpose (perm 0 1 3 2), Slice (axes 2, 3), Pad (dims 2, 3), Gather (axis 3), GlobalAveragePool and
    ReduceSum (axes 2, 3, keepdims 0) of the padded tensor."""
    consts = {
        "st": np.array([1, 0]), "en": np.array([7, 3]), "ax": np.array([2, 3]), "gi": np.array([2, 0, 1, 10, 5]),
        "pd": np.array([0, 0, 3, 4, 0, 0, 3, 4]), "rax": np.array([2, 3]),
    }  # fmt: skip
    nodes = (
        Node("cat", "Concat", ("x", "x2"), ("c",), {"axis": 2}),
        Node("tr", "Transpose", ("c",), ("t",), {"perm": [0, 1, 3, 2]}),
        Node("sl", "Slice", ("t", "st", "en", "ax"), ("s",)),
        Node("pad", "Pad", ("s", "pd"), ("pp",), {"mode": "constant"}),
        Node("ga", "Gather", ("pp", "gi"), ("gg",), {"axis": 3}),
        Node("gap", "GlobalAveragePool", ("pp",), ("o1",)),
        Node("rs", "ReduceSum", ("pp", "rax"), ("o2",), {"keepdims": 0}),
    )
    ins = (TensorInfo("x", (2, 3, 5, 8), "int8"), TensorInfo("x2", (2, 3, 4, 8), "int8"))
    outs = {"gg": (2, 3, 12, 5), "o1": (2, 3, 1, 1), "o2": (2, 3)}
    return OpGraph(ins, tuple(TensorInfo(o, sh, "int64") for o, sh in outs.items()), nodes, consts)


def _inputs(g: OpGraph, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, info.shape) for info in g.inputs]


def _equal(g: OpGraph, y: np.ndarray, want: list) -> bool:
    got = unpack_outputs(g, y)
    return all(np.array_equal(a.reshape(-1), np.asarray(w).astype(np.int64).reshape(-1)) for a, w in zip(got, want))


# (double buffered, L1 bytes, host core counts): every halo op but the 1-D MaxPool takes several tiles single
# buffered at 360 B; double buffered at 560 B the first Conv and the depthwise one do (the others fit whole).
# The emulated cluster runs SB-360 on 1 core, DB-560 on 8 (and the channel-tiled Conv on 2).
_CONFIGS = {"SB-360": (False, 360, (8,)), "DB-560": (True, 560, (2,))}


@pytest.fixture(scope="module", params=list(_CONFIGS))
def halo(request, tmp_path_factory):
    double, l1, cores = _CONFIGS[request.param]
    g = halo_graph()
    prog, rep = emit_cluster_report(g, double_buffer=double, l1_bytes=l1)
    tmp = tmp_path_factory.mktemp("halo")
    bins = {c: compile_host(prog, tmp / f"c{c}", extra_flags=("-pthread", f"-DPOND_NUM_CORES={c}")) for c in cores}
    return g, prog, rep, bins


def test_halo_tiles_equal_graphsim_on_the_host(halo):
    g, prog, rep, bins = halo
    rows = {r.name: r for r in rep.rows}
    assert rep.extra["fused"] == {"c1": "rq1", "dw": "rq2", "add": "rq3"} and rep.l1_arena <= rep.l1_limit
    tiled = {n for n, r in rows.items() if r.mode == "halo"}
    single = rep.l1_limit == 360
    assert tiled == ({"c1", "c3", "dw", "mp", "ap", "ap0"} if single else {"c1", "dw"}), tiled
    for name in _HALO + ("mp1",):
        r = rows[name]
        assert r.n_tiles == -(-r.rows // r.tile_rows) and r.l1_bytes <= rep.l1_limit, r
        assert (r.n_tiles > 1) == (r.mode == "halo") and r.buffering == ("DB" if r.mode == "halo" and not single
                                                                         else "SB"), r  # fmt: skip
    assert rows["c1"].in_rows == 2 * rows["c1"].tile_rows + 1  # stride 2, kernel 3: the rows with their halo
    assert rows["dw"].in_rows == rows["dw"].tile_rows + 4  # dilation 2: a kernel extent of 5 rows
    for seed in (1, 2):
        ins = _inputs(g, seed)
        want = GraphSim(g).run(ins, integer=True).output_list()
        for c, exe in bins.items():
            assert _equal(g, run_host(exe, prog, pack_inputs(g, ins)[None])[0], want), (c, seed)


def test_halo_dma_bytes_count_the_halo_rows_exactly():
    """Conv 3x3, pad 1, on a 1 x 1 x 8 x 4 input (int32 in x): two tiles of 4 output rows read input rows 0..4
    and 3..7 (5 rows each: rows 3 and 4 twice), 2 x 5 x 4 x 4 B in; out 2 channels x 8 x 4 int16 = 128 B; per
    tile one 2-D transfer in (its rows of every plane) and one out (its rows of both channels)."""
    conv = Node("c", "Conv", ("x", "w"), ("y",), {"pads": [1, 1, 1, 1]})
    g = OpGraph((TensorInfo("x", (1, 1, 8, 4), "int8"),), (TensorInfo("y", (1, 2, 8, 4), "int64"),), (conv,),
                {"w": np.ones((2, 1, 3, 3))})  # fmt: skip
    _, rep = emit_cluster_report(g, cores=2, l1_bytes=200, double_buffer=False)
    r = rep.rows[0]
    assert (r.mode, r.n_tiles, r.tile_rows, r.in_rows) == ("halo", 2, 4, 6)
    assert r.dma_bytes == 2 * 5 * 4 * 4 + 128 and r.dma_transfers == 2 + 2 and r.l1_bytes == 6 * 16 + 64
    _, whole = emit_cluster_report(g, cores=2, l1_bytes=400, double_buffer=False)
    assert (whole.rows[0].mode, whole.rows[0].dma_bytes, whole.rows[0].dma_transfers) == ("whole", 128 + 128, 2)
    _, db = emit_cluster_report(g, cores=2, l1_bytes=200, double_buffer=True)  # 2 x 4 input rows + 2 output rows
    r = db.rows[0]
    assert (r.buffering, r.tile_rows, r.in_rows, r.n_tiles) == ("DB", 2, 4, 4)
    assert r.dma_bytes == (3 + 4 + 4 + 3) * 16 + 128  # border tiles: rows 0..2 and 5..7; inner ones 4 rows


def test_one_output_row_too_big_is_refused_naming_the_op_need_and_limit():
    with pytest.raises(CodegenError) as err:
        emit_cluster(halo_graph(), l1_bytes=300, double_buffer=False)
    msg = str(err.value)
    assert "'dw'" in msg and "Conv" in msg and "one output row" in msg and "312 B" in msg and "l1_bytes = 300" in msg
    assert "pass l1_bytes >= 312" in msg
    pool = OpGraph((TensorInfo("x", (1, 16, 20, 5), "int8"),), (TensorInfo("y", (1, 16, 1, 1), "int64"),),
                   (Node("p", "MaxPool", ("x",), ("y",), {"kernel_shape": [20, 5], "strides": [20, 5]}),))  # fmt: skip
    with pytest.raises(CodegenError) as err:  # its one output row reads all 20 input rows of 16 planes
        emit_cluster(pool, l1_bytes=4000)
    assert "MaxPool" in str(err.value) and "20 input row(s)" in str(err.value) and "l1_bytes = 4000" in str(err.value)


@settings(max_examples=12, deadline=None)
@given(st.integers(-100, 3000), st.booleans())
def test_l1_sizes_are_refused_or_planned_within_the_limit(l1, double):
    g = halo_graph()
    try:
        _, rep = emit_cluster_report(g, l1_bytes=l1, double_buffer=double)
    except CodegenError as err:
        assert "l1_bytes" in str(err)
        return
    assert rep.l1_arena <= l1
    for r in rep.rows:
        assert r.l1_bytes <= l1 and r.n_tiles * r.tile_rows >= r.rows
        if r.op in ("Conv", "MaxPool", "AveragePool"):
            assert r.mode == ("halo" if r.n_tiles > 1 else "whole") and r.in_rows >= 1


@pytest.mark.parametrize("l1, double, cores", [(700, True, 8), (400, False, 0)])
def test_separable_whole_tensor_ops_are_row_tiled_and_equal_graphsim(l1, double, cores, tmp_path):
    g = separable_graph()
    prog, rep = emit_cluster_report(g, l1_bytes=l1, double_buffer=double)
    rows = {r.name: r for r in rep.rows}
    tiled = {n: r.rows for n, r in rows.items() if r.mode == "rows"}  # those that do not fit whole
    want = {"cat": 6, "tr": 6, "sl": 6, "pad": 6, "ga": 72, "gap": 6, "rs": 6}  # rows: the dims before the axes
    assert tiled == ({k: v for k, v in want.items() if k != "sl"} if double else want)
    assert all(rows[n].n_tiles > 1 for n in tiled) and rows["cat"].n_tiles == 6 and rep.l1_arena <= l1
    _, whole = emit_cluster_report(g, l1_bytes=64000)
    assert all(r.mode == "whole" for r in whole.rows)
    if not double:
        return  # the plan only: the double-buffered program runs
    exe = compile_host(prog, tmp_path, extra_flags=("-pthread", f"-DPOND_NUM_CORES={cores}"))
    for seed in (1, 2):
        ins = _inputs(g, seed)
        want = GraphSim(g).run(ins, integer=True).output_list()
        assert _equal(g, run_host(exe, prog, pack_inputs(g, ins)[None])[0], want), seed


@pytest.mark.parametrize("l1, double, col_tiles", [(1700, True, 8), (2600, True, 3), (3000, False, 1)])
def test_output_channel_tiles_equal_graphsim_on_the_host(l1, double, col_tiles, tmp_path):
    g = channel_graph()
    prog, rep = emit_cluster_report(g, l1_bytes=l1, double_buffer=double)
    r = rep.rows[0]
    assert (r.mode, r.col_tiles, r.fused) == ("halo", col_tiles, "rq") and r.l1_bytes <= l1
    assert r.n_tiles == r.col_tiles * -(-r.rows // r.tile_rows)
    if col_tiles > 1:  # each tile DMAs its channels' weights: all of them once per row tile
        assert r.tile_cols == 24 // col_tiles and r.cols == 24
        assert r.dma_bytes > 1728 * (r.n_tiles // col_tiles) + col_tiles * 8 * 36 * 4
    if col_tiles != 8:
        return  # the plan only: the 8-tile program runs here and (2 cores) on the emulated cluster
    ins = _inputs(g)
    want = GraphSim(g).run(ins, integer=True).output_list()
    for c in (1, 8):
        exe = compile_host(prog, tmp_path / f"c{c}", extra_flags=("-pthread", f"-DPOND_NUM_CORES={c}"))
        assert _equal(g, run_host(exe, prog, pack_inputs(g, ins)[None])[0], want), c


@pytest.mark.parametrize(
    "rel, l1, double",
    [("Models/miniMobileNet", 3000, True), ("Models/miniMobileNetv2", 1500, False),
     ("Models/MLPerf/ImageClassification", 8000, True)],
)  # fmt: skip
def test_cnns_tiled_equal_golden_on_the_host(rel, l1, double, tmp_path):
    g, ins, golden = _case(rel)
    prog, rep = emit_cluster_report(g, l1_bytes=l1, double_buffer=double, input_ranges=_ranges(g, ins))
    assert any(r.mode == "halo" and r.n_tiles > 1 for r in rep.rows) and rep.l1_arena <= l1
    assert all(r.fused for r in rep.rows if r.op == "Conv")  # every Conv's RequantShift in its store
    if "v2" in rel:
        assert any(r.op == "Add" and r.fused for r in rep.rows)  # the residual Add's RequantShift too
    if "Image" in rel:  # 64 x 64 x 3 x 3 weights (36 KiB): output-channel tiles
        assert any(r.op == "Conv" and r.col_tiles > 1 for r in rep.rows)
    exe = compile_host(prog, tmp_path, extra_flags=("-pthread", "-DPOND_NUM_CORES=2"))
    y = run_host(exe, prog, pack_inputs(g, ins)[None])[0]
    assert _equal(g, y, golden) and _equal(g, y, GraphSim(g).run(ins, integer=True).output_list())


@pytest.fixture(scope="module")
def kws():
    g, ins, golden = _case("Models/MLPerf/KeywordSpotting")
    reps = {
        db: emit_cluster_report(g, l1_bytes=8000, double_buffer=db, input_ranges=_ranges(g, ins))
        for db in (True, False)
    }
    return g, ins, golden, reps


def test_keyword_spotting_at_l1_8000_tiles_every_conv(kws, tmp_path):
    g, ins, golden, reps = kws
    for db, (_, rep) in reps.items():
        convs = [r for r in rep.rows if r.op == "Conv"]
        assert len(convs) == 9 and all(r.mode == "halo" and r.n_tiles >= 2 and r.fused for r in convs), rep.rows
        assert rep.l1_arena <= 8000 and {r.buffering for r in convs} == {"DB" if db else "SB"}
    prog = reps[False][0]
    exe = compile_host(prog, tmp_path, extra_flags=("-pthread", "-DPOND_NUM_CORES=1"))
    assert _equal(g, run_host(exe, prog, pack_inputs(g, ins)[None])[0], golden)


@pytest.mark.slow
def test_keyword_spotting_at_l1_8000_on_the_emulated_cluster(kws, tmp_path):
    """Double buffered on 8 cores (7 s; single buffered it runs on the host above: 2 cores emulated take 13 s)."""
    from pondlib.codegen.cluster import build_cluster, run_cluster

    g, ins, golden, reps = kws
    prog = reps[True][0]
    run = run_cluster(build_cluster(prog, tmp_path, cores=8, l1_bytes=8000), pack_inputs(g, ins)[None])
    assert _equal(g, run.y[0], golden)
    assert min(run.instructions) > 0.5 * max(run.instructions), run.instructions  # every core computes


@pytest.mark.slow
@pytest.mark.parametrize(
    "graph, double, l1, cores",
    [
        (halo_graph, False, 360, 1),
        (halo_graph, True, 560, 8),
        (channel_graph, True, 1700, 2),
    ],
)
def test_halo_and_channel_tiles_on_the_emulated_cluster(graph, double, l1, cores, tmp_path):
    from pondlib.codegen.cluster import build_cluster, run_cluster

    g = graph()
    prog = emit_cluster(g, double_buffer=double, l1_bytes=l1)
    ins = _inputs(g, 3)
    run = run_cluster(build_cluster(prog, tmp_path, cores=cores, l1_bytes=l1), pack_inputs(g, ins)[None])
    assert _equal(g, run.y[0], GraphSim(g).run(ins, integer=True).output_list())
