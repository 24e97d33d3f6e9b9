r"""Data parallelism with JAX's own sharding: one batch split over every device, parameters replicated.

A run of a spiking network is independent per sample, so the batch axis is the natural one to split.
With :math:`D` devices in a 1-D :class:`jax.sharding.Mesh` over the axis ``"batch"``, an input
``x`` of shape (B, T, C) is placed with ``NamedSharding(mesh, P("batch"))``: device :math:`d` holds the
rows :math:`[dB/D, (d+1)B/D)`, i.e. (B/D, T, C). The parameters are placed with ``P()`` (a full copy on
every device). A jitted call on such arguments follows the data: XLA runs each device's rows on that
device, and a batch reduction in a loss, :math:`\tfrac1B\sum_b \ell_b = \tfrac1B\sum_d \sum_{b\in d}\ell_b`,
becomes per-device partial sums plus one all-reduce, so the gradients and hence the updated parameters
stay replicated. Nothing else changes: the same code runs on several CPU devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=2``), several GPUs, or several hosts after
``jax.distributed.initialize()`` (the mesh then spans ``jax.devices()``, every device of every process;
each process passes the same full batch and contributes the rows of its own devices).

Batches that do not divide. :func:`shard_batch` refuses a batch whose size is not a multiple of the
device count (a :class:`~pondlib.errors.PondError` naming both); :func:`pad_batch` pads it with zero
rows first and returns how many rows are real. :func:`sharded_call` does this for you and returns only
the real rows: padding is harmless there because samples never interact. Training cannot pad (zero
rows would change a mean loss), so :func:`pondlib.training.fit` uses the largest device count that
divides its batch size instead (or refuses, when the devices were named explicitly).

Every core of one CPU. XLA shows a CPU as one device, whose time loops run on one core; call
:func:`use_cpu_cores` right after ``import jax`` (before any JAX computation) to get one device per
core, and every entry point above splits its batch over them.

Turning it off. ``devices=1`` anywhere, or ``with single_device(): ...`` for the automatic choice
(``devices=None``) of every call inside the block.

Example:
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from pondlib import nn
    >>> from pondlib.nn import parallel
    >>> mesh = parallel.data_mesh()                # every device (one here unless XLA_FLAGS says more)
    >>> mesh.axis_names
    ('batch',)
    >>> xp, n = parallel.pad_batch(np.ones((3, 4, 2)), 2)   # 3 rows padded to a multiple of 2
    >>> xp.shape, n
    ((4, 4, 2), 3)
    >>> net = nn.Sequential(nn.Linear(2, 3, key=jax.random.PRNGKey(0)), nn.LIF(3))
    >>> out, state, rec = parallel.sharded_call(net, np.ones((5, 10, 2)), record=True)
    >>> out.shape, rec["1_LIF/vmem"].shape
    ((5, 10, 3), (5, 10, 3))
    >>> bool(jnp.all(out == net(np.ones((5, 10, 2)))[0]))
    True
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from pondlib.errors import DistributedError, PondError
from pondlib.nn.base import register_batch_splitter
from pondlib.validate import check_bool, check_int

__all__ = [
    "AXIS",
    "devices",
    "data_mesh",
    "pad_batch",
    "shard_batch",
    "replicate",
    "gather",
    "sharded_call",
    "split_call",
    "single_device",
    "auto_enabled",
    "use_cpu_cores",
    "peer_failures",
]

#: The name of the mesh axis the batch is split over.
AXIS = "batch"

_AUTO = contextvars.ContextVar("pondlib_parallel_auto", default=True)

_DEVICES_FIX = "pass None (every device), a device count 1..jax.device_count(), a list of jax devices or a 1-D Mesh"


def auto_enabled() -> bool:
    """Whether ``devices=None`` means every device (True) or one device (inside :func:`single_device`)."""
    return _AUTO.get()


@contextlib.contextmanager
def single_device() -> Iterator[None]:
    """Within the block, ``devices=None`` (the default of every pondlib entry point) means one device.

    Example:
        >>> with single_device():
        ...     len(devices())
        1
    """
    token = _AUTO.set(False)
    try:
        yield
    finally:
        _AUTO.reset(token)


def devices(devices: Any = None, *, where: str = "devices") -> list[Any]:
    r"""The devices a data-parallel run uses.

    Args:
        devices: ``None``: every device of every process (``jax.devices()``), or only the first inside
            :func:`single_device`; an int ``n``: the first ``n`` of ``jax.devices()`` (``1`` turns
            sharding off); a non-empty sequence of distinct ``jax.Device`` objects; or a 1-D
            :class:`~jax.sharding.Mesh` over the axis ``"batch"`` (its devices, in order).
        where: the entry point named in errors.

    Returns:
        A list of ``jax.Device`` (length :math:`D \ge 1`).

    Raises:
        PondError: a count that is not a whole number in ``1..jax.device_count()`` (bool, float 2.5,
            strings ...), an empty sequence, an element that is not a jax device, a repeated device, or a
            mesh that is not 1-D over ``"batch"``.

    Example:
        >>> len(devices(1))
        1
        >>> devices(0)
        Traceback (most recent call last):
        ...
        pondlib.errors.PondError: devices: devices: got 0, expected an integer in [1, ...]. Fix: ...
    """
    return _resolve(devices, where)


def _resolve(devices: Any, where: str) -> list[Any]:
    available = jax.devices()
    if devices is None:
        return list(available) if auto_enabled() else [available[0]]
    if isinstance(devices, Mesh):
        if tuple(devices.axis_names) != (AXIS,):
            raise PondError(
                "devices mesh axes",
                value=tuple(devices.axis_names),
                limit=f"('{AXIS}',)",
                where=where,
                fix="build the mesh with pondlib.nn.parallel.data_mesh(...)",
            )
        return list(devices.devices.flat)
    if isinstance(devices, (list, tuple)):
        if not devices:
            raise PondError(
                "devices", value="an empty sequence", limit="at least one device", where=where, fix=_DEVICES_FIX
            )
        for i, d in enumerate(devices):
            if not isinstance(d, jax.Device):
                raise PondError(
                    f"devices[{i}]", value=f"a {type(d).__name__}", limit="a jax.Device", where=where, fix=_DEVICES_FIX
                )
        if len(set(devices)) != len(devices):
            raise PondError(
                "devices", value="a repeated device", limit="distinct devices", where=where, fix=_DEVICES_FIX
            )
        return list(devices)
    n = check_int(devices, "devices", lo=1, hi=len(available), where=where, fix=_DEVICES_FIX)
    return list(available[:n])


def use_cpu_cores(n: Any = None) -> int:
    """Expose ``n`` CPU devices to JAX (default: one per core, ``os.cpu_count()``), so that plain calls,
    :func:`sharded_call`, ``fit``, ``evaluate`` and ``predict`` split each batch over every core.

    It sets JAX's ``jax_num_cpu_devices``, which only takes effect before JAX runs its first
    operation: call it right after ``import jax`` (the same as starting Python with
    ``XLA_FLAGS=--xla_force_host_platform_device_count=n``). Returns ``n``.

    Raises:
        PondError: ``n`` not an integer in ``1..4096``, or JAX has already run an operation (the fix says
            where to call it).
    """
    import os

    n = (os.cpu_count() or 1) if n is None else check_int(n, "n", lo=1, hi=4096, where="use_cpu_cores")
    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError:
        raise PondError(
            "JAX has already started its devices",
            value=f"{jax.device_count()} device(s)",
            where="use_cpu_cores",
            fix="call use_cpu_cores() right after `import jax`, before any JAX operation, or start Python "
            f"with XLA_FLAGS=--xla_force_host_platform_device_count={n}",
        ) from None
    return n


def data_mesh(devices: Any = None, *, where: str = "data_mesh") -> Mesh:
    """A 1-D :class:`~jax.sharding.Mesh` over the axis ``"batch"`` (devices as :func:`devices` reads them).

    Example:
        >>> dict(data_mesh(1).shape)
        {'batch': 1}
    """
    if isinstance(devices, Mesh):
        _resolve(devices, where)  # checks its axes
        return devices
    return Mesh(np.asarray(_resolve(devices, where), dtype=object), (AXIS,))


def _check_mesh(mesh: Any, where: str) -> Mesh:
    if not isinstance(mesh, Mesh):
        raise PondError(
            "mesh",
            value=f"a {type(mesh).__name__}",
            limit="a jax.sharding.Mesh",
            where=where,
            fix="pass data_mesh(...)",
        )
    _resolve(mesh, where)
    return mesh


def pad_batch(x: Any, multiple: int) -> tuple[np.ndarray | jax.Array, int]:
    r"""Zero rows appended on axis 0 up to the next multiple of ``multiple``: ``(padded, n_real)``.

    The padded batch has :math:`\lceil B / m \rceil m` rows; rows ``n_real:`` are zeros of x's dtype.

    Raises:
        PondError: ``multiple`` not a whole number >= 1; ``x`` without a batch axis (a scalar).

    Example:
        >>> p, n = pad_batch(np.ones((5, 2)), 4)
        >>> p.shape, n, float(p[5:].sum())
        ((8, 2), 5, 0.0)
    """
    multiple = check_int(multiple, "multiple", lo=1, where="pad_batch", fix="pass the device count")
    if getattr(x, "ndim", 0) < 1:
        raise PondError(
            "x", value=f"a {type(x).__name__} of no axes", limit="an array with a batch axis 0", where="pad_batch"
        )
    n = int(x.shape[0])
    extra = -n % multiple
    if not extra:
        return x, n
    lib = jnp if isinstance(x, jax.Array) else np
    return lib.concatenate([x, lib.zeros((extra,) + tuple(x.shape[1:]), x.dtype)]), n


def _on_host(arr: Any) -> Any:
    """``arr`` as a read-only numpy view when it is a JAX array held by CPU devices, else ``arr``.

    Placing a CPU-held JAX array with a new sharding copies it shard by shard (~2.5 ms for the
    13 MB batch of ``benchmarks/scaling.py`` on two host devices); placing the numpy view of the same
    buffer lets each CPU device use its contiguous rows where they are (~0.06 ms). JAX arrays are
    immutable, so the view is never written.
    """
    if isinstance(arr, jax.Array) and arr.is_fully_addressable and all(d.platform == "cpu" for d in arr.devices()):
        return np.asarray(arr)
    return arr


def _put(arr: Any, sharding: NamedSharding) -> Any:
    """``arr`` (an array or a list of arrays) placed with ``sharding``; across processes every process
    passes the same full arrays."""
    if isinstance(arr, list):
        if jax.process_count() == 1:
            return jax.device_put([_on_host(a) for a in arr], sharding)
        return [_put(a, sharding) for a in arr]
    if jax.process_count() == 1:
        return jax.device_put(_on_host(arr), sharding)
    host = np.asarray(arr)
    return jax.make_array_from_callback(host.shape, sharding, lambda idx: host[idx])


def shard_batch(x: Any, mesh: Any) -> jax.Array:
    """``x`` split on axis 0 over the mesh (``NamedSharding(mesh, P("batch"))``).

    Args:
        x: an array (B, ...) with B a multiple of the device count D (see :func:`pad_batch`).
        mesh: a mesh from :func:`data_mesh`.

    Returns:
        A global array of shape (B, ...) of which each device holds (B/D, ...).

    Raises:
        PondError: ``mesh`` not a 1-D mesh over ``"batch"``; ``x`` not an array with a batch axis, or B not a
            multiple of D.

    Example:
        >>> tuple(shard_batch(np.ones((4, 3)), data_mesh(1)).sharding.spec)
        ('batch',)
    """
    mesh = _check_mesh(mesh, "shard_batch")
    d = mesh.devices.size
    if getattr(x, "ndim", 0) < 1:
        raise PondError(
            "x", value=f"a {type(x).__name__} of no axes", limit="an array with a batch axis 0", where="shard_batch"
        )
    if x.shape[0] % d:
        raise PondError(
            "batch size",
            value=f"{x.shape[0]} (x of shape {tuple(x.shape)})",
            limit=f"a multiple of the {d} devices",
            where="shard_batch",
            fix="pad it first with pad_batch(x, mesh.size) and drop the padded rows after, or use sharded_call",
        )
    return _put(x, NamedSharding(mesh, PartitionSpec(AXIS)))


def replicate(tree: Any, mesh: Any) -> Any:
    """Every array leaf of ``tree`` copied to every device of ``mesh`` (``NamedSharding(mesh, P())``);
    other leaves (ints, strings, functions of an equinox module) are left as they are.

    Example:
        >>> w = replicate({"w": jnp.ones(3), "name": "lif"}, data_mesh(1))
        >>> w["w"].sharding.is_fully_replicated, w["name"]
        (True, 'lif')
    """
    mesh = _check_mesh(mesh, "replicate")
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    where = [i for i, v in enumerate(leaves) if eqx.is_array(v)]
    placed = _put([leaves[i] for i in where], NamedSharding(mesh, PartitionSpec()))  # one transfer call
    for i, v in zip(where, placed, strict=True):
        leaves[i] = v
    return jax.tree_util.tree_unflatten(treedef, leaves)


def gather(x: jax.Array) -> np.ndarray:
    """A (sharded) array as one numpy array on this host; across processes every process gets it all.

    Example:
        >>> gather(shard_batch(np.arange(4.0), data_mesh(1))).tolist()
        [0.0, 1.0, 2.0, 3.0]
    """
    if not isinstance(x, jax.Array) or x.is_fully_addressable:
        return np.asarray(x)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(x, tiled=True))


def split_call(net: Any, x: jax.Array, state: Any = None, record: bool = False, *, mesh: Mesh) -> tuple:
    r"""``net(x, state, record)`` run as :math:`D` independent calls on the (B/D, T, C) row blocks of ``x``,
    one per device of ``mesh`` (``jax.shard_map``); for use inside ``jax.jit`` / ``jax.grad``.

    Each device runs exactly the computation of a plain call on its rows, so no cross-device traffic
    happens in the forward pass. Under ``jax.grad`` the cotangents of the replicated parameters are
    summed over the devices (one all-reduce), which is what data-parallel training needs. Inputs are
    not validated here (the callers check them at their boundary).

    Args:
        net: a ``pondlib.nn`` module (array leaves replicated: ``P()``).
        x: (B, T, C) with B a multiple of D (``P("batch")``).
        state: None or a batched state whose leaves have B rows.
        record: return the record dict too (static).
        mesh: a 1-D mesh from :func:`data_mesh`.

    Returns:
        ``(output, state, record)`` whose leaves are split over the devices on axis 0.

    Example:
        >>> from pondlib import nn
        >>> net = nn.LIF(2)
        >>> y, _, _ = jax.jit(lambda n, x: split_call(n, x, mesh=data_mesh(1)))(net, jnp.ones((2, 3, 2)))
        >>> y.shape
        (2, 3, 2)
    """
    params, static = eqx.partition(net, eqx.is_array)
    spec = PartitionSpec(AXIS)

    def local(p: Any, xb: jax.Array, sb: Any) -> tuple:
        return eqx.combine(p, static)(xb, state=sb, record=record)

    run = jax.shard_map(local, mesh=mesh, in_specs=(PartitionSpec(), spec, spec), out_specs=spec, check_vma=False)
    return run(params, x, state)


@eqx.filter_jit
def _call(net: Any, x: jax.Array, state: Any, record: bool, mesh: Mesh) -> tuple[Any, Any, Any]:
    return split_call(net, x, state, record, mesh=mesh)


def sharded_call(net: Any, x: Any, state: Any = None, record: bool = False, *, devices: Any = None):
    """``net(x, state, record)`` with the batch split over devices; the same result as the plain call.

    Args:
        net: a ``pondlib.nn`` module (its arrays are replicated on every device).
        x: batched input (B, T, C) (checked as a plain call checks it). B need not divide the device count:
            zero rows are appended to the next multiple and dropped from every result.
        state: an optional batched state, as for ``net(x, state=...)`` (split like x).
        record: return the per-step record dict too.
        devices: as :func:`devices` (default: every device; ``1`` runs the plain jitted call).

    Returns:
        ``(output (B, T, N_out), state, record)`` as ``net(x, state, record)``, sharded over the devices.

    Raises:
        SimulationError: what the plain call raises on bad input, state or a non-finite output.
        PondError: a bad ``devices`` argument; input without a batch axis (use the plain call for (T, C)).
    """
    from pondlib.nn.base import check_input

    where = f"sharded_call({type(net).__name__})"
    size_in = getattr(net, "size_in", None)
    if not isinstance(net, eqx.Module) or size_in is None:
        raise PondError(
            "net",
            value=f"a {type(net).__name__}",
            limit="a pondlib.nn module",
            where="sharded_call",
            fix="pass a network built from pondlib.nn modules",
        )
    devs = _resolve(devices, "sharded_call")
    record = check_bool(record, "record", where="sharded_call")
    x = check_input(x, size_in, where)
    if x.ndim != 3:
        raise PondError(
            "input shape",
            value=tuple(x.shape),
            limit="(B, T, C): a batch axis to split",
            where="sharded_call",
            fix="add a batch axis (x[None]) or call the network directly",
        )
    return _run_split(net, x, state, record, devs, where)


def _run_split(net: Any, x: jax.Array, state: Any, record: bool, devs: list[Any], where: str) -> tuple:
    """The work of :func:`sharded_call` on a checked batched input ``x`` (B, T, C): check the state, pad
    the batch to a multiple of the devices, place it, run, drop the padding, check the output."""
    from pondlib.nn.base import check_output, check_state

    b = x.shape[0]
    if state is not None:
        state = check_state(net, state, (b,), where)
    mesh = data_mesh(devs)
    d = len(devs)
    xp, _ = pad_batch(x, d)
    xs = shard_batch(xp, mesh)
    if state is not None:
        batched = NamedSharding(mesh, PartitionSpec(AXIS))
        state = jax.tree_util.tree_map(lambda s: _put(pad_batch(s, d)[0], batched), state)
    out, new_state, rec = _call(replicate(net, mesh), xs, state, record, mesh)
    if xp.shape[0] != b:
        out, new_state, rec = jax.tree_util.tree_map(lambda a: a[:b], (out, new_state, rec))
    if out.is_fully_addressable:
        check_output(out, new_state, where)
    return out, new_state, rec


def _split_plain_call(module: Any, x: jax.Array, state: Any, record: bool) -> tuple | None:
    """The batch splitter of plain calls (:func:`pondlib.nn.base.register_batch_splitter`): every device
    when there are several, automatic mode is on and each gets at least one sample; else None. The call
    has checked ``x`` (and ``record``) already; the state is checked here, as in :func:`sharded_call`."""
    if not auto_enabled():
        return None
    devs = jax.devices()
    if len(devs) < 2 or x.shape[0] < len(devs):
        return None
    return _run_split(module, x, state, record, devs, type(module).__name__)  # x is checked already


register_batch_splitter(_split_plain_call)


#: what a collective's error says when a peer process is gone (gloo on CPUs, NCCL on GPUs, JAX's coordinator)
_PEER_GONE = re.compile(r"Gloo|NCCL|Connection (closed|reset|refused)|heartbeat|coordination service", re.I)


@contextlib.contextmanager
def peer_failures(where: str) -> Iterator[None]:
    """Inside the block, a JAX runtime error of a multi-process run (``jax.process_count() > 1``) is raised as a
    :class:`~pondlib.errors.DistributedError`: a collective (the gradient all-reduce, the gather of
    predictions) fails at once when another process stopped and closed its connections. One-process runs
    are untouched.

    Example:
        >>> with peer_failures("fit"):
        ...     pass
    """
    try:
        yield
    except (jax.errors.JaxRuntimeError, RuntimeError, ValueError) as err:  # jax re-raises some as ValueError
        collective = isinstance(err, jax.errors.JaxRuntimeError) or _PEER_GONE.search(str(err))
        if isinstance(err, PondError) or jax.process_count() == 1 or not collective:
            raise
        first = str(err).splitlines()[0][:300] if str(err) else type(err).__name__
        raise DistributedError(
            "another process stopped under a collective",
            value=first,
            limit=f"all {jax.process_count()} processes running",
            where=f"{where}, process {jax.process_index()}",
            fix="see the other processes' logs for the first error; restart every process",
        ) from err
