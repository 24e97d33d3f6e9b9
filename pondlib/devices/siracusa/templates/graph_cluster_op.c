## One op of a cluster graph program: $n_tiles tiles of at most $tile_rows of its $rows rows (with cols: each
## row tile is cut into $col_tiles tiles of at most $tile_cols of its $n_cols output columns, column tiles
## inner: tile t is row tile t / $col_tiles, column tile t % $col_tiles; gc_c0 / gc_nc its first column and
## column count). Core 0 DMAs the op's whole operands ($fixed_in) and, per tile, the tile's part of every
## tiled operand ($tile_in: rows gc_t0 .. gc_t0 + gc_nr, columns gc_c0 .. gc_c0 + gc_nc, into the tile's L1
## buffer); every core computes its share of the tile ($compute), then core 0 DMAs the output tile back to L2
## ($tile_out). Double buffered: tile t + 1's inputs ($next_in: rows gc_n0 .. gc_n0 + gc_nn, columns gc_m0 ..
## gc_m0 + gc_mc, into the other buffer) start before tile t is computed; each wait comes before the data is
## used. Profile marker: $marker + tile index ($marker = op index * 65536).
/* op $index: $label -- $summary */
if (gc_core == 0) {
    $fixed_in
##if double
    $first_in
##end
}
for (int32_t gc_t = 0; gc_t < $n_tiles; ++gc_t) {
##if cols
    const int32_t gc_t0 = gc_t / $col_tiles * $tile_rows;
    const int32_t gc_c0 = gc_t % $col_tiles * $tile_cols;
    const int32_t gc_nc = gc_c0 + $tile_cols <= $n_cols ? $tile_cols : $n_cols - gc_c0;
    (void)gc_c0;
##else
    const int32_t gc_t0 = gc_t * $tile_rows;
##end
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
##if cols
        const int32_t gc_n0 = (gc_t + 1) / $col_tiles * $tile_rows;
        const int32_t gc_m0 = (gc_t + 1) % $col_tiles * $tile_cols;
        const int32_t gc_mc = gc_m0 + $tile_cols <= $n_cols ? $tile_cols : $n_cols - gc_m0;
        (void)gc_m0;
        (void)gc_mc;
##else
        const int32_t gc_n0 = gc_t0 + $tile_rows;
##end
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
