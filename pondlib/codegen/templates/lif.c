## LIF of N neurons with k synapses each (pondlib.nn.LIF), channel c = n k + q:
##   a[c] = x[c] + sum_m s[m] W_rec[m,c] (m ascending, zero spikes skipped); I[c] = (I[c] + a[c]) beta[c]
##   P = (V alpha + (I[n,0] + ... + I[n,k-1])) + bias; s = P >= thr ? min(floor(P / thr), cap) : 0; V = P - s thr
## $beta, $alpha, $bias, $thr: per channel (index c) or per neuron (index n), literals or constants;
## $wrec: W_rec transposed, (N k, N) row-major; $syn_sum: the k synapses of neuron n, added in order.
## Recurrent input, event-driven: last step's non-zero spikes are gathered once ($gather, into $ev) and each
## channel adds only theirs, in ascending m ($rec_term: s[m] W_rec[m,c], or W_rec[m,c] when s is 0 or 1).
## $spk_t: the C type of the spike counts (uint8_t / uint16_t when the cap allows, else float).
##if recurrent
/* the recurrent events: last step's non-zero spikes of $spikes[$n] */
$gather
##end
/* synapses: $src[$nk] in, $isyn[$nk] (neuron-major, k = $k) */
POND_ROLLED for (int32_t c = 0; c < $nk; ++c) {
    float in = $src[c];
##if recurrent
    /* recurrent input: last step's spikes through $wrec[$nk][$n], the active ones only */
    const float *wc = &$wrec[c * $n];
    float r = 0.0f;
    for (int32_t e = 0; e < n_ev; ++e) {
        const int32_t m = $ev[e];
        r = r + $rec_term;
    }
    in = in + r;
##end
    $isyn[c] = ($isyn[c] + in) * $beta;
}
/* neurons: $vmem[$n] (after reset), $spikes[$n] (spike counts, at most $cap) */
POND_ROLLED for (int32_t n = 0; n < $n; ++n) {
    const float syn = $syn_sum;
    const float v = $vmem[n] * $alpha + syn + $bias;
    const float th = $thr;
    float s = 0.0f;
    if (v >= th) {
        const float u = v / th;
        s = u >= $cap ? $cap : (float)(int32_t)u;
    }
    $vmem[n] = v - s * th;
    $spikes[n] = ($spk_t)s;
}
