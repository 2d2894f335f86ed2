"""The mkdocs hook of the documentation site (mkdocs.yml): the API reference lists what each
module exports at run time.

A line ``::: projectops.client`` in a page of docs/reference/ renders the module with exactly
the names of its ``__all__`` as members, in that order. griffe reads ``__all__`` statically,
and some packages compute it (``sorted(_WHERE)``, for their lazy imports); the names are never
written twice. Options written under the line are kept (a page titled with its module hides
the module's own heading, ``show_root_heading: false``); one that names its ``members:`` is
left to mkdocstrings as written.
"""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

# A directive and the options indented under it, one line each (no nesting in our pages).
_DIRECTIVE = re.compile(
    r"^::: (?P<module>[\w.]+)[ \t]*(?:\n|\Z)(?P<options>    options:\n(?:      [^\n]*\n)*)?", re.M
)


def _expand(match: re.Match[str]) -> str:
    options = match["options"] or "    options:\n"
    if "members:" in options:
        return match[0]
    names = getattr(importlib.import_module(match["module"]), "__all__", None)
    if names is None:
        return match[0]
    members = json.dumps(list(names))
    return f"::: {match['module']}\n{options}      members: {members}\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Expand each bare ``::: module`` of a reference page (the mkdocs event of that name).

    Args:
        markdown: the page's Markdown source.
        page: the page (``mkdocs.structure.pages.Page``).
        config: the site's configuration.
        files: every file of the site.

    Returns:
        The Markdown with each bare directive given its module's ``__all__`` as ``members``.
    """
    if not page.file.src_uri.startswith("reference/"):
        return markdown
    return _DIRECTIVE.sub(_expand, markdown)
