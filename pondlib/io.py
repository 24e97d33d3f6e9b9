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
``Threshold`` and ``GraphNetwork``. Modules are rebuilt the way JAX unflattens them (fields set
directly, no ``__init__``), so nothing is re-initialised or re-validated differently.

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
import zipfile
from typing import Any

import numpy as np

from pondlib.errors import GraphError, PondError

__all__ = ["save_network", "load_network", "describe", "FORMAT", "VERSION"]

#: The ``format`` tag of ``network.json``.
FORMAT = "pondlib-network"
#: The format version this module writes (and the newest it reads).
VERSION = 1

_JSON = "network.json"
_LEAVES = "leaves.eqx"
_FIX_LOAD = "pass a file written by pondlib.io.save_network (or pond demo's network.pond)"


def _registry() -> dict[str, type]:
    """Module classes that may appear in a saved network: every ``equinox.Module`` in pondlib.nn."""
    import equinox as eqx

    from pondlib import nn

    out = {}
    for name in nn.__all__:
        obj = getattr(nn, name)
        if isinstance(obj, type) and issubclass(obj, eqx.Module):
            out[obj.__name__] = obj
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


def _decode(desc: Any, where: str, registry: dict[str, type]) -> Any:
    """The skeleton described by :func:`_encode` (arrays as ``jax.ShapeDtypeStruct``/numpy zeros)."""
    import jax

    from pondlib.nn.surrogate import Surrogate

    if desc is None or isinstance(desc, (bool, str, int, float)):
        return desc
    bad = PondError("malformed network description", value=repr(desc)[:80], where=where, fix=_FIX_LOAD)
    if not isinstance(desc, dict) or len(desc) not in (1, 2):
        raise bad
    if "module" in desc:
        cls = registry.get(desc["module"])
        if cls is None:
            raise PondError(
                "unknown module type",
                value=desc["module"],
                limit=sorted(registry),
                where=where,
                fix="load the file with the pondlib version that wrote it",
            )
        fields = desc.get("fields")
        names = [f.name for f in dataclasses.fields(cls)]
        if not isinstance(fields, dict) or sorted(fields) != sorted(names):
            raise PondError(
                f"fields of {cls.__name__}",
                value=sorted(fields) if isinstance(fields, dict) else fields,
                limit=sorted(names),
                where=where,
                fix="load the file with the pondlib version that wrote it",
            )
        obj = object.__new__(cls)  # as jax.tree_util unflattens an equinox module
        for name in names:
            object.__setattr__(obj, name, _decode(fields[name], f"{where}.{name}", registry))
        return obj
    ((key, val),) = desc.items()
    try:
        if key == "array":
            shape, dtype = tuple(int(d) for d in val["shape"]), np.dtype(val["dtype"])
            if val.get("kind") == "numpy":
                return np.zeros(shape, dtype)
            return jax.ShapeDtypeStruct(shape, dtype)
        if key == "scalar":
            return val
        if key == "surrogate":
            return Surrogate(kind=val["kind"], scale=float(val["scale"]))
        if key == "tuple":
            return tuple(_decode(v, f"{where}[{i}]", registry) for i, v in enumerate(val))
        if key == "list":
            return [_decode(v, f"{where}[{i}]", registry) for i, v in enumerate(val)]
        if key == "dict":
            return {str(k): _decode(v, f"{where}[{k!r}]", registry) for k, v in val}
    except (KeyError, TypeError, ValueError):
        raise bad from None
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


# -- public API --------------------------------------------------------------------------------------
def save_network(net: Any, path: str | os.PathLike) -> str:
    """Write ``net`` (any :mod:`pondlib.nn` module or composition) to ``path``; return the path.

    Args:
        net: the network (``Sequential``, ``Residual``, ``Linear``, ``LIF``, ...).
        path: the file to write (one zip archive; ``.pond`` by convention, written exactly at ``path``).

    Raises:
        GraphError: a module or field that cannot be described (a class outside :mod:`pondlib.nn`,
            an array in a static field), naming where it is.
        PondError: the file cannot be written.
    """
    import equinox as eqx

    from pondlib import __version__

    registry = _registry()
    if not isinstance(net, eqx.Module):
        raise GraphError(
            "save_network input",
            value=type(net).__name__,
            limit="a pondlib.nn module",
            fix="pass a network built from pondlib.nn modules",
        )
    root = _encode(net, False, type(net).__name__, registry)
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
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(_JSON, json.dumps(header, indent=1))
            zf.writestr(_LEAVES, leaves.getvalue())
    except OSError as exc:
        raise PondError(
            "cannot write the network file", value=f"{path} ({exc.strerror or exc})", fix="pass a writable path"
        ) from None
    return path


def _read(path: str | os.PathLike) -> tuple[dict, bytes]:
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise PondError("network file not found", where=path, fix=_FIX_LOAD)
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
            missing = [n for n in (_JSON, _LEAVES) if n not in names]
            if missing:
                raise PondError(f"not a pondlib network file (no {missing[0]})", where=path, fix=_FIX_LOAD)
            header = json.loads(zf.read(_JSON).decode("utf-8"))
            leaves = zf.read(_LEAVES)
    except (zipfile.BadZipFile, UnicodeDecodeError, json.JSONDecodeError, OSError) as exc:
        raise PondError(f"not a pondlib network file ({type(exc).__name__})", where=path, fix=_FIX_LOAD) from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise PondError(
            "not a pondlib network file",
            value=header.get("format") if isinstance(header, dict) else type(header).__name__,
            limit=FORMAT,
            where=path,
            fix=_FIX_LOAD,
        )
    version = header.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise PondError(
            "network file version",
            value=version,
            limit=f"<= {VERSION}",
            where=path,
            fix="upgrade pondlib to read files from newer versions",
        )
    return header, leaves


def describe(path: str | os.PathLike) -> dict:
    """The header of a saved network without rebuilding it: ``format``, ``version``,
    ``pondlib_version``, ``summary`` (one line), ``size_in``, ``size_out`` and ``root`` (the structure)."""
    return _read(path)[0]


def load_network(path: str | os.PathLike) -> Any:
    """Rebuild the network saved at ``path`` by :func:`save_network` (no user code needed).

    Raises:
        PondError: a missing, truncated or foreign file, an unknown module type or a newer format
            version, naming the path and what was found.
    """
    import equinox as eqx
    import jax

    header, leaves = _read(path)
    where = os.fspath(path)
    skeleton = _decode(header.get("root"), where, _registry())
    try:
        net = eqx.tree_deserialise_leaves(io.BytesIO(leaves), skeleton)
    except (ValueError, TypeError, EOFError, OSError, RuntimeError) as exc:  # RuntimeError: equinox's
        # TreePathError wraps the failure of one leaf (truncated or mismatched data)
        raise PondError(
            f"the saved values do not match the structure ({type(exc).__name__})", where=where, fix=_FIX_LOAD
        ) from None
    want = jax.tree_util.tree_leaves(skeleton)
    got = jax.tree_util.tree_leaves(net)
    for i, (w, g) in enumerate(zip(want, got)):
        if hasattr(w, "shape") and tuple(np.shape(g)) != tuple(w.shape):
            raise PondError(
                f"saved array {i} shape", value=tuple(np.shape(g)), limit=tuple(w.shape), where=where, fix=_FIX_LOAD
            )
    return net
