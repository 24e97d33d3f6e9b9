r"""ONNX models on Siracusa: float layer graphs to the mapper's float layers, QDQ models to integer layers.

* :func:`to_siracusa`: ``gemm`` -> ``GemmLayer``, 2-D ``conv`` -> ``Conv2dLayer`` (NHWC: weight
  ``(O, C/g, kh, kw) -> (kh, kw, C/g, O)``; symmetric equal padding, equal strides, no dilation),
  ``relu`` -> ``ReLU``; a ``reshape`` (Flatten) after a convolution keeps Siracusa's HWC order and
  permutes the next Gemm's weight rows instead. Returns the layers and ``perm``: the Siracusa input is
  ``x.reshape(B, -1)[:, perm]`` (channels-last for a CNN).
* :func:`qdq_to_siracusa`: RequantShift ``mul / 2^s ~ M`` with the largest int32-safe shift
  (``requant_from_scale``), ``add = z_y 2^s``, input zero point folded into the bias
  (``b - z_x sum_k W``); a ReLU clamps at ``z_y``, representable when that is the range's floor
  (int8 with ``z_y = 0`` -> unsigned 7 bits, uint8 with ``z_y = 0``). Report: ``|mul 2^-s - M| / M``.

Anything else (pooling, LeakyReLU, residual adds, 1-D/3-D or dilated convolutions) is an
:class:`~pondlib.errors.ONNXError` naming the layer: :func:`pondlib.interop.onnx.run_float` still
evaluates it.

Example:
    >>> from pondlib.graph.dnn import FloatLayer, FloatModel
    >>> fc = FloatLayer("fc", "gemm", (-1,), {"weight": np.ones((3, 2)), "bias": None}, (2,))
    >>> layers, perm = to_siracusa(FloatModel((fc,), "x", (3,)))
    >>> [type(ly).__name__ for ly in layers], perm.tolist()
    (['GemmLayer'], [0, 1, 2])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pondlib.devices.core.dnn import check_chain, refuse
from pondlib.devices.siracusa.config import SiracusaConfig
from pondlib.devices.siracusa.mapper import Conv2dLayer, GemmLayer, ReLU, requant_from_scale
from pondlib.devices.siracusa.specification import QConv2d, QGemm, QRequant, RequantShift
from pondlib.errors import ONNXError
from pondlib.graph.dnn import FloatModel, QDQLayer, QDQModel, hwc_permutation
from pondlib.validate import check_elements, check_type

__all__ = ["to_siracusa", "qdq_to_siracusa"]


#: What this chip's DNN path runs (the limit of a refusal).
_SUPPORTED = "gemm, 2-D conv, relu, flatten"


def _refuse(layer: Any, why: str) -> Exception:
    return refuse(layer, "Siracusa", why, _SUPPORTED)


def to_siracusa(model: FloatModel) -> tuple[list, np.ndarray]:
    """The Siracusa mapper's float layers for ``model`` and the input permutation (module docstring)."""
    check_type(model, "model", FloatModel, where="to_siracusa", error=ONNXError, fix="import with load_onnx")
    check_chain(model, "Siracusa", _SUPPORTED)
    check_elements(tuple(model.input_shape), "input", where="to_siracusa", error=ONNXError)  # before any allocation
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
                raise _refuse(layer, "with 1-D/3-D kernels, asymmetric padding, unequal strides or dilation")
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
            raise _refuse(layer, "")
        shape = layer.out_shape
    return out, perm


def _range(signed: bool, relu: bool, zp: int, where: QDQLayer) -> tuple[int, bool]:
    """(out_bits, signed) of a RequantShift whose clamp equals ONNX's (with a ReLU clamping at zp)."""
    if not relu:
        if signed:
            return 8, True
        return 8, False
    if zp == 0:
        return (7, False) if signed else (8, False)
    raise ONNXError(
        "ReLU clamp",
        value=f"zero point {zp}",
        limit="0 (the ReLU floor must be the range's floor)",
        where=f"layer {where.name!r}",
        fix="quantize activations symmetric int8 or uint8 with zero point 0 after ReLUs",
    )


def qdq_to_siracusa(model: QDQModel) -> tuple[Any, list[dict]]:
    """A :class:`~pondlib.devices.siracusa.config.SiracusaConfig` and one report dict per requantizer
    (``name``, ``M``, ``mul``, ``shift``, ``rel_error``). The Siracusa input is
    ``model.quantize_input(x).reshape(B, -1)[:, hwc_permutation(model.input_shape)]``."""
    check_type(model, "model", QDQModel, where="qdq_to_siracusa", error=ONNXError, fix="import with load_qdq")
    out: list = []
    report: list[dict] = []
    layout = hwc_permutation(model.input_shape)
    lo, hi = (-128, 127) if model.in_signed else (0, 255)
    for ly in model.layers:
        if ly.kind == "reshape":
            continue
        bits, signed = _range(ly.out_signed, ly.relu, ly.out_zp, ly)
        M = ly.multiplier
        if ly.kind in ("gemm", "conv"):
            if ly.kind == "gemm":
                w = ly.weight[layout]
            else:
                c = ly.conv
                if len(set(c["pads"])) != 1 or len(set(c["strides"])) != 1 or c["dilations"] != [1, 1]:
                    raise ONNXError(
                        "conv geometry",
                        value=c,
                        limit="symmetric pads, equal strides, no dilation",
                        where=f"layer {ly.name!r}",
                        fix="change the convolution",
                    )
                w = ly.weight.transpose(2, 3, 1, 0)
            w2 = w.reshape(-1, w.shape[-1])
            bias = ly.bias - ly.in_zp * w2.sum(0) if ly.kind == "gemm" else ly.bias - ly.in_zp * w2.sum(0)
            a_, b_ = w2 * lo, w2 * hi
            acc_lo = np.minimum(a_, b_).sum(0) + bias
            acc_hi = np.maximum(a_, b_).sum(0) + bias
            rq, err = requant_from_scale(M if M.size > 1 else M[0], acc_lo, acc_hi, float(ly.out_zp), bits, signed)
            if ly.kind == "gemm":
                out.append(QGemm(ly.name, w, bias, rq))
                layout = np.arange(w.shape[1])
            else:
                C, H, W = ly.in_shape
                c = ly.conv
                out.append(QConv2d(ly.name, w, (H, W, C), bias, rq, c["strides"][0], c["pads"][0], c["groups"]))
                layout = hwc_permutation(ly.out_shape)
        else:
            rq0, err = requant_from_scale(M[0], lo - ly.in_zp, hi - ly.in_zp, float(ly.out_zp), bits, signed)
            rq = RequantShift(rq0.mul, rq0.add, rq0.div, bits, signed, in_offset=-ly.in_zp)
            out.append(QRequant(ly.name, int(np.prod(ly.out_shape)), rq))
        if np.any((np.atleast_1d(rq.mul) == 0) & (np.atleast_1d(M) > 0)):
            raise ONNXError(
                "requantization multiplier",
                value=f"M = {float(np.min(M)):.3g} rounds to mul 0 at shift {rq.shift}",
                limit=f"M >= 2^-{rq.shift + 1} (every output would be a constant)",
                where=f"layer {ly.name!r}",
                fix="recalibrate the output scale (quantize_static on representative data)",
            )
        report.append(dict(name=ly.name, M=M, mul=np.atleast_1d(rq.mul), shift=rq.shift, rel_error=float(err)))
        lo, hi = rq.out_range
    cfg = SiracusaConfig(
        layers=tuple(out),
        n_input=int(np.prod(model.input_shape)),
        input_bits=8,
        input_signed=model.in_signed,
        input_scale=model.in_scale,
        output_scale=model.out_scale,
    )
    return cfg, report
