"""``pond devices``: every registered device, its variants and their hardware limits, one table per device.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pond")
    >>> add_parser(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["devices"]).command
    'devices'
"""

from __future__ import annotations

import argparse
from typing import Any

from pondlib.cli.render import limits_table

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    """Register ``devices`` on ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    subparsers.add_parser(
        "devices",
        help="list the supported devices and their limits",
        description="List every device variant and its hardware limits.",
    )


def run(console: Any, args: argparse.Namespace | None = None) -> int:
    """Print the limits of every variant of every registered device; return 0."""
    from pondlib.devices import registry

    example = None
    for device in registry.devices():
        console.print(limits_table(device.title, device.variants, device.limit_rows))
        others = [v for v in device.variants if v != device.default_variant]
        if example is None and others:
            example = (device.name, others[-1])
    if example is not None:
        name, variant = example
        console.print(
            f"Pick a variant by its short name: [bold]pond map MODEL --device {name} --limits {variant}[/], "
            f"or in code [bold]pondlib.devices.registry.get({name!r}).limits({variant!r})[/]",
            highlight=False,
        )
    return 0
