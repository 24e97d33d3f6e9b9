"""The Xylo hardware specification: what the mapper produces and the quantizers transform.

A :class:`Specification` holds the network as Xylo sees it: one input projection, one hidden population
(with recurrence and aliases), one readout population. Before quantization the arrays are float and
the dashes are the unrounded ``log2(tau / dt)``; after quantization (:mod:`pondlib.transform`) weights are
integers in the int8 range, thresholds and biases in the int16 range and dashes are rounded integers.

Shapes (``N_in`` input channels, ``N_hid`` hidden neurons, ``N_out`` output neurons, ``k`` synapses per
hidden neuron, 1 or 2):

============================  ==================  =====================================================
field                         shape               meaning
============================  ==================  =====================================================
``weights_in``                (N_in, N_hid, k)    input -> hidden synapse ``[pre, post, syn]``
``weights_rec``               (N_hid, N_hid, k)   hidden -> hidden ``[pre, post, syn]`` (one step delay)
``weights_out``               (N_hid, N_out)      hidden -> output ``[pre, post]`` (one step delay)
``dash_mem``                  (N_hid,)            membrane decay shift, alpha = 1 - 2^-dash
``dash_syn``, ``dash_syn_2``  (N_hid,)            synaptic decay shifts of synapse 0 and 1
``dash_mem_out``              (N_out,)            output membrane decay shift
``dash_syn_out``              (N_out,)            output synaptic decay shift
``threshold``, ``bias``       (N_hid,)            hidden threshold and constant bias current
``threshold_out``             (N_out,)            output threshold
``bias_out``                  (N_out,)            output bias current
``weight_shift_in/rec/out``   int                 left bit-shift applied to each projection's weights
``aliases``                   (N_hid,)            alias target neuron id, -1 for none
``dt``                        float (s)           the common time step
============================  ==================  =====================================================

The constructor checks *types*, not values: every array field must be a rectangular real numeric array
(never a string, ``None``, a complex or object array, or ragged nesting), ``aliases`` whole numbers >= -1,
weight shifts whole numbers, ``dt`` a real number and ``limits_name`` a string. Values (NaN, ranges,
shapes) are checked by the consumers, which report them by field and index: the quantizers
(:mod:`pondlib.transform`) and :func:`~pondlib.devices.xylo.config.config_from_specification`. Two
formats of Rockpool are accepted and converted: 2-D ``weights_in`` / ``weights_rec`` (one synapse) get
their synapse axis, and ``aliases`` may be a list of target lists (``[[2], [], ...]``, at most one target
per neuron).

**Rockpool compatibility: a specification is also a mapping** of its field names (``keys()``,
``spec["threshold"]``, ``dict(spec)``, ``**spec``), so that Rockpool's deployment code runs unchanged::

    spec = mapper(net.as_graph(), weight_dtype="float", threshold_dtype="float", dash_dtype="float")
    spec.update(q.channel_quantize(**spec))          # update() is the one method that changes spec
    config, is_valid, msg = config_from_specification(**spec)

An unknown key is refused by name (:class:`SpecificationKeyError`, a
:class:`~pondlib.errors.ConfigError` that is also a ``KeyError``), in ``spec[...]``, ``update()`` and the
functions that take ``**spec``. Rockpool's ``bias_hidden`` is read as ``bias``; its ``mapped_graph`` key
is accepted and ignored (pondlib never stores or modifies the graph).

Example:
    >>> import numpy as np
    >>> spec = Specification.zeros(n_in=16, n_hidden=4, n_output=2, n_synapses=1, dt=1e-3)
    >>> spec.weights_in.shape, spec.weights_rec.shape, spec.weights_out.shape
    ((16, 4, 1), (4, 4, 1), (4, 2))
    >>> spec.to_dict()["dash_mem"].shape
    (4,)
    >>> spec["dt"], "threshold" in spec, len(spec) == len(list(spec.keys()))
    (0.001, True, True)
    >>> spec.update(threshold=np.full(4, 2.0), aliases=[[1], [], [3], []])   # Rockpool's alias lists
    >>> spec.threshold.tolist(), spec.aliases.tolist()
    ([2.0, 2.0, 2.0, 2.0], [1, -1, 3, -1])
    >>> spec.update(thresholds=np.ones(4))
    Traceback (most recent call last):
    ...
    pondlib.devices.xylo.specification.SpecificationKeyError: Specification.update: unknown key(s): ...
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.errors import ConfigError, PondError
from pondlib.validate import as_int_array, check_int

__all__ = [
    "Specification",
    "MappingReport",
    "QuantizationReport",
    "ARRAY_FIELDS",
    "SCALAR_FIELDS",
    "SPEC_KEYS",
    "SpecificationKeyError",
]

#: The array-valued fields of a specification, in a fixed order.
ARRAY_FIELDS = (
    "weights_in",
    "weights_rec",
    "weights_out",
    "dash_mem",
    "dash_syn",
    "dash_syn_2",
    "dash_mem_out",
    "dash_syn_out",
    "threshold",
    "threshold_out",
    "bias",
    "bias_out",
    "aliases",
)
#: The scalar fields (and reports), in a fixed order.
SCALAR_FIELDS = (
    "dt",
    "weight_shift_in",
    "weight_shift_rec",
    "weight_shift_out",
    "limits_name",
    "report",
    "quantization",
)
#: Every key of a specification seen as a mapping (its field names).
SPEC_KEYS = ARRAY_FIELDS + SCALAR_FIELDS
#: Rockpool's names for pondlib fields (read as the pondlib field).
KEY_ALIASES = {"bias_hidden": "bias"}
#: Rockpool keys accepted and ignored: Rockpool's mapper returns the (modified) graph in the spec.
IGNORED_KEYS = ("mapped_graph",)
#: Fields a mapping must hold to build a specification (the rest have defaults, see ``from_mapping``).
REQUIRED_KEYS = (
    "weights_in",
    "weights_out",
    "threshold",
    "threshold_out",
    "dash_mem",
    "dash_syn",
    "dash_mem_out",
    "dash_syn_out",
)


#: Fields a mapping may leave out (or give as None): they take their documented defaults.
_OPTIONAL_KEYS = (
    "weights_rec",
    "dash_syn_2",
    "bias",
    "bias_out",
    "aliases",
    "dt",
    "weight_shift_in",
    "weight_shift_rec",
    "weight_shift_out",
    "limits_name",
    "report",
    "quantization",
)


class SpecificationKeyError(ConfigError, KeyError):
    """An unknown specification key: a :class:`~pondlib.errors.ConfigError` that is also a ``KeyError``
    (so ``spec.get(key)`` and ``key in spec`` keep the mapping protocol)."""

    __str__ = Exception.__str__


@dataclass(frozen=True)
class MappingReport:
    """What the mapper did.

    Attributes:
        neuron_ids: module name -> hardware neuron ids it occupies (hidden ids, or output ids for the
            readout layer, whose module name is listed in ``output_module``).
        output_module: name of the module mapped to the output neurons.
        dash_error: field name (``dash_mem``, ``dash_syn``, ...) -> per-neuron relative error of the
            chip's effective time constant after rounding the dash: ``(tau_hw - tau) / tau`` with
            ``tau_hw = -dt / ln(1 - 2^-dash)``, ``dash = round(log2(tau/dt))`` (the chip decays by
            ``1 - 2^-dash`` per step; ``tau_hw = 0`` for dash 0).
        notes: free-text remarks (dropped biases, gaps the float model will see on chip).
    """

    neuron_ids: dict[str, np.ndarray] = field(default_factory=dict)
    output_module: str = ""
    dash_error: dict[str, np.ndarray] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class QuantizationReport:
    """What a quantizer did.

    Attributes:
        method: ``"global"`` or ``"channel"``.
        scales: layer name (``hidden``, ``output``) -> scale (scalar or per-neuron array) applied to
            float weights, thresholds and biases of that layer; always finite and > 0.
        clipped: array field name -> number of values clipped to the integer range (for thresholds
            also the non-zero thresholds raised to +-1 so that they never round to 0).
        relative_error: layer/field name -> ``||q / scale - w|| / ||w||`` (0 for an all-zero field;
            always finite: at most 1 for weights and biases, more only for a threshold raised to +-1).
        notes: remarks, e.g. layers or neurons without any weight, threshold or bias (quantized to
            zeros with scale 1).
        resolution_lost: layer name -> bits of weight resolution given up (scalar, or per neuron) so
            that every threshold and bias fits the state range: ``log2(s_w / s)`` where ``s_w`` is the
            scale the weights alone would get and ``s`` the one applied; 0 where nothing gave way.
    """

    method: str
    scales: dict[str, Any] = field(default_factory=dict)
    clipped: dict[str, int] = field(default_factory=dict)
    relative_error: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    resolution_lost: dict[str, Any] = field(default_factory=dict)

    @property
    def total_clipped(self) -> int:
        """Number of values clipped over all fields."""
        return int(sum(self.clipped.values()))


# -- field checks ---------------------------------------------------------------------------------
def _fail(error: type[PondError], what: str, value: Any, limit: Any, where: str, fix: str) -> PondError:
    return error(what, value=value, limit=limit, where=where, fix=fix)


def _numeric_array(value: Any, name: str, error: type[PondError], where: str) -> np.ndarray:
    """``value`` as a real numeric array (not copied when it is one); NaN and ranges are left to the
    consumers, which report them by index."""
    fix = f"pass {name} as a numeric array (the mapper builds it)"
    if value is None or isinstance(value, (str, bytes)):
        shown = "None" if value is None else f"a {type(value).__name__} ({value!r})"
        raise _fail(error, name, shown, "a numeric array", where, fix)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise _fail(error, name, "a ragged nested sequence", "a rectangular numeric array", where, fix) from None
    if arr.dtype.kind == "c":
        raise _fail(error, name, f"complex values (dtype {arr.dtype})", "real numbers", where, fix)
    if arr.dtype.kind not in "biuf":
        raise _fail(error, name, f"dtype {arr.dtype}", "a numeric (bool, integer or float) array", where, fix)
    return arr


def _alias_array(value: Any, n_hidden: int | None, error: type[PondError], where: str) -> np.ndarray:
    """Aliases as an int64 array (-1: none). Accepts pondlib's ``(N_hid,)`` ids and Rockpool's list of
    target lists; ids must be whole numbers (never rounded) >= -1, at most one target per neuron."""
    fix = "give each hidden neuron -1 (no alias) or one whole-number target id"
    if isinstance(value, (list, tuple)) and any(isinstance(v, (list, tuple, np.ndarray)) for v in value):
        if n_hidden is not None and len(value) != n_hidden:
            raise _fail(
                error, "aliases (list of target lists)", f"{len(value)} entries", f"N_hid = {n_hidden}", where, fix
            )
        ids = []
        for i, targets in enumerate(value):
            if not isinstance(targets, (list, tuple, np.ndarray)):
                targets = [targets]
            targets = list(np.asarray(targets, dtype=object).ravel()) if isinstance(targets, np.ndarray) else targets
            if len(targets) > 1:
                raise _fail(
                    error,
                    f"aliases[{i}]",
                    f"{len(targets)} alias targets {list(targets)}",
                    "at most 1 target per neuron (Xylo)",
                    where,
                    "alias each hidden neuron to at most one target",
                )
            if not targets:
                ids.append(-1)
                continue
            ids.append(check_int(targets[0], f"aliases[{i}][0]", lo=0, where=where, error=error, fix=fix))
        return np.asarray(ids, dtype=np.int64).reshape(len(ids))
    arr = _numeric_array(value, "aliases", error, where)
    return as_int_array(arr, "aliases", lo=-1, where=where, error=error, fix=fix, allow_empty=True)


def _real_scalar(value: Any, name: str, error: type[PondError], where: str) -> float:
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "iuf":
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise _fail(
            error, name, f"a {type(value).__name__} ({value!r})", "a real number", where, f"pass {name} as a number"
        )
    return float(value)


def _normalise(fields: dict[str, Any], error: type[PondError], where: str) -> dict[str, Any]:
    """Check the types of every field of ``fields`` (all of a specification's fields) and return them
    in canonical form; see the module docstring."""
    out = dict(fields)
    for name in ARRAY_FIELDS:
        if name != "aliases":
            out[name] = _numeric_array(out[name], name, error, where)
    for name in ("weights_in", "weights_rec"):
        if out[name].ndim == 2:  # Rockpool's one-synapse format: make the synapse axis explicit
            out[name] = out[name][:, :, None]
    w_in = out["weights_in"]
    n_hid = int(w_in.shape[1]) if w_in.ndim == 3 else None
    out["aliases"] = _alias_array(out["aliases"], n_hid, error, where)
    out["dt"] = _real_scalar(out["dt"], "dt", error, where)
    for name in ("weight_shift_in", "weight_shift_rec", "weight_shift_out"):
        out[name] = check_int(out[name], name, where=where, error=error, fix=f"pass {name} as a whole number 0..15")
    if not isinstance(out["limits_name"], str):
        raise _fail(
            error,
            "limits_name",
            f"a {type(out['limits_name']).__name__}",
            "a str",
            where,
            "pass the Xylo variant's name, e.g. 'Xylo Audio 2'",
        )
    if not isinstance(out["report"], MappingReport):
        raise _fail(
            error, "report", f"a {type(out['report']).__name__}", "a MappingReport", where, "leave it to the mapper"
        )
    if out["quantization"] is not None and not isinstance(out["quantization"], QuantizationReport):
        raise _fail(
            error,
            "quantization",
            f"a {type(out['quantization']).__name__}",
            "a QuantizationReport or None",
            where,
            "leave it to the quantizers",
        )
    return out


def _translate_keys(fields: Mapping[str, Any], error: type[PondError], where: str) -> dict[str, Any]:
    """``fields`` with Rockpool's names translated and ignored keys dropped; unknown keys refused."""
    if not isinstance(fields, Mapping):
        raise _fail(
            error,
            "specification fields",
            f"a {type(fields).__name__}",
            "a mapping of field names to values",
            where,
            "pass a Specification or its fields (**spec)",
        )
    out: dict[str, Any] = {}
    unknown = []
    for key, value in fields.items():
        if not isinstance(key, str):
            unknown.append(key)
            continue
        if key in IGNORED_KEYS:
            continue
        name = KEY_ALIASES.get(key, key)
        if name not in SPEC_KEYS:
            unknown.append(key)
            continue
        if name in out:
            raise _fail(
                error,
                f"{name} given twice",
                f"{name!r} and its Rockpool name {key!r}",
                "one of them",
                where,
                f"pass only {name!r}",
            )
        out[name] = value
    if unknown:
        cls = SpecificationKeyError if issubclass(SpecificationKeyError, error) else error
        raise cls(
            "unknown key(s)",
            value=sorted(map(str, unknown)),
            limit=f"specification keys {list(SPEC_KEYS)} (or Rockpool's {sorted(KEY_ALIASES) + list(IGNORED_KEYS)})",
            where=where,
            fix="remove or rename the key(s); see pondlib.devices.xylo.specification",
        )
    return out


@dataclass(frozen=True, eq=False)
class Specification(Mapping):
    """A Xylo hardware specification (see the module docstring for fields, shapes and the mapping
    interface). Equality is identity, as for any mutable-content container of arrays."""

    weights_in: np.ndarray
    weights_rec: np.ndarray
    weights_out: np.ndarray
    dash_mem: np.ndarray
    dash_syn: np.ndarray
    dash_syn_2: np.ndarray
    dash_mem_out: np.ndarray
    dash_syn_out: np.ndarray
    threshold: np.ndarray
    threshold_out: np.ndarray
    bias: np.ndarray
    bias_out: np.ndarray
    aliases: np.ndarray
    dt: float = 1e-3
    weight_shift_in: int = 0
    weight_shift_rec: int = 0
    weight_shift_out: int = 0
    limits_name: str = "Xylo Audio 2"
    report: MappingReport = field(default_factory=MappingReport)
    quantization: QuantizationReport | None = None

    def __post_init__(self) -> None:
        fields = _normalise({name: getattr(self, name) for name in SPEC_KEYS}, ConfigError, "Specification")
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    # Equality and hashing by identity (the Mapping mixin would compare array-valued dicts).
    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        state = "quantized" if self.is_quantized else "float"
        return (
            f"Specification({self.limits_name}, {state}: N_in={self.n_input}, N_hid={self.n_hidden}, "
            f"N_out={self.n_output}, k={self.n_synapses}, dt={self.dt!r})"
        )

    # -- shapes ---------------------------------------------------------------------------------
    @property
    def n_input(self) -> int:
        """Number of input channels used."""
        return int(self.weights_in.shape[0]) if self.weights_in.ndim >= 1 else 0

    @property
    def n_hidden(self) -> int:
        """Number of hidden neurons."""
        return int(self.weights_in.shape[1]) if self.weights_in.ndim >= 2 else 0

    @property
    def n_output(self) -> int:
        """Number of output neurons."""
        return int(self.weights_out.shape[1]) if self.weights_out.ndim >= 2 else 0

    @property
    def n_synapses(self) -> int:
        """Synaptic states per hidden neuron (1 or 2)."""
        return int(self.weights_in.shape[2]) if self.weights_in.ndim >= 3 else 0

    @property
    def is_quantized(self) -> bool:
        """True when every weight, threshold, bias and dash is integer-valued (after a quantizer)."""
        return self.quantization is not None

    # -- the mapping interface (Rockpool compatibility) -----------------------------------------
    def __getitem__(self, key: str) -> Any:
        if isinstance(key, str) and key in SPEC_KEYS:
            return getattr(self, key)
        if isinstance(key, str) and key in KEY_ALIASES:
            return getattr(self, KEY_ALIASES[key])
        raise SpecificationKeyError(
            "unknown key",
            value=key,
            limit=f"one of {list(SPEC_KEYS)}",
            where="Specification",
            fix="use a field name of the specification",
        )

    def __iter__(self) -> Iterator[str]:
        return iter(SPEC_KEYS)

    def __len__(self) -> int:
        return len(SPEC_KEYS)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in SPEC_KEYS

    def update(self, other: Mapping[str, Any] | Iterable[tuple[str, Any]] = (), /, **changes: Any) -> None:
        """Replace fields in place, as ``dict.update`` does (Rockpool's ``spec.update(quantize(**spec))``).

        The one method that changes a specification; every other transform returns a new one. Unknown
        keys are refused by name and the new values are checked as the constructor does; on error the
        specification is left unchanged.

        Raises:
            SpecificationKeyError: an unknown key (a ConfigError and a KeyError).
            ConfigError: a value of the wrong type.
        """
        merged: dict[str, Any] = {}
        if isinstance(other, Mapping):
            merged.update(other.items())
        else:
            try:
                merged.update(other)
            except (TypeError, ValueError):
                raise ConfigError(
                    "update argument",
                    value=type(other).__name__,
                    limit="a mapping or (key, value) pairs",
                    where="Specification.update",
                    fix="pass a Specification, a dict or keyword arguments",
                ) from None
        merged.update(changes)
        fields = _translate_keys(merged, ConfigError, "Specification.update")
        new = self.replace(**fields)
        for name in SPEC_KEYS:
            object.__setattr__(self, name, getattr(new, name))

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __delitem__(self, key: str) -> None:
        """Rockpool's ``del spec[key]``: the field goes back to its default (see :meth:`from_mapping`);
        deleting a required field or an unknown key raises (ConfigError / SpecificationKeyError)."""
        name = KEY_ALIASES.get(key, key) if isinstance(key, str) else None
        if name not in SPEC_KEYS:
            raise SpecificationKeyError(
                "unknown key",
                value=repr(key),
                limit=f"specification keys {list(SPEC_KEYS)}",
                where="Specification.__delitem__",
                fix="delete one of the specification's fields",
            )
        rest = {k: getattr(self, k) for k in SPEC_KEYS if k != name}
        new = Specification.from_mapping(rest, where=f"del Specification[{key!r}]")
        for name in SPEC_KEYS:
            object.__setattr__(self, name, getattr(new, name))

    # -- conversion -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """All fields as a plain dict (arrays are copies; reports are included as objects)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.copy() if isinstance(v, np.ndarray) else v
        return out

    def replace(self, **changes: Any) -> Specification:
        """A new specification with some fields replaced (the original is untouched).

        Raises:
            SpecificationKeyError: an unknown field name.
        """
        unknown = [k for k in changes if k not in SPEC_KEYS]
        if unknown:
            raise SpecificationKeyError(
                "unknown field(s)",
                value=sorted(unknown),
                limit=f"fields {list(SPEC_KEYS)}",
                where="Specification.replace",
                fix="use the specification's field names",
            )
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_mapping(
        cls,
        fields: Mapping[str, Any],
        *,
        error: type[PondError] = ConfigError,
        where: str = "Specification.from_mapping",
    ) -> Specification:
        """A specification from a mapping of its fields (a Rockpool specification dict, ``**spec``).

        Required: ``weights_in``, ``weights_out``, ``threshold``, ``threshold_out``, ``dash_mem``,
        ``dash_syn``, ``dash_mem_out``, ``dash_syn_out`` and, with two synapses, ``dash_syn_2``.
        Defaults (documented, as Rockpool's), also taken when the value is None: ``weights_rec`` zeros,
        ``dash_syn_2`` zeros (one synapse), ``bias`` and ``bias_out`` zeros, ``aliases`` none, weight
        shifts 0, ``dt`` 1 ms, ``limits_name`` Xylo Audio 2. Rockpool's ``bias_hidden`` is read as
        ``bias``; ``mapped_graph`` is ignored.

        Raises:
            ``error``: a missing required field or a value of the wrong type; unknown keys raise
                :class:`SpecificationKeyError` (a ConfigError).
        """
        if isinstance(fields, Specification):
            return fields
        given = _translate_keys(fields, error, where)
        # Rockpool's keyword defaults are None: None for an optional field means its default
        given = {k: v for k, v in given.items() if not (v is None and k in _OPTIONAL_KEYS)}
        missing = [k for k in REQUIRED_KEYS if k not in given]
        if missing:
            raise _fail(
                error,
                "missing Specification field(s)",
                missing,
                f"the fields {list(REQUIRED_KEYS)}",
                where,
                "pass every required field (the mapper's specification has them all)",
            )
        w_in = _numeric_array(given["weights_in"], "weights_in", error, where)
        w_in = w_in[:, :, None] if w_in.ndim == 2 else w_in
        w_out = _numeric_array(given["weights_out"], "weights_out", error, where)
        if w_in.ndim != 3 or w_out.ndim != 2:
            raise _fail(
                error,
                "weights_in / weights_out shape",
                f"{w_in.shape} / {w_out.shape}",
                "(N_in, N_hid[, k]) / (N_hid, N_out)",
                where,
                "pass the mapper's weight matrices",
            )
        n_hid, k = int(w_in.shape[1]), int(w_in.shape[2])
        if k == 2 and "dash_syn_2" not in given:
            raise _fail(
                error,
                "missing Specification field(s)",
                ["dash_syn_2"],
                "dash_syn_2 with two synapses per neuron",
                where,
                "pass dash_syn_2, the decay shifts of the second synapse",
            )
        n_out = int(w_out.shape[1])
        defaults: dict[str, Any] = {
            "weights_rec": np.zeros((n_hid, n_hid, k)),
            "dash_syn_2": np.zeros(n_hid),
            "bias": np.zeros(n_hid),
            "bias_out": np.zeros(n_out),
            "aliases": -np.ones(n_hid, dtype=np.int64),
        }
        kwargs = {**defaults, **given, "weights_in": w_in, "weights_out": w_out}
        try:
            return cls(**kwargs)
        except PondError as err:
            if isinstance(err, error):
                raise
            raise _fail(error, err.what, err.value, err.limit, where, err.fix or "") from None

    @classmethod
    def zeros(
        cls, n_in: int, n_hidden: int, n_output: int, n_synapses: int = 1, dt: float = 1e-3, **kw: Any
    ) -> Specification:
        """An all-zero specification of the given size (aliases -1), useful in tests and examples."""
        sizes = {"n_in": n_in, "n_hidden": n_hidden, "n_output": n_output, "n_synapses": n_synapses}
        n_in, n_hidden, n_output, n_synapses = (
            check_int(v, k, lo=0, where="Specification.zeros", error=ConfigError) for k, v in sizes.items()
        )
        z = np.zeros
        return cls(
            weights_in=z((n_in, n_hidden, n_synapses)),
            weights_rec=z((n_hidden, n_hidden, n_synapses)),
            weights_out=z((n_hidden, n_output)),
            dash_mem=z(n_hidden),
            dash_syn=z(n_hidden),
            dash_syn_2=z(n_hidden),
            dash_mem_out=z(n_output),
            dash_syn_out=z(n_output),
            threshold=z(n_hidden),
            threshold_out=z(n_output),
            bias=z(n_hidden),
            bias_out=z(n_output),
            aliases=-np.ones(n_hidden, dtype=np.int64),
            dt=dt,
            **kw,
        )
