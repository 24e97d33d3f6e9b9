"""NIR import/export: real files from other frameworks, conventions, tolerant reading, round trips."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import nir
import numpy as np
import pytest

from pondlib import nn
from pondlib.devices.xylo.mapper import mapper
from pondlib.errors import ConstraintError, NIRError
from pondlib.interop.nir import EXPORTERS, IMPORTERS, from_nir, load_nir, to_nir, write
from pondlib.nn import layers, neurons
from pondlib.nn.graphnet import GraphNetwork

DATA = Path(__file__).resolve().parents[1] / "data" / "nir"
BRAILLE = [
    "braille_noDelay_bias_zero.nir",
    "braille_noDelay_bias_zero_subgraph.nir",
    "braille_noDelay_noBias_subtract.nir",
]


def _spikes(shape, p, seed):
    return (np.random.default_rng(seed).random(shape) < p).astype(np.float32)


# -- acceptance on files written by other frameworks ---------------------------------------------
def test_norse_lif_reproduces_trace():
    ref = np.loadtxt(DATA / "lif" / "lif_norse.csv", delimiter=",")
    imp = load_nir(DATA / "lif" / "lif_norse.nir", dt=1e-4)
    assert imp.convention == "unit"
    out, _, rec = imp.module(ref[:, :1], record=True)
    v = np.asarray(rec["1_NIRLIF/vmem_reset"][:, 0], dtype=np.float64)
    nz = ref[:, 1] != 0
    assert np.max(np.abs(v[nz] - ref[nz, 1]) / np.abs(ref[nz, 1])) < 1e-5
    assert np.all(v[~nz] == 0)
    assert np.flatnonzero(np.asarray(out[:, 0])).tolist() == [460, 510, 710, 760]
    # the same file with another dt is another network (the README's 34 spikes)
    assert int(from_nir(DATA / "lif" / "lif_norse.nir", dt=1e-3)(ref[:, :1])[0].sum()) == 34


def test_norse_file_needs_dt():
    with pytest.raises(NIRError, match="dt is required"):
        from_nir(DATA / "lif" / "lif_norse.nir", dt=None)


@pytest.mark.parametrize("name", BRAILLE)
def test_braille_loads_and_runs(name):
    imp = load_nir(DATA / "braille" / name, dt=None)
    assert imp.convention == "dt_scaled" and imp.dt == pytest.approx(1e-4)
    assert isinstance(imp.module, GraphNetwork) and imp.module.recurrent
    y, _, _ = imp.module(_spikes((2, 30, 12), 0.3, 0))
    assert y.shape == (2, 30, 7)
    assert set(np.unique(np.asarray(y))) <= {0.0, 1.0}


def test_braille_nested_equals_flat():
    x = _spikes((2, 40, 12), 0.3, 1)
    flat = from_nir(DATA / "braille" / BRAILLE[0], dt=1e-4)
    nested = from_nir(DATA / "braille" / BRAILLE[1], dt=1e-4)
    assert bool(jnp.all(flat(x)[0] == nested(x)[0]))
    # the recurrent Affine (weights and bias) is used: zeroing it changes the output
    mods = dict(flat.modules)
    rec = mods["lif1.w_rec"]
    mods["lif1.w_rec"] = nn.Linear(38, 38, weight=0 * rec.weight, bias=0 * rec.bias)
    cut = GraphNetwork(mods, flat.edges, input_shape=flat.input_shape)
    assert not bool(jnp.all(cut(x)[0] == flat(x)[0]))


def test_braille_to_xylo_mapper():
    # reset to v_reset (the file's standard meaning): one neuron_model per CubaLIF layer, saying how to
    # import it, plus the biases -- no follow-on topology violations
    with pytest.raises(ConstraintError) as err:
        mapper(from_nir(DATA / "braille" / BRAILLE[0], dt=None))
    assert set(err.value.rules) == {"linear_bias", "neuron_model"}
    assert err.value.rules.count("neuron_model") == 2
    assert "reset to v_reset" in str(err.value) and "--reset subtract" in str(err.value)
    # imported with reset by subtraction the neurons are exact pondlib LIFs: only the biases remain
    with pytest.raises(ConstraintError) as err:
        mapper(from_nir(DATA / "braille" / BRAILLE[0], dt=None, reset="subtract"))
    assert err.value.rules == ["linear_bias"] * 3
    # the bias-free network: the output synapse (tau_syn 0.18 ms at dt 0.1 ms) is too fast for Xylo
    with pytest.raises(ConstraintError) as err:
        mapper(from_nir(DATA / "braille" / BRAILLE[2], dt=None, reset="subtract"))
    assert err.value.rules == ["dash_zero"]


def test_cnn_sinabs_loads_and_runs():
    imp = load_nir(DATA / "cnn" / "cnn_sinabs.nir", dt=None)
    net = imp.module
    assert net.input_shape == (2, 34, 34)
    y, _, _ = net(_spikes((1, 3, 2, 34, 34), 0.2, 2))
    assert y.shape == (1, 3, 10)


def test_rockpool_tolerant_read():
    imp = load_nir(DATA / "lif" / "lif_rockpool.nir", dt=None)
    assert imp.convention == "rockpool" and imp.dt == pytest.approx(1e-4)
    assert any("declared shape [1, 1, 1]" in n for n in imp.notes)
    ref = np.loadtxt(DATA / "lif" / "lif_norse.csv", delimiter=",")
    assert np.flatnonzero(np.asarray(imp.module(ref[:, :1])[0][:, 0])).tolist() == [460, 510, 710, 760]


def test_bad_output_shape_names_node_and_fix():
    g = nir.NIRGraph(
        nodes={"input": nir.Input(np.array([2])), "w": nir.Linear(np.ones((3, 2))), "out": nir.Output(np.array([4]))},
        edges=[("input", "w"), ("w", "out")],
        type_check=False,
    )
    with pytest.raises(NIRError) as err:
        from_nir(g, dt=1e-3)
    assert err.value.where == "out" and err.value.value == [4] and "[3]" in err.value.fix


def test_malformed_files_raise_nir_error(tmp_path):
    good = (DATA / "braille" / BRAILLE[0]).read_bytes()
    (tmp_path / "trunc.nir").write_bytes(good[: len(good) // 3])
    (tmp_path / "text.nir").write_text("not hdf5")
    import h5py

    with h5py.File(tmp_path / "nokeys.nir", "w") as f:
        f.create_dataset("version", data="1.0")
    with h5py.File(tmp_path / "badnode.nir", "w") as f:
        f.create_dataset("version", data="1.0")
        g = f.create_group("node")
        g.create_dataset("type", data="NIRGraph")
        g.create_dataset("edges", data=np.array([[b"a", b"b"]]))
        n = g.create_group("nodes").create_group("a")
        n.create_dataset("type", data="LIF")  # no parameters
    for name in ("trunc.nir", "text.nir", "nokeys.nir", "badnode.nir", "missing.nir"):
        with pytest.raises(NIRError) as err:
            from_nir(tmp_path / name, dt=1e-3)
        assert name in err.value.where


def test_unsupported_node_and_graph_boundary():
    g = nir.NIRGraph(
        nodes={"input": nir.Input(np.array([2])), "w": nir.Linear(np.ones((2, 2)))},
        edges=[("input", "w")],
        type_check=False,
    )
    with pytest.raises(NIRError, match="one Input and one Output"):
        from_nir(g, dt=1e-3)


def test_registries_cover_nir_node_types():
    wanted = {
        "Affine",
        "Linear",
        "Scale",
        "Threshold",
        "LIF",
        "CubaLIF",
        "LI",
        "CubaLI",
        "IF",
        "I",
        "Delay",
        "Flatten",
        "Conv1d",
        "Conv2d",
        "SumPool2d",
        "AvgPool2d",
    }
    assert wanted <= set(IMPORTERS)
    to_nir(nn.Linear(1, 1, weight=np.ones((1, 1))))  # fills the export registry
    assert {layers.Conv2d, neurons.CubaLIF, nn.LIF, nn.Residual} <= set(EXPORTERS)


# -- round trips ---------------------------------------------------------------------------------
def _roundtrip(module, tmp_path, x):
    path = tmp_path / "net.nir"
    write(path, module)
    back = from_nir(path, dt=None)
    y0, y1 = module(x)[0], back(x)[0]
    assert y0.shape == y1.shape
    assert bool(jnp.all(y0 == y1)), float(jnp.max(jnp.abs(y0 - y1)))
    return back


def test_roundtrip_pondlib_lif_network(tmp_path):
    k = jax.random.split(jax.random.PRNGKey(0), 4)
    net = nn.Sequential(
        nn.Linear(6, 5, key=k[0], bias=jnp.linspace(-0.2, 0.3, 5)),
        nn.LIF(
            5,
            tau_mem=jnp.linspace(0.01, 0.03, 5),
            tau_syn=0.004,
            threshold=jnp.linspace(0.5, 1, 5),
            bias=jnp.linspace(0, 0.1, 5),
            has_rec=True,
            key=k[1],
            dt=1e-3,
            max_spikes_per_dt=3.0,
        ),
        nn.Residual(nn.Linear(5, 5, key=k[2]), nn.LIF(5, dt=1e-3)),
        nn.Linear(5, 3, key=k[3]),
        nn.LIF(3, dt=1e-3),
    )
    back = _roundtrip(net, tmp_path, 3.0 * _spikes((2, 25, 6), 0.4, 3))
    assert type(back) is nn.Sequential
    assert back[1].w_rec is not None and bool(jnp.all(back[1].w_rec == net[1].w_rec))
    assert bool(jnp.all(back[0].bias == net[0].bias)) and back[1].max_spikes_per_dt == 3.0
    assert type(back[2]) is nn.Residual


def test_roundtrip_nir_neurons_and_layers(tmp_path):
    rng = np.random.default_rng(4)
    cnn = nn.Sequential(
        layers.Conv2d((2, 8, 8), weight=rng.normal(size=(4, 2, 3, 3)), bias=rng.normal(size=4), stride=2, padding=1),
        neurons.IF((4, 4, 4), r=rng.uniform(0.5, 1.5, 64), v_threshold=1.0, reset="subtract"),
        layers.AvgPool2d((4, 4, 4), kernel_size=2),
        layers.SumPool2d((4, 2, 2), kernel_size=2),
        layers.Flatten((4, 1, 1)),
        nn.Linear(4, 3, weight=rng.normal(size=(4, 3))),
        neurons.CubaLI(3, tau_syn=2e-3, tau_mem=5e-3, r=2.0, v_leak=0.1, w_in=1.5, dt=1e-3),
    )
    _roundtrip(cnn, tmp_path, _spikes((2, 6, 128), 0.5, 5))
    chain = nn.Sequential(
        layers.Conv1d((2, 6), weight=rng.normal(size=(3, 2, 3)), padding="same"),
        layers.Scale(18, scale=rng.normal(size=18)),
        neurons.NIRLIF(18, tau=5e-3, r=1.0, v_leak=0.05, v_threshold=0.3, v_reset=-0.1, dt=1e-3),
        layers.Delay(18, delay=np.arange(18) % 3 * 1e-3, dt=1e-3),
        neurons.CubaLIF(18, tau_syn=3e-3, tau_mem=8e-3, r=1.0, v_threshold=0.1, dt=1e-3, decay="exp", reset="zero"),
        neurons.LI(18, tau=4e-3, dt=1e-3),
        neurons.Integrator(18, r=0.5),
        neurons.Threshold(18, threshold=0.2),
    )
    back = _roundtrip(chain, tmp_path, rng.normal(size=(2, 12, 12)).astype(np.float32))
    assert back.modules["4_CubaLIF"].decay == "exp" and back.modules["4_CubaLIF"].reset == "zero"


def test_roundtrip_imported_braille_graph(tmp_path):
    net = from_nir(DATA / "braille" / BRAILLE[0], dt=None, reset="subtract")
    back = _roundtrip(net, tmp_path, _spikes((2, 20, 12), 0.3, 6))
    assert isinstance(back, GraphNetwork) and back.recurrent


def test_export_refuses_what_nir_cannot_represent():
    lif2 = nn.LIF((8, 4), dt=1e-3)
    with pytest.raises(NIRError) as err:
        to_nir(nn.Sequential(nn.Linear(2, 8, weight=np.ones((2, 8))), lif2))
    assert err.value.where == "1_LIF" and "several synapses" in str(err.value)
    with pytest.raises(NIRError, match="reshape"):
        to_nir(nn.Sequential(nn.Linear(2, 8, weight=np.ones((2, 8))), layers.SumPool2d((2, 2, 2), kernel_size=2)))


# -- discretization ------------------------------------------------------------------------------
def test_cubalif_equivalent_pondlib_lif_spikes_match():
    cuba = neurons.CubaLIF(
        6,
        tau_syn=np.linspace(2e-4, 6e-4, 6),
        tau_mem=np.linspace(8e-4, 2e-3, 6),
        r=np.linspace(5, 15, 6),
        w_in=np.linspace(1, 3, 6),
        v_leak=0.1,
        v_threshold=1.0,
        dt=1e-4,
        reset="subtract",
    )
    lif = nn.LIF(6, **cuba.lif_equivalent())
    x = 0.8 * _spikes((3, 200, 6), 0.4, 7)
    assert bool(jnp.all(cuba(x)[0] == lif(x)[0]))
    assert (
        cuba.lif_equivalent() is not None
        and neurons.CubaLIF(6, tau_syn=1e-3, tau_mem=1e-3, dt=1e-4).lif_equivalent() is None
    )  # reset to v_reset


def test_gradients_reach_imported_parameters():
    net = from_nir(DATA / "braille" / BRAILLE[0], dt=None)
    x = _spikes((1, 20, 12), 0.5, 8)

    def loss(m):
        return jnp.sum(m(x)[0] * jnp.arange(7.0))

    g = jax.jit(jax.grad(loss))(net)
    assert float(jnp.sum(jnp.abs(g.modules["fc1"].weight))) > 0
