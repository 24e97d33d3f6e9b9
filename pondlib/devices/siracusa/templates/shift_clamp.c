## The end of a RequantShift or LIF update: from the wrapped uint32 t, r = floor((t + 2^(s-1)) / 2^s) (round
## half up; s = 0: r = t as int32), then clamped to [lo, hi] where that range is narrower than int32.
##if rounding
t += $half;
int32_t r = srq_asr(srq_i32(t), $shift);
##else
int32_t r = srq_i32(t);
##end
##if clamp_lo
if (r < $lo) r = $lo;
##end
##if clamp_hi
if (r > $hi) r = $hi;
##end
