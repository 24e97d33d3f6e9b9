"""The house rules of docs/architecture.md, enforced: import contracts, lint, format, file sets, the
device registry, that nothing outside a chip's folder and the registry names a chip, and sizes.

``lint-imports`` checks the contracts in ``pyproject.toml`` (layers import one way, no chip imports
another, a chip's mapping path never imports nn, no circles between sibling modules); ``ruff`` checks
lint and format; the file-set test checks that every chip package has the same parts.
"""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pondlib.devices import registry

ROOT = Path(__file__).resolve().parents[1]
#: The chips of pondlib (the registry's built-in table: a new chip is one folder and one line there).
DEVICES = tuple(registry.BUILTIN)
#: The parts every chip has (docs/architecture.md).
FILE_SET = (
    "__init__.py",
    "limits.py",
    "specification.py",
    "mapper.py",
    "config.py",
    "sim.py",
    "report.py",
    "aware.py",
    "codegen.py",
    "device.py",
)
#: Longest function or method in pondlib/ (lines from ``def`` to the last line, docstring included).
MAX_FUNCTION_LINES = 120


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


def _chip_mentions(path: Path, chips: tuple[str, ...]) -> list[str]:
    """Where ``path`` names a chip in code: an import of a chip's package, an identifier, or a string
    constant that is not a docstring (prose in docstrings and comments may mention examples)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
        and isinstance(node.body[0].value.value, str)
    }
    words = re.compile(r"(?<![a-z0-9])(" + "|".join(chips) + r")(?![a-z0-9])", re.IGNORECASE)
    found = []
    for node in ast.walk(tree):
        texts: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            texts = [node.module]
        elif isinstance(node, ast.Import):
            texts = [a.name for a in node.names]
        elif isinstance(node, ast.Name):
            texts = [node.id]
        elif isinstance(node, ast.Attribute):
            texts = [node.attr]
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            texts = [node.name]
        elif isinstance(node, ast.arg):
            texts = [node.arg]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            texts = [node.value]
        for text in texts:
            if words.search(text.replace("_", " ")):
                found.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}: {text[:60]!r}")
    return found


def test_nothing_outside_a_chip_folder_and_the_registry_names_a_chip():
    """The commands, the pipeline, transform, codegen, io, ... loop over the registry; a chip's name (in an
    import, an identifier or a string) appears only in its own folder and the registry's table."""
    chips = tuple(registry.BUILTIN)
    allowed = {ROOT / "pondlib" / "devices" / "registry.py"}
    offenders = []
    for p in sorted((ROOT / "pondlib").rglob("*.py")):
        parts = p.relative_to(ROOT / "pondlib").parts
        if p in allowed or (len(parts) > 2 and parts[0] == "devices" and parts[1] in chips):
            continue
        offenders += _chip_mentions(p, chips)
    assert offenders == []


def test_the_registry_loads_every_chip_and_each_keeps_the_device_contract():
    from pondlib.devices.core.device import Device
    from pondlib.devices.core.report import LimitRow

    assert registry.names()[: len(DEVICES)] == DEVICES
    for name in DEVICES:
        d = registry.get(name)
        assert isinstance(d, Device) and d.name == name
        assert type(d).__module__ == f"pondlib.devices.{name}.device"
        rows = {v: d.limit_rows(v) for v in d.variants}
        first = next(iter(rows.values()))
        assert all(isinstance(r, LimitRow) for r in first)
        for v, vrows in rows.items():  # every variant described by the same rows
            assert [r.name for r in vrows] == [r.name for r in first], (name, v)
            assert d.limits(v) is d.variants[v]
        flags = [o.flag for o in d.options]
        assert len(set(flags)) == len(flags)
        assert d.deploy_settings.limits is None or d.deploy_settings.limits in d.variants
        assert set(d.deploy_settings.options) <= {o.name for o in d.options}
        for old, new in d.moved.items():  # every moved name points at an existing object
            module, _, attr = new.partition(":")
            assert hasattr(importlib.import_module(module), attr), (old, new)


def test_no_function_is_too_long():
    """No function or method in pondlib/ is longer than MAX_FUNCTION_LINES (a mapper extracts the topology,
    runs its rules, assembles; an emitter fills templates)."""
    long = []
    for p in (ROOT / "pondlib").rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{p.relative_to(ROOT)}:{node.lineno} {node.name}: {n} lines")
    assert long == [], sorted(long)


def test_no_module_is_a_monolith():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in (ROOT / "pondlib").rglob("*.py")}
    assert sizes and max(sizes.values()) <= 1000, sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
