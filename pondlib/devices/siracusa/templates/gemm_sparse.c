## QGemm K -> O with compressed rows: for input k, $cnt[k] non-zero weights, their outputs $post[] and values
## $wv[] (in k order). The accumulators $acc[O] start at the bias; each non-zero input k adds x[k] w[k, o] for
## its non-zero weights only (integer sums: the order of the terms does not change them); then each output o
## is finished from $acc[o] ($finish, as in gemm.c). exact: int32_t sums, else uint32_t modulo 2^32.
/* $src[$k] -> $dst[$o]; compressed rows $cnt[$k] / $post[] / $wv[]; accumulators $acc[$o] */
for (int32_t o = 0; o < $o; ++o) $acc[o] = $bias;
for (int32_t k = 0, p = 0; k < $k; ++k) {
    const int32_t end = p + $cnt[k];
##if spikes
    if ($src[k] == 0) { p = end; continue; }
    for (; p < end; ++p) $acc[$post[p]] += ($acc_type)(int32_t)$wv[p];
##else
    const $acc_type xk = ($acc_type)$src[k];
    if (xk == 0) { p = end; continue; }
##if exact
    for (; p < end; ++p) $acc[$post[p]] += xk * $wv[p];
##else
    for (; p < end; ++p) $acc[$post[p]] += srq_mul(xk, (uint32_t)$wv[p]);
##end
##end
}
for (int32_t o = 0; o < $o; ++o) {
    const $acc_type acc = $acc[o];
    $finish
}
