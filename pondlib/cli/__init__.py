"""The ``pond`` command line.

Commands (one module each; see its docstring):

* ``pond demo [--out DIR] [--epochs N] [--hidden H] [--seed S] [--fast]``: train a float spiking network
  on the bundled digits, deploy it to every registered device with :func:`pondlib.deploy`, and report
  resources, quantization, float vs device accuracy and simulator speed (:mod:`pondlib.cli.demo`).
* ``pond map MODEL --device NAME [--limits NAME] [--dt S] ...``: map a NIR file, a saved network or an
  ONNX model; print the mapping report, or the table of violated design rules (exit status 1)
  (:mod:`pondlib.cli.map`).
* ``pond simulate CONFIG --input RASTER.npy [--record OUT.npz]``: run a saved deployment of any device
  with its bit-exact simulator (:mod:`pondlib.cli.simulate`).
* ``pond compile MODEL --numerics float32|DEVICE -o DIR [--target host|cortex-m4|rv32] [--check RASTER.npy]``:
  generate C for a network or a device configuration, print its memory report, build it and check it bit for
  bit against pondlib's simulator (:mod:`pondlib.cli.compile`).
* ``pond devices``: every registered device, its variants and their limits (:mod:`pondlib.cli.devices`).
* ``pond explore [MODEL] [--memory SIZE] ...``: rank the spatio-temporal schedules of a network on a
  memory-constrained core (:mod:`pondlib.cli.explore`).

A command module has ``add_parser(subparsers)`` and ``run(console, args) -> int``; adding a command is
one module and one entry in ``_COMMANDS``. Commands call the library and render what it returns with
:mod:`pondlib.cli.render`; no command knows a device by name: each loops over the device registry
(:mod:`pondlib.devices.registry`), whose devices declare their options, tables and file formats.

Errors are one line (``error: ...``) and a non-zero exit status, never a traceback: 1 when a command
fails (a design rule violation, a missing or bad file), 2 for a bad command line.

Example:
    >>> args = build_parser().parse_args(["demo", "--fast", "--out", "plots"])
    >>> args.command, args.fast, args.out, args.epochs
    ('demo', True, 'plots', None)
    >>> args = build_parser().parse_args(["map", "net.nir", "--device", "xylo", "--dt", "1e-4"])
    >>> args.model, args.device, args.dt, args.limits
    ('net.nir', 'xylo', 0.0001, None)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from pondlib.cli import compile as compile_command
from pondlib.cli import demo, devices, explore, simulate
from pondlib.cli import map as map_command
from pondlib.cli.args import Parser, UsageError
from pondlib.cli.demo_network import DEMO_DEFAULTS, demo_network, one_spike_network
from pondlib.cli.render import one_line, print_error
from pondlib.errors import PondError

__all__ = ["main", "build_parser", "demo_network", "one_spike_network", "DEMO_DEFAULTS"]

#: The commands, in help order: name -> module with ``add_parser(subparsers)`` and ``run(console, args)``.
_COMMANDS: dict[str, ModuleType] = {
    "demo": demo,
    "map": map_command,
    "simulate": simulate,
    "compile": compile_command,
    "devices": devices,
    "explore": explore,
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pond`` (a bad command line raises instead of exiting)."""
    parser = Parser(
        prog="pond", description="pondlib: spiking networks from JAX training to bit-exact neuromorphic deployment"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in _COMMANDS.values():
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pond`` command line; return the exit status (0 on success).

    Args:
        argv: the arguments without the program name (default ``sys.argv[1:]``).
    """
    from rich.console import Console

    console = Console()
    if not console.is_terminal:  # piped or captured: wide enough for the report tables
        console = Console(width=110)
    err_console = Console(stderr=True, soft_wrap=True)
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except UsageError as exc:
        print_error(err_console, str(exc))
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return _COMMANDS[args.command].run(console, args)
    except UsageError as exc:
        print_error(err_console, str(exc))
        return 2
    except PondError as exc:
        print_error(err_console, one_line(exc))
        return 1
    except OSError as exc:  # a file that cannot be read or written
        where = f" ({exc.filename})" if exc.filename else ""
        print_error(err_console, f"{exc.strerror or exc}{where}")
        return 1
    except KeyboardInterrupt:
        err_console.print("[bold red]interrupted[/]")
        return 130
