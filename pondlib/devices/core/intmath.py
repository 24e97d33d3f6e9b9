"""Integer helpers with explicit widths: saturation and two's-complement wrap-around.

Both work on any real integer input (Python ints of any size, every numpy integer width, integral
floats) and never pass a value through a narrowing cast first: :func:`sat` clips *before* it casts to
``int64`` (``sat(1e30, 8)`` is 127, ``sat(-inf, 8)`` is -128), :func:`wrap` reduces modulo ``2^bits``
exactly. What has no integer value raises :class:`~pondlib.errors.PondError`: NaN, fractional floats
(round first, e.g. ``np.rint``), complex numbers, strings and ragged nesting; :func:`wrap` also refuses
infinities (they have no residue).

Example:
    >>> import numpy as np
    >>> sat(np.array([40000, -40000, 5]), 16).tolist()
    [32767, -32768, 5]
    >>> wrap(np.array([32768, -32769, 255]), 16).tolist()
    [-32768, 32767, 255]
    >>> int(sat(1e30, 8)), int(sat(-np.inf, 8)), int(sat(2**70, 16))
    (127, -128, 32767)
    >>> sat(float("nan"), 8)
    Traceback (most recent call last):
    ...
    pondlib.errors.PondError: sat: x: got nan at index (), expected a number (NaN has no integer value). Fix: ...
    >>> int(wrap(2**64 + 5, 8)), int(wrap(-1.0, 8))
    (5, -1)
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from pondlib.errors import PondError
from pondlib.validate import check_bool, check_int

__all__ = ["sat", "wrap", "int_range"]

_I64_MAX = (1 << 63) - 1


def int_range(bits: int, signed: bool = True) -> tuple[int, int]:
    """The inclusive range ``(lo, hi)`` of a ``bits``-wide integer (``bits`` in 1..64)."""
    bits = check_int(bits, "bits", lo=1, hi=64, where="int_range")
    if check_bool(signed, "signed", where="int_range"):
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def _numeric(x: Any, where: str) -> np.ndarray:
    """``x`` as a real numeric array (object arrays only of Python integers); else a PondError."""
    if isinstance(x, (str, bytes)) or x is None:
        raise PondError("x", value=f"a {type(x).__name__}", limit="integers", where=where, fix="pass numbers")
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError):
        raise PondError(
            "x", value="a ragged nested sequence", limit="a rectangular array", where=where, fix="pass an array"
        ) from None
    kind = arr.dtype.kind
    if kind == "O":
        ok = all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in arr.ravel().tolist())
        if not ok:
            raise PondError("x", value="non-integer objects", limit="integers", where=where, fix="pass numbers")
    elif kind not in "biuf":
        raise PondError("x", value=f"dtype {arr.dtype}", limit="real integers", where=where, fix="pass real numbers")
    return arr


def _first(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0]) if mask.ndim else ()


def _check_float(arr: np.ndarray, where: str, allow_inf: bool) -> None:
    nan = np.isnan(arr)
    if nan.any():
        raise PondError(
            "x",
            value=f"nan at index {_first(nan)}",
            limit="a number (NaN has no integer value)",
            where=where,
            fix="remove NaN values first",
        )
    if not allow_inf:
        inf = np.isinf(arr)
        if inf.any():
            i = _first(inf)
            raise PondError(
                "x", value=f"{arr[i]} at index {i}", limit="finite integers", where=where, fix="remove infinities"
            )
    frac = np.isfinite(arr) & (arr != np.trunc(np.where(np.isfinite(arr), arr, 0.0)))
    if frac.any():
        i = _first(frac)
        raise PondError(
            "x",
            value=f"{arr[i]} at index {i}",
            limit="whole numbers",
            where=where,
            fix="round first (np.rint) or quantize the values",
        )


def _scalar_out(out: np.ndarray) -> np.ndarray:
    return out[()] if out.ndim == 0 else out


def sat(x: Any, bits: int) -> np.ndarray:
    """Clamp ``x`` to the signed ``bits``-wide range ``[-2^(b-1), 2^(b-1) - 1]`` as ``int64``.

    The clamp happens before any cast (in float64 for floats, in Python integers for values beyond
    int64), so nothing wraps; ``+-inf`` saturate. NaN, fractional floats and non-numbers raise.
    """
    lo, hi = int_range(bits)
    arr = _numeric(x, "sat")
    kind = arr.dtype.kind
    if kind == "f":
        _check_float(arr, "sat", allow_inf=True)
        hi_f = float(hi)
        if hi_f > hi:  # 2^63 - 1 is not a float: clip to the largest float below it, then fix up
            hi_f = float(np.nextafter(hi_f, 0.0))
        out = np.clip(arr.astype(np.float64), float(lo), hi_f).astype(np.int64)
        if hi_f < hi:
            out = np.where(arr > hi_f, hi, out)
        return _scalar_out(np.asarray(out, dtype=np.int64))
    if kind == "O":
        vals = [min(max(int(v), lo), hi) for v in arr.ravel().tolist()]
        return _scalar_out(np.array(vals, dtype=np.int64).reshape(arr.shape))
    if kind == "u" and arr.dtype.itemsize == 8:
        arr = np.minimum(arr, np.uint64(min(hi, _I64_MAX)))  # beyond int64: clip in uint64 first
    return np.clip(arr.astype(np.int64), lo, hi)


def wrap(x: Any, bits: int) -> np.ndarray:
    """Two's-complement wrap of ``x`` to a signed ``bits``-wide integer (what a narrowing cast does).

    Exact for every integer input (the residue modulo ``2^bits`` is taken before any cast); NaN,
    infinities, fractional floats and non-numbers raise.
    """
    lo, hi = int_range(bits)
    arr = _numeric(x, "wrap")
    kind = arr.dtype.kind
    if kind == "f":
        _check_float(arr, "wrap", allow_inf=False)
        if arr.size and float(np.max(np.abs(arr))) >= 2.0**63:
            arr = np.array([int(v) for v in arr.ravel().tolist()], dtype=object).reshape(arr.shape)
            kind = "O"
    if kind == "O":
        m, half = 1 << bits, 1 << (bits - 1)
        vals = [((int(v) + half) % m) - half for v in arr.ravel().tolist()]
        return _scalar_out(np.array(vals, dtype=np.int64).reshape(arr.shape))
    v = arr.astype(np.int64)  # exact for integral floats below 2^63; uint64 wraps mod 2^64 (same residue)
    if bits == 64:
        return _scalar_out(np.asarray(v))
    half = np.int64(1 << (bits - 1))
    r = v & np.int64((1 << bits) - 1)  # the residue in [0, 2^bits), two's complement
    return _scalar_out(np.asarray(np.where(r >= half, r - half - half, r), dtype=np.int64))
