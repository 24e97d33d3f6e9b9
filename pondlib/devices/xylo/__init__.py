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

from pondlib.devices.core.lazy import lazy_exports

#: Public name -> the module that defines it (imported on first use: see :mod:`pondlib.devices.core.lazy`).
_EXPORTS: dict[str, str] = {
    "XyloLimits": "pondlib.devices.xylo.limits",
    "XYLO_AUDIO2": "pondlib.devices.xylo.limits",
    "XYLO_AUDIO3": "pondlib.devices.xylo.limits",
    "XYLO_IMU": "pondlib.devices.xylo.limits",
    "LIMITS": "pondlib.devices.xylo.limits",
    "get_limits": "pondlib.devices.xylo.limits",
    "Specification": "pondlib.devices.xylo.specification",
    "SpecificationKeyError": "pondlib.devices.xylo.specification",
    "SPEC_KEYS": "pondlib.devices.xylo.specification",
    "MappingReport": "pondlib.devices.xylo.specification",
    "QuantizationReport": "pondlib.devices.xylo.specification",
    "mapper": "pondlib.devices.xylo.mapper",
    "RULES": "pondlib.devices.xylo.mapper",
    "SUPPORTED_MODULES": "pondlib.devices.xylo.mapper",
    "XyloConfig": "pondlib.devices.xylo.config",
    "validate_config": "pondlib.devices.xylo.config",
    "config_from_specification": "pondlib.devices.xylo.config",
    "XyloSim": "pondlib.devices.xylo.sim",
    "RECORD_KEYS": "pondlib.devices.xylo.sim",
    "STATE_KEYS": "pondlib.devices.xylo.sim",
    "find_xylo_hdks": "pondlib.devices.xylo.hdk",
    "set_mock_boards": "pondlib.devices.xylo.hdk",
    "XyloBoard": "pondlib.devices.xylo.hdk",
    "MockXyloDevice": "pondlib.devices.xylo.mock",
    "CostModel": "pondlib.devices.xylo.cost",
    "RunStats": "pondlib.devices.xylo.cost",
    "encode_config": "pondlib.devices.xylo.codec",
    "decode_config": "pondlib.devices.xylo.codec",
    "memory_map": "pondlib.devices.xylo.memory",
    "compare_records": "pondlib.devices.xylo.compare",
    "layer_map_from_spec": "pondlib.devices.xylo.compare",
    "LayerComparison": "pondlib.devices.xylo.compare",
    "global_quantize": "pondlib.devices.xylo.quantize",
    "channel_quantize": "pondlib.devices.xylo.quantize",
    "xylo_aware": "pondlib.devices.xylo.aware",
    "to_float": "pondlib.devices.xylo.aware",
    "hardware_dashes": "pondlib.devices.xylo.aware",
    "XyloLIF": "pondlib.devices.xylo.aware_lif",
    "XyloLIFState": "pondlib.devices.xylo.aware_lif",
    "XyloDevice": "pondlib.devices.xylo.device",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
