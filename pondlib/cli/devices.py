"""``pond devices``: every device variant and its hardware limits, one table per device.

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
    """Print the limits of every variant of every device; return 0."""
    from pondlib.devices.siracusa.limits import LIMITS as SIRACUSA_LIMITS
    from pondlib.devices.siracusa.report import limit_rows as siracusa_rows
    from pondlib.devices.spinnaker2.limits import LIMITS as S2_LIMITS
    from pondlib.devices.spinnaker2.report import limit_rows as s2_rows
    from pondlib.devices.xylo.limits import LIMITS as XYLO_LIMITS
    from pondlib.devices.xylo.report import limit_rows as xylo_rows

    tables = (
        ("Xylo (SynSense): one core, integer LIF, bit-shift decays", XYLO_LIMITS, xylo_rows),
        ("SpiNNaker2: ARM Cortex-M4F PEs (SNN: float32 LIF, 16-bit synapse words)", S2_LIMITS, s2_rows),
        ("Siracusa (PULP cluster + N-EUREKA NPU): int8 layers with RequantShift", SIRACUSA_LIMITS, siracusa_rows),
    )
    for title, variants, describe in tables:
        console.print(limits_table(title, variants, describe))
    console.print(
        "Pick a variant by its short name: [bold]pond map MODEL --device spinnaker2 --limits board[/], "
        "or in code [bold]pondlib.devices.xylo.limits.get_limits('audio3')[/]",
        highlight=False,
    )
    return 0
