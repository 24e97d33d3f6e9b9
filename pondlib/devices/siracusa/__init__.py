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
"""

from pondlib.devices.siracusa.aware import SiracusaAware, siracusa_aware
from pondlib.devices.siracusa.config import (
    RULES,
    SiracusaConfig,
    check_constraints,
    config_from_specification,
    layer_ranges,
    load_config,
    save_config,
    validate_config,
)
from pondlib.devices.siracusa.cycles import (
    DEFAULT_CYCLES,
    TUTORIAL_ANCHORS,
    CycleParams,
    LayerCycles,
    cycle_table,
    decoder_proxy,
    eltwise_cycles,
    format_cycle_table,
    layer_cycles,
    leaky_relu_series,
)
from pondlib.devices.siracusa.device import SiracusaDevice
from pondlib.devices.siracusa.limits import LIMITS, SIRACUSA, SiracusaLimits, get_limits
from pondlib.devices.siracusa.mapper import (
    Conv2dLayer,
    GemmLayer,
    IntLIFLayer,
    ReLU,
    float_forward,
    layers_from_graph,
    mapper,
    requant_from_scale,
)
from pondlib.devices.siracusa.onnx import qdq_to_siracusa, to_siracusa
from pondlib.devices.siracusa.sim import (
    SiracusaSim,
    conv2d_acc,
    gemm_acc,
    lif_step,
    quantize_input,
    requant_shift,
    wrap32,
)
from pondlib.devices.siracusa.specification import (
    QLIF,
    LayerReport,
    QConv2d,
    QGemm,
    QRequant,
    RequantShift,
    Specification,
)
from pondlib.devices.siracusa.tiling import (
    Placement,
    TilePlan,
    npu_eligibility,
    place_memory,
    plan_layer,
    plan_tiles,
)

__all__ = [
    "SiracusaLimits",
    "SIRACUSA",
    "LIMITS",
    "get_limits",
    "GemmLayer",
    "Conv2dLayer",
    "ReLU",
    "IntLIFLayer",
    "layers_from_graph",
    "float_forward",
    "requant_from_scale",
    "mapper",
    "Specification",
    "LayerReport",
    "RequantShift",
    "QGemm",
    "QConv2d",
    "QRequant",
    "QLIF",
    "SiracusaConfig",
    "RULES",
    "check_constraints",
    "validate_config",
    "config_from_specification",
    "layer_ranges",
    "save_config",
    "load_config",
    "SiracusaSim",
    "wrap32",
    "requant_shift",
    "gemm_acc",
    "conv2d_acc",
    "lif_step",
    "quantize_input",
    "TilePlan",
    "plan_layer",
    "plan_tiles",
    "Placement",
    "place_memory",
    "npu_eligibility",
    "CycleParams",
    "DEFAULT_CYCLES",
    "TUTORIAL_ANCHORS",
    "LayerCycles",
    "layer_cycles",
    "cycle_table",
    "format_cycle_table",
    "eltwise_cycles",
    "leaky_relu_series",
    "decoder_proxy",
    "siracusa_aware",
    "SiracusaAware",
    "to_siracusa",
    "qdq_to_siracusa",
    "SiracusaDevice",
]
