r"""Several processes, one training run: JAX's own multi-process runtime, started safely.

With :math:`P` processes (one per host, or one per GPU), each holding :math:`D_p` devices, JAX's
``jax.distributed`` joins them into one runtime: ``jax.devices()`` lists all :math:`D = \sum_p D_p`
devices and :mod:`pondlib.nn.parallel`'s mesh spans them, so :func:`pondlib.training.fit`,
``evaluate`` and ``predict`` run **unchanged**: every process runs the same script with the same data
and key, contributes the rows of its own devices to each batch of :math:`B` samples (a multiple of
:math:`D`), and the gradient mean :math:`\tfrac1B\sum_b \nabla\ell_b` becomes one all-reduce across
processes (gloo on CPUs, NCCL on GPUs). Losses and parameters equal a one-process run up to the float32
rounding of the batch sums.

This module starts that runtime so that failures are errors, never hangs:

* :func:`initialize` reads the cluster from its arguments, from ``POND_COORDINATOR`` /
  ``POND_NUM_PROCESSES`` / ``POND_PROCESS_ID``, or from SLURM (``SLURM_NTASKS``, ``SLURM_PROCID``, the
  first host of ``SLURM_STEP_NODELIST``), checks it, and first meets the other processes in a small
  handshake of its own on port ``port + 1`` of the coordinator (bounded by ``timeout`` seconds). A
  coordinator that is not reachable, a port in use, processes that disagree on their count, a repeated
  process id or a process that never comes are a :class:`~pondlib.errors.DistributedError` naming it,
  on every process, instead of JAX's abort or a wait without end. Only then is
  ``jax.distributed.initialize`` called, with a heartbeat of ``heartbeat_timeout`` seconds, followed by
  one all-reduce over every device while the processes are in step (it builds the collective group that
  ``fit`` uses once, so a process whose first step comes much later, after a slower compile, is waited
  for rather than failing gloo's 30 s set-up deadline).
* A collective that fails because another process stopped (its connection closed) is raised by
  ``fit`` / ``predict`` / ``evaluate`` as a ``DistributedError`` (:func:`pondlib.nn.parallel.peer_failures`);
  a process that stops while the others compute is noticed by JAX's heartbeat, which ends them within
  ``heartbeat_timeout`` seconds with a message saying that another task died.
* :func:`launch` starts :math:`P` local processes running one function (tests, benchmarks, a
  workstation with several GPUs), returns what each returned, and when one fails or the run exceeds its
  ``timeout`` stops the others and raises a ``DistributedError`` with each process's exit code and the
  end of its error output.

Example:
    >>> cluster_from_env({"POND_COORDINATOR": "node1:4000", "POND_NUM_PROCESSES": "4", "POND_PROCESS_ID": "2"})
    Cluster(coordinator_address='node1:4000', num_processes=4, process_id=2, source='POND_* variables')
    >>> slurm = {"SLURM_NTASKS": "8", "SLURM_PROCID": "3", "SLURM_STEP_NODELIST": "gpu[07-08],gpu11"}
    >>> cluster_from_env(slurm).coordinator_address
    'gpu07:12355'
    >>> check_address("node1", where="initialize")
    Traceback (most recent call last):
    ...
    pondlib.errors.DistributedError: initialize: coordinator_address: got node1, expected 'host:port' ...
"""

from __future__ import annotations

import json
import os
import pickle
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pondlib.errors import DistributedError
from pondlib.validate import check_float, check_int, check_type

__all__ = [
    "Cluster",
    "DEFAULT_PORT",
    "ENV_COORDINATOR",
    "ENV_NUM_PROCESSES",
    "ENV_PROCESS_ID",
    "check_address",
    "cluster_from_env",
    "initialize",
    "is_initialized",
    "shutdown",
    "launch",
    "free_port",
]

#: The coordinator's address ``host:port`` (the handshake uses ``port + 1``).
ENV_COORDINATOR = "POND_COORDINATOR"
#: How many processes take part.
ENV_NUM_PROCESSES = "POND_NUM_PROCESSES"
#: This process's id in ``0 .. num_processes - 1`` (0 hosts the coordinator).
ENV_PROCESS_ID = "POND_PROCESS_ID"
#: The coordinator port under SLURM when ``POND_COORDINATOR_PORT`` is not set.
DEFAULT_PORT = 12355
_MAX_PROCESSES = 65536
_ENV_FIX = f"set {ENV_COORDINATOR}=host:port, {ENV_NUM_PROCESSES}=P and {ENV_PROCESS_ID}=0..P-1 on every process"


@dataclass(frozen=True)
class Cluster:
    """Who this process is in a multi-process run.

    Attributes:
        coordinator_address: ``host:port`` of process 0's coordinator (the handshake listens on ``port + 1``).
        num_processes: :math:`P \\ge 1`.
        process_id: this process, in ``0 .. P - 1``.
        source: where it was read from (``"arguments"``, ``"POND_* variables"`` or ``"SLURM"``).
    """

    coordinator_address: str
    num_processes: int
    process_id: int
    source: str

    @property
    def host(self) -> str:
        """The coordinator's host name or address."""
        return self.coordinator_address.rsplit(":", 1)[0].strip("[]")

    @property
    def port(self) -> int:
        """The coordinator's port (the handshake uses ``port + 1``)."""
        return int(self.coordinator_address.rsplit(":", 1)[1])


_ADDRESS = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+):(\d{1,5})$")


def check_address(address: Any, *, where: str = "initialize") -> str:
    """``address`` when it is ``"host:port"`` with a port in 1..65534 (the handshake takes ``port + 1``).

    Raises:
        DistributedError: not a string, no port, a port out of range, spaces or characters a host cannot have.

    Example:
        >>> check_address("127.0.0.1:4000")
        '127.0.0.1:4000'
    """
    fix = "pass 'host:port', e.g. 'node0:12355' (an IPv6 host in brackets: '[::1]:12355')"
    if not isinstance(address, str):
        check_type(address, "coordinator_address", str, where=where, error=DistributedError, fix=fix)
    m = _ADDRESS.match(address)
    if m is None or not 1 <= int(m.group(2)) <= 65534:
        raise DistributedError(
            "coordinator_address", value=address, limit="'host:port' with a port in 1..65534", where=where, fix=fix
        )
    return address


def _first_host(nodelist: str) -> str:
    """The first host of a SLURM node list: ``"gpu[07-08,11],cpu3"`` -> ``"gpu07"``."""
    m = re.match(r"^([^,\[]+)(?:\[([^\]]+)\])?", nodelist.strip())
    if m is None or not m.group(1):
        raise DistributedError(
            "SLURM node list", value=nodelist, limit="a SLURM host list such as 'node[01-04]'", where="cluster_from_env"
        )
    first = m.group(2).split(",")[0].split("-")[0] if m.group(2) else ""
    return m.group(1) + first


def _env_int(env: Mapping[str, str], name: str, lo: int, hi: int) -> int:
    text = env[name]
    if not re.fullmatch(r"\s*\d+\s*", text):
        raise DistributedError(name, value=text, limit=f"a whole number in [{lo}, {hi}]", where="cluster_from_env")
    return check_int(int(text), name, lo=lo, hi=hi, where="cluster_from_env", error=DistributedError, fix=_ENV_FIX)


def cluster_from_env(environ: Mapping[str, str] | None = None) -> Cluster | None:
    """The cluster described by environment variables, or None when none describes one.

    ``POND_COORDINATOR``, ``POND_NUM_PROCESSES`` and ``POND_PROCESS_ID`` first (all three or none); else
    SLURM's ``SLURM_NTASKS`` (:math:`P`), ``SLURM_PROCID`` and the first host of ``SLURM_STEP_NODELIST``
    (or ``SLURM_JOB_NODELIST``) with port ``POND_COORDINATOR_PORT`` (default :data:`DEFAULT_PORT`).

    Raises:
        DistributedError: some but not all ``POND_*`` variables set; a value that is not a whole number in
            range; a process id >= the process count; a malformed address or node list.
    """
    env = os.environ if environ is None else environ
    ours = [k for k in (ENV_COORDINATOR, ENV_NUM_PROCESSES, ENV_PROCESS_ID) if k in env]
    if ours:
        missing = sorted({ENV_COORDINATOR, ENV_NUM_PROCESSES, ENV_PROCESS_ID} - set(ours))
        if missing:
            raise DistributedError(
                "environment", value=f"{missing} not set", limit="all three POND_* variables", fix=_ENV_FIX
            )
        n = _env_int(env, ENV_NUM_PROCESSES, 1, _MAX_PROCESSES)
        return _cluster(env[ENV_COORDINATOR], n, _env_int(env, ENV_PROCESS_ID, 0, n - 1), "POND_* variables")
    if "SLURM_NTASKS" in env and "SLURM_PROCID" in env:
        n = _env_int(env, "SLURM_NTASKS", 1, _MAX_PROCESSES)
        nodes = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or "localhost"
        port = _env_int(env, "POND_COORDINATOR_PORT", 1, 65534) if "POND_COORDINATOR_PORT" in env else DEFAULT_PORT
        return _cluster(f"{_first_host(nodes)}:{port}", n, _env_int(env, "SLURM_PROCID", 0, n - 1), "SLURM")
    return None


def _cluster(address: Any, num_processes: Any, process_id: Any, source: str) -> Cluster:
    address = check_address(address, where="initialize")
    n = check_int(num_processes, "num_processes", lo=1, hi=_MAX_PROCESSES, where="initialize", error=DistributedError)
    pid = check_int(
        process_id,
        "process_id",
        lo=0,
        hi=n - 1,
        where="initialize",
        error=DistributedError,
        fix=f"number the {n} processes 0..{n - 1}, each once",
    )
    return Cluster(address, n, pid, source)


def is_initialized() -> bool:
    """Whether JAX's multi-process runtime is running in this process."""
    import jax

    return bool(jax.distributed.is_initialized())


# -- the handshake --------------------------------------------------------------------------------------------
def _send(sock: socket.socket, obj: dict) -> None:
    sock.sendall(json.dumps(obj).encode() + b"\n")


def _recv(sock: socket.socket, deadline: float) -> dict:
    buf = b""
    while not buf.endswith(b"\n"):
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return json.loads(buf)


def _host_handshake(c: Cluster, deadline: float) -> None:
    """Process 0: listen on ``port + 1``, take one hello from each other process, answer all with the verdict."""
    server = socket.socket(socket.AF_INET6 if ":" in c.host else socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        server.bind(("", c.port + 1))
    except OSError as err:
        server.close()
        raise DistributedError(
            "handshake port",
            value=f"{c.port + 1} ({err.strerror})",
            limit="a free port (coordinator port + 1)",
            where="initialize, process 0",
            fix="choose another coordinator port, free on the coordinator's host together with the next one",
        ) from None
    server.listen(c.num_processes)
    peers: dict[int, socket.socket] = {}
    problem = None
    started = [0] if _jax_started() else []
    try:
        while len(peers) < c.num_processes - 1 and problem is None:
            server.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                conn, _ = server.accept()
                hello = _recv(conn, deadline)
            except (TimeoutError, ConnectionError, ValueError, OSError):
                if time.monotonic() >= deadline:
                    missing = sorted(set(range(1, c.num_processes)) - set(peers))
                    problem = f"processes {missing} did not arrive"
                continue
            pid, n = hello.get("process_id"), hello.get("num_processes")
            if hello.get("jax_started"):
                started.append(pid)
            if n != c.num_processes:
                problem = f"process {pid} says num_processes={n}, process 0 says {c.num_processes}"
            elif pid in peers or pid == 0:
                problem = f"process id {pid} is used twice"
            peers[pid if pid not in peers and pid != 0 else -len(peers) - 1] = conn
        if problem is None and started:
            problem = f"JAX already computing in process(es) {sorted(started)}"
        for conn in peers.values():
            try:
                _send(conn, {"ok": problem is None, "problem": problem})
            except OSError:
                pass
    finally:
        for conn in peers.values():
            conn.close()
        server.close()
    if problem is not None:
        raise DistributedError(
            _PROBLEMS[next(k for k in _PROBLEMS if k in problem)],
            value=problem,
            limit=f"{c.num_processes} processes, ids 0..{c.num_processes - 1}, each once",
            where="initialize, process 0",
            fix=_HANDSHAKE_FIX,
        )


#: the handshake's problems (a word in the problem -> the error's title)
_PROBLEMS = {"says": "processes disagree on the cluster", "twice": "processes disagree on the cluster",
             "arrive": "processes missing", "computing": "initialize came too late"}  # fmt: skip
_HANDSHAKE_FIX = (
    "start every process with the same num_processes and a distinct process_id, within the timeout, and call "
    "initialize() before anything else uses JAX"
)


def _jax_started() -> bool:
    """Whether this process's JAX backends already exist (then ``jax.distributed`` can no longer start)."""
    try:
        from jax._src import xla_bridge
    except ImportError:  # pragma: no cover - a JAX without it: JAX's own error comes later
        return False
    return bool(getattr(xla_bridge, "backends_are_initialized", lambda: False)())


def _peer_handshake(c: Cluster, deadline: float) -> None:
    """Process k > 0: connect to the coordinator's ``port + 1`` (retrying until the deadline) and get the verdict."""
    last = None
    while True:
        try:
            with socket.create_connection((c.host, c.port + 1), timeout=1.0) as sock:
                _send(
                    sock, {"process_id": c.process_id, "num_processes": c.num_processes, "jax_started": _jax_started()}
                )
                verdict = _recv(sock, deadline)
            break
        except (OSError, ConnectionError, ValueError) as err:
            last = err
            if time.monotonic() >= deadline:
                raise DistributedError(
                    "coordinator not reachable",
                    value=f"{c.coordinator_address} ({type(last).__name__}: {last})",
                    limit="process 0 listening there (and on port + 1)",
                    where=f"initialize, process {c.process_id}",
                    fix="start process 0 with the same coordinator_address, check the host name, port and "
                    "firewall, or raise the timeout",
                ) from None
            time.sleep(0.2)
    if not verdict.get("ok"):
        problem = str(verdict.get("problem"))
        raise DistributedError(
            _PROBLEMS[next((k for k in _PROBLEMS if k in problem), "says")],
            value=problem,
            limit=f"{c.num_processes} processes, each with a distinct process_id",
            where=f"initialize, process {c.process_id}",
            fix=_HANDSHAKE_FIX,
        )


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    timeout: float = 60.0,
    heartbeat_timeout: float = 10.0,
    environ: Mapping[str, str] | None = None,
) -> Cluster:
    """Join this process to a multi-process JAX run; call it before anything else uses JAX.

    Args:
        coordinator_address: ``host:port`` of process 0 (default: from the environment, see
            :func:`cluster_from_env`). Process 0 also listens on ``port + 1`` for the handshake.
        num_processes: :math:`P` (default: from the environment).
        process_id: this process, ``0..P-1`` (default: from the environment).
        timeout: seconds to wait for every process to arrive (handshake and JAX's own start), 1..86400.
        heartbeat_timeout: seconds after which JAX declares a silent process dead and stops the others,
            1..3600.
        environ: the variables to read instead of ``os.environ``.

    Returns:
        The :class:`Cluster`. With :math:`P = 1` nothing is started (a one-process run).

    Raises:
        DistributedError: a malformed address or out-of-range count or id (or none given anywhere); the
            coordinator not reachable within ``timeout``; processes that disagree on :math:`P` or share an
            id; JAX already initialized, or already computing (``initialize`` must come first).
    """
    timeout = check_float(timeout, "timeout", lo=1.0, hi=86400.0, where="initialize", error=DistributedError)
    heartbeat = check_float(
        heartbeat_timeout, "heartbeat_timeout", lo=1.0, hi=3600.0, where="initialize", error=DistributedError
    )
    given = (coordinator_address, num_processes, process_id)
    if all(v is None for v in given):
        cluster = cluster_from_env(environ)
        if cluster is None:
            raise DistributedError(
                "cluster", value="no arguments and no POND_* or SLURM variables", where="initialize", fix=_ENV_FIX
            )
    elif any(v is None for v in given):
        raise DistributedError(
            "arguments",
            value=f"coordinator_address={coordinator_address!r}, num_processes={num_processes!r}, "
            f"process_id={process_id!r}",
            limit="all three or none",
            where="initialize",
            fix="pass all three, or none to read them from the environment",
        )
    else:
        cluster = _cluster(coordinator_address, num_processes, process_id, "arguments")
    if cluster.num_processes == 1:
        return cluster
    return _start(cluster, timeout, heartbeat)


def _start(c: Cluster, timeout: float, heartbeat: float) -> Cluster:
    import jax

    if jax.distributed.is_initialized():
        raise DistributedError(
            "JAX's multi-process runtime", value="already initialized", where="initialize", fix="call it once"
        )
    deadline = time.monotonic() + timeout
    (_host_handshake if c.process_id == 0 else _peer_handshake)(c, deadline)
    try:
        jax.distributed.initialize(
            coordinator_address=c.coordinator_address,
            num_processes=c.num_processes,
            process_id=c.process_id,
            initialization_timeout=max(1, int(round(deadline - time.monotonic())) + 5),
            heartbeat_timeout_seconds=max(1, int(round(heartbeat))),
            shutdown_timeout_seconds=max(1, int(round(heartbeat))),
        )
    except RuntimeError as err:
        raise DistributedError(
            "JAX's multi-process runtime",
            value=str(err).splitlines()[0][:200],
            where=f"initialize, process {c.process_id}",
            fix="call pondlib.distributed.initialize() first, before anything uses JAX (importing pondlib is fine)",
        ) from None
    _first_collective(c)
    return c


def _first_collective(c: Cluster) -> None:
    r"""One all-reduce over every device of every process, :math:`\sum_d 1 = D`, right after the start, while
    the processes are in step. It builds the collective group of all devices (gloo's context on CPUs), which
    ``fit`` / ``predict`` use by default, once: later collectives reuse it, so a process that reaches its
    first training step much later than the others (a slower compile) is waited for instead of failing
    gloo's 30 s set-up deadline. A wrong sum or a failure is a DistributedError."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    devs = jax.devices()
    mesh = Mesh(np.asarray(devs, dtype=object), ("batch",))
    ones = np.ones(len(devs), np.float32)
    try:
        x = jax.make_array_from_callback(ones.shape, NamedSharding(mesh, PartitionSpec("batch")), lambda i: ones[i])
        total = float(jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, PartitionSpec()))(x))
    except (jax.errors.JaxRuntimeError, RuntimeError, ValueError) as err:
        total, why = None, str(err).splitlines()[0][:200]
    if total != len(devs):
        raise DistributedError(
            "first all-reduce across processes",
            value=f"{total}" if total is not None else why,
            limit=f"{len(devs)} (one per device)",
            where=f"initialize, process {c.process_id}",
            fix="check that every host can reach the others on any port (gloo / NCCL open their own connections)",
        )


def shutdown() -> None:
    """Leave the multi-process run (a no-op when none is running); JAX also does this at exit."""
    import jax

    if jax.distributed.is_initialized():
        jax.distributed.shutdown()


# -- the local launcher ---------------------------------------------------------------------------------------
def free_port() -> int:
    """A TCP port that is free now on this host, with the next one free too (coordinator and handshake)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port >= 65534:
            continue
        with socket.socket() as s2:
            try:
                s2.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise DistributedError("free port", value="none found in 50 tries", where="free_port")  # pragma: no cover


def _resolve_target(target: Any) -> str:
    if callable(target):
        name = f"{target.__module__}:{target.__qualname__}"
    else:
        name = check_type(target, "target", str, where="launch", error=DistributedError)
    if not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", name) or name.startswith("__main__:"):
        raise DistributedError(
            "target",
            value=name,
            limit="'package.module:function', a module-level function importable by a new process",
            where="launch",
            fix="define the function at module level in an importable module",
        )
    return name


def _tail(path: Path, n: int = 100_000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:  # pragma: no cover - the file is ours
        return ""


def launch(
    target: str | Callable[..., Any],
    num_processes: int,
    *,
    args: Sequence[Any] = (),
    timeout: float = 300.0,
    heartbeat_timeout: float = 5.0,
    env: Mapping[str, str] | None = None,
    grace: float = 15.0,
) -> list[Any]:
    """Run ``target(*args)`` in ``num_processes`` new local processes joined by :func:`initialize`.

    Each process gets ``POND_COORDINATOR=127.0.0.1:<free port>``, ``POND_NUM_PROCESSES`` and its
    ``POND_PROCESS_ID``, initializes (``timeout`` and ``heartbeat_timeout`` as there), runs the function
    and sends back its return value (pickled). For tests, benchmarks and workstations with several
    GPUs; on a cluster start the processes with its own launcher (``srun``) and call :func:`initialize`.

    Args:
        target: ``"package.module:function"`` or such a module-level function (picklable arguments).
        num_processes: :math:`P`, 1..64.
        args: positional arguments, the same for every process.
        timeout: seconds for the whole run, 1..86400; past it every process is stopped.
        heartbeat_timeout: JAX's heartbeat in each process (seconds, 1..3600).
        env: variables added to each process's environment.
        grace: seconds the others get to stop by themselves after one failed, 0..600.

    Returns:
        The return values, one per process, in process order.

    Raises:
        DistributedError: a bad argument; a process that exited with an error (its id, exit code and the
            end of its error output; ``err.logs`` holds every process's); the run past ``timeout``.
    """
    name = _resolve_target(target)
    n = check_int(num_processes, "num_processes", lo=1, hi=64, where="launch", error=DistributedError)
    timeout = check_float(timeout, "timeout", lo=1.0, hi=86400.0, where="launch", error=DistributedError)
    heartbeat = check_float(
        heartbeat_timeout, "heartbeat_timeout", lo=1.0, hi=3600.0, where="launch", error=DistributedError
    )
    grace = check_float(grace, "grace", lo=0.0, hi=600.0, where="launch", error=DistributedError)
    if not isinstance(args, (list, tuple)):
        check_type(args, "args", (list, tuple), where="launch", error=DistributedError)
    extra = dict(check_type({} if env is None else env, "env", Mapping, where="launch", error=DistributedError))
    with tempfile.TemporaryDirectory(prefix="pond-launch-") as tmp:
        work = Path(tmp)
        (work / "args.pkl").write_bytes(pickle.dumps(tuple(args)))
        port = free_port()
        procs = []
        for pid in range(n):
            penv = dict(os.environ, **extra)
            penv.update({ENV_COORDINATOR: f"127.0.0.1:{port}", ENV_NUM_PROCESSES: str(n), ENV_PROCESS_ID: str(pid)})
            cmd = [sys.executable, "-m", "pondlib.distributed", name, str(work), str(timeout), str(heartbeat)]
            with open(work / f"{pid}.err", "wb") as err:
                procs.append(subprocess.Popen(cmd, env=penv, stdout=subprocess.DEVNULL, stderr=err))
        codes, first = _wait(procs, time.monotonic() + timeout, grace)
        logs = {pid: _tail(work / f"{pid}.err") for pid in range(n)}
        _raise_failures(codes, first, logs, timeout)
        return [pickle.loads((work / f"{pid}.out").read_bytes()) for pid in range(n)]


def _wait(procs: list[subprocess.Popen], deadline: float, grace: float) -> tuple[list[int | None], int | None]:
    """``(exit codes, the process that failed first)`` once all exited, or one failed and the others had
    ``grace`` seconds, or at the deadline; a code is None for a process stopped here."""
    failed = None
    failed_at = 0.0
    while True:
        codes = [p.poll() for p in procs]
        now = time.monotonic()
        if failed is None:
            failed = next((pid for pid, c in enumerate(codes) if c not in (None, 0)), None)
            failed_at = now
        if all(c is not None for c in codes):
            return codes, failed
        if now >= deadline or (failed is not None and now - failed_at >= grace):
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            return codes, failed
        time.sleep(0.05)


def _error_line(text: str) -> str:
    """The last line of an error output that names an error (a Python exception, JAX's fatal log), else its last."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.match(r"^([\w.]*(Error|Exception)\b|F\d{4} )", ln):
            return ln
    return lines[-1] if lines else "(no error output)"


def _raise_failures(codes: list[int | None], first: int | None, logs: dict[int, str], timeout: float) -> None:
    """A DistributedError naming the process that failed first (or the timeout); nothing when all exited 0."""
    if all(c == 0 for c in codes):
        return
    if first is None:
        err = DistributedError(
            "run time",
            value=f"every process still running after {timeout:g} s",
            limit=f"{timeout:g} s (timeout)",
            where="launch",
            fix="raise the timeout, or look for a process that waits on a collective the others never reach",
        )
    else:
        last = [_error_line(logs[first])]
        states = ", ".join(
            f"process {p}: " + ("stopped by launch" if c is None else f"exit {c}") for p, c in enumerate(codes)
        )
        err = DistributedError(
            f"process {first} failed",
            value=f"exit code {codes[first]}: {last[0][:300]}",
            limit="exit code 0",
            where="launch",
            fix=f"see err.logs[{first}] for its error output ({states})",
        )
    err.logs = logs
    err.codes = codes
    raise err


def _child(argv: list[str]) -> int:
    """The body of one launched process: initialize from POND_* variables, run the target, pickle its result."""
    name, work, timeout, heartbeat = argv[0], Path(argv[1]), float(argv[2]), float(argv[3])
    module, func = name.split(":")
    args = pickle.loads((work / "args.pkl").read_bytes())
    cluster = initialize(timeout=timeout, heartbeat_timeout=heartbeat)
    import importlib

    fn = getattr(importlib.import_module(module), func)
    result = fn(*args)
    (work / f"{cluster.process_id}.out").write_bytes(pickle.dumps(result))
    return 0


if __name__ == "__main__":  # pragma: no cover - run by launch() in a new process
    try:
        sys.exit(_child(sys.argv[1:]))
    except Exception as exc:  # reported here, then a plain exit: JAX's shutdown barrier aborts when a peer is gone
        import traceback

        traceback.print_exc()
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        os._exit(1)
