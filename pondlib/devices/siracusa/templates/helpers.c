## The wrapping int32 helpers the layers use (only those some layer needs): every int32 wrap-around is computed
## in uint32_t and converted back without implementation-defined behaviour (module docstring of codegen.py).
##if mul
/* a * b modulo 2^32 (1u * keeps the product unsigned whatever the width of int) */
static uint32_t srq_mul(uint32_t a, uint32_t b) { return (uint32_t)(1u * a * b); }
##end
##if i32
/* the int32 whose two's-complement bits are u (no implementation-defined conversion) */
static int32_t srq_i32(uint32_t u) {
    return u < 0x80000000u ? (int32_t)u : -(int32_t)(0xFFFFFFFFu - u) - 1;
}
##end
##if asr
/* floor(t / 2^s), 0 <= s <= 31: the arithmetic right shift, written portably for negative t */
static int32_t srq_asr(int32_t t, int s) { return t >= 0 ? t >> s : -1 - ((-1 - t) >> s); }
##end
