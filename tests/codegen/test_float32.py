"""float32 C code generation: the generated C equals pondlib's float model step by step.

Every network is compiled with the host flags (``-Werror -ffp-contract=off``) and run on the same inputs
as pondlib. At every step the spikes must be identical and every recorded membrane and current within
1e-5 relative (relative to the layer's largest magnitude, so values near 0 are not over-weighted). A
spike that differs is accepted only when pondlib's membrane before reset lies within float32 rounding
(1e-5 relative) of a multiple of the threshold (the C's dot products add in a different order than XLA's);
the sample's later steps are then not compared (the trajectories have legitimately diverged).
The counts of such mismatches are kept in ``STATS`` (zero in every run so far).
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.cli.demo_network import demo_network
from pondlib.codegen import compile_host, generate, run_host
from pondlib.codegen.float32 import SUPPORTED, buffer_name, emit
from pondlib.devices.xylo import XyloLIF
from pondlib.errors import CodegenError
from pondlib.nn import layers, neurons
from pondlib.nn.graphnet import GraphNetwork

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from golden import CASES, build_float_network, load_golden  # noqa: E402

NIR = Path(__file__).resolve().parents[1] / "data" / "nir"
RTOL = 1e-5
STATS: dict[str, dict] = {}


# -- the comparison ------------------------------------------------------------------------------
def _spiking(model, prefix=""):
    """(record prefix, module) of every spiking layer, in pondlib's record naming."""
    if isinstance(model, nn.Sequential):
        for i, m in enumerate(model.layers):
            yield from _spiking(m, f"{prefix}{i}_{type(m).__name__}/")
    elif isinstance(model, nn.Residual):
        yield from _spiking(model.block, prefix)
    elif isinstance(model, GraphNetwork):
        for n, m in model.modules.items():
            yield from _spiking(m, f"{prefix}{n}/")
    elif isinstance(model, nn.LIF) or getattr(model, "v_threshold", None) is not None:
        yield prefix, model


def _explained(model, prefix, rec, b, t, n):
    """pondlib's membrane before reset at (b, t, n) is within float32 rounding of a spike boundary."""
    if isinstance(model, nn.LIF):
        thr = float(np.asarray(model.threshold)[n])
        pre = float(rec[prefix + "vmem"][b, t, n]) + float(rec[prefix + "spikes"][b, t, n]) * thr
        u = pre / thr
        k = max(1.0, round(u))
        return abs(u - k) <= RTOL * max(1.0, k)
    thr = float(np.asarray(model.v_threshold).reshape(-1)[n])
    pre = float(rec[prefix + "vmem"][b, t, n])
    return abs(pre - thr) <= RTOL * max(abs(thr), abs(pre), 1e-30)


def check_parity(net, x, tmp_path, label, name="net"):
    """Run the C and pondlib on ``x`` (B, T, N_in); assert parity (module docstring); return the stats."""
    prog = emit(net, name=name)
    exe = compile_host(prog, tmp_path / label)
    y_c, rec_c = run_host(exe, prog, x, record=True)
    y_r, _, rec_r = net(x, record=True)
    y_r = np.asarray(y_r)
    rec_r = {k: np.asarray(v).reshape(v.shape[0], v.shape[1], -1) for k, v in rec_r.items()}
    B, T = x.shape[:2]
    by_buffer = {buffer_name(k): k for k in rec_r}
    compared = [s.name for s in prog.io.states if s.name in by_buffer]
    assert compared, "no recorded state to compare"
    spikes = {p: m for p, m in _spiking(net)}
    # first step of every sample at which some spike differs
    horizon = np.full(B, T)
    mismatches = 0
    for prefix, m in spikes.items():
        key = prefix + "spikes"
        diff = rec_c[buffer_name(key)] != rec_r[key]
        for b in range(B):
            ts = np.flatnonzero(diff[b].any(-1))
            if ts.size and ts[0] <= horizon[b]:
                t0 = int(ts[0])
                for n in np.flatnonzero(diff[b, t0]):
                    assert _explained(m, prefix, rec_r, b, t0, n), (label, key, b, t0, n)
                    mismatches += 1
                horizon[b] = t0
    max_rel = 0.0
    for s in compared:
        key = by_buffer[s]
        c, r = rec_c[s].astype(np.float64), rec_r[key].astype(np.float64)
        scale = max(float(np.max(np.abs(r))), 1e-30)
        for b in range(B):
            h = horizon[b]
            if key.endswith("spikes"):
                np.testing.assert_array_equal(c[b, :h], r[b, :h], err_msg=f"{label} {key}")
            else:
                err = np.max(np.abs(c[b, :h] - r[b, :h]), initial=0.0) / scale
                assert err <= RTOL, (label, key, b, err)
                max_rel = max(max_rel, err)
    for b in range(B):
        h = horizon[b]
        np.testing.assert_allclose(y_c[b, :h], y_r[b, :h], rtol=RTOL, atol=RTOL * np.max(np.abs(y_r)) + 1e-30)
    n_spikes = int(sum(rec_r[p + "spikes"].sum() for p in spikes))
    STATS[label] = dict(steps=B * T, mismatches=mismatches, max_rel=max_rel, spikes=n_spikes, memory=prog.memory)
    return STATS[label]


def _rand(shape, scale=1.0, seed=0):
    return (np.random.default_rng(seed).random(shape) * scale).astype(np.float32)


def _spk(shape, p, seed=0):
    return (np.random.default_rng(seed).random(shape) < p).astype(np.float32)


# -- priority 1: Linear + LIF in Sequential --------------------------------------------------------
def test_demo_network_parity(tmp_path):
    net = demo_network(64, key=jax.random.PRNGKey(3))
    x = _rand((16, 12, 16), 4.0, seed=1)  # digits-like pixel intensities, T = 12 as in `pond demo`
    s = check_parity(net, x, tmp_path, "demo", name="digits")
    assert s["spikes"] > 100 and s["mismatches"] == 0
    # the digits network's memory: weights in flash, state + one activation arena in RAM
    mem = s["memory"]
    assert mem.flash_bytes == 4 * (16 * 64 + 64 * 10)
    assert mem.state_bytes == 4 * 2 * (64 + 10) + (64 + 10)  # isyn, vmem in float32; spike counts (cap 31, 1) one byte
    assert mem.scratch_bytes < mem.scratch_unshared_bytes or mem.scratch_unshared_bytes <= 8


@pytest.mark.parametrize("case", CASES)
def test_golden_float_networks_parity(case, tmp_path):
    g = load_golden(case)
    net = build_float_network(g)
    x = g["input_raster"].astype(np.float32)[None]
    s = check_parity(net, x, tmp_path, f"golden_{case}")
    assert s["spikes"] > 0


def test_recurrent_multisynapse_biased_lif(tmp_path):
    k = jax.random.split(jax.random.PRNGKey(5), 4)
    n = 12
    net = nn.Sequential(
        nn.Linear(6, 2 * n, key=k[0], bias=np.linspace(-0.1, 0.2, 2 * n)),
        nn.LIF(
            (2 * n, n),
            tau_mem=np.linspace(0.005, 0.04, n),
            tau_syn=[0.002, 0.01],
            threshold=np.linspace(0.3, 1.2, n),
            bias=0.05,
            has_rec=True,
            key=k[1],
            max_spikes_per_dt=3,
        ),
        nn.Linear(n, 3, key=k[2]),
        nn.LIF((3, 3), has_rec=True, key=k[3], max_spikes_per_dt=1, threshold=0.2),
    )
    s = check_parity(net, _rand((6, 60, 6), 3.0, seed=2), tmp_path, "recurrent")
    assert s["spikes"] > 50


def test_tutorial_network_with_residual(tmp_path):
    k = jax.random.split(jax.random.PRNGKey(0), 3)
    net = nn.Sequential(  # tutorials/01_build_network.py
        nn.Linear(16, 32, key=k[0]),
        nn.LIF(32, tau_mem=0.02, tau_syn=0.005, threshold=0.5, max_spikes_per_dt=31),
        nn.Residual(nn.Linear(32, 32, key=k[1]), nn.LIF(32, tau_mem=0.02, tau_syn=0.005, threshold=0.5)),
        nn.Linear(32, 10, key=k[2]),
        nn.LIF(10, max_spikes_per_dt=1),
    )
    s = check_parity(net, _spk((8, 40, 16), 0.4, seed=3) * 3, tmp_path, "tutorial01")
    assert s["spikes"] > 50


# -- priority 2: NIR neurons, Scale, Delay, Flatten, Threshold -------------------------------------
def test_nir_neurons_and_layers(tmp_path):
    key = jax.random.split(jax.random.PRNGKey(7), 4)
    n = 8
    net = nn.Sequential(
        layers.Flatten((2, 5), start_dim=0),
        nn.Linear(10, n, key=key[0]),
        layers.Scale(n, scale=np.linspace(0.5, 2.0, n)),
        neurons.CubaLIF(n, tau_mem=0.02, tau_syn=0.005, r=2.0, v_leak=0.1, v_threshold=0.3, dt=1e-3),
        layers.Delay(n, delay=np.arange(n) % 3 * 1e-3, dt=1e-3),
        nn.Linear(n, n, key=key[1]),
        neurons.NIRLIF(n, tau=0.01, r=3.0, v_leak=0.0, v_threshold=0.2, dt=1e-3, reset="subtract", decay="exp"),
        nn.Residual(nn.Linear(n, n, key=key[2]), neurons.IF(n, r=1.5, v_threshold=0.5, reset="zero")),
        nn.Linear(n, n, key=key[3]),
        neurons.Threshold(n, threshold=0.1),
        neurons.Integrator(n, r=0.5),
        neurons.LI(n, tau=0.004, r=1.0, v_leak=0.2, dt=1e-3),
        neurons.CubaLI(n, tau_mem=0.02, tau_syn=0.01, r=1.0, v_leak=0.0, dt=1e-3, decay="exp"),
    )
    s = check_parity(net, _rand((4, 50, 10), 2.0, seed=4), tmp_path, "nir_layers")
    assert s["spikes"] > 20


# -- priority 3: the shared NIR files --------------------------------------------------------------
@pytest.mark.parametrize(
    "path, dt",
    [
        ("braille/braille_noDelay_bias_zero.nir", None),
        ("braille/braille_noDelay_bias_zero_subgraph.nir", None),
        ("braille/braille_noDelay_noBias_subtract.nir", None),
        ("lif/lif_norse.nir", 1e-4),
        ("lif/lif_rockpool.nir", None),
    ],
)
def test_nir_files_parity(path, dt, tmp_path):
    from pondlib.interop.nir import load_nir

    net = load_nir(NIR / path, dt=dt).module
    if path.startswith("lif/"):
        ref = np.loadtxt(NIR / "lif" / "lif_norse.csv", delimiter=",")
        x = ref[None, :, :1].astype(np.float32)
    else:
        x = _spk((4, 100, net.size_in), 0.3, seed=6)
    s = check_parity(net, x, tmp_path, Path(path).stem)
    assert s["spikes"] > 0


def test_cnn_file_parity(tmp_path):
    from pondlib.interop.nir import load_nir

    net = load_nir(NIR / "cnn" / "cnn_sinabs.nir", dt=None).module
    s = check_parity(net, _spk((2, 8, net.size_in), 0.2, seed=8), tmp_path, "cnn_sinabs")
    assert s["spikes"] > 0


# -- priority 4: convolution and pooling -----------------------------------------------------------
def test_conv_and_pooling(tmp_path):
    rng = np.random.default_rng(9)
    net = nn.Sequential(
        layers.Conv2d(
            (2, 8, 8), weight=rng.normal(size=(4, 1, 3, 3)), bias=rng.normal(size=4) * 0.1, padding=1, groups=2
        ),
        neurons.IF(4 * 8 * 8, v_threshold=0.8, reset="subtract"),
        layers.SumPool2d((4, 8, 8), kernel_size=2),
        layers.Conv2d((4, 4, 4), weight=rng.normal(size=(3, 4, 2, 2)) * 0.5, stride=2, dilation=1),
        neurons.IF(12, v_threshold=0.5),
        layers.Flatten((3, 2, 2)),
        nn.Linear(12, 3 * 5, key=jax.random.PRNGKey(1)),
        layers.Conv1d((3, 5), weight=rng.normal(size=(2, 3, 3)), padding=1, dilation=1, stride=1),
        layers.AvgPool2d((2, 1, 5), kernel_size=(1, 2), stride=(1, 1)),
        neurons.LI(8, tau=0.01, r=1.0, v_leak=0.0, dt=1e-3),
    )
    s = check_parity(net, _spk((3, 30, 128), 0.3, seed=10), tmp_path, "conv_pool")
    assert s["spikes"] > 20


# -- bad input -------------------------------------------------------------------------------------
def test_unsupported_module_names_type_and_supported_list():
    xylo = XyloLIF(3, 3, weight=np.eye(3))
    with pytest.raises(CodegenError, match="XyloLIF") as err:
        emit(nn.Sequential(nn.LIF(3), xylo))
    assert all(s in str(err.value) for s in SUPPORTED)


def test_bad_name_and_options():
    net = nn.Sequential(nn.Linear(2, 2, key=jax.random.PRNGKey(0)), nn.LIF(2))
    with pytest.raises(CodegenError):
        emit(net, name="2bad")
    with pytest.raises(CodegenError):
        emit(net, name="int")
    with pytest.raises(CodegenError, match="option"):
        emit(net, fast=True)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.none(),
        st.integers(),
        st.floats(allow_nan=True),
        st.text(max_size=5),
        st.lists(st.integers(), max_size=3),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
        st.just(np.zeros((2, 2))),
        st.just(object()),
        st.just(nn.LIF),
    )
)
def test_bad_models_raise_codegen_error(model):
    with pytest.raises(CodegenError):
        generate(model, "float32")


def test_generated_c_needs_no_libm(tmp_path):
    net = demo_network(8, key=jax.random.PRNGKey(0))
    src = emit(net, name="d").sources["d.c"]
    assert "math.h" not in src and "exp" not in src
