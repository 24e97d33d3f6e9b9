"""DNN path: power-of-two int8 quantization, worker split, accumulator check, digits accuracy."""

from __future__ import annotations

import numpy as np
import pytest

from pondlib.devices.spinnaker2.dnn import MLP, DenseLayer, default_workers, dnn_mapper, train_mlp
from pondlib.devices.spinnaker2.limits import SPINNAKER2_CHIP
from pondlib.devices.spinnaker2.sim import DNNSim
from pondlib.errors import ConstraintError, GraphError, QuantizationError, SimulationError
from pondlib.graph import GraphHolder, LinearWeights, connect_modules


def test_digits_int8_within_half_a_point_of_float():
    from sklearn.datasets import load_digits

    d = load_digits()
    x, y = d.data / 16.0, d.target
    perm = np.random.default_rng(0).permutation(len(y))
    te, tr = perm[:450], perm[450:]
    mlp = train_mlp(x[tr], y[tr], (64,), epochs=40, seed=0)
    acc_float = float(np.mean(mlp.predict(x[te]) == y[te]))
    cfg = dnn_mapper(mlp, calibration=x[tr])
    y_int, _, rec = DNNSim.from_config(cfg).evolve(cfg.quantize_input(x[te]), record=True)
    acc_int8 = float(np.mean(np.argmax(y_int, axis=1) == y[te]))
    print(f"digits 64-64-10: float {acc_float:.4f}, int8 on the DNN simulator {acc_int8:.4f}")
    assert acc_float > 0.94
    assert abs(acc_int8 - acc_float) <= 0.005
    assert rec["fc1.y"].min() >= 0 and rec["fc2.acc"].shape == (450, 10)


def test_power_of_two_quantization_by_hand():
    w = np.array([[0.5, -0.25], [1.0, 0.75]])
    mlp = MLP((DenseLayer(w, np.array([0.1, -0.2]), relu=False),))
    cfg = dnn_mapper(mlp, calibration=np.array([[1.0, -2.0], [0.5, 0.5]]))
    layer = cfg.layers[0]
    # max|x| = 2 -> f_x = 5 (2 * 32 = 64 <= 127); max|w| = 1 -> f_w = 6;
    # y = [-1.4, -1.95] and [0.85, 0.05]: max|y| = 1.95 -> f_y = 6 (1.95 * 64 = 124.8); shift 5 + 6 - 6
    assert (cfg.input_frac, layer.w_frac, layer.out_frac, layer.shift) == (5, 6, 6, 5)
    assert layer.weights.tolist() == [[32, -16], [64, 48]]
    # bias 0.1 * 2^11 = 204.8 -> 205, -0.2 * 2^11 = -409.6 -> -410, plus the rounding offset 2^4
    assert layer.bias.tolist() == [205 + 16, -410 + 16]
    xq = cfg.quantize_input(np.array([1.0, -2.0]))
    assert xq.tolist() == [32, -64]
    y, _, rec = DNNSim.from_config(cfg).evolve(xq, record=True)
    assert rec["fc1.acc"].tolist() == [1024 - 4096 + 221, -512 - 3072 - 394]  # -2851, -3978
    assert y.tolist() == [-90, -125]  # floor(-89.1), floor(-124.3)
    assert np.allclose(cfg.dequantize_output(y), mlp.forward([1.0, -2.0]), atol=2**-6)


def test_worker_split_fits_sram():
    rng = np.random.default_rng(0)
    mlp = MLP.from_arrays([rng.normal(size=(784, 512)), rng.normal(size=(512, 256)), rng.normal(size=(256, 16))])
    cfg = dnn_mapper(mlp, calibration=rng.random((8, 784)), overflow="wrap")
    assert [layer.workers for layer in cfg.layers] == [5, 2, 1]
    for layer in cfg.layers:
        k = layer.weights.shape[0]
        assert [c for a, b in layer.tiles for c in range(a, b)] == list(range(layer.weights.shape[1]))
        for a, b in layer.tiles:
            assert k * (b - a) + 5 * (b - a) + k <= SPINNAKER2_CHIP.dnn_worker_bytes
    assert default_workers(784, 512, SPINNAKER2_CHIP) == 5
    with pytest.raises(ConstraintError) as err:
        dnn_mapper(mlp, calibration=rng.random((8, 784)), overflow="wrap", workers={"fc1": 2, "fc9": 1})
    assert err.value.rules == ["worker_sram", "worker_sram"]


def test_accumulator_value_range_check_and_wrap():
    rng = np.random.default_rng(0)
    # 784 inputs: the worst case K * 128 * 127 exceeds 24 bits, the value range does not
    small = MLP.from_arrays([rng.normal(size=(784, 32)) * 0.05, rng.normal(size=(32, 10))])
    cfg = dnn_mapper(small, calibration=rng.random((16, 784)))
    assert cfg.layers[0].acc_worst >= 2**23 > cfg.layers[0].acc_bound
    # all-positive maximal weights and inputs: the bound breaks 24 bits
    m = 127 / 64  # quantizes to 127 exactly (f = 6) for inputs and weights
    big = MLP.from_arrays([np.full((784, 8), m), np.ones((8, 2))])
    cal = np.full((2, 784), m)
    with pytest.raises(ConstraintError) as err:
        dnn_mapper(big, calibration=cal)  # 784 * 127 * 127 = 12.6 M > 2^23
    assert err.value.rules == ["accumulator_width"]
    assert dnn_mapper(big, calibration=cal, acc_bits=29).acc_bits == 29  # 29 bits fit
    wrapped = dnn_mapper(big, calibration=cal, overflow="wrap")
    xq = wrapped.quantize_input(cal[0])
    _, _, rec = DNNSim.from_config(wrapped).evolve(xq, record=True)
    exact = xq @ wrapped.layers[0].weights + wrapped.layers[0].bias
    assert np.all(exact >= 2**23)
    assert np.array_equal(rec["fc1.acc"], ((exact + 2**23) % 2**24) - 2**23)
    with pytest.raises(SimulationError, match="accumulator overflow"):
        DNNSim.from_config(wrapped, overflow="error").evolve(xq)


def test_inputs_and_graph_are_checked():
    rng = np.random.default_rng(0)
    a = LinearWeights._factory(4, 3, "a", None, rng.normal(size=(4, 3)))
    b = LinearWeights._factory(3, 2, "b", None, rng.normal(size=(3, 2)))
    connect_modules(a, b)
    mlp = MLP.from_graph(GraphHolder(list(a.input_nodes), list(b.output_nodes), "g"))
    assert [layer.name for layer in mlp.layers] == ["a", "b"] and [layer.relu for layer in mlp.layers] == [True, False]
    cfg = dnn_mapper(mlp, calibration=rng.normal(size=(10, 4)))
    with pytest.raises(SimulationError):
        DNNSim.from_config(cfg).evolve(np.zeros(4))  # float input: quantize first
    with pytest.raises(SimulationError):
        DNNSim.from_config(cfg).evolve(np.full(4, 300))
    with pytest.raises(QuantizationError):
        dnn_mapper(mlp, calibration=np.full((2, 4), np.nan))
    with pytest.raises(GraphError):
        MLP.from_arrays([np.ones((4, 3)), np.ones((4, 2))])
