r"""One SpiNNaker2 PE as plain data for schedule exploration (:mod:`pondlib.explore` builds its ``Hardware``).

The explorer's one-core model on a PE: the PE's SRAM data region is the memory the schedules compete
for (``shared``), the chip's LPDDR4 DRAM is where everything else spills, and the MLA (the PE's int8
multiply-accumulate array) computes. Every figure, calibrated or assumed (``notes`` says the same):

* SRAM: 128 KiB per PE, of which 96 KiB is the data region a worker may fill (32 KiB code):
  :data:`~pondlib.devices.spinnaker2.limits.SPINNAKER2_CHIP` (documented);
* DRAM bandwidth: *calibrated* -- the timing model's effective bandwidth
  (:data:`~pondlib.devices.spinnaker2.timing.PAPER_MODEL`, fitted to the paper's 401,408 B of FC1
  weights fetched in 192 us) divided by the 150 MHz PE clock, in bits per cycle;
* compute: the MLA's 64 int8 MACs per cycle (documented), as ``pe_k = 16`` output channels x ``pe_c =
  4`` inputs; SRAM to MLA 128 bit/cycle: *assumed*;
* energies: *assumed*, not calibrated (no SpiNNaker2 energy figure is in this project): SRAM 0.13 /
  0.175 pJ per bit, DRAM 11 / 12 pJ per bit, 0.16 pJ per MAC (STEMS's Table 1 values, 22 nm; SpiNNaker2 is
  22 nm FDSOI as well);
* inner buffers: the MLA reads SRAM directly, so its operand registers are charged at the SRAM read
  energy and filled for free.

Example:
    >>> hw = explore_hardware()
    >>> hw["shared"]["size_bits"] // 8 // 1024, round(hw["dram"]["bandwidth_bits_per_cycle"], 1)
    (96, 111.5)
"""

from __future__ import annotations

from typing import Any

from pondlib.devices.core.device import explore_level
from pondlib.devices.spinnaker2.limits import SPINNAKER2_CHIP
from pondlib.devices.spinnaker2.timing import PAPER_MODEL
from pondlib.errors import ConfigError
from pondlib.validate import check_choice

__all__ = ["explore_hardware", "LEVELS"]

#: The memory levels the schedules may compete for: the PE's SRAM data region.
LEVELS = ("SRAM",)

_SRAM_RW = (0.13, 0.175)  # pJ/bit, assumed (STEMS Table 1)
_DRAM_RW = (11.0, 12.0)  # pJ/bit, assumed (STEMS Table 1)
_MAC_PJ = 0.16  # pJ per int8 MAC, assumed (STEMS Table 1's 4-bit MAC)


def explore_hardware(level: str | None = None) -> dict[str, Any]:
    """One PE (module docstring); ``level``: ``"SRAM"`` (the only one, also the default).

    Raises:
        ConfigError: another level.
    """
    if level is not None:
        check_choice(level, "level", LEVELS, where="spinnaker2 explore_hardware", error=ConfigError)
    lim = SPINNAKER2_CHIP
    dram_bw = PAPER_MODEL.dram_bandwidth / PAPER_MODEL.clock_hz * 8  # bits per PE clock cycle
    regs = (_SRAM_RW[0], 0.0)
    return {
        "name": "SpiNNaker2 PE (SRAM data region over DRAM)",
        "shared": explore_level("PE SRAM (data region)", lim.sram_data_bytes * 8, 128.0, _SRAM_RW),
        "input_buffer": explore_level("MLA operands (inputs)", 64 * 8 * 4, 128.0, regs),
        "weight_buffer": explore_level("MLA operands (weights)", 64 * 8 * 4, 128.0, regs),
        "dram": explore_level("LPDDR4 DRAM", None, dram_bw, _DRAM_RW),
        "sop_energy_pj": _MAC_PJ,
        "mac_energy_pj": _MAC_PJ,
        "pe_k": 16,
        "pe_c": 4,
        "pe_oy": 1,
        "levels": LEVELS,
        # int8 MLA weights, float32 membranes, 1-bit spike events, int8 input
        "workload_bits": {"weight_bits": 8, "state_bits": 32, "spike_bits": 1, "input_bits": 8},
        "notes": (
            "SRAM 96 KiB data region of 128 KiB (documented, spinnaker2.limits)",
            f"DRAM {dram_bw:.1f} bit/cycle (calibrated: spinnaker2.timing fit of the paper's FC1 weight fetch, "
            "at 150 MHz)",
            "MLA 64 int8 MACs/cycle (documented); SRAM to MLA 128 bit/cycle (assumed)",
            "energies assumed, not calibrated: SRAM 0.13/0.175 pJ/bit, DRAM 11/12 pJ/bit, 0.16 pJ/MAC (STEMS Table 1)",
        ),
    }
