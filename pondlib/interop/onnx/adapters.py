r"""Float ONNX layers -> the float layer descriptions of the device mappers.

* :func:`to_siracusa`: ``gemm`` -> ``GemmLayer``, 2-D ``conv`` -> ``Conv2dLayer`` (NHWC: weight
  ``(O, C/g, kh, kw) -> (kh, kw, C/g, O)``; symmetric equal padding, equal strides, no dilation),
  ``relu`` -> ``ReLU``; a ``reshape`` (Flatten) after a convolution keeps Siracusa's HWC order and
  permutes the next Gemm's weight rows instead. Returns the layers and ``perm``: the Siracusa input is
  ``x.reshape(B, -1)[:, perm]`` (channels-last for a CNN).
* :func:`to_spinnaker2`: ``gemm`` (+ ``relu``) chains -> :class:`~pondlib.devices.spinnaker2.dnn.MLP`.

Anything else (pooling, LeakyReLU, residual adds, 1-D/3-D or dilated convolutions) is an
:class:`~pondlib.errors.ONNXError` naming the layer: :func:`~pondlib.interop.onnx.run_float` still
evaluates it.

Example:
    >>> import numpy as np
    >>> from pondlib.interop.onnx.layers import FloatLayer, FloatModel
    >>> fc = FloatLayer("fc", "gemm", (-1,), {"weight": np.ones((3, 2)), "bias": None}, (2,))
    >>> mlp = to_spinnaker2(FloatModel((fc,), "x", (3,)))
    >>> mlp.sizes, mlp.layers[0].relu
    ((3, 2), False)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pondlib.errors import ONNXError
from pondlib.interop.onnx.layers import FloatModel
from pondlib.validate import check_type

__all__ = ["to_siracusa", "to_spinnaker2", "hwc_permutation"]


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


def _refuse(layer: Any, device: str, why: str) -> ONNXError:
    return ONNXError(
        f"layer not supported on {device}",
        value=f"{layer.op} {why}".strip(),
        limit="gemm, 2-D conv (Siracusa), relu, flatten",
        where=f"layer {layer.name!r}",
        fix="run it with run_float, or change the model",
    )


def _chain(model: FloatModel, device: str) -> None:
    for i, layer in enumerate(model.layers):
        if layer.inputs != (i - 1,):
            raise _refuse(layer, device, "with a skip connection (inputs are not the previous layer)")


def to_siracusa(model: FloatModel) -> tuple[list, np.ndarray]:
    """The Siracusa mapper's float layers for ``model`` and the input permutation (module docstring)."""
    from pondlib.devices.siracusa.mapper import Conv2dLayer, GemmLayer, ReLU

    check_type(model, "model", FloatModel, where="to_siracusa", error=ONNXError, fix="import with load_onnx")
    _chain(model, "Siracusa")
    out: list = []
    shape = tuple(model.input_shape)
    perm = hwc_permutation(shape)
    layout = perm.copy()  # Siracusa's flat index i holds ONNX flat index layout[i]
    for layer in model.layers:
        p = layer.params
        if layer.op == "gemm":
            out.append(GemmLayer(layer.name, p["weight"][layout], p.get("bias")))  # rows in Siracusa's order
            layout = np.arange(layer.out_shape[0])
        elif layer.op == "conv":
            w = p["weight"]
            ok = w.ndim == 4 and len(set(p["pads"])) == 1 and len(set(p["strides"])) == 1
            if not ok or p["dilations"] != [1, 1]:
                raise _refuse(
                    layer, "Siracusa", "with 1-D/3-D kernels, asymmetric padding, unequal strides or dilation"
                )
            c, h, wd = shape
            out.append(
                Conv2dLayer(
                    layer.name,
                    w.transpose(2, 3, 1, 0),
                    (h, wd, c),
                    p.get("bias"),
                    p["strides"][0],
                    p["pads"][0],
                    p["groups"],
                )
            )
            layout = hwc_permutation(layer.out_shape)
        elif layer.op == "relu":
            out.append(ReLU(layer.name))
        elif layer.op == "reshape" and len(layer.out_shape) == 1:
            pass  # a flatten: Siracusa data are flat already (layout unchanged)
        else:
            raise _refuse(layer, "Siracusa", "")
        shape = layer.out_shape
    return out, perm


def to_spinnaker2(model: FloatModel) -> Any:
    """A SpiNNaker2 :class:`~pondlib.devices.spinnaker2.dnn.MLP` (Gemm layers, each optionally followed by
    ReLU; a Flatten of the input is allowed)."""
    from pondlib.devices.spinnaker2.dnn import MLP, DenseLayer

    check_type(model, "model", FloatModel, where="to_spinnaker2", error=ONNXError, fix="import with load_onnx")
    _chain(model, "SpiNNaker2")
    dense: list = []
    for i, layer in enumerate(model.layers):
        if layer.op == "gemm":
            dense.append([layer, False])
        elif layer.op == "relu" and dense and not dense[-1][1] and model.layers[i - 1].op == "gemm":
            dense[-1][1] = True
        elif layer.op == "reshape" and not dense and len(layer.out_shape) == 1:
            continue
        else:
            raise _refuse(layer, "SpiNNaker2", "(the MLA path runs Gemm + ReLU chains)")
    if not dense:
        raise ONNXError("layers", value="no Gemm", limit=">= 1 Gemm", where="to_spinnaker2", fix="pass an MLP")
    return MLP(tuple(DenseLayer(ly.params["weight"], ly.params.get("bias"), relu, ly.name) for ly, relu in dense))
