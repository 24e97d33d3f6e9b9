"""Xylo configuration <-> board memory image: :func:`encode_config` and :func:`decode_config`.

This module owns the translation between a :class:`~pondlib.devices.xylo.config.XyloConfig` and the
``{memory name: uint32 words}`` image laid out by :mod:`pondlib.devices.xylo.memory`, and the check
that a configuration can be written to a board of a given variant (``_limits_of``). Decoding validates
everything it reads, so a corrupt or blank image is reported, never silently run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from pondlib.devices.xylo.config import XyloConfig, validate_config
from pondlib.devices.xylo.limits import LIMITS, XyloLimits, get_limits
from pondlib.devices.xylo.memory import (
    _F,
    _MAGIC,
    _REG_WORDS,
    CORE_CLOCK_HZ,
    VARIANT_CODES,
    WORD_LAYOUT,
    _get,
    _pack_bytes,
    _put,
    _unpack_bytes,
    memory_map,
)
from pondlib.errors import ConfigError

__all__ = ["encode_config", "decode_config"]


def _limits_of(config: XyloConfig, limits: XyloLimits | str | None) -> tuple[XyloLimits, list[str]]:
    """The board variant and every reason ``config`` cannot be written to it."""
    problems: list[str] = []
    if limits is None:
        try:
            lim = get_limits(config.limits_name)
        except ConfigError:
            problems.append(f"limits_name: got {config.limits_name!r}, expected one of {sorted(VARIANT_CODES)}")
            lim = get_limits(None)
    else:
        lim = get_limits(limits)
    if lim.name not in VARIANT_CODES:
        problems.append(
            f"board variant: got {lim.name!r}, expected one of {sorted(VARIANT_CODES)} "
            "(no memory layout for custom limits)"
        )
    elif config.limits_name != lim.name:
        short = next((k for k, v in LIMITS.items() if v.name == lim.name), lim.name)
        problems.append(
            f"limits_name: got {config.limits_name!r}, expected {lim.name!r} (the board "
            f"is a {lim.name}; build the configuration for it, e.g. "
            f"config_from_specification(spec, limits={short!r}))"
        )
    problems.extend(validate_config(config, lim))
    return lim, problems


def encode_config(config: XyloConfig, limits: XyloLimits | str | None = None) -> dict[str, np.ndarray]:
    """The memory image of ``config`` for a board of variant ``limits`` (default: ``config.limits_name``).

    Returns:
        ``{memory name: uint32 words}`` for every memory of :func:`memory_map` (full size; unused words 0).

    Raises:
        ConfigError: the configuration is invalid for the variant; lists every problem.

    Example:
        >>> import numpy as np
        >>> from pondlib.devices.xylo.config import XyloConfig
        >>> cfg = XyloConfig(weights_in=[[[-1, 2]]], weights_rec=np.zeros((1, 1, 2)), weights_out=[[3]],
        ...                  dash_mem=[1], dash_syn=[2], dash_syn_2=[3], dash_mem_out=[4],
        ...                  dash_syn_out=[5], threshold=[-2], bias=[0], threshold_out=[7],
        ...                  bias_out=[0], aliases=[-1], weight_shift_rec=9, dt=1e-3)
        >>> image = encode_config(cfg)
        >>> [hex(w) for w in image["REG"][:5]]
        ['0x58594c01', '0x821', '0x1', '0x90', '0xc350']
        >>> hex(image["IWT"][0]), hex(image["NPAR"][0]), hex(image["NCFG"][0])
        ('0x2ff', '0xfffe', '0x321')
        >>> decode_config(image) == cfg
        True
    """
    if not isinstance(config, XyloConfig):
        raise ConfigError(
            "not a XyloConfig",
            value=type(config).__name__,
            where="encode_config",
            fix="build one with config_from_specification or XyloConfig(...)",
        )
    lim, problems = _limits_of(config, limits)
    if problems:
        raise ConfigError(problems=problems, where="encode_config")
    regions = {r.name: r for r in memory_map(lim)}
    n_in, n_hid, n_out, k = config.n_input, config.n_hidden, config.n_output, config.n_synapses
    C, N, O, K, F = lim.n_input, lim.n_hidden, lim.n_output, lim.n_synapses, lim.max_fanout_rec

    reg = np.zeros(_REG_WORDS, dtype=np.int64)

    def put_reg(name: str, value: int) -> None:
        f = _F[("REG", name)]
        row = reg[f.word : f.word + 1]
        _put(row, f, value)

    put_reg("variant", VARIANT_CODES[lim.name])
    put_reg("magic", _MAGIC)
    put_reg("n_input", n_in)
    put_reg("n_output", n_out)
    put_reg("n_hidden", n_hid)
    put_reg("syn2_enable", int(k == 2))
    put_reg("bias_enable", int(config.bias_enable))
    put_reg("weight_shift_in", config.weight_shift_in)
    put_reg("weight_shift_rec", config.weight_shift_rec)
    put_reg("weight_shift_out", config.weight_shift_out)
    put_reg("dt_div", round(config.dt * CORE_CLOCK_HZ))
    # float64 bits, little-endian word order whatever the host byte order: dt reads back exactly.
    dt_lo, dt_hi = np.array([config.dt], dtype="<f8").view("<u4").astype(np.int64)
    put_reg("dt_lo", int(dt_lo))
    put_reg("dt_hi", int(dt_hi))

    full_in = np.zeros((C, N, K), dtype=np.int64)
    full_in[:n_in, :n_hid, :k] = config.weights_in
    full_out = np.zeros((N, O), dtype=np.int64)
    full_out[:n_hid, :n_out] = config.weights_out

    # Recurrent fan-out lists: np.nonzero walks (pre, post, syn) in C order, i.e. each pre neuron's
    # entries come out in ascending (post, syn) order; the slot is the rank within its pre neuron.
    pre, post, syn = np.nonzero(config.weights_rec)
    counts = np.bincount(pre, minlength=n_hid)
    slot = np.arange(pre.size) - (np.cumsum(counts) - counts)[pre]
    entries = np.zeros(pre.size, dtype=np.int64)
    _put(entries, _F[("RWT", "weight")], config.weights_rec[pre, post, syn])
    _put(entries, _F[("RWT", "target")], post)
    _put(entries, _F[("RWT", "syn")], syn)
    _put(entries, _F[("RWT", "valid")], 1)
    rwt = np.zeros(N * F, dtype=np.int64)
    rwt[pre * F + slot] = entries

    npar = np.zeros(N, dtype=np.int64)
    _put(npar[:n_hid], _F[("NPAR", "threshold")], config.threshold)
    _put(npar[:n_hid], _F[("NPAR", "bias")], config.bias)
    ncfg = np.zeros(N, dtype=np.int64)
    has_alias = config.aliases >= 0
    for name in ("dash_mem", "dash_syn", "dash_syn_2"):
        _put(ncfg[:n_hid], _F[("NCFG", name)], getattr(config, name))
    _put(ncfg[:n_hid], _F[("NCFG", "alias_target")], np.where(has_alias, config.aliases, 0))
    _put(ncfg[:n_hid], _F[("NCFG", "alias_valid")], has_alias)
    opar = np.zeros(O, dtype=np.int64)
    _put(opar[:n_out], _F[("OPAR", "threshold_out")], config.threshold_out)
    _put(opar[:n_out], _F[("OPAR", "bias_out")], config.bias_out)
    ocfg = np.zeros(O, dtype=np.int64)
    _put(ocfg[:n_out], _F[("OCFG", "dash_mem_out")], config.dash_mem_out)
    _put(ocfg[:n_out], _F[("OCFG", "dash_syn_out")], config.dash_syn_out)

    image = {
        "REG": reg,
        "IWT": _pack_bytes("IWT", full_in, regions["IWT"].words),
        "RWT": rwt,
        "OWT": _pack_bytes("OWT", full_out, regions["OWT"].words),
        "NPAR": npar,
        "NCFG": ncfg,
        "OPAR": opar,
        "OCFG": ocfg,
    }
    return {name: image[name].astype(np.uint32) for name in regions}


def _words(value: Any, n_words: int) -> tuple[np.ndarray | None, str]:
    """``value`` as ``n_words`` int64 words in 0..0xFFFFFFFF, or ``(None, why not)``."""
    if value is None:
        return None, "missing"
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        return None, "a ragged sequence"
    if arr.shape != (n_words,) or arr.dtype.kind not in "iu":
        return None, f"shape {arr.shape}, dtype {arr.dtype}"
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) > 0xFFFFFFFF):
        bad = int(arr.min()) if int(arr.min()) < 0 else int(arr.max())
        return None, f"a word {bad} outside 0..0xFFFFFFFF"
    return arr.astype(np.int64), ""


#: What a decoding error asks the user to do.
_DECODE_FIX = "write the configuration again (XyloBoard.apply_config)"


def _decode_error(problems: list[str]) -> ConfigError:
    """The :class:`ConfigError` of :func:`decode_config` listing ``problems``."""
    return ConfigError(problems=problems, where="decode_config", fix=_DECODE_FIX)


def _reg_reader(reg: np.ndarray) -> Any:
    """``get_reg(name) -> int``: the ``REG`` field ``name`` of the register words ``reg``."""

    def get_reg(name: str) -> int:
        f = _F[("REG", name)]
        return int(_get(reg[f.word], f))

    return get_reg


def _decode_variant(image: Any) -> tuple[Any, XyloLimits]:
    """The register reader and the variant of an image: a mapping whose ``REG`` holds the magic word and a
    known variant code (the first problem found is raised: nothing else can be read without them)."""
    if not isinstance(image, Mapping):
        raise _decode_error(
            [f"image: got {type(image).__name__} (not a mapping), expected {{memory name: 32-bit words}}"]
        )
    reg, why = _words(image.get("REG"), _REG_WORDS)
    if reg is None:
        raise _decode_error([f"REG: got {why}, expected {_REG_WORDS} words of global registers"])
    get_reg = _reg_reader(reg)
    magic, code = get_reg("magic"), get_reg("variant")
    if magic != _MAGIC:
        what = " (a blank memory image: no configuration was written)" if not reg.any() else ""
        raise _decode_error([f"REG[0]: got 0x{int(reg[0]):08X}, expected magic 0x{_MAGIC:06X} in bits [31:8]{what}"])
    names = {v: k for k, v in VARIANT_CODES.items()}
    if code not in names:
        raise _decode_error([f"REG[0] variant: got {code}, expected one of {sorted(names)}"])
    return get_reg, get_limits(next(k for k, v in LIMITS.items() if v.name == names[code]))


def _decode_memories(image: Mapping[str, Any], lim: XyloLimits) -> tuple[dict[str, np.ndarray], list[str]]:
    """Every memory of the variant's map as int64 words, and the problems: unknown memories, missing or
    mis-sized ones."""
    problems: list[str] = []
    words: dict[str, np.ndarray] = {}
    regions = memory_map(lim)
    unknown = sorted(str(k) for k in image if k not in {r.name for r in regions})
    if unknown:
        problems.append(
            f"image: got unknown memories {unknown}, expected only {[r.name for r in regions]} ({lim.name})"
        )
    for r in regions:
        arr, why = _words(image.get(r.name), r.words)
        if arr is None:
            problems.append(f"{r.name}: got {why}, expected ({r.words},) 32-bit words ({lim.name})")
        else:
            words[r.name] = arr
    return words, problems


def _decode_sizes(get_reg: Any, lim: XyloLimits) -> tuple[tuple[int, int, int, int], float, list[str]]:
    """``(n_in, n_out, n_hid, k)`` and ``dt`` (s) from the registers, and the problems: a size outside
    ``1..limit``, or a step timer ``dt_div`` other than ``round(dt * CORE_CLOCK_HZ)``."""
    problems: list[str] = []
    n_in, n_out, n_hid = get_reg("n_input"), get_reg("n_output"), get_reg("n_hidden")
    k = 2 if get_reg("syn2_enable") else 1
    for name, v, hi in (
        ("n_input", n_in, lim.n_input),
        ("n_output", n_out, lim.n_output),
        ("n_hidden", n_hid, lim.n_hidden),
        ("synapses (syn2_enable)", k, lim.n_synapses),
    ):
        if not 1 <= v <= hi:
            problems.append(f"REG {name}: got {v}, expected 1..{hi} ({lim.name})")
    dt = float(np.array([get_reg("dt_lo"), get_reg("dt_hi")], dtype="<u4").view("<f8")[0])
    ticks = dt * CORE_CLOCK_HZ if math.isfinite(dt) else math.inf
    if not math.isfinite(ticks) or round(ticks) != get_reg("dt_div"):
        problems.append(
            f"REG dt_div: got {get_reg('dt_div')} cycles, expected round(dt * {CORE_CLOCK_HZ}) "
            f"for dt = {dt!r} s (the step timer disagrees with dt)"
        )
    return (n_in, n_out, n_hid, k), dt, problems


def _decode_recurrent(rwt: np.ndarray, lim: XyloLimits, n_hid: int, k: int) -> tuple[np.ndarray | None, list[str]]:
    """``weights_rec`` ``(n_hid, n_hid, k)`` from the fan-out lists (``max_fanout_rec`` slots per hidden
    neuron; valid entries name a target and a synapse), or None and the problems: an entry pointing
    outside the network, or two entries for one (pre, post, synapse)."""
    F = lim.max_fanout_rec
    ent = rwt.reshape(lim.n_hidden, F)[:n_hid]
    pre, slot = np.nonzero(_get(ent, _F[("RWT", "valid")]))
    used = ent[pre, slot]
    post, syn = _get(used, _F[("RWT", "target")]), _get(used, _F[("RWT", "syn")])
    outside = (post >= n_hid) | (syn >= k)
    if outside.any():
        e = int(np.argmax(outside))
        return None, [
            f"RWT[{int(pre[e]) * F + int(slot[e])}]: got target {int(post[e])} synapse "
            f"{int(syn[e])}, expected a hidden id < {n_hid} and a synapse < {k} "
            f"({int(outside.sum())} entr(y/ies) affected)"
        ]
    flat = (pre * n_hid + post) * k + syn
    if np.unique(flat).size != flat.size:
        return None, [
            "RWT: got duplicate fan-out entries for one (pre, post, synapse), expected at most one entry each"
        ]
    w_rec = np.zeros((n_hid, n_hid, k), dtype=np.int64)
    w_rec[pre, post, syn] = _get(used, _F[("RWT", "weight")])
    return w_rec, []


def _decode_neurons(words: Mapping[str, np.ndarray], n_hid: int, n_out: int) -> dict[str, np.ndarray]:
    """The per-neuron fields of the configuration: hidden ones (``NPAR``, ``NCFG``: first ``n_hid``
    words; ``aliases`` -1 where no alias is valid) and output ones (``OPAR``, ``OCFG``: first ``n_out``)."""

    def field_of(name: str, memories: tuple[str, str], n: int) -> np.ndarray:
        f = next(f for f in WORD_LAYOUT if f.name == name and f.memory in memories)
        return _get(words[f.memory][:n], f)

    hidden = ("dash_mem", "dash_syn", "dash_syn_2", "threshold", "bias")
    output = ("dash_mem_out", "dash_syn_out", "threshold_out", "bias_out")
    fields = {name: field_of(name, ("NPAR", "NCFG"), n_hid) for name in hidden}
    fields.update({name: field_of(name, ("OPAR", "OCFG"), n_out) for name in output})
    valid = field_of("alias_valid", ("NPAR", "NCFG"), n_hid)
    fields["aliases"] = np.where(valid == 1, field_of("alias_target", ("NPAR", "NCFG"), n_hid), -1)
    return fields


def decode_config(image: Mapping[str, np.ndarray]) -> XyloConfig:
    """The configuration held by a memory image (the inverse of :func:`encode_config`).

    The variant and the sizes are read from ``REG``; the decoded configuration is validated.

    Raises:
        ConfigError: a blank image (no configuration), a missing or mis-sized memory, an inconsistent
            field (a fan-out entry pointing outside the network, a duplicate entry, a step timer that
            disagrees with ``dt``) or an invalid decoded configuration; lists every problem.

    Example:
        >>> blank = {r.name: np.zeros(r.words, np.uint32) for r in memory_map()}
        >>> try:
        ...     decode_config(blank)
        ... except ConfigError as err:
        ...     print(err.problems[0])  # doctest: +NORMALIZE_WHITESPACE
        REG[0]: got 0x00000000, expected magic 0x58594C in bits [31:8]
        (a blank memory image: no configuration was written)
    """
    get_reg, lim = _decode_variant(image)
    words, problems = _decode_memories(image, lim)
    (n_in, n_out, n_hid, k), dt, size_problems = _decode_sizes(get_reg, lim)
    if problems + size_problems:
        raise _decode_error(problems + size_problems)
    C, N, O, K = lim.n_input, lim.n_hidden, lim.n_output, lim.n_synapses
    w_in = _unpack_bytes("IWT", words["IWT"], C * N * K).reshape(C, N, K)[:n_in, :n_hid, :k]
    w_out = _unpack_bytes("OWT", words["OWT"], N * O).reshape(N, O)[:n_hid, :n_out]
    w_rec, problems = _decode_recurrent(words["RWT"], lim, n_hid, k)
    if problems:
        raise _decode_error(problems)
    config = XyloConfig(
        weights_in=w_in,
        weights_rec=w_rec,
        weights_out=w_out,
        **_decode_neurons(words, n_hid, n_out),
        weight_shift_in=get_reg("weight_shift_in"),
        weight_shift_rec=get_reg("weight_shift_rec"),
        weight_shift_out=get_reg("weight_shift_out"),
        bias_enable=bool(get_reg("bias_enable")),
        dt=dt,
        limits_name=lim.name,
    )
    problems = validate_config(config, lim)
    if problems:
        raise _decode_error(problems)
    return config
