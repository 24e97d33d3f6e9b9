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
correlation, NaN when either side is constant) and, for spikes, the totals.

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

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from pondlib.errors import PondError

__all__ = ["compare_records", "layer_map_from_spec", "LayerComparison"]

_CHIP_KEYS = {"hidden": {"vmem": "Vmem", "isyn": ("Isyn", "Isyn2"), "spikes": "Spikes"},
              "output": {"vmem": "Vmem_out", "isyn": ("Isyn_out",), "spikes": "Spikes_out"}}


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
        raise PondError("specification without a mapping report", value=type(spec).__name__,
                        limit="a Specification from mapper()", where="layer_map_from_spec",
                        fix="pass the output of pondlib.devices.xylo.mapper (or its quantized copy)")
    return {name: ("output" if name == report.output_module else "hidden", np.asarray(ids))
            for name, ids in report.neuron_ids.items()}


def _stats(f: np.ndarray, c: np.ndarray, spikes: bool) -> dict[str, float]:
    f = np.asarray(f, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    out = {"exact": float(np.mean(np.rint(f) == c)) if f.size else float("nan"),
           "max_abs": float(np.max(np.abs(f - c))) if f.size else 0.0}
    fs, cs = f.ravel() - f.mean(), c.ravel() - c.mean()
    den = float(np.sqrt(np.dot(fs, fs) * np.dot(cs, cs)))
    out["corr"] = float(np.dot(fs, cs) / den) if den > 0 else float("nan")
    if spikes:
        out["float_total"], out["chip_total"] = float(f.sum()), float(c.sum())
    return out


def compare_records(float_record: Mapping[str, Any], chip_record: Mapping[str, Any], *,
                    layer_map: Mapping[str, tuple[str, Any]], delays: int | Mapping[str, int] | None = None,
                    scales: Mapping[str, Any] | None = None, chip_output: Any = None
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
    chip = dict(chip_record)
    if chip_output is not None:
        chip["Spikes_out"] = np.asarray(chip_output)
    hidden_order = [name for name, (role, _) in layer_map.items() if role == "hidden"]
    result: dict[str, LayerComparison] = {}
    for name, (role, ids) in layer_map.items():
        if role not in _CHIP_KEYS:
            raise PondError("layer role", value=role, limit=["hidden", "output"], where=f"layer_map[{name!r}]",
                            fix="map each layer to 'hidden' or 'output'")
        ids = np.asarray(ids, dtype=np.int64)
        if delays is None:
            d = len(hidden_order) if role == "output" else hidden_order.index(name)
        elif isinstance(delays, Mapping):
            d = int(delays.get(name, 0))
        else:
            d = int(delays)
        s = 1.0 if scales is None else np.asarray(scales[role], dtype=np.float64)
        s = s[ids] if np.ndim(s) else s
        fl, ch, st = {}, {}, {}
        for qty, ckey in _CHIP_KEYS[role].items():
            fkey = f"{name}/{qty}"
            if fkey not in float_record:
                continue
            farr = np.asarray(float_record[fkey], dtype=np.float64)
            pairs = []
            if qty == "isyn":
                for syn, ck in enumerate(ckey):
                    if syn < farr.shape[-1] and ck in chip:
                        pairs.append((("isyn", "isyn2")[syn], farr[..., syn], ck))
            elif ckey in chip:
                pairs.append((qty, farr, ckey))
            for label, fa, ck in pairs:
                ca = np.asarray(chip[ck])[..., ids]
                T = fa.shape[-2]
                if not 0 <= d < T or ca.shape[-2] != T:
                    raise PondError("record lengths", value=f"{name}: float T={T}, chip T={ca.shape[-2]}, "
                                    f"delay {d}", limit="equal T and 0 <= delay < T", where="compare_records",
                                    fix="record both models on the same input")
                fa = fa[..., :T - d, :] * (s if qty != "spikes" else 1.0)
                ca = ca[..., d:, :]
                fl[label], ch[label] = fa, ca
                st[label] = _stats(fa, ca, qty == "spikes")
        if not st:
            raise PondError("nothing to compare", value=name, limit=sorted(float_record)[:6],
                            where="compare_records", fix="run the float model with record=True and "
                            "name its layers as in the specification report")
        result[name] = LayerComparison(role, d, fl, ch, st)
    return result
