"""Which exporter convention and time step a NIR graph implies (the table in :mod:`pondlib.interop.nir`).

NIR stores continuous-time parameters but no ``dt``; each exporter discretizes differently, and the
ratios of a graph's time constants ``tau`` to their gains ``r`` (``w_in`` for synapses) tell which one:

* ``pondlib``: the file carries ``pondlib_*`` metadata (its dt included); forward Euler;
* ``unit``: every ``r = w_in = 1`` (Norse, Sinabs); forward Euler with the given ``dt``;
* ``dt_scaled``: ``r = tau / dt`` for one ``dt`` across every neuron (snnTorch, Lava); forward Euler;
* ``rockpool``: ``r = tau exp(-dt / tau) / dt`` for one ``dt`` (Rockpool); exact exponential decay;
* ``unknown``: none of these; forward Euler with the given ``dt``.

Every decision and every value read from the file is appended to the caller's notes.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from pondlib.errors import NIRError
from pondlib.interop.nir._fields import _arr, _graph_nodes, _meta
from pondlib.interop.nir.common import CONVENTIONS
from pondlib.interop.nir.common import nir_package as _nir
from pondlib.validate import check_choice, check_float

__all__ = ["detect_convention"]


class _Evidence(NamedTuple):
    """What the time constants of a graph say about its convention.

    Attributes:
        implied: per neuron and synapse, the ``dt = tau / r`` (``tau_syn / w_in``) that ``dt_scaled`` implies.
        unit: every ``r`` and ``w_in`` is 1. scaled: ``implied`` is one positive value (to 1e-3 relative).
        rock_dt: the one ``dt`` solving Rockpool's ``r = tau exp(-dt / tau) / dt``, or None.
    """

    implied: np.ndarray
    unit: bool
    scaled: bool
    rock_dt: float | None


def detect_convention(graph: Any, dt: float | None, convention: str, notes: list[str]) -> tuple[str, float, str]:
    """``(convention, dt, decay)`` of ``graph`` (module docstring); ``dt`` None takes it from the file.

    Raises:
        NIRError: an unknown ``convention``, a ``dt`` that is not a finite number > 0, ``convention='pondlib'``
            without pondlib metadata, or no ``dt`` given where the convention does not imply one.
    """
    meta = _meta(graph)
    check_choice(
        convention,
        "convention",
        sorted(CONVENTIONS),
        error=NIRError,
        fix="pass one of the listed conventions, or 'auto'",
    )
    conv = CONVENTIONS[convention]
    if dt is not None:
        dt = check_float(
            dt, "dt", lo=0.0, lo_open=True, error=NIRError, fix="pass the exporter's time step in seconds, e.g. dt=1e-4"
        )
    pondlib_file = "pondlib_format" in meta
    if conv == "pondlib" or (conv == "auto" and pondlib_file):
        return _pondlib_convention(meta, dt, pondlib_file, notes)
    taus, syns, has_dt_node = _time_constants(graph)
    if not taus:
        return _leakless_convention(conv, dt, has_dt_node, notes)
    ev = _evidence(taus, syns)
    if conv == "auto":
        conv = _choose_convention(ev, dt, notes)
    else:
        notes.append(f"convention given: {conv}")
    return _convention_dt(conv, dt, ev, notes)


def _pondlib_convention(meta: dict, dt: float | None, pondlib_file: bool, notes: list[str]) -> tuple[str, float, str]:
    """A file written by pondlib: its ``pondlib_dt`` unless ``dt`` is given (pondlib LIF layers keep the file's)."""
    if not pondlib_file:
        raise NIRError("convention='pondlib' but the file has no pondlib metadata", fix="use convention='auto'")
    file_dt = float(meta.get("pondlib_dt", float("nan")))
    if dt is not None and math.isfinite(file_dt) and not math.isclose(dt, file_dt, rel_tol=1e-9):
        notes.append(
            f"pondlib file written with dt = {file_dt}; pondlib LIF layers keep it, other neurons use dt = {dt}"
        )
    use = dt if dt is not None else (file_dt if math.isfinite(file_dt) else 1e-3)
    notes.append(f"convention: pondlib (metadata), dt = {use}")
    return "pondlib", use, "euler"


def _time_constants(graph: Any) -> tuple[list, list, bool]:
    """``(taus, syns, has_dt_node)``: ``(tau, r)`` of every LIF/LI/CubaLIF/CubaLI membrane, ``(tau_syn, w_in)``
    of every Cuba synapse, nested graphs included, and whether a Delay node (in seconds) is present."""
    nir = _nir()
    taus: list[tuple[np.ndarray, np.ndarray]] = []
    syns: list[tuple[np.ndarray, np.ndarray]] = []
    has_dt_node = False

    def walk(g, prefix):
        nonlocal has_dt_node
        for key, node in _graph_nodes(g, prefix.rstrip(".") or "graph").items():
            kind, name = type(node).__name__, f"{prefix}{key}"
            if isinstance(node, nir.NIRGraph):
                walk(node, name + ".")
            elif kind in ("LIF", "LI"):
                taus.append(_pair(node, "tau", "r", name))
            elif kind in ("CubaLIF", "CubaLI"):
                taus.append(_pair(node, "tau_mem", "r", name))
                syns.append(_pair(node, "tau_syn", "w_in", name))
            elif kind == "Delay":
                has_dt_node = True

    walk(graph, "")
    return taus, syns, has_dt_node


def _leakless_convention(conv: str, dt: float | None, has_dt_node: bool, notes: list[str]) -> tuple[str, float, str]:
    """No leaky neuron: dt changes nothing (1e-3 by default) unless Delay nodes, in seconds, need it."""
    if dt is None:
        if has_dt_node:
            raise NIRError(
                "dt is required",
                value=None,
                limit="the exporter's step in seconds",
                fix="this graph has Delay nodes (seconds): pass dt=...",
            )
        notes.append("no time constants in the graph: dt does not change the dynamics; dt = 1e-3")
        dt = 1e-3
    notes.append(f"convention: {conv if conv != 'auto' else 'unit'} (no leaky neurons), dt = {dt}")
    return (conv if conv != "auto" else "unit"), dt, "euler"


def _evidence(taus: list, syns: list) -> _Evidence:
    """The :class:`_Evidence` of the ``(tau, r)`` and ``(tau_syn, w_in)`` pairs of a graph."""
    tau = np.concatenate([t for t, _ in taus])
    r = np.concatenate([q for _, q in taus])
    ts = np.concatenate([t for t, _ in syns]) if syns else np.zeros(0)
    w = np.concatenate([q for _, q in syns]) if syns else np.zeros(0)
    unit = np.allclose(r, 1.0, rtol=1e-6) and np.allclose(w, 1.0, rtol=1e-6)
    implied = np.concatenate([tau / np.where(r != 0, r, np.nan), ts / np.where(w != 0, w, np.nan)])
    scaled = bool(np.all(np.isfinite(implied)) and np.all(implied > 0) and np.ptp(implied) <= 1e-3 * np.median(implied))
    return _Evidence(implied, unit, scaled, _rockpool_dt(tau, r))


def _choose_convention(ev: _Evidence, dt: float | None, notes: list[str]) -> str:
    """``convention='auto'``: unit, else dt_scaled or rockpool (both fit: the dt nearer the given one, or
    the rounder), else unknown."""
    if ev.unit:
        conv = "unit"
    elif ev.scaled and ev.rock_dt is not None:  # one neuron fits both: prefer the given/rounder dt
        d_s = float(np.median(ev.implied))
        pick = (lambda d: abs(d - dt) / dt) if dt is not None else _roundness
        conv = "rockpool" if pick(ev.rock_dt) < pick(d_s) else "dt_scaled"
        notes.append(f"parameters fit dt_scaled (dt = {d_s:.6g}) and rockpool (dt = {ev.rock_dt:.6g}); chose {conv}")
    elif ev.scaled:
        conv = "dt_scaled"
    elif ev.rock_dt is not None:
        conv = "rockpool"
    else:
        conv = "unknown"
    notes.append(f"convention detected: {conv}")
    return conv


def _convention_dt(conv: str, dt: float | None, ev: _Evidence, notes: list[str]) -> tuple[str, float, str]:
    """``(conv, dt, decay)``: the dt the file implies when none is given (dt_scaled: ``tau / r``; rockpool:
    the solved dt, with exponential decay), a note when a given dt contradicts it; else dt is required."""
    if conv == "dt_scaled":
        file_dt = float(f"{np.median(ev.implied):.6g}") if ev.scaled else None
        if dt is None:
            if file_dt is None:
                raise NIRError("dt is required", fix="tau/r differs between neurons: pass dt=...")
            dt = file_dt
            notes.append(f"dt = {dt} s read from r = tau/dt (snnTorch/Lava)")
        elif file_dt is not None and not math.isclose(dt, file_dt, rel_tol=1e-3):
            notes.append(
                f"the file's r = tau/dt implies dt = {file_dt} s; simulating with dt = {dt} s changes the dynamics"
            )
    elif conv == "rockpool":
        if dt is None:
            if ev.rock_dt is None:
                raise NIRError("dt is required", fix="pass dt=...")
            dt = float(f"{ev.rock_dt:.6g}")
            notes.append(f"dt = {dt} s solved from r = tau exp(-dt/tau)/dt (Rockpool)")
        notes.append("decay: exp (Rockpool's discrete model), input gain dt/tau r")
        return conv, dt, "exp"
    elif dt is None:
        raise NIRError(
            "dt is required",
            value=None,
            limit="the exporter's step in seconds",
            where=f"convention {conv}",
            fix="NIR files do not store dt and this one does not imply it (r = 1): pass "
            "the exporter's dt, e.g. from_nir(path, dt=1e-4)",
        )
    if conv == "unknown":
        notes.append(
            f"parameters match no known convention: forward Euler with dt = {dt} s as stated "
            f"by the NIR equations; pass convention= to override"
        )
    return conv, dt, "euler"


def _pair(node: Any, tau: str, gain: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A neuron's time constant and gain, flat and of one size (a scalar is broadcast)."""
    t, q = _arr(node, tau, name).ravel(), _arr(node, gain, name).ravel()
    if t.size != q.size and 1 not in (t.size, q.size):
        raise NIRError(
            f"parameter {gain} size",
            value=q.size,
            limit=f"1 or {t.size} (the size of {tau})",
            where=name,
            fix="give every parameter of the neuron one value per neuron",
        )
    n = max(t.size, q.size)
    return np.broadcast_to(t, (n,)), np.broadcast_to(q, (n,))


def _roundness(d: float) -> float:
    """Relative distance of ``d`` to the nearest number with two significant digits."""
    e = 10.0 ** (math.floor(math.log10(d)) - 1)
    return abs(d - round(d / e) * e) / d


def _rockpool_dt(tau: np.ndarray, r: np.ndarray) -> float | None:
    """The dt solving ``r = tau exp(-dt/tau) / dt`` for every neuron, or None."""
    if np.any(r <= 0) or np.any(tau <= 0):
        return None
    sols = []
    for t, q in zip(tau, r):
        lo, hi = t * 1e-9, t * 50.0  # f(dt) = t e^{-dt/t}/dt decreases on (0, inf)
        f = lambda d, t=t, q=q: t * math.exp(-d / t) / d - q
        if f(lo) < 0 or f(hi) > 0:
            return None
        for _ in range(200):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
        sols.append(math.sqrt(lo * hi))
    sols = np.asarray(sols)
    if np.ptp(sols) > 1e-3 * np.median(sols) or np.median(sols) >= np.min(tau):
        return None
    return float(np.median(sols))
