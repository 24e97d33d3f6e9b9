"""ONNX models in: float graphs as pondlib layer lists, QDQ graphs as integer layers for the DNN paths.

* :func:`load_onnx` imports a float model (PyTorch export) as a :class:`FloatModel` (layers in
  :mod:`~pondlib.interop.onnx.layers`), :func:`run_float` evaluates it in numpy (the parity reference
  against ONNX Runtime), :func:`to_siracusa` / :func:`to_spinnaker2` turn it into the float layers of
  the Siracusa ``mapper`` / the SpiNNaker2 ``dnn_mapper`` (which quantize it with calibration data).
* :func:`load_qdq` imports a model quantized by ``onnxruntime.quantization.quantize_static`` (QDQ
  form) without re-quantizing it: :func:`qdq_to_siracusa` builds RequantShift layers whose ``mul / 2^s``
  approximates each requantizer's real scale, :func:`qdq_to_spinnaker2` power-of-two shift layers;
  both report every scale-approximation error.

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
    >>> [type(ly).__name__ for ly in to_siracusa(model)[0]]
    ['GemmLayer', 'ReLU']
"""

from pondlib.interop.onnx.adapters import to_siracusa, to_spinnaker2
from pondlib.interop.onnx.layers import LAYER_OPS, FloatLayer, FloatModel, run_float
from pondlib.interop.onnx.qdq import QDQLayer, QDQModel, load_qdq, qdq_to_siracusa, qdq_to_spinnaker2
from pondlib.interop.onnx.reader import FLOAT_OPS, MIN_OPSET, load_onnx

__all__ = [
    "load_onnx",
    "run_float",
    "to_siracusa",
    "to_spinnaker2",
    "load_qdq",
    "qdq_to_siracusa",
    "qdq_to_spinnaker2",
    "FloatLayer",
    "FloatModel",
    "QDQLayer",
    "QDQModel",
    "LAYER_OPS",
    "FLOAT_OPS",
    "MIN_OPSET",
]
