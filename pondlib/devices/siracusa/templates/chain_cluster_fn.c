## The per-core function of a cluster chain program (codegen_cluster): the L2 buffer pointers the step hands
## over in ${net}_l2_ptrs (with has_buffers: one member per state / scratch buffer, $members), the one static L1 arena
## ($l1_words 64-bit words, reused by every layer from offset 0), the work split cl_lo / cl_hi (core c of P takes
## [n c / P, n (c + 1) / P)), then every layer in order ($layers). $views: the L2 buffer pointers as the
## layers name them; $unused: "(void)name;" per buffer. x: the step's input ($in_type), y: its output ($out_type).
##if has_buffers
static struct {
    $members
} ${net}_l2_ptrs;
##end
static POND_L1 int64_t ${net}_l1_arena[$l1_words];
static inline int32_t cl_lo(int32_t n) { return (int32_t)((int64_t)n * pond_core_id() / POND_NUM_CORES); }
static inline int32_t cl_hi(int32_t n) { return (int32_t)((int64_t)n * (pond_core_id() + 1) / POND_NUM_CORES); }
static void ${net}_cluster(const void *cl_x, void *cl_y)
{
    const $in_type *const x = (const $in_type *)cl_x;
    $out_type *const y = ($out_type *)cl_y;
    const int cl_core = pond_core_id();
    uint8_t *const cl_l1 = (uint8_t *)${net}_l1_arena;
##if has_buffers
    $views
    $unused
##end
    (void)x;
    (void)y;
    (void)cl_core;
    $layers
}
