## RequantShift of the int32 value $value of channel c: t = W32(W32(W32(value + in_offset) mul[c]) + add[c]),
## then $shift_clamp rounds, shifts and saturates into int32_t r. $mul and $add are literals or constants.
##if has_offset
uint32_t t = srq_mul((uint32_t)$value + $offset, $mul) + $add;
##else
uint32_t t = srq_mul((uint32_t)$value, $mul) + $add;
##end
$shift_clamp
