"""The network and the settings of ``pond demo``.

The demo network's time constants are chosen so that the float decay per step equals Xylo's bit-shift
decay exactly, ``exp(-dt / tau) = 1 - 2^-dash``, which closes the tau -> dash gap.

Example:
    >>> round(tau_for_dash(4) * 1e3, 3), round(tau_for_dash(1) * 1e3, 3)   # ms, at dt = 1 ms
    (15.495, 1.443)
"""

from __future__ import annotations

import math
from typing import Any

from pondlib.errors import GraphError

__all__ = [
    "DASH_MEM",
    "DASH_SYN",
    "DEMO_DEFAULTS",
    "DT",
    "SIM_CHUNK",
    "demo_network",
    "one_spike_network",
    "tau_for_dash",
]

#: Settings of ``pond demo`` (full and ``--fast``): training epochs, hidden neurons, steps per sample,
#: epochs of device-aware fine-tuning per device, and epochs of fine-tuning with one spike per neuron
#: per step (:func:`one_spike_network`, the plain remedy ``benchmarks/digits_devices.py`` compares).
DEMO_DEFAULTS: dict[str, dict[str, Any]] = {
    "full": {"epochs": 60, "hidden": 128, "T": 12, "aware_epochs": 30, "finetune_epochs": 10},
    "fast": {"epochs": 12, "hidden": 64, "T": 12, "aware_epochs": 6, "finetune_epochs": 4},
}

DASH_MEM = 4  # membrane decay shift: alpha = 15/16 per step
DASH_SYN = 1  # synaptic decay shift: beta = 1/2 per step
DT = 1e-3  # s, the time step
SIM_CHUNK = 150  # samples per simulator call (one progress-bar step)


def tau_for_dash(dash: int, dt: float = DT) -> float:
    """The time constant (s) whose float decay ``exp(-dt / tau)`` equals the chip's ``1 - 2^-dash``."""
    return -dt / math.log(1.0 - 2.0**-dash)


def demo_network(n_hidden: int, n_out: int = 10, *, key: Any) -> Any:
    """The demo network ``Linear(16, H) -> LIF(H) -> Linear(H, n_out) -> LIF(n_out)``.

    Time constants match Xylo's decay shifts exactly (``exp(-dt/tau) = 1 - 2^-dash``: membrane
    dash 4, synapse dash 1, dt = 1 ms) and the spike caps are Xylo's (31 hidden, 1 output), so
    the float model trains with them. No weight biases (Xylo has none).

    Example:
        >>> import jax
        >>> net = demo_network(8, key=jax.random.PRNGKey(0))
        >>> net.size_in, net.size_out, net.layers[1].max_spikes_per_dt
        (16, 10, 31.0)
    """
    import jax

    from pondlib import nn

    k1, k2 = jax.random.split(key)
    tau_mem, tau_syn = tau_for_dash(DASH_MEM), tau_for_dash(DASH_SYN)
    return nn.Sequential(
        nn.Linear(16, n_hidden, key=k1),
        nn.LIF(n_hidden, tau_mem=tau_mem, tau_syn=tau_syn, dt=DT, max_spikes_per_dt=31),
        nn.Linear(n_hidden, n_out, key=k2),
        nn.LIF(n_out, tau_mem=tau_mem, tau_syn=tau_syn, dt=DT, max_spikes_per_dt=1),
    )


def one_spike_network(net: Any) -> Any:
    """A copy of a ``Sequential`` network whose LIF layers emit at most one spike per step.

    SpiNNaker2 and Siracusa neurons spike at most once per step; every other parameter is kept, so
    the copy starts from the trained weights (fine-tune it with :func:`pondlib.training.fit`).

    Example:
        >>> import jax
        >>> net = one_spike_network(demo_network(8, key=jax.random.PRNGKey(0)))
        >>> [getattr(m, "max_spikes_per_dt", None) for m in net.layers]
        [None, 1.0, None, 1.0]
    """
    import numpy as np

    from pondlib import nn

    layers = []
    for m in net.layers:
        if isinstance(m, nn.LIF):
            if m.n_synapses != 1 or m.w_rec is not None:
                raise GraphError(
                    "one_spike_network layer",
                    value=m.n_synapses,
                    limit="one synapse, no w_rec",
                    where="one_spike_network",
                    fix="pass a feed-forward Linear/LIF network",
                )
            m = nn.LIF(
                m.n_neurons,
                tau_mem=m.tau_mem,
                tau_syn=np.asarray(m.tau_syn)[:, 0],
                threshold=m.threshold,
                bias=m.bias,
                dt=m.dt,
                max_spikes_per_dt=1,
                surrogate=m.surrogate,
            )
        layers.append(m)
    return nn.Sequential(*layers)
