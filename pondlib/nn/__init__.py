"""Float spiking modules in JAX: pure step functions, thin immutable modules, one time loop.

Every module maps (T, N_in) or (B, T, N_in) input to ``(output, state, record)``; see
:mod:`pondlib.nn.base` for the contract, :mod:`pondlib.nn.lif` for the neuron equations.

Constructors raise :class:`~pondlib.errors.GraphError` and calls raise
:class:`~pondlib.errors.SimulationError`, naming the offending parameter, input or state; what is checked
and what is tolerated is listed in :mod:`pondlib.nn.base`.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from pondlib import nn
    >>> k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    >>> net = nn.Sequential(nn.Linear(16, 32, key=k1), nn.LIF(32, tau_mem=0.02, tau_syn=0.01),
    ...                     nn.Linear(32, 8, key=k2), nn.LIF(8))
    >>> out, state, rec = net(jnp.zeros((4, 100, 16)))
    >>> out.shape
    (4, 100, 8)
"""

from pondlib.nn import parallel
from pondlib.nn.base import Module, scan_steps
from pondlib.nn.combinators import Residual, Sequential
from pondlib.nn.graphnet import GraphNetwork
from pondlib.nn.layers import AvgPool2d, Conv1d, Conv2d, Delay, Flatten, Scale, SumPool2d
from pondlib.nn.lif import LIF, LIFParameters, LIFState, lif_step
from pondlib.nn.linear import Linear
from pondlib.nn.neurons import IF, LI, NIRLIF, CubaLI, CubaLIF, Integrator, Threshold
from pondlib.nn.surrogate import Surrogate, spike_count

__all__ = [
    "Module",
    "scan_steps",
    "Linear",
    "LIF",
    "LIFState",
    "LIFParameters",
    "lif_step",
    "Sequential",
    "Residual",
    "Surrogate",
    "spike_count",
    "Conv1d",
    "Conv2d",
    "SumPool2d",
    "AvgPool2d",
    "Flatten",
    "Scale",
    "Delay",
    "CubaLIF",
    "CubaLI",
    "NIRLIF",
    "LI",
    "IF",
    "Integrator",
    "Threshold",
    "GraphNetwork",
    "parallel",
]
