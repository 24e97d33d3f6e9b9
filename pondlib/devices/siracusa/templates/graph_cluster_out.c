## The graph outputs of a cluster graph program packed into y (L2 to L2, $out_type), after the last op: core 0
## marks the section ($marker = number of ops * 65536, so that the last op's profile ends with it), every core
## waits for the last op's output DMA (barrier), then copies its share [gc_lo(n), gc_hi(n)) of every output
## ($copies: one loop per output).
/* graph outputs -> y, split over the cores */
if (gc_core == 0) pond_profile((uint32_t)$marker);
pond_barrier();
{
    $out_type *const y = ($out_type *)gc_y;
    $copies
}
