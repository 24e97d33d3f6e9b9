r"""DNN models as plain data: the layer graphs ONNX models are imported as (``pondlib.interop.onnx``) and
device mappers take (``pondlib.devices.<chip>.onnx``).

A float model (:class:`FloatModel`) is a list of :class:`FloatLayer`.
Every layer reads the outputs of earlier layers by index (``-1`` is the model input), so residual
connections are plain references. Tensors are batch-first, channels-first like ONNX: ``(B, C, *S)``
for ``S`` = 1 or more spatial axes, ``(B, K)`` for dense layers. Shapes below are per sample.

==============  ==============================================================================================
``gemm``        ``y = x W + b``; ``weight`` (K, O), ``bias`` (O,)
``conv``        ``y[o, p] = b[o] + sum_{c in group(o), k} W[o, c, k] x_pad[g(o) C_g + c, p s + k d]``;
                ``weight`` (O, C/groups, *kernel), ``strides``, ``dilations``, ``pads`` (begins then ends)
``relu``        ``y = max(x, 0)``
``leaky_relu``  ``y = x`` if ``x >= 0`` else ``alpha x``
``maxpool``     ``y = max`` over the (dilated) window; padding is ``-inf``; ``ceil_mode`` pads the end
``avgpool``     ``y = mean`` over the window; zero padding counted only when ``count_include_pad``
``reshape``     per-sample ``shape`` (Flatten, Reshape, Squeeze, Unsqueeze)
``add``         ``y = a + b`` (two earlier tensors of one shape: residual connections)
``affine``      ``y[c] = scale[c] x[c] + shift[c]`` (a BatchNormalization with no conv/gemm to fold into)
==============  ==============================================================================================

A quantized model (:class:`QDQModel`, from ``onnxruntime.quantization.quantize_static`` in QDQ form) is a
list of integer :class:`QDQLayer`: int8 weights with zero point 0, int32 biases at scale ``s_x s_w``, and
for every requantizer the real scale :math:`M_o = s_x s_{w,o} / s_y` (stand-alone: :math:`M = s_x / s_y`).

Example:
    >>> fc = FloatLayer("fc", "gemm", (-1,), {"weight": np.eye(2), "bias": None}, (2,))
    >>> FloatModel((fc,), "x", (2,)).summary()
    'fc                       gemm        (2,)'
    >>> hwc_permutation((2, 1, 2)).tolist()
    [0, 2, 1, 3]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.errors import ONNXError
from pondlib.validate import as_float_array

__all__ = ["LAYER_OPS", "FloatLayer", "FloatModel", "QDQLayer", "QDQModel", "hwc_permutation"]

#: The float layer kinds (see the module docstring).
LAYER_OPS = ("gemm", "conv", "relu", "leaky_relu", "maxpool", "avgpool", "reshape", "add", "affine")


@dataclass(frozen=True, eq=False)
class FloatLayer:
    """One imported float layer: ``name`` (the ONNX node), ``op`` (:data:`LAYER_OPS`), ``inputs`` (indices
    of earlier layers, ``-1`` the model input), ``params`` and the per-sample ``out_shape``."""

    name: str
    op: str
    inputs: tuple[int, ...]
    params: dict = field(default_factory=dict)
    out_shape: tuple[int, ...] = ()


@dataclass(frozen=True, eq=False)
class FloatModel:
    """A float ONNX model imported by :func:`~pondlib.interop.onnx.load_onnx`.

    Attributes:
        layers: the :class:`FloatLayer` list (topological order; the last one is the output).
        input_name, input_shape: the ONNX input and its per-sample shape (batch axis excluded).
        tail: ``None`` or ``(op, axis, opset)`` of a final Softmax/LogSoftmax that was dropped from the
            layers (both preserve the argmax); :func:`run_float` applies it with ``tail=True``.
        opset: the default-domain opset; notes: what the import did (folds, dropped tails).
    """

    layers: tuple[FloatLayer, ...]
    input_name: str
    input_shape: tuple[int, ...]
    tail: tuple | None = None
    opset: int = 0
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line per layer: name, op, output shape."""
        return "\n".join(f"{ly.name:<24} {ly.op:<11} {ly.out_shape}" for ly in self.layers)


# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class QDQLayer:
    """One integer layer of a QDQ model (ONNX layouts: gemm weight (K, O), conv weight (O, C/g, kh, kw)).

    ``kind``: ``gemm``, ``conv``, ``requant`` (a DQ -> Relu -> Q) or ``reshape`` (layout only, same scale).
    ``in_scale/in_zp``, ``w_scale`` (scalar or (O,)), ``out_scale/out_zp``, ``out_signed`` (int8 vs uint8),
    ``relu``, ``in_shape``/``out_shape`` per sample, ``conv``: strides/pads/dilations/groups."""

    name: str
    kind: str
    in_scale: float
    in_zp: int
    out_scale: float
    out_zp: int
    out_signed: bool
    in_shape: tuple
    out_shape: tuple
    weight: Any = None
    bias: Any = None
    w_scale: Any = None
    relu: bool = False
    conv: dict = field(default_factory=dict)

    @property
    def multiplier(self) -> np.ndarray:
        """The real requantization scale ``M`` (per output channel for gemm/conv)."""
        if self.kind in ("gemm", "conv"):
            return np.atleast_1d(self.in_scale * np.asarray(self.w_scale, dtype=np.float64) / self.out_scale)
        return np.atleast_1d(self.in_scale / self.out_scale)


@dataclass(frozen=True, eq=False)
class QDQModel:
    """A QDQ model: integer layers, the input quantizer and the output dequantizer."""

    layers: tuple[QDQLayer, ...]
    input_name: str
    input_shape: tuple
    in_scale: float
    in_zp: int
    in_signed: bool
    notes: tuple[str, ...] = ()

    def quantize_input(self, x: Any) -> np.ndarray:
        """ONNX QuantizeLinear: ``clamp(rint(float32(x) / float32(s)) + z)`` (round half to even), int64."""
        arr = as_float_array(x, "x", where="QDQModel.quantize_input", error=ONNXError)
        lo, hi = (-128, 127) if self.in_signed else (0, 255)
        q = np.rint(arr.astype(np.float32) / np.float32(self.in_scale)).astype(np.int64) + self.in_zp
        return np.clip(q, lo, hi)

    @property
    def out_scale(self) -> float:
        return self.layers[-1].out_scale

    @property
    def out_zp(self) -> int:
        return self.layers[-1].out_zp


def hwc_permutation(shape: tuple[int, ...]) -> np.ndarray:
    """Indices ``perm`` with ``hwc_flat = chw_flat[perm]`` for a per-sample ``(C, H, W)`` shape (identity for 1-D).

    Example:
        >>> hwc_permutation((2, 1, 2)).tolist()
        [0, 2, 1, 3]
    """
    n = int(np.prod(shape))
    if len(shape) < 2:
        return np.arange(n)
    return np.arange(n).reshape(shape).transpose(tuple(range(1, len(shape))) + (0,)).ravel()
