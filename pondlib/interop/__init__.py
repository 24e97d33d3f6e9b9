"""Interchange formats: networks in and out of pondlib.

:mod:`pondlib.interop.nir` imports NIR graphs written by other frameworks as :mod:`pondlib.nn` modules
(with an explicit, reported dt convention) and exports pondlib networks as NIR. This layer sits above
:mod:`pondlib.nn` and :mod:`pondlib.graph` (it builds modules) and below the commands.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from pondlib import interop, nn
    >>> net = nn.Sequential(nn.Linear(3, 2, key=jax.random.PRNGKey(0)), nn.LIF(2, tau_mem=0.02, tau_syn=0.01))
    >>> back = interop.from_nir(interop.to_nir(net), dt=None)
    >>> bool(jnp.all(back(jnp.ones((5, 3)))[0] == net(jnp.ones((5, 3)))[0]))
    True
"""

from typing import Any

from pondlib.devices import registry
from pondlib.interop.nir import (
    CONVENTIONS,
    EXPORTERS,
    IMPORTERS,
    NIRImport,
    from_nir,
    load_nir,
    read_graph,
    to_nir,
    write,
)
from pondlib.interop.onnx import load_onnx, load_qdq, run_float

__all__ = [
    "load_onnx",
    "load_qdq",
    "run_float",
    "from_nir",
    "load_nir",
    "to_nir",
    "write",
    "read_graph",
    "NIRImport",
    "IMPORTERS",
    "EXPORTERS",
    "CONVENTIONS",
]


def __getattr__(name: str) -> Any:
    """Names that moved into a chip's folder, with a DeprecationWarning."""
    return registry.moved(__name__, name)
