"""The documentation site builds with warnings as errors, and its API reference shows what a
user reads first: every parameter of ``create_app`` and of ``Client``, with its description.

``./scripts/test`` builds the site too (``scripts/docs build``); this test builds it into a
temporary folder and reads the pages, as a browser would get them.
"""

from __future__ import annotations

import html
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from projectops.client import Client
from projectops.server import create_app

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.executable).parent / "mkdocs"
    proc = subprocess.run(
        [str(mkdocs), "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


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
