r"""Closed-form data movement and energy of one schedule, following STEMS's accounting.

:func:`evaluate` replaces STEMS's event-driven scheduler (minutes per schedule) by the rules of
``docs/EXPLORE.md`` applied per *group* (a run of consecutive blocks with the same ``(B, fused)``,
``n = T / B`` time chunks). Notation, all in bits: ``W_l`` weights, ``S_l`` state, ``O_l`` output per
step, ``I_l`` input per step as layer ``l`` reads it, ``M`` the shared memory.

**Tensors.** The output of layer ``p`` occupies on chip: inside a fused stack a line buffer of ``B``
steps of the consumer's window (``K OY b`` per column, ``FX`` columns); inside a layer-by-layer run the
whole map for ``B`` steps, ``B O_p``; across groups the whole map for ``max(B_p, B_c)`` steps (a group
with a larger batch waits for, or produces, that many steps at once). A tensor sent to DRAM ("spilled")
costs one write of ``T O_p`` and, per consumer, a read of ``T I_c``, times the halo re-fetch factor when
that consumer's node could not hold it (``(ceil(OY / t) ((t - 1) SY + FY)) / IY`` with ``t = min(OY,
pe_oy)`` row tiles for LBL, ``OX FX / IX`` column windows for LF). The network input starts in DRAM
(read ``T I_c``); the last layer's output stays on chip unless its node must leave it in DRAM.

**Layer-by-layer group** (one node per layer and chunk). If ``n > 1`` and ``sum W + sum S <= M`` the
weights and states stay on chip across chunks ("persistent"): weights are read once and states pay only
the compulsory traffic; nodes then share ``M - sum W - sum S`` for their spikes. Otherwise nothing
persists: every chunk re-reads ``W_l`` and reads and writes ``S_l``. In every node the operands (weights,
state, inputs, output, and tensors held across the node for a later layer) are sorted by size ascending
and the largest that do not fit in the node's capacity are left in DRAM: weights and states cost what
they cost anyway, inputs are re-read with the halo factor, outputs are written (and read back).

**Fused group** (one node per output column, layer and chunk). Weights, the most reused, stay: sorted
ascending, those that fit are read once; the rest are re-read by every column node, ``n OX_l W_l``.
Then one state column tile (``S_l / OX_l``), then the spike tensors (line buffers, tensors entering or
leaving the stack, tensors held across it) sorted ascending; those that do not fit are spilled (fetched
states evict spike tiles first). What room is left keeps states resident across chunks, earliest layer
first (STEMS evicts the lowest ``remaining_uses * 100 - layer_id``). The stack *fits* when its weights,
state tile and line buffers all fit. Keeping weights first is STEMS's policy, not an optimum: a larger
memory that keeps more weights of a stack that does not fit can crowd out its line buffers, so a fused
stack's traffic is not always monotone in the memory size.

**States.** With ``R_l`` bits of layer ``l``'s state resident across chunks (``R_l = S_l`` in a
persistent run, ``0`` in a non-persistent one):

* ``mode="stems"`` (faithful: every tile starts in DRAM and is written back when it leaves the chip):
  reads = writes = ``R_l + n (S_l - R_l)``; full time batching still pays ``2 S_l``;
* ``mode="ideal"`` (no read of the all-zero initial state, no write of the final one): reads = writes =
  ``(n - 1)(S_l - R_l)``.

**Energy** (pJ). Off-chip: every DRAM read costs ``e_rd(DRAM) + e_wr(shared)`` per bit, every write
``e_rd(shared) + e_wr(DRAM)`` (sender read + receiver write). MAC: ``T`` x ops x ``sop_energy_pj`` (1-bit
input) or ``mac_energy_pj`` (multi-bit input), schedule independent. On-chip (output stationary):

* PE operand reads: per op, ``b_in / min(pe_k, K)`` input bits from the input buffer and
  ``b_w / min(pe_oy, OY)`` weight bits from the weight buffer;
* buffer fills from the shared memory: weights once per node (LBL: ``n W_l``; LF: ``n W_l`` when the
  stack's weights fit the weight buffer, else ``n OX_l W_l``); inputs ``T I_l`` times the halo factor;
* states between the shared memory and the PE accumulators once per chunk (read and write), minus the
  initial read and final write in the ideal mode; outputs written once per step, ``T O_l``.

Example:
    >>> from pondlib.explore import sew_resnet18, meta_prototype, Schedule
    >>> w, hw = sew_resnet18(), meta_prototype("1MB")
    >>> st_lbl = evaluate(w, hw, Schedule.uniform(7, batch=1))
    >>> st_lbl.traffic_by_class["states"] == 2 * 16 * w.total_state_bits
    True
    >>> tb_lf = evaluate(w, hw, Schedule.uniform(7, batch=16, fused=True))
    >>> tb_lf.traffic_bits == w.total_weight_bits + 2 * w.total_state_bits + w.input_bits, tb_lf.fits
    (True, True)
    >>> evaluate(w, hw, Schedule.uniform(7, batch=16, fused=True), mode="ideal").traffic_by_class["states"]
    0.0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pondlib.errors import ConfigError
from pondlib.explore.hardware import Hardware
from pondlib.explore.report import GroupReport, Report
from pondlib.explore.schedule import Schedule
from pondlib.explore.workload import NETWORK_INPUT, Workload

__all__ = ["evaluate", "MODES"]

#: Accounting modes: ``"stems"`` (compulsory state read and write-back) and ``"ideal"``.
MODES = ("stems", "ideal")


def _check_args(workload: Any, hardware: Any, schedule: Any, mode: Any) -> None:
    problems = []
    for name, value, cls in (("workload", workload, Workload), ("hardware", hardware, Hardware)):
        if not isinstance(value, cls):
            problems.append(f"{name}: got a {type(value).__name__}, expected a pondlib.explore.{cls.__name__}")
    if not isinstance(schedule, Schedule):
        problems.append(f"schedule: got a {type(schedule).__name__}, expected a pondlib.explore.Schedule")
    if not isinstance(mode, str) or mode not in MODES:
        problems.append(f"mode: got {mode!r}, expected one of {list(MODES)}")
    if problems:
        raise ConfigError(problems=problems, where="evaluate", fix="see pondlib.explore.evaluate")
    schedule.check(workload.n_blocks, workload.time_steps)


class _Static:
    """Schedule-independent per-layer data of one (workload, hardware) pair, computed once."""

    def __init__(self, w: Workload, hw: Hardware) -> None:
        t = w.tables
        L = len(w.layers)
        self.L = L
        lay = w.layers
        self.w, self.s, self.o, self.i = t.weights, t.states, t.outputs, t.inputs
        self.ox = t.ox
        # halo re-fetch factors of a reader whose node could not hold its input (>= 1 for windows)
        lbl = np.ones(L)
        lf = np.ones(L)
        for j, x in enumerate(lay):
            if x.kind in ("conv", "pool") and (x.fy > x.sy or x.fx > x.sx):
                ty = min(x.oy, hw.pe_oy)
                lbl[j] = math.ceil(x.oy / ty) * ((ty - 1) * x.sy + x.fy) / x.iy
            if x.kind in ("conv", "pool") and x.ox > 1:
                lf[j] = x.ox * x.fx / x.ix
        self.refetch = {False: lbl, True: lf}
        # the columns of a producer's output that one column node of the consumer needs
        self.window_cols = np.ones(L)
        for p in range(L):
            cols = 1.0
            for c in t.consumers[p]:
                x = lay[c]
                need = x.ix if x.ox == 1 else x.fx
                cols = max(cols, float(min(lay[p].ox, need)))
            self.window_cols[p] = cols
        self.in_window_frac = np.array([min(1.0, (x.fx if x.ox > 1 else x.ix) / x.ix) for x in lay])
        self.consumers = t.consumers
        self.input_consumers = set(t.input_consumers)
        self.last_use = t.last_use
        # tensors live across layer l without being read by it (a residual's skip input, ...)
        self.held = [
            [p for p in range(j) if self.last_use[p] > j and j not in t.consumers[p] and t.consumers[p]]
            for j in range(L)
        ]
        self.inputs_of = [tuple(x.inputs) for x in lay]
        self.stateful = [x.stateful for x in lay]
        # on-chip energy that does not depend on the schedule (pJ per inference)
        T = w.time_steps
        sh, ib, wb = hw.shared, hw.input_buffer, hw.weight_buffer
        pe_reads = 0.0
        mac = 0.0
        for x, ops in zip(lay, t.ops):
            if not x.weighted:
                continue
            dense = ops - x.recurrent
            pe_reads += (
                T
                * ops
                * (
                    x.input_bits / min(hw.pe_k, x.k) * ib.read_energy_pj_per_bit
                    + x.weight_bits / min(hw.pe_oy, x.oy) * wb.read_energy_pj_per_bit
                )
            )
            per_op = hw.sop_energy_pj if x.input_bits == 1 else hw.mac_energy_pj
            mac += T * (dense * per_op + x.recurrent * hw.sop_energy_pj)
        self.pe_read_pj = pe_reads
        self.mac_pj = mac
        self.out_write_pj = T * float(self.o.sum()) * sh.write_energy_pj_per_bit
        self.weighted = np.array([x.weighted for x in lay])
        self.in_fill_pj = np.where(
            self.weighted,
            sh.read_energy_pj_per_bit + ib.write_energy_pj_per_bit,
            sh.read_energy_pj_per_bit,
        )


_STATIC_CACHE: dict[tuple[int, int], tuple[Workload, Hardware, _Static]] = {}


def _static(w: Workload, hw: Hardware) -> _Static:
    key = (id(w), id(hw))
    hit = _STATIC_CACHE.get(key)
    if hit is not None and hit[0] is w and hit[1] is hw:
        return hit[2]
    st = _Static(w, hw)
    if len(_STATIC_CACHE) > 64:
        _STATIC_CACHE.clear()
    _STATIC_CACHE[key] = (w, hw, st)
    return st


def _fit(ops: list[tuple[float, int, Any]], capacity: float) -> tuple[list[Any], list[Any], float]:
    """Sort operands ``(size, order, ref)`` by size ascending; return (kept refs, left refs, kept bits)."""
    kept, left, used = [], [], 0.0
    for size, _, ref in sorted(ops, key=lambda o: (o[0], o[1])):
        if used + size <= capacity:
            used += size
            kept.append(ref)
        else:
            left.append(ref)
    return kept, left, used


def evaluate(workload: Workload, hardware: Hardware, schedule: Schedule, mode: str = "stems") -> Report:
    """Off-chip traffic (bits per layer and operand class), energy (pJ) and on-chip use of ``schedule``.

    Args:
        workload: a :class:`~pondlib.explore.Workload` (``N`` blocks, ``T`` steps).
        hardware: a :class:`~pondlib.explore.Hardware`; its shared memory is ``M``.
        schedule: a :class:`~pondlib.explore.Schedule` with ``N`` block schedules, each ``B`` dividing ``T``.
        mode: ``"stems"`` (compulsory read and write-back of every state tile) or ``"ideal"``.

    Returns:
        A :class:`~pondlib.explore.Report` (equations in the module docstring).

    Raises:
        ConfigError: arguments of the wrong type, an unknown mode, a schedule whose block count differs
            from the workload's or whose ``B`` does not divide ``T`` (every problem listed).
    """
    _check_args(workload, hardware, schedule, mode)
    st = _static(workload, hardware)
    T, L, M = workload.time_steps, st.L, float(hardware.memory_bits)
    blk = workload.tables.block
    bs = schedule.blocks
    B = np.array([bs[b].batch for b in blk], dtype=np.float64)
    fused = [bs[b].fused for b in blk]
    # groups: runs of consecutive blocks with the same block schedule
    group_of_block, spans = [], []
    for b, sched in enumerate(bs):
        if b and sched == bs[b - 1]:
            spans[-1][1] = b
        else:
            spans.append([b, b])
        group_of_block.append(len(spans) - 1)
    g_of = [group_of_block[b] for b in blk]
    lo_of_group = [int(np.searchsorted(blk, s[0], side="left")) for s in spans]
    hi_of_group = [int(np.searchsorted(blk, s[1], side="right")) - 1 for s in spans]

    # on-chip size of every layer's output tensor (see the module docstring)
    Z = np.zeros(L)
    internal = [True] * L
    for p in range(L):
        cons = st.consumers[p]
        internal[p] = all(g_of[c] == g_of[p] for c in cons)
        if internal[p] and fused[p]:
            Z[p] = st.o[p] / st.ox[p] * st.window_cols[p] * B[p]
        elif internal[p]:
            Z[p] = st.o[p] * B[p]
        else:
            Z[p] = st.o[p] * max(B[p], max(B[c] for c in cons))

    # a tensor crossing groups whose batches differ stays live through every chunk of the group with
    # more chunks: the smaller-batch producer accumulates it, or the smaller-batch consumer drains it
    group_held: list[set[int]] = [set() for _ in spans]
    for p in range(L):
        if not internal[p]:
            for c in st.consumers[p]:
                if B[c] > B[p]:
                    group_held[g_of[p]].add(p)
                elif B[p] > B[c]:
                    group_held[g_of[c]].add(p)

    spilled = np.zeros(L, dtype=bool)
    refetch: set[tuple[int, int]] = set()  # (producer or -1, consumer) read with the halo factor
    w_reads = np.zeros(L)
    resident = np.zeros(L)
    n_chunks = T / B
    peak = 0.0
    groups: list[GroupReport] = []
    w_fill_nodes = np.zeros(L)  # weight-buffer fills per inference, in units of W_l

    for g, (b0, b1) in enumerate(spans):
        lo, hi = lo_of_group[g], hi_of_group[g]
        idx = range(lo, hi + 1)
        n = T // bs[b0].batch
        is_lf = bs[b0].fused
        persistent = False
        res_total = 0.0
        if not is_lf:
            wsum = float(st.w[lo : hi + 1].sum())
            ssum = float(st.s[lo : hi + 1].sum())
            persistent = n > 1 and wsum + ssum <= M
            cap = M - wsum - ssum if persistent else M
            base = wsum + ssum if persistent else 0.0
            fits = True
            ws_max = 0.0
            for j in idx:
                ops: list[tuple[float, int, Any]] = []
                if not persistent:
                    if st.w[j] > 0:
                        ops.append((st.w[j], 0, ("w", j)))
                    if st.s[j] > 0:
                        ops.append((st.s[j], 1, ("s", j)))
                for src in st.inputs_of[j]:
                    if src == NETWORK_INPUT:
                        ops.append((st.i[j] * B[j], 2, ("x", j)))
                    else:
                        ops.append((Z[src], 2, ("in", src)))
                ops.append((Z[j], 3, ("out", j)))
                operands = set(st.inputs_of[j]) | {j}
                for p in sorted(set(st.held[j]) | (group_held[g] - operands)):
                    ops.append((Z[p], 4, ("held", p)))
                need = sum(o[0] for o in ops)
                ws_max = max(ws_max, need + base)
                kept, left, used = _fit(ops, cap)
                peak = max(peak, base + used)
                if left:
                    fits = fits and all(r[0] in ("w", "s") for r in left)
                for kind, ref in left:
                    if kind == "in":
                        spilled[ref] = True
                        refetch.add((ref, j))
                    elif kind == "x":
                        refetch.add((NETWORK_INPUT, j))
                    elif kind in ("out", "held"):
                        spilled[ref] = True
                w_reads[j] = st.w[j] if persistent else n * st.w[j]
                if persistent:
                    resident[j] = st.s[j]
                w_fill_nodes[j] = n
            res_total = float(resident[lo : hi + 1].sum())
            working = ws_max
        else:
            # weights stay, smallest first
            wops = [(st.w[j], j, j) for j in idx if st.w[j] > 0]
            w_kept, w_left, used = _fit(wops, M)
            for j in w_kept:
                w_reads[j] = st.w[j]
            for j in w_left:
                w_reads[j] = n * st.ox[j] * st.w[j]
            room = M - used
            tiles = [st.s[j] / st.ox[j] for j in idx if st.s[j] > 0]
            tile = max(tiles) if tiles else 0.0
            tile_ok = tile <= room
            if tile_ok:
                room -= tile
                used += tile
            # spike tensors: line buffers, tensors leaving, entering or crossing the stack
            sops: list[tuple[float, int, Any]] = []
            line_buffers = 0.0
            for j in idx:
                sops.append((Z[j], j, ("out", j)))
                if internal[j]:
                    line_buffers += Z[j]
                for src in st.inputs_of[j]:
                    if src == NETWORK_INPUT:
                        sops.append((st.i[j] * st.in_window_frac[j] * B[j], j, ("x", j)))
                    elif src < lo:
                        sops.append((Z[src], src, ("in", src)))
            crossing = {p for p in st.held[lo] if st.last_use[p] > hi} | group_held[g]
            for p in sorted(crossing):
                if not any(lo <= c <= hi for c in st.consumers[p]) and not lo <= p <= hi:
                    sops.append((Z[p], p, ("held", p)))
            seen: set = set()
            unique = []
            for o in sops:
                if o[2] not in seen:
                    seen.add(o[2])
                    unique.append(o)
            s_kept, s_left, s_used = _fit(unique, room)
            room -= s_used
            used += s_used
            lb_left = False
            for kind, ref in s_left:
                if kind == "x":
                    refetch.add((NETWORK_INPUT, ref))
                    continue
                spilled[ref] = True
                if kind == "out" and internal[ref]:
                    lb_left = True
                for c in st.consumers[ref]:
                    if lo <= c <= hi:
                        refetch.add((ref, c))
            if n > 1:
                for j in idx:
                    if st.s[j] > 0 and room > 0:
                        resident[j] = min(st.s[j], room)
                        room -= resident[j]
                        used += resident[j]
            res_total = float(resident[lo : hi + 1].sum())
            peak = max(peak, used)
            working = sum(o[0] for o in wops) + tile + line_buffers
            fits = not w_left and tile_ok and not lb_left
            wsum = float(st.w[lo : hi + 1].sum())
            fill = 1.0 if wsum <= hardware.weight_buffer.size_bits else None
            for j in idx:
                w_fill_nodes[j] = n * (fill if fill is not None else st.ox[j])
        spilled_here = [j for j in idx if spilled[j]]
        groups.append(
            GroupReport(
                blocks=(b0, b1),
                layers=(lo, hi),
                batch=bs[b0].batch,
                fused=is_lf,
                chunks=n,
                persistent=persistent,
                resident_state_bits=int(res_total),
                working_set_bits=int(working),
                fits=bool(fits),
                spilled=tuple(workload.layers[j].name for j in spilled_here),
            )
        )

    # -- off-chip traffic (bits over T steps) ------------------------------------------------------------
    nonres = st.s - resident
    if mode == "stems":
        s_reads = resident + n_chunks * nonres
    else:
        s_reads = (n_chunks - 1.0) * nonres
    s_writes = s_reads.copy()
    sp_w = np.where(spilled, T * st.o, 0.0)
    sp_r = np.zeros(L)
    x_r = np.zeros(L)
    reads_onchip = np.zeros(L)  # bits each layer moves from the shared memory into its input buffer
    for j in range(L):
        factor = st.refetch[fused[j]][j]
        for src in st.inputs_of[j]:
            halo = (src, j) in refetch
            bits = T * st.i[j] * (factor if halo else 1.0)
            if src == NETWORK_INPUT:
                x_r[j] += bits
            elif spilled[src]:
                sp_r[j] += bits
            reads_onchip[j] += T * st.i[j] * (factor if st.weighted[j] else 1.0)

    # -- energy (pJ) -------------------------------------------------------------------------------------
    sh, dram, wb = hardware.shared, hardware.dram, hardware.weight_buffer
    reads = float(w_reads.sum() + s_reads.sum() + sp_r.sum() + x_r.sum())
    writes = float(s_writes.sum() + sp_w.sum())
    e_off = reads * (dram.read_energy_pj_per_bit + sh.write_energy_pj_per_bit) + writes * (
        sh.read_energy_pj_per_bit + dram.write_energy_pj_per_bit
    )
    chunks_moved = n_chunks if mode == "stems" else n_chunks - 1.0
    e_state = float((st.s * chunks_moved).sum()) * (sh.read_energy_pj_per_bit + sh.write_energy_pj_per_bit)
    e_wfill = float((w_fill_nodes * st.w).sum()) * (sh.read_energy_pj_per_bit + wb.write_energy_pj_per_bit)
    e_ifill = float((reads_onchip * st.in_fill_pj).sum())
    e_on = st.pe_read_pj + e_wfill + e_ifill + e_state + st.out_write_pj

    return Report(
        workload=workload.name,
        schedule=schedule,
        mode=mode,
        memory_bits=int(M),
        time_steps=T,
        layer_names=tuple(x.name for x in workload.layers),
        weight_read_bits=w_reads,
        state_read_bits=s_reads,
        state_write_bits=s_writes,
        spike_read_bits=sp_r,
        spike_write_bits=sp_w,
        input_read_bits=x_r,
        offchip_energy_pj=float(e_off),
        onchip_energy_pj=float(e_on),
        mac_energy_pj=float(st.mac_pj),
        peak_onchip_bits=int(peak),
        groups=tuple(groups),
    )
