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
or bias magnitude to the largest int16 (``(2^15 - 1) / max(|theta|, |b|)``), or is 1 if those are zero too.

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
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pondlib.devices.xylo.specification import ARRAY_FIELDS, QuantizationReport, Specification
from pondlib.errors import QuantizationError

__all__ = ["global_quantize", "channel_quantize"]

_DASH_FIELDS = ("dash_mem", "dash_syn", "dash_syn_2", "dash_mem_out", "dash_syn_out")


def _signed_range(bits: int) -> tuple[int, int]:
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _checked(spec: Any) -> dict[str, np.ndarray]:
    """Float copies of every array field, with NaN/inf and shape problems reported by name."""
    if not isinstance(spec, Specification):
        raise QuantizationError("quantizer input", value=type(spec).__name__, limit="a Specification",
                                fix="pass the output of pondlib.devices.xylo.mapper")
    out: dict[str, np.ndarray] = {}
    for name in ARRAY_FIELDS:
        try:
            arr = np.array(getattr(spec, name), dtype=float)  # a copy: the input is never touched
        except (TypeError, ValueError) as exc:
            raise QuantizationError(f"{name} is not numeric", value=type(getattr(spec, name)).__name__,
                                    limit="a numeric array", where=name,
                                    fix="build the specification with the mapper") from exc
        bad = ~np.isfinite(arr)
        if np.any(bad):
            i = tuple(int(j) for j in np.argwhere(bad)[0])
            raise QuantizationError(f"{name} contains NaN or inf", value=float(arr[i]),
                                    limit="a finite number", where=f"{name}{list(i)}",
                                    fix=f"fix the float network: {int(bad.sum())} non-finite value(s) "
                                        f"in {name}")
        out[name] = arr
    for name in ("weights_in", "weights_rec"):
        if out[name].ndim == 2:  # a one-synapse spec given as 2-D: make the synapse axis explicit
            out[name] = out[name][:, :, None]
    n_hid, n_out = out["weights_in"].shape[1], out["weights_out"].shape[1]
    expect = {"weights_rec": (n_hid, n_hid, out["weights_in"].shape[2]),
              "weights_out": (n_hid, n_out), "threshold": (n_hid,), "bias": (n_hid,),
              "dash_mem": (n_hid,), "dash_syn": (n_hid,), "dash_syn_2": (n_hid,),
              "threshold_out": (n_out,), "bias_out": (n_out,), "dash_mem_out": (n_out,),
              "dash_syn_out": (n_out,), "aliases": (n_hid,)}
    for name, shape in expect.items():
        if out[name].shape != shape:
            raise QuantizationError(f"{name} shape", value=out[name].shape, limit=shape, where=name,
                                    fix="build the specification with the mapper")
    if out["weights_in"].ndim != 3:
        raise QuantizationError("weights_in shape", value=out["weights_in"].shape,
                                limit="(N_in, N_hid, k)", where="weights_in",
                                fix="build the specification with the mapper")
    return out


def _fallback_scale(threshold: np.ndarray, bias: np.ndarray, state_max: int) -> np.ndarray:
    """Scale for a layer/neuron without weights: the largest |threshold|, |bias| -> state_max."""
    m = np.maximum(np.abs(threshold), np.abs(bias))
    return np.where(m > 0, state_max / np.where(m > 0, m, 1.0), 1.0)


def _to_int(x: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, int]:
    """``rint`` (half to even), then clip to ``lo..hi`` (never wrap); returns (int64, number clipped)."""
    r = np.rint(x)
    n = int(np.count_nonzero(r < lo) + np.count_nonzero(r > hi))
    np.clip(r, lo, hi, out=r)
    return r.astype(np.int64), n


def _sumsq(x: np.ndarray) -> float:
    x = x.ravel()
    return float(np.einsum("i,i->", x, x))  # no BLAS threads: fast and deterministic


def _scale_round(w: np.ndarray, s: np.ndarray | float, lo: int, hi: int
                 ) -> tuple[np.ndarray, int, float]:
    """``clip(rint(s * w))`` as int64, the number clipped, and ``||q / s - w|| / ||w||``."""
    x = w * s
    q, n = _to_int(x, lo, hi)
    norm = _sumsq(w)
    if norm == 0.0:
        return q, n, 0.0
    x -= q          # s w - q: the rounding (and clipping) error in integer units
    x /= s
    return q, n, float(np.sqrt(_sumsq(x) / norm))


def _assemble(spec: Specification, a: dict[str, np.ndarray], method: str, s_hid: np.ndarray | float,
              s_out: np.ndarray | float, bits: int, state_bits: int, dash_bits: int) -> Specification:
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
        "bias": (a["bias"], sh, s_lo, s_hi),                # fix: always the hidden layer's own scale
        "threshold_out": (a["threshold_out"], so, s_lo, s_hi),
        "bias_out": (a["bias_out"], so, s_lo, s_hi),        # fix: the output layer's own scale
    }
    new: dict[str, Any] = {}
    clipped: dict[str, int] = {}
    rel: dict[str, float] = {}
    for name, (x, s, lo, hi) in scaled.items():
        new[name], clipped[name], rel[name] = _scale_round(x, s, lo, hi)
    for name in _DASH_FIELDS:
        # a dash out of 0..15 is a mapper violation; a hand-made spec may still carry one: clip, count
        new[name], clipped[name] = _to_int(a[name], 0, (1 << dash_bits) - 1)
    new["aliases"] = np.rint(a["aliases"]).astype(np.int64)
    report = QuantizationReport(
        method=method,
        scales={"hidden": float(sh) if sh.ndim == 0 else sh.copy(),
                "output": float(so) if so.ndim == 0 else so.copy()},
        clipped=clipped, relative_error=rel)
    return spec.replace(**new, quantization=report)


def _check_bits(bits: int, state_bits: int, dash_bits: int) -> None:
    for name, v in (("bits", bits), ("state_bits", state_bits), ("dash_bits", dash_bits)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 2 <= v <= 32:
            raise QuantizationError(f"quantizer {name}", value=v, limit="an int in 2..32",
                                    fix=f"pass {name} as an integer (Xylo: bits=8, state_bits=16, "
                                        f"dash_bits=4)")


def global_quantize(spec: Specification, *, fuzzy_scaling: bool = False, fuzzy_percentile: float = 99.0,
                    bits: int = 8, state_bits: int = 16, dash_bits: int = 4) -> Specification:
    r"""One weight scale per layer: hidden ``s_h = (2^{b-1}-1) / max(|W_in|, |W_rec|)``, output
    ``s_o = (2^{b-1}-1) / max |W_out|``; thresholds and biases are scaled with their layer's scale.

    Args:
        spec: a float specification (from :func:`pondlib.devices.xylo.mapper`); not modified.
        fuzzy_scaling: take ``max`` as the ``fuzzy_percentile``-th percentile of the non-zero
            weight magnitudes instead of the maximum: more resolution for most weights; the outliers
            above it are clipped to the int range (and counted in ``quantization.clipped``).
        fuzzy_percentile: percentile (0..100] used with ``fuzzy_scaling``.
        bits: weight width (8 on Xylo); ``state_bits``: threshold/bias width (16);
            ``dash_bits``: decay shift width (4: dashes 0..15).

    Returns:
        A new specification: ``np.int64`` arrays holding int8 weights, int16 thresholds and biases,
        integer dashes; ``quantization`` is a :class:`QuantizationReport` (method ``"global"``,
        scalar ``scales["hidden"]`` and ``scales["output"]``).

    Raises:
        QuantizationError: NaN/inf or a malformed field (the message names field and index).
    """
    _check_bits(bits, state_bits, dash_bits)
    if not (isinstance(fuzzy_percentile, (int, float)) and 0 < fuzzy_percentile <= 100):
        raise QuantizationError("fuzzy_percentile", value=fuzzy_percentile, limit="a number in (0, 100]",
                                fix="pass e.g. fuzzy_percentile=99.0")
    a = _checked(spec)
    w_max = (1 << (bits - 1)) - 1
    s_max = (1 << (state_bits - 1)) - 1

    def layer_scale(w: np.ndarray, thr: np.ndarray, bias: np.ndarray) -> float:
        mag = np.abs(w[w != 0])
        if mag.size == 0:
            return float(_fallback_scale(np.abs(thr).max(initial=0.0), np.abs(bias).max(initial=0.0),
                                         s_max))
        m = float(np.percentile(mag, fuzzy_percentile)) if fuzzy_scaling else float(mag.max())
        return w_max / m

    w_hid = np.concatenate([a["weights_in"].ravel(), a["weights_rec"].ravel()])
    s_hid = layer_scale(w_hid, a["threshold"], a["bias"])
    s_out = layer_scale(a["weights_out"], a["threshold_out"], a["bias_out"])
    return _assemble(spec, a, "global", s_hid, s_out, bits, state_bits, dash_bits)


def channel_quantize(spec: Specification, *, bits: int = 8, state_bits: int = 16,
                     dash_bits: int = 4) -> Specification:
    r"""One weight scale per post-synaptic neuron: hidden neuron ``i`` gets
    ``s_i = (2^{b-1}-1) / max_{p,k}(|W_in[p, i, k]|, |W_rec[p, i, k]|)`` applied to every weight into
    it and to its threshold and bias; output neuron ``o`` gets ``(2^{b-1}-1) / max_p |W_out[p, o]|``.

    Args:
        spec: a float specification (from :func:`pondlib.devices.xylo.mapper`); not modified.
        bits, state_bits, dash_bits: as in :func:`global_quantize`.

    Returns:
        A new integer specification; ``quantization.scales["hidden"]`` is (N_hid,),
        ``scales["output"]`` (N_out,).

    Raises:
        QuantizationError: NaN/inf or a malformed field (the message names field and index).
    """
    _check_bits(bits, state_bits, dash_bits)
    a = _checked(spec)
    w_max = (1 << (bits - 1)) - 1
    s_max = (1 << (state_bits - 1)) - 1
    n_hid = a["weights_in"].shape[1]
    m_hid = np.zeros(n_hid)
    if a["weights_in"].size:
        m_hid = np.maximum(m_hid, np.abs(a["weights_in"]).max(axis=(0, 2)))
    if a["weights_rec"].size:
        m_hid = np.maximum(m_hid, np.abs(a["weights_rec"]).max(axis=(0, 2)))
    m_out = np.abs(a["weights_out"]).max(axis=0, initial=0.0)

    def scales(m: np.ndarray, thr: np.ndarray, bias: np.ndarray) -> np.ndarray:
        return np.where(m > 0, w_max / np.where(m > 0, m, 1.0), _fallback_scale(thr, bias, s_max))

    s_hid = scales(m_hid, a["threshold"], a["bias"])
    s_out = scales(m_out, a["threshold_out"], a["bias_out"])
    return _assemble(spec, a, "channel", s_hid, s_out, bits, state_bits, dash_bits)
