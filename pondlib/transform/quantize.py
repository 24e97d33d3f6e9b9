r"""Quantizers of float device specifications, found through the device registry.

A device whose mapper produces a float specification (chip layout, float values) names its quantizer
methods (:attr:`~pondlib.devices.core.device.Device.quantize_methods`); the functions here find the
device a specification belongs to and call its quantizer. On the chips of pondlib today that is Xylo,
whose two methods scale each layer so that its largest weight magnitude lands on the largest integer
weight, then round (half to even) and clip:

.. math::

    s = \frac{2^{b-1} - 1}{\max |W|}, \qquad
    W_q = \mathrm{clip}(\mathrm{rint}(s W), -2^{b-1}, 2^{b-1} - 1), \qquad
    \theta_q = \mathrm{clip}(\mathrm{rint}(s \theta), -2^{15}, 2^{15} - 1)

with one scale per layer (:func:`global_quantize`) or per post-synaptic neuron (:func:`channel_quantize`),
lowered where needed so that every threshold and bias fits its integer range,
``s = min((2^{b-1} - 1) / max|W|, (2^{15} - 1) / max(|\theta|, |b|))``: a threshold is never capped alone
(weights and thresholds shrink together and the report names the weight resolution given up,
``quantization.resolution_lost``, in bits); each device documents its own
(``pondlib.devices.<chip>.quantize``; Xylo's global method also counts a bias larger than every weight
in ``max|W|``, as Rockpool does). Devices whose mappers quantize
themselves have no such methods.

Rockpool's calling convention works too: ``channel_quantize(**spec)`` (the fields as keywords) or a plain
mapping; the device is then the one device with that quantizer method, or, where several have it, the
one whose specification has every given field.

Example:
    >>> import numpy as np
    >>> from pondlib.devices.xylo.specification import Specification
    >>> spec = Specification.zeros(n_in=2, n_hidden=2, n_output=1)
    >>> spec = spec.replace(weights_in=np.array([[[0.5], [-0.25]], [[0.1], [1.0]]]),
    ...                     weights_out=np.array([[2.0], [-1.0]]), threshold=np.array([1.0, 1.0]),
    ...                     threshold_out=np.array([1.0]))
    >>> channel_quantize(spec).weights_in[..., 0].tolist()
    [[127, -32], [25, 127]]
    >>> quantize(spec, "global").threshold.tolist()
    [127, 127]
    >>> global_quantize(**spec).weights_in.tolist() == quantize(spec, "global").weights_in.tolist()
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pondlib.devices import registry
from pondlib.errors import QuantizationError

__all__ = ["quantize", "global_quantize", "channel_quantize"]


def _device_for(spec: Any, fields: Mapping[str, Any], method: str) -> Any:
    """The device whose quantizer takes ``spec`` (or the keyword ``fields``) with ``method``."""
    owner = registry.owner_of(spec)
    if owner is not None:
        if method not in owner.quantize_methods:
            raise QuantizationError(
                "quantizer method",
                value=method,
                limit=", ".join(owner.quantize_methods) or f"none: the {owner.name} mapper quantizes itself",
                where=f"{owner.name} quantize",
                fix=f"use the {owner.name} mapper's integer specification as it is"
                if not owner.quantize_methods
                else "pass one of the listed methods",
            )
        return owner
    keys = set(fields) | (set(spec) if isinstance(spec, Mapping) else set())
    candidates = [d for d in registry.devices() if method in d.quantize_methods]
    if len(candidates) == 1:  # the one quantizer checks its input itself (and names what is wrong)
        return candidates[0]
    matching = [d for d in candidates if keys and keys <= set(d.specification_fields())]
    if len(matching) == 1:
        return matching[0]
    what = type(spec).__name__ if spec is not None else f"keyword fields {sorted(fields)[:6]}"
    raise QuantizationError(
        "quantizer input",
        value=what,
        limit="a float specification of " + (", ".join(d.name for d in candidates) or "a device with a quantizer"),
        where=f"{method}_quantize",
        fix="pass the float specification a device mapper returned (pondlib.devices.<chip>.mapper(graph))",
    )


def quantize(spec: Any = None, method: str = "channel", /, **options: Any) -> Any:
    """``spec`` quantized by its device's ``method`` (``options`` go to the device's quantizer).

    Args:
        spec: a float specification from a device mapper (not modified), a mapping of its fields, or
            None with the fields as keyword ``options`` (Rockpool's style).
        method: the device's quantizer method (Xylo: ``"global"`` or ``"channel"``).

    Raises:
        QuantizationError: no registered device takes ``spec`` with ``method``, or what the device's
            quantizer raises (NaN, subnormal values, a scale that would overflow, unknown fields, ...).
    """
    device = _device_for(spec, options, method)
    return device.quantize(spec, method, **options)


def global_quantize(spec: Any = None, /, **options: Any) -> Any:
    """:func:`quantize` with ``"global"``: one weight scale per layer (Xylo: see
    :func:`pondlib.devices.xylo.quantize.global_quantize` for the options)."""
    return quantize(spec, "global", **options)


def channel_quantize(spec: Any = None, /, **options: Any) -> Any:
    """:func:`quantize` with ``"channel"``: one weight scale per post-synaptic neuron (Xylo: see
    :func:`pondlib.devices.xylo.quantize.channel_quantize` for the options)."""
    return quantize(spec, "channel", **options)
