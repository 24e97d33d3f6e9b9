## MaxPool / AveragePool over 2-D planes ($planes = N C planes of $h x $w; 1-D pools have $h = 1): window
## (oy, ox) reads x[iy = oy $sy + ky $dy - $pt, ix = ox $sx + kx $dx - $pl] for the cells inside the input
## (padding never wins a max); the average is floor((2 s + cnt) / (2 cnt)) with cnt the inside cells (plus the
## explicit pads, the box [-$pt, $ph) x [-$pl, $pw), when count_include_pad). Sums exact in $acc.
for (int32_t p = 0; p < $planes; ++p) {
    for (int32_t oy = 0; oy < $ho; ++oy) {
        for (int32_t ox = 0; ox < $wo; ++ox) {
            $acc s = $init;
            int32_t cnt = 0;
            for (int32_t ky = 0; ky < $kh; ++ky) {
                const int32_t iy = oy * $sy + ky * $dy - $pt;
                for (int32_t kx = 0; kx < $kw; ++kx) {
                    const int32_t ix = ox * $sx + kx * $dx - $pl;
                    if (iy >= 0 && iy < $h && ix >= 0 && ix < $w) {
                        const $acc v = $src[(p * $h + iy) * $w + ix];
##if is_max
                        if (v > s) s = v;
##else
                        s += v;
##end
                        ++cnt;
                    }
##if include
                    else if (iy >= -$pt && iy < $ph && ix >= -$pl && ix < $pw) ++cnt;
##end
                }
            }
##if is_max
            (void)cnt;
            $dst[(p * $ho + oy) * $wo + ox] = ($out_type)s;
##else
            $dst[(p * $ho + oy) * $wo + ox] = ($out_type)gq_fdiv64(2 * (int64_t)s + cnt, 2 * (int64_t)cnt);
##end
        }
    }
}
