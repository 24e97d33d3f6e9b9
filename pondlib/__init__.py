"""pondlib: spiking neural networks from JAX training to bit-exact neuromorphic deployment.

Subpackages: :mod:`pondlib.nn` (float modules), :mod:`pondlib.graph` (graphs as data),
:mod:`pondlib.devices` (one folder per chip, listed by :mod:`pondlib.devices.registry`),
:mod:`pondlib.transform` (quantizers, device-aware twins), :mod:`pondlib.interop` (NIR, ONNX),
:mod:`pondlib.codegen` (C), :mod:`pondlib.explore` (schedules), :mod:`pondlib.training`,
:mod:`pondlib.datasets`, :mod:`pondlib.plot`, :mod:`pondlib.io`, :mod:`pondlib.errors`.
Only ``errors``, ``graph`` and ``nn`` are imported eagerly; :func:`deploy` (the deployment pipeline,
:mod:`pondlib.pipeline`) is imported on first use.
"""

from typing import Any

from pondlib import errors, graph, nn
from pondlib._version import __version__

__all__ = ["__version__", "errors", "graph", "nn", "deploy", "Deployment"]


def __getattr__(name: str) -> Any:
    if name in ("deploy", "Deployment"):
        from pondlib import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'pondlib' has no attribute {name!r}")
