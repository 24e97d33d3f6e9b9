"""NIR export: :func:`to_nir` and :func:`write` (see :mod:`pondlib.interop.nir` for what a foreign
reader gets from each pondlib module)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pondlib.errors import NIRError
from pondlib.interop.nir.common import FORMAT_VERSION
from pondlib.interop.nir.common import nir_package as _nir
from pondlib.nn import LIF, Linear, Residual, Sequential, layers, neurons
from pondlib.nn.graphnet import INPUT, OUTPUT, GraphNetwork
from pondlib.validate import check_type, check_writable_file

__all__ = ["EXPORTERS", "to_nir", "write"]


# ----------------------------------------------------------------------------------------------
# export
# ----------------------------------------------------------------------------------------------
def _f32(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _in_shape(m: Any) -> tuple:
    s = getattr(m, "input_shape", None)
    if s is None:
        s = getattr(m, "shape", None)
    return tuple(s) if s is not None else (m.size_in,)


def _out_shape(m: Any) -> tuple:
    s = getattr(m, "output_shape", None)
    if s is None:
        s = getattr(m, "shape", None)
    return tuple(s) if s is not None else (m.size_out,)


def _exp_linear(m, name):
    nir = _nir()
    w = _f32(m.weight).T
    if m.bias is None:
        return nir.Linear(weight=w)
    return nir.Affine(weight=w, bias=_f32(m.bias))


def _exp_lif(m, name):
    nir = _nir()
    if m.n_synapses != 1:
        raise NIRError(
            "NIR cannot represent a LIF with several synapses per neuron",
            value=f"k = {m.n_synapses}",
            limit="k = 1 (CubaLIF has one current)",
            where=name,
            fix="use LIF(N) (one synaptic current) for networks you export to NIR",
        )
    dt = m.dt
    tau_mem, tau_syn = _f32(m.tau_mem), _f32(m.tau_syn).reshape(-1)
    meta = {
        "pondlib_type": "LIF",
        "pondlib_dt": float(dt),
        "pondlib_bias": _f32(m.bias),
        "pondlib_max_spikes_per_dt": float(m.max_spikes_per_dt),
        "pondlib_reset": "subtract",
        "pondlib_surrogate_kind": m.surrogate.kind,
        "pondlib_surrogate_scale": float(m.surrogate.scale),
    }
    lif = nir.CubaLIF(
        tau_syn=tau_syn,
        tau_mem=tau_mem,
        r=_f32(tau_mem / dt),
        v_leak=_f32(m.bias * tau_mem / dt),
        v_threshold=_f32(m.threshold),
        v_reset=np.zeros_like(tau_mem),
        w_in=_f32(tau_syn / dt),
        metadata=meta,
    )
    if m.w_rec is None:
        return lif
    n = m.size_out
    return nir.NIRGraph(
        nodes={
            "input": nir.Input(input_type=np.array([n])),
            "lif": lif,
            "w_rec": nir.Linear(weight=_f32(m.w_rec).T),
            "output": nir.Output(output_type=np.array([n])),
        },
        edges=[("input", "lif"), ("lif", "w_rec"), ("w_rec", "lif"), ("lif", "output")],
        metadata={"pondlib_type": "LIF"},
        type_check=False,
    )


def _exp_neuron(m, name):
    nir = _nir()
    kind = type(m).__name__
    shp = tuple(m.shape)
    a = lambda v: None if v is None else _f32(v).reshape(shp)
    meta = {"pondlib_type": kind, "pondlib_reset": m.reset, "pondlib_decay": m.decay, "pondlib_dt": float(m.dt)}
    build = {
        "CubaLIF": lambda: nir.CubaLIF(
            tau_syn=a(m.tau_syn),
            tau_mem=a(m.tau_mem),
            r=a(m.r),
            v_leak=a(m.v_leak),
            v_threshold=a(m.v_threshold),
            v_reset=a(m.v_reset),
            w_in=a(m.w_in),
            metadata=meta,
        ),
        "CubaLI": lambda: nir.CubaLI(
            tau_syn=a(m.tau_syn), tau_mem=a(m.tau_mem), r=a(m.r), v_leak=a(m.v_leak), w_in=a(m.w_in), metadata=meta
        ),
        "NIRLIF": lambda: nir.LIF(
            tau=a(m.tau_mem),
            r=a(m.r),
            v_leak=a(m.v_leak),
            v_threshold=a(m.v_threshold),
            v_reset=a(m.v_reset),
            metadata=meta,
        ),
        "LI": lambda: nir.LI(tau=a(m.tau_mem), r=a(m.r), v_leak=a(m.v_leak), metadata=meta),
        "IF": lambda: nir.IF(r=a(m.r), v_threshold=a(m.v_threshold), v_reset=a(m.v_reset), metadata=meta),
        "Integrator": lambda: nir.I(r=a(m.r), metadata=meta),
    }
    return build[kind]()


def _exp_threshold(m, name):
    return _nir().Threshold(threshold=_f32(m.threshold).reshape(tuple(m.shape)))


def _exp_conv(m, name):
    nir = _nir()
    cls = nir.Conv2d if type(m).__name__ == "Conv2d" else nir.Conv1d
    nd = len(m.stride)
    bias = _f32(m.bias) if m.bias is not None else np.zeros(m.output_shape[0], np.float32)
    pad = m.padding if isinstance(m.padding, str) else (m.padding if nd == 2 else m.padding[0])
    spatial = tuple(m.input_shape[1:]) if nd == 2 else m.input_shape[1]
    return cls(
        input_shape=spatial,
        weight=_f32(m.weight),
        stride=m.stride if nd == 2 else m.stride[0],
        padding=pad,
        dilation=m.dilation if nd == 2 else m.dilation[0],
        groups=m.groups,
        bias=bias,
        metadata={"pondlib_has_bias": int(m.bias is not None)},
    )


def _exp_pool(m, name):
    nir = _nir()
    cls = nir.AvgPool2d if type(m).__name__ == "AvgPool2d" else nir.SumPool2d
    return cls(kernel_size=np.array(m.kernel_size), stride=np.array(m.stride), padding=np.array(m.padding))


def _exp_flatten(m, name):
    return _nir().Flatten(input_type={"input": np.array(m.input_shape)}, start_dim=m.start_dim, end_dim=m.end_dim)


def _exp_scale(m, name):
    return _nir().Scale(scale=_f32(m.scale).reshape(tuple(m.input_shape)))


def _exp_delay(m, name):
    return _nir().Delay(delay=(np.asarray(m.steps, np.float64) * m.dt).reshape(tuple(m.shape)))


def _exp_residual(m, name):
    nir = _nir()
    chain = _chain(m.block, "")
    nodes, edges = _wire(chain, name)
    nodes["input"] = nir.Input(input_type=np.array(_in_shape(m.block.layers[0])))
    nodes["output"] = nir.Output(output_type=np.array(_out_shape(m.block.layers[-1])))
    edges.append(("input", "output"))
    return nir.NIRGraph(nodes=nodes, edges=edges, metadata={"pondlib_type": "Residual"}, type_check=False)


def _exp_graphnet(m, name):
    nir = _nir()

    nodes = {
        INPUT: nir.Input(input_type=np.array(m.input_shape)),
        OUTPUT: nir.Output(output_type=np.array(m.output_shape)),
    }
    for k, sub in m.modules.items():
        nodes[k] = _export(sub, f"{name}/{k}")
    return nir.NIRGraph(nodes=nodes, edges=[tuple(e) for e in m.edges], type_check=False)


def _exporters() -> dict[type, Callable]:

    table: dict[type, Callable] = {
        Linear: _exp_linear,
        LIF: _exp_lif,
        Residual: _exp_residual,
        GraphNetwork: _exp_graphnet,
        neurons.Threshold: _exp_threshold,
        layers.Conv1d: _exp_conv,
        layers.Conv2d: _exp_conv,
        layers.SumPool2d: _exp_pool,
        layers.AvgPool2d: _exp_pool,
        layers.Flatten: _exp_flatten,
        layers.Scale: _exp_scale,
        layers.Delay: _exp_delay,
    }
    for cls in (neurons.CubaLIF, neurons.CubaLI, neurons.NIRLIF, neurons.LI, neurons.IF, neurons.Integrator):
        table[cls] = _exp_neuron
    return table


#: pondlib module class -> exporter ``(module, name) -> nir node`` (filled on first use).
EXPORTERS: dict[type, Callable] = {}


def _export(m: Any, name: str) -> Any:
    if not EXPORTERS:
        EXPORTERS.update(_exporters())
    exp = EXPORTERS.get(type(m))
    if exp is None:
        raise NIRError(
            "NIR cannot represent this module",
            value=type(m).__name__,
            limit=sorted(t.__name__ for t in EXPORTERS),
            where=name,
            fix="replace the module, or add an exporter to pondlib.interop.nir.EXPORTERS",
        )
    return exp(m, name)


def _chain(m: Any, prefix: str) -> list[tuple[str, Any]]:
    """``(name, module)`` pairs of a Sequential (nested ones inlined) or of a single module."""

    if type(m) is Sequential:
        out = []
        for i, child in enumerate(m.layers):
            out.extend(
                _chain(
                    child,
                    f"{prefix}{i}_{type(child).__name__}" if not prefix else f"{prefix}.{i}_{type(child).__name__}",
                )
            )
        return out
    return [(prefix or type(m).__name__, m)]


def _wire(chain: list[tuple[str, Any]], where: str) -> tuple[dict, list]:
    """NIR nodes for a chain of modules, with a Flatten where a spatial output meets a flat input."""
    nir = _nir()
    nodes: dict[str, Any] = {}
    edges: list[tuple[str, str]] = []
    prev, prev_shape = "input", _in_shape(chain[0][1])
    for name, m in chain:
        need = _in_shape(m)
        if tuple(prev_shape) != tuple(need):
            if len(need) == 1 and int(np.prod(prev_shape)) == need[0]:
                fl = f"{name}.flatten"
                nodes[fl] = nir.Flatten(input_type={"input": np.array(prev_shape)}, start_dim=0, end_dim=-1)
                edges.append((prev, fl))
                prev = fl
            else:
                raise NIRError(
                    "NIR cannot reshape between these modules",
                    value=list(prev_shape),
                    limit=list(need),
                    where=name,
                    fix="NIR has Flatten but no reshape to a spatial shape: give the module "
                    "the input shape of its predecessor",
                )
        nodes[name] = _export(m, name)
        edges.append((prev, name))
        prev, prev_shape = name, _out_shape(m)
    edges.append((prev, "output"))
    return nodes, edges


def to_nir(module: Any) -> Any:
    """Export a pondlib module (or a ``nir.NIRGraph``, returned unchanged) as a ``nir.NIRGraph``.

    Node names are the Sequential names (``0_Linear``, ``1_LIF``, ...). The graph metadata holds
    ``pondlib_format`` and ``pondlib_dt`` (the first time step found), so that :func:`from_nir`
    detects the ``pondlib`` convention.

    Raises:
        NIRError: a module NIR cannot represent, naming it (see the module docstring).
    """
    nir = _nir()
    if isinstance(module, nir.NIRGraph):
        return module
    import equinox as eqx

    check_type(module, "module", eqx.Module, where="to_nir", error=NIRError,
               fix="pass a pondlib.nn network (e.g. nn.Sequential(...)) or a nir.NIRGraph")  # fmt: skip

    dt = _first_dt(module)
    meta = {"pondlib_format": FORMAT_VERSION, "pondlib_dt": float(dt)}
    if type(module) is GraphNetwork:
        g = _exp_graphnet(module, "graph")
        g.metadata = meta
        return g
    chain = _chain(module, "")
    nodes, edges = _wire(chain, "graph")
    first, last = chain[0][1], chain[-1][1]
    nodes["input"] = nir.Input(input_type=np.array(_in_shape(first)))
    nodes["output"] = nir.Output(output_type=np.array(_out_shape(last)))
    return nir.NIRGraph(nodes=nodes, edges=edges, metadata=meta, type_check=False)


def _first_dt(module: Any) -> float:
    import jax

    for leaf in jax.tree_util.tree_leaves(module, is_leaf=lambda x: hasattr(x, "dt")):
        if hasattr(leaf, "dt") and isinstance(leaf.dt, float):
            return leaf.dt
    return 1e-3


def write(path: Any, module_or_graph: Any) -> None:
    """Write a pondlib module or a ``nir.NIRGraph`` to a NIR (HDF5) file at ``path``.

    ``path`` is checked before anything is exported: it must be a ``str`` or ``os.PathLike`` naming a
    file (not a directory) in an existing directory.

    Raises:
        NIRError: ``path`` is not a writable file path, the module cannot be represented, or the file
            cannot be written (naming the path).
    """
    nir = _nir()
    path = check_writable_file(path, "NIR file", error=NIRError)
    graph = to_nir(module_or_graph)
    try:
        nir.write(str(path), graph)
    except (OSError, RuntimeError, TypeError, ValueError) as err:
        raise NIRError(
            "cannot write NIR file",
            value=f"{type(err).__name__}: {err}",
            where=str(path),
            fix="check the directory exists and is writable",
        ) from None
