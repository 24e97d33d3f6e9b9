# %% [markdown]
# # A transformer block from ONNX to Siracusa: import, map, simulate bit-exactly, cycles, C
#
# A small pre-trained-style transformer block (single-head self-attention with a residual, LayerNorm, an MLP
# with GELU and a second residual) arrives as a float ONNX model, is quantized to int8 by ONNX Runtime's
# static quantizer (QDQ format, the usual route from PyTorch), and goes to Siracusa through pondlib's
# **graph path**: the whole operator graph (several MatMuls between activations, Softmax, LayerNorm,
# residual Adds), not a layer chain.
#
# 1. `load_opgraph` reads the ONNX graph as a DAG of named tensors;
# 2. `qdq_to_graph` rewrites every `DequantizeLinear -> float op -> QuantizeLinear` into integer ops
#    (MatMul + RequantShift, lookup tables for GELU, float32 islands for Softmax and LayerNorm);
# 3. `GraphSim` runs the integer graph bit-exactly and records every tensor; we compare it with ONNX Runtime;
# 4. `map_graph` places every tensor in L1/L2/L3, tiles every op for L1 and costs it in cycles;
# 5. `emit_graph` writes the same graph as C, which we compile and check against the simulator, bit for bit.

# %%
import logging
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

from pondlib.codegen import compile_host, run_host
from pondlib.devices.siracusa import GraphSim, emit_graph, map_graph, pack_inputs, qdq_to_graph, unpack_outputs
from pondlib.devices.siracusa.kernels.qdq_ops import quantize_linear
from pondlib.interop.onnx.opgraph import load_opgraph

work = Path(tempfile.mkdtemp(prefix="pond_transformer_"))
T, D, H = 16, 32, 64  # tokens, model width, MLP width
rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. The float block, as an exporter would write it
#
# `y = x2 + MLP(LN2(x2))` with `x2 = x + Attn(LN1(x))`; attention `softmax(q k^T / sqrt(D)) v` then an
# output projection; GELU written the way PyTorch exports it, `x/2 (1 + erf(x / sqrt 2))`.


# %%
def weight(name, shape, scale):
    return numpy_helper.from_array((rng.normal(size=shape) * scale).astype(np.float32), name)


def scalar(name, value):
    return numpy_helper.from_array(np.array(value, np.float32), name)


nodes = [
    helper.make_node("LayerNormalization", ["x", "g1", "b1"], ["n1"], name="ln1", axis=-1),
    *[helper.make_node("MatMul", ["n1", f"W{p}"], [p], name=f"proj_{p}") for p in "qkv"],
    helper.make_node("Transpose", ["k"], ["kt"], name="k_T", perm=[0, 2, 1]),
    helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
    helper.make_node("Mul", ["s", "inv_sqrt_d"], ["ss"], name="scale"),
    helper.make_node("Softmax", ["ss"], ["a"], name="softmax", axis=-1),
    helper.make_node("MatMul", ["a", "v"], ["c"], name="context"),
    helper.make_node("MatMul", ["c", "Wo"], ["o"], name="proj_o"),
    helper.make_node("Add", ["o", "bo"], ["ob"], name="bias_o"),
    helper.make_node("Add", ["x", "ob"], ["x2"], name="residual_1"),
    helper.make_node("LayerNormalization", ["x2", "g2", "b2"], ["n2"], name="ln2", axis=-1),
    helper.make_node("MatMul", ["n2", "W1"], ["h"], name="fc1"),
    helper.make_node("Add", ["h", "bh"], ["hb"], name="bias_1"),
    helper.make_node("Div", ["hb", "sqrt2"], ["e0"], name="gelu_div"),
    helper.make_node("Erf", ["e0"], ["e1"], name="gelu_erf"),
    helper.make_node("Add", ["e1", "one"], ["e2"], name="gelu_add"),
    helper.make_node("Mul", ["hb", "e2"], ["e3"], name="gelu_mul"),
    helper.make_node("Mul", ["e3", "half"], ["gl"], name="gelu_half"),
    helper.make_node("MatMul", ["gl", "W2"], ["m"], name="fc2"),
    helper.make_node("Add", ["m", "b2m"], ["mb"], name="bias_2"),
    helper.make_node("Add", ["x2", "mb"], ["y"], name="residual_2"),
]
inits = [weight(f"W{p}", (D, D), D**-0.5) for p in "qkvo"]
inits += [weight("W1", (D, H), D**-0.5), weight("W2", (H, D), H**-0.5)]
inits += [weight(n, (s,), 0.05) for n, s in (("bo", D), ("bh", H), ("b2m", D), ("b1", D), ("b2", D))]
inits += [numpy_helper.from_array((1 + 0.05 * rng.normal(size=D)).astype(np.float32), g) for g in ("g1", "g2")]
inits += [scalar("inv_sqrt_d", D**-0.5), scalar("sqrt2", np.sqrt(2.0)), scalar("one", 1.0), scalar("half", 0.5)]
graph = helper.make_graph(
    nodes,
    "block",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, T, D])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, T, D])],
    inits,
)
float_path = work / "block.onnx"
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), float_path)
print(f"float block: {len(nodes)} ops, {sum(np.prod(i.dims) for i in inits):,} parameters")

# %% [markdown]
# ## 2. Quantize with ONNX Runtime (static, QDQ format)
#
# Calibrated on 32 random token sequences; int8 activations and weights, per-tensor scales.


# %%
class Calibration(CalibrationDataReader):
    def __init__(self, n: int):
        self.batches = iter([{"x": rng.normal(size=(1, T, D)).astype(np.float32)} for _ in range(n)])

    def get_next(self):
        return next(self.batches, None)


logging.getLogger().setLevel(logging.ERROR)  # ORT's advice to pre-process the model
qdq_path = work / "block_qdq.onnx"
quantize_static(str(float_path), str(qdq_path), Calibration(32), quant_format=QuantFormat.QDQ)
qdq = load_opgraph(qdq_path)
print(f"QDQ model: {len(qdq.nodes)} ops ({qdq.op_counts().get('QuantizeLinear', 0)} QuantizeLinear)")

# %% [markdown]
# ## 3. The integer graph, and how close it stays to ONNX Runtime
#
# `qdq_to_graph` returns the integer graph and a report of every requantization it built (the float
# multiplier `M = s_in s_w / s_out` against its integer form `mul / 2^shift`).

# %%
int_graph, report = qdq_to_graph(qdq)
print("integer graph ops:", dict(sorted(int_graph.op_counts().items())))
print(f"{len(report.requants)} requantizations, worst multiplier error {report.max_multiplier_error:.2e}")
print(f"lookup tables: {len(report.luts)}, float32 islands: {report.islands}")

consts = qdq.constants
q_in = next(n for n in qdq.nodes if n.op == "QuantizeLinear" and n.inputs[0] == "x")
dq_out = qdq.producers()["y"]
s_x, z_x = (consts[t] for t in q_in.inputs[1:3])
s_y, z_y = (consts[t] for t in dq_out.inputs[1:3])

opts = ort.SessionOptions()
opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the graph's literal meaning
session = ort.InferenceSession(str(qdq_path), opts, providers=["CPUExecutionProvider"])
sim = GraphSim(int_graph)
exact = total = worst_lsb = 0
for _ in range(8):
    x = rng.normal(size=(1, T, D)).astype(np.float32)
    ref = quantize_linear(session.run(None, {"x": x})[0], s_y, z_y, -128, 127)
    got = sim.run([quantize_linear(x, s_x, z_x, -128, 127)]).output_list()[0]
    diff = np.abs(got - ref)
    exact, total, worst_lsb = exact + int((diff == 0).sum()), total + diff.size, max(worst_lsb, int(diff.max()))
print(f"pondlib vs ONNX Runtime: {exact / total:.2%} of {total} outputs equal, largest difference {worst_lsb} LSB")
assert exact / total > 0.9 and worst_lsb <= 6

# %% [markdown]
# The integer graph computes what the chip computes; ONNX Runtime computes in float between its Q/DQ pairs,
# so a requantization can land one step apart where the float product sits at a rounding boundary, and such
# a step travels through Softmax and LayerNorm. Every single requantization is within 1 LSB of ORT's.
#
# ## 4. On the chip: placement, tiles and cycles
#
# Untiled (everything in L2) on 1 and 8 cores, then tiled for a 64,000 B L1 budget with double buffering.

# %%
for cores, tiled in ((1, False), (8, False), (8, True)):
    m = map_graph(int_graph, cores=cores, tiled=tiled)
    print(f"{cores} core(s), {'tiled' if tiled else 'untiled'}: {m.cycles / 1e6:.2f} M cycles, L2 peak {m.l2_peak:,} B")
mapping = map_graph(int_graph, cores=8, tiled=True)
print("\n".join(mapping.table()[:12]))
print("...")
assert mapping.l3_bytes == 0  # the block fits on chip

# %% [markdown]
# ## 5. The same graph as C, bit-exact
#
# `emit_graph` writes plain C11 (integer ops with no undefined behaviour, the float islands as IEEE float32
# operations in the simulator's order). We compile it for the host and compare every output with `GraphSim`.

# %%
program = emit_graph(int_graph, name="block")
exe = compile_host(program, work / "c")
xs = [quantize_linear(rng.normal(size=(1, T, D)).astype(np.float32), s_x, z_x, -128, 127) for _ in range(4)]
equal = 0
for xq in xs:
    y_c, _ = run_host(exe, program, pack_inputs(int_graph, [xq])[None, None, :])
    y_c = unpack_outputs(int_graph, y_c.reshape(-1))
    y_sim = sim.run([xq]).output_list()
    equal += all(np.array_equal(a, b) for a, b in zip(y_c, y_sim))
print(f"C on the host equals the simulator on {equal}/{len(xs)} inputs; {program.memory.flash_bytes:,} B of constants")
assert equal == len(xs)
