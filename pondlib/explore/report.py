r"""What :func:`pondlib.explore.evaluate` returns: traffic per layer and operand class, energy, fit.

Units: traffic in **bits** (``*_bits``; :meth:`Report.traffic_mib` in MiB = 2^23 bits), energy in **pJ**
(``*_pj``; :meth:`Report.energy_mj` in mJ = 10^9 pJ). Per-layer vectors have shape ``(L,)`` in layer
order and are read-only. Off-chip traffic counts every bit moved between DRAM and the chip over one
inference of ``T`` steps, by operand class:

=========  ============================================================================
class      what moves
=========  ============================================================================
weights    weight reads (a layer's weights are never written back)
states     neuron-state reads and write-backs
spikes     inter-layer tensors written to DRAM and read back (halo re-fetch included)
input      the network input, read from DRAM (it starts there)
=========  ============================================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pondlib.errors import ConfigError
from pondlib.explore.schedule import Schedule

__all__ = ["Report", "GroupReport", "OPERAND_CLASSES", "MIB_BITS", "PJ_PER_MJ"]

#: Operand classes of the off-chip traffic.
OPERAND_CLASSES = ("weights", "states", "spikes", "input")
#: Bits per MiB.
MIB_BITS = 8 * 1024 * 1024
#: pJ per mJ.
PJ_PER_MJ = 1e9


@dataclass(frozen=True)
class GroupReport:
    """One group: a run of consecutive blocks with the same ``(B, fused)``.

    Attributes:
        blocks: first and last block (inclusive). layers: first and last layer index (inclusive).
        batch: ``B``. fused: LF (True) or LBL. chunks: ``T / B``.
        persistent: LBL only: weights and states stay on chip across chunks (they fit).
        resident_state_bits: states that stay on chip across chunks (read and written once, or never
            in the ideal mode).
        working_set_bits: LF: every weight of the stack + one state column tile + every line buffer;
            LBL: the largest node's operands (weights, state, inputs, output, held tensors).
        fits: LF: the working set fits on chip (nothing but boundary tensors left in DRAM); LBL: every
            node's operands fit.
        spilled: names of the layers whose output tensors this group sends to DRAM (whole, or partly
            evicted line buffers).
        holds: LF: the stack holds its weights and one state column tile, so that only spike tiles spill
            (``False``: weights re-read per column or states streamed: the stack cannot fit); LBL: True.
        evicted_bits: LF: DRAM bits (written and read back) of the line-buffer tiles evicted to make room.
    """

    blocks: tuple[int, int]
    layers: tuple[int, int]
    batch: int
    fused: bool
    chunks: int
    persistent: bool
    resident_state_bits: int
    working_set_bits: int
    fits: bool
    spilled: tuple[str, ...]
    holds: bool = True
    evicted_bits: int = 0


@dataclass(frozen=True, eq=False)
class Report:
    """Off-chip traffic, energy and on-chip use of one schedule (see the module docstring for units).

    Attributes:
        workload: the workload's name. schedule: the evaluated schedule. mode: ``"stems"`` or ``"ideal"``.
        memory_bits: shared on-chip memory (bits). time_steps: ``T``.
        layer_names: (L,) names.
        weight_read_bits, state_read_bits, state_write_bits, spike_read_bits, spike_write_bits, input_read_bits: (L,)
            off-chip bits per layer (spike writes are charged to the producing layer, reads to the reading layer).
        offchip_energy_pj: DRAM transfers, sender read + receiver write per bit.
        onchip_energy_pj: shared memory <-> inner buffers <-> PE array.
        mac_energy_pj: SOPs and MACs (schedule independent).
        peak_onchip_bits: the largest on-chip occupancy of any node or fused stack.
        groups: one :class:`GroupReport` per group.
        compute_cycles: (L,) cycles of each layer's PE-array work over ``T`` steps.
        layer_cycles: (L,) cycles of each layer over ``T`` steps, memory stalls and DRAM fetches included
            (:mod:`~pondlib.explore.latency`); their sum is :attr:`latency_cycles`.
    """

    workload: str
    schedule: Schedule
    mode: str
    memory_bits: int
    time_steps: int
    layer_names: tuple[str, ...]
    weight_read_bits: np.ndarray
    state_read_bits: np.ndarray
    state_write_bits: np.ndarray
    spike_read_bits: np.ndarray
    spike_write_bits: np.ndarray
    input_read_bits: np.ndarray
    offchip_energy_pj: float
    onchip_energy_pj: float
    mac_energy_pj: float
    peak_onchip_bits: int
    groups: tuple[GroupReport, ...]
    compute_cycles: np.ndarray
    layer_cycles: np.ndarray

    def __post_init__(self) -> None:
        for name in (
            "weight_read_bits",
            "state_read_bits",
            "state_write_bits",
            "spike_read_bits",
            "spike_write_bits",
            "input_read_bits",
            "compute_cycles",
            "layer_cycles",
        ):
            getattr(self, name).setflags(write=False)

    # -- traffic ----------------------------------------------------------------------------------------
    @property
    def traffic_by_layer(self) -> dict[str, np.ndarray]:
        """Per operand class, the (L,) off-chip bits of every layer."""
        return {
            "weights": self.weight_read_bits,
            "states": self.state_read_bits + self.state_write_bits,
            "spikes": self.spike_read_bits + self.spike_write_bits,
            "input": self.input_read_bits,
        }

    @property
    def traffic_by_class(self) -> dict[str, float]:
        """Total off-chip bits per operand class (:data:`OPERAND_CLASSES`)."""
        return {k: float(v.sum()) for k, v in self.traffic_by_layer.items()}

    @property
    def traffic_bits(self) -> float:
        """Total off-chip traffic in bits."""
        return float(sum(self.traffic_by_class.values()))

    @property
    def read_bits(self) -> float:
        """Bits read from DRAM."""
        return float(self.weight_read_bits.sum() + self.state_read_bits.sum() + self.spike_read_bits.sum()) + float(
            self.input_read_bits.sum()
        )

    @property
    def write_bits(self) -> float:
        """Bits written to DRAM."""
        return float(self.state_write_bits.sum() + self.spike_write_bits.sum())

    def traffic_mib(self, operand: str | None = None) -> float:
        """Off-chip traffic in MiB, in total or of one operand class (:data:`OPERAND_CLASSES`)."""
        if operand is None:
            return self.traffic_bits / MIB_BITS
        if not isinstance(operand, str) or operand not in OPERAND_CLASSES:
            raise ConfigError("operand class", value=repr(operand), limit=list(OPERAND_CLASSES), where="traffic_mib")
        return self.traffic_by_class[operand] / MIB_BITS

    # -- energy -----------------------------------------------------------------------------------------
    @property
    def energy_pj(self) -> float:
        """Total energy (pJ): off-chip + on-chip + MAC."""
        return self.offchip_energy_pj + self.onchip_energy_pj + self.mac_energy_pj

    def energy_mj(self, part: str | None = None) -> float:
        """Energy in mJ, in total or of one part (``"offchip"``, ``"onchip"``, ``"mac"``)."""
        parts = {"offchip": self.offchip_energy_pj, "onchip": self.onchip_energy_pj, "mac": self.mac_energy_pj}
        if part is None:
            return self.energy_pj / PJ_PER_MJ
        if not isinstance(part, str) or part not in parts:
            raise ConfigError("energy part", value=repr(part), limit=list(parts), where="energy_mj")
        return parts[part] / PJ_PER_MJ

    # -- latency ----------------------------------------------------------------------------------------
    @property
    def latency_cycles(self) -> float:
        """Cycles of the whole inference (``T`` steps): the sum of :attr:`layer_cycles` (one core)."""
        return float(self.layer_cycles.sum())

    @property
    def stall_cycles(self) -> float:
        """Cycles beyond the PE array's compute: memory-bound stretches and DRAM fetches."""
        return self.latency_cycles - float(self.compute_cycles.sum())

    @property
    def edp(self) -> float:
        """Energy-delay product in pJ x cycles."""
        return self.energy_pj * self.latency_cycles

    # -- fit ----------------------------------------------------------------------------------------------
    @property
    def fits(self) -> bool:
        """True when every fused stack's working set fits on chip."""
        return all(g.fits for g in self.groups if g.fused)

    @property
    def feasible(self) -> bool:
        """True when every fused stack holds its weights and a state tile: it fits, or it only evicts
        spike tiles, as STEMS does (charged in the traffic); schedules that are not rank last."""
        return all(g.holds for g in self.groups if g.fused)

    @property
    def fit_status(self) -> str:
        """``"yes"`` (fits), ``"spills"`` (evicts spike tiles or boundary tensors, charged) or ``"no"``
        (a fused stack cannot hold its weights or a state tile)."""
        return "yes" if self.fits else ("spills" if self.feasible else "no")

    @property
    def unfit_stacks(self) -> list[str]:
        """One line per fused stack whose working set does not fit: its blocks, working set against the
        memory, and the tensors it spills to DRAM (charged in the traffic)."""
        lines = []
        for g in self.groups:
            if g.fused and not g.fits:
                names = ", ".join(g.spilled[:4]) + (f" and {len(g.spilled) - 4} more" if len(g.spilled) > 4 else "")
                why = "" if g.holds else "; cannot hold its weights and a state tile: weights re-read per column"
                spill = f"; spills {names} to DRAM (charged)" if g.spilled else ""
                lines.append(
                    f"blocks {g.blocks[0]}-{g.blocks[1]}: working set {g.working_set_bits} bit > "
                    f"{self.memory_bits} bit{why}{spill}"
                )
        return lines

    def label(self) -> str:
        """The schedule's run-length label (``'TB-LF x2 | TB-LBL x5'``)."""
        return self.schedule.label(self.time_steps)

    def summary(self) -> dict[str, float | str | bool]:
        """A flat dict: schedule, traffic (MiB, total and per class), energy (mJ, total and parts), fit."""
        out: dict[str, float | str | bool] = {"schedule": self.label(), "name": self.schedule.name, "mode": self.mode}
        out["traffic_mib"] = self.traffic_mib()
        for k in OPERAND_CLASSES:
            out[f"{k}_mib"] = self.traffic_mib(k)
        out["energy_mj"] = self.energy_mj()
        for k in ("offchip", "onchip", "mac"):
            out[f"{k}_mj"] = self.energy_mj(k)
        out["latency_mcycles"] = self.latency_cycles / 1e6
        out["compute_mcycles"] = float(self.compute_cycles.sum()) / 1e6
        out["edp_mj_mcycles"] = self.edp / PJ_PER_MJ / 1e6
        out["peak_onchip_bits"] = float(self.peak_onchip_bits)
        out["fits"] = self.fits
        out["fit_status"] = self.fit_status
        return out

    def __repr__(self) -> str:
        return (
            f"Report({self.label()!r}, {self.mode}, traffic {self.traffic_mib():.2f} MiB, "
            f"energy {self.energy_mj():.3f} mJ, {self.latency_cycles / 1e6:.2f} Mcycles, fits={self.fits})"
        )
