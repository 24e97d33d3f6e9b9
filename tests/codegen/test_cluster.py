"""The emulated RV32 cluster: the same sources for 1, 2, 4 and 8 cores equal the host (pthreads) build and numpy;
instruction counts per core, DMA bytes, barriers and profile markers as the schedule says; bad input refused."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.codegen.cluster import ClusterBuild, build_cluster, run_cluster
from pondlib.codegen.cross import build_cross, run_cross
from pondlib.codegen.toolchain import compile_host, run_host
from pondlib.cprogram.cluster import cluster_runtime
from pondlib.cprogram.program import Buffer, build_program
from pondlib.errors import CodegenError

CORES = (1, 2, 4, 8)

# One vector DMA'd into L1, each core transforms its contiguous share (a per-element loop: the work to split),
# DMA'd back. Markers by core 0 at the phase boundaries: 1 = DMA in, 2 = compute, 3 = DMA out.
_FLAT = r"""
#define N 64
static POND_L1 int32_t l1_vec[N];

static void flat(const void *xv, void *yv)
{
    const int core = pond_core_id();
    if (core == 0) {
        pond_profile(1u);
        pond_dma_start(l1_vec, xv, sizeof l1_vec);
        pond_dma_wait();
    }
    pond_barrier();
    if (core == 0) pond_profile(2u);
    const int chunk = (N + POND_NUM_CORES - 1) / POND_NUM_CORES;
    const int lo = core * chunk, hi = lo + chunk < N ? lo + chunk : N;
    for (int i = lo; i < hi; ++i) {
        int32_t v = l1_vec[i];
        for (int32_t k = 0; k < 6; ++k) v = v * 3 - (v >> 2) + k; /* arithmetic shift of negatives */
        l1_vec[i] = v;
    }
    pond_barrier();
    if (core == 0) {
        pond_profile(3u);
        pond_dma_start(yv, l1_vec, sizeof l1_vec);
        pond_dma_wait();
    }
    pond_barrier();
}
"""

# Double buffered: tile t+1 is fetched into the other L1 buffer while tile t is computed (interleaved over
# the cores), each tile's result DMA'd out after its compute. Marker 100 + t at the top of tile t (core 0).
_TILED = r"""
#define M 128
#define TILE 16
#define NT (M / TILE)
static POND_L1 int16_t l1_in[2][TILE];
static POND_L1 int16_t l1_out[2][TILE];

static void tiled(const void *xv, void *yv)
{
    const int16_t *x = (const int16_t *)xv;
    int16_t *y = (int16_t *)yv;
    const int core = pond_core_id();
    for (int t = 0; t < NT; ++t) {
        const int cur = t & 1;
        if (core == 0) {
            pond_profile(100u + (uint32_t)t);
            if (t == 0) pond_dma_start(l1_in[0], x, sizeof l1_in[0]);
            pond_dma_wait();
            if (t + 1 < NT) pond_dma_start(l1_in[!cur], x + (t + 1) * TILE, sizeof l1_in[0]);
        }
        pond_barrier();
        for (int i = core; i < TILE; i += POND_NUM_CORES) {
            const int32_t v = l1_in[cur][i];
            l1_out[cur][i] = (int16_t)((v * 5 + t) >> 1);
        }
        pond_barrier();
        if (core == 0) pond_dma_start(y + t * TILE, l1_out[cur], sizeof l1_out[0]);
    }
    if (core == 0) pond_dma_wait();
    pond_barrier();
}
"""

# The last core skips the barrier: the others wait for it forever.
_DEADLOCK = r"""
static void skip(const void *xv, void *yv)
{
    int32_t *y = (int32_t *)yv;
    if (pond_core_id() != POND_NUM_CORES - 1) pond_barrier();
    if (pond_core_id() == 0) y[0] = ((const int32_t *)xv)[0];
}
"""

# 8 KiB of L1 buffers.
_BIG_L1 = r"""
static POND_L1 int32_t l1_big[2048];

static void big(const void *xv, void *yv)
{
    if (pond_core_id() == 0) {
        pond_dma_start(l1_big, xv, 4);
        pond_dma_wait();
        pond_dma_start(yv, l1_big, 4);
        pond_dma_wait();
    }
}
"""

# A transfer's bytes move at its wait: reading the destination before it sees the old bytes (MISSING 1), and
# a step that returns with a transfer pending is refused (MISSING 2); MISSING 0 is the correct program.
_MISSING_WAIT = r"""
static POND_L1 int32_t l1_in[1];

static void late(const void *xv, void *yv)
{
    if (pond_core_id() == 0) {
        pond_dma_start(l1_in, xv, 4);
#if MISSING != 1
        pond_dma_wait();
#endif
        l1_in[0] += 1;
        pond_dma_start(yv, l1_in, 4);
#if MISSING != 2
        pond_dma_wait();
#endif
    }
    pond_barrier();
}
"""


@pytest.fixture(scope="module")
def zig_cache():
    """zig's global cache (compiler-rt is built once per target, then shared by every build)."""
    return os.environ.get("ZIG_GLOBAL_CACHE_DIR")


def _program(name, kernel, fn, n, ctype, *, count_steps=False):
    step = f"POND_CLUSTER_RUN({fn}, x, y);"
    buffers = []
    if count_steps:  # a state only core 0 updates: checks record= and that pond_reset runs once per sample
        buffers = [Buffer("steps", "int32_t", 1, "state")]
        step += " if (pond_core_id() == 0) steps[0] += 1;"
    else:
        step = "(void)a; " + step
    return build_program(
        name, "int32", constants=[], buffers=buffers, helpers=cluster_runtime(8) + kernel, step_body=step,
        n_in=n, in_ctype=ctype, n_out=n, out_ctype=ctype,
    )  # fmt: skip


def _flat_reference(x):
    v = x.astype(np.int64)
    for k in range(6):
        v = v * 3 - (v >> 2) + k
    return v.astype(np.int32)


def _tiled_reference(x):
    t = np.arange(x.shape[-1]) // 16
    return ((x.astype(np.int64) * 5 + t) >> 1).astype(np.int16)


def _builds(prog, tmp_path, zig_cache):
    return {c: build_cluster(prog, tmp_path / f"c{c}", cores=c, cache_dir=zig_cache) for c in CORES}


@pytest.mark.slow
def test_flat_program_equals_host_and_numpy_on_1_to_8_cores(tmp_path, zig_cache):
    prog = _program("flat", _FLAT, "flat", 64, "int32_t", count_steps=True)
    x = np.random.default_rng(0).integers(-10000, 10000, size=(2, 3, 64))
    y_host, rec_host = run_host(compile_host(prog, tmp_path / "host", extra_flags=("-pthread",)), prog, x, record=True)
    assert np.array_equal(y_host, _flat_reference(x))
    runs, builds = {}, _builds(prog, tmp_path, zig_cache)
    for cores, build in builds.items():
        assert isinstance(build, ClusterBuild) and build.cores == cores and build.l1_bytes == 64 * 4
        run = runs[cores] = run_cluster(build, x, record=True)
        assert run.y.tobytes() == y_host.tobytes(), cores
        assert run.record["steps"].tobytes() == rec_host["steps"].tobytes()
        assert run.record["steps"][:, :, 0].tolist() == [[1, 2, 3]] * 2
        assert run.cores == cores and run.steps == 6 and len(run.instructions) == cores
        assert run.dma_in_bytes == run.dma_out_bytes == 6 * 64 * 4 and run.dma_other_bytes == 0
        assert run.dma_transfers == 12 and run.barriers == 6 * 3
        assert sorted(run.profile) == [1, 2, 3]
        assert [run.profile[m].calls for m in (1, 2, 3)] == [6, 6, 6]
        assert (run.profile[1].dma_in_bytes, run.profile[1].dma_out_bytes) == (6 * 256, 0)
        assert (run.profile[2].dma_in_bytes, run.profile[2].dma_out_bytes) == (0, 0)
        assert (run.profile[3].dma_in_bytes, run.profile[3].dma_out_bytes) == (0, 6 * 256)
        assert sum(sum(e.instructions) for e in run.profile.values()) <= sum(run.instructions)
    one = runs[1].profile[2].slowest  # the compute phase on one core
    for cores, run in runs.items():
        compute = run.profile[2].instructions
        assert max(compute) == run.profile[2].slowest
        assert 0.9 <= max(compute) * cores / one <= 1.2, (cores, compute, one)  # each core about 1/N of the work
        assert max(compute) - min(compute) <= 0.1 * max(compute), (cores, compute)  # an even split
    assert runs[8].span < runs[4].span < runs[2].span < runs[1].span
    assert runs[1].span == sum(runs[1].instructions)  # one core: the critical path is all of it
    y1 = run_cluster(builds[2], x[0]).y  # unbatched (T, N_OUT)
    assert y1.tobytes() == y_host[0].tobytes()
    with pytest.raises(CodegenError, match="cores"):
        run_cluster(builds[8], x, cores=4)  # the binary was built for 8


@pytest.mark.slow
def test_double_buffered_tiles_on_1_to_8_cores(tmp_path, zig_cache):
    prog = _program("tiled", _TILED, "tiled", 128, "int16_t")
    x = np.random.default_rng(1).integers(-3000, 3000, size=(2, 2, 128))
    y_host, _ = run_host(compile_host(prog, tmp_path / "host", extra_flags=("-pthread",)), prog, x)
    assert np.array_equal(y_host, _tiled_reference(x))
    tile = 16 * 2
    for cores, build in _builds(prog, tmp_path, zig_cache).items():
        assert build.l1_bytes == 4 * tile
        run = run_cluster(build, x)
        assert run.y.tobytes() == y_host.tobytes(), cores
        assert run.dma_in_bytes == run.dma_out_bytes == 4 * 128 * 2 and run.dma_transfers == 4 * 16
        assert run.barriers == 4 * (2 * 8 + 1)
        assert sorted(run.profile) == list(range(100, 108))
        ins = [run.profile[100 + t].dma_in_bytes for t in range(8)]
        assert ins == [4 * 2 * tile] + [4 * tile] * 6 + [0]  # tile 0 and the prefetch of 1; then one; none
        assert all(run.profile[100 + t].dma_out_bytes == 4 * tile for t in range(8))
        assert all(e.slowest > 0 and len(e.instructions) == cores for e in run.profile.values())


def test_deadlock_is_refused_naming_the_cores(tmp_path, zig_cache):
    prog = _program("skip", _DEADLOCK, "skip", 1, "int32_t")
    build = build_cluster(prog, tmp_path, cores=4, cache_dir=zig_cache)
    with pytest.raises(CodegenError, match=r"deadlock.*cores \[3\] returned while cores \[0, 1, 2\] wait at barrier 1"):
        run_cluster(build, np.ones((1, 1)))
    with pytest.raises(CodegenError, match="run_cluster"):
        run_cross(build, np.ones((1, 1)))  # a cluster build needs the cluster


def test_a_missing_dma_wait_changes_the_output_or_is_refused(tmp_path, zig_cache):
    x = np.array([[7], [-3]])
    runs = {}
    for missing in (0, 1):
        prog = _program("late", f"#define MISSING {missing}\n" + _MISSING_WAIT, "late", 1, "int32_t")
        runs[missing] = run_cluster(build_cluster(prog, tmp_path / str(missing), cores=2, cache_dir=zig_cache), x)
    assert runs[0].y[:, 0].tolist() == [8, -2]
    # without the first wait the increment lands on L1's old contents (0, then the first sample's 8), and the
    # wait that completes both transfers copies the input over it: the output is the input, not input + 1
    assert runs[1].y[:, 0].tolist() == [7, -3]
    prog = _program("late", "#define MISSING 2\n" + _MISSING_WAIT, "late", 1, "int32_t")
    with pytest.raises(CodegenError, match=r"1 DMA transfer\(s\) never waited for: got 4 bytes pending"):
        run_cluster(build_cluster(prog, tmp_path / "2", cores=2, cache_dir=zig_cache), x)


def test_dma_time_is_a_stall_at_the_wait(tmp_path, zig_cache):
    """A wait right after a start stalls for S + n / W cycles: cycles = instructions + both stalls + barrier."""
    prog = _program("late", "#define MISSING 0\n" + _MISSING_WAIT, "late", 1, "int32_t")
    build = build_cluster(prog, tmp_path, cores=1, cache_dir=zig_cache)
    base = run_cluster(build, np.array([[7]]), dma_setup_cycles=0.0, dma_bytes_per_cycle=1e9, barrier_cycles=0.0)
    slow = run_cluster(build, np.array([[7]]), dma_setup_cycles=100.0, dma_bytes_per_cycle=2.0, barrier_cycles=3.0)
    assert base.y.tolist() == slow.y.tolist() == [[8]]
    assert base.cycles == pytest.approx(base.span, abs=1e-3) and base.dma_wait_cycles < 1e-3
    # each transfer: 100 + 4 / 2 = 102 cycles, issued just before its wait (the store of the start's third
    # register and the wait's store are adjacent instructions but for the address set-up: a few cycles overlap)
    assert 2 * 102 - 10 <= slow.dma_wait_cycles <= 2 * 102
    assert slow.cycles == pytest.approx(slow.span + slow.dma_wait_cycles + 3.0)
    with pytest.raises(CodegenError, match="dma_bytes_per_cycle"):
        run_cluster(build, np.array([[7]]), dma_bytes_per_cycle=0.0)


def test_l1_section_over_the_limit_is_refused(tmp_path, zig_cache):
    prog = _program("big", _BIG_L1, "big", 1, "int32_t")
    with pytest.raises(CodegenError, match=r"\.l1.*8192 bytes.*l1_bytes = 4096"):
        build_cluster(prog, tmp_path / "small", cores=2, l1_bytes=4096, cache_dir=zig_cache)
    build = build_cluster(prog, tmp_path / "fits", cores=2, l1_bytes=8192, cache_dir=zig_cache)
    assert build.l1_bytes == 8192 and build.l1_limit == 8192
    run = run_cluster(build, np.array([[7], [-3]]))
    assert run.y[:, 0].tolist() == [7, -3] and run.dma_in_bytes == run.dma_out_bytes == 8 and run.barriers == 0
    with pytest.raises(CodegenError, match="l1_bytes"):
        build_cross(prog, "rv32", tmp_path / "zero", l1_bytes=0)


@settings(max_examples=25, deadline=None)
@given(cores=st.one_of(st.integers(max_value=0), st.integers(min_value=9), st.sampled_from([1.5, "8", None, True])))
def test_core_counts_outside_1_to_8_are_refused(cores):
    prog = _program("flat", _FLAT, "flat", 64, "int32_t")
    with pytest.raises(CodegenError, match="cores"):
        build_cluster(prog, "/nonexistent/never-written", cores=cores)
    with pytest.raises(CodegenError, match="cores"):
        cluster_runtime(cores)


def test_counts_are_exact_at_barriers_and_markers(tmp_path, zig_cache, monkeypatch):
    """The block-hook counts, made exact at each stop and marker, equal a per-instruction count."""
    from unicorn import UC_HOOK_CODE

    import pondlib.codegen.cluster as cluster

    init, resume, marker, checked = cluster._Core.__init__, cluster._Core.resume, cluster._Cluster.marker, []

    def counting_init(self, owner, index):
        init(self, owner, index)
        self.truth = 0
        self.uc.hook_add(UC_HOOK_CODE, lambda *_: setattr(self, "truth", self.truth + 1))

    def checked_resume(self, symbol):
        resume(self, symbol)
        checked.append((self.count, self.truth))

    def checked_marker(self, core, value, count):
        checked.append((count, core.truth))
        marker(self, core, value, count)

    monkeypatch.setattr(cluster._Core, "__init__", counting_init)
    monkeypatch.setattr(cluster._Core, "resume", checked_resume)
    monkeypatch.setattr(cluster._Cluster, "marker", checked_marker)
    prog = _program("flat", _FLAT, "flat", 64, "int32_t")
    run = run_cluster(build_cluster(prog, tmp_path, cores=4, cache_dir=zig_cache), np.ones((1, 2, 64)))
    assert len(checked) == 2 * (4 * 4 + 3) + 1  # per step: 4 cores x 4 runs (3 barriers) + 3 markers; 1 reset
    assert all(count == truth for count, truth in checked), checked
    assert sum(run.instructions) > 0


_BAD_MMIO = r"""
static void bad(const void *xv, void *yv)
{
    (void)xv;
    (void)yv;
#if BAD_KIND == 0
    if (pond_core_id() == 1) ((volatile uint32_t *)0x1A000000u)[12] = 1u;
#else
    if (pond_core_id() == 1) pond_dma_start(yv, (const void *)0x50000000u, 4u);
#endif
}
"""


@pytest.mark.parametrize(
    "kind, message", [(0, r"core 1 wrote 4 bytes to MMIO offset 0x30"), (1, r"core 1.*DMA.*0x50000000")]
)
def test_bad_register_use_is_refused(kind, message, tmp_path, zig_cache):
    prog = _program("bad", f"#define BAD_KIND {kind}\n" + _BAD_MMIO, "bad", 1, "int32_t")
    build = build_cluster(prog, tmp_path, cores=2, cache_dir=zig_cache)
    with pytest.raises(CodegenError, match=message):
        run_cluster(build, np.ones((1, 1)))


_L3 = r"""
static const POND_L3 int32_t l3_table[64] = {[0] = 5, [63] = 11};
static POND_L1 int32_t l1_table[64];

static void lookup(const void *xv, void *yv)
{
    if (pond_core_id() == 0) {
        pond_dma_start(l1_table, l3_table, sizeof l1_table);
        pond_dma_wait();
        ((int32_t *)yv)[0] = ((const int32_t *)xv)[0] + l1_table[0] + l1_table[63];
    }
    pond_barrier();
}
"""


def test_constants_in_l3_move_at_the_l3_rate(tmp_path, zig_cache):
    prog = _program("lookup", _L3, "lookup", 1, "int32_t")
    build = build_cluster(prog, tmp_path, cores=2, cache_dir=zig_cache)
    assert build.l3_bytes == 256 and build.l1_bytes == 256
    fast = run_cluster(build, np.array([[1]]), dma_setup_cycles=0.0, l3_bytes_per_cycle=1e9)
    slow = run_cluster(build, np.array([[1]]), dma_setup_cycles=0.0, l3_bytes_per_cycle=0.5)
    assert fast.y.tolist() == slow.y.tolist() == [[17]]
    assert slow.dma_l3_bytes == slow.dma_in_bytes == 256
    # 256 B at 0.5 B per cycle: 512 cycles, of which the few instructions between start and wait overlap
    assert 500 <= slow.dma_wait_cycles - fast.dma_wait_cycles <= 512


_BLOCK = r"""
static POND_L1 int32_t l1_block[3 * 2];

/* the 3 x 2 block at rows 1..3, columns 2..3 of x (4 x 4, row-major) in one 2-D transfer, doubled, and back to
   the same place of y (zeros elsewhere) in another */
static void block(const void *xv, void *yv)
{
    if (pond_core_id() == 0) {
        for (int i = 0; i < 16; ++i) ((int32_t *)yv)[i] = 0;
        pond_dma_start_2d(l1_block, (const int32_t *)xv + 4 + 2, 2 * 4, 3, 2 * 4, 4 * 4);
        pond_dma_wait();
    }
    pond_barrier();
    for (int i = pond_core_id(); i < 6; i += POND_NUM_CORES) l1_block[i] *= 2;
    pond_barrier();
    if (pond_core_id() == 0) {
        pond_dma_start_2d((int32_t *)yv + 4 + 2, l1_block, 2 * 4, 3, 4 * 4, 2 * 4);
        pond_dma_wait();
    }
}
"""


def test_a_2d_transfer_moves_a_strided_block_on_host_and_emulator(tmp_path, zig_cache):
    prog = _program("block", _BLOCK, "block", 16, "int32_t")
    x = np.arange(1, 33).reshape(2, 16)
    want = np.zeros((2, 4, 4), dtype=np.int64)
    want[:, 1:4, 2:4] = 2 * x.reshape(2, 4, 4)[:, 1:4, 2:4]
    y_host, _ = run_host(compile_host(prog, tmp_path / "host", extra_flags=("-pthread",)), prog, x)
    assert np.array_equal(y_host.reshape(2, 4, 4), want)
    run = run_cluster(build_cluster(prog, tmp_path / "emu", cores=2, cache_dir=zig_cache), x)
    assert run.y.tobytes() == y_host.tobytes()
    assert run.dma_transfers == 2 * 2 and run.dma_in_bytes == run.dma_out_bytes == 2 * 24
