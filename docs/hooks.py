"""MkDocs hooks of pondlib's documentation site (mkdocs.yml ``hooks:``).

At build time they add three kinds of generated page to the hand-written ones under ``docs/``:

- ``api/``: one page per public module of pondlib (``::: module`` for mkdocstrings) and an index of them;
- ``cli.md``: the help text of ``pond`` and of each of its commands, from the parser itself;
- ``tutorials/NN_name.md``: each script of ``tutorials/`` cell by cell, with what each cell printed and
  the figures it saved. The scripts run at build time, each in a fresh process and a temporary folder with
  ``MPLBACKEND=Agg``; a cell that raises fails the build. Results are cached under
  ``$PONDLIB_DOCS_CACHE`` (default ``~/.cache/pondlib-docs``), keyed by the script and every pondlib
  source file, so a rebuild without changes runs nothing. ``PONDLIB_DOCS_TUTORIALS`` picks what runs:
  ``all`` (the default), ``none``, or a comma-separated list of script names (``01_build_network``);
  a tutorial that does not run is shown as code with a note saying so.

After rendering, LaTeX (``$...$`` and ``$$...$$``, turned into ``arithmatex`` spans by
``pymdownx.arithmatex``) becomes MathML (``latex2mathml``), which browsers draw without JavaScript, so
the site reads the same offline and from disk. A formula that does not convert fails the build.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.pondlib")

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pondlib"
TUTORIALS = ROOT / "tutorials"
CELL = re.compile(r"^# %%(?P<kind>.*)$", re.M)

# ---------------------------------------------------------------------------------------------- API pages


def public_modules() -> list[str]:
    """Dotted names of pondlib's public modules (no path part starts with ``_``), packages first."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts) or "templates" in parts:
            continue
        names.append(".".join(parts))
    return sorted(names)


def api_page(module: str) -> str:
    """The Markdown of one module's API page."""
    return f"# `{module}`\n\n::: {module}\n"


def api_index(modules: list[str]) -> str:
    """The API reference's index: every module, indented by package, with the first line of its docstring."""
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings (mkdocstrings); one page per module. The packages a user imports are",
        "`pondlib` (`pondlib.deploy`), `pondlib.nn`, `pondlib.graph`, `pondlib.devices` (the registry and one",
        "package per chip), `pondlib.transform`, `pondlib.interop`, `pondlib.codegen`, `pondlib.explore`,",
        "`pondlib.training`, `pondlib.datasets`, `pondlib.plot`, `pondlib.io` and `pondlib.errors`.",
        "",
    ]
    for module in modules:
        depth = module.count(".")
        summary = _summary(module)
        lines.append(f"{'    ' * max(depth - 1, 0)}- [`{module}`]({module}.md){' — ' + summary if summary else ''}")
    return "\n".join(lines) + "\n"


def _summary(module: str) -> str:
    """The first sentence of a module's docstring, read statically (nothing is imported)."""
    import ast

    parts = module.split(".")
    path = ROOT.joinpath(*parts).with_suffix(".py")
    if not path.exists():
        path = ROOT.joinpath(*parts, "__init__.py")
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    first = doc.strip().split("\n\n")[0].replace("\n", " ")
    first = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", first).replace("``", "`")
    return first.split(". ")[0].rstrip(".")


# ---------------------------------------------------------------------------------------------- CLI page


def cli_page() -> str:
    """The help of ``pond`` and of each command, as the parser prints it."""
    os.environ.setdefault("COLUMNS", "110")
    from pondlib.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    parts = [
        "# The `pond` command",
        "",
        "Every command's help, generated from the parser at build time (`pond COMMAND --help` prints the same).",
        "Errors are one line (`error: ...`) and a non-zero exit status: 1 when a command fails, 2 for a bad",
        "command line. See also [getting started](getting-started.md).",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
    ]
    for name, command in sub.choices.items():
        parts += ["", f"## `pond {name}`", "", "```text", command.format_help().rstrip(), "```"]
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------------------- tutorials

# Runs one tutorial cell by cell in a fresh interpreter; writes result.json into the working directory.
RUNNER = r"""
import contextlib, io, json, os, re, sys, traceback
source = open(sys.argv[1]).read()
cells = re.split(r"^# %%.*$", source, flags=re.M)
kinds = re.findall(r"^# %%(.*)$", source, flags=re.M)
namespace = {"__name__": "__main__", "__file__": sys.argv[1]}
results, seen = [], {}
for index, (kind, code) in enumerate(zip(kinds, cells[1:])):
    if "markdown" in kind:
        results.append(None)
        continue
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"{sys.argv[1]} (cell {index + 1})", "exec"), namespace)
    except BaseException:
        json.dump({"error": traceback.format_exc(), "cell": index + 1}, open("result.json", "w"))
        sys.exit(1)
    figures = []
    for name in sorted(os.listdir(".")):
        if name.endswith((".png", ".svg")) and seen.get(name) != os.stat(name).st_mtime_ns:
            seen[name] = os.stat(name).st_mtime_ns
            figures.append(name)
    results.append({"stdout": out.getvalue(), "figures": figures})
json.dump({"cells": results}, open("result.json", "w"))
"""


def _source_key() -> str:
    """A hash of every pondlib source file: a tutorial's cached output is valid while none changes."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".c", ".h", ".tmpl", ".json", ".npz", ".npy"):
            digest.update(str(path.relative_to(ROOT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def run_tutorial(script: Path, cache: Path, source_key: str) -> Path:
    """Run ``script`` (or reuse its cached run); the folder holding ``result.json`` and its figures."""
    key = hashlib.sha256(script.read_bytes()).hexdigest()[:16] + "-" + source_key
    folder = cache / f"{script.stem}-{key}"
    if (folder / "result.json").exists():
        return folder
    with tempfile.TemporaryDirectory(prefix=f"pondlib-docs-{script.stem}-") as tmp:
        env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
        proc = subprocess.run(
            [sys.executable, "-c", RUNNER, str(script)], cwd=tmp, env=env, capture_output=True, text=True
        )
        result = Path(tmp, "result.json")
        if proc.returncode != 0 or not result.exists():
            detail = json.loads(result.read_text()) if result.exists() else {"error": proc.stderr, "cell": "?"}
            raise PluginError(f"tutorial {script.name}, cell {detail['cell']} failed:\n{detail['error']}")
        folder.mkdir(parents=True, exist_ok=True)
        for item in Path(tmp).iterdir():
            if item.suffix in (".png", ".svg", ".json"):
                (folder / item.name).write_bytes(item.read_bytes())
    return folder


def tutorial_page(script: Path, folder: Path | None) -> str:
    """A tutorial as Markdown: its prose, its code and, when it ran, each cell's output and figures."""
    source = script.read_text()
    kinds = CELL.findall(source)
    bodies = re.split(r"^# %%.*$", source, flags=re.M)[1:]
    results = json.loads((folder / "result.json").read_text())["cells"] if folder else [None] * len(kinds)
    parts: list[str] = []
    for index, (kind, body, result) in enumerate(zip(kinds, bodies, results)):
        if "markdown" in kind:
            text = "\n".join(re.sub(r"^# ?", "", line) for line in body.strip("\n").splitlines())
            parts.append(text)
            if index == 0:
                parts.append(_tutorial_note(script, folder))
            continue
        parts.append(f"```python\n{body.strip()}\n```")
        if result and result["stdout"].strip():
            parts.append(f'```text title="output"\n{result["stdout"].rstrip()}\n```')
        for name in result["figures"] if result else []:
            parts.append(f"![{name}]({script.stem}/{name})")
    return "\n\n".join(parts) + "\n"


def _tutorial_note(script: Path, folder: Path | None) -> str:
    ran = (
        "The outputs and figures below were produced when this site was built."
        if folder
        else "This build did not run the script (`PONDLIB_DOCS_TUTORIALS`), so only its code is shown."
    )
    return (
        f'!!! note "Run it yourself"\n    `python tutorials/{script.name}` runs this tutorial '
        f"([download]({script.name})); the test suite runs each one. {ran}"
    )


def selected(scripts: list[Path], choice: str | None = None) -> list[Path]:
    """The tutorials ``choice`` (default: ``$PONDLIB_DOCS_TUTORIALS``, else ``all``) asks to run."""
    choice = (os.environ.get("PONDLIB_DOCS_TUTORIALS", "all") if choice is None else choice).strip()
    if choice == "all":
        return scripts
    if choice == "none":
        return []
    wanted = {c.strip() for c in choice.split(",") if c.strip()}
    unknown = wanted - {s.stem for s in scripts}
    if unknown:
        raise PluginError(
            f"PONDLIB_DOCS_TUTORIALS names {sorted(unknown)}, which are not tutorials; "
            f"expected 'all', 'none' or some of {[s.stem for s in scripts]}"
        )
    return [s for s in scripts if s.stem in wanted]


# ---------------------------------------------------------------------------------------------- hooks


def on_files(files: Files, config) -> Files:
    """Add the generated pages (API, CLI, tutorials) and the tutorials' scripts and figures."""
    modules = public_modules()
    for module in modules:
        files.append(File.generated(config, f"api/{module}.md", content=api_page(module)))
    files.append(File.generated(config, "api/index.md", content=api_index(modules)))
    files.append(File.generated(config, "cli.md", content=cli_page()))

    scripts = sorted(TUTORIALS.glob("[0-9]*.py"))
    run = selected(scripts)
    key = _source_key()
    cache = Path(os.environ.get("PONDLIB_DOCS_CACHE", Path.home() / ".cache" / "pondlib-docs"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        folders = dict(zip(run, pool.map(lambda s: run_tutorial(s, cache, key), run)))
    for script in scripts:
        folder = folders.get(script)
        files.append(File.generated(config, f"tutorials/{script.stem}.md", content=tutorial_page(script, folder)))
        files.append(File.generated(config, f"tutorials/{script.name}", abs_src_path=str(script)))
        for figure in sorted(folder.glob("*.png")) if folder else []:
            files.append(File.generated(config, f"tutorials/{script.stem}/{figure.name}", abs_src_path=str(figure)))
    return files


LIMITS_MARK = "<!-- pondlib:limits -->"


def limits_markdown(name: str) -> str:
    """The limits of every variant of the registered device ``name``, as ``pond devices`` lists them."""
    from pondlib.devices import registry

    device = registry.get(name)
    variants = device.variants
    described = [device.limit_rows(lim) for lim in variants.values()]
    head = ["limit", "unit", *[f"{lim.name} (`{short}`)" for short, lim in variants.items()]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * len(variants)]
    for i, row in enumerate(described[0]):
        cells = [row.name, row.unit, *[rows[i].value for rows in described]]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


RULES_MARK = "<!-- pondlib:rules -->"


def rules_markdown(name: str) -> str:
    """The design rules device ``name`` checks (``RULES`` tables of its mapper and rules: id -> prose)."""
    import importlib

    rules: dict[str, str] = {}
    for module, attr in (("mapper", "RULES"), ("rules", "MAPPER_RULES"), ("rules", "RULES")):
        try:
            table = getattr(importlib.import_module(f"pondlib.devices.{name}.{module}"), attr, None)
        except ImportError:
            continue
        if isinstance(table, dict):
            rules.update({k: v for k, v in table.items() if k not in rules})
    if not rules:
        raise PluginError(f"docs/chips/{name}.md asks for the rules of {name!r}, whose mapper has no RULES table")
    lines = ["| rule | what it checks |", "|---|---|"]
    for rule, prose in rules.items():
        text = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", " ".join(str(prose).split())).replace("|", "\\|")
        lines.append(f"| `{rule}` | {text} |")
    return "\n".join(lines)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """A chip page (``chips/<name>.md``) gets its limits and rules tables from the device registry."""
    name = Path(page.file.src_uri).stem
    if LIMITS_MARK in markdown:
        markdown = markdown.replace(LIMITS_MARK, limits_markdown(name))
    if RULES_MARK in markdown:
        markdown = markdown.replace(RULES_MARK, rules_markdown(name))
    return markdown


MATH_SPAN = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">(?P<tex>.*?)</(?P=tag)>',
    re.S,
)


def _mathml(match: re.Match, page) -> str:
    from latex2mathml.converter import convert

    tex = html.unescape(match["tex"]).strip()
    display = match["tag"] == "div"
    for left, right in (("\\[", "\\]"), ("\\(", "\\)")):
        if tex.startswith(left) and tex.endswith(right):
            tex = tex[len(left) : -len(right)].strip()
    # latex2mathml lays out align* (not aligned) as a table of rows
    tex = tex.replace("{aligned}", "{align*}")
    try:
        mathml = convert(tex, display="block" if display else "inline")
    except Exception as exc:  # latex2mathml raises its own exception types and plain ones
        log.warning("%s: the formula %r does not convert to MathML: %s", page.file.src_uri, tex, exc)
        return match.group(0)
    return f'<div class="math">{mathml}</div>' if display else mathml


def on_page_content(html_text: str, page, config, files) -> str:
    """LaTeX of every page (prose and docstrings) as MathML."""
    return MATH_SPAN.sub(lambda m: _mathml(m, page), html_text)
