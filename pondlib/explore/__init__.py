r"""Schedule exploration for stateful SNN layers: STEMS's spatio-temporal mapping, in closed form.

STEMS (``docs/EXPLORE.md``) schedules a spiking network on a core with a small shared memory and counts
the data that must then move to and from DRAM: weights, inter-layer spikes and, unlike for ANNs, the
neuron states, which live across time steps. It takes minutes per schedule; this package reproduces its
accounting rules in closed form, in milliseconds.

* :mod:`~pondlib.explore.workload`: :class:`Layer`, :class:`Workload` (from a table, from a ``pondlib``
  network or graph with :func:`workload_from_graph`, or the built-in :func:`sew_resnet18`); per-layer
  state removal with :meth:`Workload.with_stateless`.
* :mod:`~pondlib.explore.hardware`: :class:`MemoryLevel`, :class:`Hardware` (validated, units in every
  field), :func:`meta_prototype` (STEMS's core and its memory sizes), :func:`device_hardware` (a chip's
  own memories, from its ``Device.explore_hardware``), :func:`hardware_from_description`.
* :mod:`~pondlib.explore.schedule`: :class:`BlockSchedule` (time batch ``B`` dividing ``T``, fused or not)
  per block, :class:`Schedule`, :func:`hybrid_space`, :func:`uniform_space`.
* :func:`evaluate` -> :class:`Report` (off-chip traffic per layer and operand class, on-chip, off-chip and
  MAC energy, latency in cycles (:mod:`~pondlib.explore.latency`) and energy-delay product, peak on-chip
  use, fit of the fused stacks), in ``"stems"`` or ``"ideal"`` accounting.
* :func:`explore` -> :class:`Exploration` (ranked by energy, traffic, latency or EDP, stacks that cannot
  fit last; Pareto front), :func:`state_removal_study`, :func:`plot_exploration`.

Example:
    >>> from pondlib.explore import sew_resnet18, meta_prototype, Schedule, evaluate
    >>> r = evaluate(sew_resnet18(), meta_prototype("1MB"), Schedule.uniform(7, batch=1))
    >>> round(r.traffic_mib(), 2), round(r.energy_mj(), 2), round(r.latency_cycles / 1e6, 2)
    (186.17, 20.77, 38.03)
"""

from pondlib.explore.dnn_import import workload_from_dnn
from pondlib.explore.evaluate import MODES, evaluate
from pondlib.explore.explore import (
    RANKINGS,
    SPACES,
    Exploration,
    explore,
    pareto_mask,
    schedule_space,
    state_removal_study,
)
from pondlib.explore.graph_import import workload_from_graph
from pondlib.explore.hardware import (
    BANK_BITS,
    MEMORY_PRESETS,
    Hardware,
    MemoryLevel,
    device_hardware,
    hardware_from_description,
    meta_prototype,
    parse_memory_size,
)
from pondlib.explore.plot import plot_exploration
from pondlib.explore.report import MIB_BITS, OPERAND_CLASSES, PJ_PER_MJ, GroupReport, Report
from pondlib.explore.schedule import (
    MAX_BLOCKS,
    MAX_SCHEDULES,
    SPLIT_SIDES,
    BlockSchedule,
    Schedule,
    hybrid_space,
    uniform_space,
)
from pondlib.explore.workload import LAYER_KINDS, NETWORK_INPUT, Layer, Workload, sew_resnet18

__all__ = [
    # workload
    "Layer",
    "Workload",
    "LAYER_KINDS",
    "NETWORK_INPUT",
    "sew_resnet18",
    "workload_from_graph",
    "workload_from_dnn",
    # hardware
    "MemoryLevel",
    "Hardware",
    "meta_prototype",
    "parse_memory_size",
    "hardware_from_description",
    "device_hardware",
    "MEMORY_PRESETS",
    "BANK_BITS",
    # schedules
    "BlockSchedule",
    "Schedule",
    "hybrid_space",
    "uniform_space",
    "SPLIT_SIDES",
    "MAX_BLOCKS",
    "MAX_SCHEDULES",
    # evaluation
    "evaluate",
    "MODES",
    "Report",
    "GroupReport",
    "OPERAND_CLASSES",
    "MIB_BITS",
    "PJ_PER_MJ",
    # exploration
    "explore",
    "Exploration",
    "pareto_mask",
    "schedule_space",
    "state_removal_study",
    "SPACES",
    "RANKINGS",
    "plot_exploration",
]
