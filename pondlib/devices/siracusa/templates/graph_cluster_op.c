## One op of a cluster graph program: $n_tiles tiles of at most $tile_rows of its $rows rows. Core 0 DMAs the
## op's whole operands ($fixed_in) and, per tile, the tile's rows ($tile_in: rows gc_t0 .. gc_t0 + gc_nr into the
## tile's L1 buffer); every core computes its share of the tile ($compute), then core 0 DMAs the output rows
## back to L2 ($tile_out). Double buffered: tile t + 1's inputs ($next_in: rows gc_n0 .. gc_n0 + gc_nn into the
## other buffer) start before tile t is computed; each wait comes before the data is used. Profile marker:
## $marker + tile index ($marker = op index * 65536).
/* op $index: $label -- $summary */
if (gc_core == 0) {
    $fixed_in
##if double
    $first_in
##end
}
for (int32_t gc_t = 0; gc_t < $n_tiles; ++gc_t) {
    const int32_t gc_t0 = gc_t * $tile_rows;
    const int32_t gc_nr = gc_t0 + $tile_rows <= $rows ? $tile_rows : $rows - gc_t0;
    if (gc_core == 0) {
##if double
        pond_dma_wait();
##else
        $tile_in
        pond_dma_wait();
##end
        pond_profile((uint32_t)$marker + (uint32_t)gc_t);
    }
    pond_barrier();
##if double
    if (gc_core == 0 && gc_t + 1 < $n_tiles) {
        const int32_t gc_n0 = gc_t0 + $tile_rows;
        const int32_t gc_nn = gc_n0 + $tile_rows <= $rows ? $tile_rows : $rows - gc_n0;
        $next_in
    }
##end
    {
        $compute
    }
    pond_barrier();
    if (gc_core == 0) {
        $tile_out
    }
}
if (gc_core == 0) pond_dma_wait();
