## Threshold of N values: y[n] = x[n] > thr[n] (1 or 0); $thr is a literal or a constant indexed by n.
POND_ROLLED for (int32_t n = 0; n < $n; ++n) $out[n] = $src[n] > $thr ? 1.0f : 0.0f; /* $src[$n] -> $out[$n] */
