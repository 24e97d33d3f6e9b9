## QSoftmax, a float32 island (graph_codegen_float): $outer x $inner rows of $n values at stride $inner (row
## start o $span + i). m = max x (as $itype), e_j = $table[m - x_j] (float32 exp table, index $index of k),
## S = e_0 then S = S + e_j left to right, y_j = gq_fquant(e_j / S, $quant).
for (int32_t o = 0; o < $outer; ++o) {
    for (int32_t i = 0; i < $inner; ++i) {
        const int32_t base = o * $span + i;
        $itype m = ($itype)$src[base];
        for (int32_t j = 1; j < $n; ++j) {
            const $itype v = ($itype)$src[base + j * $inner];
            if (v > m) m = v;
        }
        float s = 0.0f;
        for (int32_t j = 0; j < $n; ++j) {
            const $itype k = m - ($itype)$src[base + j * $inner];
            const float e = $table[$index];
            s = j == 0 ? e : s + e;
        }
        for (int32_t j = 0; j < $n; ++j) {
            const $itype k = m - ($itype)$src[base + j * $inner];
            const float p = $table[$index] / s;
            $dst[base + j * $inner] = ($out_type)gq_fquant(p, $quant);
        }
    }
}
