r"""The float32 islands of QDQ graphs as C: QSoftmax and QLayerNorm, bit for bit the numpy kernels of
:mod:`~pondlib.devices.siracusa.kernels.qdq_ops` (their module docstring), for
:func:`~pondlib.devices.siracusa.graph_codegen.emit_graph`.

Every float step of the kernels is one IEEE 754 float32 operation in a fixed order; the C performs the very same
operations in the same order (``-ffp-contract=off``: no fused multiply-add, ``FLT_EVAL_METHOD == 0``: no excess
precision), so it rounds identically. It assumes IEEE 754 arithmetic in round-to-nearest-even (C11 Annex F: the
host's SSE, RV32IMC's compiler-rt soft float) and uses no libm, so the host and the microcontroller run the same
code. The float constants (the scales, ``epsilon``, ``D``, the exponential table, ``gamma``, ``beta``) are the
kernels' float32 values, written as exact hexadecimal literals.

==========  ================================================================================================
QSoftmax    over ``n`` values along ``axis`` (stride ``inner``): ``m = max_j x_j`` (integers), ``e_j = E[m -
            x_j]`` with ``E = exp_table(scale_in, hi_in - lo_in + 1)`` stored in flash (the index clamped to
            the table where the range analysis cannot prove it inside), ``S = e_0``, ``S = S + e_j`` for ``j =
            1 .. n-1``, then ``y_j = Q(e_j / S)``
QLayerNorm  over rows of ``D`` contiguous values (dims ``axis..``): ``v_j = float32(x_j - z_in) * s_in``
            (recomputed at each pass, the same rounding), ``mu = (((v_0 + v_1) + v_2) + ...) / D``, ``d_j = v_j -
            mu``, ``var = (((d_0 d_0 + d_1 d_1) + ...) / D``, ``den = sqrt(var + eps)`` (``gq_fsqrt``: correctly
            rounded from the bit pattern with an exact integer square root), ``u_j = d_j / den`` (IEEE's
            ``+-inf`` / NaN spelled out where ``den`` is 0), ``u_j = u_j * gamma_j``, ``u_j = u_j + beta_j``
            (each when present; broadcast as numpy does: one row of ``D``, or the whole tensor), ``y_j = Q(u_j)``
==========  ================================================================================================

``Q`` is ONNX QuantizeLinear as :func:`~pondlib.devices.siracusa.kernels.qdq_ops.quantize_linear` computes it
(``gq_fquant``): ``r = v / s_out`` (a float32 division), NaN -> 0, ``|r| >= 2^30`` saturated (the zero point and
the bounds are checked below ``2^29``, so the result is the same clipped value), else ``rint(r)`` half to even as
``(r + 2^23) - 2^23`` (``|r| < 2^23``; larger floats are integers already), then ``clip(q + z_out, lo, hi)`` in
int32. The output range of QSoftmax is ``[Q(0), Q(1)]`` (``0 <= p <= 1``), of QLayerNorm ``[lo, hi]``.

Example:
    >>> from pondlib.graph.opgraph import Node, OpGraph, TensorInfo
    >>> from pondlib.devices.siracusa.graph_codegen import emit_graph
    >>> att = {"scale_in": 0.1, "zero_in": 0, "lo_in": -128, "hi_in": 127, "scale_out": 1 / 256,
    ...        "zero_out": -128, "lo": -128, "hi": 127, "axis": -1}
    >>> g = OpGraph((TensorInfo("x", (2, 4), "int8"),), (TensorInfo("y", (2, 4), "int8"),),
    ...             (Node("sm", "QSoftmax", ("x",), ("y",), att),))
    >>> "gq_fquant" in emit_graph(g).sources["net.c"]
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pondlib.cprogram.program import Constant, c_literal
from pondlib.devices.siracusa.graph_codegen_ops import _T, _kernel, _lit
from pondlib.devices.siracusa.kernels.qdq_ops import exp_table, quantize_linear
from pondlib.errors import CodegenError
from pondlib.graph.opgraph import Node

__all__ = ["ISLANDS", "island_inputs", "island_helpers"]

#: The ops this module writes C for.
ISLANDS = ("QSoftmax", "QLayerNorm")
_Q_LIMIT = 2**29  # |zero_out|, |lo|, |hi| below this: gq_fquant's saturation at 2^30 stays exact
_TABLE_LIMIT = 2**16  # QSoftmax's exponential table, entries
_FIX = "build the node with qdq_to_graph (ONNX scales, zero points and 8/16-bit types)"


def island_helpers(norm: bool) -> str:
    """The C helpers of the islands (``gq_fquant``; with ``norm`` also ``gq_fbits``, ``gq_fsqrt``, ``gq_fdiv0``)."""
    return _kernel("graph_island_helpers.c", norm=bool(norm))


def island_inputs(em: Any, node: Node) -> list[_T | None]:
    """The island's operands: its integer input as the emitter holds it, then (QLayerNorm) ``gamma`` and
    ``beta`` as float32 constants (``_T`` of C type ``float`` holding the value the kernel sees), or None."""
    x = em.get(node.inputs[0]) if node.inputs and node.inputs[0] else None
    out: list[_T | None] = [x]
    for i, name in enumerate(node.inputs[1:3] if node.op == "QLayerNorm" else (), 1):
        if not name:
            out.append(None)
            continue
        if name not in em.consts_int:
            raise CodegenError(
                f"{node.op} {'gamma' if i == 1 else 'beta'}", value=f"{name!r}, a computed tensor",
                limit="a constant", where=node.label, fix=_FIX,
            )  # fmt: skip
        v = np.asarray(em.consts_int[name], dtype=np.float32)
        out.append(_T(tuple(v.shape), 0, 0, "float", value=v))
    return out


def _scalar(node: Node, key: str, default: Any = None) -> Any:
    v = node.attrs.get(key, default)
    if v is None:
        raise CodegenError("attribute", value=key, limit="present", where=node.label, fix=_FIX)
    arr = np.asarray(v).reshape(-1)
    if arr.size != 1:
        raise CodegenError(f"{node.op} {key}", value=f"{arr.size} values", limit="one", where=node.label, fix=_FIX)
    return arr[0]


def _flit(v: Any) -> str:
    return f"({c_literal(np.float32(v), 'float')})"


def _quant(node: Node) -> tuple[np.float32, int, int, int, str]:
    """``(s_out, z_out, lo, hi, C arguments of gq_fquant after the value)``, checked for gq_fquant."""
    s = np.float32(_scalar(node, "scale_out"))
    z, lo, hi = (int(_scalar(node, k)) for k in ("zero_out", "lo", "hi"))
    if not (np.isfinite(s) and s > 0) or not lo <= hi or max(abs(z), abs(lo), abs(hi)) >= _Q_LIMIT:
        raise CodegenError(
            f"{node.op} output quantization", value=f"scale {float(s)}, zero {z}, [{lo}, {hi}]",
            limit="a finite scale > 0 (float32), lo <= hi, |zero|, |lo|, |hi| < 2^29", where=node.label, fix=_FIX,
        )  # fmt: skip
    return s, z, lo, hi, f"{_flit(s)}, {z}, {lo}, {hi}"


def _int_type(x: _T, extra: int) -> str:
    """int32_t when ``|x| + extra`` fits int32, else int64_t (an error beyond 2^62)."""
    bound = x.amax + abs(extra)
    if bound >= 2**62:
        raise CodegenError("island input range", value=(x.lo, x.hi), limit="|x| < 2^62", fix=_FIX)
    return "int32_t" if bound < 2**31 else "int64_t"


def qsoftmax(em: Any, node: Node, ins: list) -> None:
    """QSoftmax (module docstring)."""
    x = ins[0]
    s, z, lo, hi, qargs = _quant(node)
    rank = len(x.shape)
    axis = int(_scalar(node, "axis", -1)) % max(rank, 1)
    lo_in, hi_in = int(_scalar(node, "lo_in", -128)), int(_scalar(node, "hi_in", 127))
    if not 1 <= hi_in - lo_in + 1 <= _TABLE_LIMIT:
        raise CodegenError("QSoftmax input type", value=f"[{lo_in}, {hi_in}]", limit=f"1 .. {_TABLE_LIMIT} levels",
                           where=node.label, fix=_FIX)  # fmt: skip
    s_in = _scalar(node, "scale_in")
    if not (np.isfinite(float(s_in)) and abs(float(s_in)) <= float(np.finfo(np.float32).max) and s_in > 0):
        raise CodegenError("QSoftmax scale_in", value=float(s_in), limit="a finite float32 > 0", where=node.label,
                           fix=_FIX)  # fmt: skip
    table = exp_table(s_in, hi_in - lo_in + 1)
    top = table.size - 1
    tab = f"k{len(em.constants)}"
    em.constants.append(Constant(tab, "float", table))
    n = x.shape[axis] if rank else 1
    inner = int(np.prod(x.shape[axis + 1 :], dtype=np.int64)) if rank else 1
    outer = x.size // (n * inner)
    q01 = quantize_linear(np.float32([0.0, 1.0]), s, z, lo, hi)
    dst = em.out(node.outputs[0], x.shape, int(q01[0]), int(q01[1]), node)
    itype = _int_type(x, x.amax)
    index = "k" if x.hi - x.lo <= top else f"(k > {top} ? {top} : k)"
    em.code(node, _kernel(
        "graph_island_softmax.c", outer=outer, inner=inner, n=n, span=n * inner, src=em.arr(x), dst=dst.ptr,
        out_type=dst.ctype, itype=itype, table=tab, index=index, quant=qargs,
    ))  # fmt: skip


def _affine_param(em: Any, t: _T | None, shape: tuple[int, ...], axis: int, node: Node, what: str) -> str:
    """C of ``gamma`` / ``beta`` at element ``base + j``: one row of ``D`` (index ``j``) or the whole tensor."""
    if t is None:
        return ""
    assert t.value is not None
    try:
        full = np.broadcast_shapes(shape, t.shape)
    except ValueError:
        full = None
    if full != tuple(shape):
        raise CodegenError(f"QLayerNorm {what}", value=f"shape {t.shape}", limit=f"broadcastable to {shape}",
                           where=node.label, fix=_FIX)  # fmt: skip
    grid = np.broadcast_to(t.value, shape).reshape(-1, int(np.prod(shape[axis:], dtype=np.int64)))
    per_row = bool(np.all(grid == grid[:1])) or grid.shape[0] == 1
    values = grid[0] if per_row else grid.reshape(-1)
    name = f"k{len(em.constants)}"
    em.constants.append(Constant(name, "float", values))
    return f"{name}[j]" if per_row else f"{name}[base + j]"


def qlayernorm(em: Any, node: Node, ins: list) -> None:
    """QLayerNorm (module docstring)."""
    x = ins[0]
    s, z, lo, hi, qargs = _quant(node)
    rank = len(x.shape)
    axis = int(_scalar(node, "axis", -1)) % max(rank, 1)
    s_in, z_in = np.float32(_scalar(node, "scale_in")), int(_scalar(node, "zero_in"))
    eps = np.float32(_scalar(node, "epsilon", 1e-5))
    d = int(np.prod(x.shape[axis:], dtype=np.int64)) if rank else 1
    gamma = _affine_param(em, ins[1] if len(ins) > 1 else None, x.shape, axis, node, "gamma")
    beta = _affine_param(em, ins[2] if len(ins) > 2 else None, x.shape, axis, node, "beta")
    dst = em.out(node.outputs[0], x.shape, lo, hi, node)
    itype = _int_type(x, z_in)
    em.code(node, _kernel(
        "graph_island_layernorm.c", rows=x.size // d, n=d, src=em.arr(x), dst=dst.ptr, out_type=dst.ctype,
        itype=itype, zero_in=f"({_lit(z_in) if itype == 'int64_t' else z_in})", scale_in=_flit(s_in),
        count=_flit(np.float32(d)), eps=_flit(eps), gamma=gamma, beta=beta, has_gamma=bool(gamma),
        has_beta=bool(beta), quant=qargs,
    ))  # fmt: skip


OPS = {"QSoftmax": qsoftmax, "QLayerNorm": qlayernorm}
