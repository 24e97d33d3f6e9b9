"""Float layer descriptions the Siracusa mapper takes, and their float reference forward pass.

``GemmLayer`` (``y = x W + b``, W of shape (K, O)), ``Conv2dLayer`` (NHWC input, HWIO weights), ``ReLU``
and ``IntLIFLayer`` (an integer-friendly LIF: ``v = alpha v + gain i + bias``, spike when ``v``
crosses ``threshold``), built directly or from a pondlib graph with :func:`layers_from_graph`;
:func:`float_forward` runs them in float64 and returns the activations and the peak magnitudes the
mapper calibrates its scales on. Split out of :mod:`pondlib.devices.siracusa.mapper`, which re-exports
every name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pondlib.devices.siracusa.specification import (
    COMPARISONS,
    RESET_MODES,
    SIZE_MAX,
    QConv2d,
    check_bias_shape,
    conv_geometry,
)
from pondlib.errors import GraphError, QuantizationError
from pondlib.validate import as_float_array, check_bool, check_choice, check_float, check_int, check_type

__all__ = ["GemmLayer", "Conv2dLayer", "ReLU", "IntLIFLayer", "layers_from_graph", "float_forward"]


# ------------------------------------------------------------------------------------------------
# Float layer descriptions
# ------------------------------------------------------------------------------------------------
def _farr(value: Any, name: str, where: str, ndim: int | tuple[int, ...], allow_empty: bool = False) -> np.ndarray:
    """A float64 copy of finite real numbers (GraphError naming the field otherwise)."""
    return as_float_array(value, name, where=where, error=GraphError, ndim=ndim, allow_empty=allow_empty).copy()


def _layer_name(value: Any, kind: str) -> str:
    check_type(value, "name", str, where=kind, error=GraphError)
    if not value:
        raise GraphError("name", value="''", limit="a non-empty layer name", where=kind, fix="name the layer")
    return value


@dataclass(frozen=True)
class GemmLayer:
    """``y = x @ weight + bias``; weight (K, O), bias (O,) or None (finite floats; a GraphError names
    the field and both shapes otherwise)."""

    name: str
    weight: Any
    bias: Any = None

    def __post_init__(self) -> None:
        where = _layer_name(self.name, "GemmLayer")
        object.__setattr__(self, "weight", _farr(self.weight, "weight", where, 2))
        if self.bias is not None:
            object.__setattr__(self, "bias", _farr(self.bias, "bias", where, 1))
            check_bias_shape(self.bias.shape, self.weight.shape, where, GraphError)

    @property
    def n_in(self) -> int:
        return int(self.weight.shape[0])

    @property
    def n_out(self) -> int:
        return int(self.weight.shape[-1])


@dataclass(frozen=True)
class Conv2dLayer:
    """NHWC convolution: weight (kh, kw, C/groups, O), ``in_shape`` (H, W, C); zero padding.

    Finite float weights and bias (O,); ``stride`` >= 1, ``padding`` >= 0, ``groups`` >= 1 dividing C and
    O, and a kernel no larger than the padded input (a GraphError names both shapes otherwise).
    """

    name: str
    weight: Any
    in_shape: tuple[int, int, int]
    bias: Any = None
    stride: int = 1
    padding: int = 0
    groups: int = 1

    def __post_init__(self) -> None:
        where = _layer_name(self.name, "Conv2dLayer")
        object.__setattr__(self, "weight", _farr(self.weight, "weight", where, 4))
        geometry = conv_geometry(
            self.weight.shape, self.in_shape, self.stride, self.padding, self.groups, where, GraphError
        )
        for key, value in geometry.items():
            object.__setattr__(self, key, value)
        if self.bias is not None:
            object.__setattr__(self, "bias", _farr(self.bias, "bias", where, 1))
            check_bias_shape(self.bias.shape, self.weight.shape, where, GraphError)

    def _q(self, w: Any = None) -> QConv2d:
        wq = np.zeros(self.weight.shape, dtype=np.int64) if w is None else w
        return QConv2d(self.name, wq, self.in_shape, None, None, self.stride, self.padding, self.groups)

    @property
    def n_in(self) -> int:
        return int(np.prod(self.in_shape))

    @property
    def n_out(self) -> int:
        return self._q().n_out


@dataclass(frozen=True)
class ReLU:
    """``y = max(x, 0)``; the size follows the previous layer."""

    name: str = "relu"

    def __post_init__(self) -> None:
        _layer_name(self.name, "ReLU")


@dataclass(frozen=True)
class IntLIFLayer:
    """A LIF layer that will run as the integer LIF (``v = alpha v + gain I + bias``; see the module).

    ``alpha``, ``threshold``, ``bias``: (N,) finite floats (scalars and size-1 arrays broadcast to ``n``
    neurons, ``n`` taken from the arrays when not given). ``alpha`` (the leak) is in [0, 1], the
    threshold > 0, ``gain`` finite; ``state_bits`` 2..62 (the chip's limit is checked by the mapper),
    ``reset`` one of :data:`RESET_MODES`, ``compare`` one of :data:`COMPARISONS`.
    """

    name: str
    alpha: Any
    threshold: Any
    bias: Any = 0.0
    gain: float = 1.0
    n: int | None = None
    state_bits: int = 16
    reset: str = "subtract"
    compare: str = ">="

    def __post_init__(self) -> None:
        where = _layer_name(self.name, "IntLIFLayer")
        arrays = {key: _farr(getattr(self, key), key, where, (0, 1)) for key in ("alpha", "threshold", "bias")}
        if self.n is not None:
            n = check_int(self.n, "n", lo=1, hi=SIZE_MAX, where=where, error=GraphError)
        else:
            n = max(a.size for a in arrays.values())
        shapes = ", ".join(f"{k} {a.shape}" for k, a in arrays.items())
        for key, arr in arrays.items():
            if arr.size not in (1, n):
                raise GraphError(
                    f"{key} shape",
                    value=f"{key} {arr.shape} for {n} neurons ({shapes})",
                    limit=f"() or ({n},)",
                    where=where,
                    fix=f"pass {key} per neuron or one value for all",
                )
            object.__setattr__(self, key, np.broadcast_to(arr.reshape(-1), (n,)).copy())
        if np.any(self.alpha < 0) or np.any(self.alpha > 1):
            raise GraphError(
                "alpha",
                value=float(self.alpha[(self.alpha < 0) | (self.alpha > 1)][0]),
                limit="a leak factor in [0, 1]",
                where=where,
                fix="pass alpha = exp(-dt / tau_mem)",
            )
        if np.any(self.threshold <= 0):
            raise GraphError(
                "threshold",
                value=float(self.threshold.min()),
                limit="> 0",
                where=where,
                fix="pass a positive threshold (a threshold <= 0 fires forever)",
            )
        object.__setattr__(self, "gain", check_float(self.gain, "gain", where=where, error=GraphError))
        object.__setattr__(self, "n", int(n))
        object.__setattr__(
            self, "state_bits", check_int(self.state_bits, "state_bits", lo=2, hi=62, where=where, error=GraphError)
        )
        check_choice(self.reset, "reset", RESET_MODES, where=where, error=GraphError)
        check_choice(self.compare, "compare", COMPARISONS, where=where, error=GraphError)

    @property
    def n_in(self) -> int:
        return self.n

    @property
    def n_out(self) -> int:
        return self.n


FloatLayer = Any


def layers_from_graph(graph: Any, drop_synapse: bool = False) -> list:
    """Float layer descriptions from a chain graph (or ``pondlib.nn`` network) of ``LinearWeights``
    and ``LIFNeurons``.

    ``LinearWeights`` -> :class:`GemmLayer`; ``LIFNeurons`` (one synapse, ``k = 1``) ->
    :class:`IntLIFLayer` with ``alpha = exp(-dt / tau_mem)``. The Siracusa integer LIF has a membrane
    state only: the float LIF's synaptic current ``isyn = beta (isyn + x)`` cannot be represented, so a
    LIF with a synaptic time constant raises :class:`~pondlib.errors.GraphError` unless
    ``drop_synapse=True`` (then ``gain = 1``: input goes straight into the membrane, which changes the
    dynamics; a conscious choice, never silent). The float LIF may emit several spikes per step; the
    integer LIF emits at most one.

    Example:
        >>> import numpy as np
        >>> from pondlib import nn
        >>> net = nn.Sequential(nn.Linear(4, 2, weight=np.ones((4, 2))), nn.LIF(2, tau_mem=0.02))
        >>> [type(l).__name__ for l in layers_from_graph(net, drop_synapse=True)]
        ['GemmLayer', 'IntLIFLayer']
    """
    from pondlib.graph.base import GraphModuleBase
    from pondlib.graph.modules import LIFNeurons, LinearWeights
    from pondlib.graph.utils import topological_order

    drop_synapse = check_bool(drop_synapse, "drop_synapse", where="layers_from_graph", error=GraphError)
    g = graph.as_graph() if not isinstance(graph, GraphModuleBase) and hasattr(graph, "as_graph") else graph
    if not isinstance(g, GraphModuleBase):
        raise GraphError(
            "mapper input",
            value=type(graph).__name__,
            limit="float layer descriptions, a graph or a pondlib.nn network",
            fix="pass a list of GemmLayer/Conv2dLayer/ReLU/IntLIFLayer or net.as_graph()",
        )
    out: list = []
    for m in topological_order(g):
        if isinstance(m, LinearWeights):
            out.append(GemmLayer(m.name, m.weights, m.biases))
        elif isinstance(m, LIFNeurons):
            if m.n_synapses != 1:
                raise GraphError(
                    "LIF synapses",
                    value=m.n_synapses,
                    limit=1,
                    where=m.name,
                    fix="the Siracusa integer LIF has one input per neuron",
                )
            if not drop_synapse:
                raise GraphError(
                    "LIF synaptic current",
                    value=f"tau_syn = {m.tau_syn.ravel()[:3]}",
                    limit="a membrane-only LIF",
                    where=m.name,
                    fix="pass drop_synapse=True to feed the input straight into the membrane, "
                    "or describe the layer with IntLIFLayer",
                )
            out.append(IntLIFLayer(m.name, _leak(m), m.threshold, m.bias))
        else:
            raise GraphError(
                "unsupported module",
                value=type(m).__name__,
                limit="LinearWeights or LIFNeurons",
                where=m.name,
                fix="describe the network with GemmLayer/Conv2dLayer/ReLU/IntLIFLayer",
            )
    return out


def _leak(m: Any) -> np.ndarray:
    """``exp(-dt / tau_mem)`` of a graph LIF, after checking dt and tau_mem (finite, > 0); a tau_mem far
    below dt gives 0 (a full decay in one step), never an overflow warning."""
    dt = check_float(m.dt, "dt", lo=0.0, lo_open=True, where=m.name, error=GraphError)
    tau = as_float_array(m.tau_mem, "tau_mem", lo=0.0, where=m.name, error=GraphError)
    if np.any(tau <= 0):
        raise GraphError("tau_mem", value=float(tau.min()), limit="> 0 s", where=m.name, fix="pass positive tau_mem")
    with np.errstate(over="ignore"):
        return np.exp(-dt / tau).reshape(-1)


# ------------------------------------------------------------------------------------------------
# Float reference model
# ------------------------------------------------------------------------------------------------
def _conv_float(x: np.ndarray, layer: Conv2dLayer) -> np.ndarray:
    lead = x.shape[:-1]
    H, W, C = layer.in_shape
    kh, kw, cg, O = layer.weight.shape
    g, p = layer.groups, layer.padding
    xi = x.reshape((-1, H, W, C))
    if p:
        xi = np.pad(xi, ((0, 0), (p, p), (p, p), (0, 0)))
    win = np.lib.stride_tricks.sliding_window_view(xi, (kh, kw), axis=(1, 2))[:, :: layer.stride, :: layer.stride]
    n, ho, wo = win.shape[:3]
    y = np.einsum(
        "nhwgcij,ijcgo->nhwgo", win.reshape(n, ho, wo, g, cg, kh, kw), layer.weight.reshape(kh, kw, cg, g, O // g)
    ).reshape(n, ho, wo, O)
    if layer.bias is not None:
        y = y + layer.bias
    return y.reshape(lead + (ho * wo * O,))


def float_forward(layers: Sequence, x: Any) -> tuple[list[np.ndarray], dict[str, float]]:
    """The float model: per-layer outputs for x (B, T, N) (or (B, N) -> T = 1), and per LIF layer the
    largest ``|v|`` reached before reset (for the state scale).

    Raises:
        GraphError: ``layers`` that are not float layer descriptions whose sizes chain from ``x``.
        QuantizationError: ``x`` that is not finite real (B, N) / (B, T, N) numbers, or a layer whose
            output overflows float64 (huge weights or inputs; the message names the layer).
    """
    layers = _float_layers(layers, "float_forward")
    h = as_float_array(x, "x", where="float_forward", error=QuantizationError, ndim=(2, 3))
    _chain(layers, h.shape[-1], "float_forward")
    if h.ndim == 2:
        h = h[:, None, :]
    outs, vmax = [], {}
    for layer in layers:
        with np.errstate(over="ignore", invalid="ignore"):
            h, peak = _float_layer(layer, h)
        if not np.all(np.isfinite(h)) or not np.isfinite(peak):
            raise QuantizationError(
                "layer output",
                value="overflow to inf/NaN in float64",
                limit="finite outputs",
                where=f"float_forward, {layer.name}",
                fix="scale the weights, biases or inputs down",
            )
        if isinstance(layer, IntLIFLayer):
            vmax[layer.name] = peak
        outs.append(h)
    return outs, vmax


def _float_layers(layers: Any, where: str) -> list:
    """``layers`` as a list of float layer descriptions (GraphError naming the first other entry)."""
    if isinstance(layers, (str, bytes)) or not isinstance(layers, (list, tuple)):
        raise GraphError(
            "layers",
            value=f"a {type(layers).__name__}",
            limit="a list of float layer descriptions",
            where=where,
            fix="pass [GemmLayer(...), ReLU(...), ...] or a graph",
        )
    for i, layer in enumerate(layers):
        if not isinstance(layer, (GemmLayer, Conv2dLayer, ReLU, IntLIFLayer)):
            raise GraphError(
                f"layers[{i}]",
                value=f"a {type(layer).__name__}",
                limit="GemmLayer, Conv2dLayer, ReLU or IntLIFLayer",
                where=where,
                fix="describe the layer with a supported type",
            )
    return list(layers)


def _chain(layers: list, n: int, where: str) -> None:
    """Each layer's input size equals the previous output size (GraphError naming both)."""
    for layer in layers:
        if isinstance(layer, ReLU):
            continue
        if layer.n_in != n:
            raise GraphError(
                "layer sizes",
                value=f"{layer.n_in} inputs after {n} outputs",
                limit=f"{n} inputs",
                where=f"{where}, {layer.name}",
                fix="make consecutive layer sizes agree",
            )
        n = layer.n_out


def _float_layer(layer: Any, h: np.ndarray) -> tuple[np.ndarray, float]:
    """One float layer on (B, T, N) input; the LIF's largest ``|v|`` before reset (0 for other layers)."""
    peak = 0.0
    if isinstance(layer, GemmLayer):
        h = h @ layer.weight + (layer.bias if layer.bias is not None else 0.0)
    elif isinstance(layer, Conv2dLayer):
        h = _conv_float(h, layer)
    elif isinstance(layer, ReLU):
        h = np.maximum(h, 0.0)
    elif isinstance(layer, IntLIFLayer):
        v = np.zeros(h.shape[:1] + (layer.n,))
        z_all = np.zeros_like(h)
        peak = 0.0
        for t in range(h.shape[1]):
            v = layer.alpha * v + layer.gain * h[:, t] + layer.bias
            peak = max(peak, float(np.max(np.abs(v))) if v.size else 0.0)
            z = (v >= layer.threshold) if layer.compare == ">=" else (v > layer.threshold)
            v = np.where(z, v - layer.threshold, v) if layer.reset == "subtract" else np.where(z, 0.0, v)
            z_all[:, t] = z
        h = z_all
    return h, peak
