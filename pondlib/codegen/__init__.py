r"""C code generation: any pondlib network or device configuration as plain C11, proven equal to pondlib.

``generate(model, numerics=...)`` returns a :class:`Program` (the C sources as text, the I/O description,
a memory report) with ``.write(directory)``; :func:`compile_host` / :func:`run_host` build and run it on
the host. One numerics per deployment target:

==============  ==========================================================================================
``float32``     the float model (any ``pondlib.nn`` network), IEEE float32, operation order fixed
``xylo``        the Xylo integer core running a ``XyloConfig`` (the numerics of ``XyloSim``)
``spinnaker2``  the per-PE neuron update of the SpiNNaker2 simulator and the int8 MLA layers
``siracusa``    int8 GEMM/conv with RequantShift and the integer LIF of the Siracusa simulator
==============  ==========================================================================================

The layout of the generated C (arena, API, harness) is described in :mod:`pondlib.codegen.program`.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from pondlib.codegen.program import (
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
from pondlib.codegen.toolchain import compile_host, run_host
from pondlib.errors import CodegenError
from pondlib.validate import check_choice

__all__ = [
    "NUMERICS",
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

#: numerics name -> module of pondlib.codegen that emits it (each has ``emit(model, *, name, **options)``).
NUMERICS = {
    "float32": "pondlib.codegen.float32",
    "xylo": "pondlib.codegen.xylo",
    "spinnaker2": "pondlib.codegen.spinnaker2",
    "siracusa": "pondlib.codegen.siracusa",
}


def generate(model: Any, numerics: str = "float32", *, name: str = "net", **options: Any) -> Program:
    """Emit ``model`` as C with the given ``numerics`` (see the module docstring).

    Args:
        model: a ``pondlib.nn`` network (``float32``), a ``XyloConfig`` (``xylo``), a SpiNNaker2 or Siracusa
            configuration (``spinnaker2``, ``siracusa``); each emitter's docstring lists what it takes.
        numerics: one of :data:`NUMERICS`.
        name: the C prefix of every symbol and the file stem.
        options: passed to the emitter.

    Raises:
        CodegenError: the model cannot be emitted faithfully (an unsupported node names itself and what is
            supported; an integer path that could overflow is refused).
    """
    numerics = check_choice(numerics, "numerics", tuple(NUMERICS), error=CodegenError)
    module = import_module(NUMERICS[numerics])
    return module.emit(model, name=name, **options)
