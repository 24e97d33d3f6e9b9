r"""The C-writing helpers of :func:`~pondlib.devices.siracusa.graph_codegen.emit_graph` and more of its ops: pools,
reductions, data movement and the rest of Deeploy's integer dialect, in the same defined-C-only discipline (module
docstring of ``graph_codegen``). Each op emitter takes the emitter (``em``: tensors by name, ``out`` for a new
buffer, ``elem``/``arr`` for C references, ``code`` for the node's C), the node and its input tensors.

=========================================  =================================================================
MaxPool, AveragePool (1-D, 2-D)            window max / integer mean ``floor((2 s + n) / (2 n))``, pads,
                                           strides, dilations, ``ceil_mode``, ``count_include_pad``
GlobalMaxPool, GlobalAveragePool,          reductions over axes: ``max``, ``sum``, the integer mean above,
ReduceSum, ReduceMean, IntegerMean         Deeploy's IntegerMean (``>> l`` or rounded ``tdiv``)
Slice, Gather, Pad (every mode)            index maps computed at generation: a strided copy when affine,
                                           else a flash table of source indices (``-1``: Pad's value)
Div (integer; Deeploy's Delta/eps/eta)     C's truncating ``/`` (the Python rule truncates too)
ITAPartialMax, iNoNorm,                    Deeploy's integer rules (``deeploy_ops`` docstring)
RequantizediHardswish, RequantizedGELU
LUT                                        ``table[x - lo]`` (QDQ graphs), the index clamped where the
                                           range analysis cannot prove it inside the table
=========================================  =================================================================

The float32 islands of QDQ graphs, QSoftmax and QLayerNorm, are in
:mod:`~pondlib.devices.siracusa.graph_codegen_float`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pondlib.cprogram.program import c_literal
from pondlib.cprogram.templating import render
from pondlib.devices.siracusa.kernels import KernelContext, lookup
from pondlib.errors import CodegenError
from pondlib.graph.opgraph import Node

_PACKAGE = __package__


_I32 = (-(2**31), 2**31 - 1)
_I64 = (-(2**63), 2**63 - 1)
_STORE_TYPES = (
    ("int8_t", -(2**7), 2**7 - 1),
    ("uint8_t", 0, 2**8 - 1),
    ("int16_t", -(2**15), 2**15 - 1),
    ("uint16_t", 0, 2**16 - 1),
    ("int32_t", *_I32),
    ("int64_t", *_I64),
)


def _kernel(template: str, **values: Any) -> str:
    return render(_PACKAGE, template, **values)


def _store_type(lo: int, hi: int, where: str) -> str:
    """The narrowest C type holding [lo, hi]."""
    for ctype, tlo, thi in _STORE_TYPES:
        if tlo <= lo and hi <= thi:
            return ctype
    raise CodegenError("value range", value=(lo, hi), limit="within int64", where=where, fix=_RANGE_FIX)


_RANGE_FIX = "requantize earlier, or pass tighter input_ranges="


def _acc_type(bound: int, where: str) -> str:
    """``int32_t`` when |values| <= bound fits int32, else ``int64_t`` (an error beyond int64)."""
    if bound <= _I32[1]:
        return "int32_t"
    if bound <= _I64[1]:
        return "int64_t"
    raise CodegenError("accumulator bound", value=bound, limit="|acc| < 2^63", where=where, fix=_RANGE_FIX)


# --------------------------------------------------------------------------------------------------- tensors
@dataclass
class _T:
    """A tensor during emission: shape, value range, C type and pointer expression; ``value`` for constants;
    ``buf`` the arena buffer holding it (None for ``x`` and constants)."""

    shape: tuple[int, ...]
    lo: int
    hi: int
    ctype: str
    ptr: str = ""
    value: np.ndarray | None = None
    buf: str | None = None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def amax(self) -> int:
        return max(abs(self.lo), abs(self.hi))

    def uniform(self) -> int | None:
        """The one value of a constant whose elements all agree, else None."""
        if self.value is None or self.value.size == 0:
            return None
        v = self.value.reshape(-1)
        return int(v[0]) if bool(np.all(v == v[0])) else None


def _strides(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= int(d)
    return out[::-1]


def _bstrides(shape: Sequence[int], out_shape: Sequence[int]) -> list[int]:
    """Strides of ``shape`` broadcast (right-aligned) to ``out_shape``: 0 along broadcast dims."""
    pad = len(out_shape) - len(shape)
    full = [1] * pad + list(shape)
    st = [0] * pad + _strides(shape)
    return [0 if full[d] == 1 and out_shape[d] != 1 else st[d] for d in range(len(out_shape))]


def _merge(shape: Sequence[int], strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """Collapse adjacent dims that every operand walks contiguously (fewer, longer loops)."""
    dims = [int(d) for d in shape]
    sts = [list(s) for s in strides]
    d = len(dims) - 2
    while d >= 0:
        if all(s[d] == s[d + 1] * dims[d + 1] for s in sts):
            dims[d : d + 2] = [dims[d] * dims[d + 1]]
            for s in sts:
                s[d : d + 2] = [s[d + 1]]
        d -= 1
    keep = [i for i, n in enumerate(dims) if n != 1]
    return [dims[i] for i in keep], [[s[i] for i in keep] for s in sts]


def _ix(vars_: Sequence[str], strides: Sequence[int], base: int | str = 0) -> str:
    terms = [v if s == 1 else f"{v} * {s}" for v, s in zip(vars_, strides) if s != 0]
    if base not in (0, "0", ""):
        terms.insert(0, str(base))
    return " + ".join(terms) or "0"


def _loops(shape: Sequence[int], body: str, prefix: str = "i") -> tuple[list[str], str]:
    """Index variables and ``body`` nested in one ``for`` per dim (the body refers to the variables)."""
    vars_ = [f"{prefix}{d}" for d in range(len(shape))]
    text = body
    for v, n in reversed(list(zip(vars_, shape))):
        text = f"for (int32_t {v} = 0; {v} < {n}; ++{v}) {{\n" + _indent(text) + "\n}"
    return vars_, text


def _indent(text: str) -> str:
    return "\n".join(("    " + line) if line else line for line in text.split("\n"))


def _map(em: Any, node: Node, dst: _T, ops: list[_T], make: Callable[..., str], strides=None) -> None:
    """``dst[i] = make(dst_ref, op refs...)`` over ``dst``'s shape, the operands broadcast (or ``strides``)."""
    sts = strides or [_bstrides(o.shape, dst.shape) for o in ops]
    shape, merged = _merge(dst.shape, sts + [_strides(dst.shape)])
    vars_ = [f"i{d}" for d in range(len(shape))]
    refs = [em.elem(o, _ix(vars_, s)) for o, s in zip(ops, merged[:-1])]
    stmt = make(f"{dst.ptr}[{_ix(vars_, merged[-1])}]", *refs)
    em.code(node, _loops(shape, stmt)[1])


def _as_2d(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """A 1-D Conv/pool's spatial attributes as those of its 2-D form (height 1)."""
    out: dict[str, Any] = {}
    for key, one in (("strides", 1), ("dilations", 1), ("kernel_shape", 1)):
        if key in attrs:
            out[key] = [one, *(int(v) for v in attrs[key])]
    if "pads" in attrs:
        p = [int(v) for v in attrs["pads"]]
        out["pads"] = [0, p[0], 0, p[1]]
    return out


def _rows(x: _T) -> tuple[int, int]:
    n = x.shape[-1] if x.shape else 1
    return x.size // n, n


def _int_attr(node: Node, key: str, default: Any = None) -> int:
    v = node.attrs.get(key, default)
    if v is None:
        raise CodegenError("attribute", value=key, limit="present", where=node.label, fix="re-export the model")
    return int(float(np.asarray(v).reshape(-1)[0]))


# ------------------------------------------------------------------------------------------------ more ops
_I63 = 2**62


def _const(t: _T | None, node: Node, what: str) -> np.ndarray | None:
    if t is None:
        return None
    if t.value is None:
        raise CodegenError(f"{node.op} {what}", value="a computed tensor", limit="a constant", where=node.label,
                           fix=f"fold the {what} into a constant (shape inference / constant folding)")  # fmt: skip
    return t.value


def _lit(v: int) -> str:
    return c_literal(int(v), "int64_t")


# ------------------------------------------------------------------------------------------------ pooling
def _pool_params(node: Node, x: _T) -> tuple:
    """(B C, H, W, kh, kw, sy, sx, dy, dx, pt, pl, pb, pr, ho, wo) of a 1-D / 2-D pool (1-D: H = 1)."""
    nd = len(x.shape) - 2
    if nd not in (1, 2) or node.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise CodegenError(node.op, value=f"input {x.shape}", limit="1-D NCW or 2-D NCHW, explicit pads",
                           where=node.label, fix="export the pool with explicit pads on 1-D/2-D tensors")  # fmt: skip
    attrs = {**node.attrs, **_as_2d(node.attrs)} if nd == 1 else dict(node.attrs)
    spatial = (1, x.shape[2]) if nd == 1 else x.shape[2:]
    kh, kw = (int(v) for v in attrs["kernel_shape"])
    sy, sx = (int(v) for v in attrs.get("strides", (1, 1)))
    dy, dx = (int(v) for v in attrs.get("dilations", (1, 1)))
    pt, pl, pb, pr = (int(v) for v in attrs.get("pads", (0, 0, 0, 0)))
    return (x.shape[0] * x.shape[1], *spatial, kh, kw, sy, sx, dy, dx, pt, pl, pb, pr)


def _pool(em: Any, node: Node, ins: list) -> None:
    x = ins[0]
    ctx = KernelContext(True, em.graph.opset, node.label)
    oshape = lookup(node.op, node.domain, node.label)([np.zeros(x.shape, np.int64)], node.attrs, ctx).shape
    planes, h, w, kh, kw, sy, sx, dy, dx, pt, pl, pb, pr = _pool_params(node, x)
    ho, wo = (1, oshape[2]) if len(x.shape) == 3 else oshape[2:]
    for n_out, s, d, k, p, size in ((ho, sy, dy, kh, pt, h), (wo, sx, dx, kw, pl, w)):
        starts = np.arange(n_out) * s - p
        if any(not np.any((st + d * np.arange(k) >= 0) & (st + d * np.arange(k) < size)) for st in starts):
            raise CodegenError(node.op, value="a window entirely in the padding", limit="windows that see the input",
                               where=node.label, fix="pad less than the window")  # fmt: skip
    is_max = node.op == "MaxPool"
    n = kh * kw
    acc = "int64_t" if is_max else _acc_type(2 * n * x.amax + 2 * n, node.label)
    if not is_max:
        em.helpers.add("fdiv")
    include = bool(int(node.attrs.get("count_include_pad", 0)))
    dst = em.out(node.outputs[0], oshape, x.lo, x.hi, node)
    em.code(node, _kernel(
        "graph_pool.c", planes=planes, h=h, w=w, ho=ho, wo=wo, kh=kh, kw=kw, sy=sy, sx=sx, dy=dy, dx=dx, pt=pt,
        pl=pl, ph=h + pb, pw=w + pr, src=em.arr(x), dst=dst.ptr, out_type=dst.ctype, acc=acc, is_max=is_max,
        init=_lit(x.lo) if is_max else "0", include=include,
    ))  # fmt: skip


# ----------------------------------------------------------------------------------------------- reductions
def _reduce_axes(em: Any, node: Node, ins: list, x: _T) -> tuple[tuple[int, ...], bool]:
    rank = len(x.shape)
    if node.op.startswith("Global"):
        return tuple(range(2, rank)), True
    keep = bool(int(np.asarray(node.attrs.get("keepdims", 1)).reshape(-1)[0]))
    raw = _const(ins[1], node, "axes") if len(ins) > 1 and ins[1] is not None else node.attrs.get("axes")
    axes = [] if raw is None else [int(a) for a in np.asarray(raw).reshape(-1)]
    if not axes:
        if node.op != "IntegerMean" and int(node.attrs.get("noop_with_empty_axes", 0)):
            return (), keep
        return tuple(range(rank)), keep
    return tuple(sorted({a % rank for a in axes})), keep


def _reduce(em: Any, node: Node, ins: list) -> None:
    x = ins[0]
    axes, keep = _reduce_axes(em, node, ins, x)
    kept = [d for d in range(len(x.shape)) if d not in axes]
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    kind = {"ReduceSum": "sum", "GlobalMaxPool": "max", "IntegerMean": "imean"}.get(node.op, "mean")
    oshape = (
        tuple(1 if d in axes else x.shape[d] for d in range(len(x.shape))) if keep else tuple(x.shape[d] for d in kept)
    )
    lo, hi = (count * x.lo, count * x.hi) if kind == "sum" else (x.lo, x.hi)
    if not axes:
        lo, hi = x.lo, x.hi
    acc = "int64_t" if kind == "max" else _acc_type(2 * count * x.amax + 2 * count, node.label)
    dst = em.out(node.outputs[0], oshape or (1,), lo, hi, node)
    st = _strides(x.shape)
    kshape, (ks, kd) = _merge([x.shape[d] for d in kept], [[st[d] for d in kept], _strides([x.shape[d] for d in kept])])
    rshape, (rs,) = _merge([x.shape[a] for a in axes], [[st[a] for a in axes]])
    ov = [f"o{d}" for d in range(len(kshape))]
    rv = [f"r{d}" for d in range(len(rshape))]
    elem = f"({acc}){em.arr(x)}[{_ix(ov + rv, ks + rs)}]"
    step = f"if ({elem} > s) s = {elem};" if kind == "max" else f"s += {elem};"
    inner = _loops(rshape, step, "r")[1]
    final = _reduce_final(em, kind, count, acc)
    init = _lit(x.lo) if kind == "max" else "0"
    body = f"{acc} s = {init};\n{inner}\n{dst.ptr}[{_ix(ov, kd)}] = ({dst.ctype})({final});"
    em.code(node, _loops(kshape, "{\n" + _indent(body) + "\n}", "o")[1])


def _reduce_final(em: Any, kind: str, count: int, acc: str) -> str:
    if kind in ("sum", "max") or count == 1:
        return "s"
    if kind == "mean":
        em.helpers.add("fdiv")
        return f"gq_fdiv64(2 * (int64_t)s + {count}, {2 * count})"
    if count & (count - 1) == 0:
        shift = count.bit_length() - 1
        em.helpers.add("asr64")
        return f"gq_asr64((int64_t)s + {1 << shift >> 1}, {shift})"
    return f"((int64_t)s + (s >= 0 ? 1 : -1) * {count >> 1}) / {count}"


# ------------------------------------------------------------------------------------------- data movement
def _index_map(em: Any, node: Node, ins: list) -> tuple[np.ndarray, int | None]:
    """The flat source index of every output element (-1: Pad's constant) and Pad's value (None otherwise)."""
    x = ins[0]
    args: list[Any] = [np.arange(1, x.size + 1, dtype=np.int64).reshape(x.shape)]
    for i, t in enumerate(ins[1:], 1):
        args.append(None if t is None else _const(t, node, f"input {i}"))
    attrs = dict(node.attrs)
    value = None
    if node.op == "Pad":
        mode = attrs.get("mode", "constant")
        mode = mode.decode() if isinstance(mode, bytes) else str(mode)
        if mode == "constant":
            if len(args) > 2 and args[2] is not None:
                value, args[2] = int(np.asarray(args[2]).reshape(-1)[0]), np.int64(0)
            else:
                value, attrs["value"] = int(float(attrs.get("value", 0.0))), 0.0
    idx = lookup(node.op, node.domain, node.label)(args, attrs, KernelContext(True, em.graph.opset, node.label))
    return np.asarray(idx, dtype=np.int64) - 1, value


def _affine(idx: np.ndarray) -> tuple[int, list[int]] | None:
    """``(base, strides)`` when ``idx[i] = base + sum_d i_d strides_d`` for every index, else None."""
    if idx.size == 0 or np.any(idx < 0):
        return None
    base = int(idx.reshape(-1)[0])
    strides = []
    for d, n in enumerate(idx.shape):
        one = [0] * idx.ndim
        one[d] = 1 if n > 1 else 0
        strides.append(int(idx[tuple(one)]) - base if n > 1 else 0)
    grid = base + sum(np.arange(n).reshape([-1 if e == d else 1 for e in range(idx.ndim)]) * s
                      for d, (n, s) in enumerate(zip(idx.shape, strides)))  # fmt: skip
    return (base, strides) if np.array_equal(np.broadcast_to(grid, idx.shape), idx) else None


def _move(em: Any, node: Node, ins: list) -> None:
    x = ins[0]
    idx, value = _index_map(em, node, ins)
    lo, hi = x.lo, x.hi
    if np.any(idx < 0):
        lo, hi = min(lo, value), max(hi, value)
    dst = em.out(node.outputs[0], idx.shape or (1,), lo, hi, node)
    fit = _affine(idx.reshape(dst.shape))
    if fit is not None:
        base, strides = fit
        shape, (ss, ds) = _merge(dst.shape, [strides, _strides(dst.shape)])
        vars_ = [f"i{d}" for d in range(len(shape))]
        stmt = f"{dst.ptr}[{_ix(vars_, ds)}] = ({dst.ctype}){em.arr(x)}[{_ix(vars_, ss, base)}];"
        em.code(node, _loops(shape, stmt)[1])
        return
    table = _T(idx.shape, int(idx.min()), int(idx.max()), _store_type(int(idx.min()), int(idx.max()), node.label),
               value=idx.reshape(-1))  # fmt: skip
    fill = _lit(value if value is not None else 0)
    em.code(node, f"for (int32_t i = 0; i < {dst.size}; ++i) {{\n    const int32_t t = {em.arr(table)}[i];\n"
                  f"    {dst.ptr}[i] = ({dst.ctype})(t < 0 ? {fill} : (int64_t){em.arr(x)}[t]);\n}}")  # fmt: skip


# ------------------------------------------------------------------------------------------------ arithmetic
def _div(em: Any, node: Node, ins: list) -> None:
    a, b = ins[0], ins[1]
    deeploy = all(k in node.attrs for k in ("Delta", "eps", "eta"))
    delta, eps, eta = (_int_attr(node, k) for k in ("Delta", "eps", "eta")) if deeploy else (1, 0, 1)
    ua, vb = abs(delta * eta) * a.amax, abs(eta) * b.amax + abs(eps)
    if ua + vb >= _I63:
        raise CodegenError("Div bound", value=ua + vb, limit="< 2^62", where=node.label, fix=_RANGE_FIX)
    shape = np.broadcast_shapes(a.shape, b.shape)
    dst = em.out(node.outputs[0], shape, -(ua + vb), ua + vb, node)
    em.helpers.add("asr64")

    def make(d: str, av: str, bv: str) -> str:
        rnd = "(u > 0 ? 1 : (u < 0 ? -1 : 0)) * gq_asr64(v, 1)" if deeploy else "0"
        return (f"{{ const int64_t u = (int64_t){delta * eta} * {av}; const int64_t v = (int64_t){eta} * {bv} + {eps}; "
                f"{d} = ({dst.ctype})(v == 0 ? 0 : (u + {rnd}) / v); }}")  # fmt: skip

    _map(em, node, dst, [a, b], make)


def _nonorm(em: Any, node: Node, ins: list) -> None:
    x, w, b = ins[0], ins[1], ins[2]
    d = _int_attr(node, "D").bit_length() - 1
    mul, n = _int_attr(node, "mul"), _int_attr(node, "n_levels")
    if (x.amax * w.amax + b.amax) * abs(mul) >= _I63:
        raise CodegenError("iNoNorm bound", value=(x.amax * w.amax + b.amax) * abs(mul), limit="< 2^62",
                           where=node.label, fix=_RANGE_FIX)  # fmt: skip
    shape = np.broadcast_shapes(x.shape, w.shape, b.shape)
    dst = em.out(node.outputs[0], shape, -(n // 2), n // 2 - 1, node)
    em.helpers.add("asr64")
    _map(em, node, dst, [x, w, b], lambda o, xv, wv, bv: (
        f"{o} = ({dst.ctype})gq_asr64(((int64_t){xv} * {wv} + {bv}) * {_lit(mul)}, {d});"))  # fmt: skip


def _rq_act(em: Any, node: Node, ins: list) -> None:
    """RequantizediHardswish / RequantizedGELU: the activation, then ``clip((h mul + add + half) >> s, -128, 127)``."""
    x = ins[0]
    if node.op == "RequantizediHardswish":
        mul, add, shift = (_int_attr(node, k) for k in ("mul", "add", "shift"))
        oos, three, six = (_int_attr(node, k) for k in ("one_over_six", "three", "six"))
        hb = x.amax * six * oos
        act = (f"const int64_t u = (int64_t){{v}} + {three}; "
               f"const int64_t h = (int64_t){{v}} * ((u < 0 ? 0 : (u > {six} ? {six} : u)) * {oos});")  # fmt: skip
    else:
        mul, add, shift = (
            int(np.asarray(_const(t, node, k)).reshape(-1)[0]) for t, k in zip(ins[1:4], ("mul", "add", "shift"))
        )
        b, one = _int_attr(node, "b"), _int_attr(node, "one")
        hb = x.amax * ((abs(one) + max(abs(one), abs(one - b * b))) // 2 + 1)
        em.helpers.add("asr64")
        act = (f"const int64_t q0 = (int64_t){{v}} < 0 ? -(int64_t){{v}} : (int64_t){{v}}; "
               f"const int64_t q = (q0 < {-b} ? q0 : {-b}) + ({b}); "
               f"const int64_t sg = {{v}} > 0 ? 1 : ({{v}} < 0 ? -1 : 0); "
               f"const int64_t h = (int64_t){{v}} * gq_asr64({one} + sg * ({one} - q * q), 1);")  # fmt: skip
    if hb * abs(mul) + abs(add) + (1 << max(shift, 1)) >= _I63 or not 0 <= shift <= 62:
        raise CodegenError(f"{node.op} bound", value=hb * abs(mul), limit="< 2^62, shift 0..62", where=node.label,
                           fix=_RANGE_FIX)  # fmt: skip
    em.helpers.add("asr64")
    half = (1 << (shift - 1)) if shift > 0 else 0
    dst = em.out(node.outputs[0], x.shape, -128, 127, node)

    def make(d: str, v: str) -> str:
        return (f"{{ {act.format(v=v)} const int64_t t = gq_asr64(h * {_lit(mul)} + {_lit(add + half)}, {shift}); "
                f"{d} = ({dst.ctype})(t < -128 ? -128 : (t > 127 ? 127 : t)); }}")  # fmt: skip

    _map(em, node, dst, [x], make)


def _partial_max(em: Any, node: Node, ins: list) -> None:
    x = ins[0]
    n, group = _int_attr(node, "n_levels"), _int_attr(node, "group_width")
    rows, cols = _rows(x)
    if not 1 <= group <= cols or cols % group:
        raise CodegenError("ITAPartialMax group_width", value=group, limit=f"a divisor of the row length {cols}",
                           where=node.label, fix="use a group width that divides the row")  # fmt: skip
    dst = em.out(node.outputs[0], x.shape, 0, max(n // 2 - 1, 0), node)
    em.helpers.add("shr")
    em.code(node, _kernel("graph_partialmax.c", rows=rows, n=cols, group=group, groups=cols // group,
                          src=em.arr(x), dst=dst.ptr, out_type=dst.ctype,
                          levels=_lit((n // 2 - 1) * 256)))  # fmt: skip


def _lut(em: Any, node: Node, ins: list) -> None:
    x, table = ins[0], ins[1]
    tv = _const(table, node, "table").reshape(-1)
    lo = _int_attr(node, "lo")
    flat = _T((tv.size,), int(tv.min()), int(tv.max()), _store_type(int(tv.min()), int(tv.max()), node.label),
              value=tv)  # fmt: skip
    dst = em.out(node.outputs[0], x.shape, flat.lo, flat.hi, node)
    top = tv.size - 1
    inside = x.lo >= lo and x.hi <= lo + top

    def make(d: str, v: str) -> str:
        i = f"(int64_t){v} - {_lit(lo)}"
        i = i if inside else f"(int64_t){v} < {_lit(lo)} ? 0 : ((int64_t){v} > {_lit(lo + top)} ? {top} : {i})"
        return f"{d} = ({dst.ctype}){em.arr(flat)}[{i}];"

    _map(em, node, dst, [x], make)


NEW_OPS: Mapping[str, Any] = {
    "MaxPool": _pool,
    "AveragePool": _pool,
    "GlobalMaxPool": _reduce,
    "GlobalAveragePool": _reduce,
    "ReduceSum": _reduce,
    "ReduceMean": _reduce,
    "IntegerMean": _reduce,
    "Slice": _move,
    "Gather": _move,
    "Pad": _move,
    "Div": _div,
    "iNoNorm": _nonorm,
    "RequantizediHardswish": _rq_act,
    "RequantizedGELU": _rq_act,
    "RequantizediGELU": _rq_act,
    "ITAPartialMax": _partial_max,
    "LUT": _lut,
}
