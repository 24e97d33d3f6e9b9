r"""A fourth chip defined entirely outside pondlib: proof that a chip is one Device plus one registry entry.

"Toy" runs chains of ``Linear -> LIF`` layers as integers: per layer one weight scale
``s = 127 / max|W|``, ``W_q = rint(s W)`` (int8), ``theta_q = max(1, rint(s theta))`` (int16), a decay
shift ``d = clip(rint(log2(tau_mem / dt)), 0, 15)`` and, per step ``t``,

.. math::

    v[t] = \mathrm{sat}_{16}\big(v[t-1] - (v[t-1] \gg d) + x[t] W_q\big), \quad
    s[t] = [v[t] \ge \theta_q], \quad v[t] \leftarrow v[t] - s[t]\,\theta_q

(``>>`` an arithmetic shift, i.e. floor division by ``2^d``); the synaptic current is not modelled. Its
one design rule that matters: at most ``max_neurons`` neurons in all. It has a simulator, a report, a
saved format (an ``.npz`` archive) and C numerics built on :mod:`pondlib.cprogram`; no device-aware twin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pondlib.cprogram import Buffer, Constant, build_program
from pondlib.devices.core import check_rules, raise_violations
from pondlib.devices.core.device import (
    DeploySettings,
    Device,
    DeviceReport,
    Mapped,
    Reference,
    Saved,
    SavedRun,
    outputs_table,
)
from pondlib.devices.core.lookup import as_graph
from pondlib.devices.core.report import LimitRow, Resource, Table
from pondlib.errors import ConfigError, Violation
from pondlib.graph import LIFNeurons, LinearWeights, topological_order

FORMAT = "toy.chip.config"


@dataclass(frozen=True)
class ToyLimits:
    name: str
    max_neurons: int  # neurons in all layers
    max_inputs: int  # input channels
    state_bits: int = 16  # signed membrane width


LIMITS = {"small": ToyLimits("Toy small", 16, 16), "large": ToyLimits("Toy large", 512, 64)}


@dataclass(frozen=True)
class ToyLayer:
    weights: np.ndarray  # (N_in, N) int8
    threshold: np.ndarray  # (N,) int16, >= 1
    shift: np.ndarray  # (N,) decay shifts 0..15
    scale: float  # chip units per float unit


@dataclass(frozen=True)
class ToyConfig:
    layers: tuple[ToyLayer, ...]
    limits_name: str

    @property
    def n_input(self) -> int:
        return int(self.layers[0].weights.shape[0])

    @property
    def n_output(self) -> int:
        return int(self.layers[-1].weights.shape[1])


# -- rules as functions (run by pondlib.devices.core.check_rules) ------------------------------------
def supported_modules(ctx: dict):
    """Only Linear -> LIF chains (one synapse per neuron) map to Toy."""
    for m in ctx["other"]:
        yield Violation("supported_modules", m.name, type(m).__name__, "LinearWeights, LIFNeurons", "remove it")


def max_neurons(ctx: dict):
    """The neurons of all layers fit the chip."""
    n = sum(lif.n_neurons for _, lif in ctx["pairs"])
    if n > ctx["limits"].max_neurons:
        yield Violation("max_neurons", "<graph>", n, ctx["limits"].max_neurons, "use fewer neurons or --limits large")


def max_inputs(ctx: dict):
    """The input layer is no wider than the chip's inputs."""
    if ctx["pairs"] and ctx["pairs"][0][0].size_in > ctx["limits"].max_inputs:
        first = ctx["pairs"][0][0]
        yield Violation("max_inputs", first.name, first.size_in, ctx["limits"].max_inputs, "use fewer inputs")


RULES = (supported_modules, max_neurons, max_inputs)


def _topology(net: Any, limits: ToyLimits) -> dict:
    mods = [m for m in topological_order(as_graph(net))]
    lins = [m for m in mods if isinstance(m, LinearWeights)]
    lifs = [m for m in mods if isinstance(m, LIFNeurons)]
    other = [m for m in mods if not isinstance(m, (LinearWeights, LIFNeurons))]
    return {"pairs": list(zip(lins, lifs)), "other": other, "limits": limits}


def quantize(lin: LinearWeights, lif: LIFNeurons) -> ToyLayer:
    w = np.asarray(lin.weights, dtype=np.float64)
    s = 127.0 / max(float(np.abs(w).max()), 1e-12)
    wq = np.clip(np.rint(w * s), -128, 127).astype(np.int64)
    th = np.clip(np.rint(np.asarray(lif.threshold) * s), 1, 32767).astype(np.int64)
    shift = np.clip(np.rint(np.log2(np.asarray(lif.tau_mem) / lif.dt)), 0, 15).astype(np.int64)
    return ToyLayer(wq, th, shift, s)


def simulate(config: ToyConfig, x: Any) -> tuple[np.ndarray, dict]:
    """(B, T, N_in) integer events -> output spikes (B, T, N_out) and the record ``l<i>/v``, ``l<i>/spikes``."""
    x = np.asarray(x, dtype=np.int64)
    B, T, _ = x.shape
    vs = [np.zeros((B, ly.weights.shape[1]), np.int64) for ly in config.layers]
    rec: dict[str, list] = {}
    out = []
    for t in range(T):
        h = x[:, t]
        for i, ly in enumerate(config.layers):
            v = vs[i]
            v = np.clip(v - (v >> ly.shift) + h @ ly.weights, -32768, 32767)
            s = (v >= ly.threshold).astype(np.int64)
            v = v - s * ly.threshold
            vs[i] = v
            rec.setdefault(f"l{i}/v", []).append(v)
            rec.setdefault(f"l{i}/spikes", []).append(s)
            h = s
        out.append(h)
    return np.stack(out, 1), {k: np.stack(v, 1) for k, v in rec.items()}


def emit(config: ToyConfig, *, name: str = "net") -> Any:
    """C of :func:`simulate`: int32 events in, int32 spikes out, one state buffer per layer."""
    constants, buffers, body = [], [], []
    n_ops = len(config.layers)
    src = "x"
    for i, ly in enumerate(config.layers):
        n_in, n = ly.weights.shape
        constants += [
            Constant(f"w{i}", "int32_t", ly.weights.ravel().tolist()),
            Constant(f"th{i}", "int32_t", ly.threshold.tolist()),
            Constant(f"sh{i}", "int32_t", ly.shift.tolist()),
        ]
        buffers.append(Buffer(f"v{i}", "int32_t", n, "state"))
        dst = "y" if i == n_ops - 1 else f"s{i}"
        if i < n_ops - 1:
            buffers.append(Buffer(dst, "int32_t", n, "scratch", (i, i + 1)))
        body.append(
            f"for (int j = 0; j < {n}; ++j) {{\n"
            f"  int32_t acc = 0;\n"
            f"  for (int k = 0; k < {n_in}; ++k) acc += {src}[k] * w{i}[k * {n} + j];\n"
            f"  int32_t v = v{i}[j] - (v{i}[j] >> sh{i}[j]) + acc;\n"
            f"  v = v > 32767 ? 32767 : (v < -32768 ? -32768 : v);\n"
            f"  int32_t s = v >= th{i}[j];\n"
            f"  v{i}[j] = v - s * th{i}[j];\n"
            f"  {dst}[j] = s;\n"
            f"}}"
        )
        src = dst
    return build_program(
        name,
        "toy",
        constants=constants,
        buffers=buffers,
        step_body="\n".join(body),
        n_in=config.n_input,
        in_ctype="int32_t",
        n_out=config.n_output,
        out_ctype="int32_t",
    )


class ToyDevice(Device):
    """An integer LIF chip with a neuron limit (see the module docstring)."""

    name = "toy"
    title = "Toy (tests only): integer LIF chains with a neuron limit"
    default_variant = "small"
    has_c = True
    deploy_settings = DeploySettings(limits="large")

    @property
    def variants(self) -> Mapping[str, Any]:
        return LIMITS

    def limit_rows(self, limits: Any) -> tuple[LimitRow, ...]:
        lim = self.limits(limits)
        return (LimitRow("neurons", str(lim.max_neurons)), LimitRow("inputs", str(lim.max_inputs)))

    def map(self, net: Any, limits: Any = None, *, calibration: Any = None) -> Mapped:
        lim = self.limits(limits)
        ctx = _topology(net, lim)
        raise_violations(check_rules(RULES, ctx), lim.name)
        config = ToyConfig(tuple(quantize(lin, lif) for lin, lif in ctx["pairs"]), lim.name)
        n = sum(ly.weights.shape[1] for ly in config.layers)
        return Mapped(self.name, lim, ctx, config, summary=f"{n} neurons")

    def run(self, mapped: Mapped, x: Any, *, record: bool = True) -> tuple[np.ndarray, dict]:
        out, rec = simulate(mapped.config, x)
        return out, rec if record else {}

    def report(self, mapped: Mapped, record: Mapping[str, Any] | None = None) -> DeviceReport:
        n = sum(ly.weights.shape[1] for ly in mapped.config.layers)
        table = Table(
            "Quantization (one scale per layer)",
            (("layer", "left"), ("scale", "right")),
            tuple((str(i), f"{ly.scale:.1f}") for i, ly in enumerate(mapped.config.layers)),
        )
        return DeviceReport(
            f"Resources on {mapped.limits.name}", (Resource("neurons", n, mapped.limits.max_neurons),), (table,)
        )

    def emit(self, model: Any, *, name: str = "net", **options: Any) -> Any:
        return emit(model, name=name)

    def reference(self, config: Any) -> Reference:
        return Reference(lambda x: simulate(config, x)[0])

    def save(self, mapped: Mapped, path: str | Path) -> str:
        arrays = {}
        for i, ly in enumerate(mapped.config.layers):
            arrays.update({f"w{i}": ly.weights, f"th{i}": ly.threshold, f"sh{i}": ly.shift, f"s{i}": ly.scale})
        with open(path, "wb") as fh:
            np.savez(fh, format=np.array(FORMAT), limits=np.array(mapped.config.limits_name), **arrays)
        return "Toy configuration"

    def recognise(self, path: str | Path) -> bool:
        try:
            with np.load(path) as z:
                return "format" in z.files and str(z["format"]) == FORMAT
        except (OSError, ValueError, EOFError):
            return False

    def load(self, path: str | Path) -> Saved:
        if not self.recognise(path):
            raise ConfigError("Toy configuration", value=str(path), limit=f"an .npz of format {FORMAT}")
        with np.load(path) as z:
            n = sum(1 for f in z.files if f.startswith("w"))
            layers = tuple(ToyLayer(z[f"w{i}"], z[f"th{i}"], z[f"sh{i}"], float(z[f"s{i}"])) for i in range(n))
            return Saved(ToyConfig(layers, str(z["limits"])))

    def simulate_saved(self, saved: Saved, x: np.ndarray, *, quantize: bool = False, where: str = "input") -> SavedRun:
        from pondlib.validate import as_int_array

        x = as_int_array(x, "input event counts", lo=0, hi=1000, ndim=3, where=where)
        out, _ = simulate(saved.config, x)
        counts = out.sum(axis=1)
        preds = [int(np.argmax(c)) if c.any() else None for c in counts]
        rows = (("configuration", f"{len(saved.config.layers)} layers"), ("output spikes", f"{int(out.sum())}"))
        return SavedRun(
            f"Simulation on {saved.config.limits_name}",
            rows,
            outputs_table("Output spike counts", counts, preds, "counts"),
            {"output": out},
        )


class ToyPlugin(ToyDevice):
    """The same chip under another name, as a package would declare it through an entry point."""

    name = "toyplug"
