"""Siracusa as a :class:`~pondlib.devices.core.device.Device`: the chip's parts behind the one interface.

Mapping turns a chain of linear weights and LIF neurons into float layer descriptions
(:func:`~pondlib.devices.siracusa.layers.layers_from_graph`) and quantizes them on calibration data
(:func:`~pondlib.devices.siracusa.mapper.mapper`: int8 GEMMs with RequantShift, the 16-bit integer LIF,
L1 tiles, L2/L3 placement); :class:`~pondlib.devices.siracusa.sim.SiracusaSim` runs the configuration on
quantized input. ONNX models (float or QDQ) take the same path as DNN layer chains
(:mod:`pondlib.devices.siracusa.onnx`); configurations are saved with
:func:`~pondlib.devices.siracusa.config.save_config`.

Example:
    >>> d = SiracusaDevice()
    >>> d.name, d.needs_calibration, d.options[0].flag
    ('siracusa', True, '--drop-synapse')
"""

from __future__ import annotations

import zipfile
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
from pondlib.devices.core.report import LimitRow, Resource, Table, one_spike_row
from pondlib.errors import ConfigError, PondError

__all__ = ["SiracusaDevice"]

_AWARE = "pondlib.devices.siracusa.aware"
_ONNX = "pondlib.devices.siracusa.onnx"


class SiracusaDevice(Device):
    """Siracusa (PULP cluster + N-EUREKA NPU): int8 layers with RequantShift and an integer LIF."""

    name = "siracusa"
    title = "Siracusa (PULP cluster + N-EUREKA NPU): int8 layers with RequantShift"
    default_variant = "siracusa"
    needs_calibration = True
    options = (
        Option(
            "drop_synapse",
            "Siracusa only: feed LIF input straight into the membrane (its integer LIF has no synaptic "
            "current; this changes the dynamics)",
            switch=True,
        ),
    )
    deploy_settings = DeploySettings(
        options={"drop_synapse": True},
        lr=1e-2,
        describe="int8 weights and activations, the integer LIF with its requantization shifts and 16-bit "
        "state, one spike per step, no synaptic current",
    )
    has_c = True
    has_twin = True
    takes_onnx = True
    quantizes_saved_input = True
    moved = {
        "pondlib.transform:siracusa_aware": f"{_AWARE}:siracusa_aware",
        "pondlib.interop.onnx:to_siracusa": f"{_ONNX}:to_siracusa",
        "pondlib.interop.onnx:qdq_to_siracusa": f"{_ONNX}:qdq_to_siracusa",
        "pondlib.interop:qdq_to_siracusa": f"{_ONNX}:qdq_to_siracusa",
    }

    # -- limits ------------------------------------------------------------------------------------------
    @property
    def variants(self) -> Mapping[str, Any]:
        from pondlib.devices.siracusa.limits import LIMITS

        return LIMITS

    def limit_rows(self, limits: Any) -> tuple[LimitRow, ...]:
        from pondlib.devices.siracusa.report import limit_rows

        return limit_rows(self.limits(limits))

    # -- mapping, simulation, report --------------------------------------------------------------------
    def map(self, net: Any, limits: Any = None, *, calibration: Any = None, drop_synapse: bool = False) -> Mapped:
        """Float layers of ``net``, quantized on ``calibration`` (B, T, N_in), placed, tiled and configured.

        Raises:
            PondError: no ``calibration``. GraphError: a LIF with a synaptic current without
                ``drop_synapse=True`` (the integer LIF has a membrane only). ConstraintError: every broken rule.
        """
        from pondlib.devices.siracusa.report import configure, map_network

        if calibration is None:
            raise PondError(
                "calibration",
                value="none",
                limit="representative input (B, T, N_in)",
                where="siracusa map",
                fix="pass calibration=, the data whose range sets the integer scales",
            )
        lim = self.limits(limits)
        layers, spec = map_network(net, lim, calibration, drop_synapse)
        config = configure(spec, "siracusa map")
        return Mapped(self.name, lim, spec, config, summary=f"{len(config.layers)} layers", extra={"layers": layers})

    def configure(self, spec: Any) -> tuple[Any, bool, str]:
        from pondlib.devices.siracusa.config import config_from_specification

        return config_from_specification(spec)

    def mapping_title(self, limits: Any, options: Mapping[str, Any]) -> str:
        return f"Mapping to {limits.name} (int8 GEMM + 16-bit integer LIF)"

    def run(self, mapped: Mapped, x: Any, *, record: bool = True) -> tuple[np.ndarray, dict]:
        return self.runner(mapped, record=record)(x)

    def runner(self, mapped: Mapped, *, record: bool = True) -> Any:
        from pondlib.devices.siracusa.sim import SiracusaSim, quantize_input

        config = mapped.config
        return simulator_runner(
            SiracusaSim(config), record, prepare=lambda x: quantize_input(x, config), keep="/spikes"
        )

    def report(self, mapped: Mapped, record: Mapping[str, Any] | None = None) -> DeviceReport:
        from pondlib.devices.siracusa.report import quantization_summary, quantization_table, resource_usage

        lim = mapped.limits
        if "graph" in mapped.extra:
            return self._graph_report(mapped)
        return DeviceReport(
            f"Resources on {lim.name} (per step of one sample)",
            resource_usage(mapped.spec, lim),
            (quantization_table(quantization_summary(mapped.spec)),),
        )

    def _graph_report(self, mapped: Mapped) -> DeviceReport:
        """Memory and cycles of a graph mapping (:class:`~pondlib.devices.siracusa.graph_map.GraphMapping`)."""
        m, lim = mapped.spec, mapped.limits
        resources = (
            Resource("L2 (weights + peak live activations)", m.l2_peak, lim.l2_bytes, "B"),
            Resource("L3 (weights placed off-chip)", m.l3_bytes, lim.l3_bytes, "B"),
            Resource("cycles per inference", round(m.cycles), None, "", f"{m.cores} core(s)"),
        )
        return DeviceReport(f"Resources on {lim.name} (one inference)", resources, (m.as_table(),))

    def gaps(self, mapped: Mapped, context: GapContext) -> Table | None:
        from pondlib.devices.siracusa.layers import float_forward
        from pondlib.devices.siracusa.report import float_vs_chip_gaps, gaps_table

        lifs = lif_layers(context.net)
        if not lifs:
            return None
        key, lif = lifs[0]
        g = float_vs_chip_gaps(
            mapped.spec, dict(context.record), context.float_record[f"{key}/spikes"], lif.tau_mem, lif.dt
        )
        first = []
        tau_syn = float(np.asarray(lif.tau_syn).ravel()[0])
        if "layers" in mapped.extra and np.isfinite(tau_syn):
            out = float_forward(mapped.extra["layers"], context.x)[0][-1]
            dyn_acc = float(np.mean(np.argmax(np.asarray(out).sum(axis=1), axis=-1) == np.asarray(context.y)))
            first.append(
                (
                    "synaptic current",
                    f"I = beta (I + x), tau_syn = {tau_syn * 1e3:.2f} ms",
                    "none: v = alpha v + I (membrane only)",
                    f"dropped (drop_synapse=True): the float model without it scores {dyn_acc:.1%} against "
                    f"{context.float_acc:.1%} with it; the device-aware model trains without it",
                )
            )
        first.append(
            one_spike_row(float(lif.max_spikes_per_dt), context.float_acc, context.as_trained_acc, context.aware_acc)
        )
        return gaps_table(mapped.limits.name, g, first, activity_note="network as trained")

    # -- device-aware training --------------------------------------------------------------------------
    def aware(self, net: Any, **options: Any) -> Any:
        """:func:`~pondlib.devices.siracusa.aware.siracusa_aware` (options: ``calibration`` (required), ``limits``)."""
        from pondlib.devices.siracusa.aware import siracusa_aware

        return siracusa_aware(net, **options)

    def twin(self, net: Any, mapped: Mapped, calibration: Any = None) -> Any:
        return self.aware(net, calibration=calibration, limits=mapped.limits)

    def export(self, twin: Any, limits: Any = None) -> Mapped:
        """The twin's integer layers with the mapper's state scales pinned to the twin's, mapped and configured."""
        from pondlib.devices.siracusa.aware import export
        from pondlib.devices.siracusa.mapper import mapper
        from pondlib.devices.siracusa.report import configure

        lim = self.limits(limits)
        layers, kwargs = export(twin, lim)
        spec = mapper(layers, lim, **kwargs)
        config = configure(spec, "siracusa export")
        return Mapped(self.name, lim, spec, config, summary=f"{len(config.layers)} layers", extra={"layers": layers})

    def spike_pairs(self, twin: Any, mapped: Mapped) -> list[tuple[str, str, str]]:
        n = twin.n_layers
        return [("hidden" if i < n - 1 else "output", f"lif{i}/spikes", f"lif{i}/spikes") for i in range(n)]

    @property
    def specification_type(self) -> type:  # type: ignore[override]
        """The mapper's (already integer) specification: the quantizers say that this mapper quantizes."""
        from pondlib.devices.siracusa.specification import Specification

        return Specification

    # -- C -----------------------------------------------------------------------------------------------
    cluster_c = True

    def emit(self, model: Any, *, name: str = "net", **options: Any) -> Any:
        """Layer chains through :func:`~pondlib.devices.siracusa.codegen.emit`; operator graphs (integer mode)
        through :func:`~pondlib.devices.siracusa.graph_codegen.emit_graph`, or, given ``cores`` (with
        ``l1_bytes``, ``l2_bytes``, ``double_buffer``), the tiled multi-core
        :func:`~pondlib.devices.siracusa.graph_codegen_cluster.emit_cluster` (graphs) and
        :func:`~pondlib.devices.siracusa.codegen_cluster.emit_chain_cluster` (chains; any cluster option given:
        ``cores`` defaults to 8)."""
        from pondlib.graph.opgraph import OpGraph

        cluster = {k: options.pop(k) for k in ("cores", "l1_bytes", "l2_bytes", "double_buffer") if k in options}
        if isinstance(model, OpGraph):
            options.pop("validate", None)
            if cluster.get("cores") is not None:
                from pondlib.devices.siracusa.graph_codegen_cluster import emit_cluster

                return emit_cluster(model, name=name, **{k: v for k, v in cluster.items() if v is not None}, **options)
            from pondlib.devices.siracusa.graph_codegen import emit_graph

            return emit_graph(model, name=name, **options)
        if any(v is not None for v in cluster.values()):
            from pondlib.devices.siracusa.codegen_cluster import emit_chain_cluster

            return emit_chain_cluster(
                model, name=name, **{k: v for k, v in cluster.items() if v is not None}, **options
            )
        from pondlib.devices.siracusa.codegen import emit

        return emit(model, name=name, **options)

    def reference(self, config: Any) -> Reference:
        from pondlib.graph.opgraph import OpGraph

        if isinstance(config, OpGraph):
            return _graph_reference(config)
        from pondlib.devices.siracusa.sim import SiracusaSim, quantize_input

        return Reference(
            lambda x: np.asarray(SiracusaSim.from_config(config).evolve(x)[0]), lambda x: quantize_input(x, config)
        )

    # -- ONNX --------------------------------------------------------------------------------------------
    def map_onnx(self, model: Any, calibration: Any, limits: Any = None) -> Mapped:
        from pondlib.devices.siracusa.mapper import mapper
        from pondlib.devices.siracusa.onnx import to_siracusa
        from pondlib.errors import ONNXError
        from pondlib.validate import as_float_array

        layers, perm = to_siracusa(model)
        calib = as_float_array(calibration, "calibration", where="map_onnx", error=ONNXError, ndim=None)
        if calib.ndim < 2 or calib[0].size != perm.size:
            raise ONNXError(
                "calibration shape", value=calib.shape, limit=f"(B, {perm.size}) or (B, *{tuple(model.input_shape)})",
                where="map_onnx", fix="pass representative inputs, one column per model input feature",
            )  # fmt: skip
        spec = mapper(layers, limits, calibration=calib.reshape(len(calib), -1)[:, perm])
        return Mapped(self.name, self.limits(limits), spec, spec.config, extra={"layers": layers, "input_order": perm})

    def map_qdq(self, model: Any, limits: Any = None) -> Mapped:
        from pondlib.devices.siracusa.onnx import qdq_to_siracusa
        from pondlib.graph.dnn import hwc_permutation

        cfg, rep = qdq_to_siracusa(model)
        order = hwc_permutation(model.input_shape)
        return Mapped(self.name, self.limits(limits), None, cfg, extra={"scales": rep, "input_order": order})

    takes_graphs = True

    def map_graph(self, graph: Any, limits: Any = None) -> Mapped:
        """An operator graph on Siracusa: a QDQ graph becomes an integer graph first
        (:func:`~pondlib.devices.siracusa.qdq_graph.qdq_to_graph`); every op must have a kernel (checked by
        :class:`~pondlib.devices.siracusa.graphsim.GraphSim`), then
        :func:`~pondlib.devices.siracusa.graph_map.map_graph` places, tiles and costs it."""
        from pondlib.devices.siracusa.graph_map import map_graph
        from pondlib.devices.siracusa.graphsim import GraphSim

        notes: list[str] = []
        extra: dict[str, Any] = {}
        if any(n.op in ("QuantizeLinear", "DequantizeLinear") for n in graph.nodes):
            from pondlib.devices.siracusa.qdq_graph import qdq_to_graph

            graph, qdq = qdq_to_graph(graph)
            extra["qdq"] = qdq
            notes.append(f"QDQ graph rewritten as an integer graph of {len(graph.nodes)} ops")
        GraphSim(graph)
        mapping = map_graph(graph, limits=limits)
        extra["graph"] = graph
        summary = f"{len(graph.nodes)} ops"
        return Mapped(self.name, self.limits(limits), mapping, graph, tuple(notes), summary=summary, extra=extra)

    def graph_inputs(self, graph: Any, arrays: Any) -> np.ndarray:
        from pondlib.devices.siracusa.graph_codegen import pack_inputs

        return pack_inputs(graph, list(arrays))[None, None, :]

    def run_graph(self, graph: Any, inputs: Any) -> tuple[list[Any], bool]:
        """:class:`~pondlib.devices.siracusa.graphsim.GraphSim` on ``inputs``, integer mode when
        :func:`~pondlib.devices.siracusa.graphsim.integer_inputs` says so."""
        from pondlib.devices.siracusa.graphsim import GraphSim, integer_inputs

        ins = list(inputs)
        integer = integer_inputs(graph, ins)
        return GraphSim(graph).run(ins, integer=integer, record=False).output_list(), integer

    def describe_dnn(self, mapped: Mapped) -> list[str]:
        if "graph" in mapped.extra:
            return list(mapped.spec.table())
        if "scales" in mapped.extra:
            return scale_lines(mapped.extra["scales"])
        return mapped.spec.report_table().splitlines()

    def explore_hardware(self, level: str | None = None) -> dict[str, Any]:
        """The cluster for schedule exploration (:mod:`pondlib.devices.siracusa.explore_hardware`)."""
        from pondlib.devices.siracusa.explore_hardware import explore_hardware

        return explore_hardware(level)

    def explore_mapping(self, net: Any, time_steps: int) -> dict[str, Any] | None:
        """The L1 tiling this mapper chooses (:func:`pondlib.devices.siracusa.explore_hardware.mapper_traffic`)."""
        from pondlib.devices.siracusa.explore_hardware import mapper_traffic

        return mapper_traffic(net, time_steps)

    def save(self, mapped: Mapped, path: str | Path) -> str:
        """The configuration as an ``.npz`` archive (:func:`~pondlib.devices.siracusa.config.save_config`), with
        the input order of a CNN (NCHW -> HWC) when it is not the identity."""
        from pondlib.devices.siracusa.config import save_config

        if "graph" in mapped.extra:
            raise ConfigError(
                "saved deployment",
                value="an operator graph (graph path)",
                limit="a layer chain (the .npz configuration format holds chains)",
                where="pond map --out",
                fix="emit the graph as C with pondlib.devices.siracusa.graph_codegen.emit_graph, or map a chain",
            )
        order = mapped.extra.get("input_order")
        order = None if order is None else np.asarray(order)
        if order is not None and np.array_equal(order, np.arange(order.size)):
            order = None
        save_config(path, mapped.config, input_order=order)
        return "Siracusa configuration" + ("" if order is None else " (with its input order)")

    # -- saved deployments -------------------------------------------------------------------------------
    def recognise(self, path: str | Path) -> bool:
        """An ``.npz`` archive whose ``format`` entry is the Siracusa configuration format."""
        try:
            with open(path, "rb") as fh:
                if fh.read(2) != b"PK":
                    return False
            with zipfile.ZipFile(path) as zf:
                if "format.npy" not in zf.namelist():
                    return False
                with zf.open("format.npy") as fh:
                    return b"pondlib.siracusa.config" in fh.read(4096).replace(b"\x00", b"")
        except (OSError, zipfile.BadZipFile, ValueError):
            return False

    def load(self, path: str | Path) -> Saved:
        """A saved configuration with its input order (None for the identity)."""
        from pondlib.devices.siracusa.config import load_config

        config, order = load_config(path, with_input_order=True)
        return Saved(config, input_order=order)

    def simulate_saved(self, saved: Saved, x: np.ndarray, *, quantize: bool = False, where: str = "input") -> SavedRun:
        """Run a saved configuration on ``x`` (B, N_in) or (B, T, N_in) in the model's own order (the saved
        input order is applied): integers in the input range, or real numbers with ``quantize``
        (``rint(x / input_scale)``, saturating)."""
        from pondlib.devices.core.inputs import dnn_input
        from pondlib.devices.siracusa.sim import SiracusaSim, quantize_input
        from pondlib.devices.siracusa.specification import QLIF

        cfg, order = saved.config, saved.input_order
        lo, hi = cfg.input_range
        x = dnn_input(x, lo, hi, (2, 3), (lambda v: v) if quantize else None, where)
        if x.shape[-1] != cfg.n_input:
            raise PondError(
                f"input has {x.shape[-1]} values per sample, the configuration {cfg.n_input}",
                where=where,
                fix=f"pass (B, {cfg.n_input}) or (B, T, {cfg.n_input}) input",
            )
        if order is not None:
            x = x[..., order]
        if quantize:
            x = quantize_input(x, cfg)
        steps = x.ndim == 3
        y = SiracusaSim(cfg).evolve(x if steps else x[:, None, :])[0]
        what = f"Siracusa configuration, {len(cfg.layers)} layers, {cfg.n_input} -> {cfg.n_output}"
        spiking = any(isinstance(layer, QLIF) for layer in cfg.layers)
        return dnn_saved_run(what, x, y if steps else y[:, 0], self.name, spiking=spiking)


def _graph_reference(graph: Any) -> Reference:
    """GraphSim on a graph program's packed input ``(B, T, N_in)`` (graph inputs flattened in order), outputs
    packed the same way: what :func:`~pondlib.devices.siracusa.graph_codegen.emit_graph` programs compute."""
    from pondlib.devices.siracusa.graphsim import GraphSim

    sim = GraphSim(graph)
    shapes = [tuple(t.shape or ()) for t in graph.inputs]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]

    def run(x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=np.int64)
        out = []
        for sample in x.reshape(-1, x.shape[-1]):
            parts = np.split(sample, np.cumsum(sizes)[:-1]) if sizes else []
            ins = [p.reshape(s) for p, s in zip(parts, shapes)]
            outs = sim.run(ins, integer=True, record=False).output_list()
            out.append(np.concatenate([np.asarray(o).reshape(-1) for o in outs]))
        return np.asarray(out).reshape(x.shape[:-1] + (-1,))

    return Reference(run, lambda x: np.asarray(x, dtype=np.int64))
