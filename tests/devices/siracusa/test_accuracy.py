"""The digits MLP quantized for Siracusa: int8 within 0.5 percentage points of float."""

from __future__ import annotations

import numpy as np

from pondlib.devices.siracusa import GemmLayer, ReLU, SiracusaSim, check_constraints, mapper, quantize_input
from tests.devices.siracusa.digits_mlp import load_digits_split, predict_float, train_mlp


def test_digits_mlp_int8_within_half_a_point_of_float():
    x_tr, y_tr, x_te, y_te = load_digits_split()
    params = train_mlp(x_tr, y_tr)
    acc_float = float(np.mean(predict_float(params, x_te) == y_te))
    layers = []
    for i, (W, b) in enumerate(params):
        layers.append(GemmLayer(f"fc{i}", W, b))
        if i < len(params) - 1:
            layers.append(ReLU(f"relu{i}"))
    spec = mapper(layers, calibration=x_tr)
    assert check_constraints(spec.config) == []
    assert spec.config.input_signed is False  # pixels 0..16 -> uint8 input
    out, _, rec = SiracusaSim(spec.config).evolve(quantize_input(x_te[:, None, :], spec.config), record=True)
    acc_int = float(np.mean(out[:, 0].argmax(-1) == y_te))
    assert acc_float > 0.95
    assert abs(acc_int - acc_float) <= 0.005, (acc_float, acc_int)
    assert rec["fc0/out"].min() >= 0 and rec["fc2/out"].min() < 0  # ReLU fused as unsigned, logits signed
