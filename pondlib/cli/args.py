"""Command-line plumbing shared by the ``pond`` commands: the parser class whose errors are one line,
argument types, and reading and writing the files named on the command line.

Everything a command is given is checked here, at the boundary, before any work: argument types refuse
what is not a number of the right kind (``nan``, ``inf``, ``0``, ``2.5`` where a count is expected) with
a usage error (exit 2); files are checked when they are read (:func:`load_array`,
:func:`read_network`) or before anything is computed for them (:func:`writable_file`), and every
problem becomes a :class:`~pondlib.errors.PondError` naming the file and the option (exit 1).

Example:
    >>> positive_int("3"), positive_float("1e-4"), seed("7")
    (3, 0.0001, 7)
    >>> positive_int("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: got 0, expected a positive integer
    >>> positive_float("nan")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: got nan, expected a positive number
"""

from __future__ import annotations

import argparse
import math
import re
import zipfile
import zlib
from pathlib import Path
from typing import Any

from pondlib.errors import ConstraintError, PondError
from pondlib.validate import as_array, as_float_array, as_int_array, check_npy_sizes, check_writable_file

__all__ = [
    "UsageError",
    "Parser",
    "positive_int",
    "positive_float",
    "seed",
    "load_array",
    "load_events",
    "load_floats",
    "read_network",
    "writable_file",
    "synthetic_events",
    "add_device_options",
    "device_options",
    "with_flags",
    "naming_option",
    "variants_help",
]

#: Seeds accepted by ``--seed`` (numpy and JAX both take a 32-bit unsigned seed).
SEED_MAX = 2**32 - 1


class UsageError(Exception):
    """A bad command line (raised instead of argparse's exit, so that ``main`` prints one line; exit 2)."""


class Parser(argparse.ArgumentParser):
    """An argument parser that raises :class:`UsageError` instead of printing usage and exiting.

    A value that starts with ``-`` and a digit (``--memory -1KB``, ``--dt -1e-3``) is read as the option's
    value, so that the option's own check names it (plain argparse takes it for an unknown option)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d[\w.+-]*$")

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


def positive_int(text: str) -> int:
    """An argument type: an integer >= 1 (``"3"``; never ``"2.5"``, ``"1e3"`` or ``"0"``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a positive integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"got {value}, expected a positive integer")
    return value


def positive_float(text: str) -> float:
    """An argument type: a finite number > 0 (never ``nan``, ``inf``, ``0`` or a negative number)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a positive number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"got {value:g}, expected a positive number")
    return value


def seed(text: str) -> int:
    """An argument type: a random seed, an integer in ``[0, 2**32 - 1]``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected an integer seed in [0, {SEED_MAX}]") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"got {value}, expected an integer seed in [0, {SEED_MAX}]")
    return value


def _fix(flag: str, shape: str) -> str:
    return f"save {shape} with numpy.save(path, array) and pass it with {flag}"


def load_array(path: str, what: str, flag: str) -> Any:
    """The one numeric array in the ``.npy`` file ``path`` (``what`` names it and ``flag`` its option in
    errors); non-empty, real (bool, integer or float) and finite.

    Raises:
        PondError: naming the file: it is missing or a directory, is not a ``.npy`` array (or holds
            Python objects), is an ``.npz`` archive, holds strings or complex numbers, is empty, or holds
            NaN or infinities.
    """
    import numpy as np

    p = Path(path)
    if not p.exists():
        raise PondError(f"{what} file not found", where=str(p), fix=f"pass an existing .npy file with {flag}")
    if not p.is_file():
        raise PondError(f"{what} file is not a regular file", where=str(p), fix=f"pass a .npy file with {flag}")
    check_npy_sizes(p, what)  # the declared shape against the size budget, before np.load allocates it
    try:
        arr = np.load(p, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise PondError(
            f"{what} is not a .npy array ({type(exc).__name__})", where=str(p), fix=_fix(flag, "one array")
        ) from None
    if not isinstance(arr, np.ndarray):
        arr.close()
        raise PondError(f"{what} is an .npz archive, not one array", where=str(p), fix=_fix(flag, "one array"))
    return as_array(arr, what, where=str(p), fix=_fix(flag, "finite real numbers"))


def load_events(path: str, what: str, flag: str) -> Any:
    """:func:`load_array`, then event counts: whole numbers >= 0 of shape (T, N) or (B, T, N), as int64.

    Raises:
        PondError: as :func:`load_array`, or naming the file and the first bad count: negative,
            fractional, or beyond int64; or the wrong number of dimensions.
    """
    import numpy as np

    arr = load_array(path, what, flag)
    return as_int_array(
        arr,
        f"{what} event counts",
        lo=0,
        dtype=np.int64,
        ndim=(2, 3),
        where=str(Path(path)),
        fix=_fix(flag, "non-negative integer event counts of shape (T, N_in) or (B, T, N_in)"),
    )


def load_floats(path: str, what: str, flag: str, shapes: str = "(B, T, N_in)", ndim: Any = (2, 3)) -> Any:
    """:func:`load_array` as float64 with ``ndim`` dimensions (``shapes`` describes them in errors)."""
    import numpy as np

    arr = load_array(path, what, flag)
    return as_float_array(
        arr,
        what,
        dtype=np.float64,
        ndim=ndim,
        where=str(Path(path)),
        fix=_fix(flag, f"finite numbers of shape {shapes}"),
    )


def writable_file(path: str, what: str, flag: str, example: str = "out.npz") -> Path:
    """``path`` checked before any work is done for it: not a directory, in an existing folder.

    Raises:
        PondError: naming the path and the option.
    """
    p = Path(path)
    if p.is_dir():
        raise PondError(
            f"the {what} is a folder",
            where=str(p),
            fix=f"name a file with {flag}, e.g. {p / example}",
        )
    if not p.parent.is_dir():
        raise PondError(
            f"the folder of the {what} does not exist",
            where=str(p),
            fix=f"create the folder or pass another {flag} path",
        )
    return check_writable_file(p, f"{what} ({flag})")


def read_network(path: str, what: str = "model") -> tuple[Any, dict]:
    """The network saved with :func:`pondlib.io.save_network` at ``path``, and its header.

    Raises:
        PondError: naming the file: missing, a directory, or not a readable pondlib network file
            (decoding failures of the archive are converted here, where the file is read).
    """
    from pondlib.io import describe, load_network

    p = Path(path)
    if not p.exists():
        raise PondError(f"{what} file not found", where=str(p), fix="pass a network saved with pondlib.io.save_network")
    if not p.is_file():
        raise PondError(
            f"{what} file is not a regular file", where=str(p), fix="pass a network saved with pondlib.io.save_network"
        )
    try:
        head = describe(p)
        net = load_network(p)
    except PondError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, UnicodeDecodeError) as exc:
        raise PondError(
            f"not a readable pondlib network file ({type(exc).__name__}: {exc})",
            where=str(p),
            fix="pass a file written by pondlib.io.save_network (or pond demo's network.pond)",
        ) from None
    return net, head


def synthetic_events(n_in: int) -> Any:
    """Calibration input when none is given: 32 samples x 50 steps of binary events at rate 0.2 (seed 0)."""
    import numpy as np

    return (np.random.default_rng(0).random((32, 50, n_in)) < 0.2).astype(np.float64)


def add_device_options(parser: Any, command: str, selector: str) -> None:
    """Add every registered device's options of ``command`` to ``parser`` (``--drop-biases``, ...); each
    help line says which devices take it (``selector``: ``--device`` or ``--numerics``)."""
    from pondlib.devices import registry

    seen: dict[str, list[str]] = {}
    options: dict[str, Any] = {}
    for device in registry.devices():
        for o in device.options:
            if command in o.commands:
                seen.setdefault(o.name, []).append(device.name)
                options.setdefault(o.name, o)
    for name, o in options.items():
        owners = ", ".join(seen[name])
        help_text = f"{o.help} ({selector} {owners})"
        if o.switch:
            parser.add_argument(o.flag, dest=name, action="store_true", help=help_text)
        else:
            parser.add_argument(
                o.flag, dest=name, default=o.value_default, choices=o.choices or None, metavar=None, help=help_text
            )


def device_options(args: argparse.Namespace, device: Any, command: str, selector: str) -> dict[str, Any]:
    """The options of ``device`` from ``args``; a :class:`UsageError` for an option given that belongs to
    other devices only (``selector`` names the option that picks the device in the message)."""
    from pondlib.devices import registry

    mine = {o.name for o in getattr(device, "options", ()) if command in o.commands}
    for other in registry.devices():
        for o in other.options:
            if command not in o.commands or o.name in mine:
                continue
            value = getattr(args, o.name, o.value_default)
            if value != o.value_default:
                owners = [d.name for d in registry.devices() if any(p.name == o.name for p in d.options)]
                raise UsageError(f"pond {command}: {o.flag} applies to {selector} {', '.join(owners)} only")
    return {name: getattr(args, name) for name in mine}


def _with_fix(err: PondError, fix: str) -> PondError:
    """``err`` again with another fix (a violation list, or a subclass built otherwise, is kept as it is)."""
    if isinstance(err, ConstraintError) or fix == (err.fix or ""):
        return err
    try:
        return type(err)(err.what, value=err.value, limit=err.limit, where=err.where, fix=fix)
    except TypeError:
        return err


def with_flags(err: PondError, device: Any) -> PondError:
    """``err`` with the device's Python keywords in its fix replaced by their command-line flags
    (``drop_synapse=True`` -> ``--drop-synapse``), so that the command's error says what to type."""
    fix = err.fix or ""
    for o in getattr(device, "options", ()):
        fix = fix.replace(f"{o.name}=True", o.flag).replace(f"{o.name}=", o.flag + " ")
    return _with_fix(err, fix)


def naming_option(err: PondError, path: str, flag: str) -> PondError:
    """``err`` (raised about the file ``path``) with its fix saying which option passes the file, so the
    command's error names both (``... and pass it with --input``)."""
    if path not in (err.where or "") or flag in str(err):
        return err
    return _with_fix(err, f"{err.fix} and pass it with {flag}" if err.fix else f"pass a corrected file with {flag}")


def variants_help() -> str:
    """The variants of every registered device, for ``--limits``'s help."""
    from pondlib.devices import registry

    parts = []
    for d in registry.devices():
        names = [f"{v} (default)" if v == d.default_variant else v for v in d.variants]
        parts.append(f"{d.name} {', '.join(names)}")
    return "device variant (see 'pond devices'): " + "; ".join(parts)
