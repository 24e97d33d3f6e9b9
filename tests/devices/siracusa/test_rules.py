"""The Siracusa design rules as functions: tables built from them, ids, order of the violations."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from pondlib.devices.siracusa import (
    RULES,
    GemmLayer,
    IntLIFLayer,
    QGemm,
    QRequant,
    ReLU,
    RequantShift,
    SiracusaConfig,
    check_constraints,
    mapper,
)
from pondlib.devices.siracusa import rules as R
from pondlib.devices.siracusa.mapper import MAPPER_RULES
from pondlib.devices.siracusa.sim import SAFETY_RULES
from pondlib.errors import ConstraintError, PondError

CONFIG_IDS = {
    "layer_shape",
    "weight_range",
    "bias_range",
    "acc_overflow",
    "requant_overflow",
    "mul_range",
    "add_range",
    "div_power_of_two",
    "shift_range",
    "out_bits",
    "lif_options",
    "lif_threshold",
    "lif_overflow",
    "gemm_chunk",
    "l1_tile_fit",
    "l2_fit",
    "l3_fit",
    "npu_required",
}
MAPPER_IDS = {"unsupported_layer", "layer_shape", "invalid_parameter", "multiplier_underflow", "unique_names"}


def _prose(fn) -> str:
    return " ".join(inspect.cleandoc(fn.__doc__).split("\n\n")[0].split())


def test_tables_keep_their_rule_ids_and_are_the_rule_docstrings():
    assert set(RULES) == CONFIG_IDS and set(MAPPER_RULES) == MAPPER_IDS
    assert RULES is R.RULES and MAPPER_RULES is R.MAPPER_RULES
    for table, rules in (
        (RULES, R.CHAIN_RULES + R.LAYER_RULES + R.DEPLOYMENT_RULES),
        (MAPPER_RULES, R.FLOAT_LAYER_RULES + R.QUANTIZATION_RULES + R.FLOAT_CHAIN_RULES),
    ):
        introduced = [fn for fn in rules if not R.rule_info(fn).extends]
        assert [R.rule_info(fn).id for fn in introduced] == list(table)  # one function introduces each id
        for fn in introduced:  # the entry starts with the introducing function's prose; extensions follow
            assert table[R.rule_info(fn).id].startswith(R.rule_info(fn).prose) and R.rule_info(fn).prose == _prose(fn)
        for fn in rules:
            assert R.rule_info(fn).prose in table[R.rule_info(fn).id]
        assert {R.rule_info(fn).id for fn in rules} == set(table)


def test_simulator_safety_rules_are_configuration_rules():
    assert SAFETY_RULES <= set(RULES)


def test_rule_marking_refuses_what_would_make_the_table_drift():
    def undocumented(ctx):
        yield from ()

    with pytest.raises(PondError, match="undocumented"):
        R.rule("x")(undocumented)
    with pytest.raises(PondError, match="rule id"):
        R.rule("")

    @R.rule("a")
    def first(ctx):
        """first prose"""
        yield from ()

    @R.rule("a")
    def again(ctx):
        """other prose"""
        yield from ()

    @R.rule("b", extends=True)
    def orphan(ctx):
        """extends nothing"""
        yield from ()

    assert R.rule_table(first) == {"a": "first prose"}
    with pytest.raises(PondError, match="again"):
        R.rule_table(first, again)
    with pytest.raises(PondError, match="orphan"):
        R.rule_table(orphan)
    with pytest.raises(PondError, match="neither marked"):
        R.rule_info(lambda ctx: ())


def test_configuration_violations_come_layer_by_layer_then_the_deployment():
    cfg = SiracusaConfig(
        n_input=16,
        layers=(
            QGemm("a", weight=np.full((16, 20), 300), requant=RequantShift(mul=1, div=3)),
            QGemm("b", weight=np.full((20, 20), 300), requant=RequantShift(mul=1, out_bits=9)),
            QRequant("c", 20, RequantShift(mul=2**40)),
        ),
    )
    got = [(v.rule, v.module) for v in check_constraints(cfg)]
    assert got == [
        ("weight_range", "a"),
        ("div_power_of_two", "a"),
        ("weight_range", "b"),
        ("out_bits", "b"),
        ("mul_range", "c"),
        ("requant_overflow", "c"),
        ("gemm_chunk", "a"),
        ("gemm_chunk", "b"),
    ]
    assert all(v.rule in RULES for v in check_constraints(cfg))


def test_a_broken_chain_is_reported_alone():
    cfg = SiracusaConfig(
        n_input=4,
        layers=(
            QGemm("a", weight=np.full((4, 20), 300), requant=RequantShift(mul=1)),
            QRequant("b", 8, RequantShift(mul=1)),
        ),
    )
    assert [(v.rule, v.module) for v in check_constraints(cfg)] == [("layer_shape", "b")]


def test_float_violations_come_layer_by_layer_then_the_names():
    lif = IntLIFLayer("x", alpha=0.9, threshold=1.0, n=4)
    lif.threshold[1] = -1.0
    layers = [GemmLayer("x", np.ones((3, 4))), lif, ReLU("r"), GemmLayer("y", np.ones((5, 2)))]
    with pytest.raises(ConstraintError) as err:
        mapper(layers, calibration=np.ones((2, 3)))
    assert [(v.rule, v.module) for v in err.value.violations] == [
        ("invalid_parameter", "x"),
        ("layer_shape", "y"),
        ("unique_names", "x"),
    ]
    assert "threshold[1]" in str(err.value)
    # the checks run whatever ``check``: quantization cannot proceed past a broken chain
    with pytest.raises(ConstraintError):
        mapper(layers, calibration=np.ones((2, 3)), check=False)


def test_unsupported_layers_name_the_supported_ones():
    class Pool:
        name = "pool"

    with pytest.raises(ConstraintError) as err:
        mapper([GemmLayer("fc", np.ones((3, 4))), Pool()], calibration=np.ones((2, 3)))
    (v,) = err.value.violations
    assert (v.rule, v.module, v.value, v.limit) == (
        "unsupported_layer",
        "pool",
        "Pool",
        MAPPER_RULES["unsupported_layer"],
    )


def test_underflowing_multipliers_come_first_in_layer_order():
    rng = np.random.default_rng(0)
    layers = [
        GemmLayer("fc1", rng.normal(size=(8, 20))),
        ReLU("r1"),
        GemmLayer("fc2", rng.normal(size=(20, 4)) * 1e-9, np.full(4, 1e3)),
    ]
    x = rng.normal(size=(50, 8))
    spec = mapper(layers, calibration=x, check=False)
    assert [(v.rule, v.module) for v in spec.violations] == [("multiplier_underflow", "fc2"), ("gemm_chunk", "fc1")]
    with pytest.raises(ConstraintError) as err:
        mapper(layers, calibration=x)
    assert list(err.value.violations) == list(spec.violations)
