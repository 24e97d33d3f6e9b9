r"""Hardware for schedule exploration, as validated data with units in every field name.

A :class:`Hardware` is one core (STEMS's single-core accelerator): a shared on-chip memory that holds
inputs, weights, outputs and states; an input buffer and a weight buffer between it and the PE array;
DRAM; an output-stationary PE array (``pe_k`` output channels x ``pe_c`` input channels x ``pe_oy``
output rows, one weight and one state register per PE); and the energy of one operation. Units:

=====================  ==================================================================
quantity               unit
=====================  ==================================================================
``size_bits``          bits (``None``: unbounded, DRAM)
``bandwidth_bits_per_cycle``  bits per cycle
``*_energy_pj_per_bit``       pJ per bit read or written
``sop_energy_pj``      pJ per synaptic operation (1-bit spike input, dense count)
``mac_energy_pj``      pJ per multi-bit multiply-accumulate
=====================  ==================================================================

Every field is checked when the object is built and every problem is reported in one
:class:`~pondlib.errors.ConfigError` (finite, >= 0 energies, > 0 sizes and bandwidths, whole PE counts).

:func:`meta_prototype` is STEMS's "Meta-prototype-like" core of ``docs/EXPLORE.md``; its memory sizes
are STEMS's, in 128 KiB banks with STEMS's slack (:data:`MEMORY_PRESETS`). :func:`parse_memory_size`
reads ``"1MiB"``, ``"128KB"``, ``"131072"`` (bytes).

Example:
    >>> hw = meta_prototype("1MB")
    >>> hw.memory_bits, hw.dram.read_energy_pj_per_bit, hw.dram.write_energy_pj_per_bit
    (8388608, 10.9375, 11.71875)
    >>> meta_prototype("128KB").memory_bits            # 1.05 x 128 KiB, as in STEMS
    1101004
    >>> MemoryLevel("sram", size_bits=0, bandwidth_bits_per_cycle=-1, read_energy_pj_per_bit=float("nan"),
    ...             write_energy_pj_per_bit=0.1)
    Traceback (most recent call last):
    ...
    pondlib.errors.ConfigError: MemoryLevel 'sram': 3 configuration problem(s): ...
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from pondlib.errors import ConfigError
from pondlib.explore._checks import Problems

__all__ = [
    "MemoryLevel",
    "Hardware",
    "meta_prototype",
    "parse_memory_size",
    "hardware_from_description",
    "device_hardware",
    "MEMORY_PRESETS",
    "BANK_BITS",
]

#: One STEMS global-buffer bank: 128 KiB (131,072 x 8 bit).
BANK_BITS = 131072 * 8

#: STEMS's shared-memory variants, in banks of :data:`BANK_BITS` (its ``Meta_prototype_like_*`` cores:
#: the smaller ones carry a few percent of slack, e.g. "128KB" is 1.05 x 128 KiB).
MEMORY_PRESETS: dict[str, float] = {
    "128KB": 1.05,
    "256KB": 2.1,
    "384KB": 3.1,
    "512KB": 4.0,
    "1MB": 8.0,
    "2MB": 16.0,
}

_UNITS = {"": 1, "B": 1, "KB": 1024, "KIB": 1024, "MB": 1024**2, "MIB": 1024**2, "GB": 1024**3, "GIB": 1024**3}


@dataclass(frozen=True)
class MemoryLevel:
    """One memory: capacity, bandwidth and energy per bit.

    Attributes:
        name: a label.
        size_bits: capacity in bits (``None``: unbounded, for DRAM).
        bandwidth_bits_per_cycle: bits per cycle (read or write).
        read_energy_pj_per_bit: pJ per bit read. write_energy_pj_per_bit: pJ per bit written.
    """

    name: str
    size_bits: int | None
    bandwidth_bits_per_cycle: float
    read_energy_pj_per_bit: float
    write_energy_pj_per_bit: float

    def __post_init__(self) -> None:
        p = Problems(f"MemoryLevel {self.name!r}" if isinstance(self.name, str) else "MemoryLevel")
        p.instance(self.name, "name", str)
        size = None if self.size_bits is None else p.integer(self.size_bits, "size_bits", lo=1)
        bw = p.number(self.bandwidth_bits_per_cycle, "bandwidth_bits_per_cycle", lo=0.0, lo_open=True)
        rd = p.number(self.read_energy_pj_per_bit, "read_energy_pj_per_bit", lo=0.0)
        wr = p.number(self.write_energy_pj_per_bit, "write_energy_pj_per_bit", lo=0.0)
        p.raise_if_any("give sizes in bits (> 0), bandwidths in bits per cycle (> 0), energies in pJ per bit (>= 0)")
        object.__setattr__(self, "size_bits", size)
        object.__setattr__(self, "bandwidth_bits_per_cycle", bw)
        object.__setattr__(self, "read_energy_pj_per_bit", rd)
        object.__setattr__(self, "write_energy_pj_per_bit", wr)


@dataclass(frozen=True)
class Hardware:
    """One core with a shared on-chip memory, inner buffers, DRAM and an output-stationary PE array.

    Attributes:
        name: a label.
        shared: the shared on-chip memory (inputs, weights, outputs and states); its ``size_bits`` is the
            capacity that schedules compete for.
        input_buffer, weight_buffer: the inner buffers feeding the PE array.
        dram: the off-chip memory (``size_bits`` may be None).
        sop_energy_pj: pJ per synaptic operation (1-bit input).
        mac_energy_pj: pJ per multi-bit multiply-accumulate.
        pe_k, pe_c, pe_oy: PE array unrolling over output channels, input channels and output rows.
        notes: where each figure comes from (calibrated or assumed), one line each.

    Raises:
        ConfigError: every bad field at once (a level that is not a :class:`MemoryLevel`, an unbounded
            on-chip memory, energies that are not finite and >= 0, PE counts that are not whole and >= 1).
    """

    name: str
    shared: MemoryLevel
    input_buffer: MemoryLevel
    weight_buffer: MemoryLevel
    dram: MemoryLevel
    sop_energy_pj: float
    mac_energy_pj: float
    pe_k: int = 32
    pe_c: int = 2
    pe_oy: int = 16
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        p = Problems(f"Hardware {self.name!r}" if isinstance(self.name, str) else "Hardware")
        p.instance(self.name, "name", str)
        for level in ("shared", "input_buffer", "weight_buffer", "dram"):
            value = p.instance(getattr(self, level), level, MemoryLevel)
            if value is not None and level != "dram" and value.size_bits is None:
                p.add(f"{level}.size_bits: got None (unbounded), expected a capacity in bits for on-chip memory")
        sop = p.number(self.sop_energy_pj, "sop_energy_pj", lo=0.0)
        mac = p.number(self.mac_energy_pj, "mac_energy_pj", lo=0.0)
        pes = {n: p.integer(getattr(self, n), n, lo=1, hi=2**31 - 1) for n in ("pe_k", "pe_c", "pe_oy")}
        notes = self.notes
        if not isinstance(notes, tuple) or not all(isinstance(n, str) for n in notes):
            p.add(f"notes: got a {type(notes).__name__}, expected a tuple of str")
        p.raise_if_any("describe every memory level with MemoryLevel and give energies in pJ (finite, >= 0)")
        object.__setattr__(self, "sop_energy_pj", sop)
        object.__setattr__(self, "mac_energy_pj", mac)
        for n, v in pes.items():
            object.__setattr__(self, n, v)

    @property
    def memory_bits(self) -> int:
        """Capacity of the shared on-chip memory in bits."""
        return int(self.shared.size_bits)

    def with_memory(self, size: int | str, *, unit: str = "bytes") -> Hardware:
        """A copy with a shared memory of ``size`` (a preset name, a size string, or a number of
        ``unit``: ``"bytes"`` or ``"bits"``); bandwidth and energies unchanged."""
        bits = _size_bits(size, unit)
        name = f"{self.name.split(' @ ')[0]} @ {_human(bits)}"
        return dataclasses.replace(self, name=name, shared=dataclasses.replace(self.shared, size_bits=bits))


def _size_bits(size: Any, unit: str) -> int:
    if unit not in ("bytes", "bits"):
        raise ConfigError("unit", value=unit, limit="'bytes' or 'bits'", fix="pass unit='bytes' or unit='bits'")
    if isinstance(size, str):
        return parse_memory_size(size)
    p = Problems("memory size")
    value = p.number(size, f"size ({unit})", lo=0.0, lo_open=True)
    p.raise_if_any("pass a positive number, e.g. 131072 bytes, or a string such as '1MiB'")
    bits = int(math.floor(value * (8 if unit == "bytes" else 1)))
    if bits < 1:
        raise ConfigError("memory size", value=size, limit=">= 1 bit", fix="pass a larger memory")
    return bits


def parse_memory_size(text: str) -> int:
    """A memory size in bits from ``text``.

    A STEMS preset name (``"128KB"``, ``"256KB"``, ``"384KB"``, ``"512KB"``, ``"1MB"``, ``"2MB"``, any case)
    gives that core's size (:data:`MEMORY_PRESETS`); otherwise a number with an optional unit: ``B``
    (bytes, the default), ``KB``/``KiB`` (1024 bytes: the paper's "1 MB" is 1 MiB), ``MB``/``MiB``,
    ``GB``/``GiB``. Fractions are allowed; the result is rounded down to whole bits.

    Raises:
        ConfigError: not a size, or not > 0.

    Example:
        >>> parse_memory_size("1MiB"), parse_memory_size("128 KiB"), parse_memory_size("128kb")
        (8388608, 1048576, 1101004)
        >>> parse_memory_size("-3MB")
        Traceback (most recent call last):
        ...
        pondlib.errors.ConfigError: memory size: got '-3MB', expected a positive number with an optional unit ...
    """
    if not isinstance(text, str):
        raise ConfigError(
            "memory size", value=f"a {type(text).__name__}", limit="a string", fix="pass e.g. '1MiB' or '128KB'"
        )
    norm = text.strip().replace(" ", "").upper()
    for name, banks in MEMORY_PRESETS.items():
        if norm == name.upper():
            return int(math.floor(banks * BANK_BITS))
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)(?:E\d+)?([KMG]I?B|B)?", norm)
    if m is None:
        raise ConfigError(
            "memory size",
            value=repr(text),
            limit="a positive number with an optional unit (B, KB, KiB, MB, MiB, GB, GiB)",
            fix="pass e.g. '1MiB', '128KB' (STEMS's preset) or 131072 (bytes)",
        )
    unit = m.group(2) or ""
    number = float(norm[: len(norm) - len(unit)] if unit else norm)
    bits = int(math.floor(number * _UNITS[unit] * 8)) if math.isfinite(number) else 0
    if bits < 1:
        raise ConfigError(
            "memory size", value=repr(text), limit="at least 1 bit", fix="pass a positive size, e.g. '1MiB'"
        )
    return bits


def _human(bits: int) -> str:
    """``bits`` as a short size: ``1 MiB``, ``134.4 KiB``, ``96 B``."""
    b = bits / 8
    for unit, scale in (("MiB", 1024**2), ("KiB", 1024)):
        if b >= scale:
            v = b / scale
            return f"{v:.0f} {unit}" if v.is_integer() else f"{v:.1f} {unit}"
    return f"{b:g} B"


def meta_prototype(memory: int | str = "1MB") -> Hardware:
    """STEMS's "Meta-prototype-like" single core (``docs/EXPLORE.md``).

    Shared memory of ``memory`` (a :data:`MEMORY_PRESETS` name, a size string for
    :func:`parse_memory_size`, or a number of bytes), 128 bit/cycle per 128 KiB bank (1 MiB: 1024
    bit/cycle), 0.13 / 0.175 pJ per bit read / written; 16 KiB input and 32 KiB weight buffers at 0.10 /
    0.12 pJ per bit; DRAM at 64 bit/cycle, 700 / 750 pJ per 64-bit word read / written; 70 fJ per SOP and
    160 fJ per 4-bit MAC; a 32 x 2 x 16 (K x C x OY) output-stationary PE array.

    Example:
        >>> hw = meta_prototype(131072)
        >>> hw.memory_bits, hw.shared.bandwidth_bits_per_cycle, hw.name
        (1048576, 128.0, 'meta-prototype @ 128 KiB')
    """
    bits = _size_bits(memory, "bytes")
    banks = max(bits / BANK_BITS, 1e-9)
    return Hardware(
        name=f"meta-prototype @ {_human(bits)}",
        shared=MemoryLevel("shared SRAM", bits, 128.0 * max(1.0, math.floor(banks)), 0.13, 0.175),
        input_buffer=MemoryLevel("input buffer", 16 * 1024 * 8, 128.0, 0.10, 0.12),
        weight_buffer=MemoryLevel("weight buffer", 32 * 1024 * 8, 256.0, 0.10, 0.12),
        dram=MemoryLevel("DRAM", None, 64.0, 700.0 / 64.0, 750.0 / 64.0),
        sop_energy_pj=0.07,
        mac_energy_pj=0.16,
        pe_k=32,
        pe_c=2,
        pe_oy=16,
    )


_LEVEL_KEYS = ("name", "size_bits", "bandwidth_bits_per_cycle", "read_energy_pj_per_bit", "write_energy_pj_per_bit")
_EXTRA_KEYS = ("levels", "notes", "workload_bits")  # read by the caller (pond explore), not by Hardware
_DESC_KEYS = (
    "name",
    "shared",
    "input_buffer",
    "weight_buffer",
    "dram",
    "sop_energy_pj",
    "mac_energy_pj",
    "pe_k",
    "pe_c",
    "pe_oy",
)


def hardware_from_description(desc: Any) -> Hardware:
    """A :class:`Hardware` from plain data: what a chip's ``Device.explore_hardware()`` returns.

    ``desc`` holds ``name``, ``shared``, ``input_buffer``, ``weight_buffer``, ``dram`` (each a mapping of
    the :class:`MemoryLevel` fields), ``sop_energy_pj``, ``mac_energy_pj``, ``pe_k``, ``pe_c``, ``pe_oy``,
    and optionally ``notes`` (kept), ``levels`` and ``workload_bits`` (for the caller, ignored here).

    Raises:
        ConfigError: not a mapping, a missing or unknown key, or a bad value (every problem listed).

    Example:
        >>> hw = hardware_from_description(_example_description())
        >>> hw.name, hw.memory_bits, hw.notes
        ('toy', 8192, ('all assumed',))
    """
    from collections.abc import Mapping

    p = Problems("hardware description")
    if not isinstance(desc, Mapping):
        p.add(f"description: got a {type(desc).__name__}, expected a mapping (Device.explore_hardware())")
        p.raise_if_any("pass what a device's explore_hardware() returns")
    missing = [k for k in _DESC_KEYS if k not in desc]
    unknown = sorted(str(k) for k in desc if k not in (*_DESC_KEYS, *_EXTRA_KEYS))
    if missing:
        p.add(f"keys: missing {missing}")
    if unknown:
        p.add(f"keys: unknown {unknown}; expected some of {list(_DESC_KEYS) + list(_EXTRA_KEYS)}")
    levels = {}
    for key in ("shared", "input_buffer", "weight_buffer", "dram"):
        level = desc.get(key)
        if key in missing:
            continue
        if not isinstance(level, Mapping) or sorted(level) != sorted(_LEVEL_KEYS):
            p.add(f"{key}: expected a mapping with exactly the keys {list(_LEVEL_KEYS)}")
            continue
        try:
            levels[key] = MemoryLevel(**{k: level[k] for k in _LEVEL_KEYS})
        except ConfigError as err:
            p.add(f"{key}: {err}")
    p.raise_if_any("describe the chip as Device.explore_hardware() documents")
    notes = desc.get("notes", ())
    return Hardware(
        name=desc["name"],
        **levels,
        **{k: desc[k] for k in ("sop_energy_pj", "mac_energy_pj", "pe_k", "pe_c", "pe_oy")},
        notes=tuple(notes) if isinstance(notes, (list, tuple)) else notes,
    )


def _example_description() -> dict[str, Any]:
    """A minimal description in the format of ``Device.explore_hardware()`` (for examples and tests)."""

    def level(name: str, size: int | None) -> dict[str, Any]:
        return dict(zip(_LEVEL_KEYS, (name, size, 64.0, 0.1, 0.1)))

    return {
        "name": "toy",
        "shared": level("sram", 8192),
        "input_buffer": level("ib", 1024),
        "weight_buffer": level("wb", 1024),
        "dram": level("dram", None),
        "sop_energy_pj": 0.1,
        "mac_energy_pj": 0.2,
        "pe_k": 4,
        "pe_c": 1,
        "pe_oy": 1,
        "notes": ("all assumed",),
    }


def device_hardware(device: Any, level: str | None = None) -> Hardware:
    """The :class:`Hardware` of a registered chip (its registry name or a ``Device``), from its
    ``explore_hardware(level)``; ``level`` picks the memory the schedules compete for.

    Raises:
        PondError: an unknown device, or one without a description (the message names both).

    Example:
        >>> from pondlib.devices import registry
        >>> described = [n for n in registry.names() if "explore_hardware" in type(registry.get(n)).__dict__]
        >>> all(device_hardware(n).memory_bits > 0 for n in described), len(described) >= 2
        (True, True)
    """
    from pondlib.devices import registry

    dev = registry.get(device) if isinstance(device, str) else device
    if not hasattr(dev, "explore_hardware"):
        raise ConfigError("device", value=f"a {type(device).__name__}", limit="a device name or a Device")
    return hardware_from_description(dev.explore_hardware(level))
