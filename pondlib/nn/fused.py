r"""One time loop for a whole chain of ``Linear`` and ``LIF`` modules (inference), with the layer-by-layer
adjoint for training.

:class:`~pondlib.nn.Sequential` runs its children one after the other: every ``Linear`` computes its
product for all ``T`` steps at once and every ``LIF`` scans over time, so between two modules a full
``(T, *batch, N)`` stack of currents or spikes is written and read back. For ``Linear(64 -> 256) -> LIF
-> Linear(256 -> 10) -> LIF`` at ``B = 256``, ``T = 200`` two such stacks hold 52 MB each; XLA's CPU
runtime allocates them afresh on every call, glibc maps buffers of that size from the kernel each
time, and every page faults on first touch. A profile of the jitted forward pass
(``benchmarks/inference.py``) showed these two stacks, not the arithmetic, dominate inference time.

:func:`chain_scan` evaluates the same equations step by step for the whole chain inside one
:func:`jax.lax.scan`: at step ``t`` the input row ``x[t]`` (``*batch, N_in``) passes through every module,

.. math::

    h_0 = x[t], \qquad
    h_{j+1} = h_j W_j + b_j \ \text{(Linear)} \quad\text{or}\quad
    h_{j+1} = s_j[t] = \mathrm{LIF}_j(h_j, \mathrm{state}_j[t-1]) \ \text{(LIF)},

with :math:`\mathrm{LIF}_j` the step that every LIF loop calls (:func:`pondlib.nn.lif_core.lif_step_flat`),
so only the per-step rows ``(*batch, N)`` and the output stack ``(T, *batch, N_out)`` exist (with
``record=True`` the loop also emits every LIF layer's spikes, membrane and currents, so the records and
the output of a recorded call come from the same loop and agree). The
operations are those of the layer-by-layer path (the same products, row by row, and the same LIF step);
the one difference is the dot kernel XLA picks for a product of one chunk's rows (below) instead of all
``T * B`` rows, whose summation order may differ: currents can differ by an ulp, and a spike exactly at the
threshold can flip (``tests/nn/test_fused.py`` checks equality of the spikes on its networks). Neither
order is the more exact one; :class:`~pondlib.nn.Sequential` fuses by default (``fuse=True``) and
``Sequential(..., fuse=False)`` runs the modules one after the other.

Chunks: the loop runs ``C`` steps per iteration. Inside one iteration every ``Linear`` computes its
product for the chunk's ``C * B`` rows at once and every LIF's ``C`` steps are unrolled, so XLA fuses the
chunk's elementwise LIF updates into a few kernels instead of launching each step's kernels on their
own. On XLA's CPU runtime a per-step kernel over a ``(256, 256)`` state is split across the cores, and
the hand-over costs more than the arithmetic: at ``B = 256`` on the 2-core development machine the
network above runs about 1.6x faster with ``C = 4`` than step by step. The price is recomputation:
XLA evaluates the unrolled updates separately for each output it keeps (each step's spikes, the last
state), about ``C (C + 1) / 2 + C`` steps' arithmetic per ``C`` steps, which outweighs the saving for
small states (few kernels to save) and large ones (arithmetic-bound). :func:`chunk_steps` picks ``C``
from the state size per step (measured with ``benchmarks/inference.py``): 1 up to ``2**14`` values
(``B <= 64`` at 256 neurons), 4 up to ``2**16`` (``B <= 256``), 2 above. The last ``T mod C`` steps
run as one shorter chunk. Chunking changes only which rows each product sees at once, so the
results are those of the step-by-step loop up to the products' rounding.

Event-driven inference. On CPU, for a float32 chain called without ``record``, the default path
(``"auto"``) runs the whole chain as one compiled kernel instead (:func:`pondlib.nn.native.chain_forward`:
``pondlib/nn/csrc/chain.c``, built by the system C compiler on first use and cached on disk; where no
compiler is found, :mod:`pondlib.nn.chain_kernels` compiled by numba, and then recurrent chains keep the
XLA loop, whose batched product beats numba's). Tiles of 8 samples run on the cores, each tile through
all ``T`` steps with its state in cache, and each product is a sum over the non-zero entries of its input
row only (the active rows of ``W`` gathered, blocks of 64 outputs kept in registers) where the row is
sparse, over all rows where it is dense, the same value either way. Spike inputs are mostly zeros (5 %
per step on ``benchmarks/inference.py``, about 13 % of the hidden spikes, 43 % in its recurrent variant),
so most of the dense product's work is skipped; ``benchmarks/sparsity.py`` measures the work against the
XLA loop from 1 % to 50 % input density. The kernel sums each product in ascending input order, the XLA
loop in its own blocked order: the spikes agree (on the tests' networks and the benchmarks), the states
to float32 rounding (``tests/nn/test_speed_paths.py``); the C and the numba builds agree bit for bit.
The path is chosen when the function is traced, by ``chain_scan(..., path=)`` or
:func:`inference_path` (the user's hint: ``"sparse"`` or ``"dense"``, ``"xla"`` for the XLA loop).

Under :func:`jax.grad` the fused loop is not used: the custom VJP's forward pass runs the chain layer
by layer (the ``Linear`` products over all steps, the LIF layers through the hand adjoint of
:mod:`pondlib.nn.adjoint`) and its backward pass runs their adjoints in reverse order. On CPU (the C build
of the kernels) a chain ``Linear, LIF, Linear, LIF, ...`` of non-recurrent float32 layers trained without
records runs as one loop per sample instead (:mod:`pondlib.nn.train_chain`: each current computed from
the non-zero inputs, no stack of currents or hidden spikes stored, and above 16 MiB not even the LIF
residuals, which the backward pass then recomputes per sample), and elsewhere in a chain each ``Linear``
directly before a non-recurrent ``LIF`` trains with it as one kernel (:mod:`pondlib.nn.train_pair`).
Their currents are the inference kernel's sums (the forward pass gives its spikes bit for bit), added in
another order than XLA's product, so gradients agree with the layer-by-layer path to float32 rounding
(``tests/nn/test_lif_c.py``); elsewhere they are the layer-by-layer path's, operation for operation. A
record's cotangents enter its layer's adjoint (a LIF's spike cotangent is the sum of the next module's and
its record's).

Example:
    >>> import jax, jax.numpy as jnp
    >>> from pondlib.nn import LIF, Linear
    >>> layers = (Linear(4, 3, key=jax.random.PRNGKey(0)), LIF(3))
    >>> x = 2.0 * jnp.ones((5, 2, 4))                      # (T, B, N_in), time-major
    >>> states = tuple(m.init_state((2,)) for m in layers)
    >>> y, new = chain_scan(layers, x, states)
    >>> y_ref, _, _ = layers[1].evolve_tm(layers[0].evolve_tm(x, None, False)[0], states[1], False)
    >>> y.shape, bool(jnp.allclose(y, y_ref))
    ((5, 2, 3), True)
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import CustomVJPPrimal, SymbolicZero

from pondlib.errors import GraphError
from pondlib.nn import native
from pondlib.nn.adjoint import _bwd as _lif_bwd
from pondlib.nn.adjoint import _fwd as _lif_fwd
from pondlib.nn.adjoint import broadcast_state
from pondlib.nn.base import scan_steps
from pondlib.nn.lif import LIF
from pondlib.nn.lif_core import FlatLIFParameters, lif_step_flat, unflatten_synapses
from pondlib.nn.linear import Linear
from pondlib.nn.train_chain import chain_bwd as train_chain_bwd
from pondlib.nn.train_chain import chain_fwd as train_chain_fwd
from pondlib.nn.train_chain import eligible as train_chain_eligible
from pondlib.nn.train_pair import dense as pair_dense
from pondlib.nn.train_pair import eligible as pair_eligible
from pondlib.nn.train_pair import pair_bwd, pair_fwd
from pondlib.validate import check_choice, check_int

__all__ = ["chain_scan", "chunk_steps", "fusible", "inference_path", "PATHS"]

#: The inference paths of :func:`chain_scan` (module docstring, "Event-driven inference"): ``"auto"``
#: the compiled kernel on CPU, each row's product sparse or dense by its measured density (the XLA loop
#: for recurrent chains when the kernel is numba's); ``"sparse"`` / ``"dense"`` the kernel
#: with every product gathered / dense; ``"xla"`` the XLA loop.
PATHS = ("auto", "sparse", "dense", "xla")
_default_path = ["auto"]


def _check_path(path: Any) -> str:
    return check_choice(path, "path", PATHS, where="chain_scan", error=GraphError, fix=f"pass one of {list(PATHS)}")


@contextmanager
def inference_path(path: str) -> Iterator[str]:
    """Within the block, :func:`chain_scan` (so ``Sequential(...)(x)``) takes ``path`` (one of
    :data:`PATHS`) unless a call names its own: the user's hint of how sparse the spikes are. It acts
    when a function is traced; entering and leaving a block that changes the path (outside a trace)
    drop JAX's cache of compiled functions, so that calls retrace with the path in force (the next
    call of each compiles again); inside a traced function the block sets the path of that trace.

    Example:
        >>> import jax, jax.numpy as jnp
        >>> layers = (Linear(4, 3, key=jax.random.PRNGKey(0)), LIF(3))
        >>> x, states = jnp.ones((5, 2, 4)), tuple(m.init_state((2,)) for m in layers)
        >>> with inference_path("xla"):
        ...     y_xla, _ = chain_scan(layers, x, states)
        >>> y, _ = chain_scan(layers, x, states)
        >>> bool((y == y_xla).all())
        True
    """
    path = _check_path(path)
    previous = _default_path[0]
    _set_default(path)
    try:
        yield path
    finally:
        _set_default(previous)


def _set_default(path: str) -> None:
    """Make ``path`` the default; when it changes, drop JAX's compiled functions (the plain call
    ``net(x)`` is compiled once and cached, and would otherwise keep the path of its first trace)."""
    if _default_path[0] != path:
        _default_path[0] = path
        if not isinstance(jnp.zeros(()), jax.core.Tracer):  # never from inside a trace (it would recompile)
            jax.clear_caches()


def fusible(layers: Any) -> bool:
    """True when ``layers`` is a chain that :func:`chain_scan` runs: at least two modules, each a
    :class:`~pondlib.nn.Linear` or a :class:`~pondlib.nn.LIF`, with at least one LIF.

    Example:
        >>> import jax
        >>> fusible((Linear(2, 3, key=jax.random.PRNGKey(0)), LIF(3)))
        True
        >>> fusible((LIF(3),))
        False
    """
    layers = tuple(layers)
    return len(layers) >= 2 and all(type(m) in (Linear, LIF) for m in layers) and any(type(m) is LIF for m in layers)


def _linear(x: jax.Array, weight: jax.Array, bias: jax.Array | None) -> jax.Array:
    """``x (..., n_in) @ W + b`` as one 2-D product (the operation of :meth:`Linear.evolve_tm`)."""
    n_in, n_out = weight.shape
    y = (x.reshape(-1, n_in) @ weight).reshape(x.shape[:-1] + (n_out,))
    return y if bias is None else y + bias


def _split(layers: tuple, states: tuple) -> tuple[tuple, tuple, tuple]:
    """Static specs, parameter arrays and states of the chain (LIF decays computed by
    :meth:`LIF.parameters`, outside the custom VJP, so autodiff reaches the time constants)."""
    specs, params = [], []
    for m in layers:
        if type(m) is Linear:
            specs.append(("linear",))
            params.append((m.weight, m.bias))
        else:
            p = m.parameters()
            specs.append(("lif", p.max_spikes, p.surrogate))
            params.append((p.alpha, p.beta, p.threshold, p.bias, p.w_rec))
    return tuple(specs), tuple(params), tuple(states)


def chain_scan(
    layers: tuple, x: jax.Array, states: tuple, record: bool = False, chunk: int | None = None, path: str | None = None
) -> Any:
    """Run a :func:`fusible` chain on time-major input in one time loop.

    Args:
        layers: the modules (``Linear`` and ``LIF``), in order.
        x: (T, *batch, N_in) float32, time-major.
        states: one state per module (``None`` for a Linear, a :class:`~pondlib.nn.LIFState` whose
            leaves have the batch shape of ``x``), as :meth:`Sequential.init_state` builds them.
        record: also return, per module, the LIF records ``(spikes (T, *batch, N), vmem (T, *batch, N),
            isyn (T, *batch, N, k))`` (``None`` for a Linear), emitted by the same loop.
        chunk: time steps per loop iteration (a positive int); default :func:`chunk_steps` of the batch
            size times the widest LIF layer. Any value gives the same results up to the products'
            rounding (module docstring).
        path: one of :data:`PATHS` (default: the one :func:`inference_path` set, else ``"auto"``): the
            compiled event-driven kernel (``"auto"``, ``"sparse"``, ``"dense"``: the same results) on
            CPU for a float32 chain without ``record``, else the XLA loop (``"xla"``, and always off CPU,
            under differentiation or with ``record``).

    Returns:
        ``(y, new_states)``, or ``(y, new_states, records)`` with ``record``: y (T, *batch, N_out) and
        the states after the last step; equal to running the modules' ``evolve_tm`` one after the other
        up to the rounding of the products (module docstring).
    """
    specs, params, states = _split(tuple(layers), tuple(states))
    if chunk is not None:
        chunk = check_int(chunk, "chunk", lo=1, where="chain_scan", fix="pass a number of time steps >= 1, or None")
    else:
        widest = max(p[1].shape[0] * p[1].shape[1] for spec, p in zip(specs, params) if spec[0] == "lif")
        chunk = chunk_steps(math.prod(x.shape[1:-1]) * widest)
    path = _check_path(_default_path[0] if path is None else path)
    y, new_states, recs = _chain((specs, bool(record), int(chunk), path), params, x, states)
    return (y, new_states, recs) if record else (y, new_states)


def chunk_steps(elements: int) -> int:
    """Time steps per iteration of the fused loop for LIF layers of ``elements`` state values per step
    (batch size times the widest layer's ``N * k``); see the module docstring, "Chunks".

    Example:
        >>> [chunk_steps(32 * 256), chunk_steps(256 * 256), chunk_steps(1024 * 256)]
        [1, 4, 2]
    """
    if elements <= 1 << 14:
        return 1
    return 4 if elements <= 1 << 16 else 2


def _chunk(specs: tuple, params: tuple, record: bool, carry: tuple, xk: jax.Array) -> tuple[tuple, tuple]:
    """``C = xk.shape[0]`` steps of the chain: each Linear as one product over the chunk's ``C * B`` rows,
    each LIF as ``C`` calls of :func:`pondlib.nn.lif_core.lif_step_flat` unrolled here (the step of
    :func:`pondlib.nn.adjoint.lif_scan`). Returns the new carry and ``(y (C, *batch, N_out), rows)``,
    ``rows`` one entry per module: the LIF's ``(spikes, vmem, isyn)`` stacks of the chunk with ``record``,
    else None."""
    h, new, rows = xk, [], []
    for spec, p, c in zip(specs, params, carry):
        if spec[0] == "linear":
            h = _linear(h, p[0], p[1])
            new.append(None)
            rows.append(None)
            continue
        _, cap, surrogate = spec
        alpha, beta, threshold, bias, w_rec = p
        n, k = beta.shape
        params = FlatLIFParameters(alpha, beta.reshape(n * k), threshold, bias, w_rec, cap, surrogate)
        i, v, s = c
        out_s, out_v, out_i = [], [], []
        for t in range(h.shape[0]):
            r = lif_step_flat(params, i, v, s, h[t])
            i, v, s = r.isyn, r.vmem, r.spikes
            out_s.append(s)
            if record:
                out_v.append(v)
                out_i.append(i)
        new.append((i, v, s))
        h = jnp.stack(out_s)
        rows.append((h, jnp.stack(out_v), jnp.stack(out_i)) if record else None)
    return tuple(new), (h, tuple(rows))


def _kernel_eligible(static: tuple, params: tuple, x: jax.Array, states: tuple) -> bool:
    """Whether the compiled kernel may run the chain: not ``record``, not the ``"xla"`` path, on the
    ``"auto"`` path no recurrent layer unless the kernel is the C build, a non-empty float32 input and
    float32 parameters and states, fewer than 2^31 parameters in all, and the chain kernel available
    (:func:`pondlib.nn.native.chain_eligible`)."""
    specs, record, _, path = static
    if record or path == "xla" or x.size == 0:
        return False
    recurrent = any(spec[0] == "lif" and p[4] is not None for spec, p in zip(specs, params))
    if path == "auto" and recurrent and native.chain_engine() != "c":
        return False  # numba's recurrent product is slower than XLA's batched one; the C build's is not
    arrays = jax.tree_util.tree_leaves((params, states))
    if sum(a.size for a in arrays) >= 2**31 - 2**24:
        return False
    return native.chain_eligible(x, *arrays)


def _kernel_layout(specs: tuple, params: tuple) -> tuple[np.ndarray, list, int]:
    """The kernel's module table ``ops`` (n_ops, 8) int32, the parameter pieces in the order of their
    offsets (flattened by the caller) and the per-sample state size (layout in
    :mod:`pondlib.nn.chain_kernels`)."""
    ops, pieces, offset, s_off = [], [], 0, 0
    for spec, p in zip(specs, params):
        if spec[0] == "linear":
            weight, bias = p
            n_in, n_out = weight.shape
            c_off = -1 if bias is None else offset + n_in * n_out
            ops.append([0, n_in, n_out, offset, c_off, 0, 0, 0])
            pieces += [weight] + ([] if bias is None else [bias])
            offset += n_in * n_out + (0 if bias is None else n_out)
            continue
        alpha, beta, threshold, bias, w_rec = p
        n, k = beta.shape
        wrec_off = -1 if w_rec is None else offset + 3 * n + n * k + 1
        ops.append([1, n, k, offset, wrec_off, s_off, 0, 0])
        pieces += [alpha, beta, threshold, bias, jnp.full((1,), spec[1], jnp.float32)]
        pieces += [] if w_rec is None else [w_rec]
        offset += 3 * n + n * k + 1 + (0 if w_rec is None else n * n * k)
        s_off += n * k + 2 * n
    return np.asarray(ops, np.int32), pieces, s_off


def _kernel_chain(static: tuple, params: tuple, x: jax.Array, states: tuple) -> tuple[jax.Array, tuple, tuple]:
    """The chain by :func:`pondlib.nn.native.chain_forward`: the batch folded into one axis, every LIF
    state laid side by side per sample; the outputs as :func:`_xla_chain` returns them."""
    specs, _, _, path = static
    batch = x.shape[1:-1]
    rows = math.prod(batch)
    ops, pieces, size = _kernel_layout(specs, params)
    prm = jnp.concatenate([jnp.ravel(a) for a in pieces])
    flat = []
    for spec, p, st in zip(specs, params, states):
        if spec[0] == "lif":
            n, k = p[1].shape
            flat += [a.reshape(rows, -1) for a in broadcast_state(st, batch, n, k)]
    state0 = jnp.concatenate(flat, axis=1)
    n_out = params[-1][0].shape[1] if specs[-1][0] == "linear" else params[-1][1].shape[0]
    y, state = native.chain_forward(x.reshape(x.shape[0], rows, -1), prm, ops, state0, n_out, path)
    out_states, at = [], 0
    for spec, p, st in zip(specs, params, states):
        if spec[0] == "linear":
            out_states.append(st)
            continue
        n, k = p[1].shape
        parts = [state[:, at + lo : at + hi].reshape(batch + (hi - lo,)) for lo, hi in ((0, n * k), (n * k, n * k + n))]
        spikes = state[:, at + n * k + n : at + n * k + 2 * n].reshape(batch + (n,))
        out_states.append(type(st)(unflatten_synapses(parts[0], k), parts[1], spikes))
        at += n * k + 2 * n
    return y.reshape(x.shape[:-1] + (n_out,)), tuple(out_states), tuple(None for _ in specs)


def _concat(parts: list) -> Any:
    """Join the per-part outputs (pytrees of (steps, ...) stacks) along time."""
    return parts[0] if len(parts) == 1 else jax.tree_util.tree_map(lambda *a: jnp.concatenate(a), *parts)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _chain(static: tuple, params: tuple, x: jax.Array, states: tuple) -> tuple[jax.Array, tuple, tuple]:
    """The chain's primal: the compiled kernel on CPU where it may run (:func:`_kernel_eligible`), the
    XLA loop elsewhere."""
    if _kernel_eligible(static, params, x, states):
        return jax.lax.platform_dependent(
            cpu=lambda: _kernel_chain(static, params, x, states), default=lambda: _xla_chain(static, params, x, states)
        )
    return _xla_chain(static, params, x, states)


def _xla_chain(static: tuple, params: tuple, x: jax.Array, states: tuple) -> tuple[jax.Array, tuple, tuple]:
    """The chain as one XLA loop of chunks (module docstring, "Chunks")."""
    specs, record, chunk, _ = static
    batch = x.shape[1:-1]
    carry = []
    for spec, p, st in zip(specs, params, states):
        if spec[0] == "linear":
            carry.append(None)
        else:
            n, k = p[1].shape
            carry.append(broadcast_state(st, batch, n, k))
    carry = tuple(carry)
    steps = x.shape[0]
    size = max(1, min(chunk, steps))
    whole = steps - steps % size
    parts = []
    if whole:
        xs = x[:whole].reshape((whole // size, size) + x.shape[1:])
        carry, out = scan_steps(partial(_chunk, specs, params, record), carry, xs)
        parts.append(jax.tree_util.tree_map(lambda a: a.reshape((whole,) + a.shape[2:]), out))
    if whole < steps:  # the last steps % C steps, as one shorter chunk
        carry, out = _chunk(specs, params, record, carry, x[whole:])
        parts.append(out)
    y, rows = _concat(parts)
    out_states, recs = [], []
    for spec, p, st, c, r in zip(specs, params, states, carry, rows):
        if spec[0] == "linear":
            out_states.append(st)
            recs.append(None)
        else:
            i, v, s = c
            k = p[1].shape[1]
            out_states.append(type(st)(unflatten_synapses(i, k), v, s))
            recs.append(None if r is None else (r[0], r[1], unflatten_synapses(r[2], k)))
    return y, tuple(out_states), tuple(recs)


def _value(p: Any) -> Any:
    return jax.tree_util.tree_map(lambda a: a.value, p, is_leaf=lambda a: isinstance(a, CustomVJPPrimal))


def _chain_fwd(static: tuple, params: tuple, x: Any, states: tuple):
    """Layer by layer, keeping each module's residuals (LIF: those of the hand adjoint); the records are
    the LIF layers' own outputs. A ``Linear`` followed by a non-recurrent ``LIF`` runs as one compiled
    pair where it may (:mod:`pondlib.nn.train_pair`): its residuals sit in the LIF's slot (a dict), the
    Linear's slot holds ``()``."""
    specs, record = static[0], static[1]
    if not record and train_chain_eligible(specs, _value(params), x.value, _value(states)):
        return train_chain_fwd(specs, params, x, states)  # the whole chain as one loop (residuals: a dict)
    h, x_perturbed = x.value, x.perturbed
    residuals, out_states, recs = [], [], []
    pair_next = False
    for j, (spec, p, st) in enumerate(zip(specs, params, states)):
        if spec[0] == "linear":
            weight, bias = _value(p)
            if _pair_here(specs, params, states, j, h):
                pair_next, linear = True, (weight, bias)
                residuals.append(())
                out_states.append(None)
                recs.append(None)
                continue
            # the last entry is a static flag (an empty pytree or None): whether dL/dx is wanted
            residuals.append((weight, bias, h, () if x_perturbed or j > 0 else None))
            h = _linear(h, weight, bias)
            out_states.append(None)
            recs.append(None)
            continue
        _, cap, surrogate = spec
        alpha, beta, threshold, bias, w_rec = p
        if pair_next:  # the pair's input h is x itself for j == 1: batch-major, swapped to time-major
            want_dx = x_perturbed or j > 1
            (h, vmem, isyn, new_state), res = pair_fwd(cap, surrogate, linear, p, h, st, want_dx, j == 1)
            pair_next = False
        else:
            h_in = x if j == 0 else CustomVJPPrimal(h, True)
            (h, vmem, isyn, new_state), res = _lif_fwd(cap, surrogate, alpha, beta, threshold, bias, w_rec, h_in, st)
        residuals.append(res)
        out_states.append(new_state)
        recs.append((h, vmem, isyn) if record else None)
    return (h, tuple(out_states), tuple(recs)), tuple(residuals)


def _pair_here(specs: tuple, params: tuple, states: tuple, j: int, h: jax.Array) -> bool:
    """Whether the Linear at ``j`` and the LIF after it train as one pair (:func:`pondlib.nn.train_pair.eligible`)."""
    if j + 1 >= len(specs) or specs[j + 1][0] != "lif":
        return False
    return pair_eligible(_value(params[j]), _value(params[j + 1]), h, _value(states[j + 1]))


def _dense(ct: Any, like_shape: tuple, dtype: Any) -> jax.Array:
    return jnp.zeros(like_shape, dtype) if isinstance(ct, SymbolicZero) or ct is None else ct


def _given(c: Any) -> Any:
    return None if c is None or isinstance(c, SymbolicZero) else c


def _add(a: Any, b: Any) -> Any:
    """The sum of two cotangents, either of which may be absent (None or symbolic zero)."""
    a, b = _given(a), _given(b)
    return b if a is None else a if b is None else a + b


def _chain_bwd(static: tuple, residuals: tuple, cts: tuple):
    """The modules' adjoints in reverse order: LIF through :func:`pondlib.nn.adjoint._bwd`, Linear
    through :func:`jax.vjp` of its product, a pair through :func:`pondlib.nn.train_pair.pair_bwd` (the
    Linear's gradients computed with the LIF's, handed to its slot). A recorded LIF's spike cotangent is
    the sum of the one from the next module and the one of its record."""
    specs = static[0]
    if isinstance(residuals, dict):  # the chain of pairs ran as one loop
        return train_chain_bwd(specs, residuals, cts, partial(_chain_bwd, static))
    g_y, g_states, g_recs = cts
    d_params, d_states = [], []
    pair_linear = None
    for spec, res, g_state, g_rec in zip(reversed(specs), reversed(residuals), reversed(g_states), reversed(g_recs)):
        if spec[0] == "linear":
            if pair_linear is not None:  # the Linear of a pair: its gradients came with the LIF's
                d_params.append(pair_linear)
                d_states.append(None)
                pair_linear = None
                continue
            weight, bias, h_in, dx_flag = res
            out_shape = h_in.shape[:-1] + (weight.shape[1],)
            g = _dense(pair_dense(g_y), out_shape, h_in.dtype)
            if dx_flag is not None:
                _, vjp = jax.vjp(_linear, h_in, weight, bias)
                g_y, d_w, d_b = vjp(g)
            else:
                _, vjp = jax.vjp(partial(_linear, h_in), weight, bias)
                (d_w, d_b), g_y = vjp(g), None
            d_params.append((d_w, d_b))
            d_states.append(None)
            continue
        _, cap, surrogate = spec
        g_s, g_v, g_i = (None, None, None) if _given(g_rec) is None else g_rec
        if isinstance(res, dict):  # a pair: its kernel reads a next pair's factored cotangent as it is
            g_in = g_y if _given(g_s) is None else _add(pair_dense(g_y), g_s)
            pair_linear, d_lif, g_y, d_state0 = pair_bwd(cap, surrogate, res, (g_in, g_v, g_i, g_state))
            d_params.append(d_lif)
            d_states.append(d_state0)
            continue
        cts_lif = (_add(pair_dense(g_y), g_s), g_v, g_i, g_state)
        d_alpha, d_beta, d_th, d_bias, d_w, g_y, d_state0 = _lif_bwd(cap, surrogate, res, cts_lif)
        d_params.append((d_alpha, d_beta, d_th, d_bias, d_w))
        d_states.append(d_state0)
    return tuple(reversed(d_params)), pair_dense(g_y), tuple(reversed(d_states))


_chain.defvjp(_chain_fwd, _chain_bwd, symbolic_zeros=True)
