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
* constants: per projection and synapse, either dense rows ``w_<proj><q>[pre][post]`` (``int16_t``, delivered
  weights) or an event list (CSR by presynaptic source: ``_ptr`` row starts, ``_post`` indices, ``_w`` weights,
  each in the narrowest type that holds its values: offsets ``uint8_t`` / ``uint16_t`` / ``int32_t``, indices
  ``uint8_t`` up to 256 targets, weights ``int8_t`` where every delivered one fits and the indices are
  ``uint8_t``); projections without a
  non-zero weight emit no code. ``layout="auto"`` takes the event list where it takes less flash than dense rows
  or fewer than 3/4 of the weights are non-zero (dense rows are faster only above that), else dense rows.
  Neuron parameters are ``uint8_t`` (dashes) and ``int16_t`` arrays.
* event-driven: the input phase visits only channels with events and the recurrent / readout phase only the
  neurons that spiked last step (one scan of the counts each, no dense matrix product), in ascending source
  order, since each addition saturates; the hidden phase skips a quiescent neuron (``Isyn = Isyn2 = Vmem = 0``,
  no alias copies, positive threshold, zero bias: it stays all zero), so that a quiet network costs little
  (option ``skip_quiet``; by default where one source reaches fewer than a quarter of the hidden neurons).
  Measured (``benchmarks/codegen_events.py``, 16 steps from reset): on the W1 workload 1.3x (Cortex-M4F) /
  1.2x (RV32) fewer instructions per step at 1 % input density, 3-5 % more at 5 % to 50 %, where most
  neurons are active (the test costs a few instructions each).
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

#: Weight layouts: ``auto`` (per matrix the event list where it is smaller in flash or under 3/4 dense, else dense
#: rows: :func:`_storage_bytes`), ``dense``, ``sparse``.
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


def _int_type(lo: int, hi: int) -> str:
    """The narrowest of int8_t / uint8_t / int16_t / uint16_t / int32_t holding ``lo..hi``."""
    for ctype, tlo, thi in (("uint8_t", 0, 255), ("int8_t", -128, 127), ("uint16_t", 0, 65535),
                            ("int16_t", -32768, 32767)):  # fmt: skip
        if tlo <= lo and hi <= thi:
            return ctype
    return "int32_t"


def _storage_bytes(w: Any) -> tuple[int, int]:
    """Flash bytes of one delivered weight matrix ``W[pre, post]`` as dense rows and as an event list.

    Dense rows: ``2 n_pre n_post`` (``int16_t``); event list: ``(n_pre + 1) b_ptr + nnz (b_post + b_w)``, each
    ``b`` the bytes of the narrowest C type that holds the values (weights: ``int8_t`` when every delivered
    weight fits and the post indices are ``uint8_t``, else ``int16_t``; post indices: ``uint8_t`` up to 256
    targets, else ``uint16_t``; offsets: ``uint8_t`` up to 255 entries, ``uint16_t`` up to 65535, else
    ``int32_t``). ``layout="auto"`` takes the event list when it is the smaller, or (as before, for speed) when
    fewer than 3/4 of the weights are non-zero.

    Example:
        >>> _storage_bytes(np.eye(4, dtype=np.int64))  # 16 int16 weights, or 5 offsets + 4 (post, weight) pairs
        (32, 13)
    """
    w = np.asarray(w, dtype=np.int64)
    n_pre, n_post = w.shape
    nnz = int(np.count_nonzero(w))
    b_post = 1 if n_post <= 256 else 2
    b_w = 1 if b_post == 1 and (w.size == 0 or (w.min() >= -128 and w.max() <= 127)) else 2
    b_ptr = 1 if nnz <= 255 else 2 if nnz <= 65535 else 4
    return 2 * n_pre * n_post, (n_pre + 1) * b_ptr + nnz * (b_post + b_w)


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
        dense_bytes, sparse_bytes = _storage_bytes(w)
        smaller, faster = sparse_bytes < dense_bytes, 4 * nnz < 3 * n_pre * n_post
        self.dense = layout == "dense" or (layout == "auto" and not (smaller or faster))
        self.constants: list[Constant] = []
        if self.empty:
            return
        fits8 = -128 <= int(w.min()) and int(w.max()) <= 127
        # event lists: int8_t where every delivered weight fits (flash) and the post indices are uint8_t: one index
        # register then addresses both arrays. Beside uint16_t indices an int8_t weight array costs an address
        # computation per entry (measured on W1, N = 1000: 9 % more Cortex-M4F instructions per step at 50 % input
        # density than int16_t weights, for 21 % less flash). Dense rows keep int16_t (measured: int8_t
        # rows took up to 12 % more RV32 instructions per step in the digits network, for the same values)
        self.w_type = "int8_t" if fits8 and not self.dense and n_post <= 256 else "int16_t"
        if self.dense:
            self.constants.append(Constant(f"w_{tag}", self.w_type, w.reshape(-1)))
        else:
            pre, post = np.nonzero(w)
            ptr = np.zeros(n_pre + 1, dtype=np.int64)
            np.cumsum(np.bincount(pre, minlength=n_pre), out=ptr[1:])
            self.constants += [
                Constant(f"w_{tag}_ptr", _int_type(0, nnz), ptr),
                Constant(f"w_{tag}_post", _int_type(0, n_post - 1), post),
                Constant(f"w_{tag}_w", self.w_type, w[pre, post]),
            ]

    def code(self, j: str, m: str) -> str:
        """C statements adding ``m * W[j, :]`` to the target with 16-bit saturation."""
        if self.empty:
            return ""
        if self.dense:
            return _kernel("project_dense.c", w=f"w_{self.tag}", target=self.target, j=j, m=m, n_post=self.n_post)
        return _kernel("project_events.c", w=f"w_{self.tag}", target=self.target, j=j, m=m, n_post=self.n_post)


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
            limit="name, layout, skip_quiet",
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

    def __init__(self, cfg: XyloConfig, layout: str, skip_quiet: Any = "auto") -> None:
        self.cfg = cfg
        self.k = cfg.n_synapses
        w_in = delivered_weights(cfg.weights_in, cfg.weight_shift_in)
        w_rec = delivered_weights(cfg.weights_rec, cfg.weight_shift_rec)
        w_out = delivered_weights(cfg.weights_out, cfg.weight_shift_out)
        syn = ("Isyn", "Isyn2")
        self.proj_in = [_Projection(f"in{q}", w_in[:, :, q], syn[q], layout) for q in range(self.k)]
        self.proj_rec = [_Projection(f"rec{q}", w_rec[:, :, q], syn[q], layout) for q in range(self.k)]
        self.proj_out = _Projection("out", w_out, "Isyn_out", layout)
        # Skip quiescent hidden neurons where one event reaches few of them: the mean fraction of the hidden
        # neurons that one input or recurrent source with a synapse reaches (any synapse) is below 1/4.
        # Measured (16 steps from reset): on W1 (mean reach 6 %) the skip gives 1.3x (M4F) / 1.2x (RV32) fewer
        # instructions per step at 1 % input density and costs 3-5 % from 5 % up; on the digits network pruned
        # to 40 % (reach 40 %: off) 1.3x at 1 % but 5-8 % more from 5 % up; on the digits network (reach 100 %,
        # never quiet: off) 3-9 % more at every density.
        reach = np.concatenate([np.any(np.asarray(w) != 0, axis=2).mean(axis=1) for w in (w_in, w_rec)])
        reach = reach[reach > 0]  # the sources with a synapse
        auto = bool(reach.size == 0 or reach.mean() < 0.25)
        self.skip_quiet = auto if isinstance(skip_quiet, str) else bool(skip_quiet)
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
                quiet=self.quiet_test(),
            )
        )
        body.append(_kernel("output.c", n=cfg.n_output, bias=self.bias_on))
        return "\n\n".join(body)

    def quiet_test(self) -> str:
        """The C test of a quiescent hidden neuron ``i`` (every state 0, no spike copies, a positive threshold, no
        bias): it stays all 0 this step. Only the terms that can be non-zero are tested; ``"0"`` (no test) where
        :attr:`skip_quiet` is off."""
        if not self.skip_quiet:
            return "0"
        terms = ["i1"] + (["i2"] if self.k == 2 else []) + ["v"]  # hidden.c's copies of Isyn, Isyn2, Vmem
        terms += ["Spikes[i]"] if self.has_alias else []  # alias copies; without aliases it is 0 here
        test = [f"({' | '.join(terms)}) == 0"]
        if np.asarray(self.cfg.threshold).min() <= 0:  # decided at generation time where it can be
            test.append("threshold[i] > 0")
        if self.bias_on and np.any(np.asarray(self.cfg.bias) != 0):
            test.append("bias[i] == 0")
        return " && ".join(test)

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
            "Event-driven: inputs with events and last step's spiking neurons only; "
            + (
                f"quiescent hidden neurons skipped ({self.quiet_test()})."
                if self.skip_quiet
                else "no quiescent-neuron skip (a source reaches a quarter of the hidden neurons or more)."
            ),
        ]


def emit(model: Any, *, name: str = "net", layout: str = "auto", skip_quiet: Any = "auto", **options: Any) -> Program:
    """Emit a ``XyloConfig`` as a C program with exactly ``XyloSim``'s integer dynamics (module docstring).

    Args:
        model: a :class:`~pondlib.devices.xylo.config.XyloConfig`, valid for its ``limits_name``.
        name: the C prefix of every symbol and the file stem.
        layout: ``"auto"``, ``"dense"`` or ``"sparse"``: how weight matrices are stored and traversed
            (see :data:`LAYOUTS`; results are identical, only speed and flash differ).
        skip_quiet: ``"auto"``, ``True`` or ``False``: whether the hidden phase skips quiescent neurons (module
            docstring; results are identical). ``"auto"`` skips where one source reaches fewer than a quarter
            of the hidden neurons on average; a hint from the user's input density is better: the skip saved
            about a quarter of the instructions per step at 1 % input density and cost 1-8 % from 5 % up.

    Raises:
        CodegenError: ``model`` is not a ``XyloConfig``, is invalid (every problem listed), an unknown option
            or a bad ``layout``/``name``/``skip_quiet``.
        ConstraintError: a value that would overflow the generated C types.
    """
    if not (isinstance(skip_quiet, (bool, np.bool_)) or (isinstance(skip_quiet, str) and skip_quiet == "auto")):
        raise CodegenError(
            "skip_quiet",
            value=repr(skip_quiet)[:80],
            limit="'auto', True or False",
            where="pondlib.devices.xylo.codegen.emit",
            fix="pass True (skip quiescent neurons), False, or 'auto' (decided from the fan-out)",
        )
    net = _Network(_check_model(model, layout, options), layout, skip_quiet)
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
