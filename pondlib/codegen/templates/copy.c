## A copy of N values: dst[i] = src[i].
/* $src[$n] -> $dst[$n] */
POND_ROLLED for (int32_t i = 0; i < $n; ++i) $dst[i] = $src[i];
