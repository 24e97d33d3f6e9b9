r"""The cluster runtime of multi-core programs: SPMD cores over shared L1 and L2, barriers, one DMA engine.

A program built for a cluster runs its step on ``POND_NUM_CORES`` cores (1..8): every core executes the same
per-core function (``fn(x, y)``, reading its index with ``pond_core_id()``), the cores meet at ``pond_barrier()``,
and core 0 moves tiles between L2 and L1 with ``pond_dma_start(dst, src, bytes)`` (and ``pond_dma_start_2d(dst, src,
row_bytes, rows, dst_stride, src_stride)``: ``rows`` rows in one transfer, as a cluster DMA's 2-D mode) /
``pond_dma_wait()``. Buffers declared ``POND_L1`` live in the cluster's L1 (the ``.l1`` linker section of a
freestanding build, plain memory on the host); constants declared ``POND_L3`` live in the off-chip L3 (the ``.l3``
section at :data:`L3_BASE`: the emulated DMA reads it at the L3 rate). :func:`cluster_runtime` returns the C of the
runtime, to be placed among a program's ``helpers``; the step body is ``POND_CLUSTER_RUN(fn, x, y);``.

=====================  ================================================================================
host (default)         one POSIX thread per core (``-pthread``), an atomic sense-reversing barrier,
                       DMA = ``memcpy`` at start (wait is a no-op), profile markers ignored
freestanding           ``-DPOND_FREESTANDING``: memory-mapped registers of the emulated cluster
                       (:data:`MMIO_BASE`, word offsets :data:`REGISTERS`): the emulator copies DMA
                       transfers, stops a core at a barrier until all have arrived, counts per core
=====================  ================================================================================

``POND_NUM_CORES`` defaults to the ``cores`` the program was emitted for; ``-DPOND_NUM_CORES=N`` rebuilds
the same sources for another count (each kernel splits its work by ``pond_core_id()``).

Example:
    >>> text = cluster_runtime(8)
    >>> "#define POND_NUM_CORES 8" in text and "pond_barrier" in text
    True
"""

from __future__ import annotations

from pondlib.cprogram.templating import render
from pondlib.errors import CodegenError
from pondlib.validate import check_int

__all__ = ["cluster_runtime", "MMIO_BASE", "REGISTERS", "L1_BASE", "L1_SECTION", "L3_BASE", "L3_SECTION", "MAX_CORES"]

#: Most cores of a cluster (a PULP cluster has 8).
MAX_CORES = 8
#: The memory-mapped register page of the emulated cluster (one page per core: word 0 holds its index).
MMIO_BASE = 0x1A00_0000
#: Register name -> 32-bit word offset in the MMIO page.
REGISTERS = {
    "core_id": 0, "barrier": 1, "dma_dst": 2, "dma_src": 3, "dma_bytes": 4, "dma_wait": 5, "profile": 6,
    "dma_rows": 7, "dma_src_stride": 8, "dma_dst_stride": 9, "dma_bytes_2d": 10,
}  # fmt: skip
#: Where a freestanding build places ``.l1`` (the cluster's tightly coupled data memory).
L1_BASE = 0x1000_0000
#: The linker section of L1 buffers.
L1_SECTION = ".l1"
#: Where a freestanding build places ``.l3`` (constants in the off-chip memory, e.g. HyperRAM).
L3_BASE = 0x8000_0000
#: The linker section of L3 constants.
L3_SECTION = ".l3"

_PACKAGE = __package__


def cluster_runtime(cores: int) -> str:
    """The C of the cluster runtime for ``cores`` cores by default (module docstring)."""
    cores = check_int(cores, "cores", lo=1, hi=MAX_CORES, where="cluster_runtime", error=CodegenError,
                      fix=f"pass 1..{MAX_CORES} cores")  # fmt: skip
    text = render(_PACKAGE, "cluster.c", cores=cores, mmio=hex(MMIO_BASE), l1_section=L1_SECTION,
                  l3_section=L3_SECTION)  # fmt: skip
    return text.rstrip("\n") + "\n"  # ends with a newline: helpers appended after it may start with a directive
