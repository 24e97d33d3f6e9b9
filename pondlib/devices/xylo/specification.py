"""The Xylo hardware specification: what the mapper produces and the quantizers transform.

A :class:`Specification` holds the network as Xylo sees it: one input projection, one hidden population
(with recurrence and aliases), one readout population. Before quantization the arrays are float and
the dashes are the unrounded ``log2(tau / dt)``; after quantization (:mod:`pondlib.transform`) weights are
integers in the int8 range, thresholds and biases in the int16 range and dashes are rounded integers.

Shapes (``N_in`` input channels, ``N_hid`` hidden neurons, ``N_out`` output neurons, ``k`` synapses per
hidden neuron, 1 or 2):

============================  ==================  =====================================================
field                         shape               meaning
============================  ==================  =====================================================
``weights_in``                (N_in, N_hid, k)    input -> hidden synapse ``[pre, post, syn]``
``weights_rec``               (N_hid, N_hid, k)   hidden -> hidden ``[pre, post, syn]`` (one step delay)
``weights_out``               (N_hid, N_out)      hidden -> output ``[pre, post]`` (one step delay)
``dash_mem``                  (N_hid,)            membrane decay shift, alpha = 1 - 2^-dash
``dash_syn``, ``dash_syn_2``  (N_hid,)            synaptic decay shifts of synapse 0 and 1
``dash_mem_out``              (N_out,)            output membrane decay shift
``dash_syn_out``              (N_out,)            output synaptic decay shift
``threshold``, ``bias``       (N_hid,)            hidden threshold and constant bias current
``threshold_out``             (N_out,)            output threshold
``bias_out``                  (N_out,)            output bias current
``weight_shift_in/rec/out``   int                 left bit-shift applied to each projection's weights
``aliases``                   (N_hid,)            alias target neuron id, -1 for none
``dt``                        float (s)           the common time step
============================  ==================  =====================================================

Example:
    >>> import numpy as np
    >>> spec = Specification.zeros(n_in=16, n_hidden=4, n_output=2, n_synapses=1, dt=1e-3)
    >>> spec.weights_in.shape, spec.weights_rec.shape, spec.weights_out.shape
    ((16, 4, 1), (4, 4, 1), (4, 2))
    >>> spec.to_dict()["dash_mem"].shape
    (4,)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Specification", "MappingReport", "QuantizationReport", "ARRAY_FIELDS"]

#: The array-valued fields of a specification, in a fixed order.
ARRAY_FIELDS = (
    "weights_in", "weights_rec", "weights_out",
    "dash_mem", "dash_syn", "dash_syn_2", "dash_mem_out", "dash_syn_out",
    "threshold", "threshold_out", "bias", "bias_out", "aliases",
)


@dataclass(frozen=True)
class MappingReport:
    """What the mapper did.

    Attributes:
        neuron_ids: module name -> hardware neuron ids it occupies (hidden ids, or output ids for the
            readout layer, whose module name is listed in ``output_module``).
        output_module: name of the module mapped to the output neurons.
        dash_error: field name (``dash_mem``, ``dash_syn``, ...) -> per-neuron relative error of the
            chip's effective time constant after rounding the dash: ``(tau_hw - tau) / tau`` with
            ``tau_hw = -dt / ln(1 - 2^-dash)``, ``dash = round(log2(tau/dt))`` (the chip decays by
            ``1 - 2^-dash`` per step; ``tau_hw = 0`` for dash 0).
        notes: free-text remarks (dropped biases, gaps the float model will see on chip).
    """

    neuron_ids: dict[str, np.ndarray] = field(default_factory=dict)
    output_module: str = ""
    dash_error: dict[str, np.ndarray] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class QuantizationReport:
    """What a quantizer did.

    Attributes:
        method: ``"global"`` or ``"channel"``.
        scales: layer name (``hidden``, ``output``) -> scale (scalar or per-neuron array) applied to
            float weights, thresholds and biases of that layer.
        clipped: array field name -> number of values clipped to the integer range.
        relative_error: layer/field name -> ``||q / scale - w|| / ||w||`` (0 for an all-zero field).
    """

    method: str
    scales: dict[str, Any] = field(default_factory=dict)
    clipped: dict[str, int] = field(default_factory=dict)
    relative_error: dict[str, float] = field(default_factory=dict)

    @property
    def total_clipped(self) -> int:
        """Number of values clipped over all fields."""
        return int(sum(self.clipped.values()))


@dataclass(frozen=True, eq=False)
class Specification:
    """A Xylo hardware specification (see the module docstring for fields and shapes)."""

    weights_in: np.ndarray
    weights_rec: np.ndarray
    weights_out: np.ndarray
    dash_mem: np.ndarray
    dash_syn: np.ndarray
    dash_syn_2: np.ndarray
    dash_mem_out: np.ndarray
    dash_syn_out: np.ndarray
    threshold: np.ndarray
    threshold_out: np.ndarray
    bias: np.ndarray
    bias_out: np.ndarray
    aliases: np.ndarray
    dt: float = 1e-3
    weight_shift_in: int = 0
    weight_shift_rec: int = 0
    weight_shift_out: int = 0
    limits_name: str = "Xylo Audio 2"
    report: MappingReport = field(default_factory=MappingReport)
    quantization: QuantizationReport | None = None

    # -- shapes ---------------------------------------------------------------------------------
    @property
    def n_input(self) -> int:
        """Number of input channels used."""
        return int(self.weights_in.shape[0])

    @property
    def n_hidden(self) -> int:
        """Number of hidden neurons."""
        return int(self.weights_in.shape[1])

    @property
    def n_output(self) -> int:
        """Number of output neurons."""
        return int(self.weights_out.shape[1])

    @property
    def n_synapses(self) -> int:
        """Synaptic states per hidden neuron (1 or 2)."""
        return int(self.weights_in.shape[2])

    @property
    def is_quantized(self) -> bool:
        """True when every weight, threshold, bias and dash is integer-valued (after a quantizer)."""
        return self.quantization is not None

    # -- conversion -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """All fields as a plain dict (arrays are copies; reports are included as objects)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.copy() if isinstance(v, np.ndarray) else v
        return out

    def replace(self, **changes: Any) -> "Specification":
        """A new specification with some fields replaced (the original is untouched)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def zeros(cls, n_in: int, n_hidden: int, n_output: int, n_synapses: int = 1,
              dt: float = 1e-3, **kw: Any) -> "Specification":
        """An all-zero specification of the given size (aliases -1), useful in tests and examples."""
        z = np.zeros
        return cls(
            weights_in=z((n_in, n_hidden, n_synapses)), weights_rec=z((n_hidden, n_hidden, n_synapses)),
            weights_out=z((n_hidden, n_output)), dash_mem=z(n_hidden), dash_syn=z(n_hidden),
            dash_syn_2=z(n_hidden), dash_mem_out=z(n_output), dash_syn_out=z(n_output),
            threshold=z(n_hidden), threshold_out=z(n_output), bias=z(n_hidden), bias_out=z(n_output),
            aliases=-np.ones(n_hidden, dtype=np.int64), dt=dt, **kw)
