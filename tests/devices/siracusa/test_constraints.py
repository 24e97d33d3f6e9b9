"""Constraint checks (all reported together), L1 tiling rules, memory placement, NPU eligibility."""

from __future__ import annotations

import numpy as np
import pytest

from pondlib.devices.siracusa import (
    QLIF,
    SIRACUSA,
    Conv2dLayer,
    GemmLayer,
    IntLIFLayer,
    QConv2d,
    QGemm,
    QRequant,
    ReLU,
    RequantShift,
    SiracusaConfig,
    SiracusaSim,
    check_constraints,
    config_from_specification,
    mapper,
    npu_eligibility,
    place_memory,
    plan_layer,
)
from pondlib.errors import ConfigError, ConstraintError

RQ = RequantShift(mul=1)


def test_every_violation_is_reported_together():
    cfg = SiracusaConfig(
        n_input=16,
        layers=(
            QGemm("w_range", weight=np.full((16, 32), 300), requant=RQ),  # int8 range
            QGemm("div3", weight=np.ones((32, 32)), requant=RequantShift(mul=1, div=3)),  # power of two
            QGemm("shift40", weight=np.ones((32, 32)), requant=RequantShift(mul=1, div=2**40)),
            QGemm("rq_ovf", weight=np.full((32, 32), 127), requant=RequantShift(mul=2**20, div=2**10)),
            QGemm("acc_ovf", weight=np.ones((32, 32)), bias=np.full(32, 2**31 - 10), requant=RQ),
            QGemm("chunk", weight=np.ones((32, 20)), requant=RQ),  # O = 20
            QGemm("raw", weight=np.ones((20, 8))),
            QLIF("lif", beta_mul=1, in_mul=2**28, add=0, shift=4, threshold=np.zeros(8, dtype=int)),
        ),
    )
    violations = check_constraints(cfg)
    rules = {(v.rule, v.module) for v in violations}
    for expected in [
        ("weight_range", "w_range"),
        ("div_power_of_two", "div3"),
        ("shift_range", "shift40"),
        ("requant_overflow", "rq_ovf"),
        ("acc_overflow", "acc_ovf"),
        ("gemm_chunk", "chunk"),
        ("lif_threshold", "lif"),
        ("lif_overflow", "lif"),
    ]:
        assert expected in rules, expected
    for v in violations:  # every violation names rule, module, value, limit and a remedy
        assert v.rule and v.module and v.value is not None and v.limit is not None and v.remedy
    config, ok, message = config_from_specification(cfg)
    assert not ok and message.startswith(f"{len(violations)} configuration problem(s)")
    with pytest.raises(ConfigError) as err:
        SiracusaSim(cfg)
    assert len(err.value.problems) == len(violations)


def test_overflow_check_uses_the_value_range_not_the_worst_case():
    # K = 784 with small weights: K * 127 * 127 would overflow a 24-bit budget, the real range is small
    w = np.zeros((784, 16), dtype=int)
    w[:10] = 3
    r = RequantShift(mul=2**16, div=2**16)
    assert check_constraints(SiracusaConfig(layers=(QGemm("fc", w, requant=r),), n_input=784)) == []
    w[:, 0] = 127  # now channel 0 can reach 784 * 128 * 127 * 2^16
    v = check_constraints(SiracusaConfig(layers=(QGemm("fc", w, requant=r),), n_input=784))
    assert [x.rule for x in v] == ["requant_overflow"]


def test_mapper_raises_all_violations_at_once():
    rng = np.random.default_rng(0)
    layers = [
        GemmLayer("fc1", rng.normal(size=(8, 20))),
        ReLU("r1"),
        GemmLayer("fc2", rng.normal(size=(20, 4)) * 1e-9, np.full(4, 1e3)),
        GemmLayer("fc3", rng.normal(size=(4, 4))),
    ]
    with pytest.raises(ConstraintError) as err:
        mapper(layers, calibration=rng.normal(size=(50, 8)), l1_budget=100)
    rules = set(err.value.rules)
    assert {"gemm_chunk", "multiplier_underflow", "l1_tile_fit"} <= rules
    spec = mapper(layers, calibration=rng.normal(size=(50, 8)), l1_budget=100, check=False)
    assert {v.rule for v in spec.violations} == rules
    with pytest.raises(ConstraintError) as err:
        mapper([GemmLayer("a", np.ones((8, 4))), GemmLayer("b", np.ones((5, 4)))], calibration=np.ones((2, 8)))
    assert err.value.rules == ["layer_shape"]


def test_gemm_tiles_never_split_k_and_follow_the_chunk_rule():
    g = QGemm("fc", weight=np.zeros((1024, 256), dtype=int), requant=RQ)
    for buffering in (1, 2):
        plan = plan_layer(g, rows=128, budget=64_000, buffering=buffering)
        assert plan.fits and plan.n_tiles > 1
        m, o = plan.tile["m"], plan.tile["o"]
        assert o % 16 == 0  # O >= 16: chunks of 16
        assert all(b % 1024 == 0 for b in plan.in_bytes)  # whole rows of K
        assert plan.tile_bytes == m * 1024 + 1024 * o + 8 * o + m * o
        assert plan.footprint == buffering * plan.tile_bytes <= 64_000
    small = plan_layer(QGemm("o10", weight=np.zeros((64, 10), dtype=int), requant=RQ), budget=64_000)
    assert small.tile == {"m": 1, "o": 10} and small.n_tiles == 1  # O < 16: one chunk


def test_double_buffering_doubles_the_footprint():
    g = QGemm("fc", weight=np.zeros((256, 64), dtype=int), requant=RQ)
    single = plan_layer(g, rows=1, budget=64_000, buffering=1)
    double = plan_layer(g, rows=1, budget=64_000, buffering=2)
    assert single.tile == double.tile and double.footprint == 2 * single.footprint
    # a layer that fits single-buffered but not double-buffered says why
    k = 60_000 // 17
    tight = QGemm("tight", weight=np.zeros((k, 16), dtype=int), requant=RQ)
    assert plan_layer(tight, budget=64_000, buffering=1).fits
    p2 = plan_layer(tight, budget=64_000, buffering=2)
    assert not p2.fits and "never tiled" in p2.reason and str(k) in p2.reason


def test_conv_and_eltwise_plans():
    c = QConv2d("c", weight=np.zeros((3, 3, 32, 64), dtype=int), in_shape=(64, 64, 32), requant=RQ, padding=1)
    plan = plan_layer(c, budget=64_000, buffering=2)
    assert plan.fits and plan.n_tiles > 1 and plan.footprint <= 64_000 and plan.tile["o"] % 16 == 0
    lif = QLIF("lif", beta_mul=1, in_mul=1, add=0, shift=0, threshold=np.ones(10_000, dtype=int))
    p = plan_layer(lif, budget=64_000, buffering=1)
    assert p.fits and p.tile["n"] * (4 + 2 + 2 + 1 + 12 + 2) <= 64_000


def test_placement_l2_then_l3_and_l2_overflow():
    small = QGemm("a", weight=np.zeros((64, 64), dtype=int), requant=RQ)
    big = QGemm("b", weight=np.zeros((64, 40_000), dtype=int), requant=RQ)
    p = place_memory(SiracusaConfig(layers=(small, big), n_input=64))
    assert p.weights == {"a": "L2", "b": "L3"} and p.violations == ()
    # 2 MB of live activations cannot fit L2: an l2_fit violation
    wide = QRequant("act", n=SIRACUSA.l2_bytes, requant=RQ)
    p = place_memory(SiracusaConfig(layers=(wide,), n_input=SIRACUSA.l2_bytes))
    assert [v.rule for v in p.violations] == ["l2_fit"]
    # the weight memory takes NPU layers' weights when enabled
    cfg = SiracusaConfig(layers=(small,), n_input=64, npu_layers=("a",), use_weight_memory=True)
    assert place_memory(cfg).weights == {"a": "WMEM"}


@pytest.mark.parametrize(
    "layer, eligible, words",
    [
        (QGemm("g", np.zeros((8, 16), dtype=int), requant=RQ), True, "1x1"),
        (QConv2d("pw", np.zeros((1, 1, 8, 16), dtype=int), (4, 4, 8), requant=RQ), True, "1x1"),
        (QConv2d("c3", np.zeros((3, 3, 8, 16), dtype=int), (4, 4, 8), requant=RQ), True, "3x3"),
        (QConv2d("dw", np.zeros((3, 3, 1, 8), dtype=int), (4, 4, 8), requant=RQ, groups=8), True, "depthwise"),
        (QConv2d("c5", np.zeros((5, 5, 8, 16), dtype=int), (8, 8, 8), requant=RQ), False, "kernel 5x5"),
        (QConv2d("s2", np.zeros((3, 3, 8, 16), dtype=int), (8, 8, 8), requant=RQ, stride=2), False, "stride 2"),
        (QConv2d("grp", np.zeros((3, 3, 4, 16), dtype=int), (8, 8, 8), requant=RQ, groups=2), False, "grouped"),
        (QGemm("neg", np.zeros((8, 16), dtype=int), requant=RequantShift(mul=[-1] * 16)), False, "unsigned"),
        (QGemm("raw", np.zeros((8, 16), dtype=int)), False, "accumulator"),
        (QRequant("relu", 8, RequantShift(mul=1, signed=False)), False, "convolutions only"),
        (QLIF("lif", 1, 1, 0, 0, np.ones(8, dtype=int)), False, "convolutions only"),
    ],
)
def test_npu_eligibility_names_the_rule(layer, eligible, words):
    ok, reason = npu_eligibility(layer)
    assert ok is eligible and words in reason


def test_npu_all_reports_ineligible_layers():
    rng = np.random.default_rng(1)
    layers = [
        Conv2dLayer("c5", rng.normal(size=(5, 5, 2, 16)), (8, 8, 2)),
        ReLU("r"),
        GemmLayer("fc", rng.normal(size=(4 * 4 * 16, 10))),
    ]
    with pytest.raises(ConstraintError) as err:
        mapper(layers, calibration=rng.normal(size=(20, 128)), npu="all")
    assert [(v.rule, v.module) for v in err.value.violations] == [("npu_required", "c5")]
    spec = mapper(layers, calibration=rng.normal(size=(20, 128)), npu="auto")
    assert spec.config.npu_layers == ("fc",)
    assert [r.npu_eligible for r in spec.reports] == [False, True]


def test_lif_mapping_options_reach_the_integer_layer():
    rng = np.random.default_rng(2)
    layers = [
        GemmLayer("fc", rng.normal(size=(8, 16))),
        IntLIFLayer("lif", alpha=0.9, threshold=1.0, n=16, state_bits=12, reset="zero", compare=">"),
    ]
    spec = mapper(layers, calibration=rng.normal(size=(10, 20, 8)))
    q = spec.config.layers[1]
    assert (q.state_bits, q.reset, q.compare) == (12, "zero", ">")
    assert spec.config.layers[0].requant is None  # raw int32 accumulator into the LIF
    assert check_constraints(spec.config) == []
