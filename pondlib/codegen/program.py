"""Moved: the C program model is :mod:`pondlib.cprogram.program` (so that each chip's C numerics, below this
layer, can build on it). This module still resolves its names, with a ``DeprecationWarning`` when imported;
import from :mod:`pondlib.cprogram` (or the names re-exported by :mod:`pondlib.codegen`) instead."""

import warnings
from typing import Any

from pondlib.cprogram import program as _program

__all__ = list(_program.__all__)

warnings.warn(
    "pondlib.codegen.program moved to pondlib.cprogram.program; import from pondlib.cprogram",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    return getattr(_program, name)
