## The last layer's activations (a recorded state or a scratch buffer) are the step's output.
/* output: $src[$n] -> y[$n] */
for (int32_t i = 0; i < $n; ++i) y[i] = ($out_type)$src[i];
