r"""Sweeps of seeds and hyperparameters, and bulk simulation, one task per worker (Ray, optional).

A **trial** is one setting of the hyperparameters :data:`PARAMS` (seed, learning rate, epochs, hidden
neurons, batch size, epochs and learning rate of device-aware fine-tuning). It builds the network with
the seed, trains it in float (:func:`pondlib.training.fit`), and deploys it on each chosen device
through the registry (:func:`pondlib.pipeline.deploy`: map, simulate bit-precisely, fine-tune the
device-aware twin when ``fine_tune_epochs > 0``). Each (trial, device) gives one row of the table, with
the **gap** in accuracy points

.. math:: g = 100\,(a_\mathrm{device} - a_\mathrm{float}),

:math:`a` the test-split accuracy of the deployed network on the device and of the float network as
trained. A trial whose network emits no output spike on the test split is **silent** and stops early: checked
as built (before training, which could not move it: no spike, no surrogate gradient through the
output) and after float training (before the device stage); its rows say so. A trial that raises is
an ``"error"`` row with the exception's message; one that runs longer than ``trial_timeout`` seconds
is cancelled (``"timeout"``). Nothing is dropped: every trial has rows.

Workers. ``workers=None`` runs the trials one after the other in this process. ``workers=k`` runs at most
:math:`k` trials at once as Ray tasks (one CPU each): on a local Ray instance started here with
:math:`k` CPUs (and shut down after), on the running one when ``ray.init`` was called, or on a cluster
at ``address`` (``"host:6379"`` or ``"ray://host:10001"``; checked for reachability first, so a wrong
address is a :class:`~pondlib.errors.DistributedError` within seconds). Results are the same in every
mode: a trial is a pure function of its settings and the data.

Partial results. With ``out=DIR``, each finished trial's rows are appended to ``DIR/trials.jsonl`` at
once (one JSON object per line, flushed), and ``DIR/sweep.csv`` is written at the end; a sweep that is
stopped keeps every finished trial on disk, and :func:`load_rows` reads them back.

Bulk simulation. :func:`bulk_run` runs a chip simulator over a large input split into row blocks across
workers; each block runs from a reset state exactly as in one call, so the concatenated outputs equal
``device.run(mapped, x)`` element for element.

Example:
    >>> grid(seed=[0, 1], lr=[1e-3])
    [{'seed': 0, 'lr': 0.001}, {'seed': 1, 'lr': 0.001}]
    >>> [t["seed"] for t in random_search(3, seed=range(100), key=0)]
    [85, 63, 51]
    >>> grid(sead=[0])
    Traceback (most recent call last):
    ...
    pondlib.errors.PondError: grid: parameter name: got sead, expected one of [...]. Fix: ...
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import socket
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pondlib.devices import registry
from pondlib.devices.core.report import Table
from pondlib.errors import DistributedError, PondError
from pondlib.validate import check_bool, check_float, check_int, check_type, check_writable_file

__all__ = [
    "PARAMS",
    "COLUMNS",
    "LogUniform",
    "grid",
    "random_search",
    "default_network",
    "run_trial",
    "run_sweep",
    "SweepResult",
    "load_rows",
    "plot_gaps",
    "bulk_run",
]

#: The hyperparameters of a trial and their defaults: ``seed`` (network initialisation and shuffling),
#: ``lr`` (Adam's learning rate), ``epochs`` (float training), ``hidden`` (neurons), ``batch_size``,
#: ``fine_tune_epochs`` (device-aware fine-tuning per device; 0: deploy the network as trained) and
#: ``fine_tune_lr`` (None: the device's own).
PARAMS: dict[str, Any] = {
    "seed": 0,
    "lr": 1e-3,
    "epochs": 10,
    "hidden": 64,
    "batch_size": 64,
    "fine_tune_epochs": 0,
    "fine_tune_lr": None,
}
_INT_PARAMS = {"seed": (0, 2**31 - 1), "epochs": (1, 10**6), "hidden": (1, 1 << 16), "batch_size": (1, 1 << 20)}
_INT_PARAMS["fine_tune_epochs"] = (0, 10**6)

#: The columns of a sweep's table (one row per trial and device).
COLUMNS = (
    "trial",
    *PARAMS,
    "device",
    "variant",
    "status",
    "float_acc",
    "as_trained_acc",
    "device_acc",
    "gap_points",
    "output_spikes",
    "seconds",
    "message",
)


@dataclass(frozen=True)
class LogUniform:
    """A random-search axis: values :math:`\\exp(u)`, :math:`u` uniform in :math:`[\\ln lo, \\ln hi]` (lo, hi > 0)."""

    lo: float
    hi: float

    def __post_init__(self) -> None:
        lo = check_float(self.lo, "lo", lo=0.0, lo_open=True, where="LogUniform")
        check_float(self.hi, "hi", lo=lo, where="LogUniform", fix="pass hi >= lo")


def _check_value(name: str, value: Any, where: str) -> Any:
    """One hyperparameter's value, checked (ints as Python ints, learning rates finite and > 0)."""
    if name in _INT_PARAMS:
        lo, hi = _INT_PARAMS[name]
        return check_int(value, name, lo=lo, hi=hi, where=where)
    if name == "fine_tune_lr" and value is None:
        return None
    return check_float(value, name, lo=0.0, lo_open=True, hi=10.0, where=where)


def _check_name(name: Any, where: str) -> str:
    if name not in PARAMS:
        raise PondError(
            "parameter name", value=name, limit=f"one of {list(PARAMS)}", where=where, fix="use the names of PARAMS"
        )
    return name


def _axis(name: str, values: Any, where: str) -> list[Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, range)):
        raise PondError(
            f"{name} values",
            value=f"a {type(values).__name__}",
            limit="a non-empty sequence",
            where=where,
            fix=f"pass e.g. {name}=[...]",
        )
    if len(values) == 0:
        raise PondError(f"{name} values", value="an empty sequence", limit="at least one value", where=where)
    return [_check_value(name, v, where) for v in values]


def grid(**axes: Sequence[Any]) -> list[dict[str, Any]]:
    """Every combination of the given values, in order (the last axis varies fastest).

    Args:
        axes: parameter name (one of :data:`PARAMS`) -> a non-empty sequence of values.

    Returns:
        A list of trial settings (dicts); parameters not given take their defaults in :func:`run_sweep`.

    Raises:
        PondError: an unknown name; values that are not a non-empty sequence; a value out of range
            (``seed`` not an integer in 0..2^31-1, ``lr`` not a finite number in (0, 10], ...).
    """
    checked = {_check_name(k, "grid"): _axis(k, v, "grid") for k, v in axes.items()}
    names = list(checked)
    return [dict(zip(names, combo)) for combo in itertools.product(*checked.values())]


def random_search(n: int, *, key: int = 0, **axes: Any) -> list[dict[str, Any]]:
    """``n`` settings drawn independently: from a sequence uniformly, from a :class:`LogUniform` log-uniformly.

    Args:
        n: how many trials, 1..100000.
        key: the seed of the draw (a numpy ``default_rng`` seed, 0..2^32-1).
        axes: parameter name -> a non-empty sequence or a ``LogUniform`` (for ``lr`` / ``fine_tune_lr``).

    Raises:
        PondError: as :func:`grid`; ``n`` or ``key`` not a whole number in range; a ``LogUniform`` for an
            integer parameter.
    """
    n = check_int(n, "n", lo=1, hi=100_000, where="random_search")
    key = check_int(key, "key", lo=0, hi=2**32 - 1, where="random_search")
    checked: dict[str, Any] = {}
    for name, values in axes.items():
        _check_name(name, "random_search")
        if isinstance(values, LogUniform):
            if name in _INT_PARAMS:
                raise PondError(
                    f"{name} values",
                    value="a LogUniform",
                    limit="a sequence (integer parameter)",
                    where="random_search",
                )
            checked[name] = values
        else:
            checked[name] = _axis(name, values, "random_search")
    rng = np.random.default_rng(key)
    trials = []
    for _ in range(n):
        t = {}
        for name, values in checked.items():
            if isinstance(values, LogUniform):
                t[name] = float(np.exp(rng.uniform(math.log(values.lo), math.log(values.hi))))
            else:
                t[name] = values[int(rng.integers(len(values)))]
        trials.append(t)
    return trials


def default_network(hidden: int, n_in: int, n_out: int, key: Any) -> Any:
    r"""``Linear(n_in, H) -> LIF(H) -> Linear(H, n_out) -> LIF(n_out)`` with the demo's neurons: time
    constants whose float decays equal a bit-shift decay (:math:`e^{-dt/\tau} = 1 - 2^{-d}`, membrane
    :math:`d = 4`, synapse :math:`d = 1`, dt = 1 ms) and spike caps of 31 (hidden) and 1 (output) per step.

    Example:
        >>> import jax
        >>> default_network(8, 16, 10, jax.random.PRNGKey(0)).size_out
        10
    """
    import jax

    from pondlib import nn

    dt = 1e-3
    tau_mem, tau_syn = -dt / math.log(1 - 2.0**-4), -dt / math.log(1 - 2.0**-1)
    k1, k2 = jax.random.split(key)
    return nn.Sequential(
        nn.Linear(n_in, hidden, key=k1),
        nn.LIF(hidden, tau_mem=tau_mem, tau_syn=tau_syn, dt=dt, max_spikes_per_dt=31),
        nn.Linear(hidden, n_out, key=k2),
        nn.LIF(n_out, tau_mem=tau_mem, tau_syn=tau_syn, dt=dt, max_spikes_per_dt=1),
    )


def _settings(trial: Any, index: int, where: str) -> dict[str, Any]:
    check_type(trial, f"trials[{index}]", Mapping, where=where, fix="pass dicts such as grid(...) returns")
    out = dict(PARAMS)
    for name, value in trial.items():
        out[_check_name(name, f"{where}, trials[{index}]")] = _check_value(name, value, f"{where}, trials[{index}]")
    return out


def _row(index: int, params: Mapping[str, Any], device: str, **cells: Any) -> dict[str, Any]:
    row = {c: None for c in COLUMNS}
    row.update(trial=index, **params, device=device, **cells)
    return row


def run_trial(
    index: int, params: Mapping[str, Any], data: Any, devices: Sequence[str], build: Callable | None = None
) -> list[dict[str, Any]]:
    """One trial, in this process: train in float, stop if silent, deploy on each device (module docstring).

    Args:
        index: the trial's number (a table column). params: every key of :data:`PARAMS`, checked.
        data: an :class:`~pondlib.datasets.EventDataset`. devices: registry names.
        build: ``build(hidden, n_in, n_out, key) -> net`` (default :func:`default_network`).

    Returns:
        One row (a dict of :data:`COLUMNS`) per device.
    """
    import jax
    import optax

    from pondlib.pipeline import deploy
    from pondlib.training import fit, readout_counts

    t0 = time.perf_counter()
    p = _settings(params, index, "run_trial")
    key = jax.random.PRNGKey(p["seed"])
    net = (build or default_network)(p["hidden"], int(data.x_train.shape[-1]), int(data.n_classes), key)
    x_test, y_test = np.asarray(data.x_test, np.float32), np.asarray(data.y_test)
    if not np.asarray(net(x_test)[0]).any():  # no output spike before training: no gradient reaches the input
        msg = "silent: the network as built emits no output spike on the test split; stopped before training"
        return [_row(index, p, d, status="silent", output_spikes=0, message=msg) for d in devices]
    net, _ = fit(
        net,
        data,
        optimizer=optax.adam(p["lr"]),
        epochs=p["epochs"],
        batch_size=min(p["batch_size"], len(data.y_train)),
        key=key,
        frozen=("tau_mem", "tau_syn"),
        progress=False,
        devices=1,
    )
    out = np.asarray(net(x_test)[0])
    float_acc = float(np.mean(np.argmax(readout_counts(out), -1) == y_test))
    spikes = int(out.sum())
    train_seconds = time.perf_counter() - t0
    if spikes == 0:
        msg = "silent: the float network emits no output spike on the test split; stopped before the devices"
        return [
            _row(index, p, d, status="silent", float_acc=float_acc, output_spikes=0, seconds=train_seconds, message=msg)
            for d in devices
        ]
    rows = []
    for name in devices:
        t1 = time.perf_counter()
        d = registry.get(name)
        aware = p["fine_tune_epochs"] > 0 and d.has_twin
        dep = deploy(
            net,
            device=name,
            data=data,
            aware=aware,
            epochs=max(1, p["fine_tune_epochs"]),
            lr=p["fine_tune_lr"],
            batch_size=min(p["batch_size"], len(data.y_train)),
            key=key,
            fit_options={"devices": 1},
        )
        dev_out = dep.aware_output if aware else dep.output
        dev_spikes = int(np.asarray(dev_out).sum())
        rows.append(
            _row(
                index,
                p,
                name,
                variant=dep.name,
                status="ok" if dev_spikes else "silent",
                float_acc=float_acc,
                as_trained_acc=dep.as_trained_acc,
                device_acc=dep.final_acc,
                gap_points=100.0 * (dep.final_acc - float_acc),
                output_spikes=dev_spikes,
                seconds=train_seconds + time.perf_counter() - t1,
                message="" if dev_spikes else "silent on the device: no output spike on the test split",
            )
        )
    return rows


def _error_rows(index: int, params: Mapping[str, Any], devices: Sequence[str], status: str, msg: str) -> list[dict]:
    return [_row(index, params, d, status=status, message=msg) for d in devices]


def _describe(err: BaseException) -> str:
    """``Type: message`` of an exception (a Ray task error: of its cause)."""
    cause = getattr(err, "cause", None)
    err = cause if isinstance(cause, BaseException) else err
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:500] if text else ''}"


# -- Ray --------------------------------------------------------------------------------------------------------
def _import_ray(where: str) -> Any:
    try:
        import ray
    except ImportError:
        raise PondError(
            "ray", value="not installed", where=where, fix="pip install 'pondlib[ray]', or pass workers=None"
        ) from None
    return ray


def _check_reachable(address: Any, where: str, timeout: float = 5.0) -> str:
    """``address`` (``host:port`` or ``ray://host:port``) when a TCP connection to it opens within ``timeout`` s."""
    if address == "auto":
        return address
    check_type(address, "address", str, where=where, error=DistributedError)
    hostport = address.removeprefix("ray://")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise DistributedError(
            "address",
            value=address,
            limit="'host:port', 'ray://host:port' or 'auto'",
            where=where,
            fix="pass the Ray head's address, e.g. 'head:6379' (ray start --head prints it)",
        )
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as err:
        raise DistributedError(
            "Ray cluster not reachable",
            value=f"{address} ({err.strerror or type(err).__name__})",
            limit=f"a Ray head answering within {timeout:g} s",
            where=where,
            fix="start it with `ray start --head` on the head node, check the host, port and firewall, or pass "
            "address=None for a local instance",
        ) from None
    return address


@contextlib.contextmanager
def _ray_session(workers: int, address: Any, where: str) -> Iterator[Any]:
    """Ray, initialized: the running instance, a cluster at ``address`` (checked for reachability first), or a
    local one of ``workers`` CPUs (shut down on leaving)."""
    ray = _import_ray(where)
    if address is not None:
        _check_reachable(address, where)
    if ray.is_initialized():
        yield ray
        return
    try:
        with warnings.catch_warnings():  # Ray starts its processes by fork + exec: JAX's fork warning does not apply
            warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
            if address is None:
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
            else:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, TimeoutError) as err:
        raise DistributedError(
            "Ray", value=_describe(err), where=where, fix="check the address, or pass address=None"
        ) from None
    try:
        yield ray
    finally:
        ray.shutdown()


def _submit_all(ray: Any, fn: Callable, jobs: list[tuple], workers: int, timeout: float) -> Iterator[tuple]:
    """``(job, value or exception)`` for each job as it finishes, at most ``workers`` in flight; a job running
    past ``timeout`` seconds is cancelled and yields a :class:`TimeoutError`."""
    remote = ray.remote(num_cpus=1, max_retries=0)(fn)
    pending = list(jobs)
    running: dict[Any, tuple[tuple, float]] = {}
    while pending or running:
        while pending and len(running) < workers:
            job = pending.pop(0)
            running[remote.remote(*job[1:])] = (job, time.monotonic())
        done, _ = ray.wait(list(running), num_returns=1, timeout=0.5)
        for ref in done:
            job, _ = running.pop(ref)
            try:
                yield job, ray.get(ref)
            except Exception as err:  # a trial that raised: reported in its rows
                yield job, err
        now = time.monotonic()
        for ref, (job, started) in list(running.items()):
            if now - started > timeout:
                ray.cancel(ref, force=True)
                running.pop(ref)
                yield job, TimeoutError(f"still running after {timeout:g} s; cancelled")


# -- the sweep --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepResult:
    """The rows of a sweep, one per trial and device (dicts of :data:`COLUMNS`), in trial order.

    Attributes:
        rows: the table. out: the folder holding ``trials.jsonl`` and ``sweep.csv`` (None without ``out``).
        seconds: wall-clock time of the whole sweep. workers: the workers used (None: this process).
    """

    rows: tuple[dict[str, Any], ...]
    out: Path | None
    seconds: float
    workers: int | None

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The rows of trials that raised or timed out."""
        return [r for r in self.rows if r["status"] in ("error", "timeout")]

    def gaps(self, device: str) -> np.ndarray:
        """The gaps (accuracy points) of the trials that ran on ``device``, in trial order."""
        return np.asarray([r["gap_points"] for r in self.rows if r["device"] == device and r["status"] == "ok"])

    def table(self) -> Table:
        """The rows as a :class:`~pondlib.devices.core.report.Table` (what the command line renders)."""
        cols = ("trial", "seed", "lr", "epochs", "hidden", "fine_tune_epochs", "device", "status")
        cols += ("float_acc", "device_acc", "gap_points")

        def cell(v: Any) -> str:
            return "-" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)

        rows = tuple(tuple(cell(r[c]) for c in cols) for r in self.rows)
        n_bad = len(self.errors)
        caption = f"{len({r['trial'] for r in self.rows})} trials in {self.seconds:.1f} s"
        caption += f", {n_bad} row(s) failed (see their message)" if n_bad else ""
        return Table("Sweep: device minus float accuracy (points)", tuple((c, "right") for c in cols), rows, caption)


def _append(path: Path | None, rows: list[dict[str, Any]]) -> None:
    if path is None:
        return
    with open(path, "a", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
        f.flush()


def _write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    import csv

    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)


def load_rows(out: Any) -> list[dict[str, Any]]:
    """The rows a sweep appended to ``out/trials.jsonl`` so far (finished trials, also of a stopped sweep).

    Raises:
        PondError: no such file.
    """
    path = Path(check_type(out, "out", (str, Path), where="load_rows")) / "trials.jsonl"
    if not path.is_file():
        raise PondError("trials file", value=str(path), limit="an existing file", where="load_rows")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _check_devices(devices: Any, where: str) -> tuple[str, ...]:
    if devices is None:
        return registry.names()
    if isinstance(devices, str):
        devices = [devices]
    if not isinstance(devices, Sequence) or not devices:
        raise PondError("devices", value=repr(devices)[:80], limit="a non-empty list of device names", where=where)
    names = registry.names()
    for i, name in enumerate(devices):
        if name not in names:
            raise PondError(
                f"devices[{i}]", value=name, limit=f"one of {list(names)}", where=where, fix="see `pond devices`"
            )
    return tuple(devices)


def _check_sweep_args(trials: Any, data: Any, devices: Any, workers: Any, trial_timeout: Any, out: Any) -> tuple:
    where = "run_sweep"
    if isinstance(trials, Mapping) or not isinstance(trials, Sequence) or not trials:
        raise PondError(
            "trials",
            value=repr(trials)[:80],
            limit="a non-empty list of settings",
            where=where,
            fix="pass grid(...) or random_search(...)",
        )
    settings = [_settings(t, i, where) for i, t in enumerate(trials)]
    missing = [a for a in ("x_train", "y_train", "x_test", "y_test") if not hasattr(data, a)]
    if missing:
        raise PondError(
            "data", value=f"a {type(data).__name__} without {', '.join(missing)}", limit="an EventDataset", where=where
        )
    names = _check_devices(devices, where)
    if workers is not None:
        workers = check_int(workers, "workers", lo=1, hi=4096, where=where, fix="pass a count, or None")
    timeout = check_float(trial_timeout, "trial_timeout", lo=1.0, hi=7 * 86400.0, where=where)
    path = None
    if out is not None:
        folder = Path(check_type(out, "out", (str, Path), where=where))
        folder.mkdir(parents=True, exist_ok=True)
        path = check_writable_file(folder / "trials.jsonl", "out")
        if path.is_file() and path.stat().st_size:
            raise PondError(
                "out",
                value=f"{folder} (it holds {path.name} of an earlier sweep)",
                limit="a folder without trials.jsonl",
                where=where,
                fix="pass another folder, or read the earlier rows with load_rows() and remove the file",
            )
    return settings, names, workers, timeout, path


def run_sweep(
    trials: Sequence[Mapping[str, Any]],
    data: Any,
    *,
    devices: Sequence[str] | None = None,
    workers: int | None = None,
    address: str | None = None,
    out: str | Path | None = None,
    build: Callable | None = None,
    trial_timeout: float = 3600.0,
) -> SweepResult:
    """Run every trial (module docstring) and collect one table.

    Args:
        trials: settings from :func:`grid` / :func:`random_search` (or dicts of :data:`PARAMS` names).
        data: an :class:`~pondlib.datasets.EventDataset` (train split: training and fine-tuning; test:
            every accuracy).
        devices: registry names (default every registered device).
        workers: None: one trial after the other in this process; k: at most k trials at once on Ray.
        address: a Ray cluster (``"host:6379"``, ``"ray://host:10001"``, ``"auto"``); None: the running Ray
            instance, else a local one with ``workers`` CPUs.
        out: a folder for ``trials.jsonl`` (appended as trials finish) and ``sweep.csv`` (at the end); one
            that already holds a ``trials.jsonl`` is refused (never overwritten).
        build: ``build(hidden, n_in, n_out, key) -> net`` (default :func:`default_network`; picklable for Ray).
        trial_timeout: seconds after which a running trial is cancelled (Ray only), 1 s .. 7 days.

    Returns:
        A :class:`SweepResult`; trials that raised or timed out are rows with status ``"error"`` /
        ``"timeout"`` and the message, never left out.

    Raises:
        PondError: bad trials (unknown names, values out of range), data, devices, workers, timeout or out;
            Ray not installed. DistributedError: a Ray cluster that is not reachable.
    """
    t0 = time.perf_counter()
    settings, names, workers, timeout, path = _check_sweep_args(trials, data, devices, workers, trial_timeout, out)
    jobs = [(i, i, p, data, names, build) for i, p in enumerate(settings)]
    results: dict[int, list[dict]] = {}
    if workers is None:
        for job in jobs:
            try:
                rows = run_trial(*job[1:])
            except Exception as err:  # a trial that raised: reported in its rows
                rows = _error_rows(job[1], job[2], names, "error", _describe(err))
                traceback.clear_frames(err.__traceback__)
            results[job[0]] = rows
            _append(path, rows)
    else:
        with _ray_session(workers, address, "run_sweep") as ray:
            data_ref = ray.put(data)
            jobs = [(i, i, p, data_ref, names, build) for i, p in enumerate(settings)]
            for job, value in _submit_all(ray, run_trial, jobs, workers, timeout):
                if isinstance(value, BaseException):
                    status = "timeout" if isinstance(value, TimeoutError) else "error"
                    value = _error_rows(job[1], job[2], names, status, _describe(value))
                results[job[0]] = value
                _append(path, value)
    rows = tuple(r for i in sorted(results) for r in results[i])
    if path is not None:
        _write_csv(path.parent / "sweep.csv", rows)
    return SweepResult(rows, None if path is None else path.parent, time.perf_counter() - t0, workers)


def plot_gaps(result: SweepResult, *, ax: Any = None, title: str = "device minus float, per trial") -> Any:
    """The gap (accuracy points) of each trial on each device: one column of dots per device, the mean as a bar.

    Drawn as :mod:`pondlib.plot` draws (on ``ax`` or a new Agg figure, units on the axes); returns the figure.

    Raises:
        PondError: ``result`` not a :class:`SweepResult`, or no trial ran on a device.
    """
    check_type(result, "result", SweepResult, where="plot_gaps")
    devices = list(dict.fromkeys(r["device"] for r in result.rows if r["status"] == "ok"))
    if not devices:
        raise PondError(
            "sweep result", value="no successful trial", limit=">= 1 row with status 'ok'", where="plot_gaps"
        )
    if ax is None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=(6.4, 4.0), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
    for i, name in enumerate(devices):
        g = result.gaps(name)
        ax.bar(i, float(g.mean()), color="0.85", width=0.6, label="mean" if i == 0 else None)
        ax.plot(np.full(g.shape, i, float), g, "o", color="C0", label="trial" if i == 0 else None)
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xticks(range(len(devices)), devices)
    ax.set_xlabel("device")
    ax.set_ylabel("device - float accuracy (points)")
    ax.set_title(title)
    ax.legend()
    return ax.figure


# -- bulk simulation ------------------------------------------------------------------------------------------
def _run_block(device: str, mapped: Any, x: np.ndarray, record: bool) -> tuple[np.ndarray, dict]:
    """One block of :func:`bulk_run`, in a worker: the device's simulator from a reset state."""
    out, rec = registry.get(device).run(mapped, x, record=record)
    return np.asarray(out), {k: np.asarray(v) for k, v in rec.items()}


def bulk_run(
    mapped: Any,
    x: Any,
    *,
    workers: int = 2,
    block: int | None = None,
    record: bool = False,
    address: str | None = None,
    timeout: float = 3600.0,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``device.run(mapped, x)`` over a large (B, T, C) input, its row blocks run on Ray workers.

    Each block of at most ``block`` rows (default :math:`\\lceil B / \\mathrm{workers} \\rceil`) runs from a
    reset state, as every sample does in one call, so the result equals the one-process call exactly.

    Args:
        mapped: a :class:`~pondlib.devices.core.device.Mapped` from ``registry.get(name).map(...)``.
        x: input (B, T, C) as the device's ``run`` takes it. workers: blocks in flight, 1..4096.
        block: rows per block, 1..B. record: return the records too (concatenated on axis 0).
        address, timeout: as :func:`run_sweep` (``timeout`` per block, seconds).

    Returns:
        ``(output (B, T', N_out), record)``.

    Raises:
        PondError: ``mapped`` not a mapping, ``x`` without a batch axis, bad counts; DistributedError: an
            unreachable cluster, a block that failed (its rows and the error) or timed out.
    """
    from pondlib.devices.core.device import Mapped

    where = "bulk_run"
    check_type(mapped, "mapped", Mapped, where=where, fix="pass registry.get(name).map(net)")
    x = np.asarray(x)
    if x.ndim != 3 or x.shape[0] == 0:
        raise PondError("x", value=f"shape {x.shape}", limit="(B, T, C) with B >= 1", where=where)
    workers = check_int(workers, "workers", lo=1, hi=4096, where=where)
    n = x.shape[0]
    block = -(-n // workers) if block is None else check_int(block, "block", lo=1, hi=n, where=where)
    record = check_bool(record, "record", where=where)
    timeout = check_float(timeout, "timeout", lo=1.0, hi=7 * 86400.0, where=where)
    starts = list(range(0, n, block))
    parts: dict[int, tuple] = {}
    with _ray_session(workers, address, where) as ray:
        mref = ray.put(mapped)
        jobs = [(s, mapped.device, mref, x[s : s + block], record) for s in starts]
        for job, value in _submit_all(ray, _run_block, jobs, workers, timeout):
            if isinstance(value, BaseException):
                raise DistributedError(
                    f"block of rows {job[0]}..{min(job[0] + block, n) - 1}",
                    value=_describe(value),
                    where=where,
                    fix="run device.run on those rows in this process to see the error",
                )
            parts[job[0]] = value
    out = np.concatenate([parts[s][0] for s in starts])
    rec = {k: np.concatenate([parts[s][1][k] for s in starts]) for k in parts[starts[0]][1]}
    return out, rec
