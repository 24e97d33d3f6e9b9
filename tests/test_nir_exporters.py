"""Exporter conventions of the NIR importer (issue 34, item 3): snnTorch's reset rule, Lava's one-step
synaptic delay and its fixed-point CUBA, each against trajectories derived by hand from the published
update rules (snnTorch ``Synaptic.forward`` with ``reset_delay=False``; Lava's bit-accurate LIF model),
and against an independent numpy simulation of snnTorch's rule on the NIR paper's Braille network."""

from __future__ import annotations

from pathlib import Path

import jax.numpy as jnp
import nir
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.errors import GraphError, NIRError
from pondlib.interop.nir import load_nir
from pondlib.interop.nir.exporters import EXPORTER_RULES, LavaCubaLIF, SnnTorchNeuron
from pondlib.nn.neurons import NIRLIF, CubaLIF
from tests.strategies import assert_pond_error, bad_positive_floats, bad_types

DT = 1e-3
BRAILLE = Path(__file__).resolve().parent / "data" / "nir" / "braille"
SETTINGS = settings(max_examples=15, deadline=None)


def one_neuron(reset: str) -> CubaLIF:
    """``I = x`` (tau_syn = dt), ``beta = 0.5`` (tau_mem = 2 dt), gain 1 (r = tau_mem/dt), theta = 1."""
    return CubaLIF(1, tau_syn=DT, tau_mem=2 * DT, r=2.0, v_leak=0.0, w_in=1.0, v_threshold=1.0, dt=DT, reset=reset)


def chain_graph(n_in: int = 1) -> nir.NIRGraph:
    """Input -> Linear(1) -> CubaLIF(1) in snnTorch's dt_scaled convention (the neuron above)."""
    nodes = {
        "input": nir.Input(np.array([n_in])),
        "w": nir.Linear(np.ones((1, n_in))),
        "lif": nir.CubaLIF(
            tau_syn=np.array([DT]),
            tau_mem=np.array([2 * DT]),
            r=np.array([2.0]),
            v_leak=np.array([0.0]),
            v_threshold=np.array([1.0]),
            w_in=np.array([1.0]),
        ),
        "output": nir.Output(np.array([1])),
    }
    return nir.NIRGraph(nodes=nodes, edges=[("input", "w"), ("w", "lif"), ("lif", "output")])


# -- snnTorch ---------------------------------------------------------------------------------------
def leaky_neuron(reset: str) -> NIRLIF:
    """snnTorch's ``Leaky`` as NIR writes it: ``LIF`` with tau = 2 dt, r = tau/dt (``v = 0.5 v + x``)."""
    return NIRLIF(1, tau=2 * DT, r=2.0, v_leak=0.0, v_threshold=1.0, dt=DT, reset=reset)


@pytest.mark.parametrize("build", [one_neuron, leaky_neuron], ids=["Synaptic", "Leaky"])
def test_snntorch_subtract_rule_by_hand(build):
    """x = 5, 0, 0, 0. t0: u = 5 > 1, stored m = 4. t1: r = H(4 - 1) = 1, u = 2 + 0 - 1 = 1 (not > 1),
    m = 1 + 1 = 2. t2: r = 1, u = 1 - 1 = 0, m = 1. t3: r = H(1 - 1) = 0, u = 0.5 = m.
    A plain subtract reset spikes at t1 too (v = 0.5 * 4 = 2 > 1)."""
    x = jnp.array([[5.0], [0.0], [0.0], [0.0]])
    z, _, rec = SnnTorchNeuron(build("subtract"))(x, record=True)
    assert z[:, 0].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert rec["vmem"][:, 0].tolist() == [5.0, 1.0, 0.0, 0.5]
    assert rec["vmem_reset"][:, 0].tolist() == [4.0, 2.0, 1.0, 0.5]
    plain = build("subtract")(x)[0]
    assert plain[:, 0].tolist() == [1.0, 1.0, 0.0, 0.0]


def test_snntorch_needs_two_thresholds_while_stored_membrane_is_above():
    """x = 5, 0.2: t1 r = 1, u = 0.5 * 4 + 0.2 - 1 = 1.2 > 1 (beta m + I = 2.2 > 2 theta): spike, m = 1.2."""
    z, _, rec = SnnTorchNeuron(one_neuron("subtract"))(jnp.array([[5.0], [0.25]]), record=True)
    assert z[:, 0].tolist() == [1.0, 1.0] and rec["vmem_reset"][:, 0].tolist() == [4.0, 1.25]


def test_snntorch_zero_rule_by_hand():
    """x = 5, 3, 0: t0 spike, m = 5 - 5 = 0; t1 r = 0, u = 3 > 1 spike, m = 0; t2 u = 0."""
    z, _, rec = SnnTorchNeuron(one_neuron("zero"))(jnp.array([[5.0], [3.0], [0.0]]), record=True)
    assert z[:, 0].tolist() == [1.0, 1.0, 0.0] and rec["vmem_reset"][:, 0].tolist() == [0.0, 0.0, 0.0]


def test_load_nir_snntorch_convention_applies_the_rule():
    x = np.array([[5.0], [0.0], [0.0], [0.0]], np.float32)
    got = load_nir(chain_graph(), dt=None, convention="snntorch")
    assert (got.exporter, got.reset, got.convention, got.dt) == ("snntorch", "subtract", "dt_scaled", DT)
    assert np.asarray(got.module(x)[0])[:, 0].tolist() == [1.0, 0.0, 0.0, 0.0]
    before = load_nir(chain_graph(), dt=None, reset="subtract")
    assert before.exporter is None and np.asarray(before.module(x)[0])[:, 0].tolist() == [1.0, 1.0, 0.0, 0.0]


def _braille_oracle(path: Path, x: np.ndarray) -> np.ndarray:
    """snnTorch's subtract rule for the Braille network, from the file's parameters (float32)."""
    g = nir.read(str(path))

    def aff(k):
        w = np.asarray(g.nodes[k].weight, np.float32)
        return w, np.asarray(getattr(g.nodes[k], "bias", np.zeros(w.shape[0])), np.float32).reshape(-1)

    def cuba(k):
        n = g.nodes[k]
        thr = np.asarray(n.v_threshold, np.float32).reshape(-1)
        assert not np.any(n.v_leak)  # no leak term in this file
        return (1 - DT_B / np.asarray(n.tau_syn, np.float32)), (1 - DT_B / np.asarray(n.tau_mem, np.float32)), thr

    (w1, b1), (wr, br), (w2, b2) = aff("fc1"), aff("lif1.w_rec"), aff("fc2")
    cells = [cuba("lif1.lif"), cuba("lif2")]
    syn = [np.zeros((x.shape[0], c[2].size), np.float32) for c in cells]
    mem = [s.copy() for s in syn]
    spk = [s.copy() for s in syn]
    out = []
    for t in range(x.shape[1]):
        for i, (alpha, beta, thr) in enumerate(cells):
            drive = x[:, t] @ w1.T + b1 + spk[0] @ wr.T + br if i == 0 else spk[0] @ w2.T + b2
            r = (mem[i] > thr).astype(np.float32)
            syn[i] = alpha * syn[i] + drive
            u = beta * mem[i] + syn[i] - r * thr
            spk[i] = (u > thr).astype(np.float32)
            mem[i] = u - (spk[i] - r) * thr
        out.append(spk[1])
    return np.stack(out, axis=1)


DT_B = np.float32(1e-4)


def test_braille_subtract_runs_spike_for_spike_like_snntorch():
    path = BRAILLE / "braille_noDelay_noBias_subtract.nir"
    x = (np.random.default_rng(1).random((4, 48, 12)) < 0.15).astype(np.float32)
    want = _braille_oracle(path, x)
    got = np.asarray(load_nir(path, dt=None, convention="snntorch").module(x)[0])
    assert want.sum() > 0
    np.testing.assert_array_equal(got, want)
    # the plain subtract reset is a different network: benchmarks/nir_exporters.py measures how different


# -- Lava ---------------------------------------------------------------------------------------------
def test_lava_delays_every_feed_forward_weight_by_one_step():
    x = np.array([[5.0], [0.0], [3.0], [0.0], [0.0]], np.float32)
    plain = np.asarray(load_nir(chain_graph(), dt=None, reset="zero").module(x)[0])
    lava = load_nir(chain_graph(), dt=None, convention="lava")
    assert lava.reset == "zero" and lava.exporter == "lava"
    got = np.asarray(lava.module(x)[0])
    assert plain[:, 0].tolist() == [1.0, 0.0, 1.0, 0.0, 0.0]
    assert got[:, 0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]


def test_lava_fixed_point_cuba_by_hand():
    """du = 1024 (factor 4096 - 1025 = 3071), dv = 2048, vth = 9 (576 after << 6), input 4, 4, 0, 0.
    t0: u = 4 << 6 = 256, v = 256. t1: u = trunc(256 * 3071 / 4096) + 256 = 191 + 256 = 447,
    v = 128 + 447 = 575 (not > 576). t2: u = trunc(447 * 3071 / 4096) = 335, v = 287 + 335 = 622 > 576:
    spike, v = 0. t3: u = trunc(335 * 3071 / 4096) = 251, v = 251."""
    m = LavaCubaLIF(1024, 2048, 9, 0)
    z, _, rec = m(jnp.array([[4.0], [4.0], [0.0], [0.0]]), record=True)
    assert z[:, 0].tolist() == [0.0, 0.0, 1.0, 0.0]
    assert rec["isyn"][:, 0].tolist() == [256, 447, 335, 251]
    assert rec["vmem"][:, 0].tolist() == [256, 575, 622, 251]


def test_lava_fixed_point_truncates_toward_zero_and_wraps_24_bits():
    m = LavaCubaLIF(1024, 2048, 9, 0)
    rec = m(jnp.array([[-4.0], [0.0]]), record=True)[2]
    # trunc(-256 * 3071 / 4096) = -191 (floor would give -192); trunc(-256 * 2048 / 4096) = -128
    assert rec["isyn"][:, 0].tolist() == [-256, -191] and rec["vmem"][:, 0].tolist() == [-256, -319]
    rec = m(jnp.array([[2.0**17 + 1]]), record=True)[2]  # 2^23 + 64 wraps to -2^23 + 64
    assert rec["isyn"][0, 0] == -(2**23) + 64


def test_load_nir_lava_integer_numerics():
    """tau_syn = dt: du = 4095 (no memory); tau_mem = 2 dt: dv = 2048; vth = 1 (64); weight 1 -> a = x.
    x = 2, 0, 0: t1 (one step late): u = 128, v = 128 > 64 spike; t2: u = 0, v = 0."""
    got = load_nir(chain_graph(), dt=None, convention="lava", numerics="int")
    assert got.numerics == "int"
    y = np.asarray(got.module(np.array([[2.0], [0.0], [0.0]], np.float32))[0])
    assert y[:, 0].tolist() == [0.0, 1.0, 0.0]


# -- the table and bad input --------------------------------------------------------------------------
def test_every_exporter_convention_loads():
    for name, rule in EXPORTER_RULES.items():
        got = load_nir(chain_graph(), dt=DT, convention=name)
        assert got.exporter == name and got.reset == rule.reset


@given(value=st.one_of(bad_types(), st.sampled_from(["integer", "INT", "fixed"])))
@SETTINGS
def test_bad_numerics_refused(value):
    assert_pond_error(load_nir, chain_graph(), dt=None, convention="lava", numerics=value, error=NIRError)


@given(value=bad_positive_floats())
@SETTINGS
def test_bad_weight_scale_refused(value):
    err = assert_pond_error(
        load_nir, chain_graph(), dt=None, convention="lava", numerics="int", weight_scale=value, error=NIRError
    )
    assert "weight_scale" in str(err)


@pytest.mark.parametrize("convention", ["snntorch", "auto", "norse"])
def test_integer_numerics_only_for_lava(convention):
    err = assert_pond_error(
        load_nir, chain_graph(), dt=DT, convention=convention, numerics="int", match="integer", error=NIRError
    )
    assert "lava" in str(err)


BAD_LAVA = {
    "du": [-1, 4096, 0.5, np.nan, np.inf, 1e30],
    "dv": [-1, 4097, 2.5, np.nan],
    "vth": [-1, 1 << 17, 0.25, -np.inf],
    "bias": [1 << 16, -(1 << 16) - 1, 0.5, np.nan],
}


@given(
    field=st.sampled_from(sorted(BAD_LAVA)),
    data=st.data(),
)
@SETTINGS
def test_lava_neuron_bad_parameters_named(field, data):
    value = data.draw(st.one_of(st.sampled_from(BAD_LAVA[field]), st.text(max_size=3), st.none(), st.booleans()))
    args = {"du": 1024, "dv": 2048, "vth": 9, "bias": 0, field: value}
    err = assert_pond_error(LavaCubaLIF, error=NIRError, **args)
    assert field in str(err)


def test_snntorch_rule_refuses_a_neuron_without_that_reset():
    base = CubaLIF(1, tau_syn=DT, tau_mem=2 * DT, v_threshold=1.0, dt=DT, reset="v_reset")
    assert_pond_error(SnnTorchNeuron, base, match="reset", error=GraphError)
    with pytest.raises(GraphError, match="map"):
        SnnTorchNeuron(one_neuron("subtract")).as_graph()


LIF_DIR = Path(__file__).resolve().parent / "data" / "nir" / "lif"


@pytest.mark.parametrize("name, convention", [("lif_norse.nir", "norse"), ("lif_rockpool.nir", "rockpool")])
def test_the_papers_lif_neuron_under_its_exporters_convention(name, convention):
    """Both exports of the NIR paper's LIF reproduce the published Norse trace's spikes."""
    x = np.loadtxt(LIF_DIR / "lif_norse.csv", delimiter=",")[:, :1].astype(np.float32)
    got = load_nir(LIF_DIR / name, dt=1e-4, convention=convention)
    assert got.exporter == convention and got.reset == EXPORTER_RULES[convention].reset
    assert np.flatnonzero(np.asarray(got.module(x)[0]).reshape(-1)).tolist() == [460, 510, 710, 760]


@given(bad=st.one_of(bad_types(), st.integers(), st.floats()))
@SETTINGS
def test_snntorch_rule_refuses_what_is_not_a_spiking_neuron(bad):
    assert_pond_error(SnnTorchNeuron, bad, match="snnTorch", error=GraphError)


def _lava_reference(du, dv, vth, bias, a):
    """Lava's bit-accurate LIF step as its model states it, in int64 (no overflow tricks)."""
    u = v = np.int64(0)
    lim = 1 << 23
    out = []
    for at in a:
        prod = u * (4096 - du - 1)
        u = np.sign(prod) * (abs(prod) >> 12) + (int(at) << 6)
        u = u - 2 * lim if u > lim else (u + 2 * lim if u <= -lim else u)
        prod = v * (4096 - dv)
        v = np.clip(np.sign(prod) * (abs(prod) >> 12) + u + (bias << 6), -lim + 1, lim - 1)
        out.append((int(u), int(v), int(v > (vth << 6))))
        v = 0 if v > (vth << 6) else v
    return out


@given(
    du=st.integers(0, 4095),
    dv=st.integers(0, 4096),
    vth=st.integers(0, (1 << 17) - 1),
    bias=st.integers(-(1 << 10), 1 << 10),
    a=st.lists(st.integers(-(1 << 17), 1 << 17), min_size=12, max_size=12),  # one shape: one compilation
)
@SETTINGS
def test_lava_fixed_point_equals_the_int64_reference(du, dv, vth, bias, a):
    """The int32 halves in LavaCubaLIF give exactly Lava's int64 products, wraps and clips included."""
    z, _, rec = LavaCubaLIF(du, dv, vth, bias)(jnp.asarray(np.array(a, np.float32)[:, None]), record=True)
    want = _lava_reference(du, dv, vth, bias, a)
    got = list(zip(rec["isyn"][:, 0].tolist(), rec["vmem"][:, 0].tolist(), z[:, 0].astype(int).tolist()))
    assert got == want
