"""Tests of pondlib.datasets: the digits event encoding and the stratified split."""

import numpy as np
import pytest
from sklearn.datasets import load_digits

from pondlib.datasets import EventDataset, encode_digits, load_digits_events
from pondlib.errors import PondError


@pytest.fixture(scope="module")
def data() -> EventDataset:
    return load_digits_events(T=12, seed=0)


def test_shapes_dtypes_and_ranges(data):
    assert data.x_train.shape == (1347, 12, 16) and data.x_test.shape == (450, 12, 16)
    assert data.y_train.shape == (1347,) and data.y_test.shape == (450,)
    for x in (data.x_train, data.x_test):
        assert x.dtype.kind == "i"
        assert x.min() == 0 and x.max() == 15  # never above the Xylo input clip
    assert data.n_classes == 10 and data.n_channels == 16 and data.n_steps == 12
    assert "row/column scan" in data.description and "1347 train / 450 test" in data.description


def test_rows_and_columns_carry_the_same_image(data):
    x = np.concatenate([data.x_train, data.x_test])
    rows = x[:, :8, :8]  # rows[n, t, j] = q(P[t, j])
    cols = x[:, :8, 8:]  # cols[n, t, j] = q(P[j, t])
    np.testing.assert_array_equal(cols, np.swapaxes(rows, 1, 2))
    assert not x[:, 8:].any()  # the trailing steps are silent


def test_encoding_matches_the_equations():
    img = np.arange(64, dtype=float).reshape(1, 8, 8) % 17  # every intensity 0..16
    x = encode_digits(img, T=10)
    q = np.rint(img[0] * 15 / 16).astype(int)
    for t in range(8):
        np.testing.assert_array_equal(x[0, t, :8], q[t, :])
        np.testing.assert_array_equal(x[0, t, 8:], q[:, t])
    assert x.shape == (1, 10, 16) and x[0, 8:].sum() == 0
    assert int(x.max()) == 15 and q[1, 0] == 8  # 15 * 8 / 16 = 7.5 -> 8 (half to even)


def test_split_is_a_stratified_partition(data):
    digits = load_digits()
    counts = np.bincount(digits.target, minlength=10)
    test_counts = np.bincount(data.y_test, minlength=10)
    np.testing.assert_array_equal(test_counts, np.rint(counts * 0.25).astype(int))
    np.testing.assert_array_equal(test_counts + np.bincount(data.y_train, minlength=10), counts)
    # the union of train and test is the whole data set (as a multiset of (image, label))
    every = encode_digits(digits.images, 12).reshape(-1, 12 * 16)
    ours = np.concatenate([data.x_train, data.x_test]).reshape(-1, 12 * 16)
    key = lambda a, y: sorted(map(bytes, np.concatenate([a, y[:, None]], axis=1).astype(np.int16)))  # noqa: E731
    assert key(every, digits.target) == key(ours, np.concatenate([data.y_train, data.y_test]))
    # both parts mix the classes (mini-batches see every class)
    assert len(set(data.y_train[:64].tolist())) == 10


def test_split_is_seeded():
    a, b, c = (load_digits_events(T=8, seed=s) for s in (3, 3, 4))
    np.testing.assert_array_equal(a.x_test, b.x_test)
    np.testing.assert_array_equal(a.y_train, b.y_train)
    assert not np.array_equal(a.y_train, c.y_train)


def test_test_fraction():
    d = load_digits_events(T=8, test_fraction=0.5)
    assert abs(len(d.y_test) - 1797 / 2) <= 10


@pytest.mark.parametrize(
    "kwargs, match",
    [({"T": 7}, "T"), ({"test_fraction": 0.0}, "test_fraction"), ({"test_fraction": 1.5}, "test_fraction")],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(PondError, match=match):
        load_digits_events(**kwargs)


def test_encode_rejects_bad_images():
    with pytest.raises(PondError, match="shape"):
        encode_digits(np.zeros((2, 4, 4)))
    with pytest.raises(PondError, match="intensities"):
        encode_digits(np.full((1, 8, 8), 17.0))


# -- issue #13: every argument is validated ---------------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.strategies import (  # noqa: E402
    assert_pond_error,
    bad_types,
    non_finite_arrays,
    ragged_lists,
    wrong_dtype_arrays,
)

_SETTINGS = settings(max_examples=20, deadline=None)


@_SETTINGS
@given(images=st.one_of(non_finite_arrays((2, 8, 8)), wrong_dtype_arrays((2, 8, 8)), ragged_lists()))
def test_encode_refuses_bad_arrays(images):
    assert_pond_error(encode_digits, images)


@pytest.mark.parametrize(
    "images, match",
    [
        (np.zeros((0, 8, 8)), "empty"),
        (np.zeros((8, 8)), "shape"),
        (np.full((1, 8, 8), -1.0), "intensities"),
        (None, "intensities"),
        ("digits", "intensities"),
    ],
)
def test_encode_refuses_bad_images(images, match):
    assert_pond_error(encode_digits, images, match=match)


@_SETTINGS
@given(T=st.one_of(st.integers(max_value=7), st.integers(min_value=10**6 + 1), bad_types(), st.just(8.5)))
def test_bad_T(T):
    assert_pond_error(encode_digits, np.zeros((1, 8, 8)), T, match="T")
    assert_pond_error(load_digits_events, T=T, match="T")


@_SETTINGS
@given(
    kwargs=st.one_of(
        st.builds(lambda v: {"seed": v}, st.one_of(st.integers(max_value=-1), bad_types(), st.just(1.5))),
        st.builds(
            lambda v: {"test_fraction": v},
            st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0), bad_types(), st.just(1e-9)),
        ),
    )
)
def test_bad_split_arguments(kwargs):
    (name,) = kwargs
    assert_pond_error(load_digits_events, T=8, match=name, **kwargs)


def test_integral_float_T_is_a_whole_number():
    assert encode_digits(np.zeros((1, 8, 8)), 9.0).shape == (1, 9, 16)


def test_with_silence_appends_silent_steps_to_both_splits(data):
    longer = data.with_silence(3)
    assert longer.n_steps == 15 and longer.x_test.shape == (450, 15, 16)
    np.testing.assert_array_equal(longer.x_train[:, :12], data.x_train)
    np.testing.assert_array_equal(longer.x_test[:, :12], data.x_test)
    assert not longer.x_train[:, 12:].any() and not longer.x_test[:, 12:].any()
    np.testing.assert_array_equal(longer.y_test, data.y_test)
    assert "3 silent step(s) appended" in longer.description
    assert data.with_silence(0).n_steps == 12


@pytest.mark.parametrize("ticks", [-1, 2.5, "1", None, True])
def test_with_silence_refuses_bad_tick_counts(data, ticks):
    with pytest.raises(PondError, match="ticks"):
        data.with_silence(ticks)
