/* pondlib: the training kernels of pondlib.nn (the LIF adjoint's time loops, the integer LIF with bit-shift
 * decays, and Linear -> LIF pairs with their products inside), the C twin of pondlib/nn/lif_kernels.py.
 * Built by pondlib.cprogram.native (-O3 -march=native -ffp-contract=off: every fused multiply-add is an
 * explicit fmaf, where the numba kernels call llvm.fma), called by XLA through its FFI
 * (pondlib.nn.native). The LIF loops give the numba kernels' results bit for bit, on any number of
 * threads: the rows (samples) are independent in the forward loops, and the backward loop keeps one
 * accumulator per row and neuron, summed over the rows in ascending order at the end, as numba does.
 *
 * Arrays are float32. A "row" is one sample: x (T, R, M k), per-neuron parameters of length M (alpha,
 * threshold, bias) or M k (beta), states (R, M k) and (R, M). Per step t, row r, neuron n, synapse j
 * (m = n k + j):
 *   q = I + x;  I = q beta;  P = fma(V, alpha, sum_j I_j) + bias  (the sum: I_0, then fma(q_j, beta_j, .))
 *   s = P >= theta ? min(max(floor(P / theta), 0), cap) : 0;  V = P - s theta
 * and the adjoint recursion of pondlib.nn.adjoint backwards in time.
 *
 * The pair kernels (pond_pair_forward / pond_pair_backward) compute the Linear's current of each step and
 * row inside the loop, from the non-zero inputs only (sum over the active inputs i, ascending, of
 * fma(x_i, W[i, m], .) from +0, then + c[m]: the sum of pondlib/nn/csrc/chain.c), so no (T, R, M k) stack
 * of currents is ever written; the backward pair accumulates dW = sum x^T dL/da over the same active
 * inputs and, when asked, dL/dx = dL/da W^T, step by step. Their parameter sums are kept per tile of rows
 * (a number of tiles fixed by R alone) and added in tile order: the same bits on any number of threads.
 */
#include "lif_rows.h"

/* the membrane part of the integer step of neuron n, from its synaptic sum syn */
static inline void bitshift_membrane(float syn, const float *restrict f_mem, const float *restrict th,
                                     const float *restrict bias, float cap, float lo, float hi, float *restrict pt,
                                     float *restrict st, float *restrict v, int64_t n)
{
    float vn = v[n];
    float dv = clipf(syn - shift_decay(vn, f_mem[n]), lo, hi);
    dv = clipf(dv + bias[n], lo, hi);
    float p = clipf(vn + dv, lo, hi);
    float s = exact_count(p, th[n], cap);
    v[n] = p - s * th[n];
    pt[n] = p;
    st[n] = s;
}

/* kept out of line: inlined into the OpenMP body GCC 12 leaves its loop scalar (measured 30x slower) */
static __attribute__((noinline)) void bitshift_row(const float *restrict ct, const float *restrict f_mem, const float *restrict f_syn,
                                const float *restrict th, const float *restrict bias, float cap, float lo, float hi,
                                float *restrict pt, float *restrict qt, float *restrict st, float *restrict i,
                                float *restrict v, int64_t m, int64_t k)
{
    if (k == 1) { /* one loop without an inner one: it vectorizes */
        for (int64_t n = 0; n < m; ++n) {
            float qq = clipf(i[n] + ct[n], lo, hi);
            float ii = qq - shift_decay(qq, f_syn[n]);
            i[n] = ii;
            qt[n] = qq;
            bitshift_membrane(0.0f + ii, f_mem, th, bias, cap, lo, hi, pt, st, v, n);
        }
        return;
    }
    for (int64_t n = 0; n < m; ++n) {
        float syn = 0.0f;
        for (int64_t j = 0; j < k; ++j) {
            int64_t c = n * k + j;
            float qq = clipf(i[c] + ct[c], lo, hi);
            float ii = qq - shift_decay(qq, f_syn[c]);
            i[c] = ii;
            qt[c] = qq;
            syn = syn + ii;
        }
        bitshift_membrane(syn, f_mem, th, bias, cap, lo, hi, pt, st, v, n);
    }
}

/* ---------------------------------------------------------------------------------------------------
 * The LIF loops (numba's _forward, _backward, _bitshift_forward); each returns 0, or -1 when out of memory.
 * Each thread takes a block of rows and runs time outermost over it, so that every (T, R, .) stack is
 * read and written in memory order; a row's values do not depend on the blocks.
 * --------------------------------------------------------------------------------------------------- */

/* this thread's block [*r0, *r1) of the rows (all of them outside a parallel region) */
static inline void row_block(int64_t rows, int64_t *r0, int64_t *r1)
{
#ifdef _OPENMP
    const int64_t nth = omp_get_num_threads(), id = omp_get_thread_num();
#else
    const int64_t nth = 1, id = 0;
#endif
    *r0 = rows * id / nth;
    *r1 = rows * (id + 1) / nth;
}

/* the backward loops' last pass: the parameter sums (alpha, bias, threshold: M; beta: M k) over the rows in
 * ascending order, with the late terms of step 0 (as in the XLA loop), and the initial states' cotangents;
 * work holds per row lam_p, s_alpha, s_bias, s_th (M each), lam_q, acc_beta (M k each), as the loops lay it out */
static void lif_sums(const float *work, const float *alpha, const float *v0, float *a_alpha, float *a_bias,
                     float *a_th, float *a_beta, float *d_v0, float *d_i0, int64_t rows, int64_t m, int64_t k)
{
    const int64_t mk = m * k;
    const float *lam_p = work, *s_alpha = lam_p + rows * m, *s_bias = s_alpha + rows * m, *s_th = s_bias + rows * m;
    const float *lam_q = s_th + rows * m, *acc_beta = lam_q + rows * mk;
    memset(a_alpha, 0, (size_t)m * sizeof(float));
    memset(a_bias, 0, (size_t)m * sizeof(float));
    memset(a_th, 0, (size_t)m * sizeof(float));
    memset(a_beta, 0, (size_t)mk * sizeof(float));
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t n = 0; n < m; ++n) {
            float lam0 = lam_p[r * m + n];
            d_v0[r * m + n] = alpha[n] * lam0;
            a_alpha[n] += s_alpha[r * m + n] + lam0 * v0[r * m + n];
            a_bias[n] += s_bias[r * m + n] + lam0;
            a_th[n] += s_th[r * m + n];
        }
        for (int64_t c = 0; c < mk; ++c) {
            a_beta[c] += acc_beta[r * mk + c];
            d_i0[r * mk + c] = lam_q[r * mk + c];
        }
    }
}

/* x (T, R, M k) -> pre (T, R, M), q (T, R, M k), spikes (T, R, M) from i0 (R, M k), v0 (R, M) to i_f, v_f */
int pond_lif_forward(const float *x, const float *alpha, const float *beta, const float *th, const float *bias,
                     float cap, float *pre, float *q, float *spikes, const float *i0, const float *v0, float *i_f,
                     float *v_f, int64_t steps, int64_t rows, int64_t m, int64_t k)
{
    const int64_t mk = m * k;
    memcpy(i_f, i0, (size_t)(rows * mk) * sizeof(float));
    memcpy(v_f, v0, (size_t)(rows * m) * sizeof(float));
    POND_FP_CAPTURE
#pragma omp parallel if (rows > 1 && steps * rows * mk > 32768)
    {
        POND_FP_ENTER
        int64_t r0, r1;
        row_block(rows, &r0, &r1);
        for (int64_t t = 0; t < steps; ++t)
            for (int64_t r = r0; r < r1; ++r) {
                const int64_t at = t * rows + r;
                forward_row(x + at * mk, alpha, beta, th, bias, cap, pre + at * m, q + at * mk, spikes + at * m,
                            i_f + r * mk, v_f + r * m, m, k);
            }
        POND_FP_LEAVE
    }
    return 0;
}

/* cur (T, R, M k) -> pre, q, spikes as above and the final synaptic state i_f; cfg = [cap, lo, hi] */
int pond_bitshift_forward(const float *cur, const float *f_mem, const float *f_syn, const float *th,
                          const float *bias, const float *cfg, float *pre, float *q, float *spikes, const float *i0,
                          const float *v0, float *i_f, int64_t steps, int64_t rows, int64_t m, int64_t k)
{
    const int64_t mk = m * k;
    const float cap = cfg[0], lo = cfg[1], hi = cfg[2];
    float *v = malloc((size_t)(rows * m + 1) * sizeof(float));
    if (v == NULL)
        return -1;
    memcpy(i_f, i0, (size_t)(rows * mk) * sizeof(float));
    memcpy(v, v0, (size_t)(rows * m) * sizeof(float));
    POND_FP_CAPTURE
#pragma omp parallel if (rows > 1 && steps * rows * mk > 32768)
    {
        POND_FP_ENTER
        int64_t r0, r1;
        row_block(rows, &r0, &r1);
        for (int64_t t = 0; t < steps; ++t)
            for (int64_t r = r0; r < r1; ++r) {
                const int64_t at = t * rows + r;
                bitshift_row(cur + at * mk, f_mem, f_syn, th, bias, cap, lo, hi, pre + at * m, q + at * mk,
                             spikes + at * m, i_f + r * mk, v + r * m, m, k);
            }
        POND_FP_LEAVE
    }
    free(v);
    return 0;
}

/* the adjoint loop of a non-recurrent layer whose only cotangent is the spikes' g (T, R, M): per-neuron
 * sums a_* (M or M k, summed over the rows in ascending order), dx (T, R, M k), d_i0 (R, M k), d_v0 (R, M);
 * cfg = [cap, scale, kind] */
int pond_lif_backward(const float *pre, const float *q, const float *g, const float *alpha, const float *beta,
                      const float *th, const float *v0, const float *cfg, float *a_alpha, float *a_beta, float *a_th,
                      float *a_bias, float *dx, float *d_i0, float *d_v0, int64_t steps, int64_t rows, int64_t m,
                      int64_t k)
{
    const int64_t mk = m * k;
    const surrogate_cfg sc = {cfg[0], cfg[1], (int)cfg[2]};
    /* per row: lam_p, s_alpha, s_bias, s_th (M each), lam_q, acc_beta (M k each) */
    float *work = calloc((size_t)(rows * (4 * m + 2 * mk) + 1), sizeof(float));
    if (work == NULL)
        return -1;
    float *lam_p = work, *s_alpha = lam_p + rows * m, *s_bias = s_alpha + rows * m, *s_th = s_bias + rows * m;
    float *lam_q = s_th + rows * m, *acc_beta = lam_q + rows * mk;
    POND_FP_CAPTURE
#pragma omp parallel if (rows > 1 && steps * rows * mk > 32768)
    {
        POND_FP_ENTER
        int64_t r0, r1;
        row_block(rows, &r0, &r1);
        for (int64_t t = steps - 1; t >= 0; --t)
            for (int64_t r = r0; r < r1; ++r) {
                const int64_t at = t * rows + r;
                backward_row_kind(pre + at * m, q + at * mk, g + at * m, dx + at * mk, alpha, beta, th, sc,
                                  lam_p + r * m, lam_q + r * mk, s_alpha + r * m, s_bias + r * m, s_th + r * m,
                                  acc_beta + r * mk, m, k);
            }
        POND_FP_LEAVE
    }
    lif_sums(work, alpha, v0, a_alpha, a_bias, a_th, a_beta, d_v0, d_i0, rows, m, k);
    free(work);
    return 0;
}

/* ---------------------------------------------------------------------------------------------------
 * Linear -> LIF pairs: the currents a = x W + c computed inside the loops
 * --------------------------------------------------------------------------------------------------- */

typedef struct {
    const float *x;         /* the Linear's input, element (t, r, i) at x[t * x_t + r * x_r + i] */
    int64_t x_t, x_r;       /* its strides (time-major or batch-major storage) */
    const float *w, *c;     /* W (n_in, M k) row-major; c (M k) or NULL */
    int64_t steps, rows, n_in, m, k;
    const float *gf, *wn;   /* backward: the spike cotangent as gf (T, R, kn) wn^T, wn (M, kn); or NULL */
    int64_t kn;
    float *da;              /* backward: dL/da (T, R, M k) written here when not NULL */
} pair_dims;

/* forward of Linear(n_in -> M k) -> LIF(M, k): pre (T, R, M), q (T, R, M k), spikes (T, R, M), i_f, v_f */
int pond_pair_forward(const pair_dims *d, const float *alpha, const float *beta, const float *th, const float *bias,
                      float cap, float *pre, float *q, float *spikes, const float *i0, const float *v0, float *i_f,
                      float *v_f)
{
    const int64_t m = d->m, k = d->k, mk = m * k, rows = d->rows;
    memcpy(i_f, i0, (size_t)(rows * mk) * sizeof(float));
    memcpy(v_f, v0, (size_t)(rows * m) * sizeof(float));
    int failed = 0;
    POND_FP_CAPTURE
#pragma omp parallel reduction(| : failed) if (rows > 1)
    {
        POND_FP_ENTER
        float *a = malloc((size_t)(mk + 1) * sizeof(float));
        int32_t *ev = malloc((size_t)(d->n_in + 17) * sizeof(int32_t));
        if (a == NULL || ev == NULL) {
            failed = 1;
        } else {
#pragma omp for schedule(static)
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t t = 0; t < d->steps; ++t) {
                    const float *h = d->x + t * d->x_t + r * d->x_r;
                    current(h, ev, gather(h, d->n_in, ev), d->w, d->c, mk, a);
                    const int64_t at = t * rows + r;
                    forward_row(a, alpha, beta, th, bias, cap, pre + at * m, q + at * mk, spikes + at * m,
                                i_f + r * mk, v_f + r * m, m, k);
                }
        }
        free(a);
        free(ev);
        POND_FP_LEAVE
    }
    return failed ? -1 : 0;
}

/* backward of the pair whose only cotangent is the spikes' g (T, R, M), or, when d->gf is set, the
 * product of the next pair's dL/da and its weights, g[t, r, n] = sum over o ascending of
 * fma(gf[t, r, o], wn[n, o], .) from +0 (no (T, R, M) stack of it is read): the LIF's sums and
 * initial-state cotangents as pond_lif_backward gives them, dW (n_in, M k), dc (M k), dL/da into d->da
 * when set and, when dx is not NULL, dx (T, R, n_in) time-major (the same sums); cfg = [cap, scale, kind] */
int pond_pair_backward(const pair_dims *d, const float *pre, const float *q, const float *g, const float *alpha,
                       const float *beta, const float *th, const float *v0, const float *cfg, float *a_alpha,
                       float *a_beta, float *a_th, float *a_bias, float *dw, float *dc, float *dx, float *d_i0,
                       float *d_v0)
{
    const int64_t m = d->m, k = d->k, mk = m * k, rows = d->rows, n_in = d->n_in, steps = d->steps;
    const surrogate_cfg sc = {cfg[0], cfg[1], (int)cfg[2]};
    const int64_t tiles = pair_tiles(rows), per = (rows + tiles - 1) / (tiles > 0 ? tiles : 1);
    const int64_t kn = d->gf != NULL ? d->kn : 0;
    float *work = calloc((size_t)(rows * (4 * m + 2 * mk) + tiles * (n_in * mk + mk) + n_in * mk + kn * m + 1),
                         sizeof(float));
    if (work == NULL)
        return -1;
    float *lam_p = work, *s_alpha = lam_p + rows * m, *s_bias = s_alpha + rows * m, *s_th = s_bias + rows * m;
    float *lam_q = s_th + rows * m, *acc_beta = lam_q + rows * mk;
    float *part_w = acc_beta + rows * mk, *part_c = part_w + tiles * n_in * mk, *wt = part_c + tiles * mk;
    float *wnt = wt + n_in * mk; /* wn^T (kn, M) */
    for (int64_t n = 0; n < m; ++n)
        for (int64_t o = 0; o < kn; ++o)
            wnt[o * m + n] = d->wn[n * kn + o];
    if (dx != NULL) /* W^T (M k, n_in): dx = sum over m ascending of fma(dL/da_m, W^T[m, :], .), vectorized over i */
        for (int64_t i = 0; i < n_in; ++i)
            for (int64_t o = 0; o < mk; ++o)
                wt[o * n_in + i] = d->w[i * mk + o];
    int failed = 0;
    POND_FP_CAPTURE
#pragma omp parallel reduction(| : failed) if (rows > 1)
    {
        POND_FP_ENTER
        float *da = malloc((size_t)(mk + 1) * sizeof(float));
        float *gr = malloc((size_t)(m + 1) * sizeof(float));
        int32_t *ev = malloc((size_t)(n_in + 17) * sizeof(int32_t));
        if (da == NULL || gr == NULL || ev == NULL) {
            failed = 1;
        } else {
#pragma omp for schedule(dynamic, 1)
            for (int64_t tile = 0; tile < tiles; ++tile) {
                float *pw = part_w + tile * n_in * mk, *pc = part_c + tile * mk;
                const int64_t r1 = (tile + 1) * per < rows ? (tile + 1) * per : rows;
                for (int64_t r = tile * per; r < r1; ++r)
                    for (int64_t t = steps - 1; t >= 0; --t) {
                        const int64_t at = t * rows + r;
                        const float *gt = gr;
                        if (kn == 0)
                            gt = g + at * m;
                        else {
                            gemv_t(d->gf + at * kn, wnt, kn, m, gr);
                        }
                        backward_row_kind(pre + at * m, q + at * mk, gt, da, alpha, beta, th, sc,
                                          lam_p + r * m, lam_q + r * mk, s_alpha + r * m, s_bias + r * m,
                                          s_th + r * m, acc_beta + r * mk, m, k);
                        const float *h = d->x + t * d->x_t + r * d->x_r;
                        const int64_t nnz = gather(h, n_in, ev);
                        for (int64_t p = 0; p < nnz; ++p)
                            axpy(h[ev[p]], da, pw + (int64_t)ev[p] * mk, mk);
                        for (int64_t o = 0; o < mk; ++o)
                            pc[o] = pc[o] + da[o];
                        if (d->da != NULL)
                            memcpy(d->da + at * mk, da, (size_t)mk * sizeof(float));
                        if (dx != NULL)
                            gemv_t(da, wt, mk, n_in, dx + at * n_in);
                    }
            }
        }
        free(da);
        free(gr);
        free(ev);
        POND_FP_LEAVE
    }
    if (failed) {
        free(work);
        return -1;
    }
    memset(dw, 0, (size_t)(n_in * mk) * sizeof(float));
    memset(dc, 0, (size_t)mk * sizeof(float));
    for (int64_t tile = 0; tile < tiles; ++tile) {
        const float *pw = part_w + tile * n_in * mk, *pc = part_c + tile * mk;
        for (int64_t e = 0; e < n_in * mk; ++e)
            dw[e] = dw[e] + pw[e];
        for (int64_t o = 0; o < mk; ++o)
            dc[o] = dc[o] + pc[o];
    }
    lif_sums(work, alpha, v0, a_alpha, a_bias, a_th, a_beta, d_v0, d_i0, rows, m, k);
    free(work);
    return 0;
}

/* ---------------------------------------------------------------------------------------------------
 * XLA FFI handlers (argument orders: pondlib.nn.native)
 * --------------------------------------------------------------------------------------------------- */

/* x (T, R, M k), alpha (M), beta (M k), threshold (M), bias (M), i0 (R, M k), v0 (R, M), cfg [cap]
 * -> pre (T, R, M), q (T, R, M k), spikes (T, R, M), i_f (R, M k), v_f (R, M) */
XLA_FFI_Error *pond_lif_forward_handler(XLA_FFI_CallFrame *frame)
{
    if (pond_ffi_metadata(frame) || !pond_ffi_ready(frame, 8, 5))
        return NULL;
    XLA_FFI_Buffer *x = pond_ffi_arg(frame, 0);
    const int64_t steps = pond_ffi_dim(x, 0), rows = pond_ffi_dim(x, 1), mk = pond_ffi_dim(x, 2);
    const int64_t m = pond_ffi_dim(pond_ffi_arg(frame, 1), 0);
    int rc = pond_lif_forward(fdata(x), fdata(pond_ffi_arg(frame, 1)), fdata(pond_ffi_arg(frame, 2)),
                              fdata(pond_ffi_arg(frame, 3)), fdata(pond_ffi_arg(frame, 4)),
                              fdata(pond_ffi_arg(frame, 7))[0], fdata(pond_ffi_ret(frame, 0)),
                              fdata(pond_ffi_ret(frame, 1)), fdata(pond_ffi_ret(frame, 2)),
                              fdata(pond_ffi_arg(frame, 5)), fdata(pond_ffi_arg(frame, 6)),
                              fdata(pond_ffi_ret(frame, 3)), fdata(pond_ffi_ret(frame, 4)), steps, rows, m,
                              m > 0 ? mk / m : 1);
    return rc == 0 ? NULL : pond_ffi_error(frame, OOM);
}

/* cur, f_mem, f_syn, threshold, bias, i0, v0, cfg [cap, lo, hi] -> pre, q, spikes, i_f (as above) */
XLA_FFI_Error *pond_bitshift_forward_handler(XLA_FFI_CallFrame *frame)
{
    if (pond_ffi_metadata(frame) || !pond_ffi_ready(frame, 8, 4))
        return NULL;
    XLA_FFI_Buffer *x = pond_ffi_arg(frame, 0);
    const int64_t steps = pond_ffi_dim(x, 0), rows = pond_ffi_dim(x, 1), mk = pond_ffi_dim(x, 2);
    const int64_t m = pond_ffi_dim(pond_ffi_arg(frame, 1), 0);
    int rc = pond_bitshift_forward(fdata(x), fdata(pond_ffi_arg(frame, 1)), fdata(pond_ffi_arg(frame, 2)),
                                   fdata(pond_ffi_arg(frame, 3)), fdata(pond_ffi_arg(frame, 4)),
                                   fdata(pond_ffi_arg(frame, 7)), fdata(pond_ffi_ret(frame, 0)),
                                   fdata(pond_ffi_ret(frame, 1)), fdata(pond_ffi_ret(frame, 2)),
                                   fdata(pond_ffi_arg(frame, 5)), fdata(pond_ffi_arg(frame, 6)),
                                   fdata(pond_ffi_ret(frame, 3)), steps, rows, m, m > 0 ? mk / m : 1);
    return rc == 0 ? NULL : pond_ffi_error(frame, OOM);
}

/* pre (T, R, M), q (T, R, M k), g (T, R, M), alpha (M), beta (M k), threshold (M), v0 (R, M),
 * cfg [cap, scale, kind] -> d_alpha (M), d_beta (M k), d_threshold (M), d_bias (M), dx (T, R, M k),
 * d_i0 (R, M k), d_v0 (R, M) */
XLA_FFI_Error *pond_lif_backward_handler(XLA_FFI_CallFrame *frame)
{
    if (pond_ffi_metadata(frame) || !pond_ffi_ready(frame, 8, 7))
        return NULL;
    XLA_FFI_Buffer *pre = pond_ffi_arg(frame, 0);
    const int64_t steps = pond_ffi_dim(pre, 0), rows = pond_ffi_dim(pre, 1), m = pond_ffi_dim(pre, 2);
    const int64_t mk = pond_ffi_dim(pond_ffi_arg(frame, 4), 0);
    float *r[7];
    for (int i = 0; i < 7; ++i)
        r[i] = fdata(pond_ffi_ret(frame, i));
    int rc = pond_lif_backward(fdata(pre), fdata(pond_ffi_arg(frame, 1)), fdata(pond_ffi_arg(frame, 2)),
                               fdata(pond_ffi_arg(frame, 3)), fdata(pond_ffi_arg(frame, 4)),
                               fdata(pond_ffi_arg(frame, 5)), fdata(pond_ffi_arg(frame, 6)),
                               fdata(pond_ffi_arg(frame, 7)), r[0], r[1], r[2], r[3], r[4], r[5], r[6], steps, rows, m,
                               m > 0 ? mk / m : 1);
    return rc == 0 ? NULL : pond_ffi_error(frame, OOM);
}

/* the pair's dimensions from x (T, R, n_in) and W (n_in, M k); x stored time-major, or batch-major
 * (XLA layout {1, 0, 2}) when batch_major; the Linear's bias c (M k) when has_c */
static pair_dims pair_from(XLA_FFI_CallFrame *frame, int64_t m, int batch_major, int has_c)
{
    XLA_FFI_Buffer *x = pond_ffi_arg(frame, 0), *w = pond_ffi_arg(frame, 1), *c = pond_ffi_arg(frame, 2);
    pair_dims d;
    d.x = fdata(x);
    d.steps = pond_ffi_dim(x, 0);
    d.rows = pond_ffi_dim(x, 1);
    d.n_in = pond_ffi_dim(x, 2);
    d.x_t = batch_major ? d.n_in : d.rows * d.n_in;
    d.x_r = batch_major ? d.steps * d.n_in : d.n_in;
    d.w = fdata(w);
    d.m = m;
    d.k = m > 0 ? pond_ffi_dim(w, 1) / m : 1;
    d.c = has_c && pond_ffi_dim(c, 0) == pond_ffi_dim(w, 1) ? fdata(c) : NULL;
    d.gf = d.wn = NULL;
    d.kn = 0;
    d.da = NULL;
    return d;
}

/* x, W (n_in, M k), c (M k, or one element: none), alpha (M), beta (M k), threshold (M), bias (M),
 * i0 (R, M k), v0 (R, M), cfg [cap, batch_major, has_c] -> pre (T, R, M), q (T, R, M k), spikes (T, R, M), i_f (R, M k),
 * v_f (R, M) */
XLA_FFI_Error *pond_pair_forward_handler(XLA_FFI_CallFrame *frame)
{
    if (pond_ffi_metadata(frame) || !pond_ffi_ready(frame, 10, 5))
        return NULL;
    const float *cfg = fdata(pond_ffi_arg(frame, 9));
    pair_dims d = pair_from(frame, pond_ffi_dim(pond_ffi_arg(frame, 3), 0), cfg[1] != 0.0f, cfg[2] != 0.0f);
    float *r[5];
    for (int i = 0; i < 5; ++i)
        r[i] = fdata(pond_ffi_ret(frame, i));
    int rc = pond_pair_forward(&d, fdata(pond_ffi_arg(frame, 3)), fdata(pond_ffi_arg(frame, 4)),
                               fdata(pond_ffi_arg(frame, 5)), fdata(pond_ffi_arg(frame, 6)),
                               cfg[0], r[0], r[1], r[2], fdata(pond_ffi_arg(frame, 7)),
                               fdata(pond_ffi_arg(frame, 8)), r[3], r[4]);
    return rc == 0 ? NULL : pond_ffi_error(frame, OOM);
}

/* x, W, c (as above), pre, q, g, alpha, beta, threshold, v0, cfg, gf, wn with
 * cfg [cap, scale, kind, out, batch_major, has_c, factored]: out 0 none, 1 dx, 2 dL/da; factored: the
 * spike cotangent is gf (T, R, kn) wn^T (wn (M, kn)), g is not read
 * -> d_alpha (M), d_beta (M k), d_threshold (M), d_bias (M), dW (n_in, M k), dc (M k),
 *    out: dx (T, R, n_in) or dL/da (T, R, M k) time-major (one element for none), d_i0 (R, M k), d_v0 (R, M) */
XLA_FFI_Error *pond_pair_backward_handler(XLA_FFI_CallFrame *frame)
{
    if (pond_ffi_metadata(frame) || !pond_ffi_ready(frame, 13, 9))
        return NULL;
    const float *cfg = fdata(pond_ffi_arg(frame, 10));
    pair_dims d = pair_from(frame, pond_ffi_dim(pond_ffi_arg(frame, 6), 0), cfg[4] != 0.0f, cfg[5] != 0.0f);
    const int out = (int)cfg[3];
    float *r[9];
    for (int i = 0; i < 9; ++i)
        r[i] = fdata(pond_ffi_ret(frame, i));
    d.gf = cfg[6] != 0.0f ? fdata(pond_ffi_arg(frame, 11)) : NULL;
    d.wn = fdata(pond_ffi_arg(frame, 12));
    d.kn = pond_ffi_dim(pond_ffi_arg(frame, 12), 1);
    d.da = out == 2 ? r[6] : NULL;
    int rc = pond_pair_backward(&d, fdata(pond_ffi_arg(frame, 3)), fdata(pond_ffi_arg(frame, 4)),
                                fdata(pond_ffi_arg(frame, 5)), fdata(pond_ffi_arg(frame, 6)),
                                fdata(pond_ffi_arg(frame, 7)), fdata(pond_ffi_arg(frame, 8)),
                                fdata(pond_ffi_arg(frame, 9)), cfg, r[0], r[1], r[2], r[3], r[4], r[5],
                                out == 1 ? r[6] : NULL, r[7], r[8]);
    if (out == 0)
        r[6][0] = 0.0f;
    return rc == 0 ? NULL : pond_ffi_error(frame, OOM);
}

