## ITAMax over rows of $n: k = (max - x + 16) >> 5 (>= 0), S = sum(256 >> k), y = (($levels - 1) 256) / S >> k
## in [0, $levels - 1] (floors of nonnegatives; unsigned output). int64 throughout.
for (int32_t r = 0; r < $rows; ++r) {
    const int32_t base = r * $n;
    int64_t mx = $src[base];
    for (int32_t j = 1; j < $n; ++j) if ((int64_t)$src[base + j] > mx) mx = $src[base + j];
    int64_t s = 0;
    for (int32_t j = 0; j < $n; ++j) s += gq_shr(256, (mx - $src[base + j] + 16) >> 5);
    const int64_t inv = ($levels - 1) * 256 / s;
    for (int32_t j = 0; j < $n; ++j) $dst[base + j] = ($out_type)(gq_shr(inv, (mx - $src[base + j] + 16) >> 5));
}
