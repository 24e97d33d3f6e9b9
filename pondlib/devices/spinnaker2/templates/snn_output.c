## The end of a tick: the output population's spikes are the step's output, then the tick counter advances.
/* output: ${p}_spikes[$n] -> y[$n]; next tick */
for (int32_t n = 0; n < $n; ++n) y[n] = ${p}_spikes[n];
tick[0] += 1;
