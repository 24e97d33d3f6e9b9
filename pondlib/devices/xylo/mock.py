"""A numpy model of one Xylo development kit: :class:`MockXyloDevice`.

This module owns the mock board: its memory image (sized by :func:`~pondlib.devices.xylo.memory.memory_map`),
a USB-like link in simulated time (latency, bandwidth, read time-outs, removal) and the bit-exact core
(:class:`~pondlib.devices.xylo.sim.XyloSim`) built from whatever configuration its memory *decodes to*
(:func:`~pondlib.devices.xylo.codec.decode_config`); each run also reports its cost
(:class:`~pondlib.devices.xylo.cost.RunStats`). The bus of plugged-in boards (``set_mock_boards``,
``find_xylo_hdks``) and the host-side ``XyloBoard`` live in :mod:`pondlib.devices.xylo.hdk`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pondlib.devices.xylo.codec import decode_config
from pondlib.devices.xylo.config import XyloConfig
from pondlib.devices.xylo.cost import CostModel, RunStats, _stats, _synop_counts
from pondlib.devices.xylo.limits import XyloLimits, get_limits
from pondlib.devices.xylo.memory import VARIANT_CODES, MemoryRegion, memory_map
from pondlib.devices.xylo.sim import XyloSim
from pondlib.errors import ConfigError, DeviceError, SimulationError
from pondlib.validate import check_bool, check_float, check_type

__all__ = ["MockXyloDevice"]


def _seconds(name: str, value: Any, where: str) -> float:
    """A finite number of seconds >= 0 (never a string such as ``"1.0"``, a bool or NaN)."""
    return check_float(
        value, name, lo=0.0, where=where, error=ConfigError, fix=f"pass {name}=<seconds>, e.g. 1.0 (a number)"
    )


class MockXyloDevice:
    """A numpy model of one Xylo development kit: memory image, link and bit-exact core.

    Args:
        limits: the chip variant (``"audio2"``, ``"audio3"``, ``"imu"`` or a :class:`XyloLimits`).
        serial: the board's serial number (a name).
        timeout_s: how long a read waits for the board's answer (simulated seconds).
        response_delay_s: how long the board takes to answer a read (simulated; a stalled board
            has ``response_delay_s > timeout_s`` and every read times out).
        link_words_per_s, link_latency_s: link bandwidth (32-bit words/s) and latency per transaction.

    Attributes:
        clock_s: simulated seconds spent on the link and running the core since creation.
        epoch: incremented on every memory write and power cycle; a :class:`XyloBoard` uses it to
            notice that the memory changed under it.

    The memory is lost when the board is removed (:meth:`disconnect`) and is blank again after
    :meth:`reconnect` (a power cycle). The core is rebuilt from the memory image at the first run after
    a write, and its state is reset by any memory write.
    """

    def __init__(
        self,
        limits: XyloLimits | str | None = "audio2",
        *,
        serial: str = "XYLO-MOCK-0",
        timeout_s: float = 1.0,
        response_delay_s: float = 0.0,
        link_words_per_s: float = 2.5e6,
        link_latency_s: float = 1e-4,
    ) -> None:
        self.limits = get_limits(limits)
        if self.limits.name not in VARIANT_CODES:
            raise ConfigError(
                "board variant",
                value=self.limits.name,
                limit=sorted(VARIANT_CODES),
                where="MockXyloDevice",
                fix="use one of the Xylo variants in limits.LIMITS",
            )
        self.serial = check_type(serial, "serial", str, where="MockXyloDevice", error=ConfigError)
        self.timeout_s = _seconds("timeout_s", timeout_s, self.serial)
        self.response_delay_s = _seconds("response_delay_s", response_delay_s, self.serial)
        self.link_latency_s = _seconds("link_latency_s", link_latency_s, self.serial)
        rate = _seconds("link_words_per_s", link_words_per_s, self.serial)
        if rate <= 0:
            raise ConfigError(
                "link_words_per_s",
                value=link_words_per_s,
                limit="> 0",
                where=self.serial,
                fix="pass a positive link bandwidth in words per second",
            )
        self.link_words_per_s = rate
        self.regions = {r.name: r for r in memory_map(self.limits)}
        self.clock_s = 0.0
        self.epoch = 0
        self._connected = True
        self._steps_left: int | None = None
        self._power_up()

    def __repr__(self) -> str:
        state = "connected" if self._connected else "disconnected"
        return f"MockXyloDevice({self.limits.name!r}, serial={self.serial!r}, {state})"

    def _power_up(self) -> None:
        self._memory = {name: np.zeros(r.words, dtype=np.uint32) for name, r in self.regions.items()}
        self._core: XyloSim | None = None
        self._core_config: XyloConfig | None = None
        self._core_epoch = -1
        self.epoch += 1

    # -- presence -------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        """True while the board is plugged in."""
        return self._connected

    def disconnect(self, after_steps: int | None = None) -> None:
        """Remove the board now, or let it run ``after_steps`` more time steps and vanish at the next.

        A run in progress when the board vanishes raises :class:`SimulationError`; its results and
        the board's memory are lost.
        """
        if after_steps is None:
            self._connected = False
            self._steps_left = None
            return
        if isinstance(after_steps, bool) or not isinstance(after_steps, (int, np.integer)) or after_steps < 0:
            raise ConfigError(
                "after_steps",
                value=after_steps,
                limit="an integer >= 0 or None",
                where=self.serial,
                fix="pass the number of steps the board still runs",
            )
        self._steps_left = int(after_steps)

    def reconnect(self) -> None:
        """Plug the board back in: a power cycle, the memory is blank (apply the configuration again)."""
        self._connected = True
        self._steps_left = None
        self._power_up()

    # -- link -----------------------------------------------------------------------------------
    def _require_connected(self, what: str) -> None:
        if not self._connected:
            raise DeviceError(
                f"board disconnected: cannot {what}",
                where=self.serial,
                fix="plug the board back in (MockXyloDevice.reconnect() on the mock), "
                "find it with find_xylo_hdks() and apply the configuration again",
            )

    def _transfer(self, what: str, n_words: int, read: bool) -> None:
        """Account one link transaction of ``n_words`` words; a read waits for the board's answer."""
        self._require_connected(what)
        if read and self.response_delay_s > self.timeout_s:
            self.clock_s += self.timeout_s  # simulated: the host gave up after timeout_s
            raise DeviceError(
                f"read timed out: cannot {what}",
                value=f"no answer within {self.timeout_s} s",
                limit=f"an answer within timeout_s = {self.timeout_s} s",
                where=self.serial,
                fix="check the cable and power, or raise MockXyloDevice.timeout_s; "
                "then retry (a timed-out run's state is undefined: reset_state())",
            )
        self.clock_s += self.link_latency_s + (self.response_delay_s if read else 0.0) + n_words / self.link_words_per_s

    def _region(self, name: str, start: int, count: int | None) -> tuple[MemoryRegion, int, int]:
        if name not in self.regions:
            raise ConfigError(
                "memory name",
                value=name,
                limit=sorted(self.regions),
                where=self.serial,
                fix="use one of the memories of memory_map()",
            )
        r = self.regions[name]
        if isinstance(start, bool) or not isinstance(start, (int, np.integer)) or not 0 <= start <= r.words:
            raise ConfigError(
                f"{name} start word",
                value=start,
                limit=f"0..{r.words}",
                where=self.serial,
                fix="address words inside the memory",
            )
        n = r.words - int(start) if count is None else count
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 0 <= start + n <= r.words:
            raise ConfigError(
                f"{name} word count",
                value=n,
                limit=f"0..{r.words - int(start)}",
                where=self.serial,
                fix="address words inside the memory",
            )
        return r, int(start), int(n)

    def write_memory(self, name: str, words: Any, start: int = 0) -> None:
        """Write 32-bit ``words`` to memory ``name`` from word ``start``; resets the core's state."""
        try:
            arr = np.asarray(words)
        except (TypeError, ValueError):
            raise ConfigError(
                f"{name} words",
                value="a ragged nested sequence",
                limit="a 1-D array of integers in 0..0xFFFFFFFF",
                where=self.serial,
                fix="pass uint32 words (encode_config builds them)",
            ) from None
        if arr.ndim != 1 or arr.dtype.kind not in "iu" or (arr.size and (arr.min() < 0 or arr.max() > 0xFFFFFFFF)):
            raise ConfigError(
                f"{name} words",
                value=f"shape {arr.shape}, dtype {arr.dtype}",
                limit="a 1-D array of integers in 0..0xFFFFFFFF",
                where=self.serial,
                fix="pass uint32 words (encode_config builds them)",
            )
        _r, start, n = self._region(name, start, arr.size)
        self._transfer(f"write {name}", n, read=False)
        self._memory[name][start : start + n] = arr.astype(np.uint32)
        self.epoch += 1

    def read_memory(self, name: str, start: int = 0, count: int | None = None) -> np.ndarray:
        """Read ``count`` words (default: to the end) of memory ``name`` from word ``start``."""
        _r, start, n = self._region(name, start, count)
        self._transfer(f"read {name}", n, read=True)
        return self._memory[name][start : start + n].copy()

    def write_image(self, image: Mapping[str, Any]) -> None:
        """Write every memory of ``image`` (a dict from :func:`encode_config`)."""
        if not isinstance(image, Mapping):
            raise ConfigError(
                "memory image",
                value=type(image).__name__,
                limit="a mapping {memory name: words}",
                where=self.serial,
                fix="pass a complete image from encode_config",
            )
        unknown = sorted(str(k) for k in image if k not in self.regions)
        if unknown:
            raise ConfigError(
                "memory image: unknown memories",
                value=unknown,
                limit=sorted(self.regions),
                where=self.serial,
                fix="pass a complete image from encode_config",
            )
        for name in self.regions:
            if name not in image:
                raise ConfigError(
                    f"memory image lacks {name}", where=self.serial, fix="pass a complete image from encode_config"
                )
        for name in self.regions:
            self.write_memory(name, image[name])

    def read_image(self) -> dict[str, np.ndarray]:
        """Read every memory back."""
        return {name: self.read_memory(name) for name in self.regions}

    # -- core -----------------------------------------------------------------------------------
    def _build_core(self) -> XyloSim:
        if self._core is None or self._core_epoch != self.epoch:
            # The board's "firmware": it knows nothing but its own memory image.
            try:
                cfg = decode_config(self._memory)
            except ConfigError as err:
                raise ConfigError(
                    problems=err.problems,
                    where=f"{self.serial} memory image",
                    fix="apply a configuration with XyloBoard(board, config)",
                ) from None
            self._core = XyloSim.from_config(cfg)
            self._core_config = cfg
            self._core_epoch = self.epoch
        return self._core

    def reset_core(self) -> None:
        """Zero the core's state (a register write)."""
        self._transfer("reset the core", 1, read=False)
        if self._core is not None:
            self._core.reset_state()

    def read_state(self) -> dict[str, np.ndarray]:
        """The core's state registers (as ``XyloSim.state``)."""
        core = self._build_core()
        words = sum(v.size for v in core.state.values())
        self._transfer("read the core state", -(-words // 2), read=True)
        return core.state

    def run(
        self, x: Any, record: bool = False
    ) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray], RunStats]:
        """Send input, run the core in (simulated) real time and read the results back.

        Returns ``(output, state, record, stats)``; ``stats`` (:class:`RunStats`) uses the default
        :class:`CostModel`. Raises :class:`SimulationError` for bad input, a removed board (also one
        that vanishes mid-run) and a read time-out; :class:`ConfigError` when the memory image does
        not decode (nothing was configured).
        """
        record = check_bool(record, "record", where=self.serial, error=SimulationError)
        self._require_connected("run")
        core = self._build_core()
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError):
            raise SimulationError(
                "input is not an array",
                value="a ragged nested sequence",
                limit="a rectangular array",
                where="x",
                fix="pass event counts of shape (T, N_in) or (B, T, N_in)",
            ) from None
        core._check_input(arr)  # SimulationError for bad input, before anything is sent
        steps = arr.shape[-2] * (arr.shape[0] if arr.ndim == 3 else 1)
        self._transfer("send the input", -(-arr.size // 8), read=False)  # 4-bit counts, 8 per word
        if self._steps_left is not None and steps > self._steps_left:
            done = self._steps_left
            self.clock_s += done * core.dt
            self._connected = False
            self._steps_left = None
            raise DeviceError(
                f"board disconnected during the run, after step {done} of {steps}",
                where=self.serial,
                fix="the results and the board's memory are lost: plug the board back in "
                "(MockXyloDevice.reconnect() on the mock), apply the configuration "
                "again and rerun",
            )
        before = core.state["Spikes"]
        out, state, rec = core.evolve(arr, record=True)  # validates x (SimulationError)
        if self._steps_left is not None:
            self._steps_left -= steps
        self.clock_s += steps * core.dt  # the board runs in real time
        counts = _synop_counts(self._core_config, arr, before, rec["Spikes"])
        n_words = -(-out.size // 32) + (sum(v.size for v in rec.values()) // 2 if record else 0)
        self._transfer("read the results", n_words, read=True)
        return out, state, (rec if record else {}), _stats(self._core_config, counts, CostModel())
