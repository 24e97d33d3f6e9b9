## The last layer's recorded activations are the step's output.
/* output: $src[$n] -> y[$n] */
for (int32_t n = 0; n < $n; ++n) y[n] = $src[n];
