## A MatMul / Gemm tile of a cluster graph program: rows gc_t0 .. gc_t0 + gc_nr (global row gc_g) by output
## columns gc_c0 .. gc_c0 + gc_nc (local column n), the output tile $dst row-major with row stride gc_nc.
## Work split: a tile of at least POND_NUM_CORES rows splits its rows over the cores (each core every column
## of its rows: a batched GEMV over the batch), a smaller one (a GEMV) splits its output columns (core c of P
## takes [nc c / P, nc (c + 1) / P) of every row). acc is $acc (the range analysis' bound); $a / $b: A's and
## B's element (k, n) as C (A's tile row gc_r, B's whole array, column tile or literal); $store: the statement
## storing the result (acc, or Gemm's alpha acc + beta C) into the output tile's element gc_r * gc_nc + n, cast
## to the output type, or requantized there (a RequantShift fused into the tile: template graph_requant.c).
const int gc_by_rows = gc_nr >= POND_NUM_CORES;
const int32_t gc_r0 = gc_by_rows ? gc_lo(gc_nr) : 0, gc_r1 = gc_by_rows ? gc_hi(gc_nr) : gc_nr;
const int32_t gc_j0 = gc_by_rows ? 0 : gc_lo(gc_nc), gc_j1 = gc_by_rows ? gc_nc : gc_hi(gc_nc);
for (int32_t gc_r = gc_r0; gc_r < gc_r1; ++gc_r) {
    const int32_t gc_g = gc_t0 + gc_r;
    (void)gc_g;
    for (int32_t n = gc_j0; n < gc_j1; ++n) {
        $acc acc = 0;
        for (int32_t k = 0; k < $k; ++k) acc += ($acc)$a * ($acc)$b;
        $store
    }
}
