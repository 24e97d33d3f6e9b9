"""Transforms of networks, graphs and specifications; each returns new data and never mutates its input.

* :func:`global_quantize`, :func:`channel_quantize`: float Xylo specification -> chip integers
  (:mod:`pondlib.transform.quantize`); also under Rockpool's module name
  :mod:`pondlib.transform.quantize_methods` (``from pondlib.transform import quantize_methods as q``).
* :func:`xylo_aware`, :func:`to_float`, :func:`hardware_dashes`: a float network <-> its
  hardware-aware twin that trains with Xylo's caps, bit-shift decay, hop delays and weight grid
  (:mod:`pondlib.transform.hardware`).
"""

from pondlib.transform.hardware import hardware_dashes, to_float, xylo_aware
from pondlib.transform.quantize import channel_quantize, global_quantize

__all__ = ["global_quantize", "channel_quantize", "xylo_aware", "to_float", "hardware_dashes"]
