"""pondlib.cprogram.native: kernels built from C on first use, cached on disk, loaded by later processes
without compiling; clear errors for bad arguments; None (with the reason) where no compiler works."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pondlib.cprogram import native
from pondlib.errors import CodegenError

pytestmark = pytest.mark.skipif(native.compiler() is None, reason="no C compiler on this machine")

_SOURCE = "int pond_twice(int x) { return 2 * x; }\n"


def _fresh(tmp_path: Path, text: str = _SOURCE, name: str = "twice") -> Path:
    src = tmp_path / f"{name}.c"
    src.write_text(text)
    return src


def _forget(name: str) -> None:
    native._loaded.pop(name, None)


def test_built_once_then_loaded_from_the_cache_without_compiling(tmp_path, monkeypatch):
    src = _fresh(tmp_path, name="twice_a")
    cache = tmp_path / "cache"
    lib = native.load("twice_a", src, folder=cache)
    assert lib is not None and lib.pond_twice(21) == 42
    built = sorted(cache.glob("twice_a-*.so"))
    assert len(built) == 1
    _forget("twice_a")  # as a fresh process would: the library is on disk, not in memory

    def refuse(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(native, "_build", refuse)  # this module's build step only, not subprocess itself
    again = native.load("twice_a", src, folder=cache)
    assert again is not None and again.pond_twice(-4) == -8
    assert sorted(cache.glob("twice_a-*.so")) == built
    _forget("twice_a")


def test_a_changed_source_builds_a_new_library(tmp_path):
    cache = tmp_path / "cache"
    src = _fresh(tmp_path, name="twice_b")
    assert native.load("twice_b", src, folder=cache).pond_twice(3) == 6
    _forget("twice_b")
    src.write_text("int pond_twice(int x) { return 3 * x; }\n")
    assert native.load("twice_b", src, folder=cache).pond_twice(3) == 9
    assert len(list(cache.glob("twice_b-*.so"))) == 2
    _forget("twice_b")


def test_no_compiler_gives_none_and_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("PONDLIB_CC", "none")
    assert native.compiler() is None
    assert native.load("twice_c", _fresh(tmp_path, name="twice_c"), folder=tmp_path) is None
    assert "no C compiler" in native.unavailable_reason("twice_c")


def test_a_failing_build_gives_none_and_the_compiler_message(tmp_path):
    src = _fresh(tmp_path, "int pond_broken(void) { return undeclared_thing; }\n", name="broken")
    assert native.load("broken", src, folder=tmp_path / "cache") is None
    assert "undeclared_thing" in native.unavailable_reason("broken")
    assert not list((tmp_path / "cache").glob("broken-*.so"))  # nothing half-written is kept


@settings(max_examples=25, deadline=None)
@given(name=st.one_of(st.text(max_size=80), st.integers(), st.none(), st.just("Upper"), st.just("1abc")))
def test_bad_names_are_refused(tmp_path_factory, name):
    if isinstance(name, str) and name and name[0].islower() and name.isascii() and name.replace("_", "a").isalnum():
        return  # a valid identifier: not this test's subject
    src = _fresh(tmp_path_factory.mktemp("bad"), name="ok_source")
    with pytest.raises(CodegenError, match="kernel library name"):
        native.load(name, src)


def test_missing_source_and_bad_include_dirs_are_refused(tmp_path):
    with pytest.raises(CodegenError, match="kernel source not found"):
        native.load("absent", tmp_path / "absent.c")
    with pytest.raises(CodegenError, match="include_dirs"):
        native.load("twice_d", _fresh(tmp_path, name="twice_d"), include_dirs="not-a-tuple")
