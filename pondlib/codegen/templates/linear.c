## Linear n_in -> n_out, event-driven: y[j] = ((0 + x[i0] W[i0,j]) + x[i1] W[i1,j]) + ..., then + b[j], over the
## non-zero inputs i0 < i1 < ... only (a zero input adds nothing: the sum is the one of all inputs). Each input
## is tested once per step and, when non-zero, its weight row is added to every output: every output still
## adds its terms in ascending input order, from 0, so the result is the dense loop's bit for bit.
## $w holds W row-major (n_in, n_out): each input's row is contiguous. $load reads x[i] once (empty where x holds
## only 0 and 1); $term: the term input i adds to output j (x[i] W[i,j], or W[i,j] alone for 0/1 inputs: 1 W = W
## exactly). $bias: output j's bias (a literal or a constant indexed by j).
## Dense form (events false, a layer too small for the test to pay): every input's row is added, a zero one's
## terms being +-0, which leave every sum unchanged (the sum starts at +0 and is never -0; the weights are
## finite): the same values bit for bit.
##if events
/* $src[$n_in] -> $out[$n_out]; weights $w[$n_in][$n_out]; only the non-zero inputs */
##else
/* $src[$n_in] -> $out[$n_out]; weights $w[$n_in][$n_out]; every input (a small layer: no zero test) */
##end
POND_ROLLED for (int32_t j = 0; j < $n_out; ++j) $out[j] = 0.0f;
POND_ROLLED for (int32_t i = 0; i < $n_in; ++i) {
##if events
    if ($src[i] == 0) continue;
##end
    $load
    const float *wi = &$w[i * $n_out];
    for (int32_t j = 0; j < $n_out; ++j) $out[j] = $out[j] + $term;
}
##if has_bias
POND_ROLLED for (int32_t j = 0; j < $n_out; ++j) $out[j] = $out[j] + $bias;
##end
