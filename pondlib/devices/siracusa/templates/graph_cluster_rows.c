## A row-tiled op's share of a tile in a cluster graph program: $body computes row gc_r of the tile (global
## row gc_g). Core c of P takes rows [nr c / P, nr (c + 1) / P) of the tile's nr = gc_nr rows; with values (an
## element-wise op whose rows hold several values), a tile of fewer rows than cores instead has every core
## run every row over its share of the row's values ($split_body: the outermost loop over gc_lo / gc_hi).
##if values
if (gc_nr < POND_NUM_CORES) {
    for (int32_t gc_r = 0; gc_r < gc_nr; ++gc_r) {
        const int32_t gc_g = gc_t0 + gc_r;
        (void)gc_g;
        $split_body
    }
} else
##end
{
    const int32_t gc_r0 = gc_lo(gc_nr), gc_r1 = gc_hi(gc_nr);
    for (int32_t gc_r = gc_r0; gc_r < gc_r1; ++gc_r) {
        const int32_t gc_g = gc_t0 + gc_r;
        (void)gc_g;
        $body
    }
}
