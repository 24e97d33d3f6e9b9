## Sum pooling over each kh x kw window (u, v ascending, zero padding); average pooling divides the sum by
## $area = kh kw (the padding counted).
/* $src[$c][$h_in][$w_in] -> $out[$c][$h_out][$w_out]; window $kh x $kw */
POND_ROLLED for (int32_t ch = 0; ch < $c; ++ch)
    POND_ROLLED for (int32_t i = 0; i < $h_out; ++i)
        POND_ROLLED for (int32_t j = 0; j < $w_out; ++j) {
            float acc = 0.0f;
            POND_ROLLED for (int32_t u = 0; u < $kh; ++u) {
                const int32_t r = i * $stride_h + u - $pad_h;
                if (r < 0 || r >= $h_in) continue;
                POND_ROLLED for (int32_t v = 0; v < $kw; ++v) {
                    const int32_t q = j * $stride_w + v - $pad_w;
                    if (q >= 0 && q < $w_in) acc = acc + $src[(ch * $h_in + r) * $w_in + q];
                }
            }
##if average
            $out[(ch * $h_out + i) * $w_out + j] = acc / $area;
##else
            $out[(ch * $h_out + i) * $w_out + j] = acc;
##end
        }
