"""SpiNNaker2 as a :class:`~pondlib.devices.core.device.Device`: the chip's parts behind the one interface.

The SNN path maps onto ARM PEs (:func:`~pondlib.devices.spinnaker2.mapper.mapper`: float32 LIF, 16-bit
synapse words, one tick per hop) and runs on :class:`~pondlib.devices.spinnaker2.sim.SpiNNaker2Sim`;
the DNN path (ONNX models) runs int8 layers on the MLA (:func:`~pondlib.devices.spinnaker2.dnn.dnn_mapper`,
``DNNSim``) and is saved as the DRAM image the scheduler PE walks (``pond simulate`` reads it back).
The device-aware twin is :func:`~pondlib.devices.spinnaker2.aware.spinnaker2_aware`; the C numerics
:func:`~pondlib.devices.spinnaker2.codegen.emit`.

Example:
    >>> d = SpiNNaker2Device()
    >>> d.limits("board").name, d.options[0].flag, d.options[0].default
    ('SpiNNaker2 board (48 chips)', '--neuron-model', 'lif_curr_exp')
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pondlib.devices.core.device import (
    DeploySettings,
    Device,
    DeviceReport,
    GapContext,
    Mapped,
    Option,
    Reference,
    Saved,
    SavedRun,
    dnn_saved_run,
    lif_layers,
    scale_lines,
    simulator_runner,
)
from pondlib.devices.core.report import LimitRow, Table, one_spike_row
from pondlib.devices.spinnaker2.specification import NEURON_MODELS
from pondlib.errors import ConfigError, PondError

__all__ = ["SpiNNaker2Device"]

_AWARE = "pondlib.devices.spinnaker2.aware"
_ONNX = "pondlib.devices.spinnaker2.onnx"
#: The file magic of a DRAM image (``DNNConfig.to_dram_image``).
_MAGIC = b"S2DNNIMG"
#: The other synapse word of each neuron model (the quantization table shows its error too).
_OTHER_WORD = {
    "lif": "lif_no_delay",
    "lif_no_delay": "lif",
    "lif_curr_exp": "lif_curr_exp_no_delay",
    "lif_curr_exp_no_delay": "lif_curr_exp",
}


class SpiNNaker2Device(Device):
    """SpiNNaker2: ARM Cortex-M4F PEs (SNN: float32 LIF, 16-bit synapse words) and int8 MLA DNN layers."""

    name = "spinnaker2"
    title = "SpiNNaker2: ARM Cortex-M4F PEs (SNN: float32 LIF, 16-bit synapse words)"
    default_variant = "chip"
    options = (
        Option(
            "neuron_model",
            "SpiNNaker2 only: the neuron model and synapse word (default lif_curr_exp: 4-bit weights with delays; "
            "*_no_delay: 7-bit weights)",
            choices=tuple(NEURON_MODELS),
            default="lif_curr_exp",
        ),
        Option(
            "chips",
            "SpiNNaker2 only: spread the network over N chips (SNNs and ONNX models; more than one chip maps onto "
            "the 48-chip board)",
            default=None,
            commands=("map", "map-onnx"),
        ),
    )
    deploy_settings = DeploySettings(
        options={"neuron_model": "lif_curr_exp_no_delay"},
        lr=1e-3,
        describe="synapse-word weights, integer synaptic input, float32 neuron update in the chip's order, "
        "one spike per tick, one tick per hop",
    )
    has_c = True
    has_twin = True
    takes_onnx = True
    quantizes_saved_input = True
    moved = {
        "pondlib.transform:spinnaker2_aware": f"{_AWARE}:spinnaker2_aware",
        "pondlib.transform:export_spinnaker2": f"{_AWARE}:export_spinnaker2",
        "pondlib.interop.onnx:to_spinnaker2": f"{_ONNX}:to_spinnaker2",
        "pondlib.interop.onnx:qdq_to_spinnaker2": f"{_ONNX}:qdq_to_spinnaker2",
        "pondlib.interop:qdq_to_spinnaker2": f"{_ONNX}:qdq_to_spinnaker2",
    }

    @property
    def display_name(self) -> str:
        return "SpiNNaker2"

    def called(self, limits: Any) -> str:
        return f"the {limits.name}"

    # -- limits ------------------------------------------------------------------------------------------
    @property
    def variants(self) -> Mapping[str, Any]:
        from pondlib.devices.spinnaker2.limits import LIMITS

        return LIMITS

    def limit_rows(self, limits: Any) -> tuple[LimitRow, ...]:
        from pondlib.devices.spinnaker2.report import limit_rows

        return limit_rows(self.limits(limits))

    # -- mapping, simulation, report --------------------------------------------------------------------
    def map(
        self,
        net: Any,
        limits: Any = None,
        *,
        calibration: Any = None,
        neuron_model: str = "lif_curr_exp",
        chips: Any = None,
    ) -> Mapped:
        """SNN mapping onto PEs and configuration. A PE that would run late is a warning, not an error.

        Raises:
            ConstraintError: every broken design rule. PondError: ``calibration`` given (the SNN path's
                scales come from the weights).
        """
        from pondlib.devices.spinnaker2.report import configure, map_network, quantization_summary

        if calibration is not None:
            raise PondError(
                "calibration",
                value="given",
                limit="none: the SNN path's scales come from the weights",
                where="spinnaker2 map",
                fix="leave calibration out",
            )
        from pondlib.devices.spinnaker2.graph_device import limits_for_chips, parse_chips

        n_chips = parse_chips(chips)
        lim, chip_notes = limits_for_chips(self.limits(limits), n_chips)
        spec, late = map_network(net, lim, neuron_model, n_chips)
        config = configure(spec, "spinnaker2 map")
        extra: dict[str, Any] = {}
        try:  # the other synapse word of the same model, for the quantization table's caption
            other, _ = map_network(net, lim, _OTHER_WORD[spec.neuron_model])
            extra["other_word"] = quantization_summary(other)
        except PondError:
            pass
        return Mapped(
            self.name,
            lim,
            spec,
            config,
            notes=tuple(spec.report.notes) + tuple(chip_notes),
            warnings=tuple(late),
            latency=int(spec.latency_ticks),
            summary=f"{spec.latency_ticks} ticks from input to output, {spec.report.pes_used} PEs"
            + (f" on {n_chips} chips of the {lim.name}" if n_chips > 1 else ""),
            extra=extra,
        )

    def configure(self, spec: Any) -> tuple[Any, bool, str]:
        from pondlib.devices.spinnaker2.config import config_from_specification

        return config_from_specification(spec)

    def mapping_title(self, limits: Any, options: Mapping[str, Any]) -> str:
        model = options.get("neuron_model") or self.options[0].default
        return f"Mapping to the {limits.name} ({model}), configuring"

    def run(self, mapped: Mapped, x: Any, *, record: bool = True) -> tuple[np.ndarray, dict]:
        return self.runner(mapped, record=record)(x)

    def runner(self, mapped: Mapped, *, record: bool = True) -> Any:
        from pondlib.devices.spinnaker2.sim import SpiNNaker2Sim

        return simulator_runner(SpiNNaker2Sim.from_config(mapped.config), record, keep=".spikes")

    def report(self, mapped: Mapped, record: Mapping[str, Any] | None = None) -> DeviceReport:
        from pondlib.devices.spinnaker2.report import quantization_summary, quantization_table, resource_usage

        spec, lim = mapped.spec, mapped.limits
        return DeviceReport(
            f"Resources on the {lim.name} ({spec.neuron_model})",
            resource_usage(spec, lim, None if record is None else dict(record)),
            (quantization_table(quantization_summary(spec), mapped.extra.get("other_word")),),
        )

    def gaps(self, mapped: Mapped, context: GapContext) -> Table | None:
        from pondlib.devices.spinnaker2.report import float_vs_chip_gaps, gaps_table

        lifs = lif_layers(context.net)
        if not lifs:
            return None
        key, hidden = lifs[0]
        g = float_vs_chip_gaps(mapped.spec, context.x, dict(context.record), context.float_record[f"{key}/spikes"])
        first = [
            one_spike_row(float(hidden.max_spikes_per_dt), context.float_acc, context.as_trained_acc, context.aware_acc)
        ]
        return gaps_table(mapped.limits.name, g, first, activity_note="network as trained")

    def describe_delay(self, mapped: Mapped) -> str:
        return f"{mapped.latency} ticks"

    # -- device-aware training --------------------------------------------------------------------------
    def aware(self, net: Any, **options: Any) -> Any:
        """:func:`~pondlib.devices.spinnaker2.aware.spinnaker2_aware` (options: ``neuron_model``, ``limits``,
        ``delays``, ``options``, ``surrogate``)."""
        from pondlib.devices.spinnaker2.aware import spinnaker2_aware

        return spinnaker2_aware(net, **options)

    def twin(self, net: Any, mapped: Mapped, calibration: Any = None) -> Any:
        return self.aware(net, neuron_model=mapped.spec.neuron_model, limits=mapped.limits)

    def lr_scale(self, twin: Any) -> float:
        """The twin holds chip units: the mapper's weight scale (geometric mean over layers)."""
        from pondlib.devices.spinnaker2.aware import chip_unit_scale

        return float(chip_unit_scale(twin))

    def export(self, twin: Any, limits: Any = None) -> Mapped:
        """:func:`~pondlib.devices.spinnaker2.aware.export_spinnaker2`, configured; ``extra["network"]`` is the
        exported float network (it maps to the same specification)."""
        from pondlib.devices.spinnaker2.aware import export_spinnaker2
        from pondlib.devices.spinnaker2.report import configure

        lim = self.limits(limits)
        exp = export_spinnaker2(twin, lim)
        spec = exp.spec
        return Mapped(
            self.name,
            lim,
            spec,
            configure(spec, "spinnaker2 export"),
            notes=tuple(spec.report.notes),
            latency=int(spec.latency_ticks),
            summary=f"{spec.report.pes_used} PEs",
            extra={"network": exp.net, "export": exp},
        )

    def spike_pairs(self, twin: Any, mapped: Mapped) -> list[tuple[str, str, str]]:
        pops = [p.name for p in mapped.spec.populations]
        return [
            ("hidden" if i < len(pops) - 1 else "output", f"{i}_SpiNNaker2LIF/spikes", f"{p}.spikes")
            for i, p in enumerate(pops)
        ]

    @property
    def specification_type(self) -> type:  # type: ignore[override]
        """The mapper's (already integer) specification: the quantizers say that this mapper quantizes."""
        from pondlib.devices.spinnaker2.specification import Specification

        return Specification

    # -- C -----------------------------------------------------------------------------------------------
    def emit(self, model: Any, *, name: str = "net", **options: Any) -> Any:
        from pondlib.devices.spinnaker2.codegen import emit

        return emit(model, name=name, **options)

    def reference(self, config: Any) -> Reference:
        from pondlib.devices.spinnaker2.sim import SpiNNaker2Sim

        return Reference(lambda x: np.asarray(SpiNNaker2Sim.from_config(config).evolve(x)[0]))

    # -- ONNX (the MLA path) -----------------------------------------------------------------------------
    def map_onnx(self, model: Any, calibration: Any, limits: Any = None, chips: Any = None) -> Mapped:
        """A Gemm (+ ReLU) chain on one chip as MLA layers (a version-1 image); any other model of the graph
        path's ops (convolutions, pools, residual adds), or ``chips > 1``, through ``graph_mapper``."""
        from pondlib.devices.spinnaker2.dnn import dnn_mapper
        from pondlib.devices.spinnaker2.graph_device import limits_for_chips, map_float_graph, parse_chips
        from pondlib.devices.spinnaker2.onnx import to_spinnaker2
        from pondlib.errors import ONNXError

        n_chips = parse_chips(chips)
        calib = np.asarray(calibration)
        if n_chips == 1:
            try:
                mlp = to_spinnaker2(model)
            except ONNXError:
                mlp = None
            if mlp is not None:
                cfg = dnn_mapper(mlp, calib.reshape(len(calib), -1), limits)
                return Mapped(self.name, self.limits(limits), None, cfg, summary=f"{len(cfg.layers)} MLA layers")
        lim, chip_notes = limits_for_chips(self.limits(limits), n_chips)
        cfg = map_float_graph(model, calib, lim, n_chips)
        summary = f"{len(cfg.ops)} ops on {n_chips} chip(s), {len(cfg.transfers)} chip-to-chip transfers"
        return Mapped(self.name, lim, None, cfg, notes=tuple(chip_notes), summary=summary)

    def map_qdq(self, model: Any, limits: Any = None, chips: Any = None) -> Mapped:
        """A QDQ Gemm chain as MLA layers (a version-1 image); a QDQ CNN (conv layers) on the graph path. One
        chip only (``chips`` > 1 is refused: map the float model to spread it over chips)."""
        from pondlib.devices.spinnaker2.graph_device import parse_chips
        from pondlib.devices.spinnaker2.onnx import qdq_to_spinnaker2

        if parse_chips(chips) > 1:
            raise ConfigError(
                "chips",
                value=chips,
                limit="1 for a quantized (QDQ) model",
                where="spinnaker2 map_qdq",
                fix="map the float ONNX model with --calibration and --chips (the graph path quantizes it)",
            )

        if any(ly.kind == "conv" for ly in model.layers):
            from pondlib.devices.spinnaker2.graph_qdq import qdq_to_graph

            cfg, rep = qdq_to_graph(model, limits)
        else:
            cfg, rep = qdq_to_spinnaker2(model)
        return Mapped(self.name, self.limits(limits), None, cfg, extra={"scales": rep})

    def describe_dnn(self, mapped: Mapped) -> list[str]:
        from pondlib.devices.spinnaker2.dnn_graph import GraphConfig
        from pondlib.devices.spinnaker2.graph_device import describe_graph

        if isinstance(mapped.config, GraphConfig):
            return describe_graph(mapped.config) + scale_lines(mapped.extra.get("scales", []))
        if "scales" in mapped.extra:
            return scale_lines(mapped.extra["scales"])
        return [f"{ly.name}: {ly.weights.shape} shift {ly.shift} workers {ly.workers}" for ly in mapped.config.layers]

    def explore_hardware(self, level: str | None = None) -> dict[str, Any]:
        """One PE for schedule exploration (:mod:`pondlib.devices.spinnaker2.explore_hardware`)."""
        from pondlib.devices.spinnaker2.explore_hardware import explore_hardware

        return explore_hardware(level)

    def save(self, mapped: Mapped, path: str | Path) -> str:
        """The DRAM image of a DNN mapping (``DNNConfig.to_dram_image``)."""
        from pondlib.devices.spinnaker2.dnn import DNNConfig
        from pondlib.devices.spinnaker2.dnn_graph import GraphConfig

        if not isinstance(mapped.config, (DNNConfig, GraphConfig)):
            raise PondError(
                "a SpiNNaker2 SNN configuration has no saved form",
                where="spinnaker2 save",
                fix="save the network (pondlib.io.save_network) and map it again",
            )
        data = mapped.config.to_dram_image()
        try:
            Path(path).write_bytes(data)
        except OSError as exc:
            raise PondError(
                f"cannot write the DRAM image ({type(exc).__name__})", where=str(path), fix="pass a writable path"
            ) from None
        return f"SpiNNaker2 DRAM image, {len(data):,} bytes"

    # -- saved deployments -------------------------------------------------------------------------------
    def recognise(self, path: str | Path) -> bool:
        try:
            with open(path, "rb") as fh:
                return fh.read(len(_MAGIC)) == _MAGIC
        except OSError:
            return False

    def load(self, path: str | Path) -> Saved:
        """The DNN configuration of a DRAM image file, with the image's bytes (``pond simulate`` walks them)."""
        from pondlib.devices.spinnaker2.dnn_graph import load_dnn_image
        from pondlib.validate import check_file_size

        try:
            check_file_size(Path(path), "DRAM image", error=ConfigError)  # the size budget, before reading
            data = Path(path).read_bytes()
        except OSError as exc:
            raise PondError(
                f"cannot read the DRAM image ({type(exc).__name__})",
                where=str(path),
                fix="pass a file written by pond map model.onnx --device spinnaker2 --out FILE",
            ) from None
        try:
            return Saved(load_dnn_image(data), data=data)
        except ConfigError as err:
            raise ConfigError(
                f"SpiNNaker2 DRAM image {err.what}",
                value=err.value,
                limit=err.limit,
                where=str(path),
                fix=err.fix or "write the image again with pond map model.onnx --out",
            ) from None

    def simulate_saved(self, saved: Saved, x: np.ndarray, *, quantize: bool = False, where: str = "input") -> SavedRun:
        """Walk a DRAM image on ``x`` (B, N_in): int8 input, or real numbers with ``quantize`` (the QDQ model's
        input scale stored in the image, float32 division as ONNX QuantizeLinear; else ``2^input_frac``)."""
        from pondlib.devices.core.inputs import dnn_input
        from pondlib.devices.spinnaker2 import run_dram_image
        from pondlib.devices.spinnaker2.dnn_graph import GraphConfig
        from pondlib.devices.spinnaker2.graph_device import simulate_graph_image

        cfg, data = saved.config, saved.data
        if isinstance(cfg, GraphConfig):
            return simulate_graph_image(cfg, data, x, quantize, where)
        k = cfg.layers[0].weights.shape[0]
        scale = cfg.report.get("input_scale") if isinstance(cfg.report, dict) else None

        def quantizer(v: Any) -> Any:
            if scale is None:
                return cfg.quantize_input(v)
            q = np.rint(v.astype(np.float32) / np.float32(scale))
            return np.clip(q, -128, 127).astype(np.int64)

        x = dnn_input(x, -128, 127, (2,), quantizer if quantize else None, where)
        if x.shape[-1] != k:
            raise PondError(
                f"input has {x.shape[-1]} columns, the image's first layer {k}", where=where, fix=f"pass (B, {k}) input"
            )
        y, _ = run_dram_image(data, x)
        return dnn_saved_run(f"SpiNNaker2 DRAM image, {len(cfg.layers)} layers, {k} -> {y.shape[-1]}", x, y, self.name)
