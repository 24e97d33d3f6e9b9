"""Timing model: the paper's 784-512-256-16 figures within 10 %, and predictions for other sizes."""

from __future__ import annotations

import numpy as np
import pytest

from pondlib.devices.spinnaker2.dnn import MLP, dnn_mapper
from pondlib.devices.spinnaker2.timing import PAPER_ANCHORS, PaperAnchors, calibrate, estimate
from pondlib.errors import ConfigError


def _close(got: float, want: float) -> bool:
    return abs(got - want) <= 0.10 * want


def test_paper_anchors_within_ten_percent():
    r = estimate((784, 512, 256, 16), softmax=True)
    fc1 = r.layers[0]
    a = PAPER_ANCHORS
    assert _close(r.total_s, a.total_s)  # 688 us
    assert _close(fc1.total_s, a.fc1_s)  # 323 us
    assert _close(fc1.fetch_s, a.fc1_fetch_s)  # 192 us
    assert _close(fc1.mla_s, a.fc1_mla_s) and _close(fc1.mla_busy, 0.09)
    assert all(_close(lt.overhead_s, a.layer_overhead_s) for lt in r.layers)  # 13 us per layer
    assert _close(r.setup_s, 39e-6) and _close(r.cleanup_s, 93e-6)
    # fetch is the effective DRAM bandwidth of the facts table (2.09 GB/s)
    assert _close(401408 / fc1.fetch_s, 2.09e9)
    sched_share = sum(lt.overhead_s for lt in r.layers) / r.total_s
    assert sched_share < 0.1
    table = r.table()
    assert "fc1" in table and "total" in table and len(table.splitlines()) == 1 + 3 + 4


def test_predictions_scale_with_layer_size():
    base = estimate((784, 512, 256, 16))
    wider = estimate((784, 1024, 256, 16))
    assert wider.layers[0].fetch_s == pytest.approx(2 * base.layers[0].fetch_s)
    assert wider.layers[0].workers > base.layers[0].workers
    assert wider.total_s > base.total_s
    tiny = estimate((64, 64, 10))
    assert all(lt.overhead_s / lt.total_s > 0.2 for lt in tiny.layers)  # small layers: overhead matters
    assert estimate((784, 512, 256, 16), softmax=True).total_s - base.total_s == pytest.approx(50e-6)


def test_estimate_of_a_config_uses_its_workers():
    rng = np.random.default_rng(0)
    mlp = MLP.from_arrays([rng.normal(size=(784, 512)) * 0.03, rng.normal(size=(512, 16)) * 0.03])
    cfg = dnn_mapper(mlp, calibration=rng.random((4, 784)), workers={"fc1": 8})
    r = estimate(cfg)
    assert [lt.workers for lt in r.layers] == [8, 1]
    assert r.layers[0].mla_s < estimate((784, 512, 16)).layers[0].mla_s
    assert r.as_dict()["layers"][0]["workers"] == 8


def test_bad_inputs():
    with pytest.raises(ConfigError):
        estimate((784,))
    with pytest.raises(ConfigError):
        calibrate(PaperAnchors(fc1_s=100e-6))  # layer shorter than fetch + MLA + scheduling
