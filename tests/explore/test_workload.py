"""Workloads: SEW-ResNet-18's sizes against docs/EXPLORE.md, layer tables, networks and graphs."""

from __future__ import annotations

import numpy as np
import pytest

from pondlib import nn
from pondlib.errors import ConfigError, GraphError
from pondlib.explore import NETWORK_INPUT, Layer, Workload, sew_resnet18, workload_from_graph

# docs/EXPLORE.md, "Derived sizes"
WEIGHTS = 4_751_872
STATES = 46_362_624
STATES_5PLIF = 2_322_432
INPUT = 2_097_152
MACS = 26_107_445_248


def test_sew_resnet18_matches_the_derived_sizes_of_explore_md():
    w = sew_resnet18()
    assert (len(w.layers), w.n_blocks, w.time_steps) == (30, 7, 16)
    assert w.total_weight_bits == WEIGHTS
    assert w.total_state_bits == STATES
    assert w.total_state_bits / 8 / 2**20 == pytest.approx(5.527, abs=5e-4)
    assert w.input_bits == INPUT == 2 * 128 * 128 * 16 * 4
    assert w.total_ops == MACS


def test_sew_resnet18_layer_table():
    w = sew_resnet18()
    kinds = [x.kind for x in w.layers]
    assert kinds[:5] == ["conv", "conv", "conv", "add", "pool"]
    assert w.layers[3].inputs == (2, 1) and w.layers[20].inputs == (19, 18)  # add(2, 1), add(19, 18)
    assert [len(b) for b in w.blocks] == [5, 4, 4, 4, 5, 4, 4]
    conv1 = w.layers[1]
    assert (conv1.k, conv1.c, conv1.oy, conv1.fy, conv1.iy, conv1.ix) == (64, 64, 128, 3, 130, 130)  # IX = OX + 2
    assert w.layers[0].input_bits == 4 and all(x.input_bits == 1 for x in w.layers[1:])
    assert all(x.stateful == (x.kind == "conv") for x in w.layers)
    pool = w.layers[29]
    assert (pool.oy, pool.ox, pool.fx, pool.sx, pool.k) == (1, 1, 2, 2, 128)
    # per-block states by hand: 3 x 64 x 128^2 x 12, 2 x 64 x 64^2 x 12, ...
    states = [row["state_bits"] for row in w.block_summary()]
    assert states == [37_748_736, 6_291_456, 1_572_864, 393_216, 294_912, 49_152, 12_288]


def test_5plif_removes_the_states_of_blocks_0_and_1_about_20x():
    w7, w5 = sew_resnet18(), sew_resnet18(stateless_blocks=(0, 1))
    assert w5.total_state_bits == STATES_5PLIF
    assert w5.total_weight_bits == WEIGHTS and w5.total_ops == MACS  # spikes and compute unchanged
    assert 19.5 < w7.total_state_bits / w5.total_state_bits < 20.5
    assert w7.with_stateless(blocks=[0, 1]).total_state_bits == STATES_5PLIF
    assert w7.with_stateless(layers=["conv0", 1, "conv2"]).total_state_bits == STATES - 37_748_736
    # STEMS's Table 2: SEW-6 8.6M, SEW-4 750K states
    assert round(sew_resnet18(stateless_blocks=[0]).total_state_bits / 1e5) == 86
    assert round(sew_resnet18(stateless_blocks=range(3)).total_state_bits / 1e3) == 750


def test_with_stateless_and_sew_reject_unknown_blocks_and_layers():
    w = sew_resnet18()
    with pytest.raises(ConfigError) as err:
        w.with_stateless(blocks=[7], layers=["nope", 99])
    assert len(err.value.problems) == 3
    with pytest.raises(ConfigError, match="stateless block"):
        sew_resnet18(stateless_blocks=[-1])


def test_from_table_defaults_and_names():
    w = Workload.from_table(
        [
            {"name": "c0", "kind": "conv", "k": 8, "c": 2, "oy": 4, "ox": 4, "fy": 3, "fx": 3, "stateful": True},
            {"name": "c1", "kind": "conv", "k": 8, "c": 8, "oy": 4, "ox": 4, "stateful": True, "block": 1},
            {"name": "sum", "kind": "add", "k": 8, "c": 8, "oy": 4, "ox": 4, "inputs": ["c1", "c0"], "block": 1},
        ],
        time_steps=4,
    )
    assert [x.inputs for x in w.layers] == [(NETWORK_INPUT,), (0,), (1, 0)]
    assert w.layers[0].weight_size == 8 * 2 * 9 * 4 and w.layers[0].state_size == 8 * 16 * 12
    assert w.layers[0].input_size == 2 * 6 * 6 * 1
    assert w.tables.consumers[0] == [1, 2] and w.tables.last_use.tolist() == [2, 2, 2]


def test_from_table_lists_every_problem_and_refuses_unknown_keys():
    with pytest.raises(ConfigError) as err:
        Workload.from_table(
            [
                {"kind": "linear", "k": 0, "c": 4, "weight_bits": 2.5},
                {"kind": "linear", "k": 4, "c": 4, "bias": True},
                {"kind": "conv", "k": 4, "c": 9},
            ]
        )
    text = str(err.value)
    assert "row 0" in text and "weight_bits" in text and "k: got 0" in text
    assert "unknown key(s) ['bias']" in text
    with pytest.raises(ConfigError, match="reads 4 channels"):
        Workload.from_table([{"kind": "linear", "k": 3, "c": 4}, {"kind": "linear", "k": 4, "c": 4}])


def test_workload_checks_order_blocks_and_bit_widths_together():
    a = Layer("a", "linear", 4, 4)
    b = Layer("b", "linear", 4, 4, inputs=(2,), block=2)
    c = Layer("a", "linear", 4, 4, inputs=(0,), input_bits=4)
    with pytest.raises(ConfigError) as err:
        Workload((a, b, c))
    problems = err.value.problems
    assert any("earlier layer" in p for p in problems)
    assert any("names are unique" in p for p in problems)
    assert any("blocks" in p for p in problems)
    assert any("input_bits" in p for p in problems)


def test_layer_lists_every_bad_field():
    with pytest.raises(ConfigError) as err:
        Layer("x", "lstm", 0, -1, oy=2.5, inputs=(), stateful="yes")
    assert len(err.value.problems) >= 5
    with pytest.raises(ConfigError, match="K == C"):
        Layer("p", "pool", 4, 8, 2, 2, 2, 2, 2, 2)


@pytest.fixture(scope="module")
def conv_net():
    return nn.Sequential(
        nn.Conv2d((2, 16, 16), weight=np.ones((8, 2, 3, 3)), padding=1),
        nn.LIF(8 * 16 * 16),
        nn.Residual(nn.Conv2d((8, 16, 16), weight=np.ones((8, 8, 3, 3)), padding=1), nn.LIF(8 * 16 * 16)),
        nn.SumPool2d((8, 16, 16), kernel_size=2, stride=2),
        nn.Flatten((8, 8, 8)),
        nn.Linear(512, 10, weight=np.ones((512, 10))),
        nn.LIF(10),
    )


def test_workload_from_a_conv_network_fuses_neurons_and_adds_residual_sums(conv_net):
    w = workload_from_graph(conv_net, 8)
    kinds = [(x.kind, x.stateful, x.block) for x in w.layers]
    assert kinds == [("conv", True, 0), ("conv", True, 1), ("add", False, 1), ("pool", False, 1), ("linear", True, 2)]
    conv0, conv1, add = w.layers[:3]
    assert (conv0.k, conv0.c, conv0.oy, conv0.ox, conv0.fy, conv0.state_words) == (8, 2, 16, 16, 3, 2)
    assert add.inputs == (1, 0) and conv1.inputs == (0,)
    assert w.layers[4].c == 512 and w.layers[4].inputs == (3,)
    assert w.total_weight_bits == (8 * 2 * 9 + 8 * 8 * 9 + 512 * 10) * 4
    # LIF state: membrane + one synaptic current per neuron, 12 bits each
    assert w.total_state_bits == (2 * 8 * 256 + 10) * 2 * 12


def test_workload_from_a_saved_network_equals_the_network(conv_net, tmp_path):
    from pondlib.io import load_network, save_network

    net = conv_net
    path = save_network(net, tmp_path / "net.pond")
    a, b = workload_from_graph(net, 8), workload_from_graph(load_network(path), 8)
    assert a.layers == b.layers


def test_workload_from_a_pondlib_graph_turns_aliases_into_sums():
    net = nn.Sequential(
        nn.Linear(4, 8, weight=np.ones((4, 8))),
        nn.LIF(8),
        nn.Residual(nn.Linear(8, 8, weight=np.eye(8)), nn.LIF(8)),
        nn.Linear(8, 3, weight=np.ones((8, 3))),
        nn.LIF(3),
    )
    from_graph = workload_from_graph(net.as_graph(), 5)
    from_net = workload_from_graph(net, 5)
    assert (
        [(x.kind, x.inputs, x.stateful) for x in from_graph.layers]
        == [(x.kind, x.inputs, x.stateful) for x in from_net.layers]
        == [("linear", (-1,), True), ("linear", (0,), True), ("add", (1, 0), False), ("linear", (2,), True)]
    )
    assert from_graph.total_weight_bits == from_net.total_weight_bits == (32 + 64 + 24) * 4


def test_workload_from_graph_network_and_explicit_blocks():
    g = nn.GraphNetwork(
        {"a": nn.Linear(2, 2, weight=np.eye(2)), "b": nn.Linear(2, 2, weight=2 * np.eye(2)), "n": nn.LIF(2)},
        [("input", "a"), ("a", "b"), ("a", "n"), ("b", "n"), ("n", "output")],
    )
    w = workload_from_graph(g, 4, blocks=[0, 0, 0], name="g")
    assert [(x.name, x.kind, x.inputs) for x in w.layers] == [
        ("a", "linear", (-1,)),
        ("b", "linear", (0,)),
        ("n/sum", "add", (0, 1)),
    ]
    assert w.layers[2].stateful and w.n_blocks == 1 and w.name == "g"
    with pytest.raises(ConfigError, match="one per layer"):
        workload_from_graph(g, 4, blocks=[0, 1])


def test_workload_from_graph_refuses_what_it_cannot_describe():
    with pytest.raises(GraphError, match="Delay"):
        workload_from_graph(nn.Sequential(nn.Linear(2, 2, weight=np.eye(2)), nn.Delay(2, delay=1e-3, dt=1e-3)))
    with pytest.raises(GraphError, match="workload_from_graph input"):
        workload_from_graph([1, 2, 3])
    with pytest.raises(ConfigError, match="weight_bits"):
        workload_from_graph(nn.Linear(2, 2, weight=np.eye(2)), weight_bits=0)


def test_neuron_models_set_state_words_widths_and_recurrent_weights():
    net = nn.Sequential(
        nn.Linear(4, 6, weight=np.ones((4, 6))),
        nn.CubaLIF(6, tau_mem=0.02, tau_syn=0.01, r=1.0, v_leak=0.0, v_threshold=1.0, dt=1e-3),
        nn.Linear(6, 3, weight=np.ones((6, 3))),
        nn.LI(3, tau=0.02, r=1.0, v_leak=0.0, dt=1e-3),
    )
    cuba, li = workload_from_graph(net, 4).layers
    assert (cuba.stateful, cuba.state_words, cuba.output_bits) == (True, 2, 1)  # current + membrane, spikes
    assert (li.stateful, li.state_words, li.output_bits) == (True, 1, 12)  # a leaky integrator emits values
    rec = nn.Sequential(nn.Linear(4, 6, weight=np.ones((4, 6))), nn.Threshold(6), nn.LIF(6, w_rec=np.ones((6, 6))))
    lin, lif = workload_from_graph(rec, 4).layers
    assert (lin.stateful, lin.output_bits) == (False, 1)  # thresholded: it emits spikes
    assert (lif.kind, lif.inputs, lif.recurrent, lif.weight_size, lif.state_words) == ("neuron", (0,), 36, 144, 2)
