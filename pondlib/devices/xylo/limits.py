"""Hardware limits of the Xylo family, as data: one frozen dataclass, one instance per chip variant.

All Xylo variants share one core (the integer dynamics in :mod:`pondlib.devices.xylo.sim`); they differ
only in these numbers.

Example:
    >>> from pondlib.devices.xylo.limits import XYLO_AUDIO2, XYLO_IMU, get_limits
    >>> XYLO_AUDIO2.n_hidden, XYLO_AUDIO2.n_output, XYLO_AUDIO2.weight_range
    (1000, 8, (-128, 127))
    >>> XYLO_IMU.n_synapses
    1
    >>> get_limits("audio3").n_output
    32
"""

from __future__ import annotations

from dataclasses import dataclass

from pondlib.devices.core.lookup import resolve_limits
from pondlib.errors import ConfigError
from pondlib.validate import check_float, check_int, check_type

__all__ = ["XyloLimits", "XYLO_AUDIO2", "XYLO_AUDIO3", "XYLO_IMU", "LIMITS", "get_limits"]


@dataclass(frozen=True)
class XyloLimits:
    """Limits of one Xylo variant. Counts are per chip unless said otherwise."""

    name: str
    n_input: int = 16  # input channels
    max_input_count: int = 15  # input events per channel per step (more are clipped by the chip)
    n_hidden: int = 1000  # hidden neurons
    n_output: int = 8  # output (readout) neurons
    n_synapses: int = 2  # synaptic states per hidden neuron (output neurons have 1)
    max_spikes_hidden: int = 31  # spikes per hidden neuron per step (5-bit counter)
    max_spikes_output: int = 1  # spikes per output neuron per step
    max_fanout_rec: int = 64  # non-zero recurrent weights leaving one hidden neuron
    max_alias_targets: int = 1  # alias targets per hidden neuron (target id must be higher)
    weight_bits: int = 8  # signed weights, -128..127
    state_bits: int = 16  # signed synaptic/membrane state, threshold and bias
    dash_bits: int = 4  # bit-shift decay parameters, 0..15
    weight_shift_bits: int = 4  # weight bit-shift per projection, 0..15
    dt_min: float = 1e-4  # s, shortest supported time step
    dt_max: float = 1e-1  # s, longest supported time step

    def __post_init__(self) -> None:
        # Custom limits are data a user may get wrong: every count a whole number in a sane range, the
        # widths within the core's, dt_min <= dt_max (finite, > 0). A ConfigError names the field.
        where = "XyloLimits"
        check_type(self.name, "name", str, where=where, error=ConfigError)
        counts = {
            "n_input": (1, 2**20),
            "max_input_count": (1, 2**20),
            "n_hidden": (1, 2**20),
            "n_output": (1, 2**20),
            "n_synapses": (1, 2),
            "max_spikes_hidden": (1, 2**20),
            "max_spikes_output": (1, 2**20),
            "max_fanout_rec": (1, 2**20),
            "max_alias_targets": (0, 2**20),
            # the core's registers (simulator, memory layout) are 8-bit weights, 16-bit states, 4-bit
            # shifts: a variant may be narrower, never wider
            "weight_bits": (2, 8),
            "state_bits": (2, 16),
            "dash_bits": (1, 4),
            "weight_shift_bits": (1, 4),
        }
        for name, (lo, hi) in counts.items():
            object.__setattr__(
                self, name, check_int(getattr(self, name), name, lo=lo, hi=hi, where=where, error=ConfigError)
            )
        for name in ("dt_min", "dt_max"):
            value = check_float(getattr(self, name), name, lo=0.0, lo_open=True, where=where, error=ConfigError)
            object.__setattr__(self, name, value)
        if self.dt_min > self.dt_max:
            raise ConfigError(
                "dt_min",
                value=self.dt_min,
                limit=f"<= dt_max = {self.dt_max}",
                where=where,
                fix="swap dt_min and dt_max",
            )

    @property
    def weight_range(self) -> tuple[int, int]:
        """Inclusive signed weight range."""
        return -(1 << (self.weight_bits - 1)), (1 << (self.weight_bits - 1)) - 1

    @property
    def state_range(self) -> tuple[int, int]:
        """Inclusive range of synaptic and membrane states, thresholds and biases."""
        return -(1 << (self.state_bits - 1)), (1 << (self.state_bits - 1)) - 1

    @property
    def dash_max(self) -> int:
        """Largest decay bit-shift."""
        return (1 << self.dash_bits) - 1

    @property
    def weight_shift_max(self) -> int:
        """Largest weight bit-shift."""
        return (1 << self.weight_shift_bits) - 1


XYLO_AUDIO2 = XyloLimits(name="Xylo Audio 2")
XYLO_AUDIO3 = XyloLimits(name="Xylo Audio 3", n_hidden=992, n_output=32)
XYLO_IMU = XyloLimits(name="Xylo IMU", n_hidden=496, n_output=16, n_synapses=1)

#: The variants by short name, for the command line and ``get_limits``.
LIMITS: dict[str, XyloLimits] = {"audio2": XYLO_AUDIO2, "audio3": XYLO_AUDIO3, "imu": XYLO_IMU}


def get_limits(limits: XyloLimits | str | None = None) -> XyloLimits:
    """A limits instance from an instance, a short name (``audio2``, ``audio3``, ``imu``), a display name,
    or None (the default)."""
    return resolve_limits(limits, LIMITS, default=XYLO_AUDIO2, device="Xylo")
