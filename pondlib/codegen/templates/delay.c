## Delay of N values: y[n] = x[t - d_n][n] (d_n = 0: this step's x), through a ring of the last $depth inputs,
## $ring[$depth][$n] slot-major, written at slot p = $pos[0], then p advances modulo $depth.
## $d: neuron n's delay in steps (a literal or a constant indexed by n).
/* $src[$n] -> $out[$n]; ring $ring[$depth][$n]; next slot $pos[0] */
const int32_t p = $pos[0];
POND_ROLLED for (int32_t n = 0; n < $n; ++n) {
    const int32_t d = $d;
    $out[n] = d == 0 ? $src[n] : $ring[((p - d + $depth) % $depth) * $n + n];
    $ring[p * $n + n] = $src[n];
}
$pos[0] = (p + 1) % $depth;
