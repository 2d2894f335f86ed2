"""Names of a package imported from their module on first use (PEP 562), so importing a package
does not import httpx2 or Starlette."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for `package`: ``name`` -> ``where[name]``'s attribute ``name``
    (`where` maps public names to modules); ``AttributeError`` for another name."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
