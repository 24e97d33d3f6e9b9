"""Siracusa (PULP cluster + N-EUREKA NPU): integer layers with RequantShift, L1 tiling, cycle model.

The pipeline::

    spec = mapper(layers, calibration=x_float)               # quantize, place, tile, check every rule
    config, ok, message = config_from_specification(spec)    # (config, is_valid, message)
    out, state, record = SiracusaSim(config).evolve(quantize_input(x, config), record=True)
    print(format_cycle_table(cycle_table(config)))           # DMA in / kernel / DMA out per layer

Files (the file set every device has, then Siracusa's own): ``limits`` (the SoC as data), ``specification``
(the integer layer types and the mapper's :class:`Specification`), ``mapper`` (float layer descriptions, graph
converter, quantization to RequantShift), ``config`` (the layer chain and every constraint check), ``sim``
(bit-precise simulator), ``report`` (resources, quantization and gaps as data), ``aware`` (the device-aware
twin), ``codegen`` (the C numerics), ``device`` (:class:`SiracusaDevice`, the chip behind the Device
interface); ``layers`` (the float layer descriptions), ``onnx`` (ONNX models to layers), ``tiling`` (L1 tiles,
L2/L3 placement, NPU eligibility), ``cycles`` (cycle model calibrated on the Deeploy tutorial).

The graph path (ONNX graphs that are not layer chains: attention, normalisation, several inputs and outputs,
Deeploy's integer dialect, ORT QDQ models)::

    graph = load_opgraph("model.onnx")                       # pondlib.interop.onnx.opgraph
    graph, report = qdq_to_graph(graph)                      # ORT QDQ models only: the integer graph
    run = GraphSim(graph).run(inputs)                        # bit-exact; run.tensors holds every tensor
    print("\n".join(map_graph(graph).table()))               # placement, tiles, NPU, cycles per op
    program = emit_graph(graph)                              # the same graph as C

``graphsim`` (the runner), ``kernels/`` (one kernel per op: ``onnx_ops``, Deeploy's dialect ``deeploy_ops``,
``qdq_ops``), ``qdq_graph`` (QDQ -> integer graph), ``graph_map`` (placement, tiles, cycles) and
``graph_codegen`` (C).
"""

from pondlib.devices.core.lazy import lazy_exports

#: Public name -> the module that defines it (imported on first use: see :mod:`pondlib.devices.core.lazy`).
_EXPORTS: dict[str, str] = {
    "SiracusaLimits": "pondlib.devices.siracusa.limits",
    "SIRACUSA": "pondlib.devices.siracusa.limits",
    "LIMITS": "pondlib.devices.siracusa.limits",
    "get_limits": "pondlib.devices.siracusa.limits",
    "GemmLayer": "pondlib.devices.siracusa.mapper",
    "Conv2dLayer": "pondlib.devices.siracusa.mapper",
    "ReLU": "pondlib.devices.siracusa.mapper",
    "IntLIFLayer": "pondlib.devices.siracusa.mapper",
    "layers_from_graph": "pondlib.devices.siracusa.mapper",
    "float_forward": "pondlib.devices.siracusa.mapper",
    "requant_from_scale": "pondlib.devices.siracusa.mapper",
    "mapper": "pondlib.devices.siracusa.mapper",
    "Specification": "pondlib.devices.siracusa.specification",
    "LayerReport": "pondlib.devices.siracusa.specification",
    "RequantShift": "pondlib.devices.siracusa.specification",
    "QGemm": "pondlib.devices.siracusa.specification",
    "QConv2d": "pondlib.devices.siracusa.specification",
    "QRequant": "pondlib.devices.siracusa.specification",
    "QLIF": "pondlib.devices.siracusa.specification",
    "SiracusaConfig": "pondlib.devices.siracusa.config",
    "RULES": "pondlib.devices.siracusa.config",
    "check_constraints": "pondlib.devices.siracusa.config",
    "validate_config": "pondlib.devices.siracusa.config",
    "config_from_specification": "pondlib.devices.siracusa.config",
    "layer_ranges": "pondlib.devices.siracusa.config",
    "save_config": "pondlib.devices.siracusa.config",
    "load_config": "pondlib.devices.siracusa.config",
    "SiracusaSim": "pondlib.devices.siracusa.sim",
    "wrap32": "pondlib.devices.siracusa.sim",
    "requant_shift": "pondlib.devices.siracusa.sim",
    "gemm_acc": "pondlib.devices.siracusa.sim",
    "conv2d_acc": "pondlib.devices.siracusa.sim",
    "lif_step": "pondlib.devices.siracusa.sim",
    "quantize_input": "pondlib.devices.siracusa.sim",
    "TilePlan": "pondlib.devices.siracusa.tiling",
    "plan_layer": "pondlib.devices.siracusa.tiling",
    "plan_tiles": "pondlib.devices.siracusa.tiling",
    "Placement": "pondlib.devices.siracusa.tiling",
    "place_memory": "pondlib.devices.siracusa.tiling",
    "npu_eligibility": "pondlib.devices.siracusa.tiling",
    "CycleParams": "pondlib.devices.siracusa.cycles",
    "DEFAULT_CYCLES": "pondlib.devices.siracusa.cycles",
    "TUTORIAL_ANCHORS": "pondlib.devices.siracusa.cycles",
    "LayerCycles": "pondlib.devices.siracusa.cycles",
    "layer_cycles": "pondlib.devices.siracusa.cycles",
    "cycle_table": "pondlib.devices.siracusa.cycles",
    "format_cycle_table": "pondlib.devices.siracusa.cycles",
    "eltwise_cycles": "pondlib.devices.siracusa.cycles",
    "leaky_relu_series": "pondlib.devices.siracusa.cycles",
    "decoder_proxy": "pondlib.devices.siracusa.cycles",
    "siracusa_aware": "pondlib.devices.siracusa.aware",
    "SiracusaAware": "pondlib.devices.siracusa.aware",
    "to_siracusa": "pondlib.devices.siracusa.onnx",
    "qdq_to_siracusa": "pondlib.devices.siracusa.onnx",
    "SiracusaDevice": "pondlib.devices.siracusa.device",
    # the graph path: operator graphs (several inputs, attention, Deeploy's integer dialect, ORT QDQ)
    "GraphSim": "pondlib.devices.siracusa.graphsim",
    "GraphRun": "pondlib.devices.siracusa.graphsim",
    "integer_inputs": "pondlib.devices.siracusa.graphsim",
    "supported_ops": "pondlib.devices.siracusa.kernels",
    "qdq_to_graph": "pondlib.devices.siracusa.qdq_graph",
    "QDQReport": "pondlib.devices.siracusa.qdq_graph",
    "map_graph": "pondlib.devices.siracusa.graph_map",
    "GraphMapping": "pondlib.devices.siracusa.graph_map",
    "emit_graph": "pondlib.devices.siracusa.graph_codegen",
    "pack_inputs": "pondlib.devices.siracusa.graph_codegen",
    "unpack_outputs": "pondlib.devices.siracusa.graph_codegen",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
