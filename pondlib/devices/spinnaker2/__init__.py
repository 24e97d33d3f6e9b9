"""SpiNNaker2: SNN mapping onto ARM PEs (float32 LIF, 16-bit synapse words) and DNN inference on the
MLA (int8, power-of-two requantization), each with a bit-precise simulator; and a DNN timing model.

The SNN pipeline::

    spec = mapper(net.as_graph(), limits=SPINNAKER2_CHIP)      # quantize, place, every rule checked
    config, ok, message = config_from_specification(spec)     # synapse words, rows, routing entries
    output, state, record = SpiNNaker2Sim.from_config(config).evolve(spikes, record=True)

The DNN pipeline::

    cfg = dnn_mapper(MLP.from_arrays(weights, biases), calibration=x_train)   # int8, workers
    y, _, record = DNNSim.from_config(cfg).evolve(cfg.quantize_input(x))
    print(estimate(cfg, softmax=True).table())                               # per-layer timing
    y, dram = run_dram_image(cfg.to_dram_image(), cfg.quantize_input(x))      # walk the DRAM image

Files (the file set every device has, then SpiNNaker2's own): ``limits`` (chip and board as data),
``specification`` (what the SNN mapper produces: neuron models, synapse word formats, populations,
projections, placement), ``mapper`` (SNN mapper), ``config`` (synapse words, routing, SNN configuration),
``sim`` (both simulators), ``report`` (resources, quantization and gaps as data), ``aware`` (the device-aware
twin), ``codegen`` (the C numerics), ``device`` (:class:`SpiNNaker2Device`, the chip behind the Device
interface); ``dnn`` (DNN path), ``onnx`` (ONNX models to the DNN path), ``image`` (the DRAM configuration
image the scheduler PE walks), ``timing`` (DNN timing model calibrated on the paper); the DNN graph path
(CNNs, transformer blocks, several chips): ``dnn_graph`` (``graph_mapper``, ``GraphSim``), ``graph_ops`` (each
op's integer rule), ``graph_tiling`` (the split over worker PEs), ``graph_image`` (DRAM image version 2 and its
walk), ``graph_timing`` (per-op timing, chip-to-chip transfers), ``graph_device`` (what the Device does with it).
"""

from pondlib.devices.core.lazy import lazy_exports

#: Public name -> the module that defines it (imported on first use: see :mod:`pondlib.devices.core.lazy`).
_EXPORTS: dict[str, str] = {
    "SpiNNaker2Limits": "pondlib.devices.spinnaker2.limits",
    "SPINNAKER2_CHIP": "pondlib.devices.spinnaker2.limits",
    "SPINNAKER2_CHIP_HIGH": "pondlib.devices.spinnaker2.limits",
    "SPINNAKER2_BOARD": "pondlib.devices.spinnaker2.limits",
    "LIMITS": "pondlib.devices.spinnaker2.limits",
    "get_limits": "pondlib.devices.spinnaker2.limits",
    "mapper": "pondlib.devices.spinnaker2.mapper",
    "RULES": "pondlib.devices.spinnaker2.mapper",
    "SUPPORTED_MODULES": "pondlib.devices.spinnaker2.mapper",
    "Specification": "pondlib.devices.spinnaker2.specification",
    "PopulationSpec": "pondlib.devices.spinnaker2.specification",
    "ProjectionSpec": "pondlib.devices.spinnaker2.specification",
    "Slice": "pondlib.devices.spinnaker2.specification",
    "MappingReport": "pondlib.devices.spinnaker2.specification",
    "DeadlineWarning": "pondlib.devices.spinnaker2.specification",
    "SpiNNaker2Config": "pondlib.devices.spinnaker2.config",
    "NeuronParams": "pondlib.devices.spinnaker2.specification",
    "PopulationConfig": "pondlib.devices.spinnaker2.config",
    "PEConfig": "pondlib.devices.spinnaker2.config",
    "RoutingEntry": "pondlib.devices.spinnaker2.config",
    "LIFOptions": "pondlib.devices.spinnaker2.specification",
    "NeuronModel": "pondlib.devices.spinnaker2.specification",
    "NEURON_MODELS": "pondlib.devices.spinnaker2.specification",
    "SynapseFormat": "pondlib.devices.spinnaker2.specification",
    "DELAY_WORD": "pondlib.devices.spinnaker2.specification",
    "NO_DELAY_WORD": "pondlib.devices.spinnaker2.specification",
    "encode_words": "pondlib.devices.spinnaker2.config",
    "decode_words": "pondlib.devices.spinnaker2.config",
    "config_from_specification": "pondlib.devices.spinnaker2.config",
    "validate_config": "pondlib.devices.spinnaker2.config",
    "SpiNNaker2Sim": "pondlib.devices.spinnaker2.sim",
    "DNNSim": "pondlib.devices.spinnaker2.sim",
    "LIFParams": "pondlib.devices.spinnaker2.sim",
    "LIFState": "pondlib.devices.spinnaker2.sim",
    "lif_step": "pondlib.devices.spinnaker2.sim",
    "f32_fma": "pondlib.devices.spinnaker2.sim",
    "mla_layer": "pondlib.devices.spinnaker2.sim",
    "run_dram_image": "pondlib.devices.spinnaker2.sim",
    "append_silence": "pondlib.devices.core.inputs",
    "parse_image": "pondlib.devices.spinnaker2.image",
    "read_times": "pondlib.devices.spinnaker2.image",
    "MLP": "pondlib.devices.spinnaker2.dnn",
    "DenseLayer": "pondlib.devices.spinnaker2.dnn",
    "DNNConfig": "pondlib.devices.spinnaker2.dnn",
    "DNNLayerConfig": "pondlib.devices.spinnaker2.dnn",
    "dnn_mapper": "pondlib.devices.spinnaker2.dnn",
    "train_mlp": "pondlib.devices.spinnaker2.dnn",
    "default_workers": "pondlib.devices.spinnaker2.dnn",
    "DNN_RULES": "pondlib.devices.spinnaker2.dnn",
    "TimingModel": "pondlib.devices.spinnaker2.timing",
    "PaperAnchors": "pondlib.devices.spinnaker2.timing",
    "PAPER_ANCHORS": "pondlib.devices.spinnaker2.timing",
    "PAPER_MODEL": "pondlib.devices.spinnaker2.timing",
    "LayerTiming": "pondlib.devices.spinnaker2.timing",
    "TimingReport": "pondlib.devices.spinnaker2.timing",
    "calibrate": "pondlib.devices.spinnaker2.timing",
    "estimate": "pondlib.devices.spinnaker2.timing",
    "spinnaker2_aware": "pondlib.devices.spinnaker2.aware",
    "export_spinnaker2": "pondlib.devices.spinnaker2.aware",
    "SpiNNaker2LIF": "pondlib.devices.spinnaker2.aware",
    "SpiNNaker2Export": "pondlib.devices.spinnaker2.aware",
    "to_spinnaker2": "pondlib.devices.spinnaker2.onnx",
    "qdq_to_spinnaker2": "pondlib.devices.spinnaker2.onnx",
    "SpiNNaker2Device": "pondlib.devices.spinnaker2.device",
    "graph_mapper": "pondlib.devices.spinnaker2.dnn_graph",
    "GraphConfig": "pondlib.devices.spinnaker2.dnn_graph",
    "GraphSim": "pondlib.devices.spinnaker2.dnn_graph",
    "Transfer": "pondlib.devices.spinnaker2.dnn_graph",
    "GRAPH_RULES": "pondlib.devices.spinnaker2.dnn_graph",
    "GraphOp": "pondlib.devices.spinnaker2.graph_ops",
    "GRAPH_OPS": "pondlib.devices.spinnaker2.graph_ops",
    "run_graph_image": "pondlib.devices.spinnaker2.graph_image",
    "load_dnn_image": "pondlib.devices.spinnaker2.dnn_graph",
    "estimate_graph": "pondlib.devices.spinnaker2.graph_timing",
    "GraphTimingModel": "pondlib.devices.spinnaker2.graph_timing",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
