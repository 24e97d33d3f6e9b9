r"""A :class:`~pondlib.explore.Workload` from a float DNN (an ONNX model imported as a ``FloatModel``).

:func:`workload_from_dnn` reads the layers of a :class:`pondlib.graph.dnn.FloatModel` (what
:func:`pondlib.interop.onnx.load_onnx` returns) as STEMS describes a workload: no layer keeps a state (an
ANN), every activation is ``activation_bits`` wide (so every op is a MAC), and the ``T`` "time steps"
are inputs run one after the other, whose batching reuses the weights as time batching does.

==============================  ==================================================================
ONNX layer (``FloatLayer.op``)  layer
==============================  ==================================================================
``conv``                        ``conv`` (``K = O``, ``C``, kernel, strides, groups; a 1-d one is a row)
``gemm``                        ``linear`` (``K`` outputs, ``C`` inputs: the flattened producer)
``maxpool``, ``avgpool``        ``pool`` (window and strides)
``add``                         ``add``
``relu``, ``leaky_relu``,       nothing: folded into the layer before them (an activation is applied
``reshape``, ``affine``         as the output is written; a reshape is a view; an affine folds)
==============================  ==================================================================

Blocks: a new block starts at every weighted layer after the first (``blocks`` overrides, one id per
emitted layer).

Example:
    >>> import numpy as np
    >>> from pondlib.graph.dnn import FloatLayer, FloatModel
    >>> conv = FloatLayer("c", "conv", (-1,), {"weight": np.zeros((4, 1, 3, 3)), "strides": [1, 1],
    ...                   "groups": 1}, (4, 6, 6))
    >>> fc = FloatLayer("fc", "gemm", (0,), {"weight": np.zeros((144, 10))}, (10,))
    >>> w = workload_from_dnn(FloatModel((conv, fc), "x", (1, 8, 8)), 4)
    >>> [(x.kind, x.k, x.c, x.oy, x.ox, x.block, x.stateful) for x in w.layers]
    [('conv', 4, 1, 6, 6, 0, False), ('linear', 10, 144, 1, 1, 1, False)]
    >>> w.total_weight_bits                  # (4*9 + 144*10) * 8
    11808
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pondlib.errors import GraphError
from pondlib.explore._checks import Problems
from pondlib.explore.workload import MAX_SIZE, NETWORK_INPUT, Workload
from pondlib.graph.dnn import FloatModel

__all__ = ["workload_from_dnn"]

_PASS = ("relu", "leaky_relu", "reshape", "affine")


def _spatial(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """``(K, OY, OX)`` of a per-sample shape ``(C,)``, ``(C, L)`` or ``(C, H, W)``."""
    if len(shape) == 1:
        return int(shape[0]), 1, 1
    if len(shape) == 2:
        return int(shape[0]), 1, int(shape[1])
    return int(shape[0]), int(shape[-2]), int(shape[-1])


def _row(ly: Any, src: tuple[int, ...]) -> dict[str, Any]:
    """The :meth:`Workload.from_table` row of one weighted or pooling layer."""
    k, oy, ox = _spatial(ly.out_shape)
    p = ly.params
    row: dict[str, Any] = {"name": ly.name, "inputs": src}
    if ly.op == "gemm":
        row.update(kind="linear", k=int(p["weight"].shape[1]), c=int(p["weight"].shape[0]))
    elif ly.op == "conv":
        w = p["weight"]
        kern = list(w.shape[2:])
        fy, fx = (1, kern[0]) if len(kern) == 1 else (kern[0], kern[1])
        st = list(p.get("strides", [1] * len(kern)))
        sy, sx = (1, st[0]) if len(st) == 1 else (st[0], st[1])
        groups = int(p.get("groups", 1))
        row.update(kind="conv", k=k, c=int(w.shape[1]) * groups, oy=oy, ox=ox, fy=fy, fx=fx, sy=sy, sx=sx)
        row["groups"] = groups
    elif ly.op in ("maxpool", "avgpool"):
        kern = list(p["kernel"])
        fy, fx = (1, kern[0]) if len(kern) == 1 else (kern[0], kern[1])
        st = list(p.get("strides", kern))
        sy, sx = (1, st[0]) if len(st) == 1 else (st[0], st[1])
        row.update(kind="pool", k=k, c=k, oy=oy, ox=ox, fy=fy, fx=fx, sy=sy, sx=sx)
    else:  # add
        row.update(kind="add", k=k, c=k, oy=oy, ox=ox)
    return row


def workload_from_dnn(
    model: FloatModel,
    time_steps: int = 1,
    *,
    blocks: Sequence[int] | None = None,
    weight_bits: int = 8,
    activation_bits: int = 8,
    name: str | None = None,
) -> Workload:
    """The workload of a float DNN (module docstring).

    Args:
        model: a :class:`pondlib.graph.dnn.FloatModel` (e.g. ``pondlib.interop.onnx.load_onnx(path)``).
        time_steps: ``T`` inputs per "inference" (1: one input).
        blocks: one block id per emitted layer; default: a new block at each weighted layer after the first.
        weight_bits, activation_bits: bit widths of the weights and of every activation (input included).
        name: the workload's name (default ``"onnx"``).

    Raises:
        ConfigError: bad bit widths, ``time_steps`` or ``blocks``. GraphError: not a ``FloatModel``, or a
            layer kind this reader does not know (naming it).
    """
    if not isinstance(model, FloatModel):
        raise GraphError(
            "workload_from_dnn input", value=f"a {type(model).__name__}", limit="a pondlib.graph.dnn.FloatModel"
        )
    p = Problems("workload_from_dnn")
    wb = p.integer(weight_bits, "weight_bits", lo=1, hi=64)
    ab = p.integer(activation_bits, "activation_bits", lo=1, hi=64)
    t = p.integer(time_steps, "time_steps", lo=1, hi=MAX_SIZE)
    p.raise_if_any("pass positive whole bit widths (<= 64) and time steps")
    alias: dict[int, int] = {NETWORK_INPUT: NETWORK_INPUT}
    rows: list[dict[str, Any]] = []
    block, has_weights = 0, False
    for i, ly in enumerate(model.layers):
        src = tuple(alias[j] for j in ly.inputs)
        if ly.op in _PASS:
            alias[i] = src[0]
            continue
        if ly.op not in ("gemm", "conv", "maxpool", "avgpool", "add"):
            raise GraphError(f"layer {ly.name!r}", value=ly.op, limit="gemm, conv, pool, add or an activation")
        row = _row(ly, src)
        if row["kind"] in ("linear", "conv"):
            if has_weights:
                block += 1
            has_weights = True
        row.update(block=block, weight_bits=wb, input_bits=ab, output_bits=ab, stateful=False)
        alias[i] = len(rows)
        rows.append(row)
    if not rows:
        raise GraphError("workload_from_dnn", value="no layer", limit="at least one gemm, conv, pool or add")
    if blocks is not None:
        bl = list(blocks) if isinstance(blocks, Sequence) and not isinstance(blocks, str) else None
        if bl is None or len(bl) != len(rows):
            p.add(f"blocks: got {blocks!r}, expected {len(rows)} block ids (one per emitted layer)")
            p.raise_if_any("pass one block id per layer")
        for row, b in zip(rows, bl):
            row["block"] = b
    return Workload.from_table(rows, t, "onnx" if name is None else name)
