"""Generated C that always builds: any name ``generate`` accepts and any model it accepts compiles with -Werror on
the host and for both cross targets; names that would collide (``main``, ``pond_*``, standard headers, upper case,
over-long) are refused up front; the host harness of every numerics in the suite runs clean under AddressSanitizer
and UndefinedBehaviorSanitizer and gives pondlib's own outputs bit for bit.
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pondlib import nn
from pondlib.codegen import compile_host, generate, run_host
from pondlib.codegen.cross import TARGETS, build_cross, run_cross
from pondlib.cprogram.program import RESERVED_NAMES
from pondlib.errors import CodegenError
from tests.codegen.test_cross_numerics import CASES

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None, reason="no C compiler")

SANITIZE = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g")
ACCEPTED = re.compile(r"[a-z][a-z0-9_]{0,47}")


def _net(n_in: int = 3, hidden: int = 4, n_out: int = 2, seed: int = 0) -> nn.Sequential:
    rng = np.random.default_rng(seed)  # numpy weights: no JAX work per model
    return nn.Sequential(
        nn.Linear(n_in, hidden, weight=rng.normal(size=(n_in, hidden))), nn.LIF(hidden, tau_mem=0.02, tau_syn=0.005),
        nn.Linear(hidden, n_out, weight=rng.normal(size=(hidden, n_out))), nn.LIF(n_out, tau_mem=0.02, tau_syn=0.005),
    )  # fmt: skip


@pytest.fixture(scope="module")
def net() -> nn.Sequential:
    return _net()


def _accepted(name: str) -> bool:
    return bool(ACCEPTED.fullmatch(name)) and name not in RESERVED_NAMES and not name.startswith("pond_")


# -- names -------------------------------------------------------------------------------------------------------
@given(name=st.one_of(st.text(max_size=60), st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,60}", fullmatch=True)))
@settings(max_examples=25, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_names_are_accepted_exactly_by_the_rule(net, name):
    if _accepted(name):
        prog = generate(net, name=name)
        assert set(prog.sources) == {f"{name}.h", f"{name}.c", "main.c", "Makefile", "README.md"}
    else:
        with pytest.raises(CodegenError, match="program name"):
            generate(net, name=name)


@pytest.mark.parametrize("name", ["main", "stdio", "string", "pond_driver", "pond_x", "UPPER_net", "x" * 49, "a"])
def test_colliding_names_are_refused_up_front(net, name):
    with pytest.raises(CodegenError, match="program name") as err:
        generate(net, name=name)
    assert "Fix:" in str(err.value)


#: Accepted names that come close to the harness's and the C library's symbols.
EDGE_NAMES = ["net", "z", "arena", "states", "scratch", "step", "mainx", "stdio_x", "pond", "int8", "q" * 48, "n_9_"]


@given(name=st.one_of(st.sampled_from(EDGE_NAMES), st.from_regex(ACCEPTED, fullmatch=True).filter(_accepted)))
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_accepted_name_builds_with_werror_and_runs(net, tmp_path_factory, name):
    prog = generate(net, name=name)
    x = (np.random.default_rng(0).random((1, 5, 3)) * 3).astype(np.float32)
    y, _ = run_host(compile_host(prog, tmp_path_factory.mktemp("c"), opt="-O0"), prog, x)
    assert np.array_equal(y, np.asarray(net(x)[0], dtype=np.float32))


@given(
    n_in=st.integers(1, 6), hidden=st.integers(1, 6), n_out=st.integers(1, 4), seed=st.integers(0, 3),
    name=st.from_regex(ACCEPTED, fullmatch=True).filter(_accepted),
)  # fmt: skip
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_accepted_model_builds_with_werror(tmp_path_factory, n_in, hidden, n_out, seed, name):
    prog = generate(_net(n_in, hidden, n_out, seed), name=name)
    x = (np.random.default_rng(seed).random((2, 4, n_in)) * 3).astype(np.float32)
    y, rec = run_host(compile_host(prog, tmp_path_factory.mktemp("c"), opt="-O0"), prog, x, record=True)
    assert y.shape == (2, 4, n_out) and np.all(np.isfinite(y)) and set(rec) == {s.name for s in prog.io.states}


def test_a_buffer_beyond_the_element_limit_is_refused_before_any_c():
    from pondlib.cprogram.program import MAX_BUFFER_ELEMENTS, Buffer

    with pytest.raises(CodegenError, match="buffer size"):
        Buffer("big", "int32_t", 2**33)
    with pytest.raises(CodegenError, match="buffer size"):
        Buffer("big", "int8_t", MAX_BUFFER_ELEMENTS + 1)


@pytest.mark.parametrize("target", list(TARGETS))
def test_an_unusual_accepted_name_builds_for_each_cross_target(net, tmp_path, target):
    pytest.importorskip("ziglang", reason="the cross toolchain (ziglang) is not installed")
    name = "q" * 40 + "_net_9"
    prog = generate(net, name=name)
    x = (np.random.default_rng(1).random((1, 4, 3)) * 3).astype(np.float32)
    build = build_cross(prog, target, tmp_path / target)
    y, _, _ = run_cross(build, x)
    assert np.array_equal(y, np.asarray(net(x)[0], dtype=np.float32))


# -- sanitizers: one build per numerics of the suite ----------------------------------------------------------------
def _float32_case():
    return _net(4, 6, 3, seed=3), {}, (np.random.default_rng(0).random((2, 25, 4)) * 3).astype(np.float32), None


def _spinnaker2_snn_case():
    from pondlib.devices.spinnaker2.report import configure, map_network

    rng = np.random.default_rng(5)
    net = nn.Sequential(
        nn.Linear(5, 8, weight=rng.uniform(-0.5, 1.5, (5, 8))), nn.LIF(8, tau_mem=0.02, tau_syn=0.005),
        nn.Linear(8, 3, weight=rng.uniform(-0.5, 1.5, (8, 3))), nn.LIF(3, tau_mem=0.02, tau_syn=0.005),
    )  # fmt: skip
    spec, _ = map_network(net, None, "lif_curr_exp")
    return configure(spec, "sanitizers"), {}, rng.poisson(0.6, size=(2, 25, 5)).astype(np.int64), None


#: The numerics of tests/codegen/test_cross_numerics.py, the float32 and SNN networks with numpy weights.
SANITIZED = dict(
    CASES, **{"float32": ("float32", _float32_case), "spinnaker2-snn": ("spinnaker2", _spinnaker2_snn_case)}
)


@pytest.fixture(scope="session")
def sanitized(tmp_path_factory):
    """``case -> (program, ASan + UBSan executable, plain executable, x)``, built once per case on first use."""
    built: dict = {}

    def get(case: str):
        if case not in built:
            numerics, make = SANITIZED[case]
            model, options, x, _ = make()
            prog = generate(model, numerics, name="san", **options)
            san = compile_host(prog, tmp_path_factory.mktemp(f"san-{case}"), opt="-O0", extra_flags=SANITIZE)
            plain = compile_host(prog, tmp_path_factory.mktemp(f"plain-{case}"), opt="-O0")
            built[case] = (prog, san, plain, x)
        return built[case]

    return get


@pytest.mark.parametrize("case", list(SANITIZED))
def test_host_harness_is_clean_under_asan_and_ubsan(sanitized, monkeypatch, case):
    """The plain build equals pondlib's simulators bit for bit (tests/codegen/test_cross_numerics.py); the
    sanitized one must run clean (a report exits non-zero: a CodegenError) and equal it."""
    monkeypatch.setenv("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0:halt_on_error=1")
    monkeypatch.setenv("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    prog, san, plain, x = sanitized(case)
    y, rec = run_host(san, prog, x, record=True)
    y_plain, rec_plain = run_host(plain, prog, x, record=True)
    assert y.tobytes() == y_plain.tobytes() and np.count_nonzero(y) > 0
    assert rec and all(rec[k].tobytes() == v.tobytes() for k, v in rec_plain.items())
