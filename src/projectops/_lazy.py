"""Names of a package imported from their module on first use (PEP 562 module ``__getattr__``).

The client and server packages re-export their public names this way, so importing the package
(for the CLI's core-only commands, or one submodule) does not import httpx or Starlette.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for `package`: ``name`` -> ``where[name]``'s attribute ``name``.

    Args:
        package: the package's ``__name__`` (for the error message).
        where: public name -> dotted name of the module that defines it.

    Returns:
        The function to assign to the package's ``__getattr__``; it raises
        ``AttributeError`` for a name not in `where`, as a module does.
    """

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
