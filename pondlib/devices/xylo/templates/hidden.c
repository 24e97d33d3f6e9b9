## 4. Hidden neurons, ids ascending (alias targets are higher ids): for synapse q (1 or 2)
##   Isyn_q -= decay(Isyn_q, dash_syn_q);  dv = sat16(wrap16(-decay(Vmem, dash_mem)) + Isyn + Isyn2)
##   dv = sat16(dv + bias) with the bias;  Vmem = sat16(Vmem + dv)
##   n = Spikes (alias copies received); while Vmem >= threshold and n < $max_spikes: n += 1, Vmem -= threshold
##   Spikes = n, and with an alias Spikes[alias] = min(Spikes[alias] + n, $max_spikes).
## Event-driven: a quiescent neuron (Isyn = Isyn2 = Vmem = 0, no spike copies, threshold > 0, no bias) stays
## all 0 (decay(0) = 0, no spike), so it is skipped ($quiet: that test): the cost follows the active neurons.
/* 4. hidden neurons: Vmem[$n], Isyn[$n], Isyn2[$n], Spikes[$n] (ids ascending; alias targets are higher ids) */
for (int32_t i = 0; i < $n; ++i) {
    const int32_t i1 = Isyn[i];
##if two_synapses
    const int32_t i2 = Isyn2[i];
##end
    int32_t v = Vmem[i];
    if ($quiet) continue; /* quiescent: stays all 0 */
    int32_t s = i1 - xy_decay(i1, dash_syn[i]);
    Isyn[i] = (int16_t)s;
##if two_synapses
    const int32_t s2 = i2 - xy_decay(i2, dash_syn_2[i]);
    Isyn2[i] = (int16_t)s2;
    s += s2;
##end
    int32_t dv = xy_sat16(xy_leak(v, dash_mem[i]) + s);
##if bias
    dv = xy_sat16(dv + bias[i]);
##end
    v = xy_sat16(v + dv);
    int32_t n = Spikes[i];
    const int32_t th = threshold[i];
    if (v >= th && n < $max_spikes) {
        if (th > 0) {
            /* the spike loop in closed form: v / th spikes, capped at the 5-bit counter */
            int32_t cnt = v / th;
            if (cnt > $max_spikes - n) cnt = $max_spikes - n;
            n += cnt;
            v -= cnt * th;
        } else {
            /* th <= 0: each subtraction raises v and wraps at 16 bits: count until the cap or the wrap */
            while (v >= th && n < $max_spikes) { n += 1; v = xy_wrap16(v - th); }
        }
    }
    Vmem[i] = (int16_t)v;
##if aliases
    if (n > 0) {
        Spikes[i] = (uint8_t)n;
        const int32_t tgt = aliases[i];
        if (tgt >= 0) {
            const int32_t nt = Spikes[tgt] + n;
            Spikes[tgt] = (uint8_t)(nt < $max_spikes ? nt : $max_spikes);
        }
    }
##else
    Spikes[i] = (uint8_t)n;
##end
}
