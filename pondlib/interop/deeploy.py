r"""Deeploy's test cases on a device's graph path: load a case, run it, compare with its golden outputs.

A Deeploy test case (pulp-platform/Deeploy, ``DeeployTest/Tests/<group>/<case>/``) is a folder with
``network.onnx``, ``inputs.npz`` (``input_0``, ``input_1``, ... in the order of the graph's inputs) and
``outputs.npz`` (``output_0``, ... in the order of its outputs). :func:`run_case` imports the network with
:func:`~pondlib.interop.onnx.opgraph.load_opgraph`, runs it on a registered device's graph path
(``Device.run_graph``: the device decides integer or float mode from the inputs) and classifies the case:

* ``equal``: integer cases bit-exact; float cases within float32 rounding (every output element within
  ``atol + rtol |golden|``, ``rtol = atol = 1e-4`` scaled by the output's largest magnitude for atol);
* ``differs``: it ran and some output is off (the first differing output, the count and the largest error);
* ``refused``: pondlib refused it with a PondError (the message says which op or rule).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pondlib.errors import PondError
from pondlib.validate import check_readable_file

__all__ = ["CaseResult", "run_case", "load_case", "compare", "FLOAT_RTOL"]

#: Relative tolerance of the float32 cases (Deeploy's own checker allows a float32 rounding slack).
FLOAT_RTOL = 1e-4


@dataclass
class CaseResult:
    """The verdict on one case: ``status`` (equal / differs / refused), a ``detail`` line, element counts."""

    name: str
    status: str
    detail: str = ""
    integer: bool = True
    n_elements: int = 0
    n_wrong: int = 0
    seconds: float = 0.0


def load_case(folder: Any) -> tuple[Any, list[np.ndarray], list[np.ndarray]]:
    """``(graph, inputs, golden outputs)`` of the case in ``folder``."""
    from pondlib.interop.onnx.opgraph import load_opgraph

    root = Path(os.fspath(folder))
    net = check_readable_file(root / "network.onnx", "Deeploy network", error=PondError)
    graph = load_opgraph(net)
    ins = _arrays(root / "inputs.npz", "input_")
    outs = _arrays(root / "outputs.npz", "output_")
    # inputs.npz sometimes also stores weights after the graph inputs: the first arrays feed the inputs
    return graph, ins[: len(graph.inputs)] if len(ins) > len(graph.inputs) else ins, outs


def _arrays(path: Path, prefix: str) -> list[np.ndarray]:
    check_readable_file(path, "Deeploy arrays", error=PondError)
    with np.load(path, allow_pickle=False) as data:
        return [np.array(data[k]) for k in data.files]  # in the order they were saved (Deeploy's order)


def compare(got: list[np.ndarray], want: list[np.ndarray], integer: bool) -> tuple[bool, str, int, int]:
    """(equal, detail, elements, wrong elements) of ``got`` against the goldens ``want``."""
    total = wrong = 0
    detail = ""
    for i, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        g = np.asarray(g)
        if g.size != w.size:
            return False, f"output {i}: shape {g.shape} vs golden {w.shape}", w.size, w.size
        g = g.reshape(w.shape)
        total += w.size
        if integer:
            bad = g.astype(np.float64) != w.astype(np.float64)
        else:
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            finite = np.isfinite(w64)
            scale = float(np.max(np.abs(w64[finite]))) if finite.any() else 1.0
            with np.errstate(invalid="ignore"):
                off = np.abs(g64 - w64) > FLOAT_RTOL * (np.abs(w64) + max(scale, 1e-30))
            # non-finite goldens (an inf or NaN the float graph produces) must be reproduced exactly
            same = (g64 == w64) | (np.isnan(g64) & np.isnan(w64))
            bad = np.where(finite, off | ~np.isfinite(g64), ~same)
        n = int(np.count_nonzero(bad))
        if n and not detail:
            err = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64))))
            detail = f"output {i}: {n}/{w.size} differ, largest error {err:g}"
        wrong += n
    if len(got) != len(want):
        return False, f"{len(got)} outputs vs {len(want)} goldens", total, wrong
    return wrong == 0, detail, total, wrong


def run_case(folder: Any, device: str, name: str | None = None) -> CaseResult:
    """Import, run on ``device`` (a registry name) and compare one case (module docstring); a PondError is the
    verdict ``refused``, never raised."""
    from pondlib.devices import registry

    dev = registry.get(device)
    name = name or Path(os.fspath(folder)).name
    t0 = time.perf_counter()
    integer = True
    try:
        graph, ins, outs = load_case(folder)
        integer = all(np.asarray(a).dtype.kind in "iub" for a in ins)
        got, integer = dev.run_graph(graph, ins)
    except PondError as err:
        return CaseResult(name, "refused", str(err).splitlines()[0][:300], integer, seconds=time.perf_counter() - t0)
    ok, detail, total, wrong = compare(got, outs, integer)
    status = "equal" if ok else "differs"
    return CaseResult(name, status, detail, integer, total, wrong, time.perf_counter() - t0)
