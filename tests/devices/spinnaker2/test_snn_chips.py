"""The SNN path over several chips: slices spread over chips, spikes routed with the hop latency, and the
simulator spike for spike equal to the one-chip run; networks too large for one chip fit on several."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.devices.spinnaker2 import mapper
from pondlib.devices.spinnaker2.config import config_from_specification
from pondlib.devices.spinnaker2.limits import SPINNAKER2_BOARD
from pondlib.devices.spinnaker2.sim import SpiNNaker2Sim
from pondlib.devices.spinnaker2.specification import DeadlineWarning
from pondlib.errors import ConfigError, ConstraintError
from tests.strategies import assert_pond_error, bad_types

SOME = settings(max_examples=20, deadline=None)


def _net(hidden: int = 40, seed: int = 0):
    rng = np.random.default_rng(seed)
    return nn.Sequential(
        nn.Linear(16, hidden, weight=rng.normal(size=(16, hidden))),
        nn.LIF(hidden),
        nn.Linear(hidden, 10, weight=rng.normal(size=(hidden, 10))),
        nn.LIF(10),
    )


def _run(spec, x):
    config, ok, msg = config_from_specification(spec)
    assert ok, msg
    return SpiNNaker2Sim(config).evolve(x, record=True)


@pytest.mark.parametrize("chips", [2, 3, 7])
def test_a_network_that_fits_one_chip_runs_spike_for_spike_on_several(chips):
    net = _net()
    x = np.random.default_rng(1).poisson(0.3, (2, 30, 16))
    one = mapper(net, neurons_per_pe=8)
    many = mapper(net, neurons_per_pe=8, chips=chips)
    used = sorted(set(many.report.chip_of_pe.values()))
    assert used == list(range(chips)) and set(one.report.chip_of_pe.values()) == {0}
    assert many.limits_name == SPINNAKER2_BOARD.name and many.report.chips == chips
    y1, _, r1 = _run(one, x)
    y2, _, r2 = _run(many, x)
    assert y1.sum() > 0 and np.array_equal(y1, y2)
    assert r1.keys() == r2.keys() and all(np.array_equal(r1[k], r2[k]) for k in r1)


def test_spikes_between_chips_carry_the_hop_latency():
    spec = mapper(_net(), neurons_per_pe=8, chips=3)
    lim = SPINNAKER2_BOARD
    chip = spec.report.chip_of_pe
    assert spec.report.hop_latency_s  # some PEs receive from another chip
    for pe, latency in spec.report.hop_latency_s.items():
        senders = [s.pe for s in (*spec.input_slices, *spec.slices) if chip[s.pe] != chip[pe]]
        hops = max(abs(chip[s] - chip[pe]) for s in senders)
        assert latency == pytest.approx(hops * lim.chip_hop_s) and latency > 0
    assert all(chip[pe] == pe // lim.usable_pes_per_chip for pe in chip)


def test_the_hop_latency_counts_in_the_tick_deadline():
    slow = replace(SPINNAKER2_BOARD, chip_hop_s=2e-3)  # 2 ms per hop: beyond a 1 ms tick
    with pytest.warns(DeadlineWarning, match="us of hops"):
        mapper(_net(), slow, neurons_per_pe=8, chips=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mapper(_net(), slow, neurons_per_pe=8)  # one chip: no hop


def test_a_network_too_large_for_one_chip_is_refused_there_and_runs_on_two():
    net = _net(hidden=300)
    err = assert_pond_error(mapper, net, neurons_per_pe=2, error=ConstraintError)
    assert "max_pes" in err.rules and "chips=2" in str(err)
    spec = mapper(net, neurons_per_pe=2, chips=2)
    assert spec.report.pes_used > 148 and set(spec.report.chip_of_pe.values()) == {0, 1}
    x = np.random.default_rng(2).poisson(0.3, (1, 10, 16))
    y, _, _ = _run(spec, x)
    ref, _, _ = _run(mapper(net, "board", neurons_per_pe=2), x)  # the same network, PEs numbered on
    assert np.array_equal(y, ref)


@SOME
@given(st.one_of(st.integers(-3, 0), st.integers(49, 10**9), bad_types()))
def test_chip_counts_out_of_range_are_refused(chips):
    err = assert_pond_error(mapper, _net(), chips=chips, error=ConfigError)
    assert "chips" in str(err)


def test_more_chips_than_pes_and_more_than_the_limits_have_are_refused():
    err = assert_pond_error(mapper, _net(hidden=4), chips=40, error=ConstraintError)
    assert "max_pes" in err.rules and "use fewer chips" in str(err)
    assert_pond_error(mapper, _net(), "chip", chips=2, error=ConfigError, match="at most the 1 chip")


def test_the_device_takes_the_chip_count_of_the_command_line():
    from pondlib.devices.registry import get

    device = get("spinnaker2")
    assert "chips" in {o.name for o in device.options}
    mapped = device.map(_net(), chips="2")  # as `pond map NET --device spinnaker2 --chips 2` passes it
    assert mapped.spec.report.chips == 2 and any("48 chips" in n for n in mapped.notes)
    assert_pond_error(device.map, _net(), chips="two", error=ConfigError)
