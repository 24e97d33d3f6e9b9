# %% [markdown]
# # Deploying to a Xylo board, next to the simulator
#
# A Xylo development kit (HDK) is driven through a vendor SDK that is hard to install. pondlib ships
# the same deployment interface backed by a numpy model of the board (`pondlib.devices.xylo.hdk`):
# deployment code is written and tested anywhere, then pointed at real hardware.
#
# The pipeline: a float network (`pondlib.nn`) -> `mapper` -> quantizer -> `XyloConfig`, which runs
# on the bit-exact simulator `XyloSim` *and* on a board (`XyloBoard`). Both must agree bit for bit.

# %%
import numpy as np

from pondlib import nn
from pondlib.devices.xylo.config import config_from_specification
from pondlib.devices.xylo.hdk import XyloBoard, find_xylo_hdks, format_memory_map, set_mock_boards
from pondlib.devices.xylo.mapper import mapper
from pondlib.devices.xylo.sim import XyloSim
from pondlib.errors import ConfigError, SimulationError
from pondlib.transform import channel_quantize

rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. Map a small network to a Xylo configuration
#
# 16 input channels -> 32 hidden LIF neurons -> 4 output neurons, dt = 1 ms.

# %%
net = nn.Sequential(
    nn.Linear(16, 32, weight=rng.normal(0.0, 0.4, size=(16, 32))),
    nn.LIF(32, tau_mem=0.02, tau_syn=0.01, threshold=2.0),
    nn.Linear(32, 4, weight=rng.normal(0.0, 0.3, size=(32, 4))),
    nn.LIF(4, threshold=20.0),
)
spec = mapper(net)  # float specification (every design rule checked)
config, ok, message = config_from_specification(channel_quantize(spec))
assert ok, message
print(f"N_in={config.n_input}, N_hid={config.n_hidden}, N_out={config.n_output}, dt={config.dt} s")

# %% [markdown]
# ## 2. Run it on the simulator

# %%
x = rng.poisson(0.1, size=(200, 16))  # input event counts, (T, N_in)
sim = XyloSim.from_config(config)
out_sim, state_sim, rec_sim = sim.evolve(x, record=True)
print("simulator: output spikes per neuron", out_sim.sum(axis=0).tolist())

# %% [markdown]
# ## 3. Deploy the same configuration to a board
#
# `find_xylo_hdks()` lists the connected boards. Here they are mock boards; `set_mock_boards(n)`
# (or the environment variable `PONDLIB_XYLO_MOCK_BOARDS`) chooses how many are plugged in.
# `XyloBoard(board, config)` validates the configuration, encodes it to the chip's memory image,
# writes it and reads it back. The board builds its core from its own memory, so an encoding bug
# would show up as a wrong result right here.

# %%
set_mock_boards(1)
hdks = find_xylo_hdks()
assert hdks, "no Xylo board connected"
board = XyloBoard(hdks[0], config)
print(board)

out_hw, state_hw, rec_hw = board.evolve(x, record=True)
print("board:     output spikes per neuron", out_hw.sum(axis=0).tolist())

# %% [markdown]
# ### Side by side: bit for bit the same

# %%
assert np.array_equal(out_hw, out_sim)
for key in rec_sim:
    assert np.array_equal(rec_hw[key], rec_sim[key]), key
print("output and every recorded state agree bit for bit:", ", ".join(f"{k} {v.shape}" for k, v in rec_hw.items()))

# The configuration read back from the board's memory is the one written.
assert board.config == config

# %% [markdown]
# ## 4. The memory image
#
# The configuration lives in bit-packed 32-bit words: weights 4 per word, threshold|bias per neuron,
# decay shifts and alias per neuron, global registers (sizes, shifts, dt as a timer divider and as
# float64 bits). The full bit-field table is in the `pondlib.devices.xylo.hdk` docstring.

# %%
print(format_memory_map(board.limits))
reg = board.device.read_memory("REG", 0, 5)
print("REG words 0-4:", [hex(int(w)) for w in reg])

# %% [markdown]
# ## 5. Time and power on the board
#
# The board runs in real time: `T * dt` per run. The mock answers immediately (simulated time) and
# estimates clock cycles and power per step from the synaptic operations. These come from a simple
# cost model (`CostModel`: cycles and energy per synaptic operation and per state update, clock
# frequency, static power) — model assumptions, not measurements.

# %%
stats = board.last_stats
print(f"inference duration: {board.inference_duration * 1e3:.1f} ms for {len(x)} steps")
print(stats.summary())
print(
    f"busiest step: {stats.max_cycles} cycles of {stats.cycle_budget} available "
    f"(real time: {stats.realtime_ok}); peak power {stats.power_w.max() * 1e6:.1f} uW"
)
assert board.inference_duration == len(x) * config.dt
assert stats.realtime_ok

estimate = board.estimate(x)  # the same model, host side, board untouched
assert np.array_equal(estimate.synops, stats.synops)

# %% [markdown]
# ## 6. Errors a deployment script should handle
#
# Invalid configurations are refused before anything is written, listing every problem; a board that
# disappears or stops answering raises a `SimulationError` with the fix; nothing hangs.

# %%
bad = config.replace(dash_mem=np.full(config.n_hidden, 16), weight_shift_in=20, dt=1.0)
try:
    XyloBoard(hdks[0], bad)
except ConfigError as err:
    print(err)
    assert len(err.problems) == 3

board.device.disconnect()
try:
    board.evolve(x)
except SimulationError as err:
    print(err)
board.device.reconnect()  # a power cycle: the memory is blank again
board.apply_config(config)  # re-applying resets the state
assert np.array_equal(board.evolve(x)[0], out_sim)
print("reconnected, reconfigured, same result")
