"""pondlib.cprogram.native: kernels built from C on first use, cached on disk, loaded by later processes
without compiling; clear errors for bad arguments; None (with the reason) where no compiler works;
background builds ahead of need (prebuild) that never block their caller nor raise in their threads."""

from __future__ import annotations

import threading
import time
import types
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


# -- background builds ahead of need (prebuild) ---------------------------------------------------------


class _Gate:
    """A stand-in for the module's build step: each build waits until the test opens it, and the gate
    records which builds ran at once (then it runs the real build)."""

    def __init__(self, real):
        self.real, self.lock, self.running, self.peak, self.order = real, threading.Lock(), 0, 0, []
        self.open = {}

    def __call__(self, name, *args):
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
            self.order.append(name)
            gate = self.open.setdefault(name, threading.Event())
        try:
            assert gate.wait(timeout=60), f"the test never opened {name}'s build"
            return self.real(name, *args)
        finally:
            with self.lock:
                self.running -= 1

    def release(self, name):
        with self.lock:
            self.open.setdefault(name, threading.Event()).set()


@pytest.fixture
def gate(monkeypatch):
    stub = _Gate(native._build)
    monkeypatch.setattr(native, "_build", stub)  # this module's build step only, not subprocess itself
    return stub


def _until(condition, what):
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def _join(threads):
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive()


def test_prebuild_returns_at_once_and_load_waits_for_the_running_build(tmp_path, monkeypatch, gate):
    monkeypatch.setenv("PONDLIB_CACHE_DIR", str(tmp_path / "cache"))
    src = _fresh(tmp_path, name="twice_e")
    threads = native.prebuild([("twice_e", src, ())])
    assert [t.name for t in threads] == ["pond-build-twice_e"]
    assert threads[0].is_alive()  # returned while its build is held shut
    assert native.prebuild([("twice_e", src, ())]) == []  # queued already: no second thread
    _until(lambda: gate.order == ["twice_e"], "the background build to start")
    waiter = threading.Timer(0.05, gate.release, args=("twice_e",))
    waiter.start()
    lib = native.load("twice_e", src)  # waits for the background build, does not build again
    waiter.join()
    _join(threads)
    assert lib is not None and lib.pond_twice(5) == 10
    assert gate.order == ["twice_e"]
    assert native.prebuild([("twice_e", src, ())]) == []  # loaded: nothing to start
    _forget("twice_e")


def test_ahead_builds_keep_to_their_slots_in_order_and_a_needed_one_is_built_at_once(tmp_path, monkeypatch, gate):
    monkeypatch.setenv("PONDLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(native, "BACKGROUND_JOBS", 1)
    names = ("twice_f", "twice_g", "twice_h")
    libs = [(n, _fresh(tmp_path, name=n), ()) for n in names]
    threads = native.prebuild(libs)
    assert len(threads) == 3
    _until(lambda: gate.order == ["twice_f"], "the first background build to start")
    # twice_f holds the only slot; twice_h, needed now, is built by its caller without waiting for it
    gate.release("twice_h")
    lib = native.load("twice_h", libs[2][1])
    assert lib is not None and lib.pond_twice(4) == 8
    assert gate.order == ["twice_f", "twice_h"] and gate.peak == 2
    gate.release("twice_f")
    gate.release("twice_g")
    _join(threads)
    assert gate.order == ["twice_f", "twice_h", "twice_g"]  # one background compiler at a time, in order
    assert all(native.load(n, s) is not None for n, s, _ in libs)
    for n in names:
        _forget(n)


def test_builds_needed_now_run_side_by_side_and_hurry_queued_ones(tmp_path, monkeypatch, gate):
    monkeypatch.setenv("PONDLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(native, "BACKGROUND_JOBS", 1)
    names = ("twice_i", "twice_j", "twice_k")
    libs = [(n, _fresh(tmp_path, name=n), ()) for n in names]
    queued = native.prebuild(libs)  # ahead: twice_i builds, the two others wait for its slot
    assert native.prebuild(libs, ahead=False) == []  # all queued: none started twice, the waiting hurried
    _until(lambda: gate.running == 3, "all three builds to run at once")
    for n in names:
        gate.release(n)
    _join(queued)
    assert gate.peak == 3 and sorted(gate.order) == sorted(names)
    for n in names:
        _forget(n)


def test_a_failing_background_build_is_reported_by_load_as_before(tmp_path, monkeypatch):
    monkeypatch.setenv("PONDLIB_CACHE_DIR", str(tmp_path / "cache"))
    src = _fresh(tmp_path, "int pond_broken(void) { return undeclared_other; }\n", name="broken_bg")
    threads = native.prebuild([("broken_bg", src, ()), ("Not A Name", src, ()), ("absent_bg", tmp_path / "no.c", ())])
    _join(threads)  # nothing raised in the threads (pytest turns a thread's exception into an error)
    assert "undeclared_other" in native.unavailable_reason("broken_bg")
    assert "CodegenError" in native.unavailable_reason("Not A Name")
    assert "kernel source not found" in native.unavailable_reason("absent_bg")
    assert native.load("broken_bg", src) is None  # the use reports it as without prebuild
    assert "undeclared_other" in native.unavailable_reason("broken_bg")
    with pytest.raises(CodegenError, match="kernel library name"):
        native.load("Not A Name", src)


def test_prebuild_without_a_compiler_starts_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PONDLIB_CC", "none")
    assert native.prebuild([("twice_l", _fresh(tmp_path, name="twice_l"), ())]) == []


@settings(max_examples=25, deadline=None)
@given(
    ahead=st.one_of(st.none(), st.integers(), st.text(max_size=5), st.floats(allow_nan=True), st.lists(st.booleans()))
)
def test_bad_ahead_is_refused(ahead):
    with pytest.raises(CodegenError, match="ahead"):
        native.prebuild([], ahead=ahead)


def test_an_ahead_build_waits_while_a_needed_build_takes_the_free_core(tmp_path, monkeypatch, gate):
    monkeypatch.setenv("PONDLIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(native, "BACKGROUND_JOBS", 1)
    need, later = _fresh(tmp_path, name="twice_m"), _fresh(tmp_path, name="twice_n")
    user = threading.Thread(target=native.load, args=("twice_m", need))  # a caller building what it needs
    user.start()
    _until(lambda: gate.order == ["twice_m"], "the needed build to start")
    threads = native.prebuild([("twice_n", later, ())])
    time.sleep(0.2)
    assert gate.order == ["twice_m"]  # the ahead build has not started beside it
    gate.release("twice_m")
    gate.release("twice_n")
    user.join(timeout=60)
    _join(threads)
    assert gate.order == ["twice_m", "twice_n"] and gate.peak == 1
    assert native.load("twice_n", later).pond_twice(2) == 4
    for n in ("twice_m", "twice_n"):
        _forget(n)


def test_a_thread_that_cannot_start_leaves_nothing_queued(tmp_path, monkeypatch):
    monkeypatch.setenv("PONDLIB_CACHE_DIR", str(tmp_path / "cache"))

    class NoThread(threading.Thread):
        def start(self):
            raise RuntimeError("can't start new thread")

    libs = [(n, _fresh(tmp_path, name=n), ()) for n in ("twice_o", "twice_p")]
    with monkeypatch.context() as m:
        m.setattr(native, "threading", types.SimpleNamespace(Thread=NoThread))
        assert native.prebuild(libs) == [] and native.prebuild(libs[1:], ahead=False) == []
    assert not {"twice_o", "twice_p"} & (set(native._waiting) | native._queued)
    monkeypatch.setattr(native, "BACKGROUND_JOBS", 1)  # a slot leaked above would hold these up for ever
    threads = native.prebuild(libs)  # nothing left in line: both build, one after the other
    _join(threads)
    assert [native.load(n, s).pond_twice(1) for n, s, _ in libs] == [2, 2]
    for n, _, _ in libs:
        _forget(n)
