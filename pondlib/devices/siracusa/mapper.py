r"""Map float layers (or a pondlib graph) to Siracusa integer layers: quantize, place, tile, check.

**Input.** A sequence of typed float layer descriptions (pondlib.nn has no Conv2d/ReLU yet, so the
mapper defines its own), or a graph / ``pondlib.nn`` network of ``LinearWeights`` and ``LIFNeurons``
(converted by :func:`layers_from_graph`):

=====================  ==========================================================================
``GemmLayer``          ``y = x @ weight + bias``; weight (K, O), bias (O,) or None
``Conv2dLayer``        NHWC cross-correlation; weight (kh, kw, C/groups, O); input (H, W, C) flat HWC
``ReLU``               ``y = max(x, 0)`` (fused into a preceding GEMM/conv as an unsigned RequantShift)
``IntLIFLayer``        ``v = alpha v + gain I + bias``; spike ``z = v >= threshold`` (or ``>``); reset
                       ``v -= threshold z`` or ``v = 0``; one spike per step; state ``state_bits`` wide
=====================  ==========================================================================

**Quantization** (scales from the float model run on ``calibration`` data):

* input: ``s_in = max|x| / 127`` (signed) or ``max x / 255`` (non-negative data, uint8) unless given;
* weights: symmetric int8, ``s_w[o] = max_k |W[k, o]| / 127`` per output channel (``granularity=
  "channel"``) or one scale per tensor (``"tensor"``); ``W_q = round(W / s_w)``;
* outputs: ``s_out = max|y| / 127`` (signed) or ``max y / 255`` (fused ReLU, unsigned);
* RequantShift (:func:`requant_from_scale`): real multiplier ``M = s_in s_w / s_out``, addend
  ``A = bias / s_out``; the shift ``s`` is the largest in ``0..31`` with ``mul = round(M 2^s)`` and
  ``add = round(A 2^s)`` such that ``acc * mul + add + 2^(s-1)`` cannot overflow int32 over the
  accumulator's value range (computed from the actual integer weights, not ``K * 127 * 127``).
  The relative multiplier error ``|mul / 2^s - M| / M`` is reported per layer;
* GEMM -> LIF: the GEMM emits its raw int32 accumulator (scale ``s_acc = s_in s_w``), and the LIF's
  ``in_mul = round(gain s_acc / s_v 2^s)``, ``beta_mul = round(alpha 2^s)``, ``add = round((bias +
  gain b_gemm) / s_v 2^s)``, ``threshold = round(theta / s_v)``, with one state scale
  ``s_v = max(max|v|, max theta) / (2^(b-1) - 1)`` from calibration (:func:`state_scales`), unless
  ``state_scale=`` pins it (one float for every LIF layer, or ``{layer name: float}``): a model trained
  on fixed integers (:mod:`pondlib.devices.siracusa.aware`) is then reproduced exactly, whatever the
  calibration data's membrane peak. The LIF emits spikes (scale 1).

**Checks.** Every rule of :data:`~pondlib.devices.siracusa.config.RULES` plus the mapper's own
(:data:`MAPPER_RULES`) is checked, each rule a function of :mod:`pondlib.devices.siracusa.rules`, and
*all* violations are raised together in one :class:`~pondlib.errors.ConstraintError` (``check=False``
returns them in ``spec.violations``). The float description is checked before quantizing (its
violations are raised whatever ``check``); then the rounded multipliers and the integer configuration.

**Malformed input** is refused before any arithmetic, with the error naming the field: the layer
constructors raise :class:`~pondlib.errors.GraphError` (non-finite or wrong-typed arrays, mismatched
shapes naming both, a threshold <= 0, a leak outside [0, 1]); the mapper raises
:class:`~pondlib.errors.QuantizationError` for bad calibration data and for any scale (input, weights,
accumulator, output, LIF state, multiplier, addend) that is not a finite float64 within
[``SCALE_MIN``, ``SCALE_MAX``] (subnormal or huge weights or data: an infinite or zero scale would turn
every integer into garbage), and :class:`~pondlib.errors.ConfigError` for bad arguments. Integers that
no shift brings into int32 are saturated to int64 *before* the cast and reported (``mul_range``,
``lif_overflow``), never wrapped. All-zero calibration data (any scale would do) use ``1e-30``.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> layers = [GemmLayer("fc1", rng.normal(size=(8, 16)), np.zeros(16)), ReLU("relu1"),
    ...           GemmLayer("fc2", rng.normal(size=(16, 4)))]
    >>> x = rng.normal(size=(100, 8))
    >>> spec = mapper(layers, calibration=x)
    >>> [type(q).__name__ for q in spec.config.layers], spec.config.layers[0].requant.signed
    (['QGemm', 'QGemm'], False)
    >>> [r.fused for r in spec.reports]
    [('fc1', 'relu1'), ('fc2',)]
    >>> all(r.mul_rel_error < 1e-4 for r in spec.reports)   # int32 headroom bounds the precision
    True
    >>> from pondlib.errors import ConstraintError
    >>> bad = [GemmLayer("fc1", np.ones((8, 20))), GemmLayer("fc2", np.ones((20, 4)) * 1e-9, np.full(4, 1e3))]
    >>> try:
    ...     mapper(bad, calibration=x)
    ... except ConstraintError as err:
    ...     print(sorted(set(err.rules)))
    ['gemm_chunk', 'multiplier_underflow']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pondlib.devices.core.intmath import int_range, sat
from pondlib.devices.core.rules import check_rules, raise_violations
from pondlib.devices.siracusa.config import SiracusaConfig, check_constraints
from pondlib.devices.siracusa.layers import (
    Conv2dLayer,
    GemmLayer,
    IntLIFLayer,
    ReLU,
    _float_layers,
    float_forward,
    layers_from_graph,
)
from pondlib.devices.siracusa.limits import SiracusaLimits, get_limits
from pondlib.devices.siracusa.rules import (
    MAPPER_RULES,
    QUANTIZATION_RULES,
    Multiplier,
    QuantizationCheck,
    check_float_chain,
    float_chain,
)
from pondlib.devices.siracusa.specification import (
    QLIF,
    LayerReport,
    QConv2d,
    QGemm,
    QRequant,
    RequantShift,
    Specification,
)
from pondlib.devices.siracusa.tiling import ROWS_MAX, npu_eligibility, place_memory, plan_tiles
from pondlib.errors import ConfigError, GraphError, QuantizationError
from pondlib.validate import as_float_array, check_bool, check_choice, check_float, check_int

__all__ = [
    "GemmLayer",
    "Conv2dLayer",
    "ReLU",
    "IntLIFLayer",
    "layers_from_graph",
    "float_forward",
    "requant_from_scale",
    "mapper",
    "state_scales",
    "MAPPER_RULES",
]

#: Every quantization scale (input, weights, outputs, accumulators, LIF state, multipliers) must be a
#: finite float64 within [SCALE_MIN, SCALE_MAX]: the smallest normal double up to 2^1000, so that the
#: products and quotients the quantizer forms never overflow or underflow to 0.
SCALE_MIN = float(np.finfo(np.float64).tiny)
SCALE_MAX = 2.0**1000


# ------------------------------------------------------------------------------------------------
# RequantShift from float scales
# ------------------------------------------------------------------------------------------------
def requant_from_scale(
    M: Any,
    acc_lo: Any,
    acc_hi: Any,
    add: Any = 0.0,
    out_bits: int = 8,
    signed: bool = True,
    limits: SiracusaLimits | str | None = None,
) -> tuple[RequantShift, float]:
    """RequantShift approximating ``y = M * acc + add`` and its largest relative multiplier error.

    The shift is the largest ``s <= limits.shift_max`` for which ``mul = round(M 2^s)`` and
    ``add_q = round(add 2^s)`` keep every intermediate inside int32 for ``acc`` in
    ``[acc_lo, acc_hi]`` (per channel). ``M`` must be >= 0 (symmetric scales are positive). When no
    shift fits (a multiplier or addend beyond int32), shift 0 is used and the values are kept, saturated
    to int64, for :func:`~pondlib.devices.siracusa.config.check_constraints` to report.

    Raises:
        QuantizationError: ``M`` negative, non-finite or above ``SCALE_MAX``; non-finite ``add``,
            ``acc_lo`` or ``acc_hi``; shapes that do not broadcast; ``out_bits`` outside 1..32.

    Example:
        >>> rq, err = requant_from_scale(0.0123, -1000, 1000)
        >>> rq.div == 2 ** rq.shift, rq.shift, int(rq.mul), err < 1e-6
        (True, 27, 1650878, True)
        >>> rq, err = requant_from_scale(0.0123, -10**8, 10**8)   # a large value range forces a small shift
        >>> rq.shift, int(rq.mul), round(err, 4)
        (10, 13, 0.0321)
    """
    lim = get_limits(limits)
    where = "requant_from_scale"
    M = as_float_array(
        M,
        "M",
        lo=0.0,
        hi=SCALE_MAX,
        where=where,
        error=QuantizationError,
        ndim=(0, 1),
        fix="pass a finite multiplier M >= 0 (symmetric scales are positive)",
    )
    A = as_float_array(add, "add", where=where, error=QuantizationError, ndim=(0, 1))
    lo = as_float_array(acc_lo, "acc_lo", where=where, error=QuantizationError, ndim=(0, 1))
    hi = as_float_array(acc_hi, "acc_hi", where=where, error=QuantizationError, ndim=(0, 1))
    out_bits = check_int(out_bits, "out_bits", lo=1, hi=32, where=where, error=QuantizationError)
    signed = check_bool(signed, "signed", where=where, error=QuantizationError)
    try:
        np.broadcast_shapes(M.shape, A.shape, lo.shape, hi.shape)
    except ValueError:
        raise QuantizationError(
            "shapes",
            value=f"M {M.shape}, add {A.shape}, acc_lo {lo.shape}, acc_hi {hi.shape}",
            limit="scalars or one value per channel",
            where=where,
            fix="pass per-channel arrays of one length",
        ) from None
    if M.ndim:
        A = np.broadcast_to(A, M.shape)
    amax = np.maximum(np.abs(lo), np.abs(hi))
    top = float((1 << 31) - 1)
    chosen = 0
    with np.errstate(over="ignore"):  # an overflowing product is inf: that shift does not fit
        for s in range(lim.shift_max, -1, -1):
            mul = np.rint(M * 2.0**s)
            addq = np.rint(A * 2.0**s)
            rnd = 2.0 ** (s - 1) if s > 0 else 0.0
            fits = np.all(amax * mul + np.abs(addq) + rnd <= top)
            if np.all(mul <= top) and np.all(np.abs(addq) <= top) and fits:
                chosen = s
                break
    s = chosen
    # Saturated before the cast: when no shift fits int32 (a multiplier or addend beyond 2^31), the
    # value stays beyond int32 within int64 and check_constraints reports mul_range / add_range.
    mul = sat(np.rint(M * 2.0**s), 63)
    addq = sat(np.rint(A * 2.0**s), 63)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(M > 0, np.abs(mul / 2.0**s - M) / np.where(M > 0, M, 1.0), 0.0)
    return (
        RequantShift(mul=mul, add=addq, div=1 << s, out_bits=out_bits, signed=signed),
        float(np.max(rel)) if rel.size else 0.0,
    )


# ------------------------------------------------------------------------------------------------
def _quant_weights(W: np.ndarray, granularity: str, qmax: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Symmetric int8 weights, their scales ``max|W| / qmax`` per channel (or tensor; 1e-30 / qmax for an
    all-zero channel), and the largest error relative to ``max|W|``. Subnormal or huge weights give a
    scale outside [SCALE_MIN, SCALE_MAX]: a QuantizationError, never an infinite or zero scale."""
    w2 = W.reshape(-1, W.shape[-1])
    if granularity == "tensor":
        s = np.full(W.shape[-1], _nonzero(float(np.max(np.abs(w2)))) / qmax)
    else:
        top = np.max(np.abs(w2), axis=0)
        s = np.where(top > 0, top, 1e-30) / qmax
    if np.any(s < SCALE_MIN):
        return np.zeros(W.shape, dtype=np.int64), s, 0.0  # the caller reports the scale
    Wq = np.clip(np.rint(W / s), -qmax, qmax).astype(np.int64)  # symmetric: -128 unused
    m = float(np.max(np.abs(W))) if W.size else 0.0
    err = float(np.max(np.abs(W / m - Wq * (s / m)))) if m > 0 else 0.0
    return Wq, s, err


@dataclass(frozen=True)
class _Mapping:
    """The mapper's arguments, each checked once (see :func:`mapper` for their meaning).

    Attributes:
        layers: the float layer descriptions, in order (not yet checked against the rules).
        x: the calibration data, float64 (B, N_in) or (B, T, N_in).
        limits: the Siracusa variant.
        state_scale: pinned LIF state scales ``{LIF layer name: s_v}`` (empty: all calibrated).
        input_signed, input_scale: the input quantization, None where calibrated.
    """

    layers: tuple
    x: np.ndarray
    limits: SiracusaLimits
    granularity: str
    npu: str
    rows: int
    buffering: int
    l1_budget: int | None
    use_weight_memory: bool
    check: bool
    input_signed: bool | None
    input_scale: float | None
    state_scale: dict[str, float]


@dataclass(frozen=True)
class _Accumulator:
    """A GEMM/convolution's raw int32 accumulator on its way into a LIF: its scale ``s_acc`` (per
    channel) and the float bias the LIF folds into its addend."""

    scale: Any
    bias: np.ndarray


@dataclass(frozen=True)
class _Stream:
    """What one layer hands the next: the float value of one integer step (scalar or per channel), the
    integer range ``[lo, hi]`` of the values, and a raw accumulator awaiting its LIF (else None)."""

    scale: Any
    lo: int
    hi: int
    accumulator: _Accumulator | None = None


@dataclass(frozen=True)
class _Step:
    """One quantized integer layer: the layer, its report fields, what it hands on, how many float
    layers it consumed (2 for a GEMM/convolution with its fused ReLU) and its rounded multiplier."""

    q: Any
    info: dict
    stream: _Stream
    consumed: int = 1
    multiplier: Multiplier | None = None


@dataclass(frozen=True)
class _Quantized:
    """The quantized chain: integer layers and report fields (in order), the rounded multipliers, the
    input quantization and the float value of one output step."""

    layers: tuple
    infos: tuple[dict, ...]
    multipliers: tuple[Multiplier, ...]
    input_bits: int
    input_signed: bool
    input_scale: float
    output_scale: float


def mapper(
    layers: Any,
    limits: SiracusaLimits | str | None = None,
    *,
    calibration: Any,
    input_scale: float | None = None,
    input_signed: bool | None = None,
    granularity: str = "channel",
    rows: int = 1,
    buffering: int = 2,
    l1_budget: int | None = None,
    npu: str = "off",
    use_weight_memory: bool = False,
    drop_synapse: bool = False,
    check: bool = True,
    state_scale: float | dict[str, float] | None = None,
) -> Specification:
    """Quantize, place and tile ``layers`` for Siracusa, and check every rule (see the module docstring).

    The float description is checked first (:data:`MAPPER_RULES` but ``multiplier_underflow``); its
    violations are raised together whatever ``check`` (quantization cannot proceed past a broken chain).
    Then the layers are quantized, and the rounded multipliers (``multiplier_underflow``) and the
    integer configuration (:data:`~pondlib.devices.siracusa.config.RULES`) are checked.

    Args:
        layers: float layer descriptions, a graph, or a pondlib.nn network (:func:`layers_from_graph`).
        limits: a :class:`SiracusaLimits` or its short name.
        calibration: float input (B, N_in) or (B, T, N_in) that sets every activation scale.
        input_scale, input_signed: override the input quantization.
        state_scale: override the LIF state scale ``s_v`` (float value of one state step, > 0): one float
            for every LIF layer, or a dict ``{LIF layer name: float}`` (the others are calibrated). With it
            the membrane peak of the calibration data no longer matters to the LIF integers.
        granularity: ``"channel"`` (per-channel weight scales and multipliers) or ``"tensor"``.
        rows: input rows per inference (GEMM M). buffering: 1 or 2 (L1). l1_budget: bytes (None: limits).
        npu: ``"off"`` (cluster only; eligibility still reported), ``"auto"`` (eligible layers on the
            NPU) or ``"all"`` (every GEMM/conv on the NPU; ineligible ones are violations).
        use_weight_memory: NPU layers' weights in the weight memory.
        drop_synapse: see :func:`layers_from_graph`.
        check: raise one ConstraintError with every violation (else return them in the spec).
    """
    m = _mapping(
        layers,
        limits,
        calibration=calibration,
        input_scale=input_scale,
        input_signed=input_signed,
        granularity=granularity,
        rows=rows,
        buffering=buffering,
        l1_budget=l1_budget,
        npu=npu,
        use_weight_memory=use_weight_memory,
        drop_synapse=drop_synapse,
        check=check,
        state_scale=state_scale,
    )
    raise_violations(check_float_chain(float_chain(m.layers, m.x.shape[-1])), m.limits.name)
    return _specification(m, _quantize(m))


_WHERE = "siracusa.mapper"


def _mapping(
    layers: Any,
    limits: Any,
    *,
    calibration: Any,
    input_scale: Any,
    input_signed: Any,
    granularity: Any,
    rows: Any,
    buffering: Any,
    l1_budget: Any,
    npu: Any,
    use_weight_memory: Any,
    drop_synapse: Any,
    check: Any,
    state_scale: Any,
) -> _Mapping:
    """The mapper's arguments as a :class:`_Mapping`, each checked in turn (the first bad one raises:
    GraphError for the layers, QuantizationError for quantization settings and the calibration data,
    ConfigError for placement and tiling settings)."""
    lim = get_limits(limits)
    where = _WHERE
    layers = _layer_list(layers, drop_synapse)
    check_choice(
        granularity,
        "granularity",
        ("channel", "tensor"),
        where=where,
        error=QuantizationError,
        fix="choose per-channel or per-tensor scales",
    )
    check_choice(npu, "npu mode", ("off", "auto", "all"), where=where, error=QuantizationError, fix="choose one")
    rows = check_int(rows, "rows", lo=1, hi=ROWS_MAX, where=where, error=ConfigError)
    buffering = check_int(buffering, "buffering", lo=1, hi=2, where=where, error=ConfigError)
    if l1_budget is not None:
        l1_budget = check_int(l1_budget, "l1_budget", lo=1, where=where, error=ConfigError)
    use_weight_memory = check_bool(use_weight_memory, "use_weight_memory", where=where, error=ConfigError)
    check = check_bool(check, "check", where=where, error=ConfigError)
    input_signed, input_scale = _input_quantization(input_signed, input_scale)
    pinned = _check_state_scale(state_scale, list(layers), where)
    x = as_float_array(
        calibration,
        "calibration",
        where=where,
        error=QuantizationError,
        ndim=(2, 3),
        fix="pass representative finite float input of shape (B, N_in) or (B, T, N_in)",
    )
    return _Mapping(
        layers=layers,
        x=x,
        limits=lim,
        granularity=granularity,
        npu=npu,
        rows=rows,
        buffering=buffering,
        l1_budget=l1_budget,
        use_weight_memory=use_weight_memory,
        check=check,
        input_signed=input_signed,
        input_scale=input_scale,
        state_scale=pinned,
    )


def _layer_list(layers: Any, drop_synapse: Any) -> tuple:
    """``layers`` as a non-empty tuple: a list or tuple as given, a graph or network converted by
    :func:`layers_from_graph` (GraphError for an empty one or a bad ``drop_synapse``)."""
    drop_synapse = check_bool(drop_synapse, "drop_synapse", where=_WHERE, error=GraphError)
    if not isinstance(layers, (list, tuple)):
        layers = layers_from_graph(layers, drop_synapse=drop_synapse)
    if not layers:
        raise GraphError(
            "layers", value="an empty list", limit="at least one layer", where=_WHERE, fix="pass the network's layers"
        )
    return tuple(layers)


def _input_quantization(input_signed: Any, input_scale: Any) -> tuple[bool | None, float | None]:
    """The given input sign and scale, checked (None: calibrated; QuantizationError for a non-bool sign or
    a scale outside [SCALE_MIN, SCALE_MAX])."""
    if input_signed is not None:
        input_signed = check_bool(input_signed, "input_signed", where=_WHERE, error=QuantizationError)
    if input_scale is not None:
        input_scale = check_float(
            input_scale,
            "input_scale",
            lo=SCALE_MIN,
            hi=SCALE_MAX,
            where=_WHERE,
            error=QuantizationError,
            fix="pass a positive scale (float value of one input step)",
        )
    return input_signed, input_scale


def _quantize(m: _Mapping) -> _Quantized:
    """Quantize the (checked) float chain layer by layer from the input scale (module docstring): the
    input is signed when the calibration data have a negative value (unless ``input_signed``), and its
    scale is ``max|x| / 127`` or ``max x / 255`` (unless ``input_scale``)."""
    lim, x = m.limits, m.x
    fouts, vmax = float_forward(list(m.layers), x)
    qmax = (1 << (lim.act_bits - 1)) - 1
    signed = bool(np.min(x) < 0) if m.input_signed is None else m.input_signed
    in_bits = lim.act_bits
    scale = m.input_scale
    if scale is None:
        top = float(np.max(np.abs(x))) if signed else float(np.max(x))
        scale = _scale(_nonzero(top) / (qmax if signed else (1 << in_bits) - 1), "input scale", "input")
    stream = _Stream(float(scale), *int_range(in_bits, signed))
    steps: list[_Step] = []
    i = 0
    while i < len(m.layers):
        n_prev = steps[-1].q.n_out if steps else x.shape[-1]
        step = _quantize_layer(m, i, stream, n_prev, fouts, vmax)
        steps.append(step)
        stream = step.stream
        i += step.consumed
    s_out = stream.scale
    return _Quantized(
        layers=tuple(s.q for s in steps),
        infos=tuple(s.info for s in steps),
        multipliers=tuple(s.multiplier for s in steps if s.multiplier is not None),
        input_bits=in_bits,
        input_signed=signed,
        input_scale=float(scale),
        output_scale=float(np.max(s_out)) if np.ndim(s_out) else float(s_out),
    )


def _quantize_layer(
    m: _Mapping, i: int, stream: _Stream, n_prev: int, fouts: list[np.ndarray], vmax: dict[str, float]
) -> _Step:
    """The integer layer for float layer ``i`` fed ``stream`` (``n_prev`` values; ``fouts``/``vmax``: the
    float activations and LIF membrane peaks on the calibration data).

    A GEMM/convolution followed by a LIF emits its raw accumulator; one followed by a ReLU fuses it
    (unsigned RequantShift); a stand-alone ReLU is an unsigned RequantShift with ``mul 1, add 0, div 1``
    (scale unchanged); a LIF's state scale is pinned or calibrated (:func:`_state_scale`).
    """
    layer = m.layers[i]
    nxt = m.layers[i + 1] if i + 1 < len(m.layers) else None
    if isinstance(layer, (GemmLayer, Conv2dLayer)):
        if isinstance(nxt, IntLIFLayer):
            return _quantize_raw(layer, stream, m)
        relu = nxt if isinstance(nxt, ReLU) else None
        return _quantize_requant(layer, relu, stream, fouts[i + 1] if relu is not None else fouts[i], m)
    lim = m.limits
    if isinstance(layer, ReLU):
        rq = RequantShift(mul=1, add=0, div=1, out_bits=lim.act_bits, signed=False)
        info = dict(name=layer.name, fused=(layer.name,), in_scale=stream.scale, out_scale=stream.scale)
        out = _Stream(stream.scale, 0, min(stream.hi, rq.out_range[1]), stream.accumulator)
        return _Step(QRequant(layer.name, n_prev, rq), info, out)
    s_v = m.state_scale[layer.name] if layer.name in m.state_scale else _state_scale(layer, vmax.get(layer.name, 0.0))
    q, info, multiplier = _quantize_lif(layer, stream, s_v, lim)
    return _Step(q, info, _Stream(1.0, 0, 1), multiplier=multiplier)


@dataclass(frozen=True)
class _Weights:
    """A GEMM/convolution's integer weights and what follows from them.

    Attributes:
        q: int8 weights, the float weights' shape. scale: ``s_w`` per output channel. error: largest
            weight error relative to ``max|W|``.
        acc_lo, acc_hi: exact accumulator bounds per output channel over the input box ``[lo, hi]^K``.
        acc_scale: ``s_acc = s_in s_w``. bias: the float bias (zeros when None).
    """

    q: np.ndarray
    scale: np.ndarray
    error: float
    acc_lo: np.ndarray
    acc_hi: np.ndarray
    acc_scale: Any
    bias: np.ndarray

    @property
    def acc_range(self) -> tuple[int, int]:
        return int(self.acc_lo.min()), int(self.acc_hi.max())


def _weights(layer: GemmLayer | Conv2dLayer, stream: _Stream, m: _Mapping) -> _Weights:
    """Quantize a GEMM/convolution's weights (:func:`_quant_weights`) and bound its accumulator over the
    value range ``[stream.lo, stream.hi]`` (QuantizationError for an out-of-range scale)."""
    Wq, s_w, w_err = _quant_weights(layer.weight, m.granularity, m.limits.weight_range[1])
    _scale(s_w, "weight scale", layer.name)
    w2 = Wq.reshape(-1, Wq.shape[-1])
    a, b = w2 * stream.lo, w2 * stream.hi
    acc_lo, acc_hi = np.minimum(a, b).sum(0), np.maximum(a, b).sum(0)
    s_acc = _scale(stream.scale * s_w, "accumulator scale (input scale x weight scale)", layer.name)
    bias = layer.bias if layer.bias is not None else np.zeros(Wq.shape[-1])
    return _Weights(Wq, s_w, w_err, acc_lo, acc_hi, s_acc, bias)


def _quantize_raw(layer: GemmLayer | Conv2dLayer, stream: _Stream, m: _Mapping) -> _Step:
    """A GEMM/convolution feeding a LIF: no RequantShift, the raw int32 accumulator (scale ``s_acc``)
    goes on, its float bias folded into the LIF's addend."""
    w = _weights(layer, stream, m)
    q = QGemm(layer.name, w.q) if isinstance(layer, GemmLayer) else layer._q(w.q)
    info = dict(
        name=layer.name,
        fused=(layer.name,),
        in_scale=stream.scale,
        out_scale=w.acc_scale,
        weight_scale=w.scale,
        weight_error=w.error,
        acc_range=w.acc_range,
    )
    return _Step(q, info, _Stream(w.acc_scale, *w.acc_range, _Accumulator(w.acc_scale, w.bias)))


def _quantize_requant(
    layer: GemmLayer | Conv2dLayer, relu: ReLU | None, stream: _Stream, y: np.ndarray, m: _Mapping
) -> _Step:
    """A GEMM/convolution with its RequantShift (:func:`requant_from_scale`): output scale ``max|y| / 127``
    (signed) or, with the following ``relu`` fused, ``max y / 255`` (unsigned); ``y`` its float output on
    the calibration data (after the ReLU when fused)."""
    lim = m.limits
    w = _weights(layer, stream, m)
    signed = relu is None
    top = float(np.max(np.abs(y))) if signed else float(np.max(y))
    qmax = (1 << (lim.act_bits - 1)) - 1
    s_out = _scale(_nonzero(top) / (qmax if signed else (1 << lim.act_bits) - 1), "output scale", layer.name)
    with np.errstate(over="ignore", under="ignore"):
        M = w.acc_scale / s_out
        A = w.bias / s_out
    _scale(M, "real multiplier (accumulator scale / output scale)", layer.name, lo=0.0)
    _scale(A, "addend (bias / output scale)", layer.name, lo=None)
    if m.granularity == "tensor":
        M = np.float64(M[0])
    rq, err = requant_from_scale(M, w.acc_lo, w.acc_hi, A, lim.act_bits, signed, lim)
    if isinstance(layer, GemmLayer):
        q = QGemm(layer.name, w.q, None, rq)
    else:
        q = QConv2d(layer.name, w.q, layer.in_shape, None, rq, layer.stride, layer.padding, layer.groups)
    info = dict(
        name=layer.name,
        fused=(layer.name,) + ((relu.name,) if relu is not None else ()),
        in_scale=stream.scale,
        out_scale=s_out,
        weight_scale=w.scale,
        weight_error=w.error,
        mul_rel_error=err,
        shift=rq.shift,
        acc_range=w.acc_range,
    )
    multiplier = Multiplier(layer.name, M, rq.mul, rq.shift, lif=False)
    return _Step(q, info, _Stream(s_out, *rq.out_range), 1 if relu is None else 2, multiplier)


def _specification(m: _Mapping, qz: _Quantized) -> Specification:
    """Assemble the :class:`Specification`: the configuration (NPU layers by ``m.npu``), its tile plans
    and placement, the layer reports, and every violation of the rounded multipliers and of the
    configuration (raised together when ``m.check``)."""
    lim = m.limits
    cfg = SiracusaConfig(
        layers=qz.layers,
        n_input=int(m.x.shape[-1]),
        input_bits=qz.input_bits,
        input_signed=bool(qz.input_signed),
        input_scale=float(qz.input_scale),
        output_scale=qz.output_scale,
        rows=int(m.rows),
        buffering=int(m.buffering),
        l1_budget=m.l1_budget,
        use_weight_memory=bool(m.use_weight_memory),
        limits_name=_limits_key(lim),
    )
    elig = {q.name: npu_eligibility(q, lim) for q in qz.layers}
    if m.npu == "auto":
        cfg = cfg.replace(npu_layers=tuple(q.name for q in qz.layers if elig[q.name][0]))
    elif m.npu == "all":
        cfg = cfg.replace(npu_layers=tuple(q.name for q in qz.layers if isinstance(q, (QGemm, QConv2d))))
    plans = plan_tiles(cfg, lim)
    placement = place_memory(cfg, lim)
    found = check_rules(QUANTIZATION_RULES, QuantizationCheck(qz.multipliers, lim))
    found += check_constraints(cfg, lim, plans=plans, placement=placement)
    reports = tuple(
        LayerReport(
            kind=type(q).__name__,
            npu_eligible=elig[q.name][0],
            npu_reason=elig[q.name][1],
            placement=placement.weights[q.name],
            tile=plan,
            **info,
        )
        for q, plan, info in zip(qz.layers, plans, qz.infos)
    )
    spec = Specification(m.layers, cfg, reports, placement, tuple(plans), tuple(found))
    if m.check:
        raise_violations(found, lim.name)
    return spec


def _nonzero(top: float) -> float:
    """The largest calibration magnitude, or 1e-30 when the data are all zero (any scale would do)."""
    return top if top > 0 else 1e-30


def _scale(value: Any, what: str, layer: str, lo: float | None = SCALE_MIN) -> Any:
    """``value`` when every entry is finite and within ``[lo, SCALE_MAX]`` in magnitude (``lo=None``: only
    the upper bound, ``lo=0.0``: non-negative); else a QuantizationError naming the layer, the scale and
    the offending value (an infinite or zero scale would turn every integer into garbage)."""
    arr = np.asarray(value, dtype=np.float64)
    mag = np.abs(arr)
    bad = ~np.isfinite(arr) | (mag > SCALE_MAX)
    if lo is not None:
        bad |= arr < lo
    if np.any(bad):
        shown = float(arr.reshape(-1)[int(np.flatnonzero(bad.reshape(-1))[0])])
        bounds = f"within +-{SCALE_MAX:.3g}" if lo is None else f"in [{lo:.3g}, {SCALE_MAX:.3g}]"
        raise QuantizationError(
            what,
            value=shown,
            limit=f"a finite value {bounds}",
            where=layer,
            fix="rescale the layer's weights, biases or the calibration data into a moderate range "
            "(subnormal or huge values have no usable integer scale)",
        )
    return value


def _limits_key(lim: SiracusaLimits) -> str:
    from pondlib.devices.siracusa.limits import LIMITS

    for key, value in LIMITS.items():
        if value == lim:
            return key
    return "siracusa"


def _quantize_lif(
    layer: IntLIFLayer, stream: _Stream, s_v: float, lim: SiracusaLimits
) -> tuple[QLIF, dict, Multiplier]:
    """Integer LIF parameters (see the module docstring) with the largest overflow-free shift, its report
    fields and its rounded input multiplier (checked by ``multiplier_underflow``).

    ``stream`` carries the input: a raw accumulator (per-channel scale and float bias, folded into the
    addend) or any other integer values (one scale). A threshold below half a state step becomes 1 (the
    smallest positive integer threshold)."""
    n = layer.n
    acc = stream.accumulator
    if acc is not None:
        # HWC layout after a convolution: value i belongs to channel i % O (per-channel scales repeat)
        reps = n // max(np.size(acc.scale), 1)
        s_I = np.tile(np.atleast_1d(acc.scale), reps)[:n]
        b_prev = np.tile(np.atleast_1d(acc.bias), reps)[:n]
    else:
        s_I, b_prev = np.broadcast_to(np.asarray(stream.scale, dtype=float), (n,)), np.zeros(n)
    s_lo, s_hi = int_range(layer.state_bits, True)
    beta_f = layer.alpha
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        in_f = _scale(
            layer.gain * s_I / s_v, "input multiplier (gain x input scale / state scale)", layer.name, lo=None
        )
        add_f = _scale((layer.bias + layer.gain * b_prev) / s_v, "addend (bias / state scale)", layer.name, lo=None)
    imax = max(abs(stream.lo), abs(stream.hi))
    top = (1 << 31) - 1
    shift = 0
    with np.errstate(over="ignore"):  # an overflowing bound is inf: that shift does not fit
        for s in range(min(lim.shift_max, 30), -1, -1):
            bm, im, am = (np.rint(beta_f * 2.0**s), np.rint(in_f * 2.0**s), np.rint(add_f * 2.0**s))
            rnd = 2.0 ** (s - 1) if s > 0 else 0.0
            if np.all(abs(s_lo) * np.abs(bm) + imax * np.abs(im) + np.abs(am) + rnd <= top):
                shift = s
                break
    # Saturated before the cast: a value no shift brings into int32 is kept beyond int32 (within int64)
    # and reported by check_constraints (lif_overflow), never wrapped.
    bm = sat(np.rint(beta_f * 2.0**shift), 63)
    im = sat(np.rint(in_f * 2.0**shift), 63)
    am = sat(np.rint(add_f * 2.0**shift), 63)
    thr = np.clip(np.rint(layer.threshold / s_v), 1, s_hi).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        errs = [
            np.where(f > 0, np.abs(q / 2.0**shift - f) / np.where(f > 0, f, 1), 0)
            for f, q in ((beta_f, bm), (in_f, im))
        ]
    q = QLIF(layer.name, bm, im, am, shift, thr, layer.state_bits, layer.reset, layer.compare)
    info = dict(
        name=layer.name,
        fused=(layer.name,),
        in_scale=s_I,
        out_scale=1.0,
        shift=shift,
        mul_rel_error=float(max(np.max(e) for e in errs)),
        acc_range=(stream.lo, stream.hi),
    )
    return q, info, Multiplier(layer.name, in_f, im, shift, lif=True)


def _state_scale(layer: IntLIFLayer, vpeak: float) -> float:
    """The calibrated state scale ``max(vpeak, max theta) / (2^(b-1) - 1)`` (QuantizationError outside
    [SCALE_MIN, SCALE_MAX])."""
    s_hi = (1 << (layer.state_bits - 1)) - 1
    vmax = max(float(vpeak), float(np.max(np.abs(layer.threshold))), 1e-30)
    return float(_scale(vmax / s_hi, "state scale", layer.name))


def _check_state_scale(state_scale: Any, layers: list, where: str) -> dict[str, float]:
    """``state_scale`` as ``{LIF layer name: s_v}`` (empty for None), every value a finite float in
    [SCALE_MIN, SCALE_MAX] and every name a LIF layer's (QuantizationError naming the entry otherwise)."""
    lif_names = [layer.name for layer in layers if isinstance(layer, IntLIFLayer)]
    if state_scale is None:
        return {}
    fix = "pass a positive float (the float value of one state step) or {LIF layer name: float}"
    if not isinstance(state_scale, dict):
        value = check_float(
            state_scale, "state_scale", lo=SCALE_MIN, hi=SCALE_MAX, where=where, error=QuantizationError, fix=fix
        )
        return {name: value for name in lif_names}
    if not state_scale:
        raise QuantizationError(
            "state_scale", value="an empty dict", limit="at least one LIF layer name", where=where, fix=fix
        )
    out: dict[str, float] = {}
    for name, value in state_scale.items():
        if name not in lif_names:
            raise QuantizationError(
                "state_scale key",
                value=repr(name),
                limit=f"a LIF layer name ({', '.join(lif_names) or 'none in this network'})",
                where=where,
                fix="key the dict by the IntLIFLayer names",
            )
        out[name] = check_float(
            value, f"state_scale[{name!r}]", lo=SCALE_MIN, hi=SCALE_MAX, where=where, error=QuantizationError, fix=fix
        )
    return out


def state_scales(layers: Any, calibration: Any, *, drop_synapse: bool = False) -> dict[str, float]:
    r"""The state scale the mapper calibrates for every LIF layer: ``{name: s_v}`` with

    .. math:: s_v = \max(\max_{b,t,n} |v_{b,t,n}|, \max_n \theta_n) / (2^{b-1} - 1)

    (``v`` the float membrane before reset on ``calibration`` (B, [T,] N_in), in float state units, ``b``
    the state width): what ``mapper(layers, calibration=calibration)`` uses when ``state_scale`` is not
    given. ``layers``: float layer descriptions, a graph or a ``pondlib.nn`` network (``drop_synapse``
    as :func:`layers_from_graph`).

    Raises:
        GraphError: layers that are not a chain of float layer descriptions.
        QuantizationError: calibration that is not finite (B, [T,] N_in) data, or a scale out of range.

    Example:
        >>> import numpy as np
        >>> layers = [GemmLayer("fc", np.full((2, 1), 0.5)), IntLIFLayer("lif", alpha=1.0, threshold=10.0)]
        >>> s = state_scales(layers, np.ones((1, 3, 2)))   # v = 1, 2, 3: below the threshold 10
        >>> round(s["lif"] * 32767, 6)
        10.0
        >>> round(state_scales(layers, np.full((1, 3, 2), 4.0))["lif"] * 32767, 6)   # v = 4, 8, 12
        12.0
        >>> spec = mapper(layers, calibration=np.ones((1, 3, 2)), state_scale={"lif": 1 / 64})
        >>> int(spec.config.layers[1].threshold[0])   # 10 / (1/64): pinned, not calibrated
        640
    """
    drop_synapse = check_bool(drop_synapse, "drop_synapse", where="state_scales", error=GraphError)
    if not isinstance(layers, (list, tuple)):
        layers = layers_from_graph(layers, drop_synapse=drop_synapse)
    layers = _float_layers(layers, "state_scales")
    _, vmax = float_forward(layers, calibration)
    return {layer.name: _state_scale(layer, vmax[layer.name]) for layer in layers if isinstance(layer, IntLIFLayer)}
