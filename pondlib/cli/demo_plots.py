"""The plots of ``pond demo``: input events, float vs Xylo activity, training, outputs and accuracies
by device, saved as PNG files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pondlib.cli.demo_network import DT

if TYPE_CHECKING:
    from pondlib.cli.demo_devices import Deployment

__all__ = ["save_plots"]


def save_plots(
    out_dir: Path,
    data: Any,
    xylo: dict,
    float_out: Any,
    float_rec: dict,
    history: dict,
    deployments: Sequence[Deployment],
) -> list[Path]:
    """Save the demo's plots of test sample 0 and of the accuracies to ``out_dir``; return their paths.

    ``xylo`` holds the Xylo run (``qspec``, ``chip_out``, ``chip_rec``, ``name``); ``float_rec`` is the
    float record of the network as trained; each deployment's ``output`` is its device-aware network's.
    """
    import numpy as np

    from pondlib import plot

    i = 0  # the first test sample
    label = int(data.y_test[i])
    qspec, chip_out, chip_rec, name = xylo["qspec"], xylo["chip_out"], xylo["chip_rec"], xylo["name"]
    device_label = f"{name} (bit-exact simulation)"
    paths = []

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
    save(
        plot.compare(
            np.asarray(float_rec["1_LIF/spikes"][i]),
            chip_rec["Spikes"][i],
            title=f"hidden spikes, test sample 0 (digit {label})",
            dt=DT,
            float_unit="spikes per step",
            device_unit="spikes per step",
            device_label=device_label,
        ),
        "hidden_spikes.png",
    )
    scale = np.asarray(qspec.quantization.scales["hidden"], dtype=float)
    scale = np.broadcast_to(scale, (qspec.n_hidden,))
    fvm = np.asarray(float_rec["1_LIF/vmem"][i]) * scale
    active = np.argsort(-np.asarray(chip_rec["Spikes"][i]).sum(axis=0))[:4]
    save(
        plot.compare(
            fvm,
            chip_rec["Vmem"][i],
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
        "(the chip's hidden -> output hop adds one step of delay)",
        float_unit="spikes per step",
        device_unit="spikes per step",
        device_label=device_label,
    )
    for ax in fig.axes[:2]:
        ax.set_yticks(range(fo.shape[1]))
    save(fig, "output_float_vs_chip.png")
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

    panels = {f"float, as trained: {pred(fo)}": fo}
    for d in deployments:
        panels[f"{d.device}, device-aware: {pred(d.output[i])}"] = d.output[i]
    save(
        plot.rasters(
            panels,
            dt=DT,
            ylabel="output neuron (class)",
            title=f"test sample 0 (digit {label}): output spikes of the float model and the device-aware "
            "deployments (input to output: Xylo 1 step late, SpiNNaker2 2 ticks)",
        ),
        "output_by_device.png",
    )
    results = {}
    for d in deployments:
        results[d.device] = {
            "float, as trained": d.float_acc,
            "device, as trained": d.as_trained_acc,
            "device-aware float": d.aware_float_acc,
            "device, device-aware": d.device_acc,
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
