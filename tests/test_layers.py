"""DESIGN.md's layers: core never imports client or server; those never import each other."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "projectops"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _layer(path: Path) -> str:
    rel = path.relative_to(SRC).parts
    if rel[0] in ("client", "server", "v1"):
        return rel[0]
    return "entry" if rel == ("__main__.py",) else "core"


FORBIDDEN = {
    "core": ("projectops.client", "projectops.server"),
    "v1": ("projectops.client", "projectops.server"),
    "client": ("projectops.server",),
    "server": ("projectops.client",),
}


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_module_respects_its_layer(path: Path) -> None:
    forbidden = FORBIDDEN.get(_layer(path), ())
    bad = sorted(n for n in _imports(path) if n.startswith(forbidden))
    assert bad == []


def _core_graph() -> dict[str, set[str]]:
    """Core module -> the core modules it imports (generated code is a layer below)."""
    graph: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        if _layer(path) != "core":
            continue
        name = "projectops" if path.name == "__init__.py" else f"projectops.{path.stem}"
        graph[name] = {
            n
            for n in _imports(path)
            if n.startswith("projectops.") and n.count(".") == 1 and n != name
        }
    return graph


def test_no_core_module_imports_another_in_a_circle() -> None:
    graph = _core_graph()
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                pytest.fail(f"import cycle: {' -> '.join([*trail, node, nxt])}")
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state and node != "projectops":  # the package re-exports the core
            visit(node, [])
    assert "projectops.codec" not in graph["projectops.errors"]
