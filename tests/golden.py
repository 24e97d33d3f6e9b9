"""Shared helpers for the Xylo golden cases in tests/data/xylo_golden (copied from shared/data).

``build_float_network(case)`` rebuilds the float network of a golden case in pondlib.nn from its stored
float parameters (Linear weights, LIF time constants, thresholds, biases, recurrent weights, dt).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pondlib import nn

DATA = Path(__file__).parent / "data" / "xylo_golden"
CASES = ("ff_default", "residual_recurrent", "two_synapses", "high_input_counts")


def load_golden(case: str) -> dict[str, np.ndarray]:
    """All arrays of one golden case."""
    with np.load(DATA / f"{case}.npz") as d:
        return {k: d[k] for k in d.files}


def _layer(g: dict, prefix: str, name: str):
    kind = name.split("_", 1)[1]
    p = f"float/params/{prefix}{name}/"
    if kind == "Linear":
        return nn.Linear(*g[p + "weight"].shape, weight=g[p + "weight"])
    if kind == "LIF":
        sp = f"float/simparams/{prefix}{name}/"
        tau_syn = g[p + "tau_syn"]
        n, k = tau_syn.shape
        has_rec = bool(g.get(sp + "_has_rec", False))
        return nn.LIF(
            (n * k, n),
            tau_mem=g[p + "tau_mem"],
            tau_syn=tau_syn,
            threshold=g[p + "threshold"],
            bias=g[p + "bias"],
            dt=float(g[sp + "dt"]),
            w_rec=g.get(p + "w_rec", g.get(sp + "w_rec")) if has_rec else None,
        )
    if kind == "ModResidual":
        inner = sorted({k[len(p) :].split("/")[0] for k in g if k.startswith(p)}, key=lambda s: int(s.split("_")[0]))
        return nn.Residual(*[_layer(g, f"{prefix}{name}/", c) for c in inner])
    raise ValueError(f"unknown golden layer {name}")


def build_float_network(case: str | dict) -> nn.Sequential:
    """The golden case's float network as a pondlib.nn.Sequential."""
    g = load_golden(case) if isinstance(case, str) else case
    names = sorted({k.split("/")[2] for k in g if k.startswith("float/params/")}, key=lambda s: int(s.split("_")[0]))
    return nn.Sequential(*[_layer(g, "", n) for n in names])
