## The LIF update of one population (p_<field>: its arrays; the equations: the module docstring of codegen.py):
##   E, H = this slot's excitatory and inhibitory sums (int64, exact), then the slot is cleared;
##   lif: I = (float)(E - H); lif_curr_exp: i_exc = mul_add(exc_decay, i_exc, E), i_inh likewise, I = i_exc - i_inh;
##   not refractory: v' = mul_add(alpha, v, first) + second ((I, i_offset) input first, else (i_offset, I)),
##   spike = v' > (or >=) threshold, on a spike v' = v' - threshold or v_reset and refrac = t_refrac;
##   refractory: refrac -= 1, no spike.
/* population $label: $n neurons; rings ${p}_buf_exc / ${p}_buf_inh [$slots][$n] slot-major */
for (int32_t n = 0; n < $n; ++n) {
    const int64_t e = ${p}_buf_exc[slot * $n + n], h = ${p}_buf_inh[slot * $n + n];
    ${p}_buf_exc[slot * $n + n] = 0;
    ${p}_buf_inh[slot * $n + n] = 0;
##if current
    ${p}_i_exc[n] = s2_mul_add(${p}_exc_decay[n], ${p}_i_exc[n], (float)e);
    ${p}_i_inh[n] = s2_mul_add(${p}_inh_decay[n], ${p}_i_inh[n], (float)h);
    const float cur = ${p}_i_exc[n] - ${p}_i_inh[n];
##else
    const float cur = (float)(e - h);
##end
    int32_t s = 0;
    if (${p}_refrac[n] == 0) {
##if input_first
        float vn = s2_mul_add(${p}_alpha[n], ${p}_v[n], cur) + ${p}_i_offset[n];
##else
        float vn = s2_mul_add(${p}_alpha[n], ${p}_v[n], ${p}_i_offset[n]) + cur;
##end
        s = vn $compare ${p}_threshold[n];
        if (s) {
##if reset_to_v_reset
            vn = ${p}_v_reset[n];
##else
            vn = vn - ${p}_threshold[n];
##end
            ${p}_refrac[n] = ${p}_t_refrac[n];
        }
        ${p}_v[n] = vn;
    } else {
        ${p}_refrac[n] -= 1;
    }
    ${p}_spikes[n] = s;
##if record
    ${p}_i_syn[n] = cur;
    ${p}_input[n] = e - h;
##else
    (void)cur;
##end
}
