r"""The numba kernels behind :mod:`pondlib.nn.native` and their XLA FFI handlers: the fallback where no
C compiler is found (the C build, ``pondlib/nn/csrc/lif.c``, gives the same values bit for bit and is
used wherever it builds; this module, and numba with it, is then never imported).

The kernels treat a step as rows of neurons, each with its own parameters (the module docstring of
:mod:`pondlib.nn.native` has the equations). Measured layout rules (``benchmarks/train_step.py``):

- Time is the outer loop, so every (T, B', N') stack is read and written in memory order.
- The row loop vectorizes (AVX2, 8 lanes) only when LLVM can rule out overlap between the arrays it
  writes: the state and the running sums live in arrays allocated inside the kernel, one array each,
  and rows are taken as ``a[t, b]`` of 3-D stacks under a loop over ``b``, even when B' = 1 (a row
  ``a[t]`` of a 2-D stack directly inside the time loop left it scalar: 7x slower).
- The surrogate kind and the synapse count are literal arguments of the inlined row functions, so
  each compiled loop holds no branch on them.
- No slice assignment inside the loops (numba's costs about 0.25 us a call).

The FFI handlers read the XLA_FFI_CallFrame of ``xla/ffi/api/c_api.h`` (the header jaxlib ships): the
argument and result arrays (``XLA_FFI_Args`` at byte 40, ``XLA_FFI_Rets`` at byte 80 of the frame, an
``XLA_FFI_Buffer`` holding its data pointer at byte 24 and its dimensions at byte 40) and the
metadata request XLA makes when a handler is registered. They check the structure sizes XLA reports
and do nothing when these are smaller than this layout (an ABI they do not know):
:func:`pondlib.nn.native.available` then finds the self-test failing and keeps the XLA loops.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import carray
from numba.core import types
from numba.extending import intrinsic

__all__ = ["handlers"]

# -- raw memory access for the FFI call frame (the 64-bit layout of xla/ffi/api/c_api.h) ---------


@intrinsic
def _load64(typingctx, addr):
    def codegen(context, builder, signature, args):
        return builder.load(builder.inttoptr(args[0], ir.IntType(64).as_pointer()))

    return types.int64(types.int64), codegen


@intrinsic
def _load32(typingctx, addr):
    def codegen(context, builder, signature, args):
        return builder.load(builder.inttoptr(args[0], ir.IntType(32).as_pointer()))

    return types.int32(types.int64), codegen


@intrinsic
def _store32(typingctx, addr, value):
    def codegen(context, builder, signature, args):
        builder.store(args[1], builder.inttoptr(args[0], ir.IntType(32).as_pointer()))
        return context.get_dummy_value()

    return types.void(types.int64, types.int32), codegen


@intrinsic
def _f32_ptr(typingctx, addr):
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], ir.FloatType().as_pointer())

    return types.CPointer(types.float32)(types.int64), codegen


@intrinsic
def _address(typingctx, ptr):
    def codegen(context, builder, signature, args):
        return builder.ptrtoint(args[0], ir.IntType(64))

    return types.int64(types.voidptr), codegen


@intrinsic
def _null(typingctx):
    def codegen(context, builder, signature, args):
        return ir.Constant(ir.IntType(8).as_pointer(), None)

    return types.voidptr(), codegen


@intrinsic
def _fma(typingctx, a, b, c):
    # a * b + c rounded once (llvm.fma), the contraction XLA's CPU compiler applies to v * alpha + i
    def codegen(context, builder, signature, args):
        f32 = ir.FloatType()
        fn = builder.module.declare_intrinsic("llvm.fma", [f32], ir.FunctionType(f32, [f32, f32, f32]))
        return builder.call(fn, args)

    return types.float32(types.float32, types.float32, types.float32), codegen


# XLA_FFI_CallFrame: struct_size, extension_start, api, ctx, stage (8 bytes each) then XLA_FFI_Args at
# byte 40 and XLA_FFI_Rets at byte 80 (struct_size, extension_start, size, types, pointers: 8 bytes each).
# An XLA_FFI_Buffer holds its data pointer at byte 24 and its dims pointer at byte 40.
_ARGS, _RETS = 40, 80


@numba.njit(inline="always")
def _buffer(frame, part, index):
    return _load64(_load64(frame + part + 32) + 8 * index)


@numba.njit(inline="always")
def _data(frame, part, index):
    return _f32_ptr(_load64(_buffer(frame, part, index) + 24))


@numba.njit(inline="always")
def _dim(frame, part, index, axis):
    return _load64(_load64(_buffer(frame, part, index) + 40) + 8 * axis)


# -- the kernels -------------------------------------------------------------------------------------
# The batch is flattened into the neuron axis: a step's state is one row of M = B * N neurons (M * k
# synapses), each with its own parameters (the layer's tiled over the batch by the caller), so one
# loop over the row covers the whole step in memory order and vectorizes whatever N is.


@numba.njit(inline="always")
def _spikes(p, th, cap):
    zero = np.float32(0.0)
    f = np.floor(p / th)
    s = f if f > zero else zero
    s = s if s < cap else cap
    return s if p >= th else zero


@numba.njit(inline="always")
def _forward_row(xt, alpha, beta, th, bias, cap, pt, qt, st, i, v, k):
    """One step of all M neurons (:func:`pondlib.nn.lif_core.lif_step_flat` without recurrence, its
    multiply-adds fused as XLA fuses them): reads the input row ``xt`` (M k), updates ``i`` (M k) and
    ``v`` (M) in place, writes the rows of ``pre``, ``q`` and ``spikes``. Inlined with a literal ``k`` so
    that LLVM vectorizes the k = 1 loop (every argument its own array: LLVM does not vectorize where two
    rows of one array might overlap)."""
    for n in range(alpha.shape[0]):
        syn = np.float32(0.0)
        for j in range(k):
            m = n * k + j
            qq = i[m] + xt[m]
            ii = qq * beta[m]
            syn = ii if j == 0 else _fma(qq, beta[m], syn)  # XLA contracts i_j = q_j * beta_j into the sum
            i[m] = ii
            qt[m] = qq
        p = _fma(v[n], alpha[n], syn) + bias[n]
        s = _spikes(p, th[n], cap)
        v[n] = p - s * th[n]
        pt[n] = p
        st[n] = s


@numba.njit(boundscheck=False, error_model="numpy", cache=True)
def _forward(x, alpha, beta, th, bias, cap, pre, q, spikes, i0, v0, i_f, v_f):  # pragma: no cover - compiled
    """x (T, B', N' k) -> pre (T, B', N'), q (T, B', N' k), spikes (T, B', N') from the initial state
    ``i0`` (B', N' k), ``v0`` (B', N') to the final one ``i_f``, ``v_f``; parameters per neuron (N')."""
    k = x.shape[2] // alpha.shape[0]
    i = i0.copy()  # the state in arrays allocated here (LLVM then rules out overlap with the stacks)
    v = v0.copy()
    for t in range(x.shape[0]):
        # the loop over B' stays even when B' = 1: with the row loop directly inside the time loop
        # LLVM leaves it scalar (measured: 7x slower), inside this loop it vectorizes
        for b in range(x.shape[1]):
            if k == 1:
                _forward_row(x[t, b], alpha, beta, th, bias, cap, pre[t, b], q[t, b], spikes[t, b], i[b], v[b], 1)
            else:
                _forward_row(x[t, b], alpha, beta, th, bias, cap, pre[t, b], q[t, b], spikes[t, b], i[b], v[b], k)
    i_f[:] = i
    v_f[:] = v


@numba.njit(inline="always")
def _backward_row(pt, qt, gt, dxt, alpha, beta, th, cap, scale, lam_p, lam_q, a_alpha, a_bias, a_th, a_beta, k, kind):
    """One reverse step of all M neurons (the step of :func:`pondlib.nn.adjoint.adjoint_backward`):
    updates the adjoints ``lam_p`` (M), ``lam_q`` (M k) and the sums for alpha, bias, threshold (M) and
    beta (M k) in place and writes the row of ``dx``. Inlined with literal ``k`` and surrogate ``kind`` so that
    the loop keeps no branch and vectorizes."""
    zero, one = np.float32(0.0), np.float32(1.0)
    cap1 = cap + one
    for n in range(alpha.shape[0]):
        p = pt[n]
        thn = th[n]
        u = p / thn
        s = _spikes(p, thn, cap)
        v_t = p - s * thn
        d = u - one
        ad = d if d > zero else -d
        if kind == 0:
            den = one + scale * ad
            below = one / (den * den)
        elif kind == 1:
            tri = one - scale * ad
            below = tri if tri > zero else zero
        else:
            c = scale * d
            below = one / (one + c * c)
        above = one if u < cap1 else zero
        sg = below if u < one else above
        dsdp = sg / thn
        dsdth = -sg * u / thn
        lam_s = gt[n]
        lam_old = lam_p[n]
        lam_v = alpha[n] * lam_old
        lam_new = lam_v * (one - thn * dsdp) + lam_s * dsdp
        a_alpha[n] += lam_old * v_t
        a_bias[n] += lam_old
        a_th[n] += (lam_s - thn * lam_v) * dsdth - lam_v * s
        lam_p[n] = lam_new
        for j in range(k):
            m = n * k + j
            lam_i = lam_new + lam_q[m]
            lq = beta[m] * lam_i
            a_beta[m] += lam_i * qt[m]
            lam_q[m] = lq
            dxt[m] = lq


@numba.njit(boundscheck=False, error_model="numpy", cache=True)
def _backward(pre, q, g, alpha, beta, th, v0, cfg, a_alpha, a_beta, a_th, a_bias, dx, d_i0, d_v0):  # pragma: no cover
    """The adjoint loop of :func:`pondlib.nn.adjoint.adjoint_backward` for a non-recurrent layer whose only
    cotangent is the spikes' ``g`` (T, B', N'): per-neuron sums ``a_*`` over time and B' (N' or N' k),
    ``dx`` (T, B', N' k) and the initial state's cotangents ``d_i0`` (B' N' k), ``d_v0`` (B' N')."""
    cap, scale, kind = cfg[0], cfg[1], int(cfg[2])
    batch, m, mk = pre.shape[1], alpha.shape[0], beta.shape[0]
    k = mk // m
    # state and sums in arrays allocated here, one array each (LLVM vectorizes the row loop only where
    # it can rule out overlap), used through their rows b: see _forward on the loop shape
    lam_p = np.zeros((batch, m), np.float32)
    lam_q = np.zeros((batch, mk), np.float32)
    s_alpha = np.zeros((batch, m), np.float32)
    s_bias = np.zeros((batch, m), np.float32)
    s_th = np.zeros((batch, m), np.float32)
    acc_beta = np.zeros((batch, mk), np.float32)
    for t in range(pre.shape[0] - 1, -1, -1):
        for b in range(batch):
            pt, qt, gt, dxt = pre[t, b], q[t, b], g[t, b], dx[t, b]
            lp, lq, sa, sb, st, sbe = lam_p[b], lam_q[b], s_alpha[b], s_bias[b], s_th[b], acc_beta[b]
            if k == 1 and kind == 0:
                _backward_row(pt, qt, gt, dxt, alpha, beta, th, cap, scale, lp, lq, sa, sb, st, sbe, 1, 0)
            elif k == 1 and kind == 1:
                _backward_row(pt, qt, gt, dxt, alpha, beta, th, cap, scale, lp, lq, sa, sb, st, sbe, 1, 1)
            elif k == 1:
                _backward_row(pt, qt, gt, dxt, alpha, beta, th, cap, scale, lp, lq, sa, sb, st, sbe, 1, 2)
            else:
                _backward_row(pt, qt, gt, dxt, alpha, beta, th, cap, scale, lp, lq, sa, sb, st, sbe, k, kind)
    for n in range(m):
        a_alpha[n] = 0.0
        a_bias[n] = 0.0
        a_th[n] = 0.0
    for j in range(mk):
        a_beta[j] = 0.0
    for b in range(batch):  # with the late terms of step 0, as in the XLA loop
        for n in range(m):
            lam0 = lam_p[b, n]
            d_v0[b * m + n] = alpha[n] * lam0
            a_alpha[n] += s_alpha[b, n] + lam0 * v0[b * m + n]
            a_bias[n] += s_bias[b, n] + lam0
            a_th[n] += s_th[b, n]
        for j in range(mk):
            a_beta[j] += acc_beta[b, j]
            d_i0[b * mk + j] = lam_q[b, j]


@numba.njit(inline="always")
def _clip(v, lo, hi):
    return lo if v < lo else (hi if v > hi else v)


@numba.njit(inline="always")
def _shift_decay(v, f):
    """``floor(v f)``, or ``sign(v)`` where that is 0: the chip's ``v >> d`` (``f = 2^-d``) with its
    minimum step of one toward zero."""
    zero, one = np.float32(0.0), np.float32(1.0)
    e = np.floor(v * f)
    sign = one if v > zero else (-one if v < zero else zero)
    return e if e != zero else sign


@numba.njit(inline="always")
def _exact_count(p, th, cap):
    """``min(floor(p / th), cap)`` where ``p >= th``, else 0, corrected for the rounding of the
    quotient (the exact count of the device-aware twin that runs :func:`_bitshift_forward`)."""
    zero, one = np.float32(0.0), np.float32(1.0)
    n0 = np.floor(p / th)
    r = p - n0 * th
    n0 = n0 + (one if r >= th else zero) - (one if r < zero else zero)
    return _clip(n0, zero, cap) if p >= th else zero


@numba.njit(inline="always")
def _bitshift_row(ct, f_mem, f_syn, th, bias, cap, lo, hi, pt, qt, st, i, v, k):
    """One step of the integer LIF with bit-shift decays and saturation for all M neurons (the integer
    step of the device-aware twin in :mod:`pondlib.devices` that uses it, without recurrence:
    saturations to ``[lo, hi]``, bit-shift decays): reads the input current row ``ct`` (M k), updates
    ``i`` (M k) and the membrane after reset ``v`` (M) in place, writes the rows of ``pre``, ``q`` and
    ``spikes``. Every value is a whole number below 2^24, so each operation is exact and the order of
    the synapse sum is free."""
    for n in range(th.shape[0]):
        syn = np.float32(0.0)
        for j in range(k):
            m = n * k + j
            qq = _clip(i[m] + ct[m], lo, hi)
            ii = qq - _shift_decay(qq, f_syn[m])
            i[m] = ii
            qt[m] = qq
            syn = syn + ii
        vn = v[n]
        dv = _clip(syn - _shift_decay(vn, f_mem[n]), lo, hi)
        dv = _clip(dv + bias[n], lo, hi)
        p = _clip(vn + dv, lo, hi)
        s = _exact_count(p, th[n], cap)
        v[n] = p - s * th[n]
        pt[n] = p
        st[n] = s


@numba.njit(boundscheck=False, error_model="numpy", cache=True)
def _bitshift_forward(cur, f_mem, f_syn, th, bias, cfg, pre, q, spikes, i0, v0, i_f):  # pragma: no cover - compiled
    """cur (T, B', M k) -> pre (T, B', M), q (T, B', M k), spikes (T, B', M) from the initial state
    ``i0`` (B', M k), ``v0`` (B', M) to the final synaptic state ``i_f``; ``cfg`` = [cap, lo, hi].
    Loop shape as in :func:`_forward`."""
    cap, lo, hi = cfg[0], cfg[1], cfg[2]
    k = cur.shape[2] // th.shape[0]
    i = i0.copy()
    v = v0.copy()
    for t in range(cur.shape[0]):
        for b in range(cur.shape[1]):
            if k == 1:
                _bitshift_row(
                    cur[t, b], f_mem, f_syn, th, bias, cap, lo, hi, pre[t, b], q[t, b], spikes[t, b], i[b], v[b], 1
                )
            else:
                _bitshift_row(
                    cur[t, b], f_mem, f_syn, th, bias, cap, lo, hi, pre[t, b], q[t, b], spikes[t, b], i[b], v[b], k
                )
    i_f[:] = i


# -- the FFI handlers -------------------------------------------------------------------------------

# XLA_FFI_CallFrame, XLA_FFI_Args / XLA_FFI_Rets and XLA_FFI_Buffer sizes as XLA reports them (up to
# their last field read here: attrs, args, dims); smaller ones would be a layout this code cannot read
_FRAME_SIZE, _LIST_SIZE, _BUFFER_SIZE = 168, 40, 48


@numba.njit(inline="always")
def _layout_known(frame, n_args, n_rets):
    """Whether the frame has the layout read here, with the expected numbers of arrays."""
    if _load64(frame) < _FRAME_SIZE or _load64(frame + _ARGS) < _LIST_SIZE or _load64(frame + _RETS) < _LIST_SIZE:
        return False
    if _load64(frame + _ARGS + 16) != n_args or _load64(frame + _RETS + 16) != n_rets:
        return False
    for part, count in ((_ARGS, n_args), (_RETS, n_rets)):
        for index in range(count):
            if _load64(_buffer(frame, part, index)) < _BUFFER_SIZE:
                return False
    return True


@numba.njit(inline="always")
def _answer_metadata(frame):
    """When XLA asks for the handler's metadata (an XLA_FFI_Metadata_Extension in the frame's extension
    chain), write XLA's own API version (``XLA_FFI_Api.api_version`` of the frame's ``api``: major and
    minor at bytes 32 and 36) and no traits, and say so."""
    ext = _load64(frame + 8)
    if ext == 0 or (_load64(ext + 8) & 0xFFFFFFFF) != 1:
        return False
    api = _load64(frame + 16)
    metadata = _load64(ext + 24)
    _store32(metadata + 24, _load32(api + 32))
    _store32(metadata + 28, _load32(api + 36))
    _store32(metadata + 32, np.int32(0))
    return True


@numba.njit(inline="always")
def _call_ready(frame, n_args, n_rets):
    """Whether a handler has a call to run: not XLA's metadata request (answered here) and a frame of
    the known layout with ``n_args`` arrays in and ``n_rets`` out."""
    return not _answer_metadata(frame) and _layout_known(frame, n_args, n_rets)


@numba.njit(inline="always")
def _forward_arrays(frame):
    """The arrays of a forward call (:func:`pondlib.nn.native.lif_forward` and
    :func:`pondlib.nn.native.bitshift_lif_forward` share their order): the input (T, B', M k), four
    per-neuron parameters (M, M k, M, M), the initial state (B', M k), (B', M), the settings (1-D),
    then the results pre (T, B', M), q (T, B', M k), spikes (T, B', M) and the final (B', M k)."""
    steps, rows, mk = _dim(frame, _ARGS, 0, 0), _dim(frame, _ARGS, 0, 1), _dim(frame, _ARGS, 0, 2)
    m = _dim(frame, _ARGS, 1, 0)
    return (
        carray(_data(frame, _ARGS, 0), (steps, rows, mk)),
        carray(_data(frame, _ARGS, 1), (m,)),
        carray(_data(frame, _ARGS, 2), (mk,)),
        carray(_data(frame, _ARGS, 3), (m,)),
        carray(_data(frame, _ARGS, 4), (m,)),
        carray(_data(frame, _ARGS, 5), (rows, mk)),
        carray(_data(frame, _ARGS, 6), (rows, m)),
        carray(_data(frame, _ARGS, 7), (_dim(frame, _ARGS, 7, 0),)),
        carray(_data(frame, _RETS, 0), (steps, rows, m)),
        carray(_data(frame, _RETS, 1), (steps, rows, mk)),
        carray(_data(frame, _RETS, 2), (steps, rows, m)),
        carray(_data(frame, _RETS, 3), (rows, mk)),
    )


@numba.cfunc(types.voidptr(types.voidptr), cache=True)
def _forward_handler(frame_ptr):  # pragma: no cover - called by XLA
    frame = _address(frame_ptr)
    if not _call_ready(frame, 8, 5):
        return _null()
    x, alpha, beta, th, bias, i0, v0, cfg, pre, q, spikes, i_f = _forward_arrays(frame)
    v_f = carray(_data(frame, _RETS, 4), v0.shape)
    _forward(x, alpha, beta, th, bias, cfg[0], pre, q, spikes, i0, v0, i_f, v_f)
    return _null()


@numba.cfunc(types.voidptr(types.voidptr), cache=True)
def _backward_handler(frame_ptr):  # pragma: no cover - called by XLA
    frame = _address(frame_ptr)
    if not _call_ready(frame, 8, 7):
        return _null()
    steps, rows, m = _dim(frame, _ARGS, 0, 0), _dim(frame, _ARGS, 0, 1), _dim(frame, _ARGS, 0, 2)
    mk = _dim(frame, _ARGS, 1, 2)
    pre = carray(_data(frame, _ARGS, 0), (steps, rows, m))
    q = carray(_data(frame, _ARGS, 1), (steps, rows, mk))
    g = carray(_data(frame, _ARGS, 2), (steps, rows, m))
    alpha = carray(_data(frame, _ARGS, 3), (m,))
    beta = carray(_data(frame, _ARGS, 4), (mk,))
    th = carray(_data(frame, _ARGS, 5), (m,))
    v0 = carray(_data(frame, _ARGS, 6), (rows * m,))
    cfg = carray(_data(frame, _ARGS, 7), (3,))
    a_alpha = carray(_data(frame, _RETS, 0), (m,))
    a_beta = carray(_data(frame, _RETS, 1), (mk,))
    a_th = carray(_data(frame, _RETS, 2), (m,))
    a_bias = carray(_data(frame, _RETS, 3), (m,))
    dx = carray(_data(frame, _RETS, 4), (steps, rows, mk))
    d_i0 = carray(_data(frame, _RETS, 5), (rows * mk,))
    d_v0 = carray(_data(frame, _RETS, 6), (rows * m,))
    _backward(pre, q, g, alpha, beta, th, v0, cfg, a_alpha, a_beta, a_th, a_bias, dx, d_i0, d_v0)
    return _null()


@numba.cfunc(types.voidptr(types.voidptr), cache=True)
def _bitshift_handler(frame_ptr):  # pragma: no cover - called by XLA
    frame = _address(frame_ptr)
    if not _call_ready(frame, 8, 4):
        return _null()
    cur, f_mem, f_syn, th, bias, i0, v0, cfg, pre, q, spikes, i_f = _forward_arrays(frame)
    _bitshift_forward(cur, f_mem, f_syn, th, bias, cfg, pre, q, spikes, i0, v0, i_f)
    return _null()


def handlers() -> tuple[Any, Any, Any]:
    """The FFI handlers (numba cfuncs taking an XLA_FFI_CallFrame*, returning NULL: no error; compiled
    once and cached with the kernels) of :func:`pondlib.nn.native.lif_forward`,
    :func:`pondlib.nn.native.lif_backward` and :func:`pondlib.nn.native.bitshift_lif_forward`, in this order."""
    return _forward_handler, _backward_handler, _bitshift_handler
