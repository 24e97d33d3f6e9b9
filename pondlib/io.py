"""Save and load ``pondlib.nn`` networks: :func:`save_network` / :func:`load_network`.

A saved network is one file (a zip archive, by convention ``*.pond``) holding

* ``network.json``: the structure, enough to rebuild the network without user code: for every
  module its type (a class of :mod:`pondlib.nn`) and its static fields (sizes, ``dt``, spike caps,
  surrogate, shapes, ...), and for every array its shape and dtype;
* ``leaves.eqx``: the array values, written by :func:`equinox.tree_serialise_leaves`.

Loading builds a skeleton from the JSON (arrays as :class:`jax.ShapeDtypeStruct`) and fills it with
:func:`equinox.tree_deserialise_leaves`, so the result equals the saved network leaf for leaf
(``equinox.tree_equal(load_network(p), net)`` is True) and gives identical outputs. Every module of
:mod:`pondlib.nn` is supported: ``Sequential``, ``Residual``, ``Linear``, ``LIF``, the NIR neurons
(``CubaLIF``, ``LI``, ``IF``, ...), ``Conv1d/2d``, pooling, ``Flatten``, ``Scale``, ``Delay``,
``Threshold`` and ``GraphNetwork``. Parameter arrays are restored bit for bit (never
re-initialised); everything else read from the file is checked before it is used.

Validation (a file is input like any other). :func:`save_network` refuses a path that is a directory
or lies in a missing directory, and parameters that are NaN or infinite, naming the path or the field.
:func:`load_network` and :func:`describe` refuse, with a :class:`~pondlib.errors.PondError` naming the
file (and the field when there is one):

* a missing file, a directory, a file that is not a zip archive, a truncated or corrupted archive or
  deflate stream (bad CRC, unsupported compression, ...), a header that is not JSON;
* a header whose ``format`` is not :data:`FORMAT` or whose ``version`` is not an integer in
  ``1..VERSION`` (``true``, ``"1"``, ``0`` and newer versions are refused);
* static fields outside what the constructors accept, checked field by field with the constructors'
  limits: ``dt`` not a finite number > 0, sizes that are not whole numbers >= 1, booleans that are not
  JSON ``true``/``false`` (the string ``"False"`` is refused, never read as True), unknown ``decay``,
  ``reset`` or ``quantize`` names, shapes and strides that are not positive whole numbers, ...; a
  :class:`~pondlib.errors.GraphError` names the file and the field path
  (``net.pond: Sequential.layers[1].dt: got -1.0, expected ...``);
* array descriptions with negative sizes or unknown dtypes, saved values whose shape or dtype differ
  from the description, NaN or infinite parameters, truncated or trailing value data;
* structures the constructors would refuse: ``Sequential``, ``Residual`` and ``GraphNetwork`` (and the
  array-free ``Delay``, ``Flatten`` and pooling layers) are rebuilt through their constructors, which
  check that sizes chain, and the derived fields in the file must equal the rebuilt ones; finally the
  network is traced once on an abstract ``(1, 2, size_in)`` input (no computation) and must give
  ``(1, 2, size_out)``, with ``size_in``/``size_out`` equal to the header's.

Example:
    >>> import tempfile, os, jax, jax.numpy as jnp
    >>> import equinox as eqx
    >>> from pondlib import nn
    >>> k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    >>> net = nn.Sequential(nn.Linear(4, 8, key=k1), nn.LIF(8, tau_mem=0.01, max_spikes_per_dt=1),
    ...                     nn.Residual(nn.Linear(8, 8, key=k2), nn.LIF(8)))
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "net.pond")
    >>> save_network(net, path) == path
    True
    >>> back = load_network(path)
    >>> bool(eqx.tree_equal(back, net)), back.layers[1].max_spikes_per_dt
    (True, 1.0)
    >>> x = jnp.ones((3, 5, 4))
    >>> bool(jnp.all(back(x)[0] == net(x)[0]))
    True
    >>> describe(path)["summary"]
    'Sequential(Linear(4 -> 8), LIF(8), Residual(Linear(8 -> 8), LIF(8)))'
    >>> tmp.cleanup()
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import struct
import zipfile
import zlib
from typing import Any

import numpy as np

from pondlib.errors import GraphError, PondError
from pondlib.validate import (
    F32_MAX,
    I32_MAX,
    MAX_FILE_BYTES,
    check_bool,
    check_choice,
    check_elements,
    check_float,
    check_int,
    check_readable_file,
    check_type,
    check_writable_file,
)

__all__ = ["save_network", "load_network", "describe", "FORMAT", "VERSION"]

#: The ``format`` tag of ``network.json``.
FORMAT = "pondlib-network"
#: The format version this module writes (and the newest it reads).
VERSION = 1

_JSON = "network.json"
_LEAVES = "leaves.eqx"
_FIX_LOAD = "pass a file written by pondlib.io.save_network (or pond demo's network.pond)"


def _registry() -> dict[str, type]:
    """Module classes that may appear in a saved network: every ``equinox.Module`` in pondlib.nn, and the
    module classes the registered devices define (``Device.module_types``: their device-aware layers)."""
    import equinox as eqx

    from pondlib import nn
    from pondlib.devices import registry

    out = {}
    for name in nn.__all__:
        obj = getattr(nn, name)
        if isinstance(obj, type) and issubclass(obj, eqx.Module):
            out[obj.__name__] = obj
    for device in registry.devices():
        for cls in device.module_types():
            out[cls.__name__] = cls
    return out


# -- encoding ----------------------------------------------------------------------------------------
def _encode(value: Any, static: bool, where: str, registry: dict[str, type]) -> Any:
    """A JSON description of one field value (arrays as shape + dtype; modules recursively)."""
    import equinox as eqx
    import jax

    from pondlib.nn.surrogate import Surrogate

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, eqx.Module):
        cls = type(value)
        if registry.get(cls.__name__) is not cls:
            raise GraphError(
                "module type cannot be saved",
                value=cls.__name__,
                limit=f"a pondlib.nn module ({', '.join(sorted(registry))})",
                where=where,
                fix="build the network from pondlib.nn modules (or export it to NIR)",
            )
        statics = {f.name for f in dataclasses.fields(cls) if f.metadata.get("static", False)}
        fields = {
            f.name: _encode(getattr(value, f.name), f.name in statics, f"{where}.{f.name}", registry)
            for f in dataclasses.fields(cls)
        }
        return {"module": cls.__name__, "fields": fields}
    if isinstance(value, Surrogate):
        return {"surrogate": {"kind": value.kind, "scale": float(value.scale)}}
    if isinstance(value, (jax.Array, np.ndarray)):
        if static:
            raise GraphError(
                "array in a static field cannot be saved",
                value=type(value).__name__,
                where=where,
                fix="keep arrays in non-static fields",
            )
        return {
            "array": {
                "shape": [int(d) for d in value.shape],
                "dtype": str(value.dtype),
                "kind": "jax" if isinstance(value, jax.Array) else "numpy",
            }
        }
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = value.item() if isinstance(value, np.generic) else value
        return number if static else {"scalar": number}
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, static, f"{where}[{i}]", registry) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return {"list": [_encode(v, static, f"{where}[{i}]", registry) for i, v in enumerate(value)]}
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise GraphError(
                "dict key cannot be saved",
                value=repr(bad[0]),
                limit="string keys",
                where=where,
                fix="name the entries with strings",
            )
        return {"dict": [[k, _encode(v, static, f"{where}[{k!r}]", registry)] for k, v in value.items()]}
    raise GraphError(
        "field value cannot be saved",
        value=type(value).__name__,
        limit="arrays, numbers, strings, tuples, dicts or pondlib.nn modules",
        where=where,
        fix="build the network from pondlib.nn modules",
    )


# -- decoding: every value read from the file is checked -----------------------------------------
_DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
)
_F32_TINY = float(np.finfo(np.float32).tiny)
_MAX_DIMS = 32  # arrays of more dimensions are not pondlib parameters
_FIX_FIELD = "the file was edited or damaged: save the network again with pondlib.io.save_network"


def _dtype(name: str) -> Any:
    if name == "bfloat16":
        import jax.numpy as jnp

        return jnp.dtype(jnp.bfloat16)
    return np.dtype(name)


class _ArraySpec:
    """The shape, dtype and kind (``"jax"`` or ``"numpy"``) of one saved array (a pytree leaf)."""

    __slots__ = ("shape", "dtype", "kind")

    def __init__(self, shape: tuple[int, ...], dtype: Any, kind: str) -> None:
        self.shape, self.dtype, self.kind = shape, dtype, kind


def _ints(value: Any, name: str, where: str, lo: int, *, hi: int = I32_MAX, empty: bool = False) -> tuple:
    check_type(value, name, tuple, where=where, error=GraphError, fix=_FIX_FIELD)
    if not value and not empty:
        raise GraphError(name, value="()", limit="at least one entry", where=where, fix=_FIX_FIELD)
    return tuple(
        check_int(v, f"{name}[{i}]", lo=lo, hi=hi, where=where, error=GraphError, fix=_FIX_FIELD)
        for i, v in enumerate(value)
    )


def _size(value: Any, name: str, where: str) -> int:
    return check_int(value, name, lo=1, hi=I32_MAX, where=where, error=GraphError, fix=_FIX_FIELD)


def _dt(value: Any, name: str, where: str) -> float:
    return check_float(value, name, lo=_F32_TINY, hi=F32_MAX, where=where, error=GraphError, fix=_FIX_FIELD)


def _cap(value: Any, name: str, where: str) -> float:
    return float(check_int(value, name, lo=1, hi=2**24, where=where, error=GraphError, fix=_FIX_FIELD))


def _flag(value: Any, name: str, where: str) -> bool:
    return check_bool(value, name, where=where, error=GraphError, fix=_FIX_FIELD)


def _choice(choices: tuple) -> Any:
    return lambda v, name, where: check_choice(v, name, choices, where=where, error=GraphError, fix=_FIX_FIELD)


def _int_in(lo: int, hi: int) -> Any:
    return lambda v, name, where: check_int(v, name, lo=lo, hi=hi, where=where, error=GraphError, fix=_FIX_FIELD)


def _padding(value: Any, name: str, where: str) -> Any:
    if isinstance(value, str):
        return check_choice(value, name, ("same", "valid"), where=where, error=GraphError, fix=_FIX_FIELD)
    return _ints(value, name, where, 0)


def _pads(value: Any, name: str, where: str) -> tuple:
    check_type(value, name, tuple, where=where, error=GraphError, fix=_FIX_FIELD)
    return tuple(_ints(p, f"{name}[{i}]", where, 0) for i, p in enumerate(value))


def _input_clip(value: Any, name: str, where: str) -> float | None:
    if value is None:
        return None
    return check_float(value, name, lo=0.0, lo_open=True, hi=F32_MAX, where=where, error=GraphError, fix=_FIX_FIELD)


def _surrogate(value: Any, name: str, where: str) -> Any:
    from pondlib.nn.surrogate import Surrogate

    return check_type(value, name, Surrogate, where=where, error=GraphError, fix=_FIX_FIELD)


def _tuple_of(value: Any, name: str, where: str) -> tuple:
    return check_type(value, name, tuple, where=where, error=GraphError, fix=_FIX_FIELD)


def _static_rules() -> dict[str, Any]:
    """Checks of the static fields by name, with the limits of the constructors that set them."""
    from pondlib.devices import registry
    from pondlib.nn.neurons import DECAYS, RESETS

    # a device-aware layer fake-quantizes with one of its device's quantizer methods, or not at all (None)
    quantize = tuple(dict.fromkeys(m for d in registry.devices() for m in d.quantize_methods)) + (None,)
    shape = lambda v, name, where: _ints(v, name, where, 1)  # noqa: E731
    rules: dict[str, Any] = {
        "dt": _dt,
        "max_spikes_per_dt": _cap,
        "max_spikes": _cap,
        "surrogate": _surrogate,
        "decay": _choice(tuple(DECAYS)),
        "reset": _choice(tuple(RESETS)),
        "quantize": _choice(tuple(quantize)),
        "delay_in": _flag,
        "learn_dash": _flag,
        "recurrent": _flag,
        "input_clip": _input_clip,
        "weight_bits": _int_in(2, 16),
        "state_bits": _int_in(2, 24),
        "dash_max": _int_in(1, 24),
        "start_dim": _int_in(-_MAX_DIMS, _MAX_DIMS),
        "end_dim": _int_in(-_MAX_DIMS, _MAX_DIMS),
        "steps": lambda v, name, where: _ints(v, name, where, 0),
        "padding": _padding,
        "pads": _pads,
    }
    for name in ("n_in", "n_out", "n_neurons", "n_synapses", "groups"):
        rules[name] = _size
    for name in ("shape", "input_shape", "output_shape", "kernel_size", "stride", "dilation"):
        rules[name] = shape
    for name in ("edges", "order", "sources", "out_sources", "delayed_nodes"):
        rules[name] = _tuple_of  # checked in full by rebuilding the GraphNetwork
    return rules


def _check_static(value: Any, annotation: Any, name: str, where: str, rules: dict[str, Any]) -> Any:
    """A static field's value checked by its name (or, for a field without a rule, by its annotation)."""
    rule = rules.get(name.rsplit(".", 1)[-1])
    if rule is not None:
        return rule(value, name, where)
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    optional = "None" in text
    if optional and value is None:
        return None
    base = text.replace("| None", "").strip()
    if base == "bool":
        return _flag(value, name, where)
    if base == "int":
        return check_int(value, name, where=where, error=GraphError, fix=_FIX_FIELD)
    if base == "float":
        return check_float(value, name, where=where, error=GraphError, fix=_FIX_FIELD)
    if base in ("str", "tuple"):
        return check_type(value, name, str if base == "str" else tuple, where=where, error=GraphError, fix=_FIX_FIELD)
    return value


def _check_dynamic(value: Any, annotation: Any, name: str, where: str) -> Any:
    """A parameter field must hold what its annotation says (an array, or None where allowed)."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    if "Array" in text:
        ok = isinstance(value, _ArraySpec) or (value is None and "None" in text)
        if not ok:
            raise GraphError(
                name,
                value=f"a {type(value).__name__}",
                limit="an array" + (" or None" if "None" in text else ""),
                where=where,
                fix=_FIX_FIELD,
            )
    return value


def _array_spec(val: Any, name: str, where: str) -> _ArraySpec:
    check_type(val, f"{name} (array description)", dict, where=where, error=GraphError, fix=_FIX_FIELD)
    if set(val) != {"shape", "dtype", "kind"}:
        raise GraphError(
            f"{name} (array description) keys",
            value=sorted(map(str, val)),
            limit=["dtype", "kind", "shape"],
            where=where,
            fix=_FIX_FIELD,
        )
    shape_list = check_type(val["shape"], f"{name} shape", list, where=where, error=GraphError, fix=_FIX_FIELD)
    if len(shape_list) > _MAX_DIMS:
        raise GraphError(f"{name} shape", value=len(shape_list), limit=f"<= {_MAX_DIMS} dimensions", where=where)
    shape = _ints(tuple(shape_list), f"{name} shape", where, 0, empty=True)
    check_elements(shape, name, where=where, error=GraphError)  # the size budget, before anything is read
    dtype = check_choice(val["dtype"], f"{name} dtype", _DTYPES, where=where, error=GraphError, fix=_FIX_FIELD)
    kind = check_choice(val["kind"], f"{name} kind", ("jax", "numpy"), where=where, error=GraphError, fix=_FIX_FIELD)
    return _ArraySpec(shape, _dtype(dtype), kind)


def _decode(
    desc: Any, name: str, where: str, registry: dict[str, type], rules: dict[str, Any], static: bool = False
) -> Any:
    """The skeleton described by :func:`_encode` (arrays as :class:`_ArraySpec`), checked field by field.

    ``name`` is the field path (``Sequential.layers[1].dt``), ``where`` the file."""
    from pondlib.nn.surrogate import Surrogate

    if desc is None or isinstance(desc, (bool, str, int, float)):
        if not static and isinstance(desc, (int, float)) and not isinstance(desc, bool):
            raise GraphError(name, value=repr(desc), limit="a parameter array or a module", where=where, fix=_FIX_FIELD)
        return desc
    bad = GraphError("malformed network description", value=repr(desc)[:80], where=f"{where}: {name}", fix=_FIX_LOAD)
    if not isinstance(desc, dict):
        raise bad
    if "module" in desc:
        if set(desc) != {"module", "fields"}:
            raise bad
        cls = registry.get(desc["module"]) if isinstance(desc["module"], str) else None
        if cls is None:
            raise GraphError(
                "unknown module type",
                value=desc["module"],
                limit=sorted(registry),
                where=f"{where}: {name}",
                fix="load the file with the pondlib version that wrote it",
            )
        fields = desc["fields"]
        dfields = dataclasses.fields(cls)
        names = [f.name for f in dfields]
        if not isinstance(fields, dict) or sorted(fields) != sorted(names):
            raise GraphError(
                f"fields of {cls.__name__}",
                value=sorted(fields) if isinstance(fields, dict) else fields,
                limit=sorted(names),
                where=f"{where}: {name}",
                fix="load the file with the pondlib version that wrote it",
            )
        obj = object.__new__(cls)  # as jax.tree_util unflattens an equinox module
        for f in dfields:
            is_static = bool(f.metadata.get("static", False))
            path = f"{name}.{f.name}"
            value = _decode(fields[f.name], path, where, registry, rules, is_static)
            if is_static:
                value = _check_static(value, f.type, path, where, rules)
            else:
                value = _check_dynamic(value, f.type, path, where)
            object.__setattr__(obj, f.name, value)
        return obj
    if len(desc) != 1:
        raise bad
    ((key, val),) = desc.items()
    if key == "array":
        if static:
            raise GraphError(f"{name}: array in a static field", where=where, fix=_FIX_FIELD)
        return _array_spec(val, name, where)
    if key == "scalar":
        if static or isinstance(val, bool) or not isinstance(val, (int, float)):
            raise bad
        return check_float(val, name, where=where, error=GraphError, fix=_FIX_FIELD) if isinstance(val, float) else val
    if key == "surrogate":
        if not isinstance(val, dict) or set(val) != {"kind", "scale"}:
            raise bad
        try:
            return Surrogate(kind=val["kind"], scale=val["scale"])
        except PondError as err:
            raise GraphError(f"{name}: {err}", where=where, fix=_FIX_FIELD) from None
    if key in ("tuple", "list"):
        if not isinstance(val, list):
            raise bad
        items = [_decode(v, f"{name}[{i}]", where, registry, rules, static) for i, v in enumerate(val)]
        return tuple(items) if key == "tuple" else items
    if key == "dict":
        if not isinstance(val, list) or not all(
            isinstance(kv, list) and len(kv) == 2 and isinstance(kv[0], str) for kv in val
        ):
            raise bad
        keys = [k for k, _ in val]
        if len(set(keys)) != len(keys):
            raise GraphError(f"{name}: repeated dict key", value=keys, where=where, fix=_FIX_FIELD)
        return {k: _decode(v, f"{name}[{k!r}]", where, registry, rules, static) for k, v in val}
    raise bad


def _summary(desc: Any) -> str:
    """One line naming the modules of a description: ``Sequential(Linear(16 -> 128), LIF(128), ...)``."""
    if not isinstance(desc, dict) or "module" not in desc:
        return "?"
    name, f = desc["module"], desc.get("fields", {})

    def children(d: Any) -> list:
        if isinstance(d, dict) and "tuple" in d:
            return d["tuple"]
        if isinstance(d, dict) and "list" in d:
            return d["list"]
        if isinstance(d, dict) and "dict" in d:
            return [v for _, v in d["dict"]]
        return []

    if name == "Sequential":
        return f"Sequential({', '.join(_summary(c) for c in children(f.get('layers')))})"
    if name == "Residual":
        inner = _summary(f.get("block"))
        return f"Residual({inner[len('Sequential(') : -1] if inner.startswith('Sequential(') else inner})"
    if name == "GraphNetwork":
        return f"GraphNetwork({', '.join(_summary(c) for c in children(f.get('modules')))})"
    if name == "Linear":
        return f"Linear({f.get('n_in')} -> {f.get('n_out')})"
    if name == "LIF":
        return f"LIF({f.get('n_neurons')})"
    return name


# -- the values: read one .npy record per leaf, checked against the description ---------------------
def _read_npy(buf: io.BytesIO, name: str, where: str) -> tuple[tuple[int, ...], np.dtype, bool]:
    """The header of the next ``.npy`` record in ``buf``: shape, dtype, Fortran order."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(buf)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(buf)
        elif version == (2, 0):
            shape, fortran, dtype = fmt.read_array_header_2_0(buf)
        else:
            raise ValueError(f"npy version {version}")
    except (ValueError, EOFError, SyntaxError, TypeError, OverflowError, MemoryError, RecursionError) as exc:
        raise PondError(
            f"the saved values do not match the structure at {name}",
            value=f"an unreadable record ({exc})"[:120],
            where=where,
            fix=_FIX_LOAD,
        ) from None
    return tuple(shape), dtype, bool(fortran)


def _read_leaf(buf: io.BytesIO, like: Any, name: str, where: str) -> Any:
    """The value of one leaf: an array for an :class:`_ArraySpec`, a Python scalar for a scalar leaf."""
    import jax.numpy as jnp

    shape, dtype, fortran = _read_npy(buf, name, where)
    if isinstance(like, _ArraySpec):
        want_shape, want_dtype = like.shape, like.dtype
        same_dtype = dtype == want_dtype or (want_dtype == jnp.dtype(jnp.bfloat16) and dtype == np.dtype("V2"))
    else:
        want_shape, kind = (), {bool: "b", int: "iu", float: "f"}.get(type(like), "biuf")
        want_dtype = f"a {type(like).__name__}"
        same_dtype = dtype.kind in kind and not dtype.hasobject
    if shape != want_shape or not same_dtype:
        raise PondError(
            f"the saved values do not match the structure at {name}",
            value=f"shape {shape}, dtype {dtype}",
            limit=f"shape {want_shape}, dtype {want_dtype} (the description in network.json)",
            where=where,
            fix=_FIX_LOAD,
        )
    count = int(np.prod(shape, dtype=np.int64))
    raw = buf.read(count * dtype.itemsize)
    if len(raw) != count * dtype.itemsize:
        raise PondError(
            f"the saved values do not match the structure at {name} (truncated)",
            value=f"{len(raw)} bytes",
            limit=f"{count * dtype.itemsize} bytes",
            where=where,
            fix=_FIX_LOAD,
        )
    arr = np.frombuffer(raw, dtype=dtype).reshape(shape, order="F" if fortran else "C").copy()
    if isinstance(like, _ArraySpec):
        if dtype != like.dtype:
            arr = arr.view(like.dtype)
        if arr.dtype.kind == "f" or arr.dtype == jnp.dtype(jnp.bfloat16):
            finite = np.isfinite(arr.astype(np.float32) if arr.dtype.kind != "f" else arr)
            if not finite.all():
                idx = tuple(int(i) for i in np.argwhere(~finite)[0])
                raise GraphError(
                    f"{name}: non-finite parameter",
                    value=f"{arr[idx]} at index {idx}",
                    limit="finite values",
                    where=where,
                    fix=_FIX_FIELD,
                )
        return jnp.asarray(arr) if like.kind == "jax" else arr
    value = type(like)(arr.item())
    if isinstance(value, float) and not np.isfinite(value):
        raise GraphError(f"{name}: non-finite parameter", value=value, limit="a finite number", where=where)
    return value


def _fill(skeleton: Any, data: bytes, root: str, where: str) -> Any:
    """The skeleton with its leaves read from ``data`` (the order of ``equinox.tree_serialise_leaves``)."""
    import jax

    leaves, treedef = jax.tree_util.tree_flatten_with_path(skeleton)
    buf = io.BytesIO(data)
    out = []
    for path, leaf in leaves:
        name = root + jax.tree_util.keystr(path)
        if isinstance(leaf, (_ArraySpec, bool, int, float, complex, np.generic)):
            out.append(_read_leaf(buf, leaf, name, where))
        else:  # not saved by equinox (e.g. strings): kept from the description
            out.append(leaf)
    rest = len(data) - buf.tell()
    if rest:
        raise PondError(
            "unexpected data after the saved values",
            value=f"{rest} bytes",
            limit="none",
            where=f"{where}: {_LEAVES}",
            fix=_FIX_LOAD,
        )
    return jax.tree_util.tree_unflatten(treedef, out)


# -- structure: rebuilt through the constructors ----------------------------------------------------
def _statics(module: Any) -> dict[str, Any]:
    return {f.name: getattr(module, f.name) for f in dataclasses.fields(module) if f.metadata.get("static", False)}


def _same_statics(loaded: Any, rebuilt: Any, name: str, where: str) -> Any:
    a, b = _statics(loaded), _statics(rebuilt)
    for key in a:
        if a[key] != b[key]:
            raise GraphError(
                f"{name}.{key}",
                value=a[key],
                limit=f"{b[key]!r} (what {type(loaded).__name__}'s constructor derives from the other fields)",
                where=where,
                fix=_FIX_FIELD,
            )
    return rebuilt


def _rebuild(module: Any, name: str, where: str) -> Any:
    """``module`` with its containers rebuilt by their constructors (which check that sizes chain) and its
    array-free layers checked against what their constructors derive."""
    from pondlib import nn

    cls = type(module)
    try:
        if cls is nn.Sequential:
            check_type(module.layers, f"{name}.layers", tuple, where=where, error=GraphError)
            return nn.Sequential(*[_rebuild(m, f"{name}.layers[{i}]", where) for i, m in enumerate(module.layers)])
        if cls is nn.Residual:
            check_type(module.block, f"{name}.block", nn.Sequential, where=where, error=GraphError)
            return nn.Residual(*_rebuild(module.block, f"{name}.block", where).layers)
        if cls is nn.GraphNetwork:
            check_type(module.modules, f"{name}.modules", dict, where=where, error=GraphError)
            mods = {k: _rebuild(m, f"{name}.modules[{k!r}]", where) for k, m in module.modules.items()}
            rebuilt = nn.GraphNetwork(
                mods, module.edges, input_shape=module.input_shape, output_shape=module.output_shape
            )
            return _same_statics(module, rebuilt, name, where)
        if cls is nn.Delay:
            delay = np.asarray(module.steps, dtype=np.float64) * module.dt
            return _same_statics(module, nn.Delay(module.shape, delay=delay, dt=module.dt), name, where)
        if cls is nn.Flatten:
            rebuilt = nn.Flatten(module.input_shape, start_dim=module.start_dim, end_dim=module.end_dim)
            return _same_statics(module, rebuilt, name, where)
        if cls in (nn.SumPool2d, nn.AvgPool2d):
            rebuilt = cls(
                module.input_shape, kernel_size=module.kernel_size, stride=module.stride, padding=module.padding
            )
            return _same_statics(module, rebuilt, name, where)
    except GraphError as err:
        if where in str(err):
            raise
        raise GraphError(f"{name}: {err}", where=where, fix=_FIX_FIELD) from None
    return module


def _probe(net: Any, header: dict, where: str) -> None:
    """Trace ``net`` once on an abstract (1, 2, size_in) input: it must run and give (1, 2, size_out)."""
    import jax
    import jax.numpy as jnp

    try:
        size_in, size_out = int(net.size_in), int(net.size_out)
        out = jax.eval_shape(lambda x: net(x)[0], jax.ShapeDtypeStruct((1, 2, size_in), jnp.float32))
        got = tuple(out.shape)
    except PondError as err:
        raise GraphError(f"the saved network does not run: {err}", where=where, fix=_FIX_FIELD) from None
    except Exception as exc:  # noqa: BLE001 - any failure of the trace means inconsistent saved fields
        raise GraphError(
            "the saved network does not run",
            value=f"{type(exc).__name__}: {exc}"[:200],
            limit="fields consistent with each other",
            where=where,
            fix=_FIX_FIELD,
        ) from None
    if got != (1, 2, size_out):
        raise GraphError("the saved network's output shape", value=got, limit=(1, 2, size_out), where=where)
    for key, size in (("size_in", size_in), ("size_out", size_out)):
        if header[key] != size:
            raise GraphError(
                f"header {key}", value=header[key], limit=f"{size} (the network's)", where=where, fix=_FIX_FIELD
            )


# -- public API --------------------------------------------------------------------------------------
def _check_finite_parameters(net: Any, root: str) -> None:
    import jax

    for path, leaf in jax.tree_util.tree_flatten_with_path(net)[0]:
        if (isinstance(leaf, (jax.Array, np.ndarray)) and leaf.dtype.kind == "f") or isinstance(leaf, float):
            arr = np.asarray(leaf, dtype=np.float64)
            finite = np.isfinite(arr)
            if not finite.all():
                idx = tuple(int(i) for i in np.argwhere(~finite)[0])
                raise GraphError(
                    f"{root}{jax.tree_util.keystr(path)}: non-finite parameter",
                    value=f"{arr[idx]} at index {idx}",
                    limit="finite values",
                    where="save_network",
                    fix="the network diverged or was built with NaN/inf: retrain or fix the parameter",
                )


def save_network(net: Any, path: str | os.PathLike) -> str:
    """Write ``net`` (any :mod:`pondlib.nn` module or composition) to ``path``; return the path.

    Args:
        net: the network (``Sequential``, ``Residual``, ``Linear``, ``LIF``, ...).
        path: the file to write (one zip archive; ``.pond`` by convention, written exactly at ``path``);
            a str or ``os.PathLike`` naming a file (an existing file is replaced) in an existing directory.

    Raises:
        GraphError: a module or field that cannot be described (a class outside :mod:`pondlib.nn`,
            an array in a static field), or a NaN or infinite parameter, naming where it is.
        PondError: ``path`` is not a path, is a directory, lies in a missing directory, or cannot be
            written, naming the path.
    """
    import equinox as eqx

    from pondlib._version import __version__

    target = check_writable_file(path, "network file")
    registry = _registry()
    if not isinstance(net, eqx.Module):
        raise GraphError(
            "save_network input",
            value=type(net).__name__,
            limit="a pondlib.nn module",
            fix="pass a network built from pondlib.nn modules",
        )
    root = _encode(net, False, type(net).__name__, registry)
    _check_finite_parameters(net, type(net).__name__)
    header = {
        "format": FORMAT,
        "version": VERSION,
        "pondlib_version": __version__,
        "summary": _summary(root),
        "size_in": int(net.size_in),
        "size_out": int(net.size_out),
        "root": root,
    }
    leaves = io.BytesIO()
    eqx.tree_serialise_leaves(leaves, net)
    path = os.fspath(path)
    try:
        with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(_JSON, json.dumps(header, indent=1, allow_nan=False))
            zf.writestr(_LEAVES, leaves.getvalue())
    except OSError as exc:
        raise PondError(
            "cannot write the network file",
            value=f"{path} ({exc.strerror or exc})",
            where=path,
            fix="pass a writable path",
        ) from None
    return path


#: Everything reading a damaged archive can raise (zlib.error for a bad deflate stream, NotImplementedError
#: for an unknown compression method, BadZipFile for a bad CRC or directory, EOFError, struct.error, ...).
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    NotImplementedError,
    KeyError,
    EOFError,
    OSError,
    ValueError,
    RuntimeError,
    struct.error,
    OverflowError,
    IndexError,
    TypeError,
    MemoryError,
)


def _read(path: Any) -> tuple[dict, bytes, str]:
    """The checked header, the raw leaves and the path as text of the network file at ``path``."""
    p = check_readable_file(path, "network file")
    where = str(p)
    try:
        with zipfile.ZipFile(p) as zf:
            names = set(zf.namelist())
            missing = [n for n in (_JSON, _LEAVES) if n not in names]
            if missing:
                raise PondError(f"not a pondlib network file (no {missing[0]})", where=where, fix=_FIX_LOAD)
            for member in (_JSON, _LEAVES):  # declared sizes against the budget before decompressing
                size = zf.getinfo(member).file_size
                if size > MAX_FILE_BYTES:
                    raise PondError(
                        f"{member} size", value=f"{size} bytes", limit=f"at most {MAX_FILE_BYTES} bytes (size budget)",
                        where=where, fix="a damaged or hostile archive? Save the network again",
                    )  # fmt: skip
            raw_header = zf.read(_JSON)
            leaves = zf.read(_LEAVES)
    except PondError:
        raise
    except _ZIP_ERRORS as exc:
        raise PondError(
            f"not a pondlib network file, or a damaged one ({type(exc).__name__}: {exc})"[:200],
            where=where,
            fix=_FIX_LOAD,
        ) from None
    try:
        header = json.loads(raw_header.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise PondError(
            f"not a pondlib network file ({_JSON} is not JSON: {type(exc).__name__})", where=where, fix=_FIX_LOAD
        ) from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise PondError(
            "not a pondlib network file",
            value=header.get("format") if isinstance(header, dict) else type(header).__name__,
            limit=FORMAT,
            where=where,
            fix=_FIX_LOAD,
        )
    version = header.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= VERSION:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > VERSION
        raise PondError(
            "network file version",
            value=version,
            limit=f"an integer in 1..{VERSION}",
            where=f"{where}: {_JSON}: version",
            fix="upgrade pondlib to read files from newer versions" if newer else _FIX_LOAD,
        )
    for key in ("size_in", "size_out"):
        header[key] = check_int(
            header.get(key), key, lo=1, hi=I32_MAX, where=f"{where}: {_JSON}", error=PondError, fix=_FIX_FIELD
        )
    for key in ("summary", "pondlib_version"):
        check_type(header.get(key), key, str, where=f"{where}: {_JSON}", error=PondError, fix=_FIX_FIELD)
    check_type(header.get("root"), "root", dict, where=f"{where}: {_JSON}", error=PondError, fix=_FIX_FIELD)
    return header, leaves, where


def describe(path: str | os.PathLike) -> dict:
    """The header of a saved network without rebuilding it: ``format``, ``version``,
    ``pondlib_version``, ``summary`` (one line), ``size_in``, ``size_out`` and ``root`` (the structure).

    Raises:
        PondError: as :func:`load_network` for the archive and the header (format, version, sizes); the
            structure in ``root`` is only checked by :func:`load_network`.
    """
    return _read(path)[0]


def load_network(path: str | os.PathLike) -> Any:
    """Rebuild the network saved at ``path`` by :func:`save_network` (no user code needed).

    Every field is checked as the module docstring lists; the parameters are restored bit for bit.

    Raises:
        PondError: a missing file, a directory, a truncated, corrupted or foreign file, an unknown module
            type or a format version other than ``1..VERSION``, naming the path and what was found.
        GraphError: (a PondError) a field outside what the constructors accept, or fields inconsistent
            with each other, naming the path and the field.
    """
    header, leaves, where = _read(path)
    registry = _registry()
    root = header["root"]
    name = root.get("module") if isinstance(root.get("module"), str) else "root"
    try:
        skeleton = _decode(root, name, where, registry, _static_rules())
        if not isinstance(skeleton, tuple(registry.values())):
            raise GraphError("root", value=type(skeleton).__name__, limit="a pondlib.nn module", where=where)
        net = _fill(skeleton, leaves, name, where)
        net = _rebuild(net, name, where)
    except RecursionError:
        raise PondError("network description nested too deeply", where=where, fix=_FIX_LOAD) from None
    _probe(net, header, where)
    return net
