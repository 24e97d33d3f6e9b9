"""Siracusa's integer graphs as C (graph_codegen.emit_graph) equal GraphSim bit for bit, on the host and RV32."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.codegen import compile_host, run_host
from pondlib.codegen.cross import build_cross, run_cross
from pondlib.devices.siracusa.graph_codegen import buffer_names, emit_graph, pack_inputs, unpack_outputs
from pondlib.devices.siracusa.graphsim import GraphSim
from pondlib.errors import CodegenError
from pondlib.graph.opgraph import Node, OpGraph, TensorInfo
from pondlib.interop.deeploy import load_case

DATA = Path(__file__).resolve().parents[2] / "data" / "deeploy"
SMALL_CASES = [
    "Kernels/Integer/Attention",
    "Kernels/Integer/Softmax/Regular",
    "Kernels/Integer/RMSNorm",
    "Kernels/Integer/Hardswish/Regular",
    "Kernels/Integer/Hardswish/Regular_RQ",
    "Kernels/Integer/TrueIntegerDiv",
    "Models/microLlama/INT8/microLlama1",
    # the cases of the ops added later: 1-D Conv, Pad, ReduceMean, iNoNorm, MaxPool, int8 inputs in float32
    "Kernels/Integer/Conv/Regular_1D_RQ",
    "Kernels/Integer/MatMul/Regular",
    "Kernels/Integer/Pad/Regular_1D",
    "Kernels/Integer/Pad/Regular_2D",
    "Kernels/Integer/ReduceMean",
    "Kernels/Integer/iNoNorm",
    "Models/CNN_Linear1",
    "Models/CNN_Linear2",
    "Models/MLPerf/KeywordSpotting",
    "Models/miniMobileNet",
]
CROSS_CASES = ["Kernels/Integer/Attention", "Models/microLlama/INT8/microLlama1", "Models/miniMobileNet"]
_TYPES = ((-(2**7), 2**7 - 1), (0, 2**8 - 1), (-(2**15), 2**15 - 1), (0, 2**16 - 1), (-(2**31), 2**31 - 1))

_RQ8 = {"div": 16.0, "n_levels_out": 256.0, "signed": 1.0}


def _rq(name, src, out, mul="m1", add="a0", **attrs):
    return Node(name, "RequantShift", (src, mul, add), (out,), {**_RQ8, **attrs})


def every_op_graph() -> OpGraph:
    """Every op with C at least once: broadcasts, batches, 1-D MatMul, groups, pads, an int64 accumulator."""
    rng = np.random.default_rng(7)
    c = {
        "m4": rng.integers(1, 40, 4).astype(np.float32), "a4": rng.integers(-50, 50, 4).astype(np.float32),
        "m1": np.float32([3]), "a0": np.float32([0]),
        "W": rng.integers(-128, 128, (8, 6)), "v8": rng.integers(-128, 128, 8), "b6": rng.integers(-999, 999, 6),
        "shape24": np.int64([2, 24]), "ax0": np.int64([0]), "shape4d": np.int64([2, 4, 2, 4]),
        "cmin": np.int64(-300), "cmax": np.int64(2000),
        "Wg": rng.integers(-128, 128, (5, 32)), "bg": rng.integers(-500, 500, 5),
        "Wc": rng.integers(-128, 128, (6, 2, 3, 3)), "bc": rng.integers(-100, 100, 6),
        "Wd": rng.integers(-128, 128, (4, 1, 3, 3)),
        "W64": rng.integers(-30000, 30000, (3, 2)), "wn": rng.integers(-128, 128, 8),
        "w6": rng.integers(-128, 128, 6), "bn": rng.integers(-99, 99, 8),
        "W1": rng.integers(-128, 128, (3, 4, 3)), "bc3": rng.integers(-99, 99, 3),
        "ax1": np.int64([1]), "d6": rng.integers(1, 9, 6) * ([1, -1] * 3),
        "st": np.int64([1, -1]), "en": np.int64([3, -9]), "sax": np.int64([1, 2]), "ssp": np.int64([1, -2]),
        "gi": np.int64([[3, 0], [1, 1]]), "gs": np.int64(-1), "pp": np.int64([0, 1, 2, 0, 0, 1]), "pv": np.int64(7),
        "pr": np.int64([0, 1, 2, 0, 1, 2]), "wnn": rng.integers(-60, 60, 8), "bnn": rng.integers(-100, 100, 8),
        "gm": np.int64(3), "ga": np.int64(-5), "gsh": np.int64(12), "tab": rng.integers(-128, 128, 256),
        "lut11": rng.integers(-9, 9, 11), "Wt": rng.integers(-128, 128, (4, 5)),
    }  # fmt: skip
    n = [
        _rq("rq0", "x", "r0", "m4", "a4", div=16.0),
        _rq("rqu", "x", "ru", "m1", "a0", div=1.0, signed=0.0),
        Node("mm", "MatMul", ("r0", "W"), ("mm",)),
        Node("tr", "Transpose", ("r0",), ("r0t",), {"perm": [0, 2, 1]}),
        Node("mm2", "MatMul", ("r0", "r0t"), ("mm2",)),
        Node("mv", "MatMul", ("z", "v8"), ("mv",)),
        Node("add", "Add", ("mm", "b6"), ("add",)),
        Node("sub", "Sub", ("x", "z"), ("sub",)),
        Node("mul", "Mul", ("r0", "z"), ("mul",)),
        Node("relu", "Relu", ("sub",), ("relu",)),
        Node("clip", "Clip", ("mul", "cmin", "cmax"), ("clip",)),
        Node("rs", "Reshape", ("add", "shape24"), ("rs",)),
        Node("un", "Unsqueeze", ("rs", "ax0"), ("un",)),
        Node("sq", "Squeeze", ("un", "ax0"), ("sq",)),
        Node("cat", "Concat", ("r0", "ru", "sub"), ("cat",), {"axis": -1}),
        Node("fl", "Flatten", ("r0",), ("fl",), {"axis": 1}),
        Node("gemm", "Gemm", ("fl", "Wg", "bg"), ("gemm",), {"transB": 1}),
        Node("r4", "Reshape", ("r0", "shape4d"), ("r4",)),
        Node("conv", "Conv", ("r4", "Wc", "bc"), ("conv",),
             {"group": 2, "pads": [1, 1, 1, 1], "strides": [2, 1], "dilations": [1, 2], "kernel_shape": [3, 3]}),
        Node("dw", "Conv", ("r4", "Wd"), ("dw",), {"group": 4, "pads": [1, 0, 1, 2], "kernel_shape": [3, 3]}),
        _rq("rq2", "mm2", "s8", div=2.0**10),
        Node("smax", "iSoftmax", ("s8",), ("smax",), {"coeffA": 1, "coeffB": 86, "coeffC": 3888, "log2": 64,
                                                      "n_levels": 256}),
        Node("ita", "ITAMax", ("s8",), ("ita",), {"n_levels": 256}),
        _rq("rq3", "add", "h8", div=2.0**8),
        Node("rms", "iRMSNorm", ("h8", "w6"), ("rms",), {"D": 2**10, "n_levels": 256}),
        Node("ln", "iLayerNorm", ("r0", "wn", "bn"), ("ln",), {"D": 2**8, "n_levels": 256}),
        Node("hs", "iHardswish", ("h8",), ("hs",), {"one_over_six": 42, "six": 244, "three": 122}),
        Node("gelu", "iGELU", ("r0",), ("gelu",), {"b": -300, "one": 5000}),
        Node("tdiv", "TrueIntegerDiv", ("h8",), ("tdiv",), {"Delta": 16384, "eps": 1, "eta": 200000, "y": 3}),
        Node("idiv", "IntegerDiv", ("r0", "ru"), ("idiv",), {"Delta": 64, "eps": 1, "eta": 3}),
        Node("big", "MatMul", ("w32", "W64"), ("big",)),
        # pools (2-D and 1-D, ceil mode, count_include_pad both ways), 1-D Conv, reductions
        Node("mp", "MaxPool", ("r4",), ("mp",), {"kernel_shape": [2, 2], "strides": [1, 2], "pads": [1, 0, 0, 1],
                                                 "ceil_mode": 1}),
        Node("ap", "AveragePool", ("r4",), ("ap",), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                                                     "count_include_pad": 1}),
        Node("ap2", "AveragePool", ("r4",), ("ap2",), {"kernel_shape": [2, 3], "strides": [2, 1],
                                                       "pads": [0, 1, 1, 0]}),
        Node("mp1", "MaxPool", ("r0",), ("mp1",), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
        Node("c1", "Conv", ("r0", "W1", "bc3"), ("c1",), {"pads": [1, 2], "strides": [2], "dilations": [2]}),
        Node("gap", "GlobalAveragePool", ("r4",), ("gap",)),
        Node("gmp", "GlobalMaxPool", ("r4",), ("gmp",)),
        Node("rsum", "ReduceSum", ("x", "ax1"), ("rsum",), {"keepdims": 0}),
        Node("rmean", "ReduceMean", ("sub",), ("rmean",), {"axes": [0, 2]}),
        Node("imean", "IntegerMean", ("mm",), ("imean",), {"axes": [-1], "keepdims": 1}),
        Node("imean2", "IntegerMean", ("x",), ("imean2",), {"axes": [1], "keepdims": 0}),
        # data movement: affine maps (strided copies) and tables
        Node("slc", "Slice", ("x", "st", "en", "sax", "ssp"), ("slc",)),
        Node("gth", "Gather", ("r0", "gi"), ("gth",), {"axis": 1}),
        Node("gth2", "Gather", ("r0", "gs"), ("gth2",), {"axis": 2}),
        Node("pad", "Pad", ("r0", "pp", "pv"), ("pad",)),
        Node("padr", "Pad", ("x", "pr"), ("padr",), {"mode": "reflect"}),
        # arithmetic: Div (plain and Deeploy's), Floor/Ceil/Round, Clip variants, Gemm flags
        Node("div", "Div", ("mm", "d6"), ("div",)),
        Node("divd", "Div", ("r0", "ru"), ("divd",), {"Delta": 64, "eps": 1, "eta": 3}),
        Node("flo", "Floor", ("r0",), ("flo",)),
        Node("cei", "Ceil", ("flo",), ("cei",)),
        Node("rnd", "Round", ("cei",), ("rnd",)),
        Node("clip2", "Clip", ("mul", "", "cmax"), ("clip2",)),
        Node("clip3", "Clip", ("x",), ("clip3",), {"max": 50.0}),
        Node("clip4", "Clip", ("x", "cmin"), ("clip4",)),
        Node("gemm2", "Gemm", ("fl", "Wg", "bg"), ("gemm2",), {"transB": 1, "alpha": 2.0, "beta": -3.0}),
        Node("gemm3", "Gemm", ("z", "Wt"), ("gemm3",), {"transA": 1}),
        # the rest of Deeploy's dialect, and the QDQ lookup table
        Node("nonorm", "iNoNorm", ("r0", "wnn", "bnn"), ("nonorm",), {"D": 2**8, "mul": 3, "n_levels": 256}),
        Node("rqhs", "RequantizediHardswish", ("h8",), ("rqhs",), {"one_over_six": 42, "six": 244, "three": 122,
                                                                   "mul": 5, "add": -7, "shift": 14}),
        Node("rqgelu", "RequantizedGELU", ("r0", "gm", "ga", "gsh"), ("rqgelu",), {"b": -300, "one": 5000}),
        Node("pmax", "ITAPartialMax", ("s8",), ("pmax",), {"n_levels": 256, "group_width": 2}),
        Node("lut", "LUT", ("r0", "tab"), ("lut",), {"lo": -128}),
        Node("zz", "Sub", ("x", "x"), ("zz",)),
        Node("lutc", "LUT", ("zz", "lut11"), ("lutc",), {"lo": -5}),
    ]  # fmt: skip
    outs = ["mv", "relu", "clip", "sq", "cat", "gemm", "conv", "dw", "smax", "ita", "rms", "ln", "hs", "gelu",
            "tdiv", "idiv", "big", "mp", "ap", "ap2", "mp1", "c1", "gap", "gmp", "rsum", "rmean", "imean", "imean2",
            "slc", "gth", "gth2", "pad", "padr", "div", "divd", "rnd", "clip2", "clip3", "clip4", "gemm2", "gemm3",
            "nonorm", "rqhs", "rqgelu", "pmax", "lut", "lutc"]  # fmt: skip
    return OpGraph(
        inputs=(
            TensorInfo("x", (2, 4, 8), "int8"),
            TensorInfo("z", (4, 8), "int8"),
            TensorInfo("w32", (2, 3), "int32"),
        ),
        outputs=tuple(TensorInfo(o, None, "int64") for o in outs),
        nodes=tuple(n),
        constants=c,
        name="every_op",
    )


def _with_shapes(g: OpGraph) -> OpGraph:
    """The graph with its output shapes declared (from one GraphSim run)."""
    run = GraphSim(g).run(_samples(g, np.random.default_rng(0), 1)[0], integer=True)
    outs = tuple(TensorInfo(o.name, run.outputs[o.name].shape, "int64") for o in g.outputs)
    return OpGraph(g.inputs, outs, g.nodes, g.constants, name=g.name, opset=g.opset)


def _samples(g: OpGraph, rng, count: int) -> list[list[np.ndarray]]:
    lims = {"int8": (-128, 128), "int32": (-(2**31), 2**31)}
    return [[rng.integers(*lims[i.dtype], i.shape) for i in g.inputs] for _ in range(count)]


@pytest.fixture(scope="module")
def every_op(tmp_path_factory):
    """The every-op graph emitted (recording and not), compiled once; GraphSim's runs of 6 random samples."""
    g = _with_shapes(every_op_graph())
    samples = _samples(g, np.random.default_rng(1), 6)
    sims = [GraphSim(g).run(s, integer=True) for s in samples]
    x = np.stack([pack_inputs(g, s) for s in samples])[:, None, :]  # (B, T=1, N_IN)
    progs = {rec: emit_graph(g, name="every_op", record=rec) for rec in (False, True)}
    exes = {rec: compile_host(p, tmp_path_factory.mktemp(f"rec{int(rec)}")) for rec, p in progs.items()}
    return g, sims, x, progs, exes


def test_every_op_outputs_equal_graphsim(every_op):
    g, sims, x, progs, exes = every_op
    for rec in (False, True):
        y, _ = run_host(exes[rec], progs[rec], x)
        for b, sim in enumerate(sims):
            got = unpack_outputs(g, y[b, 0])
            for name, arr in zip(g.output_names, got):
                assert np.array_equal(arr, sim.outputs[name]), (rec, b, name)


def test_every_op_records_every_tensor(every_op):
    g, sims, x, progs, exes = every_op
    _, rec = run_host(exes[True], progs[True], x, record=True)
    names = buffer_names(g)
    checked = 0
    for t, cname in names.items():
        if t in g.input_names:
            continue
        for b, sim in enumerate(sims):
            assert np.array_equal(rec[cname][b, 0], sim.tensors[t].reshape(-1)), (t, b)
        checked += 1
    assert checked == len(g.nodes)


def test_types_follow_the_range_analysis(every_op):
    g, _, _, progs, _ = every_op
    prog = progs[True]
    types = {s.name: s.ctype for s in prog.io.states}
    names = buffer_names(g)
    assert types[names["r0"]] == "int8_t" and types[names["ru"]] == "uint8_t" and types[names["smax"]] == "uint8_t"
    assert types[names["big"]] == "int64_t"  # int32 inputs times 2^15 weights: the int64 accumulator
    src = prog.sources["every_op.c"]
    assert "int64_t acc" in src and "int32_t acc" in src
    assert prog.io.in_ctype == "int32_t" and prog.io.out_ctype == "int64_t"
    assert prog.io.n_in == 2 * 4 * 8 + 4 * 8 + 2 * 3
    # not recording: reshapes alias their input and the arena shares the scratch buffers
    flat = progs[False].memory
    assert flat.state_bytes == 0 and flat.scratch_bytes < flat.scratch_unshared_bytes


def _ranges(g: OpGraph, ins) -> dict:
    """Input ranges as Deeploy infers its types: the narrowest integer type holding each input's values."""
    out = {}
    for info, a in zip(g.inputs, ins):
        lo, hi = int(np.min(a)), int(np.max(a))
        out[info.name] = next(t for t in _TYPES if t[0] <= lo and hi <= t[1])
    return out


def _case(rel: str):
    folder = DATA / rel
    if not (folder / "network.onnx").exists():
        pytest.skip(f"{rel} is not in tests/data/deeploy")
    return load_case(folder)


@pytest.mark.parametrize("rel", SMALL_CASES)
def test_deeploy_case_equals_golden_on_host(rel, tmp_path):
    g, ins, golden = _case(rel)
    run = GraphSim(g).run(ins, integer=True)
    prog = emit_graph(g, record=True, input_ranges=_ranges(g, ins))
    y, rec = run_host(compile_host(prog, tmp_path), prog, pack_inputs(g, ins)[None, None], record=True)
    got = unpack_outputs(g, y[0, 0])
    for arr, want, sim in zip(got, golden, run.output_list()):
        assert np.array_equal(arr, sim)
        assert np.array_equal(arr.reshape(np.shape(want)), np.asarray(want).astype(np.int64))
    for t, cname in buffer_names(g).items():
        if t not in g.input_names:
            assert np.array_equal(rec[cname][0, 0], run.tensors[t].reshape(-1)), t


@pytest.fixture(scope="module")
def zig_cache(tmp_path_factory):
    return os.environ.get("ZIG_GLOBAL_CACHE_DIR") or str(tmp_path_factory.mktemp("zig-cache"))


@pytest.mark.slow
@pytest.mark.parametrize("rel", CROSS_CASES)
def test_deeploy_case_equals_golden_on_rv32(rel, tmp_path, zig_cache):
    g, ins, golden = _case(rel)
    prog = emit_graph(g)
    build = build_cross(prog, "rv32", tmp_path, cache_dir=zig_cache)
    y, _, ips = run_cross(build, pack_inputs(g, ins)[None])
    for arr, want in zip(unpack_outputs(g, y[0]), golden):
        assert np.array_equal(arr.reshape(np.shape(want)), np.asarray(want).astype(np.int64))
    assert ips > 0


@pytest.mark.slow
def test_every_op_on_rv32_equals_host(every_op, tmp_path, zig_cache):
    g, sims, x, progs, exes = every_op
    build = build_cross(progs[True], "rv32", tmp_path, cache_dir=zig_cache)
    y, rec, _ = run_cross(build, x[:2, 0], record=True)
    y_host, rec_host = run_host(exes[True], progs[True], x[:2, 0], record=True)
    assert y.tobytes() == y_host.tobytes()
    assert all(rec[k].tobytes() == v.tobytes() for k, v in rec_host.items())
    assert np.array_equal(unpack_outputs(g, y[0])[list(g.output_names).index("big")], sims[0].outputs["big"])


# ---------------------------------------------------------------------------------------------- refusals
def _tiny(op: str, attrs=None, x_dtype="int8") -> OpGraph:
    return OpGraph(
        (TensorInfo("x", (1, 2, 4, 4), x_dtype),), (TensorInfo("y", (1, 2, 2, 2), "int64"),),
        (Node("n0", op, ("x",), ("y",), attrs or {}),),
    )  # fmt: skip


def test_op_without_c_is_named():
    with pytest.raises(CodegenError, match="Sigmoid") as err:
        emit_graph(_tiny("Sigmoid"))
    assert "n0" in str(err.value)


def test_float_islands_are_refused_with_the_reason():
    attrs = {"scale_in": 0.1, "zero_in": 0, "scale_out": 1 / 256, "zero_out": -128, "lo": -128, "hi": 127}
    for op in ("QSoftmax", "QLayerNorm"):
        with pytest.raises(CodegenError, match=f"{op} float island.*n0|n0.*{op} float island"):
            emit_graph(_tiny(op, attrs))


@pytest.mark.parametrize(
    ("op", "attrs", "ins", "match"),
    [
        ("ITAPartialMax", {"n_levels": 256, "group_width": 4}, ("x",), "group_width"),
        ("Gemm", {"alpha": 0.5}, ("x", "w"), "alpha"),
        ("Slice", {}, ("x", "x", "x"), "constant"),
        ("MaxPool", {"kernel_shape": [1, 1, 1]}, ("x",), "MaxPool"),
    ],
)
def test_bad_new_ops_are_refused(op, attrs, ins, match):
    shape = (1, 2, 4, 4, 1) if op == "MaxPool" else (2, 6)
    g = OpGraph((TensorInfo("x", shape, "int8"),), (TensorInfo("y", None, "int64"),),
                (Node("n0", op, ins, ("y",), attrs),), {"w": np.ones((6, 2))})  # fmt: skip
    with pytest.raises(CodegenError, match=match):
        emit_graph(g)


def test_range_beyond_int64_is_refused():
    g = OpGraph(
        (TensorInfo("x", (1, 4), "int64"),), (TensorInfo("y", (1, 2), "int64"),),
        (Node("mm", "MatMul", ("x", "w"), ("y",)),), {"w": np.full((4, 2), 1000)},
    )  # fmt: skip
    with pytest.raises(CodegenError, match="int64|2\\^63"):
        emit_graph(g)
    prog = emit_graph(g, input_ranges={"x": (-1000, 1000)})  # a promised range makes it exact in int32
    assert prog.io.in_ctype == "int32_t" and "int32_t acc" in prog.sources["net.c"]


@settings(max_examples=25, deadline=None)
@given(st.one_of(st.text(max_size=8).filter(lambda s: not s.isidentifier() or s in ("x", "y", "int")), st.integers()))
def test_bad_names_are_refused(name):
    with pytest.raises(CodegenError):
        emit_graph(_tiny("Relu"), name=name)


@settings(max_examples=25, deadline=None)
@given(st.one_of(st.integers(), st.text(max_size=4), st.none(), st.lists(st.integers(), max_size=2)))
def test_bad_graphs_and_flags_are_refused(value):
    with pytest.raises(CodegenError):
        emit_graph(value)
    with pytest.raises(CodegenError):
        emit_graph(_tiny("Relu"), record=value)
