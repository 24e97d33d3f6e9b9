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

__all__ = ["XyloLimits", "XYLO_AUDIO2", "XYLO_AUDIO3", "XYLO_IMU", "LIMITS", "get_limits"]


@dataclass(frozen=True)
class XyloLimits:
    """Limits of one Xylo variant. Counts are per chip unless said otherwise."""

    name: str
    n_input: int = 16            # input channels
    max_input_count: int = 15    # input events per channel per step (more are clipped by the chip)
    n_hidden: int = 1000         # hidden neurons
    n_output: int = 8            # output (readout) neurons
    n_synapses: int = 2          # synaptic states per hidden neuron (output neurons have 1)
    max_spikes_hidden: int = 31  # spikes per hidden neuron per step (5-bit counter)
    max_spikes_output: int = 1   # spikes per output neuron per step
    max_fanout_rec: int = 64     # non-zero recurrent weights leaving one hidden neuron
    max_alias_targets: int = 1   # alias targets per hidden neuron (target id must be higher)
    weight_bits: int = 8         # signed weights, -128..127
    state_bits: int = 16         # signed synaptic/membrane state, threshold and bias
    dash_bits: int = 4           # bit-shift decay parameters, 0..15
    weight_shift_bits: int = 4   # weight bit-shift per projection, 0..15
    dt_min: float = 1e-4         # s, shortest supported time step
    dt_max: float = 1e-1         # s, longest supported time step

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


def get_limits(limits: "XyloLimits | str | None" = None) -> XyloLimits:
    """A limits instance from an instance, a short name (``audio2``, ``audio3``, ``imu``), a display name, or None (the default)."""
    return resolve_limits(limits, LIMITS, default=XYLO_AUDIO2, device="Xylo")
