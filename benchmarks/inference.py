"""Inference throughput (forward pass only): pondlib against Spyx, Rockpool, snnTorch and Norse, in one process.

Workload: Linear(64 -> 256) -> LIF(256, tau_mem 20 ms, tau_syn 10 ms, dt 1 ms) -> Linear(256 -> 10) ->
LIF(10), no biases, Bernoulli input spikes (rate 5 % per step), T = 200 steps, batches of 32, 256 and
1024 samples, and a variant whose hidden LIF layer is recurrent (256 x 256 weights). Rows:

- ``pondlib``: ``nn.Sequential(..., fuse=False)`` (layer by layer);
- ``pondlib-fused``: the same network with ``Sequential(...)``'s default ``fuse=True`` (one time loop for
  the whole chain, :mod:`pondlib.nn.fused`) on its default path: on CPU the event-driven chain kernel
  for the feed-forward variant, the XLA loop for the recurrent one;
- ``pondlib-fused-xla``: the XLA loop of the chain (``inference_path("xla")``, running
  ``chunk_steps(B * 256)`` steps per iteration: 1 at B = 32, 4 at B = 256, 2 at B = 1024);
- ``pondlib-fused-sparse`` / ``pondlib-fused-dense``: the chain kernel with every product gathered /
  dense (``inference_path``; for the recurrent variant too);
- ``spyx``: ``spyx.nn.Sequential(nnx.Linear, CuBaLIF, nnx.Linear, CuBaLIF)`` run with ``spyx.nn.run``
  (``RCuBaLIF`` for the recurrent variant), merged graph inside ``jax.jit``;
- ``rockpool``: ``Sequential(LinearJax, LIFJax, LinearJax, LIFJax)`` (``has_rec`` for the recurrent
  variant), parameters passed through ``jax.jit``;
- ``snntorch`` and ``norse`` (PyTorch, CPU): see :func:`build_snntorch` and :func:`build_norse`;
- ``pondlib-fused-split``: the fused network with the batch split over every JAX device (run with
  ``--host-devices 2`` to give this process two CPU devices, one per core).

Competitors are optional; one that is not importable is reported as "not installed". After
compilation every row is timed in interleaved rounds (background load affects all alike); the figure
is the median call time, as samples per second, with ratios to Spyx, and beside it the median CPU time
of a call (the process's CPU seconds: on a shared machine, the work the call did).

Beside each row: its "dense GFLOP/s" (the workload's dense products, :func:`dense_flops`, per second of
the call: what a dense implementation would have to sustain to match it) as a percentage of this
machine's dense float32 rate measured at the start (:func:`measure_peak`, the faster of NumPy's and
XLA's GEMM on every core);
an event-driven row can exceed 100 %. At the end, per variant, the best throughput over the batch
sizes against Spyx's best (:func:`best_against_best`).

``--busy`` starts one spinning process (a ``multiprocessing`` busy loop, the other core busy) for a
second pass of the same rounds and reports each row's slowdown (busy median / quiet median).

Usage::

    python benchmarks/inference.py [--rounds 5] [--calls 5] [--batches 32,256,1024] [--busy] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import platform
import resource
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

STEPS_T, N_IN, N_HID, N_OUT = 200, 64, 256, 10
TAU_MEM, TAU_SYN, DT, INPUT_RATE = 20e-3, 10e-3, 1e-3, 0.05
RESULTS = Path(__file__).resolve().parent / "results" / "inference.json"
PEAK = [0.0]  # FLOP/s of measure_peak(), set by main()


def make_input(batch: int, seed: int = 0) -> jax.Array:
    """Bernoulli input spikes (B, T, N_in), float32."""
    return jax.random.bernoulli(jax.random.PRNGKey(seed), INPUT_RATE, (batch, STEPS_T, N_IN)).astype(jnp.float32)


def build_pondlib(rec: bool, fuse: bool = False, raw: bool = False, path: str | None = None) -> Any:
    """The workload as ``nn.Sequential(..., fuse=fuse)``, jitted (``raw``: the network itself); ``path``
    names the fused chain's inference path (:func:`pondlib.nn.fused.inference_path`), else its default."""
    from pondlib import nn
    from pondlib.nn.fused import inference_path

    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(1), 3)
    net = nn.Sequential(
        nn.Linear(N_IN, N_HID, key=k1),
        nn.LIF(N_HID, tau_mem=TAU_MEM, tau_syn=TAU_SYN, dt=DT, has_rec=rec, key=k3),
        nn.Linear(N_HID, N_OUT, key=k2),
        nn.LIF(N_OUT, tau_mem=TAU_MEM, tau_syn=TAU_SYN, dt=DT),
        fuse=fuse,
    )
    if raw:
        return net

    def call(net, x):
        if path is None:
            return net(x)[0]
        with inference_path(path):  # acts while the function is traced
            return net(x)[0]

    f = jax.jit(call)
    return lambda x: f(net, x)


def build_pondlib_split(rec: bool) -> Callable:
    """The fused network with the batch split over every JAX device (``split_call`` under ``jax.jit``;
    the input is placed on the devices inside each timed call)."""
    from jax.sharding import NamedSharding, PartitionSpec

    from pondlib.nn import parallel

    mesh = parallel.data_mesh()
    net = parallel.replicate(build_pondlib(rec, fuse=True, raw=True), mesh)
    f = jax.jit(lambda net, x: parallel.split_call(net, x, mesh=mesh)[0])
    batch = NamedSharding(mesh, PartitionSpec(parallel.AXIS))
    return lambda x: f(net, jax.device_put(x, batch))


def build_spyx(rec: bool) -> Callable:
    import spyx
    from flax import nnx

    rngs = nnx.Rngs(1)

    def cuba(n, recurrent=False):
        layer = (spyx.nn.RCuBaLIF if recurrent else spyx.nn.CuBaLIF)((n,), rngs=rngs)
        layer.alpha = nnx.Param(jnp.full((n,), math.exp(-DT / TAU_SYN), jnp.float32))
        layer.beta = nnx.Param(jnp.full((n,), math.exp(-DT / TAU_MEM), jnp.float32))
        return layer

    model = spyx.nn.Sequential(
        nnx.Linear(N_IN, N_HID, use_bias=False, rngs=rngs),
        cuba(N_HID, rec),
        nnx.Linear(N_HID, N_OUT, use_bias=False, rngs=rngs),
        cuba(N_OUT),
    )
    graphdef, state = nnx.split(model)

    @jax.jit
    def f(state, x):
        out, _ = spyx.nn.run(nnx.merge(graphdef, state), x, batch_major=True)
        return out

    return lambda x: f(state, x)


def build_rockpool(rec: bool) -> Callable:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from rockpool.nn.combinators import Sequential
        from rockpool.nn.modules import LIFJax, LinearJax

    def lif(n, has_rec=False):
        return LIFJax(n, tau_mem=TAU_MEM, tau_syn=TAU_SYN, dt=DT, has_rec=has_rec)

    net = Sequential(LinearJax((N_IN, N_HID)), lif(N_HID, rec), LinearJax((N_HID, N_OUT)), lif(N_OUT))
    params = net.parameters()

    @jax.jit
    def f(params, x):
        out, _, _ = net.reset_state().set_attributes(params)(x)
        return out

    return lambda x: f(params, x)


def _torch_input(x) -> Any:
    """The benchmark input as a float32 torch tensor (B, T, N), converted once per input array."""
    import torch

    cache = _torch_input.__dict__.setdefault("cache", {})
    if id(x) not in cache:
        cache.clear()
        cache[id(x)] = (x, torch.from_numpy(np.array(x, dtype=np.float32)))  # a writable copy
    return cache[id(x)][1]


def build_snntorch(rec: bool) -> Callable:
    """snnTorch: ``Linear -> Synaptic -> Linear -> Synaptic`` (``RSynaptic`` for the recurrent variant),
    stepped over time in Python as its tutorials do, under ``torch.inference_mode``."""
    import snntorch as snn
    import torch

    torch.manual_seed(1)
    alpha, beta = math.exp(-DT / TAU_SYN), math.exp(-DT / TAU_MEM)
    fc1 = torch.nn.Linear(N_IN, N_HID, bias=False)
    lif1 = snn.RSynaptic(alpha, beta, linear_features=N_HID) if rec else snn.Synaptic(alpha, beta)
    fc2 = torch.nn.Linear(N_HID, N_OUT, bias=False)
    lif2 = snn.Synaptic(alpha, beta)

    def run(x):
        xt = _torch_input(x)
        with torch.inference_mode():
            if rec:
                spk1, syn1, mem1 = lif1.init_rsynaptic()
            else:
                syn1, mem1 = lif1.init_synaptic()
            syn2, mem2 = lif2.init_synaptic()
            out = []
            for t in range(xt.shape[1]):
                if rec:
                    spk1, syn1, mem1 = lif1(fc1(xt[:, t]), spk1, syn1, mem1)
                else:
                    spk1, syn1, mem1 = lif1(fc1(xt[:, t]), syn1, mem1)
                spk2, syn2, mem2 = lif2(fc2(spk1), syn2, mem2)
                out.append(spk2)
            return torch.stack(out, 1).numpy()

    return run


def build_norse(rec: bool) -> Callable:
    """Norse: ``SequentialState(Linear, LIF, Linear, LIF)`` on time-major input (``LIFRecurrent``, which
    holds its own input weights, for the recurrent variant), under ``torch.inference_mode``."""
    import norse.torch as norse
    import torch

    torch.manual_seed(1)
    p = norse.LIFParameters(tau_syn_inv=torch.tensor(1.0 / TAU_SYN), tau_mem_inv=torch.tensor(1.0 / TAU_MEM))
    first = (
        [norse.LIFRecurrent(N_IN, N_HID, p=p, dt=DT)]
        if rec
        else [torch.nn.Linear(N_IN, N_HID, bias=False), norse.LIF(p=p, dt=DT)]
    )
    model = norse.SequentialState(*first, torch.nn.Linear(N_HID, N_OUT, bias=False), norse.LIF(p=p, dt=DT))

    def run(x):
        with torch.inference_mode():
            out, _ = model(_torch_input(x).transpose(0, 1))
            return out.transpose(0, 1).numpy()

    return run


FRAMEWORKS = {
    "pondlib": lambda rec: build_pondlib(rec),
    "pondlib-fused": lambda rec: build_pondlib(rec, fuse=True),
    "pondlib-fused-xla": lambda rec: build_pondlib(rec, fuse=True, path="xla"),
    "pondlib-fused-dense": lambda rec: build_pondlib(rec, fuse=True, path="dense"),
    "pondlib-fused-sparse": lambda rec: build_pondlib(rec, fuse=True, path="sparse"),
    "pondlib-fused-split": build_pondlib_split,
    "spyx": build_spyx,
    "rockpool": build_rockpool,
    "snntorch": build_snntorch,
    "norse": build_norse,
}


def _version(dist: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:  # noqa: BLE001 - best effort
        return None


def dense_flops(rec: bool, batch: int) -> float:
    """Floating-point operations of the workload's dense products per call (a multiply-add counts 2):
    ``2 T B (N_in N_hid + N_hid N_out [+ N_hid^2 recurrent])``; the LIF updates are not counted."""
    per_step = N_IN * N_HID + N_HID * N_OUT + (N_HID * N_HID if rec else 0)
    return 2.0 * STEPS_T * batch * per_step


def measure_peak(size: int = 2048, rounds: int = 7) -> float:
    """This machine's dense float32 rate in FLOP/s, measured: the faster of two GEMMs of ``size``-square
    matrices on every core (NumPy's BLAS and XLA's), medians of ``rounds``: the practical peak a dense
    product reaches here."""
    a = np.random.default_rng(0).standard_normal((size, size)).astype(np.float32)
    ja = jnp.asarray(a)
    f = jax.jit(lambda a: a @ a)
    rates = []
    for call in (lambda: a @ a, lambda: jax.block_until_ready(f(ja))):
        call()
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        rates.append(2.0 * size**3 / float(np.median(times)))
    return max(rates)


def best_against_best(results: dict, row: str = "pondlib-fused", other: str = "spyx") -> dict:
    """Per variant, the best throughput of ``row`` over the batch sizes against the best of ``other``."""
    out: dict = {}
    for variant in ("feedforward", "recurrent"):
        best = {}
        for name in (row, other):
            rates = [
                r[name]["quiet_samples_per_s"]
                for key, r in results.items()
                if key.startswith(variant + "/") and r.get(name, {}).get("status") == "ok"
            ]
            best[name] = max(rates) if rates else None
        if best[row] and best[other]:
            out[variant] = {row: best[row], other: best[other], "ratio": best[row] / best[other]}
    return out


def _spin(stop) -> None:  # a busy loop on another core until told to stop
    x = 0
    while not stop.is_set():
        for _ in range(10000):
            x += 1


class Busy:
    """Context manager: one spinning process while inside (``enabled=False``: nothing)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __enter__(self):
        if self.enabled:
            ctx = mp.get_context("spawn")
            self.stop = ctx.Event()
            self.proc = ctx.Process(target=_spin, args=(self.stop,), daemon=True)
            self.proc.start()
            time.sleep(0.5)
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self.stop.set()
            self.proc.join(5)
            if self.proc.is_alive():
                self.proc.terminate()


def _cpu_s() -> float:
    """CPU seconds this process has used (all threads): on a shared machine, the work a call did."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def time_rows(fns: dict, x, rounds: int, calls: int, cpu: dict | None = None) -> dict[str, list[float]]:
    """Wall times of each row's calls in interleaved rounds; with ``cpu``, each call's CPU seconds too."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):  # interleaved rounds
        for name, f in fns.items():
            for _ in range(calls):
                c0, t0 = _cpu_s(), time.perf_counter()
                jax.block_until_ready(f(x))
                times[name].append(time.perf_counter() - t0)
                if cpu is not None:
                    cpu.setdefault(name, []).append(_cpu_s() - c0)
    return times


def run(names: list[str], batches: list[int], rounds: int, calls: int, busy: bool) -> dict:
    import importlib

    mods = {"spyx": "spyx", "rockpool": "rockpool", "snntorch": "snntorch", "norse": "norse"}
    out: dict = {}
    for variant, rec in (("feedforward", False), ("recurrent", True)):
        for batch in batches:
            key = f"{variant}/B={batch}"
            x = make_input(batch)
            fns, res = {}, {}
            for name in names:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        importlib.import_module(mods.get(name, "pondlib"))
                except ImportError:
                    res[name] = {"status": "not installed"}
                    continue
                try:
                    f = FRAMEWORKS[name](rec)
                    t0 = time.perf_counter()
                    y = jax.block_until_ready(f(x))
                    res[name] = {"status": "ok", "compile_s": time.perf_counter() - t0, "spikes": float(y.sum())}
                    fns[name] = f
                except Exception as err:  # noqa: BLE001 - report a broken competitor, keep the others
                    res[name] = {"status": f"failed: {type(err).__name__}: {err}"[:300]}
            passes = [("quiet", False)] + ([("busy", True)] if busy else [])
            for label, on in passes:
                cpu: dict = {}
                with Busy(on):
                    times = time_rows(fns, x, rounds, calls, cpu)
                for name, t in times.items():
                    med = float(np.median(t))
                    res[name][f"{label}_median_ms"] = med * 1e3
                    res[name][f"{label}_samples_per_s"] = batch / med
                    res[name][f"{label}_cpu_median_ms"] = float(np.median(cpu[name])) * 1e3
                    res[name][f"{label}_dense_gflops"] = dense_flops(rec, batch) / med / 1e9
            for name in fns:
                r = res[name]
                if "spyx" in fns:
                    r["vs_spyx"] = r["quiet_samples_per_s"] / res["spyx"]["quiet_samples_per_s"]
                if busy:
                    r["busy_slowdown"] = r["busy_median_ms"] / r["quiet_median_ms"]
            out[key] = res
            print(key)
            for name, r in res.items():
                if r["status"] != "ok":
                    print(f"  {name:19s} {r['status']}")
                    continue
                line = f"  {name:19s} {r['quiet_samples_per_s']:9.0f} samples/s  {r['quiet_median_ms']:8.2f} ms"
                line += f" (cpu {r['quiet_cpu_median_ms']:8.2f} ms)"
                if "vs_spyx" in r:
                    line += f"  {r['vs_spyx']:.2f}x spyx"
                if PEAK[0]:
                    line += f"  {100 * r['quiet_dense_gflops'] * 1e9 / PEAK[0]:5.1f} % of peak"
                if busy:
                    line += f"  busy {r['busy_samples_per_s']:9.0f} samples/s (slowdown {r['busy_slowdown']:.2f}x)"
                print(line, flush=True)
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds")
    ap.add_argument("--calls", type=int, default=5, help="timed calls per row per round")
    ap.add_argument("--batches", default="32,256,1024", help="comma-separated batch sizes")
    ap.add_argument("--only", default=",".join(FRAMEWORKS), help="comma-separated rows to run")
    ap.add_argument("--busy", action="store_true", help="also time with one spinning process")
    ap.add_argument(
        "--host-devices",
        type=int,
        default=1,
        help="JAX CPU devices of this process (jax_num_cpu_devices; the split row uses them all)",
    )
    ap.add_argument("--json", default=str(RESULTS), help="where to write the results ('' for nowhere)")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in FRAMEWORKS]
    if unknown:
        ap.error(f"unknown row(s) {unknown}; choose from {list(FRAMEWORKS)}")
    batches = [int(b) for b in args.batches.split(",") if b.strip()]
    if args.host_devices > 1:
        jax.config.update("jax_num_cpu_devices", args.host_devices)  # before the first computation
    PEAK[0] = measure_peak()
    print(f"dense float32 peak measured here (GEMM 2048^3, every core): {PEAK[0] / 1e9:.1f} GFLOP/s; each row's")
    print("'% of peak' is the workload's dense products (dense_flops) per second against it")
    results = run(names, batches, args.rounds, args.calls, args.busy)
    bests = best_against_best(results)
    for variant, b in bests.items():
        print(
            f"best over batch sizes, {variant}: pondlib-fused {b['pondlib-fused']:.0f} against spyx {b['spyx']:.0f}"
            f" samples/s: {b['ratio']:.2f}x"
        )
    if args.json:
        doc = {
            "workload": {
                "time_steps": STEPS_T,
                "n_in": N_IN,
                "n_hidden": N_HID,
                "n_out": N_OUT,
                "tau_mem": TAU_MEM,
                "tau_syn": TAU_SYN,
                "dt": DT,
                "input_rate": INPUT_RATE,
                "batches": batches,
            },
            "machine": {
                "platform": platform.platform(),
                "python": platform.python_version(),
                "jax": jax.__version__,
                "cpu_count": os.cpu_count(),
                "device": str(jax.devices()[0]),
                "host_devices": jax.device_count(),
                "note": "2-core development machine; load average at the start in loadavg_1min",
                "loadavg_1min": os.getloadavg()[0],
            },
            "versions": {d: _version(d) for d in ("pondlib", "spyx", "rockpool", "snntorch", "norse", "torch")},
            "peak_gflops_measured": PEAK[0] / 1e9,
            "dense_gflop_per_call": {
                f"{v}/B={b}": dense_flops(v == "recurrent", b) / 1e9
                for v in ("feedforward", "recurrent")
                for b in batches
            },
            "best_against_best": bests,
            "results": results,
        }
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
