"""The numba build of the Xylo simulator's kernel: the fallback of :mod:`pondlib.devices.xylo.sim` where
no C compiler exists (the C build, ``csrc/xylo_sim.c``, is the same algorithm and gives the same integers).

Compiled by numba on its first use (about 8 s once per installation, then cached on disk by numba); the
simulator imports this module only when it runs the numba kernel, so the C path never imports numba.
The update equations are in the docstring of :mod:`pondlib.devices.xylo.sim`; the comments below say how
the kernel evaluates them. :func:`run_batch` runs ``B`` samples in parallel (``numba.prange``),
:func:`run_sample` one; both update the state arrays in place.

Example:
    >>> import numpy as np
    >>> from pondlib.devices.xylo.sim_kernels import _spike_count
    >>> [int(v) for v in _spike_count(767, 60, 0)]   # 767 = 12 * 60 + 47: 12 spikes, 47 left
    [12, 47]
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

__all__ = ["run_batch", "run_sample"]

# The chip's register widths (the same constants as in pondlib.devices.xylo.sim, which must not import
# this module at its top).
_MAX_SPIKES_HID = 31  # 5-bit hidden spike counter per step
_I16_MIN = -32768  # 16-bit signed state registers
_I16_MAX = 32767


# ------------------------------------------------------------------------------------------------
# The kernel
# ------------------------------------------------------------------------------------------------
# Internal layout (built once per simulator in XyloSim.__init__): state and parameters are int32
# arrays (every value fits in 16 bits); the two hidden synapses are one flat array
# ``isyn = [synapse 0 of all N | synapse 1 of all N]``, so that the neuron update reads contiguous rows
# and a sparse weight entry names its target with one flat index ``q * N + i`` (uint16); delivered
# weights are int16; input counts are uint8 (already clipped to 15).
#
# Per step, the costs are (N = 1000, ~5 % of neurons spiking, measured with the cycle counter):
# the sparse recurrent/readout accumulation (~60 %), the neuron loop (~15 %), the spike pass (~15 %).
# * The neuron loop (decay, integration, threshold test) is branch-free and computes in int32 (an
#   explicit 32-bit arithmetic shift, _ashr32): LLVM vectorizes it 8 lanes wide with AVX2.
# * It leaves one fire flag per neuron; the spike pass visits only flagged neurons, 8 flags per
#   uint64 word (count-trailing-zeros), instead of a branch per neuron.
# * The accumulation loops run over per-source slices from index 0 with unsigned target indices, so
#   numba emits no negative-index wrap-around code (4 instructions per weight).
# * Saturation-free accumulation: the chip saturates isyn after every single contribution, so the
#   order of contributions matters only if some partial sum leaves int16. Each step the kernel bounds
#   every partial sum by max|isyn| + sum over sources of (count * max|weight of that source|); when
#   that is <= 32767 no saturation can happen and the contributions are added plainly, else the
#   exact saturating, ordered path runs. Both give the same integers.
@numba.njit(cache=True, inline="always")
def _sat16(v):
    # All synaptic/membrane registers and adders are 16-bit saturating on the chip (branch-free form).
    return min(max(v, _I16_MIN), _I16_MAX)


@numba.njit(cache=True, inline="always")
def _wrap16(v):
    # Two's-complement narrowing to the 16-bit membrane register (only reachable by a reset with a
    # threshold <= 0, which adds to the membrane).
    return ((v + 32768) & 0xFFFF) - 32768


@intrinsic
def _ashr32(typingctx, v, d):
    # v >> d as a 32-bit arithmetic shift (numba's own >> widens to int64, and AVX2 has no 64-bit
    # arithmetic shift: in 32-bit lanes the neuron loop vectorizes 8 wide). d must lie in 0..31.
    if v != types.int32 or d != types.int32:
        return None

    def codegen(context, builder, signature, args):
        return builder.ashr(args[0], args[1])

    return types.int32(types.int32, types.int32), codegen


@intrinsic
def _ctz64(typingctx, x):
    # Count of trailing zero bits of a non-zero uint64 (one tzcnt/bsf instruction).
    if x != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return types.uint64(types.uint64), codegen


@numba.njit(cache=True, inline="always")
def _decay(v, d):
    # Bit-shift decay (int32 in, int32 out): v >> d is an arithmetic (flooring) shift; when it rounds
    # to 0 the chip still steps by one toward zero (sign(v)), so small states decay linearly and reach
    # exactly 0. Branch-free (selects), so that the neuron loops vectorize.
    dv = _ashr32(v, d)
    sign = np.int32(np.int32(v > 0) - np.int32(v < 0))
    return dv if dv != 0 else sign


@numba.njit(cache=True, inline="always")
def _membrane(v, d, itot, bias):
    # The membrane before spiking (int32): v + dv, dv = sat16(sat16(wrap16(-decay(v, d)) + itot) + bias).
    # The negated decrement is narrowed to int16: with dash 0 and v = -32768 it wraps from +32768 to
    # -32768 (the chip's two's-complement negation). ``bias`` is 0 when bias_enable is off (sat16 is
    # idempotent, so adding a zero bias changes nothing). |itot| <= 65536: no int32 overflow anywhere.
    dm = _decay(v, d)
    dv = np.int32(-dm) if dm != _I16_MIN else dm
    dv = np.int32(_sat16(np.int32(dv + itot)))
    dv = np.int32(_sat16(np.int32(dv + bias)))
    return np.int32(_sat16(np.int32(v + dv)))


@numba.njit(cache=True, inline="always")
def _add_row(state, idx, w, m, sat):
    # state[idx[p]] += m * w[p] over one source's entries (idx, w: its slices, unsigned idx and p from
    # 0, so that no negative-index wrap-around code is emitted). sat: saturate after every addition.
    if sat:
        for p in range(idx.shape[0]):
            i = idx[p]
            state[i] = _sat16(state[i] + m * w[p])
    else:
        for p in range(idx.shape[0]):
            state[idx[p]] += m * w[p]


@numba.njit(cache=True, inline="always")
def _active_list(spikes, active):
    # active[:n] = the neurons with spikes[i] > 0, ascending (the event list of recurrence and
    # readout); returns n.
    n_active = 0
    for i in range(spikes.shape[0]):
        if spikes[i] > 0:
            active[n_active] = i
            n_active += 1
    return n_active


@numba.njit(cache=True, inline="always")
def _max_abs(state):
    # max |state| as int64 (0 for an empty state): the start of the saturation bound.
    big = 0
    for i in range(state.shape[0]):
        big = max(big, abs(np.int64(state[i])))
    return big


@numba.njit(cache=True, inline="always")
def _deliver(xt, proj_in, proj_rec, proj_out, spikes, active, n_active, isyn, isyn_out, big, big_out):
    # Steps 1-3 of one step: input events xt (channels ascending, counts clipped to 15) into isyn, then
    # the spikes of step t-1 (active[:n_active], ascending) into isyn (recurrent) and isyn_out
    # (readout). The partial sums are bounded first (big, big_out: max |isyn|, max |isyn_out|): the
    # ordered saturating additions run only when a bound exceeds int16. Each projection is its sparse
    # lists (ptr, idx, w, wmax) of _csr.
    in_ptr, in_idx, in_w, in_max = proj_in
    rec_ptr, rec_idx, rec_w, rec_max = proj_rec
    out_ptr, out_idx, out_w, out_max = proj_out
    n_in = xt.shape[0]
    reach = big
    for c in range(n_in):
        reach += np.int64(xt[c]) * in_max[c]
    reach_out = big_out
    for a in range(n_active):
        j = active[a]
        m = np.int64(spikes[j])
        reach += m * rec_max[j]
        reach_out += m * out_max[j]
    sat = reach > _I16_MAX
    sat_out = reach_out > _I16_MAX
    for c in range(n_in):
        n = np.int64(xt[c])
        if n > 0:
            lo, hi = in_ptr[c], in_ptr[c + 1]
            _add_row(isyn, in_idx[lo:hi], in_w[lo:hi], n, sat)
    for a in range(n_active):
        j = active[a]
        m = np.int64(spikes[j])
        lo, hi = rec_ptr[j], rec_ptr[j + 1]
        _add_row(isyn, rec_idx[lo:hi], rec_w[lo:hi], m, sat)
        # The readout is a separate state: interleaving it with the recurrence is harmless.
        lo, hi = out_ptr[j], out_ptr[j + 1]
        _add_row(isyn_out, out_idx[lo:hi], out_w[lo:hi], m, sat_out)


@numba.njit(cache=True, inline="always")
def _integrate_hidden(k, dash_mem, dash_syn, thr, bias, vmem, isyn, fire):
    # Step 4a, every hidden neuron (branch-free: LLVM vectorizes it): decay the synapses, integrate the
    # membrane (vmem then holds the membrane before spiking), set fire[i] = vmem[i] >= thr[i]. The two
    # synapses are summed without saturation. Returns max |isyn| after the decay (int32).
    N = vmem.shape[0]
    big = np.int32(0)
    if k == 2:
        for i in range(N):
            s0 = isyn[i]
            s0 = np.int32(s0 - _decay(s0, dash_syn[i]))  # |s - decay(s)| <= |s|: stays in int16
            s1 = isyn[N + i]
            s1 = np.int32(s1 - _decay(s1, dash_syn[N + i]))
            isyn[i] = s0
            isyn[N + i] = s1
            big = max(big, max(np.int32(abs(s0)), np.int32(abs(s1))))
            v = _membrane(vmem[i], dash_mem[i], np.int32(s0 + s1), bias[i])
            vmem[i] = v
            fire[i] = v >= thr[i]
    else:
        for i in range(N):
            s0 = isyn[i]
            s0 = np.int32(s0 - _decay(s0, dash_syn[i]))
            isyn[i] = s0
            big = max(big, np.int32(abs(s0)))
            v = _membrane(vmem[i], dash_mem[i], s0, bias[i])
            vmem[i] = v
            fire[i] = v >= thr[i]
    return big


@numba.njit(cache=True, inline="always")
def _spike_count(v, th, n):
    # Reset by subtraction of one neuron that reached its threshold: from membrane v, threshold th and
    # n spikes already received this step (aliases), the closed form of
    # "while v >= th and n < 31: n += 1; v = wrap16(v - th)"; returns (n, v) as int64.
    if th > 0:
        # At most 31 spikes (5-bit counter); one spike in most cases. With a positive threshold
        # v - th lies in [0, v]: no wrap can occur.
        c = 1 if v < 2 * th else v // th
        if c > _MAX_SPIKES_HID - n:
            c = _MAX_SPIKES_HID - n
        return n + c, v - c * th
    # threshold <= 0: the reset adds |threshold| in the 16-bit membrane register, which wraps around
    # (two's complement, as xylosim/the chip do); the loop stops at the 31-spike cap or once the
    # wrapped membrane is below threshold.
    while v >= th and n < _MAX_SPIKES_HID:
        n += 1
        v = _wrap16(v - th)
    return n, v


@numba.njit(cache=True, inline="always")
def _spike_hidden(thr, alias, vmem, spikes, fire, fire_words, active):
    # Step 4b: spiking, ids ascending, only where a fire flag is set (8 flags per uint64 word; aliases
    # point to higher ids, so spikes[i] is final when i is reached). Sets spikes (the per-step buffer,
    # cleared by the caller), resets vmem, lists the spiking neurons in active; returns their count.
    n_active = 0
    for wd in range(fire_words.shape[0]):
        word = fire_words[wd]
        while word != 0:
            i = 8 * wd + np.int64(_ctz64(word) >> np.uint64(3))  # little-endian: byte b = bits 8b..
            word &= word - np.uint64(1)  # flags are 0/1 bytes: drops exactly flag i
            v = np.int64(vmem[i])
            th = np.int64(thr[i])
            n = np.int64(spikes[i])  # alias spikes already received this step
            if v >= th and n < _MAX_SPIKES_HID:
                n, v = _spike_count(v, th, n)
                vmem[i] = v
            if n > 0:
                spikes[i] = n
                active[n_active] = i
                n_active += 1
                tgt = alias[i]
                if tgt >= 0:
                    # Alias copies share the target's 5-bit spike counter (capped at 31); the
                    # target must now go through this step too (it lies after i).
                    spikes[tgt] = min(spikes[tgt] + n, _MAX_SPIKES_HID)
                    fire[tgt] = 1
                    if tgt >> 3 == wd:
                        word |= np.uint64(1) << np.uint64(8 * (tgt & 7))
    return n_active


@numba.njit(cache=True, inline="always")
def _record_hidden(t, k, vmem, isyn, spikes, r_vmem, r_isyn, r_isyn2, r_spk):
    # Row t of the hidden records: Vmem, Isyn (synapse 0), Spikes, and Isyn2 when k == 2.
    N = vmem.shape[0]
    for i in range(N):
        r_vmem[t, i] = vmem[i]
        r_isyn[t, i] = isyn[i]
        r_spk[t, i] = spikes[i]
    if k == 2:
        for i in range(N):
            r_isyn2[t, i] = isyn[N + i]


@numba.njit(cache=True, inline="always")
def _update_output(
    t, dash_mem_out, dash_syn_out, thr_out, bias_out, vmem_out, isyn_out, out, record, r_vmem_out, r_isyn_out
):
    # Step 5: the output neurons, one synapse, at most one spike per step, no aliases; writes out[t]
    # (and the records when record). Returns max |isyn_out| after the decay (int64).
    big_out = 0
    for o in range(vmem_out.shape[0]):
        s0 = isyn_out[o]
        s0 = np.int32(s0 - _decay(s0, dash_syn_out[o]))
        isyn_out[o] = s0
        big_out = max(big_out, abs(np.int64(s0)))
        v = np.int64(_membrane(vmem_out[o], dash_mem_out[o], s0, bias_out[o]))
        th = np.int64(thr_out[o])
        if v >= th:
            out[t, o] = 1  # 1-spike output counter
            v = _wrap16(v - th)  # 16-bit register: wraps for a negative threshold
        else:
            out[t, o] = 0
        vmem_out[o] = v
        if record:
            r_vmem_out[t, o] = v
            r_isyn_out[t, o] = s0
    return big_out


@numba.njit(cache=True, nogil=True)
def run_sample(
    x,
    in_ptr,
    in_idx,
    in_w,
    in_max,
    rec_ptr,
    rec_idx,
    rec_w,
    rec_max,
    out_ptr,
    out_idx,
    out_w,
    out_max,
    k,
    dash_mem,
    dash_syn,
    thr,
    bias,
    alias,
    dash_mem_out,
    dash_syn_out,
    thr_out,
    bias_out,
    vmem,
    isyn,
    spikes,
    vmem_out,
    isyn_out,
    out,
    record,
    r_vmem,
    r_isyn,
    r_isyn2,
    r_spk,
    r_vmem_out,
    r_isyn_out,
):
    """Run one sample for ``x.shape[0]`` steps (update equations 1-6 of the module docstring, one
    inlined helper per stage); state arrays are updated in place."""
    N = vmem.shape[0]
    # Neurons that spiked in the previous step (event list for recurrence and readout).
    active = np.empty(N, dtype=np.int32)
    n_active = _active_list(spikes, active)
    # fire[i] = 1: neuron i must go through the spiking step (it crossed its threshold, or it received
    # alias spikes); read 8 flags at a time as one uint64 word (the tail past N stays 0).
    fire = np.zeros(8 * ((N + 7) // 8), dtype=np.uint8)
    fire_words = fire.view(np.uint64)
    # max |isyn| and max |isyn_out| at the start of the step (then kept up to date by the updates).
    big = _max_abs(isyn)
    big_out = _max_abs(isyn_out)
    proj_in = (in_ptr, in_idx, in_w, in_max)
    proj_rec = (rec_ptr, rec_idx, rec_w, rec_max)
    proj_out = (out_ptr, out_idx, out_w, out_max)
    for t in range(x.shape[0]):
        _deliver(x[t], proj_in, proj_rec, proj_out, spikes, active, n_active, isyn, isyn_out, big, big_out)
        # The per-step spike buffer starts at zero: clear last step's entries only.
        for a in range(n_active):
            spikes[active[a]] = 0
        big = _integrate_hidden(k, dash_mem, dash_syn, thr, bias, vmem, isyn, fire)
        n_active = _spike_hidden(thr, alias, vmem, spikes, fire, fire_words, active)
        if record:
            _record_hidden(t, k, vmem, isyn, spikes, r_vmem, r_isyn, r_isyn2, r_spk)
        big_out = _update_output(
            t, dash_mem_out, dash_syn_out, thr_out, bias_out, vmem_out, isyn_out, out, record, r_vmem_out, r_isyn_out
        )


@numba.njit(cache=True, parallel=True)
def run_batch(
    x,
    in_ptr,
    in_idx,
    in_w,
    in_max,
    rec_ptr,
    rec_idx,
    rec_w,
    rec_max,
    out_ptr,
    out_idx,
    out_w,
    out_max,
    k,
    dash_mem,
    dash_syn,
    thr,
    bias,
    alias,
    dash_mem_out,
    dash_syn_out,
    thr_out,
    bias_out,
    vmem,
    isyn,
    spikes,
    vmem_out,
    isyn_out,
    out,
    record,
    r_vmem,
    r_isyn,
    r_isyn2,
    r_spk,
    r_vmem_out,
    r_isyn_out,
):
    """Run ``B`` independent samples in parallel; every state array has a leading batch axis."""
    B = x.shape[0]
    stride = 1 if record else 0  # record off: every sample gets the (0, 0) placeholder
    for b in numba.prange(B):
        r = b * stride
        run_sample(
            x[b],
            in_ptr,
            in_idx,
            in_w,
            in_max,
            rec_ptr,
            rec_idx,
            rec_w,
            rec_max,
            out_ptr,
            out_idx,
            out_w,
            out_max,
            k,
            dash_mem,
            dash_syn,
            thr,
            bias,
            alias,
            dash_mem_out,
            dash_syn_out,
            thr_out,
            bias_out,
            vmem[b],
            isyn[b],
            spikes[b],
            vmem_out[b],
            isyn_out[b],
            out[b],
            record,
            r_vmem[r],
            r_isyn[r],
            r_isyn2[r],
            r_spk[r],
            r_vmem_out[r],
            r_isyn_out[r],
        )
