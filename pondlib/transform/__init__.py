"""Transforms of networks, graphs and specifications; each returns new data and never mutates its input.

* :func:`global_quantize`, :func:`channel_quantize`: float Xylo specification -> chip integers
  (:mod:`pondlib.transform.quantize`); also under Rockpool's module name
  :mod:`pondlib.transform.quantize_methods` (``from pondlib.transform import quantize_methods as q``).
* :func:`xylo_aware`, :func:`to_float`, :func:`hardware_dashes`: a float network <-> its
  hardware-aware twin that trains with Xylo's caps, bit-shift decay, hop delays and weight grid
  (:mod:`pondlib.transform.hardware`).
* :func:`device_aware` (one entry for Xylo, SpiNNaker2, Siracusa), :func:`siracusa_aware`,
  :func:`spinnaker2_aware`: device-aware twins trained by ``fit`` (:mod:`pondlib.transform.device_aware`,
  :mod:`pondlib.transform.siracusa_aware`, :mod:`pondlib.transform.spinnaker2_aware`);
  :func:`export_spinnaker2` writes a trained SpiNNaker2 twin back for the mapper (the Siracusa one:
  :func:`pondlib.transform.siracusa_aware.export`).
"""

from pondlib.transform.device_aware import device_aware
from pondlib.transform.hardware import hardware_dashes, to_float, xylo_aware
from pondlib.transform.quantize import channel_quantize, global_quantize
from pondlib.transform.siracusa_aware import siracusa_aware
from pondlib.transform.spinnaker2_aware import export_spinnaker2, spinnaker2_aware

__all__ = [
    "global_quantize",
    "channel_quantize",
    "xylo_aware",
    "to_float",
    "hardware_dashes",
    "device_aware",
    "siracusa_aware",
    "spinnaker2_aware",
    "export_spinnaker2",
]
