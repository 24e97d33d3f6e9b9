r"""What a Siracusa deployment is made of: the integer layers and the mapper's :class:`Specification`.

Integer layers (built by :func:`~pondlib.devices.siracusa.mapper.mapper`, held by a
:class:`~pondlib.devices.siracusa.config.SiracusaConfig`, run by
:class:`~pondlib.devices.siracusa.sim.SiracusaSim`; the equations are in
:mod:`pondlib.devices.siracusa.config`). Every integer array is stored as a read-only ``int64`` copy,
wider than the chip, so that an out-of-range value stays representable and is *reported* by
:func:`~pondlib.devices.siracusa.config.check_constraints` instead of being wrapped here:

==================  ==================================================================================
:class:`RequantShift`  ``y = clamp((wrap32((x + in_offset) mul + add) + 2^(s-1)) >> s, lo, hi)``,
                    ``div = 2^s``; per tensor (scalars) or per output channel ``(O,)``
:class:`QGemm`      weight (K, O) int8, bias (O,) int32, then a RequantShift (or raw int32 out)
:class:`QConv2d`    NHWC convolution, weight (kh, kw, C_in / groups, O)
:class:`QRequant`   a stand-alone RequantShift over ``n`` values (a ReLU when unsigned)
:class:`QLIF`       integer LIF with state width ``state_bits`` and shift ``s``
==================  ==================================================================================

The mapper's output, :class:`Specification`, holds the float layers it was given, the integer
configuration, a :class:`LayerReport` per integer layer (scales, multiplier error, shift, placement,
tile plan, NPU eligibility) and the memory placement.

Example:
    >>> import numpy as np
    >>> rq = RequantShift(mul=[3, 5], add=[0, 0], div=4)
    >>> rq.shift, rq.out_range
    (2, (-128, 127))
    >>> g = QGemm("fc", weight=np.ones((4, 2), dtype=int), requant=rq)
    >>> g.n_in, g.n_out, g.weight.dtype, g.weight.flags.writeable
    (4, 2, dtype('int64'), False)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pondlib.devices.core.intmath import int_range
from pondlib.errors import ConfigError
from pondlib.validate import as_int_array, check_bool, check_int, check_type

if TYPE_CHECKING:  # annotations only: the configuration and the tiling import this module
    from pondlib.devices.siracusa.config import SiracusaConfig
    from pondlib.devices.siracusa.tiling import Placement, TilePlan

__all__ = [
    "RequantShift",
    "QGemm",
    "QConv2d",
    "QRequant",
    "QLIF",
    "QLayer",
    "RESET_MODES",
    "COMPARISONS",
    "DIM_MAX",
    "SIZE_MAX",
    "LayerReport",
    "Specification",
]

#: Largest image height / width / channel count of a convolution, and largest element count of a layer
#: (the tiler and the cycle model enumerate tiles: beyond these they would only burn time and memory;
#: Siracusa's L3 holds 16 MiB).
DIM_MAX = 2**16
SIZE_MAX = 2**31

#: LIF reset modes and spike comparisons the integer LIF knows.
RESET_MODES = ("subtract", "zero")
COMPARISONS = (">=", ">")


# -- integer layers ------------------------------------------------------------------------------
def _i64(value: Any, name: str, where: str, ndim: int | tuple[int, ...] | None = None) -> np.ndarray:
    """A read-only int64 copy of whole numbers (floats must hold integers: never rounded here; values
    beyond int64 are refused before any cast)."""
    arr = as_int_array(
        value, name, where=where, error=ConfigError, ndim=ndim, fix="round/quantize before building the layer"
    ).copy()
    arr.setflags(write=False)
    return arr


def _name(value: Any, where: str) -> str:
    check_type(value, "name", str, where=where, error=ConfigError)
    if not value:
        raise ConfigError("name", value="''", limit="a non-empty layer name", where=where, fix="name the layer")
    return value


def _channels(rq: Any, n_out: int, where: str, rule: str) -> None:
    """``rq`` is None or a RequantShift whose per-channel parameters have 1 or ``n_out`` entries."""
    if rq is None:
        return
    check_type(rq, "requant", RequantShift, where=where, error=ConfigError)
    for key in ("mul", "add"):
        size = getattr(rq, key).size
        if size not in (1, n_out) and not (rule == "modulo" and n_out % size == 0):
            raise ConfigError(
                f"requant.{key} size",
                value=f"{size} values for {n_out} outputs",
                limit=f"1 or {n_out}" + (" (or a divisor of it)" if rule == "modulo" else ""),
                where=where,
                fix=f"pass one {key} per output channel, or one for all",
            )


@dataclass(frozen=True)
class RequantShift:
    """RequantShift parameters; ``mul``/``add`` are scalars (per tensor) or (O,) (per channel).

    Attributes:
        mul: int32 multiplier(s).
        add: int32 addend(s) (already scaled by ``div``; folds biases and rounding offsets).
        div: the divisor ``2^shift`` (must be an exact power of two).
        out_bits: output width ``b``.
        signed: signed output ``[-2^(b-1), 2^(b-1)-1]``; unsigned ``[0, 2^b - 1]`` (ReLU).
        in_offset: added to the input before the multiplication (0 for symmetric activations).

    Example:
        >>> rq = RequantShift(mul=1, add=0, div=2)
        >>> rq.shift, rq.out_range, rq.per_channel
        (1, (-128, 127), False)
    """

    mul: Any
    add: Any = 0
    div: int = 1
    out_bits: int = 8
    signed: bool = True
    in_offset: int = 0

    def __post_init__(self) -> None:
        where = "RequantShift"
        object.__setattr__(self, "mul", _i64(self.mul, "mul", where, ndim=(0, 1)))
        object.__setattr__(self, "add", _i64(self.add, "add", where, ndim=(0, 1)))
        # div and out_bits ranges that the chip rejects (not a power of two, > 2^31, > 8 bits) are
        # reported by check_constraints; what no arithmetic can hold is refused here.
        object.__setattr__(self, "div", check_int(self.div, "div", lo=1, hi=2**62, where=where, error=ConfigError))
        object.__setattr__(
            self, "out_bits", check_int(self.out_bits, "out_bits", lo=1, hi=62, where=where, error=ConfigError)
        )
        object.__setattr__(self, "signed", check_bool(self.signed, "signed", where=where, error=ConfigError))
        object.__setattr__(
            self,
            "in_offset",
            check_int(self.in_offset, "in_offset", lo=-(2**31), hi=2**31 - 1, where=where, error=ConfigError),
        )

    @property
    def shift(self) -> int:
        """``log2(div)`` (rounded down when div is not a power of two; that is reported, not used)."""
        return max(int(self.div).bit_length() - 1, 0)

    @property
    def out_range(self) -> tuple[int, int]:
        """Inclusive output range (the clamp bounds)."""
        return int_range(self.out_bits, self.signed)

    @property
    def per_channel(self) -> bool:
        """True when ``mul`` or ``add`` holds one value per channel."""
        return self.mul.ndim > 0 or self.add.ndim > 0


@dataclass(frozen=True)
class QGemm:
    """``acc[m, o] = wrap32(sum_k x[m, k] * weight[k, o] + bias[o])`` then ``requant`` (or raw acc)."""

    name: str
    weight: Any
    bias: Any = None
    requant: RequantShift | None = None

    def __post_init__(self) -> None:
        where = _name(self.name, "QGemm")
        object.__setattr__(self, "weight", _i64(self.weight, "weight", where, ndim=2))
        if self.bias is not None:
            object.__setattr__(self, "bias", _i64(self.bias, "bias", where, ndim=1))
            check_bias_shape(self.bias.shape, self.weight.shape, where)
        _channels(self.requant, self.weight.shape[1], where, "exact")

    @property
    def n_in(self) -> int:
        return int(self.weight.shape[0])

    @property
    def n_out(self) -> int:
        return int(self.weight.shape[1])

    @property
    def macs(self) -> int:
        """Multiply-accumulates per input row."""
        return int(self.weight.size)


@dataclass(frozen=True)
class QConv2d:
    """NHWC convolution (cross-correlation) with zero padding, then ``requant``.

    ``in_shape = (H, W, C)``; ``weight`` (kh, kw, C / groups, O); output (H_o, W_o, O) with
    ``H_o = (H + 2 p - kh) // stride + 1``. Input and output are flattened in HWC order.
    """

    name: str
    weight: Any
    in_shape: tuple[int, int, int]
    bias: Any = None
    requant: RequantShift | None = None
    stride: int = 1
    padding: int = 0
    groups: int = 1

    def __post_init__(self) -> None:
        where = _name(self.name, "QConv2d")
        object.__setattr__(self, "weight", _i64(self.weight, "weight", where, ndim=4))
        if self.bias is not None:
            object.__setattr__(self, "bias", _i64(self.bias, "bias", where, ndim=1))
        geometry = conv_geometry(self.weight.shape, self.in_shape, self.stride, self.padding, self.groups, where)
        for key, value in geometry.items():
            object.__setattr__(self, key, value)
        if self.bias is not None:
            check_bias_shape(self.bias.shape, self.weight.shape, where)
        _channels(self.requant, self.weight.shape[3], where, "exact")

    @property
    def out_shape(self) -> tuple[int, int, int]:
        h, w, _c = self.in_shape
        kh, kw = self.weight.shape[:2]
        return (
            (h + 2 * self.padding - kh) // self.stride + 1,
            (w + 2 * self.padding - kw) // self.stride + 1,
            int(self.weight.shape[3]),
        )

    @property
    def n_in(self) -> int:
        return int(np.prod(self.in_shape))

    @property
    def n_out(self) -> int:
        return int(np.prod(self.out_shape))

    @property
    def depthwise(self) -> bool:
        return self.groups > 1 and self.groups == self.in_shape[2] == self.weight.shape[3]

    @property
    def macs(self) -> int:
        ho, wo, o = self.out_shape
        kh, kw, cg, _ = self.weight.shape
        return int(ho * wo * o * kh * kw * cg)


@dataclass(frozen=True)
class QRequant:
    """A stand-alone RequantShift over ``n`` values (channel = last index modulo the parameter size)."""

    name: str
    n: int
    requant: RequantShift

    def __post_init__(self) -> None:
        where = _name(self.name, "QRequant")
        object.__setattr__(self, "n", check_int(self.n, "n", lo=1, hi=SIZE_MAX, where=where, error=ConfigError))
        check_type(self.requant, "requant", RequantShift, where=where, error=ConfigError)
        _channels(self.requant, self.n, where, "modulo")

    @property
    def n_in(self) -> int:
        return int(self.n)

    @property
    def n_out(self) -> int:
        return int(self.n)


@dataclass(frozen=True)
class QLIF:
    """Integer LIF from the RequantShift primitive (per neuron ``n``, one step)::

        t  = wrap32(wrap32(v * beta_mul) + wrap32(I * in_mul))
        t  = wrap32(t + add);  t = wrap32(t + 2^(shift-1)) if shift > 0      (round half up)
        v  = clamp(t >> shift, state range)                                  (arithmetic shift, saturate)
        z  = v >= threshold   (or v > threshold)
        v  = v - threshold (reset="subtract") or 0 (reset="zero") where z    (cannot wrap: 1 <= thr <= v)

    ``I`` is the previous layer's integer output (typically a raw int32 GEMM accumulator). The
    output is the spike vector ``z`` (0/1).
    """

    name: str
    beta_mul: Any
    in_mul: Any
    add: Any
    shift: int
    threshold: Any
    state_bits: int = 16
    reset: str = "subtract"
    compare: str = ">="

    def __post_init__(self) -> None:
        where = _name(self.name, "QLIF")
        object.__setattr__(self, "threshold", _i64(self.threshold, "threshold", where, ndim=1))
        n = self.threshold.size
        for key in ("beta_mul", "in_mul", "add"):
            arr = _i64(getattr(self, key), key, where, ndim=(0, 1))
            if arr.ndim and arr.shape not in ((n,), (1,)):
                raise ConfigError(
                    f"{key} shape",
                    value=f"{key} {arr.shape} for threshold ({n},)",
                    limit=f"() or ({n},)",
                    where=where,
                    fix=f"pass {key} per neuron or one for all",
                )
            object.__setattr__(self, key, arr)
        # shift and state width outside the chip's range are lif_options / shift_range violations of
        # check_constraints; what no int64 model can hold is refused here.
        object.__setattr__(self, "shift", check_int(self.shift, "shift", lo=0, hi=62, where=where, error=ConfigError))
        object.__setattr__(
            self, "state_bits", check_int(self.state_bits, "state_bits", lo=1, hi=62, where=where, error=ConfigError)
        )
        for key in ("reset", "compare"):
            check_type(getattr(self, key), key, str, where=where, error=ConfigError)

    @property
    def n(self) -> int:
        return int(self.threshold.size)

    @property
    def n_in(self) -> int:
        return self.n

    @property
    def n_out(self) -> int:
        return self.n

    @property
    def state_range(self) -> tuple[int, int]:
        return int_range(self.state_bits, True)


QLayer = QGemm | QConv2d | QRequant | QLIF


def check_bias_shape(bias_shape: tuple, weight_shape: tuple, where: str, error: type = ConfigError) -> None:
    """The bias has one entry per output (the weight's last axis); else ``error`` naming both shapes."""
    if bias_shape != (weight_shape[-1],):
        raise error(
            "bias shape",
            value=f"bias {bias_shape} for weight {weight_shape}",
            limit=f"({weight_shape[-1]},), one bias per output",
            where=where,
            fix="pass one bias per output channel",
        )


def conv_geometry(
    weight_shape: tuple, in_shape: Any, stride: Any, padding: Any, groups: Any, where: str, error: type = ConfigError
) -> dict[str, Any]:
    """Checked ``in_shape`` (H, W, C), ``stride`` >= 1, ``padding`` >= 0 and ``groups`` >= 1 of a convolution
    with HWIO ``weight_shape`` (kh, kw, C / groups, O): C and O divisible by ``groups``, the channels
    per group matching the weight, and an output of at least 1 x 1.

    Raises:
        ``error`` (ConfigError for integer layers, GraphError for float layers): the shapes disagree (the
        message names both); ConfigError: a malformed field.
    """
    if isinstance(in_shape, (str, bytes)) or not isinstance(in_shape, (tuple, list, np.ndarray)) or len(in_shape) != 3:
        raise ConfigError("in_shape", value=in_shape, limit="(H, W, C)", where=where, fix="pass three sizes (H, W, C)")
    h, w, c = (check_int(v, "in_shape", lo=1, hi=DIM_MAX, where=where, error=ConfigError) for v in in_shape)
    stride = check_int(stride, "stride", lo=1, where=where, error=ConfigError)
    padding = check_int(padding, "padding", lo=0, where=where, error=ConfigError)
    groups = check_int(groups, "groups", lo=1, where=where, error=ConfigError)
    kh, kw, cg, o = weight_shape
    if c != cg * groups or o % groups:
        raise error(
            "convolution shapes",
            value=f"weight {tuple(weight_shape)} (kh, kw, C/groups, O) with in_shape {(h, w, c)} and groups {groups}",
            limit=f"C = {c} = groups x {cg} and O divisible by groups",
            where=where,
            fix="pass HWIO weights matching in_shape and groups",
        )
    if h + 2 * padding < kh or w + 2 * padding < kw:
        raise error(
            "convolution shapes",
            value=f"kernel {kh}x{kw} over a padded input of {h + 2 * padding}x{w + 2 * padding}",
            limit="a kernel no larger than the padded input",
            where=where,
            fix="use a smaller kernel or more padding",
        )
    return {"in_shape": (h, w, c), "stride": stride, "padding": padding, "groups": groups}


# -- the mapper's output --------------------------------------------------------------------------
@dataclass(frozen=True)
class LayerReport:
    """What the mapper did with one integer layer.

    Attributes:
        name: the integer layer's name; kind: its type; fused: the float layers it implements.
        in_scale, out_scale: float value of one integer step at the input / output (out: spikes 1.0,
            raw accumulators ``s_in * s_w``, per channel).
        weight_scale: per-channel (or scalar) weight scales; weight_error: max |W - W_q s_w| / max|W|.
        mul_rel_error: largest relative error of ``mul / 2^s`` against the real multiplier.
        shift: the RequantShift / LIF shift. acc_range: accumulator value range (lo, hi) or None.
        npu_eligible, npu_reason: N-EUREKA eligibility and the rule that decides it.
        placement: where the constants live (L2/L3/WMEM). tile: the L1 :class:`TilePlan`.
    """

    name: str
    kind: str
    fused: tuple
    in_scale: Any
    out_scale: Any
    weight_scale: Any = None
    weight_error: float = 0.0
    mul_rel_error: float = 0.0
    shift: int = 0
    acc_range: tuple | None = None
    npu_eligible: bool = False
    npu_reason: str = ""
    placement: str = "L2"
    tile: TilePlan | None = None


@dataclass(frozen=True)
class Specification:
    """The mapper's output: the float layers, the integer :class:`SiracusaConfig` and the reports."""

    layers: tuple
    config: SiracusaConfig
    reports: tuple
    placement: Placement
    plans: tuple
    violations: tuple = field(default=())

    def report_table(self) -> str:
        """One line per integer layer: scales, shift, multiplier error, placement, tiles, NPU."""
        lines = [f"{'layer':<12} {'kind':<9} {'shift':>5} {'mul err':>9} {'w err':>7} {'mem':<4} {'tiles':>5}  NPU"]
        for r in self.reports:
            tiles = r.tile.n_tiles if r.tile is not None and r.tile.fits else "-"
            lines.append(
                f"{r.name:<12} {r.kind:<9} {r.shift:>5} {r.mul_rel_error:>9.2e} "
                f"{r.weight_error:>7.4f} {r.placement:<4} {tiles!s:>5}  "
                f"{'yes' if r.npu_eligible else 'no'}: {r.npu_reason}"
            )
        return "\n".join(lines)
