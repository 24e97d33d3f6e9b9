r"""SpiNNaker2's DNN graph path: CNNs and transformer blocks as int8 power-of-two ops, over one chip or several.

Input: a :class:`~pondlib.graph.dnn.FloatModel` (imported from ONNX by ``pondlib.interop.onnx.load_onnx``, or
built in code; layers read earlier layers by index, -1 the model input) whose ops are those of
:data:`~pondlib.devices.spinnaker2.graph_ops.GRAPH_OPS` (the ONNX importer's ``gemm``, ``conv``, ``relu``,
``maxpool``, ``avgpool``, ``reshape``, ``add``; and, built in code, ``matmul`` (two activations),
``transpose`` (``perm``), ``softmax`` (last axis), ``layernorm`` (``weight``, ``bias``, ``eps``), ``rmsnorm``
(``weight``), ``gelu``). Integer rules and tiling: :mod:`~pondlib.devices.spinnaker2.graph_ops`.

Quantization (:func:`graph_mapper`) with calibration inputs, as the MLP path: each tensor's fraction is
``f = floor(log2(127 / max|t|))`` on the calibration set, capped for requantizing ops by what a right shift
can reach (``f_y <= f_x + f_w`` for MLA ops, ``<= max(f_a, f_b)`` for ``add``); weights per tensor at their own
fraction; ``relu``, pools, ``reshape`` and ``transpose`` keep their input's fraction; softmax outputs fraction 7.
A ``relu`` whose only input is a ``gemm``, ``conv`` or ``add`` read by nothing else is fused into it.

Several chips (``chips=N``, at most ``limits.n_chips``; ``chips > 1`` with no limits takes the 48-chip board):
the ops, in order, are cut into at most ``N`` contiguous groups, one per chip, so that the largest chip's DRAM
load is the smallest possible (a binary search on the load, each candidate filled greedily); a chip's load is its
group's parameters plus the activation buffers it writes or receives. A tensor read on another chip than the one
that wrote it is one *transfer* (source chip, destination chip, bytes per sample): the image lists the transfers
and the source chip sends the buffer over the chip-to-chip links (chips in a chain, one hop per chip passed)
when the op that writes it finishes. A chip's DRAM must hold its group (``dram_capacity``; a model that one chip
cannot hold is refused with the chip count that would). Outputs do not depend on the partition: the same
integer ops run in the same order.

An op that alone needs more DRAM than one chip has (a ``gemm`` or an ungrouped ``conv`` whose parameters,
output and input exceed ``dram_bytes``) is split before the partition into the fewest ``k`` parts (at most
:data:`MAX_PARTS`) that each fit: part ``p`` holds output columns (gemm) or output channels (conv)
``p n // k .. (p + 1) n // k`` of the ``n`` outputs, i.e. those weight columns/filters and biases, reads the
whole input and computes its slice of the outputs with the op's shift and fused ReLU (each output's accumulator
is the same sum, so the result is the same integers), and a ``concat`` named as the op gathers the slices along
the split axis. Contiguous groups put the parts on consecutive chips; the input goes to every part's chip and
each slice to the gathering chip as ordinary transfers. The timing model runs the parts concurrently.

Example:
    >>> import numpy as np
    >>> from pondlib.graph.dnn import FloatLayer, FloatModel
    >>> rng = np.random.default_rng(0)
    >>> conv = FloatLayer("conv", "conv", (-1,), {"weight": rng.normal(size=(4, 2, 3)), "bias": np.zeros(4),
    ...     "strides": [1], "pads": [1, 1], "dilations": [1], "groups": 1}, (4, 8))
    >>> relu = FloatLayer("relu", "relu", (0,), {}, (4, 8))
    >>> model = FloatModel((conv, relu), "x", (2, 8))
    >>> cfg = graph_mapper(model, rng.normal(size=(16, 2, 8)))
    >>> [(op.name, op.op, op.relu, op.tiles) for op in cfg.ops]
    [('conv', 'conv', True, 32)]
    >>> y, _, _ = GraphSim(cfg).evolve(cfg.quantize_input(rng.normal(size=(3, 2, 8))))
    >>> y.shape, int(y.min()) >= 0
    ((3, 4, 8), True)
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from pondlib.devices.core.intmath import sat
from pondlib.devices.core.rules import raise_violations
from pondlib.devices.spinnaker2.graph_image import ATTR_KEYS, build_graph_image, parse_graph_image
from pondlib.devices.spinnaker2.graph_ops import (
    GRAPH_OPS,
    NORM_PRECISION,
    SOFTMAX_FRAC,
    GraphOp,
    float_op,
    gelu_constants,
    run_op,
    softmax_constants,
)
from pondlib.devices.spinnaker2.graph_tiling import tile_op
from pondlib.devices.spinnaker2.limits import SpiNNaker2Limits, limits_for_chips
from pondlib.errors import ConfigError, ONNXError, QuantizationError, SimulationError, Violation
from pondlib.graph.dnn import FloatModel
from pondlib.validate import as_float_array, as_int_array, check_choice, check_int, check_type

__all__ = [
    "GraphConfig",
    "Transfer",
    "graph_mapper",
    "GraphSim",
    "GRAPH_RULES",
    "SUPPORTED",
    "MODEL_OPS",
    "MAX_PARTS",
    "load_dnn_image",
]

#: Ops a model may hold (``concat`` is made by the mapper when it splits an op over chips).
MODEL_OPS = tuple(op for op in GRAPH_OPS if op != "concat")
#: What the graph path runs (the limit of a refusal).
SUPPORTED = ", ".join(MODEL_OPS)
#: Most parts one op is split into (one chip each at most; the board's 48 chips).
MAX_PARTS = 48
#: Rule id -> what it requires.
GRAPH_RULES: dict[str, str] = {
    "op_supported": f"every op is one of: {SUPPORTED} (pool ceil_mode 0)",
    "fraction_range": "softmax/gelu inputs at fraction 0..12, shifts 0..62",
    "bias_range": "quantized biases fit the 32-bit bias word",
    "accumulator_width": "value-range bound of every MLA accumulator < 2^(acc_bits-1) (or overflow='wrap')",
    "worker_sram": "the smallest tile of every op fits limits.dnn_worker_bytes",
    "dram_capacity": "each chip's parameters and activation buffers fit its DRAM (an op larger than one chip's "
    "DRAM split by outputs over up to MAX_PARTS chips)",
    "chips": "1 <= chips <= limits.n_chips and chips <= ops that do work",
}


@dataclass(frozen=True)
class Transfer:
    """An activation sent over the chip-to-chip link: op ``tensor``'s output (-1: the network input) from
    ``src`` to ``dst`` chip, ``bytes`` per sample."""

    tensor: int
    src: int
    dst: int
    bytes: int


@dataclass(frozen=True, eq=False)
class GraphConfig:
    """A quantized graph program: ops in order (:class:`~pondlib.devices.spinnaker2.graph_ops.GraphOp`), the
    per-sample input shape and fraction, accumulator width, overflow mode, chip count, transfers and report."""

    ops: tuple[GraphOp, ...]
    input_shape: tuple[int, ...]
    input_frac: int
    acc_bits: int = 24
    overflow: str = "error"
    chips: int = 1
    transfers: tuple[Transfer, ...] = ()
    limits_name: str = "SpiNNaker2 chip"
    report: dict[str, Any] = field(default_factory=dict)

    def quantize_input(self, x: Any) -> np.ndarray:
        """``sat8(round(x 2^input_frac))`` for a batch ``(B, *input_shape)``.

        Raises:
            QuantizationError: non-finite input or a wrong per-sample shape.
        """
        arr = as_float_array(x, "x", where="GraphConfig.quantize_input", error=QuantizationError, ndim=None)
        if tuple(arr.shape[1:]) != tuple(self.input_shape):
            raise QuantizationError(
                "x shape",
                value=arr.shape,
                limit=f"(B, {', '.join(map(str, self.input_shape))})",
                where="GraphConfig.quantize_input",
                fix="pass a batch of inputs of the model's shape",
            )
        with np.errstate(over="ignore"):
            return sat(np.rint(np.ldexp(arr, self.input_frac)), 8)

    def dequantize_output(self, y: Any) -> np.ndarray:
        """Float values ``y 2^-out_frac`` of the last op's int8 output."""
        arr = as_int_array(y, "y", lo=-128, hi=127, where="GraphConfig.dequantize_output", error=QuantizationError)
        return np.ldexp(arr.astype(np.float64), -self.ops[-1].out_frac)

    def in_shapes(self, i: int) -> list[tuple[int, ...]]:
        """Per-sample shapes of op ``i``'s inputs."""
        return [self.input_shape if j < 0 else self.ops[j].out_shape for j in self.ops[i].inputs]

    def problems(self) -> list[str]:
        """Every field the image cannot hold or the simulator relies on, as messages (empty when valid)."""
        return config_problems(self)

    def to_dram_image(self) -> bytes:
        """The version-2 DRAM image (layout: :mod:`~pondlib.devices.spinnaker2.graph_image`).

        Raises:
            ConfigError: every problem of :meth:`problems`, together.
        """
        problems = self.problems()
        if problems:
            raise ConfigError(problems=problems, where="GraphConfig.to_dram_image")
        return build_graph_image(self)

    @classmethod
    def from_dram_image(cls, data: Any) -> GraphConfig:
        """The configuration stored in a version-2 image (lossless inverse of :meth:`to_dram_image`).

        Raises:
            ConfigError: not bytes, or an invalid image (the field and its offset named).
        """
        p = parse_graph_image(data)
        cfg = cls(
            p.ops,
            p.input_shape,
            p.input_frac,
            p.acc_bits,
            p.overflow,
            p.chips,
            tuple(Transfer(*t) for t in p.transfers),
            p.limits_name,
            p.report,
        )
        problems = cfg.problems()
        if problems:
            raise ConfigError(problems=problems, where="GraphConfig.from_dram_image")
        return cfg


def _int(v: Any, lo: int, hi: int) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and lo <= int(v) <= hi


def _array_problem(a: Any, lo: int, hi: int) -> str | None:
    if a is None:
        return None
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "iu" or a.ndim > 4 or a.size == 0:
        return "expected a non-empty integer array of rank <= 4"
    if a.min() < lo or a.max() > hi:
        return f"values {int(a.min())}..{int(a.max())}, expected {lo}..{hi}"
    return None


def _op_problems(i: int, op: Any, chips: int) -> list[str]:
    if not isinstance(op, GraphOp):
        return [f"ops[{i}]: got a {type(op).__name__}, expected a GraphOp"]
    out, name = [], f"ops[{i}] ({op.name!r})"
    if not isinstance(op.name, str) or not isinstance(op.split, str) or op.op not in GRAPH_OPS:
        out.append(f"{name}: name/split must be str and op one of {list(GRAPH_OPS)}")
    ins = tuple(op.inputs) if isinstance(op.inputs, (tuple, list)) else ()
    n_max = MAX_PARTS if op.op == "concat" else 2
    if not 1 <= len(ins) <= n_max or not all(_int(j, -1, i - 1) for j in ins):
        out.append(f"{name}: inputs {op.inputs!r}, expected 1..{n_max} indices of earlier ops (-1: the input)")
    fr = tuple(op.in_fracs) if isinstance(op.in_fracs, (tuple, list)) else ()
    if len(fr) != len(ins) or not all(_int(f, -(2**31), 2**31 - 1) for f in (*fr, op.out_frac)):
        out.append(f"{name}: fractions must be int32, one per input")
    shape = tuple(op.out_shape) if isinstance(op.out_shape, (tuple, list)) else None
    if shape is None or not 1 <= len(shape) <= 4 or not all(_int(d, 1, 2**31) for d in shape):
        out.append(f"{name}: out_shape {op.out_shape!r}, expected 1..4 sizes >= 1")
    if not _int(op.shift, 0, 62) or not isinstance(op.relu, (bool, np.bool_)) or not _int(op.chip, 0, chips - 1):
        out.append(f"{name}: shift 0..62, relu a bool and chip 0..{chips - 1} expected")
    if not _int(op.tiles, 0, 2**32 - 1):
        out.append(f"{name}: tiles {op.tiles!r}, expected a count")
    for key, arr, lo, hi in (("weights", op.weights, -128, 127), ("bias", op.bias, -(2**31), 2**31 - 1)):
        why = _array_problem(arr, lo, hi)
        if why:
            out.append(f"{name}.{key}: {why}")
    attrs = op.attrs if isinstance(op.attrs, Mapping) else {}
    if op.op == "concat" and (
        tuple(attrs.get("axis", ())) not in [(a,) for a in range(len(shape or ()))] or any(f != op.out_frac for f in fr)
    ):
        out.append(f"{name}: a concat needs attrs['axis'] = (axis,) of its output and inputs at its fraction")
    for key, values in attrs.items():
        if (
            key not in ATTR_KEYS
            or not isinstance(values, (tuple, list))
            or not all(_int(v, -(2**31), 2**31 - 1) for v in values)
        ):
            out.append(f"{name}.attrs[{key!r}]: expected a known key with int32 values")
    return out


def config_problems(cfg: Any) -> list[str]:
    """The problems of a :class:`GraphConfig` (see :meth:`GraphConfig.problems`)."""
    out = []
    if not _int(cfg.chips, 1, 255) or not _int(cfg.acc_bits, 8, 62) or cfg.overflow not in ("error", "wrap"):
        return [
            f"chips 1..255, acc_bits 8..62 and overflow 'error'/'wrap' expected, got {cfg.chips!r}, "
            f"{cfg.acc_bits!r}, {cfg.overflow!r}"
        ]
    shape = tuple(cfg.input_shape) if isinstance(cfg.input_shape, (tuple, list)) else None
    if shape is None or not 1 <= len(shape) <= 4 or not all(_int(d, 1, 2**31) for d in shape):
        out.append(f"input_shape {cfg.input_shape!r}, expected 1..4 sizes >= 1")
    if not _int(cfg.input_frac, -(2**31), 2**31 - 1) or not isinstance(cfg.limits_name, str):
        out.append("input_frac must be an int32 and limits_name a str")
    if not isinstance(cfg.ops, (tuple, list)) or not cfg.ops:
        return out + ["ops: expected a non-empty tuple of GraphOp"]
    for i, op in enumerate(cfg.ops):
        out += _op_problems(i, op, int(cfg.chips))
    for t in cfg.transfers if isinstance(cfg.transfers, (tuple, list)) else [None]:
        if (
            not isinstance(t, Transfer)
            or not _int(t.tensor, -1, len(cfg.ops) - 1)
            or not all(_int(v, 0, cfg.chips - 1) for v in (t.src, t.dst))
        ):
            out.append(f"transfer {t!r}: expected a Transfer of a tensor between two chips of the config")
    try:
        json.dumps(cfg.report, sort_keys=True)
    except (TypeError, ValueError):
        out.append("report: expected plain JSON data")
    return out


def frac_of(maxabs: float) -> int:
    """Largest ``f`` with ``maxabs 2^f <= 127`` (0 for an all-zero tensor)."""
    if not maxabs > 0 or not math.isfinite(maxabs):
        return 0
    f = int(math.floor(math.log2(127.0) - math.log2(maxabs)))
    while math.ldexp(maxabs, f) > 127.0:
        f -= 1
    while math.ldexp(maxabs, f + 1) <= 127.0:
        f += 1
    return f


def _int8(w: np.ndarray) -> tuple[np.ndarray, int]:
    f = frac_of(float(np.max(np.abs(w)))) if w.size else 0
    return np.clip(np.rint(np.ldexp(w, f)), -128, 127).astype(np.int64), f


def _forward(model: FloatModel, cal: np.ndarray) -> list[np.ndarray]:
    outs: list[np.ndarray] = []
    with np.errstate(all="ignore"):
        for layer in model.layers:
            outs.append(float_op(layer, [cal if j < 0 else outs[j] for j in layer.inputs]))
    for layer, y in zip(model.layers, outs):
        if not np.all(np.isfinite(y)):
            raise QuantizationError(
                "layer output",
                value="inf/NaN in float64 on the calibration set",
                limit="finite outputs",
                where=layer.name,
                fix="scale the weights or the calibration inputs down",
            )
    return outs


def _fusable(model: FloatModel) -> dict[int, int]:
    """relu layer index -> the producer it fuses into."""
    readers: dict[int, int] = {}
    for layer in model.layers:
        for j in layer.inputs:
            readers[j] = readers.get(j, 0) + 1
    out = {}
    for i, layer in enumerate(model.layers):
        if layer.op == "relu" and len(layer.inputs) == 1:
            j = layer.inputs[0]
            if j >= 0 and model.layers[j].op in ("gemm", "conv", "add") and readers[j] == 1 and j not in out.values():
                out[i] = j
    return out


def _quantize(layer: Any, fin: list[int], y: np.ndarray, relu: bool, q: dict, bad: list) -> GraphOp:
    """One float layer as a GraphOp (fractions, integer parameters, constants); problems go to ``bad``."""
    op, p, name = layer.op, layer.params, layer.name
    fy = frac_of(float(np.max(np.abs(y)))) if y.size else 0
    kw: dict[str, Any] = {"relu": relu}
    if op in ("gemm", "conv"):
        w = np.asarray(p["weight"], np.float64)
        wq, fw = _int8(w)
        fy = min(fy, fin[0] + fw)
        shift = fin[0] + fw - fy
        b = np.zeros(wq.shape[1] if op == "gemm" else wq.shape[0]) if p.get("bias") is None else np.asarray(p["bias"])
        rnd = (1 << (shift - 1)) if 0 < shift <= 62 else 0
        with np.errstate(over="ignore"):
            bf = np.rint(np.ldexp(np.asarray(b, np.float64), fin[0] + fw)) + rnd
        if bf.size and np.max(np.abs(bf)) >= 2**31:
            bad.append(Violation("bias_range", name, f"{float(np.max(np.abs(bf))):.6g}", "< 2^31", "scale the bias"))
        bq = np.clip(bf, -(2**31), 2**31 - 1).astype(np.int64)
        per_out = np.abs(wq).sum(axis=0) if op == "gemm" else np.abs(wq).reshape(wq.shape[0], -1).sum(axis=1)
        kw.update(weights=wq, bias=bq, shift=shift)
        kw["bound"] = int(np.max(128 * per_out + np.abs(bq)))
        if op == "conv":
            kw["attrs"] = {
                "strides": tuple(p["strides"]),
                "pads": tuple(p["pads"]),
                "dilations": tuple(p["dilations"]),
                "groups": (int(p.get("groups", 1)),),
            }
    elif op == "matmul":
        fy = min(fy, fin[0] + fin[1])
        kw.update(shift=fin[0] + fin[1] - fy)
        kw["bound"] = 128 * 128 * int(layer.params.get("k", 0)) + (1 << max(kw["shift"] - 1, 0))
    elif op == "add":
        fy = min(fy, max(fin))
        kw.update(shift=max(fin) - fy)
    elif op in ("relu", "maxpool", "avgpool", "reshape", "transpose"):
        fy = fin[0]
        if op in ("maxpool", "avgpool"):
            nd = len(p["kernel"])
            kw["attrs"] = {
                "kernel": tuple(p["kernel"]),
                "strides": tuple(p["strides"]),
                "pads": tuple(p["pads"]),
                "dilations": tuple(p.get("dilations", [1] * nd)),
                "count_include_pad": (int(p.get("count_include_pad", 0)),),
            }
        if op == "transpose":
            kw["attrs"] = {"perm": tuple(int(v) for v in p["perm"])}
    elif op == "softmax":
        fy = SOFTMAX_FRAC
        kw["attrs"] = {"exp": softmax_constants(fin[0])}
        _frac_window(fin[0], name, op, bad)
    elif op in ("layernorm", "rmsnorm"):
        gq, fg = _int8(np.asarray(p["weight"], np.float64))
        fy = min(fy, fg + NORM_PRECISION)
        kw.update(weights=gq, shift=fg + NORM_PRECISION - fy)
        if op == "layernorm":
            beta = np.zeros(gq.size) if p.get("bias") is None else np.asarray(p["bias"], np.float64)
            kw["bias"] = np.clip(np.rint(np.ldexp(beta, fg + NORM_PRECISION)), -(2**31), 2**31 - 1).astype(np.int64)
    elif op == "gelu":
        _frac_window(fin[0], name, op, bad)
        kw["attrs"] = {"gelu": gelu_constants(min(max(fin[0], 0), 12), fy)}
    bound = kw.pop("bound", None)
    if bound is not None and bound >= 1 << (q["acc_bits"] - 1) and q["overflow"] == "error":
        bad.append(
            Violation(
                "accumulator_width",
                name,
                f"|acc| bound {bound} (inputs <= 128)",
                f"< 2^{q['acc_bits'] - 1}",
                "use overflow='wrap', a wider accumulator (acc_bits=29) or smaller weights",
            )
        )
    if kw.get("shift", 0) > 62:
        bad.append(Violation("fraction_range", name, f"shift {kw['shift']}", "0..62", "rescale the op"))
    return GraphOp(name, op, (), tuple(layer.out_shape), tuple(fin), fy, **kw)


def _frac_window(f: int, name: str, op: str, bad: list) -> None:
    if not 0 <= f <= 12:
        bad.append(
            Violation(
                "fraction_range",
                name,
                f"{op} input at fraction {f}",
                "0..12",
                "rescale the op before it (its values are beyond +-127 or below 2^-12 x 127)",
            )
        )


def _window_problem(layer: Any, in_shape: tuple[int, ...]) -> str | None:
    """What is wrong with a conv's or pool's window attributes for input ``in_shape`` (None: nothing)."""
    p = layer.params
    if layer.op == "conv":
        if _shape_of(p.get("weight")) is None:
            return "a weight that is not numbers"
        w = np.asarray(p.get("weight"), dtype=np.float64)
        nd, groups = w.ndim - 2, int(p.get("groups", 1))
        if nd not in (1, 2) or len(in_shape) != nd + 1:
            return f"a {nd}-D kernel on input {in_shape} (1-D and 2-D convolutions only)"
        if groups < 1 or w.shape[0] % groups or in_shape[0] != w.shape[1] * groups:
            return f"weight {w.shape}, groups {groups} on {in_shape[0]} channels"
    else:
        nd = len(p.get("kernel", ()))
        if nd not in (1, 2) or len(in_shape) != nd + 1:
            return f"a {nd}-D window on input {in_shape} (1-D and 2-D pools only)"
    lens = (len(p.get("strides", ())), len(p.get("pads", ())), len(p.get("dilations", [1] * nd)))
    if lens != (nd, 2 * nd, nd):
        return f"strides/pads/dilations of lengths {lens}, expected ({nd}, {2 * nd}, {nd})"
    return None


def _shape_of(a: Any) -> tuple[int, ...] | None:
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return tuple(arr.shape)


def _param_problem(layer: Any, ins: list[tuple[int, ...]]) -> str | None:
    """What is wrong with a layer's inputs, parameters and output shape for inputs of shapes ``ins``."""
    op, p, out = layer.op, layer.params, tuple(layer.out_shape)
    if len(ins) != (2 if op in ("add", "matmul") else 1):
        return f"{len(ins)} input(s)"
    x = ins[0]
    if op == "gemm":
        w, b = _shape_of(p.get("weight")), p.get("bias")
        if w is None or len(w) != 2 or w[0] != x[-1] or out != (*x[:-1], w[1]):
            return f"weight {w} on input {x} with output {out}"
        if b is not None and _shape_of(b) != (w[1],):
            return f"bias {_shape_of(b)} for {w[1]} outputs"
    elif op in ("layernorm", "rmsnorm"):
        shapes = [_shape_of(p.get(k)) for k in ("weight", "bias") if k == "weight" or p.get(k) is not None]
        if any(sh != (x[-1],) for sh in shapes) or out != x:
            return f"weight/bias {shapes} on rows of {x[-1]} with output {out}"
    elif op == "transpose":
        perm = list(p.get("perm", []))
        if sorted(perm) != list(range(len(x))) or out != tuple(x[k] for k in perm):
            return f"perm {perm} on {x} with output {out}"
    elif op == "matmul":
        a, b = ins
        if len(a) < 2 or len(a) != len(b) or a[:-2] != b[:-2] or a[-1] != b[-2] or out != (*a[:-1], b[-1]):
            return f"{a} @ {b} with output {out}"
    elif op == "add" and (ins[0] != ins[1] or out != x):
        return f"{ins[0]} + {ins[1]} with output {out}"
    elif op == "reshape" and int(np.prod(out)) != int(np.prod(x)):
        return f"{x} reshaped to {out}"
    elif op in ("relu", "softmax", "gelu") and out != x:
        return f"output {out} for input {x}"
    return None


def _check_model(model: FloatModel, bad: list) -> None:
    for i, layer in enumerate(model.layers):
        if any(not isinstance(j, (int, np.integer)) or not -1 <= j < i for j in layer.inputs) or not layer.inputs:
            raise ONNXError(
                "layer inputs",
                value=layer.inputs,
                limit=f"indices of earlier layers (-1..{i - 1})",
                where=f"layer {layer.name!r}",
                fix="list layers in topological order",
            )
        ins = [tuple(model.input_shape if j < 0 else model.layers[j].out_shape) for j in layer.inputs]
        why = None
        if layer.op not in MODEL_OPS:
            bad.append(
                Violation("op_supported", layer.name, layer.op, SUPPORTED, "map it to another device's DNN path")
            )
        elif layer.op in ("maxpool", "avgpool") and int(layer.params.get("ceil_mode", 0)):
            bad.append(Violation("op_supported", layer.name, "ceil_mode 1", "ceil_mode 0", "pad explicitly"))
        elif layer.op in ("conv", "maxpool", "avgpool"):
            why = _window_problem(layer, ins[0])
        else:
            why = _param_problem(layer, ins)
        if why:
            bad.append(Violation("op_supported", layer.name, why, f"a well-formed {layer.op}", "fix the layer"))


def _check_shapes(model: FloatModel, outs: list[np.ndarray]) -> None:
    """Every float output has its layer's declared shape (a conv's or a pool's window arithmetic)."""
    for layer, y in zip(model.layers, outs):
        if tuple(y.shape[1:]) != tuple(layer.out_shape):
            raise ONNXError(
                "layer output shape",
                value=tuple(y.shape[1:]),
                limit=tuple(layer.out_shape),
                where=f"layer {layer.name!r}",
                fix="declare the shape the layer computes (out_shape)",
            )


def graph_mapper(
    model: FloatModel,
    calibration: Any,
    limits: SpiNNaker2Limits | str | None = None,
    *,
    chips: int = 1,
    acc_bits: int | None = None,
    overflow: str = "error",
) -> GraphConfig:
    """Quantize a float layer graph to int8 power-of-two ops, tile every op over worker PEs and place the ops
    on ``chips`` chips (module docstring).

    Args:
        model: the float graph. calibration: ``(B, *input_shape)`` float inputs that set the fractions.
        limits: chip limits (default one chip; the 48-chip board when ``chips > 1``). chips: 1..limits.n_chips.
        acc_bits: MLA accumulator width (default ``limits.acc_bits``). overflow: ``"error"`` or ``"wrap"``.

    Raises:
        ConstraintError: every violated rule of :data:`GRAPH_RULES`, together (unsupported ops, tiles that
            cannot fit a PE, DRAM capacity per chip, chip counts).
        ConfigError: ``chips`` out of range. QuantizationError: bad calibration data. ONNXError: a malformed graph.
    """
    where = "graph_mapper"
    check_type(model, "model", FloatModel, where=where, error=ONNXError, fix="import with load_onnx")
    lim, chips = limits_for_chips(limits, chips, where)
    acc_bits = check_int(lim.acc_bits if acc_bits is None else acc_bits, "acc_bits", lo=8, hi=62, where=where)
    overflow = check_choice(overflow, "overflow", ("error", "wrap"), where=where, error=QuantizationError)
    bad: list[Violation] = []
    _check_model(model, bad)
    raise_violations(bad, lim.name)
    cal = as_float_array(calibration, "calibration", where=where, error=QuantizationError, ndim=None)
    if tuple(cal.shape[1:]) != tuple(model.input_shape) or cal.shape[0] < 1:
        raise QuantizationError(
            "calibration data",
            value=f"shape {cal.shape}",
            limit=f"finite (B, {', '.join(map(str, model.input_shape))})",
            where=where,
            fix="pass representative float inputs of the model's shape",
        )
    outs = _forward(model, cal)
    _check_shapes(model, outs)
    fused = _fusable(model)
    index: dict[int, int] = {-1: -1}
    ops: list[GraphOp] = []
    f_in = frac_of(float(np.max(np.abs(cal))))
    q = {"acc_bits": acc_bits, "overflow": overflow}
    fused_into = {j: i for i, j in fused.items()}
    for i, layer in enumerate(model.layers):
        if i in fused:
            index[i] = index[fused[i]]
            continue
        ins = tuple(index[j] for j in layer.inputs)
        fin = [f_in if j < 0 else ops[j].out_frac for j in ins]
        y = outs[fused_into.get(i, i)]
        if layer.op == "matmul":
            layer = replace(layer, params={**layer.params, "k": int(outs[layer.inputs[0]].shape[-1])})
        op = replace(_quantize(layer, fin, y, i in fused_into, q, bad), inputs=ins)
        ops.append(op)
        index[i] = len(ops) - 1
    split_notes: list[str] = []
    ops = _split_large(ops, tuple(model.input_shape), lim.dram_bytes, split_notes)
    tiled = []
    for op in ops:
        shapes = [model.input_shape if j < 0 else ops[j].out_shape for j in op.inputs]
        tiles, split, v = tile_op(op, shapes, lim.dnn_worker_bytes, lim.usable_pes_per_chip - 1)
        bad += v
        tiled.append(replace(op, tiles=tiles, split=split))
    placed, transfers = _partition(tiled, tuple(model.input_shape), chips, lim, bad)
    raise_violations(bad, lim.name)
    report = {
        "notes": list(model.notes)
        + [f"relu {model.layers[i].name} fused into {model.layers[j].name}" for i, j in fused.items()]
        + split_notes,
        "chip_bytes": _chip_bytes(placed, transfers, tuple(model.input_shape), chips),
    }
    return GraphConfig(
        tuple(placed), tuple(model.input_shape), f_in, acc_bits, overflow, chips, tuple(transfers), lim.name, report
    )


def _act_bytes(shape: Sequence[int]) -> int:
    return int(np.prod(shape)) if len(shape) else 1


def _chip_bytes(ops: Sequence[GraphOp], transfers: Sequence[Transfer], in_shape: tuple, chips: int) -> list[int]:
    """DRAM bytes per chip: parameters, the buffers its ops write, the buffers it receives (and the input)."""
    out = [0] * chips
    out[0] += _act_bytes(in_shape)
    for op in ops:
        out[op.chip] += op.weight_bytes + _act_bytes(op.out_shape)
    for t in transfers:
        out[t.dst] += t.bytes
    return out


def _groups(ops: list[GraphOp], in_shape: tuple, cap: int) -> list[int]:
    """Chip of each op, filling chips in order so that no chip's DRAM bytes (parameters, the buffers it writes,
    the buffers it receives, the input on chip 0) exceed ``cap`` unless one op alone does."""
    chips, chip, used, here, recv = [], 0, _act_bytes(in_shape), set(), set()
    for i, op in enumerate(ops):
        extra = [j for j in op.inputs if j not in here and j not in recv and not (j < 0 and chip == 0)]
        need = op.weight_bytes + _act_bytes(op.out_shape)
        need += sum(_act_bytes(in_shape if j < 0 else ops[j].out_shape) for j in extra)
        if used + need > cap and here and op.op != "reshape":
            chip, used, here, recv = chip + 1, 0, set(), set()
            extra = [j for j in op.inputs if not (j < 0 and chip == 0)]
            need = op.weight_bytes + _act_bytes(op.out_shape)
            need += sum(_act_bytes(in_shape if j < 0 else ops[j].out_shape) for j in extra)
        chips.append(chip)
        used += need
        here.add(i)
        recv.update(extra)
    return chips


def _part_count(op: GraphOp, in_bytes: int, cap: int) -> int:
    """Fewest parts (2..MAX_PARTS) whose largest (its weights, biases and outputs, plus the whole input) fits
    ``cap`` bytes; 0 when the op cannot be split (not a gemm or an ungrouped conv) or no count fits."""
    if op.op not in ("gemm", "conv") or (op.op == "conv" and op.attr("groups")[0] != 1):
        return 0
    n = int(op.weights.shape[1] if op.op == "gemm" else op.weights.shape[0])
    per_col = op.weights.size // n + 4 + _act_bytes(op.out_shape) // n
    for k in range(2, min(n, MAX_PARTS) + 1):
        if in_bytes + math.ceil(n / k) * per_col <= cap:
            return k
    return 0


def _split(op: GraphOp, k: int, first: int) -> list[GraphOp]:
    """``op`` as ``k`` parts (output columns of a gemm, output channels of a conv; part ``p`` holds outputs
    ``p n // k .. (p + 1) n // k``, ``attrs['part'] = (p, k, first output)``) and the ``concat`` that gathers
    them, its input indices starting at ``first``."""
    gemm = op.op == "gemm"
    n = int(op.weights.shape[1] if gemm else op.weights.shape[0])
    cut = [p * n // k for p in range(k + 1)]
    out = []
    for p in range(k):
        a, b = cut[p], cut[p + 1]
        out.append(
            replace(
                op,
                name=f"{op.name}.part{p}",
                weights=(op.weights[:, a:b] if gemm else op.weights[a:b]).copy(),
                bias=None if op.bias is None else op.bias[a:b].copy(),
                out_shape=(*op.out_shape[:-1], b - a) if gemm else (b - a, *op.out_shape[1:]),
                attrs={**op.attrs, "part": (p, k, a)},
            )
        )
    axis = len(op.out_shape) - 1 if gemm else 0
    fracs = (op.out_frac,) * k
    concat = GraphOp(op.name, "concat", tuple(range(first, first + k)), op.out_shape, fracs, op.out_frac)
    return out + [replace(concat, attrs={"axis": (axis,)})]


def _split_large(ops: list[GraphOp], in_shape: tuple, cap: int, notes: list[str]) -> list[GraphOp]:
    """Every gemm/conv that alone needs more than ``cap`` bytes of DRAM (parameters, output, input) split into
    the fewest parts that fit one chip each (:func:`_split`); inputs re-indexed; a note per split op."""
    new: list[GraphOp] = []
    where = {-1: -1}
    for i, op in enumerate(ops):
        op = replace(op, inputs=tuple(where[j] for j in op.inputs))
        in_bytes = sum(_act_bytes(in_shape if j < 0 else new[j].out_shape) for j in op.inputs)
        need = op.weight_bytes + _act_bytes(op.out_shape) + in_bytes
        k = _part_count(op, in_bytes, cap) if need > cap else 0
        if k:
            new += _split(op, k, len(new))
            unit = "column" if op.op == "gemm" else "channel"
            notes.append(
                f"{op.name} split into {k} output-{unit} parts, one chip each ({need} B > {cap} B of DRAM per "
                "chip), gathered by a concat"
            )
        else:
            new.append(op)
        where[i] = len(new) - 1
    return new


def _partition(
    ops: list[GraphOp], in_shape: tuple, chips: int, lim: SpiNNaker2Limits, bad: list
) -> tuple[list[GraphOp], list[Transfer]]:
    """Contiguous groups, one per chip, whose largest DRAM load is the smallest possible (a binary search on
    the load; module docstring); at most ``chips`` chips are used."""
    work = [i for i, op in enumerate(ops) if op.op != "reshape"]
    if chips > max(1, len(work)):
        bad.append(Violation("chips", "<model>", chips, f"<= {len(work)} (ops that do work)", "use fewer chips"))
        return ops, []
    lo = 1
    hi = _act_bytes(in_shape) + sum(
        op.weight_bytes
        + _act_bytes(op.out_shape)
        + sum(_act_bytes(in_shape if j < 0 else ops[j].out_shape) for j in op.inputs)
        for op in ops
    )
    while lo < hi:
        mid = (lo + hi) // 2
        if max(_groups(ops, in_shape, mid)) < chips:
            hi = mid
        else:
            lo = mid + 1
    placed = [replace(op, chip=c) for op, c in zip(ops, _groups(ops, in_shape, lo))]
    transfers = []
    seen = set()
    for op in placed:
        for j in op.inputs:
            src = 0 if j < 0 else placed[j].chip
            if src != op.chip and (j, op.chip) not in seen:
                seen.add((j, op.chip))
                shape = in_shape if j < 0 else placed[j].out_shape
                transfers.append(Transfer(j, src, op.chip, _act_bytes(shape)))
    per_chip = _chip_bytes(placed, transfers, in_shape, chips)
    need = max(_groups(ops, in_shape, lim.dram_bytes)) + 1
    alone = [
        op.name
        for op in ops
        if op.weight_bytes
        + _act_bytes(op.out_shape)
        + sum(_act_bytes(in_shape if j < 0 else ops[j].out_shape) for j in op.inputs)
        > lim.dram_bytes
    ]
    for c, used in enumerate(per_chip):
        if used > lim.dram_bytes:
            fix = f"partition over more chips (chips >= {need})" if need <= lim.n_chips else "use a smaller model"
            if alone:
                fix = (
                    f"op(s) {', '.join(alone)} alone exceed one chip's DRAM and cannot be split further (a gemm "
                    "or an ungrouped conv splits by outputs, up to 48 parts): use smaller ops"
                )
            bad.append(Violation("dram_capacity", f"chip {c}", f"{used} B", f"{lim.dram_bytes} B", fix))
    return placed, transfers


class GraphSim:
    """Bit-precise integer simulator of a :class:`GraphConfig`: the ops in order, each by its integer rule
    (:func:`~pondlib.devices.spinnaker2.graph_ops.run_op`). Input: int8 ``(B, *input_shape)`` (quantize with
    :meth:`GraphConfig.quantize_input`); output the last op's int8 values; ``record=True`` records every op's
    output under its name. No state."""

    def __init__(self, config: GraphConfig, overflow: str | None = None) -> None:
        check_type(
            config, "config", GraphConfig, where="GraphSim", error=ConfigError, fix="build one with graph_mapper"
        )
        problems = config.problems()
        if problems:
            raise ConfigError(problems=problems, where="GraphSim")
        self.config = config
        self.overflow = (
            config.overflow
            if overflow is None
            else check_choice(overflow, "overflow", ("error", "wrap"), where="GraphSim", error=SimulationError)
        )

    def reset_state(self) -> None:
        """No state (kept for the simulator interface)."""

    def evolve(self, x: Any, record: bool = False) -> tuple[np.ndarray, dict[str, Any], dict[str, np.ndarray]]:
        """Run a batch; ``(y, {}, record)``.

        Raises:
            SimulationError: input outside int8 or of the wrong shape; an accumulator overflow (overflow="error").
        """
        cfg = self.config
        h = as_int_array(x, "x", lo=-128, hi=127, where="GraphSim.evolve", error=SimulationError, ndim=None)
        if tuple(h.shape[1:]) != tuple(cfg.input_shape):
            raise SimulationError(
                "x shape",
                value=h.shape,
                limit=f"(B, {', '.join(map(str, cfg.input_shape))})",
                where="GraphSim.evolve",
                fix="pass a batch of int8 inputs of the model's shape",
            )
        outs: list[np.ndarray] = []
        rec: dict[str, np.ndarray] = {}
        for op in cfg.ops:
            y = run_op(op, [h if j < 0 else outs[j] for j in op.inputs], cfg.acc_bits, self.overflow)
            outs.append(y)
            if record:
                rec[op.name] = y
        return outs[-1], {}, rec


def load_dnn_image(data: Any) -> Any:
    """A DNN image of either version: a ``DNNConfig`` (version 1, MLP layer chains) or a :class:`GraphConfig`
    (version 2).

    Raises:
        ConfigError: not an image of a known version (field and offset named).
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ConfigError(
            "data",
            value=f"a {type(data).__name__}",
            limit="bytes",
            where="load_dnn_image",
            fix="pass the image's bytes",
        )
    raw = bytes(data)
    if len(raw) >= 10 and raw[:8] == b"S2DNNIMG" and int.from_bytes(raw[8:10], "little") == 1:
        from pondlib.devices.spinnaker2.dnn import DNNConfig

        return DNNConfig.from_dram_image(raw)
    return GraphConfig.from_dram_image(raw)
