## 2-D convolution, direct loops (a 1-D one is 2-D of height 1), zero padding, stride, dilation, groups:
##   y[o,i,j] = (sum over c, u, v ascending of x[c0 + c, i s_h + u d_h - p_h, j s_w + v d_w - p_w] W[o,c,u,v]) + b[o]
## with c0 = (o / out_per_group) in_per_group; zero inputs skipped (the sum is the same); maps flat (channel,
## row, column). $bias: output channel o's bias (a literal or a constant indexed by o).
/* $src[$c_in][$h_in][$w_in] -> $out[$c_out][$h_out][$w_out]; weights $w[$c_out][$cpg][$kh][$kw] */
for (int32_t o = 0; o < $c_out; ++o) {
    const int32_t c0 = (o / $opg) * $cpg;
    for (int32_t i = 0; i < $h_out; ++i) {
        for (int32_t j = 0; j < $w_out; ++j) {
            float acc = 0.0f;
            for (int32_t c = 0; c < $cpg; ++c)
                for (int32_t u = 0; u < $kh; ++u) {
                    const int32_t r = i * $stride_h + u * $dil_h - $pad_h;
                    if (r < 0 || r >= $h_in) continue;
                    for (int32_t v = 0; v < $kw; ++v) {
                        const int32_t q = j * $stride_w + v * $dil_w - $pad_w;
                        if (q < 0 || q >= $w_in) continue;
                        const float xin = $src[((c0 + c) * $h_in + r) * $w_in + q];
                        if (xin != 0.0f) acc = acc + xin * $w[((o * $cpg + c) * $kh + u) * $kw + v];
                    }
                }
##if has_bias
            acc = acc + $bias;
##end
            $out[(o * $h_out + i) * $w_out + j] = acc;
        }
    }
}
