## iSoftmax (I-BERT exponential) over rows of $n: t = x - max <= 0, z = min(-t / log2, 31) (-t >= 0: C's
## division is the floor), p = t + z log2, e = (A (p + B)^2 + C) >> z (>= 0), y = e ($levels - 1) / sum(e)
## (floor of nonnegatives; 0 where the sum is 0, as numpy). int64 throughout.
for (int32_t r = 0; r < $rows; ++r) {
    const int32_t base = r * $n;
    int64_t mx = $src[base];
    for (int32_t j = 1; j < $n; ++j) if ((int64_t)$src[base + j] > mx) mx = $src[base + j];
    int64_t sum = 0;
    for (int32_t pass = 0; pass < 2; ++pass) {
        for (int32_t j = 0; j < $n; ++j) {
            const int64_t t = (int64_t)$src[base + j] - mx;
            int64_t z = -t / $log2;
            if (z > 31) z = 31;
            const int64_t p = t + z * $log2 + $b;
            const int64_t e = ($a * p * p + $c) >> z;
            if (pass == 0) sum += e;
            else $dst[base + j] = ($out_type)(sum == 0 ? 0 : e * ($levels - 1) / sum);
        }
    }
}
