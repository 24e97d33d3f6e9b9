## QConv2d over the NHWC input, zero padding, stride, groups: acc[oh, ow, o] = W32(bias[o] + sum over ki, kj, c of
## x[oh s - p + ki, ow s - p + kj, g cg + c] w[o, ki, kj, c]) with g = o / (O / groups); the weight is stored
## (O, kh, kw, C/groups). exact / wrapping accumulator as for QGemm; $bias: a literal or a constant indexed by o.
## Output rows $oh0 .. $oh1 (0 .. H_out for the whole layer; a core's share of a tile in the cluster C, whose
## $finish indexes its output from the share's first row).
/* $src[$h][$w][$c] -> $dst[rows][$wo][$o] (HWC); weights $wt[$o][$kh][$kw][$cg] */
for (int32_t oh = $oh0; oh < $oh1; ++oh)
for (int32_t ow = 0; ow < $wo; ++ow)
for (int32_t o = 0; o < $o; ++o) {
    const int32_t g = o / $og;
##if exact
    int32_t acc = $bias;
##else
    uint32_t acc = $bias;
##end
    for (int32_t ki = 0; ki < $kh; ++ki) {
        const int32_t ih = oh * $stride - $pad + ki;
        if (ih < 0 || ih >= $h) continue;
        for (int32_t kj = 0; kj < $kw; ++kj) {
            const int32_t iw = ow * $stride - $pad + kj;
            if (iw < 0 || iw >= $w) continue;
##if exact
            for (int32_t c = 0; c < $cg; ++c)
                acc += (int32_t)$src[(ih * $w + iw) * $c + g * $cg + c]
                       * $wt[((o * $kh + ki) * $kw + kj) * $cg + c];
##else
            for (int32_t c = 0; c < $cg; ++c)
                acc += srq_mul((uint32_t)$src[(ih * $w + iw) * $c + g * $cg + c],
                               (uint32_t)$wt[((o * $kh + ki) * $kw + kj) * $cg + c]);
##end
        }
    }
    $finish
}
