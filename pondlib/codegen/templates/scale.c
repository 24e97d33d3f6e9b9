## Scale of N values: y[n] = x[n] s[n]; $scale is a literal or a constant indexed by n.
POND_ROLLED for (int32_t n = 0; n < $n; ++n) $out[n] = $src[n] * $scale; /* $src[$n] -> $out[$n] */
