## 5. Output neurons: the hidden update with one synapse and the output parameters, at most one spike
## (y[o] = 0 or 1), no aliases.
/* 5. output neurons: Vmem_out[$n], Isyn_out[$n] -> y[$n] (one synapse, at most one spike) */
for (int32_t o = 0; o < $n; ++o) {
    const int32_t s = Isyn_out[o] - xy_decay(Isyn_out[o], dash_syn_out[o]);
    Isyn_out[o] = (int16_t)s;
    int32_t v = Vmem_out[o];
    int32_t dv = xy_sat16(xy_leak(v, dash_mem_out[o]) + s);
##if bias
    dv = xy_sat16(dv + bias_out[o]);
##end
    v = xy_sat16(v + dv);
    const int32_t th = threshold_out[o];
    if (v >= th) { y[o] = 1; v = xy_wrap16(v - th); } else { y[o] = 0; }
    Vmem_out[o] = (int16_t)v;
}
