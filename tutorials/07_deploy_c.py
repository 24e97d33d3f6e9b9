# %% [markdown]
# # Deploying as C: a Cortex-M4 binary, emulated, bit-exact with pondlib
#
# `pondlib.codegen` writes a network (or a device configuration) as plain C11: weights as `const` arrays
# (flash), state in a static arena (RAM), one `<name>_step(x, y)` per time step, no `malloc`, no libm.
# `pondlib.codegen.cross` compiles it for a Cortex-M4F with the `ziglang` toolchain and runs the binary
# on an emulated CPU (`unicorn`), counting instructions. Here: train a digits network, deploy it twice
# (the float model as `float32` C, the Xylo configuration as `xylo` integer C) and check both against
# pondlib, spike for spike.

# %%
import tempfile
from pathlib import Path

import jax
import numpy as np
import optax

from pondlib.cli.demo_network import demo_network
from pondlib.codegen import generate
from pondlib.codegen.cross import build_cross, run_cross
from pondlib.datasets import load_digits_events
from pondlib.devices.xylo import XyloSim, mapper
from pondlib.devices.xylo.config import config_from_specification
from pondlib.devices.xylo.limits import get_limits
from pondlib.training import accuracy, evaluate, fit
from pondlib.transform import channel_quantize

work = Path(tempfile.mkdtemp(prefix="pond_deploy_c_"))

# %% [markdown]
# ## 1. Train
#
# The network of `pond demo`: `Linear(16, 64) -> LIF -> Linear(64, 10) -> LIF` on the digits as event
# counts (12 steps of 1 ms). Its time constants equal Xylo's bit-shift decays exactly, so they stay frozen
# with the thresholds; only the weights learn. Adam with a cosine-decaying learning rate, 16 epochs
# (a few seconds: most of the time goes into compiling the training step once).

# %%
data = load_digits_events(T=12, seed=0)
epochs, batch = 16, 64
schedule = optax.cosine_decay_schedule(1e-2, epochs * (len(data.y_train) // batch), alpha=0.05)
net, _ = fit(
    demo_network(64, key=jax.random.PRNGKey(0)),
    data,
    "cross_entropy_sum",
    optimizer=optax.chain(optax.clip_by_global_norm(1.0), optax.adam(schedule)),
    epochs=epochs,
    batch_size=batch,
    key=jax.random.PRNGKey(1),
    frozen=("tau_mem", "tau_syn", "threshold", "bias"),
    progress=False,
)
float_acc = evaluate(net, data.x_test, data.y_test)
print(f"float accuracy on all {len(data.y_test)} test digits: {float_acc:.1%}")
assert float_acc > 0.8

# %% [markdown]
# ## 2. The float model as C, on a Cortex-M4F
#
# `generate(net, "float32")` embeds pondlib's own float32 decays as exact hexadecimal constants and keeps
# pondlib's operation order; the build uses `-ffp-contract=off` (no fused multiply-add). The memory report
# is per buffer: flash for constants, RAM for the state and the scratch arena. The emulator counts every
# executed instruction from Python, which is slow, so the binary sees the first 64 test digits (768 steps).

# %%
n_emu = 64
x_emu, labels_emu = data.x_test[:n_emu], data.y_test[:n_emu]
prog = generate(net, "float32", name="digits")
print(f"generated: flash {prog.memory.flash_bytes:,} B (weights), RAM {prog.memory.ram_bytes:,} B (state + arena)")
build = build_cross(prog, "cortex-m4", work / "float32")
print(f"linked for the Cortex-M4F: flash {build.flash_bytes:,} B (code + weights), RAM {build.ram_bytes:,} B")
y_m4, _, ips = run_cross(build, x_emu.astype(np.float32))
y_float, _, _ = net(x_emu.astype(np.float32))
same = y_m4.view(np.uint32) == np.asarray(y_float, dtype=np.float32).view(np.uint32)
print(f"Cortex-M4F: {ips:,.0f} instructions per step; output spikes equal to pondlib's: {same.mean():.2%} "
      f"({int((~same).sum())} of {same.size:,} differ)")  # fmt: skip
print(f"accuracy on these {n_emu} digits: emulated C {accuracy(y_m4, labels_emu):.1%}, "
      f"pondlib {accuracy(y_float, labels_emu):.1%}")  # fmt: skip
# the C adds dot products in ascending order, XLA may group them otherwise: a spike can only differ where a
# membrane lies within a float32 rounding of the threshold, which is rare
assert same.mean() > 0.99 and ips > 0

# %% [markdown]
# ## 3. The Xylo configuration as integer C: bit-exact with `XyloSim`
#
# Map, quantize and configure as for the chip (Xylo Audio 3 takes 10 outputs), then emit its integer core.
# Every recorded state (membranes, synaptic currents, spikes of the hidden and the output neurons) is
# compared, not only the outputs.

# %%
config, ok, message = config_from_specification(channel_quantize(mapper(net, get_limits("audio3"))))
assert ok, message
y_chip, _, _ = XyloSim.from_config(config).evolve(data.x_test)
chip_acc = accuracy(y_chip, data.y_test)
print(f"XyloSim accuracy on all {len(data.y_test)} test digits: {chip_acc:.1%} (float {float_acc:.1%})")
assert chip_acc > 0.75

prog_x = generate(config, "xylo", name="digits_xylo")
build_x = build_cross(prog_x, "cortex-m4", work / "xylo")
y_c, rec_c, ips_x = run_cross(build_x, x_emu, record=True)
y_sim, _, rec_sim = XyloSim.from_config(config).evolve(x_emu, record=True)
print(f"xylo C on Cortex-M4F: {ips_x:,.0f} instructions per step, flash {build_x.flash_bytes:,} B, "
      f"RAM {build_x.ram_bytes:,} B (linked)")  # fmt: skip
print("outputs equal XyloSim bit for bit:", np.array_equal(y_c, np.asarray(y_sim)))
assert np.array_equal(y_c, np.asarray(y_sim))
for key, values in rec_c.items():
    assert np.array_equal(values, np.asarray(rec_sim[key]).reshape(values.shape)), key
print(f"every recorded state equals XyloSim bit for bit: {sorted(rec_c)}")
print(f"chip accuracy on these {n_emu} digits (emulated C): {accuracy(y_c, labels_emu):.1%}")

# %% [markdown]
# The sources are in `work` (`digits_xylo.c`, `.h`, a host harness `main.c`, a Makefile and a README with
# the memory table); `pond compile MODEL --numerics xylo -o DIR --target cortex-m4 --check RASTER.npy` does
# the same from the command line.

# %%
print(sorted(p.name for p in (work / "xylo").iterdir() if p.suffix in (".c", ".h", ".md")))
