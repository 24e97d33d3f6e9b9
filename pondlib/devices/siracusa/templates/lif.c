## QLIF of N neurons: t = W32(W32(v beta) + W32(I in_mul)) + add, then $shift_clamp rounds, shifts and clamps r
## to the state width; z = $spike (r against the threshold, fixed at generation where it cannot matter); on a
## spike, r = W32(r - thr) (subtract) or 0 (zero). $beta, $in_mul, $add, $thr: literals or constants.
/* $src[$n] in; state $v[$n] ($v_type); spikes $dst[$n] (0 or 1) */
for (int32_t n = 0; n < $n; ++n) {
    uint32_t t = srq_mul((uint32_t)$v[n], $beta) + srq_mul((uint32_t)$src[n], $in_mul);
    t += $add;
    $shift_clamp
    const int z = $spike;
##if reset_zero
    if (z) r = 0;
##else
    if (z) r = srq_i32((uint32_t)r - $thr);
##end
    $v[n] = ($v_type)r;
    $dst[n] = (uint8_t)z;
}
