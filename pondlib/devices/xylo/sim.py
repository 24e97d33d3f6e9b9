"""A fast, bit-exact simulator of the Xylo core (integer dynamics of ``docs/XYLO.md``).

The kernel is event-driven and compiled with numba: per time step it touches input weights only for
channels with events, recurrent and readout weights only for neurons that spiked in the previous step
(per-pre-neuron sparse lists built once from the dense matrices), does one vectorized O(N) pass to
decay and integrate, and visits only the neurons that reached their threshold. A batch of independent
samples runs in parallel (``numba.prange``), each sample with its own state; an unbatched run is one
single-threaded call (no thread start-up). With ``record=False`` nothing is recorded.

Update equations (one step ``t``; all arithmetic integer; ``sat16`` clamps to [-32768, 32767];
``decay(v, d) = v >> d`` (arithmetic shift, floor), replaced by ``sign(v)`` when it is 0; the delivered
weight of a projection with shift ``s`` is ``wrap16(w << s)``)::

    1. input      for c ascending:  n = min(x[t, c], 15)
                                    isyn[i, q] = sat16(isyn[i, q] + n * wrap16(w_in[c, i, q] << s_in))
    2. recurrent  for j ascending with m = spikes[t-1, j] > 0:
                                    isyn[i, q] = sat16(isyn[i, q] + m * wrap16(w_rec[j, i, q] << s_rec))
    3. readout    for j ascending with m = spikes[t-1, j] > 0:
                                    isyn_out[o] = sat16(isyn_out[o] + m * wrap16(w_out[j, o] << s_out))
    4. hidden     for i ascending (spike buffer b = 0 at the start of the step):
                    isyn[i, q] -= decay(isyn[i, q], dash_syn[i, q])
                    dv   = wrap16(-decay(vmem[i], dash_mem[i]))
                    dv   = sat16(dv + isyn[i, 0] + isyn[i, 1]);  dv = sat16(dv + bias[i]) if bias_enable
                    vmem = sat16(vmem + dv)
                    n = b[i]; while vmem >= threshold[i] and n < 31: n += 1; vmem = wrap16(vmem - threshold[i])
                    b[i] = n;  if aliases[i] >= 0: b[aliases[i]] = min(b[aliases[i]] + n, 31)
    5. output     the same with one synapse, the output parameters, at most 1 spike, no aliases
    6. spikes[t] = b (drives steps 2 and 3 at t + 1); the output at t is the output spike vector

Units: states, thresholds, biases and weights are chip integers (no physical unit); ``dt`` (seconds)
only labels time, it does not enter the integer dynamics. Input is a count of events per channel per
step. **The chip clips counts above 15 to 15** (a 4-bit input counter); this simulator does the same,
which is the hardware behaviour and not an error.

Record (``record=True``), ``int32`` arrays, time first (a leading ``B`` axis for batched input):

=============  ==============  ==========================================================
key            shape           content (value at the end of step ``t``)
=============  ==============  ==========================================================
``Vmem``       (T, N_hid)      hidden membrane, after reset by subtraction
``Isyn``       (T, N_hid)      hidden synaptic state of synapse 0
``Isyn2``      (T, N_hid)      hidden synaptic state of synapse 1 (zeros when k == 1)
``Spikes``     (T, N_hid)      hidden spike counts, alias copies included (0..31)
``Vmem_out``   (T, N_out)      output membrane
``Isyn_out``   (T, N_out)      output synaptic state
=============  ==============  ==========================================================

The state (``Vmem``, ``Isyn``, ``Isyn2``, ``Spikes`` (last step's hidden spike counts, which drive
the next step's recurrence and readout), ``Vmem_out``, ``Isyn_out``; ``int64``) persists across calls
to :meth:`XyloSim.evolve` until :meth:`XyloSim.reset_state`: two half-length runs equal one run.

Example:
    >>> import numpy as np
    >>> from pondlib.devices.xylo.config import XyloConfig
    >>> cfg = XyloConfig(
    ...     weights_in=np.array([[[100]]]), weights_rec=np.zeros((1, 1, 1)),
    ...     weights_out=np.array([[50]]), dash_mem=[1], dash_syn=[1], dash_syn_2=[0],
    ...     dash_mem_out=[1], dash_syn_out=[1], threshold=[60], bias=[0], threshold_out=[40],
    ...     bias_out=[0], aliases=[-1])
    >>> sim = XyloSim.from_config(cfg)
    >>> out, state, rec = sim.evolve(np.array([[1], [0], [0], [0]]), record=True)
    >>> rec["Isyn"][:, 0].tolist()     # 100 - 50; 50 - 25; 25 - (25 >> 1); 13 - 6
    [50, 25, 13, 7]
    >>> rec["Vmem"][:, 0].tolist()     # 0 + 50; 50 - 25 + 25; 50 - 25 + 13; 38 - 19 + 7
    [50, 50, 38, 26]
    >>> out, state, rec = sim.evolve(np.array([[15], [0], [0]]), record=True)  # continues
    >>> rec["Isyn"][:, 0].tolist()     # (7 + 15 * 100) - 753 = 754, then halves
    [754, 377, 189]
    >>> rec["Spikes"][:, 0].tolist()   # (26 - 13 + 754) = 767 = 12 * 60 + 47: 12 spikes
    [12, 6, 3]
    >>> out[:, 0].tolist()             # the readout sees hidden spikes one step later
    [0, 1, 1]
    >>> state["Vmem"].tolist(), state["Spikes"].tolist()
    ([30], [3])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from pondlib.devices.xylo.config import XyloConfig, config_from_specification, validate_config
from pondlib.devices.xylo.limits import XyloLimits, get_limits
from pondlib.errors import ConfigError, SimulationError
from pondlib.validate import as_int_array, check_bool, check_float

__all__ = ["XyloSim", "RECORD_KEYS", "STATE_KEYS"]

#: Keys of the record dict, in order.
RECORD_KEYS = ("Vmem", "Isyn", "Isyn2", "Spikes", "Vmem_out", "Isyn_out")
#: Keys of the state dict, in order.
STATE_KEYS = ("Vmem", "Isyn", "Isyn2", "Spikes", "Vmem_out", "Isyn_out")

_MAX_INPUT = 15  # 4-bit input event counter per channel per step
_MAX_SPIKES_HID = 31  # 5-bit hidden spike counter per step
_I16_MIN = -32768  # 16-bit signed state registers
_I16_MAX = 32767


# ------------------------------------------------------------------------------------------------
# The compiled kernel
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
def _run_sample(
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
def _run_batch(
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
        _run_sample(
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


# ------------------------------------------------------------------------------------------------
# Python front end
# ------------------------------------------------------------------------------------------------
def _delivered(w: np.ndarray, shift: int) -> np.ndarray:
    """``wrap16(w << shift)``: the chip narrows the shifted weight to 16 bits with wrap-around."""
    v = np.asarray(w, dtype=np.int64) << np.int64(shift)  # |w| <= 128, shift <= 15: no int64 overflow
    return ((v + 32768) & 0xFFFF) - 32768


def _csr(w: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per-source sparse lists of a dense ``(pre, post[, syn])`` matrix of delivered weights.

    Returns ``(ptr, idx, weight, wmax)``: the entries of source ``j`` are ``ptr[j]:ptr[j + 1]``
    in ascending (post, syn) order; ``idx = syn * N_post + post`` is the flat index into the kernel's
    ``[synapse 0 | synapse 1]`` state (uint16, uint32 beyond 65536 targets); ``weight`` is int16;
    ``ptr`` and ``wmax`` are int32; ``wmax[j]`` is the largest ``|weight|`` of source ``j`` (0 if it
    has none). Zero delivered weights are dropped (they change nothing).

    Example:
        >>> ptr, idx, w, wmax = _csr(np.array([[[0, 3], [-5, 0]], [[0, 0], [0, 0]]]))
        >>> ptr.tolist(), idx.tolist(), w.tolist(), wmax.tolist()  # source 0: (post 0, syn 1), (post 1, syn 0)
        ([0, 2, 2], [2, 1], [3, -5], [5, 0])
    """
    if w.ndim == 2:
        w = w[:, :, None]
    pre, post, syn = np.nonzero(w)
    ptr = np.zeros(w.shape[0] + 1, dtype=np.int32)
    np.cumsum(np.bincount(pre, minlength=w.shape[0]), out=ptr[1:])
    weight = w[pre, post, syn].astype(np.int16)  # delivered weights are 16-bit
    wmax = np.zeros(w.shape[0], dtype=np.int32)
    np.maximum.at(wmax, pre, np.abs(weight.astype(np.int32)))
    idx = syn * w.shape[1] + post
    return ptr, idx.astype(np.uint16 if w.shape[1] * w.shape[2] <= 1 << 16 else np.uint32), weight, wmax


def _where(index: tuple[int, ...]) -> str:
    return "x[" + ", ".join(str(int(i)) for i in index) + "]"


class XyloSim:
    """Bit-exact, event-driven simulator of one Xylo core configured by a :class:`XyloConfig`.

    Build it with :meth:`from_config` or :meth:`from_specification` (both validate and raise
    :class:`~pondlib.errors.ConfigError` with every problem), then call :meth:`evolve` (or the simulator
    itself, as Rockpool modules are called: ``sim(x, record=True)``).

    Args:
        config: the configuration (validated against ``limits``, default its ``limits_name``).
        dt: overrides ``config.dt`` (s, finite and > 0); it only labels time.
        limits: the Xylo variant to validate against.
    """

    def __init__(self, config: XyloConfig, dt: float | None = None, limits: XyloLimits | str | None = None) -> None:
        if not isinstance(config, XyloConfig):
            raise ConfigError(
                "not a XyloConfig",
                value=type(config).__name__,
                where="XyloSim",
                fix="build one with config_from_specification or XyloConfig(...)",
            )
        if dt is not None:
            dt = check_float(
                dt, "dt", lo=0.0, lo_open=True, where="XyloSim", error=ConfigError, fix="pass dt in seconds"
            )
        problems = validate_config(config, limits)
        if problems:
            raise ConfigError(problems=problems, where="XyloSim")
        self.config = config
        self.limits = get_limits(config.limits_name if limits is None else limits)
        self.dt = float(config.dt if dt is None else dt)
        self.k = config.n_synapses
        self.n_input, self.n_hidden, self.n_output = config.n_input, config.n_hidden, config.n_output

        n_hid, n_out = self.n_hidden, self.n_output
        self._weights = (
            *_csr(_delivered(config.weights_in, config.weight_shift_in)),
            *_csr(_delivered(config.weights_rec, config.weight_shift_rec)),
            *_csr(_delivered(config.weights_out, config.weight_shift_out)),
        )
        i32 = lambda a, n: np.ascontiguousarray(np.broadcast_to(a, (n,)), dtype=np.int32)  # noqa: E731
        bias_on = bool(config.bias_enable)
        # Kernel parameters (see _run_sample): a disabled bias is passed as zeros.
        self._neuron = (
            self.k,
            i32(config.dash_mem, n_hid),
            np.concatenate([i32(config.dash_syn, n_hid), i32(config.dash_syn_2, n_hid)]),
            i32(config.threshold, n_hid),
            i32(config.bias if bias_on else 0, n_hid),
            i32(config.aliases, n_hid),
            i32(config.dash_mem_out, n_out),
            i32(config.dash_syn_out, n_out),
            i32(config.threshold_out, n_out),
            i32(config.bias_out if bias_on else 0, n_out),
        )
        self._state: dict[str, np.ndarray] | None = None
        self._batch: int | None = None

    def __repr__(self) -> str:
        return (
            f"XyloSim({self.limits.name}: N_in={self.n_input}, N_hid={self.n_hidden}, N_out={self.n_output}, "
            f"k={self.k}, dt={self.dt!r})"
        )

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_config(cls, config: XyloConfig, dt: float | None = None) -> XyloSim:
        """A simulator for ``config`` (validated against its ``limits_name``); ``dt`` overrides its dt."""
        return cls(config, dt=dt)

    @classmethod
    def from_specification(cls, spec: Any = None, /, limits: XyloLimits | str | None = None, **fields: Any) -> XyloSim:
        """A simulator for a quantized specification; raises ConfigError listing every problem.

        Rockpool's ``XyloSim.from_specification(**spec)`` works too (the fields as keyword arguments,
        as :func:`~pondlib.devices.xylo.config.config_from_specification` takes them).
        """
        config, ok, _msg = config_from_specification(spec, limits, **fields)
        if not ok:
            raise ConfigError(problems=validate_config(config, limits), where="XyloSim.from_specification")
        return cls(config, limits=limits)

    # -- state ----------------------------------------------------------------------------------
    def reset_state(self) -> None:
        """Zero every state register (and forget the batch size)."""
        self._state = None
        self._batch = None

    def _zero_state(self, lead: tuple[int, ...]) -> dict[str, np.ndarray]:
        # Internal registers: int32, "Isyn" holds [synapse 0 | synapse 1] (length 2 N, see the kernel).
        z = lambda n: np.zeros(lead + (n,), dtype=np.int32)  # noqa: E731
        return {
            "Vmem": z(self.n_hidden),
            "Isyn": z(2 * self.n_hidden),
            "Spikes": z(self.n_hidden),
            "Vmem_out": z(self.n_output),
            "Isyn_out": z(self.n_output),
        }

    def _public(self, st: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        i64 = lambda a: np.array(a, dtype=np.int64)  # noqa: E731 (a copy)
        n = self.n_hidden
        return {
            "Vmem": i64(st["Vmem"]),
            "Isyn": i64(st["Isyn"][..., :n]),
            "Isyn2": i64(st["Isyn"][..., n:]),
            "Spikes": i64(st["Spikes"]),
            "Vmem_out": i64(st["Vmem_out"]),
            "Isyn_out": i64(st["Isyn_out"]),
        }

    @property
    def state(self) -> dict[str, np.ndarray]:
        """A copy of the current state (zeros, unbatched, before the first run or after a reset)."""
        return self._public(self._state if self._state is not None else self._zero_state(()))

    # -- input checks ---------------------------------------------------------------------------
    def _check_input(self, x: Any) -> tuple[np.ndarray, bool]:
        fix = "pass non-negative integer event counts of shape (T, N_in) or (B, T, N_in)"
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError):
            raise SimulationError(
                "input is not an array",
                value="a ragged nested sequence",
                limit="a rectangular array",
                where="x",
                fix=fix,
            ) from None
        if arr.dtype.kind not in "biuf":
            raise SimulationError(
                "input dtype", value=str(arr.dtype), limit="an integer, bool or float dtype", where="x", fix=fix
            )
        if arr.ndim not in (2, 3):
            raise SimulationError(
                "input dimensions",
                value=f"shape {arr.shape} (ndim {arr.ndim})",
                limit="(T, N_in) or (B, T, N_in)",
                where="x",
                fix=fix,
            )
        if arr.ndim == 3 and arr.shape[0] == 0:
            raise SimulationError(
                "batch size", value=0, limit=">= 1 sample", where="x.shape[0]", fix="pass at least one sample"
            )
        if arr.shape[-1] != self.n_input:
            raise SimulationError(
                "input channel count",
                value=arr.shape[-1],
                limit=f"N_in = {self.n_input} (the configuration's input channels)",
                where="x.shape[-1]",
                fix=fix,
            )
        if arr.dtype.kind == "f":
            finite = np.isfinite(arr)
            safe = np.where(finite, arr, 0.0)
            bad = ~finite | (safe < 0) | (safe != np.floor(safe))
            if bad.any():
                idx = tuple(np.argwhere(bad)[0])
                v = arr[idx]
                kind = (
                    "non-finite input event count"
                    if not np.isfinite(v)
                    else "negative input event count"
                    if v < 0
                    else "non-integer input event count"
                )
                raise SimulationError(kind, value=float(v), limit="a non-negative integer", where=_where(idx), fix=fix)
        elif arr.dtype.kind == "i":
            bad = arr < 0
            if bad.any():
                idx = tuple(np.argwhere(bad)[0])
                raise SimulationError(
                    "negative input event count",
                    value=int(arr[idx]),
                    limit="a non-negative integer",
                    where=_where(idx),
                    fix=fix,
                )
        # The chip's 4-bit input counter clips counts above 15 to 15 (documented hardware
        # behaviour, also done by the kernel); clipping here first keeps huge values castable.
        # uint8 counts: 8x less memory traffic than int64 for the kernel's per-step channel scan.
        if arr.dtype.kind == "b":
            xc = np.ascontiguousarray(arr, dtype=np.uint8)
        else:
            xc = np.ascontiguousarray(np.minimum(arr, _MAX_INPUT), dtype=np.uint8)
        return xc, arr.ndim == 3

    def _check_state(self, state: Any, batch: int | None) -> dict[str, np.ndarray]:
        """A state passed back to :meth:`evolve`, as the internal (writable, int32) registers."""
        where = "XyloSim.evolve(state=...)"
        fix = "pass a state returned by evolve() (or sim.state) for the same configuration"
        if not isinstance(state, Mapping):
            raise SimulationError(
                "state", value=type(state).__name__, limit="a dict of state arrays", where=where, fix=fix
            )
        unknown = sorted(str(k) for k in state if k not in STATE_KEYS)
        missing = [k for k in STATE_KEYS if k not in state]
        if unknown or missing:
            raise SimulationError(
                "state keys",
                value=f"unknown {unknown}, missing {missing}",
                limit=list(STATE_KEYS),
                where=where,
                fix=fix,
            )
        sizes = {"Vmem_out": self.n_output, "Isyn_out": self.n_output}
        ranges = {"Spikes": (0, _MAX_SPIKES_HID)}
        arrays: dict[str, np.ndarray] = {}
        lead: tuple[int, ...] | None = None
        for key in STATE_KEYS:
            lo, hi = ranges.get(key, (_I16_MIN, _I16_MAX))
            arr = as_int_array(
                state[key],
                f"state[{key!r}]",
                lo=lo,
                hi=hi,
                where=where,
                error=SimulationError,
                fix=fix,
                allow_empty=True,
            )
            n = sizes.get(key, self.n_hidden)
            if arr.ndim not in (1, 2) or arr.shape[-1] != n:
                raise SimulationError(
                    f"state[{key!r}] shape", value=arr.shape, limit=f"(N,) or (B, N) with N = {n}", where=where, fix=fix
                )
            if lead is None:
                lead = arr.shape[:-1]
            elif arr.shape[:-1] != lead:
                raise SimulationError(
                    f"state[{key!r}] shape",
                    value=arr.shape,
                    limit=f"the batch shape {lead} of the other entries",
                    where=where,
                    fix=fix,
                )
            arrays[key] = arr
        assert lead is not None
        if lead and (batch is None or lead[0] != batch):
            raise SimulationError(
                "state batch size",
                value=lead[0],
                limit="an unbatched state for unbatched input" if batch is None else f"{batch} (the input's batch)",
                where=where,
                fix=fix,
            )
        if self.k == 1 and np.any(arrays["Isyn2"]):
            raise SimulationError(
                "state['Isyn2']", value="non-zero", limit="zeros (one synapse per neuron)", where=where, fix=fix
            )
        st = {
            "Vmem": arrays["Vmem"],
            "Isyn": np.concatenate([arrays["Isyn"], arrays["Isyn2"]], axis=-1),
            "Spikes": arrays["Spikes"],
            "Vmem_out": arrays["Vmem_out"],
            "Isyn_out": arrays["Isyn_out"],
        }
        return {key: np.array(v, dtype=np.int32, order="C") for key, v in st.items()}

    # -- run ------------------------------------------------------------------------------------
    def __call__(
        self, x: Any, record: bool = False, state: Mapping[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Same as :meth:`evolve` (Rockpool modules are called: ``out, state, rec = sim(x, record=True)``)."""
        return self.evolve(x, record=record, state=state)

    def evolve(
        self, x: Any, record: bool = False, state: Mapping[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Run the core on input event counts ``x`` from the current state (or from ``state``).

        Args:
            x: ``(T, N_in)`` or ``(B, T, N_in)`` non-negative integer event counts (any integer or bool
                dtype, or float holding integers). Counts above 15 are clipped to 15 as the chip does
                (huge counts included: the chip's 4-bit input counter saturates, nothing overflows).
                An empty time axis (``T = 0``) returns empty outputs and leaves the state unchanged.
            record: also return the recorded states (see the module docstring); a bool.
            state: start from this state (a dict as returned by :meth:`evolve` or :attr:`state`, entries
                ``(N,)`` or, for batched input, ``(B, N)``) instead of the current one.

        Returns:
            ``(output, state, record)``: output spikes ``(T, N_out)`` / ``(B, T, N_out)`` (int32),
            the state after the run (copies), and the record dict (empty when ``record`` is False).

        Raises:
            SimulationError: bad input (naming the first offending index), an empty batch, a bad
                ``state`` (keys, shape, batch size, values outside the registers), or a batch size that
                differs from the batched state of a previous call (call :meth:`reset_state`).
        """
        record = check_bool(record, "record", where="XyloSim.evolve", error=SimulationError)
        xc, batched = self._check_input(x)
        st = self._state
        if state is not None:
            st = self._check_state(state, xc.shape[0] if batched else None)
            if batched and st["Vmem"].ndim == 1:
                B = xc.shape[0]
                st = {key: np.ascontiguousarray(np.broadcast_to(v, (B,) + v.shape)) for key, v in st.items()}
        elif batched:
            B = xc.shape[0]
            if st is None:
                st = self._zero_state((B,))
            elif self._batch is None:
                # An unbatched state is broadcast to every sample of the batch.
                st = {key: np.ascontiguousarray(np.broadcast_to(v, (B,) + v.shape)) for key, v in st.items()}
            elif self._batch != B:
                raise SimulationError(
                    "batch size",
                    value=B,
                    limit=f"{self._batch} (the batched state)",
                    where="x.shape[0]",
                    fix="call reset_state() before running a different batch size",
                )
        else:
            if st is None:
                st = self._zero_state(())
            elif self._batch is not None:
                raise SimulationError(
                    "unbatched input after a batched run",
                    value=f"shape {xc.shape}",
                    limit=f"(B={self._batch}, T, N_in)",
                    where="x",
                    fix="call reset_state() before running unbatched input",
                )
        lead = xc.shape[:-1]  # (T,) or (B, T)
        out = np.zeros(lead + (self.n_output,), dtype=np.int32)
        if record:
            recs = [np.zeros(lead + (n,), dtype=np.int32) for n in (self.n_hidden,) * 4 + (self.n_output,) * 2]
        else:
            empty = (1, 0, 0) if batched else (0, 0)
            recs = [np.zeros(empty, dtype=np.int32) for _ in range(6)]
        kernel = _run_batch if batched else _run_sample
        kernel(
            xc,
            *self._weights,
            *self._neuron,
            st["Vmem"],
            st["Isyn"],
            st["Spikes"],
            st["Vmem_out"],
            st["Isyn_out"],
            out,
            bool(record),
            *recs,
        )
        self._state = st
        self._batch = xc.shape[0] if batched else None
        rec_dict = dict(zip(RECORD_KEYS, recs)) if record else {}
        return out, self._public(st), rec_dict
