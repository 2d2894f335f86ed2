"""The documentation site builds with warnings as errors and hides none, and its pages show what
a user reads first: every parameter of ``create_app`` and of ``Client``, with its description,
each page's introduction once, the bases a reader can look up, and the guides' code whole in a
browser 1280 pixels wide.

The site is built as ``./scripts/test`` builds it (``scripts/docs build``), into a temporary
folder; the pages are read as a browser gets them, and opened in headless Chromium.
"""

from __future__ import annotations

import html
import inspect
import re
import subprocess
from pathlib import Path

import pytest

import projectops.client
from projectops.client import Client
from projectops.server import create_app

from .openapi.support import dump_dom

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The site built by ``scripts/docs build`` into a temporary folder, and the build's log."""
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [str(REPO / "scripts" / "docs"), "build", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    return out, log


@pytest.fixture(scope="module")
def site(build: tuple[Path, str]) -> Path:
    return build[0]


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.read_text("utf-8"))))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("page", "obj", "init"),
    [("server", create_app, create_app), ("client", Client, Client.__init__)],
    ids=["create_app", "Client"],
)
def test_the_reference_shows_every_parameter_with_its_description(
    site: Path, page: str, obj: object, init: object
) -> None:
    raw = (site / "reference" / page / "index.html").read_text("utf-8")
    name = getattr(obj, "__name__", "")
    anchor = f'id="projectops.{page}.{name}"'
    text = _text(site / "reference" / page / "index.html")
    assert anchor in raw
    doc = inspect.getdoc(init) or ""
    for parameter in inspect.signature(obj).parameters:  # type: ignore[arg-type]
        # "name ( type , default: ... ) \N{EN DASH} description", as mkdocstrings lists them.
        described = re.search(rf"\b{parameter} \( .*? \) \N{{EN DASH}} (\w+)", text)
        assert described, f"{name}: {parameter} is not listed with a description"
        assert described.group(1) in doc


@pytest.mark.slow
def test_every_guide_is_a_page(site: Path) -> None:
    for guide in sorted((REPO / "docs").glob("*.md")):
        page = site / ("index.html" if guide.stem == "index" else f"{guide.stem}/index.html")
        assert page.is_file(), guide.name


@pytest.mark.slow
def test_the_build_shows_its_log_and_has_no_warning(build: tuple[Path, str]) -> None:
    """``--strict`` counts the warnings that the log level lets through: a build at a quieter
    level (``--quiet``) drops them uncounted and passes."""
    _, log = build
    assert re.search(r"^INFO\s+-\s+Documentation built in", log, re.M), log
    assert not re.search(r"^WARNING\b", log, re.M), log


def _sections(page: Path, title: str) -> list[str]:
    """The items of each ``title`` section of a reference page (griffe's Google sections)."""
    raw = page.read_text("utf-8")
    pattern = rf'doc-section-title">{title}:</span></p>\s*<ul>(.*?)</ul>'
    return re.findall(pattern, raw, re.S)


@pytest.mark.slow
def test_a_returns_section_is_one_value_described(site: Path) -> None:
    pages = sorted((site / "reference").glob("*/index.html"))
    sections = [items for page in pages for items in _sections(page, "Returns")]
    assert sections
    many = [_squeezed(items)[:120] for items in sections if items.count("<li") > 1]
    assert many == []


def _squeezed(markup: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", markup)))


@pytest.mark.slow
def test_a_reference_page_has_one_title_and_one_introduction(site: Path) -> None:
    """The page's title is its module's name, and the module's docstring its introduction; the
    module is not titled, nor introduced, again under it."""
    for page in ("core", "client", "server", "mock", "conformance", "mcp"):
        raw = (site / "reference" / page / "index.html").read_text("utf-8")
        title = re.search(r"<h1[^>]*>([^<]*)<", raw)
        assert title, page
        headings = re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", raw, re.S)
        named = [h for h in headings if _squeezed(h).strip(" ¶") == title.group(1)]
        assert len(named) == 1, f"{page}: {len(named)} headings name {title.group(1)}"
        assert raw.count("Guide: <a") == 1
    first = " ".join((projectops.client.__doc__ or "").split()[:5])
    assert _text(site / "reference" / "client" / "index.html").count(first) == 1


@pytest.mark.slow
def test_no_rest_literal_block_marker_is_shown(site: Path) -> None:
    for page in sorted((site / "reference").glob("*/index.html")):
        assert not re.search(r"::</p>", page.read_text("utf-8")), page.parent.name


def _unlinked(base: str) -> bool:
    """Whether a base (one ``<code>`` of a ``Bases:`` line) is a class of projectops shown
    without a link to its documentation. Python's and other packages' bases (``ValueError``,
    ``typing.Generic``) are named as they are."""
    first = re.match(r'<(a|span)[^>]*title="([^"]*)"', base.strip())
    assert first, base
    tag, path = first.groups()
    private = path.rsplit(".", 1)[-1].startswith("_")
    return tag == "span" and (path.startswith("projectops.") or private)


@pytest.mark.slow
def test_a_class_names_only_bases_the_reader_can_look_up(site: Path) -> None:
    bases = [
        line
        for page in sorted((site / "reference").glob("*/index.html"))
        for line in re.findall(r'doc-class-bases">(.*?)</p>', page.read_text("utf-8"), re.S)
    ]
    assert any("InvalidArgument" in line for line in bases)  # an error's base is kept
    # A base's first name is the class (the rest are its type arguments).
    codes = [code for line in bases for code in re.findall(r"<code>(.*?)</code>", line, re.S)]
    unlinked = [code for code in codes if _unlinked(code)]
    assert unlinked == []


#: Marks each code block whose text is wider than its box (it would scroll sideways) in the
#: page's body, once the page is laid out.
_PROBE = """<script>window.addEventListener("load", () => {
  const wide = [...document.querySelectorAll("pre > code")]
    .filter((code) => code.scrollWidth > code.clientWidth)
    .map((code) => code.textContent.split("\\n")[0]);
  document.body.dataset.wide = JSON.stringify(wide);
});</script>"""


@pytest.mark.slow
def test_the_guides_code_is_whole_in_a_window_1280_pixels_wide(site: Path, tmp_path: Path) -> None:
    for guide in sorted((REPO / "docs").glob("*.md")):
        if guide.stem == "index":
            continue
        page = site / guide.stem / "index.html"
        probe = page.with_name("probe.html")
        probe.write_text(page.read_text("utf-8").replace("</body>", _PROBE + "</body>"), "utf-8")
        flags = ["--window-size=1280,900", "--hide-scrollbars"]
        proc = dump_dom(probe.as_uri(), str(tmp_path / "profile"), budget_ms=5000, flags=flags)
        found = re.search(r'data-wide="([^"]*)"', proc.stdout)
        assert found, f"{guide.name}: the page did not load\n{proc.stderr[-2000:]}"
        assert html.unescape(found.group(1)) == "[]", guide.name
