"""Siracusa C code generation: the generated C equals SiracusaSim bit for bit (outputs and every record).

Random configurations cover GEMM (with and without RequantShift, exact and wrapping accumulators),
convolutions (stride, padding, groups), stand-alone RequantShift, and the integer LIF with both reset modes
and both comparisons; parameters span the full int32 range so that products, sums and rounding terms
wrap, outputs saturate and negative values are rounded (half up) by the portable floor shift.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.codegen import compile_host, generate, run_host
from pondlib.devices.siracusa import QLIF, QConv2d, QGemm, QRequant, RequantShift, SiracusaConfig, SiracusaSim
from pondlib.devices.siracusa.codegen import emit, record_names
from pondlib.devices.siracusa.sim import quantize_input
from pondlib.errors import CodegenError, ConstraintError

N_CASES = 100
CHUNK = 10


def _requant(rng: np.random.Generator, n: int, big: bool) -> RequantShift:
    per = bool(rng.integers(0, 2))
    k = n if per else 1
    span_m, span_a = (2**31, 2**31) if big else (2**10, 2**18)
    mul = rng.integers(-span_m, span_m, k)
    add = rng.integers(-span_a, span_a, k)
    return RequantShift(
        mul=mul if per else int(mul[0]),
        add=add if per else int(add[0]),
        div=1 << int(rng.integers(0, 32) if big else rng.integers(0, 16)),
        out_bits=int(rng.integers(1, 9)),
        signed=bool(rng.integers(0, 2)),
        in_offset=int(rng.integers(-(2**31), 2**31)) if big and rng.integers(0, 2) else int(rng.integers(-20, 20)),
    )


def _lif(rng: np.random.Generator, name: str, n: int, big: bool) -> QLIF:
    bits = int(rng.choice([2, 4, 8, 12, 16, 24, 32]))
    hi = 2 ** (bits - 1) - 1
    span = 2**31 if big else 2**6

    def par(lo: int, top: int):
        return rng.integers(lo, top, n) if rng.integers(0, 2) else int(rng.integers(lo, top))

    kind = int(rng.integers(0, 4))
    if kind == 0:  # outside the valid range: negative, zero or beyond the state (validate=False only)
        thr = rng.integers(-(2**33), 2**33, n)
    else:
        thr = rng.integers(1, hi + 1, n) if rng.integers(0, 2) else np.full(n, int(rng.integers(1, hi + 1)))
    return QLIF(
        name,
        beta_mul=par(-span if big else 0, span),
        in_mul=par(-span, span),
        add=par(-span, span),
        shift=int(rng.integers(0, 32) if big else rng.integers(0, 8)),
        threshold=thr,
        state_bits=bits,
        reset=str(rng.choice(["subtract", "zero"])),
        compare=str(rng.choice([">=", ">"])),
    )


def _conv(rng: np.random.Generator, name: str, n: int, big: bool, requant: bool) -> QConv2d:
    divs = [d for d in range(1, n + 1) if n % d == 0]
    c = int(rng.choice([d for d in divs if d <= 4]))
    hw = n // c
    h = int(rng.choice([d for d in range(1, hw + 1) if hw % d == 0]))
    w = hw // h
    groups = int(rng.choice([g for g in (1, 2, c) if c % g == 0]))
    o = groups * int(rng.integers(1, 3))
    p = int(rng.integers(0, 2))
    kh, kw = int(rng.integers(1, min(3, h + 2 * p) + 1)), int(rng.integers(1, min(3, w + 2 * p) + 1))
    bias = None if rng.integers(0, 2) else rng.integers(-(2**31) if big else -1000, 2**31 if big else 1000, o)
    return QConv2d(
        name,
        weight=rng.integers(-128, 128, (kh, kw, c // groups, o)),
        in_shape=(h, w, c),
        bias=bias,
        requant=_requant(rng, o, big) if requant else None,
        stride=int(rng.integers(1, 3)),
        padding=p,
        groups=groups,
    )


def random_config(seed: int) -> SiracusaConfig:
    """A random valid (``validate=False``) configuration of 1 to 4 layers, often wrapping int32."""
    rng = np.random.default_rng(seed)
    big = bool(rng.integers(0, 2))
    in_bits, in_signed = [(8, True), (8, False), (4, True), (16, True), (32, True), (32, False)][int(rng.integers(6))]
    n = int(rng.integers(1, 13))
    n_input = n
    layers: list = []
    for i in range(int(rng.integers(1, 5))):
        kind = str(rng.choice(["gemm", "gemm_raw", "conv", "requant", "lif"]))
        name = f"L{i}" if rng.integers(0, 4) else f"layer.{i}"
        if kind.startswith("gemm"):
            o = int(rng.integers(1, 13))
            bias = None if rng.integers(0, 3) == 0 else rng.integers(-(2**31), 2**31, o) if big else None
            if bias is None and rng.integers(0, 2):
                bias = rng.integers(-5000, 5000, o)
            rq = _requant(rng, o, big) if kind == "gemm" else None
            layers.append(QGemm(name, weight=rng.integers(-128, 128, (n, o)), bias=bias, requant=rq))
            n = o
        elif kind == "conv":
            layer = _conv(rng, name, n, big, bool(rng.integers(0, 2)))
            layers.append(layer)
            n = layer.n_out
        elif kind == "requant":
            rq = _requant(rng, n, big)
            if rq.per_channel and rng.integers(0, 2) and n % 2 == 0 and n > 2:  # per-channel repeating
                half = n // 2
                rq = RequantShift(
                    np.resize(rq.mul, half), np.resize(rq.add, half), rq.div, rq.out_bits, rq.signed, rq.in_offset
                )
            layers.append(QRequant(name, n=n, requant=rq))
        else:
            layers.append(_lif(rng, name, n, big))
    return SiracusaConfig(layers=tuple(layers), n_input=n_input, input_bits=in_bits, input_signed=in_signed)


def random_input(rng: np.random.Generator, cfg: SiracusaConfig, B: int, T: int) -> np.ndarray:
    lo, hi = cfg.input_range
    x = rng.integers(lo, hi, (B, T, cfg.n_input), endpoint=True)
    mask = rng.random(x.shape)
    x[mask < 0.1] = lo  # the extremes of the input range
    x[mask > 0.9] = hi
    return x


def check_parity(cfg: SiracusaConfig, x: np.ndarray, tmp_path, name: str = "net") -> dict:
    """Compile the recording program, run it and the simulator on ``x``; assert equality; return the records."""
    prog = emit(cfg, name=name, validate=False, record=True)
    exe = compile_host(prog, tmp_path / name)
    y, rec = run_host(exe, prog, x, record=True)
    out, _, want = SiracusaSim(cfg, validate=False).evolve(x, record=True)
    assert y.shape == out.shape and np.array_equal(y.astype(np.int64), out), name
    names = record_names(cfg, record=True)
    assert set(names) == set(want)
    for key, cname in names.items():
        assert np.array_equal(rec[cname].astype(np.int64), want[key]), (name, key)
    return want


@pytest.mark.parametrize("chunk", range(N_CASES // CHUNK))
def test_random_configurations_equal_simulator(chunk, tmp_path):
    stats = {"spikes": 0, "saturated": 0, "lif_reset": 0, "wrapped": 0}
    for seed in range(chunk * CHUNK, (chunk + 1) * CHUNK):
        cfg = random_config(seed)
        rng = np.random.default_rng(10_000 + seed)
        x = random_input(rng, cfg, B=2, T=int(rng.integers(3, 7)))
        want = check_parity(cfg, x, tmp_path, name=f"case{seed}")
        for layer in cfg.layers:
            if isinstance(layer, QLIF):
                stats["spikes"] += int(want[f"{layer.name}/spikes"].sum())
            rq = getattr(layer, "requant", None)
            if rq is not None:
                lo, hi = rq.out_range
                o = want[f"{layer.name}/out"]
                stats["saturated"] += int(np.sum((o == lo) | (o == hi)))
            if f"{layer.name}/acc" in want:
                stats["wrapped"] += int(np.sum(np.abs(want[f"{layer.name}/acc"]) > 2**30))
    assert stats["spikes"] > 0 and stats["saturated"] > 0, stats


def test_no_undefined_behaviour_under_ubsan(tmp_path):
    """Without -fwrapv: gcc's undefined-behaviour sanitizer (aborting on the first report) stays silent."""
    import shutil
    import subprocess

    if shutil.which("gcc") is None:
        pytest.skip("gcc not found")
    for seed in (0, 3, 11, 42, 77):
        cfg = random_config(seed)
        x = random_input(np.random.default_rng(seed), cfg, B=2, T=5)
        prog = emit(cfg, name=f"ub{seed}", validate=False, record=True)
        d = prog.write(tmp_path / f"ub{seed}")
        exe = d / "ub"
        flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", "-fsanitize=undefined"]
        cmd = ["gcc", *flags, "-fno-sanitize-recover=all", "-o", str(exe), str(d / f"ub{seed}.c"), str(d / "main.c")]
        if subprocess.run(cmd, capture_output=True).returncode != 0:
            pytest.skip("gcc without the undefined-behaviour sanitizer")
        y, _ = run_host(exe, prog, x, record=True)  # a sanitizer report exits non-zero: CodegenError
        assert np.array_equal(y.astype(np.int64), SiracusaSim(cfg, validate=False).evolve(x)[0])


def test_every_feature_is_drawn():
    """The random configurations exercise every layer type, reset mode, comparison and input width."""
    seen: set = set()
    for seed in range(N_CASES):
        cfg = random_config(seed)
        seen.add(("input", cfg.input_bits, cfg.input_signed))
        for layer in cfg.layers:
            seen.add(type(layer).__name__)
            if isinstance(layer, QLIF):
                seen.update({("reset", layer.reset), ("compare", layer.compare)})
            if isinstance(layer, QConv2d):
                seen.update({("stride", layer.stride), ("padding", layer.padding), ("grouped", layer.groups > 1)})
            if isinstance(layer, QGemm):
                seen.add(("gemm requant", layer.requant is not None))
    for feature in [
        "QGemm",
        "QConv2d",
        "QRequant",
        "QLIF",
        ("reset", "subtract"),
        ("reset", "zero"),
        ("compare", ">="),
        ("compare", ">"),
        ("stride", 2),
        ("padding", 1),
        ("grouped", True),
        ("gemm requant", False),
        ("input", 32, False),
        ("input", 8, False),
    ]:
        assert feature in seen, feature


def test_hand_cases_ties_wraps_saturation(tmp_path):
    # round half up of negative ties, int32 wrap of x * mul, of + add and of the rounding term, saturation
    layers = (
        QRequant("half", n=4, requant=RequantShift(mul=1, add=0, div=2, out_bits=8)),
        QRequant("wrap", n=4, requant=RequantShift(mul=2**30, add=2**31 - 1, div=2, out_bits=8)),
    )
    cfg = SiracusaConfig(layers=layers, n_input=4)
    x = np.array([[[-3, -5, 3, 5], [-1, 1, -128, 127]]])
    want = check_parity(cfg, x, tmp_path, "hand")
    assert want["half/out"][0, 0].tolist() == [-1, -2, 2, 3]
    # accumulator wrap: 2^31 - 1 bias plus a positive product wraps negative; LIF on the raw accumulator
    gemm = QGemm("fc", weight=[[127, -128]], bias=[2**31 - 1, -(2**31)])
    lif = QLIF("lif", beta_mul=1, in_mul=1, add=0, shift=0, threshold=[2**31 - 1, 5], state_bits=32)
    cfg2 = SiracusaConfig(layers=(gemm, lif), n_input=1)
    want2 = check_parity(cfg2, np.array([[[1], [-1], [127], [0]]]), tmp_path, "hand2")
    assert want2["fc/acc"][0, 0].tolist() == [-(2**31) + 126, 2**31 - 128]


def test_deployable_program_shares_scratch_and_matches(tmp_path):
    rng = np.random.default_rng(7)
    cfg = SiracusaConfig(
        n_input=8,
        layers=(
            QGemm("fc0", rng.integers(-128, 128, (8, 16)), requant=RequantShift(mul=3, div=256, signed=False)),
            QGemm("fc1", rng.integers(-128, 128, (16, 16)), requant=RequantShift(mul=5, div=512)),
            QGemm("fc2", rng.integers(-128, 128, (16, 4))),
            QLIF("lif", beta_mul=200, in_mul=1, add=0, shift=8, threshold=np.full(4, 300)),
        ),
    )
    prog = emit(cfg, name="deploy")
    assert [s.name for s in prog.io.states] == ["lif_v"]
    assert prog.memory.scratch_bytes < prog.memory.scratch_unshared_bytes
    x = rng.integers(-128, 128, (3, 10, 8))
    y, rec = run_host(compile_host(prog, tmp_path / "d"), prog, x, record=True)
    out, state, want = SiracusaSim(cfg).evolve(x, record=True)
    assert np.array_equal(y.astype(np.int64), out) and np.array_equal(rec["lif_v"].astype(np.int64), want["lif/v"])
    assert generate(cfg, "siracusa", name="deploy").sources == prog.sources
    assert "-fwrapv" not in prog.sources["Makefile"]


def test_digits_mlp_equals_simulator(tmp_path):
    from pondlib.devices.siracusa import GemmLayer, ReLU, check_constraints, mapper
    from tests.devices.siracusa.digits_mlp import load_digits_split, train_mlp

    x_tr, y_tr, x_te, _ = load_digits_split()
    params = train_mlp(x_tr, y_tr, steps=100)
    layers = []
    for i, (W, b) in enumerate(params):
        layers.append(GemmLayer(f"fc{i}", W, b))
        if i < len(params) - 1:
            layers.append(ReLU(f"relu{i}"))
    spec = mapper(layers, calibration=x_tr)
    assert check_constraints(spec.config) == []
    x = quantize_input(x_te[:, None, :], spec.config)  # (B, T=1, 64) uint8 pixels
    prog = emit(spec, name="digits")
    assert prog.io.in_ctype == "uint8_t" and prog.io.states == ()
    y, _ = run_host(compile_host(prog, tmp_path / "digits"), prog, x)
    out, _, _ = SiracusaSim(spec.config).evolve(x)
    assert np.array_equal(y.astype(np.int64), out)
    check_parity(spec.config, x[:50], tmp_path, "digits_rec")
    # flash: 64*64 + 64*32 + 32*10 int8 weights plus per-channel parameters; RAM: two activations shared
    assert prog.memory.flash_bytes >= 64 * 64 + 64 * 32 + 32 * 10
    assert prog.memory.ram_bytes <= 64 + 64


# -- bad input -------------------------------------------------------------------------------------
_bad_models = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.binary(max_size=5),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@settings(max_examples=40, deadline=None)
@given(_bad_models)
def test_bad_model_types_are_refused(model):
    with pytest.raises(CodegenError, match="SiracusaConfig"):
        emit(model)


_CFG = SiracusaConfig(layers=(QGemm("fc", weight=[[1, 2]], requant=RequantShift(mul=1)),), n_input=1)


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.text(max_size=3), st.floats(allow_nan=False)))
def test_bad_option_values_are_refused(value):
    for option in ("validate", "record"):
        with pytest.raises(CodegenError, match=option):
            emit(_CFG, **{option: value})


@settings(max_examples=30, deadline=None)
@given(st.one_of(st.text(max_size=6), st.integers(), st.none()))
def test_bad_names_are_refused(name):
    if isinstance(name, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        try:  # a C identifier: emitted, unless it is a C keyword or a name the API reserves
            assert emit(_CFG, name=name).name == name
        except CodegenError as err:
            assert "C identifier" in str(err)
        return
    with pytest.raises(CodegenError, match="C identifier"):
        emit(_CFG, name=name)


def test_unknown_option_and_rule_breaks():
    with pytest.raises(CodegenError, match="tile"):
        emit(_CFG, tile=4)
    with pytest.raises(CodegenError):
        generate(_CFG, "siracusa", precision=8)
    bad_weight = SiracusaConfig(layers=(QGemm("fc", weight=[[200]]),), n_input=1)
    for validate in (True, False):  # int8 weights are a safety rule: refused even unvalidated
        with pytest.raises(ConstraintError) as err:
            emit(bad_weight, validate=validate)
        assert "weight_range" in err.value.rules
    # an accumulator that can leave int32 breaks a design rule; unvalidated, the C wraps like the simulator
    wraps = SiracusaConfig(layers=(QGemm("fc", weight=[[127]], bias=[2**31 - 1]),), n_input=1)
    with pytest.raises(ConstraintError) as err:
        emit(wraps)
    assert "acc_overflow" in err.value.rules
    assert emit(wraps, validate=False).io.out_ctype == "int32_t"
    assert record_names(wraps) == {"fc/acc": "fc_acc", "fc/out": "fc_acc"}
    with pytest.raises(CodegenError):
        record_names(3)
