r"""Mapping of an operator graph (:class:`~pondlib.graph.opgraph.OpGraph`) onto Siracusa: placement, tiles, cycles.

:func:`map_graph` walks the graph in topological order and gives every node a row: op kind, output shape,
work, weight and activation bytes, placement (L1 / L2 / L3), an L1 tile plan, NPU eligibility and cycles.

**Shapes.** Every tensor's shape comes from :class:`~.graphsim.GraphSim` run on zeros of the declared
input shapes (integer mode for Deeploy's dialect); when GraphSim cannot run the graph yet (an op without a
kernel), a shape-only propagation over the ops this module costs takes over.

**Fusion** (what Deeploy's PULP optimizer does before code generation; a fused node keeps its row with 0
cycles and ``fused`` as placement): a RequantShift whose input is written by a MatMul / Gemm / Conv (through
an optional constant-bias Add), an Add, a Mul, an iHardswish, an iGELU or a TrueIntegerDiv read by nothing
else is folded into that producer (``RequantizedGemm``, ``RQAdd``, ``RQSiHardswish``; TrueIntegerDiv by a
constant becomes a plain RequantShift).

**Work** ``U``: MACs for MatMul / Gemm / Conv (``batch M K O``; conv ``H_o W_o O kh kw C/g``); elements of
the output otherwise; reductions count their input elements; norms and softmaxes ``passes x elements``.

**Bytes.** Weights: the node's constant inputs (int8 for a MAC op's weight operand, int32 for biases and
RequantShift parameters; float32 in float graphs). Activations: int8 per element in integer graphs except
a raw MatMul / Gemm / Conv / Add / Mul accumulator (int32); float32 in float graphs. Reshape-like ops alias
their input (0 B, 0 cycles).

**Placement** (liveness scan over the topological order): a tensor is live from the step that writes it to
the last step that reads it (graph inputs from step 0, graph outputs to the end); ``peak`` is the largest
sum of live activation bytes. Weights and peak activations share L2 while ``W + peak <= L2``; otherwise the
largest constants move to L3 until the rest fits, and each moved constant costs ``bytes / W_L3`` cycles
once per inference.

**Cycle model** (``CycleParams`` of :mod:`~.cycles`, all constants reused; nothing here is fit to the
microLlama figures). With ``c`` cores, a kernel's slowest core does ``u`` units (the parallel share plus any
serial share every core repeats), each costing ``k`` cycles in L1 and ``a`` memory accesses:

.. math::

    \text{untiled (data in L2)}: \quad T &= L\,F + \max\big(u\,(k + a P) + r\,(k_{rq} + 2P),\ B_{L2}/R_{L2}\big)
        + n_{call} C \\
    \text{tiled, tile } i: \quad T_i &= \underbrace{n_{in} S + B^{in}_i / W}_{\text{DMA in}}
        + \underbrace{F + u_i k + r_i k_{rq} + n_{call,i} C}_{\text{kernel}} + \underbrace{S + B^{out}_i / W}_{
        \text{DMA out}}

(``L = 1`` cluster launch; ``r`` requantized outputs per core; ``C`` the per-call cost of a kernel that
Deeploy calls once per row; double buffering combines tiles as in :mod:`~.cycles`: ``in_0 + sum_i
max(kernel_i, in_{i+1} + out_{i-1}) + out_last``). Per family:

* **MAC** (fused RequantizedGemm / Conv, int8): SIMD ``k = 0.5``, ``a = 0.3125`` per MAC (``k =
  LINEAR_MAC_CYCLES = 0.75`` in ``pulp_nn_linear``, fix 4); work split over
  output channels (``ceil(O / c)`` per core), or over the batch for a batched GEMV (``M = 1``), as Deeploy's
  MatrixVec kernel does; ``n_call = batch * M`` calls of ``pulp_nn_linear`` (one per row, each ending in a
  team barrier), ``C = CALL_CYCLES``. An int8 MatMul *without* a following RequantShift runs Deeploy's
  generic ``MatMul_s8_s8_s32`` on **one core**, scalar (``k = 2.5``, ``a = 2``). Float graphs: scalar FPU
  MACs on all cores.
* **element-wise** (Add, Mul, RequantShift, Relu, ...): ``k = 10.35`` per value (the LeakyReLU fit),
  ``a = 2``; divisions (Div, IntegerDiv) add ``DIV_CYCLES``; iHardswish / iGELU / Gelu cost 2 / 3 / 3 values.
* **copy** (Transpose, Slice, Gather, Pad, ...): one load and one store per element, ``k = 10.35``. Concat
  is Deeploy's ``memcpy`` of slabs on **one core**: a word load and store per 4 bytes (``2 + 2P`` cycles per
  word in L2) plus ``C`` per slab (fix 1 below).
* **identity RequantShift** (``mul == div``, ``add == 0``) after a Concat / Reshape / Transpose: dropped, as
  Deeploy's SkipUnityRequantPass does (0 cycles, an alias; fix 2 below).
* **norm** (iRMSNorm, iLayerNorm, LayerNormalization): rows of length ``D``; Deeploy's iRMSNorm has every
  core sum the whole row (serial pass ``D``), then an integer square root (``SQRT_CYCLES`` per row) and a
  per-element division over the core's ``ceil(D / c)`` share (``k + DIV_CYCLES``).
* **softmax** (iSoftmax, Softmax, ITAMax): rows split over cores with the remainder on the last core
  (Deeploy's split); three passes per element: max (``k``), exponent with a division (``k + DIV_CYCLES``),
  normalization with a division (``k + DIV_CYCLES``).
* **reduction** (ReduceMean, ReduceSum, IntegerMean, pools): ``k`` per input element, split over outputs.

**Held-out check** (``benchmarks/siracusa_tutorial_figures.py``; the tutorial's GVSoC figures, nothing fit
to them). First model (Concat as a parallel per-byte copy, identity RequantShifts costed): microLlama128
untiled 22.84 M (1 core, +41.8 % vs 16.1 M) and 3.52 M (8 cores, +13.5 % vs 3.1 M); microLlama64_parallel
tiled 30.91 M (L1 8,000 B, -34.9 % vs 47.5 M) and 20.47 M (64,000 B, -42.0 % vs 35.3 M). From Deeploy's own
code: (1) the KV-cache Concat is a ``memcpy`` per slab on one cluster core, word-wide (5.06 M -> 1.07 M on 1
core); (2) the RequantShifts after a Concat / Transpose with ``mul == div`` are removed by
SkipUnityRequantPass. Intermediate: 13.79 M (-14.3 %), 3.26 M (+5.1 %), 30.61 M (-35.6 %), 20.19 M (-42.8 %).
The prefill graph then gets, all from Deeploy's code: (3) the tile shapes Deeploy's tiler really picks. One
constraint model for the whole graph (``TilerExtension.setupModel``) whose only objective is the first
pattern's memory, solved with ``random-max`` (``TilerModel._solveModel``: CHOOSE_FIRST_UNBOUND,
ASSIGN_MAX_VALUE): every other op's tile dims take, in variable order (outermost first; for a GEMM batch,
rows, then outputs, a multiple of 16 per ``GEMMTileConstraint``), the largest value that fits. So a GEMM
keeps whole rows and splits its outputs (the 16-head ``A V`` MatMul, ``O = 4``: ``o = 1``, 4x the
``pulp_nn_linear`` calls, each ending in a team barrier), and iSoftmax tiles hold all 16 heads x ``r`` rows
(a multiple of 8 rows, no remainder core): 30.61 -> 34.86 M and 20.19 -> 24.47 M. (4) ``pulp_nn_linear``'s
inner loop (pulp-nn-mixed ``XpulpV2/32bit/src/LinearQuant/pulp_nn_linear_i8_i8_i8.c``) computes 2 outputs
per pass, 3 word loads + 2 ``sdotp`` + 1 load-use stall per 8 MACs: 0.75 cycles per MAC, not the 0.5 of a
register-blocked kernel. (5) SkipEmptyConcatPass removes the prefill's Concats with the empty KV cache.
Final: 13.92 M (-13.5 %), 3.26 M (+5.1 %), 36.30 M (-23.6 %), 25.99 M (-26.4 %): the 64,000 B case stays
just over 25 %. The model is 1.2-1.4 M cycles per decoder layer low at both L1 sizes (the L1-dependent
part, 12.2 M measured, is 10.3 M modelled), and a rough count of every kernel's instructions gives about
the same total as this model, so the remaining gap is not one op visibly wrong in the code: closing it
needs GVSoC's per-op ``--profileTiling`` traces of this graph. Known, not modelled (they would move the prefill *down*):
Deeploy folds the TrueIntegerDiv (into the next RequantShift) and the RequantShifts feeding an Add (into
``RQAdd``, ``PULPAddRequantMergePass``), ~1.1 M in all.

``CALL_CYCLES``, ``DIV_CYCLES`` and ``SQRT_CYCLES`` are stated assumptions (RI5CY's divider takes up to 35
cycles; a binary-search square root of a 16-bit value is ~8 iterations of ~12 cycles; a function call with
its prologue, pointer set-up and a team barrier ~100 cycles), not fits.

**Tiles** (``l1_bytes`` per op, halved with double buffering; the output is tiled, reductions never split):
MAC ops ``b`` batches x ``m`` rows x ``o`` outputs with ``B = b m K + K o + 8 o + b m o b_out`` (``K`` never
tiled, ``o`` a multiple of 16 when ``O >= 16``), chosen greedily as Deeploy does (fix 3: ``b``, then ``m``,
then ``o``, each the largest that fits); conv ``h`` output rows x ``o`` channels; element-wise and copy ``n``
values of ``b_in + b_out`` bytes; norm / softmax / reduction whole rows; element-wise, norm and softmax tiles
also greedy over the output's dims, outermost first. With ``double_buffer``
each op takes double buffering (half the budget per tile) only where that is faster than single buffering
with the whole budget (``SB`` / ``DB`` in the placement), so allowing it never slows a mapping down. A row
that does not fit is a :class:`~pondlib.errors.ConfigError` naming the op, its smallest footprint and
``l1_bytes``.

Example:
    >>> import numpy as np
    >>> from pondlib.graph.opgraph import Node, OpGraph, TensorInfo
    >>> g = OpGraph((TensorInfo("x", (1, 64), "int8"),), (TensorInfo("y", (1, 32), "int8"),),
    ...     (Node("mm", "MatMul", ("x", "w"), ("h",)),
    ...      Node("rq", "RequantShift", ("h", "m", "z"), ("y",), {"div": 256, "n_levels_out": 256, "signed": 1})),
    ...     {"w": np.zeros((64, 32), np.float32), "m": np.float32(3), "z": np.float32(0)})
    >>> gm = map_graph(g, integer=True)
    >>> [(r.name, r.kind, r.work, r.placement) for r in gm.rows]
    [('mm', 'mac', 2048, 'W:L2 A:L1 SB'), ('rq', 'eltwise', 32, 'fused')]
    >>> gm.cycles == sum(r.cycles for r in gm.rows), gm.l3_bytes
    (True, 0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.devices.siracusa.cycles import DEFAULT_CYCLES, CycleParams
from pondlib.devices.siracusa.limits import SiracusaLimits, get_limits
from pondlib.devices.siracusa.specification import QConv2d, RequantShift
from pondlib.devices.siracusa.tiling import npu_eligibility
from pondlib.errors import ConfigError, GraphError, PondError
from pondlib.graph.opgraph import Node, OpGraph, check_opgraph
from pondlib.validate import check_bool, check_int, check_type

__all__ = [
    "OpRow", "GraphMapping", "map_graph", "OP_FAMILIES", "CALL_CYCLES", "DIV_CYCLES", "SQRT_CYCLES", "LINEAR_MAC_CYCLES"
]  # fmt: skip

#: Per-call cost of a kernel Deeploy calls once per row (call, prologue, pointer set-up, team barrier; assumed).
CALL_CYCLES = 100.0
#: Extra cycles of one 32-bit integer division on RI5CY (iterative divider, up to 35 cycles; assumed worst case).
DIV_CYCLES = 35.0
#: pulp_nn_linear_i8_i8_i8's inner loop per MAC: 3 word loads + 2 sdotp + 1 load-use stall per 8 MACs (from its C).
LINEAR_MAC_CYCLES = 6.0 / 8.0
#: Integer square root of a 16-bit value by binary search (~8 iterations of ~12 cycles; assumed).
SQRT_CYCLES = 100.0

#: op -> family of the cost model (module docstring).
OP_FAMILIES: dict[str, str] = {
    **dict.fromkeys(("MatMul", "Gemm", "Conv", "ConvTranspose"), "mac"),
    **dict.fromkeys(
        ("Add", "Sub", "Mul", "Div", "RequantShift", "Relu", "Clip", "LeakyRelu", "iHardswish", "iGELU", "Gelu",
         "TrueIntegerDiv", "IntegerDiv", "RQIntegerDiv", "RequantizedGELU", "RequantizediGELU", "RequantizediHardswish",
         "iNoNorm",
         "Sigmoid", "Tanh", "Neg", "Abs", "Max", "Min", "Cast", "Where", "Sqrt", "Pow", "Erf", "Exp", "HardSwish",
         "Floor", "Ceil", "Round", "HardSigmoid", "Swish", "LUT", "BatchNormalization"),
        "eltwise",
    ),
    **dict.fromkeys(
        ("Transpose", "Concat", "Slice", "Gather", "Pad", "Split", "Expand", "Tile", "DepthToSpace"), "copy"
    ),
    **dict.fromkeys(("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Shape"), "alias"),
    **dict.fromkeys(
        ("iRMSNorm", "iLayerNorm", "LayerNormalization", "QLayerNorm", "GroupNormalization", "InstanceNormalization",
         "RMSNormalization", "RMSNorm"),
        "norm",
    ),
    **dict.fromkeys(("iSoftmax", "Softmax", "ITAMax", "ITAPartialMax", "LogSoftmax", "QSoftmax"), "softmax"),
    **dict.fromkeys(
        ("ReduceMean", "ReduceSum", "ReduceMax", "IntegerMean", "GlobalAveragePool", "GlobalMaxPool", "MaxPool",
         "AveragePool"),
        "reduce",
    ),
}  # fmt: skip

#: Element-wise ops costing more than one value's worth (multiples of ``eltwise_cycles``) or a division.
_ELT_FACTOR = {"iHardswish": 2.0, "RequantizediHardswish": 2.0, "iGELU": 3.0, "Gelu": 3.0, "RequantizedGELU": 3.0}
_ELT_DIV = frozenset({"Div", "IntegerDiv", "RQIntegerDiv"})
#: Producers a following RequantShift folds into (Deeploy's merge passes).
_RQ_HOSTS = frozenset({"MatMul", "Gemm", "Conv", "Add", "Mul", "iHardswish", "iGELU", "TrueIntegerDiv"})
_ACC_OPS = frozenset({"MatMul", "Gemm", "Conv", "Add", "Mul", "Sub"})


@dataclass(frozen=True)
class OpRow:
    """One node's mapping. ``tiles``: the tile sizes (dict) and ``n_tiles``; ``cycles`` include L3 fetches."""

    name: str
    op: str
    kind: str
    shape: tuple[int, ...]
    work: int
    weight_bytes: int
    act_bytes: int
    placement: str
    tile: dict = field(default_factory=dict)
    n_tiles: int = 0
    tile_bytes: int = 0
    npu: bool = False
    npu_reason: str = ""
    cycles: float = 0.0
    fused_into: str = ""
    buffering: int = 0  # 1 single, 2 double buffered tiles; 0 untiled or free


@dataclass(frozen=True)
class GraphMapping:
    """Rows (graph order) and totals: ``cycles`` (sum of rows), ``l2_peak`` (weights in L2 + peak live
    activations, B), ``l3_bytes`` (weights placed in L3)."""

    name: str
    rows: tuple[OpRow, ...]
    cycles: float
    l2_peak: int
    l3_bytes: int
    weight_bytes: int
    act_peak: int
    cores: int
    l1_bytes: int
    tiled: bool
    double_buffer: bool

    def as_table(self) -> Any:
        """The per-op rows as a :class:`~pondlib.devices.core.report.Table` (what ``pond map`` renders)."""
        from pondlib.devices.core.report import Table

        cols = (("op", "left"), ("kind", "left"), ("shape", "left"), ("work", "right"), ("placement", "left"),
                ("tiles", "right"), ("NPU", "center"), ("cycles", "right"))  # fmt: skip
        rows = []
        for r in self.rows:
            tiles = "-" if not r.n_tiles else str(r.n_tiles)
            shape = "x".join(str(d) for d in r.shape) or "scalar"
            rows.append((f"{r.name} ({r.op})", r.kind, shape, f"{r.work:,}", r.placement, tiles,
                         "yes" if r.npu else "-", f"{r.cycles:,.0f}"))  # fmt: skip
        mode = f"{self.cores} core(s), " + (f"tiled, L1 {self.l1_bytes:,} B" if self.tiled else "untiled, data in L2")
        caption = (f"total {self.cycles:,.0f} cycles ({mode}); L2 peak {self.l2_peak:,} B, L3 {self.l3_bytes:,} B; "
                   "work = MACs or values; fused = folded into the op before it")  # fmt: skip
        return Table(f"{self.name} on Siracusa, per op", cols, tuple(rows), caption)

    def table(self) -> list[str]:
        """Lines for ``pond map``: op, shape, work, placement, tiles, NPU, cycles (and a total line)."""
        head = ("op", "kind", "shape", "work", "placement", "tiles", "NPU", "cycles")
        body = []
        for r in self.rows:
            tiles = "-" if not r.n_tiles else f"{r.n_tiles} x " + ",".join(f"{k}={v}" for k, v in r.tile.items())
            shape = "x".join(str(d) for d in r.shape) or "scalar"
            npu = "yes" if r.npu else "-"
            body.append((f"{r.name} ({r.op})", r.kind, shape, str(r.work), r.placement, tiles, npu, f"{r.cycles:.0f}"))
        body.append(
            ("total", "", "", str(sum(r.work for r in self.rows)), f"L2 peak {self.l2_peak} B, L3 {self.l3_bytes} B",
             "", "", f"{self.cycles:.0f}")
        )  # fmt: skip
        widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
        return ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in [head, *body]]


# ---------------------------------------------------------------------------------------------------- shapes
def _shape_sim(graph: OpGraph, integer: bool) -> dict[str, tuple[int, ...]] | None:
    """Every tensor's shape from GraphSim on zeros; None when GraphSim cannot run this graph."""
    from pondlib.devices.siracusa.graphsim import GraphSim

    try:
        sim = GraphSim(graph)
        run = sim.run({t.name: np.zeros(t.shape or ()) for t in graph.inputs}, integer=integer)
    except PondError:
        return None
    return {k: tuple(int(d) for d in np.shape(v)) for k, v in run.tensors.items()}


def _bcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(d) for d in np.broadcast_shapes(*shapes))


def _infer_one(node: Node, ins: list, consts: Any) -> tuple[int, ...]:
    """Output shape of one node from its input shapes (the shape-only fallback)."""
    op, a = node.op, node.attrs
    s = ins[0]
    if op == "MatMul":
        x, w = ins[0], ins[1]
        return _bcast(x[:-2], w[:-2]) + (x[-2], w[-1]) if len(w) >= 2 and len(x) >= 2 else x[:-1] + w[-1:]
    if op == "Gemm":
        m = s[1] if a.get("transA", 0) else s[0]
        return (m, ins[1][0] if a.get("transB", 0) else ins[1][1])
    if op == "Conv":
        w = ins[1]
        k, st = w[2:], list(a.get("strides", [1] * len(w[2:])))
        pads = list(a.get("pads", [0] * 2 * len(k)))
        dil = list(a.get("dilations", [1] * len(k)))
        sp = [(s[2 + i] + pads[i] + pads[i + len(k)] - dil[i] * (k[i] - 1) - 1) // st[i] + 1 for i in range(len(k))]
        return (s[0], w[0], *sp)
    if op == "Transpose":
        perm = list(a.get("perm", range(len(s) - 1, -1, -1)))
        return tuple(s[p] for p in perm)
    if op == "Concat":
        ax = int(a.get("axis", 0)) % len(s)
        return s[:ax] + (sum(x[ax] for x in ins if x is not None),) + s[ax + 1 :]
    if op == "Reshape":
        tgt = [int(v) for v in np.asarray(consts[node.inputs[1]]).reshape(-1)]
        tgt = [s[i] if v == 0 else v for i, v in enumerate(tgt)]
        if -1 in tgt:
            rest = math.prod(v for v in tgt if v != -1)
            tgt[tgt.index(-1)] = math.prod(s) // max(rest, 1)
        return tuple(tgt)
    if op == "Flatten":
        ax = int(a.get("axis", 1)) % (len(s) + 1) if s else 0
        return (math.prod(s[:ax]), math.prod(s[ax:]))
    if op in ("GlobalAveragePool",):
        return s[:2] + (1,) * (len(s) - 2)
    if op in ("ReduceMean", "ReduceSum", "ReduceMax", "IntegerMean") and "axes" in a:
        axes = {int(x) % len(s) for x in np.asarray(a["axes"]).reshape(-1)}
        keep = int(a.get("keepdims", 1))
        return tuple(1 if i in axes else d for i, d in enumerate(s) if keep or i not in axes)
    fam = OP_FAMILIES.get(op)
    if fam in ("eltwise", "norm", "softmax", "alias"):
        return _bcast(*[x for x in ins if x is not None])
    raise GraphError(
        "shape inference",
        value=f"{node.label}",
        limit="an op whose output shape pondlib knows without running it",
        where="map_graph",
        fix="wait for the op's kernel in pondlib.devices.siracusa.kernels, or replace the op",
    )


def _shapes(graph: OpGraph, order: list[Node], integer: bool) -> dict[str, tuple[int, ...]]:
    shapes = _shape_sim(graph, integer)
    if shapes is not None:
        return shapes
    shapes = {t.name: tuple(t.shape or ()) for t in graph.inputs}
    consts = graph.constants
    for node in order:
        ins = [None if not t else (shapes[t] if t in shapes else tuple(np.shape(consts[t]))) for t in node.inputs]
        out = _infer_one(node, ins, consts)
        for name in node.outputs:
            if name:
                shapes[name] = out
    return shapes


# ---------------------------------------------------------------------------------------------------- ops
@dataclass
class _Op:
    """What the cost model needs of one node (module docstring)."""

    node: Node
    family: str
    shape: tuple[int, ...]
    n_out: int
    b_out: int
    act_in: list  # (elements, bytes per element) of each non-constant input
    consts: list  # constant input names
    requant: Node | None = None  # the RequantShift folded into this node
    fused_into: str = ""
    gemm: tuple = ()  # (batch, M, K, O, weights batched, single core)
    row: int = 1  # row length of a norm / softmax / reduction


def _fusion(order: list[Node], graph: OpGraph) -> tuple[dict[str, Node], dict[str, str]]:
    """(host name -> its RequantShift, fused node name -> host name) per Deeploy's merge passes."""
    prod, users, consts = graph.producers(), graph.consumers(), graph.constants
    outs = set(graph.output_names)

    def sole(t: str) -> Node | None:
        p = prod.get(t)
        return p if p is not None and len(users.get(t, [])) == 1 and t not in outs else None

    hosts: dict[str, Node] = {}
    fused: dict[str, str] = {}
    for node in order:
        if node.op != "RequantShift" or not node.inputs:
            continue
        src = sole(node.inputs[0])
        if src is None or src.name in hosts or src.name in fused:
            continue
        if src.op in ("Concat", "Reshape", "Transpose") and _unity(node, consts):
            fused[node.name] = _UNITY  # Deeploy's SkipUnityRequantPass: an identity requant is dropped
            continue
        if src.op == "Add" and len(src.inputs) == 2 and any(t in consts for t in src.inputs):
            other = next(t for t in src.inputs if t not in consts)
            mac = sole(other)
            if mac is not None and mac.op in ("MatMul", "Gemm", "Conv") and mac.name not in hosts:
                hosts[mac.name] = node
                fused[src.name] = fused[node.name] = mac.name
                continue
        if src.op in _RQ_HOSTS:
            hosts[src.name] = node
            fused[node.name] = src.name
    return hosts, fused


_UNITY = "(identity requant, skipped)"


def _unity(node: Node, consts: Any) -> bool:
    """Whether a RequantShift is the identity (``mul == div``, ``add == 0``, scalars)."""
    mul, add = (np.asarray(consts[t]) if t in consts else None for t in (node.inputs + ("", ""))[1:3])
    div = np.asarray(node.attrs.get("div", 0)).reshape(-1)
    if mul is None or add is None or mul.size != 1 or add.size != 1 or div.size != 1:
        return False
    return float(mul.reshape(-1)[0]) == float(div[0]) and float(add.reshape(-1)[0]) == 0.0


def _gemm_dims(node: Node, shapes: dict, consts: Any) -> tuple:
    """(batch, M, K, O, weights batched) of a MatMul / Gemm / Conv (conv as an im2col GEMM per image)."""
    shp = [shapes.get(t, tuple(np.shape(consts[t])) if t in consts else ()) for t in node.inputs[:2]]
    out = shapes[node.outputs[0]]
    if node.op == "Conv":
        w = shp[1]
        return out[0], math.prod(out[2:]), math.prod(w[1:]), out[1], False
    if node.op == "Gemm":
        a = shp[0]
        return 1, out[0], a[0] if node.attrs.get("transA", 0) else a[-1], out[-1], False
    x, w = shp
    o = out[-1] if len(w) >= 2 else 1
    m = x[-2] if len(x) >= 2 else 1
    batch = max(math.prod(out) // max(m * o, 1), 1)
    return batch, m, x[-1], o, node.inputs[1] not in consts


def _build_ops(graph: OpGraph, order: list[Node], shapes: dict, integer: bool) -> tuple[list[_Op], set]:
    """The :class:`_Op` of every node and the names of the tensors never materialized (fused intermediates)."""
    consts = graph.constants
    hosts, fused = _fusion(order, graph) if integer else ({}, {})
    prod = graph.producers()
    hidden = {o for n in order if fused.get(n.name, _UNITY) != _UNITY or n.name in hosts for o in n.outputs}
    hidden -= {rq.outputs[0] for rq in hosts.values()}

    def ebytes(t: str) -> int:
        if not integer:
            return 4
        p = prod.get(t)
        return 4 if p is not None and p.op in _ACC_OPS and p.name not in hosts else 1

    ops = []
    for node in order:
        fam = OP_FAMILIES.get(node.op)
        if fam is None:
            raise GraphError(
                "op of unknown cost",
                value=node.label,
                limit=f"one of the {len(OP_FAMILIES)} ops the Siracusa cost model knows (OP_FAMILIES)",
                where="map_graph",
                fix="add the op's family to pondlib.devices.siracusa.graph_map.OP_FAMILIES, or replace the op",
            )
        out = node.outputs[0]
        shape = shapes.get(out, ())
        rq = hosts.get(node.name)
        b_out = 1 if rq is not None else ebytes(out)
        act_in = [(math.prod(shapes[t]), ebytes(t)) for t in node.inputs if t and t not in consts and t in shapes]
        op = _Op(node, fam, shape, math.prod(shape), b_out, act_in, [t for t in node.inputs if t in consts], rq)
        op.fused_into = fused.get(node.name, "")
        if op.fused_into == _UNITY:
            op.family, op.fused_into = "alias", ""
        if node.op == "Concat" and sum(1 for e, _ in act_in if e) <= 1:  # Deeploy's SkipEmptyConcatPass (fix 5)
            op.family = "alias"
        if fam == "mac":
            dims = _gemm_dims(node, shapes, consts)
            op.gemm = (*dims, integer and rq is None)
        elif fam in ("norm", "softmax"):
            op.row = shape[-1] if shape else 1
        elif fam == "reduce":
            op.row = max(act_in[0][0] // max(op.n_out, 1), 1) if act_in else 1
        ops.append(op)
    return ops, hidden


# ---------------------------------------------------------------------------------------------------- memory
def _liveness(graph: OpGraph, ops: list[_Op], hidden: set, integer: bool) -> int:
    """Peak live activation bytes over the topological order (aliases share their input's buffer)."""
    nbytes = {t.name: math.prod(t.shape or ()) * (1 if integer else 4) for t in graph.inputs}
    for op in ops:
        for t in op.node.outputs:
            if t and t not in hidden:
                nbytes[t] = 0 if op.family == "alias" else op.n_out * op.b_out
    root = {t: t for t in nbytes}
    for op in ops:
        srcs = [t for t in op.node.inputs if t in root]
        if op.family == "alias" and srcs:  # the largest input (an empty Concat operand holds nothing)
            src = max(srcs, key=lambda t: nbytes.get(root[t], 0))
            for t in op.node.outputs:
                root[t] = root[src]
    start = {t: 0 for t in graph.input_names}
    end: dict[str, int] = {}
    for i, op in enumerate(ops):
        for t in op.node.outputs:
            if t in root:
                start.setdefault(root[t], i)
        for t in op.node.inputs:
            if t in root:
                end[root[t]] = max(end.get(root[t], 0), i)
    for t in graph.output_names:
        if t in root:
            end[root[t]] = len(ops)
    delta = [0] * (len(ops) + 2)
    for t, s in start.items():
        if nbytes.get(t, 0):
            delta[s] += nbytes[t]
            delta[max(end.get(t, s), s) + 1] -= nbytes[t]
    peak = live = 0
    for d in delta:
        live += d
        peak = max(peak, live)
    return peak


def _const_bytes(graph: OpGraph, ops: list[_Op], integer: bool) -> dict[str, int]:
    """Bytes of every constant an op reads: int8 MAC weights, int32 otherwise (float32 in float graphs)."""
    sizes: dict[str, int] = {}
    for op in ops:
        for j, t in enumerate(op.node.inputs):
            if t in graph.constants and op.node.op not in ("Reshape",):
                width = 1 if integer and op.family == "mac" and j == 1 else 4
                sizes[t] = max(sizes.get(t, 0), int(graph.constants[t].size) * width)
    return sizes


def _place(sizes: dict[str, int], peak: int, l2: int) -> set:
    """Constants moved to L3 (largest first) until weights in L2 + peak activations fit."""
    in_l3: set = set()
    total = sum(sizes.values())
    for t in sorted(sizes, key=lambda k: -sizes[k]):
        if total + peak <= l2:
            break
        in_l3.add(t)
        total -= sizes[t]
    return in_l3


# ---------------------------------------------------------------------------------------------------- cycles
@dataclass(frozen=True)
class _Ctx:
    p: CycleParams
    cores: int
    cap: int  # bytes one tile's buffers may use (l1_bytes / buffering)
    l1: int  # the whole L1 tile budget
    tiled: bool
    double: bool
    integer: bool


def _runs(total: int, size: int) -> list[tuple[int, int]]:
    """(tile size, count) runs of ``total`` split into tiles of ``size``."""
    full, rest = divmod(total, size)
    return [(size, full)] * (full > 0) + [(rest, 1)] * (rest > 0)


def _combine(runs: list[tuple[int, float, float, float]], double: bool) -> float:
    """Cycles of tile runs ``(count, dma_in, kernel, dma_out)``; double buffering overlaps (module docstring)."""
    if not double:
        return float(sum(c * (i + k + o) for c, i, k, o in runs))
    seq: list[tuple[float, float, float, int]] = []
    for c, i, k, o in runs:
        seq += [(i, k, o, 1)] * c if c <= 3 else [(i, k, o, 1), (i, k, o, c - 2), (i, k, o, 1)]
    total = seq[0][0] + seq[-1][2]
    for j, (i, k, o, m) in enumerate(seq):
        if m > 1:
            nxt, prv = i, o
        else:
            nxt = seq[j + 1][0] if j + 1 < len(seq) else 0.0
            prv = seq[j - 1][2] if j > 0 else 0.0
        total += m * max(k, nxt + prv)
    return float(total)


def _mac_core(op: _Op, ctx: _Ctx, b: int, m: int, o: int) -> tuple[float, float, float, float, float]:
    """(per-core MACs, per-core requantized outputs, calls, k, a) of ``b`` batches x ``m`` rows x ``o`` outputs."""
    p = ctx.p
    batch, M, K, _O, _wb, single = op.gemm
    if single:  # Deeploy's generic MatMul_s8_s8_s32: one core, scalar
        return b * m * K * o, 0.0, 1.0, p.mac_cycles, p.mac_accesses
    k, a = (p.mac_cycles_simd, p.mac_accesses_simd) if ctx.integer else (p.mac_cycles, p.mac_accesses)
    if M == 1 and batch > 1:  # MatrixVec: batch elements over cores, one gemv call each
        share = math.ceil(b / ctx.cores)
        return share * K * o, share * o, float(share), k, a
    ch = math.ceil(o / ctx.cores)  # pulp_nn_linear per row: output channels over cores
    if ctx.integer:  # its inner loop: 3 word loads + 2 sdotp + 1 load-use stall per 8 MACs (fix 4)
        k = LINEAR_MAC_CYCLES
    return b * m * K * ch, b * m * ch, float(b * m), k, a


def _cost_untiled(op: _Op, ctx: _Ctx) -> float:
    """Cycles of one op with its data in L2 (module docstring)."""
    p, c, P = ctx.p, ctx.cores, ctx.p.l2_access_cycles
    n = op.n_out
    if op.family == "mac":
        batch, M, K, O = op.gemm[:4]
        u, r, calls, k, a = _mac_core(op, ctx, batch, M, O)
        word = 4 if ctx.integer and not op.gemm[5] else 1
        body = u * (k + a * P) + r * (p.eltwise_cycles + p.eltwise_accesses * P)
        port = batch * M * K * O * a * word / p.l2_port_bytes
        return p.fork_cycles + calls * CALL_CYCLES + max(body, 0.0 if op.gemm[5] else port)
    if op.node.op == "Concat":
        return p.fork_cycles + _memcpy(op, P)
    if op.family in ("eltwise", "copy"):
        k, a = _elt_ka(op, p)
        return p.fork_cycles + max(math.ceil(n / c) * (k + a * P), n * a / p.l2_port_bytes)
    if op.family == "reduce":
        u = math.ceil(n / c) * op.row
        return p.fork_cycles + u * (p.eltwise_cycles + P)
    return p.fork_cycles + _rows_cost(op, ctx, max(n // max(op.row, 1), 1), P)


def _memcpy(op: _Op, P: float, n: int | None = None) -> float:
    """Deeploy's Concat: ``memcpy`` slabs on one core, a word load and store per 4 bytes, one call per slab."""
    n = op.n_out if n is None else n
    axis = int(op.node.attrs.get("axis", 0)) % max(len(op.shape), 1)
    slabs = len(op.act_in) * math.prod(op.shape[:axis])
    return math.ceil(n * op.b_out / 4) * (2.0 + 2.0 * P) + slabs * CALL_CYCLES


def _elt_ka(op: _Op, p: CycleParams) -> tuple[float, float]:
    """(cycles, accesses) per value of an element-wise or copy op."""
    if op.family == "copy":
        return p.eltwise_cycles, p.eltwise_accesses
    k = _ELT_FACTOR.get(op.node.op, 1.0) * p.eltwise_cycles + (DIV_CYCLES if op.node.op in _ELT_DIV else 0.0)
    return k, float(len(op.act_in) + 1)


def _rows_cost(op: _Op, ctx: _Ctx, rows: int, P: float) -> float:
    """Kernel cycles of ``rows`` rows of a norm or softmax (without the launch)."""
    p, c, D = ctx.p, ctx.cores, op.row
    if op.family == "norm":
        serial = 1 if op.node.op == "iRMSNorm" else 2  # sum of squares (RMS) / mean and variance passes
        par = math.ceil(D / c) * (p.eltwise_cycles + DIV_CYCLES + 3 * P)
        return rows * (serial * D * (p.mac_cycles + P) + SQRT_CYCLES + par)
    per_core = rows // c
    share = max(per_core, rows - (c - 1) * per_core)  # Deeploy: the last core takes the remainder
    return share * D * (3 * p.eltwise_cycles + 2 * DIV_CYCLES + 5 * P)


def _no_fit(op: _Op, need: int, ctx: _Ctx) -> ConfigError:
    return ConfigError(
        "L1 tile",
        value=f"{op.node.label}: its smallest tile needs {need} B per buffer",
        limit=f"<= {ctx.cap} B (l1_bytes = {ctx.l1} B / buffering)",
        where="map_graph",
        fix="raise l1_bytes, turn double_buffer off, or map untiled (tiled=False)",
    )


def _plan_mac(op: _Op, ctx: _Ctx) -> tuple[dict, int, int]:
    """The (b, m, o) tile Deeploy's tiler picks, its count and bytes (module docstring, fix 3).

    Greedy in the tiler's variable order (batch, rows, outputs), each the largest value that still fits with
    the later ones at their minimum; ``o`` a multiple of 16 when ``O >= 16`` (GEMMTileConstraint)."""
    batch, M, K, O, wb, _single = op.gemm
    bi = op.act_in[0][1] if op.act_in else 1
    bw = bi if wb or not ctx.integer else 1
    prm = 8 if op.requant is not None else 0
    cands = sorted({min(o, O) for o in range(16, O + 16, 16)} | {O}) if O >= 16 else list(range(1, O + 1))

    def size(b: int, m: int, o: int) -> int:
        return b * m * (K * bi + o * op.b_out) + (b if wb else 1) * K * o * bw + prm * o

    if size(1, 1, cands[0]) > ctx.cap:
        raise _no_fit(op, size(1, 1, cands[0]), ctx)
    row, wgt, o0 = K * bi + cands[0] * op.b_out, K * cands[0] * bw, prm * cands[0]  # size is linear in b, m
    b = min(batch, (ctx.cap - o0) // (row + wgt) if wb else (ctx.cap - wgt - o0) // row)
    m = min(M, (ctx.cap - (b if wb else 1) * wgt - o0) // (b * row))
    o = max(x for x in cands if size(b, m, x) <= ctx.cap)
    n = math.ceil(batch / b) * math.ceil(M / m) * math.ceil(O / o)
    return {"b": b, "m": m, "o": o}, n, size(b, m, o)


def _tiled_mac(op: _Op, ctx: _Ctx) -> tuple[float, dict, int, int]:
    p = ctx.p
    batch, M, K, O, wb, _single = op.gemm
    tile, n, size = _plan_mac(op, ctx)
    bi = op.act_in[0][1] if op.act_in else 1
    bw = bi if wb or not ctx.integer else 1
    prm = 8 if op.requant is not None else 0
    runs = []
    for b, cb in _runs(batch, tile["b"]):
        for m, cm in _runs(M, tile["m"]):
            for o, co in _runs(O, tile["o"]):
                u, r, calls, k, _a = _mac_core(op, ctx, b, m, o)
                moved = b * m * K * bi + (b if wb else 1) * K * o * bw + prm * o
                dma_in = (2 + (prm > 0)) * p.dma_setup_cycles + moved / p.dma_bytes_per_cycle
                kern = p.fork_cycles + calls * CALL_CYCLES + u * k + r * p.eltwise_cycles
                dma_out = p.dma_setup_cycles + b * m * o * op.b_out / p.dma_bytes_per_cycle
                runs.append((cb * cm * co, dma_in, kern, dma_out))
    return _combine(runs, ctx.double), tile, n, size


def _greedy(dims: tuple[int, ...], cap: int) -> int:
    """Units (rows or values) in the tile Deeploy's tiler picks: each dim, outermost first, the largest that
    fits with the inner ones at 1 (so full outer dims, one partial dim, then 1s).

    >>> _greedy((1, 16, 64), 46), _greedy((1, 16, 64, 64), 4000)
    (32, 3072)
    """
    units = 1
    for d in dims:
        t = min(d, cap // units)
        units *= t
        if t < d:
            break
    return max(units, 1)


def _tiled_simple(op: _Op, ctx: _Ctx) -> tuple[float, dict, int, int]:
    """Element-wise, copy, reduction, norm and softmax tiles: whole values / rows per tile."""
    p, c = ctx.p, ctx.cores
    n = max(op.n_out, 1)
    n_in = max(len(op.act_in), 1)
    in_per = sum(e * b for e, b in op.act_in) / n
    if op.family in ("norm", "softmax"):
        unit, key = op.row, "rows"
        extra = 4 * op.row * c if op.family == "softmax" else 0
    elif op.family == "reduce":
        unit, key, extra = 1, "n", 0
    else:
        unit, key, extra = 1, "n", 0
    per = unit * (in_per + op.b_out)
    count = int((ctx.cap - extra) // max(per, 1e-9))
    total = n // unit if op.family in ("norm", "softmax") else n
    if count < 1:
        raise _no_fit(op, int(math.ceil(per + extra)), ctx)
    if op.family != "reduce" and op.shape:  # Deeploy's greedy tile: outer dims first (fix 3)
        count = _greedy(op.shape[:-1] if op.family in ("norm", "softmax") else op.shape, count)
    count = min(count, total)
    runs = []
    for t, cnt in _runs(total, count):
        dma_in = n_in * p.dma_setup_cycles + t * unit * in_per / p.dma_bytes_per_cycle
        dma_out = p.dma_setup_cycles + t * unit * op.b_out / p.dma_bytes_per_cycle
        if op.family in ("norm", "softmax"):
            kern = p.fork_cycles + _rows_cost(op, ctx, t, 0.0)
        elif op.family == "reduce":
            kern = p.fork_cycles + math.ceil(t / c) * op.row * p.eltwise_cycles
        elif op.node.op == "Concat":
            kern = p.fork_cycles + _memcpy(op, 0.0, t)
        else:
            kern = p.fork_cycles + math.ceil(t / c) * _elt_ka(op, p)[0]
        runs.append((cnt, dma_in, kern, dma_out))
    size = int(math.ceil(count * per + extra))
    return _combine(runs, ctx.double), {key: count}, math.ceil(total / count), size


def _npu(op: _Op, graph: OpGraph, shapes: dict, lim: SiracusaLimits) -> tuple[bool, str]:
    """N-EUREKA eligibility of a Conv (or a GEMM with constant weights, as a 1x1 convolution)."""
    node = op.node
    if op.family != "mac":
        return False, f"{node.op}: the NPU runs convolutions only"
    if node.op == "ConvTranspose":
        return False, "transposed convolution: the NPU runs 1x1, 3x3 and 3x3 depthwise convolutions"
    if node.op != "Conv" and op.gemm[4]:
        return False, "activation x activation MatMul: the NPU needs constant weights"
    if node.op == "Conv" and len(shapes.get(node.inputs[0], ())) != 4:
        return False, "1-D or 3-D convolution: the NPU runs 2-D convolutions"
    rq = None
    if op.requant is not None:
        mul = np.asarray(graph.constants.get(op.requant.inputs[1], np.int64(1))).reshape(-1).astype(np.int64)
        div = int(np.asarray(op.requant.attrs.get("div", 1)).reshape(-1)[0])
        rq = RequantShift(mul=mul if mul.size > 1 else int(mul[0]) if mul.size else 1, div=max(div, 1))
    try:
        if node.op == "Conv":
            w = shapes.get(node.inputs[1]) or tuple(graph.constants[node.inputs[1]].shape)
            x = shapes[node.inputs[0]]
            a = node.attrs
            layer = QConv2d(
                node.name,
                weight=np.zeros((w[2], w[3], w[1], w[0]), np.int64),
                in_shape=(x[2], x[3], x[1]),
                requant=rq,
                stride=int(list(a.get("strides", [1]))[0]),
                padding=int(list(a.get("pads", [0]))[0]),
                groups=int(a.get("group", 1)),
            )
        else:
            from pondlib.devices.siracusa.specification import QGemm

            layer = QGemm(node.name, weight=np.zeros(op.gemm[2:4], np.int64), requant=rq)
    except PondError as err:
        return False, str(err).splitlines()[0][:120]
    return npu_eligibility(layer, lim)


def _check_args(graph: Any, limits: Any, cores: Any, l1_bytes: Any, flags: dict, params: Any) -> tuple:
    check_type(graph, "graph", OpGraph, where="map_graph", error=GraphError, fix="import with load_opgraph")
    lim = get_limits(limits)
    cores = check_int(cores, "cores", lo=1, hi=lim.n_cores, where="map_graph", error=ConfigError)
    l1 = lim.l1_tile_budget if l1_bytes is None else l1_bytes
    l1 = check_int(l1, "l1_bytes", lo=1, hi=lim.l1_bytes, where="map_graph", error=ConfigError)
    for key, value in flags.items():
        if value is not None:
            flags[key] = check_bool(value, key, where="map_graph", error=ConfigError)
    check_type(params, "params", CycleParams, where="map_graph", error=ConfigError)
    return lim, cores, l1


def map_graph(
    graph: OpGraph,
    *,
    limits: SiracusaLimits | str | None = None,
    cores: int = 8,
    l1_bytes: int | None = None,
    tiled: bool = True,
    double_buffer: bool = True,
    integer: bool | None = None,
    params: CycleParams = DEFAULT_CYCLES,
) -> GraphMapping:
    """Map ``graph`` onto Siracusa (module docstring): a row per node and the totals.

    Args:
        graph: the operator graph (every graph input needs a declared shape).
        limits: the Siracusa variant (default :data:`~.limits.SIRACUSA`).
        cores: cluster cores used, 1..``limits.n_cores``.
        l1_bytes: the L1 tile budget per op (default ``limits.l1_tile_budget``, 64,000 B).
        tiled: tile every op through L1 (True) or let the cores work on L2 directly (False).
        double_buffer: overlap each tile's kernel with the next tile's DMA (halves the tile budget).
        integer: integer graph (int8 activations and weights); default: a graph in Deeploy's dialect, or one
            whose inputs are declared with an integer dtype.
        params: the cycle-model constants (default :data:`~.cycles.DEFAULT_CYCLES`).

    Raises:
        GraphError: not an OpGraph, a malformed graph, an op of unknown cost (named), an input without shape.
        ConfigError: ``cores``, ``l1_bytes``, flags or ``params`` out of range; an op whose smallest tile does
            not fit ``l1_bytes`` (named, with the fix).
    """
    flags = {"tiled": tiled, "double_buffer": double_buffer, "integer": integer}
    lim, cores, l1 = _check_args(graph, limits, cores, l1_bytes, flags, params)
    tiled, double, integer = flags["tiled"], flags["double_buffer"], flags["integer"]
    order = check_opgraph(graph)
    for t in graph.inputs:
        if t.shape is None:
            raise GraphError(
                "graph input shape", value=f"{t.name!r} undeclared", limit="a concrete shape", where="map_graph",
                fix="declare the input's shape (export with fixed shapes)",
            )  # fmt: skip
    for node in order:
        if node.op not in OP_FAMILIES:
            _build_ops(graph, [node], {}, False)  # raises the GraphError naming the op
    if integer is None:
        from pondlib.devices.siracusa.kernels.deeploy_ops import DIALECT_OPS

        integer = any(n.op in DIALECT_OPS for n in order) or all(np.dtype(t.dtype).kind in "iu" for t in graph.inputs)
    shapes = _shapes(graph, order, integer)
    ops, hidden = _build_ops(graph, order, shapes, integer)
    peak = _liveness(graph, ops, hidden, integer)
    sizes = _const_bytes(graph, ops, integer)
    in_l3 = _place(sizes, peak, lim.l2_bytes)
    ctx = _Ctx(params, cores, l1 // (2 if double else 1), l1, tiled, double, integer)
    rows = []
    charged: set = set()
    for op in ops:
        rows.append(_row(op, ctx, graph, shapes, lim, sizes, in_l3, charged))
    w_l2 = sum(v for k, v in sizes.items() if k not in in_l3)
    return GraphMapping(
        name=graph.name,
        rows=tuple(rows),
        cycles=float(sum(r.cycles for r in rows)),
        l2_peak=w_l2 + peak,
        l3_bytes=sum(sizes[k] for k in in_l3),
        weight_bytes=sum(sizes.values()),
        act_peak=peak,
        cores=cores,
        l1_bytes=l1,
        tiled=tiled,
        double_buffer=double,
    )


def _row(op: _Op, ctx: _Ctx, graph: OpGraph, shapes: dict, lim: SiracusaLimits, sizes: dict, in_l3: set,
         charged: set) -> OpRow:  # fmt: skip
    """The :class:`OpRow` of one op (cycles include the first fetch of its L3 constants)."""
    node = op.node
    work = math.prod(op.gemm[:4]) if op.family == "mac" else op.n_out
    if op.family in ("norm", "softmax"):
        work = op.n_out * (2 if op.family == "norm" else 3)
    elif op.family == "reduce":
        work = op.n_out * op.row
    wbytes = sum(sizes.get(t, 0) for t in op.consts)
    act = int(sum(e * b for e, b in op.act_in) + op.n_out * op.b_out)
    npu, why = _npu(op, graph, shapes, lim) if op.family == "mac" else (False, "")
    base = dict(name=node.name, op=node.op, kind=op.family, shape=op.shape, work=int(work), weight_bytes=wbytes)
    if op.fused_into or op.family == "alias":
        place = f"fused into {op.fused_into}" if op.fused_into else "alias"
        return OpRow(**base, act_bytes=0, placement="fused" if op.fused_into else place, fused_into=op.fused_into)
    l3 = 0.0
    for t in op.consts:
        if t in in_l3 and t not in charged:
            charged.add(t)
            l3 += sizes[t] / ctx.p.l3_bytes_per_cycle
    wplace = "-" if not op.consts else ("L3" if any(t in in_l3 for t in op.consts) else "L2")
    if not ctx.tiled:
        cyc = _cost_untiled(op, ctx)
        return OpRow(**base, act_bytes=act, placement=f"W:{wplace} A:L2", npu=npu, npu_reason=why, cycles=cyc + l3)
    best, err = None, None
    for double in (False, True) if ctx.double else (False,):
        sub = _Ctx(ctx.p, ctx.cores, ctx.l1 // (2 if double else 1), ctx.l1, True, double, ctx.integer)
        try:
            got = _tiled_mac(op, sub) if op.family == "mac" else _tiled_simple(op, sub)
        except ConfigError as exc:
            err = exc
            continue
        if best is None or got[0] < best[0][0]:
            best = (got, 2 if double else 1)
    if best is None:
        raise err
    (cyc, tile, n, size), buf = best
    return OpRow(
        **base, act_bytes=act, placement=f"W:{wplace} A:L1 {'DB' if buf == 2 else 'SB'}", tile=tile, n_tiles=n,
        tile_bytes=size, npu=npu, npu_reason=why, cycles=cyc + l3, buffering=buf,
    )  # fmt: skip
