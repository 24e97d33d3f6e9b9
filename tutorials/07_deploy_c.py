# %% [markdown]
# # Deploying as C: a Cortex-M4 binary, emulated, bit-exact with pondlib
#
# `pondlib.codegen` writes a network (or a device configuration) as plain C11: weights as `const` arrays
# (flash), state in a static arena (RAM), one `<name>_step(x, y)` per time step, no `malloc`, no libm.
# `pondlib.codegen.cross` compiles it for a Cortex-M4F with the `ziglang` toolchain and runs the binary
# on an emulated CPU (`unicorn`), counting instructions. Here: train a small digits network, deploy it
# twice (the float model as `float32` C, the Xylo configuration as `xylo` integer C) and check both
# against pondlib.

# %%
import tempfile
from pathlib import Path

import jax
import numpy as np

from pondlib.cli.demo_network import demo_network
from pondlib.codegen import generate
from pondlib.codegen.cross import build_cross, run_cross
from pondlib.datasets import load_digits_events
from pondlib.devices.xylo import XyloSim, mapper
from pondlib.devices.xylo.config import config_from_specification
from pondlib.devices.xylo.limits import get_limits
from pondlib.training import accuracy, fit
from pondlib.transform import channel_quantize

work = Path(tempfile.mkdtemp(prefix="pond_deploy_c_"))

# %% [markdown]
# ## 1. Train briefly
#
# The demo network `Linear(16, 32) -> LIF -> Linear(32, 10) -> LIF` on the digits as event counts,
# two epochs only: above chance (10 %), and the deployment does not depend on how well it is trained.

# %%
data = load_digits_events(T=12, seed=0)
net, _ = fit(
    demo_network(32, key=jax.random.PRNGKey(0)),
    data,
    epochs=2,
    key=jax.random.PRNGKey(1),
    frozen=("tau_mem", "tau_syn"),  # keep Xylo's decays: train the weights only
    progress=False,
)
x_test = data.x_test[:16]
y_float, _, _ = net(x_test.astype(np.float32))
print(f"float accuracy on {len(x_test)} test digits: {accuracy(y_float, data.y_test[:16]):.2f}")

# %% [markdown]
# ## 2. The float model as C, on a Cortex-M4F
#
# `generate(net, "float32")` embeds pondlib's own float32 decays as exact hexadecimal constants and keeps
# pondlib's operation order; the build uses `-ffp-contract=off` (no fused multiply-add). The memory report
# is per buffer: flash for constants, RAM for the state and the scratch arena.

# %%
prog = generate(net, "float32", name="digits")
print(f"flash {prog.memory.flash_bytes} B, RAM {prog.memory.ram_bytes} B")
build = build_cross(prog, "cortex-m4", work / "float32")
y_m4, _, ips = run_cross(build, x_test.astype(np.float32))
same = y_m4.view(np.uint32) == np.asarray(y_float, dtype=np.float32).view(np.uint32)
print(f"Cortex-M4F: {ips:,.0f} instructions per step; outputs equal to pondlib's: {same.mean():.1%}")
# dot products may add in another order than XLA: spikes agree except within a rounding of a threshold
assert same.mean() > 0.95

# %% [markdown]
# ## 3. The Xylo configuration as integer C: bit-exact with `XyloSim`
#
# Map, quantize and configure as for the chip (Xylo Audio 3 takes 10 outputs), then emit its integer core.

# %%
config, ok, message = config_from_specification(channel_quantize(mapper(net, get_limits("audio3"))))
assert ok, message
prog_x = generate(config, "xylo", name="digits_xylo")
build_x = build_cross(prog_x, "cortex-m4", work / "xylo")
y_c, rec_c, ips_x = run_cross(build_x, x_test, record=True)
y_sim, _, rec_sim = XyloSim.from_config(config).evolve(x_test, record=True)
print(f"xylo C on Cortex-M4F: {ips_x:,.0f} instructions per step, flash {build_x.flash_bytes} B (linked)")
print("outputs equal XyloSim bit for bit:", np.array_equal(y_c, np.asarray(y_sim)))
print("membranes equal XyloSim bit for bit:", np.array_equal(rec_c["Vmem"], np.asarray(rec_sim["Vmem"])))
assert np.array_equal(y_c, np.asarray(y_sim))
assert np.array_equal(rec_c["Vmem"], np.asarray(rec_sim["Vmem"]))
print(f"chip accuracy (emulated C): {accuracy(y_c, data.y_test[:16]):.2f}")

# %% [markdown]
# The sources are in `work` (`digits_xylo.c`, `.h`, a host harness `main.c`, a Makefile and a README with
# the memory table); `pond compile MODEL --numerics xylo -o DIR --target cortex-m4 --check RASTER.npy` does
# the same from the command line.

# %%
print(sorted(p.name for p in (work / "xylo").iterdir() if p.suffix in (".c", ".h", ".md")))
