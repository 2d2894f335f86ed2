"""The pytest plugin of projectops (entry point ``pytest11``): the ``projectops_mock`` fixture.

pytest imports every installed plugin at the start of every session, whether a test uses it or
not. This module sits beside the ``projectops`` package, not in it (as Hypothesis's plugin sits
beside ``hypothesis``), and imports nothing of projectops, protobuf included, until a test asks
for the fixture: a session that never uses it pays nothing, and a ``conftest.py`` that sets
``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION`` still chooses the protobuf backend. The fixture's
:class:`~projectops.testing.MockServer` and the rest of the API live in :mod:`projectops.testing`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from projectops.mock._server import MockServer

__all__ = ["projectops_mock"]


@pytest.fixture
def projectops_mock() -> Iterator[MockServer]:
    """A :class:`~projectops.testing.MockServer` for one test: one project (key
    :data:`projectops.testing.API_KEY`), the answers the test scripts with
    :meth:`~projectops.testing.MockServer.answer`, generated ones for the rest; its port, if the
    test used :attr:`~projectops.testing.MockServer.base_url`, is stopped when the test ends."""
    from projectops.mock._server import MockServer

    server = MockServer()
    try:
        yield server
    finally:
        server.close()
