"""Xylo as a :class:`~pondlib.devices.core.device.Device`: the chip's parts behind the one interface.

Mapping is :func:`~pondlib.devices.xylo.mapper.mapper`, then :func:`~pondlib.devices.xylo.quantize.channel_quantize`
(int8 weights per output channel), then :func:`~pondlib.devices.xylo.config.config_from_specification`;
the simulator is :class:`~pondlib.devices.xylo.sim.XyloSim` on event counts; the device-aware twin is
:func:`~pondlib.devices.xylo.aware.xylo_aware`; the C numerics :func:`~pondlib.devices.xylo.codegen.emit`.
Saved deployments are ``XyloConfig.save`` archives.

Example:
    >>> d = XyloDevice()
    >>> d.name, d.limits("audio3").name, [o.flag for o in d.options]
    ('xylo', 'Xylo Audio 3', ['--drop-biases'])
"""

from __future__ import annotations

import time
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
    Traces,
    lif_layers,
    outputs_table,
    simulator_runner,
)
from pondlib.devices.core.report import LimitRow, Table
from pondlib.errors import PondError

__all__ = ["XyloDevice"]

_AWARE = "pondlib.devices.xylo.aware"


class XyloDevice(Device):
    """SynSense Xylo (Audio 2, Audio 3, IMU): one core of integer LIF neurons with bit-shift decays."""

    name = "xylo"
    title = "Xylo (SynSense): one core, integer LIF, bit-shift decays"
    default_variant = "audio2"
    options = (
        Option("drop_biases", "Xylo only: drop weight-layer biases (the chip has none) instead of a violation", True),
    )
    deploy_settings = DeploySettings(
        limits="audio3",
        check=("audio2",),
        lr=1e-3,
        describe="bit-shift decays, spike caps, hop delays, per-channel int8 weights in the forward pass",
    )
    quantize_methods = ("global", "channel")
    has_c = True
    has_twin = True
    reads_unrecognised = True
    moved = {
        "pondlib.transform:xylo_aware": f"{_AWARE}:xylo_aware",
        "pondlib.transform:to_float": f"{_AWARE}:to_float",
        "pondlib.transform:hardware_dashes": f"{_AWARE}:hardware_dashes",
    }

    # -- limits ------------------------------------------------------------------------------------------
    @property
    def variants(self) -> Mapping[str, Any]:
        from pondlib.devices.xylo.limits import LIMITS

        return LIMITS

    def limit_rows(self, limits: Any) -> tuple[LimitRow, ...]:
        from pondlib.devices.xylo.report import limit_rows

        return limit_rows(self.limits(limits))

    # -- mapping, simulation, report --------------------------------------------------------------------
    def map(self, net: Any, limits: Any = None, *, calibration: Any = None, drop_biases: bool = False) -> Mapped:
        """Mapper, per-channel quantization and configuration on ``limits`` (default Xylo Audio 2).

        Raises:
            ConstraintError: every broken design rule. PondError: ``calibration`` given (Xylo's scales come
                from the weights, not from data).
        """
        from pondlib.devices.xylo.mapper import mapper
        from pondlib.devices.xylo.quantize import channel_quantize
        from pondlib.devices.xylo.report import configure

        if calibration is not None:
            raise PondError(
                "calibration",
                value="given",
                limit="none: Xylo's integer scales come from the weights",
                where="xylo map",
                fix="leave calibration out",
            )
        lim = self.limits(limits)
        spec = mapper(net, lim, drop_biases=drop_biases)
        qspec = channel_quantize(spec)
        config = configure(qspec, "xylo map")
        return Mapped(
            self.name,
            lim,
            qspec,
            config,
            notes=tuple(spec.report.notes),
            summary=f"{qspec.n_hidden} hidden, {qspec.n_output} output neurons",
        )

    def configure(self, spec: Any) -> tuple[Any, bool, str]:
        from pondlib.devices.xylo.config import config_from_specification

        return config_from_specification(spec)

    def mapping_title(self, limits: Any, options: Mapping[str, Any]) -> str:
        return f"Mapping to {limits.name}, quantizing (per channel), configuring"

    def run(self, mapped: Mapped, x: Any, *, record: bool = True) -> tuple[np.ndarray, dict]:
        return self.runner(mapped, record=record)(x)

    def runner(self, mapped: Mapped, *, record: bool = True) -> Any:
        from pondlib.devices.xylo.sim import XyloSim

        return simulator_runner(XyloSim.from_config(mapped.config), record)

    def prebuild(self) -> list:
        from pondlib.devices.xylo.sim import prebuild

        return prebuild()

    def report(self, mapped: Mapped, record: Mapping[str, Any] | None = None) -> DeviceReport:
        from pondlib.devices.xylo.report import quantization_summary, quantization_table, resource_usage

        lim = mapped.limits
        return DeviceReport(
            f"Resources on {lim.name}",
            resource_usage(mapped.spec, lim, None if record is None else dict(record)),
            (quantization_table(quantization_summary(mapped.spec)),),
            mapped.notes,
        )

    def gaps(self, mapped: Mapped, context: GapContext) -> Table | None:
        from pondlib.devices.xylo.report import float_vs_chip_gaps, gaps_table

        lifs = lif_layers(context.net)
        if len(lifs) < 2:
            return None
        (key, hidden), (_, last) = lifs[0], lifs[-1]
        g = float_vs_chip_gaps(
            mapped.spec,
            mapped.limits,
            context.x,
            dict(context.record),
            context.float_record[f"{key}/spikes"],
            hidden.tau_mem,
        )
        return gaps_table(mapped.limits.name, g, (float(hidden.max_spikes_per_dt), float(last.max_spikes_per_dt)))

    def traces(self, mapped: Mapped, record: Mapping[str, Any]) -> Traces | None:
        spec = mapped.spec
        scale = np.broadcast_to(np.asarray(spec.quantization.scales["hidden"], dtype=float), (spec.n_hidden,))
        return Traces(mapped.limits.name, np.asarray(record["Spikes"]), np.asarray(record["Vmem"]), scale)

    def describe_delay(self, mapped: Mapped) -> str:
        return "1 step late"

    # -- device-aware training --------------------------------------------------------------------------
    def aware(self, net: Any, **options: Any) -> Any:
        """:func:`~pondlib.devices.xylo.aware.xylo_aware` (options: ``limits``, ``quantize``, ``learn_dash``,
        ``delays``, ``surrogate``)."""
        from pondlib.devices.xylo.aware import xylo_aware

        return xylo_aware(net, **options)

    def export(self, twin: Any, limits: Any = None) -> Mapped:
        """The twin mapped like any network: its graph holds the trained grid values and decay shifts."""
        return self.map(twin, limits)

    def spike_pairs(self, twin: Any, mapped: Mapped) -> list[tuple[str, str, str]]:
        n = len(twin.layers)
        return [
            ("hidden" if i < n - 1 else "output", f"{i}_XyloLIF/spikes", "Spikes" if i < n - 1 else "")
            for i in range(n)
            if i in (0, n - 1)
        ]

    def module_types(self) -> tuple[type, ...]:
        from pondlib.devices.xylo.aware_lif import XyloLIF

        return (XyloLIF,)

    # -- quantization -----------------------------------------------------------------------------------
    @property
    def specification_type(self) -> type:  # type: ignore[override]
        from pondlib.devices.xylo.specification import Specification

        return Specification

    def specification_fields(self) -> tuple[str, ...]:
        from pondlib.devices.xylo.specification import SPEC_KEYS

        return tuple(SPEC_KEYS)

    def quantize(self, spec: Any, method: str, **options: Any) -> Any:
        from pondlib.devices.xylo import quantize as q

        return (q.global_quantize if method == "global" else q.channel_quantize)(spec, **options)

    # -- C -----------------------------------------------------------------------------------------------
    def emit(self, model: Any, *, name: str = "net", **options: Any) -> Any:
        from pondlib.devices.xylo.codegen import emit

        return emit(model, name=name, **options)

    def reference(self, config: Any) -> Reference:
        from pondlib.devices.xylo.sim import XyloSim

        return Reference(lambda x: np.asarray(XyloSim.from_config(config).evolve(x)[0]))

    # -- saved deployments -------------------------------------------------------------------------------
    def save(self, mapped: Mapped, path: str | Path) -> str:
        """The configuration as ``XyloConfig.save`` writes it (``.npz``)."""
        mapped.config.save(path)
        return f"Xylo configuration ({mapped.limits.name})"

    def load(self, path: str | Path) -> Saved:
        from pondlib.devices.xylo.config import XyloConfig

        return Saved(XyloConfig.load(path))

    def simulate_saved(self, saved: Saved, x: np.ndarray, *, quantize: bool = False, where: str = "input") -> SavedRun:
        """Run a Xylo configuration on event counts ``x`` (T, N_in) or (B, T, N_in), whole numbers >= 0."""
        from pondlib.devices.xylo.report import simulation_summary
        from pondlib.devices.xylo.sim import XyloSim
        from pondlib.validate import as_int_array

        x = as_int_array(
            x,
            "input event counts",
            lo=0,
            dtype=np.int64,
            ndim=(2, 3),
            where=where,
            fix="save non-negative integer event counts of shape (T, N_in) or (B, T, N_in) with numpy.save",
        )
        config = saved.config
        sim = XyloSim.from_config(config)
        sim.evolve(x[:1] if x.ndim == 3 else x[None, :1], record=True)  # compile (or load) the kernels first
        sim.reset_state()
        t0 = time.perf_counter()
        out, state, rec = sim.evolve(x, record=True)
        seconds = time.perf_counter() - t0
        s = simulation_summary(x, out, rec, config.limits_name)
        clip = f" ({s.clipped} count(s) above {s.max_input_count} clipped by the chip)" if s.clipped else ""
        rows = (
            (
                "configuration",
                f"{sim.n_input} inputs -> {sim.n_hidden} hidden ({sim.k} synapse(s) each) -> {sim.n_output} outputs, "
                f"dt {sim.dt * 1e3:g} ms",
            ),
            (
                "input",
                f"{'B, T, N' if s.batched else 'T, N'} = {tuple(np.shape(x))}, {s.input_events:,} events, "
                f"at most {s.input_peak} per channel per step{clip}",
            ),
            ("hidden spikes", f"{s.hidden_spikes:,} in all, at most {s.peak_hidden_spikes} per neuron per step"),
            ("output spikes", f"{s.output_spikes:,} in all"),
            (
                "simulator speed",
                f"{s.n_samples * s.n_steps / max(seconds, 1e-9):,.0f} sample-steps/s "
                f"({s.n_samples} x {s.n_steps} steps in {seconds:.3f} s)",
            ),
        )
        outputs = outputs_table(
            "Output spike counts per output neuron (the most active one is the prediction)",
            s.counts,
            s.predictions,
            "counts",
        )
        payload = {
            "output": out,
            **{f"record_{k}": v for k, v in rec.items()},
            **{f"state_{k}": v for k, v in state.items()},
        }
        return SavedRun(f"Simulation on {config.limits_name}", rows, outputs, payload)
