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
    """One request's `project` (what ``authenticate`` returned), `operation`, and `headers`
    (names in lower case, the key's value ``***``)."""

    project: ProjectT
    operation: Operation
    headers: Mapping[str, str]
