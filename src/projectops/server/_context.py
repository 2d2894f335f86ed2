"""What a handler learns about the request besides its message: :class:`RequestContext`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from projectops.registry import Operation

__all__ = ["RequestContext"]

ProjectT = TypeVar("ProjectT")


@dataclass(frozen=True)
class RequestContext(Generic[ProjectT]):
    """What a handler and an interceptor learn about a request besides its message
    (docs/contract.md §2.2).

    Attributes:
        project: what ``authenticate`` returned for the request's key: the project the call is
            scoped to, of the application's own type.
        operation: the operation called.
        headers: the request's headers, names in lower case; the API key's value is ``***``.
    """

    project: ProjectT
    operation: Operation
    headers: Mapping[str, str]
