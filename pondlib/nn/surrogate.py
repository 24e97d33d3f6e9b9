"""Spike functions with surrogate gradients.

The forward pass is exact: a neuron with membrane ``v`` and threshold ``theta > 0`` emits

.. math::  s = \\min(\\lfloor v / \\theta \\rfloor, s_{max}) \\; \\text{if } v \\ge \\theta, \\text{ else } 0

spikes per step. The backward pass replaces ``ds/du`` (``u = v / theta``), which is zero almost
everywhere, by a surrogate ``g(u)``:

- below threshold (``u < 1``) a bump centred on the threshold, of width ``1 / scale``:

  * ``fast_sigmoid``: ``g = 1 / (1 + scale |u - 1|)^2``
  * ``triangle``:     ``g = max(0, 1 - scale |u - 1|)``
  * ``arctan``:       ``g = 1 / (1 + (pi * scale * (u - 1))^2)``

- at and above threshold, ``g = 1`` while the count is below the cap (``u < s_max + 1``) and 0 above,
  the slope of the multi-spike staircase.

Gradients reach ``v`` and ``theta`` through ``du = dv / theta - v dtheta / theta^2``.

Example:
    >>> import jax, jax.numpy as jnp
    >>> sg = Surrogate("fast_sigmoid", scale=10.0)
    >>> sg.spikes(jnp.array([0.5, 1.0, 2.7, 40.0]), jnp.ones(4), 31.0).tolist()
    [0.0, 1.0, 2.0, 31.0]
    >>> round(float(jax.grad(lambda v: sg.spikes(v, jnp.array(1.0), 31.0))(jnp.array(0.9))), 4)
    0.25
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from pondlib.errors import GraphError
from pondlib.validate import check_choice, check_float

__all__ = ["Surrogate", "spike_count"]

_KINDS = ("fast_sigmoid", "triangle", "arctan")
_SCALE_MIN, _SCALE_MAX = float(np.finfo(np.float32).tiny), 1e30


@dataclass(frozen=True)
class Surrogate:
    """A surrogate gradient for the multi-spike threshold function (hashable, used as static data).

    Args:
        kind: ``"fast_sigmoid"`` (default), ``"triangle"`` or ``"arctan"``.
        scale: sharpness of the sub-threshold bump (larger is narrower), dimensionless, a finite number in
            ``[1.2e-38, 1e30]`` (below, float32 would flush it to 0; above, ``pi * scale * 0`` could be
            ``inf * 0 = NaN`` in float32). Stored as a Python float.

    Raises:
        GraphError: an unknown ``kind`` or a ``scale`` outside that range (NaN, inf, <= 0, strings, ...).
    """

    kind: str = "fast_sigmoid"
    scale: float = 10.0

    def __post_init__(self) -> None:
        check_choice(
            self.kind,
            "surrogate kind",
            _KINDS,
            where="Surrogate",
            error=GraphError,
            fix="pick one of the listed surrogates",
        )
        scale = check_float(
            self.scale,
            "surrogate scale",
            lo=_SCALE_MIN,
            hi=_SCALE_MAX,
            where="Surrogate",
            error=GraphError,
            fix="pass a positive scale, e.g. 10",
        )
        object.__setattr__(self, "scale", scale)

    def derivative(self, u: jax.Array, cap: float) -> jax.Array:
        """Surrogate ``ds/du`` at ``u = v / theta`` (see the module docstring)."""
        d = u - 1.0
        if self.kind == "fast_sigmoid":
            below = 1.0 / (1.0 + self.scale * jnp.abs(d)) ** 2
        elif self.kind == "triangle":
            below = jnp.maximum(0.0, 1.0 - self.scale * jnp.abs(d))
        else:
            below = 1.0 / (1.0 + (jnp.pi * self.scale * d) ** 2)
        above = jnp.where(u < cap + 1.0, 1.0, 0.0)
        return jnp.where(u < 1.0, below, above)

    def spikes(self, v: jax.Array, threshold: jax.Array, cap: float) -> jax.Array:
        """Spike counts ``min(floor(v / threshold), cap)`` where ``v >= threshold``, else 0."""
        return spike_count(v, threshold, float(cap), self)


@partial(jax.custom_jvp, nondiff_argnums=(2, 3))
def spike_count(v: jax.Array, threshold: jax.Array, cap: float, surrogate: Surrogate) -> jax.Array:
    """Multi-spike threshold with a surrogate derivative; ``v`` and ``threshold`` broadcast together."""
    u = v / threshold
    return jnp.where(v >= threshold, jnp.clip(jnp.floor(u), 0.0, cap), 0.0).astype(v.dtype)


@spike_count.defjvp
def _spike_count_jvp(cap, surrogate, primals, tangents):
    v, threshold = primals
    dv, dthreshold = tangents
    out = spike_count(v, threshold, cap, surrogate)
    u = v / threshold
    du = dv / threshold - v * dthreshold / threshold**2
    return out, (surrogate.derivative(u, cap) * du).astype(out.dtype)
