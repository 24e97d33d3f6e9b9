"""Simulator input checks shared by the devices: integer event counts or activations, checked once per call.

:func:`integer_input` is the boundary of every bit-precise simulator's ``evolve``: it refuses (with a
:class:`~pondlib.errors.SimulationError` naming the field, the value, where it is and the limit) what
would otherwise be cast silently: strings, ``None``, complex and object dtypes, ragged nesting, the
wrong rank or width, empty arrays, NaN and infinities, fractional floats and values outside
``[lo, hi]``. The range is checked *before* the cast to ``int64``, so a huge float or a ``uint64``
beyond ``int64`` is reported, never wrapped.

Example:
    >>> import numpy as np
    >>> integer_input([[0, 2], [1, 0]], 2, where="Sim.evolve", lo=0).dtype
    dtype('int64')
    >>> integer_input([[0.5, 1.0]], 2, where="Sim.evolve")
    Traceback (most recent call last):
    ...
    pondlib.errors.SimulationError: Sim.evolve, x[0, 0]: non-integer input: got 0.5, expected a finite integer. Fix: ...
    >>> integer_input(np.array([[-1, 0]]), 2, where="Sim.evolve", lo=0)
    Traceback (most recent call last):
    ...
    pondlib.errors.SimulationError: Sim.evolve, x[0, 0]: input out of range: got -1, expected >= 0. Fix: ...
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pondlib.errors import SimulationError
from pondlib.validate import as_float_array, as_int_array, check_int

__all__ = ["integer_input", "append_silence", "dnn_input"]


def _shape_text(ranks: tuple[int, ...], n_in: int) -> str:
    names = {1: f"({n_in},)", 2: f"(T, {n_in})", 3: f"(B, T, {n_in})"}
    return " or ".join(names.get(r, f"{r}-d") for r in ranks)


def integer_input(
    x: Any,
    n_in: int,
    *,
    where: str,
    lo: int | None = None,
    hi: int | None = None,
    ranks: tuple[int, ...] = (2, 3),
    name: str = "x",
    allow_float: bool = True,
    fix: str | None = None,
) -> np.ndarray:
    """``x`` as an ``int64`` array of one of ``ranks`` whose last axis is ``n_in``, values in ``[lo, hi]``.

    Args:
        x: the input (any array-like). n_in: the width of the last axis. where: the entry point.
        lo, hi: inclusive bounds (None: the int64 bound). ranks: allowed numbers of dimensions.
        name: the argument's name in messages. allow_float: accept integral floats (``3.0``); when
            False a float array is refused as un-quantized input. fix: how to fix any problem.

    Raises:
        SimulationError: every refusal listed in the module docstring (the first offending element).
    """
    shape_text = _shape_text(ranks, n_in)
    fix = fix or f"pass integers of shape {shape_text}"
    if isinstance(x, (str, bytes)) or x is None:
        raise SimulationError(
            "input dtype", value=f"a {type(x).__name__}", limit="an integer array", where=where, fix=fix
        )
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError):
        raise SimulationError(
            "input shape",
            value="a ragged nested sequence",
            limit="a rectangular array",
            where=where,
            fix="give every row the same length, or pass a numpy array",
        ) from None
    kind = arr.dtype.kind
    if kind not in "biuf" or (kind == "f" and not allow_float):
        what = f"complex values (dtype {arr.dtype})" if kind == "c" else f"dtype {arr.dtype}"
        raise SimulationError("input dtype", value=what, limit="integers", where=where, fix=fix)
    if arr.ndim not in ranks or arr.shape[-1] != n_in:
        raise SimulationError("input shape", value=tuple(arr.shape), limit=shape_text, where=where, fix=fix)
    if arr.size == 0:
        raise SimulationError(
            "input shape",
            value=f"an empty array of shape {tuple(arr.shape)}",
            limit="at least one sample and one step",
            where=where,
            fix="pass a non-empty input",
        )

    def at(mask: np.ndarray) -> tuple[str, Any]:
        i = tuple(int(v) for v in np.argwhere(mask)[0])
        return f"{where}, {name}[{', '.join(map(str, i))}]", arr[i].item()

    if kind == "f":
        finite = np.isfinite(arr)
        bad = ~finite | (arr != np.rint(np.where(finite, arr, 0.0)))
        if bad.any():
            loc, val = at(bad)
            raise SimulationError("non-integer input", value=val, limit="a finite integer", where=loc, fix=fix)
    i64 = np.iinfo(np.int64)
    lo_eff = i64.min if lo is None else max(int(lo), i64.min)
    hi_eff = i64.max if hi is None else min(int(hi), i64.max)
    if kind == "u":
        bad = arr > hi_eff if lo_eff <= 0 else (arr < lo_eff) | (arr > hi_eff)
    elif kind == "b":
        bad = (arr.astype(np.int64) < lo_eff) | (arr.astype(np.int64) > hi_eff)
    else:
        bad = (arr < lo_eff) | (arr > hi_eff)
        if kind == "f":  # 2^63 - 1 rounds up to 2^63 in float64: refuse what the cast would wrap
            bad |= (arr >= 2.0**63) | (arr < -(2.0**63))
    if bad.any():
        loc, val = at(bad)
        if isinstance(val, float):
            val = int(val)
        if lo is not None and hi is not None:
            limit = f"[{lo_eff}, {hi_eff}]"
        elif val < lo_eff:
            limit = f">= {lo_eff}"
        else:
            limit = f"<= {hi_eff}" + ("" if hi is not None else " (int64)")
        raise SimulationError("input out of range", value=val, limit=limit, where=loc, fix=fix)
    return arr.astype(np.int64)


def append_silence(x: Any, ticks: int) -> np.ndarray:
    r"""Input ``x`` (T, N) or (B, T, N) followed by ``ticks`` steps without events: (T + ticks, N) or
    (B, T + ticks, N), same dtype.

    A chip whose layers pass spikes on one tick late (SpiNNaker2: one tick per hop, plus synapse
    delays; ``Specification.latency_ticks``) answers the last input step that many ticks later; run
    it on ``append_silence(x, latency)`` so that every output the input causes is counted:
    :math:`x'[t] = x[t]` for :math:`t < T`, :math:`x'[t] = 0` for :math:`T \le t < T + ticks`.

    Example:
        >>> append_silence(np.ones((2, 3), np.int32), 2).tolist()
        [[1, 1, 1], [1, 1, 1], [0, 0, 0], [0, 0, 0]]
        >>> append_silence(np.ones((4, 5, 3)), 1).shape
        (4, 6, 3)

    Raises:
        SimulationError: ``x`` not a real numeric array of rank 2 or 3, or ``ticks`` not an integer >= 0.
    """
    where = "append_silence"
    ticks = check_int(ticks, "ticks", where=where, error=SimulationError, lo=0, hi=1 << 24)
    try:
        arr = None if isinstance(x, (str, bytes)) else np.asarray(x)
    except (ValueError, TypeError):  # ragged nesting
        arr = None
    bad_dtype = arr is None or not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating)
    if bad_dtype or arr.ndim not in (2, 3):
        raise SimulationError(
            "x",
            value=type(x).__name__ if arr is None else f"shape {arr.shape}, dtype {arr.dtype}",
            limit="a numeric array (T, N) or (B, T, N)",
            where=where,
            fix="pass the input events, time on the axis before the last",
        )
    pad = [(0, 0)] * arr.ndim
    pad[-2] = (0, ticks)
    return np.pad(arr, pad)


def dnn_input(x: Any, lo: int, hi: int, ndim: tuple[int, ...], quantize: Any, where: str) -> np.ndarray:
    """The integer input of a DNN deployment read from the user's file ``where``: integers in ``[lo, hi]``
    with ``ndim`` dimensions, or, with a ``quantize(x) -> integers`` function, real numbers it quantizes.

    Raises:
        PondError: naming the file: fractional values without ``quantize``, values out of range, NaN,
            the wrong number of dimensions.
    """
    shapes = " or ".join(("(B, N_in)", "(B, T, N_in)")[: len(ndim)])
    if quantize is not None:
        arr = as_float_array(
            x, "input", dtype=np.float64, ndim=ndim, where=where, fix=f"pass real numbers of shape {shapes}"
        )
        return quantize(arr)
    return as_int_array(
        x,
        "input (integers; real numbers need --quantize)",
        lo=lo,
        hi=hi,
        ndim=ndim,
        where=where,
        fix=f"pass integers in [{lo}, {hi}] of shape {shapes}, or real numbers with --quantize",
    )
