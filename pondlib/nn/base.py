"""The contract every ``pondlib.nn`` module follows, and the one time loop.

A module is an immutable :class:`equinox.Module` (a pytree: arrays are trainable leaves,
configuration is static). It maps an input of shape ``(T, N_in)`` or ``(B, T, N_in)`` to an output of
shape ``(T, N_out)`` or ``(B, T, N_out)``::

    output, new_state, record = module(x, state=None, record=False)

``new_state`` continues the run: ``module(x2, state=module(x1)[1])`` equals the second half of
``module(concat(x1, x2))``. ``record`` is a flat dict of per-step arrays keyed ``"<layer>/<quantity>"``
(``"1_LIF/vmem"``); for a single neuron layer the keys are just ``vmem``, ``isyn``, ``spikes``.

Internally modules work time-major (``(T, ..., N)``); :func:`evolve_time_major` is the single place where
batch-major input is converted, and :func:`scan_steps` is the single time loop (``jax.lax.scan``).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np

from pondlib.errors import GraphError, SimulationError

__all__ = ["Module", "scan_steps", "check_input", "evolve_time_major"]


@runtime_checkable
class Module(Protocol):
    """What every pondlib.nn module provides."""

    @property
    def size_in(self) -> int: ...

    @property
    def size_out(self) -> int: ...

    def init_state(self, batch_shape: tuple[int, ...] = ()) -> Any:
        """The zero state for a batch of ``batch_shape`` samples (``()`` for one sample)."""

    def evolve_tm(self, x: jax.Array, state: Any, record: bool) -> tuple[jax.Array, Any, dict]:
        """Time-major evolution: ``x`` (T, *batch, N_in) -> (T, *batch, N_out)."""

    def as_graph(self, name: str | None = None) -> Any:
        """The module as a :mod:`pondlib.graph` graph (numpy copies of parameters)."""


def scan_steps(step: Callable[[Any, jax.Array], tuple[Any, Any]], state: Any, xs: Any,
               reverse: bool = False) -> tuple[Any, Any]:
    """The one time loop: ``state, ys = lax.scan(step, state, xs)`` over the leading (time) axis."""
    return jax.lax.scan(step, state, xs, reverse=reverse)


def check_input(x: Any, size_in: int, where: str) -> jax.Array:
    """Validate a network input: numeric, (T, N_in) or (B, T, N_in); return it as a float array.

    Raises:
        SimulationError: wrong number of dimensions, wrong channel count, non-numeric dtype, or
            (for concrete, non-traced input) NaN / infinite values, naming the first offending index.
    """
    if not hasattr(x, "shape"):
        x = np.asarray(x)
    if not (jnp.issubdtype(x.dtype, jnp.number) or jnp.issubdtype(x.dtype, jnp.bool_)):
        raise SimulationError("input dtype", value=str(x.dtype), limit="a numeric dtype", where=where,
                              fix="pass spikes or currents as a float or integer array")
    if x.ndim not in (2, 3):
        raise SimulationError("input shape", value=tuple(x.shape), limit="(T, N_in) or (B, T, N_in)",
                              where=where, fix="add or remove the batch dimension")
    if x.shape[-1] != size_in:
        raise SimulationError("input channels", value=int(x.shape[-1]), limit=size_in, where=where,
                              fix=f"pass {size_in} input channels in the last axis")
    if not isinstance(x, jax.core.Tracer):
        xa = np.asarray(x)
        if xa.dtype.kind == "f" and not np.all(np.isfinite(xa)):
            idx = tuple(int(i) for i in np.argwhere(~np.isfinite(xa))[0])
            raise SimulationError("non-finite input", value=float(xa[idx]), limit="a finite number",
                                  where=f"x{list(idx)}", fix="remove NaN/inf from the input")
    x = jnp.asarray(x)
    return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(jnp.float32)


def evolve_time_major(module: Any, x: Any, state: Any = None, record: bool = False):
    """Run ``module`` on batch-major input, converting to and from time-major once.

    Args:
        x: (T, N_in) or (B, T, N_in).
        state: a previous state (unbatched states broadcast over the batch), or None for zeros.
        record: whether to return per-step internal states.

    Returns:
        ``(output, new_state, record_dict)`` with output (T, N_out) or (B, T, N_out) and record arrays
        (T, ...) or (B, T, ...).
    """
    where = type(module).__name__
    x = check_input(x, module.size_in, where)
    batched = x.ndim == 3
    batch_shape = (x.shape[0],) if batched else ()
    if state is None:
        state = module.init_state(batch_shape)
    elif batched:
        state = jax.tree_util.tree_map(
            lambda s, z: jnp.broadcast_to(s, z.shape) if s.shape != z.shape else s,
            state, module.init_state(batch_shape))
    try:
        xt = jnp.swapaxes(x, 0, 1) if batched else x
        y, new_state, rec = module.evolve_tm(xt, state, record)
    except TypeError as err:  # a malformed state pytree
        raise SimulationError("state structure", value=str(err), limit="the state returned by this module",
                              where=where, fix="pass the state returned by a previous call, or None") from None
    if batched:
        y = jnp.swapaxes(y, 0, 1)
        rec = {k: jnp.swapaxes(v, 0, 1) for k, v in rec.items()}
    return y, new_state, rec


def check_sizes(prev_out: int, next_in: int, where: str) -> None:
    """Raise GraphError when consecutive modules disagree on a size."""
    if prev_out != next_in:
        raise GraphError("module sizes do not chain", value=next_in, limit=prev_out, where=where,
                         fix="make each module's size_in equal the previous module's size_out")
