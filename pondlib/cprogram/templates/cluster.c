## The cluster runtime of a multi-core program: POND_NUM_CORES cores run the same step (SPMD), share L1 and
## L2, meet at barriers, and core 0 drives a DMA engine. Placeholders: $cores (the default core count),
## $mmio (the MMIO page of the emulated cluster), $l1_section / $l3_section (the linker sections of L1 buffers
## and of constants kept in the off-chip L3).
## Built freestanding (-DPOND_FREESTANDING, the emulated RV32 cluster of pondlib.codegen.cluster): the
## registers of the MMIO page; on the host: one POSIX thread per core and an atomic sense-reversing barrier.
#ifndef POND_NUM_CORES
#define POND_NUM_CORES $cores
#endif
#if POND_NUM_CORES < 1 || POND_NUM_CORES > 8
#error "POND_NUM_CORES must be 1..8"
#endif
/* Every runtime function may go unused in a program (clang warns about unused static functions). */
#define POND_RT static inline __attribute__((unused))
#ifdef POND_FREESTANDING
/* MMIO words (32 bit): 0 core id (per-core page, read), 1 barrier (write), 2 DMA destination, 3 DMA source,
   4 DMA bytes (write: starts the copy), 5 DMA wait (write), 6 profile marker (write); a 2-D transfer: 7 rows,
   8 source stride, 9 destination stride (bytes), 10 bytes per row (write: starts it). */
#define POND_MMIO ((volatile uint32_t *)$mmio)
#define POND_L1 __attribute__((section("$l1_section"), aligned(8)))
#ifndef POND_L3 /* also defined by the program's L3 constants, which come first */
#define POND_L3 __attribute__((section("$l3_section"), aligned(8)))
#endif
POND_RT int pond_core_id(void) { return (int)POND_MMIO[0]; }
POND_RT void pond_barrier(void) { POND_MMIO[1] = 1u; }
POND_RT void pond_dma_start(void *dst, const void *src, uint32_t bytes) {
    POND_MMIO[2] = (uint32_t)(uintptr_t)dst;
    POND_MMIO[3] = (uint32_t)(uintptr_t)src;
    POND_MMIO[4] = bytes;
}
/* rows rows of row_bytes bytes, row r from src + r * src_stride to dst + r * dst_stride: one transfer. */
POND_RT void pond_dma_start_2d(void *dst, const void *src, uint32_t row_bytes, uint32_t rows, uint32_t dst_stride,
                               uint32_t src_stride) {
    POND_MMIO[2] = (uint32_t)(uintptr_t)dst;
    POND_MMIO[3] = (uint32_t)(uintptr_t)src;
    POND_MMIO[7] = rows;
    POND_MMIO[8] = src_stride;
    POND_MMIO[9] = dst_stride;
    POND_MMIO[10] = row_bytes;
}
POND_RT void pond_dma_wait(void) { POND_MMIO[5] = 1u; }
POND_RT void pond_profile(uint32_t marker) { POND_MMIO[6] = marker; }
#define POND_CLUSTER_RUN(fn, x, y) fn((const void *)(x), (void *)(y))
#else
#include <pthread.h>
#include <stdatomic.h>
#include <threads.h>
#define POND_L1
#ifndef POND_L3
#define POND_L3
#endif
static _Thread_local int pond_core;
static atomic_int pond_bar_count;
static atomic_int pond_bar_sense;
static _Thread_local int pond_local_sense;
POND_RT int pond_core_id(void) { return pond_core; }
POND_RT void pond_barrier(void) {
    pond_local_sense = !pond_local_sense;
    if (atomic_fetch_add(&pond_bar_count, 1) == POND_NUM_CORES - 1) {
        atomic_store(&pond_bar_count, 0);
        atomic_store(&pond_bar_sense, pond_local_sense);
    } else {
        while (atomic_load(&pond_bar_sense) != pond_local_sense) {
            thrd_yield(); /* more threads than host CPUs: let the others reach the barrier */
        }
    }
}
POND_RT void pond_dma_start(void *dst, const void *src, uint32_t bytes) { memcpy(dst, src, bytes); }
POND_RT void pond_dma_start_2d(void *dst, const void *src, uint32_t row_bytes, uint32_t rows, uint32_t dst_stride,
                               uint32_t src_stride) {
    for (uint32_t r = 0; r < rows; ++r) {
        memcpy((char *)dst + (size_t)r * dst_stride, (const char *)src + (size_t)r * src_stride, row_bytes);
    }
}
POND_RT void pond_dma_wait(void) {}
POND_RT void pond_profile(uint32_t marker) { (void)marker; }
typedef struct {
    void (*fn)(const void *, void *);
    const void *x;
    void *y;
    int core;
    int sense;
} pond_job;
POND_RT void *pond_thread(void *arg) {
    const pond_job *job = (const pond_job *)arg;
    pond_core = job->core;
    pond_local_sense = job->sense;
    job->fn(job->x, job->y);
    return NULL;
}
POND_RT void pond_cluster_run(void (*fn)(const void *, void *), const void *x, void *y) {
    pthread_t threads[POND_NUM_CORES];
    pond_job jobs[POND_NUM_CORES];
    int sense = atomic_load(&pond_bar_sense);
    for (int c = 1; c < POND_NUM_CORES; ++c) {
        jobs[c] = (pond_job){fn, x, y, c, sense};
        pthread_create(&threads[c], NULL, pond_thread, &jobs[c]);
    }
    pond_core = 0;
    pond_local_sense = sense;
    fn(x, y);
    for (int c = 1; c < POND_NUM_CORES; ++c) pthread_join(threads[c], NULL);
}
#define POND_CLUSTER_RUN(fn, x, y) pond_cluster_run(fn, (const void *)(x), (void *)(y))
#endif
