"""pondlib.io: saved networks rebuild exactly (same leaves, same outputs), bad files fail clearly."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pondlib import nn
from pondlib.errors import GraphError, PondError
from pondlib.io import FORMAT, VERSION, describe, load_network, save_network

NIR_DATA = Path(__file__).resolve().parent / "data" / "nir"


def _keys(n):
    return jax.random.split(jax.random.PRNGKey(7), n)


def _seq_lif():
    k = _keys(2)
    return nn.Sequential(
        nn.Linear(16, 32, key=k[0]),
        nn.LIF(32, tau_mem=0.015, tau_syn=0.002, max_spikes_per_dt=31, threshold=0.7),
        nn.Linear(32, 10, key=k[1]),
        nn.LIF(10, max_spikes_per_dt=1),
    )


def _residual_recurrent():
    k = _keys(4)
    return nn.Sequential(
        nn.Linear(6, 12, key=k[0], bias=True),
        nn.LIF(12, has_rec=True, key=k[1], bias=0.1),
        nn.Residual(
            nn.Linear(12, 24, key=k[2]),
            nn.LIF((24, 12), tau_syn=[0.002, 0.01]),
            nn.Linear(12, 12, key=k[3]),
            nn.LIF(12),
        ),
    )


def _nir_neurons():
    k = _keys(2)
    return nn.Sequential(
        nn.Linear(6, 8, key=k[0]),
        nn.CubaLIF(8, tau_syn=2e-3, tau_mem=1e-2, r=10.0, v_threshold=1.0, dt=1e-3),
        nn.Delay(8, delay=2e-3, dt=1e-3),
        nn.Linear(8, 4, key=k[1]),
        nn.LI(4, tau=1e-2, dt=1e-3),
    )


def _conv():
    w = np.asarray(jax.random.normal(_keys(1)[0], (4, 1, 3, 3))) * 0.5
    return nn.Sequential(
        nn.Conv2d((1, 6, 6), weight=w, padding=1),
        nn.IF((4, 6, 6), v_threshold=0.5),
        nn.SumPool2d((4, 6, 6), kernel_size=2),
        nn.Flatten((4, 3, 3)),
    )


NETWORKS = {
    "sequential_lif": (_seq_lif, 16),
    "residual_recurrent": (_residual_recurrent, 6),
    "nir_neurons_delay": (_nir_neurons, 6),
    "conv_pool_flatten": (_conv, 36),
}


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_round_trip_is_exact(name, tmp_path):
    build, n_in = NETWORKS[name]
    net = build()
    path = save_network(net, tmp_path / f"{name}.pond")
    back = load_network(path)
    assert type(back) is type(net)
    assert eqx.tree_equal(back, net)
    x = 2.0 * (np.random.default_rng(0).random((2, 15, n_in)) < 0.3)
    (y0, _, r0), (y1, _, r1) = net(x, record=True), back(x, record=True)
    assert np.array_equal(np.asarray(y0), np.asarray(y1))
    assert sorted(r0) == sorted(r1)
    assert all(np.array_equal(np.asarray(r0[k]), np.asarray(r1[k])) for k in r0)


def test_static_fields_and_parameters_survive(tmp_path):
    net = _seq_lif()
    back = load_network(save_network(net, tmp_path / "n.pond"))
    lif = back.layers[1]
    assert (lif.dt, lif.max_spikes_per_dt, lif.n_neurons, lif.n_synapses) == (1e-3, 31.0, 32, 1)
    assert lif.surrogate == net.layers[1].surrogate
    assert back.layers[0].bias is None
    assert isinstance(back.layers[0].weight, jax.Array) and back.layers[0].weight.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(lif.threshold), np.full(32, 0.7, np.float32))


def test_trained_network_still_maps(tmp_path):
    from pondlib.devices.xylo.mapper import mapper

    net = _seq_lif()
    back = load_network(save_network(net, tmp_path / "n.pond"))
    a, b = mapper(net, "audio3"), mapper(back, "audio3")
    assert np.array_equal(a.weights_in, b.weights_in) and np.array_equal(a.threshold, b.threshold)


def test_graph_network_from_nir_round_trip(tmp_path):
    from pondlib.interop.nir import from_nir

    net = from_nir(NIR_DATA / "braille" / "braille_noDelay_bias_zero.nir", dt=None)
    assert type(net).__name__ == "GraphNetwork"
    back = load_network(save_network(net, tmp_path / "braille.pond"))
    assert eqx.tree_equal(back, net)
    x = (np.random.default_rng(1).random((2, 30, 12)) < 0.3).astype(np.float32)
    assert np.array_equal(np.asarray(back(x)[0]), np.asarray(net(x)[0]))


def test_describe_reads_the_header(tmp_path):
    path = save_network(_seq_lif(), tmp_path / "n.pond")
    head = describe(path)
    assert (head["format"], head["version"], head["size_in"], head["size_out"]) == (FORMAT, VERSION, 16, 10)
    assert head["summary"] == "Sequential(Linear(16 -> 32), LIF(32), Linear(32 -> 10), LIF(10))"
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == ["leaves.eqx", "network.json"]


def test_saving_a_foreign_module_names_it(tmp_path):
    class Mine(eqx.Module):
        w: jax.Array

        @property
        def size_in(self):
            return 2

        @property
        def size_out(self):
            return 2

    with pytest.raises(GraphError, match="Mine"):
        save_network(Mine(jnp.ones(2)), tmp_path / "x.pond")
    with pytest.raises(GraphError, match="save_network input"):
        save_network([1, 2], tmp_path / "x.pond")


def _rewrite(path: Path, header: dict | None = None, leaves: bytes | None = None) -> None:
    with zipfile.ZipFile(path) as zf:
        h, lv = json.loads(zf.read("network.json")), zf.read("leaves.eqx")
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("network.json", json.dumps(header if header is not None else h))
        zf.writestr("leaves.eqx", leaves if leaves is not None else lv)


def test_bad_files_raise_one_clear_error(tmp_path):
    with pytest.raises(PondError, match="network file not found"):
        load_network(tmp_path / "missing.pond")
    junk = tmp_path / "junk.pond"
    junk.write_bytes(b"not a zip at all")
    with pytest.raises(PondError, match="not a pondlib network file"):
        load_network(junk)
    path = save_network(_seq_lif(), tmp_path / "n.pond")
    head = describe(path)
    _rewrite(path, header={**head, "version": VERSION + 1})
    with pytest.raises(PondError, match="version"):
        load_network(path)
    _rewrite(path, header={**head, "format": "something-else"})
    with pytest.raises(PondError, match="not a pondlib network file"):
        load_network(path)
    root = json.loads(json.dumps(head["root"]).replace('"module": "LIF"', '"module": "Mystery"'))
    _rewrite(path, header={**head, "root": root})
    with pytest.raises(PondError, match="unknown module type"):
        load_network(path)
    _rewrite(path, header=head, leaves=b"\x93NUMPY truncated")
    with pytest.raises(PondError, match="do not match"):
        load_network(path)
