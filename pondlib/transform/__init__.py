"""Transforms of graphs and specifications; each returns new data and never mutates its input.

* :func:`global_quantize`, :func:`channel_quantize`: float Xylo specification -> chip integers
  (:mod:`pondlib.transform.quantize`).
"""

from pondlib.transform.quantize import channel_quantize, global_quantize

__all__ = ["global_quantize", "channel_quantize"]
from pondlib.transform.hardware import hardware_dashes, to_float, xylo_aware  # noqa: E402

__all__ += ["xylo_aware", "to_float", "hardware_dashes"]
