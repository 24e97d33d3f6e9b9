r"""Quantize a float Xylo :class:`~pondlib.devices.xylo.specification.Specification` to chip integers.

Both quantizers scale each layer so that its largest weight magnitude lands on the largest integer
weight, then round (half to even, :func:`numpy.rint`) and clip:

.. math::

    s = \frac{2^{b-1} - 1}{\max |W|}, \qquad
    W_q = \mathrm{clip}(\mathrm{rint}(s W), -2^{b-1}, 2^{b-1} - 1), \qquad
    \theta_q = \mathrm{clip}(\mathrm{rint}(s \theta), -2^{15}, 2^{15} - 1)

with ``b = bits`` (8 on Xylo). The same scale ``s`` multiplies the thresholds and biases of the
neurons the weights feed, so the dynamics are unchanged up to rounding (the LIF equations are linear
in weights, threshold and bias). Dashes are rounded to integers; aliases and weight shifts are kept.

**Thresholds and biases always fit** (as Rockpool does, with one rounding instead of its two): where
``s |theta|`` or ``s |b|`` would leave the state range, the scale is lowered for the whole layer (or
neuron) so that the largest of them lands on ``2^15 - 1``:

.. math::

    s = \min\left(\frac{2^{b-1} - 1}{\max |W|}, \frac{2^{15} - 1}{\max(|\theta|, |b|)}\right)

A threshold is never capped alone (that would make the quantized neuron fire more easily than the
float one); weights and thresholds shrink together, and the weight resolution given up,
``log2`` of the weight-only scale over ``s``, is reported in ``quantization.resolution_lost`` (bits,
per layer or per neuron) and in ``quantization.notes``. In :func:`global_quantize` (without
``fuzzy_scaling``) a bias larger than every weight of its layer is also included in ``max |W|``
(Rockpool's rule: the bias then lands on ``2^{b-1} - 1``; a note says so).

* :func:`global_quantize`: one scale for the hidden layer (``max`` over ``weights_in`` and
  ``weights_rec``) and one for the output layer (``max |weights_out|``).
* :func:`channel_quantize`: one scale per hidden neuron (``max`` over the weights *into* that neuron,
  input and recurrent, every synapse) and one per output neuron.

These reproduce the reference tool (Rockpool 3.1) bit for bit on its golden cases, with two
deliberate fixes of documented bugs (``docs/XYLO.md``): every bias is scaled with its own layer's scale
(the reference leaves the hidden bias unscaled in the one-synapse per-channel case, and scales the
output bias with the *hidden* scale in the global case); nothing is ever wrapped (values out of range
are clipped and counted in ``quantization.clipped``). The input specification is never modified.

A layer whose weights are all zero has no weight scale: its scale then maps the largest threshold
or bias magnitude to the largest int16 (``(2^15 - 1) / max(|theta|, |b|)``), or is 1 if those are zero
too (an all-zero layer quantizes to zeros; ``quantization.notes`` says so).

**Input checks** (a :class:`~pondlib.errors.QuantizationError` naming the field, the index and the value):
NaN and infinities; subnormal values (non-zero magnitudes below 2.2e-308, which no float32 network
holds: set them to 0); a layer (or neuron) whose largest weight is so small that its scale
``(2^{b-1}-1) / max|W|`` would overflow; shapes; fractional aliases (never rounded). So every scale is
finite and > 0. **Documented tolerant behaviours**: values beyond the integer range, huge ones included,
are clipped and counted; a non-zero threshold whose scaled value rounds to 0 becomes +-1 (the smallest
threshold of its sign: a threshold of 0 would make the neuron fire at every step) and is counted in
``clipped``; relative errors are finite.

Rockpool's calling convention works too: ``global_quantize(**spec)`` / ``channel_quantize(**spec)`` with
the specification's fields as keyword arguments (Rockpool's ``bits_per_weight`` and ``bits_per_threshold``
are ``bits`` and ``state_bits``); the result is a :class:`Specification` (a mapping), so
``spec.update(channel_quantize(**spec))`` works. Unknown keywords are refused by name.

Example:
    >>> import numpy as np
    >>> from pondlib.devices.xylo.specification import Specification
    >>> spec = Specification.zeros(n_in=2, n_hidden=2, n_output=1)
    >>> spec = spec.replace(weights_in=np.array([[[0.5], [-0.25]], [[0.1], [1.0]]]),
    ...                     weights_out=np.array([[2.0], [-1.0]]), threshold=np.array([1.0, 1.0]),
    ...                     threshold_out=np.array([1.0]), dash_mem=np.array([4.32, 2.6]))
    >>> q = global_quantize(spec)
    >>> q.weights_in[..., 0].tolist(), q.threshold.tolist(), q.dash_mem.tolist()
    ([[64, -32], [13, 127]], [127, 127], [4, 3])
    >>> q.weights_out[:, 0].tolist(), q.threshold_out.tolist(), q.quantization.scales["output"]
    ([127, -64], [64], 63.5)
    >>> c = channel_quantize(spec)          # neuron 0: max |w| 0.5 -> scale 254; neuron 1: 127
    >>> c.weights_in[..., 0].tolist(), c.threshold.tolist()
    ([[127, -32], [25, 127]], [254, 127])
    >>> spec.weights_in[0, 0, 0]            # the input is untouched
    np.float64(0.5)
    >>> global_quantize(**spec).weights_in.tolist() == q.weights_in.tolist()   # Rockpool's style
    True
    >>> global_quantize(spec.replace(weights_out=np.array([[1e-320], [0.0]])))
    Traceback (most recent call last):
    ...
    pondlib.errors.QuantizationError: weights_out[0, 0]: subnormal value: got 1e-320, ...
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from pondlib.devices.xylo.specification import ARRAY_FIELDS, QuantizationReport, Specification
from pondlib.errors import QuantizationError
from pondlib.validate import check_bool, check_float, check_int

__all__ = ["global_quantize", "channel_quantize"]

_DASH_FIELDS = ("dash_mem", "dash_syn", "dash_syn_2", "dash_mem_out", "dash_syn_out")
#: Fields whose values are scaled (weights, thresholds, biases): subnormal values are refused there.
_SCALED_FIELDS = ("weights_in", "weights_rec", "weights_out", "threshold", "threshold_out", "bias", "bias_out")
_TINY = float(np.finfo(np.float64).tiny)  # smallest normal float64
_F64_MAX = float(np.finfo(np.float64).max)


def _signed_range(bits: int) -> tuple[int, int]:
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _resolve(spec: Any, fields: dict[str, Any], where: str) -> Specification:
    """The specification to quantize: ``spec`` itself, or one built from a mapping / keyword fields."""
    if spec is not None and fields:
        raise QuantizationError(
            "quantizer input",
            value=f"a specification and keyword fields {sorted(fields)}",
            limit="one of them",
            where=where,
            fix=f"call {where}(spec) or {where}(**spec)",
        )
    if spec is None:
        if not fields:
            raise QuantizationError(
                "quantizer input",
                value="nothing",
                limit="a Specification or its fields",
                where=where,
                fix=f"call {where}(spec) or {where}(**spec)",
            )
        return Specification.from_mapping(fields, error=QuantizationError, where=where)
    if isinstance(spec, Specification):
        return spec
    if isinstance(spec, Mapping):
        return Specification.from_mapping(spec, error=QuantizationError, where=where)
    raise QuantizationError(
        "quantizer input",
        value=type(spec).__name__,
        limit="a Specification",
        where=where,
        fix="pass the output of pondlib.devices.xylo.mapper",
    )


def _checked(spec: Specification) -> dict[str, np.ndarray]:
    """Float copies of every array field, with NaN/inf, subnormal and shape problems reported by name."""
    out: dict[str, np.ndarray] = {}
    for name in ARRAY_FIELDS:
        raw = getattr(spec, name)  # a real numeric array (the Specification checks types)
        if name == "aliases":
            out[name] = np.array(raw, dtype=np.int64)  # whole numbers >= -1, checked by the Specification
            continue
        arr = np.array(raw, dtype=np.float64)  # a copy: the input is never touched
        bad = ~np.isfinite(arr)
        if np.any(bad):
            i = tuple(int(j) for j in np.argwhere(bad)[0])
            raise QuantizationError(
                f"{name} contains NaN or inf",
                value=float(arr[i]),
                limit="a finite number",
                where=f"{name}{list(i)}",
                fix=f"fix the float network: {int(bad.sum())} non-finite value(s) in {name}",
            )
        if name in _SCALED_FIELDS and arr.size:
            sub = (arr != 0) & (np.abs(arr) < _TINY)
            if np.any(sub):
                i = tuple(int(j) for j in np.argwhere(sub)[0])
                raise QuantizationError(
                    "subnormal value",
                    value=float(arr[i]),
                    limit=f"0 or a magnitude >= {_TINY:.3g} (no float32 network holds smaller ones)",
                    where=f"{name}{list(i)}",
                    fix=f"set the {int(sub.sum())} subnormal value(s) of {name} to 0",
                )
        out[name] = arr
    if out["weights_in"].ndim != 3:
        raise QuantizationError(
            "weights_in shape",
            value=out["weights_in"].shape,
            limit="(N_in, N_hid, k)",
            where="weights_in",
            fix="build the specification with the mapper",
        )
    if out["weights_out"].ndim != 2:
        raise QuantizationError(
            "weights_out shape",
            value=out["weights_out"].shape,
            limit="(N_hid, N_out)",
            where="weights_out",
            fix="build the specification with the mapper",
        )
    n_hid, n_out = out["weights_in"].shape[1], out["weights_out"].shape[1]
    expect = {
        "weights_rec": (n_hid, n_hid, out["weights_in"].shape[2]),
        "weights_out": (n_hid, n_out),
        "threshold": (n_hid,),
        "bias": (n_hid,),
        "dash_mem": (n_hid,),
        "dash_syn": (n_hid,),
        "dash_syn_2": (n_hid,),
        "threshold_out": (n_out,),
        "bias_out": (n_out,),
        "dash_mem_out": (n_out,),
        "dash_syn_out": (n_out,),
        "aliases": (n_hid,),
    }
    for name, shape in expect.items():
        if out[name].shape != shape:
            raise QuantizationError(
                f"{name} shape",
                value=out[name].shape,
                limit=shape,
                where=name,
                fix="build the specification with the mapper",
            )
    return out


def _checked_scale(top: int, m: np.ndarray, field: str, index: Any, where: str) -> np.ndarray:
    """``top / m`` (elementwise, ``m > 0``), refused with the field and value when it overflows."""
    with np.errstate(over="ignore", divide="ignore"):
        s = top / m
    bad = ~np.isfinite(s)
    if np.any(bad):
        j = int(np.argwhere(np.atleast_1d(bad))[0][0])
        value = float(np.atleast_1d(m)[j])
        idx = index(j) if callable(index) else index
        raise QuantizationError(
            f"largest |{field}| too small to scale",
            value=value,
            limit=f">= {top / _F64_MAX:.3g} (the scale {top} / max|w| must be a finite number)",
            where=f"{where}: {field}{idx}",
            fix="rescale the float network (multiply weights, thresholds and biases by one common factor) "
            "or set such negligible values to 0",
        )
    return s


def _to_int(x: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, int]:
    """``rint`` (half to even), then clip to ``lo..hi`` (never wrap); returns (int64, number clipped)."""
    r = np.rint(x)
    n = int(np.count_nonzero(r < lo) + np.count_nonzero(r > hi))
    np.clip(r, lo, hi, out=r)
    return r.astype(np.int64), n


def _norm(x: np.ndarray, top: float) -> float:
    """Euclidean norm of ``x`` scaled by ``top`` (no overflow, no BLAS threads: deterministic)."""
    y = x.ravel() / top
    return float(np.sqrt(np.einsum("i,i->", y, y)))


def _scale_round(
    w: np.ndarray, s: np.ndarray | float, lo: int, hi: int, keep_sign: bool = False
) -> tuple[np.ndarray, int, float]:
    """``clip(rint(s * w))`` as int64, the number clipped, and ``||q / s - w|| / ||w||``.

    ``keep_sign``: a non-zero value whose scaled value rounds to 0 becomes +-1 (counted as clipped).
    Products beyond float range become +-inf and clip (counted); the relative error is finite.
    """
    with np.errstate(over="ignore"):
        x = w * s
    q, n = _to_int(x, lo, hi)
    if keep_sign:
        lost = (q == 0) & (w != 0)
        if np.any(lost):
            q[lost] = np.sign(w[lost]).astype(np.int64)
            n += int(np.count_nonzero(lost))
    top = float(np.max(np.abs(w))) if w.size else 0.0
    if top == 0.0:
        return q, n, 0.0
    with np.errstate(over="ignore", under="ignore"):
        err = q / s - w  # the rounding (and clipping) error in float units: finite (see _scale_round doc)
        e_top = float(np.max(np.abs(err)))
        if e_top == 0.0:
            return q, n, 0.0
        ratio = (e_top / top) * (_norm(err, e_top) / _norm(w, top))
    return q, n, ratio if math.isfinite(ratio) else _F64_MAX


def _assemble(
    spec: Specification,
    a: dict[str, np.ndarray],
    method: str,
    s_hid: np.ndarray | float,
    s_out: np.ndarray | float,
    bits: int,
    state_bits: int,
    dash_bits: int,
    notes: list[str],
    lost: dict[str, Any],
) -> Specification:
    """Apply per-layer scales (scalar, or per neuron) and build the new specification."""
    w_lo, w_hi = _signed_range(bits)
    s_lo, s_hi = _signed_range(state_bits)
    sh = np.asarray(s_hid, dtype=float)
    so = np.asarray(s_out, dtype=float)
    # per-neuron scales broadcast over the post-synaptic axis: (N_hid,) -> (1, N_hid, 1), (N_out,) -> (1, N_out)
    sh_w = sh.reshape(1, -1, 1) if sh.ndim else sh
    so_w = so.reshape(1, -1) if so.ndim else so
    scaled = {
        "weights_in": (a["weights_in"], sh_w, w_lo, w_hi),
        "weights_rec": (a["weights_rec"], sh_w, w_lo, w_hi),
        "weights_out": (a["weights_out"], so_w, w_lo, w_hi),
        "threshold": (a["threshold"], sh, s_lo, s_hi),
        "bias": (a["bias"], sh, s_lo, s_hi),  # fix: always the hidden layer's own scale
        "threshold_out": (a["threshold_out"], so, s_lo, s_hi),
        "bias_out": (a["bias_out"], so, s_lo, s_hi),  # fix: the output layer's own scale
    }
    new: dict[str, Any] = {}
    clipped: dict[str, int] = {}
    rel: dict[str, float] = {}
    for name, (x, s, lo, hi) in scaled.items():
        new[name], clipped[name], rel[name] = _scale_round(x, s, lo, hi, keep_sign=name.startswith("threshold"))
    for name in _DASH_FIELDS:
        # a dash out of 0..15 is a mapper violation; a hand-made spec may still carry one: clip, count
        new[name], clipped[name] = _to_int(a[name], 0, (1 << dash_bits) - 1)
    new["aliases"] = a["aliases"]  # whole numbers (checked): never rounded
    report = QuantizationReport(
        method=method,
        scales={"hidden": float(sh) if sh.ndim == 0 else sh.copy(), "output": float(so) if so.ndim == 0 else so.copy()},
        clipped=clipped,
        relative_error=rel,
        notes=tuple(notes),
        resolution_lost=lost,
    )
    return spec.replace(**new, quantization=report)


def _options(
    bits: Any, state_bits: Any, dash_bits: Any, bits_per_weight: Any, bits_per_threshold: Any, where: str
) -> tuple[int, int, int]:
    if bits_per_weight is not None:
        bits = bits_per_weight
    if bits_per_threshold is not None:
        state_bits = bits_per_threshold
    out = []
    for name, v in (("bits", bits), ("state_bits", state_bits), ("dash_bits", dash_bits)):
        out.append(
            check_int(
                v,
                f"quantizer {name}",
                lo=2,
                hi=32,
                where=where,
                error=QuantizationError,
                fix=f"pass {name} as an integer in 2..32 (Xylo: bits=8, state_bits=16, dash_bits=4)",
            )
        )
    return out[0], out[1], out[2]


def _fitting_scale(s_w: np.ndarray, top: np.ndarray, s_max: int) -> tuple[np.ndarray, np.ndarray]:
    r"""The largest scale ``<= s_w`` that keeps ``top`` (largest ``|threshold|``, ``|bias|``) in the state
    range, ``s = min(s_w, s_max / top)``, and the weight resolution that costs, ``log2(s_w / s)`` bits
    (0 where nothing had to give way). Elementwise; ``top >= 0``; ``s_w`` finite and > 0."""
    with np.errstate(over="ignore", divide="ignore"):
        fit = np.where(top > 0, s_max / np.where(top > 0, top, 1.0), np.inf)
    s = np.minimum(s_w, fit)
    return s, np.where(s < s_w, np.log2(s_w / s), 0.0)


def _lost_note(layer: str, ids: np.ndarray | None, bits_lost: np.ndarray) -> str:
    who = f"{layer} layer" if ids is None else f"{layer} neuron(s) {ids[:8].tolist()}{'...' if ids.size > 8 else ''}"
    return (
        f"{who}: threshold/bias beyond the state range at the weight scale: weights and thresholds scaled "
        f"down together, {float(np.max(bits_lost)):.3g} bit(s) of weight resolution lost"
    )


def _weightless_note(layer: str, ids: np.ndarray | None, thr_bias_zero: np.ndarray | bool) -> str:
    who = f"{layer} layer" if ids is None else f"{layer} neuron(s) {ids[:8].tolist()}{'...' if ids.size > 8 else ''}"
    if np.all(thr_bias_zero):
        return f"{who}: no non-zero weight, threshold or bias: quantized to zeros with scale 1"
    return f"{who}: no non-zero weight: scale from the largest |threshold|, |bias| (mapped to the largest state)"


def global_quantize(
    spec: Specification | Mapping[str, Any] | None = None,
    /,
    *,
    fuzzy_scaling: bool = False,
    fuzzy_percentile: float = 99.0,
    bits: int = 8,
    state_bits: int = 16,
    dash_bits: int = 4,
    bits_per_weight: int | None = None,
    bits_per_threshold: int | None = None,
    **fields: Any,
) -> Specification:
    r"""One weight scale per layer: hidden ``s_h = (2^{b-1}-1) / max(|W_in|, |W_rec|)``, output
    ``s_o = (2^{b-1}-1) / max |W_out|``; thresholds and biases are scaled with their layer's scale.

    Args:
        spec: a float specification (from :func:`pondlib.devices.xylo.mapper`); not modified. Or,
            Rockpool's way, its fields as keyword arguments (``global_quantize(**spec)``).
        fuzzy_scaling: take ``max`` as the ``fuzzy_percentile``-th percentile of the non-zero
            weight magnitudes instead of the maximum: more resolution for most weights; the outliers
            above it are clipped to the int range (and counted in ``quantization.clipped``).
        fuzzy_percentile: percentile (0..100] used with ``fuzzy_scaling``.
        bits: weight width (8 on Xylo); ``state_bits``: threshold/bias width (16);
            ``dash_bits``: decay shift width (4: dashes 0..15). ``bits_per_weight`` and
            ``bits_per_threshold`` are Rockpool's names of ``bits`` and ``state_bits``.

    Returns:
        A new specification: ``np.int64`` arrays holding int8 weights, int16 thresholds and biases,
        integer dashes; ``quantization`` is a :class:`QuantizationReport` (method ``"global"``,
        scalar ``scales["hidden"]`` and ``scales["output"]``).

    Raises:
        QuantizationError: NaN/inf, subnormal values, a scale that would overflow, a malformed field
            or an unknown keyword (the message names field and index, or the key).
    """
    where = "global_quantize"
    bits, state_bits, dash_bits = _options(bits, state_bits, dash_bits, bits_per_weight, bits_per_threshold, where)
    fuzzy_scaling = check_bool(fuzzy_scaling, "fuzzy_scaling", where=where, error=QuantizationError)
    fuzzy_percentile = check_float(
        fuzzy_percentile,
        "fuzzy_percentile",
        lo=0.0,
        lo_open=True,
        hi=100.0,
        where=where,
        error=QuantizationError,
        fix="pass e.g. fuzzy_percentile=99.0",
    )
    spec = _resolve(spec, fields, where)
    a = _checked(spec)
    w_max = (1 << (bits - 1)) - 1
    s_max = (1 << (state_bits - 1)) - 1
    notes: list[str] = []
    lost: dict[str, Any] = {"hidden": 0.0, "output": 0.0}

    def layer_scale(layer: str, ws: dict[str, np.ndarray], thr: str, bias: str) -> float:
        mags = {name: np.abs(w[w != 0]) for name, w in ws.items()}
        mag = np.concatenate(list(mags.values()))
        if mag.size == 0:
            m = max(float(np.abs(a[thr]).max(initial=0.0)), float(np.abs(a[bias]).max(initial=0.0)))
            notes.append(_weightless_note(layer, None, m == 0.0))
            if m == 0.0:
                return 1.0
            field = thr if float(np.abs(a[thr]).max(initial=0.0)) == m else bias
            return float(_checked_scale(s_max, np.float64(m), field, " (largest magnitude)", where))
        m = float(np.percentile(mag, fuzzy_percentile)) if fuzzy_scaling else float(mag.max())
        field = max((name for name, v in mags.items() if v.size), key=lambda name: float(mags[name].max()))
        s_w = float(_checked_scale(w_max, np.float64(m), field, " (largest magnitude)", where))
        b_top = float(np.abs(a[bias]).max(initial=0.0))
        if b_top > m and not fuzzy_scaling:  # Rockpool's rule: a bias larger than every weight sets the scale
            s_w = w_max / b_top
            notes.append(f"{layer} layer: largest |{bias}| {b_top:.6g} > largest |weight| {m:.6g}: it sets the scale")
        s, _ = _fitting_scale(np.float64(s_w), np.maximum(np.abs(a[thr]).max(initial=0.0), b_top), s_max)
        lost[layer] = float(np.log2(w_max / m / s)) if s < w_max / m else 0.0  # against the weights alone
        if lost[layer] > 0:
            notes.append(_lost_note(layer, None, np.float64(lost[layer])))
        return float(s)

    s_hid = layer_scale("hidden", {"weights_in": a["weights_in"], "weights_rec": a["weights_rec"]}, "threshold", "bias")
    s_out = layer_scale("output", {"weights_out": a["weights_out"]}, "threshold_out", "bias_out")
    return _assemble(spec, a, "global", s_hid, s_out, bits, state_bits, dash_bits, notes, lost)


def channel_quantize(
    spec: Specification | Mapping[str, Any] | None = None,
    /,
    *,
    bits: int = 8,
    state_bits: int = 16,
    dash_bits: int = 4,
    bits_per_weight: int | None = None,
    bits_per_threshold: int | None = None,
    **fields: Any,
) -> Specification:
    r"""One weight scale per post-synaptic neuron: hidden neuron ``i`` gets
    ``s_i = (2^{b-1}-1) / max_{p,k}(|W_in[p, i, k]|, |W_rec[p, i, k]|)`` applied to every weight into
    it and to its threshold and bias; output neuron ``o`` gets ``(2^{b-1}-1) / max_p |W_out[p, o]|``.

    Args:
        spec: a float specification (from :func:`pondlib.devices.xylo.mapper`); not modified. Or,
            Rockpool's way, its fields as keyword arguments (``channel_quantize(**spec)``).
        bits, state_bits, dash_bits, bits_per_weight, bits_per_threshold: as in :func:`global_quantize`.

    Returns:
        A new integer specification; ``quantization.scales["hidden"]`` is (N_hid,),
        ``scales["output"]`` (N_out,).

    Raises:
        QuantizationError: as :func:`global_quantize`.
    """
    where = "channel_quantize"
    bits, state_bits, dash_bits = _options(bits, state_bits, dash_bits, bits_per_weight, bits_per_threshold, where)
    spec = _resolve(spec, fields, where)
    a = _checked(spec)
    w_max = (1 << (bits - 1)) - 1
    s_max = (1 << (state_bits - 1)) - 1
    n_hid = a["weights_in"].shape[1]
    m_in = np.abs(a["weights_in"]).max(axis=(0, 2)) if a["weights_in"].size else np.zeros(n_hid)
    m_rec = np.abs(a["weights_rec"]).max(axis=(0, 2)) if a["weights_rec"].size else np.zeros(n_hid)
    m_hid = np.maximum(m_in, m_rec)
    m_out = np.abs(a["weights_out"]).max(axis=0, initial=0.0)
    notes: list[str] = []
    lost = {"hidden": np.zeros(m_hid.shape), "output": np.zeros(m_out.shape)}

    def scales(layer: str, m: np.ndarray, w_field: str, thr: str, bias: str) -> np.ndarray:
        s = np.ones(m.shape)
        has_w = m > 0
        if np.any(has_w):
            idx = np.flatnonzero(has_w)
            s[idx] = _checked_scale(w_max, m[idx], w_field, lambda j: f" into neuron {int(idx[j])}", where)
            top = np.maximum(np.abs(a[thr][idx]), np.abs(a[bias][idx]))
            s[idx], bits_lost = _fitting_scale(s[idx], top, s_max)
            lost[layer][idx] = bits_lost
            if np.any(bits_lost > 0):
                notes.append(_lost_note(layer, idx[bits_lost > 0], bits_lost[bits_lost > 0]))
        if not np.all(has_w):
            idx = np.flatnonzero(~has_w)
            mt = np.maximum(np.abs(a[thr][idx]), np.abs(a[bias][idx]))
            notes.append(_weightless_note(layer, idx, mt == 0))
            nz = np.flatnonzero(mt > 0)
            if nz.size:
                s[idx[nz]] = _checked_scale(
                    s_max, mt[nz], f"{thr}/{bias}", lambda j: f"[{int(idx[nz][j])}] (no weights)", where
                )
        return s

    s_hid = scales("hidden", m_hid, "weights_in/weights_rec", "threshold", "bias")
    s_out = scales("output", m_out, "weights_out", "threshold_out", "bias_out")
    return _assemble(spec, a, "channel", s_hid, s_out, bits, state_bits, dash_bits, notes, lost)
