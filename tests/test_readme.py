"""The README's quick start runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_quick_start_runs():
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README has no python quick start"
    code = blocks[0]
    assert len(code.strip().splitlines()) <= 12
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)
    assert namespace["ok"], namespace["msg"]
    assert namespace["y"].shape == (4, 100, 8)
    assert namespace["out"].shape == (4, 100, 8)
    assert set(namespace["record"]) >= {"Vmem", "Isyn", "Spikes", "Vmem_out", "Isyn_out"}
    assert np.issubdtype(np.asarray(namespace["y"]).dtype, np.integer)


def test_readme_commands_match_ci():
    text = README.read_text()
    ci = (README.parent / ".ci" / "run").read_text()
    for cmd in ("python -m pip install -e . && pond demo", 'python -m pip install -e ".[test]" && python -m pytest'):
        assert cmd in text and cmd in ci


def test_readme_pipeline_block_runs():
    """The 'pipeline in one call' block: a real deployment with a fine-tuned twin, every number in range."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    code = next(b for b in blocks if "pondlib.deploy(" in b)
    namespace: dict = {"print": lambda *a, **k: None}
    exec(compile(code, str(README), "exec"), namespace)
    dep = namespace["dep"]
    assert dep.device == "siracusa" and dep.name == "Siracusa"
    for acc in (dep.float_acc, dep.as_trained_acc, dep.aware_float_acc, dep.device_acc):
        assert 0.0 <= acc <= 1.0
    assert dep.device_acc == dep.aware_float_acc  # the twin runs the chip's arithmetic exactly
    assert set(dep.spikes_equal) == {"hidden", "output"} and min(dep.spikes_equal.values()) == 1.0
    assert dep.table().title.startswith("Result on Siracusa")
