"""Rockpool's module name for the Xylo quantizers, so that ported scripts change only their imports.

Rockpool::

    from rockpool.transform import quantize_methods as q
    spec.update(q.global_quantize(**spec))

pondlib::

    from pondlib.transform import quantize_methods as q
    spec.update(q.global_quantize(**spec))

The functions are :func:`pondlib.transform.global_quantize` and :func:`pondlib.transform.channel_quantize`,
which call the quantizer of the device the specification belongs to (Xylo's: see
:mod:`pondlib.devices.xylo.quantize` for the differences from Rockpool: documented bug fixes, clipping
instead of wrapping, and checked input).

Example:
    >>> from pondlib.transform import quantize_methods as q
    >>> from pondlib.transform import channel_quantize
    >>> q.channel_quantize is channel_quantize
    True
"""

from __future__ import annotations

from pondlib.transform.quantize import channel_quantize, global_quantize

__all__ = ["global_quantize", "channel_quantize"]
