/* pondlib: inference of a chain of Linear and LIF modules (pondlib.nn.fused), event-driven, the C twin of
 * pondlib/nn/chain_kernels.py (its docstring has the equations and the argument layout; both give the
 * same results bit for bit). Built by pondlib.cprogram.native, called by XLA through its FFI
 * (pondlib.nn.native.chain_forward).
 *
 * A tile of TILE samples runs through all steps; tiles are split over the cores (OpenMP). Per step and
 * module:
 *   Linear  out[o] = (sum over i ascending with h[i] != 0 of fma(h[i], W[i,o], .)) + c[o], the sum
 *           starting from +0; sparse (per sample, over the gathered non-zero inputs) or dense (every
 *           input row, the row read once for the tile): identical sums, an FMA with a zero factor
 *           returns its addend.
 *   LIF     a = h (+ s[t-1] W_rec, the same sum over last step's non-zero spikes, added after)
 *           q = I + a; I = q beta; P = fma(V, alpha, sum_j I_j) + bias
 *           s = P >= theta ? min(max(floor(P / theta), 0), cap) : 0; V = P - s theta
 *   A LIF writes the indices of its non-zero spike counts as it goes (the events the next product
 *   and the next step's recurrent product gather). A product keeps blocks of 64 or 128 outputs in registers
 *   while the gathered input rows stream past (every weight loaded once per event, no partial sums
 *   stored).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lif_rows.h" /* spike_count and gather, shared with the training kernels */
#include "pond_ffi.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define POND_AVX2 1
#endif

#ifndef TILE
#define TILE 8
#endif
/* columns of W per pass over a tile's samples: 128 where AVX-512 gives 32 vector registers (16
 * running sums of 8 lanes), else 64 */
#ifndef BLOCK
#ifdef __AVX512VL__
#define BLOCK 128
#else
#define BLOCK 64
#endif
#endif

enum { OP_LINEAR = 0, OP_LIF = 1 };

typedef struct {
    int64_t kind, a, b, off, off2, s_off;
} chain_op;

typedef struct {
    const float *prm;
    const chain_op *ops;
    int64_t n_ops, n0, n_last, size, steps, batch, width;
    int64_t x_t, x_b, y_t, y_b; /* strides of x and y (in floats) along time and batch */
    int mode;
    float crossover;
} chain_args;

#ifdef POND_AVX2
/* PACK[m]: the lanes set in the 8-bit mask m, ascending, then zeros (left-packing an event group) */
static int32_t PACK[256][8];

__attribute__((constructor)) static void init_pack(void)
{
    for (int m = 0; m < 256; ++m) {
        int n = 0;
        for (int l = 0; l < 8; ++l)
            if (m >> l & 1)
                PACK[m][n++] = l;
        while (n < 8)
            PACK[m][n++] = 0;
    }
}

/* append the lanes of `mask` as indices base + lane to ev[nnz..] (writes 8 entries: ev has 8 spare) */
static inline int64_t append_events(int32_t *ev, int64_t nnz, unsigned mask, int64_t base)
{
    __m256i lanes = _mm256_loadu_si256((const __m256i *)PACK[mask]);
    _mm256_storeu_si256((__m256i *)(ev + nnz), _mm256_add_epi32(lanes, _mm256_set1_epi32((int32_t)base)));
    return nnz + __builtin_popcount(mask);
}
#endif

/* out[o] = sum over p of fma(h[ev[p]], w[ev[p], o], .) from +0, p ascending (rows of w n_out long);
 * blocks of 64 outputs stay in registers while the events stream past */
static void gather_rows(const float *restrict h, const int32_t *restrict ev, int64_t nnz, const float *restrict w,
                        int64_t n_out, float *restrict out, int64_t o, int64_t o_end)
{
#ifdef POND_AVX2
#ifdef __AVX512VL__ /* 32 vector registers: 16 running sums and the broadcast input */
    for (; o + 128 <= o_end; o += 128) {
        __m256 a[16];
        for (int q = 0; q < 16; ++q)
            a[q] = _mm256_setzero_ps();
        for (int64_t p = 0; p < nnz; ++p) {
            const int64_t i = ev[p];
            const __m256 hv = _mm256_set1_ps(h[i]);
            const float *r = w + i * n_out + o;
            for (int q = 0; q < 16; ++q)
                a[q] = _mm256_fmadd_ps(hv, _mm256_loadu_ps(r + 8 * q), a[q]);
        }
        for (int q = 0; q < 16; ++q)
            _mm256_storeu_ps(out + o + 8 * q, a[q]);
    }
#endif
    for (; o + 64 <= o_end; o += 64) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        for (int64_t p = 0; p < nnz; ++p) {
            const int64_t i = ev[p];
            const __m256 hv = _mm256_set1_ps(h[i]);
            const float *r = w + i * n_out + o;
            a0 = _mm256_fmadd_ps(hv, _mm256_loadu_ps(r), a0);
            a1 = _mm256_fmadd_ps(hv, _mm256_loadu_ps(r + 8), a1);
            a2 = _mm256_fmadd_ps(hv, _mm256_loadu_ps(r + 16), a2);
            a3 = _mm256_fmadd_ps(hv, _mm256_loadu_ps(r + 24), a3);
            a4 = _mm256_fmadd_ps(hv, _mm256_loadu_ps(r + 32), a4);
            a5 = _mm256_fmadd_ps(hv, _mm256_loadu_ps(r + 40), a5);
            a6 = _mm256_fmadd_ps(hv, _mm256_loadu_ps(r + 48), a6);
            a7 = _mm256_fmadd_ps(hv, _mm256_loadu_ps(r + 56), a7);
        }
        _mm256_storeu_ps(out + o, a0);
        _mm256_storeu_ps(out + o + 8, a1);
        _mm256_storeu_ps(out + o + 16, a2);
        _mm256_storeu_ps(out + o + 24, a3);
        _mm256_storeu_ps(out + o + 32, a4);
        _mm256_storeu_ps(out + o + 40, a5);
        _mm256_storeu_ps(out + o + 48, a6);
        _mm256_storeu_ps(out + o + 56, a7);
    }
    /* the rest, up to 32 columns a pass: four running sums (independent chains of FMAs, so a narrow
     * output layer is not bound by one FMA's latency per event), lanes past the end masked off */
    for (; o < o_end; o += 32) {
        const int32_t rest = (int32_t)(o_end - o < 32 ? o_end - o : 32);
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(rest), lane);
        const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(rest - 8), lane);
        const __m256i m2 = _mm256_cmpgt_epi32(_mm256_set1_epi32(rest - 16), lane);
        const __m256i m3 = _mm256_cmpgt_epi32(_mm256_set1_epi32(rest - 24), lane);
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t p = 0; p < nnz; ++p) {
            const __m256 hv = _mm256_set1_ps(h[ev[p]]);
            const float *r = w + ev[p] * n_out + o;
            a0 = _mm256_fmadd_ps(hv, _mm256_maskload_ps(r, m0), a0);
            a1 = _mm256_fmadd_ps(hv, _mm256_maskload_ps(r + 8, m1), a1);
            a2 = _mm256_fmadd_ps(hv, _mm256_maskload_ps(r + 16, m2), a2);
            a3 = _mm256_fmadd_ps(hv, _mm256_maskload_ps(r + 24, m3), a3);
        }
        _mm256_maskstore_ps(out + o, m0, a0);
        _mm256_maskstore_ps(out + o + 8, m1, a1);
        _mm256_maskstore_ps(out + o + 16, m2, a2);
        _mm256_maskstore_ps(out + o + 24, m3, a3);
    }
#endif
    for (; o < o_end; ++o) {
        float a = 0.0f;
        for (int64_t p = 0; p < nnz; ++p)
            a = fmaf(h[ev[p]], w[ev[p] * n_out + o], a);
        out[o] = a;
    }
}

#ifdef POND_AVX2
/* a narrow product (n_out <= 16) of four samples at once: two running sums each, the four samples'
 * event loops run side by side over their common length (eight independent chains of FMAs: one
 * sample's sums alone wait on an FMA's latency at every event), then each finishes alone. Each sum
 * still runs over its own sample's events in ascending order. */
static void narrow4(const float *const *h, int32_t *const *ev, const int64_t *nnz, const float *restrict w,
                    int64_t n_out, float *const *out)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)n_out), lane);
    const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)n_out - 8), lane);
    __m256 a[4][2];
    int64_t common = nnz[0];
    for (int q = 0; q < 4; ++q) {
        a[q][0] = a[q][1] = _mm256_setzero_ps();
        common = nnz[q] < common ? nnz[q] : common;
    }
    for (int64_t p = 0; p < common; ++p) {
        for (int q = 0; q < 4; ++q) {
            const int64_t i = ev[q][p];
            const __m256 hv = _mm256_set1_ps(h[q][i]);
            a[q][0] = _mm256_fmadd_ps(hv, _mm256_maskload_ps(w + i * n_out, m0), a[q][0]);
            a[q][1] = _mm256_fmadd_ps(hv, _mm256_maskload_ps(w + i * n_out + 8, m1), a[q][1]);
        }
    }
    for (int q = 0; q < 4; ++q) {
        __m256 x0 = a[q][0], x1 = a[q][1];
        for (int64_t p = common; p < nnz[q]; ++p) {
            const int64_t i = ev[q][p];
            const __m256 hv = _mm256_set1_ps(h[q][i]);
            x0 = _mm256_fmadd_ps(hv, _mm256_maskload_ps(w + i * n_out, m0), x0);
            x1 = _mm256_fmadd_ps(hv, _mm256_maskload_ps(w + i * n_out + 8, m1), x1);
        }
        _mm256_maskstore_ps(out[q], m0, x0);
        _mm256_maskstore_ps(out[q] + 8, m1, x1);
    }
}
#endif

/* out[b] = h[b] W for the n_b samples of a tile; ev/nnz: each sample's gathered inputs (nnz < 0: not
 * gathered yet, done here when the sparse loop runs); `all` holds 0, 1, ..., n_in - 1 (the dense loop:
 * every row, zeros included, the same sums) */
static void product(const chain_args *c, const float *const *h, int32_t *const *ev, int64_t *nnz, int64_t n_b,
                    const float *w, int64_t n_in, int64_t n_out, float *const *out, const int32_t *all)
{
    int sparse = c->mode == 2;
    if (c->mode == 0) {
        int64_t total = 0;
        for (int64_t b = 0; b < n_b; ++b) {
            if (nnz[b] < 0)
                nnz[b] = gather(h[b], n_in, ev[b]);
            total += nnz[b];
        }
        sparse = (float)total <= c->crossover * (float)(n_b * n_in);
    }
    for (int64_t b = 0; b < n_b; ++b)
        if (sparse && nnz[b] < 0)
            nnz[b] = gather(h[b], n_in, ev[b]);
    int64_t b0 = 0;
#ifdef POND_AVX2
    if (sparse && n_out <= 16)
        for (; b0 + 4 <= n_b; b0 += 4)
            narrow4(h + b0, ev + b0, nnz + b0, w, n_out, out + b0);
#endif
    /* column blocks outermost: a block of W (BLOCK columns of every row) stays in the first-level
     * cache for all the tile's samples */
    for (int64_t o = 0; o < n_out; o += BLOCK) {
        const int64_t o_end = o + BLOCK < n_out ? o + BLOCK : n_out;
        for (int64_t b = b0; b < n_b; ++b)
            gather_rows(h[b], sparse ? ev[b] : all, sparse ? nnz[b] : n_in, w, n_out, out[b], o, o_end);
    }
}


/* one LIF step of one sample with one synapse per neuron; returns the number of non-zero counts,
 * their indices in ev */
static int64_t lif_row1(const float *restrict h, const float *restrict alpha, const float *restrict beta,
                        const float *restrict th, const float *restrict bias, float cap, float *restrict isyn,
                        float *restrict v, float *restrict s, int32_t *restrict ev, int64_t n)
{
    int64_t nnz = 0, j = 0;
#ifdef POND_AVX2
    const __m256 zero = _mm256_setzero_ps(), capv = _mm256_set1_ps(cap);
    for (; j + 8 <= n; j += 8) {
        __m256 ii = _mm256_mul_ps(_mm256_add_ps(_mm256_loadu_ps(isyn + j), _mm256_loadu_ps(h + j)),
                                  _mm256_loadu_ps(beta + j));
        _mm256_storeu_ps(isyn + j, ii);
        __m256 p = _mm256_add_ps(_mm256_fmadd_ps(_mm256_loadu_ps(v + j), _mm256_loadu_ps(alpha + j), ii),
                                 _mm256_loadu_ps(bias + j));
        __m256 t = _mm256_loadu_ps(th + j);
        __m256 ge = _mm256_cmp_ps(p, t, _CMP_GE_OQ);
        /* max(f, 0) is f > 0 ? f : 0 and min(f, cap) is f < cap ? f : cap, as in spike_count.
         * The division is needed only for a group with a lane at about twice its threshold or more:
         * where theta <= P < fl(1.999 theta), floor(fl(P / theta)) = 1. Normal theta > 0:
         * P / theta < 1.999 (1 + 2^-24) < 2 - 2^-23, which rounds to at most 2 - 2^-23 (a float);
         * subnormal theta = m 2^-149: fl(1.999 theta) <= 2 theta, so P <= (2 m - 1) 2^-149 and
         * P / theta <= 2 - 1/m < 2 - 2^-23; 1.999 theta overflowing to inf: P / theta < 1.999.
         * theta <= 0, NaN or inf: no finite P passes both tests. */
        __m256 f;
        const __m256 below2 = _mm256_cmp_ps(p, _mm256_mul_ps(t, _mm256_set1_ps(1.999f)), _CMP_LT_OQ);
        if (_mm256_movemask_ps(_mm256_andnot_ps(below2, ge)) == 0)
            f = _mm256_min_ps(_mm256_set1_ps(1.0f), capv);
        else
            f = _mm256_min_ps(_mm256_max_ps(_mm256_floor_ps(_mm256_div_ps(p, t)), zero), capv);
        __m256 sp = _mm256_and_ps(f, ge);
        nnz = append_events(ev, nnz, (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(sp, zero, _CMP_NEQ_UQ)), j);
        _mm256_storeu_ps(v + j, _mm256_sub_ps(p, _mm256_mul_ps(sp, t)));
        _mm256_storeu_ps(s + j, sp);
    }
#endif
    for (; j < n; ++j) {
        float ii = (isyn[j] + h[j]) * beta[j];
        isyn[j] = ii;
        float p = fmaf(v[j], alpha[j], ii) + bias[j];
        float sp = spike_count(p, th[j], cap);
        v[j] = p - sp * th[j];
        s[j] = sp;
        ev[nnz] = (int32_t)j;
        nnz += sp != 0.0f;
    }
    return nnz;
}

/* the same with k synapses per neuron (channel m = j k + q) */
static int64_t lif_rowk(const float *restrict h, const float *restrict alpha, const float *restrict beta,
                        const float *restrict th, const float *restrict bias, float cap, float *restrict isyn,
                        float *restrict v, float *restrict s, int32_t *restrict ev, int64_t n, int64_t k)
{
    int64_t nnz = 0;
    for (int64_t j = 0; j < n; ++j) {
        float syn = 0.0f;
        for (int64_t q = 0; q < k; ++q) {
            int64_t m = j * k + q;
            float qq = isyn[m] + h[m];
            float ii = qq * beta[m];
            syn = q == 0 ? ii : fmaf(qq, beta[m], syn);
            isyn[m] = ii;
        }
        float p = fmaf(v[j], alpha[j], syn) + bias[j];
        float sp = spike_count(p, th[j], cap);
        v[j] = p - sp * th[j];
        s[j] = sp;
        ev[nnz] = (int32_t)j;
        nnz += sp != 0.0f;
    }
    return nnz;
}

typedef struct {
    float *lin;      /* per Linear op: TILE rows of its width */
    float *rec;      /* TILE rows of the widest N k: a recurrent LIF's input plus its recurrent current */
    float *rec_out;  /* TILE rows: the recurrent current */
    int32_t *ev;     /* per op and sample: event indices (n_ops * TILE * width) */
    int64_t *cnt;    /* per op and sample: event count (-1: not gathered) */
    int32_t *in_ev;  /* per sample: the events of the current input row */
    float *st;       /* TILE * size: the tile's state */
    int32_t *all;    /* 0, 1, ..., width - 1 */
} workspace;

static void run_tile(const chain_args *c, const float *x, const float *state0, float *y, float *state, int64_t b0,
                     workspace *ws)
{
    const int64_t n_b = c->batch - b0 < TILE ? c->batch - b0 : TILE, width = c->width, S = c->size;
    memcpy(ws->st, state0 + b0 * S, (size_t)(n_b * S) * sizeof(float));
    /* the events of every LIF's spikes in the initial state (a recurrent product gathers them) */
    for (int64_t o = 0; o < c->n_ops; ++o)
        for (int64_t b = 0; b < n_b; ++b)
            ws->cnt[o * TILE + b] = -1;
    const float *h[TILE];
    float *outp[TILE];
    int32_t *evp[TILE];
    int64_t nnz[TILE];
    for (int64_t t = 0; t < c->steps; ++t) {
        for (int64_t b = 0; b < n_b; ++b) {
            h[b] = x + t * c->x_t + (b0 + b) * c->x_b;
            evp[b] = ws->in_ev + b * width;
            nnz[b] = -1;
        }
        float *lin = ws->lin;
        for (int64_t o = 0; o < c->n_ops; ++o) {
            const chain_op *op = &c->ops[o];
            if (op->kind == OP_LINEAR) {
                const int64_t n_in = op->a, n_out = op->b;
                for (int64_t b = 0; b < n_b; ++b)
                    outp[b] = lin + b * n_out;
                product(c, h, evp, nnz, n_b, c->prm + op->off, n_in, n_out, outp, ws->all);
                if (op->off2 >= 0) {
                    const float *cb = c->prm + op->off2;
                    for (int64_t b = 0; b < n_b; ++b)
                        for (int64_t j = 0; j < n_out; ++j)
                            outp[b][j] = outp[b][j] + cb[j];
                }
                for (int64_t b = 0; b < n_b; ++b) {
                    h[b] = outp[b];
                    evp[b] = ws->in_ev + b * width;
                    nnz[b] = -1;
                }
                lin += TILE * n_out;
                continue;
            }
            const int64_t n = op->a, k = op->b, nk = n * k;
            const float *pp = c->prm + op->off;
            const float *alpha = pp, *beta = pp + n, *th = pp + n + nk, *bias = pp + 2 * n + nk;
            const float cap = pp[3 * n + nk];
            if (op->off2 >= 0) { /* a = h + s[t-1] W_rec */
                const float *sprev[TILE];
                int32_t *evr[TILE];
                int64_t *cr = ws->cnt + o * TILE;
                for (int64_t b = 0; b < n_b; ++b) {
                    sprev[b] = ws->st + b * S + op->s_off + nk + n;
                    evr[b] = ws->ev + (o * TILE + b) * width;
                    outp[b] = ws->rec_out + b * width;
                }
                product(c, sprev, evr, cr, n_b, c->prm + op->off2, n, nk, outp, ws->all);
                for (int64_t b = 0; b < n_b; ++b) {
                    float *a = ws->rec + b * width;
                    for (int64_t m = 0; m < nk; ++m)
                        a[m] = h[b][m] + outp[b][m];
                    h[b] = a;
                }
            }
            for (int64_t b = 0; b < n_b; ++b) {
                float *sb = ws->st + b * S + op->s_off;
                int32_t *eb = ws->ev + (o * TILE + b) * width;
                ws->cnt[o * TILE + b] = k == 1 ? lif_row1(h[b], alpha, beta, th, bias, cap, sb, sb + nk, sb + nk + n, eb, n)
                                               : lif_rowk(h[b], alpha, beta, th, bias, cap, sb, sb + nk, sb + nk + n, eb, n, k);
                h[b] = sb + nk + n;
                evp[b] = eb;
                nnz[b] = ws->cnt[o * TILE + b];
            }
        }
        for (int64_t b = 0; b < n_b; ++b)
            memcpy(y + t * c->y_t + (b0 + b) * c->y_b, h[b], (size_t)c->n_last * sizeof(float));
    }
    memcpy(state + b0 * S, ws->st, (size_t)(n_b * S) * sizeof(float));
}

static int alloc_workspace(const chain_args *c, workspace *ws)
{
    int64_t lin = 0;
    for (int64_t o = 0; o < c->n_ops; ++o)
        if (c->ops[o].kind == OP_LINEAR)
            lin += c->ops[o].b;
    ws->lin = malloc((size_t)(TILE * (lin + 1)) * sizeof(float));
    ws->rec = malloc((size_t)(TILE * c->width) * sizeof(float));
    ws->rec_out = malloc((size_t)(TILE * c->width) * sizeof(float));
    ws->ev = malloc((size_t)(c->n_ops * TILE * c->width + 8) * sizeof(int32_t));
    ws->cnt = malloc((size_t)(c->n_ops * TILE + 1) * sizeof(int64_t));
    ws->in_ev = malloc((size_t)(TILE * c->width + 8) * sizeof(int32_t));
    ws->st = malloc((size_t)(TILE * c->size + 1) * sizeof(float));
    ws->all = malloc((size_t)c->width * sizeof(int32_t));
    if (ws->all)
        for (int64_t i = 0; i < c->width; ++i)
            ws->all[i] = (int32_t)i;
    return ws->lin && ws->rec && ws->rec_out && ws->ev && ws->cnt && ws->in_ev && ws->st && ws->all;
}

static void free_workspace(workspace *ws)
{
    free(ws->lin);
    free(ws->rec);
    free(ws->rec_out);
    free(ws->ev);
    free(ws->cnt);
    free(ws->in_ev);
    free(ws->st);
    free(ws->all);
}

/* x (T, B, n0), prm (P), ops (n_ops, 8) int32, state0 (B, S), cfg (2) = [mode, crossover]
 * -> y (T, B, n_last), state (B, S); x and y stored time-major (batch_major = 0) or as (B, T, n)
 * (batch_major = 1); returns 0, or -1 when a workspace could not be allocated */
int pond_chain_run(const float *x, const float *prm, const int32_t *ops32, const float *state0, const float *cfg,
                   float *y, float *state, int64_t steps, int64_t batch, int64_t n0, int64_t n_ops, int64_t size,
                   int64_t n_last, int batch_major)
{
    chain_op ops[64];
    if (n_ops > 64 || n_ops < 1)
        return -1;
    int64_t width = n0 > n_last ? n0 : n_last;
    for (int64_t o = 0; o < n_ops; ++o) {
        const int32_t *r = ops32 + o * 8;
        ops[o] = (chain_op){r[0], r[1], r[2], r[3], r[4], r[5]};
        int64_t w = r[0] == OP_LINEAR ? (r[1] > r[2] ? r[1] : r[2]) : (int64_t)r[1] * r[2];
        width = w > width ? w : width;
    }
    chain_args c = {prm, ops, n_ops, n0, n_last, size, steps, batch, width, 0, 0, 0, 0, (int)cfg[0], cfg[1]};
    c.x_t = batch_major ? n0 : batch * n0;
    c.x_b = batch_major ? steps * n0 : n0;
    c.y_t = batch_major ? n_last : batch * n_last;
    c.y_b = batch_major ? steps * n_last : n_last;
    const int64_t tiles = (batch + TILE - 1) / TILE;
    int failed = 0;
    POND_FP_CAPTURE
#pragma omp parallel reduction(| : failed)
    {
        POND_FP_ENTER
        workspace ws;
        if (!alloc_workspace(&c, &ws)) {
            failed = 1;
        } else {
#pragma omp for schedule(dynamic, 1)
            for (int64_t tile = 0; tile < tiles; ++tile)
                run_tile(&c, x, state0, y, state, tile * TILE, &ws);
        }
        free_workspace(&ws);
        POND_FP_LEAVE
    }
    return failed ? -1 : 0;
}

/* the XLA FFI handler: arguments x, prm, ops, state0, cfg; results y, state; x and y (T, B, n) in
 * XLA's layout {1, 0, 2} major to minor: stored batch-major (pondlib.nn.native.chain_forward asks for it) */
XLA_FFI_Error *pond_chain_handler(XLA_FFI_CallFrame *frame)
{
    if (pond_ffi_metadata(frame) || !pond_ffi_ready(frame, 5, 2))
        return NULL;
    XLA_FFI_Buffer *x = pond_ffi_arg(frame, 0), *prm = pond_ffi_arg(frame, 1), *ops = pond_ffi_arg(frame, 2);
    XLA_FFI_Buffer *st0 = pond_ffi_arg(frame, 3), *cfg = pond_ffi_arg(frame, 4);
    XLA_FFI_Buffer *y = pond_ffi_ret(frame, 0), *st = pond_ffi_ret(frame, 1);
    int rc = pond_chain_run(x->data, prm->data, ops->data, st0->data, cfg->data, y->data, st->data,
                            pond_ffi_dim(x, 0), pond_ffi_dim(x, 1), pond_ffi_dim(x, 2), pond_ffi_dim(ops, 0),
                            pond_ffi_dim(st0, 1), pond_ffi_dim(y, 2), 1);
    return rc == 0 ? NULL : pond_ffi_error(frame, "pondlib chain kernel: out of memory for its workspace, or more than 64 modules");
}
