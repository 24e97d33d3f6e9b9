r"""Build a cluster program for RV32IMC and run it emulated as N cores over shared L1 and L2, deterministically.

A cluster program (its step body ``POND_CLUSTER_RUN(fn, x, y);``, the runtime of
:mod:`pondlib.cprogram.cluster` among its helpers) is built once per core count by :func:`build_cluster`: the
freestanding RV32IMC build of :func:`~pondlib.codegen.cross.build_cross` with ``-DPOND_NUM_CORES=N`` (the same
sources for 1..8 cores) and the ``POND_L1`` buffers in the ``.l1`` section at
:data:`~pondlib.cprogram.cluster.L1_BASE`, refused when larger than ``l1_bytes``.

:func:`run_cluster` emulates the cluster with one ``unicorn`` RV32 CPU per core:

* **Memory.** Flash, L1 and L2 (``.data`` / ``.bss``, the driver's ``pond_x`` / ``pond_y`` / ``pond_arena``)
  are host buffers mapped into every core with ``mem_map_ptr``: a store of one core is seen by all. Each core
  has its own stack (distinct addresses above ``.bss``, shared like the rest of L2, ``sp`` set per core) and
  its own MMIO page at :data:`~pondlib.cprogram.cluster.MMIO_BASE`, whose word 0 holds its index
  (``pond_core_id()`` reads it).
* **Registers.** A memory-write hook on each core's MMIO page implements the runtime's registers (32-bit word
  offsets, :data:`~pondlib.cprogram.cluster.REGISTERS`): ``barrier`` (1) records the core's arrival and stops that
  core; ``dma_dst`` (2) / ``dma_src`` (3) (and for a 2-D transfer ``dma_rows`` (7), ``dma_src_stride`` (8),
  ``dma_dst_stride`` (9)) are remembered; ``dma_bytes`` (4) starts a transfer, ``dma_bytes_2d`` (10) a 2-D one of
  ``rows`` rows of that many bytes (its ranges checked at once), and counts its bytes as *in* (to L1 from
  elsewhere), *out* (from L1 to elsewhere) or *other* (L1 to L1, L2 to L2); ``dma_wait`` (5) completes every pending
  transfer; ``profile`` (6) records a marker with every core's instruction count, the cluster time and the DMA
  totals at that point. Any other word (and every access that is not one aligned 32-bit store) is refused.
* **DMA, asynchronous.** A transfer's bytes are copied when it is *waited for*, not when it starts: a kernel that
  reads a destination before ``pond_dma_wait()`` reads the old bytes, and one that overwrites a source before the
  wait sends the new ones, so a missing wait changes the outputs instead of passing unnoticed; a transfer still
  pending when the step returns is a :class:`CodegenError`. Its time: one engine serves the transfers in order, each
  taking ``S + n / W`` cycles (``n`` its bytes, all rows of a 2-D transfer: ``dma_setup_cycles`` ``S``,
  ``dma_bytes_per_cycle`` ``W``), starting when it is issued or when the engine is free, whichever is later:

  .. math::

      t^{start}_j = \max(t^{issue}_j,\ t^{end}_{j-1}), \qquad t^{end}_j = t^{start}_j + S + n_j / W

  and a wait stalls its core until the last pending transfer ends. A transfer whose source is in L3 (the
  ``POND_L3`` constants, the ``.l3`` section) moves at ``l3_bytes_per_cycle`` instead of ``W`` and counts
  as *l3* bytes (and as *in* when its destination is L1). So double buffering can hide a transfer
  behind the compute that runs between its start and its wait, and single buffering cannot.
* **Scheduling.** Deterministic, no time slicing: core 0 runs until it stops (at a barrier, or by returning
  to the stub address), then core 1, ... in core order; when every core waits at the barrier, all are released
  and run again in core order. A step ends when every core has returned. A core that returns while others
  wait at a barrier (a barrier skipped or a count mismatch) is a deadlock: a :class:`CodegenError` naming the
  cores. ``pond_reset`` runs once per sample on core 0 only (it only sets the arena); ``pond_step`` on every
  core, once per step, after the step's input was written into ``pond_x`` once.
* **Counting.** A basic-block hook counts executed instructions per core (RVC 16-bit and 32-bit encodings
  decoded from the code, as :func:`~pondlib.codegen.cross.run_cross` does); at a barrier or a marker the
  count is made exact to the store instruction (``unicorn`` stops a core *before* the store that requested the
  stop; the core resumes after it). Resets are not counted. The *span* of a step is the sum, over the
  phases between barriers, of the slowest core's instructions in that phase: the cluster's critical path,
  so ``span(1 core) / span(N cores)`` is the emulated speed-up.
  The *cycles* of a step count time on the cluster clock: one instruction is one cycle, a core waiting on
  the DMA adds its stall, a phase lasts as long as its slowest core, and each barrier adds
  ``barrier_cycles``: the emulated speed-up with the data movement included (``span`` leaves it out).
* **Profile.** Markers are meant to be written by one core (core 0) at phase boundaries (directly before
  or after a barrier): the span of a marker runs to the next marker of the step (or the step's end), and
  :attr:`ClusterRun.profile` sums per marker value: each core's instructions, the slowest core's, the
  cluster cycles, and the DMA bytes in and out within the span.

Example:
    >>> import numpy as np, tempfile
    >>> from pondlib.cprogram.cluster import cluster_runtime
    >>> from pondlib.cprogram.program import build_program
    >>> helpers = cluster_runtime(4) + '''
    ... static POND_L1 int32_t buf[8];
    ... static void twice(const void *xv, void *yv) {
    ...     const int c = pond_core_id();
    ...     if (c == 0) { pond_dma_start(buf, xv, sizeof buf); pond_dma_wait(); }
    ...     pond_barrier();
    ...     for (int i = c; i < 8; i += POND_NUM_CORES) buf[i] *= 2;
    ...     pond_barrier();
    ...     if (c == 0) { pond_dma_start(yv, buf, sizeof buf); pond_dma_wait(); }
    ... }'''
    >>> prog = build_program("twice", "int32", constants=[], buffers=[], helpers=helpers,
    ...                      step_body="(void)a; POND_CLUSTER_RUN(twice, x, y);",
    ...                      n_in=8, in_ctype="int32_t", n_out=8, out_ctype="int32_t")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     run = run_cluster(build_cluster(prog, d, cores=4), np.arange(16).reshape(2, 8))
    >>> run.y.tolist()
    [[0, 2, 4, 6, 8, 10, 12, 14], [16, 18, 20, 22, 24, 26, 28, 30]]
    >>> run.dma_in_bytes, run.dma_out_bytes, run.barriers, len(run.instructions)
    (64, 64, 4, 4)
"""

from __future__ import annotations

import ctypes
import mmap
import struct
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from pondlib.codegen.cross import (
    _RETURN_STUB,
    L1_BYTES,
    STACK_BYTES,
    CrossBuild,
    _count_instructions,
    _input,
    _load_elf,
    _page,
    _regions,
    _state_table,
    build_cross,
)
from pondlib.cprogram.cluster import MAX_CORES, MMIO_BASE, REGISTERS
from pondlib.cprogram.program import Program
from pondlib.errors import CodegenError
from pondlib.validate import check_float, check_int

__all__ = [
    "ClusterBuild", "ClusterRun", "ProfileEntry", "build_cluster", "run_cluster",
    "DMA_SETUP_CYCLES", "DMA_BYTES_PER_CYCLE", "BARRIER_CYCLES", "L3_BYTES_PER_CYCLE",
]  # fmt: skip

#: Default cycles per DMA transfer before its first byte (a cluster DMA's small transfers take ~50 cycles).
DMA_SETUP_CYCLES = 50.0
#: Default DMA bandwidth between L2 and L1, bytes per cycle (a 64-bit cluster bus).
DMA_BYTES_PER_CYCLE = 8.0
#: Default bandwidth of a transfer from the off-chip L3, bytes per cycle (a HyperRAM-class memory; assumed).
L3_BYTES_PER_CYCLE = 1.0
#: Default cycles a barrier adds (a hardware event unit releases the cores in a few cycles).
BARRIER_CYCLES = 4.0

_WORD = {offset: name for name, offset in REGISTERS.items()}
_DMA_FIELDS = {"dma_dst": 0, "dma_src": 1, "dma_rows": 2, "dma_src_stride": 3, "dma_dst_stride": 4}


def _check_cores(cores: Any, where: str) -> int:
    return check_int(cores, "cores", lo=1, hi=MAX_CORES, where=where, error=CodegenError,
                     fix=f"pass 1..{MAX_CORES} cores (a PULP cluster has {MAX_CORES})")  # fmt: skip


@dataclass(frozen=True)
class ClusterBuild(CrossBuild):
    """A :class:`~pondlib.codegen.cross.CrossBuild` for RV32IMC built with ``-DPOND_NUM_CORES=cores``."""

    cores: int = 1


def build_cluster(
    program: Program,
    directory: str | Path,
    *,
    cores: int,
    l1_bytes: int = L1_BYTES,
    cache_dir: str | Path | None = None,
) -> ClusterBuild:
    """Build ``program`` (a cluster program: module docstring) for ``cores`` RV32IMC cores into ``directory``.

    Args:
        program: a generated program whose step runs ``POND_CLUSTER_RUN``.
        directory: where the sources and the ELF go.
        cores: 1..8 (``-DPOND_NUM_CORES``).
        l1_bytes: the L1 size; a larger ``.l1`` section is refused.
        cache_dir: zig's global cache (see :func:`~pondlib.codegen.cross.build_cross`).

    Raises:
        CodegenError: cores outside 1..8, an ``.l1`` over ``l1_bytes``, a failed compile.
    """
    cores = _check_cores(cores, "build_cluster")
    build = build_cross(
        program, "rv32", directory, cache_dir=cache_dir, l1_bytes=l1_bytes, extra_flags=(f"-DPOND_NUM_CORES={cores}",)
    )
    return ClusterBuild(**{f.name: getattr(build, f.name) for f in fields(build)}, cores=cores)


@dataclass(frozen=True)
class ProfileEntry:
    """What happened between one profile marker and the next, summed over every time it was written.

    Attributes:
        marker: the value written to the ``profile`` register.
        calls: how many times it was written (over all steps of all samples).
        instructions: per core, the instructions executed in the marker's spans.
        slowest: the sum over the spans of the slowest core's instructions in each.
        dma_in_bytes: bytes moved into L1 in the spans.
        dma_out_bytes: bytes moved out of L1 in the spans.
        cycles: the cluster cycles of the spans (instructions, DMA stalls and barriers: module docstring).
    """

    marker: int
    calls: int
    instructions: tuple[int, ...]
    slowest: int
    dma_in_bytes: int
    dma_out_bytes: int
    cycles: float = 0.0


@dataclass
class ClusterRun:
    """The result of :func:`run_cluster` (counts over every step of every sample; resets not counted).

    Attributes:
        y: the outputs, shaped as :func:`~pondlib.codegen.toolchain.run_host` returns them.
        record: the state buffers after every step (``record=True``), else ``None``.
        cores: how many cores ran.
        steps: how many steps ran (B * T).
        instructions: per core, the instructions executed in the steps.
        span: the sum over steps and barrier phases of the slowest core's instructions (the critical path).
        dma_in_bytes, dma_out_bytes, dma_other_bytes: DMA bytes into L1, out of L1, and within one level.
        dma_transfers: DMA transfers started.
        barriers: barriers the cluster passed (each counted once, not per core).
        profile: marker value -> :class:`ProfileEntry`.
        cycles: the sum over steps of the cluster cycles (module docstring): the span with the DMA stalls and
            barrier costs added.
        dma_wait_cycles: cycles cores spent stalled in ``pond_dma_wait()``, summed over cores.
        dma_l3_bytes: DMA bytes read from L3.
    """

    y: np.ndarray
    record: dict[str, np.ndarray] | None
    cores: int
    steps: int
    instructions: tuple[int, ...]
    span: int
    dma_in_bytes: int
    dma_out_bytes: int
    dma_other_bytes: int
    dma_transfers: int
    barriers: int
    profile: dict[int, ProfileEntry] = field(default_factory=dict)
    cycles: float = 0.0
    dma_wait_cycles: float = 0.0
    dma_l3_bytes: int = 0

    @property
    def cycles_per_step(self) -> float:
        """The mean cluster cycles per step (0.0 without steps)."""
        return self.cycles / self.steps if self.steps else 0.0

    @property
    def instructions_per_step(self) -> tuple[float, ...]:
        """Per core, the mean instructions per step (0.0 without steps)."""
        return tuple(n / self.steps if self.steps else 0.0 for n in self.instructions)

    @property
    def span_per_step(self) -> float:
        """The mean critical path per step in instructions (0.0 without steps)."""
        return self.span / self.steps if self.steps else 0.0


class _Memory:
    """The host buffers behind flash, L1 and L2 (RAM, then one stack per core), shared by every core."""

    def __init__(self, build: CrossBuild, cores: int) -> None:
        self.symbols, blobs = _load_elf(build.elf)
        regions = _regions(blobs, build.l1_limit)
        ram_base, ram_size = regions["ram"]
        self.stack_base = ram_base + _page(ram_size)
        regions["ram"] = (ram_base, _page(ram_size) + cores * STACK_BYTES)
        self.regions = regions
        self.l1 = regions.get("l1", (0, 0))
        self.l3 = regions.get("l3", (0, 0))
        self._maps: list[tuple[int, int, mmap.mmap, int]] = []
        self._pins: list[Any] = []  # the ctypes views that give the buffers' addresses: alive as long as the maps
        for base, size in regions.values():
            buf = mmap.mmap(-1, size)
            pin = ctypes.c_char.from_buffer(buf)
            self._pins.append(pin)
            self._maps.append((base, size, buf, ctypes.addressof(pin)))
        for addr, data, _ in blobs:
            if data:
                self.write(addr, data)

    def maps(self) -> list[tuple[int, int, int]]:
        """(address, size, host pointer) of each region."""
        return [(base, size, ptr) for base, size, _, ptr in self._maps]

    def locate(self, addr: int, n: int) -> tuple[mmap.mmap, int] | None:
        """The buffer holding ``[addr, addr + n)`` and the offset in it; ``None`` when no region holds it all."""
        for base, size, buf, _ in self._maps:
            if base <= addr and addr + n <= base + size:
                return buf, addr - base
        return None

    def read(self, addr: int, n: int) -> bytes:
        buf, off = self.locate(addr, n) or (None, 0)
        if buf is None:
            raise CodegenError("emulated cluster read", value=f"{n} bytes at {addr:#x}", limit=self._describe())
        return bytes(buf[off : off + n])

    def write(self, addr: int, data: bytes) -> None:
        buf, off = self.locate(addr, len(data)) or (None, 0)
        if buf is None:
            raise CodegenError(
                "emulated cluster write", value=f"{len(data)} bytes at {addr:#x}", limit=self._describe()
            )
        buf[off : off + len(data)] = data

    def in_l1(self, addr: int) -> bool:
        return self.l1[0] <= addr < self.l1[0] + self.l1[1]

    def in_l3(self, addr: int) -> bool:
        return self.l3[0] <= addr < self.l3[0] + self.l3[1]

    def stack_top(self, core: int) -> int:
        return self.stack_base + (core + 1) * STACK_BYTES - 16

    def _describe(self) -> str:
        return "within one of " + ", ".join(f"{n} [{b:#x}, {b + s:#x})" for n, (b, s) in self.regions.items())


class _Core:
    """One RV32 CPU of the cluster: its unicorn instance, MMIO page, instruction count and scheduling state."""

    def __init__(self, cluster: _Cluster, index: int) -> None:
        from unicorn import UC_ARCH_RISCV, UC_HOOK_BLOCK, UC_HOOK_MEM_WRITE, UC_MODE_RISCV32, UC_PROT_ALL, Uc
        from unicorn import riscv_const as rv

        self.cluster, self.index = cluster, index
        self.uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV32)
        for base, size, ptr in cluster.memory.maps():
            self.uc.mem_map_ptr(base, size, UC_PROT_ALL, ptr)
        self.uc.mem_map(_RETURN_STUB, 0x1000)
        self.uc.mem_map(MMIO_BASE, 0x1000)
        self.uc.mem_write(MMIO_BASE, struct.pack("<I", index))
        self._pc, self._sp, self._ra = rv.UC_RISCV_REG_PC, rv.UC_RISCV_REG_SP, rv.UC_RISCV_REG_RA
        gp = cluster.memory.symbols.get("__global_pointer$")
        if gp is not None:
            self.uc.reg_write(rv.UC_RISCV_REG_GP, gp)
        self.count = 0
        self.block_addr = self.block_base = 0
        self.state = "done"  # "ready" (to run), "barrier" (waits at one), "done" (returned)
        self.pc = 0
        self.stop_pc: int | None = None
        self.error: CodegenError | None = None
        self.dma = [0, 0, 1, 0, 0]  # destination, source, rows, source stride, destination stride (2-D)
        self.phase_start = 0  # the count when the current barrier phase began
        self.stall = 0.0  # cycles stalled on the DMA in the current phase
        self.uc.hook_add(UC_HOOK_BLOCK, self._on_block)
        self.uc.hook_add(UC_HOOK_MEM_WRITE, self._on_mmio, begin=MMIO_BASE, end=MMIO_BASE + 0xFFF)

    def _on_block(self, uc: Any, address: int, size: int, _user: Any) -> None:
        self.block_addr, self.block_base = address, self.count
        self.count += self.cluster.block_length(address, size, uc)

    def exact_count(self, pc: int) -> int:
        """Instructions executed up to and including the instruction at ``pc`` (inside the current block)."""
        return self.block_base + self.cluster.block_length(self.block_addr, pc - self.block_addr, self.uc) + 1

    def _on_mmio(self, uc: Any, _access: int, address: int, size: int, value: int, _user: Any) -> None:
        word, pc = (address - MMIO_BASE) // 4, uc.reg_read(self._pc)
        name = _WORD.get(word) if size == 4 and address % 4 == 0 else None
        if name in _DMA_FIELDS:
            self.dma[_DMA_FIELDS[name]] = value & 0xFFFF_FFFF
        elif name == "dma_bytes":
            self.error = self.cluster.dma(self, self.dma[0], self.dma[1], value & 0xFFFF_FFFF, self.exact_count(pc))
        elif name == "dma_bytes_2d":
            d = self.dma
            self.error = self.cluster.dma(self, d[0], d[1], value & 0xFFFF_FFFF, self.exact_count(pc), d[2], d[3], d[4])
        elif name == "dma_wait":
            self.cluster.dma_wait(self, self.exact_count(pc))
        elif name == "barrier":
            self.count, self.stop_pc = self.exact_count(pc), pc
        elif name == "profile":
            self.cluster.marker(self, value & 0xFFFF_FFFF, self.exact_count(pc))
        else:
            self.error = CodegenError(
                f"emulated core {self.index} wrote {size} bytes to MMIO offset {address - MMIO_BASE:#x}",
                value=f"pc={pc:#x}",
                limit=f"aligned 32-bit stores to the words {sorted(set(REGISTERS.values()) - {0})}",
                fix="use the cluster runtime's functions (pond_barrier, pond_dma_start, ...)",
            )
        if self.error is not None or self.stop_pc is not None:
            uc.emu_stop()

    def time(self, count: int | None = None) -> float:
        """This core's time on the cluster clock after ``count`` instructions (default: its count)."""
        return self.cluster.clock + ((self.count if count is None else count) - self.phase_start) + self.stall

    def begin(self, entry: int) -> None:
        """Prepare a call of ``entry`` on this core's own stack, returning to the stub."""
        self.uc.reg_write(self._sp, self.cluster.memory.stack_top(self.index))
        self.uc.reg_write(self._ra, _RETURN_STUB)
        self.pc, self.state = entry, "ready"

    def resume(self, symbol: str) -> None:
        """Run until a barrier (state "barrier") or the return (state "done")."""
        from unicorn import UcError

        where = f"{self.cluster.build.elf} core {self.index}"
        self.stop_pc = None
        try:
            self.uc.emu_start(self.pc, _RETURN_STUB, timeout=0, count=0)
        except UcError as exc:
            pc = self.uc.reg_read(self._pc)
            raise CodegenError(
                f"emulated core {self.index} faulted in {symbol}: {exc}", where=f"{where} pc={pc:#x}"
            ) from exc
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        pc = self.uc.reg_read(self._pc)
        if self.stop_pc is not None:
            if pc != self.stop_pc:  # unicorn must stop before the store that asked for it: checked, not assumed
                raise CodegenError(
                    "emulated barrier did not stop at its store", value=f"pc={pc:#x}", limit=f"pc={self.stop_pc:#x}"
                )
            half = int.from_bytes(bytes(self.uc.mem_read(pc, 2)), "little")
            self.pc, self.state = pc + (4 if half & 0b11 == 0b11 else 2), "barrier"
        elif pc == _RETURN_STUB:
            self.state = "done"
        else:
            raise CodegenError(f"emulated {symbol} did not return", where=f"{where} pc={pc:#x}")


class _Cluster:
    """The cores, the shared memory, the DMA counters and the profile events of one run."""

    def __init__(self, build: CrossBuild, cores: int, timing: tuple[float, float, float, float]) -> None:
        self.build = build
        self.memory = _Memory(build, cores)
        self._lengths: dict[tuple[int, int], int] = {}
        self.cores = [_Core(self, i) for i in range(cores)]
        self.dma_bytes = {"in": 0, "out": 0, "other": 0, "l3": 0}
        self.transfers = 0
        self.setup, self.bandwidth, self.barrier_cycles, self.l3_bandwidth = timing
        self.clock = 0.0  # the cluster time when the current phase began (cycles since the step began)
        self.engine_free = 0.0  # when the DMA engine finishes its last transfer
        # (target, off, source, off, row bytes, rows, target stride, source stride, end)
        self.pending: list[tuple[Any, int, Any, int, int, int, int, int, float]] = []
        self.wait_cycles = 0.0
        # (marker, counts, time, dma in, dma out)
        self.events: list[tuple[int, list[int], float, int, int]] | None = None

    def block_length(self, address: int, size: int, uc: Any) -> int:
        """Instructions in ``size`` bytes of code at ``address`` (cached)."""
        key = (address, size)
        n = self._lengths.get(key)
        if n is None:
            n = self._lengths[key] = _count_instructions(bytes(uc.mem_read(address, size)), False)
        return n

    def dma(
        self, core: _Core, dst: int, src: int, n: int, count: int, rows: int = 1, s_stride: int = 0, d_stride: int = 0
    ) -> CodegenError | None:
        """Start a transfer of ``rows`` rows of ``n`` bytes from ``src`` to ``dst`` (row ``r`` at ``src + r
        s_stride`` / ``dst + r d_stride``) issued after ``count`` instructions of ``core`` (copied at the next
        wait) and count it; an error for an unmapped range."""
        s_span, d_span = (rows - 1) * s_stride + n, (rows - 1) * d_stride + n
        source, target = self.memory.locate(src, s_span), self.memory.locate(dst, d_span)
        if source is None or target is None or rows < 1:
            return CodegenError(
                f"emulated core {core.index} started a DMA transfer outside memory",
                value=f"{rows} row(s) of {n} bytes from {src:#x} (stride {s_stride}) to {dst:#x} (stride {d_stride})",
                limit=self.memory._describe(),
                fix="pass pond_dma_start(dst, src, bytes) / pond_dma_start_2d(...) buffers that hold every row",
            )
        (sbuf, soff), (tbuf, toff) = source, target
        start = max(core.time(count), self.engine_free)
        from_l3 = self.memory.in_l3(src)
        total = rows * n
        self.engine_free = start + self.setup + total / (self.l3_bandwidth if from_l3 else self.bandwidth)
        self.dma_bytes["l3"] += total if from_l3 else 0
        self.pending.append((tbuf, toff, sbuf, soff, n, rows, d_stride, s_stride, self.engine_free))
        into, outof = self.memory.in_l1(dst), self.memory.in_l1(src)
        self.dma_bytes["in" if into and not outof else "out" if outof and not into else "other"] += total
        self.transfers += 1
        return None

    def dma_wait(self, core: _Core, count: int) -> None:
        """Complete every pending transfer (copy its bytes, in issue order); stall ``core`` until the last ends."""
        if not self.pending:
            return
        for tbuf, toff, sbuf, soff, n, rows, d_stride, s_stride, _ in self.pending:
            for r in range(rows):
                t, s = toff + r * d_stride, soff + r * s_stride
                tbuf[t : t + n] = sbuf[s : s + n]
        stall = max(0.0, self.pending[-1][-1] - core.time(count))
        core.stall += stall
        self.wait_cycles += stall
        self.pending.clear()

    def marker(self, core: _Core, value: int, count: int) -> None:
        if self.events is not None:
            counts = [c.count for c in self.cores]
            counts[core.index] = count
            self.events.append((value, counts, core.time(count), self.dma_bytes["in"], self.dma_bytes["out"]))

    def call(self, symbol: str, cores: list[_Core]) -> tuple[int, int]:
        """Run ``symbol`` on ``cores`` to their return (module docstring); return (span, barriers passed).
        The cluster clock starts at 0 and ends at the call's cycles (:attr:`clock`)."""
        for core in cores:
            core.begin(self.memory.symbols[symbol])
        span = barriers = 0
        self.clock = self.engine_free = 0.0
        while True:
            for core in cores:
                core.phase_start, core.stall = core.count, 0.0
            for core in cores:
                if core.state == "ready":
                    core.resume(symbol)
            span += max(c.count - c.phase_start for c in cores)
            self.clock = max(c.time() for c in cores)
            waiting = [c.index for c in cores if c.state == "barrier"]
            if not waiting:
                if self.pending:
                    raise CodegenError(
                        f"emulated {symbol} returned with {len(self.pending)} DMA transfer(s) never waited for",
                        value=f"{sum(p[4] * p[5] for p in self.pending)} bytes pending",
                        limit="every pond_dma_start() completed by a pond_dma_wait() before the step returns",
                        fix="call pond_dma_wait() after the last transfer (and before reading its destination)",
                    )
                return span, barriers
            done = [c.index for c in cores if c.state == "done"]
            if done:
                raise CodegenError(
                    f"emulated cluster deadlock in {symbol}",
                    value=f"cores {done} returned while cores {waiting} wait at barrier {barriers + 1}",
                    limit="every core passes every barrier (the same number of pond_barrier() calls on each core)",
                    fix="call pond_barrier() outside core-dependent branches",
                )
            for core in cores:
                core.state = "ready"
            barriers += 1
            self.clock += self.barrier_cycles


def _accumulate(profile: dict[int, list], events: list, end: tuple[list[int], float, int, int]) -> None:
    """Add one step's marker spans (each to the next event or the step's ``end``) to ``profile``."""
    bounds = [(counts, time, din, dout) for _, counts, time, din, dout in events[1:]] + [end]
    for (marker, counts, time, din, dout), (nxt, ntime, nin, nout) in zip(events, bounds):
        deltas = [b - a for a, b in zip(counts, nxt)]
        entry = profile.setdefault(marker, [0, [0] * len(counts), 0, 0, 0, 0.0])
        entry[0] += 1
        entry[1] = [a + d for a, d in zip(entry[1], deltas)]
        entry[2] += max(deltas)
        entry[3] += nin - din
        entry[4] += nout - dout
        entry[5] += ntime - time


def run_cluster(
    build: CrossBuild,
    x: Any,
    *,
    cores: int | None = None,
    record: bool = False,
    dma_setup_cycles: float = DMA_SETUP_CYCLES,
    dma_bytes_per_cycle: float = DMA_BYTES_PER_CYCLE,
    barrier_cycles: float = BARRIER_CYCLES,
    l3_bytes_per_cycle: float = L3_BYTES_PER_CYCLE,
) -> ClusterRun:
    """Run a cluster build emulated on ``x`` (``(B, T, N_IN)`` or ``(T, N_IN)``, checked like
    :func:`~pondlib.codegen.toolchain.run_host`): each sample from a reset arena (``pond_reset`` on core 0),
    then one ``pond_step`` per step on every core (module docstring).

    Args:
        build: a :class:`ClusterBuild` (or an ``rv32`` :class:`~pondlib.codegen.cross.CrossBuild` with ``cores``).
        x: the input.
        cores: how many cores to emulate: the build's (default); a different count is refused.
        record: also return every state buffer after every step.
        dma_setup_cycles: ``S``, cycles per DMA transfer before its first byte (>= 0).
        dma_bytes_per_cycle: ``W``, the DMA engine's bandwidth in bytes per cycle (> 0).
        barrier_cycles: cycles each barrier adds to the cluster time (>= 0).
        l3_bytes_per_cycle: the bandwidth of a transfer from L3, bytes per cycle (> 0).

    Raises:
        CodegenError: a bad build, input, core count or timing parameter; a fault, a deadlock, a bad register
            access, a transfer never waited for.
    """
    timing = (
        check_float(dma_setup_cycles, "dma_setup_cycles", lo=0.0, hi=1e9, where="run_cluster", error=CodegenError),
        check_float(dma_bytes_per_cycle, "dma_bytes_per_cycle", lo=1e-6, hi=1e9, where="run_cluster",
                    error=CodegenError),
        check_float(barrier_cycles, "barrier_cycles", lo=0.0, hi=1e9, where="run_cluster", error=CodegenError),
        check_float(l3_bytes_per_cycle, "l3_bytes_per_cycle", lo=1e-6, hi=1e9, where="run_cluster",
                    error=CodegenError),
    )  # fmt: skip
    if not isinstance(build, CrossBuild) or build.target.name != "rv32":
        raise CodegenError("cluster build", value=type(build).__name__, limit="a ClusterBuild from build_cluster")
    built = getattr(build, "cores", None)
    if cores is None and built is None:
        raise CodegenError("cores", value=None, limit=f"1..{MAX_CORES}", fix="pass cores= (or use build_cluster)")
    cores = _check_cores(built if cores is None else cores, "run_cluster")
    if built is not None and cores != built:
        raise CodegenError("cores", value=cores, limit=f"{built} (the build's POND_NUM_CORES)",
                           fix=f"build_cluster(..., cores={cores}) for another core count")  # fmt: skip
    io = build.program.io
    data, batched = _input(x, io)
    B, T, _ = data.shape
    cl = _Cluster(build, cores, timing)
    mem = cl.memory
    for sym in ("pond_x", "pond_y", "pond_arena", "pond_reset", "pond_step"):
        if sym not in mem.symbols:
            raise CodegenError("cluster build", value=f"symbol {sym} missing", where=str(build.elf))
    states = _state_table(build, mem.symbols, mem.read)
    x_addr, y_addr, arena = mem.symbols["pond_x"], mem.symbols["pond_y"], mem.symbols["pond_arena"]
    out_bytes = io.n_out * io.out_dtype.itemsize
    y = np.zeros((B, T, io.n_out), dtype=io.out_dtype)
    rec = {s.name: np.zeros((B, T, s.count), dtype=s.dtype) for s in io.states} if record else None
    totals, span, barriers, profile, cycles = [0] * cores, 0, 0, {}, 0.0
    for b in range(B):
        cl.call("pond_reset", cl.cores[:1])
        for t in range(T):
            if io.n_in:
                mem.write(x_addr, data[b, t].tobytes())
            before, cl.events = [c.count for c in cl.cores], []
            step_span, step_barriers = cl.call("pond_step", cl.cores)
            after = [c.count for c in cl.cores]
            _accumulate(profile, cl.events, (after, cl.clock, cl.dma_bytes["in"], cl.dma_bytes["out"]))
            cl.events = None
            totals = [n + a - s for n, a, s in zip(totals, after, before)]
            span, barriers, cycles = span + step_span, barriers + step_barriers, cycles + cl.clock
            if out_bytes:
                y[b, t] = np.frombuffer(mem.read(y_addr, out_bytes), dtype=io.out_dtype)
            if rec is not None:
                for s, (elem, count, offset) in zip(io.states, states):
                    rec[s.name][b, t] = np.frombuffer(mem.read(arena + offset, elem * count), dtype=s.dtype)
    if not batched:
        y = y[0]
        rec = None if rec is None else {k: v[0] for k, v in rec.items()}
    return ClusterRun(
        y=y,
        record=rec,
        cores=cores,
        steps=B * T,
        instructions=tuple(totals),
        span=span,
        dma_in_bytes=cl.dma_bytes["in"],
        dma_out_bytes=cl.dma_bytes["out"],
        dma_other_bytes=cl.dma_bytes["other"],
        dma_transfers=cl.transfers,
        barriers=barriers,
        profile={m: ProfileEntry(m, e[0], tuple(e[1]), e[2], e[3], e[4], e[5]) for m, e in sorted(profile.items())},
        cycles=cycles,
        dma_wait_cycles=cl.wait_cycles,
        dma_l3_bytes=cl.dma_bytes["l3"],
    )
