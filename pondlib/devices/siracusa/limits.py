"""Hardware limits of the Siracusa SoC (PULP cluster + N-EUREKA NPU), as data.

One frozen dataclass, one default instance. Every limit the mapper, the constraint checks, the tiler
and the cycle model use is a field here (units in the comments); nothing is a literal in a default.
Source: ``docs/TARGETS.md`` (Siracusa) and the Deeploy Siracusa tutorial.

Example:
    >>> from pondlib.devices.siracusa.limits import SIRACUSA, get_limits
    >>> SIRACUSA.n_cores, SIRACUSA.l1_bytes, SIRACUSA.l2_bytes, SIRACUSA.l3_bytes
    (8, 262144, 2097152, 16777216)
    >>> SIRACUSA.acc_range, SIRACUSA.weight_range
    ((-2147483648, 2147483647), (-128, 127))
    >>> SIRACUSA.npu_shift_max, SIRACUSA.gemm_chunk_quantum
    (31, 16)
    >>> get_limits("siracusa") is SIRACUSA
    True
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from pondlib.devices.core.lookup import resolve_limits
from pondlib.errors import ConfigError
from pondlib.validate import check_int, check_type

__all__ = ["SiracusaLimits", "SIRACUSA", "LIMITS", "get_limits"]


@dataclass(frozen=True)
class SiracusaLimits:
    """Limits of one Siracusa variant. Sizes in bytes, counts per SoC."""

    name: str = "Siracusa"
    n_cores: int = 8  # RV32 cores in the cluster (XpulpV2)
    simd_lanes: int = 4  # int8 lanes of one sdotp instruction
    l1_bytes: int = 256 * 1024  # B, cluster TCDM (1-cycle)
    l1_tile_budget: int = 64_000  # B, L1 given to one layer's tiles (the tutorial's --l1 64000)
    l2_bytes: int = 2 * 1024 * 1024  # B, on-chip SRAM
    l3_bytes: int = 16 * 1024 * 1024  # B, off-chip RAM
    weight_memory_bytes: int = 4 * 1024 * 1024  # B, NMS weight memory next to the NPU
    acc_bits: int = 32  # signed accumulator, wraps around (two's complement)
    weight_bits: int = 8  # signed weights
    act_bits: int = 8  # activations: int8 signed or uint8 unsigned
    bias_bits: int = 32  # signed bias added to the accumulator
    shift_max: int = 31  # RequantShift: shift 0..31 (div = 2^shift)
    state_bits_max: int = 32  # widest integer LIF state
    gemm_chunk_quantum: int = 16  # GEMM outputs O >= 16 must be a multiple of 16 (chunk ceil(O/8) even)
    npu_kernels: tuple[tuple[int, int, bool], ...] = ((1, 1, False), (3, 3, False), (3, 3, True))
    #                                    (kh, kw, depthwise) shapes the N-EUREKA NPU runs
    npu_stride: int = 1  # the NPU supports stride 1 only
    npu_shift_max: int = 31  # 5-bit shift field
    npu_weight_bytes: int = 4 * 1024 * 1024  # B, weights of one NPU layer (weight memory size)

    def __post_init__(self) -> None:
        """Every field checked: sizes and counts whole numbers (>= 1, or >= 0 for optional memories), bit
        widths and shifts within what an int64 model holds, NPU kernels as ``(kh, kw, depthwise)``."""
        where = f"SiracusaLimits({self.name!r})" if isinstance(self.name, str) else "SiracusaLimits"
        check_type(self.name, "name", str, where=where, error=ConfigError)
        for f in fields(self):
            if f.name in ("name", "npu_kernels"):
                continue
            lo, hi = _INT_BOUNDS.get(f.name, (1, None))
            object.__setattr__(
                self, f.name, check_int(getattr(self, f.name), f.name, lo=lo, hi=hi, where=where, error=ConfigError)
            )
        kernels = self.npu_kernels
        ok = isinstance(kernels, (tuple, list)) and all(
            isinstance(k, (tuple, list))
            and len(k) == 3
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in k[:2])
            and isinstance(k[2], bool)
            for k in kernels
        )
        if not ok:
            raise ConfigError(
                "npu_kernels",
                value=kernels,
                limit="a tuple of (kh, kw, depthwise) with kh, kw >= 1",
                where=where,
                fix="pass e.g. ((1, 1, False), (3, 3, False), (3, 3, True))",
            )
        object.__setattr__(self, "npu_kernels", tuple(tuple(k) for k in kernels))
        if self.l1_tile_budget > self.l1_bytes:
            raise ConfigError(
                "l1_tile_budget",
                value=self.l1_tile_budget,
                limit=f"<= l1_bytes = {self.l1_bytes}",
                where=where,
                fix="keep the tile budget within L1",
            )

    @property
    def acc_range(self) -> tuple[int, int]:
        """Inclusive range of the signed accumulator (int32)."""
        return -(1 << (self.acc_bits - 1)), (1 << (self.acc_bits - 1)) - 1

    @property
    def weight_range(self) -> tuple[int, int]:
        """Inclusive signed weight range (int8)."""
        return -(1 << (self.weight_bits - 1)), (1 << (self.weight_bits - 1)) - 1

    @property
    def bias_range(self) -> tuple[int, int]:
        """Inclusive signed bias range (int32)."""
        return -(1 << (self.bias_bits - 1)), (1 << (self.bias_bits - 1)) - 1


#: Integer fields whose bounds differ from ``>= 1``.
_INT_BOUNDS: dict[str, tuple[int, int | None]] = {
    "l3_bytes": (0, None),
    "weight_memory_bytes": (0, None),
    "npu_weight_bytes": (0, None),
    "acc_bits": (2, 64),
    "weight_bits": (2, 32),
    "act_bits": (2, 32),
    "bias_bits": (2, 64),
    "shift_max": (0, 62),
    "state_bits_max": (2, 64),
    "npu_shift_max": (0, 62),
}

SIRACUSA = SiracusaLimits()

#: The variants by short name.
LIMITS: dict[str, SiracusaLimits] = {"siracusa": SIRACUSA}


def get_limits(limits: SiracusaLimits | str | None = None) -> SiracusaLimits:
    """A limits instance from an instance, a short name (``siracusa``), a display name, or None (the default)."""
    return resolve_limits(limits, LIMITS, default=SIRACUSA, device="Siracusa")
