/* pondlib: the element rules, one-row steps and row products shared by the training kernels of
 * pondlib.nn (lif.c: the LIF loops and Linear -> LIF pairs; lif_chain.c: chains of pairs). Static inline
 * functions: each kernel library has its own copy. See lif.c for the equations. */
#ifndef POND_LIF_ROWS_H
#define POND_LIF_ROWS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pond_ffi.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

/* GCC keeps loops that call floorf scalar unless floating-point traps are ruled out; no kernel here
 * inspects the floating-point exception flags, and the values are the same either way */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

/* ---------------------------------------------------------------------------------------------------
 * Element rules (the numba kernels' _spikes, _backward_row, _shift_decay, _exact_count)
 * --------------------------------------------------------------------------------------------------- */

static inline float spike_count(float p, float th, float cap)
{
    float f = floorf(p / th);
    float s = f > 0.0f ? f : 0.0f;
    s = s < cap ? s : cap;
    return p >= th ? s : 0.0f;
}

static inline float clipf(float v, float lo, float hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* floor(v f), or sign(v) where that is 0 (the chip's v >> d with its minimum step toward zero) */
static inline float shift_decay(float v, float f)
{
    float e = floorf(v * f);
    float sign = v > 0.0f ? 1.0f : (v < 0.0f ? -1.0f : 0.0f);
    return e != 0.0f ? e : sign;
}

/* min(floor(p / th), cap) where p >= th, else 0, corrected for the rounding of the quotient */
static inline float exact_count(float p, float th, float cap)
{
    float n0 = floorf(p / th);
    float r = p - n0 * th;
    n0 = n0 + (r >= th ? 1.0f : 0.0f) - (r < 0.0f ? 1.0f : 0.0f);
    return p >= th ? clipf(n0, 0.0f, cap) : 0.0f;
}

/* ---------------------------------------------------------------------------------------------------
 * One step of one row
 * --------------------------------------------------------------------------------------------------- */

/* forward step of the M neurons of one row: reads xt (M k), updates i (M k) and v (M), writes pt, qt, st */
static inline void forward_row(const float *restrict xt, const float *restrict alpha, const float *restrict beta,
                               const float *restrict th, const float *restrict bias, float cap, float *restrict pt,
                               float *restrict qt, float *restrict st, float *restrict i, float *restrict v, int64_t m,
                               int64_t k)
{
    if (k == 1) {
        for (int64_t n = 0; n < m; ++n) {
            float qq = i[n] + xt[n];
            float ii = qq * beta[n];
            i[n] = ii;
            qt[n] = qq;
            float p = fmaf(v[n], alpha[n], ii) + bias[n];
            float s = spike_count(p, th[n], cap);
            v[n] = p - s * th[n];
            pt[n] = p;
            st[n] = s;
        }
        return;
    }
    for (int64_t n = 0; n < m; ++n) {
        float syn = 0.0f;
        for (int64_t j = 0; j < k; ++j) {
            int64_t c = n * k + j;
            float qq = i[c] + xt[c];
            float ii = qq * beta[c];
            syn = j == 0 ? ii : fmaf(qq, beta[c], syn);
            i[c] = ii;
            qt[c] = qq;
        }
        float p = fmaf(v[n], alpha[n], syn) + bias[n];
        float s = spike_count(p, th[n], cap);
        v[n] = p - s * th[n];
        pt[n] = p;
        st[n] = s;
    }
}

typedef struct {
    float cap, scale;
    int kind;
} surrogate_cfg;

/* reverse step of the M neurons of one row (numba's _backward_row): updates lam_p (M), lam_q (M k) and
 * the sums for alpha, bias, threshold (M) and beta (M k); writes dxt = dL/dx of the step (M k) */
static inline void backward_row(const float *restrict pt, const float *restrict qt, const float *restrict gt,
                                float *restrict dxt, const float *restrict alpha, const float *restrict beta,
                                const float *restrict th, float cap, float scale, float *restrict lam_p,
                                float *restrict lam_q, float *restrict a_alpha, float *restrict a_bias,
                                float *restrict a_th, float *restrict a_beta, int64_t m, int64_t k, int kind)
{
    const float cap1 = cap + 1.0f;
    for (int64_t n = 0; n < m; ++n) {
        float p = pt[n];
        float thn = th[n];
        float u = p / thn;
        float s = spike_count(p, thn, cap);
        float v_t = p - s * thn;
        float d = u - 1.0f;
        float ad = d > 0.0f ? d : -d;
        float below;
        if (kind == 0) {
            float den = 1.0f + scale * ad;
            below = 1.0f / (den * den);
        } else if (kind == 1) {
            float tri = 1.0f - scale * ad;
            below = tri > 0.0f ? tri : 0.0f;
        } else {
            float c = scale * d;
            below = 1.0f / (1.0f + c * c);
        }
        float above = u < cap1 ? 1.0f : 0.0f;
        float sg = u < 1.0f ? below : above;
        float dsdp = sg / thn;
        float dsdth = -sg * u / thn;
        float lam_s = gt[n];
        float lam_old = lam_p[n];
        float lam_v = alpha[n] * lam_old;
        float lam_new = lam_v * (1.0f - thn * dsdp) + lam_s * dsdp;
        a_alpha[n] += lam_old * v_t;
        a_bias[n] += lam_old;
        a_th[n] += (lam_s - thn * lam_v) * dsdth - lam_v * s;
        lam_p[n] = lam_new;
        for (int64_t j = 0; j < k; ++j) {
            int64_t c = n * k + j;
            float lam_i = lam_new + lam_q[c];
            float lq = beta[c] * lam_i;
            a_beta[c] += lam_i * qt[c];
            lam_q[c] = lq;
            dxt[c] = lq;
        }
    }
}

/* the same with the surrogate kind a constant (each loop then holds no branch on it); one copy, out of line
 * (inlined at each caller it would multiply the build time) */
static __attribute__((noinline, unused)) void backward_row_kind(const float *restrict pt, const float *restrict qt, const float *restrict gt,
                                     float *restrict dxt, const float *restrict alpha, const float *restrict beta,
                                     const float *restrict th, surrogate_cfg sc, float *restrict lam_p,
                                     float *restrict lam_q, float *restrict a_alpha, float *restrict a_bias,
                                     float *restrict a_th, float *restrict a_beta, int64_t m, int64_t k)
{
    if (k == 1 && sc.kind == 0)
        backward_row(pt, qt, gt, dxt, alpha, beta, th, sc.cap, sc.scale, lam_p, lam_q, a_alpha, a_bias, a_th, a_beta, m, 1, 0);
    else if (k == 1 && sc.kind == 1)
        backward_row(pt, qt, gt, dxt, alpha, beta, th, sc.cap, sc.scale, lam_p, lam_q, a_alpha, a_bias, a_th, a_beta, m, 1, 1);
    else if (k == 1)
        backward_row(pt, qt, gt, dxt, alpha, beta, th, sc.cap, sc.scale, lam_p, lam_q, a_alpha, a_bias, a_th, a_beta, m, 1, 2);
    else
        backward_row(pt, qt, gt, dxt, alpha, beta, th, sc.cap, sc.scale, lam_p, lam_q, a_alpha, a_bias, a_th, a_beta, m, k,
                     sc.kind);
}

/* the integer step with bit-shift decays and saturation of the M neurons of one row (numba's _bitshift_row) */
/* ---------------------------------------------------------------------------------------------------
 * Products over the non-zero inputs of a row
 * --------------------------------------------------------------------------------------------------- */

/* indices of the non-zero entries of h[0..n), ascending; returns their number (idx has room for n + 16:
 * the vector paths store whole vectors) */
static inline int64_t gather(const float *restrict h, int64_t n, int32_t *restrict idx)
{
    int64_t nnz = 0, i = 0;
#if defined(__AVX512F__)
    const __m512 zero = _mm512_setzero_ps();
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (; i + 16 <= n; i += 16) {
        __mmask16 m = _mm512_cmp_ps_mask(_mm512_loadu_ps(h + i), zero, _CMP_NEQ_UQ);
        if (m == 0)
            continue;
        __m512i ids = _mm512_maskz_compress_epi32(m, _mm512_add_epi32(lanes, _mm512_set1_epi32((int32_t)i)));
        _mm512_storeu_si512((void *)(idx + nnz), ids);
        nnz += __builtin_popcount((unsigned)m);
    }
#elif defined(__AVX2__)
    const __m256 zero = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8) {
        unsigned m = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(h + i), zero, _CMP_NEQ_UQ));
        for (; m != 0; m &= m - 1) /* the set lanes, ascending */
            idx[nnz++] = (int32_t)(i + __builtin_ctz(m));
    }
#endif
    for (; i < n; ++i) {
        idx[nnz] = (int32_t)i;
        nnz += h[i] != 0.0f;
    }
    return nnz;
}

/* a[m] = (sum over the events p ascending of fma(h[ev[p]], w[ev[p], m], .) from +0) (+ c[m]); with
 * AVX-512, blocks of 64 (then 16, then a masked tail) outputs stay in registers while the events stream */
static inline void current(const float *restrict h, const int32_t *restrict ev, int64_t nnz, const float *restrict w,
                           const float *restrict c, int64_t mk, float *restrict a)
{
    int64_t o = 0;
#if defined(__AVX512F__)
    for (; o + 64 <= mk; o += 64) {
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t p = 0; p < nnz; ++p) {
            const __m512 hv = _mm512_set1_ps(h[ev[p]]);
            const float *row = w + (int64_t)ev[p] * mk + o;
            a0 = _mm512_fmadd_ps(hv, _mm512_loadu_ps(row), a0);
            a1 = _mm512_fmadd_ps(hv, _mm512_loadu_ps(row + 16), a1);
            a2 = _mm512_fmadd_ps(hv, _mm512_loadu_ps(row + 32), a2);
            a3 = _mm512_fmadd_ps(hv, _mm512_loadu_ps(row + 48), a3);
        }
        _mm512_storeu_ps(a + o, a0);
        _mm512_storeu_ps(a + o + 16, a1);
        _mm512_storeu_ps(a + o + 32, a2);
        _mm512_storeu_ps(a + o + 48, a3);
    }
    for (; o < mk; o += 16) {
        const __mmask16 m = mk - o >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (mk - o)) - 1u);
        __m512 acc = _mm512_setzero_ps();
        for (int64_t p = 0; p < nnz; ++p)
            acc = _mm512_fmadd_ps(_mm512_set1_ps(h[ev[p]]), _mm512_maskz_loadu_ps(m, w + (int64_t)ev[p] * mk + o), acc);
        _mm512_mask_storeu_ps(a + o, m, acc);
    }
#else
    for (; o < mk; ++o)
        a[o] = 0.0f;
    for (int64_t p = 0; p < nnz; ++p) {
        const float hv = h[ev[p]];
        const float *restrict row = w + (int64_t)ev[p] * mk;
        for (int64_t q = 0; q < mk; ++q)
            a[q] = fmaf(hv, row[q], a[q]);
    }
#endif
    if (c != NULL)
        for (int64_t q = 0; q < mk; ++q)
            a[q] = a[q] + c[q];
}

/* out[i] = sum over o ascending of fma(v[o], wt[o, i], .) from +0, for i < n (wt (no, n) row-major); with
 * AVX-512 blocks of 64 outputs stay in registers while o runs */
static inline void gemv_t(const float *restrict v, const float *restrict wt, int64_t no, int64_t n, float *restrict out)
{
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 64 <= n; i += 64) {
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t o = 0; o < no; ++o) {
            const __m512 vv = _mm512_set1_ps(v[o]);
            const float *col = wt + o * n + i;
            a0 = _mm512_fmadd_ps(vv, _mm512_loadu_ps(col), a0);
            a1 = _mm512_fmadd_ps(vv, _mm512_loadu_ps(col + 16), a1);
            a2 = _mm512_fmadd_ps(vv, _mm512_loadu_ps(col + 32), a2);
            a3 = _mm512_fmadd_ps(vv, _mm512_loadu_ps(col + 48), a3);
        }
        _mm512_storeu_ps(out + i, a0);
        _mm512_storeu_ps(out + i + 16, a1);
        _mm512_storeu_ps(out + i + 32, a2);
        _mm512_storeu_ps(out + i + 48, a3);
    }
    for (; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
        __m512 acc = _mm512_setzero_ps();
        for (int64_t o = 0; o < no; ++o)
            acc = _mm512_fmadd_ps(_mm512_set1_ps(v[o]), _mm512_maskz_loadu_ps(m, wt + o * n + i), acc);
        _mm512_mask_storeu_ps(out + i, m, acc);
    }
#else
    for (int64_t j = 0; j < n; ++j)
        out[j] = 0.0f;
    for (int64_t o = 0; o < no; ++o) {
        const float vv = v[o];
        const float *restrict col = wt + o * n;
        for (int64_t j = 0; j < n; ++j)
            out[j] = fmaf(vv, col[j], out[j]);
    }
#endif
}

/* row[m] = fma(hv, da[m], row[m]) for m < mk (one event's term of dW) */
static inline void axpy(float hv, const float *restrict da, float *restrict row, int64_t mk)
{
    int64_t o = 0;
#if defined(__AVX512F__)
    const __m512 hh = _mm512_set1_ps(hv);
    for (; o < mk; o += 16) {
        const __mmask16 m = mk - o >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (mk - o)) - 1u);
        _mm512_mask_storeu_ps(row + o, m,
                              _mm512_fmadd_ps(hh, _mm512_maskz_loadu_ps(m, da + o), _mm512_maskz_loadu_ps(m, row + o)));
    }
#endif
    for (; o < mk; ++o)
        row[o] = fmaf(hv, da[o], row[o]);
}

/* tiles of rows whose parameter sums are kept apart: a number fixed by R alone (never by the threads) */
static inline int64_t pair_tiles(int64_t rows)
{
    return rows < 8 ? rows : 8;
}

static const char OOM[] = "pondlib training kernel: out of memory for its workspace";

static inline float *fdata(XLA_FFI_Buffer *b)
{
    return (float *)b->data;
}

#endif
