## iRMSNorm / iLayerNorm over rows of $n: mu = tdiv(sum x, N) (iLayerNorm, else 0), c = x - mu,
## sigma = isqrt(floor(sum c^2 / N) + 1), y = clip((tdiv(c w, sigma) + bias) >> $shift, $lo, $hi) with C's
## truncating division as tdiv. $w and $bias: C expressions of the column j. int64 throughout.
for (int32_t r = 0; r < $rows; ++r) {
    const int32_t base = r * $n;
    int64_t mu = 0, sq = 0;
##if center
    for (int32_t j = 0; j < $n; ++j) mu += $src[base + j];
    mu = mu / $n;
##end
    for (int32_t j = 0; j < $n; ++j) {
        const int64_t c = (int64_t)$src[base + j] - mu;
        sq += c * c;
    }
    const int64_t sigma = gq_isqrt(sq / $n + 1);
    for (int32_t j = 0; j < $n; ++j) {
        const int64_t c = (int64_t)$src[base + j] - mu;
        const int64_t t = gq_asr64(c * (int64_t)$w / sigma + (int64_t)$bias, $shift);
        $dst[base + j] = ($out_type)(t < $lo ? $lo : (t > $hi ? $hi : t));
    }
}
