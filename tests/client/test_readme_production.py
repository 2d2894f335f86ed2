"""Every exception the README and docs/*.md tell users to catch is importable where they say
(their code blocks run in tests/test_docs.py)."""

from __future__ import annotations

import asyncio
import builtins
import importlib
import re
from pathlib import Path

import projectops
import projectops.client

ROOT = Path(__file__).resolve().parents[2]
README = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted(ROOT.glob("docs/*.md"))])


def _readme_exception_names() -> set[tuple[str, str]]:
    """(module, name) of each exception-like name the README imports or qualifies:
    ``from X import A, B`` in code, ``X.Name`` and bare backticked names in text."""
    found: set[tuple[str, str]] = set()
    for module, names in re.findall(r"from (projectops[\w.]*) import ([\w, ]+)", README):
        for name in names.split(","):
            if name.strip():
                found.add((module, name.split(" as ")[0].strip()))
    for module, name in re.findall(r"\b(projectops(?:\.[a-z_]\w*)*)\.([A-Z]\w+)\b", README):
        if not module.startswith("projectops.v1"):  # proto full names, not Python paths
            found.add((module, name))
    # Bare names in the client's paragraph: importable from projectops.client or projectops.
    clients = {"ResponseTooLarge", "InvalidResponse", "UnexpectedRedirect", "InvalidProxy"}
    suffixes = ("Error", "Request", "Key", "Url", "Unreachable", "TimedOut")
    for name in re.findall(r"`([A-Z][a-zA-Z]+)`", README):
        if (
            (name.endswith(suffixes) or name in clients)
            and not hasattr(builtins, name)
            and not hasattr(asyncio, name)
        ):
            found.add(("", name))
    return found


def test_every_name_the_readme_tells_users_to_catch_is_importable_where_it_says() -> None:
    names = _readme_exception_names()
    assert ("", "ResponseTooLarge") in names and ("", "MissingBaseUrl") in names
    missing = []
    for module, name in sorted(names):
        if module:
            if not hasattr(importlib.import_module(module), name):
                missing.append(f"{module}.{name}")
        elif not (hasattr(projectops.client, name) or hasattr(projectops, name)):
            missing.append(name)
    assert missing == []


def test_the_clients_errors_are_all_importable_from_projectops_client() -> None:
    from projectops.client import (  # noqa: F401
        InvalidProxy,
        InvalidRequest,
        InvalidResponse,
        MissingApiKey,
        MissingBaseUrl,
        ResponseTimedOut,
        ResponseTooLarge,
        ServiceUnreachable,
        UnexpectedRedirect,
    )

    assert issubclass(MissingBaseUrl, projectops.InvalidBaseUrl)
    assert issubclass(MissingBaseUrl, ValueError)
    assert issubclass(ResponseTooLarge, InvalidResponse)
