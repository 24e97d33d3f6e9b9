"""Compile a C source with gcc inside a test and load it with ctypes (independent oracles).

Tests call :func:`build` and get a ``ctypes.CDLL``; when no C compiler exists the test is skipped
with that reason (never silently passed).

Example (in a test)::

    lib = build(C_SOURCE, "requant", flags=("-fwrapv",))
    lib.requant.restype = ctypes.c_int32
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

_CACHE = Path(tempfile.gettempdir()) / "pondlib-ctests"


def compiler() -> str | None:
    """Path of gcc (or cc), or None."""
    return shutil.which("gcc") or shutil.which("cc")


def build(source: str, name: str, flags: tuple[str, ...] = ()) -> ctypes.CDLL:
    """Compile ``source`` into a shared library (cached by content) and load it."""
    cc = compiler()
    if cc is None:
        pytest.skip("no C compiler (gcc/cc) on this machine: the C oracle cannot be built")
    digest = hashlib.sha256((source + "\0" + " ".join(flags)).encode()).hexdigest()[:16]
    _CACHE.mkdir(parents=True, exist_ok=True)
    lib = _CACHE / f"{name}-{digest}.so"
    if not lib.exists():
        src = _CACHE / f"{name}-{digest}.c"
        src.write_text(source)
        tmp = lib.with_suffix(".tmp.so")
        cmd = [cc, "-O2", "-std=c11", "-shared", "-fPIC", *flags, str(src), "-o", str(tmp), "-lm"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise AssertionError(f"C oracle failed to compile:\n{' '.join(cmd)}\n{res.stderr}")
        tmp.replace(lib)
    return ctypes.CDLL(str(lib))


def ptr(a: np.ndarray, ctype) -> ctypes._Pointer:
    """A ctypes pointer to a C-contiguous numpy array's data."""
    assert a.flags["C_CONTIGUOUS"]
    return a.ctypes.data_as(ctypes.POINTER(ctype))
