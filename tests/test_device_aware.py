"""device_aware: one entry point over Xylo, SpiNNaker2 and Siracusa."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from pondlib import nn
from pondlib.devices.siracusa.aware import SiracusaAware, export
from pondlib.devices.spinnaker2.aware import export_spinnaker2, spinnaker2_aware
from pondlib.devices.xylo.aware_lif import XyloLIF
from pondlib.transform import device_aware
from tests.strategies import assert_pond_error


def _net() -> nn.Sequential:
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    return nn.Sequential(
        nn.Linear(4, 6, key=k1), nn.LIF(6, tau_mem=0.02, tau_syn=0.002), nn.Linear(6, 3, key=k2), nn.LIF(3)
    )


def test_dispatch_xylo_and_siracusa():
    hw = device_aware(_net(), device="xylo", delays=False)
    assert all(isinstance(m, XyloLIF) for m in hw.layers) and not hw.layers[1].delay_in
    x = np.ones((2, 3, 4), np.float32)
    sir = device_aware(_net(), device="siracusa", calibration=x)
    assert isinstance(sir, SiracusaAware) and sir.size_out == 3
    assert np.asarray(sir(x)[0]).shape == (2, 3, 3)


def test_dispatch_spinnaker2():
    net = _net()
    got = device_aware(net, device="spinnaker2", neuron_model="lif_curr_exp")
    want = spinnaker2_aware(net, neuron_model="lif_curr_exp")
    assert type(got) is type(want) and [type(m) for m in got.layers] == [type(m) for m in want.layers]
    assert got.layers[0].w_max == 15  # the option reached the transform (the default word has 127)


@pytest.mark.parametrize("device", ["xylo", "spinnaker2", "siracusa"])
def test_every_device_exports_bit_exact(device):
    """The table of the module: each twin's export runs on the device's simulator exactly as the model."""
    net = _net()
    x = np.random.default_rng(0).integers(0, 3, (3, 8, 4))
    if device == "xylo":
        from pondlib.devices.xylo import XYLO_AUDIO3, XyloSim, config_from_specification, mapper
        from pondlib.transform import channel_quantize

        model = device_aware(net, device=device, limits=XYLO_AUDIO3)
        config, ok, msg = config_from_specification(channel_quantize(mapper(model, XYLO_AUDIO3)))
        assert ok, msg
        dev = XyloSim.from_config(config).evolve(x)[0]
    elif device == "spinnaker2":
        from pondlib.devices.spinnaker2 import SpiNNaker2Sim, config_from_specification

        model = device_aware(net, device=device)
        config, ok, msg = config_from_specification(export_spinnaker2(model).spec)
        assert ok, msg
        dev = SpiNNaker2Sim.from_config(config).evolve(x)[0]
    else:
        from pondlib.devices.siracusa import SiracusaSim, mapper, quantize_input

        model = device_aware(net, device=device, calibration=x.astype(np.float32))
        layers, kwargs = export(model)
        spec = mapper(layers, **kwargs)
        dev = SiracusaSim(spec.config).evolve(quantize_input(x, spec.config))[0]
    out = np.asarray(model(x.astype(np.float32))[0])
    assert out.shape == dev.shape and np.array_equal(out, dev)


@pytest.mark.parametrize("device", ["loihi", "", None, 3, "Xylo"])
def test_unknown_device_refused(device):
    err = assert_pond_error(device_aware, _net(), device=device)
    assert "siracusa" in str(err)
