r"""The ``xylo`` numerics: a :class:`~pondlib.devices.xylo.config.XyloConfig` as C11, bit-exact with ``XyloSim``.

:func:`emit` turns every register of the Xylo core into ``static const`` arrays and one step function whose
integer dynamics are exactly those of :class:`pondlib.devices.xylo.sim.XyloSim` (``docs/XYLO.md``). Each phase
of the step and each weight layout is a small C template in ``templates/`` beside this module
(:mod:`pondlib.cprogram.templating`); Python computes only the values (sizes, names, the chosen variants).

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
from pondlib.cprogram.templating import render
from pondlib.devices.xylo.config import XyloConfig, validate_config
from pondlib.errors import CodegenError, ConstraintError, Violation

__all__ = ["emit", "LAYOUTS", "delivered_weights"]

#: Weight layouts: ``auto`` (dense rows at density >= 3/4, else event lists), ``dense``, ``sparse``.
LAYOUTS = ("auto", "dense", "sparse")

_MAX_INPUT = 15  # 4-bit input counter (XyloSim clips the same way)
_MAX_SPIKES = 31  # 5-bit hidden spike counter
_I16 = (-32768, 32767)
_I32_MAX = 2**31 - 1

_PACKAGE = __package__  # the kernels of this module live in pondlib/devices/xylo/templates/


def _kernel(template: str, **values: Any) -> str:
    """One kernel's C: the template ``template`` of this chip filled with ``values``."""
    return render(_PACKAGE, template, **values)


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
        template = "project_dense.c" if self.dense else "project_events.c"
        return _kernel(template, w=f"w_{self.tag}", target=self.target, j=j, m=m, n_post=self.n_post)


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


def _check_model(model: Any, layout: Any, options: dict[str, Any]) -> XyloConfig:
    """``model`` as a valid ``XyloConfig`` whose values fit the C types; else the error naming the problem."""
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
    return model


class _Network:
    """What the C of one configuration is made of: its projections (one per weight matrix and synapse) and the
    variants of the neuron kernels (two synapses, bias, aliases)."""

    def __init__(self, cfg: XyloConfig, layout: str) -> None:
        self.cfg = cfg
        self.k = cfg.n_synapses
        w_in = delivered_weights(cfg.weights_in, cfg.weight_shift_in)
        w_rec = delivered_weights(cfg.weights_rec, cfg.weight_shift_rec)
        w_out = delivered_weights(cfg.weights_out, cfg.weight_shift_out)
        syn = ("Isyn", "Isyn2")
        self.proj_in = [_Projection(f"in{q}", w_in[:, :, q], syn[q], layout) for q in range(self.k)]
        self.proj_rec = [_Projection(f"rec{q}", w_rec[:, :, q], syn[q], layout) for q in range(self.k)]
        self.proj_out = _Projection("out", w_out, "Isyn_out", layout)
        self.aliases = np.asarray(cfg.aliases, dtype=np.int64)
        self.has_alias = bool(np.any(self.aliases >= 0))
        self.bias_on = bool(cfg.bias_enable)

    @property
    def projections(self) -> list[_Projection]:
        return [*self.proj_in, *self.proj_rec, self.proj_out]

    def constants(self) -> list[Constant]:
        """Every register as flash: the weights, then the hidden and output neuron parameters."""
        cfg = self.cfg
        out = [c for p in self.projections for c in p.constants]
        out += [Constant("dash_mem", "uint8_t", cfg.dash_mem), Constant("dash_syn", "uint8_t", cfg.dash_syn)]
        if self.k == 2:
            out.append(Constant("dash_syn_2", "uint8_t", cfg.dash_syn_2))
        out.append(Constant("threshold", "int16_t", cfg.threshold))
        if self.bias_on:
            out.append(Constant("bias", "int16_t", cfg.bias))
        if self.has_alias:
            out.append(Constant("aliases", "int16_t" if cfg.n_hidden <= 32767 else "int32_t", self.aliases))
        out += [
            Constant("dash_mem_out", "uint8_t", cfg.dash_mem_out),
            Constant("dash_syn_out", "uint8_t", cfg.dash_syn_out),
            Constant("threshold_out", "int16_t", cfg.threshold_out),
        ]
        if self.bias_on:
            out.append(Constant("bias_out", "int16_t", cfg.bias_out))
        return out

    def buffers(self) -> list[Buffer]:
        """The state, named after XyloSim's record keys (Isyn2 stays zero with one synapse)."""
        n_hid, n_out = self.cfg.n_hidden, self.cfg.n_output
        return [
            Buffer("Vmem", "int16_t", n_hid),
            Buffer("Isyn", "int16_t", n_hid),
            Buffer("Isyn2", "int16_t", n_hid),
            Buffer("Spikes", "uint8_t", n_hid),
            Buffer("Vmem_out", "int16_t", n_out),
            Buffer("Isyn_out", "int16_t", n_out),
        ]

    def step_body(self) -> str:
        """The five phases of one step (module docstring), each from its kernel template."""
        cfg = self.cfg
        body = []
        in_code = "\n".join(filter(None, (p.code("c", "n") for p in self.proj_in)))
        if in_code:
            body.append(_kernel("input.c", n_in=cfg.n_input, max_input=_MAX_INPUT, projections=in_code))
        rec_code = "\n".join(filter(None, [p.code("j", "m") for p in self.proj_rec] + [self.proj_out.code("j", "m")]))
        body.append(_kernel("spike_events.c", n_hid=cfg.n_hidden, events=bool(rec_code), projections=rec_code))
        body.append(
            _kernel(
                "hidden.c",
                n=cfg.n_hidden,
                max_spikes=_MAX_SPIKES,
                two_synapses=self.k == 2,
                bias=self.bias_on,
                aliases=self.has_alias,
            )
        )
        body.append(_kernel("output.c", n=cfg.n_output, bias=self.bias_on))
        return "\n\n".join(body)

    def notes(self) -> list[str]:
        cfg = self.cfg
        layouts = ", ".join(
            f"{p.tag}: {'none' if p.empty else 'dense' if p.dense else 'events'}" for p in self.projections
        )
        return [
            "Bit-exact with pondlib.devices.xylo.XyloSim: 16-bit saturating states, flooring bit-shift decays "
            "(sign(v) when the shift gives 0), subtractive reset (16-bit wrap for thresholds <= 0), 31-spike cap.",
            "Input counts above 15 act as 15 (the chip's 4-bit counter); inputs are uint8_t (clip above 255 first).",
            f"N_in={cfg.n_input}, N_hid={cfg.n_hidden}, N_out={cfg.n_output}, synapses={self.k}, "
            f"bias_enable={self.bias_on}, aliases={'yes' if self.has_alias else 'no'}; weight layouts: {layouts}.",
        ]


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
    net = _Network(_check_model(model, layout, options), layout)
    return build_program(
        name,
        "xylo",
        constants=net.constants(),
        buffers=net.buffers(),
        step_body=net.step_body(),
        n_in=net.cfg.n_input,
        in_ctype="uint8_t",
        n_out=net.cfg.n_output,
        out_ctype="uint8_t",
        helpers=_kernel("helpers.c"),
        notes=net.notes(),
        description="The Xylo integer core (a XyloConfig) as plain C11, step for step equal to XyloSim.",
    )
