## QGemm K -> O: acc[o] = W32(bias[o] + sum_k x[k] w[k, o]); the weight is stored transposed, $w[O][K] row-major.
## exact: the accumulator provably stays within int32 over the input's range (plain int32_t); else uint32_t
## modulo 2^32, equal to the simulator's exact sum wrapped once. $bias: a literal or a constant indexed by o.
/* $src[$k] -> $dst[$o]; weights $w[$o][$k] */
for (int32_t o = 0; o < $o; ++o) {
##if exact
    int32_t acc = $bias;
    for (int32_t k = 0; k < $k; ++k) acc += (int32_t)$src[k] * $w[o * $k + k];
##else
    uint32_t acc = $bias;
    for (int32_t k = 0; k < $k; ++k) acc += srq_mul((uint32_t)$src[k], (uint32_t)$w[o * $k + k]);
##end
    $finish
}
