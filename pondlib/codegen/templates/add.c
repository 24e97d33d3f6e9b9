## Element-wise sum of several inputs, left to right: y[i] = ((s0[i] + s1[i]) + s2[i]) + ...; $terms lists them.
/* $n values: $out[$n] = the inputs added left to right */
POND_ROLLED for (int32_t i = 0; i < $n; ++i) $out[i] = $terms;
