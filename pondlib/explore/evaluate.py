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
Then one state column tile (``S_l / OX_l``). Then the tensors crossing the stack's boundary (the network
input's window, tensors entering from before it or held across it, the sink's own output tile), sorted
ascending: those that do not fit are spilled whole and re-read with the halo factor. Then the outputs
that have consumers (line buffers, and outputs leaving the stack): when they overflow the room left,
only the overflow ``V`` is evicted, tile by tile, lowest ``remaining_uses * 100 - layer_id`` first (fewest
consumers, then the deepest layer); an evicted fraction ``f_p`` of output ``p`` costs ``f_p T O_p``
written and as much read back. What room is left keeps states resident across chunks, earliest layer
first. The stack *fits* when its weights, the tile and its line buffers all fit; it *holds* (and only
spills spike tiles, charged) when its weights and the tile fit. Keeping weights first is STEMS's policy,
not an optimum: a larger memory that keeps more weights of a stack that does not fit can crowd out its
line buffers, so a fused stack's traffic is not always monotone in the memory size.

**Rules and sources** (our words; each has a hand-derived check in ``tests/explore``):

* eviction order and volume: STEMS Sec. 4.2.4 (tensors are evicted only when space is needed, ranked by
  size and by how often they will be used again) with ``docs/EXPLORE.md``'s priority ``remaining_uses *
  100 - layer_id``; ``stream/cost_model/memory_manager.py`` (``find_best_tensor_combination_to_evict*``)
  evicts the lowest-priority tensors only until the missing space is freed, hence a partial eviction of
  line-buffer tiles, not a whole tensor (``test_fusion_rules.py``);
* write-back: ``stream/cost_model/scheduler.py`` writes an evicted tensor back to DRAM unless DRAM already
  holds it (weights, the network input start there: ``initialize_offchip_tensors``), and fetches it again
  when a later node needs it;
* states between chunks: a state is reused across chunks like a partial sum (STEMS Sec. 4.2.3);
  layer-by-layer runs keep weights and states only when all of them fit, fused stacks keep what room is
  left, earliest layer first (equal remaining uses, the lower layer id wins the priority);
* a node's operands that do not fit: STEMS Sec. 4.2.3 (a tile that does not fit is costed with DRAM as
  its memory); ``docs/EXPLORE.md``: sorted by size, the largest left in DRAM;
* halos: a column node re-reads ``FX`` of the ``IX`` input columns, so a tensor left in DRAM costs ``OX FX
  / IX`` reads; row tiles of ``pe_oy`` rows overlap by ``FY - SY`` rows in layer-by-layer nodes;
* over-memory stacks: STEMS Sec. 4.2.4 (a tile too large for the core evicts everything else and
  blocks the DRAM link); here a stack that cannot hold its weights and a state tile re-reads weights per
  column node and is ranked after every schedule that can (:func:`~pondlib.explore.explore`).

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
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np

from pondlib.errors import ConfigError
from pondlib.explore.hardware import Hardware
from pondlib.explore.latency import _compute_vector, _inner_vector, _layer_cycles
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
    """Schedule-independent per-layer data of one (workload, hardware) pair, computed once.

    Per layer ``l`` (arrays (L,), bits): ``w``, ``s``, ``o``, ``i`` = ``W_l``, ``S_l``, ``O_l``, ``I_l``;
    ``ox`` = ``OX_l``; ``refetch[fused]`` the halo re-fetch factor of a reader whose node could not hold
    its input; ``window_cols`` the producer columns one consumer column node needs; ``held[l]`` the
    tensors live across layer ``l`` that it does not read. Energies (pJ per inference): ``pe_read_pj``,
    ``mac_pj``, ``out_write_pj``; ``in_fill_pj`` (L,) pJ per bit moved into a layer's input buffer.
    """

    def __init__(self, w: Workload, hw: Hardware) -> None:
        t = w.tables
        L = len(w.layers)
        self.L = L
        lay = w.layers
        self.w, self.s, self.o, self.i = t.weights, t.states, t.outputs, t.inputs
        self.ox = t.ox
        self.refetch = _refetch_factors(lay, hw)
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
        T = w.time_steps
        sh, ib = hw.shared, hw.input_buffer
        self.pe_read_pj, self.mac_pj = _pe_and_mac_energy(w, hw)
        self.out_write_pj = T * float(self.o.sum()) * sh.write_energy_pj_per_bit
        self.out_bits = T * self.o
        self.compute = _compute_vector(w, hw)
        self.inner = _inner_vector(w, hw)
        self.weighted = np.array([x.weighted for x in lay])
        self.in_fill_pj = np.where(
            self.weighted,
            sh.read_energy_pj_per_bit + ib.write_energy_pj_per_bit,
            sh.read_energy_pj_per_bit,
        )


def _refetch_factors(lay: tuple, hw: Hardware) -> dict[bool, np.ndarray]:
    """Halo re-fetch factors (L,) of a reader whose node could not hold its input, by ``fused``.

    LBL (``False``): ``ceil(OY / t) ((t - 1) SY + FY) / IY`` with ``t = min(OY, pe_oy)`` row tiles, for
    windows that overlap (``FY > SY`` or ``FX > SX``); LF (``True``): ``OX FX / IX`` column windows when
    ``OX > 1``; 1 otherwise (and for layers that are not conv or pool).
    """
    L = len(lay)
    lbl = np.ones(L)
    lf = np.ones(L)
    for j, x in enumerate(lay):
        if x.kind in ("conv", "pool") and (x.fy > x.sy or x.fx > x.sx):
            ty = min(x.oy, hw.pe_oy)
            lbl[j] = math.ceil(x.oy / ty) * ((ty - 1) * x.sy + x.fy) / x.iy
        if x.kind in ("conv", "pool") and x.ox > 1:
            lf[j] = x.ox * x.fx / x.ix
    return {False: lbl, True: lf}


def _pe_and_mac_energy(w: Workload, hw: Hardware) -> tuple[float, float]:
    """Schedule-independent ``(PE operand reads, MAC)`` energy in pJ per inference of ``T`` steps.

    PE reads: ``T ops (b_in / min(pe_k, K) e_rd(input buffer) + b_w / min(pe_oy, OY) e_rd(weight buffer))``;
    MAC: ``T ((ops - recurrent) e_op + recurrent sop_energy_pj)`` with ``e_op`` the ``sop_energy_pj`` of
    1-bit input or ``mac_energy_pj`` of multi-bit input (recurrent inputs are spikes). Layers without
    weights cost neither.
    """
    T = w.time_steps
    ib, wb = hw.input_buffer, hw.weight_buffer
    pe_reads = 0.0
    mac = 0.0
    for x, ops in zip(w.layers, w.tables.ops):
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
    return pe_reads, mac


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


#: Sort key of an operand ``(size, order, ref)``: size, ties broken by order (then by position: a stable sort).
_SIZE_THEN_ORDER = itemgetter(0, 1)


def _fit(ops: list[tuple[float, int, Any]], capacity: float) -> tuple[list[Any], list[Any], float]:
    """Sort operands ``(size, order, ref)`` by size ascending; return (kept refs, left refs, kept bits)."""
    kept, left, used = [], [], 0.0
    for size, _, ref in sorted(ops, key=_SIZE_THEN_ORDER):
        if used + size <= capacity:
            used += size
            kept.append(ref)
        else:
            left.append(ref)
    return kept, left, used


@dataclass(frozen=True)
class _Layout:
    """How a schedule cuts the layers into groups, and the on-chip size of every output tensor.

    Attributes:
        spans: per group, its first and last block ``(b0, b1)`` (inclusive).
        bounds: per group, its first and last layer ``(lo, hi)`` (inclusive).
        group: per layer, the index of its group.
        batch: (L,) float64, ``B`` of each layer's block.
        fused: per layer, whether its block is fused (LF).
        size: (L,) ``Z_p``, the on-chip bits of layer ``p``'s output tensor (module docstring, **Tensors**).
        internal: per layer, whether every consumer of its output is in its own group.
        held: per group, the tensors crossing a group boundary between batches that differ, which stay
            live through every chunk of this group.
    """

    spans: tuple[tuple[int, int], ...]
    bounds: tuple[tuple[int, int], ...]
    group: tuple[int, ...]
    batch: np.ndarray
    fused: tuple[bool, ...]
    size: np.ndarray
    internal: tuple[bool, ...]
    held: tuple[frozenset[int], ...]


def _group_spans(bs: tuple) -> tuple[list[tuple[int, int]], list[int]]:
    """Groups: runs of consecutive equal block schedules, as ``(spans (b0, b1), group of each block)``."""
    group_of_block: list[int] = []
    spans: list[list[int]] = []
    for b, sched in enumerate(bs):
        if b and sched == bs[b - 1]:
            spans[-1][1] = b
        else:
            spans.append([b, b])
        group_of_block.append(len(spans) - 1)
    return [(b0, b1) for b0, b1 in spans], group_of_block


def _tensor_sizes(st: _Static, B: np.ndarray, fused: list[bool], g_of: list[int]) -> tuple[np.ndarray, list[bool]]:
    """``(Z, internal)``: the on-chip bits ``Z_p`` of every output tensor, and whether it stays in its group.

    Inside a fused stack a line buffer ``O_p / OX_p`` x (the consumer's window columns) x ``B_p``; inside a
    layer-by-layer run the whole map of ``B_p`` steps, ``B_p O_p``; across groups the whole map for
    ``max(B_p, B_c)`` steps.
    """
    L = st.L
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
    return Z, internal


def _batch_crossings(st: _Static, B: np.ndarray, internal: list[bool], g_of: list[int], n_groups: int) -> list:
    """Per group, the tensors it holds through all its chunks because they cross into a different batch.

    A tensor crossing groups whose batches differ stays live through every chunk of the group with more
    chunks: the smaller-batch producer accumulates it, or the smaller-batch consumer drains it.
    """
    held: list[set[int]] = [set() for _ in range(n_groups)]
    for p in range(st.L):
        if not internal[p]:
            for c in st.consumers[p]:
                if B[c] > B[p]:
                    held[g_of[p]].add(p)
                elif B[p] > B[c]:
                    held[g_of[c]].add(p)
    return held


def _layout(workload: Workload, st: _Static, schedule: Schedule) -> _Layout:
    """The :class:`_Layout` of ``schedule`` on ``workload`` (groups, ``B`` per layer, tensor sizes)."""
    blk = workload.tables.block
    bs = schedule.blocks
    B = np.array([bs[b].batch for b in blk], dtype=np.float64)
    fused = [bs[b].fused for b in blk]
    spans, group_of_block = _group_spans(bs)
    g_of = [group_of_block[b] for b in blk]
    bounds = tuple(
        (int(np.searchsorted(blk, b0, side="left")), int(np.searchsorted(blk, b1, side="right")) - 1)
        for b0, b1 in spans
    )
    Z, internal = _tensor_sizes(st, B, fused, g_of)
    held = _batch_crossings(st, B, internal, g_of, len(spans))
    return _Layout(
        spans=tuple(spans),
        bounds=bounds,
        group=tuple(g_of),
        batch=B,
        fused=tuple(fused),
        size=Z,
        internal=tuple(internal),
        held=tuple(frozenset(h) for h in held),
    )


@dataclass(frozen=True)
class _Moves:
    """Per-layer outcome of the group rules, written in place group by group (arrays (L,)).

    Attributes:
        spilled: the layer's output tensor goes to DRAM.
        refetch: ``(producer or NETWORK_INPUT, consumer)`` pairs read with the halo factor.
        weight_reads: off-chip weight bits: ``W_l`` (kept), ``n W_l`` (LBL, not persistent) or
            ``n OX_l W_l`` (LF, left in DRAM).
        resident: ``R_l``, the state bits kept on chip across chunks.
        weight_fills: weight-buffer fills per inference, in units of ``W_l``.
        streamed: ``(L, 3)`` bool: the layer's node streams its weights, its state or its output from or
            to DRAM while it computes (they could not be held: :mod:`~pondlib.explore.latency`, rule 2).
        evicted: ``f_p``, the fraction of a fused stack's line buffer ``p`` evicted to DRAM and fetched
            back (**Fused group**, partial eviction).
    """

    spilled: np.ndarray
    refetch: set
    weight_reads: np.ndarray
    resident: np.ndarray
    weight_fills: np.ndarray
    streamed: np.ndarray
    evicted: np.ndarray

    @classmethod
    def empty(cls, L: int) -> _Moves:
        """Nothing spilled, read, resident, filled, streamed or evicted yet."""
        z = np.zeros
        return cls(z(L, dtype=bool), set(), z(L), z(L), z(L), z((L, 3), dtype=bool), z(L))


class _GroupUse(NamedTuple):
    """On-chip use of one group: persistent (LBL), working set and peak (bits), whether it fits, and
    whether it holds its weights and a state tile (a fused stack that does not may only spill spikes)."""

    persistent: bool
    working: float
    fits: bool
    peak: float
    holds: bool = True


def _lbl_operands(st: _Static, lay: _Layout, g: int, j: int, persistent: bool) -> list[tuple[float, int, Any]]:
    """The operands ``(size, order, ref)`` of layer ``j``'s node in LBL group ``g``.

    Weights ``W_j`` and state ``S_j`` (unless persistent), its inputs (``B_j I_j`` of the network input,
    ``Z_src`` of an earlier layer), its output ``Z_j`` and every tensor held across it for a later layer.
    """
    Z = lay.size
    ops: list[tuple[float, int, Any]] = []
    if not persistent:
        if st.w[j] > 0:
            ops.append((st.w[j], 0, ("w", j)))
        if st.s[j] > 0:
            ops.append((st.s[j], 1, ("s", j)))
    for src in st.inputs_of[j]:
        if src == NETWORK_INPUT:
            ops.append((st.i[j] * lay.batch[j], 2, ("x", j)))
        else:
            ops.append((Z[src], 2, ("in", src)))
    ops.append((Z[j], 3, ("out", j)))
    operands = set(st.inputs_of[j]) | {j}
    for p in sorted(set(st.held[j]) | (lay.held[g] - operands)):
        ops.append((Z[p], 4, ("held", p)))
    return ops


def _lbl_spill(moves: _Moves, left: list, j: int) -> None:
    """Record what layer ``j``'s node left in DRAM: inputs are re-read with the halo factor, outputs and
    held tensors are spilled (weights and states cost what they cost anyway)."""
    for kind, ref in left:
        if kind == "in":
            moves.spilled[ref] = True
            moves.refetch.add((ref, j))
        elif kind == "x":
            moves.refetch.add((NETWORK_INPUT, j))
        elif kind in ("out", "held"):
            moves.spilled[ref] = True
            moves.streamed[ref, 2] = True
        elif kind in ("w", "s"):
            moves.streamed[ref, 0 if kind == "w" else 1] = True


def _lbl_group(st: _Static, lay: _Layout, moves: _Moves, g: int, n: int, M: float) -> _GroupUse:
    """A layer-by-layer group of ``n`` chunks in a memory of ``M`` bits (module docstring).

    Persistent when ``n > 1`` and ``sum W + sum S <= M``: weights are read once (``W_l``), states are
    resident (``R_l = S_l``) and the nodes share ``M - sum W - sum S``; otherwise every chunk reads
    ``n W_l`` and each node fits its own weights and state into ``M``.
    """
    lo, hi = lay.bounds[g]
    wsum = float(st.w[lo : hi + 1].sum())
    ssum = float(st.s[lo : hi + 1].sum())
    persistent = n > 1 and wsum + ssum <= M
    cap = M - wsum - ssum if persistent else M
    base = wsum + ssum if persistent else 0.0
    fits, ws_max, peak = True, 0.0, 0.0
    for j in range(lo, hi + 1):
        ops = _lbl_operands(st, lay, g, j, persistent)
        ws_max = max(ws_max, sum(o[0] for o in ops) + base)
        _, left, used = _fit(ops, cap)
        peak = max(peak, base + used)
        if left:
            fits = fits and all(r[0] in ("w", "s") for r in left)
            _lbl_spill(moves, left, j)
        moves.weight_reads[j] = st.w[j] if persistent else n * st.w[j]
        if persistent:
            moves.resident[j] = st.s[j]
        moves.weight_fills[j] = n
    return _GroupUse(persistent, ws_max, fits, peak)


def _lf_spike_operands(st: _Static, lay: _Layout, g: int) -> tuple[list[tuple[float, int, Any]], float]:
    """``(operands, line buffer bits)`` of fused group ``g``'s spike tensors, each operand once.

    Operands: every layer's output ``Z_j``, the network input's window ``B_j I_j FX / IX``, tensors entering
    from before the stack and tensors held across it; line buffers are the outputs that stay in the group.
    """
    lo, hi = lay.bounds[g]
    sops: list[tuple[float, int, Any]] = []
    line_buffers = 0.0
    for j in range(lo, hi + 1):
        sops.append((lay.size[j], j, ("out", j)))
        if lay.internal[j]:
            line_buffers += lay.size[j]
        for src in st.inputs_of[j]:
            if src == NETWORK_INPUT:
                sops.append((st.i[j] * st.in_window_frac[j] * lay.batch[j], j, ("x", j)))
            elif src < lo:
                sops.append((lay.size[src], src, ("in", src)))
    crossing = {p for p in st.held[lo] if st.last_use[p] > hi} | lay.held[g]
    for p in sorted(crossing):
        if not any(lo <= c <= hi for c in st.consumers[p]) and not lo <= p <= hi:
            sops.append((lay.size[p], p, ("held", p)))
    seen: set = set()
    unique = []
    for o in sops:
        if o[2] not in seen:
            seen.add(o[2])
            unique.append(o)
    return unique, line_buffers


def _lf_spill(st: _Static, lay: _Layout, moves: _Moves, left: list, g: int) -> None:
    """Record the tensors crossing fused group ``g``'s boundary that it left in DRAM (spilled whole,
    re-read with the halo factor by their consumers in the stack)."""
    lo, hi = lay.bounds[g]
    for kind, ref in left:
        if kind == "x":
            moves.refetch.add((NETWORK_INPUT, ref))
            continue
        moves.spilled[ref] = True
        moves.streamed[ref, 2] = True
        for c in st.consumers[ref]:
            if lo <= c <= hi:
                moves.refetch.add((ref, c))


def _lf_keep_states(st: _Static, moves: _Moves, lo: int, hi: int, room: float, used: float) -> float:
    """Keep states resident in ``room`` bits, earliest layer first: ``R_l = min(S_l, room left)``;
    returns the on-chip use ``used`` plus what they take."""
    for j in range(lo, hi + 1):
        if st.s[j] > 0 and room > 0:
            moves.resident[j] = min(st.s[j], room)
            room -= moves.resident[j]
            used += moves.resident[j]
    return used


def _lf_group(st: _Static, lay: _Layout, moves: _Moves, g: int, n: int, M: float, hw: Hardware) -> _GroupUse:
    """A fused group of ``n`` chunks in a memory of ``M`` bits (module docstring).

    Weights first, smallest first: kept ones are read once (``W_l``), the rest ``n OX_l W_l``; then one
    state column tile ``max S_l / OX_l``; then the spike tensors; what room is left keeps states resident
    when ``n > 1``. The stack fits when its weights, the tile and its line buffers all fit. The weight
    buffer is filled ``n`` times per layer when the stack's weights fit it, else ``n OX_l`` times.
    """
    lo, hi = lay.bounds[g]
    idx = range(lo, hi + 1)
    wops = [(st.w[j], j, j) for j in idx if st.w[j] > 0]
    w_kept, w_left, used = _fit(wops, M)
    for j in w_kept:
        moves.weight_reads[j] = st.w[j]
    for j in w_left:
        moves.weight_reads[j] = n * st.ox[j] * st.w[j]
        moves.streamed[j, 0] = True
    room = M - used
    tiles = [st.s[j] / st.ox[j] for j in idx if st.s[j] > 0]
    tile = max(tiles) if tiles else 0.0
    tile_ok = tile <= room
    if tile_ok:
        room -= tile
        used += tile
    sops, line_buffers = _lf_spike_operands(st, lay, g)
    lbs = [o for o in sops if o[2][0] == "out" and st.consumers[o[2][1]]]  # line buffers, leaving outputs
    _, s_left, s_used = _fit([o for o in sops if o not in lbs], max(room, 0.0))
    room -= s_used
    used += s_used
    _lf_spill(st, lay, moves, s_left, g)
    outs = sum(o[0] for o in lbs)
    if outs <= room:
        room -= outs
        used += outs
    else:
        _lf_evict(st, moves, lbs, outs - max(room, 0.0))
        used += max(room, 0.0)
        room = 0.0
    if n > 1:
        used = _lf_keep_states(st, moves, lo, hi, room, used)
    working = sum(o[0] for o in wops) + tile + line_buffers
    holds = not w_left and tile_ok
    fits = holds and not any(moves.evicted[o[2][1]] > 0 for o in lbs if lay.internal[o[2][1]])
    wsum = float(st.w[lo : hi + 1].sum())
    fill = 1.0 if wsum <= hw.weight_buffer.size_bits else None
    for j in idx:
        moves.weight_fills[j] = n * (fill if fill is not None else st.ox[j])
    return _GroupUse(False, working, fits, used, holds)


def _lf_evict(st: _Static, moves: _Moves, lbs: list[tuple[float, int, Any]], overflow: float) -> None:
    """Evict ``overflow`` bits of line-buffer tiles per column node, as STEMS's memory manager makes room:
    the tiles with the lowest ``remaining_uses * 100 - layer_id`` go first (fewest consumers, then the
    deepest layer), only as many as needed; each evicted tile is written to DRAM and read back once, so a
    fraction ``f_p`` of line buffer ``p`` costs ``f_p T O_p`` written and as much read."""
    order = sorted(lbs, key=lambda o: len(st.consumers[o[2][1]]) * 100 - o[2][1])
    for size, _, (_, p) in order:
        if overflow <= 0 or size <= 0:
            break
        take = min(size, overflow)
        moves.evicted[p] = take / size
        overflow -= take


def _group_report(workload: Workload, lay: _Layout, moves: _Moves, g: int, bs: tuple, use: _GroupUse) -> GroupReport:
    """The :class:`GroupReport` of group ``g`` after its rules ran."""
    b0, b1 = lay.spans[g]
    lo, hi = lay.bounds[g]
    spilled_here = [j for j in range(lo, hi + 1) if moves.spilled[j] or moves.evicted[j] > 0]
    T = workload.time_steps
    evicted = sum(2.0 * moves.evicted[j] * T * workload.tables.outputs[j] for j in range(lo, hi + 1))
    return GroupReport(
        blocks=(b0, b1),
        layers=(lo, hi),
        batch=bs[b0].batch,
        fused=bs[b0].fused,
        chunks=workload.time_steps // bs[b0].batch,
        persistent=use.persistent,
        resident_state_bits=int(float(moves.resident[lo : hi + 1].sum())),
        working_set_bits=int(use.working),
        fits=bool(use.fits),
        spilled=tuple(workload.layers[j].name for j in spilled_here),
        holds=bool(use.holds),
        evicted_bits=int(evicted),
    )


class _Traffic(NamedTuple):
    """Off-chip bits per layer over ``T`` steps ((L,) each), the bits each layer moves from the shared
    memory into its input buffer (``reads_onchip``, for the on-chip energy) and the DRAM reads it streams
    during its node (``streamed_reads``: tensors it could not hold, re-read with the halo factor)."""

    state_reads: np.ndarray
    state_writes: np.ndarray
    spike_writes: np.ndarray
    spike_reads: np.ndarray
    input_reads: np.ndarray
    reads_onchip: np.ndarray
    streamed_reads: np.ndarray


def _traffic(st: _Static, lay: _Layout, moves: _Moves, T: int, mode: str) -> _Traffic:
    """Off-chip traffic from the group rules' outcome (module docstring, **States** and **Tensors**).

    States, with ``n = T / B`` chunks: ``R_l + n (S_l - R_l)`` reads (``"stems"``) or ``(n - 1)(S_l - R_l)``
    (``"ideal"``), as many writes. A spilled tensor: one write of ``T O_p``; every read ``T I_c``, times the
    consumer's halo factor for a ``(producer, consumer)`` pair in ``refetch``.
    """
    n_chunks = T / lay.batch
    nonres = st.s - moves.resident
    if mode == "stems":
        s_reads = moves.resident + n_chunks * nonres
    else:
        s_reads = (n_chunks - 1.0) * nonres
    s_writes = s_reads.copy()
    # a tensor spilled whole is written once; else the evicted fraction of its tiles is written and read back
    sp_w = np.where(moves.spilled, T * st.o, moves.evicted * T * st.o)
    sp_r = np.zeros(st.L)
    for p in np.flatnonzero((moves.evicted > 0) & ~moves.spilled):
        sp_r[min(st.consumers[p])] += moves.evicted[p] * T * st.o[p]  # read back by its first consumer
    x_r = np.zeros(st.L)
    reads_onchip = np.zeros(st.L)
    streamed = np.zeros(st.L)
    refetch, spilled = moves.refetch, moves.spilled
    for j in range(st.L):
        factor = st.refetch[lay.fused[j]][j]
        for src in st.inputs_of[j]:
            halo = (src, j) in refetch
            bits = T * st.i[j] * (factor if halo else 1.0)
            if src == NETWORK_INPUT:
                x_r[j] += bits
            elif spilled[src]:
                sp_r[j] += bits
            if halo:
                streamed[j] += bits
            reads_onchip[j] += T * st.i[j] * (factor if st.weighted[j] else 1.0)
    return _Traffic(s_reads, s_writes, sp_w, sp_r, x_r, reads_onchip, streamed)


def _cycles(st: _Static, hw: Hardware, moves: _Moves, tr: _Traffic, chunks_moved: np.ndarray) -> tuple:
    """``(compute, cycles)``: ``(L,)`` compute cycles and total cycles per layer (:mod:`~pondlib.explore.latency`).

    Shared-memory bits of layer ``l``: ``fills_l W_l + reads_onchip_l + 2 S_l chunks_moved_l + T O_l``.
    Streamed DRAM bits: the weights, states and outputs its node could not hold (``moves.streamed``) and
    the reads with the halo factor; every other DRAM bit is fetched before the node.
    """
    shared = moves.weight_fills * st.w + tr.reads_onchip + 2.0 * st.s * chunks_moved + st.out_bits
    total = moves.weight_reads + tr.state_reads + tr.state_writes + tr.spike_writes + tr.spike_reads + tr.input_reads
    sm = moves.streamed
    streamed = (
        sm[:, 0] * moves.weight_reads + sm[:, 1] * (tr.state_reads + tr.state_writes) + sm[:, 2] * tr.spike_writes
    ) + tr.streamed_reads
    streamed = np.minimum(streamed, total)
    cycles = _layer_cycles(st.compute, st.inner, shared, streamed, total - streamed, hw)
    return st.compute, cycles


def _energy(
    st: _Static, hw: Hardware, lay: _Layout, moves: _Moves, tr: _Traffic, T: int, mode: str
) -> tuple[float, float]:
    """``(off-chip, on-chip)`` energy in pJ (module docstring, **Energy**).

    Off-chip: reads x ``(e_rd(DRAM) + e_wr(shared))`` + writes x ``(e_rd(shared) + e_wr(DRAM))``. On-chip:
    PE operand reads + weight-buffer fills ``sum fills_l W_l (e_rd(shared) + e_wr(weight buffer))`` + input
    fills + states moved once per chunk (``n``, or ``n - 1`` in the ideal mode) + output writes.
    """
    sh, dram, wb = hw.shared, hw.dram, hw.weight_buffer
    reads = float(moves.weight_reads.sum() + tr.state_reads.sum() + tr.spike_reads.sum() + tr.input_reads.sum())
    writes = float(tr.state_writes.sum() + tr.spike_writes.sum())
    e_off = reads * (dram.read_energy_pj_per_bit + sh.write_energy_pj_per_bit) + writes * (
        sh.read_energy_pj_per_bit + dram.write_energy_pj_per_bit
    )
    n_chunks = T / lay.batch
    chunks_moved = n_chunks if mode == "stems" else n_chunks - 1.0
    e_state = float((st.s * chunks_moved).sum()) * (sh.read_energy_pj_per_bit + sh.write_energy_pj_per_bit)
    e_wfill = float((moves.weight_fills * st.w).sum()) * (sh.read_energy_pj_per_bit + wb.write_energy_pj_per_bit)
    e_ifill = float((tr.reads_onchip * st.in_fill_pj).sum())
    e_on = st.pe_read_pj + e_wfill + e_ifill + e_state + st.out_write_pj
    return float(e_off), float(e_on)


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
    T, M = workload.time_steps, float(hardware.memory_bits)
    bs = schedule.blocks
    lay = _layout(workload, st, schedule)
    moves = _Moves.empty(st.L)
    peak = 0.0
    groups: list[GroupReport] = []
    for g, (b0, _) in enumerate(lay.spans):
        n = T // bs[b0].batch
        if bs[b0].fused:
            use = _lf_group(st, lay, moves, g, n, M, hardware)
        else:
            use = _lbl_group(st, lay, moves, g, n, M)
        peak = max(peak, use.peak)
        groups.append(_group_report(workload, lay, moves, g, bs, use))
    tr = _traffic(st, lay, moves, T, mode)
    e_off, e_on = _energy(st, hardware, lay, moves, tr, T, mode)
    n_chunks = T / lay.batch
    compute, cycles = _cycles(st, hardware, moves, tr, n_chunks if mode == "stems" else n_chunks - 1.0)
    return Report(
        workload=workload.name,
        schedule=schedule,
        mode=mode,
        memory_bits=int(M),
        time_steps=T,
        layer_names=tuple(x.name for x in workload.layers),
        weight_read_bits=moves.weight_reads,
        state_read_bits=tr.state_reads,
        state_write_bits=tr.state_writes,
        spike_read_bits=tr.spike_reads,
        spike_write_bits=tr.spike_writes,
        input_read_bits=tr.input_reads,
        offchip_energy_pj=e_off,
        onchip_energy_pj=e_on,
        mac_energy_pj=float(st.mac_pj),
        peak_onchip_bits=int(peak),
        groups=tuple(groups),
        compute_cycles=compute,
        layer_cycles=cycles,
    )
