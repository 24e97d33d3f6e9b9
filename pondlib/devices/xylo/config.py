"""A typed Xylo core configuration: every register of the core, validated, saved and loaded losslessly.

:class:`XyloConfig` is what the simulator (:mod:`pondlib.devices.xylo.sim`) and, later, a board runs.
It is built from a quantized :class:`~pondlib.devices.xylo.specification.Specification` by
:func:`config_from_specification` and checked by :func:`validate_config`, which returns *every*
problem at once (field, first offending index, value and allowed range), never the first only.

Integer arrays are stored as ``np.int64`` (wider than the chip's registers) so that an out-of-range
value stays representable and can be reported: nothing is wrapped or clipped when a configuration is
built. A field holding non-integer values (an unrounded dash, a NaN) is kept as ``float64`` so that
:func:`validate_config` can report it; such a configuration is invalid. What is not a number at all is
refused when the configuration is built, with a :class:`~pondlib.errors.ConfigError` naming the field:
strings, ``None``, complex and object arrays, ragged nesting, a ``bias_enable`` that is not a bool (the
string ``"False"`` is not one), a ``dt`` or weight shift that is not a real number, a ``limits_name``
that is not a string.

Fields (``N_in`` input channels, ``N_hid`` hidden neurons, ``N_out`` output neurons, ``k`` synapses per
hidden neuron, 1 or 2):

========================================  ================  ===========  ==========================================
field                                     shape             chip width   meaning
========================================  ================  ===========  ==========================================
``weights_in``                            (N_in, N_hid, k)  int8         input -> hidden ``[pre, post, syn]``
``weights_rec``                           (N_hid, N_hid, k) int8         hidden -> hidden (one step delay)
``weights_out``                           (N_hid, N_out)    int8         hidden -> output (one step delay)
``dash_mem``, ``dash_syn``, ``dash_syn_2``  (N_hid,)          uint4 0..15  decay bit-shifts (membrane, syn 0, syn 1)
``dash_mem_out``, ``dash_syn_out``          (N_out,)          uint4 0..15  output decay bit-shifts
``threshold``, ``bias``                   (N_hid,)          int16        hidden threshold, constant bias current
``threshold_out``, ``bias_out``           (N_out,)          int16        output threshold and bias
``weight_shift_in/rec/out``               int               uint4 0..15  left shift of each projection's weights
``aliases``                               (N_hid,)          id or -1     alias target (a higher hidden id)
``bias_enable``                           bool              1 bit        biases are added only when enabled
``dt``                                    float (s)         -            the common time step
``limits_name``                           str               -            the Xylo variant (see ``limits.py``)
========================================  ================  ===========  ==========================================

Example:
    >>> import numpy as np
    >>> from pondlib.devices.xylo.specification import Specification
    >>> spec = Specification.zeros(n_in=2, n_hidden=3, n_output=1, n_synapses=1)
    >>> spec = spec.replace(threshold=np.full(3, 10.0), threshold_out=np.ones(1),
    ...                     dash_mem=np.full(3, 2.5))
    >>> config, ok, message = config_from_specification(spec)
    >>> ok
    False
    >>> print(message)
    1 configuration problem(s):
      - dash_mem[0]: got 2.5, expected an integer in 0..15 (non-integer; 3 value(s) affected)
    >>> config, ok, message = config_from_specification(spec.replace(dash_mem=np.full(3, 2.0)))
    >>> ok, message, config.dash_mem.dtype, config.bias_enable
    (True, 'valid', dtype('int64'), False)
    >>> config.weights_in.shape
    (2, 3, 1)
"""

from __future__ import annotations

import dataclasses
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pondlib.devices.xylo.limits import XyloLimits, get_limits
from pondlib.devices.xylo.specification import Specification
from pondlib.errors import ConfigError, PondError
from pondlib.validate import check_npy_sizes, check_readable_file, check_writable_file

__all__ = [
    "XyloConfig",
    "validate_config",
    "config_from_specification",
    "config_equal",
    "CONFIG_ARRAY_FIELDS",
    "CONFIG_SCALAR_FIELDS",
]

#: Array-valued fields, in a fixed order.
CONFIG_ARRAY_FIELDS = (
    "weights_in",
    "weights_rec",
    "weights_out",
    "dash_mem",
    "dash_syn",
    "dash_syn_2",
    "dash_mem_out",
    "dash_syn_out",
    "threshold",
    "bias",
    "threshold_out",
    "bias_out",
    "aliases",
)
#: Scalar fields, in a fixed order.
CONFIG_SCALAR_FIELDS = (
    "weight_shift_in",
    "weight_shift_rec",
    "weight_shift_out",
    "bias_enable",
    "dt",
    "limits_name",
)

_FORMAT_KEY = "__xylo_config_format__"
_FORMAT_VERSION = 1


def _as_register_array(value: Any, name: str) -> np.ndarray:
    """A read-only copy of ``value``: int64 when every entry is an integer, else float64 (or as is).

    Never rounds, wraps or clips: a non-integer or out-of-range value is kept so it can be reported.
    Refuses what is not a real numeric array (``None``, strings, complex, objects, ragged nesting).
    """
    fix = f"pass {name} as a numeric array"
    if value is None or isinstance(value, (str, bytes)):
        shown = "None" if value is None else f"a {type(value).__name__} ({value!r})"
        raise ConfigError(f"field {name!r}", value=shown, limit="a numeric array", where="XyloConfig", fix=fix)
    try:
        arr = np.array(value, copy=True)
    except (TypeError, ValueError):
        raise ConfigError(
            f"field {name!r}",
            value="a ragged nested sequence",
            limit="a rectangular array",
            where="XyloConfig",
            fix=fix,
        ) from None
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int64)
    elif arr.dtype.kind in "iu":
        if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            arr = arr.astype(np.float64)  # unrepresentable in int64: kept as float, reported invalid
        else:
            arr = arr.astype(np.int64)
    elif arr.dtype.kind == "f":
        arr = arr.astype(np.float64)
        finite = np.isfinite(arr)
        big = np.abs(np.where(finite, arr, 0.0)) >= 2.0**62
        if finite.all() and not big.any() and np.array_equal(arr, np.rint(arr)):
            arr = arr.astype(np.int64)
    else:
        raise ConfigError(
            f"field {name!r} is not numeric",
            value=str(arr.dtype),
            limit="an integer or float array",
            where="XyloConfig",
            fix=fix,
        )
    arr.setflags(write=False)
    return arr


def _is_real(value: Any) -> bool:
    return isinstance(value, (numbers.Real, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _as_register_scalar(value: Any, name: str) -> Any:
    """An int when ``value`` is integer-valued, else the number unchanged (to be reported); a bool is
    0 or 1; anything that is not a real number is refused."""
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "biuf":
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if not _is_real(value):
        raise ConfigError(
            f"field {name!r}",
            value=f"a {type(value).__name__} ({value!r})",
            limit="an integer",
            where="XyloConfig",
            fix=f"pass {name} as an integer 0..15",
        )
    if isinstance(value, (int, np.integer)):
        return int(value)
    if np.isfinite(value) and float(value).is_integer():
        return int(value)
    return float(value)


@dataclass(frozen=True, eq=False)
class XyloConfig:
    """Every register of one Xylo core (see the module docstring for the table of fields).

    Arrays are read-only copies (``np.int64``, or ``float64`` when a value is not an integer, which
    :func:`validate_config` reports). Equality (``==``) compares every field, dtypes included.
    """

    weights_in: np.ndarray
    weights_rec: np.ndarray
    weights_out: np.ndarray
    dash_mem: np.ndarray
    dash_syn: np.ndarray
    dash_syn_2: np.ndarray
    dash_mem_out: np.ndarray
    dash_syn_out: np.ndarray
    threshold: np.ndarray
    bias: np.ndarray
    threshold_out: np.ndarray
    bias_out: np.ndarray
    aliases: np.ndarray
    weight_shift_in: int = 0
    weight_shift_rec: int = 0
    weight_shift_out: int = 0
    bias_enable: bool = False
    dt: float = 1e-3
    limits_name: str = "Xylo Audio 2"

    def __post_init__(self) -> None:
        for name in CONFIG_ARRAY_FIELDS:
            object.__setattr__(self, name, _as_register_array(getattr(self, name), name))
        for name in ("weight_shift_in", "weight_shift_rec", "weight_shift_out"):
            object.__setattr__(self, name, _as_register_scalar(getattr(self, name), name))
        enable = self.bias_enable
        if isinstance(enable, np.ndarray) and enable.shape == () and enable.dtype.kind == "b":
            enable = enable.item()
        if not isinstance(enable, (bool, np.bool_)):
            raise ConfigError(
                "field 'bias_enable'",
                value=f"a {type(enable).__name__} ({enable!r})",
                limit="True or False",
                where="XyloConfig",
                fix="pass a bool (a string such as 'False' is not one)",
            )
        object.__setattr__(self, "bias_enable", bool(enable))
        dt = self.dt
        if isinstance(dt, np.ndarray) and dt.shape == () and dt.dtype.kind in "iuf":
            dt = dt.item()
        if not _is_real(dt):
            raise ConfigError(
                "field 'dt'",
                value=f"a {type(dt).__name__} ({dt!r})",
                limit="a number of seconds",
                where="XyloConfig",
                fix="pass dt in seconds, e.g. 1e-3",
            )
        object.__setattr__(self, "dt", float(dt))  # its range (and NaN) is reported by validate_config
        if not isinstance(self.limits_name, str):
            raise ConfigError(
                "field 'limits_name'",
                value=f"a {type(self.limits_name).__name__}",
                limit="a str (the Xylo variant's name)",
                where="XyloConfig",
                fix="pass e.g. limits_name='Xylo Audio 2'",
            )

    # -- sizes ----------------------------------------------------------------------------------
    @property
    def n_input(self) -> int:
        """Number of input channels."""
        return int(self.weights_in.shape[0]) if self.weights_in.ndim >= 1 else 0

    @property
    def n_hidden(self) -> int:
        """Number of hidden neurons."""
        return int(self.threshold.shape[0]) if self.threshold.ndim == 1 else 0

    @property
    def n_output(self) -> int:
        """Number of output neurons."""
        return int(self.threshold_out.shape[0]) if self.threshold_out.ndim == 1 else 0

    @property
    def n_synapses(self) -> int:
        """Synaptic states per hidden neuron (1 or 2)."""
        return int(self.weights_in.shape[2]) if self.weights_in.ndim == 3 else 0

    # -- equality -------------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, XyloConfig):
            return NotImplemented
        return config_equal(self, other)

    __hash__ = None  # type: ignore[assignment]  # mutable-content arrays: not hashable

    def replace(self, **changes: Any) -> XyloConfig:
        """A new configuration with some fields replaced (this one is untouched)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Every field as a plain dict (arrays are writable copies)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.copy() if isinstance(v, np.ndarray) else v
        return out

    # -- persistence ----------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> str:
        """Write the configuration to ``path`` (an ``.npz`` archive, written exactly at ``path``).

        Lossless: ``XyloConfig.load(path) == self``, dtypes included. Returns the path written.

        Raises:
            ConfigError: ``path`` is not a path, is a directory, its directory does not exist, or the
                file cannot be written.
        """
        p = check_writable_file(path, "configuration file", error=ConfigError)
        payload: dict[str, np.ndarray] = {name: getattr(self, name) for name in CONFIG_ARRAY_FIELDS}
        for name in CONFIG_SCALAR_FIELDS:
            payload[name] = np.asarray(getattr(self, name))
        payload[_FORMAT_KEY] = np.asarray(_FORMAT_VERSION)
        try:
            with open(p, "wb") as fh:
                np.savez(fh, **payload)
        except OSError as exc:
            raise ConfigError(
                f"cannot write the configuration ({type(exc).__name__}: {exc.strerror or exc})",
                where=str(p),
                fix="check the path and its permissions",
            ) from None
        return os.fspath(path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> XyloConfig:
        """Read a configuration written by :meth:`save`.

        Every decoding failure becomes a :class:`~pondlib.errors.ConfigError` naming the file (and the
        field when one is at fault): a missing file or a directory, a file that is not an ``.npz``
        archive, a corrupted or truncated zip/deflate stream, a missing, unknown or wrongly typed field
        (``bias_enable`` must be stored as a bool, never as the string ``"False"``; ``limits_name`` as
        a string; the others as numbers), and a format version other than the one this pondlib writes.
        Values are kept as stored (:func:`validate_config` reports out-of-range ones).
        """
        fix = "pass a file written by XyloConfig.save"
        p = check_readable_file(path, "configuration file", error=ConfigError, suffix=".npz")
        where = str(p)
        check_npy_sizes(p, "configuration file", error=ConfigError)  # the size budget, before np.load allocates
        try:
            fh = open(p, "rb")  # closed below (np.load leaks the handle it opens when the zip is bad)
        except OSError as exc:
            raise ConfigError(f"cannot read the file ({type(exc).__name__}: {exc})", where=where, fix=fix) from None
        with fh:
            fields = cls._read_archive(fh, where, fix)
        try:
            return cls(**fields)
        except PondError as exc:
            raise ConfigError(f"invalid field in archive: {exc}", where=where, fix=fix) from None

    @staticmethod
    def _read_archive(fh: Any, where: str, fix: str) -> dict[str, Any]:
        """The fields of an open ``.npz`` file, every decoding failure a ConfigError (see :meth:`load`)."""
        try:
            archive = np.load(fh, allow_pickle=False)
        except Exception as exc:  # BadZipFile, zlib.error, EOFError, OSError, ValueError, ...: all mean "corrupt"
            raise ConfigError(f"not a XyloConfig archive ({type(exc).__name__}: {exc})", where=where, fix=fix) from None
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise ConfigError("not a XyloConfig archive (a single .npy array, not an .npz)", where=where, fix=fix)
        with archive:
            keys = set(archive.files)
            expected = {*CONFIG_ARRAY_FIELDS, *CONFIG_SCALAR_FIELDS, _FORMAT_KEY}
            missing = [k for k in (*CONFIG_ARRAY_FIELDS, *CONFIG_SCALAR_FIELDS, _FORMAT_KEY) if k not in keys]
            if missing:
                raise ConfigError(
                    f"missing key {missing[0]!r}"
                    + (f" (and {len(missing) - 1} more: {missing[1:]})" if len(missing) > 1 else ""),
                    where=where,
                    fix=fix,
                )
            unknown = sorted(keys - expected)
            if unknown:
                raise ConfigError(
                    "unknown key(s) in the archive", value=unknown, limit=sorted(expected), where=where, fix=fix
                )

            def read(key: str) -> np.ndarray:
                try:
                    return archive[key]
                except Exception as exc:  # zlib.error, BadZipFile (CRC), EOFError, NotImplementedError, ...
                    raise ConfigError(
                        f"field {key!r} cannot be decoded ({type(exc).__name__}: {exc})", where=where, fix=fix
                    ) from None

            def bad(key: str, arr: np.ndarray, expected: str) -> ConfigError:
                return ConfigError(
                    f"field {key!r}",
                    value=f"dtype {arr.dtype}, shape {arr.shape}",
                    limit=expected,
                    where=where,
                    fix=fix,
                )

            version = read(_FORMAT_KEY)
            if version.shape != () or version.dtype.kind not in "iu":
                raise bad(_FORMAT_KEY, version, "an integer format version")
            if int(version) != _FORMAT_VERSION:
                raise ConfigError(
                    "format version",
                    value=int(version),
                    limit=_FORMAT_VERSION,
                    where=where,
                    fix="the file was written by another pondlib version: save it again with this one",
                )
            fields: dict[str, Any] = {}
            for k in CONFIG_ARRAY_FIELDS:
                arr = read(k)
                if arr.dtype.kind not in "biuf":
                    raise bad(k, arr, "a numeric array")
                fields[k] = arr
            for k in CONFIG_SCALAR_FIELDS:
                arr = read(k)
                kinds = {"bias_enable": "b", "limits_name": "U", "dt": "iuf"}.get(k, "iuf")
                if arr.shape != () or arr.dtype.kind not in kinds:
                    what = {"b": "a bool", "U": "a string"}.get(kinds, "a number")
                    raise bad(k, arr, f"{what} (0-d)")
                fields[k] = arr.item()
        return fields


def config_equal(a: XyloConfig, b: XyloConfig) -> bool:
    """True when every field of ``a`` and ``b`` is equal (arrays: same dtype, shape and values).

    Example:
        >>> from pondlib.devices.xylo.specification import Specification
        >>> c, _, _ = config_from_specification(Specification.zeros(1, 2, 1))
        >>> config_equal(c, c.replace(dt=2e-3)), config_equal(c, c.replace())
        (False, True)
    """
    for f in dataclasses.fields(XyloConfig):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)):
                return False
            if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y, equal_nan=True):
                return False
        elif type(x) is not type(y) or not (x == y or (x != x and y != y)):
            return False
    return True


# -- validation -----------------------------------------------------------------------------------
def _idx(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def _fmtv(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return repr(int(f)) if f.is_integer() and abs(f) < 2**53 else repr(f)
    if isinstance(v, np.integer):
        return repr(int(v))
    return repr(v)


def _check_int_array(
    name: str, arr: np.ndarray, lo: int, hi: int, problems: list[str], allowed: str | None = None
) -> None:
    """Append one problem per kind (non-finite, non-integer, out of range) found in ``arr``."""
    rng = allowed or f"an integer in {lo}..{hi}"
    if arr.size == 0:
        return
    if arr.dtype.kind == "f":
        nonfinite = ~np.isfinite(arr)
        if nonfinite.any():
            first = tuple(np.argwhere(nonfinite)[0])
            problems.append(
                f"{name}{_idx(first)}: got {_fmtv(arr[first])}, expected {rng} "
                f"(non-finite; {int(nonfinite.sum())} value(s) affected)"
            )
        safe = np.where(nonfinite, 0.0, arr)
        nonint = np.isfinite(arr) & (safe != np.rint(safe))
        if nonint.any():
            first = tuple(np.argwhere(nonint)[0])
            problems.append(
                f"{name}{_idx(first)}: got {_fmtv(arr[first])}, expected {rng} "
                f"(non-integer; {int(nonint.sum())} value(s) affected)"
            )
        out = np.isfinite(arr) & ~nonint & ((safe < lo) | (safe > hi))
    else:
        out = (arr < lo) | (arr > hi)
    if out.any():
        first = tuple(np.argwhere(out)[0])
        problems.append(
            f"{name}{_idx(first)}: got {_fmtv(arr[first])}, expected {rng} "
            f"(out of range; {int(out.sum())} value(s) affected)"
        )


def _check_int_scalar(name: str, v: Any, lo: int, hi: int, problems: list[str]) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        problems.append(f"{name}: got {_fmtv(v)}, expected an integer in {lo}..{hi} (not an integer)")
    elif not lo <= int(v) <= hi:
        problems.append(f"{name}: got {int(v)}, expected an integer in {lo}..{hi} (out of range)")


@dataclass(frozen=True)
class _Dims:
    """The sizes a configuration's arrays imply (None where no array tells): ``N_in`` and ``k`` from
    ``weights_in`` (``k`` from ``weights_rec`` when ``weights_in`` is not 3-D), ``N_hid`` from
    ``weights_in`` or ``threshold``, ``N_out`` from ``threshold_out`` or ``weights_out``."""

    n_in: int | None
    n_hid: int | None
    n_out: int | None
    k: int | None

    @staticmethod
    def of(config: XyloConfig) -> _Dims:
        """The sizes of ``config``."""
        win, wrec, wout = config.weights_in, config.weights_rec, config.weights_out
        n_in = n_hid = n_out = k = None
        if win.ndim == 3:
            n_in, n_hid, k = win.shape
        if config.threshold.ndim == 1 and n_hid is None:
            n_hid = config.threshold.shape[0]
        if config.threshold_out.ndim == 1:
            n_out = config.threshold_out.shape[0]
        elif wout.ndim == 2:
            n_out = wout.shape[1]
        if k is None and wrec.ndim == 3:
            k = wrec.shape[2]
        return _Dims(n_in, n_hid, n_out, k)


def _shapes(config: XyloConfig, lim: XyloLimits, dims: _Dims) -> list[str]:
    """Shapes: ``weights_in`` 3-D with k = 1 or 2; every other array of the shape the sizes imply."""
    problems = []
    n_hid, n_out, k = dims.n_hid, dims.n_out, dims.k
    if config.weights_in.ndim != 3:
        problems.append(f"weights_in: got shape {config.weights_in.shape}, expected (N_in, N_hid, k), 3-D")
    if k is not None and k not in (1, 2):
        problems.append(f"weights_in: got k = {k} synapses per neuron, expected 1 or 2")
    wrec, wout = config.weights_rec, config.weights_out
    if n_hid is not None and k is not None and wrec.shape != (n_hid, n_hid, k):
        problems.append(f"weights_rec: got shape {wrec.shape}, expected (N_hid, N_hid, k) = {(n_hid, n_hid, k)}")
    if n_hid is not None and n_out is not None and wout.shape != (n_hid, n_out):
        problems.append(f"weights_out: got shape {wout.shape}, expected (N_hid, N_out) = {(n_hid, n_out)}")
    for name in ("dash_mem", "dash_syn", "dash_syn_2", "threshold", "bias", "aliases"):
        a = getattr(config, name)
        if n_hid is not None and a.shape != (n_hid,):
            problems.append(f"{name}: got shape {a.shape}, expected (N_hid,) = ({n_hid},)")
    for name in ("dash_mem_out", "dash_syn_out", "threshold_out", "bias_out"):
        a = getattr(config, name)
        if n_out is not None and a.shape != (n_out,):
            problems.append(f"{name}: got shape {a.shape}, expected (N_out,) = ({n_out},)")
    return problems


def _sizes(config: XyloConfig, lim: XyloLimits, dims: _Dims) -> list[str]:
    """Sizes against the variant: 1 <= N_in, N_hid, N_out <= its limits; k <= its synapses."""
    problems = []
    n_in, n_hid, n_out, k = dims.n_in, dims.n_hid, dims.n_out, dims.k
    if n_in is not None and not 1 <= n_in <= lim.n_input:
        problems.append(f"weights_in: got N_in = {n_in} input channels, expected 1..{lim.n_input} ({lim.name})")
    if n_hid is not None and not 1 <= n_hid <= lim.n_hidden:
        problems.append(f"weights_in: got N_hid = {n_hid} hidden neurons, expected 1..{lim.n_hidden} ({lim.name})")
    if n_out is not None and not 1 <= n_out <= lim.n_output:
        problems.append(f"weights_out: got N_out = {n_out} output neurons, expected 1..{lim.n_output} ({lim.name})")
    if k is not None and k in (1, 2) and k > lim.n_synapses:
        problems.append(
            f"weights_in: got k = {k} synapses per hidden neuron, expected at most {lim.n_synapses} ({lim.name})"
        )
    return problems


def _value_ranges(config: XyloConfig, lim: XyloLimits, dims: _Dims) -> list[str]:
    """Integer values in the registers' ranges: weights (int8), dashes (0..dash_max), thresholds and
    biases (int16), weight shifts (0..weight_shift_max)."""
    problems: list[str] = []
    w_lo, w_hi = lim.weight_range
    s_lo, s_hi = lim.state_range
    for name in ("weights_in", "weights_rec", "weights_out"):
        _check_int_array(name, getattr(config, name), w_lo, w_hi, problems)
    for name in ("dash_mem", "dash_syn", "dash_syn_2", "dash_mem_out", "dash_syn_out"):
        _check_int_array(name, getattr(config, name), 0, lim.dash_max, problems)
    for name in ("threshold", "bias", "threshold_out", "bias_out"):
        _check_int_array(name, getattr(config, name), s_lo, s_hi, problems)
    for name in ("weight_shift_in", "weight_shift_rec", "weight_shift_out"):
        _check_int_scalar(name, getattr(config, name), 0, lim.weight_shift_max, problems)
    return problems


def _aliases(config: XyloConfig, lim: XyloLimits, dims: _Dims) -> list[str]:
    """Aliases: -1 or a hidden id strictly above the source (the chip resolves them in id order)."""
    problems: list[str] = []
    al = config.aliases
    if not (al.ndim == 1 and al.size):
        return problems
    n = al.shape[0]
    if al.dtype.kind == "f":
        _check_int_array("aliases", al, -1, n - 1, problems, allowed="-1 or a higher hidden id")
        return problems
    bad = (al != -1) & ((al <= np.arange(n)) | (al >= n))
    if bad.any():
        i = int(np.argwhere(bad)[0][0])
        problems.append(
            f"aliases[{i}]: got {int(al[i])}, expected -1 or a hidden id in "
            f"{i + 1}..{n - 1} (alias targets must be higher ids)"
        )
    return problems


def _fanout(config: XyloConfig, lim: XyloLimits, dims: _Dims) -> list[str]:
    """Recurrent fan-out: non-zero outgoing recurrent weights per neuron (both synapses, NaN counted)
    <= max_fanout_rec (the chip stores that many fan-out entries per neuron)."""
    wrec = config.weights_rec
    if not (wrec.ndim == 3 and wrec.size):
        return []
    fan = np.count_nonzero(np.nan_to_num(wrec, nan=1.0), axis=(1, 2))
    over = fan > lim.max_fanout_rec
    if not over.any():
        return []
    j = int(np.argwhere(over)[0][0])
    return [
        f"weights_rec[{j}]: got a recurrent fan-out of {int(fan[j])} non-zero "
        f"weights, expected at most {lim.max_fanout_rec} "
        f"({int(over.sum())} neuron(s) affected)"
    ]


def _ignored_biases(config: XyloConfig, lim: XyloLimits, dims: _Dims) -> list[str]:
    """Biases are 0 unless ``bias_enable`` (one global enable: the chip would ignore them)."""
    problems: list[str] = []
    if config.bias_enable:
        return problems
    for name in ("bias", "bias_out"):
        b = np.nan_to_num(getattr(config, name), nan=1.0)
        if b.size and np.any(b != 0):
            i = tuple(np.argwhere(b != 0)[0])
            problems.append(
                f"{name}{_idx(i)}: got {_fmtv(getattr(config, name)[i])} with "
                "bias_enable False, expected 0 (the chip would ignore the bias; "
                "set bias_enable=True)"
            )
    return problems


def _dt(config: XyloConfig, lim: XyloLimits, dims: _Dims) -> list[str]:
    """``dt`` finite and within the variant's range (s)."""
    if np.isfinite(config.dt) and lim.dt_min <= config.dt <= lim.dt_max:
        return []
    return [f"dt: got {config.dt!r} s, expected {lim.dt_min}..{lim.dt_max} s ({lim.name})"]


#: The checks of :func:`validate_config`, in reporting order: ``check(config, limits, dims) -> problems``.
_CONFIG_CHECKS = (_shapes, _sizes, _value_ranges, _aliases, _fanout, _ignored_biases, _dt)


def validate_config(config: XyloConfig, limits: XyloLimits | str | None = None) -> list[str]:
    """Every problem of ``config`` against ``limits`` (default: the variant named by ``limits_name``).

    Checks shapes and their consistency, sizes against the limits (``N_in``, ``N_hid``, ``N_out``,
    ``k``), integer values (no NaN, no fractions), ranges (weights int8, thresholds and biases int16,
    dashes and weight shifts 0..15), aliases (-1 or a hidden id strictly above the source), recurrent
    fan-out (non-zero outgoing recurrent weights per neuron, both synapses counted), biases ignored
    because ``bias_enable`` is off, and ``dt``. Each problem names the field, the first offending
    index, the value and the allowed range. An empty list means valid.

    Example:
        >>> import numpy as np
        >>> from pondlib.devices.xylo.specification import Specification
        >>> c, ok, _ = config_from_specification(Specification.zeros(2, 3, 1))
        >>> validate_config(c)
        []
        >>> bad = c.replace(weights_out=np.array([[300], [0], [-129]]), aliases=np.array([-1, 0, -1]))
        >>> for p in validate_config(bad): print(p)
        weights_out[0, 0]: got 300, expected an integer in -128..127 (out of range; 2 value(s) affected)
        aliases[1]: got 0, expected -1 or a hidden id in 2..2 (alias targets must be higher ids)
    """
    if not isinstance(config, XyloConfig):
        raise ConfigError(
            "not a XyloConfig",
            value=type(config).__name__,
            where="validate_config",
            fix="build one with config_from_specification or XyloConfig(...)",
        )
    problems: list[str] = []
    if limits is None:
        try:
            lim = get_limits(config.limits_name)
        except ConfigError:
            problems.append(
                f"limits_name: got {config.limits_name!r}, expected a known Xylo variant "
                "(Xylo Audio 2, Xylo Audio 3, Xylo IMU)"
            )
            lim = get_limits(None)
    else:
        lim = get_limits(limits)
    dims = _Dims.of(config)
    for check in _CONFIG_CHECKS:
        problems += check(config, lim, dims)
    return problems


def config_from_specification(
    spec: Any = None, /, limits: XyloLimits | str | None = None, **fields: Any
) -> tuple[XyloConfig, bool, str]:
    """Build a :class:`XyloConfig` from a (quantized) specification and validate it.

    Values are taken as given: integer-valued arrays become ``np.int64``; non-integer ones (an
    unquantized specification) are kept as float and reported, never rounded silently. Biases are
    enabled when any hidden or output bias is non-zero (the chip has one global enable). The
    specification is never modified.

    Rockpool's calling convention works too: ``config_from_specification(**spec)``, the fields as
    keyword arguments (see :meth:`Specification.from_mapping` for the required ones and the defaults;
    Rockpool's ``bias_hidden`` is ``bias``, its ``mapped_graph`` is ignored). Unknown keywords are refused
    by name.

    Args:
        spec: a :class:`~pondlib.devices.xylo.specification.Specification` (or a mapping of its fields).
        limits: the variant to check against (default: ``spec.limits_name``).
        fields: the specification's fields, instead of ``spec``.

    Returns:
        ``(config, is_valid, message)``: ``message`` is ``"valid"`` or lists every problem.

    Raises:
        ConfigError: ``spec`` is not a specification (the message names its type), a field has the
            wrong type, an unknown keyword, or an unknown ``limits``.

    Example:
        >>> config_from_specification("abc")
        Traceback (most recent call last):
        ...
        pondlib.errors.ConfigError: config_from_specification: spec: got a str ('abc'), expected a Specification...
    """
    where = "config_from_specification"
    if spec is not None and fields:
        raise ConfigError(
            "specification given twice",
            value=f"a {type(spec).__name__} and keyword fields {sorted(fields)}",
            limit="one of them",
            where=where,
            fix="call config_from_specification(spec) or config_from_specification(**spec)",
        )
    if spec is None:
        if not fields:
            raise ConfigError(
                "spec",
                value=None,
                limit="a Specification or its fields as keyword arguments",
                where=where,
                fix="pass the (quantized) output of pondlib.devices.xylo.mapper",
            )
        spec = Specification.from_mapping(fields, error=ConfigError, where=where)
    elif isinstance(spec, Mapping) and not isinstance(spec, Specification):
        spec = Specification.from_mapping(spec, error=ConfigError, where=where)
    elif not isinstance(spec, Specification):
        shown = (
            f"a {type(spec).__name__} ({spec!r})" if isinstance(spec, (str, numbers.Number)) else type(spec).__name__
        )
        raise ConfigError(
            "spec",
            value=shown if len(shown) < 80 else f"a {type(spec).__name__}",
            limit="a Specification (or its fields as keyword arguments)",
            where=where,
            fix="pass the (quantized) output of pondlib.devices.xylo.mapper",
        )
    if limits is not None:
        lim = get_limits(limits)
        limits_name = lim.name
    else:
        lim = None
        limits_name = spec.limits_name
    arrays = {n: np.array(getattr(spec, n), copy=True) for n in CONFIG_ARRAY_FIELDS}
    bias_enable = bool(np.any(arrays["bias"] != 0) or np.any(arrays["bias_out"] != 0))
    config = XyloConfig(
        **arrays,
        weight_shift_in=spec.weight_shift_in,
        weight_shift_rec=spec.weight_shift_rec,
        weight_shift_out=spec.weight_shift_out,
        bias_enable=bias_enable,
        dt=spec.dt,
        limits_name=limits_name,
    )
    problems = validate_config(config, lim)
    if problems:
        return config, False, str(ConfigError(problems=problems))
    return config, True, "valid"
