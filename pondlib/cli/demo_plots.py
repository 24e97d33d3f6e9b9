"""The plots of ``pond demo``: input events, float vs device activity (the first device that reports its
hidden layer's traces, ``Device.traces``), training, outputs and accuracies by device, saved as PNG files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pondlib.cli.demo_network import DT
from pondlib.devices import registry

if TYPE_CHECKING:
    from pondlib.pipeline import Deployment

__all__ = ["save_plots"]


def _traced(deployments: Sequence[Deployment]) -> tuple[Any, Any, Any]:
    """The first deployment whose device reports its hidden layer's traces, its device and the traces."""
    for dep in deployments:
        device = registry.get(dep.device)
        traces = device.traces(dep.mapped, dep.record)
        if traces is not None:
            return dep, device, traces
    return None, None, None


def save_plots(
    out_dir: Path,
    data: Any,
    float_out: Any,
    float_rec: dict,
    history: dict,
    deployments: Sequence[Deployment],
) -> list[Path]:
    """Save the demo's plots of test sample 0 and of the accuracies to ``out_dir``; return their paths.

    ``float_rec`` is the float record of the network as trained; each deployment holds its device's run
    of the network as trained (``output``, ``record``) and of its device-aware network (``aware_output``).
    """
    from pondlib import plot

    i = 0  # the first test sample
    label = int(data.y_test[i])
    paths: list[Path] = []

    def save(fig: Any, file: str) -> None:
        path = out_dir / file
        fig.savefig(path, dpi=110)
        paths.append(path)

    save(
        plot.raster(
            data.x_test[i],
            title=f"input events, test sample 0 (digit {label}): ch 0-7 rows, 8-15 columns",
            dt=DT,
            ylabel="input channel",
            count_label="events per step",
        ),
        "input_raster.png",
    )
    dep, device, traces = _traced(deployments)
    if dep is not None:
        _device_plots(save, plot, i, label, float_out, float_rec, dep, device, traces)
    import numpy as np

    hist = np.stack([history["loss"], history["accuracy"]], axis=1)
    save(
        plot.traces(
            hist,
            title="training (float model)",
            ylabel="cross-entropy loss / accuracy",
            labels=["loss", "train accuracy (fraction)"],
            x=np.arange(1, len(hist) + 1),
            xlabel="epoch",
        ),
        "training.png",
    )

    def pred(out: Any) -> str:
        counts = np.asarray(out).sum(axis=0)
        return f"predicts {int(counts.argmax())}" if counts.any() else "silent"

    fo = np.asarray(float_out[i])
    panels = {f"float, as trained: {pred(fo)}": fo}
    for d in deployments:
        out = d.aware_output if d.aware_output is not None else d.output
        panels[f"{registry.get(d.device).display_name}, deployed: {pred(out[i])}"] = out[i]
    delays = ", ".join(
        f"{registry.get(d.device).display_name} {registry.get(d.device).describe_delay(d.deployed)}"
        for d in deployments
    )
    save(
        plot.rasters(
            panels,
            dt=DT,
            ylabel="output neuron (class)",
            title=f"test sample 0 (digit {label}): output spikes of the float model and the deployments\n"
            f"(input to output: {delays})",
        ),
        "output_by_device.png",
    )
    results = {}
    for d in deployments:
        results[d.device] = {
            "float, as trained": d.float_acc,
            "device, as trained": d.as_trained_acc,
            "device-aware float": d.aware_float_acc if d.aware_float_acc is not None else d.float_acc,
            "device, device-aware": d.final_acc,
        }
    save(
        plot.accuracy_bars(
            results,
            chance=1.0 / data.n_classes,
            order=["float, as trained", "device, as trained", "device-aware float", "device, device-aware"],
            title=f"digits test accuracy, float vs device ({len(data.y_test)} samples)",
        ),
        "accuracy_by_device.png",
    )
    return paths


def _device_plots(
    save: Any, plot: Any, i: int, label: int, float_out: Any, float_rec: dict, dep: Any, device: Any, traces: Any
) -> None:
    """Float vs device hidden spikes, membranes and outputs of test sample ``i`` (the network as trained)."""
    import numpy as np

    name = traces.name
    device_label = f"{name} (bit-exact simulation)"
    chip_out = dep.output
    # the first hidden layer of the float record ("<index>_<Module>/vmem", the lowest index)
    prefixes = sorted({k.split("/")[0] for k in float_rec if k.endswith("/vmem")}, key=lambda s: int(s.split("_")[0]))
    key = prefixes[0]
    save(
        plot.compare(
            np.asarray(float_rec[f"{key}/spikes"][i]),
            traces.spikes[i],
            title=f"hidden spikes, test sample 0 (digit {label})",
            dt=DT,
            float_unit="spikes per step",
            device_unit="spikes per step",
            device_label=device_label,
        ),
        "hidden_spikes.png",
    )
    fvm = np.asarray(float_rec[f"{key}/vmem"][i]) * traces.scale
    active = np.argsort(-np.asarray(traces.spikes[i]).sum(axis=0))[:4]
    save(
        plot.compare(
            fvm,
            traces.vmem[i],
            kind="lines",
            neurons=sorted(active.tolist()),
            dt=DT,
            title=f"hidden membrane potentials, test sample 0 (4 most active neurons on {name})",
            float_label="float model (x quantization scale)",
            device_label=device_label,
            float_unit="vmem (chip units)",
            device_unit="Vmem (chip integer)",
        ),
        "membrane_traces.png",
    )
    fo = np.asarray(float_out[i])
    fig = plot.compare(
        fo,
        chip_out[i],
        dt=DT,
        ylabel="output neuron (class)",
        title=f"output spikes, test sample 0 (digit {label}): float predicts "
        f"{int(fo.sum(0).argmax())}, {name} predicts {int(chip_out[i].sum(0).argmax())}\n"
        f"(the device's output is {device.describe_delay(dep.mapped)})",
        float_unit="spikes per step",
        device_unit="spikes per step",
        device_label=device_label,
    )
    for ax in fig.axes[:2]:
        ax.set_yticks(range(fo.shape[1]))
    save(fig, "output_float_vs_chip.png")
