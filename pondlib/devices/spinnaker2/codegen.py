r"""SpiNNaker2 numerics as C: the per-PE float32 LIF update with 16-bit synapse words, and the int8 MLA layers.

:func:`emit` takes either a :class:`~pondlib.devices.spinnaker2.config.SpiNNaker2Config` (the SNN path, what
``config_from_specification(mapper(net))`` returns) or a :class:`~pondlib.devices.spinnaker2.dnn.DNNConfig`
(the DNN path, what ``dnn_mapper`` returns), and writes C whose every output and recorded state equals the
simulators of :mod:`pondlib.devices.spinnaker2.sim` bit for bit. Each kernel (a population's update, a block of
synapse rows, an MLA layer, the multiply-add) is a small C template in ``templates/`` beside this module
(:mod:`pondlib.cprogram.templating`); Python computes only the values.

**SNN** (``SpiNNaker2Sim``). One C step is one tick. Input ``x`` (``int32_t``, ``n_input``): spike counts of the
input sources at this tick; output ``y`` (``int32_t``, ``N_out``): the output population's spikes (0/1). Per
tick, with ``slot = tick mod D`` and ``D = max_delay + 2`` ring slots:

.. code-block:: text

    for every population P (update order), every neuron n:
        E, H = buf_exc[slot][n], buf_inh[slot][n]  (int64, exact); both slots cleared
        lif:           I = (float)(E - H)
        lif_curr_exp:  i_exc = mul_add(exc_decay, i_exc, (float)E); i_inh = mul_add(inh_decay, i_inh, (float)H)
                       I = i_exc - i_inh
        if refrac == 0:  v' = mul_add(alpha, v, first) + second     (first, second) = (i_offset, I) or (I, i_offset)
                         spike = v' > threshold  (or >=);  if spike: v' = v' - threshold (or v_reset),
                         refrac = t_refrac;  v = v'
        else:            refrac -= 1, no spike
    then every source (input counts, population spikes) adds count * |w| into buf_exc / buf_inh of the
    target at slot (tick + 1 + delay) mod D, decoding each 16-bit synapse word as the chip does; tick += 1

``mul_add(a, b, c)`` is ``float p = a * b; p + c`` (two float32 roundings; the build uses
``-ffp-contract=off``) or, with ``LIFOptions(fma=True)``, ``fmaf(a, b, c)`` with one rounding, computed
without libm exactly as the simulator does: the product in double (exact), TwoSum, round to odd in double,
then one rounding to float (the correctly rounded fused result, equal to the M4F's ``vfma.f32``).

C layout (SNN): flash holds per population the float32 parameter arrays ``<P>_threshold``, ``<P>_alpha``,
``<P>_i_offset`` (and ``<P>_v_reset``, ``<P>_exc_decay``, ``<P>_inh_decay`` where used), ``<P>_t_refrac``
(``int32_t``), and the synapse rows of every PE grouped by (source, target, source neuron): ``syn_words``
(``uint16_t``, the configuration's words verbatim), ``syn_ptr`` (row start offsets, R + 1), ``syn_base`` (the PE
slice's first neuron), ``syn_first`` (per (source, target) block and source neuron, its first row: the rows of
one neuron are consecutive), the three tables in the narrowest of ``uint8_t`` / ``uint16_t`` / ``int32_t``.

Event-driven (every tick): the indices of the source neurons with a non-zero count (input events, last tick's
spikes of a population, recurrent ones included) are gathered once per source into a scratch list
``syn_ev<k>``, and only their rows are read: the cost is one test per source neuron plus the events' synapses,
instead of one test per synapse row (a row per source neuron and PE slice). The sums are exact int64, so the
order of the events changes nothing; no dense variant is kept, since a row scan never tests fewer entries
than the gather (``benchmarks/codegen_events.py`` measures both at 1 % to 50 % input density). RAM (state,
recorded after every step) per population:
``<P>_v``, ``<P>_i_exc``, ``<P>_i_inh`` (float), ``<P>_refrac`` (``int32_t``), ``<P>_buf_exc``,
``<P>_buf_inh`` (``int64_t``, D x N ring slots, slot-major), ``<P>_spikes`` (``int32_t``) and, with
``record=True`` (default), ``<P>_i_syn`` (float) and ``<P>_input`` (``int64_t``, ``E - H``); plus ``tick``
(``int64_t``). ``<P>`` is the population name made a C identifier; :func:`record_names` maps every record
and state key of the simulator (``"1_LIF.v"``, ``"tick"``) to its C buffer.

Input counts must be those the simulator accepts (non-negative, at most its ``max_input_count``): then the
int64 sums are the simulator's exact sums. Generation refuses (:class:`~pondlib.errors.ConstraintError`) a
configuration whose sums could overflow ``int64_t`` for some ``int32_t`` input.

**DNN** (``DNNSim``). One C step is one inference: ``x`` the int8 input (K,), ``y`` the last layer's int8
output. Per layer (weights ``W`` (K, N) int8 in flash, row-major; bias int32; tiles do not change values)::

    acc_n = b_n + sum_k x_k W_kn                           (int64_t, exact)
    wrap mode:  acc_n = two's complement wrap to acc_bits  (the register)
    y_n = sat8(floor(acc_n / 2^shift)), then max(y_n, 0) with ReLU

The floor shift is written without right-shifting a negative number (``~((~acc) >> s)``), so it does not rely on
implementation-defined C. With ``record=True`` (default) ``<L>_acc`` (``int64_t``) and ``<L>_y`` (``int8_t``) are
state buffers recorded after each step; otherwise the activations live in the scratch arena (ping-pong). In
``overflow="error"`` mode the simulator raises when an accumulator leaves ``acc_bits``; where the worst case
``128 * sum_k |W_kn| + |b_n|`` can do that, the C gets a state buffer ``overflow`` (``int32_t``) that is 1 at
exactly the steps where the simulator would raise (the other outputs are then the exact-accumulator values).

Example:
    >>> import numpy as np, tempfile
    >>> from pondlib import nn
    >>> from pondlib.devices.spinnaker2.mapper import mapper
    >>> from pondlib.devices.spinnaker2.config import config_from_specification
    >>> from pondlib.devices.spinnaker2.sim import SpiNNaker2Sim
    >>> from pondlib.codegen import compile_host, run_host
    >>> net = nn.Sequential(nn.Linear(2, 3, weight=np.array([[1.0, -0.5, 0.2], [0.3, 1.0, -1.0]])), nn.LIF(3))
    >>> config, ok, _ = config_from_specification(mapper(net, neuron_model="lif_curr_exp"))
    >>> prog = emit(config, name="s2net")
    >>> x = np.random.default_rng(0).integers(0, 3, (12, 2))
    >>> with tempfile.TemporaryDirectory() as d:
    ...     y, rec = run_host(compile_host(prog, d), prog, x, record=True)
    >>> y_sim, state, rec_sim = SpiNNaker2Sim.from_config(config).evolve(x, record=True)
    >>> names = record_names(config)
    >>> bool(np.array_equal(y, y_sim)), all(np.array_equal(rec[names[k]], rec_sim[k]) for k in rec_sim)
    (True, True)
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from pondlib.cprogram.program import Buffer, Constant, Program, build_program, c_literal
from pondlib.cprogram.templating import render
from pondlib.devices.spinnaker2.config import SpiNNaker2Config, decode_words, validate_config
from pondlib.devices.spinnaker2.dnn import DNNConfig
from pondlib.devices.spinnaker2.specification import NEURON_MODELS, LIFOptions
from pondlib.errors import CodegenError, ConstraintError, Violation

__all__ = ["emit", "record_names"]

_SNN_OPTIONS = ("options", "record")
_DNN_OPTIONS = ("overflow", "record")
_INT64_MAX = 2**63 - 1


# ------------------------------------------------------------------------------------------------
# names
# ------------------------------------------------------------------------------------------------
def _c_names(names: list[str], suffixes: tuple[str, ...], reserved: tuple[str, ...]) -> list[str]:
    """One C prefix per name: the name made an identifier, or ``item<i>`` when those would clash."""
    out = []
    for name in names:
        s = re.sub(r"[^A-Za-z0-9_]", "_", str(name))
        if not re.match(r"[A-Za-z]", s):
            s = "p" + s
        out.append(s)
    full = [p + suf for p in out for suf in suffixes]
    if len(set(full)) != len(full) or set(full) & set(reserved):
        out = [f"item{i}" for i in range(len(names))]
    return out


_POP_SUFFIXES = (
    "_v",
    "_i_exc",
    "_i_inh",
    "_refrac",
    "_buf_exc",
    "_buf_inh",
    "_spikes",
    "_i_syn",
    "_input",
    "_threshold",
    "_alpha",
    "_i_offset",
    "_v_reset",
    "_exc_decay",
    "_inh_decay",
    "_t_refrac",
)
_SNN_RESERVED = ("syn_words", "syn_ptr", "syn_pre", "syn_base", "syn_first", "tick")
_LAYER_SUFFIXES = ("_w", "_b", "_acc", "_y")


def record_names(model: SpiNNaker2Config | DNNConfig) -> dict[str, str]:
    """The C buffer of every simulator record and state key of ``model``.

    SNN: ``"<P>.v"``, ``"<P>.i_syn"``, ``"<P>.input"``, ``"<P>.spikes"`` (record keys) and ``"<P>.i_exc"``,
    ``"<P>.i_inh"``, ``"<P>.refrac"``, ``"<P>.buf_exc"``, ``"<P>.buf_inh"``, ``"tick"`` (state keys);
    DNN: ``"<L>.acc"``, ``"<L>.y"``.

    Example:
        >>> from pondlib.devices.spinnaker2.dnn import MLP, dnn_mapper
        >>> cfg = dnn_mapper(MLP.from_arrays([np.ones((2, 2))]), calibration=np.ones((1, 2)))
        >>> record_names(cfg)
        {'fc1.acc': 'fc1_acc', 'fc1.y': 'fc1_y'}
    """
    if isinstance(model, SpiNNaker2Config):
        names = [p.name for p in model.populations]
        prefixes = _c_names(names, _POP_SUFFIXES, _SNN_RESERVED)
        out = {}
        for name, c in zip(names, prefixes):
            for key in ("v", "i_syn", "input", "spikes", "i_exc", "i_inh", "refrac", "buf_exc", "buf_inh"):
                out[f"{name}.{key}"] = f"{c}_{key}"
        out["tick"] = "tick"
        return out
    if isinstance(model, DNNConfig):
        names = [layer.name for layer in model.layers]
        prefixes = _c_names(names, _LAYER_SUFFIXES, ("overflow",))
        out = {}
        for name, c in zip(names, prefixes):
            out[f"{name}.acc"] = f"{c}_acc"
            out[f"{name}.y"] = f"{c}_y"
        return out
    raise CodegenError(
        "model", value=type(model).__name__, limit="a SpiNNaker2Config or a DNNConfig", where="record_names"
    )


# ------------------------------------------------------------------------------------------------
# entry point
# ------------------------------------------------------------------------------------------------
def emit(model: Any, *, name: str = "net", **options: Any) -> Program:
    """The C program of a SpiNNaker2 SNN configuration or DNN configuration (see the module docstring).

    Args:
        model: a :class:`SpiNNaker2Config` (SNN) or a :class:`DNNConfig` (DNN).
        name: C prefix of every symbol.
        options: SNN: ``options`` (a :class:`LIFOptions` overriding ``config.options``, as the simulator
            takes), ``record`` (bool, default True: record ``i_syn`` and ``input``). DNN: ``overflow``
            (``"error"`` or ``"wrap"``, overriding ``config.overflow``), ``record`` (bool, default True: keep
            every layer's ``acc`` and ``y`` as recorded state).

    Raises:
        CodegenError: ``model`` of another type, an invalid configuration, unknown or bad options.
        ConstraintError: an integer accumulator that could overflow its ``int64_t``.
    """
    if isinstance(model, SpiNNaker2Config):
        _check_options(options, _SNN_OPTIONS, "SNN")
        record = _check_record(options.get("record", True))
        opts = options.get("options")
        return _emit_snn(model, name, opts, record)
    if isinstance(model, DNNConfig):
        _check_options(options, _DNN_OPTIONS, "DNN")
        record = _check_record(options.get("record", True))
        return _emit_dnn(model, name, options.get("overflow"), record)
    raise CodegenError(
        "model",
        value=type(model).__name__,
        limit="a SpiNNaker2Config (SNN path) or a DNNConfig (DNN path)",
        where="pondlib.devices.spinnaker2.codegen.emit",
        fix="map the network with pondlib.devices.spinnaker2 (mapper + config_from_specification, or dnn_mapper)",
    )


def _check_options(options: dict[str, Any], allowed: tuple[str, ...], path: str) -> None:
    unknown = sorted(k for k in options if k not in allowed)
    if unknown:
        raise CodegenError(
            f"unknown option(s) {unknown} for the spinnaker2 {path} path",
            value=unknown,
            limit=list(allowed),
            where="pondlib.devices.spinnaker2.codegen.emit",
            fix="pass only the supported options",
        )


def _check_record(record: Any) -> bool:
    if not isinstance(record, (bool, np.bool_)):
        raise CodegenError(
            "option record", value=record, limit="True or False", where="pondlib.devices.spinnaker2.codegen"
        )
    return bool(record)


# ------------------------------------------------------------------------------------------------
# SNN
# ------------------------------------------------------------------------------------------------
_PACKAGE = __package__  # the kernels of this module live in pondlib/devices/spinnaker2/templates/


def _kernel(template: str, **values: Any) -> str:
    """One kernel's C: the template ``template`` of this chip filled with ``values``."""
    return render(_PACKAGE, template, **values)


def _check_snn(config: SpiNNaker2Config, opts: Any) -> LIFOptions:
    """The options to emit with (``config.options`` unless given); a valid configuration, else the error."""
    problems = validate_config(config)
    if problems:
        raise CodegenError(
            "invalid SpiNNaker2 configuration: " + "; ".join(problems),
            where="pondlib.devices.spinnaker2.codegen.emit",
            fix="build the configuration with config_from_specification and check validate_config",
        )
    opts = config.options if opts is None else opts
    if not isinstance(opts, LIFOptions) or opts.problems():
        raise CodegenError(
            "option options",
            value=opts if not isinstance(opts, LIFOptions) else opts.problems(),
            limit="a valid LIFOptions (compare '>'/'>=', reset 'subtract'/'to_v_reset', fma bool, order)",
            where="pondlib.devices.spinnaker2.codegen.emit",
        )
    return opts


def _synapse_groups(config: SpiNNaker2Config, fmt: Any) -> dict[tuple[int, str], list[tuple[int, int, np.ndarray]]]:
    """The synapse rows of every PE grouped by (source, target population): ``(source neuron, slice start,
    words)``; refuses a population whose slot sums could overflow ``int64_t``."""
    groups: dict[tuple[int, str], list[tuple[int, int, np.ndarray]]] = {}
    col = {p.name: np.zeros((2, p.size), dtype=object) for p in config.populations}  # |w| from input / populations
    for pe in config.pes:
        ptr = np.asarray(pe.row_ptr, dtype=np.int64)
        words = np.asarray(pe.words, dtype=np.uint16)
        for r in range(len(pe.row_source)):
            src = int(pe.row_source[r])
            row = words[ptr[r] : ptr[r + 1]]
            groups.setdefault((src, pe.population), []).append((int(pe.row_neuron[r]), int(pe.start), row))
            w, _, idx = decode_words(row, fmt)
            for wi, ii in zip(w.tolist(), idx.tolist()):
                col[pe.population][0 if src == 0 else 1, pe.start + ii] += abs(wi)
    # Worst case per target and slot: every input at int32 max, every population neuron spiking.
    for p in config.populations:
        worst = max((int(a) * (2**31 - 1) + int(b) for a, b in zip(col[p.name][0], col[p.name][1])), default=0)
        if worst > _INT64_MAX:
            raise ConstraintError(
                [
                    Violation(
                        "snn_sum_int64", p.name, worst, _INT64_MAX, "use fewer or smaller synapses into the population"
                    )
                ],
                device="spinnaker2 C code generation",
            )
    return groups


def _uint_type(hi: int) -> str:
    """The narrowest unsigned C type holding ``0..hi`` (``int32_t`` beyond 16 bits: table offsets stay signed)."""
    return "uint8_t" if hi <= 0xFF else "uint16_t" if hi <= 0xFFFF else "int32_t"


def _synapse_tables(config: SpiNNaker2Config, groups: dict) -> tuple[list[Constant], list[tuple[str, str, int]]]:
    """The flash tables of every synapse row: ``syn_words`` (the words), ``syn_ptr`` (row starts, R + 1),
    ``syn_base`` (the row's PE slice start) and ``syn_first`` (per block and source neuron ``j``, its first row;
    rows ordered by source population, target population, source neuron), each in the narrowest type; and the
    blocks ``(source, target, offset of the block's n_source + 1 entries in syn_first)``."""
    order = [p.name for p in config.populations]
    sizes = {"input": int(config.n_input), **{p.name: int(p.size) for p in config.populations}}
    words_all: list[np.ndarray] = []
    ptr_all, base_all, first_all = [0], [], []
    blocks: list[tuple[str, str, int]] = []
    for (src, tgt), rows in sorted(groups.items(), key=lambda kv: (kv[0][0], order.index(kv[0][1]))):
        name = config.sources[src]
        rows = sorted(rows, key=lambda row: row[0])  # by source neuron (stable: PE order within a neuron)
        starts = np.searchsorted([row[0] for row in rows], np.arange(sizes[name] + 1))
        blocks.append((name, tgt, len(first_all)))
        first_all += (starts + len(base_all)).tolist()
        for _, start, row in rows:
            words_all.append(row)
            ptr_all.append(ptr_all[-1] + row.size)
            base_all.append(start)
    if not base_all:
        return [], []
    constants = [
        Constant("syn_words", "uint16_t", np.concatenate(words_all).astype(np.int64)),
        Constant("syn_ptr", _uint_type(ptr_all[-1]), ptr_all),
        Constant("syn_base", _uint_type(max(base_all)), base_all),
        Constant("syn_first", _uint_type(len(base_all)), first_all),
    ]
    return constants, blocks


def _population_memory(
    p: Any, c: str, model: Any, opts: LIFOptions, slots: int, record: bool
) -> tuple[list[Constant], list[Buffer]]:
    """One population's float32 parameters and refractory periods (flash) and its state (RAM)."""
    arrs = p.chip_arrays()
    fields = ["threshold", "alpha", "i_offset"]
    if opts.reset == "to_v_reset":
        fields.append("v_reset")
    if model.has_current:
        fields += ["exc_decay", "inh_decay"]
    constants = [Constant(f"{c}_{f}", "float", arrs[f].astype(np.float32)) for f in fields]
    constants.append(Constant(f"{c}_t_refrac", "int32_t", arrs["t_refrac"].astype(np.int64)))
    n = int(p.size)
    buffers = [
        Buffer(f"{c}_v", "float", n),
        Buffer(f"{c}_i_exc", "float", n),
        Buffer(f"{c}_i_inh", "float", n),
        Buffer(f"{c}_refrac", "int32_t", n),
        Buffer(f"{c}_buf_exc", "int64_t", slots * n),
        Buffer(f"{c}_buf_inh", "int64_t", slots * n),
        Buffer(f"{c}_spikes", "int32_t", n),
    ]
    if record:
        buffers += [Buffer(f"{c}_i_syn", "float", n), Buffer(f"{c}_input", "int64_t", n)]
    return constants, buffers


def _word_layout(fmt: Any) -> str:
    """The bit fields of a synapse word, for a comment."""
    ib, ws = fmt.index_bits, fmt.weight_shift
    delay = f", delay bits {ib}..{fmt.inh_shift - 1}" if fmt.max_delay else ""
    tail = f"inhibitory bit {fmt.inh_shift}, |w| bits {ws}..{fmt.bits - 1}"
    return f"{fmt.bits} bits: target index bits 0..{ib - 1}{delay}, {tail}"


def _snn_step(
    config: SpiNNaker2Config, cname: dict[str, str], model: Any, opts: LIFOptions, record: bool, blocks
) -> str:
    """One tick: the slot, every population's update (update order), every block of synapse rows, the output."""
    fmt = model.word
    slots = fmt.max_delay + 2
    size = {p.name: int(p.size) for p in config.populations}
    body = [_kernel("snn_slot.c", slots=slots, max_delay=fmt.max_delay)]
    for p in config.populations:
        body.append(
            _kernel(
                "snn_population.c",
                p=cname[p.name],
                label=repr(p.name),
                n=size[p.name],
                slots=slots,
                current=bool(model.has_current),
                input_first=opts.order == "input_first",
                compare=">=" if opts.compare == ">=" else ">",
                reset_to_v_reset=opts.reset == "to_v_reset",
                record=record,
            )
        )
    sizes = {"input": int(config.n_input), **size}
    for k, src in enumerate(dict.fromkeys(b[0] for b in blocks)):  # sources in table order
        source = "x" if src == "input" else f"{cname[src]}_spikes"
        projections = [
            _kernel(
                "snn_projection.c",
                label=f"{src!r} into {tgt!r}",
                p=cname[tgt],
                n=size[tgt],
                slots=slots,
                first=first,
                source=source,
                ev=f"syn_ev{k}",
                word_layout=_word_layout(fmt),
                delays=bool(fmt.max_delay),
                index_bits=fmt.index_bits,
                delay_mask=fmt.max_delay,
                index_mask=(1 << fmt.index_bits) - 1,
                weight_shift=fmt.weight_shift,
                max_weight=fmt.max_weight,
                inh_shift=fmt.inh_shift,
            )
            for s_name, tgt, first in blocks
            if s_name == src
        ]
        body.append(
            _kernel(
                "snn_events.c",
                label=repr(src),
                n_source=sizes[src],
                source=source,
                ev=f"syn_ev{k}",
                ev_type=_uint_type(sizes[src] - 1),
                projections="\n".join(projections),
            )
        )
    body.append(_kernel("snn_output.c", p=cname[config.output], n=size[config.output]))
    return "\n".join(body)


def _emit_snn(config: SpiNNaker2Config, name: str, opts: Any, record: bool) -> Program:
    opts = _check_snn(config, opts)
    model = NEURON_MODELS[config.neuron_model]
    fmt = model.word
    slots = fmt.max_delay + 2
    pops = list(config.populations)
    cname = dict(zip([p.name for p in pops], _c_names([p.name for p in pops], _POP_SUFFIXES, _SNN_RESERVED)))
    syn_constants, blocks = _synapse_tables(config, _synapse_groups(config, fmt))
    sizes = {"input": int(config.n_input), **{p.name: int(p.size) for p in pops}}
    events = [  # one event list per source with synapses, live while its projections run
        Buffer(f"syn_ev{k}", _uint_type(sizes[src] - 1), sizes[src], "scratch", (k, k))
        for k, src in enumerate(dict.fromkeys(b[0] for b in blocks))
    ]
    constants: list[Constant] = []
    buffers: list[Buffer] = []
    for p in pops:
        pc, pb = _population_memory(p, cname[p.name], model, opts, slots, record)
        constants += pc
        buffers += pb
    buffers.append(Buffer("tick", "int64_t", 1))
    notes = (
        f"neuron model {config.neuron_model}: {fmt.bits}-bit synapse words, delays 0..{fmt.max_delay}, "
        f"{slots} ring slots",
        f"options: compare {opts.compare!r}, reset {opts.reset!r}, fma {opts.fma}, order {opts.order!r}",
        "input counts must be non-negative and within the simulator's max_input_count (then every sum is exact)",
        "recorded buffers are named <population>_<key>; pondlib.devices.spinnaker2.codegen.record_names maps "
        "simulator keys",
        f"event-driven synapse rows: the non-zero counts of each of {len(events)} source(s) gathered once per tick "
        "(scratch syn_ev<k>), then only their rows read (syn_first: the rows of each source neuron)",
    )
    return build_program(
        name,
        "spinnaker2",
        constants=constants + syn_constants,
        buffers=buffers + events,
        step_body=_snn_step(config, cname, model, opts, record, blocks),
        n_in=int(config.n_input),
        in_ctype="int32_t",
        n_out=int(next(p.size for p in pops if p.name == config.output)),
        out_ctype="int32_t",
        helpers=_kernel("mul_add_fma.c" if opts.fma else "mul_add_plain.c"),
        notes=notes,
        description="A SpiNNaker2 spiking network: the float32 per-PE LIF update of the Cortex-M4F, 16-bit synapse "
        "words and delay ring buffers, bit-identical to pondlib's SpiNNaker2Sim.",
    )


# ------------------------------------------------------------------------------------------------
# DNN
# ------------------------------------------------------------------------------------------------
def _check_dnn(config: DNNConfig, overflow: Any) -> tuple[str, bool]:
    """The overflow mode (``config.overflow`` unless given) and whether the C needs the ``overflow`` flag (an
    ``error``-mode accumulator that can leave ``acc_bits``); refuses an accumulator that could leave int64."""
    problems = config.problems()
    if problems:
        raise CodegenError(
            "invalid DNN configuration: " + "; ".join(problems),
            where="pondlib.devices.spinnaker2.codegen.emit",
            fix="build the configuration with pondlib.devices.spinnaker2.dnn_mapper",
        )
    overflow = config.overflow if overflow is None else overflow
    if not isinstance(overflow, str) or overflow not in ("error", "wrap"):
        raise CodegenError("option overflow", value=overflow, limit="'error' or 'wrap'", where="spinnaker2.emit")
    hi = (1 << (int(config.acc_bits) - 1)) - 1
    check = False
    violations = []
    for layer in config.layers:
        w = np.asarray(layer.weights, dtype=np.int64)
        b = np.asarray(layer.bias, dtype=np.int64)
        worst = 128 * np.abs(w).sum(axis=0, dtype=object) + np.abs(b).astype(object)
        wmax = int(max(worst))
        if wmax > _INT64_MAX:
            violations.append(Violation("mla_acc_int64", layer.name, wmax, _INT64_MAX, "use fewer inputs per layer"))
        if overflow == "error" and wmax > hi:
            check = True
    if violations:
        raise ConstraintError(violations, device="spinnaker2 C code generation")
    return overflow, check


def _dnn_layer(layer: Any, c: str, src: str, dst: str, acc_bits: int, overflow: str, check: bool, record: bool) -> str:
    """One layer's C (``dnn_layer.c``) reading ``src``, writing ``dst``."""
    K, N = layer.weights.shape
    lo, hi = -(1 << (acc_bits - 1)), (1 << (acc_bits - 1)) - 1
    s = int(layer.shift)
    return _kernel(
        "dnn_layer.c",
        label=repr(layer.name),
        src=src,
        dst=dst,
        k=K,
        n=N,
        w=f"{c}_w",
        b=f"{c}_b",
        shift=s,
        relu_text=str(bool(layer.relu)),
        wrap=overflow == "wrap",
        half=c_literal(1 << (acc_bits - 1), "int64_t"),
        mask=f"{(1 << acc_bits) - 1}ull",
        acc_bits=acc_bits,
        check=overflow != "wrap" and check,
        lo=c_literal(lo, "int64_t"),
        hi=c_literal(hi, "int64_t"),
        shift_nonzero=s != 0,
        relu=bool(layer.relu),
        record=record,
        acc_buf=f"{c}_acc",
    )


def _emit_dnn(config: DNNConfig, name: str, overflow: Any, record: bool) -> Program:
    overflow, check = _check_dnn(config, overflow)
    acc_bits = int(config.acc_bits)
    layers = list(config.layers)
    prefixes = _c_names([layer.name for layer in layers], _LAYER_SUFFIXES, ("overflow",))
    constants: list[Constant] = []
    buffers: list[Buffer] = [Buffer("overflow", "int32_t", 1)] if check else []
    body: list[str] = [_kernel("dnn_overflow_reset.c")] if check else []
    src = "x"
    for i, (layer, c) in enumerate(zip(layers, prefixes)):
        N = int(layer.weights.shape[1])
        constants.append(Constant(f"{c}_w", "int8_t", np.asarray(layer.weights, dtype=np.int64)))
        constants.append(Constant(f"{c}_b", "int32_t", np.asarray(layer.bias, dtype=np.int64)))
        if record:  # every layer's activations and accumulators are recorded state
            buffers += [Buffer(f"{c}_acc", "int64_t", N), Buffer(f"{c}_y", "int8_t", N)]
            dst = f"{c}_y"
        elif i == len(layers) - 1:
            dst = "y"
        else:  # live from this layer to the next: the arena alternates two regions
            dst = f"{c}_y"
            buffers.append(Buffer(dst, "int8_t", N, "scratch", (i, i + 1)))
        body.append(_dnn_layer(layer, c, src, dst, acc_bits, overflow, check, record))
        src = dst
    n_out = int(layers[-1].weights.shape[1])
    if record:
        body.append(_kernel("dnn_output.c", src=src, n=n_out))
    notes = (
        f"int8 MLA layers, int64 accumulation, acc_bits {acc_bits}, overflow {overflow!r}",
        "column tiles (worker PEs) do not change any value and are computed as one loop",
    ) + (("buffer overflow is 1 at steps where DNNSim would raise (accumulator beyond acc_bits)",) if check else ())
    return build_program(
        name,
        "spinnaker2",
        constants=constants,
        buffers=buffers,
        step_body="\n".join(body),
        n_in=int(layers[0].weights.shape[0]),
        in_ctype="int8_t",
        n_out=n_out,
        out_ctype="int8_t",
        notes=notes,
        description="SpiNNaker2 int8 MLA layers (DNN path): int8 GEMM, arithmetic-shift requantization, "
        "saturation and ReLU, bit-identical to pondlib's DNNSim.",
    )
