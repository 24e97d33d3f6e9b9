"""``pond demo [--out DIR] [--epochs N] [--hidden H] [--seed S] [--fast]``: the whole pipeline on the
bundled digits (no download).

It trains a float spiking network in JAX, then deploys it to every registered device with
:func:`pondlib.deploy` and renders what that returns, per device: the variants checked first (Xylo Audio
2, whose 8-output limit the 10-class network breaks: its violation table), the resources used against
the limits, the quantization error, the known float-vs-device gaps row by row, float vs device accuracy
and the simulator speed. Each device's ``deploy_settings`` choose its variant and options (Xylo Audio 3;
SpiNNaker2's 7-bit synapse words; Siracusa without the synaptic current its integer LIF lacks).

On every device the network as trained is deployed first, then its device-aware twin (the device's
arithmetic in the forward pass, straight-through gradients) is fine-tuned with the same ``fit`` and
deployed; the summary compares that deployment with the float network as trained and says whether any
device loses accuracy.

Plots, the trained network (``network.pond``; ``network_<device>.pond`` where a device exports its
device-aware network in float units), the deployed configurations a device can save
(``<device>_config.npz``) and test inputs (``digits_test.npy``) go to ``DIR`` (default
``./pond-demo-output``); the report ends with commands to try on them.

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
from pondlib.cli.builds import start_builds
from pondlib.cli.demo_network import DEMO_DEFAULTS, DT, demo_network
from pondlib.cli.demo_plots import save_plots
from pondlib.cli.render import RichObserver, render_deployment, result_table, stage, table
from pondlib.devices import registry
from pondlib.errors import PondError
from pondlib.pipeline import NO_LOSS_POINTS

__all__ = ["add_parser", "run"]

#: Parameters the float training leaves as the network was built (they match the chips' decays).
_FROZEN = ("tau_mem", "tau_syn", "threshold", "bias")


def add_parser(subparsers: Any) -> None:
    """Register ``demo`` on ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    demo = subparsers.add_parser(
        "demo",
        help="train on digits, deploy to every device (" + ", ".join(registry.names()) + "), report",
        description="Train a small spiking network on the bundled digits, deploy it to every registered "
        "device, simulate each bit-exactly and compare accuracies (under a minute).",
    )
    full, fast = DEMO_DEFAULTS["full"], DEMO_DEFAULTS["fast"]
    demo.add_argument(
        "--out",
        default="pond-demo-output",
        metavar="DIR",
        help="folder for plots, saved networks and deployed configurations (created; default ./pond-demo-output)",
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
    start_builds(registry.devices(), networks=True)  # compilation beside the imports, data and tracing

    from rich.panel import Panel

    names = [d.display_name for d in registry.devices()]
    console.print(
        Panel.fit(
            f"[bold]pond demo[/]: digits -> float SNN (JAX) -> {', '.join(names)}: mapping, "
            "quantization, bit-exact simulation\n"
            f"mode {mode}: {cfg['hidden']} hidden neurons, {cfg['epochs']} epochs (+ {cfg['aware_epochs']} "
            f"device-aware per device), T = {cfg['T']} steps of {DT * 1e3:g} ms, seed {args.seed}",
            border_style="cyan",
        )
    )

    with stage(console, "Importing the pipeline"):
        import jax
        import numpy as np

        from pondlib.datasets import load_digits_events
        from pondlib.pipeline import deploy
        from pondlib.training import evaluate

    # 1. data -------------------------------------------------------------------------------------------
    with stage(console, "Loading digits as events") as st:
        data = load_digits_events(T=cfg["T"], seed=args.seed)
        st["note"] = (
            f"{len(data.y_train)} train / {len(data.y_test)} test, (T, channels) = ({data.n_steps}, {data.n_channels})"
        )
    console.print(f"  [dim]{data.description}[/]")

    # 2. float training ---------------------------------------------------------------------------------
    k_net, k_fit, k_tune = jax.random.split(jax.random.PRNGKey(args.seed), 3)
    net, history = _train_float(console, data, cfg, k_net, k_fit)
    with stage(console, "Evaluating the float model on the test split") as st:
        float_acc = evaluate(net, data.x_test, data.y_test)
        float_out, _, float_rec = net(data.x_test.astype(np.float32), record=True)
        st["note"] = f"float test accuracy {float_acc:.1%}"
    console.print(
        result_table(
            "Training (float model)",
            [
                ("final training accuracy / loss", f"{history['accuracy'][-1]:.1%} / {history['loss'][-1]:.3f}"),
                ("test accuracy", f"{float_acc:.1%}"),
                ("training time", f"{history['seconds']:.1f} s ({cfg['epochs']} epochs)"),
            ],
        )
    )

    # 3. devices: the network as trained, then its device-aware twin ------------------------------------
    deployments = []
    for device in registry.devices():
        console.rule(f"[bold]{device.display_name}[/]")
        dep = deploy(
            net,
            device=device,
            data=data,
            aware=device.has_twin,
            epochs=cfg["aware_epochs"],
            key=k_tune,
            observer=RichObserver(console),
            fit_options={"progress": True, "console": console},
        )
        render_deployment(console, dep)
        deployments.append(dep)

    # 4. summary ----------------------------------------------------------------------------------------
    console.rule("[bold]Summary[/]")
    _print_summary(console, deployments, len(data.y_test))

    # 5. files and plots --------------------------------------------------------------------------------
    configs = _save_files(console, out_dir, net, data, deployments)
    with stage(console, f"Saving plots to {out_dir}") as st:
        paths = save_plots(out_dir, data, float_out, float_rec, history, deployments)
        st["note"] = ", ".join(p.name for p in paths)
    console.print(
        Panel(_try_next(out_dir, deployments, configs), title="try next", title_align="left", border_style="cyan"),
        highlight=False,
    )
    console.print(
        f"[bold green]done[/] in {time.perf_counter() - t_start:.1f} s; plots and files in [bold]{out_dir.resolve()}[/]"
    )
    return 0


def _train_float(console: Any, data: Any, cfg: dict, k_net: Any, k_fit: Any) -> tuple[Any, dict]:
    """The demo network trained on ``data`` (time constants, thresholds and biases frozen); the history
    also holds the training time (``seconds``)."""
    from pondlib.pipeline import fine_tune_optimizer
    from pondlib.training import fit

    net = demo_network(cfg["hidden"], data.n_classes, key=k_net)
    console.print(
        "[bold]Training[/] the float model (cross-entropy on output spike counts; time "
        "constants, thresholds and biases frozen; spike caps: 31 hidden, 1 output)"
    )
    t0 = time.perf_counter()
    net, history = fit(
        net,
        data,
        "cross_entropy_sum",
        optimizer=fine_tune_optimizer(3e-3, cfg["epochs"], len(data.y_train) // 64),
        epochs=cfg["epochs"],
        batch_size=64,
        key=k_fit,
        frozen=_FROZEN,
        progress=True,
        console=console,
    )
    return net, {**history, "seconds": time.perf_counter() - t0}


def _save_files(console: Any, out_dir: Path, net: Any, data: Any, deployments: list) -> dict[str, Path]:
    """The networks, the deployed configurations and 20 test inputs, saved; returns the configurations'
    paths by device."""
    import numpy as np

    from pondlib.io import save_network

    with stage(console, f"Saving the networks, the deployed configurations and test inputs to {out_dir}") as st:
        files = [save_network(net, out_dir / "network.pond")]
        for dep in deployments:
            exported = dep.deployed.extra.get("network")
            if exported is not None:
                files.append(save_network(exported, out_dir / f"network_{dep.device}.pond"))
        configs = _save_configs(out_dir, deployments)
        np.save(out_dir / "digits_test.npy", data.x_test[:20])
        np.save(out_dir / "digits_test_labels.npy", data.y_test[:20])
        names = [Path(f).name for f in files] + [p.name for p in configs.values()]
        st["note"] = ", ".join(names) + ", digits_test.npy (20 samples), digits_test_labels.npy"
    return configs


def _save_configs(out_dir: Path, deployments: list) -> dict[str, Path]:
    """``<device>_config.npz``: the deployed configuration of every device that can save one."""
    out = {}
    for dep in deployments:
        path = out_dir / f"{dep.device}_config.npz"
        try:
            registry.get(dep.device).save(dep.deployed, path)
        except PondError:  # a device without a saved form of this configuration
            continue
        out[dep.device] = path
    return out


def _print_summary(console: Any, deployments: list, n_test: int) -> None:
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

    def pct(v: Any) -> str:
        return "-" if v is None else f"{v:.1%}"

    for d in deployments:
        t.add_row(
            d.name,
            f"{d.float_acc:.1%}",
            f"{d.as_trained_acc:.1%}",
            pct(d.aware_float_acc),
            pct(d.final_acc),
            f"{(d.final_acc - d.float_acc) * 100:+.1f} pt",
            pct(d.agree),
            pct(min(d.spikes_equal.values())) if d.spikes_equal else "-",
        )
    t.caption = (
        "float: the float network as trained; aware: its device-aware twin (pondlib.deploy, aware=True); "
        "device - float: the device-aware network on the device against the float network; same prediction "
        "and spikes equal (worst layer): device-aware float model vs device"
    )
    console.print(t)
    for d in deployments:
        console.print(
            f"accuracy on {d.name}: float {d.float_acc:.1%}, device {d.final_acc:.1%} "
            f"(network as trained: device {d.as_trained_acc:.1%})",
            style="bold",
            highlight=False,
        )
    lost = [d for d in deployments if d.lost]
    if lost:
        names = ", ".join(f"{d.name} ({(d.final_acc - d.float_acc) * 100:+.1f} points)" for d in lost)
        console.print(f"[bold yellow]accuracy lost on the device:[/] {names}", highlight=False)
    else:
        console.print(
            f"[bold green]no accuracy lost on any device[/]: each device-aware deployment is within "
            f"{NO_LOSS_POINTS} points of the float model as trained (or above it)",
            highlight=False,
        )


def _try_next(out_dir: Path, deployments: list, configs: dict[str, Path]) -> str:
    """The commands to try on the demo's files, one per line, made from what each device did."""
    q, d = shlex.quote, str(out_dir)
    test = q(d + "/digits_test.npy")
    lines = []
    for i, dep in enumerate(deployments):
        device = registry.get(dep.device)
        if dep.device in configs:
            flag = " --quantize" if device.quantizes_saved_input else ""
            rec = f" --record {q(d + '/record.npz')}" if i == 0 else ""
            lines.append(f"pond simulate {q(str(configs[dep.device]))} --input {test}{flag}{rec}")
    for dep in deployments:
        device = registry.get(dep.device)
        for check in dep.checks:
            if check.error is not None:
                rule = check.error.violations[0].rule
                lines.append(
                    f"pond map {q(d + '/network.pond')} --device {dep.device}      # {check.variant}: the {rule} "
                    "violation (exit 1)"
                )
        short = next((s for s, lim in device.variants.items() if lim.name == dep.name), None)
        limits = f" --limits {short}" if short and short != device.default_variant else ""
        exported = "network_" + dep.device if dep.deployed.extra.get("network") is not None else "network"
        flags = []
        for o in device.options:
            value = device.deploy_settings.options.get(o.name, o.value_default)
            if o.switch and value:
                flags.append(o.flag)
            elif not o.switch and value != o.value_default:
                flags.append(f"{o.flag} {value}")
        if device.needs_calibration:
            flags.append(f"--calibration {test}")
        lines.append(f"pond map {q(f'{d}/{exported}.pond')} --device {dep.device}{limits} {' '.join(flags)}".rstrip())
    for dep in deployments:
        if dep.device in configs and registry.get(dep.device).has_c:
            lines.append(
                f"pond compile {q(str(configs[dep.device]))} --numerics {dep.device} -o {q(f'{d}/{dep.device}_c')} "
                f"--target cortex-m4 --check {test}"
            )
    lines += ["pond explore --memory 128KB", "pond devices"]
    return "\n".join(lines)
