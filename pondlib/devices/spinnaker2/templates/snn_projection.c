## The spikes of one source into one target population, synapse rows r0..r1 - 1 (one per source neuron and PE
## slice). Row r: count = source[syn_pre[r]] and the words syn_words[syn_ptr[r] .. syn_ptr[r + 1]); each word
## holds the target index within the slice that starts at neuron syn_base[r], the delay (when the format has
## one), the sign bit (1 = inhibitory) and |w|; count * |w| goes into slot (tick + 1 + delay) mod slots of the
## target's excitatory or inhibitory ring. $word_layout: the bit fields, for the comment.
/* spikes of $label ($n_source sources) into ${p}_buf_exc / ${p}_buf_inh [$slots][$n]: rows $r0..$last
 * synapse word: $word_layout */
for (int32_t r = $r0; r < $r1; ++r) {
    const int64_t cnt = (int64_t)$source[syn_pre[r]];
    if (cnt == 0) continue;
    for (int32_t k = syn_ptr[r]; k < syn_ptr[r + 1]; ++k) {
        const uint32_t w = syn_words[k];
##if delays
        const int32_t at = (slot + 1 + (int32_t)((w >> $index_bits) & ${delay_mask}u)) % $slots;
##else
        const int32_t at = (slot + 1) % $slots;
##end
        const int32_t idx = at * $n + syn_base[r] + (int32_t)(w & ${index_mask}u);
        const int64_t m = cnt * (int64_t)((w >> $weight_shift) & ${max_weight}u);
        if ((w >> $inh_shift) & 1u) ${p}_buf_inh[idx] += m; else ${p}_buf_exc[idx] += m;
    }
}
