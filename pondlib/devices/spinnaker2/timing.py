r"""Timing model of the DNN path (scheduler PE + worker PEs, weights streamed from DRAM).

One inference of layers :math:`\ell = 1..L` (``K_l -> N_l``, ``W_l`` workers, ``B_l = K_l N_l`` weight
bytes, ``M_l = K_l N_l`` MACs):

.. math::

    t = t_{setup} + \sum_\ell \big(t_{sched} + \underbrace{B_\ell / BW}_{\text{weight fetch}}
        + \underbrace{\frac{M_\ell / W_\ell}{64\, f_{clk}\, \eta}}_{\text{MLA}}
        + \underbrace{t_{io} + B_\ell / H}_{\text{other}}\big) + t_{softmax} + t_{cleanup}

* ``t_sched`` (s): scheduler overhead per layer (read the layer configuration, interrupt the workers,
  collect their completion words);
* ``BW`` (B/s): effective DRAM bandwidth, shared by the workers of a layer;
* ``eta``: MLA efficiency (fraction of the 64 int8 MACs per cycle reached, DMA waits included);
* ``t_io`` (s): per-layer fixed worker cost (input broadcast and output write-back through DRAM);
* ``H`` (B/s): worker-side handling rate of fetched weight bytes (layout for the MLA);
* ``t_setup``, ``t_cleanup``, ``t_softmax`` (s): once per inference (softmax on the scheduler, optional).

**Calibration** (:func:`calibrate`) solves these from the paper's 784-512-256-16 figures
(:data:`PAPER_ANCHORS`): ``BW = 401,408 B / 192 us``, ``t_sched = 13 us``, ``eta`` from FC1's 29 us of
MLA time with its worker count, and ``t_io``, ``H`` from the two remaining equations (FC1's other
time, 323 - 192 - 29 - 13 = 89 us, and the remaining layer time 688 - 39 - 93 - 50 - 323 = 183 us of
FC2 + FC3). The paper does not split FC2 and FC3; that split is a prediction of the model. Setup and
cleanup are taken as measured (their scaling with the worker count, 12 us at 8 workers, is not
modelled because the anchor run's worker count is not stated).

Example:
    >>> report = estimate((784, 512, 256, 16), softmax=True)
    >>> round(report.total_s * 1e6), round(report.layers[0].total_s * 1e6)
    (688, 323)
    >>> round(report.layers[0].fetch_s * 1e6), round(report.layers[0].overhead_s * 1e6)
    (192, 13)
    >>> print(report.table().splitlines()[0])
    layer    shape         workers  weights B  sched us  fetch us  MLA us  other us  total us  MLA busy
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from pondlib.devices.spinnaker2.dnn import DNNConfig, default_workers
from pondlib.devices.spinnaker2.limits import SPINNAKER2_CHIP, SpiNNaker2Limits, get_limits
from pondlib.errors import ConfigError
from pondlib.validate import check_bool, check_float, check_int, check_type

__all__ = [
    "TimingModel",
    "PaperAnchors",
    "PAPER_ANCHORS",
    "LayerTiming",
    "TimingReport",
    "calibrate",
    "estimate",
    "PAPER_MODEL",
]


@dataclass(frozen=True)
class TimingModel:
    """Coefficients of the timing model (module docstring); seconds, bytes per second, Hz."""

    clock_hz: float  # Hz, PE clock
    mla_macs_per_cycle: int  # int8 MACs per cycle per PE
    dram_bandwidth: float  # B/s effective
    layer_overhead_s: float  # s per layer (scheduler)
    mla_efficiency: float  # fraction of MLA peak reached
    io_fixed_s: float  # s per layer (input/output through DRAM)
    weight_handling_Bps: float  # B/s, worker-side weight handling
    setup_s: float  # s per inference
    cleanup_s: float  # s per inference
    softmax_s: float  # s per inference when a softmax layer is run

    def __post_init__(self) -> None:
        """Rates, the clock and the efficiency finite and > 0 (they divide); times finite and >= 0."""
        where = "TimingModel"
        object.__setattr__(
            self,
            "mla_macs_per_cycle",
            check_int(self.mla_macs_per_cycle, "mla_macs_per_cycle", lo=1, where=where, error=ConfigError),
        )
        for key in ("clock_hz", "dram_bandwidth", "mla_efficiency", "weight_handling_Bps"):
            value = check_float(getattr(self, key), key, lo=0.0, lo_open=True, where=where, error=ConfigError)
            object.__setattr__(self, key, value)
        for key in ("layer_overhead_s", "io_fixed_s", "setup_s", "cleanup_s", "softmax_s"):
            object.__setattr__(self, key, check_float(getattr(self, key), key, lo=0.0, where=where, error=ConfigError))


@dataclass(frozen=True)
class PaperAnchors:
    """Measured figures of the paper (784-512-256-16 MLP, MNIST, one chip)."""

    sizes: tuple[int, ...] = (784, 512, 256, 16)
    total_s: float = 688e-6
    fc1_s: float = 323e-6
    fc1_fetch_s: float = 192e-6
    fc1_mla_s: float = 29e-6
    layer_overhead_s: float = 13e-6
    setup_s: float = 39e-6
    cleanup_s: float = 93e-6
    softmax_s: float = 50e-6  # the softmax layer, 13 us scheduling included

    def __post_init__(self) -> None:
        """Sizes: at least two layers of whole numbers >= 1; times finite and > 0."""
        where = "PaperAnchors"
        if isinstance(self.sizes, (str, bytes)) or not isinstance(self.sizes, Sequence) or len(self.sizes) < 2:
            raise ConfigError(
                "sizes",
                value=self.sizes,
                limit="(K, N1, ...), at least two sizes",
                where=where,
                fix="pass e.g. (784, 512, 256, 16)",
            )
        sizes = tuple(check_int(v, "sizes", lo=1, hi=2**53, where=where, error=ConfigError) for v in self.sizes)
        object.__setattr__(self, "sizes", sizes)
        for f in fields(self):
            if f.name != "sizes":
                value = check_float(getattr(self, f.name), f.name, lo=0.0, lo_open=True, where=where, error=ConfigError)
                object.__setattr__(self, f.name, value)


#: The anchors of ``docs/TARGETS.md``.
PAPER_ANCHORS = PaperAnchors()


@dataclass(frozen=True)
class LayerTiming:
    """The time of one layer, split into its parts (seconds)."""

    name: str
    k: int
    n: int
    workers: int
    weight_bytes: int
    overhead_s: float
    fetch_s: float
    mla_s: float
    other_s: float

    @property
    def total_s(self) -> float:
        """Layer time: scheduling + fetch + MLA + other."""
        return self.overhead_s + self.fetch_s + self.mla_s + self.other_s

    @property
    def mla_busy(self) -> float:
        """Fraction of the layer time the MLA computes."""
        return self.mla_s / self.total_s


@dataclass(frozen=True)
class TimingReport:
    """Per-layer breakdown and totals of one inference."""

    layers: tuple[LayerTiming, ...]
    setup_s: float
    cleanup_s: float
    softmax_s: float

    @property
    def total_s(self) -> float:
        """End-to-end time of one inference."""
        return self.setup_s + sum(layer.total_s for layer in self.layers) + self.softmax_s + self.cleanup_s

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers (microseconds) for JSON."""
        us = 1e6
        return {
            "layers": [
                {
                    "name": lt.name,
                    "k": lt.k,
                    "n": lt.n,
                    "workers": lt.workers,
                    "weight_bytes": lt.weight_bytes,
                    "sched_us": lt.overhead_s * us,
                    "fetch_us": lt.fetch_s * us,
                    "mla_us": lt.mla_s * us,
                    "other_us": lt.other_s * us,
                    "total_us": lt.total_s * us,
                    "mla_busy": lt.mla_busy,
                }
                for lt in self.layers
            ],
            "setup_us": self.setup_s * us,
            "softmax_us": self.softmax_s * us,
            "cleanup_us": self.cleanup_s * us,
            "total_us": self.total_s * us,
        }

    def table(self) -> str:
        """A fixed-width table: one row per layer, then setup, softmax, cleanup and the total (us)."""
        head = (
            f"{'layer':<8} {'shape':<13} {'workers':>7} {'weights B':>10} {'sched us':>9} {'fetch us':>9} "
            f"{'MLA us':>7} {'other us':>9} {'total us':>9} {'MLA busy':>9}"
        )
        rows = [head]
        for lt in self.layers:
            rows.append(
                f"{lt.name:<8} {f'{lt.k}x{lt.n}':<13} {lt.workers:>7} {lt.weight_bytes:>10} "
                f"{lt.overhead_s * 1e6:>9.1f} {lt.fetch_s * 1e6:>9.1f} {lt.mla_s * 1e6:>7.1f} "
                f"{lt.other_s * 1e6:>9.1f} {lt.total_s * 1e6:>9.1f} {lt.mla_busy:>8.0%}"
            )
        for name, v in (("setup", self.setup_s), ("softmax", self.softmax_s), ("cleanup", self.cleanup_s)):
            rows.append(f"{name:<8} {'':<13} {'':>7} {'':>10} {'':>9} {'':>9} {'':>7} {'':>9} {v * 1e6:>9.1f}")
        rows.append(
            f"{'total':<8} {'':<13} {'':>7} {'':>10} {'':>9} {'':>9} {'':>7} {'':>9} {self.total_s * 1e6:>9.1f}"
        )
        return "\n".join(rows)


def _shapes(sizes: Sequence[int], limits: SpiNNaker2Limits) -> list[tuple[str, int, int, int]]:
    return [
        (f"fc{i + 1}", int(k), int(n), default_workers(int(k), int(n), limits))
        for i, (k, n) in enumerate(zip(sizes[:-1], sizes[1:]))
    ]


def _layer(model: TimingModel, name: str, k: int, n: int, workers: int) -> LayerTiming:
    b = k * n  # int8 weights: one byte per MAC
    mla = (b / workers) / (model.mla_macs_per_cycle * model.clock_hz * model.mla_efficiency)
    return LayerTiming(
        name,
        k,
        n,
        workers,
        b,
        model.layer_overhead_s,
        b / model.dram_bandwidth,
        mla,
        model.io_fixed_s + b / model.weight_handling_Bps,
    )


def calibrate(anchors: PaperAnchors = PAPER_ANCHORS, limits: SpiNNaker2Limits = SPINNAKER2_CHIP) -> TimingModel:
    """Solve the model's coefficients from the anchors (module docstring); workers as :func:`estimate`.

    Raises:
        ConfigError: anchors that give a non-positive coefficient.
    """
    check_type(anchors, "anchors", PaperAnchors, where="calibrate", error=ConfigError)
    check_type(limits, "limits", SpiNNaker2Limits, where="calibrate", error=ConfigError)
    shapes = _shapes(anchors.sizes, limits)
    _, k1, n1, w1 = shapes[0]
    b1 = k1 * n1
    bw = b1 / anchors.fc1_fetch_s
    peak = limits.mla_macs_int8 * limits.clock_hz
    eta = (b1 / w1 / peak) / anchors.fc1_mla_s
    other1 = anchors.fc1_s - anchors.fc1_fetch_s - anchors.fc1_mla_s - anchors.layer_overhead_s
    rest = anchors.total_s - anchors.setup_s - anchors.cleanup_s - anchors.softmax_s - anchors.fc1_s
    n_rest = len(shapes) - 1
    known = sum(anchors.layer_overhead_s + k * n / bw + (k * n / w) / (peak * eta) for _, k, n, w in shapes[1:])
    b_rest = sum(k * n for _, k, n, _ in shapes[1:])
    a = rest - known  # = n_rest * t_io + b_rest / H
    if b_rest == n_rest * b1:  # one layer, or layers as large as the first: t_io and H are not separable
        raise ConfigError(
            "timing calibration",
            value=f"sizes {anchors.sizes}",
            limit="at least two layers whose weight bytes differ from the first layer's",
            where="calibrate",
            fix="calibrate on a network like the paper's 784-512-256-16",
        )
    inv_h = (a - n_rest * other1) / (b_rest - n_rest * b1)
    t_io = other1 - b1 * inv_h
    if not (inv_h > 0 and t_io > 0 and eta > 0 and math.isfinite(1.0 / inv_h)):
        raise ConfigError(
            "timing calibration",
            value={"1/H": inv_h, "t_io": t_io, "eta": eta},
            limit="positive coefficients",
            where="calibrate",
            fix="check the anchors (the layer times must exceed fetch + MLA + scheduling)",
        )
    return TimingModel(
        clock_hz=limits.clock_hz,
        mla_macs_per_cycle=limits.mla_macs_int8,
        dram_bandwidth=bw,
        layer_overhead_s=anchors.layer_overhead_s,
        mla_efficiency=eta,
        io_fixed_s=t_io,
        weight_handling_Bps=1.0 / inv_h,
        setup_s=anchors.setup_s,
        cleanup_s=anchors.cleanup_s,
        softmax_s=anchors.softmax_s,
    )


#: The model calibrated on :data:`PAPER_ANCHORS` for one chip at 150 MHz.
PAPER_MODEL = calibrate()


def estimate(
    network: DNNConfig | Sequence[int],
    model: TimingModel | None = None,
    *,
    softmax: bool = False,
    limits: SpiNNaker2Limits | str | None = None,
) -> TimingReport:
    """Time one inference of a :class:`~pondlib.devices.spinnaker2.dnn.DNNConfig` (its tiles give the
    workers) or of layer sizes ``(K, N1, N2, ...)`` (fewest workers that fit, as ``dnn_mapper``).

    Args:
        network: a DNN configuration or the layer sizes.
        model: the coefficients (default :data:`PAPER_MODEL`).
        softmax: add the softmax layer the paper runs after the last layer.
        limits: chip limits for the worker split of plain sizes.

    Raises:
        ConfigError: sizes that are not at least two whole numbers in 1..2^53, an invalid configuration,
            a model that is not a :class:`TimingModel`.
    """
    model = PAPER_MODEL if model is None else model
    check_type(model, "model", TimingModel, where="estimate", error=ConfigError)
    softmax = check_bool(softmax, "softmax", where="estimate", error=ConfigError)
    if isinstance(network, DNNConfig):
        problems = network.problems()
        if problems:
            raise ConfigError(problems=problems, where="estimate")
        shapes = [(la.name, la.weights.shape[0], la.weights.shape[1], la.workers) for la in network.layers]
    else:
        if isinstance(network, (str, bytes)) or not isinstance(network, (Sequence, np.ndarray)) or len(network) < 2:
            raise ConfigError(
                "layer sizes",
                value=network if isinstance(network, (Sequence, np.ndarray)) else type(network).__name__,
                limit="(K, N1, ...) positive, at least two",
                where="estimate",
                fix="pass e.g. (784, 512, 256, 16) or a DNNConfig",
            )
        sizes = [check_int(s, "layer size", lo=1, hi=2**53, where="estimate", error=ConfigError) for s in network]
        shapes = _shapes(sizes, get_limits(limits))
    layers = tuple(_layer(model, *s) for s in shapes)
    return TimingReport(layers, model.setup_s, model.cleanup_s, model.softmax_s if softmax else 0.0)
