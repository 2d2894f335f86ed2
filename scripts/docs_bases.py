"""A griffe extension of the documentation site (mkdocs.yml): a class page shows only the bases
a reader can look up.

``Bases: _BaseRawClient, Closing`` names classes of private modules that the site does not
document; ``Bases: InvalidArgument`` names one it does (``projectops.errors`` defines it, the
core exports it). A base is shown when its path has no private part (``typing.Generic``,
``projectops.errors.ApiError``) or when a public module of projectops exports it (its run-time
``__all__``, as scripts/docs_hooks.py reads it). The others stay bases: griffe still reads the
members a class inherits through them (option ``inherited_members``); only the ``Bases:`` line
(scripts/docs_templates/python/material/class.html.jinja) leaves them out.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any

import griffe


def _private(path: str) -> bool:
    return any(part.startswith("_") for part in path.split("."))


@cache
def _exported() -> frozenset[int]:
    """The ids of the objects that the public modules of projectops export."""
    package = importlib.import_module("projectops")
    ids = {id(getattr(package, name)) for name in package.__all__}
    for module in pkgutil.walk_packages(package.__path__, "projectops."):
        if _private(module.name):
            continue
        public = importlib.import_module(module.name)
        ids.update(id(getattr(public, name)) for name in getattr(public, "__all__", ()))
    return frozenset(ids)


def documented(path: str) -> bool:
    """Whether the site documents the class at `path` or links it to its own documentation.

    Args:
        path: a base's canonical path, e.g. ``projectops.client._transport.Closing``.

    Returns:
        Whether the path has no private part, or a public module exports what it names.
    """
    if not _private(path):
        return True
    module, _, name = path.rpartition(".")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return False
    return id(found) in _exported()


class PublicBases(griffe.Extension):
    """Keep each class's documented bases in ``extra["projectops"]["bases"]``."""

    def on_class(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        """Choose the bases one class page shows.

        Args:
            cls: the class loaded.
            kwargs: the hook's other arguments, unused.
        """
        shown = [base for base in cls.bases if documented(_path(base))]
        cls.extra["projectops"]["bases"] = shown


def _path(base: str | griffe.Expr) -> str:
    return base if isinstance(base, str) else base.canonical_path
