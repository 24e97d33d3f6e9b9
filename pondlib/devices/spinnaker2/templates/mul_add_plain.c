## mul_add(a, b, c) of the SNN update without fused multiply-add: two float32 roundings (the build uses
## -ffp-contract=off, so the compiler may not fuse them).
static float s2_mul_add(float a, float b, float c)
{
    const float p = a * b; /* rounded to float32 */
    return p + c;          /* rounded again */
}
