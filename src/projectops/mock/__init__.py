"""The mock server (extra ``server``): fixtures matched to requests, generated responses for the
rest, the ``mock-server`` command and :class:`MockServer` (the ``projectops_mock`` fixture);
docs/mock.md. Names are imported on first use (no Starlette, no uvicorn at import)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projectops._lazy import lazy_attributes, modules_by_name

if TYPE_CHECKING:
    from projectops.mock._app import create_mock_app
    from projectops.mock._command import commands
    from projectops.mock._generate import generate, generated_response
    from projectops.mock._matching import Call, MockProject, load_fixtures
    from projectops.mock._server import API_KEY, MockServer

_NAMES = {
    "projectops.mock._app": "create_mock_app",
    "projectops.mock._command": "commands",
    "projectops.mock._generate": "generate generated_response",
    "projectops.mock._matching": "Call MockProject load_fixtures",
    "projectops.mock._server": "API_KEY MockServer",
}
_WHERE = modules_by_name(_NAMES)

__all__ = [
    "API_KEY",
    "Call",
    "MockProject",
    "MockServer",
    "commands",
    "create_mock_app",
    "generate",
    "generated_response",
    "load_fixtures",
]

if not TYPE_CHECKING:
    __getattr__ = lazy_attributes(__name__, _WHERE, extra="testing")
