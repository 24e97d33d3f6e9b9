## A stand-alone RequantShift layer of $n channels: each value requantized ($requant computes int32_t r).
/* $src[$n] -> $dst[$n] ($out_type) */
for (int32_t n = 0; n < $n; ++n) {
    $requant
    $dst[n] = ($out_type)r;
}
