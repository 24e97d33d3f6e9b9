r"""The ``Device`` interface: what every chip package implements once, and what the rest of pondlib calls.

A chip is one folder, ``pondlib/devices/<chip>/``, with the same parts as every other chip (limits,
specification, mapper, config, simulator, report, device-aware twin, C numerics) and one class that
implements :class:`Device` over them (``device.py``). The registry (:mod:`pondlib.devices.registry`)
lists the chips; the command line, the deployment pipeline (:func:`pondlib.deploy`), the device-aware
transform (:func:`pondlib.transform.device_aware`), the quantizers and the C generator loop over it and
know no chip by name.

The interface in one table (``d`` a device, ``lim`` one of its limits variants, ``net`` a ``pondlib.nn``
network or a graph):

=================================================  ================================================================
``d.name``, ``d.title``, ``d.variants``             registry key (``--device``, ``numerics``), one-line description,
                                                    short name -> limits (a frozen dataclass with ``.name``)
``d.limits(name_or_limits)``, ``d.limit_rows(lim)``  a variant resolved; its limits described for people
``d.options``                                       the options of ``map`` / ``compile`` (:class:`Option`)
``d.map(net, lim, calibration=, **options)``        a :class:`Mapped`: specification and configuration, every
                                                    design rule checked (a ``ConstraintError`` lists them all)
``d.configure(spec)``                               ``(config, is_valid, message)`` of a specification
``d.run(mapped, x, record=)``                       the bit-precise simulator on ``(B, T, N_in)`` float input:
                                                    ``(output (B, T', N_out), record)``
``d.prebuild()``                                    start building the simulator's compiled code in the background
                                                    (the commands call it first; a no-op by default)
``d.report(mapped, record)``                        a :class:`DeviceReport`: resources, quantization tables, notes
``d.gaps(mapped, context)``                         the float-vs-chip table (:class:`GapContext`)
``d.aware(net, **options)``, ``d.export(twin, lim)`` the device-aware twin (trained by ``fit``) and its mapping
``d.emit(config, name=, **options)``                the chip's C numerics: a :class:`~pondlib.cprogram.Program`
``d.recognise(path)``, ``d.load(path)``,            saved deployments: found by content, loaded, simulated for
``d.simulate_saved(saved, x, quantize=)``           ``pond simulate``
=================================================  ================================================================

Shapes and units: simulator input is ``(B, T, N_in)`` (``T`` steps of the chip's time step ``dt``),
outputs are ``(B, T + latency, N_out)``; a device whose output lags its input by ``latency`` steps says
so in :attr:`Mapped.latency` and is run on input followed by that many silent steps. Accuracies are
fractions in ``[0, 1]``.

Parts a chip does not have raise :class:`~pondlib.errors.PondError` naming the device and the part
(e.g. no C numerics); a chip overrides what it has. The minimal chip implements ``variants``,
``limit_rows``, ``map``, ``run`` and ``report`` (see ``tests/devices/toy_chip.py``, a complete chip
defined outside pondlib).

Example:
    >>> Option("drop_biases", "drop weight-layer biases", switch=True).flag
    '--drop-biases'
    >>> Mapped("toy", None, spec={"n": 3}, config=(1, 2)).latency
    0
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pondlib.devices.core.lookup import resolve_limits
from pondlib.devices.core.report import LimitRow, Resource, Table
from pondlib.errors import PondError

__all__ = [
    "Device",
    "Option",
    "Mapped",
    "DeviceReport",
    "GapContext",
    "Reference",
    "Saved",
    "SavedRun",
    "Traces",
    "DeploySettings",
    "option_values",
    "lif_layers",
    "outputs_table",
    "dnn_saved_run",
    "scale_lines",
    "simulator_runner",
    "explore_level",
]


@dataclass(frozen=True)
class Option:
    """An option of a device for ``pond map`` / ``pond compile`` and for :meth:`Device.map`.

    Attributes:
        name: the keyword of :meth:`Device.map` (``"drop_biases"``); the command-line flag is
            ``--`` + the name with ``-`` for ``_`` (:attr:`flag`).
        help: one line for ``--help``.
        switch: a flag without a value (``True`` when given).
        choices: the allowed values of an option with a value (empty: any text).
        default: the value when the option is not given.
        commands: the commands that take it.
    """

    name: str
    help: str
    switch: bool = False
    choices: tuple[str, ...] = ()
    default: Any = None
    commands: tuple[str, ...] = ("map", "compile")

    @property
    def value_default(self) -> Any:
        """The value when the option is not given (False for a switch without a default)."""
        return False if self.switch and self.default is None else self.default

    @property
    def flag(self) -> str:
        """The command-line flag (``--drop-biases``)."""
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Mapped:
    """A network mapped onto a device and configured: what the chip is loaded with.

    Attributes:
        device: the registry name of the device.
        limits: the variant it was mapped to.
        spec: the mapper's specification (chip units).
        config: the configuration the simulator and the C numerics take.
        notes: what the mapper noted (information, not problems).
        warnings: what may go wrong at run time (e.g. a PE that runs late); the mapping is still valid.
        latency: steps from the last input to the last output it causes (silence to append).
        summary: the size of the mapping in words (``"64 hidden, 10 output neurons"``).
        extra: the device's own by-products, for its report (e.g. the float layer list it quantized).
    """

    device: str
    limits: Any
    spec: Any
    config: Any
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    latency: int = 0
    summary: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DeviceReport:
    """What a mapping costs and loses, as data: resources against the limits, tables, notes.

    Attributes:
        title: the title of the resources table.
        resources: one :class:`~pondlib.devices.core.report.Resource` per counted resource.
        tables: further tables (the quantization error, per layer or per field).
        notes: lines to show under the tables.
    """

    title: str
    resources: tuple[Resource, ...]
    tables: tuple[Table, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class GapContext:
    """What a float-vs-chip comparison sees (:meth:`Device.gaps`).

    Attributes:
        net: the float network as trained.
        float_record: its record on the test input (``"<i>_<Module>/<state>"`` keys).
        x: the device input (B, T', N_in), silence appended; ``y``: the labels (B,).
        record: the device's record of the network as trained (:meth:`Device.run`).
        float_acc, as_trained_acc: accuracy of the float network and of the device running it.
        aware_acc: accuracy of the device running the device-aware network (None without one).
    """

    net: Any
    float_record: Mapping[str, Any]
    x: np.ndarray
    y: np.ndarray
    record: Mapping[str, Any]
    float_acc: float
    as_trained_acc: float
    aware_acc: float | None = None


@dataclass(frozen=True)
class Reference:
    """The device's own simulator as the reference a generated program is checked against.

    Attributes:
        run: ``run(x) -> y`` on the program's input (B, T, N_in), outputs (B, T, N_out).
        quantize: ``quantize(x) -> x_int`` for devices whose program takes quantized input from float
            data (None: the input is already what the program takes).
    """

    run: Callable[[Any], np.ndarray]
    quantize: Callable[[Any], np.ndarray] | None = None


@dataclass(frozen=True)
class Saved:
    """A deployment read back from a file (:meth:`Device.load`).

    Attributes:
        config: the configuration (what :meth:`Device.emit` and the simulator take).
        input_order: indices that put the user's input columns in the chip's order (None: the identity).
        data: the file's bytes where the device runs them as they are (a DRAM image), else None.
    """

    config: Any
    input_order: Any = None
    data: bytes | None = None


@dataclass(frozen=True)
class SavedRun:
    """A saved deployment simulated by :meth:`Device.simulate_saved`, described for ``pond simulate``.

    Attributes:
        title: the summary table's title; ``rows``: its ``(what, value)`` rows.
        outputs: the table of per-sample outputs (the prediction first).
        payload: the arrays to write with ``--record`` (name -> array).
        note: one line after the tables, or ``""``.
    """

    title: str
    rows: tuple[tuple[str, str], ...]
    outputs: Table
    payload: Mapping[str, np.ndarray]
    note: str = ""


@dataclass(frozen=True)
class Traces:
    """A device's hidden-layer activity set beside the float network's (the plots of ``pond demo``).

    Attributes:
        name: the variant's name. spikes: hidden spikes (B, T, N). vmem: hidden membranes (B, T, N) in
            chip units; ``scale``: (N,) chip units per float unit (multiply the float membrane by it).
    """

    name: str
    spikes: np.ndarray
    vmem: np.ndarray
    scale: np.ndarray


@dataclass(frozen=True)
class DeploySettings:
    """How :func:`pondlib.deploy` treats a device unless told otherwise.

    Attributes:
        limits: the variant to deploy to (short name; None: the device's default).
        check: variants to check first (their violations are reported, nothing else is done with them).
        options: keywords of :meth:`Device.map` (e.g. the neuron model).
        lr: the learning rate of device-aware fine-tuning (Adam, cosine decay).
        describe: the device-aware training in words (what the twin models).
    """

    limits: str | None = None
    check: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    lr: float = 1e-3
    describe: str = ""


class Device(abc.ABC):
    """One chip: implemented once per chip package (``pondlib/devices/<chip>/device.py``), listed in the
    registry. See the module docstring for the whole interface; the abstract methods are the minimum."""

    #: registry key, ``--device`` value and C numerics name (lower case, ``[a-z][a-z0-9_]*``).
    name: str = ""
    #: one line for ``pond devices``.
    title: str = ""
    #: the default variant's short name.
    default_variant: str = ""
    #: options of ``map`` / ``compile``.
    options: tuple[Option, ...] = ()
    #: True when :meth:`map` needs representative input (``calibration``) to set integer scales.
    needs_calibration: bool = False
    #: How :func:`pondlib.deploy` (and ``pond demo``) treats this device by default.
    deploy_settings: DeploySettings = DeploySettings()
    #: Names this device's code had elsewhere in pondlib: ``"module:name" -> "module:name"`` (each old
    #: name still works, with a ``DeprecationWarning`` pointing at the new one).
    moved: Mapping[str, str] = {}

    # -- limits ------------------------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def variants(self) -> Mapping[str, Any]:
        """Short name -> limits of every variant (frozen dataclasses with a ``name``)."""

    def limits(self, limits: Any = None) -> Any:
        """A variant from its limits object, its short or display name, or the default for None.

        Raises:
            ConfigError: an unknown name (the message lists the known ones).
        """
        table = self.variants
        return resolve_limits(limits, table, default=table[self.default_variant], device=self.display_name)

    @abc.abstractmethod
    def limit_rows(self, limits: Any) -> tuple[LimitRow, ...]:
        """The limits of ``limits`` described for people (the same rows, in the same order, for every variant)."""

    def called(self, limits: Any) -> str:
        """A variant as a sentence names it (``"Xylo Audio 3"``; ``"the SpiNNaker2 chip"``)."""
        return limits.name

    @property
    def display_name(self) -> str:
        """The name people use (the default variant's family name, e.g. ``"Xylo"``)."""
        return self.title.split(" ", 1)[0].rstrip(":") if self.title else self.name

    # -- mapping, simulation, report --------------------------------------------------------------------
    @abc.abstractmethod
    def map(self, net: Any, limits: Any = None, *, calibration: Any = None, **options: Any) -> Mapped:
        """Map ``net`` (a ``pondlib.nn`` network or a graph; never modified) onto ``limits`` and configure it.

        Args:
            net: the network. limits: a variant (None: the default). calibration: representative float
                input (B, T, N_in) for devices that set integer scales from data. options: :attr:`options`.

        Raises:
            ConstraintError: every broken design rule at once. GraphError: a network the chip cannot run.
        """

    def configure(self, spec: Any) -> tuple[Any, bool, str]:
        """``(config, is_valid, message)`` of a specification: the chip's ``config_from_specification``, every
        register checked (:meth:`map` does this and raises when the configuration is invalid)."""
        raise self._missing("configuration step of its own (map configures)", "configure")

    def mapping_title(self, limits: Any, options: Mapping[str, Any]) -> str:
        """What :meth:`map` does, in a few words (the command line's progress line)."""
        return f"Mapping to {limits.name}, configuring"

    @abc.abstractmethod
    def run(self, mapped: Mapped, x: Any, *, record: bool = True) -> tuple[np.ndarray, dict]:
        """Simulate ``mapped`` bit-precisely on float input ``x`` (B, T, N_in) from a reset state.

        Returns:
            ``(output (B, T, N_out), record)``: the output spikes (or values) and the record the
            device's report needs (``{}`` without ``record``).
        """

    def runner(self, mapped: Mapped, *, record: bool = True) -> Callable[[Any], tuple[np.ndarray, dict]]:
        """``run(x) -> (output, record)`` for many calls on one mapping (each call from a reset state)."""
        return lambda x: self.run(mapped, x, record=record)

    def prebuild(self) -> list[threading.Thread]:
        """Start building, in background threads, the compiled code the simulator needs on its first run
        (a chip whose simulator has a C kernel: :func:`pondlib.cprogram.native.prebuild`), and return the
        started threads without waiting. A command that will simulate calls it first, so that a new
        installation's compilation overlaps the command's own work. Never raises and never blocks: a
        failed build is what the simulator's first run reports, as without it. The default: nothing to
        build (``[]``).

        Example:
            >>> from pondlib.devices import registry
            >>> all(isinstance(t, threading.Thread) for d in registry.devices() for t in d.prebuild())
            True
        """
        return []

    @abc.abstractmethod
    def report(self, mapped: Mapped, record: Mapping[str, Any] | None = None) -> DeviceReport:
        """Resources against the limits, the quantization error and notes of ``mapped`` (with ``record``,
        a run's activity counts too)."""

    def gaps(self, mapped: Mapped, context: GapContext) -> Table | None:
        """The known gaps between the float network and the chip, and what each did on this data."""
        return None

    def traces(self, mapped: Mapped, record: Mapping[str, Any]) -> Traces | None:
        """Hidden-layer spikes and membranes of a run, comparable with the float network's (or None)."""
        return None

    def describe_delay(self, mapped: Mapped) -> str:
        """The output's delay behind the input in words (``"1 step late"``)."""
        n = mapped.latency
        return f"{n} step{'s' if n != 1 else ''} late" if n else "no delay"

    # -- device-aware training --------------------------------------------------------------------------
    #: True when :meth:`aware`, :meth:`twin` and :meth:`export` are implemented.
    has_twin: bool = False

    def aware(self, net: Any, **options: Any) -> Any:
        """The device-aware twin of ``net``: the chip's arithmetic in the forward pass, trainable by ``fit``."""
        raise self._missing("device-aware twin", "aware")

    def twin(self, net: Any, mapped: Mapped, calibration: Any = None) -> Any:
        """The twin of ``net`` that :meth:`export` maps like ``mapped`` (same variant and options)."""
        return self.aware(net, limits=mapped.limits)

    def lr_scale(self, twin: Any) -> float:
        """Factor on the fine-tuning learning rate (a twin in chip units needs a larger one)."""
        return 1.0

    def export(self, twin: Any, limits: Any = None) -> Mapped:
        """The mapping of a trained twin; its simulator then reproduces the twin's spikes."""
        raise self._missing("device-aware twin", "export")

    def spike_pairs(self, twin: Any, mapped: Mapped) -> list[tuple[str, str, str]]:
        """``(layer, twin record key, device record key)`` of every spiking layer, to compare spikes (a device
        key ``""`` stands for the device's output)."""
        return []

    def module_types(self) -> tuple[type, ...]:
        """The ``pondlib.nn``-style module classes this device defines (saved and loaded by ``pondlib.io``)."""
        return ()

    # -- quantization -----------------------------------------------------------------------------------
    #: the type of :meth:`map`'s specification, for the quantizers' dispatch (None: no float specification).
    specification_type: type | None = None
    #: the quantizer methods of :meth:`quantize` (empty: the mapper quantizes itself).
    quantize_methods: tuple[str, ...] = ()

    def quantize(self, spec: Any, method: str, **options: Any) -> Any:
        """A float specification quantized by ``method`` (one of :attr:`quantize_methods`)."""
        raise self._missing("quantizer (its mapper quantizes)", "quantize")

    def specification_fields(self) -> tuple[str, ...]:
        """The field names of a specification (Rockpool's ``quantize(**spec)`` style finds the device by them)."""
        return ()

    # -- C -----------------------------------------------------------------------------------------------
    #: True when :meth:`emit` generates C.
    has_c: bool = False

    def emit(self, model: Any, *, name: str = "net", **options: Any) -> Any:
        """The chip's C numerics for a configuration (or anything :meth:`map` takes, mapped first)."""
        raise self._missing("C numerics", "emit")

    def reference(self, config: Any) -> Reference:
        """The simulator a generated program of ``config`` is checked against."""
        raise self._missing("C numerics", "reference")

    # -- ONNX --------------------------------------------------------------------------------------------
    #: True when :meth:`map_onnx` and :meth:`map_qdq` take DNN models.
    takes_onnx: bool = False

    def map_onnx(self, model: Any, calibration: Any, limits: Any = None) -> Mapped:
        """A float ONNX model (:class:`~pondlib.graph.dnn.FloatModel`) mapped, calibrated on ``calibration``."""
        raise self._missing("DNN path for ONNX models", "map_onnx")

    def map_qdq(self, model: Any, limits: Any = None) -> Mapped:
        """A quantized ONNX model (:class:`~pondlib.graph.dnn.QDQModel`) mapped without re-quantizing it."""
        raise self._missing("DNN path for ONNX models", "map_qdq")

    #: True when :meth:`map_graph` takes whole operator graphs (several inputs, custom integer dialects).
    takes_graphs: bool = False

    def map_graph(self, graph: Any, limits: Any = None) -> Mapped:
        """An operator graph (:class:`~pondlib.graph.opgraph.OpGraph`: an integer dialect, a QDQ or a float
        graph) mapped op by op; ``Mapped.config`` is the graph the device runs."""
        raise self._missing("graph path for ONNX models", "map_graph")

    #: True when :meth:`emit` writes tiled, multi-core C for operator graphs (options ``cores``, ``l1_bytes``,
    #: ``l2_bytes``, ``double_buffer``; ``pond compile --cores --l1 --l2``).
    cluster_c: bool = False

    def graph_inputs(self, graph: Any, arrays: Any) -> np.ndarray:
        """The program input ``(1, 1, N_in)`` of a graph's C for one set of input arrays (graph input order)."""
        raise self._missing("graph path for ONNX models", "graph_inputs")

    def run_graph(self, graph: Any, inputs: Any) -> tuple[list[Any], bool]:
        """Run an operator graph bit-exactly on ``inputs`` (one array per graph input, in order): the outputs
        in graph order and whether it ran in integer mode."""
        raise self._missing("graph path for ONNX models", "run_graph")

    def describe_dnn(self, mapped: Mapped) -> list[str]:
        """One line per layer of a DNN mapping."""
        return []

    # -- schedule exploration ------------------------------------------------------------------------------
    def explore_hardware(self, level: str | None = None) -> dict[str, Any]:
        """The chip as plain data for :mod:`pondlib.explore` (which builds its ``Hardware`` from it).

        Keys: ``name``; ``shared``, ``input_buffer``, ``weight_buffer``, ``dram`` (each a dict of ``name``,
        ``size_bits`` (None: unbounded), ``bandwidth_bits_per_cycle``, ``read_energy_pj_per_bit``,
        ``write_energy_pj_per_bit``); ``sop_energy_pj``, ``mac_energy_pj``; ``pe_k``, ``pe_c``, ``pe_oy``;
        ``levels`` (the accepted ``level`` names), ``notes`` (per figure: calibrated or assumed, from where)
        and ``workload_bits`` (``weight_bits``, ``state_bits``, ``spike_bits``, ``input_bits`` of a network
        deployed on the chip).

        Args:
            level: which of the chip's memories the schedules compete for (None: the chip's default).
        """
        raise self._missing("hardware description for schedule exploration", "explore_hardware")

    def explore_mapping(self, net: Any, time_steps: int) -> dict[str, Any] | None:
        """What the chip's own mapper chooses for ``net`` over ``time_steps`` steps, to set beside the
        explored schedules (None: nothing to compare). Keys: ``schedule`` (a sentence), ``level`` (the
        memory level of :meth:`explore_hardware` it refers to), ``traffic_bits`` (moved between that level
        and the one outside it per inference) and ``layers`` (one line per layer)."""
        return None

    def save(self, mapped: Mapped, path: str | Path, input_order: Any = None) -> str:
        """Write ``mapped`` for ``pond simulate``; return what was written, in words."""
        raise self._missing("saved deployment format", "save")

    # -- saved deployments -------------------------------------------------------------------------------
    #: True when files no device recognises are read as this device's configuration (its loader then
    #: explains what is wrong with them); one device at most.
    reads_unrecognised: bool = False

    def recognise(self, path: str | Path) -> bool:
        """True when the file at ``path`` is, by its content, a saved deployment of this device."""
        return False

    def load(self, path: str | Path) -> Saved:
        """A saved deployment (a configuration file) read and validated."""
        raise self._missing("saved deployment format", "load")

    #: True when :meth:`simulate_saved` can quantize real-valued input itself (``quantize=True``).
    quantizes_saved_input: bool = False

    def simulate_saved(self, saved: Saved, x: np.ndarray, *, quantize: bool = False, where: str = "input") -> SavedRun:
        """Run a loaded deployment on the array ``x`` read from the user's file ``where`` (checked here)."""
        raise self._missing("saved deployment format", "simulate_saved")

    # -- helpers -----------------------------------------------------------------------------------------
    def _missing(self, what: str, method: str) -> PondError:
        return PondError(
            f"{self.name} has no {what}",
            where=f"{type(self).__name__}.{method}",
            fix="choose a device that has it (pond devices lists them)",
        )

    def __repr__(self) -> str:
        return f"<Device {self.name!r}: {self.title}>"


def option_values(device: Device, given: Mapping[str, Any]) -> dict[str, Any]:
    """The options of ``device`` with their defaults filled in from ``given`` (unknown keys refused)."""
    known = {o.name: o for o in device.options}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise PondError(
            "option",
            value=unknown[0],
            limit=", ".join(known) or "none",
            where=f"{device.name} options",
            fix=f"pass only the options of {device.name}",
        )
    return {name: given.get(name, o.value_default) for name, o in known.items()}


def as_rows(pairs: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """``(what, value)`` pairs as table rows (tuples of text)."""
    return tuple((str(a), str(b)) for a, b in pairs)


def lif_layers(net: Any) -> list[tuple[str, Any]]:
    """``(record prefix, module)`` of every LIF layer of a ``Sequential``-like network, in order.

    A LIF layer is any layer with ``tau_mem``, ``n_synapses`` and ``max_spikes_per_dt`` (the float
    ``LIF`` of :mod:`pondlib.nn`); its record keys are ``"<prefix>/spikes"``, ``"<prefix>/vmem"``, ...
    """
    layers = getattr(net, "layers", ())
    return [
        (f"{i}_{type(m).__name__}", m)
        for i, m in enumerate(layers)
        if all(hasattr(m, a) for a in ("tau_mem", "n_synapses", "max_spikes_per_dt"))
    ]


def outputs_table(title: str, values: Any, predictions: Sequence[Any], header: str, shown: int = 20) -> Table:
    """Per sample: the prediction (``"- (silent)"`` for None) and the output ``values`` (B, N_out), the
    first ``shown`` samples."""
    values = np.asarray(values)
    rows = tuple(
        (
            str(b),
            "- (silent)" if predictions[b] is None else str(predictions[b]),
            " ".join(str(int(v)) for v in values[b]),
        )
        for b in range(min(len(values), shown))
    )
    caption = f"first {shown} of {len(values)} samples" if len(values) > shown else ""
    return Table(title, (("sample", "right"), ("prediction", "right"), (header, "left")), rows, caption=caption)


def dnn_saved_run(what: str, x: np.ndarray, y: np.ndarray, device: str, *, spiking: bool = False) -> SavedRun:
    """The :class:`SavedRun` of a deployment run on integer input ``x`` with integer output ``y`` ((B, N) or
    (B, T, N)): summary rows, per-sample outputs, payload. The prediction is the largest output of the last
    step, or, for ``spiking`` output over steps, the output neuron with the most spikes (None when silent)."""
    if spiking and y.ndim == 3:
        values = y.sum(axis=1)
        preds = [int(np.argmax(v)) if v.any() else None for v in values]
        title = "Output spike counts per output neuron (the most active one is the prediction)"
    else:
        values = y if y.ndim == 2 else y[:, -1]
        preds = [int(np.argmax(v)) for v in values]
        title = "Outputs (the largest one is the prediction)"
    rows = (
        ("configuration", what),
        ("input", f"{tuple(x.shape)} integers in [{int(x.min())}, {int(x.max())}]"),
        ("output", f"{tuple(y.shape)} integers in [{int(y.min())}, {int(y.max())}]"),
    )
    outputs = outputs_table(title, values, preds, "counts" if spiking else "outputs")
    return SavedRun(f"Simulation ({device})", rows, outputs, {"output": y, "input": x})


def scale_lines(report: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per requantizer of an imported QDQ model: its name and how far the chip's integer scale is
    from the model's real one (``report``: dicts with ``name`` and ``rel_error``)."""
    return [f"{r['name']}: scale-approximation error {r['rel_error']:.3e}" for r in report]


def simulator_runner(
    sim: Any, record: bool, *, prepare: Callable[[Any], Any] | None = None, keep: str = ""
) -> Callable[[Any], tuple[np.ndarray, dict]]:
    """:meth:`Device.runner` over a chip simulator ``sim`` (``reset_state()``, ``evolve(x, record=) -> (output,
    state, record)``): each call starts from a reset state, feeds ``prepare(x)`` (e.g. the input quantizer;
    default ``x``) and keeps the record keys ending in ``keep`` (all for ``""``)."""

    def run(x: Any) -> tuple[np.ndarray, dict]:
        sim.reset_state()
        out, _, rec = sim.evolve(x if prepare is None else prepare(x), record=record)
        return out, {k: v for k, v in rec.items() if k.endswith(keep)}

    return run


def explore_level(
    name: str, size_bits: int | None, bandwidth: float, read_write: tuple[float, float]
) -> dict[str, Any]:
    """One memory level of :meth:`Device.explore_hardware` as plain data: ``size_bits`` (None: unbounded),
    ``bandwidth`` in bits per cycle, ``read_write`` the (read, write) energies in pJ per bit.

    Example:
        >>> explore_level("SRAM", 1024, 64, (0.1, 0.2))["bandwidth_bits_per_cycle"]
        64.0
    """
    return {
        "name": name,
        "size_bits": size_bits,
        "bandwidth_bits_per_cycle": float(bandwidth),
        "read_energy_pj_per_bit": read_write[0],
        "write_energy_pj_per_bit": read_write[1],
    }
