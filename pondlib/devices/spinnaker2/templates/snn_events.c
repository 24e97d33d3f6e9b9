## The spikes of one source ($label: $n_source neurons, counts $source[]) into its target populations, event-driven:
## the indices of the neurons with a non-zero count are gathered once per tick into $ev[] ($ev_type), then
## $projections (one per target population, snn_projection.c) visit only their synapse rows. Every sum is an
## exact int64 sum, so the order of the events does not change any value.
/* events of source $label: the neurons with a non-zero count ($n_source sources), gathered once */
{
    int32_t ne = 0;
    for (int32_t j = 0; j < $n_source; ++j) {
        if ($source[j] != 0) $ev[ne++] = ($ev_type)j;
    }
    $projections
}
