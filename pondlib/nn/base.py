"""The contract every ``pondlib.nn`` module follows, the one time loop, and the checks at its boundary.

A module is an immutable :class:`equinox.Module` (a pytree: arrays are trainable leaves,
configuration is static). It maps an input of shape ``(T, N_in)`` or ``(B, T, N_in)`` to an output of
shape ``(T, N_out)`` or ``(B, T, N_out)``::

    output, new_state, record = module(x, state=None, record=False)

``new_state`` continues the run: ``module(x2, state=module(x1)[1])`` equals the second half of
``module(concat(x1, x2))``. ``record`` is a flat dict of per-step arrays keyed ``"<layer>/<quantity>"``
(``"1_LIF/vmem"``); for a single neuron layer the keys are just ``vmem``, ``isyn``, ``spikes``.

Internally modules work time-major (``(T, ..., N)``); :func:`evolve_time_major` is the single place where
batch-major input is converted, and :func:`scan_steps` is the single time loop (``jax.lax.scan``).

Validation happens once, at the boundary (the helpers of :mod:`pondlib.validate`), so the step functions
can trust their data:

* constructors check every parameter with :func:`as_param` / :func:`check_positive` and raise
  :class:`~pondlib.errors.GraphError` naming the parameter: sizes are whole numbers in ``[1, 2^24]`` (an
  integral float such as ``3.0`` is accepted; :data:`MAX_SIZE`), a weight matrix pondlib initialises at
  random holds at most :data:`MAX_PARAMETERS` elements (an allocation XLA cannot make aborts the process
  instead of raising), arrays are real, finite and within float32 (values beyond float32 would
  become ``inf``), parameters that are divided by or must decay (time constants, ``dt``, LIF thresholds)
  are at least the smallest normal float32 (``1.2e-38``; a subnormal would flush to 0);
* a call checks its input with :func:`check_input` and a state passed back with :func:`check_state`
  (:class:`~pondlib.errors.SimulationError`): ragged nesting, strings, objects and complex numbers are
  refused (the imaginary part is never dropped), as are NaN/inf, float64 beyond float32, integers beyond
  int32 (JAX would truncate them), a wrong rank, channel count or batch size, and an empty batch or time
  axis. Tolerated: bool, integer, float16/bfloat16 and float64 (within float32's range) input is
  converted to float32, the precision every module computes in;
* a concrete (eager) call whose output or final state is not finite -- an overflow of float32 from
  extreme but finite input or parameters -- raises ``SimulationError("non-finite output")`` instead of
  returning ``inf``/``NaN``.

Under :func:`jax.jit` / :func:`jax.grad` the arrays are tracers: their shapes and dtypes are checked, their
values cannot be (and are not: training pays nothing for the checks).

Example:
    >>> import numpy as np
    >>> from pondlib.nn import LIF
    >>> LIF(2)(np.array([[1.0, 2.0], [3.0]], dtype=object))
    Traceback (most recent call last):
    ...
    pondlib.errors.SimulationError: LIF: input dtype: got object, expected real numbers ...
    >>> LIF(2)(np.ones((3, 2)), state=LIF(2).init_state((4,)))
    Traceback (most recent call last):
    ...
    pondlib.errors.SimulationError: LIF: state shape: got state.isyn of shape (4, 2, 1), expected (2, 1) ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from pondlib.errors import GraphError, SimulationError
from pondlib.validate import F32_MAX, I32_MAX, I32_MIN, as_array, as_float_array, check_bool, check_int

__all__ = [
    "Module",
    "scan_steps",
    "as_input_array",
    "check_batch_shape",
    "check_input",
    "check_state",
    "check_output",
    "evolve_time_major",
    "as_param",
    "check_positive",
    "check_size",
    "check_parameter_count",
    "check_module",
    "is_traced",
    "F32_TINY",
    "MAX_SIZE",
    "MAX_PARAMETERS",
]

#: The smallest normal float32: positive parameters below it would flush to zero in float32.
F32_TINY = float(np.finfo(np.float32).tiny)
#: Largest size or count of a layer (2^24: float32 counts exactly up to it; no target holds more).
MAX_SIZE = 2**24
#: Largest randomly initialised weight matrix, in elements (2^28 float32 values: 1 GiB).
MAX_PARAMETERS = 2**28


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


def scan_steps(
    step: Callable[[Any, jax.Array], tuple[Any, Any]], state: Any, xs: Any, reverse: bool = False
) -> tuple[Any, Any]:
    """The one time loop: ``state, ys = lax.scan(step, state, xs)`` over the leading (time) axis."""
    return jax.lax.scan(step, state, xs, reverse=reverse)


# -- constructor checks -------------------------------------------------------------------------------
def is_traced(x: Any) -> bool:
    """True for a JAX tracer (inside ``jit``/``grad``/``vmap``): its values cannot be inspected."""
    return isinstance(x, jax.core.Tracer)


def _real_dtype(dtype: Any) -> bool:
    return any(jnp.issubdtype(dtype, t) for t in (jnp.floating, jnp.integer, jnp.bool_))


def check_size(value: Any, name: str, where: str, *, lo: int = 1) -> int:
    """A size or count as an ``int`` in ``[lo, MAX_SIZE]`` (an integral float such as ``3.0`` is accepted;
    ``2.5``, ``True``, strings, ``None`` and sizes beyond :data:`MAX_SIZE` are refused with
    :class:`~pondlib.errors.GraphError`).

    Example:
        >>> check_size(4.0, "n_in", "Linear")
        4
        >>> check_size(2.5, "n_in", "Linear")
        Traceback (most recent call last):
        ...
        pondlib.errors.GraphError: Linear: n_in: got 2.5, expected an integer in [1, 16777216]. Fix: pass a whole number
    """
    return check_int(value, name, lo=lo, hi=MAX_SIZE, where=where, error=GraphError)


def check_parameter_count(shape: tuple[int, ...], name: str, where: str) -> None:
    """GraphError when a weight matrix of ``shape`` that pondlib would allocate (a random initialisation)
    holds more than :data:`MAX_PARAMETERS` elements (XLA aborts the process instead of raising when an
    allocation fails).

    Example:
        >>> check_parameter_count((2**20, 2**20), "weight", "Linear")
        Traceback (most recent call last):
        ...
        pondlib.errors.GraphError: Linear: weight size: got 1099511627776 elements (shape (1048576, 1048576)), ...
    """
    count = int(np.prod(shape, dtype=object))
    if count > MAX_PARAMETERS:
        raise GraphError(
            f"{name} size",
            value=f"{count} elements (shape {tuple(shape)})",
            limit=f"at most {MAX_PARAMETERS} elements",
            where=where,
            fix="use smaller layers, or pass the weights explicitly",
        )


def as_param(value: Any, name: str, where: str) -> Any:
    """A parameter array as float64 numpy, checked: real numbers (not bool, complex, strings or objects),
    not ragged, not empty, finite and within float32. A tracer (a module built inside ``jit``) is returned as is
    after a dtype check; the caller checks shapes.

    Raises:
        GraphError: naming ``where``, the parameter and the first offending value.
    """
    if is_traced(value):
        if not _real_dtype(value.dtype):
            raise GraphError(name, value=f"dtype {value.dtype}", limit="real numbers", where=where)
        return value
    arr = as_array(value, name, where=where, error=GraphError, float32=True)
    if arr.dtype.kind == "b":
        raise GraphError(
            name,
            value=f"a bool {'array' if arr.ndim else 'value'}",
            limit="numbers",
            where=where,
            fix=f"pass {name} as numbers",
        )
    return as_float_array(arr, name, where=where, error=GraphError, float32=True)


def check_positive(arr: Any, name: str, where: str) -> Any:
    """``arr`` when every value is at least the smallest normal float32 (so ``> 0`` after the cast to
    float32); tracers pass unchecked.

    Example:
        >>> check_positive(np.array([0.02, 0.0]), "tau_mem", "LIF")
        Traceback (most recent call last):
        ...
        pondlib.errors.GraphError: LIF: tau_mem: got 0.0 at index (1,), expected a finite number > 0 ...
    """
    if is_traced(arr):
        return arr
    a = np.asarray(arr)
    bad = ~(a >= F32_TINY)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise GraphError(
            name,
            value=f"{a[idx]} at index {idx}" if idx else float(a),
            limit=f"a finite number > 0 (at least {F32_TINY:.3g}, the smallest normal float32)",
            where=where,
            fix=f"pass a positive {name}",
        )
    return arr


def check_module(value: Any, name: str, where: str) -> Any:
    """``value`` when it follows the :class:`Module` protocol (``size_in``, ``size_out``, ``init_state``,
    ``evolve_tm``, ``as_graph``); else a GraphError naming ``name`` and the type got."""
    if isinstance(value, type) or not isinstance(value, Module):
        shown = f"a {type(value).__name__}" + (f" ({value!r})" if isinstance(value, (str, int, float)) else "")
        raise GraphError(
            name,
            value=shown,
            limit="a pondlib.nn module",
            where=where,
            fix="pass module instances, e.g. Linear(4, 3, key=...) or LIF(3)",
        )
    return value


# -- call checks --------------------------------------------------------------------------------------
def check_batch_shape(batch_shape: Any, where: str) -> tuple[int, ...]:
    """The ``batch_shape`` of ``init_state``: a tuple (or list) of whole numbers >= 1, ``()`` for one
    sample (SimulationError otherwise).

    Example:
        >>> check_batch_shape([4], "LIF")
        (4,)
        >>> check_batch_shape(4, "LIF")
        Traceback (most recent call last):
        ...
        pondlib.errors.SimulationError: LIF: batch_shape: got a int, expected a tuple of ints. Fix: ...
    """
    if not isinstance(batch_shape, (tuple, list)):
        raise SimulationError(
            "batch_shape",
            value=f"a {type(batch_shape).__name__}",
            limit="a tuple of ints",
            where=where,
            fix="pass () for one sample or (B,) for a batch of B",
        )
    return tuple(check_int(b, "batch_shape", lo=1, where=where, error=SimulationError) for b in batch_shape)


def as_input_array(x: Any, where: str, name: str = "x") -> Any:
    """Arrays (numpy, JAX, tracers) unchanged; anything else converted by :func:`pondlib.validate.as_array`
    (ragged lists, strings, ``None``, objects, complex and non-finite values refused)."""
    if isinstance(x, (np.ndarray, jax.Array)):
        return x
    return as_array(x, name, where=where, error=SimulationError, allow_empty=True, float32=True, int32=True)


def _check_dtype(dtype: Any, what: str, where: str) -> None:
    if jnp.issubdtype(dtype, jnp.complexfloating):
        raise SimulationError(
            what,
            value=f"complex values (dtype {dtype})",
            limit="real numbers",
            where=where,
            fix="pass np.real(x) or np.abs(x) explicitly: the imaginary part is never dropped silently",
        )
    if not _real_dtype(dtype):
        raise SimulationError(
            what,
            value=str(dtype),
            limit="real numbers (a bool, integer or float array)",
            where=where,
            fix="pass spikes or currents as a float or integer array",
        )


def _check_values(xa: np.ndarray, what: str, where: str, name: str) -> None:
    """Finite, and within float32 / int32 when the dtype is wider (JAX computes in 32 bits)."""
    if xa.dtype.kind == "f" and xa.size:
        finite = np.isfinite(xa)
        if not finite.all():
            idx = tuple(int(i) for i in np.argwhere(~finite)[0])
            raise SimulationError(
                f"non-finite {what}",
                value=float(xa[idx]),
                limit="a finite number",
                where=f"{where}: {name}{list(idx)}",
                fix=f"remove NaN/inf from the {what}",
            )
    if xa.dtype.kind in "fiu" and xa.dtype.itemsize > 4 and xa.size:
        lo, hi = xa.min(), xa.max()
        if (xa.dtype.kind == "f" and max(-lo, hi) > F32_MAX) or (
            xa.dtype.kind in "iu" and (int(lo) < I32_MIN or int(hi) > I32_MAX)
        ):
            as_array(xa, name, where=where, error=SimulationError, allow_empty=True, float32=True, int32=True)


def check_input(x: Any, size_in: int, where: str) -> jax.Array:
    """Validate a network input: real numbers, (T, N_in) or (B, T, N_in), non-empty; return it as a
    float32 JAX array (bool, integer, float16/bfloat16 and float64 within float32's range are converted:
    every module computes in float32).

    Raises:
        SimulationError: ragged nesting, strings/objects, complex values, the wrong number of dimensions
            or channels, an empty batch or time axis, and (for concrete, non-traced input) NaN/inf,
            float64 beyond float32 or integers beyond int32, naming the first offending index.
    """
    x = as_input_array(x, where)
    _check_dtype(x.dtype, "input dtype", where)
    if x.ndim not in (2, 3):
        raise SimulationError(
            "input shape",
            value=tuple(x.shape),
            limit="(T, N_in) or (B, T, N_in)",
            where=where,
            fix="add or remove the batch dimension",
        )
    if x.shape[-1] != size_in:
        raise SimulationError(
            "input channels",
            value=int(x.shape[-1]),
            limit=size_in,
            where=where,
            fix=f"pass {size_in} input channels in the last axis",
        )
    if 0 in x.shape:
        raise SimulationError(
            "input shape",
            value=tuple(x.shape),
            limit="at least one time step (and one sample)",
            where=where,
            fix="pass a non-empty input",
        )
    if not is_traced(x):
        _check_values(np.asarray(x), "input", where, "x")
    x = jnp.asarray(x)
    return x if x.dtype == jnp.float32 else x.astype(jnp.float32)


def _plain(tree: Any) -> Any:
    """Tuples, lists and named tuples as plain tuples (a state may come back as any of them)."""
    if isinstance(tree, (list, tuple)):
        return tuple(_plain(t) for t in tree)
    if isinstance(tree, dict):
        return {k: _plain(v) for k, v in tree.items()}
    return tree


def _batch_axis(module: Any, batch_shape: tuple[int, ...], leaf_index: int) -> int:
    """The axis of a state leaf that holds the batch (where the shapes for B and B + 1 samples differ)."""
    a = jax.tree_util.tree_leaves(jax.eval_shape(lambda: module.init_state(batch_shape)))[leaf_index]
    b = jax.tree_util.tree_leaves(jax.eval_shape(lambda: module.init_state((batch_shape[0] + 1,))))[leaf_index]
    return next(i for i, (p, q) in enumerate(zip(a.shape, b.shape)) if p != q)


def check_state(module: Any, state: Any, batch_shape: tuple[int, ...], where: str) -> Any:
    """A state passed back to ``module``: the structure of ``module.init_state(batch_shape)`` (tuples,
    lists and named tuples are interchangeable), every leaf real and (when concrete) finite, of the
    batched shape or, for batched input, of the unbatched shape (broadcast over the batch). Returned with
    the template's structure and dtypes.

    Raises:
        SimulationError: naming the state leaf (``state[1].vmem``), what was got and what was expected.
    """
    template = jax.eval_shape(lambda: module.init_state(batch_shape))
    if jax.tree_util.tree_structure(_plain(state)) != jax.tree_util.tree_structure(_plain(template)):
        raise SimulationError(
            "state structure",
            value=str(jax.tree_util.tree_structure(state)),
            limit=str(jax.tree_util.tree_structure(template)),
            where=where,
            fix="pass the state returned by a previous call of this module, or None",
        )
    paths, treedef = jax.tree_util.tree_flatten_with_path(template)
    leaves = jax.tree_util.tree_leaves(_plain(state))
    unbatched = jax.tree_util.tree_leaves(jax.eval_shape(lambda: module.init_state(()))) if batch_shape else None
    out = []
    for i, ((path, want), s) in enumerate(zip(paths, leaves)):
        name = f"state{jax.tree_util.keystr(path)}"
        s = as_input_array(s, where, name)
        _check_dtype(s.dtype, f"{name} dtype", where)
        if not is_traced(s):
            _check_values(np.asarray(s), "state", where, name)
        if tuple(s.shape) != tuple(want.shape):
            if unbatched is not None and tuple(s.shape) == tuple(unbatched[i].shape):
                s = jnp.broadcast_to(jnp.expand_dims(jnp.asarray(s), _batch_axis(module, batch_shape, i)), want.shape)
            else:
                alt = f" or {unbatched[i].shape} (unbatched)" if unbatched is not None else ""
                raise SimulationError(
                    "state shape",
                    value=f"{name} of shape {tuple(s.shape)}",
                    limit=f"{tuple(want.shape)}{alt} for input with batch shape {batch_shape}",
                    where=where,
                    fix="pass the state returned by a call with the same batch size, or None",
                )
        out.append(jnp.asarray(s, dtype=want.dtype))
    return jax.tree_util.tree_unflatten(treedef, out)


def check_output(y: Any, state: Any, where: str) -> None:
    """Raise when a concrete output or final state holds NaN/inf (float32 overflow from extreme input or
    parameters, or parameters made non-finite after construction); tracers are not inspected."""
    for what, arr in [("output", y)] + [("state", s) for s in jax.tree_util.tree_leaves(state)]:
        if is_traced(arr):
            continue
        a = np.asarray(arr)
        if a.dtype.kind == "f" and a.size:
            finite = np.isfinite(a)
            if not finite.all():
                idx = tuple(int(i) for i in np.argwhere(~finite)[0])
                raise SimulationError(
                    f"non-finite {what}",
                    value=f"{a[idx]} at index {idx}",
                    limit="finite float32 values",
                    where=where,
                    fix="the input or the parameters overflow float32 (or a parameter is NaN): scale them down "
                    "and check the parameters",
                )


#: The batch splitter of plain calls, registered by :mod:`pondlib.nn.parallel` (which imports this
#: module, so the registration keeps the import one-way): ``splitter(module, x, state, record)`` returns
#: the result of the call with the batch split over every device, or None to run on one device here.
_BATCH_SPLITTER: list[Any] = []


def register_batch_splitter(splitter: Any) -> None:
    """Make ``splitter`` the batch splitter of plain calls on concrete batched input (see
    :func:`evolve_time_major`); :mod:`pondlib.nn.parallel` registers its own when imported."""
    _BATCH_SPLITTER[:] = [splitter]


def evolve_time_major(module: Any, x: Any, state: Any = None, record: bool = False):
    """Run ``module`` on batch-major input, converting to and from time-major once.

    Args:
        x: (T, N_in) or (B, T, N_in) (checked by :func:`check_input`).
        state: a previous state (unbatched states broadcast over the batch; checked by
            :func:`check_state`), or None for zeros.
        record: whether to return per-step internal states (a bool).

    Returns:
        ``(output, new_state, record_dict)`` with output (T, N_out) or (B, T, N_out) and record arrays
        (T, ...) or (B, T, ...).

    A concrete (not traced) batch is split over every JAX device when there are several (at least one
    sample each; :func:`pondlib.nn.parallel.sharded_call`, per-sample identical results); inside
    :func:`pondlib.nn.parallel.single_device` or under ``jax.jit`` the call runs on one device.
    """
    where = type(module).__name__
    record = check_bool(record, "record", where=where, error=SimulationError)
    x = check_input(x, module.size_in, where)
    batched = x.ndim == 3
    concrete = not is_traced(x)
    if batched and _BATCH_SPLITTER and concrete:
        result = _BATCH_SPLITTER[0](module, x, state, record)
        if result is not None:
            return result
    batch_shape = (x.shape[0],) if batched else ()
    # check_state rebuilds the state with the structure and dtypes of init_state: evolve_tm can trust it
    state = module.init_state(batch_shape) if state is None else check_state(module, state, batch_shape, where)
    # a plain call on concrete input runs compiled (one XLA program per module structure and shapes,
    # cached), not operation by operation: the same operations, several times faster
    y, new_state, rec = (_evolve_jit if concrete else _evolve)(module, x, state, record)
    check_output(y, new_state, where)
    return y, new_state, rec


def _evolve(module: Any, x: jax.Array, state: Any, record: bool) -> tuple[jax.Array, Any, dict]:
    """The checked call: batch-major in and out, time-major inside (``module.evolve_tm``)."""
    batched = x.ndim == 3
    xt = jnp.swapaxes(x, 0, 1) if batched else x
    y, new_state, rec = module.evolve_tm(xt, state, record)
    if batched:
        y = jnp.swapaxes(y, 0, 1)
        rec = {k: jnp.swapaxes(v, 0, 1) for k, v in rec.items()}
    return y, new_state, rec


_evolve_jit = eqx.filter_jit(_evolve)


def check_sizes(prev_out: int, next_in: int, where: str) -> None:
    """Raise GraphError when consecutive modules disagree on a size."""
    if prev_out != next_in:
        raise GraphError(
            "module sizes do not chain",
            value=next_in,
            limit=prev_out,
            where=where,
            fix="make each module's size_in equal the previous module's size_out",
        )
