"""Hostile ONNX files: external data confined to the model's folder, size budgets before allocation, byte and
field fuzzing of real models, NaN weights, unrepresentable QDQ scales and mismatched calibration data.

Every case must end in a :class:`~pondlib.errors.PondError` naming the value, or in an object equal to what
the intact file gives, within the hypothesis deadline (no hang, no memory bomb, no read outside the model).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from pondlib.cli import main
from pondlib.devices import registry
from pondlib.errors import ONNXError, PondError
from pondlib.graph.dnn import FloatLayer, FloatModel
from pondlib.graph.opgraph import OpGraph
from pondlib.interop.onnx import load_onnx, load_qdq, run_float
from pondlib.interop.onnx.opgraph import load_opgraph
from pondlib.validate import MAX_ELEMENTS
from tests.interop.test_onnx_qdq_rules import _gemm_chain
from tests.strategies import assert_pond_error, assert_pond_error_or, byte_mutations

DEEPLOY = Path(__file__).resolve().parent / "data" / "deeploy"
FUZZ = settings(max_examples=25, deadline=3000, suppress_health_check=[HealthCheck.function_scoped_fixture])
W_INSIDE = np.arange(6, dtype=np.float32).reshape(2, 3)  # the model's own weights
SECRET = np.full((2, 3), 7.0, np.float32)  # a file outside the model's folder: never to be read


def _gemm(w: np.ndarray = W_INSIDE, n_in: int = 3, external: dict | None = None) -> onnx.ModelProto:
    """x (N, n_in) -> Gemm(W, transB) -> y (N, 2); ``external``: W stored outside with these entries."""
    init = numpy_helper.from_array(w, "W")
    if external is not None:
        init = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=list(w.shape))
        init.data_location = TensorProto.EXTERNAL
        for key, value in external.items():
            init.external_data.add(key=key, value=str(value))
    g = helper.make_graph(
        [helper.make_node("Gemm", ["x", "W"], ["y"], transB=1, name="fc")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", n_in])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
        [init],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """``model/`` with ``w.bin`` (the model's weights), ``secret.bin`` beside it and in the working directory
    ``cwd/`` (never to be read), a link ``model/out.bin`` pointing at the secret; the process runs in ``cwd/``."""
    model, cwd = tmp_path / "model", tmp_path / "cwd"
    model.mkdir()
    cwd.mkdir()
    (model / "w.bin").write_bytes(W_INSIDE.tobytes())
    (tmp_path / "secret.bin").write_bytes(SECRET.tobytes())
    (cwd / "cw.bin").write_bytes(SECRET.tobytes())
    os.symlink(tmp_path / "secret.bin", model / "out.bin")
    monkeypatch.chdir(cwd)
    return model


def _save(model: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


# -- external data: resolved against the model's folder, never outside it ---------------------------------------
def test_external_data_next_to_the_model_loads_equal_to_the_internal_model(folders):
    path = _save(_gemm(external={"location": "w.bin"}), folders / "m.onnx")
    got, want = load_onnx(path), load_onnx(_gemm())
    assert np.array_equal(got.layers[0].params["weight"], want.layers[0].params["weight"])
    assert np.array_equal(load_opgraph(path).constants["W"], W_INSIDE)


def test_external_data_only_in_the_working_directory_is_refused(folders):
    path = _save(_gemm(external={"location": "cw.bin"}), folders / "m.onnx")
    assert Path("cw.bin").is_file()  # the working directory holds it: it must not be read
    assert_pond_error(load_onnx, path, match="external data not found", error=ONNXError)


@given(
    location=st.one_of(
        st.sampled_from(["../secret.bin", "out.bin", "./../secret.bin", "sub/../../secret.bin", "", "w.bin\0x"]),
        st.text(alphabet="./wbinsecrt_\\", min_size=1, max_size=24),
    )
)
@FUZZ
def test_external_locations_never_read_outside_the_folder(folders, location):
    for loc in (location, str(folders.parent / "secret.bin")):  # relative, and an absolute path out
        path = _save(_gemm(external={"location": loc}), folders / "m.onnx")

        def inside(m):  # anything accepted is the model's own file, never the secret
            assert np.array_equal(m.layers[0].params["weight"].T, W_INSIDE)

        assert_pond_error_or(load_onnx, inside, path)


@pytest.mark.parametrize(
    "entries, words",
    [
        ({"location": "w.bin", "length": 10**15}, "external data range"),
        ({"location": "w.bin", "offset": 20}, "external data range"),
        ({"location": "w.bin", "offset": "x"}, "external data range"),
        ({"location": "/etc/hostname"}, "external data location"),
    ],
)
def test_external_ranges_and_absolute_paths_are_refused(folders, entries, words):
    path = _save(_gemm(external=entries), folders / "m.onnx")
    assert_pond_error(load_onnx, path, match=words, error=ONNXError)
    assert_pond_error(load_opgraph, path, match=words, error=ONNXError)


def test_external_data_without_a_folder_is_refused_and_the_model_not_mutated():
    model = _gemm(external={"location": "w.bin"})
    before = model.SerializeToString()
    assert_pond_error(load_onnx, model, match="external tensor data", error=ONNXError)
    assert_pond_error(load_opgraph, before, match="external tensor data", error=ONNXError)
    assert model.SerializeToString() == before


# -- memory bombs: declared sizes checked against the budget before anything is allocated ------------------------
@given(features=st.integers(MAX_ELEMENTS + 1, 10**13))
@FUZZ
def test_declared_huge_inputs_are_refused_before_allocation(features):
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", features])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", features])],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    err = assert_pond_error(load_onnx, model, match="size budget", error=ONNXError)
    assert str(features) in str(err)
    huge = FloatModel((FloatLayer("r", "relu", (-1,), {}, (features,)),), "x", (features,))
    device = registry.get(next(d.name for d in registry.devices() if d.takes_graphs))
    assert_pond_error(device.map_onnx, huge, np.zeros((1, 1)), match="size budget")


@given(dims=st.lists(st.integers(2**15, 2**40), min_size=2, max_size=4))
@FUZZ
def test_declared_huge_initializers_are_refused_before_allocation(dims):
    model = _gemm()
    model.graph.initializer[0].ClearField("dims")
    model.graph.initializer[0].dims.extend(dims)
    assert_pond_error(load_onnx, model, match="size budget", error=ONNXError)
    assert_pond_error(load_opgraph, model, error=ONNXError)


def test_pond_map_huge_onnx_exits_1_with_one_line(tmp_path, capsys):
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 10**12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10**12])],
    )
    path = _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "huge.onnx")
    for dev in registry.devices():
        if dev.takes_onnx:
            assert main(["map", str(path), "--device", dev.name]) == 1
            err = capsys.readouterr().err
            assert str(MAX_ELEMENTS) in err and "Traceback" not in err and "1000000000000" in err


# -- byte and field fuzzing of real models -----------------------------------------------------------------------
REAL = sorted(p for p in DEEPLOY.rglob("network.onnx") if p.stat().st_size < 3000)[:3]


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.parent.relative_to(DEEPLOY)))
@given(data=st.data())
@FUZZ
def test_byte_mutations_of_real_onnx_files_load_or_are_refused(path, data):
    blob = data.draw(byte_mutations(path.read_bytes()))
    assert_pond_error_or(load_opgraph, lambda g: isinstance(g, OpGraph), blob)


@given(blob=byte_mutations(_gemm().SerializeToString(), max_edits=3))
@FUZZ
def test_byte_mutations_of_a_float_model_load_or_are_refused(blob):
    intact = load_onnx(_gemm())

    def same_or_valid(m):
        assert isinstance(m, FloatModel) and len(m.layers) == 1
        assert np.all(np.isfinite(m.layers[0].params["weight"]))
        if m.input_shape == intact.input_shape and m.layers[0].params["weight"].shape == (3, 2):
            run_float(m, np.ones((1, 3)))  # accepted models run

    assert_pond_error_or(load_onnx, same_or_valid, blob)


@given(
    field=st.sampled_from(["init_dims", "init_type", "input_dim", "attr", "raw"]),
    value=st.one_of(st.integers(-(2**40), 2**40), st.sampled_from([0, -1, 2**31, 2**63 - 1])),
)
@FUZZ
def test_field_mutations_of_a_float_model_load_or_are_refused(field, value):
    model = _gemm()
    init = model.graph.initializer[0]
    if field == "init_dims":
        init.dims[0] = value
    elif field == "init_type":
        init.data_type = value % 2**31
    elif field == "input_dim":
        model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = value
    elif field == "attr":
        model.graph.node[0].attribute[0].i = value
    else:
        init.raw_data = init.raw_data[: abs(value) % 24]
    assert_pond_error_or(load_onnx, lambda m: isinstance(m, FloatModel), model)
    assert_pond_error_or(load_opgraph, lambda g: isinstance(g, OpGraph), model)


# -- silent garbage: NaN weights, unrepresentable requantization scales, wrong calibration columns ---------------
@given(i=st.integers(0, 1), j=st.integers(0, 2), bad=st.sampled_from([float("nan"), float("inf"), -float("inf")]))
@FUZZ
def test_non_finite_weights_are_refused_naming_the_element(i, j, bad):
    w = W_INSIDE.copy()
    w[i, j] = bad
    assert_pond_error(load_onnx, _gemm(w), match=f"weight[{j}, {i}]", error=ONNXError)  # stored (K, O)
    layer = FloatLayer("fc", "gemm", (-1,), {"weight": w.T.astype(np.float64), "bias": None}, (2,))
    assert_pond_error(run_float, [layer], np.ones((1, 3)), match=f"weight[{j}, {i}]", error=ONNXError)


def _scaled_qdq(scale: float) -> onnx.ModelProto:
    m = _gemm_chain()
    for init in m.graph.initializer:
        if init.name == "out_s":
            init.CopyFrom(numpy_helper.from_array(np.array(scale, np.float32), "out_s"))
    return m


@given(scale=st.floats(1e10, 1e29))
@settings(max_examples=15, deadline=3000)
def test_unrepresentable_output_scales_are_refused_not_zeroed(scale):
    model = _scaled_qdq(scale)
    assert_pond_error(load_qdq, model, match="requantization multiplier", error=ONNXError)
    for dev in registry.devices():
        if dev.takes_graphs:  # the graph path rewrites QDQ itself: the same refusal
            assert_pond_error(dev.map_graph, load_opgraph(model), match="requantization multiplier")


def test_unrepresentable_scales_on_every_qdq_path_and_the_cli(tmp_path, capsys):
    good = load_qdq(_gemm_chain())
    bad = dataclasses.replace(good, layers=tuple(dataclasses.replace(ly, out_scale=1e29) for ly in good.layers))
    path = _save(_scaled_qdq(1e29), tmp_path / "q.onnx")
    for dev in registry.devices():
        if not dev.takes_onnx:
            continue
        with pytest.raises(PondError, match="requantization"):  # never an OverflowError or zero multipliers
            dev.map_qdq(bad)
        assert main(["map", str(path), "--device", dev.name]) == 1
        err = capsys.readouterr().err
        assert "requantization multiplier" in err and "Traceback" not in err


def test_calibration_with_the_wrong_columns_is_refused(tmp_path, capsys):
    path = _save(_gemm(), tmp_path / "m3.onnx")
    np.save(tmp_path / "x7.npy", np.random.default_rng(0).random((5, 7)))
    np.save(tmp_path / "x3.npy", np.random.default_rng(0).random((5, 3)))
    for dev in registry.devices():
        if not dev.takes_onnx:
            continue
        assert main(["map", str(path), "--device", dev.name, "--calibration", str(tmp_path / "x7.npy")]) == 1
        err = capsys.readouterr().err
        assert "(5, 7)" in err and "3" in err
        assert main(["map", str(path), "--device", dev.name, "--calibration", str(tmp_path / "x3.npy")]) == 0
        capsys.readouterr()
        with pytest.raises(PondError, match=r"\(5, 7\)"):
            dev.map_onnx(load_onnx(path), np.ones((5, 7)))
