r"""Any ONNX graph as a :class:`~pondlib.graph.opgraph.OpGraph`: every node kept, nothing evaluated.

:func:`load_opgraph` is the import of the DNN graph paths (integer dialects such as Deeploy's, ORT QDQ
models, float transformer graphs). Unlike :func:`~pondlib.interop.onnx.load_onnx` it keeps the graph as a
DAG of named tensors with several inputs and outputs:

* initializers and ``Constant`` nodes become constants (read-only numpy arrays);
* attributes become Python values; tensor attributes (Deeploy's ``RequantShift`` carries ``div`` as one)
  numpy arrays; sub-graphs (``If``, ``Loop``) are refused, naming the node;
* graph inputs that are also initializers (old exporters list them) are constants, not inputs;
* symbolic dimensions of the inputs take ``input_shapes[name]`` or, for a leading batch axis, 1 (noted).

``onnx.checker`` refuses models with custom ops in the default domain (Deeploy's ``RequantShift``,
``iSoftmax``, ...), nodes out of topological order and legacy op forms (a ``Pad`` with its pads as an
attribute at opset 13), all of which Deeploy's own files contain. The gate is therefore pondlib's own
structural validation (:func:`~pondlib.graph.opgraph.check_opgraph`: single assignment, no dangling
reference, acyclic, concrete and bounded shapes) plus each op kernel's checks of its inputs and attributes;
the checker still runs on models of registered ops only and its complaint, if any, becomes a note. Every
declared size is checked *before* a tensor is allocated: an initializer's dims are read from its header first.

Example:
    >>> import numpy as np
    >>> from onnx import TensorProto, helper, numpy_helper
    >>> w = numpy_helper.from_array(np.ones((4, 2), np.float32), "w")
    >>> node = helper.make_node("RequantShift", ["h", "m", "a"], ["y"], div=64, signed=1, n_levels_out=256)
    >>> g = helper.make_graph(
    ...     [helper.make_node("MatMul", ["x", "w"], ["h"]), node], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
    ...     [w, numpy_helper.from_array(np.array(3.0, np.float32), "m"),
    ...      numpy_helper.from_array(np.array(0.0, np.float32), "a")])
    >>> og = load_opgraph(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    >>> [(n.op, n.inputs) for n in og.nodes], og.nodes[1].attrs["div"]
    ([('MatMul', ('x', 'w')), ('RequantShift', ('h', 'm', 'a'))], 64)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from pondlib.errors import GraphError, ONNXError
from pondlib.graph.opgraph import MAX_ELEMENTS, Node, OpGraph, TensorInfo, check_opgraph

__all__ = ["load_opgraph", "parse_model", "is_standard_op"]

#: ONNX element types pondlib reads (TensorProto enum -> numpy dtype name).
_DTYPES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
    10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16",
}  # fmt: skip


def parse_model(path_or_model: Any) -> tuple[Any, str]:
    """An ``onnx.ModelProto`` (not run through the checker) and a name for messages."""
    import onnx
    from google.protobuf.message import DecodeError

    from pondlib.validate import check_file_size, check_readable_file

    folder = None
    if isinstance(path_or_model, onnx.ModelProto):
        _inline_external(path_or_model, None, "model")  # refuses external data: no folder to resolve it in
        _check_budget(path_or_model, "model")
        return path_or_model, "model"
    if isinstance(path_or_model, (bytes, bytearray)):
        data, where = bytes(path_or_model), "bytes"
    else:
        path = check_readable_file(path_or_model, "ONNX file", error=ONNXError, suffix=".onnx")
        check_file_size(path, "ONNX file", error=ONNXError)
        data, where, folder = path.read_bytes(), os.fspath(path), path.parent
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as err:
        raise ONNXError(
            "not an ONNX model",
            value=f"{len(data)} bytes that do not parse ({type(err).__name__})",
            limit="a serialized onnx.ModelProto",
            where=where,
            fix="pass an .onnx file written by onnx.save or a framework exporter (is it truncated?)",
        ) from None
    if not model.graph.node:
        raise ONNXError(
            "not an ONNX model",
            value="a graph without nodes",
            limit="a graph with nodes",
            where=where,
            fix="pass a complete .onnx file (truncated or not ONNX at all?)",
        )
    _inline_external(model, folder, where)
    _check_budget(model, where)
    return model, where


def _check_budget(model: Any, where: str) -> None:
    """Every initializer's and graph input's declared size within the size budget (nothing allocated yet)."""
    from pondlib.validate import check_elements

    for t in model.graph.initializer:
        check_elements([int(d) for d in t.dims], f"initializer {t.name!r}", where=where, error=ONNXError)


#: Bytes per element of the ONNX element types external data may hold.
_ITEMSIZE = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}


def _external_tensors(model: Any) -> list:
    """The tensors of ``model`` (initializers, top-level tensor attributes) whose data are stored outside it."""
    tensors = list(model.graph.initializer)
    for node in model.graph.node:
        for a in node.attribute:
            tensors += ([a.t] if a.HasField("t") else []) + list(a.tensors)
    return [t for t in tensors if t.data_location == 1 or len(t.external_data)]


def _inline_external(model: Any, folder: Any, where: str) -> None:
    """Read every external tensor of ``model`` (parsed by us from the file in ``folder``) into the model.

    The rule (README, security): a ``location`` is resolved against the model's folder, never the working
    directory, and must stay inside it (:func:`~pondlib.validate.resolve_inside`: no absolute path, no ``..``
    or link out of it); the declared size is checked against the size budget and against ``offset``/``length``
    and the file's size before a byte is read. A ModelProto or bytes with external data have no folder: refused.
    """
    from pondlib.validate import check_elements, resolve_inside

    for t in _external_tensors(model):
        label = f"{where}: tensor {t.name!r}"
        if folder is None:
            raise ONNXError(
                "external tensor data", value=t.name, limit="tensors inside the model, or a model read from its path",
                where=where, fix="pass the .onnx file's path (its external data are read from its folder)",
            )  # fmt: skip
        info = {e.key: e.value for e in t.external_data}
        path = resolve_inside(folder, info.get("location"), "external data", where=label, error=ONNXError)
        dims = [int(d) for d in t.dims]
        count = check_elements(dims, "external tensor", where=label, error=ONNXError)
        if t.data_type not in _ITEMSIZE:
            raise ONNXError("external tensor type", value=t.data_type, limit="a numeric element type", where=label,
                            fix="store the tensor inside the model")  # fmt: skip
        need = count * _ITEMSIZE[t.data_type]
        try:
            offset, length = int(info.get("offset", 0)), int(info.get("length", need))
        except ValueError:
            offset, length = -1, -1
        size = path.stat().st_size
        if offset < 0 or length != need or offset + length > size:
            raise ONNXError(
                "external data range", value=f"offset {info.get('offset', 0)}, length {info.get('length', need)}",
                limit=f"{need} bytes ({count} elements) within the {size} bytes of {path.name}", where=label,
                fix="re-save the model with onnx.save(..., save_as_external_data=True)",
            )  # fmt: skip
        with open(path, "rb") as f:
            f.seek(offset)
            t.raw_data = f.read(length)
        del t.external_data[:]
        t.data_location = 0


def is_standard_op(op: str, domain: str) -> bool:
    """Whether ``domain:op`` is an op registered in the ``onnx`` package's schemas."""
    import onnx

    return bool(onnx.defs.has(op, domain))


def _opset(model: Any) -> int:
    versions = [int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")]
    return versions[0] if versions else 13


def _size(dims: Any) -> int:
    size = 1
    for d in dims:
        size *= int(d)
    return size


def _tensor(proto: Any, where: str, max_elements: int) -> np.ndarray:
    """A numpy copy of a TensorProto, its declared size checked first; external data refused."""
    from onnx import numpy_helper

    dims = [int(d) for d in proto.dims]
    if any(d < 0 for d in dims) or _size(dims) > max_elements:
        raise ONNXError(
            "tensor size",
            value=f"{proto.name or 'tensor'!r} dims {dims}",
            limit=f"non-negative dims, <= {max_elements} elements",
            where=where,
            fix="re-export the model (corrupted header?); nothing was allocated",
        )
    if proto.data_location == 1 or proto.external_data:
        raise ONNXError(
            "external tensor data",
            value=proto.name,
            limit="tensors stored inside the .onnx file",
            where=where,
            fix="save with onnx.save(model, path, save_as_external_data=False)",
        )
    if proto.data_type not in _DTYPES:
        raise ONNXError(
            "tensor type",
            value=f"{proto.name!r}: element type {proto.data_type}",
            limit=", ".join(sorted(set(_DTYPES.values()))),
            where=where,
            fix="cast the tensor to a numeric type",
        )
    try:
        arr = numpy_helper.to_array(proto)
    except (ValueError, TypeError) as err:
        raise ONNXError(
            "tensor data",
            value=f"{proto.name!r}: {str(err)[:120]}",
            limit="data matching the declared dims",
            where=where,
            fix="re-export the model (truncated tensor?)",
        ) from None
    return np.array(arr)


def _attr(a: Any, where: str, max_elements: int) -> Any:
    from onnx import AttributeProto, helper

    if a.type == AttributeProto.TENSOR:
        arr = _tensor(a.t, where, max_elements)
        return arr.item() if arr.ndim == 0 or arr.size == 1 and arr.ndim <= 1 else arr
    if a.type == AttributeProto.TENSORS:
        return [_tensor(t, where, max_elements) for t in a.tensors]
    if a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
        raise ONNXError(
            "sub-graph attribute",
            value=a.name,
            limit="ops without sub-graphs (no If, Loop, Scan)",
            where=where,
            fix="unroll the control flow before export",
        )
    value = helper.get_attribute_value(a)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
    return value


def _info(vi: Any, shapes: Mapping[str, Any], notes: list[str], is_input: bool) -> TensorInfo:
    tt = vi.type.tensor_type
    dtype = _DTYPES.get(tt.elem_type, "float32")
    if vi.name in shapes:
        shape = tuple(shapes[vi.name])
        return TensorInfo(vi.name, shape, dtype)
    if not tt.HasField("shape"):
        return TensorInfo(vi.name, None, dtype)
    dims: list[int] = []
    for i, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif is_input and i == 0:
            dims.append(1)
            notes.append(f"input {vi.name!r}: symbolic batch axis {d.dim_param or '?'!r} taken as 1")
        elif is_input:
            raise ONNXError(
                "dynamic input shape",
                value=f"{vi.name!r} axis {i} = {d.dim_param or '?'!r}",
                limit="concrete sizes (a symbolic batch axis is taken as 1)",
                where="load_opgraph",
                fix=f"pass input_shapes={{{vi.name!r}: (...)}}",
            )
        else:
            return TensorInfo(vi.name, None, dtype)
    return TensorInfo(vi.name, tuple(dims), dtype)


def _check_shapes_arg(input_shapes: Any) -> dict[str, tuple[int, ...]]:
    if input_shapes is None:
        return {}
    if not isinstance(input_shapes, Mapping):
        raise ONNXError(
            "input_shapes", value=type(input_shapes).__name__, limit="a dict name -> shape", where="load_opgraph",
            fix="pass input_shapes={'x': (1, 16, 64)}",
        )  # fmt: skip
    out = {}
    for key, shape in input_shapes.items():
        ok = isinstance(shape, (tuple, list)) and all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0 for d in shape
        )
        if not ok:
            raise ONNXError(
                "input_shapes", value=f"{key!r}: {shape!r}", limit="a tuple of non-negative ints", where="load_opgraph",
                fix="pass input_shapes={'x': (1, 16, 64)}",
            )  # fmt: skip
        out[str(key)] = tuple(int(d) for d in shape)
    return out


def _run_checker(model: Any) -> str | None:
    """``onnx.checker``'s complaint about ``model`` (its first line), or None when it accepts it."""
    import onnx

    try:
        onnx.checker.check_model(model)
    except Exception as err:  # the checker raises ValidationError and C++ errors of several types
        return str(err).splitlines()[0][:200] if str(err) else type(err).__name__
    return None


def load_opgraph(
    path_or_model: Any, *, input_shapes: Mapping[str, Any] | None = None, max_elements: int = MAX_ELEMENTS
) -> OpGraph:
    """The :class:`~pondlib.graph.opgraph.OpGraph` of an ONNX file, bytes or ModelProto (module docstring).

    Args:
        path_or_model: an ``.onnx`` path, serialized bytes or an ``onnx.ModelProto``.
        input_shapes: concrete shapes for inputs whose declared shape is symbolic, by input name.
        max_elements: the largest element count of one tensor (inputs, outputs, initializers).

    Raises:
        ONNXError: unreadable files, sub-graphs, external data, oversized or malformed tensors.
        GraphError: structural faults (a tensor written twice, dangling references, cycles, huge shapes).
    """
    model, where = parse_model(path_or_model)
    shapes = _check_shapes_arg(input_shapes)
    g = model.graph
    notes: list[str] = []
    constants = {t.name: _tensor(t, f"initializer {t.name!r}", max_elements) for t in g.initializer}
    custom = sorted({f"{n.domain or 'default'}:{n.op_type}" for n in g.node if not is_standard_op(n.op_type, n.domain)})
    if custom:
        notes.append(f"custom ops ({', '.join(custom)}): validated by pondlib's structural checks, not onnx.checker")
    else:
        complaint = _run_checker(model)
        if complaint is not None:
            notes.append(f"onnx.checker: {complaint}; validated by pondlib's structural checks and op kernels")
    nodes: list[Node] = []
    for i, n in enumerate(g.node):
        name = n.name or f"{n.op_type}_{i}"
        label = f"node {name!r} ({n.op_type})"
        attrs = {a.name: _attr(a, label, max_elements) for a in n.attribute}
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and len(n.output) == 1:
            value = [a.t for a in n.attribute if a.name == "value" and a.HasField("t")]
            # the tensor itself (its dims and dtype), not the attribute's scalar form
            constants[n.output[0]] = _tensor(value[0], label, max_elements) if value else _constant(attrs, label)
            continue
        nodes.append(Node(name, n.op_type, tuple(n.input), tuple(n.output), attrs, n.domain))
    inputs = tuple(_info(vi, shapes, notes, True) for vi in g.input if vi.name not in constants)
    outputs = tuple(_info(vi, {}, notes, False) for vi in g.output)
    graph = OpGraph(inputs, outputs, tuple(nodes), constants, g.name or "graph", tuple(notes), _opset(model))
    try:
        check_opgraph(graph, max_elements=max_elements)
    except GraphError as err:
        raise ONNXError(err.what, value=err.value, limit=err.limit, where=where, fix=err.fix) from None
    return graph


def _constant(attrs: dict, label: str) -> np.ndarray:
    for key in ("value", "value_float", "value_int", "value_floats", "value_ints"):
        if key in attrs:
            value = attrs[key]
            if key == "value_float" or key == "value_floats":
                return np.asarray(value, np.float32)
            if key in ("value_int", "value_ints"):
                return np.asarray(value, np.int64)
            return np.asarray(value)
    raise ONNXError(
        "Constant attribute", value=sorted(attrs), limit="value, value_float(s) or value_int(s)", where=label,
        fix="export the constant as a tensor",
    )  # fmt: skip
