r"""The ``xylo`` numerics: a :class:`~pondlib.devices.xylo.config.XyloConfig` as C11, bit-exact with ``XyloSim``.

:func:`emit` turns every register of the Xylo core into ``static const`` arrays and one step function whose
integer dynamics are exactly those of :class:`pondlib.devices.xylo.sim.XyloSim` (``docs/XYLO.md``).

Equations of one step ``t`` (integers only; ``sat16`` clamps to [-32768, 32767], ``wrap16`` is
two's-complement narrowing to 16 bits, ``decay(v, d) = floor(v / 2**d)`` replaced by ``sign(v)`` when it is
0; the delivered weight of a projection with shift ``s`` is ``wrap16(w << s)``, computed at generation time)::

    1. input      for c ascending with n = min(x[c], 15) > 0:
                      Isyn_q[i] = sat16(Isyn_q[i] + n * W_in_q[c, i])              (q = 0, 1)
    2. recurrent  for j ascending with m = Spikes[j] > 0 (last step's counts):
                      Isyn_q[i] = sat16(Isyn_q[i] + m * W_rec_q[j, i])
    3. readout        Isyn_out[o] = sat16(Isyn_out[o] + m * W_out[j, o]);  then Spikes[j] = 0
    4. hidden     for i ascending:
                      Isyn_q[i] -= decay(Isyn_q[i], dash_syn_q[i])
                      dv = wrap16(-decay(Vmem[i], dash_mem[i]))
                      dv = sat16(dv + Isyn[i] + Isyn2[i]);  dv = sat16(dv + bias[i]) if bias_enable
                      Vmem[i] = sat16(Vmem[i] + dv)
                      n = Spikes[i]  (alias copies received this step)
                      while Vmem[i] >= threshold[i] and n < 31: n += 1; Vmem[i] = wrap16(Vmem[i] - threshold[i])
                      Spikes[i] = n;  if aliases[i] >= 0: Spikes[aliases[i]] = min(Spikes[aliases[i]] + n, 31)
    5. output     the same with one synapse, the output parameters, at most one spike (y[o] = 0 or 1), no aliases

(the spike loop is done in closed form, ``c = Vmem // threshold``, for a positive threshold). Units: chip
integers, no physical unit; ``dt`` does not enter the dynamics. ``x`` holds event counts per channel for
one step.

C layout:

* input ``x``: ``N_in`` x ``uint8_t`` event counts (counts above 15 act as 15, as on the chip and in
  ``XyloSim``; clip counts above 255 before calling); output ``y``: ``N_out`` x ``uint8_t`` spikes (0/1).
* state (recorded by the harness after every step, named after ``XyloSim``'s record keys, so that
  ``rec[key]`` of :func:`~pondlib.codegen.toolchain.run_host` equals ``XyloSim``'s ``rec[key]``): ``Vmem``,
  ``Isyn``, ``Isyn2`` (zeros with one synapse), ``Vmem_out``, ``Isyn_out`` as ``int16_t``, ``Spikes``
  (hidden counts 0..31, alias copies included) as ``uint8_t``.
* constants: per projection and synapse, either dense rows ``w_<proj><q>[pre][post]`` (``int16_t``,
  delivered weights) or an event list (CSR by presynaptic source: ``_ptr`` ``int32_t``, ``_post`` indices,
  ``_w`` ``int16_t``); projections without a non-zero weight emit no code. ``layout="auto"`` takes dense
  rows at density >= 3/4 (faster than event lists only then). Neuron parameters are ``uint8_t``
  (dashes) and ``int16_t`` arrays.
* arithmetic: ``int32_t``; every intermediate is bounded by 31 * 32768 + 65535 < 2**31 (checked at
  generation time); the flooring shift of a negative value is done portably as
  ``((v + 65536) >> d) - (65536 >> d)`` (``v >= -32768``, ``d <= 15``: a shift of a non-negative value
  only); ``wrap16`` through ``uint32_t``. No libm, no malloc; only ``<stdint.h>`` and ``<string.h>``.

Example:
    >>> import numpy as np, tempfile
    >>> from pondlib.codegen import compile_host, run_host
    >>> from pondlib.devices.xylo.config import XyloConfig
    >>> from pondlib.devices.xylo.sim import XyloSim
    >>> cfg = XyloConfig(
    ...     weights_in=np.array([[[100]]]), weights_rec=np.zeros((1, 1, 1)),
    ...     weights_out=np.array([[50]]), dash_mem=[1], dash_syn=[1], dash_syn_2=[0],
    ...     dash_mem_out=[1], dash_syn_out=[1], threshold=[60], bias=[0], threshold_out=[40],
    ...     bias_out=[0], aliases=[-1])
    >>> prog = emit(cfg, name="tiny")
    >>> [s.name for s in prog.io.states]
    ['Vmem', 'Isyn', 'Isyn2', 'Spikes', 'Vmem_out', 'Isyn_out']
    >>> x = np.array([[1], [0], [0], [0], [15], [0], [0]])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     y, rec = run_host(compile_host(prog, d), prog, x, record=True)
    >>> rec["Isyn"][:, 0].tolist()
    [50, 25, 13, 7, 754, 377, 189]
    >>> ref_out, _, ref_rec = XyloSim.from_config(cfg).evolve(x, record=True)
    >>> bool((y == ref_out).all()) and all((rec[k] == ref_rec[k]).all() for k in ref_rec)
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pondlib.cprogram.program import Buffer, Constant, Program, build_program
from pondlib.devices.xylo.config import XyloConfig, validate_config
from pondlib.errors import CodegenError, ConstraintError, Violation

__all__ = ["emit", "LAYOUTS", "delivered_weights"]

#: Weight layouts: ``auto`` (dense rows at density >= 3/4, else event lists), ``dense``, ``sparse``.
LAYOUTS = ("auto", "dense", "sparse")

_MAX_INPUT = 15  # 4-bit input counter (XyloSim clips the same way)
_MAX_SPIKES = 31  # 5-bit hidden spike counter
_I16 = (-32768, 32767)
_I32_MAX = 2**31 - 1

_HELPERS = r"""
/* Saturate to the 16-bit registers. */
static inline int32_t xy_sat16(int32_t v)
{
    return v > 32767 ? 32767 : (v < -32768 ? -32768 : v);
}

/* Two's-complement narrowing to 16 bits, portable (no implementation-defined conversion). */
static inline int32_t xy_wrap16(int32_t v)
{
    return (int32_t)(((uint32_t)v + 32768u) & 0xFFFFu) - 32768;
}

/* Bit-shift decay: floor(v / 2^d) for -32768 <= v <= 32767, 0 <= d <= 15, shifting only a non-negative
 * value (65536 is a multiple of 2^d, so the offset cancels exactly); 0 becomes sign(v). */
static inline int32_t xy_decay(int32_t v, int32_t d)
{
    int32_t r = (int32_t)(((uint32_t)(v + 65536)) >> d) - (int32_t)(65536u >> d);
    if (r == 0) r = (v > 0) - (v < 0);
    return r;
}

/* dv = wrap16(-decay(v, d)): only -(-32768) = 32768 wraps (to -32768). */
static inline int32_t xy_leak(int32_t v, int32_t d)
{
    int32_t dv = -xy_decay(v, d);
    return dv == 32768 ? -32768 : dv;
}
"""


def delivered_weights(w: Any, shift: int) -> np.ndarray:
    """``wrap16(w << shift)``: the weight a projection delivers (the chip narrows the shifted weight to 16 bits).

    Example:
        >>> delivered_weights(np.array([1, -1, 127]), 9).tolist()
        [512, -512, -512]
    """
    v = np.asarray(w, dtype=np.int64) << np.int64(shift)
    return ((v + 32768) & 0xFFFF) - 32768


class _Projection:
    """One (projection, synapse) weight matrix ``W[pre, post]`` as C constants and an accumulation snippet."""

    def __init__(self, tag: str, w: np.ndarray, target: str, layout: str) -> None:
        self.tag, self.target = tag, target
        n_pre, n_post = w.shape
        self.n_post = n_post
        nnz = int(np.count_nonzero(w))
        self.empty = nnz == 0
        if nnz > _I32_MAX:
            raise ConstraintError(
                [Violation("codegen_csr_size", tag, nnz, _I32_MAX, "split the network (int32_t event list offsets)")],
                device="xylo C codegen",
            )
        self.dense = layout == "dense" or (layout == "auto" and 4 * nnz >= 3 * n_pre * n_post)
        self.constants: list[Constant] = []
        if self.empty:
            return
        if self.dense:
            self.constants.append(Constant(f"w_{tag}", "int16_t", w.reshape(-1)))
        else:
            pre, post = np.nonzero(w)
            ptr = np.zeros(n_pre + 1, dtype=np.int64)
            np.cumsum(np.bincount(pre, minlength=n_pre), out=ptr[1:])
            post_t = "uint16_t" if n_post <= 65535 else "int32_t"
            self.constants += [
                Constant(f"w_{tag}_ptr", "int32_t", ptr),
                Constant(f"w_{tag}_post", post_t, post),
                Constant(f"w_{tag}_w", "int16_t", w[pre, post]),
            ]

    def code(self, j: str, m: str) -> str:
        """C statements adding ``m * W[j, :]`` to the target with 16-bit saturation."""
        if self.empty:
            return ""
        t, tag = self.target, self.tag
        if self.dense:
            return (
                f"{{ const int16_t *w = &w_{tag}[(size_t){j} * {self.n_post}];\n"
                f"  for (int32_t i = 0; i < {self.n_post}; ++i) {t}[i] = (int16_t)xy_sat16({t}[i] + {m} * w[i]); }}\n"
            )
        return (
            f"for (int32_t p = w_{tag}_ptr[{j}]; p < w_{tag}_ptr[{j} + 1]; ++p) {{\n"
            f"    const int32_t i = w_{tag}_post[p];\n"
            f"    {t}[i] = (int16_t)xy_sat16({t}[i] + {m} * w_{tag}_w[p]);\n}}\n"
        )


def _indent(code: str, n: int) -> str:
    pad = " " * n
    return "".join(pad + line if line.strip() else line for line in code.splitlines(keepends=True))


def _check_widths(config: XyloConfig) -> None:
    """Refuse a configuration whose values would overflow the C types (never for a valid configuration;
    kept as a guard for configurations validated against custom limits)."""
    violations = []
    lo, hi = _I16
    for field in ("threshold", "bias", "threshold_out", "bias_out"):
        arr = np.asarray(getattr(config, field))
        if arr.size and (arr.min() < lo or arr.max() > hi):
            violations.append(
                Violation(f"codegen_{field}_int16", field, [int(arr.min()), int(arr.max())], list(_I16), "int16")
            )
    for field in ("dash_mem", "dash_syn", "dash_syn_2", "dash_mem_out", "dash_syn_out"):
        arr = np.asarray(getattr(config, field))
        if arr.size and (arr.min() < 0 or arr.max() > 15):
            violations.append(Violation(f"codegen_{field}", field, [int(arr.min()), int(arr.max())], [0, 15], "0..15"))
    # Worst accumulator: a 16-bit state plus 31 spikes (or 15 events) times a 16-bit delivered weight, and
    # the membrane update: |decay| + two synapses + bias + state, all within int32_t.
    worst = max(_MAX_SPIKES, _MAX_INPUT) * 32768 + 32768
    worst_v = 32768 + 2 * 32768 + 32768 + 32768
    if max(worst, worst_v) > _I32_MAX:  # pragma: no cover - a statement of the bound
        violations.append(Violation("codegen_int32_accumulator", "step", worst, _I32_MAX, "narrower weights"))
    if violations:
        raise ConstraintError(violations, device="xylo C codegen")


def emit(model: Any, *, name: str = "net", layout: str = "auto", **options: Any) -> Program:
    """Emit a ``XyloConfig`` as a C program with exactly ``XyloSim``'s integer dynamics (module docstring).

    Args:
        model: a :class:`~pondlib.devices.xylo.config.XyloConfig`, valid for its ``limits_name``.
        name: the C prefix of every symbol and the file stem.
        layout: ``"auto"``, ``"dense"`` or ``"sparse"``: how weight matrices are stored and traversed
            (see :data:`LAYOUTS`; results are identical, only speed and flash differ).

    Raises:
        CodegenError: ``model`` is not a ``XyloConfig``, is invalid (every problem listed), an unknown option
            or a bad ``layout``/``name``.
        ConstraintError: a value that would overflow the generated C types.
    """
    if options:
        raise CodegenError(
            "unknown option(s) of the xylo numerics",
            value=sorted(options),
            limit="name, layout",
            where="pondlib.devices.xylo.codegen.emit",
        )
    if not isinstance(model, XyloConfig):
        raise CodegenError(
            "model",
            value=type(model).__name__,
            limit="a pondlib.devices.xylo.XyloConfig",
            where="pondlib.devices.xylo.codegen.emit",
            fix="build one with config_from_specification() or XyloConfig(...)",
        )
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise CodegenError("layout", value=layout, limit=list(LAYOUTS), where="pondlib.devices.xylo.codegen.emit")
    try:
        problems = validate_config(model)
    except Exception as exc:  # a config with an unknown limits_name or malformed arrays
        raise CodegenError("invalid XyloConfig", value=str(exc), where="pondlib.devices.xylo.codegen.emit") from exc
    if problems:
        raise CodegenError(
            f"invalid XyloConfig ({len(problems)} problem(s)):\n  - " + "\n  - ".join(problems),
            where="pondlib.devices.xylo.codegen.emit",
            fix="fix the configuration (validate_config lists every problem)",
        )
    _check_widths(model)
    cfg = model
    n_in, n_hid, n_out, k = cfg.n_input, cfg.n_hidden, cfg.n_output, cfg.n_synapses
    w_in = delivered_weights(cfg.weights_in, cfg.weight_shift_in)
    w_rec = delivered_weights(cfg.weights_rec, cfg.weight_shift_rec)
    w_out = delivered_weights(cfg.weights_out, cfg.weight_shift_out)
    syn = ("Isyn", "Isyn2")
    proj_in = [_Projection(f"in{q}", w_in[:, :, q], syn[q], layout) for q in range(k)]
    proj_rec = [_Projection(f"rec{q}", w_rec[:, :, q], syn[q], layout) for q in range(k)]
    proj_out = _Projection("out", w_out, "Isyn_out", layout)
    aliases = np.asarray(cfg.aliases, dtype=np.int64)
    has_alias = bool(np.any(aliases >= 0))
    bias_on = bool(cfg.bias_enable)
    idx_t = "int16_t" if n_hid <= 32767 else "int32_t"

    constants: list[Constant] = []
    for p in [*proj_in, *proj_rec, proj_out]:
        constants += p.constants
    constants += [
        Constant("dash_mem", "uint8_t", cfg.dash_mem),
        Constant("dash_syn", "uint8_t", cfg.dash_syn),
    ]
    if k == 2:
        constants.append(Constant("dash_syn_2", "uint8_t", cfg.dash_syn_2))
    constants.append(Constant("threshold", "int16_t", cfg.threshold))
    if bias_on:
        constants.append(Constant("bias", "int16_t", cfg.bias))
    if has_alias:
        constants.append(Constant("aliases", idx_t, aliases))
    constants += [
        Constant("dash_mem_out", "uint8_t", cfg.dash_mem_out),
        Constant("dash_syn_out", "uint8_t", cfg.dash_syn_out),
        Constant("threshold_out", "int16_t", cfg.threshold_out),
    ]
    if bias_on:
        constants.append(Constant("bias_out", "int16_t", cfg.bias_out))

    buffers = [
        Buffer("Vmem", "int16_t", n_hid),
        Buffer("Isyn", "int16_t", n_hid),
        Buffer("Isyn2", "int16_t", n_hid),
        Buffer("Spikes", "uint8_t", n_hid),
        Buffer("Vmem_out", "int16_t", n_out),
        Buffer("Isyn_out", "int16_t", n_out),
    ]

    body: list[str] = []
    # 1. input events, channels ascending, counts clipped to 15
    in_code = "".join(p.code("c", "n") for p in proj_in)
    if in_code:
        body.append(
            "/* 1. input events (channels ascending; the 4-bit counter clips at 15) */\n"
            f"for (int32_t c = 0; c < {n_in}; ++c) {{\n"
            "    int32_t n = x[c];\n"
            "    if (n == 0) continue;\n"
            f"    if (n > {_MAX_INPUT}) n = {_MAX_INPUT};\n" + _indent(in_code, 4) + "}\n"
        )
    # 2.-3. recurrence and readout from last step's spikes, then the spike buffer starts at zero
    rec_code = "".join(p.code("j", "m") for p in proj_rec) + proj_out.code("j", "m")
    if rec_code:
        body.append(
            "/* 2.-3. recurrent and readout events from last step's spike counts (sources ascending) */\n"
            f"for (int32_t j = 0; j < {n_hid}; ++j) {{\n"
            "    const int32_t m = Spikes[j];\n"
            "    if (m == 0) continue;\n" + _indent(rec_code, 4) + "    Spikes[j] = 0;\n}\n"
        )
    else:
        body.append("memset(Spikes, 0, sizeof(uint8_t) * " + str(n_hid) + ");\n")
    # 4. hidden neurons
    hid = [
        "/* 4. hidden neurons, ids ascending (alias targets are higher ids) */\n",
        f"for (int32_t i = 0; i < {n_hid}; ++i) {{\n",
        "    int32_t s = Isyn[i] - xy_decay(Isyn[i], dash_syn[i]);\n",
        "    Isyn[i] = (int16_t)s;\n",
    ]
    if k == 2:
        hid += [
            "    const int32_t s2 = Isyn2[i] - xy_decay(Isyn2[i], dash_syn_2[i]);\n",
            "    Isyn2[i] = (int16_t)s2;\n",
            "    s += s2;\n",
        ]
    hid += [
        "    int32_t v = Vmem[i];\n",
        "    int32_t dv = xy_sat16(xy_leak(v, dash_mem[i]) + s);\n",
    ]
    if bias_on:
        hid.append("    dv = xy_sat16(dv + bias[i]);\n")
    hid += [
        "    v = xy_sat16(v + dv);\n",
        "    int32_t n = Spikes[i];\n",
        "    const int32_t th = threshold[i];\n",
        f"    if (v >= th && n < {_MAX_SPIKES}) {{\n",
        "        if (th > 0) {\n",
        "            int32_t cnt = v / th;\n",
        f"            if (cnt > {_MAX_SPIKES} - n) cnt = {_MAX_SPIKES} - n;\n",
        "            n += cnt;\n",
        "            v -= cnt * th;\n",
        "        } else {\n",
        f"            while (v >= th && n < {_MAX_SPIKES}) {{ n += 1; v = xy_wrap16(v - th); }}\n",
        "        }\n",
        "    }\n",
        "    Vmem[i] = (int16_t)v;\n",
    ]
    if has_alias:
        hid += [
            "    if (n > 0) {\n",
            "        Spikes[i] = (uint8_t)n;\n",
            "        const int32_t tgt = aliases[i];\n",
            "        if (tgt >= 0) {\n",
            "            const int32_t nt = Spikes[tgt] + n;\n",
            f"            Spikes[tgt] = (uint8_t)(nt < {_MAX_SPIKES} ? nt : {_MAX_SPIKES});\n",
            "        }\n",
            "    }\n",
        ]
    else:
        hid.append("    Spikes[i] = (uint8_t)n;\n")
    hid.append("}\n")
    body.append("".join(hid))
    # 5. output neurons
    out = [
        "/* 5. output neurons: one synapse, at most one spike */\n",
        f"for (int32_t o = 0; o < {n_out}; ++o) {{\n",
        "    const int32_t s = Isyn_out[o] - xy_decay(Isyn_out[o], dash_syn_out[o]);\n",
        "    Isyn_out[o] = (int16_t)s;\n",
        "    int32_t v = Vmem_out[o];\n",
        "    int32_t dv = xy_sat16(xy_leak(v, dash_mem_out[o]) + s);\n",
    ]
    if bias_on:
        out.append("    dv = xy_sat16(dv + bias_out[o]);\n")
    out += [
        "    v = xy_sat16(v + dv);\n",
        "    const int32_t th = threshold_out[o];\n",
        "    if (v >= th) { y[o] = 1; v = xy_wrap16(v - th); } else { y[o] = 0; }\n",
        "    Vmem_out[o] = (int16_t)v;\n",
        "}\n",
    ]
    body.append("".join(out))

    layouts = ", ".join(
        f"{p.tag}: {'none' if p.empty else 'dense' if p.dense else 'events'}" for p in [*proj_in, *proj_rec, proj_out]
    )
    notes = [
        "Bit-exact with pondlib.devices.xylo.XyloSim: 16-bit saturating states, flooring bit-shift decays "
        "(sign(v) when the shift gives 0), subtractive reset (16-bit wrap for thresholds <= 0), 31-spike cap.",
        "Input counts above 15 act as 15 (the chip's 4-bit counter); inputs are uint8_t (clip above 255 first).",
        f"N_in={n_in}, N_hid={n_hid}, N_out={n_out}, synapses={k}, bias_enable={bias_on}, "
        f"aliases={'yes' if has_alias else 'no'}; weight layouts: {layouts}.",
    ]
    return build_program(
        name,
        "xylo",
        constants=constants,
        buffers=buffers,
        step_body="\n".join(body),
        n_in=n_in,
        in_ctype="uint8_t",
        n_out=n_out,
        out_ctype="uint8_t",
        helpers=_HELPERS,
        notes=notes,
        description="The Xylo integer core (a XyloConfig) as plain C11, step for step equal to XyloSim.",
    )
