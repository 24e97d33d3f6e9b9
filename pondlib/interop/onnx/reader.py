r"""Reading ONNX files: parse and check the model, fold constants, and import float graphs as layers.

Accepted models (:func:`load_onnx`): one float input, one output, default-domain opset
>= :data:`MIN_OPSET` (6, the opset of the PyTorch exports shipped with ONNX's backend tests; the
semantics implemented here are those of opsets 6 to 23: Softmax before 13 coerces to 2-D, BatchNormalization
before 9 may carry ``spatial``), and only the ops of :data:`FLOAT_OPS`. Weights must be constants
(initializers or folded constant subgraphs such as PyTorch's ``Shape -> Gather -> Concat -> Reshape``).
Folded at import, each with a note: BatchNormalization into the preceding Conv/Gemm
(``W' = W g / sqrt(v + eps)``, ``b' = (b - mean) g / sqrt(v + eps) + beta``), MatMul + Add into a Gemm,
Identity/Dropout; a final Softmax/LogSoftmax is dropped from the layers (it preserves the argmax) and
kept in :attr:`FloatModel.tail`.

Refused with :class:`~pondlib.errors.ONNXError` naming the node and op: unsupported ops or attributes
(``transA``, ``auto_pad`` other than NOTSET/VALID/SAME_*, BatchNormalization ``spatial=0``), non-constant
weights, a Softmax that is not the last op, and shapes that are not static (give ``input_shape``).

Example:
    >>> import numpy as np
    >>> from onnx import TensorProto, helper, numpy_helper
    >>> w = numpy_helper.from_array(np.ones((2, 3), np.float32), "W")
    >>> g = helper.make_graph([helper.make_node("Gemm", ["x", "W"], ["y"], transB=1)], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])], [w])
    >>> m = load_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    >>> [(ly.op, ly.params["weight"].shape) for ly in m.layers], m.input_shape
    ([('gemm', (3, 2))], (3,))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from pondlib.errors import ONNXError
from pondlib.interop.onnx.layers import FloatLayer, FloatModel, check_layer_params
from pondlib.validate import check_elements

__all__ = ["MIN_OPSET", "FLOAT_OPS", "QDQ_OPS", "read_model", "load_onnx", "Graph"]

#: The oldest default-domain opset accepted (PyTorch's opset-6 exports in ONNX's backend test data).
MIN_OPSET = 6

#: Ops of float models (constant-only helpers are folded and never reach the layer list).
FLOAT_OPS = (
    "Gemm", "MatMul", "Add", "Conv", "Relu", "LeakyRelu", "MaxPool", "AveragePool", "Flatten", "Reshape",
    "Squeeze", "Unsqueeze", "BatchNormalization", "Softmax", "LogSoftmax", "Identity", "Dropout",
)  # fmt: skip
#: Ops evaluated only on constants (shape arithmetic as PyTorch exports it).
CONST_OPS = ("Constant", "Shape", "Gather", "Concat", "Cast", "Transpose", "Mul", "Div", "Sub")
#: Extra ops of QDQ models.
QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")


def read_model(path_or_model: Any) -> Any:
    """An ``onnx.ModelProto`` from a path, serialized bytes or a ModelProto, checked by ``onnx.checker``.

    Raises:
        ONNXError: a missing file, bytes that are not a (complete) ONNX model, a model the checker refuses,
            no default-domain opset or one below :data:`MIN_OPSET`.
    """
    import onnx

    from pondlib.interop.onnx.opgraph import parse_model

    model, where = parse_model(path_or_model)
    if not model.opset_import:
        raise ONNXError(
            "not an ONNX model",
            value=f"{len(model.graph.node)} nodes, no opset imports",
            limit="a graph with nodes and a default-domain opset",
            where=where,
            fix="pass a complete .onnx file (truncated or not ONNX at all?)",
        )
    opset = _opset(model, where)
    try:
        onnx.checker.check_model(model)
    except Exception as err:  # the checker raises ValidationError and C++ errors of several types
        raise ONNXError(
            "invalid ONNX model",
            value=str(err).splitlines()[0][:200] if str(err) else type(err).__name__,
            limit="a model onnx.checker accepts",
            where=where,
            fix="re-export the model (truncated or corrupted file?)",
        ) from None
    del opset
    return model


def _opset(model: Any, where: str) -> int:
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not versions:
        raise ONNXError(
            "default-domain opset", value="none", limit=f">= {MIN_OPSET}", where=where, fix="export with opset >= 13"
        )
    if versions[0] < MIN_OPSET:
        raise ONNXError(
            "opset version",
            value=versions[0],
            limit=f">= {MIN_OPSET}",
            where=where,
            fix="re-export with a newer opset (torch.onnx.export(..., opset_version=13)) or onnx.version_converter",
        )
    return int(versions[0])


def _attrs(node: Any) -> dict:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _unsupported(node: Any, what: str, value: Any, limit: Any, fix: str) -> ONNXError:
    return ONNXError(
        what, value=value, limit=limit, where=f"node {node.name or node.output[0]!r} ({node.op_type})", fix=fix
    )


class Graph:
    """Walks an ONNX graph: constants (initializers, folded constant ops), tensor shapes, consumers."""

    def __init__(self, model: Any, input_shape: Any = None) -> None:

        self.model = model
        self.opset = _opset(model, "model")
        g = model.graph
        self.const: dict[str, np.ndarray] = {}
        for i in g.initializer:  # declared size checked before the tensor is allocated
            check_elements([int(d) for d in i.dims], f"initializer {i.name!r}", where="model", error=ONNXError)
            self.const[i.name] = _to_array(i, f"initializer {i.name!r}")
        inputs = [i for i in g.input if i.name not in self.const]
        if len(inputs) != 1 or len(g.output) != 1:
            raise ONNXError(
                "graph inputs/outputs",
                value=f"{len(inputs)} inputs, {len(g.output)} outputs",
                limit="one data input and one output",
                where="graph",
                fix="export a single-input, single-output model",
            )
        self.input = inputs[0]
        self.output = g.output[0].name
        self.input_shape = self._static_shape(input_shape)
        self.batch = 1
        dims = self.input.type.tensor_type.shape.dim
        if dims and dims[0].HasField("dim_value") and input_shape is None:
            self.batch = int(dims[0].dim_value)
        elif input_shape is not None:
            self.batch = int(tuple(input_shape)[0])
        self.consumers: dict[str, list] = {}
        for node in g.node:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
        self.nodes = list(g.node)

    def _static_shape(self, given: Any) -> tuple[int, ...]:
        dims = self.input.type.tensor_type.shape.dim
        if given is not None:
            if isinstance(given, (str, bytes)) or not hasattr(given, "__len__"):
                raise ONNXError(
                    "input_shape", value=given, limit="a tuple (B, ...)", where="load_onnx", fix="pass (1, 64)"
                )
            shape = tuple(given)
            if (
                not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1 for v in shape)
                or len(shape) != len(dims)
                or len(shape) < 2
            ):
                raise ONNXError(
                    "input_shape",
                    value=shape,
                    limit=f"{len(dims)} positive integers (batch first), rank >= 2",
                    where="load_onnx",
                    fix="pass the full input shape, e.g. (1, 3, 32, 32)",
                )
            check_elements(shape[1:], f"input {self.input.name!r}", where="load_onnx", error=ONNXError)
            return tuple(int(v) for v in shape[1:])
        if len(dims) < 2:
            raise ONNXError(
                "input rank", value=len(dims), limit=">= 2 (batch first)", where=self.input.name, fix="pass input_shape"
            )
        bad = [i for i, d in enumerate(dims) if i > 0 and not (d.HasField("dim_value") and d.dim_value > 0)]
        if bad:
            raise ONNXError(
                "dynamic input shape",
                value=[dims[i].dim_param or "?" for i in bad],
                limit="static sizes except the batch axis",
                where=f"input {self.input.name!r}",
                fix="pass input_shape=(B, ...) with every size",
            )
        shape = tuple(int(d.dim_value) for d in dims[1:])
        check_elements(shape, f"input {self.input.name!r}", where="model", error=ONNXError,
                       fix="a model input of at most that many features per sample; nothing was allocated")  # fmt: skip
        return shape

    def node_attrs(self, node: Any) -> dict:
        return _attrs(node)

    def fold(self, node: Any, shapes: dict) -> bool:
        """Evaluate ``node`` on constants (True when folded into :attr:`const`)."""
        op, a = node.op_type, _attrs(node)
        if op == "Constant":
            if "value" not in a:
                raise _unsupported(node, "Constant attribute", sorted(a), "value", "export the constant as a tensor")
            t = a["value"]
            check_elements([int(d) for d in t.dims], "Constant value", where=f"node {node.name!r}", error=ONNXError)
            self.const[node.output[0]] = _to_array(t, f"node {node.name or node.output[0]!r} (Constant)")
            return True
        if op == "Shape" and node.input[0] in shapes:
            self.const[node.output[0]] = np.array((self.batch,) + shapes[node.input[0]], dtype=np.int64)
            return True
        ins = [n for n in node.input if n]
        if not ins or not all(n in self.const for n in ins):
            return False
        v = [self.const[n] for n in ins]
        try:
            out = self._fold_value(node, op, a, v)
        except (ValueError, IndexError, TypeError, KeyError, ZeroDivisionError, FloatingPointError) as err:
            raise _unsupported(
                node,
                "constant folding",
                f"{type(err).__name__}: {str(err)[:120]}",
                "constant inputs of matching shapes and valid indices",
                "re-export the model",
            ) from None
        if out is None:
            return False
        self.const[node.output[0]] = np.asarray(out)
        return True

    def _fold_value(self, node: Any, op: str, a: dict, v: list) -> Any:
        """The value of a constant-only ``node`` (None: not foldable); output sizes checked before computing."""
        where = f"node {node.name or node.output[0]!r} ({op})"
        if op == "Gather":
            ax = int(a.get("axis", 0)) % max(v[0].ndim, 1)
            check_elements(v[0].shape[:ax] + v[1].shape + v[0].shape[ax + 1 :], "Gather output", where=where,
                           error=ONNXError)  # fmt: skip
        elif op in ("Mul", "Div", "Sub", "Add"):
            check_elements(np.broadcast_shapes(v[0].shape, v[1].shape), f"{op} output", where=where, error=ONNXError)
        if op == "Gather":
            out = np.take(v[0], v[1], axis=a.get("axis", 0))
        elif op == "Concat":
            out = np.concatenate(v, axis=a["axis"])
        elif op == "Unsqueeze":
            axes = a["axes"] if "axes" in a else list(v[1])
            out = v[0]
            for ax in sorted(int(x) % (out.ndim + len(axes)) for x in axes):
                out = np.expand_dims(out, ax)
        elif op == "Squeeze":
            axes = a.get("axes", list(v[1]) if len(v) > 1 else None)
            out = np.squeeze(v[0], axis=None if axes is None else tuple(int(x) for x in axes))
        elif op == "Cast":
            from onnx import helper

            out = v[0].astype(helper.tensor_dtype_to_np_dtype(a["to"]))
        elif op == "Transpose":
            out = np.transpose(v[0], a.get("perm"))
        elif op == "Reshape":
            shape = [d if d != 0 else v[0].shape[i] for i, d in enumerate(v[1].tolist())]
            out = v[0].reshape(shape)
        elif op in ("Identity", "Dropout"):
            out = v[0]
        elif op in ("Mul", "Div", "Sub", "Add"):
            f = {"Mul": np.multiply, "Div": np.divide, "Sub": np.subtract, "Add": np.add}[op]
            out = f(v[0], v[1])
            if op == "Div" and v[0].dtype.kind in "iu":
                out = v[0] // v[1]
        else:
            return None
        return out


def _to_array(proto: Any, where: str) -> np.ndarray:
    """A TensorProto as numpy, a malformed one (data not matching its dims or type) as an ONNXError."""
    from onnx import numpy_helper

    try:
        return numpy_helper.to_array(proto)
    except (ValueError, TypeError, KeyError) as err:
        raise ONNXError("tensor data", value=f"{type(err).__name__}: {str(err)[:120]}",
                        limit="data matching the declared dims and type", where=where,
                        fix="re-export the model (truncated or corrupted tensor?)") from None  # fmt: skip


def _ints(a: dict, key: str, n: int, default: int) -> list[int]:
    return [int(v) for v in a.get(key, [default] * n)]


def _spatial(node: Any, a: dict, in_shape: tuple, kernel: list[int]) -> dict:
    """Strides, dilations and explicit pads (begins then ends) of a conv/pool node, auto_pad resolved."""
    nd = len(kernel)
    strides, dil = _ints(a, "strides", nd, 1), _ints(a, "dilations", nd, 1)
    pads = _ints(a, "pads", 2 * nd, 0)
    auto = a.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * nd)
        for i in range(nd):
            size = in_shape[1 + i]
            out = -(-size // strides[i])
            total = max(0, (out - 1) * strides[i] + dil[i] * (kernel[i] - 1) + 1 - size)
            small, big = total // 2, total - total // 2
            pads[i], pads[i + nd] = (small, big) if auto == "SAME_UPPER" else (big, small)
    elif auto == "VALID":
        pads = [0] * (2 * nd)
    elif auto != "NOTSET":
        raise _unsupported(node, "auto_pad", auto, "NOTSET, VALID, SAME_UPPER, SAME_LOWER", "export explicit pads")
    if len(strides) != nd or len(dil) != nd or len(pads) != 2 * nd or min(strides + dil) < 1 or min(pads) < 0:
        raise _unsupported(
            node, "strides/dilations/pads", (strides, dil, pads), f"{nd} spatial axes, positive", "re-export the node"
        )
    return {"strides": strides, "dilations": dil, "pads": pads}


def _out_spatial(in_shape: tuple, kernel: list[int], p: dict, ceil: bool = False) -> tuple[int, ...]:
    nd = len(kernel)
    out = []
    for i in range(nd):
        span = in_shape[1 + i] + p["pads"][i] + p["pads"][i + nd] - p["dilations"][i] * (kernel[i] - 1) - 1
        out.append((-(-span // p["strides"][i]) if ceil else span // p["strides"][i]) + 1)
    return tuple(out)


def load_onnx(path_or_model: Any, *, input_shape: Any = None) -> FloatModel:
    """Import a float ONNX model (a path, serialized bytes or an ``onnx.ModelProto``) as a :class:`FloatModel`.

    Args:
        path_or_model: the model. input_shape: the full input shape ``(B, ...)``, needed when the model's
            input has symbolic sizes beyond the batch axis.

    Raises:
        ONNXError: see the module docstring (bad file, old opset, unsupported op naming the node,
            dynamic shapes, QDQ models: use :func:`~pondlib.interop.onnx.load_qdq`).
    """
    model = read_model(path_or_model)
    g = Graph(model, input_shape)
    if any(n.op_type in QDQ_OPS for n in g.nodes):
        raise ONNXError(
            "quantized (QDQ) model",
            value=sorted({n.op_type for n in g.nodes if n.op_type in QDQ_OPS}),
            limit="a float model",
            where="load_onnx",
            fix="import QDQ models with load_qdq (integer layers; nothing is silently dequantized)",
        )
    return _import_float(g)


class _Node(NamedTuple):
    """One ONNX node as the float importer sees it.

    Attributes:
        node: the ``onnx.NodeProto``. a: its attributes. name: its name (or first output's).
        dyn: its non-constant inputs (``dyn[0]`` is the data input ``x``). x: the data input.
        s: the per-sample shape of ``x``. out: its first output.
    """

    node: Any
    a: dict
    name: str
    dyn: list[str]
    x: str
    s: tuple
    out: str


@dataclass
class _FloatImport:
    """The float import so far: layers, the producer layer and shape of every tensor name, notes, tail.

    ``index`` maps a tensor name to the layer that computes it (``-1``: the model input); ``tail`` is the
    dropped final ``(Softmax|LogSoftmax, axis, opset)``.
    """

    g: Graph
    layers: list[FloatLayer] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    shapes: dict[str, tuple] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    tail: tuple | None = None

    def add(self, n: _Node, op: str, params: dict, oshape: tuple, inputs: tuple | None = None) -> None:
        """Append layer ``op`` for node ``n`` (reading ``x``, or ``inputs``) with output shape ``oshape``."""
        shape = tuple(int(v) for v in oshape)
        self.layers.append(FloatLayer(n.name, op, inputs or (self.index[n.x],), params, shape))
        self.index[n.out], self.shapes[n.out] = len(self.layers) - 1, shape

    def alias(self, n: _Node) -> None:
        """The node's output is its input (folded or dropped: no layer)."""
        self.index[n.out], self.shapes[n.out] = self.index[n.x], n.s

    def fold_target(self, n: _Node) -> FloatLayer | None:
        """The gemm/conv layer computing ``x`` when ``n`` is its only consumer (a bias or a BatchNorm folds
        into it), else None."""
        prev = self.layers[self.index[n.x]] if self.index[n.x] >= 0 else None
        if prev is not None and prev.op in ("gemm", "conv") and len(self.g.consumers.get(n.x, [])) == 1:
            return prev
        return None


def _float_node(imp: _FloatImport, node: Any) -> _Node:
    """``node`` as a :class:`_Node`, after checking that it is a float op, not after the softmax tail, and
    reads a tensor computed from the model input."""
    op = node.op_type
    if op not in FLOAT_OPS:
        raise _unsupported(
            node, "unsupported op", op, f"one of {', '.join(FLOAT_OPS)}", "replace the op or export without it"
        )
    if imp.tail is not None:
        raise _unsupported(
            node, "op after the Softmax tail", op, "Softmax/LogSoftmax last", "move the softmax to the end"
        )
    dyn = [n for n in node.input if n and n not in imp.g.const]
    if not dyn or dyn[0] not in imp.index:
        raise _unsupported(node, "input", list(node.input), "a tensor computed from the model input", "re-export")
    x = dyn[0]
    return _Node(node, _attrs(node), node.name or node.output[0], dyn, x, imp.shapes[x], node.output[0])


def _imp_identity(imp: _FloatImport, n: _Node) -> None:
    """Identity, Dropout (inference: the identity; its mask output must be unused)."""
    imp.alias(n)
    node = n.node
    if node.op_type == "Dropout" and len(node.output) > 1 and node.output[1] and imp.g.consumers.get(node.output[1]):
        raise _unsupported(node, "Dropout mask output", "used", "unused", "drop the mask")


def _gemm_bias(imp: _FloatImport, n: _Node, out_size: int) -> np.ndarray | None:
    """Gemm's constant ``C`` as a bias ``(O,)`` (a scalar broadcast), times ``beta``; None without one."""
    node = n.node
    if node.op_type != "Gemm" or len(node.input) <= 2 or not node.input[2]:
        return None
    c = imp.g.const.get(node.input[2])
    if c is None or c.size not in (1, out_size):
        raise _unsupported(node, "bias", getattr(c, "shape", "non-constant"), f"({out_size},)", "re-export")
    return np.broadcast_to(c.astype(np.float64).reshape(-1), (out_size,)) * float(n.a.get("beta", 1.0))


def _imp_gemm(imp: _FloatImport, n: _Node) -> None:
    """Gemm, MatMul: ``y = x W + b`` with ``W = alpha B`` (``B^T`` when ``transB``), ``b = beta C``."""
    node, a, s = n.node, n.a, n.s
    if len(n.dyn) != 1 or len(s) != 1:
        raise _unsupported(
            node,
            "operands",
            f"input shape {s}, {len(n.dyn)} non-constant operands",
            "(B, K) @ constant",
            "flatten first",
        )
    if a.get("transA", 0):
        raise _unsupported(node, "transA", 1, 0, "export x @ W^T with transB")
    w = imp.g.const[node.input[1]].astype(np.float64)
    if w.ndim != 2:
        raise _unsupported(node, "weight rank", w.shape, "2-D", "re-export as a Linear layer")
    w = (w.T if a.get("transB", 0) else w) * float(a.get("alpha", 1.0))
    if w.shape[0] != s[0]:
        raise _unsupported(node, "weight shape", w.shape, f"({s[0]}, O)", "check the exported weights")
    b = _gemm_bias(imp, n, w.shape[1])
    imp.add(n, "gemm", {"weight": w, "bias": None if b is None else np.array(b)}, (w.shape[1],))


def _imp_add(imp: _FloatImport, n: _Node) -> None:
    """Add: of two tensors of one shape a residual ``add`` layer; of a constant, folded into the bias of
    the Gemm/Conv computing the other operand."""
    node, s, dyn = n.node, n.s, n.dyn
    if len(dyn) == 2:
        if dyn[1] not in imp.index or imp.shapes[dyn[1]] != s:
            raise _unsupported(node, "operand shapes", (s, imp.shapes.get(dyn[1])), "equal shapes", "no broadcasting")
        imp.add(n, "add", {}, s, (imp.index[n.x], imp.index[dyn[1]]))
        return
    c = imp.g.const[[v for v in node.input if v in imp.g.const][0]].astype(np.float64)
    prev = imp.fold_target(n)
    if prev is not None:
        o = prev.params["weight"].shape[1 if prev.op == "gemm" else 0]
        ok = c.size in (1, o) and (prev.op == "gemm" or c.ndim <= 1 or c.shape[-1] == 1 or c.size == 1)
        if ok:
            cb = np.broadcast_to(c.reshape(-1), (o,))
            old = prev.params.get("bias")
            prev.params["bias"] = cb.copy() if old is None else old + cb
            imp.alias(n)
            imp.notes.append(f"{n.name}: Add of a constant folded into the bias of {prev.name}")
            return
    raise _unsupported(
        node,
        "Add operand",
        f"constant {c.shape}",
        "a residual (two tensors) or a bias after Gemm/MatMul",
        "re-export",
    )


def _imp_conv(imp: _FloatImport, n: _Node) -> None:
    """Conv: constant weight ``(O, C/groups, *kernel)``, optional bias, pads resolved by :func:`_spatial`."""
    node, a, s = n.node, n.a, n.s
    w = imp.g.const.get(node.input[1])
    if w is None or len(n.dyn) != 1:
        raise _unsupported(node, "weight", "non-constant", "an initializer", "export weights as initializers")
    w = w.astype(np.float64)
    kernel = list(w.shape[2:])
    if len(kernel) != len(s) - 1 or len(kernel) < 1:
        raise _unsupported(node, "input rank", s, f"(C, {len(kernel)} spatial sizes)", "check the input")
    groups = int(a.get("group", 1))
    if groups < 1 or s[0] != w.shape[1] * groups or w.shape[0] % groups:
        raise _unsupported(node, "groups/channels", (s, w.shape, groups), "C = C/g x groups", "re-export")
    p = _spatial(node, a, s, kernel)
    b = imp.g.const.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    p.update(weight=w, bias=None if b is None else b.astype(np.float64).reshape(-1), groups=groups)
    osp = _out_spatial(s, kernel, p)
    if min(osp) < 1:
        raise _unsupported(node, "output size", osp, ">= 1", "use a smaller kernel or more padding")
    imp.add(n, "conv", p, (w.shape[0],) + osp)


def _imp_pool(imp: _FloatImport, n: _Node) -> None:
    """MaxPool, AveragePool (no indices output, row-major storage, AveragePool undilated)."""
    node, a, s = n.node, n.a, n.s
    op = node.op_type
    if len(node.output) > 1 and node.output[1]:
        raise _unsupported(node, "MaxPool indices output", node.output[1], "none", "drop the indices")
    kernel = [int(k) for k in a["kernel_shape"]]
    if a.get("storage_order", 0):
        raise _unsupported(node, "storage_order", 1, 0, "re-export")
    p = _spatial(node, a, s, kernel)
    if op == "AveragePool" and p["dilations"] != [1] * len(kernel):
        raise _unsupported(node, "dilations", p["dilations"], "1", "re-export")
    p.update(
        kernel=kernel,
        ceil_mode=int(a.get("ceil_mode", 0)),
        count_include_pad=int(a.get("count_include_pad", 0)),
    )
    osp = _out_spatial(s, kernel, p, bool(p["ceil_mode"]))
    imp.add(n, "maxpool" if op == "MaxPool" else "avgpool", p, (s[0],) + osp)


def _imp_relu(imp: _FloatImport, n: _Node) -> None:
    """Relu: ``y = max(x, 0)``."""
    imp.add(n, "relu", {}, n.s)


def _imp_leaky_relu(imp: _FloatImport, n: _Node) -> None:
    """LeakyRelu: ``y = x`` for ``x >= 0`` else ``alpha x`` (``alpha`` 0.01 by default)."""
    imp.add(n, "leaky_relu", {"alpha": float(n.a.get("alpha", 0.01))}, n.s)


def _flatten_shape(g: Graph, n: _Node) -> tuple:
    """Flatten (axis 1 only: everything but the batch axis) -> ``(prod(s),)``."""
    full = (g.batch,) + n.s
    a = n.a
    ax = int(a.get("axis", 1)) % (len(full) + 1) if a.get("axis", 1) != len(full) else len(full)
    if ax != 1:
        raise _unsupported(n.node, "Flatten axis", ax, 1, "flatten everything but the batch axis")
    return (int(np.prod(n.s)),)


def _reshape_shape(g: Graph, n: _Node) -> tuple:
    """Reshape to a constant shape whose batch size is kept (``B``, 0 or -1; 0 copies a size)."""
    node, s = n.node, n.s
    tgt = [int(v) for v in g.const[node.input[1]]] if node.input[1] in g.const else None
    if tgt is None or not tgt:
        raise _unsupported(node, "shape", "non-constant", "a constant shape", "pass input_shape")
    if tgt[0] not in (g.batch, -1, 0):
        raise _unsupported(node, "Reshape of the batch axis", tgt, f"first size {g.batch}, 0 or -1", "keep the batch")
    rest = [d if d != 0 else s[i] for i, d in enumerate(tgt[1:])]
    try:
        return tuple(np.empty((1,) + s, dtype=np.bool_).reshape((1, *rest)).shape[1:])
    except ValueError:
        raise _unsupported(node, "Reshape", (s, tgt), "a size-preserving shape", "check the model") from None


def _squeeze_shape(g: Graph, n: _Node) -> tuple:
    """Squeeze, Unsqueeze of non-batch axes (attribute or constant input ``axes``)."""
    node, op = n.node, n.node.op_type
    axes = n.a.get("axes")
    if axes is None and len(node.input) > 1 and node.input[1] in g.const:
        axes = g.const[node.input[1]].tolist()
    arr = np.empty((g.batch,) + n.s, dtype=np.bool_)
    try:
        if op == "Squeeze":
            arr = np.squeeze(arr, axis=None if axes is None else tuple(int(v) for v in axes))
        else:
            for ax in sorted(int(v) % (arr.ndim + len(axes)) for v in axes):
                arr = np.expand_dims(arr, ax)
    except (ValueError, TypeError, np.exceptions.AxisError):
        raise _unsupported(node, "axes", axes, "valid axes", "check the model") from None
    if arr.shape[:1] != (g.batch,) or (
        axes is not None and any(int(v) % arr.ndim == 0 for v in axes) and op == "Unsqueeze"
    ):
        raise _unsupported(node, f"{op} of the batch axis", axes, "non-batch axes", "keep the batch axis")
    return tuple(arr.shape[1:])


def _imp_reshape(imp: _FloatImport, n: _Node) -> None:
    """Flatten, Reshape, Squeeze, Unsqueeze: a ``reshape`` layer to the new per-sample shape."""
    shape_of = {"Flatten": _flatten_shape, "Reshape": _reshape_shape}.get(n.node.op_type, _squeeze_shape)
    imp.add(n, "reshape", {}, shape_of(imp.g, n))


def _imp_batchnorm(imp: _FloatImport, n: _Node) -> None:
    """BatchNormalization ``y = k x + (beta - mean k)``, ``k = gamma / sqrt(var + eps)``: folded into the
    preceding Gemm/Conv when it is the only consumer, else an ``affine`` layer."""
    node, a = n.node, n.a
    g = imp.g
    if not a.get("spatial", 1):
        raise _unsupported(node, "spatial", 0, 1, "re-export with spatial BatchNorm")
    try:
        gam, bet, mean, var = (g.const[v].astype(np.float64).reshape(-1) for v in node.input[1:5])
    except KeyError:
        raise _unsupported(node, "statistics", "non-constant", "initializers", "export in eval mode") from None
    if any(o and g.consumers.get(o) for o in node.output[1:]):
        raise _unsupported(node, "training outputs", list(node.output[1:]), "unused", "export in eval mode")
    k = gam / np.sqrt(var + float(a.get("epsilon", 1e-5)))
    sh = bet - mean * k
    prev = imp.fold_target(n)
    if prev is None:
        imp.add(n, "affine", {"scale": k, "shift": sh}, n.s)
        return
    w = prev.params["weight"]
    prev.params["weight"] = w * (k if prev.op == "gemm" else k.reshape((-1,) + (1,) * (w.ndim - 1)))
    b0 = prev.params.get("bias")
    prev.params["bias"] = (np.zeros(k.size) if b0 is None else b0) * k + sh
    imp.alias(n)
    imp.notes.append(f"{n.name}: BatchNormalization folded into {prev.name}")


def _imp_softmax(imp: _FloatImport, n: _Node) -> None:
    """A final Softmax/LogSoftmax: dropped from the layers (argmax-preserving), kept as the tail."""
    op, g = n.node.op_type, imp.g
    if n.out != g.output:
        raise _unsupported(n.node, f"{op} position", "inside the graph", "the last op", "move it to the end")
    imp.tail = (op, int(n.a.get("axis", 1 if g.opset < 13 else -1)), g.opset)
    imp.alias(n)
    imp.notes.append(
        f"{n.name}: final {op} dropped from the layers (argmax-preserving); run_float(tail=True) applies it"
    )


#: Float op -> importer ``(import so far, node) -> None`` (every op of :data:`FLOAT_OPS`).
_FLOAT_IMPORTERS: dict[str, Callable[[_FloatImport, _Node], None]] = {
    "Identity": _imp_identity,
    "Dropout": _imp_identity,
    "Gemm": _imp_gemm,
    "MatMul": _imp_gemm,
    "Add": _imp_add,
    "Conv": _imp_conv,
    "MaxPool": _imp_pool,
    "AveragePool": _imp_pool,
    "Relu": _imp_relu,
    "LeakyRelu": _imp_leaky_relu,
    "Flatten": _imp_reshape,
    "Reshape": _imp_reshape,
    "Squeeze": _imp_reshape,
    "Unsqueeze": _imp_reshape,
    "BatchNormalization": _imp_batchnorm,
    "Softmax": _imp_softmax,
    "LogSoftmax": _imp_softmax,
}


def _import_float(g: Graph) -> FloatModel:
    """The float layers of ``g``: constant nodes folded, every other node imported by its op's importer."""
    imp = _FloatImport(g, index={g.input.name: -1}, shapes={g.input.name: g.input_shape})
    for node in g.nodes:
        if g.fold(node, imp.shapes):
            continue
        n = _float_node(imp, node)
        _FLOAT_IMPORTERS[node.op_type](imp, n)
    if g.output not in imp.index:
        raise ONNXError("graph output", value=g.output, limit="computed from the input", where="graph", fix="re-export")
    if imp.index[g.output] != len(imp.layers) - 1:
        raise ONNXError("graph output", value=g.output, limit="the last layer's output", where="graph", fix="re-export")
    check_layer_params(imp.layers)
    return FloatModel(tuple(imp.layers), g.input.name, g.input_shape, imp.tail, g.opset, tuple(imp.notes))
