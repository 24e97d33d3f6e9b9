"""Checks every chip's DNN path shares when it takes an imported ONNX layer graph (:mod:`pondlib.graph.dnn`).

Example:
    >>> import numpy as np
    >>> from pondlib.graph.dnn import FloatLayer, FloatModel
    >>> fc = FloatLayer("fc", "gemm", (-1,), {"weight": np.ones((2, 2))}, (2,))
    >>> skip = FloatLayer("add", "add", (-1, 0), {}, (2,))
    >>> check_chain(FloatModel((fc, skip), "x", (2,)), "Toy", "gemm, relu")
    Traceback (most recent call last):
    ...
    pondlib.errors.ONNXError: layer 'add': layer not supported on Toy: got add with a skip connection (inputs ...
"""

from __future__ import annotations

from typing import Any

from pondlib.errors import ONNXError

__all__ = ["refuse", "check_chain"]


def refuse(layer: Any, device: str, why: str, supported: str) -> ONNXError:
    """The error for an imported ``layer`` that ``device``'s DNN path cannot run (``supported``: what it runs)."""
    return ONNXError(
        f"layer not supported on {device}",
        value=f"{layer.op} {why}".strip(),
        limit=supported,
        where=f"layer {layer.name!r}",
        fix="run it with run_float, or change the model",
    )


def check_chain(model: Any, device: str, supported: str) -> None:
    """Every layer of ``model`` reads the one before it (no skip connection), else an :class:`ONNXError`."""
    for i, layer in enumerate(model.layers):
        if layer.inputs != (i - 1,):
            raise refuse(layer, device, "with a skip connection (inputs are not the previous layer)", supported)
