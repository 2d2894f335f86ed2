"""The repository explains itself: no tracked file cites a document that is not in it, and every
``docs/contract.md §N`` the code cites is a section of that document."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "docs" / "contract.md"
# What earlier versions cited: a design brief and a spec kept outside the repository.
OUTSIDE = ("DESIGN.md", "operations-api.md", "shared/spec", "spec section")
SPEC_NUMBER = re.compile(r"\bspec \d+(?:\.\d+)*")
CITATION = re.compile(r"contract\.md §(\d+(?:\.\d+)?)")


# What is not the repository's own text: tools, caches, installed packages.
SKIP = {".git", ".venv", ".venv-floor", "node_modules", "__pycache__", ".hypothesis", "build"}


def _tracked_text_files() -> list[Path]:
    keep = {".py", ".pyi", ".md", ".toml", ".proto", ".yaml", ".yml", ".txt", ""}
    found = []
    for folder, subfolders, names in os.walk(ROOT):
        # .venv-3.12 and the like: the other interpreters' venvs of ./scripts/test.
        subfolders[:] = [
            d for d in subfolders if d not in SKIP and not d.startswith((".pytest", ".venv-3."))
        ]
        found += [Path(folder, n) for n in names if Path(n).suffix in keep]
    return [p for p in found if p.is_file()]


def test_no_file_cites_a_document_outside_the_repository() -> None:
    offenders = []
    for path in _tracked_text_files():
        text = path.read_text(errors="replace")
        for needle in OUTSIDE:
            if needle in text and path.name != Path(__file__).name:
                offenders.append(f"{path.relative_to(ROOT)}: {needle}")
        if SPEC_NUMBER.search(text):
            offenders.append(f"{path.relative_to(ROOT)}: {SPEC_NUMBER.search(text)}")
    assert offenders == []


def test_every_contract_citation_names_a_section_that_exists() -> None:
    contract = CONTRACT.read_text()
    sections = set(re.findall(r"^## (\d+)\. ", contract, re.M))
    sections |= set(re.findall(r"^(\d+\.\d+)\. \*\*", contract, re.M))
    cited = {
        (str(path.relative_to(ROOT)), number)
        for path in _tracked_text_files()
        for number in CITATION.findall(path.read_text(errors="replace"))
    }
    assert cited, "nothing cites docs/contract.md"
    assert {(where, n) for where, n in cited if n not in sections} == set()
