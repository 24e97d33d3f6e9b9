"""Rockpool's module, record, mapper, specification and XyloSim call styles on pondlib (our own tests of
the call styles of Rockpool's ``test_xylosim_v2.py``, ``test_xylo_mapper_v2.py``,
``test_xylo_pipeline_v2.py`` and its module tests; see README.md here). Every result is compared with
pondlib's native pipeline, bit for bit."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.compat import rockpool as rp
from pondlib.devices.xylo import XyloSim as NativeSim
from pondlib.devices.xylo import config_from_specification as native_config
from pondlib.devices.xylo import mapper as native_mapper
from pondlib.devices.xylo.specification import IGNORED_KEYS, KEY_ALIASES, SPEC_KEYS
from pondlib.errors import ConfigError, ConstraintError, GraphError, SimulationError
from pondlib.transform import channel_quantize
from pondlib.transform import quantize_methods as q
from tests.strategies import assert_pond_error, bad_positive_floats, bad_types

x = rp.device("xylo")  # Rockpool: import rockpool.devices.xylo.syns61201 as x


@pytest.fixture(scope="module")
def net():
    n_in, n_ien, n_hid, n_oen, n_out = 2, 4, 8, 4, 6
    return rp.Sequential(
        rp.Linear((n_in, n_ien)),
        rp.LIF(n_ien),
        rp.Linear((n_ien, n_hid)),
        rp.LIF(n_hid, has_rec=True),
        rp.Linear((n_hid, n_oen)),
        rp.LIF(n_oen),
        rp.Linear((n_oen, n_out)),
        rp.LIF(n_out),
    )


def test_modules_without_a_key():
    lin = rp.Linear((2, 3), has_bias=True)
    assert isinstance(lin, nn.Linear) and np.asarray(lin.weight).shape == (2, 3) and np.asarray(lin.bias).shape == (3,)
    lif = rp.LIF(4, has_rec=True)
    again = rp.LIF(4, has_rec=True)
    assert isinstance(lif, nn.LIF) and np.asarray(lif.w_rec).shape == (4, 4)
    np.testing.assert_array_equal(np.asarray(lif.w_rec), np.asarray(again.w_rec))  # reproducible
    other = rp.LIF(4, has_rec=True, key=jax.random.PRNGKey(5))
    assert not np.array_equal(np.asarray(lif.w_rec), np.asarray(other.w_rec))
    w = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(rp.Linear((2, 3), weight=w).weight), w)


def test_nested_records_equal_the_flat_ones(net):
    inp = np.random.default_rng(0).poisson(0.5, (20, 2)).astype(np.float32)
    out, _, rec = net(inp, record=True)
    native_out, _, flat = net.module(inp, record=True)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(native_out))
    assert set(rec) == {k.split("/")[0] for k in flat}
    for key, value in flat.items():
        mod, field = key.split("/")
        np.testing.assert_array_equal(np.asarray(rec[mod][field]), np.asarray(value))
        np.testing.assert_array_equal(np.asarray(rec[key]), np.asarray(value))


def test_rockpool_pipeline_equals_the_native_one(net):
    spec = x.mapper(net.as_graph())
    config, is_valid, msg = x.config_from_specification(**channel_quantize(**spec))
    assert is_valid, msg
    xmod = x.XyloSim.from_config(config)
    raster = np.random.default_rng(1).random((200, 2)) < 0.3
    out, _, rec = xmod(raster, record=True)
    native_cfg, ok, _ = native_config(channel_quantize(native_mapper(net.as_graph())))
    want, _, want_rec = NativeSim.from_config(native_cfg).evolve(raster, record=True)
    assert ok and np.array_equal(out, want) and rec.keys() == want_rec.keys()


def test_output_modes_and_minimal_specification():
    n_in, n_hid, n_out = 8, 3, 2
    spec = {"weights_in": np.ones((n_in, n_hid, 2), "int"), "weights_out": np.ones((n_hid, n_out), "int")}
    raster = np.random.default_rng(2).random((100, n_in)) < 0.1
    full = {
        **spec,
        "weights_rec": np.ones((n_hid, n_hid, 2), "int"),
        "dash_mem": np.ones(n_hid, "int"),
        "dash_mem_out": np.ones(n_out, "int"),
        "dash_syn": np.ones(n_hid, "int"),
        "dash_syn_2": np.ones(n_hid, "int"),
        "dash_syn_out": np.ones(n_out, "int"),
        "threshold": np.ones(n_hid, "int"),
        "threshold_out": np.ones(n_out, "int"),
        "bias": np.ones(n_hid, "int"),
        "bias_out": np.ones(n_out, "int"),
        "weight_shift_in": 0,
        "weight_shift_rec": 0,
        "weight_shift_out": 0,
        "aliases": None,
    }
    minimal = x.XyloSim.from_specification(**spec)
    assert minimal.sim.config.threshold.tolist() == [0, 0, 0]  # Rockpool's defaults: thresholds 0, dashes 1
    assert minimal.sim.config.dash_mem.tolist() == [1, 1, 1]
    native = NativeSim.from_specification(**full)
    _, _, want = native.evolve(raster, record=True)
    for mode, key in (("Vmem", "Vmem_out"), ("Isyn", "Isyn_out"), ("Spike", None)):
        native.reset_state()
        out, _, _ = x.XyloSim.from_specification(**full, output_mode=mode)(raster)
        expected = want[key] if key else native.evolve(raster)[0]
        np.testing.assert_array_equal(out, expected)


def test_spec_is_a_dict_that_deletes_and_refuses_unknown_keys(net):
    spec = x.mapper(net.as_graph(), max_hidden_neurons=2000)  # a cap above the chip's: the chip's own
    del spec["weights_rec"]
    q = channel_quantize(**spec)
    config, ok, msg = x.config_from_specification(**q)
    assert ok, msg
    assert not np.any(config.weights_rec)
    with pytest.raises(ConfigError, match="bogus"):
        spec["bogus"] = 1
    with pytest.raises(ConfigError, match="bogus"):
        spec.update(bogus=1)
    with pytest.raises(ConfigError, match="bogus"):
        x.config_from_specification(**q, bogus=1)


def test_integer_dtypes_cast_whole_numbers_only():
    ones = rp.Sequential(
        rp.Linear((2, 3), weight=np.ones((2, 3))),
        rp.LIF(3, threshold=2.0),
        rp.Linear((3, 1), weight=np.full((3, 1), 2.0)),
        rp.LIF(1, threshold=3.0),
    )
    spec = x.mapper(ones.as_graph(), weight_dtype=int, threshold_dtype=int, dash_dtype="float")
    assert spec["weights_in"].dtype == np.int64 and spec["threshold"].tolist() == [2, 2, 2]
    frac = rp.Sequential(rp.Linear((2, 3), weight=np.full((2, 3), 0.4)), rp.LIF(3), rp.Linear((3, 1)), rp.LIF(1))
    err = assert_pond_error(x.mapper, frac.as_graph(), weight_dtype=int, error=ConfigError)
    assert "weights_in" in str(err) and "quantize" in str(err)


def test_weight_biases_warn_and_are_dropped_as_rockpool_does():
    lin = rp.Linear((2, 3), bias=np.full(3, 0.1))
    biased = rp.Sequential(lin, rp.LIF(3), rp.Linear((3, 1)), rp.LIF(1))
    with pytest.raises(rp.DRCError, match="linear_bias"):
        native_mapper(biased.as_graph())  # pondlib's own mapper: say what to drop
    with pytest.warns(rp.DRCWarning, match="linear_bias"):
        spec = x.mapper(biased.as_graph())
    want = native_mapper(biased.as_graph(), drop_biases=True)
    np.testing.assert_array_equal(spec["weights_in"], want.weights_in)
    spec.update(q.global_quantize(**spec))  # Rockpool's documented deployment line
    config, ok, msg = x.config_from_specification(**spec)
    assert ok, msg


def test_design_rule_errors_are_drc_errors():
    assert rp.DRCError is ConstraintError and x.DRCError is ConstraintError and issubclass(rp.DRCWarning, Warning)
    small = rp.Sequential(rp.Linear((2, 3)), rp.LIF(3), rp.Linear((3, 4)), rp.LIF(4))
    with pytest.raises(rp.DRCError, match="hidden"):
        x.mapper(small.as_graph(), max_hidden_neurons=2)  # Rockpool's cap argument (the chip's is 1000)
    wide = rp.Sequential(rp.Linear((2, 3)), rp.LIF(3), rp.Linear((3, 64)), rp.LIF(64))
    with pytest.raises(rp.DRCError):
        x.mapper(wide.as_graph())


@given(name=st.one_of(bad_types(), st.sampled_from(["no-such-chip", "XYLO ", ""])))
@settings(max_examples=10, deadline=None)
def test_device_lookup_refuses_unknown_devices(name):
    assert_pond_error(rp.device, name, match="device")  # the registry names the known devices


@pytest.mark.parametrize("name", ["siracusa", "spinnaker2"])
def test_device_lookup_refuses_devices_without_an_adapter(name):
    assert_pond_error(rp.device, name, match="adapter", error=ConfigError)


@given(shape=st.one_of(bad_types().filter(lambda v: not isinstance(v, list)), st.tuples(st.integers(-3, 0))))
@settings(max_examples=15, deadline=None)
def test_bad_module_arguments_refused(shape):
    assert_pond_error(rp.Linear, shape, error=GraphError)
    assert_pond_error(rp.LIF, shape, error=GraphError)


@given(value=st.one_of(bad_types(), st.sampled_from(["vmem", "spike", "Spikes"])))
@settings(max_examples=15, deadline=None)
def test_bad_output_mode_refused(value):
    spec = {"weights_in": np.ones((2, 3), "int"), "weights_out": np.ones((3, 1), "int")}
    assert_pond_error(x.XyloSim.from_specification, output_mode=value, error=SimulationError, **spec)


@given(dtype=st.sampled_from([str, bool, complex, "U3", object]))
@settings(max_examples=5, deadline=None)
def test_bad_dtypes_refused(net, dtype):
    assert_pond_error(x.mapper, net.as_graph(), weight_dtype=dtype, match="weight_dtype", error=ConfigError)


KNOWN = set(SPEC_KEYS) | set(KEY_ALIASES) | set(IGNORED_KEYS)


@given(key=st.text(min_size=1, max_size=12).filter(lambda k: k not in KNOWN))
@settings(max_examples=15, deadline=None)
def test_rockpool_spec_refuses_unknown_keys(key):
    spec = x.RockpoolSpec(weights_in=np.ones((2, 3)))
    assert_pond_error(spec.__setitem__, key, 1, match="unknown", error=ConfigError)
    assert_pond_error(spec.update, {key: 1}, error=ConfigError)
    assert set(spec) == {"weights_in"}


def test_calc_bitshift_decay_is_the_mappers_dash(net):
    spec = x.mapper(net.as_graph())
    lifs = [m for m in net.module.layers if isinstance(m, nn.LIF)]
    hidden = np.concatenate([np.broadcast_to(np.asarray(m.tau_mem), (m.n_neurons,)) for m in lifs[:-1]])
    # the float specification holds log2(tau / dt); the quantizer rounds it to the chip's dash
    np.testing.assert_array_equal(x.calc_bitshift_decay(hidden, 1e-3), channel_quantize(**spec)["dash_mem"])
    assert x.calc_bitshift_decay([0.0005, 0.0015], 1e-3).tolist() == [0, 1]  # log2 -1 -> 0; rint(0.585) = 1


@given(tau=bad_positive_floats(), dt=st.one_of(bad_positive_floats(), st.just(1e-3)))
@settings(max_examples=15, deadline=None)
def test_calc_bitshift_decay_refuses_bad_time_constants(tau, dt):
    assert_pond_error(x.calc_bitshift_decay, tau, dt)


def test_deleting_from_pondlibs_own_specification(net):
    spec = native_mapper(net.as_graph())
    shape = spec.weights_rec.shape
    assert np.any(spec.weights_rec)
    del spec["weights_rec"]  # Rockpool's deletion: the field's default (no recurrence)
    assert not np.any(spec.weights_rec) and spec.weights_rec.shape == shape
    assert_pond_error(spec.__delitem__, "threshold", match="threshold", error=ConfigError)  # required


@given(key=st.one_of(st.text(min_size=1, max_size=10).filter(lambda k: k not in KNOWN), st.integers(), st.none()))
@settings(max_examples=10, deadline=None)
def test_deleting_an_unknown_key_is_refused_by_name(key):
    spec = native_mapper(rp.Sequential(rp.Linear((2, 3)), rp.LIF(3), rp.Linear((3, 1)), rp.LIF(1)).as_graph())
    err = assert_pond_error(spec.__delitem__, key, match="unknown key", error=ConfigError)
    assert repr(key)[:6] in str(err)
    assert_pond_error(spec.__delitem__, [key], match="unknown key", error=ConfigError)  # unhashable too
