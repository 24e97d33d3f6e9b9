"""``pond demo [--out DIR] [--epochs N] [--hidden H] [--seed S] [--fast]``: the whole pipeline on the
bundled digits (no download).

It trains a float spiking network in JAX, deploys it to three devices and reports, per device, the
resources used against the limits, the quantization error, float vs device accuracy and the simulator
speed:

- **Xylo**: checks Xylo Audio 2 (whose 8-output limit the 10-class network breaks: the violation
  table is printed), maps to Xylo Audio 3, quantizes per channel and runs the bit-exact simulator;
- **SpiNNaker2** (float32 LIF on ARM cores, 7-bit synapse words, one tick per hop) and **Siracusa**
  (int8 GEMMs and a 16-bit integer LIF without synaptic current) emit at most one spike per neuron per
  step, where the float network fires up to 31.

On every device the network as trained is deployed first (the gap it shows is explained, row by row),
then its device-aware twin (:func:`pondlib.transform.device_aware`: the device's arithmetic in the
forward pass, straight-through gradients) is fine-tuned with the same ``fit`` and deployed; the summary
compares that deployment with the float network as trained and says whether any device loses accuracy.

Plots, the trained networks (``network.pond``; ``network_spinnaker2.pond``, the device-aware
SpiNNaker2 network exported in float units), the deployed Xylo configuration (``xylo_config.npz``)
and test inputs (``digits_test.npy``) go to ``DIR`` (default ``./pond-demo-output``); the report ends
with commands to try on them.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="pond")
    >>> add_parser(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["demo", "--fast", "--out", "plots"])
    >>> args.command, args.fast, args.out, args.epochs
    ('demo', True, 'plots', None)
"""

from __future__ import annotations

import argparse
import shlex
import time
from pathlib import Path
from typing import Any

from pondlib.cli.args import SEED_MAX, positive_int, seed
from pondlib.cli.demo_devices import NO_LOSS_POINTS, Deployment, demo_siracusa, demo_spinnaker2, demo_xylo
from pondlib.cli.demo_network import DEMO_DEFAULTS, DT, S2_DEMO_MODEL, demo_network
from pondlib.cli.demo_plots import save_plots
from pondlib.cli.render import stage, table
from pondlib.errors import PondError

__all__ = ["add_parser", "run"]

#: Parameters the float training leaves as the network was built (they match the chips' decays).
_FROZEN = ("tau_mem", "tau_syn", "threshold", "bias")


def add_parser(subparsers: Any) -> None:
    """Register ``demo`` on ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    demo = subparsers.add_parser(
        "demo",
        help="train on digits, deploy to Xylo, SpiNNaker2 and Siracusa, report",
        description="Train a small spiking network on the bundled digits, map it to "
        "Xylo, SpiNNaker2 and Siracusa, simulate each bit-exactly and compare "
        "accuracies (under a minute).",
    )
    full, fast = DEMO_DEFAULTS["full"], DEMO_DEFAULTS["fast"]
    demo.add_argument(
        "--out",
        default="pond-demo-output",
        metavar="DIR",
        help="folder for plots, saved networks and the Xylo configuration (created; default ./pond-demo-output)",
    )
    demo.add_argument(
        "--epochs",
        type=positive_int,
        default=None,
        metavar="N",
        help=f"training epochs (default {full['epochs']}, --fast {fast['epochs']})",
    )
    demo.add_argument(
        "--hidden",
        type=positive_int,
        default=None,
        metavar="H",
        help=f"hidden neurons (default {full['hidden']}, --fast {fast['hidden']})",
    )
    demo.add_argument("--seed", type=seed, default=0, help=f"random seed, an integer in [0, {SEED_MAX}] (default 0)")
    demo.add_argument(
        "--fast", action="store_true", help="a smaller, shorter run (for tests and a first look; lower accuracy)"
    )


def _prepare_out(path: str) -> Path:
    """The output folder, created; a :class:`PondError` for a file or a folder that cannot be made."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise PondError(
            "output folder",
            value=str(out),
            limit="a folder (or a path that does not exist)",
            where="pond demo --out",
            fix="pass a folder path with --out",
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PondError(
            "cannot create the output folder",
            value=f"{out} ({exc.strerror})",
            where="pond demo --out",
            fix="pass a writable folder with --out",
        ) from None
    return out


def run(console: Any, args: argparse.Namespace) -> int:
    """Run the demo (train, deploy to three devices, report, save files and plots); return 0."""
    t_start = time.perf_counter()
    mode = "fast" if args.fast else "full"
    cfg = dict(DEMO_DEFAULTS[mode])
    if args.epochs is not None:
        cfg["epochs"] = args.epochs
    if args.hidden is not None:
        cfg["hidden"] = args.hidden
    out_dir = _prepare_out(args.out)

    from rich.panel import Panel

    console.print(
        Panel.fit(
            "[bold]pond demo[/]: digits -> float SNN (JAX) -> Xylo, SpiNNaker2, Siracusa: mapping, "
            "quantization, bit-exact simulation\n"
            f"mode {mode}: {cfg['hidden']} hidden neurons, {cfg['epochs']} epochs (+ {cfg['aware_epochs']} "
            f"device-aware per device), T = {cfg['T']} steps of {DT * 1e3:g} ms, seed {args.seed}",
            border_style="cyan",
        )
    )

    with stage(console, "Importing the pipeline"):
        import jax
        import numpy as np
        import optax

        from pondlib.datasets import load_digits_events
        from pondlib.io import save_network
        from pondlib.training import evaluate, fit

    # 1. data -------------------------------------------------------------------------------------------
    with stage(console, "Loading digits as events") as st:
        data = load_digits_events(T=cfg["T"], seed=args.seed)
        st["note"] = (
            f"{len(data.y_train)} train / {len(data.y_test)} test, (T, channels) = ({data.n_steps}, {data.n_channels})"
        )
    console.print(f"  [dim]{data.description}[/]")

    # 2. float training ---------------------------------------------------------------------------------
    k_net, k_fit, k_tune = jax.random.split(jax.random.PRNGKey(args.seed), 3)
    net = demo_network(cfg["hidden"], data.n_classes, key=k_net)

    def optimizer(lr: float, epochs: int) -> Any:
        steps = max(1, epochs * (len(data.y_train) // 64))
        return optax.chain(
            optax.clip_by_global_norm(1.0), optax.adam(optax.cosine_decay_schedule(lr, steps, alpha=0.05))
        )

    def train(model: Any, lr: float, epochs: int, key: Any, frozen: tuple = _FROZEN, on: Any = None) -> tuple:
        return fit(
            model,
            data if on is None else on,
            "cross_entropy_sum",
            optimizer=optimizer(lr, epochs),
            epochs=epochs,
            batch_size=64,
            key=key,
            frozen=frozen,
            progress=True,
            console=console,
        )

    def tune(model: Any, lr: float, on: Any = None) -> Any:
        """Device-aware fine-tuning: every parameter trainable, on ``on`` (default the digits)."""
        return train(model, lr, cfg["aware_epochs"], k_tune, frozen=(), on=on)[0]

    console.print(
        "[bold]Training[/] the float model (cross-entropy on output spike counts; time "
        "constants, thresholds and biases frozen; Xylo's spike caps: 31 hidden, 1 output)"
    )
    t0 = time.perf_counter()
    net, history = train(net, 3e-3, cfg["epochs"], k_fit)
    t_train = time.perf_counter() - t0
    with stage(console, "Evaluating the float model on the test split") as st:
        float_acc = evaluate(net, data.x_test, data.y_test)
        float_out, _, float_rec = net(data.x_test.astype(np.float32), record=True)
        st["note"] = f"float test accuracy {float_acc:.1%}"
    trained = {"net": net, "acc": float_acc, "rec": float_rec, "history": history, "seconds": t_train}

    # 3. devices: the network as trained, then its device-aware twin ------------------------------------
    xylo, xylo_art = demo_xylo(console, trained, data, tune, cfg)
    s2, s2_export = demo_spinnaker2(console, trained, data, tune, cfg)
    deployments = [xylo, s2, demo_siracusa(console, trained, data, tune, cfg)]

    # 4. summary ----------------------------------------------------------------------------------------
    console.rule("[bold]Summary[/]")
    _print_summary(console, deployments, len(data.y_test))

    # 5. files and plots --------------------------------------------------------------------------------
    with stage(console, f"Saving the networks, the Xylo configuration and test inputs to {out_dir}") as st:
        files = [
            save_network(net, out_dir / "network.pond"),
            save_network(s2_export.net, out_dir / "network_spinnaker2.pond"),
            xylo_art["aware_config"].save(out_dir / "xylo_config.npz"),
        ]
        np.save(out_dir / "digits_test.npy", data.x_test[:20])
        np.save(out_dir / "digits_test_labels.npy", data.y_test[:20])
        st["note"] = ", ".join(Path(f).name for f in files) + ", digits_test.npy (20 samples), digits_test_labels.npy"
    with stage(console, f"Saving plots to {out_dir}") as st:
        paths = save_plots(out_dir, data, xylo_art, float_out, float_rec, history, deployments)
        st["note"] = ", ".join(p.name for p in paths)
    console.print(Panel(_try_next(out_dir), title="try next", title_align="left", border_style="cyan"), highlight=False)
    console.print(
        f"[bold green]done[/] in {time.perf_counter() - t_start:.1f} s; plots and files in [bold]{out_dir.resolve()}[/]"
    )
    return 0


def _print_summary(console: Any, deployments: list[Deployment], n_test: int) -> None:
    """The float vs device table, one accuracy line per device and the verdict (no loss or not)."""
    t = table(
        f"Float vs device accuracy (test split, {n_test} samples)",
        (
            ("device", "left"),
            ("float", "right"),
            ("device, as trained", "right"),
            ("aware float", "right"),
            ("device, aware", "right"),
            ("device - float", "right"),
            ("same prediction", "right"),
            ("spikes equal", "right"),
        ),
    )
    for d in deployments:
        t.add_row(
            d.device,
            f"{d.float_acc:.1%}",
            f"{d.as_trained_acc:.1%}",
            f"{d.aware_float_acc:.1%}",
            f"{d.device_acc:.1%}",
            f"{(d.device_acc - d.float_acc) * 100:+.1f} pt",
            f"{d.agree:.1%}",
            f"{min(d.spikes_equal.values()):.1%}",
        )
    t.caption = (
        "float: the float network as trained; aware: its device-aware twin (pondlib.transform.device_aware); "
        "device - float: the device-aware network on the device against the float network; same prediction "
        "and spikes equal (worst layer): device-aware float model vs device"
    )
    console.print(t)
    for d in deployments:
        console.print(
            f"accuracy on {d.device}: float {d.float_acc:.1%}, device {d.device_acc:.1%} "
            f"(network as trained: device {d.as_trained_acc:.1%})",
            style="bold",
            highlight=False,
        )
    lost = [d for d in deployments if (d.float_acc - d.device_acc) * 100 > NO_LOSS_POINTS]
    if lost:
        names = ", ".join(f"{d.device} ({(d.device_acc - d.float_acc) * 100:+.1f} points)" for d in lost)
        console.print(f"[bold yellow]accuracy lost on the device:[/] {names}", highlight=False)
    else:
        console.print(
            f"[bold green]no accuracy lost on any device[/]: each device-aware deployment is within "
            f"{NO_LOSS_POINTS} points of the float model as trained (or above it)",
            highlight=False,
        )


def _try_next(out_dir: Path) -> str:
    """The commands to try on the demo's files, one per line."""
    q, d = shlex.quote, str(out_dir)
    return "\n".join(
        [
            f"pond simulate {q(d + '/xylo_config.npz')} --input {q(d + '/digits_test.npy')} "
            f"--record {q(d + '/record.npz')}",
            f"pond map {q(d + '/network.pond')} --device xylo                  "
            "# Xylo Audio 2: the 8-output violation (exit 1)",
            f"pond map {q(d + '/network.pond')} --device xylo --limits audio3",
            f"pond map {q(d + '/network_spinnaker2.pond')} --device spinnaker2 --neuron-model {S2_DEMO_MODEL}",
            f"pond map {q(d + '/network.pond')} --device siracusa --drop-synapse "
            f"--calibration {q(d + '/digits_test.npy')}",
            f"pond compile {q(d + '/xylo_config.npz')} --numerics xylo -o {q(d + '/xylo_c')} --target cortex-m4 "
            f"--check {q(d + '/digits_test.npy')}",
            "pond explore --memory 128KB",
            "pond devices",
        ]
    )
