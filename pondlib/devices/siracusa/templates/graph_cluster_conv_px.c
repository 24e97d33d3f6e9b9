## One output row oy of channel o (batch b) of a Conv tile: y[b, o, oy, ox] = bias[o] + sum_{ky, kx, c}
## x[b, c0 + c, iy, ix] w[o, c, ky, kx] with iy = (gc_t0 + oy) $sy + ky $dy - $pt, ix = ox $sx + kx $dx - $pl over
## the cells inside the $h x $w input (zero padding), c0 the group's first input channel. The input tile $src
## holds $hin rows from gc_i0 of each of the $c input planes of each batch element (the tile's rows with their
## halo: plane stride $xs); the weight (O, $cg, $kh, $kw) and the bias are whole ($wt: the weight of channel c,
## wi the index of channel 0, channel stride kh kw). The channels are the innermost loop (exact in $acc, in any
## order); $store writes (or requantizes) acc into the output tile (B, O, gc_nr, $wo).
for (int32_t ox = 0; ox < $wo; ++ox) {
    $acc acc = $bias;
    for (int32_t ky = 0; ky < $kh; ++ky) {
        const int32_t iy = (gc_t0 + oy) * $sy + ky * $dy - $pt;
        if (iy < 0 || iy >= $h) continue;
        for (int32_t kx = 0; kx < $kw; ++kx) {
            const int32_t ix = ox * $sx + kx * $dx - $pl;
            if (ix < 0 || ix >= $w) continue;
            const int32_t xi = ((b * $c + c0) * $hin + (iy - gc_i0)) * $w + ix;
            const int32_t wi = (o * $cg * $kh + ky) * $kw + kx;
            for (int32_t c = 0; c < $cg; ++c) acc += ($acc)$src[xi + c * $xs] * ($acc)$wt;
        }
    }
    $store
}
