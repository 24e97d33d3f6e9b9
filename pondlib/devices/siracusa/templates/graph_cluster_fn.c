## The per-core function of a cluster graph program (graph_codegen_cluster): the L2 buffer pointers the step
## hands over in ${net}_gc ($members: one member per buffer), the one static L1 arena ($l1_words 64-bit words),
## the work split gc_lo / gc_hi (core c of P takes [n c / P, n (c + 1) / P)), then every op in order ($ops).
## $views: the buffer pointers as the kernels name them; $unused: "(void)name;" per buffer.
static struct {
    $members
} ${net}_gc;
static POND_L1 int64_t ${net}_l1[$l1_words];
static inline int32_t gc_lo(int32_t n) { return (int32_t)((int64_t)n * pond_core_id() / POND_NUM_CORES); }
static inline int32_t gc_hi(int32_t n) { return (int32_t)((int64_t)n * (pond_core_id() + 1) / POND_NUM_CORES); }
static void ${net}_cluster(const void *gc_x, void *gc_y)
{
    const $in_type *const x = (const $in_type *)gc_x;
    const int gc_core = pond_core_id();
    uint8_t *const gc_l1 = (uint8_t *)${net}_l1;
    $views
    $unused
    (void)x;
    (void)gc_y;
    (void)gc_l1;
    $ops
}
