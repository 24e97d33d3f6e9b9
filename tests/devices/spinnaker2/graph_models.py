"""Small float graphs for the SpiNNaker2 graph-path tests: one per op type, a CNN and an attention block."""

from __future__ import annotations

import numpy as np

from pondlib.graph.dnn import FloatLayer, FloatModel


def conv_params(w, b=None, strides=(1,), pads=(0, 0), groups=1, dilations=None):
    nd = np.asarray(w).ndim - 2
    return {
        "weight": np.asarray(w, dtype=np.float64),
        "bias": b,
        "strides": list(strides),
        "pads": list(pads),
        "dilations": list(dilations or [1] * nd),
        "groups": groups,
    }


def pool_params(kernel, strides, pads, include=0):
    return {"kernel": list(kernel), "strides": list(strides), "pads": list(pads), "count_include_pad": include}


def op_models(seed: int = 0) -> dict[str, tuple[FloatModel, np.ndarray]]:
    """One small model per op type (name -> (model, calibration inputs))."""
    rng = np.random.default_rng(seed)
    L = FloatLayer
    out: dict[str, tuple[FloatModel, np.ndarray]] = {}
    x1 = rng.normal(size=(24, 3, 12))
    x2 = rng.normal(size=(24, 4, 6, 6))
    xt = rng.normal(size=(24, 6, 8))
    c1 = conv_params(rng.normal(size=(5, 3, 3)) / 2, rng.normal(size=5) / 4, strides=(2,), pads=(1, 2))
    out["conv1d"] = (FloatModel((L("c", "conv", (-1,), c1, (5, 7)),), "x", (3, 12)), x1)
    dw = conv_params(rng.normal(size=(4, 1, 3, 3)) / 2, None, strides=(1, 1), pads=(1, 1, 1, 1), groups=4)
    out["depthwise"] = (
        FloatModel((L("dw", "conv", (-1,), dw, (4, 6, 6)), L("r", "relu", (0,), {}, (4, 6, 6))), "x", (4, 6, 6)),
        x2,
    )
    pw = conv_params(rng.normal(size=(8, 4, 1, 1)) / 2, rng.normal(size=8) / 4, strides=(2, 2), pads=(0, 0, 0, 0))
    out["pointwise"] = (FloatModel((L("pw", "conv", (-1,), pw, (8, 3, 3)),), "x", (4, 6, 6)), x2)
    mp = pool_params([3, 3], [2, 2], [1, 1, 1, 1])
    out["maxpool"] = (
        FloatModel((L("mp", "maxpool", (-1,), {**mp, "dilations": [1, 1]}, (4, 3, 3)),), "x", (4, 6, 6)),
        x2,
    )
    ap = pool_params([3], [2], [1, 1])
    out["avgpool"] = (FloatModel((L("ap", "avgpool", (-1,), ap, (3, 6)),), "x", (3, 12)), x1)
    fc = {"weight": rng.normal(size=(8, 8)) / 3, "bias": rng.normal(size=8) / 4}
    out["gemm_add"] = (
        FloatModel(
            (
                L("fc", "gemm", (-1,), fc, (6, 8)),
                L("res", "add", (-1, 0), {}, (6, 8)),
                L("r", "relu", (1,), {}, (6, 8)),
            ),
            "x",
            (6, 8),
        ),
        xt,
    )
    out["matmul"] = (
        FloatModel(
            (L("t", "transpose", (-1,), {"perm": [1, 0]}, (8, 6)), L("mm", "matmul", (-1, 0), {}, (6, 6))), "x", (6, 8)
        ),
        xt,
    )
    out["reshape"] = (
        FloatModel((L("flat", "reshape", (-1,), {}, (48,)), L("r", "relu", (0,), {}, (48,))), "x", (6, 8)),
        xt,
    )
    out["softmax"] = (FloatModel((L("sm", "softmax", (-1,), {}, (6, 8)),), "x", (6, 8)), 2 * xt)
    ln = {"weight": 1 + 0.2 * rng.normal(size=8), "bias": 0.3 * rng.normal(size=8)}
    out["layernorm"] = (FloatModel((L("ln", "layernorm", (-1,), ln, (6, 8)),), "x", (6, 8)), xt + 1.0)
    out["rmsnorm"] = (FloatModel((L("rms", "rmsnorm", (-1,), {"weight": ln["weight"]}, (6, 8)),), "x", (6, 8)), xt)
    out["gelu"] = (FloatModel((L("g", "gelu", (-1,), {}, (6, 8)),), "x", (6, 8)), xt)
    return out


def cnn(seed: int = 0, channels: int = 8) -> tuple[FloatModel, np.ndarray]:
    """A small 2-D CNN with a residual block: conv-relu-maxpool-conv-relu-(+skip)-avgpool-flatten-gemm."""
    rng = np.random.default_rng(seed)
    L, c = FloatLayer, channels
    layers = (
        L(
            "c1",
            "conv",
            (-1,),
            conv_params(rng.normal(size=(c, 1, 3, 3)) / 3, np.zeros(c), pads=(1, 1, 1, 1), strides=(1, 1)),
            (c, 8, 8),
        ),
        L("r1", "relu", (0,), {}, (c, 8, 8)),
        L("p1", "maxpool", (1,), {**pool_params([2, 2], [2, 2], [0, 0, 0, 0]), "dilations": [1, 1]}, (c, 4, 4)),
        L(
            "c2",
            "conv",
            (2,),
            conv_params(
                rng.normal(size=(c, c, 3, 3)) / (3 * np.sqrt(c)), np.zeros(c), pads=(1, 1, 1, 1), strides=(1, 1)
            ),
            (c, 4, 4),
        ),
        L("r2", "relu", (3,), {}, (c, 4, 4)),
        L("skip", "add", (4, 2), {}, (c, 4, 4)),
        L("gap", "avgpool", (5,), pool_params([4, 4], [4, 4], [0, 0, 0, 0]), (c, 1, 1)),
        L("flat", "reshape", (6,), {}, (c,)),
        L("fc", "gemm", (7,), {"weight": rng.normal(size=(c, 10)) / np.sqrt(c), "bias": np.zeros(10)}, (10,)),
    )
    return FloatModel(layers, "x", (1, 8, 8)), rng.normal(size=(32, 1, 8, 8))


def attention(seed: int = 0, t: int = 8, d: int = 16) -> tuple[FloatModel, np.ndarray]:
    """One transformer block: layernorm, Q/K/V, scores, softmax, context, residual, GELU MLP, RMS norm."""
    rng = np.random.default_rng(seed)
    L = FloatLayer

    def lin(k, n, s):
        return {"weight": rng.normal(size=(k, n)) / (s * np.sqrt(k)), "bias": np.zeros(n)}

    layers = (
        L("ln", "layernorm", (-1,), {"weight": np.ones(d), "bias": np.zeros(d)}, (t, d)),
        L("q", "gemm", (0,), lin(d, d, 1), (t, d)),
        L("k", "gemm", (0,), lin(d, d, 1), (t, d)),
        L("v", "gemm", (0,), lin(d, d, 1), (t, d)),
        L("kt", "transpose", (2,), {"perm": [1, 0]}, (d, t)),
        L("scores", "matmul", (1, 4), {}, (t, t)),
        L("attn", "softmax", (5,), {}, (t, t)),
        L("ctx", "matmul", (6, 3), {}, (t, d)),
        L("res1", "add", (-1, 7), {}, (t, d)),
        L("up", "gemm", (8,), lin(d, 2 * d, 1), (t, 2 * d)),
        L("gelu", "gelu", (9,), {}, (t, 2 * d)),
        L("down", "gemm", (10,), lin(2 * d, d, 1), (t, d)),
        L("res2", "add", (8, 11), {}, (t, d)),
        L("rms", "rmsnorm", (12,), {"weight": np.ones(d)}, (t, d)),
    )
    return FloatModel(layers, "x", (t, d)), rng.normal(size=(32, t, d))
