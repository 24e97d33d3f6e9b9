r"""Every Siracusa design rule as a function ``rule(context) -> Iterable[Violation]``, and their tables.

Each rule function is marked with :func:`~pondlib.devices.core.rules.rule`, which records its rule id;
the first paragraph of its docstring is the rule's prose. The public tables are built from the functions
(:func:`~pondlib.devices.core.rules.rule_table`), so table and code cannot drift:

* :data:`MAPPER_RULES` (re-exported by :mod:`~pondlib.devices.siracusa.mapper`): the rules the mapper
  checks on the float description (:data:`FLOAT_LAYER_RULES`, :data:`FLOAT_CHAIN_RULES`) and on the
  quantized multipliers (:data:`QUANTIZATION_RULES`);
* :data:`RULES` (re-exported by :mod:`~pondlib.devices.siracusa.config`): the rules of an integer
  configuration that :func:`~pondlib.devices.siracusa.config.check_constraints` checks: the chain's
  shapes (:data:`CHAIN_RULES`, a gate: nothing else is checked on a broken chain), each layer's integer
  ranges and overflow freedom (:data:`LAYER_RULES`, run layer by layer) and the deployment's tiling,
  memory and NPU rules (:data:`DEPLOYMENT_RULES`).

Per-layer rules run layer by layer (:func:`check_layers`), so the violations come in layer order and,
within a layer, in rule order.

Example:
    >>> import numpy as np
    >>> from pondlib.devices.siracusa.layers import GemmLayer
    >>> chain = float_chain([GemmLayer("a", np.ones((8, 4))), GemmLayer("b", np.ones((5, 4)))], n_input=8)
    >>> [(v.rule, v.module) for v in check_float_chain(chain)]
    [('layer_shape', 'b')]
    >>> RULES["div_power_of_two"], MAPPER_RULES["unique_names"]
    ('div is an exact power of two', 'every layer has its own name')
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pondlib.devices.core.intmath import int_range
from pondlib.devices.core.rules import Rule, RuleInfo, check_rules, rule, rule_info, rule_table
from pondlib.devices.siracusa.layers import Conv2dLayer, GemmLayer, IntLIFLayer, ReLU
from pondlib.devices.siracusa.limits import SiracusaLimits
from pondlib.devices.siracusa.specification import (
    COMPARISONS,
    QLIF,
    RESET_MODES,
    QConv2d,
    QGemm,
    RequantShift,
)
from pondlib.devices.siracusa.tiling import Placement, TilePlan, npu_eligibility
from pondlib.errors import Violation

if TYPE_CHECKING:  # annotations only: the configuration imports this module
    from pondlib.devices.siracusa.config import LayerRange, SiracusaConfig

__all__ = [
    "RuleInfo",
    "rule",
    "rule_info",
    "rule_table",
    "check_layers",
    "FloatLayerCheck",
    "FloatChainCheck",
    "float_chain",
    "check_float_chain",
    "Multiplier",
    "QuantizationCheck",
    "ChainCheck",
    "LayerCheck",
    "DeploymentCheck",
    "FLOAT_LAYER_RULES",
    "FLOAT_CHAIN_RULES",
    "QUANTIZATION_RULES",
    "CHAIN_RULES",
    "LAYER_RULES",
    "DEPLOYMENT_RULES",
    "MAPPER_RULES",
    "RULES",
]


_I32_LO, _I32_HI = int_range(32)


def check_layers(rules: Sequence[Rule], contexts: Iterable[Any]) -> list[Violation]:
    """Every violation of ``rules`` over the per-layer ``contexts``: layer by layer, in rule order."""
    return [v for context in contexts for v in check_rules(rules, context)]


# ------------------------------------------------------------------------------------------------
# The float description (mapper)
# ------------------------------------------------------------------------------------------------
_FLOAT_TYPES = (GemmLayer, Conv2dLayer, IntLIFLayer)


@dataclass(frozen=True)
class FloatLayerCheck:
    """One float layer description and the input size the chain gives it.

    Attributes:
        layer: the layer as given (any object: unsupported types are a violation, not a crash).
        n_in: the output size of the previous supported layer (the calibration width for the first).
    """

    layer: Any
    n_in: int

    @property
    def checked(self) -> bool:
        """Whether the value rules apply: a supported layer with parameters (a ReLU has none)."""
        return isinstance(self.layer, _FLOAT_TYPES)


@dataclass(frozen=True)
class FloatChainCheck:
    """The float description the mapper checks before quantizing.

    Attributes:
        layers: one :class:`FloatLayerCheck` per layer, in order.
        names: the names of the layers that have one, in order.
    """

    layers: tuple[FloatLayerCheck, ...]
    names: tuple[str, ...]


def float_chain(layers: Sequence[Any], n_input: int) -> FloatChainCheck:
    """The :class:`FloatChainCheck` of ``layers`` fed ``n_input`` values: a ReLU keeps the size, an
    unsupported layer is skipped (it is reported, and the size after it is unknown)."""
    out, n = [], n_input
    for layer in layers:
        out.append(FloatLayerCheck(layer, n))
        if isinstance(layer, _FLOAT_TYPES):
            n = layer.n_out
    names = tuple(layer.name for layer in layers if hasattr(layer, "name"))
    return FloatChainCheck(tuple(out), names)


@rule("unsupported_layer")
def unsupported_layer(c: FloatLayerCheck) -> Iterator[Violation]:
    """only GemmLayer, Conv2dLayer, ReLU and IntLIFLayer"""
    if not isinstance(c.layer, (*_FLOAT_TYPES, ReLU)):
        yield Violation(
            "unsupported_layer",
            getattr(c.layer, "name", "?"),
            type(c.layer).__name__,
            rule_info(unsupported_layer).prose,
            "describe the layer with a supported type",
        )


@rule("layer_shape")
def layer_size(c: FloatLayerCheck) -> Iterator[Violation]:
    """each layer's input size equals the previous layer's output size"""
    if c.checked and c.layer.n_in != c.n_in:
        yield Violation(
            "layer_shape", c.layer.name, f"{c.layer.n_in} inputs", f"{c.n_in}", "make consecutive layer sizes agree"
        )


@rule("invalid_parameter")
def invalid_parameter(c: FloatLayerCheck) -> Iterator[Violation]:
    """parameters are finite and have the documented shapes

    Weights, biases, leaks and thresholds are finite; a LIF's leak ``alpha`` is in [0, 1], its threshold
    > 0 and its reset and comparison modes documented. The layer arrays are mutable: they are checked
    again here, never clipped.
    """
    if not c.checked:
        return
    layer = c.layer
    for key in ("weight", "bias", "alpha", "threshold"):
        arr = getattr(layer, key, None)
        if arr is not None and not np.all(np.isfinite(arr)):
            yield Violation(
                "invalid_parameter",
                layer.name,
                f"{key} has NaN/inf",
                "finite",
                f"replace the non-finite values of {key}",
            )
    if not isinstance(layer, IntLIFLayer):
        return
    alpha, thr = np.asarray(layer.alpha, dtype=np.float64), np.asarray(layer.threshold, dtype=np.float64)
    for key, arr, bad, limit in (
        ("alpha", alpha, (alpha < 0) | (alpha > 1), "a leak factor in [0, 1]"),
        ("threshold", thr, thr <= 0, "> 0"),
    ):
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            yield Violation(
                "invalid_parameter",
                layer.name,
                f"{key}[{i}] = {float(arr.reshape(-1)[i])}",
                limit,
                f"fix {key} of {layer.name}",
            )
    if layer.reset not in RESET_MODES or layer.compare not in COMPARISONS:
        yield Violation(
            "invalid_parameter",
            layer.name,
            f"reset={layer.reset!r}, compare={layer.compare!r}",
            f"{RESET_MODES} / {COMPARISONS}",
            "use a documented mode",
        )


@rule("unique_names")
def unique_names(c: FloatChainCheck) -> Iterator[Violation]:
    """every layer has its own name"""
    for name in sorted({nm for nm in c.names if c.names.count(nm) > 1}):
        yield Violation(
            "unique_names",
            name,
            f"{c.names.count(name)} layers named {name!r}",
            "one",
            "give every layer its own name (placement and reports are by name)",
        )


#: Rules of one float layer (run layer by layer) and of the whole float chain.
FLOAT_LAYER_RULES: tuple[Rule, ...] = (unsupported_layer, layer_size, invalid_parameter)
FLOAT_CHAIN_RULES: tuple[Rule, ...] = (unique_names,)


def check_float_chain(chain: FloatChainCheck) -> list[Violation]:
    """Every violation of the float description: each layer's, layer by layer, then the chain's."""
    return check_layers(FLOAT_LAYER_RULES, chain.layers) + check_rules(FLOAT_CHAIN_RULES, chain)


@dataclass(frozen=True)
class Multiplier:
    """A real multiplier the quantizer rounded to an integer.

    Attributes:
        layer: the layer's name.
        real: the real multiplier (scalar or per channel / neuron): ``M = s_acc / s_out`` of a
            RequantShift, or ``gain s_I / s_v`` of a LIF input.
        integer: its integer ``round(real 2^shift)`` (RequantShift ``mul`` or LIF ``in_mul``).
        shift: the shift it was rounded at.
        lif: whether it is a LIF input multiplier (else a RequantShift's).
    """

    layer: str
    real: Any
    integer: Any
    shift: int
    lif: bool


@dataclass(frozen=True)
class QuantizationCheck:
    """The quantizer's rounded multipliers (in layer order) and the chip variant they were made for."""

    multipliers: tuple[Multiplier, ...]
    limits: SiracusaLimits


@rule("multiplier_underflow")
def multiplier_underflow(c: QuantizationCheck) -> Iterator[Violation]:
    """every real multiplier is representable (mul >= 1 at shift <= 31)

    A positive real multiplier that rounds to 0 at the largest usable shift would silence its channel.
    """
    lim = c.limits
    for m in c.multipliers:
        if m.lif:
            real = m.real
            if np.any((m.integer == 0) & (real != 0)):
                yield Violation(
                    "multiplier_underflow",
                    m.layer,
                    f"input multiplier {float(np.min(np.abs(real[real != 0]))):.3g} (gain x input scale / state scale)",
                    f">= 2^-{m.shift} (in_mul >= 1 at shift {m.shift})",
                    "rescale the layer: its input is negligible against its threshold and state range",
                )
        elif np.any((np.atleast_1d(m.integer) == 0) & (np.atleast_1d(m.real) > 0)):
            yield Violation(
                "multiplier_underflow",
                m.layer,
                f"real multiplier {float(np.min(m.real)):.3g}",
                f">= 2^-{lim.shift_max} (mul >= 1 at shift {lim.shift_max})",
                "rescale the layer (its outputs are negligible against its inputs)",
            )


#: Rules of the quantized multipliers.
QUANTIZATION_RULES: tuple[Rule, ...] = (multiplier_underflow,)

#: Rules the mapper checks on the float description (the integer rules are :data:`RULES`).
MAPPER_RULES: dict[str, str] = rule_table(*FLOAT_LAYER_RULES, *QUANTIZATION_RULES, *FLOAT_CHAIN_RULES)


# ------------------------------------------------------------------------------------------------
# The integer configuration (check_constraints)
# ------------------------------------------------------------------------------------------------
def _span(values: list[np.ndarray]) -> tuple[int, int]:
    return min(int(np.min(v)) for v in values), max(int(np.max(v)) for v in values)


def _outside_i32(lo: int, hi: int) -> bool:
    return lo < _I32_LO or hi > _I32_HI


@dataclass(frozen=True)
class ChainCheck:
    """The integer layer chain of a configuration (its shapes are checked before anything else)."""

    config: SiracusaConfig


@dataclass(frozen=True)
class LayerCheck:
    """One integer layer with its propagated value range (:class:`~pondlib.devices.siracusa.config.LayerRange`)."""

    layer: Any
    range: LayerRange
    limits: SiracusaLimits

    @property
    def requant(self) -> RequantShift | None:
        """The layer's RequantShift (None for a LIF or a GEMM/convolution emitting its raw accumulator)."""
        return getattr(self.layer, "requant", None)


@dataclass(frozen=True)
class DeploymentCheck:
    """A configuration with its L1 tile plans (one per layer, or None) and its memory placement."""

    config: SiracusaConfig
    limits: SiracusaLimits
    plans: tuple[TilePlan | None, ...]
    placement: Placement


@rule("layer_shape")
def chain_shapes(c: ChainCheck) -> Iterator[Violation]:
    """each layer's input size equals the previous layer's output size

    Also: a GEMM's weight is (K, O), a convolution's (kh, kw, C/groups, O) with C its input channels.
    """
    n_prev = c.config.n_input
    for layer in c.config.layers:
        if layer.n_in != n_prev:
            yield Violation(
                "layer_shape",
                layer.name,
                f"{layer.n_in} inputs",
                f"{n_prev} (the previous layer's outputs)",
                "make consecutive layer sizes agree",
            )
        n_prev = layer.n_out
        if isinstance(layer, QConv2d) and (
            layer.weight.ndim != 4 or layer.in_shape[2] != layer.weight.shape[2] * layer.groups
        ):
            yield Violation(
                "layer_shape",
                layer.name,
                f"weight {layer.weight.shape}",
                f"(kh, kw, C/groups, O) with C = {layer.in_shape[2]}",
                "pass HWIO weights matching in_shape and groups",
            )
        if isinstance(layer, QGemm) and layer.weight.ndim != 2:
            yield Violation(
                "layer_shape", layer.name, f"weight {layer.weight.shape}", "(K, O)", "pass a 2-D (K, O) weight"
            )


@rule("weight_range")
def weight_range(c: LayerCheck) -> Iterator[Violation]:
    """weights within the signed weight range (int8)"""
    if isinstance(c.layer, (QGemm, QConv2d)):
        w, (w_lo, w_hi) = c.layer.weight, c.limits.weight_range
        if w.size and (int(w.min()) < w_lo or int(w.max()) > w_hi):
            yield Violation(
                "weight_range",
                c.layer.name,
                int(w.flat[np.argmax(np.abs(w))]),
                f"[{w_lo}, {w_hi}]",
                "quantize weights to int8",
            )


@rule("bias_range")
def bias_range(c: LayerCheck) -> Iterator[Violation]:
    """biases within int32"""
    bias = c.layer.bias if isinstance(c.layer, (QGemm, QConv2d)) else None
    b_lo, b_hi = c.limits.bias_range
    if bias is not None and bias.size and (int(bias.min()) < b_lo or int(bias.max()) > b_hi):
        yield Violation(
            "bias_range",
            c.layer.name,
            int(bias.flat[np.argmax(np.abs(bias))]),
            "int32",
            "fold the bias into the RequantShift add instead",
        )


@rule("acc_overflow")
def acc_overflow(c: LayerCheck) -> Iterator[Violation]:
    """the accumulator cannot leave int32 over the input value range"""
    if isinstance(c.layer, (QGemm, QConv2d)):
        lo, hi = _span([c.range.acc_lo, c.range.acc_hi])
        if _outside_i32(lo, hi):
            yield Violation(
                "acc_overflow",
                c.layer.name,
                f"accumulator in [{lo}, {hi}]",
                f"int32 [{_I32_LO}, {_I32_HI}]",
                "reduce K, the weight magnitudes or the input range",
            )


def _int32_parameter(c: LayerCheck, key: str) -> Iterator[Violation]:
    """A ``{key}_range`` violation when the RequantShift's ``key`` array leaves int32."""
    rq = c.requant
    arr = getattr(rq, key) if rq is not None else None
    if arr is not None and arr.size and (int(arr.min()) < _I32_LO or int(arr.max()) > _I32_HI):
        yield Violation(
            f"{key}_range",
            c.layer.name,
            int(arr.flat[np.argmax(np.abs(arr))]),
            "int32",
            f"choose a smaller shift so that {key} fits int32",
        )


@rule("mul_range")
def mul_range(c: LayerCheck) -> Iterator[Violation]:
    """mul within int32"""
    yield from _int32_parameter(c, "mul")


@rule("add_range")
def add_range(c: LayerCheck) -> Iterator[Violation]:
    """add within int32"""
    yield from _int32_parameter(c, "add")


def _div_ok(rq: RequantShift) -> bool:
    return rq.div >= 1 and not rq.div & (rq.div - 1)


@rule("div_power_of_two")
def div_power_of_two(c: LayerCheck) -> Iterator[Violation]:
    """div is an exact power of two"""
    rq = c.requant
    if rq is not None and not _div_ok(rq):
        yield Violation(
            "div_power_of_two",
            c.layer.name,
            rq.div,
            "an exact power of two 2^s",
            "RequantShift divides by a shift: use div = 2^s and rescale mul/add",
        )


def _lif_options_ok(layer: QLIF, lim: SiracusaLimits) -> bool:
    return 2 <= layer.state_bits <= lim.state_bits_max and layer.reset in RESET_MODES and layer.compare in COMPARISONS


def _lif_bad_shape(layer: QLIF) -> str | None:
    """The first of ``beta_mul, in_mul, add`` that is neither a scalar nor one value per neuron."""
    return next(
        (k for k in ("beta_mul", "in_mul", "add") if getattr(layer, k).shape not in ((), (1,), (layer.n,))), None
    )


def _lif_checked(c: LayerCheck, *, shift: bool = True) -> bool:
    """Whether ``c`` is a LIF whose options and parameter shapes (and, with ``shift``, shift) are valid:
    the later LIF rules only make sense then."""
    layer = c.layer
    return (
        isinstance(layer, QLIF)
        and _lif_options_ok(layer, c.limits)
        and _lif_bad_shape(layer) is None
        and (not shift or 0 <= layer.shift <= c.limits.shift_max)
    )


@rule("shift_range")
def shift_range(c: LayerCheck) -> Iterator[Violation]:
    """shift (log2 div) within 0..limits.shift_max

    For a RequantShift whose ``div`` is a power of two, and for a LIF (valid options and shapes) its
    ``shift``.
    """
    rq, lim = c.requant, c.limits
    if rq is not None and _div_ok(rq) and rq.shift > lim.shift_max:
        yield Violation(
            "shift_range",
            c.layer.name,
            rq.shift,
            f"0..{lim.shift_max}",
            f"use div <= 2^{lim.shift_max} and scale mul down",
        )
    elif _lif_checked(c, shift=False) and not 0 <= c.layer.shift <= lim.shift_max:
        yield Violation(
            "shift_range",
            c.layer.name,
            c.layer.shift,
            f"0..{lim.shift_max}",
            "use a smaller shift and smaller multipliers",
        )


@rule("out_bits")
def out_bits(c: LayerCheck) -> Iterator[Violation]:
    """requantized outputs are 1..limits.act_bits wide"""
    rq, act = c.requant, c.limits.act_bits
    if rq is not None and not 1 <= rq.out_bits <= act:
        yield Violation("out_bits", c.layer.name, rq.out_bits, f"1..{act}", f"requantize to at most {act} bits")


@rule("requant_overflow")
def requant_overflow(c: LayerCheck) -> Iterator[Violation]:
    """(acc + in_offset) * mul, + add and + 2^(s-1) stay within int32 over the range

    Every intermediate of the documented sequence must stay inside int32, else the cores silently wrap;
    the products are linear in the input, so their extremes are at the ends of its range. Computed in
    Python integers (object arrays): exact even where an invalid layer would overflow int64. The first
    stage that leaves int32 is reported.
    """
    rq = c.requant
    if rq is None:
        return
    mul = rq.mul.astype(object)
    xs_lo = np.asarray(c.range.acc_lo).astype(object) + rq.in_offset
    xs_hi = np.asarray(c.range.acc_hi).astype(object) + rq.in_offset
    p1, p2 = xs_lo * mul, xs_hi * mul
    t_lo, t_hi = np.minimum(p1, p2), np.maximum(p1, p2)
    stages = [("(acc + in_offset)", xs_lo, xs_hi), ("(acc + in_offset) * mul", t_lo, t_hi)]
    t_lo, t_hi = t_lo + rq.add, t_hi + rq.add
    stages.append(("acc * mul + add", t_lo, t_hi))
    if rq.shift > 0:
        rnd = 1 << (rq.shift - 1)
        stages.append(("acc * mul + add + 2^(s-1)", t_lo + rnd, t_hi + rnd))
    yield from _first_int32_overflow(
        "requant_overflow", c.layer.name, stages, "use a smaller mul (a smaller shift) or narrower weights/inputs"
    )


def _first_int32_overflow(key: str, name: str, stages: list, remedy: str) -> Iterator[Violation]:
    """A ``key`` violation for the first ``(label, lo, hi)`` stage whose span leaves int32."""
    for label, lo_, hi_ in stages:
        lo, hi = _span([lo_, hi_])
        if _outside_i32(lo, hi):
            yield Violation(key, name, f"{label} in [{lo}, {hi}]", f"int32 [{_I32_LO}, {_I32_HI}]", remedy)
            return


@rule("lif_options")
def lif_options(c: LayerCheck) -> Iterator[Violation]:
    """LIF state width 2..limits.state_bits_max, reset and comparison modes known"""
    layer, lim = c.layer, c.limits
    if isinstance(layer, QLIF) and not _lif_options_ok(layer, lim):
        yield Violation(
            "lif_options",
            layer.name,
            f"state_bits={layer.state_bits}, reset={layer.reset!r}, compare={layer.compare!r}",
            f"state_bits 2..{lim.state_bits_max}, reset in {RESET_MODES}, compare in {COMPARISONS}",
            "use the documented options",
        )


@rule("layer_shape", extends=True)
def lif_parameter_shapes(c: LayerCheck) -> Iterator[Violation]:
    """a LIF's ``beta_mul``, ``in_mul`` and ``add`` are scalars or one value per neuron (valid options)"""
    layer = c.layer
    key = _lif_bad_shape(layer) if isinstance(layer, QLIF) and _lif_options_ok(layer, c.limits) else None
    if key is not None:
        yield Violation(
            "layer_shape",
            layer.name,
            f"{key} shape {getattr(layer, key).shape}",
            f"(), (1,) or ({layer.n},)",
            f"pass {key} per neuron or as a scalar",
        )


@rule("lif_threshold")
def lif_threshold(c: LayerCheck) -> Iterator[Violation]:
    """LIF threshold within 1..the state maximum"""
    if _lif_checked(c):
        _, s_hi = c.layer.state_range
        thr = c.layer.threshold
        if int(thr.min()) < 1 or int(thr.max()) > s_hi:
            yield Violation(
                "lif_threshold",
                c.layer.name,
                int(thr.min()) if int(thr.min()) < 1 else int(thr.max()),
                f"1..{s_hi}",
                "rescale the state so the threshold fits the state width",
            )


@rule("lif_overflow")
def lif_overflow(c: LayerCheck) -> Iterator[Violation]:
    """v*beta_mul, I*in_mul, their sum, + add and + 2^(s-1) stay within int32

    Over the whole state range and the LIF's input range: each intermediate wraps on the cores. Computed
    in Python integers (object arrays), exact even where an invalid layer would overflow int64; the first
    stage that leaves int32 is reported.
    """
    if not _lif_checked(c):
        return
    layer, rng = c.layer, c.range
    s_lo, s_hi = layer.state_range
    zero = np.zeros(layer.n, dtype=np.int64).astype(object)
    beta, in_mul, add_ = (layer.beta_mul.astype(object), layer.in_mul.astype(object), layer.add.astype(object))
    v_terms = np.stack([zero + s_lo * beta, zero + s_hi * beta])
    i_terms = np.stack([zero + rng.in_lo * in_mul, zero + rng.in_hi * in_mul])
    v_lo, v_hi = v_terms.min(axis=0), v_terms.max(axis=0)
    i_lo, i_hi = i_terms.min(axis=0), i_terms.max(axis=0)
    rnd = (1 << (layer.shift - 1)) if layer.shift > 0 else 0
    stages = [
        ("v * beta_mul", v_lo, v_hi),
        ("I * in_mul", i_lo, i_hi),
        ("v*beta_mul + I*in_mul", v_lo + i_lo, v_hi + i_hi),
        ("... + add", v_lo + i_lo + add_, v_hi + i_hi + add_),
        ("... + 2^(s-1)", v_lo + i_lo + add_ + rnd, v_hi + i_hi + add_ + rnd),
    ]
    yield from _first_int32_overflow(
        "lif_overflow", layer.name, stages, "use a smaller shift (smaller multipliers) or a narrower state"
    )


@rule("gemm_chunk")
def gemm_chunk(c: DeploymentCheck) -> Iterator[Violation]:
    """cluster GEMMs with O >= 16 have O % 16 == 0 (per-core chunk ceil(O/8) even)"""
    lim, q = c.limits, c.limits.gemm_chunk_quantum
    for layer in c.config.layers:
        if isinstance(layer, QGemm) and layer.name not in c.config.npu_layers:
            o = layer.n_out
            if o >= q and o % q:
                yield Violation(
                    "gemm_chunk",
                    str(layer.name),
                    f"O = {o}",
                    f"a multiple of {q} when O >= {q} (per-core chunk ceil(O/{lim.n_cores}) even)",
                    f"pad the layer to {-(-o // q) * q} outputs (zero weights)",
                )


@rule("l1_tile_fit")
def l1_tile_fit(c: DeploymentCheck) -> Iterator[Violation]:
    """one L1 tile (K never tiled) fits the L1 tile budget"""
    for plan in c.plans:
        if plan is not None and not plan.fits:
            yield Violation(
                "l1_tile_fit",
                plan.layer,
                f"{plan.min_bytes} B for the smallest tile",
                f"{plan.budget} B L1 tile budget",
                plan.reason,
            )


@rule("l2_fit")
def l2_fit(c: DeploymentCheck) -> Iterator[Violation]:
    """peak live activations (and LIF states) fit L2

    Found by :func:`~pondlib.devices.siracusa.tiling.place_memory` (the placement's ``l2_fit`` violations).
    """
    yield from (v for v in c.placement.violations if v.rule == "l2_fit")


@rule("l3_fit")
def l3_fit(c: DeploymentCheck) -> Iterator[Violation]:
    """weights placed off-chip fit L3

    Found by :func:`~pondlib.devices.siracusa.tiling.place_memory` (the placement's ``l3_fit`` violations).
    """
    yield from (v for v in c.placement.violations if v.rule == "l3_fit")


@rule("npu_required")
def npu_required(c: DeploymentCheck) -> Iterator[Violation]:
    """layers sent to the NPU are NPU-eligible"""
    for layer in c.config.layers:
        if layer.name in c.config.npu_layers:
            ok, why = npu_eligibility(layer, c.limits)
            if not ok:
                yield Violation(
                    "npu_required",
                    layer.name,
                    why,
                    "an NPU-eligible layer",
                    "run this layer on the cluster (remove it from npu_layers)",
                )


#: The chain's shape rules (a gate), each layer's rules (run layer by layer), the deployment's rules.
CHAIN_RULES: tuple[Rule, ...] = (chain_shapes,)
LAYER_RULES: tuple[Rule, ...] = (
    weight_range,
    bias_range,
    acc_overflow,
    mul_range,
    add_range,
    div_power_of_two,
    shift_range,
    out_bits,
    requant_overflow,
    lif_options,
    lif_parameter_shapes,
    lif_threshold,
    lif_overflow,
)
DEPLOYMENT_RULES: tuple[Rule, ...] = (gemm_chunk, l1_tile_fit, l2_fit, l3_fit, npu_required)

#: Every rule :func:`~pondlib.devices.siracusa.config.check_constraints` checks: rule id -> what it requires.
RULES: dict[str, str] = rule_table(*CHAIN_RULES, *LAYER_RULES, *DEPLOYMENT_RULES)
