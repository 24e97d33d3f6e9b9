"""Hostile files on every loader that is not ONNX: NIR files, ``.pond`` archives and each device's saved
deployment (configuration archives, DRAM images), fuzzed byte by byte and field by field from real files, and
memory bombs (declared sizes far beyond the size budget in a file of a few hundred bytes).

Each mutation must end in a :class:`~pondlib.errors.PondError` or an object of the right kind (equal to the
original where the bytes are), within the hypothesis deadline; a bomb must be refused before allocation.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from pondlib import nn
from pondlib.devices import registry
from pondlib.errors import NIRError, PondError
from pondlib.interop.nir import from_nir
from pondlib.interop.onnx import load_onnx
from pondlib.io import load_network, save_network
from pondlib.validate import MAX_ELEMENTS, check_npy_sizes
from tests.strategies import assert_pond_error, assert_pond_error_or, byte_mutations

NIR = Path(__file__).resolve().parent / "data" / "nir" / "lif" / "lif_norse.nir"
FUZZ = settings(max_examples=10, deadline=4000, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _net() -> nn.Sequential:
    rng = np.random.default_rng(0)  # numpy weights: no JAX random work
    return nn.Sequential(
        nn.Linear(3, 5, weight=rng.normal(size=(3, 5))), nn.LIF(5, tau_mem=0.02, tau_syn=0.002),
        nn.Linear(5, 2, weight=rng.normal(size=(5, 2))), nn.LIF(2),
    )  # fmt: skip


# -- NIR ----------------------------------------------------------------------------------------------------------
@given(blob=byte_mutations(NIR.read_bytes(), max_edits=3))
@FUZZ
def test_byte_mutations_of_a_nir_file_import_or_are_refused(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("nir") / "m.nir"
    path.write_bytes(blob)
    assert_pond_error_or(from_nir, callable, path, dt=1e-4)


def _datasets(path: Path) -> list[str]:
    names: list[str] = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) and o.dtype.kind in "fiu" else None)
    return sorted(names)


@given(
    pick=st.integers(0, 10**6),
    value=st.one_of(
        st.sampled_from([np.nan, np.inf, -1.0, 0.0, 1e300, 2**62]),
        st.floats(-1e6, 1e6),
    ),
    shape=st.sampled_from([(), (0,), (1,), (3, 1), (2, 2, 2)]),
)
@FUZZ
def test_field_mutations_of_a_nir_file_import_or_are_refused(tmp_path_factory, pick, value, shape):
    path = tmp_path_factory.mktemp("nir") / "m.nir"
    path.write_bytes(NIR.read_bytes())
    names = _datasets(path)
    with h5py.File(path, "r+") as f:
        name = names[pick % len(names)]
        del f[name]
        f[name] = np.full(shape, value, dtype=np.float64)
    assert_pond_error_or(from_nir, callable, path, dt=1e-4)


def test_a_nir_dataset_declaring_2_to_the_40_elements_is_refused_before_reading(tmp_path):
    path = tmp_path / "bomb.nir"
    path.write_bytes(NIR.read_bytes())
    with h5py.File(path, "r+") as f:  # a chunked, compressed, never written dataset: a few hundred bytes on disk
        name = _datasets(path)[0]
        del f[name]
        f.create_dataset(name, shape=(2**20, 2**20), dtype="f8", chunks=(1, 1024), compression="gzip")
    assert path.stat().st_size < 10**6
    err = assert_pond_error(from_nir, path, dt=1e-4, match="size budget", error=NIRError)
    assert "1099511627776" in str(err) and name in str(err)


# -- .pond archives ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pond_bytes(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("pond") / "net.pond"
    save_network(_net(), path)
    return path.read_bytes()


@given(data=st.data())
@settings(max_examples=6, deadline=4000, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_byte_mutations_of_a_pond_archive_load_or_are_refused(tmp_path_factory, pond_bytes, data):
    path = tmp_path_factory.mktemp("pond") / "m.pond"
    path.write_bytes(data.draw(byte_mutations(pond_bytes, max_edits=3)))
    assert_pond_error_or(load_network, lambda net: isinstance(net, nn.Sequential), path)


def _rewrite(pond: bytes, header: str, leaves: bytes | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(pond)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith(".json"):
                data = header.encode()
            elif leaves is not None:
                data = leaves
            dst.writestr(info.filename, data)
    return out.getvalue()


@given(dims=st.lists(st.integers(2**10, 2**30), min_size=2, max_size=3).filter(lambda d: np.prod(d) > MAX_ELEMENTS))
@settings(max_examples=8, deadline=4000, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_pond_archive_declaring_huge_parameters_is_refused_before_allocation(tmp_path_factory, pond_bytes, dims):
    with zipfile.ZipFile(io.BytesIO(pond_bytes)) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".json"))
        header = zf.read(name).decode()
    tree = json.loads(header)

    def bomb(node) -> bool:  # the first array description declares ``dims``
        if isinstance(node, dict):
            if set(node) == {"shape", "dtype", "kind"}:
                node["shape"] = list(dims)
                return True
            return any(bomb(v) for v in node.values())
        return isinstance(node, list) and any(bomb(v) for v in node)

    assert bomb(tree)
    path = tmp_path_factory.mktemp("pond") / "bomb.pond"
    path.write_bytes(_rewrite(pond_bytes, json.dumps(tree)))
    assert_pond_error(load_network, path, match="size budget")


# -- each device's saved deployment ---------------------------------------------------------------------------------
def _saved(dev, tmp: Path) -> Path | None:
    """A real saved deployment of ``dev`` (a small network or ONNX model mapped and saved), or None."""
    path = tmp / f"{dev.name}.saved"
    try:
        if dev.takes_onnx:
            w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3) / 6, "W")
            g = helper.make_graph(
                [helper.make_node("Gemm", ["x", "W"], ["y"], transB=1, name="fc")],
                "g",
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
                [w],
            )
            model = load_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
            mapped = dev.map_onnx(model, np.random.default_rng(0).random((16, 3)))
        else:
            mapped = dev.map(_net(), None)
        dev.save(mapped, path)
    except PondError:
        return None
    return path


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("saved")
    out = {}
    for dev in registry.devices():
        path = _saved(dev, tmp)
        if path is not None:
            out[dev.name] = path.read_bytes()
    assert len(out) >= 3, out.keys()  # every built-in chip has a saved form
    return out


@given(data=st.data())
@settings(max_examples=40, deadline=4000, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_byte_mutations_of_saved_deployments_load_or_are_refused(tmp_path_factory, saved, data):
    name = data.draw(st.sampled_from(sorted(saved)))
    dev = registry.get(name)
    blob = data.draw(byte_mutations(saved[name], max_edits=3))
    path = tmp_path_factory.mktemp("saved") / "m.saved"
    path.write_bytes(blob)
    if blob == saved[name]:
        original = tmp_path_factory.mktemp("orig") / "o.saved"
        original.write_bytes(saved[name])
        assert repr(dev.load(path).config) == repr(dev.load(original).config)
    assert_pond_error_or(dev.load, lambda s: s.config is not None, path)


def _npy_bomb(shape: tuple[int, ...]) -> bytes:
    """A ``.npy`` header declaring ``shape`` and no data (a few hundred bytes)."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<i8", "fortran_order": False, "shape": shape})
    return buf.getvalue()


@given(n=st.integers(MAX_ELEMENTS + 1, 2**50))
@settings(max_examples=10, deadline=4000, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_archives_declaring_huge_arrays_are_refused_before_allocation(tmp_path_factory, saved, n):
    tmp = tmp_path_factory.mktemp("bomb")
    for name, blob in saved.items():
        if not blob.startswith(b"PK"):
            continue
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(blob)) as src, zipfile.ZipFile(out, "w") as dst:
            for i, info in enumerate(src.infolist()):
                dst.writestr(info.filename, _npy_bomb((n,)) if i == len(src.infolist()) - 1 else src.read(info))
        path = tmp / f"{name}.npz"
        path.write_bytes(out.getvalue())
        assert_pond_error(registry.get(name).load, path, match="size budget")
    npy = tmp / "x.npy"
    npy.write_bytes(_npy_bomb((n, 2)))
    assert_pond_error(check_npy_sizes, npy, "input", match=str(n))


@given(
    data=st.data(),
    value=st.one_of(
        st.sampled_from([np.nan, np.inf, -1, 0, 2**31, 2**63 - 1, 1e300]).map(np.array),
        st.lists(st.integers(-(2**40), 2**40), max_size=4).map(np.array),
        st.text(max_size=8).map(np.array),
        st.just(np.zeros((2, 3, 1))),
    ),
)
@settings(max_examples=30, deadline=4000, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_field_mutations_of_saved_archives_load_or_are_refused(tmp_path_factory, saved, data, value):
    """One member of a configuration archive replaced by another array (type, shape or value out of range)."""
    name = data.draw(st.sampled_from(sorted(n for n, b in saved.items() if b.startswith(b"PK"))))
    with zipfile.ZipFile(io.BytesIO(saved[name])) as src:
        members = src.infolist()
        pick = data.draw(st.integers(0, len(members) - 1))
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as dst:
            for i, info in enumerate(members):
                if i == pick:
                    buf = io.BytesIO()
                    np.save(buf, value, allow_pickle=False)
                    dst.writestr(info.filename, buf.getvalue())
                else:
                    dst.writestr(info.filename, src.read(info))
    path = tmp_path_factory.mktemp("field") / "m.npz"
    path.write_bytes(out.getvalue())
    assert_pond_error_or(registry.get(name).load, lambda s: s.config is not None, path)
