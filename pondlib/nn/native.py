r"""Compiled CPU kernels for the LIF adjoint's two time loops (and the forward loop of the integer LIF
with bit-shift decays and saturation, and whole ``Linear -> LIF`` pairs and chains of them in training),
called from XLA through its FFI.

Two builds. ``pondlib/nn/csrc/lif.c`` and ``lif_chain.c`` (with ``lif_rows.h``) are compiled by the
system C compiler on first use and cached on disk (:mod:`pondlib.cprogram.native`: about 1.5 s of
compiler time in all, once per installation and machine, then a few milliseconds per process); where
no C compiler is found, the numba kernels of :mod:`pondlib.nn.lif_kernels` run (numba's first
compilation in an installation takes 10--25 s; it is imported only then). :func:`engine` says which
runs. The two give the same values bit for bit (``tests/nn/test_lif_c.py``). The C build takes one row
per sample (the batch not folded into the neuron axis), splits the samples over the cores (OpenMP;
every value independent of the number of threads), and adds the pair and chain kernels
(:mod:`pondlib.nn.train_pair`, :mod:`pondlib.nn.train_chain`), which compute each ``Linear``'s current
inside the LIF's loop from the non-zero inputs and keep no stack of currents.

On a CPU, XLA runs a :func:`jax.lax.scan` step as a handful of separately compiled kernels. Each one
reads and writes whole ``(*batch, N)`` arrays, and the carried state is copied between iterations. For
the training step of ``benchmarks/train_step.py`` (B = 32, N = 256, T = 200) the forward and backward
loops of the hidden LIF layer (:mod:`pondlib.nn.adjoint`) took about 8 ms of a 15 ms step, several
times what the arithmetic needs. This module runs the same two loops as two compiled functions
(numba, a pondlib dependency; :mod:`pondlib.nn.lif_kernels`), a step at a time over one row of all
neurons of all samples, vectorized. :func:`jax.ffi.ffi_call` invokes them on XLA's own buffers, so
nothing is copied. On that benchmark the layer's forward and backward together take about 4 ms and
the whole step about 10.5 ms instead of 15.

The forward kernel evaluates the step of :func:`pondlib.nn.lif_core.lif_step_flat` (its reference:
``tests/nn/test_native.py`` checks the kernel against a loop of it), for every step ``t``, neuron ``n``
(of every sample) and synapse ``j`` (``m = n k + j``, flat synapse index):

.. math::

    q_{t,m} = I_{t-1,m} + x_{t,m}, \qquad I_{t,m} = \beta_m q_{t,m}, \qquad
    P_{t,n} = \mathrm{fma}(V_{t-1,n}, \alpha_n, \textstyle\sum_j I_{t,nk+j}) + b_n,

    s_{t,n} = \min(\lfloor P_{t,n} / \theta_n \rfloor, s_{max}) \text{ if } P_{t,n} \ge \theta_n
    \text{ else } 0, \qquad V_{t,n} = P_{t,n} - s_{t,n} \theta_n,

and keeps :math:`P` (T, B, N), :math:`q` (T, B, N k) and the spikes as outputs. XLA's CPU compiler
contracts ``v * alpha + i`` (and, for k > 1, the synapse sum) to fused multiply-adds, so the kernel
does too; XLA does not contract the same operations everywhere (it depends on how a loop was
vectorized), so the two loops agree to float32 rounding, not always to the bit.
``tests/nn/test_native.py`` checks that spikes are equal and every state within 1e-5 of its scale.

The backward kernel evaluates the adjoint recursion of :mod:`pondlib.nn.adjoint` (its docstring has
the equations; :func:`pondlib.nn.adjoint.adjoint_backward` calls the kernel) with the same operations
per element; the parameter gradients' sums over time and batch are added in another order, so
gradients agree with the XLA loop to float32 rounding.

When the kernels run. :mod:`pondlib.nn.adjoint` decides at trace time. The layer must be
non-recurrent (``w_rec`` is None), every array float32, and, for the backward kernel, the spikes the
only output with a cotangent (no differentiated records or final state). With several devices,
the data-parallel paths of :mod:`pondlib.nn.parallel` trace the layer per device (``jax.shard_map``),
so each device calls the kernels on its own rows; under ``jax.jit`` with a batch sharded by XLA's
partitioner instead, XLA gathers the kernels' operands (a foreign call cannot be split), which is
correct and, for the benchmark network on two CPU devices, still faster than the XLA loop (12.8 ms
against 17.1 ms per gradient at B = 32). The kernels are
CPU-only: each call is wrapped in :func:`jax.lax.platform_dependent`, so a lowering for any other
platform uses the XLA loop. Under
``jax.vmap`` the call runs once per mapped element (``vmap_method="sequential"``). Registration
runs a self-test against XLA and keeps the XLA loops if it fails; ``PONDLIB_NATIVE=0`` in the
environment turns the kernels off.

Inference of a whole chain of ``Linear`` and ``LIF`` modules runs as one more kernel,
:func:`chain_forward` (:mod:`pondlib.nn.chain_kernels`: event-driven products, tiles of samples on
the cores; :mod:`pondlib.nn.fused` calls it). It is compiled and registered on its first use
(:func:`chain_available`), apart from the training kernels.

A device-aware twin in :mod:`pondlib.devices` (the integer LIF with bit-shift decays and saturation,
trained through straight-through estimators) uses them too: its adjoint recursion is the float LIF's
with :math:`\alpha = 1 - f_{mem}`, :math:`\beta = 1 - f_{syn}` (:func:`lif_backward`), and
:func:`bitshift_lif_forward` runs its integer forward step (saturation to ``[lo, hi]``, bit-shift
decays, exact spike counts; every value a whole number, so bit for bit the XLA loop's). On
``benchmarks/train_step.py`` that hardware-aware step went from 17.4 ms (1.97x the plain step) to
10 ms (1.1x).

Example:
    >>> import jax.numpy as jnp
    >>> from pondlib.nn import native
    >>> x = jnp.full((4, 1, 2), 0.6)                        # (T, B, N k): 4 steps, 1 sample, 2 neurons
    >>> one = jnp.ones(2)
    >>> pre, q, spikes, i_f, v_f = native.lif_forward(x, 0.9 * one, 0.8 * one, one, 0 * one,
    ...                                               jnp.zeros((1, 2)), jnp.zeros((1, 2)), 31.0)
    >>> [round(float(p), 4) for p in pre[:, 0, 0]]            # I: 0.48, 0.864, ...; P = 0.9 V + I
    [0.48, 1.296, 1.4376, 1.8108]
    >>> spikes[:, 0, 0].tolist()                             # V = P - s after each spike
    [0.0, 1.0, 1.0, 1.0]
"""

from __future__ import annotations

import ctypes
import importlib
import math
import os
import threading
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pondlib.cprogram import native as cnative

__all__ = [
    "available",
    "chain_available",
    "chain_eligible",
    "chain_engine",
    "chain_forward",
    "engine",
    "pair_available",
    "pair_forward",
    "pair_backward",
    "train_chain_forward",
    "train_chain_backward",
    "CHAIN_MODES",
    "CHAIN_CROSSOVER",
    "prebuild",
]

_FWD_TARGET = "pondlib_lif_forward"
_BWD_TARGET = "pondlib_lif_backward"
_BITSHIFT_TARGET = "pondlib_bitshift_lif_forward"
_PAIR_FWD_TARGET = "pondlib_lif_pair_forward"
_PAIR_BWD_TARGET = "pondlib_lif_pair_backward"
_TRAIN_FWD_TARGET = "pondlib_lif_chain_forward"
_TRAIN_BWD_TARGET = "pondlib_lif_chain_backward"
_TARGETS = (
    _FWD_TARGET,
    _BWD_TARGET,
    _BITSHIFT_TARGET,
    _PAIR_FWD_TARGET,
    _PAIR_BWD_TARGET,
    _TRAIN_FWD_TARGET,
    _TRAIN_BWD_TARGET,
)
_CHAIN_TARGET = "pondlib_chain_forward"
_KINDS = {"fast_sigmoid": 0, "triangle": 1, "arctan": 2}

_lock = threading.RLock()  # re-entered by the self-test, which calls the kernels
_state: dict[str, Any] = {}


def available() -> bool:
    """True when the kernels are built (or loaded from the cache) and registered with XLA and pass their
    self-test (done once, on first use: the C build's first compilation in an installation takes about
    1.5 s of compiler time, later processes load it in milliseconds; numba's, where no C compiler is
    found, 10--25 s once). False when the environment says ``PONDLIB_NATIVE=0`` (read on every call),
    when this JAX has no FFI, or when registration or the self-test fails.

    Example:
        >>> from pondlib.nn import native
        >>> isinstance(native.available(), bool)
        True
    """
    if os.environ.get("PONDLIB_NATIVE", "1") == "0":
        return False
    with _lock:
        if "ok" not in _state:
            _state["ok"] = _register()
        return _state["ok"]


def _register() -> bool:
    """Build (or load) the kernels, register them with XLA and check the forward kernel against a NumPy
    loop: the C build (``pondlib/nn/csrc/lif.c``) where a C compiler is found, else numba's
    (:mod:`pondlib.nn.lif_kernels`, imported only then)."""
    if not _has_ffi():
        return False
    try:
        keep, pointers, engine = _lif_pointers()
        targets = _TARGETS[: len(pointers)]
        for name, pointer in zip(targets, pointers, strict=True):
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(pointer), platform="cpu")
    except Exception:  # any failure here means: keep the XLA loops
        return False
    _state["keep"] = (keep, pointers)  # the compiled code must outlive every call
    _state["engine"] = engine
    _state["registered"] = True  # the self-test's calls find the targets registered
    return _self_test()


def _lif_pointers() -> tuple[Any, tuple, str]:
    """The training kernels' FFI handlers as ctypes function pointers (forward, backward, bit-shift
    forward and, for the C build, the two pair kernels), what must stay alive with them, and the engine."""
    proto = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
    csrc = Path(__file__).resolve().parent / "csrc"
    _prebuild(("pond_lif", "pond_lif_chain"))
    lib = cnative.load("pond_lif", csrc / "lif.c", include_dirs=(jax.ffi.include_dir(),))
    chain = (
        None
        if lib is None
        else cnative.load("pond_lif_chain", csrc / "lif_chain.c", include_dirs=(jax.ffi.include_dir(),))
    )
    if lib is not None and chain is not None:
        names = ("lif_forward", "lif_backward", "bitshift_forward", "pair_forward", "pair_backward")
        handlers = tuple(getattr(lib, f"pond_{n}_handler") for n in names)
        handlers += tuple(getattr(chain, f"pond_chain_train_{n}_handler") for n in ("forward", "backward"))
        return (lib, chain), tuple(proto(ctypes.cast(h, ctypes.c_void_p).value) for h in handlers), "c"
    handlers = importlib.import_module("pondlib.nn.lif_kernels").handlers()
    return handlers, tuple(proto(h.address) for h in handlers), "numba"


def engine() -> str | None:
    """Which build of the training kernels runs: ``"c"`` (``pondlib/nn/csrc/lif.c``, built by the system C
    compiler on first use and cached on disk, :mod:`pondlib.cprogram.native`; numba is then never
    imported), ``"numba"`` (:mod:`pondlib.nn.lif_kernels`, where no C compiler is found) or None (neither:
    the XLA loops run).

    Example:
        >>> from pondlib.nn import native
        >>> native.engine() in ("c", "numba", None)
        True
    """
    return _state.get("engine") if available() else None


def _ensure_registered() -> None:
    """Register the kernels before a call of them (once; a no-op within the self-test)."""
    if "registered" not in _state:
        available()


def _self_test() -> bool:
    """The forward kernel against the same loop in NumPy on a small random layer, run once (eagerly, also
    when the first use is inside a trace): a kernel that misreads XLA's call frame gives other numbers
    (or none) and stays unused."""
    rng = np.random.default_rng(0)
    steps, n = 16, 43  # whole vectors of 8 lanes and a remainder
    bounds = ((0.5, 1.0), (0.5, 1.0), (0.5, 2.0))
    x = rng.normal(0.6, 0.5, (steps, n)).astype(np.float32)
    alpha, beta, threshold = (rng.uniform(lo, hi, n).astype(np.float32) for lo, hi in bounds)
    ref, i, v = [], np.zeros(n, np.float32), np.zeros(n, np.float32)
    for t in range(steps):
        i = (i + x[t]) * beta
        p = v * alpha + i
        s = np.where(p >= threshold, np.clip(np.floor(p / threshold), 0, 3.0), 0.0).astype(np.float32)
        v = p - s * threshold
        ref.append(p)
    try:
        with jax.ensure_compile_time_eval():
            zero = jnp.zeros((1, n), jnp.float32)
            args = (jnp.asarray(a) for a in (x[:, None], alpha, beta, threshold, 0 * alpha))
            pre = np.asarray(lif_forward(*args, zero, zero, 3.0)[0][:, 0])
        return bool(np.allclose(pre, np.stack(ref), rtol=1e-5, atol=1e-5))
    except Exception:  # a kernel that cannot run stays unused
        return False


def eligible(*arrays: Any) -> bool:
    """Whether the kernels may run for a layer with these arrays (``None`` for an absent one, e.g. a
    non-recurrent layer's ``w_rec``, is refused): every array float32, JAX's default backend a CPU
    (:func:`cpu_backend`) and the kernels available."""
    if any(a is None or jnp.result_type(a) != jnp.float32 for a in arrays):
        return False
    return cpu_backend() and available()


def cpu_backend() -> bool:
    """Whether JAX's default backend is the CPU. The kernels are CPU code: on a GPU (or TPU) backend every
    layer, twin and fused chain takes its XLA loop at trace time, and numba never compiles or registers
    them (the one place the choice is made; ``jax.lax.platform_dependent`` would pick the XLA branch of a
    GPU lowering anyway, but only after the kernels were built).

    Example:
        >>> cpu_backend() == (jax.default_backend() == "cpu")
        True
    """
    return jax.default_backend() == "cpu"


def _f32(shape: tuple) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, jnp.float32)


def _forward_call(target, n_out, x, params, i0, v0, settings) -> tuple[jax.Array, ...]:
    """Call a forward kernel on ``(T, R, N k)``: the C build takes one row per sample (``R`` the batch
    size, the parameters as they are, the rows split over the cores); numba's the batch folded into the
    neuron axis (``R = 1``, one long row per step, its fastest shape; parameters tiled over the batch).
    Returns its first ``n_out`` results unfolded: ``pre`` (T, *b, N), ``q`` (T, *b, N k), ``spikes``
    (T, *b, N), ``i_final`` (*b, N k) and, with ``n_out = 5``, ``v_final`` (*b, N)."""
    _ensure_registered()
    n = params[0].shape[0]
    steps, batch, nk = x.shape[0], x.shape[1:-1], x.shape[-1]
    rows = math.prod(batch)
    if _state.get("engine") == "c":
        r, m, mk, flat = rows, n, nk, tuple(a.reshape(-1) for a in params)
    else:
        r, m, mk, flat = 1, rows * n, rows * nk, tuple(jnp.tile(a.reshape(-1), rows) for a in params)
    out = (_f32((steps, r, m)), _f32((steps, r, mk)), _f32((steps, r, m)), _f32((r, mk)), _f32((r, m)))
    call = jax.ffi.ffi_call(target, out[:n_out], vmap_method="sequential")
    res = call(
        x.reshape(steps, r, mk),
        *flat,
        i0.reshape(r, mk),
        v0.reshape(r, m),
        jnp.asarray(settings, jnp.float32),
    )
    shape = x.shape[:-1] + (n,)
    unfolded = (res[0].reshape(shape), res[1].reshape(x.shape), res[2].reshape(shape), res[3].reshape(batch + (nk,)))
    return unfolded + tuple(r.reshape(batch + (n,)) for r in res[4:])


def lif_forward(x, alpha, beta, threshold, bias, i0, v0, cap) -> tuple[jax.Array, ...]:
    """The forward loop of a non-recurrent LIF layer on CPU (module docstring: equations), any batch
    shape ``*b``.

    Args:
        x: (T, *b, N k) input currents; ``alpha``, ``threshold``, ``bias`` (N,); ``beta`` (N k,)
            (float32).
        i0: (*b, N k) initial synaptic state; ``v0`` (*b, N) initial membrane; ``cap`` a number.

    Returns:
        ``(pre (T, *b, N), q (T, *b, N k), spikes (T, *b, N), i_final (*b, N k), v_final (*b, N))``.
    """
    return _forward_call(_FWD_TARGET, 5, x, (alpha, beta, threshold, bias), i0, v0, [cap])


def lif_backward(pre, q, g, alpha, beta, threshold, v0, cap, surrogate) -> tuple[jax.Array, ...]:
    """The adjoint loop on CPU of a non-recurrent layer of N neurons with k synapses each whose only
    cotangent is the spikes' (the recursion of :func:`pondlib.nn.adjoint.adjoint_backward`, equations in
    that module's docstring), any
    batch shape ``*b``: the batch is folded into the neuron axis (parameters tiled), the kernel's
    per-neuron sums then summed over it, as the XLA loops' per-sample accumulators are.

    Args:
        pre: (T, *b, N) membranes before reset; ``q`` (T, *b, N k) synaptic states before decay; ``g``
            (T, *b, N) the spikes' cotangent.
        alpha, threshold: (N,); ``beta`` (N, k); ``v0`` (*b, N) the initial membrane.
        cap, surrogate: the spike cap per step and the layer's :class:`~pondlib.nn.surrogate.Surrogate`.

    Returns:
        ``(d_alpha (N,), d_beta (N, k), d_threshold (N,), d_bias (N,), dx (T, *b, N k), d_i0 (*b, N k),
        d_v0 (*b, N))``.
    """
    _ensure_registered()
    n, k = beta.shape
    steps, batch = pre.shape[0], pre.shape[1:-1]
    rows = math.prod(batch)
    scale = math.pi * surrogate.scale if surrogate.kind == "arctan" else surrogate.scale
    cfg = jnp.asarray([cap, scale, _KINDS[surrogate.kind]], jnp.float32)
    if _state.get("engine") == "c":  # one row per sample, the sums over the batch taken in the kernel
        out = (_f32((n,)), _f32((n * k,)), _f32((n,)), _f32((n,)), _f32((steps, rows, n * k)))
        out += (_f32((rows, n * k)), _f32((rows, n)))
        call = jax.ffi.ffi_call(_BWD_TARGET, out, vmap_method="sequential")
        d_alpha, d_beta, d_th, d_bias, dx, d_i0, d_v0 = call(
            pre.reshape(steps, rows, n),
            q.reshape(steps, rows, n * k),
            g.reshape(steps, rows, n).astype(jnp.float32),
            alpha,
            beta.reshape(-1),
            threshold,
            v0.reshape(rows, n),
            cfg,
        )
        unfolded = (dx.reshape(q.shape), d_i0.reshape(batch + (n * k,)), d_v0.reshape(batch + (n,)))
        return (d_alpha, d_beta.reshape(n, k), d_th, d_bias) + unfolded
    m, mk = rows * n, rows * n * k
    out = (_f32((m,)), _f32((mk,)), _f32((m,)), _f32((m,)), _f32((steps, 1, mk)), _f32((1, mk)), _f32((1, m)))
    call = jax.ffi.ffi_call(_BWD_TARGET, out, vmap_method="sequential")
    a_alpha, a_beta, a_th, a_bias, dx, d_i0, d_v0 = call(
        pre.reshape(steps, 1, m),
        q.reshape(steps, 1, mk),
        g.reshape(steps, 1, m).astype(jnp.float32),
        *(jnp.tile(a.reshape(-1), rows) for a in (alpha, beta, threshold)),
        v0.reshape(1, m),
        cfg,
    )
    bred = tuple(range(len(batch)))
    d_alpha, d_th, d_bias = (jnp.sum(a.reshape(batch + (n,)), axis=bred) for a in (a_alpha, a_th, a_bias))
    d_beta = jnp.sum(a_beta.reshape(batch + (n * k,)), axis=bred).reshape(n, k)
    unfolded = (dx.reshape(q.shape), d_i0.reshape(batch + (n * k,)), d_v0.reshape(batch + (n,)))
    return (d_alpha, d_beta, d_th, d_bias) + unfolded


def bitshift_lif_forward(cur, f_mem, f_syn, threshold, bias, i0, v0, cap, lo, hi) -> tuple[jax.Array, ...]:
    """The forward loop on CPU of a non-recurrent layer of the integer LIF with bit-shift decays and
    saturation (the integer step of the device-aware twin in :mod:`pondlib.devices` that uses it:
    saturation to ``[lo, hi]``, bit-shift decays ``floor(v f)`` (at least one step toward zero), exact
    spike counts), any batch shape ``*b``.

    Args:
        cur: (T, *b, N k) input currents in chip units (whole numbers, float32).
        f_mem: (N,) and ``f_syn`` (N, k) decay factors ``2^-d``; ``threshold``, ``bias`` (N,).
        i0: (*b, N k) initial synaptic state; ``v0`` (*b, N) initial membrane.
        cap, lo, hi: spike cap per step, state range.

    Returns:
        ``(pre (T, *b, N), q (T, *b, N k), spikes (T, *b, N), i_final (*b, N k))``: the membrane
        before reset, the saturated synaptic state before decay, the spike counts and the final
        synaptic state, equal to the XLA loop's bit for bit (every operation is exact on whole
        numbers below 2^24).
    """
    return _forward_call(_BITSHIFT_TARGET, 4, cur, (f_mem, f_syn, threshold, bias), i0, v0, [cap, lo, hi])


def pair_available() -> bool:
    """True when the Linear -> LIF pair kernels (:func:`pair_forward`, :func:`pair_backward`) may run: the
    training kernels are :func:`available` and their build is the C one (numba has no pair kernels; the
    pair then runs as the Linear's XLA product and the LIF's kernel).

    Example:
        >>> from pondlib.nn import native
        >>> native.pair_available() == (native.engine() == "c")
        True
    """
    return available() and _state.get("engine") == "c"


def _pair_layout(batch_major: bool) -> dict:
    """``x`` (T, B, n_in) stored batch-major (XLA layout {1, 0, 2}) when asked: a (B, T, n_in) input
    swapped to time-major is then handed over without a copy."""
    return {"input_layouts": [(1, 0, 2)] + [None] * 9} if batch_major else {}


def pair_forward(x, weight, c, alpha, beta, threshold, bias, i0, v0, cap, batch_major: bool = False):
    r"""The forward loop of ``Linear(n_in -> N k)`` followed by a non-recurrent LIF layer on CPU, the
    Linear's current computed inside the loop from the non-zero inputs of each step and sample
    (:math:`a_{t,b,m} = \sum_{i: x_{t,b,i} \ne 0} x_{t,b,i} W_{i,m} + c_m`, the terms added in ascending
    ``i`` by fused multiply-adds from +0; ``pondlib/nn/csrc/lif.c``): no (T, B, N k) stack of currents
    is written.

    Args:
        x: (T, B, n_in) float32; ``weight`` (n_in, N k); ``c`` (N k,) or None; ``alpha``, ``threshold``,
            ``bias`` (N,); ``beta`` (N, k); ``i0`` (B, N k), ``v0`` (B, N); ``cap`` a number.
        batch_major: ask XLA for ``x`` stored batch-major (:func:`_pair_layout`).

    Returns:
        ``(pre (T, B, N), q (T, B, N k), spikes (T, B, N), i_final (B, N k), v_final (B, N))``.
    """
    _ensure_registered()
    n, k = beta.shape
    steps, rows = x.shape[0], x.shape[1]
    out = (_f32((steps, rows, n)), _f32((steps, rows, n * k)), _f32((steps, rows, n)))
    out += (_f32((rows, n * k)), _f32((rows, n)))
    call = jax.ffi.ffi_call(_PAIR_FWD_TARGET, out, vmap_method="sequential", **_pair_layout(batch_major))
    cfg = jnp.asarray([cap, float(batch_major), float(c is not None)], jnp.float32)
    c = jnp.zeros((1,), jnp.float32) if c is None else c
    return call(x, weight, c, alpha, beta.reshape(-1), threshold, bias, i0, v0, cfg)


def pair_backward(x, weight, c, pre, q, g, alpha, beta, threshold, v0, cap, surrogate, out, batch_major, factor=None):
    r"""The adjoint of :func:`pair_forward` whose only cotangent is the spikes' ``g`` (T, B, N): the LIF's
    recursion (:func:`lif_backward`) and, step by step from the same non-zero inputs, the Linear's
    gradients :math:`\partial W = \sum_{t,b} x_{t,b}^\top \bar a_{t,b}`, :math:`\partial c = \sum_{t,b}
    \bar a_{t,b}`.

    Args:
        out: ``"dx"``: also :math:`\bar x_{t,b} = \bar a_{t,b} W^\top` (T, B, n_in); ``"da"``: also
            :math:`\bar a` (T, B, N k) (the factor of the input's cotangent a previous pair reads);
            ``"none"``.
        factor: ``(G (T, B, K), W_next (N, K))``: the spike cotangent is :math:`G W_{next}^\top`, formed
            row by row in the kernel (``g`` is then not read and may be None).

    Returns:
        ``(d_alpha (N,), d_beta (N, k), d_threshold (N,), d_bias (N,), d_weight (n_in, N k), d_c (N k,),
        dx (T, B, n_in) or da (T, B, N k) or None, d_i0 (B, N k), d_v0 (B, N))``.
    """
    _ensure_registered()
    n, k = beta.shape
    steps, rows, n_in = x.shape
    scale = math.pi * surrogate.scale if surrogate.kind == "arctan" else surrogate.scale
    mode = {"none": 0, "dx": 1, "da": 2}[out]
    o_shape = ((1, 1, 1), (steps, rows, n_in), (steps, rows, n * k))[mode]
    shapes = ((n,), (n * k,), (n,), (n,), (n_in, n * k), (n * k,), o_shape, (rows, n * k), (rows, n))
    layout = {"input_layouts": [(1, 0, 2)] + [None] * 12} if batch_major else {}
    call = jax.ffi.ffi_call(_PAIR_BWD_TARGET, tuple(_f32(s) for s in shapes), vmap_method="sequential", **layout)
    flags = [
        cap,
        scale,
        _KINDS[surrogate.kind],
        mode,
        float(batch_major),
        float(c is not None),
        float(factor is not None),
    ]
    dummy = jnp.zeros((1, 1, 1), jnp.float32)
    gf, wn = (dummy, dummy[0]) if factor is None else factor
    g = dummy if g is None else g.astype(jnp.float32)
    c = jnp.zeros((1,), jnp.float32) if c is None else c
    args = (x, weight, c, pre, q, g, alpha, beta.reshape(-1), threshold, v0, jnp.asarray(flags, jnp.float32), gf, wn)
    d_alpha, d_beta, d_th, d_bias, d_w, d_c, o, d_i0, d_v0 = call(*args)
    return d_alpha, d_beta.reshape(n, k), d_th, d_bias, d_w, d_c, (None if mode == 0 else o), d_i0, d_v0


def train_chain_forward(x, prm, ops, state0, cfg, n_last: int, sn: int, sq: int, batch_major: bool, keep: bool):
    """The forward pass of a chain of Linear -> LIF pairs in training (``pondlib/nn/csrc/lif.c``: one loop
    per sample, every pair of a step before the next step, a pair's spikes the next pair's input row,
    never stored; :mod:`pondlib.nn.train_chain` builds the arguments and has the equations).

    Args:
        x: (T, B, n0) float32 (stored batch-major when ``batch_major``); ``prm`` (P,) every parameter flat;
            ``ops`` (pairs, 8) int32 their layout; ``state0`` (B, S) every LIF's ``(isyn, vmem)`` side by
            side; ``cfg`` float32 ``[batch_major, want_dx, keep, (scale, kind, integer, lo, hi, delay) per
            pair]`` (:mod:`pondlib.nn.train_chain`).
        n_last, sn, sq: the last LIF's width, and the sums of N and N k over the pairs.

    Returns:
        ``(y (T, B, n_last) the last LIF's spikes, pre (T, B, sn), q (T, B, sq), state (B, S))``; ``pre`` and
        ``q`` one element each (0) unless ``keep``.
    """
    _ensure_registered()
    steps, rows = x.shape[0], x.shape[1]
    kept = (steps, rows) if keep else (1, 1)
    out = (
        _f32((steps, rows, n_last)),
        _f32(kept + (sn if keep else 1,)),
        _f32(kept + (sq if keep else 1,)),
        _f32(state0.shape),
    )
    layout = {"input_layouts": [(1, 0, 2)] + [None] * 4} if batch_major else {}
    call = jax.ffi.ffi_call(_TRAIN_FWD_TARGET, out, vmap_method="sequential", **layout)
    return call(x, prm, ops, state0, cfg)


def train_chain_backward(x, prm, ops, pre, q, g, state0, cfg, batch_major: bool, want_dx: bool):
    """The gradients of :func:`train_chain_forward` whose only cotangent is the last LIF's spikes' ``g``
    (T, B, n_last): ``(d_prm (P,) in the layout of prm, d_state0 (B, S), dx (T, B, n0) or None)``."""
    _ensure_registered()
    steps, rows, n0 = x.shape
    out = (_f32(prm.shape), _f32(state0.shape), _f32((steps, rows, n0) if want_dx else (1, 1, 1)))
    layout = {"input_layouts": [(1, 0, 2)] + [None] * 7} if batch_major else {}
    call = jax.ffi.ffi_call(_TRAIN_BWD_TARGET, out, vmap_method="sequential", **layout)
    d_prm, d_state0, dx = call(x, prm, ops, pre, q, g.astype(jnp.float32), state0, cfg)
    return d_prm, d_state0, (dx if want_dx else None)


#: Modes of :func:`chain_forward`: the row products' loop chosen per row from the measured density,
#: always dense, always sparse (event-driven); the results are the same bit for bit.
CHAIN_MODES = {"auto": 0, "dense": 1, "sparse": 2}
#: The density (non-zero fraction of a row) up to which ``"auto"`` gathers the active rows
#: (``benchmarks/sparsity.py`` measures where the sparse loop stops paying).
CHAIN_CROSSOVER = 0.75


def chain_available() -> bool:
    """True when :func:`chain_forward` may run: the kernels are :func:`available`, and the chain kernel
    (compiled and registered on its first use, apart from the training kernels, so that training alone
    never waits for it) computes the documented one-neuron example correctly.

    Example:
        >>> from pondlib.nn import native
        >>> isinstance(native.chain_available(), bool)
        True
    """
    if os.environ.get("PONDLIB_NATIVE", "1") == "0" or not _has_ffi():
        return False
    with _lock:
        if "chain" not in _state:
            _state["chain"] = _register_chain()
        return _state["chain"]


def chain_eligible(*arrays: Any) -> bool:
    """Whether :func:`chain_forward` may run on these arrays: every one float32 (``None`` refused), JAX's
    default backend a CPU (:func:`cpu_backend`) and the chain kernel :func:`chain_available` (which does
    not wait for the training kernels)."""
    if any(a is None or jnp.result_type(a) != jnp.float32 for a in arrays):
        return False
    return cpu_backend() and chain_available()


def chain_engine() -> str | None:
    """Which build of the chain kernel runs: ``"c"`` (pondlib/nn/csrc/chain.c, built by the system C
    compiler and cached, :mod:`pondlib.cprogram.native`), ``"numba"`` (:mod:`pondlib.nn.chain_kernels`,
    where no C compiler is found) or None (neither: the XLA loop runs).

    Example:
        >>> from pondlib.nn import native
        >>> native.chain_engine() in ("c", "numba", None)
        True
    """
    return _state.get("chain_engine") if chain_available() else None


def _has_ffi() -> bool:
    ffi = getattr(jax, "ffi", None)
    return ffi is not None and all(
        hasattr(ffi, f) for f in ("register_ffi_target", "ffi_call", "pycapsule", "include_dir")
    )


def _libraries() -> list[tuple[str, Path, tuple]]:
    """This package's three kernel libraries as :func:`pondlib.cprogram.native.prebuild` takes them, the
    training kernels first (a command trains before it runs inference)."""
    csrc = Path(__file__).resolve().parent / "csrc"
    include = (jax.ffi.include_dir(),)
    names = (("pond_lif", "lif.c"), ("pond_lif_chain", "lif_chain.c"), ("pond_chain", "chain.c"))
    return [(name, csrc / source, include) for name, source in names]


def _prebuild(needed: tuple[str, ...]) -> None:
    """On a need of some of them (``needed``: library names), start building those side by side, now
    (:func:`pondlib.cprogram.native.prebuild` with ``ahead=False``: also where :func:`prebuild` queued
    them and they still wait for their turn), and the rest of the three ahead of need, after them: a
    new installation waits for the slowest build it needs, not for their sum, and the others compile
    while it goes on."""
    libraries = _libraries()
    cnative.prebuild([lib for lib in libraries if lib[0] in needed], ahead=False)
    cnative.prebuild([lib for lib in libraries if lib[0] not in needed])


def _chain_pointer() -> tuple[Any, str]:
    """The chain kernel's FFI handler as a ctypes function pointer and the engine it comes from: the C
    build when a compiler is there, else numba's."""
    proto = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
    source = Path(__file__).resolve().parent / "csrc" / "chain.c"
    _prebuild(("pond_chain",))
    lib = cnative.load("pond_chain", source, include_dirs=(jax.ffi.include_dir(),))
    if lib is not None:
        return proto(ctypes.cast(lib.pond_chain_handler, ctypes.c_void_p).value), "c"
    handler = importlib.import_module("pondlib.nn.chain_kernels").handler()
    return (handler, proto(handler.address)), "numba"


def _register_chain() -> bool:
    """Compile and register the chain kernel's handler, then run it on Linear(1 -> 1, w = 1) -> LIF with
    decays 1/2 and threshold 1 (the example of :mod:`pondlib.nn.lif`): input 4.5, 0, 0 gives spikes
    2, 1, 0."""
    try:
        keep, engine = _chain_pointer()
        pointer = keep[1] if isinstance(keep, tuple) else keep
        jax.ffi.register_ffi_target(_CHAIN_TARGET, jax.ffi.pycapsule(pointer), platform="cpu")
        _state["keep_chain"] = keep  # the compiled code must outlive every call
        _state["chain_engine"] = engine
        ops = np.array([[0, 1, 1, 0, -1, 0, 0, 0], [1, 1, 1, 1, -1, 0, 0, 0]], np.int32)
        with jax.ensure_compile_time_eval():  # eagerly, also when the first use is inside a trace
            prm = jnp.asarray([1.0, 0.5, 0.5, 1.0, 0.0, 2.0**16], jnp.float32)  # w, alpha, beta, theta, bias, cap
            x = jnp.asarray([4.5, 0.0, 0.0], jnp.float32).reshape(3, 1, 1)
            y, _ = chain_forward(x, prm, ops, jnp.zeros((1, 3), jnp.float32), 1)
        return np.asarray(y).ravel().tolist() == [2.0, 1.0, 0.0]
    except Exception:  # a kernel that cannot run stays unused
        return False


def chain_forward(x, prm, ops, state0, n_out, mode: str = "auto", crossover: float = CHAIN_CROSSOVER):
    """Inference of a chain of ``Linear`` and ``LIF`` modules on CPU, one sample per core at a time
    (:mod:`pondlib.nn.chain_kernels` has the equations and the layout; :func:`pondlib.nn.fused.chain_scan`
    builds the arguments).

    Args:
        x: (T, B, n_in) float32 input.
        prm: (P,) float32, every parameter flat; ``ops`` (n_ops, 8) int32 numpy array, one row per module.
        state0: (B, S) float32, every LIF layer's state flat.
        n_out: the last module's width.
        mode: ``"auto"``, ``"dense"`` or ``"sparse"`` (:data:`CHAIN_MODES`); ``crossover`` the density up
            to which ``"auto"`` gathers.

    Returns:
        ``(y (T, B, n_out), state (B, S))``.
    """
    if "keep_chain" not in _state:
        chain_available()
    steps, batch = x.shape[0], x.shape[1]
    # the C build reads x and writes y batch-major (XLA layout {1, 0, 2}): a (B, T, n) input swapped to
    # time-major, and the swap back of the output, are then free
    layout = {"input_layouts": [(1, 0, 2), None, None, None, None], "output_layouts": [(1, 0, 2), None]}
    call = jax.ffi.ffi_call(
        _CHAIN_TARGET,
        (_f32((steps, batch, n_out)), _f32(state0.shape)),
        vmap_method="sequential",
        **(layout if _state.get("chain_engine") == "c" else {}),
    )
    cfg = jnp.asarray([CHAIN_MODES[mode], crossover], jnp.float32)
    return call(x, prm, jnp.asarray(ops, jnp.int32), state0, cfg)


def prebuild() -> list[threading.Thread]:
    """Start building this package's C kernel libraries in the background, ahead of their first use (a
    command that will train or run a network calls this first, so that compilation overlaps its imports,
    data loading and tracing; :func:`pondlib.cprogram.native.prebuild`: at most one compiler per core
    but one, the training kernels first), and return the started threads. Nothing starts when the
    kernels are off (``PONDLIB_NATIVE=0``), without a C compiler or XLA FFI, or when they are already
    built in this process; nothing is raised in the threads (a failed build is what the kernels' first
    use then reports: the numba or XLA loops run). Does not wait: the first use waits for what it needs.

    Example:
        >>> from pondlib.nn import native
        >>> all(t.name.startswith("pond-build-") for t in native.prebuild())
        True
    """
    if os.environ.get("PONDLIB_NATIVE", "1") == "0" or not _has_ffi():
        return []
    return cnative.prebuild(_libraries())
