"""Bad and edge input to :mod:`pondlib.io` (issue #13), and lossless round trips of valid networks.

Every test either gets a :class:`~pondlib.errors.PondError` naming the file (and the field when there is
one), or, for valid networks and harmless byte changes, a network equal to the saved one leaf for leaf,
with equal static fields and bit-identical runs. Never a zlib/zipfile/json/KeyError traceback.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import equinox as eqx
import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.devices.xylo import XyloLIF
from pondlib.errors import GraphError, PondError
from pondlib.io import VERSION, describe, load_network, save_network
from tests.strategies import NON_FINITE, assert_pond_error, bad_counts, bad_positive_floats, bad_types

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _keys(n, seed=3):
    return jax.random.split(jax.random.PRNGKey(seed), n)


def _lif_net(seed=3, hidden=6):
    k = _keys(3, seed)
    return nn.Sequential(
        nn.Linear(4, hidden, key=k[0]),
        nn.LIF(hidden, tau_mem=0.012, tau_syn=0.003, max_spikes_per_dt=3, has_rec=True, key=k[1]),
        nn.Linear(hidden, 2, key=k[2]),
        nn.LIF(2, max_spikes_per_dt=1),
    )


def _zoo():
    """Networks covering every kind of module the file format describes."""
    k = _keys(6)
    w_conv = np.asarray(jax.random.normal(k[0], (2, 1, 3))) * 0.5
    return {
        "lif": (_lif_net(), 4),
        "xylo_lif": (
            nn.Sequential(
                XyloLIF(3, 4, 2, weight=np.asarray(jax.random.normal(k[1], (3, 8))), input_clip=15.0),
                XyloLIF(4, 2, weight=np.ones((4, 2)), delay_in=True, quantize=None, learn_dash=False),
            ),
            3,
        ),
        "nir": (
            nn.Sequential(
                nn.Linear(3, 4, key=k[2], bias=True),
                nn.CubaLIF(4, tau_syn=2e-3, tau_mem=1e-2, r=2.0, v_threshold=1.0, dt=1e-3, reset="subtract"),
                nn.NIRLIF(4, tau=1e-2, r=1.0, v_leak=0.1, v_threshold=0.5, dt=1e-3, decay="exp"),
                nn.Delay(4, delay=[0.0, 1e-3, 2e-3, 0.0], dt=1e-3),
                nn.Scale(4, scale=[1.0, 2.0, 0.5, -1.0]),
                nn.IF(4, v_threshold=0.5),
                nn.Threshold(4, threshold=0.5),
                nn.CubaLI(4, tau_syn=2e-3, tau_mem=1e-2),
                nn.LI(4, tau=1e-2),
                nn.Integrator(4, r=0.5),
            ),
            3,
        ),
        "conv": (
            nn.Sequential(
                nn.Conv1d((1, 8), weight=w_conv, padding="same", bias=True),
                nn.IF((2, 8), v_threshold=0.3),
                nn.Flatten((2, 8)),
            ),
            8,
        ),
        "residual": (nn.Sequential(nn.Linear(3, 3, key=k[3]), nn.Residual(nn.Linear(3, 3, key=k[4]), nn.LIF(3))), 3),
        "graph": (
            nn.GraphNetwork(
                {
                    "a": nn.Linear(3, 4, key=k[5]),
                    "b": nn.LIF(4),
                    "c": nn.Linear(4, 4, weight=np.eye(4)),
                    "d": nn.LIF(4),
                },
                [("input", "a"), ("a", "b"), ("b", "c"), ("c", "b"), ("b", "d"), ("d", "output")],
            ),
            3,
        ),
    }


ZOO = _zoo()


@eqx.filter_jit
def _run(net, x):
    """A recorded run, compiled once per network structure (equal structures share the compilation)."""
    return net(x, record=True)


def _statics(tree):
    out = []
    todo = [tree]
    while todo:
        m = todo.pop()
        if isinstance(m, eqx.Module):
            for f in m.__dataclass_fields__.values():
                v = getattr(m, f.name)
                if f.metadata.get("static", False):
                    out.append((type(m).__name__, f.name, v))
                else:
                    todo.append(v)
        elif isinstance(m, (tuple, list)):
            todo.extend(m)
        elif isinstance(m, dict):
            todo.extend(m.values())
    return out


def _assert_identical(a, b, x):
    assert type(a) is type(b)
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    assert ta == tb
    for u, v in zip(la, lb):
        u, v = np.asarray(u), np.asarray(v)
        assert u.dtype == v.dtype and u.shape == v.shape
        assert u.tobytes() == v.tobytes()  # bit for bit
    assert _statics(a) == _statics(b)
    ya, _, ra = _run(a, x)
    yb, _, rb = _run(b, x)
    assert np.asarray(ya).tobytes() == np.asarray(yb).tobytes()
    assert sorted(ra) == sorted(rb)
    for key in ra:
        assert np.asarray(ra[key]).tobytes() == np.asarray(rb[key]).tobytes()


# -- lossless round trips and deterministic runs (valid input) -----------------------------------------
@pytest.mark.parametrize("name", sorted(ZOO))
def test_round_trip_of_every_module_kind_is_bit_exact(name, tmp_path):
    net, n_in = ZOO[name]
    back = load_network(save_network(net, tmp_path / f"{name}.pond"))
    x = 2.0 * (np.random.default_rng(0).random((2, 6, n_in)) < 0.4)
    _assert_identical(back, net, x)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**31 - 1),
    hidden=st.integers(1, 3),
    scale=st.floats(1e-3, 1e3),
    spikes=st.floats(0.0, 1.0),
)
def test_round_trip_property(tmp_path, seed, hidden, scale, spikes):
    net = _lif_net(seed, hidden)
    net = eqx.tree_at(lambda n: n.layers[0].weight, net, net.layers[0].weight * scale)
    path = save_network(net, tmp_path / "p.pond")
    back = load_network(path)
    x = (np.random.default_rng(seed).random((2, 5, 4)) < spikes).astype(np.float32) * 2
    _assert_identical(back, net, x)
    assert load_network(save_network(back, tmp_path / "q.pond")) is not None
    assert (tmp_path / "q.pond").read_bytes() == Path(path).read_bytes() or describe(tmp_path / "q.pond") == describe(
        path
    )


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), spikes=st.floats(0.0, 1.0))
def test_runs_are_deterministic(seed, spikes):
    for net, n_in in ZOO.values():
        x = (np.random.default_rng(seed).random((1, 4, n_in)) < spikes).astype(np.float32)
        a, b = _run(net, x), _run(net, x)
        assert np.asarray(a[0]).tobytes() == np.asarray(b[0]).tobytes()
        assert all(np.asarray(a[2][k]).tobytes() == np.asarray(b[2][k]).tobytes() for k in a[2])


# -- paths ---------------------------------------------------------------------------------------------
def test_save_to_a_directory_or_a_missing_directory_names_the_path(tmp_path):
    net = ZOO["lif"][0]
    err = assert_pond_error(save_network, net, tmp_path, match="is a directory")
    assert str(tmp_path) in str(err)
    missing = tmp_path / "nowhere" / "net.pond"
    err = assert_pond_error(save_network, net, missing, match="directory does not exist")
    assert str(missing.parent) in str(err)
    for bad in (None, 3, b"x.pond", ["x.pond"]):
        assert_pond_error(save_network, net, bad, match="network file")


def test_load_missing_file_or_directory_names_the_path(tmp_path):
    err = assert_pond_error(load_network, tmp_path / "missing.pond", match="network file not found")
    assert "missing.pond" in str(err)
    assert_pond_error(load_network, tmp_path, match="not a regular file")
    assert_pond_error(describe, tmp_path / "missing.pond", match="not found")
    assert_pond_error(load_network, 42, match="network file")


def test_save_refuses_non_finite_parameters(tmp_path):
    net = ZOO["lif"][0]
    for bad in NON_FINITE:
        broken = eqx.tree_at(lambda n: n.layers[0].weight, net, net.layers[0].weight.at[1, 2].set(bad))
        err = assert_pond_error(save_network, broken, tmp_path / "x.pond", error=GraphError, match="layers[0].weight")
        assert "non-finite" in str(err)
    assert not (tmp_path / "x.pond").exists()


# -- corrupted bytes -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("io") / "net.pond"
    net = ZOO["lif"][0]
    save_network(net, path)
    return net, path.read_bytes()


def _load_bytes(tmp_path, data: bytes, name="c.pond"):
    path = tmp_path / name
    path.write_bytes(data)
    return load_network(path), path


def _pond_error_or_equal(tmp_path, data, net):
    try:
        back, _ = _load_bytes(tmp_path, data)
    except PondError as err:
        assert "c.pond" in str(err)  # names the file
        return
    x = np.ones((1, 3, 4), np.float32)
    _assert_identical(back, net, x)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_byte_corruption_is_a_pond_error_or_harmless(tmp_path, saved, data):
    net, raw = saved
    buf = bytearray(raw)
    n = data.draw(st.integers(1, 8))
    for _ in range(n):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    _pond_error_or_equal(tmp_path, bytes(buf), net)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_truncation_is_a_pond_error(tmp_path, saved, data):
    net, raw = saved
    cut = data.draw(st.integers(0, len(raw) - 1))
    err = assert_pond_error(_load_bytes, tmp_path, raw[:cut])
    assert "c.pond" in str(err)


def _members(raw: bytes) -> tuple[dict, bytes]:
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        return json.loads(zf.read("network.json")), zf.read("leaves.eqx")


def _write(path: Path, header, leaves: bytes, *, compression=zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        zf.writestr("network.json", header if isinstance(header, (str, bytes)) else json.dumps(header))
        zf.writestr("leaves.eqx", leaves)
    return path


@SETTINGS
@given(data=st.data())
def test_corrupted_deflate_stream_inside_a_valid_zip(tmp_path, saved, data):
    """Flip bytes of the compressed members and fix up nothing: zlib errors and CRC errors become PondErrors."""
    net, raw = saved
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        infos = zf.infolist()
    info = data.draw(st.sampled_from(infos))
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    buf = bytearray(raw)
    i = data.draw(st.integers(start, start + info.compress_size - 1))
    buf[i] ^= data.draw(st.integers(1, 255))
    _pond_error_or_equal(tmp_path, bytes(buf), net)


def test_foreign_archives(tmp_path, saved):
    net, raw = saved
    header, leaves = _members(raw)
    cases = {
        "empty.pond": b"",
        "text.pond": b"hello",
    }
    for name, data in cases.items():
        assert_pond_error(_load_bytes, tmp_path, data, name, match="not a pondlib network file")
    only = tmp_path / "only.pond"
    with zipfile.ZipFile(only, "w") as zf:
        zf.writestr("network.json", json.dumps(header))
    assert_pond_error(load_network, only, match="no leaves.eqx")
    assert_pond_error(load_network, _write(tmp_path / "j.pond", b"{not json", leaves), match="not JSON")
    assert_pond_error(load_network, _write(tmp_path / "u.pond", b"\xff\xfe", leaves), match="not JSON")
    assert_pond_error(load_network, _write(tmp_path / "l.pond", "[1, 2]", leaves), match="not a pondlib")
    deep = "[" * 100_000 + "]" * 100_000
    assert_pond_error(load_network, _write(tmp_path / "d.pond", deep, leaves), match="d.pond")
    stored = _write(tmp_path / "s.pond", header, leaves, compression=zipfile.ZIP_STORED)
    _assert_identical(load_network(stored), net, np.ones((1, 3, 4), np.float32))  # any zip compression reads


# -- the header ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", [VERSION + 1, 0, -1, True, "1", 1.0, None, [1]])
def test_format_version_is_checked(tmp_path, saved, version):
    _, raw = saved
    header, leaves = _members(raw)
    path = _write(tmp_path / "v.pond", {**header, "version": version}, leaves)
    err = assert_pond_error(load_network, path, match="version")
    assert "v.pond" in str(err) and f"1..{VERSION}" in str(err)
    assert_pond_error(describe, path, match="version")


@pytest.mark.parametrize(
    "key, value", [("size_in", -4), ("size_in", "4"), ("size_out", 0), ("size_out", 2.5), ("summary", 3)]
)
def test_header_fields_are_checked(tmp_path, saved, key, value):
    _, raw = saved
    header, leaves = _members(raw)
    path = _write(tmp_path / "h.pond", {**header, key: value}, leaves)
    err = assert_pond_error(load_network, path, match=key)
    assert "h.pond" in str(err)


def test_header_sizes_must_match_the_network(tmp_path, saved):
    _, raw = saved
    header, leaves = _members(raw)
    path = _write(tmp_path / "h.pond", {**header, "size_in": 5}, leaves)
    assert_pond_error(load_network, path, error=GraphError, match="size_in")


# -- static fields go through the constructors' limits -------------------------------------------------
def _edit(header: dict, module_index: int, field: str, value) -> dict:
    if isinstance(value, complex):  # JSON has no complex numbers: a pair is as wrong
        value = [value.real, value.imag]
    header = json.loads(json.dumps(header))
    header["root"]["fields"]["layers"]["tuple"][module_index]["fields"][field] = value
    return header


STATIC_BAD = [
    (1, "dt", -1.0),
    (1, "dt", 0.0),
    (1, "dt", "0.001"),
    (1, "dt", None),
    (1, "dt", 1e300),
    (1, "n_neurons", -6),
    (1, "n_neurons", 0),
    (1, "n_neurons", 2.5),
    (1, "n_neurons", True),
    (1, "n_neurons", 7),  # inconsistent with the arrays
    (1, "n_synapses", 2),
    (1, "max_spikes_per_dt", 0.5),
    (1, "max_spikes_per_dt", 1e9),
    (0, "n_in", -4),
    (0, "n_in", 5),
    (0, "n_out", "6"),
    (1, "surrogate", {"surrogate": {"kind": "nope", "scale": 10.0}}),
    (1, "surrogate", {"surrogate": {"kind": "triangle", "scale": -1.0}}),
    (1, "surrogate", 3),
]


@pytest.mark.parametrize("index, field, value", STATIC_BAD)
def test_bad_static_fields_name_the_file_and_the_field(tmp_path, saved, index, field, value):
    _, raw = saved
    header, leaves = _members(raw)
    path = _write(tmp_path / "f.pond", _edit(header, index, field, value), leaves)
    err = assert_pond_error(load_network, path, error=GraphError)
    text = str(err)
    assert "f.pond" in text
    assert field in text or "does not run" in text or "size" in text


def _xylo_header(tmp_path):
    net = ZOO["xylo_lif"][0]
    header, leaves = _members(save_network(net, tmp_path / "x.pond") and (tmp_path / "x.pond").read_bytes())
    return header, leaves


@pytest.mark.parametrize(
    "field, value",
    [
        ("delay_in", "False"),
        ("delay_in", "True"),
        ("delay_in", 0),
        ("learn_dash", "False"),
        ("quantize", "int8"),
        ("input_clip", 0.0),
        ("input_clip", float("nan")),
        ("weight_bits", 1),
        ("state_bits", 40),
        ("dash_max", 0),
    ],
)
def test_bool_strings_and_choices_are_refused(tmp_path, field, value):
    header, leaves = _xylo_header(tmp_path)
    path = _write(tmp_path / "b.pond", _edit(header, 0, field, value), leaves)
    err = assert_pond_error(load_network, path, error=GraphError, match=field)
    assert "b.pond" in str(err)


@SETTINGS
@given(value=bad_positive_floats())
def test_dt_property(tmp_path, saved, value):
    _, raw = saved
    header, leaves = _members(raw)
    if isinstance(value, complex):
        value = [value.real, value.imag]
    if isinstance(value, float) and not np.isfinite(value):
        value = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}[str(value)]
        text = json.dumps(_edit(header, 1, "dt", 12345.678)).replace("12345.678", value)
    else:
        text = json.dumps(_edit(header, 1, "dt", value))
    path = _write(tmp_path / "dt.pond", text, leaves)
    assert_pond_error(load_network, path, error=GraphError, match="dt")


@SETTINGS
@given(value=bad_counts().filter(lambda v: not (isinstance(v, float) and not np.isfinite(v))))
def test_size_property(tmp_path, saved, value):
    _, raw = saved
    header, leaves = _members(raw)
    path = _write(tmp_path / "n.pond", _edit(header, 0, "n_out", value), leaves)
    assert_pond_error(load_network, path, error=GraphError, match="n.pond")


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda f: f["steps"].update({"tuple": [0, -1, 2, 0]}), "steps"),
        (lambda f: f["steps"].update({"tuple": [0, 1, 2]}), "steps"),
        (lambda f: f.update({"dt": -1e-3}), "dt"),
    ],
)
def test_array_free_layers_are_rebuilt(tmp_path, edit, match):
    net = ZOO["nir"][0]
    header, leaves = _members(save_network(net, tmp_path / "d.pond") and (tmp_path / "d.pond").read_bytes())
    fields = header["root"]["fields"]["layers"]["tuple"][3]["fields"]
    assert header["root"]["fields"]["layers"]["tuple"][3]["module"] == "Delay"
    edit(fields)
    err = assert_pond_error(load_network, _write(tmp_path / "e.pond", header, leaves), error=GraphError)
    assert "e.pond" in str(err)


@pytest.mark.parametrize("field, value", [("decay", "rk4"), ("reset", "never"), ("shape", {"tuple": [0]})])
def test_nir_choices_and_shapes(tmp_path, field, value):
    net = ZOO["nir"][0]
    header, leaves = _members(save_network(net, tmp_path / "d.pond") and (tmp_path / "d.pond").read_bytes())
    path = _write(tmp_path / "e.pond", _edit(header, 1, field, value), leaves)
    assert_pond_error(load_network, path, error=GraphError, match=field)


def test_graph_network_derived_fields_must_match(tmp_path):
    net = ZOO["graph"][0]
    header, leaves = _members(save_network(net, tmp_path / "g.pond") and (tmp_path / "g.pond").read_bytes())
    h = json.loads(json.dumps(header))
    h["root"]["fields"]["recurrent"] = not h["root"]["fields"]["recurrent"]
    assert_pond_error(load_network, _write(tmp_path / "g1.pond", h, leaves), error=GraphError, match="recurrent")
    h = json.loads(json.dumps(header))
    h["root"]["fields"]["edges"] = {"tuple": [{"tuple": ["input", "zz"]}]}
    assert_pond_error(load_network, _write(tmp_path / "g2.pond", h, leaves), error=GraphError, match="g2.pond")


def test_sequential_sizes_must_chain(tmp_path, saved):
    _, raw = saved
    header, leaves = _members(raw)
    h = json.loads(json.dumps(header))
    layers = h["root"]["fields"]["layers"]["tuple"]
    h["root"]["fields"]["layers"]["tuple"] = [layers[0], layers[3], layers[2], layers[1]]
    assert_pond_error(load_network, _write(tmp_path / "s.pond", h, leaves), match="s.pond")


# -- array descriptions and values ---------------------------------------------------------------------
def _weight_desc(header):
    return header["root"]["fields"]["layers"]["tuple"][0]["fields"]["weight"]["array"]


@pytest.mark.parametrize(
    "change, match",
    [
        ({"shape": [-4, 6]}, "shape"),
        ({"shape": [4, 7]}, "do not match"),
        ({"shape": [4.5, 6]}, "shape"),
        ({"shape": "4x6"}, "shape"),
        ({"dtype": "object"}, "dtype"),
        ({"dtype": "float64"}, "do not match"),
        ({"kind": "torch"}, "kind"),
    ],
)
def test_array_descriptions_are_checked(tmp_path, saved, change, match):
    _, raw = saved
    header, leaves = _members(raw)
    h = json.loads(json.dumps(header))
    _weight_desc(h).update(change)
    err = assert_pond_error(load_network, _write(tmp_path / "a.pond", h, leaves), match=match)
    assert "a.pond" in str(err) and "weight" in str(err)


def test_malformed_descriptions(tmp_path, saved):
    _, raw = saved
    header, leaves = _members(raw)
    for root in ({"module": "LIF"}, {"a": 1, "b": 2}, {"module": 3, "fields": {}}, [], {"tuple": 3}):
        h = {**header, "root": root}
        assert_pond_error(load_network, _write(tmp_path / "m.pond", h, leaves), match="m.pond")
    h = json.loads(json.dumps(header))
    h["root"]["fields"]["layers"]["tuple"][0]["fields"]["weight"] = 1.5  # a bare number for an array
    assert_pond_error(load_network, _write(tmp_path / "m.pond", h, leaves), error=GraphError, match="weight")
    h = json.loads(json.dumps(header))
    h["root"]["fields"]["layers"]["tuple"][0]["fields"]["weight"] = None
    assert_pond_error(load_network, _write(tmp_path / "m.pond", h, leaves), error=GraphError, match="weight")


def test_values_are_checked(tmp_path, saved):
    net, raw = saved
    header, leaves = _members(raw)
    assert_pond_error(load_network, _write(tmp_path / "t.pond", header, leaves + b"\0"), match="after the saved")
    assert_pond_error(load_network, _write(tmp_path / "t.pond", header, leaves[:-3]), match="do not match")
    # a NaN parameter written behind the description's back
    bad = eqx.tree_at(lambda n: n.layers[2].weight, net, net.layers[2].weight.at[0, 0].set(np.nan))
    buf = io.BytesIO()
    eqx.tree_serialise_leaves(buf, bad)
    err = assert_pond_error(load_network, _write(tmp_path / "n.pond", header, buf.getvalue()), error=GraphError)
    assert "layers[2].weight" in str(err) and "non-finite" in str(err)


@SETTINGS
@given(value=bad_types())
def test_static_field_of_the_wrong_type(tmp_path, saved, value):
    _, raw = saved
    header, leaves = _members(raw)
    path = _write(tmp_path / "w.pond", _edit(header, 1, "n_neurons", value), leaves)
    assert_pond_error(load_network, path, match="w.pond")
