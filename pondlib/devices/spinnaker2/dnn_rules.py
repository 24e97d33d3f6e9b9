"""The design rules of the DNN path (:func:`~pondlib.devices.spinnaker2.dnn.dnn_mapper`), one function
per check, and the facts they read.

``dnn_mapper`` quantizes every layer into a :class:`LayerPlan` (exponents, shift, biases, accumulator
bound, tiling) and the whole network into a :class:`DNNPlan`; :data:`DNN_RULE_FUNCTIONS` run on the plan
(the layer rules layer by layer, then the network's), and :data:`DNN_RULES` (rule id -> what it
requires) is built from the same functions.

Example:
    >>> DNN_RULES["shift_range"]
    'the requantization shift f_in + f_w - f_y is within 0..62'
    >>> sorted(DNN_RULES)
    ['accumulator_width', 'bias_range', 'dram_capacity', 'max_workers', 'shift_range', 'worker_sram']
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from pondlib.devices.core.rules import Rule, for_each, rule, rule_table
from pondlib.errors import Violation

__all__ = ["SHIFT_MAX", "LayerPlan", "DNNPlan", "DNN_RULE_FUNCTIONS", "DNN_RULES"]

#: Largest requantization shift (an arithmetic right shift of the 64-bit accumulator model).
SHIFT_MAX = 62


@dataclass(frozen=True, eq=False)
class LayerPlan:
    """One layer ``K -> N`` quantized and tiled.

    Exponents ``in_frac``, ``w_frac``, ``out_frac`` and ``shift = in_frac + w_frac - out_frac``;
    ``weights`` int8 (K, N) (int64); ``bias_float``: ``round(b 2^(in_frac + w_frac))`` plus the rounding
    term, as float64 (N,) before it is fitted into the bias word ``bias_bounds`` (lo, hi); ``bias`` the
    stored (clipped) integers. ``acc_bound``: the value-range bound of ``|acc|`` for inputs ``<= x_max``;
    ``acc_worst``: ``K 128 max|W_q| + max|b_q|``; ``acc_bits`` and ``overflow`` as asked. Tiling:
    ``max_columns`` per worker within ``worker_bytes``, ``asked_workers`` (None: not given), the
    ``tiles`` used and ``max_workers`` (usable PEs - 1). ``weight_error``: relative weight error.
    """

    name: str
    k: int
    n: int
    relu: bool
    in_frac: int
    w_frac: int
    out_frac: int
    shift: int
    weights: np.ndarray
    bias_float: np.ndarray
    bias_bounds: tuple[int, int]
    bias: np.ndarray
    x_max: int
    acc_bound: int
    acc_worst: int
    acc_bits: int
    overflow: str
    worker_bytes: int
    max_columns: int
    asked_workers: int | None
    tiles: tuple[tuple[int, int], ...]
    max_workers: int
    weight_error: float


@dataclass(frozen=True, eq=False)
class DNNPlan:
    """The network quantized: its layer plans, the layer names of ``workers`` that name no layer, the
    bytes of weights, biases and activations in DRAM and the DRAM's size."""

    layers: tuple[LayerPlan, ...]
    unknown_workers: tuple[Any, ...]
    total_bytes: int
    dram_bytes: int


@rule("shift_range")
def shift_range(layer: LayerPlan) -> Iterator[Violation]:
    """the requantization shift f_in + f_w - f_y is within 0..62"""
    if layer.shift > SHIFT_MAX:
        yield Violation(
            "shift_range",
            layer.name,
            f"shift {layer.shift} (input 2^{-layer.in_frac}, weights 2^{-layer.w_frac}, output 2^{-layer.out_frac})",
            f"0..{SHIFT_MAX}",
            "rescale the layer: its outputs are vanishingly small against its inputs and weights",
        )


@rule("bias_range")
def bias_range(layer: LayerPlan) -> Iterator[Violation]:
    """quantized biases fit the 32-bit bias word"""
    b, (lo, hi) = layer.bias_float, layer.bias_bounds
    if b.size and (b.min() < lo or b.max() > hi):
        yield Violation(
            "bias_range",
            layer.name,
            f"{float(np.max(np.abs(b))):.6g}",
            f"{lo}..{hi}",
            "scale the bias down (it would overflow its 32-bit word)",
        )


@rule("accumulator_width")
def accumulator_width(layer: LayerPlan) -> Iterator[Violation]:
    """value-range bound of every accumulator < 2^(acc_bits-1) (or overflow='wrap')"""
    acc_lim = 1 << (layer.acc_bits - 1)
    if layer.acc_bound >= acc_lim and layer.overflow == "error":
        yield Violation(
            "accumulator_width",
            layer.name,
            f"|acc| bound {layer.acc_bound} (inputs <= {layer.x_max})",
            f"< 2^{layer.acc_bits - 1} = {acc_lim}",
            "use overflow='wrap', a wider accumulator (acc_bits=29) or smaller weights",
        )


@rule("worker_sram")
def worker_sram(layer: LayerPlan) -> Iterator[Violation]:
    """one worker's tile (weights, bias, input, output) fits limits.dnn_worker_bytes"""
    k, n, c_max, asked = layer.k, layer.n, layer.max_columns, layer.asked_workers
    if c_max < 1:
        yield Violation(
            "worker_sram",
            layer.name,
            f"{2 * k + 5} B for one column",
            f"{layer.worker_bytes} B",
            "split the input dimension (not supported) or use a smaller layer",
        )
    elif asked is not None and math.ceil(n / asked) > c_max:
        need = math.ceil(n / asked)
        yield Violation(
            "worker_sram",
            layer.name,
            f"{need * (k + 5) + k} B per worker ({asked} workers)",
            f"{layer.worker_bytes} B",
            f"use at least {math.ceil(n / c_max)} workers",
        )


@rule("max_workers")
def max_workers(layer: LayerPlan) -> Iterator[Violation]:
    """workers of a layer <= usable PEs - 1 (one PE is the scheduler)"""
    if len(layer.tiles) > layer.max_workers:
        yield Violation(
            "max_workers",
            layer.name,
            len(layer.tiles),
            layer.max_workers,
            "a layer this large needs more PEs than the chip has",
        )


@rule("worker_sram", extends=True)
def workers_of_unknown_layers(plan: DNNPlan) -> Iterator[Violation]:
    """workers name layers of the MLP"""
    for name in plan.unknown_workers:
        yield Violation(
            "worker_sram",
            name,
            "workers for an unknown layer",
            [layer.name for layer in plan.layers],
            "name a layer of the MLP",
        )


@rule("dram_capacity")
def dram_capacity(plan: DNNPlan) -> Iterator[Violation]:
    """weights + biases + activations fit in DRAM"""
    if plan.total_bytes > plan.dram_bytes:
        yield Violation(
            "dram_capacity", "<model>", f"{plan.total_bytes} B", f"{plan.dram_bytes} B", "use a smaller model"
        )


#: The rules :func:`~pondlib.devices.spinnaker2.dnn.dnn_mapper` runs on a :class:`DNNPlan`, in order.
DNN_RULE_FUNCTIONS: tuple[Rule, ...] = (
    for_each("layers", shift_range, bias_range, accumulator_width, worker_sram, max_workers),
    workers_of_unknown_layers,
    dram_capacity,
)
#: Every rule ``dnn_mapper`` checks: rule id -> what it requires (built from the functions).
DNN_RULES: dict[str, str] = rule_table(*DNN_RULE_FUNCTIONS)
