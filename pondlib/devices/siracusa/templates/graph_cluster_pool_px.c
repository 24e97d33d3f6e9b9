## One output row oy of plane p of a MaxPool / AveragePool tile: window (oy, ox) reads x[iy = (gc_t0 + oy) $sy +
## ky $dy - $pt, ix = ox $sx + kx $dx - $pl] for the cells inside the $h x $w input ($update: the max or the sum;
## padding never wins a max; $pad_count counts the explicit pads of count_include_pad), then $value: the max, or
## the average floor((2 s + cnt) / (2 cnt)). The input tile $src holds $hin rows from gc_i0 of each plane (the
## tile's rows with their halo); the output tile $dst is (planes, gc_nr, $wo). Sums exact in $acc.
for (int32_t ox = 0; ox < $wo; ++ox) {
    $acc s = $init;
    int32_t cnt = 0;
    for (int32_t ky = 0; ky < $kh; ++ky) {
        const int32_t iy = (gc_t0 + oy) * $sy + ky * $dy - $pt;
        for (int32_t kx = 0; kx < $kw; ++kx) {
            const int32_t ix = ox * $sx + kx * $dx - $pl;
            if (iy >= 0 && iy < $h && ix >= 0 && ix < $w) {
                const $acc v = $src[(p * $hin + (iy - gc_i0)) * $w + ix];
                $update
                ++cnt;
            }
            $pad_count
        }
    }
    (void)cnt;
    $dst[(p * gc_nr + oy) * $wo + ox] = ($out_type)($value);
}
