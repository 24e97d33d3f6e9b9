"""Every tutorial in tutorials/ runs end to end (each asserts its own key claims).

A tutorial is a percent-cell script (``# %%``), so it is also a notebook; here it runs as a plain
script with :mod:`runpy`, in a temporary working directory (files it writes land there), with a
non-interactive matplotlib backend.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

TUTORIALS = sorted((Path(__file__).resolve().parents[1] / "tutorials").glob("[0-9]*.py"))


def test_tutorials_are_found():
    assert TUTORIALS, "no tutorials/NN_*.py found"


@pytest.mark.slow
@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs(path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace = runpy.run_path(str(path), run_name="__main__")
    assert namespace, path
    assert capsys.readouterr().out.strip(), f"{path.name} printed nothing"
