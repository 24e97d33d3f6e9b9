# %% [markdown]
# # Siracusa: an int8 MLP with RequantShift, bit-precise simulation, tiling and cycles
#
# Siracusa (PULP) runs integer layers on an 8-core RV32 cluster (and an NPU for some convolutions).
# Every layer's integer core is **RequantShift**: `y = clamp((acc * mul + add + 2^(s-1)) >> s)`
# with int32 wrap-around, round half up and an arithmetic shift. pondlib maps float layers to it,
# checks every constraint at once, simulates it bit for bit and estimates cycles per layer.

# %%
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from pondlib.devices.siracusa import (
    TUTORIAL_ANCHORS,
    GemmLayer,
    ReLU,
    RequantShift,
    SiracusaSim,
    config_from_specification,
    cycle_table,
    format_cycle_table,
    leaky_relu_series,
    mapper,
    quantize_input,
    requant_shift,
)
from pondlib.errors import ConstraintError

# %% [markdown]
# ## 1. RequantShift rounds half up and wraps like the cores
#
# `-3 / 2 -> -1` and `-5 / 2 -> -2` (half up, not half away from zero); `65536 * 65536` wraps to 0.

# %%
half = RequantShift(mul=1, div=2)
print("(-3, -5, 3) / 2 ->", requant_shift(np.array([-3, -5, 3]), half).tolist())
assert requant_shift(np.array([-3, -5, 3]), half).tolist() == [-1, -2, 2]
assert requant_shift(np.array([65536]), RequantShift(mul=65536)).tolist() == [0]

# %% [markdown]
# ## 2. Train a small float MLP on the digits (numpy, a few seconds)
#
# 64 pixels (0..16) -> 64 -> 32 -> 10. Hidden sizes are multiples of 16 (the GEMM output-chunk rule).

# %%
d = load_digits()
x_tr, x_te, y_tr, y_te = train_test_split(d.data, d.target, test_size=0.25, random_state=0, stratify=d.target)
rng = np.random.default_rng(0)
sizes = (64, 64, 32, 10)
params = [[rng.normal(0, np.sqrt(2 / a), (a, b)), np.zeros(b)] for a, b in zip(sizes[:-1], sizes[1:])]
moments = [[np.zeros_like(p), np.zeros_like(p)] for wb in params for p in wb]
onehot = np.eye(10)[y_tr]
with threadpool_limits(1):
    for step in range(1, 401):  # full-batch Adam on cross-entropy
        hs = [x_tr / 16]
        for i, (W, b) in enumerate(params):
            z = hs[-1] @ W + b
            hs.append(np.maximum(z, 0) if i < 2 else z)
        p = np.exp(hs[-1] - hs[-1].max(1, keepdims=True))
        g = (p / p.sum(1, keepdims=True) - onehot) / len(x_tr)
        grads = []
        for i in (2, 1, 0):
            grads = [hs[i].T @ g, g.sum(0)] + grads
            g = (g @ params[i][0].T) * (hs[i] > 0) if i else g
        for j, (q, gr) in enumerate(zip([q for wb in params for q in wb], grads)):
            m, v = moments[j]
            m[:] = 0.9 * m + 0.1 * gr
            v[:] = 0.999 * v + 0.001 * gr * gr
            q -= 3e-3 * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
params[0][0] = params[0][0] / 16  # the network now takes raw pixels 0..16


def predict(x):
    h = x
    for i, (W, b) in enumerate(params):
        h = h @ W + b
        h = np.maximum(h, 0) if i < 2 else h
    return h.argmax(-1)


acc_float = float(np.mean(predict(x_te) == y_te))
print(f"float accuracy: {acc_float:.4f}")

# %% [markdown]
# ## 3. Map to Siracusa: int8 weights, RequantShift per channel, ReLU fused as an unsigned output
#
# The mapper takes typed layer descriptions and calibration data. It reports, per layer, the shift,
# the multiplier's approximation error, where the weights live, the L1 tiles and NPU eligibility.

# %%
layers = []
for i, (W, b) in enumerate(params):
    layers += [GemmLayer(f"fc{i}", W, b)] + ([ReLU(f"relu{i}")] if i < 2 else [])
spec = mapper(layers, calibration=x_tr)
print(spec.report_table())
config, ok, message = config_from_specification(spec)
assert ok, message

# %% [markdown]
# ## 4. Run the bit-precise simulator and compare with float

# %%
out, state, rec = SiracusaSim(config).evolve(quantize_input(x_te[:, None, :], config), record=True)
acc_int8 = float(np.mean(out[:, 0].argmax(-1) == y_te))
print(f"int8 accuracy: {acc_int8:.4f} (float {acc_float:.4f})")
assert acc_float > 0.95 and abs(acc_int8 - acc_float) <= 0.005

# %% [markdown]
# ## 5. Every broken rule at once
#
# 20 outputs break the GEMM output-chunk rule (O % 16 == 0 when O >= 16) and a 1,000 B L1 budget is too
# small for the first layer's weights (K is never tiled): both are reported in one error.

# %%
bad = [GemmLayer("fc0", params[0][0][:, :20]), ReLU("r"), GemmLayer("fc1", np.ones((20, 10)))]
try:
    mapper(bad, calibration=x_tr, l1_budget=1000)
except ConstraintError as err:
    print(err)
    assert {"gemm_chunk", "l1_tile_fit"} <= set(err.rules)

# %% [markdown]
# ## 6. Cycles per layer, and the model against the tutorial's LeakyReLU anchors

# %%
print(format_cycle_table(cycle_table(config, cores=8, simd=True, tiled=True)))
for key, model in leaky_relu_series().items():
    ref = TUTORIAL_ANCHORS["leaky_relu"][key]
    print(f"LeakyReLU {key:<22} model {model:>10,.0f}  tutorial {ref:>10,}")
    assert abs(model / ref - 1) < 0.15

# %% [markdown]
# ## 7. A model that arrives as ONNX
#
# Most users bring a model exported from PyTorch. Here the float MLP above is written as the ONNX graph
# PyTorch would export (Gemm + Relu nodes), read back with `pondlib.interop.onnx.load_onnx`, checked
# against its own float evaluator, and deployed through the same mapper: the result equals the direct path.

# %%
import onnx
from onnx import TensorProto, helper, numpy_helper

from pondlib.devices.siracusa.onnx import to_siracusa
from pondlib.interop.onnx import load_onnx, run_float

nodes, inits, prev = [], [], "x"
for i, (W, b) in enumerate(params):
    inits += [
        numpy_helper.from_array(W.T.astype(np.float32), f"W{i}"),
        numpy_helper.from_array(b.astype(np.float32), f"b{i}"),
    ]
    nodes.append(helper.make_node("Gemm", [prev, f"W{i}", f"b{i}"], [f"z{i}"], transB=1, name=f"fc{i}"))
    prev = f"z{i}"
    if i < 2:
        nodes.append(helper.make_node("Relu", [prev], [f"h{i}"], name=f"relu{i}"))
        prev = f"h{i}"
graph = helper.make_graph(
    nodes,
    "digits_mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
    [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["N", 10])],
    inits,
)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), "digits_mlp.onnx")

model = load_onnx("digits_mlp.onnx")
print(model.summary())
acc_onnx_float = float(np.mean(run_float(model, x_te.astype(np.float32)).argmax(-1) == y_te))
onnx_layers, perm = to_siracusa(model)
onnx_config, ok, message = config_from_specification(mapper(onnx_layers, calibration=x_tr[:, perm]))
assert ok, message
out_onnx, _, _ = SiracusaSim(onnx_config).evolve(quantize_input(x_te[:, None, perm], onnx_config))
acc_onnx_int8 = float(np.mean(out_onnx[:, 0].argmax(-1) == y_te))
print(f"from ONNX: float {acc_onnx_float:.4f}, int8 on Siracusa {acc_onnx_int8:.4f} (direct path {acc_int8:.4f})")
assert abs(acc_onnx_float - acc_float) <= 0.005 and abs(acc_onnx_int8 - acc_int8) <= 0.005
