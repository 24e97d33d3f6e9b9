"""Cross builds (Cortex-M4F, RV32IMC) run emulated equal the host build bit for bit."""

from __future__ import annotations

import os

import numpy as np
import pytest

from pondlib.codegen.cross import TARGETS, build_cross, run_cross
from pondlib.codegen.toolchain import compile_host, run_host
from pondlib.cprogram.program import Buffer, Constant, build_program
from pondlib.errors import CodegenError


@pytest.fixture(scope="module")
def zig_cache(tmp_path_factory):
    """One zig cache for the module (compiler-rt is built once per target, about 5 s each)."""
    return os.environ.get("ZIG_GLOBAL_CACHE_DIR") or str(tmp_path_factory.mktemp("zig-cache"))


def _int_program():
    """Integer core: int8 weights, int32 wrap-around, int64 products, negative arithmetic shifts, division."""
    w = np.array([[3, -7, 127, -128], [-1, 5, -60, 90], [100, -100, 1, 0]], dtype=np.int64)  # (N_OUT, N_IN)
    body = """
for (int32_t j = 0; j < 3; ++j) {
    int32_t acc = 0;
    for (int32_t i = 0; i < 4; ++i) acc += (int32_t)w[j * 4 + i] * x[i];
    tmp[j] = acc;
}
for (int32_t j = 0; j < 3; ++j) {
    int64_t p = (int64_t)v[j] * (int64_t)decay[j];
    int32_t dec = (int32_t)(p >> 12);              /* arithmetic shift of a negative product: floor */
    uint32_t sum = (uint32_t)dec + (uint32_t)tmp[j] * 65537u;  /* int32 wrap-around via unsigned */
    v[j] = (int32_t)sum;
    int32_t q = v[j] / 7 - (v[j] % 5);             /* C division truncates toward zero */
    y[j] = (int16_t)((q >> 3) ^ (int32_t)(p / 3));  /* int64 division: compiler-rt on both targets */
    spikes[j] = (int8_t)(v[j] > thr[j]);
}
"""
    return build_program(
        "intnet",
        "xylo",
        constants=[
            Constant("w", "int8_t", w),
            Constant("decay", "int32_t", [4000, -3000, 4095]),
            Constant("thr", "int32_t", [1000, -5000, 0]),
        ],
        buffers=[
            Buffer("v", "int32_t", 3, "state", init=[5, -9, 2**31 - 10]),
            Buffer("spikes", "int8_t", 3, "state"),
            Buffer("tmp", "int32_t", 3, "scratch", (0, 1)),
        ],
        step_body=body,
        n_in=4,
        in_ctype="int16_t",
        n_out=3,
        out_ctype="int16_t",
    )


def _float_program():
    """Float core: products, sums, division, comparisons, subnormals and a reset."""
    body = """
for (int32_t j = 0; j < 2; ++j) {
    float acc = bias[j];
    for (int32_t i = 0; i < 3; ++i) acc = acc + w[j * 3 + i] * x[i];
    c[j] = c[j] * alpha[j] + acc;
    v[j] = v[j] * beta[j] + c[j] / 3.0f;
    float s = v[j] > 1.0f ? 1.0f : 0.0f;
    v[j] = v[j] - s * 1.0f;
    y[j] = v[j] * 1e-30f * 1e-8f + s;     /* products in the subnormal range */
}
"""
    return build_program(
        "floatnet",
        "float32",
        constants=[
            Constant("w", "float", np.array([0.1, -0.7, 1.3, 0.25, 0.3333, -2.5])),
            Constant("bias", "float", [0.01, -0.02]),
            Constant("alpha", "float", [0.9, 0.8]),
            Constant("beta", "float", [0.95, 0.7]),
        ],
        buffers=[Buffer("c", "float", 2), Buffer("v", "float", 2)],
        step_body=body,
        n_in=3,
        in_ctype="float",
        n_out=2,
        out_ctype="float",
    )


def _inputs(prog, rng):
    if prog.io.in_ctype == "float":
        return rng.normal(0, 2, size=(2, 12, prog.io.n_in)).astype(np.float32)
    return rng.integers(-30000, 30000, size=(2, 12, prog.io.n_in))


@pytest.mark.parametrize("make", [_int_program, _float_program], ids=["int", "float"])
def test_cross_targets_equal_host_bit_for_bit(make, tmp_path, zig_cache):
    prog = make()
    x = _inputs(prog, np.random.default_rng(1))
    y_host, rec_host = run_host(compile_host(prog, tmp_path / "host"), prog, x, record=True)
    for target in TARGETS:
        build = build_cross(prog, target, tmp_path / target, cache_dir=zig_cache)
        assert build.flash_bytes > 0 and build.ram_bytes > 0
        y, rec, ips = run_cross(build, x, record=True)
        assert y.dtype == y_host.dtype and y.shape == y_host.shape
        assert y.tobytes() == y_host.tobytes(), target
        for name, values in rec_host.items():
            assert rec[name].tobytes() == values.tobytes(), (target, name)
        assert ips > 0, target
        y1, rec1, _ = run_cross(build, x[0])  # unbatched input: (T, N_OUT)
        assert rec1 is None and y1.tobytes() == y_host[0].tobytes()


def test_cross_errors(tmp_path, zig_cache):
    prog = _float_program()
    with pytest.raises(CodegenError, match="cortex-m4"):
        build_cross(prog, "avr", tmp_path)
    bad = build_program(
        "bad", "xylo", constants=[], buffers=[Buffer("s", "int32_t", 1)], step_body="s[0] = undefined_thing;",
        n_in=1, in_ctype="int32_t", n_out=1, out_ctype="int32_t",
    )  # fmt: skip
    with pytest.raises(CodegenError, match="undefined_thing"):
        build_cross(bad, "rv32", tmp_path / "bad", cache_dir=zig_cache)
    build = build_cross(prog, "rv32", tmp_path / "ok", cache_dir=zig_cache)
    with pytest.raises(CodegenError, match="input shape"):
        run_cross(build, np.zeros((4, 2)))
