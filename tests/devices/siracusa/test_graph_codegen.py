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
    lims = {"int8": (-128, 128), "uint8": (0, 256), "int32": (-(2**31), 2**31)}
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


def _island_attrs(si, zi, lo_in, hi_in, so, zo, lo, hi, axis, **more):
    return {"scale_in": si, "zero_in": zi, "lo_in": lo_in, "hi_in": hi_in, "scale_out": so, "zero_out": zo,
            "lo": lo, "hi": hi, "axis": axis, **more}  # fmt: skip


@pytest.mark.parametrize(
    ("attrs", "match"),
    [
        ({"scale_out": 0.0}, "quantization"),
        ({"hi": 2**30}, "quantization"),
        ({"lo_in": 0, "hi_in": 2**20}, "input type"),
        ({"scale_in": -1.0}, "scale_in"),
    ],
)
def test_float_islands_are_refused_where_the_c_cannot_be_exact(attrs, match):
    base = _island_attrs(0.1, 0, -128, 127, 1 / 256, -128, -128, 127, -1)
    with pytest.raises(CodegenError, match=match):
        emit_graph(_tiny("QSoftmax", {**base, **attrs}))
    g = OpGraph((TensorInfo("x", (2, 4), "int8"),), (TensorInfo("y", (2, 4), "int64"),),
                (Node("r", "Relu", ("x",), ("g",)), Node("n0", "QLayerNorm", ("x", "g"), ("y",), base)))  # fmt: skip
    with pytest.raises(CodegenError, match="gamma.*constant|constant.*gamma"):
        emit_graph(g)


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


# ------------------------------------------------------------------------------------ float islands (QDQ)
def island_graph() -> OpGraph:
    """QSoftmax (last axis, a middle axis, axis 0; int8 / uint8 in and out) and QLayerNorm (gamma and beta, gamma
    of the whole tensor, none; one axis and two), with their shapes; epsilon 0 makes a row of equal values
    divide zero by zero (NaN, quantized to the zero point)."""
    rng = np.random.default_rng(11)
    a = _island_attrs
    n = [
        Node("sm", "QSoftmax", ("x",), ("sm",), a(0.07, 3, -128, 127, 1 / 256, -128, -128, 127, -1)),
        Node("sm1", "QSoftmax", ("x",), ("sm1",), a(0.5, 3, -128, 127, 1 / 255, 0, 0, 255, 1)),
        Node("smu", "QSoftmax", ("u",), ("smu",), a(0.02, 128, 0, 255, 0.003, 5, 0, 255, 0)),
        Node("smr", "Relu", ("x",), ("xr",)),  # inputs in [0, 127]: the table index needs no clamp
        Node("sm2", "QSoftmax", ("xr",), ("sm2",), a(2.0**-4, 0, -128, 127, 2.0**-7, -64, -128, 127, 2)),
        Node("ln", "QLayerNorm", ("x", "g", "b"), ("ln",), a(0.05, 2, -128, 127, 0.03, 1, -128, 127, -1,
                                                          epsilon=1e-5)),
        Node("ln2", "QLayerNorm", ("u",), ("ln2",), a(0.01, 128, 0, 255, 0.02, 128, 0, 255, 1, epsilon=1e-6)),
        Node("ln3", "QLayerNorm", ("x", "g3", ""), ("ln3",), a(0.05, -3, -128, 127, 0.01, 0, 0, 255, 1,
                                                             epsilon=0.0)),
        Node("ln4", "QLayerNorm", ("x", "", "b"), ("ln4",), a(3e3, 0, -128, 127, 1e-3, -7, -128, 127, -1)),
        # tiny scales, epsilon 0: d d underflows, var = 0 and d / 0 = +-inf (saturated) or a subnormal variance
        Node("ln5", "QLayerNorm", ("x", "g4"), ("ln5",), a(1e-25, 0, -128, 127, 0.01, -100, -128, 127, -1,
                                                           epsilon=0.0)),
        Node("ln6", "QLayerNorm", ("u",), ("ln6",), a(1e-21, 7, 0, 255, 0.05, 30, 0, 255, 0, epsilon=0.0)),
    ]  # fmt: skip
    c = {
        "g": rng.normal(size=8).astype(np.float32), "b": rng.normal(size=8).astype(np.float32),
        "g3": np.concatenate([np.ones((1, 8)), rng.normal(size=(3, 8))]).astype(np.float32),
        "g4": rng.normal(size=(2, 1, 8)).astype(np.float32),  # differs between rows: the whole tensor in flash
    }  # fmt: skip
    outs = ["sm", "sm1", "smu", "sm2", "ln", "ln2", "ln3", "ln4", "ln5", "ln6"]
    g = OpGraph((TensorInfo("x", (2, 4, 8), "int8"), TensorInfo("u", (3, 5), "uint8")),
                tuple(TensorInfo(o, None, "int64") for o in outs), tuple(n), c, name="islands")  # fmt: skip
    return _with_shapes(g)


def _island_samples(count: int, seed: int) -> list[list[np.ndarray]]:
    """Random inputs with the extremes: all lo, all hi, one value everywhere, only lo and hi, near-equal rows."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        k = i % 8
        if k < 2:
            x, u = np.full((2, 4, 8), (-128, 127)[k]), np.full((3, 5), (0, 255)[k])
        elif k == 2:
            x, u = np.full((2, 4, 8), rng.integers(-128, 128)), np.full((3, 5), rng.integers(0, 256))
        elif k == 3:
            x, u = rng.choice([-128, 127], (2, 4, 8)), rng.choice([0, 255], (3, 5))
        elif k == 4:
            x, u = rng.integers(-2, 3, (2, 4, 8)), rng.integers(126, 131, (3, 5))
        else:
            x, u = rng.integers(-128, 128, (2, 4, 8)), rng.integers(0, 256, (3, 5))
        out.append([x, u])
    return out


@pytest.fixture(scope="module")
def islands(tmp_path_factory):
    """The island graph emitted (recording), compiled once, and 400 inputs."""
    g = island_graph()
    prog = emit_graph(g, name="islands", record=True)
    return g, prog, compile_host(prog, tmp_path_factory.mktemp("islands")), _island_samples(400, 5)


def test_float_islands_equal_graphsim_bit_for_bit(islands):
    g, prog, exe, samples = islands
    x = np.stack([pack_inputs(g, s) for s in samples])[:, None, :]
    y, _ = run_host(exe, prog, x)
    sim = GraphSim(g)
    equal = 0
    with np.errstate(all="ignore"):
        for b, s in enumerate(samples):
            want = sim.run(s, integer=True).outputs
            got = unpack_outputs(g, y[b, 0])
            equal += sum(np.array_equal(arr, want[name]) for name, arr in zip(g.output_names, got))
    assert equal == len(samples) * len(g.outputs)
    src = prog.sources["islands.c"]
    assert "gq_fsqrt" in src and "sqrtf" not in src and "<math.h>" not in src  # no libm
    types = {s.name: s.ctype for s in prog.io.states}
    names = buffer_names(g)
    assert types[names["sm"]] == "int8_t" and types[names["sm1"]] == "uint8_t" and types[names["ln2"]] == "uint8_t"


def test_float_islands_edge_rows(islands):
    """All lo / all hi / one value: softmax is uniform, a layer norm of equal values is beta (or z_out)."""
    g, prog, exe, _ = islands
    names = list(g.output_names)
    for x, u in ((np.full((2, 4, 8), -128), np.zeros((3, 5))), (np.full((2, 4, 8), 127), np.full((3, 5), 255))):
        y, _ = run_host(exe, prog, pack_inputs(g, [x, u])[None, None])
        out = dict(zip(names, unpack_outputs(g, y[0, 0])))
        assert np.all(out["sm"] == out["sm"].reshape(-1)[0])  # 1/8 of 256 levels: -128 + 32
        assert out["sm"].reshape(-1)[0] == -96
        assert np.all(out["ln2"] == 128) and np.all(out["ln3"] == 0)  # d = 0: 0 / sqrt(eps); 0 / 0 = NaN -> 0


def test_softmax_table_index_is_clamped_where_the_range_exceeds_the_type():
    attrs = _island_attrs(0.1, 0, -8, 7, 1 / 256, -128, -128, 127, -1)
    assert "(k > 15 ? 15 : k)" in emit_graph(_tiny("QSoftmax", attrs)).sources["net.c"]  # int8 x, 16-level table
    attrs = _island_attrs(0.1, 0, -128, 127, 1 / 256, -128, -128, 127, -1)
    assert "(k > " not in emit_graph(_tiny("QSoftmax", attrs)).sources["net.c"]


def _helper_harness() -> str:
    """C that runs the islands' helpers on float32 bit patterns: sqrt, quantize (s = 1), d / +0."""
    return (
        "(void)a;\nfor (int32_t i = 0; i < 4096; ++i) {\n"
        "    union { int32_t i; float f; } a, r;\n"
        "    a.i = x[i];\n"
        "    r.f = gq_fsqrt(a.f);\n"
        "    y[3 * i] = r.i;\n"
        "    y[3 * i + 1] = gq_fquant(a.f, 1.0f, 3, -536870911, 536870911);\n"
        "    r.f = gq_fdiv0(a.f, i % 2 ? -0.0f : 0.0f);\n"
        "    y[3 * i + 2] = r.i;\n"
        "}"
    )


def test_fsqrt_is_correctly_rounded_and_quantize_rounds_half_to_even(tmp_path):
    from pondlib.cprogram.program import build_program
    from pondlib.devices.siracusa.graph_codegen_float import island_helpers
    from pondlib.devices.siracusa.kernels.qdq_ops import quantize_linear

    rng = np.random.default_rng(3)
    special = np.float32([0, -0.0, np.inf, -np.inf, np.nan, 1, 2, 4, 0.5, 1e-45, 1e-38, 3.4e38, -1, -1e-45,
                          0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2**23 - 0.5, 2**23 + 1, 2**30, -(2**30), 2**29 + 64,
                          8388607.5, -8388607.5, 4194303.5])  # fmt: skip
    squares = np.float32(np.arange(1, 4000, dtype=np.float64) ** 2)
    near = np.concatenate([np.nextafter(squares, np.float32(np.inf)), np.nextafter(squares, np.float32(0))])
    bits = [
        special.view(np.int32), squares.view(np.int32), near.view(np.int32),
        rng.integers(-(2**31), 2**31, 40000, dtype=np.int64).astype(np.int32),  # every class of float32
        rng.integers(0, 2**23, 4000, dtype=np.int64).astype(np.int32),  # subnormals
        (np.float32(rng.integers(-(2**24), 2**24, 4000)) / np.float32(2)).view(np.int32),  # halves: ties
    ]  # fmt: skip
    v = np.concatenate(bits)
    v = np.concatenate([v, np.zeros(-v.size % 4096, dtype=np.int32)]).reshape(-1, 1, 4096)
    prog = build_program(
        "helpers", "siracusa", constants=[], buffers=[], step_body=_helper_harness(), n_in=4096, in_ctype="int32_t",
        n_out=3 * 4096, out_ctype="int32_t", helpers=island_helpers(True),
    )  # fmt: skip
    y, _ = run_host(compile_host(prog, tmp_path), prog, v)
    f = v.reshape(-1).view(np.float32)
    got = y.reshape(-1, 3)
    with np.errstate(all="ignore"):
        want_sqrt = np.sqrt(f)
        want_q = quantize_linear(f, 1.0, 3, -536870911, 536870911)
        zero = np.where(np.arange(f.size) % 4096 % 2 == 1, np.float32(-0.0), np.float32(0.0))
        want_div = f / zero
    got_sqrt, got_div = got[:, 0].astype(np.int32).view(np.float32), got[:, 2].astype(np.int32).view(np.float32)
    for g_, w in ((got_sqrt, want_sqrt), (got_div, want_div)):
        nan = np.isnan(w)
        assert np.array_equal(np.isnan(g_), nan)
        assert np.array_equal(g_[~nan].view(np.int32), w[~nan].view(np.int32))
    assert np.array_equal(got[:, 1], want_q)
    assert f.size > 60000 and np.isnan(want_sqrt).sum() > 1000  # negatives and NaNs were in the sweep


@pytest.mark.slow
def test_float_islands_on_rv32_equal_host_and_graphsim(islands, tmp_path, zig_cache):
    g, prog, exe, samples = islands
    x = np.stack([pack_inputs(g, s) for s in samples[:16]])[:, None, :]  # every kind of input twice
    build = build_cross(prog, "rv32", tmp_path, cache_dir=zig_cache)
    y, rec, _ = run_cross(build, x[:, 0], record=True)
    y_host, rec_host = run_host(exe, prog, x[:, 0], record=True)
    assert y.tobytes() == y_host.tobytes()
    assert all(rec[k].tobytes() == v.tobytes() for k, v in rec_host.items())
    with np.errstate(all="ignore"):
        for b, s in enumerate(samples[:16]):
            want = GraphSim(g).run(s, integer=True).outputs
            assert all(np.array_equal(a, want[n]) for n, a in zip(g.output_names, unpack_outputs(g, y[b])))
