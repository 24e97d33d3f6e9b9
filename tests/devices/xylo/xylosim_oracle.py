"""Test helper: build a ``xylosim`` reference layer from a :class:`XyloConfig` and run it.

``xylosim`` (the compiled bit-exact twin of the chip) is used only as a test oracle. Mapping of its
API to ours (found by introspection):

* ``XyloLayer(synapses_in, synapses_rec, synapses_out, aliases, threshold, threshold_out, has_bias,
  bias, bias_out, weight_shift_inp, weight_shift_rec, weight_shift_out, dash_mem, dash_mem_out,
  dash_syns, dash_syns_out, name)``; ``synapses_*[pre]`` is a list of
  ``XyloSynapse(target_neuron_id, target_synapse_id, weight)`` with the raw int8 weight (the layer
  applies the shift); ``aliases[i]`` is ``[target]`` or ``[]``; ``dash_syns[i]`` has ``k`` entries,
  ``dash_syns_out[o]`` one.
* ``evolve(list of T lists of N_in ints)`` returns the output spikes, T lists of N_out.
* Records (of the last ``evolve`` call): ``rec_v_mem``, ``rec_i_syn``, ``rec_i_syn2`` are
  ``(N_hid, T)``; ``rec_v_mem_out``, ``rec_i_syn_out`` are ``(N_out, T)``; ``rec_recurrent_spikes``
  is ``(T, N_hid)`` (alias copies included); ``rec_out_spikes`` is ``(T, N_out)``.
"""

from __future__ import annotations

import numpy as np

from pondlib.devices.xylo.config import XyloConfig


def _synapses(w: np.ndarray) -> list:
    from xylosim.v2 import XyloSynapse

    if w.ndim == 2:
        w = w[:, :, None]
    out = []
    for pre in range(w.shape[0]):
        post, syn = np.nonzero(w[pre])
        out.append([XyloSynapse(int(p), int(s), int(w[pre, p, s])) for p, s in zip(post, syn)])
    return out


class OracleLayer:
    """A ``xylosim.v2.XyloLayer`` together with the Python objects it was built from.

    xylosim keeps pointers into the ``XyloSynapse`` objects it is given without owning them: if
    they are garbage collected, ``evolve`` segfaults. This holder keeps them alive with the layer.
    """

    def __init__(self, layer, args) -> None:
        self.layer = layer
        self._args = args

    def __getattr__(self, name: str):
        return getattr(self.layer, name)


def build_layer(config: XyloConfig) -> OracleLayer:
    """A ``xylosim.v2.XyloLayer`` (wrapped in :class:`OracleLayer`) with the registers of ``config``."""
    from xylosim.v2 import XyloLayer

    k = config.n_synapses
    dash_syns = [[int(a)] if k == 1 else [int(a), int(b)] for a, b in zip(config.dash_syn, config.dash_syn_2)]
    args = (
        _synapses(config.weights_in),
        _synapses(config.weights_rec),
        _synapses(config.weights_out),
        [[int(a)] if a >= 0 else [] for a in config.aliases],
        [int(v) for v in config.threshold],
        [int(v) for v in config.threshold_out],
        bool(config.bias_enable),
        [int(v) for v in config.bias],
        [int(v) for v in config.bias_out],
        int(config.weight_shift_in),
        int(config.weight_shift_rec),
        int(config.weight_shift_out),
        [int(v) for v in config.dash_mem],
        [int(v) for v in config.dash_mem_out],
        dash_syns,
        [[int(v)] for v in config.dash_syn_out],
        "oracle",
    )
    return OracleLayer(XyloLayer(*args), args)


def run_layer(layer, x: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Run ``layer`` on ``(T, N_in)`` counts; return output ``(T, N_out)`` and our record dict."""
    T = x.shape[0]
    out = np.array(layer.evolve(np.asarray(x, dtype=np.int64).tolist()), dtype=np.int64)
    n_hid = len(layer.iaf_neurons)
    n_out = len(layer.iaf_neurons_out)

    def tr(a, n):
        a = np.array(a, dtype=np.int64)
        return a.reshape(n, T).T if a.size else np.zeros((T, n), dtype=np.int64)

    rec = {
        "Vmem": tr(layer.rec_v_mem, n_hid),
        "Isyn": tr(layer.rec_i_syn, n_hid),
        "Isyn2": tr(layer.rec_i_syn2, n_hid),
        "Spikes": np.array(layer.rec_recurrent_spikes, dtype=np.int64).reshape(T, n_hid),
        "Vmem_out": tr(layer.rec_v_mem_out, n_out),
        "Isyn_out": tr(layer.rec_i_syn_out, n_out),
    }
    return out.reshape(T, n_out), rec


def run_oracle(config: XyloConfig, x: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Build a fresh layer for ``config`` and run ``x`` from the zero state."""
    return run_layer(build_layer(config), x)


def random_config(rng: np.random.Generator, *, max_hidden: int = 80, max_fanout: int = 64) -> XyloConfig:
    """A random *valid* configuration that exercises the corners of the dynamics.

    Sizes ``N_in`` 1..16, ``N_hid`` 1..``max_hidden``, ``N_out`` 1..8, ``k`` 1 or 2; weights over the
    full int8 range at random densities; weight shifts 0..15 (shifts >= 9 make ``w << s`` wrap in
    int16); aliases to higher ids (chains included); thresholds from 0 (and negative) to 32767;
    biases over the int16 range; dashes 0..15 (0 and 15 often).
    """
    n_in = int(rng.integers(1, 17))
    n_hid = int(rng.integers(1, max_hidden + 1))
    n_out = int(rng.integers(1, 9))
    k = int(rng.integers(1, 3))

    def weights(shape, density):
        w = rng.integers(-128, 128, size=shape)
        return w * (rng.random(shape) < density)

    dens = lambda: float(rng.choice([0.02, 0.1, 0.3, 0.7, 1.0]))  # noqa: E731
    w_in = weights((n_in, n_hid, k), dens())
    w_rec = weights((n_hid, n_hid, k), dens()) * (rng.random() < 0.8)
    for j in range(n_hid):  # respect the recurrent fan-out limit
        nz = np.argwhere(w_rec[j] != 0)
        if len(nz) > max_fanout:
            drop = nz[rng.permutation(len(nz))[max_fanout:]]
            w_rec[j, drop[:, 0], drop[:, 1]] = 0
    w_out = weights((n_hid, n_out), dens())

    def dashes(n):
        d = rng.integers(0, 16, size=n)
        d[rng.random(n) < 0.15] = 0
        d[rng.random(n) < 0.15] = 15
        return d

    def shift():
        return int(rng.choice([0, 0, 1, 2, 4, 6, 8, 9, 10, 12, 15]))

    def thresholds(n):
        kind = rng.integers(0, 4)
        if kind == 0:
            t = rng.integers(1, 200, size=n)
        elif kind == 1:
            t = rng.integers(100, 32768, size=n)
        elif kind == 2:
            t = np.exp(rng.uniform(0, np.log(32767), size=n)).astype(np.int64)
        else:
            t = rng.integers(-50, 400, size=n)
        t[rng.random(n) < 0.05] = 0
        t[rng.random(n) < 0.05] = 32767
        t[rng.random(n) < 0.03] = int(rng.integers(-32768, 0))
        return t

    aliases = -np.ones(n_hid, dtype=np.int64)
    if rng.random() < 0.5:
        for i in range(n_hid - 1):
            if rng.random() < 0.3:
                aliases[i] = int(rng.integers(i + 1, n_hid))
    bias_enable = bool(rng.random() < 0.5)
    if bias_enable:
        scale = int(rng.choice([10, 1000, 32768]))
        bias = rng.integers(-scale, scale, size=n_hid) * (rng.random(n_hid) < 0.5)
        bias_out = rng.integers(-scale, scale, size=n_out) * (rng.random(n_out) < 0.5)
        if not (bias.any() or bias_out.any()):
            bias[0] = 1
    else:
        bias = np.zeros(n_hid, dtype=np.int64)
        bias_out = np.zeros(n_out, dtype=np.int64)
    return XyloConfig(
        weights_in=w_in,
        weights_rec=w_rec,
        weights_out=w_out,
        dash_mem=dashes(n_hid),
        dash_syn=dashes(n_hid),
        dash_syn_2=dashes(n_hid) if k == 2 else np.zeros(n_hid, dtype=np.int64),
        dash_mem_out=dashes(n_out),
        dash_syn_out=dashes(n_out),
        threshold=thresholds(n_hid),
        bias=bias,
        threshold_out=thresholds(n_out),
        bias_out=bias_out,
        aliases=aliases,
        weight_shift_in=shift(),
        weight_shift_rec=shift(),
        weight_shift_out=shift(),
        bias_enable=bias_enable,
        dt=1e-3,
    )


def random_input(rng: np.random.Generator, T: int, n_in: int, batch: int | None = None) -> np.ndarray:
    """Poisson event counts at a random rate, sometimes far above the 15-event clip."""
    rate = float(rng.choice([0.05, 0.3, 1.0, 4.0, 20.0]))
    shape = (T, n_in) if batch is None else (batch, T, n_in)
    return rng.poisson(rate, size=shape).astype(np.int64)
