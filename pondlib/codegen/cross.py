r"""Cross-compile a generated :class:`~pondlib.cprogram.program.Program` for a microcontroller and run it emulated.

Two targets, both built with the ``ziglang`` toolchain (``python -m ziglang cc``, clang inside) and run
instruction by instruction with ``unicorn`` (the QEMU CPU core as a library):

==============  ==========================================================================================
``cortex-m4``   Cortex-M4F, Thumb-2, single-precision FPU (hard float ABI ``thumb-freestanding-eabihf``)
``rv32``        RV32IMC (the PULP cores' base ISA): integer multiply/divide, compressed instructions,
                float in software (compiler-rt, correctly rounded IEEE, so still bit-exact)
==============  ==========================================================================================

:func:`build_cross` compiles ``<name>.c`` (not the host harness ``main.c``) with a small freestanding
driver that this module generates: the input buffer ``pond_x``, the output buffer ``pond_y``, the two
entry points ``pond_reset()`` / ``pond_step()`` on the program's own arena (global in a freestanding
build; the linker script names it ``pond_arena`` for the emulator, so the image holds one arena), plus
the ``memset`` /
``memcpy`` the generated C calls (a freestanding build has no C library: this module ships a minimal
``<string.h>`` too). A generated linker script places ``.text`` and ``.rodata`` in flash at
:data:`FLASH_BASE`, ``.data`` / ``.bss`` in RAM at :data:`RAM_BASE` (L2 on a cluster) and the ``.l1``
section (buffers declared ``POND_L1`` by the cluster runtime, :mod:`pondlib.cprogram.cluster`) at
:data:`~pondlib.cprogram.cluster.L1_BASE`, at most ``l1_bytes`` (default :data:`L1_BYTES`): a larger
``.l1`` is refused at link time. Every cross build defines ``POND_FREESTANDING`` (the cluster runtime's
memory-mapped registers; no effect on other programs). Float code is compiled with ``-ffp-contract=off``
like on the host, so no fused multiply-add changes a rounding. Multi-core builds and their emulation are
:mod:`pondlib.codegen.cluster`.

:func:`run_cross` loads the ELF's sections into the emulator (``pyelftools``), writes each step's input into
``pond_x``, calls ``pond_reset`` once per sample and ``pond_step`` once per step (PC, LR/ra and SP set
directly, the call returns to a stub address where emulation stops), and reads ``pond_y`` and the state
buffers (at the offsets of the target's own ``<name>_states`` table) back. A basic-block hook counts the
executed instructions (instruction lengths decoded from the code: Thumb-2 16/32-bit, RVC 16/32-bit), and
the mean per step is returned: a cost measure, not cycles.

The zig compiler builds its compiler-rt once per target into its global cache (about 5 s each); set
``ZIG_GLOBAL_CACHE_DIR`` or pass ``cache_dir`` to share it between builds.

Example:
    >>> import numpy as np, tempfile
    >>> from pondlib.cprogram.program import Buffer, build_program
    >>> prog = build_program("acc", "int32", constants=[], buffers=[Buffer("total", "int32_t", 1)],
    ...                      step_body="total[0] += x[0]; y[0] = total[0];",
    ...                      n_in=1, in_ctype="int32_t", n_out=1, out_ctype="int32_t")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     build = build_cross(prog, "rv32", d)
    ...     y, rec, ips = run_cross(build, np.array([[1], [2], [3]]), record=True)
    >>> y[:, 0].tolist(), rec["total"][:, 0].tolist(), ips > 0
    ([1, 3, 6], [1, 3, 6], True)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pondlib.cprogram.cluster import L1_BASE, L3_BASE, MMIO_BASE
from pondlib.cprogram.program import Program
from pondlib.cprogram.templating import render
from pondlib.errors import CodegenError
from pondlib.validate import as_array, check_int

__all__ = [
    "TARGETS",
    "FLASH_BASE",
    "RAM_BASE",
    "L1_BYTES",
    "CrossTarget",
    "CrossBuild",
    "build_cross",
    "run_cross",
    "freestanding_sources",
]

#: Where the linker script puts flash (.text, .rodata) and RAM (.data, .bss, then the stack).
FLASH_BASE = 0x0001_0000
RAM_BASE = 0x2000_0000
#: Stack size (bytes) above .bss.
STACK_BYTES = 256 * 1024
#: The default L1 limit of a cross build (bytes of ``.l1``): a PULP cluster's L1 (TCDM) is 256 KiB.
L1_BYTES = 256 * 1024
#: The address calls return to: emulation stops there (its own mapped page, never executed).
_RETURN_STUB = 0x0000_1000


@dataclass(frozen=True)
class CrossTarget:
    """One cross target: its name, the zig ``-target`` triple, ``-mcpu`` and a description."""

    name: str
    triple: str
    mcpu: str
    description: str


#: The cross targets by name.
TARGETS: dict[str, CrossTarget] = {
    "cortex-m4": CrossTarget(
        "cortex-m4", "thumb-freestanding-eabihf", "cortex_m4+vfp4d16sp", "Cortex-M4F (Thumb-2, single-precision FPU)"
    ),
    "rv32": CrossTarget("rv32", "riscv32-freestanding-none", "generic_rv32+m+c", "RV32IMC (soft float)"),
}

#: Flags of every cross build (besides -target/-mcpu).
CROSS_FLAGS = (
    "-std=c11",
    "-O2",
    "-ffreestanding",
    "-fno-builtin",
    "-ffp-contract=off",
    "-fno-strict-aliasing",
    "-fno-unwind-tables",
    "-fno-asynchronous-unwind-tables",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-g0",
    "-DPOND_FREESTANDING",
)

_PACKAGE = __package__  # the driver, <string.h> and linker script templates live in pondlib/codegen/templates/


def _check_l1(l1_bytes: Any) -> int:
    return check_int(l1_bytes, "l1_bytes", lo=1, hi=MMIO_BASE - L1_BASE, where="cross build", error=CodegenError,
                     fix=f"pass the L1 size in bytes (a PULP cluster: {L1_BYTES})")  # fmt: skip


def freestanding_sources(program: Program, *, l1_bytes: int = L1_BYTES) -> dict[str, str]:
    """The files a cross build adds to ``program``'s sources (path relative to the build directory -> text):
    the driver ``pond_driver.c``, the minimal ``pond_cross_include/string.h`` and the linker script
    ``pond_link.ld`` (flash at :data:`FLASH_BASE`, RAM at :data:`RAM_BASE`, ``.l1`` at ``L1_BASE``, at
    most ``l1_bytes``)."""
    if not isinstance(program, Program):
        raise CodegenError("program", value=type(program).__name__, limit="a pondlib.codegen Program")
    l1_bytes = _check_l1(l1_bytes)
    net = {"net": program.name}
    addresses = {"flash_base": hex(FLASH_BASE), "ram_base": hex(RAM_BASE), "l1_base": hex(L1_BASE),
                 "l3_base": hex(L3_BASE)}  # fmt: skip
    return {
        "pond_cross_include/string.h": render(_PACKAGE, "cross_string.h") + "\n",
        "pond_driver.c": render(_PACKAGE, "cross_driver.c", **net, upper=program.name.upper()) + "\n",
        "pond_link.ld": render(_PACKAGE, "cross_link.tmpl", **net, **addresses, l1_bytes=l1_bytes) + "\n",
    }


@dataclass(frozen=True)
class CrossBuild:
    """A cross-compiled program: the ELF, its target, the program it came from and its section sizes.

    Attributes:
        program: the generated program.
        target: the :class:`CrossTarget`.
        elf: path of the ELF.
        sections: allocated section name -> (address, size in bytes).
        flash_bytes: code and read-only data (.text, .rodata, ...) as linked.
        ram_bytes: .data + .bss as linked (the arena, the I/O buffers of the driver), without the stack.
        l1_bytes: ``.l1`` as linked (the ``POND_L1`` buffers of a cluster program; 0 without).
        l1_limit: the L1 size the build was linked for (``.l1`` never exceeds it).
        l3_bytes: ``.l3`` as linked (the ``POND_L3`` constants of a cluster program; 0 without).
    """

    program: Program
    target: CrossTarget
    elf: Path
    sections: dict[str, tuple[int, int]] = field(default_factory=dict)
    flash_bytes: int = 0
    ram_bytes: int = 0
    l1_bytes: int = 0
    l1_limit: int = L1_BYTES
    l3_bytes: int = 0


def _zig() -> list[str]:
    return [sys.executable, "-m", "ziglang"]


def _get_target(target: Any) -> CrossTarget:
    if isinstance(target, CrossTarget):
        return target
    if target not in TARGETS:
        raise CodegenError("cross target", value=target, limit=sorted(TARGETS), fix="pass one of the listed targets")
    return TARGETS[target]


def build_cross(
    program: Program,
    target: str,
    directory: str | Path,
    *,
    cache_dir: str | Path | None = None,
    l1_bytes: int = L1_BYTES,
    extra_flags: tuple[str, ...] = (),
) -> CrossBuild:
    """Write ``program`` and the driver into ``directory`` and build an ELF for ``target`` (see :data:`TARGETS`).

    Args:
        program: a generated program.
        target: ``"cortex-m4"`` or ``"rv32"``.
        directory: where the sources, the linker script and the ELF go (created if missing).
        cache_dir: zig's global cache (default ``$ZIG_GLOBAL_CACHE_DIR`` or zig's own).
        l1_bytes: the L1 size: a ``.l1`` section (``POND_L1`` buffers) larger than this is refused.
        extra_flags: more compiler flags (``-DPOND_NUM_CORES=8``).

    Raises:
        CodegenError: an unknown target, a failed compile (the compiler's message included), no zig, a
            ``.l1`` section over ``l1_bytes`` (its size, the limit and the fix named).
    """
    if not isinstance(program, Program):
        raise CodegenError("program", value=type(program).__name__, limit="a pondlib.codegen Program")
    tgt = _get_target(target)
    l1_bytes = _check_l1(l1_bytes)
    if isinstance(extra_flags, str) or not all(isinstance(f, str) for f in extra_flags):
        raise CodegenError("extra_flags", value=extra_flags, limit="a tuple of compiler flags (str)")
    out = program.write(directory).resolve()
    for relative, text in freestanding_sources(program, l1_bytes=l1_bytes).items():
        (out / relative).parent.mkdir(exist_ok=True)
        (out / relative).write_text(text)
    inc, driver, script = out / "pond_cross_include", out / "pond_driver.c", out / "pond_link.ld"
    elf = out / f"{program.name}-{tgt.name}.elf"
    cmd = [
        *_zig(),
        "cc",
        "-target",
        tgt.triple,
        f"-mcpu={tgt.mcpu}",
        *CROSS_FLAGS,
        *extra_flags,
        "-I",
        str(inc),
        "-I",
        str(out),
        "-o",
        str(elf),
        str(out / f"{program.name}.c"),
        str(driver),
        f"-Wl,-T,{script}",
        "-Wl,--entry=pond_reset",
    ]
    env = dict(os.environ)
    if cache_dir is not None:
        env["ZIG_GLOBAL_CACHE_DIR"] = str(cache_dir)
    _compile(cmd, out, env, program.name, tgt.name, l1_bytes)
    sections = _sections(elf)
    flash = sum(size for addr, size in sections.values() if addr < L1_BASE)
    l1 = sum(size for addr, size in sections.values() if L1_BASE <= addr < RAM_BASE)
    ram = sum(size for addr, size in sections.values() if RAM_BASE <= addr < L3_BASE)
    l3 = sum(size for addr, size in sections.values() if addr >= L3_BASE)
    if l1 > l1_bytes:  # the linker script refuses this already: a second line of defence
        raise _l1_error(program.name, l1, l1_bytes)
    return CrossBuild(
        program=program,
        target=tgt,
        elf=elf,
        sections=sections,
        flash_bytes=flash,
        ram_bytes=ram,
        l1_bytes=l1,
        l1_limit=l1_bytes,
        l3_bytes=l3,
    )


def _l1_error(name: str, need: int, limit: int) -> CodegenError:
    return CodegenError(
        f"the POND_L1 buffers of {name!r} (section .l1) do not fit in L1",
        value=f"{need} bytes",
        limit=f"at most l1_bytes = {limit} bytes",
        fix="tile the operands into smaller L1 buffers, or pass a larger l1_bytes if the chip has it",
    )


def _compile(cmd: list[str], out: Path, env: dict[str, str], name: str, target: str, l1_bytes: int) -> None:
    """Run the cross compiler; its failures as CodegenErrors (an L1 overflow with its size)."""
    try:
        proc = subprocess.run(cmd, cwd=out, capture_output=True, text=True, timeout=900, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CodegenError("cross compiler failed to run", value=" ".join(cmd), fix=str(exc)) from exc
    if proc.returncode == 0:
        return
    message = (proc.stderr or proc.stdout).strip()
    if "No module named ziglang" in message:
        raise CodegenError("cross compiler", value="ziglang not installed", fix='pip install "pondlib[cross]"')
    overflow = re.search(r"section '\.l1' will not fit in region 'L1': overflowed by (\d+) bytes", message)
    if overflow:
        raise _l1_error(name, l1_bytes + int(overflow.group(1)), l1_bytes)
    raise CodegenError(
        f"the generated C of {name!r} does not compile for {target}:\n{message}",
        where=str(out),
        fix="report this as a pondlib bug with the model that produced it",
    )


def _require(module: str) -> None:
    """Refuse with a CodegenError naming the extra when a package of the cross toolchain is missing."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise CodegenError("cross target", value=f"{module} not installed", fix='pip install "pondlib[cross]"')


def _sections(elf: Path) -> dict[str, tuple[int, int]]:
    _require("elftools")
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile

    with open(elf, "rb") as fh:
        ef = ELFFile(fh)
        return {
            s.name: (int(s["sh_addr"]), int(s["sh_size"]))
            for s in ef.iter_sections()
            if s["sh_flags"] & SH_FLAGS.SHF_ALLOC and s["sh_size"] > 0
        }


def _page(n: int) -> int:
    return -(-n // 0x1000) * 0x1000


def _load_elf(elf: Path) -> tuple[dict[str, int], list[tuple[int, bytes, int]]]:
    """The ELF's symbols (name -> address) and allocated sections ``(address, data, size)`` (no data: NOBITS)."""
    _require("elftools")
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    symbols: dict[str, int] = {}
    blobs: list[tuple[int, bytes, int]] = []
    with open(elf, "rb") as fh:
        ef = ELFFile(fh)
        for s in ef.iter_sections():
            if isinstance(s, SymbolTableSection):
                for sym in s.iter_symbols():
                    if sym.name:
                        symbols.setdefault(sym.name, int(sym["st_value"]))
            elif s["sh_flags"] & SH_FLAGS.SHF_ALLOC and s["sh_size"] > 0:
                data = b"" if s["sh_type"] == "SHT_NOBITS" else s.data()
                blobs.append((int(s["sh_addr"]), data, int(s["sh_size"])))
    return symbols, blobs


def _regions(blobs: list[tuple[int, bytes, int]], l1_limit: int) -> dict[str, tuple[int, int]]:
    """Where to map flash, L1 (only when there is a ``.l1``), RAM (without the stack) and L3 (only when there is
    a ``.l3``): name -> (base, size)."""
    flash_end = max((a + n for a, _, n in blobs if a < L1_BASE), default=FLASH_BASE)
    l1_end = max((a + n for a, _, n in blobs if L1_BASE <= a < RAM_BASE), default=0)
    ram_end = max((a + n for a, _, n in blobs if RAM_BASE <= a < L3_BASE), default=RAM_BASE)
    l3_end = max((a + n for a, _, n in blobs if a >= L3_BASE), default=0)
    regions = {"flash": (FLASH_BASE, _page(flash_end - FLASH_BASE) or 0x1000), "ram": (RAM_BASE, ram_end - RAM_BASE)}
    if l1_end:
        regions["l1"] = (L1_BASE, _page(max(l1_end - L1_BASE, l1_limit)))
    if l3_end:
        regions["l3"] = (L3_BASE, _page(l3_end - L3_BASE))
    return regions


def _count_instructions(code: bytes, thumb: bool) -> int:
    """Instructions in a block of machine code (Thumb-2 or RV32C: 16- and 32-bit encodings)."""
    n = pos = 0
    while pos + 1 < len(code):
        half = code[pos] | (code[pos + 1] << 8)
        wide = (half >> 11) in (0b11101, 0b11110, 0b11111) if thumb else (half & 0b11) == 0b11
        pos += 4 if wide else 2
        n += 1
    return n


class _Machine:
    """The ELF loaded into a unicorn CPU, with the addresses of the driver's symbols."""

    def __init__(self, build: CrossBuild) -> None:
        _require("unicorn")
        from unicorn import (
            UC_ARCH_ARM,
            UC_ARCH_RISCV,
            UC_HOOK_BLOCK,
            UC_MODE_MCLASS,
            UC_MODE_RISCV32,
            UC_MODE_THUMB,
            Uc,
        )

        self.build = build
        self.thumb = build.target.name == "cortex-m4"
        if self.thumb:
            from unicorn import arm_const as regs

            self.uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS)
            self._pc, self._sp, self._lr = regs.UC_ARM_REG_PC, regs.UC_ARM_REG_SP, regs.UC_ARM_REG_LR
        else:
            from unicorn import riscv_const as regs

            self.uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV32)
            self._pc, self._sp, self._lr = regs.UC_RISCV_REG_PC, regs.UC_RISCV_REG_SP, regs.UC_RISCV_REG_RA
        self.symbols, blobs = _load_elf(build.elf)
        regions = _regions(blobs, build.l1_limit)
        self.uc.mem_map(_RETURN_STUB, 0x1000)
        self.uc.mem_map(*regions["flash"])
        if "l1" in regions:
            self.uc.mem_map(*regions["l1"])
        ram_size = _page(regions["ram"][1] + STACK_BYTES)
        self.uc.mem_map(RAM_BASE, ram_size)
        self.stack_top = RAM_BASE + ram_size - 16
        for addr, data, _ in blobs:
            if data:
                self.uc.mem_write(addr, data)
        for sym in ("pond_x", "pond_y", "pond_arena", "pond_reset", "pond_step"):
            if sym not in self.symbols:
                raise CodegenError("cross build", value=f"symbol {sym} missing", where=str(build.elf))
        if self.thumb:
            self._enable_fpu()
        else:
            gp = self.symbols.get("__global_pointer$")
            if gp is not None:
                self.uc.reg_write(regs.UC_RISCV_REG_GP, gp)
        self.count = 0
        self._lengths: dict[tuple[int, int], int] = {}
        self.uc.hook_add(UC_HOOK_BLOCK, self._on_block)
        self.states = self._state_table()

    def _enable_fpu(self) -> None:
        """Grant CP10/CP11 (the FPU) full access, as a Cortex-M4F start-up does through CPACR."""
        from unicorn import arm_const

        cpacr = getattr(arm_const, "UC_ARM_REG_C1_C0_2", None)
        if cpacr is not None:
            try:
                self.uc.reg_write(cpacr, self.uc.reg_read(cpacr) | (0xF << 20))
            except Exception:  # noqa: BLE001 - not every unicorn exposes CPACR on M-profile: then it is on already
                pass

    def _on_block(self, uc: Any, address: int, size: int, _user: Any) -> None:
        key = (address, size)
        n = self._lengths.get(key)
        if n is None:
            n = _count_instructions(bytes(uc.mem_read(address, size)), self.thumb)
            self._lengths[key] = n
        self.count += n

    def _state_table(self) -> list[tuple[int, int, int]]:
        return _state_table(self.build, self.symbols, lambda addr, n: bytes(self.uc.mem_read(addr, n)))

    def call(self, symbol: str) -> None:
        entry = self.symbols[symbol]
        self.uc.reg_write(self._sp, self.stack_top)
        if self.thumb:
            self.uc.reg_write(self._lr, _RETURN_STUB | 1)
            begin = entry | 1
        else:
            self.uc.reg_write(self._lr, _RETURN_STUB)
            begin = entry
        from unicorn import UcError

        try:
            self.uc.emu_start(begin, _RETURN_STUB, timeout=0, count=0)
        except UcError as exc:
            pc = self.uc.reg_read(self._pc)
            raise CodegenError(
                f"emulated {self.build.target.name} program faulted in {symbol}: {exc}",
                where=f"{self.build.elf} pc={pc:#x}",
            ) from exc
        pc = self.uc.reg_read(self._pc) & ~1
        if pc != _RETURN_STUB:
            raise CodegenError(f"emulated {symbol} did not return", where=f"{self.build.elf} pc={pc:#x}")


def _state_table(build: CrossBuild, symbols: dict[str, int], read: Any) -> list[tuple[int, int, int]]:
    """(elem_bytes, count, offset) of each recorded state, read (``read(address, n) -> bytes``) from the
    target's ``<name>_states``."""
    prog = build.program
    states = prog.io.states
    if not states:
        return []
    addr = symbols.get(f"{prog.name}_states")
    if addr is None:
        raise CodegenError("cross build", value=f"symbol {prog.name}_states missing", where=str(build.elf))
    raw = np.frombuffer(read(addr, 16 * len(states)), dtype="<i4").reshape(len(states), 4)
    table = [(int(r[1]), int(r[2]), int(r[3])) for r in raw]
    for (elem, count, _), s in zip(table, states):
        if elem != s.dtype.itemsize or count != s.count:
            raise CodegenError("cross build state table", value=(elem, count), limit=(s.dtype.itemsize, s.count))
    return table


def run_cross(build: CrossBuild, x: Any, *, record: bool = False) -> tuple[np.ndarray, dict | None, float]:
    """Run a cross build emulated on ``x`` (``(B, T, N_IN)`` or ``(T, N_IN)``; checked like
    :func:`~pondlib.codegen.toolchain.run_host`): every sample from a reset arena, one ``pond_step`` per step.

    Returns:
        ``(y, rec, instructions_per_step)``: ``y`` and ``rec`` shaped as :func:`run_host` returns them; the
        mean number of instructions executed per ``<name>_step`` (resets not counted; 0.0 when T = 0).
    """
    if not isinstance(build, CrossBuild):
        raise CodegenError("cross build", value=type(build).__name__, limit="a CrossBuild from build_cross")
    if getattr(build, "cores", None) is not None:
        raise CodegenError("cross build", value=f"a {build.cores}-core cluster build", limit="a one-core CrossBuild",
                           fix="run it with pondlib.codegen.cluster.run_cluster")  # fmt: skip
    io = build.program.io
    data, batched = _input(x, io)
    B, T, _ = data.shape
    m = _Machine(build)
    x_addr, y_addr, arena = m.symbols["pond_x"], m.symbols["pond_y"], m.symbols["pond_arena"]
    out_bytes = io.n_out * io.out_dtype.itemsize
    y = np.zeros((B, T, io.n_out), dtype=io.out_dtype)
    rec = {s.name: np.zeros((B, T, s.count), dtype=s.dtype) for s in io.states} if record else None
    steps = 0
    counted = 0
    for b in range(B):
        m.call("pond_reset")
        for t in range(T):
            if io.n_in:
                m.uc.mem_write(x_addr, data[b, t].tobytes())
            before = m.count
            m.call("pond_step")
            counted += m.count - before
            steps += 1
            if out_bytes:
                y[b, t] = np.frombuffer(bytes(m.uc.mem_read(y_addr, out_bytes)), dtype=io.out_dtype)
            if rec is not None:
                for s, (elem, count, offset) in zip(io.states, m.states):
                    raw = bytes(m.uc.mem_read(arena + offset, elem * count))
                    rec[s.name][b, t] = np.frombuffer(raw, dtype=s.dtype)
    ips = counted / steps if steps else 0.0
    if not batched:
        y = y[0]
        rec = None if rec is None else {k: v[0] for k, v in rec.items()}
    return y, rec, ips


def _input(x: Any, io: Any) -> tuple[np.ndarray, bool]:
    arr = as_array(x, "x", error=CodegenError, allow_empty=True)
    batched = arr.ndim == 3
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[2] != io.n_in:
        raise CodegenError("input shape", value=tuple(np.shape(x)), limit=f"(B, T, {io.n_in}) or (T, {io.n_in})")
    dtype = io.in_dtype
    if dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise CodegenError("input", value="non-finite values", limit="finite float32 values")
    else:
        info = np.iinfo(dtype)
        if arr.size and (
            arr.dtype.kind == "f" and not np.all(arr == np.round(arr)) or arr.min() < info.min or arr.max() > info.max
        ):
            raise CodegenError(
                "input", value=f"values in [{arr.min()}, {arr.max()}]", limit=f"integers in [{info.min}, {info.max}]"
            )
    return np.ascontiguousarray(arr.astype(dtype)), batched
