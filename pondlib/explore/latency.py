r"""Latency of a schedule in cycles, as ZigZag estimates a node and Stream schedules one core.

Rules and their sources (our own words; the code of ``KULeuven-MICAS/zigzag`` and ``KULeuven-MICAS/stream``
was read, not copied):

1. **Compute cycles** (ZigZag's ideal cycles: the temporal loop count once the spatial unrolling of the PE
   array is taken out; ``zigzag``'s latency model, paper "ZigZag", TC 2021 Sec. 4). On an output-stationary
   array of ``pe_k x pe_c x pe_oy`` (STEMS Sec. 5.1: 32 output channels x a reduction of 2 x 16 output rows),
   one step of a conv or linear layer takes

   .. math:: C = \lceil K / p_k \rceil \lceil (C/g) / p_c \rceil \lceil OY / p_{oy} \rceil \, OX \, FY \, FX
             + \lceil R / (p_k p_c) \rceil

   cycles (``R`` recurrent synapses; a linear layer has ``OY = OX = FY = FX = 1``); an unrolled dimension
   smaller than the array leaves PEs idle (``K = 64`` fills it, ``OY = 8`` half of the rows). *Assumed*
   (STEMS charges no energy for them and states no cycles): an add, a pool or a lone neuron layer runs on
   the same array, ``ceil(K / p_k) ceil(OY / p_oy) OX ceil(n / p_c)`` cycles per step with ``n`` its inputs
   (add), window (pool) or 1 (neuron).
2. **Memory-bound nodes** (ZigZag's stall model: a memory whose required transfer rate exceeds its
   bandwidth stretches the node; double-buffered transfers overlap compute): a layer's cycles are the
   largest of its compute cycles, the bits it moves through the shared memory (weight and input buffer
   fills, state moves, output writes) over the shared memory's bandwidth, its PE operand reads over the
   inner buffers' bandwidths, and the DRAM bits it *streams* (operands its node could not hold, which
   STEMS puts in DRAM "during cost estimation", Sec. 4.2.3) over the DRAM bandwidth.
3. **Fetches before a node** (Stream's ``schedule_graph``: a node starts once the tensors it lacks have
   crossed the off-chip link and the tensors evicted to make room have been written back; a single core is
   idle meanwhile, and nothing is prefetched): every other DRAM bit (states read at a chunk's start and
   written back when evicted, weights fetched once per node, spilled tensors written and read back, the
   network input) adds ``bits / bw_DRAM`` cycles, serialized with compute. ``bw_DRAM`` is 64 bit/cycle
   on STEMS's core (``docs/EXPLORE.md``).

A layer's latency over ``T`` steps is ``max(compute, on-chip, streamed) + fetched`` (rules 2 and 3); the
schedule's latency is their sum (one core runs one node at a time). Energy-delay product: ``E x cycles``
(pJ x cycles).

Example:
    >>> from pondlib.explore import Layer, meta_prototype
    >>> hw = meta_prototype("1MB")
    >>> conv = Layer("c", "conv", 64, 64, 128, 128, 3, 3)        # SEW-ResNet-18's first 3x3 layer
    >>> compute_cycles_per_step(conv, hw)                      # 2 x 32 x 8 x 128 x 9
    589824
    >>> compute_cycles_per_step(Layer("fc", "linear", 10, 64), hw)   # ceil(10/32) x ceil(64/2)
    32
"""

from __future__ import annotations

import math

import numpy as np

from pondlib.errors import ConfigError
from pondlib.explore.hardware import Hardware
from pondlib.explore.workload import Layer, Workload
from pondlib.validate import check_type

__all__ = ["compute_cycles_per_step"]


def compute_cycles_per_step(layer: Layer, hardware: Hardware) -> int:
    """Cycles of one step of ``layer`` on ``hardware``'s PE array (module docstring, rule 1).

    Args:
        layer: a :class:`~pondlib.explore.Layer`.
        hardware: a :class:`~pondlib.explore.Hardware` (``pe_k``, ``pe_c``, ``pe_oy``).

    Returns:
        Whole cycles (int).

    Raises:
        ConfigError: ``layer`` is not a ``Layer`` or ``hardware`` not a ``Hardware``.
    """
    check_type(layer, "layer", Layer, where="compute_cycles_per_step", error=ConfigError)
    check_type(hardware, "hardware", Hardware, where="compute_cycles_per_step", error=ConfigError)
    pk, pc, poy = hardware.pe_k, hardware.pe_c, hardware.pe_oy
    x = layer
    rows = math.ceil(x.k / pk) * math.ceil(x.oy / poy) * x.ox
    if x.kind in ("conv", "linear"):
        dense = rows * math.ceil((x.c // x.groups) / pc) * x.fy * x.fx
    else:
        n_in = len(x.inputs) if x.kind == "add" else (x.fy * x.fx if x.kind == "pool" else 1)
        dense = rows * math.ceil(n_in / pc)
    return dense + (math.ceil(x.recurrent / (pk * pc)) if x.recurrent else 0)


def _compute_vector(workload: Workload, hardware: Hardware) -> np.ndarray:
    """``(L,)`` compute cycles of every layer over ``T`` steps (float64)."""
    per_step = np.array([compute_cycles_per_step(x, hardware) for x in workload.layers], dtype=np.float64)
    return per_step * workload.time_steps


def _inner_vector(workload: Workload, hardware: Hardware) -> np.ndarray:
    """``(L,)`` cycles the PE operand reads need at the inner buffers' bandwidths, over ``T`` steps:
    ``T ops max(b_in / min(p_k, K) / bw_in, b_w / min(p_oy, OY) / bw_w)`` (layers with weights only)."""
    ib, wb = hardware.input_buffer.bandwidth_bits_per_cycle, hardware.weight_buffer.bandwidth_bits_per_cycle
    out = np.zeros(len(workload.layers))
    for j, (x, ops) in enumerate(zip(workload.layers, workload.tables.ops)):
        if x.weighted:
            per_in = x.input_bits / min(hardware.pe_k, x.k) / ib
            per_w = x.weight_bits / min(hardware.pe_oy, x.oy) / wb
            out[j] = workload.time_steps * ops * max(per_in, per_w)
    return out


def _layer_cycles(
    compute: np.ndarray,
    inner: np.ndarray,
    shared_bits: np.ndarray,
    streamed_bits: np.ndarray,
    fetched_bits: np.ndarray,
    hardware: Hardware,
) -> np.ndarray:
    """``(L,)`` cycles per layer: ``max(compute, inner, shared / bw_sh, streamed / bw_D) + fetched / bw_D``.

    Args:
        compute, inner: ``(L,)`` compute cycles and inner-buffer cycles over ``T`` steps.
        shared_bits: ``(L,)`` bits each layer moves through the shared memory.
        streamed_bits, fetched_bits: ``(L,)`` DRAM bits moved during the node (overlapped) and before it
            (serialized).
        hardware: gives ``bw_sh`` (shared) and ``bw_D`` (DRAM) in bits per cycle.

    Example:
        >>> from pondlib.explore import meta_prototype
        >>> one = np.ones(1)
        >>> _layer_cycles(100 * one, 0 * one, 2048 * one, 64 * 300 * one, 64 * 5 * one, meta_prototype("1MB"))
        array([305.])
    """
    bw_sh = hardware.shared.bandwidth_bits_per_cycle
    bw_d = hardware.dram.bandwidth_bits_per_cycle
    busy = np.maximum(np.maximum(compute, inner), np.maximum(shared_bits / bw_sh, streamed_bits / bw_d))
    return busy + fetched_bits / bw_d
