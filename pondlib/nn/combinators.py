"""Combinators: :class:`Sequential` chains modules, :class:`Residual` adds a block's input to its output.

Both are immutable pytrees of their children. Their state is the tuple of the children's states and
their record merges the children's records under ``"<i>_<ClassName>/"`` prefixes.

Example:
    >>> import jax, jax.numpy as jnp
    >>> net = Sequential(Linear(4, 3, key=jax.random.PRNGKey(0)), LIF(3),
    ...                  Residual(Linear(3, 3, key=jax.random.PRNGKey(1)), LIF(3)))
    >>> out, state, rec = net(jnp.ones((2, 10, 4)), record=True)
    >>> out.shape, sorted(rec)[:3]
    ((2, 10, 3), ['1_LIF/isyn', '1_LIF/spikes', '1_LIF/vmem'])
    >>> sorted(rec)[3]
    '2_Residual/1_LIF/isyn'
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax

from pondlib.errors import GraphError
from pondlib.graph import AliasConnection, GraphHolder, connect_modules
from pondlib.nn.base import check_batch_shape, check_module, check_sizes, evolve_time_major
from pondlib.nn.fused import chain_scan, fusible
from pondlib.nn.integer_chain import run as integer_chain_run
from pondlib.nn.lif import LIF
from pondlib.nn.linear import Linear
from pondlib.validate import check_bool

__all__ = ["Sequential", "Residual", "linear_lif_pairs"]


def _child_names(layers: tuple) -> list[str]:
    return [f"{i}_{type(m).__name__}" for i, m in enumerate(layers)]


class Sequential(eqx.Module):
    """Modules applied one after the other: ``y = f_n(... f_1(x))``; state is a tuple of their states.

    ``Sequential(a, b)`` and ``Sequential([a, b])`` are the same.

    ``fuse=True`` runs a chain of only ``Linear`` and ``LIF`` modules in one time loop, records
    included (:func:`pondlib.nn.fused.chain_scan`): no ``(T, *batch, N)`` stack is written between
    modules, which makes large-batch inference up to twice as fast on CPU. Its outputs equal the
    layer-by-layer path's up to the rounding of the products (one row per step instead of all ``T *
    B`` rows at once: XLA's CPU kernels sum in an order that depends on the row count, a difference of
    an ulp or so in a current that can flip a spike exactly at threshold); with ``record=True`` the
    same loop emits the records, so output and records agree. Under ``jax.grad`` the forward and its
    gradients are those of the layer-by-layer path. Default True; ``fuse=False`` runs each module's own
    ``evolve_tm`` one after the other (the products over all steps at once). With ``fuse``, layers that
    each describe themselves as an integer ``Linear -> LIF`` pair (a ``chain_pair()`` hook, e.g. a
    device-aware twin's layers) run without records as one compiled loop per sample on CPU, trained
    through its own adjoint (:mod:`pondlib.nn.integer_chain`); the same spikes and states as the
    layer-by-layer path for whole-number inputs.

    Raises:
        GraphError: no module, an argument that is not a pondlib.nn module (``Sequential(1, 2)``, a class
            instead of an instance), consecutive modules whose sizes do not chain (naming both), or a
            ``fuse`` that is not a bool.
    """

    layers: tuple
    fuse: bool = eqx.field(static=True)

    def __init__(self, *modules: Any, fuse: bool = True) -> None:
        self.fuse = check_bool(fuse, "fuse", where="Sequential", error=GraphError)
        if len(modules) == 1 and isinstance(modules[0], (list, tuple)):
            modules = tuple(modules[0])
        if not modules:
            raise GraphError(
                "Sequential needs at least one module",
                value=0,
                limit=">= 1",
                fix="pass modules, e.g. Sequential(Linear(...), LIF(...))",
            )
        for i, m in enumerate(modules):
            check_module(m, f"module {i}", "Sequential")
        for i in range(1, len(modules)):
            check_sizes(
                modules[i - 1].size_out,
                modules[i].size_in,
                f"Sequential: {i - 1}_{type(modules[i - 1]).__name__} -> {i}_{type(modules[i]).__name__}",
            )
        self.layers = tuple(modules)

    @property
    def size_in(self) -> int:
        """Input channels of the first module."""
        return self.layers[0].size_in

    @property
    def size_out(self) -> int:
        """Output channels of the last module."""
        return self.layers[-1].size_out

    def __getitem__(self, i: int) -> Any:
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)

    def init_state(self, batch_shape: tuple[int, ...] = ()) -> tuple:
        """The tuple of the children's zero states."""
        batch_shape = check_batch_shape(batch_shape, "Sequential")
        return tuple(m.init_state(batch_shape) for m in self.layers)

    def evolve_tm(self, x: jax.Array, state: tuple, record: bool):
        """Time-major evolution through every child (layer by layer; the float model has no
        inter-layer delay, so this equals stepping the whole network one time step at a time).

        With ``fuse``, a chain of only ``Linear`` and ``LIF`` modules runs in one time loop, records
        included (:func:`pondlib.nn.fused.chain_scan`; see the class docstring)."""
        if not isinstance(state, tuple) or len(state) != len(self.layers):
            raise TypeError(f"expected a tuple of {len(self.layers)} states")
        if self.fuse and fusible(self.layers):
            if not record:
                y, new_state = chain_scan(self.layers, x, state)
                return y, new_state, {}
            y, new_state, recs = chain_scan(self.layers, x, state, record=True)
            rec_fused: dict = {}
            for name, r in zip(_child_names(self.layers), recs):
                if r is not None:
                    rec_fused.update({f"{name}/vmem": r[1], f"{name}/isyn": r[2], f"{name}/spikes": r[0]})
            return y, new_state, rec_fused
        if self.fuse and not record:  # layers that are integer pairs: one compiled loop (pondlib.nn.integer_chain)
            out = integer_chain_run(self.layers, x, state)
            if out is not None:
                return out[0], out[1], {}
        rec_all: dict = {}
        new_states = []
        for name, m, s in zip(_child_names(self.layers), self.layers, state):
            x, s, rec = m.evolve_tm(x, s, record)
            new_states.append(s)
            rec_all.update({f"{name}/{k}": v for k, v in rec.items()})
        return x, tuple(new_states), rec_all

    def __call__(self, x: Any, state: tuple | None = None, record: bool = False):
        """``(output, state, record)`` for input (T, N_in) or (B, T, N_in)."""
        return evolve_time_major(self, x, state, record)

    evolve = __call__

    def as_graph(self, name: str | None = None) -> GraphHolder:
        """The children's graphs connected in order, inside one :class:`~pondlib.graph.GraphHolder`."""
        prefix = f"{name}/" if name else ""
        graphs = [m.as_graph(prefix + n) for n, m in zip(_child_names(self.layers), self.layers)]
        for a, b in zip(graphs[:-1], graphs[1:]):
            connect_modules(a, b)
        return GraphHolder(list(graphs[0].input_nodes), list(graphs[-1].output_nodes), name or "Sequential", self)


class Residual(eqx.Module):
    """A residual block: ``y = block(x) + x`` where ``block`` is the modules in sequence.

    The block must map N channels to N channels. On Xylo the sum becomes an *alias*: the spikes of
    the neurons feeding the block also leave through the block's output neurons.

    Raises:
        GraphError: as :class:`Sequential`, and when the block changes the number of channels.
    """

    block: Sequential

    def __init__(self, *modules: Any) -> None:
        block = Sequential(*modules)
        if block.size_in != block.size_out:
            raise GraphError(
                "Residual block must keep the size",
                value=block.size_out,
                limit=block.size_in,
                where="Residual",
                fix="make the block's output size equal its input size",
            )
        self.block = block

    @property
    def size_in(self) -> int:
        """Channels in (= out)."""
        return self.block.size_in

    @property
    def size_out(self) -> int:
        """Channels out (= in)."""
        return self.block.size_out

    def init_state(self, batch_shape: tuple[int, ...] = ()) -> tuple:
        """The block's state."""
        return self.block.init_state(batch_shape)

    def evolve_tm(self, x: jax.Array, state: tuple, record: bool):
        """``block(x) + x`` time-major."""
        y, state, rec = self.block.evolve_tm(x, state, record)
        return y + x, state, rec

    def __call__(self, x: Any, state: tuple | None = None, record: bool = False):
        """``(output, state, record)`` for input (T, N) or (B, T, N)."""
        return evolve_time_major(self, x, state, record)

    evolve = __call__

    def as_graph(self, name: str | None = None) -> GraphHolder:
        """The block's graph plus an :class:`~pondlib.graph.AliasConnection` from the block's input
        nodes to its output nodes."""
        name = name or "Residual"
        g = self.block.as_graph(name)
        AliasConnection(list(g.input_nodes), list(g.output_nodes), f"{name}/alias", self)
        return GraphHolder(list(g.input_nodes), list(g.output_nodes), name, self)


def linear_lif_pairs(net: Any, where: str, *, one_synapse: bool = False, why: str = "") -> list[tuple[Any, Any]]:
    """The ``(Linear, LIF)`` pairs of ``nn.Sequential(Linear, LIF, Linear, LIF, ...)``: the chains a
    device-aware twin models, one fused layer per pair.

    Args:
        net: the network (not modified). where: the caller, for messages.
        one_synapse: also refuse a LIF with several synapses per neuron or with recurrent weights
            (``why`` says why, as the fix).

    Raises:
        GraphError: ``net`` is not a ``Sequential`` of such pairs (the message lists its layers), or a LIF
            breaks ``one_synapse``.

    Example:
        >>> import jax
        >>> net = Sequential(Linear(3, 2, key=jax.random.PRNGKey(0)), LIF(2))
        >>> [type(m).__name__ for pair in linear_lif_pairs(net, "example") for m in pair]
        ['Linear', 'LIF']
    """
    layers = list(net.layers) if isinstance(net, Sequential) else []
    pairs = [(layers[i], layers[i + 1]) for i in range(0, len(layers) - 1, 2)]
    ok = len(layers) >= 2 and len(layers) % 2 == 0
    ok = ok and all(isinstance(lin, Linear) and isinstance(lif, LIF) for lin, lif in pairs)
    if not ok:
        raise GraphError(
            "device-aware network layers",
            value=" -> ".join(type(m).__name__ for m in layers) if layers else type(net).__name__,
            limit="nn.Sequential(Linear, LIF, Linear, LIF, ...)",
            where=where,
            fix="build the network as Linear -> LIF pairs (Residual and other modules are not modelled)",
        )
    for i, (_, lif) in enumerate(pairs):
        if one_synapse and (lif.n_synapses != 1 or lif.w_rec is not None):
            raise GraphError(
                f"{2 * i + 1}_LIF synapses / recurrence",
                value=f"{lif.n_synapses} synapses, w_rec {'set' if lif.w_rec is not None else 'None'}",
                limit="one synapse per neuron, no recurrent weights",
                where=where,
                fix=why or "use nn.LIF(N) without w_rec",
            )
    return pairs
