/* pondlib: a chain of Linear -> LIF pairs trained as one loop per sample (pondlib.nn.train_chain has
 * the equations; the element rules and row steps are those of lif.c, from lif_rows.h). Built by
 * pondlib.cprogram.native, called by XLA through its FFI (pondlib.nn.native.train_chain_forward /
 * train_chain_backward). */
#include "lif_rows.h"

/* ---------------------------------------------------------------------------------------------------
 * Chains of pairs: Linear -> LIF -> Linear -> LIF ... trained as one loop per sample
 *
 * The forward pass runs every pair of a step before the next step (the spikes of one pair are the next
 * pair's input row, never stored); it keeps each LIF's P and q, side by side per step: pre (T, R, sum N),
 * q (T, R, sum N k). The backward pass runs, per sample and step backwards, the last pair's LIF adjoint,
 * its Linear's gradients from its input row (the previous LIF's spikes, recounted from the kept P, or x),
 * the previous LIF's spike cotangent dL/da W^T formed row by row, and so on down to the first pair.
 * Parameters: one flat array prm; per pair (ops row: n_in, N, k, off_w, off_c (-1: no bias), off_lif,
 * n_off, q_off) W (n_in, N k) at off_w, c (N k) at off_c, and at off_lif alpha (N), beta (N k),
 * threshold (N), bias (N), cap (1). States (R, S): per pair i (N k), v (N), s (N), and for a pair with an
 * input delay its last input row x_prev (n_in), pairs in order.
 *
 * Integer pairs (cfg: integer, lo, hi per pair): the LIF step is the integer one of lif.c's bitshift_row,
 * with the decay factors f = 1 - alpha, f_syn = 1 - beta (exact for alpha, beta = 1 - 2^-d, d <= 24),
 * saturation to [lo, hi], floored shift decays and spike counts floor(P / theta) (exact: the states are
 * whole numbers below 2^24, see whole_count); the adjoint is the float one with
 * the same alpha, beta (straight-through estimators: see pondlib.nn.train_chain). A pair after the first
 * may read its input one step late (delay): its input row at step t is the previous pair's spikes of step
 * t - 1 (x_prev at t = 0), and backwards the cotangent of those spikes reaches step t - 1.
 * --------------------------------------------------------------------------------------------------- */

/* the cfg entries per pair after the three leading ones: scale, kind, integer, lo, hi, delay */
#define CFG_PAIR 6

typedef struct {
    int64_t n_in, n, k, off_w, off_c, off_lif, n_off, q_off, s_off, x_off, d_off;
    float scale, lo, hi;
    int kind, integer, delay;
} chain_pair;

typedef struct {
    const float *prm, *x;
    const chain_pair *pairs;
    int64_t n_pairs, steps, rows, x_t, x_r, sn, sq, size, width, dly;
} train_chain;

/* returns -1 for a first pair with an input delay (its caller delays the input instead) */
static int chain_setup(train_chain *c, chain_pair *pairs, const int32_t *ops, const float *cfg, int64_t n_pairs)
{
    int64_t s_off = 0, width = 1, dly = 0;
    for (int64_t p = 0; p < n_pairs; ++p) {
        const int32_t *o = ops + 8 * p;
        const float *f = cfg + 3 + CFG_PAIR * p;
        chain_pair *q = &pairs[p];
        q->n_in = o[0], q->n = o[1], q->k = o[2], q->off_w = o[3], q->off_c = o[4], q->off_lif = o[5];
        q->n_off = o[6], q->q_off = o[7], q->s_off = s_off;
        q->scale = f[0];
        q->kind = (int)f[1];
        q->integer = f[2] != 0.0f, q->lo = f[3], q->hi = f[4], q->delay = f[5] != 0.0f;
        s_off += q->n * q->k + 2 * q->n;
        q->x_off = q->delay ? s_off : -1; /* the delay's x_prev slot, in the state row */
        q->d_off = q->delay ? dly : -1;   /* its two cotangent rows, in the backward pass's buffer */
        s_off += q->delay ? q->n_in : 0;
        dly += q->delay ? 2 * q->n_in : 0;
        int64_t w = q->n_in > q->n * q->k ? q->n_in : q->n * q->k;
        width = w > width ? w : width;
    }
    c->pairs = pairs;
    c->n_pairs = n_pairs;
    c->size = s_off;
    c->width = width;
    c->dly = dly;
    return pairs[0].delay ? -1 : 0;
}

/* min, max and the clip to [lo, hi] of values that are not NaN, in the forms the compiler maps to single
 * vector instructions (a < b ? a : b is the x86 min's own rule) */
static inline float min_nn(float a, float b)
{
    return a < b ? a : b;
}

static inline float max_nn(float a, float b)
{
    return a > b ? a : b;
}

static inline float sat_nn(float v, float lo, float hi)
{
    return max_nn(min_nn(v, hi), lo);
}

/* lif_rows.h's shift_decay (floor(v f), or sign(v) where that is 0) for v not NaN, zeros' signs included:
 * floor(v f) is 0 only for v in [0, 1/f), and <= -1 for v < 0 */
static inline float shift_decay_nn(float v, float f)
{
    return max_nn(floorf(v * f) + 0.0f, v > 0.0f ? 1.0f : -3.0e38f);
}

/* lif_rows.h's exact_count for whole numbers p and th below 2^24 (the integer states): there the
 * correctly rounded quotient p / th never reaches the next whole number above the true one (that would
 * need p > 2^24), so its floor needs no correction; for other values it is spike_count's rule */
static inline float whole_count(float p, float th, float cap)
{
    return p >= th ? min_nn(max_nn(floorf(p / th), 0.0f), cap) : 0.0f;
}

/* the membrane part of the integer step of neuron n from its synaptic sum syn (lif.c's bitshift_membrane
 * with f = 1 - alpha) */
static inline void integer_membrane(float syn, const float *restrict alpha, const float *restrict th,
                                    const float *restrict bias, float cap, float lo, float hi, float *restrict pt,
                                    float *restrict st, float *restrict v, int64_t n)
{
    float vn = v[n];
    float dv = sat_nn(syn - shift_decay_nn(vn, 1.0f - alpha[n]), lo, hi);
    dv = sat_nn(dv + bias[n], lo, hi);
    float p = sat_nn(vn + dv, lo, hi);
    float s = whole_count(p, th[n], cap);
    v[n] = p - s * th[n];
    pt[n] = p;
    st[n] = s;
}

/* the integer step of one row (lif.c's bitshift_row with f = 1 - alpha, f_syn = 1 - beta: the same values
 * for whole-number states, zeros' signs included); kept out of line, as there */
static __attribute__((noinline)) void integer_row(const float *restrict ct, const float *restrict alpha,
                                                   const float *restrict beta, const float *restrict th,
                                                   const float *restrict bias, float cap, float lo, float hi,
                                                   float *restrict pt, float *restrict qt, float *restrict st,
                                                   float *restrict i, float *restrict v, int64_t m, int64_t k)
{
    for (int64_t n = 0; n < m; ++n) {
        float syn = 0.0f;
        for (int64_t j = 0; j < k; ++j) {
            int64_t c = n * k + j;
            float qq = sat_nn(i[c] + ct[c], lo, hi);
            float ii = qq - shift_decay_nn(qq, 1.0f - beta[c]);
            i[c] = ii;
            qt[c] = qq;
            syn = syn + ii;
        }
        integer_membrane(syn, alpha, th, bias, cap, lo, hi, pt, st, v, n);
    }
}

/* the same for one synapse per neuron: one loop without an inner one (it vectorizes) */
static __attribute__((noinline)) void integer_row1(const float *restrict ct, const float *restrict alpha,
                                                    const float *restrict beta, const float *restrict th,
                                                    const float *restrict bias, float cap, float lo, float hi,
                                                    float *restrict pt, float *restrict qt, float *restrict st,
                                                    float *restrict i, float *restrict v, int64_t m)
{
    for (int64_t n = 0; n < m; ++n) {
        float qq = sat_nn(i[n] + ct[n], lo, hi);
        float ii = qq - shift_decay_nn(qq, 1.0f - beta[n]);
        i[n] = ii;
        qt[n] = qq;
        integer_membrane(0.0f + ii, alpha, th, bias, cap, lo, hi, pt, st, v, n);
    }
}

/* the forward loop of row r: pre and q of step t at pre_r + t ts_n, q_r + t ts_q (the global stacks or a
 * row's scratch); the last LIF's spikes into y (T, R, N_last) when y is not NULL; the state row updated */
static void chain_forward_row(const train_chain *c, int64_t r, float *pre_r, float *q_r, int64_t ts_n, int64_t ts_q,
                              float *y, float *st_r, float *a, int32_t *ev)
{
    for (int64_t t = 0; t < c->steps; ++t) {
        const float *h = c->x + t * c->x_t + r * c->x_r;
        for (int64_t p = 0; p < c->n_pairs; ++p) {
            const chain_pair *cp = &c->pairs[p];
            const int64_t n = cp->n, mk = n * cp->k;
            const float *lp = c->prm + cp->off_lif;
            /* a delayed pair reads the previous step's row (its state's x_prev slot), then keeps this one */
            const float *in = cp->delay ? st_r + cp->x_off : h;
            current(in, ev, gather(in, cp->n_in, ev), c->prm + cp->off_w,
                    cp->off_c >= 0 ? c->prm + cp->off_c : NULL, mk, a);
            if (cp->delay)
                memcpy(st_r + cp->x_off, h, (size_t)cp->n_in * sizeof(float));
            float *st = st_r + cp->s_off;
            /* a LIF's spikes go to its state's spike slot (the next pair's input row), the last one's to y */
            float *out = p == c->n_pairs - 1 && y != NULL ? y + (t * c->rows + r) * n : st + mk + n;
            float *pt = pre_r + t * ts_n + cp->n_off, *qt = q_r + t * ts_q + cp->q_off;
            if (cp->integer && cp->k == 1)
                integer_row1(a, lp, lp + n, lp + n + mk, lp + 2 * n + mk, lp[3 * n + mk], cp->lo, cp->hi, pt, qt,
                             out, st, st + mk, n);
            else if (cp->integer)
                integer_row(a, lp, lp + n, lp + n + mk, lp + 2 * n + mk, lp[3 * n + mk], cp->lo, cp->hi, pt, qt,
                            out, st, st + mk, n, cp->k);
            else
                forward_row(a, lp, lp + n, lp + n + mk, lp + 2 * n + mk, lp[3 * n + mk], pt, qt, out, st, st + mk, n,
                            cp->k);
            h = out;
        }
    }
    const chain_pair *last = &c->pairs[c->n_pairs - 1];
    if (y != NULL && c->steps > 0)
        memcpy(st_r + last->s_off + last->n * last->k + last->n, y + ((c->steps - 1) * c->rows + r) * last->n,
               (size_t)last->n * sizeof(float));
}

/* x (T, R, n0) -> y (T, R, N_last) spikes of the last LIF and state (R, S) from state0; pre (T, R, sn) and
 * q (T, R, sq) kept when not NULL (else the backward pass recomputes them row by row) */
int pond_chain_train_forward(const train_chain *c, const float *state0, float *pre, float *q, float *y, float *state)
{
    memcpy(state, state0, (size_t)(c->rows * c->size) * sizeof(float));
    const int keep = pre != NULL && q != NULL;
    int failed = 0;
    POND_FP_CAPTURE
#pragma omp parallel reduction(| : failed) if (c->rows > 1)
    {
        POND_FP_ENTER
        float *a = malloc((size_t)(3 * c->width + 1) * sizeof(float));
        int32_t *ev = malloc((size_t)(c->width + 17) * sizeof(int32_t));
        float *scratch = keep ? NULL : malloc((size_t)(c->sn + c->sq + 1) * sizeof(float));
        if (a == NULL || ev == NULL || (!keep && scratch == NULL)) {
            failed = 1;
        } else {
#pragma omp for schedule(static)
            for (int64_t r = 0; r < c->rows; ++r) {
                if (keep)
                    chain_forward_row(c, r, pre + r * c->sn, q + r * c->sq, c->rows * c->sn, c->rows * c->sq, y,
                                      state + r * c->size, a, ev);
                else /* every step's P and q over one scratch row */
                    chain_forward_row(c, r, scratch, scratch + c->sn, 0, 0, y, state + r * c->size, a, ev);
            }
        }
        free(a);
        free(ev);
        free(scratch);
        POND_FP_LEAVE
    }
    return failed ? -1 : 0;
}

/* the input row of pair p at step t of row r: x, or the spikes of pair p - 1 recounted from its P (of step
 * t - 1 for a delayed pair, whose row at t = 0 is x_prev of the initial state st0_r) */
static const float *chain_input(const train_chain *c, int64_t p, int64_t t, int64_t r, const float *pre_r,
                                int64_t ts_n, const float *st0_r, float *buf)
{
    if (p == 0)
        return c->x + t * c->x_t + r * c->x_r;
    const chain_pair *cp = &c->pairs[p], *prev = &c->pairs[p - 1];
    if (cp->delay && t == 0)
        return st0_r + cp->x_off;
    const int64_t ti = cp->delay ? t - 1 : t;
    const float *lp = c->prm + prev->off_lif;
    const int64_t n = prev->n, mk = n * prev->k;
    const float *th = lp + n + mk, cap = lp[3 * n + mk];
    const float *pt = pre_r + ti * ts_n + prev->n_off;
    for (int64_t j = 0; j < n; ++j) /* the forward's count (an integer pair's whole_count: the same rule) */
        buf[j] = spike_count(pt[j], th[j], cap);
    return buf;
}

typedef struct {
    float *lam_p, *lam_q, *s_alpha, *s_bias, *s_th, *acc_beta; /* per row: (R, sn) or (R, sq) */
    float *part;                                               /* per tile: gradients of W and c, prm-sized */
} chain_sums;

/* the backward loop of row r; dly (c->dly) holds, per delayed pair p, two rows of the cotangent of pair
 * p - 1's spikes: the one of step t (read by pair p - 1) and the one of step t - 1 (written by pair p at
 * step t), swapped after each step; the cotangent of x_prev (step -1) goes to d_st0_r */
static void chain_backward_row(const train_chain *c, int64_t r, const float *pre_r, const float *q_r, int64_t ts_n,
                               int64_t ts_q, const float *g, float *dx, chain_sums *sm, float *part, const float *wt,
                               const float *st0_r, float *d_st0_r, float *gbuf, float *da, float *hbuf, float *dly,
                               int32_t *ev)
{
    const int64_t R = c->rows, sn = c->sn, sq = c->sq;
    if (c->dly > 0)
        memset(dly, 0, (size_t)c->dly * sizeof(float));
    int flip = 0; /* which of a delayed pair's two rows is step t's */
    for (int64_t t = c->steps - 1; t >= 0; --t) {
        const float *gt = g + (t * R + r) * c->pairs[c->n_pairs - 1].n;
        for (int64_t p = c->n_pairs - 1; p >= 0; --p) {
            const chain_pair *cp = &c->pairs[p];
            const int64_t n = cp->n, k = cp->k, mk = n * k, n_in = cp->n_in;
            const float *lp = c->prm + cp->off_lif;
            const surrogate_cfg sc = {lp[3 * n + mk], cp->scale, cp->kind};
            const int64_t at = t * R + r;
            backward_row_kind(pre_r + t * ts_n + cp->n_off, q_r + t * ts_q + cp->q_off, gt, da, lp, lp + n,
                              lp + n + mk, sc, sm->lam_p + r * sn + cp->n_off, sm->lam_q + r * sq + cp->q_off,
                              sm->s_alpha + r * sn + cp->n_off, sm->s_bias + r * sn + cp->n_off,
                              sm->s_th + r * sn + cp->n_off, sm->acc_beta + r * sq + cp->q_off, n, k);
            const float *h = chain_input(c, p, t, r, pre_r, ts_n, st0_r, hbuf);
            const int64_t nnz = gather(h, n_in, ev);
            float *pw = part + cp->off_w;
            for (int64_t e = 0; e < nnz; ++e)
                axpy(h[ev[e]], da, pw + (int64_t)ev[e] * mk, mk);
            if (cp->off_c >= 0) {
                float *pc = part + cp->off_c;
                for (int64_t o = 0; o < mk; ++o)
                    pc[o] = pc[o] + da[o];
            }
            if (p == 0 && dx == NULL)
                break;
            /* the input's cotangent: sum over m ascending of fma(da_m, W[i, m], .) from +0, vectorized over
             * i with W^T (wt holds each W transposed at its offset) */
            if (cp->delay) { /* it belongs to step t - 1: pair p - 1 reads step t's, written at step t + 1 */
                float *rows = dly + cp->d_off;
                gemv_t(da, wt + cp->off_w, mk, n_in, rows + (1 - flip) * n_in);
                gt = rows + flip * n_in;
                continue;
            }
            float *restrict out = p == 0 ? dx + at * n_in : gbuf + (p & 1) * c->width;
            gemv_t(da, wt + cp->off_w, mk, n_in, out);
            gt = out;
        }
        flip = 1 - flip;
    }
    for (int64_t p = 1; p < c->n_pairs; ++p) { /* x_prev's cotangent: the row written at step 0 */
        const chain_pair *cp = &c->pairs[p];
        if (cp->delay)
            memcpy(d_st0_r + cp->x_off, dly + cp->d_off + flip * cp->n_in, (size_t)cp->n_in * sizeof(float));
    }
}

/* the gradients of a chain whose only cotangent is the last LIF's spikes' g (T, R, N_last): d_prm (the
 * layout of prm; the caps' entries 0), d_state0 (R, S), dx (T, R, n0) time-major when not NULL; from the
 * kept pre and q, or (NULL) recomputing each row's forward loop into a scratch (T, sn + sq) first */
int pond_chain_train_backward(const train_chain *c, const float *pre, const float *q, const float *g,
                              const float *state0, int64_t n_prm, float *d_prm, float *d_state0, float *dx)
{
    const int64_t R = c->rows, sn = c->sn, sq = c->sq, tiles = pair_tiles(R), per = (R + tiles - 1) / (tiles > 0 ? tiles : 1);
    const int keep = pre != NULL && q != NULL;
    float *work = calloc((size_t)(R * (4 * sn + 2 * sq) + (tiles + 1) * n_prm + 1), sizeof(float));
    if (work == NULL)
        return -1;
    chain_sums sm;
    sm.lam_p = work, sm.s_alpha = sm.lam_p + R * sn, sm.s_bias = sm.s_alpha + R * sn, sm.s_th = sm.s_bias + R * sn;
    sm.lam_q = sm.s_th + R * sn, sm.acc_beta = sm.lam_q + R * sq, sm.part = sm.acc_beta + R * sq;
    float *wt = sm.part + tiles * n_prm;
    for (int64_t p = 0; p < c->n_pairs; ++p) {
        const chain_pair *cp = &c->pairs[p];
        const int64_t mk = cp->n * cp->k;
        for (int64_t i = 0; i < cp->n_in; ++i)
            for (int64_t o = 0; o < mk; ++o)
                wt[cp->off_w + o * cp->n_in + i] = c->prm[cp->off_w + i * mk + o];
    }
    memset(d_state0, 0, (size_t)(R * c->size) * sizeof(float));
    int failed = 0;
    POND_FP_CAPTURE
#pragma omp parallel reduction(| : failed) if (R > 1)
    {
        POND_FP_ENTER
        float *buf = malloc((size_t)(5 * c->width + c->dly + 1) * sizeof(float));
        int32_t *ev = malloc((size_t)(c->width + 17) * sizeof(int32_t));
        float *scratch = keep ? NULL : malloc((size_t)(c->steps * (sn + sq) + c->size + 1) * sizeof(float));
        if (buf == NULL || ev == NULL || (!keep && scratch == NULL)) {
            failed = 1;
        } else {
#pragma omp for schedule(dynamic, 1)
            for (int64_t tile = 0; tile < tiles; ++tile) {
                const int64_t r1 = (tile + 1) * per < R ? (tile + 1) * per : R;
                for (int64_t r = tile * per; r < r1; ++r) {
                    const float *st0_r = state0 + r * c->size;
                    float *d_st0_r = d_state0 + r * c->size, *dly = buf + 5 * c->width;
                    if (keep) {
                        chain_backward_row(c, r, pre + r * sn, q + r * sq, R * sn, R * sq, g, dx, &sm,
                                           sm.part + tile * n_prm, wt, st0_r, d_st0_r, buf, buf + 2 * c->width,
                                           buf + 3 * c->width, dly, ev);
                        continue;
                    }
                    float *pre_r = scratch, *q_r = scratch + c->steps * sn, *st = q_r + c->steps * sq;
                    memcpy(st, st0_r, (size_t)c->size * sizeof(float));
                    chain_forward_row(c, r, pre_r, q_r, sn, sq, NULL, st, buf, ev);
                    chain_backward_row(c, r, pre_r, q_r, sn, sq, g, dx, &sm, sm.part + tile * n_prm, wt, st0_r,
                                       d_st0_r, buf, buf + 2 * c->width, buf + 3 * c->width, dly, ev);
                }
            }
        }
        free(buf);
        free(ev);
        free(scratch);
        POND_FP_LEAVE
    }
    if (failed) {
        free(work);
        return -1;
    }
    memset(d_prm, 0, (size_t)n_prm * sizeof(float));
    for (int64_t tile = 0; tile < tiles; ++tile)
        for (int64_t e = 0; e < n_prm; ++e)
            d_prm[e] = d_prm[e] + sm.part[tile * n_prm + e];
    for (int64_t p = 0; p < c->n_pairs; ++p) { /* the LIF sums as pond_lif_backward adds them */
        const chain_pair *cp = &c->pairs[p];
        const int64_t n = cp->n, mk = n * cp->k;
        const float *alpha = c->prm + cp->off_lif;
        float *a_alpha = d_prm + cp->off_lif, *a_beta = a_alpha + n, *a_th = a_beta + mk, *a_bias = a_th + n;
        for (int64_t r = 0; r < R; ++r) {
            const float *v0 = state0 + r * c->size + cp->s_off + mk;
            float *d_i0 = d_state0 + r * c->size + cp->s_off, *d_v0 = d_i0 + mk;
            for (int64_t j = 0; j < n; ++j) {
                float lam0 = sm.lam_p[r * sn + cp->n_off + j];
                d_v0[j] = alpha[j] * lam0;
                a_alpha[j] += sm.s_alpha[r * sn + cp->n_off + j] + lam0 * v0[j];
                a_bias[j] += sm.s_bias[r * sn + cp->n_off + j] + lam0;
                a_th[j] += sm.s_th[r * sn + cp->n_off + j];
            }
            for (int64_t m = 0; m < mk; ++m) {
                a_beta[m] += sm.acc_beta[r * sq + cp->q_off + m];
                d_i0[m] = sm.lam_q[r * sq + cp->q_off + m];
            }
        }
    }
    free(work);
    return 0;
}

/* the chain from a call frame: x (T, R, n0), prm, ops (P, 8) int32, cfg [batch_major, want_dx, keep,
 * (scale, kind, integer, lo, hi, delay) per pair] (keep: P and q stored for the backward pass, else
 * recomputed there); *bad set for a first pair with a delay */
static train_chain chain_from(XLA_FFI_CallFrame *frame, chain_pair *pairs, int64_t n_pairs, const float *cfg, int *bad)
{
    XLA_FFI_Buffer *x = pond_ffi_arg(frame, 0);
    train_chain c;
    *bad = chain_setup(&c, pairs, (const int32_t *)pond_ffi_arg(frame, 2)->data, cfg, n_pairs) != 0;
    c.prm = fdata(pond_ffi_arg(frame, 1));
    c.x = fdata(x);
    c.steps = pond_ffi_dim(x, 0);
    c.rows = pond_ffi_dim(x, 1);
    const int64_t n0 = pond_ffi_dim(x, 2);
    c.x_t = cfg[0] != 0.0f ? n0 : c.rows * n0;
    c.x_r = cfg[0] != 0.0f ? c.steps * n0 : n0;
    c.sn = c.sq = 0;
    for (int64_t p = 0; p < n_pairs; ++p) {
        c.sn += pairs[p].n;
        c.sq += pairs[p].n * pairs[p].k;
    }
    return c;
}

/* the chain of a call (its pair table is argument 2, at most 64 pairs) into c, or the error to return */
static XLA_FFI_Error *chain_of_call(XLA_FFI_CallFrame *frame, chain_pair *pairs, const float *cfg, train_chain *c)
{
    const int64_t n_pairs = pond_ffi_dim(pond_ffi_arg(frame, 2), 0);
    if (n_pairs < 1 || n_pairs > 64)
        return pond_ffi_error(frame, "pondlib training chain: 1 to 64 pairs");
    int bad = 0;
    *c = chain_from(frame, pairs, n_pairs, cfg, &bad);
    return bad ? pond_ffi_error(frame, "pondlib training chain: the first pair cannot delay its input") : NULL;
}

/* x, prm, ops, state0 (R, S), cfg -> y (T, R, N_last), pre (T, R, sn), q (T, R, sq) (one element each
 * unless keep), state (R, S) */
XLA_FFI_Error *pond_chain_train_forward_handler(XLA_FFI_CallFrame *frame)
{
    if (pond_ffi_metadata(frame) || !pond_ffi_ready(frame, 5, 4))
        return NULL;
    chain_pair pairs[64];
    train_chain c;
    XLA_FFI_Error *err = chain_of_call(frame, pairs, fdata(pond_ffi_arg(frame, 4)), &c);
    if (err)
        return err;
    const int keep = fdata(pond_ffi_arg(frame, 4))[2] != 0.0f;
    float *pre = fdata(pond_ffi_ret(frame, 1)), *q = fdata(pond_ffi_ret(frame, 2));
    int rc = pond_chain_train_forward(&c, fdata(pond_ffi_arg(frame, 3)), keep ? pre : NULL, keep ? q : NULL,
                                      fdata(pond_ffi_ret(frame, 0)), fdata(pond_ffi_ret(frame, 3)));
    if (!keep)
        pre[0] = q[0] = 0.0f;
    return rc == 0 ? NULL : pond_ffi_error(frame, OOM);
}

/* x, prm, ops, pre, q (read when keep), g (T, R, N_last), state0, cfg -> d_prm, d_state0 (R, S),
 * dx (T, R, n0) or one element */
XLA_FFI_Error *pond_chain_train_backward_handler(XLA_FFI_CallFrame *frame)
{
    if (pond_ffi_metadata(frame) || !pond_ffi_ready(frame, 8, 3))
        return NULL;
    chain_pair pairs[64];
    const float *cfg = fdata(pond_ffi_arg(frame, 7));
    train_chain c;
    XLA_FFI_Error *err = chain_of_call(frame, pairs, cfg, &c);
    if (err)
        return err;
    float *dx = fdata(pond_ffi_ret(frame, 2));
    const int want_dx = cfg[1] != 0.0f;
    const int keep = cfg[2] != 0.0f;
    int rc = pond_chain_train_backward(&c, keep ? fdata(pond_ffi_arg(frame, 3)) : NULL,
                                       keep ? fdata(pond_ffi_arg(frame, 4)) : NULL,
                                       fdata(pond_ffi_arg(frame, 5)), fdata(pond_ffi_arg(frame, 6)),
                                       pond_ffi_dim(pond_ffi_arg(frame, 1), 0), fdata(pond_ffi_ret(frame, 0)),
                                       fdata(pond_ffi_ret(frame, 1)), want_dx ? dx : NULL);
    if (!want_dx)
        dx[0] = 0.0f;
    return rc == 0 ? NULL : pond_ffi_error(frame, OOM);
}
