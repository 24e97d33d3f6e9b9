r"""The deployment pipeline as one call: :func:`deploy` takes a trained float network to a device and back.

The stages, in order (each device supplies its part through :class:`~pondlib.devices.core.device.Device`):

1. **check** other variants first (``check``): their design-rule violations are reported, nothing else;
2. **map** the network as trained onto the variant: every design rule checked, quantized (on the
   training split where the device calibrates), configured;
3. **simulate** it bit-precisely on the test split (followed by ``latency`` silent steps where the
   device's output lags its input) and **report** resources, quantization error and accuracy;
4. **device-aware twin** (``aware=True``): the device's arithmetic in the forward pass, fine-tuned from
   the trained network by :func:`pondlib.training.fit` (Adam with cosine decay, gradient clipping),
   **exported** to the device's mapper and simulated again; the twin and the device are compared spike
   for spike;
5. **gaps**: the known differences between the float model and the device, and what each did here.

Accuracy is the fraction of test samples whose most-spiking output neuron is the label; ``speed`` is
simulated sample-steps per second. Nothing is printed: a caller that wants progress passes an
:class:`Observer` (``pond demo`` passes one that draws spinners and progress bars).

Example:
    >>> import jax
    >>> from pondlib import nn
    >>> from pondlib.datasets import load_digits_events
    >>> data = load_digits_events(T=12)
    >>> k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    >>> net = nn.Sequential(nn.Linear(16, 24, key=k1), nn.LIF(24, tau_mem=0.0155, tau_syn=0.0015, max_spikes_per_dt=31),
    ...                     nn.Linear(24, 10, key=k2), nn.LIF(10, tau_mem=0.0155, tau_syn=0.0015, max_spikes_per_dt=1))
    >>> dep = deploy(net, device="xylo", data=data, aware=False)
    >>> dep.name, dep.mapped.spec.n_hidden, 0.0 <= dep.as_trained_acc <= 1.0
    ('Xylo Audio 3', 24, True)
    >>> [c.variant for c in dep.checks], dep.checks[0].error.rules
    (['Xylo Audio 2'], ['max_output_neurons'])
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pondlib.devices import registry
from pondlib.devices.core.device import Device, DeviceReport, GapContext, Mapped, option_values
from pondlib.devices.core.inputs import append_silence
from pondlib.devices.core.report import Table
from pondlib.errors import ConstraintError, GraphError, PondError
from pondlib.validate import check_bool, check_float, check_int

__all__ = ["deploy", "Deployment", "Check", "Observer", "fine_tune_optimizer", "NO_LOSS_POINTS"]

#: Within this many accuracy points of the float model as trained counts as no loss (one test sample of
#: the bundled digits' 450 is 0.22 points).
NO_LOSS_POINTS = 0.5


class Observer:
    """What :func:`deploy` reports while it runs; the default shows nothing.

    Override :meth:`stage` (a context manager around each stage; put a short note in the dict it yields),
    :meth:`simulate` (how a simulator is run over the samples, e.g. with a progress bar) and :meth:`say`.
    """

    @contextmanager
    def stage(self, text: str) -> Iterator[dict]:
        """Around one stage described by ``text``."""
        yield {}

    def simulate(self, label: str, run: Callable[[Any], tuple[Any, dict]], x: Any, chunk: int) -> tuple:
        """``run(x[i:i + chunk]) -> (output, record)`` over ``x``: the concatenated output and record and the
        seconds spent inside ``run``."""
        return run_chunks(run, x, chunk)

    def say(self, text: str) -> None:
        """A line about what comes next."""

    def checked(self, check: Check) -> None:
        """A variant was checked (:class:`Check`: its violations, or None when it fits)."""


def run_chunks(run: Callable[[Any], tuple[Any, dict]], x: Any, chunk: int, tick: Callable[[int], None] = None) -> tuple:
    """``run`` over ``x`` in chunks of ``chunk`` samples: ``(output, record, seconds in run)``; ``tick(n)``
    after each chunk of ``n`` samples."""
    outputs, records, seconds = [], [], 0.0
    for start in range(0, len(x), chunk):
        xb = x[start : start + chunk]
        t0 = time.perf_counter()
        out, rec = run(xb)
        seconds += time.perf_counter() - t0
        outputs.append(np.asarray(out))
        records.append(rec)
        if tick is not None:
            tick(len(xb))
    record = {k: np.concatenate([np.asarray(r[k]) for r in records]) for k in records[0]} if records[0] else {}
    return np.concatenate(outputs), record, seconds


@dataclass(frozen=True)
class Check:
    """A variant checked before deploying: ``variant`` (its name) and the violations (None: it fits)."""

    variant: str
    error: ConstraintError | None


@dataclass(frozen=True)
class Deployment:
    """What :func:`deploy` did on one device (accuracies are fractions of the test split).

    Attributes:
        device: the registry name; ``name``: the variant deployed to (``"Xylo Audio 3"``).
        checks: the variants checked first.
        mapped: the network as trained, mapped and configured; ``report``: its resources and quantization.
        output, record: the device's run of the network as trained (output (B, T', N_out)).
        float_acc, as_trained_acc: the float network and the device running it.
        gaps: the float-vs-device table (None where the device has none).
        latency: silent steps appended to every sample; ``speed``: simulated sample-steps per second.
        twin: the trained device-aware twin (None without ``aware``); ``aware``: its mapping;
        aware_output: the device's output for the twin; aware_float_acc, device_acc: the twin in float
        and on the device; agree: same prediction, twin vs device; spikes_equal: per spiking layer, the
        fraction of equal spike values, twin vs device; history: the fine-tuning's loss and accuracy.
    """

    device: str
    name: str
    checks: tuple[Check, ...]
    mapped: Mapped
    report: DeviceReport
    output: np.ndarray
    record: dict
    float_acc: float
    as_trained_acc: float
    gaps: Table | None = None
    latency: int = 0
    speed: float = 0.0
    twin: Any = None
    aware: Mapped | None = None
    aware_output: np.ndarray | None = None
    aware_float_acc: float | None = None
    device_acc: float | None = None
    agree: float | None = None
    spikes_equal: Mapping[str, float] = field(default_factory=dict)
    history: Mapping[str, Any] | None = None
    epochs: int = 0

    @property
    def deployed(self) -> Mapped:
        """The mapping that is deployed: the twin's when there is one, else the network as trained."""
        return self.aware if self.aware is not None else self.mapped

    @property
    def final_acc(self) -> float:
        """The deployed network's accuracy on the device."""
        return self.device_acc if self.device_acc is not None else self.as_trained_acc

    @property
    def lost(self) -> bool:
        """True when the deployed network loses more than :data:`NO_LOSS_POINTS` against the float model."""
        return (self.float_acc - self.final_acc) * 100 > NO_LOSS_POINTS

    def table(self) -> Table:
        """The result table: accuracies, agreement and simulator speed."""
        rows = [
            ("float model accuracy (as trained)", f"{self.float_acc:.1%}"),
            ("device accuracy, network as trained", f"{self.as_trained_acc:.1%}"),
        ]
        if self.aware is not None:
            equal = ", ".join(f"{k} {v:.1%}" for k, v in self.spikes_equal.items())
            rows += [
                (
                    f"device-aware float model accuracy ({self.epochs} epochs from the trained network)",
                    f"{self.aware_float_acc:.1%}",
                ),
                ("device accuracy, device-aware network (deployed)", f"{self.device_acc:.1%}"),
                (
                    "device (device-aware) - float (as trained)",
                    f"{(self.final_acc - self.float_acc) * 100:+.1f} points",
                ),
                ("same prediction, device-aware float vs device", f"{self.agree:.1%} of samples"),
                ("spikes equal, device-aware float vs device", equal),
            ]
        n, steps = self.output.shape[:2]
        late = f", +{self.latency} silent step(s) per sample (latency)" if self.latency else ""
        rows.append(("simulator speed", f"{self.speed:,.0f} sample-steps/s ({n} samples x {steps} steps{late})"))
        return Table(
            f"Result on {self.name} (test split, bit-exact simulation)",
            (("", "left"), ("value", "right")),
            tuple(rows),
        )


def fine_tune_optimizer(lr: float, epochs: int, steps_per_epoch: int) -> Any:
    """Adam with a cosine-decayed learning rate (to 5 % over ``epochs * steps_per_epoch`` steps) after
    clipping the gradient's global norm at 1: the optimizer of :func:`deploy`'s fine-tuning."""
    import optax

    steps = max(1, epochs * steps_per_epoch)
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(optax.cosine_decay_schedule(lr, steps, alpha=0.05)))


def _check_data(data: Any) -> None:
    missing = [a for a in ("x_train", "y_train", "x_test", "y_test") if not hasattr(data, a)]
    if missing:
        raise PondError(
            "data",
            value=f"a {type(data).__name__} without {', '.join(missing)}",
            limit="a data set with x_train, y_train, x_test, y_test (an EventDataset)",
            where="deploy",
            fix="pass pondlib.datasets.load_digits_events() or an EventDataset of your own",
        )


def _check_net(net: Any) -> None:
    if not callable(net) or not hasattr(net, "as_graph"):
        raise GraphError(
            "network",
            value=f"a {type(net).__name__}",
            limit="a pondlib.nn network (callable, with as_graph())",
            where="deploy",
            fix="pass the trained network, e.g. nn.Sequential(Linear, LIF, ...)",
        )


def _float_run(net: Any, x: np.ndarray) -> tuple[np.ndarray, dict]:
    out, _, rec = net(np.asarray(x, dtype=np.float32), record=True)
    return np.asarray(out), {k: np.asarray(v) for k, v in rec.items()}


def _variants(d: Device, check: Any) -> list[Any]:
    """The variants to check first, resolved (a ConfigError names an unknown one)."""
    if isinstance(check, (str, bytes)) or not isinstance(check, Sequence):
        raise PondError(
            "check",
            value=f"a {type(check).__name__}",
            limit="a sequence of variant names",
            where="deploy",
            fix="pass e.g. check=() or a tuple of the device's variant names",
        )
    return [d.limits(v) for v in check]


def _check(d: Device, net: Any, variants: Sequence[Any], calib: Any, opts: Mapping[str, Any]) -> tuple[Check, ...]:
    out = []
    for lim in variants:
        try:
            d.map(net, lim, calibration=calib, **opts)
            out.append(Check(lim.name, None))
        except ConstraintError as err:
            out.append(Check(lim.name, err))
    return tuple(out)


def _agreement(output: Any, reference: Any) -> float:
    """Fraction of samples whose output spike counts (B, T, N) pick the same class in both runs."""

    def pred(out: Any) -> Any:
        return np.argmax(np.asarray(out).sum(axis=1), axis=-1)

    return float(np.mean(pred(output) == pred(reference)))


def deploy(
    net: Any,
    *,
    device: str | Device,
    data: Any,
    aware: bool = True,
    limits: Any = None,
    options: Mapping[str, Any] | None = None,
    check: Sequence[str] | None = None,
    epochs: int = 30,
    lr: float | None = None,
    loss: Any = "cross_entropy_sum",
    batch_size: int = 64,
    key: Any = None,
    observer: Observer | None = None,
    fit_options: Mapping[str, Any] | None = None,
    chunk: int = 150,
) -> Deployment:
    """Deploy the trained float network ``net`` to ``device`` and compare (module docstring).

    Args:
        net: a trained ``pondlib.nn`` network (``Sequential(Linear, LIF, ...)``; not modified).
        device: a registered device name (``pondlib.devices.registry.names()``) or a Device.
        data: an :class:`~pondlib.datasets.EventDataset` (train split: calibration and fine-tuning; test
            split: every accuracy).
        aware: fine-tune and deploy the device-aware twin too.
        limits: the variant (default: the device's ``deploy_settings.limits``, else its default variant).
        options: the device's mapping options (default: its ``deploy_settings.options``; given ones win).
        check: variants to check first (default: ``deploy_settings.check``).
        epochs, lr, loss, batch_size, key: the fine-tuning (``lr`` default: the device's; it is multiplied
            by ``Device.lr_scale(twin)``); ``key`` a ``jax.random`` key (default ``PRNGKey(0)``).
        observer: progress reporting (default: none). fit_options: more keywords of ``fit`` (``progress``,
            ``console``, ``devices``). chunk: samples per simulator call.

    Returns:
        A :class:`Deployment`.

    Raises:
        PondError: an unknown device, bad data or options, a non-positive ``epochs`` / ``batch_size`` /
            ``lr``; ConstraintError: the network does not fit the variant (every violation); whatever the
            device's mapper, simulator or ``fit`` raise.
    """
    d = registry.get(device)
    _check_data(data)
    _check_net(net)
    aware = check_bool(aware, "aware", where="deploy")
    if aware and not d.has_twin:
        raise PondError(
            "aware",
            value=True,
            limit=f"False: {d.name} has no device-aware twin",
            where="deploy",
            fix="pass aware=False",
        )
    epochs = check_int(epochs, "epochs", lo=1, hi=1_000_000, where="deploy")
    batch_size = check_int(batch_size, "batch_size", lo=1, hi=1 << 20, where="deploy")
    chunk = check_int(chunk, "chunk", lo=1, hi=1 << 20, where="deploy")
    settings = d.deploy_settings
    rate = check_float(settings.lr if lr is None else lr, "lr", lo=0.0, lo_open=True, where="deploy")
    if options is not None and not isinstance(options, Mapping):
        raise PondError("options", value=f"a {type(options).__name__}", limit="a mapping", where="deploy")
    opts = option_values(d, {**settings.options, **(options or {})})
    obs = observer if observer is not None else Observer()
    lim = d.limits(settings.limits if limits is None else limits)
    variants = _variants(d, settings.check if check is None else check)
    x_test, y_test = np.asarray(data.x_test), np.asarray(data.y_test)
    calib = np.asarray(data.x_train, dtype=np.float64) if d.needs_calibration else None

    from pondlib.training import accuracy, fit

    float_out, float_record = _float_run(net, x_test)
    checks = _check(d, net, variants, calib, opts)
    for c in checks:
        obs.checked(c)
    with obs.stage(
        d.mapping_title(lim, opts) + (", calibrating on the training split" if calib is not None else "")
    ) as st:
        mapped = d.map(net, lim, calibration=calib, **opts)
        st["note"] = mapped.summary + ", configuration valid"
    x_dev = append_silence(x_test, mapped.latency) if mapped.latency else x_test
    float_acc = accuracy(float_out, y_test)
    run = d.runner(mapped)
    with obs.stage("Compiling the bit-exact simulator"):
        run(x_dev[:2])
    out, rec, seconds = obs.simulate(f"simulating on {lim.name} (as trained)", run, x_dev, chunk)
    as_trained = accuracy(out, y_test)
    result: dict[str, Any] = {"speed": x_dev.shape[0] * x_dev.shape[1] / max(seconds, 1e-9)}
    if aware:
        result.update(
            _fine_tune(d, net, mapped, data, calib, x_dev, y_test, obs, chunk, fit, accuracy,
                       dict(epochs=epochs, lr=rate, loss=loss, batch_size=batch_size, key=key, fit_options=fit_options))
        )  # fmt: skip
    context = GapContext(net, float_record, x_dev, y_test, rec, float_acc, as_trained, result.get("device_acc"))
    return Deployment(
        d.name,
        lim.name,
        checks,
        mapped,
        d.report(mapped, rec),
        out,
        rec,
        float_acc,
        as_trained,
        gaps=d.gaps(mapped, context),
        latency=mapped.latency,
        epochs=epochs if aware else 0,
        **result,
    )


def _fine_tune(d, net, mapped, data, calib, x_dev, y, obs, chunk, fit, accuracy, train) -> dict[str, Any]:  # noqa: ANN001
    """Stage 4: the twin, fine-tuned, exported, simulated, compared with the device spike for spike."""
    import jax

    lim, latency, epochs = mapped.limits, mapped.latency, train["epochs"]
    late = f", samples + {latency} silent ticks" if latency else ""
    obs.say(
        f"Device-aware training for {d.called(lim)} ({d.deploy_settings.describe}; {epochs} epochs from the "
        f"trained network{late})"
    )
    twin = d.twin(net, mapped, calib)
    steps = len(data.y_train) // train["batch_size"]
    optimizer = fine_tune_optimizer(train["lr"] * d.lr_scale(twin), epochs, steps)
    twin, history = fit(
        twin,
        data.with_silence(latency) if latency else data,
        train["loss"],
        optimizer=optimizer,
        epochs=epochs,
        batch_size=train["batch_size"],
        key=jax.random.PRNGKey(0) if train["key"] is None else train["key"],
        frozen=(),
        **{"progress": False, **(train["fit_options"] or {})},
    )
    with obs.stage(f"Exporting the device-aware network, mapping to {d.called(lim)}, configuring"):
        exported = d.export(twin, lim)

    def float_model(xb: Any) -> tuple[Any, dict]:
        o, r = _float_run(twin, xb)
        return o, {k: v for k, v in r.items() if k.endswith("spikes")}

    aware_out, aware_rec, _ = obs.simulate("device-aware float model", float_model, x_dev, chunk)
    run = d.runner(exported)
    dev_out, dev_rec, seconds = obs.simulate(f"simulating on {lim.name} (device-aware)", run, x_dev, chunk)
    equal = {
        name: float(np.mean(np.asarray(aware_rec[tk]) == np.asarray(dev_out if not dk else dev_rec[dk])))
        for name, tk, dk in d.spike_pairs(twin, exported)
    }
    return {
        "twin": twin,
        "aware": exported,
        "aware_output": dev_out,
        "aware_float_acc": accuracy(aware_out, y),
        "device_acc": accuracy(dev_out, y),
        "agree": _agreement(dev_out, aware_out),
        "spikes_equal": equal,
        "history": history,
        "speed": x_dev.shape[0] * x_dev.shape[1] / max(seconds, 1e-9),
    }
