"""A small float MLP on scikit-learn's digits (64 -> 64 -> 32 -> 10, ReLU), trained with numpy Adam.

Self-contained and deterministic (a few seconds): used by the accuracy test and mirrors the tutorial.
Hidden sizes are multiples of 16 (the Siracusa GEMM output-chunk rule); 10 outputs < 16 are allowed.
"""

from __future__ import annotations

import numpy as np

SIZES = (64, 64, 32, 10)


def load_digits_split(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_test, y_test); pixels 0..16 as float, a stratified 75/25 split."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x_tr, x_te, y_tr, y_te = train_test_split(
        d.data.astype(np.float64), d.target, test_size=0.25, random_state=seed, stratify=d.target
    )
    return x_tr, y_tr, x_te, y_te


def train_mlp(
    x: np.ndarray, y: np.ndarray, steps: int = 400, lr: float = 3e-3, seed: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Full-batch Adam on softmax cross-entropy; returns [(W (in, out), b (out,)), ...]."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # small matrices: BLAS threads only contend on a shared machine
        return _train(x, y, steps, lr, seed)


def _train(x: np.ndarray, y: np.ndarray, steps: int, lr: float, seed: int) -> list:
    rng = np.random.default_rng(seed)
    params = [(rng.normal(0, np.sqrt(2.0 / a), (a, b)), np.zeros(b)) for a, b in zip(SIZES[:-1], SIZES[1:])]
    flat = [p for wb in params for p in wb]
    m = [np.zeros_like(p) for p in flat]
    v = [np.zeros_like(p) for p in flat]
    xs = x / 16.0
    onehot = np.eye(SIZES[-1])[y]
    for step in range(1, steps + 1):
        hs = [xs]
        for i, (W, b) in enumerate(params):
            z = hs[-1] @ W + b
            hs.append(np.maximum(z, 0) if i < len(params) - 1 else z)
        logits = hs[-1]
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        g = (p - onehot) / len(x)
        grads = []
        for i in range(len(params) - 1, -1, -1):
            W, _ = params[i]
            grads.append((hs[i].T @ g, g.sum(0)))
            if i:
                g = (g @ W.T) * (hs[i] > 0)
        grads = [q for wb in reversed(grads) for q in wb]
        for j, (p_, g_) in enumerate(zip(flat, grads)):
            m[j] = 0.9 * m[j] + 0.1 * g_
            v[j] = 0.999 * v[j] + 0.001 * g_ * g_
            p_ -= lr * (m[j] / (1 - 0.9**step)) / (np.sqrt(v[j] / (1 - 0.999**step)) + 1e-8)
    # fold the 1/16 input normalisation into the first layer: the network takes raw pixels 0..16
    W0, b0 = params[0]
    return [(W0 / 16.0, b0)] + params[1:]


def predict_float(params: list, x: np.ndarray) -> np.ndarray:
    h = x
    for i, (W, b) in enumerate(params):
        h = h @ W + b
        if i < len(params) - 1:
            h = np.maximum(h, 0)
    return h.argmax(-1)
