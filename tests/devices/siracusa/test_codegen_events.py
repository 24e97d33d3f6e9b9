"""Siracusa C, event-driven and sparse QGemm layouts: every layout equals SiracusaSim bit for bit.

``layout="dense"`` (every input visited), ``"events"`` (the non-zero inputs gathered once), ``"sparse"``
(compressed rows) and ``"auto"`` run the random configurations of ``test_codegen`` (wrapping and exact
accumulators, 0/1 spikes from a LIF into a GEMM) and hand-built spiking chains with sparse and dense weights,
on inputs with all-zero steps, full-density steps and mixed ones; outputs and every record are compared exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.codegen import compile_host, run_host
from pondlib.devices.siracusa import QLIF, QGemm, RequantShift, SiracusaConfig, SiracusaSim
from pondlib.devices.siracusa.codegen import LAYOUTS, emit, record_names
from pondlib.errors import CodegenError
from tests.devices.siracusa.test_codegen import random_config, random_input

LAYOUT_RUNS = ("events", "sparse")  # "dense" is the kernel of test_codegen; "auto" picks one of these


def check_layouts(cfg: SiracusaConfig, x: np.ndarray, tmp_path, layouts=LAYOUT_RUNS) -> dict:
    """Each layout's recording program against the simulator on ``x``: outputs and records equal."""
    out, _, want = SiracusaSim(cfg, validate=False).evolve(x, record=True)
    names = record_names(cfg, record=True)
    for layout in layouts:
        prog = emit(cfg, name="ev", validate=False, record=True, layout=layout)
        y, rec = run_host(compile_host(prog, tmp_path / layout), prog, x, record=True)
        assert np.array_equal(y.astype(np.int64), out), layout
        for key, cname in names.items():
            assert np.array_equal(rec[cname].astype(np.int64), want[key]), (layout, key)
    return want


def _spiking_chain(rng: np.random.Generator, density: float, n_in: int = 24, n_hid: int = 32) -> SiracusaConfig:
    """Input -> GEMM (weights of ``density``) -> LIF -> GEMM on spikes (same density) -> LIF."""

    def weight(k: int, o: int) -> np.ndarray:
        return rng.integers(-128, 128, (k, o)) * (rng.random((k, o)) < density)

    def lif(name: str, n: int) -> QLIF:
        return QLIF(name, beta_mul=rng.integers(0, 200, n), in_mul=rng.integers(1, 64, n), add=0, shift=8,
                    threshold=rng.integers(20, 200, n), state_bits=16)  # fmt: skip

    layers = (
        QGemm(
            "fc0",
            weight=weight(n_in, n_hid),
            bias=rng.integers(-50, 50, n_hid),
            requant=RequantShift(mul=1, add=0, div=4, out_bits=8, signed=True),
        ),
        lif("lif0", n_hid),
        QGemm("fc1", weight=weight(n_hid, 10)),
        lif("lif1", 10),
    )
    return SiracusaConfig(layers=layers, n_input=n_in)


def _raster(rng: np.random.Generator, cfg: SiracusaConfig, T: int) -> np.ndarray:
    """(2, T, N_in): all-zero steps, full-density steps and random sparse steps, with the range's extremes."""
    lo, hi = cfg.input_range
    x = rng.integers(lo, hi, (2, T, cfg.n_input), endpoint=True)
    x *= rng.random(x.shape) < 0.1
    x[:, : T // 4] = 0  # zero-input steps
    x[:, T // 4 : T // 4 + 3] = rng.choice([lo, hi, 1], size=(2, 3, cfg.n_input))  # full density
    return x


def test_random_configurations_every_layout(tmp_path):
    for seed in range(6):
        cfg = random_config(seed)
        rng = np.random.default_rng(seed)
        x = random_input(rng, cfg, 2, 8) * (rng.random((2, 8, cfg.n_input)) < 0.5)
        x[:, :2] = 0
        check_layouts(cfg, x, tmp_path / str(seed))


@pytest.mark.parametrize("density", [0.05, 0.3, 1.0])
def test_spiking_chain_sparse_and_dense_weights(density, tmp_path):
    rng = np.random.default_rng(int(density * 100))
    cfg = _spiking_chain(rng, density)
    want = check_layouts(cfg, _raster(rng, cfg, 30), tmp_path, ("dense", *LAYOUT_RUNS) if density == 1 else LAYOUT_RUNS)
    assert want["lif0/spikes"].any() and not want["lif0/spikes"].all()  # the spike inputs of fc1 vary
    auto = emit(cfg, layout="auto")
    consts = {c.name for c in auto.memory.buffers if c.region == "flash"}
    if density < 0.4:  # compressed rows take less flash: chosen, with narrow index types
        assert {"k0_cnt", "k0_post", "k0_wv", "k2_cnt"} <= consts and "k0_w" not in consts
        assert auto.memory.flash_bytes < emit(cfg, layout="dense").memory.flash_bytes
        kinds = {b.name: b.ctype for b in auto.memory.buffers}
        assert kinds["k0_post"] == "uint8_t" and kinds["k0_cnt"] == "uint8_t" and kinds["a0"] == "int32_t"
    else:  # dense rows, event-driven: the same flash as the dense loops
        assert {"k0_w", "k2_w"} <= consts and "k0_cnt" not in consts
        assert auto.memory.flash_bytes == emit(cfg, layout="dense").memory.flash_bytes
        assert any("fc1: events" in n for n in auto.notes)


def test_event_lists_and_spike_path_in_the_c():
    cfg = _spiking_chain(np.random.default_rng(3), 1.0)
    events = emit(cfg, layout="events")
    text = events.sources[f"{events.name}.c"]
    assert "e0[ne++]" in text and "(int32_t)x[e0[ei]] * wo[e0[ei]]" in text  # the input's events: values read
    assert "e2[ne++]" in text and "acc += wo[e2[ei]]" in text  # fc1 reads 0/1 spikes: no multiplication
    dense = emit(cfg, layout="dense")
    assert "ne++" not in dense.sources[f"{dense.name}.c"]


def test_all_zero_and_unsigned_wide_inputs(tmp_path):
    """An all-zero weight (one unread padding entry), uint32 inputs with the wrapping accumulator; a DNN (no LIF)
    keeps dense loops under auto."""
    layers = (QGemm("z", weight=np.zeros((5, 3), np.int64)), QGemm("w", weight=[[127, -128, 0]] * 3))
    cfg = SiracusaConfig(layers=layers, n_input=5, input_bits=32, input_signed=False)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2**32, (1, 6, 5)) * (rng.random((1, 6, 5)) < 0.5)
    check_layouts(cfg, x, tmp_path)
    sparse = emit(cfg, validate=False, layout="sparse")  # z: 5 counts and one padding entry; w: 3 + 6 + 6
    assert sparse.memory.flash_bytes == (5 + 1 + 1) + (3 + 6 + 6)
    wide = SiracusaConfig(layers=(QGemm("w", weight=[[127, -128, 0]] * 5),), n_input=5, input_bits=32,
                          input_signed=False)  # fmt: skip
    check_layouts(wide, x, tmp_path / "wide")
    assert any("w: dense" in n for n in emit(wide, validate=False).notes)


@settings(max_examples=40, deadline=None)
@given(
    st.one_of(
        st.none(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=8).filter(lambda s: s not in LAYOUTS),
        st.lists(st.text(), max_size=2),
    )
)
def test_bad_layouts_are_refused(value):
    cfg = SiracusaConfig(n_input=1, layers=(QGemm("fc", weight=[[1]]),))
    with pytest.raises(CodegenError, match="layout"):
        emit(cfg, layout=value)


def test_cluster_chain_event_driven_tiled_and_emulated(tmp_path):
    """The cluster C of a spiking chain gathers each core's events on its stack: equal to the simulator with
    tiled weights on 1 and 4 host threads, and on the emulated 8-core cluster."""
    from pondlib.codegen.cluster import build_cluster, run_cluster
    from pondlib.devices.siracusa.codegen_cluster import emit_chain_cluster

    rng = np.random.default_rng(8)
    cfg = _spiking_chain(rng, 0.5)
    x = _raster(rng, cfg, 16)
    prog = emit_chain_cluster(cfg, name="evc", l1_bytes=600, record=True)
    assert "cl_ev[ne++]" in prog.sources["evc.c"] and "ne = 0;" in prog.sources["evc.c"]
    out, _, want = SiracusaSim(cfg).evolve(x, record=True)
    names = record_names(cfg, record=True)
    for cores in (1, 4):
        exe = compile_host(prog, tmp_path / f"c{cores}", extra_flags=(f"-DPOND_NUM_CORES={cores}",))
        y, rec = run_host(exe, prog, x, record=True)
        assert np.array_equal(y.astype(np.int64), out), cores
        for key, cname in names.items():
            assert np.array_equal(rec[cname].astype(np.int64), want[key]), (cores, key)
    run = run_cluster(build_cluster(prog, tmp_path / "emu", cores=8), x[:1, :6])
    assert np.array_equal(run.y.astype(np.int64), out[:1, :6])
