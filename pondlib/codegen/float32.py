r"""``float32`` numerics: the float model of a ``pondlib.nn`` network as plain C11 (IEEE float32, no libm).

:func:`emit` walks the network and writes one block of C per module, each from its kernel template in
``pondlib/codegen/templates/`` (:mod:`pondlib.cprogram.templating`: Python computes only the values -- names,
sizes, loop bounds, constants, the chosen variant); every coefficient that pondlib
derives from the parameters (the LIF decays ``exp(-dt/tau)``, the NIR neurons' ``a``, ``dt/tau * r``,
leak terms) is taken from the module's own ``parameters()`` -- the exact float32 values pondlib's float
model uses -- and embedded as an exact hexadecimal constant, so the C computes no ``exp`` and needs no
libm. The harness input is ``float x[N_IN]`` per step, the output ``float y[N_OUT]`` is the network's
output at that step (spike counts for spiking layers, membranes for ``LI``/``CubaLI``/``Integrator``).

Measured parity (``tests/codegen/test_float32.py``: the digits demo network, the golden float networks,
the tutorial network, every shared NIR file, conv/pool and NIR-neuron chains; 5178 steps): no spike
differs, membranes and currents within 5e-7 of each layer's range.

Supported modules (anything else raises :class:`~pondlib.errors.CodegenError` naming the type and this
list):

=================================  ====================================================================
module                             C, per step (all float32, evaluated left to right as written)
=================================  ====================================================================
``Sequential``                     the children in order, each reading the previous one's output
``Residual``                       ``y[i] = block(x)[i] + x[i]``
``GraphNetwork``                   nodes in pondlib's order; inputs into a node add left to right in
                                   pondlib's source order; an edge cut in a cycle reads the source's
                                   output of the previous step (its spike or membrane state when the
                                   readers run before it, else a copy, the state ``<node>/prev``)
``Linear``                         ``y[j] = ((0 + x[0] W[0,j]) + x[1] W[1,j]) + ...`` then ``+ b[j]``
                                   (event-driven from two outputs on: each input tested once, a
                                   non-zero one adds its row to every output; zero inputs skipped:
                                   the sum is the same; an all-zero bias is not added: ``s + 0 = s``
                                   for a sum that starts at +0)
``LIF`` (k synapses, ``w_rec``,    ``a[c] = x[c] + sum_m s[m] W_rec[m,c]`` (m ascending over last
caps)                              step's non-zero spikes, gathered once); ``I[c] = (I[c] + a[c]) beta[c]``;
                                   ``P = (V alpha + (I[n,0] + ... + I[n,k-1])) + bias``;
                                   ``s = P >= thr ? min(floor(P / thr), cap) : 0``; ``V = P - s thr``
``NIRLIF``, ``CubaLIF``, ``LI``,   ``I = a_syn I + g_syn x``; ``v = (a_mem V + g_mem d) + c_mem``
``CubaLI``, ``IF``,                (``d = I`` with a synapse, else ``x``); ``z = v > thr``; reset
``Integrator``                     ``subtract``: ``v - z thr``, ``zero``: ``v (1 - z)``, ``v_reset``:
                                   ``v (1 - z) + z v_reset`` (written out for z = 1 and z = 0)
``Threshold``                      ``y = x > thr``
``Scale``                          ``y = x * s``
``Flatten``                        nothing (the flat layout is already the flattened one)
``Delay``                          ``y[n] = x[t - d_n][n]``: a ring of the last ``max(d)`` inputs
``Conv1d``, ``Conv2d``             ``y[o,i,j] = (sum over c, u, v ascending of x W) + b[o]`` (zero
                                   padding, stride, dilation, groups; 1-D is 2-D of height 1;
                                   event-driven: a non-zero input adds its terms to the outputs it
                                   reaches, in (c, u, v) order for each; zero inputs skipped)
``SumPool2d``, ``AvgPool2d``       window sum (u, v ascending, zero padding); average: sum / (kh kw)
=================================  ====================================================================

Operation order. Each formula above is the order of pondlib's own JAX expressions (``lif_step``,
``neuron_step``, ``GraphNetwork._sum``); ``-ffp-contract=off`` keeps every product and sum rounded
separately (no FMA). The one place where the order cannot follow pondlib exactly is a dot product
(``Linear``, ``w_rec``, convolutions): XLA's kernels may add the terms in blocks, so the C's sequential
sum can differ from pondlib by a few float32 roundings. Spike decisions then differ only when a membrane lies
within such a rounding of a threshold (``tests/codegen/test_float32.py`` checks exactly that).

Event-driven loops. ``Linear`` and the convolutions test each input once per step and add the weights of the
non-zero ones only (the weights stored input-major: ``W`` as ``[n_in][n_out]``, a convolution's as
``[c_in/groups][kh][kw][c_out]``); each output still adds its terms in ascending input order starting from 0,
so every value is the dense loop's bit for bit (``tests/codegen/test_float32_memory.py`` compares them with
that loop written out). Where the input holds only 0 and 1 (the spikes of a NIR neuron, of a ``LIF`` with cap
1, of a ``Threshold``) the term is the weight itself (``1 W = W`` exactly). A ``Linear`` with one output uses
the dense loop (every input's term added; a zero input's term is +-0 and leaves the sum as it is): there the
zero test costs about what it saves. The rule (:data:`EVENT_MIN_OUT`) comes from the Cortex-M4F instructions
per step of a ``Linear`` alone, event-driven / dense, at input densities 0.05 / 0.2 / 0.5
(``benchmarks/codegen_snn_mlir.py``, its Linear table): one output, 1 -> 1: 23 / 19 at every density;
4 -> 1: 51.5 / 53, 54.8 / 53, 60 / 53; 16 -> 1: 150.5 / 149, 163.8 / 149, 189.2 / 149 (dense at most 3 %
dearer, at 0.05, and up to 21 % cheaper). Two outputs and more, 1 -> 2: 23 / 28, 25.5 / 28, 28.5 / 28;
16 -> 2: 174.7 / 235, 203.8 / 235, 259.9 / 235; 16 -> 8: 236 / 696, 348 / 696, 562 / 696 (events up to
2.9x cheaper; at most 11 % dearer, at density 0.5).

Memory. Spike counts are stored in one byte (``uint8_t``; ``uint16_t`` for a ``LIF`` cap above 255, float
above 65535); a fan-in sum whose first scratch input is read by nothing else is written in place; every
loop but the innermost multiply-add ones is marked ``POND_ROLLED`` (``#pragma GCC unroll 1`` for GCC >= 8
and clang: the code stays one copy per loop in flash; no value changes). Temporaries of at most
:data:`LOCAL_MAX` values (a one-neuron layer's input or spikes) are locals of the step function, which the
compiler keeps in registers, not arena memory; the arena has no scratch part when nothing else is scratch,
and its reset is a loop of byte stores (``compact_arena`` of :func:`pondlib.cprogram.program.build_program`:
a freestanding image links no ``memset``). With ``record=False`` (:func:`emit`) a neuron's spikes are a state
only where a later step reads them (a recurrent ``LIF``, an edge cut in a cycle); the outputs are the same.
For the single-LIF NIR file (``lif/lif_norse.nir``, ``record=False``) the Cortex-M4F image takes 204 B of
flash and 12 + 16 B of RAM (static + stack) against SNN-MLIR's 246 B and 12 + 16 B
(``benchmarks/results/codegen_snn_mlir.txt``).

Reset and membrane of the NIR neurons, exact rewrites (``tests/codegen/test_float32_small.py`` checks them
bit for bit against the formulas above in numpy float32, with -0, overflow to infinity and NaN): the reset
is written once for z = 1 and once for z = 0 (``1 - z`` and products by 1 are exact); where ``c_mem`` is +0,
``(a V + g d) + 0`` is computed as ``a V + (g d + 0)`` (equal in round-to-nearest: adding +0 only turns -0
into +0), which keeps one add off the step-to-step chain through ``V``, and the sum is then never -0, so the
kept membrane of a ``v_reset`` neuron is ``v`` itself; where every threshold is >= 0 and ``v_reset`` is +-0,
a firing ``v`` is > 0 and ``v 0 + v_reset`` is ``v 0``.

State buffers (recorded by the harness) are named after pondlib's record keys through
:func:`buffer_name`: ``"1_LIF/vmem"`` (membrane after reset), ``"1_LIF/isyn"`` (N*k, neuron-major),
``"1_LIF/spikes"`` (spike counts, ``uint8_t`` / ``uint16_t`` / float by the cap); NIR neurons keep ``isyn``,
``vmem_reset`` and ``spikes`` (``uint8_t``, 0 or 1); a ``Delay`` keeps ``delay_ring`` and ``delay_pos``; a
``GraphNetwork`` keeps ``<node>/prev`` for an edge cut in a cycle whose source's output is not a state buffer,
or is one that the source overwrites before the cut edge's reader runs.
Feature maps are flat in pondlib's C order (channel, row, column). Activations between modules are
scratch buffers that share the arena. Units are pondlib's: currents and voltages in the network's unit,
one call per time step ``dt``.

Example:
    >>> import jax, numpy as np, tempfile
    >>> from pondlib import nn
    >>> from pondlib.codegen import compile_host, run_host
    >>> net = nn.Sequential(nn.Linear(3, 4, key=jax.random.PRNGKey(0)), nn.LIF(4, tau_mem=0.01, tau_syn=0.005))
    >>> prog = emit(net, name="tiny")
    >>> [s.name for s in prog.io.states]
    ['r_1_LIF__isyn', 'r_1_LIF__vmem', 'r_1_LIF__spikes']
    >>> x = np.random.default_rng(0).random((2, 20, 3)).astype(np.float32) * 3
    >>> with tempfile.TemporaryDirectory() as d:
    ...     y, rec = run_host(compile_host(prog, d), prog, x, record=True)
    >>> ref, _, rec_ref = net(x, record=True)
    >>> bool(np.array_equal(y, np.asarray(ref)))
    True
    >>> bool(np.allclose(rec[buffer_name("1_LIF/vmem")], rec_ref["1_LIF/vmem"], rtol=1e-5, atol=1e-6))
    True
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from pondlib.cprogram.program import Buffer, Constant, Program, build_program, c_identifier, c_literal
from pondlib.cprogram.templating import render
from pondlib.errors import CodegenError
from pondlib.nn.combinators import Residual, Sequential
from pondlib.nn.graphnet import GraphNetwork
from pondlib.nn.layers import AvgPool2d, Conv1d, Conv2d, Delay, Flatten, Scale, SumPool2d
from pondlib.nn.lif import LIF
from pondlib.nn.linear import Linear
from pondlib.nn.neurons import IF, LI, NIRLIF, CubaLI, CubaLIF, Integrator, Threshold
from pondlib.validate import check_bool

__all__ = ["SUPPORTED", "LOCAL_MAX", "EVENT_MIN_OUT", "emit", "buffer_name"]

#: The module types :func:`emit` writes as C.
SUPPORTED = (
    "Sequential",
    "Residual",
    "GraphNetwork",
    "Linear",
    "LIF",
    "NIRLIF",
    "CubaLIF",
    "LI",
    "CubaLI",
    "IF",
    "Integrator",
    "Threshold",
    "Scale",
    "Flatten",
    "Delay",
    "Conv1d",
    "Conv2d",
    "SumPool2d",
    "AvgPool2d",
)


#: Temporaries of at most this many values are locals of the step function, not arena memory: the compiler
#: keeps them in registers (the loops over them have one iteration and vanish).
LOCAL_MAX = 1


def buffer_name(key: str) -> str:
    """The C state buffer that holds pondlib's record ``key`` (``"1_LIF/vmem"`` -> ``"r_1_LIF__vmem"``).

    Example:
        >>> buffer_name("lif1/vmem_reset"), buffer_name("a.b/isyn")
        ('r_lif1__vmem_reset', 'r_a_b__isyn')
    """
    return "r_" + re.sub(r"[^A-Za-z0-9_]", "_", key.replace("/", "__"))


def _spike_ctype(cap: float) -> str:
    """The C type of spike counts of at most ``cap`` per step: one byte up to 255, two up to 65535, else float.

    Example:
        >>> _spike_ctype(1), _spike_ctype(31), _spike_ctype(1000), _spike_ctype(2**16)
        ('uint8_t', 'uint8_t', 'uint16_t', 'float')
    """
    return "uint8_t" if cap <= 255 else "uint16_t" if cap <= 65535 else "float"


def _f32(value: Any) -> np.ndarray:
    return np.asarray(value, dtype=np.float32).reshape(-1)


_PACKAGE = __package__  # the kernels of this module live in pondlib/codegen/templates/


def _kernel(template: str, **values: Any) -> str:
    """One kernel's C: the template ``template`` of this package filled with ``values``."""
    return render(_PACKAGE, template, **values)


class _Ctx:
    """Collects constants, buffers and C blocks; scratch lifetimes are counted in operations (modules).

    ``ctypes`` holds the C type of every buffer a module reads (spike counts are narrow integers where the cap
    allows); ``binary`` the buffers that hold only 0 and 1 (a product by them is the weight itself)."""

    def __init__(self, record: bool = True) -> None:
        self.record = record
        self.keep: set[str] = set()  # record-key prefixes whose output a later step reads (a cut edge)
        self.constants: list[Constant] = []
        self.states: list[Buffer] = []
        self.scratch: dict[str, list[Any]] = {}  # name -> [count, first, last, ctype]
        self.ctypes: dict[str, str] = {"x": "float"}
        self.binary: set[str] = set()
        self.lines: list[str] = []
        self.op = 0
        self.count = 0

    def _fresh(self, base: str) -> str:
        self.count += 1
        return f"{base}{self.count}"

    def param(self, base: str, values: Any) -> Any:
        """``index -> C expression`` for a parameter array: a literal when every value is equal (no flash),
        else a constant array."""
        v = _f32(values)
        if v.size == 1 or np.all(v.view(np.uint32) == v.view(np.uint32)[0]):
            lit = c_literal(v[0], "float")
            return lambda idx: lit
        name = self._fresh(f"k_{base}_")
        self.constants.append(Constant(name, "float", v))
        return lambda idx: f"{name}[{idx}]"

    def array(self, base: str, values: Any) -> str:
        name = self._fresh(f"k_{base}_")
        self.constants.append(Constant(name, "float", _f32(values)))
        return name

    def output(self, key: str, count: int, ctype: str, binary: bool, needed: bool = False) -> str:
        """A neuron's spike output ``key``: a state buffer when recorded (``record=True``) or read at a later
        step (``needed``, or a cut edge reads it), else a scratch buffer of this step."""
        if self.record or needed or key.rsplit("/", 1)[0] + "/" in self.keep:
            return self.state(key, count, ctype, binary)
        return self.tmp(count, ctype, binary)

    def state(self, key: str, count: int, ctype: str = "float", binary: bool = False) -> str:
        name = buffer_name(key)
        self.states.append(Buffer(name, ctype, int(count), "state"))
        self.ctypes[name] = ctype
        if binary:
            self.binary.add(name)
        return name

    def tmp(self, count: int, ctype: str = "float", binary: bool = False) -> str:
        name = self._fresh("h")
        self.scratch[name] = [int(count), self.op, self.op, ctype]
        self.ctypes[name] = ctype
        if binary:
            self.binary.add(name)
        return name

    def events(self, src: str, n: int) -> dict[str, Any]:
        """The gather of ``src``'s non-zero indices (``events.c``) into an index buffer of this operation only,
        of the narrowest unsigned type that holds ``n - 1``; returns ``{"gather": C, "ev": buffer}``."""
        ev_t = "uint8_t" if n <= 2**8 else "uint16_t" if n <= 2**16 else "int32_t"
        ev = self.tmp(n, ev_t)
        self.use(src)
        return {"gather": _kernel("events.c", src=src, n=n, ev=ev, ev_t=ev_t, count="n_ev"), "ev": ev}

    def value(self, name: str, idx: str) -> str:
        """``name[idx]`` as a float expression (a cast where the buffer holds integer spike counts)."""
        return f"{name}[{idx}]" if self.ctypes.get(name, "float") == "float" else f"(float){name}[{idx}]"

    def use(self, name: str) -> str:
        if name in self.scratch:
            self.scratch[name][2] = max(self.scratch[name][2], self.op)
        return name

    def block(self, title: str, body: str) -> None:
        """One operation of the step: ``body`` in its own scope, titled."""
        self.lines.append(_kernel("block.c", title=title, body=body))
        self.op += 1


def _unsupported(module: Any, where: str) -> CodegenError:
    return CodegenError(
        f"module type {type(module).__name__} has no float32 C emitter (supported: {', '.join(SUPPORTED)})",
        value=type(module).__name__,
        limit="a supported module",
        where=where or "model",
        fix="build the network from the supported modules",
    )


#: The event-driven ``Linear`` from this many outputs on (fewer: the dense loop). See :func:`_linear_events`.
EVENT_MIN_OUT = 2


def _linear_events(n_in: int, n_out: int) -> bool:
    """Whether ``Linear(n_in, n_out)`` tests each input for zero (event-driven) rather than adding every row.

    The test of one input costs about as many Cortex-M4F instructions as the row of a one-output layer that
    it saves (measured: ``benchmarks/codegen_snn_mlir.py``), so below :data:`EVENT_MIN_OUT` outputs the dense
    loop is used; both give the same values bit for bit.

    Example:
        >>> _linear_events(1, 1), _linear_events(64, 1), _linear_events(1, 38)
        (False, False, True)
    """
    return n_out >= EVENT_MIN_OUT


# -- modules -------------------------------------------------------------------------------------
def _linear(m: Linear, ctx: _Ctx, src: str, title: str) -> str:
    n_in, n_out = m.n_in, m.n_out
    w = ctx.array("w", np.asarray(m.weight, np.float32))  # (n_in, n_out): each input's row contiguous
    out = ctx.tmp(n_out)
    ctx.use(src)
    # an all-zero bias adds nothing (the sum is never -0: x + 0 = x), so it is left out
    bias = "" if m.bias is None or not np.any(_f32(m.bias)) else ctx.param("b", m.bias)("j")
    events = _linear_events(n_in, n_out)
    binary = src in ctx.binary and events  # the dense form multiplies every input, 0 and 1 included
    load = "" if binary else f"const float xi = {ctx.value(src, 'i')};"
    code = _kernel(
        "linear.c", src=src, out=out, w=w, n_in=n_in, n_out=n_out, has_bias=bool(bias), bias=bias, load=load,
        term="wi[j]" if binary else "xi * wi[j]", events=events,
    )  # fmt: skip
    ctx.block(f"{title}: Linear {n_in} -> {n_out}", code)
    return out


def _lif(m: LIF, ctx: _Ctx, src: str, prefix: str, title: str) -> str:
    p = m.parameters()
    n, k = m.n_neurons, m.n_synapses
    beta = ctx.param("beta", p.beta)
    alpha, thr, bias = ctx.param("alpha", p.alpha), ctx.param("thr", p.threshold), ctx.param("bias", p.bias)
    isyn = ctx.state(prefix + "isyn", n * k)
    vmem = ctx.state(prefix + "vmem", n)
    spk_t = _spike_ctype(p.max_spikes)
    spk = ctx.output(prefix + "spikes", n, spk_t, p.max_spikes == 1, needed=p.w_rec is not None)
    ctx.use(src)
    # (N*k, N): each channel's row of the recurrent weights contiguous
    wrec = "" if p.w_rec is None else ctx.array("wrec", np.asarray(p.w_rec, np.float32).T)
    events = ctx.events(spk, n) if wrec else {"gather": "", "ev": ""}
    code = _kernel(
        "lif.c",
        src=src,
        isyn=isyn,
        vmem=vmem,
        spikes=spk,
        spk_t=spk_t,
        n=n,
        k=k,
        nk=n * k,
        recurrent=bool(wrec),
        wrec=wrec,
        **events,
        rec_term="wc[m]" if spk in ctx.binary else f"{ctx.value(spk, 'm')} * wc[m]",
        beta=beta("c"),
        alpha=alpha("n"),
        bias=bias("n"),
        thr=thr("n"),
        cap=c_literal(p.max_spikes, "float"),
        syn_sum=" + ".join(f"{isyn}[n * {k}{f' + {j}' if j else ''}]" for j in range(k)),
    )
    ctx.block(f"{title}: LIF N={n} k={k}{' recurrent' if wrec else ''} cap={p.max_spikes:g}", code)
    return spk


def _nir_neuron(m: Any, ctx: _Ctx, src: str, prefix: str, title: str) -> str:
    p = m.parameters()
    n = m.size_in
    ctx.use(src)
    values: dict[str, Any] = {"src": src, "n": n, "synapse": p.a_syn is not None, "drive": f"{src}[n]"}
    if p.a_syn is not None:
        values["isyn"] = ctx.state(prefix + "isyn", n)
        values["a_syn"], values["g_syn"] = ctx.param("asyn", p.a_syn)("n"), ctx.param("gsyn", p.g_syn)("n")
        values["drive"] = f"{values['isyn']}[n]"
    values["vmem"] = ctx.state(prefix + "vmem_reset", n)
    for key, base, arr in (("a_mem", "amem", p.a_mem), ("g_mem", "gmem", p.g_mem), ("c_mem", "cmem", p.c_mem)):
        values[key] = ctx.param(base, arr)("n")
    values["c_mem_zero"] = values["c_mem"] == "0.0f"  # every c_mem +0 (bits 0): the literal of param()
    values["spiking"] = p.threshold is not None
    out = values["vmem"]
    if p.threshold is not None:
        out = values["spikes"] = ctx.output(prefix + "spikes", n, "uint8_t", True)
        values["thr"] = ctx.param("thr", p.threshold)("n")
        values.update(reset_subtract=p.reset == "subtract", reset_zero=p.reset == "zero")
        values["reset_to_value"] = not (values["reset_subtract"] or values["reset_zero"])
        if values["reset_to_value"]:
            values["v_reset"] = ctx.param("vreset", p.v_reset)("n")
            values["fire_zero"] = bool(np.all(_f32(p.threshold) >= 0) and not np.any(_f32(p.v_reset)))
    reset = "" if p.threshold is None else f" reset={p.reset}"
    ctx.block(f"{title}: {type(m).__name__} N={n}{reset}", _kernel("nir_neuron.c", **values))
    return out


def _threshold(m: Threshold, ctx: _Ctx, src: str, title: str) -> str:
    n = m.size_in
    thr = ctx.param("thr", m.threshold)
    out = ctx.tmp(n, binary=True)
    ctx.use(src)
    ctx.block(f"{title}: Threshold N={n}", _kernel("threshold.c", n=n, src=src, out=out, thr=thr("n")))
    return out


def _scale(m: Scale, ctx: _Ctx, src: str, title: str) -> str:
    n = m.size_in
    s = ctx.param("scale", m.scale)
    out = ctx.tmp(n)
    ctx.use(src)
    ctx.block(f"{title}: Scale N={n}", _kernel("scale.c", n=n, src=src, out=out, scale=s("n")))
    return out


def _delay(m: Delay, ctx: _Ctx, src: str, prefix: str, title: str) -> str:
    n, steps = m.size_in, [int(d) for d in m.steps]
    depth = max(steps)
    if depth == 0:
        return src
    ring = ctx.state(prefix + "delay_ring", depth * n)
    pos = ctx.state(prefix + "delay_pos", 1, "int32_t")
    if len(set(steps)) == 1:
        d = str(steps[0])
    else:
        dname = ctx._fresh("k_delay_")
        ctx.constants.append(Constant(dname, "int32_t", np.asarray(steps, np.int32)))
        d = f"{dname}[n]"
    out = ctx.tmp(n)
    ctx.use(src)
    code = _kernel("delay.c", n=n, src=src, out=out, ring=ring, pos=pos, depth=depth, d=d)
    ctx.block(f"{title}: Delay N={n} max {depth} steps", code)
    return out


def _conv(m: Conv1d | Conv2d, ctx: _Ctx, src: str, title: str) -> str:
    """Convolution as direct loops; a 1-D convolution is a 2-D one of height 1."""
    w = np.asarray(m.weight, np.float32)
    if w.ndim == 3:
        w = w[:, :, None, :]
    pads = [(0, 0)] * (2 - len(m.pads)) + [tuple(p) for p in m.pads]
    stride = (1,) * (2 - len(m.stride)) + tuple(m.stride)
    dil = (1,) * (2 - len(m.dilation)) + tuple(m.dilation)
    if len(m.input_shape) == 2:
        (c_in, w_in), h_in, h_out, w_out = m.input_shape, 1, 1, m.output_shape[1]
    else:
        (c_in, h_in, w_in), (_, h_out, w_out) = m.input_shape, m.output_shape
    c_out, cpg, kh, kw = w.shape
    wt = ctx.array("conv", w.transpose(1, 2, 3, 0))  # [cpg][kh][kw][c_out]: each tap's output channels together
    out = ctx.tmp(c_out * h_out * w_out)
    ctx.use(src)
    bias = "" if m.bias is None else ctx.param("cb", m.bias)("o")
    binary = src in ctx.binary
    code = _kernel(
        "conv.c",
        src=src,
        out=out,
        w=wt,
        src_t=ctx.ctypes.get(src, "float"),
        load="" if binary else "const float xin = (float)*xp;",
        term="wv[o]" if binary else "xin * wv[o]",
        c_in=c_in,
        h_in=h_in,
        w_in=w_in,
        c_out=c_out,
        h_out=h_out,
        w_out=w_out,
        cpg=cpg,
        opg=c_out // m.groups,
        kh=kh,
        kw=kw,
        stride_h=stride[0],
        stride_w=stride[1],
        dil_h=dil[0],
        dil_w=dil[1],
        pad_h=pads[0][0],
        pad_w=pads[1][0],
        has_bias=bool(bias),
        bias=bias,
    )
    ctx.block(f"{title}: {type(m).__name__} ({c_in}, {h_in}, {w_in}) -> ({c_out}, {h_out}, {w_out})", code)
    return out


def _pool(m: SumPool2d, ctx: _Ctx, src: str, title: str) -> str:
    """Sum (or average: the sum divided by kh kw, padding counted) over each window, zero padding."""
    c, h_in, w_in = m.input_shape
    _, h_out, w_out = m.output_shape
    (kh, kw), (sh, sw), (ph, pw) = m.kernel_size, m.stride, m.padding
    out = ctx.tmp(c * h_out * w_out)
    ctx.use(src)
    average = isinstance(m, AvgPool2d)
    code = _kernel(
        "pool.c",
        src=src,
        out=out,
        c=c,
        h_in=h_in,
        w_in=w_in,
        h_out=h_out,
        w_out=w_out,
        kh=kh,
        kw=kw,
        stride_h=sh,
        stride_w=sw,
        pad_h=ph,
        pad_w=pw,
        average=average,
        area=c_literal(float(kh * kw), "float") if average else "",
    )
    ctx.block(f"{title}: {type(m).__name__} ({c}, {h_in}, {w_in}) -> ({c}, {h_out}, {w_out})", code)
    return out


def _add(ctx: _Ctx, srcs: list[str], n: int, title: str, dying: Iterable[str] = ()) -> str:
    """``((s0 + s1) + s2) + ...`` element-wise (pondlib's left-to-right sum). The sum goes in place into the first
    float scratch input of ``dying`` (read by nothing after this sum; each element is read before it is written),
    else into a new scratch buffer."""
    if len(srcs) == 1:
        return srcs[0]
    reuse = [s for s in srcs if s in dying and s in ctx.scratch and ctx.ctypes[s] == "float"]
    out = reuse[0] if reuse else ctx.tmp(n)
    for s in srcs:
        ctx.use(s)
    ctx.use(out)
    ctx.block(title, _kernel("add.c", n=n, out=out, terms=" + ".join(ctx.value(s, "i") for s in srcs)))
    return out


def _sequential(m: Sequential, ctx: _Ctx, src: str, prefix: str) -> str:
    for i, child in enumerate(m.layers):
        src = _module(child, ctx, src, f"{prefix}{i}_{type(child).__name__}/")
    return src


def _state_output(m: Any, prefix: str) -> tuple[str, str, bool] | None:
    """``(buffer, C type, binary)`` of the state buffer that holds ``m``'s output from one step to the next
    (a neuron's spikes, or the membrane of one without a threshold), or None when its output is scratch."""
    if isinstance(m, LIF):
        return buffer_name(prefix + "spikes"), _spike_ctype(m.max_spikes_per_dt), m.max_spikes_per_dt == 1
    if isinstance(m, (NIRLIF, CubaLIF, LI, CubaLI, IF, Integrator)):
        if getattr(m, "v_threshold", None) is not None:
            return buffer_name(prefix + "spikes"), "uint8_t", True
        return buffer_name(prefix + "vmem_reset"), "float", False
    return None


def _previous_outputs(m: GraphNetwork, ctx: _Ctx, prefix: str) -> tuple[dict[str, str], list[str]]:
    """The buffer each edge cut in a cycle reads (the source's output of the previous step), and the sources
    whose output must be copied into a ``<node>/prev`` state at the end of the step. No copy is needed when the
    source's output is a state buffer and every node that reads it through a cut edge runs before the source
    (or is the source: its inputs are summed before it runs): the buffer still holds last step's output."""
    pos = {node: i for i, node in enumerate(m.order)}
    prev: dict[str, str] = {}
    copies: list[str] = []
    for a in m.delayed_nodes:
        readers = [node for node, srcs in zip(m.order, m.sources) if (a, True) in [tuple(s) for s in srcs]]
        kept = _state_output(m.modules[a], f"{prefix}{a}/")
        if kept is not None and all(pos[r] <= pos[a] for r in readers):
            ctx.keep.add(f"{prefix}{a}/")
            prev[a] = kept[0]
            ctx.ctypes[kept[0]] = kept[1]
            if kept[2]:
                ctx.binary.add(kept[0])
        else:
            prev[a] = ctx.state(f"{prefix}{a}/prev", m.modules[a].size_out)
            copies.append(a)
    return prev, copies


def _graph(m: GraphNetwork, ctx: _Ctx, src: str, prefix: str) -> str:
    vals = {"input": src}
    prev, copies = _previous_outputs(m, ctx, prefix)
    # how often each node's output is read this step (a scratch output read once may take its sum in place)
    reads = Counter(a for srcs in m.sources for a, delayed in srcs if not delayed)
    reads.update(list(m.out_sources) + copies)
    for node, srcs in zip(m.order, m.sources):
        ins = [prev[a] if delayed else vals[a] for a, delayed in srcs]
        shared = Counter(vals.values())  # a pass-through node (Flatten) hands on its input's buffer
        dying = [vals[a] for a, delayed in srcs if not delayed and reads[a] == 1 and shared[vals[a]] == 1]
        inp = _add(ctx, ins, m.modules[node].size_in, f"{prefix}{node}: sum of {len(ins)} inputs", dying)
        vals[node] = _module(m.modules[node], ctx, inp, f"{prefix}{node}/")
    out = _add(ctx, [vals[a] for a in m.out_sources], m.size_out, f"{prefix}output: sum of inputs")
    if copies:
        body = "\n".join(_kernel("copy.c", n=m.modules[a].size_out, dst=prev[a], src=ctx.use(vals[a])) for a in copies)
        ctx.block(f"{prefix}: outputs read by the next step", body)
    return out


def _module(m: Any, ctx: _Ctx, src: str, prefix: str) -> str:
    """Emit ``m`` reading buffer ``src``; return the buffer holding its output. ``prefix`` is the record key
    prefix (``"1_LIF/"``)."""
    title = prefix.rstrip("/") or type(m).__name__
    if isinstance(m, Sequential):
        return _sequential(m, ctx, src, prefix)
    if isinstance(m, Residual):
        y = _sequential(m.block, ctx, src, prefix)
        return _add(ctx, [y, src], m.size_out, f"{title}: residual sum", dying=[y] if y != src else [])
    if isinstance(m, GraphNetwork):
        return _graph(m, ctx, src, prefix)
    if isinstance(m, Linear):
        return _linear(m, ctx, src, title)
    if isinstance(m, LIF):
        return _lif(m, ctx, src, prefix, title)
    if isinstance(m, (NIRLIF, CubaLIF, LI, CubaLI, IF, Integrator)):
        return _nir_neuron(m, ctx, src, prefix, title)
    if isinstance(m, Threshold):
        return _threshold(m, ctx, src, title)
    if isinstance(m, Scale):
        return _scale(m, ctx, src, title)
    if isinstance(m, Flatten):
        return src
    if isinstance(m, Delay):
        return _delay(m, ctx, src, prefix, title)
    if isinstance(m, (Conv1d, Conv2d)):
        return _conv(m, ctx, src, title)
    if isinstance(m, SumPool2d):
        return _pool(m, ctx, src, title)
    raise _unsupported(m, prefix.rstrip("/"))


def emit(model: Any, *, name: str = "net", record: bool = True, **options: Any) -> Program:
    """The float32 C program of a ``pondlib.nn`` network (see the module docstring).

    Args:
        model: a module of :data:`SUPPORTED` (nested freely).
        name: the C prefix of every symbol and the file stem.
        record: keep every neuron's spikes as a recorded state buffer (the harness writes them after each
            step). ``False`` (a firmware image): spikes are state only where a later step reads them (a
            recurrent ``LIF``, an edge cut in a cycle), else values of the step; membranes, currents and
            delay lines stay recorded. The outputs are the same bit for bit.

    Raises:
        CodegenError: an unsupported module (naming its type and listing :data:`SUPPORTED`), a bad ``name``,
            a ``record`` that is not a bool, an unknown option, or a model that is not a pondlib.nn module.
    """
    if options:
        raise CodegenError("float32 option", value=sorted(options), limit="the one option record=True/False",
                           fix="drop the option")  # fmt: skip
    record = check_bool(record, "record", where="float32 C", error=CodegenError)
    name = c_identifier(name, "program name")
    if not hasattr(model, "size_in") or not hasattr(model, "size_out"):
        raise _unsupported(model, "model")
    ctx = _Ctx(record)
    out = _module(model, ctx, "x", "")
    n_in, n_out = int(model.size_in), int(model.size_out)
    ctx.use(out)
    ctx.block("network output", _kernel("copy.c", n=n_out, dst="y", src=out))
    # one-value temporaries are locals of the step (registers once compiled), the others share the arena
    local = {b: t for b, (c, _, _, t) in ctx.scratch.items() if c <= LOCAL_MAX}
    buffers = ctx.states + [
        Buffer(b, t, c, "scratch", (f, last)) for b, (c, f, last, t) in ctx.scratch.items() if b not in local
    ]
    decls = "".join(_kernel("local.c", ctype=t, name=b, count=ctx.scratch[b][0]) + "\n" for b, t in local.items())
    notes = (
        "float32 numerics: IEEE single precision, each operation rounded separately (-ffp-contract=off), "
        "in the order of pondlib's float model (see pondlib.codegen.float32).",
        "Dot products (Linear, recurrent weights) add inputs in ascending order; XLA may group them "
        "differently, so values can differ from pondlib by a few float32 roundings.",
        "Decays and gains are pondlib's own float32 values, embedded as exact hex constants: no libm.",
    ) + (() if record else ("record=False: a neuron's spikes are a state only where a later step reads them.",))
    return build_program(
        name,
        "float32",
        constants=ctx.constants,
        buffers=buffers,
        step_body=decls + "\n".join(ctx.lines),
        helpers=_kernel("rolled.c"),
        n_in=n_in,
        in_ctype="float",
        n_out=n_out,
        out_ctype="float",
        notes=notes,
        description=f"The float model of a pondlib {type(model).__name__} ({n_in} inputs, {n_out} outputs) "
        "as plain C11 in IEEE float32.",
        compact_arena=True,
    )
