"""Graphs as plain data, exported by ``pondlib.nn`` modules and consumed by device mappers.

See :mod:`pondlib.graph.base` (nodes, modules, holders, ``connect_modules``),
:mod:`pondlib.graph.modules` (typed modules) and :mod:`pondlib.graph.utils` (traversal). The graph is
plain data: it imports nothing of pondlib but :mod:`pondlib.errors` and :mod:`pondlib.validate`; NIR
import and export, which build ``pondlib.nn`` modules, live above it in :mod:`pondlib.interop`.
"""

from pondlib.graph.base import (
    MAX_NODES,
    GraphHolder,
    GraphModule,
    GraphModuleBase,
    GraphNode,
    as_GraphHolder,
    connect_modules,
)
from pondlib.graph.modules import AliasConnection, LIFNeurons, LinearWeights, NIRNeuronGroup
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
    "GraphNode",
    "GraphModuleBase",
    "GraphModule",
    "GraphHolder",
    "as_GraphHolder",
    "connect_modules",
    "MAX_NODES",
    "LinearWeights",
    "LIFNeurons",
    "AliasConnection",
    "NIRNeuronGroup",
    "find_modules",
    "modules_of_class",
    "find_recurrent_modules",
    "topological_order",
    "source_modules_of",
    "sink_modules_of",
    "graph_to_str",
]
