"""The layers of ARCHITECTURE.md: the contracts of ``[tool.importlinter]`` in pyproject.toml
(features above the program, above client and server, above the core; siblings independent),
the floors of the core as ARCHITECTURE.md draws them, no private module reached from outside its
package, and no import circle anywhere."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Mapping, Set
from pathlib import Path

import grimp
import pytest
from importlinter import configuration
from importlinter.application.use_cases import lint_imports

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
#: The block of ARCHITECTURE.md that draws the core's floors, between this marker and a fence.
FLOORS_MARK = "<!-- the floors of the core: tests/test_layers.py reads this block -->"


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


def _drawn_floors() -> dict[str, int]:
    """Each core module's floor as ARCHITECTURE.md draws it: ``floor N  a · b`` lines."""
    text = (ROOT / "ARCHITECTURE.md").read_text("utf-8")
    assert FLOORS_MARK in text, "ARCHITECTURE.md has lost the block of the core's floors"
    block = text.split(FLOORS_MARK, 1)[1].split("```", 2)[1]
    floors: dict[str, int] = {}
    for line in block.splitlines():
        drawn = re.fullmatch(r"floor (\d+) +(.+)", line.strip())
        if drawn:
            floors.update((name.strip(), int(drawn[1])) for name in drawn[2].split("·"))
    return floors


def _core_imports(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    """The core's modules (a package, ``_fastcodec``, as one) and the core modules each imports.

    The core is what sits below the client and the server: every child of ``projectops`` but
    the public packages (the sides, the features, the generated ``v1``) and the modules the
    layer contract leaves out (``__main__``, ``testing``). The package's face, ``projectops``
    itself, is on no floor: it names each public name of every floor and imports it on first use.
    """
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["importlinter"]
    ignored = set(contract["contracts"][0]["exhaustive_ignores"])
    children = {m.split(".")[1] for m in graph.modules if m.count(".") >= 1}
    packages = {m.split(".")[1] for m in graph.modules if m.count(".") >= 2}
    core = {c for c in children - ignored if c.startswith("_") or c not in packages}
    imports: dict[str, set[str]] = {name: set() for name in core}
    for module in graph.modules:
        owner = module.split(".")[1] if module.count(".") >= 1 else None
        if owner not in core:
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            parts = imported.split(".")
            if len(parts) > 1 and parts[1] in core and parts[1] != owner:
                imports[owner].add(parts[1])
    return imports


def _misplaced(floors: Mapping[str, int], imports: Mapping[str, Set[str]]) -> list[str]:
    """Each module whose drawn floor is not one above the highest floor it imports from (the
    ground, 1, when it imports no core module), and each module drawn or imported but not both.
    """
    wrong = [f"{name}: in the code, not drawn" for name in sorted(imports.keys() - floors)]
    wrong += [f"{name}: drawn, not in the code" for name in sorted(floors.keys() - imports)]
    for name in sorted(floors.keys() & imports.keys()):
        below = sorted(imports[name] & floors.keys())
        floor = 1 + max((floors[under] for under in below), default=0)
        if floors[name] != floor:
            wrong.append(
                f"{name}: drawn on floor {floors[name]}, its imports {below} put it on {floor}"
            )
    return wrong


def test_architecture_draws_the_core_floors_the_imports_have(graph: grimp.ImportGraph) -> None:
    assert _misplaced(_drawn_floors(), _core_imports(graph)) == []


def test_a_floor_out_of_step_with_the_imports_is_named() -> None:
    imports = {"errors": set(), "codec": {"errors"}, "openapi": {"codec"}}
    assert _misplaced({"errors": 1, "codec": 2, "openapi": 3}, imports) == []
    assert _misplaced({"errors": 1, "codec": 2, "openapi": 2}, imports) == [
        "openapi: drawn on floor 2, its imports ['codec'] put it on 3"
    ]
    assert _misplaced({"errors": 1, "codec": 3, "openapi": 4}, imports) == [
        "codec: drawn on floor 3, its imports ['errors'] put it on 2",
    ]
    assert _misplaced({"errors": 1, "codec": 2, "rules": 1}, imports) == [
        "openapi: in the code, not drawn",
        "rules: drawn, not in the code",
    ]
