r"""The C program model every numerics builds on: constants, buffers, the static arena planned from buffer
lifetimes, the generated API and harness, and the kernel templates.

This package is plain data and text (it imports nothing of pondlib but :mod:`pondlib.errors` and
:mod:`pondlib.validate`), so that both the chips' C numerics (``pondlib.devices.<chip>.codegen``) and
the float numerics of :mod:`pondlib.codegen` build on it; :mod:`pondlib.codegen` is the user-facing
entry (``generate``, the host and cross toolchains).

* :mod:`pondlib.cprogram.program`: :class:`Constant`, :class:`Buffer`, :func:`plan_arena`,
  :func:`build_program` -> :class:`Program` (sources, I/O description, memory report).
* :mod:`pondlib.cprogram.templating`: the renderer of the C templates (one small file per kernel, in a
  ``templates/`` folder beside the emitting module), filled with values computed in
  Python (:func:`render`).
"""

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
from pondlib.cprogram.templating import render

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
    "render",
]
