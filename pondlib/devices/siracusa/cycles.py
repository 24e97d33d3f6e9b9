r"""Cycle model of a Siracusa deployment, per layer: DMA in, kernel, DMA out (1 or 8 cores, SIMD, tiled).

A kernel splits its work units ``U`` (MACs or values) over ``c`` cores in chunks (GEMM: output
channels, ``ceil(O / c)`` per core; convolution: output rows; element-wise: values), so the slowest
core does ``u = ceil(U / c)``-sized work. With ``F`` the fork/barrier cost of one cluster launch,
``k`` the core cycles per unit in L1, ``a`` the memory accesses per unit and ``P`` the extra latency
of one L2 access:

.. math::

    \text{untiled (data in L2)}: \quad T &= F + \max\big(u\,(k + a P),\ B_{L2} / R_{L2}\big) \\
    \text{tiled, tile } i: \quad T_i &= \underbrace{n_{in} S + B^{in}_i / W}_{\text{DMA in}}
        + \underbrace{F + u_i k}_{\text{kernel}} + \underbrace{S + B^{out}_i / W}_{\text{DMA out}}

(single buffering: the sum over tiles; double buffering overlaps each kernel with the next tile's
input and the previous tile's output DMA: ``in_0 + sum_i max(kernel_i, in_{i+1} + out_{i-1}) +
out_last``). ``R_L2`` is the L2 port bandwidth shared by the
cores (bytes per cycle; the work's L2 bytes ``B_L2`` are ``U a`` times 4 with SIMD word accesses, 1
without), ``S`` the DMA setup and ``W`` the DMA
bandwidth (bytes per cycle). Weights placed in L3 add ``bytes / W_L3`` once per inference. NPU layers
run ``macs / R_NPU`` cycles plus DMA; with the weight memory their weights are not DMAed at all.

**Calibration** (:class:`CycleParams`). ``F``, ``P`` and the element-wise ``k`` (scalar and SIMD) are
*fit* to the tutorial's int8 LeakyReLU series over 65,536 values (2,492,970 / 313,541 / 108,090 /
43,005 cycles; tiled = single-buffered 64,000 B tiles), with ``W = 8`` B/cycle and ``S = 50`` cycles
(the tutorial's small DMAs take ~50 cycles): those four anchors are reproduced by construction. The
GEMM per-MAC costs, the LIF cost and the L3 bandwidth are *assumptions* (stated per field);
``R_NPU`` comes from the tutorial's pointwise-convolution tile (32,771 ops in 2,649 cycles). ``R_L2``
is *fit* so that :func:`decoder_proxy` (a GEMV-dominated decoder step of stated shapes; the tutorial's
microLlama128 itself is not available here) shows the tutorial's 1 -> 8 core speed-up of 5.2x: with
8 cores issuing word loads, the shared L2 port saturates, which is why the speed-up is below 8. All
anchors are therefore calibration points, not independent validation.

Example:
    >>> series = leaky_relu_series()
    >>> {k: round(v) for k, v in series.items()}
    {'1 core': 2492970, '8 cores': 313541, '8 cores, tiled': 108090, '8 cores, tiled, SIMD': 43005}
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from pondlib.devices.siracusa.config import SiracusaConfig
from pondlib.devices.siracusa.limits import get_limits
from pondlib.devices.siracusa.specification import QLIF, QConv2d, QGemm, QRequant, RequantShift
from pondlib.devices.siracusa.tiling import place_memory, plan_layer, weight_bytes
from pondlib.errors import ConfigError
from pondlib.validate import check_bool, check_choice, check_float, check_int, check_type

__all__ = [
    "CycleParams",
    "DEFAULT_CYCLES",
    "LayerCycles",
    "layer_cycles",
    "cycle_table",
    "format_cycle_table",
    "eltwise_cycles",
    "leaky_relu_series",
    "decoder_proxy",
    "TUTORIAL_ANCHORS",
]

#: Largest element count the element-wise model takes, and most tiles it lists (the model is a sum
#: over tiles: beyond these it would only burn time, the chip has 2 MiB of L2).
N_MAX = 2**40
TILES_MAX = 2**22

#: The tutorial's numbers this model is calibrated on / checked against.
TUTORIAL_ANCHORS = {
    "leaky_relu_elements": 65_536,
    "leaky_relu": {"1 core": 2_492_970, "8 cores": 313_541, "8 cores, tiled": 108_090, "8 cores, tiled, SIMD": 43_005},
    "microllama128_cycles": {"1 core": 16_100_000, "8 cores": 3_100_000},
    "speedup_1_to_8": 5.2,
    "npu_pwconv_tile": {"ops": 32_771, "kernel": 2_649, "dma_in": 2_037, "dma_in_wmem": 125},
}


@dataclass(frozen=True)
class CycleParams:
    """Constants of the cycle model (cycles of the cluster clock)."""

    fork_cycles: float = 2194.0  # per cluster kernel launch (fork + barrier); fit, LeakyReLU 1 & 8 cores
    l2_access_cycles: float = 13.82587  # extra cycles per core load/store in L2 vs L1; fit
    eltwise_cycles: float = 10.35449  # per value in L1, scalar int8 (LeakyReLU, RequantShift); fit
    eltwise_cycles_simd: float = 2.40955  # per value in L1 with 4-way SIMD; fit
    eltwise_accesses: float = 2.0  # byte load + store per value (scalar)
    eltwise_accesses_simd: float = 0.5  # word load + store per 4 values (SIMD)
    mac_cycles: float = 2.5  # per MAC in L1, scalar (assumed: 2 loads, mac, loop)
    mac_cycles_simd: float = 0.5  # per MAC in L1, sdotp 4x int8 with register blocking (assumed)
    mac_accesses: float = 2.0  # loads per MAC, scalar
    mac_accesses_simd: float = 0.3125  # 5 word loads per 16 MACs (1 input, 4 weight words; assumed)
    lif_cycles: float = 20.7  # per neuron step in L1 (two RequantShift-like ops; assumed)
    lif_accesses: float = 4.0  # I load, v load, v store, spike store per neuron step
    l2_port_bytes: float = 1.6  # B/cycle the cluster's cores can load/store from L2 together;
    #                                        fit to the 1 -> 8 core speed-up (>= 0.42 needed by LeakyReLU)
    dma_bytes_per_cycle: float = 8.0  # L2 <-> L1 cluster DMA (64-bit; assumed)
    dma_setup_cycles: float = 50.0  # per transfer (tutorial: small output DMAs take ~50 cycles)
    l3_bytes_per_cycle: float = 1.0  # off-chip L3 -> L2 (assumed)
    npu_macs_per_cycle: float = 12.37  # N-EUREKA: tutorial tile, 32,771 ops in 2,649 cycles
    npu_setup_cycles: float = 0.0  # per NPU tile (included in the rate above)

    def __post_init__(self) -> None:
        """Every constant a finite number >= 0; the rates that divide (bytes or MACs per cycle) > 0."""
        for f in fields(self):
            positive = f.name in _RATES
            value = check_float(
                getattr(self, f.name), f.name, lo=0.0, lo_open=positive, where="CycleParams", error=ConfigError
            )
            object.__setattr__(self, f.name, value)


#: The CycleParams fields that divide (must be > 0).
_RATES = frozenset({"l2_port_bytes", "dma_bytes_per_cycle", "l3_bytes_per_cycle", "npu_macs_per_cycle"})


DEFAULT_CYCLES = CycleParams()


@dataclass(frozen=True)
class LayerCycles:
    """Cycles of one layer; ``total = l3 + dma_in + kernel + dma_out - overlap``."""

    layer: str
    kind: str
    unit: str
    cores: int
    simd: bool
    tiled: bool
    n_tiles: int
    macs: int
    dma_in: float
    kernel: float
    dma_out: float
    l3: float
    total: float


def _combine(ins: list[float], ks: list[float], outs: list[float], buffering: int) -> float:
    if buffering != 2 or len(ks) == 1:
        return float(sum(ins) + sum(ks) + sum(outs))
    total = ins[0]
    for i, k in enumerate(ks):
        dma = (ins[i + 1] if i + 1 < len(ks) else 0.0) + (outs[i - 1] if i > 0 else 0.0)
        total += max(k, dma)
    return float(total + outs[-1])


def eltwise_cycles(
    n: int,
    cores: int = 8,
    simd: bool = False,
    tiled: bool = False,
    budget: int = 64_000,
    buffering: int = 1,
    bytes_in: int = 1,
    bytes_out: int = 1,
    params: CycleParams = DEFAULT_CYCLES,
    cycles_per_value: float | None = None,
    accesses_per_value: float | None = None,
) -> tuple[float, float, float, int]:
    """``(dma_in, kernel, dma_out, n_tiles)`` of an element-wise int8 kernel over ``n`` values.

    Raises:
        ConfigError: ``n`` outside 1..2^40, ``cores``, ``budget``, ``bytes_in``/``bytes_out`` not whole
            numbers >= 1, ``buffering`` not 1 or 2, ``simd``/``tiled`` not bools, ``params`` not
            :class:`CycleParams`, per-value costs not finite numbers >= 0.
    """
    where = "eltwise_cycles"
    n = check_int(n, "n", lo=1, hi=N_MAX, where=where, error=ConfigError)
    cores = check_int(cores, "cores", lo=1, hi=1024, where=where, error=ConfigError)
    simd = check_bool(simd, "simd", where=where, error=ConfigError)
    tiled = check_bool(tiled, "tiled", where=where, error=ConfigError)
    budget = check_int(budget, "budget", lo=1, where=where, error=ConfigError)
    buffering = check_int(buffering, "buffering", lo=1, hi=2, where=where, error=ConfigError)
    bytes_in = check_int(bytes_in, "bytes_in", lo=1, where=where, error=ConfigError)
    bytes_out = check_int(bytes_out, "bytes_out", lo=1, where=where, error=ConfigError)
    check_type(params, "params", CycleParams, where=where, error=ConfigError)
    if cycles_per_value is not None:
        cycles_per_value = check_float(cycles_per_value, "cycles_per_value", lo=0.0, where=where, error=ConfigError)
    if accesses_per_value is not None:
        accesses_per_value = check_float(
            accesses_per_value, "accesses_per_value", lo=0.0, where=where, error=ConfigError
        )
    if tiled and n // max(budget // (buffering * (bytes_in + bytes_out)), 1) > TILES_MAX:
        raise ConfigError(
            "tiles",
            value=f"{n} values in tiles of {budget} B",
            limit=f"<= {TILES_MAX} tiles",
            where=where,
            fix="raise the budget or model fewer values",
        )
    p = params
    k = cycles_per_value if cycles_per_value is not None else (p.eltwise_cycles_simd if simd else p.eltwise_cycles)
    a = (
        accesses_per_value
        if accesses_per_value is not None
        else (p.eltwise_accesses_simd if simd else p.eltwise_accesses)
    )
    if not tiled:
        u = math.ceil(n / cores)
        width = 4 if simd else 1  # bytes per access: a word with SIMD, a byte without
        kern = p.fork_cycles + max(u * (k + a * p.l2_access_cycles), n * a * width / p.l2_port_bytes)
        return 0.0, kern, 0.0, 1
    per_tile = max(budget // (max(buffering, 1) * (bytes_in + bytes_out)), 1)
    sizes = [min(per_tile, n - i) for i in range(0, n, per_tile)]
    ins = [p.dma_setup_cycles + s * bytes_in / p.dma_bytes_per_cycle for s in sizes]
    outs = [p.dma_setup_cycles + s * bytes_out / p.dma_bytes_per_cycle for s in sizes]
    ks = [p.fork_cycles + math.ceil(s / cores) * k for s in sizes]
    total = _combine(ins, ks, outs, buffering)
    return sum(ins), total - sum(ins) - sum(outs), sum(outs), len(sizes)


def leaky_relu_series(params: CycleParams = DEFAULT_CYCLES, n: int = 65_536) -> dict[str, float]:
    """The model's cycles for the tutorial's int8 LeakyReLU series (total per setting)."""
    n = check_int(n, "n", lo=1, hi=N_MAX, where="leaky_relu_series", error=ConfigError)
    out = {}
    for label, cores, tiled, simd in (
        ("1 core", 1, False, False),
        ("8 cores", 8, False, False),
        ("8 cores, tiled", 8, True, False),
        ("8 cores, tiled, SIMD", 8, True, True),
    ):
        i, k, o, _ = eltwise_cycles(n, cores, simd, tiled, budget=64_000, buffering=1, params=params)
        out[label] = i + k + o
    return out


def _units(layer, tile: dict | None, rows: int, cores: int) -> tuple[int, int, int]:
    """(MACs, per-core MACs, per-core requantized outputs) of a layer or one tile of it."""
    if isinstance(layer, QGemm):
        K, O = layer.n_in, layer.n_out
        m, o = (tile["m"], tile["o"]) if tile else (rows, O)
        ch = math.ceil(o / cores)  # output-channel chunks, one per core
        return m * K * o, m * K * ch, m * ch
    Ho, Wo, O = layer.out_shape
    kh, kw, cg, _ = layer.weight.shape
    h, o = (tile["h"], tile["o"]) if tile else (Ho, O)
    ch = math.ceil(h / cores)  # output-row chunks, one per core
    return h * Wo * o * kh * kw * cg, ch * Wo * o * kh * kw * cg, ch * Wo * o


def layer_cycles(
    layer,
    config: SiracusaConfig,
    cores: int = 8,
    simd: bool = True,
    tiled: bool = True,
    params: CycleParams = DEFAULT_CYCLES,
    placement: str | None = None,
    on_npu: bool | None = None,
) -> LayerCycles:
    """Cycles of one layer of ``config`` (see the module docstring).

    Raises:
        ConfigError: ``layer`` not an integer layer, ``config`` not a :class:`SiracusaConfig`, ``cores``
            not in 1..1024, ``simd``/``tiled``/``on_npu`` not bools, ``placement`` not L2/L3/WMEM,
            ``params`` not :class:`CycleParams`.
    """
    where = "layer_cycles"
    check_type(layer, "layer", (QGemm, QConv2d, QRequant, QLIF), where=where, error=ConfigError)
    check_type(config, "config", SiracusaConfig, where=where, error=ConfigError)
    cores = check_int(cores, "cores", lo=1, hi=1024, where=where, error=ConfigError)
    simd = check_bool(simd, "simd", where=where, error=ConfigError)
    tiled = check_bool(tiled, "tiled", where=where, error=ConfigError)
    check_type(params, "params", CycleParams, where=where, error=ConfigError)
    if placement is not None:
        check_choice(placement, "placement", ("L2", "L3", "WMEM"), where=where, error=ConfigError)
    if on_npu is not None:
        on_npu = check_bool(on_npu, "on_npu", where=where, error=ConfigError)
    p = params
    lim = get_limits(config.limits_name)
    rows = config.rows
    budget = config.l1_budget if config.l1_budget is not None else lim.l1_tile_budget
    where = placement or "L2"
    npu = (layer.name in config.npu_layers) if on_npu is None else on_npu
    l3 = weight_bytes(layer) / p.l3_bytes_per_cycle if where == "L3" else 0.0
    kind = type(layer).__name__
    if isinstance(layer, (QRequant, QLIF)):
        n = layer.n * rows
        if isinstance(layer, QLIF):
            sb = (layer.state_bits + 7) // 8
            i, k, o, nt = eltwise_cycles(
                n, cores, False, tiled, budget, config.buffering, 4 + sb, sb + 1, p, p.lif_cycles, p.lif_accesses
            )
        else:
            i, k, o, nt = eltwise_cycles(n, cores, simd, tiled, budget, config.buffering, 1, 1, p)
        return LayerCycles(layer.name, kind, "cluster", cores, simd, tiled, nt, 0, i, k, o, l3, l3 + i + k + o)
    macs_total = _units(layer, None, rows, cores)[0]
    kmac = p.mac_cycles_simd if simd else p.mac_cycles
    amac = p.mac_accesses_simd if simd else p.mac_accesses
    krq = p.eltwise_cycles_simd if simd else p.eltwise_cycles
    if not tiled and not npu:
        _, u, r = _units(layer, None, rows, cores)
        bytes_total = macs_total * amac * (4 if simd else 1)  # word loads with SIMD, bytes without
        kern = p.fork_cycles + max(
            u * (kmac + amac * p.l2_access_cycles) + r * (krq + p.eltwise_accesses * p.l2_access_cycles),
            bytes_total / p.l2_port_bytes,
        )
        return LayerCycles(
            layer.name, kind, "cluster", cores, simd, False, 1, macs_total, 0.0, kern, 0.0, l3, l3 + kern
        )
    plan = plan_layer(layer, rows, budget, config.buffering, lim)
    if not plan.fits:
        return LayerCycles(
            layer.name,
            kind,
            "npu" if npu else "cluster",
            cores,
            simd,
            True,
            0,
            macs_total,
            math.inf,
            math.inf,
            math.inf,
            l3,
            math.inf,
        )
    tiles = []
    if isinstance(layer, QGemm):
        M, O, m, o = rows, layer.n_out, plan.tile["m"], plan.tile["o"]
        tiles = [{"m": min(m, M - a), "o": min(o, O - b)} for a in range(0, M, m) for b in range(0, O, o)]
    else:
        Ho, _, O = layer.out_shape
        h, o = plan.tile["h"], plan.tile["o"]
        tiles = [{"h": min(h, Ho - a), "o": min(o, O - b)} for a in range(0, Ho, h) for b in range(0, O, o)]
    skip_w = npu and where == "WMEM"
    ins, ks, outs = [], [], []
    for t, b_in, b_w, b_out in zip(tiles, plan.in_bytes, plan.weight_bytes, plan.out_bytes):
        moved = b_in + (0 if skip_w else b_w)
        ins.append(p.dma_setup_cycles * (1 if skip_w else 2) + moved / p.dma_bytes_per_cycle)
        outs.append(p.dma_setup_cycles + b_out / p.dma_bytes_per_cycle)
        macs, u, r = _units(layer, t, rows, cores)
        if npu:
            ks.append(p.npu_setup_cycles + macs / p.npu_macs_per_cycle)
        else:
            ks.append(p.fork_cycles + u * kmac + r * krq)
    total = _combine(ins, ks, outs, config.buffering)
    return LayerCycles(
        layer.name,
        kind,
        "npu" if npu else "cluster",
        cores,
        simd,
        True,
        len(tiles),
        macs_total,
        sum(ins),
        total - sum(ins) - sum(outs),
        sum(outs),
        l3,
        l3 + total,
    )


def cycle_table(
    config: SiracusaConfig, cores: int = 8, simd: bool = True, tiled: bool = True, params: CycleParams = DEFAULT_CYCLES
) -> list[LayerCycles]:
    """:class:`LayerCycles` of every layer (placement from :func:`~.tiling.place_memory`)."""
    check_type(config, "config", SiracusaConfig, where="cycle_table", error=ConfigError)
    where = place_memory(config).weights
    return [layer_cycles(layer, config, cores, simd, tiled, params, where.get(layer.name)) for layer in config.layers]


def format_cycle_table(rows: list[LayerCycles]) -> str:
    """A plain-text per-layer table (plus the total).

    Example:
        >>> import numpy as np
        >>> g = QGemm("fc", weight=np.ones((64, 32), dtype=int), requant=RequantShift(mul=1))
        >>> print(format_cycle_table(cycle_table(SiracusaConfig(layers=(g,), n_input=64))))
        ... # doctest: +ELLIPSIS
        layer  kind   unit     tiles  MACs  DMA in  kernel  DMA out  total
        fc     QGemm  cluster  1      2048  ...
        total  ...
    """
    if isinstance(rows, (str, bytes)) or not isinstance(rows, (list, tuple)):
        raise ConfigError(
            "rows",
            value=f"a {type(rows).__name__}",
            limit="a list of LayerCycles",
            where="format_cycle_table",
            fix="pass cycle_table(config)",
        )
    for i, r in enumerate(rows):
        check_type(r, f"rows[{i}]", LayerCycles, where="format_cycle_table", error=ConfigError)
    head = ("layer", "kind", "unit", "tiles", "MACs", "DMA in", "kernel", "DMA out", "total")
    body = [
        (
            r.layer,
            r.kind,
            r.unit,
            str(r.n_tiles),
            str(r.macs),
            f"{r.dma_in + r.l3:.0f}",
            f"{r.kernel:.0f}",
            f"{r.dma_out:.0f}",
            f"{r.total:.0f}",
        )
        for r in rows
    ]
    body.append(
        (
            "total",
            "",
            "",
            "",
            str(sum(r.macs for r in rows)),
            f"{sum(r.dma_in + r.l3 for r in rows):.0f}",
            f"{sum(r.kernel for r in rows):.0f}",
            f"{sum(r.dma_out for r in rows):.0f}",
            f"{sum(r.total for r in rows):.0f}",
        )
    )
    widths = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in [head] + body)


def decoder_proxy(d: int = 64, ffn: int = 256, n_layers: int = 4, context: int = 128) -> SiracusaConfig:
    """A GEMV-dominated decoder step (the shape of a microLlama autoregressive step) as integer layers.

    Per block: QKV projection ``d -> 3d`` and its RequantShift, scores against ``context`` cached keys
    (GEMV ``3d -> context``), a RequantShift over the scores (softmax stand-in), values (``context ->
    d``), output projection ``d -> d``, MLP ``d -> ffn -> d`` with a RequantShift activation. Used to
    check the 1 -> 8 core speed-up, all data untiled in L2 as in the tutorial's default runner.

    Example:
        >>> cfg = decoder_proxy(n_layers=1)
        >>> [layer.name for layer in cfg.layers][:4], len(cfg.layers)
        (['b0.qkv', 'b0.qkv_act', 'b0.scores', 'b0.softmax'], 9)
    """
    d, ffn, n_layers, context = (
        check_int(v, key, lo=1, hi=1 << 16, where="decoder_proxy", error=ConfigError)
        for key, v in (("d", d), ("ffn", ffn), ("n_layers", n_layers), ("context", context))
    )
    rq = RequantShift(mul=1)

    def gemm(name: str, k: int, o: int) -> QGemm:
        return QGemm(name, weight=np.zeros((k, o), dtype=np.int64), requant=rq)

    layers: list = []
    for b in range(n_layers):
        layers += [
            gemm(f"b{b}.qkv", d, 3 * d),
            QRequant(f"b{b}.qkv_act", n=3 * d, requant=rq),
            gemm(f"b{b}.scores", 3 * d, context),
            QRequant(f"b{b}.softmax", n=context, requant=rq),
            gemm(f"b{b}.values", context, d),
            gemm(f"b{b}.proj", d, d),
            gemm(f"b{b}.up", d, ffn),
            QRequant(f"b{b}.act", n=ffn, requant=rq),
            gemm(f"b{b}.down", ffn, d),
        ]
    return SiracusaConfig(layers=tuple(layers), n_input=d)
