"""The device sections of ``pond demo``: map, configure and simulate the trained networks on Xylo,
SpiNNaker2 and Siracusa, and print each device's report (resources, quantization, float-vs-chip gaps,
accuracy and simulator speed).

Each section returns a :class:`Deployment`, the row of the demo's summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pondlib.cli.demo_network import S2_DEMO_MODEL, SIM_CHUNK
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

__all__ = ["Deployment", "demo_siracusa", "demo_spinnaker2", "demo_xylo"]

#: The float record key of the demo network's hidden spikes.
_HIDDEN_SPIKES = "1_LIF/spikes"


@dataclass
class Deployment:
    """One device's result in the demo (accuracies in 0..1)."""

    device: str
    network: str  # which float network was deployed
    float_acc: float  # that float network
    device_acc: float
    agree: float  # same prediction as that float network
    speed: float  # simulated sample-steps per second
    dynamics_acc: float | None = None  # a float model of the device's own dynamics, when there is one
    as_trained_acc: float | None = None  # the device running the network as trained (before fine-tuning)
    output: Any = None  # device output spikes (B, T, N_out)


def _agreement(output: Any, float_pred: Any) -> float:
    import numpy as np

    return float(np.mean(np.argmax(output.sum(axis=1), axis=-1) == float_pred))


def _one_spike_result(
    console: Any,
    title: str,
    device: str,
    trained_acc: float,
    tuned_acc: float,
    acc: dict,
    agree: float,
    output: Any,
    timing: tuple[int, int, float],
    dynamics_acc: float | None = None,
) -> Deployment:
    """Print the result table of a device that runs the one-spike fine-tuned network (SpiNNaker2,
    Siracusa) and return its :class:`Deployment`; ``timing`` is ``(samples, steps, seconds)`` simulated."""
    n_test, T, t_sim = timing
    speed = n_test * T / t_sim
    rows = [
        ("float model accuracy (as trained, 31 spikes per step)", f"{trained_acc:.1%}"),
        ("device accuracy, network as trained", f"{acc['as trained']:.1%}"),
        ("float model accuracy (fine-tuned, 1 spike per step)", f"{tuned_acc:.1%}"),
    ]
    if dynamics_acc is not None:
        rows.append(("float model without synaptic current (the device's dynamics)", f"{dynamics_acc:.1%}"))
    rows += [
        ("device accuracy, fine-tuned network", f"{acc['fine-tuned']:.1%}"),
        ("device - float (fine-tuned)", f"{(acc['fine-tuned'] - tuned_acc) * 100:+.1f} points"),
        ("same prediction float vs device (fine-tuned)", f"{agree:.1%} of samples"),
        ("simulator speed", f"{speed:,.0f} sample-steps/s ({n_test} samples x {T} steps in {t_sim:.2f} s)"),
    ]
    console.print(result_table(title, rows))
    return Deployment(
        device,
        "1 spike/step",
        tuned_acc,
        acc["fine-tuned"],
        agree,
        speed,
        dynamics_acc=dynamics_acc,
        as_trained_acc=acc["as trained"],
        output=output,
    )


def _spike_cap_row(acc: dict, floats: dict, trained: str, tuned: str) -> tuple[str, str, str, str]:
    """The gap row comparing, on the device and in float, the network as trained (up to 31 spikes per
    step) and the fine-tuned one (1); ``trained`` and ``tuned`` introduce the two comparisons."""
    return (
        "spikes per neuron per step",
        "31 hidden (as trained); 1 (fine-tuned)",
        "1",
        f"{trained}: device {acc['as trained']:.1%} vs float {floats['as trained'][1]:.1%}; {tuned}: "
        f"device {acc['fine-tuned']:.1%} vs float {floats['fine-tuned'][1]:.1%}",
    )


# -- Xylo ----------------------------------------------------------------------------------------------
def demo_xylo(
    console: Any,
    net: Any,
    data: Any,
    float_acc: float,
    float_pred: Any,
    float_rec: dict,
    history: dict,
    t_train: float,
    cfg: dict,
) -> tuple[Deployment, dict]:
    """Check Xylo Audio 2 (violations), deploy to Xylo Audio 3, simulate and report.

    Returns the deployment and what the plots need: ``config``, ``qspec``, ``chip_out``, ``chip_rec``,
    ``name``.
    """
    from pondlib.devices.xylo import XyloSim, mapper
    from pondlib.devices.xylo.limits import XYLO_AUDIO2, XYLO_AUDIO3
    from pondlib.devices.xylo.report import configure, float_vs_chip_gaps, quantization_summary, resource_usage
    from pondlib.training import accuracy
    from pondlib.transform import channel_quantize

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
        sim = XyloSim.from_config(config)
        sim.evolve(data.x_test[:2])  # compiles (or loads) the kernels once
        sim.reset_state()

    def run(xb: Any) -> tuple[Any, dict]:
        sim.reset_state()
        out, _, rec = sim.evolve(xb, record=True)
        return out, rec

    chip_out, chip_rec, t_sim = run_in_chunks(console, f"simulating on {lim.name}", run, data.x_test, SIM_CHUNK)
    n_test, T = data.x_test.shape[:2]
    chip_acc = accuracy(chip_out, data.y_test)
    speed = n_test * T / t_sim
    agree = _agreement(chip_out, float_pred)

    hidden = net.layers[1]
    gaps = float_vs_chip_gaps(qspec, lim, data.x_test, chip_rec, float_rec[_HIDDEN_SPIKES], hidden.tau_mem)
    caps = (float(hidden.max_spikes_per_dt), float(net.layers[3].max_spikes_per_dt))
    console.print(resources_table(f"Resources on {lim.name}", resource_usage(qspec, lim, chip_rec)))
    console.print(xylo_quantization_table(quantization_summary(qspec)))
    console.print(xylo_gaps_table("Xylo", gaps, caps))
    console.print(
        result_table(
            f"Result on {lim.name} (test split)",
            [
                ("float model accuracy", f"{float_acc:.1%}"),
                (f"device accuracy ({lim.name}, bit-exact simulation)", f"{chip_acc:.1%}"),
                ("device - float", f"{(chip_acc - float_acc) * 100:+.1f} points"),
                ("same prediction float vs device", f"{agree:.1%} of samples"),
                ("final training accuracy / loss", f"{history['accuracy'][-1]:.1%} / {history['loss'][-1]:.3f}"),
                ("training time", f"{t_train:.1f} s ({cfg['epochs']} epochs)"),
                (
                    "simulator speed",
                    f"{speed:,.0f} sample-steps/s ({n_test} samples x {T} steps in {t_sim:.2f} s, "
                    f"{cfg['hidden']} hidden neurons)",
                ),
            ],
        )
    )
    dep = Deployment(lim.name, "as trained", float_acc, chip_acc, agree, speed, output=chip_out)
    return dep, {"config": config, "qspec": qspec, "chip_out": chip_out, "chip_rec": chip_rec, "name": lim.name}


# -- SpiNNaker2 ----------------------------------------------------------------------------------------
def demo_spinnaker2(console: Any, floats: dict, data: Any) -> Deployment:
    """Deploy both float networks (``label -> (net, accuracy, predictions, record)``) to the SpiNNaker2
    chip, simulate and report."""
    import numpy as np

    from pondlib.devices.spinnaker2 import SPINNAKER2_CHIP, SpiNNaker2Sim
    from pondlib.devices.spinnaker2.report import (
        configure,
        float_vs_chip_gaps,
        map_network,
        quantization_summary,
        resource_usage,
    )
    from pondlib.training import accuracy

    lim = SPINNAKER2_CHIP
    console.rule(f"[bold]{lim.name}[/]")
    with stage(console, f"Mapping both networks to the {lim.name} (SNN path, {S2_DEMO_MODEL}), configuring") as st:
        specs, configs, late = {}, {}, []
        for label, (net, *_rest) in floats.items():
            specs[label], warned = map_network(net, lim, S2_DEMO_MODEL)
            configs[label] = configure(specs[label], "pond demo (SpiNNaker2)")
            late += warned
        spec4, _ = map_network(floats["fine-tuned"][0], lim, "lif_curr_exp")
        spec = specs["fine-tuned"]
        st["note"] = f"{spec.report.pes_used} PEs, configurations valid"
    outs, recs, t_sim = {}, {}, 0.0
    for label, config in configs.items():
        sim = SpiNNaker2Sim.from_config(config)

        def run(xb: Any, sim: Any = sim, record: bool = label == "fine-tuned") -> tuple[Any, dict]:
            sim.reset_state()
            out, _, rec = sim.evolve(xb, record=record)
            return out, {k: v for k, v in rec.items() if k.endswith((".spikes", ".v"))}

        outs[label], recs[label], seconds = run_in_chunks(
            console, f"simulating on SpiNNaker2 ({label})", run, data.x_test, SIM_CHUNK
        )
        if label == "fine-tuned":
            t_sim = seconds
    n_test, T = data.x_test.shape[:2]
    acc = {k: accuracy(v, data.y_test) for k, v in outs.items()}
    _, tuned_acc, tuned_pred, tuned_rec = floats["fine-tuned"]
    trained_acc, trained_rec = floats["as trained"][1], floats["as trained"][3]
    rec = recs["fine-tuned"]
    agree = _agreement(outs["fine-tuned"], tuned_pred)

    console.print(resources_table(f"Resources on the {lim.name} ({spec.neuron_model})", resource_usage(spec, lim, rec)))
    console.print(spinnaker2_quantization_table(quantization_summary(spec), quantization_summary(spec4)))
    notes(console, list(spec.report.notes) + late, "mapper note")
    peak = float(np.asarray(trained_rec[_HIDDEN_SPIKES]).max())
    gaps = float_vs_chip_gaps(spec, data.x_test, rec, tuned_rec[_HIDDEN_SPIKES])
    trained = f"as trained, hidden neurons fire up to {peak:.0f} per step"
    first = [_spike_cap_row(acc, floats, trained, "fine-tuned with one spike per step")]
    console.print(spinnaker2_gaps_table(lim.name, gaps, first, activity_note="fine-tuned network"))
    return _one_spike_result(
        console,
        f"Result on the {lim.name} (test split)",
        lim.name,
        trained_acc,
        tuned_acc,
        acc,
        agree,
        outs["fine-tuned"],
        (n_test, T, t_sim),
    )


# -- Siracusa ------------------------------------------------------------------------------------------
def demo_siracusa(console: Any, floats: dict, data: Any) -> Deployment:
    """Deploy both float networks (``label -> (net, accuracy, predictions, record)``) to Siracusa without
    the synaptic current, calibrated on the training split; simulate and report."""
    import numpy as np

    from pondlib.devices.siracusa import SIRACUSA, SiracusaSim, float_forward, quantize_input
    from pondlib.devices.siracusa.report import (
        configure,
        float_vs_chip_gaps,
        map_network,
        quantization_summary,
        resource_usage,
    )
    from pondlib.training import accuracy

    lim = SIRACUSA
    console.rule(f"[bold]{lim.name}[/]")
    calib = data.x_train.astype(np.float64)
    with stage(
        console,
        f"Mapping both networks to {lim.name} (int8 GEMM + 16-bit integer LIF without "
        "synaptic current), calibrating on the training split",
    ) as st:
        specs, dyn_acc = {}, {}
        for label, (net, *_rest) in floats.items():
            layers, specs[label] = map_network(net, lim, calib, drop_synapse=True)
            configure(specs[label], "pond demo (Siracusa)")
            dyn_acc[label] = accuracy(float_forward(layers, data.x_test)[0][-1], data.y_test)
        st["note"] = "configurations valid; float model without synaptic current: " + ", ".join(
            f"{k} {v:.1%}" for k, v in dyn_acc.items()
        )
    outs, rec_tuned, t_sim = {}, {}, 0.0
    for label, spec in specs.items():
        sim = SiracusaSim(spec.config)
        x_int = quantize_input(data.x_test, spec.config)

        def run(xb: Any, sim: Any = sim, record: bool = label == "fine-tuned") -> tuple[Any, dict]:
            sim.reset_state()
            out, _, rec = sim.evolve(xb, record=record)
            return out, {k: v for k, v in rec.items() if k.endswith(("/spikes", "/v"))}

        outs[label], rec, seconds = run_in_chunks(console, f"simulating on Siracusa ({label})", run, x_int, SIM_CHUNK)
        if label == "fine-tuned":
            t_sim, rec_tuned = seconds, rec
    n_test, T = data.x_test.shape[:2]
    acc = {k: accuracy(v, data.y_test) for k, v in outs.items()}
    net1, tuned_acc, tuned_pred, tuned_rec = floats["fine-tuned"]
    trained_acc = floats["as trained"][1]
    spec = specs["fine-tuned"]
    agree = _agreement(outs["fine-tuned"], tuned_pred)

    console.print(resources_table(f"Resources on {lim.name} (per step of one sample)", resource_usage(spec, lim)))
    console.print(siracusa_quantization_table(quantization_summary(spec)))
    lif = net1.layers[1]
    gaps = float_vs_chip_gaps(spec, rec_tuned, tuned_rec[_HIDDEN_SPIKES], lif.tau_mem, lif.dt)
    tau_syn = float(np.asarray(lif.tau_syn).ravel()[0])
    first = [
        (
            "synaptic current",
            f"I = beta (I + x), tau_syn = {tau_syn * 1e3:.2f} ms",
            "none: v = alpha v + I (membrane only)",
            f"dropped (drop_synapse=True): the float model without it scores {dyn_acc['fine-tuned']:.1%} "
            f"(fine-tuned; {dyn_acc['as trained']:.1%} as trained) against {tuned_acc:.1%} with it",
        ),
        _spike_cap_row(acc, floats, "as trained", "fine-tuned"),
    ]
    console.print(
        siracusa_gaps_table(lim.name, gaps, first, calibration="the training split", activity_note="fine-tuned network")
    )
    return _one_spike_result(
        console,
        f"Result on {lim.name} (test split)",
        lim.name,
        trained_acc,
        tuned_acc,
        acc,
        agree,
        outs["fine-tuned"],
        (n_test, T, t_sim),
        dynamics_acc=dyn_acc["fine-tuned"],
    )
