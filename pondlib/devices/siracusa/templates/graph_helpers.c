## The integer helpers the graph kernels use (only those some node needs). Every value is exact (the emitter's
## range analysis proves that no int32/int64 operation overflows), so the helpers only spell out, without
## implementation-defined behaviour, what Python's integers do.
##if asr32
/* floor(t / 2^s), 0 <= s <= 31: the arithmetic right shift, written portably for negative t */
static int32_t gq_asr32(int32_t t, int s) { return t >= 0 ? t >> s : -1 - ((-1 - t) >> s); }
##end
##if asr64
/* floor(t / 2^s), 0 <= s <= 63: the arithmetic right shift, written portably for negative t */
static int64_t gq_asr64(int64_t t, int s) { return t >= 0 ? t >> s : -1 - ((-1 - t) >> s); }
##end
##if isqrt
/* floor(sqrt(v)) of v >= 0 (bit by bit, exact for every int64) */
static int64_t gq_isqrt(int64_t v) {
    uint64_t n = (uint64_t)v, r = 0, bit = (uint64_t)1 << 62;
    while (bit > n) bit >>= 2;
    while (bit != 0) {
        if (n >= r + bit) {
            n -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return (int64_t)r;
}
##end
##if shr
/* v >> k of v >= 0 for any k >= 0 (0 once k reaches the width: numpy's defined result) */
static int64_t gq_shr(int64_t v, int64_t k) { return k >= 63 ? 0 : v >> k; }
##end
##if fdiv
/* floor(a / b) of b > 0 (C's division truncates; this floors negative a without overflow) */
static int64_t gq_fdiv64(int64_t a, int64_t b) { return a >= 0 ? a / b : -1 - (-1 - a) / b; }
##end
