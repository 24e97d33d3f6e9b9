r"""pondlib's own compiled kernels (the CPU loops behind :mod:`pondlib.nn.native` and the chips' bit-exact
simulators), built from C sources shipped in the package by the system C compiler on their first use and
cached on disk, so that a fresh process loads them in milliseconds and the first use after installation
waits about a second per kernel library instead of numba's 10--25 s.

A library is built from one C file (``source``), the headers beside it that it includes, and optional
include folders. Its cache key is the SHA-256 of everything that decides the machine code:

.. math::

    \mathrm{key} = \mathrm{SHA256}(\text{source} \,\|\, \text{headers} \,\|\, \text{flags} \,\|\,
    \text{compiler version} \,\|\, \text{CPU model and flags} \,\|\, \text{ABI version})

so a changed source, compiler or machine builds a new library beside the old one (the flags include
``-march=native``: a cache shared between machines of different CPUs never loads code for the wrong
one). The library lands in ``$PONDLIB_CACHE_DIR`` (default ``$XDG_CACHE_HOME/pondlib`` or
``~/.cache/pondlib``) under ``native/<name>-<key[:16]>.so``; it is written to a temporary name and
renamed, so two processes building at once both end with a whole library.

Floating point: ``-O3 -march=native -ffp-contract=off -fno-fast-math``: the compiler may vectorize but
neither reassociates nor fuses on its own; a kernel that needs a fused multiply-add calls ``fmaf``
(one instruction where the CPU has FMA), so its results are the same at every optimisation level.
OpenMP (``-fopenmp``) is used when the compiler has it; a kernel must give the same results on any
number of threads (``OMP_NUM_THREADS`` sets how many; idle threads sleep: ``OMP_WAIT_POLICY=PASSIVE``
unless set otherwise).

Builds ahead of need: :func:`prebuild` starts libraries building in background threads (a command
that will train or simulate starts all it needs at its start: ``pondlib.nn.native.prebuild`` and each
device's ``prebuild``), one at a time while a core is left to the caller (:data:`BACKGROUND_JOBS`), in
the order given; a :func:`load` waits only for what is left of its own library's build.

The compiler is ``$PONDLIB_CC`` if set (``PONDLIB_CC=none`` turns the C kernels off: callers then use
their numba or XLA loops), else ``$CC``, else ``cc``, ``gcc`` or ``clang`` on PATH. Without one,
:func:`load` returns None and says why in :func:`unavailable_reason`: the C kernels are an
acceleration, never a requirement.

Example:
    >>> import tempfile, pathlib
    >>> from pondlib.cprogram import native
    >>> src = pathlib.Path(tempfile.mkdtemp()) / "twice.c"
    >>> _ = src.write_text("int twice(int x) { return 2 * x; }\n")
    >>> lib = native.load("twice", src, folder=src.parent)
    >>> lib is None or lib.twice(21) == 42
    True
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from pondlib.errors import CodegenError
from pondlib.validate import check_bool, check_c_name, check_readable_file, check_type

__all__ = ["ABI", "BACKGROUND_JOBS", "FLAGS", "cache_dir", "compiler", "load", "prebuild", "unavailable_reason"]

#: Bumped when the calling convention between Python and the libraries changes.
ABI = 1

#: Compiler flags of every library (``-fopenmp`` added where the compiler has it).
FLAGS = ("-O3", "-march=native", "-ffp-contract=off", "-fno-fast-math", "-fPIC", "-shared", "-std=c11")

_lock = threading.Lock()  # guards _locks; each library's own lock guards its build and load
_locks: dict[str, threading.Lock] = {}
_loaded: dict[str, ctypes.CDLL] = {}
_why: dict[str, str] = {}
_queued: set[str] = set()  # names with a background build started and not finished (guarded by _lock)
#: Builds :func:`prebuild` runs at once ahead of need: one core is left to the caller's own work.
BACKGROUND_JOBS = max(1, (os.cpu_count() or 2) - 1)
_slots = threading.Condition()  # guards _running, _waiting and _hurry
_running = [0]  # builds running: background ones from their turn (or their start) to their end, callers' own
_local = threading.local()  # .reserved: this thread is a background build holding a reservation
_waiting: list[str] = []  # background builds waiting for a slot, first come first served
_hurry: set[str] = set()  # queued names needed now: they start without waiting for a slot


def cache_dir() -> Path:
    """Where built libraries are kept: ``$PONDLIB_CACHE_DIR``, else ``$XDG_CACHE_HOME/pondlib``, else
    ``~/.cache/pondlib`` (the ``native`` folder in it)."""
    root = os.environ.get("PONDLIB_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = str(Path(xdg) / "pondlib") if xdg else str(Path.home() / ".cache" / "pondlib")
    return Path(root) / "native"


def compiler() -> str | None:
    """The C compiler the kernels are built with (module docstring), or None."""
    chosen = os.environ.get("PONDLIB_CC")
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "none", "0", "off") else chosen
    for cand in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cand and shutil.which(cand):
            return cand
    return None


def unavailable_reason(name: str) -> str | None:
    """Why :func:`load` returned None for the library ``name`` in this process (None: it did not)."""
    return _why.get(name)


def _cpu() -> str:
    """The CPU model and feature flags (``-march=native`` code depends on them)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return platform.machine() + platform.processor()
    keep = [line for line in text.splitlines() if line.startswith(("model name", "flags", "Features", "isa"))]
    return "\n".join(sorted(set(keep)))


@functools.lru_cache(maxsize=8)
def _version(cc: str) -> str:
    """``cc --version`` (once per compiler and process: every :func:`load` needs it for the key)."""
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip()


def _key(cc: str, source: Path, includes: tuple[Path, ...]) -> str:
    digest = hashlib.sha256()
    digest.update(source.read_bytes())
    for folder in (source.parent, *includes):  # every header below them (XLA's FFI header sits deep)
        for header in sorted(folder.rglob("*.h")):
            digest.update(str(header.relative_to(folder)).encode() + header.read_bytes())
    for part in (" ".join(FLAGS), _version(cc), _cpu(), f"abi{ABI}", cc):
        digest.update(part.encode())
    return digest.hexdigest()


def _build(name: str, cc: str, source: Path, includes: tuple[Path, ...], target: Path) -> str | None:
    """Compile ``source`` into ``target`` (atomically); the compiler's message on failure."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{name}-") as tmp:
        out = Path(tmp) / target.name
        base = [cc, *FLAGS, *(f"-I{p}" for p in (source.parent, *includes)), "-o", str(out), str(source), "-lm"]
        run = None
        for cmd in ([*base, "-fopenmp"], base):  # OpenMP where the compiler has it, else one thread
            try:
                run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            except (OSError, subprocess.SubprocessError) as exc:
                return f"{cc} could not run: {exc}"
            if run.returncode == 0:
                break
        if run.returncode != 0:
            return f"{cc} failed on {source.name}: {run.stderr.strip()[-2000:]}"
        os.replace(out, target)
    return None


def load(
    name: str, source: str | Path, *, include_dirs: tuple[str | Path, ...] = (), folder: str | Path | None = None
) -> ctypes.CDLL | None:
    """The shared library built from the C file ``source`` (module docstring), loaded with ctypes, or
    None when no compiler is configured or the build fails (:func:`unavailable_reason` says which).
    Built once per source, compiler and machine; later calls in the process return the same object.
    A name that is not a C identifier, a missing source or include folders that are not a tuple or
    list raise :class:`~pondlib.errors.CodegenError`.

    Args:
        name: the library's name (a lower-case C identifier), used in the cached file's name.
        source: the C file; the ``*.h`` files in its folder and in ``include_dirs`` (and below them) are
            part of the key.
        include_dirs: extra folders for ``#include`` (for example XLA's FFI headers).
        folder: where to keep the library (default :func:`cache_dir`).
    """
    name = check_c_name(name, "kernel library name", error=CodegenError)
    src = check_readable_file(source, "kernel source", error=CodegenError, suffix=".c")
    check_type(include_dirs, "include_dirs", (tuple, list), where="native.load", error=CodegenError)
    with _lock:
        own = _locks.setdefault(name, threading.Lock())
    with own:  # libraries of other names build at the same time (prebuild)
        if name in _loaded:
            return _loaded[name]
        cc = compiler()
        if cc is None:
            _why[name] = "no C compiler (PONDLIB_CC=none, or none of $CC, cc, gcc, clang on PATH)"
            return None
        includes = tuple(Path(p) for p in include_dirs)
        root = Path(folder) if folder is not None else cache_dir()
        target = root / f"{name}-{_key(cc, src, includes)[:16]}.so"
        if not target.exists():
            counted = not getattr(_local, "reserved", False)  # a background build counted itself
            with _slots:
                _running[0] += counted
            try:
                failure = _build(name, cc, src, includes, target)
            except OSError as exc:
                failure = f"cannot write the cache folder {root}: {exc}"
            finally:
                with _slots:
                    _running[0] -= counted
                    _slots.notify_all()
            if failure is not None:
                _why[name] = failure
                return None
        # OpenMP threads that finish a kernel sleep instead of spinning (libgomp reads this when it
        # loads; a value the user set is kept): the kernels run for milliseconds, and a spinning
        # thread would take a core from XLA's own threads and from other processes
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            lib = ctypes.CDLL(str(target))
        except OSError as exc:
            _why[name] = f"cannot load {target}: {exc}"
            return None
        _loaded[name] = lib
        _why.pop(name, None)
        return lib


def prebuild(libraries: list[tuple[str, str | Path, tuple]], *, ahead: bool = True) -> list[threading.Thread]:
    """Start building ``libraries`` (``(name, source, include_dirs)`` each) in background threads, one
    compiler process each, and return the started threads. A later :func:`load` of one of them waits for
    its build instead of starting another.

    ``ahead=True`` (builds started ahead of need, while the caller goes on with its own work): one at a
    time in the order given (put first what is needed first), each when fewer than
    :data:`BACKGROUND_JOBS` compilers (the cores less one) run in the process, whoever started them; a
    :func:`load` of a library still waiting for its turn builds it at once itself. ``ahead=False`` (the
    caller is about to wait for them): all at once, and libraries queued by an earlier call start
    without waiting for their turn.

    Nothing starts where no compiler is configured; a library already loaded in this process, or queued
    by an earlier call, is skipped. Arguments are checked as :func:`load` checks them, in the threads:
    nothing is raised there; a failure is kept for :func:`unavailable_reason`, and the :func:`load` that
    needs the library builds or reports it again. A non-boolean ``ahead`` raises
    :class:`~pondlib.errors.CodegenError`.

    Example:
        >>> from pondlib.cprogram import native
        >>> native.prebuild([])
        []
    """
    ahead = check_bool(ahead, "ahead", where="native.prebuild", error=CodegenError)
    if compiler() is None:
        return []
    threads = []
    for name, source, include_dirs in libraries:
        with _lock:
            if name in _loaded:
                continue
            if name in _queued:
                if not ahead:  # needed now: let it start without waiting for a slot
                    with _slots:
                        _hurry.add(name)
                        _slots.notify_all()
                continue
            _queued.add(name)
        with _slots:  # in line (ahead), or counted as running from now on (needed now)
            if ahead:
                _waiting.append(name)
            else:
                _running[0] += 1
        thread = threading.Thread(
            target=_quiet_load, args=(name, source, include_dirs, ahead), name=f"pond-build-{name}"
        )
        try:
            thread.start()
        except RuntimeError:  # no thread to be had: the load that needs the library builds it
            _unqueue(name, ahead)
            continue
        threads.append(thread)
    return threads


def _unqueue(name: str, ahead: bool) -> None:
    """Take back what :func:`prebuild` noted for a build whose thread did not start."""
    with _slots:
        if ahead:
            _waiting.remove(name)
        else:
            _running[0] -= 1
        _slots.notify_all()
    with _lock:
        _queued.discard(name)


def _quiet_load(name: str, source: str | Path, include_dirs: tuple, ahead: bool) -> None:
    """A background build: (``ahead``) waits for a compiler slot, then loads (builds) the library; whatever
    goes wrong is kept for :func:`unavailable_reason`, never raised in the thread (the :func:`load` that
    needs the library builds or reports it again)."""
    counted = not ahead  # prebuild counted a build needed now when it started it
    try:
        if ahead:
            with _slots:
                _slots.wait_for(lambda: name in _hurry or (_running[0] < BACKGROUND_JOBS and _waiting[0] == name))
                _waiting.remove(name)
                _running[0] += 1  # counted before the next in line looks
                counted = True
                _slots.notify_all()  # the next in line may have its turn too
        _local.reserved = True  # counted already: load does not count this thread's build again
        load(name, source, include_dirs=include_dirs)
    except Exception as exc:  # noqa: BLE001 - a thread has no caller to raise to
        _why[name] = f"{type(exc).__name__}: {exc}"
    finally:
        _local.reserved = False
        with _slots:
            _running[0] -= counted
            _hurry.discard(name)
            _slots.notify_all()
        with _lock:
            _queued.discard(name)
