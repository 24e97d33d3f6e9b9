"""Reading MODEL for the commands that take one (``pond map``, ``pond compile``): a NIR file or a saved
pondlib network, with a line saying what was read.

Example:
    >>> check_model_path(Path("missing.pond"), "a .nir file or a saved network")
    Traceback (most recent call last):
    ...
    pondlib.errors.PondError: missing.pond: model file not found. Fix: MODEL is a .nir file or a saved network
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pondlib.cli.args import UsageError, read_network
from pondlib.cli.render import notes
from pondlib.errors import PondError

__all__ = ["check_model_path", "load_network"]


def check_model_path(path: Path, kinds: str) -> None:
    """A :class:`PondError` for a MODEL that is missing or not a regular file (``kinds``: what MODEL may be)."""
    if not path.exists():
        raise PondError("model file not found", where=str(path), fix=f"MODEL is {kinds}")
    if not path.is_file():
        raise PondError("model file is not a regular file", where=str(path), fix=f"MODEL is {kinds}")


def load_network(console: Any, args: argparse.Namespace, path: Path, command: str) -> Any:
    """The pondlib module in ``path`` (a ``.nir`` file read with ``--dt``/``--reset``, or a saved network),
    with a line about it; ``--dt``/``--reset`` given for a saved network are a :class:`UsageError`."""
    if path.suffix.lower() == ".nir":
        from pondlib.interop import load_nir

        imp = load_nir(path, dt=args.dt, reset=args.reset)
        console.print(
            f"[bold]model[/]: {path} (NIR, convention {imp.convention}, dt {imp.dt:g} s, "
            f"reset {imp.reset}) -> {type(imp.module).__name__}",
            highlight=False,
        )
        notes(console, imp.notes, "NIR import")
        return imp.module
    if args.dt is not None or args.reset != "v_reset":
        raise UsageError(
            f"pond {command}: --dt and --reset apply to NIR files only "
            "(a saved pondlib network stores its dt and reset)"
        )
    net, head = read_network(str(path))
    console.print(
        f"[bold]model[/]: {path} (pondlib network, saved by pondlib {head.get('pondlib_version')}): "
        f"{head.get('summary')}",
        highlight=False,
    )
    return net
