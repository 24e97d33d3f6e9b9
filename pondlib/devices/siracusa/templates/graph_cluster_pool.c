## A MaxPool / AveragePool tile of a cluster graph program ($planes = N C planes; 1-D as height L, width 1):
## output rows gc_t0 .. gc_t0 + gc_nr of every plane; $pixels computes output row oy of plane p (template
## graph_cluster_pool_px.c). Work split over P = POND_NUM_CORES cores: the tile's rows when that gives the
## slowest core fewer output rows (ceil(gc_nr / P) $planes < ceil($planes / P) gc_nr), else the planes (on one
## core always: two loop nests, each with plain bounds).
const int32_t gc_i0 = gc_t0 * $sy - $pt > 0 ? gc_t0 * $sy - $pt : 0;
if ((gc_nr + POND_NUM_CORES - 1) / POND_NUM_CORES * $planes < ($planes + POND_NUM_CORES - 1) / POND_NUM_CORES * gc_nr) {
    const int32_t gc_y0 = gc_lo(gc_nr), gc_y1 = gc_hi(gc_nr);
    for (int32_t p = 0; p < $planes; ++p) {
        for (int32_t oy = gc_y0; oy < gc_y1; ++oy) {
            $pixels
        }
    }
} else {
    const int32_t gc_p0 = gc_lo($planes), gc_p1 = gc_hi($planes);
    for (int32_t p = gc_p0; p < gc_p1; ++p) {
        for (int32_t oy = 0; oy < gc_nr; ++oy) {
            $pixels
        }
    }
}
