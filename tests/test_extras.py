"""A missing extra is named, from Python as from the CLI: importing a name of a package whose
dependencies are not installed raises ``ModuleNotFoundError`` (an ``ImportError``) saying which
extra to install, not a bare ``No module named 'starlette'``."""

from __future__ import annotations

import importlib
import sys

import pytest

# package, a name it exports, a dependency of it, the extra that installs that dependency.
CASES = [
    ("projectops.server", "create_app", "starlette", "server"),
    ("projectops.client", "Client", "httpx2", "client"),
    ("projectops.mock", "MockServer", "uvicorn", "testing"),
    ("projectops.mcp", "create_server", "mcp", "mcp"),
]


@pytest.mark.parametrize(("package", "name", "dependency", "extra"), CASES)
def test_a_missing_dependency_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, package: str, name: str, dependency: str, extra: str
) -> None:
    # As if the dependency were not installed: the modules of the package are imported anew.
    for loaded in [m for m in sys.modules if m == dependency or m.startswith(dependency + ".")]:
        monkeypatch.delitem(sys.modules, loaded)
    for loaded in [m for m in sys.modules if m.startswith(package + ".")]:
        monkeypatch.delitem(sys.modules, loaded)
    if package != "projectops.client":  # the mock and the tool server build on the client
        for loaded in [m for m in sys.modules if m.startswith("projectops.client.")]:
            monkeypatch.delitem(sys.modules, loaded)
    monkeypatch.setitem(sys.modules, dependency, None)  # type: ignore[arg-type]
    module = importlib.import_module(package)
    with pytest.raises(ModuleNotFoundError) as caught:
        getattr(module, name)
    message = str(caught.value)
    assert f"needs the '{extra}' extra" in message, message
    assert f"pip install 'projectops[{extra}]'" in message
    assert f"{dependency} is not installed" in message
    assert caught.value.name == dependency


def test_a_name_the_package_does_not_have_is_an_attribute_error() -> None:
    import projectops.server

    with pytest.raises(AttributeError):
        projectops.server.no_such_name  # type: ignore[attr-defined]  # noqa: B018
