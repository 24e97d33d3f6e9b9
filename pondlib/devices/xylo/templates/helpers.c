## The integer helpers of the Xylo step (the equations: pondlib.devices.xylo.codegen's docstring).
/* Saturate to the 16-bit registers. */
static inline int32_t xy_sat16(int32_t v)
{
    return v > 32767 ? 32767 : (v < -32768 ? -32768 : v);
}

/* Two's-complement narrowing to 16 bits, portable (no implementation-defined conversion). */
static inline int32_t xy_wrap16(int32_t v)
{
    return (int32_t)(((uint32_t)v + 32768u) & 0xFFFFu) - 32768;
}

/* Bit-shift decay: floor(v / 2^d) for -32768 <= v <= 32767, 0 <= d <= 15, shifting only a non-negative
 * value (65536 is a multiple of 2^d, so the offset cancels exactly); 0 becomes sign(v). */
static inline int32_t xy_decay(int32_t v, int32_t d)
{
    int32_t r = (int32_t)(((uint32_t)(v + 65536)) >> d) - (int32_t)(65536u >> d);
    if (r == 0) r = (v > 0) - (v < 0);
    return r;
}

/* dv = wrap16(-decay(v, d)): only -(-32768) = 32768 wraps (to -32768). */
static inline int32_t xy_leak(int32_t v, int32_t d)
{
    int32_t dv = -xy_decay(v, d);
    return dv == 32768 ? -32768 : dv;
}
