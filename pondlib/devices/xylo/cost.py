"""The cost model of a Xylo board: clock cycles, energy and power per time step.

This module owns :class:`CostModel` (the assumptions, documented there: a model, not measured
silicon figures), :class:`RunStats` (per-step activity and cost of one run) and the helpers that count
synaptic operations from a run's input and spikes (``_synop_counts``) and turn them into statistics
(``_stats``). The core clock it defaults to, :data:`~pondlib.devices.xylo.memory.CORE_CLOCK_HZ`,
belongs to the memory layout (the step-timer register counts its cycles).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pondlib.devices.xylo.config import XyloConfig
from pondlib.devices.xylo.memory import CORE_CLOCK_HZ
from pondlib.errors import ConfigError
from pondlib.validate import check_float, check_int

__all__ = ["CostModel", "RunStats"]


@dataclass(frozen=True)
class CostModel:
    """Clock cycles and energy of one time step, from the synaptic operations (model assumptions).

    These numbers are **assumptions of a simple model, not measurements** of Xylo silicon; change
    them to match a datasheet or your own measurements (checked: finite, ``clock_hz`` in (0, 1e12],
    cycle counts whole numbers in 0..2^20, energies in [0, 1] J, static power in [0, 1000] W; else a
    :class:`~pondlib.errors.ConfigError`). Per step ``t``:

    =================  ==============================================================================
    quantity           model
    =================  ==============================================================================
    synaptic ops       ``S[t] = sum_c min(x[t, c], 15) * nnz(W_in[c]) + sum_j s[t-1, j] *
                       (nnz(W_rec[j]) + nnz(W_out[j]))`` (events times stored non-zero weights)
    neuron updates     ``U = N_hid * k + N_out`` (every synaptic state, every step)
    cycles             ``cycles[t] = cycles_per_synop * S[t] + cycles_per_update * U + cycles_per_step``
    energy (J)         ``E[t] = energy_per_synop_j * S[t] + energy_per_update_j * U``
    power (W)          ``P[t] = E[t] / dt + static_power_w``
    real time          the step fits when ``cycles[t] <= round(dt * clock_hz)``
    =================  ==============================================================================
    """

    clock_hz: float = float(CORE_CLOCK_HZ)  # Hz, core clock
    cycles_per_synop: int = 1  # one weight fetch + one saturating add per event
    cycles_per_update: int = 2  # decay + integrate (+ spike check) of one state
    cycles_per_step: int = 64  # fixed per step: input latch, readout, handshake
    energy_per_synop_j: float = 20e-12  # J per synaptic operation
    energy_per_update_j: float = 10e-12  # J per state update
    static_power_w: float = 100e-6  # W, leakage and clock tree, independent of activity

    def __post_init__(self) -> None:
        # Every number is a finite count or amount in a plausible range (bounds far beyond any chip):
        # a NaN, negative or astronomically large cost would turn every statistic into garbage or
        # overflow the int64 cycle counts.
        where = "CostModel"
        object.__setattr__(
            self,
            "clock_hz",
            check_float(self.clock_hz, "clock_hz", lo=0.0, lo_open=True, hi=1e12, where=where, error=ConfigError),
        )
        for name in ("cycles_per_synop", "cycles_per_update", "cycles_per_step"):
            value = check_int(getattr(self, name), name, lo=0, hi=2**20, where=where, error=ConfigError)
            object.__setattr__(self, name, value)
        for name, hi in (("energy_per_synop_j", 1.0), ("energy_per_update_j", 1.0), ("static_power_w", 1e3)):
            value = check_float(getattr(self, name), name, lo=0.0, hi=hi, where=where, error=ConfigError)
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class RunStats:
    """Per-step activity, clock cycles and power of one run (see :class:`CostModel`).

    Arrays are ``(T,)`` for unbatched input and ``(B, T)`` for a batch.
    """

    dt: float  # s per step
    synops_in: np.ndarray  # input synaptic operations per step
    synops_rec: np.ndarray  # recurrent synaptic operations per step
    synops_out: np.ndarray  # readout synaptic operations per step
    updates: int  # state updates per step
    cycles: np.ndarray  # clock cycles per step
    energy_j: np.ndarray  # J per step (dynamic)
    power_w: np.ndarray  # W per step (dynamic + static)
    cycle_budget: int  # clock cycles available per step, round(dt * clock_hz)
    cost_model: CostModel = field(default_factory=CostModel)

    @property
    def synops(self) -> np.ndarray:
        """All synaptic operations per step."""
        return self.synops_in + self.synops_rec + self.synops_out

    @property
    def duration_s(self) -> float:
        """Wall time on the board (s): every step takes ``dt`` in real time."""
        return float(self.cycles.size * self.dt)

    @property
    def mean_power_w(self) -> float:
        """Mean power over the run (W)."""
        return float(self.power_w.mean()) if self.power_w.size else 0.0

    @property
    def total_energy_j(self) -> float:
        """Energy of the run (J), static power included."""
        return float(self.energy_j.sum() + self.cost_model.static_power_w * self.duration_s)

    @property
    def max_cycles(self) -> int:
        """The busiest step's clock cycles."""
        return int(self.cycles.max()) if self.cycles.size else 0

    @property
    def realtime_ok(self) -> bool:
        """True when every step fits in ``dt`` (else the real chip would fall behind)."""
        return self.max_cycles <= self.cycle_budget

    def summary(self) -> str:
        """A one-line summary."""
        return (
            f"{self.cycles.size} steps, {self.duration_s * 1e3:.3g} ms on the board, "
            f"{int(self.synops.sum())} synaptic ops, max {self.max_cycles} of {self.cycle_budget} "
            f"cycles per step, mean power {self.mean_power_w * 1e6:.4g} uW (model estimate)"
        )


def _synop_counts(
    config: XyloConfig, x: np.ndarray, spikes_before: np.ndarray, spikes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Synaptic operations per step: events times stored non-zero weights (see :class:`CostModel`)."""
    fan_in = np.count_nonzero(config.weights_in, axis=(1, 2)).astype(np.int64)
    fan_rec = np.count_nonzero(config.weights_rec, axis=(1, 2)).astype(np.int64)
    fan_out = np.count_nonzero(config.weights_out, axis=1).astype(np.int64)
    events = np.minimum(np.asarray(x), 15).astype(np.int64)  # the chip's 4-bit input counter
    spk = spikes.astype(np.int64)
    before = np.broadcast_to(spikes_before.astype(np.int64), spk.shape[:-2] + spk.shape[-1:])
    steps = spk.shape[-2]
    prev = np.concatenate([before[..., None, :], spk[..., :-1, :]], axis=-2)[..., :steps, :]  # 1-step delay
    return events @ fan_in, prev @ fan_rec, prev @ fan_out


def _stats(config: XyloConfig, counts: tuple[np.ndarray, ...], cost: CostModel) -> RunStats:
    s_in, s_rec, s_out = counts
    synops = s_in + s_rec + s_out
    updates = config.n_hidden * config.n_synapses + config.n_output
    cycles = cost.cycles_per_synop * synops + cost.cycles_per_update * updates + cost.cycles_per_step
    energy = cost.energy_per_synop_j * synops + cost.energy_per_update_j * updates
    power = energy / config.dt + cost.static_power_w
    return RunStats(
        dt=config.dt,
        synops_in=s_in,
        synops_rec=s_rec,
        synops_out=s_out,
        updates=updates,
        cycles=cycles.astype(np.int64),
        energy_j=np.asarray(energy, dtype=np.float64),
        power_w=np.asarray(power, dtype=np.float64),
        cycle_budget=int(round(config.dt * cost.clock_hz)),
        cost_model=cost,
    )
