## Linear n_in -> n_out: y[j] = ((0 + x[0] W[0,j]) + x[1] W[1,j]) + ..., then + b[j]; inputs equal to 0 are
## skipped (the sum is the same). $w holds W transposed, row-major (n_out, n_in): each output's row is
## contiguous. $bias: output j's bias (a literal or a constant indexed by j).
/* $src[$n_in] -> $out[$n_out]; weights $w[$n_out][$n_in] */
for (int32_t j = 0; j < $n_out; ++j) {
    const float *wj = &$w[j * $n_in];
    float acc = 0.0f;
    for (int32_t i = 0; i < $n_in; ++i)
        if ($src[i] != 0.0f) acc = acc + $src[i] * wj[i];
##if has_bias
    acc = acc + $bias;
##end
    $out[j] = acc;
}
