## The events $ev[0 .. ne) of one source into one target population: the synapse rows of source neuron j are
## syn_first[$first + j] .. syn_first[$first + j + 1] - 1 (one per PE slice of the target); row r holds the
## words syn_words[syn_ptr[r] .. syn_ptr[r + 1]), each with the target index within the slice that starts at
## neuron syn_base[r], the delay (when the format has one), the sign bit (1 = inhibitory) and |w|;
## count * |w| goes into slot (tick + 1 + delay) mod slots of the target's excitatory or inhibitory ring.
## $word_layout: the bit fields, for the comment.
/* spikes of $label into ${p}_buf_exc / ${p}_buf_inh [$slots][$n]: rows from syn_first[$first + j]
 * synapse word: $word_layout */
for (int32_t ei = 0; ei < ne; ++ei) {
    const int32_t j = $ev[ei];
    const int64_t cnt = (int64_t)$source[j];
    for (int32_t r = syn_first[$first + j]; r < syn_first[$first + j + 1]; ++r) {
        const int32_t base = syn_base[r];
        for (int32_t k = syn_ptr[r]; k < syn_ptr[r + 1]; ++k) {
            const uint32_t w = syn_words[k];
##if delays
            int32_t at = slot + 1 + (int32_t)((w >> $index_bits) & ${delay_mask}u); /* < 2 slots: one wrap */
            if (at >= $slots) at -= $slots;
##else
            const int32_t at = (slot + 1) % $slots;
##end
            const int32_t idx = at * $n + base + (int32_t)(w & ${index_mask}u);
            const int64_t m = cnt * (int64_t)((w >> $weight_shift) & ${max_weight}u);
            if ((w >> $inh_shift) & 1u) ${p}_buf_inh[idx] += m; else ${p}_buf_exc[idx] += m;
        }
    }
}
