## 1. Input events: for each channel c ascending with n = min(x[c], $max_input) > 0, every input projection adds
## n W_in_q[c, :] to its synapse q ($projections: one accumulation per non-empty projection, reading c and n).
/* 1. input events x[$n_in] (channels ascending; the 4-bit counter clips at $max_input) */
for (int32_t c = 0; c < $n_in; ++c) {
    int32_t n = x[c];
    if (n == 0) continue;
    if (n > $max_input) n = $max_input;
    $projections
}
