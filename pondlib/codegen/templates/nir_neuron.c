## A NIR neuron group of N neurons (NIRLIF, CubaLIF, LI, CubaLI, IF, Integrator of pondlib.nn):
##   I = a_syn I + g_syn x (with a synapse); v = (a_mem V + g_mem d) + c_mem, d = I with a synapse, else x;
##   with a threshold: z = v > thr, then V = v - z thr (subtract), v (1 - z) (zero) or v (1 - z) + z v_reset,
##   written per value of z (0 or 1) so that the compiler folds the products by 0 and 1 of constants.
## Each coefficient is a literal or a constant indexed by n; $drive is d.
/* $src[$n] in; membrane $vmem[$n] (after reset) */
POND_ROLLED for (int32_t n = 0; n < $n; ++n) {
##if synapse
    /* synaptic current $isyn[$n] */
    $isyn[n] = $a_syn * $isyn[n] + $g_syn * $src[n];
##end
##if c_mem_zero
    /* c_mem = +0: (p + q) + 0 = p + (q + 0) exactly (round to nearest), which takes an add off the chain V -> V */
    const float v = $a_mem * $vmem[n] + ($g_mem * $drive + 0.0f);
##else
    const float v = $a_mem * $vmem[n] + $g_mem * $drive + $c_mem;
##end
##if spiking
    /* spikes $spikes[$n] (0 or 1, one byte each) */
    /* the reset with z = 1 or z = 0 written out (the same IEEE operations: 1 - z and a product by 1 are exact) */
    const int32_t fire = v > $thr;
##if reset_subtract
    $vmem[n] = fire ? v - 1.0f * $thr : v - 0.0f * $thr;
##end
##if reset_zero
    $vmem[n] = fire ? v * 0.0f : v * 1.0f;
##end
##if reset_to_value
##if fire_zero
    /* thr >= 0 and v_reset = +-0: a firing v is > 0, so v 0 + v_reset = v 0 exactly (+0, or NaN for v = inf) */
    const float v_fired = v * 0.0f;
##else
    const float v_fired = v * 0.0f + 1.0f * $v_reset;
##end
##if c_mem_zero
    /* v = p + (q + 0) is never -0, so v 1 + 0 v_reset (+0 or -0) = v exactly */
    const float v_kept = v;
##else
    const float v_kept = v * 1.0f + 0.0f * $v_reset;
##end
    $vmem[n] = fire ? v_fired : v_kept;
##end
    $spikes[n] = (uint8_t)fire;
##else
    $vmem[n] = v;
##end
}
