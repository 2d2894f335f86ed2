"""The mock server (extra ``server``): fixtures matched to requests, generated answers for the
rest, the ``projectops mock-server`` command, and :class:`MockServer`, the API mocked for one
test behind the pytest fixture ``projectops_mock`` (extra ``testing``); docs/mock.md.

Names are imported on first use: importing the package imports neither Starlette nor uvicorn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from projectops._lazy import lazy_attributes

if TYPE_CHECKING:
    from projectops.mock._app import app_from_environment, create_mock_app, serve
    from projectops.mock._command import commands
    from projectops.mock._generate import generate, generated_answer
    from projectops.mock._matching import MockProject, Reply, load_fixtures
    from projectops.mock._server import API_KEY, PROJECT, Call, MockServer

_WHERE = {
    "API_KEY": "projectops.mock._server",
    "PROJECT": "projectops.mock._server",
    "Call": "projectops.mock._server",
    "MockServer": "projectops.mock._server",
    "MockProject": "projectops.mock._matching",
    "Reply": "projectops.mock._matching",
    "load_fixtures": "projectops.mock._matching",
    "generate": "projectops.mock._generate",
    "generated_answer": "projectops.mock._generate",
    "app_from_environment": "projectops.mock._app",
    "create_mock_app": "projectops.mock._app",
    "serve": "projectops.mock._app",
    "commands": "projectops.mock._command",
}

__all__ = [
    "API_KEY",
    "PROJECT",
    "Call",
    "MockProject",
    "MockServer",
    "Reply",
    "app_from_environment",
    "commands",
    "create_mock_app",
    "generate",
    "generated_answer",
    "load_fixtures",
    "serve",
]

if not TYPE_CHECKING:
    __getattr__ = lazy_attributes(__name__, _WHERE)
