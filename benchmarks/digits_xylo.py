"""Digits end to end on Xylo Audio 3: plain float training vs hardware-aware training.

    python benchmarks/digits_xylo.py [--fast] [--epochs N] [--hw-epochs N] [--hidden H] [--seed S]

1. data: scikit-learn digits as 16-channel event counts (``load_digits_events``, row/column scan,
   counts 0..15, fixed stratified split);
2. plain float model ``Linear(16, H) -> LIF(H) -> Linear(H, 10) -> LIF(10)`` with time constants a
   float user would pick (tau_mem 20 ms, tau_syn 2 ms, dt 1 ms), no spike caps; trained with
   cross-entropy on summed output spikes;
3. the 8-output limit of Xylo Audio 2 is reported as a constraint violation; the network is mapped to
   Xylo Audio 3, channel-quantized, configured and run through ``XyloSim`` (batched): "chip (plain)";
4. hardware-aware: ``xylo_aware(trained float net)`` (caps 31/1, bit-shift decay with learned dash,
   hop delays, input clip, fake-quantized weights) fine-tuned, then mapped the same way: "chip (HW)";
   the hardware-aware float accuracy and its spike agreement with the chip are reported too;
5. a rich table and ``benchmarks/results/digits_xylo.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import numpy as np
import optax
from rich.console import Console
from rich.table import Table

from pondlib import nn
from pondlib.datasets import load_digits_events
from pondlib.devices.xylo import XYLO_AUDIO2, XYLO_AUDIO3, XyloSim, config_from_specification, mapper
from pondlib.devices.xylo.aware import xylo_aware
from pondlib.devices.xylo.compare import compare_records, layer_map_from_spec
from pondlib.errors import ConstraintError
from pondlib.training import accuracy, evaluate, fit
from pondlib.transform import channel_quantize

DT = 1e-3


def float_network(n_hidden: int, key: jax.Array) -> nn.Sequential:
    """The plain float model (time constants not chosen for the chip, no caps)."""
    k1, k2 = jax.random.split(key)
    return nn.Sequential(
        nn.Linear(16, n_hidden, key=k1),
        nn.LIF(n_hidden, tau_mem=0.02, tau_syn=0.002, dt=DT),
        nn.Linear(n_hidden, 10, key=k2),
        nn.LIF(10, tau_mem=0.02, tau_syn=0.002, dt=DT),
    )


def optimizer(lr: float, steps: int) -> optax.GradientTransformation:
    """Adam with a cosine schedule and gradient clipping."""
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(optax.cosine_decay_schedule(lr, steps, 0.05)))


def on_chip(net, x: np.ndarray, *, record: bool = False, chunk: int = 150):
    """Map to Xylo Audio 3, channel-quantize, configure, simulate ``x`` batched; (qspec, out, record)."""
    qspec = channel_quantize(mapper(net, XYLO_AUDIO3))
    config, ok, msg = config_from_specification(qspec)
    if not ok:
        raise RuntimeError(msg)
    sim = XyloSim.from_config(config)
    outs, recs = [], []
    for start in range(0, len(x), chunk):
        sim.reset_state()
        out, _, rec = sim.evolve(x[start : start + chunk], record=record)
        outs.append(out)
        recs.append(rec)
    rec = {k: np.concatenate([r[k] for r in recs]) for k in recs[0]} if record else {}
    return qspec, np.concatenate(outs), rec


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fast", action="store_true", help="few epochs, 64 hidden neurons")
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument("--hw-epochs", type=int, default=None)
    ap.add_argument("--hidden", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "digits_xylo.json"))
    args = ap.parse_args(argv)
    epochs = args.epochs or (8 if args.fast else 60)
    hw_epochs = args.hw_epochs or (4 if args.fast else 30)
    hidden = args.hidden or (64 if args.fast else 128)
    console = Console()

    data = load_digits_events(T=12, seed=args.seed)
    console.print(f"[dim]{data.description}[/]")
    key = jax.random.PRNGKey(args.seed)
    k_net, k_fit, k_hw = jax.random.split(key, 3)
    n_steps = len(data.y_train) // 64

    # 1. plain float training
    net = float_network(hidden, k_net)
    t0 = time.perf_counter()
    net, hist = fit(
        net,
        data,
        "cross_entropy_sum",
        optimizer=optimizer(3e-3, epochs * n_steps),
        epochs=epochs,
        batch_size=64,
        key=k_fit,
        frozen=("tau_mem", "tau_syn"),
        console=console,
    )
    t_float = time.perf_counter() - t0
    float_acc = evaluate(net, data.x_test, data.y_test)

    # 2. Audio 2 cannot hold 10 outputs: reported, not hidden
    try:
        mapper(net, XYLO_AUDIO2)
        audio2 = "accepted"
    except ConstraintError as exc:
        audio2 = "; ".join(f"{v.rule}: {v.value} > {v.limit}" for v in exc.violations)
        console.print(f"[red]{XYLO_AUDIO2.name}[/]: {audio2}")

    # 3. plain float on the chip
    _, chip_out, _ = on_chip(net, data.x_test)
    chip_plain = accuracy(chip_out, data.y_test)

    # 4. hardware-aware fine-tuning
    hw = xylo_aware(net, XYLO_AUDIO3, quantize="channel", learn_dash=True, delays=True)
    hw_before = evaluate(hw, data.x_test, data.y_test)
    t0 = time.perf_counter()
    hw, hw_hist = fit(
        hw,
        data,
        "cross_entropy_sum",
        optimizer=optimizer(2e-3, hw_epochs * n_steps),
        epochs=hw_epochs,
        batch_size=64,
        key=k_hw,
        console=console,
    )
    t_hw = time.perf_counter() - t0
    hw_acc = evaluate(hw, data.x_test, data.y_test)
    qspec, hw_chip_out, chip_rec = on_chip(hw, data.x_test, record=True)
    chip_hw = accuracy(hw_chip_out, data.y_test)
    hw_out, _, hw_rec = hw(data.x_test.astype(np.float32), record=True)
    cmp = compare_records(
        hw_rec,
        chip_rec,
        layer_map=layer_map_from_spec(qspec),
        delays=0,
        scales=qspec.quantization.scales,
        chip_output=hw_chip_out,
    )
    spike_agree = {name: c.stats["spikes"]["exact"] for name, c in cmp.items()}
    pred_agree = float(np.mean(np.argmax(np.asarray(hw_out).sum(1), -1) == np.argmax(hw_chip_out.sum(1), -1)))

    table = Table(
        title=f"Digits on {XYLO_AUDIO3.name} ({hidden} hidden, T = {data.n_steps}, test split of {len(data.y_test)})"
    )
    for col in ("model", "float acc", "chip acc", "chip - float", "train time"):
        table.add_column(col, justify="right" if col != "model" else "left")
    table.add_row(
        "plain float",
        f"{float_acc:.1%}",
        f"{chip_plain:.1%}",
        f"{(chip_plain - float_acc) * 100:+.1f} pt",
        f"{t_float:.0f} s ({epochs} ep)",
    )
    table.add_row(
        "hardware-aware (fine-tuned)",
        f"{hw_acc:.1%}",
        f"{chip_hw:.1%}",
        f"{(chip_hw - hw_acc) * 100:+.1f} pt",
        f"{t_hw:.0f} s ({hw_epochs} ep)",
    )
    console.print(table)
    console.print(f"hardware-aware model before fine-tuning: {hw_before:.1%} (float net transformed as is)")
    console.print(
        f"chip (HW-aware) vs plain float accuracy: {(chip_hw - float_acc) * 100:+.1f} points; "
        f"spike agreement HW-aware float vs chip: "
        + ", ".join(f"{k} {v:.4%}" for k, v in spike_agree.items())
        + f"; same prediction {pred_agree:.2%}"
    )

    result = {
        "hidden": hidden,
        "T": data.n_steps,
        "epochs": epochs,
        "hw_epochs": hw_epochs,
        "seed": args.seed,
        "float_acc": float_acc,
        "chip_acc_plain": chip_plain,
        "hw_float_acc_before_finetune": hw_before,
        "hw_float_acc": hw_acc,
        "chip_acc_hw": chip_hw,
        "spike_agreement_hw_vs_chip": spike_agree,
        "prediction_agreement_hw_vs_chip": pred_agree,
        "train_time_float_s": t_float,
        "train_time_hw_s": t_hw,
        "audio2": audio2,
        "dashes_hw": {
            "dash_mem": np.unique(np.asarray(qspec.dash_mem)).tolist(),
            "dash_syn": np.unique(np.asarray(qspec.dash_syn)).tolist(),
            "dash_mem_out": np.unique(np.asarray(qspec.dash_mem_out)).tolist(),
            "dash_syn_out": np.unique(np.asarray(qspec.dash_syn_out)).tolist(),
        },
        "final_loss": {"float": hist["loss"][-1], "hw": hw_hist["loss"][-1]},
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    console.print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
