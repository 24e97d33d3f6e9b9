r"""ORT-quantized (QDQ) CNNs on the graph path: ``conv``/``gemm`` (+ ReLU) and reshapes as power-of-two ops.

As :func:`~pondlib.devices.spinnaker2.onnx.qdq_to_spinnaker2` does for Gemm chains: each integer layer keeps ORT's
int8 weights and int32 bias; its requantization scale :math:`M = s_x s_w / s_y` (per channel: their geometric
mean) becomes one right shift ``s = round(-log2 M)``, the bias ``b + 2^(s-1)``; a stand-alone ReLU requantizer
after a conv/gemm is fused into it (``s_y`` its output scale: one rounding instead of ORT's two, noted). The
report per layer holds ``M``, the shift and ``max |2^-s - M| / M`` (0 when ORT was calibrated with power-of-two
requantization scales; then the outputs equal ORT's up to 1 LSB at exact ties: ORT rounds half to even, the
MLA half up). Symmetric int8 only (zero points 0).

Example:
    >>> from pondlib.graph.dnn import QDQLayer, QDQModel
    >>> fc = QDQLayer("fc", "gemm", 0.5, 0, 0.25, 0, True, (2,), (1,), weight=np.array([[2], [-1]]),
    ...               bias=np.array([0]), w_scale=0.25)
    >>> cfg, rep = qdq_to_graph(QDQModel((fc,), "x", (2,), 0.5, 0, True))
    >>> cfg.ops[0].shift, rep[0]["rel_error"]
    (1, 0.0)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pondlib.devices.spinnaker2.dnn_graph import GraphConfig
from pondlib.devices.spinnaker2.graph_ops import GraphOp
from pondlib.devices.spinnaker2.graph_tiling import tile_op
from pondlib.devices.spinnaker2.limits import get_limits
from pondlib.devices.spinnaker2.onnx import check_symmetric
from pondlib.errors import ONNXError
from pondlib.graph.dnn import QDQModel
from pondlib.validate import check_type

__all__ = ["qdq_to_graph"]


def _frac(scale: float) -> int:
    return int(round(-math.log2(scale)))


def _groups(model: QDQModel) -> list[list[Any]]:
    groups: list[list[Any]] = []
    for ly in model.layers:
        check_symmetric(model, ly)
        if ly.kind in ("gemm", "conv", "reshape"):
            groups.append([ly])
        elif ly.kind == "requant" and groups and groups[-1][0].kind in ("gemm", "conv") and len(groups[-1]) == 1:
            groups[-1].append(ly)
        else:
            raise ONNXError(
                "layer not supported on the SpiNNaker2 graph path from QDQ",
                value=ly.kind,
                limit="conv/gemm (+ ReLU) and reshapes",
                where=f"layer {ly.name!r}",
                fix="map the float model with graph_mapper instead",
            )
    return groups


def _layer_op(grp: list[Any], index: int, f_in: int, report: list[dict]) -> GraphOp:
    g0 = grp[0]
    if g0.kind == "reshape":
        return GraphOp(g0.name, "reshape", (index - 1,), tuple(g0.out_shape), (f_in,), f_in)
    s_out = grp[-1].out_scale
    M = np.atleast_1d(g0.in_scale * np.asarray(g0.w_scale, dtype=np.float64) / s_out)
    shift = int(round(-math.log2(float(np.exp(np.mean(np.log(M)))))))
    if shift < 0 or shift > 62:
        raise ONNXError(
            "requantization scale",
            value=float(M.max()),
            limit="2^-62 .. 1.41 (a right shift)",
            where=f"layer {g0.name!r}",
            fix="recalibrate: the output scale is finer than input x weight",
        )
    report.append(
        {"name": g0.name, "M": M.tolist(), "shift": shift, "rel_error": float(np.max(np.abs(2.0**-shift - M) / M))}
    )
    w = np.asarray(g0.weight, dtype=np.int64)
    bias = np.zeros(w.shape[1] if g0.kind == "gemm" else w.shape[0], np.int64) if g0.bias is None else g0.bias
    bias = np.asarray(bias, dtype=np.int64) + ((1 << (shift - 1)) if shift > 0 else 0)
    attrs = {}
    if g0.kind == "conv":
        c = g0.conv
        attrs = {
            "strides": tuple(c["strides"]),
            "pads": tuple(c["pads"]),
            "dilations": tuple(c["dilations"]),
            "groups": (int(c.get("groups", 1)),),
        }
    return GraphOp(
        g0.name,
        g0.kind,
        (index - 1,),
        tuple(g0.out_shape),
        (f_in,),
        _frac(s_out),
        shift,
        bool(g0.relu or len(grp) > 1),
        w,
        bias,
        attrs,
    )


def qdq_to_graph(model: QDQModel, limits: Any = None, *, acc_bits: int | None = None) -> tuple[GraphConfig, list[dict]]:
    """A :class:`~pondlib.devices.spinnaker2.dnn_graph.GraphConfig` of a QDQ CNN and one report dict per
    requantizing layer (``name``, ``M``, ``shift``, ``rel_error``). Input: ``model.quantize_input(x)``.

    Raises:
        ONNXError: zero points, unsigned tensors, layers other than conv/gemm (+ ReLU) and reshapes, or a
            requantization scale no right shift reaches.
    """
    check_type(model, "model", QDQModel, where="qdq_to_graph", error=ONNXError, fix="import with load_qdq")
    lim = get_limits(limits)
    report: list[dict] = []
    ops: list[GraphOp] = []
    f_in = _frac(model.in_scale)
    for grp in _groups(model):
        op = _layer_op(grp, len(ops), f_in, report)
        in_shape = tuple(model.input_shape) if not ops else ops[-1].out_shape
        tiles, split, bad = tile_op(op, [in_shape], lim.dnn_worker_bytes, lim.usable_pes_per_chip - 1)
        if bad:
            raise ONNXError(
                "tile", value=bad[0].value, limit=bad[0].limit, where=f"layer {op.name!r}", fix=bad[0].remedy
            )
        op = GraphOp(**{**op.__dict__, "tiles": tiles, "split": split})
        ops.append(op)
        f_in = op.out_frac
    acc = lim.acc_bits if acc_bits is None else int(acc_bits)
    rep = {"qdq": report, "notes": list(model.notes), "input_scale": float(model.in_scale)}
    cfg = GraphConfig(tuple(ops), tuple(model.input_shape), _frac(model.in_scale), acc, "error", 1, (), lim.name, rep)
    return cfg, report
