"""The shared core of pondlib.codegen: literals, the arena planner, the assembled program, host build and run."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.codegen import generate
from pondlib.codegen.toolchain import compile_host, run_host
from pondlib.cprogram.program import Buffer, Constant, build_program, c_identifier, c_literal, plan_arena
from pondlib.errors import CodegenError
from tests.strategies import assert_pond_error, bad_types, non_finite_arrays, wrong_dtype_arrays

FEW = settings(max_examples=20, deadline=None)


def _program(name="acc"):
    return build_program(
        name,
        "xylo",
        constants=[Constant("gain", "int32_t", [2, -3]), Constant("half", "float", [0.5, -(2.0**-140)])],
        buffers=[
            Buffer("total", "int32_t", 2, "state", init=[5, -7]),
            Buffer("v", "float", 2, "state", init=0.25),
            Buffer("tmp", "int32_t", 2, "scratch", (0, 1)),
        ],
        step_body=(
            "for (int i = 0; i < 2; ++i) {\n"
            "    tmp[i] = gain[i] * x[i];\n    total[i] += tmp[i];\n    y[i] = total[i];\n    v[i] = v[i] * half[i];\n"
            "}"
        ),
        n_in=2,
        in_ctype="int32_t",
        n_out=2,
        out_ctype="int32_t",
    )


def test_literals_read_back_the_exact_bits():
    assert c_literal(-(2**31), "int32_t") == "(-2147483647 - 1)"
    assert c_literal(-(2**63), "int64_t") == "(-9223372036854775807LL - 1)"
    assert c_literal(0.1, "float") == "0x1.99999ap-4f" and float.fromhex("0x1.99999ap-4") == float(np.float32(0.1))
    assert c_literal(-0.0, "float") == "-0.0f"
    tiny = float(np.float32(2.0**-140))  # float32 subnormal: written as an exact hex literal
    assert float.fromhex(c_literal(tiny, "float")[:-1]) == tiny
    assert_pond_error(c_literal, 128, "int8_t", match="int8_t")
    assert_pond_error(c_literal, float("nan"), "float", match="float")


@given(
    st.one_of(bad_types().filter(lambda v: not isinstance(v, str)), st.sampled_from(["1net", "int", "x", "a b", ""]))
)
@FEW
def test_names_must_be_c_identifiers(name):
    assert_pond_error(c_identifier, name, error=CodegenError)


def test_arena_shares_only_what_is_never_live_together():
    sizes = [4, 8, 2, 16, 4]
    bufs = [Buffer(f"h{i}", "int32_t", n, "scratch", (i, i + 1)) for i, n in enumerate(sizes)]
    plan = plan_arena(bufs)
    for a, b in itertools.combinations(bufs, 2):
        overlap_time = not (a.live[1] < b.live[0] or b.live[1] < a.live[0])
        lo_a, lo_b = plan.offsets[a.name], plan.offsets[b.name]
        overlap_mem = lo_a < lo_b + b.nbytes and lo_b < lo_a + a.nbytes
        assert not (overlap_time and overlap_mem), (a.name, b.name)
    assert plan.size < sum(b.nbytes for b in bufs)
    assert all(off % 8 == 0 for off in plan.offsets.values())


def test_program_runs_on_the_host_from_a_relative_directory(tmp_path, monkeypatch):
    prog = _program()
    assert sorted(prog.sources) == ["Makefile", "README.md", "acc.c", "acc.h", "main.c"]
    assert prog.memory.flash_bytes == 16 and prog.memory.ram_bytes == 16 + 8
    monkeypatch.chdir(tmp_path)
    exe = compile_host(prog, "build")  # relative: the compiler runs inside it
    x = np.array([[[1, 1], [2, 0], [0, 3]], [[0, 0], [1, 1], [1, 1]]])
    y, rec = run_host(exe, prog, x, record=True)
    assert y.tolist() == [[[7, -10], [11, -10], [11, -19]], [[5, -7], [7, -10], [9, -13]]]
    assert np.array_equal(rec["total"], y)
    assert rec["v"][0, :, 0].tolist() == [0.125, 0.0625, 0.03125]
    y1, rec1 = run_host(exe, prog, x[0])  # unbatched
    assert np.array_equal(y1, y[0]) and rec1 is None


def test_a_failed_compile_shows_the_compiler_message(tmp_path):
    prog = build_program(
        "broken",
        "float32",
        constants=[],
        buffers=[],
        step_body="y[0] = undefined_name;",
        n_in=1,
        in_ctype="float",
        n_out=1,
        out_ctype="float",
    )
    err = assert_pond_error(compile_host, prog, tmp_path, error=CodegenError)
    assert "undefined_name" in str(err)


@given(x=st.one_of(non_finite_arrays((3, 2)), wrong_dtype_arrays((3, 2)), bad_types()))
@FEW
def test_run_host_refuses_bad_input(x, tmp_path_factory):
    prog = _program("bad_in")
    exe = _compiled(prog, tmp_path_factory)
    assert_pond_error(run_host, exe, prog, x, error=CodegenError)


def test_run_host_refuses_values_the_input_type_cannot_hold(tmp_path):
    prog = _program("wide")
    exe = compile_host(prog, tmp_path)
    assert_pond_error(run_host, exe, prog, np.full((2, 2), 2.0**40), error=CodegenError, match="integers")
    assert_pond_error(run_host, exe, prog, np.full((2, 2), 0.5), error=CodegenError)
    assert_pond_error(run_host, exe, prog, np.zeros((2, 3)), error=CodegenError, match="shape")


_EXES: dict = {}


def _compiled(prog, factory):
    if prog.name not in _EXES:
        _EXES[prog.name] = compile_host(prog, factory.mktemp(prog.name))
    return _EXES[prog.name]


@given(st.one_of(bad_types(), st.sampled_from(["int8", "fixed", "XYLO"])))
@FEW
def test_generate_names_the_numerics(numerics):
    assert_pond_error(generate, object(), numerics, error=CodegenError)


def test_bad_buffers_and_duplicate_names_are_refused():
    assert_pond_error(Buffer, "b", "int32_t", 0, error=CodegenError, match="size")
    assert_pond_error(Buffer, "b", "double", 1, error=CodegenError, match="type")
    assert_pond_error(Buffer, "b", "int32_t", 1, "scratch", None, error=CodegenError, match="lifetime")
    assert_pond_error(
        build_program,
        "dup",
        "xylo",
        constants=[Constant("w", "int8_t", [1])],
        buffers=[Buffer("w", "int32_t", 1)],
        step_body="",
        n_in=1,
        in_ctype="int8_t",
        n_out=1,
        out_ctype="int8_t",
        error=CodegenError,
        match="duplicate",
    )
