"""Transforms of networks, graphs and specifications; each returns new data and never mutates its input.

* :func:`device_aware` (any registered device): the device-aware twin of a network, trained by
  ``fit`` (:mod:`pondlib.transform.device_aware`); each chip's twin lives in its folder
  (``pondlib.devices.<chip>.aware``).
* :func:`quantize`, :func:`global_quantize`, :func:`channel_quantize`: a device's float specification ->
  chip integers, by the quantizer of the device it belongs to (:mod:`pondlib.transform.quantize`); also
  under Rockpool's module name :mod:`pondlib.transform.quantize_methods`
  (``from pondlib.transform import quantize_methods as q``).

Names that moved into a chip's folder (``xylo_aware``, ``to_float``, ``hardware_dashes``,
``spinnaker2_aware``, ``export_spinnaker2``, ``siracusa_aware``) still resolve here, with a
``DeprecationWarning`` naming the new home.
"""

from typing import Any

from pondlib.devices import registry
from pondlib.transform.device_aware import device_aware
from pondlib.transform.quantize import channel_quantize, global_quantize, quantize

__all__ = ["device_aware", "quantize", "global_quantize", "channel_quantize"]


def __getattr__(name: str) -> Any:
    """Names that moved into a chip's folder, with a DeprecationWarning."""
    return registry.moved(__name__, name)
