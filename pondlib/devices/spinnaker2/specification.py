r"""SpiNNaker2 SNN specification: what the mapper produces and the configuration is built from.

The types here are shared by :mod:`~pondlib.devices.spinnaker2.mapper` (which fills them) and
:mod:`~pondlib.devices.spinnaker2.config` (which encodes them into synapse words and routing entries):

* :class:`SynapseFormat` and the two 16-bit words :data:`DELAY_WORD` (4-bit magnitude, 3-bit delay)
  and :data:`NO_DELAY_WORD` (7-bit magnitude), see :mod:`~pondlib.devices.spinnaker2.config` for the
  bit layout;
* :class:`NeuronModel` / :data:`NEURON_MODELS` (which word, whether the model has synaptic currents,
  bytes of parameters and state per neuron) and :class:`LIFOptions` (the uncertain choices of the
  float32 update);
* :class:`NeuronParams` (per-neuron float32 parameters, chip units), :class:`PopulationSpec`,
  :class:`ProjectionSpec` (integer weights ``[pre, post]`` and delays in ticks), :class:`Slice`
  (neurons ``[start, stop)`` on one PE), :class:`MappingReport` and :class:`Specification`.

Example:
    >>> NEURON_MODELS["lif_curr_exp_no_delay"].word.max_weight, DELAY_WORD.max_delay, DELAY_WORD.bits
    (127, 7, 16)
    >>> LIFOptions(compare=">=").problems(), LIFOptions(order="later").problems()
    ([], ["option order: got 'later', expected one of ['offset_first', 'input_first']"])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pondlib.errors import Violation

__all__ = [
    "SynapseFormat",
    "DELAY_WORD",
    "NO_DELAY_WORD",
    "NeuronModel",
    "NEURON_MODELS",
    "LIFOptions",
    "NeuronParams",
    "PopulationSpec",
    "ProjectionSpec",
    "Slice",
    "MappingReport",
    "Specification",
    "DeadlineWarning",
    "PARAM_MAX",
]

#: Largest magnitude of a float32 neuron parameter (threshold, i_offset, v_reset): 2^64. With decays in
#: [0, 1] and synaptic input below 2^53 per tick, no membrane can overflow float32 in a feasible run.
PARAM_MAX = 2.0**64


# -- synapse word formats -----------------------------------------------------------------------------
@dataclass(frozen=True)
class SynapseFormat:
    """Bit layout of a 16-bit synapse word: ``[magnitude | inh | delay | index]`` from the top bit."""

    name: str
    weight_bits: int  # magnitude bits (the sign is the inh bit)
    delay_bits: int  # 0: no delay field (delay is always 0)
    index_bits: int = 8  # target neuron within the PE slice

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


# -- neuron models and options ---------------------------------------------------------------------
@dataclass(frozen=True)
class NeuronModel:
    """A SpiNNaker2 neuron model: its synapse word and whether it has decaying currents."""

    name: str
    word: SynapseFormat
    has_current: bool  # lif_curr_exp: exc/inh currents decaying by exc_decay / inh_decay
    params_bytes: int  # B of parameters + state per neuron in PE SRAM (float32 words)


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
        for name, allowed in (
            ("compare", (">", ">=")),
            ("reset", ("subtract", "to_v_reset")),
            ("order", ("offset_first", "input_first")),
            ("fma", (False, True)),
        ):
            value = getattr(self, name)
            if not any(_same(value, a) for a in allowed):
                out.append(f"option {name}: got {value!r}, expected one of {list(allowed)}")
        return out


def _same(value: object, allowed: object) -> bool:
    """``value == allowed`` of the same kind: ``"False"`` or ``0`` is never the bool ``False``."""
    if isinstance(allowed, bool):
        return isinstance(value, (bool, np.bool_)) and bool(value) is allowed
    return type(value) is type(allowed) and value == allowed


# -- neuron parameters -----------------------------------------------------------------------------
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
    ARRAY_DTYPES = {
        "threshold": np.float32,
        "alpha": np.float32,
        "i_offset": np.float32,
        "v_reset": np.float32,
        "exc_decay": np.float32,
        "inh_decay": np.float32,
        "t_refrac": np.int64,
    }

    def chip_arrays(self) -> dict[str, np.ndarray]:
        """The per-neuron arrays cast to the chip's dtypes (copies)."""
        return {f: np.array(getattr(self, f), dtype=dt) for f, dt in self.ARRAY_DTYPES.items()}


# -- the mapper's output ---------------------------------------------------------------------------
class DeadlineWarning(RuntimeWarning):
    """The expected per-tick work of a PE exceeds the tick: the chip would run late."""


@dataclass(frozen=True, eq=False)
class PopulationSpec(NeuronParams):
    """A population in chip units: float32 parameters (N,) (:class:`NeuronParams`), and the weight
    scale ``s`` used."""

    scale: float


@dataclass(frozen=True, eq=False)
class ProjectionSpec:
    """Integer weights ``[pre, post]`` (N_pre, N_post) and delays (ticks) of one weight layer."""

    name: str
    pre: str  # "input" or a population name
    post: str
    weights: np.ndarray
    delays: np.ndarray
    weights_float: np.ndarray  # the folded float weights (before scaling), for error reports


@dataclass(frozen=True)
class Slice:
    """Neurons ``[start, stop)`` of a population (or of the input) placed on PE ``pe``."""

    population: str
    start: int
    stop: int
    pe: int


@dataclass(frozen=True)
class MappingReport:
    """What the mapper did.

    Attributes:
        scales: population -> weight scale ``s`` (chip units per float unit).
        quantization_error: projection -> relative error ``||W_int / s - W|| / ||W||``.
        max_abs_error: projection -> largest ``|W_int / s - W|`` (float units).
        zeroed: projection -> number of non-zero float weights that rounded to 0.
        pes_used: PEs of the mapping (inputs included).
        cycles_per_tick: PE -> expected cycles per tick at ``spike_rate``.
        warnings: violations of :data:`WARNINGS` (not errors).
        notes: remarks (dropped dynamics, spike caps the chip does not have).
        chips: chips the slices are spread over; chip_of_pe: PE -> chip (``pe // usable_pes_per_chip``).
        hop_latency_s: PE -> latency (s) of the spikes it receives from the farthest other chip (PEs that
            receive from another chip only); within the tick, so spikes still arrive at ``t + 1 + delay``.
    """

    scales: dict[str, float] = field(default_factory=dict)
    quantization_error: dict[str, float] = field(default_factory=dict)
    max_abs_error: dict[str, float] = field(default_factory=dict)
    zeroed: dict[str, int] = field(default_factory=dict)
    pes_used: int = 0
    cycles_per_tick: dict[int, float] = field(default_factory=dict)
    warnings: tuple[Violation, ...] = ()
    notes: tuple[str, ...] = ()
    chips: int = 1
    chip_of_pe: dict[int, int] = field(default_factory=dict)
    hop_latency_s: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Specification:
    """A SpiNNaker2 SNN mapping: populations, integer projections, placement and memory per PE."""

    neuron_model: str
    tick_s: float
    n_input: int
    populations: tuple[PopulationSpec, ...]
    projections: tuple[ProjectionSpec, ...]
    output: str
    slices: tuple[Slice, ...]
    input_slices: tuple[Slice, ...]
    memory: dict[int, dict[str, int]]
    options: LIFOptions = LIFOptions()
    limits_name: str = "SpiNNaker2 chip"
    report: MappingReport = MappingReport()

    @property
    def latency_ticks(self) -> int:
        r"""Ticks from an input spike to the earliest output spike it can cause: the longest feed-forward
        path from the input to the output population, each projection counting one tick for the hop
        plus its largest synapse delay, :math:`\sum_{hops} (1 + \max d)`.

        The output of the last ``latency_ticks`` input steps arrives after the input ends: run the chip on
        ``append_silence(x, spec.latency_ticks)`` (:func:`pondlib.devices.core.append_silence`) to count
        it. Recurrent projections (a population onto itself) do not lengthen the path.
        """
        depth = {"input": 0}
        for p in self.projections:  # mapping order is topological for feed-forward projections
            if p.pre != p.post and p.pre in depth:
                d = 1 + (int(np.max(p.delays)) if np.size(p.delays) else 0)
                depth[p.post] = max(depth.get(p.post, 0), depth[p.pre] + d)
        return depth.get(self.output, 0)

    def projections_into(self, population: str) -> list[ProjectionSpec]:
        """The projections whose target is ``population``, in mapping order."""
        return [p for p in self.projections if p.post == population]

    def source_slices(self, name: str) -> list[Slice]:
        """The slices of a source (``"input"`` or a population)."""
        if name == "input":
            return list(self.input_slices)
        return [s for s in self.slices if s.population == name]
