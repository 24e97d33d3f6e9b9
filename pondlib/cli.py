"""The ``pond`` command line.

Commands:

* ``pond demo [--out DIR] [--epochs N] [--hidden H] [--seed S] [--fast]``: the whole pipeline on the
  bundled digits (no download). It trains a float spiking network in JAX, deploys it to three devices
  and reports, per device, the resources used against the limits, the quantization error, float vs
  device accuracy and the simulator speed:

  - **Xylo**: checks Xylo Audio 2 (whose 8-output limit the 10-class network breaks: the violation
    table is printed), maps to Xylo Audio 3, quantizes per channel and runs the bit-exact simulator;
  - **SpiNNaker2** (float32 LIF on ARM cores, 7-bit synapse words) and **Siracusa** (int8 GEMMs and a
    16-bit integer LIF without synaptic current) emit at most one spike per neuron per step, where the
    float network fires up to 31: the network as trained and a copy fine-tuned for a few epochs with
    that cap are both mapped, configured and simulated, so the report shows the gap and its remedy.

  Plots, the trained networks (``network.pond``, ``network_1spike.pond``), the Xylo configuration
  (``xylo_config.npz``) and test inputs (``digits_test.npy``) go to ``DIR`` (default
  ``./pond-demo-output``); the report ends with commands to try on them.
* ``pond map MODEL --device xylo|spinnaker2|siracusa [--limits NAME] [--dt S] ...``: map a NIR file or
  a network saved with :func:`pondlib.io.save_network`; print the mapping report, or the table of
  violated design rules (exit status 1).
* ``pond simulate CONFIG --input RASTER.npy [--record OUT.npz]``: run a saved Xylo configuration on
  input event counts with the bit-exact simulator; print a summary; write the output, the record and
  the final state.
* ``pond devices``: every device variant and its limits.

Errors are one line (``error: ...``) and a non-zero exit status, never a traceback: 1 when a command
fails (a design rule violation, a missing or bad file), 2 for a bad command line.

Example:
    >>> args = build_parser().parse_args(["demo", "--fast", "--out", "plots"])
    >>> args.command, args.fast, args.out, args.epochs
    ('demo', True, 'plots', None)
    >>> args = build_parser().parse_args(["map", "net.nir", "--device", "xylo", "--dt", "1e-4"])
    >>> args.model, args.device, args.dt, args.limits
    ('net.nir', 'xylo', 0.0001, None)
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import shlex
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from pondlib.errors import ConstraintError, GraphError, PondError

__all__ = ["main", "build_parser", "demo_network", "one_spike_network", "DEMO_DEFAULTS", "DEVICES"]

#: Settings of ``pond demo`` (full and ``--fast``): training epochs, hidden neurons, steps per sample,
#: and epochs of fine-tuning with one spike per neuron per step (for SpiNNaker2 and Siracusa).
DEMO_DEFAULTS: dict[str, dict[str, Any]] = {
    "full": {"epochs": 60, "hidden": 128, "T": 12, "finetune_epochs": 10},
    "fast": {"epochs": 12, "hidden": 64, "T": 12, "finetune_epochs": 4},
}

#: Devices of ``pond map`` / ``pond devices``.
DEVICES = ("xylo", "spinnaker2", "siracusa")

#: SpiNNaker2 neuron models (``pondlib.devices.spinnaker2.NEURON_MODELS``), listed here so that the
#: parser needs no device import.
_S2_MODELS = ("lif", "lif_no_delay", "lif_curr_exp", "lif_curr_exp_no_delay")
#: The SpiNNaker2 model of the demo: no delays are needed, so the word with 7-bit weights.
_S2_DEMO_MODEL = "lif_curr_exp_no_delay"

# Decay shifts of the demo network. Time constants are chosen so that the float decay per step equals
# the chip's bit-shift decay exactly, exp(-dt / tau) = 1 - 2^-dash, which closes the tau -> dash gap.
_DASH_MEM = 4          # alpha = 15/16 per step
_DASH_SYN = 1          # beta = 1/2 per step
_DT = 1e-3             # s
_SIM_CHUNK = 150       # samples per simulator call (one progress-bar step)


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


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a positive number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"got {text}, expected a positive number")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pond``."""
    parser = _Parser(prog="pond", description="pondlib: spiking networks from JAX training to "
                     "bit-exact neuromorphic deployment")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    demo = sub.add_parser("demo", help="train on digits, deploy to Xylo, SpiNNaker2 and Siracusa, report",
                          description="Train a small spiking network on the bundled digits, map it to "
                          "Xylo, SpiNNaker2 and Siracusa, simulate each bit-exactly and compare "
                          "accuracies (under a minute).")
    demo.add_argument("--out", default="pond-demo-output", metavar="DIR",
                      help="folder for plots, saved networks and the Xylo configuration (created; "
                           "default ./pond-demo-output)")
    demo.add_argument("--epochs", type=_positive_int, default=None, metavar="N",
                      help=f"training epochs (default {DEMO_DEFAULTS['full']['epochs']}, "
                           f"--fast {DEMO_DEFAULTS['fast']['epochs']})")
    demo.add_argument("--hidden", type=_positive_int, default=None, metavar="H",
                      help=f"hidden neurons (default {DEMO_DEFAULTS['full']['hidden']}, "
                           f"--fast {DEMO_DEFAULTS['fast']['hidden']})")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--fast", action="store_true",
                      help="a smaller, shorter run (for tests and a first look; lower accuracy)")

    mp = sub.add_parser("map", help="map a NIR file or a saved network to a device; report or list violations",
                        description="Map MODEL onto a device and print the mapping report (resources, "
                        "quantization), or the table of every violated design rule (exit status 1).")
    mp.add_argument("model", metavar="MODEL",
                    help="a NIR file (.nir) or a network saved with pondlib.io.save_network "
                         "(pond demo writes network.pond)")
    mp.add_argument("--device", required=True, choices=DEVICES, help="the target device")
    mp.add_argument("--limits", metavar="NAME", default=None,
                    help="device variant (see 'pond devices'): xylo audio2 (default), audio3, imu; "
                         "spinnaker2 chip (default), chip300, board; siracusa siracusa")
    mp.add_argument("--dt", type=_positive_float, default=None, metavar="SECONDS",
                    help="NIR only: the time step, needed when the file's convention does not store it "
                         "(Norse, Sinabs); default: from the file")
    mp.add_argument("--reset", choices=("v_reset", "subtract", "zero"), default="v_reset",
                    help="NIR only: the reset the network was trained with (files cannot say; "
                         "default v_reset, NIR >= 1.0.6)")
    mp.add_argument("--drop-biases", action="store_true",
                    help="Xylo only: drop weight-layer biases (the chip has none) instead of a violation")
    mp.add_argument("--neuron-model", choices=_S2_MODELS, default="lif_curr_exp",
                    help="SpiNNaker2 only: the neuron model and synapse word (default lif_curr_exp: "
                         "4-bit weights with delays; *_no_delay: 7-bit weights)")
    mp.add_argument("--calibration", metavar="RASTER.npy", default=None,
                    help="Siracusa only: representative input (B, T, N_in) that sets the integer "
                         "scales (default: synthetic binary events, with a note)")
    mp.add_argument("--drop-synapse", action="store_true",
                    help="Siracusa only: feed LIF input straight into the membrane (its integer LIF has "
                         "no synaptic current; this changes the dynamics)")

    sim = sub.add_parser("simulate", help="run a saved Xylo configuration on input events",
                         description="Run a configuration saved with XyloConfig.save on input event "
                         "counts with the bit-exact simulator; print a summary and write the output, "
                         "the record and the final state.")
    sim.add_argument("config", metavar="CONFIG",
                     help="a Xylo configuration (.npz, XyloConfig.save; pond demo writes xylo_config.npz)")
    sim.add_argument("--input", required=True, metavar="RASTER.npy",
                     help="input event counts, (T, N_in) or (B, T, N_in) non-negative integers (.npy)")
    sim.add_argument("--record", metavar="OUT.npz", default=None,
                     help="write the output spikes, the record (Vmem, Isyn, Spikes, ...) and the final "
                          "state here")
    sim.add_argument("--device", choices=("xylo",), default="xylo",
                     help="the device of CONFIG (only Xylo configurations are saved to files so far)")

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
        _print_error(err_console, str(exc))
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    if args.command is None:
        parser.print_help()
        return 2
    commands: dict[str, Callable[[Any, argparse.Namespace], int]] = {
        "demo": _demo, "map": _map, "simulate": _simulate_cmd, "devices": _devices}
    try:
        return commands[args.command](console, args)
    except _UsageError as exc:
        _print_error(err_console, str(exc))
        return 2
    except PondError as exc:
        _print_error(err_console, _one_line(exc))
        return 1
    except OSError as exc:                 # a file that cannot be read or written
        where = f" ({exc.filename})" if exc.filename else ""
        _print_error(err_console, f"{exc.strerror or exc}{where}")
        return 1
    except KeyboardInterrupt:
        err_console.print("[bold red]interrupted[/]")
        return 130


def _print_error(err_console: Any, message: str) -> None:
    """``error: message`` on one line (the message is plain text, never rich markup)."""
    from rich.text import Text

    err_console.print(Text.assemble(("error:", "bold red"), " ", message), highlight=False)


def _one_line(exc: Exception) -> str:
    text = str(exc)
    return text.replace("\n  - ", "; ").replace("\n", " ")


# -- shared report pieces ----------------------------------------------------------------------------
def _table(title: str, columns: Sequence[tuple[str, str]], *, style: str = "bold") -> Any:
    """A rich table with ``(header, justify)`` columns."""
    from rich.table import Table

    t = Table(title=title, title_style=style)
    for header, justify in columns:
        t.add_column(header, justify=justify, overflow="fold")  # type: ignore[arg-type]
    return t


class _Usage:
    """A resources table: ``row(name, used, limit)`` adds used / limit / fraction (red when over)."""

    def __init__(self, title: str) -> None:
        self.table = _table(title, (("resource", "left"), ("used", "right"), ("limit", "right"),
                                    ("use", "right")))

    def row(self, name: str, used: float, limit: float | None, fmt: str = ",.0f") -> None:
        if limit is None:
            self.table.add_row(name, format(used, fmt), "-", "")
            return
        frac = used / limit if limit else 0.0
        self.table.add_row(name, format(used, fmt), format(limit, fmt), f"{frac:.1%}",
                           style="red" if used > limit else "")


def _violations_table(err: ConstraintError, device: str) -> Any:
    t = _table(f"{device}: {len(err.violations)} design rule violation(s)",
               (("rule", "left"), ("module", "left"), ("value", "left"), ("limit", "left"),
                ("remedy", "left")), style="bold red")
    for v in err.violations:
        t.add_row(v.rule, v.module, str(v.value), str(v.limit), v.remedy)
    return t


def _notes(console: Any, notes: Sequence[str], title: str = "notes") -> None:
    from rich.text import Text

    for note in notes:
        console.print(Text.assemble((f"  {title}: ", "yellow"), note))


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

_S2_ROWS: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("chips", "", lambda m: f"{m.n_chips}"),
    ("processing elements (PEs) per chip", "", lambda m: f"{m.pes_per_chip}"),
    ("PEs for applications (whole system)", "", lambda m: f"{m.usable_pes:,}"),
    ("SRAM per PE", "KiB", lambda m: f"{m.sram_bytes // 1024}"),
    ("SNN data memory per PE", "B", lambda m: f"{m.snn_data_bytes:,}"),
    ("neurons per PE", "", lambda m: f"{m.neurons_per_pe}"),
    ("spikes per neuron per tick", "spikes", lambda m: "1"),
    ("synapse word", "bits", lambda m: f"{m.synapse_word_bits}"),
    ("weight range, words with delay", "", lambda m: "{}..{}".format(*m.weight_range(True))),
    ("weight range, words without delay", "", lambda m: "{}..{}".format(*m.weight_range(False))),
    ("synaptic delay", "ticks", lambda m: f"0..{m.max_delay}"),
    ("synapse words per row", "", lambda m: f"{m.max_row_words}"),
    ("default tick", "ms", lambda m: f"{m.tick_s * 1e3:g}"),
    ("PE clock", "MHz", lambda m: f"{m.clock_hz / 1e6:g}"),
    ("cycles per tick", "", lambda m: f"{m.cycles_per_tick:,}"),
    ("DRAM per chip", "GiB", lambda m: f"{m.dram_bytes / 2 ** 30:g}"),
    ("DRAM bandwidth (effective)", "GB/s", lambda m: f"{m.dram_bandwidth / 1e9:g}"),
    ("MLA int8 MACs per PE per cycle", "", lambda m: f"{m.mla_macs_int8}"),
    ("MLA accumulator", "bits", lambda m: f"{m.acc_bits}"),
)

_SIRACUSA_ROWS: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("cluster cores (RV32 XpulpV2)", "", lambda m: f"{m.n_cores}"),
    ("int8 SIMD lanes per instruction", "", lambda m: f"{m.simd_lanes}"),
    ("L1 (cluster TCDM)", "KiB", lambda m: f"{m.l1_bytes // 1024}"),
    ("L1 for one layer's tiles", "B", lambda m: f"{m.l1_tile_budget:,}"),
    ("L2 (on-chip SRAM)", "MiB", lambda m: f"{m.l2_bytes / 2 ** 20:g}"),
    ("L3 (off-chip RAM)", "MiB", lambda m: f"{m.l3_bytes / 2 ** 20:g}"),
    ("NPU weight memory", "MiB", lambda m: f"{m.weight_memory_bytes / 2 ** 20:g}"),
    ("weights (signed)", "bits", lambda m: f"{m.weight_bits}"),
    ("activations (int8 / uint8)", "bits", lambda m: f"{m.act_bits}"),
    ("accumulator (wraps around)", "bits", lambda m: f"{m.acc_bits}"),
    ("bias", "bits", lambda m: f"{m.bias_bits}"),
    ("RequantShift shift", "", lambda m: f"0..{m.shift_max}"),
    ("integer LIF state", "bits", lambda m: f"2..{m.state_bits_max}"),
    ("spikes per neuron per step", "spikes", lambda m: "1"),
    ("GEMM outputs (when >= 16) a multiple of", "", lambda m: f"{m.gemm_chunk_quantum}"),
    ("NPU kernels (kh x kw)", "", lambda m: ", ".join(f"{a}x{b}{' dw' if d else ''}"
                                                      for a, b, d in m.npu_kernels)),
    ("NPU stride", "", lambda m: f"{m.npu_stride}"),
)


def _variant_table(title: str, variants: dict[str, Any], rows: Sequence[tuple[str, str, Callable]]) -> Any:
    t = _table(title, (("limit", "left"), ("unit", "left")))
    t.columns[0].no_wrap = True
    t.columns[0].overflow = "ellipsis"
    t.columns[1].style = "dim"
    for short, lim in variants.items():
        t.add_column(f"{lim.name}\n[dim]({short})[/]", justify="right")
    for label, unit, get in rows:
        t.add_row(label, unit, *[get(lim) for lim in variants.values()])
    return t


def _devices(console: Any, args: argparse.Namespace | None = None) -> int:
    from pondlib.devices.siracusa.limits import LIMITS as SIRACUSA_LIMITS
    from pondlib.devices.spinnaker2.limits import LIMITS as S2_LIMITS
    from pondlib.devices.xylo.limits import LIMITS as XYLO_LIMITS

    first = next(iter(XYLO_LIMITS.values()))
    names = [f.name for f in dataclasses.fields(first) if f.name != "name"]
    xrows: list[tuple[str, str, Callable]] = []
    for name in names:
        label, unit = _LIMIT_LABELS.get(name, (name, ""))
        xrows.append((label, unit, lambda m, n=name: f"{getattr(m, n):g}"))
    xrows += [("weight range", "", lambda m: "{}..{}".format(*m.weight_range)),
              ("decay shift range", "", lambda m: f"0..{m.dash_max}")]
    console.print(_variant_table("Xylo (SynSense): one core, integer LIF, bit-shift decays",
                                 XYLO_LIMITS, xrows))
    console.print(_variant_table("SpiNNaker2: ARM Cortex-M4F PEs (SNN: float32 LIF, 16-bit synapse words)",
                                 S2_LIMITS, _S2_ROWS))
    console.print(_variant_table("Siracusa (PULP cluster + N-EUREKA NPU): int8 layers with RequantShift",
                                 SIRACUSA_LIMITS, _SIRACUSA_ROWS))
    console.print("Pick a variant by its short name: [bold]pond map MODEL --device spinnaker2 --limits board[/], "
                  "or in code [bold]pondlib.devices.xylo.limits.get_limits('audio3')[/]", highlight=False)
    return 0


# -- pond demo ---------------------------------------------------------------------------------------
def demo_network(n_hidden: int, n_out: int = 10, *, key: Any) -> Any:
    """The demo network ``Linear(16, H) -> LIF(H) -> Linear(H, n_out) -> LIF(n_out)``.

    Time constants match Xylo's decay shifts exactly (``exp(-dt/tau) = 1 - 2^-dash``: membrane
    dash 4, synapse dash 1, dt = 1 ms) and the spike caps are Xylo's (31 hidden, 1 output), so
    the float model trains with them. No weight biases (Xylo has none).

    Example:
        >>> import jax
        >>> net = demo_network(8, key=jax.random.PRNGKey(0))
        >>> net.size_in, net.size_out, net.layers[1].max_spikes_per_dt
        (16, 10, 31.0)
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


def one_spike_network(net: Any) -> Any:
    """A copy of a ``Sequential`` network whose LIF layers emit at most one spike per step.

    SpiNNaker2 and Siracusa neurons spike at most once per step; every other parameter is kept, so
    the copy starts from the trained weights (fine-tune it with :func:`pondlib.training.fit`).

    Example:
        >>> import jax
        >>> net = one_spike_network(demo_network(8, key=jax.random.PRNGKey(0)))
        >>> [getattr(m, "max_spikes_per_dt", None) for m in net.layers]
        [None, 1.0, None, 1.0]
    """
    import numpy as np

    from pondlib import nn

    layers = []
    for m in net.layers:
        if isinstance(m, nn.LIF):
            if m.n_synapses != 1 or m.w_rec is not None:
                raise GraphError("one_spike_network layer", value=m.n_synapses, limit="one synapse, no w_rec",
                                 where="one_spike_network", fix="pass a feed-forward Linear/LIF network")
            m = nn.LIF(m.n_neurons, tau_mem=m.tau_mem, tau_syn=np.asarray(m.tau_syn)[:, 0],
                       threshold=m.threshold, bias=m.bias, dt=m.dt, max_spikes_per_dt=1,
                       surrogate=m.surrogate)
        layers.append(m)
    return nn.Sequential(*layers)


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


def _run_sim(console: Any, label: str, run: Callable[[Any], tuple[Any, dict]], x: Any
             ) -> tuple[Any, dict, float]:
    """Run ``run(chunk) -> (output, record)`` over ``x`` in chunks with a progress bar.

    Returns the concatenated output and record and the seconds spent inside ``run``.
    """
    import numpy as np
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    outputs, records, t_sim = [], [], 0.0
    with Progress(TextColumn(f"[bold]{label}[/]"), BarColumn(), MofNCompleteColumn(), TextColumn("samples"),
                  TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("sim", total=len(x))
        for start in range(0, len(x), _SIM_CHUNK):
            xb = x[start:start + _SIM_CHUNK]
            t0 = time.perf_counter()
            out, rec = run(xb)
            t_sim += time.perf_counter() - t0
            outputs.append(np.asarray(out))
            records.append(rec)
            bar.update(task, advance=len(xb))
    rec_all = {k: np.concatenate([r[k] for r in records]) for k in records[0]} if records[0] else {}
    return np.concatenate(outputs), rec_all, t_sim


@dataclasses.dataclass
class _Deployment:
    """One device's result in the demo (accuracies in 0..1)."""

    device: str
    network: str                    # which float network was deployed
    float_acc: float                # that float network
    device_acc: float
    agree: float                    # same prediction as that float network
    speed: float                    # simulated sample-steps per second
    dynamics_acc: float | None = None   # a float model of the device's own dynamics, when there is one
    as_trained_acc: float | None = None  # the device running the network as trained (before fine-tuning)
    output: Any = None              # device output spikes (B, T, N_out)


def _result_table(title: str, rows: Sequence[tuple[str, str]], justify: str = "right") -> Any:
    t = _table(title, (("", "left"), ("value", justify)))
    for k, v in rows:
        t.add_row(k, v)
    return t


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

    console.print(Panel.fit(
        "[bold]pond demo[/]: digits -> float SNN (JAX) -> Xylo, SpiNNaker2, Siracusa: mapping, "
        "quantization, bit-exact simulation\n"
        f"mode {mode}: {cfg['hidden']} hidden neurons, {cfg['epochs']} epochs (+ {cfg['finetune_epochs']} "
        f"fine-tuning), T = {cfg['T']} steps of {_DT * 1e3:g} ms, seed {args.seed}", border_style="cyan"))

    with _stage(console, "Importing the pipeline"):
        import jax
        import numpy as np
        import optax

        from pondlib.datasets import load_digits_events
        from pondlib.training import evaluate, fit, predict

    # 1. data ---------------------------------------------------------------------------------------
    with _stage(console, "Loading digits as events") as st:
        data = load_digits_events(T=cfg["T"], seed=args.seed)
        st["note"] = f"{len(data.y_train)} train / {len(data.y_test)} test, (T, channels) = " \
                     f"({data.n_steps}, {data.n_channels})"
    console.print(f"  [dim]{data.description}[/]")

    # 2. float training -----------------------------------------------------------------------------
    key = jax.random.PRNGKey(args.seed)
    k_net, k_fit, k_tune = jax.random.split(key, 3)
    net = demo_network(cfg["hidden"], data.n_classes, key=k_net)
    frozen = ("tau_mem", "tau_syn", "threshold", "bias")

    def optimizer(lr: float, epochs: int) -> Any:
        steps = max(1, epochs * (len(data.y_train) // 64))
        return optax.chain(optax.clip_by_global_norm(1.0),
                           optax.adam(optax.cosine_decay_schedule(lr, steps, alpha=0.05)))

    console.print("[bold]Training[/] the float model (cross-entropy on output spike counts; time "
                  "constants, thresholds and biases frozen; Xylo's spike caps: 31 hidden, 1 output)")
    t0 = time.perf_counter()
    net, history = fit(net, data, "cross_entropy_sum", optimizer=optimizer(3e-3, cfg["epochs"]),
                       epochs=cfg["epochs"], batch_size=64, key=k_fit, frozen=frozen, progress=True,
                       console=console)
    t_train = time.perf_counter() - t0
    with _stage(console, "Evaluating the float model on the test split") as st:
        float_acc = evaluate(net, data.x_test, data.y_test)
        float_pred = predict(net, data.x_test)
        float_out, _, float_rec = net(data.x_test.astype(np.float32), record=True)
        st["note"] = f"float test accuracy {float_acc:.1%}"

    # 3. Xylo ---------------------------------------------------------------------------------------
    xylo, xylo_art = _demo_xylo(console, net, data, float_acc, float_pred, float_rec, history, t_train, cfg)

    # 4. one spike per step: fine-tuning for SpiNNaker2 and Siracusa ---------------------------------
    console.rule("[bold]One spike per neuron per step (SpiNNaker2, Siracusa)[/]")
    console.print(f"[bold]Fine-tuning[/] a copy with at most one spike per neuron per step "
                  f"({cfg['finetune_epochs']} epochs from the trained weights, learning rate 1e-3)")
    net1 = one_spike_network(net)
    with _stage(console, "Evaluating the float model with one spike per step, before fine-tuning") as st:
        capped_acc = evaluate(net1, data.x_test, data.y_test)
        st["note"] = f"{capped_acc:.1%} (as trained with 31: {float_acc:.1%})"
    net1, _ = fit(net1, data, "cross_entropy_sum", optimizer=optimizer(1e-3, cfg["finetune_epochs"]),
                  epochs=cfg["finetune_epochs"], batch_size=64, key=k_tune, frozen=frozen, progress=True,
                  console=console)
    with _stage(console, "Evaluating the fine-tuned float model") as st:
        tuned_acc = evaluate(net1, data.x_test, data.y_test)
        tuned_pred = predict(net1, data.x_test)
        tuned_out, _, tuned_rec = net1(data.x_test.astype(np.float32), record=True)
        st["note"] = f"float test accuracy {tuned_acc:.1%} with one spike per step"
    floats = {"as trained": (net, float_acc, float_pred, float_rec),
              "fine-tuned": (net1, tuned_acc, tuned_pred, tuned_rec)}

    # 5. SpiNNaker2 and Siracusa --------------------------------------------------------------------
    s2 = _demo_spinnaker2(console, floats, data)
    sira = _demo_siracusa(console, floats, data)

    # 6. summary ------------------------------------------------------------------------------------
    console.rule("[bold]Summary[/]")
    deployments = [xylo, s2, sira]
    t = _table("Float vs device accuracy (test split, 450 samples)" if len(data.y_test) == 450 else
               "Float vs device accuracy (test split)",
               (("device", "left"), ("network deployed", "left"), ("float", "right"),
                ("float, device dynamics", "right"), ("device", "right"), ("device - float", "right"),
                ("same prediction", "right"), ("simulator (sample-steps/s)", "right")))
    for d in deployments:
        t.add_row(d.device, d.network, f"{d.float_acc:.1%}",
                  "-" if d.dynamics_acc is None else f"{d.dynamics_acc:.1%}", f"{d.device_acc:.1%}",
                  f"{(d.device_acc - d.float_acc) * 100:+.1f} points", f"{d.agree:.1%}",
                  f"{d.speed:,.0f}")
    t.caption = ("float, device dynamics: the float network run with the device's neuron model "
                 "(Siracusa: no synaptic current); the rest of each gap is quantization")
    console.print(t)
    for d in deployments:
        before = "" if d.as_trained_acc is None else \
            f" (network as trained: device {d.as_trained_acc:.1%})"
        console.print(f"accuracy on {d.device}: float {d.float_acc:.1%}, device {d.device_acc:.1%}{before}",
                      style="bold", highlight=False)

    # 7. files and plots ----------------------------------------------------------------------------
    from pondlib.io import save_network

    with _stage(console, f"Saving the networks, the Xylo configuration and test inputs to {out_dir}") as st:
        files = [save_network(net, out_dir / "network.pond"), save_network(net1, out_dir / "network_1spike.pond"),
                 xylo_art["config"].save(out_dir / "xylo_config.npz")]
        np.save(out_dir / "digits_test.npy", data.x_test[:20])
        np.save(out_dir / "digits_test_labels.npy", data.y_test[:20])
        st["note"] = ", ".join(Path(f).name for f in files) + ", digits_test.npy (20 samples), " \
            "digits_test_labels.npy"
    with _stage(console, f"Saving plots to {out_dir}") as st:
        paths = _save_plots(out_dir, data, xylo_art, float_out, float_rec, tuned_out, history, deployments)
        st["note"] = ", ".join(p.name for p in paths)

    q = shlex.quote
    d = str(out_dir)
    console.print(Panel(
        "\n".join([
            f"pond simulate {q(d + '/xylo_config.npz')} --input {q(d + '/digits_test.npy')} "
            f"--record {q(d + '/record.npz')}",
            f"pond map {q(d + '/network.pond')} --device xylo                  "
            "# Xylo Audio 2: the 8-output violation (exit 1)",
            f"pond map {q(d + '/network.pond')} --device xylo --limits audio3",
            f"pond map {q(d + '/network_1spike.pond')} --device spinnaker2 --neuron-model {_S2_DEMO_MODEL}",
            f"pond map {q(d + '/network_1spike.pond')} --device siracusa --drop-synapse "
            f"--calibration {q(d + '/digits_test.npy')}",
            "pond devices"]),
        title="try next", title_align="left", border_style="cyan"), highlight=False)
    console.print(f"[bold green]done[/] in {time.perf_counter() - t_start:.1f} s; plots and files in "
                  f"[bold]{out_dir.resolve()}[/]")
    return 0


# -- the demo on Xylo --------------------------------------------------------------------------------
def _demo_xylo(console: Any, net: Any, data: Any, float_acc: float, float_pred: Any, float_rec: dict,
               history: dict, t_train: float, cfg: dict) -> tuple[_Deployment, dict]:
    import numpy as np

    from pondlib.devices.xylo.config import config_from_specification
    from pondlib.devices.xylo.limits import XYLO_AUDIO2, XYLO_AUDIO3
    from pondlib.devices.xylo.mapper import mapper
    from pondlib.devices.xylo.sim import XyloSim
    from pondlib.training import accuracy
    from pondlib.transform import channel_quantize

    console.rule("[bold]Xylo[/]")
    with _stage(console, "Exporting the graph and checking Xylo Audio 2"):
        graph = net.as_graph()
        audio2_error: ConstraintError | None = None
        try:
            mapper(graph, XYLO_AUDIO2)
        except ConstraintError as exc:
            audio2_error = exc
    if audio2_error is not None:
        console.print(_violations_table(audio2_error, XYLO_AUDIO2.name))
    else:
        console.print(f"[yellow]{XYLO_AUDIO2.name} accepted the network[/]")

    lim = XYLO_AUDIO3
    with _stage(console, f"Mapping to {lim.name}, quantizing (per channel), configuring") as st:
        spec = mapper(graph, lim)
        qspec = channel_quantize(spec)
        config, ok, message = config_from_specification(qspec)
        if not ok:
            raise PondError("the quantized configuration is invalid", value=message,
                            where="pond demo", fix="report this as a bug")
        st["note"] = "configuration valid"

    with _stage(console, "Compiling the bit-exact simulator"):
        sim = XyloSim.from_config(config)
        sim.evolve(data.x_test[:2])           # compiles (or loads) the kernels once
        sim.reset_state()

    def run(xb: Any) -> tuple[Any, dict]:
        sim.reset_state()
        out, _, rec = sim.evolve(xb, record=True)
        return out, rec

    chip_out, chip_rec, t_sim = _run_sim(console, f"simulating on {lim.name}", run, data.x_test)
    n_test, T = data.x_test.shape[:2]
    chip_acc = accuracy(chip_out, data.y_test)
    chip_pred = np.argmax(chip_out.sum(axis=1), axis=-1)
    speed = n_test * T / t_sim
    agree = float(np.mean(chip_pred == float_pred))

    console.print(_xylo_resources_table(qspec, lim, chip_rec))
    console.print(_quantization_table(qspec))
    console.print(_xylo_gaps_table(qspec, data, chip_rec, float_rec, lim))
    console.print(_result_table(f"Result on {lim.name} (test split)", [
        ("float model accuracy", f"{float_acc:.1%}"),
        (f"device accuracy ({lim.name}, bit-exact simulation)", f"{chip_acc:.1%}"),
        ("device - float", f"{(chip_acc - float_acc) * 100:+.1f} points"),
        ("same prediction float vs device", f"{agree:.1%} of samples"),
        ("final training accuracy / loss", f"{history['accuracy'][-1]:.1%} / {history['loss'][-1]:.3f}"),
        ("training time", f"{t_train:.1f} s ({cfg['epochs']} epochs)"),
        ("simulator speed", f"{speed:,.0f} sample-steps/s ({n_test} samples x {T} steps in {t_sim:.2f} s, "
                            f"{cfg['hidden']} hidden neurons)")]))
    dep = _Deployment(lim.name, "as trained", float_acc, chip_acc, agree, speed, output=chip_out)
    return dep, {"config": config, "qspec": qspec, "chip_out": chip_out, "chip_rec": chip_rec,
                 "name": lim.name}


def _xylo_resources_table(qspec: Any, lim: Any, chip_rec: dict | None = None) -> Any:
    import numpy as np

    u = _Usage(f"Resources on {lim.name}")
    w_in, w_rec, w_out = (np.asarray(qspec.weights_in), np.asarray(qspec.weights_rec),
                          np.asarray(qspec.weights_out))
    fanout = int((w_rec != 0).reshape(w_rec.shape[0], -1).sum(axis=1).max()) if w_rec.size else 0
    u.row("input channels", qspec.n_input, lim.n_input)
    u.row("hidden neurons", qspec.n_hidden, lim.n_hidden)
    u.row("output neurons", qspec.n_output, lim.n_output)
    u.row("synaptic states per hidden neuron", qspec.n_synapses, lim.n_synapses)
    u.row("input synapses (non-zero weights)", int((w_in != 0).sum()), lim.n_input * lim.n_hidden * lim.n_synapses)
    u.row("recurrent synapses (non-zero weights)", int((w_rec != 0).sum()), lim.n_hidden * lim.max_fanout_rec)
    u.row("readout synapses (non-zero weights)", int((w_out != 0).sum()), lim.n_hidden * lim.n_output)
    u.row("largest recurrent fan-out", fanout, lim.max_fanout_rec)
    u.row("aliases", int((np.asarray(qspec.aliases) >= 0).sum()), lim.n_hidden)
    if chip_rec is not None:
        u.row("peak hidden spikes per step (test run)", int(chip_rec["Spikes"].max()), lim.max_spikes_hidden)
    return u.table


def _quantization_table(qspec: Any) -> Any:
    import numpy as np

    rep = qspec.quantization
    t = _table(f"Quantization ({rep.method} scaling, int8 weights, int16 thresholds)",
               (("field", "left"), ("relative error", "right"), ("clipped values", "right")))
    for name in ("weights_in", "weights_rec", "weights_out", "threshold", "threshold_out", "bias",
                 "bias_out"):
        if name in rep.relative_error or name in rep.clipped:
            err = rep.relative_error.get(name, float("nan"))
            t.add_row(name, f"{err:.2%}", str(rep.clipped.get(name, 0)))
    scales = ", ".join(f"{k} {np.min(v):.0f}..{np.max(v):.0f}" for k, v in rep.scales.items())
    t.caption = f"scales (chip units per float unit): {scales}; {rep.total_clipped} value(s) clipped in all"
    return t


def _xylo_gaps_table(qspec: Any, data: Any, chip_rec: dict, float_rec: dict, lim: Any) -> Any:
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
    t = _table("Float model vs Xylo: known gaps and what they did here",
               (("gap", "left"), ("float model", "left"), ("device", "left"), ("here", "left")))
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
              f"inputs peak at {int(data.x_test.max())}: "
              + ("nothing clipped" if data.x_test.max() <= lim.max_input_count else "larger counts clipped"))
    t.add_row("weight / threshold rounding", "float32", "int8 / int16",
              f"{qspec.quantization.relative_error.get('weights_in', 0):.2%} relative error on input weights")
    t.add_row("hidden activity", f"{float_rate:.3f} spikes/neuron/step", f"{chip_rate:.3f}", "")
    return t


# -- the demo on SpiNNaker2 --------------------------------------------------------------------------
def _s2_map(net_or_graph: Any, lim: Any, neuron_model: str) -> tuple[Any, list[str]]:
    """Map to SpiNNaker2; deadline warnings are returned as text (for the report), not raised."""
    from pondlib.devices.spinnaker2 import DeadlineWarning, mapper

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DeadlineWarning)
        spec = mapper(net_or_graph, lim, neuron_model=neuron_model)
    return spec, [str(w.message) for w in caught if issubclass(w.category, DeadlineWarning)]


def _s2_config(spec: Any, where: str) -> Any:
    from pondlib.devices.spinnaker2 import config_from_specification

    config, ok, message = config_from_specification(spec)
    if not ok:
        raise PondError("the SpiNNaker2 configuration is invalid", value=message, where=where,
                        fix="report this as a bug")
    return config


def _s2_resources_table(spec: Any, lim: Any, peak_spikes: int | None = None) -> Any:
    import numpy as np

    u = _Usage(f"Resources on the {lim.name} ({spec.neuron_model})")
    wmax = lim.weight_range(with_delays=spec.neuron_model in ("lif", "lif_curr_exp"))[1]
    rows = max((int(np.count_nonzero(p.weights[:, s.start:s.stop], axis=1).max(initial=0))
                for p in spec.projections for s in spec.slices if s.population == p.post), default=0)
    u.row("PEs used (input sources included)", spec.report.pes_used, lim.usable_pes)
    u.row("neurons on the fullest PE", max((s.stop - s.start for s in spec.slices), default=0),
          lim.neurons_per_pe)
    u.row("data memory of the fullest PE (B)", max((sum(m.values()) for m in spec.memory.values()), default=0),
          lim.snn_data_bytes)
    u.row("synapse words (16 bit, all PEs)", sum(int(np.count_nonzero(p.weights)) for p in spec.projections),
          None)
    u.row("longest synapse row (words)", rows, lim.max_row_words)
    largest = max((int(np.abs(p.weights).max(initial=0)) for p in spec.projections), default=0)
    u.row("largest weight magnitude (scaled to the word)", largest, wmax)
    u.row("cycles per tick, busiest PE (0.1 spikes/neuron/tick)",
          max(spec.report.cycles_per_tick.values(), default=0), lim.cycles_per_tick)
    if peak_spikes is not None:
        u.row("peak spikes per neuron per tick (test run)", peak_spikes, 1)
    return u.table


def _s2_quantization_table(spec: Any, other: Any = None) -> Any:
    t = _table(f"Quantization ({spec.neuron_model}: weights scaled per target population, rounded to the "
               "synapse word)", (("projection", "left"), ("target", "left"), ("scale", "right"),
                                 ("relative error", "right"), ("largest error (float units)", "right"),
                                 ("weights rounded to 0", "right")))
    rep = spec.report
    for p in spec.projections:
        t.add_row(p.name, p.post, f"{rep.scales[p.post]:.1f}", f"{rep.quantization_error[p.name]:.2%}",
                  f"{rep.max_abs_error[p.name]:.4f}", str(rep.zeroed[p.name]))
    if other is not None:
        errs = ", ".join(f"{k} {v:.2%}" for k, v in other.report.quantization_error.items())
        t.caption = f"with {other.neuron_model} (4-bit weights, delays 0..7): {errs}"
    return t


def _demo_spinnaker2(console: Any, floats: dict, data: Any) -> _Deployment:
    import numpy as np

    from pondlib.devices.spinnaker2 import SPINNAKER2_CHIP, SpiNNaker2Sim
    from pondlib.training import accuracy

    lim = SPINNAKER2_CHIP
    console.rule(f"[bold]{lim.name}[/]")
    with _stage(console, f"Mapping both networks to the {lim.name} (SNN path, {_S2_DEMO_MODEL}), "
                         "configuring") as st:
        specs, configs, notes = {}, {}, []
        for label, (net, *_rest) in floats.items():
            specs[label], late = _s2_map(net, lim, _S2_DEMO_MODEL)
            configs[label] = _s2_config(specs[label], "pond demo (SpiNNaker2)")
            notes += late
        spec4, _ = _s2_map(floats["fine-tuned"][0], lim, "lif_curr_exp")
        spec = specs["fine-tuned"]
        st["note"] = f"{spec.report.pes_used} PEs, configurations valid"
    outs, recs, t_sim = {}, {}, 0.0
    for label, config in configs.items():
        sim = SpiNNaker2Sim.from_config(config)

        def run(xb: Any, sim: Any = sim, record: bool = label == "fine-tuned") -> tuple[Any, dict]:
            sim.reset_state()
            out, _, rec = sim.evolve(xb, record=record)
            return out, {k: v for k, v in rec.items() if k.endswith((".spikes", ".v"))}

        outs[label], recs[label], seconds = _run_sim(console, f"simulating on SpiNNaker2 ({label})", run,
                                                     data.x_test)
        if label == "fine-tuned":
            t_sim = seconds
    n_test, T = data.x_test.shape[:2]
    acc = {k: accuracy(v, data.y_test) for k, v in outs.items()}
    net1, tuned_acc, tuned_pred, tuned_rec = floats["fine-tuned"]
    _, trained_acc, _, trained_rec = floats["as trained"]
    rec = recs["fine-tuned"]
    hidden = spec.populations[0].name
    pred = np.argmax(outs["fine-tuned"].sum(axis=1), axis=-1)
    agree = float(np.mean(pred == tuned_pred))
    speed = n_test * T / t_sim

    console.print(_s2_resources_table(spec, lim, int(rec[f"{hidden}.spikes"].max())))
    console.print(_s2_quantization_table(spec, spec4))
    _notes(console, list(spec.report.notes) + notes, "mapper note")
    beta = float(spec.populations[0].exc_decay[0])
    t = _table(f"Float model vs {lim.name}: known gaps and what they did here",
               (("gap", "left"), ("float model", "left"), ("device", "left"), ("here", "left")))
    t.add_row("spikes per neuron per step", "31 hidden (as trained); 1 (fine-tuned)", "1",
              f"as trained, hidden neurons fire up to {float(np.asarray(trained_rec['1_LIF/spikes']).max()):.0f} "
              f"per step: device {acc['as trained']:.1%} vs float {trained_acc:.1%}; fine-tuned with one "
              f"spike per step: device {acc['fine-tuned']:.1%} vs float {tuned_acc:.1%}")
    t.add_row("delay per hop", "0 steps", "1 tick per hop (2 from input to output)",
              f"readout sums output spikes over all {T} steps ({T - 8} silent at the end)")
    t.add_row("synaptic input", "I = beta (I + x)", "I = beta I + x",
              f"the mapper folds beta = {beta:g} into the weights (exact for a common beta)")
    t.add_row("weights", "float32", "sign + 7-bit magnitude per word",
              f"{spec.report.quantization_error[spec.projections[0].name]:.2%} relative error on input weights")
    t.add_row("neuron arithmetic", "float32 (XLA)", "float32 per operation (Cortex-M4F)",
              "rounded after every multiply and add (no fused multiply-add), simulated bit-precisely")
    t.add_row("hidden activity", f"{float(np.asarray(tuned_rec['1_LIF/spikes']).mean()):.3f} spikes/neuron/step",
              f"{float(rec[f'{hidden}.spikes'].mean()):.3f}", "fine-tuned network")
    console.print(t)
    console.print(_result_table(f"Result on the {lim.name} (test split)", [
        ("float model accuracy (as trained, 31 spikes per step)", f"{trained_acc:.1%}"),
        ("device accuracy, network as trained", f"{acc['as trained']:.1%}"),
        ("float model accuracy (fine-tuned, 1 spike per step)", f"{tuned_acc:.1%}"),
        ("device accuracy, fine-tuned network", f"{acc['fine-tuned']:.1%}"),
        ("device - float (fine-tuned)", f"{(acc['fine-tuned'] - tuned_acc) * 100:+.1f} points"),
        ("same prediction float vs device (fine-tuned)", f"{agree:.1%} of samples"),
        ("simulator speed", f"{speed:,.0f} sample-steps/s ({n_test} samples x {T} steps in {t_sim:.2f} s)")]))
    return _Deployment(lim.name, "1 spike/step", tuned_acc, acc["fine-tuned"], agree, speed,
                       as_trained_acc=acc["as trained"], output=outs["fine-tuned"])


# -- the demo on Siracusa ----------------------------------------------------------------------------
def _siracusa_resources_table(spec: Any, lim: Any) -> Any:
    import numpy as np

    from pondlib.devices.siracusa import QLIF, cycle_table

    cfg = spec.config
    u = _Usage(f"Resources on {lim.name} (per step of one sample)")
    u.row("L2 used (constants + peak activations and LIF states, B)", spec.placement.l2_used, lim.l2_bytes)
    u.row("constants: int8 weights, int32 biases, LIF parameters (B)",
          sum(spec.placement.weight_bytes.values()), None)
    u.row("largest L1 tile footprint (B)", max((p.footprint for p in spec.plans if p is not None), default=0),
          cfg.l1_budget or lim.l1_tile_budget)
    u.row("L1 tiles per step", sum(p.n_tiles for p in spec.plans if p is not None), None)
    lifs = [q for q in cfg.layers if isinstance(q, QLIF)]
    if lifs:
        u.row("integer LIF state width (bits)", max(q.state_bits for q in lifs), lim.state_bits_max)
    rows = cycle_table(cfg, cores=lim.n_cores, simd=True, tiled=True)
    u.row("MACs per step", sum(r.macs for r in rows), None)
    u.row(f"cycles per step (model; {lim.n_cores} cores, SIMD, tiled)", float(np.sum([r.total for r in rows])),
          None)
    return u.table


def _siracusa_quantization_table(spec: Any) -> Any:
    t = _table("Quantization (int8 weights per output channel, RequantShift / integer LIF multipliers)",
               (("layer", "left"), ("kind", "left"), ("shift", "right"), ("multiplier error", "right"),
                ("weight error", "right"), ("constants in", "left"), ("NPU", "left")))
    for r in spec.reports:
        t.add_row(r.name, r.kind, str(r.shift), f"{r.mul_rel_error:.2e}",
                  f"{r.weight_error:.2%}" if r.kind in ("QGemm", "QConv2d") else "-", r.placement,
                  "yes" if r.npu_eligible else f"no: {r.npu_reason}")
    cfg = spec.config
    lo, hi = cfg.input_range
    t.caption = (f"input: {'int' if cfg.input_signed else 'uint'}{cfg.input_bits} {lo}..{hi}, one step = "
                 f"{cfg.input_scale:.4g} float units; weight error = max |W - W_q s| / max |W|; "
                 "multiplier error = relative error of mul / 2^shift")
    return t


def _siracusa_map(net: Any, lim: Any, calibration: Any, drop_synapse: bool) -> Any:
    from pondlib.devices.siracusa import layers_from_graph, mapper

    layers = layers_from_graph(net, drop_synapse=drop_synapse)
    return layers, mapper(layers, lim, calibration=calibration)


def _demo_siracusa(console: Any, floats: dict, data: Any) -> _Deployment:
    import numpy as np

    from pondlib.devices.siracusa import SIRACUSA, SiracusaSim, config_from_specification, float_forward
    from pondlib.devices.siracusa import quantize_input
    from pondlib.training import accuracy

    lim = SIRACUSA
    console.rule(f"[bold]{lim.name}[/]")
    calib = data.x_train.astype(np.float64)
    with _stage(console, f"Mapping both networks to {lim.name} (int8 GEMM + 16-bit integer LIF without "
                         "synaptic current), calibrating on the training split") as st:
        specs, dyn_acc, dyn_out = {}, {}, {}
        for label, (net, *_rest) in floats.items():
            layers, specs[label] = _siracusa_map(net, lim, calib, drop_synapse=True)
            _, ok, message = config_from_specification(specs[label])
            if not ok:
                raise PondError("the Siracusa configuration is invalid", value=message,
                                where="pond demo (Siracusa)", fix="report this as a bug")
            dyn_out[label] = float_forward(layers, data.x_test)[0][-1]
            dyn_acc[label] = accuracy(dyn_out[label], data.y_test)
        st["note"] = "configurations valid; float model without synaptic current: " + \
            ", ".join(f"{k} {v:.1%}" for k, v in dyn_acc.items())
    outs, rec_tuned, t_sim = {}, {}, 0.0
    for label, spec in specs.items():
        sim = SiracusaSim(spec.config)
        x_int = quantize_input(data.x_test, spec.config)

        def run(xb: Any, sim: Any = sim, record: bool = label == "fine-tuned") -> tuple[Any, dict]:
            sim.reset_state()
            out, _, rec = sim.evolve(xb, record=record)
            return out, {k: v for k, v in rec.items() if k.endswith(("/spikes", "/v"))}

        outs[label], rec, seconds = _run_sim(console, f"simulating on Siracusa ({label})", run, x_int)
        if label == "fine-tuned":
            t_sim, rec_tuned = seconds, rec
    n_test, T = data.x_test.shape[:2]
    acc = {k: accuracy(v, data.y_test) for k, v in outs.items()}
    _, trained_acc, _, trained_rec = floats["as trained"]
    _, tuned_acc, tuned_pred, tuned_rec = floats["fine-tuned"]
    spec = specs["fine-tuned"]
    pred = np.argmax(outs["fine-tuned"].sum(axis=1), axis=-1)
    agree = float(np.mean(pred == tuned_pred))
    speed = n_test * T / t_sim

    console.print(_siracusa_resources_table(spec, lim))
    console.print(_siracusa_quantization_table(spec))
    hidden = spec.config.layers[1]
    net1 = floats["fine-tuned"][0]
    alpha_f = float(np.exp(-net1.layers[1].dt / np.asarray(net1.layers[1].tau_mem)[0]))
    tau_syn = float(np.asarray(net1.layers[1].tau_syn).ravel()[0])
    t = _table(f"Float model vs {lim.name}: known gaps and what they did here",
               (("gap", "left"), ("float model", "left"), ("device", "left"), ("here", "left")))
    t.add_row("synaptic current", f"I = beta (I + x), tau_syn = {tau_syn * 1e3:.2f} ms",
              "none: v = alpha v + I (membrane only)",
              f"dropped (drop_synapse=True): the float model without it scores {dyn_acc['fine-tuned']:.1%} "
              f"(fine-tuned; {dyn_acc['as trained']:.1%} as trained) against {tuned_acc:.1%} with it")
    t.add_row("spikes per neuron per step", "31 hidden (as trained); 1 (fine-tuned)", "1",
              f"as trained: device {acc['as trained']:.1%} vs float {trained_acc:.1%}; fine-tuned: device "
              f"{acc['fine-tuned']:.1%} vs float {tuned_acc:.1%}")
    t.add_row("membrane decay per step", f"exp(-dt/tau) = {alpha_f:.4f}",
              f"{int(np.asarray(hidden.beta_mul).ravel()[0])} / 2^{hidden.shift} = "
              f"{float(np.asarray(hidden.beta_mul).ravel()[0]) / 2 ** hidden.shift:.4f}", "rounded multiplier")
    t.add_row("state", "float32", f"int{hidden.state_bits}, saturating; round half up",
              "state scale from the largest membrane value on the training split")
    t.add_row("weights", "float32", "int8 per output channel, int32 accumulator",
              f"{spec.reports[0].weight_error:.2%} largest relative error on input weights")
    t.add_row("delay per layer", "0 steps", "0 steps (layers run in order within a step)", "")
    t.add_row("hidden activity", f"{float(np.asarray(tuned_rec['1_LIF/spikes']).mean()):.3f} spikes/neuron/step",
              f"{float(rec_tuned[f'{hidden.name}/spikes'].mean()):.3f}", "fine-tuned network")
    console.print(t)
    console.print(_result_table(f"Result on {lim.name} (test split)", [
        ("float model accuracy (as trained, 31 spikes per step)", f"{trained_acc:.1%}"),
        ("device accuracy, network as trained", f"{acc['as trained']:.1%}"),
        ("float model accuracy (fine-tuned, 1 spike per step)", f"{tuned_acc:.1%}"),
        ("float model without synaptic current (the device's dynamics)", f"{dyn_acc['fine-tuned']:.1%}"),
        ("device accuracy, fine-tuned network", f"{acc['fine-tuned']:.1%}"),
        ("device - float (fine-tuned)", f"{(acc['fine-tuned'] - tuned_acc) * 100:+.1f} points"),
        ("same prediction float vs device (fine-tuned)", f"{agree:.1%} of samples"),
        ("simulator speed", f"{speed:,.0f} sample-steps/s ({n_test} samples x {T} steps in {t_sim:.2f} s)")]))
    return _Deployment(lim.name, "1 spike/step", tuned_acc, acc["fine-tuned"], agree, speed,
                       dynamics_acc=dyn_acc["fine-tuned"], as_trained_acc=acc["as trained"],
                       output=outs["fine-tuned"])


# -- pond map ----------------------------------------------------------------------------------------
def _load_model(console: Any, args: argparse.Namespace) -> Any:
    """The pondlib module in ``args.model`` (a NIR file or a saved network), with a line about it."""
    path = Path(args.model)
    if not path.is_file():
        raise PondError("model file not found", where=str(path),
                        fix="MODEL is a .nir file or a network saved with pondlib.io.save_network")
    if path.suffix.lower() == ".nir":
        from pondlib.graph.nir import load_nir

        imp = load_nir(path, dt=args.dt, reset=args.reset)
        console.print(f"[bold]model[/]: {path} (NIR, convention {imp.convention}, dt {imp.dt:g} s, "
                      f"reset {imp.reset}) -> {type(imp.module).__name__}", highlight=False)
        _notes(console, imp.notes, "NIR import")
        return imp.module
    if args.dt is not None or args.reset != "v_reset":
        raise _UsageError("pond map: --dt and --reset apply to NIR files only (a saved pondlib network "
                          "stores its dt and reset)")
    from pondlib.io import describe, load_network

    head = describe(path)
    net = load_network(path)
    console.print(f"[bold]model[/]: {path} (pondlib network, saved by pondlib {head.get('pondlib_version')}): "
                  f"{head.get('summary')}", highlight=False)
    return net


def _check_device_options(args: argparse.Namespace) -> None:
    only = {"--drop-biases": ("xylo", args.drop_biases),
            "--neuron-model": ("spinnaker2", args.neuron_model != "lif_curr_exp"),
            "--calibration": ("siracusa", args.calibration is not None),
            "--drop-synapse": ("siracusa", args.drop_synapse)}
    for flag, (device, used) in only.items():
        if used and args.device != device:
            raise _UsageError(f"pond map: {flag} applies to --device {device} only")


def _load_array(path: str, what: str, flag: str) -> Any:
    import numpy as np

    p = Path(path)
    if not p.is_file():
        raise PondError(f"{what} file not found", where=str(p), fix=f"pass an existing .npy file with {flag}")
    try:
        arr = np.load(p, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise PondError(f"{what} is not a .npy array ({type(exc).__name__})", where=str(p),
                        fix=f"save it with numpy.save(path, array) and pass it with {flag}") from None
    if not isinstance(arr, np.ndarray):
        arr.close()
        raise PondError(f"{what} is an .npz archive, not one array", where=str(p),
                        fix=f"save one array with numpy.save(path, array) and pass it with {flag}")
    return arr


def _map(console: Any, args: argparse.Namespace) -> int:
    _check_device_options(args)
    with _stage(console, "Importing the pipeline"):
        import numpy as np  # noqa: F401  (heavy imports under the spinner)

        import pondlib.nn  # noqa: F401
    net = _load_model(console, args)
    try:
        if args.device == "xylo":
            _map_xylo(console, net, args)
        elif args.device == "spinnaker2":
            _map_spinnaker2(console, net, args)
        else:
            _map_siracusa(console, net, args)
    except ConstraintError as err:
        console.print(_violations_table(err, err.device))
        console.print(f"[bold red]{Path(args.model).name} does not fit {err.device}[/]: "
                      f"{len(err.violations)} violation(s); each row says how to fix it", highlight=False)
        return 1
    return 0


def _map_xylo(console: Any, net: Any, args: argparse.Namespace) -> None:
    from pondlib.devices.xylo.config import config_from_specification
    from pondlib.devices.xylo.limits import get_limits
    from pondlib.devices.xylo.mapper import mapper
    from pondlib.transform import channel_quantize

    lim = get_limits(args.limits)
    with _stage(console, f"Mapping to {lim.name}, quantizing (per channel), configuring") as st:
        spec = mapper(net, lim, drop_biases=args.drop_biases)
        qspec = channel_quantize(spec)
        _, ok, message = config_from_specification(qspec)
        st["note"] = "configuration valid" if ok else f"configuration invalid: {message}"
    console.print(_xylo_resources_table(qspec, lim))
    console.print(_quantization_table(qspec))
    _notes(console, spec.report.notes, "mapper note")
    console.print(f"[bold green]{Path(args.model).name} fits {lim.name}[/] ({qspec.n_hidden} hidden, "
                  f"{qspec.n_output} output neurons)", highlight=False)


def _map_spinnaker2(console: Any, net: Any, args: argparse.Namespace) -> None:
    from pondlib.devices.spinnaker2.limits import get_limits

    lim = get_limits(args.limits)
    with _stage(console, f"Mapping to the {lim.name} ({args.neuron_model}), configuring") as st:
        spec, late = _s2_map(net, lim, args.neuron_model)
        _s2_config(spec, "pond map")
        st["note"] = f"{spec.report.pes_used} PEs, configuration valid"
    console.print(_s2_resources_table(spec, lim))
    console.print(_s2_quantization_table(spec))
    _notes(console, spec.report.notes, "mapper note")
    _notes(console, late, "warning")
    console.print(f"[bold green]{Path(args.model).name} fits the {lim.name}[/] ({spec.report.pes_used} PEs)",
                  highlight=False)


def _map_siracusa(console: Any, net: Any, args: argparse.Namespace) -> None:
    import numpy as np

    from pondlib.devices.siracusa.config import config_from_specification
    from pondlib.devices.siracusa.limits import get_limits

    lim = get_limits(args.limits)
    if args.calibration is not None:
        calib = _load_array(args.calibration, "calibration", "--calibration").astype(np.float64)
        source = f"{args.calibration} {tuple(calib.shape)}"
    else:
        calib = (np.random.default_rng(0).random((32, 50, net.size_in)) < 0.2).astype(np.float64)
        source = "synthetic binary events (32 samples x 50 steps, rate 0.2)"
    with _stage(console, f"Mapping to {lim.name}, calibrating on {source}") as st:
        try:
            _, spec = _siracusa_map(net, lim, calib, args.drop_synapse)
        except GraphError as err:
            if err.what != "LIF synaptic current":
                raise
            raise GraphError(err.what, value=err.value, limit=err.limit, where=err.where,
                             fix="pass --drop-synapse to feed the input straight into the membrane (this "
                                 "changes the dynamics: pond demo shows the accuracy it costs)") from None
        _, ok, message = config_from_specification(spec)
        st["note"] = "configuration valid" if ok else f"configuration invalid: {message}"
    console.print(_siracusa_resources_table(spec, lim))
    console.print(_siracusa_quantization_table(spec))
    if args.calibration is None:
        _notes(console, ["the integer scales come from synthetic input: pass --calibration RASTER.npy with "
                         "representative input for a deployment"], "note")
    console.print(f"[bold green]{Path(args.model).name} fits {lim.name}[/]", highlight=False)


# -- pond simulate -----------------------------------------------------------------------------------
def _simulate_cmd(console: Any, args: argparse.Namespace) -> int:
    import numpy as np

    from pondlib.devices.xylo.config import XyloConfig
    from pondlib.devices.xylo.limits import get_limits
    from pondlib.devices.xylo.sim import XyloSim

    config = XyloConfig.load(args.config)
    x = _load_array(args.input, "input", "--input")
    if args.record is not None and not Path(args.record).parent.is_dir():
        raise PondError("the folder of the record file does not exist", where=args.record,
                        fix="create the folder or pass another --record path")
    sim = XyloSim.from_config(config)
    with _stage(console, f"Simulating {config.limits_name} (bit-exact) on {tuple(x.shape)} input") as st:
        if x.ndim in (2, 3):               # compile (or load) the kernels first; bad shapes fail below
            sim.evolve(x[:1] if x.ndim == 3 else x[None, :1], record=True)
            sim.reset_state()
        t0 = time.perf_counter()
        out, state, rec = sim.evolve(x, record=True)
        seconds = time.perf_counter() - t0
        st["note"] = f"{seconds:.3f} s after compiling"
    batched = out.ndim == 3
    xs = np.asarray(x)
    B = xs.shape[0] if batched else 1
    T = xs.shape[-2]
    counts = out.sum(axis=-2).reshape(B, -1)
    max_count = get_limits(config.limits_name).max_input_count
    clip = int(np.sum(xs > max_count))
    t = _result_table(f"Simulation on {config.limits_name}", [
        ("configuration", f"{args.config}: {sim.n_input} inputs -> {sim.n_hidden} hidden "
                          f"({sim.k} synapse(s) each) -> {sim.n_output} outputs, dt {sim.dt * 1e3:g} ms"),
        ("input", f"{args.input}: {'B, T, N' if batched else 'T, N'} = {tuple(xs.shape)}, "
                  f"{int(xs.sum()):,} events, at most {int(xs.max(initial=0))} per channel per step"
                  + (f" ({clip} count(s) above {max_count} clipped by the chip)" if clip else "")),
        ("hidden spikes", f"{int(rec['Spikes'].sum()):,} in all, at most {int(rec['Spikes'].max(initial=0))} "
                          "per neuron per step"),
        ("output spikes", f"{int(out.sum()):,} in all"),
        ("simulator speed", f"{B * T / max(seconds, 1e-9):,.0f} sample-steps/s ({B} x {T} steps in "
                            f"{seconds:.3f} s)")], justify="left")
    console.print(t)
    pt = _table("Output spike counts per output neuron (the most active one is the prediction)",
                (("sample", "right"), ("prediction", "right"), ("counts", "left")))
    for b in range(min(B, 20)):
        pt.add_row(str(b), str(int(np.argmax(counts[b]))) if counts[b].any() else "- (silent)",
                   " ".join(str(int(c)) for c in counts[b]))
    if B > 20:
        pt.caption = f"first 20 of {B} samples"
    console.print(pt)
    if args.record is not None:
        payload = {"output": out, **{f"record_{k}": v for k, v in rec.items()},
                   **{f"state_{k}": v for k, v in state.items()}}
        with open(args.record, "wb") as fh:
            np.savez_compressed(fh, **payload)
        console.print(f"[green]✓[/] wrote {args.record}: {', '.join(payload)} "
                      f"[dim](time first: output {tuple(out.shape)})[/]", highlight=False)
    return 0


def _save_plots(out_dir: Path, data: Any, xylo: dict, float_out: Any, float_rec: dict, tuned_out: Any,
                history: dict, deployments: Sequence[_Deployment]) -> list[Path]:
    import numpy as np

    from pondlib import plot

    i = 0                                        # the first test sample
    label = int(data.y_test[i])
    qspec, chip_out, chip_rec, name = xylo["qspec"], xylo["chip_out"], xylo["chip_rec"], xylo["name"]
    device_label = f"{name} (bit-exact simulation)"
    paths = []

    def save(fig: Any, file: str) -> None:
        path = out_dir / file
        fig.savefig(path, dpi=110)
        paths.append(path)

    save(plot.raster(data.x_test[i], title=f"input events, test sample 0 (digit {label}): "
                     "ch 0-7 rows, 8-15 columns", dt=_DT, ylabel="input channel", count_label="events per step"),
         "input_raster.png")
    save(plot.compare(np.asarray(float_rec["1_LIF/spikes"][i]), chip_rec["Spikes"][i],
                      title=f"hidden spikes, test sample 0 (digit {label})", dt=_DT,
                      float_unit="spikes per step", device_unit="spikes per step", device_label=device_label),
         "hidden_spikes.png")
    scale = np.asarray(qspec.quantization.scales["hidden"], dtype=float)
    scale = np.broadcast_to(scale, (qspec.n_hidden,))
    fvm = np.asarray(float_rec["1_LIF/vmem"][i]) * scale
    active = np.argsort(-np.asarray(chip_rec["Spikes"][i]).sum(axis=0))[:4]
    save(plot.compare(fvm, chip_rec["Vmem"][i], kind="lines", neurons=sorted(active.tolist()), dt=_DT,
                      title=f"hidden membrane potentials, test sample 0 (4 most active neurons on {name})",
                      float_label="float model (x quantization scale)", device_label=device_label,
                      float_unit="vmem (chip units)", device_unit="Vmem (chip integer)"),
         "membrane_traces.png")
    fo = np.asarray(float_out[i])
    fig = plot.compare(fo, chip_out[i], dt=_DT, ylabel="output neuron (class)",
                       title=f"output spikes, test sample 0 (digit {label}): float predicts "
                             f"{int(fo.sum(0).argmax())}, {name} predicts {int(chip_out[i].sum(0).argmax())}\n"
                             "(the chip's hidden -> output hop adds one step of delay)",
                       float_unit="spikes per step", device_unit="spikes per step", device_label=device_label)
    for ax in fig.axes[:2]:
        ax.set_yticks(range(fo.shape[1]))
    save(fig, "output_float_vs_chip.png")
    hist = np.stack([history["loss"], history["accuracy"]], axis=1)
    save(plot.traces(hist, title="training (float model)", ylabel="cross-entropy loss / accuracy",
                     labels=["loss", "train accuracy (fraction)"], x=np.arange(1, len(hist) + 1), xlabel="epoch"),
         "training.png")
    def pred(out: Any) -> str:
        counts = np.asarray(out).sum(axis=0)
        return f"predicts {int(counts.argmax())}" if counts.any() else "silent"

    to = np.asarray(tuned_out[i])
    panels = {f"float, as trained: {pred(fo)}": fo,
              f"{deployments[0].device}: {pred(deployments[0].output[i])}": deployments[0].output[i],
              f"float, 1 spike/step: {pred(to)}": to}
    for d in deployments[1:]:
        panels[f"{d.device}: {pred(d.output[i])}"] = d.output[i]
    save(plot.rasters(panels, dt=_DT, ylabel="output neuron (class)",
                      title=f"output spikes of test sample 0 (digit {label}): float models and devices "
                            "(Xylo: +1 step hidden -> output; SpiNNaker2: +1 tick per hop)"),
         "output_by_device.png")
    results = {}
    for d in deployments:
        bars = {"float model (deployed)": d.float_acc}
        if d.dynamics_acc is not None:
            bars["float, device dynamics"] = d.dynamics_acc
        if d.as_trained_acc is not None:
            bars["device, network as trained"] = d.as_trained_acc
        bars["device (deployed)"] = d.device_acc
        results[f"{d.device}\n({d.network})"] = bars
    save(plot.accuracy_bars(results, chance=1.0 / data.n_classes,
                            order=["float model (deployed)", "float, device dynamics", "device (deployed)",
                                   "device, network as trained"],
                            title=f"digits test accuracy, float vs device ({len(data.y_test)} samples)"),
         "accuracy_by_device.png")
    return paths


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
