"""Float reductions the quantizers report, safe at the edges of float64.

A relative error ``||a - b|| / ||b||`` computed directly overflows for huge weights (``inf / inf`` is
NaN) and underflows for subnormal ones. :func:`relative_error` scales both by ``max|b|`` first, so the
reported error is finite for every finite input.

Example:
    >>> import numpy as np
    >>> round(relative_error(np.array([1e300, 0.0]), np.array([1e300, 1e299])), 6)
    0.099504
    >>> relative_error(np.zeros(3), np.zeros(3)), relative_error(np.array([5e-324]), np.array([1e-323]))
    (0.0, 0.5)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pondlib.errors import QuantizationError
from pondlib.validate import as_float_array

__all__ = ["relative_error"]


def relative_error(approx: Any, exact: Any) -> float:
    """``||approx - exact|| / ||exact||`` (Frobenius), computed on values scaled by ``max|exact|``; 0 for an
    all-zero ``exact``.

    Raises:
        QuantizationError: operands that are not finite real arrays of one shape.
    """
    where = "relative_error"
    a = as_float_array(approx, "approx", where=where, error=QuantizationError, allow_empty=True)
    b = as_float_array(exact, "exact", where=where, error=QuantizationError, allow_empty=True)
    if a.shape != b.shape:
        raise QuantizationError(
            "shapes",
            value=f"approx {a.shape}, exact {b.shape}",
            limit="one shape",
            where=where,
            fix="pass matching arrays",
        )
    m = float(np.max(np.abs(b))) if b.size else 0.0
    if m == 0:
        return 0.0
    with np.errstate(over="ignore", under="ignore"):
        d = a / m - b / m
        return float(np.linalg.norm(d) / np.linalg.norm(b / m))
