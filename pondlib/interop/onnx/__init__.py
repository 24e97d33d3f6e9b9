"""ONNX models in: float graphs as pondlib layer lists, QDQ graphs as integer layers for the DNN paths.

* :func:`load_onnx` imports a float model (PyTorch export) as a :class:`~pondlib.graph.dnn.FloatModel`,
  :func:`run_float` evaluates it in numpy (the parity reference against ONNX Runtime).
* :func:`load_qdq` imports a model quantized by ``onnxruntime.quantization.quantize_static`` (QDQ
  form) as a :class:`~pondlib.graph.dnn.QDQModel`, without re-quantizing it.

Either goes to a device through its DNN path (``pondlib.devices.registry.get(name).map_onnx(model,
calibration)`` / ``.map_qdq(model)``, or ``pond map model.onnx --device NAME``); each chip's converters
live in its folder (``pondlib.devices.<chip>.onnx``).

The oldest opset accepted is :data:`MIN_OPSET` (6). Every refusal is an :class:`~pondlib.errors.ONNXError`
naming the file or node, the op, the value, the limit and a fix. ``onnx`` is imported where used.

Example:
    >>> import numpy as np
    >>> from onnx import TensorProto, helper, numpy_helper
    >>> w = numpy_helper.from_array(np.array([[1.0, -1.0]], np.float32), "W")
    >>> g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
    ...     "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])], [w])
    >>> model = load_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    >>> run_float(model, np.array([[2.0]])).tolist()
    [[2.0, 0.0]]
    >>> [ly.op for ly in model.layers]
    ['gemm', 'relu']
"""

from typing import Any

from pondlib.devices import registry
from pondlib.graph.dnn import LAYER_OPS, FloatLayer, FloatModel, QDQLayer, QDQModel, hwc_permutation
from pondlib.interop.onnx.layers import run_float
from pondlib.interop.onnx.qdq import load_qdq
from pondlib.interop.onnx.reader import FLOAT_OPS, MIN_OPSET, load_onnx

__all__ = [
    "load_onnx",
    "run_float",
    "load_qdq",
    "FloatLayer",
    "FloatModel",
    "QDQLayer",
    "QDQModel",
    "LAYER_OPS",
    "FLOAT_OPS",
    "MIN_OPSET",
    "hwc_permutation",
]


def __getattr__(name: str) -> Any:
    """Names that moved into a chip's folder (e.g. a device's ONNX converter), with a DeprecationWarning."""
    return registry.moved(__name__, name)
