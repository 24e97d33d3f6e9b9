"""GPU readiness without a GPU: the path choice under a GPU backend (monkeypatched), and the GPU check script.

The compiled CPU kernels (``pondlib.nn.native``) must stay out of every trace when JAX's default backend
is a GPU: the layers, a device-aware twin and the fused chain then lower to their XLA loops, and numba
is never asked to build the kernels. JAX only lowers for the CPU here, so the test makes
``jax.default_backend`` answer ``"gpu"`` and reads the lowered program: no ``pondlib_*`` custom call.
On the CPU backend the same programs do contain the kernels (where they are available), so the check
can fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

from pondlib import nn
from pondlib.devices import registry
from pondlib.nn import native

ROOT = Path(__file__).resolve().parents[1]


def _net():
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    return nn.Sequential(nn.Linear(8, 16, key=k1), nn.LIF(16), nn.Linear(16, 4, key=k2), nn.LIF(4))


def _programs(net) -> dict[str, str]:
    """The lowered training gradient and fused inference of ``net`` (fresh functions: no cached trace)."""
    x = jnp.ones((2, 10, net.size_in), jnp.float32)
    grad = jax.jit(jax.grad(lambda n, xb: jnp.sum(n(xb)[0])))
    infer = eqx.filter_jit(lambda n, xb: n(xb)[0])
    return {"grad": grad.lower(net, x).as_text(), "infer": infer.lower(net, x).as_text()}


def _twin():
    """A device-aware twin of the first registered device that has one (through the registry)."""
    d = next(d for d in registry.devices() if d.has_twin)
    net = _net()
    return d.twin(net, d.map(net, d.limits(d.deploy_settings.limits)))


def test_cpu_backend_uses_the_kernels():
    assert native.cpu_backend() == (jax.default_backend() == "cpu")
    if not native.available():
        pytest.skip("the numba kernels are not available here (PONDLIB_NATIVE=0 or no FFI)")
    assert "pondlib_lif" in _programs(_net())["grad"]  # (whether fused inference calls a kernel is fused.py's choice)


def test_gpu_backend_takes_the_xla_loops(monkeypatch):
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")

    def no_build():
        raise AssertionError("the kernels were asked for on a GPU backend")

    monkeypatch.setattr(native, "available", no_build)
    assert not native.cpu_backend()
    assert native.eligible(jnp.ones(3, jnp.float32)) is False
    for name, text in _programs(_net()).items():
        assert "pondlib_" not in text, name
    twin = _twin()
    x = jnp.ones((2, 10, twin.size_in), jnp.float32)
    hlo = jax.jit(jax.grad(lambda n, xb: jnp.sum(n(xb)[0]))).lower(twin, x).as_text()
    assert "pondlib_" not in hlo


def test_gpu_check_exits_cleanly_without_a_gpu(tmp_path):
    out = tmp_path / "gpu.json"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--json", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "no GPU found" in proc.stdout and "nothing measured" in proc.stdout
    assert not out.exists()
