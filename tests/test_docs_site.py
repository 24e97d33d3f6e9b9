"""The documentation site (mkdocs.yml, docs/) builds strictly and reads as a user would read it.

One session-scoped build (``mkdocs build --strict`` in a subprocess) into a temporary folder; to keep it
short it runs one tutorial (``01_build_network``, the one that saves figures) and shows the others as code
(``PONDLIB_DOCS_TUTORIALS``; the full build and tests/test_tutorials.py run every one). The checks:

- every page the site promises exists, every internal link and anchor resolves;
- the search index finds ``config_from_specification`` on its API page, and so does the search box of the
  site opened from disk in headless Chromium (driven over the DevTools protocol on a pipe);
- no page shows a raw traceback, an unrendered directive (``:::``, ``$$``, ``.. math::``, an RST role, an
  admonition marker) or LaTeX that did not become MathML;
- the tutorial page shows its outputs and figures;
- headless Chromium (the Debian package, installed by .ci/run) opens the site from disk and takes
  screenshots of the home page, an API page with equations and a tutorial page with a figure, each
  non-trivial. Where Chromium is absent that test skips and says why.

docs/griffe_rst.py (the docstrings' reStructuredText markup as Markdown) and docs/hooks.py are checked
directly as well.
"""

from __future__ import annotations

import fcntl
import functools
import html
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

# one worker builds the site once for every test here (pytest -n auto --dist loadgroup)
pytestmark = pytest.mark.xdist_group("docs_site")

ROOT = Path(__file__).resolve().parents[1]
RUN = "01_build_network"
PAGES = [
    "index.html",
    "getting-started.html",
    "concepts.html",
    "chips/xylo.html",
    "chips/spinnaker2.html",
    "chips/siracusa.html",
    "cli.html",
    "api/index.html",
    "api/pondlib.devices.xylo.config.html",
    "api/pondlib.nn.lif_core.html",
    "verification.html",
    "migrating-from-rockpool.html",
    "architecture.html",
    "scaling.html",
    *[f"tutorials/{p.stem}.html" for p in sorted((ROOT / "tutorials").glob("[0-9]*.py"))],
]


@functools.cache
def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"pondlib_docs_{name}", ROOT / "docs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """The site, built once with ``mkdocs build --strict`` (any warning fails it)."""
    tmp = tmp_path_factory.mktemp("docs")
    env = dict(
        os.environ,
        MPLBACKEND="Agg",
        NO_MKDOCS_2_WARNING="1",
        PONDLIB_DOCS_TUTORIALS=RUN,
        PONDLIB_DOCS_CACHE=str(tmp / "cache"),
    )
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp / "site")]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
    return tmp / "site"


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if p.name != "404.html")


def _visible_text(page: str) -> str:
    """What a reader sees as prose: scripts, styles, code blocks and MathML removed, tags stripped."""
    page = re.sub(r"<(script|style|pre|math)\b.*?</\1>", " ", page, flags=re.S)
    page = re.sub(r"<code\b.*?</code>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_site_has_every_page(site):
    missing = [p for p in PAGES if not (site / p).is_file()]
    assert not missing, f"pages missing from the built site: {missing}"
    modules = _load("hooks").public_modules()
    assert "pondlib.devices.registry" in modules and "pondlib.nn" in modules
    assert all((site / "api" / f"{m}.html").is_file() for m in modules)
    assert not any(part.startswith("_") for m in modules for part in m.split("."))


def test_internal_links_resolve(site):
    ids: dict[Path, set[str]] = {}
    broken = []
    for page in _pages(site):
        text = page.read_text()
        for link in re.findall(r'(?:href|src)="([^"]+)"', text):
            parts = urlsplit(html.unescape(link))
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:", "data:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(site)} -> {link}")
                continue
            if parts.fragment and target.suffix == ".html":
                if target not in ids:
                    ids[target] = set(re.findall(r'\sid="([^"]+)"', target.read_text()))
                if unquote(parts.fragment) not in ids[target]:
                    broken.append(f"{page.relative_to(site)} -> {link} (no such anchor)")
    assert not broken, f"{len(broken)} broken internal link(s), e.g. {broken[:10]}"


def test_search_finds_config_from_specification(site):
    index = json.loads((site / "search" / "search_index.json").read_text())
    hits = [d["location"] for d in index["docs"] if "config_from_specification" in d["title"] + d["text"]]
    assert any(h.startswith("api/pondlib.devices.xylo.config.html") for h in hits), hits[:10]
    # the offline plugin's copy of the index is what lets search work when the site is opened from disk
    assert "config_from_specification" in (site / "search" / "search_index.js").read_text()


# what a page must never show as prose: the directive, role or marker was not rendered
UNRENDERED = {
    "mkdocstrings directive": re.compile(r"^\s*::: ?pondlib", re.M),
    "display math": re.compile(r"\$\$"),
    "RST math directive": re.compile(r"\.\. math::"),
    "RST role": re.compile(r":(func|class|mod|meth|attr|data|math):`"),
    "admonition marker": re.compile(r"^\s*!!! ", re.M),
    "raw traceback": re.compile(r"Traceback \(most recent call last\)"),
    "Python exception line": re.compile(r"^\s*(\w+Error|Exception): ", re.M),
}


def test_no_page_shows_a_traceback_or_unrendered_markup(site):
    found = []
    for page in _pages(site):
        raw = page.read_text()
        text = _visible_text(raw)
        found += [f"{page.relative_to(site)}: {what}" for what, rx in UNRENDERED.items() if rx.search(text)]
        if 'class="arithmatex"' in raw or "<autoref" in raw or re.search(r"<mi>&(amp;)?</mi>", raw):
            found.append(f"{page.relative_to(site)}: LaTeX or a cross-reference left unconverted")
    for page in (site / "tutorials").glob("*.html"):  # a tutorial's outputs are <pre> blocks: no traceback there
        if "Traceback (most recent call last)" in page.read_text():
            found.append(f"{page.relative_to(site)}: traceback in an output")
    assert not found, found[:20]


def test_math_is_mathml(site):
    api = (site / "api" / "pondlib.nn.lif_core.html").read_text()
    assert api.count("<math") >= 5
    assert 'display="block"' in api and "<mtable" in api  # the aligned block keeps its rows
    assert "<math" in (site / "concepts.html").read_text()


def test_tutorial_page_shows_outputs_and_figures(site):
    page = (site / "tutorials" / f"{RUN}.html").read_text()
    figures = re.findall(rf'<img[^>]+src="({RUN}/[^"]+\.png)"', page)
    assert len(figures) == 2, figures
    for figure in figures:
        assert (site / "tutorials" / figure).stat().st_size > 5_000
    assert "16 inputs -&gt; 10 outputs, 5 modules" in page  # what the first code cell printed
    assert (site / "tutorials" / f"{RUN}.py").read_bytes() == (ROOT / "tutorials" / f"{RUN}.py").read_bytes()
    other = (site / "tutorials" / "02_deploy_xylo.html").read_text()
    assert "This build did not run the script" in other and "config_from_specification" in other


def test_chip_pages_have_limits_and_rules_from_the_registry(site):
    page = _visible_text((site / "chips" / "xylo.html").read_text())
    assert "hidden neurons" in page and "1000" in page and "Xylo Audio 3" in page
    assert "pondlib:limits" not in (site / "chips" / "xylo.html").read_text()
    for chip in ("spinnaker2", "siracusa"):
        raw = (site / "chips" / f"{chip}.html").read_text()
        assert "pondlib:rules" not in raw and raw.count("<tr>") > 10


def test_cli_page_lists_every_command(site):
    page = (site / "cli.html").read_text()
    for command in ("demo", "map", "simulate", "compile", "devices", "explore"):
        assert f"pond {command}" in page and "usage: pond" in page


# ----------------------------------------------------------------------------------- in a real browser

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
BASH = shutil.which("bash") or "/bin/bash"
NO_CHROMIUM = "no Chromium on PATH (.ci/run installs the Debian package chromium)"


class _DevTools:
    """Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: commands on
    fd 3, replies on fd 4, each a JSON text ended by a NUL byte), so no browser-driver package is needed.

    ``--allow-file-access-from-files`` lets the search worker start from ``file://`` without the network (the
    offline theme loads its worker shim from a CDN, which a test machine cannot reach)."""

    def __init__(self) -> None:
        child_in, self._out = os.pipe()
        self._in, child_out = os.pipe()

        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--remote-debugging-pipe"]
        # bash moves the pipe ends to fds 3 and 4 and execs Chromium: no preexec_fn, so no Python-level fork
        # handlers run (JAX, loaded in this worker, warns at fork and warnings are errors here); bash, not sh:
        # dash refuses file descriptors above 9 in a redirection
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (child_in, child_out)]  # never 3 or 4 themselves
        script = f'exec "$0" "$@" 3<&{high[0]} 4>&{high[1]}'
        self.proc = subprocess.Popen(
            [BASH, "-c", script, CHROMIUM, *flags, "--allow-file-access-from-files", "about:blank"],
            pass_fds=tuple(high),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for fd in (child_in, child_out, *high):
            os.close(fd)
        self._id, self._buffer = 0, b""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = os.read(self._in, 1 << 20)
                assert chunk, "the browser closed its DevTools pipe"
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._id:
                assert "error" not in reply, reply["error"]
                return reply["result"]

    def evaluate(self, expression: str):
        """The JSON value of a JavaScript expression on the page."""
        reply = self.send("Runtime.evaluate", {"expression": f"JSON.stringify({expression})"}, self.session)
        return json.loads(reply["result"].get("value", "null"))

    def wait(self, expression: str, seconds: float = 90):
        """Poll until ``expression`` is truthy on the page; its last value."""
        deadline = time.monotonic() + seconds
        value = self.evaluate(expression)
        while not value and time.monotonic() < deadline:
            time.sleep(0.25)
            value = self.evaluate(expression)
        return value

    def open(self, url: str, height: int = 1600) -> None:
        """Show ``url`` in a 1280 x ``height`` window and wait until it and its images have loaded."""
        metrics = {"width": 1280, "height": height, "deviceScaleFactor": 1, "mobile": False}
        self.send("Emulation.setDeviceMetricsOverride", metrics, self.session)
        self.evaluate("window.pondlibPreviousPage = true")  # gone once the new page replaces this one
        self.send("Page.navigate", {"url": url}, self.session)
        loaded = "document.readyState === 'complete' && [...document.images].every(i => i.complete)"
        assert self.wait(f"!window.pondlibPreviousPage && {loaded}"), f"{url} did not load"

    def screenshot(self, out: Path) -> np.ndarray:
        import base64

        import matplotlib.image

        png = self.send("Page.captureScreenshot", {"format": "png"}, self.session)["data"]
        out.write_bytes(base64.b64decode(png))
        return matplotlib.image.imread(out)

    def close(self) -> None:
        self.send("Browser.close")
        self.proc.wait(timeout=60)
        os.close(self._in)
        os.close(self._out)


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip(NO_CHROMIUM)
    tools = _DevTools()
    yield tools
    tools.close()


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_browser_screenshots_are_non_trivial(site, browser, tmp_path):
    shots = {  # name: (page, window height): the tutorial's figures are in its fourth section
        "home": ((site / "index.html").as_uri(), 1600),
        "api": ((site / "api" / "pondlib.nn.lif_core.html").as_uri(), 1600),
        "tutorial": ((site / "tutorials" / f"{RUN}.html").as_uri(), 7000),
    }
    for name, (url, height) in shots.items():
        browser.open(url, height)
        img = browser.screenshot(tmp_path / f"{name}.png")
        rgb = (img[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
        colours = len(np.unique(rgb[:: max(1, len(rgb) // 200_000)], axis=0))
        assert img.shape[:2] == (height, 1280) and rgb.std() > 10 and colours > 50, (name, rgb.std(), colours)
        if name == "api":  # the equations, as the browser laid them out: MathML with a size on screen
            sizes = browser.evaluate("[...document.querySelectorAll('math')].map(m => m.getBoundingClientRect().width)")
            assert len(sizes) >= 5 and min(sizes) > 0, sizes
    # the raster and trace figures: many strongly coloured pixels below the header bar (the tutorial's code
    # and text alone, syntax colours included, give about 12,000 in a window this size)
    body = img[64:, :, :3]
    saturated = int(((body.max(axis=-1) - body.min(axis=-1)) > 0.3).sum())
    assert saturated > 25_000, saturated
    widths = browser.evaluate("[...document.querySelectorAll('article img')].map(i => i.naturalWidth)")
    assert len(widths) == 2 and min(widths) > 100, widths  # both figures loaded


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_browser_search_finds_config_from_specification(site, browser):
    """The search box of the site opened from disk, as a reader types into it (``?q=`` fills it in)."""
    browser.open((site / "index.html").as_uri() + "?q=config_from_specification")
    hrefs = browser.wait("[...document.querySelectorAll('.md-search-result__item a')].map(a => a.href)")
    assert any(
        "api/pondlib.devices.xylo.config.html" in h and h.endswith(".config_from_specification") for h in hrefs
    ), hrefs


# ----------------------------------------------------------------------------------- the build's parts


def test_rst_conversion():
    convert = _load("griffe_rst").convert
    assert convert(":func:`~a.b.f` and ``x``") == "<code>f</code> and ``x``"
    assert convert(":math:`\\alpha`") == "$\\alpha$"
    linked = convert(":class:`B`", lambda name: "a." + name)
    assert linked == '<autoref optional identifier="a.B"><code>B</code></autoref>'
    table = convert("===  ===\na    b\n===  ===\n1    2\n     3\n4    5\n===  ===").strip().splitlines()
    assert table == ["| a | b |", "|---|---|", "| 1 | 2 3 |", "| 4 | 5 |"]
    block = convert(".. math::\n\n   a &= b \\\\\n   c &= d\n\nafter").splitlines()
    assert block[1:6] == ["$$", "\\begin{align*}", "a &= b \\\\ c &= d", "\\end{align*}", "$$"]
    assert block[-1] == "after"
    doc = convert("Example:\n    >>> f(:func:`x`)\n    1\n\nText::")
    assert doc == "Example:\n    ```pycon\n    >>> f(:func:`x`)\n    1\n    ```\n\nText:"


@settings(max_examples=30, deadline=None)
@given(st.text(max_size=20).filter(lambda s: s.strip() not in ("all", "none") and "," not in s))
def test_unknown_tutorial_choice_is_refused(name):
    from mkdocs.exceptions import PluginError

    scripts = sorted((ROOT / "tutorials").glob("[0-9]*.py"))
    if name.strip() in {s.stem for s in scripts} or not name.strip():
        assert [s.stem for s in _load("hooks").selected(scripts, name)] == ([name.strip()] if name.strip() else [])
        return
    with pytest.raises(PluginError, match="not tutorials; expected 'all', 'none' or some of"):
        _load("hooks").selected(scripts, name)
