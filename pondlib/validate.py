r"""Validation at the public boundary: the one small set of checks every entry point uses.

Every public constructor and entry point checks what it is given here, once, so that the code behind
it can trust its data. A check either returns the value in a canonical form (a Python ``int`` or
``float``, a numpy array of a known dtype) or raises the caller's :class:`~pondlib.errors.PondError`
subclass naming the field, the offending value, the limit and the fix. Nothing is wrapped, clipped,
rounded or dropped silently:

* scalars: ``bool``, ``complex``, strings and ``None`` are never numbers; an integer field takes an
  ``int``, a numpy integer or an integral finite float (``3.0``), never ``2.5``;
* arrays: ragged nesting, ``object``/string/complex dtypes and (unless allowed) empty arrays are refused
  before any arithmetic; floats must be finite, integers are range-checked *before* a narrowing cast;
* ``float32=True`` refuses finite float64 values that would overflow to ``inf`` in float32 (and
  ``int32=True`` integers beyond int32, which JAX would truncate).

Example:
    >>> check_int(3.0, "size", lo=1)
    3
    >>> check_int(2.5, "size", lo=1, where="LIF")
    Traceback (most recent call last):
    ...
    pondlib.errors.PondError: LIF: size: got 2.5, expected an integer >= 1. Fix: pass a whole number
    >>> check_float(float("nan"), "tau_mem", lo=0.0, lo_open=True, where="LIF")
    Traceback (most recent call last):
    ...
    pondlib.errors.PondError: LIF: tau_mem: got nan, expected a finite number > 0.0. Fix: pass a finite number > 0.0
    >>> as_array([[1, 2], [3]], "x")
    Traceback (most recent call last):
    ...
    pondlib.errors.PondError: x: got a ragged nested sequence, expected a rectangular array. Fix: ...
    >>> as_array([1.0, 2.0], "w", float32=True).dtype
    dtype('float64')
    >>> as_int_array([3.0, -2], "counts", lo=0, hi=15)
    Traceback (most recent call last):
    ...
    pondlib.errors.PondError: counts: values out of range: got -2 at index (1,) (counts[1]), expected integers ...
    >>> saturating_cast([1e30, -1e30, 3.7], np.int8).tolist()
    [127, -128, 4]
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from pondlib.errors import PondError, short_int

__all__ = [
    "check_type",
    "check_int",
    "check_float",
    "check_bool",
    "check_choice",
    "as_array",
    "as_float_array",
    "as_int_array",
    "check_shape",
    "saturating_cast",
    "check_readable_file",
    "check_writable_file",
    "check_elements",
    "check_file_size",
    "resolve_inside",
    "check_c_name",
    "check_npy_sizes",
    "index_text",
    "F32_MAX",
    "MAX_ELEMENTS",
    "MAX_FILE_BYTES",
    "I32_MIN",
    "I32_MAX",
]

#: Largest finite float32 (values beyond it become ``inf`` in float32).
F32_MAX = float(np.finfo(np.float32).max)
#: The int32 range (JAX's default integer width).
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
#: The size budget of one tensor a loader may allocate (elements): every loader (ONNX, NIR, ``.pond``
#: archives, configuration files, DRAM images) checks a *declared* size against it before allocating.
MAX_ELEMENTS = 2**28
#: The size budget of one file a loader reads whole (bytes).
MAX_FILE_BYTES = 2**31

ErrorType = type[PondError]


def _fail(error: ErrorType, what: str, value: Any, limit: Any, where: str | None, fix: str | None) -> PondError:
    return error(what, value=value, limit=limit, where=where, fix=fix)


def _bounds_text(lo: Any, hi: Any, lo_open: bool = False, hi_open: bool = False) -> str:
    if lo is not None and hi is not None:
        left, right = ("(" if lo_open else "["), (")" if hi_open else "]")
        return f"in {left}{lo}, {hi}{right}"
    if lo is not None:
        return f"{'>' if lo_open else '>='} {lo}"
    if hi is not None:
        return f"{'<' if hi_open else '<='} {hi}"
    return ""


def _type_name(value: Any) -> str:
    return type(value).__name__


def _number_text(value: Any) -> str:
    """A number as a short text: integers beyond 10**15 (and the floats they came from) in scientific form,
    so that ``1e300`` is never printed as a 301-digit integer."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and abs(int(value)) >= 10**15:
        return short_int(int(value))
    return repr(value.item() if isinstance(value, np.generic) else value)


def index_text(name: str, arr: np.ndarray, idx: tuple[int, ...]) -> str:
    """The element ``arr[idx]`` named for a message: ``"nan at index (1, 2) (weights[1, 2])"``.

    Example:
        >>> index_text("weights", np.array([[0.0, 1.0, 2.0], [0.0, 1.0, np.nan]]), (1, 2))
        'nan at index (1, 2) (weights[1, 2])'
    """
    value = arr[idx]
    shown = value.item() if isinstance(value, np.generic) else value
    if isinstance(shown, float) and shown.is_integer() and abs(shown) < 10**15:
        shown = int(shown)
    label = name.split(":")[0].strip() or "array"
    return f"{_number_text(shown)} at index {idx} ({label}[{', '.join(str(i) for i in idx)}])"


def check_type(
    value: Any,
    name: str,
    types: type | tuple[type, ...],
    *,
    where: str | None = None,
    error: ErrorType = PondError,
    fix: str | None = None,
) -> Any:
    """``value`` itself when it is an instance of ``types``; else an error naming both types.

    Example:
        >>> check_type("abc", "config", dict, where="config_from_specification")
        Traceback (most recent call last):
        ...
        pondlib.errors.PondError: config_from_specification: config: got a str ('abc'), expected dict. Fix: pass a dict
    """
    if isinstance(value, types):
        return value
    names = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
    shown = (
        f"a {_type_name(value)} ({value!r})" if isinstance(value, (str, numbers.Number)) else f"a {_type_name(value)}"
    )
    raise _fail(error, name, shown, names, where, fix or f"pass a {names}")


def _is_real_scalar(value: Any) -> bool:
    return isinstance(value, (numbers.Real, np.floating, np.integer)) and not isinstance(value, (bool, np.bool_))


def _scalar(value: Any) -> Any:
    """A 0-d array or size-1 array as its element; anything else unchanged."""
    if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "iuf":
        return value.reshape(()).item()
    if hasattr(value, "shape") and hasattr(value, "dtype") and getattr(value, "shape", None) == ():
        try:
            return np.asarray(value).item()
        except (TypeError, ValueError):  # pragma: no cover - exotic array types
            return value
    return value


def check_int(
    value: Any,
    name: str,
    *,
    lo: int | None = None,
    hi: int | None = None,
    where: str | None = None,
    error: ErrorType = PondError,
    fix: str | None = None,
) -> int:
    """``value`` as a Python ``int`` within ``[lo, hi]``.

    Accepts ``int``, numpy integers and integral finite floats (``4.0``); refuses ``bool``, fractional
    or non-finite floats, strings, complex and ``None``.
    """
    value = _scalar(value)
    expect = "an integer" + (f" {_bounds_text(lo, hi)}" if (lo is not None or hi is not None) else "")
    if not _is_real_scalar(value):
        raise _fail(
            error,
            name,
            value if value is None else f"a {_type_name(value)} ({value!r})",
            expect,
            where,
            fix or "pass a whole number",
        )
    given = value
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value) or not float(value).is_integer():
            raise _fail(error, name, value, expect, where, fix or "pass a whole number")
        value = int(value)
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        shown = given if isinstance(given, (float, np.floating)) else _number_text(value)
        raise _fail(error, name, shown, expect, where, fix or f"pass an integer {_bounds_text(lo, hi)}")
    return value


def check_float(
    value: Any,
    name: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
    where: str | None = None,
    error: ErrorType = PondError,
    fix: str | None = None,
) -> float:
    """``value`` as a finite Python ``float`` within the bounds (``lo_open``: strictly greater).

    Refuses ``bool``, strings, complex, ``None``, NaN and infinities.
    """
    value = _scalar(value)
    bounds = _bounds_text(lo, hi, lo_open, hi_open)
    expect = "a finite number" + (f" {bounds}" if bounds else "")
    default_fix = f"pass a finite number {bounds}".rstrip()
    if not _is_real_scalar(value):
        raise _fail(
            error,
            name,
            value if value is None else f"a {_type_name(value)} ({value!r})",
            expect,
            where,
            fix or default_fix,
        )
    value = float(value)
    if not math.isfinite(value):
        raise _fail(error, name, value, expect, where, fix or default_fix)
    low_bad = lo is not None and (value <= lo if lo_open else value < lo)
    high_bad = hi is not None and (value >= hi if hi_open else value > hi)
    if low_bad or high_bad:
        raise _fail(error, name, value, expect, where, fix or default_fix)
    return value


def check_bool(
    value: Any, name: str, *, where: str | None = None, error: ErrorType = PondError, fix: str | None = None
) -> bool:
    """``value`` when it is a ``bool`` (or numpy bool); never a truthy string such as ``"False"``."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise _fail(error, name, f"a {_type_name(value)} ({value!r})", "True or False", where, fix or "pass True or False")


def check_choice(
    value: Any,
    name: str,
    choices: Iterable[Any],
    *,
    where: str | None = None,
    error: ErrorType = PondError,
    fix: str | None = None,
) -> Any:
    """``value`` when it is one of ``choices``."""
    choices = tuple(choices)
    kinds = {type(c) for c in choices}
    if len(kinds) == 1 and str in kinds and not isinstance(value, str):
        raise _fail(
            error,
            name,
            f"a {_type_name(value)}" + (f" ({value!r})" if isinstance(value, numbers.Number) else ""),
            f"a str, one of {list(choices)}",
            where,
            fix or f"pass one of the names {list(choices)}",
        )
    try:
        ok = value in choices
    except (TypeError, ValueError):  # unhashable or array-valued
        ok = False
    if not ok:
        raise _fail(error, name, value, f"one of {list(choices)}", where, fix or f"use one of {list(choices)}")
    return value


def _to_ndarray(value: Any, name: str, where: str | None, error: ErrorType, fix: str | None) -> np.ndarray:
    """``value`` as a numpy array (not copied when it is one); strings, ``None``, ragged nesting and objects
    whose ``__array__`` fails are refused."""
    if isinstance(value, (str, bytes)) or value is None:
        raise _fail(error, name, f"a {_type_name(value)}", "a numeric array", where, fix or "pass a numeric array")
    if hasattr(value, "__array__") and not isinstance(value, np.ndarray):
        try:
            value = np.asarray(value)
        except (TypeError, ValueError) as err:
            raise _fail(error, name, str(err), "a numeric array", where, fix or "pass a numeric array") from None
    if not isinstance(value, np.ndarray):
        try:
            value = np.asarray(value)
        except ValueError:
            raise _fail(
                error,
                name,
                "a ragged nested sequence",
                "a rectangular array",
                where,
                fix or "give every row the same length (pad it), or pass a numpy array",
            ) from None
    return value


def _check_layout(
    value: np.ndarray,
    name: str,
    where: str | None,
    error: ErrorType,
    fix: str | None,
    ndim: int | tuple[int, ...] | None,
    allow_empty: bool,
) -> None:
    """A real numeric dtype (bool, integer, float: never complex, object or strings), one of the allowed
    numbers of dimensions ``ndim`` (None: any) and, unless ``allow_empty``, at least one element."""
    kind = value.dtype.kind
    if kind == "c":
        raise _fail(
            error,
            name,
            f"complex values (dtype {value.dtype})",
            "real numbers",
            where,
            fix or "pass the real part explicitly (np.real) if that is what you mean",
        )
    if kind not in "biuf":
        what = {"U": " (strings)", "S": " (bytes)", "O": " (Python objects)", "M": " (dates)", "m": " (durations)"}
        raise _fail(
            error,
            name,
            f"dtype {value.dtype}{what.get(kind, '')}",
            "a numeric (bool, integer or float) array",
            where,
            fix or "convert the data to numbers first",
        )
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if value.ndim not in allowed:
            raise _fail(
                error,
                f"{name} rank",
                f"{value.ndim}-d array of shape {value.shape}",
                " or ".join(f"{d}-d" for d in allowed),
                where,
                fix or "reshape the array",
            )
    if value.size == 0 and not allow_empty:
        raise _fail(
            error,
            name,
            f"an empty array of shape {value.shape}",
            "at least one element",
            where,
            fix or "pass a non-empty array",
        )


def _check_float_values(
    value: np.ndarray, name: str, where: str | None, error: ErrorType, fix: str | None, float32: bool
) -> None:
    """Floats are finite and, with ``float32``, ``|x| <= F32_MAX`` when wider than float32 (a cast to float32
    would give ``inf``); the first offending element is named with its index."""
    finite = np.isfinite(value)
    if not finite.all():
        idx = tuple(int(i) for i in np.argwhere(~finite)[0])
        raise _fail(
            error, name, index_text(name, value, idx), "finite values", where, fix or "remove NaN and infinite values"
        )
    if float32 and value.dtype.itemsize > 4:
        big = np.abs(value) > F32_MAX
        if big.any():
            idx = tuple(int(i) for i in np.argwhere(big)[0])
            raise _fail(
                error,
                name,
                index_text(name, value, idx),
                f"|values| <= {F32_MAX:.4g} (float32)",
                where,
                fix or "scale the values into float32 range",
            )


def _check_int32_range(value: np.ndarray, name: str, where: str | None, error: ErrorType, fix: str | None) -> None:
    """Integers wider than int32 lie in ``[I32_MIN, I32_MAX]`` (JAX would truncate them)."""
    lo, hi = int(value.min()), int(value.max())
    if lo < I32_MIN or hi > I32_MAX:
        raise _fail(
            error,
            name,
            f"values in [{lo}, {hi}]",
            f"int32 values in [{I32_MIN}, {I32_MAX}]",
            where,
            fix or "scale the values into int32 range",
        )


def as_array(
    value: Any,
    name: str,
    *,
    where: str | None = None,
    error: ErrorType = PondError,
    fix: str | None = None,
    ndim: int | tuple[int, ...] | None = None,
    allow_empty: bool = False,
    float32: bool = False,
    int32: bool = False,
) -> np.ndarray:
    """``value`` as a real numeric numpy array (bool, integer or float dtype), not copied when it is one.

    Refuses ragged nesting, strings, ``None``, complex and object dtypes, the wrong number of dimensions
    (``ndim``: one or several allowed), empty arrays (unless ``allow_empty``), non-finite floats,
    floats beyond float32 (``float32=True``) and integers beyond int32 (``int32=True``).
    """
    value = _to_ndarray(value, name, where, error, fix)
    _check_layout(value, name, where, error, fix, ndim, allow_empty)
    kind = value.dtype.kind
    if kind == "f" and value.size:
        _check_float_values(value, name, where, error, fix, float32)
    if int32 and kind in "iu" and value.size and value.dtype.itemsize > 4:
        _check_int32_range(value, name, where, error, fix)
    return value


def as_float_array(
    value: Any,
    name: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    dtype: Any = np.float64,
    **kwargs: Any,
) -> np.ndarray:
    """:func:`as_array`, checked against ``[lo, hi]``, then cast to ``dtype`` (float64 by default)."""
    arr = as_array(value, name, **kwargs)
    if arr.size and (lo is not None or hi is not None):
        bad = np.zeros(arr.shape, dtype=bool)
        if lo is not None:
            bad |= arr < lo
        if hi is not None:
            bad |= arr > hi
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise _fail(
                kwargs.get("error", PondError),
                f"{name}: values out of range",
                index_text(name, arr, idx),
                f"values {_bounds_text(lo, hi)}",
                kwargs.get("where"),
                kwargs.get("fix") or f"keep every value {_bounds_text(lo, hi)}",
            )
    return arr.astype(dtype, copy=False)


def as_int_array(
    value: Any,
    name: str,
    *,
    lo: int | None = None,
    hi: int | None = None,
    dtype: Any = np.int64,
    **kwargs: Any,
) -> np.ndarray:
    """:func:`as_array` holding whole numbers within ``[lo, hi]``, cast to ``dtype`` only after the check.

    Floats must be integral (``3.0``; never rounded here); booleans count as 0/1.
    """
    arr = as_array(value, name, **kwargs)
    error, where = kwargs.get("error", PondError), kwargs.get("where")
    if arr.dtype.kind == "f" and arr.size:
        frac = arr != np.round(arr)
        if frac.any():
            idx = tuple(int(i) for i in np.argwhere(frac)[0])
            raise _fail(
                error,
                f"{name}: non-integer values",
                index_text(name, arr, idx),
                "whole numbers",
                where,
                kwargs.get("fix") or "round or quantize the values first",
            )
    info = np.iinfo(dtype)
    lo_eff = info.min if lo is None else max(lo, info.min)
    hi_eff = info.max if hi is None else min(hi, info.max)
    if arr.size:
        bad = (arr < lo_eff) | (arr > hi_eff)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise _fail(
                error,
                f"{name}: values out of range",
                index_text(name, arr, idx),
                f"integers in [{lo_eff}, {hi_eff}]",
                where,
                kwargs.get("fix") or f"keep every value within [{lo_eff}, {hi_eff}]",
            )
    return arr.astype(dtype, copy=False)


def check_shape(
    arr: np.ndarray,
    name: str,
    shape: tuple[int | None, ...],
    *,
    where: str | None = None,
    error: ErrorType = PondError,
    fix: str | None = None,
) -> np.ndarray:
    """``arr`` when its shape matches ``shape`` (``None`` matches any size on that axis)."""
    ok = arr.ndim == len(shape) and all(s is None or s == a for s, a in zip(shape, arr.shape))
    if not ok:
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
        raise _fail(error, f"{name} shape", tuple(arr.shape), want, where, fix or f"pass an array of shape {want}")
    return arr


def saturating_cast(values: Any, dtype: Any) -> np.ndarray:
    """Round half to even and clip to ``dtype``'s range *before* casting, so nothing wraps.

    ``+1e30`` becomes the largest value, never a wrapped negative one; NaN is refused (it has no integer).
    """
    arr = np.asarray(values)
    info = np.iinfo(dtype)
    if arr.dtype.kind == "f":
        if np.isnan(arr).any():
            raise PondError("saturating cast", value="NaN", limit="numbers", fix="remove NaN values first")
        arr = np.clip(np.rint(arr), info.min, info.max)
    elif arr.dtype.kind in "iub":
        arr = np.clip(
            arr.astype(np.int64) if arr.dtype.kind == "u" and arr.dtype.itemsize < 8 else arr, info.min, info.max
        )
    else:
        raise PondError("saturating cast", value=f"dtype {arr.dtype}", limit="a numeric array")
    return arr.astype(dtype)


def check_readable_file(
    path: Any, name: str = "file", *, error: ErrorType = PondError, suffix: str | None = None
) -> Path:
    """``path`` as a :class:`~pathlib.Path` to an existing regular file."""
    if not isinstance(path, (str, os.PathLike)):
        raise _fail(error, name, f"a {_type_name(path)}", "a path (str or os.PathLike)", None, "pass a file path")
    p = Path(path)
    if not p.exists():
        raise _fail(
            error,
            f"{name} not found",
            str(p),
            f"an existing {suffix or ''} file".replace("  ", " "),
            str(p),
            "check the path",
        )
    if not p.is_file():
        raise _fail(error, f"{name} is not a regular file", str(p), "a file", str(p), "pass the path of a file")
    return p


def check_writable_file(path: Any, name: str = "file", *, error: ErrorType = PondError) -> Path:
    """``path`` as a :class:`~pathlib.Path` that can be written: not a directory, parent directory exists."""
    if not isinstance(path, (str, os.PathLike)):
        raise _fail(error, name, f"a {_type_name(path)}", "a path (str or os.PathLike)", None, "pass a file path")
    p = Path(path)
    if p.is_dir():
        raise _fail(
            error,
            f"{name} is a directory",
            str(p),
            "a file path",
            str(p),
            "name a file inside the directory, e.g. DIR/network.pond",
        )
    if not p.parent.exists():
        raise _fail(
            error,
            f"{name}: directory does not exist",
            str(p.parent),
            "an existing directory",
            str(p),
            "create the directory first",
        )
    return p


def check_elements(
    shape: Any,
    name: str,
    *,
    budget: int = MAX_ELEMENTS,
    where: str | None = None,
    error: ErrorType = PondError,
    fix: str | None = None,
) -> int:
    """The element count of a *declared* shape, checked against ``budget`` before anything is allocated.

    Every loader calls it on the sizes a file declares (a tensor header, an array's shape, a count field):
    a hostile or corrupted file cannot make pondlib allocate more than :data:`MAX_ELEMENTS` elements per
    tensor. Negative or non-integer sizes are refused too. The product is computed in Python integers
    (no overflow) and stops as soon as it exceeds the budget (bounded work for any number of dimensions).

    Example:
        >>> check_elements((3, 4), "weight")
        12
        >>> check_elements((1, 10**12), "input x", where="model.onnx")
        Traceback (most recent call last):
        ...
        pondlib.errors.PondError: model.onnx: input x size: got shape (1, 1000000000000) = 1000000000000 elements, ...
    """
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if len(dims) > 64:
        raise _fail(error, f"{name} rank", len(dims), "at most 64 dimensions", where, fix or "check the file")
    total = 1
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or int(d) < 0:
            raise _fail(
                error, f"{name} size", f"shape {dims}", "non-negative integer sizes", where, fix or "check the file"
            )
        total *= int(d)  # at most 64 products of Python integers: bounded
    if total > budget:
        raise _fail(
            error,
            f"{name} size",
            f"shape {tuple(int(d) for d in dims)} = {_number_text(total) if total >= 10**15 else total} elements",
            f"at most {budget} elements (the loader's size budget)",
            where,
            fix or "check the declared sizes (a corrupted or hostile file?); nothing was allocated",
        )
    return total


def check_file_size(
    path: Path, name: str = "file", *, budget: int = MAX_FILE_BYTES, error: ErrorType = PondError
) -> int:
    """The size in bytes of the file ``path``, checked against ``budget`` before it is read whole."""
    size = Path(path).stat().st_size
    if size > budget:
        raise _fail(
            error,
            f"{name} size",
            f"{size} bytes",
            f"at most {budget} bytes (the loader's size budget)",
            str(path),
            "split the model or check the file",
        )
    return size


def resolve_inside(
    base: Any, location: Any, name: str = "external file", *, where: str | None = None, error: ErrorType = PondError
) -> Path:
    """``location`` (a path relative to the folder ``base``) resolved inside ``base``, or an error.

    The rule for files a model refers to (ONNX external data): a location is resolved against the
    *model's* folder, never the working directory, and must stay inside it after every ``..`` and symbolic
    link is resolved. Absolute paths, paths with NUL bytes, paths that escape the folder (``../x``,
    a link pointing outside) and locations that are not regular files are refused.

    Example:
        >>> resolve_inside("/tmp", "../etc/passwd", "external data", where="model.onnx")
        Traceback (most recent call last):
        ...
        pondlib.errors.PondError: model.onnx: external data location: got '../etc/passwd', expected a relative \
path inside the model's folder /tmp. Fix: ...
    """
    root = Path(base).resolve()
    limit = f"a relative path inside the model's folder {root}"
    fix = "keep the external data files next to the model (onnx.save(..., location='name.bin'))"
    if not isinstance(location, str) or not location or "\0" in location or os.path.isabs(location):
        raise _fail(error, f"{name} location", repr(location), limit, where, fix)
    target = (root / location).resolve()
    if target != root and root not in target.parents:
        raise _fail(error, f"{name} location", repr(location), limit, where, fix)
    if not target.is_file():
        raise _fail(error, f"{name} not found", repr(location), f"a file in {root}", where, fix)
    return target


#: Generated C program names: lower case (the harness derives the upper-case macro prefix from it), at most
#: this many characters (file names and symbols stay short on every file system and linker).
C_NAME_MAX = 48


def check_c_name(
    name: Any,
    what: str = "name",
    *,
    reserved: Iterable[str] = (),
    reserved_prefixes: Iterable[str] = (),
    max_len: int = C_NAME_MAX,
    error: ErrorType = PondError,
) -> str:
    """``name`` when it is a lower-case C identifier (``[a-z][a-z0-9_]*``, at most ``max_len`` characters),
    not in ``reserved`` and not starting with one of ``reserved_prefixes``; else an error naming the rule.

    Example:
        >>> check_c_name("digits_net", "program name")
        'digits_net'
        >>> check_c_name("main", "program name", reserved=("main",))
        Traceback (most recent call last):
        ...
        pondlib.errors.PondError: program name: got 'main', expected a C identifier that is not reserved ...
    """
    import re

    fix = "pass a short lower-case name such as name='net'"
    if not isinstance(name, str):
        raise _fail(error, what, f"a {_type_name(name)}", "a str (a C identifier)", None, fix)
    shown = name if len(name) <= 60 else name[:57] + "..."
    if len(name) > max_len:
        raise _fail(
            error,
            what,
            f"{len(name)} characters ({shown!r})",
            f"a C identifier of at most {max_len} characters",
            None,
            fix,
        )
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise _fail(
            error,
            what,
            repr(shown),
            "a lower-case C identifier: letters, digits and _, starting with a letter",
            None,
            fix,
        )
    reserved = tuple(reserved)
    if name in reserved:
        limit = "a C identifier that is not reserved (it would collide with a keyword, the harness or a C header)"
        raise _fail(error, what, repr(name), limit, None, fix)
    for prefix in reserved_prefixes:
        if name.startswith(prefix):
            raise _fail(error, what, repr(name), f"a C identifier not starting with {prefix!r} (reserved)", None, fix)
    return name


def check_npy_sizes(path: Any, name: str = "file", *, error: ErrorType = PondError) -> None:
    """The declared shape of a ``.npy`` file, or of every array in a ``.npz`` archive, checked against
    :data:`MAX_ELEMENTS` (and the archive's members against :data:`MAX_FILE_BYTES`) before ``np.load``
    allocates them: numpy allocates an array of the header's shape before it reads a byte of it.

    A file whose headers cannot be read is left to ``np.load``, whose failure the caller reports.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.npy"
        >>> np.save(p, np.zeros((2, 3)))
        >>> check_npy_sizes(p, "input") is None
        True
    """
    import zipfile
    import zlib

    p = Path(path)
    check_file_size(p, name, error=error)
    try:
        if zipfile.is_zipfile(p):
            with zipfile.ZipFile(p) as zf:
                for info in zf.infolist()[:4096]:
                    if info.file_size > MAX_FILE_BYTES:
                        raise _fail(error, f"{name} member {info.filename[:60]!r} size", f"{info.file_size} bytes",
                                    f"at most {MAX_FILE_BYTES} bytes (the loader's size budget)", str(p),
                                    "check the file (corrupted or hostile?); nothing was read")  # fmt: skip
                    with zf.open(info) as member:
                        _check_npy_header(member, f"{name} member {info.filename[:60]!r}", str(p), error)
        else:
            with open(p, "rb") as fh:
                _check_npy_header(fh, name, str(p), error)
    except PondError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError):
        return


def _check_npy_header(fh: Any, name: str, where: str, error: ErrorType) -> None:
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version not in ((1, 0), (2, 0)):
            return  # np.load refuses or reads it (version 3 differs only in its field names' encoding)
        read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape = read(fh)[0]
    except (ValueError, EOFError, SyntaxError, TypeError, OverflowError, RecursionError):
        return  # not a .npy header: np.load says so
    check_elements(tuple(shape), name, where=where, error=error)
