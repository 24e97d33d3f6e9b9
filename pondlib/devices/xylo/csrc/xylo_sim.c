/* pondlib: the Xylo core's integer dynamics, event-driven, the C twin of pondlib/devices/xylo/sim_kernels.py
 * (the module docstring of pondlib/devices/xylo/sim.py has the update equations; both kernels give the same
 * integers in every state and record). Built by pondlib.cprogram.native on first use, called through ctypes
 * on the simulator's own numpy arrays (pondlib.devices.xylo.sim).
 *
 * Layout (built once per simulator): states are int32 (every value fits in 16 bits); the two hidden
 * synapses are one flat array isyn = [synapse 0 of all N | synapse 1 of all N]; each projection is its
 * per-source sparse lists (ptr int32, idx uint16 or uint32 = syn * N_post + post, w int16 delivered
 * weights, wmax int32 = max |w| of the source); input counts are uint8, already clipped to 15.
 *
 * Per step and sample:
 *   1-3  deliver: input events (channels ascending), then last step's spikes (ascending) into isyn
 *        (recurrent) and isyn_out (readout). The partial sums are bounded first (max |state| + sum of
 *        count * wmax over the sources); when the bound stays within int16 no saturation can happen and
 *        contributions are added plainly, else every addition saturates, in the chip's order.
 *   4a   every hidden neuron, branch-free (vectorized): decay the synapses, integrate the membrane, set a
 *        fire flag where it reached its threshold.
 *   4b   only the flagged neurons (64 one-byte flags to a bit mask by one vector compare, then
 *        count-trailing-zeros): spike counts by reset with subtraction (at most 31), alias copies to higher
 *        ids, the list of spiking neurons.
 *   5    output neurons (one synapse, at most one spike, no aliases).
 * Samples of a batch are independent; they are split over the cores (OpenMP), so the results do not depend
 * on the number of threads. Signed >> is an arithmetic shift (GCC and Clang define it so).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512BW__) || defined(__AVX2__)
#include <immintrin.h>
#endif

/* the stages of a step are separate functions: inlined into one loop, they run out of registers */
#define STAGE __attribute__((noinline)) static

#define MAX_SPIKES 31
#define I16_MIN (-32768)
#define I16_MAX 32767

/* the ctypes mirror is pondlib.devices.xylo.sim._Net / _Run: change both together */
typedef struct {
    const int32_t *ptr;
    const void *idx; /* uint16_t, or uint32_t when wide */
    const int16_t *w;
    const int32_t *wmax;
    int64_t wide;
} xylo_proj;

typedef struct {
    xylo_proj in, rec, out;
    int64_t k, n_in, n_hid, n_out;
    const int32_t *dash_mem, *dash_syn, *thr, *bias, *alias; /* dash_syn: 2 N_hid */
    const int32_t *dash_mem_out, *dash_syn_out, *thr_out, *bias_out;
} xylo_net;

typedef struct {
    const uint8_t *x; /* (B, T, N_in) */
    int64_t batch, steps, record;
    int64_t serial; /* 1: one sample after another on the calling thread, no OpenMP call (a forked child) */
    int32_t *vmem, *isyn, *spikes, *vmem_out, *isyn_out; /* (B, N_hid), (B, 2 N_hid), ..., (B, N_out) */
    int32_t *out;                                        /* (B, T, N_out) */
    int32_t *r_vmem, *r_isyn, *r_isyn2, *r_spk;          /* (B, T, N_hid) when record */
    int32_t *r_vmem_out, *r_isyn_out;                    /* (B, T, N_out) when record */
} xylo_run;

static inline int32_t sat16(int32_t v) { return v < I16_MIN ? I16_MIN : (v > I16_MAX ? I16_MAX : v); }

/* two's-complement narrowing to the 16-bit membrane register (a reset with a threshold <= 0) */
static inline int32_t wrap16(int32_t v) { return (int32_t)(int16_t)(uint16_t)(uint32_t)v; }

/* bit-shift decay: v >> d (floor), or sign(v) when that is 0 (small states step to 0 linearly) */
static inline int32_t decay(int32_t v, int32_t d)
{
    int32_t dv = v >> d;
    int32_t sign = (v > 0) - (v < 0);
    return dv != 0 ? dv : sign;
}

/* the membrane before spiking: v + sat16(sat16(wrap16(-decay(v, d)) + itot) + bias), saturated; the
 * negated decrement wraps from +32768 to -32768 (dash 0, v = -32768), as the chip's negation does */
static inline int32_t membrane(int32_t v, int32_t d, int32_t itot, int32_t bias)
{
    int32_t dm = decay(v, d);
    int32_t dv = dm != I16_MIN ? -dm : dm;
    dv = sat16(dv + itot);
    dv = sat16(dv + bias);
    return sat16(v + dv);
}

/* state[idx[p]] += m w[p] over one source's entries lo..hi, saturating after every addition when sat (the
 * plain loops are unrolled: they are bound by instructions per entry, and m = 1 needs no multiply) */
#define ADD_ROW(NAME, IDX_T)                                                                                   \
    static inline void NAME(int32_t *restrict state, const IDX_T *restrict idx, const int16_t *restrict w,     \
                            int64_t lo, int64_t hi, int32_t m, int sat)                                        \
    {                                                                                                          \
        if (sat) {                                                                                             \
            for (int64_t p = lo; p < hi; ++p)                                                                  \
                state[idx[p]] = sat16(state[idx[p]] + m * w[p]);                                               \
        } else if (m == 1) {                                                                                   \
            _Pragma("GCC unroll 4") for (int64_t p = lo; p < hi; ++p) state[idx[p]] += w[p];                   \
        } else {                                                                                               \
            _Pragma("GCC unroll 4") for (int64_t p = lo; p < hi; ++p) state[idx[p]] += m * w[p];               \
        }                                                                                                      \
    }
ADD_ROW(add_row16, uint16_t)
ADD_ROW(add_row32, uint32_t)

static inline void add_row(int32_t *restrict state, const xylo_proj *pr, int64_t j, int32_t m, int sat)
{
    int64_t lo = pr->ptr[j], hi = pr->ptr[j + 1];
    if (pr->wide)
        add_row32(state, (const uint32_t *)pr->idx, pr->w, lo, hi, m, sat);
    else
        add_row16(state, (const uint16_t *)pr->idx, pr->w, lo, hi, m, sat);
}

/* steps 1-3: input events xt, then the spikes of step t-1 (active[:n_active]) */
STAGE void deliver(const xylo_net *net, const uint8_t *xt, const int32_t *spikes, const int32_t *active,
                    int64_t n_active, int32_t *isyn, int32_t *isyn_out, int64_t big, int64_t big_out)
{
    int64_t reach = big, reach_out = big_out;
    for (int64_t c = 0; c < net->n_in; ++c)
        reach += (int64_t)xt[c] * net->in.wmax[c];
    for (int64_t a = 0; a < n_active; ++a) {
        int64_t j = active[a], m = spikes[j];
        reach += m * net->rec.wmax[j];
        reach_out += m * net->out.wmax[j];
    }
    int sat = reach > I16_MAX, sat_out = reach_out > I16_MAX;
    for (int64_t c = 0; c < net->n_in; ++c)
        if (xt[c] > 0)
            add_row(isyn, &net->in, c, xt[c], sat);
    for (int64_t a = 0; a < n_active; ++a) {
        int64_t j = active[a];
        add_row(isyn, &net->rec, j, spikes[j], sat);
        add_row(isyn_out, &net->out, j, spikes[j], sat_out); /* a separate state: order-independent */
    }
}

/* step 4a (vectorized): decay, integrate, fire flags; returns max |isyn| after the decay */
STAGE int32_t integrate_hidden(const xylo_net *net, int32_t *restrict vmem, int32_t *restrict isyn,
                                uint8_t *restrict fire)
{
    const int64_t n = net->n_hid;
    const int32_t *restrict dash_mem = net->dash_mem, *restrict dash_syn = net->dash_syn;
    const int32_t *restrict thr = net->thr, *restrict bias = net->bias;
    int32_t big = 0;
    if (net->k == 2) {
        for (int64_t i = 0; i < n; ++i) {
            int32_t s0 = isyn[i], s1 = isyn[n + i];
            s0 -= decay(s0, dash_syn[i]); /* |s - decay(s)| <= |s|: stays in int16 */
            s1 -= decay(s1, dash_syn[n + i]);
            isyn[i] = s0;
            isyn[n + i] = s1;
            int32_t a0 = s0 < 0 ? -s0 : s0, a1 = s1 < 0 ? -s1 : s1;
            int32_t a = a0 > a1 ? a0 : a1;
            big = big > a ? big : a;
            int32_t v = membrane(vmem[i], dash_mem[i], s0 + s1, bias[i]);
            vmem[i] = v;
            fire[i] = v >= thr[i];
        }
    } else {
        for (int64_t i = 0; i < n; ++i) {
            int32_t s0 = isyn[i];
            s0 -= decay(s0, dash_syn[i]);
            isyn[i] = s0;
            int32_t a0 = s0 < 0 ? -s0 : s0;
            big = big > a0 ? big : a0;
            int32_t v = membrane(vmem[i], dash_mem[i], s0, bias[i]);
            vmem[i] = v;
            fire[i] = v >= thr[i];
        }
    }
    return big;
}

/* reset by subtraction of a neuron at or above threshold th with n spikes already received this step:
 * "while v >= th and n < 31: n += 1; v = wrap16(v - th)" in closed form for th > 0 */
static inline int32_t spike_count(int32_t *v, int32_t th, int32_t n)
{
    if (th > 0) {
        int32_t c = *v < 2 * th ? 1 : *v / th; /* v >= th > 0: the quotient is the floor */
        if (c > MAX_SPIKES - n)
            c = MAX_SPIKES - n;
        *v -= c * th; /* in [0, v]: no wrap */
        return n + c;
    }
    while (*v >= th && n < MAX_SPIKES) { /* th <= 0: the register wraps around */
        n += 1;
        *v = wrap16(*v - th);
    }
    return n;
}

/* bit l of the result: fire[l] != 0, for 64 one-byte flags (one vector compare where the CPU has one) */
static inline uint64_t fire_mask(const uint8_t *fire)
{
#if defined(__AVX512BW__)
    __m512i f = _mm512_loadu_si512((const void *)fire);
    return _mm512_test_epi8_mask(f, f);
#elif defined(__AVX2__)
    __m256i zero = _mm256_setzero_si256();
    __m256i lo = _mm256_loadu_si256((const __m256i *)fire), hi = _mm256_loadu_si256((const __m256i *)(fire + 32));
    uint32_t m_lo = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, zero));
    uint32_t m_hi = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, zero));
    return (uint64_t)m_lo | (uint64_t)m_hi << 32;
#else
    uint64_t m = 0;
    for (int l = 0; l < 64; ++l)
        m |= (uint64_t)(fire[l] != 0) << l;
    return m;
#endif
}

/* step 4b: spiking of the flagged neurons, ids ascending (aliases point to higher ids), 64 flags at a time
 * (fire has n_blocks * 64 bytes, the tail past N_hid zero); returns the number of spiking neurons, listed
 * ascending in active */
STAGE int64_t spike_hidden(const xylo_net *net, int32_t *vmem, int32_t *spikes, uint8_t *fire, int64_t n_blocks,
                           int32_t *active)
{
    int64_t n_active = 0;
    for (int64_t blk = 0; blk < n_blocks; ++blk) {
        uint64_t mask = fire_mask(fire + 64 * blk);
        while (mask != 0) {
            int64_t i = 64 * blk + __builtin_ctzll(mask);
            mask &= mask - 1;
            int32_t v = vmem[i], th = net->thr[i], n = spikes[i];
            if (v >= th && n < MAX_SPIKES) {
                n = spike_count(&v, th, n);
                vmem[i] = v;
            }
            if (n > 0) {
                spikes[i] = n;
                active[n_active++] = (int32_t)i;
                int32_t tgt = net->alias[i];
                if (tgt >= 0) { /* alias copies share the target's counter; the target lies after i */
                    int32_t s = spikes[tgt] + n;
                    spikes[tgt] = s < MAX_SPIKES ? s : MAX_SPIKES;
                    fire[tgt] = 1;
                    if (tgt >> 6 == blk)
                        mask |= (uint64_t)1 << (tgt & 63);
                }
            }
        }
    }
    return n_active;
}

/* step 5: output neurons; writes out_t (and the records); returns max |isyn_out| after the decay */
STAGE int64_t update_output(const xylo_net *net, int32_t *vmem_out, int32_t *isyn_out, int32_t *out_t,
                             int32_t *r_vmem_out, int32_t *r_isyn_out)
{
    int64_t big_out = 0;
    for (int64_t o = 0; o < net->n_out; ++o) {
        int32_t s0 = isyn_out[o];
        s0 -= decay(s0, net->dash_syn_out[o]);
        isyn_out[o] = s0;
        int64_t a = s0 < 0 ? -(int64_t)s0 : s0;
        big_out = big_out > a ? big_out : a;
        int32_t v = membrane(vmem_out[o], net->dash_mem_out[o], s0, net->bias_out[o]);
        int32_t th = net->thr_out[o];
        out_t[o] = v >= th; /* 1-spike output counter */
        if (v >= th)
            v = wrap16(v - th);
        vmem_out[o] = v;
        if (r_vmem_out) {
            r_vmem_out[o] = v;
            r_isyn_out[o] = s0;
        }
    }
    return big_out;
}

static int64_t max_abs(const int32_t *s, int64_t n)
{
    int64_t big = 0;
    for (int64_t i = 0; i < n; ++i) {
        int64_t a = s[i] < 0 ? -(int64_t)s[i] : s[i];
        big = big > a ? big : a;
    }
    return big;
}

/* one thread's scratch: the event list, the fire flags (64 per block, the tail past N_hid zero) and a copy
 * of the state of the sample it runs (the samples' states lie side by side, and the small ones, such as
 * the output registers, share cache lines: threads working on them in place would stall each other) */
typedef struct {
    int32_t *active, *state;
    uint8_t *fire;
} scratch;

/* one sample through all steps, on the thread's copy of its state */
static void run_sample(const xylo_net *net, const xylo_run *r, int64_t b, const scratch *ws)
{
    const int64_t n = net->n_hid, n_out = net->n_out, steps = r->steps, n_blocks = (n + 63) / 64;
    const uint8_t *x = r->x + b * steps * net->n_in;
    int32_t *out = r->out + b * steps * n_out, *active = ws->active;
    uint8_t *fire = ws->fire;
    /* the thread's copy of the state: [vmem N | isyn 2N | spikes N | vmem_out | isyn_out] */
    int32_t *vmem = ws->state, *isyn = vmem + n, *spikes = isyn + 2 * n, *vmem_out = spikes + n;
    int32_t *isyn_out = vmem_out + n_out;
    int32_t *const home[5] = {r->vmem + b * n, r->isyn + b * 2 * n, r->spikes + b * n, r->vmem_out + b * n_out,
                              r->isyn_out + b * n_out};
    int32_t *const local[5] = {vmem, isyn, spikes, vmem_out, isyn_out};
    const int64_t size[5] = {n, 2 * n, n, n_out, n_out};
    for (int s = 0; s < 5; ++s)
        memcpy(local[s], home[s], (size_t)size[s] * sizeof(int32_t));
    int64_t n_active = 0;
    for (int64_t i = 0; i < n; ++i)
        if (spikes[i] > 0)
            active[n_active++] = (int32_t)i;
    int64_t big = max_abs(isyn, 2 * n), big_out = max_abs(isyn_out, n_out);
    for (int64_t t = 0; t < steps; ++t) {
        deliver(net, x + t * net->n_in, spikes, active, n_active, isyn, isyn_out, big, big_out);
        for (int64_t a = 0; a < n_active; ++a) /* the per-step spike buffer starts at zero */
            spikes[active[a]] = 0;
        big = integrate_hidden(net, vmem, isyn, fire);
        n_active = spike_hidden(net, vmem, spikes, fire, n_blocks, active);
        int32_t *rvo = 0, *rio = 0;
        if (r->record) {
            int64_t row = (b * steps + t) * n;
            memcpy(r->r_vmem + row, vmem, (size_t)n * sizeof(int32_t));
            memcpy(r->r_isyn + row, isyn, (size_t)n * sizeof(int32_t));
            memcpy(r->r_spk + row, spikes, (size_t)n * sizeof(int32_t));
            if (net->k == 2)
                memcpy(r->r_isyn2 + row, isyn + n, (size_t)n * sizeof(int32_t));
            rvo = r->r_vmem_out + (b * steps + t) * n_out;
            rio = r->r_isyn_out + (b * steps + t) * n_out;
        }
        big_out = update_output(net, vmem_out, isyn_out, out + t * n_out, rvo, rio);
    }
    for (int s = 0; s < 5; ++s)
        memcpy(home[s], local[s], (size_t)size[s] * sizeof(int32_t));
}

static int scratch_alloc(scratch *ws, const xylo_net *net)
{
    const int64_t n = net->n_hid, n_blocks = (n + 63) / 64;
    ws->active = malloc((size_t)(n + 1) * sizeof(int32_t));
    ws->state = malloc((size_t)(4 * n + 2 * net->n_out + 1) * sizeof(int32_t));
    ws->fire = calloc((size_t)(n_blocks + 1), 64); /* only step 4a writes flags, up to N_hid */
    return ws->active && ws->state && ws->fire;
}

static void scratch_free(scratch *ws)
{
    free(ws->active);
    free(ws->state);
    free(ws->fire);
}

/* Run every sample of the batch from its state (updated in place). Returns 0, or -1 when scratch memory
 * could not be allocated (nothing is then guaranteed about the outputs). One sample, or r->serial, runs
 * on the calling thread without entering OpenMP (GNU OpenMP's threads do not survive a fork: a forked
 * child that entered a parallel region would wait for them forever). */
int pond_xylo_run(const xylo_net *net, const xylo_run *r)
{
    int failed = 0;
    if (r->batch == 1 || r->serial) {
        scratch ws;
        failed = !scratch_alloc(&ws, net);
        for (int64_t b = 0; b < r->batch && !failed; ++b)
            run_sample(net, r, b, &ws);
        scratch_free(&ws);
        return failed ? -1 : 0;
    }
#pragma omp parallel reduction(| : failed)
    {
        scratch ws;
        int ok = scratch_alloc(&ws, net);
        if (!ok)
            failed = 1;
#pragma omp for schedule(dynamic, 1)
        for (int64_t b = 0; b < r->batch; ++b)
            if (ok)
                run_sample(net, r, b, &ws);
        scratch_free(&ws);
    }
    return failed ? -1 : 0;
}

/* the ABI version of the structures above (pondlib.devices.xylo.sim checks it before the first call) */
int pond_xylo_abi(void) { return 2; }
