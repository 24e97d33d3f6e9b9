"""One real network per numerics, cross-compiled for Cortex-M4F and RV32IMC and run under unicorn: the outputs and
every recorded state equal the host build bit for bit, and a positive instruction count per step is measured.

The networks are small but real: a float ``Sequential`` of ``Linear`` + ``LIF`` with a ``Residual`` block
(``float32``), a random valid ``XyloConfig`` (``xylo``), a mapped SpiNNaker2 SNN configuration and a
``dnn_mapper`` DNN configuration (``spinnaker2``), and a GEMM + RequantShift + integer LIF configuration
(``siracusa``). The host build is also checked against pondlib's own simulator, so the chain
pondlib = host = Cortex-M4F = RV32IMC holds for each. One zig cache is shared by the session, so compiler-rt is
built once per target (the dominant cost of the first build).
"""

from __future__ import annotations

import os

import jax
import numpy as np
import pytest

from pondlib import nn
from pondlib.codegen import compile_host, generate, run_host
from pondlib.codegen.cross import TARGETS, build_cross, run_cross
from pondlib.devices.siracusa import QLIF, QGemm, RequantShift, SiracusaConfig, SiracusaSim
from pondlib.devices.spinnaker2.dnn import MLP, dnn_mapper
from pondlib.devices.spinnaker2.report import configure, map_network
from pondlib.devices.spinnaker2.sim import DNNSim, SpiNNaker2Sim
from pondlib.devices.xylo import XyloSim
from pondlib.devices.xylo.config import validate_config
from tests.devices.xylo.xylosim_oracle import random_config as random_xylo
from tests.devices.xylo.xylosim_oracle import random_input as random_xylo_input

#: Instructions per step of each case and target, printed at the end of the module (a cost measure).
IPS: dict[tuple[str, str], float] = {}


@pytest.fixture(scope="session")
def zig_cache(tmp_path_factory):
    """One zig cache for the session (compiler-rt is built once per target, about 5 s each)."""
    return os.environ.get("ZIG_GLOBAL_CACHE_DIR") or str(tmp_path_factory.getbasetemp() / "zig-cache")


@pytest.fixture(scope="module", autouse=True)
def _print_instructions():
    yield
    if IPS:
        print("\ninstructions per step (emulated):")
        for (case, target), ips in sorted(IPS.items()):
            print(f"  {case:>16} {target:>10}: {ips:10,.0f}")


# -- the networks --------------------------------------------------------------------------------
def _float32():
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(3), 3)
    net = nn.Sequential(
        nn.Linear(4, 6, key=k1),
        nn.LIF(6, tau_mem=0.01, tau_syn=0.005),
        nn.Residual(nn.Linear(6, 6, key=k2), nn.LIF(6, tau_mem=0.02, tau_syn=0.004)),
        nn.Linear(6, 3, key=k3),
        nn.LIF(3, tau_mem=0.015, tau_syn=0.005),
    )
    x = (np.random.default_rng(0).random((2, 25, 4)) * 3).astype(np.float32)

    def reference(x):
        y, _, _ = net(x)
        return np.asarray(y, dtype=np.float32)

    return net, {}, x, reference


def _xylo():
    rng = np.random.default_rng(11)
    config = random_xylo(rng, max_hidden=12)
    assert validate_config(config) == []
    x = random_xylo_input(rng, 25, config.n_input, batch=2)

    def reference(x):
        return np.asarray(XyloSim.from_config(config).evolve(x)[0])

    return config, {}, np.minimum(x, 255), reference


def _spinnaker2_snn():
    k1, k2 = jax.random.split(jax.random.PRNGKey(5))
    net = nn.Sequential(
        nn.Linear(5, 8, weight=np.asarray(jax.random.uniform(k1, (5, 8), minval=-0.5, maxval=1.5))),
        nn.LIF(8, tau_mem=0.02, tau_syn=0.005),
        nn.Linear(8, 3, weight=np.asarray(jax.random.uniform(k2, (8, 3), minval=-0.5, maxval=1.5))),
        nn.LIF(3, tau_mem=0.02, tau_syn=0.005),
    )
    spec, _ = map_network(net, None, "lif_curr_exp")
    config = configure(spec, "test_cross_numerics")
    x = np.random.default_rng(1).poisson(0.6, size=(2, 25, 5)).astype(np.int64)

    def reference(x):
        return np.asarray(SpiNNaker2Sim.from_config(config).evolve(x)[0])

    return config, {}, x, reference


def _spinnaker2_dnn():
    rng = np.random.default_rng(5)
    mlp = MLP.from_arrays(
        [rng.normal(size=(10, 8)) * 0.3, rng.normal(size=(8, 4)) * 0.3],
        [rng.normal(size=8) * 0.1, rng.normal(size=4) * 0.1],
    )
    calib = rng.random((40, 10)) * 4
    config = dnn_mapper(mlp, calibration=calib)
    x = config.quantize_input(rng.random((12, 10)) * 4)[None]  # one "sample" of 12 independent steps

    def reference(x):
        return np.asarray(DNNSim.from_config(config).evolve(x[0])[0])[None]

    return config, {"record": True}, x, reference


def _siracusa():
    rng = np.random.default_rng(7)
    rq1 = RequantShift(mul=rng.integers(1, 40, 8), add=5, div=1 << 8, out_bits=8, signed=True)
    rq2 = RequantShift(mul=60, add=0, div=1 << 4, out_bits=8, signed=True)
    lif = dict(in_mul=48, add=0, shift=8, state_bits=16)
    layers = (
        QGemm("fc1", weight=rng.integers(-128, 128, (6, 8)), bias=rng.integers(-200, 200, 8), requant=rq1),
        QLIF("lif1", beta_mul=rng.integers(100, 250, 8), threshold=np.full(8, 20), **lif),
        QGemm("fc2", weight=rng.integers(-128, 128, (8, 3)), requant=rq2),
        QLIF("lif2", beta_mul=200, threshold=np.full(3, 10), reset="zero", **lif),
    )
    config = SiracusaConfig(layers=layers, n_input=6)
    x = rng.integers(-128, 128, (2, 25, 6))

    def reference(x):
        return np.asarray(SiracusaSim.from_config(config).evolve(x)[0])

    return config, {"record": True}, x, reference


CASES = {
    "float32": ("float32", _float32),
    "xylo": ("xylo", _xylo),
    "spinnaker2-snn": ("spinnaker2", _spinnaker2_snn),
    "spinnaker2-dnn": ("spinnaker2", _spinnaker2_dnn),
    "siracusa": ("siracusa", _siracusa),
}


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a.view(np.uint32) if a.dtype == np.float32 else a.astype(np.int64)


@pytest.mark.parametrize("case", list(CASES))
def test_cross_targets_equal_host_bit_for_bit(case, tmp_path, zig_cache):
    numerics, make = CASES[case]
    model, options, x, reference = make()
    prog = generate(model, numerics, name="net", **options)
    assert prog.io.states, "no recorded state to compare"
    y_host, rec_host = run_host(compile_host(prog, tmp_path / "host"), prog, x, record=True)
    # the host build is pondlib's model (the emitters' own tests cover this at length)
    assert np.array_equal(_bits(y_host), _bits(np.asarray(reference(x)).reshape(y_host.shape).astype(y_host.dtype)))
    assert np.count_nonzero(y_host) > 0, "silent outputs: the comparison would be vacuous"
    assert all(np.count_nonzero(v) for k, v in rec_host.items() if "spike" in k.lower())
    for target in TARGETS:
        build = build_cross(prog, target, tmp_path / target, cache_dir=zig_cache)
        assert build.flash_bytes > 0 and build.ram_bytes > 0
        y, rec, ips = run_cross(build, x, record=True)
        assert y.dtype == y_host.dtype and y.shape == y_host.shape
        assert y.tobytes() == y_host.tobytes(), (case, target)
        assert set(rec) == set(rec_host)
        for name, values in rec_host.items():
            assert rec[name].tobytes() == values.tobytes(), (case, target, name)
        assert ips > 0, (case, target)
        IPS[(case, target)] = ips
