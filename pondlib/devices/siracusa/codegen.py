r"""Siracusa numerics as C: int8 GEMM / convolution, RequantShift and the integer LIF of ``SiracusaSim``.

:func:`emit` turns a :class:`~pondlib.devices.siracusa.config.SiracusaConfig` (what
``config_from_specification`` returns, or a mapper ``Specification``) into a
:class:`~pondlib.cprogram.program.Program` whose step equals
:class:`~pondlib.devices.siracusa.sim.SiracusaSim` bit for bit: outputs and every recorded value. Each kernel
(GEMM, convolution, RequantShift, LIF, the wrapping helpers) is a small C template in ``templates/`` beside this
module (:mod:`pondlib.cprogram.templating`); Python computes only the values.

**Input and output.** One step takes the *already quantized* integer input ``x[N_in]`` (quantize floats
with :func:`~pondlib.devices.siracusa.sim.quantize_input` first, as for the simulator), in the narrowest
C type that holds ``config.input_range`` (``int8_t`` by default, ``uint8_t`` for unsigned 8-bit input, up to
``int32_t`` / ``uint32_t``). It writes the last layer's output ``y[N_out]``: requantized values (the
narrowest type of the output range), raw ``int32_t`` accumulators, or ``uint8_t`` spikes (0/1).

**Equations** (per step; ``W32`` is two's-complement wrap-around to int32, ``>>`` a floor shift):

===============  ===========================================================================================
QGemm            ``acc[o] = W32(bias[o] + sum_k x[k] w[k, o])``; weight (K, O) int8 stored transposed (O, K)
QConv2d          the same over the NHWC window, zero padding, groups; weight stored (O, kh, kw, C/groups)
RequantShift     ``t = W32(W32(W32(x + in_offset) mul[c]) + add[c])``; ``t = W32(t + 2^(s-1))`` if ``s > 0``;
                 ``y = clamp(t >> s, lo, hi)`` (round half up, saturation)
QLIF             ``t = W32(W32(v beta) + W32(I in_mul))``, ``+ add``, ``+ 2^(s-1)``; ``v = clamp(t >> s)`` to the
                 state width; ``z = v >= thr`` (or ``>``); where ``z``: ``v = W32(v - thr)`` or ``v = 0``
===============  ===========================================================================================

Units: every value is an integer count of its layer's quantization step (the scales live in the mapper's
reports, never in the C); the LIF state is in the same units as its threshold.

**Defined C only.** Every wrapping int32 operation is computed in ``uint32_t`` (``1u * a * b`` so that no
operand is ever promoted to signed ``int``) and converted back to ``int32_t`` by ``srq_i32`` without any
implementation-defined conversion; the arithmetic right shift of a negative value is written as
``-1 - ((-1 - t) >> s)`` (floor division, exact for every int32). No signed operation can overflow, so the
code needs no ``-fwrapv``. A GEMM whose exact accumulator provably stays within int32 over the value range
of its input accumulates in plain ``int32_t``; otherwise in ``uint32_t`` modulo 2^32 (equal to the
simulator's exact int64 sum wrapped once). Nothing is wider than 32 bits except LIF thresholds outside
int32 in unvalidated configurations (an ``int64_t`` comparison): no intermediate can exceed int64.

**C layout.** Constants ``k<i>_<what>`` (layer ``i``: ``w``, ``b``, ``mul``, ``add``, ``beta``, ``inm``, ``ladd``,
``thr``, ``thru``) in flash; parameters equal over all channels are inlined as literals. Each LIF state is a
``state`` buffer named after the simulator's record key (``"<layer>/v"`` -> ``<layer>_v``, see
:func:`record_names`). With ``record=False`` (default: the deployable program) the activations between
layers are ``scratch`` buffers ``h<i>`` live over layers ``(i, i + 1)``, so the arena shares them, and the
last layer writes ``y`` directly. With ``record=True`` every record key of the simulator is a state buffer
(``<layer>_acc``, ``<layer>_out``, ``<lif>_v``, ``<lif>_spikes``; keys whose values coincide, such as a LIF's
``out`` and ``spikes``, share one buffer), so that :func:`~pondlib.codegen.toolchain.run_host` returns
them all for a direct comparison with ``SiracusaSim.evolve(..., record=True)``.

**Event-driven QGemm** (option ``layout``, :data:`LAYOUTS`). In a spiking network the indices of the non-zero
inputs of a QGemm are gathered once per step into a scratch list ``e<i>`` and only their weights are summed
(with multi-valued inputs, a step denser than half runs the dense loop); a sparse weight is stored as
compressed rows (``k<i>_cnt``, ``k<i>_post``, ``k<i>_wv``, accumulated in a scratch ``a<i>``) where that takes
less flash. Every layout gives the same values: the sums are integer (exact or modulo 2^32), so their order
does not matter.

Not modelled (noted in the program): the chip's tiling, DMA and NPU placement (``npu_layers``) change
where and how fast a layer runs, not its values; ``rows`` is the simulator's batch axis (one sample).

Example (the GEMM + LIF of the simulator's docstring, as C on the host):

    >>> import numpy as np, tempfile
    >>> from pondlib.codegen import compile_host, run_host
    >>> from pondlib.devices.siracusa import QGemm, QLIF, SiracusaConfig
    >>> cfg = SiracusaConfig(n_input=1, layers=(
    ...     QGemm("fc", weight=[[10]]),
    ...     QLIF("lif", beta_mul=[2], in_mul=[4], add=[0], shift=2, threshold=[25])))
    >>> prog = emit(cfg, name="tiny", record=True)
    >>> prog.io.in_ctype, prog.io.out_ctype, [s.name for s in prog.io.states]
    ('int8_t', 'uint8_t', ['fc_acc', 'lif_v', 'lif_spikes'])
    >>> record_names(cfg, record=True)["lif/v"]
    'lif_v'
    >>> with tempfile.TemporaryDirectory() as d:
    ...     y, rec = run_host(compile_host(prog, d), prog, np.array([[[1], [1], [1], [0]]]), record=True)
    >>> rec["lif_v"][0, :, 0].tolist(), y[0, :, 0].tolist()
    ([10, 15, 18, 9], [0, 0, 0, 0])
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from pondlib.cprogram.program import CTYPES, Buffer, Constant, Program, build_program, c_identifier, c_literal
from pondlib.cprogram.templating import render
from pondlib.devices.siracusa.config import SiracusaConfig, check_constraints
from pondlib.devices.siracusa.sim import SAFETY_RULES
from pondlib.devices.siracusa.specification import QLIF, QConv2d, QGemm, QRequant, Specification
from pondlib.errors import CodegenError, ConstraintError
from pondlib.validate import check_bool, check_choice

__all__ = ["emit", "record_names", "OPTIONS", "LAYOUTS"]

#: Options of :func:`emit` and their defaults.
OPTIONS = {"validate": True, "record": False, "layout": "auto"}

#: How each QGemm stores its weights and runs its loops (option ``layout``; every choice gives the same values):
#: ``dense`` (dense int8 rows, every input visited: the kernel before event-driven loops), ``events`` (dense
#: rows, only the non-zero inputs gathered and visited), ``sparse`` (compressed rows, non-zero inputs and
#: non-zero weights only), ``auto`` (``sparse`` where its flash plus its accumulators' RAM is less than dense
#: rows' flash, else ``events`` in a spiking network and ``dense`` in an integer DNN).
LAYOUTS = ("auto", "dense", "events", "sparse")

_I32_LO, _I32_HI = -(2**31), 2**31 - 1
#: layout "events" with multi-valued inputs (not 0/1): a step with more than this many eighths of its inputs
#: non-zero runs the dense loop instead (digits network, first layer, 16 steps, M4F / RV32 instructions per
#: step: events only 8427 / 9412 at 20 % density, 11620 / 14580 at 50 %, 17227 / 25572 at 100 %; dense only
#: 11029 / 13954, 11376 / 14442, 11941 / 15354: the crossover is near half density). With 0/1 inputs the event
#: loop needs no multiplication and is never slower.
_DENSE_EIGHTHS = 4
_WHERE = "pondlib.devices.siracusa.codegen.emit"

_PACKAGE = __package__  # the kernels of this module live in pondlib/devices/siracusa/templates/
_HELPER_NAMES = ("mul", "i32", "asr")


def _kernel(template: str, **values: Any) -> str:
    """One kernel's C: the template ``template`` of this chip filled with ``values``."""
    return render(_PACKAGE, template, **values)


def _ctype(lo: int, hi: int) -> str:
    """The narrowest C integer type holding [lo, hi]."""
    for ctype, (tlo, thi) in (
        ("uint8_t", (0, 255)),
        ("int8_t", (-128, 127)),
        ("int16_t", (-(2**15), 2**15 - 1)),
        ("uint16_t", (0, 2**16 - 1)),
        ("int32_t", (_I32_LO, _I32_HI)),
        ("uint32_t", (0, 2**32 - 1)),
    ):
        if tlo <= lo and hi <= thi:
            return ctype
    raise CodegenError("value range", value=(lo, hi), limit="within int32 or uint32", where=_WHERE)


def _sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _layer_prefixes(config: SiracusaConfig) -> list[str]:
    """C prefix of each layer's state buffers: its name when that is a clean identifier, else ``l<i>_<name>``."""
    out: list[str] = []
    for i, layer in enumerate(config.layers):
        clean = _sanitize(layer.name)
        ok = clean == layer.name and re.match(r"^[A-Za-z_]", clean) and not re.match(r"^(k|h)\d+$", clean)
        out.append(clean if ok and clean not in out else f"l{i}_{clean}")
    return out


def _record_layout(config: SiracusaConfig, record: bool) -> list[dict[str, str]]:
    """Per layer: simulator record key suffix -> C state buffer name (only the LIF state when not recording)."""
    layout = []
    for layer, prefix in zip(config.layers, _layer_prefixes(config)):
        keys: dict[str, str] = {}
        if isinstance(layer, QLIF):
            keys["v"] = f"{prefix}_v"
            if record:
                keys["spikes"] = keys["out"] = f"{prefix}_spikes"
        elif record and isinstance(layer, (QGemm, QConv2d)):
            keys["acc"] = f"{prefix}_acc"
            keys["out"] = keys["acc"] if layer.requant is None else f"{prefix}_out"
        elif record:
            keys["out"] = f"{prefix}_out"
        layout.append(keys)
    return layout


def _config(model: Any) -> SiracusaConfig:
    if isinstance(model, Specification):
        model = model.config
    if not isinstance(model, SiracusaConfig):
        raise CodegenError(
            "model",
            value=f"a {type(model).__name__}",
            limit="a SiracusaConfig (config_from_specification) or a siracusa Specification",
            where=_WHERE,
            fix="map the network with pondlib.devices.siracusa.mapper and pass spec.config",
        )
    return model


def record_names(model: Any, *, record: bool = True) -> dict[str, str]:
    """Simulator record key (``"<layer>/<what>"``) -> the C state buffer holding it in :func:`emit`'s program.

    Example:
        >>> from pondlib.devices.siracusa import QGemm, RequantShift, SiracusaConfig
        >>> cfg = SiracusaConfig(n_input=2, layers=(QGemm("fc 1", [[1], [2]], requant=RequantShift(mul=1)),))
        >>> record_names(cfg)
        {'fc 1/acc': 'l0_fc_1_acc', 'fc 1/out': 'l0_fc_1_out'}
    """
    config = _config(model)
    record = check_bool(record, "record", where="record_names", error=CodegenError)
    return {
        f"{layer.name}/{what}": cname
        for layer, keys in zip(config.layers, _record_layout(config, record))
        for what, cname in keys.items()
    }


class _Emitter:
    """Collects the flash constants, the helpers and the per-layer scratch buffers the kernels need while they are
    rendered; ``layout``: the QGemm layout (:data:`LAYOUTS`)."""

    def __init__(self, layout: str = "dense") -> None:
        self.constants: list[Constant] = []
        self.helpers: set[str] = set()
        self.buffers: list[Buffer] = []
        self.layout = layout
        self.snn = False  # a spiking network (a QLIF among the layers): auto takes event-driven loops
        self.chosen: list[str] = []  # the layout each QGemm got, in layer order

    def param(self, name: str, values: Any, n: int, index: str, kind: str) -> str:
        """C expression of a per-channel parameter broadcast over ``n`` channels (``kind``: ``u32`` modulo
        2^32, or a C type): a literal when all channels agree, else a flash constant indexed by ``index``."""
        arr = np.asarray(values, dtype=object).reshape(-1)
        full = [int(arr[i % arr.size]) for i in range(n)]
        if kind == "u32":
            full = [v % 2**32 for v in full]
            ctype = "uint32_t"
        else:
            ctype = kind
        if all(v == full[0] for v in full):
            return c_literal(full[0], ctype)
        self.constants.append(Constant(name, ctype, np.asarray(full, dtype=np.int64)))
        return f"{name}[{index}]"

    def requant(self, i: int, rq: Any, n: int, index: str, src: str, lo_hi: tuple[int, int]) -> str:
        """C statements computing ``int32_t r`` = RequantShift of the int32 value ``src`` (channel ``index``)."""
        self.helpers.update(("mul", "i32"))
        mul = self.param(f"k{i}_mul", rq.mul, n, index, "u32")
        add = self.param(f"k{i}_add", rq.add, n, index, "u32")
        return _kernel(
            "requant.c",
            value=src,
            has_offset=rq.in_offset != 0,
            offset=c_literal(int(rq.in_offset) % 2**32, "uint32_t"),
            mul=mul,
            add=add,
            shift_clamp=self.shift_clamp(rq.shift, lo_hi),
        )

    def shift_clamp(self, s: int, lo_hi: tuple[int, int]) -> str:
        """``int32_t r`` from the uint32 ``t``: round half up, floor shift by ``s``, clamp to ``lo_hi`` (in int32)."""
        if s > 0:
            self.helpers.add("asr")
        lo, hi = max(lo_hi[0], _I32_LO), min(lo_hi[1], _I32_HI)
        return _kernel(
            "shift_clamp.c",
            rounding=s > 0,
            shift=s,
            half=c_literal(1 << (s - 1), "uint32_t") if s > 0 else "",
            lo=c_literal(lo, "int32_t"),
            hi=c_literal(hi, "int32_t"),
            clamp_lo=lo > _I32_LO,
            clamp_hi=hi < _I32_HI,
        )

    def accumulate(self, i: int, wcols: np.ndarray, bias: Any, x_lo_hi: tuple[int, int]) -> tuple[bool, str]:
        """Bias literal/array and whether the exact accumulator stays within int32 (per output column sums
        of |w| times the largest |x|, plus |bias|)."""
        xmax = max(abs(x_lo_hi[0]), abs(x_lo_hi[1]))
        b = np.zeros(wcols.shape[0], dtype=object) if bias is None else np.asarray(bias, dtype=object)
        bound = max(
            (int(np.abs(wcols[o].astype(object)).sum()) * xmax + abs(int(b[o])) for o in range(wcols.shape[0])),
            default=0,
        )
        exact = bound <= _I32_HI
        if exact:
            return True, self.param(f"k{i}_b", b, wcols.shape[0], "o", "int32_t")
        self.helpers.update(("mul", "i32"))
        return False, self.param(f"k{i}_b", b, wcols.shape[0], "o", "u32")

    def helper_code(self) -> str:
        """The helpers some kernel used, in their order of definition (none: empty)."""
        return _kernel("helpers.c", **{k: k in self.helpers for k in _HELPER_NAMES})


def emit(model: Any, *, name: str = "net", **options: Any) -> Program:
    """C for a Siracusa deployment, equal to ``SiracusaSim`` bit for bit (see the module docstring).

    Args:
        model: a :class:`~pondlib.devices.siracusa.config.SiracusaConfig` or a mapper ``Specification``.
        name: C prefix and file stem.
        validate: (option, default True) every design rule of ``check_constraints`` must hold, as for
            ``SiracusaSim(config)``; ``False`` checks only the simulator's ``SAFETY_RULES`` (int8 weights,
            int32 parameters, shift and widths): int32 overflow then wraps exactly as in
            ``SiracusaSim(config, validate=False)``.
        record: (option, default False) every record key of the simulator as a state buffer
            (:func:`record_names`); else only the LIF states, and the activations share a scratch arena.
        layout: (option, default ``"auto"``) how each QGemm stores its weights and runs (:data:`LAYOUTS`; the
            values are the same for every choice). ``events``: per step the indices of the non-zero inputs
            (spikes, events, non-zero activations) are gathered once into a scratch list ``e<i>``, then each
            output sums only those inputs' weights; with multi-valued (not 0/1) inputs, a step where more than
            half of the inputs are non-zero runs the dense loop instead (chosen per step from the gathered
            count; the crossover measured on both cores). ``sparse``: compressed rows, per input ``k`` the count
            of its non-zero weights (``k<i>_cnt``) and their output indices (``k<i>_post``) and values
            (``k<i>_wv``), the counts and indices in the smallest unsigned types that hold them, accumulated
            into a scratch ``a<i>`` for the non-zero inputs only. ``auto`` takes ``sparse`` for a layer exactly
            when that takes fewer bytes, flash plus the accumulators' RAM: ``K c + nnz (p + 1) + 4 O < K O``
            (``c``, ``p``: the bytes of a count and of an output index, 1 up to 255 / 256 outputs, else 2),
            i.e. below a density of about ``1/2 - 2/K`` with at most 256 outputs; else ``events`` in a spiking
            network (one with a QLIF), which visits no more weights than ``dense``, and ``dense`` in an
            integer DNN (no QLIF: dense activations). Instructions per step at 1 % to 50 % input density:
            ``benchmarks/codegen_events.py``.

    Raises:
        CodegenError: not a Siracusa configuration, unknown or malformed options, a bad name.
        ConstraintError: the configuration breaks design rules (every violation listed).
    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise CodegenError(
            "options", value=unknown, limit=f"options of the siracusa numerics: {sorted(OPTIONS)}", where=_WHERE
        )
    opts = {**OPTIONS, **options}
    validate = check_bool(opts["validate"], "validate", where=_WHERE, error=CodegenError)
    record = check_bool(opts["record"], "record", where=_WHERE, error=CodegenError)
    layout = check_choice(opts["layout"], "layout", LAYOUTS, where=_WHERE, error=CodegenError)
    name = c_identifier(name, "program name")
    config = _config(model)
    found = check_constraints(config)
    if not validate:
        found = [v for v in found if v.rule in SAFETY_RULES]
    if found:
        raise ConstraintError(found, device="siracusa")
    return _emit(config, name, record, layout)


def _out_range(layer: Any) -> tuple[int, int]:
    """The value range of a layer's output: spikes, requantized values (within int32) or raw int32 sums."""
    if isinstance(layer, QLIF):
        return (0, 1)
    if isinstance(layer, QRequant) or layer.requant is not None:
        lo, hi = layer.requant.out_range
        return (max(lo, _I32_LO), min(hi, _I32_HI))
    return (_I32_LO, _I32_HI)


def _layer_buffers(i: int, layer: Any, keys: dict[str, str], last: bool, buffers: list[Buffer]) -> tuple[str, str]:
    """Append the buffers of layer ``i`` (its LIF state, output, accumulator record) to ``buffers`` in record
    order; return where its output goes and the LIF state's C type (``""`` for other layers)."""
    out_type = _ctype(*_out_range(layer))
    vtype = ""
    if isinstance(layer, QLIF):
        vtype = _lif_state_type(layer)
        buffers.append(Buffer(keys["v"], vtype, layer.n, "state"))
    if "out" in keys:  # a recorded output (a LIF's spikes share the buffer of its spikes key)
        dst = keys["out"]
        if dst not in {b.name for b in buffers}:
            buffers.append(Buffer(dst, out_type, layer.n_out, "state"))
    elif last:
        dst = "y"
    else:  # live from this layer to the next: the arena shares it with every other second activation
        dst = f"h{i}"
        buffers.append(Buffer(dst, out_type, layer.n_out, "scratch", (i, i + 1)))
    acc_buf = keys.get("acc")
    if acc_buf is not None and acc_buf != dst:
        buffers.append(Buffer(acc_buf, "int32_t", layer.n_out, "state"))
    return dst, vtype


def _layer_code(
    em: _Emitter, i: int, layer: Any, keys: dict[str, str], src: str, src_range: tuple, dst: str, vtype: str
) -> str:
    """The C of layer ``i`` reading ``src`` (values in ``src_range``) and writing ``dst``."""
    acc_buf = keys.get("acc")
    if isinstance(layer, QGemm):
        body = _gemm(em, i, layer, src, src_range, dst, acc_buf)
    elif isinstance(layer, QConv2d):
        body = _conv(em, i, layer, src, src_range, dst, acc_buf)
    elif isinstance(layer, QRequant):
        out_range = _out_range(layer)
        body = _kernel(
            "requant_layer.c",
            n=layer.n,
            src=src,
            dst=dst,
            out_type=_ctype(*out_range),
            requant=em.requant(i, layer.requant, layer.n, "n", f"{src}[n]", out_range),
        )
    else:
        body = _lif(em, i, layer, src, dst, keys["v"], vtype)
    return _kernel("layer.c", i=i, kind=type(layer).__name__, label=repr(layer.name), body=body)


def _emit(config: SiracusaConfig, name: str, record: bool, layout: str) -> Program:
    em = _Emitter(layout)
    em.snn = any(isinstance(layer, QLIF) for layer in config.layers)
    buffers: list[Buffer] = []
    body: list[str] = []
    in_lo, in_hi = config.input_range
    in_ctype = _ctype(in_lo, in_hi)
    src, src_range, src_type = "x", (in_lo, in_hi), in_ctype
    n_layers = len(config.layers)
    for i, (layer, keys) in enumerate(zip(config.layers, _record_layout(config, record))):
        dst, vtype = _layer_buffers(i, layer, keys, i == n_layers - 1, buffers)
        body.append(_layer_code(em, i, layer, keys, src, src_range, dst, vtype))
        src, src_range = dst, _out_range(layer)
        src_type = _ctype(*src_range)
    n_out = config.layers[-1].n_out if config.layers else config.n_input
    if src != "y":
        body.append(_kernel("output.c", src=src, n=n_out, out_type=src_type))
    buffers += em.buffers
    names = record_names(config, record=record)
    notes = [
        f"input: the quantized integer input ({in_ctype}, range [{in_lo}, {in_hi}]; use quantize_input)",
        f"QGemm layouts (option layout={layout!r}): " + (", ".join(em.chosen) or "none"),
        "tiling, DMA and NPU placement are not modelled: they change where a layer runs, not its values",
    ] + [f"record {key} = state {cname}" for key, cname in names.items()]
    return build_program(
        name,
        "siracusa",
        constants=em.constants,
        buffers=buffers,
        step_body="\n".join(body),
        n_in=config.n_input,
        in_ctype=in_ctype,
        n_out=n_out,
        out_ctype=src_type,
        helpers=em.helper_code(),
        notes=notes,
        description=(
            f"Siracusa integer deployment of {len(config.layers)} layer(s): int8 GEMM/convolution with int32 "
            "wrap-around, RequantShift (round half up, saturation) and the integer LIF, equal to SiracusaSim."
        ),
    )


def _finish_acc(em: _Emitter, i: int, layer: Any, exact: bool, n: int, idx: str, dst: str, acc_buf: str | None) -> str:
    """Statements after the accumulation loop: wrap, record, requantize or store raw."""
    values: dict[str, Any] = {"exact": exact, "index": idx, "dst": dst, "record_acc": acc_buf is not None}
    if acc_buf is not None:
        values["acc_buf"] = acc_buf
    values["requantize"] = layer.requant is not None
    values["store_raw"] = layer.requant is None and acc_buf != dst
    if layer.requant is not None:
        lo_hi = layer.requant.out_range
        values["out_type"] = _ctype(max(lo_hi[0], _I32_LO), min(lo_hi[1], _I32_HI))
        values["requant"] = em.requant(i, layer.requant, n, "o", "acc32", lo_hi)
    return _kernel("finish.c", **values)


def _gemm(em: _Emitter, i: int, layer: QGemm, src: str, src_range: tuple, dst: str, acc_buf: str | None) -> str:
    K, O = layer.n_in, layer.n_out
    wt = np.ascontiguousarray(layer.weight.T)  # (O, K): contiguous rows per output
    exact, bias = em.accumulate(i, wt, layer.bias, src_range)
    layout = _gemm_layout(em.layout, layer.weight, em.snn)
    em.chosen.append(f"{layer.name}: {layout}")
    finish = _finish_acc(em, i, layer, exact, O, "o", dst, acc_buf)
    spikes = tuple(src_range) == (0, 1)  # 0/1 inputs: no multiplication
    values: dict[str, Any] = {"src": src, "dst": dst, "k": K, "o": O, "exact": exact, "bias": bias, "finish": finish}
    if layout == "sparse":
        cnt, post, wv = _csr(np.asarray(layer.weight))
        em.constants += [
            Constant(f"k{i}_cnt", _ctype(0, int(cnt.max(initial=0))), cnt),
            Constant(f"k{i}_post", _ctype(0, max(O - 1, 0)), post),
            Constant(f"k{i}_wv", "int8_t", wv),
        ]
        acc_type = "int32_t" if exact else "uint32_t"
        em.buffers.append(Buffer(f"a{i}", acc_type, O, "scratch", (i, i)))
        values.update(cnt=f"k{i}_cnt", post=f"k{i}_post", wv=f"k{i}_wv", acc=f"a{i}", acc_type=acc_type)
        return _kernel("gemm_sparse.c", spikes=spikes, **values)
    em.constants.append(Constant(f"k{i}_w", "int8_t", wt))
    if layout == "dense":
        return _kernel("gemm.c", w=f"k{i}_w", **values)
    ev_type = _ctype(0, max(K - 1, 0))
    em.buffers.append(Buffer(f"e{i}", ev_type, K, "scratch", (i, i)))
    return _kernel("gemm_events.c", w=f"k{i}_w", ev=f"e{i}", ev_type=ev_type, spikes=spikes,
                   dense_eighths=_DENSE_EIGHTHS, **values)  # fmt: skip


def _csr(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compressed rows of a (K, O) weight: per input its count of non-zero weights, then their outputs and values
    grouped by input (outputs ascending); one unread zero entry when the weight is all zeros (no empty array)."""
    k_idx, o_idx = np.nonzero(weight)
    cnt = np.bincount(k_idx, minlength=weight.shape[0])
    if k_idx.size == 0:
        return cnt, np.zeros(1, np.int64), np.zeros(1, np.int64)
    return cnt, o_idx, weight[k_idx, o_idx]


def _csr_bytes(weight: np.ndarray) -> tuple[int, int]:
    """Flash bytes of a (K, O) int8 weight as dense rows and as compressed rows (counts, output indices, values),
    each in the type :func:`_gemm` gives it."""
    K, O = weight.shape
    cnt, post, wv = _csr(weight)
    c = CTYPES[_ctype(0, int(cnt.max(initial=0)))][1]
    p = CTYPES[_ctype(0, max(O - 1, 0))][1]
    return K * O, K * c + post.size * p + wv.size


def _gemm_layout(layout: str, weight: np.ndarray, snn: bool) -> str:
    """The layout of one QGemm: the option, or for ``auto`` compressed rows exactly when they take fewer bytes
    (their flash plus their accumulators' RAM against dense rows' flash), else event-driven loops in a spiking
    network (one with a QLIF) and dense loops in an integer DNN."""
    if layout != "auto":
        return layout
    dense, sparse = _csr_bytes(np.asarray(weight))
    acc = 4 * np.shape(weight)[1]  # the int32 accumulators a<i> that compressed rows need in RAM
    return "sparse" if sparse + acc < dense else "events" if snn else "dense"


def _conv(em: _Emitter, i: int, layer: QConv2d, src: str, src_range: tuple, dst: str, acc_buf: str | None) -> str:
    H, W, C = layer.in_shape
    kh, kw, cg, O = layer.weight.shape
    Ho, Wo, _ = layer.out_shape
    wt = np.ascontiguousarray(np.transpose(layer.weight, (3, 0, 1, 2)))  # (O, kh, kw, cg)
    exact, bias = em.accumulate(i, wt.reshape(O, -1), layer.bias, src_range)
    em.constants.append(Constant(f"k{i}_w", "int8_t", wt))
    finish = _finish_acc(em, i, layer, exact, O, f"(oh * {Wo} + ow) * {O} + o", dst, acc_buf)
    return _kernel(
        "conv.c",
        src=src,
        dst=dst,
        wt=f"k{i}_w",
        h=H,
        w=W,
        c=C,
        oh0=0,
        oh1=Ho,
        wo=Wo,
        o=O,
        og=O // layer.groups,
        kh=kh,
        kw=kw,
        cg=cg,
        stride=layer.stride,
        pad=layer.padding,
        exact=exact,
        bias=bias,
        finish=finish,
    )


def _lif_state_type(layer: QLIF) -> str:
    """The state's C type: the state width when every reset stays inside it (1 <= thr <= max), else int32."""
    lo, hi = layer.state_range
    thr = layer.threshold
    if thr.size and int(thr.min()) >= 1 and int(thr.max()) <= hi:
        return _ctype(max(lo, _I32_LO), min(hi, _I32_HI))
    return "int32_t"


def _spike_condition(em: _Emitter, i: int, layer: QLIF, lo: int, hi: int) -> str:
    """The C condition ``z`` on the clamped state ``r``: spike iff r >= thr_ge, thr_ge clipped to [lo, hi + 1]
    (always / never at the ends, where the comparison is decided at generation)."""
    thr = np.asarray(layer.threshold, dtype=object).reshape(-1)
    thr_ge = np.array([int(t) + (1 if layer.compare == ">" else 0) for t in thr], dtype=object)
    thr_ge = np.array([min(max(int(t), lo), hi + 1) for t in thr_ge], dtype=object)
    if all(t == thr_ge[0] for t in thr_ge):
        t0 = int(thr_ge[0])
        return "1" if t0 <= lo else ("0" if t0 > hi else f"r >= {c_literal(t0, 'int32_t')}")
    ctype = "int32_t" if int(max(thr_ge)) <= _I32_HI else "int64_t"
    em.constants.append(Constant(f"k{i}_thr", ctype, np.asarray(thr_ge, dtype=np.int64)))
    return f"r >= k{i}_thr[n]" if ctype == "int32_t" else f"(int64_t)r >= k{i}_thr[n]"


def _lif(em: _Emitter, i: int, layer: QLIF, src: str, dst: str, vbuf: str, vtype: str) -> str:
    return _lif_kernel(em, i, layer, layer.n, src, dst, vbuf, vtype)


def _lif_kernel(em: _Emitter, i: int, layer: QLIF, n: Any, src: str, dst: str, vbuf: str, vtype: str) -> str:
    """``lif.c`` over ``n`` neurons (a count, or a C expression for a core's share in the cluster C); the
    per-neuron parameters are layer ``i``'s constants (or literals when equal over the layer)."""
    em.helpers.update(("mul", "i32"))
    size = layer.n
    beta = em.param(f"k{i}_beta", layer.beta_mul, size, "n", "u32")
    inm = em.param(f"k{i}_inm", layer.in_mul, size, "n", "u32")
    add = em.param(f"k{i}_ladd", layer.add, size, "n", "u32")
    lo, hi = max(layer.state_range[0], _I32_LO), min(layer.state_range[1], _I32_HI)
    spike = _spike_condition(em, i, layer, lo, hi)
    reset_zero = layer.reset == "zero"
    thr = "" if reset_zero else em.param(f"k{i}_thru", layer.threshold, size, "n", "u32")
    return _kernel(
        "lif.c",
        n=n,
        src=src,
        dst=dst,
        v=vbuf,
        v_type=vtype,
        beta=beta,
        in_mul=inm,
        add=add,
        shift_clamp=em.shift_clamp(layer.shift, (lo, hi)),
        spike=spike,
        reset_zero=reset_zero,
        thr=thr,
    )
