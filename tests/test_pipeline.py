"""The deployment pipeline (:func:`pondlib.deploy`), the device registry and the generic transforms: each
stage equals the device's own parts run by hand, and every entry point refuses bad input with a
pondlib error (hypothesis-generated)."""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pondlib
from pondlib import nn
from pondlib.datasets import EventDataset
from pondlib.devices import registry
from pondlib.devices.core.device import Device, Option
from pondlib.devices.core.report import Table
from pondlib.errors import ConfigError, ConstraintError, GraphError, PondError, QuantizationError
from pondlib.pipeline import Observer
from tests.strategies import assert_pond_error, bad_counts, bad_positive_floats, bad_types

TAU_MEM, TAU_SYN = 0.0155, 0.0015  # decay shifts 4 and 1 at dt = 1 ms


def _net(hidden: int = 12, n_out: int = 4, seed: int = 0):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    return nn.Sequential(
        nn.Linear(16, hidden, key=k1),
        nn.LIF(hidden, tau_mem=TAU_MEM, tau_syn=TAU_SYN, max_spikes_per_dt=31),
        nn.Linear(hidden, n_out, key=k2),
        nn.LIF(n_out, tau_mem=TAU_MEM, tau_syn=TAU_SYN, max_spikes_per_dt=1),
    )


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(0)
    x = rng.poisson(1.0, (80, 10, 16)).astype(np.int32)
    y = rng.integers(0, 4, 80)
    return _net(), EventDataset(x[:64], y[:64], x[64:], y[64:], "random events")


class _Recorder(Observer):
    def __init__(self) -> None:
        self.stages, self.checks, self.lines = [], [], []

    @contextmanager
    def stage(self, text):
        self.stages.append(text)
        yield {}

    def say(self, text):
        self.lines.append(text)

    def checked(self, check):
        self.checks.append(check)


# -- each stage equals the device's parts run by hand -------------------------------------------------
def test_deploy_to_xylo_equals_mapper_quantizer_and_simulator_by_hand(small):
    from pondlib.devices.xylo import XYLO_AUDIO3, XyloSim, channel_quantize, config_from_specification, mapper

    net, data = small
    obs = _Recorder()
    dep = pondlib.deploy(net, device="xylo", data=data, aware=False, observer=obs)
    config, ok, _ = config_from_specification(channel_quantize(mapper(net, XYLO_AUDIO3)))
    want, _, _ = XyloSim.from_config(config).evolve(data.x_test)
    assert ok and dep.name == "Xylo Audio 3" and dep.aware is None and dep.device_acc is None
    np.testing.assert_array_equal(dep.output, want)
    assert dep.final_acc == dep.as_trained_acc == pondlib.training.accuracy(want, data.y_test)
    assert [c.variant for c in obs.checks] == ["Xylo Audio 2"] and obs.checks[0].error is None  # 4 outputs fit
    assert any("Mapping to Xylo Audio 3" in s for s in obs.stages)
    assert dep.report.resources[0].used > 0 and dep.gaps.title.startswith("Float model vs Xylo Audio 3")


def test_deploy_to_spinnaker2_appends_the_latency_and_its_twin_matches_the_chip(small):
    net, data = small
    obs = _Recorder()
    dep = pondlib.deploy(net, device="spinnaker2", data=data, epochs=1, observer=obs)
    assert dep.latency == dep.mapped.latency == 2  # one tick per hop
    assert dep.output.shape == (16, 12, 4)  # T + latency
    assert dep.aware_float_acc == dep.device_acc and min(dep.spikes_equal.values()) == 1.0
    assert dep.agree == 1.0 and dep.history is not None and len(dep.history["loss"]) == 1
    assert any(line.startswith("Device-aware training for the SpiNNaker2 chip") for line in obs.lines)
    assert dep.deployed is dep.aware and dep.aware.extra["network"] is not None


def test_deploy_options_and_limits_override_the_device_settings(small):
    net, data = small
    dep = pondlib.deploy(
        net, device="spinnaker2", data=data, aware=False, limits="board", options={"neuron_model": "lif_curr_exp"}
    )
    assert dep.name == "SpiNNaker2 board (48 chips)" and dep.mapped.spec.neuron_model == "lif_curr_exp"
    with pytest.raises(ConstraintError) as err:
        pondlib.deploy(_net(n_out=10), device="xylo", data=data, aware=False, limits="audio2")
    assert "max_output_neurons" in err.value.rules


def test_deploy_does_not_modify_the_network(small):
    net, data = small
    before = [np.asarray(leaf).copy() for leaf in jax.tree_util.tree_leaves(net)]
    pondlib.deploy(net, device="siracusa", data=data, epochs=1)
    after = jax.tree_util.tree_leaves(net)
    assert all(np.array_equal(a, np.asarray(b)) for a, b in zip(before, after))


# -- bad input ------------------------------------------------------------------------------------------
_FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_FAST
@given(device=st.one_of(bad_types(), st.text(max_size=8).filter(lambda s: s not in registry.names())))
def test_deploy_refuses_unknown_devices(small, device):
    net, data = small
    assert_pond_error(pondlib.deploy, net, device=device, data=data, match="device")


@_FAST
@given(epochs=bad_counts(), field=st.sampled_from(["epochs", "batch_size", "chunk"]))
def test_deploy_refuses_bad_counts(small, epochs, field):
    net, data = small
    assert_pond_error(pondlib.deploy, net, device="xylo", data=data, **{field: epochs}, match=field)


@_FAST
@given(lr=bad_positive_floats().filter(lambda v: v is not None))  # None: the device default
def test_deploy_refuses_bad_learning_rates(small, lr):
    net, data = small
    assert_pond_error(pondlib.deploy, net, device="xylo", data=data, lr=lr, match="lr")


@_FAST
@given(aware=st.one_of(st.text(max_size=5), st.integers(), st.none(), st.floats()))
def test_deploy_refuses_aware_that_is_not_a_bool(small, aware):
    net, data = small
    assert_pond_error(pondlib.deploy, net, device="xylo", data=data, aware=aware, match="aware")


@_FAST
@given(
    case=st.one_of(
        st.builds(
            lambda k: {"options": {k: True}}, st.text(min_size=1, max_size=8).filter(lambda k: k != "drop_biases")
        ),
        st.builds(lambda v: {"options": v}, st.one_of(st.integers(), st.text(max_size=3), st.lists(st.integers()))),
        st.builds(lambda v: {"check": v}, st.one_of(st.integers(), st.text(min_size=1, max_size=3), st.none())),
        st.builds(lambda v: {"limits": v}, st.text(min_size=1, max_size=6).filter(lambda s: s.strip())),
    )
)
def test_deploy_refuses_bad_options_checks_and_variants(small, case):
    net, data = small
    if "limits" in case:
        try:
            registry.get("xylo").limits(case["limits"])
            return  # a real variant name drawn by chance
        except ConfigError:
            pass
    if "check" in case and case["check"] is None:
        return  # None means the device's own checks
    assert_pond_error(pondlib.deploy, net, device="xylo", data=data, **case)


@pytest.mark.parametrize(
    "net, data, match",
    [
        ("not a network", None, "network"),
        (None, object(), "data"),
        (None, (np.zeros((2, 3, 16)), np.zeros(2)), "data"),
    ],
)
def test_deploy_refuses_what_is_not_a_network_or_a_data_set(small, net, data, match):
    good_net, good_data = small
    err = assert_pond_error(
        pondlib.deploy, good_net if net is None else net, device="xylo", data=good_data if data is None else data
    )
    assert match in str(err)


def test_deploy_refuses_a_twin_the_device_does_not_have(small):
    class NoTwin(registry.get("xylo").__class__):
        name = "notwin"
        has_twin = False

    net, data = small
    registry.register(NoTwin())
    try:
        assert_pond_error(pondlib.deploy, net, device="notwin", data=data, aware=True, match="twin")
    finally:
        registry.unregister("notwin")


# -- the registry -----------------------------------------------------------------------------------------
@_FAST
@given(thing=st.one_of(bad_types(), st.just(object())))
def test_register_refuses_what_is_not_a_device(thing):
    assert_pond_error(registry.register, thing, match="Device")


@pytest.mark.parametrize("name", ["", "Upper", "with space", "9lives", "x-y", None, 3])
def test_register_refuses_bad_names(name):
    class Bad(registry.get("xylo").__class__):
        pass

    Bad.name = name
    assert_pond_error(registry.register, Bad(), match="name")


def test_register_refuses_a_taken_name_and_unregister_an_unknown_one():
    assert_pond_error(registry.register, registry.get("xylo").__class__(), match="registered")
    assert_pond_error(registry.unregister, "xylo", match="device")  # built-in chips stay
    assert_pond_error(registry.unregister, "nothing", match="device")


def test_a_device_missing_a_part_says_which():
    class Minimal(Device):
        name = "minimal"
        default_variant = "v"
        variants = {"v": type("L", (), {"name": "Minimal v"})()}

        def limit_rows(self, limits):
            return ()

        def map(self, net, limits=None, *, calibration=None):
            raise NotImplementedError

        def run(self, mapped, x, *, record=True):
            raise NotImplementedError

        def report(self, mapped, record=None):
            raise NotImplementedError

    d = Minimal()
    for call in (lambda: d.emit(None), lambda: d.aware(None), lambda: d.load("x"), lambda: d.map_onnx(None, None)):
        with pytest.raises(PondError, match="minimal has no"):
            call()
    with pytest.raises(TypeError):  # the abstract parts must be implemented
        type("Half", (Device,), {"name": "half"})()


def test_moved_names_still_resolve_with_a_deprecation_warning():
    import pondlib.interop.onnx as ox
    import pondlib.transform as tf
    from pondlib.devices.siracusa.onnx import to_siracusa
    from pondlib.devices.xylo.aware import xylo_aware

    with pytest.warns(DeprecationWarning, match="pondlib.devices.xylo.aware.xylo_aware"):
        assert tf.xylo_aware is xylo_aware
    with pytest.warns(DeprecationWarning, match="moved"):
        assert ox.to_siracusa is to_siracusa
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError):
            tf.no_such_name  # noqa: B018
    import importlib
    import sys

    from pondlib.cprogram import Buffer

    sys.modules.pop("pondlib.codegen.program", None)
    with pytest.warns(DeprecationWarning, match="pondlib.cprogram"):
        old = importlib.import_module("pondlib.codegen.program")
    assert old.Buffer is Buffer


# -- the generic transforms --------------------------------------------------------------------------------
@_FAST
@given(method=st.text(max_size=8).filter(lambda m: m not in ("global", "channel")))
def test_quantize_refuses_methods_the_device_has_not(method):
    from pondlib.devices.xylo.specification import Specification
    from pondlib.transform import quantize

    assert_pond_error(quantize, Specification.zeros(2, 2, 1), method, error=QuantizationError, match="method")


@_FAST
@given(spec=st.one_of(st.integers(), st.text(max_size=4), st.lists(st.integers(), max_size=2)))
def test_quantize_refuses_what_is_not_a_specification(spec):
    from pondlib.transform import channel_quantize

    assert_pond_error(channel_quantize, spec, error=QuantizationError)


def test_quantize_of_a_device_that_quantizes_in_its_mapper_says_so(small):
    from pondlib.transform import channel_quantize

    net, data = small
    spec = registry.get("siracusa").map(net, calibration=data.x_train, drop_synapse=True).spec
    err = assert_pond_error(channel_quantize, spec, error=QuantizationError, match="quantizes itself")
    assert "siracusa" in str(err)


@_FAST
@given(device=st.one_of(bad_types(), st.text(max_size=6).filter(lambda s: s not in registry.names())))
def test_device_aware_refuses_unknown_devices(small, device):
    from pondlib.transform import device_aware

    assert_pond_error(device_aware, small[0], device=device, match="device")


# -- report data -----------------------------------------------------------------------------------------
@_FAST
@given(
    rows=st.one_of(
        st.lists(st.tuples(st.text(max_size=3)), min_size=1, max_size=2).map(tuple),  # one cell for two columns
        st.lists(st.tuples(st.integers(), st.integers()), min_size=1, max_size=2).map(tuple),  # not text
        st.just((["a", "b"],)),  # a list, not a tuple
    ),
)
def test_tables_refuse_rows_that_do_not_fit_their_columns(rows):
    with pytest.raises(ConfigError, match="rows"):
        Table("t", (("a", "left"), ("b", "right")), rows)


@pytest.mark.parametrize("columns", [(("a", "middle"),), (("a",),), ((1, "left"),), ("a",)])
def test_tables_refuse_bad_columns(columns):
    with pytest.raises(ConfigError, match="columns"):
        Table("t", columns)


def test_options_name_their_flags_and_switch_defaults():
    assert Option("drop_biases", "h", switch=True).value_default is False
    assert Option("neuron_model", "h", choices=("a", "b"), default="a").flag == "--neuron-model"


def test_the_chip_devices_refuse_calibration_they_do_not_use(small):
    net, data = small
    for name in ("xylo", "spinnaker2"):
        with pytest.raises(PondError, match="calibration"):
            registry.get(name).map(net, calibration=data.x_train)
    with pytest.raises(PondError, match="calibration"):
        registry.get("siracusa").map(net, drop_synapse=True)
    with pytest.raises(GraphError, match="drop_synapse=True"):
        registry.get("siracusa").map(net, calibration=data.x_train)
