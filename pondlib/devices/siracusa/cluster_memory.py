r"""The L2 / L3 plan of a cluster program's constants (weights and parameters), shared by the chain and graph C.

A cluster program keeps its activations in L2 (the arena planned from lifetimes, with ``x`` and ``y``: ``A``
bytes) and its constants in L2 too while they fit. When they do not, the largest constants move to the
off-chip L3 (declared ``POND_L3``: the ``.l3`` section of the freestanding build, from which the DMA reads
them at L3's rate) until the rest fits, the rule of :func:`~pondlib.devices.siracusa.tiling.place_memory`:

.. math::

    \text{L2 need} = A + \sum_{c \in L2} b_c \le L2, \qquad \text{moving the largest } b_c \text{ to L3 first}

An arena that does not fit L2 even with every constant in L3 is refused naming the need, the limit and the fix.

Example:
    >>> import numpy as np
    >>> from pondlib.cprogram.program import Constant
    >>> consts = [Constant("w_big", "int8_t", np.zeros(3000)), Constant("w_small", "int8_t", np.zeros(100))]
    >>> placed, l2_need, l3 = place_constants(consts, 1000, 2500, where="example")
    >>> [(c.name, c.memory) for c in placed], l2_need, l3
    ([('w_big', 'L3'), ('w_small', '')], 1100, 3000)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pondlib.errors import CodegenError

__all__ = ["place_constants"]


def place_constants(constants: list[Any], arena_bytes: int, l2_bytes: int, *, where: str) -> tuple[list, int, int]:
    """``(constants with the L3 ones marked, L2 need in bytes, L3 bytes)`` (module docstring).

    Args:
        constants: the program's :class:`~pondlib.cprogram.program.Constant` arrays (not modified).
        arena_bytes: ``A``, the L2 bytes of the activations (arena, ``x``, ``y``).
        l2_bytes: the L2 limit.
        where: the emitter, for the error.

    Raises:
        CodegenError: ``A > l2_bytes`` (the activations alone do not fit).
    """
    if arena_bytes > l2_bytes:
        raise CodegenError(
            "L2 bytes", value=f"{arena_bytes} B of activations (arena, x, y; the constants could go to L3)",
            limit=f"l2_bytes = {l2_bytes}", where=where, fix=f"pass l2_bytes >= {arena_bytes}, or a smaller model",
        )  # fmt: skip
    in_l2 = sum(c.nbytes for c in constants)
    to_l3: set[str] = set()
    for c in sorted(constants, key=lambda c: (-c.nbytes, c.name)):
        if arena_bytes + in_l2 <= l2_bytes:
            break
        to_l3.add(c.name)
        in_l2 -= c.nbytes
    placed = [replace(c, memory="L3") if c.name in to_l3 else c for c in constants]
    return placed, arena_bytes + in_l2, sum(c.nbytes for c in constants if c.name in to_l3)
