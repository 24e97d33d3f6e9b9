r"""Build and run a generated :class:`~pondlib.cprogram.program.Program` on the host.

:func:`compile_host` writes the sources and compiles them with the system C compiler (``$CC`` or ``cc``)
and the flags every test uses::

    -std=c11 -Wall -Wextra -Werror -pedantic -ffp-contract=off -fno-strict-aliasing -O2

(``-ffp-contract=off``: no fused multiply-add may change a float rounding). A failed compile raises
:class:`~pondlib.errors.CodegenError` with the compiler's message.

:func:`run_host` runs the harness on a batch ``x`` of shape ``(B, T, N_IN)`` (or ``(T, N_IN)``) and returns
the outputs ``(B, T, N_OUT)`` and, with ``record=True``, every state buffer as ``(B, T, count)``.

Example:
    >>> import numpy as np
    >>> from pondlib.cprogram.program import Buffer, build_program
    >>> prog = build_program("acc", "int32", constants=[], buffers=[Buffer("total", "int32_t", 1)],
    ...                      step_body="total[0] += x[0]; y[0] = total[0];",
    ...                      n_in=1, in_ctype="int32_t", n_out=1, out_ctype="int32_t")
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     exe = compile_host(prog, d)
    ...     y, rec = run_host(exe, prog, np.array([[[1], [2], [3]]]), record=True)
    >>> y[0, :, 0].tolist(), rec["total"][0, :, 0].tolist()
    ([1, 3, 6], [1, 3, 6])
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from pondlib.cprogram.program import Program
from pondlib.errors import CodegenError
from pondlib.validate import as_array

__all__ = ["HOST_FLAGS", "find_cc", "compile_host", "run_host"]

#: The host compiler flags (strict C11, warnings are errors, no FP contraction).
HOST_FLAGS = (
    "-std=c11",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-pedantic",
    "-ffp-contract=off",
    "-fno-strict-aliasing",
)


def find_cc() -> str:
    """The host C compiler: ``$CC`` if set, else ``cc``, ``gcc`` or ``clang`` on PATH."""
    env = os.environ.get("CC")
    if env:
        return env
    for cand in ("cc", "gcc", "clang"):
        path = shutil.which(cand)
        if path:
            return path
    raise CodegenError(
        "C compiler",
        value="none found on PATH",
        limit="cc, gcc or clang",
        fix="install a C compiler (Debian: apt install gcc) or set CC",
    )


def compile_host(
    program: Program, directory: str | Path, *, opt: str = "-O2", extra_flags: tuple[str, ...] = ()
) -> Path:
    """Write ``program`` into ``directory`` and build its harness; return the executable's path (a cluster
    program, ``program.cores > 0``, links with ``-pthread``: one thread per core).

    Raises:
        CodegenError: the compiler failed (its message included) or none is installed.
    """
    if not isinstance(program, Program):
        raise CodegenError("program", value=type(program).__name__, limit="a pondlib.codegen Program")
    out = program.write(directory).resolve()
    exe = out / program.name
    threads = ("-pthread",) if getattr(program, "cores", 0) and "-pthread" not in extra_flags else ()
    cmd = [find_cc(), *HOST_FLAGS, opt, *extra_flags, *threads, "-o", str(exe), "main.c", f"{program.name}.c"]
    try:
        proc = subprocess.run(cmd, cwd=out, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CodegenError("C compiler failed to run", value=" ".join(cmd), fix=str(exc)) from exc
    if proc.returncode != 0:
        message = (proc.stderr or proc.stdout).strip()
        raise CodegenError(
            f"the generated C of {program.name!r} does not compile:\n{message}",
            where=str(out),
            fix="report this as a pondlib bug with the model that produced it",
        )
    return exe


def run_host(exe: str | Path, program: Program, x: Any, *, record: bool = False) -> tuple[np.ndarray, dict | None]:
    """Run a compiled harness on ``x`` (``(B, T, N_IN)`` or ``(T, N_IN)``, values representable in the
    program's input type: checked, never wrapped).

    Returns:
        ``(y, rec)``: ``y`` of shape ``(B, T, N_OUT)`` (``(T, N_OUT)`` for an unbatched ``x``); ``rec`` maps
        each state buffer's name to ``(B, T, count)`` (``(T, count)``), or None without ``record``.
    """
    io = program.io
    arr = as_array(x, "x", error=CodegenError, allow_empty=True)
    batched = arr.ndim == 3
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[2] != io.n_in:
        raise CodegenError("input shape", value=tuple(np.shape(x)), limit=f"(B, T, {io.n_in}) or (T, {io.n_in})")
    dtype = io.in_dtype
    if dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise CodegenError("input", value="non-finite values", limit="finite float32 values")
        data = arr.astype(dtype)
    else:
        info = np.iinfo(dtype)
        if arr.size and (
            arr.dtype.kind == "f" and not np.all(arr == np.round(arr)) or arr.min() < info.min or arr.max() > info.max
        ):
            raise CodegenError(
                "input", value=f"values in [{arr.min()}, {arr.max()}]", limit=f"integers in [{info.min}, {info.max}]"
            )
        data = arr.astype(dtype)
    B, T, _ = data.shape
    header = np.array([B, T], dtype="<i4").tobytes()
    with tempfile.TemporaryDirectory() as tmp:
        inp, outp, recp = Path(tmp) / "in.bin", Path(tmp) / "out.bin", Path(tmp) / "rec.bin"
        inp.write_bytes(header + data.tobytes())
        cmd = [str(exe), str(inp), str(outp)] + ([str(recp)] if record else [])
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CodegenError("generated program failed to run", value=str(exe), fix=str(exc)) from exc
        if proc.returncode != 0:
            raise CodegenError(
                f"generated program exited with status {proc.returncode}: {proc.stderr.strip()}", where=str(exe)
            )
        y = np.frombuffer(outp.read_bytes(), dtype=io.out_dtype).reshape(B, T, io.n_out)
        rec = None
        if record:
            raw = recp.read_bytes()
            rec = _split_record(raw, program, B, T)
    if not batched:
        y = y[0]
        rec = None if rec is None else {k: v[0] for k, v in rec.items()}
    return y, rec


def _split_record(raw: bytes, program: Program, B: int, T: int) -> dict[str, np.ndarray]:
    states = program.io.states
    step_bytes = sum(s.count * s.dtype.itemsize for s in states)
    if len(raw) != B * T * step_bytes:
        raise CodegenError("record size", value=len(raw), limit=B * T * step_bytes)
    blob = np.frombuffer(raw, dtype=np.uint8).reshape(B, T, step_bytes)
    out: dict[str, np.ndarray] = {}
    pos = 0
    for s in states:
        n = s.count * s.dtype.itemsize
        out[s.name] = np.ascontiguousarray(blob[:, :, pos : pos + n]).view(s.dtype).reshape(B, T, s.count)
        pos += n
    return out
