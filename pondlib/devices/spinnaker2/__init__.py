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
image the scheduler PE walks), ``timing`` (DNN timing model calibrated on the paper).
"""

from pondlib.devices.core.inputs import append_silence
from pondlib.devices.spinnaker2.aware import SpiNNaker2Export, SpiNNaker2LIF, export_spinnaker2, spinnaker2_aware
from pondlib.devices.spinnaker2.config import (
    PEConfig,
    PopulationConfig,
    RoutingEntry,
    SpiNNaker2Config,
    config_from_specification,
    decode_words,
    encode_words,
    validate_config,
)
from pondlib.devices.spinnaker2.device import SpiNNaker2Device
from pondlib.devices.spinnaker2.dnn import (
    DNN_RULES,
    MLP,
    DenseLayer,
    DNNConfig,
    DNNLayerConfig,
    default_workers,
    dnn_mapper,
    train_mlp,
)
from pondlib.devices.spinnaker2.image import parse_image, read_times
from pondlib.devices.spinnaker2.limits import (
    LIMITS,
    SPINNAKER2_BOARD,
    SPINNAKER2_CHIP,
    SPINNAKER2_CHIP_HIGH,
    SpiNNaker2Limits,
    get_limits,
)
from pondlib.devices.spinnaker2.mapper import RULES, SUPPORTED_MODULES, mapper
from pondlib.devices.spinnaker2.onnx import qdq_to_spinnaker2, to_spinnaker2
from pondlib.devices.spinnaker2.sim import (
    DNNSim,
    LIFParams,
    LIFState,
    SpiNNaker2Sim,
    f32_fma,
    lif_step,
    mla_layer,
    run_dram_image,
)
from pondlib.devices.spinnaker2.specification import (
    DELAY_WORD,
    NEURON_MODELS,
    NO_DELAY_WORD,
    DeadlineWarning,
    LIFOptions,
    MappingReport,
    NeuronModel,
    NeuronParams,
    PopulationSpec,
    ProjectionSpec,
    Slice,
    Specification,
    SynapseFormat,
)
from pondlib.devices.spinnaker2.timing import (
    PAPER_ANCHORS,
    PAPER_MODEL,
    LayerTiming,
    PaperAnchors,
    TimingModel,
    TimingReport,
    calibrate,
    estimate,
)

__all__ = [
    "SpiNNaker2Limits",
    "SPINNAKER2_CHIP",
    "SPINNAKER2_CHIP_HIGH",
    "SPINNAKER2_BOARD",
    "LIMITS",
    "get_limits",
    "mapper",
    "RULES",
    "SUPPORTED_MODULES",
    "Specification",
    "PopulationSpec",
    "ProjectionSpec",
    "Slice",
    "MappingReport",
    "DeadlineWarning",
    "SpiNNaker2Config",
    "NeuronParams",
    "PopulationConfig",
    "PEConfig",
    "RoutingEntry",
    "LIFOptions",
    "NeuronModel",
    "NEURON_MODELS",
    "SynapseFormat",
    "DELAY_WORD",
    "NO_DELAY_WORD",
    "encode_words",
    "decode_words",
    "config_from_specification",
    "validate_config",
    "SpiNNaker2Sim",
    "DNNSim",
    "LIFParams",
    "LIFState",
    "lif_step",
    "f32_fma",
    "mla_layer",
    "run_dram_image",
    "append_silence",
    "parse_image",
    "read_times",
    "MLP",
    "DenseLayer",
    "DNNConfig",
    "DNNLayerConfig",
    "dnn_mapper",
    "train_mlp",
    "default_workers",
    "DNN_RULES",
    "TimingModel",
    "PaperAnchors",
    "PAPER_ANCHORS",
    "PAPER_MODEL",
    "LayerTiming",
    "TimingReport",
    "calibrate",
    "estimate",
    "spinnaker2_aware",
    "export_spinnaker2",
    "SpiNNaker2LIF",
    "SpiNNaker2Export",
    "to_spinnaker2",
    "qdq_to_spinnaker2",
    "SpiNNaker2Device",
]
