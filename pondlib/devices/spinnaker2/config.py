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
from typing import TYPE_CHECKING, Any

import numpy as np

from pondlib.devices.spinnaker2.limits import SpiNNaker2Limits, get_limits
from pondlib.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from pondlib.devices.spinnaker2.mapper import Specification

__all__ = [
    "SynapseFormat", "DELAY_WORD", "NO_DELAY_WORD", "NeuronModel", "NEURON_MODELS", "LIFOptions",
    "encode_words", "decode_words", "PopulationConfig", "PEConfig", "RoutingEntry", "SpiNNaker2Config",
    "config_from_specification", "validate_config",
]


# -- synapse words ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SynapseFormat:
    """Bit layout of a 16-bit synapse word: ``[magnitude | inh | delay | index]`` from the top bit."""

    name: str
    weight_bits: int       # magnitude bits (the sign is the inh bit)
    delay_bits: int        # 0: no delay field (delay is always 0)
    index_bits: int = 8    # target neuron within the PE slice

    @property
    def max_weight(self) -> int:
        """Largest weight magnitude."""
        return (1 << self.weight_bits) - 1

    @property
    def max_delay(self) -> int:
        """Largest delay in ticks."""
        return (1 << self.delay_bits) - 1

    @property
    def inh_shift(self) -> int:
        return self.index_bits + self.delay_bits

    @property
    def weight_shift(self) -> int:
        return self.inh_shift + 1

    @property
    def bits(self) -> int:
        """Word width (16 for both formats)."""
        return self.weight_shift + self.weight_bits


DELAY_WORD = SynapseFormat("delay", weight_bits=4, delay_bits=3)
NO_DELAY_WORD = SynapseFormat("no_delay", weight_bits=7, delay_bits=0)


def encode_words(weight: np.ndarray, delay: np.ndarray, index: np.ndarray, fmt: SynapseFormat) -> np.ndarray:
    """Pack signed weights, delays and target indices into ``uint16`` synapse words.

    Raises:
        ConfigError: any field out of its range (every problem listed); nothing is wrapped or clipped.
    """
    weight = np.asarray(weight, dtype=np.int64)
    delay = np.asarray(delay, dtype=np.int64)
    index = np.asarray(index, dtype=np.int64)
    problems = []
    for name, arr, lo, hi in (("weight", weight, -fmt.max_weight, fmt.max_weight),
                              ("delay", delay, 0, fmt.max_delay),
                              ("index", index, 0, (1 << fmt.index_bits) - 1)):
        bad = (arr < lo) | (arr > hi)
        if np.any(bad):
            i = int(np.flatnonzero(bad.ravel())[0])
            problems.append(f"synapse {name}[{i}]: got {int(arr.ravel()[i])}, expected {lo}..{hi} "
                            f"({int(bad.sum())} value(s) affected)")
    if problems:
        raise ConfigError(problems=problems)
    inh = (weight < 0).astype(np.int64)
    word = ((np.abs(weight) << fmt.weight_shift) | (inh << fmt.inh_shift) | (delay << fmt.index_bits)
            | index)
    return word.astype(np.uint16)


def decode_words(words: np.ndarray, fmt: SynapseFormat) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unpack ``uint16`` synapse words into (signed weight, delay, index), each ``int64``."""
    w = np.asarray(words).astype(np.int64)
    index = w & ((1 << fmt.index_bits) - 1)
    delay = (w >> fmt.index_bits) & fmt.max_delay
    inh = (w >> fmt.inh_shift) & 1
    mag = (w >> fmt.weight_shift) & fmt.max_weight
    return np.where(inh == 1, -mag, mag), delay, index


# -- neuron models and options ---------------------------------------------------------------------
@dataclass(frozen=True)
class NeuronModel:
    """A SpiNNaker2 neuron model: its synapse word and whether it has decaying currents."""

    name: str
    word: SynapseFormat
    has_current: bool      # lif_curr_exp: exc/inh currents decaying by exc_decay / inh_decay
    params_bytes: int      # B of parameters + state per neuron in PE SRAM (float32 words)


NEURON_MODELS: dict[str, NeuronModel] = {
    # lif: threshold, alpha_decay, i_offset, v_reset + v            = 5 words
    "lif": NeuronModel("lif", DELAY_WORD, False, 20),
    "lif_no_delay": NeuronModel("lif_no_delay", NO_DELAY_WORD, False, 20),
    # lif_curr_exp: + exc_decay, inh_decay, t_refrac + i_exc, i_inh, refractory counter = 11 words
    "lif_curr_exp": NeuronModel("lif_curr_exp", DELAY_WORD, True, 44),
    "lif_curr_exp_no_delay": NeuronModel("lif_curr_exp_no_delay", NO_DELAY_WORD, True, 44),
}


@dataclass(frozen=True)
class LIFOptions:
    """The uncertain choices of the float32 neuron update, as options (defaults first).

    Attributes:
        compare: ``">"`` (default) spikes when ``v > threshold``; ``">="`` when ``v >= threshold``.
        reset: ``"subtract"`` (default): ``v -= threshold``; ``"to_v_reset"``: ``v = v_reset``.
        fma: False (default): round to float32 after every multiply and add; True: the decay and the
            first addend are one fused multiply-add (``fmaf``, a single rounding).
        order: ``"offset_first"`` (default): ``(alpha v + i_offset) + I``; ``"input_first"``:
            ``(alpha v + I) + i_offset``.
    """

    compare: str = ">"
    reset: str = "subtract"
    fma: bool = False
    order: str = "offset_first"

    def problems(self) -> list[str]:
        """Every out-of-range option, as messages (empty when valid)."""
        out = []
        for name, allowed in (("compare", (">", ">=")), ("reset", ("subtract", "to_v_reset")),
                              ("order", ("offset_first", "input_first")), ("fma", (False, True))):
            if getattr(self, name) not in allowed:
                out.append(f"option {name}: got {getattr(self, name)!r}, expected one of {list(allowed)}")
        return out


# -- configuration ---------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class NeuronParams:
    """The neuron parameters of one LIF population, per neuron (N,), shared by the mapper's
    specification and the configuration.

    ``alpha`` is ``alpha_decay`` (membrane decay per tick), ``exc_decay`` / ``inh_decay`` the current
    decays (``lif_curr_exp``; ignored by ``lif``), ``t_refrac`` the refractory ticks (int).
    """

    name: str
    size: int
    threshold: np.ndarray
    alpha: np.ndarray
    i_offset: np.ndarray
    v_reset: np.ndarray
    exc_decay: np.ndarray
    inh_decay: np.ndarray
    t_refrac: np.ndarray

    #: per-neuron fields and the dtype the M4F holds them in (float32 on its FPU, int tick counters)
    ARRAY_DTYPES = {"threshold": np.float32, "alpha": np.float32, "i_offset": np.float32,
                    "v_reset": np.float32, "exc_decay": np.float32, "inh_decay": np.float32,
                    "t_refrac": np.int64}

    def chip_arrays(self) -> dict[str, np.ndarray]:
        """The per-neuron arrays cast to the chip's dtypes (copies)."""
        return {f: np.array(getattr(self, f), dtype=dt) for f, dt in self.ARRAY_DTYPES.items()}


@dataclass(frozen=True, eq=False)
class PopulationConfig(NeuronParams):
    """One LIF population of the configuration: float32 parameters per neuron (N,), as the M4F
    holds them (see :class:`NeuronParams`)."""


@dataclass(frozen=True, eq=False)
class PEConfig:
    """One PE: the slice ``[start, stop)`` of a population it updates, and its synapse rows."""

    pe: int                     # global PE id (chip = pe // usable_pes_per_chip)
    population: str
    start: int
    stop: int
    row_source: np.ndarray      # (R,) index into config.sources
    row_neuron: np.ndarray      # (R,) source neuron id
    row_ptr: np.ndarray         # (R + 1,) offsets into words
    words: np.ndarray           # (W,) uint16 synapse words
    memory: dict[str, int] = field(default_factory=dict)   # B per region


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
        raise ConfigError("population", value=name, limit=[p.name for p in self.populations],
                          fix="use one of the population names listed")

    def replace(self, **changes: Any) -> "SpiNNaker2Config":
        """A new configuration with some fields replaced."""
        return dataclasses.replace(self, **changes)


def validate_config(config: SpiNNaker2Config, limits: SpiNNaker2Limits | str | None = None) -> list[str]:
    """Every problem of ``config`` as a message (empty when valid)."""
    lim = get_limits(limits if limits is not None else _limits_by_name(config.limits_name))
    problems: list[str] = []
    if config.neuron_model not in NEURON_MODELS:
        return [f"neuron_model: got {config.neuron_model!r}, expected one of {sorted(NEURON_MODELS)}"]
    fmt = NEURON_MODELS[config.neuron_model].word
    problems += config.options.problems()
    if not (np.isfinite(config.tick_s) and config.tick_s > 0):
        problems.append(f"tick_s: got {config.tick_s}, expected a positive number of seconds")
    names = [p.name for p in config.populations]
    if config.output not in names:
        problems.append(f"output: got {config.output!r}, expected one of {names}")
    if tuple(config.sources) != ("input", *names):
        problems.append(f"sources: got {list(config.sources)}, expected {['input', *names]}")
    for p in config.populations:
        for fname in ("threshold", "alpha", "i_offset", "v_reset", "exc_decay", "inh_decay"):
            arr = getattr(p, fname)
            if arr.shape != (p.size,) or arr.dtype != np.float32:
                problems.append(f"{p.name}.{fname}: got {arr.dtype} {arr.shape}, expected float32 ({p.size},)")
            elif not np.all(np.isfinite(arr)):
                problems.append(f"{p.name}.{fname}: got a non-finite value, expected finite float32")
        if np.any(np.asarray(p.t_refrac) < 0):
            problems.append(f"{p.name}.t_refrac: got a negative value, expected >= 0 ticks")
    if len(config.pes) > lim.usable_pes:
        problems.append(f"PEs used: got {len(config.pes)}, expected <= {lim.usable_pes}")
    for pe in config.pes:
        n = pe.stop - pe.start
        if n > lim.neurons_per_pe or n > (1 << fmt.index_bits):
            problems.append(f"PE {pe.pe}: slice of {n} neurons, expected <= {lim.neurons_per_pe}")
        lengths = np.diff(pe.row_ptr)
        if lengths.size and int(lengths.max()) > lim.max_row_words:
            problems.append(f"PE {pe.pe}: synapse row of {int(lengths.max())} words, expected "
                            f"<= {lim.max_row_words}")
        if pe.words.dtype != np.uint16:
            problems.append(f"PE {pe.pe}: words dtype {pe.words.dtype}, expected uint16")
        _, delay, index = decode_words(pe.words, fmt)
        if index.size and int(index.max()) >= n:
            problems.append(f"PE {pe.pe}: target index {int(index.max())}, expected < {n} (slice size)")
        total = sum(pe.memory.values())
        if total > lim.snn_data_bytes:
            problems.append(f"PE {pe.pe}: {total} B of data, expected <= {lim.snn_data_bytes} B")
    return problems


def _limits_by_name(name: str) -> SpiNNaker2Limits:
    from pondlib.devices.spinnaker2.limits import LIMITS
    for lim in LIMITS.values():
        if lim.name == name:
            return lim
    return get_limits(None)


def config_from_specification(spec: "Specification", options: LIFOptions | None = None
                              ) -> tuple[SpiNNaker2Config | None, bool, str]:
    """Encode a mapper specification into a configuration: ``(config, is_valid, message)``.

    Every synapse becomes a word of the model's format; each PE gets the rows of every source neuron
    with a non-zero weight into its slice (source order: input, then populations; neurons ascending;
    targets ascending within a row); each source slice gets a routing entry. ``message`` is
    ``"valid"`` or lists every problem; when a field cannot be encoded the configuration is None.

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
    lim = get_limits(_limits_by_name(spec.limits_name))
    model = NEURON_MODELS.get(spec.neuron_model)
    if model is None:
        return None, False, (f"neuron_model: got {spec.neuron_model!r}, expected one of "
                             f"{sorted(NEURON_MODELS)}")
    opts = spec.options if options is None else options
    sources = ("input", *[p.name for p in spec.populations])
    src_id = {s: i for i, s in enumerate(sources)}
    sizes = {"input": spec.n_input, **{p.name: p.size for p in spec.populations}}
    problems: list[str] = []
    pes: list[PEConfig] = []
    targets_of: dict[tuple[str, int], list[int]] = {}
    for sl in spec.slices:
        rows_src, rows_neuron, ptr, words = [], [], [0], []
        for proj in spec.projections_into(sl.population):
            w = proj.weights[:, sl.start:sl.stop]
            d = proj.delays[:, sl.start:sl.stop]
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
        pes.append(PEConfig(
            pe=sl.pe, population=sl.population, start=sl.start, stop=sl.stop,
            row_source=np.asarray(rows_src, dtype=np.int64), row_neuron=np.asarray(rows_neuron, np.int64),
            row_ptr=np.asarray(ptr, dtype=np.int64),
            words=np.concatenate(words) if words else np.zeros(0, np.uint16),
            memory=dict(spec.memory.get(sl.pe, {}))))
    routing = []
    for name in sources:
        for k, s in enumerate(spec.source_slices(name)):
            key = (src_id[name] << 16) | (k << 8)
            routing.append(RoutingEntry(key=key, mask=0xFFFFFF00, source=name, start=s.start, stop=s.stop,
                                        targets=tuple(sorted(targets_of.get((name, s.start), [])))))
    if problems:
        return None, False, ConfigError(problems=problems).args[0]
    pops = tuple(PopulationConfig(name=p.name, size=p.size, **p.chip_arrays()) for p in spec.populations)
    config = SpiNNaker2Config(neuron_model=spec.neuron_model, tick_s=spec.tick_s, n_input=sizes["input"],
                              populations=pops, output=spec.output, sources=sources, pes=tuple(pes),
                              routing=tuple(routing), options=opts, limits_name=lim.name)
    problems = validate_config(config, lim)
    if problems:
        return config, False, ConfigError(problems=problems).args[0]
    return config, True, "valid"
