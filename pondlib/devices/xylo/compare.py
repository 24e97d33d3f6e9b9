r"""Line up a float model's record with the Xylo simulator's, layer by layer.

A float network's record (``net(x, record=True)``) holds ``"<layer>/vmem"`` (.., T, N),
``"<layer>/isyn"`` (.., T, N, k) and ``"<layer>/spikes"`` (.., T, N) in float units;
:class:`~pondlib.devices.xylo.sim.XyloSim` records ``Vmem``, ``Isyn``, ``Isyn2``, ``Spikes`` (hidden,
(.., T, N_hid)) and ``Vmem_out``, ``Isyn_out`` (output) in chip integers. Two things separate them:

* **delays**: on the chip every hidden->hidden and hidden->output hop costs one step, so a layer that
  is ``d`` hops from the input responds ``d`` steps later than in a plain float model:

  .. math::  \mathrm{float}[t] \leftrightarrow \mathrm{chip}[t + d], \qquad t = 0 .. T - d - 1

  (``delays=None``: ``d`` = the layer's position among the hidden layers, ``n_hidden_layers`` for the
  output layer; a hardware-aware model (:func:`pondlib.transform.xylo_aware`) already has the delays:
  pass ``delays=0``);
* **scale**: the quantizer multiplied each neuron's weights, threshold and bias by ``s``
  (``qspec.quantization.scales``), so float states times ``s`` are chip units.

Per layer and quantity the statistics are ``exact`` (fraction of entries equal after rounding the
scaled float value to an integer), ``max_abs`` (largest difference, chip units), ``corr`` (Pearson
correlation, NaN when either side is constant or the sums overflow) and, for spikes, the totals.

Inputs are checked (a :class:`~pondlib.errors.PondError` naming the key): mappings, finite float
records, whole-number neuron ids inside the chip record, delays whole numbers >= 0, scales > 0.

Example (a fake one-layer record: the chip is the float model one step later, scale 2):
    >>> import numpy as np
    >>> fl = {"1_LIF/vmem": np.array([[1.0], [2.0], [0.5]]), "1_LIF/spikes": np.array([[0.], [1.], [0.]])}
    >>> chip = {"Vmem": np.array([[0], [2], [4]]), "Spikes": np.array([[0], [0], [1]])}
    >>> cmp = compare_records(fl, chip, layer_map={"1_LIF": ("hidden", np.array([0]))},
    ...                       delays={"1_LIF": 1}, scales={"hidden": 2.0})
    >>> cmp["1_LIF"].stats["vmem"]["exact"], cmp["1_LIF"].stats["spikes"]["exact"]
    (1.0, 1.0)
    >>> cmp["1_LIF"].float["vmem"].shape      # T - d steps compared
    (2, 1)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.errors import PondError
from pondlib.validate import as_array, as_float_array, as_int_array, check_int

__all__ = ["compare_records", "layer_map_from_spec", "LayerComparison"]

_CHIP_KEYS = {
    "hidden": {"vmem": "Vmem", "isyn": ("Isyn", "Isyn2"), "spikes": "Spikes"},
    "output": {"vmem": "Vmem_out", "isyn": ("Isyn_out",), "spikes": "Spikes_out"},
}


@dataclass(frozen=True)
class LayerComparison:
    """One layer's aligned arrays and statistics.

    Attributes:
        role: ``"hidden"`` or ``"output"``; ``delay``: steps the chip lags the float record.
        float, chip: quantity -> aligned array (.., T - delay, N) (``isyn`` per synapse:
            ``isyn`` / ``isyn2``), float side in chip units (times the scale).
        stats: quantity -> ``{"exact", "max_abs", "corr"}`` (+ ``"float_total"``, ``"chip_total"``
            for spikes).
    """

    role: str
    delay: int
    float: dict = field(default_factory=dict)
    chip: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)


def layer_map_from_spec(spec: Any) -> dict[str, tuple[str, np.ndarray]]:
    """``{layer name: (role, chip neuron ids)}`` from a mapped specification's report (the layer
    names are the graph names, which are the record prefixes of the same network)."""
    report = getattr(spec, "report", None)
    if report is None or not getattr(report, "neuron_ids", None):
        raise PondError(
            "specification without a mapping report",
            value=type(spec).__name__,
            limit="a Specification from mapper()",
            where="layer_map_from_spec",
            fix="pass the output of pondlib.devices.xylo.mapper (or its quantized copy)",
        )
    return {
        name: ("output" if name == report.output_module else "hidden", np.asarray(ids))
        for name, ids in report.neuron_ids.items()
    }


def _stats(f: np.ndarray, c: np.ndarray, spikes: bool) -> dict[str, float]:
    with np.errstate(over="ignore", invalid="ignore"):
        return _stats_unchecked(np.asarray(f, dtype=np.float64), np.asarray(c, dtype=np.float64), spikes)


def _stats_unchecked(f: np.ndarray, c: np.ndarray, spikes: bool) -> dict[str, float]:
    out = {
        "exact": float(np.mean(np.rint(f) == c)) if f.size else float("nan"),
        "max_abs": float(np.max(np.abs(f - c))) if f.size else 0.0,
    }
    fs, cs = f.ravel() - f.mean(), c.ravel() - c.mean()
    den = float(np.sqrt(np.dot(fs, fs) * np.dot(cs, cs)))
    out["corr"] = float(np.dot(fs, cs) / den) if 0 < den < np.inf else float("nan")
    if spikes:
        out["float_total"], out["chip_total"] = float(f.sum()), float(c.sum())
    return out


def _check_arguments(
    float_record: Any, chip_record: Any, layer_map: Any, delays: Any, scales: Any
) -> int | Mapping[str, int] | None:
    """The argument types of :func:`compare_records` (mappings; ``delays`` None, a mapping or a whole
    number >= 0; each layer map entry a (role, ids) pair); returns ``delays`` (an int when one)."""
    where = "compare_records"
    for what, value in (("float_record", float_record), ("chip_record", chip_record), ("layer_map", layer_map)):
        if not isinstance(value, Mapping):
            raise PondError(
                what, value=type(value).__name__, limit="a mapping", where=where, fix=f"pass {what} as a dict"
            )
    if scales is not None and not isinstance(scales, Mapping):
        raise PondError(
            "scales",
            value=type(scales).__name__,
            limit="a mapping or None",
            where=where,
            fix="pass qspec.quantization.scales",
        )
    if delays is not None and not isinstance(delays, Mapping):
        delays = check_int(delays, "delays", lo=0, where=where, fix="pass a whole number of steps >= 0")
    for name, entry in layer_map.items():
        if not (isinstance(entry, (tuple, list)) and len(entry) == 2):
            raise PondError(
                "layer map entry",
                value=type(entry).__name__,
                limit="(role, neuron ids)",
                where=f"layer_map[{name!r}]",
                fix="use layer_map_from_spec(spec)",
            )
    return delays


def _layer_delay(name: str, role: str, delays: int | Mapping[str, int] | None, hidden_order: list[str]) -> int:
    """Steps the chip lags layer ``name``: its position among the hidden layers (the number of hidden
    layers for the output layer) when ``delays`` is None, else ``delays[name]`` (default 0) or ``delays``."""
    if delays is None:
        return len(hidden_order) if role == "output" else hidden_order.index(name)
    if isinstance(delays, Mapping):
        return check_int(
            delays.get(name, 0), f"delays[{name!r}]", lo=0, where="compare_records", fix="pass whole numbers >= 0"
        )
    return delays


def _layer_scale(role: str, ids: np.ndarray, scales: Mapping[str, Any] | None) -> float | np.ndarray:
    """The scale of a layer's float states: 1.0 without ``scales``; else ``scales[role]`` (> 0), a float,
    or per chip neuron ``(N,)`` taken at the layer's neuron ``ids``."""
    where = "compare_records"
    if scales is None:
        return 1.0
    if role not in scales:
        raise PondError(
            f"scales[{role!r}]", value="missing", limit="a scale", where=where, fix="pass qspec.quantization.scales"
        )
    s = as_float_array(scales[role], f"scales[{role!r}]", where=where, allow_empty=False)
    if np.any(s <= 0):
        raise PondError(
            f"scales[{role!r}]", value="a scale <= 0", limit="> 0", where=where, fix="pass qspec.quantization.scales"
        )
    if not s.ndim:
        return float(s)
    if s.ndim != 1 or int(ids.max()) >= s.shape[0]:
        raise PondError(
            f"scales[{role!r}] shape",
            value=s.shape,
            limit=f"() or (N,) with N > {int(ids.max())}",
            where=where,
            fix="pass qspec.quantization.scales",
        )
    return s[ids]


def _pairs(name: str, qty: str, ckey: Any, float_record: Mapping[str, Any], chip: Mapping[str, Any]) -> list[tuple]:
    """(float key, label, float array, chip key) for quantity ``qty`` of layer ``name`` where both records
    hold it; ``isyn`` per synapse (labels ``isyn``, ``isyn2``: ``float[..., syn]`` vs ``Isyn`` / ``Isyn2``)."""
    fkey = f"{name}/{qty}"
    if fkey not in float_record:
        return []
    farr = as_float_array(float_record[fkey], f"float_record[{fkey!r}]", where="compare_records", allow_empty=True)
    if qty != "isyn":
        return [(fkey, qty, farr, ckey)] if ckey in chip else []
    return [
        (fkey, ("isyn", "isyn2")[syn], farr[..., syn], ck)
        for syn, ck in enumerate(ckey)
        if farr.ndim >= 3 and syn < farr.shape[-1] and ck in chip
    ]


def _aligned(
    name: str, fkey: str, fa: np.ndarray, chip_full: Any, ck: str, ids: np.ndarray, d: int, s: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(float[..., :T - d, :] * s, chip[..., d:, ids])``: the float record scaled to chip units (``s``
    1.0 for spikes) and the chip record ``d`` steps later, checked to have equal shapes (.., T, N)."""
    where = "compare_records"
    full = as_array(chip_full, f"chip_record[{ck!r}]", where=where, allow_empty=True)
    if full.ndim < 2 or int(ids.max()) >= full.shape[-1]:
        raise PondError(
            f"chip_record[{ck!r}] shape",
            value=full.shape,
            limit=f"(.., T, N) with N > {int(ids.max())} (the layer's largest neuron id)",
            where=where,
            fix="pass the record of the simulator configured from the same specification",
        )
    ca = full[..., ids]
    T = fa.shape[-2] if fa.ndim >= 2 else -1
    if not 0 <= d < T or ca.shape != fa.shape:
        raise PondError(
            "record lengths",
            value=f"{name}: float shape {fa.shape}, chip shape {ca.shape}, delay {d}",
            limit="equal shapes (.., T, N) and 0 <= delay < T",
            where=where,
            fix="record both models on the same input",
        )
    with np.errstate(over="ignore"):
        fa = fa[..., : T - d, :] * s
    if not np.all(np.isfinite(fa)):
        raise PondError(
            f"float_record[{fkey!r}] times the scale",
            value="values beyond float range",
            limit="finite values",
            where=where,
            fix="check the float record and the scales",
        )
    return fa, ca[..., d:, :]


def compare_records(
    float_record: Mapping[str, Any],
    chip_record: Mapping[str, Any],
    *,
    layer_map: Mapping[str, tuple[str, Any]],
    delays: int | Mapping[str, int] | None = None,
    scales: Mapping[str, Any] | None = None,
    chip_output: Any = None,
) -> dict[str, LayerComparison]:
    """Align and compare a float record with a XyloSim record (module docstring).

    Args:
        float_record: the float network's record (keys ``"<layer>/vmem"`` ...), (T, ..) or (B, T, ..).
        chip_record: ``XyloSim.evolve(x, record=True)[2]`` for the same input.
        layer_map: ``{layer prefix: ("hidden" | "output", chip neuron ids (N,))}``;
            :func:`layer_map_from_spec` builds it from the mapped specification.
        delays: steps the chip lags each layer: None (plain float model: hidden layer ``j`` -> ``j``,
            output -> number of hidden layers), an int for every layer (0 for a hardware-aware
            model), or ``{layer: steps}``.
        scales: ``{"hidden": s, "output": s}`` (scalars or per chip neuron), usually
            ``qspec.quantization.scales``; None compares unscaled values.
        chip_output: the simulator's output spikes (.., T, N_out), to compare the output layer's spikes.

    Returns:
        ``{layer prefix: LayerComparison}`` in the order of ``layer_map``.

    Raises:
        PondError: an unknown role, a missing record key, or a delay not shorter than the record.
    """
    delays = _check_arguments(float_record, chip_record, layer_map, delays, scales)
    chip = dict(chip_record)
    if chip_output is not None:
        chip["Spikes_out"] = chip_output
    hidden_order = [name for name, (role, _) in layer_map.items() if role == "hidden"]
    result: dict[str, LayerComparison] = {}
    for name, (role, ids) in layer_map.items():
        if role not in _CHIP_KEYS:
            raise PondError(
                "layer role",
                value=role,
                limit=["hidden", "output"],
                where=f"layer_map[{name!r}]",
                fix="map each layer to 'hidden' or 'output'",
            )
        ids = as_int_array(ids, "neuron ids", lo=0, ndim=1, where=f"layer_map[{name!r}]")
        d = _layer_delay(name, role, delays, hidden_order)
        s = _layer_scale(role, ids, scales)
        fl, ch, st = {}, {}, {}
        for qty, ckey in _CHIP_KEYS[role].items():
            for fkey, label, fa, ck in _pairs(name, qty, ckey, float_record, chip):
                fl[label], ch[label] = _aligned(name, fkey, fa, chip[ck], ck, ids, d, s if qty != "spikes" else 1.0)
                st[label] = _stats(fl[label], ch[label], qty == "spikes")
        if not st:
            raise PondError(
                "nothing to compare",
                value=name,
                limit=sorted(float_record)[:6],
                where="compare_records",
                fix="run the float model with record=True and name its layers as in the specification report",
            )
        result[name] = LayerComparison(role, d, fl, ch, st)
    return result
