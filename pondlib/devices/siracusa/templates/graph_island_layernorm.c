## QLayerNorm, a float32 island (graph_codegen_float): $rows rows of $n contiguous values. v_j = (float)(x_j -
## $zero_in) * $scale_in (in $itype, recomputed at each pass), mu = (v_0 + v_1 + ...) / $count and var =
## (d_0 d_0 + d_1 d_1 + ...) / $count left to right with d_j = v_j - mu, den = gq_fsqrt(var + $eps),
## u_j = d_j / den (gq_fdiv0 where den is 0), u_j = u_j * $gamma, u_j = u_j + $beta (when present),
## y_j = gq_fquant(u_j, $quant).
for (int32_t r = 0; r < $rows; ++r) {
    const int32_t base = r * $n;
    float s = 0.0f;
    for (int32_t j = 0; j < $n; ++j) {
        const float v = (float)(($itype)$src[base + j] - $zero_in) * $scale_in;
        s = j == 0 ? v : s + v;
    }
    const float mu = s / $count;
    float q = 0.0f;
    for (int32_t j = 0; j < $n; ++j) {
        const float v = (float)(($itype)$src[base + j] - $zero_in) * $scale_in;
        const float d = v - mu;
        const float dd = d * d;
        q = j == 0 ? dd : q + dd;
    }
    const float var = q / $count;
    const float den = gq_fsqrt(var + $eps);
    for (int32_t j = 0; j < $n; ++j) {
        const float v = (float)(($itype)$src[base + j] - $zero_in) * $scale_in;
        const float d = v - mu;
        float u = den == 0.0f ? gq_fdiv0(d, den) : d / den;
##if has_gamma
        u = u * $gamma;
##end
##if has_beta
        u = u + $beta;
##end
        $dst[base + j] = ($out_type)gq_fquant(u, $quant);
    }
}
