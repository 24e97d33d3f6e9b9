"""The ``pond`` command line.

Commands:

* ``pond demo [--out DIR] [--epochs N] [--hidden H] [--seed S] [--fast]``: the whole pipeline on the
  bundled digits (no download): train a float network, check it against Xylo Audio 2 (whose 8-output
  limit it breaks: the violation table is printed), map it to Xylo Audio 3, quantize, configure, run
  the test split through the bit-exact simulator, and report resources, quantization loss, float vs
  chip accuracy and simulator speed; plots go to ``DIR`` (default ``./pond-demo-output``).
* ``pond devices``: every device variant and its limits.

Errors are reported as one line (``error: ...``) with a non-zero exit status, never a traceback.

Example:
    >>> args = build_parser().parse_args(["demo", "--fast", "--out", "plots"])
    >>> args.command, args.fast, args.out, args.epochs
    ('demo', True, 'plots', None)
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from pondlib.errors import ConstraintError, PondError

__all__ = ["main", "build_parser", "demo_network", "DEMO_DEFAULTS"]

#: Settings of ``pond demo`` (full and ``--fast``).
DEMO_DEFAULTS: dict[str, dict[str, Any]] = {
    "full": {"epochs": 60, "hidden": 128, "T": 12},
    "fast": {"epochs": 12, "hidden": 64, "T": 12},
}

# Decay shifts of the demo network. Time constants are chosen so that the float decay per step equals
# the chip's bit-shift decay exactly, exp(-dt / tau) = 1 - 2^-dash, which closes the tau -> dash gap.
_DASH_MEM = 4          # alpha = 15/16 per step
_DASH_SYN = 1          # beta = 1/2 per step
_DT = 1e-3             # s


def _tau_for_dash(dash: int, dt: float = _DT) -> float:
    """The time constant (s) whose float decay exp(-dt/tau) equals the chip's 1 - 2^-dash."""
    return -dt / math.log(1.0 - 2.0 ** -dash)


# -- argument parsing --------------------------------------------------------------------------------
class _UsageError(Exception):
    """A bad command line (raised instead of argparse's exit, so main can print one line)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a positive integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"got {value}, expected a positive integer")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pond``."""
    parser = _Parser(prog="pond", description="pondlib: spiking networks from JAX training to "
                     "bit-exact neuromorphic deployment")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    demo = sub.add_parser("demo", help="train on digits, map to Xylo, simulate, report (about a minute)",
                          description="Train a small spiking network on the bundled digits, map it "
                          "to Xylo Audio 3, quantize, simulate bit-exactly and compare accuracies.")
    demo.add_argument("--out", default="pond-demo-output", metavar="DIR",
                      help="folder for the plots (created; default ./pond-demo-output)")
    demo.add_argument("--epochs", type=_positive_int, default=None, metavar="N",
                      help=f"training epochs (default {DEMO_DEFAULTS['full']['epochs']}, "
                           f"--fast {DEMO_DEFAULTS['fast']['epochs']})")
    demo.add_argument("--hidden", type=_positive_int, default=None, metavar="H",
                      help=f"hidden neurons (default {DEMO_DEFAULTS['full']['hidden']}, "
                           f"--fast {DEMO_DEFAULTS['fast']['hidden']})")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--fast", action="store_true",
                      help="a smaller, shorter run (for tests and a first look; lower accuracy)")
    sub.add_parser("devices", help="list the supported devices and their limits",
                   description="List every device variant and its hardware limits.")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pond`` command line; return the exit status (0 on success).

    Args:
        argv: the arguments without the program name (default ``sys.argv[1:]``).
    """
    from rich.console import Console

    console = Console()
    if not console.is_terminal:           # piped or captured: wide enough for the report tables
        console = Console(width=110)
    err_console = Console(stderr=True, soft_wrap=True)
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except _UsageError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, markup=True)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "devices":
            return _devices(console)
        return _demo(console, args)
    except PondError as exc:
        err_console.print(f"[bold red]error:[/] {_one_line(exc)}", highlight=False)
        return 1
    except KeyboardInterrupt:
        err_console.print("[bold red]interrupted[/]")
        return 130


def _one_line(exc: Exception) -> str:
    text = str(exc)
    return text.replace("\n  - ", "; ").replace("\n", " ")


# -- pond devices ------------------------------------------------------------------------------------
_LIMIT_LABELS: dict[str, tuple[str, str]] = {
    "n_input": ("input channels", ""),
    "max_input_count": ("input events per channel per step", "events (more are clipped)"),
    "n_hidden": ("hidden neurons", ""),
    "n_output": ("output neurons", ""),
    "n_synapses": ("synaptic states per hidden neuron", ""),
    "max_spikes_hidden": ("spikes per hidden neuron per step", "spikes"),
    "max_spikes_output": ("spikes per output neuron per step", "spikes"),
    "max_fanout_rec": ("recurrent fan-out per hidden neuron", "weights"),
    "max_alias_targets": ("alias targets per hidden neuron", ""),
    "weight_bits": ("weight width (signed)", "bits"),
    "state_bits": ("state / threshold / bias width (signed)", "bits"),
    "dash_bits": ("decay shift width", "bits"),
    "weight_shift_bits": ("weight shift width", "bits"),
    "dt_min": ("shortest time step", "s"),
    "dt_max": ("longest time step", "s"),
}


def _devices(console: Any) -> int:
    from rich.table import Table

    from pondlib.devices.xylo.limits import LIMITS

    variants = list(LIMITS.items())
    table = Table(title="Xylo devices and their limits", title_style="bold")
    table.add_column("limit")
    table.add_column("unit", style="dim")
    for short, lim in variants:
        table.add_column(f"{lim.name}\n[dim]({short})[/]", justify="right")
    names = [f.name for f in dataclasses.fields(variants[0][1]) if f.name != "name"]
    for name in names:
        label, unit = _LIMIT_LABELS.get(name, (name, ""))
        table.add_row(label, unit, *[f"{getattr(lim, name):g}" for _, lim in variants])
    table.add_row("weight range", "", *[f"{lim.weight_range[0]}..{lim.weight_range[1]}" for _, lim in variants])
    table.add_row("decay shift range", "", *[f"0..{lim.dash_max}" for _, lim in variants])
    console.print(table)
    console.print("Use a short name in code: [bold]pondlib.devices.xylo.limits.get_limits('audio3')[/]")
    return 0


# -- pond demo ---------------------------------------------------------------------------------------
def demo_network(n_hidden: int, n_out: int = 10, *, key: Any) -> Any:
    """The demo network ``Linear(16, H) -> LIF(H) -> Linear(H, n_out) -> LIF(n_out)``.

    Time constants match the chip's decay shifts exactly (``exp(-dt/tau) = 1 - 2^-dash``: membrane
    dash 4, synapse dash 1, dt = 1 ms) and the spike caps are the chip's (31 hidden, 1 output), so
    the float model trains with them. No weight biases (Xylo has none).
    """
    import jax

    from pondlib import nn

    k1, k2 = jax.random.split(key)
    tau_mem, tau_syn = _tau_for_dash(_DASH_MEM), _tau_for_dash(_DASH_SYN)
    return nn.Sequential(
        nn.Linear(16, n_hidden, key=k1),
        nn.LIF(n_hidden, tau_mem=tau_mem, tau_syn=tau_syn, dt=_DT, max_spikes_per_dt=31),
        nn.Linear(n_hidden, n_out, key=k2),
        nn.LIF(n_out, tau_mem=tau_mem, tau_syn=tau_syn, dt=_DT, max_spikes_per_dt=1),
    )


@contextmanager
def _stage(console: Any, text: str) -> Iterator[dict]:
    """A spinner while a stage runs, then one line with its duration."""
    info: dict = {}
    t0 = time.perf_counter()
    with console.status(f"[bold]{text}...[/]"):
        yield info
    dt = time.perf_counter() - t0
    note = f" — {info['note']}" if info.get("note") else ""
    console.print(f"[green]✓[/] {text} [dim]({dt:.1f} s)[/]{note}")


def _prepare_out(path: str) -> Path:
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise PondError("output folder", value=str(out), limit="a folder (or a path that does not exist)",
                        where="pond demo --out", fix="pass a folder path with --out")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PondError("cannot create the output folder", value=f"{out} ({exc.strerror})",
                        where="pond demo --out", fix="pass a writable folder with --out") from None
    return out


def _demo(console: Any, args: argparse.Namespace) -> int:
    t_start = time.perf_counter()
    mode = "fast" if args.fast else "full"
    cfg = dict(DEMO_DEFAULTS[mode])
    if args.epochs is not None:
        cfg["epochs"] = args.epochs
    if args.hidden is not None:
        cfg["hidden"] = args.hidden
    out_dir = _prepare_out(args.out)

    from rich.panel import Panel
    from rich.table import Table

    console.print(Panel.fit(
        "[bold]pond demo[/]: digits -> float SNN (JAX) -> Xylo mapping -> quantization -> "
        f"bit-exact simulation\nmode {mode}: {cfg['hidden']} hidden neurons, {cfg['epochs']} epochs, "
        f"T = {cfg['T']} steps of {_DT * 1e3:g} ms, seed {args.seed}", border_style="cyan"))

    with _stage(console, "Importing JAX and the pipeline"):
        import jax
        import numpy as np
        import optax

        from pondlib.datasets import load_digits_events
        from pondlib.devices.xylo.config import config_from_specification
        from pondlib.devices.xylo.limits import XYLO_AUDIO2, XYLO_AUDIO3
        from pondlib.devices.xylo.mapper import mapper
        from pondlib.devices.xylo.sim import XyloSim
        from pondlib.training import accuracy, evaluate, fit, predict
        from pondlib.transform import channel_quantize

    # 1. data ---------------------------------------------------------------------------------------
    with _stage(console, "Loading digits as events") as st:
        data = load_digits_events(T=cfg["T"], seed=args.seed)
        st["note"] = f"{len(data.y_train)} train / {len(data.y_test)} test, (T, channels) = " \
                     f"({data.n_steps}, {data.n_channels})"
    console.print(f"  [dim]{data.description}[/]")

    # 2. float training -----------------------------------------------------------------------------
    key = jax.random.PRNGKey(args.seed)
    k_net, k_fit = jax.random.split(key)
    net = demo_network(cfg["hidden"], data.n_classes, key=k_net)
    steps = cfg["epochs"] * (len(data.y_train) // 64)
    optimizer = optax.chain(optax.clip_by_global_norm(1.0),
                            optax.adam(optax.cosine_decay_schedule(3e-3, steps, alpha=0.05)))
    console.print("[bold]Training[/] the float model (cross-entropy on output spike counts; time "
                  "constants, thresholds and biases frozen)")
    t0 = time.perf_counter()
    net, history = fit(net, data, "cross_entropy_sum", optimizer=optimizer, epochs=cfg["epochs"],
                       batch_size=64, key=k_fit, frozen=("tau_mem", "tau_syn", "threshold", "bias"),
                       progress=True, console=console)
    t_train = time.perf_counter() - t0
    with _stage(console, "Evaluating the float model on the test split") as st:
        float_acc = evaluate(net, data.x_test, data.y_test)
        float_pred = predict(net, data.x_test)
        st["note"] = f"float test accuracy {float_acc:.1%}"

    # 3. graph and design rules ---------------------------------------------------------------------
    with _stage(console, "Exporting the graph and checking Xylo Audio 2"):
        graph = net.as_graph()
        audio2_error: ConstraintError | None = None
        try:
            mapper(graph, XYLO_AUDIO2)
        except ConstraintError as exc:
            audio2_error = exc
    if audio2_error is not None:
        vt = Table(title=f"{XYLO_AUDIO2.name}: {len(audio2_error.violations)} design rule violation(s)",
                   title_style="bold red", show_lines=False)
        for col in ("rule", "module", "value", "limit", "remedy"):
            vt.add_column(col, overflow="fold")
        for v in audio2_error.violations:
            vt.add_row(v.rule, v.module, str(v.value), str(v.limit), v.remedy)
        console.print(vt)
    else:
        console.print(f"[yellow]{XYLO_AUDIO2.name} accepted the network[/]")

    with _stage(console, f"Mapping to {XYLO_AUDIO3.name}, quantizing (per channel), configuring") as st:
        spec = mapper(graph, XYLO_AUDIO3)
        qspec = channel_quantize(spec)
        config, ok, message = config_from_specification(qspec)
        if not ok:
            raise PondError("the quantized configuration is invalid", value=message,
                            where="pond demo", fix="report this as a bug")
        st["note"] = "configuration valid"

    # 4. chip simulation ----------------------------------------------------------------------------
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with _stage(console, "Compiling the bit-exact simulator"):
        sim = XyloSim.from_config(config)
        sim.evolve(data.x_test[:2])           # compiles (or loads) the kernels once
        sim.reset_state()
    n_test, T = data.x_test.shape[:2]
    chunk = 150
    outputs, records = [], []
    t_sim = 0.0
    with Progress(TextColumn("[bold]simulating on Xylo[/]"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("samples"), TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("sim", total=n_test)
        for start in range(0, n_test, chunk):
            xb = data.x_test[start:start + chunk]
            sim.reset_state()
            t0 = time.perf_counter()
            out, _, rec = sim.evolve(xb, record=True)
            t_sim += time.perf_counter() - t0
            outputs.append(out)
            records.append(rec)
            bar.update(task, advance=len(xb))
    chip_out = np.concatenate(outputs)
    chip_rec = {k: np.concatenate([r[k] for r in records]) for k in records[0]}
    chip_acc = accuracy(chip_out, data.y_test)
    chip_pred = np.argmax(chip_out.sum(axis=1), axis=-1)
    speed = n_test * T / t_sim

    # 5. report -------------------------------------------------------------------------------------
    lim = XYLO_AUDIO3
    console.print(_resources_table(qspec, lim, chip_rec, Table))
    console.print(_quantization_table(qspec, Table))
    float_out, _, float_rec = net(data.x_test.astype(np.float32), record=True)
    console.print(_gaps_table(spec, qspec, data, chip_rec, float_rec, lim, Table))

    agree = float(np.mean(chip_pred == float_pred))
    res = Table(title="Result (test split)", title_style="bold")
    res.add_column("")
    res.add_column("value", justify="right")
    res.add_row("float model accuracy", f"{float_acc:.1%}")
    res.add_row(f"chip accuracy ({lim.name}, bit-exact simulation)", f"{chip_acc:.1%}")
    res.add_row("chip - float", f"{(chip_acc - float_acc) * 100:+.1f} points")
    res.add_row("same prediction float vs chip", f"{agree:.1%} of samples")
    res.add_row("final training accuracy / loss", f"{history['accuracy'][-1]:.1%} / {history['loss'][-1]:.3f}")
    res.add_row("training time", f"{t_train:.1f} s ({cfg['epochs']} epochs)")
    res.add_row("simulator speed", f"{speed:,.0f} sample-steps/s ({n_test} samples x {T} steps in "
                f"{t_sim:.2f} s, {cfg['hidden']} hidden neurons)")
    console.print(res)
    console.print(f"float test accuracy: {float_acc:.1%}   chip test accuracy: {chip_acc:.1%}",
                  style="bold", highlight=False)

    # 6. plots --------------------------------------------------------------------------------------
    with _stage(console, f"Saving plots to {out_dir}") as st:
        paths = _save_plots(out_dir, data, net, qspec, chip_out, chip_rec, float_out, float_rec,
                            history)
        st["note"] = ", ".join(p.name for p in paths)
    console.print(f"[bold green]done[/] in {time.perf_counter() - t_start:.1f} s; plots in "
                  f"[bold]{out_dir.resolve()}[/]")
    return 0


def _resources_table(qspec: Any, lim: Any, chip_rec: dict, Table: Any) -> Any:
    import numpy as np

    t = Table(title=f"Resources on {lim.name}", title_style="bold")
    for col, just in (("resource", "left"), ("used", "right"), ("limit", "right"), ("use", "right")):
        t.add_column(col, justify=just)

    def row(name: str, used: float, limit: float) -> None:
        frac = used / limit if limit else 0.0
        style = "red" if used > limit else ""
        t.add_row(name, f"{used:,.0f}", f"{limit:,.0f}", f"{frac:.1%}", style=style)

    w_in, w_rec, w_out = (np.asarray(qspec.weights_in), np.asarray(qspec.weights_rec),
                          np.asarray(qspec.weights_out))
    fanout = int((w_rec != 0).reshape(w_rec.shape[0], -1).sum(axis=1).max()) if w_rec.size else 0
    row("input channels", qspec.n_input, lim.n_input)
    row("hidden neurons", qspec.n_hidden, lim.n_hidden)
    row("output neurons", qspec.n_output, lim.n_output)
    row("synaptic states per hidden neuron", qspec.n_synapses, lim.n_synapses)
    row("input synapses (non-zero weights)", int((w_in != 0).sum()), lim.n_input * lim.n_hidden * lim.n_synapses)
    row("recurrent synapses (non-zero weights)", int((w_rec != 0).sum()), lim.n_hidden * lim.max_fanout_rec)
    row("readout synapses (non-zero weights)", int((w_out != 0).sum()), lim.n_hidden * lim.n_output)
    row("largest recurrent fan-out", fanout, lim.max_fanout_rec)
    row("aliases", int((np.asarray(qspec.aliases) >= 0).sum()), lim.n_hidden)
    row("peak hidden spikes per step (test run)", int(chip_rec["Spikes"].max()), lim.max_spikes_hidden)
    return t


def _quantization_table(qspec: Any, Table: Any) -> Any:
    import numpy as np

    rep = qspec.quantization
    t = Table(title=f"Quantization ({rep.method} scaling, int8 weights, int16 thresholds)",
              title_style="bold")
    t.add_column("field")
    t.add_column("relative error", justify="right")
    t.add_column("clipped values", justify="right")
    for name in ("weights_in", "weights_rec", "weights_out", "threshold", "threshold_out", "bias",
                 "bias_out"):
        if name in rep.relative_error or name in rep.clipped:
            err = rep.relative_error.get(name, float("nan"))
            t.add_row(name, f"{err:.2%}", str(rep.clipped.get(name, 0)))
    scales = ", ".join(f"{k} {np.min(v):.0f}..{np.max(v):.0f}" for k, v in rep.scales.items())
    t.caption = f"scales (chip units per float unit): {scales}; {rep.total_clipped} value(s) clipped in all"
    return t


def _gaps_table(spec: Any, qspec: Any, data: Any, chip_rec: dict, float_rec: dict, lim: Any,
                Table: Any) -> Any:
    import numpy as np

    smin, smax = lim.state_range
    sat_v = float(np.mean((chip_rec["Vmem"] <= smin) | (chip_rec["Vmem"] >= smax)))
    sat_i = float(np.mean((chip_rec["Isyn"] <= smin) | (chip_rec["Isyn"] >= smax)))
    alpha_f = float(np.exp(-_DT / _tau_for_dash(_DASH_MEM)))
    dash_mem = np.asarray(qspec.dash_mem)
    alpha_c = 1.0 - 2.0 ** -float(dash_mem[0])
    float_peak = float(np.asarray(float_rec["1_LIF/spikes"]).max())
    chip_rate = float(chip_rec["Spikes"].mean())
    float_rate = float(np.asarray(float_rec["1_LIF/spikes"]).mean())
    t = Table(title="Float model vs chip: known gaps and what they did here", title_style="bold")
    t.add_column("gap")
    t.add_column("float model")
    t.add_column("chip")
    t.add_column("here", overflow="fold")
    silent = data.n_steps - 8
    t.add_row("hidden -> output delay", "0 steps", "1 step",
              f"readout sums output spikes over all {data.n_steps} steps ({silent} silent at the end), "
              "so the late step is still counted")
    t.add_row("spike caps per step", "trained with 31 / 1", f"{lim.max_spikes_hidden} / {lim.max_spikes_output}",
              f"same caps; peak hidden count float {float_peak:.0f}, chip {int(chip_rec['Spikes'].max())}")
    t.add_row("membrane decay per step", f"exp(-dt/tau) = {alpha_f:.4f}",
              f"1 - 2^-{dash_mem[0]:.0f} = {alpha_c:.4f}",
              "time constants chosen to match exactly (bit-shift floor rounding remains)")
    t.add_row("16-bit saturation", "none", f"{smin}..{smax}",
              f"{sat_v:.2%} of hidden Vmem and {sat_i:.2%} of Isyn values at the limits")
    t.add_row("input event clip", "none", f"{lim.max_input_count} per channel per step",
              f"inputs peak at {int(data.x_test.max())}: nothing clipped")
    t.add_row("weight / threshold rounding", "float32", "int8 / int16",
              f"{qspec.quantization.relative_error.get('weights_in', 0):.2%} relative error on input weights")
    t.add_row("hidden activity", f"{float_rate:.3f} spikes/neuron/step", f"{chip_rate:.3f}", "")
    return t


def _save_plots(out_dir: Path, data: Any, net: Any, qspec: Any, chip_out: Any, chip_rec: dict,
                float_out: Any, float_rec: dict, history: dict) -> list[Path]:
    import numpy as np

    from pondlib import plot

    i = 0                                        # the first test sample
    label = int(data.y_test[i])
    paths = []

    def save(fig: Any, name: str) -> None:
        path = out_dir / name
        fig.savefig(path, dpi=110)
        paths.append(path)

    save(plot.raster(data.x_test[i], title=f"input events, test sample 0 (digit {label}): "
                     "ch 0-7 rows, 8-15 columns", dt=_DT, ylabel="input channel", count_label="events per step"),
         "input_raster.png")
    save(plot.compare(np.asarray(float_rec["1_LIF/spikes"][i]), chip_rec["Spikes"][i],
                      title=f"hidden spikes, test sample 0 (digit {label})", dt=_DT,
                      float_unit="spikes per step", device_unit="spikes per step",
                      device_label="Xylo Audio 3 (bit-exact simulation)"),
         "hidden_spikes.png")
    scale = np.asarray(qspec.quantization.scales["hidden"], dtype=float)
    scale = np.broadcast_to(scale, (qspec.n_hidden,))
    fvm = np.asarray(float_rec["1_LIF/vmem"][i]) * scale
    active = np.argsort(-np.asarray(chip_rec["Spikes"][i]).sum(axis=0))[:4]
    save(plot.compare(fvm, chip_rec["Vmem"][i], kind="lines", neurons=sorted(active.tolist()), dt=_DT,
                      title="hidden membrane potentials, test sample 0 (4 most active neurons)",
                      float_label="float model (x quantization scale)",
                      device_label="Xylo Audio 3 (bit-exact simulation)",
                      float_unit="vmem (chip units)", device_unit="Vmem (chip integer)"),
         "membrane_traces.png")
    fo = np.asarray(float_out[i])
    save(plot.compare(fo, chip_out[i], dt=_DT, ylabel="output neuron (class)",
                      title=f"output spikes, test sample 0 (digit {label}); float predicts "
                            f"{int(fo.sum(0).argmax())}, chip predicts {int(chip_out[i].sum(0).argmax())} "
                            "(the chip's hidden -> output hop adds one step of delay)",
                      float_unit="spikes per step", device_unit="spikes per step",
                      device_label="Xylo Audio 3 (bit-exact simulation)"),
         "output_float_vs_chip.png")
    hist = np.stack([history["loss"], history["accuracy"]], axis=1)
    save(plot.traces(hist, title="training (float model)", ylabel="cross-entropy loss / accuracy",
                     labels=["loss", "train accuracy"], x=np.arange(1, len(hist) + 1), xlabel="epoch"),
         "training.png")
    return paths


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
