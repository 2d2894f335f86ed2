"""Names of a package imported from their module on first use (PEP 562), so importing a package
does not import httpx2 or Starlette."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def modules_by_name(names: Mapping[str, str]) -> dict[str, str]:
    """Public name -> the module it is imported from, from the table each package writes.

    Args:
        names: module -> its public names separated by spaces
            (``{"projectops.server.asgi": "Authenticate create_app"}``).

    Returns:
        A new dict: each public name -> its module.
    """
    return {name: module for module, spaced in names.items() for name in spaced.split()}


def lazy_attributes(
    package: str,
    where: Mapping[str, str],
    extra: str | None = None,
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for a package whose names are imported on first use.

    Args:
        package: the package's name, ``projectops.server``.
        where: public name -> the module it is imported from.
        extra: the extra of ``pyproject.toml`` that installs what the package needs
            (``server``); ``None`` (the default): it needs nothing beyond the core.

    Returns:
        ``__getattr__(name)``: ``where[name]``'s attribute ``name``.

    Raises:
        AttributeError: (from ``__getattr__``) a name not in `where`.
        ModuleNotFoundError: (from ``__getattr__``) a dependency of the name is not installed;
            with `extra`, the message names the extra to install, as the CLI's does:
            ``projectops.server.create_app needs the 'server' extra (starlette is not
            installed): pip install 'projectops[server]'``.
    """

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            return getattr(importlib.import_module(module), name)
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").split(".")[0]  # the distribution's top-level package
            if extra is None or not missing or missing == "projectops":
                raise
            raise ModuleNotFoundError(
                f"{package}.{name} needs the '{extra}' extra ({missing} is not installed): "
                f"pip install 'projectops[{extra}]'",
                name=missing,
            ) from exc

    return __getattr__
