r"""The C program every numerics emits: buffers, the static arena, the sources and the memory report.

An emitter (``pondlib.codegen.<numerics>``) describes its network as

* **constants**: weights and parameters, ``static const`` arrays (flash);
* **buffers**: per-sample memory (RAM). A ``state`` buffer persists from step to step (membranes,
  currents, delay lines, previous spikes) and is zeroed (or set by the emitter's reset code) by
  ``<net>_reset``; a ``scratch`` buffer lives only inside one step, between the operations ``live =
  (first, last)`` (0-based positions in the step's operation order), and may share memory with any
  scratch buffer whose interval does not overlap;
* **the step body**: C statements for one time step that read ``x`` (``const in_t *``), write ``y``
  (``out_t *``) and refer to each buffer and constant by its name;

and :func:`build_program` assembles the sources from the templates beside this module (``templates/net.h``,
``net.c``, ``main.c``, ``Makefile.tmpl`` and the state resets, filled by :mod:`pondlib.cprogram.templating`).
The arena of one sample is a struct::

    typedef struct {
        <state buffers, one typed member each>
        union { int8_t i8[..]; int16_t i16[..]; int32_t i32[..]; int64_t i64[..]; float f32[..]; ... } scratch;
    } <net>_arena_t;

Scratch buffers are placed at byte offsets planned from their lifetimes (first fit by decreasing size,
offsets aligned to 8 bytes) and reached through the union member of their type, so the C stays valid
without strict-aliasing games; the Makefile still passes ``-fno-strict-aliasing`` for belt and braces.

The generated API (``<net>.h``)::

    void <net>_reset_arena(<net>_arena_t *a);                        /* one sample's state to t = 0 */
    void <net>_step_arena(<net>_arena_t *a, const in_t *x, out_t *y); /* one time step */
    void <net>_reset(void);  void <net>_step(const in_t *x, out_t *y); /* the same on a built-in arena */
    void <net>_run(int32_t T, const in_t *x, out_t *y);                /* reset, then T steps: x[T][N_IN] */

and ``main.c``, the harness: ``./<net> IN.bin OUT.bin [RECORD.bin]`` (``-`` for stdin/stdout) where
``IN.bin`` holds ``int32 B, int32 T`` then ``B*T*N_IN`` values of ``in_t``; it runs every sample from a
reset arena and writes ``B*T*N_OUT`` values of ``out_t``, and, with ``RECORD.bin``, every state buffer
after every step (sample-major, then step, then the buffers in declaration order), all little-endian
as the host stores them. :func:`pondlib.codegen.toolchain.run_host` does exactly this from Python.

Example:
    >>> prog = build_program(
    ...     "acc", "int32",
    ...     constants=[Constant("gain", "int32_t", [2, 3])],
    ...     buffers=[Buffer("total", "int32_t", 2, "state"), Buffer("tmp", "int32_t", 2, "scratch", (0, 1))],
    ...     step_body="for (int i = 0; i < 2; ++i) { tmp[i] = gain[i] * x[i]; total[i] += tmp[i]; y[i] = total[i]; }",
    ...     n_in=2, in_ctype="int32_t", n_out=2, out_ctype="int32_t",
    ... )
    >>> sorted(prog.sources)
    ['Makefile', 'README.md', 'acc.c', 'acc.h', 'main.c']
    >>> prog.memory.flash_bytes, prog.memory.ram_bytes
    (8, 16)
    >>> [s.name for s in prog.io.states]
    ['total']
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pondlib.cprogram.templating import render
from pondlib.errors import CodegenError
from pondlib.validate import check_bool, check_c_name, check_writable_file

__all__ = [
    "CTYPES",
    "Constant",
    "Buffer",
    "StateView",
    "IOSpec",
    "BufferReport",
    "MemoryReport",
    "Program",
    "ArenaPlan",
    "plan_arena",
    "build_program",
    "c_identifier",
    "check_program_name",
    "RESERVED_NAMES",
    "MAX_BUFFER_ELEMENTS",
    "MAX_PROGRAM_BYTES",
    "c_literal",
    "format_array",
]

#: C type -> (numpy dtype, size in bytes, union member of the scratch arena).
CTYPES: dict[str, tuple[np.dtype, int, str]] = {
    "int8_t": (np.dtype("<i1"), 1, "i8"),
    "uint8_t": (np.dtype("<u1"), 1, "u8"),
    "int16_t": (np.dtype("<i2"), 2, "i16"),
    "uint16_t": (np.dtype("<u2"), 2, "u16"),
    "int32_t": (np.dtype("<i4"), 4, "i32"),
    "uint32_t": (np.dtype("<u4"), 4, "u32"),
    "int64_t": (np.dtype("<i8"), 8, "i64"),
    "float": (np.dtype("<f4"), 4, "f32"),
}

#: Scratch offsets (bytes) are multiples of this.
ALIGN = 8

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile "
    "while x y a t".split()
)


def c_identifier(name: Any, what: str = "name") -> str:
    """``name`` when it is a valid C identifier that is not a keyword (nor ``x``, ``y``, ``a``, ``t``, which
    the generated functions use); else :class:`~pondlib.errors.CodegenError`.

    Example:
        >>> c_identifier("digits_net")
        'digits_net'
    """
    if not isinstance(name, str) or not _IDENT.match(name) or name in _C_KEYWORDS:
        raise CodegenError(
            what,
            value=name,
            limit="a C identifier: letters, digits and _, not starting with a digit, not a C keyword",
            fix="pass e.g. name='net'",
        )
    return name


#: Program names that would collide with the harness or the C library: ``main`` (``main.c`` is the
#: harness), the stems of the standard headers the sources and the cross build include (``<name>.h`` would
#: shadow them), the C keywords. Names starting with ``pond_`` are reserved too (the cross driver's and the
#: cluster runtime's symbols: ``pond_driver``, ``pond_x``, ``pond_step``, ...).
RESERVED_NAMES = tuple(sorted(_C_KEYWORDS)) + (
    "main", "assert", "complex", "ctype", "errno", "fenv", "float", "inttypes", "iso646", "limits", "locale",
    "math", "pthread", "setjmp", "signal", "stdalign", "stdarg", "stdatomic", "stdbool", "stddef", "stdint",
    "stdio", "stdlib", "stdnoreturn", "string", "tgmath", "threads", "time", "uchar", "wchar", "wctype",
)  # fmt: skip
#: Elements of one buffer (larger ones are refused before any C is written).
MAX_BUFFER_ELEMENTS = 2**28
#: Flash plus RAM of one program in bytes: static data beyond 2 GiB does not link in the default code model.
MAX_PROGRAM_BYTES = 2**31 - 1


def check_program_name(name: Any) -> str:
    """``name`` when it can prefix every symbol and name the files of a generated program, else
    :class:`~pondlib.errors.CodegenError`: lower case (the macros use its upper-case form and the cross
    driver substitutes it as text), at most :data:`~pondlib.validate.C_NAME_MAX` characters, not one of
    :data:`RESERVED_NAMES`, not starting with ``pond_``.

    Example:
        >>> check_program_name("digits_net")
        'digits_net'
        >>> check_program_name("pond_driver")
        Traceback (most recent call last):
        ...
        pondlib.errors.CodegenError: program name: got 'pond_driver', expected a C identifier not starting with ...
    """
    return check_c_name(name, "program name", reserved=RESERVED_NAMES, reserved_prefixes=("pond_",), error=CodegenError)


def c_literal(value: Any, ctype: str) -> str:
    """One value as a C literal of ``ctype``: integers exactly (``INT32_MIN`` and ``INT64`` extremes written
    so that no literal overflows), floats as their exact float32 hexadecimal form (``0x1.8p+1f``), so that
    the compiler reads back the very bits pondlib holds.

    Example:
        >>> c_literal(-2**31, "int32_t"), c_literal(3, "int8_t"), c_literal(0.1, "float")
        ('(-2147483647 - 1)', '3', '0x1.99999ap-4f')
    """
    if ctype == "float":
        f = np.float32(value)
        if not np.isfinite(f):
            raise CodegenError("float constant", value=float(value), limit="a finite float32", fix="check the model")
        if f == 0:
            return "-0.0f" if np.signbit(f) else "0.0f"
        mantissa, exponent = float(f).hex().split("p")
        return mantissa.rstrip("0").rstrip(".") + "p" + exponent + "f"
    if ctype not in CTYPES:
        raise CodegenError("C type", value=ctype, limit=sorted(CTYPES), fix="use one of the listed types")
    v = int(value)
    info = np.iinfo(CTYPES[ctype][0])
    if not info.min <= v <= info.max:
        raise CodegenError(f"{ctype} constant", value=v, limit=f"[{info.min}, {info.max}]", fix="check the model")
    if ctype == "int64_t":
        return f"({v + 1}LL - 1)" if v == info.min else f"{v}LL"
    if ctype in ("uint32_t",):
        return f"{v}u"
    if v == info.min and ctype == "int32_t":
        return "(-2147483647 - 1)"
    return str(v)


def format_array(values: Iterable[Any], ctype: str, per_line: int = 16, indent: str = "    ") -> str:
    """The initializer list ``{...}`` of ``values`` as C literals of ``ctype``, ``per_line`` per line."""
    items = [
        c_literal(v, ctype)
        for v in np.asarray(list(values) if not isinstance(values, np.ndarray) else values).reshape(-1)
    ]
    if not items:
        return "{0}"
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "{\n" + ",\n".join(indent + line for line in lines) + "\n}"


@dataclass(frozen=True)
class Constant:
    """A ``static const`` array in flash: ``values`` (any shape, stored flat, C order) of ``ctype``;
    ``memory="L3"`` places it in the ``.l3`` section of a freestanding build (the off-chip L3 of a cluster:
    :mod:`pondlib.cprogram.cluster`), plain flash on the host."""

    name: str
    ctype: str
    values: Any
    memory: str = ""

    def __post_init__(self) -> None:
        c_identifier(self.name, "constant name")
        if self.ctype not in CTYPES:
            raise CodegenError("constant C type", value=self.ctype, limit=sorted(CTYPES), where=self.name)
        if self.memory not in ("", "L3"):
            raise CodegenError("constant memory", value=self.memory, limit="'' (flash) or 'L3'", where=self.name)

    @property
    def count(self) -> int:
        return int(np.asarray(self.values).size)

    @property
    def nbytes(self) -> int:
        return max(1, self.count) * CTYPES[self.ctype][1]

    def declaration(self) -> str:
        where = f" {_L3_ATTRIBUTE}" if self.memory == "L3" else ""
        values = format_array(self.values, self.ctype)
        text = f"static const {self.ctype} {self.name}[{max(1, self.count)}]{where} = {values};"
        return (_L3_MACRO + text) if where else text


#: The attribute of an L3 constant (a macro: the ``.l3`` section when freestanding, nothing on the host).
_L3_ATTRIBUTE = "POND_L3"
_L3_MACRO = """#ifndef POND_L3
#ifdef POND_FREESTANDING
#define POND_L3 __attribute__((section(".l3"), aligned(8)))
#else
#define POND_L3
#endif
#endif
"""


@dataclass(frozen=True)
class Buffer:
    """Per-sample memory in the arena (RAM).

    Attributes:
        name: C identifier the step body uses.
        ctype: element type (a key of :data:`CTYPES`).
        count: number of elements (>= 1).
        kind: ``"state"`` (persists across steps, recorded by the harness) or ``"scratch"`` (within a step).
        live: for scratch: ``(first, last)`` operation positions (inclusive) during which it is in use.
        init: for state: the value every element takes at reset (default 0; a list gives one per element).
    """

    name: str
    ctype: str
    count: int
    kind: str = "state"
    live: tuple[int, int] | None = None
    init: Any = 0

    def __post_init__(self) -> None:
        c_identifier(self.name, "buffer name")
        if self.ctype not in CTYPES:
            raise CodegenError("buffer C type", value=self.ctype, limit=sorted(CTYPES), where=self.name)
        if not isinstance(self.count, (int, np.integer)) or not 1 <= self.count <= MAX_BUFFER_ELEMENTS:
            raise CodegenError("buffer size", value=self.count, limit=f"an integer in [1, {MAX_BUFFER_ELEMENTS}]",
                               where=self.name, fix="split the layer or use a smaller model")  # fmt: skip
        if self.kind not in ("state", "scratch"):
            raise CodegenError("buffer kind", value=self.kind, limit="'state' or 'scratch'", where=self.name)
        if self.kind == "scratch":
            if self.live is None or len(self.live) != 2 or not 0 <= self.live[0] <= self.live[1]:
                raise CodegenError(
                    "scratch lifetime", value=self.live, limit="(first, last) with 0 <= first <= last", where=self.name
                )

    @property
    def nbytes(self) -> int:
        return int(self.count) * CTYPES[self.ctype][1]


@dataclass(frozen=True)
class StateView:
    """One recorded state buffer: its name, C type and element count (the harness's record order)."""

    name: str
    ctype: str
    count: int

    @property
    def dtype(self) -> np.dtype:
        return CTYPES[self.ctype][0]


@dataclass(frozen=True)
class IOSpec:
    """What one step reads and writes: ``n_in`` values of ``in_ctype``, ``n_out`` of ``out_ctype``; the
    recorded states in harness order."""

    n_in: int
    in_ctype: str
    n_out: int
    out_ctype: str
    states: tuple[StateView, ...] = ()

    @property
    def in_dtype(self) -> np.dtype:
        return CTYPES[self.in_ctype][0]

    @property
    def out_dtype(self) -> np.dtype:
        return CTYPES[self.out_ctype][0]


@dataclass(frozen=True)
class BufferReport:
    """One row of the memory report: ``region`` is ``flash`` (a constant) or ``ram`` (a buffer); ``offset``
    is the byte offset in the scratch arena (None for constants and state)."""

    name: str
    region: str
    kind: str
    ctype: str
    count: int
    nbytes: int
    offset: int | None = None


@dataclass(frozen=True)
class MemoryReport:
    """Flash and RAM of one sample's program. ``ram_bytes`` = state bytes + the planned scratch arena;
    ``scratch_unshared_bytes`` is what the scratch would take without sharing (the arena's saving)."""

    flash_bytes: int
    ram_bytes: int
    state_bytes: int
    scratch_bytes: int
    scratch_unshared_bytes: int
    buffers: tuple[BufferReport, ...]

    def rows(self) -> list[tuple[str, str, str, str, int, int, str]]:
        """Rows ``(name, region, kind, ctype, count, bytes, offset)`` for a table."""
        return [
            (b.name, b.region, b.kind, b.ctype, b.count, b.nbytes, "" if b.offset is None else str(b.offset))
            for b in self.buffers
        ]


@dataclass(frozen=True)
class ArenaPlan:
    """Scratch offsets (bytes) by buffer name and the arena size (a multiple of :data:`ALIGN`)."""

    offsets: Mapping[str, int]
    size: int


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def plan_arena(buffers: Sequence[Buffer]) -> ArenaPlan:
    """Place scratch buffers so that two whose lifetimes overlap never overlap in memory.

    Greedy first fit by decreasing size: each buffer goes to the lowest aligned offset where it collides
    with no already placed buffer that is live at the same time. Not optimal in general (that is NP-hard),
    exact for chains, where it alternates two regions (ping-pong).

    Example:
        >>> bufs = [Buffer("h0", "int32_t", 4, "scratch", (0, 1)), Buffer("h1", "int32_t", 4, "scratch", (1, 2)),
        ...         Buffer("h2", "int32_t", 4, "scratch", (2, 3))]
        >>> plan = plan_arena(bufs)
        >>> plan.offsets["h0"] == plan.offsets["h2"], plan.size
        (True, 32)
    """
    scratch = sorted((b for b in buffers if b.kind == "scratch"), key=lambda b: (-b.nbytes, b.live, b.name))
    placed: list[tuple[int, int, Buffer]] = []  # (offset, end, buffer)
    offsets: dict[str, int] = {}
    for buf in scratch:
        clashes = sorted(
            (off, end) for off, end, other in placed if not (other.live[1] < buf.live[0] or buf.live[1] < other.live[0])
        )
        offset = 0
        for off, end in clashes:
            if offset + buf.nbytes <= off:
                break
            offset = max(offset, _align(end))
        offsets[buf.name] = offset
        placed.append((offset, offset + buf.nbytes, buf))
    size = _align(max((end for _, end, _ in placed), default=0))
    return ArenaPlan(offsets=offsets, size=size)


@dataclass(frozen=True)
class Program:
    """A generated C program.

    Attributes:
        name: the C prefix of every symbol (``<name>_step``) and the file stem.
        numerics: the numerics' name: ``float32``, or the name of the device whose C numerics emitted it.
        sources: file name -> text (``<name>.h``, ``<name>.c``, ``main.c``, ``Makefile``, ``README.md``).
        io: what one step reads and writes, and the recorded states.
        memory: flash and RAM per buffer.
        notes: what the emitter decided that a user should know (operation order, tolerances, limits).
        cores: 0 for a single-core program; else the default core count of a cluster program (its step runs
            the cluster runtime of :mod:`pondlib.cprogram.cluster`: build the host harness with
            ``-pthread``, the emulated target with :func:`pondlib.codegen.cluster.build_cluster`).
    """

    name: str
    numerics: str
    sources: Mapping[str, str]
    io: IOSpec
    memory: MemoryReport
    notes: tuple[str, ...] = field(default_factory=tuple)
    cores: int = 0

    def write(self, directory: str | Path) -> Path:
        """Write every source into ``directory`` (created if missing, files overwritten); return it."""
        if not isinstance(directory, (str, os.PathLike)) or not os.fspath(directory):
            raise CodegenError("output directory", value=repr(directory), limit="a path (str or os.PathLike)",
                               fix="pass a directory such as 'out/net'")  # fmt: skip
        out = Path(directory)
        try:
            if out.exists() and not out.is_dir():
                raise CodegenError("output directory", value=str(out), limit="a directory", fix="name a directory")
            out.mkdir(parents=True, exist_ok=True)
            for fname, text in self.sources.items():
                check_writable_file(out / fname, "generated source", error=CodegenError).write_text(text)
        except OSError as err:  # below a file, read-only, /proc, a name too long, a full disk
            raise CodegenError(
                "cannot write the generated sources",
                value=f"{err.strerror or type(err).__name__}: {err.filename or out}",
                limit="a writable directory",
                where=str(out)[:200],
                fix="choose a writable directory with a short path (not below a file)",
            ) from None
        return out


_PACKAGE = __package__  # the templates of this module live in pondlib/cprogram/templates/


def _state_reset(buf: Buffer) -> str:
    """The reset of one state buffer to its ``init``: zeros, one value for all, or one value each."""
    init = np.asarray(buf.init)
    if init.size == 1 and init.reshape(-1)[0] == 0:
        return render(_PACKAGE, "reset_zero.c", buf=buf.name, count=buf.count)
    if init.size == 1:
        value = c_literal(init.reshape(-1)[0], buf.ctype)
        return render(_PACKAGE, "reset_fill.c", buf=buf.name, count=buf.count, value=value)
    if init.size != buf.count:
        raise CodegenError("state init size", value=init.size, limit=buf.count, where=buf.name)
    values = format_array(init, buf.ctype)
    return render(_PACKAGE, "reset_table.c", buf=buf.name, count=buf.count, ctype=buf.ctype, values=values)


def _has_scratch(buffers: Sequence[Buffer], compact: bool) -> bool:
    """Whether the arena struct has its scratch union: always, but for a compact arena of state buffers only."""
    return not (compact and any(b.kind == "state" for b in buffers) and all(b.kind == "state" for b in buffers))


def _resets(states: Sequence[Buffer], compact: bool = False, scratch: bool = True) -> str:
    """The reset of one arena: each state buffer to its ``init``, the scratch (when the arena has one) to 0; one
    ``memset`` of the whole arena when every state starts at 0 (less code), or with ``compact`` a loop of byte
    stores over it (no call: an image whose C never calls ``memset`` links none)."""
    if all(np.asarray(b.init).size == 1 and np.asarray(b.init).reshape(-1)[0] == 0 for b in states):
        if compact:
            return render(_PACKAGE, "reset_bytes.c")
        return "memset(a, 0, sizeof *a); /* every state buffer and the scratch arena to 0 */"
    clear = ["memset(&a->scratch, 0, sizeof a->scratch);"] if scratch else []
    return "\n".join([_state_reset(b) for b in states] + clear)


def _header(
    name: str, numerics: str, io: IOSpec, buffers: Sequence[Buffer], plan: ArenaPlan, compact: bool = False
) -> str:
    """``<name>.h``: sizes, I/O types, the arena struct (state members, the scratch union) and the API; with
    ``compact`` and no scratch buffer, no scratch union at all (``<NAME>_SCRATCH_BYTES`` is then 0)."""
    states = [b for b in buffers if b.kind == "state"]
    has_scratch = _has_scratch(buffers, compact)
    arena_bytes = max(plan.size, ALIGN) if has_scratch else 0
    # one union member per element type of the scratch buffers, each spanning the whole arena
    members = sorted({CTYPES[b.ctype][2]: b.ctype for b in buffers if b.kind == "scratch"}.items()) or [
        ("i8", "int8_t")
    ]
    return render(
        _PACKAGE,
        "net.h",
        net=name,
        upper=name.upper(),
        numerics=numerics,
        n_in=io.n_in,
        n_out=io.n_out,
        n_states=len(states),
        scratch_bytes=arena_bytes,
        in_ctype=io.in_ctype,
        out_ctype=io.out_ctype,
        state_members="\n".join(f"{b.ctype} {b.name}[{b.count}];" for b in states) or "int32_t unused_state;",
        has_scratch=has_scratch,
        scratch_members="\n".join(f"{ct} {m}[{arena_bytes // CTYPES[ct][1]}];" for m, ct in members),
        n_state_rows=max(1, len(states)),
    )


def _view(buf: Buffer, plan: ArenaPlan) -> str:
    """The step function's pointer to one buffer: its arena member (state) or its planned place (scratch)."""
    if buf.kind == "state":
        return f"{buf.ctype} *const {buf.name} = a->{buf.name}; /* [{buf.count}] */"
    member, size = CTYPES[buf.ctype][2], CTYPES[buf.ctype][1]
    offset = plan.offsets[buf.name]
    return (
        f"{buf.ctype} *const {buf.name} = &a->scratch.{member}[{offset // size}]; /* [{buf.count}] at byte {offset} */"
    )


def _source(
    name: str,
    numerics: str,
    constants: Sequence[Constant],
    buffers: Sequence[Buffer],
    plan: ArenaPlan,
    code: Mapping[str, str],
    compact: bool = False,
) -> str:
    """``<name>.c``: the constants, the recorded-state table, ``code``'s helpers, reset and step."""
    states = [b for b in buffers if b.kind == "state"]
    used = states + [b for b in buffers if b.kind == "scratch"]
    rows = [
        f'{{POND_STATE_NAME("{b.name}"), {CTYPES[b.ctype][1]}, {b.count}, '
        f"(int32_t)offsetof({name}_arena_t, {b.name})}},"
        for b in states
    ]
    return render(
        _PACKAGE,
        "net.c",
        net=name,
        upper=name.upper(),
        numerics=numerics,
        constants="\n\n".join(c.declaration() for c in constants),
        n_state_rows=max(1, len(states)),
        state_rows="\n".join(rows) or '{"", 0, 0, 0},',
        helpers=code["helpers"].strip(),
        state_resets=_resets(states, compact, _has_scratch(buffers, compact)),
        reset_body=code["reset_body"].strip(),
        views="\n".join(_view(b, plan) for b in used),
        unused="\n".join(f"(void){b.name};" for b in used),
        step_body=code["step_body"].strip(),
    )


def _tidy(text: str) -> str:
    """One blank line at most between parts (an empty optional part leaves none), one final newline."""
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"


def _check_names(name: str, constants: Sequence[Constant], buffers: Sequence[Buffer], ctypes: Sequence[str]) -> str:
    """The program name as a C identifier; the I/O types known; one C name per constant and buffer."""
    name = c_identifier(check_program_name(name), "program name")
    for ctype in ctypes:
        if ctype not in CTYPES:
            raise CodegenError("I/O C type", value=ctype, limit=sorted(CTYPES))
    names = [c.name for c in constants] + [b.name for b in buffers]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise CodegenError("duplicate C names", value=dup, limit="one name per constant and buffer")
    return name


def build_program(
    name: str,
    numerics: str,
    *,
    constants: Sequence[Constant],
    buffers: Sequence[Buffer],
    step_body: str,
    n_in: int,
    in_ctype: str,
    n_out: int,
    out_ctype: str,
    reset_body: str = "",
    helpers: str = "",
    notes: Sequence[str] = (),
    description: str = "",
    cores: int = 0,
    compact_arena: bool = False,
) -> Program:
    """Assemble the sources of a program (see the module docstring for the layout and the API).

    Args:
        name: C prefix and file stem (a C identifier).
        numerics: the numerics' name (documentation and the Program).
        constants: flash arrays the step body reads by name.
        buffers: per-sample state and scratch buffers the step body uses by name.
        step_body: C statements of one step (``x``, ``y`` and every buffer/constant name in scope).
        n_in, in_ctype, n_out, out_ctype: the step's input and output.
        reset_body: extra C statements after the state buffers are set to their ``init`` (``a`` in scope).
        helpers: ``static`` C functions the step body calls (placed before the step function).
        notes: lines for the README and :attr:`Program.notes`.
        description: one paragraph for the README.
        cores: 0, or the default core count of a cluster program (:attr:`Program.cores`).
        compact_arena: a small image: the arena has no scratch union when no buffer is scratch (else 8 bytes
            at least), and the reset of an all-zero arena is a loop of byte stores, not a ``memset`` call (a
            freestanding image then links no ``memset``). The values computed are the same.
    """
    name = _check_names(name, constants, buffers, (in_ctype, out_ctype))
    compact_arena = check_bool(compact_arena, "compact_arena", where=name, error=CodegenError)
    states = [b for b in buffers if b.kind == "state"]
    plan = plan_arena(buffers)
    io = IOSpec(n_in, in_ctype, n_out, out_ctype, tuple(StateView(b.name, b.ctype, b.count) for b in states))
    code = {"helpers": helpers, "reset_body": reset_body, "step_body": step_body}
    memory = _memory_report(constants, buffers, plan)
    if memory.flash_bytes + memory.ram_bytes > MAX_PROGRAM_BYTES:
        raise CodegenError("program size", value=f"{memory.flash_bytes} B flash + {memory.ram_bytes} B RAM",
                           limit=f"<= {MAX_PROGRAM_BYTES} B in all (static data beyond 2 GiB does not link)",
                           where=name, fix="use a smaller model")  # fmt: skip
    sources = {
        f"{name}.h": _header(name, numerics, io, buffers, plan, compact_arena),
        f"{name}.c": _source(name, numerics, constants, buffers, plan, code, compact_arena),
        "main.c": render(_PACKAGE, "main.c", net=name, upper=name.upper()),
        "Makefile": render(_PACKAGE, "Makefile.tmpl", net=name, threads="-pthread" if cores else ""),
        "README.md": _readme(name, numerics, n_in, in_ctype, n_out, out_ctype, states, memory, notes, description),
    }
    return Program(
        name=name,
        numerics=numerics,
        sources={fname: _tidy(text) for fname, text in sources.items()},
        io=io,
        memory=memory,
        notes=tuple(notes),
        cores=int(cores),
    )


def _memory_report(constants: Sequence[Constant], buffers: Sequence[Buffer], plan: ArenaPlan) -> MemoryReport:
    rows = [BufferReport(k.name, "flash", "constant", k.ctype, k.count, k.nbytes) for k in constants]
    rows += [BufferReport(b.name, "ram", b.kind, b.ctype, b.count, b.nbytes, plan.offsets.get(b.name)) for b in buffers]
    state_bytes = sum(b.nbytes for b in buffers if b.kind == "state")
    unshared = sum(b.nbytes for b in buffers if b.kind == "scratch")
    return MemoryReport(
        flash_bytes=sum(k.nbytes for k in constants),
        ram_bytes=state_bytes + plan.size,
        state_bytes=state_bytes,
        scratch_bytes=plan.size,
        scratch_unshared_bytes=unshared,
        buffers=tuple(rows),
    )


def _readme(name, numerics, n_in, in_ctype, n_out, out_ctype, states, memory, notes, description) -> str:
    lines = [
        f"# {name}: generated by pondlib.codegen ({numerics} numerics)",
        "",
        description
        or "A spiking network as plain C11: no dynamic allocation, no dependency beyond the C library headers.",
        "",
        "## API (`" + name + ".h`)",
        "",
        f"- `{name}_reset()`, `{name}_step(const {name}_in_t *x, {name}_out_t *y)` (one time step: "
        f"{n_in} x `{in_ctype}` in, {n_out} x `{out_ctype}` out), `{name}_run(T, x, y)`.",
        f"- Several samples at once: one `{name}_arena_t` each, with `{name}_reset_arena(&a)` and "
        f"`{name}_step_arena(&a, x, y)`.",
        "",
        "## Build and run",
        "",
        "```sh",
        "make            # builds ./" + name + " with the system C compiler",
        f"./{name} in.bin out.bin [record.bin]",
        "```",
        "",
        "`in.bin`: int32 B, int32 T, then B*T*N_IN inputs; `out.bin`: B*T*N_OUT outputs; `record.bin`: every",
        "state buffer after every step (sample, step, buffer order below). All little-endian.",
        "",
        "## Memory (one sample)",
        "",
        f"flash {memory.flash_bytes} bytes (constants); RAM {memory.ram_bytes} bytes "
        f"(state {memory.state_bytes}, scratch arena {memory.scratch_bytes}, "
        f"{memory.scratch_unshared_bytes} without sharing)",
        "",
        "| buffer | region | kind | type | count | bytes | offset |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [f"| {' | '.join(str(v) for v in row)} |" for row in memory.rows()]
    if states:
        lines += ["", "Recorded states, in order: " + ", ".join(f"`{b.name}`" for b in states) + "."]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"
