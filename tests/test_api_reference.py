"""The docstrings are the API reference (docs/reference/, built by mkdocs): every public class,
function and method documents every parameter in its ``Args:`` (Google style, parsed by griffe
as mkdocstrings parses it), says what it returns, and names no parameter it does not take.

Public is what the public modules export: a package's ``__all__``, or a module's names not
starting with ``_`` that it defines itself. A class's constructor parameters are documented in
the class docstring (``Args:`` or, for a dataclass, ``Attributes:``) or in its ``__init__``'s;
the generated typed clients and handler base are checked as well (scripts/bindings.py writes
their docstrings from the proto comments).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import logging
import pkgutil
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import griffe
import pytest

import projectops

# The modules a user imports by name: every module of the package with no private part in its
# path, the generated messages (projectops.v1, protoc's) aside.
_SUBMODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(projectops.__path__, "projectops.")
    if not any(part.startswith("_") for part in info.name.split("."))
    and not info.name.startswith("projectops.v1")
)
PUBLIC_MODULES = ["projectops", *_SUBMODULES]
OURS = ("projectops", "_projectops_pytestplugin")


def _exported(module: ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__
    ]


def _ours(value: object) -> bool:
    """Written by us: the messages protoc generates (``projectops.v1``) carry no docstrings."""
    module = str(getattr(value, "__module__", ""))
    return module.startswith(OURS) and not module.startswith("projectops.v1")


def _public_objects() -> Iterator[tuple[str, Any]]:
    seen: set[int] = set()
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attribute in _exported(module):
            # A functools.cache'd function is checked as the function it wraps.
            value = inspect.unwrap(getattr(module, attribute))
            if (inspect.isclass(value) or inspect.isfunction(value)) and _ours(value):
                if id(value) not in seen:
                    seen.add(id(value))
                    yield f"{name}.{attribute}", value


def _sections(doc: str | None) -> dict[str, set[str]]:
    """The docstring's sections as griffe's Google parser reads them: kind -> names."""
    if not doc:
        return {}
    found: dict[str, set[str]] = {}
    parsed = griffe.Docstring(inspect.cleandoc(doc), parser="google").parsed
    for section in parsed:
        names = found.setdefault(section.kind.value, set())
        if isinstance(section.value, list):
            names |= {str(getattr(item, "name", "")).lstrip("*") for item in section.value}
    return found


def _documented(doc: str | None) -> set[str]:
    sections = _sections(doc)
    return sections.get("parameters", set()) | sections.get("other parameters", set())


def _parameters(function: Callable[..., Any]) -> list[str]:
    return [p for p in inspect.signature(function).parameters if p not in ("self", "cls")]


def _returns_something(function: Callable[..., Any]) -> bool:
    # The annotation as written (``from __future__ import annotations``: a string).
    returned = inspect.signature(function, eval_str=False).return_annotation
    return str(returned) not in (
        "None",
        "NoReturn",
        "typing.NoReturn",
        str(inspect.Signature.empty),
    )


def _function_problems(where: str, function: Callable[..., Any]) -> list[str]:
    doc = function.__doc__
    if not doc:
        return [f"{where}: no docstring"]
    problems = []
    sections = _sections(doc)
    documented = _documented(doc)
    missing = [p for p in _parameters(function) if p not in documented]
    if missing:
        problems.append(f"{where}: Args: does not name {', '.join(missing)}")
    extra = documented - set(_parameters(function))
    if extra and not any(
        p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        for p in inspect.signature(function).parameters.values()
    ):
        problems.append(f"{where}: Args: names {', '.join(sorted(extra))}, not a parameter")
    if _returns_something(function) and not ({"returns", "yields"} & set(sections)):
        if not function.__name__.startswith("__"):
            problems.append(f"{where}: no Returns:")
    return problems


def _constructor(cls: type) -> Callable[..., Any] | None:
    """The ``__init__`` a class's instances are made with, when one of ours defines it."""
    for base in cls.__mro__:
        if "__init__" in vars(base):
            init = vars(base)["__init__"]
            return init if _ours(base) and inspect.isfunction(init) else None
    return None


def _class_problems(where: str, cls: type) -> list[str]:
    doc = cls.__doc__
    # A dataclass without a docstring gets its signature as one.
    if not doc or (dataclasses.is_dataclass(cls) and doc.startswith(cls.__name__ + "(")):
        return [f"{where}: no docstring"]
    problems = []
    init = _constructor(cls)
    if init is not None or dataclasses.is_dataclass(cls):
        documented = set()
        for base in cls.__mro__:
            if _ours(base):
                sections = _sections(base.__doc__)
                documented |= _documented(base.__doc__) | sections.get("attributes", set())
                base_init = vars(base).get("__init__")
                documented |= _documented(getattr(base_init, "__doc__", None))
        missing = [p for p in _parameters(cls) if p not in documented]
        if missing and _parameters(cls) != ["args", "kwargs"]:
            problems.append(f"{where}: constructor parameters not documented: {missing}")
    for name, value in vars(cls).items():
        if name.startswith("_") and name != "__call__":
            continue
        function = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
        if isinstance(value, property):
            if not value.__doc__:
                problems.append(f"{where}.{name}: property without docstring")
        elif inspect.isfunction(function):
            problems += _function_problems(f"{where}.{name}", function)
    return problems


PUBLIC = list(_public_objects())


def test_every_public_module_is_on_a_page_of_the_reference() -> None:
    """docs/reference/ renders a module by a line ``::: module`` (mkdocs.yml), or renders every
    name the module exports through a package that re-exports it (``projectops.client.http``'s
    ``Client`` is ``projectops.client.Client``)."""
    pages = (Path(__file__).resolve().parents[1] / "docs" / "reference").glob("*.md")
    shown = {m for page in pages for m in re.findall(r"^::: ([\w.]+)", page.read_text(), re.M)}
    on_pages = {
        id(getattr(module, name))
        for module in map(importlib.import_module, shown)
        for name in _exported(module)
    }
    missing = [
        name
        for name in PUBLIC_MODULES
        if name not in shown
        and not all(
            id(getattr(importlib.import_module(name), n)) in on_pages
            for n in _exported(importlib.import_module(name))
        )
    ]
    assert missing == []


def test_the_walk_finds_the_public_api() -> None:
    names = {where for where, _ in PUBLIC}
    assert {"projectops.server.create_app", "projectops.client.Client"} <= names
    assert len(PUBLIC) > 100


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_public_module_has_a_docstring(module: str) -> None:
    assert importlib.import_module(module).__doc__


def test_every_public_callable_documents_every_parameter_and_its_result() -> None:
    logging.getLogger("griffe").setLevel(logging.ERROR)  # no annotations in docstrings
    problems: list[str] = []
    for where, value in PUBLIC:
        if inspect.isclass(value):
            problems += _class_problems(where, value)
        else:
            problems += _function_problems(where, value)
    assert problems == []


def test_the_check_fails_on_an_undocumented_parameter() -> None:
    def documented(a: int, b: int) -> int:
        """Add.

        Args:
            a: one.

        Returns:
            The sum.
        """
        return a + b

    assert _function_problems("f", documented) == ["f: Args: does not name b"]
