# %% [markdown]
# # Build a spiking network, run it, look at its graph, save it
#
# A `pondlib.nn` network is an immutable JAX pytree (an `equinox.Module`): arrays are trainable
# parameters, sizes and time steps are static. Every module maps input of shape `(T, N_in)` (one
# sample) or `(B, T, N_in)` (a batch) to `(output, state, record)`.
#
# This tutorial builds a small network, runs it with `record=True` to see inside, exports its
# *graph* (what the device mappers read), plots a raster and saves the network to one file.

# %%
import jax
import jax.numpy as jnp
import numpy as np

from pondlib import nn, plot
from pondlib.graph import LIFNeurons, LinearWeights, graph_to_str, modules_of_class, topological_order
from pondlib.io import describe, load_network, save_network

# %% [markdown]
# ## 1. Build: 16 inputs -> 32 LIF -> (residual 32 -> 32) -> 10 LIF
#
# `nn.LIF` integrates a synaptic current (`tau_syn`) into a membrane (`tau_mem`), both in seconds,
# with a step `dt` (1 ms by default). `max_spikes_per_dt` caps the spikes per neuron per step (Xylo
# hidden neurons fire up to 31, SpiNNaker2 and Siracusa neurons once). `Residual` adds its block's
# input to its output.

# %%
k = jax.random.split(jax.random.PRNGKey(0), 3)
net = nn.Sequential(
    nn.Linear(16, 32, key=k[0]),
    nn.LIF(32, tau_mem=0.02, tau_syn=0.005, threshold=0.5, max_spikes_per_dt=31),
    nn.Residual(nn.Linear(32, 32, key=k[1]), nn.LIF(32, tau_mem=0.02, tau_syn=0.005, threshold=0.5)),
    nn.Linear(32, 10, key=k[2]),
    nn.LIF(10, max_spikes_per_dt=1),
)
print(f"{net.size_in} inputs -> {net.size_out} outputs, {len(net)} modules")
assert (net.size_in, net.size_out) == (16, 10)

# %% [markdown]
# ## 2. Run it with `record=True`
#
# The input is 4 samples of 100 steps of random events (0, 1 or 2 per channel and step). The record
# holds every internal state, time first, under `"<index>_<Module>/<quantity>"`.

# %%
rng = np.random.default_rng(0)
x = rng.poisson(0.3, size=(4, 100, 16)).astype(np.float32)  # (B, T, N_in) events
out, state, rec = net(x, record=True)
print("output", out.shape, "| record keys:", sorted(rec))
hidden = np.asarray(rec["1_LIF/spikes"])  # (B, T, 32)
print(
    f"hidden spikes per sample: {hidden.sum(axis=(1, 2)).tolist()}, at most "
    f"{int(hidden.max())} per neuron per step; output spikes: {np.asarray(out).sum(axis=(1, 2)).tolist()}"
)
assert out.shape == (4, 100, 10) and rec["1_LIF/vmem"].shape == (4, 100, 32)
assert hidden.sum() > 0 and np.asarray(out).max() <= 1  # the output cap is 1

# %% [markdown]
# The state continues a run: two halves give the same output as the whole.

# %%
y1, s1, _ = net(x[:, :50])
y2, _, _ = net(x[:, 50:], state=s1)
assert np.array_equal(np.concatenate([y1, y2], axis=1), np.asarray(out))
print("two halves == one run: True")

# %% [markdown]
# ## 3. The graph: what the device mappers read
#
# `as_graph()` turns the network into plain data: typed modules (`LinearWeights`, `LIFNeurons`,
# `AliasConnection` for the residual sum) connected through nodes, holding numpy copies of the
# parameters. Traversals are deterministic.

# %%
graph = net.as_graph()
print(graph_to_str(graph))
order = [m.name for m in topological_order(graph)]
print("topological order:", order)
lifs = sorted(modules_of_class(graph, LIFNeurons), key=lambda m: order.index(m.name))
weights = modules_of_class(graph, LinearWeights)
print(
    f"{len(weights)} weight layers, {len(lifs)} LIF layers (name, neurons, tau_mem in ms):",
    [(m.name, m.n_neurons, round(float(np.asarray(m.tau_mem).ravel()[0]) * 1e3, 3)) for m in lifs],
)
assert len(lifs) == 3 and len(weights) == 3
assert order.index("0_Linear") < order.index("1_LIF") < order.index("4_LIF")

# %% [markdown]
# ## 4. A raster plot of the hidden layer
#
# `pondlib.plot` draws time-major arrays with labelled axes and units; multi-spike counts get a
# colorbar. Figures are saved with `fig.savefig` (no display needed).

# %%
fig = plot.raster(hidden[0], title="hidden layer 1_LIF, sample 0", dt=1e-3)
fig.savefig("01_hidden_raster.png", dpi=100)
counts = hidden[0].sum(axis=0)
quiet = sorted(np.argsort(np.where(counts > 0, counts, np.inf))[:2].tolist())  # 2 least active (> 0)
fig = plot.traces(
    np.asarray(rec["1_LIF/vmem"][0]),
    neurons=quiet,
    dt=1e-3,
    labels=[f"neuron {i} ({int(counts[i])} spike{'' if counts[i] == 1 else 's'})" for i in quiet],
    title="membrane potential of two quiet neurons (after reset), sample 0",
    ylabel="vmem (a.u.)",
)
ax = fig.axes[0]
ax.axhline(0.5, color="grey", ls="--", lw=1, label="threshold (0.5)")
ax.legend(loc="lower left", fontsize="small", framealpha=0.9)
fig.savefig("01_vmem.png", dpi=100)
print("saved 01_hidden_raster.png and 01_vmem.png")

# %% [markdown]
# ## 5. Save and load: one file, no user code needed to rebuild
#
# `save_network` writes the structure (module types, sizes, dt, spike caps, ...) as JSON plus the
# arrays (`equinox.tree_serialise_leaves`). `load_network` rebuilds the identical network: the same
# leaves, the same outputs. `pond map net.pond --device xylo` reads the same file.

# %%
save_network(net, "net.pond")
print(describe("net.pond")["summary"])
back = load_network("net.pond")
assert np.array_equal(np.asarray(back(x)[0]), np.asarray(out))
assert back.layers[1].max_spikes_per_dt == 31 and back.layers[1].dt == net.layers[1].dt
print("loaded network gives identical output:", bool(jnp.all(back(x)[0] == out)))
