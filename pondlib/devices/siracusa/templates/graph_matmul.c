## One (M, K) x (K, N) product of a batch: $dst[$doff + m N + n] = sum_k $a[$aoff + m K + k] $b[$boff + k N + n]
## accumulated exactly in $acc (its bound comes from the range analysis); $result is the stored C expression of
## acc per (m, n) (acc, or Gemm's alpha acc + beta C). A and B strides: ($ams, $aks) and ($bks, $bns), so Gemm's
## transposes are reads.
for (int32_t m = 0; m < $m; ++m) {
    for (int32_t n = 0; n < $n; ++n) {
        $acc acc = 0;
        for (int32_t k = 0; k < $k; ++k) acc += ($acc)$a[$aoff + m * $ams + k * $aks] * ($acc)$b[$boff + k * $bks + n * $bns];
        $dst[$doff + m * $n + n] = ($out_type)($result);
    }
}
