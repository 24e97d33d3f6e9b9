"""pondlib: spiking neural networks from JAX training to bit-exact neuromorphic deployment.

Subpackages: :mod:`pondlib.nn` (float modules), :mod:`pondlib.graph` (graphs as data),
:mod:`pondlib.transform` (quantizers, hardware-aware training), :mod:`pondlib.devices` (``xylo``,
``spinnaker2``, ``siracusa``), :mod:`pondlib.interop` (NIR), :mod:`pondlib.training`,
:mod:`pondlib.datasets`, :mod:`pondlib.plot`,
:mod:`pondlib.io`, :mod:`pondlib.errors`. Only ``errors``, ``graph`` and ``nn`` are imported eagerly.
"""

from pondlib import errors, graph, nn

__version__ = "0.1.0"

__all__ = ["__version__", "errors", "graph", "nn"]
