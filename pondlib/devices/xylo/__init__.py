"""SynSense Xylo (Audio 2 by default, Audio 3 and IMU as other limits of the same core).

The pipeline::

    spec = mapper(net.as_graph(), limits=XYLO_AUDIO2)       # every design rule, all violations at once
    spec_q = channel_quantize(spec)                         # int8 weights, int16 thresholds/biases
    config, ok, message = config_from_specification(spec_q) # every register validated
    output, state, record = XyloSim.from_config(config).evolve(events, record=True)

Files: ``limits`` (the chip variants as data), ``specification`` (the mapper's output type),
``mapper``, ``quantize`` (the two quantizers), ``config``, ``sim`` (bit-exact batched simulator),
``report`` (resources, quantization, gaps as data), ``aware`` (the device-aware twin: ``xylo_aware``, its
layer ``aware_lif.XyloLIF`` and that layer's adjoint ``aware_adjoint``), ``codegen`` (the C numerics),
``device`` (:class:`XyloDevice`, the chip behind the Device interface), ``hdk`` (the development-kit interface
backed by a numpy model of the board: no vendor SDK needed), split into ``memory`` (the board's
memory layout), ``codec`` (configuration <-> memory image), ``cost`` (cycles and power model) and
``mock`` (the mock board), with ``hdk`` as the front end (board discovery and ``XyloBoard``).
"""

from pondlib.devices.xylo.aware import hardware_dashes, to_float, xylo_aware
from pondlib.devices.xylo.aware_lif import XyloLIF, XyloLIFState
from pondlib.devices.xylo.codec import decode_config, encode_config
from pondlib.devices.xylo.compare import LayerComparison, compare_records, layer_map_from_spec
from pondlib.devices.xylo.config import XyloConfig, config_from_specification, validate_config
from pondlib.devices.xylo.cost import CostModel, RunStats
from pondlib.devices.xylo.device import XyloDevice
from pondlib.devices.xylo.hdk import XyloBoard, find_xylo_hdks, set_mock_boards
from pondlib.devices.xylo.limits import LIMITS, XYLO_AUDIO2, XYLO_AUDIO3, XYLO_IMU, XyloLimits, get_limits
from pondlib.devices.xylo.mapper import RULES, SUPPORTED_MODULES, mapper
from pondlib.devices.xylo.memory import memory_map
from pondlib.devices.xylo.mock import MockXyloDevice
from pondlib.devices.xylo.quantize import channel_quantize, global_quantize
from pondlib.devices.xylo.sim import RECORD_KEYS, STATE_KEYS, XyloSim
from pondlib.devices.xylo.specification import (
    SPEC_KEYS,
    MappingReport,
    QuantizationReport,
    Specification,
    SpecificationKeyError,
)

__all__ = [
    "XyloLimits",
    "XYLO_AUDIO2",
    "XYLO_AUDIO3",
    "XYLO_IMU",
    "LIMITS",
    "get_limits",
    "Specification",
    "SpecificationKeyError",
    "SPEC_KEYS",
    "MappingReport",
    "QuantizationReport",
    "mapper",
    "RULES",
    "SUPPORTED_MODULES",
    "XyloConfig",
    "validate_config",
    "config_from_specification",
    "XyloSim",
    "RECORD_KEYS",
    "STATE_KEYS",
    "find_xylo_hdks",
    "set_mock_boards",
    "XyloBoard",
    "MockXyloDevice",
    "CostModel",
    "RunStats",
    "encode_config",
    "decode_config",
    "memory_map",
    "compare_records",
    "layer_map_from_spec",
    "LayerComparison",
    "global_quantize",
    "channel_quantize",
    "xylo_aware",
    "to_float",
    "hardware_dashes",
    "XyloLIF",
    "XyloLIFState",
    "XyloDevice",
]
