r"""Evaluate every schedule of a space, rank them, and find the Pareto front of traffic and energy.

:func:`explore` evaluates each schedule of ``space`` with :func:`~pondlib.explore.evaluate` and returns an
:class:`Exploration`: the reports ranked by ``rank_by`` (energy, traffic, latency or energy-delay product;
schedules whose fused stacks cannot hold their weights last), the Pareto front (no other
schedule has both less or equal off-chip traffic and less or equal energy, one of them strictly less),
and the ratios worst / best. A space is ``"hybrid"`` (STEMS's ``(N + 1)^2`` one-split-point schedules),
``"uniform"`` (``B`` in ``{1, 2, 4, ..., T}`` x {LBL, LF}), ``"all"`` (both, without duplicates) or any
sequence of :class:`~pondlib.explore.Schedule`.

:func:`state_removal_study` is STEMS's neuron-state ablation: the best schedule when the first ``k``
blocks keep no state, for ``k = 0 .. N`` (the "SEW-X" models of its Table 2).

Example:
    >>> from pondlib.explore import sew_resnet18, meta_prototype
    >>> ex = explore(sew_resnet18(), meta_prototype("1MB"), space="all")
    >>> len(ex.reports), ex.best().label()
    (70, 'TB-LF x2 | TB-LBL x5')
    >>> ex.traffic_ratio() > 12, ex.energy_ratio() > 4.5
    (True, True)
    >>> bool(pareto_mask([3.0, 1.0, 2.0, 2.0], [1.0, 3.0, 2.0, 3.0]).tolist() == [True, True, True, False])
    True
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pondlib.errors import ConfigError
from pondlib.explore.evaluate import MODES, evaluate
from pondlib.explore.hardware import Hardware
from pondlib.explore.report import Report
from pondlib.explore.schedule import SPLIT_SIDES, Schedule, hybrid_space, uniform_space
from pondlib.explore.workload import Workload
from pondlib.validate import as_float_array

__all__ = ["explore", "Exploration", "pareto_mask", "schedule_space", "state_removal_study", "SPACES", "RANKINGS"]

#: Named spaces of :func:`schedule_space`.
SPACES = ("hybrid", "uniform", "all")
#: Ranking keys of :func:`explore`: total energy, off-chip traffic, latency (cycles), energy-delay product.
RANKINGS = ("energy", "traffic", "latency", "edp")

#: Sort key of each ranking: the key itself, ties broken by the others.
_KEYS = {
    "energy": lambda r: (r.energy_pj, r.traffic_bits, r.latency_cycles),
    "traffic": lambda r: (r.traffic_bits, r.energy_pj, r.latency_cycles),
    "latency": lambda r: (r.latency_cycles, r.energy_pj, r.traffic_bits),
    "edp": lambda r: (r.edp, r.energy_pj, r.traffic_bits),
}


def pareto_mask(traffic: Any, energy: Any) -> np.ndarray:
    """``(n,)`` bool: True where no other point has ``traffic <=`` and ``energy <=`` with one strictly less.

    Vectorised: an ``(n, n)`` comparison (n is a few hundred schedules at most).

    Raises:
        ConfigError: inputs that are not 1-d finite arrays of the same length.
    """
    t = as_float_array(traffic, "traffic", ndim=1, error=ConfigError, where="pareto_mask")
    e = as_float_array(energy, "energy", ndim=1, error=ConfigError, where="pareto_mask")
    if t.shape != e.shape:
        raise ConfigError("traffic and energy lengths", value=(t.size, e.size), limit="equal", where="pareto_mask")
    le = (t[None, :] <= t[:, None]) & (e[None, :] <= e[:, None])
    lt = (t[None, :] < t[:, None]) | (e[None, :] < e[:, None])
    return ~np.any(le & lt, axis=1)


def schedule_space(
    workload: Workload, space: str | Sequence[Schedule] = "all", *, tb_from: str = "input", lf_from: str = "input"
) -> list[Schedule]:
    """The schedules of ``space`` for ``workload`` (see the module docstring); duplicates removed, order kept.

    Raises:
        ConfigError: an unknown space name, an empty sequence or one holding something else than
            :class:`~pondlib.explore.Schedule`, an unknown split side.
    """
    if not isinstance(workload, Workload):
        raise ConfigError(
            "workload", value=f"a {type(workload).__name__}", limit="a pondlib.explore.Workload", where="explore"
        )
    for name, side in (("tb_from", tb_from), ("lf_from", lf_from)):
        if not isinstance(side, str) or side not in SPLIT_SIDES:
            raise ConfigError(name, value=repr(side), limit=list(SPLIT_SIDES), where="explore")
    n, t = workload.n_blocks, workload.time_steps
    if isinstance(space, str):
        if space not in SPACES:
            raise ConfigError(
                "space", value=repr(space), limit=list(SPACES), where="explore", fix="or pass a list of Schedule"
            )
        out: list[Schedule] = []
        if space in ("hybrid", "all"):
            out += hybrid_space(n, t, tb_from=tb_from, lf_from=lf_from)
        if space in ("uniform", "all"):
            out += uniform_space(n, t)
    else:
        if not isinstance(space, Sequence) or not space:
            raise ConfigError(
                "space",
                value=f"a {type(space).__name__}",
                limit=f"one of {list(SPACES)} or a non-empty sequence of Schedule",
                where="explore",
            )
        bad = [i for i, s in enumerate(space) if not isinstance(s, Schedule)]
        if bad:
            raise ConfigError(
                f"space[{bad[0]}]", value=f"a {type(space[bad[0]]).__name__}", limit="a Schedule", where="explore"
            )
        out = list(space)
    seen: set = set()
    unique = []
    for s in out:
        if s.blocks not in seen:
            seen.add(s.blocks)
            unique.append(s)
    return unique


@dataclass(frozen=True)
class Exploration:
    """Ranked reports of a schedule space.

    Attributes:
        reports: every :class:`~pondlib.explore.Report`, those that fit first, each part best first by
            ``rank_by`` (ties: the other keys).
        pareto: ``(n,)`` bool, True for the reports on the Pareto front of (traffic, energy).
        rank_by: one of :data:`RANKINGS`. mode: the accounting mode. workload, hardware: names.
        seconds: wall time of the evaluation.
    """

    reports: tuple[Report, ...]
    pareto: np.ndarray
    rank_by: str
    mode: str
    workload: str
    hardware: str
    seconds: float

    def best(self) -> Report:
        """The best report by ``rank_by``."""
        return self.reports[0]

    def front(self) -> list[Report]:
        """The Pareto-optimal reports, by increasing traffic."""
        rs = [r for r, on in zip(self.reports, self.pareto) if on]
        return sorted(rs, key=lambda r: (r.traffic_bits, r.energy_pj))

    @property
    def traffic_bits(self) -> np.ndarray:
        """``(n,)`` total off-chip traffic of each report (bits), in rank order."""
        return np.array([r.traffic_bits for r in self.reports])

    @property
    def energy_pj(self) -> np.ndarray:
        """``(n,)`` total energy of each report (pJ), in rank order."""
        return np.array([r.energy_pj for r in self.reports])

    def traffic_ratio(self) -> float:
        """Worst / best off-chip traffic over the space."""
        t = self.traffic_bits
        return float(t.max() / t.min()) if t.min() > 0 else float("inf")

    def energy_ratio(self) -> float:
        """Worst / best energy over the space."""
        e = self.energy_pj
        return float(e.max() / e.min()) if e.min() > 0 else float("inf")

    def find(self, label: str) -> Report:
        """The report whose schedule label or name is ``label`` (ConfigError when none)."""
        for r in self.reports:
            if label in (r.label(), r.schedule.name):
                return r
        raise ConfigError("schedule label", value=repr(label), limit="a label of the explored space", where="find")


def explore(
    workload: Workload,
    hardware: Hardware,
    space: str | Sequence[Schedule] = "all",
    *,
    mode: str = "stems",
    rank_by: str = "energy",
    tb_from: str = "input",
    lf_from: str = "input",
) -> Exploration:
    """Evaluate every schedule of ``space`` and rank them.

    Args:
        workload, hardware: what to schedule on what.
        space: ``"hybrid"``, ``"uniform"``, ``"all"`` or a sequence of schedules.
        mode: ``"stems"`` or ``"ideal"`` (see :func:`~pondlib.explore.evaluate`).
        rank_by: ``"energy"``, ``"traffic"``, ``"latency"`` (cycles) or ``"edp"`` (energy x cycles); ties
            broken by the others. Schedules whose fused stacks hold their weights and a state tile
            (:attr:`~pondlib.explore.Report.feasible`: they fit, or evict spike tiles as STEMS does, the
            eviction charged) rank before those that cannot, whatever the key; the reason is shown by
            :attr:`~pondlib.explore.Report.unfit_stacks`.
        tb_from, lf_from: the side the hybrids count time-batched and fused blocks from.

    Raises:
        ConfigError: bad arguments, each named (see :func:`schedule_space` and
            :func:`~pondlib.explore.evaluate`).
    """
    if not isinstance(rank_by, str) or rank_by not in RANKINGS:
        raise ConfigError("rank_by", value=repr(rank_by), limit=list(RANKINGS), where="explore")
    if not isinstance(mode, str) or mode not in MODES:
        raise ConfigError("mode", value=repr(mode), limit=list(MODES), where="explore")
    schedules = schedule_space(workload, space, tb_from=tb_from, lf_from=lf_from)
    t0 = time.perf_counter()
    reports = [evaluate(workload, hardware, s, mode) for s in schedules]
    seconds = time.perf_counter() - t0
    key = _KEYS[rank_by]
    reports.sort(key=lambda r: (not r.feasible, key(r)))
    mask = pareto_mask([r.traffic_bits for r in reports], [r.energy_pj for r in reports])
    mask.setflags(write=False)
    return Exploration(tuple(reports), mask, rank_by, mode, workload.name, hardware.name, seconds)


def state_removal_study(
    workload: Workload,
    hardware: Hardware,
    space: str | Sequence[Schedule] = "all",
    *,
    mode: str = "stems",
    tb_from: str = "input",
    lf_from: str = "input",
) -> list[dict[str, Any]]:
    """STEMS's neuron-state ablation: for ``k = 0 .. N``, the workload with blocks ``0 .. k-1`` stateless.

    Returns one dict per ``k``: ``"stateful_blocks"`` (``N - k``, STEMS's "SEW-X"), ``"state_bits"`` (total
    state) and ``"best"`` (the best :class:`~pondlib.explore.Report` of ``space`` by energy).
    """
    if not isinstance(workload, Workload):
        raise ConfigError(
            "workload", value=f"a {type(workload).__name__}", limit="a pondlib.explore.Workload", where="explore"
        )
    rows = []
    for k in range(workload.n_blocks + 1):
        w = workload.with_stateless(blocks=range(k))
        ex = explore(w, hardware, space, mode=mode, tb_from=tb_from, lf_from=lf_from)
        rows.append({"stateful_blocks": workload.n_blocks - k, "state_bits": w.total_state_bits, "best": ex.best()})
    return rows
