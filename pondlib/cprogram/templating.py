r"""C templates: one small text file per kernel, filled with values computed in Python.

A template is a file in the folder ``templates/`` beside the module that emits it (package data, read with
:mod:`importlib.resources`, so it is found in a wheel as in a checkout; the folder is plain data, not a
package). Its syntax, the whole of it:

* ``$name`` or ``${name}`` is replaced by the value ``name`` (a ``str`` or an ``int``); the braces are needed
  where letters, digits or ``_`` follow (``${net}_step``). ``$$`` is one ``$`` (``$$(CC)`` in a Makefile).
* A value of several lines continues at the indentation of the line that holds its placeholder, so that a
  kernel placed inside a loop stays indented: the template shows the nesting, the value does not carry it.
  Trailing newlines of a value are dropped.
* A line that holds nothing but one placeholder whose value is empty disappears (an optional part).
* Lines that start with ``##`` are the template's own: ``## text`` documents it (what it computes, its
  placeholders, the shapes); ``##if name`` ... ``##else`` ... ``##end`` keeps the first part when the
  ``bool`` value ``name`` is true, else the ``##else`` part (optional); sections nest. Any other ``##word``
  is an error (a mistyped directive never passes as a comment).

Rendering is strict, so that a template and its emitter cannot drift apart: a placeholder in the kept text
without a value, a value that the template never names, a value of the wrong type (``bool`` for a section,
``str`` or ``int`` for a placeholder), an unbalanced section, a ``$`` that starts no placeholder, or a
template that does not exist raise :class:`~pondlib.errors.CodegenError` naming the template and the key.
A placeholder that only a dropped section holds needs no value.

:func:`trace` records which templates were rendered, which placeholders they filled and which way each
section went (the tests check that every template file is used, every placeholder filled and every section
taken both ways).

Example:
    >>> text = render("pondlib.cprogram", "reset_fill.c", buf="v", count=4, value="0x1p-1f")
    >>> print(text)
    for (int32_t i = 0; i < 4; ++i) a->v[i] = 0x1p-1f; /* v[4] */
    >>> render("pondlib.cprogram", "reset_fill.c", buf="v", count=4)
    Traceback (most recent call last):
    ...
    pondlib.errors.CodegenError: pondlib.cprogram/templates/reset_fill.c: placeholder without a value: got $value. ...
"""

from __future__ import annotations

import contextvars
import functools
import importlib.resources
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Integral
from typing import Any

from pondlib.errors import CodegenError

__all__ = ["SUFFIXES", "FOLDER", "Template", "Section", "Rendered", "load", "render", "template_names", "trace"]

#: File name endings of template files (the package data that ``pyproject.toml`` ships).
SUFFIXES = (".c", ".h", ".tmpl")
#: The folder beside the emitting module that holds its templates.
FOLDER = "templates"

_TOKEN = re.compile(
    r"\$(?:(?P<dollar>\$)|(?P<named>[A-Za-z_][A-Za-z0-9_]*)|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|(?P<bad>))"
)
_DIRECTIVE = re.compile(r"^##(?P<word>if|else|end)\b[ \t]*(?P<arg>.*?)[ \t]*$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Section:
    """An ``##if name`` section: the lines kept when ``name`` is true, and those kept when it is false."""

    condition: str
    then: tuple[Node, ...]
    otherwise: tuple[Node, ...]


#: A template line (text with placeholders) or a section.
Node = str | Section


@dataclass(frozen=True)
class Template:
    """A parsed template: where it lives, its lines and sections, the placeholder and section names."""

    package: str
    name: str
    nodes: tuple[Node, ...]
    placeholders: frozenset[str]
    conditions: frozenset[str]

    @property
    def where(self) -> str:
        return f"{self.package}/{FOLDER}/{self.name}"


@dataclass(frozen=True)
class Rendered:
    """One rendering seen by :func:`trace`: the template, the placeholders it filled and the sections it
    decided, as ``(name, value)``."""

    package: str
    name: str
    filled: frozenset[str]
    sections: frozenset[tuple[str, bool]]


_TRACE: contextvars.ContextVar[list[Rendered] | None] = contextvars.ContextVar("pondlib_template_trace", default=None)


def _names_in(line: str, where: str) -> list[str]:
    """The placeholder names of one line; a ``$`` that starts none is an error."""
    names = []
    for m in _TOKEN.finditer(line):
        if m.group("bad") is not None:
            raise CodegenError(
                "a '$' that starts no placeholder",
                value=line.strip(),
                limit="$name, ${name} or $$",
                where=where,
                fix="write $$ for a literal $",
            )
        name = m.group("named") or m.group("braced")
        if name:
            names.append(name)
    return names


def _parse(lines: list[str], where: str) -> tuple[tuple[Node, ...], set[str], set[str]]:
    """The template's nodes, placeholder names and section names (``##`` comments dropped)."""
    stack: list[tuple[str, list[Node], list[Node] | None]] = [("", [], None)]
    placeholders: set[str] = set()
    conditions: set[str] = set()
    for number, line in enumerate(lines, 1):
        directive = _DIRECTIVE.match(line)
        if not line.startswith("##"):
            placeholders.update(_names_in(line, where))
            _, then, other = stack[-1]
            (then if other is None else other).append(line)
        elif directive is None:
            if line.rstrip() != "##" and not line.startswith("## "):
                raise CodegenError(
                    "template line",
                    value=line,
                    limit="'## comment', ##if name, ##else, ##end",
                    where=f"{where}:{number}",
                )
            continue  # a template comment
        elif directive["word"] == "if":
            if not _IDENT.match(directive["arg"]):
                raise CodegenError(
                    "section name", value=directive["arg"], limit="##if <name>", where=f"{where}:{number}"
                )
            conditions.add(directive["arg"])
            stack.append((directive["arg"], [], None))
        elif len(stack) == 1 or directive["arg"] or (directive["word"] == "else" and stack[-1][2] is not None):
            raise CodegenError(
                f"unbalanced ##{directive['word']}",
                value=line,
                limit="##if name / ##else / ##end",
                where=f"{where}:{number}",
            )
        elif directive["word"] == "else":
            stack[-1] = (stack[-1][0], stack[-1][1], [])
        else:
            cond, then, other = stack.pop()
            parent = stack[-1][1] if stack[-1][2] is None else stack[-1][2]
            parent.append(Section(cond, tuple(then), tuple(other or ())))
    if len(stack) != 1:
        raise CodegenError("unclosed ##if", value=stack[-1][0], limit="one ##end per ##if", where=where)
    return tuple(stack[0][1]), placeholders, conditions


def template_names(package: str) -> tuple[str, ...]:
    """The template files of ``package`` (its ``templates/`` folder), sorted; empty without the folder."""
    folder = importlib.resources.files(package) / FOLDER
    if not folder.is_dir():
        return ()
    return tuple(sorted(p.name for p in folder.iterdir() if p.is_file() and p.name.endswith(SUFFIXES)))


@functools.cache
def load(package: str, name: str) -> Template:
    """The parsed template ``name`` of ``package`` (read once, then cached)."""
    available = template_names(package)
    if name not in available:
        raise CodegenError(
            "template", value=name, limit=list(available) or "a templates/ folder", where=package, fix="check the name"
        )
    text = (importlib.resources.files(package) / FOLDER / name).read_text(encoding="utf-8")
    where = f"{package}/{FOLDER}/{name}"
    nodes, placeholders, conditions = _parse(text.splitlines(), where)
    both = placeholders & conditions
    if both:
        raise CodegenError("names used as placeholder and as section", value=sorted(both), where=where)
    return Template(package, name, nodes, frozenset(placeholders), frozenset(conditions))


def _check_values(t: Template, values: Mapping[str, Any]) -> None:
    """Every value named by the template and of the type its use takes."""
    for key, value in values.items():
        if key in t.conditions:
            if not isinstance(value, bool):
                raise CodegenError("section value", value=f"{key}={value!r}", limit="True or False", where=t.where)
        elif key in t.placeholders:
            if isinstance(value, bool) or not isinstance(value, (str, Integral)):
                raise CodegenError(
                    "placeholder value", value=f"{key}={type(value).__name__}", limit="a str or an int", where=t.where
                )
        else:
            raise CodegenError(
                "value that the template does not use",
                value=key,
                limit=sorted(t.placeholders | t.conditions),
                where=t.where,
                fix="drop the value or name it in the template",
            )


def _kept(nodes: tuple[Node, ...], values: Mapping[str, Any], t: Template, decided: set) -> Iterator[str]:
    """The lines of ``nodes`` that the section values keep, in order."""
    for node in nodes:
        if isinstance(node, str):
            yield node
            continue
        if node.condition not in values:
            raise CodegenError("section without a value", value=node.condition, limit="True or False", where=t.where)
        decided.add((node.condition, values[node.condition]))
        yield from _kept(node.then if values[node.condition] else node.otherwise, values, t, decided)


def _fill(line: str, values: Mapping[str, Any], t: Template, filled: set[str]) -> str | None:
    """One line with its placeholders replaced (None: the line is dropped)."""
    indent = line[: len(line) - len(line.lstrip())]

    def value(m: re.Match) -> str:
        if m.group("dollar"):
            return "$"
        key = m.group("named") or m.group("braced")
        if key not in values:
            raise CodegenError(
                "placeholder without a value", value=f"${key}", where=t.where, fix=f"pass {key}=... to render()"
            )
        filled.add(key)
        text = str(int(values[key])) if isinstance(values[key], Integral) else values[key].rstrip("\n")
        first, *rest = text.split("\n")
        return "\n".join([first] + [indent + part if part.strip() else "" for part in rest])

    out = _TOKEN.sub(value, line)
    only = _TOKEN.fullmatch(line.strip())
    if only is not None and not only.group("dollar") and out.strip() == "":
        return None
    return out if out.strip() else ""


def render(package: str, name: str, /, **values: Any) -> str:
    """The template ``name`` of ``package`` filled with ``values`` (see the module docstring), without a
    final newline.

    Raises:
        CodegenError: no such template, a missing, unused or mistyped value, a malformed template.
    """
    t = load(package, name)
    _check_values(t, values)
    filled: set[str] = set()
    decided: set[tuple[str, bool]] = set()
    lines = [_fill(line, values, t, filled) for line in list(_kept(t.nodes, values, t, decided))]
    record = _TRACE.get()
    if record is not None:
        record.append(Rendered(package, name, frozenset(filled), frozenset(decided)))
    return "\n".join(line for line in lines if line is not None)


@contextmanager
def trace() -> Iterator[list[Rendered]]:
    """Within the block, every :func:`render` appends a :class:`Rendered` to the list it yields."""
    record: list[Rendered] = []
    token = _TRACE.set(record)
    try:
        yield record
    finally:
        _TRACE.reset(token)
