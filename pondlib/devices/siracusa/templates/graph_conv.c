## 2-D convolution, NCHW: y[b, o, oy, ox] = bias[o] + sum_{c, ky, kx} x[b, g C/G + c, oy sy + ky dy - pt,
## ox sx + kx dx - pl] w[o, c, ky, kx] over the window cells inside the input (zero padding), g = o / (O/G).
## Exact in $acc. x: $src (B, $c, $h, $w); weight $wt (O, $cg, $kh, $kw); y: $dst (B, $o, $ho, $wo).
for (int32_t b = 0; b < $batch; ++b) {
    for (int32_t o = 0; o < $o; ++o) {
        const int32_t c0 = (o / $og) * $cg;
        for (int32_t oy = 0; oy < $ho; ++oy) {
            for (int32_t ox = 0; ox < $wo; ++ox) {
                $acc acc = $bias;
                for (int32_t c = 0; c < $cg; ++c) {
                    for (int32_t ky = 0; ky < $kh; ++ky) {
                        const int32_t iy = oy * $sy + ky * $dy - $pt;
                        if (iy < 0 || iy >= $h) continue;
                        for (int32_t kx = 0; kx < $kw; ++kx) {
                            const int32_t ix = ox * $sx + kx * $dx - $pl;
                            if (ix < 0 || ix >= $w) continue;
                            acc += ($acc)$src[((b * $c + c0 + c) * $h + iy) * $w + ix] *
                                   ($acc)$wt[((o * $cg + c) * $kh + ky) * $kw + kx];
                        }
                    }
                }
                $dst[((b * $o + o) * $ho + oy) * $wo + ox] = ($out_type)acc;
            }
        }
    }
}
