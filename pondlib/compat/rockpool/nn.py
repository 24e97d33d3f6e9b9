"""Rockpool's module call styles on :mod:`pondlib.nn`: ``Linear((2, 3), has_bias=True)``,
``LIF(4, has_rec=True)`` without a key, and ``Sequential`` records nested per module
(``rec["1_LIF"]["spikes"]``).

Rockpool draws initial weights from its own random state; here a module built without ``key`` uses
``jax.random.PRNGKey(0)`` (reproducible; pass ``key=`` for another draw). Unknown keyword arguments are
refused by name (:class:`~pondlib.errors.GraphError`), as pondlib's own modules do.

Example:
    >>> import numpy as np
    >>> net = Sequential(Linear((2, 3), has_bias=True), LIF(3, has_rec=True))
    >>> out, state, rec = net(np.ones((4, 2), np.float32), record=True)
    >>> sorted(rec["1_LIF"]), rec["1_LIF"]["spikes"].shape, rec["1_LIF/spikes"].shape
    (['isyn', 'spikes', 'vmem'], (4, 3), (4, 3))
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax

from pondlib import nn as _nn
from pondlib.errors import GraphError
from pondlib.validate import check_bool

__all__ = ["Linear", "LIF", "Sequential", "NestedRecord", "RecordNesting"]

_DEFAULT_KEY = 0


def _key(key: Any) -> Any:
    return jax.random.PRNGKey(_DEFAULT_KEY) if key is None else key


def _shape2(shape: Any, where: str) -> tuple[Any, Any]:
    """Rockpool's ``shape``: ``(N_in, N_out)`` or one ``N`` (square)."""
    if isinstance(shape, (tuple, list)):
        if len(shape) == 2:
            return shape[0], shape[1]
        if len(shape) == 1:
            return shape[0], shape[0]
        raise GraphError("shape", value=tuple(shape), limit="(N_in, N_out) or N", where=where, fix="pass (N_in, N_out)")
    return shape, shape


def Linear(shape: Any, weight: Any = None, bias: Any = None, has_bias: bool = False, *, key: Any = None) -> Any:
    """Rockpool's ``Linear(shape, weight=None, bias=None, has_bias=False)`` as a :class:`pondlib.nn.Linear`
    (``weight`` (N_in, N_out); ``has_bias`` without ``bias``: pondlib's zero initial bias)."""
    n_in, n_out = _shape2(shape, "Linear")
    has_bias = check_bool(has_bias, "has_bias", where="Linear", error=GraphError)
    b = bias if bias is not None else bool(has_bias)
    return _nn.Linear(n_in, n_out, weight=weight, bias=b, key=None if weight is not None else _key(key))


def LIF(
    shape: Any,
    tau_mem: Any = 0.02,
    tau_syn: Any = 0.02,
    bias: Any = 0.0,
    threshold: Any = 1.0,
    has_rec: bool = False,
    w_rec: Any = None,
    dt: float = 1e-3,
    *,
    key: Any = None,
) -> Any:
    """Rockpool's ``LIF(shape, tau_mem, tau_syn, bias, threshold, has_rec, w_rec, dt)`` as a
    :class:`pondlib.nn.LIF` (a recurrent one without ``w_rec`` draws it from ``key``)."""
    return _nn.LIF(
        shape,
        tau_mem=tau_mem,
        tau_syn=tau_syn,
        bias=bias,
        threshold=threshold,
        has_rec=has_rec,
        w_rec=w_rec,
        dt=dt,
        key=_key(key) if w_rec is None else None,
    )


class NestedRecord(dict):
    """A record as Rockpool nests it: ``rec["1_LIF"]["spikes"]``; pondlib's flat key
    ``rec["1_LIF/spikes"]`` reads the same array."""

    def __init__(self, flat: dict[str, Any]) -> None:
        super().__init__()
        for key, value in flat.items():
            parts = key.split("/")
            node = self
            for p in parts[:-1]:
                node = dict.setdefault(node, p, {})
            dict.__setitem__(node, parts[-1], value)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str) and "/" in key and not dict.__contains__(self, key):
            node: Any = self
            for p in key.split("/"):
                node = dict.__getitem__(node, p)
            return node
        return dict.__getitem__(self, key)


class RecordNesting(eqx.Module):
    """A pondlib module whose record comes back as a :class:`NestedRecord` (everything else is the
    module's own: ``as_graph``, ``evolve_tm``, states)."""

    module: Any

    @property
    def size_in(self) -> int:
        return self.module.size_in

    @property
    def size_out(self) -> int:
        return self.module.size_out

    def init_state(self, batch_shape: tuple[int, ...] = ()) -> Any:
        return self.module.init_state(batch_shape)

    def evolve_tm(self, x: Any, state: Any, record: bool):
        return self.module.evolve_tm(x, state, record)

    def __call__(self, x: Any, state: Any = None, record: bool = False):
        """``(output, state, record)`` of the module, the record nested per module."""
        out, st, rec = self.module(x, state, record)
        return out, st, NestedRecord(rec) if record else rec

    def as_graph(self, name: str | None = None):
        return self.module.as_graph(name)


def Sequential(*modules: Any) -> RecordNesting:
    """Rockpool's ``Sequential(*modules)``: :class:`pondlib.nn.Sequential` with nested records."""
    return RecordNesting(_nn.Sequential(*modules))
