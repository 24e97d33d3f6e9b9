"""Prediction agreement with snnTorch's own update rule on the NIR paper's Braille networks (issue 34).

The oracle is an independent numpy (float32) simulation of snnTorch's ``RSynaptic``/``Synaptic`` step
with ``reset_delay=False`` (``snntorch/_neurons/synaptic.py``: the reset of step ``t`` from the stored
membrane before the update, then the correction after the spike), reading the weights and time
constants straight from the NIR file with the ``nir`` package (snnTorch itself needs torch, which the
project does not install). The Braille test recordings are not in the repository, so the inputs are
random spike rasters (12 channels, 256 steps) at several rates.

For each file it prints, per input rate, the share of samples whose prediction (the output neuron with
most spikes) equals the oracle's and the share of samples with identical output rasters, for pondlib
*before* (``load_nir(..., reset=...)``: a plain reset) and *after* (``convention="snntorch"``).

Run: ``python benchmarks/nir_exporters.py`` (about a minute on 2 cores); output saved in
``benchmarks/results/nir_exporters.txt``.
"""

from __future__ import annotations

import pathlib
import sys

import nir
import numpy as np

from pondlib.interop.nir import load_nir

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data" / "nir" / "braille"
FILES = {"braille_noDelay_bias_zero.nir": "zero", "braille_noDelay_noBias_subtract.nir": "subtract"}
RATES = (0.02, 0.05, 0.1, 0.2)
BATCH, STEPS, DT = 100, 256, 1e-4


def _affine(node):
    w = np.asarray(node.weight, np.float32)
    b = np.asarray(getattr(node, "bias", np.zeros(w.shape[0])), np.float32).reshape(-1)
    return w, b


def _cuba(node):
    f = {k: np.asarray(getattr(node, k), np.float32).reshape(-1) for k in ("tau_syn", "tau_mem", "v_threshold")}
    leak = np.asarray(node.v_leak, np.float32).reshape(-1)
    alpha = (1 - DT / f["tau_syn"]).astype(np.float32)
    beta = (1 - DT / f["tau_mem"]).astype(np.float32)
    return alpha, beta, f["v_threshold"], (DT / f["tau_mem"] * leak).astype(np.float32)


def snntorch_oracle(path: pathlib.Path, x: np.ndarray, reset: str) -> np.ndarray:
    """Output spikes (B, T, 7) of snnTorch's rule, straight from the NIR parameters (float32)."""
    g = nir.read(str(path))
    w1, b1 = _affine(g.nodes["fc1"])
    wr, br = _affine(g.nodes["lif1.w_rec"])
    w2, b2 = _affine(g.nodes["fc2"])
    layers = [_cuba(g.nodes["lif1.lif"]), _cuba(g.nodes["lif2"])]
    b = x.shape[0]
    syn = [np.zeros((b, len(p[0])), np.float32) for p in layers]
    mem = [np.zeros_like(s) for s in syn]
    spk1 = np.zeros_like(syn[0])
    out = np.zeros((b, x.shape[1], len(layers[1][0])), np.float32)
    for t in range(x.shape[1]):
        drive = [x[:, t] @ w1.T + b1 + spk1 @ wr.T + br, None]
        for i, (alpha, beta, thr, c) in enumerate(layers):
            if i == 1:
                drive[1] = spk1 @ w2.T + b2
            r = (mem[i] > thr).astype(np.float32)  # from the stored membrane, before the update
            syn[i] = alpha * syn[i] + drive[i]
            u = beta * mem[i] + syn[i] + c
            u = u - r * thr if reset == "subtract" else u * (1 - r)
            z = (u > thr).astype(np.float32)
            mem[i] = u - (z - r) * (thr if reset == "subtract" else u)
            if i == 0:
                spk1 = z
            else:
                out[:, t] = z
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    lines = ["file, reset, rate: prediction agreement before -> after; identical rasters before -> after"]
    for name, reset in FILES.items():
        path = DATA / name
        before = load_nir(path, dt=None, reset=reset).module
        after = load_nir(path, dt=None, convention="snntorch", reset=reset).module
        totals = np.zeros(4)
        for rate in RATES:
            x = (rng.random((BATCH, STEPS, 12)) < rate).astype(np.float32)
            want = snntorch_oracle(path, x, reset)
            res = []
            for net in (before, after):
                got = np.asarray(net(x)[0])
                res.append(np.mean(got.sum(1).argmax(-1) == want.sum(1).argmax(-1)))
                res.append(np.mean(np.all(got == want, axis=(1, 2))))
            totals += res
            lines.append(f"{name}, {reset}, {rate}: {res[0]:.1%} -> {res[2]:.1%}; rasters {res[1]:.1%} -> {res[3]:.1%}")
        t = totals / len(RATES)
        lines.append(f"{name}, {reset}, mean: {t[0]:.1%} -> {t[2]:.1%}; rasters {t[1]:.1%} -> {t[3]:.1%}")
    text = "\n".join(lines)
    print(text)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "nir_exporters.txt").write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
