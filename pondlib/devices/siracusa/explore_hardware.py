r"""Siracusa as plain data for schedule exploration (:mod:`pondlib.explore` builds its ``Hardware`` from it).

The explorer's model is one core with one memory the schedules compete for (``shared``), inner buffers
between it and the compute array, and an outer memory (``dram``) that everything else spills to.
Siracusa has three levels; ``level`` picks the pair the schedules compete across:

=========  ==========================================  ============================================
level      ``shared`` (what schedules fill)            ``dram`` (where spills go)
=========  ==========================================  ============================================
``"L1"``   the cluster's L1 TCDM, 256 KiB              L2 (2 MiB) over the cluster DMA, 64 bit/cycle
``"L2"``   L2, 2 MiB                                   L3 (16 MiB, off chip), 8 bit/cycle
=========  ==========================================  ============================================

Every figure, and whether it is calibrated or assumed (``notes`` says the same per figure):

* sizes: L1 256 KiB, L2 2 MiB, L3 16 MiB (:data:`~pondlib.devices.siracusa.limits.SIRACUSA`; documented);
* L2 <-> L1 DMA 8 B/cycle and L3 -> L2 1 B/cycle: the *assumed* rates of the cycle model
  (:data:`~pondlib.devices.siracusa.cycles.DEFAULT_CYCLES`, ``dma_bytes_per_cycle``,
  ``l3_bytes_per_cycle``), so that the explorer and ``siracusa.cycles`` agree;
* L1 bandwidth to the cores 512 bit/cycle: *assumed* (16 word-wide banks, one access per bank per cycle);
* compute: 8 cores x 2 int8 MACs per cycle (``pe_k = 8`` output channels over the cores, ``pe_c = 2``
  input channels): the cycle model's *assumed* ``mac_cycles_simd = 0.5`` per MAC and core;
* energies: *assumed*, not calibrated (no Siracusa energy measurement is in this project): SRAM
  read / write 0.10 / 0.12 pJ per bit for L1 and 0.13 / 0.175 for L2 (STEMS's Table 1 values for 16-32 KB
  and 128 KB SRAM banks, 22 nm), L3 11 / 12 pJ per bit (STEMS's DRAM), 1 pJ per 8-bit MAC or SOP on a
  RISC-V core (a load-compute-loop estimate, order of magnitude only);
* inner buffers: the cores read L1 directly, so the "buffers" are the register files (8 cores x 32 x 32
  bit) charged at the L1 read energy, filled for free.

Example:
    >>> hw = explore_hardware()
    >>> hw["shared"]["size_bits"] // 8 // 1024, hw["dram"]["bandwidth_bits_per_cycle"], hw["pe_k"] * hw["pe_c"]
    (256, 64.0, 16)
    >>> explore_hardware("L2")["dram"]["name"]
    'L3 (off chip)'
"""

from __future__ import annotations

from typing import Any

from pondlib.devices.core.device import explore_level
from pondlib.devices.siracusa.cycles import DEFAULT_CYCLES
from pondlib.devices.siracusa.limits import SIRACUSA
from pondlib.errors import ConfigError
from pondlib.validate import check_choice

__all__ = ["explore_hardware", "mapper_traffic", "LEVELS"]

#: The memory levels the schedules may compete for (the first is the default).
LEVELS = ("L1", "L2")

_L1_RW = (0.10, 0.12)  # pJ/bit, assumed (STEMS Table 1, 16-32 KB SRAM)
_L2_RW = (0.13, 0.175)  # pJ/bit, assumed (STEMS Table 1, 128 KB SRAM banks)
_L3_RW = (11.0, 12.0)  # pJ/bit, assumed (STEMS Table 1, DRAM)
_MAC_PJ = 1.0  # pJ per int8 MAC or SOP on a core, assumed
_REGS_BITS = 8 * 32 * 32  # 8 cores x 32 registers x 32 bit


def explore_hardware(level: str | None = None) -> dict[str, Any]:
    """Siracusa's cluster as the explorer's one-core model, competing for ``level`` (module docstring).

    Args:
        level: ``"L1"`` (default) or ``"L2"``.

    Raises:
        ConfigError: another level.
    """
    level = (
        LEVELS[0]
        if level is None
        else check_choice(level, "level", LEVELS, where="siracusa explore_hardware", error=ConfigError)
    )
    dma = DEFAULT_CYCLES.dma_bytes_per_cycle * 8
    l3 = DEFAULT_CYCLES.l3_bytes_per_cycle * 8
    if level == "L1":
        shared = explore_level("L1 TCDM", SIRACUSA.l1_bytes * 8, 512.0, _L1_RW)
        outer = explore_level("L2 (via the cluster DMA)", SIRACUSA.l2_bytes * 8, dma, _L2_RW)
        regs_rw = (_L1_RW[0], 0.0)
    elif level == "L2":
        shared = explore_level("L2", SIRACUSA.l2_bytes * 8, dma, _L2_RW)
        outer = explore_level("L3 (off chip)", SIRACUSA.l3_bytes * 8, l3, _L3_RW)
        regs_rw = (_L1_RW[0], _L1_RW[1])  # operands pass through L1 on their way to the cores
    else:  # pragma: no cover - check_choice refused it
        raise ConfigError("level", value=level, limit=list(LEVELS))
    return {
        "name": f"Siracusa cluster, {level} over {outer['name'].split(' ')[0]}",
        "shared": shared,
        "input_buffer": explore_level("core registers (inputs)", _REGS_BITS, 512.0, regs_rw),
        "weight_buffer": explore_level("core registers (weights)", _REGS_BITS, 512.0, regs_rw),
        "dram": outer,
        "sop_energy_pj": _MAC_PJ,
        "mac_energy_pj": _MAC_PJ,
        "pe_k": 8,
        "pe_c": 2,
        "pe_oy": 1,
        "levels": LEVELS,
        # int8 weights and activations (a spike is one int8), int16 LIF membranes (siracusa's defaults)
        "workload_bits": {"weight_bits": 8, "state_bits": 16, "spike_bits": 8, "input_bits": 8},
        "notes": (
            "sizes: L1 256 KiB, L2 2 MiB, L3 16 MiB (documented, siracusa.limits)",
            f"L2<->L1 DMA {dma:g} bit/cycle, L3->L2 {l3:g} bit/cycle (assumed, as siracusa.cycles)",
            "L1 to the cores 512 bit/cycle (assumed: 16 word banks)",
            "8 cores x 2 int8 MACs/cycle (assumed, siracusa.cycles mac_cycles_simd = 0.5)",
            "energies assumed, not calibrated: SRAM 0.10/0.12 (L1) and 0.13/0.175 (L2) pJ/bit, L3 11/12 "
            "pJ/bit (STEMS Table 1), 1 pJ per MAC",
        ),
    }


def mapper_traffic(net: Any, time_steps: int) -> dict[str, Any]:
    """The L1 tiling Siracusa's mapper chooses for ``net`` and the L2 <-> L1 DMA traffic it implies.

    The mapper (:func:`~pondlib.devices.siracusa.tiling.plan_tiles`, with the integer LIF's membrane only,
    ``drop_synapse=True``, on synthetic calibration) runs one time step at a time, layer by layer, each
    layer in L1 tiles with its inputs, weights and outputs DMAed per tile and every LIF state kept in L2:
    an ST-LBL schedule at the ``"L1"`` level. Traffic per inference: ``T sum_tiles (in + weights + out)``
    bytes, x 8 bits.

    Raises:
        PondError: the network cannot be mapped (the mapper's own error).
    """
    import numpy as np

    from pondlib.devices.siracusa.report import configure, map_network
    from pondlib.devices.siracusa.tiling import plan_tiles

    calib = (np.random.default_rng(0).random((8, 10, int(net.size_in))) < 0.2).astype(np.float64)
    _, spec = map_network(net, SIRACUSA, calib, True)
    plans = plan_tiles(configure(spec, "siracusa explore_mapping"))
    lines, total = [], 0
    for p in plans:
        moved = sum(p.in_bytes) + sum(p.weight_bytes) + sum(p.out_bytes)
        total += moved
        lines.append(f"{p.layer}: {p.kind} tile {p.tile} x {p.n_tiles}, {moved} B per step over the DMA")
    budget = plans[0].budget if plans else 0
    return {
        "schedule": f"ST-LBL: one step at a time, each layer tiled in an L1 budget of {budget} B, LIF states in L2",
        "level": "L1",
        "traffic_bits": 8 * total * int(time_steps),
        "layers": lines,
    }
