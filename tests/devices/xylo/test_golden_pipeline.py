"""End to end on the four golden cases: pondlib.nn -> as_graph -> mapper -> quantizers -> config -> sim.

Each case rebuilds the reference network in :mod:`pondlib.nn` from the float parameters stored in
the golden file (``float/params/...``, ``float/simparams/...``), maps it to Xylo Audio 2, quantizes it
both ways and runs our :class:`XyloSim` on the golden ``input_raster``. Every stage is compared with
the reference tool's output:

* ``spec_float``: equal up to float32 precision (``pondlib.nn`` stores float32 parameters; the
  reference stored float64);
* ``spec_channel`` / ``spec_global``: equal bit for bit;
* ``sim_channel`` / ``sim_global``: the output spikes and every recorded state (``Vmem``, ``Isyn``,
  ``Isyn2``, ``Spikes``, ``Vmem_out``, ``Isyn_out``) equal bit for bit.

Documented reference-tool bugs and why they do not show here: our quantizers scale the hidden bias
in the one-synapse per-channel case and scale the output bias with the output scale (the reference
does neither), and our configuration keeps hidden biases (the reference dropped them on a key-name
mismatch). All four golden networks have all-zero biases, so these fixes change nothing in these
cases; ``test_quantize.py`` shows the difference on biased specifications.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pondlib import nn
from pondlib.devices.xylo.config import config_from_specification
from pondlib.devices.xylo.mapper import mapper
from pondlib.devices.xylo.sim import XyloSim
from pondlib.devices.xylo.specification import ARRAY_FIELDS
from pondlib.transform import channel_quantize, global_quantize

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "xylo_golden"
CASES = ["ff_default", "residual_recurrent", "two_synapses", "high_input_counts"]
RECORD_KEYS = ["Vmem", "Isyn", "Isyn2", "Spikes", "Vmem_out", "Isyn_out"]


def load(case: str) -> dict[str, np.ndarray]:
    with np.load(GOLDEN / f"{case}.npz") as d:
        return {k: d[k] for k in d.files}


def lif_from(d: dict[str, np.ndarray], params: str, simparams: str) -> nn.LIF:
    tau_syn = d[f"{params}/tau_syn"]
    n, k = tau_syn.shape
    w_rec = None
    if bool(d[f"{simparams}/_has_rec"]):
        w_rec = d.get(f"{params}/w_rec", d.get(f"{simparams}/w_rec"))
    return nn.LIF(
        n if k == 1 else (n * k, n),
        tau_mem=d[f"{params}/tau_mem"],
        tau_syn=tau_syn,
        threshold=d[f"{params}/threshold"],
        bias=d[f"{params}/bias"],
        dt=float(d[f"{simparams}/dt"]),
        w_rec=w_rec,
    )


def linear_from(d: dict[str, np.ndarray], key: str) -> nn.Linear:
    w = d[key]
    return nn.Linear(*w.shape, weight=w)


def build(case: str, d: dict[str, np.ndarray]) -> nn.Sequential:
    p, s = "float/params", "float/simparams"
    if case == "residual_recurrent":
        return nn.Sequential(
            linear_from(d, f"{p}/0_Linear/weight"),
            lif_from(d, f"{p}/1_LIF", f"{s}/1_LIF"),
            nn.Residual(
                linear_from(d, f"{p}/2_ModResidual/0_Linear/weight"),
                lif_from(d, f"{p}/2_ModResidual/1_LIF", f"{s}/2_ModResidual/1_LIF"),
            ),
            linear_from(d, f"{p}/3_Linear/weight"),
            lif_from(d, f"{p}/4_LIF", f"{s}/4_LIF"),
        )
    return nn.Sequential(
        linear_from(d, f"{p}/0_Linear/weight"),
        lif_from(d, f"{p}/1_LIF", f"{s}/1_LIF"),
        linear_from(d, f"{p}/2_Linear/weight"),
        lif_from(d, f"{p}/3_LIF", f"{s}/3_LIF"),
    )


def golden_field(d: dict[str, np.ndarray], prefix: str, field: str, like: np.ndarray) -> np.ndarray:
    key = f"{prefix}/aliases_padded" if field == "aliases" else f"{prefix}/{field}"
    return d[key].reshape(like.shape)


@pytest.fixture(scope="module", params=CASES)
def mapped(request):
    d = load(request.param)
    net = build(request.param, d)
    return request.param, d, mapper(net.as_graph())


def test_spec_float_matches(mapped):
    case, d, spec = mapped
    assert spec.n_input == 16 and spec.n_output == 8 and spec.dt == 1e-3
    for f in ARRAY_FIELDS:
        got = getattr(spec, f)
        want = golden_field(d, "spec_float", f, got)
        if f == "aliases":
            np.testing.assert_array_equal(got, want, err_msg=f"{case} {f}")
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, err_msg=f"{case} {f}")
    if case == "residual_recurrent":
        assert (spec.aliases[:32] == np.arange(32, 64)).all()


@pytest.mark.parametrize("method", ["channel", "global"])
def test_quantized_config_and_simulation_match(mapped, method):
    case, d, spec = mapped
    q = (channel_quantize if method == "channel" else global_quantize)(spec)
    for f in ARRAY_FIELDS:
        got = getattr(q, f)
        np.testing.assert_array_equal(got, golden_field(d, f"spec_{method}", f, got), err_msg=f"{case} {method} {f}")
    config, ok, message = config_from_specification(q)
    assert ok, message
    assert config.bias_enable is False  # zero biases in every golden case
    out, _, rec = XyloSim.from_config(config).evolve(d["input_raster"], record=True)
    np.testing.assert_array_equal(np.asarray(out), d[f"sim_{method}/output"], err_msg=f"{case} {method}")
    for key in RECORD_KEYS:
        np.testing.assert_array_equal(
            np.asarray(rec[key]), d[f"sim_{method}/rec/{key}"], err_msg=f"{case} {method} record {key}"
        )
    # the comparison is meaningful: the network is active in both layers
    assert np.asarray(out).sum() > 100 and np.asarray(rec["Spikes"]).sum() > 1000
