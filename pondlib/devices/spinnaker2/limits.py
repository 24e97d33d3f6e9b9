"""Hardware limits of SpiNNaker2, as data: one frozen dataclass, one instance per system variant.

Every number comes from ``docs/TARGETS.md`` (SpiNNaker2 section) unless its comment says *model
assumption*: those are cost-model constants of this package (cycle counts, header sizes), chosen to be
plausible for a Cortex-M4F and kept here so that they can be changed in one place.

The chip and the board share one PE design; they differ in the number of chips (and so of PEs).

Example:
    >>> from pondlib.devices.spinnaker2.limits import SPINNAKER2_CHIP, SPINNAKER2_BOARD, get_limits
    >>> SPINNAKER2_CHIP.usable_pes, SPINNAKER2_BOARD.usable_pes
    (148, 7104)
    >>> SPINNAKER2_CHIP.weight_range(with_delays=True), SPINNAKER2_CHIP.weight_range(with_delays=False)
    ((-15, 15), (-127, 127))
    >>> SPINNAKER2_CHIP.max_delay, SPINNAKER2_CHIP.neurons_per_pe, SPINNAKER2_CHIP.cycles_per_tick
    (7, 250, 150000)
    >>> get_limits("board").n_chips
    48
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from pondlib.devices.core.lookup import resolve_limits
from pondlib.errors import ConfigError
from pondlib.validate import check_bool, check_float, check_int, check_type

__all__ = [
    "SpiNNaker2Limits", "SPINNAKER2_CHIP", "SPINNAKER2_CHIP_HIGH", "SPINNAKER2_BOARD", "LIMITS", "get_limits",
    "limits_for_chips",
]  # fmt: skip


@dataclass(frozen=True)
class SpiNNaker2Limits:
    """Limits of one SpiNNaker2 system. Counts are per PE or per chip as named."""

    name: str
    n_chips: int = 1  # chips in the system
    pes_per_chip: int = 152  # ARM Cortex-M4F processing elements
    usable_pes_per_chip: int = 148  # PEs left to applications (the rest run system tasks)
    sram_bytes: int = 131072  # B per PE: 128 KiB (32 KiB code + 96 KiB data)
    sram_code_bytes: int = 32768  # B per PE, code region
    sram_data_bytes: int = 98304  # B per PE, data region (what a DNN worker may use)
    snn_data_bytes: int = 67000  # B per PE left to an SNN application's data (~67 KB)
    dram_bytes: int = 2 * 1024**3  # B per chip, LPDDR4
    dram_bandwidth: float = 2.09e9  # B/s effective (401,408 B of FC1 weights in 192 us)
    clock_hz: float = 150e6  # Hz, PE clock (150 MHz at 0.5 V; 300 MHz at 0.8 V)
    # -- SNN --------------------------------------------------------------------------------------
    neurons_per_pe: int = 250  # neurons one PE updates per tick
    neuron_index_bits: int = 8  # target index field of a synapse word (<= 256 neurons)
    tick_s: float = 1e-3  # s, default SNN time step
    synapse_word_bits: int = 16  # one synapse = one 16-bit word
    weight_bits_delay: int = 4  # weight magnitude bits in the delay word (lif, lif_curr_exp)
    delay_bits: int = 3  # delay field, 0..7 ticks
    weight_bits_no_delay: int = 7  # weight magnitude bits in the no-delay word (-127..127)
    max_row_words: int = 255  # synapse words per row (one row: one source -> one PE)
    row_header_bytes: int = 8  # B per synapse row (length + source key); model assumption
    pop_table_entry_bytes: int = 12  # B per routing/master-population-table entry (key, mask, address)
    input_buffer_word_bytes: int = 4  # B per ring-buffer slot per neuron per exc/inh (int32)
    cycles_per_neuron: int = 40  # cycles to update one neuron per tick; model assumption
    cycles_per_synapse: int = 6  # cycles to process one synapse word; model assumption
    cycles_per_row: int = 60  # cycles per received spike (DMA + row lookup); model assumption
    cycles_per_tick_overhead: int = 2000  # cycles per tick (timer IRQ, recording); model assumption
    chip_hop_s: float = 1e-6  # s per chip-to-chip hop of a spike packet (chips in a chain); model assumption
    # -- DNN (MLA) --------------------------------------------------------------------------------
    mla_macs_int8: int = 64  # int8 MACs per PE per cycle (16 in int16 mode)
    mla_macs_int16: int = 16  # int16 MACs per PE per cycle
    acc_bits: int = 24  # MLA accumulator width (some sources say 29: pass a variant)
    act_bits: int = 8  # int8 activations and weights
    bias_bits: int = 32  # bias words as stored (added into the accumulator)
    dnn_reserved_bytes: int = 4096  # B per worker kept for stack, layer config, DMA descriptors;
    #                                        model assumption

    def __post_init__(self) -> None:
        """Every field checked: a count is a whole number (>= 1, or >= 0 for costs and overheads), a
        rate or a duration a finite number > 0, a bit width within what its word can hold."""
        where = f"SpiNNaker2Limits({self.name!r})" if isinstance(self.name, str) else "SpiNNaker2Limits"
        check_type(self.name, "name", str, where=where, error=ConfigError)
        for f in fields(self):
            if f.name == "name":
                continue
            value = getattr(self, f.name)
            if f.type == "float":
                object.__setattr__(
                    self, f.name, check_float(value, f.name, lo=0.0, lo_open=True, where=where, error=ConfigError)
                )
            else:
                lo, hi = _INT_BOUNDS.get(f.name, (1, None))
                object.__setattr__(self, f.name, check_int(value, f.name, lo=lo, hi=hi, where=where, error=ConfigError))
        for small, big in (
            ("usable_pes_per_chip", "pes_per_chip"),
            ("sram_code_bytes", "sram_bytes"),
            ("sram_data_bytes", "sram_bytes"),
            ("dnn_reserved_bytes", "sram_data_bytes"),
        ):
            if getattr(self, small) > getattr(self, big):
                raise ConfigError(
                    small,
                    value=getattr(self, small),
                    limit=f"<= {big} = {getattr(self, big)}",
                    where=where,
                    fix=f"keep {small} within {big}",
                )

    @property
    def usable_pes(self) -> int:
        """PEs available to applications in the whole system."""
        return self.usable_pes_per_chip * self.n_chips

    @property
    def max_delay(self) -> int:
        """Largest synaptic delay in ticks (a spike at tick t arrives at t + 1 + delay)."""
        return (1 << self.delay_bits) - 1

    @property
    def max_index(self) -> int:
        """Number of distinct target indices of a synapse word (neurons one row can address)."""
        return 1 << self.neuron_index_bits

    @property
    def cycles_per_tick(self) -> int:
        """Clock cycles available per tick: ``clock_hz * tick_s``."""
        return int(round(self.clock_hz * self.tick_s))

    @property
    def dnn_worker_bytes(self) -> int:
        """SRAM bytes a DNN worker can fill with weights, biases and activations."""
        return self.sram_data_bytes - self.dnn_reserved_bytes

    def weight_range(self, with_delays: bool = True) -> tuple[int, int]:
        """Inclusive signed weight range of a synapse word (sign is the exc/inh bit)."""
        with_delays = check_bool(with_delays, "with_delays", where="weight_range", error=ConfigError)
        bits = self.weight_bits_delay if with_delays else self.weight_bits_no_delay
        m = (1 << bits) - 1
        return -m, m

    def acc_range(self, acc_bits: int | None = None) -> tuple[int, int]:
        """Inclusive range of the signed MLA accumulator (``acc_bits`` defaults to this chip's)."""
        b = self.acc_bits if acc_bits is None else check_int(acc_bits, "acc_bits", lo=2, hi=64, error=ConfigError)
        return -(1 << (b - 1)), (1 << (b - 1)) - 1


#: Integer fields whose bounds differ from ``>= 1``: costs and overheads may be 0, bit widths are bounded.
_INT_BOUNDS: dict[str, tuple[int, int | None]] = {
    "neuron_index_bits": (1, 16),
    "synapse_word_bits": (1, 64),
    "weight_bits_delay": (1, 15),
    "delay_bits": (0, 8),
    "weight_bits_no_delay": (1, 15),
    "row_header_bytes": (0, None),
    "pop_table_entry_bytes": (0, None),
    "cycles_per_neuron": (0, None),
    "cycles_per_synapse": (0, None),
    "cycles_per_row": (0, None),
    "cycles_per_tick_overhead": (0, None),
    "acc_bits": (2, 64),
    "act_bits": (1, 64),
    "bias_bits": (1, 64),
    "dnn_reserved_bytes": (0, None),
}

#: One chip at 150 MHz (0.5 V), 24-bit MLA accumulator.
SPINNAKER2_CHIP = SpiNNaker2Limits(name="SpiNNaker2 chip")
#: One chip at 300 MHz (0.8 V).
SPINNAKER2_CHIP_HIGH = SpiNNaker2Limits(name="SpiNNaker2 chip (300 MHz)", clock_hz=300e6)
#: A 48-chip board (each chip as above). The chip count is this package's assumption for the board
#: variant (docs/TARGETS.md gives per-chip facts only); pass another ``n_chips`` for other systems.
SPINNAKER2_BOARD = SpiNNaker2Limits(name="SpiNNaker2 board (48 chips)", n_chips=48)

#: The variants by short name, for the command line and ``get_limits``.
LIMITS: dict[str, SpiNNaker2Limits] = {
    "chip": SPINNAKER2_CHIP,
    "chip300": SPINNAKER2_CHIP_HIGH,
    "board": SPINNAKER2_BOARD,
}


def get_limits(limits: SpiNNaker2Limits | str | None = None) -> SpiNNaker2Limits:
    """A limits instance from an instance, a short name (``chip``, ``chip300``, ``board``), a display name,
    or None (the default)."""
    return resolve_limits(limits, LIMITS, default=SPINNAKER2_CHIP, device="SpiNNaker2")


def limits_for_chips(limits: Any, chips: Any, where: str) -> tuple[SpiNNaker2Limits, int]:
    """The limits and the checked chip count of a mapping over ``chips`` chips (``chips > 1`` with no limits:
    the 48-chip board).

    Example:
        >>> lim, n = limits_for_chips(None, 3, "example")
        >>> lim.n_chips, n
        (48, 3)

    Raises:
        ConfigError: a chip count that is not an integer in 1..limits.n_chips.
    """
    if isinstance(chips, bool) or not isinstance(chips, int | np.integer):
        raise ConfigError("chips", value=repr(chips), limit="an integer >= 1", where=where, fix="pass chips=2")
    lim = get_limits(limits) if limits is not None or int(chips) <= 1 else SPINNAKER2_BOARD
    n = check_int(chips, "chips", lo=1, hi=lim.n_chips, where=where, error=ConfigError,
                  fix=f"use at most the {lim.n_chips} chip(s) of {lim.name!r} (limits='board' has 48)")  # fmt: skip
    return lim, n
