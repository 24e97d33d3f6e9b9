# %% [markdown]
# # NIR: import networks from other frameworks, export pondlib networks
#
# NIR files store continuous-time equations and no time step. `pondlib.interop.nir` makes the three
# decisions explicit: the discretization (forward Euler by default), the exporter's convention
# (detected, reported, overridable) and the reset (files cannot say).

# %%
from pathlib import Path

import numpy as np

from pondlib import nn
from pondlib.devices.xylo.mapper import mapper
from pondlib.errors import ConstraintError
from pondlib.interop.nir import from_nir, load_nir, write

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "nir"

# %% [markdown]
# ## A Norse LIF neuron, with the exporter's dt
# Norse writes `r = 1`: dt is not in the file, so we pass it. Forward Euler with dt = 0.1 ms
# reproduces Norse's own trace.

# %%
ref = np.loadtxt(DATA / "lif" / "lif_norse.csv", delimiter=",")
imp = load_nir(DATA / "lif" / "lif_norse.nir", dt=1e-4)
print(imp.convention, imp.notes)
out, _, rec = imp.module(ref[:, :1], record=True)
spikes = np.flatnonzero(np.asarray(out[:, 0])).tolist()
print("spikes at", spikes)
assert spikes == [460, 510, 710, 760]
v = np.asarray(rec["1_NIRLIF/vmem_reset"][:, 0])
assert np.allclose(v, ref[:, 1], rtol=1e-5, atol=1e-7)

# %% [markdown]
# ## The Braille RSNN from snnTorch: dt detected from r = tau/dt

# %%
imp = load_nir(DATA / "braille" / "braille_noDelay_bias_zero.nir", dt=None)
print(imp.convention, imp.dt)
x = (np.random.default_rng(0).random((2, 50, 12)) < 0.3).astype(np.float32)
y = imp.module(x)[0]
assert y.shape == (2, 50, 7) and imp.dt == 1e-4

# %% [markdown]
# Xylo resets by subtraction and has no weight biases; the mapper lists every rule the network breaks.

# %%
try:
    mapper(from_nir(DATA / "braille" / "braille_noDelay_bias_zero.nir", dt=None, reset="subtract"))
except ConstraintError as err:
    print(err)
    assert set(err.rules) == {"linear_bias"}
else:
    raise AssertionError("the biased Braille network should not map onto Xylo")

# %% [markdown]
# ## Round trip: pondlib -> NIR file -> pondlib is exact

# %%
import jax

k = jax.random.split(jax.random.PRNGKey(0), 2)
net = nn.Sequential(nn.Linear(4, 6, key=k[0]), nn.LIF(6, has_rec=True, key=k[1]))
write("net.nir", net)
back = from_nir("net.nir", dt=None)
xs = 2.0 * (np.random.default_rng(1).random((3, 40, 4)) < 0.3)
assert bool((back(xs)[0] == net(xs)[0]).all())
print("round trip identical:", type(back).__name__)
