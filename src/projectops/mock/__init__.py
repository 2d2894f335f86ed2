"""The mock server (extra ``server``): fixtures matched to requests, generated responses for the
rest, the ``mock-server`` command and :class:`MockServer` (the ``projectops_mock`` fixture);
docs/mock.md. Names are imported on first use (no Starlette, no uvicorn at import)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projectops._lazy import lazy_attributes

if TYPE_CHECKING:
    from projectops.mock._app import create_mock_app
    from projectops.mock._command import commands
    from projectops.mock._generate import generate, generated_response
    from projectops.mock._matching import Call, MockProject, load_fixtures
    from projectops.mock._server import API_KEY, MockServer

_WHERE = {
    "API_KEY": "projectops.mock._server",
    "Call": "projectops.mock._matching",
    "MockServer": "projectops.mock._server",
    "MockProject": "projectops.mock._matching",
    "load_fixtures": "projectops.mock._matching",
    "generate": "projectops.mock._generate",
    "generated_response": "projectops.mock._generate",
    "create_mock_app": "projectops.mock._app",
    "commands": "projectops.mock._command",
}

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
