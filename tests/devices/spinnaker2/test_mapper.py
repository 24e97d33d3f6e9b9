"""SNN mapper and configuration: every rule reported together, synapse words, memory, routing."""

from __future__ import annotations

import numpy as np
import pytest

from pondlib import nn
from pondlib.devices.spinnaker2.config import config_from_specification, decode_words, encode_words, validate_config
from pondlib.devices.spinnaker2.limits import SPINNAKER2_CHIP, SpiNNaker2Limits, get_limits
from pondlib.devices.spinnaker2.mapper import RULES, mapper
from pondlib.devices.spinnaker2.specification import DELAY_WORD, NO_DELAY_WORD, DeadlineWarning
from pondlib.errors import ConfigError, ConstraintError, GraphError
from pondlib.graph import GraphHolder, LIFNeurons, LinearWeights, connect_modules


def _net(n_in=16, n_hid=40, n_out=10, seed=0, **lif):
    rng = np.random.default_rng(seed)
    return nn.Sequential(
        nn.Linear(n_in, n_hid, weight=rng.normal(size=(n_in, n_hid))),
        nn.LIF(n_hid, **lif),
        nn.Linear(n_hid, n_out, weight=rng.normal(size=(n_hid, n_out))),
        nn.LIF(n_out, **lif),
    )


@pytest.mark.parametrize("fmt", [DELAY_WORD, NO_DELAY_WORD], ids=lambda f: f.name)
def test_synapse_word_round_trip(fmt):
    rng = np.random.default_rng(0)
    n = 5000
    w = rng.integers(-fmt.max_weight, fmt.max_weight + 1, n)
    d = rng.integers(0, fmt.max_delay + 1, n)
    i = rng.integers(0, 256, n)
    words = encode_words(w, d, i, fmt)
    assert words.dtype == np.uint16 and fmt.bits == 16
    w2, d2, i2 = decode_words(words, fmt)
    assert np.array_equal(w, w2) and np.array_equal(d, d2) and np.array_equal(i, i2)
    # every 16-bit word with a non-negative-zero weight decodes and re-encodes to itself
    all_words = np.arange(1 << 16, dtype=np.uint16)
    w3, d3, i3 = decode_words(all_words, fmt)
    keep = ~((w3 == 0) & ((all_words >> fmt.inh_shift) & 1).astype(bool))  # "-0" has no canonical form
    assert np.array_equal(encode_words(w3[keep], d3[keep], i3[keep], fmt), all_words[keep])


def test_word_encoding_refuses_out_of_range_fields_all_together():
    with pytest.raises(ConfigError) as err:
        encode_words(np.array([16, 3]), np.array([0, 8]), np.array([0, 256]), DELAY_WORD)
    assert len(err.value.problems) == 3


def map_a_network_that_breaks_many_rules() -> ConstraintError:
    """Biased input weights, bad delays, a huge fixed weight scale, 300 neurons per PE on a 3-PE chip with
    long recordings: the mapper's ConstraintError (test_rules checks its order)."""
    rng = np.random.default_rng(1)
    net = nn.Sequential(
        nn.Linear(16, 300, weight=rng.normal(size=(16, 300)), bias=np.ones(300)),
        nn.LIF(300),
        nn.Linear(300, 300, weight=rng.normal(size=(300, 300))),
        nn.LIF(300),
        nn.Linear(300, 10, weight=rng.normal(size=(300, 10))),
        nn.LIF(10),
    )
    tiny = SpiNNaker2Limits(name="tiny", usable_pes_per_chip=3)
    with pytest.raises(ConstraintError) as err:
        mapper(
            net,
            tiny,
            delays={"2_Linear": 9, "4_Linear": -1},
            neurons_per_pe=300,
            weight_scale={"5_LIF": 1e3},
            record_ticks=2000,
            record_v=True,
        )
    return err.value


def test_many_rules_broken_at_once_are_reported_together():
    error = map_a_network_that_breaks_many_rules()
    rules = set(error.rules)
    assert rules == {
        "linear_bias",
        "delay_range",
        "neurons_per_pe",
        "neuron_index",
        "max_pes",
        "row_length",
        "memory_per_pe",
        "weight_range",
    }
    assert rules <= set(RULES)
    for v in error.violations:  # each names module, value, limit and remedy
        assert v.module and v.value is not None and v.limit is not None and v.remedy
    text = str(error)
    assert "tiny" in text and "Fix:" in text


def test_structural_rules():
    w = LinearWeights._factory(4, 4, "w1", None, np.ones((4, 4)))
    w2 = LinearWeights._factory(4, 3, "w2", None, np.ones((4, 3)))
    lif = LIFNeurons._factory(3, 3, "lif", None, tau_mem=0.02, tau_syn=0.01, threshold=1.0, bias=0.0)
    connect_modules(w, w2)
    connect_modules(w2, lif)
    g = GraphHolder(list(w.input_nodes), list(lif.output_nodes), "g")
    with pytest.raises(ConstraintError) as err:
        mapper(g)
    assert "no_consecutive_weights" in err.value.rules
    two_syn = nn.Sequential(nn.Linear(4, 6, weight=np.ones((4, 6))), nn.LIF((6, 3)))
    with pytest.raises(ConstraintError) as err:
        mapper(two_syn, neuron_model="izhikevich")
    assert err.value.rules == ["unknown_neuron_model"]
    with pytest.raises(ConstraintError) as err:
        mapper(two_syn)
    assert "single_synapse" in err.value.rules
    with pytest.raises(GraphError):
        mapper(42)


def test_quantization_per_population_and_error_report():
    net = _net(tau_mem=0.02, tau_syn=0.01)
    spec = mapper(net)
    w = np.asarray(net.layers[0].weight) * np.exp(-1e-3 / 0.01)  # folded with beta
    s = spec.report.scales["1_LIF"]
    assert s == pytest.approx(15 / np.abs(w).max())
    q = spec.projections[0].weights
    assert np.array_equal(q, np.rint(w * s)) and np.abs(q).max() == 15
    err = np.linalg.norm(q / s - w) / np.linalg.norm(w)
    assert spec.report.quantization_error["0_Linear"] == pytest.approx(err)
    assert spec.populations[0].threshold.dtype == np.float32
    assert spec.populations[0].threshold[0] == np.float32(s)  # threshold 1 x scale
    spec127 = mapper(net, neuron_model="lif_curr_exp_no_delay")
    assert np.abs(spec127.projections[0].weights).max() == 127
    assert spec127.report.quantization_error["0_Linear"] < spec.report.quantization_error["0_Linear"] / 4
    with pytest.raises(ConstraintError) as e:
        mapper(net, neuron_model="lif_no_delay", delays={"0_Linear": 1})
    assert e.value.rules == ["delay_range"]
    assert any("tau_syn is dropped" in n for n in mapper(net, neuron_model="lif").report.notes)


def test_memory_accounting_by_hand():
    # 4 inputs -> 3 neurons, every weight non-zero: 4 rows of 3 words on the one PE.
    net = nn.Sequential(nn.Linear(4, 3, weight=np.ones((4, 3))), nn.LIF(3))
    spec = mapper(net, record_ticks=10)
    pe = spec.slices[0].pe
    lim = SPINNAKER2_CHIP
    assert spec.memory[pe] == {
        "synapse_rows": 4 * lim.row_header_bytes + 4 * 3 * 2,
        "neuron_params": 3 * 44,
        "routing_entries": 1 * lim.pop_table_entry_bytes,
        "input_buffers": (7 + 2) * 2 * 3 * 4,
        "recording": 10 * 4,
    }
    config, ok, msg = config_from_specification(spec)
    assert ok, msg
    assert config.pes[0].memory == spec.memory[pe]
    assert np.diff(config.pes[0].row_ptr).tolist() == [3, 3, 3, 3]


def test_config_rows_routing_and_validation():
    net = _net(n_hid=260)
    spec = mapper(net, delays={"2_Linear": 3})
    config, ok, msg = config_from_specification(spec)
    assert ok and msg == "valid"
    assert [(p.population, p.start, p.stop) for p in config.pes] == [
        ("1_LIF", 0, 250),
        ("1_LIF", 250, 260),
        ("3_LIF", 0, 10),
    ]
    out_pe = config.pes[2]
    # rows on the output PE come from the 260 hidden neurons (two source slices) with delay 3
    assert set(out_pe.row_source.tolist()) == {1} and len(out_pe.row_neuron) == 260
    assert set(decode_words(out_pe.words, DELAY_WORD)[1].tolist()) == {3}
    routes = {(r.source, r.start): r for r in config.routing}
    assert routes[("1_LIF", 0)].targets == (out_pe.pe,) and routes[("1_LIF", 250)].targets == (out_pe.pe,)
    assert routes[("input", 0)].targets == (config.pes[0].pe, config.pes[1].pe)
    assert routes[("3_LIF", 0)].targets == ()
    assert len({r.key for r in config.routing}) == len(config.routing)
    assert all(r.key & ~r.mask == 0 for r in config.routing)
    broken = config.replace(output="nope", tick_s=-1.0)
    assert len(validate_config(broken)) == 2


def test_deadline_warning_and_no_mutation():
    net = _net(n_hid=250)
    before = np.asarray(net.layers[0].weight).copy()
    slow = SpiNNaker2Limits(name="slow", clock_hz=1e6)
    with pytest.warns(DeadlineWarning, match="deadline missed"):
        spec = mapper(net, slow)
    assert spec.report.warnings and spec.report.warnings[0].rule == "deadline_missed"
    assert np.array_equal(np.asarray(net.layers[0].weight), before)
    assert mapper(net).report.warnings == ()
    assert get_limits("board").usable_pes == 48 * 148
