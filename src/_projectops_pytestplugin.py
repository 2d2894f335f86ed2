"""The pytest plugin of projectops (entry point ``pytest11``): the ``projectops_mock`` fixture,
and answers checked against the schema's rules in the session: it sets
``PROJECTOPS_VALIDATE_RESPONSES=1`` (unless the environment sets it), so an app of
``projectops.server.create_app`` answers 500 and logs when its service's response breaks a rule
(a dropped "Always set" field, say; docs/contract.md §4.6) in a team's own tests.

pytest imports every installed plugin in every session. This module sits beside the
``projectops`` package, not in it (as Hypothesis's plugin does), and imports nothing of
projectops, protobuf included, until a test asks for the fixture: a session that never uses it
pays nothing, and a ``conftest.py`` that sets ``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION`` still
chooses the protobuf backend. ``-p projectops.testing`` loads the same fixture.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from projectops.mock import MockServer

__all__ = ["projectops_mock", "pytest_configure"]

#: ``projectops.conventions.VALIDATE_RESPONSES_ENV``, spelled out because this module imports
#: nothing of projectops; tests/server/test_rules.py holds the two equal.
VALIDATE_RESPONSES_ENV = "PROJECTOPS_VALIDATE_RESPONSES"


def pytest_configure(config: pytest.Config) -> None:
    """Turn on ``create_app``'s check of its responses for the session (pytest's hook, called
    once when the session starts): sets ``PROJECTOPS_VALIDATE_RESPONSES=1`` unless the
    environment gives a value (``0`` included), which is kept.

    Args:
        config: pytest's configuration of the session (not read).
    """
    os.environ.setdefault(VALIDATE_RESPONSES_ENV, "1")


@pytest.fixture
def projectops_mock() -> Iterator[MockServer]:
    """A :class:`projectops.mock.MockServer` for one test: one project, the responses the test
    scripts, generated ones for the rest; its port, if used, stops when the test ends.

    Yields:
        The mock, closed after the test.
    """
    from projectops.mock import MockServer

    server = MockServer()
    try:
        yield server
    finally:
        server.close()
