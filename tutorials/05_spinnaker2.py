# %% [markdown]
# # SpiNNaker2: spiking networks on ARM cores, DNNs on the MLA, and how long they take
#
# SpiNNaker2 has 152 ARM Cortex-M4F processing elements (PEs) per chip, 148 of them for applications,
# each with 128 KiB of SRAM and a small int8 matrix accelerator (MLA). pondlib targets it two ways:
#
# * **SNN path**: LIF populations split into PE slices of at most 250 neurons, float32 neuron state,
#   synapses as 16-bit words (4-bit weight, exc/inh bit, 3-bit delay, 8-bit target);
# * **DNN path** (OctopuScheduler style): Linear (+ ReLU) layers in int8 with power-of-two scales,
#   split over worker PEs that stream their weights from DRAM.
#
# Both simulators are *bit-precise*: every rounding, wrap and saturation is a stated rule, and the
# test suite checks them bit for bit against a C implementation compiled with gcc.

# %%
import numpy as np

from pondlib import nn
from pondlib.devices.spinnaker2 import (
    DNNSim,
    LIFOptions,
    SpiNNaker2Sim,
    config_from_specification,
    decode_words,
    dnn_mapper,
    estimate,
    mapper,
    train_mlp,
)
from pondlib.errors import ConstraintError

rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. Map a spiking network: slices, synapse words, memory per PE
#
# 16 inputs -> 300 LIF -> 10 LIF. The 300 hidden neurons need two PEs (250 + 50). Weights are
# quantized per target population to -15..15 (the 4-bit magnitude of the delay word); the mapper
# reports the relative quantization error of every weight layer.

# %%
net = nn.Sequential(
    nn.Linear(16, 300, weight=rng.normal(0, 0.5, (16, 300))),
    nn.LIF(300, tau_syn=0.005),
    nn.Linear(300, 10, weight=rng.normal(0, 0.2, (300, 10))),
    nn.LIF(10, tau_syn=0.005),
)
spec = mapper(net, delays={"2_Linear": rng.integers(0, 8, (300, 10))})
for s in spec.slices:
    mem = spec.memory[s.pe]
    print(f"PE {s.pe}: {s.population}[{s.start}:{s.stop}]  {sum(mem.values())} B  {mem}")
print("quantization error:", {k: round(v, 3) for k, v in spec.report.quantization_error.items()})
assert [s.stop - s.start for s in spec.slices] == [250, 50, 10]
assert all(sum(m.values()) <= 67000 for m in spec.memory.values())

config, ok, message = config_from_specification(spec)
assert ok, message
pe = config.pes[-1]
w, d, i = decode_words(pe.words[:4], config.model.word)
print(
    "first words of the output PE:",
    [f"0x{int(x):04x}" for x in pe.words[:4]],
    "-> weight",
    w.tolist(),
    "delay",
    d.tolist(),
    "target",
    i.tolist(),
)
print("routing:", [(r.source, r.start, r.stop, hex(r.key), r.targets) for r in config.routing])

# %% [markdown]
# ## 2. Every broken rule at once
#
# A slice of 300 neurons (more than 250, more than the 8-bit index can address, rows longer than 255
# words) and a delay of 9 ticks are all reported together, each with the value, the limit and a fix.

# %%
try:
    mapper(net, neurons_per_pe=300, delays={"2_Linear": 9})
except ConstraintError as err:
    print(err)
    assert sorted(set(err.rules)) == ["delay_range", "neuron_index", "neurons_per_pe", "row_length"]

# %% [markdown]
# ## 3. Run it: float32 neurons, spikes arrive at t + 1 + delay
#
# The simulator decodes the synapse words it was given; a spike emitted at tick `t` through a synapse
# of delay `d` is added to the target's input at tick `t + 1 + d`.

# %%
x = rng.poisson(0.2, size=(4, 60, 16))  # (B, T, N_in) spike counts
sim = SpiNNaker2Sim.from_config(config)
out, state, rec = sim.evolve(x, record=True)
print("output spikes per sample:", out.sum(axis=(1, 2)).tolist(), "| record keys:", sorted(rec)[:4], "...")
assert rec["1_LIF.v"].dtype == np.float32 and out.shape == (4, 60, 10)

one = nn.Sequential(nn.Linear(1, 1, weight=np.ones((1, 1))), nn.LIF(1, threshold=1e3))
cfg1, ok, _ = config_from_specification(mapper(one, neuron_model="lif", delays={"0_Linear": 5}))
_, _, r1 = SpiNNaker2Sim.from_config(cfg1).evolve(np.eye(10, 1, dtype=int), record=True)
print("input spike at tick 0, delay 5: arrives at tick", int(np.flatnonzero(r1["1_LIF.input"][:, 0])[0]))
assert np.flatnonzero(r1["1_LIF.input"][:, 0]).tolist() == [6]

# %% [markdown]
# The uncertain details of the neuron update are options (`LIFOptions`): the comparison (`>` by
# default, or `>=`), the reset (subtract the threshold, or set `v_reset`), fused multiply-add and the
# order of the additions. A threshold tie shows the comparison:

# %%
tie = nn.Sequential(nn.Linear(1, 1, weight=np.ones((1, 1))), nn.LIF(1, tau_mem=1e3, threshold=1.0))
cfg_t, _, _ = config_from_specification(mapper(tie, neuron_model="lif"))  # weight 15, threshold 15
spikes_gt = SpiNNaker2Sim.from_config(cfg_t).evolve(np.array([[1], [0]]))[0].sum()
spikes_ge = SpiNNaker2Sim.from_config(cfg_t, LIFOptions(compare=">=")).evolve(np.array([[1], [0]]))[0].sum()
print(f"v == threshold: spikes with '>' {spikes_gt}, with '>=' {spikes_ge}")
assert (spikes_gt, spikes_ge) == (0, 1)

# %% [markdown]
# ## 4. The DNN path: int8 with power-of-two scales, on scikit-learn digits
#
# A float 64-64-10 ReLU MLP, quantized with power-of-two exponents (requantization is an arithmetic
# right shift, then saturation to int8), run on the integer MLA simulator. The paper reports 98.34 %
# on SpiNNaker2 against 98.36 % in float on MNIST; here the difference stays within half a point.

# %%
from sklearn.datasets import load_digits

digits = load_digits()
xd, yd = digits.data / 16.0, digits.target
perm = np.random.default_rng(0).permutation(len(yd))
te, tr = perm[:450], perm[450:]
mlp = train_mlp(xd[tr], yd[tr], (64,), epochs=40, seed=0)
cfg = dnn_mapper(mlp, calibration=xd[tr])
y_int, _, _ = DNNSim.from_config(cfg).evolve(cfg.quantize_input(xd[te]))
acc_f = np.mean(mlp.predict(xd[te]) == yd[te])
acc_q = np.mean(np.argmax(y_int, axis=1) == yd[te])
print(f"float {acc_f:.2%}, int8 on the MLA simulator {acc_q:.2%}")
for layer in cfg.layers:
    print(
        f"  {layer.name}: {layer.weights.shape}, shift {layer.shift}, relu {layer.relu}, "
        f"{layer.workers} worker(s), |acc| <= {layer.acc_bound} (24-bit limit {2**23})"
    )
assert abs(acc_f - acc_q) <= 0.005

# %% [markdown]
# ## 5. How long does an inference take?
#
# The timing model (setup, per-layer scheduling, DRAM weight fetch at the effective 2.09 GB/s, MLA
# compute, other per-layer work, cleanup) is calibrated on the paper's 784-512-256-16 MLP. Weight
# fetching dominates: the MLA is busy only about 9 % of FC1.

# %%
report = estimate((784, 512, 256, 16), softmax=True)
print(report.table())
paper = {"total": 688e-6, "fc1": 323e-6, "fc1 fetch": 192e-6}
model = {"total": report.total_s, "fc1": report.layers[0].total_s, "fc1 fetch": report.layers[0].fetch_s}
for k in paper:
    print(f"{k}: paper {paper[k] * 1e6:.0f} us, model {model[k] * 1e6:.0f} us")
    assert abs(model[k] - paper[k]) <= 0.1 * paper[k]
print("our digits MLP:", f"{estimate(cfg).total_s * 1e6:.0f} us per inference (predicted)")

# %% [markdown]
# ## 6. A model that arrives as ONNX, deployed as one DRAM image
#
# The seed's flow: a float model exported to ONNX, int8 post-training quantization with power-of-two
# scales, Linear + ReLU fused, the layers split over PEs, and one configuration image in DRAM that the
# scheduler PE walks block by block without the host. The MLP above is written as the ONNX graph PyTorch
# would export (Gemm + Relu), imported, mapped, turned into the image and run by walking it.

# %%
import onnx
from onnx import TensorProto, helper, numpy_helper

from pondlib.devices.spinnaker2 import read_times, run_dram_image
from pondlib.devices.spinnaker2.onnx import to_spinnaker2
from pondlib.interop.onnx import load_onnx

l1, l2 = mlp.layers
graph = helper.make_graph(
    [
        helper.make_node("Gemm", ["x", "W1", "b1"], ["z1"], transB=1, name="fc1"),
        helper.make_node("Relu", ["z1"], ["h1"], name="relu1"),
        helper.make_node("Gemm", ["h1", "W2", "b2"], ["y"], transB=1, name="fc2"),
    ],
    "digits_mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
    [
        numpy_helper.from_array(np.asarray(v, np.float32), k)
        for k, v in {"W1": l1.weight.T, "b1": l1.bias, "W2": l2.weight.T, "b2": l2.bias}.items()
    ],
)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), "digits_mlp.onnx")

cfg_onnx = dnn_mapper(to_spinnaker2(load_onnx("digits_mlp.onnx")), calibration=xd[tr])
image = cfg_onnx.to_dram_image()
x_int8 = cfg_onnx.quantize_input(xd[te])
y_image, dram_after = run_dram_image(image, x_int8)
y_direct, _, _ = DNNSim.from_config(cfg_onnx).evolve(x_int8)
times = read_times(dram_after)
print(f"DRAM image: {len(image):,} bytes, {len(cfg_onnx.layers)} layer blocks (ReLU fused: {cfg_onnx.layers[0].relu})")
print(
    f"walking the image: accuracy {np.mean(y_image.argmax(1) == yd[te]):.2%}, {times['total']:,} cycles per inference"
)
assert np.array_equal(y_image, y_direct) and type(cfg_onnx).from_dram_image(image).layers[0].relu
assert abs(np.mean(y_image.argmax(1) == yd[te]) - acc_q) <= 0.005

# %% [markdown]
# ## 6. Beyond MLPs: a CNN with a residual block on the MLA and the Arm cores
#
# The graph path (`graph_mapper`) takes a layer graph (what `load_onnx` imports, or built in code) with
# convolutions, pools, residual adds, reshapes, matmuls of two activations, transposes, softmax, layer/RMS
# norm and GELU. Convolutions and matmuls run on the MLA (int8 products, one right shift); the other ops on
# the PE's Arm core in integer arithmetic (each op's rule is in `graph_ops`). Every op is split over worker
# PEs within their SRAM, and the DRAM image (version 2) carries every op; walking it equals `GraphSim`.
# Here: conv-relu-maxpool-conv-relu-(+skip)-global average pool-flatten-gemm on the digits, its head fitted
# by ridge regression on the float features.

# %%
from pondlib.devices.spinnaker2 import GraphSim, estimate_graph, graph_mapper, run_graph_image
from pondlib.devices.spinnaker2.graph_ops import float_op
from pondlib.graph.dnn import FloatLayer, FloatModel


def conv(w, pads=(1, 1, 1, 1)):
    return {"weight": w, "bias": np.zeros(len(w)), "strides": [1, 1], "pads": list(pads), "dilations": [1, 1]}


C = 8
body = (
    FloatLayer("c1", "conv", (-1,), conv(rng.normal(0, 0.4, (C, 1, 3, 3))), (C, 8, 8)),
    FloatLayer("r1", "relu", (0,), {}, (C, 8, 8)),
    FloatLayer("p1", "maxpool", (1,), {"kernel": [2, 2], "strides": [2, 2], "pads": [0] * 4}, (C, 4, 4)),
    FloatLayer("c2", "conv", (2,), conv(rng.normal(0, 0.15, (C, C, 3, 3))), (C, 4, 4)),
    FloatLayer("r2", "relu", (3,), {}, (C, 4, 4)),
    FloatLayer("skip", "add", (4, 2), {}, (C, 4, 4)),
    FloatLayer("gap", "avgpool", (5,), {"kernel": [2, 2], "strides": [2, 2], "pads": [0] * 4}, (C, 2, 2)),
    FloatLayer("flat", "reshape", (6,), {}, (4 * C,)),
)
images = xd.reshape(-1, 1, 8, 8)
outs = []  # float features of the training set, then a ridge-regression head
for layer in body:
    outs.append(float_op(layer, [images[tr] if j < 0 else outs[j] for j in layer.inputs]))
A = np.hstack([outs[-1], np.ones((len(tr), 1))])
head = np.linalg.solve(A.T @ A + np.eye(A.shape[1]), A.T @ np.eye(10)[yd[tr]])
cnn = FloatModel(
    body + (FloatLayer("fc", "gemm", (7,), {"weight": head[:-1], "bias": head[-1]}, (10,)),), "x", (1, 8, 8)
)

cfg_cnn = graph_mapper(cnn, calibration=images[tr[:200]])
for op in cfg_cnn.ops:
    print(f"{op.name:<5} {op.op:<8} -> {op.out_shape}  {op.split}")
x_cnn = cfg_cnn.quantize_input(images[te])
y_cnn, _, _ = GraphSim(cfg_cnn).evolve(x_cnn)
outs = []
for layer in cnn.layers:
    outs.append(float_op(layer, [images[te] if j < 0 else outs[j] for j in layer.inputs]))
acc_float, acc_chip = np.mean(outs[-1].argmax(1) == yd[te]), np.mean(y_cnn.argmax(1) == yd[te])
print(f"CNN accuracy: float {acc_float:.2%}, SpiNNaker2 int8 {acc_chip:.2%}")
image_v2 = cfg_cnn.to_dram_image()
y_walk, _ = run_graph_image(image_v2, x_cnn[:20])
assert np.array_equal(y_walk, y_cnn[:20]) and abs(acc_float - acc_chip) < 0.05
print(estimate_graph(cfg_cnn).table())

# %% [markdown]
# ## 7. Several chips: the same CNN over 3 chips, an SNN over 3 chips
#
# `chips=N` cuts the ops into contiguous groups, one per chip (the largest chip's DRAM load as small as
# possible); a tensor read on another chip is a chip-to-chip transfer, listed in the image and timed with
# the link's bandwidth and hop latency (stated assumptions in `graph_timing`). The outputs do not change.
# The SNN mapper spreads PE slices over chips the same way; spikes between chips take the hop latency within
# the tick, so the network runs spike for spike as on one chip.

# %%
cfg_3 = graph_mapper(cnn, calibration=images[tr[:200]], chips=3)
print("chips:", [op.chip for op in cfg_3.ops], "transfers:", [(t.src, t.dst, t.bytes) for t in cfg_3.transfers])
assert np.array_equal(GraphSim(cfg_3).evolve(x_cnn)[0], y_cnn)
t1, t3 = estimate_graph(cfg_cnn), estimate_graph(cfg_3)
print(
    f"latency: 1 chip {t1.total_s * 1e6:.0f} us, 3 chips {t3.total_s * 1e6:.0f} us "
    f"(pipelined: one inference every {t3.throughput_s * 1e6:.0f} us)"
)

spec_3 = mapper(net, chips=3)
config_3, ok, message = config_from_specification(spec_3)
assert ok, message
spikes_in = rng.poisson(0.3, (2, 50, 16))
print("SNN PEs per chip:", {c: list(spec_3.report.chip_of_pe.values()).count(c) for c in range(3)})
assert np.array_equal(
    SpiNNaker2Sim.from_config(config_3).evolve(spikes_in)[0],
    SpiNNaker2Sim.from_config(config_from_specification(mapper(net))[0]).evolve(spikes_in)[0],
)
