"""Moved: the C program model is :mod:`pondlib.cprogram.program` (so that each chip's C numerics, below this
layer, can build on it). This module re-exports its public names, with a ``DeprecationWarning``; import
from :mod:`pondlib.cprogram` (or the names re-exported by :mod:`pondlib.codegen`) instead."""

import warnings

from pondlib.cprogram.program import (
    CTYPES,
    ArenaPlan,
    Buffer,
    BufferReport,
    Constant,
    IOSpec,
    MemoryReport,
    Program,
    StateView,
    build_program,
    c_identifier,
    c_literal,
    format_array,
    plan_arena,
)

__all__ = [
    "CTYPES",
    "Constant",
    "Buffer",
    "StateView",
    "IOSpec",
    "BufferReport",
    "MemoryReport",
    "Program",
    "ArenaPlan",
    "plan_arena",
    "build_program",
    "c_identifier",
    "c_literal",
    "format_array",
]

warnings.warn(
    "pondlib.codegen.program moved to pondlib.cprogram.program; import from pondlib.cprogram",
    DeprecationWarning,
    stacklevel=2,
)
