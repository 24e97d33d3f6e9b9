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
(:data:`MAPPER_RULES`) is checked and *all* violations are raised together in one
:class:`~pondlib.errors.ConstraintError` (``check=False`` returns them in ``spec.violations``).

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
    >>> bad = [GemmLayer("fc1", np.ones((8, 20))), GemmLayer("fc2", np.ones((20, 4)) * 1e-9, np.full(4, 1e3))]
    >>> try:
    ...     mapper(bad, calibration=x)
    ... except ConstraintError as err:
    ...     print(sorted(set(err.rules)))
    ['gemm_chunk', 'multiplier_underflow']
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pondlib.devices.core.intmath import int_range, sat
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
from pondlib.devices.siracusa.specification import (
    COMPARISONS,
    QLIF,
    RESET_MODES,
    LayerReport,
    QConv2d,
    QGemm,
    QRequant,
    RequantShift,
    Specification,
)
from pondlib.devices.siracusa.tiling import ROWS_MAX, npu_eligibility, place_memory, plan_tiles
from pondlib.errors import ConfigError, ConstraintError, GraphError, QuantizationError, Violation
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

#: Rules the mapper checks on the float description (the integer rules are in config.RULES).
MAPPER_RULES: dict[str, str] = {
    "unsupported_layer": "only GemmLayer, Conv2dLayer, ReLU and IntLIFLayer",
    "layer_shape": "each layer's input size equals the previous layer's output size",
    "invalid_parameter": "parameters are finite and have the documented shapes",
    "multiplier_underflow": "every real multiplier is representable (mul >= 1 at shift <= 31)",
    "unique_names": "every layer has its own name",
}

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
    lim = get_limits(limits)
    where = "siracusa.mapper"
    drop_synapse = check_bool(drop_synapse, "drop_synapse", where=where, error=GraphError)
    if not isinstance(layers, (list, tuple)):
        layers = layers_from_graph(layers, drop_synapse=drop_synapse)
    layers = list(layers)
    if not layers:
        raise GraphError(
            "layers", value="an empty list", limit="at least one layer", where=where, fix="pass the network's layers"
        )
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
    if input_signed is not None:
        input_signed = check_bool(input_signed, "input_signed", where=where, error=QuantizationError)
    if input_scale is not None:
        input_scale = check_float(
            input_scale,
            "input_scale",
            lo=SCALE_MIN,
            hi=SCALE_MAX,
            where=where,
            error=QuantizationError,
            fix="pass a positive scale (float value of one input step)",
        )
    pinned = _check_state_scale(state_scale, layers, where)
    x = as_float_array(
        calibration,
        "calibration",
        where=where,
        error=QuantizationError,
        ndim=(2, 3),
        fix="pass representative finite float input of shape (B, N_in) or (B, T, N_in)",
    )

    # 1. Shapes and types (quantization cannot proceed past a broken chain).
    found: list[Violation] = []
    n = x.shape[-1]
    for layer in layers:
        if isinstance(layer, ReLU):
            continue
        if not isinstance(layer, (GemmLayer, Conv2dLayer, IntLIFLayer)):
            found.append(
                Violation(
                    "unsupported_layer",
                    getattr(layer, "name", "?"),
                    type(layer).__name__,
                    MAPPER_RULES["unsupported_layer"],
                    "describe the layer with a supported type",
                )
            )
            continue
        if layer.n_in != n:
            found.append(
                Violation(
                    "layer_shape", layer.name, f"{layer.n_in} inputs", f"{n}", "make consecutive layer sizes agree"
                )
            )
        for key in ("weight", "bias", "alpha", "threshold"):
            arr = getattr(layer, key, None)
            if arr is not None and not np.all(np.isfinite(arr)):
                found.append(
                    Violation(
                        "invalid_parameter",
                        layer.name,
                        f"{key} has NaN/inf",
                        "finite",
                        f"replace the non-finite values of {key}",
                    )
                )
        if isinstance(layer, IntLIFLayer):  # the arrays are mutable: checked again, never clipped
            alpha, thr = np.asarray(layer.alpha, dtype=np.float64), np.asarray(layer.threshold, dtype=np.float64)
            for key, arr, bad, limit in (
                ("alpha", alpha, (alpha < 0) | (alpha > 1), "a leak factor in [0, 1]"),
                ("threshold", thr, thr <= 0, "> 0"),
            ):
                if np.any(bad):
                    i = int(np.flatnonzero(bad)[0])
                    found.append(
                        Violation(
                            "invalid_parameter",
                            layer.name,
                            f"{key}[{i}] = {float(arr.reshape(-1)[i])}",
                            limit,
                            f"fix {key} of {layer.name}",
                        )
                    )
        if isinstance(layer, IntLIFLayer) and (layer.reset not in RESET_MODES or layer.compare not in COMPARISONS):
            found.append(
                Violation(
                    "invalid_parameter",
                    layer.name,
                    f"reset={layer.reset!r}, compare={layer.compare!r}",
                    f"{RESET_MODES} / {COMPARISONS}",
                    "use a documented mode",
                )
            )
        n = layer.n_out
    names = [layer.name for layer in layers if hasattr(layer, "name")]
    for name in sorted({nm for nm in names if names.count(nm) > 1}):
        found.append(
            Violation(
                "unique_names",
                name,
                f"{names.count(name)} layers named {name!r}",
                "one",
                "give every layer its own name (placement and reports are by name)",
            )
        )
    if found:
        raise ConstraintError(found, device=lim.name)

    # 2. Quantize layer by layer.
    fouts, vmax = float_forward(layers, x)
    qmax = (1 << (lim.act_bits - 1)) - 1
    wmax = lim.weight_range[1]
    if input_signed is None:
        input_signed = bool(np.min(x) < 0)
    in_bits = lim.act_bits
    if input_scale is None:
        top = float(np.max(np.abs(x))) if input_signed else float(np.max(x))
        input_scale = _scale(_nonzero(top) / (qmax if input_signed else (1 << in_bits) - 1), "input scale", "input")
    s_cur: Any = float(input_scale)
    lo_cur, hi_cur = int_range(in_bits, input_signed)
    qlayers: list = []
    infos: list[dict] = []
    pending: dict | None = None  # a GEMM whose raw accumulator feeds the next LIF
    i = 0
    while i < len(layers):
        layer = layers[i]
        nxt = layers[i + 1] if i + 1 < len(layers) else None
        if isinstance(layer, (GemmLayer, Conv2dLayer)):
            Wq, s_w, w_err = _quant_weights(layer.weight, granularity, wmax)
            _scale(s_w, "weight scale", layer.name)
            # Exact accumulator bounds over the input box [lo_cur, hi_cur]^K (the value range).
            w2 = Wq.reshape(-1, Wq.shape[-1])
            a, b = w2 * lo_cur, w2 * hi_cur
            acc_lo, acc_hi = np.minimum(a, b).sum(0), np.maximum(a, b).sum(0)
            s_acc = _scale(s_cur * s_w, "accumulator scale (input scale x weight scale)", layer.name)
            bias = layer.bias if layer.bias is not None else np.zeros(Wq.shape[-1])
            if isinstance(nxt, IntLIFLayer):
                q = QGemm(layer.name, Wq) if isinstance(layer, GemmLayer) else layer._q(Wq)
                qlayers.append(q)
                infos.append(
                    dict(
                        name=layer.name,
                        fused=(layer.name,),
                        in_scale=s_cur,
                        out_scale=s_acc,
                        weight_scale=s_w,
                        weight_error=w_err,
                        acc_range=(int(acc_lo.min()), int(acc_hi.max())),
                    )
                )
                pending = dict(s_acc=s_acc, bias=bias, lo=int(acc_lo.min()), hi=int(acc_hi.max()))
                s_cur, lo_cur, hi_cur = s_acc, int(acc_lo.min()), int(acc_hi.max())
                i += 1
                continue
            fuse = isinstance(nxt, ReLU)
            y = fouts[i + 1] if fuse else fouts[i]
            signed = not fuse
            top = float(np.max(np.abs(y))) if signed else float(np.max(y))
            s_out = _scale(_nonzero(top) / (qmax if signed else (1 << lim.act_bits) - 1), "output scale", layer.name)
            with np.errstate(over="ignore", under="ignore"):
                M = s_acc / s_out
                A = bias / s_out
            _scale(M, "real multiplier (accumulator scale / output scale)", layer.name, lo=0.0)
            _scale(A, "addend (bias / output scale)", layer.name, lo=None)
            if granularity == "tensor":
                M = np.float64(M[0])
            rq, err = requant_from_scale(M, acc_lo, acc_hi, A, lim.act_bits, signed, lim)
            under = np.atleast_1d(rq.mul) == 0
            if np.any(under & (np.atleast_1d(M) > 0)):
                found.append(
                    Violation(
                        "multiplier_underflow",
                        layer.name,
                        f"real multiplier {float(np.min(M)):.3g}",
                        f">= 2^-{lim.shift_max} (mul >= 1 at shift {lim.shift_max})",
                        "rescale the layer (its outputs are negligible against its inputs)",
                    )
                )
            if isinstance(layer, GemmLayer):
                q = QGemm(layer.name, Wq, None, rq)
            else:
                q = QConv2d(layer.name, Wq, layer.in_shape, None, rq, layer.stride, layer.padding, layer.groups)
            qlayers.append(q)
            infos.append(
                dict(
                    name=layer.name,
                    fused=(layer.name,) + ((nxt.name,) if fuse else ()),
                    in_scale=s_cur,
                    out_scale=s_out,
                    weight_scale=s_w,
                    weight_error=w_err,
                    mul_rel_error=err,
                    shift=rq.shift,
                    acc_range=(int(acc_lo.min()), int(acc_hi.max())),
                )
            )
            s_cur = s_out
            lo_cur, hi_cur = rq.out_range
            i += 2 if fuse else 1
        elif isinstance(layer, ReLU):
            # A stand-alone ReLU: an unsigned RequantShift with mul 1, add 0, div 1 (scale unchanged).
            rq = RequantShift(mul=1, add=0, div=1, out_bits=lim.act_bits, signed=False)
            n_prev = qlayers[-1].n_out if qlayers else x.shape[-1]
            qlayers.append(QRequant(layer.name, n_prev, rq))
            infos.append(dict(name=layer.name, fused=(layer.name,), in_scale=s_cur, out_scale=s_cur))
            lo_cur, hi_cur = 0, min(hi_cur, rq.out_range[1])
            i += 1
        else:  # IntLIFLayer
            vpeak = vmax.get(layer.name, 0.0)
            s_v = pinned[layer.name] if layer.name in pinned else _state_scale(layer, vpeak)
            q, info = _quantize_lif(layer, pending, s_cur, lo_cur, hi_cur, s_v, lim, found)
            qlayers.append(q)
            infos.append(info)
            pending = None
            s_cur, lo_cur, hi_cur = 1.0, 0, 1
            i += 1

    out_scale = float(np.max(s_cur)) if np.ndim(s_cur) else float(s_cur)
    cfg = SiracusaConfig(
        layers=tuple(qlayers),
        n_input=int(x.shape[-1]),
        input_bits=in_bits,
        input_signed=bool(input_signed),
        input_scale=float(input_scale),
        output_scale=out_scale,
        rows=int(rows),
        buffering=int(buffering),
        l1_budget=l1_budget,
        use_weight_memory=bool(use_weight_memory),
        limits_name=_limits_key(lim),
    )
    elig = {q.name: npu_eligibility(q, lim) for q in qlayers}
    if npu == "auto":
        cfg = cfg.replace(npu_layers=tuple(q.name for q in qlayers if elig[q.name][0]))
    elif npu == "all":
        cfg = cfg.replace(npu_layers=tuple(q.name for q in qlayers if isinstance(q, (QGemm, QConv2d))))
    plans = plan_tiles(cfg, lim)
    placement = place_memory(cfg, lim)
    found.extend(check_constraints(cfg, lim, plans=plans, placement=placement))
    reports = tuple(
        LayerReport(
            kind=type(q).__name__,
            npu_eligible=elig[q.name][0],
            npu_reason=elig[q.name][1],
            placement=placement.weights[q.name],
            tile=plan,
            **info,
        )
        for q, plan, info in zip(qlayers, plans, infos)
    )
    spec = Specification(tuple(layers), cfg, reports, placement, tuple(plans), tuple(found))
    if check and found:
        raise ConstraintError(found, device=lim.name)
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
    layer: IntLIFLayer,
    pending: dict | None,
    s_in: Any,
    lo: int,
    hi: int,
    s_v: float,
    lim: SiracusaLimits,
    found: list[Violation],
) -> tuple[QLIF, dict]:
    """Integer LIF parameters (see the module docstring) with the largest overflow-free shift.

    A threshold below half a state step becomes 1 (the smallest positive integer threshold); an input
    multiplier that rounds to 0 is a ``multiplier_underflow`` violation appended to ``found``."""
    n = layer.n
    if pending is not None:
        # HWC layout after a convolution: value i belongs to channel i % O (per-channel scales repeat)
        reps = n // max(np.size(pending["s_acc"]), 1)
        s_I = np.tile(np.atleast_1d(pending["s_acc"]), reps)[:n]
        b_prev = np.tile(np.atleast_1d(pending["bias"]), reps)[:n]
    else:
        s_I, b_prev = np.broadcast_to(np.asarray(s_in, dtype=float), (n,)), np.zeros(n)
    s_lo, s_hi = int_range(layer.state_bits, True)
    beta_f = layer.alpha
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        in_f = _scale(
            layer.gain * s_I / s_v, "input multiplier (gain x input scale / state scale)", layer.name, lo=None
        )
        add_f = _scale((layer.bias + layer.gain * b_prev) / s_v, "addend (bias / state scale)", layer.name, lo=None)
    imax = max(abs(lo), abs(hi))
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
    if np.any((im == 0) & (in_f != 0)):
        found.append(
            Violation(
                "multiplier_underflow",
                layer.name,
                f"input multiplier {float(np.min(np.abs(in_f[in_f != 0]))):.3g} (gain x input scale / state scale)",
                f">= 2^-{shift} (in_mul >= 1 at shift {shift})",
                "rescale the layer: its input is negligible against its threshold and state range",
            )
        )
    q = QLIF(layer.name, bm, im, am, shift, thr, layer.state_bits, layer.reset, layer.compare)
    info = dict(
        name=layer.name,
        fused=(layer.name,),
        in_scale=s_I,
        out_scale=1.0,
        shift=shift,
        mul_rel_error=float(max(np.max(e) for e in errs)),
        acc_range=(lo, hi),
    )
    return q, info


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
