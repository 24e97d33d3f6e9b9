r"""The DNN path (OctopuScheduler style): float MLP -> int8 power-of-two layers split over worker PEs.

Input: an :class:`MLP`, a tuple of :class:`DenseLayer` (``y = x W + b``, then ReLU when ``relu``),
built from arrays, from a graph of :class:`~pondlib.graph.LinearWeights` (:meth:`MLP.from_graph`) or
trained here with :func:`train_mlp` (numpy, Adam, softmax cross-entropy).

Quantization (:func:`dnn_mapper`, INT8 with power-of-two scales). With calibration inputs ``X``:

.. math::

    f_x = \lfloor \log_2 (127 / \max|X|) \rfloor, \quad x_q = \mathrm{sat}_8(\mathrm{round}(x\,2^{f_x})) \\
    f_w = \lfloor \log_2 (127 / \max|W|) \rfloor, \quad W_q = \mathrm{round}(W\,2^{f_w}) \\
    f_y = \min(\lfloor \log_2 (127 / \max|Y|) \rfloor,\ f_x + f_w), \quad
    \mathrm{shift} = f_x + f_w - f_y \ge 0 \\
    b_q = \mathrm{round}(b\,2^{f_x + f_w}) + 2^{\mathrm{shift} - 1}

``Y`` is the float layer output on the calibration set; ``f_y`` becomes the next layer's ``f_x``.
The hardware requantizes with an arithmetic right shift (floor); the ``2^(shift-1)`` folded into the
bias turns that floor into round-half-up (``round_shift=False`` keeps the plain floor). ``round`` is
half to even. The value of an int8 ``q`` at fraction ``f`` is ``q 2^-f``.

Accumulator check: for output ``n`` with inputs bounded by ``x_max`` (``max|x_q|`` of the first layer's
quantized range, 127 after a layer), the value range is bounded by

.. math::

    |acc_n| \le x_{max} \textstyle\sum_k |W_{q,kn}| + |b_{q,n}| < 2^{acc\_bits - 1}

which is what is checked (the worst case ``K \cdot 128 \cdot \max|W_q|`` of a 784-input layer exceeds
24 bits although real sums never do; both are reported). A layer failing it is a violation unless
``overflow="wrap"`` is asked (then the simulator wraps like the register).

Lowering fuses Linear+ReLU: a ReLU is the ``relu`` flag of the Linear before it (:meth:`MLP.from_ops`
folds a chain of Linear and ``"relu"`` operations so), and :func:`dnn_mapper` emits exactly one MLA
layer per Linear, the flag carried to :class:`DNNLayerConfig` and into the DRAM image
(:meth:`DNNConfig.to_dram_image`, flag bit 0 of the layer block).

Splitting: layer ``K -> N`` is cut into column tiles, one per worker PE, each holding its weights
``K c`` B, bias ``4 c`` B, input ``K`` B and output ``c`` B within ``limits.dnn_worker_bytes``:
``c_max = floor((budget - K) / (K + 5))``, ``workers = ceil(N / c_max)``, columns spread evenly.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> mlp = MLP.from_arrays([rng.normal(size=(784, 512)) * 0.05, rng.normal(size=(512, 256)) * 0.05,
    ...                        rng.normal(size=(256, 16)) * 0.05])
    >>> cfg = dnn_mapper(mlp, calibration=rng.random((32, 784)))
    >>> [(l.name, l.weights.shape, l.workers, l.relu) for l in cfg.layers]
    [('fc1', (784, 512), 5, True), ('fc2', (512, 256), 2, True), ('fc3', (256, 16), 1, False)]
    >>> cfg.layers[0].acc_worst > 2 ** 23 > cfg.layers[0].acc_bound
    True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.devices.core.intmath import int_range, sat
from pondlib.devices.core.lookup import as_graph
from pondlib.devices.core.numerics import relative_error
from pondlib.devices.core.rules import check_rules, raise_violations
from pondlib.devices.spinnaker2.dnn_rules import DNN_RULE_FUNCTIONS, DNN_RULES, SHIFT_MAX, DNNPlan, LayerPlan
from pondlib.devices.spinnaker2.image import build_image, layer_bias, layer_weights, parse_image
from pondlib.devices.spinnaker2.limits import SpiNNaker2Limits, get_limits
from pondlib.errors import ConfigError, GraphError, PondError, QuantizationError
from pondlib.validate import (
    as_float_array,
    as_int_array,
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_type,
)

__all__ = [
    "DenseLayer",
    "MLP",
    "train_mlp",
    "DNNLayerConfig",
    "DNNConfig",
    "dnn_mapper",
    "DNN_RULES",
    "max_tile_columns",
    "default_workers",
]


@dataclass(frozen=True, eq=False)
class DenseLayer:
    """``y = x @ weight + bias`` (weight (K, N), bias (N,)), then ``max(y, 0)`` when ``relu``."""

    weight: np.ndarray
    bias: np.ndarray | None = None
    relu: bool = True
    name: str = ""

    def __post_init__(self) -> None:
        check_type(self.name, "name", str, where="DenseLayer", error=GraphError)
        where = self.name or "DenseLayer"
        w = as_float_array(self.weight, "weight", where=where, error=GraphError, ndim=2, float32=False).copy()
        if self.bias is None:
            b = np.zeros(w.shape[1])
        else:
            b = as_float_array(self.bias, "bias", where=where, error=GraphError, ndim=1, allow_empty=True).copy()
        if b.shape != (w.shape[1],):
            raise GraphError(
                "dense bias shape",
                value=f"bias {b.shape} for weight {w.shape}",
                limit=(w.shape[1],),
                where=where,
                fix="pass one bias per output",
            )
        object.__setattr__(self, "weight", w)
        object.__setattr__(self, "bias", b)
        object.__setattr__(self, "relu", check_bool(self.relu, "relu", where=where, error=GraphError))


@dataclass(frozen=True, eq=False)
class MLP:
    """A stack of :class:`DenseLayer` (sizes must chain); unnamed layers become ``fc1``, ``fc2``, ..."""

    layers: tuple[DenseLayer, ...]

    def __post_init__(self) -> None:
        check_type(self.layers, "layers", (tuple, list), where="MLP", error=GraphError)
        layers = tuple(self.layers)
        for i, layer in enumerate(layers):
            check_type(layer, f"layers[{i}]", DenseLayer, where="MLP", error=GraphError)
        if not layers:
            raise GraphError("MLP layers", value=0, limit=">= 1 layer", where="MLP", fix="pass layers")
        named = []
        for i, layer in enumerate(layers):
            if i and layer.weight.shape[0] != layers[i - 1].weight.shape[1]:
                raise GraphError(
                    "layer sizes",
                    value=f"weight {layer.weight.shape} after weight {layers[i - 1].weight.shape}",
                    limit=f"{layers[i - 1].weight.shape[1]} inputs",
                    where=layer.name or f"fc{i + 1}",
                    fix="chain the layer sizes",
                )
            named.append(layer if layer.name else DenseLayer(layer.weight, layer.bias, layer.relu, f"fc{i + 1}"))
        object.__setattr__(self, "layers", tuple(named))

    @classmethod
    def from_arrays(
        cls, weights: Sequence[Any], biases: Sequence[Any] | None = None, relu: Sequence[bool] | None = None
    ) -> MLP:
        """Layers from weight (and bias) arrays; ReLU after every layer but the last by default."""
        weights = _as_list(weights, "weights", "MLP.from_arrays")
        n = len(weights)
        biases = [None] * n if biases is None else _as_list(biases, "biases", "MLP.from_arrays", n)
        relu = [i < n - 1 for i in range(n)] if relu is None else _as_list(relu, "relu", "MLP.from_arrays", n)
        return cls(tuple(DenseLayer(w, b, r) for w, b, r in zip(weights, biases, relu)))

    @classmethod
    def from_ops(cls, ops: Sequence[Any]) -> MLP:
        """Lower a chain of operations with Linear+ReLU fusion: ``ops`` holds :class:`DenseLayer` (a
        Linear; its own ``relu`` flag is kept) and the string ``"relu"``. A ``"relu"`` after a Linear
        becomes that layer's ``relu`` flag (the MLA applies it when it writes the output), never a layer of
        its own; repeated ReLUs fold into one (``max(max(y, 0), 0) = max(y, 0)``).

        Raises:
            GraphError: an empty chain, a ``"relu"`` with no Linear before it, or another operation.

        Example:
            >>> lin = lambda k, n: DenseLayer(np.ones((k, n)), relu=False)
            >>> mlp = MLP.from_ops([lin(4, 3), "relu", lin(3, 2), "relu", "relu", lin(2, 1)])
            >>> [(layer.name, layer.weight.shape, layer.relu) for layer in mlp.layers]
            [('fc1', (4, 3), True), ('fc2', (3, 2), True), ('fc3', (2, 1), False)]
        """
        where = "MLP.from_ops"
        if isinstance(ops, (str, bytes)) or not isinstance(ops, Sequence):
            raise GraphError(
                "ops", value=type(ops).__name__, limit="a sequence", where=where, fix="pass [DenseLayer, 'relu', ...]"
            )
        layers: list[DenseLayer] = []
        for i, op in enumerate(ops):
            if isinstance(op, DenseLayer):
                layers.append(op)
            elif isinstance(op, str) and op.lower() == "relu":
                if not layers:
                    raise GraphError(
                        f"ops[{i}]",
                        value="'relu' with no Linear before it",
                        limit="a ReLU fused onto the preceding Linear",
                        where=where,
                        fix="start the chain with a DenseLayer (the MLA has no stand-alone ReLU)",
                    )
                last = layers[-1]
                layers[-1] = DenseLayer(last.weight, last.bias, True, last.name)
            else:
                raise GraphError(
                    f"ops[{i}]",
                    value=repr(op)[:80],
                    limit="a DenseLayer or 'relu'",
                    where=where,
                    fix="lower other operations before mapping",
                )
        return cls(tuple(layers))

    @classmethod
    def from_graph(cls, graph: Any, relu: Sequence[bool] | None = None) -> MLP:
        """An MLP from a chain of :class:`~pondlib.graph.LinearWeights` (topological order); ``relu``
        flags per layer (default: all but the last)."""
        from pondlib.graph.modules import LinearWeights
        from pondlib.graph.utils import topological_order

        g = as_graph(graph)
        mods = topological_order(g)
        bad = [m.name for m in mods if not isinstance(m, LinearWeights)]
        if bad:
            raise GraphError(
                "DNN graph module",
                value=bad,
                limit="LinearWeights only",
                where="MLP.from_graph",
                fix="describe activations with relu=[...]; no neuron modules in a DNN",
            )
        n = len(mods)
        relu = [i < n - 1 for i in range(n)] if relu is None else _as_list(relu, "relu", "MLP.from_graph", n)
        return cls(tuple(DenseLayer(m.weights, m.biases, r, m.name) for m, r in zip(mods, relu)))

    @property
    def sizes(self) -> tuple[int, ...]:
        """``(K_1, N_1, N_2, ...)``: input size then every layer's output size."""
        return (self.layers[0].weight.shape[0], *[layer.weight.shape[1] for layer in self.layers])

    def forward(self, x: Any, upto: int | None = None) -> np.ndarray:
        """Float outputs (B, N) (or (N,) for input (K,)) of layer ``upto`` (default: the last) for input
        (B, K).

        Raises:
            QuantizationError: input that is not finite real (B, K) / (K,) numbers, ``upto`` not a layer
                index, or outputs that overflow float64 (huge weights or inputs).
        """
        k = self.sizes[0]
        h = as_float_array(x, "x", where="MLP.forward", error=QuantizationError, ndim=(1, 2))
        if h.shape[-1] != k:
            raise QuantizationError(
                "x shape",
                value=h.shape,
                limit=f"({k},) or (B, {k})",
                where="MLP.forward",
                fix="pass one column per input",
            )
        last = len(self.layers) - 1
        upto = (
            last
            if upto is None
            else check_int(upto, "upto", lo=0, hi=last, where="MLP.forward", error=QuantizationError)
        )
        with np.errstate(over="ignore", invalid="ignore"):
            for layer in self.layers[: upto + 1]:
                h = h @ layer.weight + layer.bias
                if layer.relu:
                    h = np.maximum(h, 0.0)
        if not np.all(np.isfinite(h)):
            raise QuantizationError(
                "layer output",
                value="overflow to inf/NaN in float64",
                limit="finite outputs",
                where=f"MLP.forward, {self.layers[upto].name}",
                fix="scale the weights or the inputs down",
            )
        return h

    def predict(self, x: Any) -> np.ndarray:
        """Class predictions ``argmax`` of the last layer."""
        return np.argmax(self.forward(x), axis=-1)


def _as_list(value: Any, name: str, where: str, n: int | None = None) -> list:
    """``value`` as a list (a sequence, never a string or an array of scalars), of length ``n`` if given."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise GraphError(
            name,
            value=f"a {type(value).__name__}",
            limit="a sequence (one entry per layer)",
            where=where,
            fix=f"pass a list of {name}",
        )
    out = list(value)
    if n is not None and len(out) != n:
        raise GraphError(
            f"{name} length",
            value=len(out),
            limit=f"{n} (one per layer)",
            where=where,
            fix=f"pass one {name} entry per layer",
        )
    return out


def train_mlp(
    x: np.ndarray,
    y: np.ndarray,
    hidden: Sequence[int] = (128,),
    *,
    epochs: int = 30,
    batch_size: int = 64,
    lr: float = 1e-3,
    weight_decay: float = 1e-4,
    seed: int = 0,
) -> MLP:
    """Train a float ReLU MLP with softmax cross-entropy and Adam (numpy; seeded, deterministic).

    Args:
        x: (N, K) finite features. y: (N,) integer labels in 0..65535. hidden: hidden layer sizes (1..65536).
        epochs: 0..10^6. batch_size: 1..N. lr: > 0. weight_decay: >= 0. seed: an integer >= 0.

    Raises:
        PondError: any argument outside the above, or a run whose parameters become non-finite (the
            message names the epoch; lower ``lr``).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> x = rng.normal(size=(200, 4)); y = (x[:, 0] > 0).astype(int)
        >>> mlp = train_mlp(x, y, (8,), epochs=20, batch_size=20, lr=1e-2)
        >>> float(np.mean(mlp.predict(x) == y)) > 0.9
        True
    """
    where = "train_mlp"
    x = as_float_array(x, "x", where=where, ndim=2)
    y = as_int_array(y, "y", lo=0, hi=2**16 - 1, where=where, ndim=1)  # at most 65536 classes
    if y.shape[0] != x.shape[0]:
        raise PondError(
            "y length",
            value=f"{y.shape[0]} labels for {x.shape[0]} samples",
            limit=x.shape[0],
            where=where,
            fix="pass one label per sample",
        )
    hidden = [check_int(h, "hidden size", lo=1, hi=2**16, where=where) for h in _as_list(hidden, "hidden", where)]
    epochs = check_int(epochs, "epochs", lo=0, hi=10**6, where=where)
    batch_size = check_int(
        batch_size,
        "batch_size",
        lo=1,
        hi=x.shape[0],
        where=where,
        fix=f"use a batch size of at most the {x.shape[0]} samples",
    )
    lr = check_float(lr, "lr", lo=0.0, lo_open=True, where=where)
    weight_decay = check_float(weight_decay, "weight_decay", lo=0.0, where=where)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise PondError(
            "seed",
            value=f"a {type(seed).__name__} ({seed!r})",
            limit="an integer >= 0",
            where=where,
            fix="pass an integer seed",
        )
    rng = np.random.default_rng(check_int(seed, "seed", lo=0, where=where))
    with np.errstate(all="ignore"):  # a diverging run is detected below (non-finite parameters), not warned
        W, B = _adam(x, y, hidden, epochs, batch_size, lr, weight_decay, rng)
    return MLP.from_arrays(W, B)


def _adam(
    x: np.ndarray,
    y: np.ndarray,
    hidden: list[int],
    epochs: int,
    batch_size: int,
    lr: float,
    weight_decay: float,
    rng: np.random.Generator,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The training loop of :func:`train_mlp` on checked data; raises when the parameters diverge."""
    sizes = [x.shape[1], *hidden, int(y.max()) + 1]
    W = [rng.normal(0, math.sqrt(2.0 / a), size=(a, b)) for a, b in zip(sizes[:-1], sizes[1:])]
    B = [np.zeros(b) for b in sizes[1:]]
    params = W + B
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    step = 0
    L = len(W)
    for epoch in range(epochs):
        perm = rng.permutation(len(x))
        for a in range(0, len(x) - batch_size + 1, batch_size):
            idx = perm[a : a + batch_size]
            hs = [x[idx]]
            for i in range(L):
                z = hs[-1] @ W[i] + B[i]
                hs.append(np.maximum(z, 0) if i < L - 1 else z)
            z = hs[-1] - hs[-1].max(axis=1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=1, keepdims=True)
            p[np.arange(len(idx)), y[idx]] -= 1
            g = p / len(idx)
            gW, gB = [None] * L, [None] * L
            for i in reversed(range(L)):
                gW[i] = hs[i].T @ g + weight_decay * W[i]
                gB[i] = g.sum(axis=0)
                if i:
                    g = (g @ W[i].T) * (hs[i] > 0)
            step += 1
            for j, (p_, g_) in enumerate(zip(params, gW + gB)):
                m[j] = 0.9 * m[j] + 0.1 * g_
                v[j] = 0.999 * v[j] + 0.001 * g_ * g_
                p_ -= lr * (m[j] / (1 - 0.9**step)) / (np.sqrt(v[j] / (1 - 0.999**step)) + 1e-8)
        if not all(np.all(np.isfinite(p_)) for p_ in params):
            raise PondError(
                "training diverged",
                value=f"non-finite weights after epoch {epoch + 1}",
                limit="finite weights",
                where="train_mlp",
                fix="lower lr, or scale the features (x) to a moderate range",
            )
    return W, B


@dataclass(frozen=True, eq=False)
class DNNLayerConfig:
    """One MLA layer: int8 weights (K, N) and int32 bias (N,) (stored int64), the requantization shift,
    fused ReLU, and the column tiles ``[(start, stop), ...]`` one per worker PE.

    ``in_frac``, ``w_frac``, ``out_frac``: power-of-two exponents (value = q 2^-frac). ``acc_bound``:
    the value-range bound of ``|acc|``; ``acc_worst``: ``K * 128 * max|W_q| + max|b_q|``."""

    name: str
    weights: np.ndarray
    bias: np.ndarray
    shift: int
    relu: bool
    tiles: tuple[tuple[int, int], ...]
    in_frac: int
    w_frac: int
    out_frac: int
    acc_bound: int
    acc_worst: int

    @property
    def workers(self) -> int:
        """Worker PEs of the layer (one per tile)."""
        return len(self.tiles)

    @property
    def weight_bytes(self) -> int:
        """Bytes of int8 weights fetched from DRAM."""
        return int(self.weights.size)

    @property
    def macs(self) -> int:
        """Multiply-accumulates of one inference."""
        return int(self.weights.size)


@dataclass(frozen=True, eq=False)
class DNNConfig:
    """An int8 MLA program: layers in order, the input exponent, accumulator width and overflow mode.

    ``report`` holds the float-vs-quantized relative weight errors per layer and the notes."""

    layers: tuple[DNNLayerConfig, ...]
    input_frac: int
    acc_bits: int
    overflow: str = "error"
    limits_name: str = "SpiNNaker2 chip"
    report: dict[str, Any] = field(default_factory=dict)

    def quantize_input(self, x: Any) -> np.ndarray:
        """``sat8(round(x 2^input_frac))`` (round half to even; finite values beyond int8 saturate).

        Raises:
            QuantizationError: input that is not finite real numbers of shape (K,) or (B, K).
        """
        k = self.layers[0].weights.shape[0]
        arr = as_float_array(x, "x", where="DNNConfig.quantize_input", error=QuantizationError, ndim=(1, 2))
        if arr.shape[-1] != k:
            raise QuantizationError(
                "x shape",
                value=arr.shape,
                limit=f"({k},) or (B, {k})",
                where="DNNConfig.quantize_input",
                fix="pass one column per input",
            )
        with np.errstate(over="ignore"):  # beyond float64: inf, which saturates like any large value
            return sat(np.rint(np.ldexp(arr, self.input_frac)), 8)

    def dequantize_output(self, y: Any) -> np.ndarray:
        """Float values ``y 2^-out_frac`` of the last layer's int8 output (integers in -128..127)."""
        arr = as_int_array(
            y, "y", lo=-128, hi=127, where="DNNConfig.dequantize_output", error=QuantizationError, allow_empty=True
        )
        return np.ldexp(arr.astype(np.float64), -self.layers[-1].out_frac)

    def to_dram_image(self) -> bytes:
        """The DRAM configuration image the scheduler PE walks (layout: :mod:`~pondlib.devices.spinnaker2.image`).

        Deterministic: equal configurations give equal bytes. ``from_dram_image`` restores every field
        (weights and biases as int64 arrays, as :func:`dnn_mapper` makes them).

        Raises:
            ConfigError: an invalid configuration (:meth:`problems`), or a value the image cannot hold
                (a fraction beyond int32, a bound beyond int64, a report JSON cannot carry unchanged).

        Example:
            >>> mlp = MLP((DenseLayer(np.array([[1.0, -1.0], [0.5, 0.5]]), np.zeros(2), relu=True),))
            >>> cfg = dnn_mapper(mlp, calibration=np.array([[1.0, 1.0]]))
            >>> data = cfg.to_dram_image()
            >>> data[:8], len(data)
            (b'S2DNNIMG', 416)
            >>> back = DNNConfig.from_dram_image(data)
            >>> back.layers[0].relu, back.layers[0].weights.tolist() == cfg.layers[0].weights.tolist()
            (True, True)
        """
        problems = self.problems()
        for key in ("limits_name",):
            if not isinstance(getattr(self, key), str):
                problems.append(f"{key}: got {getattr(self, key)!r}, expected a str")
        if not isinstance(self.report, dict):
            problems.append(f"report: got a {type(self.report).__name__}, expected a dict")
        for i, layer in enumerate(self.layers):
            if not isinstance(layer.name, str):
                problems.append(f"layers[{i}].name: got {layer.name!r}, expected a str")
            for key in ("in_frac", "w_frac", "out_frac", "acc_bound", "acc_worst"):
                if not _is_int(getattr(layer, key)):
                    problems.append(f"{layer.name}.{key}: got {getattr(layer, key)!r}, expected an integer")
        if problems:
            raise ConfigError(problems=problems, where="DNNConfig.to_dram_image")
        return build_image(
            self.layers,
            input_frac=int(self.input_frac),
            acc_bits=int(self.acc_bits),
            overflow=self.overflow,
            limits_name=self.limits_name,
            report=self.report,
        )

    @classmethod
    def from_dram_image(cls, data: Any) -> DNNConfig:
        """The configuration stored in a DRAM image (inverse of :meth:`to_dram_image`).

        Raises:
            ConfigError: data that is not a valid image (truncated, wrong magic or version, CRC mismatch,
                pointers out of range, a cycle in the layer list, ...): names the field and its offset.
        """
        img = parse_image(data)
        raw = bytes(data)
        layers = tuple(
            DNNLayerConfig(
                b.name,
                layer_weights(raw, b),
                layer_bias(raw, b),
                b.shift,
                b.relu,
                tuple((w.start, w.stop) for w in b.workers),
                b.in_frac,
                b.w_frac,
                b.out_frac,
                b.acc_bound,
                b.acc_worst,
            )
            for b in img.layers
        )
        cfg = cls(layers, img.input_frac, img.acc_bits, img.overflow, img.limits_name, img.report)
        problems = cfg.problems()
        if problems:  # the parser checks every field; kept as a guard for the simulator's assumptions
            raise ConfigError(problems=problems, where="DNNConfig.from_dram_image")
        return cfg

    @property
    def n_workers(self) -> int:
        """Largest number of workers any layer uses."""
        return max(layer.workers for layer in self.layers)

    def problems(self) -> list[str]:
        """Every out-of-range or malformed field, as messages (empty when valid): what the simulator
        relies on (types, int8 weights (K, N) chaining from layer to layer, int32 biases (N,), shifts
        0..62, tiles covering the columns in order, a known overflow mode, acc_bits 8..62)."""
        out = []
        if not isinstance(self.overflow, str) or self.overflow not in ("error", "wrap"):
            out.append(f"overflow: got {self.overflow!r}, expected 'error' or 'wrap'")
        if not _is_int(self.acc_bits) or not 8 <= int(self.acc_bits) <= 62:
            out.append(f"acc_bits: got {self.acc_bits!r}, expected 8..62")
        for key in ("input_frac",):
            if not _is_int(getattr(self, key)):
                out.append(f"{key}: got {getattr(self, key)!r}, expected an integer")
        if not isinstance(self.layers, (tuple, list)) or not self.layers:
            return out + [f"layers: got {self.layers!r}, expected a non-empty tuple of DNNLayerConfig"]
        lo, hi = int_range(32)
        k_prev = None
        for i, layer in enumerate(self.layers):
            if not isinstance(layer, DNNLayerConfig):
                out.append(f"layers[{i}]: got a {type(layer).__name__}, expected a DNNLayerConfig")
                k_prev = None
                continue
            out += _layer_problems(layer, lo, hi, k_prev)
            w = layer.weights
            k_prev = w.shape[1] if isinstance(w, np.ndarray) and w.ndim == 2 else None
        return out


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _layer_problems(layer: DNNLayerConfig, lo: int, hi: int, k_prev: int | None) -> list[str]:
    name = layer.name
    out = []
    w, b = layer.weights, layer.bias
    if not isinstance(w, np.ndarray) or w.ndim != 2 or w.dtype.kind not in "iu" or 0 in w.shape:
        return [
            f"{name}.weights: got {type(w).__name__} {getattr(w, 'dtype', '')} {np.shape(w)}, "
            "expected a non-empty 2-D integer array"
        ]
    if k_prev is not None and w.shape[0] != k_prev:
        out.append(f"{name}.weights: {w.shape[0]} inputs, expected {k_prev} (the previous layer's outputs)")
    if w.min() < -128 or w.max() > 127:
        out.append(f"{name}.weights: got {int(w.min())}..{int(w.max())}, expected -128..127")
    if not isinstance(b, np.ndarray) or b.shape != (w.shape[1],) or b.dtype.kind not in "iu":
        out.append(f"{name}.bias: got {type(b).__name__} {np.shape(b)}, expected integers ({w.shape[1]},)")
    elif b.size and (b.min() < lo or b.max() > hi):
        out.append(f"{name}.bias: outside the int32 range")
    if not _is_int(layer.shift) or not 0 <= layer.shift <= 62:
        out.append(f"{name}.shift: got {layer.shift!r}, expected 0..62 (an arithmetic right shift)")
    if not isinstance(layer.relu, (bool, np.bool_)):
        out.append(f"{name}.relu: got {layer.relu!r}, expected True or False")
    try:
        cover = [c for a, e in layer.tiles for c in range(a, e)]
    except (TypeError, ValueError):
        cover = None
    if cover != list(range(w.shape[1])):
        out.append(f"{name}.tiles: do not cover the {w.shape[1]} columns in order")
    return out


def max_tile_columns(k: int, limits: SpiNNaker2Limits) -> int:
    """Most output columns one worker can hold for a ``k``-input layer: ``(budget - k) // (k + 5)``
    (weights ``k`` B + bias 4 B + output 1 B per column, plus the ``k``-byte input); < 1 when not even
    one column fits."""
    k = check_int(k, "k", lo=1, where="max_tile_columns", error=ConfigError)
    check_type(limits, "limits", SpiNNaker2Limits, where="max_tile_columns", error=ConfigError)
    return (limits.dnn_worker_bytes - k) // (k + 5)


def default_workers(k: int, n: int, limits: SpiNNaker2Limits) -> int:
    """The fewest workers whose tiles fit in SRAM: ``ceil(n / max_tile_columns(k))`` (>= 1).

    Example:
        >>> from pondlib.devices.spinnaker2.limits import SPINNAKER2_CHIP
        >>> default_workers(784, 512, SPINNAKER2_CHIP), default_workers(256, 16, SPINNAKER2_CHIP)
        (5, 1)
    """
    n = check_int(n, "n", lo=1, where="default_workers", error=ConfigError)
    c = max_tile_columns(k, limits)
    return max(1, -(-n // c)) if c >= 1 else 1


def _frac(maxabs: float) -> int:
    """Largest ``f`` with ``maxabs 2^f <= 127`` (0 for an all-zero tensor); exact for subnormal and huge
    ``maxabs`` (``log2`` of each operand, never of an overflowing quotient)."""
    if not maxabs > 0:
        return 0
    f = int(math.floor(math.log2(127.0) - math.log2(maxabs)))
    while math.ldexp(maxabs, f) > 127.0:  # guard the floating-point log against an off-by-one
        f -= 1
    while math.ldexp(maxabs, f + 1) <= 127.0:
        f += 1
    return f


def _calibration(calibration: Any, mlp: MLP, where: str) -> np.ndarray:
    """Calibration inputs as float64 (B, K).

    Raises:
        QuantizationError: not finite real numbers, or not one column per network input.
    """
    cal = np.atleast_2d(
        as_float_array(
            calibration,
            "calibration",
            where=where,
            error=QuantizationError,
            ndim=(1, 2),
            fix="pass representative finite float inputs (B, K)",
        )
    )
    if cal.shape[1] != mlp.sizes[0]:
        raise QuantizationError(
            "calibration data",
            value=f"shape {cal.shape}",
            limit=f"finite (B, {mlp.sizes[0]})",
            where=where,
            fix="pass representative float inputs, one column per network input",
        )
    return cal


def _tiles(n: int, c_max: int, asked: int | None) -> tuple[tuple[int, int], ...]:
    """Columns ``0..n`` spread evenly over the workers: as asked, else the fewest that fit (1 when not
    even one column fits), at most one per column."""
    if c_max < 1:
        n_w = asked or 1
    elif asked is None:
        n_w = math.ceil(n / c_max)
    else:
        n_w = asked
    n_w = max(1, min(int(n_w), n))
    edges = [round(j * n / n_w) for j in range(n_w + 1)]
    return tuple((edges[j], edges[j + 1]) for j in range(n_w))


@dataclass(frozen=True)
class _Quantization:
    """What :func:`_plan_layer` needs besides the layer: the chip, the accumulator and the options."""

    limits: SpiNNaker2Limits
    acc_bits: int
    overflow: str
    round_shift: bool


def _plan_layer(
    mlp: MLP, i: int, cal: np.ndarray, f_in: int, x_max: int, q: _Quantization, asked: int | None
) -> LayerPlan:
    """Quantize layer ``i`` (the exponents, shift and rounded bias of the module docstring) for inputs at
    fraction ``f_in`` bounded by ``x_max``, and tile it.

    Raises:
        QuantizationError: the float outputs overflow float64 on the calibration set.
    """
    layer, lim = mlp.layers[i], q.limits
    K, N = layer.weight.shape
    b_lo, b_hi = int_range(lim.bias_bits)
    f_w = _frac(float(np.max(np.abs(layer.weight))))
    wq = np.clip(np.rint(np.ldexp(layer.weight, f_w)), -128, 127).astype(np.int64)
    y = mlp.forward(cal, upto=i)  # QuantizationError when it overflows float64
    f_y = min(_frac(float(np.max(np.abs(y)))), f_in + f_w)
    shift = f_in + f_w - f_y
    rnd = 2.0 ** (shift - 1) if q.round_shift and 0 < shift <= SHIFT_MAX else 0.0
    with np.errstate(over="ignore"):  # beyond float64: inf, reported as a bias_range violation
        bq_f = np.rint(np.ldexp(layer.bias, f_in + f_w)) + rnd  # exact below 2^53 (the int32 word)
    bq = sat(np.clip(bq_f, b_lo - 1, b_hi + 1), 64)  # clipped before the cast: stored only to report
    c_max = max_tile_columns(K, lim)
    return LayerPlan(
        name=layer.name,
        k=K,
        n=N,
        relu=bool(layer.relu),
        in_frac=f_in,
        w_frac=f_w,
        out_frac=f_y,
        shift=shift,
        weights=wq,
        bias_float=bq_f,
        bias_bounds=(b_lo, b_hi),
        bias=bq,
        x_max=x_max,
        acc_bound=int(np.max(x_max * np.abs(wq).sum(axis=0) + np.abs(bq))),
        acc_worst=int(K * 128 * int(np.max(np.abs(wq))) + int(np.max(np.abs(bq)))),
        acc_bits=q.acc_bits,
        overflow=q.overflow,
        worker_bytes=lim.dnn_worker_bytes,
        max_columns=c_max,
        asked_workers=asked,
        tiles=_tiles(N, c_max, asked),
        max_workers=lim.usable_pes - 1,
        weight_error=relative_error(np.ldexp(wq.astype(np.float64), -f_w), layer.weight),
    )


def _plan(mlp: MLP, cal: np.ndarray, q: _Quantization, workers: dict[Any, int]) -> DNNPlan:
    """Every layer planned in order, each layer's output fraction the next one's input fraction; the
    first layer's inputs are bounded by the quantized calibration set, later ones by 127 (int8)."""
    workers = dict(workers)
    f_in = _frac(float(np.max(np.abs(cal))))
    with np.errstate(over="ignore"):
        x_max = int(np.max(np.abs(sat(np.rint(np.ldexp(cal, f_in)), 8))))
    layers = []
    for i, layer in enumerate(mlp.layers):
        plan = _plan_layer(mlp, i, cal, f_in, x_max, q, workers.pop(layer.name, None))
        layers.append(plan)
        f_in = plan.out_frac
        x_max = 127  # int8 activations after requantization (0..127 after ReLU)
    total = sum(p.k * p.n + 4 * p.n + p.k + p.n for p in layers)
    return DNNPlan(tuple(layers), tuple(workers), total, q.limits.dram_bytes)


def dnn_mapper(
    mlp: MLP,
    calibration: Any,
    limits: SpiNNaker2Limits | str | None = None,
    *,
    acc_bits: int | None = None,
    overflow: str = "error",
    workers: Mapping[str, int] | None = None,
    round_shift: bool = True,
) -> DNNConfig:
    """Quantize an :class:`MLP` to int8 power-of-two layers and split them over worker PEs.

    Plans every layer (:class:`~pondlib.devices.spinnaker2.dnn_rules.LayerPlan`), runs every rule of
    :data:`DNN_RULES` on the plan, raises every violation together, then builds the configuration.

    Args:
        mlp: the float network.
        calibration: (B, K) float inputs that set the exponents.
        limits: chip limits (default one chip).
        acc_bits: accumulator width (default ``limits.acc_bits``, 24).
        overflow: ``"error"`` (a layer whose bound exceeds the accumulator is a violation) or ``"wrap"``.
        workers: layer name -> worker count (default: the fewest that fit).
        round_shift: fold ``2^(shift-1)`` into the bias (round-half-up requantization).

    Raises:
        ConstraintError: every violated rule of :data:`DNN_RULES`, together.
        QuantizationError: empty or non-finite calibration data.
    """
    lim = get_limits(limits)
    where = "dnn_mapper"
    check_type(mlp, "mlp", MLP, where=where, error=QuantizationError, fix="build one with MLP.from_arrays")
    acc_bits = lim.acc_bits if acc_bits is None else acc_bits
    acc_bits = check_int(acc_bits, "acc_bits", lo=8, hi=62, where=where, error=QuantizationError)
    cal = _calibration(calibration, mlp, where)
    check_choice(overflow, "overflow", ("error", "wrap"), where=where, error=QuantizationError)
    round_shift = check_bool(round_shift, "round_shift", where=where, error=QuantizationError)
    if workers is not None:
        check_type(workers, "workers", Mapping, where=where, error=QuantizationError)
        workers = {
            k: check_int(v, f"workers[{k!r}]", lo=1, where=where, error=QuantizationError) for k, v in workers.items()
        }
    plan = _plan(mlp, cal, _Quantization(lim, acc_bits, overflow, round_shift), dict(workers or {}))
    raise_violations(check_rules(DNN_RULE_FUNCTIONS, plan), lim.name)
    layers = tuple(
        DNNLayerConfig(
            p.name,
            p.weights,
            p.bias,
            int(p.shift),
            p.relu,
            p.tiles,
            p.in_frac,
            p.w_frac,
            p.out_frac,
            p.acc_bound,
            p.acc_worst,
        )
        for p in plan.layers
    )
    errors = {p.name: p.weight_error for p in plan.layers}
    return DNNConfig(layers, plan.layers[0].in_frac, acc_bits, overflow, lim.name, {"weight_relative_error": errors})
