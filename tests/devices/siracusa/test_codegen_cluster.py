"""Siracusa layer chains as cluster C (codegen_cluster): L2 activations, L1 tiles by DMA, 1..8 cores, equal to
SiracusaSim bit for bit (outputs and every recorded state) on the host (pthreads) and on the emulated cluster."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.codegen import compile_host, run_host
from pondlib.devices.siracusa import QLIF, QConv2d, QGemm, RequantShift, SiracusaConfig, SiracusaSim
from pondlib.devices.siracusa.codegen import record_names
from pondlib.devices.siracusa.codegen_cluster import emit_chain_cluster, emit_chain_cluster_report
from pondlib.devices.siracusa.device import SiracusaDevice
from pondlib.errors import CodegenError, ConstraintError
from tests.devices.siracusa.test_codegen import random_config, random_input

SEEDS = range(12)
CORES = (1, 4, 8)
# Host threads spin at barriers: more threads than CPUs and many tiles are slow (ms per barrier), so the
# tightest-L1 programs run on 1 and 2 cores; 4 and 8 cores run the programs of a few tiles per layer.


def tightest_l1(cfg: SiracusaConfig, double: bool) -> int:
    """The smallest l1_bytes the chain accepts (bisection): its largest layer gets tiles of one unit."""
    lo, hi = 8, 1 << 20
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            emit_chain_cluster(cfg, l1_bytes=mid, double_buffer=double, validate=False, record=True)
            hi = mid
        except CodegenError:
            lo = mid + 1
    return lo


def _compile(prog, tmp, cores=CORES):
    return {c: compile_host(prog, tmp / f"c{c}", extra_flags=(f"-DPOND_NUM_CORES={c}",)) for c in cores}


def check(cfg: SiracusaConfig, prog, bins: dict, x: np.ndarray, record: bool = True) -> None:
    """Every build of ``prog`` equals the simulator on ``x``: outputs and, recorded, every record key."""
    out, _, want = SiracusaSim(cfg, validate=False).evolve(x, record=True)
    names = record_names(cfg, record=record)
    for c, exe in bins.items():
        y, rec = run_host(exe, prog, x, record=True)
        assert np.array_equal(y.astype(np.int64), out), c
        for key, cname in names.items():
            assert np.array_equal(rec[cname].astype(np.int64), want[key]), (c, key)


# -- random chains: the tightest L1 (tiles of one unit in the largest layer), double and single buffered ---------
@pytest.fixture(scope="module", params=[True, False], ids=["DB", "SB"])
def random_builds(request, tmp_path_factory):
    double, out = request.param, []
    tmp = tmp_path_factory.mktemp("rand")
    for seed in SEEDS:
        cfg = random_config(seed)
        l1 = tightest_l1(cfg, double)
        prog, rep = emit_chain_cluster_report(
            cfg, name=f"r{seed}", l1_bytes=l1, double_buffer=double, validate=False, record=True
        )
        out.append((seed, cfg, prog, rep, _compile(prog, tmp / f"s{seed}", (1, 2) if double else (1,))))
    return double, out


def test_random_chains_tiled_equal_simulator(random_builds):
    double, builds = random_builds
    kinds, tiled = set(), 0
    for seed, cfg, prog, rep, bins in builds:
        assert rep.l1_arena <= rep.l1_limit and all(r.l1_bytes <= rep.l1_limit for r in rep.rows)
        for r in rep.rows:
            kinds.add(r.kind)
            tiled += r.n_tiles > 1
            assert r.tile * r.n_tiles >= r.units > r.tile * (r.n_tiles - 1)
            assert r.buffering == ("DB" if double and r.n_tiles > 1 and r.kind != "conv" else "SB"), r
        x = random_input(np.random.default_rng(100 + seed), cfg, B=1, T=3)
        check(cfg, prog, bins, x)
    assert kinds == {"gemm", "conv", "requant", "lif"} and tiled >= 10


def test_random_chains_untiled_deployable(tmp_path):
    """The default L1 (one tile per layer), not recording: the activations share the L2 arena."""
    for seed in (1, 5, 9):
        cfg = random_config(seed)
        prog, rep = emit_chain_cluster_report(cfg, name=f"u{seed}", validate=False)
        assert all(r.n_tiles == 1 for r in rep.rows)
        x = random_input(np.random.default_rng(seed), cfg, B=1, T=2)
        check(cfg, prog, _compile(prog, tmp_path / f"u{seed}", (8,)), x, record=False)


# -- the digits MLP: 64 -> 64 -> 32 -> 10 --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def digits():
    from pondlib.devices.siracusa import GemmLayer, ReLU, mapper
    from pondlib.devices.siracusa.sim import quantize_input
    from tests.devices.siracusa.digits_mlp import load_digits_split, train_mlp

    x_tr, y_tr, x_te, _ = load_digits_split()
    params = train_mlp(x_tr, y_tr, steps=60)
    layers = []
    for i, (W, b) in enumerate(params):
        layers.append(GemmLayer(f"fc{i}", W, b))
        if i < len(params) - 1:
            layers.append(ReLU(f"relu{i}"))
    spec = mapper(layers, calibration=x_tr)
    return spec.config, quantize_input(x_te[:20, None, :], spec.config)


@pytest.mark.parametrize("l1, double", [(64000, True), (1200, True), (700, False)])
def test_digits_mlp_equals_simulator(digits, l1, double, tmp_path):
    cfg, x = digits
    prog, rep = emit_chain_cluster_report(cfg, name="digits", l1_bytes=l1, double_buffer=double, record=l1 < 1000)
    assert prog.cores == 8 and rep.l1_arena <= l1
    tiles = [r.n_tiles for r in rep.rows]
    if l1 == 64000:
        assert tiles == [1, 1, 1]
    else:  # weight tiles of 16 output channels (the output-chunk rule) where 16 fit
        assert tiles[0] >= 2 and all(r.tile % 16 == 0 for r in rep.rows if r.units >= 16 and r.tile >= 16)
    cores = {64000: (1, 8), 1200: (1, 4), 700: (2,)}[l1]
    check(cfg, prog, _compile(prog, tmp_path, cores), x[:4], record=l1 < 1000)


def test_conv_and_lif_tiles(tmp_path):
    """A convolution tiled by output rows (input whole in L1) and a LIF whose state tiles go in and out."""
    rng = np.random.default_rng(3)
    conv = QConv2d("conv", weight=rng.integers(-128, 128, (3, 3, 2, 4)), in_shape=(9, 5, 2), padding=1, stride=1,
                   requant=RequantShift(mul=3, div=512, out_bits=8))  # fmt: skip
    gemm = QGemm("fc", weight=rng.integers(-128, 128, (180, 48)), bias=rng.integers(-999, 999, 48))
    lif = QLIF("lif", beta_mul=rng.integers(100, 250, 48), in_mul=1, add=0, shift=8,
               threshold=rng.integers(20, 300, 48), reset="subtract")  # fmt: skip
    cfg = SiracusaConfig(layers=(conv, gemm, lif), n_input=90)
    prog, rep = emit_chain_cluster_report(cfg, name="cl", l1_bytes=800, record=True)
    assert [(r.kind, r.n_tiles > 1) for r in rep.rows] == [("conv", True), ("gemm", True), ("lif", True)]
    assert rep.rows[1].buffering == rep.rows[2].buffering == "DB" and rep.rows[0].units == 9
    src = prog.sources["cl.c"]
    assert "pond_dma_start" in src and "POND_L1" in src and "pond_profile((uint32_t)65536u" in src
    x = rng.integers(-128, 128, (1, 4, 90))
    check(cfg, prog, _compile(prog, tmp_path, (1, 4)), x)
    out, _, want = SiracusaSim(cfg).evolve(x, record=True)
    assert want["lif/spikes"].sum() > 0
    prog2, rep2 = emit_chain_cluster_report(cfg, name="cl2", l1_bytes=500, double_buffer=False, record=True)
    assert rep2.rows[2].n_tiles > 1
    check(cfg, prog2, _compile(prog2, tmp_path / "b", (2,)), x)


# -- the emulated cluster -----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_digits_mlp_on_the_emulated_cluster(digits, tmp_path):
    from pondlib.codegen.cluster import build_cluster, run_cluster

    cfg, x = digits
    prog = emit_chain_cluster(cfg, name="digits", l1_bytes=2000)
    out = SiracusaSim(cfg).evolve(x[:2])[0]
    runs = {}
    for cores in (1, 8):
        runs[cores] = run = run_cluster(build_cluster(prog, tmp_path / f"e{cores}", cores=cores), x[:2])
        assert np.array_equal(run.y.astype(np.int64), out), cores
        assert run.dma_in_bytes > 64 * 64 + 64 * 32 + 32 * 10  # every weight moved into L1 once per sample
    assert runs[8].span_per_step < runs[1].span_per_step / 3  # output channels over the cores


@pytest.mark.slow
def test_weights_that_do_not_fit_l2_go_to_l3(digits, tmp_path):
    """An L2 that holds the activations and the smaller weights: the largest weights move to L3, the DMA reads
    them there (at L3's rate), the outputs stay bit-exact."""
    from pondlib.codegen.cluster import build_cluster, run_cluster

    cfg, x = digits
    _, full = emit_chain_cluster_report(cfg, name="digits", l1_bytes=2000)
    assert full.l3_bytes == 0
    prog, rep = emit_chain_cluster_report(cfg, name="digits", l1_bytes=2000, l2_bytes=full.l2_need - 1)
    assert 0 < rep.l3_bytes and rep.l2_need <= full.l2_need - 1 and rep.l2_need + rep.l3_bytes == full.l2_need
    assert any("L3:" in n for n in prog.notes) and "POND_L3" in prog.sources[f"{prog.name}.c"]
    runs = {}
    for where, p in (("l2", emit_chain_cluster(cfg, name="digits", l1_bytes=2000)), ("l3", prog)):
        runs[where] = run_cluster(build_cluster(p, tmp_path / where, cores=2), x[:1])
        assert np.array_equal(runs[where].y.astype(np.int64), SiracusaSim(cfg).evolve(x[:1])[0])
    steps = runs["l3"].steps
    assert runs["l2"].dma_l3_bytes == 0 and runs["l3"].dma_l3_bytes == steps * rep.l3_bytes
    assert runs["l3"].cycles > runs["l2"].cycles  # L3 is slower than L2
    with pytest.raises(CodegenError, match=r"L2 bytes.*activations.*l2_bytes = 64"):
        emit_chain_cluster(cfg, l2_bytes=64)


# -- bad input and the device ---------------------------------------------------------------------------------------
_CFG = SiracusaConfig(layers=(QGemm("fc", weight=np.ones((32, 16), dtype=int), requant=RequantShift(mul=1)),),
                      n_input=32)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.integers(-5, 20), st.none(), st.floats(allow_nan=True), st.text(max_size=2)))
def test_core_counts_outside_1_to_8_are_refused(cores):
    whole = isinstance(cores, (int, float)) and not isinstance(cores, bool) and float(cores).is_integer()
    if whole and 1 <= cores <= 8:  # check_int takes integral floats such as 2.0 as the integer
        assert emit_chain_cluster(_CFG, cores=cores).cores == int(cores)
        return
    with pytest.raises(CodegenError, match="cores"):
        emit_chain_cluster(_CFG, cores=cores)


@settings(max_examples=40, deadline=None)
@given(st.integers(-10, 200), st.booleans())
def test_l1_below_the_smallest_tile_is_refused(l1, double):
    # smallest tile: input 32 + weight rows 32 (x2 double buffered) + one output 8 (all 8-byte aligned)
    need = 32 + (64 if double else 32) + 8
    if l1 >= need:
        assert emit_chain_cluster_report(_CFG, l1_bytes=l1, double_buffer=double)[1].l1_arena <= l1
        return
    with pytest.raises(CodegenError) as err:
        emit_chain_cluster(_CFG, l1_bytes=l1, double_buffer=double)
    msg = str(err.value)
    if l1 >= 8:
        assert "'fc'" in msg and f"{need} B" in msg and f"l1_bytes = {l1}" in msg and f">= {need}" in msg
    else:
        assert "l1_bytes" in msg


def test_conv_input_that_does_not_fit_and_l2_are_refused():
    conv = QConv2d("big", weight=np.ones((3, 3, 4, 4), dtype=int), in_shape=(32, 32, 4),
                   requant=RequantShift(mul=1))  # fmt: skip
    cfg = SiracusaConfig(layers=(conv,), n_input=32 * 32 * 4)
    with pytest.raises(CodegenError, match=r"'big'.*whole input.*l1_bytes = 4000"):
        emit_chain_cluster(cfg, l1_bytes=4000)
    with pytest.raises(CodegenError, match=r"L2 bytes.*l2_bytes = 1000"):
        emit_chain_cluster(cfg, l2_bytes=1000)
    for bad in (0, -1, 2.5, "x"):
        with pytest.raises(CodegenError, match="l2_bytes"):
            emit_chain_cluster(_CFG, l2_bytes=bad)
    with pytest.raises(CodegenError, match="SiracusaConfig"):
        emit_chain_cluster("net")
    with pytest.raises(CodegenError, match="double_buffer"):
        emit_chain_cluster(_CFG, double_buffer=3)
    with pytest.raises(ConstraintError):
        emit_chain_cluster(SiracusaConfig(layers=(QGemm("fc", weight=[[127]], bias=[2**31 - 1]),), n_input=1))


def test_device_emits_the_cluster_chain():
    dev = SiracusaDevice()
    prog = dev.emit(_CFG, name="dev", cores=4, l1_bytes=500, double_buffer=False)
    assert prog.cores == 4 and "POND_CLUSTER_RUN(dev_cluster, x, y);" in prog.sources["dev.c"]
    assert dev.emit(_CFG, name="dev", l1_bytes=64000).cores == 8
    assert dev.emit(_CFG, name="dev").cores == 0  # no cluster option: the single-core C
    with pytest.raises(CodegenError, match="l2_bytes = 10"):
        dev.emit(_CFG, cores=2, l2_bytes=10)
