"""Bad input to :mod:`pondlib.training` (issue #13): every entry point names the offending argument.

NaN/inf inputs, wrong ranks, empty batches, complex or string dtypes, ragged lists, fractional, negative
or out-of-range labels, label counts that differ from the batch, bad epochs/batch sizes/optimizers/keys
all raise a :class:`~pondlib.errors.PondError`; none runs and reports a number. Documented tolerance:
``predict``/``evaluate`` accept a ``batch_size`` above N (one batch of N).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.errors import PondError
from pondlib.training import accuracy, evaluate, firing_rate_regularizer, fit, predict, readout_counts
from tests.strategies import (
    NON_FINITE,
    assert_pond_error,
    bad_counts,
    bad_types,
    non_finite_arrays,
    ragged_lists,
    wrong_dtype_arrays,
)

SETTINGS = settings(max_examples=25, deadline=None)


def _net():
    return nn.Sequential(nn.Linear(3, 2, weight=jnp.eye(3)[:, :2] * 2.0), nn.LIF(2))


NET = _net()
X = np.zeros((4, 5, 3))
X[0, :, 0] = X[2, :, 0] = 1
X[1, :, 1] = X[3, :, 1] = 1
Y = np.array([0, 1, 0, 1])


def _fit(x=X, y=Y, **kw):
    kw.setdefault("epochs", 1)
    kw.setdefault("batch_size", 2)
    return fit(NET, (x, y), progress=kw.pop("progress", False), **kw)


def _evaluate(x=X, y=Y, **kw):
    return evaluate(NET, x, y, **kw)


def _predict(x=X, **kw):
    return predict(NET, x, **kw)


def test_valid_input_still_works():
    assert _evaluate() == 1.0
    np.testing.assert_array_equal(_predict(batch_size=3), Y)
    assert _predict(batch_size=100).tolist() == Y.tolist()  # documented: batch_size > N is one batch
    _, hist = _fit(epochs=2)
    assert len(hist["loss"]) == 2 and all(np.isfinite(hist["loss"]))
    assert _evaluate(X.tolist(), Y.tolist()) == 1.0  # nested lists are fine when rectangular


# -- inputs ----------------------------------------------------------------------------------------------
@SETTINGS
@given(x=non_finite_arrays((4, 5, 3)))
def test_non_finite_inputs(x):
    for fn in (_evaluate, _predict, _fit):
        assert_pond_error(fn, x, match="input x")


@SETTINGS
@given(x=wrong_dtype_arrays((4, 5, 3)))
def test_wrong_dtype_inputs(x):
    for fn in (_evaluate, _predict, _fit):
        assert_pond_error(fn, x, match="input x")


@SETTINGS
@given(rows=ragged_lists())
def test_ragged_inputs(rows):
    x = [rows] * 4
    for fn in (_evaluate, _predict, _fit):
        assert_pond_error(fn, x, match="input x")


@pytest.mark.parametrize(
    "x, match",
    [
        (np.zeros((4, 3)), "input shape"),
        (np.zeros((4, 5, 3, 1)), "input shape"),
        (np.zeros(3), "input shape"),
        (np.zeros((0, 5, 3)), "empty"),
        (np.zeros((4, 0, 3)), "empty"),
        (np.zeros((4, 5, 7)), "input channels"),
        (np.full((4, 5, 3), 1e300), "float32"),
        ("abc", "input x"),
        (None, "input x"),
    ],
)
def test_bad_input_shapes(x, match):
    assert_pond_error(_predict, x, match=match)
    assert_pond_error(_evaluate, x, Y if np.ndim(x) and np.shape(x)[0] == 4 else np.array([], int), match=match)
    assert_pond_error(_fit, x, match=match)


def test_nan_input_no_longer_reports_accuracy():
    x = X.copy()
    x[1, 2, 1] = np.nan
    err = assert_pond_error(_evaluate, x, match="input x")
    assert "(1, 2, 1)" in str(err)  # names the position


# -- labels ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "y, match",
    [
        (np.array([0, 1, 0]), "labels"),  # too few
        (np.array([0, 1, 0, 1, 0]), "labels"),  # too many
        (np.array([0.0, 1.0, 0.0, 1.0]), "labels"),  # float dtype, even whole
        (np.array([0.5, 1, 0, 1]), "labels"),  # fractional
        (np.array([0, -1, 0, 1]), "out of range"),  # negative
        (np.array([0, 2, 0, 1]), "out of range"),  # no such output neuron
        (np.array([True, False, True, False]), "labels"),
        (np.array([[0, 1, 0, 1]]), "labels"),
        (np.array(["0", "1", "0", "1"]), "labels"),
        (np.array([0, 1j, 0, 1]), "labels"),
        ([[0], [1, 2], [0], [1]], "labels"),
        (None, "labels"),
    ],
)
def test_bad_labels(y, match):
    assert_pond_error(_evaluate, X, y, match=match)
    assert_pond_error(_fit, X, y, match=match)


@SETTINGS
@given(y=st.lists(st.integers(), min_size=4, max_size=4).filter(lambda v: any(not 0 <= i <= 1 for i in v)))
def test_label_range_property(y):
    y = np.asarray(y, dtype=object)
    try:
        y = y.astype(np.int64)
    except OverflowError:  # beyond int64: still a bad label
        pass
    assert_pond_error(_evaluate, X, y, match="labels")


def test_accuracy_and_readout_validate():
    out = np.zeros((2, 3, 2))
    assert accuracy(out, [0, 0]) == 1.0
    assert_pond_error(accuracy, out, [0, 2], match="out of range")
    assert_pond_error(accuracy, out, [0], match="labels")
    assert_pond_error(accuracy, np.full((2, 3, 2), np.nan), [0, 0], match="output")
    assert_pond_error(accuracy, np.zeros((2, 3)), [0, 0], match="output rank")
    assert_pond_error(readout_counts, "spikes", match="output")
    assert readout_counts(out).shape == (2, 2)


# -- fit arguments ---------------------------------------------------------------------------------------
@SETTINGS
@given(epochs=bad_counts())
def test_bad_epochs(epochs):
    assert_pond_error(_fit, epochs=epochs, match="epochs")


@SETTINGS
@given(batch_size=st.one_of(bad_counts(), st.integers(5, 10**9)))
def test_bad_batch_size(batch_size):
    assert_pond_error(_fit, batch_size=batch_size, match="batch_size")


@SETTINGS
@given(batch_size=bad_counts())
def test_bad_predict_batch_size(batch_size):
    assert_pond_error(_predict, batch_size=batch_size, match="batch_size")
    assert_pond_error(_evaluate, batch_size=batch_size, match="batch_size")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"optimizer": 1e-3}, "optimizer"),  # a learning rate is not an optimizer
        ({"optimizer": "adam"}, "optimizer"),
        ({"key": 3}, "key"),
        ({"key": "seed"}, "key"),
        ({"key": np.zeros(5)}, "key"),
        ({"frozen": "tau_mem"}, "frozen"),
        ({"frozen": (1, 2)}, "frozen"),
        ({"progress": "no"}, "progress"),
        ({"loss": "hinge"}, "loss"),
        ({"loss": 3}, "loss"),
    ],
)
def test_bad_fit_options(kwargs, match):
    assert_pond_error(_fit, match=match, **kwargs)


@SETTINGS
@given(net=bad_types())
def test_bad_network(net):
    assert_pond_error(predict, net, X, match="net")
    assert_pond_error(evaluate, net, X, Y, match="net")
    assert_pond_error(fit, net, (X, Y), progress=False, match="net")


def test_learning_rate_goes_into_the_optimizer():
    import optax

    for lr in NON_FINITE:
        with pytest.raises(PondError, match="training loss"):
            _fit(optimizer=optax.sgd(lr), loss=lambda o, r, y, lr=lr: jnp.sum(o) * 0 + jnp.asarray(lr))


@SETTINGS
@given(value=st.one_of(bad_types(), st.sampled_from(NON_FINITE), st.floats(max_value=-1e-9)))
def test_regularizer_arguments(value):
    rec = {"1_LIF/spikes": jnp.ones((1, 2, 2))}
    assert_pond_error(firing_rate_regularizer, rec, value, match="target")
    assert_pond_error(firing_rate_regularizer, rec, 0.1, weight=value, match="weight")


def test_regularizer_still_traces():
    rec = {"1_LIF/spikes": jnp.ones((1, 2, 2))}
    assert float(jax.jit(lambda t: firing_rate_regularizer(rec, t))(0.5)) == pytest.approx(0.25)
