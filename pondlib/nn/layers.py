r"""Stateless and delay layers for imported networks: convolution, pooling, flatten, scale, delay.

Features stay flat in the last axis so that every module keeps the ``(T, *batch, N)`` protocol of
:mod:`pondlib.nn.base`: a feature map of shape ``(C, H, W)`` travels as ``N = C * H * W`` channels in
C order (channel-major, as PyTorch and NIR lay it out); the spatial shape is a static field of the
layer. Stateless layers act on every time step at once.

=============  ======================================================================================
layer          per step ``t`` (``x`` reshaped to ``input_shape``)
=============  ======================================================================================
Conv1d         ``y[o, i] = b[o] + sum_{c, k} W[o, c, k] x_pad[g(o) c, s i + d k]`` (PyTorch cross-
               correlation, ``groups``; ``W`` (C_out, C_in / groups, K))
Conv2d         the same in two spatial dimensions, ``W`` (C_out, C_in / groups, K_h, K_w)
SumPool2d      ``y[c, i, j] = sum_{u < k_h, v < k_w} x_pad[c, s_h i + u, s_w j + v]`` (zero padding)
AvgPool2d      SumPool2d divided by ``k_h k_w`` (padding counted, PyTorch's default)
Flatten        ``y = x`` (the flat layout is already the flattened one; only the shape changes)
Scale          ``y = s * x`` element-wise, ``s`` (N,)
Delay          ``y[t, n] = x[t - d_n, n]`` with ``d_n = round(delay_n / dt)`` steps (zeros before t = 0)
=============  ======================================================================================

Shapes: inputs (T, N_in) or (B, T, N_in), ``N_in = prod(input_shape)``; outputs likewise with
``N_out = prod(output_shape)``.

Every constructor raises :class:`~pondlib.errors.GraphError` naming the parameter for: shapes, kernel
sizes, strides and dilations that are not whole numbers >= 1 (an integral float such as ``2.0`` is
accepted; nested sequences are refused), paddings that are not whole numbers >= 0 (or
``"same"``/``"valid"``; ``"same"`` only with stride 1, and pooling padding at most half the kernel, as in
PyTorch), ``groups`` that do not divide the channels, kernels larger than the padded input, weights,
biases, scales and delays that are not real (bool, complex, strings), finite and within float32 or have
the wrong shape, a negative delay, a delay that is not a whole number of steps or longer than
:data:`MAX_DELAY_STEPS`, and ``dt <= 0``. Tolerated (documented): an int or a one-element sequence for a
per-dimension argument applies to every dimension; a scalar conv bias or ``Scale`` applies to every
channel.

Example:
    >>> import jax.numpy as jnp, numpy as np
    >>> conv = Conv2d((1, 4, 4), weight=np.ones((2, 1, 3, 3)), padding=1)
    >>> conv.output_shape
    (2, 4, 4)
    >>> pool = SumPool2d((2, 4, 4), kernel_size=2, stride=2)
    >>> y, _, _ = pool(conv(jnp.ones((3, 16)))[0])
    >>> y.shape, y[0, :4].tolist()          # every 2x2 window holds 4 + 6 + 6 + 9
    ((3, 8), [25.0, 25.0, 25.0, 25.0])
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from pondlib.errors import GraphError
from pondlib.nn.base import as_param, check_batch_shape, evolve_time_major
from pondlib.validate import as_array, as_float_array, check_choice, check_float, check_int

__all__ = ["Conv1d", "Conv2d", "SumPool2d", "AvgPool2d", "Flatten", "Scale", "Delay", "MAX_DELAY_STEPS"]

#: Longest delay in steps: the state of a :class:`Delay` holds that many inputs per channel.
MAX_DELAY_STEPS = 2**16


def _ints(value: Any, name: str, where: str, lo: int) -> tuple[int, ...]:
    """A shape-like value (an int, a flat sequence or a 1-d array of ints) as a tuple of ints ``>= lo``;
    nested sequences are refused, never flattened."""
    if isinstance(value, np.ndarray) and value.ndim > 1:
        raise GraphError(
            name,
            value=f"a {value.ndim}-d array of shape {value.shape}",
            limit="an int or a flat sequence of ints",
            where=where,
            fix=f"pass {name} as an int or a tuple of ints",
        )
    if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim > 0):
        items = list(value)
    else:
        items = [value]
    return tuple(check_int(v, name, lo=lo, where=where, error=GraphError) for v in items)


def _tuple(value: Any, nd: int, name: str, where: str, lo: int = 1) -> tuple[int, ...]:
    """``value`` (one int for every dimension, or ``nd`` ints) as ``nd`` ints ``>= lo``; a sequence of one
    int counts as that int (``(2,)`` is ``2``, as in PyTorch)."""
    dims = _ints(value, name, where, lo)
    if len(dims) == 1:
        dims = dims * nd
    if len(dims) != nd:
        raise GraphError(
            f"{name}",
            value=dims,
            limit=f"an int or {nd} ints",
            where=where,
            fix=f"pass {name} as an int or a tuple of {nd} ints",
        )
    return dims


def _shape(shape: Any, nd: int | None, where: str) -> tuple[int, ...]:
    """An input shape of ``nd`` positive ints (any number when ``nd`` is None)."""
    dims = _ints(shape, "input shape", where, 1)
    if (nd is not None and len(dims) != nd) or not dims:
        raise GraphError(
            "input shape",
            value=dims,
            limit=f"{nd} positive ints" if nd is not None else "positive ints",
            where=where,
            fix=f"pass the input shape as {nd} ints, channels first" if nd else "pass the shape, e.g. (C, H, W)",
        )
    return dims


def _array(value: Any, name: str, where: str) -> Any:
    """A real, finite float64 array within float32 (GraphError otherwise); a tracer passes unchecked."""
    return as_param(value, name, where)


class _Stateless(eqx.Module):
    """Protocol glue for layers without state that act on all time steps at once."""

    @property
    def size_in(self) -> int:
        """Input channels ``prod(input_shape)``."""
        return int(np.prod(self.input_shape))

    @property
    def size_out(self) -> int:
        """Output channels ``prod(output_shape)``."""
        return int(np.prod(self.output_shape))

    def init_state(self, batch_shape: tuple[int, ...] = ()) -> None:
        """Stateless: ``None``."""
        return None

    def _apply(self, x: jax.Array) -> jax.Array:  # (M, *input_shape) -> (M, *output_shape)
        raise NotImplementedError

    def evolve_tm(self, x: jax.Array, state: None, record: bool):
        """``x`` (T, *batch, N_in) -> (T, *batch, N_out), all steps at once."""
        lead = x.shape[:-1]
        y = self._apply(x.reshape((-1,) + tuple(self.input_shape)))
        return y.reshape(lead + (self.size_out,)), None, {}

    def __call__(self, x: Any, state: None = None, record: bool = False):
        """``(output, None, {})`` for (T, N_in) or (B, T, N_in)."""
        return evolve_time_major(self, x, state, record)

    evolve = __call__

    def as_graph(self, name: str | None = None):
        """No pondlib graph (device) equivalent: raises :class:`~pondlib.errors.GraphError`."""
        raise GraphError(
            f"{type(self).__name__} has no pondlib.graph equivalent",
            where=name or type(self).__name__,
            fix="device mappers take Linear/LIF networks; export this network with pondlib.interop.nir.to_nir instead",
        )


class _ConvNd(_Stateless):
    weight: jax.Array
    bias: jax.Array | None
    input_shape: tuple = eqx.field(static=True)
    output_shape: tuple = eqx.field(static=True)
    stride: tuple = eqx.field(static=True)
    padding: Any = eqx.field(static=True)  # as given: "same", "valid" or a tuple of ints
    pads: tuple = eqx.field(static=True)  # ((lo, hi), ...) used by lax
    dilation: tuple = eqx.field(static=True)
    groups: int = eqx.field(static=True)

    def _setup(self, nd: int, input_shape, weight, bias, stride, padding, dilation, groups) -> None:
        where = type(self).__name__
        w = _array(weight, "weight", where)
        if w.ndim != nd + 2:
            raise GraphError(
                "weight shape",
                value=w.shape,
                limit=f"(C_out, C_in / groups{', K' * nd})",
                where=where,
                fix=f"pass a {nd + 2}-D weight",
            )
        self.input_shape = _shape(input_shape, nd + 1, where)
        self.groups = check_int(groups, "groups", lo=1, where=where, error=GraphError)
        c_in = self.input_shape[0]
        if self.groups <= 0 or c_in % self.groups or w.shape[0] % self.groups or w.shape[1] * self.groups != c_in:
            raise GraphError(
                "conv channels",
                value=f"C_in {c_in}, weight {w.shape}, groups {groups}",
                limit="C_in == weight.shape[1] * groups",
                where=where,
                fix="check the input shape (channels first) and groups",
            )
        self.stride = _tuple(stride, nd, "stride", where)
        self.dilation = _tuple(dilation, nd, "dilation", where)
        kernel = w.shape[2:]
        if isinstance(padding, str):
            check_choice(
                padding,
                "padding",
                ("same", "valid"),
                where=where,
                error=GraphError,
                fix="pass padding='same', 'valid' or an int per dimension",
            )
            if padding == "same" and any(s != 1 for s in self.stride):
                raise GraphError(
                    "padding",
                    value=f"'same' with stride {self.stride}",
                    limit="stride 1",
                    where=where,
                    fix="pass explicit padding ints with a stride > 1 (PyTorch refuses 'same' there too)",
                )
            self.padding = padding
            if padding == "valid":
                self.pads = tuple((0, 0) for _ in range(nd))
            else:  # PyTorch 'same' (stride 1): total = d (k - 1), extra on the high side
                tot = [d * (k - 1) for d, k in zip(self.dilation, kernel)]
                self.pads = tuple((t // 2, t - t // 2) for t in tot)
        else:
            p = _tuple(padding, nd, "padding", where, lo=0)
            self.padding = p
            self.pads = tuple((v, v) for v in p)
        spatial = []
        for size, (lo, hi), d, k, s in zip(self.input_shape[1:], self.pads, self.dilation, kernel, self.stride):
            out = (size + lo + hi - d * (k - 1) - 1) // s + 1
            if out <= 0:
                raise GraphError(
                    "conv output size",
                    value=out,
                    limit="> 0",
                    where=where,
                    fix="the kernel is larger than the padded input",
                )
            spatial.append(out)
        self.output_shape = (int(w.shape[0]),) + tuple(spatial)
        self.weight = jnp.asarray(w, jnp.float32)
        if bias is None or bias is False:
            self.bias = None
        else:
            b = np.zeros(w.shape[0]) if bias is True else _array(bias, "bias", where)
            if b.ndim == 0:  # one bias shared by every output channel
                b = np.full(w.shape[0], float(b))
            if b.shape != (w.shape[0],):
                raise GraphError(
                    "bias shape",
                    value=b.shape,
                    limit=(w.shape[0],),
                    where=where,
                    fix="pass one bias per output channel",
                )
            self.bias = jnp.asarray(b, jnp.float32)

    def _apply(self, x: jax.Array) -> jax.Array:
        nd = len(self.stride)
        spec = ("NCH", "OIH", "NCH") if nd == 1 else ("NCHW", "OIHW", "NCHW")
        y = jax.lax.conv_general_dilated(
            x,
            self.weight,
            self.stride,
            self.pads,
            rhs_dilation=self.dilation,
            dimension_numbers=spec,
            feature_group_count=self.groups,
        )
        if self.bias is not None:
            y = y + self.bias.reshape((-1,) + (1,) * nd)
        return y


class Conv1d(_ConvNd):
    """1-D convolution (NIR ``Conv1d``), features flat ``C * L``.

    Args:
        input_shape: ``(C_in, L)``.
        weight: ``(C_out, C_in / groups, K)``.
        bias: ``(C_out,)``, True (zeros) or None.
        stride, padding (int or ``"same"``/``"valid"``), dilation, groups: as in PyTorch.
    """

    def __init__(
        self,
        input_shape: Any,
        *,
        weight: Any,
        bias: Any = None,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
    ):
        self._setup(1, input_shape, weight, bias, stride, padding, dilation, groups)


class Conv2d(_ConvNd):
    """2-D convolution (NIR ``Conv2d``), features flat ``C * H * W``.

    Args:
        input_shape: ``(C_in, H, W)``.
        weight: ``(C_out, C_in / groups, K_h, K_w)``.
        bias: ``(C_out,)``, True (zeros) or None.
        stride, padding (int, pair or ``"same"``/``"valid"``), dilation, groups: as in PyTorch.
    """

    def __init__(
        self,
        input_shape: Any,
        *,
        weight: Any,
        bias: Any = None,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
    ):
        self._setup(2, input_shape, weight, bias, stride, padding, dilation, groups)


class SumPool2d(_Stateless):
    """Sum pooling (NIR ``SumPool2d``) over ``(C, H, W)`` features (see the module docstring)."""

    input_shape: tuple = eqx.field(static=True)
    output_shape: tuple = eqx.field(static=True)
    kernel_size: tuple = eqx.field(static=True)
    stride: tuple = eqx.field(static=True)
    padding: tuple = eqx.field(static=True)

    def __init__(self, input_shape: Any, *, kernel_size: Any, stride: Any = None, padding: Any = 0):
        where = type(self).__name__
        self.input_shape = _shape(input_shape, 3, where)
        self.kernel_size = _tuple(kernel_size, 2, "kernel_size", where)
        self.stride = _tuple(self.kernel_size if stride is None else stride, 2, "stride", where)
        self.padding = _tuple(padding, 2, "padding", where, lo=0)
        if any(2 * p > k for p, k in zip(self.padding, self.kernel_size)):
            raise GraphError(
                "padding",
                value=self.padding,
                limit=f"at most half the kernel size {self.kernel_size}",
                where=where,
                fix="reduce the padding: a window of padding only would pool nothing (PyTorch refuses it too)",
            )
        out = [
            (n + 2 * p - k) // s + 1
            for n, p, k, s in zip(self.input_shape[1:], self.padding, self.kernel_size, self.stride)
        ]
        if min(out) <= 0:
            raise GraphError(
                "pool output size",
                value=out,
                limit="> 0",
                where=where,
                fix="the pooling window is larger than the padded input",
            )
        self.output_shape = (self.input_shape[0],) + tuple(out)

    def _apply(self, x: jax.Array) -> jax.Array:
        pads = ((0, 0), (0, 0)) + tuple((p, p) for p in self.padding)
        return jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 1) + self.kernel_size, (1, 1) + self.stride, pads)


class AvgPool2d(SumPool2d):
    """Average pooling (NIR ``AvgPool2d``): :class:`SumPool2d` divided by the window size."""

    def _apply(self, x: jax.Array) -> jax.Array:
        return super()._apply(x) / float(self.kernel_size[0] * self.kernel_size[1])


class Flatten(_Stateless):
    """Flatten (NIR ``Flatten``): the identity on flat features; records the shapes.

    ``start_dim``/``end_dim`` index the NIR shape *without* batch and time (NIR files from Sinabs write
    ``start_dim = 0`` for ``(C, H, W) -> (C H W)``).
    """

    input_shape: tuple = eqx.field(static=True)
    output_shape: tuple = eqx.field(static=True)
    start_dim: int = eqx.field(static=True)
    end_dim: int = eqx.field(static=True)

    def __init__(self, input_shape: Any, *, start_dim: int = 0, end_dim: int = -1):
        dims = _shape(input_shape, None, "Flatten")
        nd = len(dims)
        s = check_int(start_dim, "start_dim", where="Flatten", error=GraphError)
        e = check_int(end_dim, "end_dim", where="Flatten", error=GraphError)
        s2, e2 = s % nd if -nd <= s < nd else None, e % nd if -nd <= e < nd else None
        if s2 is None or e2 is None or s2 > e2:
            raise GraphError(
                "flatten dims",
                value=(s, e),
                limit=f"0 <= start <= end < {nd}",
                where="Flatten",
                fix="pass start_dim/end_dim within the input shape",
            )
        self.input_shape, self.start_dim, self.end_dim = dims, s, e
        self.output_shape = dims[:s2] + (int(np.prod(dims[s2 : e2 + 1])),) + dims[e2 + 1 :]

    def _apply(self, x: jax.Array) -> jax.Array:
        return x


class Scale(_Stateless):
    """Element-wise scale (NIR ``Scale``): ``y = scale * x``, ``scale`` (N,) trainable."""

    scale: jax.Array
    input_shape: tuple = eqx.field(static=True)
    output_shape: tuple = eqx.field(static=True)

    def __init__(self, shape: Any, *, scale: Any):
        dims = _shape(shape, None, "Scale")
        n = int(np.prod(dims))
        s = _array(scale, "scale", "Scale").reshape(-1)
        if s.size == 1:
            s = jnp.full(n, s[0])
        if s.shape != (n,):
            raise GraphError(
                "scale shape",
                value=np.shape(scale),
                limit=f"a scalar or {n} values",
                where="Scale",
                fix="pass one finite scale per channel",
            )
        self.scale = jnp.asarray(s, jnp.float32)
        self.input_shape = self.output_shape = dims

    def evolve_tm(self, x: jax.Array, state: None, record: bool):
        """``scale * x``, all steps at once."""
        return x * self.scale, None, {}


class Delay(eqx.Module):
    """Per-channel delay (NIR ``Delay``) by whole steps: ``y[t, n] = x[t - d_n, n]``.

    ``delay`` is in seconds (NIR); ``d_n = round(delay_n / dt)`` must be a whole number of steps
    (within 1e-6 relative) or :class:`~pondlib.errors.GraphError` says which channel is not. The state
    is the last ``max(d)`` inputs, (max(d), *batch, N).

    Example:
        >>> import jax.numpy as jnp
        >>> d = Delay(2, delay=[0.0, 2e-3], dt=1e-3)
        >>> d(jnp.array([[1., 1.], [2., 2.], [3., 3.]]))[0].tolist()
        [[1.0, 0.0], [2.0, 0.0], [3.0, 1.0]]
    """

    steps: tuple = eqx.field(static=True)
    shape: tuple = eqx.field(static=True)
    dt: float = eqx.field(static=True)

    def __init__(self, shape: Any, *, delay: Any, dt: float):
        dims = _shape(shape, None, "Delay")
        n = int(np.prod(dims))
        raw = as_array(delay, "delay", where="Delay", error=GraphError)
        if raw.dtype.kind == "b":
            raise GraphError("delay", value="booleans", limit="delays in seconds", where="Delay", fix="pass seconds")
        d = as_float_array(raw, "delay", lo=0.0, where="Delay", error=GraphError).reshape(-1)
        if d.size == 1:
            d = np.full(n, float(d[0]))
        dt = check_float(dt, "dt", lo=0.0, lo_open=True, where="Delay", error=GraphError, fix="pass dt in seconds")
        if d.shape != (n,):
            raise GraphError(
                "delay shape",
                value=np.shape(delay),
                limit=f"a scalar or {n} values",
                where="Delay",
                fix="pass one delay in seconds per channel",
            )
        with np.errstate(over="ignore"):
            steps = d / dt
        if not np.all(steps <= MAX_DELAY_STEPS):
            i = int(np.flatnonzero(~(steps <= MAX_DELAY_STEPS))[0])
            raise GraphError(
                "delay steps",
                value=f"{d[i]} s / dt = {steps[i]} steps",
                limit=f"at most {MAX_DELAY_STEPS} steps (the state holds that many inputs per channel)",
                where=f"Delay channel {i}",
                fix="check the units (seconds) and dt",
            )
        off = np.abs(steps - np.round(steps)) > 1e-6 * np.maximum(1.0, steps)
        if np.any(off):
            i = int(np.flatnonzero(off)[0])
            raise GraphError(
                "delay is not a whole number of steps",
                value=f"{d[i]} s / dt = {steps[i]}",
                limit="an integer",
                where=f"Delay channel {i}",
                fix="choose dt dividing every delay",
            )
        self.steps = tuple(int(s) for s in np.round(steps))
        self.shape, self.dt = dims, float(dt)

    @property
    def size_in(self) -> int:
        """Channels (in = out)."""
        return int(np.prod(self.shape))

    @property
    def size_out(self) -> int:
        """Channels (in = out)."""
        return self.size_in

    def init_state(self, batch_shape: tuple[int, ...] = ()) -> jax.Array:
        """The last ``max(d)`` inputs, zeros: (max(d), *batch, N)."""
        batch_shape = check_batch_shape(batch_shape, "Delay")
        return jnp.zeros((max(self.steps),) + batch_shape + (self.size_in,), jnp.float32)

    def evolve_tm(self, x: jax.Array, state: jax.Array, record: bool):
        """``x`` (T, *batch, N) -> delayed (T, *batch, N); the new state is the last max(d) inputs."""
        m = max(self.steps)
        if m == 0:
            return x, state, {}
        full = jnp.concatenate([state, x], axis=0)
        t = x.shape[0]
        idx = m + jnp.arange(t)[:, None] - jnp.asarray(self.steps)[None, :]  # (T, N)
        idx = idx.reshape((t,) + (1,) * (x.ndim - 2) + (self.size_in,))
        y = jnp.take_along_axis(full, jnp.broadcast_to(idx, x.shape), axis=0)
        return y, full[t:], {}

    def __call__(self, x: Any, state: jax.Array | None = None, record: bool = False):
        """``(output, state, {})`` for (T, N) or (B, T, N)."""
        return evolve_time_major(self, x, state, record)

    evolve = __call__

    def as_graph(self, name: str | None = None):
        """No pondlib graph equivalent: raises :class:`~pondlib.errors.GraphError`."""
        raise GraphError(
            "Delay has no pondlib.graph equivalent",
            where=name or "Delay",
            fix="export with pondlib.interop.nir.to_nir instead",
        )
