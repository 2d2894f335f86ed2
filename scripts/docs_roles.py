"""A griffe extension of the documentation site (mkdocs.yml): the docstrings' Sphinx roles
become mkdocstrings cross-references.

The docstrings are written for ``help()`` and for the site alike: ``:func:`to_json```,
``:class:`~projectops.client.Client```. Here each role becomes a Markdown reference,
``[`to_json`][to_json]``, which mkdocstrings resolves from the object's scope (option
``scoped_crossrefs``), so a reference to a name that does not exist fails ``mkdocs build
--strict``. A paragraph that ends in reST's ``::`` (the indented block under it is code, which
Markdown reads alike) ends as Sphinx shows it: ``text::`` with a colon, ``text ::`` with none.
"""

from __future__ import annotations

import builtins
import re
from typing import Any

import griffe

# A role and its target: :func:`name`, :class:`~a.b.Name` (``~``: show the last part only).
_ROLE = re.compile(r":(?:func|class|meth|data|attr|mod|exc):`(?P<tilde>~?)(?P<target>[\w.]+)`")


# reST's literal-block marker at the end of a line, and the space before it.
_LITERAL_BLOCK = re.compile(r"(?P<space> ?)::$", re.M)


def _reference(match: re.Match[str]) -> str:
    target = match["target"]
    shown = target.rsplit(".", 1)[-1] if match["tilde"] else target
    # The site documents the public API: a private module's name and Python's own built-ins
    # (no inventory of the standard library is fetched) are shown, not linked.
    if "._" in target or target.startswith("_") or hasattr(builtins, target):
        return f"`{shown}`"
    return f"[`{shown}`][{target}]"


def markdown_references(text: str) -> str:
    """A docstring's Sphinx roles as Markdown cross-references.

    Args:
        text: the docstring.

    Returns:
        `text` with each ``:role:`target``` replaced by ``[`target`][target]``, or by
        ```target``` for a built-in or a name in a private module.
    """
    return _ROLE.sub(_reference, text)


def markdown_literal_blocks(text: str) -> str:
    """A docstring's reST literal-block markers as Sphinx renders them.

    Args:
        text: the docstring.

    Returns:
        `text` with a line's closing ``::`` made ``:``, or removed after a space.
    """
    return _LITERAL_BLOCK.sub(lambda match: "" if match["space"] else ":", text)


class SphinxRoles(griffe.Extension):
    """Rewrite the roles and literal-block markers of every docstring griffe loads."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite one object's docstring.

        Args:
            obj: the object loaded.
            kwargs: the hook's other arguments, unused.
        """
        if obj.docstring is not None:
            text = markdown_literal_blocks(obj.docstring.value)
            obj.docstring.value = markdown_references(text)
