"""Hypothesis strategies of bad input, shared by the validation tests of every entry point.

Each strategy draws values a hostile or careless caller would pass: NaN, infinities, subnormal and
huge floats, negative numbers and zero, fractions where integers are expected, wrong types (complex,
strings, None, bool), arrays of the wrong rank, empty and ragged nesting. The tests assert that an
entry point answers with a :class:`~pondlib.errors.PondError` naming the field or the value, never
another exception and never a silent result. :func:`assert_trees_close` is the gradient comparison
shared by the adjoint tests.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from pondlib.errors import PondError

__all__ = [
    "NON_FINITE",
    "bad_positive_floats",
    "bad_counts",
    "bad_scalars",
    "bad_types",
    "non_finite_arrays",
    "wrong_dtype_arrays",
    "ragged_lists",
    "assert_pond_error",
    "assert_trees_close",
    "byte_mutations",
    "assert_pond_error_or",
]

#: NaN and both infinities.
NON_FINITE = (float("nan"), float("inf"), float("-inf"))


def bad_types() -> st.SearchStrategy:
    """Values that are not numbers at all."""
    return st.one_of(
        st.text(max_size=5),
        st.none(),
        st.booleans(),
        st.complex_numbers(allow_nan=False, allow_infinity=False).filter(lambda z: z.imag != 0),
        st.lists(st.integers(), max_size=2),
        st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
    )


def bad_positive_floats() -> st.SearchStrategy:
    """Values refused where a finite float > 0 (a time constant, dt, a threshold) is expected."""
    return st.one_of(
        st.sampled_from(NON_FINITE),
        st.floats(max_value=0.0, allow_nan=False, allow_infinity=False),
        bad_types(),
    )


def bad_counts() -> st.SearchStrategy:
    """Values refused where a positive integer (a size, a count) is expected."""
    return st.one_of(
        st.integers(max_value=0),
        st.floats(allow_nan=True, allow_infinity=True).filter(
            lambda v: not (np.isfinite(v) and float(v).is_integer() and v > 0)
        ),
        bad_types(),
    )


def bad_scalars() -> st.SearchStrategy:
    """Floats at the edges: non-finite, subnormal and huge."""
    return st.one_of(
        st.sampled_from(NON_FINITE),
        st.sampled_from([5e-324, 1e-320, -1e-310, 1e300, -1e300, 3.5e38, -3.5e38]),
    )


def non_finite_arrays(shape: tuple[int, ...]) -> st.SearchStrategy:
    """Float arrays of ``shape`` with at least one NaN or infinity at a drawn position."""

    @st.composite
    def _draw(draw):
        arr = np.zeros(shape, dtype=np.float64)
        flat = draw(st.integers(0, arr.size - 1))
        arr.reshape(-1)[flat] = draw(st.sampled_from(NON_FINITE))
        return arr

    return _draw()


def wrong_dtype_arrays(shape: tuple[int, ...]) -> st.SearchStrategy:
    """Arrays of ``shape`` holding complex numbers, strings or Python objects."""
    return st.sampled_from(
        [
            np.full(shape, 1 + 2j),
            np.full(shape, "a"),
            np.full(shape, None, dtype=object),
        ]
    )


def ragged_lists() -> st.SearchStrategy:
    """Nested lists whose rows differ in length."""
    return st.lists(st.integers(1, 4), min_size=2, max_size=4, unique=True).map(lambda ns: [[0.0] * n for n in ns])


def assert_pond_error(fn, *args, match: str | None = None, error: type[PondError] = PondError, **kwargs) -> PondError:
    """Call ``fn`` and require a :class:`PondError` (subclass ``error``) whose message contains ``match``."""
    try:
        fn(*args, **kwargs)
    except PondError as err:
        assert isinstance(err, error), f"expected {error.__name__}, got {type(err).__name__}: {err}"
        if match is not None:
            assert match.lower() in str(err).lower(), f"{match!r} not in message: {err}"
        return err
    raise AssertionError(f"{getattr(fn, '__name__', fn)} accepted bad input {args} {kwargs}")


def assert_trees_close(ref, got, rtol: float) -> None:
    """Two pytrees of gradients: every leaf of ``got`` within ``rtol`` of the largest entry of the same
    leaf of ``ref``. A leaf that is negligible next to the others (e.g. the initial membrane's gradient
    after many decays, 1e-20 next to 1e2) is compared at 1e-6 of the largest gradient instead: there
    only rounding of the other terms remains. Some gradient must be non-zero."""
    import jax

    ref_leaves = jax.tree_util.tree_leaves_with_path(ref)
    got_leaves = jax.tree_util.tree_leaves(got)
    assert len(ref_leaves) == len(got_leaves)
    overall = max(float(np.max(np.abs(np.asarray(a)))) for _, a in ref_leaves)
    assert overall > 0
    for (path, a), b in zip(ref_leaves, got_leaves):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, jax.tree_util.keystr(path)
        scale = max(float(np.max(np.abs(a))), 1e-6 * overall, 1e-30)
        err = float(np.max(np.abs(a - b))) / scale
        assert err <= rtol, f"{jax.tree_util.keystr(path)}: relative error {err:.3g}"


def byte_mutations(data: bytes, max_edits: int = 4) -> st.SearchStrategy:
    """``data`` (a real file's bytes) mutated byte by byte: up to ``max_edits`` bytes overwritten, deleted or
    inserted, or the file truncated; structured fuzzing of loaders (each result must load or be refused)."""
    n = len(data)
    edit = st.tuples(st.sampled_from(("set", "delete", "insert", "flip")), st.integers(0, n - 1), st.integers(0, 255))

    def apply(edits: list, cut: int | None) -> bytes:
        out = bytearray(data)
        for kind, pos, value in edits:
            pos = min(pos, len(out) - 1)
            if pos < 0:
                break
            if kind == "set":
                out[pos] = value
            elif kind == "delete":
                del out[pos]
            elif kind == "insert":
                out.insert(pos, value)
            else:
                out[pos] ^= 1 << (value % 8)
        return bytes(out if cut is None else out[:cut])

    return st.builds(apply, st.lists(edit, min_size=1, max_size=max_edits), st.none() | st.integers(0, n))


def assert_pond_error_or(fn, check, *args, **kwargs) -> None:
    """Call ``fn``: it must either raise a :class:`PondError` or return a value for which ``check`` holds
    (``check`` asserts what an accepted input gives: the right type, an equal object)."""
    try:
        value = fn(*args, **kwargs)
    except PondError:
        return
    check(value)
