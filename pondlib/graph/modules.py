"""Typed graph modules: the parameters a device mapper needs, as numpy copies.

=================  ===============================  ==============================================
module             sizes                            parameters
=================  ===============================  ==============================================
LinearWeights      N_in -> N_out                    ``weights`` (N_in, N_out), ``biases`` (N_out,)
                                                    or None: ``y = x @ W + b``
LIFNeurons         N * k -> N                       ``tau_mem`` (N,) s, ``tau_syn`` (N, k) s,
                                                    ``threshold`` (N,), ``bias`` (N,), ``dt`` s,
                                                    ``max_spikes_per_dt``
AliasConnection    N -> N                           none: the spikes of the neurons writing its
                                                    inputs also leave through the neurons writing
                                                    its outputs (how a residual sum reaches a chip
                                                    without adders)
NIRNeuronGroup     N -> N                           a NIR neuron layer no device primitive runs
                                                    exactly (``kind``, ``reset``, ``dt``, ``reason``)
=================  ===============================  ==============================================

LIF input channel ``i`` drives synapse ``i % k`` of neuron ``i // k``. The dynamics are those of
:func:`pondlib.nn.lif_step` (input, decay ``exp(-dt/tau)``, integrate, spike, reset by subtraction).

Every module checks its parameters when it is built and raises :class:`~pondlib.errors.GraphError` naming
the module and the field: arrays must be real (not complex, strings or ragged), finite and of the shape in
the table (a scalar LIF parameter is broadcast to every neuron); ``tau_mem``, ``tau_syn``, ``threshold``
and ``dt`` must be > 0 and ``max_spikes_per_dt >= 1``. Nothing is rounded or clipped here. Node lists
must hold distinct :class:`~pondlib.graph.GraphNode` objects. (Assigning a field later is not checked:
the device mappers check what they read.)

Example:
    >>> import numpy as np
    >>> lif = LIFNeurons._factory(4, 2, "lif", None, tau_mem=np.full(2, 0.02),
    ...                           tau_syn=np.full((2, 2), 0.01), threshold=np.ones(2),
    ...                           bias=np.zeros(2), dt=1e-3)
    >>> lif.n_neurons, lif.n_synapses
    (2, 2)
    >>> LinearWeights._factory(2, 3, "w", None, np.ones((3, 3)))
    Traceback (most recent call last):
    ...
    pondlib.errors.GraphError: w: weights shape: got (3, 3), expected (2, 3). Fix: ...
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pondlib.errors import GraphError
from pondlib.graph.base import GraphModule
from pondlib.validate import as_array, as_float_array, check_float

__all__ = ["LinearWeights", "LIFNeurons", "AliasConnection", "NIRNeuronGroup"]

#: LIFNeurons parameters that divide or decay: they must be > 0.
_POSITIVE = ("tau_mem", "tau_syn", "threshold")


def _check_shape(name: str, module: str, arr: np.ndarray, shape: tuple[int, ...]) -> None:
    if arr.shape != shape:
        raise GraphError(
            f"{name} shape", value=tuple(arr.shape), limit=shape, where=module, fix=f"pass {name} with shape {shape}"
        )


def _param(value: object, name: str, module: str, *, positive: bool = False) -> np.ndarray:
    """A parameter as a fresh float64 array: real numbers (not bool), not ragged, finite (and > 0 when
    ``positive``)."""
    raw = as_array(value, name, where=module, error=GraphError, allow_empty=True)
    if raw.dtype.kind == "b":
        raise GraphError(name, value="booleans", limit="numbers", where=module, fix=f"pass {name} as numbers")
    arr = np.array(as_float_array(raw, name, where=module, error=GraphError, allow_empty=True), copy=True)
    if positive and arr.size and not np.all(arr > 0):
        idx = tuple(int(i) for i in np.argwhere(~(arr > 0))[0])
        raise GraphError(
            name,
            value=f"{arr[idx]} at index {idx}" if idx else float(arr),
            limit="a finite number > 0",
            where=module,
            fix=f"pass a positive {name}",
        )
    return arr


@dataclass(eq=False, repr=False)
class LinearWeights(GraphModule):
    """A weight matrix ``y = x @ weights (+ biases)``; ``weights`` (N_in, N_out), ``biases`` (N_out,)."""

    weights: np.ndarray = field(default=None)
    biases: np.ndarray | None = None

    def _check_fields(self) -> None:
        if self.weights is None:
            raise GraphError("weights", value=None, limit="an array", where=self.name, fix="pass the weight matrix")
        self.weights = _param(self.weights, "weights", self.name)
        _check_shape("weights", self.name, self.weights, (self.size_in, self.size_out))
        if self.biases is not None:
            self.biases = _param(self.biases, "biases", self.name)
            _check_shape("biases", self.name, self.biases, (self.size_out,))

    @property
    def has_bias(self) -> bool:
        """True when the module carries a bias vector with a non-zero entry."""
        return self.biases is not None and bool(np.any(self.biases != 0))


@dataclass(eq=False, repr=False)
class LIFNeurons(GraphModule):
    """LIF neurons with ``k = size_in // size_out`` synaptic currents each.

    Per neuron ``n`` at each step of ``dt`` seconds (float model, see :func:`pondlib.nn.lif_step`)::

        isyn[n, s] = (isyn[n, s] + x[n * k + s]) * exp(-dt / tau_syn[n, s])
        vmem[n]    = vmem[n] * exp(-dt / tau_mem[n]) + sum_s isyn[n, s] + bias[n]
        spikes[n]  = min(floor(vmem[n] / threshold[n]), max_spikes_per_dt)   if vmem >= threshold
        vmem[n]   -= spikes[n] * threshold[n]
    """

    tau_mem: np.ndarray = field(default=None)
    tau_syn: np.ndarray = field(default=None)
    threshold: np.ndarray = field(default=None)
    bias: np.ndarray = field(default=None)
    dt: float = 1e-3
    max_spikes_per_dt: float = float(2**16)

    def _check_fields(self) -> None:
        n = self.size_out
        if n == 0 or self.size_in % n != 0:
            raise GraphError(
                "LIF input size",
                value=self.size_in,
                limit=f"a multiple of N = {n}",
                where=self.name,
                fix="use N * k input channels for k synapses per neuron",
            )
        k = self.size_in // n
        defaults = {"tau_mem": (n,), "tau_syn": (n, k), "threshold": (n,), "bias": (n,)}
        for name, shape in defaults.items():
            value = getattr(self, name)
            if value is None:
                raise GraphError(
                    name, value=None, limit=f"an array of shape {shape}", where=self.name, fix=f"pass {name}"
                )
            arr = _param(value, name, self.name, positive=name in _POSITIVE)
            if arr.ndim == 0:
                arr = np.full(shape, float(arr))  # scalars broadcast to every neuron (and synapse)
            elif name == "tau_syn" and arr.shape == (n,) and k == 1:
                arr = arr.reshape(n, 1)
            _check_shape(name, self.name, arr, shape)
            setattr(self, name, arr)
        self.dt = check_float(self.dt, "dt", lo=0.0, lo_open=True, where=self.name, error=GraphError)
        self.max_spikes_per_dt = check_float(
            self.max_spikes_per_dt, "max_spikes_per_dt", lo=1.0, where=self.name, error=GraphError
        )

    @property
    def n_neurons(self) -> int:
        """Number of neurons N."""
        return self.size_out

    @property
    def n_synapses(self) -> int:
        """Synaptic currents per neuron k."""
        return self.size_in // self.size_out


@dataclass(eq=False, repr=False)
class AliasConnection(GraphModule):
    """Spikes of the neurons writing the input nodes are also emitted through the neurons writing the
    output nodes (element-wise, N -> N). Exported by a residual connection.

    The alias is defined by the nodes themselves (input node ``i`` aliases to output node ``i``): there
    are no numeric ids to round. Both lists must have the same length and hold distinct nodes, and an
    alias may not map a node onto itself."""

    def _check_fields(self) -> None:
        if self.size_in != self.size_out:
            raise GraphError(
                "alias connection sizes",
                value=self.size_in,
                limit=self.size_out,
                where=self.name,
                fix="an alias connects N sources to N targets",
            )
        same = [i for i, (a, b) in enumerate(zip(self.input_nodes, self.output_nodes)) if a is b]
        if same:
            raise GraphError(
                "alias of a node onto itself",
                value=f"channel {same[0]}",
                limit="distinct source and target nodes",
                where=self.name,
                fix="an alias connects the neurons feeding a block to the block's output neurons",
            )


@dataclass(eq=False, repr=False)
class NIRNeuronGroup(GraphModule):
    """A NIR neuron layer in a pondlib graph that no device primitive represents exactly.

    Attributes: ``kind`` (the ``pondlib.nn`` class that exported it), ``reset``, ``dt`` (s), ``reason``
    (why it is not a :class:`LIFNeurons`). The parameters are on ``computational_module``. A device
    mapper treats it as a neuron layer for every structural rule and reports it once as a
    ``neuron_model`` violation whose remedy is built from ``reason``.
    """

    kind: str = ""
    reset: str = ""
    dt: float = float("nan")
    reason: str = ""
