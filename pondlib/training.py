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
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from pondlib.errors import PondError

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

    Returns:
        ``weight * sum over keys of mean over neurons of (rate - target)^2`` (a scalar).

    Example:
        >>> rec = {"1_LIF/spikes": jnp.ones((2, 4, 3)), "1_LIF/vmem": jnp.zeros((2, 4, 3))}
        >>> float(firing_rate_regularizer(rec, 0.5, weight=2.0))    # 2 * (1 - 0.5)^2
        0.5
    """
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
def readout_counts(output: Any) -> np.ndarray:
    """Spike counts per class over the run: (B, T, C) -> (B, C) (works for float and chip output)."""
    return np.asarray(output).sum(axis=1)


def accuracy(output: Any, labels: Any) -> float:
    """Fraction of samples whose most-spiking output neuron is the label ((B, T, C), (B,)).

    Example:
        >>> out = np.zeros((2, 3, 2)); out[0, :, 1] = 1; out[1, 0, 1] = 1
        >>> accuracy(out, np.array([1, 0]))
        0.5
    """
    pred = np.argmax(readout_counts(output), axis=-1)
    return float(np.mean(pred == np.asarray(labels)))


@jax.jit
def _counts(net: Any, x: jax.Array) -> jax.Array:
    out, _, _ = net(x)
    return jnp.sum(out, axis=1)


def _check_xy(x: Any, y: Any, where: str) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x)
    y = np.asarray(y)
    if x.ndim != 3:
        raise PondError(
            "input shape",
            value=tuple(x.shape),
            limit="(N, T, C)",
            where=where,
            fix="pass a batch of samples, time steps and channels",
        )
    if y.shape != (x.shape[0],) or y.dtype.kind not in "iu":
        raise PondError(
            "labels",
            value=f"shape {y.shape}, dtype {y.dtype}",
            limit=f"integers of shape ({x.shape[0]},)",
            where=where,
            fix="pass one integer class label per sample",
        )
    return x, y


def predict(net: Any, x: Any, *, batch_size: int = 256) -> np.ndarray:
    """Predicted classes (N,) of a float network for inputs (N, T, C), in batches of ``batch_size``.

    The last batch is zero-padded so that every batch has the same shape (one compilation).
    """
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 3:
        raise PondError(
            "input shape",
            value=tuple(x.shape),
            limit="(N, T, C)",
            where="predict",
            fix="pass a batch of samples, time steps and channels",
        )
    n = x.shape[0]
    bs = max(1, min(int(batch_size), n))
    preds = []
    for start in range(0, n, bs):
        xb = x[start : start + bs]
        m = xb.shape[0]
        if m < bs:
            xb = np.concatenate([xb, np.zeros((bs - m,) + xb.shape[1:], xb.dtype)])
        preds.append(np.argmax(np.asarray(_counts(net, jnp.asarray(xb))), axis=-1)[:m])
    return np.concatenate(preds)


def evaluate(net: Any, x: Any, y: Any, *, batch_size: int = 256) -> float:
    """Accuracy (0..1) of a float network on inputs (N, T, C) and labels (N,) (batched).

    Example:
        >>> from pondlib import nn
        >>> net = nn.Sequential(nn.Linear(2, 2, weight=jnp.eye(2)), nn.LIF(2))
        >>> x = np.zeros((2, 3, 2)); x[0, :, 0] = 2; x[1, :, 1] = 2
        >>> evaluate(net, x, np.array([0, 1]))
        1.0
    """
    x, y = _check_xy(x, y, "evaluate")
    return float(np.mean(predict(net, x, batch_size=batch_size) == y))


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
):
    """One optimisation step. Compiled once per network structure, shapes, loss and optimizer:
    arrays (parameters, frozen arrays, optimizer state, data) are traced, everything else static."""

    def batch_loss(p: Any) -> tuple[jax.Array, jax.Array]:
        out, _, rec = eqx.combine(p, static)(x, record=True)
        return loss_fn(out, rec, y), out

    (value, out), grads = jax.value_and_grad(batch_loss, has_aux=True)(params)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    acc = jnp.mean(jnp.argmax(jnp.sum(out, axis=1), axis=-1) == y)
    return params, opt_state, value, acc


def make_train_step(
    static: Any, loss: str | LossFn, optimizer: optax.GradientTransformation
) -> Callable[..., tuple[Any, Any, jax.Array, jax.Array]]:
    """A jitted step ``(params, opt_state, x, y) -> (params, opt_state, loss, accuracy)``.

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
        return _train_step(params, static, opt_state, x, y, loss_fn, optimizer)

    return step


#: The default optimizer of :func:`fit` (one object, so that its compiled steps are reused).
DEFAULT_OPTIMIZER = optax.adam(1e-3)


def _as_xy(data: Any) -> tuple[np.ndarray, np.ndarray]:
    if hasattr(data, "x_train") and hasattr(data, "y_train"):
        return _check_xy(data.x_train, data.y_train, "fit")
    if isinstance(data, (tuple, list)) and len(data) == 2:
        return _check_xy(data[0], data[1], "fit")
    raise PondError(
        "training data",
        value=type(data).__name__,
        limit="an EventDataset or a tuple (x (N, T, C), y (N,))",
        where="fit",
        fix="pass load_digits_events(...) or (x, y)",
    )


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

    Returns:
        ``(trained_net, history)`` with ``history["loss"]`` and ``history["accuracy"]`` the mean
        training loss and accuracy of each epoch.

    Raises:
        PondError: bad data, loss, epochs or batch size, or a loss that becomes NaN.
    """
    x, y = _as_xy(data)
    if not isinstance(epochs, (int, np.integer)) or epochs < 1:
        raise PondError("epochs", value=epochs, limit="an int >= 1", where="fit", fix="pass epochs=10")
    n = x.shape[0]
    if not isinstance(batch_size, (int, np.integer)) or not 1 <= batch_size <= n:
        raise PondError(
            "batch_size",
            value=batch_size,
            limit=f"an int in 1..{n} (the sample count)",
            where="fit",
            fix="pass a smaller batch_size",
        )
    optimizer = DEFAULT_OPTIMIZER if optimizer is None else optimizer
    key = jax.random.PRNGKey(0) if key is None else key
    params, static = eqx.partition(net, _trainable_mask(net, frozen))
    opt_state = optimizer.init(params)
    step = make_train_step(static, loss, optimizer)
    xj = jnp.asarray(x, dtype=jnp.float32)
    yj = jnp.asarray(y, dtype=jnp.int32)
    n_batches = n // batch_size
    history: dict[str, list[float]] = {"loss": [], "accuracy": []}

    bar = None
    if progress:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(
            TextColumn("[bold]training[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("epoch {task.fields[epoch]}  loss {task.fields[loss]}  acc {task.fields[acc]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        task = bar.add_task("train", total=epochs * n_batches, epoch=f"0/{epochs}", loss="-", acc="-")
        bar.start()
    try:
        for epoch in range(epochs):
            key, sub = jax.random.split(key)
            perm = jax.random.permutation(sub, n)
            losses, accs = [], []
            for b in range(n_batches):
                idx = perm[b * batch_size : (b + 1) * batch_size]
                params, opt_state, value, acc = step(params, opt_state, xj[idx], yj[idx])
                losses.append(value)
                accs.append(acc)
                if bar is not None:
                    bar.update(
                        task,
                        advance=1,
                        epoch=f"{epoch + 1}/{epochs}",
                        loss=f"{float(value):.3f}",
                        acc=f"{float(jnp.mean(jnp.stack(accs))):.3f}",
                    )
            mean_loss = float(jnp.mean(jnp.stack(losses)))
            if not np.isfinite(mean_loss):
                raise PondError(
                    "training loss",
                    value=mean_loss,
                    limit="a finite number",
                    where=f"fit, epoch {epoch + 1}",
                    fix="lower the learning rate or check the input scale",
                )
            history["loss"].append(mean_loss)
            history["accuracy"].append(float(jnp.mean(jnp.stack(accs))))
    finally:
        if bar is not None:
            bar.stop()
    return eqx.combine(params, static), history
