## After the accumulation of output $index: acc32 = the accumulator as int32 (exact, or its wrap modulo 2^32),
## recorded in $acc_buf when recording, then requantized ($requant computes int32_t r) or stored raw.
##if exact
const int32_t acc32 = acc;
##else
const int32_t acc32 = srq_i32(acc);
##end
##if record_acc
$acc_buf[$index] = acc32;
##end
##if requantize
{
    $requant
    $dst[$index] = ($out_type)r;
}
##end
##if store_raw
$dst[$index] = acc32;
##end
