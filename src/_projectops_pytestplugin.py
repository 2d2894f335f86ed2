"""The pytest plugin of projectops (entry point ``pytest11``): the ``projectops_mock`` fixture.

pytest imports every installed plugin in every session. This module sits beside the
``projectops`` package, not in it (as Hypothesis's plugin does), and imports nothing of
projectops, protobuf included, until a test asks for the fixture: a session that never uses it
pays nothing, and a ``conftest.py`` that sets ``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION`` still
chooses the protobuf backend. ``-p projectops.testing`` loads the same fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from projectops.mock import MockServer

__all__ = ["projectops_mock"]


@pytest.fixture
def projectops_mock() -> Iterator[MockServer]:
    """A :class:`projectops.mock.MockServer` for one test: one project, the answers the test
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
