r"""The configuration of a Siracusa deployment (its integer layers in order) and every constraint check.

Every layer's integer core is **RequantShift** (``docs/TARGETS.md``), per channel ``o``:

.. math::

    t &= \mathrm{wrap}_{32}\big(\mathrm{wrap}_{32}((x + \mathrm{in\_offset}) \cdot \mathrm{mul}_o)
         + \mathrm{add}_o\big) \\
    t &= \mathrm{wrap}_{32}(t + 2^{s-1}) \quad \text{if } s > 0 \text{ (round half up)} \\
    y &= \mathrm{clamp}(t \gg s,\ lo,\ hi) \quad \text{(arithmetic shift)}

with ``div = 2^s`` an exact power of two, ``[lo, hi] = [-2^{b-1}, 2^{b-1}-1]`` (signed) or
``[0, 2^b - 1]`` (unsigned: a ReLU is a RequantShift with an unsigned output).

Layers (types in :mod:`~pondlib.devices.siracusa.specification`; all integer arrays stored as ``int64``,
wider than the chip, so an out-of-range value stays
representable and is *reported* by :func:`check_constraints`; nothing is wrapped or clipped when a
configuration is built):

==============  ==========================================================================================
``QGemm``       ``acc = wrap32(x @ weight + bias)``, weight (K, O) int8, bias (O,) int32; then RequantShift
                (or, with ``requant=None``, the raw int32 accumulator goes to a following :class:`QLIF`)
``QConv2d``     the same for an NHWC convolution, weight (kh, kw, C_in / groups, O), input (H, W, C) flat
``QRequant``    a stand-alone RequantShift over ``n`` values (a ReLU: ``mul = 1, add = 0, div = 1``, unsigned)
``QLIF``        integer LIF: ``v = clamp_state((v*beta_mul + I*in_mul + add + 2^(s-1)) >> s)``, spike if
                ``v >= threshold`` (or ``>``), reset by subtraction or to zero; state width ``state_bits``
==============  ==========================================================================================

Example (a 4 -> 2 GEMM with a per-channel RequantShift; ``check_constraints`` lists every problem):

    >>> import numpy as np
    >>> rq = RequantShift(mul=[3, 5], add=[0, 0], div=4)
    >>> g = QGemm("fc", weight=np.ones((4, 2), dtype=int), bias=None, requant=rq)
    >>> cfg = SiracusaConfig(layers=(g,), n_input=4)
    >>> check_constraints(cfg)
    []
    >>> bad = SiracusaConfig(layers=(QGemm("fc", weight=np.full((4, 2), 200), bias=None,
    ...                                    requant=RequantShift(mul=[3, 5], add=[0, 0], div=6)),),
    ...                      n_input=4)
    >>> sorted({v.rule for v in check_constraints(bad)})
    ['div_power_of_two', 'weight_range']
    >>> config, ok, message = config_from_specification(bad)
    >>> ok, message.splitlines()[0]
    (False, '2 configuration problem(s):')
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.devices.core.intmath import int_range
from pondlib.devices.core.rules import check_rules
from pondlib.devices.siracusa.limits import SiracusaLimits, get_limits
from pondlib.devices.siracusa.rules import (
    CHAIN_RULES,
    DEPLOYMENT_RULES,
    LAYER_RULES,
    RULES,
    ChainCheck,
    DeploymentCheck,
    LayerCheck,
    check_layers,
)
from pondlib.devices.siracusa.specification import (
    QLIF,
    SIZE_MAX,
    QConv2d,
    QGemm,
    QRequant,
    RequantShift,
)
from pondlib.devices.siracusa.tiling import ROWS_MAX, Placement, TilePlan, place_memory, plan_tiles
from pondlib.errors import ConfigError, Violation
from pondlib.validate import check_bool, check_float, check_int, check_npy_sizes, check_type

__all__ = [
    "SiracusaConfig",
    "LayerRange",
    "layer_ranges",
    "check_constraints",
    "validate_config",
    "config_from_specification",
    "RULES",
    "save_config",
    "load_config",
    "CONFIG_FORMAT",
    "CONFIG_VERSION",
]

_I32_LO, _I32_HI = int_range(32)


@dataclass(frozen=True)
class SiracusaConfig:
    """A validated-on-demand integer deployment: the layer chain plus how it is placed and tiled.

    Attributes:
        layers: the integer layers, in order.
        n_input: input values per step.
        input_bits, input_signed: the integer input range (int8 by default).
        input_scale: float value of one input step (for :func:`quantize_input`; 1.0 for spikes).
        output_scale: float value of one output step (1.0 for spikes or raw integers).
        rows: input rows per inference (M of every GEMM).
        buffering: 1 (single) or 2 (double) L1 buffering.
        l1_budget: bytes of L1 a layer's tiles may use; None means ``limits.l1_tile_budget``.
        npu_layers: names of layers executed on the NPU.
        use_weight_memory: NPU layers read their weights from the weight memory (no DMA).
        limits_name: the Siracusa variant.
    """

    layers: tuple
    n_input: int
    input_bits: int = 8
    input_signed: bool = True
    input_scale: float = 1.0
    output_scale: float = 1.0
    rows: int = 1
    buffering: int = 2
    l1_budget: int | None = None
    npu_layers: tuple[str, ...] = ()
    use_weight_memory: bool = False
    limits_name: str = "siracusa"

    def __post_init__(self) -> None:
        """Field types and ranges checked (ConfigError naming the field); the chip's design rules are
        :func:`check_constraints`' job."""
        where = "SiracusaConfig"
        err = ConfigError
        if isinstance(self.layers, (str, bytes)) or not isinstance(self.layers, (tuple, list)):
            raise err(
                "layers",
                value=f"a {type(self.layers).__name__}",
                limit="a tuple of integer layers",
                where=where,
                fix="pass (QGemm(...), QLIF(...), ...)",
            )
        layers = tuple(self.layers)
        for i, layer in enumerate(layers):
            check_type(
                layer,
                f"layers[{i}]",
                (QGemm, QConv2d, QRequant, QLIF),
                where=where,
                error=err,
                fix="build layers with QGemm, QConv2d, QRequant or QLIF",
            )
        names = [layer.name for layer in layers]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise err(
                "layer names",
                value=dup,
                limit="each name once",
                where=where,
                fix="give every layer its own name (placement and reports are by name)",
            )
        object.__setattr__(self, "layers", layers)
        object.__setattr__(
            self, "n_input", check_int(self.n_input, "n_input", lo=1, hi=SIZE_MAX, where=where, error=err)
        )
        object.__setattr__(
            self, "input_bits", check_int(self.input_bits, "input_bits", lo=1, hi=32, where=where, error=err)
        )
        object.__setattr__(self, "input_signed", check_bool(self.input_signed, "input_signed", where=where, error=err))
        for key in ("input_scale", "output_scale"):
            value = check_float(getattr(self, key), key, lo=0.0, lo_open=True, where=where, error=err)
            object.__setattr__(self, key, value)
        object.__setattr__(self, "rows", check_int(self.rows, "rows", lo=1, hi=ROWS_MAX, where=where, error=err))
        object.__setattr__(
            self, "buffering", check_int(self.buffering, "buffering", lo=1, hi=2, where=where, error=err)
        )
        if self.l1_budget is not None:
            object.__setattr__(self, "l1_budget", check_int(self.l1_budget, "l1_budget", lo=1, where=where, error=err))
        if isinstance(self.npu_layers, (str, bytes)) or not isinstance(self.npu_layers, (tuple, list)):
            raise err(
                "npu_layers",
                value=f"a {type(self.npu_layers).__name__}",
                limit="a tuple of layer names",
                where=where,
                fix="pass e.g. npu_layers=('fc1',)",
            )
        unknown = [n for n in self.npu_layers if n not in names]
        if unknown:
            raise err(
                "npu_layers",
                value=unknown,
                limit=f"names of layers {names}",
                where=where,
                fix="name layers of this configuration",
            )
        object.__setattr__(self, "npu_layers", tuple(self.npu_layers))
        object.__setattr__(
            self, "use_weight_memory", check_bool(self.use_weight_memory, "use_weight_memory", where=where, error=err)
        )
        check_type(self.limits_name, "limits_name", str, where=where, error=err)
        get_limits(self.limits_name)  # an unknown variant: ConfigError listing the known ones

    @property
    def input_range(self) -> tuple[int, int]:
        return int_range(self.input_bits, self.input_signed)

    @property
    def n_output(self) -> int:
        return self.layers[-1].n_out if self.layers else self.n_input

    def replace(self, **changes: Any) -> SiracusaConfig:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


# ------------------------------------------------------------------------------------------------
# Value ranges
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LayerRange:
    """Worst-case integer ranges of one layer over its input value range (per output channel).

    ``acc_lo``/``acc_hi`` are exact (no wrap) bounds of the accumulator or, for RequantShift-only and
    LIF layers, of the RequantShift input; ``out_lo``/``out_hi`` bound what the layer emits.
    """

    in_lo: int
    in_hi: int
    acc_lo: np.ndarray = field(default=None)
    acc_hi: np.ndarray = field(default=None)
    out_lo: int = 0
    out_hi: int = 0


def _weight_bounds(w2: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact bounds of ``sum_k x_k w[k, o]`` for ``x`` in the box [lo, hi]^K: in int64 when the worst
    case ``K max|w| max|x|`` stays below 2^62 (int8 weights and 8-bit inputs always do), else in Python
    integers (object arrays), so an invalid layer's bound is still exact, never wrapped."""
    wmax = int(np.max(np.abs(w2))) if w2.size else 0
    if w2.shape[0] * wmax * max(abs(int(lo)), abs(int(hi))) >= 2**62:
        w2 = w2.astype(object)
    a, b = w2 * lo, w2 * hi
    return np.minimum(a, b).sum(axis=0), np.maximum(a, b).sum(axis=0)


def layer_ranges(config: SiracusaConfig) -> list[LayerRange]:
    """Propagate the integer value range through the chain (one :class:`LayerRange` per layer).

    Example:
        >>> g = QGemm("fc", weight=[[1, -2], [3, 4]], requant=RequantShift(mul=1, div=1))
        >>> r = layer_ranges(SiracusaConfig(layers=(g,), n_input=2))[0]
        >>> r.acc_lo.tolist(), r.acc_hi.tolist(), (r.out_lo, r.out_hi)
        ([-512, -766], [508, 764], (-128, 127))
    """
    check_type(config, "config", SiracusaConfig, where="layer_ranges", error=ConfigError)
    lo, hi = config.input_range
    out: list[LayerRange] = []
    for layer in config.layers:
        if isinstance(layer, (QGemm, QConv2d)):
            w2 = layer.weight.reshape(-1, layer.weight.shape[-1])
            a_lo, a_hi = _weight_bounds(w2, lo, hi)
            if layer.bias is not None and layer.bias.shape == a_lo.shape:
                bias = (
                    layer.bias.astype(object)
                    if a_lo.dtype == object or np.any(np.abs(layer.bias) >= 2**61)
                    else (layer.bias)
                )
                a_lo, a_hi = a_lo + bias, a_hi + bias
            if layer.requant is not None:
                o_lo, o_hi = layer.requant.out_range
            else:  # the raw accumulator is emitted; after wrap32 it is within int32 in any case
                o_lo, o_hi = max(int(a_lo.min()), _I32_LO), min(int(a_hi.max()), _I32_HI)
        elif isinstance(layer, QRequant):
            a_lo, a_hi = np.array([lo], dtype=np.int64), np.array([hi], dtype=np.int64)
            o_lo, o_hi = layer.requant.out_range
        elif isinstance(layer, QLIF):
            a_lo, a_hi = np.array([lo], dtype=np.int64), np.array([hi], dtype=np.int64)
            o_lo, o_hi = 0, 1
        else:
            raise ConfigError(
                "unknown layer type",
                value=type(layer).__name__,
                limit="QGemm, QConv2d, QRequant or QLIF",
                where="SiracusaConfig.layers",
                fix="build layers with the types of pondlib.devices.siracusa.config",
            )
        out.append(LayerRange(lo, hi, a_lo, a_hi, o_lo, o_hi))
        lo, hi = o_lo, o_hi
    return out


# ------------------------------------------------------------------------------------------------
# Constraint checks (the rules are functions of pondlib.devices.siracusa.rules)
# ------------------------------------------------------------------------------------------------
def check_constraints(
    config: SiracusaConfig, limits: SiracusaLimits | str | None = None, *, plans: Any = None, placement: Any = None
) -> list[Violation]:
    """Every constraint violation of ``config`` (all of them, in layer order, never the first only).

    Checks (rule ids in :data:`RULES`, each a function of :mod:`pondlib.devices.siracusa.rules`):
    shapes; int8 weights, int32 biases; int32 overflow freedom of the accumulator and of every
    RequantShift / LIF intermediate over the propagated value range; power-of-two ``div`` and shift
    range; LIF options and thresholds; the GEMM output-chunk rule; L1 tile fit; L2/L3 fit; NPU
    eligibility of the layers sent to the NPU. A broken chain (``layer_shape``) is reported alone: the
    value ranges, tiles and placement of a chain whose sizes disagree mean nothing. Order: the chain's
    shape violations; else each layer's, layer by layer (:data:`~pondlib.devices.siracusa.rules.LAYER_RULES`),
    then the deployment's (:data:`~pondlib.devices.siracusa.rules.DEPLOYMENT_RULES`). ``plans``/``placement``
    may be passed when already computed (see :mod:`pondlib.devices.siracusa.tiling`).

    Raises:
        ConfigError: ``config`` not a SiracusaConfig, ``plans`` not a list of TilePlan (or None) or
            ``placement`` not a Placement.
    """
    check_type(config, "config", SiracusaConfig, where="check_constraints", error=ConfigError)
    lim = get_limits(limits if limits is not None else config.limits_name)
    found = check_rules(CHAIN_RULES, ChainCheck(config))
    if found:
        return found
    layers = (LayerCheck(layer, rng, lim) for layer, rng in zip(config.layers, layer_ranges(config)))
    found = check_layers(LAYER_RULES, layers)
    return found + check_rules(DEPLOYMENT_RULES, _deployment(config, lim, plans, placement))


def _deployment(config: SiracusaConfig, lim: SiracusaLimits, plans: Any, placement: Any) -> DeploymentCheck:
    """The :class:`DeploymentCheck` of ``config``: the given ``plans`` and ``placement`` (type-checked,
    ConfigError naming the argument) or, when None, :func:`plan_tiles` / :func:`place_memory`'s."""
    if plans is None:
        plans = plan_tiles(config, lim)
    elif isinstance(plans, (str, bytes)) or not isinstance(plans, (list, tuple)):
        raise ConfigError(
            "plans",
            value=f"a {type(plans).__name__}",
            limit="a list of TilePlan (or None), one per layer",
            where="check_constraints",
            fix="pass plan_tiles(config) or leave plans out",
        )
    else:
        for i, plan in enumerate(plans):
            if plan is not None:
                check_type(plan, f"plans[{i}]", TilePlan, where="check_constraints", error=ConfigError)
    if placement is None:
        placement = place_memory(config, lim)
    check_type(
        placement,
        "placement",
        Placement,
        where="check_constraints",
        error=ConfigError,
        fix="pass place_memory(config) or leave placement out",
    )
    return DeploymentCheck(config, lim, tuple(plans), placement)


def name_of(layer: Any) -> str:
    return str(getattr(layer, "name", type(layer).__name__))


def validate_config(config: SiracusaConfig, limits: SiracusaLimits | str | None = None) -> list[str]:
    """Every problem of ``config`` as text (``[]`` when valid); see :func:`check_constraints`."""
    if not isinstance(config, SiracusaConfig):
        return [f"not a SiracusaConfig: got {type(config).__name__}"]
    return [str(v) for v in check_constraints(config, limits)]


def config_from_specification(
    spec: Any, limits: SiracusaLimits | str | None = None
) -> tuple[SiracusaConfig, bool, str]:
    """``(config, is_valid, message)`` from a :class:`~pondlib.devices.siracusa.mapper.Specification`
    (its ``config``) or a :class:`SiracusaConfig`; ``message`` lists every problem, or ``"valid"``."""
    config = spec if isinstance(spec, SiracusaConfig) else getattr(spec, "config", None)
    if not isinstance(config, SiracusaConfig):
        raise ConfigError(
            "not a Siracusa specification",
            value=type(spec).__name__,
            limit="a Specification from siracusa.mapper or a SiracusaConfig",
            fix="map the network with pondlib.devices.siracusa.mapper first",
        )
    problems = validate_config(config, limits)
    if problems:
        return config, False, ConfigError(problems=problems).what
    return config, True, "valid"


# ------------------------------------------------------------------------------------------------
# Files
# ------------------------------------------------------------------------------------------------
#: ``format`` entry of a saved configuration and its current ``version``.
CONFIG_FORMAT = "pondlib.siracusa.config"
CONFIG_VERSION = 1
_LAYER_TYPES = {t.__name__: t for t in (QGemm, QConv2d, QRequant, QLIF)}


def _encode(value: Any, key: str, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(value, RequantShift):
        return {
            "RequantShift": {
                f.name: _encode(getattr(value, f.name), f"{key}.{f.name}", arrays) for f in dataclasses.fields(value)
            }
        }
    if isinstance(value, np.ndarray):
        arrays[key] = np.asarray(value, dtype=np.int64)
        return {"array": key}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, f"{key}.{i}", arrays) for i, v in enumerate(value)]}
    return value


def save_config(path: Any, config: SiracusaConfig, *, input_order: Any = None) -> None:
    """Write ``config`` to ``path`` as an ``.npz`` archive (no pickles) that :func:`load_config` reads back.

    Layout (version :data:`CONFIG_VERSION`): ``format`` (the string :data:`CONFIG_FORMAT`), ``version``
    (int), ``header`` (JSON: the configuration's scalar fields and, per layer, its type and fields; an
    array field is ``{"array": KEY}``, a tuple ``{"tuple": [...]}``, a RequantShift
    ``{"RequantShift": {...}}``), one int64 entry per array (``layers.<i>.<field>``), and optionally
    ``input_order`` (int64 (n_input,): the configuration's input is ``x.reshape(B, -1)[:, input_order]``,
    e.g. NCHW -> HWC for convolutions; absent means the identity).

    Raises:
        ConfigError: ``config`` is not a SiracusaConfig, a bad ``input_order``, or the file cannot be written.

    Example:
        >>> import os, tempfile
        >>> rq = RequantShift(mul=[3, 5], add=[0, 0], div=4)
        >>> cfg = SiracusaConfig(layers=(QGemm("fc", weight=np.ones((4, 2), dtype=int), requant=rq),), n_input=4)
        >>> path = os.path.join(tempfile.mkdtemp(), "cfg.npz")
        >>> save_config(path, cfg)
        >>> back = load_config(path)
        >>> back.layers[0].requant.mul.tolist(), back.n_input, back.layers[0].weight.shape
        ([3, 5], 4, (4, 2))
    """
    import json

    check_type(config, "config", SiracusaConfig, where="save_config", error=ConfigError, fix="pass a SiracusaConfig")
    arrays: dict[str, np.ndarray] = {}
    layers = []
    for i, layer in enumerate(config.layers):
        fields = {
            f.name: _encode(getattr(layer, f.name), f"layers.{i}.{f.name}", arrays) for f in dataclasses.fields(layer)
        }
        layers.append({"type": type(layer).__name__, "fields": fields})
    head = {
        f.name: _encode(getattr(config, f.name), f.name, arrays)
        for f in dataclasses.fields(config)
        if f.name != "layers"
    }
    head["layers"] = layers
    if input_order is not None:
        order = np.asarray(input_order)
        if order.dtype.kind not in "iu" or sorted(order.tolist()) != list(range(config.n_input)):
            raise ConfigError(
                "input_order",
                value=order.shape,
                limit=f"a permutation of 0..{config.n_input - 1}",
                where="save_config",
                fix="pass the input permutation or None",
            )
        arrays["input_order"] = order.astype(np.int64)
    try:
        with open(path, "wb") as fh:
            np.savez_compressed(
                fh,
                format=np.array(CONFIG_FORMAT),
                version=np.array(CONFIG_VERSION, np.int64),
                header=np.array(json.dumps(head)),
                **arrays,
            )
    except OSError as exc:
        raise ConfigError(
            f"cannot write the configuration ({type(exc).__name__})", where=str(path), fix="pass a writable path"
        ) from None


def _decode(value: Any, key: str, data: Any, path: str) -> Any:
    if isinstance(value, dict):
        if set(value) == {"array"}:
            ref = value["array"]
            if not isinstance(ref, str) or ref not in data.files:
                raise ConfigError(
                    f"field {key}",
                    value=ref,
                    limit="an array entry of the archive",
                    where=path,
                    fix="re-save the configuration with save_config",
                )
            arr = data[ref]
            if arr.dtype.kind not in "iu":
                raise ConfigError(
                    f"field {key}",
                    value=f"dtype {arr.dtype}",
                    limit="integers",
                    where=path,
                    fix="re-save the configuration with save_config",
                )
            return arr.astype(np.int64)
        if set(value) == {"tuple"} and isinstance(value["tuple"], list):
            return tuple(_decode(v, f"{key}.{i}", data, path) for i, v in enumerate(value["tuple"]))
        if set(value) == {"RequantShift"} and isinstance(value["RequantShift"], dict):
            kw = {k: _decode(v, f"{key}.{k}", data, path) for k, v in value["RequantShift"].items()}
            return _build(RequantShift, kw, key, path)
        raise ConfigError(
            f"field {key}",
            value=sorted(value),
            limit="array, tuple or RequantShift",
            where=path,
            fix="re-save the configuration with save_config",
        )
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise ConfigError(
            f"field {key}",
            value=type(value).__name__,
            limit="a number, string or null",
            where=path,
            fix="re-save the configuration with save_config",
        )
    return value


def _build(cls: Any, kw: dict, key: str, path: str) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    if not set(kw) <= names:
        raise ConfigError(
            f"field {key}",
            value=sorted(set(kw) - names),
            limit=f"fields of {cls.__name__}",
            where=path,
            fix="re-save the configuration with save_config",
        )
    try:
        return cls(**kw)
    except ConfigError as err:
        raise ConfigError(
            f"field {key}: {err.what}",
            value=err.value,
            limit=err.limit,
            where=path,
            fix=err.fix or "re-save the configuration with save_config",
        ) from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise ConfigError(
            f"field {key} ({type(exc).__name__}: {exc})", where=path, fix="re-save the configuration with save_config"
        ) from None


def load_config(path: Any, *, with_input_order: bool = False) -> Any:
    """The :class:`SiracusaConfig` saved by :func:`save_config` (with ``with_input_order``: ``(config,
    input_order)``, ``input_order`` None for the identity).

    Raises:
        ConfigError: naming the file and the field: missing, not an ``.npz`` archive, another format or
            version, undecodable JSON, unknown layer types or fields, arrays that are not integers, values
            the configuration refuses.
    """
    import io
    import json
    import zipfile
    import zlib

    where = str(path)
    fix = "pass a configuration written by pond map --out or save_config"
    source = path
    if isinstance(path, (str, os.PathLike)) and os.path.isfile(path):
        check_npy_sizes(path, "Siracusa configuration", error=ConfigError)  # the size budget, before np.load
        with open(path, "rb") as fh:  # read whole: np.load leaks the handle it opens when the zip is bad
            source = io.BytesIO(fh.read())
    unreadable = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error, NotImplementedError)
    try:
        data = np.load(source, allow_pickle=False)
    except unreadable as exc:
        raise ConfigError(
            f"not a Siracusa configuration archive ({type(exc).__name__})", where=where, fix=fix
        ) from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ConfigError("not a Siracusa configuration archive (one .npy array)", where=where, fix=fix)
    with data:
        try:
            for key in ("format", "version", "header"):
                if key not in data.files:
                    raise ConfigError(f"field {key}", value="missing", limit="present", where=where, fix=fix)
            fmt, version, header = data["format"], data["version"], data["header"]
            if fmt.shape != () or fmt.dtype.kind != "U" or str(fmt) != CONFIG_FORMAT:
                raise ConfigError("field format", value=repr(fmt)[:60], limit=CONFIG_FORMAT, where=where, fix=fix)
            if version.shape != () or version.dtype.kind not in "iu" or int(version) != CONFIG_VERSION:
                raise ConfigError(
                    "field version",
                    value=repr(version)[:60],
                    limit=CONFIG_VERSION,
                    where=where,
                    fix="save it again with this pondlib version",
                )
            if header.shape != () or header.dtype.kind != "U":
                raise ConfigError("field header", value=header.dtype, limit="a JSON string", where=where, fix=fix)
            try:
                head = json.loads(str(header))
            except ValueError as exc:
                raise ConfigError(f"field header (JSON: {exc})", where=where, fix=fix) from None
            if not isinstance(head, dict) or not isinstance(head.get("layers"), list):
                raise ConfigError(
                    "field header.layers", value=type(head).__name__, limit="a list", where=where, fix=fix
                )
            layers = []
            for i, item in enumerate(head.pop("layers")):
                key = f"layers.{i}"
                if not isinstance(item, dict) or item.get("type") not in _LAYER_TYPES:
                    raise ConfigError(
                        f"field {key}.type", value=repr(item)[:60], limit=sorted(_LAYER_TYPES), where=where, fix=fix
                    )
                if not isinstance(item.get("fields"), dict):
                    raise ConfigError(
                        f"field {key}.fields", value="missing", limit="a JSON object", where=where, fix=fix
                    )
                kw = {k: _decode(v, f"{key}.{k}", data, where) for k, v in item["fields"].items()}
                layers.append(_build(_LAYER_TYPES[item["type"]], kw, key, where))
            kw = {k: _decode(v, k, data, where) for k, v in head.items()}
            kw["layers"] = tuple(layers)
            config = _build(SiracusaConfig, kw, "config", where)
            order = None
            if "input_order" in data.files:
                order = data["input_order"]
                if order.dtype.kind not in "iu" or sorted(order.ravel().tolist()) != list(range(config.n_input)):
                    raise ConfigError(
                        "field input_order",
                        value=order.shape,
                        limit=f"a permutation of 0..{config.n_input - 1}",
                        where=where,
                        fix=fix,
                    )
                order = order.astype(np.int64)
        except ConfigError:
            raise
        except unreadable as exc:
            raise ConfigError(f"unreadable entry ({type(exc).__name__})", where=where, fix=fix) from None
    return (config, order) if with_input_order else config
