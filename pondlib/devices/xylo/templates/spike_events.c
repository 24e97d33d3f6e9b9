## 2.-3. Recurrent and readout events: last step's spike count m of each hidden neuron j ascending adds
## m W_rec_q[j, :] and m W_out[j, :] ($projections: one accumulation per non-empty projection, reading j and
## m); then the counts start this step at 0 (alias copies arrive into them during step 4).
##if events
/* 2.-3. recurrent and readout events from last step's spike counts Spikes[$n_hid] (sources ascending) */
for (int32_t j = 0; j < $n_hid; ++j) {
    const int32_t m = Spikes[j];
    if (m == 0) continue;
    $projections
    Spikes[j] = 0;
}
##else
/* 2.-3. no recurrent or readout weights: the spike counts Spikes[$n_hid] only start the step at 0 */
memset(Spikes, 0, sizeof(uint8_t) * $n_hid);
##end
