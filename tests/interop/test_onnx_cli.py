"""``pond map model.onnx``."""

from __future__ import annotations

import numpy as np
import pytest

from pondlib.cli import main
from tests.interop.test_onnx import _mlp


@pytest.mark.parametrize("device", ["siracusa", "spinnaker2"])
def test_map_onnx(tmp_path, capsys, device) -> None:
    import onnx

    m = _mlp()
    del m.graph.node[3:]  # fc, bn, relu
    m.graph.output[0].name = "r"
    path = tmp_path / "m.onnx"
    onnx.save(m, path)
    np.save(tmp_path / "c.npy", np.random.default_rng(0).normal(size=(16, 4)))
    assert main(["map", str(path), "--device", device, "--calibration", str(tmp_path / "c.npy")]) == 0
    assert "fits" in capsys.readouterr().out


def test_map_bad_onnx(tmp_path, capsys) -> None:
    path = tmp_path / "bad.onnx"
    path.write_bytes(b"\x08\x07garbage")
    assert main(["map", str(path), "--device", "siracusa"]) == 1
    err = capsys.readouterr()
    lines = [ln for ln in (err.out + err.err).splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:")


@pytest.fixture(scope="module")
def qdq_mlp(tmp_path_factory):
    from tests.interop.qdq_models import digits, mlp_onnx, quantize

    xtr, ytr, xte, _ = digits()
    d = tmp_path_factory.mktemp("qdq")
    _, qp = quantize(mlp_onnx(xtr, ytr), xtr[:300], d, "mlp")
    return qp, xte[:40].astype(np.float64)


def _one_error(capsys) -> str:
    err = capsys.readouterr()
    lines = [ln for ln in (err.out + err.err).splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), lines
    return lines[0]


@pytest.mark.parametrize("device", ["siracusa", "spinnaker2"])
def test_map_out_then_simulate_equals_python(tmp_path, capsys, qdq_mlp, device) -> None:
    from pondlib.devices.siracusa.onnx import qdq_to_siracusa
    from pondlib.devices.siracusa.sim import SiracusaSim
    from pondlib.devices.spinnaker2.onnx import qdq_to_spinnaker2
    from pondlib.devices.spinnaker2.sim import DNNSim
    from pondlib.interop.onnx import load_qdq

    qp, x = qdq_mlp
    out = tmp_path / ("m.s2img" if device == "spinnaker2" else "m.npz")
    assert main(["map", qp, "--device", device, "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out.replace("\n", "")
    qm = load_qdq(qp)
    xi = qm.quantize_input(x)
    if device == "spinnaker2":
        assert out.read_bytes()[:8] == b"S2DNNIMG"
        ref = DNNSim(qdq_to_spinnaker2(qm)[0]).evolve(xi)[0]
    else:
        ref = SiracusaSim(qdq_to_siracusa(qm)[0]).evolve(xi[:, None, :])[0][:, 0]
    np.save(tmp_path / "xi.npy", xi.astype(np.int8))
    np.save(tmp_path / "x.npy", x)
    for inp, extra in (("xi.npy", []), ("x.npy", ["--quantize"])):
        rec = tmp_path / f"rec_{inp}.npz"
        args = ["simulate", str(out), "--input", str(tmp_path / inp), "--record", str(rec), *extra]
        assert main(args) == 0
        capsys.readouterr()
        with np.load(rec) as r:
            assert np.array_equal(r["output"], ref) and np.array_equal(r["input"], xi)
    # real numbers without --quantize: one error line naming the fix
    assert main(["simulate", str(out), "--input", str(tmp_path / "x.npy")]) == 1
    assert "--quantize" in _one_error(capsys)


def test_map_out_float_onnx_siracusa(tmp_path, capsys) -> None:
    import onnx

    from pondlib.devices.siracusa import load_config

    m = _mlp()
    del m.graph.node[3:]
    m.graph.output[0].name = "r"
    onnx.save(m, tmp_path / "m.onnx")
    out = tmp_path / "f.npz"
    assert main(["map", str(tmp_path / "m.onnx"), "--device", "siracusa", "--out", str(out)]) == 0
    capsys.readouterr()
    cfg = load_config(out)
    np.save(tmp_path / "x.npy", np.random.default_rng(1).random((5, cfg.n_input)))
    assert main(["simulate", str(out), "--input", str(tmp_path / "x.npy"), "--quantize"]) == 0
    assert "Siracusa" in capsys.readouterr().out


def test_simulate_bad_dnn_files(tmp_path, capsys, qdq_mlp) -> None:
    qp, x = qdq_mlp
    np.save(tmp_path / "xi.npy", np.zeros((2, 64), np.int8))
    img, cfg = tmp_path / "m.s2img", tmp_path / "m.npz"
    assert main(["map", qp, "--device", "spinnaker2", "--out", str(img)]) == 0
    assert main(["map", qp, "--device", "siracusa", "--out", str(cfg)]) == 0
    capsys.readouterr()
    data = img.read_bytes()
    (tmp_path / "trunc.s2img").write_bytes(data[: len(data) // 2])
    (tmp_path / "flip.s2img").write_bytes(data[:8] + bytes([data[8] ^ 0xFF]) + data[9:])
    with np.load(cfg) as z:
        entries = dict(z)
    np.savez(tmp_path / "ver.npz", **{**entries, "version": np.array(99)})
    np.savez(tmp_path / "hdr.npz", **{**entries, "header": np.array("{not json")})
    np.savez(
        tmp_path / "arr.npz", **{k: (v.astype(float) if k.startswith("layers") else v) for k, v in entries.items()}
    )
    (tmp_path / "cut.npz").write_bytes(cfg.read_bytes()[:200])
    for name, field in [
        ("trunc.s2img", ""),
        ("flip.s2img", ""),
        ("ver.npz", "version"),
        ("hdr.npz", "header"),
        ("arr.npz", "layers.0"),
    ]:
        assert main(["simulate", str(tmp_path / name), "--input", str(tmp_path / "xi.npy")]) == 1, name
        line = _one_error(capsys)
        assert name in line and field in line, line
    assert main(["simulate", str(tmp_path / "cut.npz"), "--input", str(tmp_path / "xi.npy")]) == 1
    _one_error(capsys)
    for device in ("spinnaker2", "siracusa"):
        assert main(["simulate", str(tmp_path / "none"), "--input", str(tmp_path / "xi.npy"), "--device", device]) == 1
        assert "none" in _one_error(capsys)
    np.save(tmp_path / "big.npy", np.full((2, 64), 300))
    assert main(["simulate", str(img), "--input", str(tmp_path / "big.npy")]) == 1
    _one_error(capsys)
    assert main(["map", qp, "--device", "siracusa", "--out", str(tmp_path)]) == 1
    _one_error(capsys)
