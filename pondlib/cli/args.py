"""Command-line plumbing shared by the ``pond`` commands: the parser class whose errors are one line,
argument types, and reading array files named on the command line.

Example:
    >>> positive_int("3"), positive_float("1e-4")
    (3, 0.0001)
    >>> positive_int("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: got 0, expected a positive integer
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from pondlib.errors import PondError

__all__ = ["UsageError", "Parser", "positive_int", "positive_float", "load_array"]


class UsageError(Exception):
    """A bad command line (raised instead of argparse's exit, so that ``main`` prints one line; exit 2)."""


class Parser(argparse.ArgumentParser):
    """An argument parser that raises :class:`UsageError` instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


def positive_int(text: str) -> int:
    """An argument type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a positive integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"got {value}, expected a positive integer")
    return value


def positive_float(text: str) -> float:
    """An argument type: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a positive number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"got {text}, expected a positive number")
    return value


def load_array(path: str, what: str, flag: str) -> Any:
    """The one array in the ``.npy`` file ``path`` (``what`` names it and ``flag`` its option in errors).

    Raises:
        PondError: the file is missing, is not a ``.npy`` array, or is an ``.npz`` archive.
    """
    import numpy as np

    p = Path(path)
    if not p.is_file():
        raise PondError(f"{what} file not found", where=str(p), fix=f"pass an existing .npy file with {flag}")
    try:
        arr = np.load(p, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise PondError(
            f"{what} is not a .npy array ({type(exc).__name__})",
            where=str(p),
            fix=f"save it with numpy.save(path, array) and pass it with {flag}",
        ) from None
    if not isinstance(arr, np.ndarray):
        arr.close()
        raise PondError(
            f"{what} is an .npz archive, not one array",
            where=str(p),
            fix=f"save one array with numpy.save(path, array) and pass it with {flag}",
        )
    return arr
