"""The house rules of docs/architecture.md, enforced: import contracts, lint, format, file sets.

``lint-imports`` checks the contracts in ``pyproject.toml`` (layers import one way, no device imports
another, no circles between sibling modules); ``ruff`` checks lint and format; the file-set test
checks that every device package has the same files.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ("xylo", "spinnaker2", "siracusa")
FILE_SET = ("__init__.py", "limits.py", "specification.py", "mapper.py", "config.py", "sim.py", "report.py")


def _tool(name: str) -> str:
    """The console script installed beside this interpreter (the test extra installs it)."""
    exe = Path(sys.executable).with_name(name)
    found = str(exe) if exe.exists() else shutil.which(name)
    assert found, f"{name} is not installed: install the test extra (pip install -e '.[test]')"
    return found


def _run(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.xdist_group("tools")
def test_import_contracts_are_kept():
    res = _run(_tool("lint-imports"), "--no-cache")
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert "BROKEN" not in res.stdout
    assert res.stdout.count("KEPT") >= 4


@pytest.mark.xdist_group("tools")
def test_ruff_lint_is_clean():
    res = _run(_tool("ruff"), "check", "--no-cache", ".")
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]


@pytest.mark.xdist_group("tools")
def test_ruff_format_is_clean():
    res = _run(_tool("ruff"), "format", "--check", "--no-cache", ".")
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]


@pytest.mark.parametrize("device", DEVICES)
def test_every_device_has_the_same_file_set(device):
    files = {p.name for p in (ROOT / "pondlib" / "devices" / device).glob("*.py")}
    assert set(FILE_SET) <= files, f"{device} lacks {sorted(set(FILE_SET) - files)}"


def _pondlib_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pondlib"):
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("pondlib"))
    return out


def test_the_library_never_imports_the_commands():
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "pondlib").rglob("*.py")
        if "cli" not in p.relative_to(ROOT / "pondlib").parts
        and any(m == "pondlib.cli" or m.startswith("pondlib.cli.") for m in _pondlib_imports(p))
    ]
    assert offenders == []


def test_commands_hold_no_device_logic():
    """A command module imports a device's public API or its report, never its internals."""
    allowed_suffixes = ("", ".report", ".limits", ".config", ".hdk")
    bad = []
    for p in (ROOT / "pondlib" / "cli").glob("*.py"):
        for mod in _pondlib_imports(p):
            if mod.startswith("pondlib.devices.") and mod.count(".") >= 2:
                device = ".".join(mod.split(".")[:3])
                if mod[len(device) :] not in allowed_suffixes:
                    bad.append(f"{p.name}: {mod}")
    assert bad == []


def test_no_module_is_a_monolith():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in (ROOT / "pondlib").rglob("*.py")}
    assert sizes and max(sizes.values()) <= 1000, sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
