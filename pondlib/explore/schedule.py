r"""Schedules: per block, a time batch ``B`` (dividing ``T``) and layer fusion on or off.

A :class:`BlockSchedule` is STEMS's choice for one block:

* time: ``B`` steps per computation node. ``B = 1`` is ST (single time step), ``B = T`` is TB (time
  batched), anything between is a partial batch (``4T``). The block then runs in ``T / B`` *time
  chunks*, and every state tile that does not stay on chip is read and written once per chunk.
* depth: LBL (``fused=False``: one node per layer and chunk) or LF (``fused=True``: one node per output
  column and layer, the block's layers interleaved depth-first).

Consecutive blocks with the same ``(B, fused)`` form one *group* (a fused stack, or one layer-by-layer
run); node order inside a group is time chunk, then output column (LF), then the deepest ready layer:
ST-LBL = for t: for layer; TB-LBL = for layer: all T; TB-LF = for column: for layer: all T.

Spaces: :func:`hybrid_space` is STEMS's one-split-point exploration, ``(N + 1)^2`` schedules for ``N``
blocks (the first or last ``i`` blocks time batched, the first or last ``j`` fused);
:func:`uniform_space` is every ``B`` in ``{1, 2, 4, ..., T}`` dividing ``T``, times {LBL, LF}.

Example:
    >>> s = Schedule.uniform(7, batch=16, fused=True)
    >>> s.label(16)
    'TB-LF'
    >>> h = Schedule.hybrid(7, 16, time_batched=7, fused=2)
    >>> h.label(16), h.name
    ('TB-LF x2 | TB-LBL x5', 'TB 7 in, LF 2 in')
    >>> len(hybrid_space(7, 16)), len(uniform_space(7, 16))
    (64, 10)
    >>> Schedule.uniform(7, batch=3, fused=False).check(7, 16)
    Traceback (most recent call last):
    ...
    pondlib.errors.ConfigError: Schedule '3T-LBL': 7 configuration problem(s): ...
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pondlib.explore._checks import Problems
from pondlib.explore.workload import MAX_SIZE

__all__ = [
    "BlockSchedule",
    "Schedule",
    "hybrid_space",
    "uniform_space",
    "SPLIT_SIDES",
    "MAX_BLOCKS",
    "MAX_SCHEDULES",
]

#: Where a one-split-point hybrid starts counting blocks: from the network ``"input"`` or ``"output"``.
SPLIT_SIDES = ("input", "output")

#: Most blocks a schedule may have (bounded before any tuple is built: a schedule of 2^31 blocks would
#: take gigabytes before any check could run).
MAX_BLOCKS = 4096

#: Most schedules a generated space may hold: ``(N + 1)^2 <= MAX_SCHEDULES`` bounds a hybrid space to
#: ``N <= 99`` blocks (at milliseconds per schedule, about a minute of evaluation).
MAX_SCHEDULES = 10_000

#: Most problems one error lists (the rest are counted): no error message grows with its input.
_MAX_LISTED = 8


@dataclass(frozen=True)
class BlockSchedule:
    """The schedule of one block: ``batch`` steps per node (``B``) and layer fusion (``fused``)."""

    batch: int = 1
    fused: bool = False

    def __post_init__(self) -> None:
        p = Problems("BlockSchedule")
        b = p.integer(self.batch, "batch", lo=1, hi=MAX_SIZE)
        f = p.flag(self.fused, "fused")
        p.raise_if_any("pass batch as a whole number of steps >= 1 dividing T, fused as True or False")
        object.__setattr__(self, "batch", b)
        object.__setattr__(self, "fused", f)

    def label(self, time_steps: int) -> str:
        """``ST-LBL``, ``TB-LF``, ``4T-LBL`` ... (``TB`` when ``batch == time_steps``)."""
        t = "ST" if self.batch == 1 else ("TB" if self.batch == time_steps else f"{self.batch}T")
        return f"{t}-{'LF' if self.fused else 'LBL'}"


@dataclass(frozen=True)
class Schedule:
    """One :class:`BlockSchedule` per block, and an optional name.

    :meth:`check` validates it against a workload's ``N`` blocks and ``T`` steps (every ``B`` must
    divide ``T``); :func:`pondlib.explore.evaluate` calls it.
    """

    blocks: tuple[BlockSchedule, ...]
    name: str = ""

    def __post_init__(self) -> None:
        p = Problems("Schedule")
        blocks = tuple(self.blocks) if isinstance(self.blocks, list) else self.blocks
        if not isinstance(blocks, tuple) or not blocks:
            p.add(f"blocks: got {type(blocks).__name__}, expected a non-empty tuple of BlockSchedule")
        elif len(blocks) > MAX_BLOCKS:
            p.add(f"blocks: got {len(blocks)} block schedules, expected at most {MAX_BLOCKS}")
        else:
            bad = [i for i, b in enumerate(blocks) if not isinstance(b, BlockSchedule)]
            for i in bad[:_MAX_LISTED]:
                p.instance(blocks[i], f"blocks[{i}]", BlockSchedule)
            if len(bad) > _MAX_LISTED:
                p.add(f"blocks: {len(bad) - _MAX_LISTED} more entries are not BlockSchedule")
        p.instance(self.name, "name", str)
        p.raise_if_any("build a schedule with Schedule.uniform, Schedule.hybrid or a tuple of BlockSchedule")
        object.__setattr__(self, "blocks", blocks)

    def check(self, n_blocks: int, time_steps: int) -> None:
        """Raise one :class:`~pondlib.errors.ConfigError` listing every block whose ``B`` does not divide
        ``time_steps`` or exceeds it, and a block count other than ``n_blocks``."""
        p = Problems(f"Schedule {self.name or self.label(time_steps)!r}")
        if len(self.blocks) != n_blocks:
            p.add(f"blocks: got {len(self.blocks)} block schedules, expected {n_blocks} (one per workload block)")
        bad = [i for i, b in enumerate(self.blocks) if b.batch > time_steps or time_steps % b.batch]
        if bad:
            choices = _divisors_text(time_steps)
        for i in bad[:_MAX_LISTED]:
            p.add(
                f"block {i} batch: got B = {self.blocks[i].batch}, expected a divisor of T = {time_steps}. "
                f"Fix: use one of {choices}"
            )
        if len(bad) > _MAX_LISTED:
            p.add(f"{len(bad) - _MAX_LISTED} more blocks have a batch that does not divide T = {time_steps}")
        p.raise_if_any("choose per block a batch B dividing T")

    def label(self, time_steps: int) -> str:
        """Run-length label: ``'TB-LF x2 | TB-LBL x5'`` (one part per run of equal block schedules)."""
        parts: list[str] = []
        runs: list[list] = []
        for b in self.blocks:
            lab = b.label(time_steps)
            if runs and runs[-1][0] == lab:
                runs[-1][1] += 1
            else:
                runs.append([lab, 1])
        for lab, n in runs:
            parts.append(lab if len(runs) == 1 else f"{lab} x{n}")
        return " | ".join(parts)

    def compact(self, time_steps: int) -> str:
        """A short label without spaces inside a run: per run of equal blocks, the time batch (``S`` one
        step, ``T`` all ``T`` steps, ``b4`` four steps), the depth (``F`` layer-fused, ``L`` layer by layer)
        and the number of blocks: ``'TF2 TL5'`` is ``'TB-LF x2 | TB-LBL x5'``.

        Example:
            >>> Schedule.hybrid(7, 16, 7, 2).compact(16), Schedule.uniform(3, 4).compact(16)
            ('TF2 TL5', 'b4L3')
        """
        runs: list[list] = []
        for b in self.blocks:
            t = "S" if b.batch == 1 else ("T" if b.batch == time_steps else f"b{b.batch}")
            code = t + ("F" if b.fused else "L")
            if runs and runs[-1][0] == code:
                runs[-1][1] += 1
            else:
                runs.append([code, 1])
        return " ".join(f"{code}{n}" for code, n in runs)

    @classmethod
    def uniform(cls, n_blocks: int, batch: int = 1, fused: bool = False, name: str = "") -> Schedule:
        """Every block with the same ``batch`` and ``fused``."""
        p = Problems("Schedule.uniform")
        n = p.integer(n_blocks, "n_blocks", lo=1, hi=MAX_BLOCKS)
        p.raise_if_any("pass the number of blocks of the workload")
        return cls((BlockSchedule(batch, fused),) * n, name)

    @classmethod
    def hybrid(
        cls,
        n_blocks: int,
        time_steps: int,
        time_batched: int,
        fused: int,
        *,
        tb_from: str = "input",
        lf_from: str = "input",
    ) -> Schedule:
        """STEMS's one-split-point hybrid: ``time_batched`` blocks are TB (``B = T``, the others ST) and
        ``fused`` blocks are LF (the others LBL), each counted from the network ``input`` or ``output``.
        """
        p = Problems("Schedule.hybrid")
        n = p.integer(n_blocks, "n_blocks", lo=1, hi=MAX_BLOCKS)
        t = p.integer(time_steps, "time_steps", lo=1, hi=MAX_SIZE)
        hi = n if n is not None else None
        i = p.integer(time_batched, "time_batched", lo=0, hi=hi)
        j = p.integer(fused, "fused", lo=0, hi=hi)
        tb = p.choice(tb_from, "tb_from", SPLIT_SIDES)
        lf = p.choice(lf_from, "lf_from", SPLIT_SIDES)
        p.raise_if_any("count blocks between 0 and N from the 'input' or 'output' side")
        blocks = []
        for b in range(n):
            is_tb = b < i if tb == "input" else b >= n - i
            is_lf = b < j if lf == "input" else b >= n - j
            blocks.append(BlockSchedule(t if is_tb else 1, is_lf))
        name = f"TB {i} {'in' if tb == 'input' else 'out'}, LF {j} {'in' if lf == 'input' else 'out'}"
        return cls(tuple(blocks), name)


def _divisors_text(t: int) -> str:
    """The divisors of ``t`` as text, at most :data:`_MAX_LISTED` of them (the smallest and the largest).

    Trial division up to ``sqrt(t)``: at most 46,341 steps for ``t <= MAX_SIZE``, never a loop over ``t``.

    Example:
        >>> _divisors_text(16), _divisors_text(2**31 - 1), _divisors_text(720720)
        ('[1, 2, 4, 8, 16]', '[1, 2147483647]', '[1, 2, 3, 4, ..., 240240, 360360, 720720] (240 divisors)')
    """
    t = min(int(t), MAX_SIZE)
    small = [d for d in range(1, math.isqrt(t) + 1) if t % d == 0]
    divs = small + [t // d for d in reversed(small) if d * d != t]
    if len(divs) <= _MAX_LISTED:
        return str(divs)
    half = _MAX_LISTED // 2
    head = ", ".join(str(d) for d in divs[:half])
    tail = ", ".join(str(d) for d in divs[-half + 1 :])
    return f"[{head}, ..., {tail}] ({len(divs)} divisors)"


def hybrid_space(n_blocks: int, time_steps: int, *, tb_from: str = "input", lf_from: str = "input") -> list[Schedule]:
    """The ``(N + 1)^2`` one-split-point hybrids (:meth:`Schedule.hybrid` for every ``i, j`` in ``0..N``)."""
    p = Problems("hybrid_space")
    n = p.integer(n_blocks, "n_blocks", lo=1, hi=math.isqrt(MAX_SCHEDULES) - 1)
    p.raise_if_any(
        f"pass the number of blocks of the workload; (N + 1)^2 hybrids must stay <= {MAX_SCHEDULES}: cut the "
        "network into fewer, larger blocks"
    )
    return [
        Schedule.hybrid(n, time_steps, i, j, tb_from=tb_from, lf_from=lf_from)
        for i in range(n + 1)
        for j in range(n + 1)
    ]


def uniform_space(n_blocks: int, time_steps: int, batches: Sequence[int] | None = None) -> list[Schedule]:
    """Uniform schedules: every ``B`` of ``batches`` (default ``{1, 2, 4, ..., T}`` dividing ``T``) x {LBL, LF}."""
    p = Problems("uniform_space")
    n = p.integer(n_blocks, "n_blocks", lo=1, hi=MAX_BLOCKS)
    t = p.integer(time_steps, "time_steps", lo=1, hi=MAX_SIZE)
    p.raise_if_any("pass the number of blocks and of time steps of the workload")
    if batches is not None and (isinstance(batches, (str, bytes)) or not isinstance(batches, Sequence) or not batches):
        p.add(f"batches: got a {type(batches).__name__}, expected a non-empty sequence of time batches dividing T")
        p.raise_if_any("pass e.g. [1, 2, 4]")
    if batches is not None and 2 * len(batches) > MAX_SCHEDULES:
        p.add(f"batches: got {len(batches)}, expected at most {MAX_SCHEDULES // 2} (two schedules each)")
        p.raise_if_any("pass fewer time batches")
    if batches is None:
        batches = sorted({b for b in (2**e for e in range(t.bit_length())) if t % b == 0} | {t})
    out = []
    for b in batches:
        for fused in (False, True):
            s = Schedule.uniform(n, b, fused)
            out.append(Schedule(s.blocks, s.label(t)))
    return out
