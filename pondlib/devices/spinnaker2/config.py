r"""SpiNNaker2 SNN configuration: synapse words, PE slices, routing entries, validated and typed.

A :class:`SpiNNaker2Config` is what the simulator (:mod:`pondlib.devices.spinnaker2.sim`) runs and
what a loader would write to the chip. It is built from a mapper
:class:`~pondlib.devices.spinnaker2.mapper.Specification` by :func:`config_from_specification`, which
encodes every synapse into a 16-bit word and every source slice into a routing entry, and checks every
field (all problems reported at once).

Synapse word (16 bits, most significant first), two formats (``docs/TARGETS.md``):

===================  ======================================================  ==============
format               fields (bits)                                           weight range
===================  ======================================================  ==============
``DELAY_WORD``       weight magnitude [15:12], inh [11], delay [10:8],         -15..15
                     target index [7:0]                                      delay 0..7
``NO_DELAY_WORD``    weight magnitude [15:9], inh [8], target index [7:0]    -127..127
===================  ======================================================  ==============

The signed weight is ``+magnitude`` (excitatory, inh bit 0) or ``-magnitude`` (inhibitory, inh bit
1); zero weights are never stored. A spike of source neuron ``j`` at tick ``t`` reaches target ``index``
of the PE's slice at tick ``t + 1 + delay``.

Synapse rows: one row per (source neuron, target PE) with at least one non-zero weight; a PE keeps
its rows back to back in ``words`` (``uint16``) with ``row_ptr`` (``R + 1`` offsets), the row's source
(``row_source``: index into ``config.sources``, 0 is the input) and source neuron (``row_neuron``).

Routing: one :class:`RoutingEntry` per source slice (an input slice or a population slice): a spike
of neuron ``n`` of the slice is a packet with key ``key | (n - start)``; the entry's ``mask`` selects
the slice, ``targets`` lists the PEs that hold rows for it. Key layout (32 bits): source id [31:16],
slice number [15:8], neuron in slice [7:0].

Example:
    >>> import numpy as np
    >>> w = encode_words(np.array([3, -15, 0]), np.array([0, 7, 2]), np.array([0, 255, 9]), DELAY_WORD)
    >>> [hex(int(v)) for v in w]
    ['0x3000', '0xffff', '0x209']
    >>> weight, delay, index = decode_words(w, DELAY_WORD)
    >>> weight.tolist(), delay.tolist(), index.tolist()
    ([3, -15, 0], [0, 7, 2], [0, 255, 9])
    >>> decode_words(encode_words(np.array([-127]), np.array([0]), np.array([4]), NO_DELAY_WORD),
    ...              NO_DELAY_WORD)[0].tolist()
    [-127]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.devices.spinnaker2.limits import SpiNNaker2Limits, get_limits
from pondlib.devices.spinnaker2.specification import (  # DELAY_WORD, NO_DELAY_WORD: the doctests
    DELAY_WORD,  # noqa: F401
    NEURON_MODELS,
    NO_DELAY_WORD,  # noqa: F401
    PARAM_MAX,
    LIFOptions,
    NeuronModel,
    NeuronParams,
    ProjectionSpec,
    Slice,
    Specification,
    SynapseFormat,
)
from pondlib.errors import ConfigError
from pondlib.validate import as_int_array, check_type

__all__ = [
    "encode_words",
    "decode_words",
    "PopulationConfig",
    "PEConfig",
    "RoutingEntry",
    "SpiNNaker2Config",
    "config_from_specification",
    "validate_config",
]


# -- synapse words ---------------------------------------------------------------------------------
def _word_field(value: Any, name: str, lo: int, hi: int, problems: list[str]) -> np.ndarray | None:
    """``value`` as int64 when every element is an integer in ``lo..hi`` (checked before the cast)."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):
        problems.append(f"synapse {name}: got a ragged nested sequence, expected an integer array")
        return None
    if arr.dtype.kind not in "biuf":
        problems.append(f"synapse {name}: got dtype {arr.dtype}, expected integers")
        return None
    flat = arr.ravel()
    if arr.dtype.kind == "f":
        finite = np.isfinite(flat)
        bad = ~finite | (flat != np.rint(np.where(finite, flat, 0.0)))
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            problems.append(
                f"synapse {name}[{i}]: got {flat[i]}, expected an integer in {lo}..{hi} "
                f"({int(bad.sum())} value(s) affected)"
            )
            return None
    bad = (flat < lo) | (flat > hi)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        problems.append(
            f"synapse {name}[{i}]: got {int(flat[i])}, expected {lo}..{hi} ({int(bad.sum())} value(s) affected)"
        )
        return None
    return arr.astype(np.int64)


def encode_words(weight: np.ndarray, delay: np.ndarray, index: np.ndarray, fmt: SynapseFormat) -> np.ndarray:
    """Pack signed weights, delays and target indices (same shape, integers) into ``uint16`` synapse words.

    Raises:
        ConfigError: any field out of its range, not an integer (NaN, 2.5, a string) or of another
            shape than the weights (every problem listed); nothing is wrapped, rounded or clipped.
    """
    if not isinstance(fmt, SynapseFormat):
        raise ConfigError(
            "fmt", value=type(fmt).__name__, limit="a SynapseFormat", fix="pass DELAY_WORD or NO_DELAY_WORD"
        )
    problems: list[str] = []
    fields = [
        _word_field(arr, name, lo, hi, problems)
        for name, arr, lo, hi in (
            ("weight", weight, -fmt.max_weight, fmt.max_weight),
            ("delay", delay, 0, fmt.max_delay),
            ("index", index, 0, (1 << fmt.index_bits) - 1),
        )
    ]
    shapes = {np.shape(f) for f in fields if f is not None}
    if len(shapes) > 1:
        problems.append(f"synapse fields: shapes {[np.shape(f) for f in fields]} differ, expected one shape")
    if problems:
        raise ConfigError(problems=problems)
    weight, delay, index = fields
    inh = (weight < 0).astype(np.int64)
    word = (np.abs(weight) << fmt.weight_shift) | (inh << fmt.inh_shift) | (delay << fmt.index_bits) | index
    return word.astype(np.uint16)


def decode_words(words: np.ndarray, fmt: SynapseFormat) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unpack ``uint16`` synapse words into (signed weight, delay, index), each ``int64``."""
    if not isinstance(fmt, SynapseFormat):
        raise ConfigError(
            "fmt", value=type(fmt).__name__, limit="a SynapseFormat", fix="pass DELAY_WORD or NO_DELAY_WORD"
        )
    w = as_int_array(
        words, "words", lo=0, hi=(1 << fmt.bits) - 1, where="decode_words", error=ConfigError, allow_empty=True
    )
    index = w & ((1 << fmt.index_bits) - 1)
    delay = (w >> fmt.index_bits) & fmt.max_delay
    inh = (w >> fmt.inh_shift) & 1
    mag = (w >> fmt.weight_shift) & fmt.max_weight
    return np.where(inh == 1, -mag, mag), delay, index


# -- configuration ---------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PopulationConfig(NeuronParams):
    """One LIF population of the configuration: float32 parameters per neuron (N,), as the M4F
    holds them (see :class:`NeuronParams`)."""


@dataclass(frozen=True, eq=False)
class PEConfig:
    """One PE: the slice ``[start, stop)`` of a population it updates, and its synapse rows."""

    pe: int  # global PE id (chip = pe // usable_pes_per_chip)
    population: str
    start: int
    stop: int
    row_source: np.ndarray  # (R,) index into config.sources
    row_neuron: np.ndarray  # (R,) source neuron id
    row_ptr: np.ndarray  # (R + 1,) offsets into words
    words: np.ndarray  # (W,) uint16 synapse words
    memory: dict[str, int] = field(default_factory=dict)  # B per region


@dataclass(frozen=True)
class RoutingEntry:
    """A routing entry: packets ``key | n`` (``n`` in the slice) go to ``targets``."""

    key: int
    mask: int
    source: str
    start: int
    stop: int
    targets: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class SpiNNaker2Config:
    """A complete SNN configuration (see the module docstring).

    ``sources[0]`` is always ``"input"`` (the ``n_input`` spike sources); ``sources[1:]`` are the
    population names in update order. ``output`` names the population whose spikes are the output.
    """

    neuron_model: str
    tick_s: float
    n_input: int
    populations: tuple[PopulationConfig, ...]
    output: str
    sources: tuple[str, ...]
    pes: tuple[PEConfig, ...]
    routing: tuple[RoutingEntry, ...]
    options: LIFOptions = LIFOptions()
    limits_name: str = "SpiNNaker2 chip"

    @property
    def model(self) -> NeuronModel:
        """The neuron model record."""
        return NEURON_MODELS[self.neuron_model]

    def population(self, name: str) -> PopulationConfig:
        """The population called ``name``."""
        for p in self.populations:
            if p.name == name:
                return p
        raise ConfigError(
            "population",
            value=name,
            limit=[p.name for p in self.populations],
            fix="use one of the population names listed",
        )

    def replace(self, **changes: Any) -> SpiNNaker2Config:
        """A new configuration with some fields replaced."""
        return dataclasses.replace(self, **changes)


_FLOAT_FIELDS = ("threshold", "alpha", "i_offset", "v_reset", "exc_decay", "inh_decay")


def _is_count(value: Any, lo: int = 0) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and int(value) >= lo


def _is_positive_number(value: Any) -> bool:
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and bool(np.isfinite(value))
        and value > 0
    )


def _population_problems(p: Any, label: str, exact_dtypes: bool) -> list[str]:
    """Problems of one population's per-neuron parameters (finite, in range, shape (size,))."""
    if not isinstance(p, NeuronParams):
        return [f"{label}: got a {type(p).__name__}, expected a {PopulationConfig.__name__}"]
    out: list[str] = []
    if not isinstance(p.name, str) or not p.name or p.name == "input":
        out.append(f"{label}.name: got {p.name!r}, expected a non-empty name other than 'input'")
    if not _is_count(p.size, 1):
        return out + [f"{p.name}.size: got {p.size!r}, expected an integer >= 1"]
    for fname in (*_FLOAT_FIELDS, "t_refrac"):
        try:
            arr = np.asarray(getattr(p, fname))
        except (ValueError, TypeError):
            out.append(f"{p.name}.{fname}: got a ragged sequence, expected ({p.size},) numbers")
            continue
        want = np.int64 if fname == "t_refrac" else np.float32
        if arr.dtype.kind not in "biuf" or arr.shape != (p.size,) or (exact_dtypes and arr.dtype != want):
            kind = np.dtype(want).name if exact_dtypes else "real"
            out.append(f"{p.name}.{fname}: got {arr.dtype} {arr.shape}, expected {kind} ({p.size},)")
            continue
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            out.append(f"{p.name}.{fname}: got a non-finite value, expected finite float32")
            continue
        if fname == "t_refrac":
            if arr.dtype.kind == "f" and np.any(arr != np.rint(arr)):
                out.append(f"{p.name}.t_refrac: got a fractional value, expected whole ticks")
            elif np.any(arr < 0) or np.any(arr > 2**31 - 1):
                out.append(f"{p.name}.t_refrac: got {arr.min()}..{arr.max()}, expected 0..{2**31 - 1} ticks")
            continue
        a64 = arr.astype(np.float64)
        if fname in ("alpha", "exc_decay", "inh_decay"):
            if np.any(a64 < 0) or np.any(a64 > 1):
                out.append(
                    f"{p.name}.{fname}: got {a64.min():g}..{a64.max():g}, expected decays in [0, 1] "
                    "(a decay above 1 grows without bound)"
                )
        elif np.any(np.abs(a64) > PARAM_MAX):
            out.append(f"{p.name}.{fname}: got |value| up to {np.abs(a64).max():.4g}, expected <= 2^64")
        elif fname == "threshold" and np.any(a64 <= 0):
            out.append(f"{p.name}.threshold: got {a64.min():g}, expected > 0 (a threshold <= 0 fires forever)")
        elif fname == "threshold" and np.any(a64.astype(np.float32) == 0):
            out.append(f"{p.name}.threshold: got a value that is 0 in float32, expected > 0")
    return out


def _pe_problems(pe: Any, fmt: SynapseFormat, sizes: dict[str, int], sources: tuple, lim: SpiNNaker2Limits) -> list:
    """Problems of one PE's slice and synapse rows (the structure the simulator relies on)."""
    if not isinstance(pe, PEConfig):
        return [f"PE: got a {type(pe).__name__}, expected a PEConfig"]
    label = f"PE {pe.pe!r}"
    if not _is_count(pe.pe):
        return [f"{label}: id expected an integer >= 0"]
    if pe.population not in sizes or pe.population == "input":
        return [f"{label}: population {pe.population!r}, expected one of {[k for k in sizes if k != 'input']}"]
    size = sizes[pe.population]
    if not (_is_count(pe.start) and _is_count(pe.stop) and pe.start < pe.stop <= size):
        return [f"{label}: slice [{pe.start!r}, {pe.stop!r}), expected 0 <= start < stop <= {size}"]
    out: list[str] = []
    n = pe.stop - pe.start
    if n > lim.neurons_per_pe or n > (1 << fmt.index_bits):
        out.append(f"{label}: slice of {n} neurons, expected <= {lim.neurons_per_pe}")
    arrays = {}
    for key in ("row_source", "row_neuron", "row_ptr", "words"):
        try:
            arr = np.asarray(getattr(pe, key))
        except (ValueError, TypeError):
            arr = np.asarray([[]])
        want = "uint16" if key == "words" else "integer"
        if arr.ndim != 1 or (key == "words" and arr.dtype != np.uint16) or arr.dtype.kind not in "iu":
            out.append(f"{label}: {key} {arr.dtype} {arr.shape}, expected a 1-D {want} array")
            return out
        arrays[key] = arr.astype(np.int64)
    src, neuron, ptr, words = arrays["row_source"], arrays["row_neuron"], arrays["row_ptr"], arrays["words"]
    n_rows = src.size
    if neuron.size != n_rows or ptr.size != n_rows + 1:
        return out + [
            f"{label}: {n_rows} row sources, {neuron.size} row neurons, {ptr.size} row pointers; "
            "expected R, R and R + 1"
        ]
    if ptr[0] != 0 or ptr[-1] != words.size or np.any(np.diff(ptr) < 0):
        return out + [f"{label}: row_ptr {ptr[:3].tolist()}...{ptr[-1]}, expected 0 ... {words.size}, non-decreasing"]
    if n_rows and (src.min() < 0 or src.max() >= len(sources)):
        return out + [f"{label}: row_source outside 0..{len(sources) - 1}"]
    limit = np.array([sizes[sources[k]] for k in src], dtype=np.int64)
    bad_rows = np.flatnonzero((neuron < 0) | (neuron >= limit))
    if bad_rows.size:
        r = int(bad_rows[0])
        return out + [f"{label}: row {r} reads neuron {int(neuron[r])} of {sources[src[r]]!r}, out of range"]
    lengths = np.diff(ptr)
    if lengths.size and int(lengths.max()) > lim.max_row_words:
        out.append(f"{label}: synapse row of {int(lengths.max())} words, expected <= {lim.max_row_words}")
    _, _, index = decode_words(words.astype(np.uint16), fmt)
    if index.size and int(index.max()) >= n:
        out.append(f"{label}: target index {int(index.max())}, expected < {n} (slice size)")
    if not isinstance(pe.memory, dict) or not all(_is_count(v) for v in pe.memory.values()):
        out.append(f"{label}: memory {pe.memory!r}, expected a dict of byte counts")
    elif sum(pe.memory.values()) > lim.snn_data_bytes:
        out.append(f"{label}: {sum(pe.memory.values())} B of data, expected <= {lim.snn_data_bytes} B")
    return out


def validate_config(config: SpiNNaker2Config, limits: SpiNNaker2Limits | str | None = None) -> list[str]:
    """Every problem of ``config`` as a message (empty when valid).

    Beyond the chip's limits this checks everything the simulator relies on: field types, finite
    float32 parameters of shape (N,) with decays in [0, 1], thresholds in (0, 2^64] and offsets within
    2^64 (:data:`PARAM_MAX`), non-negative refractory ticks, PE slices inside their population, row
    pointers, row sources and neurons in range, uint16 words whose target index lies in the slice.
    """
    if not isinstance(config, SpiNNaker2Config):
        return [f"config: got a {type(config).__name__}, expected a SpiNNaker2Config"]
    try:
        lim = get_limits(limits if limits is not None else _limits_by_name(config.limits_name))
    except ConfigError as err:
        return [str(err)]
    if not isinstance(config.neuron_model, str) or config.neuron_model not in NEURON_MODELS:
        return [f"neuron_model: got {config.neuron_model!r}, expected one of {sorted(NEURON_MODELS)}"]
    fmt = NEURON_MODELS[config.neuron_model].word
    problems: list[str] = []
    if isinstance(config.options, LIFOptions):
        problems += config.options.problems()
    else:
        problems.append(f"options: got a {type(config.options).__name__}, expected LIFOptions")
    if not _is_positive_number(config.tick_s):
        problems.append(f"tick_s: got {config.tick_s!r}, expected a positive number of seconds")
    if not _is_count(config.n_input, 1):
        problems.append(f"n_input: got {config.n_input!r}, expected an integer >= 1")
    pops = tuple(config.populations) if isinstance(config.populations, (tuple, list)) else ()
    for i, p in enumerate(pops):
        problems += _population_problems(p, f"populations[{i}]", exact_dtypes=True)
    usable = all(isinstance(p, NeuronParams) and isinstance(p.name, str) and _is_count(p.size, 1) for p in pops)
    names = [p.name for p in pops if isinstance(p, NeuronParams)]
    if not pops or len(set(names)) != len(names):
        problems.append(f"populations: got names {names}, expected at least one, each once")
        usable = False
    if config.output not in names:
        problems.append(f"output: got {config.output!r}, expected one of {names}")
    sources = tuple(config.sources) if isinstance(config.sources, (tuple, list)) else None
    if sources != ("input", *names):
        problems.append(f"sources: got {config.sources!r}, expected {['input', *names]}")
        usable = False
    if not usable or not _is_count(config.n_input, 1):
        return problems  # the PEs cannot be checked against populations that are not there
    if not isinstance(config.pes, (tuple, list)):
        return [f"pes: got a {type(config.pes).__name__}, expected a tuple of PEConfig"]
    if len(config.pes) > lim.usable_pes:
        problems.append(f"PEs used: got {len(config.pes)}, expected <= {lim.usable_pes}")
    sizes = {"input": config.n_input, **{p.name: p.size for p in pops}}
    for pe in config.pes:
        problems += _pe_problems(pe, fmt, sizes, sources, lim)
    return problems


def _limits_by_name(name: str) -> SpiNNaker2Limits:
    from pondlib.devices.spinnaker2.limits import LIMITS

    for lim in LIMITS.values():
        if lim.name == name:
            return lim
    return get_limits(None)


def _spec_problems(spec: Specification) -> list[str]:
    """Structural problems of a (possibly hand-built) specification: what encoding relies on."""
    if not isinstance(spec.neuron_model, str) or spec.neuron_model not in NEURON_MODELS:
        return [f"neuron_model: got {spec.neuron_model!r}, expected one of {sorted(NEURON_MODELS)}"]
    problems: list[str] = []
    if not isinstance(spec.options, LIFOptions):
        problems.append(f"options: got a {type(spec.options).__name__}, expected LIFOptions")
    if not isinstance(spec.limits_name, str):
        problems.append(f"limits_name: got a {type(spec.limits_name).__name__}, expected a str")
    if not _is_positive_number(spec.tick_s):
        problems.append(f"tick_s: got {spec.tick_s!r}, expected a positive number of seconds")
    if not _is_count(spec.n_input, 1):
        problems.append(f"n_input: got {spec.n_input!r}, expected an integer >= 1")
    seqs = {k: getattr(spec, k) for k in ("populations", "projections", "slices", "input_slices")}
    for key, seq in seqs.items():
        if not isinstance(seq, (tuple, list)):
            problems.append(f"{key}: got a {type(seq).__name__}, expected a tuple")
    if not isinstance(spec.memory, dict):
        problems.append(f"memory: got a {type(spec.memory).__name__}, expected a dict PE -> bytes per region")
    if problems:
        return problems
    for i, p in enumerate(spec.populations):
        problems += _population_problems(p, f"populations[{i}]", exact_dtypes=False)
    if problems:
        return problems
    sizes = {"input": int(spec.n_input), **{p.name: int(p.size) for p in spec.populations}}
    if len(sizes) != len(spec.populations) + 1:
        problems.append(f"populations: names {[p.name for p in spec.populations]} are not unique")
    if spec.output not in sizes or spec.output == "input":
        problems.append(f"output: got {spec.output!r}, expected one of {[p.name for p in spec.populations]}")
    for pr in spec.projections:
        if not isinstance(pr, ProjectionSpec):
            problems.append(f"projection: got a {type(pr).__name__}, expected a ProjectionSpec")
            continue
        if pr.pre not in sizes or pr.post not in sizes or pr.post == "input":
            problems.append(f"{pr.name}: pre {pr.pre!r} -> post {pr.post!r}, expected known sources and populations")
            continue
        shape = (sizes[pr.pre], sizes[pr.post])
        for key in ("weights", "delays"):
            try:
                arr = np.asarray(getattr(pr, key))
            except (ValueError, TypeError):
                arr = np.asarray("ragged")
            if arr.dtype.kind not in "biuf" or arr.shape != shape:
                problems.append(f"{pr.name}.{key}: got {arr.dtype} {arr.shape}, expected integers of shape {shape}")
            elif arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
                problems.append(f"{pr.name}.{key}: got a non-finite value, expected integers")
    for key in ("slices", "input_slices"):
        for sl in getattr(spec, key):
            if not isinstance(sl, Slice):
                problems.append(f"{key}: got a {type(sl).__name__}, expected a Slice")
                continue
            ok_pop = sl.population == "input" if key == "input_slices" else sl.population in sizes
            size = sizes.get(sl.population, 0)
            if not (ok_pop and _is_count(sl.pe) and _is_count(sl.start) and _is_count(sl.stop)):
                problems.append(f"{key}: {sl}, expected a known population and integer bounds")
            elif not (sl.start < sl.stop <= size) or (key == "slices" and sl.population == "input"):
                problems.append(f"{key}: {sl.population}[{sl.start}:{sl.stop}], expected 0 <= start < stop <= {size}")
    return problems


def _encode_pe(
    sl: Slice,
    spec: Specification,
    model: NeuronModel,
    src_id: dict[str, int],
    targets_of: dict[tuple[str, int], list[int]],
    problems: list[str],
) -> PEConfig:
    """The synapse rows of one slice's PE: one row per source neuron with a non-zero weight into the
    slice (projections in order, neurons ascending, targets ascending within a row), encoded in the
    model's word. Records in ``targets_of`` (source, slice start) -> PEs that the source slice sends to;
    a row that cannot be encoded is left out and its problems appended to ``problems``."""
    rows_src, rows_neuron, ptr, words = [], [], [0], []
    for proj in spec.projections_into(sl.population):
        w = proj.weights[:, sl.start : sl.stop]
        d = proj.delays[:, sl.start : sl.stop]
        for j in np.flatnonzero(np.any(w != 0, axis=1)):
            idx = np.flatnonzero(w[j] != 0)
            try:
                row = encode_words(w[j, idx], d[j, idx], idx, model.word)
            except ConfigError as err:
                problems += [f"{proj.name} row {int(j)} -> PE {sl.pe}: {p}" for p in err.problems]
                continue
            rows_src.append(src_id[proj.pre])
            rows_neuron.append(int(j))
            words.append(row)
            ptr.append(ptr[-1] + row.size)
            for src_sl in spec.source_slices(proj.pre):
                if src_sl.start <= j < src_sl.stop:
                    targets_of.setdefault((proj.pre, src_sl.start), [])
                    if sl.pe not in targets_of[(proj.pre, src_sl.start)]:
                        targets_of[(proj.pre, src_sl.start)].append(sl.pe)
    return PEConfig(
        pe=sl.pe,
        population=sl.population,
        start=sl.start,
        stop=sl.stop,
        row_source=np.asarray(rows_src, dtype=np.int64),
        row_neuron=np.asarray(rows_neuron, np.int64),
        row_ptr=np.asarray(ptr, dtype=np.int64),
        words=np.concatenate(words) if words else np.zeros(0, np.uint16),
        memory=dict(spec.memory.get(sl.pe, {})),
    )


def _routing(
    spec: Specification,
    sources: tuple[str, ...],
    src_id: dict[str, int],
    targets_of: dict[tuple[str, int], list[int]],
) -> list[RoutingEntry]:
    """One routing entry per source slice (sources in order): key ``source id << 16 | slice << 8``, mask
    ``0xFFFFFF00`` (the low byte is the neuron), and the PEs it sends to, ascending."""
    routing = []
    for name in sources:
        for k, s in enumerate(spec.source_slices(name)):
            routing.append(
                RoutingEntry(
                    key=(src_id[name] << 16) | (k << 8),
                    mask=0xFFFFFF00,
                    source=name,
                    start=s.start,
                    stop=s.stop,
                    targets=tuple(sorted(targets_of.get((name, s.start), []))),
                )
            )
    return routing


def config_from_specification(
    spec: Specification, options: LIFOptions | None = None
) -> tuple[SpiNNaker2Config | None, bool, str]:
    """Encode a mapper specification into a configuration: ``(config, is_valid, message)``.

    Every synapse becomes a word of the model's format; each PE gets the rows of every source neuron
    with a non-zero weight into its slice (source order: input, then populations; neurons ascending;
    targets ascending within a row); each source slice gets a routing entry. ``message`` is
    ``"valid"`` or lists every problem; when a field cannot be encoded (a weight outside the word, a
    hand-built specification with NaN parameters, mismatched shapes or unknown names) the configuration
    is None.

    Raises:
        ConfigError: ``spec`` is not a :class:`Specification` or ``options`` not :class:`LIFOptions`.

    Example:
        >>> import numpy as np
        >>> from pondlib import nn
        >>> from pondlib.devices.spinnaker2.mapper import mapper
        >>> net = nn.Sequential(nn.Linear(3, 2, weight=np.array([[1.0, -0.5], [0.2, 0.0], [0.0, 1.0]])),
        ...                     nn.LIF(2))
        >>> config, ok, message = config_from_specification(mapper(net))
        >>> ok, message, len(config.pes), [hex(int(w)) for w in config.pes[0].words]
        (True, 'valid', 1, ['0xf000', '0x8801', '0x3000', '0xf001'])
    """
    check_type(
        spec,
        "spec",
        Specification,
        where="config_from_specification",
        error=ConfigError,
        fix="map the network with pondlib.devices.spinnaker2.mapper first",
    )
    if options is not None:
        check_type(options, "options", LIFOptions, where="config_from_specification", error=ConfigError)
    problems = _spec_problems(spec)
    if problems:
        return None, False, ConfigError(problems=problems).args[0]
    lim = get_limits(_limits_by_name(spec.limits_name))
    model = NEURON_MODELS[spec.neuron_model]
    opts = spec.options if options is None else options
    sources = ("input", *[p.name for p in spec.populations])
    src_id = {s: i for i, s in enumerate(sources)}
    sizes = {"input": spec.n_input, **{p.name: p.size for p in spec.populations}}
    targets_of: dict[tuple[str, int], list[int]] = {}
    pes = [_encode_pe(sl, spec, model, src_id, targets_of, problems) for sl in spec.slices]
    routing = _routing(spec, sources, src_id, targets_of)
    if problems:
        return None, False, ConfigError(problems=problems).args[0]
    pops = tuple(PopulationConfig(name=p.name, size=p.size, **p.chip_arrays()) for p in spec.populations)
    config = SpiNNaker2Config(
        neuron_model=spec.neuron_model,
        tick_s=spec.tick_s,
        n_input=sizes["input"],
        populations=pops,
        output=spec.output,
        sources=sources,
        pes=tuple(pes),
        routing=tuple(routing),
        options=opts,
        limits_name=lim.name,
    )
    problems = validate_config(config, lim)
    if problems:
        return config, False, ConfigError(problems=problems).args[0]
    return config, True, "valid"
