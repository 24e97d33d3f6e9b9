"""pondlib: spiking neural networks from JAX training to bit-exact neuromorphic deployment.

Subpackages: :mod:`pondlib.nn` (float modules), :mod:`pondlib.graph` (graphs as data),
:mod:`pondlib.transform` (quantizers), :mod:`pondlib.devices` (``xylo``), :mod:`pondlib.errors`.
"""

from pondlib import errors, graph, nn

__version__ = "0.1.0"

__all__ = ["__version__", "errors", "graph", "nn"]
