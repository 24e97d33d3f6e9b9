"""spinnaker2 numerics: the generated C equals SpiNNaker2Sim and DNNSim bit for bit (outputs, every record and state).

Random SNN configurations are built from hand-made specifications (every neuron model and option, delays,
recurrent and backward projections, several PEs per population, ties of the membrane with the threshold) and
encoded by ``config_from_specification``; random DNN configurations cover saturation, negative floors, the
wrap of narrow accumulators and the simulator's overflow error. Each program is compiled with the strict host
flags (``-Werror -pedantic -ffp-contract=off``).
"""

from __future__ import annotations

import itertools
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pondlib.devices.spinnaker2.codegen as s2
from pondlib.codegen import compile_host, generate, run_host
from pondlib.devices.spinnaker2.codegen import emit, record_names
from pondlib.devices.spinnaker2.config import config_from_specification
from pondlib.devices.spinnaker2.dnn import MLP, DNNConfig, DNNLayerConfig, dnn_mapper
from pondlib.devices.spinnaker2.sim import DNNSim, SpiNNaker2Sim
from pondlib.devices.spinnaker2.specification import (
    NEURON_MODELS,
    LIFOptions,
    PopulationSpec,
    ProjectionSpec,
    Slice,
    Specification,
)
from pondlib.errors import CodegenError, ConstraintError, SimulationError

pytestmark = pytest.mark.skipif(
    not any(shutil.which(c) for c in ("cc", "gcc", "clang")), reason="no C compiler on PATH"
)

OPTION_GRID = [
    LIFOptions(c, r, f, o)
    for c, r, f, o in itertools.product(
        (">", ">="), ("subtract", "to_v_reset"), (False, True), ("offset_first", "input_first")
    )
]
MODELS = sorted(NEURON_MODELS)


def _population(rng, name: str, n: int, ties: bool) -> PopulationSpec:
    if ties:  # integer thresholds and exact decays: the membrane hits the threshold exactly
        arrays = dict(
            threshold=rng.integers(1, 8, n).astype(np.float32),
            alpha=rng.choice([0.5, 1.0, 0.75], n),
            i_offset=rng.choice([0.0, 0.5, -0.5, 1.0], n),
            v_reset=rng.choice([0.0, -1.0, 0.5], n),
            exc_decay=rng.choice([0.5, 0.75, 0.0], n),
            inh_decay=rng.choice([0.25, 0.5, 1.0], n),
        )
    else:
        arrays = dict(
            threshold=rng.uniform(0.3, 30.0, n),
            alpha=rng.uniform(0.2, 1.0, n),
            i_offset=rng.normal(0.0, 1.5, n),
            v_reset=rng.normal(-1.0, 2.0, n),
            exc_decay=rng.uniform(0.0, 1.0, n),
            inh_decay=rng.uniform(0.0, 1.0, n),
        )
    arrays = {k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()}
    return PopulationSpec(name=name, size=n, t_refrac=rng.integers(0, 4, n).astype(np.int64), scale=1.0, **arrays)


def random_config(seed: int):
    """A valid random SpiNNaker2Config: 1-3 populations, recurrence, delays, several PEs per population."""
    rng = np.random.default_rng(seed)
    model = MODELS[seed % len(MODELS)]
    fmt = NEURON_MODELS[model].word
    opts = OPTION_GRID[(seed // len(MODELS)) % len(OPTION_GRID)]
    ties = bool(rng.random() < 0.5)
    n_in = int(rng.integers(1, 6))
    names = [f"{i}_LIF" if i % 2 else f"pop{i}" for i in range(int(rng.integers(1, 4)))]
    pops = [_population(rng, nm, int(rng.integers(1, 9)), ties) for nm in names]
    sizes = {"input": n_in, **{p.name: p.size for p in pops}}
    edges = [("input", names[0])] + [(names[i - 1], names[i]) for i in range(1, len(names))]
    for _ in range(int(rng.integers(0, 4))):  # recurrence, backward and skip projections, repeats
        edges.append((str(rng.choice(["input", *names])), str(rng.choice(names))))
    wmax = min(fmt.max_weight, 15 if ties else fmt.max_weight)
    projections = []
    for k, (pre, post) in enumerate(edges):
        shape = (sizes[pre], sizes[post])
        w = rng.integers(-wmax, wmax + 1, shape) * (rng.random(shape) < 0.7)
        if pre == "input":
            w = np.abs(w) * np.where(rng.random(shape) < 0.8, 1, -1)  # mostly excitatory drive
        d = rng.integers(0, fmt.max_delay + 1, shape)
        projections.append(ProjectionSpec(f"proj{k}", pre, post, w.astype(np.int64), d.astype(np.int64), w * 1.0))
    slices, pe = [], 0
    for p in pops:
        cuts = sorted(set(rng.integers(1, p.size, int(rng.integers(0, 3))).tolist())) if p.size > 1 else []
        for a, b in zip([0, *cuts], [*cuts, p.size]):
            slices.append(Slice(p.name, a, b, pe))
            pe += 1
    spec = Specification(
        neuron_model=model,
        tick_s=1e-3,
        n_input=n_in,
        populations=tuple(pops),
        projections=tuple(projections),
        output=names[-1],
        slices=tuple(slices),
        input_slices=(Slice("input", 0, n_in, pe),),
        memory={},
        options=opts,
    )
    config, ok, message = config_from_specification(spec)
    assert ok, message
    return config


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a.view(np.uint32) if a.dtype == np.float32 else a.astype(np.int64)


def check_snn(config, tmp_path, rng, B=2, T=24, record=True):
    """Run the C and the simulator on the same random counts; assert every output/record/state is equal."""
    prog = emit(config, name="snn", record=record)
    exe = compile_host(prog, tmp_path)
    x = rng.integers(0, 4, (B, T, config.n_input)) * (rng.random((B, T, config.n_input)) < 0.6)
    y, rec = run_host(exe, prog, x, record=True)
    y_sim, state, rec_sim = SpiNNaker2Sim.from_config(config).evolve(x, record=True)
    assert np.array_equal(y, y_sim)
    names = record_names(config)
    compared = 0
    for key, val in rec_sim.items():
        if not record and key.split(".")[-1] in ("i_syn", "input"):
            continue
        assert np.array_equal(_bits(rec[names[key]]), _bits(val)), key
        compared += 1
    for key, val in state.items():
        if key in rec_sim:
            continue
        last = rec[names[key]][:, -1]
        if key == "tick":
            assert int(last[0, 0]) == val == T
            continue
        want = np.asarray(val)
        assert np.array_equal(_bits(last.reshape(want.shape)), _bits(want)), key
        compared += 1
    assert compared >= 4 * len(config.populations)
    spikes = sum(int(v.sum()) for k, v in rec_sim.items() if k.endswith(".spikes"))
    return B * T, spikes


@pytest.mark.parametrize("chunk", range(4))
def test_snn_random_configs_bit_exact(chunk, tmp_path):
    steps = spikes = 0
    for seed in range(chunk * 26, (chunk + 1) * 26):  # 104 configurations in all
        config = random_config(seed)
        s, k = check_snn(config, tmp_path / str(seed), np.random.default_rng(1000 + seed))
        steps += s
        spikes += k
    assert steps == 26 * 2 * 24
    assert spikes > 100  # the networks do spike


def test_snn_ties_separate_compare_options(tmp_path):
    # one neuron, threshold 4.5 after scaling: the membrane reaches 4.5 exactly (see test_snn_sim)
    from pondlib import nn
    from pondlib.devices.spinnaker2.mapper import mapper

    half = 1e-3 / np.log(2)
    net = nn.Sequential(nn.Linear(1, 1, weight=np.ones((1, 1))), nn.LIF(1, tau_mem=half, threshold=1.5))
    spec = mapper(net, neuron_model="lif", weight_scale={"1_LIF": 3.0})
    x = np.array([[1], [1], [1], [1], [0], [0]])
    outs = []
    for compare in (">", ">="):
        config, ok, _ = config_from_specification(spec, LIFOptions(compare=compare))
        prog = emit(config, name="tie")
        y, _ = run_host(compile_host(prog, tmp_path / compare.replace(">", "gt").replace("=", "e")), prog, x)
        assert np.array_equal(y, SpiNNaker2Sim.from_config(config).evolve(x)[0])
        outs.append(y[:, 0].tolist())
    assert outs == [[0, 0, 0, 1, 0, 0], [0, 0, 1, 0, 1, 0]]


def test_snn_options_override_and_no_record(tmp_path):
    config = random_config(7)
    rng = np.random.default_rng(3)
    check_snn(config, tmp_path / "norec", rng, record=False)
    opts = LIFOptions(">=", "to_v_reset", True, "input_first")
    prog = generate(config, "spinnaker2", name="over", options=opts)
    assert "fma" in prog.sources["over.c"] and "s2_mul_add" in prog.sources["over.c"]
    x = rng.integers(0, 3, (20, config.n_input))
    y, _ = run_host(compile_host(prog, tmp_path / "over"), prog, x)
    assert np.array_equal(y, SpiNNaker2Sim.from_config(config, opts).evolve(x)[0])


# ------------------------------------------------------------------------------------------------
# DNN
# ------------------------------------------------------------------------------------------------
def random_dnn(seed: int) -> DNNConfig:
    rng = np.random.default_rng(seed)
    sizes = [int(v) for v in rng.integers(1, 24, int(rng.integers(2, 5)))]
    acc_bits = int(rng.choice([12, 16, 20, 24, 32]))
    overflow = "wrap" if seed % 3 == 0 else "error"
    layers = []
    for i, (k, n) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = rng.integers(-128, 128, (k, n))
        if rng.random() < 0.3:
            w[:, : max(1, n // 2)] = -128  # the most positive products with x = -128
        b = rng.integers(-(2**12), 2**12, n)
        if rng.random() < 0.2:
            b[0] = rng.choice([-(2**31), 2**31 - 1])
        cuts = sorted(set(rng.integers(1, n, int(rng.integers(0, 3))).tolist())) if n > 1 else []
        tiles = tuple(zip([0, *cuts], [*cuts, n]))
        layers.append(
            DNNLayerConfig(f"fc{i + 1}", w, b, int(rng.integers(0, 14)), bool(rng.random() < 0.5), tiles, 0, 0, 0, 0, 0)
        )
    return DNNConfig(tuple(layers), 0, acc_bits, overflow)


def check_dnn(cfg: DNNConfig, tmp_path, rng, B=12, record=True):
    prog = emit(cfg, name="mlp", record=record)
    exe = compile_host(prog, tmp_path)
    K = cfg.layers[0].weights.shape[0]
    x = rng.integers(-128, 128, (B, K))
    x[: B // 3] = rng.choice([-128, 127], (B // 3, K))  # extremes: saturation
    y, rec = run_host(exe, prog, x[None], record=True)
    names = record_names(cfg)
    sim = DNNSim.from_config(cfg)
    raised = 0
    for i in range(B):
        try:
            y_sim, _, rec_sim = sim.evolve(x[i], record=True)
        except SimulationError:
            assert rec["overflow"][0, i, 0] == 1  # the C flags exactly the steps where the simulator raises
            raised += 1
            continue
        if "overflow" in rec:
            assert rec["overflow"][0, i, 0] == 0
        assert np.array_equal(y[0, i], y_sim)
        if record:
            for key, val in rec_sim.items():
                assert np.array_equal(rec[names[key]][0, i].astype(np.int64), val), key
    return B - raised, raised


def test_dnn_random_configs_bit_exact(tmp_path):
    equal = raised = saturated = negative = 0
    for seed in range(30):
        cfg = random_dnn(seed)
        e, r = check_dnn(cfg, tmp_path / str(seed), np.random.default_rng(seed + 50))
        equal += e
        raised += r
        y, _, rec = DNNSim.from_config(cfg, overflow="wrap").evolve(np.full(cfg.layers[0].weights.shape[0], -128), True)
        saturated += int(sum(np.isin(v, (-128, 127)).sum() for k, v in rec.items() if k.endswith(".y")))
        negative += int(sum((v < 0).sum() for k, v in rec.items() if k.endswith(".acc")))
    assert equal > 200 and raised > 0 and saturated > 0 and negative > 0


def test_dnn_mapper_config_and_no_record(tmp_path):
    rng = np.random.default_rng(5)
    mlp = MLP.from_arrays(
        [rng.normal(size=(16, 12)) * 0.3, rng.normal(size=(12, 5)) * 0.3],
        [rng.normal(size=12) * 0.1, rng.normal(size=5) * 0.1],
    )
    x = rng.random((40, 16)) * 4
    cfg = dnn_mapper(mlp, calibration=x)
    prog = emit(cfg, name="digits", record=False)
    assert prog.memory.scratch_bytes > 0 and not prog.io.states  # activations in the arena, nothing recorded
    xq = cfg.quantize_input(x)
    y, _ = run_host(compile_host(prog, tmp_path / "a"), prog, xq[None])
    assert np.array_equal(y[0], DNNSim.from_config(cfg).evolve(xq)[0])
    # the wrap override matches the simulator in wrap mode
    cfg_small = random_dnn(1)
    prog = emit(cfg_small, name="wrapped", overflow="wrap")
    k = cfg_small.layers[0].weights.shape[0]
    xs = rng.integers(-128, 128, (10, k))
    y, _ = run_host(compile_host(prog, tmp_path / "b"), prog, xs[None])
    assert np.array_equal(y[0], DNNSim.from_config(cfg_small, overflow="wrap").evolve(xs)[0])


# ------------------------------------------------------------------------------------------------
# refusals
# ------------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.none(),
        st.integers(),
        st.floats(allow_nan=True),
        st.text(max_size=8),
        st.lists(st.integers(), max_size=4),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
        st.builds(lambda n: np.zeros(n), st.integers(0, 4)),
        st.just(LIFOptions()),
    )
)
def test_emit_refuses_bad_models(model):
    with pytest.raises(CodegenError):
        emit(model, name="bad")


_CONFIG = random_config(1)
_DNN = random_dnn(2)


@settings(max_examples=60, deadline=None)
@given(
    which=st.sampled_from(["snn", "dnn"]),
    key=st.sampled_from(["record", "options", "overflow", "bogus", "fma"]),
    value=st.one_of(st.none(), st.integers(), st.text(max_size=5), st.just("wrap"), st.just(LIFOptions(">", "up"))),
)
def test_emit_refuses_bad_options(which, key, value):
    model = _CONFIG if which == "snn" else _DNN
    allowed = {"snn": ("record", "options"), "dnn": ("record", "overflow")}[which]
    valid = (key == "options" and value is None) or (key == "overflow" and value in (None, "wrap"))
    if key in allowed and valid:
        emit(model, name="ok", **{key: value})
    else:
        with pytest.raises(CodegenError):
            emit(model, name="bad", **{key: value})


def test_emit_refuses_invalid_configs_and_names():
    bad_pop = _CONFIG.replace(
        populations=(
            _CONFIG.populations[0].__class__(
                **{
                    **{
                        f: getattr(_CONFIG.populations[0], f)
                        for f in ("name", "size", "alpha", "i_offset", "v_reset", "exc_decay", "inh_decay", "t_refrac")
                    },
                    "threshold": np.full(_CONFIG.populations[0].size, np.nan, np.float32),
                }
            ),
        )
        + _CONFIG.populations[1:]
    )
    with pytest.raises(CodegenError, match="threshold"):
        emit(bad_pop)
    with pytest.raises(CodegenError, match="acc_bits"):
        emit(DNNConfig(_DNN.layers, 0, 99))
    with pytest.raises(CodegenError):
        emit(_DNN, name="3bad")
    with pytest.raises(CodegenError):
        record_names(3)


def test_int64_overflow_is_refused(monkeypatch):
    monkeypatch.setattr(s2, "_INT64_MAX", 1000)
    with pytest.raises(ConstraintError) as err:
        emit(_DNN)
    assert err.value.rules[0] == "mla_acc_int64"
    with pytest.raises(ConstraintError) as err:
        emit(_CONFIG)
    assert err.value.rules[0] == "snn_sum_int64"
