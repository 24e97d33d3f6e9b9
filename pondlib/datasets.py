r"""Small event data sets for examples, tests and the ``pond demo`` (no download).

:func:`load_digits_events` turns scikit-learn's bundled handwritten digits (1797 images of 8 x 8 pixels,
intensities 0..16, 10 classes) into input event counts for a 16-channel chip such as Xylo.

Encoding (a row / column scan). For an image :math:`P \in \{0..16\}^{8 \times 8}` (row ``r``, column
``c``) the counts are

.. math::

    q(v) = \mathrm{round}(15\, v / 16) \in \{0, \dots, 15\}

and for scan step :math:`t \in \{0..7\}`

.. math::

    x[t, j] = q(P[t, j]), \qquad x[t, 8 + j] = q(P[j, t]), \qquad j = 0..7

so channels 0-7 carry row ``t`` and channels 8-15 carry column ``t`` (every pixel is seen twice, once in
each direction), followed by ``T - 8`` silent steps (:math:`x[t] = 0` for ``t >= 8``) that let delayed
layers respond (on Xylo every hidden -> output hop costs one step). Counts never exceed 15, the
chip's input clip, so the float model and the chip receive exactly the same input. One step is one
``dt`` of the network (1 ms in the demo).

The train/test split is stratified (the same class proportions in both parts) and fixed by ``seed``.

Example:
    >>> data = load_digits_events(T=10)
    >>> data.x_train.shape, data.x_test.shape, data.x_train.dtype
    ((1347, 10, 16), (450, 10, 16), dtype('int32'))
    >>> int(data.x_train.max()), int(data.x_train[:, 8:].sum()), data.n_classes
    (15, 0, 10)
    >>> sorted(set(data.y_test.tolist())) == list(range(10))
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pondlib.errors import PondError
from pondlib.validate import as_float_array, check_float, check_int, check_shape

__all__ = ["EventDataset", "load_digits_events", "encode_digits"]

_SCAN_STEPS = 8  # an 8 x 8 image is scanned in 8 steps
_MAX_COUNT = 15  # Xylo input counter: at most 15 events per channel per step
_MAX_INTENSITY = 16  # scikit-learn digits pixels are 0..16
_MAX_STEPS = 10**6  # more steps than this is a mistake (and N x T x 16 int32 would not fit)


@dataclass(frozen=True)
class EventDataset:
    """A classification data set of input event counts.

    Attributes:
        x_train: (N_train, T, C) int32 event counts per channel per step (0..15).
        y_train: (N_train,) int64 class labels.
        x_test: (N_test, T, C) int32 event counts.
        y_test: (N_test,) int64 class labels.
        description: how the data were made (source, encoding, split), one paragraph.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    description: str

    @property
    def n_classes(self) -> int:
        """Number of classes (largest label + 1)."""
        return int(max(self.y_train.max(), self.y_test.max())) + 1

    @property
    def n_channels(self) -> int:
        """Input channels ``C``."""
        return int(self.x_train.shape[-1])

    @property
    def n_steps(self) -> int:
        """Time steps ``T`` per sample."""
        return int(self.x_train.shape[1])

    def with_silence(self, ticks: int) -> EventDataset:
        """A copy whose samples end with ``ticks`` more steps without events: (N, T + ticks, C).

        For a device whose output lags its input (SpiNNaker2: ``Specification.latency_ticks``), train
        and test on the same longer samples the device runs (see
        :func:`pondlib.devices.core.append_silence`).

        Example:
            >>> d = load_digits_events(T=12)
            >>> d.with_silence(2).n_steps, bool(d.with_silence(2).x_test[:, 12:].any())
            (14, False)
        """
        from pondlib.devices.core.inputs import append_silence

        x_train, x_test = append_silence(self.x_train, ticks), append_silence(self.x_test, ticks)
        note = f" Then {int(ticks)} silent step(s) appended (the device's latency)." if ticks else ""
        return EventDataset(x_train, self.y_train, x_test, self.y_test, self.description + note)


def encode_digits(images: np.ndarray, T: int = 12) -> np.ndarray:
    """Row / column scan of 8 x 8 images (intensities 0..16) into (N, T, 16) event counts.

    See the module docstring for the equations.

    Args:
        images: (N, 8, 8) intensities in 0..16.
        T: total steps, at least 8 (8 scan steps then ``T - 8`` silent steps).

    Returns:
        (N, T, 16) int32 counts in 0..15.

    Raises:
        PondError: ``images`` not a non-empty real (N, 8, 8) array of finite intensities in 0..16 (NaN,
            complex, strings, ragged lists are refused), or ``T`` not a whole number in 8..10^6.

    Example:
        >>> img = np.zeros((1, 8, 8)); img[0, 2, 5] = 16
        >>> x = encode_digits(img, T=9)
        >>> x.shape, int(x[0, 2, 5]), int(x[0, 5, 8 + 2]), int(x.sum())
        ((1, 9, 16), 15, 15, 30)
    """
    where = "encode_digits"
    T = check_int(
        T,
        "number of steps T",
        lo=_SCAN_STEPS,
        hi=_MAX_STEPS,
        where=where,
        fix=f"use T >= {_SCAN_STEPS} (one step per row)",
    )
    arr = as_float_array(
        images,
        "digit intensities",
        lo=0.0,
        hi=float(_MAX_INTENSITY),
        where=where,
        fix="pass scikit-learn digits images (load_digits().images)",
    )
    images = check_shape(arr, "digit images", (None, 8, 8), where=where, fix="pass images of 8 x 8 pixels")
    counts = np.rint(images * (_MAX_COUNT / _MAX_INTENSITY)).astype(np.int32)
    x = np.zeros((images.shape[0], int(T), 16), dtype=np.int32)
    x[:, :_SCAN_STEPS, :8] = counts  # step t: row t
    x[:, :_SCAN_STEPS, 8:] = np.swapaxes(counts, 1, 2)  # step t: column t
    return x


def _stratified_split(y: np.ndarray, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, test): per class, a seeded shuffle and the first ``round(n * f)`` go to test."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        n_test = int(round(len(idx) * test_fraction))
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    train_idx, test_idx = np.concatenate(train), np.concatenate(test)
    # one more seeded shuffle so that the classes are interleaved (mini-batches see every class)
    return rng.permutation(train_idx), rng.permutation(test_idx)


def load_digits_events(*, T: int = 12, seed: int = 0, test_fraction: float = 0.25) -> EventDataset:
    """The scikit-learn digits as event counts (row/column scan, module docstring), split train/test.

    Args:
        T: steps per sample (>= 8): 8 scan steps then ``T - 8`` silent steps.
        seed: seed of the stratified split (same seed, same split).
        test_fraction: fraction of each class put into the test set, in (0, 1).

    Returns:
        An :class:`EventDataset` (x arrays (N, T, 16) int32 in 0..15; 1797 samples in all).

    Raises:
        PondError: ``T`` not a whole number in 8..10^6, ``seed`` not a whole number >= 0, or
            ``test_fraction`` not a finite number in (0, 1) that leaves samples in both splits.
    """
    where = "load_digits_events"
    T = check_int(T, "number of steps T", lo=_SCAN_STEPS, hi=_MAX_STEPS, where=where, fix=f"use T >= {_SCAN_STEPS}")
    seed = check_int(seed, "seed", lo=0, where=where, fix="pass a whole number >= 0, e.g. seed=0")
    test_fraction = check_float(
        test_fraction,
        "test_fraction",
        lo=0.0,
        hi=1.0,
        lo_open=True,
        hi_open=True,
        where=where,
        fix="pass e.g. test_fraction=0.25",
    )
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:  # pragma: no cover - scikit-learn is a dependency
        raise ImportError("load_digits_events needs scikit-learn: pip install scikit-learn") from exc
    digits = load_digits()
    x = encode_digits(digits.images, T)
    y = np.asarray(digits.target, dtype=np.int64)
    tr, te = _stratified_split(y, test_fraction, seed)
    if len(tr) == 0 or len(te) == 0:
        raise PondError(
            "test_fraction",
            value=test_fraction,
            limit="a fraction leaving samples in both the train and the test split",
            where=where,
            fix="pass a fraction between about 0.01 and 0.99",
        )
    description = (
        f"scikit-learn digits (8x8, intensities 0..16, 10 classes), {len(y)} samples; "
        f"row/column scan into 16 channels: step t<8 carries row t (channels 0-7) and column t "
        f"(channels 8-15), counts round(15 v / 16) in 0..15, then {T - _SCAN_STEPS} silent steps "
        f"(T={T}); stratified split seed={seed}: {len(tr)} train / {len(te)} test"
    )
    return EventDataset(x[tr], y[tr], x[te], y[te], description)
