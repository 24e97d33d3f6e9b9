"""NIR import: :func:`read_graph`, :func:`load_nir` and :func:`from_nir` (see :mod:`pondlib.interop.nir`
for the conventions, discretization and reset choices this module makes explicit)."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.errors import GraphError, NIRError, PondError
from pondlib.interop.nir._budget import check_sizes
from pondlib.interop.nir._detect import detect_convention
from pondlib.interop.nir._fields import _arr, _graph_edges, _graph_nodes, _int, _ints, _meta, _mstr, _port, _shape_of
from pondlib.interop.nir.common import RESETS
from pondlib.interop.nir.common import nir_package as _nir
from pondlib.interop.nir.exporters import EXPORTER_RULES, NUMERICS, ExporterRule, LavaCubaLIF, SnnTorchNeuron
from pondlib.nn import LIF, Linear, Residual, Sequential, neurons
from pondlib.nn.graphnet import INPUT, OUTPUT, GraphNetwork
from pondlib.nn.layers import AvgPool2d, Conv1d, Conv2d, Delay, Flatten, Scale, SumPool2d
from pondlib.nn.neurons import Threshold
from pondlib.nn.surrogate import Surrogate
from pondlib.validate import check_choice, check_float, check_readable_file

__all__ = ["read_graph", "NIRImport", "IMPORTERS", "load_nir", "from_nir"]


# ----------------------------------------------------------------------------------------------
# reading files
# ----------------------------------------------------------------------------------------------
def _read_errors() -> tuple[type[BaseException], ...]:
    import h5py  # noqa: F401  (h5py errors derive from OSError, KeyError, ValueError, TypeError)

    return (
        OSError,
        RuntimeError,  # h5py: corrupted symbol tables, B-trees or heaps ("Link iteration failed")
        KeyError,
        ValueError,
        TypeError,
        AssertionError,
        AttributeError,
        IndexError,
        NotImplementedError,
        UnicodeDecodeError,
    )


def read_graph(path: Any, *, notes: list[str] | None = None) -> Any:
    """Read a NIR file into a ``nir.NIRGraph``, tolerantly.

    ``nir.read`` is tried with type checking; a graph that fails only the type check (e.g. Rockpool's
    Output of shape ``[1, 1, 1]`` after a ``[1]`` neuron) is re-read without it, and the shapes are
    checked by :func:`from_nir` itself (which repairs an Output shape with the right number of
    elements and says so). Every failure is a :class:`~pondlib.errors.NIRError` naming the file: a
    missing path or a directory, a file that is not HDF5 or is truncated or corrupted, and, found by
    walking the file's groups, a node of a type NIR does not define (named, with the known types), a
    node without ``type`` and a node missing a required field (naming the node and the field).
    """
    nir = _nir()
    notes = notes if notes is not None else []
    if isinstance(path, (str, pathlib.PurePath)) and not pathlib.Path(path).exists():
        raise NIRError(
            "NIR file not found", value=str(path), limit="an existing .nir file", where=str(path), fix="check the path"
        )
    p = check_readable_file(path, "NIR file", error=NIRError, suffix=".nir")
    errors = _read_errors()
    check_sizes(p, errors)  # declared dataset sizes against the budget before nir.read allocates them
    try:
        return nir.read(str(p))
    except errors as first:
        first_msg = f"{type(first).__name__}: {first}"
    try:
        g = nir.read(str(p), type_check=False)
    except errors as err:
        _diagnose_file(p, errors)
        raise NIRError(
            "cannot read NIR file",
            value=f"{type(err).__name__}: {err}",
            limit="a valid NIR (HDF5) file",
            where=str(path),
            fix="the file is truncated, not HDF5, or misses required fields; re-export it with nir.write",
        ) from None
    notes.append(
        f"{p.name}: nir.read with type checking failed ({first_msg}); read without it, shapes checked by pondlib"
    )
    return g


def _nir_types() -> dict[str, type]:
    """NIR's node classes by the name a file stores in ``type``."""
    import dataclasses

    nir = _nir()
    out = {}
    for name in dir(nir):
        cls = getattr(nir, name)
        if isinstance(cls, type) and issubclass(cls, nir.NIRNode) and cls is not nir.NIRNode:
            if dataclasses.is_dataclass(cls):
                out[name] = cls
    return out


def _required_fields(cls: type) -> list[str]:
    """The fields a file must store for a node of class ``cls`` (Input/Output store ``shape``)."""
    import dataclasses

    if cls.__name__ in ("Input", "Output"):
        return ["shape"]
    return [
        f.name
        for f in dataclasses.fields(cls)
        if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]


def _diagnose_file(p: pathlib.Path, errors: tuple[type[BaseException], ...]) -> None:
    """Raise a :class:`NIRError` naming the node and the field when the file's node tree is malformed
    (unknown type, no type, a required field missing); return when nothing specific is found."""
    import h5py

    types = _nir_types()

    def walk(group: Any, where: str) -> None:
        if not isinstance(group, h5py.Group):
            raise NIRError(f"{where} is not an HDF5 group", where=str(p), fix="re-export the file with nir.write")
        if "type" not in group:
            raise NIRError(
                f"node {where!r}: missing field 'type'",
                limit=f"one of {sorted(types)}",
                where=str(p),
                fix="re-export the file with nir.write",
            )
        kind = group["type"][()]
        kind = kind.decode("utf8", "replace") if isinstance(kind, bytes) else str(kind)
        cls = types.get(kind)
        if cls is None:
            raise NIRError(
                f"node {where!r}: unknown NIR node type {kind!r}",
                value=kind,
                limit=f"a type of nir {getattr(_nir(), '__version__', '')}".rstrip(),
                where=str(p),
                fix=f"replace the node with one of {', '.join(sorted(types))}, or upgrade the nir package "
                "if the type is newer",
            )
        missing = [f for f in _required_fields(cls) if f not in group]
        if missing:
            raise NIRError(
                f"node {where!r} ({kind}): missing field {missing[0]!r}",
                value=sorted(k for k in group.keys() if k != "type"),
                limit=f"the fields {_required_fields(cls)}",
                where=str(p),
                fix=f"re-export the file with nir.write (a {kind} node stores {_required_fields(cls)})",
            )
        if kind == "NIRGraph":
            for name in group["nodes"]:
                walk(group["nodes"][name], f"{where}.{name}" if where != "node" else name)

    try:
        with h5py.File(p, "r") as f:
            if "node" not in f:
                raise NIRError(
                    "missing group 'node'",
                    value=sorted(f.keys()),
                    limit="a NIR file with a 'node' group",
                    where=str(p),
                    fix="re-export the file with nir.write",
                )
            walk(f["node"], "node")
    except NIRError:
        raise
    except errors:
        return  # not HDF5 or corrupted: the caller reports the reader's own error


# ----------------------------------------------------------------------------------------------
# import
# ----------------------------------------------------------------------------------------------
@dataclass
class NIRImport:
    """What :func:`load_nir` imported and every assumption it made.

    Attributes:
        module: the pondlib module (``Sequential``, a single module, or ``GraphNetwork``).
        convention: the exporter convention used (see the module docstring).
        dt: the step in seconds.
        reset: the reset mode used for spiking neurons.
        notes: one line per assumption, detection result or repair.
        exporter: the framework whose discrete rules were applied
            (:data:`~pondlib.interop.nir.exporters.EXPORTER_RULES`), or None.
        numerics: ``"float"`` or ``"int"`` (Lava's fixed-point CUBA).
    """

    module: Any
    convention: str
    dt: float
    reset: str
    notes: list[str] = field(default_factory=list)
    exporter: str | None = None
    numerics: str = "float"


@dataclass
class _Ctx:
    dt: float
    convention: str
    reset: str
    decay: str
    notes: list[str]
    rule: ExporterRule | None = None
    numerics: str = "float"
    weight_scale: float = 1.0


def _imp_linear(node, name, in_shape, ctx):

    w = _arr(node, "weight", name)
    if w.ndim != 2:
        raise NIRError(
            "weight shape", value=w.shape, limit="(N_out, N_in)", where=name, fix="pondlib imports 2-D weights only"
        )
    bias = _arr(node, "bias", name).reshape(-1) if hasattr(node, "bias") else False
    if ctx.numerics == "int":  # Lava's integer weights (exporters.py)
        w, bias = _integer_weights(w, name, ctx), (bias if bias is False else _integer_weights(bias, name, ctx))
    return Linear(w.shape[1], w.shape[0], weight=w.T, bias=bias), (w.shape[0],)


def _imp_scale(node, name, in_shape, ctx):

    s = _arr(node, "scale", name)
    return Scale(_shape_of(s), scale=s), _shape_of(s)


def _imp_conv(node, name, in_shape, ctx):

    cls = Conv2d if type(node).__name__ == "Conv2d" else Conv1d
    w = _arr(node, "weight", name)
    bias = _arr(node, "bias", name).reshape(-1) if getattr(node, "bias", None) is not None else None
    if bias is not None and bias.size == 1 and w.shape[0] != 1:
        bias = np.full(w.shape[0], float(bias[0]))
    if in_shape is None or len(in_shape) != w.ndim - 1:
        declared = getattr(node, "input_shape", None)
        if declared is None:
            raise NIRError(
                "convolution input shape unknown",
                value=in_shape,
                where=name,
                limit=f"(C_in, {'H, W' if cls is Conv2d else 'L'})",
                fix="give the Conv node an input_shape or the graph an Input shape",
            )
        in_shape = (w.shape[1] * _int(node.groups, "groups", name),) + _ints(declared, "input_shape", name)
    try:
        m = cls(
            in_shape,
            weight=w,
            bias=bias,
            stride=_ints(node.stride, "stride", name),
            padding=_ints(node.padding, "padding", name, text=True),
            dilation=_ints(node.dilation, "dilation", name),
            groups=_int(node.groups, "groups", name),
        )
    except PondError as err:
        raise _nir_error(err, name, f"cannot build {cls.__name__}", "check the node") from None
    return m, m.output_shape


def _imp_pool(node, name, in_shape, ctx):

    cls = AvgPool2d if type(node).__name__ == "AvgPool2d" else SumPool2d
    if in_shape is None or len(in_shape) != 3:
        raise NIRError(
            "pooling input shape",
            value=in_shape,
            limit="(C, H, W)",
            where=name,
            fix="pooling must follow a node with a (C, H, W) output",
        )
    m = cls(
        in_shape,
        kernel_size=_ints(node.kernel_size, "kernel_size", name),
        stride=_ints(node.stride, "stride", name),
        padding=_ints(node.padding, "padding", name, text=True),
    )
    return m, m.output_shape


def _imp_flatten(node, name, in_shape, ctx):

    declared = node.input_type.get("input") if isinstance(node.input_type, dict) else None
    shape = in_shape if in_shape is not None else (None if declared is None else _ints(declared, "input_type", name))
    if shape is None:
        raise NIRError("flatten input shape unknown", where=name, fix="give the graph an Input shape")
    start, end = _int(node.start_dim, "start_dim", name), _int(node.end_dim, "end_dim", name)
    nd = len(shape)
    if not (-nd <= start < nd and -nd <= end < nd):  # e.g. start_dim = 1 counting a batch axis
        ctx.notes.append(f"{name}: Flatten dims ({start}, {end}) outside the input shape {shape}; flattened everything")
        start, end = 0, -1
    m = Flatten(shape, start_dim=start, end_dim=end)
    return m, m.output_shape


def _imp_delay(node, name, in_shape, ctx):

    d = _arr(node, "delay", name)
    return Delay(_shape_of(d), delay=d, dt=ctx.dt), _shape_of(d)


def _imp_threshold(node, name, in_shape, ctx):

    t = _arr(node, "threshold", name)
    return Threshold(_shape_of(t), threshold=t), _shape_of(t)


def _reset_of(node, ctx) -> str:
    meta = _meta(node)
    if ctx.convention == "pondlib" and "pondlib_reset" in meta:
        return _mstr(meta, "pondlib_reset")
    return ctx.reset


def _decay_of(node, ctx) -> str:
    meta = _meta(node)
    if ctx.convention == "pondlib" and "pondlib_decay" in meta:
        return _mstr(meta, "pondlib_decay")
    return ctx.decay


def _neuron(cls_name: str, params: tuple[str, ...], spiking: bool, renames: dict | None = None):
    def imp(node, name, in_shape, ctx):

        meta = _meta(node)
        if ctx.convention == "pondlib" and _mstr(meta, "pondlib_type") == "LIF":
            return _imp_pondlib_lif(node, None, name, ctx)
        vals = {p: _arr(node, p, name) for p in params}
        shape = _shape_of(next(iter(vals.values())))
        kwargs = {(renames or {}).get(p, p): v for p, v in vals.items()}
        if spiking:
            kwargs["reset"] = _reset_of(node, ctx)
        if "tau" in params or "tau_mem" in params:
            kwargs["decay"] = _decay_of(node, ctx)
        try:
            m = getattr(neurons, cls_name)(shape, dt=ctx.dt, **kwargs)
        except PondError as err:
            raise _nir_error(err, name, f"cannot build {cls_name}") from None
        return _exporter_neuron(m, cls_name, name, ctx), shape

    return imp


def _integer_weights(w: np.ndarray, name: str, ctx: _Ctx) -> np.ndarray:
    """``rint(weight_scale * w)`` for Lava's integer numerics; a value that was not whole is noted."""
    q = np.rint(w * ctx.weight_scale)
    if not np.array_equal(q, w * ctx.weight_scale):
        ctx.notes.append(f"{name}: weights x {ctx.weight_scale:g} rounded to integers (Lava numerics)")
    return q


def _exporter_neuron(m: Any, cls_name: str, name: str, ctx: _Ctx) -> Any:
    """``m`` run by the exporter's rules (:mod:`pondlib.interop.nir.exporters`)."""
    if ctx.numerics == "int":
        if cls_name != "CubaLIF":
            raise NIRError(
                "Lava integer numerics",
                value=cls_name,
                limit="CubaLIF neurons (Lava's CUBA)",
                where=name,
                fix="import with numerics='float'",
            )
        return LavaCubaLIF.from_cuba(m, ctx.weight_scale)
    if ctx.rule is not None and ctx.rule.snntorch_reset and getattr(m, "reset", None) in ("subtract", "zero"):
        return SnnTorchNeuron(m)
    return m


def _imp_pondlib_lif(node, rec_weight, name, ctx):
    """pondlib's own LIF, rebuilt exactly from its metadata (see the module docstring)."""

    meta = _meta(node)
    try:
        dt = float(meta["pondlib_dt"])
        bias = np.asarray(meta["pondlib_bias"], dtype=np.float64)
        cap = float(meta["pondlib_max_spikes_per_dt"])
        sg = Surrogate(
            _mstr(meta, "pondlib_surrogate_kind", "fast_sigmoid"), float(meta.get("pondlib_surrogate_scale", 10.0))
        )
    except (KeyError, TypeError, ValueError) as err:
        raise NIRError(
            "pondlib LIF metadata incomplete",
            value=str(err),
            where=name,
            fix="re-export with pondlib.interop.nir.to_nir, or import with convention='dt_scaled'",
        ) from None
    for param in ("tau_mem", "tau_syn", "v_threshold"):
        _arr(node, param, name)  # present, real and finite (the LIF checks ranges)
    n = int(np.asarray(node.tau_mem).size)
    lif = LIF(
        n,
        tau_mem=np.asarray(node.tau_mem).reshape(-1),
        tau_syn=np.asarray(node.tau_syn).reshape(-1),
        threshold=np.asarray(node.v_threshold).reshape(-1),
        bias=bias.reshape(-1),
        dt=dt,
        max_spikes_per_dt=cap,
        surrogate=sg,
        w_rec=None if rec_weight is None else np.asarray(rec_weight, dtype=np.float64).T,
    )
    return lif, (n,)


#: NIR node class name -> importer ``(node, name, in_shape, ctx) -> (module, out_shape)``.
IMPORTERS: dict[str, Callable] = {
    "Affine": _imp_linear,
    "Linear": _imp_linear,
    "Scale": _imp_scale,
    "Conv1d": _imp_conv,
    "Conv2d": _imp_conv,
    "SumPool2d": _imp_pool,
    "AvgPool2d": _imp_pool,
    "Flatten": _imp_flatten,
    "Delay": _imp_delay,
    "Threshold": _imp_threshold,
    "CubaLIF": _neuron("CubaLIF", ("tau_syn", "tau_mem", "r", "v_leak", "w_in", "v_threshold", "v_reset"), True),
    "CubaLI": _neuron("CubaLI", ("tau_syn", "tau_mem", "r", "v_leak", "w_in"), False),
    "LIF": _neuron("NIRLIF", ("tau", "r", "v_leak", "v_threshold", "v_reset"), True),
    "LI": _neuron("LI", ("tau", "r", "v_leak"), False),
    "IF": _neuron("IF", ("r", "v_threshold", "v_reset"), True),
    "I": _neuron("Integrator", ("r",), False),
}


def _inline(graph: Any, prefix: str, ctx: _Ctx) -> tuple[dict, list, str, str, Any, Any]:
    """Flatten nested graphs: returns (nodes, edges, input_name, output_name, in_shape, out_decl)."""
    nir = _nir()
    where = prefix.rstrip(".") or "graph"
    graph_nodes = _graph_nodes(graph, where)
    ins = [k for k, n in graph_nodes.items() if type(n).__name__ == "Input"]
    outs = [k for k, n in graph_nodes.items() if type(n).__name__ == "Output"]
    if len(ins) != 1 or len(outs) != 1:
        raise NIRError(
            "graph boundary",
            value=f"{len(ins)} Input and {len(outs)} Output node(s)",
            limit="exactly one Input and one Output",
            where=where,
            fix="pondlib imports single-input, single-output graphs; add the Input/Output "
            "nodes (nir.NIRGraph.from_list does) or split the graph",
        )
    nodes: dict[str, Any] = {}
    edges: list[tuple[str, str]] = []
    entry: dict[str, list[str]] = {}  # nested graph name -> names its input edge goes to
    exit_: dict[str, list[str]] = {}  # nested graph name -> names feeding its output
    for k, node in graph_nodes.items():
        if k in (ins[0], outs[0]):
            continue
        full = prefix + k
        if isinstance(node, nir.NIRGraph) and _mstr(_meta(node), "pondlib_type") not in ("LIF", "Residual"):
            sub_nodes, sub_edges, s_in, s_out, _, _ = _inline(node, full + ".", ctx)
            nodes.update(sub_nodes)
            entry[full] = [b for a, b in sub_edges if a == s_in]
            exit_[full] = [a for a, b in sub_edges if b == s_out]
            edges.extend((a, b) for a, b in sub_edges if a != s_in and b != s_out)
            if any(a == s_in and b == s_out for a, b in sub_edges):
                raise NIRError(
                    "nested graph passes its input straight to its output",
                    where=full,
                    fix="pondlib cannot inline this skip; tag it as a pondlib Residual",
                )
        else:
            nodes[full] = node
    name_in, name_out = prefix + ins[0], prefix + outs[0]
    for a, b in _graph_edges(graph, where):
        for nm in (a, b):
            if nm not in graph_nodes:
                raise NIRError(
                    "edge names a missing node",
                    value=(a, b),
                    limit=sorted(graph_nodes),
                    where=where,
                    fix="repair the graph's edges",
                )
        srcs = exit_.get(prefix + a, [name_in if a == ins[0] else prefix + a])
        dsts = entry.get(prefix + b, [name_out if b == outs[0] else prefix + b])
        edges.extend((s, d) for s in srcs for d in dsts)
    in_shape = _ints(_port(graph_nodes[ins[0]], "input_type", "input", prefix + ins[0]), "shape", prefix + ins[0])
    if not in_shape or min(in_shape) < 1:
        raise NIRError(
            "Input shape",
            value=list(in_shape),
            limit="positive sizes, at least one axis",
            where=prefix + ins[0],
            fix="give the Input node the shape of one time step, e.g. nir.Input(np.array([12]))",
        )
    out_decl = _port(graph_nodes[outs[0]], "output_type", "output", prefix + outs[0], required=False)
    return nodes, edges, name_in, name_out, in_shape, out_decl


def _import_node(node, name, in_shape, ctx):
    nir = _nir()
    kind = type(node).__name__
    if isinstance(node, nir.NIRGraph):
        return _import_tagged_graph(node, name, in_shape, ctx)
    imp = IMPORTERS.get(kind)
    if imp is None:
        raise NIRError(
            "unsupported NIR node",
            value=kind,
            limit=sorted(IMPORTERS),
            where=name,
            fix="replace the node, or add an importer to pondlib.interop.nir.IMPORTERS",
        )
    try:
        return imp(node, name, in_shape, ctx)
    except NIRError:
        raise
    except PondError as err:  # a pondlib module refused a parameter: say which node and field
        raise _nir_error(err, name, f"cannot build {kind}") from None


def _nir_error(err: PondError, where: str, what: str, fix: str | None = None) -> NIRError:
    """``err`` (raised by a pondlib module) as a :class:`NIRError` at ``where``, its message kept once."""
    text = str(err)
    if err.fix and text.endswith(f". Fix: {err.fix}"):
        text = text[: -len(f". Fix: {err.fix}")]
    return NIRError(f"{what}: {text}", where=where, fix=fix or err.fix or "check the node")


def _import_tagged_graph(node, name, in_shape, ctx):
    """A nested graph written by pondlib (recurrent LIF, Residual), rebuilt as that module."""

    tag = _mstr(_meta(node), "pondlib_type")
    nodes, edges, s_in, s_out, _, _ = _inline(node, name + ".", ctx)
    if tag == "LIF":
        lif = [k for k, n in nodes.items() if type(n).__name__ == "CubaLIF"]
        rec = [k for k, n in nodes.items() if type(n).__name__ in ("Linear", "Affine")]
        if len(lif) != 1 or len(rec) != 1:
            raise NIRError(
                "pondlib recurrent LIF cell",
                value=sorted(nodes),
                limit="one CubaLIF and one Linear",
                where=name,
                fix="re-export the network",
            )
        return _imp_pondlib_lif(nodes[lif[0]], _arr(nodes[rec[0]], "weight", rec[0]), name, ctx)
    # Residual: the chain from input to output, and the skip edge
    modules = _build_chain(nodes, edges, s_in, s_out, in_shape, ctx, name)
    return Residual(*modules), (modules[-1].size_out,)


def _build_chain(nodes, edges, s_in, s_out, in_shape, ctx, where):
    chain_edges = [(a, b) for a, b in edges if not (a == s_in and b == s_out)]
    nxt = {a: b for a, b in chain_edges}
    if len(nxt) != len(chain_edges):
        raise NIRError("pondlib Residual block is not a chain", where=where, fix="re-export")
    out, cur, shape = [], nxt.get(s_in), in_shape
    while cur is not None and cur != s_out:
        m, shape = _import_node(nodes[cur], cur, shape, ctx)
        out.append(m)
        cur = nxt.get(cur)
    return out


def _source_graph(source: Any, notes: list[str]) -> Any:
    """The ``nir.NIRGraph`` of ``source``: itself, or read from a path (:func:`read_graph`)."""
    nir = _nir()
    if isinstance(source, nir.NIRGraph):
        return source
    if isinstance(source, (str, pathlib.Path)):
        return read_graph(source, notes=notes)
    raise NIRError(
        "from_nir source",
        value=type(source).__name__,
        limit="a path or a nir.NIRGraph",
        fix="pass the file path or nir.read(path)",
    )


def _import_modules(nodes: dict, edges: list, s_in: str, in_shape: tuple, ctx: _Ctx) -> tuple[dict, dict, dict]:
    """``(modules, out_shapes, preds)``: every node imported once the shape of what feeds it is known.

    Shapes are propagated in order of availability; in a cycle, neurons and weights know their own shapes,
    so only the nodes that need an input shape (:func:`_needs_input_shape`) wait for a predecessor.
    """
    out_shapes: dict[str, tuple] = {s_in: in_shape}
    preds: dict[str, list[str]] = {}
    for a, b in edges:
        preds.setdefault(b, []).append(a)
    modules: dict[str, Any] = {}
    pending = list(nodes)
    cyclic = _cyclic_nodes(edges)
    while pending:
        progressed = False
        for k in list(pending):
            known = [out_shapes[p] for p in preds.get(k, []) if p in out_shapes]
            if not known and _needs_input_shape(nodes[k]):
                continue
            m, shp = _import_node(nodes[k], k, known[0] if known else None, ctx)
            if (
                ctx.rule is not None
                and ctx.rule.synapse_delay
                and k not in cyclic
                and type(nodes[k]).__name__ in _WEIGHTS
            ):
                m = Sequential(m, Delay(shp, delay=ctx.rule.synapse_delay * ctx.dt, dt=ctx.dt))
            modules[k], out_shapes[k] = m, tuple(shp)
            pending.remove(k)
            progressed = True
        if not progressed:
            raise NIRError(
                "cannot infer shapes", value=sorted(pending), where="graph", fix="connect every node to the Input"
            )
    return modules, out_shapes, preds


_WEIGHTS = ("Affine", "Linear", "Conv1d", "Conv2d")


def _cyclic_nodes(edges: list) -> set[str]:
    """The nodes on a cycle (recurrent weights: pondlib already delays those edges one step)."""
    succ: dict[str, list[str]] = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
    out = set()
    for start in succ:
        seen, todo = set(), list(succ[start])
        while todo:
            n = todo.pop()
            if n == start:
                out.add(start)
                break
            if n not in seen:
                seen.add(n)
                todo.extend(succ.get(n, []))
    return out


def _output_shape(got: list[tuple], s_out: str, out_decl: Any, notes: list[str]) -> tuple:
    """The shape reaching the Output node ``s_out``; a declared shape with the same number of elements is
    repaired (Rockpool writes ``[1, 1, 1]`` for ``[1]``) with a note, any other mismatch refused."""
    if not got:
        raise NIRError("nothing reaches the Output node", where=s_out, fix="add an edge into Output")
    out_shape = got[0]
    if out_decl is None:
        return out_shape
    decl = _ints(out_decl, "output_type", s_out)
    if decl == out_shape:
        return out_shape
    if int(np.prod(decl)) != int(np.prod(out_shape)):
        raise NIRError(
            "Output shape",
            value=list(decl),
            limit=list(out_shape),
            where=s_out,
            fix=f"the Output node must have the shape of what feeds it: set it to "
            f"{list(out_shape)} (nir.Output(output_type={list(out_shape)}))",
        )
    notes.append(
        f"Output node {s_out!r}: declared shape {list(decl)} but receives "
        f"{list(out_shape)} (same {int(np.prod(decl))} elements); used "
        f"{list(out_shape)} (Rockpool writes [1, 1, 1] for [1])"
    )
    return out_shape


def _network(modules: dict, edges: list, s_in: str, s_out: str, in_shape: tuple, out_shape: tuple) -> Any:
    """The imported modules as a :class:`GraphNetwork` (the boundary renamed ``input``/``output``, a node
    already so named gets a ``_``), or as a Sequential / single module when it is a plain chain."""
    rename = {s_in: INPUT, s_out: OUTPUT}
    clash = [k for k in modules if k in (INPUT, OUTPUT)]
    for k in clash:
        rename[k] = f"{k}_"
    mods = {rename.get(k, k): m for k, m in modules.items()}
    edges2 = [(rename.get(a, a), rename.get(b, b)) for a, b in edges]
    try:
        net = GraphNetwork(mods, edges2, input_shape=in_shape, output_shape=out_shape)
    except GraphError as err:
        raise _nir_error(err, "graph", "inconsistent graph") from None
    return _as_chain(net, Sequential) or net


def load_nir(
    source: Any,
    *,
    dt: float | None,
    convention: str = "auto",
    reset: str | None = None,
    decay: str | None = None,
    numerics: str = "float",
    weight_scale: float = 1.0,
) -> NIRImport:
    """Import a NIR file or ``nir.NIRGraph`` and report every assumption.

    Args:
        source: a path to a ``.nir`` file, or a ``nir.NIRGraph``.
        dt: the simulation step in seconds; ``None`` takes it from the file where the convention
            implies it (pondlib metadata, ``r = tau/dt``, Rockpool), else raises ``NIRError``.
        convention: ``"auto"`` or one of :data:`CONVENTIONS` (see the module docstring); an exporter's
            name (``"snntorch"``, ``"lava"``, ``"norse"``, ``"rockpool"``, ``"sinabs"``, ``"spyx"``)
            also applies its discrete rules (:mod:`pondlib.interop.nir.exporters`).
        reset: ``"v_reset"`` (NIR >= 1.0.6), ``"zero"`` or ``"subtract"`` (NIR <= 1.0.5); None (default):
            the exporter's reset, else ``"v_reset"``.
        decay: override the leak discretization (``"euler"`` or ``"exp"``).
        numerics: ``"float"`` (default) or ``"int"``: Lava's fixed-point CUBA (``convention="lava"``).
        weight_scale: Lava numerics: integer weights and thresholds are ``rint(weight_scale * w)``.

    Returns:
        :class:`NIRImport` with the module, the convention, dt, reset and notes.

    Raises:
        NIRError: unreadable or malformed files, unsupported nodes, shape mismatches (naming the node,
            the shapes and a fix), missing dt.
    """
    notes: list[str] = []
    graph = _source_graph(source, notes)
    rule = EXPORTER_RULES.get(convention) if isinstance(convention, str) else None
    reset = reset if reset is not None else (rule.reset if rule is not None else "v_reset")
    check_choice(reset, "reset", RESETS, error=NIRError, fix="pass reset='v_reset', 'zero' or 'subtract'")
    check_choice(numerics, "numerics", NUMERICS, error=NIRError, fix="pass numerics='float' or 'int'")
    if numerics == "int" and (rule is None or not rule.integer):
        raise NIRError(
            "integer numerics",
            value=f"convention={convention!r}",
            limit="convention='lava' (the one exporter with integer numerics)",
            where="load_nir",
            fix="pass convention='lava', or numerics='float'",
        )
    if decay is not None:
        check_choice(decay, "decay", ("euler", "exp"), error=NIRError, fix="pass 'euler' or 'exp' (or None)")
    conv, dt, auto_decay = detect_convention(graph, dt, convention, notes)
    weight_scale = check_float(
        weight_scale, "weight_scale", lo=0.0, lo_open=True, where="load_nir", error=NIRError, fix="pass e.g. 1.0"
    )
    ctx = _Ctx(float(dt), conv, reset, decay or auto_decay, notes, rule, numerics, weight_scale)
    if rule is not None:
        notes.append(f"exporter rules: {convention} ({rule.source}); numerics {numerics}")
    notes.append(
        f"reset: {reset}"
        + (
            " (files cannot say; pass reset='subtract' for networks trained with reset by subtraction)"
            if conv != "pondlib"
            else ""
        )
    )
    nodes, edges, s_in, s_out, in_shape, out_decl = _inline(graph, "", ctx)
    if not edges:
        raise NIRError("graph has no edges", where="graph", fix="connect Input -> ... -> Output")
    modules, out_shapes, preds = _import_modules(nodes, edges, s_in, in_shape, ctx)
    got = [out_shapes[p] for p in preds.get(s_out, []) if p in out_shapes]
    out_shape = _output_shape(got, s_out, out_decl, notes)
    module = _network(modules, edges, s_in, s_out, in_shape, out_shape)
    return NIRImport(module, conv, float(dt), reset, notes, convention if rule is not None else None, numerics)


def _needs_input_shape(node: Any) -> bool:
    return type(node).__name__ in ("Conv1d", "Conv2d", "SumPool2d", "AvgPool2d", "Flatten") or (
        type(node).__name__ == "NIRGraph" and _mstr(_meta(node), "pondlib_type") == "Residual"
    )


def _as_chain(net: Any, sequential: type) -> Any:
    """A Sequential (or the single module) when ``net`` is a plain chain with flat input."""

    if net.recurrent or len(net.input_shape) != 1 or len(net.edges) != len(net.modules) + 1:
        return None
    nxt: dict[str, str] = {}
    for a, b in net.edges:
        if a in nxt:
            return None
        nxt[a] = b
    chain, cur = [], nxt.get(INPUT)
    while cur is not None and cur != OUTPUT:
        chain.append(net.modules[cur])
        cur = nxt.get(cur)
    if cur != OUTPUT or len(chain) != len(net.modules):
        return None
    return chain[0] if len(chain) == 1 else sequential(*chain)


def from_nir(
    source: Any,
    *,
    dt: float | None,
    convention: str = "auto",
    reset: str | None = None,
    decay: str | None = None,
    numerics: str = "float",
    weight_scale: float = 1.0,
) -> Any:
    """Import a NIR file or graph as a pondlib module (:func:`load_nir` without the report).

    Example (the NIR paper's Norse LIF, with the exporter's dt):

        >>> import numpy as np, pathlib
        >>> here = pathlib.Path(__file__).resolve().parents[3] / "tests" / "data" / "nir" / "lif"
        >>> net = from_nir(here / "lif_norse.nir", dt=1e-4)
        >>> x = np.loadtxt(here / "lif_norse.csv", delimiter=",")[:, :1]
        >>> np.flatnonzero(np.asarray(net(x)[0][:, 0])).tolist()
        [460, 510, 710, 760]
    """
    return load_nir(
        source, dt=dt, convention=convention, reset=reset, decay=decay, numerics=numerics, weight_scale=weight_scale
    ).module
