## mul_add(a, b, c) of the SNN update with LIFOptions(fma=True): fmaf with one rounding, as the Cortex-M4F's
## vfma.f32 computes it, without libm.
/* fmaf(a, b, c) with one rounding, without libm: the double product is exact (24 + 24 bits),
 * the double sum and its exact error (TwoSum), round to odd in double, then one rounding to float. */
static float s2_mul_add(float a, float b, float c)
{
    const double p = (double)a * (double)b;
    const double cd = (double)c;
    double s = p + cd;
    const double bp = s - p;
    const double e = (p - (s - bp)) + (cd - bp);
    if (e != 0.0) {
        uint64_t bits;
        memcpy(&bits, &s, sizeof bits);
        if ((bits & 1u) == 0u) {
            if ((e > 0.0) == (s > 0.0)) bits += 1u; else bits -= 1u;
            memcpy(&s, &bits, sizeof s);
        }
    }
    return (float)s;
}
