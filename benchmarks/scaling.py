"""Data-parallel scaling: throughput on 1 and on 2 host (CPU) devices, inference and training.

Workload: Linear(64 -> 256) -> LIF(256) -> Linear(256 -> 10) -> LIF(10) (pondlib defaults otherwise),
Bernoulli input spikes (rate 5 % per step), T = 200 steps.

- inference on a batch of B = 256 (samples per second), three rows: ``call``, the end-to-end public call
  (``net(x)`` on one device, ``pondlib.nn.parallel.sharded_call(net, x)`` on several: input
  validation, host-to-device placement, output checks included); ``jit`` and ``jit-fused``, the jitted
  computation alone on inputs already placed on the devices (``net(x)`` under ``jax.jit`` on one device,
  ``split_call`` under ``jax.jit`` on several; ``jit``: ``Sequential(..., fuse=False)``, layer by layer;
  ``jit-fused``: the default ``Sequential``), which is what the engine scales;
- training: one jitted step, forward + gradient + Adam (lr 1e-3), on B = 32
  (``pondlib.training.make_train_step`` with the mesh, batch split, parameters replicated; steps per second).

Each device count runs in its own subprocess started with
``XLA_FLAGS=--xla_force_host_platform_device_count=D`` (JAX fixes the count at start-up). After one
compiling call, ``--repeats`` calls are timed one by one; a run's figure is the median. The device
counts take turns over ``--rounds`` rounds (1, 2, 1, 2, ...: a load change hits both alike), and each
figure reported is the median over the rounds. The speed-up is the 2-device throughput over the
1-device throughput. On a shared machine the figures move with the load: the JSON records the load
average at the start.

Usage::

    python benchmarks/scaling.py [--repeats 10] [--rounds 3] [--devices 1,2] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "scaling.json"
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


def measure(repeats: int) -> dict:
    """Run in the subprocess: the two throughputs on every device JAX sees."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import optax

    from pondlib import nn
    from pondlib.nn import parallel
    from pondlib.training import make_train_step

    d = jax.device_count()
    k1, k2, kx, ky = jax.random.split(jax.random.PRNGKey(0), 4)
    layers = (nn.Linear(N_IN, N_HID, key=k1), nn.LIF(N_HID), nn.Linear(N_HID, N_OUT, key=k2), nn.LIF(N_OUT))
    net = nn.Sequential(*layers)  # the default: fused
    x = jax.random.bernoulli(kx, 0.05, (B_INFER, T, N_IN)).astype(jnp.float32)
    if d > 1:
        infer = _median_time(lambda: parallel.sharded_call(net, x, devices=d)[0].block_until_ready(), repeats)
    else:
        infer = _median_time(lambda: net(x)[0].block_until_ready(), repeats)
    jit_times = {}
    for name, model in (("jit", nn.Sequential(*layers, fuse=False)), ("jit-fused", net)):
        if d > 1:
            mesh_i = parallel.data_mesh(d)
            fn = eqx.filter_jit(lambda n, xb, mesh_i=mesh_i: parallel.split_call(n, xb, mesh=mesh_i)[0])
            model, xb = parallel.replicate(model, mesh_i), parallel.shard_batch(x, mesh_i)
        else:
            fn, xb = eqx.filter_jit(lambda n, xb: n(xb)[0]), x
        jit_times[name] = _median_time(lambda fn=fn, model=model, xb=xb: fn(model, xb).block_until_ready(), repeats)

    mesh = parallel.data_mesh(d) if d > 1 else None
    params, static = eqx.partition(net, eqx.is_inexact_array)
    opt = optax.adam(1e-3)
    opt_state = opt.init(params)
    step = make_train_step(static, "cross_entropy_sum", opt, mesh)
    xb, yb = x[:B_TRAIN], jax.random.randint(ky, (B_TRAIN,), 0, N_OUT)
    if mesh is not None:
        params, opt_state = parallel.replicate((params, opt_state), mesh)
        xb, yb = parallel.shard_batch(xb, mesh), parallel.shard_batch(yb, mesh)
    carry = [params, opt_state]

    def train():
        carry[0], carry[1], loss, _ = step(carry[0], carry[1], xb, yb)
        loss.block_until_ready()

    train_t = _median_time(train, repeats)
    return {
        "devices": d,
        "inference_samples_per_s": B_INFER / infer,
        "inference_median_s": infer,
        **{f"inference_{k}_samples_per_s": B_INFER / v for k, v in jit_times.items()},
        "train_steps_per_s": 1.0 / train_t,
        "train_median_s": train_t,
    }


def run_with_devices(d: int, repeats: int) -> dict:
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={d}", JAX_PLATFORMS="cpu")
    code = f"import json, benchmarks.scaling as s; print(json.dumps(s.measure({repeats})))"
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of all device counts")
    ap.add_argument("--devices", default="1,2")
    ap.add_argument("--json", type=Path, default=RESULTS)
    args = ap.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    counts = [int(d) for d in args.devices.split(",")]
    rounds = [[run_with_devices(d, args.repeats) for d in counts] for _ in range(args.rounds)]
    runs = [
        {key: statistics.median(r[i][key] for r in rounds) for key in rounds[0][i]} | {"devices": d}
        for i, d in enumerate(counts)
    ]
    for r in runs:
        print(
            f"{r['devices']} device(s): inference {r['inference_samples_per_s']:.0f} samples/s (call), "
            f"{r['inference_jit_samples_per_s']:.0f} (jit), {r['inference_jit-fused_samples_per_s']:.0f} (jit, fused); "
            f"training {r['train_steps_per_s']:.2f} steps/s"
        )
    base = runs[0]
    speedup = {
        f"{r['devices']}_vs_{base['devices']}": {
            "inference": r["inference_samples_per_s"] / base["inference_samples_per_s"],
            "inference_jit": r["inference_jit_samples_per_s"] / base["inference_jit_samples_per_s"],
            "inference_jit_fused": r["inference_jit-fused_samples_per_s"] / base["inference_jit-fused_samples_per_s"],
            "training": r["train_steps_per_s"] / base["train_steps_per_s"],
        }
        for r in runs[1:]
    }
    print("speed-up:", json.dumps(speedup))
    result = {
        "workload": {
            "net": "Linear 64->256, LIF, Linear 256->10, LIF",
            "T": T,
            "B_inference": B_INFER,
            "B_train": B_TRAIN,
        },
        "runs": runs,
        "speedup": speedup,
        "repeats": args.repeats,
        "rounds": args.rounds,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "loadavg_1min_at_start": load},
        "note": "host CPU devices (XLA_FLAGS) on one 2-core machine: each device count in its own process, "
        "the load average at the start recorded",
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
