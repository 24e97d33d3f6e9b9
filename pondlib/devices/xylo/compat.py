"""Rockpool's Xylo call styles (``rockpool.devices.xylo.syns61201``) on pondlib's own objects.

:mod:`pondlib.compat.rockpool` finds this adapter through the device registry
(``pondlib.compat.rockpool.device("xylo")``); a script ported from Rockpool changes only its import line:

===============================================  ============================================================
Rockpool                                         here (a thin layer: no second implementation)
===============================================  ============================================================
``mapper(g, weight_dtype=int, ...)``             :func:`mapper`: pondlib's mapper; the specification as a
                                                 plain dict (``del spec[k]`` works; unknown keys are
                                                 refused when set); an integer dtype casts only whole
                                                 numbers (anything else raises: quantize first)
``config_from_specification(**spec)``            :func:`config_from_specification`: Rockpool's defaults
                                                 for missing fields (dashes 1, thresholds 0, no
                                                 recurrence, no bias), then pondlib's validated config
``XyloSim.from_config(c, output_mode="Vmem")``   :class:`XyloSim`: pondlib's simulator; the output is the
                                                 output layer's spikes, ``Vmem_out`` or ``Isyn_out``
``calc_bitshift_decay(tau, dt)``                 :func:`calc_bitshift_decay`: the mapper's dash
                                                 ``max(rint(log2(tau / dt)), 0)``
===============================================  ============================================================

Example:
    >>> import numpy as np
    >>> w_in, w_out = np.ones((2, 3), int), np.eye(3, 2, dtype=int)
    >>> config, ok, msg = config_from_specification(weights_in=w_in, weights_out=w_out)
    >>> ok, config.threshold.tolist()           # Rockpool's defaults completed the minimal specification
    (True, [0, 0, 0])
    >>> sim = XyloSim.from_config(config, output_mode="Vmem")
    >>> out, state, rec = sim(np.ones((3, 2), int))
    >>> out.shape, out.dtype.kind
    ((3, 2), 'i')
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from pondlib.devices.core.compat import DRCWarning
from pondlib.devices.xylo.aware_lif import dash_for_tau
from pondlib.devices.xylo.config import config_from_specification as _config_from_spec
from pondlib.devices.xylo.mapper import mapper as _map_graph
from pondlib.devices.xylo.sim import XyloSim as _Sim
from pondlib.devices.xylo.specification import IGNORED_KEYS, KEY_ALIASES, SPEC_KEYS
from pondlib.errors import ConfigError, ConstraintError, SimulationError
from pondlib.validate import check_choice

__all__ = [
    "mapper",
    "config_from_specification",
    "XyloSim",
    "RockpoolSpec",
    "OUTPUT_MODES",
    "DRCError",
    "DRCWarning",
    "SOFT_RULES",
    "calc_bitshift_decay",
]

#: Rockpool's design-rule error: the mapper raises :class:`~pondlib.errors.ConstraintError` (every rule at once).
DRCError = ConstraintError

#: Rockpool's readouts of :class:`XyloSim`: output spikes, output membrane, output synaptic current.
OUTPUT_MODES = {"Spike": None, "Vmem": "Vmem_out", "Isyn": "Isyn_out"}
#: Design rules Rockpool's mapper only warns about (:class:`DRCWarning`): weight biases, which it drops.
SOFT_RULES = ("linear_bias",)
_KNOWN = set(SPEC_KEYS) | set(KEY_ALIASES) | set(IGNORED_KEYS)


class RockpoolSpec(dict):
    """A specification as Rockpool hands it out: a plain ``dict`` of fields (``del``, ``update``,
    ``**spec`` all work) that still refuses keys no specification has."""

    def _check(self, keys: Any) -> None:
        bad = [k for k in keys if k not in _KNOWN]
        if bad:
            raise ConfigError(
                "unknown specification key(s)",
                value=sorted(map(str, bad)),
                limit=f"the fields {sorted(_KNOWN)}",
                where="RockpoolSpec",
                fix="use the specification's field names",
            )

    def __setitem__(self, key: str, value: Any) -> None:
        self._check([key])
        super().__setitem__(key, value)

    def update(self, other: Any = (), /, **kw: Any) -> None:
        merged = dict(other, **kw)
        self._check(merged)
        super().update(merged)


def _as_dtype(spec: RockpoolSpec, fields: tuple[str, ...], dtype: Any, name: str) -> None:
    """Cast ``fields`` of ``spec`` to ``dtype`` in place: a float dtype keeps them; an integer dtype
    takes whole numbers only (Rockpool would truncate; pondlib refuses a silent loss)."""
    try:
        kind = np.dtype(dtype).kind
    except TypeError:
        raise ConfigError(
            name, value=repr(dtype), limit="a numpy dtype", where="mapper", fix="pass float or int"
        ) from None
    if kind == "f":
        return
    if kind not in "iu":
        raise ConfigError(name, value=repr(dtype), limit="float or int", where="mapper", fix="pass float or int")
    for f in fields:
        a = np.asarray(spec[f], dtype=np.float64)
        frac = a != np.rint(a)
        if np.any(frac):
            i = tuple(int(j) for j in np.argwhere(frac)[0])
            raise ConfigError(
                f"{name}=int",
                value=f"{f}{list(i)} = {a[i]!r}",
                limit="whole numbers (Rockpool would truncate them)",
                where="mapper",
                fix="map with the float default and quantize (pondlib.transform.channel_quantize(**spec))",
            )
        spec[f] = a.astype(np.int64)


def mapper(
    graph: Any,
    weight_dtype: Any = "float",
    threshold_dtype: Any = "float",
    dash_dtype: Any = "float",
    max_hidden_neurons: int | None = None,
    max_output_neurons: int | None = None,
    limits: Any = None,
) -> RockpoolSpec:
    """Rockpool's ``mapper``: :func:`pondlib.devices.xylo.mapper` (every design rule), returned as a
    :class:`RockpoolSpec` with ``mapped_graph``; ``*_dtype`` int casts whole numbers only. Where the only
    broken rules are :data:`SOFT_RULES`, it warns (:class:`DRCWarning`) and drops the biases, as
    Rockpool does; every other rule raises :data:`DRCError`."""
    caps = {"max_hidden_neurons": max_hidden_neurons, "max_output_neurons": max_output_neurons}
    try:
        spec = _map_graph(graph, limits, **caps)
    except ConstraintError as err:
        if not err.violations or any(r not in SOFT_RULES for r in err.rules):
            raise
        warnings.warn(f"{err}\nRockpool's mapper drops them: dropped (drop_biases=True)", DRCWarning, stacklevel=2)
        spec = _map_graph(graph, limits, drop_biases=True, **caps)
    out = RockpoolSpec({k: spec[k] for k in SPEC_KEYS})
    out["mapped_graph"] = graph
    _as_dtype(out, ("weights_in", "weights_rec", "weights_out", "bias", "bias_out"), weight_dtype, "weight_dtype")
    _as_dtype(out, ("threshold", "threshold_out"), threshold_dtype, "threshold_dtype")
    dashes = ("dash_mem", "dash_syn", "dash_syn_2", "dash_mem_out", "dash_syn_out")
    _as_dtype(out, dashes, dash_dtype, "dash_dtype")
    return out


def config_from_specification(spec: Any = None, /, limits: Any = None, **fields: Any) -> tuple[Any, bool, str]:
    """Rockpool's ``config_from_specification(**spec)``: missing (or None) dashes are 1 and thresholds 0
    as Rockpool completes them, then :func:`pondlib.devices.xylo.config_from_specification`."""
    given = dict(spec if spec is not None else {}, **fields)
    if not isinstance(given.get("weights_in"), (np.ndarray, list, tuple)) or given.get("weights_out") is None:
        return _config_from_spec(given, limits)  # pondlib names what is missing
    n_hid = np.shape(given["weights_in"])[1]
    n_out = np.shape(given["weights_out"])[-1]
    defaults = {
        "dash_mem": np.ones(n_hid, np.int64),
        "dash_syn": np.ones(n_hid, np.int64),
        "dash_syn_2": np.ones(n_hid, np.int64),
        "dash_mem_out": np.ones(n_out, np.int64),
        "dash_syn_out": np.ones(n_out, np.int64),
        "threshold": np.zeros(n_hid, np.int64),
        "threshold_out": np.zeros(n_out, np.int64),
    }
    for k, v in defaults.items():
        if given.get(k) is None:
            given[k] = v
    return _config_from_spec(given, limits)


class XyloSim:
    """Rockpool's ``XyloSim``: pondlib's :class:`~pondlib.devices.xylo.XyloSim` (``sim``) whose output
    is chosen by ``output_mode`` (:data:`OUTPUT_MODES`); every other attribute is the simulator's."""

    def __init__(self, sim: Any, output_mode: str = "Spike") -> None:
        self.sim = sim
        self.output_mode = check_choice(
            output_mode, "output_mode", tuple(OUTPUT_MODES), error=SimulationError, fix="pass 'Spike', 'Vmem' or 'Isyn'"
        )

    @classmethod
    def from_config(cls, config: Any, dt: float | None = None, output_mode: str = "Spike") -> XyloSim:
        """Rockpool's ``XyloSim.from_config(config, dt=..., output_mode=...)``."""
        return cls(_Sim.from_config(config, dt=dt), output_mode)

    @classmethod
    def from_specification(cls, spec: Any = None, /, output_mode: str = "Spike", **fields: Any) -> XyloSim:
        """Rockpool's ``XyloSim.from_specification(**spec, output_mode=...)`` (defaults completed)."""
        config, ok, msg = config_from_specification(spec, **fields)
        if not ok:
            raise ConfigError("invalid specification", value=msg, where="XyloSim.from_specification", fix=msg)
        return cls(_Sim.from_config(config), output_mode)

    def evolve(self, x: Any, record: bool = False, state: Any = None):
        """``(output, state, record)``; the output is chosen by ``output_mode``."""
        key = OUTPUT_MODES[self.output_mode]
        out, st, rec = self.sim.evolve(x, record=record or key is not None, state=state)
        if key is not None:
            out = rec[key]
        return out, st, rec if record else {}

    __call__ = evolve

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["sim"], name)


def calc_bitshift_decay(tau: Any, dt: float) -> np.ndarray:
    """Rockpool's ``calc_bitshift_decay``: the decay shift ``max(rint(log2(tau / dt)), 0)`` (int64), from
    pondlib's :func:`~pondlib.devices.xylo.aware_lif.dash_for_tau` (PondError for tau or dt <= 0).

    Example:
        >>> calc_bitshift_decay([0.016, 0.0005, 0.006], 1e-3).tolist()
        [4, 0, 3]
    """
    return np.maximum(np.rint(dash_for_tau(tau, dt)), 0).astype(np.int64)
