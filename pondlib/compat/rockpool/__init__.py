"""Rockpool's call styles on pondlib (issue 34): a script ported from Rockpool changes its imports only.

=============================================  ==================================================================
Rockpool                                       pondlib.compat.rockpool (each maps onto pondlib's own objects)
=============================================  ==================================================================
``rockpool.nn.modules``: ``Linear``, ``LIF``,  :mod:`~pondlib.compat.rockpool.nn` (no key needed; records nested
``Sequential``                                 per module, ``rec["1_LIF"]["spikes"]``)
``rockpool.graph`` helpers                     :mod:`~pondlib.compat.rockpool.graph`
``DRCError``, ``DRCWarning``                   :data:`DRCError` is :class:`~pondlib.errors.ConstraintError`
                                               (what pondlib's mappers raise); ``DRCWarning`` (a chip
                                               adapter's soft limits, e.g. biases dropped)
a chip's ``mapper``, ``config_from_``           :func:`device` ``(name)``: the chip's adapter, found through the
``specification``, ``XyloSim``                 device registry (``device("xylo").XyloSim.from_config(c,
                                               output_mode="Vmem")``)
``transform.quantize_methods``                 :mod:`pondlib.transform.quantize_methods`
=============================================  ==================================================================

Example:
    >>> from pondlib.compat import rockpool as rp
    >>> import numpy as np
    >>> net = rp.Sequential(rp.Linear((2, 3)), rp.LIF(3), rp.Linear((3, 1)), rp.LIF(1))
    >>> spec = rp.device("xylo").mapper(net.as_graph(), weight_dtype="float")
    >>> del spec["weights_rec"]                     # Rockpool's plain dict: defaults fill it in again
    >>> sorted(spec)[:3]
    ['aliases', 'bias', 'bias_out']
"""

from __future__ import annotations

import importlib
from types import ModuleType

from pondlib.compat.rockpool.graph import (
    GenericNeurons,
    SetList,
    add_input,
    add_output,
    bag_graph,
    clear_inputs,
    clear_outputs,
    find_modules_of_subclass,
    find_recurrent_modules,
    remove_input,
    remove_output,
    replace_module,
)
from pondlib.compat.rockpool.nn import LIF, Linear, NestedRecord, RecordNesting, Sequential
from pondlib.devices import registry
from pondlib.devices.core.compat import DRCWarning
from pondlib.errors import ConfigError, ConstraintError

__all__ = [
    "Linear",
    "LIF",
    "Sequential",
    "NestedRecord",
    "RecordNesting",
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
    "DRCError",
    "DRCWarning",
    "device",
]

#: Rockpool's design-rule error: pondlib's mappers raise :class:`~pondlib.errors.ConstraintError` (every
#: broken rule at once), so ``except DRCError`` catches them.
DRCError = ConstraintError


def device(name: str) -> ModuleType:
    """The Rockpool adapter of the registered device ``name`` (its folder's ``compat`` module).

    Raises:
        ConfigError: an unknown device (the registry names the known ones), or one without an adapter.
    """
    dev = registry.get(name)
    package = type(dev).__module__.rsplit(".", 1)[0]
    try:
        return importlib.import_module(package + ".compat")
    except ModuleNotFoundError:
        raise ConfigError(
            "Rockpool adapter",
            value=name,
            limit="a device with a compat module",
            where="pondlib.compat.rockpool.device",
            fix="use the device's own pondlib API (pondlib.devices.<chip>)",
        ) from None
