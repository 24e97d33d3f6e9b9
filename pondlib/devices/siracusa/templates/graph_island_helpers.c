## The float32 helpers of the QSoftmax / QLayerNorm islands. They assume IEEE 754 binary32 arithmetic in
## round-to-nearest-even (C11 Annex F: the host's SSE, RV32's compiler-rt soft float) and need no libm: the
## host and the microcontroller run this very code. No float is converted to an integer outside int32's range.
##if norm
/* the float32 whose bit pattern is u (C11 allows reading another member of a union) */
static float gq_fbits(uint32_t u) {
    union { uint32_t u; float f; } b;
    b.u = u;
    return b.f;
}
/* IEEE float32 square root, correctly rounded, from the bit pattern: v = m 2^k (m 24 bits), k made even by
   scaling m into [2^46, 2^48), then sqrt(v) = isqrt(m) 2^(k/2), isqrt rounded to nearest (never a tie) */
static float gq_fsqrt(float v) {
    union { float f; uint32_t u; } b;
    b.f = v;
    const uint32_t u = b.u;
    if ((u & 0x7fffffffu) == 0u || (u >= 0x7f800000u && u < 0x80000000u)) return v; /* +-0, +inf, NaN */
    if (u >= 0x80000000u) return gq_fbits(0x7fc00000u); /* below zero (or a negative NaN): NaN */
    int32_t e = (int32_t)(u >> 23);
    uint32_t m = u & 0x007fffffu;
    if (e == 0) { /* subnormal: normalize */
        e = 1;
        while (m < 0x00800000u) {
            m <<= 1;
            e -= 1;
        }
    } else {
        m |= 0x00800000u;
    }
    int32_t k = e - 150; /* v = m 2^k, 2^23 <= m < 2^24 */
    const int odd = k % 2 != 0;
    uint64_t n = (uint64_t)m << (odd ? 23 : 24);
    k -= odd ? 23 : 24; /* even; n in [2^46, 2^48) */
    uint64_t r = 0, bit = (uint64_t)1 << 46;
    while (bit != 0) {
        if (n >= r + bit) {
            n -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    if (n > r) r += 1; /* n is now the remainder M - r^2: round to nearest; r in [2^23, 2^24] */
    return gq_fbits(((uint32_t)(150 + k / 2) << 23) + (uint32_t)r - 0x00800000u);
}
/* d / z of z = +-0 as IEEE 754 defines it (C leaves a division by zero undefined): NaN for d = 0 or NaN,
   else an infinity whose sign is that of d times that of z */
static float gq_fdiv0(float d, float z) {
    union { float f; uint32_t u; } b;
    b.f = z;
    if (d != d || d == 0.0f) return gq_fbits(0x7fc00000u);
    return gq_fbits((d < 0.0f) != (b.u >= 0x80000000u) ? 0xff800000u : 0x7f800000u);
}
##end
/* ONNX QuantizeLinear of v: clip(rint(v / s) + z, lo, hi), rint half to even, NaN -> 0 (numpy's nan_to_num);
   |v / s| >= 2^30 saturates (|z|, |lo|, |hi| < 2^29), so the conversion to int32 is always exact */
static int32_t gq_fquant(float v, float s, int32_t z, int32_t lo, int32_t hi) {
    float r = v / s;
    int32_t q;
    if (r != r) {
        q = 0;
    } else if (r >= 0x1p30f) {
        q = 0x40000000;
    } else if (r <= -0x1p30f) {
        q = -0x40000000;
    } else {
        if (r >= 0.0f && r < 0x1p23f) r = (r + 0x1p23f) - 0x1p23f;
        if (r < 0.0f && r > -0x1p23f) r = -((-r + 0x1p23f) - 0x1p23f);
        q = (int32_t)r;
    }
    q += z;
    return q < lo ? lo : (q > hi ? hi : q);
}
