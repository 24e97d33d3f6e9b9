## 2-D convolution, event-driven (a 1-D one is 2-D of height 1), zero padding, stride, dilation, groups:
##   y[o,i,j] = (sum over c, u, v ascending of x[c0 + c, i s_h + u d_h - p_h, j s_w + v d_w - p_w] W[o,c,u,v]) + b[o]
## with c0 = (o / out_per_group) in_per_group. Each input is tested once per step; a non-zero input (c, r, q) adds
## its term to every output it reaches: the rows i = (r + p_h - u d_h) / s_h and columns j = (q + p_w - v d_w) / s_w
## that are whole and in range, every output channel of its group. Inputs are visited in (c, r, q) order, so
## each output still adds its terms in ascending (c, u, v), from 0: the dense loop's sum bit for bit (zero inputs
## and padding add nothing). Maps flat (channel, row, column); $w holds W as [in_per_group][kh][kw][c_out].
## $src_t: x's C type; $load reads x once (empty for 0/1 inputs); $term: the term for output channel o (x W, or W for 0/1 inputs);
## $bias: output channel o's bias (a literal or a constant indexed by o).
/* $src[$c_in][$h_in][$w_in] -> $out[$c_out][$h_out][$w_out]; weights $w[$cpg][$kh][$kw][$c_out] */
POND_ROLLED for (int32_t t = 0; t < $c_out * $h_out * $w_out; ++t) $out[t] = 0.0f;
POND_ROLLED for (int32_t c = 0; c < $c_in; ++c) {
    const int32_t o0 = (c / $cpg) * $opg;
    const float *wc = &$w[(c % $cpg) * $kh * $kw * $c_out];
    POND_ROLLED for (int32_t r = 0; r < $h_in; ++r)
        POND_ROLLED for (int32_t q = 0; q < $w_in; ++q) {
            const $src_t *xp = &$src[(c * $h_in + r) * $w_in + q];
            if (*xp == 0) continue;
            $load
            POND_ROLLED for (int32_t u = 0; u < $kh; ++u) {
                const int32_t ti = r + $pad_h - u * $dil_h;
                if (ti < 0 || ti % $stride_h != 0 || ti / $stride_h >= $h_out) continue;
                POND_ROLLED for (int32_t v = 0; v < $kw; ++v) {
                    const int32_t tj = q + $pad_w - v * $dil_w;
                    if (tj < 0 || tj % $stride_w != 0 || tj / $stride_w >= $w_out) continue;
                    float *yp = &$out[(o0 * $h_out + ti / $stride_h) * $w_out + tj / $stride_w];
                    const float *wv = &wc[(u * $kw + v) * $c_out + o0];
                    for (int32_t o = 0; o < $opg; ++o) yp[o * $h_out * $w_out] = yp[o * $h_out * $w_out] + $term;
                }
            }
        }
}
##if has_bias
POND_ROLLED for (int32_t o = 0; o < $c_out; ++o)
    POND_ROLLED for (int32_t t = 0; t < $h_out * $w_out; ++t)
        $out[o * $h_out * $w_out + t] = $out[o * $h_out * $w_out + t] + $bias;
##end
