"""Benchmark: pondlib's float32 C against SNN-MLIR's, side by side, on every shared NIR file both accept.

For each file of ``tests/data/nir`` that snn-mlir's front end accepts (``snn-mlir check``) and pondlib emits
(``pondlib.codegen.generate(..., numerics="float32", record=False)``: the firmware form, which keeps no state
for the harness's recording only -- SNN-MLIR's C records nothing either; the default ``record=True`` program,
which also keeps every neuron's spikes as a state, is sized beside it in a second table), both programs are
built from the same NIR file and measured the same way:

* **host ns per step**: the step function timed over ``--steps`` steps of one sample (``clock_gettime``
  around the loop), both compiled by the same compiler with the same flags (``cc -O2`` and the host flags of
  ``pondlib.codegen.toolchain``), the two executables run alternately ``--repeats`` times; medians.
* **Cortex-M4F instructions per step**: both linked into a freestanding Cortex-M4F image by
  ``pondlib.codegen.cross.build_cross`` (same driver, linker script and flags, plus ``-ffunction-sections
  -fdata-sections -Wl,--gc-sections``, so that neither keeps code the step does not reach) and run
  instruction by instruction in unicorn (``run_cross``) over ``--isa-steps`` steps.
* **flash**: ``.text + .rodata + .data`` of that image (code, constants, initialised data; the 16-byte
  ``.ARM.exidx`` both images carry is left out);
* **RAM**: ``.data + .bss`` of that image (state, scratch, the driver's input and output buffers) plus the
  worst-case stack of one step: the frames of the driver's ``pond_step`` and of the program's step function
  as the cross compiler reports them (clang ``-fstack-usage``, the same flags, every frame ``static``: no
  dynamic allocation), checked against the stack high-water mark measured in the emulator (the lowest
  address written below the initial stack pointer while the steps run; the larger of the two is reported).
* **parity**: both programs' outputs against pondlib's float simulation of the same network (the host
  build and the Cortex-M4F build must agree bit for bit; the number of differing output values is
  reported: pondlib's C is checked bit-exact elsewhere, SNN-MLIR's discretisation differs by design).

**What "SNN-MLIR's C" is here.** snn-mlir 1.0.0 on PyPI writes the network as MLIR in its own dialect
(``snn-mlir export``) and leaves the lowering to ``snn-opt`` (its ``SNNToLinalg`` pass, then MLIR's
``linalg -> loops -> LLVM`` pipeline), which PyPI does not ship and which needs LLVM/MLIR 22 built from
source. This benchmark therefore takes the MLIR that ``snn-mlir export`` writes and lowers it to C exactly
as that pass specifies (:func:`lower_snn_mlir`): ``snn.linear`` = zero fill, ``linalg.matvec`` (``y[i] +=
W[i,j] x[j]``, i outer, j inner, every term), bias add; ``snn.conv2d`` = a zero-filled padded copy of the
input on the stack, ``linalg.conv_2d_nchw_fchw`` loops, bias; ``snn.sumpool2d`` likewise; ``snn.lif`` /
``snn.cubalif`` / ``snn.li`` / ``snn.cubali`` element-wise with its decays, strict ``>`` threshold and reset
to ``v_reset`` (0); ``memref.alloca`` temporaries as locals of the step function (the stack, unshared, as
MLIR allocas carry no lifetimes); the neuron states and the recurrent ``prev_spikes`` buffers in one static
struct (SNN-MLIR's ``main.c`` keeps them as locals of ``main``: the same bytes); weights as ``static const``.
Give the snn-mlir executable with ``--snn-mlir PATH`` (install it in a separate venv: ``python3 -m venv
/tmp/snnmlir && /tmp/snnmlir/bin/pip install snn-mlir``); without it the table has pondlib's column only.

The Linear study (``--no-linear`` skips it) measures the rule of ``pondlib.codegen.float32._linear_events``:
the Cortex-M4F instructions per step of a ``Linear(n_in, n_out)`` alone, event-driven and dense, at the densities of
``--densities``.

``--densities`` also measures pondlib's Cortex-M4F instructions per step at several input densities, on
the NIR networks and on the digits network (``Linear(16, 128) -> LIF -> Linear(128, 10) -> LIF``); with
``--baseline DIR`` (a pondlib source tree, e.g. ``git archive HEAD~1 pondlib | tar -x -C DIR``) the same
numbers of that tree's C are measured in a subprocess and shown beside them (before / after).

Run: ``python benchmarks/codegen_snn_mlir.py --snn-mlir /tmp/snnmlir/bin/snn-mlir [--steps 2000]
[--repeats 7] [--isa-steps 20] [--densities 0.05,0.2,0.5] [--baseline DIR] [--no-linear]``. Prints the table and writes
``benchmarks/results/codegen_snn_mlir.{json,txt}``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
NIR = ROOT / "tests" / "data" / "nir"
#: Time steps (s) of the shared NIR files whose convention does not store one (tests/data/nir/README.md).
NIR_DT = {"lif/lif_norse.nir": 1e-4}
#: Extra flags of both tools' Cortex-M4F builds: unreachable code and data dropped, as in a firmware image.
GC_FLAGS = ("-ffunction-sections", "-fdata-sections", "-Wl,--gc-sections")
#: The C prefix of SNN-MLIR's lowered program.
SNN = "snnm"

_TIMING_MAIN = r"""/* benchmarks/codegen_snn_mlir.py: time NET_step over T steps of one sample, or write its outputs. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "NET.h"

int main(int argc, char **argv)
{
    if (argc != 4) return 2;
    FILE *in = fopen(argv[1], "rb");
    if (!in) return 2;
    int32_t dims[2];
    if (fread(dims, sizeof dims[0], 2, in) != 2) return 2;
    size_t n = (size_t)dims[1] * UPPER_N_IN;
    float *x = malloc((n ? n : 1) * sizeof *x);
    float *y = malloc(((size_t)dims[1] * UPPER_N_OUT + 1) * sizeof *y);
    if (!x || !y || fread(x, sizeof *x, n, in) != n) return 2;
    fclose(in);
    int reps = atoi(argv[2]);
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        struct timespec a, b;
        NET_reset();
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (int32_t t = 0; t < dims[1]; ++t) NET_step(x + (size_t)t * UPPER_N_IN, y + (size_t)t * UPPER_N_OUT);
        clock_gettime(CLOCK_MONOTONIC, &b);
        double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / dims[1];
        if (ns < best) best = ns;
    }
    FILE *out = fopen(argv[3], "wb");
    if (!out || fwrite(y, sizeof *y, (size_t)dims[1] * UPPER_N_OUT, out) != (size_t)dims[1] * UPPER_N_OUT) return 2;
    fclose(out);
    printf("%.3f\n", best);
    free(x);
    free(y);
    return 0;
}
"""


# -- SNN-MLIR's lowering, as C -------------------------------------------------------------------------
_GLOBAL = re.compile(r'memref\.global "private" constant @([\w.]+) : memref<([\dx]+)xf32> = dense<(.*?)>\s*$', re.M)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_ARG = re.compile(r"%([\w.]+) : memref<([\dx]+)xf32>")


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in text.split("x"))


def _c(name: str) -> str:
    return "v_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def _f(value: float) -> str:
    """A float32 literal, exact (hexadecimal)."""
    f = np.float32(value)
    return "0.0f" if f == 0 else float(f).hex() + "f"


def _attr(text: str, key: str) -> float:
    return float(re.search(rf"{key} = ([-+\w.]+) : f64", text).group(1))


def _ints(text: str, key: str) -> tuple[int, ...]:
    m = re.search(rf"{key} = array<i64: ([\d, ]+)>", text)
    return tuple(int(v) for v in m.group(1).split(",")) if m else ()


def _operands(line: str, group: str) -> list[str]:
    m = re.search(rf"{group}\(([^)]*)\)", line)
    return [] if m is None else [t.strip().lstrip("%") for t in m.group(1).split(":")[0].split(",")]


class _Lowering:
    """The step function of one exported network, op by op (see the module docstring)."""

    def __init__(self, mlir: str) -> None:
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.alias: dict[str, str] = {}
        self.consts: list[str] = []
        self.locals: list[str] = []
        self.body: list[str] = []
        for name, dims, value in _GLOBAL.findall(mlir):
            shape = _shape(dims)
            nums = np.asarray([np.float32(float(v)) for v in _NUMBER.findall(value)], np.float32)
            nums = np.full(int(np.prod(shape)), nums[0], np.float32) if nums.size == 1 else nums
            cname = _c(name)
            self.shapes[cname] = shape
            items = ", ".join(_f(v) for v in nums)
            self.consts.append(f"static const float {cname}[{nums.size}] = {{{items}}};")
        header = mlir[mlir.index("func.func @snn_forward_step(") : mlir.index(") attributes")]
        self.args = [(_c(n), _shape(d)) for n, d in _ARG.findall(header)]
        for n, s in self.args:
            self.shapes[n] = s

    def ref(self, name: str) -> str:
        c = _c(name)
        return self.alias.get(c, c)

    def size(self, name: str) -> int:
        return int(np.prod(self.shapes[self.ref(name)]))

    def lower(self, mlir: str) -> None:
        body = mlir[mlir.index(") attributes") :]
        lines = body.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i].strip()
            i += 1
            if line.startswith("linalg.generic"):  # the fan-in sum: ins added left to right
                ins, out = _operands(line, "ins"), _operands(line, "outs")[0]
                terms = " + ".join(f"{self.ref(n)}[i]" for n in ins)
                self.body.append(f"for (int i = 0; i < {self.size(out)}; ++i) {self.ref(out)}[i] = {terms};")
                while not lines[i].strip().startswith("}"):
                    i += 1
                i += 1
                continue
            self._op(line)

    def _op(self, line: str) -> None:
        m = re.match(r"%([\w.]+) = memref\.(get_global|alloca|collapse_shape) ?@?([\w.%]*)", line)
        if m:
            name, kind, src = _c(m.group(1)), m.group(2), m.group(3)
            if kind == "get_global":
                self.alias[name] = _c(src)
            elif kind == "collapse_shape":
                self.alias[name] = self.ref(src.lstrip("%"))
            else:
                shape = _shape(re.search(r"memref<([\dx]+)xf32>", line).group(1))
                self.shapes[name] = shape
                self.locals.append(f"float {name}[{int(np.prod(shape))}];")
            return
        for op in ("linear", "conv2d", "sumpool2d", "avgpool2d", "lif", "cubalif", "li", "cubali"):
            if line.startswith(f"snn.{op} "):
                getattr(self, f"_{op}")(line)
                return
        if line.startswith("memref.copy"):
            a, b = [t.strip().lstrip("%") for t in line.split("memref.copy")[1].split(":")[0].split(",")]
            self.body.append(f"for (int i = 0; i < {self.size(a)}; ++i) {self.ref(b)}[i] = {self.ref(a)}[i];")
            return
        if line and not line.startswith(("//", "return", "}", "module", "func.func", ") attributes")):
            raise ValueError(f"SNN-MLIR op not lowered by this benchmark: {line[:120]}")

    def _bias(self, line: str, out: str, per: int) -> None:
        bias = _operands(line, "bias")
        if bias:
            n = int(np.prod(self.shapes[out]))
            self.body.append(f"for (int i = 0; i < {n}; ++i) {out}[i] = {out}[i] + {self.ref(bias[0])}[i / {per}];")

    def _linear(self, line: str) -> None:
        x, w = (self.ref(n) for n in _operands(line, "ins"))
        out = self.ref(_operands(line, "out")[0])
        n_out, n_in = self.shapes[w]
        self.body.append(
            f"for (int i = 0; i < {n_out}; ++i) {out}[i] = 0.0f;\n"
            f"for (int i = 0; i < {n_out}; ++i)\n"
            f"    for (int j = 0; j < {n_in}; ++j) {out}[i] = {out}[i] + {w}[i * {n_in} + j] * {x}[j];"
        )
        self._bias(line, out, 1)

    def _padded(self, x: str, ph: int, pw: int) -> tuple[str, int, int]:
        c, h, w = self.shapes[x]
        if not (ph or pw):
            return x, h, w
        hp, wp = h + 2 * ph, w + 2 * pw
        name = f"{x}_pad"
        self.locals.append(f"float {name}[{c * hp * wp}];")
        self.body.append(
            f"for (int i = 0; i < {c * hp * wp}; ++i) {name}[i] = 0.0f;\n"
            f"for (int c = 0; c < {c}; ++c)\n    for (int r = 0; r < {h}; ++r)\n"
            f"        for (int q = 0; q < {w}; ++q) {name}[(c * {hp} + r + {ph}) * {wp} + q + {pw}] = "
            f"{x}[(c * {h} + r) * {w} + q];"
        )
        return name, hp, wp

    def _conv2d(self, line: str) -> None:
        x, w = (self.ref(n) for n in _operands(line, "ins"))
        out = self.ref(_operands(line, "out")[0])
        (sh, sw), (ph, pw) = _ints(line, "stride"), _ints(line, "padding")
        f_out, c_in, kh, kw = self.shapes[w]
        _, ho, wo = self.shapes[out]
        src, hp, wp = self._padded(x, ph, pw)
        self.body.append(
            f"for (int i = 0; i < {f_out * ho * wo}; ++i) {out}[i] = 0.0f;\n"
            f"for (int f = 0; f < {f_out}; ++f)\n for (int oh = 0; oh < {ho}; ++oh)\n"
            f"  for (int ow = 0; ow < {wo}; ++ow)\n   for (int c = 0; c < {c_in}; ++c)\n"
            f"    for (int u = 0; u < {kh}; ++u)\n     for (int v = 0; v < {kw}; ++v)\n"
            f"      {out}[(f * {ho} + oh) * {wo} + ow] = {out}[(f * {ho} + oh) * {wo} + ow] + "
            f"{src}[(c * {hp} + oh * {sh} + u) * {wp} + ow * {sw} + v] * {w}[((f * {c_in} + c) * {kh} + u) * {kw} + v];"
        )
        self._bias(line, out, ho * wo)

    def _sumpool2d(self, line: str, divide: bool = False) -> None:
        x = self.ref(_operands(line, "ins")[0])
        out = self.ref(_operands(line, "out")[0])
        (kh, kw), (sh, sw), (ph, pw) = _ints(line, "kernel"), _ints(line, "stride"), _ints(line, "padding")
        c, ho, wo = self.shapes[out]
        src, hp, wp = self._padded(x, ph, pw)
        self.body.append(
            f"for (int i = 0; i < {c * ho * wo}; ++i) {out}[i] = 0.0f;\n"
            f"for (int c = 0; c < {c}; ++c)\n for (int oh = 0; oh < {ho}; ++oh)\n  for (int ow = 0; ow < {wo}; ++ow)\n"
            f"   for (int u = 0; u < {kh}; ++u)\n    for (int v = 0; v < {kw}; ++v)\n"
            f"     {out}[(c * {ho} + oh) * {wo} + ow] = {out}[(c * {ho} + oh) * {wo} + ow] + "
            f"{src}[(c * {hp} + oh * {sh} + u) * {wp} + ow * {sw} + v];"
        )
        if divide:
            self.body.append(f"for (int i = 0; i < {c * ho * wo}; ++i) {out}[i] = {out}[i] / {_f(kh * kw)};")

    def _avgpool2d(self, line: str) -> None:
        self._sumpool2d(line, divide=True)

    def _neuron(self, line: str, update: str) -> None:
        x = self.ref(_operands(line, "ins")[0])
        state = [self.ref(n) for n in _operands(line, "state")]
        out = self.ref(_operands(line, "out")[0])
        names = dict(zip(("c", "v") if len(state) == 2 else ("v",), state))
        code = update.format(x=x, out=out, **names)
        self.body.append(f"for (int i = 0; i < {int(np.prod(self.shapes[out]))}; ++i) {{\n    {code}\n}}")

    def _lif(self, line: str) -> None:
        d, th, vr = (_f(_attr(line, k)) for k in ("decay_float", "threshold_float", "v_reset_float"))
        self._neuron(line, f"const float v = {d} * {{v}}[i] + {{x}}[i]; const int s = v > {th}; "
                           f"{{out}}[i] = s ? 1.0f : 0.0f; {{v}}[i] = s ? {vr} : v;")  # fmt: skip

    def _cubalif(self, line: str) -> None:
        cd, vd, th = (_f(_attr(line, k)) for k in ("cur_decay_float", "vol_decay_float", "threshold_float"))
        self._neuron(line, f"const float c = {cd} * {{c}}[i] + {{x}}[i]; const float v = {vd} * {{v}}[i] + c; "
                           f"const int s = v > {th}; {{c}}[i] = c; {{out}}[i] = s ? 1.0f : 0.0f; "
                           f"{{v}}[i] = s ? 0.0f : v;")  # fmt: skip

    def _li(self, line: str) -> None:
        d = _f(_attr(line, "decay_float"))
        self._neuron(line, f"const float v = {d} * {{v}}[i] + {{x}}[i]; {{v}}[i] = v; {{out}}[i] = v;")

    def _cubali(self, line: str) -> None:
        cd, vd = (_f(_attr(line, k)) for k in ("cur_decay_float", "vol_decay_float"))
        self._neuron(line, f"const float c = {cd} * {{c}}[i] + {{x}}[i]; const float v = {vd} * {{v}}[i] + c; "
                           f"{{c}}[i] = c; {{v}}[i] = v; {{out}}[i] = v;")  # fmt: skip


def lower_snn_mlir(mlir: str) -> dict[str, str]:
    """The C sources (``snnm.h``, ``snnm.c``) of SNN-MLIR's step function for the MLIR its ``export`` wrote,
    with pondlib's program API (``snnm_reset_arena`` / ``snnm_step_arena`` on an arena, ``snnm_reset`` /
    ``snnm_step`` on a built-in one, global when freestanding), so that the same harness, timing loop
    and cross driver run both tools."""
    low = _Lowering(mlir)
    low.lower(mlir)
    (x_name, x_shape), (y_name, y_shape) = low.args[0], low.args[-1]
    states = low.args[1:-1]
    n_in, n_out = int(np.prod(x_shape)), int(np.prod(y_shape))
    members = "\n    ".join(f"float {n}[{int(np.prod(s))}];" for n, s in states) or "float unused;"
    views = "\n    ".join(
        [f"const float *const {x_name} = x;", f"float *const {y_name} = y;"]
        + [f"float *const {n} = a->{n};" for n, _ in states]
    )
    up = SNN.upper()
    header = f"""#ifndef {up}_H
#define {up}_H
#include <stdint.h>
#define {up}_N_IN {n_in}
#define {up}_N_OUT {n_out}
typedef float {SNN}_in_t;
typedef float {SNN}_out_t;
typedef struct {{
    {members}
}} {SNN}_arena_t;
void {SNN}_reset_arena({SNN}_arena_t *a);
void {SNN}_step_arena({SNN}_arena_t *a, const float *x, float *y);
void {SNN}_reset(void);
void {SNN}_step(const float *x, float *y);
#endif
"""
    nl = "\n"
    source = f"""/* SNN-MLIR's SNNToLinalg lowering of the network snn-mlir exported, as C (codegen_snn_mlir.py). */
#include <string.h>
#include "{SNN}.h"

{nl.join(low.consts)}

const int32_t {SNN}_states[1] = {{0}}; /* no recorded state (the cross linker script names the table) */

void {SNN}_reset_arena({SNN}_arena_t *a) {{ memset(a, 0, sizeof *a); }}

void {SNN}_step_arena({SNN}_arena_t *a, const float *x, float *y)
{{
    {views}
    {(nl + "    ").join(low.locals)}
    {(nl + "    ").join(nl.join(low.body).splitlines())}
}}

#ifdef POND_FREESTANDING
{SNN}_arena_t {SNN}_default_arena;
#else
static {SNN}_arena_t {SNN}_default_arena;
#endif
void {SNN}_reset(void) {{ {SNN}_reset_arena(&{SNN}_default_arena); }}
void {SNN}_step(const float *x, float *y) {{ {SNN}_step_arena(&{SNN}_default_arena, x, y); }}
"""
    return {f"{SNN}.h": header, f"{SNN}.c": source}


def snn_mlir_program(executable: str, path: Path, directory: Path):
    """SNN-MLIR's program for one NIR file: ``export`` to MLIR, lowered to C (:func:`lower_snn_mlir`), as a
    :class:`pondlib.cprogram.Program` (no recorded state) that the pondlib toolchain builds and runs."""
    from pondlib.cprogram.program import IOSpec, MemoryReport, Program

    directory.mkdir(parents=True, exist_ok=True)
    mlir = directory / "network.mlir"
    proc = subprocess.run([executable, "export", str(path), "-o", str(mlir)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"snn-mlir export failed: {(proc.stderr or proc.stdout).strip()[:300]}")
    sources = lower_snn_mlir(mlir.read_text())
    n_in = int(re.search(rf"#define {SNN.upper()}_N_IN (\d+)", sources[f"{SNN}.h"]).group(1))
    n_out = int(re.search(rf"#define {SNN.upper()}_N_OUT (\d+)", sources[f"{SNN}.h"]).group(1))
    memory = MemoryReport(0, 0, 0, 0, 0, ())
    return Program(SNN, "snn-mlir", sources, IOSpec(n_in, "float", n_out, "float"), memory)


def host_executable(program, directory: Path) -> Path:
    """The timing executable of ``program`` (cc -O2 and pondlib's host flags)."""
    from pondlib.codegen.toolchain import HOST_FLAGS, find_cc

    out = program.write(directory)
    (out / "timing.c").write_text(_TIMING_MAIN.replace("NET", program.name).replace("UPPER", program.name.upper()))
    exe = out / "timing"
    cmd = [find_cc(), *HOST_FLAGS, "-O2", "-o", str(exe), "timing.c", f"{program.name}.c"]
    subprocess.run(cmd, cwd=out, check=True, capture_output=True, text=True)
    return exe


def run_timing(exe: Path, x: np.ndarray, repeats: int) -> tuple[float, np.ndarray]:
    """(best-of-``repeats`` ns per step, outputs (T, N_out)) of a timing executable on ``x`` (T, N_in)."""
    d = exe.parent
    (d / "in.bin").write_bytes(np.array([1, len(x)], "<i4").tobytes() + np.ascontiguousarray(x, "<f4").tobytes())
    res = subprocess.run([str(exe), str(d / "in.bin"), str(repeats), str(d / "out.bin")], check=True,
                         capture_output=True, text=True)  # fmt: skip
    return float(res.stdout.split()[0]), np.fromfile(d / "out.bin", "<f4").reshape(len(x), -1)


def frame_bytes(build, directory: Path) -> int:
    """The stack frames of one step as the cross compiler reports them (clang ``-fstack-usage``, the flags of
    the build): the driver's ``pond_step`` plus the program's ``<name>_step_arena``."""
    from pondlib.codegen.cross import CROSS_FLAGS

    prog, tgt = build.program, build.target
    total = 0
    for source, function in ((f"{prog.name}.c", f"{prog.name}_step_arena"), ("pond_driver.c", "pond_step")):
        su = directory / (Path(source).stem + ".su")
        cmd = [sys.executable, "-m", "ziglang", "cc", "-target", tgt.triple, f"-mcpu={tgt.mcpu}", *CROSS_FLAGS,
               "-I", str(directory / "pond_cross_include"), "-I", str(directory), "-c", source, "-o",
               str(su.with_suffix(".o")), "-Xclang", "-stack-usage-file", "-Xclang", str(su)]  # fmt: skip
        subprocess.run(cmd, cwd=directory, check=True, capture_output=True, text=True)
        rows = [line.split("\t") for line in su.read_text().splitlines()]
        frame = [r for r in rows if r[0].endswith(":" + function)]
        if not frame or frame[0][2].strip() != "static":
            raise RuntimeError(f"no static frame for {function} in {su}: {rows}")
        total += int(frame[0][1])
    return total


def stack_high_water(build, x: np.ndarray) -> int:
    """Bytes of stack the emulated steps used: the stack painted, the steps run, the lowest changed byte."""
    from pondlib.codegen.cross import STACK_BYTES, _Machine  # the emulator of run_cross, reused as it is

    m = _Machine(build)
    m.call("pond_reset")
    span = STACK_BYTES - 4096
    base = m.stack_top - span
    m.uc.mem_write(base, b"\xa5" * span)
    for t in range(len(x)):
        m.uc.mem_write(m.symbols["pond_x"], np.ascontiguousarray(x[t], "<f4").tobytes())
        m.call("pond_step")
    painted = bytes(m.uc.mem_read(base, span))
    first = next((i for i, b in enumerate(painted) if b != 0xA5), span)
    return span - first


def cortex_m4(program, x: np.ndarray, directory: Path) -> dict:
    """Cortex-M4F image of ``program``: instructions per step on ``x`` (T, N_in), flash, RAM (static + stack)."""
    from pondlib.codegen.cross import build_cross, run_cross

    build = build_cross(program, "cortex-m4", directory, extra_flags=GC_FLAGS)
    y, _, ips = run_cross(build, x)
    sec = {name: size for name, (_, size) in build.sections.items()}
    static = sec.get(".data", 0) + sec.get(".bss", 0)
    frames, water = frame_bytes(build, directory), stack_high_water(build, x)
    return {
        "instructions_per_step": ips,
        "flash_bytes": sec.get(".text", 0) + sec.get(".rodata", 0) + sec.get(".data", 0),
        "static_ram_bytes": static,
        "stack_bytes": max(frames, water),
        "stack_frames_bytes": frames,
        "stack_measured_bytes": water,
        "ram_bytes": static + max(frames, water),
        "sections": sec,
        "y": y,
    }


def nir_files() -> list[Path]:
    return sorted(NIR.rglob("*.nir"))


def load_network(path: Path):
    from pondlib.interop.nir import load_nir

    return load_nir(path, dt=NIR_DT.get(path.relative_to(NIR).as_posix())).module


def snn_mlir_accepts(executable: str | None, path: Path) -> tuple[bool, str]:
    """``snn-mlir check FILE``: (accepted, the first reason when not)."""
    if executable is None:
        return False, "snn-mlir not given"
    proc = subprocess.run([executable, "check", str(path)], capture_output=True, text=True, timeout=300)
    if proc.returncode == 0:
        return True, ""
    lines = [line.strip() for line in (proc.stdout + proc.stderr).splitlines() if "ERROR" in line or "error" in line]
    return False, (lines[0] if lines else "refused")[:160]


def spikes(shape: tuple[int, ...], density: float, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).random(shape) < density).astype(np.float32)


def side_by_side(path: Path, executable: str | None, args, work: Path) -> dict:
    """One NIR file: both programs built, timed (interleaved), emulated, sized and checked (module docstring)."""
    from pondlib.codegen import generate

    net = load_network(path)
    programs = {"pondlib": generate(net, "float32", name="net", record=False)}
    if executable is not None:
        programs["snn_mlir"] = snn_mlir_program(executable, path, work / "snn_mlir")
    x = spikes((args.steps, programs["pondlib"].io.n_in), args.density, seed=1)
    ref = np.asarray(net(x[None])[0])[0]
    exes = {tool: host_executable(p, work / f"{tool}_host") for tool, p in programs.items()}
    times: dict[str, list[float]] = {tool: [] for tool in programs}
    outputs = {}
    for _ in range(args.repeats):  # interleaved: each round runs every tool once
        for tool, exe in exes.items():
            ns, outputs[tool] = run_timing(exe, x, 3)
            times[tool].append(ns)
    row: dict = {"file": path.relative_to(ROOT).as_posix(), "n_in": programs["pondlib"].io.n_in,
                 "n_out": programs["pondlib"].io.n_out, "density": args.density, "steps": args.steps}  # fmt: skip
    for tool, prog in programs.items():
        isa = cortex_m4(prog, x[: args.isa_steps], work / f"{tool}_m4")
        y_m4 = isa.pop("y")
        row[tool] = {
            "host_ns_per_step": statistics.median(times[tool]),
            **isa,
            "differing_outputs_vs_pondlib_float": int((outputs[tool] != ref).sum()),
            "outputs": int(ref.size),
            "m4_equals_host": bool(np.array_equal(y_m4, outputs[tool][: args.isa_steps])),
        }
    rec = cortex_m4(generate(net, "float32", name="net"), x[: args.isa_steps], work / "pondlib_record_m4")
    rec.pop("y")
    row["pondlib_record"] = rec  # the default program (record=True), sized for the second table
    if "snn_mlir" in row:
        p, s = row["pondlib"], row["snn_mlir"]
        row["ratios"] = {
            "host_speedup": s["host_ns_per_step"] / p["host_ns_per_step"],
            "m4_instruction_ratio": s["instructions_per_step"] / p["instructions_per_step"],
            "flash_pondlib_over_snn_mlir": p["flash_bytes"] / s["flash_bytes"],
            "ram_pondlib_over_snn_mlir": p["ram_bytes"] / s["ram_bytes"],
        }
    return row


def density_study(densities: list[float], isa_steps: int, work: Path) -> dict:
    """pondlib's Cortex-M4F instructions per step at each input density, on the NIR networks pondlib accepts and
    the digits network (random weights: the cost does not depend on training)."""
    import jax

    from pondlib.cli.demo_network import demo_network
    from pondlib.codegen import generate
    from pondlib.codegen.cross import build_cross, run_cross
    from pondlib.errors import PondError

    nets = {}
    for path in nir_files():
        try:
            nets[path.relative_to(NIR).as_posix()] = load_network(path)
        except PondError:
            continue
    nets["digits (16 -> 128 -> 10)"] = demo_network(128, key=jax.random.PRNGKey(0))
    out: dict = {}
    for i, (label, net) in enumerate(nets.items()):
        prog = generate(net, "float32", name="net")
        build = build_cross(prog, "cortex-m4", work / f"d{i}", extra_flags=GC_FLAGS)
        out[label] = {}
        for d in densities:
            _, _, ips = run_cross(build, spikes((isa_steps, prog.io.n_in), d, seed=2))
            out[label][str(d)] = ips
    return out


def linear_study(densities: list[float], isa_steps: int, work: Path) -> dict:
    """Cortex-M4F instructions per step of ``Linear(n_in, n_out)`` alone (random weights, no bias), its event-driven
    loop against its dense loop, at each input density: the measurement behind ``_linear_events``."""
    from pondlib import nn
    from pondlib.codegen import float32, generate
    from pondlib.codegen.cross import build_cross, run_cross

    rng = np.random.default_rng(0)
    out: dict = {}
    saved = float32.EVENT_MIN_OUT
    try:
        for n_in in (1, 2, 4, 16):
            for n_out in (1, 2, 3, 4, 8):
                lin = nn.Linear(n_in, n_out, weight=rng.normal(size=(n_in, n_out)).astype(np.float32))
                cell = out.setdefault(f"{n_in} -> {n_out}", {})
                for form, threshold in (("events", 1), ("dense", 2**31)):
                    float32.EVENT_MIN_OUT = threshold
                    prog = generate(lin, "float32", name="net")
                    build = build_cross(prog, "cortex-m4", work / f"l{n_in}_{n_out}_{form}", extra_flags=GC_FLAGS)
                    for d in densities:
                        _, _, ips = run_cross(build, spikes((isa_steps, n_in), d, seed=2))
                        cell.setdefault(form, {})[str(d)] = ips
    finally:
        float32.EVENT_MIN_OUT = saved
    return out


def baseline_study(tree: Path, densities: list[float], isa_steps: int) -> dict:
    """:func:`density_study` of another pondlib source tree, in a subprocess that imports it."""
    env = dict(os.environ, PYTHONPATH=str(tree.resolve()))
    cmd = [sys.executable, __file__, "--density-study-only", "--densities", ",".join(map(str, densities)),
           "--isa-steps", str(isa_steps)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    payload = json.loads(proc.stdout.strip().splitlines()[-1])
    if not payload["pondlib"].startswith(str(tree.resolve())):
        raise RuntimeError(f"the baseline imported {payload['pondlib']}, not {tree}")
    return payload["study"]


def _table(console, rows: list[dict]) -> None:
    from rich.table import Table

    t = Table(title="float32 C per step on the shared NIR files: pondlib / SNN-MLIR (its export, lowered as specified)")
    for col in ("file", "host ns", "speed-up", "M4F instr", "ratio", "flash B", "flash p/s", "RAM B (static+stack)",
                "RAM p/s", "outputs differing from pondlib float"):  # fmt: skip
        t.add_column(col, justify="left" if col == "file" else "right")
    for r in rows:
        p, s = r["pondlib"], r.get("snn_mlir")
        pair = lambda k, f="{:,.0f}": f.format(p[k]) + ("" if s is None else " / " + f.format(s[k]))  # noqa: E731
        q = r.get("ratios", {})
        ram_snn = "" if s is None else f" / {s['static_ram_bytes']:,}+{s['stack_bytes']:,}"
        diff = f"{p['differing_outputs_vs_pondlib_float']}" + (
            "" if s is None else f" / {s['differing_outputs_vs_pondlib_float']}"
        )
        t.add_row(
            r["file"].removeprefix("tests/data/nir/"), pair("host_ns_per_step", "{:,.1f}"),
            f"{q['host_speedup']:.2f}x" if q else "", pair("instructions_per_step"),
            f"{q['m4_instruction_ratio']:.2f}x" if q else "", pair("flash_bytes"),
            f"{q['flash_pondlib_over_snn_mlir']:.2f}" if q else "",
            f"{p['static_ram_bytes']:,}+{p['stack_bytes']}" + ram_snn,
            f"{q['ram_pondlib_over_snn_mlir']:.2f}" if q else "", f"{diff} of {r['n_out'] * r['steps']:,}",
        )  # fmt: skip
    console.print(t)


def _record_table(console, rows: list[dict]) -> None:
    from rich.table import Table

    t = Table(title="pondlib's default float32 C (record=True: every neuron's spikes kept as a state) beside the "
              "record=False program above, Cortex-M4F")  # fmt: skip
    for col in ("file", "M4F instr", "flash B", "RAM B (static+stack)"):
        t.add_column(col, justify="left" if col == "file" else "right")
    for r in rows:
        d, p = r["pondlib_record"], r["pondlib"]
        t.add_row(
            r["file"].removeprefix("tests/data/nir/"),
            f"{d['instructions_per_step']:,.0f} ({p['instructions_per_step']:,.0f})",
            f"{d['flash_bytes']:,} ({p['flash_bytes']:,})",
            f"{d['static_ram_bytes']:,}+{d['stack_bytes']} ({p['static_ram_bytes']:,}+{p['stack_bytes']})",
        )  # fmt: skip
    console.print(t)


def _linear_table(console, study: dict) -> None:
    from rich.table import Table

    t = Table(title="Linear(n_in, n_out) alone, Cortex-M4F instructions per step: event-driven / dense loop")
    densities = list(next(iter(study.values()))["events"])
    t.add_column("n_in -> n_out")
    for d in densities:
        t.add_column(f"density {d}", justify="right")
    for label, cell in study.items():
        t.add_row(label, *(f"{cell['events'][d]:,.1f} / {cell['dense'][d]:,.1f}" for d in densities))
    console.print(t)


def _density_table(console, after: dict, before: dict | None) -> None:
    from rich.table import Table

    title = "pondlib float32 C, Cortex-M4F instructions per step by input density" + (
        " (before -> after)" if before else ""
    )
    t = Table(title=title)
    densities = list(next(iter(after.values())))
    t.add_column("network")
    for d in densities:
        t.add_column(f"density {d}", justify="right")
    for label, row in after.items():
        cells = []
        for d in densities:
            b = (before or {}).get(label, {}).get(d)
            cells.append(f"{row[d]:,.0f}" if b is None else f"{b:,.0f} -> {row[d]:,.0f} ({b / row[d]:.1f}x)")
        t.add_row(label, *cells)
    console.print(t)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snn-mlir", default=None, metavar="PATH", help="the snn-mlir executable (a separate venv)")
    ap.add_argument("--steps", type=int, default=2000, help="time steps of the host timings")
    ap.add_argument("--repeats", type=int, default=7, help="interleaved rounds of the host timings (median)")
    ap.add_argument("--isa-steps", type=int, default=20, help="time steps emulated on Cortex-M4F")
    ap.add_argument("--density", type=float, default=0.2, help="input spike density of the side-by-side runs")
    ap.add_argument("--densities", default="0.05,0.2,0.5", help="input densities of the instruction study")
    ap.add_argument("--baseline", default=None, metavar="DIR", help="a pondlib source tree to compare with")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "codegen_snn_mlir.json"))
    ap.add_argument("--no-linear", dest="linear", action="store_false", help="skip the Linear event/dense study")
    ap.add_argument("--density-study-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    densities = [float(d) for d in args.densities.split(",")]
    if args.density_study_only:  # the baseline's subprocess: its pondlib's numbers, as one JSON line
        import pondlib

        with tempfile.TemporaryDirectory() as tmp:
            study = density_study(densities, args.isa_steps, Path(tmp))
        print(json.dumps({"pondlib": str(Path(pondlib.__file__).resolve()), "study": study}))
        return 0
    from rich.console import Console

    console = Console(width=200, record=True)
    exe = args.snn_mlir
    if exe is not None and not Path(exe).is_file():
        console.print(f"snn-mlir: {exe} not found")
        exe = None
    if exe is None:
        console.print("snn-mlir not available (python3 -m venv /tmp/snnmlir && /tmp/snnmlir/bin/pip install snn-mlir, "
                      "then --snn-mlir /tmp/snnmlir/bin/snn-mlir): pondlib's column only")  # fmt: skip
    version = "" if exe is None else subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
    rows, refused = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, path in enumerate(nir_files()):
            ok, why = snn_mlir_accepts(exe, path)
            if exe is not None and not ok:
                refused[path.relative_to(ROOT).as_posix()] = why
                continue
            console.print(f"{path.relative_to(NIR)} ...")
            rows.append(side_by_side(path, exe if ok else None, args, Path(tmp) / f"n{i}"))
        study = density_study(densities, args.isa_steps, Path(tmp) / "density")
        linear = linear_study(densities, args.isa_steps, Path(tmp) / "linear") if args.linear else None
    before = baseline_study(Path(args.baseline), densities, args.isa_steps) if args.baseline else None
    _table(console, rows)
    for name, why in refused.items():
        console.print(f"not compared (snn-mlir refuses it): {name}: {why}")
    if rows:
        _record_table(console, rows)
    if linear:
        _linear_table(console, linear)
    _density_table(console, study, before)
    payload = {
        "benchmark": "codegen_snn_mlir",
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "snn_mlir": version or None,
        "args": vars(args),
        "rows": rows,
        "refused_by_snn_mlir": refused,
        "density_study": {"after": study, "before": before},
        "linear_study": linear,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2))
    out.with_suffix(".txt").write_text(console.export_text())
    console.print(f"wrote {out} and {out.with_suffix('.txt')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
