"""The device sections of ``pond demo``: map, configure and simulate the trained networks on Xylo,
SpiNNaker2 and Siracusa, and print each device's report (resources, quantization, float-vs-chip gaps,
accuracy and simulator speed).

Each section returns a :class:`Deployment`, the row of the demo's summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pondlib.cli.demo_network import AWARE_LR, S2_DEMO_MODEL, SIM_CHUNK
from pondlib.cli.render import (
    notes,
    resources_table,
    result_table,
    run_in_chunks,
    siracusa_gaps_table,
    siracusa_quantization_table,
    spinnaker2_gaps_table,
    spinnaker2_quantization_table,
    stage,
    violations_table,
    xylo_gaps_table,
    xylo_quantization_table,
)
from pondlib.errors import ConstraintError

__all__ = ["Deployment", "NO_LOSS_POINTS", "demo_siracusa", "demo_spinnaker2", "demo_xylo"]

#: The float record key of the demo network's hidden spikes.
_HIDDEN_SPIKES = "1_LIF/spikes"


@dataclass
class Deployment:
    """One device's result in the demo (accuracies in 0..1): the float network as trained and its
    device-aware twin, each on the device."""

    device: str
    float_acc: float  # the float network as trained
    as_trained_acc: float  # the device running the network as trained
    aware_float_acc: float  # the device-aware float model
    device_acc: float  # the device running the device-aware network (the deployed one)
    agree: float  # same prediction, device-aware float model vs device
    spikes_equal: dict[str, float]  # per spiking layer: fraction of spike values equal, aware float vs device
    speed: float  # simulated sample-steps per second (the deployed network)
    output: Any = None  # device output spikes of the deployed network (B, T, N_out)
    latency: int = 0  # silent steps appended to every sample (the device's input-to-output latency)


#: Within this many points of the float model as trained counts as no loss (one test sample of the
#: 450 is 0.22 points).
NO_LOSS_POINTS = 0.5


def _agreement(output: Any, reference: Any) -> float:
    """Fraction of samples whose output spike counts (B, T, N) pick the same class in both runs."""
    import numpy as np

    def pred(out: Any) -> Any:
        return np.argmax(np.asarray(out).sum(axis=1), axis=-1)

    return float(np.mean(pred(output) == pred(reference)))


def _spikes_equal(pairs: dict[str, tuple[Any, Any]]) -> dict[str, float]:
    """``layer -> fraction of equal spike values`` of ``(float spikes, device spikes)`` pairs (B, T, N)."""
    import numpy as np

    return {k: float(np.mean(np.asarray(a) == np.asarray(b))) for k, (a, b) in pairs.items()}


def _run_model(model: Any, spikes: str) -> Any:
    """``run(x) -> (output, record)`` of a float model, keeping the record keys that end in ``spikes``."""
    import numpy as np

    def run(xb: Any) -> tuple[Any, dict]:
        out, _, rec = model(np.asarray(xb, dtype=np.float32), record=True)
        return out, {k: np.asarray(v) for k, v in rec.items() if k.endswith(spikes)}

    return run


def _deploy_aware(
    console: Any,
    device: str,
    model: Any,
    device_run: Any,
    x: Any,
    y: Any,
    accs: tuple[float, float],
    layers: list[tuple[str, str, str | None]],
    latency: int = 0,
) -> tuple[Deployment, float]:
    """Run the device-aware float ``model`` and the device (``device_run(xb) -> (out, record)``) on ``x``
    and compare them: the :class:`Deployment` and the seconds simulated. ``accs`` are the float network's
    and the device's accuracies as trained; ``layers`` lists ``(name, model record key, device record key)``
    per spiking layer (``None``: the device output)."""
    from pondlib.training import accuracy

    aware_out, aware_rec, _ = run_in_chunks(
        console, "device-aware float model", _run_model(model, "spikes"), x, SIM_CHUNK
    )
    dev_out, dev_rec, t_sim = run_in_chunks(console, f"simulating on {device} (device-aware)", device_run, x, SIM_CHUNK)
    pairs = {name: (aware_rec[mk], dev_out if dk is None else dev_rec[dk]) for name, mk, dk in layers}
    n_test, T = x.shape[:2]
    dep = Deployment(
        device,
        accs[0],
        accs[1],
        accuracy(aware_out, y),
        accuracy(dev_out, y),
        _agreement(dev_out, aware_out),
        _spikes_equal(pairs),
        n_test * T / t_sim,
        output=dev_out,
        latency=latency,
    )
    return dep, t_sim


def _aware_rows(dep: Deployment, epochs: int, timing: tuple[int, int, float]) -> list[tuple[str, str]]:
    """The result-table rows every device shares (as trained, device-aware, agreement, speed)."""
    n_test, T, t_sim = timing
    equal = ", ".join(f"{k} {v:.1%}" for k, v in dep.spikes_equal.items())
    late = f", +{dep.latency} silent step(s) per sample (latency)" if dep.latency else ""
    return [
        ("float model accuracy (as trained)", f"{dep.float_acc:.1%}"),
        ("device accuracy, network as trained", f"{dep.as_trained_acc:.1%}"),
        (f"device-aware float model accuracy ({epochs} epochs from the trained network)", f"{dep.aware_float_acc:.1%}"),
        ("device accuracy, device-aware network (deployed)", f"{dep.device_acc:.1%}"),
        ("device (device-aware) - float (as trained)", f"{(dep.device_acc - dep.float_acc) * 100:+.1f} points"),
        ("same prediction, device-aware float vs device", f"{dep.agree:.1%} of samples"),
        ("spikes equal, device-aware float vs device", equal),
        ("simulator speed", f"{n_test * T / t_sim:,.0f} sample-steps/s ({n_test} samples x {T} steps{late})"),
    ]


def _spike_cap_row(as_trained_acc: float, float_acc: float, dep_acc: float) -> tuple[str, str, str, str]:
    """The gap row of the one-spike devices: the network as trained (up to 31 spikes per step) against
    the device-aware one (1)."""
    return (
        "spikes per neuron per step",
        "31 hidden (as trained)",
        "1",
        f"as trained: device {as_trained_acc:.1%} vs float {float_acc:.1%}; device-aware training "
        f"(one spike per step in float too): device {dep_acc:.1%}",
    )


# -- Xylo ----------------------------------------------------------------------------------------------
def demo_xylo(console: Any, trained: dict, data: Any, tune: Any, cfg: dict) -> tuple[Deployment, dict]:
    """Check Xylo Audio 2 (violations), deploy the network as trained to Xylo Audio 3, train its
    device-aware twin (``tune(model, lr)``), deploy that, simulate both and report.

    ``trained`` holds the float network as trained: ``net``, ``acc``, ``rec`` (its float record on the
    test split), ``history`` and ``seconds`` (training). Returns the deployment and what the plots need
    (the run of the network as trained): ``config``, ``qspec``, ``chip_out``, ``chip_rec``, ``name``,
    and ``aware_config``, the deployed configuration.
    """
    from pondlib.devices.xylo import XyloSim, mapper
    from pondlib.devices.xylo.limits import XYLO_AUDIO2, XYLO_AUDIO3
    from pondlib.devices.xylo.report import configure, float_vs_chip_gaps, quantization_summary, resource_usage
    from pondlib.training import accuracy
    from pondlib.transform import channel_quantize, device_aware

    net, float_acc, float_rec = trained["net"], trained["acc"], trained["rec"]
    console.rule("[bold]Xylo[/]")
    with stage(console, "Exporting the graph and checking Xylo Audio 2"):
        graph = net.as_graph()
        audio2_error: ConstraintError | None = None
        try:
            mapper(graph, XYLO_AUDIO2)
        except ConstraintError as exc:
            audio2_error = exc
    if audio2_error is not None:
        console.print(violations_table(audio2_error, XYLO_AUDIO2.name))
    else:
        console.print(f"[yellow]{XYLO_AUDIO2.name} accepted the network[/]")

    lim = XYLO_AUDIO3
    with stage(console, f"Mapping to {lim.name}, quantizing (per channel), configuring") as st:
        qspec = channel_quantize(mapper(graph, lim))
        config = configure(qspec, "pond demo (Xylo)")
        st["note"] = "configuration valid"
    with stage(console, "Compiling the bit-exact simulator"):
        XyloSim.from_config(config).evolve(data.x_test[:2])  # compiles (or loads) the kernels once

    def runner(cfg_: Any) -> Any:
        sim = XyloSim.from_config(cfg_)

        def run(xb: Any) -> tuple[Any, dict]:
            sim.reset_state()
            out, _, rec = sim.evolve(xb, record=True)
            return out, rec

        return run

    chip_out, chip_rec, _ = run_in_chunks(
        console, f"simulating on {lim.name} (as trained)", runner(config), data.x_test, SIM_CHUNK
    )
    as_trained_acc = accuracy(chip_out, data.y_test)

    console.print(
        f"[bold]Device-aware training[/] for {lim.name} (bit-shift decays, spike caps, hop delays, "
        f"per-channel int8 weights in the forward pass; {cfg['aware_epochs']} epochs from the trained network)"
    )
    hw = tune(device_aware(net, device="xylo", limits=lim), AWARE_LR["xylo"])
    with stage(console, f"Mapping the device-aware network to {lim.name}, configuring"):
        aware_config = configure(channel_quantize(mapper(hw, lim)), "pond demo (Xylo, device-aware)")
    layers = [("hidden", "0_XyloLIF/spikes", "Spikes"), ("output", "1_XyloLIF/spikes", None)]
    accs = (float_acc, as_trained_acc)
    dep, t_sim = _deploy_aware(console, lim.name, hw, runner(aware_config), data.x_test, data.y_test, accs, layers)
    n_test, T = data.x_test.shape[:2]

    hidden = net.layers[1]
    gaps = float_vs_chip_gaps(qspec, lim, data.x_test, chip_rec, float_rec[_HIDDEN_SPIKES], hidden.tau_mem)
    caps = (float(hidden.max_spikes_per_dt), float(net.layers[3].max_spikes_per_dt))
    console.print(
        resources_table(f"Resources on {lim.name} (network as trained)", resource_usage(qspec, lim, chip_rec))
    )
    console.print(xylo_quantization_table(quantization_summary(qspec)))
    console.print(xylo_gaps_table("Xylo", gaps, caps))
    history = trained["history"]
    rows = _aware_rows(dep, cfg["aware_epochs"], (n_test, T, t_sim))
    rows[-1:-1] = [
        ("final training accuracy / loss", f"{history['accuracy'][-1]:.1%} / {history['loss'][-1]:.3f}"),
        ("training time", f"{trained['seconds']:.1f} s ({cfg['epochs']} epochs)"),
    ]
    console.print(result_table(f"Result on {lim.name} (test split, bit-exact simulation)", rows))
    art = {
        "config": config,
        "qspec": qspec,
        "chip_out": chip_out,
        "chip_rec": chip_rec,
        "name": lim.name,
        "aware_config": aware_config,
    }
    return dep, art


# -- SpiNNaker2 ----------------------------------------------------------------------------------------
def demo_spinnaker2(console: Any, trained: dict, data: Any, tune: Any, cfg: dict) -> tuple[Deployment, Any]:
    """Deploy the float network as trained to the SpiNNaker2 chip, train its device-aware twin
    (``tune(model, lr, data)``; chip units, so the learning rate scales with the mapper's weight scale)
    on samples lengthened by the chip's latency, export, deploy, simulate both and report.

    Returns the deployment and the export (:class:`~pondlib.transform.SpiNNaker2Export`)."""
    from pondlib.devices.spinnaker2 import SPINNAKER2_CHIP, SpiNNaker2Sim, append_silence
    from pondlib.devices.spinnaker2.report import (
        configure,
        float_vs_chip_gaps,
        map_network,
        quantization_summary,
        resource_usage,
    )
    from pondlib.training import accuracy
    from pondlib.transform import device_aware, export_spinnaker2
    from pondlib.transform.spinnaker2_aware import chip_unit_scale

    net, float_acc, float_rec = trained["net"], trained["acc"], trained["rec"]
    lim = SPINNAKER2_CHIP
    console.rule(f"[bold]{lim.name}[/]")
    with stage(console, f"Mapping the network as trained to the {lim.name} (SNN path, {S2_DEMO_MODEL})") as st:
        spec, late = map_network(net, lim, S2_DEMO_MODEL)
        config = configure(spec, "pond demo (SpiNNaker2)")
        spec4, _ = map_network(net, lim, "lif_curr_exp")
        latency = spec.latency_ticks
        st["note"] = f"{spec.report.pes_used} PEs, configuration valid, {latency} ticks from input to output"
    x_test = append_silence(data.x_test, latency)

    def runner(cfg_: Any, record: bool) -> Any:
        sim = SpiNNaker2Sim.from_config(cfg_)

        def run(xb: Any) -> tuple[Any, dict]:
            sim.reset_state()
            out, _, rec = sim.evolve(xb, record=record)
            return out, {k: v for k, v in rec.items() if k.endswith(".spikes")}

        return run

    chip_out, chip_rec, _ = run_in_chunks(
        console, "simulating on SpiNNaker2 (as trained)", runner(config, True), x_test, SIM_CHUNK
    )
    as_trained_acc = accuracy(chip_out, data.y_test)

    console.print(
        f"[bold]Device-aware training[/] for the {lim.name} (synapse-word weights, integer synaptic input, "
        f"float32 neuron update in the chip's order, one spike per tick, one tick per hop; "
        f"{cfg['aware_epochs']} epochs from the trained network, samples + {latency} silent ticks)"
    )
    aware = device_aware(net, device="spinnaker2", neuron_model=S2_DEMO_MODEL, limits=lim)
    aware = tune(aware, AWARE_LR["spinnaker2"] * chip_unit_scale(aware), data.with_silence(latency))
    with stage(console, f"Exporting the device-aware network, mapping to the {lim.name}, configuring"):
        exp = export_spinnaker2(aware, lim)
        aware_config = configure(exp.spec, "pond demo (SpiNNaker2, device-aware)")
    pops = [p.name for p in exp.spec.populations]
    layers = [
        ("hidden" if i < len(pops) - 1 else "output", f"{i}_SpiNNaker2LIF/spikes", f"{p}.spikes")
        for i, p in enumerate(pops)
    ]
    accs = (float_acc, as_trained_acc)
    run_dev = runner(aware_config, True)
    dep, t_sim = _deploy_aware(console, lim.name, aware, run_dev, x_test, data.y_test, accs, layers, latency)
    n_test, T = x_test.shape[:2]

    console.print(
        resources_table(f"Resources on the {lim.name} ({spec.neuron_model})", resource_usage(spec, lim, chip_rec))
    )
    console.print(spinnaker2_quantization_table(quantization_summary(spec), quantization_summary(spec4)))
    notes(console, list(spec.report.notes) + list(late), "mapper note")
    gaps = float_vs_chip_gaps(spec, x_test, chip_rec, float_rec[_HIDDEN_SPIKES])
    first = [_spike_cap_row(as_trained_acc, float_acc, dep.device_acc)]
    console.print(spinnaker2_gaps_table(lim.name, gaps, first, activity_note="network as trained"))
    rows = _aware_rows(dep, cfg["aware_epochs"], (n_test, T, t_sim))
    console.print(result_table(f"Result on the {lim.name} (test split, bit-exact simulation)", rows))
    return dep, exp


# -- Siracusa ------------------------------------------------------------------------------------------
def demo_siracusa(console: Any, trained: dict, data: Any, tune: Any, cfg: dict) -> Deployment:
    """Deploy the float network as trained to Siracusa without the synaptic current, calibrated on the
    training split; train its device-aware twin (``tune(model, lr)``: the integer LIF built from
    RequantShift, int8 weights and activations), export, deploy, simulate both and report."""
    import numpy as np

    from pondlib.devices.siracusa import SIRACUSA, SiracusaSim, float_forward, mapper, quantize_input
    from pondlib.devices.siracusa.report import (
        configure,
        float_vs_chip_gaps,
        map_network,
        quantization_summary,
        resource_usage,
    )
    from pondlib.training import accuracy
    from pondlib.transform import device_aware
    from pondlib.transform.siracusa_aware import export

    net, float_acc, float_rec = trained["net"], trained["acc"], trained["rec"]
    lim = SIRACUSA
    console.rule(f"[bold]{lim.name}[/]")
    calib = data.x_train.astype(np.float64)
    with stage(
        console,
        f"Mapping the network as trained to {lim.name} (int8 GEMM + 16-bit integer LIF without "
        "synaptic current), calibrating on the training split",
    ) as st:
        layers, spec = map_network(net, lim, calib, drop_synapse=True)
        configure(spec, "pond demo (Siracusa)")
        dyn_acc = accuracy(float_forward(layers, data.x_test)[0][-1], data.y_test)
        st["note"] = f"configuration valid; float model without synaptic current: {dyn_acc:.1%}"

    def runner(config: Any) -> Any:
        sim = SiracusaSim(config)

        def run(xb: Any) -> tuple[Any, dict]:
            sim.reset_state()
            out, _, rec = sim.evolve(quantize_input(xb, config), record=True)
            return out, {k: v for k, v in rec.items() if k.endswith("/spikes")}

        return run

    chip_out, chip_rec, _ = run_in_chunks(
        console, "simulating on Siracusa (as trained)", runner(spec.config), data.x_test, SIM_CHUNK
    )
    as_trained_acc = accuracy(chip_out, data.y_test)

    console.print(
        f"[bold]Device-aware training[/] for {lim.name} (int8 weights and activations, the integer LIF "
        f"with its requantization shifts and 16-bit state, one spike per step, no synaptic current; "
        f"{cfg['aware_epochs']} epochs from the trained network)"
    )
    aware = tune(device_aware(net, device="siracusa", calibration=calib, limits=lim), AWARE_LR["siracusa"])
    with stage(console, f"Exporting the device-aware network, mapping to {lim.name}, configuring"):
        aware_layers, kwargs = export(aware, lim)
        aware_spec = mapper(aware_layers, lim, **kwargs)
        configure(aware_spec, "pond demo (Siracusa, device-aware)")
    n_lif = aware.n_layers
    layers = [("hidden" if i < n_lif - 1 else "output", f"lif{i}/spikes", f"lif{i}/spikes") for i in range(n_lif)]
    accs = (float_acc, as_trained_acc)
    run_dev = runner(aware_spec.config)
    dep, t_sim = _deploy_aware(console, lim.name, aware, run_dev, data.x_test, data.y_test, accs, layers)
    n_test, T = data.x_test.shape[:2]

    console.print(resources_table(f"Resources on {lim.name} (per step of one sample)", resource_usage(spec, lim)))
    console.print(siracusa_quantization_table(quantization_summary(spec)))
    lif = net.layers[1]
    gaps = float_vs_chip_gaps(spec, chip_rec, float_rec[_HIDDEN_SPIKES], lif.tau_mem, lif.dt)
    tau_syn = float(np.asarray(lif.tau_syn).ravel()[0])
    first = [
        (
            "synaptic current",
            f"I = beta (I + x), tau_syn = {tau_syn * 1e3:.2f} ms",
            "none: v = alpha v + I (membrane only)",
            f"dropped (drop_synapse=True): the float model without it scores {dyn_acc:.1%} against "
            f"{float_acc:.1%} with it; the device-aware model trains without it",
        ),
        _spike_cap_row(as_trained_acc, float_acc, dep.device_acc),
    ]
    console.print(
        siracusa_gaps_table(lim.name, gaps, first, calibration="the training split", activity_note="network as trained")
    )
    rows = _aware_rows(dep, cfg["aware_epochs"], (n_test, T, t_sim))
    console.print(result_table(f"Result on {lim.name} (test split, bit-exact simulation)", rows))
    return dep
