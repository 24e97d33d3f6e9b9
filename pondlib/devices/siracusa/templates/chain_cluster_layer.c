## One layer of a cluster chain program: $n_tiles tiles of at most $tile of its $units units (GEMM: output
## channels, convolution: output rows, RequantShift / LIF: neurons); tile t holds units cl_c0 .. cl_c0 + cl_nc.
## Core 0 DMAs the layer's whole operands ($fixed_in: input, or a convolution's input, weights and parameters)
## and, per tile, the tile's part of every tiled operand ($tile_in: weight rows, parameters, LIF input and
## state); every core computes its share of the tile (units cl_a .. cl_a + cl_cnt of the tile, $share: its L1
## views, then the kernel), then core 0 DMAs the tile's outputs back to L2 ($tile_out). Double buffered: tile
## t + 1's inputs ($next_in: units cl_n0 .. cl_n0 + cl_nn, into the other buffer; $first_in: tile 0's) start
## before tile t is computed; each wait comes before the data is used. Profile marker: $marker + tile index.
/* layer $index: $kind $label -- $summary */
if (cl_core == 0) {
    $fixed_in
##if double
    $first_in
##end
}
for (int32_t cl_t = 0; cl_t < $n_tiles; ++cl_t) {
    const int32_t cl_c0 = cl_t * $tile;
    const int32_t cl_nc = cl_c0 + $tile <= $units ? $tile : $units - cl_c0;
    if (cl_core == 0) {
##if double
        pond_dma_wait();
##else
        $tile_in
        pond_dma_wait();
##end
        pond_profile((uint32_t)$marker + (uint32_t)cl_t);
    }
    pond_barrier();
##if double
    if (cl_core == 0 && cl_t + 1 < $n_tiles) {
        const int32_t cl_n0 = cl_c0 + $tile;
        const int32_t cl_nn = cl_n0 + $tile <= $units ? $tile : $units - cl_n0;
        $next_in
    }
##end
    {
        const int32_t cl_a = cl_lo(cl_nc), cl_cnt = cl_hi(cl_nc) - cl_a;
        (void)cl_a;
        $share
    }
    pond_barrier();
    if (cl_core == 0) {
        $tile_out
    }
}
if (cl_core == 0) pond_dma_wait();
