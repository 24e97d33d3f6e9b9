## A Conv tile of a cluster graph program (2-D NCHW; 1-D as height L, width 1): output rows gc_t0 .. gc_t0 +
## gc_nr of the $batch x $o output planes; $pixels computes output row oy of channel o (template
## graph_cluster_conv_px.c). Work split over P = POND_NUM_CORES cores: the tile's rows when that gives the
## slowest core fewer output rows (ceil(gc_nr / P) $o < ceil($o / P) gc_nr), else the $o output channels (on one
## core always: two loop nests, each with plain bounds).
const int32_t gc_i0 = gc_t0 * $sy - $pt > 0 ? gc_t0 * $sy - $pt : 0;
if ((gc_nr + POND_NUM_CORES - 1) / POND_NUM_CORES * $o < ($o + POND_NUM_CORES - 1) / POND_NUM_CORES * gc_nr) {
    const int32_t gc_y0 = gc_lo(gc_nr), gc_y1 = gc_hi(gc_nr);
    for (int32_t b = 0; b < $batch; ++b) {
        for (int32_t o = 0; o < $o; ++o) {
            const int32_t c0 = (o / $og) * $cg;
            for (int32_t oy = gc_y0; oy < gc_y1; ++oy) {
                $pixels
            }
        }
    }
} else {
    const int32_t gc_o0 = gc_lo($o), gc_o1 = gc_hi($o);
    for (int32_t b = 0; b < $batch; ++b) {
        for (int32_t o = gc_o0; o < gc_o1; ++o) {
            const int32_t c0 = (o / $og) * $cg;
            for (int32_t oy = 0; oy < gc_nr; ++oy) {
                $pixels
            }
        }
    }
}
