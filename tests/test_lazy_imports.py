"""The packages' public names (docs/python.md): each resolves, on first use, to the object its
module defines, and the core package names the whole error model."""

from __future__ import annotations

import importlib

import pytest

import projectops
from projectops import errors

PACKAGES = [
    "projectops",
    "projectops.client",
    "projectops.conformance",
    "projectops.mcp",
    "projectops.mock",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_public_name_resolves_to_its_modules_object(name: str) -> None:
    package = importlib.import_module(name)
    for public in package.__all__:
        module = importlib.import_module(package._WHERE[public])
        assert getattr(package, public) is getattr(module, public)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        package.nothing_here  # noqa: B018


def test_the_core_package_names_the_whole_error_model() -> None:
    assert set(errors.__all__) <= set(projectops.__all__)
    assert {n for n in projectops.__all__ if projectops._WHERE[n] == "projectops.errors"} == set(
        errors.__all__
    )
