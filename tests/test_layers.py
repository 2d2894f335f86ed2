"""The layers of ARCHITECTURE.md: the contracts of ``[tool.importlinter]`` in pyproject.toml
(features above the program, above client and server, above the core; siblings independent),
no private module reached from outside its package, and no import circle anywhere."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest
from importlinter import configuration
from importlinter.application.use_cases import lint_imports

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("projectops", cache_dir=None)


def _private_outside(importer: str, imported: str) -> bool:
    """Whether `importer` reaches into a private module (``a.b._c``) of a package (``a.b``)
    it is not part of. Core privates (``projectops._text``) belong to the whole package."""
    parts = imported.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.endswith("__"):
            owner = ".".join(parts[:i])
            return not (importer == owner or importer.startswith(owner + "."))
    return False


def test_the_import_linter_contracts_are_kept() -> None:
    # The use case behind `lint-imports`, not its CLI function: that one configures logging
    # with dictConfig, which disables every logger already made (projectops.server's among
    # them) for the rest of the test process.
    configuration.configure()
    kept = lint_imports(str(ROOT / "pyproject.toml"), cache_dir=None, no_logo=True)
    assert kept  # the broken contract is printed above


def test_no_module_reaches_into_another_packages_private_module(graph: grimp.ImportGraph) -> None:
    bad = sorted(
        f"{importer} -> {imported}"
        for imported in graph.modules
        for importer in graph.find_modules_that_directly_import(imported)
        if _private_outside(importer, imported)
    )
    assert bad == []


def test_nothing_imports_in_a_circle(graph: grimp.ImportGraph) -> None:
    circles = sorted(
        f"{a} <-> {b}"
        for a in graph.modules
        for b in graph.find_modules_directly_imported_by(a)
        if a < b
        and graph.chain_exists(importer=b, imported=a)
        and not (a.startswith(b + ".") or b.startswith(a + "."))  # a package's face
    )
    assert circles == []


def test_the_rules_see_what_they_forbid() -> None:
    assert _private_outside("projectops.mock._app", "projectops.server._endpoint")
    assert not _private_outside("projectops.server.asgi", "projectops.server._endpoint")
    assert not _private_outside("projectops.client._base", "projectops._text")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


#: Each test folder named after a package of projectops may use that package's private
#: modules (and the core's); the others (adversarial, openapi, schema, ...) the core's only.
FEATURES = ("client", "server", "mock", "conformance", "mcp", "cli")


@pytest.mark.parametrize(
    "path", sorted(TESTS.rglob("*.py")), ids=lambda p: str(p.relative_to(TESTS))
)
def test_a_test_reaches_into_its_own_package_only(path: Path) -> None:
    if "node_modules" in path.parts:
        return
    folder = path.relative_to(TESTS).parts[0]
    bad = []
    for name in _imports(path):
        parts = name.split(".")
        if parts[0] == "projectops" and len(parts) > 2 and parts[1] in FEATURES:
            if parts[1] != folder and any(p.startswith("_") for p in parts[2:]):
                bad.append(name)
    assert sorted(bad) == []


def test_the_codecs_formats_and_plans_sit_below_decoding_and_encoding_which_never_meet(
    graph: grimp.ImportGraph,
) -> None:
    names = {
        f"projectops._fastcodec.{m}"
        for m in ("_decode", "_encode", "_float32", "_plans", "_timefmt")
    }
    assert names <= graph.modules
    for leaf in ("_float32", "_timefmt", "_plans"):
        assert not graph.find_modules_directly_imported_by(f"projectops._fastcodec.{leaf}") & names
    assert not graph.chain_exists("projectops._fastcodec._decode", "projectops._fastcodec._encode")
    assert not graph.chain_exists("projectops._fastcodec._encode", "projectops._fastcodec._decode")
