r"""ONNX models on SpiNNaker2's MLA: float Gemm (+ ReLU) chains to an :class:`~pondlib.devices.spinnaker2.dnn.MLP`,
QDQ models to power-of-two shift layers.

* :func:`to_spinnaker2`: ``gemm`` (+ ``relu``) chains -> :class:`~pondlib.devices.spinnaker2.dnn.MLP`
  (quantized by ``dnn_mapper`` with calibration data).
* :func:`qdq_to_spinnaker2`: one power-of-two shift per layer, ``shift = round(-log2 M)``, bias
  ``b + 2^(shift-1)``; symmetric int8 everywhere (zero points 0); a stand-alone ReLU requantizer is fused
  into the preceding Gemm (``M = s_x s_w / s_relu``: one rounding instead of ORT's two, noted). Report:
  ``|2^-shift - M| / M`` (up to 41 % for arbitrary scales: a power-of-two scale calibration is exact).
  The image also stores the QDQ input scale (``report["input_scale"]``, for ``pond simulate --quantize``).
  Nothing is re-quantized to hide the error: on the digits MLP (``tests/interop``) ORT's own scales give
  94.18 % vs ORT's 94.41 %; calibrating with power-of-two requantization scales (ORT
  ``TensorQuantOverrides``: input scale 2^k, each Gemm output scale ``s_x s_w 2^k``; see
  ``tests/interop/qdq_models.pow2_overrides``) makes every shift exact: 94.41 % on both, outputs equal
  up to 1 LSB at exact ties (ORT rounds half to even, the MLA half up).

Example:
    >>> from pondlib.graph.dnn import FloatLayer, FloatModel
    >>> fc = FloatLayer("fc", "gemm", (-1,), {"weight": np.ones((3, 2)), "bias": None}, (2,))
    >>> mlp = to_spinnaker2(FloatModel((fc,), "x", (3,)))
    >>> mlp.sizes, mlp.layers[0].relu
    ((3, 2), False)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pondlib.devices.core.dnn import check_chain, refuse
from pondlib.devices.spinnaker2.dnn import MLP, DenseLayer, DNNConfig, DNNLayerConfig, max_tile_columns
from pondlib.devices.spinnaker2.limits import get_limits
from pondlib.errors import ONNXError
from pondlib.graph.dnn import FloatModel, QDQLayer, QDQModel
from pondlib.validate import check_type

__all__ = ["to_spinnaker2", "qdq_to_spinnaker2", "pow2_error", "check_symmetric"]


def pow2_error(m: float) -> tuple[int, float]:
    """``(shift, rel_err)``: the power of two ``2^-shift`` nearest to ``m`` in log scale and ``|2^-shift - m| / m``.

    Example:
        >>> pow2_error(0.3)   # 0.3 ~ 2^-2: shift 2, relative error |0.25 - 0.3| / 0.3
        (2, 0.16666666666666663)
    """
    shift = int(round(-math.log2(m)))
    return shift, abs(2.0**-shift - m) / m


#: What this chip's DNN path runs (the limit of a refusal).
_SUPPORTED = "gemm (+ relu), flatten of the input"


def _refuse(layer: Any, why: str) -> Exception:
    return refuse(layer, "SpiNNaker2", why, _SUPPORTED)


def to_spinnaker2(model: FloatModel) -> Any:
    """A SpiNNaker2 :class:`~pondlib.devices.spinnaker2.dnn.MLP` (Gemm layers, each optionally followed by
    ReLU; a Flatten of the input is allowed)."""
    check_type(model, "model", FloatModel, where="to_spinnaker2", error=ONNXError, fix="import with load_onnx")
    check_chain(model, "SpiNNaker2", _SUPPORTED)
    dense: list = []
    for i, layer in enumerate(model.layers):
        if layer.op == "gemm":
            dense.append([layer, False])
        elif layer.op == "relu" and dense and not dense[-1][1] and model.layers[i - 1].op == "gemm":
            dense[-1][1] = True
        elif layer.op == "reshape" and not dense and len(layer.out_shape) == 1:
            continue
        else:
            raise _refuse(layer, "(the MLA path runs Gemm + ReLU chains)")
    if not dense:
        raise ONNXError("layers", value="no Gemm", limit=">= 1 Gemm", where="to_spinnaker2", fix="pass an MLP")
    return MLP(tuple(DenseLayer(ly.params["weight"], ly.params.get("bias"), relu, ly.name) for ly, relu in dense))


def check_symmetric(model: QDQModel, layer: QDQLayer) -> None:
    """Refuse a layer that is not symmetric int8 (zero points 0, signed), which SpiNNaker2's power-of-two
    integer path needs; :class:`~pondlib.errors.ONNXError` naming the zero points and the quantizer option."""
    if layer.in_zp or layer.out_zp or not layer.out_signed or not model.in_signed:
        raise ONNXError(
            "zero point / type",
            value=f"in {layer.in_zp}, out {layer.out_zp}, signed {layer.out_signed}",
            limit="symmetric int8 (zero point 0)",
            where=f"layer {layer.name!r}",
            fix="quantize_static(..., activation_type=QInt8, extra_options={'ActivationSymmetric': True})",
        )


def qdq_to_spinnaker2(model: QDQModel, *, acc_bits: int | None = None) -> tuple[Any, list[dict]]:
    """A SpiNNaker2 :class:`~pondlib.devices.spinnaker2.dnn.DNNConfig` (power-of-two shifts) and one report
    dict per layer (``name``, ``M``, ``shift``, ``rel_error``). Input: ``model.quantize_input(x)``."""
    check_type(model, "model", QDQModel, where="qdq_to_spinnaker2", error=ONNXError, fix="import with load_qdq")
    lim = get_limits(None)
    acc_bits = lim.acc_bits if acc_bits is None else int(acc_bits)
    groups: list[list[QDQLayer]] = []
    for ly in model.layers:
        check_symmetric(model, ly)
        if ly.kind == "gemm":
            groups.append([ly])
        elif ly.kind == "requant" and groups and len(groups[-1]) == 1:
            groups[-1].append(ly)
        elif ly.kind == "reshape" and not groups and len(ly.in_shape) == 1:
            continue
        else:
            raise ONNXError(
                "layer not supported on SpiNNaker2",
                value=ly.kind,
                limit="Gemm (+ ReLU) chains",
                where=f"layer {ly.name!r}",
                fix="map it to a device whose DNN path has this layer, or change the model",
            )
    layers, report = [], []
    x_max = 127
    for grp in groups:
        g0 = grp[0]
        s_out = grp[-1].out_scale
        M = np.atleast_1d(g0.in_scale * np.asarray(g0.w_scale, dtype=np.float64) / s_out)
        m_ref = float(np.exp(np.mean(np.log(M))))
        shift, _ = pow2_error(m_ref)
        rel = float(np.max(np.abs(2.0**-shift - M) / M))
        if shift < 0 or shift >= acc_bits:
            raise ONNXError(
                "requantization scale",
                value=float(M.max()) if shift < 0 else f"{float(M.min()):.3g} (a right shift by {shift})",
                limit=f"in [2^-{acc_bits - 1}, 1.41] (a right shift by 0 to {acc_bits - 1} bits)",
                where=f"layer {g0.name!r}",
                fix="recalibrate: the output scale is finer than input x weight",
            )
        if len(grp) > 1:
            report.append(dict(note=f"{grp[1].name} fused into {g0.name}: one rounding instead of two"))
        relu = g0.relu or len(grp) > 1
        bias = g0.bias + ((1 << (shift - 1)) if shift > 0 else 0)
        K, N = g0.weight.shape
        c_max = max(1, max_tile_columns(K, lim))
        n_w = max(1, math.ceil(N / c_max))
        edges = [round(j * N / n_w) for j in range(n_w + 1)]
        tiles = tuple((edges[j], edges[j + 1]) for j in range(n_w))
        bound = int(np.max(x_max * np.abs(g0.weight).sum(axis=0) + np.abs(bias)))
        worst = int(K * 128 * int(np.max(np.abs(g0.weight))) + int(np.max(np.abs(bias))))
        layers.append(
            DNNLayerConfig(
                g0.name,
                g0.weight.astype(np.int64),
                bias.astype(np.int64),
                int(shift),
                bool(relu),
                tiles,
                int(round(-math.log2(g0.in_scale))),
                int(round(-math.log2(float(np.max(g0.w_scale))))),
                int(round(-math.log2(s_out))),
                bound,
                worst,
            )
        )
        report.append(dict(name=g0.name, M=M, shift=int(shift), rel_error=rel))
    cfg = DNNConfig(
        tuple(layers),
        int(round(-math.log2(model.in_scale))),
        acc_bits,
        "error",
        lim.name,
        {
            "qdq": [{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in r.items()} for r in report],
            "notes": list(model.notes),
            "input_scale": float(model.in_scale),
        },
    )
    return cfg, [r for r in report if "name" in r]
