r"""The bit-exact runner of Siracusa's graph path: an :class:`~pondlib.graph.opgraph.OpGraph` evaluated op by op.

:class:`GraphSim` runs the integer (or float32) program a graph describes, in topological order, with the
kernels of :mod:`pondlib.devices.siracusa.kernels`, and records every tensor. It is the reference the C
emitter and the Deeploy test suite are checked against; :class:`~pondlib.devices.siracusa.sim.SiracusaSim`
stays the runner of the layer chains (Gemm/Conv/LIF) and those layers are ops here too (``Gemm``, ``Conv``,
``RequantShift``).

Two modes, chosen from the input arrays unless ``integer=`` says:

* **integer** (inputs of an integer dtype, or float arrays holding whole numbers with ``integer=True``):
  every tensor is an ``int64`` array holding the exact value the chip holds. Constants stored as float32
  holding whole numbers (Deeploy's dialect) become ``int64``. Fractions appear only where a float operand
  makes them (a dequantization ``x * scale`` with a fractional scale: that tensor is kept as float32); an
  op that produced fractions from integers alone has no integer rule and is refused.
* **float** (float inputs): tensors are ``float32``; kernels compute as the cluster's FPUs do.

Every numpy fault inside a kernel (a broadcast that does not fit, an axis out of range) becomes a
:class:`~pondlib.errors.SimulationError` naming the node, its op and the input shapes.

Example:
    >>> import numpy as np
    >>> from pondlib.graph.opgraph import Node, OpGraph, TensorInfo
    >>> g = OpGraph((TensorInfo("x", (1, 2), "int8"),), (TensorInfo("y", (1, 2), "int8"),),
    ...     (Node("a", "Add", ("x", "b"), ("h",)),
    ...      Node("rq", "RequantShift", ("h", "m", "z"), ("y",), {"div": 4, "n_levels_out": 256, "signed": 1})),
    ...     {"b": np.float32([1, 2]), "m": np.float32(3), "z": np.float32(0)})
    >>> run = GraphSim(g).run({"x": np.array([[5, -7]])})
    >>> run.outputs["y"].tolist(), run.tensors["h"].tolist()
    ([[5, -4]], [[6, -5]])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.devices.siracusa.kernels import KernelContext, lookup
from pondlib.errors import GraphError, PondError, SimulationError
from pondlib.graph.opgraph import MAX_ELEMENTS, Node, OpGraph, check_opgraph
from pondlib.validate import check_type

__all__ = ["GraphSim", "GraphRun", "integral", "integer_inputs"]

#: Faults numpy raises inside a kernel; each becomes a SimulationError naming the node.
_NUMPY_FAULTS = (ValueError, IndexError, TypeError, ZeroDivisionError, FloatingPointError, OverflowError, KeyError)


def integral(arr: np.ndarray) -> bool:
    """Whether every value of ``arr`` is a whole number inside int64 (an integer dtype always is)."""
    a = np.asarray(arr)
    if a.dtype.kind in "iub":
        return True
    if a.dtype.kind != "f":
        return False
    return bool(np.all(np.isfinite(a)) and np.all(a == np.round(a)) and np.all(np.abs(a) < 2.0**62))


def integer_inputs(graph: OpGraph, inputs: Sequence[Any]) -> bool:
    """Integer mode for ``inputs`` of ``graph``: every input of an integer dtype, or whole-number floats fed to a
    graph in Deeploy's integer dialect (:data:`~pondlib.devices.siracusa.kernels.deeploy_ops.DIALECT_OPS`)."""
    from pondlib.devices.siracusa.kernels.deeploy_ops import DIALECT_OPS

    arrays = [np.asarray(a) for a in inputs]
    if all(a.dtype.kind in "iub" for a in arrays):
        return True
    return any(n.op in DIALECT_OPS for n in graph.nodes) and all(integral(a) for a in arrays)


@dataclass
class GraphRun:
    """One run: ``outputs`` (graph output name -> array), ``tensors`` (every tensor, when recorded), the mode
    and the nodes in the order they ran."""

    outputs: dict[str, np.ndarray]
    tensors: dict[str, np.ndarray] = field(default_factory=dict)
    integer: bool = True
    order: list[Node] = field(default_factory=list)

    def output_list(self) -> list[np.ndarray]:
        """The outputs in the graph's output order."""
        return list(self.outputs.values())


class GraphSim:
    """Runs an :class:`~pondlib.graph.opgraph.OpGraph` on Siracusa's kernels (module docstring).

    Args:
        graph: the graph (validated here: a cycle, a dangling tensor or an unsupported op is a GraphError
            naming it, before anything runs).
    """

    def __init__(self, graph: OpGraph, *, max_elements: int = MAX_ELEMENTS) -> None:
        check_type(graph, "graph", OpGraph, where="GraphSim", error=GraphError, fix="import with load_opgraph")
        self.graph = graph
        self.max_elements = int(max_elements)
        self.order = check_opgraph(graph, max_elements=self.max_elements)
        self.kernels = [lookup(n.op, n.domain, n.label) for n in self.order]
        self._constants: dict[bool, dict[str, np.ndarray]] = {}
        self._declared = {t.name: t.dtype for t in graph.inputs}

    # -- inputs --------------------------------------------------------------------------------------------
    def _input_dict(self, inputs: Any) -> dict[str, Any]:
        names = self.graph.input_names
        if isinstance(inputs, Mapping):
            missing = [n for n in names if n not in inputs]
            extra = [k for k in inputs if k not in names]
            if missing or extra:
                raise SimulationError(
                    "inputs",
                    value=f"missing {missing}, unknown {extra}" if extra else f"missing {missing}",
                    limit=f"one array per graph input {list(names)}",
                    where="GraphSim.run",
                    fix="pass a dict keyed by the graph's input names (or a list in their order)",
                )
            return {n: inputs[n] for n in names}
        if isinstance(inputs, np.ndarray) or not isinstance(inputs, Sequence):
            inputs = [inputs]
        if len(inputs) != len(names):
            raise SimulationError(
                "inputs",
                value=f"{len(inputs)} arrays",
                limit=f"{len(names)} (one per graph input {list(names)})",
                where="GraphSim.run",
                fix="pass one array per graph input, in order, or a dict",
            )
        return dict(zip(names, inputs))

    def _prepare(self, inputs: Any, integer: bool | None) -> tuple[dict[str, np.ndarray], bool]:
        raw = self._input_dict(inputs)
        arrays: dict[str, np.ndarray] = {}
        for info in self.graph.inputs:
            value = raw[info.name]
            try:
                arr = np.asarray(value)
            except (ValueError, TypeError):
                arr = np.asarray(value, dtype=object)
            if arr.dtype.kind not in "biuf":
                raise SimulationError(
                    f"input {info.name!r}", value=f"dtype {arr.dtype}", limit="a numeric array", where="GraphSim.run",
                    fix="pass numbers",
                )  # fmt: skip
            if info.shape is not None and tuple(arr.shape) != tuple(info.shape):
                raise SimulationError(
                    f"input {info.name!r} shape",
                    value=tuple(arr.shape),
                    limit=tuple(info.shape),
                    where="GraphSim.run",
                    fix="pass the shape the graph declares",
                )
            if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
                raise SimulationError(
                    f"input {info.name!r}", value="NaN or inf", limit="finite values", where="GraphSim.run",
                    fix="clean the input",
                )  # fmt: skip
            arrays[info.name] = arr
        if integer is None:
            integer = all(a.dtype.kind in "biu" for a in arrays.values())
        out = {}
        for name, arr in arrays.items():
            if integer:
                if not integral(arr):
                    raise SimulationError(
                        f"input {name!r}",
                        value="non-integer values",
                        limit="whole numbers (integer mode)",
                        where="GraphSim.run",
                        fix="quantize the input first, or run in float mode (integer=False)",
                    )
                out[name] = arr.astype(np.int64)
                _check_range(out[name], self._declared[name], name)
            else:
                out[name] = arr.astype(np.float32) if arr.dtype.kind == "f" else arr
        return out, bool(integer)

    def constants(self, integer: bool) -> dict[str, np.ndarray]:
        """The graph's constants as the mode sees them (integer mode: whole-number floats as int64)."""
        if integer not in self._constants:
            table = {}
            for name, arr in self.graph.constants.items():
                if integer and arr.dtype.kind == "f" and integral(arr):
                    table[name] = arr.astype(np.int64)
                elif not integer and arr.dtype.kind == "f":
                    table[name] = arr.astype(np.float32)
                else:
                    table[name] = np.asarray(arr)
            self._constants[integer] = table
        return self._constants[integer]

    # -- running -------------------------------------------------------------------------------------------
    def run(self, inputs: Any, *, integer: bool | None = None, record: bool = True) -> GraphRun:
        """Evaluate the graph on ``inputs`` (a dict by input name, a list in input order, or one array).

        Returns:
            A :class:`GraphRun` with the outputs and, when ``record``, every tensor (inputs, constants
            excluded, and every node output).

        Raises:
            SimulationError: inputs of the wrong names, shapes or values; a numpy fault inside a node.
            GraphError: a node's attributes or operand ranges its op cannot take.
        """
        values, integer = self._prepare(inputs, integer)
        consts = self.constants(integer)
        env: dict[str, np.ndarray] = dict(values)
        for node, fn in zip(self.order, self.kernels):
            ins = [None if not t else (env[t] if t in env else consts[t]) for t in node.inputs]
            ctx = KernelContext(integer, self.graph.opset, node.label)
            result = _call(fn, node, ins, ctx)
            mixed = integer and any(a is not None and a.dtype.kind == "f" for a in ins)
            for name, arr in zip(node.outputs, result):
                if name:
                    env[name] = _checked(arr, node, integer, self.max_elements, mixed)
        outputs = {}
        for name in self.graph.output_names:
            outputs[name] = env[name] if name in env else consts[name]
        tensors = env if record else {}
        return GraphRun(outputs, tensors, integer, list(self.order))

    def __call__(self, inputs: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        return self.run(inputs, **kwargs).outputs


def _check_range(arr: np.ndarray, dtype: str, name: str) -> None:
    """Integer inputs declared with an integer type hold values of that type (never wrapped here)."""
    try:
        info = np.iinfo(np.dtype(dtype))
    except (TypeError, ValueError):
        return  # float-declared (Deeploy's carrier type) or bool: no range to check
    if arr.size and (arr.min() < info.min or arr.max() > info.max):
        bad = arr.min() if arr.min() < info.min else arr.max()
        raise SimulationError(
            f"input {name!r}",
            value=int(bad),
            limit=f"{dtype} values in [{info.min}, {info.max}] (the declared input type)",
            where="GraphSim.run",
            fix="quantize the input to the declared type",
        )


def _call(fn: Any, node: Node, ins: list, ctx: KernelContext) -> tuple:
    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            out = fn(ins, node.attrs, ctx)
    except PondError:
        raise
    except _NUMPY_FAULTS as err:
        shapes = ", ".join("None" if a is None else str(tuple(np.shape(a))) for a in ins)
        raise SimulationError(
            "op failed",
            value=f"input shapes {shapes}: {type(err).__name__}: {str(err)[:80]}",
            limit=f"inputs and attributes {node.op} accepts",
            where=node.label,
            fix="check the node's input shapes and attributes",
        ) from None
    return out if isinstance(out, tuple) else (out,)


def _checked(arr: Any, node: Node, integer: bool, max_elements: int, mixed: bool = False) -> np.ndarray:
    """A node's output as the mode keeps it: in integer mode whole numbers become int64, and fractions are
    refused unless a float operand made them (a dequantization such as ``x * scale``: kept as float32)."""
    a = np.asarray(arr)
    if a.size > max_elements:
        raise SimulationError(
            "tensor size", value=f"{a.shape}", limit=f"<= {max_elements} elements", where=node.label,
            fix="check the shapes feeding this node",
        )  # fmt: skip
    if integer and a.dtype.kind == "f":
        if mixed and not integral(a):
            return a.astype(np.float32)
        if not integral(a):
            raise SimulationError(
                "non-integer tensor in integer mode",
                value=f"{node.op} produced fractions",
                limit="whole numbers",
                where=node.label,
                fix="this op has no integer rule here: run the float graph (integer=False)",
            )
        return a.astype(np.int64)
    if not integer and a.dtype == np.float64:
        return a.astype(np.float32)
    return a
