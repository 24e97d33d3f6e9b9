r"""C code generation: any pondlib network or device configuration as plain C11, proven equal to pondlib.

``generate(model, numerics=...)`` returns a :class:`Program` (the C sources as text, the I/O description,
a memory report) with ``.write(directory)``; :func:`compile_host` / :func:`run_host` build and run it on
the host, :mod:`pondlib.codegen.cross` on emulated Cortex-M4F and RV32IMC cores. One numerics per
deployment target:

==============  ==========================================================================================
``float32``     the float model (any ``pondlib.nn`` network), IEEE float32, operation order fixed
                (:mod:`pondlib.codegen.float32`)
a device name   the chip's own arithmetic running one of its configurations, emitted by the device's C
                numerics (``Device.emit``: ``pondlib.devices.<chip>.codegen``, reached through the registry;
                each chip's module says what it emits and what it is checked against)
==============  ==========================================================================================

The program model every numerics builds on (arena, API, harness, templates) is :mod:`pondlib.cprogram`.

Example:
    >>> from pondlib.devices import registry
    >>> numerics() == ("float32",) + tuple(d.name for d in registry.devices() if d.has_c)
    True
"""

from __future__ import annotations

from typing import Any

from pondlib.codegen.toolchain import compile_host, run_host
from pondlib.cprogram import (
    Buffer,
    BufferReport,
    Constant,
    IOSpec,
    MemoryReport,
    Program,
    StateView,
    build_program,
    plan_arena,
)
from pondlib.cprogram.program import check_program_name
from pondlib.devices import registry
from pondlib.errors import CodegenError
from pondlib.validate import check_choice

__all__ = [
    "NUMERICS",
    "numerics",
    "generate",
    "Program",
    "Buffer",
    "BufferReport",
    "Constant",
    "IOSpec",
    "MemoryReport",
    "StateView",
    "build_program",
    "plan_arena",
    "compile_host",
    "run_host",
]

#: The numerics of pondlib itself (the others are the registered devices with C numerics).
FLOAT32 = "float32"


def numerics() -> tuple[str, ...]:
    """Every numerics :func:`generate` takes: ``float32``, then each registered device with C numerics."""
    return (FLOAT32,) + tuple(d.name for d in registry.devices() if d.has_c)


def __getattr__(name: str) -> Any:
    if name == "NUMERICS":  # computed on access: a device registered at run time is included
        return numerics()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def generate(model: Any, numerics: str = FLOAT32, *, name: str = "net", **options: Any) -> Program:
    """Emit ``model`` as C with the given ``numerics`` (see the module docstring).

    Args:
        model: a ``pondlib.nn`` network (``float32``), or a configuration of the device named by
            ``numerics`` (each device's ``codegen.emit`` docstring lists what it takes).
        numerics: one of :func:`numerics`.
        name: the C prefix of every symbol and the file stem: lower case, at most 48 characters, not ``main``,
            a C keyword, a standard header's stem or ``pond_*`` (``pondlib.cprogram.program.check_program_name``).
        options: passed to the emitter.

    Raises:
        CodegenError: an unknown ``numerics`` (the message lists them); a refused ``name``; the model cannot be emitted
            faithfully (an unsupported node names itself and what is supported; an integer path that
            could overflow is refused).
    """
    numerics = check_choice(numerics, "numerics", globals()["numerics"](), error=CodegenError)
    check_program_name(name)  # reserved names, case, length: refused before any C is emitted
    if numerics == FLOAT32:
        from pondlib.codegen.float32 import emit

        return emit(model, name=name, **options)
    return registry.get(numerics).emit(model, name=name, **options)
