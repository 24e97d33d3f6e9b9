r"""Straight-through estimators: the chip's rounding, flooring and saturation in a forward pass that
still passes gradients.

Each function computes :math:`f(x)` forward and has the identity as its derivative,
:math:`\partial f / \partial x := 1`, written as :math:`x + \mathrm{stop\_gradient}(f(x) - x)`. The
device-aware twins (``pondlib.devices.<chip>.aware``) build their integer arithmetic from them.

Example:
    >>> import jax, jax.numpy as jnp
    >>> float(jax.grad(lambda v: round_ste(v * 3.0))(jnp.array(0.4)))
    3.0
    >>> float(clip_ste(jnp.array(5.0), -1.0, 1.0)), float(jax.grad(lambda v: clip_ste(v, -1.0, 1.0))(5.0))
    (1.0, 1.0)
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["round_ste", "floor_ste", "clip_ste"]


def round_ste(x: jax.Array) -> jax.Array:
    """``round(x)`` (half to even) forward, identity gradient."""
    return x + jax.lax.stop_gradient(jnp.round(x) - x)


def floor_ste(x: jax.Array) -> jax.Array:
    """``floor(x)`` forward, identity gradient."""
    return x + jax.lax.stop_gradient(jnp.floor(x) - x)


def clip_ste(x: jax.Array, lo: Any, hi: Any) -> jax.Array:
    """``clip(x, lo, hi)`` forward, identity gradient (saturation that still lets gradients pass)."""
    return x + jax.lax.stop_gradient(jnp.clip(x, lo, hi) - x)
