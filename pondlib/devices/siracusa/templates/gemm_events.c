## QGemm K -> O, event-driven: the indices of the non-zero inputs are gathered once into $ev[] ($ev_type); then
## acc[o] = W32(bias[o] + sum over events a of x[ev[a]] w[ev[a], o]), only the events' weights read (an integer
## sum: the order of the terms does not change it). spikes: the input is 0/1, so no multiplication; else, at a
## step where more than $dense_eighths/8 of the inputs are non-zero, the dense loop of gemm.c runs instead (the
## same sum; cheaper there than the indirection). The weight is stored transposed, $w[O][K] row-major, as in
## gemm.c. exact / $bias / $finish: as in gemm.c.
/* $src[$k] -> $dst[$o]; weights $w[$o][$k]; events: the non-zero inputs, gathered once */
int32_t ne = 0;
for (int32_t k = 0; k < $k; ++k) {
    if ($src[k] != 0) $ev[ne++] = ($ev_type)k;
}
##if spikes
##else
const int dense = 8 * ne > $dense_eighths * $k; /* this step's density above $dense_eighths/8: every input */
##end
for (int32_t o = 0; o < $o; ++o) {
    const int8_t *wo = &$w[o * $k];
##if exact
    int32_t acc = $bias;
##if spikes
    for (int32_t ei = 0; ei < ne; ++ei) acc += wo[$ev[ei]];
##else
    if (dense) {
        for (int32_t k = 0; k < $k; ++k) acc += (int32_t)$src[k] * wo[k];
    } else {
        for (int32_t ei = 0; ei < ne; ++ei) acc += (int32_t)$src[$ev[ei]] * wo[$ev[ei]];
    }
##end
##else
    uint32_t acc = $bias;
##if spikes
    for (int32_t ei = 0; ei < ne; ++ei) acc += (uint32_t)(int32_t)wo[$ev[ei]];
##else
    if (dense) {
        for (int32_t k = 0; k < $k; ++k) acc += srq_mul((uint32_t)$src[k], (uint32_t)wo[k]);
    } else {
        for (int32_t ei = 0; ei < ne; ++ei) acc += srq_mul((uint32_t)$src[$ev[ei]], (uint32_t)wo[$ev[ei]]);
    }
##end
##end
    $finish
}
