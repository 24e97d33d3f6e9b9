"""float32 C of tiny layers (issue 33, SNN-MLIR's single LIF): the lean forms compute what the others compute.

* **Small-layer forms against the float simulator**: the dense ``Linear`` of one output, the one-value
  temporaries kept as locals of the step, the reset written per spike value, the all-zero bias left out; on
  networks of 1, 2, 3, 15, 16 and 17 neurons and inputs, with and without bias and recurrence, every spike
  equals pondlib's and every membrane and current lies within the parity bound (``check_parity``), and the
  one-output dense ``Linear`` equals the dense loop written out in numpy float32, bit for bit.
* **record=False** (the firmware form) gives the very outputs, membranes and currents of the default
  program, bit for bit, with fewer state buffers.
* **The single LIF's memory** is its state: one float32 membrane in RAM (no spike byte, no scratch arena),
  the image's static RAM that membrane plus one step's input and output, no ``memset`` linked.
* **Bad options** (``record``, ``compact_arena``) raise ``CodegenError`` naming the option.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.codegen import compile_host, generate, run_host
from pondlib.codegen.float32 import EVENT_MIN_OUT, LOCAL_MAX, buffer_name, emit
from pondlib.cprogram.program import Buffer, build_program
from pondlib.errors import CodegenError
from pondlib.nn import neurons
from tests.codegen.test_float32 import NIR, _spk, check_parity
from tests.codegen.test_float32_memory import _bits_equal, _cycle, _dense_linear, _inputs
from tests.strategies import assert_pond_error

SIZES = (1, 2, 3, 15, 16, 17)
#: The output neuron's reset and leak by size: every form of the reset (to 0 or to another value, with and
#: without leak: c_mem 0 or not).
RESETS = {
    1: dict(reset="zero"),
    2: dict(reset="v_reset"),
    3: dict(reset="v_reset", v_reset=-0.05),
    15: dict(reset="v_reset", v_reset=-0.05, v_leak=0.1),
    16: dict(reset="v_reset", v_leak=0.1),
    17: dict(reset="subtract", v_leak=0.1),
}


def _net(n: int, seed: int):
    """``n`` inputs -> ``n`` LIF neurons (bias and recurrence on alternate sizes) -> one output through a
    one-output Linear (the dense form) -> one NIR CubaLIF (a one-value input and spike: locals; each reset form,
    with and without leak)."""
    rng = np.random.default_rng(seed)
    biased, recurrent = n % 2 == 1, n in (2, 3, 16)
    return nn.Sequential(
        nn.Linear(n, n, weight=rng.normal(size=(n, n)) * 0.8 + 0.4, bias=rng.normal(size=n) * 0.1 if biased else None),
        nn.LIF(n, tau_mem=0.02, tau_syn=0.005, threshold=0.3, bias=0.05 if biased else 0.0, has_rec=recurrent,
               w_rec=rng.normal(size=(n, n)) * 0.2 if recurrent else None, max_spikes_per_dt=1 + 2 * biased),
        nn.Linear(n, 1, weight=(np.abs(rng.normal(size=(n, 1))) + 0.5) / n, bias=[0.0]),
        neurons.CubaLIF(1, tau_mem=0.01, tau_syn=0.004, r=2.0, v_threshold=0.2, dt=1e-3, **RESETS[n]),
    )  # fmt: skip


@pytest.mark.parametrize("n", SIZES)
def test_tiny_layers_equal_pondlib_and_the_record_free_program(n, tmp_path):
    net = _net(n, seed=n)
    x = _spk((2, 30, n), 0.5, seed=n) * 2
    s = check_parity(net, x, tmp_path, f"small{n}", name="small")
    assert s["mismatches"] == 0 and s["spikes"] > 0
    full, lean = emit(net, name="small"), emit(net, name="small", record=False)
    y_full, rec_full = run_host(compile_host(full, tmp_path / "full"), full, x, record=True)
    y_lean, rec_lean = run_host(compile_host(lean, tmp_path / "lean"), lean, x, record=True)
    assert _bits_equal(y_lean, y_full) and float(y_full.sum()) > 0
    kept = {st.name for st in lean.io.states}
    assert kept < {st.name for st in full.io.states}
    assert (buffer_name("1_LIF/spikes") in kept) == net.layers[1].has_rec  # read by the next step
    assert buffer_name("3_CubaLIF/spikes") not in kept
    for name in kept:
        assert np.array_equal(rec_lean[name].view(np.uint8), rec_full[name].view(np.uint8)), name
    # the one-output Linear is the dense loop; the one-neuron layer's temporaries are locals, not arena memory
    src = lean.sources["small.c"]
    assert "every input (a small layer: no zero test)" in src
    assert EVENT_MIN_OUT == 2 and LOCAL_MAX == 1
    assert all(b.count > LOCAL_MAX for b in lean.memory.buffers if b.kind == "scratch")


@pytest.mark.parametrize("case", ["braille", 0, 1])
def test_record_free_graphs_keep_the_spikes_a_cut_edge_reads(case, tmp_path):
    """In a cycle, record=False keeps a neuron's spikes as a state where a cut edge reads them in place (the
    braille hidden layer, ``n`` of the cycles), copies them into ``<node>/prev`` where the reader runs after the
    source (``m``), and the outputs and every kept state equal the default program's bit for bit."""
    if case == "braille":
        from pondlib.interop.nir import load_nir

        net = load_nir(NIR / "braille" / "braille_noDelay_bias_zero.nir", dt=None).module
        x, kept_spikes = _spk((2, 25, 12), 0.3, seed=14), {"lif1.lif"}
    else:
        net, _ = _cycle(case)
        x, kept_spikes = _spk((2, 25, 5), 0.5, seed=15) * 2, {"n"}
    full, lean = emit(net, name="g"), emit(net, name="g", record=False)
    spikes = {s.name for s in lean.io.states if s.name.endswith("__spikes")}
    assert spikes == {buffer_name(f"{a}/spikes") for a in kept_spikes}
    assert {s.name for s in lean.io.states if s.name.endswith("__prev")} == {
        s.name for s in full.io.states if s.name.endswith("__prev")
    }
    y_full, rec_full = run_host(compile_host(full, tmp_path / "full"), full, x, record=True)
    y_lean, rec_lean = run_host(compile_host(lean, tmp_path / "lean"), lean, x, record=True)
    assert _bits_equal(y_lean, y_full) and float(np.abs(y_full).sum()) > 0
    for s in lean.io.states:
        assert np.array_equal(rec_lean[s.name].view(np.uint8), rec_full[s.name].view(np.uint8)), s.name
    dropped = case != 1  # the output neuron's spikes (braille), m's (cycle 0); cycle 1 has no other neuron
    assert (lean.memory.state_bytes < full.memory.state_bytes) == dropped


@pytest.mark.parametrize("n_in", SIZES)
def test_one_output_linear_is_the_dense_loop_bit_for_bit(n_in, tmp_path):
    rng = np.random.default_rng(20 + n_in)
    w = rng.normal(size=(n_in, 1)).astype(np.float32)
    w[rng.random(n_in) < 0.2] = -0.0  # zero weights: 0 x, -0 x and x 0 terms
    b = (None, np.zeros(1, np.float32), rng.normal(size=1).astype(np.float32))[SIZES.index(n_in) % 3]
    lin = nn.Linear(n_in, 1, weight=w, bias=b)  # no bias, an all-zero one (left out) and another, by size
    x = _inputs((5, n_in), seed=n_in)
    prog = emit(lin, name="lin")
    y, _ = run_host(compile_host(prog, tmp_path / "lin"), prog, x[None])
    assert _bits_equal(y[0], _dense_linear(x, w, b))
    assert ("+ 0x" in prog.sources["lin.c"] or "+ -0x" in prog.sources["lin.c"]) == bool(b is not None and b.any())


def _neuron_oracle(m, x):
    """The NIR neuron step in the operation order of pondlib's ``neuron_step`` (``v = (a V + g d) + c``, the
    reset ``v - z thr``, ``v (1 - z)`` or ``v (1 - z) + z v_reset``) in numpy float32 scalars, each operation
    rounded once: the C before its rewrites. x: (T, N); returns (spikes, vmem, isyn) (T, N)."""
    p = m.parameters()
    f = {k: None if getattr(p, k) is None else np.asarray(getattr(p, k), np.float32).reshape(-1)
         for k in ("a_syn", "g_syn", "a_mem", "g_mem", "c_mem", "threshold", "v_reset")}  # fmt: skip
    T, n = x.shape
    out = np.zeros((3, T, n), np.float32)
    one = np.float32(1.0)
    for j in range(n):
        i_syn = v_mem = np.float32(0.0)
        for t in range(T):
            d = x[t, j]
            if f["a_syn"] is not None:
                i_syn = f["a_syn"][j] * i_syn + f["g_syn"][j] * d
                d = i_syn
            v = (f["a_mem"][j] * v_mem + f["g_mem"][j] * d) + f["c_mem"][j]
            z = np.float32(v > f["threshold"][j])
            if p.reset == "subtract":
                v_mem = v - z * f["threshold"][j]
            elif p.reset == "zero":
                v_mem = v * (one - z)
            else:
                v_mem = v * (one - z) + z * f["v_reset"][j]
            out[:, t, j] = z, v_mem, i_syn
    return out


@pytest.mark.parametrize("case", range(6))
def test_neuron_rewrites_equal_the_original_operations_bit_for_bit(case, tmp_path):
    """The reset written per spike value, ``p + (q + 0)`` for ``(p + q) + 0`` and the kept ``v`` where c_mem is 0:
    every recorded value equal, bit for bit, to the formulas as written before, on inputs with -0, 0, large
    values (membranes that overflow to -inf and +inf, v 0 = NaN) and -0 products (a negative v reset to v 0)."""
    n = 3
    kind = [dict(reset="v_reset"), dict(reset="v_reset", v_reset=[-0.05, 0.0, 0.3]),
            dict(reset="zero", v_threshold=[-0.2, 0.0, 0.2]),
            dict(reset="subtract", v_threshold=[0.2, -0.1, 0.0]), dict(reset="v_reset", v_leak=[0.0, -0.0, 0.1]),
            dict(reset="v_reset", v_threshold=[-0.2, 0.0, 0.2])][case]  # fmt: skip
    kind = {"v_threshold": 0.2, **kind}
    r = [2.0, 2.0, 20.0]  # the third neuron's g x overflows to +inf: a firing v = inf, v 0 = NaN
    m = (neurons.CubaLIF(n, tau_mem=0.01, tau_syn=0.004, r=r, dt=1e-3, **kind) if case % 2
         else neurons.NIRLIF(n, tau=0.01, r=r, v_leak=kind.pop("v_leak", 0.0), dt=1e-3, **kind))  # fmt: skip
    rng = np.random.default_rng(40 + case)
    x = rng.normal(size=(60, n)).astype(np.float32) * 3
    x[rng.random(x.shape) < 0.3] = -0.0
    x[rng.random(x.shape) < 0.1] = 0.0
    x[:30:2, 0], x[1:30:2, 0] = -0.1, -0.0  # v in (thr, 0) reset to v 0 = -0, then a -0 drive: v = (-0 + -0) + 0
    x[30:, 0] = np.float32(-3e38)  # the membrane overflows to -inf
    x[20:23, 2] = np.float32(3e38)
    prog = emit(m, name="nrn", record=True)
    _, rec = run_host(compile_host(prog, tmp_path / "c"), prog, x[None], record=True)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = _neuron_oracle(m, x)
    names = {s.name for s in prog.io.states}  # a network of one module: the keys have no prefix
    assert _bits_equal(rec[buffer_name("vmem_reset")][0], ref[1])
    assert np.array_equal(rec[buffer_name("spikes")][0], ref[0].astype(np.uint8))
    if case % 2:
        assert _bits_equal(rec[buffer_name("isyn")][0], ref[2]) and buffer_name("isyn") in names
    assert not np.isfinite(ref[1]).all() and (ref[0] > 0).any()


def _norse():
    from pondlib.interop.nir import load_nir

    return load_nir(NIR / "lif" / "lif_norse.nir", dt=1e-4).module


def test_single_lif_memory_is_its_membrane(tmp_path):
    net = _norse()
    lean, full = emit(net, name="lif", record=False), emit(net, name="lif")
    assert [(s.name, s.ctype, s.count) for s in lean.io.states] == [(buffer_name("1_NIRLIF/vmem_reset"), "float", 1)]
    assert lean.memory.ram_bytes == lean.memory.state_bytes == 4 and lean.memory.scratch_bytes == 0
    assert full.memory.ram_bytes == full.memory.state_bytes == 4 + 1  # the recorded spike byte
    assert "scratch" not in lean.sources["lif.h"].split("lif_arena_t;")[0].split("typedef struct {")[-1]
    x = _spk((1, 200, 1), 0.3, seed=5)
    y_lean, _ = run_host(compile_host(lean, tmp_path / "lean"), lean, x)
    y_ref = np.asarray(net(x)[0])
    assert np.array_equal(y_lean, y_ref) and float(y_ref.sum()) > 0


def _symbols(elf) -> set[str]:
    from elftools.elf.elffile import ELFFile

    with open(elf, "rb") as f:
        return {sym.name for sym in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}


def test_single_lif_cortex_m4_image_holds_its_state_and_io_only(tmp_path):
    """Static RAM = the membrane + one step's input and output (4 B each); no memset linked; the flash bound
    computed from the program: the state table (16 B a row) and at most 200 B of code with the driver."""
    pytest.importorskip("unicorn")
    pytest.importorskip("ziglang")
    from pondlib.codegen.cross import build_cross, run_cross

    net = _norse()
    prog = emit(net, name="lif", record=False)
    gc = ("-ffunction-sections", "-fdata-sections", "-Wl,--gc-sections")
    build = build_cross(prog, "cortex-m4", tmp_path / "m4", extra_flags=gc)
    sec = {name: size for name, (_, size) in build.sections.items()}
    assert sec.get(".data", 0) + sec[".bss"] == prog.memory.ram_bytes + 4 * (prog.io.n_in + prog.io.n_out) == 12
    assert sec[".rodata"] <= 16 * len(prog.io.states) + 4 + prog.memory.flash_bytes
    assert sec[".text"] <= 200
    assert "memset" not in _symbols(build.elf)
    x = _spk((1, 20, 1), 0.5, seed=6)
    y_m4, rec, ips = run_cross(build, x, record=True)
    y_host, rec_host = run_host(compile_host(prog, tmp_path / "host"), prog, x, record=True)
    assert np.array_equal(y_m4, y_host) and 0 < ips < 40
    name = buffer_name("1_NIRLIF/vmem_reset")
    assert np.array_equal(rec[name].view(np.uint32), rec_host[name].view(np.uint32))


@pytest.mark.parametrize("init", [0.0, 0.5])
def test_compact_arena_of_state_only_resets_every_state(init, tmp_path):
    """build_program(compact_arena=True) without scratch: no scratch union, and the reset of a state that starts
    at 0 (a byte loop) or elsewhere (its fill) still runs: every sample starts from the same state."""
    prog = build_program("acc", "float32", constants=[], buffers=[Buffer("v", "float", 2, init=init)],
                         step_body="for (int i = 0; i < 2; ++i) { v[i] = v[i] + x[i]; y[i] = v[i]; }", n_in=2,
                         in_ctype="float", n_out=2, out_ctype="float", compact_arena=True)  # fmt: skip
    assert prog.memory.ram_bytes == 8 and "#define ACC_SCRATCH_BYTES 0" in prog.sources["acc.h"]
    assert "memset" not in prog.sources["acc.c"]  # a byte loop (init 0) or the fill loop (init 0.5)
    y, _ = run_host(compile_host(prog, tmp_path / "acc"), prog, np.ones((2, 3, 2), np.float32))
    assert np.array_equal(y, np.broadcast_to(np.float32(init) + np.arange(1, 4, dtype=np.float32)[:, None], y.shape))


_NOT_BOOL = st.one_of(
    st.none(), st.integers(), st.floats(allow_nan=True), st.text(max_size=5), st.lists(st.booleans(), max_size=2)
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_NOT_BOOL)
def test_bad_record_option_is_refused(value):
    net = nn.Sequential(nn.Linear(2, 1, weight=[[1.0], [2.0]]), nn.LIF(1))
    err = assert_pond_error(emit, net, record=value, match="record", error=CodegenError)
    assert "True or False" in str(err)
    assert_pond_error(generate, net, "float32", record=value, match="record", error=CodegenError)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_NOT_BOOL)
def test_bad_compact_arena_is_refused(value):
    kwargs = dict(constants=[], buffers=[Buffer("v", "float", 1)], step_body="y[0] = x[0];", n_in=1,
                  in_ctype="float", n_out=1, out_ctype="float")  # fmt: skip
    assert_pond_error(build_program, "acc", "float32", compact_arena=value, match="compact_arena",
                      error=CodegenError, **kwargs)  # fmt: skip


def test_unknown_option_names_the_known_one():
    net = nn.Sequential(nn.Linear(2, 1, weight=[[1.0], [2.0]]), nn.LIF(1))
    err = assert_pond_error(emit, net, records=False, match="option", error=CodegenError)
    assert "record" in str(err) and "records" in str(err)
