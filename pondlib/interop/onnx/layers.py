r"""The float layer list an ONNX model is imported as, and its numpy reference evaluator.

The layer kinds, their parameters and equations are those of :mod:`pondlib.graph.dnn` (the plain-data
layer graph; :data:`~pondlib.graph.dnn.LAYER_OPS`); :func:`run_float` evaluates them in numpy, batch-first
and channels-first like ONNX, as the parity reference against ONNX Runtime.

Example:
    >>> import numpy as np
    >>> fc = FloatLayer("fc", "gemm", (-1,), {"weight": np.eye(2), "bias": np.array([1.0, -5.0])}, (2,))
    >>> relu = FloatLayer("relu", "relu", (0,), {}, (2,))
    >>> run_float([fc, relu], np.array([[1.0, 2.0]])).tolist()
    [[2.0, 0.0]]
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from pondlib.errors import ONNXError
from pondlib.graph.dnn import LAYER_OPS, FloatLayer, FloatModel
from pondlib.validate import as_array, as_float_array, check_elements

__all__ = ["FloatLayer", "FloatModel", "run_float", "check_layer_params", "LAYER_OPS"]


def _windows(xp: np.ndarray, kernel: Sequence[int], strides: Sequence[int], dil: Sequence[int], out: Sequence[int]):
    """Yield ``(offset, view)``: for every kernel offset, the strided view ``(B, C, *out)`` of ``xp``."""
    for off in itertools.product(*(range(k) for k in kernel)):
        sl = tuple(slice(o * d, o * d + s * (n - 1) + 1, s) for o, d, s, n in zip(off, dil, strides, out))
        yield off, xp[(slice(None), slice(None)) + sl]


def _out_size(size: int, k: int, s: int, d: int, pb: int, pe: int, ceil: bool = False) -> int:
    span = size + pb + pe - d * (k - 1) - 1
    return (-(-span // s) if ceil else span // s) + 1


def _conv(x: np.ndarray, p: dict) -> np.ndarray:
    w, g = p["weight"], p["groups"]
    nd = w.ndim - 2
    pads = p["pads"]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + nd]) for i in range(nd)])
    out = [
        _out_size(x.shape[2 + i], w.shape[2 + i], p["strides"][i], p["dilations"][i], pads[i], pads[i + nd])
        for i in range(nd)
    ]
    B, C = x.shape[:2]
    O, cg = w.shape[:2]
    y = np.zeros((B, g, O // g, *out))
    wg = w.reshape(g, O // g, cg, *w.shape[2:])
    for off, view in _windows(xp, w.shape[2:], p["strides"], p["dilations"], out):
        y += np.einsum("bgc...,goc->bgo...", view.reshape(B, g, cg, *out), wg[(Ellipsis,) + off])
    y = y.reshape(B, O, *out)
    if p.get("bias") is not None:
        y += p["bias"].reshape((1, O) + (1,) * nd)
    return y


def _pool(x: np.ndarray, p: dict, kind: str) -> np.ndarray:
    k, s, d, pads = p["kernel"], p["strides"], p["dilations"], p["pads"]
    nd = len(k)
    ceil = bool(p.get("ceil_mode", 0))
    out = [_out_size(x.shape[2 + i], k[i], s[i], d[i], pads[i], pads[i + nd], ceil) for i in range(nd)]
    # extra end padding so that every window of a ceil-mode output exists (it only sees padding)
    extra = [
        max(0, (out[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 - (x.shape[2 + i] + pads[i] + pads[i + nd]))
        for i in range(nd)
    ]
    widths = [(0, 0), (0, 0)] + [(pads[i], pads[i + nd] + extra[i]) for i in range(nd)]
    if kind == "max":
        xp = np.pad(x, widths, constant_values=-np.inf)
        y = np.full(x.shape[:2] + tuple(out), -np.inf)
        for _, view in _windows(xp, k, s, d, out):
            y = np.maximum(y, view)
        return y
    xp = np.pad(x, widths)
    mask = np.pad(np.ones((1, 1) + x.shape[2:]), widths)
    if p.get("count_include_pad", 0):
        inner = [(0, 0), (0, 0)] + [(0, extra[i]) for i in range(nd)]
        mask = np.pad(np.ones((1, 1) + tuple(x.shape[2 + i] + pads[i] + pads[i + nd] for i in range(nd))), inner)
    total = np.zeros(x.shape[:2] + tuple(out))
    count = np.zeros((1, 1) + tuple(out))
    for (_, view), (_, mview) in zip(_windows(xp, k, s, d, out), _windows(mask, k, s, d, out)):
        total += view
        count += mview
    return total / count


def _softmax(x: np.ndarray, axis: int, opset: int, log: bool) -> np.ndarray:
    """Softmax (opset >= 13: over ``axis``; before: over the axes from ``axis`` on, flattened)."""
    axis = axis % x.ndim
    shape = x.shape
    if opset < 13:
        x = x.reshape(int(np.prod(shape[:axis], dtype=np.int64)), -1)
        axis = 1
    z = x - x.max(axis=axis, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=axis, keepdims=True))
    y = z - lse if log else np.exp(z - lse)
    return y.reshape(shape)


def check_layer_params(layers: Sequence[FloatLayer]) -> None:
    """Every layer's sizes within the size budget and its array parameters finite real numbers.

    Raises:
        ONNXError: naming the layer and the first bad element (``weight[1, 2]``): a NaN or infinite weight
            would make every output NaN; a declared output beyond :data:`~pondlib.validate.MAX_ELEMENTS`.
    """
    for layer in layers:
        if not isinstance(layer, FloatLayer):
            raise ONNXError("layer", value=type(layer).__name__, limit="a FloatLayer", where="run_float",
                            fix="pass a FloatModel from load_onnx or its layers")  # fmt: skip
        where = f"layer {layer.name!r} ({layer.op})"
        check_elements(tuple(layer.out_shape), "output", where=where, error=ONNXError)
        for key, value in layer.params.items():
            if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
                fix = "remove NaN/infinite values from the model's weights (re-export a trained model)"
                as_array(value, key, where=where, error=ONNXError, allow_empty=True, fix=fix)


def run_float(model: FloatModel | Sequence[FloatLayer], x: Any, *, tail: bool = True) -> np.ndarray:
    """Evaluate an imported float model on ``x`` (batch first: ``(B, *input_shape)``) in float64.

    ``tail=True`` applies a dropped final Softmax/LogSoftmax (:attr:`FloatModel.tail`), so that the
    result compares with ONNX Runtime's output; ``tail=False`` returns the logits.

    Raises:
        ONNXError: ``x`` that is not finite real numbers, or whose per-sample shape is not the model's.

    Example:
        >>> import numpy as np
        >>> fc = FloatLayer("fc", "gemm", (-1,), {"weight": np.ones((3, 2)), "bias": None}, (2,))
        >>> run_float(FloatModel((fc,), "x", (3,), ("Softmax", 1, 13)), np.ones((1, 3))).tolist()
        [[0.5, 0.5]]
    """
    if not isinstance(model, (FloatModel, list, tuple)):
        raise ONNXError("model", value=type(model).__name__, limit="a FloatModel or a sequence of FloatLayers",
                        where="run_float", fix="import the model with load_onnx")  # fmt: skip
    layers = model.layers if isinstance(model, FloatModel) else tuple(model)
    check_layer_params(layers)
    h = as_float_array(x, "x", where="run_float", error=ONNXError, ndim=None, fix="pass finite float input (B, ...)")
    if isinstance(model, FloatModel) and tuple(h.shape[1:]) != tuple(model.input_shape):
        raise ONNXError(
            "input shape",
            value=h.shape,
            limit=f"(B, {', '.join(map(str, model.input_shape))})",
            where="run_float",
            fix="pass a batch of inputs of the model's shape",
        )
    outs: list[np.ndarray] = []

    def src(i: int) -> np.ndarray:
        return h if i < 0 else outs[i]

    for layer in layers:
        p, a = layer.params, src(layer.inputs[0])
        if layer.op == "gemm":
            y = a @ p["weight"] + (p["bias"] if p.get("bias") is not None else 0.0)
        elif layer.op == "conv":
            y = _conv(a, p)
        elif layer.op == "relu":
            y = np.maximum(a, 0.0)
        elif layer.op == "leaky_relu":
            y = np.where(a >= 0, a, a * p["alpha"])
        elif layer.op in ("maxpool", "avgpool"):
            y = _pool(a, p, layer.op[:3])
        elif layer.op == "reshape":
            y = a.reshape((a.shape[0],) + tuple(layer.out_shape))
        elif layer.op == "add":
            y = a + src(layer.inputs[1])
        elif layer.op == "affine":
            bshape = (1, -1) + (1,) * (a.ndim - 2)
            y = a * p["scale"].reshape(bshape) + p["shift"].reshape(bshape)
        else:
            raise ONNXError("layer op", value=layer.op, limit=LAYER_OPS, where=layer.name, fix="use an imported model")
        outs.append(y)
    y = outs[-1] if outs else h
    if tail and isinstance(model, FloatModel) and model.tail is not None:
        op, axis, opset = model.tail
        y = _softmax(y, axis, opset, op == "LogSoftmax")
    return y
