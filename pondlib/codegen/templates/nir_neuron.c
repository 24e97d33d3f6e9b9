## A NIR neuron group of N neurons (NIRLIF, CubaLIF, LI, CubaLI, IF, Integrator of pondlib.nn):
##   I = a_syn I + g_syn x (with a synapse); v = (a_mem V + g_mem d) + c_mem, d = I with a synapse, else x;
##   with a threshold: z = v > thr, then V = v - z thr (subtract), v (1 - z) (zero) or v (1 - z) + z v_reset.
## Each coefficient is a literal or a constant indexed by n; $drive is d.
/* $src[$n] in; membrane $vmem[$n] (after reset) */
POND_ROLLED for (int32_t n = 0; n < $n; ++n) {
##if synapse
    /* synaptic current $isyn[$n] */
    $isyn[n] = $a_syn * $isyn[n] + $g_syn * $src[n];
##end
    const float v = $a_mem * $vmem[n] + $g_mem * $drive + $c_mem;
##if spiking
    /* spikes $spikes[$n] (0 or 1, one byte each) */
    const int32_t fire = v > $thr;
    const float z = fire ? 1.0f : 0.0f;
##if reset_subtract
    $vmem[n] = v - z * $thr;
##end
##if reset_zero
    $vmem[n] = v * (1.0f - z);
##end
##if reset_to_value
    $vmem[n] = v * (1.0f - z) + z * $v_reset;
##end
    $spikes[n] = (uint8_t)fire;
##else
    $vmem[n] = v;
##end
}
