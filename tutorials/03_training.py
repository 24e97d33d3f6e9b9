# %% [markdown]
# # Training that survives deployment: float vs hardware-aware on Xylo
#
# A network trained in float loses accuracy on the chip without saying so: Xylo delays every
# hidden->output hop by one step, caps spikes (31 hidden, 1 output), decays by bit shifts
# (`1 - 2^-dash`), saturates 16-bit states, clips input counts at 15 and rounds weights to int8.
# `pondlib.transform.xylo_aware` puts all of that into the float model (straight-through gradients),
# so training sees what the chip will do; `mapper` + `channel_quantize` then deploy it unchanged.
#
# Fast by default (a few epochs, 64 hidden neurons). Set `FAST = False` for the full run
# (`benchmarks/digits_xylo.py` does the same with 128 neurons and more epochs: about 95 % float,
# 90 % chip without and 96 % with hardware-aware training).

# %%
import jax
import numpy as np
import optax

from pondlib import nn
from pondlib.datasets import load_digits_events
from pondlib.devices.xylo import XYLO_AUDIO2, XYLO_AUDIO3, XyloSim, config_from_specification, mapper
from pondlib.devices.xylo.aware import hardware_dashes, xylo_aware
from pondlib.devices.xylo.compare import compare_records, layer_map_from_spec
from pondlib.errors import ConstraintError
from pondlib.training import accuracy, evaluate, fit
from pondlib.transform import channel_quantize

FAST = True
EPOCHS, HW_EPOCHS, HIDDEN = (8, 4, 64) if FAST else (60, 30, 128)

# %% [markdown]
# ## 1. Data: digits as input events
#
# 8x8 digits, scanned row by row and column by column into 16 channels of event counts (0..15),
# then 4 silent steps so that the delayed output layer can answer (T = 12 steps of 1 ms).

# %%
data = load_digits_events(T=12)
print(data.description)

# %% [markdown]
# ## 2. Plain float training
#
# Time constants a float user would pick (20 ms membrane, 2 ms synapse), no spike caps.

# %%
k1, k2, k_fit, k_hw = jax.random.split(jax.random.PRNGKey(0), 4)
net = nn.Sequential(
    nn.Linear(16, HIDDEN, key=k1),
    nn.LIF(HIDDEN, tau_mem=0.02, tau_syn=0.002),
    nn.Linear(HIDDEN, 10, key=k2),
    nn.LIF(10, tau_mem=0.02, tau_syn=0.002),
)
steps = len(data.y_train) // 64
opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(optax.cosine_decay_schedule(3e-3, EPOCHS * steps)))
net, _ = fit(net, data, epochs=EPOCHS, optimizer=opt, key=k_fit, frozen=("tau_mem", "tau_syn"), progress=False)
float_acc = evaluate(net, data.x_test, data.y_test)
print(f"float test accuracy: {float_acc:.1%}")

# %% [markdown]
# ## 3. Deploy: Audio 2 refuses 10 outputs, Audio 3 takes them

# %%
try:
    mapper(net, XYLO_AUDIO2)
except ConstraintError as err:
    print("Xylo Audio 2:", [f"{v.rule}: {v.value} > {v.limit}" for v in err.violations])


def on_chip(model, x):
    qspec = channel_quantize(mapper(model, XYLO_AUDIO3))
    config, ok, message = config_from_specification(qspec)
    assert ok, message
    out, _, rec = XyloSim.from_config(config).evolve(x, record=True)  # batched
    return qspec, out, rec


qspec, chip_out, chip_rec = on_chip(net, data.x_test)
chip_plain = accuracy(chip_out, data.y_test)
print(f"chip accuracy, plain float training: {chip_plain:.1%} ({(chip_plain - float_acc) * 100:+.1f} points)")

# %% [markdown]
# ## 4. Hardware-aware fine-tuning
#
# `xylo_aware` returns a new network (the float one is untouched) of `XyloLIF` layers: the decay
# shifts start at the mapper's `log2(tau / dt)` and are learned through a rounding STE.

# %%
hw = xylo_aware(net, XYLO_AUDIO3, quantize="channel")
opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(optax.cosine_decay_schedule(2e-3, HW_EPOCHS * steps)))
hw, _ = fit(hw, data, epochs=HW_EPOCHS, optimizer=opt, key=k_hw, progress=False)
hw_acc = evaluate(hw, data.x_test, data.y_test)
hw_qspec, hw_chip_out, hw_chip_rec = on_chip(hw, data.x_test)
chip_hw = accuracy(hw_chip_out, data.y_test)
print(f"hardware-aware float: {hw_acc:.1%}   on the chip: {chip_hw:.1%}")
print(
    "trained membrane dashes:",
    np.unique(hardware_dashes(hw)["0_XyloLIF"]["dash_mem"]).tolist(),
    " mapped:",
    np.unique(hw_qspec.dash_mem).tolist(),
)
assert chip_hw == hw_acc  # the hardware-aware model is the chip, bit for bit

# %% [markdown]
# ## 5. Records side by side
#
# `compare_records` lines the float record up with the chip's: the plain model's output layer is one
# step early (the chip's hop delay) and in float units (the quantizer's scale converts them); the
# hardware-aware model already has the delays (`delays=0`) and matches exactly.

# %%
x = data.x_test[:50]
_, _, plain_rec = net(x.astype(np.float32), record=True)
plain = compare_records(
    plain_rec,
    {k: v[:50] for k, v in chip_rec.items()},
    layer_map=layer_map_from_spec(qspec),
    scales=qspec.quantization.scales,
    chip_output=chip_out[:50],
)
_, _, hw_rec = hw(x.astype(np.float32), record=True)
aware = compare_records(
    hw_rec,
    {k: v[:50] for k, v in hw_chip_rec.items()},
    layer_map=layer_map_from_spec(hw_qspec),
    delays=0,
    scales=hw_qspec.quantization.scales,
    chip_output=hw_chip_out[:50],
)
for title, cmp in (("plain float", plain), ("hardware-aware", aware)):
    for name, c in cmp.items():
        st = c.stats
        print(
            f"{title:15s} {name:10s} delay {c.delay}  vmem corr {st['vmem']['corr']:.3f}  "
            f"spikes equal {st['spikes']['exact']:.1%}  float/chip spikes "
            f"{st['spikes']['float_total']:.0f}/{st['spikes']['chip_total']:.0f}"
        )
assert all(c.stats["spikes"]["exact"] == 1.0 for c in aware.values())

# %% [markdown]
# ## 7. The same pipeline as one call, on every device
#
# `pondlib.deploy` runs what this tutorial did by hand, for any registered device: check other
# variants (Xylo Audio 2's violations), map the network as trained, simulate it bit-precisely, report
# resources, quantization and the float-vs-device gaps, fine-tune the device-aware twin, export it,
# simulate it and compare it with the device spike for spike. It returns a `Deployment`: the data
# `pond demo` renders. Each device's `deploy_settings` pick its variant and options (Xylo Audio 3,
# SpiNNaker2's 7-bit synapse words, Siracusa without the synaptic current it has no state for).

# %%
import pondlib
from pondlib.devices import registry

for name in registry.names()[:3]:
    dep = pondlib.deploy(net, device=name, data=data, epochs=HW_EPOCHS)
    checked = ", ".join(f"{c.variant}: {len(c.error.violations) if c.error else 0} violation(s)" for c in dep.checks)
    print(
        f"{dep.name:16s} float {dep.float_acc:.1%}  device as trained {dep.as_trained_acc:.1%}  "
        f"device-aware {dep.device_acc:.1%}  spikes equal {min(dep.spikes_equal.values()):.0%}"
        + (f"  (checked {checked})" if checked else "")
    )
    assert dep.device_acc == dep.aware_float_acc  # the twin is the chip, in float
    assert min(dep.spikes_equal.values()) == 1.0
