"""Training-step throughput: pondlib against Rockpool and Spyx on the same workload, in one process.

Workload (identical for every framework): Linear(64 -> 256) -> LIF(256, tau_mem 20 ms, tau_syn 10 ms,
dt 1 ms) -> Linear(256 -> 10) -> LIF(10), no biases on the linear layers, Bernoulli input spikes
(rate 5 % per step), batch 32, 200 time steps; loss = softmax cross-entropy of the output spike counts
summed over time; one step = forward + gradient + optax Adam (lr 1e-3) update, jitted as one function.
Every framework trains its neurons' own parameters the way it is normally used:

- pondlib: ``nn.Sequential`` of ``nn.Linear`` / ``nn.LIF`` (per-neuron tau_mem, tau_syn, threshold,
  bias and the weights are trainable), ``jax.value_and_grad`` over the module pytree.
- Rockpool: ``Sequential(LinearJax, LIFJax, LinearJax, LIFJax)`` (per-neuron tau_mem, tau_syn,
  threshold, bias), ``jax.value_and_grad`` over ``net.parameters()`` with ``reset_state`` /
  ``set_attributes``, as in Rockpool's Jax training tutorials.
- Spyx (1.x, flax.nnx): ``spyx.nn.Sequential(nnx.Linear, spyx.nn.CuBaLIF, nnx.Linear,
  spyx.nn.CuBaLIF)`` run with ``spyx.nn.run`` (per-neuron synaptic and membrane decays trainable, set
  to the same exp(-dt/tau)); the functional ``nnx.split`` / ``nnx.merge`` form inside ``jax.jit``.

Rockpool and Spyx are optional (not pondlib dependencies); a framework that is not importable is
reported as "not installed". Timing: after compilation, the frameworks are timed in interleaved rounds
(so that background load affects all of them alike); the reported figure is the median step time over
all timed steps, as steps per second.

Usage::

    python benchmarks/train_step.py [--rounds 5] [--steps 10] [--only pondlib,spyx] [--busy] [--json PATH]
                                    [--host-devices 2]

``--host-devices N`` gives the process N JAX CPU devices; the ``pondlib-split`` row then trains the
plain network data-parallel over all of them (``make_train_step`` with the mesh), the other rows run on
one device as usual.

Results of issue 33 (B = 32 and B = 128, pondlib against Spyx): ``benchmarks/results/train_step_b32.json``,
``train_step_b128.json`` (and ``.txt``, the printed tables); the Xylo-aware row against its plain network:
``train_step_xylo_aware.json`` (the aware network now trains as one integer chain kernel,
:mod:`pondlib.nn.integer_chain`; ``train_step_xylo_aware_chain.txt``: three runs before and after that change,
processes alternating).

``--busy`` repeats the timing with one spinning process (a ``multiprocessing`` busy loop on the other
core, started and stopped by the script; ``Busy`` of ``benchmarks/inference.py``) and reports each
framework's slowdown (busy median / quiet median). The ``pondlib-xylo-aware`` row (Xylo's size: 16 -> 256 ->
8, the chip's inputs and outputs) reports its cost relative to the plain step of the same network
(``pondlib-xylo-size``) as ``vs_plain_pondlib`` (step time ratio).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

BATCH, STEPS_T, N_IN, N_HID, N_OUT = 32, 200, 64, 256, 10
TAU_MEM, TAU_SYN, DT = 20e-3, 10e-3, 1e-3
INPUT_RATE, LR = 0.05, 1e-3
RESULTS = Path(__file__).resolve().parent / "results" / "train_step.json"


def make_data(batch: int = BATCH, steps: int = STEPS_T, seed: int = 0):
    """Bernoulli input spikes (B, T, N_in) as float32 and integer labels (B,)."""
    kx, ky = jax.random.split(jax.random.PRNGKey(seed))
    x = jax.random.bernoulli(kx, INPUT_RATE, (batch, steps, N_IN)).astype(jnp.float32)
    y = jax.random.randint(ky, (batch,), 0, N_OUT)
    return x, y


def _xent(counts, y):
    return optax.softmax_cross_entropy_with_integer_labels(counts, y).mean()


# -- one builder per framework: returns (step, carry); step(carry, x, y) -> (carry, loss) ------------


def _pondlib_net(n_in: int = N_IN, n_out: int = N_OUT):
    from pondlib import nn

    k1, k2 = jax.random.split(jax.random.PRNGKey(1))
    return nn.Sequential(
        nn.Linear(n_in, N_HID, key=k1),
        nn.LIF(N_HID, tau_mem=TAU_MEM, tau_syn=TAU_SYN, dt=DT),
        nn.Linear(N_HID, n_out, key=k2),
        nn.LIF(n_out, tau_mem=TAU_MEM, tau_syn=TAU_SYN, dt=DT),
    )


def build_pondlib(x, y) -> tuple[Callable, tuple]:
    return _pondlib_step(_pondlib_net())


#: Xylo Audio's input and output channels: the Xylo-aware rows train a network of that size (the twin of the
#: 64 -> 256 -> 10 workload is refused: the chip has 16 inputs and 8 outputs), on the workload's first 16
#: input channels and labels modulo 8.
XYLO_IN, XYLO_OUT = 16, 8


def build_pondlib_xylo_size(x, y) -> tuple[Callable, tuple]:
    """The plain pondlib network at Xylo's size (16 -> 256 -> 8): the baseline of the Xylo-aware row."""
    return _pondlib_step(_pondlib_net(XYLO_IN, XYLO_OUT), n_in=XYLO_IN, n_out=XYLO_OUT)


def _pondlib_step(net, n_in: int | None = None, n_out: int | None = None) -> tuple[Callable, tuple]:
    """One jitted step (forward + gradient + Adam) for any pondlib network; returns (step, carry). ``n_in`` /
    ``n_out``: train on the first ``n_in`` input channels and the labels modulo ``n_out``."""
    opt = optax.adam(LR)

    def loss(net, x, y):
        if n_in is not None:
            x, y = x[..., :n_in], y % n_out
        out, _, _ = net(x)
        return _xent(out.sum(1), y)

    @jax.jit
    def step(carry, x, y):
        net, opt_state = carry
        value, grads = jax.value_and_grad(loss)(net, x, y)
        updates, opt_state = opt.update(grads, opt_state, net)
        return (optax.apply_updates(net, updates), opt_state), value

    return step, (net, opt.init(net))


def build_pondlib_xylo_aware(x, y) -> tuple[Callable, tuple]:
    """pondlib's hardware-aware twin of the same network for Xylo (spike caps, bit-shift decay with
    learned dashes, one-step hop delay, int8 channel fake-quantization, straight-through gradients).
    On CPU with the C kernels the whole network trains as one integer chain kernel
    (:mod:`pondlib.nn.integer_chain`), elsewhere each layer's time loop with its own hand-derived adjoint
    (:mod:`pondlib.devices.xylo.aware_adjoint`); its cost relative to the plain model is what this row reports."""
    from pondlib.devices.xylo.aware import xylo_aware

    net = _pondlib_net(XYLO_IN, XYLO_OUT)
    return _pondlib_step(xylo_aware(net, "audio3", quantize="channel"), n_in=XYLO_IN, n_out=XYLO_OUT)


def build_pondlib_split(x, y) -> tuple[Callable, tuple]:
    """The plain pondlib network trained data-parallel over every JAX device (``--host-devices``):
    ``pondlib.training.make_train_step`` with the mesh (the batch split, parameters and Adam state
    replicated, one gradient all-reduce), the same loss; the batch is placed inside each timed step."""
    import equinox as eqx
    from jax.sharding import NamedSharding, PartitionSpec

    from pondlib.nn import parallel
    from pondlib.training import make_train_step

    _, (net, _) = build_pondlib(x, y)
    mesh = parallel.data_mesh()
    params, static = eqx.partition(net, eqx.is_inexact_array)
    opt = optax.adam(LR)
    inner = make_train_step(static, lambda out, rec, labels: _xent(out.sum(1), labels), opt, mesh)
    batch = NamedSharding(mesh, PartitionSpec(parallel.AXIS))

    def step(carry, x, y):
        params, opt_state = carry
        params, opt_state, value, _ = inner(params, opt_state, jax.device_put(x, batch), jax.device_put(y, batch))
        return (params, opt_state), value

    return step, parallel.replicate((params, opt.init(params)), mesh)


def build_rockpool(x, y) -> tuple[Callable, tuple]:
    import warnings

    with warnings.catch_warnings():  # Rockpool warns about its optional torch backend on import
        warnings.simplefilter("ignore")
        from rockpool.nn.combinators import Sequential
        from rockpool.nn.modules import LIFJax, LinearJax

    def lif(n):
        return LIFJax(
            n, tau_mem=np.full(n, TAU_MEM), tau_syn=np.full(n, TAU_SYN), bias=np.zeros(n), threshold=np.ones(n), dt=DT
        )

    net = Sequential(LinearJax((N_IN, N_HID)), lif(N_HID), LinearJax((N_HID, N_OUT)), lif(N_OUT))
    params = net.parameters()
    opt = optax.adam(LR)

    def loss(params, net, x, y):
        net = net.reset_state()
        net = net.set_attributes(params)
        out, _, _ = net(x)
        return _xent(out.sum(1), y)

    # the module itself is closed over (its static structure must not travel through the carry:
    # a rebuilt module compares unequal and would make jit recompile every step)
    @jax.jit
    def step(carry, x, y):
        params, opt_state = carry
        value, grads = jax.value_and_grad(loss)(params, net, x, y)
        updates, opt_state = opt.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), value

    return step, (params, opt.init(params))


def build_spyx(x, y) -> tuple[Callable, tuple]:
    import spyx
    from flax import nnx

    rngs = nnx.Rngs(1)

    def cuba(n):
        layer = spyx.nn.CuBaLIF((n,), rngs=rngs)
        layer.alpha = nnx.Param(jnp.full((n,), math.exp(-DT / TAU_SYN), jnp.float32))  # synaptic decay
        layer.beta = nnx.Param(jnp.full((n,), math.exp(-DT / TAU_MEM), jnp.float32))  # membrane decay
        return layer

    model = spyx.nn.Sequential(
        nnx.Linear(N_IN, N_HID, use_bias=False, rngs=rngs),
        cuba(N_HID),
        nnx.Linear(N_HID, N_OUT, use_bias=False, rngs=rngs),
        cuba(N_OUT),
    )
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    opt = optax.adam(LR)

    def loss(params, rest, x, y):
        out, _ = spyx.nn.run(nnx.merge(graphdef, params, rest), x, batch_major=True)
        return _xent(out.sum(1), y)

    @jax.jit
    def step(carry, x, y):
        params, opt_state, rest = carry
        value, grads = jax.value_and_grad(loss)(params, rest, x, y)
        updates, opt_state = opt.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state, rest), value

    return step, (params, opt.init(params), rest)


FRAMEWORKS = {
    "pondlib": build_pondlib,
    "pondlib-xylo-size": build_pondlib_xylo_size,
    "pondlib-xylo-aware": build_pondlib_xylo_aware,
    "pondlib-split": build_pondlib_split,
    "rockpool": build_rockpool,
    "spyx": build_spyx,
}
IMPORTS = {
    "pondlib": "pondlib",
    "pondlib-xylo-size": "pondlib",
    "pondlib-xylo-aware": "pondlib",
    "pondlib-split": "pondlib",
    "rockpool": "rockpool",
    "spyx": "spyx",
}


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # noqa: BLE001 - best effort
        return None


def run(names: list[str], rounds: int, steps: int, warmup: int = 2, batch: int = BATCH) -> dict:
    """Build, compile and time each framework at ``batch`` samples; returns the results dictionary."""
    import importlib

    x, y = make_data(batch)
    built: dict[str, tuple] = {}
    results: dict[str, dict] = {}
    for name in names:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(IMPORTS[name])
        except ImportError:
            results[name] = {"status": "not installed"}
            continue
        try:
            step, carry = FRAMEWORKS[name](x, y)
            t0 = time.perf_counter()
            carry, value = step(carry, x, y)
            jax.block_until_ready(value)
            compile_s = time.perf_counter() - t0
            for _ in range(warmup):
                carry, value = step(carry, x, y)
            jax.block_until_ready(value)
        except Exception as err:  # noqa: BLE001 - report a broken competitor, keep the others
            results[name] = {"status": f"failed: {type(err).__name__}: {err}"[:300]}
            continue
        built[name] = (step, carry)
        results[name] = {
            "status": "ok",
            "version": _version(name),
            "compile_s": compile_s,
            "first_loss": float(value),
            "times_s": [],
        }
        if name.startswith("pondlib"):
            results[name]["version"] = _version("pondlib")
    for _ in range(rounds):  # interleave: every framework sees the same background load
        for name, (step, carry) in built.items():
            times = results[name]["times_s"]
            for _ in range(steps):
                t0 = time.perf_counter()
                carry, value = step(carry, x, y)
                jax.block_until_ready(value)
                times.append(time.perf_counter() - t0)
            built[name] = (step, carry)
            results[name]["last_loss"] = float(value)
    for name in built:
        t = np.asarray(results[name]["times_s"])
        results[name].update(
            median_ms=float(np.median(t) * 1e3),
            min_ms=float(t.min() * 1e3),
            steps_per_s=float(1.0 / np.median(t)),
            n_timed=int(t.size),
        )
    ref = results.get("pondlib", {}).get("steps_per_s")
    for name in built:
        if ref and name != "pondlib":
            results[name]["pondlib_speedup"] = ref / results[name]["steps_per_s"]
    return results


def report(results: dict, batch: int = BATCH) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"Training step: Linear({N_IN}->{N_HID}) -> LIF -> Linear({N_HID}->{N_OUT}) -> LIF, "
        f"B={batch}, T={STEPS_T}, Adam"
    )
    for col, just in (
        ("framework", "left"),
        ("version", "left"),
        ("steps/s", "right"),
        ("median ms", "right"),
        ("min ms", "right"),
        ("pondlib is", "right"),
    ):
        table.add_column(col, justify=just)
    for name, r in results.items():
        if r["status"] != "ok":
            table.add_row(name, "", r["status"], "", "", "")
            continue
        ratio = "" if name == "pondlib" else (f"{r['pondlib_speedup']:.1f}x faster" if "pondlib_speedup" in r else "")
        table.add_row(
            name,
            r.get("version") or "",
            f"{r['steps_per_s']:.1f}",
            f"{r['median_ms']:.2f}",
            f"{r['min_ms']:.2f}",
            ratio,
        )
    Console().print(table)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per framework per round")
    ap.add_argument("--only", default=",".join(FRAMEWORKS), help="comma-separated frameworks to run")
    ap.add_argument("--busy", action="store_true", help="also time with one spinning process")
    ap.add_argument("--batch", type=int, default=BATCH, help="samples per step (the workload's 32 by default)")
    ap.add_argument("--json", default=str(RESULTS), help="where to write the results ('' for nowhere)")
    ap.add_argument(
        "--host-devices",
        type=int,
        default=1,
        help="JAX CPU devices of this process (jax_num_cpu_devices; the pondlib-split row uses them all)",
    )
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in FRAMEWORKS]
    if unknown:
        ap.error(f"unknown framework(s) {unknown}; choose from {list(FRAMEWORKS)}")
    if args.host_devices > 1:
        jax.config.update("jax_num_cpu_devices", args.host_devices)  # before the first computation
    results = run(names, args.rounds, args.steps, batch=args.batch)
    plain = results.get("pondlib-xylo-size", {}).get("median_ms")  # the same network without the twin
    aware = results.get("pondlib-xylo-aware", {}).get("median_ms")
    if plain and aware:
        results["pondlib-xylo-aware"]["vs_plain_pondlib"] = aware / plain
    if args.busy:
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from inference import Busy

        with Busy(True):
            busy = run(names, args.rounds, args.steps, batch=args.batch)
        for name, r in busy.items():
            if r.get("status") == "ok" and results[name].get("status") == "ok":
                results[name]["busy_steps_per_s"] = r["steps_per_s"]
                results[name]["busy_slowdown"] = r["median_ms"] / results[name]["median_ms"]
                print(f"busy: {name}: {r['steps_per_s']:.1f} steps/s, slowdown {results[name]['busy_slowdown']:.2f}x")
    report(results, args.batch)
    if args.json:
        out = {
            "workload": {
                "batch": args.batch,
                "time_steps": STEPS_T,
                "n_in": N_IN,
                "n_hidden": N_HID,
                "n_out": N_OUT,
                "tau_mem": TAU_MEM,
                "tau_syn": TAU_SYN,
                "dt": DT,
                "input_rate": INPUT_RATE,
                "optimizer": f"adam({LR})",
            },
            "machine": {
                "platform": platform.platform(),
                "python": platform.python_version(),
                "jax": jax.__version__,
                "cpu_count": os.cpu_count(),
                "device": str(jax.devices()[0]),
                "host_devices": jax.device_count(),
                "loadavg_1min": os.getloadavg()[0],
            },
            "results": {k: {kk: vv for kk, vv in v.items() if kk != "times_s"} for k, v in results.items()},
        }
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
