"""XyloSim's C kernel (``pondlib/devices/xylo/csrc/xylo_sim.c``) against its numba kernel, bit for bit.

Hypothesis draws legal configurations (sizes across the 8-neuron flag words, k = 1 or 2, weight densities
from empty to dense, full int8 weights, shifts that make ``w << s`` wrap, dashes 0..15, thresholds from
negative through 0 to 32767, biases, alias chains, recurrent fan-out up to the limit) and inputs (no
events at all, sparse, dense, counts far above the 15-event clip), unbatched or batched with B not a
multiple of any tile size, record on or off, one run or a run continued from its state: every output,
record and state must be equal. Also: the C path never imports numba and is the default where a
compiler exists; results do not depend on the number of OpenMP threads; the uint32 index path; the
fallback to numba; a forked child runs batches. The xylosim parity tests (``test_parity_xylosim.py``,
``test_sim_fast_paths.py``) run on the default engine, the C kernel.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pondlib.devices.xylo import sim as sim_module
from pondlib.devices.xylo.config import XyloConfig, validate_config
from pondlib.devices.xylo.sim import RECORD_KEYS, STATE_KEYS, XyloSim
from tests.devices.xylo.xylosim_oracle import random_config, random_input

# One worker compiles (or loads) the numba kernel once for every test here.
pytestmark = pytest.mark.xdist_group("xylo_numba")

ROOT = Path(__file__).resolve().parents[3]

if sim_module._c_library() is None:  # the C kernel is what this file checks
    pytest.fail(f"the C kernel did not build: {sim_module.native.unavailable_reason('pond_xylo_sim')}")


def pair(config: XyloConfig) -> tuple[XyloSim, XyloSim]:
    """Two simulators of ``config``: one on the C kernel, one on the numba kernel."""
    c, nb = XyloSim.from_config(config), XyloSim.from_config(config)
    c._engine, nb._engine = "c", "numba"
    return c, nb


def assert_same(a, b, label: str) -> None:
    """(output, state, record) of two runs equal, dtype and shape included."""
    (out_a, st_a, rec_a), (out_b, st_b, rec_b) = a, b
    assert out_a.dtype == out_b.dtype and out_a.shape == out_b.shape, label
    np.testing.assert_array_equal(out_a, out_b, err_msg=f"{label}: output")
    for key in STATE_KEYS:
        np.testing.assert_array_equal(st_a[key], st_b[key], err_msg=f"{label}: state {key}")
    assert rec_a.keys() == rec_b.keys(), label
    for key in rec_a:
        assert rec_a[key].shape == rec_b[key].shape, f"{label}: record {key}"
        np.testing.assert_array_equal(rec_a[key], rec_b[key], err_msg=f"{label}: record {key}")


# ------------------------------------------------------------------------------------------------
# Legal configurations and inputs (hypothesis)
# ------------------------------------------------------------------------------------------------
@st.composite
def configs(draw) -> XyloConfig:
    n_in = draw(st.integers(1, 16))
    n_hid = draw(st.one_of(st.integers(1, 40), st.sampled_from([63, 64, 65, 129, 300])))
    n_out = draw(st.integers(1, 8))
    k = draw(st.integers(1, 2))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dens = st.sampled_from([0.0, 0.02, 0.2, 0.6, 1.0])
    cap = draw(st.sampled_from([4, 32, 128]))  # |weight| < cap: small weights keep the plain path

    def weights(shape, density):
        return rng.integers(-cap, cap, size=shape) * (rng.random(shape) < density)

    w_rec = weights((n_hid, n_hid, k), draw(dens))
    for j in range(n_hid):  # the recurrent fan-out limit (64)
        nz = np.argwhere(w_rec[j] != 0)
        drop = nz[rng.permutation(len(nz))[64:]]
        w_rec[j, drop[:, 0], drop[:, 1]] = 0
    thr_lo, thr_hi = draw(st.sampled_from([(1, 200), (100, 32768), (-50, 400), (-32768, 32768)]))
    bias_enable = draw(st.booleans())
    scale = draw(st.sampled_from([10, 1000, 32768]))
    alias_p = draw(st.sampled_from([0.0, 0.3, 0.9]))
    aliases = np.array([rng.integers(i + 1, n_hid) if rng.random() < alias_p else -1 for i in range(n_hid - 1)] + [-1])
    dashes = lambda n: rng.choice([0, 1, 2, 4, 7, 15], size=n) if rng.random() < 0.5 else rng.integers(0, 16, n)  # noqa: E731
    bias = lambda n: rng.integers(-scale, scale, n) if bias_enable else np.zeros(n, np.int64)  # noqa: E731
    config = XyloConfig(
        weights_in=weights((n_in, n_hid, k), draw(dens)),
        weights_rec=w_rec,
        weights_out=weights((n_hid, n_out), draw(dens)),
        dash_mem=dashes(n_hid),
        dash_syn=dashes(n_hid),
        dash_syn_2=dashes(n_hid) if k == 2 else np.zeros(n_hid, np.int64),
        dash_mem_out=dashes(n_out),
        dash_syn_out=dashes(n_out),
        threshold=rng.integers(thr_lo, thr_hi, n_hid),
        bias=bias(n_hid),
        threshold_out=rng.integers(thr_lo, thr_hi, n_out),
        bias_out=bias(n_out),
        aliases=aliases,
        weight_shift_in=draw(st.integers(0, 15)),
        weight_shift_rec=draw(st.integers(0, 15)),
        weight_shift_out=draw(st.integers(0, 15)),
        bias_enable=bias_enable,
    )
    assert validate_config(config) == []
    return config


@st.composite
def inputs(draw, n_in: int) -> np.ndarray:
    batch = draw(st.sampled_from([None, 1, 3, 5, 7, 9, 13]))
    steps = draw(st.integers(0, 50))
    density = draw(st.sampled_from([0.0, 0.01, 0.1, 0.5, 1.0]))
    top = draw(st.sampled_from([1, 3, 15, 16, 255, 10**6]))  # above 15: the chip's counter saturates
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = (steps, n_in) if batch is None else (batch, steps, n_in)
    return rng.integers(1, top + 1, size=shape) * (rng.random(shape) < density)


@st.composite
def states(draw, config: XyloConfig, lead: tuple[int, ...]) -> dict[str, np.ndarray]:
    """A starting state: registers anywhere in int16, or next to its rails (where the accumulation's
    saturation bound decides), spike counts 0..31."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    low = draw(st.sampled_from([None, 30000, 32600]))  # None: anywhere; else |register| >= low

    def reg(n):
        if low is None:
            return rng.integers(-32768, 32768, lead + (n,))
        return rng.choice([-1, 1], lead + (n,)) * rng.integers(low, 32768, lead + (n,))

    n_hid, n_out = config.n_hidden, config.n_output
    spikes = rng.integers(0, 32, lead + (n_hid,)) * (rng.random(lead + (n_hid,)) < 0.3)
    isyn2 = reg(n_hid) if config.n_synapses == 2 else np.zeros(lead + (n_hid,), np.int64)
    return dict(Vmem=reg(n_hid), Isyn=reg(n_hid), Isyn2=isyn2, Spikes=spikes, Vmem_out=reg(n_out), Isyn_out=reg(n_out))


@settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(config=configs(), data=st.data(), record=st.booleans(), split=st.booleans(), start=st.booleans())
def test_c_kernel_equals_numba_kernel(config, data, record, split, start):
    x = data.draw(inputs(config.n_input))
    state = data.draw(states(config, x.shape[:1] if x.ndim == 3 else ())) if start else None
    c, nb = pair(config)
    parts = (x[..., : x.shape[-2] // 2, :], x[..., x.shape[-2] // 2 :, :]) if split else (x,)
    for i, part in enumerate(parts):
        first = state if i == 0 else None
        res_c = c.evolve(part, record=record, state=first)
        assert_same(res_c, nb.evolve(part, record=record, state=first), f"part {i}")


# ------------------------------------------------------------------------------------------------
# Cases hypothesis reaches only by chance
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def big_case():
    """A benchmark-like N = 1000 network (uint16 target indices up to 2 N) and a batch of 3."""
    rng = np.random.default_rng(3)
    n_hid, n_in, n_out = 1000, 16, 8
    w_rec = np.zeros((n_hid, n_hid, 2), dtype=np.int64)
    for j in range(n_hid):
        post = rng.choice(n_hid, size=50, replace=False)
        w_rec[j, post, rng.integers(0, 2, size=50)] = rng.choice(np.r_[-16:0, 1:16], size=50)
    config = XyloConfig(
        weights_in=rng.integers(-128, 128, (n_in, n_hid, 2)) * (rng.random((n_in, n_hid, 2)) < 0.25),
        weights_rec=w_rec,
        weights_out=rng.integers(-128, 128, (n_hid, n_out)),
        dash_mem=np.full(n_hid, 2),
        dash_syn=np.full(n_hid, 1),
        dash_syn_2=np.full(n_hid, 3),
        dash_mem_out=np.full(n_out, 3),
        dash_syn_out=np.full(n_out, 2),
        threshold=rng.integers(900, 1100, n_hid),
        bias=np.zeros(n_hid, np.int64),
        threshold_out=np.full(n_out, 600),
        bias_out=np.zeros(n_out, np.int64),
        aliases=np.where(rng.random(n_hid) < 0.1, np.minimum(np.arange(n_hid) + 1, n_hid - 1), -1)[:-1].tolist() + [-1],
        weight_shift_in=2,
    )
    assert validate_config(config) == []
    x = rng.poisson(0.05, size=(3, 200, n_in))
    return config, x


def test_thousand_neurons_batched_equal(big_case):
    config, x = big_case
    c, nb = pair(config)
    res = c.evolve(x, record=True)
    assert_same(res, nb.evolve(x, record=True), "N=1000")
    assert 0.01 < (res[2]["Spikes"] > 0).mean() < 0.3  # a spiking network, not silent or saturated


def test_wide_target_indices_equal_narrow(big_case):
    """The uint32 index path (more than 65536 targets, not reachable with the chip's limits) gives the
    same integers as the uint16 path."""
    config, x = big_case
    narrow, wide = XyloSim.from_config(config), XyloSim.from_config(config)
    w = list(wide._weights)
    for i in (1, 5, 9):  # idx of the input, recurrent and readout lists
        assert w[i].dtype == np.uint16
        w[i] = w[i].astype(np.uint32)
    wide._weights = tuple(w)
    wide._net = wide._c_net()
    assert wide._net.proj_rec.wide == 1 and narrow._net.proj_rec.wide == 0
    narrow._engine = wide._engine = "c"
    assert_same(narrow.evolve(x, record=True), wide.evolve(x, record=True), "uint32 indices")


def test_xylosim_corners_equal():
    """The random configurations of the xylosim parity tests (saturation, wrap, 31-spike caps)."""
    rng = np.random.default_rng(21)
    for i in range(20):
        config = random_config(rng, max_hidden=60)
        x = random_input(rng, 40, config.n_input, batch=int(rng.integers(1, 6)))
        c, nb = pair(config)
        assert_same(c.evolve(x, record=True), nb.evolve(x, record=True), f"config {i}")


def test_batch_of_one_continues_an_unbatched_state():
    """An unbatched state (current, or passed in) carried into a batch of one sample: a writable copy per
    sample on both kernels (this used to hand numba a read-only view)."""
    rng = np.random.default_rng(8)
    config = random_config(rng, max_hidden=20)
    x = random_input(rng, 30, config.n_input)
    for engine in ("c", "numba"):
        sim = XyloSim.from_config(config)
        sim._engine = engine
        sim.evolve(x[:15])
        before = sim.state
        out, state, _ = sim.evolve(x[None, 15:])
        ref = XyloSim.from_config(config)
        ref._engine = engine
        ref_out, ref_state, _ = ref.evolve(x)
        np.testing.assert_array_equal(out[0], ref_out[15:])
        for key in STATE_KEYS:
            np.testing.assert_array_equal(state[key][0], ref_state[key])
        fresh = XyloSim.from_config(config)
        fresh._engine = engine
        out2, _, _ = fresh.evolve(x[None, 15:], state=before)
        np.testing.assert_array_equal(out2, out)


def test_empty_time_axis_keeps_the_state():
    rng = np.random.default_rng(9)
    config = random_config(rng, max_hidden=20)
    sim = XyloSim.from_config(config)
    assert sim.engine == "c"
    sim.evolve(random_input(rng, 10, config.n_input, batch=2))
    before = sim.state
    out, state, rec = sim.evolve(np.zeros((2, 0, config.n_input), np.int64), record=True)
    assert out.shape == (2, 0, config.n_output) and rec["Vmem"].shape == (2, 0, config.n_hidden)
    for key in STATE_KEYS:
        np.testing.assert_array_equal(state[key], before[key])


def test_record_off_records_nothing_and_changes_nothing():
    rng = np.random.default_rng(10)
    config = random_config(rng, max_hidden=50)
    x = random_input(rng, 40, config.n_input, batch=3)
    on, off = XyloSim.from_config(config), XyloSim.from_config(config)
    out_on, st_on, rec = on.evolve(x, record=True)
    out_off, st_off, rec_off = off.evolve(x)
    assert rec_off == {} and set(rec) == set(RECORD_KEYS)
    assert_same((out_on, st_on, {}), (out_off, st_off, {}), "record off")


def test_fallback_to_numba_where_no_compiler(monkeypatch):
    """Where the C kernel cannot be built, a simulator runs on numba with the same results."""
    rng = np.random.default_rng(4)
    config = random_config(rng, max_hidden=30)
    x = random_input(rng, 30, config.n_input, batch=2)
    ref = XyloSim.from_config(config).evolve(x, record=True)
    monkeypatch.setitem(sim_module._engines, "c", None)
    sim = XyloSim.from_config(config)
    assert sim.engine == "numba"
    assert_same(sim.evolve(x, record=True), ref, "fallback")


# ------------------------------------------------------------------------------------------------
# A fresh process: no numba on the C path, results independent of the thread count
# ------------------------------------------------------------------------------------------------
_CHILD = """
import sys
import numpy as np
from pondlib.devices.xylo.sim import XyloSim
from tests.devices.xylo.xylosim_oracle import random_config, random_input
rng = np.random.default_rng(31)
config = random_config(rng, max_hidden=80)
x = random_input(rng, 60, config.n_input, batch=11)
sim = XyloSim.from_config(config)
out, state, rec = sim.evolve(x, record=True)
np.savez(sys.argv[1], out=out, **rec, **{"state_" + k: v for k, v in state.items()})
print(sim.engine, "numba" in sys.modules)
"""


@pytest.mark.parametrize(
    ("threads", "compiler", "expect"),
    [("1", None, ["c", "False"]), ("3", None, ["c", "False"]), ("2", "none", ["numba", "True"])],
)
def test_fresh_process_engine_and_any_thread_count(tmp_path, threads, compiler, expect):
    """A fresh process runs the C kernel and never imports numba (with PONDLIB_CC=none: the numba kernel);
    one OpenMP thread or three, the integers are the numba kernel's of this process."""
    env = {**os.environ, "OMP_NUM_THREADS": threads, "PYTHONPATH": str(ROOT)}
    if compiler is not None:
        env["PONDLIB_CC"] = compiler
    path = tmp_path / "res.npz"
    res = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split() == expect  # the engine, and whether numba was imported
    rng = np.random.default_rng(31)
    config = random_config(rng, max_hidden=80)
    x = random_input(rng, 60, config.n_input, batch=11)
    sim = XyloSim.from_config(config)
    sim._engine = "numba"
    out, state, rec = sim.evolve(x, record=True)
    got = np.load(path)
    ref = {"out": out, **rec, **{"state_" + k: v for k, v in state.items()}}
    assert set(got.files) == set(ref)
    for key, value in ref.items():
        np.testing.assert_array_equal(got[key], value, err_msg=key)


_FORK = """
import os
import warnings
import numpy as np
from pondlib.devices.xylo.sim import XyloSim
from tests.devices.xylo.xylosim_oracle import random_config, random_input
rng = np.random.default_rng(32)
config = random_config(rng, max_hidden=60)
x = random_input(rng, 40, config.n_input, batch=9)
ref = XyloSim.from_config(config).evolve(x, record=True)  # the parent's OpenMP threads are running
warnings.simplefilter("ignore")  # JAX warns that fork() and its threads do not mix
pid = os.fork()
if pid == 0:
    out, state, rec = XyloSim.from_config(config).evolve(x, record=True)
    same = np.array_equal(out, ref[0]) and all(np.array_equal(rec[k], ref[2][k]) for k in rec)
    os._exit(0 if same else 3)
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def test_a_forked_child_runs_batches_serially():
    """GNU OpenMP's threads do not survive fork(): a child of a process that ran a batch runs its own batch
    (same integers) instead of waiting forever for the parent's threads."""
    env = {**os.environ, "OMP_NUM_THREADS": "2", "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-c", _FORK], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split() == ["0"]
