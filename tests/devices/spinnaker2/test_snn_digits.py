"""The spiking digits network (trained with pondlib.training) mapped to the SNN path."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.slow
def test_spiking_digits_on_the_snn_simulator():
    import jax
    import optax

    from pondlib import nn
    from pondlib.datasets import load_digits_events
    from pondlib.devices.spinnaker2.config import config_from_specification
    from pondlib.devices.spinnaker2.mapper import mapper
    from pondlib.devices.spinnaker2.sim import SpiNNaker2Sim
    from pondlib.training import evaluate, fit

    data = load_digits_events(T=14)  # 8 scan ticks + 6 silent ticks (each hop costs one tick)
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    # at most one spike per neuron per tick, as on the chip
    net = nn.Sequential(
        nn.Linear(16, 64, key=k1),
        nn.LIF(64, tau_mem=0.0155, tau_syn=0.0014, max_spikes_per_dt=1),
        nn.Linear(64, 10, key=k2),
        nn.LIF(10, tau_mem=0.0155, tau_syn=0.0014, max_spikes_per_dt=1),
    )
    trained, _ = fit(
        net,
        data,
        "cross_entropy_sum",
        optimizer=optax.adam(3e-3),
        epochs=8,
        batch_size=32,
        frozen=("tau_mem", "tau_syn"),
        progress=False,
    )
    acc_float = evaluate(trained, data.x_test, data.y_test)
    accs = {}
    for model in ("lif_curr_exp", "lif_curr_exp_no_delay"):
        spec = mapper(trained, neuron_model=model)
        config, ok, message = config_from_specification(spec)
        assert ok, message
        out, _, _ = SpiNNaker2Sim.from_config(config).evolve(data.x_test)
        accs[model] = float(np.mean(np.argmax(out.sum(axis=1), axis=1) == data.y_test))
    print(
        f"spiking digits: float {acc_float:.3f}, SpiNNaker2 lif_curr_exp (4-bit weights) "
        f"{accs['lif_curr_exp']:.3f}, lif_curr_exp_no_delay (7-bit) {accs['lif_curr_exp_no_delay']:.3f}"
    )
    assert acc_float > 0.5
    assert accs["lif_curr_exp"] > 0.5 and accs["lif_curr_exp_no_delay"] > 0.5  # chance is 0.1
