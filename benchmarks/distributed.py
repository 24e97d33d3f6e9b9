"""Scaling past one process: JAX multi-process training and inference, Ray sweeps, Ray bulk simulation.

Three measurements, each run side by side with its one-worker baseline in this script, ratios of medians:

1. **processes** (``pondlib.distributed.launch``, gloo collectives on localhost, one CPU device per
   process): one jitted training step (``make_train_step`` over the mesh of every process's device;
   forward + gradient all-reduce + Adam) on B = 32, and inference of B = 256 through
   ``pondlib.training.predict`` (batch split over the processes, predictions gathered on every process),
   workload of ``benchmarks/scaling.py`` (Linear 64->256, LIF, Linear 256->10, LIF, T = 200, 5 % input
   spikes); 1 process against 2, median step / call time over ``--repeats`` after compilation;
2. **sweep** (``pondlib.sweep.run_sweep``): ``--trials`` tiny trials (digits slice, 2 epochs, 32 hidden,
   the first registered device, deployed as trained) on one local Ray instance of 2 CPUs, warmed by a
   2-trial sweep (worker processes started), then with at most 1 and at most 2 trials at once, in the
   order 1, 2, 2, 1 (median per count); trials per minute (each trial compiles its own training step, as
   a real sweep's trials do);
3. **bulk simulation** (``pondlib.sweep.bulk_run``): the first registered device's simulator over
   ``--samples`` random inputs (T = 50), one plain ``Device.run`` call in this process against 8 blocks
   on 1 and on 2 warm Ray workers (the outputs are checked equal); samples per second.

The development machine has 2 cores shared with other work, so the figures are noisy and a 2-worker run
competes with everything else on the machine: the JSON records the load average at the start.

Usage::

    python benchmarks/distributed.py [--repeats 10] [--trials 4] [--samples 2000] [--only processes,sweep,bulk]
                                     [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "distributed.json"
N_IN, N_HID, N_OUT, T = 64, 256, 10, 200
B_INFER, B_TRAIN = 256, 32


def _median_time(fn, repeats: int) -> float:
    fn()  # compile
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def process_job(repeats: int) -> dict:
    """In each launched process: the training step and ``predict`` timed over every process's device."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import optax

    from pondlib import nn
    from pondlib.nn import parallel
    from pondlib.training import make_train_step, predict

    k1, k2, kx, ky = jax.random.split(jax.random.PRNGKey(0), 4)
    net = nn.Sequential(nn.Linear(N_IN, N_HID, key=k1), nn.LIF(N_HID), nn.Linear(N_HID, N_OUT, key=k2), nn.LIF(N_OUT))
    x = jax.random.bernoulli(kx, 0.05, (B_INFER, T, N_IN)).astype(jnp.float32)
    y = jax.random.randint(ky, (B_TRAIN,), 0, N_OUT)
    xh = jax.device_get(x)
    infer = _median_time(lambda: predict(net, xh, batch_size=B_INFER), repeats)
    d = jax.device_count()
    mesh = parallel.data_mesh(d) if d > 1 else None
    params, static = eqx.partition(net, eqx.is_inexact_array)
    opt = optax.adam(1e-3)
    opt_state = opt.init(params)
    step = make_train_step(static, "cross_entropy_sum", opt, mesh)
    xb, yb = jax.device_get(x[:B_TRAIN]), jax.device_get(y)
    if mesh is not None:
        params, opt_state = parallel.replicate((params, opt_state), mesh)
        xb, yb = parallel.shard_batch(xb, mesh), parallel.shard_batch(yb, mesh)
    carry = [params, opt_state]

    def train():
        carry[0], carry[1], loss, _ = step(carry[0], carry[1], xb, yb)
        loss.block_until_ready()

    train_t = _median_time(train, repeats)
    return {"processes": jax.process_count(), "devices": d, "infer_s": infer, "train_s": train_t}


def bench_processes(repeats: int) -> dict:
    from pondlib import distributed

    env = {"JAX_PLATFORMS": "cpu", "XLA_FLAGS": "", "PYTHONPATH": str(ROOT)}
    runs = {}
    for n in (1, 2, 1, 2):  # alternate: a load change hits both
        res = distributed.launch("benchmarks.distributed:process_job", n, args=(repeats,), env=env, timeout=900)
        runs.setdefault(n, []).append(res[0])
    out = {}
    for n, rs in runs.items():
        out[f"{n}_process"] = {
            "train_steps_per_s": 1.0 / statistics.median(r["train_s"] for r in rs),
            "inference_samples_per_s": B_INFER / statistics.median(r["infer_s"] for r in rs),
        }
    out["speedup_2_vs_1"] = {
        k: out["2_process"][k] / out["1_process"][k] for k in ("train_steps_per_s", "inference_samples_per_s")
    }
    return out


def _small_data():
    from pondlib.datasets import EventDataset, load_digits_events

    d = load_digits_events(T=12)
    return EventDataset(d.x_train[:128], d.y_train[:128], d.x_test[:64], d.y_test[:64], "digits slice")


@contextlib.contextmanager
def _ray(cpus: int):
    """A local Ray instance of ``cpus`` CPUs for the block (``pondlib.sweep`` uses a running one)."""
    import ray

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def bench_sweep(n_trials: int) -> dict:
    from pondlib import sweep
    from pondlib.devices import registry

    data = _small_data()
    trials = sweep.grid(seed=list(range(n_trials)), epochs=[2], hidden=[32], lr=[3e-3], batch_size=[32])
    device = registry.names()[0]
    out = {}
    with _ray(2):
        sweep.run_sweep(trials[:2], data, devices=[device], workers=2)  # warm: both worker processes started
        secs: dict[int, list[float]] = {1: [], 2: []}
        for w in (1, 2, 2, 1):  # alternate: a load change and warm caches favour neither
            t0 = time.perf_counter()
            res = sweep.run_sweep(trials, data, devices=[device], workers=w)
            secs[w].append(time.perf_counter() - t0)
            assert not res.errors, res.errors
            out[f"{w}_worker_gaps"] = [r["gap_points"] for r in res.rows]
        for w, t in secs.items():
            sec = statistics.median(t)
            out[f"{w}_worker"] = {"seconds": sec, "runs_s": t, "trials_per_min": 60.0 * n_trials / sec}
    out["speedup_2_vs_1"] = out["2_worker"]["trials_per_min"] / out["1_worker"]["trials_per_min"]
    out["same_rows"] = out["1_worker_gaps"] == out["2_worker_gaps"]
    return out


def bench_bulk(n_samples: int) -> dict:
    import jax
    import numpy as np

    from pondlib import sweep
    from pondlib.devices import registry

    d = registry.get(registry.names()[0])
    net = sweep.default_network(64, 16, 10, jax.random.PRNGKey(0))
    mapped = d.map(net, d.limits(d.deploy_settings.limits))
    x = np.random.default_rng(0).poisson(0.8, (n_samples, 50, 16)).astype(np.float32)
    d.run(mapped, x[:2], record=False)  # compile
    t0 = time.perf_counter()
    ref, _ = d.run(mapped, x, record=False)
    one = time.perf_counter() - t0
    out = {"device": d.name, "samples": n_samples, "T": 50, "one_process_samples_per_s": n_samples / one}
    with _ray(2):
        sweep.bulk_run(mapped, x[:64], workers=2, block=8)  # warm: workers started, simulator compiled in each
        for w in (1, 2):
            t0 = time.perf_counter()
            got, _ = sweep.bulk_run(mapped, x, workers=w, block=-(-n_samples // 8))
            sec = time.perf_counter() - t0
            assert np.array_equal(got, np.asarray(ref)), "bulk_run differs from one call"
            out[f"ray_{w}_workers_samples_per_s"] = n_samples / sec
            out[f"ray_{w}_workers_seconds"] = sec
    out["speedup_ray2_vs_one_process"] = out["ray_2_workers_samples_per_s"] / out["one_process_samples_per_s"]
    out["speedup_ray2_vs_ray1"] = out["ray_2_workers_samples_per_s"] / out["ray_1_workers_samples_per_s"]
    out["outputs_equal"] = True
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--only", default="processes,sweep,bulk")
    ap.add_argument("--json", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    parts = args.only.split(",")
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_1min_at_start": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        },
        "note": "2-core development machine shared with other work: noisy figures",
    }
    if "processes" in parts:
        result["processes"] = bench_processes(args.repeats)
        print("processes:", json.dumps(result["processes"]), flush=True)
    if "sweep" in parts:
        result["sweep"] = bench_sweep(args.trials)
        print("sweep:", json.dumps(result["sweep"]), flush=True)
    if "bulk" in parts:
        result["bulk"] = bench_bulk(args.samples)
        print("bulk:", json.dumps(result["bulk"]), flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
