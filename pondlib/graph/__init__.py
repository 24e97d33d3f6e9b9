"""Graphs as plain data, exported by ``pondlib.nn`` modules and consumed by device mappers.

See :mod:`pondlib.graph.base` (nodes, modules, holders, ``connect_modules``),
:mod:`pondlib.graph.modules` (typed modules), :mod:`pondlib.graph.utils` (traversal) and
:mod:`pondlib.graph.nir` (NIR import and export).
"""

from pondlib.graph.base import (
    GraphHolder,
    GraphModule,
    GraphModuleBase,
    GraphNode,
    as_GraphHolder,
    connect_modules,
)
from pondlib.graph.modules import AliasConnection, LIFNeurons, LinearWeights
from pondlib.graph.nir import from_nir, load_nir, to_nir, write
from pondlib.graph.utils import (
    find_modules,
    find_recurrent_modules,
    graph_to_str,
    modules_of_class,
    sink_modules_of,
    source_modules_of,
    topological_order,
)

__all__ = [
    "GraphNode", "GraphModuleBase", "GraphModule", "GraphHolder", "as_GraphHolder", "connect_modules",
    "LinearWeights", "LIFNeurons", "AliasConnection",
    "find_modules", "modules_of_class", "find_recurrent_modules", "topological_order",
    "source_modules_of", "sink_modules_of", "graph_to_str",
    "from_nir", "load_nir", "to_nir", "write",
]
