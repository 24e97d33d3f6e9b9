"""Tests of the Xylo mapper: layout of the specification, every design rule, non-mutation, reports."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from pondlib import nn
from pondlib.devices.xylo.limits import XYLO_AUDIO2, XYLO_AUDIO3, XYLO_IMU
from pondlib.devices.xylo.mapper import RULES, SUPPORTED_MODULES, mapper
from pondlib.devices.xylo.specification import MappingReport, Specification
from pondlib.errors import ConstraintError, GraphError
from pondlib.graph import (
    AliasConnection,
    GraphHolder,
    GraphModule,
    GraphNode,
    LIFNeurons,
    LinearWeights,
    connect_modules,
    find_modules,
)

RNG = np.random.default_rng(1234)


def W(n_in: int, n_out: int, scale: float = 0.1) -> np.ndarray:
    return RNG.normal(scale=scale, size=(n_in, n_out))


def ff(n_in: int = 16, n_hid: int = 8, n_out: int = 2, **lif_kw) -> nn.Sequential:
    """Linear -> LIF (hidden) -> Linear -> LIF (output)."""
    return nn.Sequential(
        nn.Linear(n_in, n_hid, weight=W(n_in, n_hid)),
        nn.LIF(n_hid, **lif_kw),
        nn.Linear(n_hid, n_out, weight=W(n_hid, n_out)),
        nn.LIF(n_out),
    )


# -- graph building blocks (for graphs pondlib.nn cannot express) ---------------------------------


def g_lin(n_in: int, n_out: int, name: str, biases=None) -> LinearWeights:
    return LinearWeights._factory(n_in, n_out, name, None, weights=W(n_in, n_out), biases=biases)


def g_lif(n: int, name: str, k: int = 1, dt: float = 1e-3, tau_mem=0.02, tau_syn=0.01) -> LIFNeurons:
    return LIFNeurons._factory(n * k, n, name, None, tau_mem=tau_mem, tau_syn=tau_syn, threshold=1.0, bias=0.0, dt=dt)


def chain(*modules) -> GraphHolder:
    for a, b in zip(modules[:-1], modules[1:]):
        connect_modules(a, b)
    return GraphHolder(list(modules[0].input_nodes), list(modules[-1].output_nodes), "net", None)


@dataclass(eq=False, repr=False)
class Pooling(GraphModule):
    """A module type the Xylo mapper does not know."""


def rules_of(graph, limits=None, **kw) -> set[str]:
    with pytest.raises(ConstraintError) as info:
        mapper(graph, limits, **kw)
    return set(info.value.rules)


def violation(graph, rule: str, limits=None):
    with pytest.raises(ConstraintError) as info:
        mapper(graph, limits)
    found = [v for v in info.value.violations if v.rule == rule]
    assert found, f"{rule} not in {info.value.rules}"
    return found[0], info.value


def snapshot(graph) -> list:
    """Everything a mapper could change: module names, types, parameters, wiring."""
    nodes, modules = find_modules(graph)
    out = []
    for m in modules:
        params = {
            k: np.array(v, copy=True)
            for k, v in vars(m).items()
            if isinstance(v, (np.ndarray, float, int)) and k != "computational_module"
        }
        out.append((m.name, type(m).__name__, params, [id(n) for n in m.input_nodes], [id(n) for n in m.output_nodes]))
    wiring = [(id(n), [id(s) for s in n.source_modules], [id(s) for s in n.sink_modules]) for n in nodes]
    return [out, wiring, [id(n) for n in graph.input_nodes], [id(n) for n in graph.output_nodes]]


def assert_same(a, b) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    else:
        assert a == b


# -- layout --------------------------------------------------------------------------------------


def test_feedforward_layout_and_parameters():
    net = nn.Sequential(
        nn.Linear(16, 8, weight=W(16, 8)),
        nn.LIF(8, tau_mem=0.04, tau_syn=0.008, threshold=np.linspace(1, 2, 8), bias=np.linspace(-0.1, 0.1, 8)),
        nn.Linear(8, 3, weight=W(8, 3)),
        nn.LIF(3, tau_mem=0.01, threshold=0.5, bias=0.2),
    )
    spec = mapper(net)
    assert isinstance(spec, Specification)
    assert (spec.n_input, spec.n_hidden, spec.n_output, spec.n_synapses) == (16, 8, 3, 1)
    np.testing.assert_allclose(spec.weights_in[:, :, 0], np.asarray(net.layers[0].weight), rtol=1e-6)
    np.testing.assert_allclose(spec.weights_out, np.asarray(net.layers[2].weight), rtol=1e-6)
    assert not spec.weights_rec.any()
    np.testing.assert_allclose(spec.dash_mem, np.log2(0.04 / 1e-3), rtol=1e-6)
    np.testing.assert_allclose(spec.dash_syn, np.log2(0.008 / 1e-3), rtol=1e-6)
    assert not spec.dash_syn_2.any()  # one synapse: no second synaptic state
    np.testing.assert_allclose(spec.dash_mem_out, np.log2(10.0), rtol=1e-6)
    np.testing.assert_allclose(spec.threshold, np.linspace(1, 2, 8), rtol=1e-6)
    np.testing.assert_allclose(spec.bias, np.linspace(-0.1, 0.1, 8), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(spec.threshold_out, 0.5)
    np.testing.assert_allclose(spec.bias_out, 0.2, rtol=1e-6)  # hidden/output biases are supported
    assert spec.aliases.tolist() == [-1] * 8
    assert spec.dt == 1e-3 and spec.limits_name == "Xylo Audio 2" and spec.quantization is None


def test_accepts_graph_or_module_and_rejects_others():
    net = ff()
    a, b = mapper(net), mapper(net.as_graph())
    for f in ("weights_in", "weights_out", "dash_mem", "threshold"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    with pytest.raises(GraphError, match="mapper input"):
        mapper(np.zeros(3))
    assert mapper(net, "audio3").limits_name == "Xylo Audio 3"


def test_two_synapses():
    w = W(16, 16)
    net = nn.Sequential(
        nn.Linear(16, 16, weight=w),
        nn.LIF((16, 8), tau_syn=np.array([0.004, 0.04]), tau_mem=0.02),
        nn.Linear(8, 2, weight=W(8, 2)),
        nn.LIF(2),
    )
    spec = mapper(net)
    assert spec.weights_in.shape == (16, 8, 2) and spec.weights_rec.shape == (8, 8, 2)
    # LIF input channel i is synapse i % 2 of neuron i // 2
    np.testing.assert_allclose(spec.weights_in, w.reshape(16, 8, 2), rtol=1e-6)
    np.testing.assert_allclose(spec.dash_syn, 2.0, rtol=1e-6)
    np.testing.assert_allclose(spec.dash_syn_2, np.log2(40.0), rtol=1e-6)
    tau_chip = -1e-3 / np.log1p(-(2.0**-5))  # dash 5: decay 1 - 1/32 per 1 ms step
    np.testing.assert_allclose(spec.report.dash_error["dash_syn_2"], (tau_chip - 0.040) / 0.040, rtol=1e-5)


def test_scalar_tau_syn_in_module_and_in_graph():
    spec = mapper(ff(tau_syn=0.01))
    np.testing.assert_allclose(spec.dash_syn, np.log2(10.0), rtol=1e-6)
    g = ff().as_graph()
    lif = next(m for m in find_modules(g)[1] if m.name == "1_LIF")
    lif.tau_syn = 0.005  # a scalar set after construction (the reference mapper crashed here)
    lif.tau_mem = 0.03
    spec = mapper(g)
    np.testing.assert_allclose(spec.dash_syn, np.log2(5.0))
    np.testing.assert_allclose(spec.dash_mem, np.log2(30.0))


def test_recurrent_weights_land_in_weights_rec():
    w_rec = W(8, 8) * (RNG.random((8, 8)) < 0.5)
    net = nn.Sequential(
        nn.Linear(16, 8, weight=W(16, 8)), nn.LIF(8, w_rec=w_rec), nn.Linear(8, 2, weight=W(8, 2)), nn.LIF(2)
    )
    spec = mapper(net)
    np.testing.assert_allclose(spec.weights_rec[:, :, 0], w_rec, rtol=1e-6)


def test_two_hidden_layers_and_recurrence_share_weights_rec():
    w01, w_rec = W(4, 6), W(6, 6)
    net = nn.Sequential(
        nn.Linear(16, 4, weight=W(16, 4)),
        nn.LIF(4),
        nn.Linear(4, 6, weight=w01),
        nn.LIF(6, w_rec=w_rec),
        nn.Linear(6, 2, weight=W(6, 2)),
        nn.LIF(2),
    )
    spec = mapper(net)
    assert spec.n_hidden == 10
    assert spec.report.neuron_ids["1_LIF"].tolist() == [0, 1, 2, 3]
    assert spec.report.neuron_ids["3_LIF"].tolist() == list(range(4, 10))
    np.testing.assert_allclose(spec.weights_rec[:4, 4:, 0], w01, rtol=1e-6)  # inter-layer
    np.testing.assert_allclose(spec.weights_rec[4:, 4:, 0], w_rec, rtol=1e-6)  # recurrent
    assert not spec.weights_rec[:, :4].any() and not spec.weights_rec[4:, :4].any()
    assert not spec.weights_in[:, 4:].any()  # the input only reaches layer 1
    assert not spec.weights_out[:4].any()  # the readout reads layer 2 only
    assert any("hidden->hidden" in n and "2_Linear" in n for n in spec.report.notes)


def test_residual_becomes_aliases():
    w_out = W(4, 2)
    net = nn.Sequential(
        nn.Linear(16, 4, weight=W(16, 4)),
        nn.LIF(4),
        nn.Residual(nn.Linear(4, 4, weight=W(4, 4)), nn.LIF(4, w_rec=W(4, 4))),
        nn.Linear(4, 2, weight=w_out),
        nn.LIF(2),
    )
    spec = mapper(net)
    assert spec.aliases.tolist() == [4, 5, 6, 7, -1, -1, -1, -1]
    # the readout sits on the alias targets; the sources' spikes reach it through the alias
    np.testing.assert_allclose(spec.weights_out[4:], w_out, rtol=1e-6)
    assert not spec.weights_out[:4].any()
    assert spec.report.neuron_ids["2_Residual/1_LIF"].tolist() == [4, 5, 6, 7]
    assert any("alias" in n for n in spec.report.notes)


def test_mapping_report_contents():
    net = nn.Sequential(
        nn.Linear(16, 8, weight=W(16, 8), bias=np.full(8, 0.5)),
        nn.LIF(8, tau_mem=0.02, tau_syn=0.005),
        nn.Linear(8, 2, weight=W(8, 2)),
        nn.LIF(2, max_spikes_per_dt=1),
    )
    spec = mapper(net, drop_biases=True)
    rep = spec.report
    assert isinstance(rep, MappingReport)
    assert rep.output_module == "3_LIF"
    assert rep.neuron_ids["3_LIF"].tolist() == [0, 1] and rep.neuron_ids["1_LIF"].tolist() == list(range(8))
    # tau 20 ms -> dash log2(20) = 4.32 -> 4 -> decay 15/16 per step -> tau_hw = 15.50 ms: -22.5 %
    # tau 5 ms -> dash 2.32 -> 2 -> decay 3/4 -> tau_hw = 3.476 ms: -30.5 %
    np.testing.assert_allclose(rep.dash_error["dash_mem"], (-1e-3 / np.log(15 / 16) - 0.02) / 0.02, rtol=1e-5)
    np.testing.assert_allclose(rep.dash_error["dash_syn"], (-1e-3 / np.log(3 / 4) - 0.005) / 0.005, rtol=1e-5)
    assert rep.dash_error["dash_mem"][0] == pytest.approx(-0.2253, abs=1e-4)
    assert set(rep.dash_error) == {"dash_mem", "dash_syn", "dash_syn_2", "dash_mem_out", "dash_syn_out"}
    notes = " | ".join(rep.notes)
    assert "0_Linear: bias dropped" in notes
    assert "hidden->output hop (2_Linear)" in notes
    assert "1_LIF: the chip caps hidden neurons at 31" in notes
    assert "3_LIF: the chip caps" not in notes  # already trained with the cap of 1
    assert not spec.bias.any()  # a dropped bias stays dropped


# -- non-mutation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fails", [False, True])
def test_graph_is_not_mutated(fails):
    net = nn.Sequential(
        nn.Linear(16, 12, weight=W(16, 12)),
        nn.LIF((12, 6), tau_syn=0.01),
        nn.Residual(nn.Linear(6, 6, weight=W(6, 6)), nn.LIF(6, w_rec=W(6, 6))),
        nn.Linear(6, 2 if not fails else 12, weight=W(6, 2 if not fails else 12)),
        nn.LIF(2 if not fails else 12),
    )
    g = net.as_graph()
    before = snapshot(g)
    if fails:
        with pytest.raises(ConstraintError):
            mapper(g)
    else:
        spec = mapper(g)
        spec.weights_in[...] = 99.0  # the spec owns its arrays: writing it leaves the graph alone
    assert_same(before, snapshot(g))


# -- rules, one at a time --------------------------------------------------------------------------


def test_every_rule_is_documented():
    assert {"unsupported_module", "dash_zero", "max_fanout_rec", "alias_target_order"} <= set(RULES)


def test_unsupported_module_lists_supported_types():
    a, h = g_lin(16, 4, "in"), g_lif(4, "hid")
    pool = Pooling._factory(4, 4, "pool")
    b, o = g_lin(4, 2, "out_w"), g_lif(2, "out")
    v, err = violation(chain(a, h, pool, b, o), "unsupported_module")
    assert v.module == "pool" and v.value == "Pooling"
    for t in SUPPORTED_MODULES:
        assert t.__name__ in str(err)
    assert "Pooling" in str(err)


def test_nir_neuron_groups_reported_once_as_neuron_model():
    # Braille (snnTorch) imported with reset to v_reset: its two CubaLIF layers have no exact Xylo LIF
    # and become NIRNeuronGroups; they still count as neuron layers, so the only other violation is
    # the biases of its three weight layers (no output_from_neurons / min_neuron_layers /
    # weights_feed_neurons / unsupported_module noise)
    from pathlib import Path

    from pondlib.interop.nir import from_nir

    path = Path(__file__).resolve().parents[2] / "data" / "nir" / "braille" / "braille_noDelay_bias_zero.nir"
    net = from_nir(path, dt=1e-4, reset="v_reset")
    groups = [m.name for m in find_modules(net.as_graph())[1] if type(m).__name__ == "NIRNeuronGroup"]
    assert len(groups) == 2
    with pytest.raises(ConstraintError) as info:
        mapper(net)
    err = info.value
    assert set(err.rules) == {"neuron_model", "linear_bias"} and "neuron_model" in RULES
    found = [v for v in err.violations if v.rule == "neuron_model"]
    assert len(found) == len(groups)
    # the plain module names: the reason the graph module's name carries goes to the remedy
    assert sorted(v.module for v in found) == ["GraphNetwork/lif1.lif", "GraphNetwork/lif2"]
    assert sorted(g.split(" (", 1)[0] for g in groups) == sorted(v.module for v in found)
    for v in found:
        assert v.value == "CubaLIF, reset to v_reset"
        assert v.limit == "LIF with exponential (bit-shift) decay, reset by subtraction"
        assert "reset='subtract'" in v.remedy and "--reset subtract" in v.remedy
    # what remains once imported with reset by subtraction: the biases alone
    with pytest.raises(ConstraintError) as info:
        mapper(from_nir(path, dt=1e-4, reset="subtract"))
    assert set(info.value.rules) == {"linear_bias"}


def test_input_through_weights():
    h, b, o = g_lif(16, "hid"), g_lin(16, 2, "out_w"), g_lif(2, "out")
    v, err = violation(chain(h, b, o), "input_through_weights")
    assert v.module == "hid" and "Linear" in v.remedy
    assert set(err.rules) == {"input_through_weights"}


def test_input_to_output():
    a, h, b, o = g_lin(16, 4, "in"), g_lif(4, "hid"), g_lin(4, 2, "out_w"), g_lif(2, "out")
    g = chain(a, h, b, o)
    LinearWeights(list(g.input_nodes), list(o.input_nodes), "skip", None, weights=W(16, 2))
    assert rules_of(g) == {"input_to_output"}


def test_output_from_neurons_and_weights_feed_neurons():
    g = chain(g_lin(16, 4, "in"), g_lif(4, "hid"), g_lin(4, 2, "w2"), g_lif(2, "hid2"), g_lin(2, 2, "last"))
    v, err = violation(g, "output_from_neurons")
    assert "last" in v.module and "LIF" in v.remedy
    assert set(err.rules) == {"output_from_neurons", "weights_feed_neurons"}


def test_neurons_receive_weights():
    g = chain(g_lin(16, 4, "in"), g_lif(4, "h1"), g_lif(4, "h2"), g_lin(4, 2, "w"), g_lif(2, "out"))
    v, err = violation(g, "neurons_receive_weights")
    assert v.module == "h2" and "h1" in str(v.value)
    assert set(err.rules) == {"neurons_receive_weights"}


def test_no_consecutive_weights():
    g = chain(g_lin(16, 4, "w1"), g_lin(4, 4, "w2"), g_lif(4, "h"), g_lin(4, 2, "w3"), g_lif(2, "out"))
    v, err = violation(g, "no_consecutive_weights")
    assert v.module == "w2" and "w1" in str(v.value) and "LIF" in v.remedy
    assert set(err.rules) == {"no_consecutive_weights"}


def test_single_neuron_source():
    a, h = g_lin(16, 4, "in"), g_lif(4, "h1")
    g = chain(a, h, g_lin(4, 2, "w"), g_lif(2, "out"))
    a2 = LinearWeights(list(g.input_nodes), [GraphNode() for _ in range(4)], "in2", None, weights=W(16, 4))
    LIFNeurons(
        list(a2.output_nodes), list(h.output_nodes), "h2", None, tau_mem=0.02, tau_syn=0.01, threshold=1.0, bias=0.0
    )
    assert rules_of(g) == {"single_neuron_source"}


def test_common_dt():
    g = chain(
        g_lin(16, 4, "in"),
        g_lif(4, "h", dt=1e-3),
        g_lin(4, 2, "w"),
        g_lif(2, "out", dt=2e-3, tau_mem=0.04, tau_syn=0.02),
    )
    v, err = violation(g, "common_dt")
    assert v.value == {"h": 1e-3, "out": 2e-3}
    assert set(err.rules) == {"common_dt"}


def test_dt_range():
    net = ff(dt=0.5, tau_mem=10.0, tau_syn=5.0)
    net = nn.Sequential(*net.layers[:3], nn.LIF(2, dt=0.5, tau_mem=10.0, tau_syn=5.0))
    assert rules_of(net) == {"dt_range"}


def test_min_neuron_layers():
    v, err = violation(nn.Sequential(nn.Linear(16, 4, weight=W(16, 4)), nn.LIF(4)), "min_neuron_layers")
    assert "1 LIF" in str(v.value)
    assert set(err.rules) == {"min_neuron_layers"}


def test_output_not_recurrent():
    net = nn.Sequential(*ff().layers[:3], nn.LIF(2, w_rec=W(2, 2)))
    v, err = violation(net, "output_not_recurrent")
    assert v.module == "3_LIF"
    assert set(err.rules) == {"output_not_recurrent"}


def test_max_input_channels():
    v, err = violation(ff(n_in=20), "max_input_channels")
    assert (v.value, v.limit) == (20, 16) and set(err.rules) == {"max_input_channels"}


def test_max_hidden_neurons_and_imu_limits():
    v, _ = violation(ff(n_hid=1001), "max_hidden_neurons")
    assert (v.value, v.limit) == (1001, 1000)
    net = ff(n_hid=500)
    assert mapper(net).n_hidden == 500
    assert rules_of(net, XYLO_IMU) == {"max_hidden_neurons"}


def test_max_output_neurons_audio2_vs_audio3():
    net = ff(n_out=10)
    v, err = violation(net, "max_output_neurons")
    assert (v.value, v.limit, v.module) == (10, 8, "3_LIF") and "Audio 3" in v.remedy
    assert set(err.rules) == {"max_output_neurons"} and err.device == XYLO_AUDIO2.name
    spec = mapper(net, XYLO_AUDIO3)
    assert spec.n_output == 10 and spec.limits_name == "Xylo Audio 3"


def test_max_synapses_and_imu_single_synapse():
    net = nn.Sequential(
        nn.Linear(16, 24, weight=W(16, 24)), nn.LIF((24, 8)), nn.Linear(8, 2, weight=W(8, 2)), nn.LIF(2)
    )
    v, err = violation(net, "max_synapses")
    assert (v.value, v.limit) == (3, 2) and set(err.rules) == {"max_synapses"}
    two = nn.Sequential(
        nn.Linear(16, 16, weight=W(16, 16)), nn.LIF((16, 8)), nn.Linear(8, 2, weight=W(8, 2)), nn.LIF(2)
    )
    assert mapper(two).n_synapses == 2
    assert rules_of(two, "imu") == {"max_synapses"}


def test_output_single_synapse():
    net = nn.Sequential(*ff().layers[:2], nn.Linear(8, 4, weight=W(8, 4)), nn.LIF((4, 2)))
    v, err = violation(net, "output_single_synapse")
    assert (v.value, v.limit) == (2, 1) and set(err.rules) == {"output_single_synapse"}


def test_max_fanout_rec():
    def net(density_cols: int):
        w = np.zeros((100, 100))
        w[:, :density_cols] = 0.1
        return nn.Sequential(
            nn.Linear(16, 100, weight=W(16, 100)), nn.LIF(100, w_rec=w), nn.Linear(100, 2, weight=W(100, 2)), nn.LIF(2)
        )

    assert mapper(net(64)).n_hidden == 100  # exactly at the limit
    v, err = violation(net(65), "max_fanout_rec")
    assert v.module == "1_LIF/w_rec" and "65" in str(v.value) and v.limit == 64
    assert "100 neuron(s) over" in str(v.value) and set(err.rules) == {"max_fanout_rec"}


def test_alias_source_neurons():
    net = nn.Sequential(
        nn.Residual(nn.Linear(16, 16, weight=W(16, 16)), nn.LIF(16)), nn.Linear(16, 2, weight=W(16, 2)), nn.LIF(2)
    )
    v, err = violation(net, "alias_source_neurons")
    assert "graph input" in str(v.value) and "hidden neurons" in v.remedy
    assert set(err.rules) == {"alias_source_neurons"}


def test_alias_target_neurons():
    net = nn.Sequential(
        nn.Linear(16, 4, weight=W(16, 4)), nn.LIF(4), nn.Residual(nn.Linear(4, 4, weight=W(4, 4)), nn.LIF(4))
    )
    v, err = violation(net, "alias_target_neurons")
    assert "output neuron" in str(v.value) and set(err.rules) == {"alias_target_neurons"}


def _two_residuals():
    net = nn.Sequential(
        nn.Linear(16, 4, weight=W(16, 4)),
        nn.LIF(4),
        nn.Residual(nn.Linear(4, 4, weight=W(4, 4)), nn.LIF(4)),
        nn.Residual(nn.Linear(4, 4, weight=W(4, 4)), nn.LIF(4)),
        nn.Linear(4, 2, weight=W(4, 2)),
        nn.LIF(2),
    )
    g = net.as_graph()
    mods = {m.name: m for m in find_modules(g)[1]}
    return g, mods


def test_max_alias_targets():
    g, mods = _two_residuals()
    assert mapper(g).aliases.tolist()[:8] == [4, 5, 6, 7, 8, 9, 10, 11]
    AliasConnection(list(mods["1_LIF"].output_nodes), list(mods["3_Residual/1_LIF"].output_nodes), "extra_alias", None)
    v, err = violation(g, "max_alias_targets")
    assert "2 alias targets" in str(v.value) and v.limit == 1
    assert set(err.rules) == {"max_alias_targets"}


def test_alias_target_order():
    g, mods = _two_residuals()
    AliasConnection(list(mods["3_Residual/1_LIF"].output_nodes), list(mods["1_LIF"].output_nodes), "backwards", None)
    v, err = violation(g, "alias_target_order")
    assert v.module == "backwards" and "8 -> 0" in str(v.value)
    assert set(err.rules) == {"alias_target_order"}


def test_dash_zero_names_neuron_and_minimum_tau():
    tau = np.full(8, 0.02)
    tau[3] = 1.2e-3  # log2(1.2) = 0.26 -> dash 0
    v, err = violation(ff(tau_mem=tau), "dash_zero")
    assert v.module == "1_LIF" and "tau_mem[3]" in str(v.value) and "rounds to 0" in str(v.value)
    assert "0.00141421" in v.remedy  # dt * 2^0.5
    assert set(err.rules) == {"dash_zero"}


def test_dash_too_large():
    v, err = violation(ff(tau_syn=1e-3 * 2**16), "dash_too_large")
    assert "tau_syn[:, 0][0]" in str(v.value) and v.limit == "dash <= 15"
    assert set(err.rules) == {"dash_too_large"}


def test_linear_bias_violation_or_dropped():
    net = nn.Sequential(
        nn.Linear(16, 8, weight=W(16, 8), bias=np.full(8, 0.3)), nn.LIF(8), nn.Linear(8, 2, weight=W(8, 2)), nn.LIF(2)
    )
    v, err = violation(net, "linear_bias")
    assert v.module == "0_Linear" and "drop_biases=True" in v.remedy
    assert set(err.rules) == {"linear_bias"}
    spec = mapper(net, drop_biases=True)
    assert any("bias dropped" in n for n in spec.report.notes)
    # an all-zero bias is not a bias
    zero = nn.Sequential(nn.Linear(16, 8, weight=W(16, 8), bias=True), *net.layers[1:])
    assert not any("bias" in n for n in mapper(zero).report.notes)


def test_invalid_parameters_reported_not_crashed():
    g = ff().as_graph()
    mods = {m.name: m for m in find_modules(g)[1]}
    mods["1_LIF"].tau_mem = np.full(8, np.nan)
    mods["3_LIF"].tau_syn = np.ones((3, 3))
    mods["2_Linear"].weights = np.ones((2, 2))
    with pytest.raises(ConstraintError) as info:
        mapper(g)
    bad = [v for v in info.value.violations if v.rule == "invalid_parameter"]
    assert {v.module for v in bad} == {"1_LIF", "3_LIF", "2_Linear"}
    assert any("tau_mem[0] = nan" in str(v.value) for v in bad)


# -- several rules at once -------------------------------------------------------------------------


def test_five_rules_reported_together():
    net = nn.Sequential(
        nn.Linear(20, 24, weight=W(20, 24), bias=np.full(24, 0.1)),
        nn.LIF((24, 8), tau_mem=1e-3),
        nn.Linear(8, 10, weight=W(8, 10)),
        nn.LIF(10),
    )
    with pytest.raises(ConstraintError) as info:
        mapper(net)
    err = info.value
    assert set(err.rules) == {"max_input_channels", "linear_bias", "max_synapses", "dash_zero", "max_output_neurons"}
    assert err.device == "Xylo Audio 2"
    text = str(err)
    assert text.startswith("Xylo Audio 2: 5 design rule violation(s)")
    for v in err.violations:
        assert v.module and v.remedy and f"[{v.rule}] {v.module}" in text
