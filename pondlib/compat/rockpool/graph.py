"""Rockpool's graph helpers (``rockpool.graph``) on :mod:`pondlib.graph`'s objects.

=====================================================  =================================================
Rockpool                                               here
=====================================================  =================================================
``mod.add_input(n)``, ``remove_input``, ``clear_inputs``  :func:`add_input` ``(mod, n)``, ... (functions: the
(and the ``output`` ones)                              graph classes are pondlib's; each keeps the node's
                                                       sink/source lists in step, as Rockpool does)
``SetList``                                            :class:`SetList` (a list that keeps one of each)
``GenericNeurons``                                     :class:`GenericNeurons` (a plain neuron module)
``replace_module(target, replacement)``                :func:`replace_module`
``bag_graph(g)``                                       :func:`pondlib.graph.find_modules` ``-> (nodes, modules)``
``find_modules_of_subclass(g, cls)``                   :func:`pondlib.graph.modules_of_class`
``find_recurrent_modules(g)`` ``-> (modules, rec)``    :func:`find_recurrent_modules` (pondlib's returns ``rec``)
=====================================================  =================================================

These helpers *edit* the graph they are given, as Rockpool's do (that is their purpose); pondlib's own
entry points never do.

Example:
    >>> from pondlib.graph import GraphNode, LinearWeights
    >>> import numpy as np
    >>> w = LinearWeights._factory(2, 3, "w", None, np.ones((2, 3)))
    >>> n = GraphNode()
    >>> add_input(w, n); w.size_in, w in n.sink_modules
    (3, True)
    >>> remove_input(w, n); w.size_in, w in n.sink_modules
    (2, False)
    >>> SetList([1, 2, 2, 3])
    [1, 2, 3]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pondlib.errors import GraphError
from pondlib.graph import GraphModule, GraphModuleBase, GraphNode, find_modules, modules_of_class
from pondlib.graph import find_recurrent_modules as _recurrent
from pondlib.validate import check_type

__all__ = [
    "SetList",
    "GenericNeurons",
    "add_input",
    "add_output",
    "remove_input",
    "remove_output",
    "clear_inputs",
    "clear_outputs",
    "replace_module",
    "bag_graph",
    "find_modules_of_subclass",
    "find_recurrent_modules",
]


class SetList(list):
    """Rockpool's ``SetList``: a list that keeps insertion order and one copy of each item (by identity
    for graph nodes and modules, as the graph compares them)."""

    def __init__(self, items: Any = ()) -> None:
        super().__init__()
        self.extend(items)

    def append(self, item: Any) -> None:
        if not any(x is item or (not isinstance(x, (GraphNode, GraphModuleBase)) and x == item) for x in self):
            super().append(item)

    add = append

    def extend(self, items: Any) -> None:
        for item in items:
            self.append(item)


@dataclass(eq=False, repr=False)
class GenericNeurons(GraphModule):
    """Rockpool's ``GenericNeurons``: a neuron layer with no parameters the graph knows about (mappers
    that need parameters refuse it by name)."""


def _checked(module: Any, where: str, *nodes: Any) -> None:
    check_type(module, "module", GraphModuleBase, where=where, error=GraphError)
    for node in nodes:
        check_type(node, "node", GraphNode, where=where, error=GraphError)


def _registers(module: Any) -> bool:
    """Computing modules register with their nodes (holders do not)."""
    return isinstance(module, GraphModule)


def add_input(module: GraphModuleBase, node: GraphNode) -> None:
    """Append ``node`` to ``module.input_nodes`` (once) and register ``module`` as its sink."""
    _checked(module, "add_input", node)
    if not any(n is node for n in module.input_nodes):
        module.input_nodes.append(node)
    if _registers(module):
        node.add_sink(module)


def add_output(module: GraphModuleBase, node: GraphNode) -> None:
    """Append ``node`` to ``module.output_nodes`` (once) and register ``module`` as its source."""
    _checked(module, "add_output", node)
    if not any(n is node for n in module.output_nodes):
        module.output_nodes.append(node)
    if _registers(module):
        node.add_source(module)


def remove_input(module: GraphModuleBase, node: GraphNode) -> None:
    """Remove ``node`` from ``module.input_nodes`` and ``module`` from the node's sinks."""
    _checked(module, "remove_input", node)
    module.input_nodes[:] = [n for n in module.input_nodes if n is not node]
    node.remove_sink(module)


def remove_output(module: GraphModuleBase, node: GraphNode) -> None:
    """Remove ``node`` from ``module.output_nodes`` and ``module`` from the node's sources."""
    _checked(module, "remove_output", node)
    module.output_nodes[:] = [n for n in module.output_nodes if n is not node]
    node.remove_source(module)


def clear_inputs(module: GraphModuleBase) -> None:
    """Remove every input node of ``module``."""
    _checked(module, "clear_inputs")
    for n in list(module.input_nodes):
        remove_input(module, n)


def clear_outputs(module: GraphModuleBase) -> None:
    """Remove every output node of ``module``."""
    _checked(module, "clear_outputs")
    for n in list(module.output_nodes):
        remove_output(module, n)


def replace_module(target_module: GraphModuleBase, replacement_module: GraphModuleBase) -> GraphModuleBase:
    """Put ``replacement_module`` in the place of ``target_module``: it takes over the target's input and
    output nodes (its own are released); the target is disconnected. Returns the replacement.

    Raises:
        GraphError: the two modules differ in input or output size (naming both sizes).
    """
    _checked(target_module, "replace_module")
    _checked(replacement_module, "replace_module")
    for what, a, b in (
        ("inputs", target_module.size_in, replacement_module.size_in),
        ("outputs", target_module.size_out, replacement_module.size_out),
    ):
        if a != b:
            raise GraphError(
                f"replacement {what}",
                value=b,
                limit=f"{a} (the {what} of {target_module.name!r})",
                where="replace_module",
                fix=f"build the replacement with {a} {what}",
            )
    ins, outs = list(target_module.input_nodes), list(target_module.output_nodes)
    clear_inputs(target_module)
    clear_outputs(target_module)
    clear_inputs(replacement_module)
    clear_outputs(replacement_module)
    for n in ins:
        add_input(replacement_module, n)
    for n in outs:
        add_output(replacement_module, n)
    return replacement_module


def bag_graph(graph: GraphModuleBase) -> tuple[list[GraphNode], list[GraphModuleBase]]:
    """Rockpool's ``bag_graph``: every node and every module of ``graph`` (:func:`pondlib.graph.find_modules`)."""
    return find_modules(graph)


def find_modules_of_subclass(graph: GraphModuleBase, cls: type) -> list[Any]:
    """Rockpool's ``find_modules_of_subclass``: :func:`pondlib.graph.modules_of_class`."""
    return modules_of_class(graph, cls)


def find_recurrent_modules(graph: GraphModuleBase) -> tuple[list[GraphModuleBase], list[GraphModuleBase]]:
    """Rockpool's ``find_recurrent_modules``: ``(every module, the modules on a cycle)``."""
    return find_modules(graph)[1], _recurrent(graph)
