"""Dense weights: ``y = x @ W + b``.

Example:
    >>> import jax, jax.numpy as jnp
    >>> lin = Linear(3, 2, weight=jnp.array([[1., 0.], [0., 1.], [1., 1.]]))
    >>> y, _, _ = lin(jnp.ones((4, 3)))
    >>> y.shape, y[0].tolist()
    ((4, 2), [2.0, 2.0])
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from pondlib.errors import GraphError
from pondlib.graph import LinearWeights
from pondlib.nn.base import as_param, check_parameter_count, check_size, evolve_time_major

__all__ = ["Linear"]


def _as_param(value: Any, shape: tuple[int, ...], name: str, where: str) -> jax.Array:
    arr = as_param(value, name, where)
    if tuple(arr.shape) != shape:
        raise GraphError(
            f"{name} shape", value=tuple(arr.shape), limit=shape, where=where, fix=f"pass {name} with shape {shape}"
        )
    return jnp.asarray(arr, dtype=jnp.float32)


class Linear(eqx.Module):
    """Dense weights ``y = x @ weight + bias``.

    Args:
        n_in, n_out: sizes.
        weight: (n_in, n_out) initial weights; default uniform in ``±1/sqrt(n_in)`` (needs ``key``).
        bias: False (no bias), True (zeros, trainable) or an (n_out,) array.
        key: a ``jax.random`` key for the default initialisation.

    Raises:
        GraphError: a size that is not a whole number in ``[1, 2^24]`` (``3.0`` is accepted as 3), a random
            initialisation of more than ``2^28`` weights, weights or biases of the wrong shape, not real
            (bool, complex, strings), not finite or beyond float32, a ``bias`` that is neither a bool nor an
            array, a missing or invalid key.

    Stateless: the state is ``None`` and there is no record.
    """

    weight: jax.Array
    bias: jax.Array | None
    n_in: int = eqx.field(static=True)
    n_out: int = eqx.field(static=True)

    def __init__(
        self, n_in: int, n_out: int, *, weight: Any = None, bias: Any = False, key: jax.Array | None = None
    ) -> None:
        self.n_in, self.n_out = check_size(n_in, "n_in", "Linear"), check_size(n_out, "n_out", "Linear")
        if weight is None:
            if key is None:
                raise GraphError(
                    "Linear needs an initial weight or a random key",
                    where="Linear",
                    fix="pass key=jax.random.PRNGKey(0) or weight=...",
                )
            check_parameter_count((self.n_in, self.n_out), "weight", "Linear")
            lim = 1.0 / np.sqrt(self.n_in)
            try:
                weight = jax.random.uniform(key, (self.n_in, self.n_out), jnp.float32, -lim, lim)
            except (TypeError, ValueError):
                raise GraphError(
                    "key",
                    value=f"a {type(key).__name__}",
                    limit="a jax.random key",
                    where="Linear",
                    fix="pass key=jax.random.PRNGKey(0)",
                ) from None
        self.weight = _as_param(weight, (self.n_in, self.n_out), "weight", "Linear")
        if bias is False or bias is None:
            self.bias = None
        elif bias is True:
            self.bias = jnp.zeros((self.n_out,), jnp.float32)
        else:
            self.bias = _as_param(bias, (self.n_out,), "bias", "Linear")

    @property
    def size_in(self) -> int:
        """Input channels."""
        return self.n_in

    @property
    def size_out(self) -> int:
        """Output channels."""
        return self.n_out

    def init_state(self, batch_shape: tuple[int, ...] = ()) -> None:
        """Linear layers carry no state."""
        return None

    def evolve_tm(self, x: jax.Array, state: None, record: bool) -> tuple[jax.Array, None, dict]:
        """``x`` (T, *batch, n_in) -> (T, *batch, n_out); all time steps at once."""
        # One 2-D product over all time steps and samples: its gradient dW is then a plain 2-D
        # product too, which XLA on CPU computes ~1 ms faster per training step (benchmarks/
        # train_step.py) than the transpose of the batched product, which copies dL/dy transposed.
        y = (x.reshape(-1, self.n_in) @ self.weight).reshape(x.shape[:-1] + (self.n_out,))
        if self.bias is not None:
            y = y + self.bias
        return y, None, {}

    def __call__(self, x: Any, state: Any = None, record: bool = False):
        """``(output, state, record)`` for input (T, n_in) or (B, T, n_in)."""
        return evolve_time_major(self, x, state, record)

    evolve = __call__

    def as_graph(self, name: str | None = None) -> LinearWeights:
        """A :class:`~pondlib.graph.LinearWeights` holding numpy copies of weight and bias."""
        return LinearWeights._factory(
            self.n_in,
            self.n_out,
            name or "Linear",
            self,
            weights=np.array(self.weight, dtype=float),
            biases=None if self.bias is None else np.array(self.bias, dtype=float),
        )
