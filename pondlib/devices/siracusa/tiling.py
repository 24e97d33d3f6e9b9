r"""L1 tiling plans, memory placement (L2 / L3 / weight memory) and NPU eligibility, per layer.

**GEMM tiles** (``M`` rows, ``K`` inputs, ``O`` outputs; a tile is ``m`` rows x ``o`` outputs). ``K`` is
never tiled (the kernels need whole dot products). One tile occupies, in bytes,

.. math::

    B(m, o) = \underbrace{m K}_{\text{input}} + \underbrace{K o}_{\text{weights}}
            + \underbrace{8 o}_{\text{mul, add (int32)}} + \underbrace{m\,o\,b_{out}}_{\text{output}}

with ``b_out = 1`` for int8 outputs (4 when a raw int32 accumulator feeds an integer LIF), doubled with
double buffering. The tiler takes the tile with the fewest tiles ``ceil(M/m) ceil(O/o)`` whose
footprint fits the budget (ties: the larger ``o``); ``o`` is a multiple of 16 when ``O >= 16`` (the
output-chunk rule), else ``O``. **Convolution tiles** are ``h`` output rows x ``o`` output channels,
full width, all input channels (the convolution's K), input rows ``(h-1) stride + kh`` (channels of
the tile only, for depthwise). **Element-wise layers** (RequantShift, LIF) tile ``n`` values of
``bytes_per_value`` each (LIF: int32 input, state in and out, spike out, per-neuron parameters).

**Placement.** Activations always live in L2 (peak live bytes = input + output of the largest layer
boundary, plus every LIF state, which persists across time steps). Weights (with biases and
RequantShift parameters) go to L2 while ``weights + peak activations <= L2``; otherwise the largest
move to L3 until the rest fits. NPU layers' weights go to the weight memory when it is enabled and
they fit.

**NPU eligibility** (N-EUREKA): convolutions 1x1, 3x3 or 3x3 depthwise, stride 1, non-negative
``mul``, shift <= 31, weights <= 4 MiB. A GEMM runs as a 1x1 (pointwise) convolution. Element-wise
layers and LIFs are not eligible (the NPU runs convolutions only).

Example:
    >>> import numpy as np
    >>> from pondlib.devices.siracusa.config import SiracusaConfig
    >>> from pondlib.devices.siracusa.specification import QGemm, RequantShift
    >>> g = QGemm("fc", weight=np.zeros((512, 256), dtype=int), requant=RequantShift(mul=1))
    >>> plan = plan_layer(g, rows=64, budget=64_000, buffering=1)
    >>> plan.tile, plan.n_tiles, plan.tile_bytes <= 64_000
    ({'m': 64, 'o': 48}, 6, True)
    >>> plan_layer(g, rows=64, budget=64_000, buffering=2).tile_bytes * 2 <= 64_000
    True
    >>> big = QGemm("wide", weight=np.zeros((70_000, 16), dtype=int), requant=RequantShift(mul=1))
    >>> p = plan_layer(big, rows=1, budget=64_000, buffering=1)
    >>> p.fits, p.reason.split(";")[0]
    (False, 'K = 70000 is never tiled')
    >>> npu_eligibility(g)
    (True, 'GEMM as a 1x1 (pointwise) convolution')
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pondlib.devices.siracusa.limits import SiracusaLimits, get_limits
from pondlib.devices.siracusa.specification import QLIF, QConv2d, QGemm, QRequant
from pondlib.errors import ConfigError, Violation
from pondlib.validate import check_int, check_type

if TYPE_CHECKING:  # annotations only: the configuration imports this module
    from pondlib.devices.siracusa.config import SiracusaConfig

__all__ = [
    "TilePlan",
    "plan_layer",
    "plan_tiles",
    "Placement",
    "place_memory",
    "npu_eligibility",
    "weight_bytes",
    "activation_bytes",
    "ROWS_MAX",
]

#: Most input rows per inference (GEMM M) a configuration or a tile plan takes.
ROWS_MAX = 2**20

_PARAM_BYTES = 8  # int32 mul + int32 add per output channel in L1
_ACC_BYTES = 4  # int32 accumulator / LIF input


@dataclass(frozen=True)
class TilePlan:
    """The L1 tiling of one layer.

    Attributes:
        layer: layer name. kind: ``"gemm"``, ``"conv"`` or ``"eltwise"``.
        tile: tile sizes (``m``/``o`` for GEMM, ``h``/``o`` for conv, ``n`` for element-wise).
        n_tiles: tiles per inference.
        tile_bytes: bytes of one tile's buffers (input, weights, parameters, output).
        footprint: ``tile_bytes * buffering`` (B of L1 used).
        buffering: 1 (single) or 2 (double).
        budget: the L1 tile budget (B).
        fits: whether any tile fits. reason: why not (or how it was chosen).
        min_bytes: footprint of the smallest possible tile (what would have to fit).
        in_bytes, out_bytes, weight_bytes: bytes moved per tile (lists, one entry per tile).
    """

    layer: str
    kind: str
    tile: dict
    n_tiles: int
    tile_bytes: int
    footprint: int
    buffering: int
    budget: int
    fits: bool
    reason: str
    min_bytes: int
    in_bytes: tuple = field(default=())
    out_bytes: tuple = field(default=())
    weight_bytes: tuple = field(default=())


def _out_bytes(layer: Any) -> int:
    return 1 if getattr(layer, "requant", None) is not None else _ACC_BYTES


def _o_candidates(o_total: int, quantum: int) -> list[int]:
    if o_total >= quantum:
        return sorted({min(o, o_total) for o in range(quantum, o_total + quantum, quantum)}, reverse=True)
    return [o_total]


def _split(total: int, size: int) -> list[int]:
    return [min(size, total - i) for i in range(0, total, size)]


def plan_layer(
    layer: Any, rows: int = 1, budget: int = 64_000, buffering: int = 2, limits: SiracusaLimits | str | None = None
) -> TilePlan:
    """The L1 tile plan of one layer (see the module docstring for the footprint formulas).

    One tile's buffers may use ``budget // buffering`` bytes; a GEMM is planned by :func:`_plan_gemm`, a
    convolution by :func:`_plan_conv`, a RequantShift or LIF by :func:`_plan_eltwise`.

    Raises:
        ConfigError: ``layer`` not an integer layer, ``rows`` or ``budget`` not whole numbers >= 1,
            ``buffering`` not 1 or 2.
    """
    lim = get_limits(limits)
    where = "plan_layer"
    check_type(layer, "layer", (QGemm, QConv2d, QRequant, QLIF), where=where, error=ConfigError)
    rows = check_int(rows, "rows", lo=1, hi=ROWS_MAX, where=where, error=ConfigError)
    budget = check_int(budget, "budget", lo=1, where=where, error=ConfigError)
    buf = check_int(buffering, "buffering", lo=1, hi=2, where=where, error=ConfigError)
    room = _Room(budget, buf)
    if isinstance(layer, QGemm):
        return _plan_gemm(layer, rows, room, lim)
    if isinstance(layer, QConv2d):
        return _plan_conv(layer, room, lim)
    return _plan_eltwise(layer, rows, room)


@dataclass(frozen=True)
class _Room:
    """The L1 a layer's tiles may use: ``budget`` bytes, ``buffering`` copies of one tile's buffers."""

    budget: int
    buffering: int

    @property
    def cap(self) -> int:
        """Bytes one tile's buffers may use."""
        return self.budget // self.buffering


def _no_fit(name: str, kind: str, tile: dict, room: _Room, reason: str, min_bytes: int) -> TilePlan:
    """The plan of a layer whose smallest tile (``min_bytes`` with buffering) exceeds the budget."""
    return TilePlan(name, kind, tile, 0, 0, 0, room.buffering, room.budget, False, reason, min_bytes)


def _fit(
    name: str, kind: str, tile: dict, tile_bytes: int, room: _Room, reason: str, min_bytes: int, moved: list
) -> TilePlan:
    """The plan of ``len(moved)`` tiles of ``tile_bytes`` each; ``moved``: (input, output, weight) bytes
    per tile."""
    ins, outs, ws = (tuple(t[k] for t in moved) for k in range(3))
    return TilePlan(
        name,
        kind,
        tile,
        len(moved),
        tile_bytes,
        tile_bytes * room.buffering,
        room.buffering,
        room.budget,
        True,
        reason,
        min_bytes,
        ins,
        outs,
        ws,
    )


def _plan_gemm(layer: QGemm, rows: int, room: _Room, lim: SiracusaLimits) -> TilePlan:
    """``m`` rows x ``o`` outputs (``K`` never tiled): the fewest tiles whose ``B(m, o)`` fits (ties: the
    larger ``o``), ``o`` from the output-chunk candidates."""
    K, O, M = layer.n_in, layer.n_out, rows
    ob = _out_bytes(layer)
    best = None
    for o in _o_candidates(O, lim.gemm_chunk_quantum):
        room_o = room.cap - K * o - _PARAM_BYTES * o
        m = min(M, room_o // (K + o * ob)) if room_o > 0 else 0
        if m >= 1:
            n = math.ceil(M / m) * math.ceil(O / o)
            if best is None or n < best[0]:
                best = (n, m, o)
    o_min = _o_candidates(O, lim.gemm_chunk_quantum)[-1]
    min_bytes = (K + K * o_min + _PARAM_BYTES * o_min + o_min * ob) * room.buffering
    if best is None:
        reason = (
            f"K = {K} is never tiled; the smallest tile (m = 1, o = {o_min}) needs {min_bytes} B > "
            f"{room.budget} B: reduce K, split the layer or raise the L1 budget"
        )
        return _no_fit(layer.name, "gemm", {"m": 0, "o": 0}, room, reason, min_bytes)
    n, m, o = best
    tb = m * K + K * o + _PARAM_BYTES * o + m * o * ob
    moved = [(mm * K, mm * oo * ob, K * oo + _PARAM_BYTES * oo) for mm in _split(M, m) for oo in _split(O, o)]
    reason = "whole layer in one tile" if n == 1 else f"{n} tiles of {m} x {o}"
    return _fit(layer.name, "gemm", {"m": m, "o": o}, tb, room, reason, min_bytes, moved)


def _plan_conv(layer: QConv2d, room: _Room, lim: SiracusaLimits) -> TilePlan:
    """``h`` output rows x ``o`` output channels, full width, all input channels (the convolution's K):
    the fewest tiles that fit (for each ``o``, the tallest ``h``)."""
    H, W, C = layer.in_shape
    Ho, Wo, O = layer.out_shape
    kh, kw, cg, _ = layer.weight.shape
    ob = _out_bytes(layer)
    Wp = W + 2 * layer.padding

    def need(h: int, o: int) -> tuple[int, int, int]:
        """(input, output, weight) bytes of a tile of ``h`` output rows and ``o`` channels."""
        rows_in = min((h - 1) * layer.stride + kh, H + 2 * layer.padding)
        c_in = o if layer.depthwise else C  # a depthwise tile reads only its own channels
        return rows_in * Wp * c_in, h * Wo * o * ob, kh * kw * cg * o + _PARAM_BYTES * o

    best = None
    for o in _o_candidates(O, lim.gemm_chunk_quantum):
        for h in range(Ho, 0, -1):
            if sum(need(h, o)) <= room.cap:
                n = math.ceil(Ho / h) * math.ceil(O / o)
                if best is None or n < best[0]:
                    best = (n, h, o)
                break
    o_min = _o_candidates(O, lim.gemm_chunk_quantum)[-1]
    min_bytes = sum(need(1, o_min)) * room.buffering
    if best is None:
        reason = (
            f"input channels (K = {kh * kw * cg}) are never tiled; the smallest tile (1 output row, o = "
            f"{o_min}) needs {min_bytes} B > {room.budget} B: reduce the width or channels, or raise the L1 budget"
        )
        return _no_fit(layer.name, "conv", {"h": 0, "o": 0}, room, reason, min_bytes)
    n, h, o = best
    moved = [need(hh, oo) for hh in _split(Ho, h) for oo in _split(O, o)]
    reason = "whole layer in one tile" if n == 1 else f"{n} tiles of {h} rows x {o} channels"
    return _fit(layer.name, "conv", {"h": h, "o": o}, sum(need(h, o)), room, reason, min_bytes, moved)


def _plan_eltwise(layer: QRequant | QLIF, rows: int, room: _Room) -> TilePlan:
    """``n`` values per tile, each moving ``bytes_per_value`` in and out with its per-channel parameters
    (LIF: int32 input, state in and out, spike out, three int32 parameters and the threshold)."""
    N = layer.n_out * rows
    if isinstance(layer, QLIF):
        sb = (layer.state_bits + 7) // 8
        b_in, b_out, b_par = _ACC_BYTES + sb, sb + 1, 3 * _ACC_BYTES + sb
    else:
        b_in, b_out, b_par = 1, 1, (_PARAM_BYTES if layer.requant.per_channel else 0)
    per = b_in + b_out + b_par
    n = min(N, room.cap // per)
    min_bytes = per * room.buffering
    if n < 1:
        return _no_fit(
            layer.name, "eltwise", {"n": 0}, room, f"one value needs {min_bytes} B > {room.budget} B", min_bytes
        )
    sizes = _split(N, n)
    reason = "whole layer in one tile" if len(sizes) == 1 else f"{len(sizes)} tiles of {n} values"
    moved = [(s * b_in, s * b_out, s * b_par) for s in sizes]
    return _fit(layer.name, "eltwise", {"n": n}, n * per, room, reason, min_bytes, moved)


def plan_tiles(config: SiracusaConfig, limits: SiracusaLimits | str | None = None) -> list[TilePlan]:
    """One :class:`TilePlan` per layer of ``config`` (its rows, buffering and L1 budget)."""
    _check_config(config, "plan_tiles")
    lim = get_limits(limits if limits is not None else config.limits_name)
    budget = config.l1_budget if config.l1_budget is not None else lim.l1_tile_budget
    return [plan_layer(layer, config.rows, budget, config.buffering, lim) for layer in config.layers]


def _check_config(config: Any, where: str) -> None:
    """``config`` looks like a :class:`~pondlib.devices.siracusa.config.SiracusaConfig` (checked by its
    fields: the configuration imports this module, so the type cannot be imported here)."""
    needed = ("layers", "rows", "buffering", "l1_budget", "limits_name", "npu_layers", "use_weight_memory")
    if not all(hasattr(config, key) for key in needed):
        raise ConfigError(
            "config",
            value=f"a {type(config).__name__}",
            limit="a SiracusaConfig",
            where=where,
            fix="build one with SiracusaConfig(...) or the mapper",
        )


def npu_eligibility(layer: Any, limits: SiracusaLimits | str | None = None) -> tuple[bool, str]:
    """``(eligible, reason)``: whether N-EUREKA can run ``layer``, and the rule that excludes it.

    Example:
        >>> import numpy as np
        >>> from pondlib.devices.siracusa.specification import QConv2d, RequantShift
        >>> c = QConv2d("c", weight=np.zeros((5, 5, 3, 8), dtype=int), in_shape=(8, 8, 3),
        ...             requant=RequantShift(mul=1))
        >>> npu_eligibility(c)
        (False, 'kernel 5x5 (groups 1): the NPU runs 1x1, 3x3 and 3x3 depthwise only')
    """
    lim = get_limits(limits)
    check_type(layer, "layer", (QGemm, QConv2d, QRequant, QLIF), where="npu_eligibility", error=ConfigError)
    if isinstance(layer, QGemm):
        shape, stride, what = (1, 1, False), 1, "GEMM as a 1x1 (pointwise) convolution"
    elif isinstance(layer, QConv2d):
        kh, kw = layer.weight.shape[:2]
        shape, stride = (int(kh), int(kw), layer.depthwise), layer.stride
        what = f"{kh}x{kw}{' depthwise' if layer.depthwise else ''} convolution"
        if layer.groups > 1 and not layer.depthwise:
            return False, f"grouped convolution (groups {layer.groups}): the NPU runs dense or depthwise only"
    else:
        return False, f"{type(layer).__name__}: the NPU runs convolutions only"
    if shape not in lim.npu_kernels:
        return False, (
            f"kernel {shape[0]}x{shape[1]} (groups {getattr(layer, 'groups', 1)}): the NPU runs "
            "1x1, 3x3 and 3x3 depthwise only"
        )
    if stride != lim.npu_stride:
        return False, f"stride {stride}: the NPU supports stride {lim.npu_stride} only"
    rq = layer.requant
    if rq is None:
        return False, "raw int32 accumulator output: the NPU always requantizes"
    if rq.mul.size and int(rq.mul.min()) < 0:
        return False, f"mul {int(rq.mul.min())} < 0: the NPU scale is unsigned"
    if rq.shift > lim.npu_shift_max:
        return False, f"shift {rq.shift} > {lim.npu_shift_max}: the NPU shift field has 5 bits"
    wb = int(layer.weight.size)
    if wb > lim.npu_weight_bytes:
        return False, f"weights {wb} B > {lim.npu_weight_bytes} B of weight memory"
    return True, what


def weight_bytes(layer: Any) -> int:
    """Bytes of constants of one layer: int8 weights, int32 biases, int32 mul and add per channel."""
    check_type(layer, "layer", (QGemm, QConv2d, QRequant, QLIF), where="weight_bytes", error=ConfigError)
    if isinstance(layer, (QGemm, QConv2d)):
        o = int(layer.weight.shape[-1])
        n = int(layer.weight.size) + (4 * o if layer.bias is not None else 0)
        return n + (_PARAM_BYTES * o if layer.requant is not None else 0)
    if isinstance(layer, QRequant):
        return int(layer.requant.mul.size + layer.requant.add.size) * 4
    if isinstance(layer, QLIF):
        return layer.n * (3 * 4 + (layer.state_bits + 7) // 8)
    return 0


def activation_bytes(layer: Any, rows: int = 1) -> tuple[int, int]:
    """(input, output) bytes of one layer's activations in L2 (raw accumulators are int32)."""
    check_type(layer, "layer", (QGemm, QConv2d, QRequant, QLIF), where="activation_bytes", error=ConfigError)
    rows = check_int(rows, "rows", lo=1, hi=ROWS_MAX, where="activation_bytes", error=ConfigError)
    in_b = layer.n_in * (_ACC_BYTES if isinstance(layer, QLIF) else 1)
    out_b = layer.n_out * (_out_bytes(layer) if isinstance(layer, (QGemm, QConv2d)) else 1)
    return in_b * rows, out_b * rows


@dataclass(frozen=True)
class Placement:
    """Where each layer's constants live and how much L2 is used.

    Attributes:
        weights: layer name -> ``"L2"``, ``"L3"`` or ``"WMEM"`` (NPU weight memory).
        weight_bytes: layer name -> bytes of constants.
        peak_activation_bytes: largest live activations (input + output of one layer) plus LIF states.
        l2_used: bytes of L2 used (weights kept in L2 + peak activations).
        violations: ``l2_fit`` / ``l3_fit`` violations (empty when everything fits).
    """

    weights: dict
    weight_bytes: dict
    peak_activation_bytes: int
    l2_used: int
    violations: tuple = ()


def place_memory(config: SiracusaConfig, limits: SiracusaLimits | str | None = None) -> Placement:
    """Place every layer's constants (L2 first, then L3 for the largest; weight memory for NPU layers).

    Example:
        >>> import numpy as np
        >>> from pondlib.devices.siracusa.config import SiracusaConfig
        >>> from pondlib.devices.siracusa.specification import QGemm, RequantShift
        >>> small = QGemm("a", weight=np.zeros((64, 64), dtype=int), requant=RequantShift(mul=1))
        >>> huge = QGemm("b", weight=np.zeros((64, 40_000), dtype=int), requant=RequantShift(mul=1))
        >>> p = place_memory(SiracusaConfig(layers=(small, huge), n_input=64))
        >>> p.weights
        {'a': 'L2', 'b': 'L3'}
    """
    _check_config(config, "place_memory")
    lim = get_limits(limits if limits is not None else config.limits_name)
    rows = config.rows
    wb = {layer.name: weight_bytes(layer) for layer in config.layers}
    lif_state = sum(
        layer.n * rows * ((layer.state_bits + 7) // 8) for layer in config.layers if isinstance(layer, QLIF)
    )
    peak = max((sum(activation_bytes(layer, rows)) for layer in config.layers), default=0) + lif_state
    where: dict[str, str] = {}
    wmem_used = 0
    if config.use_weight_memory:
        for layer in config.layers:
            if layer.name in config.npu_layers and wmem_used + wb[layer.name] <= lim.weight_memory_bytes:
                where[layer.name] = "WMEM"
                wmem_used += wb[layer.name]
    rest = [layer.name for layer in config.layers if layer.name not in where]
    in_l2 = sum(wb[n] for n in rest)
    for n in sorted(rest, key=lambda k: -wb[k]):  # move the largest constants off-chip first
        if in_l2 + peak <= lim.l2_bytes:
            break
        where[n] = "L3"
        in_l2 -= wb[n]
    for n in rest:
        where.setdefault(n, "L2")
    violations: list[Violation] = []
    if peak > lim.l2_bytes:
        violations.append(
            Violation(
                "l2_fit",
                "<graph>",
                f"{peak} B of live activations",
                f"{lim.l2_bytes} B of L2",
                "use fewer rows per inference or smaller layers",
            )
        )
    l3 = sum(wb[n] for n, w in where.items() if w == "L3")
    if l3 > lim.l3_bytes:
        violations.append(
            Violation(
                "l3_fit", "<graph>", f"{l3} B of weights in L3", f"{lim.l3_bytes} B", "prune or shrink the network"
            )
        )
    ordered = {layer.name: where[layer.name] for layer in config.layers}
    return Placement(ordered, wb, int(peak), int(in_l2 + peak), tuple(violations))
