r"""Training of ``pondlib.nn`` networks: losses, a jitted train step, :func:`fit` and :func:`evaluate`.

Networks are :mod:`equinox` modules, i.e. pytrees whose array leaves are float parameters; training is
plain ``jax.value_and_grad`` + ``jax.jit`` + :mod:`optax` over those leaves. Leaves can be frozen by
field name (``frozen=("tau_mem", "tau_syn")``), which keeps e.g. time constants on the values the chip
can represent.

Shapes: network output ``y`` (B, T, C) (spike counts per step of the C output neurons), labels (B,)
integers in ``0..C-1``. The class read out from an output is the neuron with the most spikes over the
run, :math:`\hat c = \arg\max_c \sum_t y[t, c]` (ties go to the lowest index); :func:`predict`,
:func:`evaluate` and :func:`accuracy` use that readout for float networks and chip outputs alike.

Losses (``B`` samples, softmax cross-entropy :math:`\mathrm{CE}(z, c) = -z_c + \log\sum_k e^{z_k}`):

.. math::

    \mathrm{mse}(p, q) &= \tfrac{1}{|p|}\textstyle\sum (p - q)^2 \\
    \mathrm{cross\_entropy\_sum}(y, c) &= \tfrac1B \textstyle\sum_b \mathrm{CE}(\sum_t y_b[t], c_b) \\
    \mathrm{cross\_entropy\_max}(v, c) &= \tfrac1B \textstyle\sum_b \mathrm{CE}(\max_t v_b[t], c_b) \\
    \mathrm{firing\_rate\_regularizer}(r, \rho) &= w \textstyle\sum_{\ell} \mathrm{mean}_n
        \big(\mathrm{mean}_{b,t}\, s_\ell[b, t, n] - \rho\big)^2

where ``v`` is usually the output membrane potential and :math:`s_\ell` the recorded spikes of layer
:math:`\ell` (rate :math:`\rho` in spikes per step).

:func:`fit` takes a loss as a name (``"cross_entropy_sum"``, ``"cross_entropy_max"``, ``"mse"``) or a
callable ``loss(output, record, labels) -> scalar`` (``record`` is the network's record dict).

Example:
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from pondlib import nn
    >>> k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    >>> net = nn.Sequential(nn.Linear(4, 8, key=k1), nn.LIF(8), nn.Linear(8, 2, key=k2), nn.LIF(2))
    >>> x = np.random.default_rng(0).integers(0, 3, (32, 5, 4)); y = (x[:, :, 0].sum(1) > 5).astype(int)
    >>> trained, history = fit(net, (x, y), "cross_entropy_sum", epochs=3, batch_size=16,
    ...                        key=jax.random.PRNGKey(1), progress=False)
    >>> len(history["loss"]), len(history["accuracy"])
    (3, 3)
    >>> 0.0 <= evaluate(trained, x, y) <= 1.0
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from pondlib.errors import PondError
from pondlib.nn import parallel
from pondlib.validate import as_array, as_int_array, check_bool, check_float, check_int, check_type

__all__ = [
    "mse",
    "cross_entropy_sum",
    "cross_entropy_max",
    "firing_rate_regularizer",
    "output_vmem",
    "get_loss",
    "LOSSES",
    "make_train_step",
    "DEFAULT_OPTIMIZER",
    "fit",
    "predict",
    "evaluate",
    "accuracy",
    "readout_counts",
]

#: A loss for :func:`fit`: ``(output (B, T, C), record dict, labels (B,)) -> scalar``.
LossFn = Callable[[jax.Array, dict, jax.Array], jax.Array]


# -- losses ----------------------------------------------------------------------------------------
def mse(pred: jax.Array, target: jax.Array) -> jax.Array:
    """Mean squared error over every element.

    Example:
        >>> float(mse(jnp.array([1.0, 2.0]), jnp.array([1.0, 4.0])))
        2.0
    """
    return jnp.mean((jnp.asarray(pred) - jnp.asarray(target)) ** 2)


def _ce(logits: jax.Array, labels: jax.Array) -> jax.Array:
    return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, jnp.asarray(labels)))


def cross_entropy_sum(spikes: jax.Array, labels: jax.Array) -> jax.Array:
    """Cross-entropy of the spike counts summed over time, used as logits.

    Args:
        spikes: (B, T, C) output spikes.
        labels: (B,) integer classes.

    Example:
        >>> s = jnp.zeros((1, 3, 2)).at[0, :, 1].set(1.0)   # class 1 spikes 3 times
        >>> round(float(cross_entropy_sum(s, jnp.array([1]))), 4)   # log(1 + e^-3)
        0.0486
    """
    return _ce(jnp.sum(spikes, axis=1), labels)


def cross_entropy_max(values: jax.Array, labels: jax.Array) -> jax.Array:
    """Cross-entropy of the maximum over time (of output membrane potentials or spikes).

    Args:
        values: (B, T, C), e.g. ``output_vmem(record)``.
        labels: (B,) integer classes.

    Example:
        >>> v = jnp.array([[[0.0, 1.0], [2.0, 0.5]]])       # max over time: [2.0, 1.0]
        >>> round(float(cross_entropy_max(v, jnp.array([0]))), 4)   # log(1 + e^-1)
        0.3133
    """
    return _ce(jnp.max(values, axis=1), labels)


def firing_rate_regularizer(
    record: dict, target: float, *, weight: float = 1.0, keys: Sequence[str] | None = None, upper_only: bool = False
) -> jax.Array:
    """Squared deviation of each neuron's mean firing rate (spikes per step) from ``target``.

    Args:
        record: a network record dict (keys like ``"1_LIF/spikes"``, arrays (B, T, N)).
        target: target rate in spikes per step.
        weight: factor of the penalty.
        keys: the record keys to regularise (default: every key ending in ``spikes``).
        upper_only: penalise only rates above ``target``.

    ``target`` and ``weight`` (when not traced) must be finite numbers >= 0, else a PondError names them.

    Returns:
        ``weight * sum over keys of mean over neurons of (rate - target)^2`` (a scalar).

    Example:
        >>> rec = {"1_LIF/spikes": jnp.ones((2, 4, 3)), "1_LIF/vmem": jnp.zeros((2, 4, 3))}
        >>> float(firing_rate_regularizer(rec, 0.5, weight=2.0))    # 2 * (1 - 0.5)^2
        0.5
    """
    where = "firing_rate_regularizer"
    if not isinstance(target, jax.core.Tracer):
        target = check_float(target, "target", lo=0.0, where=where, fix="pass a rate in spikes per step >= 0")
    if not isinstance(weight, jax.core.Tracer):
        weight = check_float(weight, "weight", lo=0.0, where=where, fix="pass a finite weight >= 0")
    check_type(record, "record", dict, where=where, fix="pass the record dict of a run with record=True")
    names = [k for k in record if k.endswith("spikes")] if keys is None else list(keys)
    missing = [k for k in names if k not in record]
    if missing or not names:
        raise PondError(
            "firing-rate regularizer keys",
            value=missing or "no spike record",
            limit=sorted(record),
            where="firing_rate_regularizer",
            fix="run the network with record=True and pass existing record keys",
        )
    total = jnp.asarray(0.0)
    for k in names:
        s = record[k]
        rate = jnp.mean(s.reshape((-1, s.shape[-1])), axis=0)
        dev = rate - target
        if upper_only:
            dev = jnp.maximum(dev, 0.0)
        total = total + jnp.mean(dev**2)
    return weight * total


def _layer_rank(key: str) -> tuple[int, ...]:
    """Order record keys by their layer path: ``"2_Residual/1_LIF/vmem"`` -> (2, 1)."""
    rank = []
    for part in key.split("/")[:-1]:
        head = part.split("_", 1)[0]
        rank.append(int(head) if head.isdigit() else -1)
    return tuple(rank)


def output_vmem(record: dict) -> jax.Array:
    """The membrane potential of the last LIF layer in a record dict, (B, T, C).

    Example:
        >>> rec = {"1_LIF/vmem": jnp.zeros((1, 2, 5)), "3_LIF/vmem": jnp.ones((1, 2, 3))}
        >>> output_vmem(rec).shape
        (1, 2, 3)
    """
    keys = [k for k in record if k.split("/")[-1] == "vmem"]
    if not keys:
        raise PondError(
            "no membrane potential in the record",
            value=sorted(record),
            limit="a key ending in '/vmem'",
            where="output_vmem",
            fix="run the network with record=True; it must end with a LIF layer",
        )
    return record[max(keys, key=_layer_rank)]


def _named_ce_sum(output: jax.Array, record: dict, labels: jax.Array) -> jax.Array:
    return cross_entropy_sum(output, labels)


def _named_ce_max(output: jax.Array, record: dict, labels: jax.Array) -> jax.Array:
    return cross_entropy_max(output_vmem(record), labels)


def _named_mse(output: jax.Array, record: dict, labels: jax.Array) -> jax.Array:
    # the rate of each output neuron (spikes per step) against a one-hot target rate
    rate = jnp.mean(output, axis=1)
    return mse(rate, jax.nn.one_hot(labels, output.shape[-1]))


#: The losses :func:`fit` accepts by name, as ``(output, record, labels) -> scalar`` callables.
LOSSES: dict[str, LossFn] = {"cross_entropy_sum": _named_ce_sum, "cross_entropy_max": _named_ce_max, "mse": _named_mse}


def get_loss(loss: str | LossFn) -> LossFn:
    """A ``(output, record, labels) -> scalar`` callable from a name in :data:`LOSSES` or a callable."""
    if callable(loss):
        return loss
    if isinstance(loss, str) and loss in LOSSES:
        return LOSSES[loss]
    raise PondError(
        "loss",
        value=loss,
        limit=f"one of {sorted(LOSSES)} or a callable",
        where="fit",
        fix="pass a loss name or loss(output, record, labels) -> scalar",
    )


# -- readout and evaluation ------------------------------------------------------------------------
def _check_net(net: Any, where: str) -> tuple[int, int]:
    """``(size_in, size_out)`` of a pondlib.nn network; a PondError for anything else."""
    size_in, size_out = getattr(net, "size_in", None), getattr(net, "size_out", None)
    if not isinstance(net, eqx.Module) or size_in is None or size_out is None:
        raise PondError(
            "net",
            value=f"a {type(net).__name__}",
            limit="a pondlib.nn network (an equinox module with size_in and size_out)",
            where=where,
            fix="pass a network built from pondlib.nn modules",
        )
    return int(size_in), int(size_out)


def _check_x(x: Any, where: str, size_in: int | None = None) -> np.ndarray:
    """Inputs (N, T, C) as a finite real array: no NaN/inf, complex, strings, ragged rows or empty axes."""
    arr = as_array(x, "input x", where=where, float32=True, fix="pass finite real event counts of shape (N, T, C)")
    if arr.ndim != 3:
        raise PondError(
            "input shape",
            value=tuple(arr.shape),
            limit="(N, T, C)",
            where=where,
            fix="pass a batch of samples, time steps and channels",
        )
    if size_in is not None and arr.shape[2] != size_in:
        raise PondError(
            "input channels",
            value=f"{arr.shape[2]} (x of shape {arr.shape})",
            limit=f"{size_in} (the network's size_in)",
            where=where,
            fix="pass one column per input channel of the network",
        )
    return arr


def _check_labels(y: Any, n: int, where: str, n_classes: int | None = None) -> np.ndarray:
    """Labels (n,) of an integer dtype in ``0..n_classes-1`` (floats, even 1.0, and booleans are refused)."""
    arr = as_array(y, "labels", where=where, allow_empty=True, fix="pass one integer class label per sample")
    if arr.ndim != 1 or arr.shape[0] != n or arr.dtype.kind not in "iu":
        raise PondError(
            "labels",
            value=f"shape {arr.shape}, dtype {arr.dtype}",
            limit=f"integers of shape ({n},)",
            where=where,
            fix="pass one integer class label per sample (e.g. y.astype(int))",
        )
    hi = None if n_classes is None else n_classes - 1
    return as_int_array(
        arr,
        "labels",
        lo=0,
        hi=hi,
        where=where,
        allow_empty=True,
        fix="labels are class indices 0..C-1, one per output neuron",
    )


def readout_counts(output: Any) -> np.ndarray:
    """Spike counts per class over the run: (B, T, C) -> (B, C) (works for float and chip output).

    Raises:
        PondError: ``output`` not a finite real (B, T, C) array.
    """
    out = as_array(output, "output", where="readout_counts", ndim=3, fix="pass the network output (B, T, C)")
    return out.sum(axis=1)


def accuracy(output: Any, labels: Any) -> float:
    """Fraction of samples whose most-spiking output neuron is the label ((B, T, C), (B,)).

    Raises:
        PondError: ``output`` not a finite real (B, T, C) array; labels not B integers in ``0..C-1``.

    Example:
        >>> out = np.zeros((2, 3, 2)); out[0, :, 1] = 1; out[1, 0, 1] = 1
        >>> accuracy(out, np.array([1, 0]))
        0.5
    """
    counts = readout_counts(output)
    y = _check_labels(labels, counts.shape[0], "accuracy", counts.shape[1])
    pred = np.argmax(counts, axis=-1)
    return float(np.mean(pred == y))


@jax.jit
def _counts(net: Any, x: jax.Array) -> jax.Array:
    out, _, _ = net(x)
    return jnp.sum(out, axis=1)


@eqx.filter_jit
def _counts_split(net: Any, x: jax.Array, mesh: Any) -> jax.Array:
    out, _, _ = parallel.split_call(net, x, mesh=mesh)
    return jnp.sum(out, axis=1)


def _train_mesh(devices: Any, batch_size: int) -> Any:
    """The data mesh of :func:`fit` (None for one device). Automatic (``devices=None``): the largest number
    of devices that divides ``batch_size``; named devices must divide it."""
    devs = parallel.devices(devices, where="fit")
    d = len(devs)
    if devices is None:
        d = max(k for k in range(1, d + 1) if batch_size % k == 0)
    elif batch_size % d:
        raise PondError(
            "batch_size",
            value=batch_size,
            limit=f"a multiple of the {d} devices",
            where="fit",
            fix=f"pass batch_size={-(-batch_size // d) * d} or fewer devices (a mean loss cannot be padded)",
        )
    return parallel.data_mesh(devs[:d]) if d > 1 else None


def _check_xy(x: Any, y: Any, where: str, net: Any = None) -> tuple[np.ndarray, np.ndarray]:
    size_in, size_out = _check_net(net, where) if net is not None else (None, None)
    x = _check_x(x, where, size_in)
    return x, _check_labels(y, x.shape[0], where, size_out)


def _batch_size(batch_size: Any, where: str, hi: int | None = None) -> int:
    return check_int(
        batch_size,
        "batch_size",
        lo=1,
        hi=hi,
        where=where,
        fix=f"pass a whole number of samples per batch{f' in 1..{hi}' if hi else ''}",
    )


def predict(net: Any, x: Any, *, batch_size: int = 256, devices: Any = None) -> np.ndarray:
    r"""Predicted classes (N,) of a float network for inputs (N, T, C), in batches of ``batch_size``.

    The last batch is zero-padded so that every batch has the same shape (one compilation). A
    ``batch_size`` above N is allowed and runs one batch of N.

    ``devices`` (see :func:`pondlib.nn.parallel.devices`; default every device, ``1`` for one) splits each
    batch over several devices, the network copied to each: the batch is rounded up to a multiple of
    the device count D, :math:`\lceil \min(\mathrm{batch\_size}, N) / D \rceil D`, with zero rows that
    are dropped. Every sample runs the same computation as on one device, so the predictions are the same.

    Raises:
        PondError: ``net`` not a pondlib.nn network; ``x`` not a finite real (N, T, C) array with N, T >= 1
            and ``C == net.size_in`` (NaN, inf, complex, strings, ragged lists, empty batches are
            refused); ``batch_size`` not a whole number >= 1; a bad ``devices``.
    """
    size_in, _ = _check_net(net, "predict")
    x = _check_x(x, "predict", size_in).astype(np.float32)
    n = x.shape[0]
    bs = min(_batch_size(batch_size, "predict"), n)
    devs = parallel.devices(devices, where="predict")
    mesh = parallel.data_mesh(devs) if len(devs) > 1 else None
    if mesh is not None:
        bs = -(-bs // len(devs)) * len(devs)
        net = parallel.replicate(net, mesh)
    preds = []
    for start in range(0, n, bs):
        xb = x[start : start + bs]
        m = xb.shape[0]
        if m < bs:
            xb = np.concatenate([xb, np.zeros((bs - m,) + xb.shape[1:], xb.dtype)])
        if mesh is None:
            counts = np.asarray(_counts(net, jnp.asarray(xb)))
        else:
            with parallel.peer_failures("predict"):  # another process stopped: an error, not a hang
                counts = parallel.gather(_counts_split(net, parallel.shard_batch(xb, mesh), mesh))
        preds.append(np.argmax(counts, axis=-1)[:m])
    return np.concatenate(preds)


def evaluate(net: Any, x: Any, y: Any, *, batch_size: int = 256, devices: Any = None) -> float:
    """Accuracy (0..1) of a float network on inputs (N, T, C) and labels (N,) (batched, and split over
    ``devices`` as in :func:`predict`).

    Raises:
        PondError: as :func:`predict`, and labels that are not N integers (an integer dtype) in
            ``0..net.size_out - 1``.

    Example:
        >>> from pondlib import nn
        >>> net = nn.Sequential(nn.Linear(2, 2, weight=jnp.eye(2)), nn.LIF(2))
        >>> x = np.zeros((2, 3, 2)); x[0, :, 0] = 2; x[1, :, 1] = 2
        >>> evaluate(net, x, np.array([0, 1]))
        1.0
    """
    x, y = _check_xy(x, y, "evaluate", net)
    return float(np.mean(predict(net, x, batch_size=batch_size, devices=devices) == y))


# -- training --------------------------------------------------------------------------------------
def _trainable_mask(net: Any, frozen: Sequence[str]) -> Any:
    """A pytree of bools: True for float array leaves whose field name is not in ``frozen``."""
    frozen = set(frozen)

    def leaf(path: tuple, v: Any) -> bool:
        if not eqx.is_inexact_array(v):
            return False
        names = [p.name for p in path if isinstance(p, jax.tree_util.GetAttrKey)]
        return not (names and names[-1] in frozen)

    return jax.tree_util.tree_map_with_path(leaf, net)


@eqx.filter_jit
def _train_step(
    params: Any,
    static: Any,
    opt_state: Any,
    x: jax.Array,
    y: jax.Array,
    loss_fn: LossFn,
    optimizer: optax.GradientTransformation,
    mesh: Any = None,
):
    """One optimisation step. Compiled once per network structure, shapes, loss, optimizer and mesh:
    arrays (parameters, frozen arrays, optimizer state, data) are traced, everything else static.
    With a ``mesh`` the forward pass runs per device on its rows (:func:`pondlib.nn.parallel.split_call`)
    and the batch reductions of the loss and the gradients become all-reduces."""

    def batch_loss(p: Any) -> tuple[jax.Array, jax.Array]:
        net = eqx.combine(p, static)
        if mesh is None:
            out, _, rec = net(x, record=True)
        else:
            out, _, rec = parallel.split_call(net, x, record=True, mesh=mesh)
        return loss_fn(out, rec, y), out

    (value, out), grads = jax.value_and_grad(batch_loss, has_aux=True)(params)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    acc = jnp.mean(jnp.argmax(jnp.sum(out, axis=1), axis=-1) == y)
    return params, opt_state, value, acc


def make_train_step(
    static: Any, loss: str | LossFn, optimizer: optax.GradientTransformation, mesh: Any = None
) -> Callable[..., tuple[Any, Any, jax.Array, jax.Array]]:
    """A jitted step ``(params, opt_state, x, y) -> (params, opt_state, loss, accuracy)``.

    With ``mesh`` (a :func:`pondlib.nn.parallel.data_mesh`), ``x`` and ``y`` should be split over it
    (:func:`~pondlib.nn.parallel.shard_batch`, B a multiple of the device count) and ``params`` /
    ``opt_state`` replicated (:func:`~pondlib.nn.parallel.replicate`): data-parallel training.

    ``params`` and ``static`` are the two halves of ``eqx.partition(net, mask)``: the trainable arrays
    and the rest; the network is ``eqx.combine(params, static)``. ``accuracy`` is the fraction of the
    batch classified correctly by the spike-count readout. The compiled code is cached per network
    structure, input shapes, loss function and optimizer object, so repeated :func:`fit` calls with
    the same loss and optimizer compile once.

    Example:
        >>> import equinox as eqx
        >>> from pondlib import nn
        >>> net = nn.Sequential(nn.Linear(2, 2, weight=jnp.eye(2)), nn.LIF(2))
        >>> params, static = eqx.partition(net, eqx.is_inexact_array)
        >>> opt = optax.sgd(0.1)
        >>> step = make_train_step(static, "cross_entropy_sum", opt)
        >>> params, opt_state, loss, acc = step(params, opt.init(params), jnp.ones((4, 3, 2)),
        ...                                     jnp.array([0, 1, 0, 1]))
        >>> float(acc)
        0.5
    """
    loss_fn = get_loss(loss)

    def step(params: Any, opt_state: Any, x: jax.Array, y: jax.Array):
        return _train_step(params, static, opt_state, x, y, loss_fn, optimizer, mesh)

    return step


#: The default optimizer of :func:`fit` (one object, so that its compiled steps are reused).
DEFAULT_OPTIMIZER = optax.adam(1e-3)


def _as_xy(data: Any, net: Any) -> tuple[np.ndarray, np.ndarray]:
    if hasattr(data, "x_train") and hasattr(data, "y_train"):
        return _check_xy(data.x_train, data.y_train, "fit", net)
    if isinstance(data, (tuple, list)) and len(data) == 2:
        return _check_xy(data[0], data[1], "fit", net)
    raise PondError(
        "training data",
        value=type(data).__name__,
        limit="an EventDataset or a tuple (x (N, T, C), y (N,))",
        where="fit",
        fix="pass load_digits_events(...) or (x, y)",
    )


def _check_key(key: Any) -> jax.Array:
    if key is None:
        return jax.random.PRNGKey(0)
    try:
        if isinstance(key, (str, bytes, bool)) or not hasattr(key, "shape"):
            raise TypeError
        jax.random.split(key)
    except (TypeError, ValueError):
        raise PondError(
            "key",
            value=f"a {type(key).__name__}",
            limit="a jax.random key (jax.random.PRNGKey(seed) or jax.random.key(seed))",
            where="fit",
            fix="pass key=jax.random.PRNGKey(0)",
        ) from None
    return key


@dataclass(frozen=True)
class _FitArgs:
    """The checked arguments of :func:`fit`: data x (N, T, C) float, y (N,) int, the loss callable, the
    optimizer, the shuffling key, frozen field names, whether to show progress and the data mesh."""

    x: np.ndarray
    y: np.ndarray
    epochs: int
    batch_size: int
    loss_fn: LossFn
    optimizer: optax.GradientTransformation
    key: jax.Array
    frozen: Sequence[str]
    progress: bool
    mesh: Any


def _check_optimizer(optimizer: Any) -> optax.GradientTransformation:
    """``optimizer``, or :data:`DEFAULT_OPTIMIZER` for None; a PondError for anything without init/update."""
    if optimizer is None:
        return DEFAULT_OPTIMIZER
    if not (callable(getattr(optimizer, "init", None)) and callable(getattr(optimizer, "update", None))):
        raise PondError(
            "optimizer",
            value=f"a {type(optimizer).__name__}",
            limit="an optax.GradientTransformation",
            where="fit",
            fix="pass e.g. optimizer=optax.adam(1e-3) (the learning rate goes into the optimizer)",
        )
    return optimizer


def _check_frozen(frozen: Any) -> Sequence[str]:
    """``frozen`` when it is a tuple, list or set of field names (a single string is refused)."""
    if isinstance(frozen, str) or not isinstance(frozen, (tuple, list, set, frozenset)):
        raise PondError(
            "frozen",
            value=repr(frozen)[:60],
            limit="a tuple of field names",
            where="fit",
            fix='pass e.g. frozen=("tau_mem", "tau_syn")',
        )
    for name in frozen:
        check_type(name, "frozen field name", str, where="fit")
    return frozen


def _check_fit_args(
    net: Any,
    data: Any,
    loss: Any,
    optimizer: Any,
    epochs: Any,
    batch_size: Any,
    key: Any,
    frozen: Any,
    progress: Any,
    devices: Any,
) -> _FitArgs:
    """Every argument of :func:`fit` checked, in the order of its signature (the first bad one is named)."""
    _check_net(net, "fit")
    x, y = _as_xy(data, net)
    epochs = check_int(epochs, "epochs", lo=1, hi=10**6, where="fit", fix="pass e.g. epochs=10")
    batch_size = _batch_size(batch_size, "fit", x.shape[0])
    loss_fn = get_loss(loss)
    optimizer = _check_optimizer(optimizer)
    key = _check_key(key)
    frozen = _check_frozen(frozen)
    progress = check_bool(progress, "progress", where="fit")
    mesh = _train_mesh(devices, batch_size)
    return _FitArgs(x, y, epochs, batch_size, loss_fn, optimizer, key, frozen, progress, mesh)


def _place(params: Any, opt_state: Any, x: np.ndarray, y: np.ndarray, mesh: Any) -> tuple[Any, Any, Callable]:
    """``(params, opt_state, batch)``: on one device the data goes to it once and ``batch(idx)`` gathers rows
    there; with a mesh the parameters and optimizer state are replicated and each batch is split over it."""
    if mesh is None:
        xj = jnp.asarray(x, dtype=jnp.float32)
        yj = jnp.asarray(y, dtype=jnp.int32)

        def batch(idx: Any) -> tuple[jax.Array, jax.Array]:
            return xj[idx], yj[idx]

        return params, opt_state, batch
    params, opt_state = parallel.replicate((params, opt_state), mesh)
    xn, yn = np.asarray(x, np.float32), np.asarray(y, np.int32)

    def batch_split(idx: Any) -> tuple[jax.Array, jax.Array]:
        idx = np.asarray(idx)
        return parallel.shard_batch(xn[idx], mesh), parallel.shard_batch(yn[idx], mesh)

    return params, opt_state, batch_split


class _Progress:
    """The rich progress bar of :func:`fit`: one tick per step, showing the epoch, the step's loss and the
    running accuracy of the epoch."""

    def __init__(self, console: Any, epochs: int, n_batches: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.epochs = epochs
        self.bar = Progress(
            TextColumn("[bold]training[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("epoch {task.fields[epoch]}  loss {task.fields[loss]}  acc {task.fields[acc]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.task = self.bar.add_task("train", total=epochs * n_batches, epoch=f"0/{epochs}", loss="-", acc="-")
        self.bar.start()

    def step(self, epoch: int, value: jax.Array, accs: list[jax.Array]) -> None:
        """One step of epoch ``epoch`` (0-based) done with loss ``value``; ``accs``: the epoch's accuracies."""
        self.bar.update(
            self.task,
            advance=1,
            epoch=f"{epoch + 1}/{self.epochs}",
            loss=f"{float(value):.3f}",
            acc=f"{float(jnp.mean(jnp.stack(accs))):.3f}",
        )

    def stop(self) -> None:
        """Stop the live display (the bar stays printed)."""
        self.bar.stop()


def _epoch(
    step: Callable, params: Any, opt_state: Any, batch: Callable, perm: jax.Array, a: _FitArgs, epoch: int, bar: Any
) -> tuple[Any, Any, float, float]:
    """One pass over ``N // batch_size`` full batches of ``perm``: ``(params, opt_state, mean loss, mean
    accuracy)``; a PondError when the mean loss is NaN or infinite."""
    losses, accs = [], []
    for b in range(a.x.shape[0] // a.batch_size):
        idx = perm[b * a.batch_size : (b + 1) * a.batch_size]
        params, opt_state, value, acc = step(params, opt_state, *batch(idx))
        losses.append(value)
        accs.append(acc)
        if bar is not None:
            bar.step(epoch, value, accs)
    mean_loss = float(jnp.mean(jnp.stack(losses)))
    if not np.isfinite(mean_loss):
        raise PondError(
            "training loss",
            value=mean_loss,
            limit="a finite number",
            where=f"fit, epoch {epoch + 1}",
            fix="lower the learning rate or check the input scale",
        )
    return params, opt_state, mean_loss, float(jnp.mean(jnp.stack(accs)))


def _train(
    step: Callable, params: Any, opt_state: Any, batch: Callable, a: _FitArgs, console: Any
) -> tuple[Any, dict[str, list[float]]]:
    """``epochs`` passes, each over a fresh permutation drawn from ``a.key``: ``(params, history)``."""
    history: dict[str, list[float]] = {"loss": [], "accuracy": []}
    key = a.key
    bar = _Progress(console, a.epochs, a.x.shape[0] // a.batch_size) if a.progress else None
    try:
        for epoch in range(a.epochs):
            key, sub = jax.random.split(key)
            perm = jax.random.permutation(sub, a.x.shape[0])
            params, opt_state, mean_loss, mean_acc = _epoch(step, params, opt_state, batch, perm, a, epoch, bar)
            history["loss"].append(mean_loss)
            history["accuracy"].append(mean_acc)
    finally:
        if bar is not None:
            bar.stop()
    return params, history


def fit(
    net: Any,
    data: Any,
    loss: str | LossFn = "cross_entropy_sum",
    *,
    optimizer: optax.GradientTransformation | None = None,
    epochs: int = 10,
    batch_size: int = 64,
    key: jax.Array | None = None,
    frozen: Sequence[str] = (),
    progress: bool = True,
    console: Any = None,
    devices: Any = None,
) -> tuple[Any, dict[str, list[float]]]:
    """Train a network with mini-batch gradient descent.

    Args:
        net: a ``pondlib.nn`` module (not modified; a trained copy is returned).
        data: an :class:`~pondlib.datasets.EventDataset` (its train split is used) or ``(x, y)`` with
            x (N, T, C) and integer labels y (N,).
        loss: a name in :data:`LOSSES` or ``loss(output, record, labels) -> scalar``.
        optimizer: an optax optimizer (default :data:`DEFAULT_OPTIMIZER`, ``optax.adam(1e-3)``).
        epochs: passes over the data.
        batch_size: samples per step; each epoch takes ``N // batch_size`` full batches of a fresh
            random permutation (the remainder is left out of that epoch so every step has one shape).
        key: ``jax.random`` key for the shuffling (default ``PRNGKey(0)``); the same key, network and
            data give the same result.
        frozen: parameter field names not to train (e.g. ``("tau_mem", "tau_syn")``).
        progress: show a rich progress bar with the running loss and accuracy.
        console: a ``rich.console.Console`` for the progress bar (default: a new one).
        devices: data-parallel training (see :func:`pondlib.nn.parallel.devices`): each batch is split
            over the devices, the parameters and optimizer state are replicated, and the gradient, a mean
            over the batch, is summed across devices (an all-reduce). Default ``None``: the largest
            number of the available devices that divides ``batch_size`` (one device when only one is
            available, or inside :func:`pondlib.nn.parallel.single_device`); ``1`` turns it off; named
            devices must divide ``batch_size``. The result equals the one-device run up to float32
            rounding of the batch sums (a different summation order); the trained network is returned
            on the default device.

    Returns:
        ``(trained_net, history)`` with ``history["loss"]`` and ``history["accuracy"]`` the mean
        training loss and accuracy of each epoch.

    Raises:
        PondError: naming the argument, for: ``net`` not a pondlib.nn network; ``x`` not a finite real
            (N, T, C) array with ``C == net.size_in`` (NaN, inf, complex, strings, ragged lists, empty
            batches); labels that are not N integers of an integer dtype in ``0..net.size_out - 1``
            (fractional, negative or too large; float labels such as ``1.0`` are refused too); ``epochs``
            not a whole number in 1..10^6; ``batch_size`` not a whole number in 1..N; an unknown loss;
            an ``optimizer`` that is not an optax transformation (the learning rate is the optimizer's:
            ``optax.adam(lr)``); a ``key`` that is not a jax.random key; ``frozen`` not a sequence of
            names; a non-bool ``progress``; a bad ``devices`` or one that does not divide ``batch_size``;
            or a training loss that becomes NaN or infinite.
        DistributedError: in a multi-process run (:mod:`pondlib.distributed`), another process stopped under
            a collective.
    """
    a = _check_fit_args(net, data, loss, optimizer, epochs, batch_size, key, frozen, progress, devices)
    params, static = eqx.partition(net, _trainable_mask(net, a.frozen))
    opt_state = a.optimizer.init(params)
    step = make_train_step(static, a.loss_fn, a.optimizer, a.mesh)
    params, opt_state, batch = _place(params, opt_state, a.x, a.y, a.mesh)
    with parallel.peer_failures("fit"):  # another process stopped: a DistributedError, not a hang
        params, history = _train(step, params, opt_state, batch, a, console)
    if a.mesh is not None and jax.process_count() == 1:
        params = jax.device_put(params, jax.devices()[0])
    return eqx.combine(params, static), history
