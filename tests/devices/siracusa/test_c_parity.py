"""Independent oracle: C kernels for RequantShift, GEMM + RequantShift and the integer LIF, compiled
with ``gcc -fwrapv`` (int32 arithmetic wraps as on the RV32 cores), equal to the simulator bit for bit.

The C code is written from ``docs/TARGETS.md``, not from the Python: it accumulates MAC by MAC in
int32 and rounds with ``+ (1 << (s - 1))`` and ``>>`` on signed int32, while the simulator sums in
int64 and wraps once. Random cases deliberately include overflow wrap and negative rounding.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from pondlib.devices.siracusa.sim import gemm_acc, lif_step, requant_shift, wrap32
from pondlib.devices.siracusa.specification import QLIF, RequantShift
from tests.ccompile import build, ptr

C_SOURCE = r"""
#include <stdint.h>

static int32_t rq(int32_t x, int32_t off, int32_t mul, int32_t add, int32_t shift, int32_t lo, int32_t hi) {
    int32_t t = x + off;                 /* every int32 op wraps (-fwrapv) */
    t = t * mul;
    t = t + add;
    if (shift > 0) t = t + (int32_t)(1u << (shift - 1));   /* round half up */
    t = t >> shift;                      /* arithmetic shift of a signed int (gcc) */
    return t < lo ? lo : (t > hi ? hi : t);
}

void requant(const int32_t *x, int32_t *y, int n, int c, const int32_t *mul, const int32_t *add,
             int nparam, int32_t off, int32_t shift, int32_t lo, int32_t hi) {
    for (int i = 0; i < n; i++) {
        int ch = (i % c) % nparam;
        y[i] = rq(x[i], off, mul[ch], add[ch], shift, lo, hi);
    }
}

void gemm_rq(const int32_t *x, const int8_t *w, const int32_t *bias, int has_bias, int M, int K, int O,
             const int32_t *mul, const int32_t *add, int nparam, int32_t shift, int32_t lo, int32_t hi,
             int32_t *acc, int32_t *y) {
    for (int m = 0; m < M; m++)
        for (int o = 0; o < O; o++) {
            int32_t a = has_bias ? bias[o] : 0;
            for (int k = 0; k < K; k++) a += x[m * K + k] * (int32_t)w[k * O + o];
            acc[m * O + o] = a;
            y[m * O + o] = rq(a, 0, mul[o % nparam], add[o % nparam], shift, lo, hi);
        }
}

void int_lif(const int32_t *in, int T, int N, const int32_t *beta, const int32_t *inm, const int32_t *add,
             int32_t shift, const int32_t *thr, int32_t slo, int32_t shi, int reset_zero, int strict,
             int32_t *v, int32_t *vrec, int32_t *z) {
    for (int t = 0; t < T; t++)
        for (int n = 0; n < N; n++) {
            int32_t a = v[n] * beta[n];
            int32_t b = in[t * N + n] * inm[n];
            int32_t s = a + b;
            s = s + add[n];
            if (shift > 0) s = s + (int32_t)(1u << (shift - 1));
            s = s >> shift;
            s = s < slo ? slo : (s > shi ? shi : s);
            int spk = strict ? (s > thr[n]) : (s >= thr[n]);
            if (spk) s = reset_zero ? 0 : s - thr[n];
            v[n] = s;
            vrec[t * N + n] = s;
            z[t * N + n] = spk;
        }
}
"""

I32 = ctypes.c_int32


@pytest.fixture(scope="module")
def lib():
    lib = build(C_SOURCE, "siracusa_kernels", flags=("-fwrapv",))
    lib.requant.restype = None
    lib.requant.argtypes = [
        ctypes.POINTER(I32),
        ctypes.POINTER(I32),
        ctypes.c_int,
        ctypes.c_int,
        ctypes.POINTER(I32),
        ctypes.POINTER(I32),
        ctypes.c_int,
        I32,
        I32,
        I32,
        I32,
    ]
    lib.gemm_rq.restype = None
    lib.int_lif.restype = None
    return lib


def c_requant(lib, x: np.ndarray, rq: RequantShift) -> np.ndarray:
    x32 = np.ascontiguousarray(x, dtype=np.int32)
    y = np.zeros_like(x32)
    mul = np.ascontiguousarray(np.atleast_1d(rq.mul), dtype=np.int32)
    add = np.ascontiguousarray(np.broadcast_to(np.atleast_1d(rq.add), mul.shape), dtype=np.int32)
    lo, hi = rq.out_range
    lib.requant(
        ptr(x32, I32),
        ptr(y, I32),
        x32.size,
        x32.shape[-1],
        ptr(mul, I32),
        ptr(add, I32),
        mul.size,
        rq.in_offset,
        rq.shift,
        lo,
        hi,
    )
    return y.astype(np.int64)


def random_requant(rng, c: int, big: bool) -> RequantShift:
    shift = int(rng.integers(0, 32))
    per_channel = bool(rng.integers(0, 2))
    n = c if per_channel else 1
    if big:  # full int32 range: products and sums wrap
        mul = rng.integers(-(2**31), 2**31, n)
        add = rng.integers(-(2**31), 2**31, n)
    else:
        mul = rng.integers(-(2**12), 2**12, n)
        add = rng.integers(-(2**20), 2**20, n)
    bits = int(rng.integers(2, 9))
    return RequantShift(
        mul=mul if per_channel else mul[0],
        add=add if per_channel else add[0],
        div=1 << shift,
        out_bits=bits,
        signed=bool(rng.integers(0, 2)),
        in_offset=int(rng.integers(-128, 128)),
    )


def test_requant_hand_cases_in_c_and_python(lib):
    half = RequantShift(mul=1, add=0, div=2)
    x = np.array([-3, -5, -1, 1, 3, 5, -4, 4])
    expected = [-1, -2, 0, 1, 2, 3, -2, 2]  # round half up: -1.5 -> -1, -2.5 -> -2, 0.5 -> 1
    assert requant_shift(x, half).tolist() == expected
    assert c_requant(lib, x[None], half)[0].tolist() == expected
    # wrap: 2^16 * 2^16 = 2^32 wraps to 0; INT32_MAX + rounding wraps to INT32_MIN then >> 1
    wrap = RequantShift(mul=65536, add=0, div=1, out_bits=8)
    assert requant_shift(np.array([65536, 65537]), wrap).tolist() == [0, 127]
    assert c_requant(lib, np.array([[65536, 65537]]), wrap)[0].tolist() == [0, 127]
    top = RequantShift(mul=1, add=2**31 - 2, div=2, out_bits=8)
    assert requant_shift(np.array([1]), top).tolist() == [-128]  # wrap32(2^31 - 1 + 1) = -2^31
    assert c_requant(lib, np.array([[1]]), top)[0].tolist() == [-128]


def test_requant_random_parity(lib):
    rng = np.random.default_rng(1)
    n_values = n_wrapped = 0
    for case in range(200):
        c = int(rng.integers(1, 17))
        big = case % 2 == 0
        rq = random_requant(rng, c, big)
        x = rng.integers(-(2**31), 2**31, (16, c)) if big else rng.integers(-(2**15), 2**15, (16, c))
        got = requant_shift(x, rq)
        want = c_requant(lib, x, rq)
        assert np.array_equal(got, want), (case, rq)
        exact = (x + rq.in_offset) * np.broadcast_to(rq.mul, (c,)).astype(object)
        n_wrapped += int(np.sum(np.abs(exact.astype(float)) >= 2**31))
        n_values += x.size
    assert n_values >= 200 * 16
    assert n_wrapped > 1000, "the random cases must exercise int32 wrap-around"


def test_negative_rounding_parity(lib):
    rng = np.random.default_rng(2)
    x = -rng.integers(1, 2**20, 4000)  # negative values, every shift, odd and even
    for shift in range(0, 32):
        rq = RequantShift(mul=1, add=0, div=1 << shift, out_bits=8)
        assert np.array_equal(requant_shift(x[None], rq), c_requant(lib, x[None], rq))
    # exact halves: (2k+1)/2 rounds up, i.e. towards +inf, also for negative numbers
    halves = np.arange(-21, 22, 2)
    r = requant_shift(halves, RequantShift(mul=1, div=2))
    assert r.tolist() == (np.floor(halves / 2) + 1).astype(int).tolist()


def c_gemm(lib, x, w, bias, rq):
    M, K = x.shape
    O = w.shape[1]
    x32 = np.ascontiguousarray(x, dtype=np.int32)
    w8 = np.ascontiguousarray(w, dtype=np.int8)
    b32 = np.ascontiguousarray(bias if bias is not None else np.zeros(O), dtype=np.int32)
    mul = np.ascontiguousarray(np.atleast_1d(rq.mul), dtype=np.int32)
    add = np.ascontiguousarray(np.broadcast_to(np.atleast_1d(rq.add), mul.shape), dtype=np.int32)
    acc = np.zeros((M, O), dtype=np.int32)
    y = np.zeros((M, O), dtype=np.int32)
    lo, hi = rq.out_range
    lib.gemm_rq(
        ptr(x32, I32),
        ptr(w8, ctypes.c_int8),
        ptr(b32, I32),
        int(bias is not None),
        M,
        K,
        O,
        ptr(mul, I32),
        ptr(add, I32),
        mul.size,
        I32(rq.shift),
        I32(lo),
        I32(hi),
        ptr(acc, I32),
        ptr(y, I32),
    )
    return acc.astype(np.int64), y.astype(np.int64)


def test_gemm_requant_random_parity(lib):
    rng = np.random.default_rng(3)
    n_acc_wrapped = 0
    for case in range(60):
        M, K, O = (int(v) for v in rng.integers(1, 40, 3))
        signed_in = bool(rng.integers(0, 2))
        x = rng.integers(-128, 128, (M, K)) if signed_in else rng.integers(0, 256, (M, K))
        w = rng.integers(-128, 128, (K, O))
        big = case % 3 == 0
        if big:  # near the int32 edges so that the accumulator wraps around
            bias = rng.choice([-1, 1], O) * (2**31 - rng.integers(1, 2**19, O))
        else:
            bias = rng.integers(-(2**16), 2**16, O) if case % 2 else None
        rq = random_requant(rng, O, big)
        rq = RequantShift(rq.mul, rq.add, rq.div, rq.out_bits, rq.signed, 0)
        acc = gemm_acc(x, w, bias)
        y = requant_shift(acc, rq)
        acc_c, y_c = c_gemm(lib, x, w, bias, rq)
        assert np.array_equal(acc, acc_c), case
        assert np.array_equal(y, y_c), case
        exact = x @ w + (bias if bias is not None else 0)
        n_acc_wrapped += int(np.sum(exact != acc))
    assert n_acc_wrapped > 100, "accumulator wrap-around must be exercised"


def test_gemm_fused_lambda_form_equals_unfused():
    # docs: clamp((acc * mul + lambda) >> s), lambda = bias * mul + add + 2^(s-1), equal mod 2^32
    rng = np.random.default_rng(4)
    x, w = rng.integers(-128, 128, (8, 32)), rng.integers(-128, 128, (32, 16))
    bias, mul, add, s = (
        rng.integers(-(2**20), 2**20, 16),
        rng.integers(1, 2**14, 16),
        rng.integers(-(2**20), 2**20, 16),
        13,
    )
    unfused = requant_shift(gemm_acc(x, w, bias), RequantShift(mul, add, 1 << s))
    lam = wrap32(wrap32(bias * mul) + add + (1 << (s - 1)))
    fused = np.clip(wrap32(wrap32(gemm_acc(x, w, None) * mul) + lam) >> s, -128, 127)
    assert np.array_equal(unfused, fused)


def c_lif(lib, inp, layer: QLIF):
    T, N = inp.shape
    arr = lambda a: np.ascontiguousarray(np.broadcast_to(a, (N,)), dtype=np.int32)  # noqa: E731
    v = np.zeros(N, dtype=np.int32)
    vrec = np.zeros((T, N), dtype=np.int32)
    z = np.zeros((T, N), dtype=np.int32)
    i32 = np.ascontiguousarray(inp, dtype=np.int32)
    beta, inm, add, thr = arr(layer.beta_mul), arr(layer.in_mul), arr(layer.add), arr(layer.threshold)
    lo, hi = layer.state_range
    lib.int_lif(
        ptr(i32, I32),
        T,
        N,
        ptr(beta, I32),
        ptr(inm, I32),
        ptr(add, I32),
        I32(layer.shift),
        ptr(thr, I32),
        I32(lo),
        I32(hi),
        int(layer.reset == "zero"),
        int(layer.compare == ">"),
        ptr(v, I32),
        ptr(vrec, I32),
        ptr(z, I32),
    )
    return vrec.astype(np.int64), z.astype(np.int64)


def test_int_lif_random_parity(lib):
    rng = np.random.default_rng(5)
    n_steps = n_spikes = 0
    for case in range(40):
        N, T = int(rng.integers(1, 33)), int(rng.integers(1, 60))
        bits = int(rng.choice([8, 16, 24, 32]))
        shift = int(rng.integers(0, 32))
        big = case % 2 == 0
        span = 2**31 if big else 2**12
        layer = QLIF(
            "lif",
            beta_mul=rng.integers(-span if big else 0, span, N),
            in_mul=rng.integers(-span, span, N),
            add=rng.integers(-span, span, N),
            shift=shift,
            threshold=rng.integers(1, 2 ** (bits - 1), N),
            state_bits=bits,
            reset=str(rng.choice(["subtract", "zero"])),
            compare=str(rng.choice([">=", ">"])),
        )
        inp = rng.integers(-(2**31), 2**31, (T, N)) if big else rng.integers(-(2**16), 2**16, (T, N))
        v = np.zeros(N, dtype=np.int64)
        vs, zs = [], []
        for t in range(T):
            z, v = lif_step(v, inp[t], layer)
            vs.append(v)
            zs.append(z)
        v_c, z_c = c_lif(lib, inp, layer)
        assert np.array_equal(np.array(vs), v_c), case
        assert np.array_equal(np.array(zs), z_c), case
        n_steps += T * N
        n_spikes += int(z_c.sum())
    assert n_spikes > 100 and n_steps > 10_000
