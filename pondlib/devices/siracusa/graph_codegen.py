r"""Siracusa's integer graphs as C: an :class:`~pondlib.graph.opgraph.OpGraph` equal to ``GraphSim`` bit for bit.

:func:`emit_graph` turns an integer-mode graph (Deeploy's dialect, or any graph of the ops below) into a
:class:`~pondlib.cprogram.program.Program` whose one step computes what
:class:`~pondlib.devices.siracusa.graphsim.GraphSim` computes with ``integer=True``: every output and, with
``record=True``, every intermediate tensor, exactly.

**Input and output.** The program has one input ``x`` and one output ``y``. Every graph input is packed into
``x`` in graph input order, each flattened in C order (``x = concat(in_0.ravel(), in_1.ravel(), ...)``), as
``int32_t`` (``int64_t`` when an input range exceeds int32); every graph output is packed into ``y`` the same
way, as the narrowest of ``int8_t``, ``int16_t``, ``int32_t``, ``int64_t`` (unsigned 8/16-bit too) that holds
every output's range. :func:`pack_inputs` and :func:`unpack_outputs` do the packing.

**Integers.** ``GraphSim`` computes exact int64; the C equals it because a static **range analysis**
(interval arithmetic from the input ranges, the exact constants and each op's clamps) bounds every value and
every partial sum, and the C type of each is chosen from that bound:

* a tensor is stored in the narrowest type holding its range (``int8_t`` after a RequantShift to 256 levels);
* an accumulator (MatMul, Gemm, Conv sums, RequantShift's ``x mul + add``) is ``int32_t`` when its bound
  (``sum_k |a| |b|`` + ``|bias|``, ``|x| |mul| + |add| + 2^(s-1)``) fits int32, else ``int64_t`` (RV32 runs it
  in software); a bound beyond int64 is a :class:`~pondlib.errors.CodegenError`;
* Deeploy's nonlinearities (iSoftmax, ITAMax, iRMSNorm, iLayerNorm, iHardswish, iGELU, integer divisions)
  compute in ``int64_t``, the width of their Python rule.

So no signed operation overflows (no undefined behaviour, no ``-fwrapv``); floor shifts of negative values are
written ``-1 - ((-1 - t) >> s)``, C's ``/`` is used only where the Python rule
truncates (``tdiv``) or both operands are nonnegative, and the square root is an exact integer ``gq_isqrt``.
The float islands assume IEEE 754 float32 arithmetic (C11 Annex F) and convert a float to an integer only
inside int32's range.
Input ranges default to the declared dtype (``int8`` -> [-128, 127]; Deeploy's float32 carriers: int32);
``input_ranges={"name": (lo, hi)}`` narrows them (values outside are the caller's error).

**Ops with C** (equations as in :mod:`~pondlib.devices.siracusa.kernels`):

=========================================  =================================================================
RequantShift                               ``clip((x mul + add + 2^(s-1)) >> s, lo, hi)``, mul/add per channel
MatMul (batched, broadcast), Gemm          ``sum_k a b``, Gemm's ``alpha (A' B') + beta C`` (whole alpha/beta,
                                           transA/transB), exact accumulator
Add, Sub, Mul, Relu, Clip                  elementwise, numpy broadcasting; Clip's bounds from inputs or attrs
Conv                                       1-D NCW and 2-D NCHW, groups (depthwise), pads, strides, dilations
Transpose, Concat                          index permutations / offset copies
Reshape, Flatten, Squeeze, Unsqueeze,      aliases of their input's memory (copies when recording); Floor,
Identity, Floor, Ceil, Round               Ceil and Round are the identity on integers
iSoftmax, ITAMax, iRMSNorm, iLayerNorm,    Deeploy's integer rules (``deeploy_ops`` docstring)
iHardswish, iGELU, TrueIntegerDiv,
IntegerDiv
MaxPool, AveragePool, Global*Pool,         in :mod:`~pondlib.devices.siracusa.graph_codegen_ops` (its
ReduceSum, ReduceMean, IntegerMean,        docstring): pools, reductions, index maps, integer Div and the
Slice, Gather, Pad, Div, ITAPartialMax,    rest of Deeploy's dialect
iNoNorm, RequantizediHardswish,
RequantizedGELU, LUT
QSoftmax, QLayerNorm                       the float32 islands of QDQ graphs, in
                                           :mod:`~pondlib.devices.siracusa.graph_codegen_float` (its
                                           docstring): the numpy kernels' IEEE float32 operations in their
                                           order, no libm (a correctly rounded ``gq_fsqrt``), bit for bit
=========================================  =================================================================

A node whose inputs are all constants is folded at generation (its kernel runs in Python). Any other op raises
:class:`~pondlib.errors.CodegenError` naming it and the node.

**C layout.** Constants ``k<i>`` (flash, narrowest type; the islands' tables and gamma / beta ``float``).
Tensors are C-order arrays named after the graph tensor (:func:`buffer_names`: ``t_<sanitized name>``).
``record=False``: the tensors are ``scratch`` buffers whose lifetimes (producing node .. last reader) let the
arena share memory, reshapes alias their input;
``record=True``: every node output is a ``state`` buffer (reshapes copy), so that
:func:`~pondlib.codegen.toolchain.run_host` returns each one for comparison with ``GraphRun.tensors``.

Example:
    >>> import numpy as np, tempfile
    >>> from pondlib.codegen import compile_host, run_host
    >>> from pondlib.graph.opgraph import Node, OpGraph, TensorInfo
    >>> g = OpGraph((TensorInfo("x", (1, 2), "int8"),), (TensorInfo("y", (1, 2), "int8"),),
    ...     (Node("a", "Add", ("x", "b"), ("h",)),
    ...      Node("rq", "RequantShift", ("h", "m", "z"), ("y",), {"div": 4, "n_levels_out": 256, "signed": 1})),
    ...     {"b": np.float32([1, 2]), "m": np.float32(3), "z": np.float32(0)})
    >>> prog = emit_graph(g, name="tiny", record=True)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     y, rec = run_host(compile_host(prog, d), prog, pack_inputs(g, [np.array([[5, -7]])])[None], record=True)
    >>> unpack_outputs(g, y[0])[0].tolist(), rec[buffer_names(g)["h"]][0].tolist()
    ([[5, -4]], [6, -5])
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from pondlib.cprogram.program import Buffer, Constant, Program, build_program, c_identifier, c_literal
from pondlib.devices.siracusa.graph_codegen_float import ISLANDS, island_helpers, island_inputs
from pondlib.devices.siracusa.graph_codegen_float import OPS as ISLAND_OPS
from pondlib.devices.siracusa.graph_codegen_ops import (
    _I32,
    _I64,
    _RANGE_FIX,
    _T,
    NEW_OPS,
    _acc_type,
    _as_2d,
    _bstrides,
    _int_attr,
    _ix,
    _kernel,
    _loops,
    _map,
    _merge,
    _rows,
    _store_type,
    _strides,
)
from pondlib.devices.siracusa.graphsim import GraphSim
from pondlib.devices.siracusa.kernels import KernelContext, lookup
from pondlib.devices.siracusa.kernels.deeploy_ops import levels_range
from pondlib.errors import CodegenError, PondError
from pondlib.graph.opgraph import Node, OpGraph
from pondlib.validate import check_bool

__all__ = ["emit_graph", "buffer_names", "pack_inputs", "unpack_outputs", "supported_graph_ops"]

_WHERE = "pondlib.devices.siracusa.graph_codegen.emit_graph"
_DTYPE_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "uint8": (0, 2**8 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": _I32,
    "uint32": (0, 2**32 - 1),
    "int64": _I64,
    "bool": (0, 1),
}
_ALIAS_OPS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Floor", "Ceil", "Round")


def _sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)[:48]


def buffer_names(graph: OpGraph) -> dict[str, str]:
    """Graph tensor (every graph input and node output) -> its C name in :func:`emit_graph`'s program.

    Example:
        >>> from pondlib.graph.opgraph import Node, OpGraph, TensorInfo
        >>> g = OpGraph((TensorInfo("in", (2,), "int8"),), (TensorInfo("a.b", (2,), "int8"),),
        ...             (Node("r", "Relu", ("in",), ("a.b",)),))
        >>> buffer_names(g)
        {'in': 't_in', 'a.b': 't_a_b'}
    """
    out: dict[str, str] = {}
    used: set[str] = set()
    tensors = list(graph.input_names) + [t for n in graph.order() for t in n.outputs if t]
    for t in tensors:
        base = f"t_{_sanitize(t)}"
        cname, k = base, 2
        while cname in used:
            cname, k = f"{base}_{k}", k + 1
        used.add(cname)
        out[t] = cname
    return out


def pack_inputs(graph: OpGraph, inputs: Sequence[Any] | Mapping[str, Any]) -> np.ndarray:
    """The program's ``x``: every graph input (a list in graph order, or a dict by name) flattened, in order."""
    if isinstance(inputs, Mapping):
        inputs = [inputs[n] for n in graph.input_names]
    if len(inputs) != len(graph.inputs):
        raise CodegenError("inputs", value=len(inputs), limit=f"{len(graph.inputs)} arrays (one per graph input)")
    parts = [np.asarray(a).reshape(-1).astype(np.int64) for a in inputs]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def unpack_outputs(graph: OpGraph, y: Any) -> list[np.ndarray]:
    """The graph outputs (int64, their shapes) from one step's ``y`` (``shapes`` from the graph's outputs)."""
    flat = np.asarray(y).reshape(-1).astype(np.int64)
    shapes = _output_shapes(graph)
    out, pos = [], 0
    for shape in shapes:
        n = int(np.prod(shape, dtype=np.int64))
        out.append(flat[pos : pos + n].reshape(shape))
        pos += n
    return out


def _output_shapes(graph: OpGraph) -> list[tuple[int, ...]]:
    shapes = []
    for info in graph.outputs:
        if info.shape is None:
            raise CodegenError("graph output shape", value=info.name, limit="a declared shape", fix="export shapes")
        shapes.append(tuple(int(d) for d in info.shape))
    return shapes


# --------------------------------------------------------------------------------------------------- emitter
class _Emitter:
    """Walks the graph in topological order, keeping tensors, constants, buffers, code and helpers."""

    def __init__(self, graph: OpGraph, record: bool, input_ranges: Mapping[str, tuple[int, int]]) -> None:
        self.graph = graph
        self.record = record
        self.sim = GraphSim(graph)
        self.consts_int = self.sim.constants(True)
        self.names = buffer_names(graph)
        self.tensors: dict[str, _T] = {}
        self.constants: list[Constant] = []
        self.buffers: dict[str, list[Any]] = {}  # name -> [ctype, count, first, last]
        self.helpers: set[str] = set()
        self.body: list[str] = []
        self.pos = 0
        self._inputs(input_ranges)

    def _inputs(self, input_ranges: Mapping[str, tuple[int, int]]) -> None:
        ranges = []
        for info in self.graph.inputs:
            if info.shape is None:
                raise CodegenError("graph input shape", value=info.name, limit="a declared shape", where=_WHERE)
            r = input_ranges.get(info.name, _DTYPE_RANGES.get(info.dtype, _I32))
            ranges.append((int(r[0]), int(r[1])))
        self.in_ctype = "int32_t" if all(_I32[0] <= lo and hi <= _I32[1] for lo, hi in ranges) else "int64_t"
        off = 0
        for info, (lo, hi) in zip(self.graph.inputs, ranges):
            shape = tuple(int(d) for d in info.shape)
            self.tensors[info.name] = _T(shape, lo, hi, self.in_ctype, f"(x + {off})")
            off += int(np.prod(shape, dtype=np.int64))
        self.n_in = off

    # -- tensors
    def get(self, name: str) -> _T | None:
        if not name:
            return None
        if name in self.tensors:
            t = self.tensors[name]
            if t.buf is not None:
                self.buffers[t.buf][3] = max(self.buffers[t.buf][3], self.pos)
            return t
        value = self.consts_int[name]
        if value.dtype.kind not in "biu":
            raise CodegenError(
                "constant", value=f"{name!r} holds non-integers", limit="integer constants (integer mode)",
                where=_WHERE, fix="quantize the model first",
            )  # fmt: skip
        value = value.astype(np.int64)
        lo, hi = (int(value.min()), int(value.max())) if value.size else (0, 0)
        t = _T(tuple(value.shape), lo, hi, _store_type(lo, hi, name), value=value)
        self.tensors[name] = t
        return t

    def arr(self, t: _T) -> str:
        """The C array of ``t`` (a constant gets its flash array on first use)."""
        if t.value is not None and not t.ptr:
            t.ptr = f"k{len(self.constants)}"
            self.constants.append(Constant(t.ptr, t.ctype, t.value.reshape(-1)))
        return t.ptr

    def elem(self, t: _T, index: str) -> str:
        """C expression of ``t``'s element ``index``: a literal for a uniform constant."""
        u = t.uniform()
        if u is not None:
            return c_literal(u, "int64_t") if not _I32[0] <= u <= _I32[1] else f"({u})"
        return f"{self.arr(t)}[{index}]"

    def out(self, name: str, shape: Sequence[int], lo: int, hi: int, node: Node) -> _T:
        """A new tensor ``name`` written by the current node: its buffer (state when recording)."""
        shape = tuple(int(d) for d in shape)
        ctype = _store_type(lo, hi, node.label)
        size = int(np.prod(shape, dtype=np.int64))
        if size < 1:
            raise CodegenError("tensor size", value=f"{name!r} {shape}", limit=">= 1 element", where=node.label)
        cname = self.names[name]
        self.buffers[cname] = [ctype, size, self.pos, self.pos]
        t = _T(shape, lo, hi, ctype, cname, buf=cname)
        self.tensors[name] = t
        return t

    def alias(self, name: str, src: _T, shape: Sequence[int]) -> None:
        self.tensors[name] = _T(tuple(int(d) for d in shape), src.lo, src.hi, src.ctype, src.ptr, src.value, src.buf)

    def code(self, node: Node, body: str) -> None:
        self.body.append(_kernel("graph_node.c", index=self.pos, label=node.label.replace("*/", "* /"), body=body))

    def asr(self, acc: str) -> str:
        name = "asr32" if acc == "int32_t" else "asr64"
        self.helpers.add(name)
        return name


# ------------------------------------------------------------------------------------------------ op emitters
def _interval(op: str, a: _T, b: _T) -> tuple[int, int]:
    if op == "Add":
        return a.lo + b.lo, a.hi + b.hi
    if op == "Sub":
        return a.lo - b.hi, a.hi - b.lo
    corners = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    return min(corners), max(corners)


def _binary(em: _Emitter, node: Node, ins: list) -> None:
    a, b = ins[0], ins[1]
    lo, hi = _interval(node.op, a, b)
    shape = np.broadcast_shapes(a.shape, b.shape)
    acc = _acc_type(max(abs(lo), abs(hi), a.amax, b.amax), node.label)
    sym = {"Add": "+", "Sub": "-", "Mul": "*"}[node.op]
    dst = em.out(node.outputs[0], shape, lo, hi, node)
    _map(em, node, dst, [a, b], lambda d, x, y: f"{d} = ({dst.ctype})(({acc}){x} {sym} ({acc}){y});")


def _clip_bounds(em: _Emitter, node: Node, ins: list) -> tuple[int | None, int | None]:
    if node.op == "Relu":
        return 0, None
    out = []
    for i, key in ((1, "min"), (2, "max")):
        t = ins[i] if len(ins) > i else None
        if t is not None and t.value is None:
            raise CodegenError(f"Clip {key}", value="a computed tensor", limit="a constant", where=node.label)
        v = t.value if t is not None else node.attrs.get(key)
        out.append(None if v is None else int(np.asarray(v).reshape(-1)[0]))
    return out[0], out[1]


def _clip(em: _Emitter, node: Node, ins: list) -> None:
    x = ins[0]
    lo_c, hi_c = _clip_bounds(em, node, ins)
    lo_c = None if lo_c is None or lo_c <= x.lo else lo_c  # a bound the input never passes needs no test
    lo, hi = (x.lo, x.hi) if lo_c is None else (max(x.lo, lo_c), max(x.hi, lo_c))
    hi_c = None if hi_c is None or hi_c >= hi else hi_c
    lo, hi = (lo, hi) if hi_c is None else (min(lo, hi_c), min(hi, hi_c))
    dst = em.out(node.outputs[0], x.shape, lo, hi, node)

    def make(d: str, v: str) -> str:
        e = f"(int64_t){v}"
        if lo_c is not None:
            e = f"({e} < {c_literal(lo_c, 'int64_t')} ? {c_literal(lo_c, 'int64_t')} : {e})"
        if hi_c is not None:
            e = f"({e} > {c_literal(hi_c, 'int64_t')} ? {c_literal(hi_c, 'int64_t')} : {e})"
        return f"{d} = ({dst.ctype}){e};"

    _map(em, node, dst, [x], make)


def _channel_shape(param: _T, x: _T) -> tuple[int, ...]:
    """Deeploy's rule: a vector of x.shape[1] values (> 1) broadcasts along axis 1, others by numpy rules."""
    if len(param.shape) == 1 and param.size > 1 and len(x.shape) >= 2 and param.size == x.shape[1]:
        return (1, param.size) + (1,) * (len(x.shape) - 2)
    return param.shape


def _requant(em: _Emitter, node: Node, ins: list) -> None:
    x, mul, add = ins[0], ins[1], ins[2]
    for what, t in (("mul", mul), ("add", add)):
        if t is None or t.value is None:
            raise CodegenError(f"RequantShift {what}", value="a computed tensor", limit="a constant",
                               where=node.label, fix="fold the requantization parameters into constants")  # fmt: skip
    div = int(float(np.asarray(node.attrs.get("div")).reshape(-1)[0]))
    shift = div.bit_length() - 1
    levels = node.attrs.get("n_levels_out", node.attrs.get("n_levels", 256))
    ctx = KernelContext(True, em.graph.opset, node.label)
    lo, hi = levels_range(levels, node.attrs.get("signed", 1), ctx)
    half = (1 << (shift - 1)) if shift > 0 else 0
    acc = _acc_type(x.amax * mul.amax + add.amax + half, node.label)
    ms, as_ = _channel_shape(mul, x), _channel_shape(add, x)
    shape = np.broadcast_shapes(x.shape, ms, as_)
    dst = em.out(node.outputs[0], shape, lo, hi, node)
    strides = [_bstrides(x.shape, shape), _bstrides(ms, shape), _bstrides(as_, shape)]
    asr = em.asr(acc) if shift > 0 else ""

    def make(d: str, xv: str, mv: str, av: str) -> str:
        return _kernel(
            "graph_requant.c", acc=acc, x=xv, mul=mv, add=av, rounding=shift > 0, asr=asr,
            half=c_literal(half, acc), shift=shift, dst=d, out_type=dst.ctype, lo=lo, hi=hi,
        )  # fmt: skip

    _map(em, node, dst, [x, mul, add], make, strides)


def _matmul_bound(a: _T, b: _T, k: int) -> int:
    if b.value is not None and b.value.ndim >= 2:
        col = np.abs(b.value.astype(object)).sum(axis=-2)
        return int(np.max(col)) * a.amax if col.size else 0
    return k * a.amax * b.amax


def _matmul(em: _Emitter, node: Node, ins: list) -> None:
    a, b = ins[0], ins[1]
    ash = a.shape if len(a.shape) >= 2 else (1,) + a.shape
    bsh = b.shape if len(b.shape) >= 2 else b.shape + (1,)
    M, K, N = ash[-2], ash[-1], bsh[-1]
    if bsh[-2] != K:
        raise CodegenError("MatMul shapes", value=f"{a.shape} x {b.shape}", limit="A (.., M, K), B (.., K, N)",
                           where=node.label)  # fmt: skip
    batch = tuple(np.broadcast_shapes(ash[:-2], bsh[:-2]))
    bound = _matmul_bound(a, b, K)
    full = batch + (M, N)
    oshape = full if len(a.shape) >= 2 else full[:-2] + (N,)
    oshape = oshape if len(b.shape) >= 2 else oshape[:-1]
    dst = em.out(node.outputs[0], oshape, -bound, bound, node)
    acc = _acc_type(bound, node.label)
    ast = [0 if s == 0 else st for s, st in zip(_bstrides(ash[:-2], batch), _strides(ash)[:-2])]
    bst = [0 if s == 0 else st for s, st in zip(_bstrides(bsh[:-2], batch), _strides(bsh)[:-2])]
    vars_ = [f"i{d}" for d in range(len(batch))]
    inner = _kernel(
        "graph_matmul.c", m=M, n=N, k=K, acc=acc, result="acc", a=em.arr(a), b=em.arr(b), dst=dst.ptr,
        aoff=_ix(vars_, ast), boff=_ix(vars_, bst), doff=_ix(vars_, _strides(batch + (M * N,))[:-1]),
        ams=K, aks=1, bks=N, bns=1, out_type=dst.ctype,
    )  # fmt: skip
    em.code(node, _loops(batch, inner)[1])


def _gemm(em: _Emitter, node: Node, ins: list) -> None:
    a, b, c = ins[0], ins[1], ins[2] if len(ins) > 2 else None
    alpha, beta = (float(node.attrs.get(k, 1.0)) for k in ("alpha", "beta"))
    if alpha != round(alpha) or beta != round(beta) or len(a.shape) != 2 or len(b.shape) != 2:
        raise CodegenError("Gemm", value=f"alpha={alpha}, beta={beta}, A {a.shape}, B {b.shape}",
                           limit="whole alpha and beta (integer mode), 2-D A and B", where=node.label,
                           fix="fold fractional alpha/beta into the weights; a batched Gemm as MatMul")  # fmt: skip
    alpha, beta = int(alpha), int(beta)
    ta, tb = int(node.attrs.get("transA", 0)), int(node.attrs.get("transB", 0))
    M, K = (a.shape[1], a.shape[0]) if ta else a.shape
    N = b.shape[0] if tb else b.shape[1]
    bv = b.value.T if (b.value is not None and tb) else b.value
    bound = int(np.max(np.abs(bv.astype(object)).sum(axis=0))) * a.amax if bv is not None else K * a.amax * b.amax
    bound = bound * abs(alpha) + (c.amax * abs(beta) if c is not None else 0)
    dst = em.out(node.outputs[0], (M, N), -bound, bound, node)
    acc = _acc_type(bound, node.label)
    result = "acc" if alpha == 1 else f"({acc})({alpha}) * acc"
    if c is not None and beta != 0:
        cs = _bstrides(c.shape, (M, N))
        cterm = f"({acc}){em.elem(c, _ix(['m', 'n'], cs))}"
        result += f" + {cterm}" if beta == 1 else f" + ({acc})({beta}) * {cterm}"
    inner = _kernel(
        "graph_matmul.c", m=M, n=N, k=K, acc=acc, result=result, a=em.arr(a), b=em.arr(b), dst=dst.ptr,
        aoff="0", boff="0", doff="0", ams=1 if ta else K, aks=M if ta else 1, bks=1 if tb else N,
        bns=K if tb else 1, out_type=dst.ctype,
    )  # fmt: skip
    em.code(node, inner)


def _conv(em: _Emitter, node: Node, ins: list) -> None:
    x, w, bias = ins[0], ins[1], ins[2] if len(ins) > 2 else None
    if len(x.shape) == 3 and w.value is not None and w.value.ndim == 3:  # 1-D: a 2-D convolution of height 1
        x = _T((*x.shape[:2], 1, x.shape[2]), x.lo, x.hi, x.ctype, x.ptr, None, x.buf)
        w = _T((*w.shape[:2], 1, w.shape[2]), w.lo, w.hi, w.ctype, value=w.value[:, :, None, :])
        node = Node(node.name, node.op, node.inputs, node.outputs, {**node.attrs, **_as_2d(node.attrs)}, node.domain)
    if len(x.shape) != 4 or w.value is None or node.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise CodegenError("Conv", value=f"X {x.shape}, W constant: {w.value is not None}",
                           limit="1-D NCW or 2-D NCHW with a constant weight and explicit pads",
                           where=node.label, fix="export 1-D/2-D convolutions with constant weights")  # fmt: skip
    B, C, H, W = x.shape
    O, cg, kh, kw = w.shape
    g = int(node.attrs.get("group", 1))
    sy, sx = (int(v) for v in node.attrs.get("strides", (1, 1)))
    dy, dx = (int(v) for v in node.attrs.get("dilations", (1, 1)))
    pt, pl, pb, pr = (int(v) for v in node.attrs.get("pads", (0, 0, 0, 0)))
    ho = (H + pt + pb - dy * (kh - 1) - 1) // sy + 1
    wo = (W + pl + pr - dx * (kw - 1) - 1) // sx + 1
    per_o = np.abs(w.value.astype(object)).reshape(O, -1).sum(axis=1)
    bound = int(np.max(per_o)) * x.amax + (bias.amax if bias is not None else 0)
    dst = em.out(node.outputs[0], (B, O, ho, wo), -bound, bound, node)
    acc = _acc_type(bound, node.label)
    bias_c = "0" if bias is None else f"({acc}){em.elem(bias, 'o')}"
    em.code(node, _kernel(
        "graph_conv.c", batch=B, o=O, og=O // g, cg=cg, ho=ho, wo=wo, acc=acc, bias=bias_c, kh=kh, kw=kw,
        sy=sy, sx=sx, dy=dy, dx=dx, pt=pt, pl=pl, h=H, w=W, c=C, src=em.arr(x), wt=em.arr(w), dst=dst.ptr,
        out_type=dst.ctype,
    ))  # fmt: skip


def _transpose(em: _Emitter, node: Node, ins: list) -> None:
    x = ins[0]
    perm = node.attrs.get("perm")
    perm = list(range(len(x.shape)))[::-1] if perm is None else [int(p) for p in perm]
    shape = tuple(x.shape[p] for p in perm)
    dst = em.out(node.outputs[0], shape, x.lo, x.hi, node)
    st = _strides(x.shape)
    _map(em, node, dst, [x], lambda d, v: f"{d} = ({dst.ctype}){v};", [[st[p] for p in perm]])


def _concat(em: _Emitter, node: Node, ins: list) -> None:
    parts = [t for t in ins if t is not None]
    rank = len(parts[0].shape)
    axis = int(node.attrs["axis"]) % rank
    shape = list(parts[0].shape)
    shape[axis] = sum(t.shape[axis] for t in parts)
    dst = em.out(node.outputs[0], shape, min(t.lo for t in parts), max(t.hi for t in parts), node)
    dstr = _strides(shape)
    chunks, off = [], 0
    for t in parts:
        sh, (ss, ds) = _merge(t.shape, [_strides(t.shape), dstr])
        vars_ = [f"i{d}" for d in range(len(sh))]
        stmt = f"{dst.ptr}[{_ix(vars_, ds, off * dstr[axis])}] = ({dst.ctype}){em.elem(t, _ix(vars_, ss))};"
        chunks.append(_loops(sh, stmt)[1])
        off += t.shape[axis]
    em.code(node, "\n".join(chunks))


def _alias(em: _Emitter, node: Node, ins: list) -> None:
    x = ins[0]
    args = [np.zeros(x.shape, dtype=np.int64)] + [None if t is None else t.value for t in ins[1:]]
    if any(t is not None and t.value is None for t in ins[1:]):
        raise CodegenError(f"{node.op} shape", value="a computed tensor", limit="a constant", where=node.label)
    shape = np.shape(lookup(node.op, node.domain, node.label)(args, node.attrs, KernelContext(True, em.graph.opset)))
    if not em.record and x.value is None:
        em.alias(node.outputs[0], x, shape)
        return
    dst = em.out(node.outputs[0], shape, x.lo, x.hi, node)
    flat = _T((x.size,), x.lo, x.hi, x.ctype, x.ptr, None if x.value is None else x.value.reshape(-1), x.buf)
    _map(em, node, _T((dst.size,), dst.lo, dst.hi, dst.ctype, dst.ptr), [flat], lambda d, v: f"{d} = {v};")


def _softmax(em: _Emitter, node: Node, ins: list) -> None:
    x = ins[0]
    n = _int_attr(node, "n_levels", 256)
    dst = em.out(node.outputs[0], x.shape, 0, n - 1, node)
    rows, cols = _rows(x)
    a, b, c, log2 = (_int_attr(node, k) for k in ("coeffA", "coeffB", "coeffC", "log2"))
    em.code(node, _kernel(
        "graph_softmax.c", rows=rows, n=cols, src=em.arr(x), dst=dst.ptr, out_type=dst.ctype, log2=log2,
        a=c_literal(a, "int64_t"), b=c_literal(b, "int64_t"), c=c_literal(c, "int64_t"), levels=n,
    ))  # fmt: skip


def _itamax(em: _Emitter, node: Node, ins: list) -> None:
    x = ins[0]
    n = _int_attr(node, "n_levels")
    dst = em.out(node.outputs[0], x.shape, 0, n - 1, node)
    rows, cols = _rows(x)
    em.helpers.add("shr")
    em.code(node, _kernel("graph_itamax.c", rows=rows, n=cols, src=em.arr(x), dst=dst.ptr, out_type=dst.ctype,
                          levels=c_literal(n, "int64_t")))  # fmt: skip


def _norm(em: _Emitter, node: Node, ins: list) -> None:
    x, w = ins[0], ins[1]
    bias = ins[2] if node.op == "iLayerNorm" else None
    n = _int_attr(node, "n_levels")
    d = _int_attr(node, "D").bit_length() - 1
    dst = em.out(node.outputs[0], x.shape, -(n // 2), n // 2 - 1, node)
    rows, cols = _rows(x)
    em.helpers.update(("isqrt", "asr64"))
    wv = em.elem(w, "j" if w.size > 1 else "0")
    bv = "0" if bias is None else em.elem(bias, "j" if bias.size > 1 else "0")
    em.code(node, _kernel(
        "graph_norm.c", rows=rows, n=cols, src=em.arr(x), dst=dst.ptr, out_type=dst.ctype, w=wv, bias=bv,
        shift=d, lo=-(n // 2), hi=n // 2 - 1, center=bias is not None,
    ))  # fmt: skip


def _hardswish(em: _Emitter, node: Node, ins: list) -> None:
    x = ins[0]
    oos, three, six = (_int_attr(node, k) for k in ("one_over_six", "three", "six"))
    hmax = six * oos
    corners = [x.lo * hmax, x.hi * hmax, 0]
    dst = em.out(node.outputs[0], x.shape, min(corners), max(corners), node)

    def make(d: str, v: str) -> str:
        return (f"{{ const int64_t u = (int64_t){v} + {three}; "
                f"{d} = ({dst.ctype})((int64_t){v} * ((u < 0 ? 0 : (u > {six} ? {six} : u)) * {oos})); }}")  # fmt: skip

    _map(em, node, dst, [x], make)


def _gelu(em: _Emitter, node: Node, ins: list) -> None:
    x = ins[0]
    b, one = _int_attr(node, "b"), _int_attr(node, "one")
    bound = x.amax * ((abs(one) + max(abs(one), abs(one - b * b))) // 2 + 1)
    dst = em.out(node.outputs[0], x.shape, -bound, bound, node)
    em.helpers.add("asr64")

    def make(d: str, v: str) -> str:
        return (f"{{ const int64_t v = {v}; const int64_t q0 = v < 0 ? -v : v; "
                f"const int64_t q = (q0 < {-b} ? q0 : {-b}) + ({b}); const int64_t s = v > 0 ? 1 : (v < 0 ? -1 : 0); "
                f"{d} = ({dst.ctype})(v * gq_asr64({one} + s * ({one} - q * q), 1)); }}")  # fmt: skip

    _map(em, node, dst, [x], make)


def _true_div(em: _Emitter, node: Node, ins: list) -> None:
    x = ins[0]
    delta, eps, eta, yv = (_int_attr(node, k) for k in ("Delta", "eps", "eta", "y"))
    k = (delta * eta) // (yv * eta + eps)
    corners = [x.lo * k, x.hi * k]
    dst = em.out(node.outputs[0], x.shape, min(corners), max(corners), node)
    _map(em, node, dst, [x], lambda d, v: f"{d} = ({dst.ctype})((int64_t){v} * {c_literal(k, 'int64_t')});")


def _integer_div(em: _Emitter, node: Node, ins: list) -> None:
    a, b = ins[0], ins[1]
    delta, eps, eta = (_int_attr(node, k) for k in ("Delta", "eps", "eta"))
    ua = delta * eta * a.amax
    vb = eta * b.amax + abs(eps)
    if ua + vb >= 2**62:
        raise CodegenError("IntegerDiv bound", value=ua + vb, limit="< 2^62", where=node.label, fix=_RANGE_FIX)
    bound = ua + vb
    shape = np.broadcast_shapes(a.shape, b.shape)
    dst = em.out(node.outputs[0], shape, max(-bound, _I32[0]), min(bound, _I32[1]), node)
    em.helpers.add("asr64")

    def make(d: str, av: str, bv: str) -> str:
        return (f"{{ const int64_t u = (int64_t){delta * eta} * {av}; const int64_t v = (int64_t){eta} * {bv} + {eps}; "
                f"{d} = ({dst.ctype})(v == 0 ? 0 : (u + (u >= 0 ? 1 : -1) * gq_asr64(v, 1)) / v); }}")  # fmt: skip

    _map(em, node, dst, [a, b], make)


_OPS: dict[str, Callable[[_Emitter, Node, list], None]] = {
    "RequantShift": _requant,
    "MatMul": _matmul,
    "Gemm": _gemm,
    "Conv": _conv,
    "Add": _binary,
    "Sub": _binary,
    "Mul": _binary,
    "Relu": _clip,
    "Clip": _clip,
    "Transpose": _transpose,
    "Concat": _concat,
    "iSoftmax": _softmax,
    "ITAMax": _itamax,
    "iRMSNorm": _norm,
    "iLayerNorm": _norm,
    "iHardswish": _hardswish,
    "iGELU": _gelu,
    "TrueIntegerDiv": _true_div,
    "IntegerDiv": _integer_div,
    **{op: _alias for op in _ALIAS_OPS},
    **NEW_OPS,
    **ISLAND_OPS,
}


def supported_graph_ops() -> list[str]:
    """The ops :func:`emit_graph` writes C for (plus any node whose inputs are all constants: folded)."""
    return sorted(_OPS)


# ------------------------------------------------------------------------------------------------- assembly
def _fold(em: _Emitter, node: Node, ins: list) -> None:
    """Run a node whose inputs are all constants at generation time; its outputs become constants."""
    fn = lookup(node.op, node.domain, node.label)
    args = [None if t is None else t.value for t in ins]
    with np.errstate(all="ignore"):
        result = fn(args, node.attrs, KernelContext(True, em.graph.opset, node.label))
    result = result if isinstance(result, tuple) else (result,)
    for name, arr in zip(node.outputs, result):
        if name:
            v = np.asarray(arr).astype(np.int64)
            lo, hi = (int(v.min()), int(v.max())) if v.size else (0, 0)
            em.tensors[name] = _T(tuple(v.shape), lo, hi, _store_type(lo, hi, node.label), value=v)


def _node(em: _Emitter, node: Node) -> None:
    if node.op in ISLANDS:  # float gamma / beta: float32 constants, not integer tensors
        ins = island_inputs(em, node)
        if ins[0] is not None and ins[0].value is None:
            em.helpers.add("fquant" if node.op == "QSoftmax" else "fnorm")
    else:
        ins = [em.get(t) for t in node.inputs]
    if all(t is None or t.value is not None for t in ins) and any(t is not None for t in ins):
        _fold(em, node, ins)
        return
    fn = _OPS.get(node.op) if node.domain in ("", "ai.onnx", "PACTOps", "ai.onnx.contrib") else None
    if fn is None:
        raise CodegenError(
            "op without C", value=f"{node.op!r}", limit=f"one of {supported_graph_ops()}", where=node.label,
            fix="run this graph with GraphSim, or replace the op with supported ones",
        )  # fmt: skip
    if any(t is None for t in ins[:1]):
        raise CodegenError("inputs", value="the first input omitted", limit="present", where=node.label)
    fn(em, node, ins)
    em.pos += 1


def _finish(em: _Emitter) -> tuple[list[Buffer], str, int]:
    """Copy the outputs into ``y``; the buffers with their kinds and lifetimes; the output type and size."""
    outs = [em.get(n) for n in em.graph.output_names]
    lo, hi = min(t.lo for t in outs), max(t.hi for t in outs)
    out_type = _store_type(lo, hi, "graph outputs")
    off = 0
    copies = []
    for i, t in enumerate(outs):
        copies.append(_kernel("graph_copy.c", index=i, src=em.arr(t), n=t.size, offset=off, out_type=out_type))
        off += t.size
        if t.buf is not None:
            em.buffers[t.buf][3] = em.pos
    em.body.append("\n".join(copies))
    buffers = []
    for cname, (ctype, count, first, last) in em.buffers.items():
        if em.record:
            buffers.append(Buffer(cname, ctype, count, "state"))
        else:
            buffers.append(Buffer(cname, ctype, count, "scratch", (first, max(first, last))))
    return buffers, out_type, off


def emit_graph(
    graph: OpGraph,
    *,
    name: str = "net",
    record: bool = False,
    input_ranges: Mapping[str, tuple[int, int]] | None = None,
) -> Program:
    """C for an integer-mode graph, equal to ``GraphSim(graph).run(inputs, integer=True)`` (module docstring).

    Args:
        graph: the graph (every input with a declared shape).
        name: C prefix and file stem.
        record: every node output as a recorded state buffer (:func:`buffer_names` gives their C names).
        input_ranges: graph input name -> ``(lo, hi)``, the values the caller promises (default: the dtype's).

    Raises:
        CodegenError: an op without C (named with its node), a value range beyond int64, a bad name.
        GraphError: the graph is malformed or uses an op Siracusa's graph path does not know.
    """
    if not isinstance(graph, OpGraph):
        raise CodegenError("graph", value=type(graph).__name__, limit="an OpGraph", where=_WHERE,
                           fix="import the model with pondlib.interop.onnx.opgraph.load_opgraph")  # fmt: skip
    record = check_bool(record, "record", where=_WHERE, error=CodegenError)
    name = c_identifier(name, "program name")
    em = _Emitter(graph, record, dict(input_ranges or {}))
    for node in em.sim.order:
        try:
            _node(em, node)
        except CodegenError:
            raise
        except PondError as err:
            raise CodegenError("node", value=str(err)[:300], limit="a node the C can emit", where=node.label) from err
    buffers, out_type, n_out = _finish(em)
    helpers = _kernel("graph_helpers.c", **{k: k in em.helpers for k in ("asr32", "asr64", "isqrt", "shr", "fdiv")})
    if em.helpers & {"fquant", "fnorm"}:
        helpers += "\n" + island_helpers("fnorm" in em.helpers)
    notes = [
        f"x packs the graph inputs {list(graph.input_names)} in order, each flattened in C order ({em.in_ctype})",
        f"y packs the graph outputs {list(graph.output_names)} in order, each flattened in C order ({out_type})",
    ] + [f"record {t} = state {c}" for t, c in buffer_names(graph).items() if record and c in em.buffers]
    return build_program(
        name,
        "siracusa",
        constants=em.constants,
        buffers=buffers,
        step_body="\n\n".join(em.body),
        n_in=max(em.n_in, 1),
        in_ctype=em.in_ctype,
        n_out=n_out,
        out_ctype=out_type,
        helpers=helpers,
        notes=notes,
        description=(
            f"Siracusa integer graph {graph.name!r} ({len(graph.nodes)} nodes) as C, equal to GraphSim bit for bit."
        ),
    )
