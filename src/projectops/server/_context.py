"""What a handler learns about the request besides its message: :class:`RequestContext`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from projectops._text import REDACTED
from projectops.registry import Operation

__all__ = ["REDACTED", "RequestContext"]

ProjectT = TypeVar("ProjectT")


@dataclass(frozen=True)
class RequestContext(Generic[ProjectT]):
    """The context of one served request, passed to every handler method.

    Attributes:
        project: what ``authenticate`` returned for the caller's API key (the key alone
            decides the project: docs/contract.md §2.2).
        operation: the :class:`~projectops.Operation` being served.
        headers: the request headers, names in lower case; the ``service-api-key`` value is
            :data:`REDACTED`, so a handler can log them without leaking the key.
    """

    project: ProjectT
    operation: Operation
    headers: Mapping[str, str]
