"""The layers: core never imports client or server; those never import each other; and no
module of a layer imports another of its layer in a circle."""

import ast
import warnings
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "projectops"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    with warnings.catch_warnings():  # a test's odd string escape is not this test's business
        warnings.simplefilter("ignore")
        tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            # `from projectops.server import _uvicorn` imports a module too.
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _layer(path: Path) -> str:
    rel = path.relative_to(SRC).parts
    if rel[0] in ("client", "server", "v1"):
        return rel[0]
    # Both compose the client and server layers: the program and the test mock (the pytest
    # plugin beside the package, src/_projectops_pytestplugin.py, imports only testing.py).
    return "entry" if rel in (("__main__.py",), ("testing.py",)) else "core"


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


def _module_name(path: Path) -> str:
    parts = ("projectops", *path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph(layer: str) -> dict[str, set[str]]:
    """Module of `layer` -> the modules of the same layer it imports, anywhere in its code
    (``from projectops.client import cli`` counts as importing ``projectops.client.cli``).
    Generated code is a layer below core; a package's ``__init__`` only re-exports, lazily
    or not, so it is no node."""
    paths = [p for p in SRC.rglob("*.py") if _layer(p) == layer and p.name != "__init__.py"]
    names = {_module_name(p) for p in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        name = _module_name(path)
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[name] = (found & names) - {name}
    return graph


def _first_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(node: str, trail: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*trail, node, nxt]
            if nxt not in state and (cycle := visit(nxt, [*trail, node])):
                return cycle
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node, [])):
            return cycle
    return None


@pytest.mark.parametrize("layer", ["core", "client", "server"])
def test_no_module_of_a_layer_imports_another_in_a_circle(layer: str) -> None:
    graph = _graph(layer)
    assert len(graph) > 3  # the walk found the layer's modules
    cycle = _first_cycle(graph)
    assert cycle is None, f"import cycle: {' -> '.join(cycle or [])}"


def test_the_graph_sees_a_circle_and_the_leaves_stay_leaves() -> None:
    assert _first_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert "projectops.codec" not in _graph("core")["projectops.errors"]
    client = _graph("client")
    # The client's parts sit below its public face: the transport, proxy and base never
    # import the module of the two clients.
    for part in ("_base", "_transport", "_proxy"):
        assert "projectops.client.http" not in client[f"projectops.client.{part}"]
    assert client["projectops.client._proxy"] == set()


TESTS = Path(__file__).resolve().parent
#: The test folders of one layer: they may use that layer's private modules, no other's.
TEST_LAYERS = {"core": "core", "client": "client", "mcp": "client", "server": "server"}


@pytest.mark.parametrize("folder", sorted(TEST_LAYERS))
def test_no_test_reaches_into_a_private_module_of_another_layer(folder: str) -> None:
    own = TEST_LAYERS[folder]
    bad = []
    for path in sorted((TESTS / folder).rglob("*.py")):
        if "node_modules" in path.parts:
            continue
        for name in _imports(path):
            parts = name.split(".")
            private = any(p.startswith("_") and not p.endswith("__") for p in parts[1:])
            layer = parts[1] if len(parts) > 1 and parts[1] in ("client", "server") else "core"
            if parts[0] == "projectops" and private and layer != own:
                bad.append(f"{path.relative_to(TESTS)}: {name}")
    assert bad == []


def test_a_cross_cutting_test_reaches_into_one_layer_at_most() -> None:
    """Tests outside the layer folders (adversarial, openapi, schema, typing, the root) may use
    private modules of the core, which both layers build on, and of one of client and server at
    most: a test never reaches into the insides of both sides."""
    bad = []
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(TESTS).parts
        if "node_modules" in rel or (len(rel) > 1 and rel[0] in TEST_LAYERS):
            continue
        sides = set()
        for name in _imports(path):
            parts = name.split(".")
            private = any(p.startswith("_") and not p.endswith("__") for p in parts[1:])
            if parts[0] == "projectops" and private and len(parts) > 1:
                if parts[1] in ("client", "server"):
                    sides.add(parts[1])
        if len(sides) > 1:
            bad.append(f"{path.relative_to(TESTS)}: {sorted(sides)}")
    assert bad == []


#: The most lines a hand-written module of src/ may have: past it, split it along its jobs.
MAX_MODULE_LINES = 600


def _generated(path: Path) -> bool:
    rel = path.relative_to(SRC).parts
    return rel[0] == "v1" or path.name == "_services.py" or path.name.endswith("_pb2.py")


def test_no_hand_written_module_exceeds_the_line_limit() -> None:
    modules = [p for p in sorted(SRC.rglob("*.py")) if not _generated(p)]
    assert len(modules) > 20  # the walk found the package
    long = {
        str(p.relative_to(SRC)): n
        for p in modules
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"modules over {MAX_MODULE_LINES} lines (split them): {long}"
