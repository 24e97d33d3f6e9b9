"""Hardware-aware training for Xylo: the float model equals the chip, gradients flow, export round-trips."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from pondlib import nn
from pondlib.datasets import load_digits_events
from pondlib.devices.xylo import XYLO_AUDIO2, XYLO_AUDIO3, XyloSim, config_from_specification, mapper
from pondlib.devices.xylo.aware import hardware_dashes, to_float, xylo_aware
from pondlib.devices.xylo.aware_lif import XyloLIF, tau_for_dash
from pondlib.devices.xylo.compare import compare_records, layer_map_from_spec
from pondlib.errors import ConstraintError, GraphError
from pondlib.training import accuracy, evaluate, fit
from pondlib.transform import channel_quantize, global_quantize


def _net(n_hidden=32, n_out=10, seed=0, k=1):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    return nn.Sequential(
        nn.Linear(16, n_hidden * k, key=k1),
        nn.LIF((n_hidden * k, n_hidden), tau_mem=0.02, tau_syn=0.002, threshold=1.0),
        nn.Linear(n_hidden, n_out, key=k2),
        nn.LIF(n_out, tau_mem=0.02, tau_syn=0.002, threshold=1.0),
    )


@pytest.fixture(scope="module")
def data():
    return load_digits_events(T=12)


def _chip(net, x, quantizer=channel_quantize):
    qspec = quantizer(mapper(net, XYLO_AUDIO3))
    config, ok, msg = config_from_specification(qspec)
    assert ok, msg
    out, _, rec = XyloSim.from_config(config).evolve(x, record=True)
    return qspec, out, rec


@pytest.mark.parametrize(
    "quantizer,mode,k",
    [(channel_quantize, "channel", 1), (global_quantize, "global", 1), (channel_quantize, "channel", 2)],
)
def test_hardware_aware_float_equals_chip(data, quantizer, mode, k):
    net = xylo_aware(_net(k=k), quantize=mode)
    # a random perturbation of the dashes, so that several decay shifts are exercised
    rng = np.random.default_rng(1)
    net = eqx.tree_at(lambda m: m.layers[0].dash_mem, net, jnp.asarray(rng.uniform(1, 6, 32), jnp.float32))
    x = data.x_test[:60]
    out, _, rec = net(x.astype(np.float32), record=True)
    qspec, chip_out, chip_rec = _chip(net, x, quantizer)
    assert int(chip_rec["Spikes"].sum()) > 0 and int(chip_out.sum()) > 0
    np.testing.assert_array_equal(np.asarray(rec["0_XyloLIF/spikes"]), chip_rec["Spikes"])
    np.testing.assert_array_equal(np.asarray(out), chip_out)
    cmp = compare_records(
        rec,
        chip_rec,
        layer_map=layer_map_from_spec(qspec),
        delays=0,
        scales=qspec.quantization.scales,
        chip_output=chip_out,
    )
    for name, c in cmp.items():
        for qty, st in c.stats.items():
            assert st["exact"] == 1.0, (name, qty, st)


def test_plain_float_record_aligns_with_delays(data):
    net = to_float(xylo_aware(_net(), quantize="channel"))  # decays equal the chip's, no delays
    x = data.x_test[:20]
    _, _, rec = net(x.astype(np.float32), record=True)
    qspec, chip_out, chip_rec = _chip(net, x)
    lm = layer_map_from_spec(qspec)
    aligned = compare_records(rec, chip_rec, layer_map=lm, scales=qspec.quantization.scales, chip_output=chip_out)
    assert aligned["1_LIF"].delay == 0 and aligned["3_LIF"].delay == 1
    assert aligned["3_LIF"].float["vmem"].shape == (20, 11, 10)
    # the hidden layer matches closely (only integer rounding of the decay separates them)
    assert aligned["1_LIF"].stats["vmem"]["corr"] > 0.95
    unaligned = compare_records(rec, chip_rec, layer_map=lm, delays=0, scales=qspec.quantization.scales)
    assert aligned["3_LIF"].stats["isyn"]["corr"] > unaligned["3_LIF"].stats["isyn"]["corr"]


def test_gradients_reach_dash_and_weights(data):
    net = xylo_aware(_net())
    x = jnp.asarray(data.x_train[:16], jnp.float32)

    def loss(m):
        out, _, rec = m(x, record=True)
        return jnp.sum(out * jnp.arange(10)) + jnp.sum(rec["0_XyloLIF/vmem"] ** 2) * 1e-3

    g = jax.grad(loss)(net)
    for layer in g.layers:
        for name in ("weight", "dash_mem", "dash_syn", "threshold"):
            assert float(jnp.sum(jnp.abs(getattr(layer, name)))) > 0, name
        assert bool(jnp.all(jnp.isfinite(layer.weight)))
    frozen = jax.grad(loss)(xylo_aware(_net(), learn_dash=False))
    assert float(jnp.sum(jnp.abs(frozen.layers[0].dash_mem))) == 0.0


def test_export_reproduces_trained_dashes_and_input_untouched(data):
    plain = _net()
    before = [np.asarray(leaf).copy() for leaf in jax.tree_util.tree_leaves(plain)]
    net = xylo_aware(plain)
    net = eqx.tree_at(lambda m: m.layers[0].dash_mem, net, jnp.linspace(0.6, 15.4, 32))
    net, hist = fit(net, (data.x_train[:128], data.y_train[:128]), epochs=1, batch_size=64, progress=False)
    assert np.isfinite(hist["loss"][0])
    for a, b in zip(before, jax.tree_util.tree_leaves(plain)):
        np.testing.assert_array_equal(a, np.asarray(b))
    dashes = hardware_dashes(net)
    spec = mapper(net, XYLO_AUDIO3)
    ids = spec.report.neuron_ids
    np.testing.assert_array_equal(np.round(spec.dash_mem)[ids["0_XyloLIF"]], dashes["0_XyloLIF"]["dash_mem"])
    np.testing.assert_array_equal(np.round(spec.dash_syn_out), dashes["1_XyloLIF"]["dash_syn"][:, 0])
    assert set(np.unique(dashes["0_XyloLIF"]["dash_mem"]).tolist()) >= {1, 15}
    d = np.arange(1, 16)
    np.testing.assert_array_equal(np.round(np.log2(tau_for_dash(d, 1e-3) / 1e-3)), d)
    # the plain float copy decays exactly like the chip: exp(-dt / tau) = 1 - 2^-d
    lif = to_float(net).layers[1]
    np.testing.assert_allclose(
        np.exp(-lif.dt / np.asarray(lif.tau_mem, np.float64)), 1 - 2.0 ** -dashes["0_XyloLIF"]["dash_mem"], rtol=1e-6
    )


def test_audio2_output_limit_is_reported():
    with pytest.raises(ConstraintError) as err:
        mapper(xylo_aware(_net(), XYLO_AUDIO2), XYLO_AUDIO2)
    assert "max_output_neurons" in err.value.rules


def test_refuses_unsupported_networks():
    k = jax.random.PRNGKey(0)
    with pytest.raises(GraphError):
        xylo_aware(nn.Sequential(nn.Linear(4, 4, key=k), nn.LIF(4), nn.Residual(nn.Linear(4, 4, key=k), nn.LIF(4))))
    with pytest.raises(GraphError):
        xylo_aware(nn.LIF(4))
    with pytest.raises(GraphError):
        to_float(_net())


def test_input_clip_delay_and_caps():
    lif = XyloLIF(
        1,
        1,
        weight=[[1.0]],
        threshold=0.01,
        dash_mem=1.0,
        dash_syn=1.0,
        quantize=None,
        input_clip=15.0,
        delay_in=True,
        max_spikes=31,
    )
    out, state, rec = lif(jnp.array([[100.0], [0.0]]), record=True)
    assert out[0, 0] == 0.0  # the input arrives one step late
    assert out[1, 0] == 31.0  # capped at 31
    assert float(rec["isyn"][1, 0, 0]) == 7.5  # clipped to 15, then halved


def test_short_training_closes_the_gap(data):
    """A fast end-to-end run: plain float training, then hardware-aware fine-tuning, both on the chip
    (the full run is benchmarks/digits_xylo.py)."""
    x, y = data.x_train[:640], data.y_train[:640]
    xt, yt = data.x_test[:200], data.y_test[:200]
    opt = optax.adam(1e-2)
    net, _ = fit(_net(), (x, y), epochs=6, batch_size=64, progress=False, frozen=("tau_mem", "tau_syn"), optimizer=opt)
    _, plain_chip_out, _ = _chip(net, xt)
    hw, _ = fit(xylo_aware(net), (x, y), epochs=3, batch_size=64, progress=False, optimizer=opt)
    hw_acc = evaluate(hw, xt, yt)
    _, chip_out, _ = _chip(hw, xt)
    assert accuracy(chip_out, yt) == pytest.approx(hw_acc, abs=1e-9)  # bit-exact: same predictions
    assert hw_acc > accuracy(plain_chip_out, yt) + 0.1
