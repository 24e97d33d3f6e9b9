## ITAPartialMax over rows of $n in $groups groups of $group: per group the running max m grows to the group's
## max c (the running sum shifted right by (c - m + 16) >> 5 first), the sum adds 256 >> ((m - x + 16) >> 5);
## then y = ($levels / S) >> ((m - x + 16) >> 5) (= ((n/2 - 1) 256) // S >> k). Every shift count and
## quotient is of nonnegatives (m >= every x of the row: whole groups only). int64 throughout.
for (int32_t r = 0; r < $rows; ++r) {
    const int32_t base = r * $n;
    int64_t m = -128, s = 0;
    for (int32_t g = 0; g < $groups; ++g) {
        const int32_t g0 = base + g * $group;
        int64_t c = $src[g0];
        for (int32_t j = 1; j < $group; ++j) if ((int64_t)$src[g0 + j] > c) c = $src[g0 + j];
        if (c > m) {
            s = gq_shr(s, (c - m + 16) >> 5);
            m = c;
        }
        for (int32_t j = 0; j < $group; ++j) s += gq_shr(256, (m - $src[g0 + j] + 16) >> 5);
    }
    const int64_t inv = s == 0 ? 0 : $levels / s;
    for (int32_t j = 0; j < $n; ++j) $dst[base + j] = ($out_type)(gq_shr(inv, (m - $src[base + j] + 16) >> 5));
}
