r"""The ops of Siracusa's graph path and what each computes, one function per op.

A kernel is ``fn(ins, attrs, ctx) -> array | tuple of arrays``: ``ins`` the node's inputs in order (None for an
omitted optional input), ``attrs`` its attributes, ``ctx`` a :class:`KernelContext` (integer or float mode,
opset, the node's label for messages). In integer mode every tensor is an ``int64`` array holding the
exact integer the chip holds (Deeploy's dialect carries them in float32; the graph runner converts), and a
kernel computes with Python/numpy integers only; in float mode tensors are ``float32`` and kernels compute
in float32 as the chip's FPU does. Shape tensors (Reshape's shape, Slice's starts, ...) are ``int64`` in both.

Kernels are registered with :func:`kernel` under ``(domain, op)``; :data:`KERNELS` is the table the graph
runner, the mapper and the C emitter read. The families live in this package's modules:
:mod:`~pondlib.devices.siracusa.kernels.onnx_ops` (standard ONNX ops, integer and float) and
:mod:`~pondlib.devices.siracusa.kernels.deeploy_ops` (Deeploy's integer dialect: RequantShift, iSoftmax,
ITAMax, iRMSNorm, iLayerNorm, iGELU, iHardswish, IntegerDiv, ...).

Example:
    >>> from pondlib.devices.siracusa.kernels import lookup
    >>> import numpy as np
    >>> fn = lookup("Add", "", "example")
    >>> fn([np.array([1, 2]), np.array([3])], {}, KernelContext(True)).tolist()
    [4, 5]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pondlib.errors import GraphError

__all__ = ["KernelContext", "Kernel", "KERNELS", "kernel", "lookup", "DOMAINS", "supported_ops"]

#: Domains whose ops are looked up under the default domain (Deeploy's dialect uses all three for
#: RequantShift; ``ai.onnx`` is ONNX's own alias).
DOMAINS = {"": "", "ai.onnx": "", "PACTOps": "", "ai.onnx.contrib": "", "com.microsoft": "com.microsoft"}


@dataclass(frozen=True)
class KernelContext:
    """How a kernel runs: ``integer`` mode (int64 tensors) or float32, the model's ``opset`` and the node's
    ``label`` (``node 'name' (Op)``) for error messages."""

    integer: bool
    opset: int = 17
    label: str = "node"


Kernel = Callable[[list, Mapping[str, Any], KernelContext], Any]

#: (domain, op) -> kernel; filled by the family modules when this package is imported.
KERNELS: dict[tuple[str, str], Kernel] = {}


def kernel(*ops: str, domain: str = "") -> Callable[[Kernel], Kernel]:
    """Register the decorated function as the kernel of ``ops`` in ``domain``."""

    def register(fn: Kernel) -> Kernel:
        for op in ops:
            KERNELS[(domain, op)] = fn
        return fn

    return register


def lookup(op: str, domain: str, label: str) -> Kernel:
    """The kernel of ``domain:op``; a GraphError names the op, its domain and what is supported otherwise."""
    key = (DOMAINS.get(domain, domain), op)
    if key not in KERNELS:
        raise GraphError(
            "unsupported op",
            value=f"{op!r} in domain {domain or 'default'!r}",
            limit=f"one of the {len(KERNELS)} Siracusa graph ops (pondlib.devices.siracusa.kernels.supported_ops())",
            where=label,
            fix="replace the op with supported ones, or run the float model with pondlib.interop.onnx.run_float",
        )
    return KERNELS[key]


def supported_ops() -> list[str]:
    """Every registered op as ``op`` or ``domain:op``, sorted."""
    return sorted(op if not dom else f"{dom}:{op}" for dom, op in KERNELS)


# The families register themselves on import (kept last: they import the names above).
from pondlib.devices.siracusa.kernels import deeploy_ops as _deeploy_ops  # noqa: E402,F401
from pondlib.devices.siracusa.kernels import onnx_ops as _onnx_ops  # noqa: E402,F401
from pondlib.devices.siracusa.kernels import qdq_ops as _qdq_ops  # noqa: E402,F401
