## One int8 MLA layer, K -> N: acc_n = b_n + sum_k x_k W_kn (int64, exact; W row-major (K, N) in flash);
## in wrap mode acc wraps to acc_bits bits (the register); y_n = sat8(floor(acc_n / 2^shift)), then ReLU.
## The floor shift never right-shifts a negative number: ~((~acc) >> s) is floor(acc / 2^s) for acc < 0.
/* layer $label: $src[$k] -> $dst[$n], weights $w[$k][$n], shift $shift, relu $relu_text */
for (int32_t n = 0; n < $n; ++n) {
    int64_t acc = (int64_t)$b[n];
    for (int32_t k = 0; k < $k; ++k) acc += (int64_t)((int32_t)$src[k] * (int32_t)$w[k * $n + n]);
##if wrap
    acc = (int64_t)(((uint64_t)acc + (uint64_t)$half) & $mask) - $half; /* the $acc_bits-bit register */
##end
##if check
    if (acc < $lo || acc > $hi) overflow[0] = 1; /* DNNSim would raise here */
##end
##if shift_nonzero
    int64_t q = acc < 0 ? ~((~acc) >> $shift) : acc >> $shift;
##else
    int64_t q = acc;
##end
    if (q > 127) q = 127;
    if (q < -128) q = -128;
##if relu
    if (q < 0) q = 0;
##end
    $dst[n] = (int8_t)q;
##if record
    $acc_buf[n] = acc;
##end
}
