"""Integer helpers with explicit widths: saturation and two's-complement wrap-around.

Example:
    >>> import numpy as np
    >>> sat(np.array([40000, -40000, 5]), 16).tolist()
    [32767, -32768, 5]
    >>> wrap(np.array([32768, -32769, 255]), 16).tolist()
    [-32768, 32767, 255]
"""

from __future__ import annotations

import numpy as np

__all__ = ["sat", "wrap", "int_range"]


def int_range(bits: int, signed: bool = True) -> tuple[int, int]:
    """The inclusive range ``(lo, hi)`` of a ``bits``-wide integer."""
    if signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def sat(x: np.ndarray, bits: int) -> np.ndarray:
    """Clamp ``x`` to the signed ``bits``-wide range: ``min(max(x, -2^(b-1)), 2^(b-1) - 1)``."""
    lo, hi = int_range(bits)
    return np.clip(np.asarray(x, dtype=np.int64), lo, hi)


def wrap(x: np.ndarray, bits: int) -> np.ndarray:
    """Two's-complement wrap of ``x`` to a signed ``bits``-wide integer (what a narrowing cast does)."""
    x = np.asarray(x, dtype=np.int64)
    m = 1 << bits
    return ((x + (m >> 1)) % m) - (m >> 1)
