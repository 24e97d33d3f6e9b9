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


def tiled_graph() -> OpGraph:
    """One op of each tiled family (element-wise, RequantShift per channel, MatMul + bias, Gemm, norms,
    softmaxes, LUT-free rows) and whole-tensor ops (Conv, Transpose, MaxPool), on a few rows."""
    rng = np.random.default_rng(0)
    w = rng.integers(-8, 8, (16, 12)).astype(np.float32)
    consts = {
        "w": w, "bias": rng.integers(-50, 50, 12).astype(np.float32), "m": np.float32(rng.integers(1, 9, 12)),
        "z": np.float32(3), "gw": rng.integers(-8, 8, (12, 6)).astype(np.float32), "gc": np.float32(np.arange(6)),
        "nw": rng.integers(1, 20, 12).astype(np.float32), "nb": rng.integers(-9, 9, 12).astype(np.float32),
        "cw": rng.integers(-3, 4, (4, 1, 3, 3)).astype(np.float32)
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
        Node("tr", "Transpose", ("d",), ("dt",), {"perm": [1, 0]}),
        Node("rs", "Reshape", ("h3", "shape"), ("img",), {}),
        Node("conv", "Conv", ("img", "cw"), ("cv",), {"group": 1, "pads": [1, 1, 1, 1]}),
        Node("pool", "MaxPool", ("cv",), ("pl",), {"kernel_shape": [2, 2], "strides": [2, 2]}),
    )
    outs = ("p", "g", "dt", "pl")
    shapes = {"p": (10, 12), "g": (10, 6), "dt": (12, 10), "pl": (1, 4, 5, 6)}
    g = OpGraph((TensorInfo("x", (10, 16), "int8"),), tuple(TensorInfo(o, shapes[o], "int64") for o in outs),
                nodes, {**consts, "shape": np.float32([1, 1, 10, 12])})  # fmt: skip
    return g


def _inputs(g: OpGraph, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, info.shape) for info in g.inputs]


def _build(g, tmp, cores_list=(1, 4, 8), **kw):
    prog, rep = emit_cluster_report(g, **kw)
    bins = {c: compile_host(prog, tmp / f"c{c}", extra_flags=("-pthread", f"-DPOND_NUM_CORES={c}")) for c in cores_list}
    return prog, rep, bins


def _check(g, prog, bins, ins, want=None):
    sim = GraphSim(g).run(ins, integer=True).output_list()
    for c, exe in bins.items():
        y = run_host(exe, prog, pack_inputs(g, ins)[None])
        for got, ref in zip(unpack_outputs(g, y[0]), sim):
            assert np.array_equal(got, np.asarray(ref).reshape(got.shape)), (c, got, ref)
    if want is not None:
        for got, ref in zip(sim, want):
            assert np.array_equal(np.asarray(got).reshape(-1), np.asarray(ref).astype(np.int64).reshape(-1))


@pytest.fixture(
    scope="module", params=[(True, 1200), (False, 1200), (True, 64000)], ids=["DB-tiny", "SB-tiny", "DB-64k"]
)
def tiled(request, tmp_path_factory):
    double, l1 = request.param
    g = tiled_graph()
    return g, *_build(g, tmp_path_factory.mktemp("tiled"), double_buffer=double, l1_bytes=l1)


def test_tiled_families_equal_graphsim_on_1_4_8_cores(tiled):
    g, prog, rep, bins = tiled
    modes = {r.op: (r.mode, r.n_tiles, r.buffering) for r in rep.rows}
    for op in ("MatMul", "Add", "RequantShift", "iSoftmax", "iLayerNorm", "iRMSNorm", "ITAMax", "Gemm", "Mul"):
        assert modes[op][0] == "rows"
    for op in ("Conv", "Transpose", "MaxPool"):
        assert modes[op][:2] == ("whole", 1)
    assert rep.l1_arena <= rep.l1_limit and rep.l2_need <= rep.l2_limit
    assert "pond_profile((uint32_t)65536u" in prog.sources["net.c"]
    for seed in (1, 2):
        _check(g, prog, bins, _inputs(g, seed))


DEEPLOY = ["Kernels/Integer/Attention", "Models/miniMobileNet", "Models/microLlama/INT8/microLlama1"]


@pytest.mark.parametrize("l1", [64000, 8000])
@pytest.mark.parametrize("rel", DEEPLOY)
def test_deeploy_cases_equal_golden_on_8_cores(rel, l1, tmp_path):
    g, ins, golden = _case(rel)
    try:
        prog, rep, bins = _build(g, tmp_path, (8,), l1_bytes=l1, input_ranges=_ranges(g, ins))
    except CodegenError as err:  # known limit: MatMul's B is one whole L1 operand (no output-channel tiles yet)
        assert l1 == 8000 and "MatMul" in str(err) and "pass l1_bytes >=" in str(err)
        pytest.xfail(str(err)[:200])
    assert rep.l1_arena <= l1
    _check(g, prog, bins, ins, golden)


@pytest.mark.parametrize("cores", [0, 9, -1])
def test_bad_core_counts_are_refused(cores):
    with pytest.raises(CodegenError, match="cores"):
        emit_cluster(tiled_graph(), cores=cores)


def test_l1_too_small_names_the_op_need_and_limit():
    with pytest.raises(CodegenError) as err:
        emit_cluster(tiled_graph(), l1_bytes=200)
    msg = str(err.value)
    assert "MatMul" in msg and "l1_bytes = 200" in msg and "pass l1_bytes >=" in msg


def test_l2_too_small_names_the_need_limit_and_fix():
    with pytest.raises(CodegenError) as err:
        emit_cluster(tiled_graph(), l2_bytes=100)
    msg = str(err.value)
    assert "L2" in msg and "l2_bytes = 100" in msg and "pass l2_bytes >=" in msg


@settings(max_examples=30, deadline=None)
@given(st.integers(-10, 10), st.integers(-(10**6), 10**7), st.one_of(st.none(), st.integers(-5, 10**7)))
def test_numeric_arguments_are_checked_or_planned_within_limits(cores, l1, l2):
    g = tiled_graph()
    try:
        _, rep = emit_cluster_report(g, cores=cores, l1_bytes=l1, l2_bytes=l2)
    except CodegenError:
        return
    assert 1 <= cores <= 8 and rep.l1_arena <= l1 and rep.l2_need <= rep.l2_limit
    assert all(r.n_tiles * r.tile_rows >= r.rows and r.l1_bytes <= l1 for r in rep.rows)
