"""float32 C memory layout and event-driven loops (issue 33): what changed must compute what it computed before.

* **Event-driven loops equal the dense loop**: ``Linear`` and the convolutions now test each input once and
  add the rows of the non-zero ones (the scatter form); every output must still be the dense loop's sum
  ``((0 + x0 w0) + x1 w1) + ...`` over the inputs in ascending order, bit for bit. The oracle is that dense
  loop written out in numpy float32 scalars (each product and sum rounded once, as ``-ffp-contract=off``
  compiles it), on inputs with zeros, negative zeros, spikes and dense values.
* **Layout**: spike counts one byte (two where the cap needs it), an edge cut in a cycle reading its source's
  spike state instead of a copy, a fan-in sum written in place; the programs stay equal to pondlib's float
  model (``check_parity`` of ``test_float32``), and the memory report and the linked Cortex-M4F image stay
  within bounds computed from the network's own buffers.
"""

from __future__ import annotations

import numpy as np
import pytest

from pondlib import nn
from pondlib.codegen import compile_host, run_host
from pondlib.codegen.float32 import buffer_name, emit
from pondlib.nn import layers, neurons
from pondlib.nn.graphnet import GraphNetwork
from tests.codegen.test_float32 import NIR, _spk, check_parity


def _run(prog, x, tmp_path, label):
    y, rec = run_host(compile_host(prog, tmp_path / label), prog, x, record=True)
    return y, rec


def _dense_linear(x, w, b):
    """The dense loop of the float32 Linear, element by element in float32 (x: (T, n_in), w: (n_in, n_out))."""
    x, w = np.asarray(x, np.float32), np.asarray(w, np.float32)
    y = np.zeros((x.shape[0], w.shape[1]), np.float32)
    for t in range(x.shape[0]):
        for j in range(w.shape[1]):
            acc = np.float32(0.0)
            for i in range(w.shape[0]):
                if x[t, i] != 0:
                    acc = np.float32(acc + np.float32(x[t, i] * w[i, j]))
            y[t, j] = acc if b is None else np.float32(acc + np.float32(b[j]))
    return y


def _dense_conv(x, w, b, stride, pad, dil, groups):
    """The dense loop of the float32 convolution (the kernel before issue 33): per output, c, u, v ascending,
    zero inputs and padding skipped, then the bias; x: (T, C, H, W), w: (O, C / groups, kh, kw)."""
    x, w = np.asarray(x, np.float32), np.asarray(w, np.float32)
    T, _, h_in, w_in = x.shape
    c_out, cpg, kh, kw = w.shape
    h_out = (h_in + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    w_out = (w_in + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((T, c_out, h_out, w_out), np.float32)
    opg = c_out // groups
    for t in range(T):
        for o in range(c_out):
            c0 = (o // opg) * cpg
            for i in range(h_out):
                for j in range(w_out):
                    acc = np.float32(0.0)
                    for c in range(cpg):
                        for u in range(kh):
                            r = i * stride[0] + u * dil[0] - pad[0]
                            for v in range(kw):
                                q = j * stride[1] + v * dil[1] - pad[1]
                                if 0 <= r < h_in and 0 <= q < w_in and x[t, c0 + c, r, q] != 0:
                                    acc = np.float32(acc + np.float32(x[t, c0 + c, r, q] * w[o, c, u, v]))
                    y[t, o, i, j] = acc if b is None else np.float32(acc + np.float32(b[o]))
    return y


def _inputs(shape, seed):
    """Spikes, spike counts, dense values with negative zeros, all zeros: the cases a zero test can get wrong."""
    rng = np.random.default_rng(seed)
    dense = rng.normal(size=shape).astype(np.float32)
    dense[rng.random(shape) < 0.3] = -0.0
    return np.concatenate(
        [
            (rng.random(shape) < 0.2).astype(np.float32),
            rng.integers(0, 4, size=shape).astype(np.float32),
            dense,
            np.zeros(shape, np.float32),
        ]
    )


def _bits_equal(a, b):
    a, b = np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32)
    return np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("bias", [True, False])
def test_event_driven_linear_equals_the_dense_loop_bit_for_bit(bias, tmp_path):
    rng = np.random.default_rng(3)
    w = rng.normal(size=(23, 9)).astype(np.float32)
    b = rng.normal(size=9).astype(np.float32) if bias else None
    lin = nn.Linear(23, 9, weight=w, bias=b)
    x = _inputs((6, 23), seed=4)
    y, _ = _run(emit(lin, name="lin"), x[None], tmp_path, f"lin{bias}")
    assert _bits_equal(y[0], _dense_linear(x, w, b))


@pytest.mark.parametrize(
    "stride, pad, dil, groups",
    [((1, 1), (1, 1), (1, 1), 1), ((2, 1), (1, 2), (1, 1), 2), ((1, 2), (0, 2), (2, 1), 1)],
)
def test_event_driven_conv_equals_the_dense_loop_bit_for_bit(stride, pad, dil, groups, tmp_path):
    rng = np.random.default_rng(5)
    w = rng.normal(size=(4, 4 // groups, 3, 3)).astype(np.float32)
    b = rng.normal(size=4).astype(np.float32)
    conv = layers.Conv2d((4, 6, 7), weight=w, bias=b, stride=stride, padding=pad, dilation=dil, groups=groups)
    x = _inputs((3, 4 * 6 * 7), seed=6)
    y, _ = _run(emit(conv, name="conv"), x[None], tmp_path, f"conv{stride}{pad}{dil}{groups}")
    ref = _dense_conv(x.reshape(-1, 4, 6, 7), w, b, stride, pad, dil, groups)
    assert y.shape[-1] == ref[0].size and _bits_equal(y[0], ref.reshape(len(x), -1))


def test_spike_states_are_compact_and_still_equal_pondlib(tmp_path):
    rng = np.random.default_rng(7)
    net = nn.Sequential(
        nn.Linear(10, 12, weight=rng.normal(size=(10, 12))),
        nn.LIF(12, has_rec=True, w_rec=rng.normal(size=(12, 12)) * 0.3, max_spikes_per_dt=1000, threshold=0.3),
        nn.Linear(12, 6, weight=rng.normal(size=(12, 6))),
        neurons.CubaLIF(6, tau_mem=0.02, tau_syn=0.005, r=2.0, v_leak=0.0, v_threshold=0.2, dt=1e-3),
    )
    types = {s.name: s.ctype for s in emit(net, name="compact").io.states}
    assert types[buffer_name("1_LIF/spikes")] == "uint16_t"
    assert types[buffer_name("3_CubaLIF/spikes")] == "uint8_t"
    wide = nn.Sequential(nn.LIF(4, max_spikes_per_dt=31), nn.LIF(4))  # caps 31 (one byte) and 2^16 (float)
    types = {s.name: s.ctype for s in emit(wide, name="wide").io.states}
    assert types[buffer_name("0_LIF/spikes")] == "uint8_t" and types[buffer_name("1_LIF/spikes")] == "float"
    # two-byte spike counts through the recurrent weights (the event gather of a uint16_t state), against pondlib
    s = check_parity(net.layers[1], _spk((3, 25, 12), 0.4, seed=8) * 3, tmp_path, "compact", name="compact")
    assert s["spikes"] > 20 and s["mismatches"] == 0


def _lif(n):
    return neurons.CubaLIF(n, tau_mem=0.02, tau_syn=0.005, r=3.0, v_leak=0.0, v_threshold=0.3, dt=1e-3)


def _cycle(case: int):
    """A cycle and its cut sources that need a ``prev`` copy. (A neuron's spikes fed back through a Linear and
    read before the neuron runs need none: the braille test.)"""
    rng = np.random.default_rng(11)
    a = nn.Linear(5, 8, weight=rng.normal(size=(5, 8)))
    if case == 0:
        # two neurons feeding each other: m runs first and reads n's spikes of the last step from n's state (no
        # copy); n runs after m and must read m's spikes of the last step: a copy
        mods = {"a": a, "n": _lif(8), "m": _lif(8)}
        return GraphNetwork(mods, [("input", "a"), ("a", "n"), ("n", "m"), ("m", "n"), ("n", "output")]), {"m"}
    # a delay in the cycle: its output is scratch (a copy); n's spikes are read by r before n runs (no copy)
    mods = {"a": a, "n": _lif(8), "r": nn.Linear(8, 8, weight=rng.normal(size=(8, 8))),
            "d": layers.Delay(8, delay=[1e-3] * 8, dt=1e-3)}  # fmt: skip
    edges = [("input", "a"), ("a", "n"), ("n", "r"), ("r", "d"), ("d", "n"), ("n", "output")]
    return GraphNetwork(mods, edges), {"d"}


@pytest.mark.parametrize("case", range(2))
def test_a_cut_edge_reads_the_source_state_unless_it_was_overwritten(case, tmp_path):
    net, copied = _cycle(case)
    assert set(net.delayed_nodes) == copied | {"n"}
    prog = emit(net, name="cyc")
    prev = {s.name for s in prog.io.states if s.name.endswith("__prev")}
    assert prev == {buffer_name(f"{a}/prev") for a in copied}
    if case == 0:  # one state read in place and one copied, in one program (the copy path is the one of before)
        s = check_parity(net, _spk((3, 30, 5), 0.5, seed=12) * 2, tmp_path, "cycle", name="cyc")
        assert s["spikes"] > 20 and s["mismatches"] == 0


def test_braille_graph_has_no_prev_copy_and_a_smaller_arena(tmp_path):
    from pondlib.interop.nir import load_nir

    net = load_nir(NIR / "braille" / "braille_noDelay_bias_zero.nir", dt=None).module
    prog = emit(net, name="braille")
    mem = prog.memory
    assert not any(s.name.endswith("__prev") for s in prog.io.states)
    # state: isyn and vmem in float32, spikes one byte, per neuron (38 hidden, 7 out)
    assert mem.state_bytes == (38 + 7) * (4 + 4 + 1)
    # scratch: the two 38-value synaptic inputs at once (their sum in place), 8-byte aligned
    assert mem.scratch_bytes == 2 * 38 * 4
    s = check_parity(net, _spk((2, 40, 12), 0.3, seed=13), tmp_path, "braille", name="braille")
    assert s["spikes"] > 20 and s["mismatches"] == 0


def test_cortex_m4_image_within_the_bound_of_its_buffers(tmp_path):
    """The linked image of a small net: RAM = the arena (state + planned scratch) + the step's input and output
    + at most 16 bytes of alignment, one arena only; flash = the constants + at most 2 KiB of code and tables;
    the emulated steps equal the host's."""
    pytest.importorskip("unicorn")
    pytest.importorskip("ziglang")
    from pondlib.codegen.cross import build_cross, run_cross

    rng = np.random.default_rng(2)
    net = nn.Sequential(
        nn.Linear(12, 24, weight=rng.normal(size=(12, 24))),
        _lif(24),
        nn.Linear(24, 5, weight=rng.normal(size=(24, 5))),
        _lif(5),
    )
    prog = emit(net, name="small")
    mem = prog.memory
    assert mem.state_bytes == 24 * 9 + 5 * 9 and mem.flash_bytes == 4 * (12 * 24 + 24 * 5)
    build = build_cross(prog, "cortex-m4", tmp_path / "m4")
    ram = sum(size for name, (_, size) in build.sections.items() if name in (".data", ".bss"))
    arena = -(-mem.ram_bytes // 8) * 8
    assert arena + 4 * (12 + 5) <= ram <= arena + 4 * (12 + 5) + 16
    assert build.flash_bytes <= mem.flash_bytes + 2048
    x = _spk((1, 6, 12), 0.5, seed=3) * 2
    y_m4, _, ips = run_cross(build, x)
    y_host, _ = run_host(compile_host(prog, tmp_path / "host"), prog, x)
    assert np.array_equal(y_m4, y_host) and ips > 0
