## The graph outputs packed into y: $src[$n] -> y[$offset ..] (output $index, C order).
/* output $index: $src[$n] -> y[$offset..] */
for (int32_t i = 0; i < $n; ++i) y[$offset + i] = ($out_type)$src[i];
