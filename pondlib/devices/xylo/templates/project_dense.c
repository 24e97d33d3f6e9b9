## The events of source $j (count $m) through one projection stored as dense rows: for every post i,
## $target[i] = sat16($target[i] + $m W[$j, i]); $w is W row-major, (n_pre, $n_post), delivered weights.
{ /* $target[$n_post] += $m * $w[$j][:] */
    const int16_t *w = &$w[(size_t)$j * $n_post];
    for (int32_t i = 0; i < $n_post; ++i) $target[i] = (int16_t)xy_sat16($target[i] + $m * w[i]);
}
