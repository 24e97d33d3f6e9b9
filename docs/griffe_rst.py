"""A griffe extension that turns the reStructuredText markup of pondlib's docstrings into Markdown.

pondlib's docstrings are Google-style sections (``Args:``, ``Returns:``, ``Raises:``, ``Example:``) whose
prose uses reStructuredText: roles (``:func:`x```, ``:class:`~a.B```, ``:math:`x```), ``.. math::`` blocks
and simple tables (``====  ====`` borders). mkdocstrings renders docstrings as Markdown, so before it
parses them this extension rewrites, in every object of the package:

- ``:math:`x``` to ``$x$`` and ``.. math::`` blocks to ``$$ ... $$`` (``aligned`` where the block aligns
  with ``&`` or has several lines); docs/hooks.py turns both into MathML;
- ``:func:`target```, ``:class:`~a.b.C``` ... to a cross-reference on ``target`` resolved the way Sphinx
  would (the enclosing class, the module, its parents, then absolute), shown as code; an unresolved one
  stays code;
- simple tables to Markdown tables (a row whose first cell is blank continues the row above);
- a paragraph's closing ``::`` (a literal block follows) to ``:``.

Doctest blocks (``>>>`` up to the next blank line) are fenced as ``pycon`` code and left exactly as written
(griffe shows an ``Example:`` section, a name its Google parser does not know, as an admonition).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import griffe

ROLE = re.compile(r":(?P<role>[a-z]+):`(?P<body>[^`]+)`")
BORDER = re.compile(r"^(?P<indent>\s*)=+( +=+)+\s*$")
MATH = re.compile(r"^(?P<indent>\s*)\.\. math::\s*(?P<rest>.*)$")


def _objects(obj: griffe.Object) -> Iterator[griffe.Object]:
    """Every object defined in ``obj`` (itself first), aliases left out."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)


class RstToMarkdown(griffe.Extension):
    """Rewrite every docstring of a loaded package from reStructuredText markup to Markdown."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: object) -> None:
        """Called by griffe once the whole package is loaded (so references can be resolved)."""
        for obj in _objects(pkg):
            if obj.docstring is not None:
                obj.docstring.value = convert(obj.docstring.value, lambda name, o=obj: _resolve(o, name))


def _resolve(obj: griffe.Object, name: str) -> str | None:
    """The full path ``name`` refers to from inside ``obj`` (Sphinx's search order), or None."""
    scopes = []
    scope: griffe.Object | None = obj
    while scope is not None:
        scopes.append(scope.path)
        scope = scope.parent
    for base in [*scopes, ""]:
        path = f"{base}.{name}" if base else name
        try:
            target = obj.modules_collection[path]
        except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            continue
        try:
            return target.final_target.path if target.is_alias else target.path
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            return path
    return None


def _role(match: re.Match, resolve) -> str:
    role, body = match["role"], match["body"]
    if role == "math":
        return f"${body}$"
    title, _, target = body.partition(" <")
    if target:
        target = target.rstrip(">")
    else:
        target = title
        if title.startswith("~"):
            target = title[1:]
            title = target.rsplit(".", 1)[-1]
    target = target.removesuffix("()")
    shown = f"<code>{html.escape(title)}</code>"
    path = resolve(target) if resolve is not None else None
    if path is None:
        return shown
    return f'<autoref optional identifier="{html.escape(path)}">{shown}</autoref>'


def _math_block(lines: list[str], i: int, indent: str, rest: str) -> tuple[list[str], int]:
    """The ``.. math::`` directive at ``lines[i]`` as a ``$$`` block; returns it and the next line index."""
    body = [rest] if rest.strip() else []
    j = i + 1
    while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > len(indent)):
        body.append(lines[j].strip())
        j += 1
    while body and not body[-1]:
        body.pop()
    # blank-line separated paragraphs are separate equations (as in Sphinx): one row each
    paragraphs = [" ".join(p.split("\n")) for p in "\n".join(body).split("\n\n") if p.strip()]
    tex = paragraphs
    if len(paragraphs) > 1 or any("&" in p or "\\\\" in p for p in paragraphs):
        rows = [p.removesuffix("\\\\").strip() + " \\\\" for p in paragraphs]
        tex = ["\\begin{align*}", *rows[:-1], rows[-1].removesuffix(" \\\\"), "\\end{align*}"]
    # inside a list item (RST indents its body by 2 or 3) Markdown needs 4 spaces to stay in the item
    pad = indent if not indent or len(indent) >= 4 else " " * 4
    block = ["", f"{pad}$$", *[f"{pad}{t}" for t in tex], f"{pad}$$", ""]
    # the lines eaten include trailing blank lines; keep one blank line after the block
    while j > i + 1 and not lines[j - 1].strip():
        j -= 1
    return block, j


def _table(lines: list[str], i: int) -> tuple[list[str], int] | None:
    """The simple table starting at ``lines[i]`` as a Markdown table; None when it is not one."""
    border = lines[i]
    indent = BORDER.match(border)["indent"]
    spans = [(m.start(), m.end()) for m in re.finditer(r"=+", border)]
    borders = [i]
    j = i + 1
    while j < len(lines) and lines[j].strip() and len(borders) < 3:
        if BORDER.match(lines[j]):
            borders.append(j)
        j += 1
    if len(borders) < 2:
        return None
    end = borders[-1]

    def cells(line: str) -> list[str]:
        line = line.ljust(spans[-1][1])
        out = [line[a : spans[k + 1][0]] if k + 1 < len(spans) else line[a:] for k, (a, _) in enumerate(spans)]
        return [c.strip().replace("|", "\\|") for c in out]

    def rows(start: int, stop: int) -> list[list[str]]:
        result: list[list[str]] = []
        for line in lines[start:stop]:
            row = cells(line)
            if result and not row[0]:
                result[-1] = [f"{a} {b}".strip() for a, b in zip(result[-1], row)]
            else:
                result.append(row)
        return result

    if len(borders) == 3:
        header, body = rows(borders[0] + 1, borders[1]), rows(borders[1] + 1, end)
        head = [" ".join(col).strip() for col in zip(*header)]
    else:
        body = rows(borders[0] + 1, end)
        head, body = body[0], body[1:]
    out = ["", indent + "| " + " | ".join(head) + " |", indent + "|" + "---|" * len(head)]
    out += [indent + "| " + " | ".join(r) + " |" for r in body]
    return [*out, ""], end + 1


def convert(text: str, resolve=None) -> str:
    """A docstring's reStructuredText markup as Markdown (see the module docstring).

    Example:
        >>> print(convert(":func:`~a.b.f` is :math:`x^2`"))
        <code>f</code> is $x^2$
        >>> print(convert(".. math:: y = x"))
        <BLANKLINE>
        $$
        y = x
        $$
        <BLANKLINE>
    """
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            j = i
            while j < len(lines) and lines[j].strip():
                j += 1
            out += [f"{indent}```pycon", *lines[i:j], f"{indent}```"]
            i = j
            continue
        math = MATH.match(line)
        if math:
            block, i = _math_block(lines, i, math["indent"], math["rest"])
            out += block
            continue
        if BORDER.match(line):
            table = _table(lines, i)
            if table is not None:
                out += table[0]
                i = table[1]
                continue
        line = ROLE.sub(lambda m: _role(m, resolve), line)
        if line.endswith("::") and not line.strip().startswith(".."):
            line = line[:-1]
        out.append(line)
        i += 1
    return "\n".join(out)
