"""What the SpiNNaker2 Device does with the DNN graph path: map an imported float model (CNNs, residual blocks,
or an MLP spread over several chips), describe it, parse the chip count, walk a saved version-2 image.

Example:
    >>> parse_chips(None), parse_chips("3"), parse_chips(2)
    (1, 3, 2)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pondlib.devices.core.device import SavedRun, dnn_saved_run
from pondlib.devices.core.inputs import dnn_input
from pondlib.devices.spinnaker2.dnn_graph import GraphConfig, graph_mapper
from pondlib.devices.spinnaker2.graph_image import run_graph_image
from pondlib.devices.spinnaker2.graph_timing import estimate_graph
from pondlib.devices.spinnaker2.limits import SpiNNaker2Limits, get_limits
from pondlib.errors import ConfigError, PondError

__all__ = ["parse_chips", "limits_for_chips", "map_float_graph", "describe_graph", "simulate_graph_image"]


def parse_chips(chips: Any) -> int:
    """The chip count of ``--chips`` / ``chips=`` (None: 1; a whole number >= 1 as int or text).

    Raises:
        ConfigError: anything else, naming the value.
    """
    if chips is None:
        return 1
    if isinstance(chips, str) and chips.strip().isdigit():
        chips = int(chips.strip())
    if isinstance(chips, (bool, np.bool_)) or not isinstance(chips, (int, np.integer)) or chips < 1:
        raise ConfigError(
            "chips", value=repr(chips), limit="a whole number >= 1", where="spinnaker2", fix="pass --chips 2"
        )
    return int(chips)


def limits_for_chips(limits: Any, chips: int) -> tuple[SpiNNaker2Limits, list[str]]:
    """The limits to map ``chips`` chips onto: a one-chip variant asked for several chips becomes the 48-chip
    board (with a note saying so); otherwise the limits as given."""
    lim = get_limits(limits)
    if chips > 1 and lim.n_chips == 1:
        board = get_limits("board")
        return board, [f"{chips} chips: mapped onto the {board.name} (pass --limits board to say so)"]
    return lim, []


def map_float_graph(model: Any, calibration: Any, limits: Any, chips: int) -> GraphConfig:
    """An imported float model through :func:`~pondlib.devices.spinnaker2.dnn_graph.graph_mapper`; the
    calibration may be flat ``(B, prod(input_shape))`` or ``(B, *input_shape)``.

    Raises:
        PondError: calibration data that is not one sample per row of the model's input size.
    """
    calib = np.asarray(calibration, dtype=np.float64)
    n_in = int(np.prod(model.input_shape))
    if calib.ndim < 1 or calib.size % max(n_in, 1) or calib.size == 0:
        raise PondError(
            "calibration shape",
            value=tuple(calib.shape),
            limit=f"(B, {n_in}) or (B, *{tuple(model.input_shape)})",
            where="spinnaker2 map_onnx",
            fix="pass one calibration sample per row",
        )
    return graph_mapper(model, calib.reshape((-1, *model.input_shape)), limits, chips=chips)


def describe_graph(cfg: GraphConfig) -> list[str]:
    """One line per op (kind, shape, chip, worker split), the transfers and the modelled latency."""
    lines = [
        f"{op.name}: {op.op} -> {op.out_shape} on chip {op.chip}, {op.split}"
        + (f", shift {op.shift}" if op.op in ("gemm", "conv", "matmul") else "")
        for op in cfg.ops
    ]
    for t in cfg.transfers:
        src = "input" if t.tensor < 0 else cfg.ops[t.tensor].name
        lines.append(f"transfer {src}: chip {t.src} -> chip {t.dst}, {t.bytes} B per sample")
    rep = estimate_graph(cfg)
    lines.append(f"modelled latency {rep.total_s * 1e6:.1f} us per inference on {cfg.chips} chip(s)")
    return lines


def simulate_graph_image(cfg: GraphConfig, data: bytes, x: Any, quantize: bool, where: str) -> SavedRun:
    """Walk a version-2 image on ``x``: ``(B, *input_shape)`` or flat ``(B, prod(input_shape))`` int8 input, or
    real numbers with ``quantize`` (``sat8(round(x 2^input_frac))``, or, for an image of a QDQ model, the
    model's input scale with float32 division as ONNX QuantizeLinear)."""
    n_in = int(np.prod(cfg.input_shape))
    scale = cfg.report.get("input_scale") if isinstance(cfg.report, dict) else None

    def quantizer(v: Any) -> Any:
        v = np.asarray(v).reshape((-1, *cfg.input_shape))
        if scale is None:
            return cfg.quantize_input(v)
        return np.clip(np.rint(v.astype(np.float32) / np.float32(scale)), -128, 127).astype(np.int64)

    arr = dnn_input(x, -128, 127, (2, len(cfg.input_shape) + 1), quantizer if quantize else None, where)
    if arr.size % n_in or arr.shape[0] == 0 or arr[0].size != n_in:
        raise PondError(
            f"input of shape {tuple(arr.shape)} for an image of input {cfg.input_shape}",
            where=where,
            fix=f"pass (B, {n_in}) or (B, *{cfg.input_shape}) input",
        )
    arr = arr.reshape((-1, *cfg.input_shape))
    y, _ = run_graph_image(data, arr)
    flat = y.reshape(len(y), -1)
    what = f"SpiNNaker2 DRAM image v2, {len(cfg.ops)} ops on {cfg.chips} chip(s), {cfg.input_shape} -> {y.shape[1:]}"
    return dnn_saved_run(what, arr.reshape(len(arr), -1), flat, "spinnaker2")
