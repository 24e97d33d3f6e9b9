"""GPU check: does pondlib run on a GPU, on the XLA path, and how fast? A few minutes on a machine with one.

On a machine where JAX sees a GPU (``pip install -e ".[cuda]"``), in one process:

1. the path: the compiled CPU kernels of ``pondlib.nn.native`` must stay out (``native.eligible`` is
   False on a GPU backend; the lowered training step and the fused inference contain no ``pondlib_*``
   custom call), and the numba kernels are never built;
2. correctness: a small network's forward pass and gradient on the GPU against the same on the CPU
   (spikes equal in at least 99.9 % of the elements, gradients within 1e-3 relative: float32 sums in
   another order can flip a spike sitting exactly on the threshold);
3. speed, the workloads of ``benchmarks/train_step.py`` (one jitted training step, batch 32, T = 200:
   pondlib, pondlib's Xylo-aware twin, Spyx) and ``benchmarks/inference.py`` (inference, feed-forward,
   B = 256: pondlib layer by layer and fused, Spyx), interleaved rounds, medians; Spyx only where it is
   installed, ratios pondlib / Spyx.

Results go to ``benchmarks/results/gpu_check.json`` (``--json``). On a machine without a GPU it prints
why it measured nothing and exits with status 0 (``--allow-cpu`` runs everything on the CPU instead, to
check the script itself).

Usage::

    python benchmarks/gpu_check.py [--rounds 3] [--steps 10] [--json PATH] [--allow-cpu]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "gpu_check.json"


def gpus() -> list:
    """The GPUs JAX sees (empty when its backend has none)."""
    import jax

    try:
        return list(jax.devices("gpu"))
    except RuntimeError:  # no GPU backend: jaxlib without CUDA, or no device
        return []


def check_path() -> dict:
    """Which path the layers take on the default backend: kernels eligible, custom calls in the HLO."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    from pondlib import nn
    from pondlib.nn import native

    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    net = nn.Sequential(nn.Linear(8, 16, key=k1), nn.LIF(16), nn.Linear(16, 4, key=k2), nn.LIF(4))
    x = jnp.ones((2, 10, 8), jnp.float32)
    grad = jax.jit(jax.grad(lambda n, xb: jnp.sum(n(xb)[0])))
    hlo_train = grad.lower(net, x).as_text()
    hlo_infer = eqx.filter_jit(lambda n, xb: n(xb)[0]).lower(net, x).as_text()
    return {
        "default_backend": jax.default_backend(),
        "native_eligible": bool(native.eligible(x)),
        "custom_call_in_train_step": "pondlib_" in hlo_train,
        "custom_call_in_fused_inference": "pondlib_" in hlo_infer,
        "numba_kernels_built": "registered" in native._state,
    }


def check_against_cpu() -> dict:
    """The same forward pass and gradient on the default device and on the CPU."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import numpy as np

    from pondlib import nn

    k1, k2, kx = jax.random.split(jax.random.PRNGKey(1), 3)
    net = nn.Sequential(nn.Linear(16, 64, key=k1), nn.LIF(64), nn.Linear(64, 10, key=k2), nn.LIF(10))
    x = jax.random.bernoulli(kx, 0.2, (8, 50, 16)).astype(jnp.float32)

    def run(device):
        n, xb = jax.device_put((net, x), device)
        out = eqx.filter_jit(lambda m, a: m(a)[0])(n, xb)
        g = eqx.filter_jit(eqx.filter_grad(lambda m, a: jnp.sum(m(a)[0] * jnp.arange(10.0))))(n, xb)
        return np.asarray(out), [np.asarray(v) for v in jax.tree_util.tree_leaves(eqx.filter(g, eqx.is_array))]

    out_d, g_d = run(jax.devices()[0])
    out_c, g_c = run(jax.devices("cpu")[0])
    rel = max(float(np.abs(a - b).max() / (np.abs(b).max() + 1e-12)) for a, b in zip(g_d, g_c))
    equal = float(np.mean(out_d == out_c))
    return {"spikes_equal_fraction": equal, "gradient_max_rel_diff": rel, "ok": equal >= 0.999 and rel <= 1e-3}


def measure(rounds: int, steps: int) -> dict:
    """The training-step and inference workloads of the two benchmarks, pondlib against Spyx."""
    sys.path.insert(0, str(HERE.parent))
    from benchmarks import inference, train_step

    train = train_step.run(["pondlib", "pondlib-xylo-aware", "spyx"], rounds=rounds, steps=steps)
    infer = inference.run(["pondlib", "pondlib-fused", "spyx"], [256], rounds=rounds, calls=steps, busy=False)
    infer = {k: v for k, v in infer.items() if k.startswith("feedforward")}
    for r in train.values():
        r.pop("times_s", None)
    ratios = {}
    if train.get("spyx", {}).get("status") == "ok":
        ratios["train_pondlib_vs_spyx"] = train["pondlib"]["steps_per_s"] / train["spyx"]["steps_per_s"]
    ff = infer.get("feedforward/B=256", {})
    if ff.get("spyx", {}).get("status") == "ok":
        for name in ("pondlib", "pondlib-fused"):
            if ff.get(name, {}).get("status") == "ok":
                ratios[f"inference_{name}_vs_spyx"] = ff[name]["vs_spyx"]
    return {"train_step": train, "inference": infer, "ratios": ratios}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10, help="timed steps (calls) per framework per round")
    ap.add_argument("--json", type=Path, default=RESULTS)
    ap.add_argument("--allow-cpu", action="store_true", help="run on the CPU when there is no GPU (a dry run)")
    args = ap.parse_args(argv)
    import jax

    found = gpus()
    if not found and not args.allow_cpu:
        print(
            f"gpu_check: no GPU found (JAX {jax.__version__}, default backend {jax.default_backend()!r}); nothing "
            "measured. On a machine with an NVIDIA GPU: pip install -e '.[cuda]' and run this script again."
        )
        return 0
    t0 = time.perf_counter()
    result = {
        "device": str(found[0].device_kind) if found else "cpu (dry run, --allow-cpu)",
        "gpus": len(found),
        "jax": jax.__version__,
        "platform": platform.platform(),
        "path": check_path(),
        "against_cpu": check_against_cpu(),
    }
    print("path:", json.dumps(result["path"]), flush=True)
    print("against the CPU:", json.dumps(result["against_cpu"]), flush=True)
    result.update(measure(args.rounds, args.steps))
    result["seconds"] = time.perf_counter() - t0
    print("ratios:", json.dumps(result["ratios"]))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.json} ({result['seconds']:.0f} s)")
    on_gpu_ok = not found or not (result["path"]["native_eligible"] or result["path"]["custom_call_in_train_step"])
    return 0 if on_gpu_ok and result["against_cpu"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
