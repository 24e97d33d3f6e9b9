r"""Workloads for schedule exploration: layers with sizes and bit widths, cut into blocks.

A :class:`Workload` is a topologically ordered tuple of :class:`Layer` records and a number of time
steps ``T``. Each layer produces one output tensor per step; ``inputs`` name the producing layers
(``-1``: the network input, which starts in DRAM). Blocks (``block``, STEMS's ``cut_block``) are the
units a schedule is chosen for; they number ``0 .. N-1`` in layer order.

Sizes of layer ``l`` (STEMS's loop dimensions, no padding field: a convolution sees
``IY = (OY - 1) SY + FY`` input rows and ``IX = (OX - 1) SX + FX`` columns), all in **bits**:

==================  ================================================================================
quantity            equation
==================  ================================================================================
weights ``W_l``     ``K (C / groups) FY FX b_w`` (conv, linear; ``+ R b_w`` recurrent), 0 otherwise
state ``S_l``       ``K OY OX n_s b_s`` when stateful (``n_s`` state words per neuron), else 0;
                    no ``T``: a state is reused across time like a partial sum across channels
output per step     ``K OY OX b_out``
input per step      ``C IY IX b_in`` (per input tensor; an add reads ``K OY OX b_in`` from each)
ops per step        ``K (C / groups) FY FX OY OX (+ R)`` dense synaptic operations (conv, linear)
==================  ================================================================================

An op is a SOP (1-bit spike input) or a MAC (multi-bit input, ``b_in > 1``); adds and pools count no
ops (STEMS charges only the PE array's multiply-accumulates).

:func:`sew_resnet18` builds the SEW-ResNet-18 of ``docs/EXPLORE.md`` (and its variants without the
states of the first blocks); :meth:`Workload.from_table` reads a plain layer table;
:func:`pondlib.explore.workload_from_graph` reads a ``pondlib.nn`` network or a ``pondlib.graph`` graph.

Example:
    >>> w = sew_resnet18()
    >>> len(w.layers), w.n_blocks, w.time_steps
    (30, 7, 16)
    >>> w.total_weight_bits, w.total_state_bits, w.input_bits
    (4751872, 46362624, 2097152)
    >>> w.total_ops
    26107445248
    >>> sew_resnet18(stateless_blocks=(0, 1)).total_state_bits       # "5PLIF"
    2322432
    >>> Workload.from_table([{"name": "fc", "kind": "linear", "k": 10, "c": 64, "stateful": True}],
    ...                     time_steps=4).layers[0].state_size
    120
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from pondlib.errors import ConfigError
from pondlib.explore._checks import Problems

__all__ = ["Layer", "Workload", "LAYER_KINDS", "NETWORK_INPUT", "MAX_SIZE", "sew_resnet18"]

#: Layer kinds: weighted layers (``conv``, ``linear``), element-wise ``add`` (a residual sum of its
#: inputs), ``pool`` (a window reduction per channel) and ``neuron`` (a neuron layer on its own, when
#: it cannot be fused into the layer before it).
LAYER_KINDS = ("conv", "linear", "add", "pool", "neuron")

#: The producer index of the network input in :attr:`Layer.inputs`.
NETWORK_INPUT = -1

#: Largest loop size, stride, block id or number of time steps (2^31 - 1): sizes stay exact in float64.
MAX_SIZE = 2**31 - 1

_WEIGHTED = ("conv", "linear")


@dataclass(frozen=True)
class Layer:
    """One layer: loop sizes, producers, block, and the bit width of every operand.

    Attributes:
        name: unique within the workload.
        kind: one of :data:`LAYER_KINDS`.
        k: output channels ``K`` (an add or pool keeps the channels: ``K = C``).
        c: input channels ``C`` (a linear layer: input features).
        oy, ox: output rows and columns (1 for a linear layer).
        fy, fx: kernel rows and columns (pool window for a pool). sy, sx: strides.
        groups: convolution groups (``C`` and ``K`` divisible by it).
        inputs: producer layer indices, each earlier than this layer, or :data:`NETWORK_INPUT`.
        block: the schedule block (``cut_block``).
        stateful: whether the layer keeps a neuron state across steps (LIF ``V`` ...).
        weight_bits: bits per weight ``b_w``. state_bits: bits per state word ``b_s``.
        state_words: state words per neuron ``n_s`` (1: the membrane potential only).
        input_bits: bits per input element ``b_in`` (1: spikes, SOPs; more: values, MACs).
        output_bits: bits per output element ``b_out`` (1: spikes).
        recurrent: recurrent synapses ``R`` (each a ``b_w``-bit weight and one SOP per step; conv, linear
            and neuron layers).

    Every field is checked when the layer is built; all problems are reported together in one
    :class:`~pondlib.errors.ConfigError`.
    """

    name: str
    kind: str
    k: int
    c: int
    oy: int = 1
    ox: int = 1
    fy: int = 1
    fx: int = 1
    sy: int = 1
    sx: int = 1
    groups: int = 1
    inputs: tuple[int, ...] = (NETWORK_INPUT,)
    block: int = 0
    stateful: bool = False
    weight_bits: int = 4
    state_bits: int = 12
    state_words: int = 1
    input_bits: int = 1
    output_bits: int = 1
    recurrent: int = 0

    def __post_init__(self) -> None:
        where = f"Layer {self.name!r}" if isinstance(self.name, str) else "Layer"
        p = Problems(where)
        p.instance(self.name, "name", str)
        kind = p.choice(self.kind, "kind", LAYER_KINDS)
        fields: dict[str, Any] = {}
        for name in ("k", "c", "oy", "ox", "fy", "fx", "sy", "sx", "groups"):
            fields[name] = p.integer(getattr(self, name), name, lo=1, hi=MAX_SIZE)
        fields["block"] = p.integer(self.block, "block", lo=0, hi=MAX_SIZE)
        for name in ("weight_bits", "state_bits", "input_bits", "output_bits"):
            fields[name] = p.integer(getattr(self, name), name, lo=1, hi=64)
        fields["state_words"] = p.integer(self.state_words, "state_words", lo=1, hi=64)
        fields["recurrent"] = p.integer(self.recurrent, "recurrent", lo=0, hi=MAX_SIZE**2)
        fields["stateful"] = p.flag(self.stateful, "stateful")
        inputs = self.inputs
        if isinstance(inputs, (list, np.ndarray)):
            inputs = tuple(inputs.tolist() if isinstance(inputs, np.ndarray) else inputs)
        if not isinstance(inputs, tuple) or not inputs:
            p.add(f"inputs: got {inputs!r}, expected a non-empty tuple of producer indices (-1: network input)")
        else:
            checked = tuple(p.integer(v, f"inputs[{i}]", lo=NETWORK_INPUT, hi=MAX_SIZE) for i, v in enumerate(inputs))
            if None not in checked:
                if len(set(checked)) != len(checked):
                    p.add(f"inputs: got {checked}, expected distinct producers. Fix: list each producer once")
                fields["inputs"] = checked
        if kind is not None and fields["k"] is not None and fields["c"] is not None:
            if kind in ("add", "pool") and fields["k"] != fields["c"]:
                p.add(f"{kind} channels: got K {fields['k']} and C {fields['c']}, expected K == C")
            if kind == "add" and isinstance(fields.get("inputs"), tuple) and len(fields["inputs"]) < 2:
                p.add("add inputs: got 1 input, expected at least 2. Fix: list the tensors that are summed")
            if kind != "add" and isinstance(fields.get("inputs"), tuple) and len(fields["inputs"]) != 1:
                p.add(f"{kind} inputs: got {len(fields['inputs'])}, expected 1 (only an add sums several tensors)")
            if kind == "linear" and (fields["oy"], fields["ox"], fields["fy"], fields["fx"]) != (1, 1, 1, 1):
                p.add("linear layer: oy, ox, fy, fx must be 1. Fix: describe a spatial layer as kind 'conv'")
            if fields["groups"] is not None and (fields["c"] % fields["groups"] or fields["k"] % fields["groups"]):
                p.add(f"groups: got {fields['groups']}, expected a divisor of C {fields['c']} and K {fields['k']}")
            if kind in ("add", "pool") and fields["recurrent"]:
                p.add(f"recurrent: got {fields['recurrent']} synapses on a {kind} layer, expected 0 (no weights)")
        p.raise_if_any("describe the layer with positive whole sizes and bit widths")
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    # -- sizes per time step, in bits --------------------------------------------------------------------
    @property
    def iy(self) -> int:
        """Input rows ``(OY - 1) SY + FY`` (no padding field, as in STEMS)."""
        return (self.oy - 1) * self.sy + self.fy

    @property
    def ix(self) -> int:
        """Input columns ``(OX - 1) SX + FX``."""
        return (self.ox - 1) * self.sx + self.fx

    @property
    def weighted(self) -> bool:
        """True for layers with weights: conv, linear, and neuron layers with recurrent synapses."""
        return self.kind in _WEIGHTED or self.recurrent > 0

    @property
    def weight_size(self) -> int:
        """Weights ``W_l`` in bits (0 for add, pool and a neuron layer without recurrent synapses)."""
        dense = self.k * (self.c // self.groups) * self.fy * self.fx if self.kind in _WEIGHTED else 0
        return (dense + self.recurrent) * self.weight_bits

    @property
    def state_size(self) -> int:
        """State ``S_l = K OY OX n_s b_s`` bits when stateful, else 0 (independent of ``T``)."""
        return self.k * self.oy * self.ox * self.state_words * self.state_bits if self.stateful else 0

    @property
    def output_size(self) -> int:
        """Output bits per step ``K OY OX b_out``."""
        return self.k * self.oy * self.ox * self.output_bits

    @property
    def input_size(self) -> int:
        """Bits per step of each input tensor as this layer sees it: ``C IY IX b_in`` (add: ``K OY OX b_in``)."""
        if self.kind in ("add", "neuron"):
            return self.c * self.oy * self.ox * self.input_bits
        return self.c * self.iy * self.ix * self.input_bits

    @property
    def ops(self) -> int:
        """Dense synaptic operations per step, recurrent ones included (0 for add and pool)."""
        dense = (
            self.k * (self.c // self.groups) * self.fy * self.fx * self.oy * self.ox if self.kind in _WEIGHTED else 0
        )
        return dense + self.recurrent


class _Tables:
    """Per-layer numpy vectors of a workload (bits per step unless said otherwise), computed once."""

    def __init__(self, layers: tuple[Layer, ...], time_steps: int) -> None:
        n = len(layers)
        self.weights = np.array([lay.weight_size for lay in layers], dtype=np.float64)
        self.states = np.array([lay.state_size for lay in layers], dtype=np.float64)
        self.outputs = np.array([lay.output_size for lay in layers], dtype=np.float64)
        self.inputs = np.array([lay.input_size for lay in layers], dtype=np.float64)
        self.ops = np.array([lay.ops for lay in layers], dtype=np.float64)
        self.rec_ops = np.array([lay.recurrent for lay in layers], dtype=np.float64)
        self.block = np.array([lay.block for lay in layers], dtype=np.int64)
        self.ox = np.array([lay.ox for lay in layers], dtype=np.float64)
        self.consumers: list[list[int]] = [[] for _ in range(n)]
        self.input_consumers: list[int] = []
        for i, lay in enumerate(layers):
            for src in lay.inputs:
                (self.input_consumers if src == NETWORK_INPUT else self.consumers[src]).append(i)
        # the last layer reading each tensor (liveness of layer outputs in layer order)
        self.last_use = np.array([max(c) if c else i for i, c in enumerate(self.consumers)], dtype=np.int64)


@dataclass(frozen=True)
class Workload:
    """Layers in topological order, ``T`` time steps per inference, a name.

    Raises:
        ConfigError: listing every problem: no layer, a non-:class:`Layer` entry, duplicate names, an
            input that is not an earlier layer, blocks that do not number ``0 .. N-1`` in layer order,
            a producer whose channels or bit width differ from what its consumer reads, ``T < 1``.
    """

    layers: tuple[Layer, ...]
    time_steps: int = 16
    name: str = "workload"

    def __post_init__(self) -> None:
        p = Problems(f"Workload {self.name!r}" if isinstance(self.name, str) else "Workload")
        p.instance(self.name, "name", str)
        t = p.integer(self.time_steps, "time_steps", lo=1, hi=MAX_SIZE)
        layers = self.layers
        if isinstance(layers, list):
            layers = tuple(layers)
        if not isinstance(layers, tuple) or not layers:
            p.add(f"layers: got {type(layers).__name__}, expected a non-empty tuple of Layer")
            p.raise_if_any("pass the layers in topological order")
        bad = [i for i, lay in enumerate(layers) if not isinstance(lay, Layer)]
        if bad:
            p.add(f"layers[{bad[0]}]: got a {type(layers[bad[0]]).__name__}, expected a Layer")
            p.raise_if_any("build every entry with pondlib.explore.Layer")
        seen: dict[str, int] = {}
        for i, lay in enumerate(layers):
            if lay.name in seen:
                p.add(
                    f"layers[{i}] name: got {lay.name!r}, already used by layers[{seen[lay.name]}] (names are unique)"
                )
            seen.setdefault(lay.name, i)
            for src in lay.inputs:
                if src != NETWORK_INPUT and src >= i:
                    p.add(
                        f"{lay.name} input: got layer {src}, expected an earlier layer (< {i}). "
                        "Fix: order the layers topologically"
                    )
                    continue
                if src == NETWORK_INPUT:
                    continue
                prod = layers[src]
                flat = prod.k * prod.oy * prod.ox  # a linear layer (or a neuron layer) reads the flattened map
                if prod.k != lay.c and not (lay.kind in ("linear", "neuron") and lay.c == flat):
                    p.add(f"{lay.name} channels: reads {lay.c} channels, but {prod.name} produces {prod.k}")
                if prod.output_bits != lay.input_bits:
                    p.add(
                        f"{lay.name} input_bits: got {lay.input_bits}, but {prod.name} emits "
                        f"{prod.output_bits}-bit outputs. Fix: make them equal"
                    )
        blocks = [lay.block for lay in layers]
        if blocks[0] != 0 or any(b - a not in (0, 1) for a, b in zip(blocks, blocks[1:])):
            p.add(f"blocks: got {blocks}, expected 0, 1, ..., N-1 in layer order (each block contiguous)")
        p.raise_if_any("describe the workload as layers in topological order, blocks numbered from 0")
        object.__setattr__(self, "layers", layers)
        object.__setattr__(self, "time_steps", t)

    # -- derived data ---------------------------------------------------------------------------------
    @cached_property
    def tables(self) -> _Tables:
        """Per-layer vectors (weights, states, outputs, inputs in bits per step; ops; consumers)."""
        return _Tables(self.layers, self.time_steps)

    @property
    def n_blocks(self) -> int:
        """Number of blocks ``N``."""
        return self.layers[-1].block + 1

    @property
    def blocks(self) -> tuple[tuple[int, ...], ...]:
        """Layer indices of each block."""
        out: list[list[int]] = [[] for _ in range(self.n_blocks)]
        for i, lay in enumerate(self.layers):
            out[lay.block].append(i)
        return tuple(tuple(b) for b in out)

    @property
    def total_weight_bits(self) -> int:
        """Sum of ``W_l`` (bits)."""
        return int(self.tables.weights.sum())

    @property
    def total_state_bits(self) -> int:
        """Sum of ``S_l`` (bits)."""
        return int(self.tables.states.sum())

    @property
    def input_bits(self) -> int:
        """Network input over all ``T`` steps, as its readers see it (bits)."""
        t = self.tables
        return int(sum(t.inputs[i] for i in t.input_consumers)) * self.time_steps

    @property
    def total_ops(self) -> int:
        """Dense synaptic operations over ``T`` steps."""
        return int(self.tables.ops.sum()) * self.time_steps

    def index(self, name: str) -> int:
        """The index of the layer called ``name`` (ConfigError when there is none)."""
        for i, lay in enumerate(self.layers):
            if lay.name == name:
                return i
        raise ConfigError(
            "layer name", value=name, limit=f"one of {[lay.name for lay in self.layers][:8]}...", where=self.name
        )

    def block_summary(self) -> list[dict[str, int]]:
        """Per block: ``layers``, ``weight_bits``, ``state_bits``, ``spike_bits_per_step`` (outputs of its
        layers), ``ops`` (over ``T``)."""
        t = self.tables
        rows = []
        for b, idx in enumerate(self.blocks):
            ii = list(idx)
            rows.append(
                {
                    "block": b,
                    "layers": len(ii),
                    "weight_bits": int(t.weights[ii].sum()),
                    "state_bits": int(t.states[ii].sum()),
                    "spike_bits_per_step": int(t.outputs[ii].sum()),
                    "ops": int(t.ops[ii].sum()) * self.time_steps,
                }
            )
        return rows

    # -- variants ---------------------------------------------------------------------------------------
    def with_stateless(
        self, blocks: Iterable[int] = (), layers: Iterable[int | str] = (), name: str | None = None
    ) -> Workload:
        """A copy in which the layers of ``blocks`` and the ``layers`` (indices or names) keep no state.

        This is STEMS's neuron-state removal: the layers still emit spikes and keep their partial sums
        inside a node, but forget ``V`` between steps, so their state traffic is zero. ``name``: the
        copy's name (default: this workload's).

        Raises:
            ConfigError: a block or layer that does not exist.

        Example:
            >>> w = sew_resnet18()
            >>> w.total_state_bits // w.with_stateless(blocks=[0, 1]).total_state_bits      # about 20x
            19
        """
        p = Problems(f"Workload {self.name!r}: with_stateless")
        chosen: set[int] = set()
        for b in _as_list(blocks, "blocks", p):
            b2 = p.integer(b, "block", lo=0, hi=self.n_blocks - 1)
            if b2 is not None:
                chosen.update(self.blocks[b2])
        for lay in _as_list(layers, "layers", p):
            if isinstance(lay, str):
                found = [i for i, x in enumerate(self.layers) if x.name == lay]
                if found:
                    chosen.update(found)
                else:
                    p.add(f"layer: got {lay!r}, expected a layer name of the workload")
            else:
                i = p.integer(lay, "layer", lo=0, hi=len(self.layers) - 1)
                if i is not None:
                    chosen.add(i)
        p.raise_if_any("name existing blocks (0 .. N-1) and layers (index or name)")
        new = tuple(dataclasses.replace(x, stateful=False) if i in chosen else x for i, x in enumerate(self.layers))
        return Workload(new, self.time_steps, self.name if name is None else name)

    def with_time_steps(self, time_steps: int) -> Workload:
        """The same layers over ``time_steps`` steps."""
        return Workload(self.layers, time_steps, self.name)

    @classmethod
    def from_table(cls, rows: Sequence[Mapping[str, Any]], time_steps: int = 16, name: str = "table") -> Workload:
        """A workload from a plain table: one mapping per layer with the fields of :class:`Layer`.

        ``inputs`` may hold layer names or indices and defaults to the previous row (the network input
        for the first row); ``name`` defaults to ``"L<i>"``. Unknown keys are refused, never ignored.

        Raises:
            ConfigError: listing every unknown key and every bad field of every row.
        """
        p = Problems(f"Workload {name!r}: table")
        if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Sequence) or not rows:
            p.add(f"rows: got {type(rows).__name__}, expected a non-empty sequence of mappings (one per layer)")
            p.raise_if_any("pass e.g. [{'kind': 'linear', 'k': 10, 'c': 64}]")
        allowed = {f.name for f in dataclasses.fields(Layer)}
        names: list[str] = []
        built: list[Layer] = []
        for i, row in enumerate(rows):
            if not isinstance(row, Mapping):
                p.add(f"row {i}: got a {type(row).__name__}, expected a mapping of Layer fields")
                continue
            unknown = sorted(str(k) for k in row if k not in allowed)
            if unknown:
                p.add(f"row {i}: unknown key(s) {unknown}; expected some of {sorted(allowed)}")
                continue
            missing = [k for k in ("kind", "k", "c") if k not in row]
            if missing:
                p.add(f"row {i}: missing key(s) {missing}; every row needs 'kind', 'k' and 'c'")
                continue
            kw = dict(row)
            kw.setdefault("name", f"L{i}")
            raw_inputs = kw.get("inputs", (i - 1,) if i else (NETWORK_INPUT,))
            if isinstance(raw_inputs, (str, int)):
                raw_inputs = (raw_inputs,)
            resolved = []
            for src in raw_inputs if isinstance(raw_inputs, (list, tuple)) else [raw_inputs]:
                if isinstance(src, str):
                    if src in names:
                        resolved.append(names.index(src))
                    else:
                        p.add(f"row {i} inputs: got {src!r}, expected the name of an earlier row")
                        resolved.append(NETWORK_INPUT)
                else:
                    resolved.append(src)
            kw["inputs"] = tuple(resolved)
            try:
                built.append(Layer(**kw))
                names.append(built[-1].name)
            except ConfigError as err:
                p.add(f"row {i}: {err}")
        p.raise_if_any("fix the rows listed above")
        return cls(tuple(built), time_steps, name)

    def __repr__(self) -> str:
        return (
            f"Workload({self.name!r}, {len(self.layers)} layers, {self.n_blocks} blocks, T={self.time_steps}, "
            f"weights {self.total_weight_bits} bit, states {self.total_state_bits} bit)"
        )


def _as_list(values: Any, name: str, p: Problems) -> list:
    if isinstance(values, (int, np.integer, str)):
        return [values]
    if isinstance(values, Iterable) and not isinstance(values, (bytes, Mapping)):
        return list(values)
    p.add(f"{name}: got {type(values).__name__}, expected a sequence")
    return []


# -- SEW-ResNet-18 (docs/EXPLORE.md) --------------------------------------------------------------------
#: (K, C, OY = OX, F) of every convolution of SEW-ResNet-18 per block; each block ends with
#: add(second 3x3, first 3x3) and a 2x2 stride-2 max-pool.
_SEW_BLOCKS: tuple[tuple[tuple[int, int, int, int], ...], ...] = (
    ((64, 2, 128, 1), (64, 64, 128, 3), (64, 64, 128, 3)),
    ((64, 64, 64, 3), (64, 64, 64, 3)),
    ((64, 64, 32, 3), (64, 64, 32, 3)),
    ((64, 64, 16, 3), (64, 64, 16, 3)),
    ((128, 64, 8, 1), (128, 128, 8, 3), (128, 128, 8, 3)),
    ((128, 128, 4, 3), (128, 128, 4, 3)),
    ((128, 128, 2, 3), (128, 128, 2, 3)),
)


def sew_resnet18(
    time_steps: int = 16,
    *,
    stateless_blocks: Iterable[int] = (),
    weight_bits: int = 4,
    state_bits: int = 12,
    input_bits: int = 4,
) -> Workload:
    """SEW-ResNet-18 for CIFAR10-DVS (``docs/EXPLORE.md``): 30 layers in 7 blocks, input 2 x 128 x 128.

    Every convolution is a PLIF layer (one ``state_bits`` state word per neuron, 1-bit spikes,
    ``weight_bits`` weights); the first convolution reads ``input_bits``-bit input (MACs), every other
    one spikes (SOPs). Each block ends with ``add(second 3x3, first 3x3)`` and a 2x2 stride-2 max-pool
    (1-bit, stateless). Layer ids are those of the table in ``docs/EXPLORE.md``.

    Args:
        time_steps: ``T``.
        stateless_blocks: blocks whose convolutions keep no state; ``(0, 1)`` is the "5PLIF" (SEW-5)
            variant of STEMS's neuron-state optimization.
        weight_bits, state_bits, input_bits: bit widths.

    Example:
        >>> w = sew_resnet18()
        >>> [lay.name for lay in w.layers[:5]], w.layers[3].inputs
        (['conv0', 'conv1', 'conv2', 'add3', 'pool4'], (2, 1))
        >>> w.name, sew_resnet18(stateless_blocks=[0, 1]).name
        ('SEW-ResNet-18 (7PLIF)', 'SEW-ResNet-18 (5PLIF)')
    """
    p = Problems("sew_resnet18")
    requested = _as_list(stateless_blocks, "stateless_blocks", p)
    stateless = {p.integer(b, "stateless block", lo=0, hi=len(_SEW_BLOCKS) - 1) for b in requested}
    p.raise_if_any("pass block numbers 0 .. 6")
    layers: list[Layer] = []
    prev = NETWORK_INPUT
    for b, convs in enumerate(_SEW_BLOCKS):
        first3 = None
        for k, c, size, f in convs:
            i = len(layers)
            first = prev == NETWORK_INPUT
            layers.append(
                Layer(
                    f"conv{i}",
                    "conv",
                    k,
                    c,
                    size,
                    size,
                    f,
                    f,
                    inputs=(prev,),
                    block=b,
                    stateful=b not in stateless,
                    weight_bits=weight_bits,
                    state_bits=state_bits,
                    input_bits=input_bits if first else 1,
                )
            )
            if f == 3 and first3 is None:
                first3 = i
            prev = i
        k, size = convs[-1][0], convs[-1][2]
        i = len(layers)
        layers.append(Layer(f"add{i}", "add", k, k, size, size, inputs=(prev, first3), block=b))
        layers.append(Layer(f"pool{i + 1}", "pool", k, k, size // 2, size // 2, 2, 2, 2, 2, inputs=(i,), block=b))
        prev = i + 1
    n_plif = len(_SEW_BLOCKS) - len(stateless)
    return Workload(tuple(layers), time_steps, f"SEW-ResNet-18 ({n_plif}PLIF)")
